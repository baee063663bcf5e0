//! A host emulator of the device toolbox, so that the kernels' logic can be
//! tested on a machine without a GPU (`cargo test` in `kernels/` on the
//! host): one OS thread per GPU thread, `std::sync::Barrier`s for
//! `__syncthreads` and the warps, exchange slots for shuffles and ballots,
//! and named, per-block shared buffers filled with garbage (0xA5) so that
//! reading shared memory before writing it shows up.
//!
//! [`launch`] runs the blocks of a launch one after the other, in block
//! order (a legal GPU schedule: for the single-pass scan, whose blocks take
//! their tiles from a counter, every look-back then finds its predecessors
//! done). [`launch_concurrent`] runs up to `resident` blocks at once, as a GPU
//! does, so that blocks really wait on each other; spinning device code must
//! then back off (`device::back_off` yields the OS thread here).
//! Only compiled for the host, never into the PTX.

use std::boxed::Box;
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier, Mutex};
use std::vec::Vec;

struct Warp {
    barrier: Barrier,
    slots: [AtomicU64; 32],
}

struct Block {
    idx: u32,
    dim: u32,
    grid: u32,
    barrier: Barrier,
    warps: Vec<Warp>,
    shared: Mutex<HashMap<&'static str, Box<[u128]>>>,
    /// Barriers 1 to 15, created by the first thread that reaches each with
    /// its thread count.
    named: Mutex<HashMap<u32, Arc<Barrier>>>,
}

std::thread_local! {
    static CTX: RefCell<Option<(Arc<Block>, u32)>> = const { RefCell::new(None) };
}

fn with<R>(f: impl FnOnce(&Block, u32) -> R) -> R {
    let (b, t) = CTX
        .with(|c| c.borrow().clone())
        .expect("device function called outside an emulated launch");
    f(&b, t)
}

/// Runs block `b` of a `grid`-block launch: `block` OS threads.
fn run_block(b: u32, grid: u32, block: u32, kernel: &(impl Fn() + Sync)) {
    let blk = Arc::new(Block {
        idx: b,
        dim: block,
        grid,
        barrier: Barrier::new(block as usize),
        warps: (0..block / 32)
            .map(|_| Warp {
                barrier: Barrier::new(32),
                slots: core::array::from_fn(|_| AtomicU64::new(0)),
            })
            .collect(),
        shared: Mutex::new(HashMap::new()),
        named: Mutex::new(HashMap::new()),
    });
    std::thread::scope(|s| {
        for t in 0..block {
            let blk = blk.clone();
            std::thread::Builder::new()
                .stack_size(512 << 10)
                .spawn_scoped(s, move || {
                    CTX.with(|c| *c.borrow_mut() = Some((blk, t)));
                    kernel();
                    CTX.with(|c| *c.borrow_mut() = None);
                })
                .expect("spawn an emulated thread");
        }
    });
}

/// Runs `kernel` on `grid` blocks of `block` threads (a multiple of 32), one
/// block after the other in block order.
pub fn launch(grid: u32, block: u32, kernel: impl Fn() + Sync) {
    assert!(block.is_multiple_of(32) && block > 0);
    for b in 0..grid {
        run_block(b, grid, block, &kernel);
    }
}

/// Runs `kernel` on `grid` blocks of `block` threads with up to `resident`
/// blocks running at once: like a GPU, a block starts (in block order) when
/// one of the `resident` slots is free, and blocks in flight interleave.
pub fn launch_concurrent(grid: u32, block: u32, resident: u32, kernel: impl Fn() + Sync) {
    assert!(block.is_multiple_of(32) && block > 0 && resident > 0);
    let next = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..resident.min(grid) {
            let (next, kernel) = (&next, &kernel);
            s.spawn(move || loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                if b >= grid {
                    break;
                }
                run_block(b, grid, block, kernel);
            });
        }
    });
}

/// `threadIdx.x`.
pub fn thread_idx_x() -> u32 {
    with(|_, t| t)
}
/// `blockIdx.x`.
pub fn block_idx_x() -> u32 {
    with(|b, _| b.idx)
}
/// `blockDim.x`.
pub fn block_dim_x() -> u32 {
    with(|b, _| b.dim)
}
/// `gridDim.x`.
pub fn grid_dim_x() -> u32 {
    with(|b, _| b.grid)
}
/// `__syncthreads()`.
pub fn sync_threads() {
    with(|b, _| {
        b.barrier.wait();
    })
}
/// `barrier.sync id, count`: waits until `count` threads of the block
/// reached barrier `id` (1 to 15; every use of one `id` in a launch passes
/// the same count).
pub fn sync_named(id: u32, count: u32) {
    let barrier = with(|b, _| {
        b.named
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(id)
            .or_insert_with(|| Arc::new(Barrier::new(count as usize)))
            .clone()
    });
    barrier.wait();
}
/// A trap: panics the emulated thread.
pub fn trap() -> ! {
    panic!("device trap")
}

/// The block's shared buffer `name` of `bytes` bytes (16-byte aligned),
/// created full of 0xA5 bytes on first use.
pub fn shared(name: &'static str, bytes: usize) -> *mut u8 {
    with(|b, _| {
        let mut m = b.shared.lock().unwrap();
        let buf = m.entry(name).or_insert_with(|| {
            std::vec![u128::from_ne_bytes([0xA5; 16]); bytes.div_ceil(16).max(1)].into_boxed_slice()
        });
        buf.as_mut_ptr() as *mut u8
    })
}

fn exchange(v: u64, src: impl Fn(u32) -> u32) -> u64 {
    with(|b, t| {
        let w = &b.warps[(t / 32) as usize];
        let lane = t % 32;
        w.slots[lane as usize].store(v, Ordering::SeqCst);
        w.barrier.wait();
        let r = w.slots[(src(lane) & 31) as usize].load(Ordering::SeqCst);
        w.barrier.wait();
        r
    })
}

/// The 32-bit warp primitives.
pub mod raw {
    use super::{exchange, with};
    use std::sync::atomic::Ordering;

    /// Butterfly shuffle.
    pub fn bfly(v: u32, m: u32) -> u32 {
        exchange(v as u64, |l| l ^ m) as u32
    }
    /// Shuffle up (lanes below `d` keep their value).
    pub fn up(v: u32, d: u32) -> u32 {
        exchange(v as u64, |l| if l >= d { l - d } else { l }) as u32
    }
    /// Shuffle from lane `l`.
    pub fn idx(v: u32, l: u32) -> u32 {
        exchange(v as u64, |_| l) as u32
    }
    /// Ballot.
    pub fn ballot(p: bool) -> u32 {
        with(|b, t| {
            let w = &b.warps[(t / 32) as usize];
            w.slots[(t % 32) as usize].store(p as u64, Ordering::SeqCst);
            w.barrier.wait();
            let mut mask = 0u32;
            for (i, s) in w.slots.iter().enumerate() {
                if s.load(Ordering::SeqCst) != 0 {
                    mask |= 1 << i;
                }
            }
            w.barrier.wait();
            mask
        })
    }
    /// `__syncwarp()`.
    pub fn sync_warp() {
        with(|b, t| {
            b.warps[(t / 32) as usize].barrier.wait();
        })
    }
}
