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
import org.bouncycastle.crypto.CipherParameters;
import org.bouncycastle.crypto.Signer;
import org.bouncycastle.crypto.agreement.ECDHBasicAgreement;
import org.bouncycastle.crypto.digests.SHA256Digest;
import org.bouncycastle.crypto.ec.CustomNamedCurves;
import org.bouncycastle.crypto.generators.ECKeyPairGenerator;
import org.bouncycastle.crypto.generators.RSAKeyPairGenerator;
import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.crypto.params.ECDomainParameters;
import org.bouncycastle.crypto.params.ECKeyGenerationParameters;
import org.bouncycastle.crypto.params.ECPrivateKeyParameters;
import org.bouncycastle.crypto.params.ECPublicKeyParameters;
import org.bouncycastle.crypto.params.Ed25519PrivateKeyParameters;
import org.bouncycastle.crypto.params.Ed25519PublicKeyParameters;
import org.bouncycastle.crypto.params.ParametersWithRandom;
import org.bouncycastle.crypto.params.RSAKeyGenerationParameters;
import org.bouncycastle.crypto.params.RSAKeyParameters;
import org.bouncycastle.crypto.params.X25519PrivateKeyParameters;
import org.bouncycastle.crypto.params.X25519PublicKeyParameters;
import org.bouncycastle.crypto.signers.DSADigestSigner;
import org.bouncycastle.crypto.signers.ECDSASigner;
import org.bouncycastle.crypto.signers.Ed25519Signer;
import org.bouncycastle.crypto.signers.HMacDSAKCalculator;
import org.bouncycastle.crypto.signers.RSADigestSigner;
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
        /** The key of a JCA scheme (the first study's AES and RSA: a SecretKey or a KeyPair); null otherwise. */
        final Object jca;

        Keys(AsymmetricKeyParameter pub, AsymmetricKeyParameter priv) { this.pub = pub; this.priv = priv; this.jca = null; }

        Keys(Object jca) { this.pub = null; this.priv = null; this.jca = jca; }

        Keys(AsymmetricCipherKeyPair kp) { this(kp.getPublic(), kp.getPrivate()); }
    }

    /** One algorithm: its protocol name, kind, the operations a caller may seed, and its key encodings. */
    abstract static class Scheme {
        final String name, kind, skFormat;
        final List<String> seeded;
        /** The seed length `keygen` takes (0: not seeded). */
        final int keygenSeedBytes;
        /** The API and the classes timed, as the time document reports them ("api", "classes"). */
        String api = "lightweight API (org.bouncycastle.crypto)", classes = "";

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
            switch (kind) {
                case "kem": return new String[]{"keygen", "encaps", "decaps"};
                case "sig": return new String[]{"keygen", "sign", "verify"};
                default: return new String[]{"keygen", "encrypt", "decrypt"};
            }
        }

        /** Sizes the time document adds to the protocol's (the first study's encoded and raw key sizes). */
        Map<String, Object> extraSizes(Keys k, byte[] out) throws Exception { return Map.of(); }
    }

    /** A cipher or public-key encryption (the first study's AES-256-CBC and RSA-2048): keygen, encrypt, decrypt. */
    abstract static class Pke extends Scheme {
        Pke(String name, String kind, String skFormat) { super(name, kind, skFormat, 0); }

        abstract byte[] encrypt(Keys k, byte[] msg) throws Exception;

        abstract byte[] decrypt(Keys k, byte[] ct) throws Exception;

        /** The key bytes the protocol's sizes count as public_key ({} for a cipher: it has none). */
        byte[] publicKeyBytes(Keys k) { return new byte[0]; }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) {
            throw new IllegalArgumentException(name + " is not served: serve answers KEMs and signatures");
        }
    }

    /** A group of algorithms whose classes only some Bouncy Castle releases have (pom.xml compiles each group in
     *  a step that may fail): present in the jar when its release has them. */
    interface Group {
        List<String> names();

        Scheme make(String name) throws Exception;
    }

    static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    /** Key sizes of a hash-based signature as the first study counted them: Bouncy Castle's encoded forms and the
     *  raw FIPS 205 / round-3 bytes. */
    static Map<String, Object> hashSigSizes(byte[] spki, byte[] pkcs8, byte[] rawPk, byte[] rawSk, byte[] sig) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("public_key_encoded_bytes", spki.length);
        s.put("public_key_encoded_format", "X.509 SubjectPublicKeyInfo, DER (Bouncy Castle getEncoded())");
        s.put("public_key_raw_bytes", rawPk.length);
        s.put("public_key_raw_format", "PK.seed || PK.root");
        s.put("secret_key_encoded_bytes", pkcs8.length);
        s.put("secret_key_encoded_format", "PKCS#8 PrivateKeyInfo, DER (Bouncy Castle getEncoded())");
        s.put("secret_key_raw_bytes", rawSk.length);
        s.put("secret_key_raw_format", "SK.seed || SK.prf || PK.seed || PK.root");
        s.put("signature_bytes", sig.length);
        return s;
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

        /** Signing with a streaming Signer initialised once for the key (`key`: the private key, or it with a
         *  random source): the timed call is update + generateSignature. */
        static SignFn signing(Signer s, CipherParameters key) {
            s.init(true, key);
            return msg -> {
                s.update(msg, 0, msg.length);
                return s.generateSignature();
            };
        }

        /** Verifying with a streaming Signer initialised once for the public key: update + verifySignature. */
        static VerifyFn verifying(Signer v, AsymmetricKeyParameter pub) {
            v.init(false, pub);
            return (msg, sig) -> {
                v.update(msg, 0, msg.length);
                return v.verifySignature(sig);
            };
        }
    }

    static byte[] need(byte[] b, int n, String what) {
        if (b.length != n) throw new IllegalArgumentException(what + " must be " + n + " bytes, got " + b.length);
        return b;
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
        SignFn signer(Keys k, boolean deterministic) { return signing(new Ed25519Signer(), k.priv); }

        VerifyFn verifier(AsymmetricKeyParameter pub) { return verifying(new Ed25519Signer(), pub); }
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
            return signing(s, deterministic ? k.priv : new ParametersWithRandom(k.priv, RNG));
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            return verifying(new DSADigestSigner(new ECDSASigner(), new SHA256Digest()), pub);
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
            return signing(new RSADigestSigner(new SHA256Digest()), new ParametersWithRandom(k.priv, RNG));
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) { return verifying(new RSADigestSigner(new SHA256Digest()), pub); }
    }

    // ------------------------------------------------------------------------------------------ the catalogue

    /** The classical algorithms every release has (notebook 08's baselines). */
    static final List<String> CLASSICAL = List.of(
        "X25519", "ECDH-P256", "Ed25519", "ECDSA-P256", "RSA-2048-PKCS1v15-sig", "RSA-3072-PKCS1v15-sig");

    /** The optional groups, in the order `list` gives them; of the two round-3 SPHINCS+ APIs a release has one. */
    static final List<String> GROUPS = List.of("pqlab.impls.Fips", "pqlab.impls.Round3Legacy", "pqlab.impls.Round3PqcCrypto");

    private static final Map<String, Group> OWNER = new LinkedHashMap<>();

    /** Every algorithm name of this jar, in the order `list` gives them: FIPS 203/204/205 (when the release has
     *  them), the classical ones, then the first study's (AES-256-CBC, RSA-2048, round-3 SPHINCS+). */
    static final List<String> NAMES = names();

    private static List<String> names() {
        List<String> fips = new ArrayList<>(), round3 = new ArrayList<>();
        for (String cls : GROUPS) {
            Group g;
            try {
                g = (Group) Class.forName(cls).getDeclaredConstructor().newInstance();
            } catch (ReflectiveOperationException | LinkageError absent) {
                continue;  // this release lacks the group's API: its step of the build failed
            }
            for (String n : g.names()) {
                if (OWNER.putIfAbsent(n, g) == null) (cls.endsWith("Fips") ? fips : round3).add(n);
            }
        }
        List<String> all = new ArrayList<>(fips);
        all.addAll(CLASSICAL);
        all.addAll(Study.NAMES);
        all.addAll(round3);
        return List.copyOf(all);
    }

    private static final Map<String, Scheme> MADE = new LinkedHashMap<>();

    /** The scheme called `name` (exactly as in NAMES), made on first use; null for an unknown name. */
    static Scheme get(String name) {
        if (!NAMES.contains(name)) return null;
        return MADE.computeIfAbsent(name, Schemes::make);
    }

    private static Scheme make(String name) {
        try {
            if (OWNER.containsKey(name)) return OWNER.get(name).make(name);
            if (Study.NAMES.contains(name)) return Study.make(name);
        } catch (Exception e) {
            throw new IllegalStateException("cannot set up " + name + ": " + e, e);
        }
        switch (name) {
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
