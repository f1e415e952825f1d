//! Build script: records the compiler's `rustc --version` (the toolchain `tls-runner list` reports) as
//! PQLAB_RUSTC_VERSION; empty when it cannot be asked (then `list` reports the OpenSSL version instead).

use std::process::Command;

fn main() {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let version = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).lines().next().unwrap_or("").trim().to_string())
        .unwrap_or_default();
    println!("cargo:rustc-env=PQLAB_RUSTC_VERSION={version}");
    println!("cargo:rerun-if-changed=src/build.rs");
}
