//! pqlab's implementation program for OpenSSL (EVP API), speaking native/PROTOCOL.md (version 2):
//!
//!   pqlab-impl-openssl list          (the 3.6 build in 3.6/: pqlab-impl-openssl36, same arguments)
//!   pqlab-impl-openssl time --impl openssl --alg NAME --ops a,b --budget S --min-samples N --max-samples N
//!                           --warmup N --sample-ns NS --message-bytes N
//!   pqlab-impl-openssl serve
//!
//! OpenSSL is built statically from the pinned openssl-src crate by build.rs.  All EVP calls and the
//! timed batch loops are C (src/evp.c): this side calls `pq_bench_batch` once per batch, which reads
//! CLOCK_MONOTONIC around `loops` calls, so no Rust or FFI runs inside the timed region.  The
//! per-call EVP sequence (fresh EVP_PKEY_CTX / EVP_MD_CTX per operation) is described in evp.c.

use std::collections::HashMap;
use std::ffi::CStr;
use std::io::{BufRead, Write};
use std::os::raw::{c_char, c_int, c_long, c_void};
use std::process;
use std::time::Instant;

use serde_json::{json, Map, Value};

const IMPL: &str = env!("PQ_IMPL");
/// Its name in pqlab.runners.program.REGISTRY, set by build.rs from the OpenSSL it links ("openssl", "openssl-3.6").
const PROGRAM: &str = env!("PQ_PROGRAM");
const PROTOCOL: u32 = 2;
/// What it answers besides `list` (program.toml's `commands`).
const COMMANDS: [&str; 2] = ["time", "serve"];
const MAX_LOOPS: u64 = 1 << 20;
const MAX_MESSAGE: usize = 1 << 26;

const OP_KEYGEN: c_int = 0;
const OP_ENCAPS: c_int = 1;
const OP_DECAPS: c_int = 2;
const OP_SIGN: c_int = 3;
const OP_VERIFY: c_int = 4;
const SEEDED_KEYGEN: c_int = 1;
const SEEDED_ENCAPS: c_int = 2;
const SEEDED_SIGN: c_int = 4;
const BUF: usize = 1 << 16;

#[repr(C)]
struct Sizes {
    public_key: c_long,
    secret_key: c_long,
    ciphertext: c_long,
    shared_secret: c_long,
    signature: c_long,
    secret_key_format: *const c_char,
}

extern "C" {
    fn pq_last_error() -> *const c_char;
    fn pq_version() -> *const c_char;
    fn pq_version_text() -> *const c_char;
    fn pq_cflags() -> *const c_char;
    fn pq_cpu_settings() -> *const c_char;
    fn pq_alg_count() -> c_int;
    fn pq_alg_name(i: c_int) -> *const c_char;
    fn pq_alg_kind(i: c_int) -> c_int;
    fn pq_alg_probe(i: c_int) -> c_int;
    fn pq_seed_len(a: c_int, op: c_int) -> usize;
    fn pq_keygen(a: c_int, seed: *const u8, seedlen: usize) -> *mut c_void;
    fn pq_key_free(k: *mut c_void);
    fn pq_public_key(a: c_int, k: *mut c_void, out: *mut u8, cap: usize) -> c_long;
    fn pq_parse_public(a: c_int, pk: *const u8, len: usize) -> *mut c_void;
    fn pq_encaps(a: c_int, pubk: *mut c_void, m: *const u8, mlen: usize, ct: *mut u8, ctlen: *mut usize,
                 ss: *mut u8, sslen: *mut usize) -> c_int;
    fn pq_decaps(a: c_int, key: *mut c_void, ct: *const u8, ctlen: usize, ss: *mut u8, sslen: *mut usize) -> c_int;
    fn pq_ct_len_ok(a: c_int, len: usize) -> c_int;
    fn pq_sig_max(key: *mut c_void) -> usize;
    fn pq_sign(a: c_int, key: *mut c_void, msg: *const u8, mlen: usize, det: c_int, sig: *mut u8,
               siglen: *mut usize) -> c_int;
    fn pq_verify(a: c_int, pubk: *mut c_void, msg: *const u8, mlen: usize, sig: *const u8, siglen: usize) -> c_int;
    fn pq_clear_errors();
    fn pq_bench_new(a: c_int, msg: *const u8, msglen: usize) -> *mut c_void;
    fn pq_bench_free(b: *mut c_void);
    fn pq_bench_sizes(b: *const c_void, s: *mut Sizes);
    fn pq_bench_batch(b: *mut c_void, op: c_int, loops: u64, ns: *mut u64, errors: *mut u64) -> c_int;
    fn pq_bench_check(b: *mut c_void, op: c_int) -> c_int;
}

fn cstr(p: *const c_char) -> String {
    if p.is_null() {
        String::new()
    } else {
        unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
    }
}

fn last_error() -> String {
    let e = cstr(unsafe { pq_last_error() });
    if e.is_empty() { "OpenSSL reported no reason".into() } else { e.replace('\n', " ") }
}

fn emit(v: &Value) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{}", v);
    let _ = out.flush();
}

fn bad_input(msg: &str) -> ! {
    eprintln!("{}: {msg}", env!("CARGO_BIN_NAME"));
    emit(&json!({ "error": msg.replace('\n', " ") }));
    process::exit(2);
}

// ---------- algorithms ----------

struct Alg {
    idx: c_int,
    name: String,
    kem: bool,
    seeded: c_int,
}

fn algorithms() -> Vec<Alg> {
    (0..unsafe { pq_alg_count() })
        .filter_map(|i| {
            let seeded = unsafe { pq_alg_probe(i) };
            (seeded >= 0).then(|| Alg {
                idx: i,
                name: cstr(unsafe { pq_alg_name(i) }),
                kem: unsafe { pq_alg_kind(i) } == 0,
                seeded,
            })
        })
        .collect()
}

fn seeded_names(s: c_int) -> Vec<&'static str> {
    let mut v = Vec::new();
    if s & SEEDED_KEYGEN != 0 { v.push("keygen"); }
    if s & SEEDED_ENCAPS != 0 { v.push("encaps"); }
    if s & SEEDED_SIGN != 0 { v.push("sign"); }
    v
}

fn levenshtein(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for i in 1..=a.len() {
        let mut cur = vec![i; b.len() + 1];
        for j in 1..=b.len() {
            let cost = if a[i - 1] == b[j - 1] { 0 } else { 1 };
            cur[j] = (prev[j] + 1).min(cur[j - 1] + 1).min(prev[j - 1] + cost);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn close_matches(name: &str, candidates: &[String]) -> String {
    let lname = name.to_lowercase();
    let mut scored: Vec<(usize, &String)> = candidates
        .iter()
        .map(|c| {
            let lc = c.to_lowercase();
            let d = if !lname.is_empty() && (lc.contains(&lname) || lname.contains(&lc)) { 0 } else { levenshtein(name, c) };
            (d, c)
        })
        .filter(|(d, _)| *d <= 4)
        .collect();
    scored.sort();
    let names: Vec<&str> = scored.iter().take(6).map(|(_, c)| c.as_str()).collect();
    if names.is_empty() {
        format!("names: {}", candidates.join(", "))
    } else {
        format!("close matches: {}", names.join(", "))
    }
}

fn find_alg<'a>(algs: &'a [Alg], name: &str) -> Result<&'a Alg, String> {
    algs.iter().find(|a| a.name == name).ok_or_else(|| {
        let names: Vec<String> = algs.iter().map(|a| a.name.clone()).collect();
        format!("unknown algorithm {name:?} for implementation {IMPL}; use an exact name from `list` ({})",
                close_matches(name, &names))
    })
}

fn check_impl(i: &str) -> Result<(), String> {
    if i == IMPL {
        Ok(())
    } else {
        Err(format!("unknown implementation {i:?}; this program has only \"{IMPL}\""))
    }
}

// ---------- list ----------

fn cpu_options() -> String {
    let cpu = cstr(unsafe { pq_cpu_settings() });
    let mut parts = vec![if cpu.is_empty() { "CPU capabilities: not reported".to_string() } else { cpu.clone() }];
    // OPENSSL_ia32cap=0x<words 0,1>:0x<words 2,3>:...; word 2 is CPUID.(EAX=7,ECX=0).EBX.
    if let Some(rest) = cpu.strip_prefix("OPENSSL_ia32cap=") {
        let words: Vec<u64> = rest
            .split(|c: char| c == ':' || c == ' ')
            .take(2)
            .filter_map(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok())
            .collect();
        if words.len() == 2 {
            let (w0, w1) = (words[0], words[1]);
            let yn = |b: bool| if b { "yes" } else { "no" };
            parts.push(format!(
                "detected at run time: AES-NI {}, PCLMULQDQ {}, AVX {}, AVX2 {}, BMI2 {}, ADX {}, SHA-NI {}, AVX512F {}",
                yn(w0 >> (32 + 25) & 1 == 1),
                yn(w0 >> (32 + 1) & 1 == 1),
                yn(w0 >> (32 + 28) & 1 == 1),
                yn(w1 >> 5 & 1 == 1),
                yn(w1 >> 8 & 1 == 1),
                yn(w1 >> 19 & 1 == 1),
                yn(w1 >> 29 & 1 == 1),
                yn(w1 >> 16 & 1 == 1)
            ));
        }
    }
    parts.push("static libcrypto from openssl-src (no-shared no-module no-legacy; assembly on)".into());
    let cflags = cstr(unsafe { pq_cflags() });
    if let Some(o) = cflags.split_whitespace().filter(|f| f.starts_with("-O")).last() {
        parts.push(format!("OpenSSL compiled at {o} (the last -O flag below)"));
    }
    parts.push(cflags);
    parts.push("a fresh EVP_PKEY_CTX / EVP_MD_CTX per operation (no context reuse)".into());
    parts.join("; ")
}

fn src_version() -> &'static str {
    env!("PQ_OPENSSL_SRC_VERSION")
}

fn implementation_doc() -> Value {
    json!({
        "implementation": IMPL,
        "version": cstr(unsafe { pq_version() }),
        "package": format!("OpenSSL libcrypto (crate openssl-src {})", src_version()),
        // The crate's full version (as Cargo.lock pins it, which pqlab checks), then the OpenSSL release.
        "provenance": format!("https://crates.io/crates/openssl-src/{} ({})", src_version(), cstr(unsafe { pq_version_text() })),
        "options": cpu_options(),
    })
}

fn cmd_list() {
    let algs = algorithms();
    let list: Vec<Value> = algs
        .iter()
        .map(|a| json!({"implementation": IMPL, "algorithm": a.name, "kind": if a.kem {"kem"} else {"sig"},
                        "seeded": seeded_names(a.seeded)}))
        .collect();
    emit(&json!({
        "protocol": PROTOCOL, "program": PROGRAM, "language": "C", "toolchain": env!("PQ_TOOLCHAIN"),
        "commands": COMMANDS,
        "implementations": [implementation_doc()],
        "algorithms": list,
    }));
}

// ---------- time ----------

struct TimeArgs {
    imp: String,
    alg: String,
    ops: Vec<String>,
    budget: f64,
    min_samples: usize,
    max_samples: usize,
    warmup: u64,
    sample_ns: u64,
    message_bytes: usize,
}

fn parse_time_args(args: &[String]) -> Result<TimeArgs, String> {
    let mut m: HashMap<&str, String> = HashMap::new();
    let known = ["--impl", "--alg", "--ops", "--budget", "--min-samples", "--max-samples", "--warmup",
                 "--sample-ns", "--message-bytes"];
    let mut i = 0;
    while i < args.len() {
        let (k, v) = match args[i].split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k.to_string(), Some(v.to_string())),
            _ => (args[i].clone(), None),
        };
        let key = known.iter().find(|x| **x == k).ok_or_else(|| {
            format!("unknown argument {k:?} for time; it takes {}", known.join(" "))
        })?;
        let v = match v {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i).cloned().ok_or_else(|| format!("{k} needs a value"))?
            }
        };
        if m.insert(key, v).is_some() {
            return Err(format!("{k} given twice; give it once"));
        }
        i += 1;
    }
    let get = |k: &str| m.get(k).cloned().ok_or_else(|| format!("time needs {k}; give all of {}", known.join(" ")));
    fn num<T: std::str::FromStr>(k: &str, v: String) -> Result<T, String> {
        v.parse::<T>().map_err(|_| format!("{k} {v:?} is not a valid number; give a non-negative number"))
    }
    let t = TimeArgs {
        imp: get("--impl")?,
        alg: get("--alg")?,
        ops: get("--ops")?.split(',').map(|s| s.trim().to_string()).collect(),
        budget: num("--budget", get("--budget")?)?,
        min_samples: num("--min-samples", get("--min-samples")?)?,
        max_samples: num("--max-samples", get("--max-samples")?)?,
        warmup: num("--warmup", get("--warmup")?)?,
        sample_ns: num("--sample-ns", get("--sample-ns")?)?,
        message_bytes: num("--message-bytes", get("--message-bytes")?)?,
    };
    if !(t.budget.is_finite() && t.budget >= 0.0) {
        return Err("--budget must be a finite number of seconds >= 0".into());
    }
    if t.min_samples < 1 {
        return Err("--min-samples must be at least 1".into());
    }
    if t.max_samples < t.min_samples {
        return Err(format!("--max-samples {} is below --min-samples {}; give max >= min", t.max_samples, t.min_samples));
    }
    if t.sample_ns < 1 {
        return Err("--sample-ns must be at least 1".into());
    }
    if t.message_bytes > MAX_MESSAGE {
        return Err(format!("--message-bytes {} is above the limit {MAX_MESSAGE}", t.message_bytes));
    }
    Ok(t)
}

fn op_code(op: &str) -> Option<c_int> {
    match op {
        "keygen" => Some(OP_KEYGEN),
        "encaps" => Some(OP_ENCAPS),
        "decaps" => Some(OP_DECAPS),
        "sign" => Some(OP_SIGN),
        "verify" => Some(OP_VERIFY),
        _ => None,
    }
}

/// One batch through C; returns (ns, errors).
fn batch(b: *mut c_void, op: c_int, loops: u64) -> (u64, u64) {
    let (mut ns, mut errs) = (0u64, 0u64);
    let r = unsafe { pq_bench_batch(b, op, loops, &mut ns, &mut errs) };
    assert_eq!(r, 0, "op not valid for this kind (checked before)");
    (ns, errs)
}

fn time_op(b: *mut c_void, op: c_int, t: &TimeArgs) -> Map<String, Value> {
    let mut errors: u64 = 0;
    let mut first_error = String::new();
    let mut check_failed = String::new();
    let note = |errs: u64, errors: &mut u64, first_error: &mut String| {
        if errs > 0 {
            *errors += errs;
            if first_error.is_empty() {
                *first_error = last_error();
            }
        }
    };
    let check = |check_failed: &mut String| {
        if unsafe { pq_bench_check(b, op) } != 1 && check_failed.is_empty() {
            *check_failed = last_error();
        }
        unsafe { pq_clear_errors() };
    };
    unsafe { pq_clear_errors() };
    // Calibration: double from 1 until one batch takes >= sample_ns (at most 2^20 calls).
    let mut loops: u64 = 1;
    let mut warm = 0u64;
    loop {
        let (ns, errs) = batch(b, op, loops);
        warm += 1;
        note(errs, &mut errors, &mut first_error);
        check(&mut check_failed);
        if ns >= t.sample_ns || loops >= MAX_LOOPS {
            break;
        }
        loops = (loops * 2).min(MAX_LOOPS);
    }
    for _ in 0..t.warmup {
        let (_, errs) = batch(b, op, loops);
        warm += 1;
        note(errs, &mut errors, &mut first_error);
        check(&mut check_failed);
    }
    let mut samples: Vec<f64> = Vec::new();
    let start = Instant::now();
    let mut stopped_by = "max-samples";
    while samples.len() < t.max_samples {
        if samples.len() >= t.min_samples && start.elapsed().as_secs_f64() >= t.budget {
            stopped_by = "budget";
            break;
        }
        let (ns, errs) = batch(b, op, loops);
        samples.push(ns as f64 / loops as f64);
        note(errs, &mut errors, &mut first_error);
        check(&mut check_failed);
    }
    let mut error = String::new();
    if errors > 0 {
        error = format!("{errors} call(s) returned an error: {first_error}");
    }
    if !check_failed.is_empty() {
        if !error.is_empty() {
            error.push_str("; ");
        }
        error.push_str(&check_failed);
    }
    let mut m = Map::new();
    m.insert("loops".into(), json!(loops));
    m.insert("warmup_batches".into(), json!(warm));
    m.insert("samples_ns".into(), json!(samples));
    m.insert("stopped_by".into(), json!(stopped_by));
    m.insert("verified".into(), json!(error.is_empty()));
    m.insert("error".into(), json!(error));
    m
}

fn cmd_time(args: &[String]) {
    let t = parse_time_args(args).unwrap_or_else(|e| bad_input(&e));
    check_impl(&t.imp).unwrap_or_else(|e| bad_input(&e));
    let algs = algorithms();
    let alg = find_alg(&algs, &t.alg).unwrap_or_else(|e| bad_input(&e));
    let valid: &[&str] = if alg.kem { &["keygen", "encaps", "decaps"] } else { &["keygen", "sign", "verify"] };
    let mut ops = Vec::new();
    for op in &t.ops {
        if !valid.contains(&op.as_str()) {
            bad_input(&format!("operation {op:?} is not one of {} for {} ({}); give --ops as a comma list of those",
                               valid.join(","), alg.name, if alg.kem { "kem" } else { "sig" }));
        }
        ops.push((op.clone(), op_code(op).unwrap()));
    }
    if ops.is_empty() {
        bad_input("--ops is empty; give a comma list such as keygen,encaps,decaps");
    }
    let msg: Vec<u8> = (0..t.message_bytes).map(|i| ((31 * i + 7) % 256) as u8).collect();
    let imp = implementation_doc();
    let mut doc = json!({
        "protocol": PROTOCOL, "program": PROGRAM, "implementation": IMPL, "version": imp["version"],
        "algorithm": alg.name, "kind": if alg.kem {"kem"} else {"sig"}, "clock": "clock_gettime(CLOCK_MONOTONIC), read in C around each batch",
    });
    let b = unsafe { pq_bench_new(alg.idx, msg.as_ptr(), msg.len()) };
    let mut all_ok = true;
    let mut results = Vec::new();
    if b.is_null() {
        // Setup (or the tamper check) failed: every operation fails, the document says why.
        let why = last_error();
        doc["sizes"] = json!({});
        for (op, _) in &ops {
            results.push(json!({"operation": op, "message_bytes": msg_bytes(alg, op, &t), "loops": 0,
                                "warmup_batches": 0, "samples_ns": [], "stopped_by": "", "verified": false,
                                "error": format!("setup: {why}")}));
        }
        all_ok = false;
    } else {
        let mut s = Sizes { public_key: 0, secret_key: 0, ciphertext: 0, shared_secret: 0, signature: 0,
                            secret_key_format: std::ptr::null() };
        unsafe { pq_bench_sizes(b, &mut s) };
        doc["sizes"] = if alg.kem {
            json!({"public_key": s.public_key, "secret_key": s.secret_key, "secret_key_format": cstr(s.secret_key_format),
                   "ciphertext": s.ciphertext, "shared_secret": s.shared_secret})
        } else {
            json!({"public_key": s.public_key, "secret_key": s.secret_key, "secret_key_format": cstr(s.secret_key_format),
                   "signature": s.signature})
        };
        for (op, code) in &ops {
            let m = time_op(b, *code, &t);
            all_ok &= m["verified"] == json!(true);
            let mut o = Map::new();
            o.insert("operation".into(), json!(op));
            o.insert("message_bytes".into(), msg_bytes(alg, op, &t));
            o.extend(m);
            results.push(Value::Object(o));
        }
        unsafe { pq_bench_free(b) };
    }
    doc["operations"] = json!(results);
    emit(&doc);
    process::exit(if all_ok { 0 } else { 1 });
}

fn msg_bytes(alg: &Alg, op: &str, t: &TimeArgs) -> Value {
    if !alg.kem && (op == "sign" || op == "verify") { json!(t.message_bytes) } else { Value::Null }
}

// ---------- serve ----------

struct Key {
    alg: c_int,
    ptr: *mut c_void,
}

struct Server {
    algs: Vec<Alg>,
    keys: HashMap<String, Key>,
    next: u64,
}

fn hex(b: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        s.push(H[(x >> 4) as usize] as char);
        s.push(H[(x & 15) as usize] as char);
    }
    s
}

fn unhex(s: &str, what: &str) -> Result<Vec<u8>, String> {
    if s.len() % 2 != 0 {
        return Err(format!("{what} is not hex (odd length)"));
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2).unwrap_or("zz"), 16).map_err(|_| format!("{what} is not hex")))
        .collect()
}

fn field<'a>(r: &'a Value, k: &str) -> Result<&'a str, String> {
    r.get(k).and_then(|v| v.as_str()).ok_or_else(|| format!("request needs string field {k:?}"))
}

/// A public key parsed by OpenSSL, freed on drop.
struct PubKey(*mut c_void);
impl Drop for PubKey {
    fn drop(&mut self) {
        unsafe { pq_key_free(self.0) }
    }
}

impl Server {
    fn handle(&mut self, line: &str) -> Result<Value, String> {
        let r: Value = serde_json::from_str(line).map_err(|e| format!("request is not JSON: {e}"))?;
        let op = field(&r, "op")?;
        check_impl(field(&r, "impl")?)?;
        let alg = find_alg(&self.algs, field(&r, "alg")?)?;
        let (a, kem, seeded) = (alg.idx, alg.kem, alg.seeded);
        let valid = if kem { ["keygen", "encaps", "decaps"] } else { ["keygen", "sign", "verify"] };
        if !valid.contains(&op) {
            return Err(format!("op {op:?} is not one of {} for {}", valid.join(", "), alg.name));
        }
        let seed = match r.get("seed") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(unhex(s, "seed")?),
            Some(_) => return Err("seed must be a hex string".into()),
        };
        let seeded_flag = match op { "keygen" => SEEDED_KEYGEN, "encaps" => SEEDED_ENCAPS, _ => 0 };
        if let Some(sd) = &seed {
            if seeded_flag == 0 || seeded & seeded_flag == 0 {
                return Err(format!("{} {op} does not take a seed here (seeded: {:?})", alg.name, seeded_names(seeded)));
            }
            let want = unsafe { pq_seed_len(a, op_code(op).unwrap()) };
            if sd.len() != want {
                return Err(format!("seed is {} bytes, {} {op} takes {want}", sd.len(), alg.name));
            }
        }
        unsafe { pq_clear_errors() };
        match op {
            "keygen" => {
                let (sp, sl) = seed.as_ref().map_or((std::ptr::null(), 0), |s| (s.as_ptr(), s.len()));
                let k = unsafe { pq_keygen(a, sp, sl) };
                if k.is_null() {
                    return Err(format!("keygen failed: {}", last_error()));
                }
                let mut pk = vec![0u8; BUF];
                let n = unsafe { pq_public_key(a, k, pk.as_mut_ptr(), pk.len()) };
                if n < 0 {
                    unsafe { pq_key_free(k) };
                    return Err(format!("public key export failed: {}", last_error()));
                }
                pk.truncate(n as usize);
                self.next += 1;
                let h = format!("k{}", self.next);
                self.keys.insert(h.clone(), Key { alg: a, ptr: k });
                Ok(json!({"ok": true, "handle": h, "public_key": hex(&pk)}))
            }
            "encaps" => {
                let pk = unhex(field(&r, "public_key")?, "public_key")?;
                let p = unsafe { pq_parse_public(a, pk.as_ptr(), pk.len()) };
                if p.is_null() {
                    return Err(format!("public key rejected: {}", last_error()));
                }
                let p = PubKey(p);
                let (mp, ml) = seed.as_ref().map_or((std::ptr::null(), 0), |s| (s.as_ptr(), s.len()));
                let (mut ct, mut ss) = (vec![0u8; BUF], vec![0u8; 64]);
                let (mut cl, mut sl) = (ct.len(), ss.len());
                if unsafe { pq_encaps(a, p.0, mp, ml, ct.as_mut_ptr(), &mut cl, ss.as_mut_ptr(), &mut sl) } != 1 {
                    return Err(format!("encaps failed: {}", last_error()));
                }
                ct.truncate(cl);
                ss.truncate(sl);
                Ok(json!({"ok": true, "ciphertext": hex(&ct), "shared_secret": hex(&ss)}))
            }
            "decaps" => {
                let k = self.key(field(&r, "handle")?, a)?;
                let ct = unhex(field(&r, "ciphertext")?, "ciphertext")?;
                if unsafe { pq_ct_len_ok(a, ct.len()) } != 1 {
                    return Err(format!("ciphertext is {} bytes, the wrong length for {}", ct.len(), alg.name));
                }
                let mut ss = vec![0u8; 64];
                let mut sl = ss.len();
                if unsafe { pq_decaps(a, k, ct.as_ptr(), ct.len(), ss.as_mut_ptr(), &mut sl) } != 1 {
                    return Err(format!("decaps failed: {}", last_error()));
                }
                ss.truncate(sl);
                Ok(json!({"ok": true, "shared_secret": hex(&ss)}))
            }
            "sign" => {
                let k = self.key(field(&r, "handle")?, a)?;
                let msg = unhex(field(&r, "message")?, "message")?;
                let det = match r.get("deterministic") {
                    None | Some(Value::Null) => false,
                    Some(Value::Bool(b)) => *b,
                    Some(_) => return Err("deterministic must be true or false".into()),
                };
                if det && seeded & SEEDED_SIGN == 0 {
                    return Err(format!("{} has no deterministic signing here (seeded: {:?})", alg.name, seeded_names(seeded)));
                }
                let mut sig = vec![0u8; unsafe { pq_sig_max(k) }];
                let mut sl = sig.len();
                if unsafe { pq_sign(a, k, msg.as_ptr(), msg.len(), det as c_int, sig.as_mut_ptr(), &mut sl) } != 1 {
                    return Err(format!("sign failed: {}", last_error()));
                }
                sig.truncate(sl);
                Ok(json!({"ok": true, "signature": hex(&sig)}))
            }
            "verify" => {
                let pk = unhex(field(&r, "public_key")?, "public_key")?;
                let msg = unhex(field(&r, "message")?, "message")?;
                let sig = unhex(field(&r, "signature")?, "signature")?;
                let p = unsafe { pq_parse_public(a, pk.as_ptr(), pk.len()) };
                if p.is_null() {
                    unsafe { pq_clear_errors() };
                    return Ok(json!({"ok": true, "valid": false}));
                }
                let p = PubKey(p);
                let v = unsafe { pq_verify(a, p.0, msg.as_ptr(), msg.len(), sig.as_ptr(), sig.len()) } == 1;
                unsafe { pq_clear_errors() };
                Ok(json!({"ok": true, "valid": v}))
            }
            _ => unreachable!(),
        }
    }

    fn key(&self, h: &str, a: c_int) -> Result<*mut c_void, String> {
        let k = self.keys.get(h).ok_or_else(|| format!("unknown handle {h:?}; use one a keygen answered"))?;
        if k.alg != a {
            return Err(format!("handle {h:?} is a key of another algorithm"));
        }
        Ok(k.ptr)
    }
}

fn cmd_serve() {
    let mut s = Server { algs: algorithms(), keys: HashMap::new(), next: 0 };
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(_) => break,
        };
        if line.trim().is_empty() {
            continue;
        }
        let ans = match s.handle(&line) {
            Ok(v) => v,
            Err(e) => json!({"ok": false, "error": e.replace('\n', " ")}),
        };
        emit(&ans);
    }
    for (_, k) in s.keys.drain() {
        unsafe { pq_key_free(k.ptr) };
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("list") if args.len() == 2 => cmd_list(),
        Some("list") => bad_input("list takes no arguments"),
        Some("time") => cmd_time(&args[2..]),
        Some("serve") if args.len() == 2 => cmd_serve(),
        Some("serve") => bad_input("serve takes no arguments"),
        Some(other) => bad_input(&format!("unknown subcommand {other:?}; use list, time or serve")),
        None => bad_input("no subcommand; use list, time or serve"),
    }
}
