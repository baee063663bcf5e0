//! Compiles `kernels/` to PTX with rustc's own NVPTX backend and puts the
//! result at `$OUT_DIR/rmm_kernels.ptx`, which `src/kernels.rs` embeds.
//!
//! The kernels crate is built by a nested `cargo build` for
//! `nvptx64-nvidia-cuda` with `-Zbuild-std=core` (the target has no
//! downloadable standard library) on the stable toolchain with
//! `RUSTC_BOOTSTRAP=1`. See DESIGN.md / README.md for why.

use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

const TARGET: &str = "nvptx64-nvidia-cuda";

/// rustc's LLVM pipeline for the kernels, with address-space inference run
/// once the kernels' helpers are inlined and before the standard `O3`
/// pipeline. `shared_bytes!` takes a shared array's address from inline
/// assembly (`cvta.shared`) and assumes it is shared (`isspacep.shared`);
/// inferred early, every access through it becomes `ld.shared`/`st.shared`
/// (the `O3` pipeline drops the assumption before its own inference runs, and
/// accesses stay generic). Measured with ptxas 12.9 for sm_90: the 32-bit
/// onesweep spills 112 bytes instead of 220 (2026-12-01, 6a5b5ae).
const SHARED_MEMORY_PIPELINE: &str =
    "-C no-prepopulate-passes -C passes=always-inline,function(sroa,early-cse,infer-address-spaces),default<O3>";

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR"));
    let kernels = manifest_dir.join("kernels");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=kernels/src");
    println!("cargo:rerun-if-changed=kernels/Cargo.toml");
    println!("cargo:rerun-if-changed=kernel-abi/src");
    println!("cargo:rerun-if-changed=kernel-abi/Cargo.toml");
    println!("cargo:rerun-if-env-changed=RMM_PTX_ARCH");

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    check_components(&rustc);

    let arch = env::var("RMM_PTX_ARCH").unwrap_or_else(|_| "sm_80".into());
    // One shared folder for the nested build, so that check, clippy, test and
    // release builds compile `core` for nvptx only once.
    let target_dir = env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| manifest_dir.join("target"))
        .join("kernels-ptx");

    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.current_dir(&kernels)
        .args(["build", "--release", "--target", TARGET, "-Zbuild-std=core"])
        .arg("--target-dir")
        .arg(&target_dir)
        .env("RUSTC_BOOTSTRAP", "1")
        .env(
            "RUSTFLAGS",
            format!("-C target-cpu={arch} {SHARED_MEMORY_PIPELINE}"),
        );
    // The outer build's settings must not leak into the nvptx build.
    for var in [
        "CARGO_ENCODED_RUSTFLAGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CARGO_BUILD_RUSTC_WRAPPER",
        "CARGO_PRIMARY_PACKAGE",
        "RUSTDOCFLAGS",
    ] {
        cmd.env_remove(var);
    }
    for (key, _) in env::vars() {
        if key.starts_with("CARGO_PROFILE_") || key.starts_with("CARGO_CFG_") {
            cmd.env_remove(key);
        }
    }
    let status = cmd
        .status()
        .unwrap_or_else(|e| panic!("could not run cargo for the kernels: {e}"));
    if !status.success() {
        panic!("building kernels/ for {TARGET} failed ({status}); see the compiler output above");
    }
    let ptx = target_dir.join(TARGET).join("release").join("rmm_kernels.ptx");
    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR")).join("rmm_kernels.ptx");
    let text = std::fs::read_to_string(&ptx)
        .unwrap_or_else(|e| panic!("kernels built but {} is missing: {e}", ptx.display()));
    std::fs::write(&out, with_launch_bounds(&text))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}

/// `ptx` with launch bounds written after the parameter list of every entry
/// that `kernel_abi::launch_bounds` names: `.maxntid` and `.minnctapersm`.
fn with_launch_bounds(ptx: &str) -> String {
    let mut out = String::with_capacity(ptx.len() + 4096);
    let mut pending: Option<(u32, u32)> = None;
    let mut bounded = 0;
    for line in ptx.lines() {
        out.push_str(line);
        out.push('\n');
        if let Some(rest) = line.strip_prefix(".visible .entry ") {
            let name = rest.split('(').next().unwrap_or("").trim();
            pending = kernel_abi::launch_bounds(name);
        } else if let (Some((threads, blocks)), true) = (pending, line.starts_with(')')) {
            out.push_str(&format!(".maxntid {threads}, 1, 1\n.minnctapersm {blocks}\n"));
            pending = None;
            bounded += 1;
        }
    }
    let want = kernel_abi::ALL
        .iter()
        .filter(|n| kernel_abi::launch_bounds(n).is_some())
        .count();
    assert_eq!(
        bounded, want,
        "expected launch bounds on {want} entries of the PTX"
    );
    out
}

/// Fails with the name of a missing rustup component and how to install it.
fn check_components(rustc: &str) {
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .unwrap_or_else(|| panic!("`{rustc} --print sysroot` failed"));
    let host = env::var("HOST").expect("HOST");
    let bin = sysroot.join("lib/rustlib").join(&host).join("bin");
    let needs: [(&str, PathBuf); 3] = [
        ("rust-src", sysroot.join("lib/rustlib/src/rust/library/core")),
        ("llvm-tools", bin.join("llvm-link")),
        (
            "llvm-bitcode-linker",
            bin.join("self-contained/llvm-bitcode-linker"),
        ),
    ];
    let missing: Vec<&str> = needs
        .iter()
        .filter(|(_, p)| !exists(p))
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        panic!(
            "the Rust GPU kernels need the rustup component(s) {}: install with\n    rustup component add {}\n",
            missing.join(", "),
            missing.join(" ")
        );
    }
}

fn exists(p: &Path) -> bool {
    p.exists()
}
