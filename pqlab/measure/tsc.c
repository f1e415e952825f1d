/*
 * pqlab's TSC helper: a shared library that Python loads with ctypes (pqlab/measure/cycles.py builds
 * it with the machine's C compiler into ~/.cache/pqlab on first use, or `make setup` does).
 *
 *   pqlab_tsc_read()       the counter now (see tsc.h)
 *   pqlab_tsc_hz()         its rate in Hz where the hardware states it (aarch64), else 0
 *   pqlab_tsc_span(n)      ticks spent by n back-to-back reads (the cost of a read inside C)
 *   pqlab_tsc_name()       the instruction: "rdtsc" or "cntvct_el0"
 */
#include "tsc.h"

uint64_t pqlab_tsc_read(void) {
	return pqlab_tsc_now();
}

uint64_t pqlab_tsc_hz(void) {
	return pqlab_tsc_frequency();
}

uint64_t pqlab_tsc_span(uint64_t n) {
	uint64_t first = pqlab_tsc_now(), last = first;
	for (uint64_t i = 0; i < n; i++) {
		last = pqlab_tsc_now();
	}
	return last - first;
}

const char *pqlab_tsc_name(void) {
	return PQLAB_TSC_NAME;
}
