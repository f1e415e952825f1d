/* The timing screen's power check for liboqs (pqlab.runners.leakage, used by notebook 09 only): a decapsulation
 * that calls liboqs's OQS_KEM_decaps and then, for the calls given a delay, busy-waits on CLOCK_MONOTONIC until
 * the clock has advanced that far.  pqlab's lean loop (pqlab/backends/lean_loops.c, pqlab_decaps_each) calls it
 * in place of OQS_KEM_decaps between its two clock reads, so the wait lands inside the timed interval of the
 * calls given a delay only; every call, with a delay or not, goes through this same wrapper.  What each wait
 * really added (the clock's advance over it) goes to spun[i]. */
#include <stdint.h>
#include <time.h>

typedef int (*kem_decaps_fn)(const void *kem, uint8_t *ss, const uint8_t *ct, const uint8_t *sk);

static kem_decaps_fn real;
static const uint64_t *delays;
static uint64_t *spun;
static long next_call;

static inline uint64_t now_ns(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* before a loop: the real decapsulation, each call's delay (ns) and where each wait's length goes */
void pqlab_inject_setup(kem_decaps_fn f, const uint64_t *d, uint64_t *s) {
	real = f;
	delays = d;
	spun = s;
	next_call = 0;
}

int pqlab_inject_decaps(const void *kem, uint8_t *ss, const uint8_t *ct, const uint8_t *sk) {
	int r = real(kem, ss, ct, sk);
	uint64_t d = delays[next_call];
	if (d) {
		uint64_t s = now_ns(), t = s;
		while (t - s < d)
			t = now_ns();
		spun[next_call] = t - s;
	}
	next_call++;
	return r;
}
