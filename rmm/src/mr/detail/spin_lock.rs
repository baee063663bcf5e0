//! [`SpinLock`]: the lock of the allocators' per-stream hot paths (a
//! stream-ordered core's stream slots, binning's cache stripes, an arena's
//! stream arenas).
//!
//! Those locks are taken for a few dozen nanoseconds at a time, almost
//! always by the one thread working on their stream, so what matters is
//! the uncontended cost. `std::sync::Mutex` pays two atomic
//! read-modify-writes per lock and unlock (a compare-exchange to take it,
//! a swap to learn whether to wake a sleeper). This lock pays one at most:
//! it is released with a plain store, because no waiter sleeps on it in
//! the kernel. A waiter spins briefly, then yields its core, then naps for
//! a few microseconds at a time (never over [`MAX_NAP`]), trying again
//! between naps, so a holder that is descheduled or waits on the device
//! (a slow path synchronising before it takes another stream's blocks)
//! costs its waiters latency, not a core each.
//!
//! **Biased to its thread.** A thread that takes the lock twice in a row
//! gets it biased: from then on it takes the lock with plain loads and
//! stores (its `busy` flag, no compare-exchange; the measured figures are
//! in docs/performance.md). Any other thread that takes it revokes the
//! bias first: it clears the owner, runs the heavy half of an asymmetric
//! fence (`membarrier(2)`, microseconds; [`asymmetric_fence`]) and waits
//! for the owner to leave. Only the first owner is ever biased again (a
//! revoked owner's late stores to `busy` could otherwise clear a later
//! owner's), and a lock revoked [`MAX_REVOCATIONS`] times stays unbiased.
//! Where the fence is not available, or with `RMM_BIASED_LOCKS=0`, no lock
//! is biased.
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
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use super::asymmetric_fence::{self, thread_token};

/// Looks a waiter takes, spinning, before it starts to yield (63 of
/// them, after the first failed try).
const SPINS: u32 = 64;
/// Yields before a waiter starts to nap.
const YIELDS: u32 = 16;
/// The longest nap between two tries.
pub(crate) const MAX_NAP: Duration = Duration::from_micros(100);

/// Revocations after which a lock is never biased again: a lock that
/// threads keep taking from each other pays its compare-exchange, not a
/// `membarrier` per change of hands.
const MAX_REVOCATIONS: u32 = 8;

/// A mutual-exclusion lock released with one store, biased to the thread
/// that takes it most (see the module docs).
pub(crate) struct SpinLock<T> {
    /// Taken by every holder but the biased owner on its fast path.
    locked: AtomicBool,
    /// The thread token ([`thread_token`]) the lock is biased to; 0: none.
    /// Set only under `locked`; cleared only under `locked`, before a
    /// [`heavy`](asymmetric_fence::heavy) fence.
    owner: AtomicU64,
    /// The owner is inside the lock on its fast path. Written only by the
    /// owner's thread.
    busy: AtomicBool,
    /// The one thread the lock may ever be biased to: the first owner
    /// (written under `locked`). An owner whose bias was revoked may
    /// still set and clear `busy` after the revoker looked (it read
    /// `owner` before the revocation and stores later); were the lock then
    /// biased to another thread, those late stores could clear that
    /// owner's `busy` while it is inside. Biased again only to the same
    /// thread, the late stores come before its later ones.
    first: AtomicU64,
    /// The token of the thread that took `locked` last (written under it).
    last: AtomicU64,
    /// Biases revoked so far (written under `locked`).
    revocations: AtomicU32,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out access to `value` to one thread at a time
// (the `locked` flag, taken with Acquire and released with Release, or the
// owner's `busy` flag, which every other holder waits to see clear, with
// Acquire, after revoking the bias; see `lock`), so a `T` that may be sent
// between threads may be shared through it, as with `Mutex<T>`.
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
            owner: AtomicU64::new(0),
            busy: AtomicBool::new(false),
            first: AtomicU64::new(0),
            last: AtomicU64::new(0),
            revocations: AtomicU32::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// Takes the lock: by the thread it is biased to, two stores and two
    /// loads; by any other, one compare-exchange when it is free (and,
    /// the first time after the owner's, the revocation of the bias).
    ///
    /// A thread that already holds the lock and takes it again waits
    /// forever, as with a `Mutex`.
    #[inline]
    pub fn lock(&self) -> SpinGuard<'_, T> {
        let me = thread_token();
        if self.owner.load(Ordering::Relaxed) == me && self.enter_biased(me) {
            return self.guard(Release::Busy);
        }
        self.lock_unbiased(me)
    }

    /// The owner's fast path: true when it is in. The store of `busy` and
    /// the second look at `owner` are ordered for the compiler only; a
    /// revoker's heavy fence orders them on the CPU (the module docs of
    /// [`asymmetric_fence`]).
    #[inline]
    fn enter_biased(&self, me: u64) -> bool {
        if self.busy.load(Ordering::Relaxed) {
            // This thread is in already: the nested lock takes the other
            // path, which waits for it forever, as a nested `lock` does.
            return false;
        }
        self.busy.store(true, Ordering::Relaxed);
        compiler_fence(Ordering::SeqCst);
        // Acquire: nothing of the critical section moves above the look.
        if self.owner.load(Ordering::Acquire) == me {
            return true;
        }
        // Revoked meanwhile: out again, to the flag like everyone.
        self.busy.store(false, Ordering::Release);
        false
    }

    /// Takes the flag (waiting while another holds it), then settles the
    /// bias.
    #[cold]
    fn lock_unbiased(&self, me: u64) -> SpinGuard<'_, T> {
        if self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            self.lock_contended();
        }
        let release = self.settle_bias(me);
        self.guard(release)
    }

    /// Takes the lock if it is free. Waits only for a biased owner to
    /// leave a critical section it is in (a few dozen nanoseconds).
    pub fn try_lock(&self) -> Option<SpinGuard<'_, T>> {
        let me = thread_token();
        if self.owner.load(Ordering::Relaxed) == me {
            return self.enter_biased(me).then(|| self.guard(Release::Busy));
        }
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()?;
        let release = self.settle_bias(me);
        Some(self.guard(release))
    }

    /// Under `locked`: revokes another thread's bias (waiting for it to
    /// leave), and biases the lock to this thread when it also took the
    /// flag last time, no other thread was ever biased, the fence is
    /// available and the lock was not revoked too often. A lock biased
    /// here is held as the owner holds it (`busy` set) as well as by the
    /// flag, so that a nested `lock` waits as it would without the bias;
    /// how the guard lets go.
    fn settle_bias(&self, me: u64) -> Release {
        if self.owner.load(Ordering::Relaxed) != 0 {
            self.revoke();
        }
        // Under `locked`: a load and a store, no read-modify-write.
        let last = self.last.load(Ordering::Relaxed);
        self.last.store(me, Ordering::Relaxed);
        let first = self.first.load(Ordering::Relaxed);
        if last == me
            && (first == 0 || first == me)
            && self.revocations.load(Ordering::Relaxed) < MAX_REVOCATIONS
            && asymmetric_fence::available()
        {
            // No revoker reads `busy` meanwhile: they all wait for `locked`.
            self.first.store(me, Ordering::Relaxed);
            self.busy.store(true, Ordering::Relaxed);
            self.owner.store(me, Ordering::Relaxed);
            return Release::Both;
        }
        Release::Locked
    }

    /// Under `locked`: ends the bias, then waits until the owner is out.
    #[cold]
    #[inline(never)]
    fn revoke(&self) {
        self.owner.store(0, Ordering::Relaxed);
        // After this, the owner either saw `owner` cleared, or its `busy`
        // shows here (the module docs of `asymmetric_fence`).
        asymmetric_fence::heavy();
        // Acquire: the owner's critical section happens before ours.
        wait_while(|| self.busy.load(Ordering::Acquire));
        self.revocations.fetch_add(1, Ordering::Relaxed);
    }

    #[cold]
    fn lock_contended(&self) {
        loop {
            // Wait until it looks free (a load does not take the cache line
            // from the holder), then try to take it.
            wait_while(|| self.locked.load(Ordering::Relaxed));
            if self
                .locked
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_ok()
            {
                return;
            }
        }
    }

    #[inline]
    fn guard(&self, release: Release) -> SpinGuard<'_, T> {
        SpinGuard {
            lock: self,
            release,
            _not_auto: PhantomData,
        }
    }

    /// True when the lock is biased to the calling thread.
    #[cfg(test)]
    fn biased_to_me(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == thread_token()
    }
}

/// Waits while `busy()`: spins with backoff, then yields, then naps (up
/// to [`MAX_NAP`]), looking again between each.
fn wait_while(busy: impl Fn() -> bool) {
    let mut tries = 0u32;
    let mut nap = Duration::from_micros(1);
    while busy() {
        tries += 1;
        if tries < SPINS {
            // Backing off (2, 4 .. 64 pauses between looks) keeps waiters
            // from taking the line in turns while the holder works.
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
}

impl<T: fmt::Debug> fmt::Debug for SpinLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.try_lock() {
            Some(g) => f.debug_struct("SpinLock").field("value", &*g).finish(),
            None => f.debug_struct("SpinLock").field("value", &"<locked>").finish(),
        }
    }
}

/// How a guard holds its lock.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Release {
    /// As the biased owner: `busy`.
    Busy,
    /// By the flag: `locked`.
    Locked,
    /// By the flag, and as the owner the lock was just biased to.
    Both,
}

/// Access to a [`SpinLock`]'s value; releases the lock when dropped.
pub(crate) struct SpinGuard<'a, T> {
    lock: &'a SpinLock<T>,
    /// What letting go clears.
    release: Release,
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
        match self.release {
            Release::Busy => self.lock.busy.store(false, Ordering::Release),
            Release::Locked => self.lock.locked.store(false, Ordering::Release),
            Release::Both => {
                self.lock.busy.store(false, Ordering::Release);
                self.lock.locked.store(false, Ordering::Release);
            }
        }
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

    /// A thread that takes the lock twice in a row gets it biased (where
    /// the fence is available); another thread's lock revokes the bias
    /// and waits for the owner's critical section to end.
    #[test]
    fn the_bias_goes_to_a_repeat_taker_and_another_thread_revokes_it() {
        let lock = Arc::new(SpinLock::new(0u32));
        *lock.lock() += 1;
        assert!(!lock.biased_to_me(), "biased at the first take");
        *lock.lock() += 1;
        assert_eq!(lock.biased_to_me(), asymmetric_fence::available());
        // Held on the fast path while another thread comes: it must wait.
        let held = lock.lock();
        let other = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                let mut g = lock.lock();
                *g += 10;
                *g
            })
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!other.is_finished(), "the other thread got in beside the owner");
        drop(held);
        assert_eq!(other.join().unwrap(), 12);
        assert!(!lock.biased_to_me());
        assert_eq!(*lock.lock(), 12);
    }

    /// Two fields updated apart by threads that keep taking the lock from
    /// one another, on fresh locks (each biased and revoked up to its
    /// limit): a second holder at any moment would see them differ, or
    /// lose an update.
    #[test]
    fn revocations_never_let_two_holders_in() {
        for round in 0..40 {
            let lock = Arc::new(SpinLock::new((0u64, 0u64)));
            let threads: Vec<_> = (0..3)
                .map(|t| {
                    let lock = lock.clone();
                    std::thread::spawn(move || {
                        for i in 0..3_000u32 {
                            let mut g = lock.lock();
                            g.0 += 1;
                            assert_eq!(g.0, g.1 + 1, "round {round}");
                            g.1 += 1;
                            drop(g);
                            // Runs of takes by one thread (which bias the
                            // lock to it) between changes of hands.
                            if (i + t) % 97 == 0 {
                                std::thread::yield_now();
                            }
                        }
                    })
                })
                .collect();
            for t in threads {
                t.join().unwrap();
            }
            assert_eq!(*lock.lock(), (9_000, 9_000), "round {round}");
        }
    }

    /// An owner whose bias was revoked may still set and clear `busy`
    /// after the revoker looked. So no other thread gets the bias after it:
    /// those late stores cannot let a revoker in beside a later owner.
    #[test]
    fn only_the_first_owner_is_ever_biased() {
        use std::sync::mpsc::channel;
        if !asymmetric_fence::available() {
            return;
        }
        let lock = Arc::new(SpinLock::new(0u32));
        // The first owner takes the lock twice, then stays alive (no later
        // thread gets its token).
        let (a_done, a_wait) = channel::<()>();
        let (a_ready, a_is_ready) = channel::<()>();
        let a = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                drop(lock.lock());
                drop(lock.lock());
                assert!(lock.biased_to_me());
                a_ready.send(()).unwrap();
                a_wait.recv().unwrap();
            })
        };
        a_is_ready.recv().unwrap();
        // Another thread revokes it and takes the lock again and again: it
        // holds the flag each time, never the bias.
        let (c_in, c_is_in) = channel::<()>();
        let (c_go, c_wait) = channel::<()>();
        let c = {
            let lock = lock.clone();
            std::thread::spawn(move || {
                for _ in 0..3 {
                    drop(lock.lock());
                }
                assert!(!lock.biased_to_me());
                let mut g = lock.lock();
                assert_eq!(g.release, Release::Locked);
                c_in.send(()).unwrap();
                c_wait.recv().unwrap();
                *g += 1;
            })
        };
        c_is_in.recv().unwrap();
        // The first owner's late stores, as a descheduled one would make them.
        lock.busy.store(true, Ordering::Relaxed);
        lock.busy.store(false, Ordering::Release);
        let d = {
            let lock = lock.clone();
            std::thread::spawn(move || *lock.lock())
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!d.is_finished(), "a taker got in beside the holder");
        c_go.send(()).unwrap();
        assert_eq!(d.join().unwrap(), 1);
        c.join().unwrap();
        a_done.send(()).unwrap();
        a.join().unwrap();
        assert_eq!(lock.revocations.load(Ordering::Relaxed), 1);
    }

    /// After [`MAX_REVOCATIONS`] revocations the lock is not biased again.
    #[test]
    fn a_lock_that_changes_hands_often_stays_unbiased() {
        if !asymmetric_fence::available() {
            return;
        }
        let lock = Arc::new(SpinLock::new(()));
        for _ in 0..MAX_REVOCATIONS {
            drop(lock.lock());
            drop(lock.lock());
            assert!(lock.biased_to_me());
            let l = lock.clone();
            std::thread::spawn(move || drop(l.lock())).join().unwrap();
        }
        assert_eq!(lock.revocations.load(Ordering::Relaxed), MAX_REVOCATIONS);
        drop(lock.lock());
        drop(lock.lock());
        assert!(!lock.biased_to_me());
    }

    /// The owner's `try_lock` while it holds the lock on the fast path
    /// fails instead of handing out a second guard.
    #[test]
    fn a_biased_owner_cannot_take_its_lock_twice() {
        let lock = SpinLock::new(1u8);
        drop(lock.lock());
        // Biased by this take: held by the flag and as the owner.
        let g = lock.lock();
        assert!(lock.try_lock().is_none());
        drop(g);
        // On the owner's fast path.
        let g = lock.lock();
        assert!(lock.try_lock().is_none());
        drop(g);
        assert_eq!(*lock.try_lock().unwrap(), 1);
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
