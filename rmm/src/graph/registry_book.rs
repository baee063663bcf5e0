//! The capture registry's bookkeeping on plain integers: which stream
//! belongs to which capture, and which private pool each capture has. No
//! driver call and no lock here: [`super::registry`] holds it under its
//! lock and feeds it the driver's answers.
#![forbid(unsafe_code)]

use std::collections::BTreeMap;

use super::pool::GraphPoolId;
use super::registry::ActiveCapture;
use crate::device::DeviceId;
use crate::driver::{CaptureState, GraphHandle};

/// One registered capture.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Record {
    pool: GraphPoolId,
    graph: GraphHandle,
    device: Option<DeviceId>,
    /// Begun through rmm: removed by [`end`](Registry::end) only. Adopted records go when
    /// their last stream does.
    begun_by_rmm: bool,
}

/// The registry's bookkeeping, on plain integers (no driver call).
#[derive(Debug, Default)]
pub(super) struct Registry {
    /// Capture id -> record.
    captures: BTreeMap<u64, Record>,
    /// Stream handle -> capture id.
    streams: BTreeMap<usize, u64>,
}

impl Registry {
    pub(super) const fn new() -> Self {
        Registry {
            captures: BTreeMap::new(),
            streams: BTreeMap::new(),
        }
    }

    /// Number of registered streams.
    pub(super) fn stream_count(&self) -> usize {
        self.streams.len()
    }

    /// The capture `id`, as resources see it.
    fn active(&self, id: u64) -> Option<ActiveCapture> {
        self.captures.get(&id).map(|r| ActiveCapture {
            id,
            pool: r.pool,
            graph: r.graph,
            device: r.device,
        })
    }

    /// The capture registered for `stream`.
    pub(super) fn of_stream(&self, stream: usize) -> Option<ActiveCapture> {
        self.streams.get(&stream).and_then(|&id| self.active(id))
    }

    /// The capture `id` if `stream` is registered with it.
    pub(super) fn joined(&self, stream: usize, id: u64) -> Option<ActiveCapture> {
        (self.streams.get(&stream) == Some(&id))
            .then(|| self.active(id))
            .flatten()
    }

    /// Whether the graph of capture `id` is `graph` (the capture is
    /// registered and has not ended).
    pub(super) fn holds(&self, id: u64, graph: GraphHandle) -> bool {
        self.captures.get(&id).is_some_and(|r| r.graph == graph)
    }

    /// Whether capture `id` is registered (for tests).
    #[cfg(test)]
    pub(super) fn knows(&self, id: u64) -> bool {
        self.captures.contains_key(&id)
    }

    /// Registers a capture begun through rmm on `stream`.
    pub(super) fn begin(
        &mut self,
        stream: usize,
        id: u64,
        pool: GraphPoolId,
        graph: GraphHandle,
        device: DeviceId,
    ) {
        self.forget_stream(stream);
        self.captures.insert(
            id,
            Record {
                pool,
                graph,
                device: Some(device),
                begun_by_rmm: true,
            },
        );
        self.streams.insert(stream, id);
    }

    /// Removes capture `id` and every stream registered with it.
    pub(super) fn end(&mut self, id: u64) {
        self.captures.remove(&id);
        self.streams.retain(|_, c| *c != id);
    }

    /// Drops `stream`'s entry (its capture ended or changed); an adopted
    /// capture left without a stream goes too.
    pub(super) fn forget_stream(&mut self, stream: usize) {
        let Some(id) = self.streams.remove(&stream) else {
            return;
        };
        let adopted = self.captures.get(&id).is_some_and(|r| !r.begun_by_rmm);
        if adopted && !self.streams.values().any(|&c| c == id) {
            self.captures.remove(&id);
        }
    }

    /// What the driver said of `stream`, folded in: `None` drops a stale
    /// entry; an active capture is joined (a known id) or adopted (an
    /// unknown id, with the pool `fresh_pool` makes).
    pub(super) fn observe(
        &mut self,
        stream: usize,
        state: CaptureState,
        device: Option<DeviceId>,
        fresh_pool: impl FnOnce() -> GraphPoolId,
    ) -> Option<ActiveCapture> {
        let CaptureState::Active { id, graph } = state else {
            if state == CaptureState::None {
                self.forget_stream(stream);
            }
            return None;
        };
        if self.streams.get(&stream) != Some(&id) {
            self.forget_stream(stream);
        }
        self.captures.entry(id).or_insert_with(|| Record {
            pool: fresh_pool(),
            graph,
            device,
            begun_by_rmm: false,
        });
        self.streams.insert(stream, id);
        self.active(id)
    }
}

#[cfg(test)]
mod tests {
    use std::num::NonZeroUsize;

    use super::*;

    fn graph(n: usize) -> GraphHandle {
        GraphHandle::from_raw(NonZeroUsize::new(n).unwrap())
    }

    fn active(id: u64, g: usize) -> CaptureState {
        CaptureState::Active { id, graph: graph(g) }
    }

    #[test]
    fn a_begun_capture_is_found_by_its_stream_until_it_ends() {
        let mut r = Registry::new();
        r.begin(0x10, 7, GraphPoolId(3), graph(0x100), DeviceId(0));
        assert_eq!(r.stream_count(), 1);
        let c = r.of_stream(0x10).unwrap();
        assert_eq!(
            (c.id, c.pool, c.graph, c.device),
            (7, GraphPoolId(3), graph(0x100), Some(DeviceId(0)))
        );
        assert!(r.holds(7, graph(0x100)));
        assert!(!r.holds(7, graph(0x200)));
        assert!(r.of_stream(0x20).is_none());
        r.end(7);
        assert_eq!(r.stream_count(), 0);
        assert!(r.of_stream(0x10).is_none());
        assert!(!r.holds(7, graph(0x100)));
    }

    #[test]
    fn joined_streams_share_the_pool_of_their_capture() {
        let mut r = Registry::new();
        r.begin(0x10, 7, GraphPoolId(3), graph(0x100), DeviceId(0));
        let joined = r.observe(0x20, active(7, 0x100), None, || {
            panic!("no new pool for a known capture")
        });
        assert_eq!(joined.unwrap().pool, GraphPoolId(3));
        assert_eq!(r.stream_count(), 2);
        assert_eq!(r.joined(0x20, 7).unwrap().pool, GraphPoolId(3));
        r.end(7);
        assert_eq!(r.stream_count(), 0, "ending removes the joined streams too");
    }

    #[test]
    fn a_foreign_capture_is_adopted_once_and_its_joined_streams_share_it() {
        let mut r = Registry::new();
        let mut made = 0;
        let a = r
            .observe(0x30, active(9, 0x300), Some(DeviceId(1)), || {
                made += 1;
                GraphPoolId(50)
            })
            .unwrap();
        let b = r
            .observe(0x31, active(9, 0x300), None, || {
                made += 1;
                GraphPoolId(51)
            })
            .unwrap();
        assert_eq!(made, 1);
        assert_eq!((a.pool, b.pool), (GraphPoolId(50), GraphPoolId(50)));
        assert_eq!(a.device, Some(DeviceId(1)));
    }

    #[test]
    fn stale_entries_are_dropped_when_their_stream_is_seen_again() {
        let mut r = Registry::new();
        r.observe(0x30, active(9, 0x300), None, || GraphPoolId(50));
        r.observe(0x31, active(9, 0x300), None, || GraphPoolId(51));
        // The capture ended outside rmm: each stream goes when seen idle.
        assert!(r
            .observe(0x30, CaptureState::None, None, || GraphPoolId(52))
            .is_none());
        assert_eq!(r.stream_count(), 1);
        assert!(r.captures.contains_key(&9), "a stream still names it");
        r.observe(0x31, CaptureState::None, None, || GraphPoolId(53));
        assert_eq!(r.stream_count(), 0);
        assert!(
            r.captures.is_empty(),
            "an adopted capture without streams is gone"
        );
        // A stream that moved on to another capture gets that capture's pool.
        r.observe(0x40, active(10, 0x400), None, || GraphPoolId(60));
        let moved = r
            .observe(0x40, active(11, 0x410), None, || GraphPoolId(61))
            .unwrap();
        assert_eq!((moved.id, moved.pool), (11, GraphPoolId(61)));
        assert!(!r.captures.contains_key(&10));
        assert_eq!(r.stream_count(), 1);
    }

    #[test]
    fn a_begun_capture_outlives_its_stream_entry_until_end() {
        let mut r = Registry::new();
        r.begin(0x10, 7, GraphPoolId(3), graph(0x100), DeviceId(0));
        // Ended behind rmm's back: the stream entry goes, the record stays
        // for `end` to remove.
        r.observe(0x10, CaptureState::None, None, || GraphPoolId(4));
        assert_eq!(r.stream_count(), 0);
        assert!(r.holds(7, graph(0x100)));
        r.end(7);
        assert!(r.captures.is_empty());
        // An invalidated answer changes nothing.
        r.begin(0x10, 8, GraphPoolId(5), graph(0x110), DeviceId(0));
        assert!(r
            .observe(0x10, CaptureState::Invalidated, None, || GraphPoolId(6))
            .is_none());
        assert_eq!(r.of_stream(0x10).unwrap().id, 8);
    }

    mod model {
        use proptest::prelude::*;

        use super::*;

        #[derive(Debug, Clone)]
        enum Op {
            /// A capture begun through rmm on stream `s` (ids are fresh).
            Begin(usize),
            /// Capture `id` ended through rmm.
            End(u64),
            /// The driver's answer for stream `s`: none, invalidated, or
            /// capture `id` (0..8: foreign captures, joined or not).
            Observe(usize, Option<Option<u64>>),
        }

        fn op() -> impl Strategy<Value = Op> {
            prop_oneof![
                1 => (0usize..4).prop_map(Op::Begin),
                1 => (0u64..8).prop_map(Op::End),
                1 => (100u64..104).prop_map(Op::End),
                4 => (0usize..4, proptest::option::of(proptest::option::of(0u64..8)))
                    .prop_map(|(s, st)| Op::Observe(s, st)),
            ]
        }

        /// What must hold after every operation.
        fn check_invariants(r: &Registry) {
            assert_eq!(r.stream_count(), r.streams.len());
            for (stream, id) in &r.streams {
                assert!(
                    r.captures.contains_key(id),
                    "stream {stream:#x} names a missing capture {id}"
                );
            }
            for (id, record) in &r.captures {
                if !record.begun_by_rmm {
                    assert!(
                        r.streams.values().any(|c| c == id),
                        "adopted capture {id} without a stream"
                    );
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(300))]

            /// Random begins, ends and driver answers: the maps stay
            /// consistent, a capture keeps its pool while it is registered,
            /// and each operation has its documented effect.
            #[test]
            fn the_registry_keeps_pools_stable_and_drops_stale_entries(ops in proptest::collection::vec(op(), 1..200)) {
                let mut r = Registry::new();
                let mut next_id = 100u64;
                let mut next_pool = 1u64;
                for op in ops {
                    match op {
                        Op::Begin(stream) => {
                            let id = next_id;
                            next_id += 1;
                            next_pool += 1;
                            r.begin(stream, id, GraphPoolId(next_pool), graph(0x1000 + id as usize), DeviceId(0));
                            let c = r.of_stream(stream).unwrap();
                            prop_assert_eq!((c.id, c.pool), (id, GraphPoolId(next_pool)));
                        }
                        Op::End(id) => {
                            r.end(id);
                            prop_assert!(!r.captures.contains_key(&id));
                            prop_assert!(r.streams.values().all(|&c| c != id));
                        }
                        Op::Observe(stream, answer) => {
                            let before_streams = r.streams.clone();
                            let before_captures = r.captures.clone();
                            let state = match answer {
                                None => CaptureState::None,
                                Some(None) => CaptureState::Invalidated,
                                Some(Some(id)) => active(id, 0x2000 + id as usize),
                            };
                            let got = r.observe(stream, state, None, || {
                                next_pool += 1;
                                GraphPoolId(next_pool)
                            });
                            match state {
                                CaptureState::None => {
                                    prop_assert!(got.is_none());
                                    prop_assert!(!r.streams.contains_key(&stream));
                                }
                                CaptureState::Invalidated => {
                                    prop_assert!(got.is_none());
                                    prop_assert_eq!(&r.streams, &before_streams);
                                    prop_assert_eq!(&r.captures, &before_captures);
                                }
                                CaptureState::Active { id, .. } => {
                                    let c = got.unwrap();
                                    prop_assert_eq!(c.id, id);
                                    prop_assert_eq!(r.streams.get(&stream), Some(&id));
                                    if let Some(known) = before_captures.get(&id) {
                                        prop_assert_eq!(c.pool, known.pool, "a registered capture keeps its pool");
                                    } else {
                                        prop_assert_eq!(c.pool, GraphPoolId(next_pool), "an adopted capture gets a fresh pool");
                                    }
                                }
                            }
                        }
                    }
                    check_invariants(&r);
                }
            }
        }
    }
}
