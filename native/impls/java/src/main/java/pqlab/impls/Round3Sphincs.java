package pqlab.impls;

import java.util.List;
import java.util.Map;
import java.util.function.Function;

import org.bouncycastle.crypto.AsymmetricCipherKeyPairGenerator;
import org.bouncycastle.crypto.KeyGenerationParameters;
import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.crypto.params.ParametersWithRandom;
import org.bouncycastle.pqc.crypto.MessageSigner;
import org.bouncycastle.pqc.crypto.util.PrivateKeyInfoFactory;
import org.bouncycastle.pqc.crypto.util.SubjectPublicKeyInfoFactory;

import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;

/**
 * The first study's round-3 SPHINCS+-SHAKE-128f (simple and robust), one implementation for both places a Bouncy
 * Castle release keeps round-3 SPHINCS+ in.  A release has one of the two subclasses, each compiled in its own
 * step of pom.xml and holding only the lines bound to its package (the parameter sets and the classes):
 * {@link Round3Legacy} (org.bouncycastle.pqc.legacy.sphincsplus) and {@link Round3PqcCrypto}
 * (org.bouncycastle.pqc.crypto.sphincsplus, 1.72).  The timed call is init(key) + the operation, as in the study,
 * on Bouncy Castle's MessageSigner; randomized signing.
 */
abstract class Round3Sphincs implements Schemes.Group {
    /** What the package gives for one parameter set: a key pair generator with its parameters, a signer and a
     *  verifier, the public key from its raw bytes (PK.seed || PK.root), and the raw bytes of each key. */
    record Api(AsymmetricCipherKeyPairGenerator gen, KeyGenerationParameters genParams, MessageSigner signer,
               MessageSigner verifier, Function<byte[], AsymmetricKeyParameter> parsePublicKey,
               Function<AsymmetricKeyParameter, byte[]> publicKeyBytes,
               Function<AsymmetricKeyParameter, byte[]> secretKeyBytes) {}

    /** The package (the time document's "api") and the names of its simple and robust parameter sets. */
    private final String pkg, simpleSet, robustSet;

    Round3Sphincs(String pkg, String simpleSet, String robustSet) {
        this.pkg = pkg; this.simpleSet = simpleSet; this.robustSet = robustSet;
    }

    /** The package's classes for the robust or the simple SHAKE-128f parameter set. */
    abstract Api api(boolean robust);

    public List<String> names() { return List.of("SPHINCS+-SHAKE-128f-simple", "SPHINCS+-SHAKE-128f-robust"); }

    public Scheme make(String name) {
        switch (name) {
            case "SPHINCS+-SHAKE-128f-simple": return new SphincsPlus(this, false);
            case "SPHINCS+-SHAKE-128f-robust": return new SphincsPlus(this, true);
            default: return null;
        }
    }

    static final class SphincsPlus extends Sig {
        final Api bc;

        SphincsPlus(Round3Sphincs group, boolean robust) {
            super("SPHINCS+-SHAKE-128f-" + (robust ? "robust" : "simple"), "SK.seed || SK.prf || PK.seed || PK.root", 0);
            bc = group.api(robust);
            api = group.pkg + " (round 3)";
            classes = "lightweight SPHINCSPlusKeyPairGenerator + SPHINCSPlusSigner, SPHINCSPlusParameters."
                + (robust ? group.robustSet : group.simpleSet) + "; randomized signing";
            bc.gen().init(bc.genParams());
        }

        Keys keygen() { return new Keys(bc.gen().generateKeyPair()); }

        /** PK.seed || PK.root. */
        byte[] publicKeyBytes(Keys k) { return bc.publicKeyBytes().apply(k.pub); }

        byte[] secretKeyBytes(Keys k) { return bc.secretKeyBytes().apply(k.priv); }

        AsymmetricKeyParameter parsePublicKey(byte[] pk) {
            return bc.parsePublicKey().apply(Schemes.need(pk, 32, name + " public key"));
        }

        /** init(key) + generateSignature, each call (the study's timed region). */
        SignFn signer(Keys k, boolean deterministic) {
            MessageSigner signer = bc.signer();
            return msg -> {
                signer.init(true, new ParametersWithRandom(k.priv, Schemes.RNG));
                return signer.generateSignature(msg);
            };
        }

        VerifyFn verifier(AsymmetricKeyParameter pub) {
            MessageSigner verifier = bc.verifier();
            return (msg, sig) -> {
                verifier.init(false, pub);
                return verifier.verifySignature(msg, sig);
            };
        }

        Map<String, Object> extraSizes(Keys k, byte[] sig) throws Exception {
            return Schemes.hashSigSizes(SubjectPublicKeyInfoFactory.createSubjectPublicKeyInfo(k.pub).getEncoded("DER"),
                PrivateKeyInfoFactory.createPrivateKeyInfo(k.priv).getEncoded("DER"), publicKeyBytes(k), secretKeyBytes(k), sig);
        }
    }
}
