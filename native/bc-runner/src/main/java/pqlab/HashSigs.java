package pqlab;

import java.io.IOException;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.util.Map;

import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.crypto.params.SLHDSAPrivateKeyParameters;
import org.bouncycastle.crypto.params.SLHDSAPublicKeyParameters;
import org.bouncycastle.jcajce.spec.SLHDSAParameterSpec;
import org.bouncycastle.pqc.legacy.sphincsplus.SPHINCSPlusKeyGenerationParameters;
import org.bouncycastle.pqc.legacy.sphincsplus.SPHINCSPlusKeyPairGenerator;
import org.bouncycastle.pqc.legacy.sphincsplus.SPHINCSPlusParameters;
import org.bouncycastle.pqc.legacy.sphincsplus.SPHINCSPlusPrivateKeyParameters;
import org.bouncycastle.pqc.legacy.sphincsplus.SPHINCSPlusPublicKeyParameters;
import org.bouncycastle.pqc.legacy.sphincsplus.SPHINCSPlusSigner;

/**
 * The hash-based signatures of today's Bouncy Castle API: round-3 SPHINCS+ under org.bouncycastle.pqc.legacy.sphincsplus
 * (where SPHINCSPlusParameters.shake_128f is the simple construction) and FIPS 205 SLH-DSA through the JCA.
 * Compiled for the pom's default Bouncy Castle; HashSigsPqcCrypto.java replaces it for older releases.
 */
final class HashSigs {
    static final String[] NAMES = {"SPHINCS+-SHAKE-128f-simple", "SPHINCS+-SHAKE-128f-robust", "SLH-DSA-SHAKE-128f"};

    private HashSigs() {}

    /** The scheme for an upper-cased name, or null when this API has none by that name. */
    static BcRunner.Scheme create(String upper) throws Exception {
        switch (upper) {
            case "SPHINCS+-SHAKE-128F-SIMPLE": return new SphincsRound3(false);
            case "SPHINCS+-SHAKE-128F-ROBUST": return new SphincsRound3(true);
            case "SLH-DSA-SHAKE-128F": return new SlhDsa();
            default: return null;
        }
    }

    static final class SphincsRound3 extends BcRunner.SphincsPlus {
        SphincsRound3(boolean robust) {
            super(robust, "org.bouncycastle.pqc.legacy.sphincsplus", robust ? "shake_128f_robust" : "shake_128f (simple)",
                  new SPHINCSPlusKeyPairGenerator(), new SPHINCSPlusSigner(), new SPHINCSPlusSigner());
            gen.init(new SPHINCSPlusKeyGenerationParameters(BcRunner.RNG, robust ? SPHINCSPlusParameters.shake_128f_robust : SPHINCSPlusParameters.shake_128f));
        }
        byte[] rawPublic(AsymmetricKeyParameter k) {
            SPHINCSPlusPublicKeyParameters pub = (SPHINCSPlusPublicKeyParameters) k;
            return BcRunner.concat(pub.getSeed(), pub.getRoot());
        }
        byte[] rawPrivate(AsymmetricKeyParameter k) {
            SPHINCSPlusPrivateKeyParameters priv = (SPHINCSPlusPrivateKeyParameters) k;
            return BcRunner.concat(priv.getSeed(), priv.getPrf(), priv.getPublicSeed(), priv.getRoot());
        }
    }

    static final class SlhDsa extends BcRunner.Scheme {
        final KeyPairGenerator kpg; final Signature signer, verifier;
        SlhDsa() throws Exception {
            super("SLH-DSA-SHAKE-128f", "sig", "FIPS 205 SLH-DSA",
                  "JCA KeyPairGenerator + Signature SLH-DSA-SHAKE-128F (provider BC), pure SLH-DSA, empty context, hedged signing");
            kpg = KeyPairGenerator.getInstance("SLH-DSA-SHAKE-128F", BcRunner.BC);
            kpg.initialize(SLHDSAParameterSpec.slh_dsa_shake_128f, BcRunner.RNG);
            signer = Signature.getInstance("SLH-DSA-SHAKE-128F", BcRunner.BC); verifier = Signature.getInstance("SLH-DSA-SHAKE-128F", BcRunner.BC);
        }
        Object keygen() { return kpg.generateKeyPair(); }
        byte[] forward(Object k, byte[] msg) throws Exception {
            signer.initSign(((KeyPair) k).getPrivate(), BcRunner.RNG); signer.update(msg);
            return signer.sign();
        }
        byte[] backward(Object k, byte[] msg, byte[] sig) throws Exception {
            verifier.initVerify(((KeyPair) k).getPublic()); verifier.update(msg);
            return new byte[]{(byte) (verifier.verify(sig) ? 1 : 0)};
        }
        Map<String, Object> sizes(Object k, byte[] sig) throws IOException {
            KeyPair kp = (KeyPair) k;
            byte[] spki = kp.getPublic().getEncoded(), pkcs8 = kp.getPrivate().getEncoded();
            AsymmetricKeyParameter pub = org.bouncycastle.crypto.util.PublicKeyFactory.createKey(spki);
            AsymmetricKeyParameter priv = org.bouncycastle.crypto.util.PrivateKeyFactory.createKey(pkcs8);
            return BcRunner.sigSizes(spki, pkcs8, ((SLHDSAPublicKeyParameters) pub).getEncoded(),
                                     ((SLHDSAPrivateKeyParameters) priv).getEncoded(), sig);
        }
    }
}
