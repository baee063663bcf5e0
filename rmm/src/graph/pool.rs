//! Private-pool tokens: which graphs share memory.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU64, Ordering};

/// The crate-private id of a graph-private pool (see [`GraphPool`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct GraphPoolId(pub(crate) u64);

/// Ids handed out so far (0 is never used).
static NEXT: AtomicU64 = AtomicU64::new(1);

impl GraphPoolId {
    /// An id no other pool has had in this process.
    pub(crate) fn fresh() -> Self {
        GraphPoolId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// A token naming a private pool. Memory a resource hands out on a
/// capturing stream comes from the private pool of that capture's
/// `GraphPool` and stays reserved while a graph captured with it exists.
/// Captures given the same `GraphPool` (through
/// [`begin_capture_in`](super::begin_capture_in) or
/// [`ExecPolicy::capture_in`](crate::exec_policy::ExecPolicy::capture_in))
/// share one private pool per resource: give one only to graphs that never
/// run at the same time, since their memory may overlap.
///
/// Clones name the same pool; pools compare by id.
///
/// ```
/// use rmm::graph::GraphPool;
/// let a = GraphPool::new();
/// assert_eq!(a.clone(), a);
/// assert_ne!(GraphPool::new(), a);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GraphPool {
    id: GraphPoolId,
}

impl GraphPool {
    /// A new pool, shared with no capture yet.
    pub fn new() -> Self {
        GraphPool {
            id: GraphPoolId::fresh(),
        }
    }

    /// The pool's id, unique in the process.
    pub fn id(&self) -> u64 {
        self.id.0
    }

    /// The crate-private id.
    pub(crate) fn pool_id(&self) -> GraphPoolId {
        self.id
    }
}

impl Default for GraphPool {
    fn default() -> Self {
        GraphPool::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pools_are_distinct_and_clones_share_the_id() {
        let ids: Vec<u64> = (0..100).map(|_| GraphPool::new().id()).collect();
        let mut sorted = ids.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), ids.len());
        assert!(ids.iter().all(|&i| i != 0));
        let p = GraphPool::new();
        assert_eq!(p.clone().pool_id(), p.pool_id());
    }
}
