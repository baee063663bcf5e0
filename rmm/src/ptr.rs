//! [`DevicePtr`], the address type every memory resource hands out.
#![forbid(unsafe_code)]

use std::fmt;

/// An address in the CUDA unified address space (device, managed or pinned
/// host memory), or a simulated address from
/// [`SimulatedMemoryResource`](crate::mr::SimulatedMemoryResource).
///
/// It is a plain integer: copying it is free and it is `Send + Sync`; only the
/// resource that returned it may free it. The null pointer is what a zero-byte
/// allocation returns.
///
/// ```
/// use rmm::DevicePtr;
/// let p = DevicePtr::new(0x1000);
/// assert_eq!(p.offset(0x100).addr(), 0x1100);
/// assert!(DevicePtr::NULL.is_null());
/// assert!(p.is_aligned(256));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct DevicePtr(u64);

impl DevicePtr {
    /// The null pointer.
    pub const NULL: DevicePtr = DevicePtr(0);

    /// Wraps a raw address.
    pub const fn new(addr: u64) -> Self {
        DevicePtr(addr)
    }

    /// The raw address.
    pub const fn addr(self) -> u64 {
        self.0
    }

    /// True for the null pointer.
    pub const fn is_null(self) -> bool {
        self.0 == 0
    }

    /// The address `bytes` further on (wrapping is a caller bug and saturates).
    pub const fn offset(self, bytes: usize) -> Self {
        DevicePtr(self.0.saturating_add(bytes as u64))
    }

    /// True when the address is a multiple of `alignment` (a power of two).
    pub const fn is_aligned(self, alignment: usize) -> bool {
        alignment != 0 && self.0.is_multiple_of(alignment as u64)
    }

    /// The address as a raw pointer, for host-accessible memory or FFI.
    pub fn as_mut_ptr<T>(self) -> *mut T {
        self.0 as usize as *mut T
    }

    /// A cust device pointer of element type `T`, for `launch!` arguments
    /// (`cust` feature).
    #[cfg(feature = "cust")]
    pub fn as_cust<T: cust::memory::DeviceCopy>(self) -> cust::memory::DevicePointer<T> {
        cust::memory::DevicePointer::from_raw(self.0)
    }
}

impl fmt::Debug for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DevicePtr({:#x})", self.0)
    }
}

impl fmt::Display for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#x}", self.0)
    }
}

impl fmt::LowerHex for DevicePtr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::LowerHex::fmt(&self.0, f)
    }
}
