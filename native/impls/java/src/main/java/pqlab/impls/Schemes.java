package pqlab.impls;

import java.math.BigInteger;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.bouncycastle.asn1.x9.X9ECParameters;
import org.bouncycastle.crypto.AsymmetricCipherKeyPair;
import org.bouncycastle.crypto.SecretWithEncapsulation;
import org.bouncycastle.crypto.agreement.ECDHBasicAgreement;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.ec.CustomNamedCurves;
import org.bouncycastle.crypto.generators.ECKeyPairGenerator;
import org.bouncycastle.crypto.generators.MLDSAKeyPairGenerator;
import org.bouncycastle.crypto.generators.MLKEMKeyPairGenerator;
import org.bouncycastle.crypto.generators.RSAKeyPairGenerator;
import org.bouncycastle.crypto.generators.SLHDSAKeyPairGenerator;
import org.bouncycastle.crypto.kems.MLKEMExtractor;
import org.bouncycastle.crypto.kems.MLKEMGenerator;
import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.crypto.params.ECDomainParameters;
import org.bouncycastle.crypto.params.ECKeyGenerationParameters;
import org.bouncycastle.crypto.params.ECPrivateKeyParameters;
import org.bouncycastle.crypto.params.ECPublicKeyParameters;
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;
import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters;
import org.bouncycastle.crypto.params.MLDSAKeyGenerationParameters;
import org.bouncycastle.crypto.params.MLDSAParameters;
import org.bouncycastle.crypto.params.MLDSAPrivateKeyParameters;
import org.bouncycastle.crypto.params.MLDSAPublicKeyParameters;
import org.bouncycastle.crypto.params.MLKEMKeyGenerationParameters;
import org.bouncycastle.crypto.params.MLKEMParameters;
import org.bouncycastle.crypto.params.MLKEMPrivateKeyParameters;
import org.bouncycastle.crypto.params.MLKEMPublicKeyParameters;
import org.bouncycastle.crypto.params.ParametersWithRandom;
import org.bouncycastle.crypto.params.RSAKeyGenerationParameters;
import org.bouncycastle.crypto.params.RSAKeyParameters;
import org.bouncycastle.crypto.params.SLHDSAKeyGenerationParameters;
import org.bouncycastle.crypto.params.SLHDSAParameters;
import org.bouncycastle.crypto.params.SLHDSAPrivateKeyParameters;
import org.bouncycastle.crypto.params.SLHDSAPublicKeyParameters;
import org.bouncycastle.crypto.params.X25519PrivateKeyParameters;
import org.bouncycastle.crypto.params.X25519PublicKeyParameters;
import org.bouncycastle.crypto.signers.DSADigestSigner;
import org.bouncycastle.crypto.signers.ECDSASigner;
import org.bouncycastle.crypto.signers.Ed25519Signer;
import org.bouncycastle.crypto.signers.HMacDSAKCalculator;
import org.bouncycastle.crypto.signers.MLDSASigner;
import org.bouncycastle.crypto.signers.RSADigestSigner;
import org.bouncycastle.crypto.signers.SLHDSASigner;
import org.bouncycastle.crypto.util.PrivateKeyInfoFactory;
import org.bouncycastle.crypto.util.PublicKeyFactory;
import org.bouncycastle.crypto.util.SubjectPublicKeyInfoFactory;
import org.bouncycastle.jcajce.provider.asymmetric.util.PrimeCertaintyCalculator;
import org.bouncycastle.math.ec.ECPoint;
import org.bouncycastle.util.BigIntegers;

/**
 * Every algorithm of the program, through Bouncy Castle's lightweight API (org.bouncycastle.crypto.*), behind one
 * uniform interface: {@link Kem} (keygen / encaps / decaps) and {@link Sig} (keygen / sign / verify).
 *
 * The objects a caller prepares once for a key (an initialised Signer, an MLKEMExtractor, an ECDH agreement) are
 * made by {@code signer()/verifier()/encapsulator()/decapsulator()} outside the timed region; the timed call is the
 * operation on them (update + generateSignature, extractSecret, ...).
 */
final class Schemes {
    private Schemes() {}

    /** The one random source of the program (the platform's default SecureRandom). */
    static final SecureRandom RNG = new SecureRandom();

    /** A key pair in Bouncy Castle's parameter objects. */
    static final class Keys {
        final AsymmetricKeyParameter pub, priv;

        Keys(AsymmetricKeyParameter pub, AsymmetricKeyParameter priv) { this.pub = pub; this.priv = priv; }

        Keys(AsymmetricCipherKeyPair kp) { this(kp.getPublic(), kp.getPrivate()); }
    }

    /** One algorithm: its protocol name, kind, the operations a caller may seed, and its key encodings. */
    abstract static class Scheme {
        final String name, kind, skFormat;
        final List<String> seeded;
        /** The seed length `keygen` takes (0: not seeded). */
        final int keygenSeedBytes;

        Scheme(String name, String kind, String skFormat, int keygenSeedBytes, String... seeded) {
            this.name = name; this.kind = kind; this.skFormat = skFormat; this.keygenSeedBytes = keygenSeedBytes;
            this.seeded = List.of(seeded);
        }

        abstract Keys keygen() throws Exception;

        /** Key generation from the caller's seed (only for schemes with "keygen" in seeded). */
        Keys keygenFromSeed(byte[] seed) throws Exception {
            throw new IllegalArgumentException(name + " takes no keygen seed here");
        }

        abstract byte[] publicKeyBytes(Keys k);

        abstract byte[] secretKeyBytes(Keys k) throws Exception;

        /** The public key from its protocol encoding; IllegalArgumentException (or another exception) when malformed. */
        abstract AsymmetricKeyParameter parsePublicKey(byte[] pk) throws Exception;

        String[] operations() {
            return kind.equals("kem") ? new String[]{"keygen", "encaps", "decaps"} : new String[]{"keygen", "sign", "verify"};
        }
    }

    abstract static class Kem extends Scheme {
        /** Diffie-Hellman as a KEM: no implicit rejection to check. */
        final boolean dh;

        Kem(String name, String skFormat, boolean dh, int keygenSeedBytes, String... seeded) {
            super(name, "kem", skFormat, keygenSeedBytes, seeded);
            this.dh = dh;
        }

        interface Encapsulator { byte[][] encaps() throws Exception; }  // {ciphertext, shared secret}

        interface Decapsulator { byte[] decaps(byte[] ct) throws Exception; }

        abstract Encapsulator encapsulator(AsymmetricKeyParameter pub);

        byte[][] encapsFromSeed(AsymmetricKeyParameter pub, byte[] m) throws Exception {
            throw new IllegalArgumentException(name + " takes no encaps seed here");
        }

        abstract Decapsulator decapsulator(Keys k);
    }

    abstract static class Sig extends Scheme {
        Sig(String name, String skFormat, int keygenSeedBytes, String... seeded) {
            super(name, "sig", skFormat, keygenSeedBytes, seeded);
        }

        interface SignFn { byte[] sign(byte[] msg) throws Exception; }

        interface VerifyFn { boolean verify(byte[] msg, byte[] sig) throws Exception; }

        /** A signer for the key; deterministic only when "sign" is in seeded. */
        abstract SignFn signer(Keys k, boolean deterministic);

        abstract VerifyFn verifier(AsymmetricKeyParameter pub);
    }

    static byte[] need(byte[] b, int n, String what) {
        if (b.length != n) throw new IllegalArgumentException(what + " must be " + n + " bytes, got " + b.length);
        return b;
    }

    // ------------------------------------------------------------------------------------------ ML-KEM (FIPS 203)

    static final class MlKem extends Kem {
        final MLKEMParameters params;
        final MLKEMKeyPairGenerator gen = new MLKEMKeyPairGenerator();
        final int pkBytes, ctBytes;

        MlKem(String name, MLKEMParameters params, int pkBytes, int ctBytes) {
            super(name, "expanded", false, 64, "keygen", "encaps");
            this.params = params; this.pkBytes = pkBytes; this.ctBytes = ctBytes;
            gen.init(new MLKEMKeyGenerationParameters(RNG, params));
        }

        Keys keygen() { return new Keys(gen.generateKeyPair()); }

        /** FIPS 203 ML-KEM.KeyGen_internal(d, z) from the 64-byte d || z (Bouncy Castle's seed encoding). */
        Keys keygenFromSeed(byte[] seed) {
            MLKEMPrivateKeyParameters sk = new MLKEMPrivateKeyParameters(params, need(seed, 64, "the ML-KEM keygen seed d || z"));
            return new Keys(sk.getPublicKeyParameters(), sk);
        }

        byte[] publicKeyBytes(Keys k) { return ((MLKEMPublicKeyParameters) k.pub).getEncoded(); }

        /** The FIPS 203 decapsulation key dk (Bouncy Castle's getEncoded(); getSeed() would give the 64-byte seed). */
        byte[] secretKeyBytes(Keys k) { return ((MLKEMPrivateKeyParameters) k.priv).getEncoded(); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) {
            return new MLKEMPublicKeyParameters(params, need(pk, pkBytes, name + " encapsulation key"));
        }

        Encapsulator encapsulator(AsymmetricKeyParameter pub) {
            MLKEMGenerator g = new MLKEMGenerator(RNG);
            return () -> {
                SecretWithEncapsulation r = g.generateEncapsulated(pub);
                return new byte[][]{r.getEncapsulation(), r.getSecret()};
            };
        }

        byte[][] encapsFromSeed(AsymmetricKeyParameter pub, byte[] m) {
            SecretWithEncapsulation r = MLKEMGenerator.internalGenerateEncapsulated((MLKEMPublicKeyParameters) pub,
                need(m, 32, "the ML-KEM encaps seed m"));
            return new byte[][]{r.getEncapsulation(), r.getSecret()};
        }

        Decapsulator decapsulator(Keys k) {
            MLKEMExtractor x = new MLKEMExtractor((MLKEMPrivateKeyParameters) k.priv);
            return ct -> x.extractSecret(need(ct, ctBytes, name + " ciphertext"));
        }
    }

    // ------------------------------------------------------------------------------------------ ML-DSA (FIPS 204)

    static final class MlDsa extends Sig {
        final MLDSAParameters params;
        final MLDSAKeyPairGenerator gen = new MLDSAKeyPairGenerator();

        MlDsa(String name, MLDSAParameters params) {
            super(name, "expanded", 32, "keygen", "sign");
            this.params = params;
            gen.init(new MLDSAKeyGenerationParameters(RNG, params));
        }

        Keys keygen() { return new Keys(gen.generateKeyPair()); }

        /** FIPS 204 ML-DSA.KeyGen_internal(xi) from the 32-byte xi. */
        Keys keygenFromSeed(byte[] seed) {
            MLDSAPrivateKeyParameters sk = new MLDSAPrivateKeyParameters(params, need(seed, 32, "the ML-DSA keygen seed xi"));
            return new Keys(sk.getPublicKeyParameters(), sk);
        }

        byte[] publicKeyBytes(Keys k) { return ((MLDSAPublicKeyParameters) k.pub).getEncoded(); }

        /** FIPS 204 skEncode (Bouncy Castle's getEncoded(); getSeed() would give the 32-byte xi). */
        byte[] secretKeyBytes(Keys k) { return ((MLDSAPrivateKeyParameters) k.priv).getEncoded(); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) { return new MLDSAPublicKeyParameters(params, pk); }

        /** Pure ML-DSA, empty context; hedged (rnd from RNG) unless deterministic (rnd = 0: no random given). */
        SignFn signer(Keys k, boolean deterministic) {
            MLDSASigner s = new MLDSASigner();
            s.init(true, deterministic ? k.priv : new ParametersWithRandom(k.priv, RNG));
            return msg -> {
                s.update(msg, 0, msg.length);
                return s.generateSignature();
            };
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            MLDSASigner v = new MLDSASigner();
            v.init(false, pub);
            return (msg, sig) -> {
                v.update(msg, 0, msg.length);
                return v.verifySignature(sig);
            };
        }
    }

    // ------------------------------------------------------------------------------------------ SLH-DSA (FIPS 205)

    static final class SlhDsa extends Sig {
        final SLHDSAParameters params;
        final SLHDSAKeyPairGenerator gen = new SLHDSAKeyPairGenerator();
        final int n;

        SlhDsa(String name, SLHDSAParameters params) {
            super(name, "FIPS 205 (SK.seed || SK.prf || PK.seed || PK.root)", 3 * params.getN(), "keygen", "sign");
            this.params = params;
            this.n = params.getN();
            gen.init(new SLHDSAKeyGenerationParameters(RNG, params));
        }

        Keys keygen() { return new Keys(gen.generateKeyPair()); }

        /** FIPS 205 slh_keygen_internal(SK.seed, SK.prf, PK.seed) from SK.seed || SK.prf || PK.seed. */
        Keys keygenFromSeed(byte[] seed) {
            need(seed, 3 * n, "the SLH-DSA keygen seed SK.seed || SK.prf || PK.seed");
            return new Keys(gen.internalGenerateKeyPair(Arrays.copyOfRange(seed, 0, n), Arrays.copyOfRange(seed, n, 2 * n),
                Arrays.copyOfRange(seed, 2 * n, 3 * n)));
        }

        byte[] publicKeyBytes(Keys k) { return ((SLHDSAPublicKeyParameters) k.pub).getEncoded(); }

        byte[] secretKeyBytes(Keys k) { return ((SLHDSAPrivateKeyParameters) k.priv).getEncoded(); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) { return new SLHDSAPublicKeyParameters(params, pk); }

        /** Pure SLH-DSA, empty context; hedged (opt_rand from RNG) unless deterministic (opt_rand = PK.seed). */
        SignFn signer(Keys k, boolean deterministic) {
            SLHDSASigner s = new SLHDSASigner();
            s.init(true, deterministic ? k.priv : new ParametersWithRandom(k.priv, RNG));
            return s::generateSignature;
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            SLHDSASigner v = new SLHDSASigner();
            v.init(false, pub);
            return v::verifySignature;
        }
    }

    // ------------------------------------------------------------------------------------------ X25519 as a KEM

    static final class X25519 extends Kem {
        X25519() { super("X25519", "raw", true, 0); }

        Keys keygen() {
            X25519PrivateKeyParameters sk = new X25519PrivateKeyParameters(RNG);
            return new Keys(sk.generatePublicKey(), sk);
        }

        byte[] publicKeyBytes(Keys k) { return ((X25519PublicKeyParameters) k.pub).getEncoded(); }

        byte[] secretKeyBytes(Keys k) { return ((X25519PrivateKeyParameters) k.priv).getEncoded(); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) { return new X25519PublicKeyParameters(need(pk, 32, "X25519 public key")); }

        Encapsulator encapsulator(AsymmetricKeyParameter pub) {
            X25519PublicKeyParameters peer = (X25519PublicKeyParameters) pub;
            return () -> {
                X25519PrivateKeyParameters e = new X25519PrivateKeyParameters(RNG);
                byte[] ss = new byte[32];
                e.generateSecret(peer, ss, 0);
                return new byte[][]{e.generatePublicKey().getEncoded(), ss};
            };
        }

        Decapsulator decapsulator(Keys k) {
            X25519PrivateKeyParameters sk = (X25519PrivateKeyParameters) k.priv;
            return ct -> {
                byte[] ss = new byte[32];
                sk.generateSecret(new X25519PublicKeyParameters(need(ct, 32, "X25519 ciphertext")), ss, 0);
                return ss;
            };
        }
    }

    // ------------------------------------------------------------------------------------------ P-256

    /** P-256 with Bouncy Castle's custom (fast) curve arithmetic, as its JCA provider uses for named curves. */
    static final X9ECParameters P256 = CustomNamedCurves.getByName("secp256r1");
    static final ECDomainParameters P256_DOMAIN = new ECDomainParameters(P256.getCurve(), P256.getG(), P256.getN(), P256.getH(), P256.getSeed());

    static ECPublicKeyParameters p256Point(byte[] b, String what) {
        need(b, 65, what);
        if (b[0] != 4) throw new IllegalArgumentException(what + " must be an uncompressed SEC 1 point (first byte 04)");
        ECPoint q = P256.getCurve().decodePoint(b);  // checks the point is on the curve
        return new ECPublicKeyParameters(q, P256_DOMAIN);
    }

    static ECKeyPairGenerator p256Generator() {
        ECKeyPairGenerator g = new ECKeyPairGenerator();
        g.init(new ECKeyGenerationParameters(P256_DOMAIN, RNG));
        return g;
    }

    static final class EcdhP256 extends Kem {
        final ECKeyPairGenerator gen = p256Generator();

        EcdhP256() { super("ECDH-P256", "raw scalar", true, 0); }

        Keys keygen() { return new Keys(gen.generateKeyPair()); }

        byte[] publicKeyBytes(Keys k) { return ((ECPublicKeyParameters) k.pub).getQ().getEncoded(false); }

        byte[] secretKeyBytes(Keys k) { return BigIntegers.asUnsignedByteArray(32, ((ECPrivateKeyParameters) k.priv).getD()); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) { return p256Point(pk, "ECDH-P256 public key"); }

        /** The shared secret: the 32-byte x coordinate of the shared point. */
        static byte[] agree(ECPrivateKeyParameters sk, ECPublicKeyParameters pk) {
            ECDHBasicAgreement a = new ECDHBasicAgreement();
            a.init(sk);
            BigInteger x = a.calculateAgreement(pk);
            return BigIntegers.asUnsignedByteArray(32, x);
        }

        Encapsulator encapsulator(AsymmetricKeyParameter pub) {
            ECPublicKeyParameters peer = (ECPublicKeyParameters) pub;
            ECKeyPairGenerator eg = p256Generator();
            return () -> {
                AsymmetricCipherKeyPair e = eg.generateKeyPair();
                byte[] ss = agree((ECPrivateKeyParameters) e.getPrivate(), peer);
                return new byte[][]{((ECPublicKeyParameters) e.getPublic()).getQ().getEncoded(false), ss};
            };
        }

        Decapsulator decapsulator(Keys k) {
            ECPrivateKeyParameters sk = (ECPrivateKeyParameters) k.priv;
            return ct -> agree(sk, p256Point(ct, "ECDH-P256 ciphertext"));
        }
    }

    // ------------------------------------------------------------------------------------------ Ed25519

    static final class Ed25519 extends Sig {
        Ed25519() { super("Ed25519", "seed", 32, "keygen", "sign"); }

        Keys keygen() {
            Ed25519PrivateKeyParameters sk = new Ed25519PrivateKeyParameters(RNG);
            return new Keys(sk.generatePublicKey(), sk);
        }

        Keys keygenFromSeed(byte[] seed) {
            Ed25519PrivateKeyParameters sk = new Ed25519PrivateKeyParameters(need(seed, 32, "the Ed25519 secret key"));
            return new Keys(sk.generatePublicKey(), sk);
        }

        byte[] publicKeyBytes(Keys k) { return ((Ed25519PublicKeyParameters) k.pub).getEncoded(); }

        byte[] secretKeyBytes(Keys k) { return ((Ed25519PrivateKeyParameters) k.priv).getEncoded(); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) { return new Ed25519PublicKeyParameters(need(pk, 32, "Ed25519 public key")); }

        /** RFC 8032 Ed25519 signing is always deterministic. */
        SignFn signer(Keys k, boolean deterministic) {
            Ed25519Signer s = new Ed25519Signer();
            s.init(true, k.priv);
            return msg -> {
                s.update(msg, 0, msg.length);
                return s.generateSignature();
            };
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            Ed25519Signer v = new Ed25519Signer();
            v.init(false, pub);
            return (msg, sig) -> {
                v.update(msg, 0, msg.length);
                return v.verifySignature(sig);
            };
        }
    }

    // ------------------------------------------------------------------------------------------ ECDSA P-256

    static final class EcdsaP256 extends Sig {
        final ECKeyPairGenerator gen = p256Generator();

        EcdsaP256() { super("ECDSA-P256", "raw scalar", 0, "sign"); }

        Keys keygen() { return new Keys(gen.generateKeyPair()); }

        byte[] publicKeyBytes(Keys k) { return ((ECPublicKeyParameters) k.pub).getQ().getEncoded(false); }

        byte[] secretKeyBytes(Keys k) { return BigIntegers.asUnsignedByteArray(32, ((ECPrivateKeyParameters) k.priv).getD()); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) { return p256Point(pk, "ECDSA-P256 public key"); }

        /** SHA-256, DER signature; k from RNG (Bouncy Castle's default) unless deterministic (RFC 6979, HMAC-SHA-256). */
        SignFn signer(Keys k, boolean deterministic) {
            DSADigestSigner s = deterministic
                ? new DSADigestSigner(new ECDSASigner(new HMacDSAKCalculator(new SHA256Digest())), new SHA256Digest())
                : new DSADigestSigner(new ECDSASigner(), new SHA256Digest());
            s.init(true, deterministic ? k.priv : new ParametersWithRandom(k.priv, RNG));
            return msg -> {
                s.update(msg, 0, msg.length);
                return s.generateSignature();
            };
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            DSADigestSigner v = new DSADigestSigner(new ECDSASigner(), new SHA256Digest());
            v.init(false, pub);
            return (msg, sig) -> {
                v.update(msg, 0, msg.length);
                return v.verifySignature(sig);
            };
        }
    }

    // ------------------------------------------------------------------------------------------ RSA PKCS #1 v1.5

    static final class Rsa extends Sig {
        final int bits;
        final RSAKeyPairGenerator gen = new RSAKeyPairGenerator();

        /** e = 65537 and the prime certainty Bouncy Castle's JCA KeyPairGenerator uses for this size. */
        Rsa(int bits) {
            super("RSA-" + bits + "-PKCS1v15-sig", "PKCS#8 DER", 0, "sign");
            this.bits = bits;
            gen.init(new RSAKeyGenerationParameters(BigInteger.valueOf(65537), RNG, bits, PrimeCertaintyCalculator.getDefaultCertainty(bits)));
        }

        Keys keygen() { return new Keys(gen.generateKeyPair()); }

        byte[] publicKeyBytes(Keys k) {
            try {
                return SubjectPublicKeyInfoFactory.createSubjectPublicKeyInfo(k.pub).getEncoded("DER");
            } catch (java.io.IOException e) {
                throw new IllegalStateException(e);
            }
        }

        byte[] secretKeyBytes(Keys k) throws Exception { return PrivateKeyInfoFactory.createPrivateKeyInfo(k.priv).getEncoded("DER"); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) throws Exception {
            AsymmetricKeyParameter key = PublicKeyFactory.createKey(pk);
            if (!(key instanceof RSAKeyParameters) || key.isPrivate())
                throw new IllegalArgumentException("not an RSA public key");
            int got = ((RSAKeyParameters) key).getModulus().bitLength();
            if (got != bits) throw new IllegalArgumentException("an RSA-" + got + " key, not RSA-" + bits);
            return key;
        }

        /** PKCS #1 v1.5 with SHA-256 (deterministic; Bouncy Castle blinds the private operation with RNG). */
        SignFn signer(Keys k, boolean deterministic) {
            RSADigestSigner s = new RSADigestSigner(new SHA256Digest());
            s.init(true, new ParametersWithRandom(k.priv, RNG));
            return msg -> {
                s.update(msg, 0, msg.length);
                return s.generateSignature();
            };
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            RSADigestSigner v = new RSADigestSigner(new SHA256Digest());
            v.init(false, pub);
            return (msg, sig) -> {
                v.update(msg, 0, msg.length);
                return v.verifySignature(sig);
            };
        }
    }

    // ------------------------------------------------------------------------------------------ the catalogue

    /** Every algorithm name of the program, in the order `list` gives them. */
    static final List<String> NAMES = List.of(
        "ML-KEM-512", "ML-KEM-768", "ML-KEM-1024", "ML-DSA-44", "ML-DSA-65", "ML-DSA-87",
        "SLH-DSA-SHA2-128s", "SLH-DSA-SHA2-128f", "SLH-DSA-SHA2-192s", "SLH-DSA-SHA2-192f",
        "SLH-DSA-SHA2-256s", "SLH-DSA-SHA2-256f", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-128f",
        "SLH-DSA-SHAKE-192s", "SLH-DSA-SHAKE-192f", "SLH-DSA-SHAKE-256s", "SLH-DSA-SHAKE-256f",
        "X25519", "ECDH-P256", "Ed25519", "ECDSA-P256", "RSA-2048-PKCS1v15-sig", "RSA-3072-PKCS1v15-sig");

    private static final Map<String, Scheme> MADE = new LinkedHashMap<>();

    /** The scheme called `name` (exactly as in NAMES), made on first use; null for an unknown name. */
    static Scheme get(String name) {
        if (!NAMES.contains(name)) return null;
        return MADE.computeIfAbsent(name, Schemes::make);
    }

    private static Scheme make(String name) {
        switch (name) {
            case "ML-KEM-512": return new MlKem(name, MLKEMParameters.ml_kem_512, 800, 768);
            case "ML-KEM-768": return new MlKem(name, MLKEMParameters.ml_kem_768, 1184, 1088);
            case "ML-KEM-1024": return new MlKem(name, MLKEMParameters.ml_kem_1024, 1568, 1568);
            case "ML-DSA-44": return new MlDsa(name, MLDSAParameters.ml_dsa_44);
            case "ML-DSA-65": return new MlDsa(name, MLDSAParameters.ml_dsa_65);
            case "ML-DSA-87": return new MlDsa(name, MLDSAParameters.ml_dsa_87);
            case "SLH-DSA-SHA2-128s": return new SlhDsa(name, SLHDSAParameters.sha2_128s);
            case "SLH-DSA-SHA2-128f": return new SlhDsa(name, SLHDSAParameters.sha2_128f);
            case "SLH-DSA-SHA2-192s": return new SlhDsa(name, SLHDSAParameters.sha2_192s);
            case "SLH-DSA-SHA2-192f": return new SlhDsa(name, SLHDSAParameters.sha2_192f);
            case "SLH-DSA-SHA2-256s": return new SlhDsa(name, SLHDSAParameters.sha2_256s);
            case "SLH-DSA-SHA2-256f": return new SlhDsa(name, SLHDSAParameters.sha2_256f);
            case "SLH-DSA-SHAKE-128s": return new SlhDsa(name, SLHDSAParameters.shake_128s);
            case "SLH-DSA-SHAKE-128f": return new SlhDsa(name, SLHDSAParameters.shake_128f);
            case "SLH-DSA-SHAKE-192s": return new SlhDsa(name, SLHDSAParameters.shake_192s);
            case "SLH-DSA-SHAKE-192f": return new SlhDsa(name, SLHDSAParameters.shake_192f);
            case "SLH-DSA-SHAKE-256s": return new SlhDsa(name, SLHDSAParameters.shake_256s);
            case "SLH-DSA-SHAKE-256f": return new SlhDsa(name, SLHDSAParameters.shake_256f);
            case "X25519": return new X25519();
            case "ECDH-P256": return new EcdhP256();
            case "Ed25519": return new Ed25519();
            case "ECDSA-P256": return new EcdsaP256();
            case "RSA-2048-PKCS1v15-sig": return new Rsa(2048);
            case "RSA-3072-PKCS1v15-sig": return new Rsa(3072);
            default: throw new IllegalStateException(name);
        }
    }

    /** The known names close to `name`: a case-insensitive equal one, else the nearest by edit distance (within
     *  one of the best, and at most a quarter of the name's length away), or those containing it. */
    static List<String> closeMatches(String name, List<String> known) {
        String n = name.toLowerCase();
        List<String> out = new ArrayList<>();
        for (String k : known) if (k.toLowerCase().equals(n)) out.add(k);
        if (!out.isEmpty()) return out;
        int best = Integer.MAX_VALUE;
        for (String k : known) best = Math.min(best, distance(k.toLowerCase(), n));
        for (String k : known) {
            int d = distance(k.toLowerCase(), n);
            if (d <= best + 1 && d <= Math.max(2, n.length() / 4)) out.add(k);
        }
        if (out.isEmpty() && n.length() >= 3)
            for (String k : known) if (k.toLowerCase().contains(n)) out.add(k);
        return out;
    }

    static int distance(String a, String b) {
        int[] prev = new int[b.length() + 1], cur = new int[b.length() + 1];
        for (int j = 0; j <= b.length(); j++) prev[j] = j;
        for (int i = 1; i <= a.length(); i++) {
            cur[0] = i;
            for (int j = 1; j <= b.length(); j++)
                cur[j] = Math.min(Math.min(cur[j - 1] + 1, prev[j] + 1), prev[j - 1] + (a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1));
            int[] t = prev; prev = cur; cur = t;
        }
        return prev[b.length()];
    }
}
