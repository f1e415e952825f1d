/*
 * pqlab's reference workload (pqlab/measure/noise.py): two fixed loops, timed at the start and end of every round, that
 * tell whether the machine's speed for scalar code and for vector code moved between rounds or runs.
 *
 *   pqlab_ref_scalar(n)  n steps of a dependent chain of 64-bit integer multiply, add and xor-shift: one scalar
 *                        core, no vector unit, no memory traffic
 *   pqlab_ref_vector(n)  n steps of eight independent 256-bit chains (AVX2: 16-bit multiply-high/low and add, as
 *                        the NTTs of ML-KEM and ML-DSA use, and single-precision FMA); where AVX2 is absent, the
 *                        same arithmetic on 128-bit vectors (SSE2 on x86-64, NEON on aarch64) or plain C
 *   pqlab_ref_vector_isa()  which of those pqlab_ref_vector runs: "avx2-fma", "sse2", "neon" or "c"
 *
 * Both return a value derived from every step so that no compiler can drop the loop.  The iteration counts are
 * fixed by the caller, never calibrated, so that times are comparable across rounds, runs and days.
 */
#include <stdint.h>
#include <string.h>

uint64_t pqlab_ref_scalar(uint64_t n) {
	uint64_t x = 0x9E3779B97F4A7C15u;
	for (uint64_t i = 0; i < n; i++) {
		x = x * 6364136223846793005u + 1442695040888963407u;
		x ^= x >> 29;
	}
	return x;
}

#if defined(__x86_64__)
#include <immintrin.h>

__attribute__((target("avx2,fma"))) static uint64_t vector_avx2(uint64_t n) {
	__m256i a = _mm256_set1_epi16(3), b = _mm256_set1_epi16(5), c = _mm256_set1_epi16(7), d = _mm256_set1_epi16(11);
	const __m256i q = _mm256_set1_epi16(3329), z = _mm256_set1_epi16(-3327);
	__m256 f = _mm256_set1_ps(1.0f), g = _mm256_set1_ps(2.0f), h = _mm256_set1_ps(3.0f), k = _mm256_set1_ps(4.0f);
	const __m256 m = _mm256_set1_ps(0.9999999f), e = _mm256_set1_ps(1e-7f);
	for (uint64_t i = 0; i < n; i++) {
		a = _mm256_add_epi16(_mm256_mulhi_epi16(a, q), _mm256_mullo_epi16(a, z));
		b = _mm256_add_epi16(_mm256_mulhi_epi16(b, q), _mm256_mullo_epi16(b, z));
		c = _mm256_add_epi16(_mm256_mulhi_epi16(c, q), _mm256_mullo_epi16(c, z));
		d = _mm256_add_epi16(_mm256_mulhi_epi16(d, q), _mm256_mullo_epi16(d, z));
		f = _mm256_fmadd_ps(f, m, e);
		g = _mm256_fmadd_ps(g, m, e);
		h = _mm256_fmadd_ps(h, m, e);
		k = _mm256_fmadd_ps(k, m, e);
	}
	uint16_t lanes[16];
	float floats[8];
	_mm256_storeu_si256((__m256i *)lanes, _mm256_xor_si256(_mm256_xor_si256(a, b), _mm256_xor_si256(c, d)));
	_mm256_storeu_ps(floats, _mm256_add_ps(_mm256_add_ps(f, g), _mm256_add_ps(h, k)));
	uint32_t bits;
	memcpy(&bits, &floats[0], sizeof bits);
	return (uint64_t)lanes[0] ^ ((uint64_t)lanes[15] << 16) ^ ((uint64_t)bits << 32);
}

static uint64_t vector_sse2(uint64_t n) {
	__m128i a = _mm_set1_epi16(3), b = _mm_set1_epi16(5), c = _mm_set1_epi16(7), d = _mm_set1_epi16(11);
	const __m128i q = _mm_set1_epi16(3329), z = _mm_set1_epi16(-3327);
	for (uint64_t i = 0; i < n; i++) {
		a = _mm_add_epi16(_mm_mulhi_epi16(a, q), _mm_mullo_epi16(a, z));
		b = _mm_add_epi16(_mm_mulhi_epi16(b, q), _mm_mullo_epi16(b, z));
		c = _mm_add_epi16(_mm_mulhi_epi16(c, q), _mm_mullo_epi16(c, z));
		d = _mm_add_epi16(_mm_mulhi_epi16(d, q), _mm_mullo_epi16(d, z));
	}
	uint16_t lanes[8];
	_mm_storeu_si128((__m128i *)lanes, _mm_xor_si128(_mm_xor_si128(a, b), _mm_xor_si128(c, d)));
	return (uint64_t)lanes[0] ^ ((uint64_t)lanes[7] << 16);
}

uint64_t pqlab_ref_vector(uint64_t n) {
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? vector_avx2(n) : vector_sse2(n);
}

const char *pqlab_ref_vector_isa(void) {
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? "avx2-fma" : "sse2";
}

#elif defined(__aarch64__)
#include <arm_neon.h>

uint64_t pqlab_ref_vector(uint64_t n) {
	int16x8_t a = vdupq_n_s16(3), b = vdupq_n_s16(5), c = vdupq_n_s16(7), d = vdupq_n_s16(11);
	const int16x8_t q = vdupq_n_s16(3329), z = vdupq_n_s16(-3327);
	for (uint64_t i = 0; i < n; i++) {
		a = vaddq_s16(vqdmulhq_s16(a, q), vmulq_s16(a, z));
		b = vaddq_s16(vqdmulhq_s16(b, q), vmulq_s16(b, z));
		c = vaddq_s16(vqdmulhq_s16(c, q), vmulq_s16(c, z));
		d = vaddq_s16(vqdmulhq_s16(d, q), vmulq_s16(d, z));
	}
	int16x8_t x = veorq_s16(veorq_s16(a, b), veorq_s16(c, d));
	return (uint64_t)(uint16_t)vgetq_lane_s16(x, 0) ^ ((uint64_t)(uint16_t)vgetq_lane_s16(x, 7) << 16);
}

const char *pqlab_ref_vector_isa(void) {
	return "neon";
}

#else

uint64_t pqlab_ref_vector(uint64_t n) {
	int16_t v[4][8] = {{3}, {5}, {7}, {11}};
	for (uint64_t i = 0; i < n; i++) {
		for (int j = 0; j < 4; j++) {
			for (int l = 0; l < 8; l++) {
				v[j][l] = (int16_t)(((int32_t)v[j][l] * 3329 >> 16) + (int16_t)(v[j][l] * -3327));
			}
		}
	}
	return (uint64_t)(uint16_t)(v[0][0] ^ v[1][7] ^ v[2][3] ^ v[3][5]);
}

const char *pqlab_ref_vector_isa(void) {
	return "c";
}

#endif
