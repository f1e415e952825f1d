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
