//! Compiles `src/throw.cpp`, the function that raises a C++ exception for
//! PyTorch's allocator hook (see `src/ffi.rs`), and records the commit the
//! extension is built from (`rmm_rs.__git_commit__`, as RMM's wheels carry
//! theirs).

use std::process::Command;

fn main() {
    git_commit();
    println!("cargo:rerun-if-changed=src/throw.cpp");
    cc::Build::new()
        .cpp(true)
        .file("src/throw.cpp")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-fvisibility=hidden")
        .compile("rmm_rs_throw");
}

/// `RMM_RS_GIT_COMMIT`: `git rev-parse HEAD` of the checkout, or empty where
/// the sources are not a git checkout (a source archive) or git is missing.
fn git_commit() {
    let commit = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_owned())
        .unwrap_or_default();
    println!("cargo:rustc-env=RMM_RS_GIT_COMMIT={commit}");
    // A new commit moves HEAD (or the branch it names); rebuild then.
    if let Ok(o) = Command::new("git").args(["rev-parse", "--git-dir"]).output() {
        if let Ok(dir) = String::from_utf8(o.stdout) {
            let dir = dir.trim();
            println!("cargo:rerun-if-changed={dir}/HEAD");
            println!("cargo:rerun-if-changed={dir}/refs/heads");
        }
    }
}
