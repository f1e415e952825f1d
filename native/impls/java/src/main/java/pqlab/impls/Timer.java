package pqlab.impls;

import static pqlab.impls.Main.oneLine;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import pqlab.impls.Schemes.Kem;
import pqlab.impls.Schemes.Pke;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;
import pqlab.impls.Time.Setup;

/** One operation's calibration, warm-up, samples and checks (PROTOCOL.md, `time`, steps 2 to 4). */
final class Timer {
    static final int MAX_LOOPS = 1 << 20;

    /** Keeps the JIT from discarding results of untimed calls. */
    static volatile int sink;

    /** The median of 1001 back-to-back System.nanoTime() pairs. */
    static long overhead() {
        long[] ov = new long[1001];
        for (int i = 0; i < ov.length; i++) {
            long t0 = System.nanoTime();
            ov[i] = System.nanoTime() - t0;
        }
        Arrays.sort(ov);
        return ov[ov.length / 2];
    }

    /** Half the width of the 95 % confidence interval of the median over the median, as pqlab.measure.stats computes
     *  it (order statistics x_(j), x_(n-1-j) for the largest j with 2 P(Binomial(n, 1/2) <= j) <= 5 %); NaN when
     *  there are too few samples for one. */
    static double precision(List<Double> samples) {
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
        double[] x = new double[n];
        for (int k = 0; k < n; k++) x[k] = samples.get(k);
        Arrays.sort(x);
        double median = n % 2 == 1 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2.0;
        return median == 0 ? Double.NaN : (x[n - j] - x[j - 1]) / 2.0 / Math.abs(median);
    }

    final Setup setup;
    final Scheme s;
    final String op;
    final byte[] msg;
    String error;

    Timer(Setup setup, String op) { this.setup = setup; this.s = setup.s; this.op = op; this.msg = setup.msg; this.error = setup.error; }

    void fail(String why) { if (error == null) error = why; }

    Map<String, Object> run(double budget, int minSamples, int maxSamples, int warmup, long sampleNs, double target) {
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("operation", op);
        r.put("message_bytes", !(s instanceof Kem) && !op.equals("keygen") ? (Object) msg.length : null);
        List<Double> samples = new ArrayList<>();
        int loops = 0, warmupBatches = 0;
        String stoppedBy = "";
        try {
            if (error == null) {
                Batch b = batch();
                System.gc();  // the garbage of the setup and of earlier operations, before this one's batches
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
                // --target-rel-ci: as pqlab.measure.timing.measure, look again after 10 % more samples
                int nextLook = target > 0 ? Math.max(minSamples, 1) : Integer.MAX_VALUE;
                while (error == null && samples.size() < maxSamples) {
                    if (samples.size() >= minSamples && System.nanoTime() - stop >= 0) { stoppedBy = "budget"; break; }
                    long ns = b.timed(loops);
                    samples.add(ns / (double) loops);
                    afterBatch(b);
                    if (samples.size() >= nextLook) {
                        if (precision(samples) <= target) { stoppedBy = "precision"; break; }
                        nextLook = samples.size() + Math.max(1, samples.size() / 10);
                    }
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

    /** The batch of the operation, on the shared setup; keygen's check: a new key round-trips. */
    Batch batch() {
        if (s instanceof Kem) {
            Kem kem = (Kem) s;
            switch (op) {
                case "keygen": return new Batch.Keygen(kem, "keygen gave no key pair", k -> {
                    byte[][] r = kem.encapsulator(kem.parsePublicKey(kem.publicKeyBytes(k))).encaps();
                    return Arrays.equals(kem.decapsulator(k).decaps(r[0]), r[1]) ? null
                        : "a new key pair did not round-trip encaps/decaps";
                });
                case "encaps": return new Batch.Encaps(kem.encapsulator(setup.pub), setup.dec);
                default: return new Batch.Decaps(setup.dec, setup.cts, setup.sss);
            }
        }
        if (s instanceof Pke) {
            Pke pke = (Pke) s;
            switch (op) {
                case "keygen": return new Batch.Keygen(pke, "keygen gave no key", k ->
                    Arrays.equals(pke.decrypt(k, pke.encrypt(k, msg)), msg) ? null : "a new key did not round-trip encrypt/decrypt");
                case "encrypt": return new Batch.Encrypt(pke, setup.keys, msg);
                default: return new Batch.Decrypt(pke, setup.keys, setup.encrypted, msg);
            }
        }
        switch (op) {
            case "keygen": return new Batch.Keygen(s, "keygen gave no key pair", k -> {
                Sig sig = (Sig) s;
                byte[] signature = sig.signer(k, false).sign(msg);
                return sig.verifier(sig.parsePublicKey(sig.publicKeyBytes(k))).verify(msg, signature) ? null
                    : "a new key pair did not round-trip sign/verify";
            });
            case "sign": return new Batch.Sign(setup.signer, setup.ver, msg);
            default: return new Batch.Verify(setup.ver, msg, setup.signature);
        }
    }
}
