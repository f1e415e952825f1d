/* Two toy functions whose timing leak depends on the compiler setting, for issue #47's test that the taint
 * check and the disassembly scan tell two builds of the same source apart (tests/checks/test_compiler_settings.py
 * compiles this file as a shared library at several levels; pqlab.taint's kind "function" calls each as
 * f(out, secret, n)).
 *
 * pqlab_toy_select: a select on a secret byte, written `s ? a : b` (the constant-time idiom liboqs#2402 saw clang
 *   turn into a branch).  Measured with objdump and memcheck (secret undefined) on x86-64, gcc 12 and clang 19:
 *   -O0 (gcc and clang): pick is a conditional jump on s; memcheck reports "Conditional jump or move depends on
 *       uninitialised value(s)" in pick.
 *   -O2, -O3, -Os (gcc and clang): pick is a cmov; memcheck reports nothing.
 *   pick is kept out of line: inlined into the loop, gcc -O2 branches on the secret instead of using a cmov.
 *
 * pqlab_toy_tomsg: Kyber's poly_tomsg rounding, ((t << 1) + q/2) / q with q = 3329, on a secret-derived t
 *   (KyberSlash: a `div` takes a time that depends on its dividend).  Measured with objdump on x86-64:
 *   gcc -Os and clang -O0: a `div`;  gcc -O0, -O2, -O3 and clang -O2, -O3, -Os: a multiply by the reciprocal.
 *   memcheck is silent on both (a division is no branch); only the disassembly tells them apart.
 */
#include <stddef.h>
#include <stdint.h>

__attribute__((noinline)) static uint32_t pick(uint32_t s, uint32_t a, uint32_t b) {
	return s ? a : b;
}

void pqlab_toy_select(uint8_t *out, const uint8_t *secret, size_t n) {
	for (size_t i = 0; i < n; i++)
		out[i] = (uint8_t)pick(secret[i], 0x5au + (uint32_t)i, 0xa5u ^ (uint32_t)i);
}

void pqlab_toy_tomsg(uint8_t *out, const uint8_t *secret, size_t n) {
	for (size_t i = 0; i < n; i++) {
		uint32_t t = (uint32_t)secret[i] * 13u; /* a coefficient below q, as poly_tomsg's are */
		out[i] = (uint8_t)((((t << 1) + 1664) / 3329) & 1);
	}
}
