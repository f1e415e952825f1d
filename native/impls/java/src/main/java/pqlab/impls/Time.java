package pqlab.impls;

import static pqlab.impls.Main.IMPL;
import static pqlab.impls.Main.PROGRAM;
import static pqlab.impls.Main.PROTOCOL;
import static pqlab.impls.Main.checkImpl;
import static pqlab.impls.Main.oneLine;
import static pqlab.impls.Main.scheme;
import static pqlab.impls.Main.version;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.bouncycastle.crypto.params.AsymmetricKeyParameter;

import pqlab.impls.Main.BadInput;
import pqlab.impls.Schemes.Kem;
import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Pke;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;

/**
 * The {@code time} command (native/PROTOCOL.md): its arguments, the first calls after the process starts
 * ({@link Cold}), the setup the operations share ({@link Setup}), each operation's samples ({@link Timer}) and
 * the document.
 */
final class Time {
    private Time() {}

    static int run(String[] argv) {
        Map<String, String> a = new LinkedHashMap<>();
        List<String> flags = List.of("impl", "alg", "ops", "budget", "min-samples", "max-samples", "warmup", "sample-ns", "message-bytes");
        List<String> optional = List.of("cold", "counter", "pool", "fixed-message", "cpu", "warmup-seconds", "target-rel-ci");
        for (int i = 0; i < argv.length; i++) {
            String f = argv[i];
            String name = f.startsWith("--") ? f.substring(2) : "";
            if (!flags.contains(name) && !optional.contains(name))
                throw new BadInput("unknown argument '" + f + "': time takes --" + String.join(" --", flags) + " [--"
                    + String.join("] [--", optional) + "]");
            String value = "";
            if (!name.equals("fixed-message")) {
                if (i + 1 >= argv.length) throw new BadInput(f + " needs a value");
                value = argv[++i];
            }
            if (a.put(name, value) != null) throw new BadInput(f + " is given twice");
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
        int cold = a.containsKey("cold") ? (int) integer(a, "cold", 0, 1_000_000) : 0;
        int pool = a.containsKey("pool") ? (int) integer(a, "pool", 1, 1 << 16) : 1;
        double warmupSeconds = a.containsKey("warmup-seconds") ? number(a, "warmup-seconds", 0, 3600) : 0;
        double target = a.containsKey("target-rel-ci") ? number(a, "target-rel-ci", 0, 0.999) : 0;
        String counter = a.getOrDefault("counter", "none");
        if (!counter.equals("none") && !counter.equals("auto")) {
            if (counter.equals("tsc") || counter.equals("perf"))
                throw new BadInput("--counter " + counter + ": the Java program reads no cycle counter (System.nanoTime only): "
                    + "give --counter none or auto");
            throw new BadInput("--counter '" + counter + "' is not one of tsc, perf, none, auto");
        }
        if (a.containsKey("cpu"))
            throw new BadInput("--cpu: a JVM cannot pin its own threads; pin the whole process instead (taskset -c N java ...)");

        byte[] msg = new byte[(int) messageBytes];
        for (int i = 0; i < msg.length; i++) msg[i] = (byte) ((31 * i + 7) & 0xff);

        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("protocol", PROTOCOL);
        doc.put("program", PROGRAM);
        doc.put("implementation", IMPL);
        doc.put("version", version());
        doc.put("algorithm", s.name);
        doc.put("kind", s.kind);
        doc.put("clock", "System.nanoTime (monotonic)");
        doc.put("api", s.api);
        doc.put("classes", s.classes);
        doc.putAll(Main.runtime());
        // The first calls after the process starts (--cold), then the study's JIT warm-up (--warmup-seconds).
        Cold first = new Cold(s, msg);
        first.run(cold);
        long warmRounds = first.warm(warmupSeconds);
        Setup setup = new Setup(s, msg, pool);
        doc.put("sizes", setup.sizes);
        List<Object> results = new ArrayList<>();
        boolean allOk = true;
        for (String op : ops) {
            Timer timer = new Timer(setup, op);
            timer.fail(first.errors.get(op));
            Map<String, Object> r = timer.run(budget, (int) minSamples, (int) maxSamples, (int) warmup, sampleNs, target);
            r.put("cold_ns", first.times.get(op));
            allOk &= Boolean.TRUE.equals(r.get("verified"));
            results.add(r);
        }
        doc.put("operations", results);
        doc.put("cold_rounds", cold);
        doc.put("warmup_seconds", warmupSeconds);
        doc.put("warmup_rounds", warmRounds);
        doc.put("target_rel_ci", target > 0 ? (Object) target : null);
        doc.put("overhead_ns", Timer.overhead());
        doc.put("sink", Timer.sink);
        Main.out.println(Json.write(doc));
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

    /**
     * PROTOCOL.md's step 2 (--cold N) as the first study ran it: N rounds straight after the process starts, each
     * a fresh key pair, then encaps / sign / encrypt with it, then decaps / verify / decrypt of that output, every
     * call timed alone (the same timed call as the samples; objects a caller prepares per key are made untimed in
     * between) and each round's output checked after it.  Then --warmup-seconds of such rounds, untimed (the
     * study's JIT warm-up; at least 3 rounds when given).
     */
    static final class Cold {
        final Scheme s;
        final byte[] msg;
        final Map<String, List<Long>> times = new LinkedHashMap<>();
        final Map<String, String> errors = new HashMap<>();

        Cold(Scheme s, byte[] msg) {
            this.s = s;
            this.msg = msg;
            for (String op : s.operations()) times.put(op, new ArrayList<>());
        }

        void fail(int op, String why) {
            errors.putIfAbsent(s.operations()[op], why);
        }

        void run(int rounds) {
            for (int r = 0; r < rounds; r++) {
                try {
                    long[] t = round();
                    for (int i = 0; i < 3; i++) times.get(s.operations()[i]).add(t[i]);
                } catch (Exception e) {
                    for (int i = 0; i < 3; i++) fail(i, "cold round " + r + ": " + oneLine(e));
                    return;
                }
            }
        }

        long warm(double seconds) {
            if (seconds <= 0) return 0;
            long rounds = 0, end = System.nanoTime() + (long) (seconds * 1e9);
            try {
                while (rounds < 3 || System.nanoTime() - end < 0) {
                    round();
                    rounds++;
                }
            } catch (Exception e) {
                for (int i = 0; i < 3; i++) fail(i, "warm-up: " + oneLine(e));
            }
            return rounds;
        }

        /** One round: the three calls' nanoseconds; a failed check fails the round's forward and backward calls. */
        long[] round() throws Exception {
            long t0, t1, t2, t3, t4, t5;
            boolean ok;
            if (s instanceof Kem) {
                Kem kem = (Kem) s;
                t0 = System.nanoTime();
                Keys k = kem.keygen();
                t1 = System.nanoTime();
                Kem.Encapsulator enc = kem.encapsulator(kem.parsePublicKey(kem.publicKeyBytes(k)));
                t2 = System.nanoTime();
                byte[][] r = enc.encaps();
                t3 = System.nanoTime();
                Kem.Decapsulator dec = kem.decapsulator(k);
                t4 = System.nanoTime();
                byte[] ss = dec.decaps(r[0]);
                t5 = System.nanoTime();
                ok = Arrays.equals(ss, r[1]);
            } else if (s instanceof Sig) {
                Sig sig = (Sig) s;
                t0 = System.nanoTime();
                Keys k = sig.keygen();
                t1 = System.nanoTime();
                Sig.SignFn signer = sig.signer(k, false);
                t2 = System.nanoTime();
                byte[] signature = signer.sign(msg);
                t3 = System.nanoTime();
                Sig.VerifyFn ver = sig.verifier(sig.parsePublicKey(sig.publicKeyBytes(k)));
                t4 = System.nanoTime();
                ok = ver.verify(msg, signature);
                t5 = System.nanoTime();
            } else {
                Pke pke = (Pke) s;
                t0 = System.nanoTime();
                Keys k = pke.keygen();
                t1 = System.nanoTime();
                t2 = t1;
                byte[] ct = pke.encrypt(k, msg);
                t3 = System.nanoTime();
                t4 = t3;
                byte[] back = pke.decrypt(k, ct);
                t5 = System.nanoTime();
                ok = Arrays.equals(back, msg) && !Arrays.equals(ct, msg);
            }
            Timer.sink ^= (int) t5;
            if (!ok) {
                fail(1, "a round of the first calls did not round-trip");
                fail(2, "a round of the first calls did not round-trip");
            }
            return new long[]{t1 - t0, t3 - t2, t5 - t4};
        }
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
        /** --pool: the ciphertexts decaps cycles through, and their shared secrets. */
        byte[][] cts, sss;
        final int pool;
        /** A cipher's or public-key encryption's ciphertext of the message. */
        byte[] encrypted;

        Setup(Scheme s, byte[] msg, int pool) {
            this.s = s;
            this.msg = msg;
            this.pool = pool;
            try {
                error = make();
            } catch (Exception e) {
                error = "setup: " + oneLine(e);
            }
        }

        private String make() throws Exception {
            keys = s.keygen();
            byte[] pk = s.publicKeyBytes(keys);
            if (s instanceof Pke) return makePke((Pke) s, pk);
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
                cts = new byte[pool][];
                sss = new byte[pool][];
                cts[0] = ct;
                sss[0] = ss;
                for (int i = 1; i < pool; i++) {
                    byte[][] more = kem.encapsulator(pub).encaps();
                    cts[i] = more[0];
                    sss[i] = more[1];
                }
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
            sizes.putAll(s.extraSizes(keys, signature));
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

        /** A cipher (key: its secret key) or a public-key encryption: one ciphertext of the message, checked to
         *  decrypt to it, and the tampered one (first byte flipped) checked not to. */
        private String makePke(Pke pke, byte[] pk) throws Exception {
            if (pk.length > 0) sizes.put("public_key", pk.length);
            sizes.put(s.kind.equals("cipher") ? "key" : "secret_key", s.secretKeyBytes(keys).length);
            sizes.put(s.kind.equals("cipher") ? "key_format" : "secret_key_format", s.skFormat);
            encrypted = pke.encrypt(keys, msg);
            sizes.put("ciphertext", encrypted.length);
            sizes.putAll(s.extraSizes(keys, encrypted));
            if (!Arrays.equals(pke.decrypt(keys, encrypted), msg)) return "setup: a fresh ciphertext did not decrypt to the message";
            byte[] bad = encrypted.clone();
            bad[0] ^= 1;
            try {
                if (Arrays.equals(pke.decrypt(keys, bad), msg)) return "tampered ciphertext (first byte flipped) decrypted to the message";
            } catch (Exception rejected) {
                // a padding error: rejected
            }
            return null;
        }
    }
}
