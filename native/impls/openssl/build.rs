//! Builds OpenSSL from the pinned `openssl-src` crate (static libcrypto, no shared objects), then
//! compiles src/evp.c (the EVP calls and the timed batch loops) against it with the `cc` crate.
//! The same build script serves the 3.6 variant (3.6/Cargo.toml points here); it finds evp.c next
//! to its own package or one folder up.
//!
//! Build-time facts handed to the program (never typed twice): the openssl-src crate version, the
//! rustc and C compiler versions.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn first_line(cmd: &mut Command) -> String {
    match cmd.output() {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).lines().next().unwrap_or("").trim().to_string(),
        _ => String::from("unknown"),
    }
}

fn main() {
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let c_file = [manifest.join("src/evp.c"), manifest.join("../src/evp.c")]
        .into_iter()
        .find(|p| p.exists())
        .expect("evp.c not found in src/ or ../src/");
    println!("cargo:rerun-if-changed={}", c_file.display());
    println!("cargo:rerun-if-changed=build.rs");

    // OpenSSL itself is built once per OUT_DIR: an edit of evp.c reruns this script, which then reuses
    // the installed static libraries (the stamp names the openssl-src version that made them).
    let out = PathBuf::from(env::var("OUT_DIR").unwrap()).join("openssl-build");
    let install = out.join("install");
    let stamp = install.join("pqlab-openssl-src-version");
    let (include_dir, lib_dir) = if std::fs::read_to_string(&stamp).ok().as_deref() == Some(openssl_src::version()) {
        (install.join("include"), install.join("lib"))
    } else {
        // openssl-src hands OpenSSL's Configure `-O2` (from cc's opt_level(2)), which lands after
        // OpenSSL's own default `-O3` and so wins.  That costs ML-KEM ~1.7x (its C NTT needs -O3's
        // vectoriser); OpenSSL's default build, and the wheels of pyca/cryptography, use -O3.  cc puts
        // the environment's CFLAGS last, so a -O3 there restores OpenSSL's default.  Set only for the
        // OpenSSL build (evp.c is compiled below without it), any user CFLAGS kept in front.
        let target = env::var("TARGET").unwrap();
        let var = format!("CFLAGS_{target}"); // the name cc looks at first
        let user = [var.clone(), format!("CFLAGS_{}", target.replace('-', "_")), "TARGET_CFLAGS".into(), "CFLAGS".into()]
            .iter()
            .find_map(|k| env::var(k).ok());
        let saved = env::var(&var).ok();
        env::set_var(&var, format!("{} -O3", user.unwrap_or_default()).trim());
        let artifacts = openssl_src::Build::new().out_dir(&out).build();
        match saved {
            Some(v) => env::set_var(&var, v),
            None => env::remove_var(&var),
        }
        std::fs::write(&stamp, openssl_src::version()).unwrap();
        (artifacts.include_dir().to_path_buf(), artifacts.lib_dir().to_path_buf())
    };

    let mut build = cc::Build::new();
    build
        .file(&c_file)
        .include(&include_dir)
        .opt_level(2)
        .flag_if_supported("-std=c11")
        .warnings(true)
        .extra_warnings(true);
    let compiler = build.get_compiler();
    build.compile("pqevp");

    // Static libcrypto (x86_64 and aarch64 need no -latomic), then its system dependencies.
    println!("cargo:rustc-link-search=native={}", lib_dir.display());
    println!("cargo:rustc-link-lib=static=crypto");
    println!("cargo:rustc-link-lib=dylib=pthread");
    println!("cargo:rustc-link-lib=dylib=dl");

    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let rustc_v = first_line(Command::new(rustc).arg("--version"));
    let cc_v = first_line(Command::new(compiler.path()).arg("--version"));
    println!("cargo:rustc-env=PQ_OPENSSL_SRC_VERSION={}", openssl_src::version());
    // The implementation id: "openssl" for the newest release line (4.x), "openssl-3.6" for an older one, so that
    // two releases measured side by side are two implementations in pqlab's rows.
    let release = openssl_src::version().split('+').nth(1).unwrap_or("");
    let line: Vec<&str> = release.split('.').take(2).collect();
    let id = if line.first() == Some(&"4") { "openssl".to_string() } else { format!("openssl-{}", line.join(".")) };
    println!("cargo:rustc-env=PQ_IMPL={id}");
    // The program's name in pqlab.runners.program.REGISTRY: one source folder built twice (here and in 3.6/), so the
    // name is derived, like the implementation id, from the OpenSSL this build links: "openssl" or "openssl-3.6".
    println!("cargo:rustc-env=PQ_PROGRAM={id}");
    println!("cargo:rustc-env=PQ_TOOLCHAIN={}; {}", rustc_v, cc_v);
}
