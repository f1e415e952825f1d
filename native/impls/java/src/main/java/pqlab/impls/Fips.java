package pqlab.impls;

import java.util.Arrays;
import java.util.List;
import java.util.Map;

import org.bouncycastle.crypto.SecretWithEncapsulation;
import org.bouncycastle.crypto.generators.MLDSAKeyPairGenerator;
import org.bouncycastle.crypto.generators.MLKEMKeyPairGenerator;
import org.bouncycastle.crypto.generators.SLHDSAKeyPairGenerator;
import org.bouncycastle.crypto.kems.MLKEMExtractor;
import org.bouncycastle.crypto.kems.MLKEMGenerator;
import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.crypto.params.MLDSAKeyGenerationParameters;
import org.bouncycastle.crypto.params.MLDSAParameters;
import org.bouncycastle.crypto.params.MLDSAPrivateKeyParameters;
import org.bouncycastle.crypto.params.MLDSAPublicKeyParameters;
import org.bouncycastle.crypto.params.MLKEMKeyGenerationParameters;
import org.bouncycastle.crypto.params.MLKEMParameters;
import org.bouncycastle.crypto.params.MLKEMPrivateKeyParameters;
import org.bouncycastle.crypto.params.MLKEMPublicKeyParameters;
import org.bouncycastle.crypto.params.ParametersWithRandom;
import org.bouncycastle.crypto.params.SLHDSAKeyGenerationParameters;
import org.bouncycastle.crypto.params.SLHDSAParameters;
import org.bouncycastle.crypto.params.SLHDSAPrivateKeyParameters;
import org.bouncycastle.crypto.params.SLHDSAPublicKeyParameters;
import org.bouncycastle.crypto.signers.MLDSASigner;
import org.bouncycastle.crypto.signers.SLHDSASigner;
import org.bouncycastle.crypto.util.PrivateKeyInfoFactory;
import org.bouncycastle.crypto.util.SubjectPublicKeyInfoFactory;

import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Kem;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;

/**
 * ML-KEM (FIPS 203), ML-DSA (FIPS 204) and SLH-DSA (FIPS 205) through Bouncy Castle's lightweight API: a group
 * (Schemes.Group) that only releases with org.bouncycastle.crypto.params.MLKEMParameters and its kin compile
 * (pom.xml: the "fips" step; 1.72 has none of them).
 */
public final class Fips implements Schemes.Group {
    public Fips() {}

    public List<String> names() {
        return List.of("ML-KEM-512", "ML-KEM-768", "ML-KEM-1024", "ML-DSA-44", "ML-DSA-65", "ML-DSA-87",
            "SLH-DSA-SHA2-128s", "SLH-DSA-SHA2-128f", "SLH-DSA-SHA2-192s", "SLH-DSA-SHA2-192f",
            "SLH-DSA-SHA2-256s", "SLH-DSA-SHA2-256f", "SLH-DSA-SHAKE-128s", "SLH-DSA-SHAKE-128f",
            "SLH-DSA-SHAKE-192s", "SLH-DSA-SHAKE-192f", "SLH-DSA-SHAKE-256s", "SLH-DSA-SHAKE-256f");
    }

    public Scheme make(String name) {
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
            default: return null;
        }
    }

    static byte[] need(byte[] b, int n, String what) { return Schemes.need(b, n, what); }

    static final java.security.SecureRandom RNG = Schemes.RNG;

    // ---------------------------------------------------------------------------------- ML-KEM (FIPS 203)

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
            return signing(new MLDSASigner(), deterministic ? k.priv : new ParametersWithRandom(k.priv, RNG));
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) { return verifying(new MLDSASigner(), pub); }
    }

    // ------------------------------------------------------------------------------------------ SLH-DSA (FIPS 205)

    static final class SlhDsa extends Sig {
        final SLHDSAParameters params;
        final SLHDSAKeyPairGenerator gen = new SLHDSAKeyPairGenerator();
        final int n;

        SlhDsa(String name, SLHDSAParameters params) {
            super(name, "FIPS 205 (SK.seed || SK.prf || PK.seed || PK.root)", 3 * params.getN(), "keygen", "sign");
            this.api = "FIPS 205 SLH-DSA";
            this.classes = "lightweight SLHDSAKeyPairGenerator + SLHDSASigner (SLHDSAParameters." + params.getName()
                + "), pure SLH-DSA, empty context, hedged signing";
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

        /** The first study's sizes: Bouncy Castle's X.509 / PKCS#8 encodings and the raw FIPS 205 keys. */
        Map<String, Object> extraSizes(Keys k, byte[] sig) throws Exception {
            return Schemes.hashSigSizes(SubjectPublicKeyInfoFactory.createSubjectPublicKeyInfo(k.pub).getEncoded("DER"),
                PrivateKeyInfoFactory.createPrivateKeyInfo(k.priv).getEncoded("DER"), publicKeyBytes(k), secretKeyBytes(k), sig);
        }

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

}
