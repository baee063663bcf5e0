//! How resources learn that a stream captures: ask the driver, or trust
//! rmm's registry of captures.
#![forbid(unsafe_code)]

use std::sync::atomic::{AtomicU8, Ordering};

/// How memory resources find out whether the stream of an allocation is
/// capturing (process-wide; [`set_capture_detection`]).
///
/// | Detection | Allocation on a stream nobody registered | Cost when nothing captures |
/// |---|---|---|
/// | [`Driver`](Self::Driver) (default) | the driver is asked; a capture begun outside rmm (CuPy, PyTorch, cudarc) is found and adopted | one `cuStreamIsCapturing` (18 to 28 ns on the H200's host) per allocation on a non-default stream |
/// | [`Registered`](Self::Registered) | treated as not capturing | one atomic load |
///
/// With `Registered`, only captures begun through [`begin_capture`](super::begin_capture)
/// (and captures adopted earlier) are seen: use it when every capture of
/// the process goes through rmm. Frees always consult the registry only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CaptureDetection {
    /// Ask the driver for every stream but the legacy default stream.
    #[default]
    Driver,
    /// Trust rmm's registry; captures begun elsewhere go unseen.
    Registered,
}

static DETECTION: AtomicU8 = AtomicU8::new(0);

/// Sets how resources detect captures, for the whole process. Change it
/// while no capture runs: a capture begun outside rmm under
/// [`CaptureDetection::Registered`] is not seen.
///
/// ```
/// use rmm::graph::{capture_detection, set_capture_detection, CaptureDetection};
/// let before = capture_detection();
/// set_capture_detection(CaptureDetection::Registered);
/// assert_eq!(capture_detection(), CaptureDetection::Registered);
/// set_capture_detection(before);
/// ```
pub fn set_capture_detection(d: CaptureDetection) {
    let v = match d {
        CaptureDetection::Driver => 0,
        CaptureDetection::Registered => 1,
    };
    DETECTION.store(v, Ordering::Relaxed);
}

/// How resources detect captures now ([`CaptureDetection::Driver`] unless
/// [`set_capture_detection`] changed it).
#[inline]
pub fn capture_detection() -> CaptureDetection {
    match DETECTION.load(Ordering::Relaxed) {
        1 => CaptureDetection::Registered,
        _ => CaptureDetection::Driver,
    }
}
