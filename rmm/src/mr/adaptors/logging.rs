//! [`LoggingAdaptor`]: a CSV log of every allocation and free.

use crate::mr::forensics::reported;
use std::fmt;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use super::lock;
use crate::error::{Error, Result};
use crate::logger::{format_time, thread_id};
use crate::mr::{MemoryResource, SharedResource};
use crate::ptr::DevicePtr;
use crate::stream::CudaStreamView;

/// Writes one CSV line per allocation and free (RMM's
/// `logging_resource_adaptor`), in RMM's format, which
/// the `rmm-replay` crate and RMM's replay benchmark read:
///
/// ```text
/// Thread,Time,Action,Pointer,Size,Stream
/// 1,14:02:07.123456,allocate,0x10000000000,1000,0x0
/// 1,14:02:07.123470,allocate failure,(nil),1125899906842624,0x0
/// 1,14:02:07.123501,free,0x10000000000,1000,0x0
/// ```
///
/// `Thread` is [`crate::logger::thread_id`], `Time` the UTC time of day with
/// microseconds, `Size` the requested size and `Stream` the raw stream
/// handle. A successful allocation is logged after the upstream returns, a
/// failed one as `allocate failure` with pointer `(nil)` before the error is
/// returned, and a free *before* the upstream frees (so that no other thread
/// can log a reuse of the address first).
///
/// Overhead is small: the line is formatted without any lock, then only the
/// buffered writer is locked to append it; no lock is held across an
/// upstream call; it is thread safe when the upstream is. Lines reach the sink on [`flush`](Self::flush), when the
/// buffer fills, when the last clone is dropped, or after every line with
/// `auto_flush`. Write errors are logged (once) and counted, never returned
/// from `allocate`.
///
/// ```
/// use rmm::mr::{LoggingAdaptor, MemoryResource, SimulatedMemoryResource};
/// use rmm::CudaStreamView;
/// let path = std::env::temp_dir().join(format!("rmm-doc-log-{}.csv", std::process::id()));
/// let mr = LoggingAdaptor::to_file(SimulatedMemoryResource::new(1 << 30), &path, false)?;
/// let p = mr.allocate(1000, 256, CudaStreamView::DEFAULT)?;
/// unsafe { mr.deallocate(p, 1000, 256, CudaStreamView::DEFAULT) };
/// mr.flush()?;
/// let text = std::fs::read_to_string(&path).unwrap();
/// assert_eq!(text.lines().next(), Some(LoggingAdaptor::header()));
/// assert_eq!(text.lines().count(), 3);
/// # std::fs::remove_file(&path).unwrap();
/// # Ok::<(), rmm::Error>(())
/// ```
pub struct LoggingAdaptor<U: MemoryResource = SharedResource> {
    inner: Arc<Inner<U>>,
}

struct Inner<U: MemoryResource> {
    upstream: U,
    sink: Mutex<BufWriter<Box<dyn Write + Send>>>,
    auto_flush: bool,
    path: Option<PathBuf>,
    write_errors: AtomicUsize,
}

impl<U: MemoryResource> Drop for Inner<U> {
    fn drop(&mut self) {
        if let Err(e) = lock(&self.sink).flush() {
            log::error!("LoggingAdaptor: flushing the log failed: {e}");
        }
    }
}

impl<U: MemoryResource> fmt::Debug for LoggingAdaptor<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LoggingAdaptor")
            .field("upstream", &self.inner.upstream)
            .field("path", &self.inner.path)
            .field("auto_flush", &self.inner.auto_flush)
            .finish_non_exhaustive()
    }
}

impl<U: MemoryResource> Clone for LoggingAdaptor<U> {
    fn clone(&self) -> Self {
        LoggingAdaptor {
            inner: self.inner.clone(),
        }
    }
}

/// The CSV header line (without newline).
const HEADER: &str = "Thread,Time,Action,Pointer,Size,Stream";

impl LoggingAdaptor {
    /// The CSV header line (without newline).
    pub const fn header() -> &'static str {
        HEADER
    }
}

impl<U: MemoryResource> LoggingAdaptor<U> {
    /// Logs to `filename` when given, else to the file named by the
    /// environment variable `RMM_LOG_FILE` (RMM's constructor). The file is
    /// truncated.
    ///
    /// # Errors
    /// [`Error::Logic`] when neither names a file; [`Error::Io`] when the
    /// file cannot be created or written.
    pub fn new(upstream: U, filename: Option<&Path>, auto_flush: bool) -> Result<Self> {
        match filename {
            Some(path) => Self::to_file(upstream, path, auto_flush),
            None => Self::from_env(upstream, auto_flush),
        }
    }

    /// Logs to the file named by `RMM_LOG_FILE` (truncated).
    ///
    /// # Errors
    /// [`Error::Logic`] when `RMM_LOG_FILE` is not set; [`Error::Io`] when
    /// the file cannot be created or written.
    pub fn from_env(upstream: U, auto_flush: bool) -> Result<Self> {
        match crate::env::log_file() {
            Some(path) => Self::to_file(upstream, &path, auto_flush),
            None => Err(Error::Logic(format!(
                "LoggingAdaptor: no log file given and {} is not set",
                crate::env::LOG_FILE
            ))),
        }
    }

    /// Logs to `path` (created or truncated).
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be created or written.
    pub fn to_file(upstream: U, path: impl AsRef<Path>, auto_flush: bool) -> Result<Self> {
        let path = path.as_ref();
        let file = File::create(path).map_err(|e| {
            Error::io(
                format!("LoggingAdaptor: cannot create log file {}", path.display()),
                &e,
            )
        })?;
        Self::build(upstream, Box::new(file), auto_flush, Some(path.to_path_buf()))
    }

    /// Logs to any writer (a file, a socket, `Vec<u8>` behind a handle...).
    ///
    /// # Errors
    /// [`Error::Io`] when the header cannot be written.
    pub fn to_writer(upstream: U, writer: impl Write + Send + 'static, auto_flush: bool) -> Result<Self> {
        Self::build(upstream, Box::new(writer), auto_flush, None)
    }

    fn build(
        upstream: U,
        writer: Box<dyn Write + Send>,
        auto_flush: bool,
        path: Option<PathBuf>,
    ) -> Result<Self> {
        let mut sink = BufWriter::with_capacity(64 * 1024, writer);
        let header = writeln!(sink, "{HEADER}").and_then(|()| if auto_flush { sink.flush() } else { Ok(()) });
        header.map_err(|e| Error::io("LoggingAdaptor: cannot write the log header", &e))?;
        Ok(LoggingAdaptor {
            inner: Arc::new(Inner {
                upstream,
                sink: Mutex::new(sink),
                auto_flush,
                path,
                write_errors: AtomicUsize::new(0),
            }),
        })
    }

    /// The upstream resource.
    pub fn upstream(&self) -> &U {
        &self.inner.upstream
    }

    /// The log file, when logging to a file.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Writes buffered lines to the sink and flushes it.
    ///
    /// # Errors
    /// [`Error::Io`] with the I/O error.
    pub fn flush(&self) -> Result<()> {
        lock(&self.inner.sink)
            .flush()
            .map_err(|e| Error::io("LoggingAdaptor: flushing the log failed", &e))
    }

    /// Lines that could not be written.
    pub fn write_errors(&self) -> usize {
        self.inner.write_errors.load(Ordering::Relaxed)
    }

    fn log(&self, action: &str, ptr: Option<DevicePtr>, bytes: usize, stream: CudaStreamView) {
        let time = format_time(SystemTime::now(), '.');
        let line = match ptr {
            Some(p) => format!(
                "{},{time},{action},{:#x},{bytes},{:#x}\n",
                thread_id(),
                p.addr(),
                stream.as_raw()
            ),
            None => format!(
                "{},{time},{action},(nil),{bytes},{:#x}\n",
                thread_id(),
                stream.as_raw()
            ),
        };
        let mut sink = lock(&self.inner.sink);
        let written = sink.write_all(line.as_bytes()).and_then(|()| {
            if self.inner.auto_flush {
                sink.flush()
            } else {
                Ok(())
            }
        });
        drop(sink);
        if let Err(e) = written {
            if self.inner.write_errors.fetch_add(1, Ordering::Relaxed) == 0 {
                log::error!("LoggingAdaptor: writing the log failed (reported once): {e}");
            }
        }
    }
}

impl<U: MemoryResource> LoggingAdaptor<U> {
    /// What the adaptor adds to a free: its log line, written before `free`
    /// passes it upstream.
    fn logged_free(&self, ptr: DevicePtr, bytes: usize, stream: CudaStreamView, free: impl FnOnce()) {
        self.log("free", Some(ptr), bytes, stream);
        free();
    }
}

impl<U: MemoryResource> MemoryResource for LoggingAdaptor<U> {
    fn allocate(&self, bytes: usize, alignment: usize, stream: CudaStreamView) -> Result<DevicePtr> {
        reported(self, bytes, alignment, stream, || {
            match self.inner.upstream.allocate(bytes, alignment, stream) {
                Ok(p) => {
                    self.log("allocate", Some(p), bytes, stream);
                    Ok(p)
                }
                Err(e) => {
                    self.log("allocate failure", None, bytes, stream);
                    Err(e)
                }
            }
        })
    }

    forward_to_upstream!(deallocate around logged_free);
}
