/* pqlab's lean path into liboqs: one Python call per sample runs the sample's calls in C.
 *
 * Each function calls one liboqs API function `n` times back to back on buffers its caller allocated once
 * (pqlab.backends.liboqs), and returns how many calls did not return OQS_SUCCESS (0).  The liboqs function
 * comes in as a pointer (ctypes takes its address from the loaded liboqs), so this file needs no liboqs header
 * and one compiled helper serves every liboqs build: the signatures below are liboqs's public API, the same
 * from 0.9 to 0.16.  Outputs are checked by the caller after the loop, outside the timed region.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

typedef int (*kem_keypair_fn)(const void *kem, uint8_t *pk, uint8_t *sk);
typedef int (*kem_encaps_fn)(const void *kem, uint8_t *ct, uint8_t *ss, const uint8_t *pk);
typedef int (*kem_decaps_fn)(const void *kem, uint8_t *ss, const uint8_t *ct, const uint8_t *sk);
typedef int (*sig_sign_fn)(const void *sig, uint8_t *s, size_t *s_len, const uint8_t *m, size_t m_len,
                           const uint8_t *sk);
typedef int (*sig_verify_fn)(const void *sig, const uint8_t *m, size_t m_len, const uint8_t *s, size_t s_len,
                             const uint8_t *pk);

/* OQS_KEM_keypair and OQS_SIG_keypair have the same shape */
long pqlab_keypair(kem_keypair_fn f, const void *obj, uint8_t *pk, uint8_t *sk, long n) {
	long failed = 0;
	for (long i = 0; i < n; i++)
		failed += f(obj, pk, sk) != 0;
	return failed;
}

long pqlab_encaps(kem_encaps_fn f, const void *kem, uint8_t *ct, uint8_t *ss, const uint8_t *pk, long n) {
	long failed = 0;
	for (long i = 0; i < n; i++)
		failed += f(kem, ct, ss, pk) != 0;
	return failed;
}

long pqlab_decaps(kem_decaps_fn f, const void *kem, uint8_t *ss, const uint8_t *ct, const uint8_t *sk, long n) {
	long failed = 0;
	for (long i = 0; i < n; i++)
		failed += f(kem, ss, ct, sk) != 0;
	return failed;
}

/* message i is messages[i * m_len .. (i + 1) * m_len) when `step` is 1, the same message every call when 0 */
long pqlab_sign(sig_sign_fn f, const void *sig, uint8_t *s, size_t *s_len, const uint8_t *messages, size_t m_len,
                long step, const uint8_t *sk, long n) {
	long failed = 0;
	for (long i = 0; i < n; i++)
		failed += f(sig, s, s_len, messages + (size_t)(i * step) * m_len, m_len, sk) != 0;
	return failed;
}

long pqlab_verify(sig_verify_fn f, const void *sig, const uint8_t *m, size_t m_len, const uint8_t *s, size_t s_len,
                  const uint8_t *pk, long n) {
	long failed = 0;
	for (long i = 0; i < n; i++)
		failed += f(sig, m, m_len, s, s_len, pk) != 0;
	return failed;
}

/* The timing screen's loop (pqlab.runners.leakage): call i decapsulates the ciphertext at cts + calls[i] * stride
 * and its time in nanoseconds goes to ns[i].  Each call's ciphertext is first copied into one buffer `ct` (the
 * copy's stores drained by a full fence) and its shared secret written to one buffer `out`, then copied to
 * ss + i * ss_len (for the caller to check after the loop), both outside the timed region: every class runs from
 * the same addresses, and the caller puts each distinct input at the same offset in a page of its own, so where an
 * input lies in memory cannot pass for a difference between classes.  CLOCK_MONOTONIC: the vDSO reads the
 * TSC where the kernel's clock source is the TSC, in nanoseconds on every architecture. */
static inline uint64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

long pqlab_decaps_each(kem_decaps_fn f, const void *kem, uint8_t *ss, uint8_t *out, size_t ss_len,
                       const uint8_t *cts, size_t stride, uint8_t *ct, size_t ct_len, const uint8_t *sk,
                       const int32_t *calls, long n, uint64_t *ns) {
	long failed = 0;
	for (long i = 0; i < n; i++) {
		memcpy(ct, cts + (size_t)calls[i] * stride, ct_len);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		uint64_t start = now_ns();
		failed += f(kem, out, ct, sk) != 0;
		ns[i] = now_ns() - start;
		memcpy(ss + (size_t)i * ss_len, out, ss_len);
	}
	return failed;
}

/* the same loop around a function that does nothing: what the lean path itself costs per call */
static int nothing(const void *obj, uint8_t *a, uint8_t *b) {
	(void)obj;
	(void)a;
	(void)b;
	return 0;
}

static kem_keypair_fn volatile noop_fn = (kem_keypair_fn)nothing; /* volatile: not inlined away */

long pqlab_noop(long n) {
	return pqlab_keypair(noop_fn, NULL, NULL, NULL, n);
}
