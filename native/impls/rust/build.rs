//! Reads the versions of the crates this program measures from Cargo.lock (never typed twice) and rustc's version
//! string, and hands them to the program as compile-time environment variables.
use std::{env, fs, path::Path, process::Command};

/// The crates whose versions the program reports (as `PQ_VERSION_<NAME>`, `-` written `_`, upper case).
const CRATES: &[&str] = &[
    "aws-lc-rs", "aws-lc-sys", "libcrux-ml-kem", "libcrux-ml-dsa", "libcrux-platform", "ml-kem", "ml-dsa", "slh-dsa",
    "x25519-dalek", "ed25519-dalek", "curve25519-dalek", "p256", "getrandom", "sha2", "keccak",
];

fn main() {
    let dir = env::var("CARGO_MANIFEST_DIR").expect("CARGO_MANIFEST_DIR");
    let lock_path = Path::new(&dir).join("Cargo.lock");
    println!("cargo:rerun-if-changed=Cargo.lock");
    println!("cargo:rerun-if-changed=build.rs");
    let lock = fs::read_to_string(&lock_path).expect("Cargo.lock next to Cargo.toml (build with --locked)");
    let mut packages: Vec<(String, String)> = Vec::new();
    let (mut name, mut version) = (None::<String>, None::<String>);
    for line in lock.lines().chain(std::iter::once("[[package]]")) {
        let line = line.trim();
        if line == "[[package]]" {
            if let (Some(n), Some(v)) = (name.take(), version.take()) {
                packages.push((n, v));
            }
        } else if let Some(rest) = line.strip_prefix("name = ") {
            name = Some(rest.trim_matches('"').to_string());
        } else if let Some(rest) = line.strip_prefix("version = ") {
            version = Some(rest.trim_matches('"').to_string());
        }
    }
    for krate in CRATES {
        let found: Vec<&String> = packages.iter().filter(|(n, _)| n == krate).map(|(_, v)| v).collect();
        match found.as_slice() {
            [v] => println!("cargo:rustc-env=PQ_VERSION_{}={}", krate.replace('-', "_").to_uppercase(), v),
            [] => panic!("Cargo.lock has no package {krate}"),
            _ => panic!("Cargo.lock has more than one version of {krate}: {found:?}"),
        }
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc).arg("--version").output().expect("running rustc --version");
    let toolchain = String::from_utf8_lossy(&out.stdout).trim().to_string();
    println!("cargo:rustc-env=PQ_TOOLCHAIN={toolchain}");
}
