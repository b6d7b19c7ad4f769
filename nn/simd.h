/* nn/simd.h — internal to nn: AVX-512 helpers (vector exp, horizontal sums) used by the fused
 * kernels. Everything here has a scalar fallback when the compiler target lacks AVX-512. */
#ifndef ASCENT_NN_SIMD_H
#define ASCENT_NN_SIMD_H

#include "common/common.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__AVX512F__)
#include <immintrin.h>
#define NN_AVX512 1

/* e^x for 16 lanes: range reduction by ln2, degree-6 polynomial, scalef. Relative error < 2e-7 on
 * [-87, 88]; inputs below -87 underflow smoothly to 0 (or a denormal), above 88.7 give inf. */
static inline __m512 nn_exp512(__m512 x)
{
	x = _mm512_max_ps(x, _mm512_set1_ps(-100.0f));
	x = _mm512_min_ps(x, _mm512_set1_ps(88.7f));
	__m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(1.44269504088896341f)),
					_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	__m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), x);
	r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187045e-06f), r);
	__m512 p = _mm512_set1_ps(1.0f / 720.0f);
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
	return _mm512_scalef_ps(p, n);
}
#endif

/* d[0..n) = bf16 of s[0..n): vcvtneps2bf16 where compiled in (which also flushes fp32 denormals
 * to ±0), else common's bf16_from_f32 (round to nearest even, NaN kept). */
static inline void nn_bf16_row(uint16_t *d, const float *s, size_t n)
{
	size_t i = 0;
#if defined(__AVX512BF16__)
	for (; i + 16 <= n; i += 16)
		_mm256_storeu_si256((__m256i *)(d + i), (__m256i)_mm512_cvtneps_pbh(_mm512_loadu_ps(s + i)));
#endif
	for (; i < n; i++)
		d[i] = bf16_from_f32(s[i]);
}

#endif
