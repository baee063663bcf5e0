//! rmm views as kernel arguments of cudarc's launch builder:
//! `stream.launch_builder(&f).arg(&view).arg(&mut view_mut)`.
//!
//! The argument is the view's device address. cudarc's builder does not
//! say which stream it launches on, so the ordering of [`CudarcView`] holds
//! for a launch on the view's own stream (`DeviceSlice::stream`); a launch on
//! another stream is ordered by the caller, as part of `launch`'s own
//! `unsafe` contract (cudarc cannot check the arguments either).

use cudarc::driver::{LaunchArgs, PushKernelArg};

use super::view::{CudarcView, CudarcViewMut};

// SAFETY: the argument pushed is a reference to the view's `u64` device
// address (cudarc's own impl for `&u64`), which lives as long as the borrow
// of the view, `'b`, which outlives the builder `'a`; this is how cudarc
// passes its own slices.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b CudarcView<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b CudarcView<'c, T>) -> &mut Self {
        self.arg(arg.address_arg())
    }
}

// SAFETY: as for `CudarcView`; the exclusive borrow of the view marks the
// memory as written by the kernel.
unsafe impl<'a, 'b: 'a, 'c: 'b, T> PushKernelArg<&'b mut CudarcViewMut<'c, T>> for LaunchArgs<'a> {
    #[inline(always)]
    fn arg(&mut self, arg: &'b mut CudarcViewMut<'c, T>) -> &mut Self {
        let address: &'b u64 = arg.address_arg();
        self.arg(address)
    }
}
