//! Compiles `kernels/` to PTX with rustc's own NVPTX backend and puts the
//! result at `$OUT_DIR/rmm_kernels.ptx`, which `src/kernels.rs` embeds.
//! With NVIDIA's `ptxas` at hand (`$RMM_PTXAS`, or `target/tools/ptxas`,
//! which `scripts/fetch-ptxas.sh` places there) it also assembles that PTX
//! into machine code for sm_80 and sm_90 (`$OUT_DIR/rmm_kernels.sm_XX.cubin`,
//! with ptxas's `-v` report beside it) and lists the cubins in
//! `$OUT_DIR/kernel_images.rs`, which `src/kernel_image.rs` includes.
//! Without ptxas the crate embeds the PTX only, and the build says so.
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
    println!("cargo:rerun-if-env-changed={PTXAS_VAR}");

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
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR"));
    let out = out_dir.join("rmm_kernels.ptx");
    let text = std::fs::read_to_string(&ptx)
        .unwrap_or_else(|e| panic!("kernels built but {} is missing: {e}", ptx.display()));
    std::fs::write(&out, with_launch_bounds(&text))
        .unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
    machine_code(&manifest_dir, &out, &out_dir, &arch);
}

/// The environment variable naming a `ptxas` (empty or `none`: no machine code).
const PTXAS_VAR: &str = "RMM_PTXAS";

/// Architectures assembled into machine code when ptxas is at hand (each at
/// or above the PTX's own target). A cubin for sm_X0 runs on every device of
/// compute capability X.y; any other device compiles the PTX.
const SASS_ARCHS: [u32; 2] = [80, 90];

/// Assembles `ptx` for every architecture of [`SASS_ARCHS`] that `ptx_arch`
/// allows and writes `kernel_images.rs` listing the cubins made. Never fails
/// the build: without ptxas, or where it fails, the PTX alone is embedded
/// and a `cargo:warning` says why and how to get machine code.
fn machine_code(manifest_dir: &Path, ptx: &Path, out_dir: &Path, ptx_arch: &str) {
    let ptx_sm: u32 = ptx_arch.trim_start_matches("sm_").parse().unwrap_or(0);
    let archs: Vec<u32> = SASS_ARCHS.into_iter().filter(|&sm| sm >= ptx_sm).collect();
    for sm in SASS_ARCHS {
        // Files of an earlier run must not outlive it (ptxas-check reads them).
        let _ = std::fs::remove_file(cubin_path(out_dir, sm));
        let _ = std::fs::remove_file(out_dir.join(format!("rmm_kernels.sm_{sm}.ptxas.log")));
    }
    let (made, note) = match find_ptxas(manifest_dir) {
        Ok(ptxas) => assemble_all(&ptxas, ptx, &archs, out_dir),
        Err(why) => (Vec::new(), Some(why)),
    };
    if let Some(why) = &note {
        println!(
            "cargo:warning=rmm-suite: no machine code for {} ({why}); those kernels are embedded as PTX, which the driver compiles at a process's first kernel launch (about 2 s on an H200). For machine code run `bash scripts/fetch-ptxas.sh` (ptxas from PyPI) or set {PTXAS_VAR} to a ptxas, then build again.",
            archs.iter().filter(|sm| !made.contains(sm)).map(|sm| format!("sm_{sm}")).collect::<Vec<_>>().join(", ")
        );
    }
    let entries: String = made
        .iter()
        .map(|&sm| {
            format!(
                "    Cubin {{ sm: {sm}, image: include_bytes!({:?}) }},\n",
                cubin_path(out_dir, sm)
            )
        })
        .collect();
    let listing = format!(
        "// Written by build.rs: the kernels' machine code, one cubin per architecture.\n\
         /// The cubins built from [`PTX`](crate::kernels::PTX) (empty without ptxas); a\n\
         /// `static`, so that a binary holds one copy however many crates use it.\n\
         pub static CUBINS: &[Cubin] = &[\n{entries}];\n\
         /// Why an architecture of sm_80, sm_90 has no cubin (empty when each has one).\n\
         pub const PTX_ONLY_REASON: &str = {:?};\n",
        note.unwrap_or_default()
    );
    let path = out_dir.join("kernel_images.rs");
    std::fs::write(&path, listing).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

/// Runs [`assemble`] for every architecture of `archs` at once: the
/// architectures assembled, and what failed (if anything).
fn assemble_all(ptxas: &Path, ptx: &Path, archs: &[u32], out_dir: &Path) -> (Vec<u32>, Option<String>) {
    let results: Vec<(u32, Result<(), String>)> = std::thread::scope(|s| {
        let jobs: Vec<_> = archs
            .iter()
            .map(|&sm| (sm, s.spawn(move || assemble(ptxas, ptx, sm, out_dir))))
            .collect();
        jobs.into_iter()
            .map(|(sm, job)| (sm, job.join().unwrap_or_else(|_| Err("panicked".into()))))
            .collect()
    });
    let failed: Vec<String> = results
        .iter()
        .filter_map(|(sm, r)| r.as_ref().err().map(|e| format!("sm_{sm}: {e}")))
        .collect();
    let made = results
        .iter()
        .filter(|(_, r)| r.is_ok())
        .map(|(sm, _)| *sm)
        .collect();
    let note = (!failed.is_empty()).then(|| format!("{} failed: {}", ptxas.display(), failed.join("; ")));
    (made, note)
}

/// `$OUT_DIR/rmm_kernels.sm_<sm>.cubin`.
fn cubin_path(out_dir: &Path, sm: u32) -> PathBuf {
    out_dir.join(format!("rmm_kernels.sm_{sm}.cubin"))
}

/// The ptxas to use: `$RMM_PTXAS`, else `target/tools/ptxas` of the
/// checkout; `Err` says why there is none. The build is rerun when either
/// changes (the tools folder is watched, so a later fetch takes effect).
fn find_ptxas(manifest_dir: &Path) -> Result<PathBuf, String> {
    if let Some(path) = env::var_os(PTXAS_VAR) {
        let path = PathBuf::from(path);
        if path.as_os_str().is_empty() || path.as_os_str() == "none" {
            return Err(format!("{PTXAS_VAR} is {path:?}: machine code is off"));
        }
        if !path.is_file() {
            return Err(format!("{PTXAS_VAR}={} is not a file", path.display()));
        }
        return Ok(path);
    }
    let tools = manifest_dir.join("target").join("tools");
    if std::fs::create_dir_all(&tools).is_ok() {
        println!("cargo:rerun-if-changed={}", tools.display());
    }
    let ptxas = tools.join("ptxas");
    if ptxas.is_file() {
        Ok(ptxas)
    } else {
        Err(format!("no ptxas at {} and {PTXAS_VAR} unset", ptxas.display()))
    }
}

/// Runs `ptxas -v -arch=sm_<sm> ptx` into [`cubin_path`], with its report in
/// `rmm_kernels.sm_<sm>.ptxas.log` (the input of `scripts/ptxas_budget.py`).
fn assemble(ptxas: &Path, ptx: &Path, sm: u32, out_dir: &Path) -> Result<(), String> {
    let cubin = cubin_path(out_dir, sm);
    let run = Command::new(ptxas)
        .arg("-v")
        .arg(format!("-arch=sm_{sm}"))
        .arg(ptx)
        .arg("-o")
        .arg(&cubin)
        .output()
        .map_err(|e| format!("cannot run it: {e}"))?;
    let report = [run.stdout, run.stderr].concat();
    let log = out_dir.join(format!("rmm_kernels.sm_{sm}.ptxas.log"));
    std::fs::write(&log, &report).map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    if !run.status.success() || !cubin.is_file() {
        let _ = std::fs::remove_file(&cubin);
        let text = String::from_utf8_lossy(&report);
        let first: Vec<&str> = text
            .lines()
            .filter(|l| !l.contains("ptxas info"))
            .take(3)
            .collect();
        return Err(format!("{} ({})", run.status, first.join(" / ")));
    }
    Ok(())
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
