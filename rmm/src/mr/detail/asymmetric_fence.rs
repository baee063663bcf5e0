//! An asymmetric memory fence, and the thread tokens it serves: what lets
//! a [`SpinLock`](super::spin_lock::SpinLock) be taken by the one thread
//! it is biased to with plain loads and stores, no atomic
//! read-modify-write.
//!
//! A fence orders a thread's store before its later load (the "store
//! buffer" reordering every CPU does). Two threads that each store a flag
//! and then read the other's (the biased owner: "I am in", then "am I
//! still the owner?"; a thread revoking the bias: "you are not the owner
//! any more", then "are you in?") need that order on both sides, or both
//! may read the old value and enter together. Here the frequent side, the
//! owner, orders its two steps for the compiler alone
//! (`compiler_fence`), and the rare side, the revoker, pays for both: it
//! calls [`heavy`], Linux's `membarrier(2)` with
//! `MEMBARRIER_CMD_PRIVATE_EXPEDITED`, which returns only after every
//! thread of the process that is running has executed a full memory
//! barrier (one that is not running passes one when it is scheduled
//! again). So either the owner's load comes after that barrier and sees the
//! revocation, or its store came before it and the revoker sees the owner
//! in: the pairing `membarrier(2)`'s manual describes, and the one
//! user-space RCU and folly's asymmetric barriers use.
//!
//! The command needs a one-time registration by the process ([`available`]
//! makes it). Where it is refused (another system, an old kernel, a
//! sandbox that filters the call), [`available`] is false and no lock is
//! ever biased: every lock pays its compare-exchange. So it is with
//! `RMM_BIASED_LOCKS=0` ([`crate::env`]).
//!
//! ```text
//! owner                          revoker (holds the lock's flag)
//! busy = true                    owner = 0
//! compiler_fence                 heavy()     // a full barrier everywhere
//! if owner == me { enter }       while busy { wait }
//! ```

use std::sync::atomic::{AtomicU8, Ordering};

/// A number no other live thread of the process has, never 0: the
/// address of the thread's control block, which the thread pointer
/// register holds (`fs:0` on x86-64, `tpidr_el0` on AArch64), so one
/// instruction, also in a shared library (where a thread local costs a
/// call). A thread that starts after another exited may get its number: it
/// then takes over a bias the exited thread held, which is sound, since a
/// thread that has exited is inside no lock (a guard it leaked would keep
/// its lock's `busy` set, and every other holder waits, as for a leaked
/// guard of any lock). Elsewhere, the address of a thread local.
#[inline(always)]
pub(crate) fn thread_token() -> u64 {
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    {
        let tcb: u64;
        // SAFETY: on x86-64 Linux the C library points `fs` at the thread's
        // control block, whose first word points to itself (the TLS ABI's
        // "TCB self pointer"); reading it writes nothing and has no other
        // effect.
        unsafe {
            std::arch::asm!(
                "mov {}, qword ptr fs:[0]",
                out(reg) tcb,
                options(nostack, preserves_flags, readonly, pure)
            )
        };
        tcb
    }
    #[cfg(all(target_os = "linux", target_arch = "aarch64"))]
    {
        let tp: u64;
        // SAFETY: `tpidr_el0` holds the thread pointer the C library set for
        // this thread; reading the register has no effect.
        unsafe {
            std::arch::asm!(
                "mrs {}, tpidr_el0",
                out(reg) tp,
                options(nostack, preserves_flags, nomem, pure)
            )
        };
        tp
    }
    #[cfg(not(all(target_os = "linux", any(target_arch = "x86_64", target_arch = "aarch64"))))]
    {
        thread_local! {
            static MARK: u8 = const { 0 };
        }
        MARK.with(|m| m as *const u8 as u64)
    }
}

const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// Whether [`heavy`] works in this process: [`UNKNOWN`] until asked.
static STATE: AtomicU8 = AtomicU8::new(UNKNOWN);

/// True when locks may be biased: `RMM_BIASED_LOCKS` does not turn them
/// off ([`crate::env`]), and [`heavy`] works here: the kernel offers the
/// private expedited `membarrier` and this process is registered for it
/// (the first call registers; later ones are one atomic load).
#[inline]
pub(crate) fn available() -> bool {
    match STATE.load(Ordering::Acquire) {
        YES => true,
        NO => false,
        _ => register(),
    }
}

#[cold]
fn register() -> bool {
    let ok = !crate::env::biased_locks_disabled() && sys::register();
    STATE.store(if ok { YES } else { NO }, Ordering::Release);
    ok
}

/// The heavy half of the fence: returns after every running thread of the
/// process has executed a full memory barrier. Called only after
/// [`available`] said true (a lock is biased only then).
pub(crate) fn heavy() {
    sys::heavy();
}

#[cfg(target_os = "linux")]
mod sys {
    use std::ffi::{c_int, c_long};

    const QUERY: c_int = 0;
    const PRIVATE_EXPEDITED: c_int = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: c_int = 1 << 4;

    fn membarrier(cmd: c_int) -> c_long {
        // SAFETY: membarrier(2) takes two integers and no pointer; any
        // command either works or returns -1 with errno set.
        unsafe { libc::syscall(libc::SYS_membarrier, cmd, 0 as c_int) }
    }

    /// Registers the process for private expedited barriers and tries
    /// one; false when the kernel does not offer them or refuses either.
    pub fn register() -> bool {
        let offered = membarrier(QUERY);
        offered >= 0
            && offered & c_long::from(PRIVATE_EXPEDITED) != 0
            && membarrier(REGISTER_PRIVATE_EXPEDITED) == 0
            && membarrier(PRIVATE_EXPEDITED) == 0
    }

    pub fn heavy() {
        if membarrier(PRIVATE_EXPEDITED) == 0 {
            return;
        }
        // Refused: the kernel refuses the command only to a process that
        // is not registered. This one registered (a lock is biased only
        // after `register` succeeded), unless it is a child forked since,
        // whose memory says "registered" for a new address space: register
        // it and try again.
        if membarrier(REGISTER_PRIVATE_EXPEDITED) == 0 && membarrier(PRIVATE_EXPEDITED) == 0 {
            return;
        }
        // Going on would let two threads into one lock: stop instead.
        eprintln!(
            "rmm: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) failed after registration ({}); aborting",
            std::io::Error::last_os_error()
        );
        std::process::abort();
    }
}

#[cfg(not(target_os = "linux"))]
mod sys {
    /// No asymmetric fence here: no lock is ever biased.
    pub fn register() -> bool {
        false
    }

    pub fn heavy() {
        // Unreachable: `register` never succeeds, so no lock is biased and
        // nothing revokes.
        std::process::abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_differ_between_threads_and_stay_within_one() {
        let mine = thread_token();
        assert_ne!(mine, 0);
        assert_eq!(thread_token(), mine);
        let other = std::thread::spawn(thread_token).join().unwrap();
        assert_ne!(other, 0);
        assert_ne!(other, mine);
    }

    /// On Linux the fence is offered (kernels since 4.14); once available,
    /// it stays so, and the heavy half returns.
    #[test]
    fn the_heavy_half_returns_where_it_is_available() {
        let first = available();
        assert_eq!(available(), first);
        if cfg!(target_os = "linux") && !first {
            eprintln!("membarrier is refused here: locks are never biased");
        }
        if first {
            heavy();
        }
    }
}
