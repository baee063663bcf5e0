//! Which image the kernels module was loaded from on this GPU: the one
//! `RMM_KERNEL_IMAGE` and the built cubins select for its compute capability
//! (on an H200 the sm_90 cubin, or the PTX under `RMM_KERNEL_IMAGE=ptx`).

use rmm_suite::kernel_image::{select, Image, ImagePolicy, LoadedImage, CUBINS};
use rmm_suite::kernels::Kernels;

#[test]
fn the_module_is_loaded_from_the_selected_image() {
    rmm_testing::require_gpu!();
    let device = rmm::device::current_device().unwrap();
    let (major, minor) = rmm::launch::compute_capability(device).unwrap();
    assert!(major >= 1 && minor >= 0, "compute capability {major}.{minor}");
    let policy = ImagePolicy::from_env().unwrap();
    let want = match select((major as u32, minor as u32), CUBINS, policy).unwrap() {
        Image::Sass { sm, .. } => LoadedImage::Sass(sm),
        Image::Ptx => LoadedImage::Ptx,
    };
    let loaded = Kernels::current().unwrap().image;
    eprintln!("compute capability {major}.{minor}, {policy:?}: loaded {loaded:?}");
    assert_eq!(loaded, want);
}
