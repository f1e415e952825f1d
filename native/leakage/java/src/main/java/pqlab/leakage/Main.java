/*
 * pqlab's Java leak-screen program: native/PROTOCOL.md (version 2: `list` and `screen`) for Bouncy Castle.
 *
 *   java -jar target/leak.jar list
 *   java -jar target/leak.jar screen < request.json      (the JSON form of the request only: program.toml)
 *
 * One source, built twice: against bcprov-jdk18on 1.83 (native/leakage/java/1.83/pom.xml) and 1.84 (.../1.84/pom.xml),
 * the programs "bc-1.83" and "bc-1.84" (the name is read from the Bouncy Castle it loaded).
 *
 * Target "frodokem640shake-decaps": FrodoKEM-640-SHAKE decapsulation, FrodoKEMExtractor.extractSecret(ct).
 *
 *   Ground truth: CVE-2026-5598 ("non-constant time comparisons risk private key leakage in FrodoKEM"), affects
 *   1.83, fixed in 1.84. What changed in org.bouncycastle.pqc.crypto.frodo.FrodoEngine between the two:
 *   - 1.83 samples the re-encryption noise S', E', E'' (2*8*640 + 64 = 10304 samples) with branches on secret
 *     data: `if (t > T_chi[z]) e++` for each of the 13 CDF entries and `if (r odd) e = -e`. 1.84 (Noise.sample)
 *     computes the same comparisons branch-free.
 *   - 1.83 ends the Fujisaki-Okamoto comparison with `if (r == 0) return 0; return -1;` and then selects k' or s
 *     with masks; 1.84 uses Nat.czero and Bytes.cmov. The comparison loop itself ORs the XOR of every element of
 *     B' || C with B'' || C' in both versions: there is no early exit.
 *   So in 1.83 the time depends on mu' (the decrypted message, which fixes the noise samples of the re-encryption)
 *   and, by one branch, on accept / reject; it does not depend on where the first mismatch is.
 *
 *   Classes: ciphertexts of one length (9720 bytes) for one seeded key pair and one seeded mu.
 *     valid          a genuine ciphertext: accepted, gives the encapsulated secret.
 *     invalid-first  B'[0] + 1. The decrypted mu' stays mu (checked), so the re-encryption is the genuine one and
 *                    differs from the ciphertext at the first compared element only. Implicit rejection.
 *     invalid-last   C[63] + 1: as above, differing at the last compared element only.
 *     invalid-mu     C[0] + q/4: decrypts to mu' = mu with its first 2-bit symbol + 1 (checked), so the whole
 *                    re-encryption, noise sampling included, is another one. Implicit rejection.
 *   A rejected ciphertext must return SHAKE128(c1 || c2 || s) (s from the secret key), computed here independently.
 *
 *   What leaks, measured (AMD EPYC Zen 4 under KVM, OpenJDK 17 C2): 1.83's noise sampling mispredicts branches for
 *   about 120 us of a ~7.6 ms decapsulation, and the branch predictor learns part of a mu' it has just sampled: a
 *   decapsulation right after one with the same mu' is 15-25 us faster. The first three classes share mu', so in a
 *   block they mostly follow a call with their own mu' and invalid-mu never does (except across blocks): on 1.83
 *   invalid-mu - valid is +12..+17 us (sign test p < 1e-4 after 250-800 blocks), on 1.84 about 0. This is the
 *   attacker's plaintext-checking oracle "did my change to the ciphertext change mu'?". invalid-first and
 *   invalid-last show nothing on either version; valid against invalid-mu alone shows at most a few us on 1.83
 *   (each then follows the other equally often), so screen at least three classes.
 *   On an Intel Xeon under KVM (OpenJDK 17) invalid-mu - valid measured +7..+25 us per process with the same
 *   inputs; 800 blocks in four processes found it in 2 of 5 screens, 2000-3000 blocks in all 5 tried:
 *   notebook 09 screens 3000.
 *
 * Timing: System.nanoTime() around each single extractSecret call; the output is compared with the class's expected
 * output after the second reading. Before the protocol's warm-up blocks, JIT_CALLS untimed calls cycle through the
 * requested classes (C2 settles after 60-80 decapsulations). The power check (pqlab.checks.leakage.injected) sends
 * delays_ns, one per class: a class with a delay busy-waits on System.nanoTime() after its call, before the second
 * reading, and the document's injected_ns gives the median of what each class's wait really added.
 */
package pqlab.checks.leakage;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import org.bouncycastle.crypto.AsymmetricCipherKeyPair;
import org.bouncycastle.crypto.SecretWithEncapsulation;
import org.bouncycastle.crypto.digests.SHAKEDigest;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.pqc.crypto.frodo.FrodoKEMExtractor;
import org.bouncycastle.pqc.crypto.frodo.FrodoKEMGenerator;
import org.bouncycastle.pqc.crypto.frodo.FrodoKeyGenerationParameters;
import org.bouncycastle.pqc.crypto.frodo.FrodoKeyPairGenerator;
import org.bouncycastle.pqc.crypto.frodo.FrodoParameters;
import org.bouncycastle.pqc.crypto.frodo.FrodoPrivateKeyParameters;

public final class Main {
    static final int PROTOCOL = 2;
    static final String COUNTER = "System.nanoTime";
    /** The request's fields (any other is a bad request). */
    static final List<String> FIELDS = List.of("target", "classes", "order", "warmup_blocks", "seed", "delays_ns");
    /** Untimed calls, cycling through the requested classes, before the warm-up blocks (JIT warm-up). */
    static final int JIT_CALLS = 160;

    public static void main(String[] args) {
        try {
            if (args.length == 1 && args[0].equals("list")) {
                System.out.println(list());
            } else if (args.length == 1 && args[0].equals("screen")) {
                System.out.println(screen(readAll(System.in)));
            } else {
                throw bad("unknown command " + quote(String.join(" ", args))
                          + ": the program answers list, or screen with the JSON request on stdin (native/PROTOCOL.md)");
            }
        } catch (Failure f) {
            StringBuilder sb = new StringBuilder("{\"error\": ").append(quote(f.getMessage()));
            if (f.cls != null) sb.append(", \"class\": ").append(quote(f.cls));
            if (f.block >= 0) sb.append(", \"block\": ").append(f.block);
            System.out.println(sb.append('}'));
            System.exit(f.status);
        }
    }

    /** A refusal: status 2 (bad request) or 3 (a class failed its check), with the class and block if any. */
    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;
        final int status;
        final String cls;
        final int block;

        Failure(int status, String message, String cls, int block) {
            super(message);
            this.status = status;
            this.cls = cls;
            this.block = block;
        }
    }

    /** A prepared class: its input and the output the operation must give on it. */
    record Case(byte[] input, byte[] expected) {}

    /** A screen target: fixed classes of inputs of one length, and the one operation timed on them. */
    interface Target {
        String name();
        String operation();
        List<String> classes();
        String notes();
        /** Every class's input and expected output, checked (Failure status 3 when a check fails). */
        Map<String, Case> prepare(long seed) throws Failure;
        /** The timed operation. */
        byte[] run(byte[] input);
    }

    static final List<Target> TARGETS = List.of(new FrodoDecaps());

    // ------------------------------------------------------------------------------------------------- commands

    static String version() {
        return new BouncyCastleProvider().getVersionStr();
    }

    /** The registry name: "bc-" and the Bouncy Castle release this build loaded. */
    static String program() {
        return "bc-" + version();
    }

    static String header() {
        String runtime = quote("java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")");
        return "\"protocol\": " + PROTOCOL + ", \"program\": " + quote(program()) + ", \"language\": \"Java\""
                + ", \"toolchain\": " + runtime + ", \"runtime\": " + runtime;
    }

    static String list() {
        String version = version();
        StringBuilder sb = new StringBuilder("{").append(header()).append(", \"commands\": [\"screen\"], \"targets\": [");
        for (int t = 0; t < TARGETS.size(); t++) {
            Target target = TARGETS.get(t);
            sb.append(t == 0 ? "" : ", ").append("{\"name\": ").append(quote(target.name()))
              .append(", \"implementation\": \"bouncy-castle\", \"version\": ").append(quote(version))
              .append(", \"operation\": ").append(quote(target.operation()))
              .append(", \"classes\": ").append(strings(target.classes()))
              .append(", \"counter\": ").append(quote(COUNTER))
              .append(", \"notes\": ").append(quote(target.notes())).append('}');
        }
        return sb.append("]}").toString();
    }

    static String screen(String text) throws Failure {
        long began = System.nanoTime();
        Object parsed = Json.parse(text);
        if (!(parsed instanceof Map)) throw bad("the request must be a JSON object");
        Map<?, ?> request = (Map<?, ?>) parsed;
        for (Object key : request.keySet()) {
            if (!FIELDS.contains(key)) throw bad("unknown field " + Json.write(key) + " in the request (fields: " + String.join(", ", FIELDS) + ")");
        }
        Target target = null;
        for (Target t : TARGETS) if (t.name().equals(request.get("target"))) target = t;
        if (target == null) {
            List<String> known = new ArrayList<>();
            for (Target t : TARGETS) known.add(t.name());
            throw bad("unknown target " + Json.write(request.get("target")) + " (targets: " + String.join(", ", known) + ")");
        }

        List<String> classes = new ArrayList<>();
        Object names = request.containsKey("classes") ? request.get("classes") : target.classes();
        if (!(names instanceof List) || ((List<?>) names).isEmpty()) throw bad("classes must be a non-empty list of names");
        for (Object name : (List<?>) names) {
            if (!target.classes().contains(name)) throw bad("unknown class " + Json.write(name) + " of " + target.name());
            classes.add((String) name);
        }
        int k = classes.size();
        int[][] order = order(request.get("order"), k);
        int warmup = integer(request, "warmup_blocks", 0);
        long seed = integer(request, "seed", 0);
        long[] delays = delays(request.get("delays_ns"), k);

        // 1. prepare and check every class
        Map<String, Case> cases = target.prepare(seed);
        byte[][] inputs = new byte[k][];
        byte[][] expected = new byte[k][];
        for (int i = 0; i < k; i++) {
            inputs[i] = cases.get(classes.get(i)).input();
            expected[i] = cases.get(classes.get(i)).expected();
        }
        // JIT warm-up, then 2. the protocol's warm-up blocks (untimed)
        for (int c = 0; c < JIT_CALLS; c++) target.run(inputs[c % k]);
        for (int w = 0; w < warmup; w++) for (int i : order[w % order.length]) target.run(inputs[i]);
        // 3. timed blocks
        long[][] times = new long[order.length][k];
        long[][] spun = new long[k][order.length];  // the power check's injection: what each wait really added
        long checked = 0;
        for (int b = 0; b < order.length; b++) {
            for (int i : order[b]) {
                long t0 = System.nanoTime();
                byte[] out = target.run(inputs[i]);
                long t1 = System.nanoTime();
                if (delays[i] > 0) {  // busy-wait on the counter before the interval closes
                    long s = t1;
                    while (t1 - s < delays[i]) t1 = System.nanoTime();
                    spun[i][b] = t1 - s;
                }
                if (!Arrays.equals(out, expected[i])) {
                    throw new Failure(3, "output differs from the class's expected output", classes.get(i), b);
                }
                times[b][i] = t1 - t0;
                checked++;
            }
        }
        // 4. the result
        StringBuilder sb = new StringBuilder("{\"protocol\": ").append(PROTOCOL)
            .append(", \"program\": ").append(quote(program()))
            .append(", \"target\": ").append(quote(target.name()))
            .append(", \"implementation\": \"bouncy-castle\", \"version\": ").append(quote(version()))
            .append(", \"operation\": ").append(quote(target.operation()))
            .append(", \"classes\": ").append(strings(classes))
            .append(", \"counter\": ").append(quote(COUNTER)).append(", \"times_ns\": [");
        for (int b = 0; b < times.length; b++) {
            sb.append(b == 0 ? "[" : ", [");
            for (int i = 0; i < k; i++) sb.append(i == 0 ? "" : ", ").append(times[b][i]);
            sb.append(']');
        }
        sb.append(']');
        boolean injected = false;
        for (long d : delays) injected |= d > 0;
        if (injected) {  // the median of what each class's wait really added (0 where it had none)
            sb.append(", \"injected_ns\": [");
            for (int i = 0; i < k; i++) {
                long[] w = spun[i].clone();
                Arrays.sort(w);
                sb.append(i == 0 ? "" : ", ").append(w[w.length / 2]);
            }
            sb.append(']');
        }
        double wall = (System.nanoTime() - began) / 1e9;
        return sb.append(", \"checked\": ").append(checked)
                 .append(", \"wall_s\": ").append(String.format(Locale.ROOT, "%.3f", wall)).append('}').toString();
    }

    static long[] delays(Object value, int k) throws Failure {
        long[] d = new long[k];
        if (value == null) return d;
        if (!(value instanceof List) || ((List<?>) value).size() != k)
            throw bad("delays_ns must list one non-negative integer per class (" + k + ")");
        for (int i = 0; i < k; i++) {
            Object x = ((List<?>) value).get(i);
            if (!(x instanceof Long) || (Long) x < 0)
                throw bad("delays_ns must list one non-negative integer per class (" + k + ")");
            d[i] = (Long) x;
        }
        return d;
    }

    static int[][] order(Object value, int k) throws Failure {
        if (!(value instanceof List) || ((List<?>) value).isEmpty()) throw bad("order must be a non-empty list of blocks");
        List<?> blocks = (List<?>) value;
        int[][] order = new int[blocks.size()][];
        for (int b = 0; b < order.length; b++) {
            Object block = blocks.get(b);
            if (!(block instanceof List) || ((List<?>) block).size() != k) {
                throw bad("order[" + b + "] is not a permutation of range(" + k + ")");
            }
            order[b] = new int[k];
            boolean[] seen = new boolean[k];
            for (int j = 0; j < k; j++) {
                Object x = ((List<?>) block).get(j);
                if (!(x instanceof Long) || (Long) x < 0 || (Long) x >= k || seen[(int) (long) (Long) x]) {
                    throw bad("order[" + b + "] is not a permutation of range(" + k + ")");
                }
                order[b][j] = (int) (long) (Long) x;
                seen[order[b][j]] = true;
            }
        }
        return order;
    }

    static int integer(Map<?, ?> request, String key, int fallback) throws Failure {
        if (!request.containsKey(key)) return fallback;
        Object x = request.get(key);
        if (!(x instanceof Long) || (Long) x < 0 || (Long) x > Integer.MAX_VALUE) {
            throw bad(key + " must be a non-negative integer");
        }
        return (int) (long) (Long) x;
    }

    static Failure bad(String message) {
        return new Failure(2, message, null, -1);
    }

    static String readAll(InputStream in) throws Failure {
        try {
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            in.transferTo(out);
            return out.toString(StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw bad("cannot read the request: " + e.getMessage());
        }
    }

    static String strings(List<String> names) {
        StringBuilder sb = new StringBuilder("[");
        for (int i = 0; i < names.size(); i++) sb.append(i == 0 ? "" : ", ").append(quote(names.get(i)));
        return sb.append(']').toString();
    }

    static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\').append(c);
            else if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
            else sb.append(c);
        }
        return sb.append('"').toString();
    }

    // --------------------------------------------------------------------------------------------- the target

    /** FrodoKEM-640-SHAKE decapsulation; see the header comment for the classes and why. */
    static final class FrodoDecaps implements Target {
        // FrodoKEM-640 sizes (bits and elements as in the FrodoKEM specification)
        static final int N = 640, NBAR = 8, D = 15, Q = 1 << D, B = 2, LEN = 16;   // LEN: mu, s, seedSE, k, pkh, ss
        static final int C1 = NBAR * N * D / 8, C2 = NBAR * NBAR * D / 8;           // 9600 + 120 ciphertext bytes

        private FrodoKEMExtractor extractor;

        public String name() {
            return "frodokem640shake-decaps";
        }

        public String operation() {
            return "FrodoKEM-640-SHAKE decapsulation (FrodoKEMExtractor.extractSecret)";
        }

        public List<String> classes() {
            return List.of("valid", "invalid-first", "invalid-last", "invalid-mu");
        }

        public String notes() {
            return "CVE-2026-5598 (1.83 leaks, fixed in 1.84): 1.83 samples the re-encryption noise with secret-dependent "
                + "branches (and branches on the comparison result; the comparison has no early exit). valid: genuine "
                + "ciphertext; invalid-first / invalid-last: B'[0]+1 / C[63]+1, same mu' (checked), so only the first / last "
                + "compared element differs; invalid-mu: C[0]+q/4, another mu' and so other noise samples. Invalid classes "
                + "must return the implicit-rejection key SHAKE128(ct || s). Measured on 1.83 (Zen 4): the branch predictor "
                + "learns a mu' it has just sampled, so a call right after one with the same mu' is 15-25 us faster; with "
                + "these four classes (three share mu') invalid-mu - valid is +12..17 us of a ~7.6 ms operation, and about "
                + "0 on 1.84. valid against invalid-mu alone shows at most a few us (each follows the other equally often). "
                + "Inputs seeded (key pair, mu). JIT warm-up: " + JIT_CALLS + " untimed calls cycling through the "
                + "requested classes before the warm-up blocks.";
        }

        public byte[] run(byte[] input) {
            return extractor.extractSecret(input);
        }

        public Map<String, Case> prepare(long seed) throws Failure {
            FrodoKeyPairGenerator generator = new FrodoKeyPairGenerator();
            generator.init(new FrodoKeyGenerationParameters(new SeededRandom(seed, "keypair", null),
                                                            FrodoParameters.frodokem640shake));
            AsymmetricCipherKeyPair pair = generator.generateKeyPair();
            byte[] sk = ((FrodoPrivateKeyParameters) pair.getPrivate()).getPrivateKey();
            extractor = new FrodoKEMExtractor((FrodoPrivateKeyParameters) pair.getPrivate());
            byte[] mu = new byte[LEN];   // the encapsulator's randomness
            new SeededRandom(seed, "mu", null).nextBytes(mu);
            SecretWithEncapsulation enc = new FrodoKEMGenerator(new SeededRandom(0, "", mu))
                .generateEncapsulated(pair.getPublic());
            byte[] ct = enc.getEncapsulation();
            byte[] ss = enc.getSecret();
            if (ct.length != C1 + C2) throw new Failure(3, "unexpected ciphertext length " + ct.length, "valid", -1);
            int[] bp = unpack(ct, 0, NBAR * N), c = unpack(ct, C1, NBAR * NBAR);
            if (!Arrays.equals(pack(bp), Arrays.copyOfRange(ct, 0, C1))) {
                throw new Failure(3, "unpack / pack does not round-trip", "valid", -1);
            }
            Map<String, Case> cases = new LinkedHashMap<>();
            byte[] s = Arrays.copyOfRange(sk, 0, LEN);
            add(cases, "valid", ct, ss, sk, mu, ss, s);
            add(cases, "invalid-first", modified(ct, bp, c, 0, 0, 1), null, sk, mu, ss, s);
            add(cases, "invalid-last", modified(ct, bp, c, 1, NBAR * NBAR - 1, 1), null, sk, mu, ss, s);
            add(cases, "invalid-mu", modified(ct, bp, c, 1, 0, Q >> B), null, sk, bump(mu), ss, s);
            return cases;
        }

        /** Checks a class (its decrypted mu', then the library's output) and adds it; expected null: rejection. */
        void add(Map<String, Case> cases, String name, byte[] ct, byte[] expected, byte[] sk, byte[] mu, byte[] ss,
                 byte[] s) throws Failure {
            if (!Arrays.equals(decrypt(ct, sk), mu)) {
                throw new Failure(3, "the ciphertext does not decrypt to the intended mu'", name, -1);
            }
            boolean accepted = expected != null;
            if (!accepted) {
                expected = shake(LEN, ct, s);   // implicit rejection: SHAKE(c1 || c2 || s)
                if (Arrays.equals(expected, ss)) throw new Failure(3, "rejection key equals the shared secret", name, -1);
            }
            if (!Arrays.equals(extractor.extractSecret(ct), expected)) {
                throw new Failure(3, accepted ? "valid ciphertext does not give the shared secret"
                                                    : "invalid ciphertext does not give the implicit-rejection key",
                                  name, -1);
            }
            cases.put(name, new Case(ct, expected));
        }

        /** ct with element `index` of B' (matrix 0) or C (matrix 1) plus `delta` mod q. */
        static byte[] modified(byte[] ct, int[] bp, int[] c, int matrix, int index, int delta) {
            int[] m = (matrix == 0 ? bp : c).clone();
            m[index] = (m[index] + delta) & (Q - 1);
            byte[] out = ct.clone();
            byte[] packed = pack(m);
            System.arraycopy(packed, 0, out, matrix == 0 ? 0 : C1, packed.length);
            return out;
        }

        /** mu with its first B-bit symbol plus one (what C[0] + q/2^B decrypts to). */
        static byte[] bump(byte[] mu) {
            byte[] out = mu.clone();
            int mask = (1 << B) - 1;
            out[0] = (byte) ((mu[0] & ~mask) | ((mu[0] + 1) & mask));
            return out;
        }

        /** mu' = Decode(C - B' S), with S from the secret key (s || seedA || b || S^T || pkh). */
        static byte[] decrypt(byte[] ct, byte[] sk) {
            int[] bp = unpack(ct, 0, NBAR * N), c = unpack(ct, C1, NBAR * NBAR);
            int sOff = LEN + 16 + N * NBAR * D / 8;   // after s, seedA, b: S^T, NBAR x N little-endian 16-bit values
            byte[] mu = new byte[LEN];
            for (int i = 0; i < NBAR; i++) {
                for (int j = 0; j < NBAR; j++) {
                    int sum = 0;
                    for (int x = 0; x < N; x++) {
                        int at = sOff + 2 * (j * N + x);
                        sum += bp[i * N + x] * (short) ((sk[at] & 0xff) | (sk[at + 1] << 8));
                    }
                    int m = (c[i * NBAR + j] - sum) & (Q - 1);
                    int symbol = ((m + (1 << (D - B - 1))) >> (D - B)) & ((1 << B) - 1);
                    int bit = (i * NBAR + j) * B;
                    mu[bit >> 3] |= (byte) (symbol << (bit & 7));
                }
            }
            return mu;
        }

        /** count D-bit values packed most significant bit first, from bytes[off..]. */
        static int[] unpack(byte[] bytes, int off, int count) {
            int[] out = new int[count];
            for (int bit = 0; bit < count * D; bit++) {
                int b = (bytes[off + (bit >> 3)] >> (7 - (bit & 7))) & 1;
                out[bit / D] = (out[bit / D] << 1) | b;
            }
            return out;
        }

        static byte[] pack(int[] values) {
            byte[] out = new byte[values.length * D / 8];
            for (int bit = 0; bit < values.length * D; bit++) {
                int b = (values[bit / D] >> (D - 1 - bit % D)) & 1;
                out[bit >> 3] |= (byte) (b << (7 - (bit & 7)));
            }
            return out;
        }

        static byte[] shake(int length, byte[]... parts) {
            SHAKEDigest digest = new SHAKEDigest(128);
            for (byte[] p : parts) digest.update(p, 0, p.length);
            byte[] out = new byte[length];
            digest.doFinal(out, 0, length);
            return out;
        }
    }

    /** Deterministic randomness: SHAKE256(label || seed), or `fixed` bytes (the encapsulator's chosen mu). */
    static final class SeededRandom extends SecureRandom {
        private static final long serialVersionUID = 1L;
        private final transient SHAKEDigest stream = new SHAKEDigest(256);
        private final byte[] fixed;

        SeededRandom(long seed, String label, byte[] fixed) {
            byte[] l = label.getBytes(StandardCharsets.UTF_8);
            stream.update(l, 0, l.length);
            for (int i = 0; i < 8; i++) stream.update((byte) (seed >>> (8 * i)));
            this.fixed = fixed;
        }

        @Override
        public void nextBytes(byte[] out) {
            if (fixed != null) System.arraycopy(fixed, 0, out, 0, out.length);
            else stream.doOutput(out, 0, out.length);
        }
    }

    // ------------------------------------------------------------------------------------- a minimal JSON reader

    /** Reads JSON into Map / List / String / Long / Double / Boolean / null; writes values back for messages. */
    static final class Json {
        private final String s;
        private int i;

        private Json(String s) {
            this.s = s;
        }

        static Object parse(String text) throws Failure {
            Json json = new Json(text);
            try {
                Object value = json.value();
                json.space();
                if (json.i != text.length()) throw json.error("trailing characters");
                return value;
            } catch (IndexOutOfBoundsException | NumberFormatException e) {
                throw json.error("unexpected end or bad escape");
            }
        }

        static String write(Object value) {
            return value instanceof String ? quote((String) value) : String.valueOf(value);
        }

        private Failure error(String what) {
            return bad("malformed JSON request (" + what + " at character " + i + ")");
        }

        private void space() {
            while (i < s.length() && Character.isWhitespace(s.charAt(i))) i++;
        }

        private boolean eat(char c) {
            space();
            if (i < s.length() && s.charAt(i) == c) {
                i++;
                return true;
            }
            return false;
        }

        private Object value() throws Failure {
            space();
            char c = s.charAt(i);
            if (c == '{') {
                i++;
                Map<String, Object> map = new LinkedHashMap<>();
                if (eat('}')) return map;
                do {
                    space();
                    if (s.charAt(i) != '"') throw error("expected a key");
                    String key = string();
                    if (!eat(':')) throw error("expected ':'");
                    map.put(key, value());
                } while (eat(','));
                if (!eat('}')) throw error("expected '}'");
                return map;
            }
            if (c == '[') {
                i++;
                List<Object> list = new ArrayList<>();
                if (eat(']')) return list;
                do list.add(value()); while (eat(','));
                if (!eat(']')) throw error("expected ']'");
                return list;
            }
            if (c == '"') return string();
            for (String word : new String[] {"true", "false", "null"}) {
                if (s.startsWith(word, i)) {
                    i += word.length();
                    return word.equals("null") ? null : Boolean.valueOf(word);
                }
            }
            int start = i;
            while (i < s.length() && "+-0123456789.eE".indexOf(s.charAt(i)) >= 0) i++;
            String number = s.substring(start, i);
            try {
                return number.matches("-?\\d+") ? (Object) Long.valueOf(number) : (Object) Double.valueOf(number);
            } catch (NumberFormatException e) {
                i = start;
                throw error("unexpected value");
            }
        }

        private String string() throws Failure {
            StringBuilder sb = new StringBuilder();
            i++;   // opening quote
            for (char c = s.charAt(i++); c != '"'; c = s.charAt(i++)) {
                if (c != '\\') {
                    sb.append(c);
                    continue;
                }
                char e = s.charAt(i++);
                switch (e) {
                    case 'n': sb.append('\n'); break;
                    case 't': sb.append('\t'); break;
                    case 'r': sb.append('\r'); break;
                    case 'b': sb.append('\b'); break;
                    case 'f': sb.append('\f'); break;
                    case 'u': sb.append((char) Integer.parseInt(s.substring(i, i + 4), 16)); i += 4; break;
                    case '"': case '\\': case '/': sb.append(e); break;
                    default: throw error("bad escape");
                }
            }
            return sb.toString();
        }
    }
}
