//! aws-lc-rs: AWS-LC (C and assembly) behind a Rust API.
use crate::{check_len, kem, sig, ImplInfo, Implementation, Kem, Res, Sig};
use aws_lc_rs::agreement;
use aws_lc_rs::encoding::{AsBigEndian, AsDer, AsRawBytes, Curve25519SeedBin, EcPrivateKeyBin};
use aws_lc_rs::kem as lckem;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::KeySize;
use aws_lc_rs::signature::{self, KeyPair as _, ParsedPublicKey};
use std::ffi::CStr;

pub fn implementation() -> Implementation {
    let version = env!("PQ_VERSION_AWS_LC_RS").to_string();
    // What AWS-LC itself says: its version and whether it was built with assembly.  It picks its x86-64 code
    // (AVX2/BMI2/ADX paths, and the AVX2 backends of ML-KEM and ML-DSA) from CPUID at run time and does not
    // report which ones run.
    let (awslc, has_asm) = unsafe {
        let v = aws_lc_sys::OpenSSL_version(aws_lc_sys::OPENSSL_VERSION as i32);
        let text = if v.is_null() { String::new() } else { CStr::from_ptr(v).to_string_lossy().into_owned() };
        (text, aws_lc_sys::CRYPTO_has_asm() == 1)
    };
    let options = format!(
        "{awslc}; aws-lc-sys {} built from source (non-FIPS); assembly: {}; CPU features picked at run time by \
         AWS-LC (not reported); host AVX2: {}",
        env!("PQ_VERSION_AWS_LC_SYS"),
        if has_asm { "yes" } else { "no" },
        crate::libcrux::host_avx2()
    );
    Implementation {
        info: ImplInfo {
            implementation: "aws-lc-rs",
            provenance: format!("https://crates.io/crates/aws-lc-rs/{version}"),
            version,
            package: "aws-lc-rs".into(),
            options,
        },
        algs: vec![
            kem(MlKem { name: "ML-KEM-512", alg: &lckem::ML_KEM_512, pk_len: 800, ct_len: 768 }),
            kem(MlKem { name: "ML-KEM-768", alg: &lckem::ML_KEM_768, pk_len: 1184, ct_len: 1088 }),
            kem(MlKem { name: "ML-KEM-1024", alg: &lckem::ML_KEM_1024, pk_len: 1568, ct_len: 1568 }),
            sig(MlDsa { name: "ML-DSA-44", signing: &signature::ML_DSA_44_SIGNING, verifying: &signature::ML_DSA_44 }),
            sig(MlDsa { name: "ML-DSA-65", signing: &signature::ML_DSA_65_SIGNING, verifying: &signature::ML_DSA_65 }),
            sig(MlDsa { name: "ML-DSA-87", signing: &signature::ML_DSA_87_SIGNING, verifying: &signature::ML_DSA_87 }),
            kem(Dh { name: "X25519", alg: &agreement::X25519, pk_len: 32 }),
            kem(Dh { name: "ECDH-P256", alg: &agreement::ECDH_P256, pk_len: 65 }),
            sig(Ed25519),
            sig(EcdsaP256 { rng: SystemRandom::new() }),
            sig(Rsa { name: "RSA-2048-PKCS1v15-sig", size: KeySize::Rsa2048, rng: SystemRandom::new() }),
            sig(Rsa { name: "RSA-3072-PKCS1v15-sig", size: KeySize::Rsa3072, rng: SystemRandom::new() }),
        ],
    }
}

// ------------------------------------------------------------------------------------------------ ML-KEM

struct MlKem {
    name: &'static str,
    alg: &'static lckem::Algorithm<lckem::AlgorithmId>,
    /// FIPS 203 sizes (aws-lc-rs keeps its own private)
    pk_len: usize,
    ct_len: usize,
}

impl Kem for MlKem {
    type Sk = lckem::DecapsulationKey<lckem::AlgorithmId>;
    type Pk = lckem::EncapsulationKey<lckem::AlgorithmId>;
    type CtOut = lckem::Ciphertext<'static>;
    type Ct = Vec<u8>;
    type Ss = lckem::SharedSecret;
    fn alg(&self) -> &'static str {
        self.name
    }
    fn keygen(&self) -> Res<Self::Sk> {
        lckem::DecapsulationKey::generate(self.alg).map_err(|_| ())
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        let ek = sk.encapsulation_key().expect("encapsulation key of a generated key");
        ek.key_bytes().expect("encapsulation key bytes").as_ref().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        check_len("the public key", bytes.len(), self.pk_len)?;
        lckem::EncapsulationKey::new(self.alg, bytes).map_err(|e| format!("aws-lc-rs rejected the public key: {e}"))
    }
    fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)> {
        pk.encapsulate().map_err(|_| ())
    }
    fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss> {
        sk.decapsulate(lckem::Ciphertext::from(ct.as_slice())).map_err(|_| ())
    }
    fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8] {
        ct.as_ref()
    }
    fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String> {
        check_len("the ciphertext", bytes.len(), self.ct_len)?;
        Ok(bytes.to_vec())
    }
    fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8] {
        ss.as_ref()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        (sk.key_bytes().map(|b| b.as_ref().to_vec()).unwrap_or_default(), "expanded")
    }
}

// ------------------------------------------------------------------------------------------------ ML-DSA

struct MlDsa {
    name: &'static str,
    signing: &'static signature::PqdsaSigningAlgorithm,
    verifying: &'static signature::PqdsaVerificationAlgorithm,
}

impl Sig for MlDsa {
    type Sk = signature::PqdsaKeyPair;
    type Pk = ParsedPublicKey;
    type Sig = Vec<u8>;
    fn alg(&self) -> &'static str {
        self.name
    }
    fn seeded(&self) -> &'static [&'static str] {
        &["keygen"]
    }
    fn keygen(&self) -> Res<Self::Sk> {
        signature::PqdsaKeyPair::generate(self.signing).map_err(|_| ())
    }
    fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
        check_len("the seed", seed.len(), 32)?;
        signature::PqdsaKeyPair::from_seed(self.signing, seed).map_err(|e| format!("from_seed failed: {e}"))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.public_key().as_ref().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        check_len("the public key", bytes.len(), self.signing.public_key_len())?;
        ParsedPublicKey::new(self.verifying, bytes).map_err(|e| format!("aws-lc-rs rejected the public key: {e}"))
    }
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
        let mut out = vec![0u8; self.signing.signature_len()];
        let n = sk.sign(msg, &mut out).map_err(|_| ())?;
        out.truncate(n);
        Ok(out)
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
        sig
    }
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
        pk.verify_sig(msg, sig).is_ok()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        let raw = sk.private_key().as_raw_bytes().map(|b| b.as_ref().to_vec()).unwrap_or_default();
        (raw, "expanded")
    }
}

// ------------------------------------------------------------------------------------------------ X25519, ECDH-P256

struct Dh {
    name: &'static str,
    alg: &'static agreement::Algorithm,
    pk_len: usize,
}

fn secret32(s: &[u8]) -> Result<[u8; 32], ()> {
    s.try_into().map_err(|_| ())
}

impl Kem for Dh {
    type Sk = (agreement::PrivateKey, agreement::PublicKey);
    type Pk = agreement::ParsedPublicKey;
    type CtOut = agreement::PublicKey;
    type Ct = Vec<u8>;
    type Ss = [u8; 32];
    fn alg(&self) -> &'static str {
        self.name
    }
    fn is_dh(&self) -> bool {
        true
    }
    fn keygen(&self) -> Res<Self::Sk> {
        let sk = agreement::PrivateKey::generate(self.alg).map_err(|_| ())?;
        let pk = sk.compute_public_key().map_err(|_| ())?;
        Ok((sk, pk))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.1.as_ref().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        check_len("the public key", bytes.len(), self.pk_len)?;
        if self.pk_len == 65 && bytes[0] != 4 {
            return Err("the public key is not an uncompressed SEC 1 point (first byte 0x04)".into());
        }
        agreement::ParsedPublicKey::try_from(agreement::UnparsedPublicKey::new(self.alg, bytes))
            .map_err(|e| format!("aws-lc-rs rejected the public key: {e}"))
    }
    /// An ephemeral key pair; its public key is the ciphertext, DH(ephemeral, static public) the secret.
    fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)> {
        let eph = agreement::PrivateKey::generate(self.alg).map_err(|_| ())?;
        let eph_pub = eph.compute_public_key().map_err(|_| ())?;
        let ss = agreement::agree(&eph, pk.clone(), (), secret32)?;
        Ok((eph_pub, ss))
    }
    fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss> {
        agreement::agree(&sk.0, agreement::UnparsedPublicKey::new(self.alg, ct.as_slice()), (), secret32)
    }
    fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8] {
        ct.as_ref()
    }
    fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String> {
        check_len("the ciphertext (ephemeral public key)", bytes.len(), self.pk_len)?;
        Ok(bytes.to_vec())
    }
    fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8] {
        ss
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        let raw = if self.pk_len == 32 {
            AsBigEndian::<Curve25519SeedBin>::as_be_bytes(&sk.0).map(|b| b.as_ref().to_vec())
        } else {
            AsBigEndian::<EcPrivateKeyBin>::as_be_bytes(&sk.0).map(|b| b.as_ref().to_vec())
        };
        (raw.unwrap_or_default(), "raw")
    }
}

// ------------------------------------------------------------------------------------------------ Ed25519

struct Ed25519;

impl Sig for Ed25519 {
    type Sk = signature::Ed25519KeyPair;
    type Pk = ParsedPublicKey;
    type Sig = signature::Signature;
    fn alg(&self) -> &'static str {
        "Ed25519"
    }
    fn seeded(&self) -> &'static [&'static str] {
        &["keygen", "sign"]
    }
    fn keygen(&self) -> Res<Self::Sk> {
        signature::Ed25519KeyPair::generate().map_err(|_| ())
    }
    fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
        check_len("the seed", seed.len(), 32)?;
        signature::Ed25519KeyPair::from_seed_unchecked(seed).map_err(|e| format!("from_seed_unchecked failed: {e}"))
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.public_key().as_ref().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        check_len("the public key", bytes.len(), 32)?;
        ParsedPublicKey::new(&signature::ED25519, bytes).map_err(|e| format!("aws-lc-rs rejected the public key: {e}"))
    }
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
        sk.try_sign(msg).map_err(|_| ())
    }
    fn sign_deterministic(&self, sk: &Self::Sk, msg: &[u8]) -> Result<Self::Sig, String> {
        sk.try_sign(msg).map_err(|_| "sign returned an error".into())
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
        sig.as_ref()
    }
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
        pk.verify_sig(msg, sig).is_ok()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        let seed = sk.seed().and_then(|s| AsBigEndian::<Curve25519SeedBin>::as_be_bytes(&s));
        (seed.map(|b| b.as_ref().to_vec()).unwrap_or_default(), "seed")
    }
}

// ------------------------------------------------------------------------------------------------ ECDSA-P256

struct EcdsaP256 {
    rng: SystemRandom,
}

impl Sig for EcdsaP256 {
    type Sk = signature::EcdsaKeyPair;
    type Pk = ParsedPublicKey;
    type Sig = signature::Signature;
    fn alg(&self) -> &'static str {
        "ECDSA-P256"
    }
    fn keygen(&self) -> Res<Self::Sk> {
        signature::EcdsaKeyPair::generate(&signature::ECDSA_P256_SHA256_ASN1_SIGNING).map_err(|_| ())
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.public_key().as_ref().to_vec()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        check_len("the public key", bytes.len(), 65)?;
        if bytes[0] != 4 {
            return Err("the public key is not an uncompressed SEC 1 point (first byte 0x04)".into());
        }
        ParsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, bytes)
            .map_err(|e| format!("aws-lc-rs rejected the public key: {e}"))
    }
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
        sk.sign(&self.rng, msg).map_err(|_| ())
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
        sig.as_ref()
    }
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
        pk.verify_sig(msg, sig).is_ok()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        let raw = AsBigEndian::<EcPrivateKeyBin>::as_be_bytes(&sk.private_key());
        (raw.map(|b| b.as_ref().to_vec()).unwrap_or_default(), "raw")
    }
}

// ------------------------------------------------------------------------------------------------ RSA PKCS #1 v1.5

struct Rsa {
    name: &'static str,
    size: KeySize,
    rng: SystemRandom,
}

impl Sig for Rsa {
    type Sk = signature::RsaKeyPair;
    type Pk = ParsedPublicKey;
    type Sig = Vec<u8>;
    fn alg(&self) -> &'static str {
        self.name
    }
    fn keygen(&self) -> Res<Self::Sk> {
        signature::RsaKeyPair::generate(self.size).map_err(|_| ())
    }
    fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
        sk.public_key().as_der().map(|d| d.as_ref().to_vec()).unwrap_or_default()
    }
    fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
        let pk = ParsedPublicKey::new(&signature::RSA_PKCS1_2048_8192_SHA256, bytes)
            .map_err(|e| format!("aws-lc-rs rejected the public key: {e}"))?;
        // Only a SubjectPublicKeyInfo of this size (aws-lc-rs would also take a bare RSAPublicKey).
        let spki = pk.as_der().map_err(|_| "the public key does not re-encode")?;
        if spki.as_ref() != bytes {
            return Err("the public key is not a DER SubjectPublicKeyInfo".into());
        }
        let modulus = aws_lc_rs::rsa::PublicKey::from_der(bytes).map(|k| k.modulus_len()).unwrap_or(0);
        check_len("the modulus", modulus, self.size.len())?;
        Ok(pk)
    }
    fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
        let mut out = vec![0u8; sk.public_modulus_len()];
        sk.sign(&signature::RSA_PKCS1_SHA256, &self.rng, msg, &mut out).map_err(|_| ())?;
        Ok(out)
    }
    fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
        sig
    }
    fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
        pk.verify_sig(msg, sig).is_ok()
    }
    fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
        let der: Result<aws_lc_rs::encoding::Pkcs8V1Der, _> = sk.as_der();
        (der.map(|d| d.as_ref().to_vec()).unwrap_or_default(), "PKCS#8 DER")
    }
}
