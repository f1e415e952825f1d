/*
 * The reference-cycle counter pqlab calls "tsc": one read, and its frequency where the
 * hardware states it.  Shared by the Python helper (pqlab/measure/tsc.c, loaded with ctypes) and
 * the native runner (native/bench/pqbench.c), so both read the same counter the same way.
 *
 * x86-64: RDTSC, the time-stamp counter.  With constant_tsc it ticks at a fixed rate whatever
 *   the core clock does (reference cycles, as SUPERCOP and liboqs's speed tools report); its
 *   rate is not in a register, so pqlab_tsc_hz() returns 0 and Python asks the kernel.
 *   No fence: the reads bracket whole library calls (microseconds), and SUPERCOP's
 *   amd64 cpucycles reads it the same way.
 * aarch64: CNTVCT_EL0, the generic timer's virtual count (after an ISB, so it is not read
 *   early), at the rate CNTFRQ_EL0 states.
 */
#ifndef PQLAB_TSC_H
#define PQLAB_TSC_H

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
static inline uint64_t pqlab_tsc_now(void) {
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t) hi << 32) | lo;
}
static inline uint64_t pqlab_tsc_frequency(void) {
	return 0;
}
#define PQLAB_TSC_NAME "rdtsc"
#elif defined(__aarch64__)
static inline uint64_t pqlab_tsc_now(void) {
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}
static inline uint64_t pqlab_tsc_frequency(void) {
	uint64_t f;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(f));
	return f;
}
#define PQLAB_TSC_NAME "cntvct_el0"
#else
#error "pqlab's reference-cycle counter knows x86-64 (rdtsc) and aarch64 (cntvct_el0) only"
#endif

#endif
