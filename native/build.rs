//! Links liboqs (built by oqs-sys) whole into liboqs.so and exports its OQS_* API.
use std::env;
use std::path::PathBuf;

fn main() {
    // oqs-sys declares `links = "oqs"`; its cmake build prints `root=`, which
    // reaches this crate as DEP_OQS_ROOT.
    let root = PathBuf::from(
        env::var("DEP_OQS_ROOT").expect("DEP_OQS_ROOT is not set: oqs-sys did not build liboqs"),
    );
    for lib in ["lib", "lib64"] {
        println!("cargo:rustc-link-search=native={}", root.join(lib).display());
    }
    // A plain -Wl,--whole-archive would pull the archive in twice (duplicate
    // symbols); the link modifier makes rustc place it once, whole.
    println!("cargo:rustc-link-lib=static:+whole-archive=oqs");

    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let script = manifest.join("liboqs.map");
    println!("cargo:rerun-if-changed={}", script.display());
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,--version-script={}", script.display());
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,liboqs.so");
}
