package pqlab;

import java.io.IOException;
import java.util.Map;

import org.bouncycastle.crypto.AsymmetricCipherKeyPair;
import org.bouncycastle.crypto.params.ParametersWithRandom;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusKeyGenerationParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusKeyPairGenerator;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusPrivateKeyParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusPublicKeyParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusSigner;
import org.bouncycastle.pqc.crypto.util.PrivateKeyInfoFactory;
import org.bouncycastle.pqc.crypto.util.SubjectPublicKeyInfoFactory;

/**
 * The hash-based signatures of Bouncy Castle releases that kept round-3 SPHINCS+ in org.bouncycastle.pqc.crypto.sphincsplus
 * (1.72, the first study's release): there SPHINCSPlusParameters.shake_128f is the ROBUST construction and shake_128f_simple
 * the simple one; there is no SLH-DSA. Same class name as HashSigs.java: pom.xml compiles one of the two (bc.exclude).
 */
final class HashSigs {
    static final String[] NAMES = {"SPHINCS+-SHAKE-128f-simple", "SPHINCS+-SHAKE-128f-robust"};

    private HashSigs() {}

    static BcRunner.Scheme create(String upper) {
        switch (upper) {
            case "SPHINCS+-SHAKE-128F-SIMPLE": return new SphincsRound3(false);
            case "SPHINCS+-SHAKE-128F-ROBUST": return new SphincsRound3(true);
            default: return null;
        }
    }

    static final class SphincsRound3 extends BcRunner.Scheme {
        final SPHINCSPlusKeyPairGenerator gen = new SPHINCSPlusKeyPairGenerator();
        final SPHINCSPlusSigner signer = new SPHINCSPlusSigner(), verifier = new SPHINCSPlusSigner();
        SphincsRound3(boolean robust) {
            super("SPHINCS+-SHAKE-128f-" + (robust ? "robust" : "simple"), "sig", "org.bouncycastle.pqc.crypto.sphincsplus (round 3)",
                  "lightweight SPHINCSPlusKeyPairGenerator + SPHINCSPlusSigner, SPHINCSPlusParameters."
                  + (robust ? "shake_128f (robust in this API)" : "shake_128f_simple") + "; randomized signing");
            gen.init(new SPHINCSPlusKeyGenerationParameters(BcRunner.RNG, robust ? SPHINCSPlusParameters.shake_128f : SPHINCSPlusParameters.shake_128f_simple));
        }
        Object keygen() { return gen.generateKeyPair(); }
        byte[] forward(Object k, byte[] msg) {
            signer.init(true, new ParametersWithRandom(((AsymmetricCipherKeyPair) k).getPrivate(), BcRunner.RNG));
            return signer.generateSignature(msg);
        }
        byte[] backward(Object k, byte[] msg, byte[] sig) {
            verifier.init(false, ((AsymmetricCipherKeyPair) k).getPublic());
            return new byte[]{(byte) (verifier.verifySignature(msg, sig) ? 1 : 0)};
        }
        Map<String, Object> sizes(Object k, byte[] sig) throws IOException {
            AsymmetricCipherKeyPair kp = (AsymmetricCipherKeyPair) k;
            SPHINCSPlusPublicKeyParameters pub = (SPHINCSPlusPublicKeyParameters) kp.getPublic();
            SPHINCSPlusPrivateKeyParameters priv = (SPHINCSPlusPrivateKeyParameters) kp.getPrivate();
            return BcRunner.sigSizes(SubjectPublicKeyInfoFactory.createSubjectPublicKeyInfo(pub).getEncoded("DER"),
                                     PrivateKeyInfoFactory.createPrivateKeyInfo(priv).getEncoded("DER"),
                                     BcRunner.concat(pub.getSeed(), pub.getRoot()),
                                     BcRunner.concat(priv.getSeed(), priv.getPrf(), priv.getPublicKey()), sig);
        }
    }
}
