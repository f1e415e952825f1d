package pqlab.impls;

import static pqlab.impls.Main.oneLine;

import java.util.Arrays;

import pqlab.impls.Schemes.Kem;
import pqlab.impls.Schemes.Keys;
import pqlab.impls.Schemes.Pke;
import pqlab.impls.Schemes.Scheme;
import pqlab.impls.Schemes.Sig;

/**
 * A batch of `loops` calls of one operation; the last output is kept in a field and checked after the batch.  Each
 * operation has its own subclass, so that the loop in {@link #timed} calls the operation directly.
 */
abstract class Batch {
    long errors;
    String firstError;

    void error(Exception e) {
        if (errors++ == 0) firstError = oneLine(e);
    }

    /** Runs `loops` calls between two reads of the clock; the nanoseconds. */
    abstract long timed(int loops);

    /** Null when the last output is right, else why not. */
    abstract String check() throws Exception;

    /** keygen; the check: `empty` when it gave nothing, else whether the last key pair round-trips. */
    static final class Keygen extends Batch {
        interface RoundTrip { String check(Keys k) throws Exception; }

        final Scheme s;
        final String empty;
        final RoundTrip roundTrip;
        Keys last;

        Keygen(Scheme s, String empty, RoundTrip roundTrip) { this.s = s; this.empty = empty; this.roundTrip = roundTrip; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = s.keygen();
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() throws Exception { return last == null ? empty : roundTrip.check(last); }
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

    /** Decaps of the same ciphertext, or (--pool N) cycling through N ciphertexts. */
    static final class Decaps extends Batch {
        final Kem.Decapsulator dec;
        final byte[][] cts, expected;
        byte[] last;
        int at, lastAt;

        Decaps(Kem.Decapsulator dec, byte[][] cts, byte[][] expected) { this.dec = dec; this.cts = cts; this.expected = expected; }

        long timed(int loops) {
            last = null;
            int n = cts.length;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    lastAt = at;
                    last = dec.decaps(cts[at]);
                    if (++at == n) at = 0;
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() {
            return Arrays.equals(last, expected[lastAt]) ? null : "decaps gave another shared secret than the expected one";
        }
    }

    static final class Encrypt extends Batch {
        final Pke pke;
        final Keys keys;
        final byte[] msg;
        byte[] last;

        Encrypt(Pke pke, Keys keys, byte[] msg) { this.pke = pke; this.keys = keys; this.msg = msg; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = pke.encrypt(keys, msg);
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() throws Exception {
            if (last == null) return "encrypt gave no ciphertext";
            if (Arrays.equals(last, msg)) return "encrypt gave the plaintext";
            return Arrays.equals(pke.decrypt(keys, last), msg) ? null : "a ciphertext did not decrypt to the message";
        }
    }

    static final class Decrypt extends Batch {
        final Pke pke;
        final Keys keys;
        final byte[] ct, msg;
        byte[] last;

        Decrypt(Pke pke, Keys keys, byte[] ct, byte[] msg) { this.pke = pke; this.keys = keys; this.ct = ct; this.msg = msg; }

        long timed(int loops) {
            last = null;
            long t0 = System.nanoTime();
            for (int i = 0; i < loops; i++) {
                try {
                    last = pke.decrypt(keys, ct);
                } catch (Exception e) {
                    error(e);
                }
            }
            return System.nanoTime() - t0;
        }

        String check() {
            return Arrays.equals(last, msg) ? null : "decrypt did not give the message";
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
}
