//! cudarc's driver errors as rmm's [`Error`], so that `?` works on cudarc
//! calls in functions that return [`crate::Result`].

use std::ffi::CStr;

use cudarc::driver::DriverError;

use crate::error::Error;

impl From<DriverError> for Error {
    /// [`Error::Cuda`] with the driver's code and name and the call
    /// `"a cudarc call"` (cudarc's error does not say which); the driver's
    /// out-of-memory becomes [`Error::OutOfMemory`], as from rmm's own calls.
    fn from(e: DriverError) -> Self {
        Error::from_cuda(e.0 as u32, error_name(&e), "a cudarc call", 0)
    }
}

/// The driver's name for `e`'s code (`CUDA_ERROR_...`).
fn error_name(e: &DriverError) -> &'static str {
    // cudarc's loader panics without the driver library; rmm's check does not.
    if crate::driver::init().is_err() {
        return "CUDA_ERROR_UNKNOWN";
    }
    match e.error_name() {
        // SAFETY: cuGetErrorName hands out pointers to the driver's static,
        // NUL-terminated strings (the same contract rmm's driver module
        // relies on); cudarc only ties them to `e` by its signature.
        Ok(name) => unsafe { CStr::from_ptr::<'static>(name.as_ptr()) }
            .to_str()
            .unwrap_or("CUDA_ERROR_UNKNOWN"),
        Err(_) => "CUDA_ERROR_UNKNOWN",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::sys::CUresult;

    #[test]
    fn driver_errors_keep_their_code_and_out_of_memory_its_variant() {
        // Without a driver the names are unknown; the codes and variants are not.
        let e = Error::from(DriverError(CUresult::CUDA_ERROR_INVALID_VALUE));
        assert!(
            matches!(
                e,
                Error::Cuda {
                    code: 1,
                    call: "a cudarc call",
                    ..
                }
            ),
            "{e:?}"
        );
        let oom = Error::from(DriverError(CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        assert!(matches!(oom, Error::OutOfMemory { .. }), "{oom:?}");
    }
}
