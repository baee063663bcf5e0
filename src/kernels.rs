//! The embedded PTX and its per-device module (loaded from the device's
//! machine code where the build made it: [`crate::kernel_image`]).

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::sync::{Mutex, OnceLock};

use rmm::device::current_device;
use rmm::device::DeviceId;
use rmm::launch::{compute_capability, multiprocessor_count, Function, Module};
use rmm::{CudaStreamView, Result};

use crate::kernel_image::{select, Image, ImagePolicy, LoadedImage, CUBINS};

/// The PTX of `kernels/`, built by `build.rs`.
pub const PTX: &str = include_str!(concat!(env!("OUT_DIR"), "/rmm_kernels.ptx"));

/// The kernels module loaded on one device, with its functions by name.
#[derive(Debug)]
pub struct Kernels {
    module: Module,
    functions: Mutex<HashMap<&'static str, Function>>,
    /// Multiprocessors of the device, for grid sizing.
    pub multiprocessors: u32,
    /// The image the module was loaded from.
    pub image: LoadedImage,
}

impl Kernels {
    /// The module of the current device, loaded on first use (thread safe),
    /// with every kernel of [`kernel_abi::ALL`] looked up at once. It is
    /// the cubin of the device's architecture when the build made one, else
    /// the PTX; `RMM_KERNEL_IMAGE` overrides that ([`ImagePolicy`]).
    ///
    /// A first use during a stream capture is safe: [`Module::load`] and
    /// [`Module::function`] run in the driver's relaxed capture mode, so the
    /// load neither fails nor invalidates the capture. Calling it once
    /// before capturing keeps the load out of the capturing thread anyway.
    ///
    /// # Errors
    /// The driver's error when no GPU is usable or the image does not load;
    /// [`rmm::Error::InvalidArgument`] for a bad `RMM_KERNEL_IMAGE`, or
    /// with `RMM_KERNEL_IMAGE=sass` when no cubin fits the device.
    pub fn current() -> Result<&'static Kernels> {
        static LOADED: OnceLock<Mutex<HashMap<i32, &'static Kernels>>> = OnceLock::new();
        let device = current_device()?;
        let mut map = LOADED
            .get_or_init(|| Mutex::new(HashMap::new()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(k) = map.get(&device.value()) {
            return Ok(k);
        }
        let (module, image) = load(device)?;
        let multiprocessors = multiprocessor_count(device)?.max(1) as u32;
        // Every kernel is resolved now, so no later launch (one under stream
        // capture included) loads code: with the driver's lazy loading a
        // function is loaded when it is first looked up.
        let mut functions = HashMap::with_capacity(kernel_abi::ALL.len());
        for name in kernel_abi::ALL {
            functions.insert(name, lookup(&module, name)?);
        }
        // The module lives as long as the process, like the primary context.
        let k: &'static Kernels = Box::leak(Box::new(Kernels {
            module,
            functions: Mutex::new(functions),
            multiprocessors,
            image,
        }));
        map.insert(device.value(), k);
        Ok(k)
    }

    /// The kernel named `name` (an `extern "ptx-kernel"` function).
    ///
    /// # Errors
    /// The driver's error when no such kernel exists.
    pub fn function(&self, name: &'static str) -> Result<Function> {
        let mut f = self.functions.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&h) = f.get(name) {
            return Ok(h);
        }
        let h = lookup(&self.module, name)?;
        f.insert(name, h);
        Ok(h)
    }

    /// A grid for a grid-stride kernel over `n` items: enough blocks to fill
    /// the device a few times over, never more than needed.
    pub fn grid_for(&self, n: usize, block: u32) -> u32 {
        grid_for(n, block, self.multiprocessors)
    }

    /// Blocks of `block` threads of kernel `name` that fit on one
    /// multiprocessor at once (at least 1).
    ///
    /// # Errors
    /// The driver's error when the kernel does not exist.
    pub fn max_active_blocks(&self, name: &'static str, block: u32) -> Result<u32> {
        let f = self.function(name)?;
        Ok(f.max_active_blocks(block, 0)?.max(1) as u32)
    }

    /// Launches kernel `name`.
    ///
    /// # Safety
    /// `params` points to values of exactly the kernel's parameter types and
    /// the memory the kernel touches stays valid in `stream` order.
    pub unsafe fn launch(
        &self,
        name: &'static str,
        grid: u32,
        block: u32,
        shared_bytes: u32,
        stream: CudaStreamView,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let f = self.function(name)?;
        // SAFETY: forwarded contract.
        unsafe { f.launch((grid, 1, 1), (block, 1, 1), shared_bytes, stream, params) }
    }
}

/// [`Kernels::grid_for`] on a device of `multiprocessors` multiprocessors
/// (also what a dry run sizes by).
pub fn grid_for(n: usize, block: u32, multiprocessors: u32) -> u32 {
    let needed = n.div_ceil(block as usize).max(1);
    needed.min(multiprocessors as usize * 8) as u32
}

/// Loads the kernels' image for `device` (current) as `RMM_KERNEL_IMAGE`
/// and the built cubins decide: under [`ImagePolicy::Auto`] a cubin the
/// driver refuses falls back to the PTX.
fn load(device: DeviceId) -> Result<(Module, LoadedImage)> {
    let policy = ImagePolicy::from_env()?;
    let (major, minor) = compute_capability(device)?;
    match select((major as u32, minor as u32), CUBINS, policy)? {
        Image::Sass { sm, image } => match Module::load(&nul_terminated(image)) {
            Ok(module) => Ok((module, LoadedImage::Sass(sm))),
            Err(_) if policy == ImagePolicy::Auto => Ok((load_ptx()?, LoadedImage::PtxAfterSass(sm))),
            Err(e) => Err(e),
        },
        Image::Ptx => Ok((load_ptx()?, LoadedImage::Ptx)),
    }
}

/// Loads [`PTX`] (the driver compiles it for the device).
fn load_ptx() -> Result<Module> {
    Module::load(&nul_terminated(PTX.as_bytes()))
}

/// `image` with a NUL byte after it, as [`Module::load`] takes images (a
/// cubin's own header gives its size; the byte is never read).
fn nul_terminated(image: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(image.len() + 1);
    v.extend_from_slice(image);
    v.push(0);
    v
}

/// The function `name` of `module`.
fn lookup(module: &Module, name: &str) -> Result<Function> {
    let cname =
        CString::new(name).map_err(|_| rmm::Error::InvalidArgument(format!("kernel name {name:?}")))?;
    module.function(&cname)
}

/// Builds the parameter array of a kernel launch from local values.
#[macro_export]
macro_rules! kernel_params {
    ($($arg:ident),* $(,)?) => {
        [$((&mut $arg) as *mut _ as *mut ::std::ffi::c_void),*]
    };
}
