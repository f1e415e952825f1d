package pqlab.impls;

import org.bouncycastle.pqc.legacy.sphincsplus.*;

/**
 * Round-3 SPHINCS+-SHAKE-128f (Round3Sphincs) in today's API, org.bouncycastle.pqc.legacy.sphincsplus, where
 * SPHINCSPlusParameters.shake_128f is the simple construction.  Compiled in its own step of pom.xml: only the
 * releases with this package have the class.
 */
public final class Round3Legacy extends Round3Sphincs {
    public Round3Legacy() {
        super("org.bouncycastle.pqc.legacy.sphincsplus", "shake_128f (simple)", "shake_128f_robust");
    }

    Api api(boolean robust) {
        SPHINCSPlusParameters p = robust ? SPHINCSPlusParameters.shake_128f_robust : SPHINCSPlusParameters.shake_128f;
        return new Api(new SPHINCSPlusKeyPairGenerator(), new SPHINCSPlusKeyGenerationParameters(Schemes.RNG, p),
            new SPHINCSPlusSigner(), new SPHINCSPlusSigner(), pk -> new SPHINCSPlusPublicKeyParameters(p, pk),
            pub -> Schemes.concat(((SPHINCSPlusPublicKeyParameters) pub).getSeed(), ((SPHINCSPlusPublicKeyParameters) pub).getRoot()),
            priv -> {
                SPHINCSPlusPrivateKeyParameters sk = (SPHINCSPlusPrivateKeyParameters) priv;
                return Schemes.concat(sk.getSeed(), sk.getPrf(), sk.getPublicSeed(), sk.getRoot());
            });
    }
}
