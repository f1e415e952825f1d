//! pqlab's TLS 1.3 handshake runner: OpenSSL 3.6 (vendored by the `openssl` crate), client and
//! server in one process over loopback TCP, one thread each (pinned to its own core with --pin).
//! It speaks pqlab's program protocol, version 2 (native/PROTOCOL.md), as the program `tls-runner`.
//!
//! Why one process with two threads: each side's CPU time is read from its own thread clock
//! (CLOCK_THREAD_CPUTIME_ID), so client and server costs are separated exactly while a handshake
//! (a strict ping-pong) rarely runs both at once; the results need no inter-process plumbing.
//!
//!   tls-runner list                     the protocol, the toolchain, the OpenSSL version, and the TLS groups
//!                                       and TLS 1.3 signature schemes this stack supports (JSON)
//!   tls-runner handshake --group G --chain DIR [--depth 1|2] [--handshakes N] [--sigalg S] [--warmup W]
//!                  [--mutual] [--resume] [--pin CLIENT,SERVER] [--payload BYTES]
//!   tls-runner mkchain --alg NAME --out DIR
//!                                       a root -> intermediate -> leaf chain made with OpenSSL itself
//!                                       (for key types the Python side cannot sign with, e.g. SLH-DSA)
//!
//! Every command prints one JSON document carrying "protocol": 2 and "program": "tls-runner".
//! `handshake`: every handshake is checked outside its timed region: it
//! completed, the negotiated group and the peer's signature scheme are the requested ones, the
//! chain verified, a resumed handshake really resumed, and application data came back intact.
//! Bytes: every record each side writes (reported by OpenSSL's message callback) is attributed to
//! the handshake message it carries; the sum per side must equal the bytes counted on its socket.
//! A failed handshake (or a configuration OpenSSL refuses) is reported with OpenSSL's reason in the
//! document (`verified: false`, `error`), exit 1.
//! Exit 2: bad request (unknown command or option, a group or signature scheme the stack does not have, a
//! chain folder without a root), said in one line on stderr and as {"error": ...} on stdout: every number has
//! bounds (--handshakes 1..=100000, --warmup 0..=10000, --payload 1..=16 MiB, --depth 1 or 2; pqlab.runners.tls
//! checks the same ones first), and --pin takes two CPUs this process may run on.  `pinned_cpus` and
//! `affinity` report the CPUs each thread may run on as read back from the kernel after pinning.

use std::cell::RefCell;
use std::ffi::{CStr, CString};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::raw::{c_char, c_int, c_void};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use std::{env, fs, process, ptr, thread};

use foreign_types::{ForeignType, ForeignTypeRef};
use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::BigNum;
use openssl::pkey::{PKey, Private};
use openssl::ssl::{
    ErrorCode, Ssl, SslContext, SslContextBuilder, SslMethod, SslMode, SslSession, SslVerifyMode,
    SslVersion,
};
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, ExtendedKeyUsage, KeyUsage, SubjectAlternativeName,
    SubjectKeyIdentifier,
};
use openssl::x509::{X509Name, X509};
use openssl_sys as ffi;
use serde_json::{json, Value};

const HOST: &str = "pqlab.test";
/// The protocol this runner speaks and its name in pqlab's registry (native/PROTOCOL.md).
const PROTOCOL: u32 = 2;
const PROGRAM: &str = "tls-runner";
/// What it answers besides `list` (exactly program.toml's `commands`).
const COMMANDS: &[&str] = &["handshake", "mkchain"];
/// `rustc --version` of the compiler that built it (src/build.rs); empty when the build could not ask it.
const RUSTC_VERSION: &str = env!("PQLAB_RUSTC_VERSION");
/// Bounds of `handshake`'s numbers (pqlab.tls.MAX_HANDSHAKES, MAX_WARMUP and MAX_PAYLOAD are the same).
const MAX_HANDSHAKES: usize = 100_000;
const MAX_WARMUP: usize = 10_000;
const MAX_PAYLOAD: usize = 16 << 20;
/// CPUs a cpu_set_t can name.
const CPU_SETSIZE: usize = 8 * std::mem::size_of::<libc::cpu_set_t>();
const SSL_CTRL_SET_MSG_CALLBACK_ARG: c_int = 16;
const SSL_CTRL_GET0_IMPLEMENTED_GROUPS: c_int = 139;
const SSL_CTRL_GET_PEER_SIGNATURE_NAME: c_int = 141;
/// TLS 1.3 signature scheme names (RFC 8446 and the ML-DSA code points) tried by `list`.
const SIGALG_CANDIDATES: &[&str] = &[
    "ecdsa_secp256r1_sha256", "ecdsa_secp384r1_sha384", "ecdsa_secp521r1_sha512", "ed25519", "ed448",
    "rsa_pss_rsae_sha256", "rsa_pss_rsae_sha384", "rsa_pss_rsae_sha512", "rsa_pss_pss_sha256",
    "rsa_pss_pss_sha384", "rsa_pss_pss_sha512", "mldsa44", "mldsa65", "mldsa87",
];

type MsgCallback =
    unsafe extern "C" fn(c_int, c_int, c_int, *const c_void, usize, *mut ffi::SSL, *mut c_void);

extern "C" {
    fn SSL_set_msg_callback(ssl: *mut ffi::SSL, cb: Option<MsgCallback>);
    fn SSL_SESSION_get0_ticket(s: *const ffi::SSL_SESSION, tick: *mut *const u8, len: *mut usize);
}

/// Length of the session ticket a session holds (what the client offers when it resumes).
fn ticket_len(session: &SslSession) -> usize {
    let (mut tick, mut len): (*const u8, usize) = (ptr::null(), 0);
    unsafe { SSL_SESSION_get0_ticket(session.as_ptr(), &mut tick, &mut len) };
    len
}

fn fail_usage(msg: &str) -> ! {
    println!("{}", json!({"error": msg}));
    eprintln!("tls-runner: error: {msg}");
    process::exit(2);
}

// ------------------------------------------------------------------ bytes: socket and records

/// A TCP stream that counts the bytes it reads and writes.
#[derive(Debug)]
struct Counting {
    inner: TcpStream,
    read: u64,
    written: u64,
}

impl Read for Counting {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read += n as u64;
        Ok(n)
    }
}

impl Write for Counting {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

struct Record {
    content_type: u8,
    wire: usize,
    claimed: bool,
}

/// What one side wrote: records (header + payload) and the messages they carried.
#[derive(Default)]
struct Trace {
    records: Vec<Record>,
    /// [content type, handshake type (0 for others), message length, wire bytes of its records]
    messages: Vec<[usize; 4]>,
    /// per message: its extensions as [type, length] (hello messages, EncryptedExtensions, CertificateRequest)
    extensions: Vec<Vec<[usize; 2]>>,
}

/// The extension list of a ClientHello, ServerHello, EncryptedExtensions or CertificateRequest.
fn extensions_of(msg: &[u8]) -> Vec<[usize; 2]> {
    let get = |at: usize| msg.get(at).copied().map(usize::from);
    let skip = |at: usize, len_bytes: usize| -> Option<usize> {
        let len = (0..len_bytes).try_fold(0usize, |acc, i| get(at + i).map(|b| acc << 8 | b))?;
        Some(at + len_bytes + len)
    };
    let start = match msg.first() {
        Some(1) => skip(4 + 2 + 32, 1).and_then(|at| skip(at, 2)).and_then(|at| skip(at, 1)),
        Some(2) => skip(4 + 2 + 32, 1).map(|at| at + 3),
        Some(8) => Some(4),
        Some(13) => skip(4, 1),
        _ => None,
    };
    let mut out = Vec::new();
    let Some(mut at) = start.map(|a| a + 2) else { return out };
    while let (Some(t0), Some(t1), Some(l0), Some(l1)) = (get(at), get(at + 1), get(at + 2), get(at + 3)) {
        let len = l0 << 8 | l1;
        out.push([t0 << 8 | t1, len]);
        at += 4 + len;
    }
    out
}

impl Trace {
    fn claim(&mut self, content_type: u8) -> usize {
        let mut wire = 0;
        for r in self.records.iter_mut().filter(|r| !r.claimed && r.content_type == content_type) {
            r.claimed = true;
            wire += r.wire;
        }
        wire
    }

    /// Messages in order (with their extensions), then the application data (and anything else)
    /// no message claimed, and the total of all records.
    fn finish(mut self) -> (Vec<Value>, usize) {
        let mut rest: Vec<(u8, usize)> = Vec::new();
        for r in self.records.iter().filter(|r| !r.claimed) {
            match rest.iter_mut().find(|(t, _)| *t == r.content_type) {
                Some(e) => e.1 += r.wire,
                None => rest.push((r.content_type, r.wire)),
            }
        }
        for (t, wire) in rest {
            self.messages.push([t as usize, 0, 0, wire]);
            self.extensions.push(Vec::new());
        }
        let total = self.records.iter().map(|r| r.wire).sum();
        let out = self.messages.iter().zip(&self.extensions)
            .map(|(m, e)| json!([m[0], m[1], m[2], m[3], e])).collect();
        (out, total)
    }
}

/// OpenSSL's message callback: for each record written, its header (then, once encrypted, its
/// inner content type); after each handshake message, CCS or alert is written, the message.
unsafe extern "C" fn on_message(
    write_p: c_int, _version: c_int, content_type: c_int, buf: *const c_void, len: usize, _ssl: *mut ffi::SSL,
    arg: *mut c_void,
) {
    if write_p != 1 || arg.is_null() || buf.is_null() {
        return;
    }
    let trace = &*(arg as *const RefCell<Trace>);
    let mut t = trace.borrow_mut();
    let b = std::slice::from_raw_parts(buf as *const u8, len);
    match content_type {
        0x100 if len >= 5 => {
            let payload = u16::from_be_bytes([b[3], b[4]]) as usize;
            t.records.push(Record { content_type: b[0], wire: 5 + payload, claimed: false });
        }
        0x101 if len == 1 => {
            if let Some(r) = t.records.last_mut() {
                r.content_type = b[0];
            }
        }
        20..=22 => {
            let wire = t.claim(content_type as u8);
            let hs_type = if content_type == 22 && len > 0 { b[0] as usize } else { 0 };
            t.messages.push([content_type as usize, hs_type, len, wire]);
            let exts = if content_type == 22 { extensions_of(b) } else { Vec::new() };
            t.extensions.push(exts);
        }
        _ => {}
    }
}

fn attach_trace(ssl: &mut Ssl, trace: &RefCell<Trace>) {
    unsafe {
        SSL_set_msg_callback(ssl.as_ptr(), Some(on_message));
        ffi::SSL_ctrl(ssl.as_ptr(), SSL_CTRL_SET_MSG_CALLBACK_ARG, 0, trace as *const _ as *mut c_void);
    }
}

// ------------------------------------------------------------------ small helpers

fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The CPUs the calling thread may run on, as the kernel says (sched_getaffinity).
fn affinity() -> Result<Vec<usize>, String> {
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(format!("sched_getaffinity: {}", std::io::Error::last_os_error()));
        }
        Ok((0..CPU_SETSIZE).filter(|&c| libc::CPU_ISSET(c, &set)).collect())
    }
}

/// Pin the calling thread to `cpu` (if any); the CPUs it may run on afterwards, read back from the kernel
/// (an error when that is not `cpu` alone).
fn pin_thread(cpu: Option<usize>) -> Result<Vec<usize>, String> {
    if let Some(cpu) = cpu {
        if cpu >= CPU_SETSIZE {
            return Err(format!("cannot pin a thread to CPU {cpu}: CPUs go up to {}", CPU_SETSIZE - 1));
        }
        unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                return Err(format!("cannot pin a thread to CPU {cpu}: {}", std::io::Error::last_os_error()));
            }
        }
    }
    let got = affinity()?;
    match cpu {
        Some(cpu) if got != [cpu] => Err(format!("pinned a thread to CPU {cpu}, but the kernel lets it run on {got:?}")),
        _ => Ok(got),
    }
}

/// OpenSSL's error queue of this thread as one line (its reasons), then cleared.
fn openssl_errors() -> String {
    let stack = openssl::error::ErrorStack::get();
    stack
        .errors()
        .iter()
        .map(|e| format!("{}{}", e.reason().unwrap_or("unknown reason"), e.data().map(|d| format!(" ({d})")).unwrap_or_default()))
        .collect::<Vec<_>>()
        .join("; ")
}

fn describe<E: std::fmt::Display>(what: &str, err: E) -> String {
    let queued = openssl_errors();
    if queued.is_empty() {
        format!("{what}: {err}")
    } else {
        format!("{what}: {err} [{queued}]")
    }
}

fn c_str(p: *const c_char) -> Option<String> {
    if p.is_null() {
        None
    } else {
        Some(unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
}

fn peer_signature_name(ssl: &openssl::ssl::SslRef) -> Option<String> {
    let mut name: *const c_char = ptr::null();
    let ok = unsafe {
        ffi::SSL_ctrl(ssl.as_ptr(), SSL_CTRL_GET_PEER_SIGNATURE_NAME, 0, &mut name as *mut _ as *mut c_void)
    };
    if ok == 1 { c_str(name) } else { None }
}

fn group_name(ssl: &openssl::ssl::SslRef) -> Option<String> {
    c_str(unsafe { ffi::SSL_get0_group_name(ssl.as_ptr()) })
}

// ------------------------------------------------------------------ list / version

fn implemented_groups() -> Vec<String> {
    let ctx = SslContext::builder(SslMethod::tls()).expect("SSL_CTX_new");
    let mut out = Vec::new();
    unsafe {
        let stack = ffi::OPENSSL_sk_new_null();
        ffi::SSL_CTX_ctrl(ctx.as_ptr(), SSL_CTRL_GET0_IMPLEMENTED_GROUPS, 0, stack as *mut c_void);
        for i in 0..ffi::OPENSSL_sk_num(stack) {
            if let Some(name) = c_str(ffi::OPENSSL_sk_value(stack, i) as *const c_char) {
                out.push(name);
            }
        }
        ffi::OPENSSL_sk_free(stack);
    }
    out
}

fn supported_sigalgs() -> Vec<String> {
    SIGALG_CANDIDATES
        .iter()
        .filter(|name| {
            let mut ctx = SslContext::builder(SslMethod::tls()).expect("SSL_CTX_new");
            let ok = ctx.set_sigalgs_list(name).is_ok();
            openssl_errors();
            ok
        })
        .map(|s| s.to_string())
        .collect()
}

// ------------------------------------------------------------------ mkchain

fn generate_key(alg: &str) -> Result<PKey<Private>, String> {
    let name = CString::new(alg).map_err(|e| e.to_string())?;
    unsafe {
        let ctx = ffi::EVP_PKEY_CTX_new_from_name(ptr::null_mut(), name.as_ptr(), ptr::null());
        if ctx.is_null() {
            return Err(describe(&format!("OpenSSL knows no key type {alg:?}"), "EVP_PKEY_CTX_new_from_name"));
        }
        let mut key: *mut ffi::EVP_PKEY = ptr::null_mut();
        let ok = ffi::EVP_PKEY_keygen_init(ctx) == 1 && ffi::EVP_PKEY_keygen(ctx, &mut key) == 1;
        ffi::EVP_PKEY_CTX_free(ctx);
        if !ok || key.is_null() {
            return Err(describe(&format!("generating a {alg} key failed"), "EVP_PKEY_keygen"));
        }
        Ok(PKey::from_ptr(key))
    }
}

enum Role {
    Root,
    Intermediate,
    Server,
    Client,
}

/// One certificate with the extensions pqlab's Python chain builder writes (same names,
/// serials and validity), signed without a separate digest (as ML-DSA and SLH-DSA sign).
fn make_cert(
    alg: &str, role: Role, serial: u32, key: &PKey<Private>, issuer: Option<(&X509, &PKey<Private>)>,
) -> Result<X509, String> {
    let err = |e: openssl::error::ErrorStack| describe("building a certificate", e);
    let cn = match role {
        Role::Root => format!("pqlab {alg} root"),
        Role::Intermediate => format!("pqlab {alg} intermediate"),
        Role::Server => HOST.to_string(),
        Role::Client => "pqlab client".to_string(),
    };
    let mut name = X509Name::builder().map_err(err)?;
    name.append_entry_by_text("CN", &cn).map_err(err)?;
    let name = name.build();
    let mut b = X509::builder().map_err(err)?;
    b.set_version(2).map_err(err)?;
    let serial = BigNum::from_u32(serial).map_err(err)?;
    let serial = Asn1Integer::from_bn(&serial).map_err(err)?;
    b.set_serial_number(&serial).map_err(err)?;
    b.set_subject_name(&name).map_err(err)?;
    b.set_issuer_name(issuer.map(|(c, _)| c.subject_name()).unwrap_or(&name)).map_err(err)?;
    let (not_before, not_after) =
        (Asn1Time::from_str("20260101000000Z").map_err(err)?, Asn1Time::from_str("20360101000000Z").map_err(err)?);
    b.set_not_before(&not_before).map_err(err)?;
    b.set_not_after(&not_after).map_err(err)?;
    b.set_pubkey(key).map_err(err)?;
    let ca = matches!(role, Role::Root | Role::Intermediate);
    let mut bc = BasicConstraints::new();
    bc.critical();
    if ca {
        bc.ca();
    }
    if matches!(role, Role::Intermediate) {
        bc.pathlen(0);
    }
    b.append_extension(bc.build().map_err(err)?).map_err(err)?;
    let mut ku = KeyUsage::new();
    ku.critical();
    if ca {
        ku.key_cert_sign().crl_sign();
    } else {
        ku.digital_signature();
    }
    b.append_extension(ku.build().map_err(err)?).map_err(err)?;
    match role {
        Role::Server => {
            b.append_extension(ExtendedKeyUsage::new().server_auth().build().map_err(err)?).map_err(err)?;
            let san = SubjectAlternativeName::new().dns(HOST).build(&b.x509v3_context(issuer.map(|(c, _)| c.as_ref()), None));
            b.append_extension(san.map_err(err)?).map_err(err)?;
        }
        Role::Client => {
            b.append_extension(ExtendedKeyUsage::new().client_auth().build().map_err(err)?).map_err(err)?;
        }
        _ => {}
    }
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None)).map_err(err)?;
    b.append_extension(ski).map_err(err)?;
    if let Some((issuer_cert, _)) = issuer {
        let aki = AuthorityKeyIdentifier::new().keyid(true).build(&b.x509v3_context(Some(issuer_cert), None));
        b.append_extension(aki.map_err(err)?).map_err(err)?;
    }
    let cert = b.build();
    let signer = issuer.map(|(_, k)| k).unwrap_or(key);
    if unsafe { ffi::X509_sign(cert.as_ptr(), signer.as_ptr(), ptr::null()) } <= 0 {
        return Err(describe(&format!("signing a certificate with {alg}"), "X509_sign"));
    }
    Ok(cert)
}

fn mkchain(alg: &str, out: &str) -> Result<Value, String> {
    let dir = std::path::Path::new(out);
    let (root_key, int_key, server_key, client_key) =
        (generate_key(alg)?, generate_key(alg)?, generate_key(alg)?, generate_key(alg)?);
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {out}: {e}"))?;
    let root = make_cert(alg, Role::Root, 1, &root_key, None)?;
    let int = make_cert(alg, Role::Intermediate, 2, &int_key, Some((&root, &root_key)))?;
    let files: Vec<(&str, Vec<u8>)> = vec![
        ("root.der", root.to_der().map_err(|e| e.to_string())?),
        ("intermediate.der", int.to_der().map_err(|e| e.to_string())?),
        ("server-1.der", make_cert(alg, Role::Server, 3, &server_key, Some((&root, &root_key)))?.to_der().map_err(|e| e.to_string())?),
        ("server-2.der", make_cert(alg, Role::Server, 4, &server_key, Some((&int, &int_key)))?.to_der().map_err(|e| e.to_string())?),
        ("client-1.der", make_cert(alg, Role::Client, 5, &client_key, Some((&root, &root_key)))?.to_der().map_err(|e| e.to_string())?),
        ("client-2.der", make_cert(alg, Role::Client, 6, &client_key, Some((&int, &int_key)))?.to_der().map_err(|e| e.to_string())?),
        ("server.key.der", server_key.private_key_to_pkcs8().map_err(|e| e.to_string())?),
        ("client.key.der", client_key.private_key_to_pkcs8().map_err(|e| e.to_string())?),
    ];
    for (name, der) in &files {
        fs::write(dir.join(name), der).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    Ok(json!({"protocol": PROTOCOL, "program": PROGRAM, "algorithm": alg, "verified": true, "error": "",
              "files": files.iter().map(|(n, d)| json!([n, d.len()])).collect::<Vec<_>>()}))
}

// ------------------------------------------------------------------ run

struct Options {
    group: String,
    sigalg: Option<String>,
    chain: String,
    depth: usize,
    handshakes: usize,
    warmup: usize,
    mutual: bool,
    resume: bool,
    pin: Option<(usize, usize)>,
    payload: usize,
}

fn read_der(dir: &str, name: &str) -> Result<Vec<u8>, String> {
    let path = std::path::Path::new(dir).join(name);
    fs::read(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn cert(dir: &str, name: &str) -> Result<X509, String> {
    X509::from_der(&read_der(dir, name)?).map_err(|e| describe(&format!("{name} is not a DER certificate"), e))
}

/// A context for one side: TLS 1.3 only, the one requested group (and signature scheme),
/// its chain (leaf, plus the intermediate at depth 2) and the root it trusts.
fn context(o: &Options, server: bool) -> Result<SslContext, String> {
    let who = if server { "server" } else { "client" };
    let mut b = SslContextBuilder::new(if server { SslMethod::tls_server() } else { SslMethod::tls_client() })
        .map_err(|e| describe("SSL_CTX_new", e))?;
    b.set_min_proto_version(Some(SslVersion::TLS1_3)).map_err(|e| describe("TLS 1.3 only", e))?;
    b.set_max_proto_version(Some(SslVersion::TLS1_3)).map_err(|e| describe("TLS 1.3 only", e))?;
    b.set_mode(SslMode::NO_AUTO_CHAIN);
    b.set_groups_list(&o.group).map_err(|e| describe(&format!("{who}: group {:?} refused", o.group), e))?;
    if let Some(s) = &o.sigalg {
        b.set_sigalgs_list(s).map_err(|e| describe(&format!("{who}: signature scheme {s:?} refused"), e))?;
    }
    b.cert_store_mut().add_cert(cert(&o.chain, "root.der")?).map_err(|e| describe("trust root", e))?;
    let verify = SslVerifyMode::PEER | SslVerifyMode::FAIL_IF_NO_PEER_CERT;
    if server || o.mutual {
        let stem = if server { "server" } else { "client" };
        let leaf = cert(&o.chain, &format!("{stem}-{}.der", o.depth))?;
        let key = PKey::private_key_from_pkcs8(&read_der(&o.chain, &format!("{stem}.key.der"))?)
            .map_err(|e| describe(&format!("{who}: loading its private key"), e))?;
        b.set_certificate(&leaf).map_err(|e| describe(&format!("{who}: certificate refused"), e))?;
        if o.depth == 2 {
            b.add_extra_chain_cert(cert(&o.chain, "intermediate.der")?)
                .map_err(|e| describe(&format!("{who}: intermediate refused"), e))?;
        }
        b.set_private_key(&key).map_err(|e| describe(&format!("{who}: private key refused"), e))?;
        b.check_private_key().map_err(|e| describe(&format!("{who}: key does not match certificate"), e))?;
    }
    if server {
        b.set_verify(if o.mutual { verify } else { SslVerifyMode::NONE });
    } else {
        b.set_verify(SslVerifyMode::PEER);
    }
    Ok(b.build())
}

/// What the server thread reports for one connection.
struct ServerSide {
    ok: bool,
    error: Option<String>,
    cpu_ns: u64,
    wall_ns: u64,
    client_sigalg: Option<String>,
    messages: Vec<Value>,
    record_bytes: usize,
    socket_written: u64,
}

fn serve_one(ctx: &SslContext, sock: TcpStream, payload: usize) -> ServerSide {
    let trace = RefCell::new(Trace::default());
    let mut out = ServerSide {
        ok: false, error: None, cpu_ns: 0, wall_ns: 0, client_sigalg: None, messages: vec![], record_bytes: 0,
        socket_written: 0,
    };
    let mut ssl = match Ssl::new(ctx) {
        Ok(s) => s,
        Err(e) => {
            out.error = Some(describe("SSL_new", e));
            return out;
        }
    };
    attach_trace(&mut ssl, &trace);
    let _ = sock.set_nodelay(true);
    let counting = Counting { inner: sock, read: 0, written: 0 };
    let cpu0 = thread_cpu_ns();
    let t0 = Instant::now();
    let result = ssl.accept(counting);
    out.cpu_ns = thread_cpu_ns() - cpu0;
    out.wall_ns = t0.elapsed().as_nanos() as u64;
    match result {
        Ok(mut stream) => {
            out.client_sigalg = peer_signature_name(stream.ssl());
            let mut buf = vec![0u8; payload];
            let echoed = stream.read_exact(&mut buf).and_then(|_| stream.write_all(&buf));
            match echoed {
                Ok(()) => {
                    out.ok = true;
                    let mut rest = [0u8; 64];
                    loop {
                        match stream.ssl_read(&mut rest) {
                            Ok(0) => break,
                            Ok(_) => continue,
                            Err(e) if e.code() == ErrorCode::ZERO_RETURN => break,
                            Err(e) => {
                                out.ok = false;
                                out.error = Some(describe("server: waiting for close_notify", e));
                                break;
                            }
                        }
                    }
                    let _ = stream.shutdown();
                }
                Err(e) => out.error = Some(describe("server: application data", e)),
            }
            out.socket_written = stream.get_ref().written;
            drop(stream);
        }
        Err(e) => {
            out.error = Some(describe("server handshake failed", e));
            openssl_errors();
        }
    }
    let (messages, total) = trace.into_inner().finish();
    out.messages = messages;
    out.record_bytes = total;
    out
}

fn run(o: &Options) -> Value {
    let version = openssl::version::version();
    let mut base = json!({"protocol": PROTOCOL, "program": PROGRAM, "openssl_version": version, "group": o.group, "sigalg": o.sigalg, "depth": o.depth,
                          "mutual": o.mutual, "resume": o.resume, "payload_bytes": o.payload,
                          "pinned_cpus": null});
    let with = |mut v: Value, extra: Value| {
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        v
    };
    let (sctx, cctx) = match (context(o, true), context(o, false)) {
        (Ok(s), Ok(c)) => (s, c),
        (Err(e), _) | (_, Err(e)) => return with(base, json!({"setup_error": e, "handshakes": []})),
    };
    let client_cpus = match pin_thread(o.pin.map(|p| p.0)) {
        Ok(cpus) => cpus,
        Err(e) => return with(base, json!({"setup_error": e, "handshakes": []})),
    };
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel::<ServerSide>();
    let (ready_tx, ready_rx) = mpsc::channel::<Result<Vec<usize>, String>>();
    let payload = o.payload;
    let server_cpu = o.pin.map(|p| p.1);
    thread::spawn(move || {
        let pinned = pin_thread(server_cpu);
        let ok = pinned.is_ok();
        let _ = ready_tx.send(pinned);
        if !ok {
            return;
        }
        for sock in listener.incoming() {
            let Ok(sock) = sock else { continue };
            if tx.send(serve_one(&sctx, sock, payload)).is_err() {
                break;
            }
        }
    });

    let server_cpus = match ready_rx.recv_timeout(Duration::from_secs(60)) {
        Ok(Ok(cpus)) => cpus,
        Ok(Err(e)) => return with(base, json!({"setup_error": e, "handshakes": []})),
        Err(_) => return with(base, json!({"setup_error": "the server thread did not start within 60 s",
                                           "handshakes": []})),
    };
    // what the kernel granted, read back in each thread (pin_thread refuses anything but the CPU asked for)
    base["pinned_cpus"] = json!(o.pin.map(|_| [client_cpus[0], server_cpus[0]]));
    base["affinity"] = json!({"client": client_cpus, "server": server_cpus});

    // A resumption run does one full handshake first (to get a ticket), outside the samples.
    let first_resumed = if o.resume { o.warmup + 1 } else { usize::MAX };
    let total = o.warmup + o.handshakes + usize::from(o.resume);
    let mut session: Option<SslSession> = None;
    let mut rows = Vec::new();
    let mut message: Vec<u8> = (0..o.payload).map(|i| (i * 31 % 251) as u8).collect();
    for k in 0..total {
        message.rotate_left(1);
        let trace = RefCell::new(Trace::default());
        let mut row = json!({"index": k, "warmup": k < o.warmup || (o.resume && k < first_resumed),
                             "resumed": false, "ok": false});
        let mut errors: Vec<String> = Vec::new();
        let sock = TcpStream::connect(addr).expect("connect to the loopback server");
        let _ = sock.set_nodelay(true);
        let mut ssl = Ssl::new(&cctx).expect("SSL_new");
        ssl.set_hostname(HOST).expect("SNI");
        ssl.param_mut().set_host(HOST).expect("host check");
        if k >= first_resumed {
            if let Some(s) = &session {
                unsafe { ssl.set_session(s) }.expect("set session");
                row["offered_ticket_bytes"] = json!(ticket_len(s));
            }
        }
        attach_trace(&mut ssl, &trace);
        let counting = Counting { inner: sock, read: 0, written: 0 };
        let cpu0 = thread_cpu_ns();
        let t0 = Instant::now();
        let result = ssl.connect(counting);
        let wall = t0.elapsed().as_nanos() as u64;
        let cpu = thread_cpu_ns() - cpu0;
        row["wall_ns"] = json!(wall);
        row["client_cpu_ns"] = json!(cpu);
        let mut client_written = 0u64;
        match result {
            Ok(mut stream) => {
                let ssl_ref = stream.ssl();
                let group = group_name(ssl_ref);
                let server_sigalg = peer_signature_name(ssl_ref);
                let resumed = ssl_ref.session_reused();
                let verify = ssl_ref.verify_result();
                row["group_negotiated"] = json!(group);
                row["server_sigalg"] = json!(server_sigalg);
                row["resumed"] = json!(resumed);
                row["cipher"] = json!(ssl_ref.current_cipher().map(|c| c.name()));
                if group.as_deref().map(|g| !g.eq_ignore_ascii_case(&o.group)).unwrap_or(true) {
                    errors.push(format!("negotiated group {group:?}, requested {:?}", o.group));
                }
                if !resumed {
                    if let (Some(want), got) = (&o.sigalg, &server_sigalg) {
                        if got.as_deref() != Some(want.as_str()) {
                            errors.push(format!("server signed with {got:?}, requested {want:?}"));
                        }
                    }
                }
                if verify.as_raw() != 0 {
                    errors.push(format!("server chain did not verify: {}", verify.error_string()));
                }
                if k >= first_resumed && !resumed {
                    errors.push("the session was not resumed".into());
                }
                let mut back = vec![0u8; o.payload];
                match stream.write_all(&message).and_then(|_| stream.read_exact(&mut back)) {
                    Ok(()) if back == message => {}
                    Ok(()) => errors.push("application data came back altered".into()),
                    Err(e) => errors.push(describe("client: application data", e)),
                }
                session = stream.ssl().session().map(|s| s.to_owned());
                row["ticket_bytes"] = json!(session.as_ref().map(ticket_len));
                let _ = stream.shutdown();
                let mut rest = [0u8; 64];
                while let Ok(n) = stream.ssl_read(&mut rest) {
                    if n == 0 {
                        break;
                    }
                }
                client_written = stream.get_ref().written;
            }
            Err(e) => errors.push(describe("client handshake failed", e)),
        }
        let server = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(s) => s,
            Err(_) => {
                errors.push("the server thread did not answer within 60 s".into());
                row["errors"] = json!(errors);
                rows.push(row);
                break;
            }
        };
        let (client_messages, client_records) = trace.into_inner().finish();
        if server.ok && errors.is_empty() {
            if client_records as u64 != client_written {
                errors.push(format!("client: records {client_records} B but socket {client_written} B"));
            }
            if server.record_bytes as u64 != server.socket_written {
                errors.push(format!("server: records {} B but socket {} B", server.record_bytes, server.socket_written));
            }
        }
        if o.mutual && server.ok {
            row["client_sigalg"] = json!(server.client_sigalg);
            if let (false, Some(want)) = (row["resumed"].as_bool().unwrap_or(false), &o.sigalg) {
                if server.client_sigalg.as_deref() != Some(want.as_str()) {
                    errors.push(format!("client signed with {:?}, requested {want:?}", server.client_sigalg));
                }
            }
        }
        row["server_cpu_ns"] = json!(server.cpu_ns);
        row["server_wall_ns"] = json!(server.wall_ns);
        row["client_messages"] = json!(client_messages);
        row["server_messages"] = json!(server.messages);
        row["client_bytes"] = json!(client_written);
        row["server_bytes"] = json!(server.socket_written);
        if let Some(e) = server.error {
            errors.push(e);
        }
        let failed = !errors.is_empty() || !server.ok;
        row["ok"] = json!(!failed);
        row["errors"] = json!(errors);
        rows.push(row);
        if failed {
            break; // the same configuration would fail again: one failed row says why
        }
    }
    with(base, json!({"handshakes": rows}))
}

/// `handshake`'s document: the run, and whether every handshake passed its checks (`verified`; `error`:
/// the configuration's refusal or the failed handshake's reasons, "" when verified).
fn handshake(o: &Options) -> Value {
    let mut out = run(o);
    let setup = out["setup_error"].as_str().map(str::to_string);
    let failed = out["handshakes"].as_array().and_then(|rows| {
        rows.iter().find(|h| !h["ok"].as_bool().unwrap_or(false)).map(|h| {
            let reasons: Vec<&str> = h["errors"].as_array().map(|e| e.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            if reasons.is_empty() { "a handshake failed".to_string() } else { reasons.join("; ") }
        })
    });
    let error = setup.or(failed).unwrap_or_default();
    out["verified"] = json!(error.is_empty());
    out["error"] = json!(error);
    out
}

// ------------------------------------------------------------------ command line

fn parse_handshake(args: &[String]) -> Options {
    let mut o = Options {
        group: String::new(), sigalg: None, chain: String::new(), depth: 1, handshakes: 10, warmup: 1,
        mutual: false, resume: false, pin: None, payload: 64,
    };
    let mut i = 0;
    let value = |i: usize| args.get(i + 1).cloned().unwrap_or_else(|| fail_usage(&format!("{} needs a value", args[i])));
    // a whole number within bounds: nothing is allocated or counted from a value outside them
    let number = |i: usize, low: usize, high: usize| {
        let v = value(i);
        match v.parse::<usize>() {
            Ok(n) if (low..=high).contains(&n) => n,
            _ => fail_usage(&format!("{} takes a whole number from {low} to {high}, got {v:?}", args[i])),
        }
    };
    while i < args.len() {
        match args[i].as_str() {
            "--group" => { o.group = value(i); i += 1; }
            "--sigalg" => { o.sigalg = Some(value(i)); i += 1; }
            "--chain" => { o.chain = value(i); i += 1; }
            "--depth" => { o.depth = number(i, 1, 2); i += 1; }
            "--handshakes" => { o.handshakes = number(i, 1, MAX_HANDSHAKES); i += 1; }
            "--warmup" => { o.warmup = number(i, 0, MAX_WARMUP); i += 1; }
            "--payload" => { o.payload = number(i, 1, MAX_PAYLOAD); i += 1; }
            "--mutual" => o.mutual = true,
            "--resume" => o.resume = true,
            "--pin" => {
                let v = value(i);
                let cpus: Vec<Option<usize>> = v.split(',').map(|x| x.trim().parse().ok()).collect();
                let (a, b) = match cpus.as_slice() {
                    [Some(a), Some(b)] => (*a, *b),
                    _ => fail_usage(&format!("--pin takes two CPU numbers, CLIENT,SERVER, got {v:?}")),
                };
                let allowed = affinity().unwrap_or_else(|e| fail_usage(&e));
                for cpu in [a, b] {
                    if !allowed.contains(&cpu) {
                        let may: Vec<String> = allowed.iter().map(|c| c.to_string()).collect();
                        fail_usage(&format!("--pin {v}: CPU {cpu} is not one this process may run on (it may use {})",
                                            may.join(", ")));
                    }
                }
                o.pin = Some((a, b));
                i += 1;
            }
            other => fail_usage(&format!("unknown option {other}")),
        }
        i += 1;
    }
    if o.group.is_empty() || o.chain.is_empty() {
        fail_usage("handshake needs --group and --chain");
    }
    let groups = implemented_groups();
    if !groups.iter().any(|g| g.eq_ignore_ascii_case(&o.group)) {
        fail_usage(&format!("unknown group {:?}: this stack's TLS groups are {}", o.group, groups.join(", ")));
    }
    if let Some(s) = &o.sigalg {
        let schemes = supported_sigalgs();
        if !schemes.contains(s) {
            fail_usage(&format!("unknown signature scheme {s:?}: this stack's TLS 1.3 signature schemes are {}",
                                schemes.join(", ")));
        }
    }
    let root = std::path::Path::new(&o.chain).join("root.der");
    if !root.is_file() {
        fail_usage(&format!("--chain {}: no root.der there (a chain folder: pqlab.runners.tls.build_chain)",
                            o.chain));
    }
    o
}

/// `mkchain`'s options: --alg NAME --out DIR, both required, nothing else.
fn parse_mkchain(args: &[String]) -> (String, String) {
    let (mut alg, mut out) = (None, None);
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1).cloned().unwrap_or_else(|| fail_usage(&format!("{} needs a value", args[i])));
        match args[i].as_str() {
            "--alg" => alg = Some(value),
            "--out" => out = Some(value),
            other => fail_usage(&format!("unknown option {other} of mkchain (it takes --alg NAME --out DIR)")),
        }
        i += 2;
    }
    match (alg, out) {
        (Some(a), Some(o)) => (a, o),
        _ => fail_usage("mkchain needs --alg NAME and --out DIR"),
    }
}

fn list() -> Value {
    let version = openssl::version::version();
    // the compiler's version when the build could ask it (src/build.rs), else the OpenSSL it links
    let toolchain = if RUSTC_VERSION.is_empty() { version } else { RUSTC_VERSION };
    json!({"protocol": PROTOCOL, "program": PROGRAM, "language": "Rust", "toolchain": toolchain,
           "commands": COMMANDS, "openssl_version": version, "groups": implemented_groups(),
           "signatures": supported_sigalgs()})
}

fn main() {
    let args: Vec<String> = env::args().skip(1).collect();
    let rest = args.get(1..).unwrap_or(&[]);
    let (out, status) = match args.first().map(String::as_str) {
        Some("list") if rest.is_empty() => (list(), 0),
        Some("list") => fail_usage(&format!("list takes no options, got {}", rest.join(" "))),
        Some("handshake") => {
            let doc = handshake(&parse_handshake(rest));
            let status = if doc["verified"].as_bool().unwrap_or(false) { 0 } else { 1 };
            (doc, status)
        }
        Some("mkchain") => {
            let (alg, dir) = parse_mkchain(rest);
            if alg.is_empty() || alg.contains('\0') {
                fail_usage(&format!("mkchain --alg {alg:?}: not a key type name"));
            }
            match mkchain(&alg, &dir) {
                Ok(v) => (v, 0),
                Err(e) if e.starts_with("OpenSSL knows no key type") || e.starts_with("cannot create") => {
                    fail_usage(&e)
                }
                Err(e) => (json!({"protocol": PROTOCOL, "program": PROGRAM, "algorithm": alg, "verified": false,
                                  "error": e}), 1),
            }
        }
        Some(other) => fail_usage(&format!("unknown command {other:?}: tls-runner answers list, {}",
                                           COMMANDS.join(", "))),
        None => fail_usage(&format!("no command: tls-runner answers list, {}", COMMANDS.join(", "))),
    };
    println!("{out}");
    process::exit(status);
}
