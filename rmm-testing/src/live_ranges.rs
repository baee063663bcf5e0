//! [`LiveRanges`]: the address ranges a test holds right now, shared by its
//! threads, that refuses a range overlapping a live one (a lost or doubled
//! allocation) and a release of a range it does not hold.
//!
//! ```
//! use rmm_testing::LiveRanges;
//! let live = LiveRanges::default();
//! live.insert(0x1000, 256).unwrap();
//! assert!(live.insert(0x10ff, 16).is_err()); // overlaps [0x1000, 0x1100)
//! live.insert(0x1100, 16).unwrap(); // touching is fine
//! live.remove(0x1000, 256).unwrap();
//! assert!(live.remove(0x1000, 256).is_err()); // not held any more
//! assert_eq!((live.len(), live.bytes()), (1, 16));
//! ```
#![forbid(unsafe_code)]

use std::collections::BTreeMap;
use std::sync::Mutex;

/// Live `[addr, addr + bytes)` ranges, thread safe; see the module docs.
#[derive(Debug, Default)]
pub struct LiveRanges {
    ranges: Mutex<BTreeMap<u64, usize>>,
}

impl LiveRanges {
    /// Records `[addr, addr + bytes)` as live (a zero-byte range occupies
    /// one address).
    ///
    /// # Errors
    /// A description of the live range it overlaps; nothing is recorded then.
    pub fn insert(&self, addr: u64, bytes: usize) -> Result<(), String> {
        let end = addr + bytes.max(1) as u64;
        let mut ranges = self.lock();
        if let Some((&a, &b)) = ranges.range(..end).next_back() {
            if a + (b.max(1) as u64) > addr {
                return Err(format!(
                    "[{addr:#x}, +{bytes}) overlaps the live range [{a:#x}, +{b})"
                ));
            }
        }
        ranges.insert(addr, bytes);
        Ok(())
    }

    /// Forgets the live range `[addr, addr + bytes)`.
    ///
    /// # Errors
    /// When no live range starts at `addr`, or it has another size.
    pub fn remove(&self, addr: u64, bytes: usize) -> Result<(), String> {
        let mut ranges = self.lock();
        match ranges.get(&addr) {
            Some(&b) if b == bytes => {
                ranges.remove(&addr);
                Ok(())
            }
            Some(&b) => Err(format!("{addr:#x} is live with {b} bytes, not {bytes}")),
            None => Err(format!("{addr:#x} is not live")),
        }
    }

    /// The number of live ranges.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether no range is live.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// The bytes of every live range together.
    pub fn bytes(&self) -> usize {
        self.lock().values().sum()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, usize>> {
        self.ranges.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::LiveRanges;

    #[test]
    fn refuses_every_overlap_and_accepts_neighbours() {
        let live = LiveRanges::default();
        live.insert(1000, 100).unwrap();
        for (a, b) in [(1000, 1), (999, 2), (1099, 1), (900, 500), (1050, 10)] {
            assert!(live.insert(a, b).is_err(), "[{a}, +{b}) was accepted");
        }
        live.insert(900, 100).unwrap();
        live.insert(1100, 0).unwrap();
        assert!(
            live.insert(1100, 5).is_err(),
            "a zero-byte range still holds its address"
        );
        assert_eq!(
            live.remove(1000, 99),
            Err("0x3e8 is live with 100 bytes, not 99".into())
        );
        live.remove(1000, 100).unwrap();
        live.insert(1000, 100).unwrap();
        assert_eq!((live.len(), live.bytes()), (3, 200));
    }
}
