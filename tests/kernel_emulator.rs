//! Runs the kernels crate's own tests on the host emulator
//! (`kernels/src/emulator.rs`: one OS thread per GPU thread), which check the
//! radix sort, single-pass scan (look-back included, with blocks run one
//! after another and at once), reduction and sequence kernel bodies without a GPU.
//! Opt-in because it builds the kernels crate for the host and takes about two
//! minutes on two cores: `cargo test --test kernel_emulator -- --ignored`.

use std::path::PathBuf;
use std::process::Command;

#[test]
#[ignore = "slow (about two minutes): builds kernels/ for the host and runs its emulator tests"]
fn kernel_bodies_pass_on_the_host_emulator() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(root.join("kernels"))
        .args(["test", "--release", "--target-dir"])
        .arg(root.join("target").join("kernels-host"))
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .expect("run cargo for kernels/");
    assert!(status.success(), "kernels/ emulator tests failed: {status}");
}
