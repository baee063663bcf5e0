//! The crate's one error type.
//!
//! Every fallible call in `rmm` returns [`Result<T>`](Result). CUDA driver status
//! codes are turned into [`Error`] in exactly one place, [`Error::from_cuda`]:
//! that is where the driver's out-of-memory code becomes [`Error::OutOfMemory`],
//! so callers that spill on out-of-memory can match that one variant.
#![forbid(unsafe_code)]

/// Errors returned by memory resources, containers, streams and devices.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A CUDA driver call failed with a code other than out-of-memory.
    #[error("CUDA error {code} ({name}) in {call}")]
    Cuda {
        /// The raw `CUresult` value.
        code: u32,
        /// The driver's name for the code, e.g. `CUDA_ERROR_INVALID_VALUE`.
        name: &'static str,
        /// The driver call or operation that failed.
        call: &'static str,
    },
    /// The CUDA driver library could not be loaded (no NVIDIA driver on this
    /// machine) or lacks an entry point `rmm` calls (a driver too old). Every
    /// call that needs the driver returns it; simulated resources still work.
    /// The message names the library, e.g. `CUDA driver library
    /// libcuda.so.1 not found: install the NVIDIA driver ...`.
    #[error("{0}")]
    DriverUnavailable(String),
    /// The request could not be satisfied because memory ran out (device,
    /// pool, arena or a configured limit). The message contains `out_of_memory`.
    #[error("out_of_memory: failed to allocate {requested} bytes: {reason}")]
    OutOfMemory {
        /// The size that was asked for, in bytes.
        requested: usize,
        /// Why: which resource and what limit.
        reason: String,
    },
    /// An allocation failed for a reason other than exhausted memory, such as
    /// an alignment the resource cannot provide.
    #[error("bad_alloc: {0}")]
    BadAlloc(String),
    /// A precondition of the call was violated (bad configuration, unsupported
    /// feature, wrong device).
    #[error("logic error: {0}")]
    Logic(String),
    /// A stream capture (CUDA graph capture) failed or a call is illegal
    /// while `stream` captures: the capture was invalidated, the stream
    /// cannot be captured, or a graph was misused. `stream` is the raw
    /// handle of the stream concerned.
    #[error("stream capture on stream {stream:#x}: {reason}")]
    Capture {
        /// The raw `CUstream` handle.
        stream: usize,
        /// What went wrong.
        reason: String,
    },
    /// An index or range is outside a container.
    #[error("out of range: {0}")]
    OutOfRange(String),
    /// An argument has a value the call cannot take.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// Reading or writing a file or stream failed (a log file, a memory-event
    /// log). The `std::io::Error` is kept as its kind and message, so that
    /// `Error` stays `Clone` and `Eq`.
    #[error("I/O error: {context}: {message}")]
    Io {
        /// What was being done, e.g. `cannot create log file /tmp/x.csv`.
        context: String,
        /// The kind of the I/O error.
        kind: std::io::ErrorKind,
        /// The I/O error's message.
        message: String,
    },
}

/// `Result` with [`Error`] as its error type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// `CUDA_ERROR_OUT_OF_MEMORY`, the driver's only out-of-memory code.
const CUDA_ERROR_OUT_OF_MEMORY: u32 = 2;

impl Error {
    /// Maps a non-success CUDA driver status to an error.
    ///
    /// This is the single place where the driver's out-of-memory code is
    /// recognised: it becomes [`Error::OutOfMemory`] with `requested` bytes;
    /// every other code becomes [`Error::Cuda`].
    ///
    /// ```
    /// use rmm::Error;
    /// let e = Error::from_cuda(2, "CUDA_ERROR_OUT_OF_MEMORY", "cuMemAlloc", 1 << 40);
    /// assert!(matches!(e, Error::OutOfMemory { requested, .. } if requested == 1 << 40));
    /// assert!(e.to_string().contains("out_of_memory"));
    /// let e = Error::from_cuda(1, "CUDA_ERROR_INVALID_VALUE", "cuMemAlloc", 0);
    /// assert!(matches!(e, Error::Cuda { code: 1, .. }));
    /// ```
    pub fn from_cuda(code: u32, name: &'static str, call: &'static str, requested: usize) -> Self {
        if code == CUDA_ERROR_OUT_OF_MEMORY {
            Error::OutOfMemory {
                requested,
                reason: format!("{call} returned {name}"),
            }
        } else {
            Error::Cuda { code, name, call }
        }
    }

    /// An [`Error::Io`] for `error`, which happened while doing `context`.
    ///
    /// ```
    /// use rmm::Error;
    /// let io = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
    /// let e = Error::io("cannot open log.csv", &io);
    /// assert!(matches!(&e, Error::Io { kind: std::io::ErrorKind::NotFound, .. }));
    /// assert_eq!(e.to_string(), "I/O error: cannot open log.csv: no such file");
    /// ```
    pub fn io(context: impl Into<String>, error: &std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            kind: error.kind(),
            message: error.to_string(),
        }
    }

    /// True for [`Error::OutOfMemory`]: the error a caller can answer by
    /// freeing or spilling memory and trying again.
    pub fn is_out_of_memory(&self) -> bool {
        matches!(self, Error::OutOfMemory { .. })
    }

    /// True for errors that mean the allocation failed (out of memory or
    /// [`Error::BadAlloc`]), as RMM's `rmm::bad_alloc` hierarchy does.
    pub fn is_bad_alloc(&self) -> bool {
        matches!(self, Error::OutOfMemory { .. } | Error::BadAlloc(_))
    }
}
