//! RustCrypto: pure-Rust ML-KEM (ml-kem), ML-DSA (ml-dsa), SLH-DSA (slh-dsa), and the classical x25519-dalek,
//! ed25519-dalek and p256.  Randomness comes from the OS (getrandom's SysRng) inside each timed call.
use crate::{check_len, kem, sig, ImplInfo, Implementation, Kem, Res, Sig};
use getrandom::rand_core::UnwrapErr;
use getrandom::SysRng;
use ml_kem::{Decapsulate, Encapsulate, Generate, KeyExport};
use slh_dsa::signature::RandomizedSigner;

pub fn implementation() -> Implementation {
    let v = |name: &str, version: &str| format!("{name} {version}");
    let versions = [
        v("ml-kem", env!("PQ_VERSION_ML_KEM")),
        v("ml-dsa", env!("PQ_VERSION_ML_DSA")),
        v("slh-dsa", env!("PQ_VERSION_SLH_DSA")),
        v("x25519-dalek", env!("PQ_VERSION_X25519_DALEK")),
        v("ed25519-dalek", env!("PQ_VERSION_ED25519_DALEK")),
        v("p256", env!("PQ_VERSION_P256")),
    ];
    let options = format!(
        "pure Rust; ML-KEM, ML-DSA and SLH-DSA have no SIMD code (keccak {} is portable on x86-64); sha2 {} picks \
         SHA-NI (SHA-256) and AVX2 (SHA-512) at run time; curve25519-dalek {} picks its AVX2 or serial backend at \
         run time (neither reports which; host AVX2: {}); ECDSA signs with RFC 6979 nonces; randomness from the OS \
         (getrandom) inside each timed call; keys are parsed once outside the timed region and keep H(ek) (ML-KEM) \
         and the expanded matrix (ML-DSA verify), so the timed encapsulation and verification skip that work",
        env!("PQ_VERSION_KECCAK"),
        env!("PQ_VERSION_SHA2"),
        env!("PQ_VERSION_CURVE25519_DALEK"),
        crate::libcrux::host_avx2()
    );
    Implementation {
        info: ImplInfo {
            implementation: "rustcrypto",
            version: versions.join(", "),
            package: "ml-kem, ml-dsa, slh-dsa, x25519-dalek, ed25519-dalek, p256".into(),
            provenance: format!("https://crates.io/crates/ml-kem/{}", env!("PQ_VERSION_ML_KEM")),
            options,
        },
        algs: vec![
            kem(MlKem512),
            kem(MlKem768),
            kem(MlKem1024),
            sig(MlDsa44),
            sig(MlDsa65),
            sig(MlDsa87),
            sig(SlhSha2_128s),
            sig(SlhSha2_128f),
            sig(SlhSha2_192s),
            sig(SlhSha2_192f),
            sig(SlhSha2_256s),
            sig(SlhSha2_256f),
            sig(SlhShake128s),
            sig(SlhShake128f),
            sig(SlhShake192s),
            sig(SlhShake192f),
            sig(SlhShake256s),
            sig(SlhShake256f),
            kem(X25519),
            kem(EcdhP256),
            sig(Ed25519),
            sig(EcdsaP256),
        ],
    }
}

// ------------------------------------------------------------------------------------------------ ML-KEM

macro_rules! ml_kem {
    ($ty:ident, $name:expr, $m:ident) => {
        struct $ty;
        impl Kem for $ty {
            type Sk = ml_kem::$m::DecapsulationKey;
            type Pk = ml_kem::$m::EncapsulationKey;
            type CtOut = ml_kem::$m::Ciphertext;
            type Ct = ml_kem::$m::Ciphertext;
            type Ss = ml_kem::SharedKey;
            fn alg(&self) -> &'static str {
                $name
            }
            fn seeded(&self) -> &'static [&'static str] {
                &["keygen", "encaps"]
            }
            fn keygen(&self) -> Res<Self::Sk> {
                <Self::Sk>::try_generate_from_rng(&mut SysRng).map_err(|_| ())
            }
            fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
                check_len("the seed (d || z)", seed.len(), 64)?;
                let seed = ml_kem::Seed::try_from(seed).map_err(|_| "the seed has the wrong length")?;
                Ok(<Self::Sk>::from_seed(seed))
            }
            fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
                sk.encapsulation_key().to_bytes().to_vec()
            }
            fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
                let key = ml_kem::Key::<Self::Pk>::try_from(bytes).map_err(|_| {
                    format!("the public key has {} bytes, expected {}", bytes.len(), ml_kem::Key::<Self::Pk>::default().len())
                })?;
                <Self::Pk>::new(&key).map_err(|_| "ml-kem rejected the public key (FIPS 203 modulus check)".into())
            }
            fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)> {
                Ok(pk.encapsulate())
            }
            fn encaps_seeded(&self, pk: &Self::Pk, m: &[u8]) -> Result<(Self::CtOut, Self::Ss), String> {
                check_len("the seed (m)", m.len(), 32)?;
                let m = ml_kem::B32::try_from(m).map_err(|_| "the seed has the wrong length")?;
                Ok(pk.encapsulate_deterministic(&m))
            }
            fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss> {
                Ok(sk.decapsulate(ct))
            }
            fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8] {
                ct.as_slice()
            }
            fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String> {
                <Self::Ct>::try_from(bytes).map_err(|_| {
                    format!("the ciphertext has {} bytes, expected {}", bytes.len(), <Self::Ct>::default().len())
                })
            }
            fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8] {
                ss.as_slice()
            }
            fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
                (sk.to_seed().map(|s| s.to_vec()).unwrap_or_default(), "seed")
            }
        }
    };
}

ml_kem!(MlKem512, "ML-KEM-512", ml_kem_512);
ml_kem!(MlKem768, "ML-KEM-768", ml_kem_768);
ml_kem!(MlKem1024, "ML-KEM-1024", ml_kem_1024);

// ------------------------------------------------------------------------------------------------ ML-DSA

macro_rules! ml_dsa {
    ($ty:ident, $name:expr, $p:ident) => {
        struct $ty;
        impl Sig for $ty {
            type Sk = ml_dsa::SigningKey<ml_dsa::$p>;
            type Pk = ml_dsa::VerifyingKey<ml_dsa::$p>;
            type Sig = ml_dsa::EncodedSignature<ml_dsa::$p>;
            fn alg(&self) -> &'static str {
                $name
            }
            fn seeded(&self) -> &'static [&'static str] {
                &["keygen", "sign"]
            }
            fn keygen(&self) -> Res<Self::Sk> {
                <Self::Sk>::try_generate_from_rng(&mut SysRng).map_err(|_| ())
            }
            fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
                check_len("the seed (xi)", seed.len(), 32)?;
                let seed = ml_dsa::Seed::try_from(seed).map_err(|_| "the seed has the wrong length")?;
                Ok(<Self::Sk>::from_seed(&seed))
            }
            fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
                let vk: &ml_dsa::VerifyingKey<ml_dsa::$p> = sk.as_ref();
                vk.encode().to_vec()
            }
            fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
                let enc = ml_dsa::EncodedVerifyingKey::<ml_dsa::$p>::try_from(bytes).map_err(|_| {
                    format!("the public key has {} bytes, expected {}", bytes.len(),
                            ml_dsa::EncodedVerifyingKey::<ml_dsa::$p>::default().len())
                })?;
                Ok(<Self::Pk>::decode(&enc))
            }
            /// Hedged signing (rnd from the OS); `SigningKey`'s `Signer` is the deterministic variant, so this
            /// uses its expanded key's `sign_randomized`.
            fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
                let s = sk.expanded_key().sign_randomized(msg, &[], &mut SysRng).map_err(|_| ())?;
                Ok(s.encode())
            }
            fn sign_deterministic(&self, sk: &Self::Sk, msg: &[u8]) -> Result<Self::Sig, String> {
                let s = sk.expanded_key().sign_deterministic(msg, &[]).map_err(|e| format!("sign returned {e}"))?;
                Ok(s.encode())
            }
            fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
                sig.as_slice()
            }
            fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
                match ml_dsa::Signature::<ml_dsa::$p>::try_from(sig) {
                    Ok(s) => pk.verify_with_context(msg, &[], &s),
                    Err(_) => false,
                }
            }
            fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
                (sk.to_seed().to_vec(), "seed")
            }
        }
    };
}

ml_dsa!(MlDsa44, "ML-DSA-44", MlDsa44);
ml_dsa!(MlDsa65, "ML-DSA-65", MlDsa65);
ml_dsa!(MlDsa87, "ML-DSA-87", MlDsa87);

// ------------------------------------------------------------------------------------------------ SLH-DSA

macro_rules! slh_dsa {
    ($ty:ident, $name:expr, $p:ident, $n:expr) => {
        struct $ty;
        impl Sig for $ty {
            type Sk = slh_dsa::SigningKey<slh_dsa::$p>;
            type Pk = slh_dsa::VerifyingKey<slh_dsa::$p>;
            type Sig = Vec<u8>;
            fn alg(&self) -> &'static str {
                $name
            }
            fn seeded(&self) -> &'static [&'static str] {
                &["keygen", "sign"]
            }
            fn keygen(&self) -> Res<Self::Sk> {
                Ok(<Self::Sk>::new(&mut UnwrapErr(SysRng)))
            }
            /// SK.seed || SK.prf || PK.seed (FIPS 205 slh_keygen_internal).
            fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
                check_len("the seed (SK.seed || SK.prf || PK.seed)", seed.len(), 3 * $n)?;
                Ok(<Self::Sk>::slh_keygen_internal(&seed[..$n], &seed[$n..2 * $n], &seed[2 * $n..]))
            }
            fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
                let vk: &slh_dsa::VerifyingKey<slh_dsa::$p> = sk.as_ref();
                vk.to_vec()
            }
            fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
                check_len("the public key", bytes.len(), 2 * $n)?;
                <Self::Pk>::try_from(bytes).map_err(|_| "slh-dsa rejected the public key".into())
            }
            /// Hedged: opt_rand from the OS.
            fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
                sk.try_sign_with_rng(&mut SysRng, msg).map(|s| s.to_vec()).map_err(|_| ())
            }
            /// opt_rand = PK.seed.
            fn sign_deterministic(&self, sk: &Self::Sk, msg: &[u8]) -> Result<Self::Sig, String> {
                sk.try_sign_with_context(msg, &[], None).map(|s| s.to_vec()).map_err(|e| format!("sign returned {e}"))
            }
            fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
                sig
            }
            fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
                match slh_dsa::Signature::<slh_dsa::$p>::try_from(sig) {
                    Ok(s) => pk.try_verify_with_context(msg, &[], &s).is_ok(),
                    Err(_) => false,
                }
            }
            fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
                (sk.to_vec(), "FIPS 205 (SK.seed || SK.prf || PK.seed || PK.root)")
            }
        }
    };
}

slh_dsa!(SlhSha2_128s, "SLH-DSA-SHA2-128s", Sha2_128s, 16);
slh_dsa!(SlhSha2_128f, "SLH-DSA-SHA2-128f", Sha2_128f, 16);
slh_dsa!(SlhSha2_192s, "SLH-DSA-SHA2-192s", Sha2_192s, 24);
slh_dsa!(SlhSha2_192f, "SLH-DSA-SHA2-192f", Sha2_192f, 24);
slh_dsa!(SlhSha2_256s, "SLH-DSA-SHA2-256s", Sha2_256s, 32);
slh_dsa!(SlhSha2_256f, "SLH-DSA-SHA2-256f", Sha2_256f, 32);
slh_dsa!(SlhShake128s, "SLH-DSA-SHAKE-128s", Shake128s, 16);
slh_dsa!(SlhShake128f, "SLH-DSA-SHAKE-128f", Shake128f, 16);
slh_dsa!(SlhShake192s, "SLH-DSA-SHAKE-192s", Shake192s, 24);
slh_dsa!(SlhShake192f, "SLH-DSA-SHAKE-192f", Shake192f, 24);
slh_dsa!(SlhShake256s, "SLH-DSA-SHAKE-256s", Shake256s, 32);
slh_dsa!(SlhShake256f, "SLH-DSA-SHAKE-256f", Shake256f, 32);

// ------------------------------------------------------------------------------------------------ X25519

struct X25519;

impl Kem for X25519 {
    type Sk = (x25519_dalek::StaticSecret, x25519_dalek::PublicKey);
    type Pk = x25519_dalek::PublicKey;
    type CtOut = x25519_dalek::PublicKey;
    type Ct = x25519_dalek::PublicKey;
    type Ss = x25519_dalek::SharedSecret;
    fn alg(&self) -> &'static str {
        "X25519"
    }
    fn is_dh(&self) -> bool {
        true
    }
    fn keygen(&self) -> Res<Self::Sk> {
        let sk = x25519_dalek::StaticSecret::random_from_rng(&mut UnwrapErr(SysRng));
        let pk = x25519_dalek::PublicKey::from(&sk);
        Ok((sk, pk))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.1.as_bytes().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        let b: [u8; 32] = bytes.try_into().map_err(|_| format!("the public key has {} bytes, expected 32", bytes.len()))?;
        Ok(x25519_dalek::PublicKey::from(b))
    }
    fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)> {
        let eph = x25519_dalek::EphemeralSecret::random_from_rng(&mut UnwrapErr(SysRng));
        let eph_pub = x25519_dalek::PublicKey::from(&eph);
        Ok((eph_pub, eph.diffie_hellman(pk)))
    }
    fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss> {
        Ok(sk.0.diffie_hellman(ct))
    }
    fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8] {
        ct.as_bytes()
    }
    fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String> {
        let b: [u8; 32] = bytes.try_into().map_err(|_| format!("the ciphertext has {} bytes, expected 32", bytes.len()))?;
        Ok(x25519_dalek::PublicKey::from(b))
    }
    fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8] {
        ss.as_bytes()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        (sk.0.to_bytes().to_vec(), "raw")
    }
}

// ------------------------------------------------------------------------------------------------ ECDH-P256

struct EcdhP256;

fn p256_point(what: &str, bytes: &[u8]) -> Result<p256::PublicKey, String> {
    check_len(what, bytes.len(), 65)?;
    if bytes[0] != 4 {
        return Err(format!("{what} is not an uncompressed SEC 1 point (first byte 0x04)"));
    }
    p256::PublicKey::from_sec1_bytes(bytes).map_err(|_| format!("{what} is not a point of P-256"))
}

impl Kem for EcdhP256 {
    type Sk = (p256::SecretKey, p256::PublicKey);
    type Pk = p256::PublicKey;
    type CtOut = Box<[u8]>;
    type Ct = Vec<u8>;
    type Ss = p256::ecdh::SharedSecret;
    fn alg(&self) -> &'static str {
        "ECDH-P256"
    }
    fn is_dh(&self) -> bool {
        true
    }
    fn keygen(&self) -> Res<Self::Sk> {
        let sk = p256::SecretKey::try_generate_from_rng(&mut SysRng).map_err(|_| ())?;
        let pk = sk.public_key();
        Ok((sk, pk))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.1.to_sec1_bytes().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        p256_point("the public key", bytes)
    }
    fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)> {
        let eph = p256::ecdh::EphemeralSecret::try_generate_from_rng(&mut SysRng).map_err(|_| ())?;
        let eph_pub = eph.public_key().to_sec1_bytes();
        Ok((eph_pub, eph.diffie_hellman(pk)))
    }
    /// Decoding and checking the peer's point is part of the call.
    fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss> {
        let peer = p256::PublicKey::from_sec1_bytes(ct).map_err(|_| ())?;
        Ok(p256::ecdh::diffie_hellman(sk.0.to_nonzero_scalar(), peer.as_affine()))
    }
    fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8] {
        ct
    }
    fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String> {
        p256_point("the ciphertext (ephemeral public key)", bytes)?;
        Ok(bytes.to_vec())
    }
    fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8] {
        ss.raw_secret_bytes().as_slice()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        (sk.0.to_bytes().to_vec(), "raw")
    }
}

// ------------------------------------------------------------------------------------------------ Ed25519

struct Ed25519;

impl Sig for Ed25519 {
    type Sk = ed25519_dalek::SigningKey;
    type Pk = ed25519_dalek::VerifyingKey;
    type Sig = [u8; 64];
    fn alg(&self) -> &'static str {
        "Ed25519"
    }
    fn seeded(&self) -> &'static [&'static str] {
        &["keygen", "sign"]
    }
    /// A random 32-byte secret key, expanded (and its public key computed) by `SigningKey::from_bytes`.
    fn keygen(&self) -> Res<Self::Sk> {
        let mut seed = [0u8; 32];
        getrandom::fill(&mut seed).map_err(|_| ())?;
        Ok(ed25519_dalek::SigningKey::from_bytes(&seed))
    }
    fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
        let s: [u8; 32] = seed.try_into().map_err(|_| format!("the seed has {} bytes, expected 32", seed.len()))?;
        Ok(ed25519_dalek::SigningKey::from_bytes(&s))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.verifying_key().to_bytes().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        let b: [u8; 32] = bytes.try_into().map_err(|_| format!("the public key has {} bytes, expected 32", bytes.len()))?;
        ed25519_dalek::VerifyingKey::from_bytes(&b).map_err(|_| "the public key is not a point of Ed25519".into())
    }
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
        use ed25519_dalek::Signer;
        sk.try_sign(msg).map(|s| s.to_bytes()).map_err(|_| ())
    }
    fn sign_deterministic(&self, sk: &Self::Sk, msg: &[u8]) -> Result<Self::Sig, String> {
        self.sign(sk, msg).map_err(|_| "sign returned an error".into())
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
        sig
    }
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
        use ed25519_dalek::Verifier;
        match ed25519_dalek::Signature::from_slice(sig) {
            Ok(s) => pk.verify(msg, &s).is_ok(),
            Err(_) => false,
        }
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        (sk.to_bytes().to_vec(), "seed")
    }
}

// ------------------------------------------------------------------------------------------------ ECDSA-P256

struct EcdsaP256;

impl Sig for EcdsaP256 {
    type Sk = p256::ecdsa::SigningKey;
    type Pk = p256::ecdsa::VerifyingKey;
    type Sig = p256::ecdsa::DerSignature;
    fn alg(&self) -> &'static str {
        "ECDSA-P256"
    }
    fn keygen(&self) -> Res<Self::Sk> {
        p256::ecdsa::SigningKey::try_generate_from_rng(&mut SysRng).map_err(|_| ())
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.verifying_key().to_sec1_bytes().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        let point = p256_point("the public key", bytes)?;
        Ok(p256::ecdsa::VerifyingKey::from(point))
    }
    /// The crate's `Signer`: SHA-256, RFC 6979 deterministic nonce, DER output.
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
        use p256::ecdsa::signature::Signer;
        sk.try_sign(msg).map_err(|_| ())
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
        sig.as_bytes()
    }
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
        use p256::ecdsa::signature::Verifier;
        match p256::ecdsa::DerSignature::from_bytes(sig) {
            Ok(s) => pk.verify(msg, &s).is_ok(),
            Err(_) => false,
        }
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        (sk.to_bytes().to_vec(), "raw")
    }
}
