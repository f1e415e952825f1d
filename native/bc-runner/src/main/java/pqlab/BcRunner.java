package pqlab;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Provider;
import java.security.SecureRandom;
import java.security.Security;
import java.security.interfaces.RSAPublicKey;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import javax.crypto.Cipher;
import javax.crypto.KeyGenerator;
import javax.crypto.SecretKey;
import javax.crypto.spec.IvParameterSpec;

import org.bouncycastle.asn1.pkcs.PrivateKeyInfo;
import org.bouncycastle.crypto.AsymmetricCipherKeyPair;
import org.bouncycastle.crypto.AsymmetricCipherKeyPairGenerator;
import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.crypto.params.ParametersWithRandom;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.pqc.crypto.MessageSigner;
import org.bouncycastle.pqc.crypto.util.PrivateKeyInfoFactory;
import org.bouncycastle.pqc.crypto.util.SubjectPublicKeyInfoFactory;

/**
 * pqlab's Bouncy Castle runner: times keygen, encrypt/sign and decrypt/verify of one algorithm in a fresh JVM.
 *
 * The first --cold rounds (keygen, then encrypt/sign, then decrypt/verify with that key, as the first study did)
 * are timed call by call straight after JVM start ("cold_ns"); then full rounds run for --warmup seconds so the
 * JIT compiles the hot paths, then each operation is sampled alone for --warm-budget seconds ("warm_ns"), or until
 * the median is known to --target-rel-ci (as pqlab.measure.timing.measure; "stopped_by" says which came first).
 * The hash-based schemes come from HashSigs, whose source depends on the Bouncy Castle API of the build (pom.xml:
 * HashSigs.java for today's API, HashSigsPqcCrypto.java for releases that kept round-3 SPHINCS+ in
 * org.bouncycastle.pqc.crypto.sphincsplus). Timed region: init(key) + the operation. Algorithm objects (JCA Cipher/Signature/KeyGenerator instances,
 * lightweight generators/signers) are created once before the cold phase. Every output is checked outside the
 * timed region. Output: one JSON document on stdout; errors on stderr with exit code 2.
 */
public final class BcRunner {
    static final SecureRandom RNG = new SecureRandom();
    static final Provider BC = new BouncyCastleProvider();
    static volatile int sink; // keeps the JIT from discarding results

    /** One algorithm: forward = encrypt or sign, backward = decrypt or verify. */
    abstract static class Scheme {
        final String name, kind, api, classes;
        Scheme(String name, String kind, String api, String classes) {
            this.name = name; this.kind = kind; this.api = api; this.classes = classes;
        }
        boolean isSig() { return kind.equals("sig"); }
        String[] ops() { return isSig() ? new String[]{"keygen", "sign", "verify"} : new String[]{"keygen", "encrypt", "decrypt"}; }
        abstract Object keygen() throws Exception;
        abstract byte[] forward(Object keys, byte[] msg) throws Exception;
        /** Decrypt: the plaintext; verify: a one-byte array {1} when the signature is valid, {0} otherwise. */
        abstract byte[] backward(Object keys, byte[] msg, byte[] out) throws Exception;
        abstract Map<String, Object> sizes(Object keys, byte[] out) throws Exception;
        /** Checked after a forward/backward pair: the round trip holds. */
        boolean roundTrip(Object keys, byte[] msg, byte[] out, byte[] back) {
            return isSig() ? back[0] == 1 : Arrays.equals(back, msg) && !Arrays.equals(out, msg);
        }
        /** Tampered output (and, for signatures, a tampered message) must be rejected. */
        String tamperError(Object keys, byte[] msg, byte[] out) throws Exception {
            byte[] badOut = out.clone(); badOut[badOut.length / 2] ^= 1;
            if (isSig()) {
                if (backward(keys, msg, badOut)[0] != 0) return "tampered signature accepted";
                byte[] badMsg = msg.clone(); badMsg[0] ^= 1;
                return backward(keys, badMsg, out)[0] != 0 ? "signature accepted for a tampered message" : null;
            }
            try {
                return Arrays.equals(backward(keys, msg, badOut), msg) ? "tampered ciphertext decrypted to the plaintext" : null;
            } catch (Exception rejected) { return null; } // padding error: rejected
        }
    }

    static final class Aes extends Scheme {
        final KeyGenerator kg; final Cipher enc, dec;
        Aes() throws Exception {
            super("AES-256-CBC", "cipher", "JCA AES/CBC/PKCS5Padding (provider BC)",
                  "javax.crypto.KeyGenerator(AES, 256) + javax.crypto.Cipher(AES/CBC/PKCS5Padding), provider BC; IV drawn by the cipher");
            kg = KeyGenerator.getInstance("AES", BC); kg.init(256, RNG);
            enc = Cipher.getInstance("AES/CBC/PKCS5Padding", BC); dec = Cipher.getInstance("AES/CBC/PKCS5Padding", BC);
        }
        Object keygen() { return kg.generateKey(); }
        byte[] forward(Object k, byte[] msg) throws Exception { // returns IV || ciphertext
            enc.init(Cipher.ENCRYPT_MODE, (SecretKey) k, RNG);
            byte[] iv = enc.getIV(), out = new byte[iv.length + enc.getOutputSize(msg.length)];
            System.arraycopy(iv, 0, out, 0, iv.length);
            int n = enc.doFinal(msg, 0, msg.length, out, iv.length);
            return n + iv.length == out.length ? out : Arrays.copyOf(out, n + iv.length);
        }
        byte[] backward(Object k, byte[] msg, byte[] out) throws Exception {
            dec.init(Cipher.DECRYPT_MODE, (SecretKey) k, new IvParameterSpec(out, 0, 16));
            return dec.doFinal(out, 16, out.length - 16);
        }
        Map<String, Object> sizes(Object k, byte[] out) {
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("symmetric_key_bytes", ((SecretKey) k).getEncoded().length);
            s.put("symmetric_key_format", "raw key bytes (SecretKey.getEncoded())");
            s.put("iv_bytes", 16);
            s.put("ciphertext_bytes", out.length - 16);
            s.put("ciphertext_format", "CBC ciphertext with PKCS#5 padding, IV not counted");
            return s;
        }
    }

    static final class Rsa extends Scheme {
        final KeyPairGenerator kpg; final Cipher enc, dec;
        Rsa() throws Exception {
            super("RSA-2048", "pke", "JCA RSA/ECB/PKCS1Padding (provider BC)",
                  "java.security.KeyPairGenerator(RSA, 2048) + javax.crypto.Cipher(RSA/ECB/PKCS1Padding), provider BC");
            kpg = KeyPairGenerator.getInstance("RSA", BC); kpg.initialize(2048, RNG);
            enc = Cipher.getInstance("RSA/ECB/PKCS1Padding", BC); dec = Cipher.getInstance("RSA/ECB/PKCS1Padding", BC);
        }
        Object keygen() { return kpg.generateKeyPair(); }
        byte[] forward(Object k, byte[] msg) throws Exception {
            enc.init(Cipher.ENCRYPT_MODE, ((KeyPair) k).getPublic(), RNG);
            return enc.doFinal(msg);
        }
        byte[] backward(Object k, byte[] msg, byte[] out) throws Exception {
            dec.init(Cipher.DECRYPT_MODE, ((KeyPair) k).getPrivate(), RNG);
            return dec.doFinal(out);
        }
        Map<String, Object> sizes(Object k, byte[] out) throws Exception {
            KeyPair kp = (KeyPair) k;
            RSAPublicKey pub = (RSAPublicKey) kp.getPublic();
            byte[] pkcs1 = PrivateKeyInfo.getInstance(kp.getPrivate().getEncoded()).parsePrivateKey().toASN1Primitive().getEncoded("DER");
            Map<String, Object> s = new LinkedHashMap<>();
            s.put("modulus_bits", pub.getModulus().bitLength());
            s.put("public_exponent", pub.getPublicExponent().longValue());
            s.put("public_key_encoded_bytes", pub.getEncoded().length);
            s.put("public_key_encoded_format", "X.509 SubjectPublicKeyInfo, DER (getEncoded())");
            s.put("public_key_raw_bytes", (pub.getModulus().bitLength() + 7) / 8);
            s.put("public_key_raw_format", "modulus n, big-endian (exponent not counted)");
            s.put("secret_key_encoded_bytes", kp.getPrivate().getEncoded().length);
            s.put("secret_key_encoded_format", "PKCS#8 PrivateKeyInfo, DER (getEncoded())");
            s.put("secret_key_raw_bytes", pkcs1.length);
            s.put("secret_key_raw_format", "PKCS#1 RSAPrivateKey, DER (CRT form)");
            s.put("ciphertext_bytes", out.length);
            return s;
        }
    }

    /**
     * Round-3 SPHINCS+-SHAKE-128f through Bouncy Castle's lightweight API (a key-pair generator and MessageSigners). Both
     * HashSigs sources have it; their APIs differ only in the package of its classes, the names of its parameter sets and
     * the getters of its raw keys, so each gives those (and initializes gen) and the rest is here.
     */
    abstract static class SphincsPlus extends Scheme {
        final AsymmetricCipherKeyPairGenerator gen;
        final MessageSigner signer, verifier;
        /** `pkg`: the package of the API's classes; `parameters`: the SPHINCSPlusParameters field used, as the classes say it. */
        SphincsPlus(boolean robust, String pkg, String parameters, AsymmetricCipherKeyPairGenerator gen, MessageSigner signer,
                    MessageSigner verifier) {
            super("SPHINCS+-SHAKE-128f-" + (robust ? "robust" : "simple"), "sig", pkg + " (round 3)",
                  "lightweight SPHINCSPlusKeyPairGenerator + SPHINCSPlusSigner, SPHINCSPlusParameters." + parameters + "; randomized signing");
            this.gen = gen; this.signer = signer; this.verifier = verifier;
        }
        /** The raw public key bytes (PK.seed || PK.root) of this API's public key parameters. */
        abstract byte[] rawPublic(AsymmetricKeyParameter pub);
        /** The raw secret key bytes (SK.seed || SK.prf || PK.seed || PK.root) of this API's private key parameters. */
        abstract byte[] rawPrivate(AsymmetricKeyParameter priv);
        Object keygen() { return gen.generateKeyPair(); }
        byte[] forward(Object k, byte[] msg) {
            signer.init(true, new ParametersWithRandom(((AsymmetricCipherKeyPair) k).getPrivate(), RNG));
            return signer.generateSignature(msg);
        }
        byte[] backward(Object k, byte[] msg, byte[] sig) {
            verifier.init(false, ((AsymmetricCipherKeyPair) k).getPublic());
            return new byte[]{(byte) (verifier.verifySignature(msg, sig) ? 1 : 0)};
        }
        Map<String, Object> sizes(Object k, byte[] sig) throws IOException {
            AsymmetricCipherKeyPair kp = (AsymmetricCipherKeyPair) k;
            AsymmetricKeyParameter pub = kp.getPublic(), priv = kp.getPrivate();
            return sigSizes(SubjectPublicKeyInfoFactory.createSubjectPublicKeyInfo(pub).getEncoded("DER"),
                            PrivateKeyInfoFactory.createPrivateKeyInfo(priv).getEncoded("DER"),
                            rawPublic(pub), rawPrivate(priv), sig);
        }
    }

    /** Key sizes of a hash-based signature scheme: BC's encoded forms and the raw FIPS 205 / round-3 bytes. */
    static Map<String, Object> sigSizes(byte[] spki, byte[] pkcs8, byte[] rawPk, byte[] rawSk, byte[] sig) {
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

    /** Every algorithm of this build: the classical two, then the hash-based ones its Bouncy Castle API has. */
    static final String[] NAMES = names();

    static String[] names() {
        List<String> all = new ArrayList<>(Arrays.asList("AES-256-CBC", "RSA-2048"));
        all.addAll(Arrays.asList(HashSigs.NAMES));
        return all.toArray(new String[0]);
    }

    static Scheme create(String name) throws Exception {
        switch (name.toUpperCase()) {
            case "AES-256-CBC": return new Aes();
            case "RSA-2048": return new Rsa();
            default:
                Scheme s = HashSigs.create(name.toUpperCase());
                if (s == null) throw new IllegalArgumentException("unknown algorithm '" + name + "'; supported: " + String.join(", ", NAMES));
                return s;
        }
    }

    static byte[] concat(byte[]... parts) {
        int n = 0; for (byte[] p : parts) n += p.length;
        byte[] out = new byte[n]; int at = 0;
        for (byte[] p : parts) { System.arraycopy(p, 0, out, at, p.length); at += p.length; }
        return out;
    }

    /** Per-operation results. */
    static final class Op {
        final String name; final List<Long> cold = new ArrayList<>(), warm = new ArrayList<>(); String error, stoppedBy = "";
        Op(String name) { this.name = name; }
        void fail(String why) { if (error == null) error = why; }
    }

    public static void main(String[] argv) {
        try {
            System.exit(run(argv));
        } catch (IllegalArgumentException e) {
            System.err.println("bc-runner: " + e.getMessage()); System.exit(2);
        } catch (Exception e) {
            System.err.println("bc-runner: " + e); e.printStackTrace(); System.exit(1);
        }
    }

    static String arg(Map<String, String> a, String key, String dflt) { return a.getOrDefault(key, dflt); }

    static int run(String[] argv) throws Exception {
        Map<String, String> a = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i++) {
            if (!argv[i].startsWith("--")) throw new IllegalArgumentException("unexpected argument " + argv[i]);
            if (argv[i].equals("--list")) { a.put("list", ""); continue; }
            if (i + 1 >= argv.length) throw new IllegalArgumentException(argv[i] + " needs a value");
            a.put(argv[i].substring(2), argv[++i]);
        }
        Security.addProvider(BC);
        if (a.containsKey("list")) {
            for (String n : NAMES) { Scheme s = create(n); System.out.println(n + "\t" + s.kind + "\t" + s.api); }
            return 0;
        }
        if (!a.containsKey("alg")) throw new IllegalArgumentException("--alg NAME is required; supported: " + String.join(", ", NAMES));
        int msgBytes = Integer.parseInt(arg(a, "message-bytes", "100"));
        int coldN = Integer.parseInt(arg(a, "cold", "5"));
        double budget = Double.parseDouble(arg(a, "warm-budget", "1.0"));
        double warmup = Double.parseDouble(arg(a, "warmup", arg(a, "warm-budget", "1.0")));
        int minSamples = Integer.parseInt(arg(a, "min-samples", "5"));
        int maxSamples = Integer.parseInt(arg(a, "max-samples", "20000"));
        double target = Double.parseDouble(arg(a, "target-rel-ci", "0"));  // 0: the whole budget
        Scheme s = create(a.get("alg"));
        String[] all = s.ops();
        List<String> wanted = new ArrayList<>();
        for (String o : arg(a, "ops", String.join(",", all)).split(",")) {
            String op = o.trim().toLowerCase();
            if (op.equals("encrypt") || op.equals("sign")) op = all[1];        // "Encrypt/Sign" of the study
            else if (op.equals("decrypt") || op.equals("verify")) op = all[2];
            if (!op.equals(all[0]) && !op.equals(all[1]) && !op.equals(all[2]))
                throw new IllegalArgumentException("unknown operation '" + o + "'; " + s.name + " has " + String.join(", ", all));
            if (!wanted.contains(op)) wanted.add(op);
        }
        if (msgBytes < 1 || coldN < 0 || minSamples < 1 || !(target >= 0 && target < 1))
            throw new IllegalArgumentException("bad --message-bytes/--cold/--min-samples/--target-rel-ci");
        Op[] ops = {new Op(all[0]), new Op(all[1]), new Op(all[2])};

        // Cold phase: the first rounds after JVM start, each call timed alone, in the study's order.
        for (int r = 0; r < coldN; r++) {
            byte[] msg = new byte[msgBytes]; RNG.nextBytes(msg);
            long t0 = System.nanoTime(); Object keys = s.keygen(); long t1 = System.nanoTime();
            byte[] out = s.forward(keys, msg); long t2 = System.nanoTime();
            byte[] back = s.backward(keys, msg, out); long t3 = System.nanoTime();
            ops[0].cold.add(t1 - t0); ops[1].cold.add(t2 - t1); ops[2].cold.add(t3 - t2);
            if (!s.roundTrip(keys, msg, out, back)) { ops[1].fail("cold round " + r + ": round trip failed"); ops[2].fail("cold round " + r + ": round trip failed"); }
        }

        // Warm-up: full rounds until the JIT has had --warmup seconds (at least 3 rounds).
        long warmRounds = 0, end = System.nanoTime() + (long) (warmup * 1e9);
        byte[] msg = new byte[msgBytes]; RNG.nextBytes(msg);
        while (warmRounds < 3 || System.nanoTime() < end) {
            Object keys = s.keygen(); byte[] out = s.forward(keys, msg);
            sink ^= s.backward(keys, msg, out)[0]; warmRounds++;
        }

        // Steady state: each operation sampled alone with fixed inputs, then everything checked.
        Object keys = s.keygen(); byte[] out = s.forward(keys, msg);
        if (!s.roundTrip(keys, msg, out, s.backward(keys, msg, out))) { ops[1].fail("round trip failed"); ops[2].fail("round trip failed"); }
        for (int i = 0; i < 3; i++) {
            if (!wanted.contains(ops[i].name)) continue;
            System.gc();
            long settle = System.nanoTime() + (long) (0.1 * budget * 1e9); // untimed calls after the GC
            do { sink ^= (i == 0 ? s.keygen().hashCode() : i == 1 ? s.forward(keys, msg)[0] : s.backward(keys, msg, out)[0]); }
            while (System.nanoTime() < settle);
            long stop = System.nanoTime() + (long) (budget * 1e9);
            List<Long> w = ops[i].warm;
            int nextLook = target > 0 ? Math.max(minSamples, 1) : Integer.MAX_VALUE;
            ops[i].stoppedBy = "max-samples";
            while (w.size() < maxSamples) {
                if (w.size() >= minSamples && System.nanoTime() >= stop) { ops[i].stoppedBy = "budget"; break; }
                long t0, t1;
                if (i == 0) { t0 = System.nanoTime(); Object k = s.keygen(); t1 = System.nanoTime(); sink ^= k.hashCode(); }
                else if (i == 1) { t0 = System.nanoTime(); byte[] o = s.forward(keys, msg); t1 = System.nanoTime(); sink ^= o[0]; }
                else { t0 = System.nanoTime(); byte[] b = s.backward(keys, msg, out); t1 = System.nanoTime(); sink ^= b[0]; }
                w.add(t1 - t0);
                if (w.size() >= nextLook) {  // as pqlab.measure.timing.measure: look again after 10 % more samples
                    if (precision(w) <= target) { ops[i].stoppedBy = "precision"; break; }
                    nextLook = w.size() + Math.max(1, w.size() / 10);
                }
            }
        }
        byte[] last = s.forward(keys, msg);
        if (!s.roundTrip(keys, msg, last, s.backward(keys, msg, last))) ops[1].fail("steady-state output failed its check");
        String tamper = s.tamperError(keys, msg, out);
        if (tamper != null) ops[2].fail(tamper);
        Map<String, Object> sizes = s.sizes(keys, out);
        Object keyCheck = s.isSig() ? sizes.get("public_key_raw_bytes") : sizes.get(s.kind.equals("pke") ? "modulus_bits" : "symmetric_key_bytes");
        Object keyWant = s.isSig() ? 32 : s.kind.equals("pke") ? 2048 : 32;
        if (!keyWant.equals(keyCheck)) ops[0].fail("unexpected key size " + keyCheck + " (want " + keyWant + ")");

        // Timer overhead: median of back-to-back System.nanoTime() pairs.
        long[] ov = new long[1001];
        for (int i = 0; i < ov.length; i++) { long t0 = System.nanoTime(); ov[i] = System.nanoTime() - t0; }
        Arrays.sort(ov);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("runner", "pqlab bc-runner 0.1.0");
        doc.put("java_version", System.getProperty("java.version"));
        doc.put("java_runtime", System.getProperty("java.runtime.name") + " " + System.getProperty("java.runtime.version"));
        doc.put("jvm", System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version") + " (" + System.getProperty("java.vm.info") + ")");
        doc.put("jvm_args", ManagementFactory.getRuntimeMXBean().getInputArguments());
        doc.put("os_arch", System.getProperty("os.name") + " " + System.getProperty("os.arch"));
        doc.put("available_processors", Runtime.getRuntime().availableProcessors());
        doc.put("bouncycastle_version", BC.getVersionStr());
        doc.put("algorithm", s.name);
        doc.put("kind", s.kind);
        doc.put("api", s.api);
        doc.put("classes", s.classes);
        doc.put("timed_region", "init(key) + operation; algorithm objects created once before the cold phase");
        doc.put("cold_rounds", coldN);
        doc.put("warmup_s", warmup);
        doc.put("warmup_rounds", warmRounds);
        doc.put("warm_budget_s", budget);
        doc.put("target_rel_ci", target > 0 ? (Object) target : null);
        doc.put("overhead_ns", ov[ov.length / 2]);
        List<Object> opList = new ArrayList<>();
        for (Op op : ops) {
            if (!wanted.contains(op.name)) continue;
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("operation", op.name);
            m.put("message_bytes", msgBytes);
            m.put("loops", 1);
            m.put("cold_ns", op.cold);
            int n5 = Math.min(5, op.cold.size());
            m.put("cold_mean_first5_ns", n5 == 0 ? null : op.cold.subList(0, n5).stream().mapToLong(Long::longValue).sum() / (double) n5);
            m.put("warm_ns", op.warm);
            m.put("stopped_by", op.stoppedBy);
            m.put("verified", op.error == null);
            m.put("error", op.error);
            opList.add(m);
        }
        doc.put("operations", opList);
        doc.put("sizes", sizes);
        doc.put("sink", sink);
        System.out.println(json(doc));
        return 0;
    }

    /** Half the width of the 95 % confidence interval of the median over the median, as pqlab.measure.stats computes it
     *  (order statistics x_(j), x_(n-1-j) for the largest j with 2 P(Binomial(n, 1/2) <= j) <= 5 %); NaN when
     *  there are too few samples for one. */
    static double precision(List<Long> samples) {
        int n = samples.size();
        double logPmf = -n * Math.log(2), cdf = 0;
        int j = 0;
        while (j < n) {
            cdf += Math.exp(logPmf);
            if (cdf > (1 - 0.95) / 2) break;  // the same double as pqlab.measure.stats
            logPmf += Math.log((double) (n - j) / (j + 1));
            j++;
        }
        if (j == 0) return Double.NaN;
        long[] x = new long[n];
        for (int k = 0; k < n; k++) x[k] = samples.get(k);
        Arrays.sort(x);
        double median = n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
        return median == 0 ? Double.NaN : (x[n - j] - x[j - 1]) / 2.0 / Math.abs(median);
    }

    /** Minimal JSON writer: maps, lists, strings, numbers, booleans and null. */
    static String json(Object v) {
        StringBuilder b = new StringBuilder(); json(b, v); return b.toString();
    }

    static void json(StringBuilder b, Object v) {
        if (v == null) b.append("null");
        else if (v instanceof Map) {
            b.append('{'); String sep = "";
            for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
                b.append(sep); json(b, String.valueOf(e.getKey())); b.append(": "); json(b, e.getValue()); sep = ", ";
            }
            b.append('}');
        } else if (v instanceof List) {
            b.append('['); String sep = "";
            for (Object o : (List<?>) v) { b.append(sep); json(b, o); sep = ", "; }
            b.append(']');
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            b.append(Double.isFinite(d) ? Double.toString(d) : "null");
        } else if (v instanceof Number || v instanceof Boolean) b.append(v);
        else {
            b.append('"');
            for (char c : v.toString().toCharArray()) {
                if (c == '"' || c == '\\') b.append('\\').append(c);
                else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
                else b.append(c);
            }
            b.append('"');
        }
    }
}
