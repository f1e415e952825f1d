package pqlab.impls;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.bouncycastle.crypto.params.AsymmetricKeyParameter;
import org.bouncycastle.jce.provider.BouncyCastleProvider;
import org.bouncycastle.util.encoders.Hex;

import pqlab.impls.Schemes.Kem;
import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;

/**
 * pqlab's Java program of native/impls (PROTOCOL.md, protocol 1): Bouncy Castle's lightweight API timed in Java's own
 * loop.  {@code list}, {@code time --impl bouncycastle --alg NAME ...} and {@code serve}.
 */
public final class Main {
    static final int PROTOCOL = 1;
    static final String RUNNER = "java";
    static final String IMPL = "bouncycastle";
    static final int MAX_LOOPS = 1 << 20;

    /** Bad input: exit 2 with {"error": ...}. */
    static final class BadInput extends RuntimeException {
        private static final long serialVersionUID = 1L;

        BadInput(String why) { super(why); }
    }

    static PrintStream out;

    public static void main(String[] argv) {
        out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), false, StandardCharsets.UTF_8);
        int status;
        try {
            if (argv.length == 0) throw new BadInput("no subcommand: run with list, time or serve (see native/impls/PROTOCOL.md)");
            switch (argv[0]) {
                case "list":
                    if (argv.length > 1) throw new BadInput("list takes no arguments; got " + String.join(" ", Arrays.copyOfRange(argv, 1, argv.length)));
                    out.println(Json.write(list()));
                    status = 0;
                    break;
                case "time":
                    status = time(Arrays.copyOfRange(argv, 1, argv.length));
                    break;
                case "serve":
                    if (argv.length > 1) throw new BadInput("serve takes no arguments; it reads one JSON request per line on stdin");
                    serve();
                    status = 0;
                    break;
                default:
                    throw new BadInput("unknown subcommand '" + argv[0] + "': use list, time or serve");
            }
        } catch (BadInput e) {
            out.println(Json.write(Map.of("error", e.getMessage())));
            status = 2;
        }
        out.flush();
        System.exit(status);
    }

    // ------------------------------------------------------------------------------------------ about

    private static String version;

    /** The version of the Bouncy Castle provider on the class path, read at run time (e.g. "1.87"). */
    static String version() {
        if (version == null) version = new BouncyCastleProvider().getVersionStr();
        return version;
    }

    static String toolchain() {
        return "java " + System.getProperty("java.version") + " (" + System.getProperty("java.vm.name") + ")";
    }

    static Map<String, Object> list() {
        Map<String, Object> impl = new LinkedHashMap<>();
        impl.put("implementation", IMPL);
        impl.put("version", version());
        impl.put("package", "org.bouncycastle:bcprov-jdk18on");
        impl.put("provenance", "https://central.sonatype.com/artifact/org.bouncycastle/bcprov-jdk18on/" + version());
        impl.put("options", "pure Java; JIT: " + System.getProperty("java.vm.name") + " " + System.getProperty("java.vm.version")
            + "; lightweight API (org.bouncycastle.crypto); SecureRandom " + Schemes.RNG.getAlgorithm());
        List<Object> algs = new ArrayList<>();
        for (String name : Schemes.NAMES) {
            Scheme s = Schemes.get(name);
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("implementation", IMPL);
            a.put("algorithm", name);
            a.put("kind", s.kind);
            a.put("seeded", s.seeded);
            algs.add(a);
        }
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("protocol", PROTOCOL);
        doc.put("runner", RUNNER);
        doc.put("toolchain", toolchain());
        doc.put("implementations", List.of(impl));
        doc.put("algorithms", algs);
        return doc;
    }

    static void checkImpl(String impl) {
        if (IMPL.equals(impl)) return;
        throw new BadInput("unknown implementation '" + impl + "': this program has only " + IMPL
            + (Schemes.closeMatches(impl, List.of(IMPL)).isEmpty() ? "" : " (did you mean " + IMPL + "?)"));
    }

    static Scheme scheme(String alg) {
        Scheme s = Schemes.get(alg);
        if (s != null) return s;
        List<String> close = Schemes.closeMatches(alg, Schemes.NAMES);
        throw new BadInput("unknown algorithm '" + alg + "' for " + IMPL + ": "
            + (close.isEmpty() ? "use one of " + String.join(", ", Schemes.NAMES) : "did you mean " + String.join(", ", close) + "?"));
    }

    // ------------------------------------------------------------------------------------------ time

    static int time(String[] argv) {
        Map<String, String> a = new LinkedHashMap<>();
        List<String> flags = List.of("impl", "alg", "ops", "budget", "min-samples", "max-samples", "warmup", "sample-ns", "message-bytes");
        for (int i = 0; i < argv.length; i++) {
            String f = argv[i];
            if (!f.startsWith("--") || !flags.contains(f.substring(2)))
                throw new BadInput("unknown argument '" + f + "': time takes --" + String.join(" --", flags));
            if (i + 1 >= argv.length) throw new BadInput(f + " needs a value");
            if (a.put(f.substring(2), argv[++i]) != null) throw new BadInput(f + " is given twice");
        }
        for (String f : flags)
            if (!a.containsKey(f)) throw new BadInput("time needs --" + f + " (all of --" + String.join(" --", flags) + ")");
        checkImpl(a.get("impl"));
        Scheme s = scheme(a.get("alg"));
        List<String> ops = new ArrayList<>();
        List<String> allowed = List.of(s.operations());
        for (String op : a.get("ops").split(",", -1)) {
            if (!allowed.contains(op))
                throw new BadInput("unknown operation '" + op + "' in --ops for " + s.name + " (a " + s.kind + "): use " + String.join(",", allowed));
            ops.add(op);
        }
        double budget = number(a, "budget", 0, 1e6);
        long minSamples = integer(a, "min-samples", 1, Integer.MAX_VALUE);
        long maxSamples = integer(a, "max-samples", 1, Integer.MAX_VALUE);
        if (maxSamples < minSamples) throw new BadInput("--max-samples " + maxSamples + " is below --min-samples " + minSamples + ": give max >= min");
        long warmup = integer(a, "warmup", 0, 1_000_000);
        long sampleNs = integer(a, "sample-ns", 0, 60_000_000_000L);
        long messageBytes = integer(a, "message-bytes", 0, 1 << 30);

        byte[] msg = new byte[(int) messageBytes];
        for (int i = 0; i < msg.length; i++) msg[i] = (byte) ((31 * i + 7) & 0xff);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("protocol", PROTOCOL);
        doc.put("runner", RUNNER);
        doc.put("implementation", IMPL);
        doc.put("version", version());
        doc.put("algorithm", s.name);
        doc.put("kind", s.kind);
        doc.put("clock", "System.nanoTime (monotonic)");
        Setup setup = new Setup(s, msg);
        doc.put("sizes", setup.sizes);
        List<Object> results = new ArrayList<>();
        boolean allOk = true;
        for (String op : ops) {
            Map<String, Object> r = new Timer(setup, op).run(budget, (int) minSamples, (int) maxSamples, (int) warmup, sampleNs);
            allOk &= Boolean.TRUE.equals(r.get("verified"));
            results.add(r);
        }
        doc.put("operations", results);
        out.println(Json.write(doc));
        return allOk ? 0 : 1;
    }

    static double number(Map<String, String> a, String key, double min, double max) {
        double v;
        try {
            v = Double.parseDouble(a.get(key));
        } catch (NumberFormatException e) {
            throw new BadInput("--" + key + " '" + a.get(key) + "' is not a number: give seconds such as 1.0");
        }
        if (!(v >= min && v <= max)) throw new BadInput("--" + key + " " + a.get(key) + " is out of range: give a number from " + min + " to " + max);
        return v;
    }

    static long integer(Map<String, String> a, String key, long min, long max) {
        long v;
        try {
            v = Long.parseLong(a.get(key));
        } catch (NumberFormatException e) {
            throw new BadInput("--" + key + " '" + a.get(key) + "' is not a whole number: give an integer from " + min + " to " + max);
        }
        if (v < min || v > max) throw new BadInput("--" + key + " " + v + " is out of range: give an integer from " + min + " to " + max);
        return v;
    }

    static String oneLine(Throwable e) {
        String m = e.getClass().getSimpleName() + (e.getMessage() == null ? "" : ": " + e.getMessage());
        return m.replace('\n', ' ').replace('\r', ' ');
    }

    /**
     * PROTOCOL.md step 1, made once per process and shared by the operations: a key pair, for a KEM one ciphertext
     * and its shared secret, for a signature one signature of the message; the tamper check; the sizes, counted
     * from these bytes.  A failure here fails every operation with `error`.
     */
    static final class Setup {
        final Scheme s;
        final byte[] msg;
        final Map<String, Object> sizes = new LinkedHashMap<>();
        String error;
        Keys keys;
        AsymmetricKeyParameter pub;
        Kem.Decapsulator dec;
        byte[] ct, ss;
        Sig.SignFn signer;
        Sig.VerifyFn ver;
        byte[] signature;

        Setup(Scheme s, byte[] msg) {
            this.s = s;
            this.msg = msg;
            try {
                error = make();
            } catch (Exception e) {
                error = "setup: " + oneLine(e);
            }
        }

        private String make() throws Exception {
            keys = s.keygen();
            byte[] pk = s.publicKeyBytes(keys);
            pub = s.parsePublicKey(pk);
            sizes.put("public_key", pk.length);
            sizes.put("secret_key", s.secretKeyBytes(keys).length);
            sizes.put("secret_key_format", s.skFormat);
            if (s instanceof Kem) {
                Kem kem = (Kem) s;
                dec = kem.decapsulator(keys);
                byte[][] enc = kem.encapsulator(pub).encaps();
                ct = enc[0];
                ss = enc[1];
                sizes.put("ciphertext", ct.length);
                sizes.put("shared_secret", ss.length);
                if (!Arrays.equals(dec.decaps(ct), ss)) return "setup: decaps of a fresh ciphertext gave another shared secret";
                if (!kem.dh) {
                    byte[] bad = ct.clone();
                    bad[0] ^= 1;
                    if (Arrays.equals(dec.decaps(bad), ss)) return "tampered ciphertext (first byte flipped) gave the same shared secret";
                }
                return null;
            }
            Sig sig = (Sig) s;
            ver = sig.verifier(pub);
            signer = sig.signer(keys, false);
            signature = signer.sign(msg);
            sizes.put("signature", signature.length);
            if (!ver.verify(msg, signature)) return "setup: a fresh signature did not verify";
            byte[] bad = signature.clone();
            bad[0] ^= 1;
            boolean accepted;
            try {
                accepted = ver.verify(msg, bad);
            } catch (Exception e) {
                accepted = false;  // rejected by an exception: still rejected
            }
            return accepted ? "tampered signature (first byte flipped) verified" : null;
        }
    }

    /** One operation's calibration, warm-up, samples and checks (PROTOCOL.md, `time`, steps 2 to 4). */
    static final class Timer {
        final Setup setup;
        final Scheme s;
        final String op;
        final byte[] msg;
        String error;

        Timer(Setup setup, String op) { this.setup = setup; this.s = setup.s; this.op = op; this.msg = setup.msg; this.error = setup.error; }

        void fail(String why) { if (error == null) error = why; }

        Map<String, Object> run(double budget, int minSamples, int maxSamples, int warmup, long sampleNs) {
            Map<String, Object> r = new LinkedHashMap<>();
            r.put("operation", op);
            r.put("message_bytes", s instanceof Sig && !op.equals("keygen") ? (Object) msg.length : null);
            List<Double> samples = new ArrayList<>();
            int loops = 0, warmupBatches = 0;
            String stoppedBy = "";
            try {
                if (error == null) {
                    Batch b = batch();
                    // Calibrate: double the batch from one call until it lasts sampleNs (at most 2^20 calls).
                    loops = 1;
                    while (true) {
                        long ns = b.timed(loops);
                        warmupBatches++;
                        afterBatch(b);
                        if (error != null || ns >= sampleNs || loops >= MAX_LOOPS) break;
                        loops *= 2;
                    }
                    for (int i = 0; i < warmup && error == null; i++) {
                        b.timed(loops);
                        warmupBatches++;
                        afterBatch(b);
                    }
                    long start = System.nanoTime(), stop = start + (long) (budget * 1e9);
                    stoppedBy = "max-samples";
                    while (error == null && samples.size() < maxSamples) {
                        if (samples.size() >= minSamples && System.nanoTime() - stop >= 0) { stoppedBy = "budget"; break; }
                        long ns = b.timed(loops);
                        samples.add(ns / (double) loops);
                        afterBatch(b);
                    }
                    if (error != null) stoppedBy = "error";
                }
            } catch (Exception e) {
                fail(oneLine(e));
            }
            r.put("loops", loops);
            r.put("warmup_batches", warmupBatches);
            r.put("samples_ns", samples);
            r.put("stopped_by", stoppedBy);
            r.put("verified", error == null);
            r.put("error", error == null ? "" : error);
            return r;
        }

        void afterBatch(Batch b) {
            if (b.errors > 0) {
                fail(b.errors + " of the calls failed: " + b.firstError);
                return;
            }
            try {
                String why = b.check();
                if (why != null) fail(why);
            } catch (Exception e) {
                fail("checking the last output: " + oneLine(e));
            }
        }

        /** The batch of the operation, on the shared setup. */
        Batch batch() {
            if (s instanceof Kem) {
                Kem kem = (Kem) s;
                switch (op) {
                    case "keygen": return new KemKeygen(kem);
                    case "encaps": return new Encaps(kem.encapsulator(setup.pub), setup.dec);
                    default: return new Decaps(setup.dec, setup.ct, setup.ss);
                }
            }
            switch (op) {
                case "keygen": return new SigKeygen((Sig) s, msg);
                case "sign": return new Sign(setup.signer, setup.ver, msg);
                default: return new Verify(setup.ver, msg, setup.signature);
            }
        }
    }

    /** A batch of `loops` calls of one operation; the last output is kept in a field and checked after the batch. */
    abstract static class Batch {
        long errors;
        String firstError;

        void error(Exception e) {
            if (errors++ == 0) firstError = oneLine(e);
        }

        /** Runs `loops` calls between two reads of the clock; the nanoseconds. */
        abstract long timed(int loops);

        /** Null when the last output is right, else why not. */
        abstract String check() throws Exception;
    }

    static final class KemKeygen extends Batch {
        final Kem kem;
        Keys last;

        KemKeygen(Kem kem) { this.kem = kem; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = kem.keygen();
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() throws Exception {
            if (last == null) return "keygen gave no key pair";
            byte[][] r = kem.encapsulator(kem.parsePublicKey(kem.publicKeyBytes(last))).encaps();
            return Arrays.equals(kem.decapsulator(last).decaps(r[0]), r[1]) ? null : "a new key pair did not round-trip encaps/decaps";
        }
    }

    static final class Encaps extends Batch {
        final Kem.Encapsulator enc;
        final Kem.Decapsulator dec;
        byte[][] last;

        Encaps(Kem.Encapsulator enc, Kem.Decapsulator dec) { this.enc = enc; this.dec = dec; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = enc.encaps();
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() throws Exception {
            if (last == null) return "encaps gave nothing";
            return Arrays.equals(dec.decaps(last[0]), last[1]) ? null : "a ciphertext did not decapsulate to its shared secret";
        }
    }

    static final class Decaps extends Batch {
        final Kem.Decapsulator dec;
        final byte[] ct, expected;
        byte[] last;

        Decaps(Kem.Decapsulator dec, byte[] ct, byte[] expected) { this.dec = dec; this.ct = ct; this.expected = expected; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = dec.decaps(ct);
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() {
            return Arrays.equals(last, expected) ? null : "decaps gave another shared secret than the expected one";
        }
    }

    static final class SigKeygen extends Batch {
        final Sig sig;
        final byte[] msg;
        Keys last;

        SigKeygen(Sig sig, byte[] msg) { this.sig = sig; this.msg = msg; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = sig.keygen();
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() throws Exception {
            if (last == null) return "keygen gave no key pair";
            byte[] signature = sig.signer(last, false).sign(msg);
            return sig.verifier(sig.parsePublicKey(sig.publicKeyBytes(last))).verify(msg, signature) ? null
                : "a new key pair did not round-trip sign/verify";
        }
    }

    static final class Sign extends Batch {
        final Sig.SignFn signer;
        final Sig.VerifyFn ver;
        final byte[] msg;
        byte[] last;

        Sign(Sig.SignFn signer, Sig.VerifyFn ver, byte[] msg) { this.signer = signer; this.ver = ver; this.msg = msg; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = signer.sign(msg);
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() throws Exception {
            if (last == null) return "sign gave no signature";
            return ver.verify(msg, last) ? null : "a signature did not verify";
        }
    }

    static final class Verify extends Batch {
        final Sig.VerifyFn ver;
        final byte[] msg, signature;
        boolean last;
        long rejected;

        Verify(Sig.VerifyFn ver, byte[] msg, byte[] signature) { this.ver = ver; this.msg = msg; this.signature = signature; }

        long timed(int loops) {
            last = false;
            long bad = 0;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = ver.verify(msg, signature);
                    if (!last) bad++;
                } catch (Exception e) {
                    error(e);
                }
            }
            long ns = System.nanoTime() - t0;
            rejected += bad;
            return ns;
        }

        String check() {
            if (rejected > 0) return rejected + " verify calls returned false for a valid signature";
            return last ? null : "verify returned false";
        }
    }

    // ------------------------------------------------------------------------------------------ serve

    static final class Held {
        final Scheme s;
        final Keys keys;

        Held(Scheme s, Keys keys) { this.s = s; this.keys = keys; }
    }

    static void serve() {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        Map<String, Held> handles = new HashMap<>();
        int next = 1;
        String line;
        while (true) {
            try {
                line = in.readLine();
            } catch (java.io.IOException e) {
                break;
            }
            if (line == null) break;
            if (line.isBlank()) continue;
            Map<String, Object> answer;
            try {
                Object parsed;
                try {
                    parsed = Json.read(line);
                } catch (IllegalArgumentException e) {
                    throw new IllegalArgumentException("a request is one JSON object per line; " + e.getMessage());
                }
                if (!(parsed instanceof Map)) throw new IllegalArgumentException("a request is a JSON object");
                @SuppressWarnings("unchecked")
                Map<String, Object> req = (Map<String, Object>) parsed;
                answer = new LinkedHashMap<>();
                answer.put("ok", true);
                String op = str(req, "op");
                try {
                    checkImpl(str(req, "impl"));
                } catch (BadInput e) {
                    throw new IllegalArgumentException(e.getMessage());
                }
                Scheme s;
                try {
                    s = scheme(str(req, "alg"));
                } catch (BadInput e) {
                    throw new IllegalArgumentException(e.getMessage());
                }
                List<String> ops = List.of(s.operations());
                if (!ops.contains(op)) throw new IllegalArgumentException("unknown op '" + op + "' for " + s.name + ": use one of " + String.join(", ", ops));
                List<String> fields = new ArrayList<>(List.of("op", "impl", "alg"));
                fields.addAll(FIELDS.get(op));
                for (String k : req.keySet())
                    if (!fields.contains(k)) throw new IllegalArgumentException("unknown field '" + k + "' for " + op + ": it takes " + String.join(", ", fields));
                switch (op) {
                    case "keygen": {
                        byte[] seed = optHex(req, "seed");
                        if (seed != null && !s.seeded.contains("keygen")) throw new IllegalArgumentException(s.name + " keygen takes no seed here (seeded: " + s.seeded + ")");
                        Keys k = seed == null ? s.keygen() : s.keygenFromSeed(seed);
                        String h = "k" + next++;
                        handles.put(h, new Held(s, k));
                        answer.put("handle", h);
                        answer.put("public_key", Hex.toHexString(s.publicKeyBytes(k)));
                        break;
                    }
                    case "encaps": {
                        Kem kem = (Kem) s;
                        byte[] seed = optHex(req, "seed");
                        if (seed != null && !s.seeded.contains("encaps")) throw new IllegalArgumentException(s.name + " encaps takes no seed here (seeded: " + s.seeded + ")");
                        AsymmetricKeyParameter pub = kem.parsePublicKey(hex(req, "public_key"));
                        byte[][] r = seed == null ? kem.encapsulator(pub).encaps() : kem.encapsFromSeed(pub, seed);
                        answer.put("ciphertext", Hex.toHexString(r[0]));
                        answer.put("shared_secret", Hex.toHexString(r[1]));
                        break;
                    }
                    case "decaps": {
                        Held held = held(handles, req, s);
                        answer.put("shared_secret", Hex.toHexString(((Kem) s).decapsulator(held.keys).decaps(hex(req, "ciphertext"))));
                        break;
                    }
                    case "sign": {
                        Held held = held(handles, req, s);
                        Object det = req.get("deterministic");
                        if (det != null && !(det instanceof Boolean)) throw new IllegalArgumentException("deterministic must be true or false");
                        boolean deterministic = Boolean.TRUE.equals(det);
                        if (deterministic && !s.seeded.contains("sign")) throw new IllegalArgumentException(s.name + " has no deterministic signing here (seeded: " + s.seeded + ")");
                        answer.put("signature", Hex.toHexString(((Sig) s).signer(held.keys, deterministic).sign(hex(req, "message"))));
                        break;
                    }
                    default: {  // verify
                        byte[] pk = hex(req, "public_key"), m = hex(req, "message"), sig = hex(req, "signature");
                        boolean valid;
                        try {
                            valid = ((Sig) s).verifier(s.parsePublicKey(pk)).verify(m, sig);
                        } catch (Exception e) {
                            valid = false;  // a malformed key or signature is not valid
                        }
                        answer.put("valid", valid);
                    }
                }
            } catch (Exception e) {
                answer = new LinkedHashMap<>();
                answer.put("ok", false);
                answer.put("error", e instanceof IllegalArgumentException && e.getMessage() != null ? e.getMessage().replace('\n', ' ') : oneLine(e));
            }
            out.println(Json.write(answer));
            out.flush();
        }
    }

    /** The fields each request takes besides op, impl and alg. */
    static final Map<String, List<String>> FIELDS = Map.of(
        "keygen", List.of("seed"), "encaps", List.of("public_key", "seed"), "decaps", List.of("handle", "ciphertext"),
        "sign", List.of("handle", "message", "deterministic"), "verify", List.of("public_key", "message", "signature"));

    static String str(Map<String, Object> req, String key) {
        Object v = req.get(key);
        if (!(v instanceof String)) throw new IllegalArgumentException("the request needs \"" + key + "\" as a string");
        return (String) v;
    }

    static byte[] hex(Map<String, Object> req, String key) {
        byte[] b = optHex(req, key);
        if (b == null) throw new IllegalArgumentException("the request needs \"" + key + "\" as lowercase hex");
        return b;
    }

    static byte[] optHex(Map<String, Object> req, String key) {
        Object v = req.get(key);
        if (v == null) return null;
        if (!(v instanceof String) || ((String) v).length() % 2 != 0 || !((String) v).matches("[0-9a-f]*"))
            throw new IllegalArgumentException("\"" + key + "\" must be lowercase hex of whole bytes");
        return Hex.decode((String) v);
    }

    static Held held(Map<String, Held> handles, Map<String, Object> req, Scheme s) {
        String h = str(req, "handle");
        Held held = handles.get(h);
        if (held == null) throw new IllegalArgumentException("unknown handle '" + h + "': keygen first");
        if (held.s != s) throw new IllegalArgumentException("handle " + h + " is a " + held.s.name + " key, not " + s.name);
        return held;
    }
}
