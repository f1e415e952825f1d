package pqlab;

import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusKeyGenerationParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusKeyPairGenerator;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusPrivateKeyParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusPublicKeyParameters;
import org.bouncycastle.pqc.crypto.sphincsplus.SPHINCSPlusSigner;

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

    static final class SphincsRound3 extends BcRunner.SphincsPlus {
        SphincsRound3(boolean robust) {
            super(robust, "org.bouncycastle.pqc.crypto.sphincsplus", robust ? "shake_128f (robust in this API)" : "shake_128f_simple",
                  new SPHINCSPlusKeyPairGenerator(), new SPHINCSPlusSigner(), new SPHINCSPlusSigner());
            gen.init(new SPHINCSPlusKeyGenerationParameters(BcRunner.RNG, robust ? SPHINCSPlusParameters.shake_128f : SPHINCSPlusParameters.shake_128f_simple));
        }
        byte[] rawPublic(AsymmetricKeyParameter k) {
            SPHINCSPlusPublicKeyParameters pub = (SPHINCSPlusPublicKeyParameters) k;
            return BcRunner.concat(pub.getSeed(), pub.getRoot());
        }
        byte[] rawPrivate(AsymmetricKeyParameter k) {
            SPHINCSPlusPrivateKeyParameters priv = (SPHINCSPlusPrivateKeyParameters) k;
            return BcRunner.concat(priv.getSeed(), priv.getPrf(), priv.getPublicKey());
        }
    }
}
