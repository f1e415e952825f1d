package pqlab.impls;

import org.bouncycastle.pqc.crypto.sphincsplus.*;

/**
 * Round-3 SPHINCS+-SHAKE-128f (Round3Sphincs) in the releases that kept it in
 * org.bouncycastle.pqc.crypto.sphincsplus (1.72, the first study's release): there SPHINCSPlusParameters.shake_128f
 * is the ROBUST construction and shake_128f_simple the simple one.  Compiled in its own step of pom.xml.
 */
public final class Round3PqcCrypto extends Round3Sphincs {
    public Round3PqcCrypto() {
        super("org.bouncycastle.pqc.crypto.sphincsplus", "shake_128f_simple", "shake_128f (robust in this API)");
    }

    Api api(boolean robust) {
        SPHINCSPlusParameters p = robust ? SPHINCSPlusParameters.shake_128f : SPHINCSPlusParameters.shake_128f_simple;
        return new Api(new SPHINCSPlusKeyPairGenerator(), new SPHINCSPlusKeyGenerationParameters(Schemes.RNG, p),
            new SPHINCSPlusSigner(), new SPHINCSPlusSigner(), pk -> new SPHINCSPlusPublicKeyParameters(p, pk),
            pub -> Schemes.concat(((SPHINCSPlusPublicKeyParameters) pub).getSeed(), ((SPHINCSPlusPublicKeyParameters) pub).getRoot()),
            priv -> {
                SPHINCSPlusPrivateKeyParameters sk = (SPHINCSPlusPrivateKeyParameters) priv;
                return Schemes.concat(sk.getSeed(), sk.getPrf(), sk.getPublicKey());
            });
    }
}
