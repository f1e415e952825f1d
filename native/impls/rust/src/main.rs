//! pqlab's Rust implementations program: `list`, `time` and `serve` as native/PROTOCOL.md (version 2) says,
//! for aws-lc-rs, libcrux and RustCrypto.
//!
//! Each algorithm of each library is a type implementing [`Kem`] or [`Sig`] with the library's own typed calls; the
//! timing loop ([`measure`]) is generic over them, so each timed call is the library's call, monomorphised, with
//! `black_box` on its inputs and outputs.  [`Alg`] wraps either kind behind bytes for `serve`.

mod awslc;
mod libcrux;
mod rustcrypto;

use serde::Serialize;
use serde_json::{json, Value};
use std::any::Any;
use std::collections::HashMap;
use std::hint::black_box;
use std::io::{self, BufRead, Write};
use std::process::ExitCode;
use std::time::Instant;

pub const PROTOCOL: u32 = 2;
/// Its name in pqlab.runners.program.REGISTRY.
pub const PROGRAM: &str = "rust";
pub const LANGUAGE: &str = "Rust";
/// What it answers besides `list` (program.toml's `commands`).
pub const COMMANDS: [&str; 2] = ["time", "serve"];
pub const TOOLCHAIN: &str = env!("PQ_TOOLCHAIN");
pub const CLOCK: &str = "std::time::Instant (monotonic)";
/// At most this many calls in one batch (native/PROTOCOL.md: 2^20).
const MAX_LOOPS: u64 = 1 << 20;

/// A failed call of a timed operation (the library's error value is dropped: the timed loop only counts them).
pub type Res<T> = Result<T, ()>;

// --------------------------------------------------------------------------------------------- the two kinds

/// A key-encapsulation mechanism (ML-KEM, or Diffie-Hellman used as a KEM) of one library.
pub trait Kem: 'static {
    /// The secret key (key pair) that keygen makes and decaps uses.
    type Sk: 'static;
    /// A public key ready for encaps (parsed once).
    type Pk;
    /// What encaps returns as the ciphertext.
    type CtOut;
    /// A ciphertext ready for decaps (parsed once from bytes).
    type Ct;
    type Ss;
    fn alg(&self) -> &'static str;
    /// Which operations take caller-given randomness (native/PROTOCOL.md `seeded`).
    fn seeded(&self) -> &'static [&'static str] {
        &[]
    }
    /// Diffie-Hellman used as a KEM (no tamper check).
    fn is_dh(&self) -> bool {
        false
    }
    fn keygen(&self) -> Res<Self::Sk>;
    fn keygen_seeded(&self, _seed: &[u8]) -> Result<Self::Sk, String> {
        Err(unseeded("keygen"))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8>;
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String>;
    fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)>;
    fn encaps_seeded(&self, _pk: &Self::Pk, _m: &[u8]) -> Result<(Self::CtOut, Self::Ss), String> {
        Err(unseeded("encaps"))
    }
    fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss>;
    fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8];
    fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String>;
    fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8];
    /// The secret key's bytes as the API gives them, and their format (`seed`, `expanded`, an encoding's name).
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str);
}

/// A signature scheme of one library.
pub trait Sig: 'static {
    type Sk: 'static;
    /// A public key ready for verify (parsed once).
    type Pk;
    type Sig;
    fn alg(&self) -> &'static str;
    fn seeded(&self) -> &'static [&'static str] {
        &[]
    }
    fn keygen(&self) -> Res<Self::Sk>;
    fn keygen_seeded(&self, _seed: &[u8]) -> Result<Self::Sk, String> {
        Err(unseeded("keygen"))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8>;
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String>;
    /// The library's ordinary signing (hedged where the scheme has randomness).
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig>;
    /// Deterministic signing (ML-DSA rnd = 0, SLH-DSA opt_rand = PK.seed, Ed25519).
    fn sign_deterministic(&self, _sk: &Self::Sk, _msg: &[u8]) -> Result<Self::Sig, String> {
        Err(unseeded("sign"))
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8];
    /// Verify a signature given as bytes (decoding it is part of verifying); false for a bad or malformed one.
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool;
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str);
}

fn unseeded(op: &str) -> String {
    format!("this implementation's API takes no caller randomness for {op}")
}

// --------------------------------------------------------------------------------------------- implementations

/// What `list` says of one implementation.
#[derive(Serialize, Clone)]
pub struct ImplInfo {
    pub implementation: &'static str,
    pub version: String,
    pub package: String,
    pub provenance: String,
    pub options: String,
}

/// One algorithm of one implementation, behind bytes (for `serve`) and with its own timing.
pub trait Alg {
    fn name(&self) -> &'static str;
    fn kind(&self) -> &'static str;
    fn seeded(&self) -> &'static [&'static str];
    fn time(&self, p: &Params) -> (Value, Vec<OpDoc>);
    fn keygen(&self, seed: Option<&[u8]>) -> Result<(Box<dyn Any>, Vec<u8>), String>;
    fn encaps(&self, pk: &[u8], seed: Option<&[u8]>) -> Result<(Vec<u8>, Vec<u8>), String>;
    fn decaps(&self, sk: &dyn Any, ct: &[u8]) -> Result<Vec<u8>, String>;
    fn sign(&self, sk: &dyn Any, msg: &[u8], deterministic: bool) -> Result<Vec<u8>, String>;
    fn verify(&self, pk: &[u8], msg: &[u8], sig: &[u8]) -> Result<bool, String>;
}

pub struct Implementation {
    pub info: ImplInfo,
    pub algs: Vec<Box<dyn Alg>>,
}

fn implementations() -> Vec<Implementation> {
    vec![awslc::implementation(), libcrux::implementation(), rustcrypto::implementation()]
}

pub fn kem<K: Kem>(k: K) -> Box<dyn Alg> {
    Box::new(KemAlg(k))
}

pub fn sig<S: Sig>(s: S) -> Box<dyn Alg> {
    Box::new(SigAlg(s))
}

struct KemAlg<K>(K);
struct SigAlg<S>(S);

fn wrong_kind(kind: &str, op: &str) -> String {
    format!("{op} is not an operation of a {kind} algorithm")
}

fn check_len(what: &str, got: usize, want: usize) -> Result<(), String> {
    if got == want {
        Ok(())
    } else {
        Err(format!("{what} has {got} bytes, expected {want}"))
    }
}

/// `serve`'s keygen, alike for both kinds: the seeded call when there is a seed, else the ordinary one; the secret key
/// boxed for a handle, and the public key's bytes.
fn keygen_handle<Sk: 'static>(
    seed: Option<&[u8]>,
    keygen_seeded: impl FnOnce(&[u8]) -> Result<Sk, String>,
    keygen: impl FnOnce() -> Res<Sk>,
    public_bytes: impl FnOnce(&Sk) -> Vec<u8>,
) -> Result<(Box<dyn Any>, Vec<u8>), String> {
    let sk = match seed {
        Some(s) => keygen_seeded(s)?,
        None => keygen().map_err(|_| "keygen returned an error".to_string())?,
    };
    let pk = public_bytes(&sk);
    Ok((Box::new(sk), pk))
}

impl<K: Kem> Alg for KemAlg<K> {
    fn name(&self) -> &'static str {
        self.0.alg()
    }
    fn kind(&self) -> &'static str {
        "kem"
    }
    fn seeded(&self) -> &'static [&'static str] {
        self.0.seeded()
    }
    fn time(&self, p: &Params) -> (Value, Vec<OpDoc>) {
        time_kem(&self.0, p)
    }
    fn keygen(&self, seed: Option<&[u8]>) -> Result<(Box<dyn Any>, Vec<u8>), String> {
        keygen_handle(seed, |s| self.0.keygen_seeded(s), || self.0.keygen(), |sk| self.0.public_bytes(sk))
    }
    fn encaps(&self, pk: &[u8], seed: Option<&[u8]>) -> Result<(Vec<u8>, Vec<u8>), String> {
        let pk = self.0.pk_from_bytes(pk)?;
        let (ct, ss) = match seed {
            Some(m) => self.0.encaps_seeded(&pk, m)?,
            None => self.0.encaps(&pk).map_err(|_| "encaps returned an error".to_string())?,
        };
        Ok((self.0.ct_bytes(&ct).to_vec(), self.0.ss_bytes(&ss).to_vec()))
    }
    fn decaps(&self, sk: &dyn Any, ct: &[u8]) -> Result<Vec<u8>, String> {
        let sk = sk.downcast_ref::<K::Sk>().ok_or("that handle is a key of another algorithm")?;
        let ct = self.0.ct_from_bytes(ct)?;
        let ss = self.0.decaps(sk, &ct).map_err(|_| "decaps returned an error".to_string())?;
        Ok(self.0.ss_bytes(&ss).to_vec())
    }
    fn sign(&self, _: &dyn Any, _: &[u8], _: bool) -> Result<Vec<u8>, String> {
        Err(wrong_kind("kem", "sign"))
    }
    fn verify(&self, _: &[u8], _: &[u8], _: &[u8]) -> Result<bool, String> {
        Err(wrong_kind("kem", "verify"))
    }
}

impl<S: Sig> Alg for SigAlg<S> {
    fn name(&self) -> &'static str {
        self.0.alg()
    }
    fn kind(&self) -> &'static str {
        "sig"
    }
    fn seeded(&self) -> &'static [&'static str] {
        self.0.seeded()
    }
    fn time(&self, p: &Params) -> (Value, Vec<OpDoc>) {
        time_sig(&self.0, p)
    }
    fn keygen(&self, seed: Option<&[u8]>) -> Result<(Box<dyn Any>, Vec<u8>), String> {
        keygen_handle(seed, |s| self.0.keygen_seeded(s), || self.0.keygen(), |sk| self.0.public_bytes(sk))
    }
    fn encaps(&self, _: &[u8], _: Option<&[u8]>) -> Result<(Vec<u8>, Vec<u8>), String> {
        Err(wrong_kind("sig", "encaps"))
    }
    fn decaps(&self, _: &dyn Any, _: &[u8]) -> Result<Vec<u8>, String> {
        Err(wrong_kind("sig", "decaps"))
    }
    fn sign(&self, sk: &dyn Any, msg: &[u8], deterministic: bool) -> Result<Vec<u8>, String> {
        let sk = sk.downcast_ref::<S::Sk>().ok_or("that handle is a key of another algorithm")?;
        let sig = if deterministic {
            self.0.sign_deterministic(sk, msg)?
        } else {
            self.0.sign(sk, msg).map_err(|_| "sign returned an error".to_string())?
        };
        Ok(self.0.sig_bytes(&sig).to_vec())
    }
    fn verify(&self, pk: &[u8], msg: &[u8], sig: &[u8]) -> Result<bool, String> {
        // A malformed public key or signature is a false answer, not an error (native/PROTOCOL.md).
        match self.0.pk_from_bytes(pk) {
            Ok(pk) => Ok(self.0.verify(&pk, msg, sig)),
            Err(_) => Ok(false),
        }
    }
}

// --------------------------------------------------------------------------------------------- timing

/// The `time` subcommand's numbers.
pub struct Params {
    pub ops: Vec<String>,
    pub budget_s: f64,
    pub min_samples: usize,
    pub max_samples: usize,
    pub warmup: u64,
    pub sample_ns: u64,
    pub message_bytes: usize,
}

impl Params {
    fn message(&self) -> Vec<u8> {
        (0..self.message_bytes).map(|i| ((31 * i + 7) % 256) as u8).collect()
    }
}

/// One operation's part of the `time` document.
#[derive(Serialize)]
pub struct OpDoc {
    operation: String,
    message_bytes: Option<usize>,
    loops: u64,
    warmup_batches: u64,
    samples_ns: Vec<f64>,
    stopped_by: &'static str,
    verified: bool,
    error: String,
}

impl OpDoc {
    fn failed(op: &str, message_bytes: Option<usize>, error: String) -> OpDoc {
        OpDoc {
            operation: op.to_string(),
            message_bytes,
            loops: 0,
            warmup_batches: 0,
            samples_ns: Vec::new(),
            stopped_by: "failure",
            verified: false,
            error,
        }
    }
}

/// One batch: `loops` consecutive calls between two reads of the clock.  Returns the nanoseconds, the number of
/// error returns and the last output.
#[inline(always)]
fn batch<T>(loops: u64, call: &mut impl FnMut() -> Res<T>) -> (u128, u64, Option<T>) {
    let mut last: Option<T> = None;
    let mut errors = 0u64;
    let start = Instant::now();
    for _ in 0..loops {
        match black_box(call()) {
            Ok(v) => last = Some(v),
            Err(()) => errors += 1,
        }
    }
    let ns = start.elapsed().as_nanos();
    (ns, errors, last)
}

/// native/PROTOCOL.md's `time` steps 3-5 for one operation: calibrate `loops`, warm up, take samples; count every
/// call's error return and check the last output of every batch with `check`.
fn measure<T>(
    op: &str,
    message_bytes: Option<usize>,
    p: &Params,
    mut call: impl FnMut() -> Res<T>,
    mut check: impl FnMut(&T) -> Result<(), String>,
) -> OpDoc {
    let mut doc = OpDoc {
        operation: op.to_string(),
        message_bytes,
        loops: 1,
        warmup_batches: 0,
        samples_ns: Vec::new(),
        stopped_by: "budget",
        verified: true,
        error: String::new(),
    };
    // Returns an error text when the batch failed.
    let mut judge = |what: &str, loops: u64, errors: u64, last: Option<T>| -> Result<(), String> {
        if errors > 0 {
            return Err(format!("{op} returned an error in {errors} of {loops} calls ({what})"));
        }
        match last {
            Some(v) => check(&v).map_err(|e| format!("{what}: {e}")),
            None => Err(format!("{what}: no output")),
        }
    };
    // Calibration: double from 1 call until a batch lasts sample_ns (at most 2^20 calls).
    let mut loops = 1u64;
    loop {
        let (ns, errors, last) = batch(loops, &mut call);
        doc.warmup_batches += 1;
        if let Err(e) = judge("calibration", loops, errors, last) {
            doc.loops = loops;
            doc.verified = false;
            doc.stopped_by = "failure";
            doc.error = e;
            return doc;
        }
        if ns >= p.sample_ns as u128 || loops >= MAX_LOOPS {
            break;
        }
        loops *= 2;
    }
    doc.loops = loops;
    for _ in 0..p.warmup {
        let (_, errors, last) = batch(loops, &mut call);
        doc.warmup_batches += 1;
        if let Err(e) = judge("warm-up", loops, errors, last) {
            doc.verified = false;
            doc.stopped_by = "failure";
            doc.error = e;
            return doc;
        }
    }
    let start = Instant::now();
    loop {
        let n = doc.samples_ns.len();
        if n >= p.max_samples {
            doc.stopped_by = "max-samples";
            break;
        }
        if n >= p.min_samples && start.elapsed().as_secs_f64() >= p.budget_s {
            doc.stopped_by = "budget";
            break;
        }
        let (ns, errors, last) = batch(loops, &mut call);
        doc.samples_ns.push(ns as f64 / loops as f64);
        if let Err(e) = judge(&format!("sample {n}"), loops, errors, last) {
            doc.verified = false;
            doc.stopped_by = "failure";
            doc.error = e;
            break;
        }
    }
    doc
}

fn flip_first(bytes: &[u8]) -> Vec<u8> {
    let mut v = bytes.to_vec();
    if let Some(b) = v.first_mut() {
        *b ^= 0x01;
    }
    v
}

/// The setup of encaps and sign, alike for both kinds: a fresh key pair and its public key parsed from the bytes the
/// API gives.
fn setup_key_pair<Sk, Pk>(
    keygen: impl FnOnce() -> Res<Sk>,
    parse_public: impl FnOnce(&Sk) -> Result<Pk, String>,
) -> Result<(Sk, Pk), String> {
    let sk = keygen().map_err(|_| "setup: keygen returned an error".to_string())?;
    let pk = parse_public(&sk)?;
    Ok((sk, pk))
}

fn time_kem<K: Kem>(k: &K, p: &Params) -> (Value, Vec<OpDoc>) {
    // Sizes, from the bytes the API gives.
    let sizes = (|| -> Result<Value, String> {
        let sk = k.keygen().map_err(|_| "keygen returned an error")?;
        let pk = k.pk_from_bytes(&k.public_bytes(&sk))?;
        let (ct, ss) = k.encaps(&pk).map_err(|_| "encaps returned an error")?;
        let (skb, format) = k.sk_bytes(&sk);
        Ok(json!({"public_key": k.public_bytes(&sk).len(), "secret_key": skb.len(), "secret_key_format": format,
                  "ciphertext": k.ct_bytes(&ct).len(), "shared_secret": k.ss_bytes(&ss).len()}))
    })()
    .unwrap_or_else(|e| json!({"error": e}));

    // A key pair round-trips: encaps to its public key, decaps with its secret key, same secret.
    let round_trip = |sk: &K::Sk| -> Result<(), String> {
        let pk = k.pk_from_bytes(&k.public_bytes(sk))?;
        let (ct, ss) = k.encaps(&pk).map_err(|_| "encaps to the new key returned an error")?;
        let ct = k.ct_from_bytes(k.ct_bytes(&ct))?;
        let ss2 = k.decaps(sk, &ct).map_err(|_| "decaps with the new key returned an error")?;
        if k.ss_bytes(&ss) == k.ss_bytes(&ss2) {
            Ok(())
        } else {
            Err("the new key pair does not round-trip (encaps and decaps gave different secrets)".into())
        }
    };

    let mut docs = Vec::new();
    for op in &p.ops {
        let doc = match op.as_str() {
            "keygen" => measure("keygen", None, p, || k.keygen(), |sk| round_trip(sk)),
            "encaps" => match setup_key_pair(|| k.keygen(), |sk| k.pk_from_bytes(&k.public_bytes(sk))) {
                Err(e) => OpDoc::failed(op, None, e),
                Ok((sk, pk)) => measure(
                    "encaps",
                    None,
                    p,
                    || k.encaps(black_box(&pk)),
                    |(ct, ss)| {
                        let ct = k.ct_from_bytes(k.ct_bytes(ct))?;
                        let ss2 = k.decaps(&sk, &ct).map_err(|_| "decaps of the ciphertext returned an error")?;
                        if k.ss_bytes(ss) == k.ss_bytes(&ss2) {
                            Ok(())
                        } else {
                            Err("the ciphertext does not decapsulate to its shared secret".into())
                        }
                    },
                ),
            },
            "decaps" => {
                let setup = (|| -> Result<_, String> {
                    let sk = k.keygen().map_err(|_| "setup: keygen returned an error")?;
                    let pk = k.pk_from_bytes(&k.public_bytes(&sk))?;
                    let (ct_out, ss) = k.encaps(&pk).map_err(|_| "setup: encaps returned an error")?;
                    let ct_bytes = k.ct_bytes(&ct_out).to_vec();
                    let expected = k.ss_bytes(&ss).to_vec();
                    let ct = k.ct_from_bytes(&ct_bytes)?;
                    if !k.is_dh() {
                        // ML-KEM's implicit rejection: a tampered ciphertext gives another secret (or an error).
                        let bad = k.ct_from_bytes(&flip_first(&ct_bytes))?;
                        if let Ok(ss_bad) = k.decaps(&sk, &bad) {
                            if k.ss_bytes(&ss_bad) == expected.as_slice() {
                                return Err("decaps of the ciphertext with its first byte flipped gave the same \
                                            shared secret"
                                    .into());
                            }
                        }
                    }
                    Ok((sk, ct, expected))
                })();
                match setup {
                    Err(e) => OpDoc::failed(op, None, e),
                    Ok((sk, ct, expected)) => measure(
                        "decaps",
                        None,
                        p,
                        || k.decaps(black_box(&sk), black_box(&ct)),
                        |ss| {
                            if k.ss_bytes(ss) == expected.as_slice() {
                                Ok(())
                            } else {
                                Err("decaps gave another shared secret than encaps".into())
                            }
                        },
                    ),
                }
            }
            other => OpDoc::failed(other, None, wrong_kind("kem", other)),
        };
        docs.push(doc);
    }
    (sizes, docs)
}

fn time_sig<S: Sig>(s: &S, p: &Params) -> (Value, Vec<OpDoc>) {
    let msg = p.message();
    let mb = Some(p.message_bytes);
    let sizes = (|| -> Result<Value, String> {
        let sk = s.keygen().map_err(|_| "keygen returned an error")?;
        let sig = s.sign(&sk, &msg).map_err(|_| "sign returned an error")?;
        let (skb, format) = s.sk_bytes(&sk);
        Ok(json!({"public_key": s.public_bytes(&sk).len(), "secret_key": skb.len(), "secret_key_format": format,
                  "signature": s.sig_bytes(&sig).len()}))
    })()
    .unwrap_or_else(|e| json!({"error": e}));

    let round_trip = |sk: &S::Sk| -> Result<(), String> {
        let pk = s.pk_from_bytes(&s.public_bytes(sk))?;
        let sig = s.sign(sk, &msg).map_err(|_| "sign with the new key returned an error")?;
        if s.verify(&pk, &msg, s.sig_bytes(&sig)) {
            Ok(())
        } else {
            Err("the new key pair does not round-trip (its signature does not verify)".into())
        }
    };

    let mut docs = Vec::new();
    for op in &p.ops {
        let doc = match op.as_str() {
            "keygen" => measure("keygen", None, p, || s.keygen(), |sk| round_trip(sk)),
            "sign" => match setup_key_pair(|| s.keygen(), |sk| s.pk_from_bytes(&s.public_bytes(sk))) {
                Err(e) => OpDoc::failed(op, mb, e),
                Ok((sk, pk)) => measure(
                    "sign",
                    mb,
                    p,
                    || s.sign(black_box(&sk), black_box(&msg)),
                    |sig| {
                        if s.verify(&pk, &msg, s.sig_bytes(sig)) {
                            Ok(())
                        } else {
                            Err("the signature does not verify".into())
                        }
                    },
                ),
            },
            "verify" => {
                let setup = (|| -> Result<_, String> {
                    let sk = s.keygen().map_err(|_| "setup: keygen returned an error")?;
                    let pk = s.pk_from_bytes(&s.public_bytes(&sk))?;
                    let sig = s.sign(&sk, &msg).map_err(|_| "setup: sign returned an error")?;
                    let sig = s.sig_bytes(&sig).to_vec();
                    if s.verify(&pk, &msg, &flip_first(&sig)) {
                        return Err("verify accepted the signature with its first byte flipped".into());
                    }
                    Ok((pk, sig))
                })();
                match setup {
                    Err(e) => OpDoc::failed(op, mb, e),
                    Ok((pk, sig)) => measure(
                        "verify",
                        mb,
                        p,
                        // A rejected valid signature counts as the call's error return.
                        || if s.verify(black_box(&pk), black_box(&msg), black_box(&sig)) { Ok(()) } else { Err(()) },
                        |_| Ok(()),
                    ),
                }
            }
            other => OpDoc::failed(other, mb, wrong_kind("sig", other)),
        };
        docs.push(doc);
    }
    (sizes, docs)
}

// --------------------------------------------------------------------------------------------- input

/// Bad input: exit 2 with `{"error": ...}`.
struct BadInput(String);

fn levenshtein(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.to_lowercase().chars().collect(), b.to_lowercase().chars().collect());
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// "did you mean X, Y?" for the names close to `name`, else the whole list.
fn close_matches(name: &str, known: &[&str]) -> String {
    let lower = name.to_lowercase();
    let mut scored: Vec<(usize, &str)> = known
        .iter()
        .map(|k| {
            let kl = k.to_lowercase();
            let d = if !lower.is_empty() && (kl.contains(&lower) || lower.contains(&kl)) { 0 } else { levenshtein(name, k) };
            (d, *k)
        })
        .filter(|(d, k)| *d <= (k.len() / 3).max(2))
        .collect();
    scored.sort();
    if scored.is_empty() {
        format!("known: {}", known.join(", "))
    } else {
        format!("did you mean {}?", scored.iter().take(5).map(|(_, k)| *k).collect::<Vec<_>>().join(", "))
    }
}

fn find<'a>(impls: &'a [Implementation], id: &str, alg: &str) -> Result<(&'a Implementation, &'a dyn Alg), BadInput> {
    let ids: Vec<&str> = impls.iter().map(|i| i.info.implementation).collect();
    let imp = impls.iter().find(|i| i.info.implementation == id).ok_or_else(|| {
        BadInput(format!("unknown implementation {id:?}: pass --impl with one of this program's ids ({})",
                         close_matches(id, &ids)))
    })?;
    let names: Vec<&str> = imp.algs.iter().map(|a| a.name()).collect();
    let a = imp.algs.iter().find(|a| a.name() == alg).ok_or_else(|| {
        let elsewhere: Vec<&str> = impls
            .iter()
            .filter(|i| i.algs.iter().any(|a| a.name() == alg))
            .map(|i| i.info.implementation)
            .collect();
        let hint = if elsewhere.is_empty() { String::new() } else { format!("; {alg} is in {}", elsewhere.join(", ")) };
        BadInput(format!("{id} has no algorithm {alg:?}: pass --alg with one of its names ({}){hint}",
                         close_matches(alg, &names)))
    })?;
    Ok((imp, a.as_ref()))
}

fn parse_time_args(args: &[String]) -> Result<(String, String, Option<Vec<String>>, Params), BadInput> {
    let mut map: HashMap<&str, &str> = HashMap::new();
    let known = ["--impl", "--alg", "--ops", "--budget", "--min-samples", "--max-samples", "--warmup", "--sample-ns",
                 "--message-bytes"];
    let mut i = 0;
    while i < args.len() {
        let (key, value) = match args[i].split_once('=') {
            Some((k, v)) if k.starts_with("--") => (k, Some(v)),
            _ => (args[i].as_str(), None),
        };
        if !known.contains(&key) {
            return Err(BadInput(format!("unknown option {key:?} for time: use {}", known.join(", "))));
        }
        let value = match value {
            Some(v) => v,
            None => {
                i += 1;
                args.get(i).map(|s| s.as_str()).ok_or_else(|| BadInput(format!("{key} needs a value")))?
            }
        };
        map.insert(key, value);
        i += 1;
    }
    let id = map.get("--impl").ok_or_else(|| BadInput("time needs --impl ID (see `list`)".into()))?.to_string();
    let alg = map.get("--alg").ok_or_else(|| BadInput("time needs --alg NAME (see `list`)".into()))?.to_string();
    let ops = map.get("--ops").map(|s| s.split(',').map(|o| o.trim().to_string()).filter(|o| !o.is_empty()).collect());
    fn int(map: &HashMap<&str, &str>, key: &str, default: u64, min: u64, max: u64) -> Result<u64, BadInput> {
        match map.get(key) {
            None => Ok(default),
            Some(s) => match s.parse::<u64>() {
                Ok(v) if v >= min && v <= max => Ok(v),
                _ => Err(BadInput(format!("{key} {s:?} is not a whole number from {min} to {max}: pass one"))),
            },
        }
    }
    let budget_s = match map.get("--budget") {
        None => 1.0,
        Some(s) => match s.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..1e6).contains(&v) => v,
            _ => return Err(BadInput(format!("--budget {s:?} is not a number of seconds from 0 to 1e6: pass one"))),
        },
    };
    let min_samples = int(&map, "--min-samples", 5, 1, 100_000_000)? as usize;
    let max_samples = int(&map, "--max-samples", 1000, 1, 100_000_000)? as usize;
    if min_samples > max_samples {
        return Err(BadInput(format!("--min-samples {min_samples} exceeds --max-samples {max_samples}: lower one or \
                                     raise the other")));
    }
    let params = Params {
        ops: Vec::new(),
        budget_s,
        min_samples,
        max_samples,
        warmup: int(&map, "--warmup", 2, 0, 1_000_000)?,
        sample_ns: int(&map, "--sample-ns", 200_000, 1, 60_000_000_000)?,
        message_bytes: int(&map, "--message-bytes", 100, 0, 1 << 30)? as usize,
    };
    Ok((id, alg, ops, params))
}

// --------------------------------------------------------------------------------------------- subcommands

fn list(impls: &[Implementation]) -> Value {
    let algorithms: Vec<Value> = impls
        .iter()
        .flat_map(|i| {
            i.algs.iter().map(move |a| {
                json!({"implementation": i.info.implementation, "algorithm": a.name(), "kind": a.kind(),
                       "seeded": a.seeded()})
            })
        })
        .collect();
    json!({"protocol": PROTOCOL, "program": PROGRAM, "language": LANGUAGE, "toolchain": TOOLCHAIN,
           "commands": COMMANDS, "implementations": impls.iter().map(|i| &i.info).collect::<Vec<_>>(),
           "algorithms": algorithms})
}

fn time(impls: &[Implementation], args: &[String]) -> Result<(Value, bool), BadInput> {
    let (id, alg_name, ops, mut params) = parse_time_args(args)?;
    let (imp, alg) = find(impls, &id, &alg_name)?;
    let kind_ops: &[&str] = if alg.kind() == "kem" { &["keygen", "encaps", "decaps"] } else { &["keygen", "sign", "verify"] };
    let ops = ops.unwrap_or_else(|| kind_ops.iter().map(|s| s.to_string()).collect());
    if ops.is_empty() {
        return Err(BadInput(format!("--ops is empty: pass some of {}", kind_ops.join(","))));
    }
    for op in &ops {
        if !kind_ops.contains(&op.as_str()) {
            return Err(BadInput(format!("{alg_name} is a {} algorithm and has no operation {op:?}: pass --ops with \
                                         some of {} ({})", alg.kind(), kind_ops.join(","), close_matches(op, kind_ops))));
        }
    }
    params.ops = ops;
    let (sizes, docs) = alg.time(&params);
    let ok = docs.iter().all(|d| d.verified) && sizes.get("error").is_none();
    let doc = json!({"protocol": PROTOCOL, "program": PROGRAM, "implementation": imp.info.implementation,
                     "version": imp.info.version, "algorithm": alg.name(), "kind": alg.kind(), "clock": CLOCK,
                     "sizes": sizes, "operations": docs});
    Ok((doc, ok))
}

fn hex_field(req: &Value, key: &str) -> Result<Option<Vec<u8>>, String> {
    match req.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => hex::decode(s).map(Some).map_err(|e| format!("{key} is not hex: {e}")),
        Some(_) => Err(format!("{key} must be a hex string")),
    }
}

fn need_hex(req: &Value, key: &str) -> Result<Vec<u8>, String> {
    hex_field(req, key)?.ok_or_else(|| format!("the request needs {key} (hex)"))
}

struct Keys {
    next: u64,
    by_handle: HashMap<String, (String, String, Box<dyn Any>)>,
}

fn serve_one(impls: &[Implementation], keys: &mut Keys, req: &Value) -> Result<Value, String> {
    let op = req.get("op").and_then(Value::as_str).ok_or("the request needs \"op\"")?;
    let id = req.get("impl").and_then(Value::as_str).ok_or("the request needs \"impl\"")?;
    let alg_name = req.get("alg").and_then(Value::as_str).ok_or("the request needs \"alg\"")?;
    let (_, alg) = find(impls, id, alg_name).map_err(|b| b.0)?;
    let seeded = |what: &str| -> Result<(), String> {
        if alg.seeded().contains(&what) {
            Ok(())
        } else {
            Err(format!("{id} {alg_name} takes no caller randomness for {what} (seeded: [{}])",
                        alg.seeded().join(", ")))
        }
    };
    let handle_key = |keys: &Keys| -> Result<String, String> {
        let h = req.get("handle").and_then(Value::as_str).ok_or("the request needs \"handle\"")?;
        match keys.by_handle.get(h) {
            None => Err(format!("no key has handle {h:?}")),
            Some((i, a, _)) if i != id || a != alg_name => Err(format!("handle {h} is a {i} {a} key, not {id} {alg_name}")),
            Some(_) => Ok(h.to_string()),
        }
    };
    match op {
        "keygen" => {
            let seed = hex_field(req, "seed")?;
            if seed.is_some() {
                seeded("keygen")?;
            }
            let (sk, pk) = alg.keygen(seed.as_deref())?;
            keys.next += 1;
            let handle = format!("k{}", keys.next);
            keys.by_handle.insert(handle.clone(), (id.to_string(), alg_name.to_string(), sk));
            Ok(json!({"ok": true, "handle": handle, "public_key": hex::encode(pk)}))
        }
        "encaps" => {
            let seed = hex_field(req, "seed")?;
            if seed.is_some() {
                seeded("encaps")?;
            }
            let (ct, ss) = alg.encaps(&need_hex(req, "public_key")?, seed.as_deref())?;
            Ok(json!({"ok": true, "ciphertext": hex::encode(ct), "shared_secret": hex::encode(ss)}))
        }
        "decaps" => {
            let h = handle_key(keys)?;
            let ss = alg.decaps(keys.by_handle[&h].2.as_ref(), &need_hex(req, "ciphertext")?)?;
            Ok(json!({"ok": true, "shared_secret": hex::encode(ss)}))
        }
        "sign" => {
            let h = handle_key(keys)?;
            let deterministic = match req.get("deterministic") {
                None | Some(Value::Null) => false,
                Some(Value::Bool(b)) => *b,
                Some(_) => return Err("deterministic must be true or false".into()),
            };
            if deterministic {
                seeded("sign")?;
            }
            let sig = alg.sign(keys.by_handle[&h].2.as_ref(), &need_hex(req, "message")?, deterministic)?;
            Ok(json!({"ok": true, "signature": hex::encode(sig)}))
        }
        "verify" => {
            let valid = alg.verify(&need_hex(req, "public_key")?, &need_hex(req, "message")?,
                                   &need_hex(req, "signature")?)?;
            Ok(json!({"ok": true, "valid": valid}))
        }
        other => Err(format!("unknown op {other:?}: use keygen, encaps, decaps, sign or verify")),
    }
}

fn serve(impls: &[Implementation]) -> ExitCode {
    let stdin = io::stdin();
    let mut out = io::stdout().lock();
    let mut keys = Keys { next: 0, by_handle: HashMap::new() };
    for line in stdin.lock().lines() {
        let line = match line {
            Ok(l) => l,
            Err(e) => {
                eprintln!("serve: reading stdin failed: {e}");
                return ExitCode::from(1);
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        let answer = match serde_json::from_str::<Value>(&line) {
            Err(e) => json!({"ok": false, "error": format!("the request is not JSON: {e}")}),
            Ok(req) => {
                // A panic inside a library is one failed request, not the end of the session.
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| serve_one(impls, &mut keys, &req)));
                match result {
                    Ok(Ok(v)) => v,
                    Ok(Err(e)) => json!({"ok": false, "error": e.replace('\n', " ")}),
                    Err(_) => json!({"ok": false, "error": "the library panicked on this request"}),
                }
            }
        };
        if writeln!(out, "{answer}").and_then(|_| out.flush()).is_err() {
            return ExitCode::from(1);
        }
    }
    ExitCode::SUCCESS
}

fn print(doc: &Value) {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "{doc}");
    let _ = out.flush();
}

fn bad(msg: String) -> ExitCode {
    print(&json!({"error": msg}));
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: pqlab-impls-rust list | time --impl ID --alg NAME --ops a,b,c --budget S --min-samples N \
                 --max-samples N --warmup N --sample-ns NS --message-bytes N | serve";
    match args.first().map(String::as_str) {
        Some("list") if args.len() == 1 => {
            print(&list(&implementations()));
            ExitCode::SUCCESS
        }
        Some("time") => match time(&implementations(), &args[1..]) {
            Ok((doc, ok)) => {
                print(&doc);
                if ok {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            Err(BadInput(msg)) => bad(msg),
        },
        Some("serve") if args.len() == 1 => {
            // Panics in a library are answered per request; keep the default hook quiet about them.
            std::panic::set_hook(Box::new(|info| eprintln!("panic: {info}")));
            serve(&implementations())
        }
        Some(other) => bad(format!("unknown subcommand or extra arguments ({other:?}): {usage}")),
        None => bad(format!("no subcommand: {usage}")),
    }
}
