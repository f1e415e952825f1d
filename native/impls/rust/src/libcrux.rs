//! libcrux (Cryspen): formally verified ML-KEM and ML-DSA in Rust.  Its APIs are deterministic (they take the
//! randomness as an argument); the ordinary calls here fill it from the OS random number generator (getrandom),
//! which is part of each timed call, and the seeded ones take the caller's bytes.
use crate::{check_len, kem, sig, ImplInfo, Implementation, Kem, Res, Sig};

/// Whether this CPU has AVX2, as the Rust standard library detects it (for the options text).
pub fn host_avx2() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            "yes"
        } else {
            "no"
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        "n/a (not x86-64)"
    }
}

pub fn implementation() -> Implementation {
    let kem_v = env!("PQ_VERSION_LIBCRUX_ML_KEM");
    let dsa_v = env!("PQ_VERSION_LIBCRUX_ML_DSA");
    // libcrux's build adds its AVX2 code on every x86-64 build (and this crate asks for it: feature simd256);
    // libcrux-platform decides at run time, on every call, whether it runs.  It is the same check the crates make.
    let built = if cfg!(target_arch = "x86_64") {
        "simd256 (AVX2) and portable code built"
    } else if cfg!(target_arch = "aarch64") {
        "simd128 (NEON) and portable code built"
    } else {
        "portable code built"
    };
    let runs = if libcrux_platform::simd256_support() && cfg!(target_arch = "x86_64") {
        "AVX2"
    } else if cfg!(target_arch = "aarch64") && libcrux_platform::simd128_support() {
        "NEON"
    } else {
        "portable"
    };
    let options = format!(
        "{built}; libcrux-platform {} run-time check: AVX2 {} -> the {runs} path runs (ML-KEM and ML-DSA); \
         randomness from getrandom {} (OS) inside each timed call; the timed encapsulation does not check the \
         public key (libcrux leaves FIPS 203's modulus check to validate_public_key, which serve calls)",
        env!("PQ_VERSION_LIBCRUX_PLATFORM"),
        if libcrux_platform::simd256_support() { "yes" } else { "no" },
        env!("PQ_VERSION_GETRANDOM")
    );
    Implementation {
        info: ImplInfo {
            implementation: "libcrux",
            version: format!("libcrux-ml-kem {kem_v}, libcrux-ml-dsa {dsa_v}"),
            package: "libcrux-ml-kem, libcrux-ml-dsa".into(),
            provenance: format!("https://crates.io/crates/libcrux-ml-kem/{kem_v}"),
            options,
        },
        algs: vec![
            kem(MlKem512),
            kem(MlKem768),
            kem(MlKem1024),
            sig(MlDsa44),
            sig(MlDsa65),
            sig(MlDsa87),
        ],
    }
}

fn random<const N: usize>() -> Res<[u8; N]> {
    let mut r = [0u8; N];
    getrandom::fill(&mut r).map_err(|_| ())?;
    Ok(r)
}

fn array<const N: usize>(what: &str, bytes: &[u8]) -> Result<[u8; N], String> {
    check_len(what, bytes.len(), N)?;
    Ok(bytes.try_into().expect("length checked"))
}

macro_rules! ml_kem {
    ($ty:ident, $name:expr, $m:ident, $kp:ident, $pk:ident, $ct:ident) => {
        struct $ty;
        impl Kem for $ty {
            type Sk = libcrux_ml_kem::$m::$kp;
            type Pk = libcrux_ml_kem::$m::$pk;
            type CtOut = libcrux_ml_kem::$m::$ct;
            type Ct = libcrux_ml_kem::$m::$ct;
            type Ss = libcrux_ml_kem::MlKemSharedSecret;
            fn alg(&self) -> &'static str {
                $name
            }
            fn seeded(&self) -> &'static [&'static str] {
                &["keygen", "encaps"]
            }
            fn keygen(&self) -> Res<Self::Sk> {
                Ok(libcrux_ml_kem::$m::generate_key_pair(random::<64>()?))
            }
            fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
                Ok(libcrux_ml_kem::$m::generate_key_pair(array::<64>("the seed (d || z)", seed)?))
            }
            fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
                sk.pk().to_vec()
            }
            fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
                check_len("the public key", bytes.len(), <Self::Pk>::default().as_ref().len())?;
                let pk = <Self::Pk>::try_from(bytes).map_err(|_| "the public key has the wrong length")?;
                // libcrux leaves FIPS 203's encapsulation-key check to the caller.
                if !libcrux_ml_kem::$m::validate_public_key(&pk) {
                    return Err("the public key fails FIPS 203's modulus check".into());
                }
                Ok(pk)
            }
            fn encaps(&self, pk: &Self::Pk) -> Res<(Self::CtOut, Self::Ss)> {
                Ok(libcrux_ml_kem::$m::encapsulate(pk, random::<32>()?))
            }
            fn encaps_seeded(&self, pk: &Self::Pk, m: &[u8]) -> Result<(Self::CtOut, Self::Ss), String> {
                Ok(libcrux_ml_kem::$m::encapsulate(pk, array::<32>("the seed (m)", m)?))
            }
            fn decaps(&self, sk: &Self::Sk, ct: &Self::Ct) -> Res<Self::Ss> {
                Ok(libcrux_ml_kem::$m::decapsulate(sk.private_key(), ct))
            }
            fn ct_bytes<'a>(&self, ct: &'a Self::CtOut) -> &'a [u8] {
                ct.as_ref()
            }
            fn ct_from_bytes(&self, bytes: &[u8]) -> Result<Self::Ct, String> {
                check_len("the ciphertext", bytes.len(), <Self::Ct>::default().as_ref().len())?;
                <Self::Ct>::try_from(bytes).map_err(|_| "the ciphertext has the wrong length".into())
            }
            fn ss_bytes<'a>(&self, ss: &'a Self::Ss) -> &'a [u8] {
                ss
            }
            fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
                (sk.sk().to_vec(), "expanded")
            }
        }
    };
}

ml_kem!(MlKem512, "ML-KEM-512", mlkem512, MlKem512KeyPair, MlKem512PublicKey, MlKem512Ciphertext);
ml_kem!(MlKem768, "ML-KEM-768", mlkem768, MlKem768KeyPair, MlKem768PublicKey, MlKem768Ciphertext);
ml_kem!(MlKem1024, "ML-KEM-1024", mlkem1024, MlKem1024KeyPair, MlKem1024PublicKey, MlKem1024Ciphertext);

macro_rules! ml_dsa {
    ($ty:ident, $name:expr, $m:ident, $kp:ident, $vk:ident, $sig:ident) => {
        struct $ty;
        impl Sig for $ty {
            type Sk = libcrux_ml_dsa::$m::$kp;
            type Pk = libcrux_ml_dsa::$m::$vk;
            type Sig = libcrux_ml_dsa::$m::$sig;
            fn alg(&self) -> &'static str {
                $name
            }
            fn seeded(&self) -> &'static [&'static str] {
                &["keygen", "sign"]
            }
            fn keygen(&self) -> Res<Self::Sk> {
                Ok(libcrux_ml_dsa::$m::generate_key_pair(random::<32>()?))
            }
            fn keygen_seeded(&self, seed: &[u8]) -> Result<Self::Sk, String> {
                Ok(libcrux_ml_dsa::$m::generate_key_pair(array::<32>("the seed (xi)", seed)?))
            }
            fn public_bytes(&self, sk: &Self::Sk) -> Vec<u8> {
                sk.verification_key.as_slice().to_vec()
            }
            fn pk_from_bytes(&self, bytes: &[u8]) -> Result<Self::Pk, String> {
                let mut pk = <Self::Pk>::zero();
                check_len("the public key", bytes.len(), pk.as_slice().len())?;
                pk.as_mut_slice().copy_from_slice(bytes);
                Ok(pk)
            }
            /// Hedged: rnd from the OS.
            fn sign(&self, sk: &Self::Sk, msg: &[u8]) -> Res<Self::Sig> {
                libcrux_ml_dsa::$m::sign(&sk.signing_key, msg, b"", random::<32>()?).map_err(|_| ())
            }
            fn sign_deterministic(&self, sk: &Self::Sk, msg: &[u8]) -> Result<Self::Sig, String> {
                libcrux_ml_dsa::$m::sign(&sk.signing_key, msg, b"", [0u8; 32])
                    .map_err(|e| format!("sign returned {e:?}"))
            }
            fn sig_bytes<'a>(&self, sig: &'a Self::Sig) -> &'a [u8] {
                sig.as_slice()
            }
            fn verify(&self, pk: &Self::Pk, msg: &[u8], sig: &[u8]) -> bool {
                let mut s = <Self::Sig>::zero();
                if sig.len() != s.as_slice().len() {
                    return false;
                }
                s.as_mut_slice().copy_from_slice(sig);
                libcrux_ml_dsa::$m::verify(pk, msg, b"", &s).is_ok()
            }
            fn sk_bytes(&self, sk: &Self::Sk) -> (Vec<u8>, &'static str) {
                (sk.signing_key.as_slice().to_vec(), "expanded")
            }
        }
    };
}

ml_dsa!(MlDsa44, "ML-DSA-44", ml_dsa_44, MLDSA44KeyPair, MLDSA44VerificationKey, MLDSA44Signature);
ml_dsa!(MlDsa65, "ML-DSA-65", ml_dsa_65, MLDSA65KeyPair, MLDSA65VerificationKey, MLDSA65Signature);
ml_dsa!(MlDsa87, "ML-DSA-87", ml_dsa_87, MLDSA87KeyPair, MLDSA87VerificationKey, MLDSA87Signature);
