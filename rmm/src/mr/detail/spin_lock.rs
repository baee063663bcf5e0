//! [`SpinLock`]: the lock of the allocators' per-stream hot paths (a
//! stream-ordered core's stream slots, binning's cache stripes, an arena's
//! stream arenas).
//!
//! Those locks are taken for a few dozen nanoseconds at a time, almost
//! always by the one thread working on their stream, so what matters is
//! the uncontended cost. `std::sync::Mutex` pays two atomic
//! read-modify-writes per lock and unlock (a compare-exchange to take it,
//! a swap to learn whether to wake a sleeper). This lock pays one: it is
//! released with a plain store, because no waiter sleeps on it in the
//! kernel. A waiter spins briefly, then yields its core, then naps for a
//! few microseconds at a time (never over [`MAX_NAP`]), trying again
//! between naps, so a holder that is descheduled or waits on the device
//! (a slow path synchronising before it takes another stream's blocks)
//! costs its waiters latency, not a core each.
//!
//! No poisoning: a panic under the lock releases it, and the data it
//! guards keeps its invariants between calls (each caller's updates are
//! single steps), as the `Mutex`es it replaces assumed of their poisoned
//! state.
//!
//! ```text
//! let lock = SpinLock::new(0u64);
//! *lock.lock() += 1;
//! assert_eq!(*lock.lock(), 1);
//! ```

use std::cell::UnsafeCell;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Looks a waiter takes, spinning, before it starts to yield (63 of
/// them, after the first failed try).
const SPINS: u32 = 64;
/// Yields before a waiter starts to nap.
const YIELDS: u32 = 16;
/// The longest nap between two tries.
pub(crate) const MAX_NAP: Duration = Duration::from_micros(100);

/// A mutual-exclusion lock released with one store (see the module docs).
pub(crate) struct SpinLock<T> {
    locked: AtomicBool,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time
// (the `locked` flag, taken with Acquire and released with Release), so a
// `T` that may be sent between threads may be shared through it, as with
// `Mutex<T>`.
unsafe impl<T: Send> Sync for SpinLock<T> {}
// SAFETY: the lock owns its `T`.
unsafe impl<T: Send> Send for SpinLock<T> {}

impl<T: Default> Default for SpinLock<T> {
    fn default() -> Self {
        SpinLock::new(T::default())
    }
}

impl<T> SpinLock<T> {
    pub const fn new(value: T) -> Self {
        SpinLock {
            locked: AtomicBool::new(false),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock: one compare-exchange when it is free.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        SpinGuard {
            lock: self,
            _not_auto: PhantomData,
        }
    }

    /// Takes the lock if it is free.
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| SpinGuard {
                lock: self,
                _not_auto: PhantomData,
            })
    }

    #[cold]
    fn lock_contended(&self) {
        let mut tries = 0u32;
        let mut nap = Duration::from_micros(1);
        loop {
            // Wait until it looks free (a load does not take the cache line
            // from the holder), then try to take it.
            while self.locked.load(Ordering::Relaxed) {
                tries += 1;
                if tries < SPINS {
                    // Backing off (2, 4 .. 64 pauses between looks) keeps
                    // waiters from taking the line in turns while the holder
                    // works.
                    for _ in 0..1u32 << tries.min(6) {
                        std::hint::spin_loop();
                    }
                } else if tries < SPINS + YIELDS {
                    std::thread::yield_now();
                } else {
                    std::thread::sleep(nap);
                    nap = (nap * 2).min(MAX_NAP);
                }
            }
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_lock() {
            Some(g) => f.debug_struct("SpinLock").field("value", &*g).finish(),
            None => f.debug_struct("SpinLock").field("value", &"<locked>").finish(),
        }
    }
}

/// Access to a [`SpinLock`]'s value; releases the lock when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// Neither `Send` nor `Sync` of itself, as `MutexGuard`: a shared
    /// guard hands out `&T` to every thread that holds it, so it is `Sync`
    /// only where `T` is (below).
    _not_auto: PhantomData<*const ()>,
}

// SAFETY: through `&SpinGuard` a thread gets only `&T`; several threads may
// hold those at once exactly when `T: Sync`.
unsafe impl<T: Sync> Sync for SpinGuard<'_, T> {}

impl<T> Deref for SpinGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the guard holds the lock, so no other reference to the
        // value exists while it lives.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for SpinGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`; `&mut self` makes this the only borrow of
        // the guard.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for SpinGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.locked.store(false, Ordering::Release);
    }
}

impl<T: fmt::Debug> fmt::Debug for SpinGuard<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    /// Threads adding under the lock lose no update (a lost one would mean
    /// two holders at once).
    #[test]
    fn excludes_concurrent_holders() {
        let lock = Arc::new(SpinLock::new((0u64, 0u64)));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let lock = lock.clone();
                std::thread::spawn(move || {
                    for _ in 0..20_000 {
                        let mut g = lock.lock();
                        // Two fields updated apart: a second holder would
                        // see them differ.
                        g.0 += 1;
                        assert_eq!(g.0, g.1 + 1);
                        g.1 += 1;
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(*lock.lock(), (160_000, 160_000));
    }

    /// A waiter behind a holder that keeps the lock for long (as a slow
    /// path waiting on the device does) gets it soon after the release, and
    /// naps meanwhile instead of spinning a core: its CPU time stays far
    /// below the wait.
    #[test]
    fn a_long_hold_makes_waiters_nap_not_spin() {
        let lock = Arc::new(SpinLock::new(0u32));
        let held = lock.lock();
        let waiter = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let cpu0 = thread_cpu_time();
                let t0 = Instant::now();
                *lock.lock() += 1;
                (t0.elapsed(), thread_cpu_time() - cpu0)
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        drop(held);
        let (waited, cpu) = waiter.join().unwrap();
        assert_eq!(*lock.lock(), 1);
        assert!(waited >= Duration::from_millis(150), "waited {waited:?}");
        assert!(
            cpu < Duration::from_millis(100),
            "spun {cpu:?} of a {waited:?} wait"
        );
    }

    /// This thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`).
    fn thread_cpu_time() -> Duration {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `ts` is a valid out-pointer for the call.
        let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(rc, 0);
        Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    }

    /// As `Mutex`: the lock is `Sync` for any `Send` value (a `Cell`
    /// included), its guard only for a `Sync` one (a shared guard hands out
    /// `&T`; `SpinGuard<Cell<_>>` does not compile as `Sync`).
    #[test]
    fn the_lock_is_sync_for_send_values_the_guard_for_sync_ones() {
        fn sync<T: Sync>() {}
        sync::<SpinLock<std::cell::Cell<u32>>>();
        sync::<SpinGuard<'static, u32>>();
    }

    #[test]
    fn try_lock_fails_while_held_and_debug_says_so() {
        let lock = SpinLock::new(5);
        let g = lock.lock();
        assert!(lock.try_lock().is_none());
        assert!(format!("{lock:?}").contains("<locked>"));
        drop(g);
        assert_eq!(*lock.try_lock().unwrap(), 5);
        assert!(format!("{lock:?}").contains('5'));
    }
}
