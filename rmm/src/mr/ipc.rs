//! Sharing a driver pool between processes (Linux): a
//! [`CudaAsyncMemoryResource`] made with
//! [`ExportHandleType::PosixFileDescriptor`] exports its pool as a file
//! descriptor and each allocation as 64 bytes of [`PoolPointerExport`];
//! another process imports the pool ([`ImportedPool::from_fd`]) and maps
//! the allocations ([`ImportedPool::import`]).
//!
//! The order the driver asks for, and the caller keeps: the importing
//! process uses an allocation only after the exporting process's
//! allocation has run in stream order (synchronise the exporter's stream
//! before sending the export data), and every importing process frees its
//! mapping ([`ImportedAllocation::free`]) before the exporter frees the
//! allocation.
//!
//! How the descriptor travels between the processes is the caller's
//! choice (inherited by a child, or sent over a Unix socket with
//! `SCM_RIGHTS`); `tests/ipc.rs` hands it to a child process.
//!
//! ```no_run
//! use rmm::mr::{CudaAsyncMemoryResource, CudaAsyncOptions, ExportHandleType, MemoryResource};
//! // Process A
//! let mr = CudaAsyncMemoryResource::with_options(
//!     CudaAsyncOptions::default().export_handle_type(ExportHandleType::PosixFileDescriptor),
//! )?;
//! let s = rmm::CudaStream::new()?;
//! let p = mr.allocate(1 << 20, 256, s.view())?;
//! s.synchronize()?;
//! let fd = mr.export_pool()?; // send it to process B
//! let data = mr.export_pointer(p)?.to_hex(); // and this
//! # Ok::<(), rmm::Error>(())
//! ```
//!
//! ```no_run
//! use rmm::mr::{ImportedPool, PoolPointerExport};
//! # let fd: std::os::fd::OwnedFd = unimplemented!();
//! # let data = String::new();
//! // Process B
//! let pool = ImportedPool::from_fd(fd)?;
//! let a = pool.import(&PoolPointerExport::from_hex(&data)?)?;
//! // ... use a.ptr() on the GPU ...
//! a.free(rmm::CudaStreamView::DEFAULT)?;
//! # Ok::<(), rmm::Error>(())
//! ```

use std::fmt;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::Ordering;

use super::CudaAsyncMemoryResource;
use super::ExportHandleType;
use crate::device::{current_device, ensure_current, DeviceId};
use crate::driver::{self, PoolHandle};
use crate::error::{Error, Result};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// What another process needs to map one allocation of an exported pool:
/// 64 opaque bytes (`CUmemPoolPtrExportData`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct PoolPointerExport([u8; 64]);

impl PoolPointerExport {
    /// The 64 bytes.
    pub fn to_bytes(&self) -> [u8; 64] {
        self.0
    }

    /// From the 64 bytes another process exported.
    pub fn from_bytes(bytes: [u8; 64]) -> Self {
        PoolPointerExport(bytes)
    }

    /// The bytes as 128 lowercase hex digits (for an environment variable,
    /// a command line or a text protocol).
    ///
    /// ```
    /// use rmm::mr::PoolPointerExport;
    /// let e = PoolPointerExport::from_bytes([0xab; 64]);
    /// assert_eq!(PoolPointerExport::from_hex(&e.to_hex())?, e);
    /// assert!(PoolPointerExport::from_hex("abc").is_err());
    /// # Ok::<(), rmm::Error>(())
    /// ```
    pub fn to_hex(&self) -> String {
        self.0.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Parses [`to_hex`](Self::to_hex)'s text.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] unless `text` is 128 hex digits.
    pub fn from_hex(text: &str) -> Result<Self> {
        let bad = || {
            Error::InvalidArgument(format!(
                "pool pointer export data is 128 hex digits, got {text:?}"
            ))
        };
        if text.len() != 128 || !text.is_ascii() {
            return Err(bad());
        }
        let mut out = [0u8; 64];
        for (i, byte) in out.iter_mut().enumerate() {
            *byte = u8::from_str_radix(&text[2 * i..2 * i + 2], 16).map_err(|_| bad())?;
        }
        Ok(PoolPointerExport(out))
    }
}

impl fmt::Debug for PoolPointerExport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PoolPointerExport({})", self.to_hex())
    }
}

impl CudaAsyncMemoryResource {
    /// Exports the pool as a new POSIX file descriptor for another process
    /// ([`ImportedPool::from_fd`]).
    ///
    /// # Errors
    /// [`Error::Logic`] unless the resource was made with
    /// [`ExportHandleType::PosixFileDescriptor`]; the driver's error.
    pub fn export_pool(&self) -> Result<OwnedFd> {
        if self.export_handle_type() != ExportHandleType::PosixFileDescriptor {
            return Err(Error::Logic(format!(
                "CudaAsyncMemoryResource: the pool was made with export handle {:?}; export needs \
                 CudaAsyncOptions::export_handle_type(ExportHandleType::PosixFileDescriptor)",
                self.export_handle_type()
            )));
        }
        ensure_current("CudaAsyncMemoryResource", self.pool_device())?;
        // SAFETY: the resource owns its pool, which lives at least as long.
        let fd = unsafe { driver::mem_pool_export_posix_fd(self.pool())? };
        self.exported_flag().store(true, Ordering::Release);
        // SAFETY: the driver just created this descriptor for the caller,
        // who owns it from here on.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    /// The export data of `ptr`, an allocation of this pool, for another
    /// process that imported the pool ([`ImportedPool::import`]). The driver
    /// exports allocations only of a pool that was exported once: unless
    /// [`export_pool`](Self::export_pool) ran before, this exports the
    /// pool first (and closes that descriptor).
    ///
    /// # Errors
    /// [`Error::Logic`] unless the pool is exportable; the driver's error
    /// for a pointer that is not a live allocation of this pool.
    pub fn export_pointer(&self, ptr: DevicePtr) -> Result<PoolPointerExport> {
        if self.export_handle_type() == ExportHandleType::None {
            return Err(Error::Logic(
                "CudaAsyncMemoryResource: the pool was made without an export handle type".into(),
            ));
        }
        ensure_current("CudaAsyncMemoryResource", self.pool_device())?;
        // The driver refuses to export an allocation (CUDA_ERROR_INVALID_VALUE)
        // until its pool has been exported once (driver 580, H200): export
        // the pool first and close that descriptor.
        if !self.exported_flag().load(Ordering::Acquire) {
            drop(self.export_pool()?);
        }
        driver::mem_pool_export_pointer(ptr).map(PoolPointerExport)
    }
}

/// A driver pool of another process, imported from its file descriptor:
/// maps that process's allocations into this one. Made on (and used with)
/// the device current at import. The import is kept for the life of the
/// process, as every driver pool here is (pools are never destroyed while
/// the process runs: `docs/known-issues.md`).
#[derive(Debug, Clone)]
pub struct ImportedPool {
    pool: PoolHandle,
    device: DeviceId,
}

impl ImportedPool {
    /// Imports the pool behind `fd` (from [`CudaAsyncMemoryResource::export_pool`]
    /// of another process) on the current device; `fd` is closed after.
    ///
    /// # Errors
    /// The driver's error for a descriptor that is not an exported pool.
    pub fn from_fd(fd: OwnedFd) -> Result<Self> {
        let device = current_device()?;
        let pool = driver::mem_pool_import_posix_fd(fd.as_raw_fd())?;
        drop(fd);
        Ok(ImportedPool { pool, device })
    }

    /// Maps the allocation `export` describes.
    ///
    /// # Errors
    /// [`Error::Logic`] under another current device; the driver's error
    /// for export data of another pool or of a freed allocation.
    pub fn import(&self, export: &PoolPointerExport) -> Result<ImportedAllocation> {
        ensure_current("ImportedPool", self.device)?;
        // SAFETY: an imported pool is kept for the life of the process.
        let ptr = unsafe { driver::mem_pool_import_pointer(self.pool, export.0)? };
        Ok(ImportedAllocation {
            ptr,
            device: self.device,
            freed: false,
        })
    }

    /// The imported pool handle (`CUmemoryPool` as an integer).
    pub fn pool_handle(&self) -> usize {
        self.pool.as_raw()
    }
}

/// An allocation of another process, mapped into this one. Free it
/// ([`free`](Self::free)) before the exporting process frees the
/// allocation; dropping it unfreed frees it on the legacy default stream.
#[derive(Debug)]
pub struct ImportedAllocation {
    ptr: DevicePtr,
    device: DeviceId,
    freed: bool,
}

impl ImportedAllocation {
    /// The address of the mapping in this process.
    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Unmaps the allocation after `stream`'s current work
    /// (`cuMemFreeAsync`).
    ///
    /// # Errors
    /// [`Error::Logic`] under another current device; the driver's error.
    pub fn free(mut self, stream: CudaStreamView) -> Result<()> {
        self.freed = true;
        ensure_current("ImportedAllocation", self.device)?;
        // SAFETY: the mapping was made by `import`, is freed once (the flag
        // above keeps Drop from freeing it again) and the caller orders the
        // free after its uses by passing `stream`, live for the borrow.
        unsafe { driver::mem_free_async(self.ptr, stream.handle()) }
    }
}

impl Drop for ImportedAllocation {
    fn drop(&mut self) {
        if !self.freed {
            // SAFETY: as in `free`, on the legacy stream, which follows every
            // blocking stream's work; failures are logged there.
            unsafe {
                super::cuda_async::pool_deallocate(
                    "ImportedAllocation",
                    self.device,
                    self.ptr,
                    CudaStreamView::DEFAULT,
                )
            };
        }
    }
}
