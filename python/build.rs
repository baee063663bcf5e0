//! Compiles `src/throw.cpp`, the function that raises a C++ exception for
//! PyTorch's allocator hook (see `src/ffi.rs`).

fn main() {
    println!("cargo:rerun-if-changed=src/throw.cpp");
    cc::Build::new()
        .cpp(true)
        .file("src/throw.cpp")
        .flag_if_supported("-std=c++17")
        .flag_if_supported("-fvisibility=hidden")
        .compile("rmm_rs_throw");
}
