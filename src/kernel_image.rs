//! Which image of the kernels a device loads: machine code (a cubin) built
//! for its architecture, or the PTX, which the driver compiles at load time.
//!
//! `build.rs` assembles the PTX with NVIDIA's `ptxas` into cubins for sm_80
//! and sm_90 when ptxas is at hand ([`CUBINS`]; `scripts/fetch-ptxas.sh`
//! fetches it). A cubin for sm_X0 runs on every device of compute capability
//! X.y with y ≥ 0, so the sm_80 cubin serves 8.0 to 8.9 and the sm_90 cubin
//! 9.0; any other device (10.0, 12.0, ...) loads the PTX. Loading a cubin
//! takes milliseconds; compiling the PTX took 2.1 to 2.4 s on an H200
//! (driver 580) for the whole module.
//!
//! `RMM_KERNEL_IMAGE` picks the image at run time ([`ImagePolicy`]):
//! `auto` (the default: the cubin of the device's architecture, else the
//! PTX), `sass` (a cubin or an error) or `ptx` (always the PTX, as a build
//! without ptxas does).
//!
//! ```
//! use rmm_suite::kernel_image::{select, Cubin, Image, ImagePolicy};
//! static SM80: [u8; 4] = *b"\x7fELF";
//! let built = [Cubin { sm: 80, image: &SM80 }];
//! // An 8.6 device runs the sm_80 cubin; a 9.0 device without one compiles the PTX.
//! assert_eq!(select((8, 6), &built, ImagePolicy::Auto)?, Image::Sass { sm: 80, image: &SM80 });
//! assert_eq!(select((9, 0), &built, ImagePolicy::Auto)?, Image::Ptx);
//! assert!(select((9, 0), &built, ImagePolicy::Sass).is_err());
//! # Ok::<(), rmm::Error>(())
//! ```
#![forbid(unsafe_code)]

use rmm::{Error, Result};

/// Machine code of the kernels for one architecture.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cubin {
    /// The architecture as `10 * major + minor` of its compute capability
    /// (80 for sm_80).
    pub sm: u32,
    /// The cubin (an ELF file for the GPU), as ptxas wrote it.
    pub image: &'static [u8],
}

include!(concat!(env!("OUT_DIR"), "/kernel_images.rs"));

/// `RMM_KERNEL_IMAGE`: which image of the kernels to load.
pub const IMAGE_VAR: &str = "RMM_KERNEL_IMAGE";

/// Which image of the kernels a device loads (`RMM_KERNEL_IMAGE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ImagePolicy {
    /// The cubin of the device's architecture when the build made one
    /// (falling back to the PTX should the driver refuse it), else the PTX.
    #[default]
    Auto,
    /// The cubin of the device's architecture, or an error.
    Sass,
    /// Always the PTX (compiled by the driver at load time).
    Ptx,
}

impl ImagePolicy {
    /// The policy that `value` of `RMM_KERNEL_IMAGE` names (unset, empty or
    /// `auto`: [`Auto`](Self::Auto); `sass`; `ptx`; any case).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for any other value.
    pub fn parse(value: Option<&str>) -> Result<ImagePolicy> {
        match value.map(|v| v.trim().to_ascii_lowercase()).as_deref() {
            None | Some("") | Some("auto") => Ok(ImagePolicy::Auto),
            Some("sass") => Ok(ImagePolicy::Sass),
            Some("ptx") => Ok(ImagePolicy::Ptx),
            Some(other) => Err(Error::InvalidArgument(format!(
                "{IMAGE_VAR}={other:?}: expected auto, sass or ptx"
            ))),
        }
    }

    /// The policy of this process's `RMM_KERNEL_IMAGE`, read at each call.
    ///
    /// # Errors
    /// As [`parse`](Self::parse); also for a value that is not Unicode.
    pub fn from_env() -> Result<ImagePolicy> {
        match std::env::var(IMAGE_VAR) {
            Ok(v) => ImagePolicy::parse(Some(&v)),
            Err(std::env::VarError::NotPresent) => Ok(ImagePolicy::Auto),
            Err(e) => Err(Error::InvalidArgument(format!("{IMAGE_VAR}: {e}"))),
        }
    }
}

/// The image chosen for a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    /// Machine code for sm_`sm`.
    Sass {
        /// The cubin's architecture (`10 * major + minor`).
        sm: u32,
        /// The cubin.
        image: &'static [u8],
    },
    /// The PTX.
    Ptx,
}

/// The image that a device of compute capability `(major, minor)` loads
/// under `policy`, from the cubins `built`: the cubin of the same major
/// version with the highest minor version not above the device's.
///
/// # Errors
/// [`Error::InvalidArgument`] under [`ImagePolicy::Sass`] when no cubin fits.
pub fn select(capability: (u32, u32), built: &[Cubin], policy: ImagePolicy) -> Result<Image> {
    let (major, minor) = capability;
    if policy == ImagePolicy::Ptx {
        return Ok(Image::Ptx);
    }
    let fits = built
        .iter()
        .filter(|c| c.sm / 10 == major && c.sm % 10 <= minor)
        .max_by_key(|c| c.sm);
    match (fits, policy) {
        (Some(c), _) => Ok(Image::Sass {
            sm: c.sm,
            image: c.image,
        }),
        (None, ImagePolicy::Sass) => {
            let have: Vec<String> = built.iter().map(|c| format!("sm_{}", c.sm)).collect();
            let why = if PTX_ONLY_REASON.is_empty() {
                String::new()
            } else {
                format!("; {PTX_ONLY_REASON}")
            };
            Err(Error::InvalidArgument(format!(
                "{IMAGE_VAR}=sass, but the build made no machine code for compute capability \
                 {major}.{minor} (cubins: {}{why})",
                if have.is_empty() {
                    "none".into()
                } else {
                    have.join(", ")
                }
            )))
        }
        (None, _) => Ok(Image::Ptx),
    }
}

/// The image a [`Kernels`](crate::kernels::Kernels) module was loaded from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoadedImage {
    /// The cubin for sm_`0`.
    Sass(u32),
    /// The PTX, compiled by the driver.
    Ptx,
    /// The PTX, after the driver refused the cubin for sm_`0` (under
    /// [`ImagePolicy::Auto`] only).
    PtxAfterSass(u32),
}

#[cfg(test)]
mod tests;
