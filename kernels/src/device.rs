//! The device-side toolbox (what `cuda_std` offers): indices, grid-stride
//! loops, barriers, warp shuffles, shared memory.

#[cfg(target_arch = "nvptx64")]
use core::arch::nvptx;

#[cfg(not(target_arch = "nvptx64"))]
pub use crate::emulator::{block_dim_x, block_idx_x, grid_dim_x, sync_threads, thread_idx_x, trap};

/// Aborts the kernel (and the context) with an illegal-instruction trap.
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn trap() -> ! {
    // SAFETY: `trap` takes no operands and never returns.
    unsafe { nvptx::trap() }
}

/// `threadIdx.x`.
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn thread_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() as u32 }
}

/// `blockIdx.x`.
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn block_idx_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_x() as u32 }
}

/// `blockDim.x`.
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn block_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_x() as u32 }
}

/// `gridDim.x`.
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn grid_dim_x() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() as u32 }
}

/// The global thread index along x.
#[inline(always)]
pub fn global_thread_x() -> usize {
    block_idx_x() as usize * block_dim_x() as usize + thread_idx_x() as usize
}

/// The total number of threads in the grid along x.
#[inline(always)]
pub fn grid_threads_x() -> usize {
    grid_dim_x() as usize * block_dim_x() as usize
}

/// Iterates `global_thread_x(), + grid_threads_x(), ...` below `n`: the
/// grid-stride loop.
#[inline(always)]
pub fn grid_stride(n: usize) -> impl Iterator<Item = usize> {
    (global_thread_x()..n).step_by(grid_threads_x().max(1))
}

/// `__syncthreads()`.
#[inline(always)]
#[cfg(target_arch = "nvptx64")]
pub fn sync_threads() {
    // SAFETY: every thread of the block reaches the barrier (callers' contract).
    unsafe { nvptx::_syncthreads() }
}

/// `barrier.sync 0` without `.aligned`: the block barrier for code in which
/// the threads of one warp may reach it at different instructions (the
/// compiler may copy a barrier into the branches before it). `__syncthreads`
/// (`bar.sync`, which is `barrier.sync.aligned`) requires every thread of a
/// warp to execute the same instruction; a scan kernel whose lanes reached
/// copies of it in two branches hung on an H200.
#[inline(always)]
pub fn sync_threads_divergent() {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier has no effect but ordering; every thread of the
    // block reaches one (callers' contract, as for `sync_threads`).
    unsafe {
        core::arch::asm!("barrier.sync 0;", options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    sync_threads();
}

/// `barrier.sync id, count` (not `.aligned`): waits until `count` threads
/// (a multiple of 32) reached barrier `id` of this block, and orders their
/// shared-memory accesses like `__syncthreads` does for the whole block.
/// Barrier 0 is `__syncthreads`'; use 1 to 15.
///
/// # Safety
/// Exactly `count` threads, whole warps, reach barrier `id` each time it is
/// used, all with the same `count`.
#[inline(always)]
pub unsafe fn sync_named(id: u32, count: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: a barrier has no effect but ordering (caller's contract on
    // who reaches it).
    unsafe {
        core::arch::asm!("barrier.sync {id}, {count};", id = in(reg32) id, count = in(reg32) count, options(nostack));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    raw_sync_named(id, count);
}
#[cfg(not(target_arch = "nvptx64"))]
use crate::emulator::sync_named as raw_sync_named;

/// Threads in a warp.
pub const WARP_SIZE: u32 = 32;

/// Mask naming every lane of a warp.
pub const FULL_MASK: u32 = 0xffff_ffff;

/// The lane of this thread within its warp (for 1-D blocks).
#[inline(always)]
pub fn lane_id() -> u32 {
    thread_idx_x() & (WARP_SIZE - 1)
}

/// The warp of this thread within its block (for 1-D blocks).
#[inline(always)]
pub fn warp_id() -> u32 {
    thread_idx_x() / WARP_SIZE
}

/// The lanes below this one (`%lanemask_lt`), for 1-D blocks.
#[inline(always)]
pub fn lanemask_lt() -> u32 {
    (1u32 << lane_id()) - 1
}

#[cfg(target_arch = "nvptx64")]
#[allow(improper_ctypes)]
extern "C" {
    #[link_name = "llvm.nvvm.shfl.sync.bfly.i32"]
    fn shfl_sync_bfly_i32(mask: u32, value: i32, lane_mask: u32, clamp: u32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.up.i32"]
    fn shfl_sync_up_i32(mask: u32, value: i32, delta: u32, clamp: u32) -> i32;
    #[link_name = "llvm.nvvm.shfl.sync.idx.i32"]
    fn shfl_sync_idx_i32(mask: u32, value: i32, lane: u32, clamp: u32) -> i32;
    #[link_name = "llvm.nvvm.vote.ballot.sync"]
    fn vote_ballot_sync(mask: u32, predicate: bool) -> u32;
    #[link_name = "llvm.nvvm.bar.warp.sync"]
    fn bar_warp_sync(mask: u32);
}

/// The 32-bit warp primitives: intrinsics on the GPU, the emulator on the host.
#[cfg(target_arch = "nvptx64")]
mod raw {
    use super::FULL_MASK;
    #[inline(always)]
    pub fn bfly(v: u32, m: u32) -> u32 {
        // SAFETY: all 32 lanes execute the shuffle together (callers' contract:
        // warp-converged code); the intrinsic has no memory effects.
        unsafe { super::shfl_sync_bfly_i32(FULL_MASK, v as i32, m, 0x1f) as u32 }
    }
    #[inline(always)]
    pub fn up(v: u32, d: u32) -> u32 {
        // SAFETY: as `bfly`.
        unsafe { super::shfl_sync_up_i32(FULL_MASK, v as i32, d, 0) as u32 }
    }
    #[inline(always)]
    pub fn idx(v: u32, l: u32) -> u32 {
        // SAFETY: as `bfly`.
        unsafe { super::shfl_sync_idx_i32(FULL_MASK, v as i32, l, 0x1f) as u32 }
    }
    #[inline(always)]
    pub fn ballot(p: bool) -> u32 {
        // SAFETY: all lanes call it together (callers' contract); no memory effects.
        unsafe { super::vote_ballot_sync(FULL_MASK, p) }
    }
    #[inline(always)]
    pub fn sync_warp() {
        // SAFETY: all lanes of the warp reach it (callers' contract).
        unsafe { super::bar_warp_sync(FULL_MASK) }
    }
}
#[cfg(not(target_arch = "nvptx64"))]
use crate::emulator::raw;

/// A value that moves through warp shuffles as one or two 32-bit words.
pub trait Word: Copy {
    /// The low 32 bits.
    fn lo(self) -> u32;
    /// The high 32 bits (0 for 32-bit types).
    fn hi(self) -> u32;
    /// Rebuilds the value from its words.
    fn from_words(lo: u32, hi: u32) -> Self;
    /// True for 64-bit types (two shuffles).
    const WIDE: bool;
}

macro_rules! word32 {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            fn lo(self) -> u32 { self.to_bits_u32() }
            #[inline(always)]
            fn hi(self) -> u32 { 0 }
            #[inline(always)]
            fn from_words(lo: u32, _hi: u32) -> Self { <$t>::from_bits_u32(lo) }
            const WIDE: bool = false;
        }
    )*};
}
macro_rules! word64 {
    ($($t:ty),*) => {$(
        impl Word for $t {
            #[inline(always)]
            fn lo(self) -> u32 { self.to_bits_u64() as u32 }
            #[inline(always)]
            fn hi(self) -> u32 { (self.to_bits_u64() >> 32) as u32 }
            #[inline(always)]
            fn from_words(lo: u32, hi: u32) -> Self { <$t>::from_bits_u64(lo as u64 | ((hi as u64) << 32)) }
            const WIDE: bool = true;
        }
    )*};
}

/// Bit casts to and from `u32` / `u64` for the primitive element types.
pub trait Bits: Copy {
    /// The bits of a 32-bit value.
    fn to_bits_u32(self) -> u32 {
        0
    }
    /// A 32-bit value from its bits.
    fn from_bits_u32(_b: u32) -> Self {
        unreachable_word()
    }
    /// The bits of a 64-bit value.
    fn to_bits_u64(self) -> u64 {
        0
    }
    /// A 64-bit value from its bits.
    fn from_bits_u64(_b: u64) -> Self {
        unreachable_word()
    }
}

#[inline(always)]
fn unreachable_word<T>() -> T {
    trap()
}

impl Bits for u32 {
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self
    }
    #[inline(always)]
    fn from_bits_u32(b: u32) -> Self {
        b
    }
}
impl Bits for i32 {
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self as u32
    }
    #[inline(always)]
    fn from_bits_u32(b: u32) -> Self {
        b as i32
    }
}
impl Bits for f32 {
    #[inline(always)]
    fn to_bits_u32(self) -> u32 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits_u32(b: u32) -> Self {
        f32::from_bits(b)
    }
}
impl Bits for u64 {
    #[inline(always)]
    fn to_bits_u64(self) -> u64 {
        self
    }
    #[inline(always)]
    fn from_bits_u64(b: u64) -> Self {
        b
    }
}
impl Bits for i64 {
    #[inline(always)]
    fn to_bits_u64(self) -> u64 {
        self as u64
    }
    #[inline(always)]
    fn from_bits_u64(b: u64) -> Self {
        b as i64
    }
}
impl Bits for f64 {
    #[inline(always)]
    fn to_bits_u64(self) -> u64 {
        self.to_bits()
    }
    #[inline(always)]
    fn from_bits_u64(b: u64) -> Self {
        f64::from_bits(b)
    }
}

word32!(u32, i32, f32);
word64!(u64, i64, f64);

/// `__shfl_xor_sync(FULL_MASK, v, lane_mask)`: every lane of the warp must call it.
#[inline(always)]
pub fn shfl_xor<T: Word>(v: T, lane_mask: u32) -> T {
    let lo = raw::bfly(v.lo(), lane_mask);
    let hi = if T::WIDE { raw::bfly(v.hi(), lane_mask) } else { 0 };
    T::from_words(lo, hi)
}

/// `__shfl_up_sync(FULL_MASK, v, delta)`: lanes below `delta` get their own value.
#[inline(always)]
pub fn shfl_up<T: Word>(v: T, delta: u32) -> T {
    let lo = raw::up(v.lo(), delta);
    let hi = if T::WIDE { raw::up(v.hi(), delta) } else { 0 };
    T::from_words(lo, hi)
}

/// `__shfl_sync(FULL_MASK, v, lane)`: the value of lane `lane`.
#[inline(always)]
pub fn shfl_idx<T: Word>(v: T, lane: u32) -> T {
    let lo = raw::idx(v.lo(), lane);
    let hi = if T::WIDE { raw::idx(v.hi(), lane) } else { 0 };
    T::from_words(lo, hi)
}

/// `__ballot_sync(FULL_MASK, predicate)`: bit `i` set when lane `i`'s
/// predicate holds. Every lane of the warp must call it.
#[inline(always)]
pub fn ballot(predicate: bool) -> u32 {
    raw::ballot(predicate)
}

/// `__syncwarp()`: converges the warp and orders its shared-memory accesses.
#[inline(always)]
pub fn sync_warp() {
    raw::sync_warp()
}

/// Reduces `v` over the warp with `op` (associative and commutative); every
/// lane gets the result.
#[inline(always)]
pub fn warp_reduce<T: Word>(mut v: T, op: impl Fn(T, T) -> T) -> T {
    let mut m = 16;
    while m > 0 {
        v = op(v, shfl_xor(v, m));
        m >>= 1;
    }
    v
}

/// Inclusive prefix of `v` over the lanes of the warp with `op`.
#[inline(always)]
pub fn warp_inclusive_scan<T: Word>(mut v: T, op: impl Fn(T, T) -> T) -> T {
    let lane = lane_id();
    let mut d = 1;
    while d < WARP_SIZE {
        let other = shfl_up(v, d);
        if lane >= d {
            v = op(other, v);
        }
        d <<= 1;
    }
    v
}

/// `red.shared.add.u32`: adds `v` to the shared-memory word at generic
/// address `p` without returning the old value.
///
/// # Safety
/// `p` is a generic address of a 4-byte aligned word in this block's shared memory.
#[inline(always)]
pub unsafe fn shared_red_add(p: *mut u32, v: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: the caller guarantees `p` is shared memory; the atomic has no
    // other effect.
    unsafe {
        core::arch::asm!(
            "{{ .reg .u64 %sa; cvta.to.shared.u64 %sa, {p}; red.shared.add.u32 [%sa], {v}; }}",
            p = in(reg64) p as u64,
            v = in(reg32) v,
            options(nostack)
        );
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller guarantees `p` is a live, aligned word shared by the block.
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(p).fetch_add(v, core::sync::atomic::Ordering::Relaxed);
    }
}

/// Declares a block-shared array of `$bytes` bytes named `$name` (once per
/// kernel) and evaluates to its generic address as `*mut u8`, 16-byte aligned.
/// The address is marked as shared ([`assume_shared`]), so accesses through
/// it compile to `ld.shared`/`st.shared`.
///
/// Use it once per name in a kernel's entry function, outside loops.
#[cfg(target_arch = "nvptx64")]
#[macro_export]
macro_rules! shared_bytes {
    ($name:ident, $bytes:expr) => {{
        let p: u64;
        // SAFETY: declares a `.shared` variable in this kernel's scope and
        // converts its address to a generic pointer; no memory is touched.
        unsafe {
            core::arch::asm!(
                concat!(".shared .align 16 .b8 ", stringify!($name), "[{n}];"),
                concat!("cvta.shared.u64 {p}, ", stringify!($name), ";"),
                n = const $bytes,
                p = out(reg64) p,
                options(nostack, nomem, pure)
            );
        }
        let p = p as *mut u8;
        // SAFETY: `cvta.shared` just made `p` from a `.shared` variable.
        unsafe { $crate::device::assume_shared(p) };
        p
    }};
}

#[cfg(target_arch = "nvptx64")]
extern "C" {
    #[link_name = "llvm.nvvm.isspacep.shared"]
    fn isspacep_shared(p: *const u8) -> bool;
}

/// Tells LLVM that the generic address `p` points into shared memory, so
/// that address-space inference (run early by `build.rs`'s pipeline) turns
/// every access through it into `ld.shared`/`st.shared` instead of generic
/// `ld`/`st`, which cost more registers and instructions.
///
/// # Safety
/// `p` is a shared-memory address (`shared_bytes!` passes the result of
/// `cvta.shared`); otherwise the accesses it rewrites are undefined.
#[cfg(target_arch = "nvptx64")]
#[doc(hidden)]
#[inline(always)]
pub unsafe fn assume_shared(p: *mut u8) {
    // SAFETY: `isspacep.shared` has no side effect, and the caller
    // guarantees that it holds.
    unsafe { core::hint::assert_unchecked(isspacep_shared(p)) }
}

/// Host emulator version: the block's zeroed buffer named `$name`.
#[cfg(not(target_arch = "nvptx64"))]
#[macro_export]
macro_rules! shared_bytes {
    ($name:ident, $bytes:expr) => {
        $crate::emulator::shared(stringify!($name), $bytes)
    };
}

/// Calls `f(0), f(1), ..., f(N - 1)` fully unrolled (`N <= 32`), so that
/// register arrays indexed by the argument stay in registers instead of
/// local memory. Pass a closure marked `#[inline(always)]`.
#[inline(always)]
pub fn unroll<const N: usize>(mut f: impl FnMut(usize)) {
    const { assert!(N <= 32, "unroll supports at most 32 iterations") };
    macro_rules! step {
        ($($k:literal)*) => {$( if $k < N { f($k) } )*};
    }
    step!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30 31);
}

// ---------------------------------------------------------------------------
// Global-memory atomics and ordering at GPU scope, for communication between
// blocks (the scan's decoupled look-back). On the GPU each is one PTX
// instruction (sm_70+); on the host they are `core::sync::atomic` operations
// of the same or stronger ordering, so the emulator sees the same protocol.
// ---------------------------------------------------------------------------

/// `atom.global.add.u32` (relaxed, GPU scope): adds `v` to the word at `p`
/// and returns its previous value.
///
/// # Safety
/// `p` is a 4-byte aligned word of global memory that is only accessed
/// atomically while the kernel runs.
#[inline(always)]
pub unsafe fn atomic_add_u32(p: *mut u32, v: u32) -> u32 {
    #[cfg(target_arch = "nvptx64")]
    {
        let old: u32;
        // SAFETY: the caller guarantees `p`; the instruction only touches that word.
        unsafe {
            core::arch::asm!(
                "atom.relaxed.gpu.global.add.u32 {o}, [{p}], {v};",
                o = out(reg32) old,
                p = in(reg64) p as u64,
                v = in(reg32) v,
                options(nostack)
            );
        }
        old
    }
    #[cfg(not(target_arch = "nvptx64"))]
    // SAFETY: the caller guarantees a live, aligned word accessed atomically.
    unsafe {
        core::sync::atomic::AtomicU32::from_ptr(p).fetch_add(v, core::sync::atomic::Ordering::Relaxed)
    }
}

/// A store to a global word that other blocks read while the kernel runs:
/// `$ptx` (`st.<ordering>.gpu.global.<type>`) on the GPU, the atomic store
/// of `$ordering` on the host emulator.
macro_rules! global_store {
    ($(#[$doc:meta])* $name:ident: $t:ty, $atomic:ident, $reg:ident, $ptx:literal, $ordering:ident) => {
        $(#[$doc])*
        #[inline(always)]
        pub unsafe fn $name(p: *mut $t, v: $t) {
            #[cfg(target_arch = "nvptx64")]
            // SAFETY: the caller guarantees `p`; the store touches only that word.
            unsafe {
                core::arch::asm!(
                    concat!($ptx, " [{p}], {v};"),
                    p = in(reg64) p as u64,
                    v = in($reg) v,
                    options(nostack)
                );
            }
            #[cfg(not(target_arch = "nvptx64"))]
            // SAFETY: the caller guarantees a live, aligned word accessed atomically.
            unsafe {
                core::sync::atomic::$atomic::from_ptr(p).store(v, core::sync::atomic::Ordering::$ordering)
            }
        }
    };
}

/// The load twin of `global_store!`.
macro_rules! global_load {
    ($(#[$doc:meta])* $name:ident: $t:ty, $atomic:ident, $reg:ident, $ptx:literal, $ordering:ident) => {
        $(#[$doc])*
        #[inline(always)]
        pub unsafe fn $name(p: *const $t) -> $t {
            #[cfg(target_arch = "nvptx64")]
            {
                let v: $t;
                // SAFETY: the caller guarantees `p`; the load touches only that word.
                unsafe {
                    core::arch::asm!(
                        concat!($ptx, " {v}, [{p}];"),
                        v = out($reg) v,
                        p = in(reg64) p as u64,
                        options(nostack)
                    );
                }
                v
            }
            #[cfg(not(target_arch = "nvptx64"))]
            // SAFETY: the caller guarantees a live, aligned word accessed atomically.
            unsafe {
                core::sync::atomic::$atomic::from_ptr(p as *mut $t).load(core::sync::atomic::Ordering::$ordering)
            }
        }
    };
}

global_store!(
    /// `st.relaxed.gpu.global.u64`: a single-copy atomic store that other
    /// blocks see without a fence (no ordering of earlier accesses).
    ///
    /// # Safety
    /// `p` is an 8-byte aligned word of global memory that is only accessed
    /// atomically (these functions) while the kernel runs.
    store_relaxed_u64: u64, AtomicU64, reg64, "st.relaxed.gpu.global.u64", Relaxed
);
global_load!(
    /// `ld.relaxed.gpu.global.u64`: a single-copy atomic load that bypasses
    /// stale copies in the SM's L1 (what a `volatile` load is used for in CUDA C++).
    ///
    /// # Safety
    /// As [`store_relaxed_u64`].
    load_relaxed_u64: u64, AtomicU64, reg64, "ld.relaxed.gpu.global.u64", Relaxed
);
global_store!(
    /// `st.relaxed.gpu.global.u32`: the 32-bit [`store_relaxed_u64`].
    ///
    /// # Safety
    /// `p` is a 4-byte aligned word of global memory that is only accessed
    /// atomically while the kernel runs.
    store_relaxed_u32: u32, AtomicU32, reg32, "st.relaxed.gpu.global.u32", Relaxed
);
global_load!(
    /// `ld.relaxed.gpu.global.u32`: the 32-bit [`load_relaxed_u64`].
    ///
    /// # Safety
    /// As [`store_relaxed_u32`].
    load_relaxed_u32: u32, AtomicU32, reg32, "ld.relaxed.gpu.global.u32", Relaxed
);
/// Backs off for about `ns` nanoseconds while spinning on another block
/// (`nanosleep.u32`, sm_70+), so the spinning warp leaves issue slots to the
/// others. On the host emulator it yields the OS thread, so that a spinning
/// emulated thread lets the thread it waits for run.
#[inline(always)]
pub fn back_off(ns: u32) {
    #[cfg(target_arch = "nvptx64")]
    // SAFETY: `nanosleep` only delays this thread.
    unsafe {
        core::arch::asm!("nanosleep.u32 {n};", n = in(reg32) ns, options(nostack, nomem));
    }
    #[cfg(not(target_arch = "nvptx64"))]
    {
        let _ = ns;
        std::thread::yield_now();
    }
}
