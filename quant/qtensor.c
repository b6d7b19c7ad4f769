/* quant/qtensor.c — symmetric INT8 codes of weights (per channel or per tensor) and activations
 * (per-token dynamic, per-tensor static) for the INT8 path. Every function rounds with nn's
 * nn_quant_q() (rint, half to even) — the fake-quant kernels are nn's too (nn/fakequant.c) — so
 * fake-quant and INT8 codes agree. */
#include "quant/quant.h"

#include <immintrin.h>
#include <string.h>

void quant_weight_quantize(const float *w, int IC, int OC, int per_tensor, int8_t *q, float *scale)
{
	nn_fq_weight_scales(w, IC, OC, per_tensor, scale);
	for (int o = 0; o < OC; o++) {
		float inv = 1.0f / scale[o];
		int8_t *qr = q + (size_t)o * IC;
		for (int i = 0; i < IC; i++)
			qr[i] = (int8_t)nn_quant_q(w[(size_t)i * OC + o], inv);
	}
}

void quant_weight_dequantize(const int8_t *q, const float *scale, int IC, int OC, float *w)
{
	for (int i = 0; i < IC; i++)
		for (int o = 0; o < OC; o++)
			w[(size_t)i * OC + o] = scale[o] * (float)q[(size_t)o * IC + i];
}

#ifdef __AVX512F__
/* 16 codes nn_quant_q(x, inv) as int32: rint (MXCSR round-to-nearest-even, as rintf), NaN → 0, then
 * the clamp to [−127, 127] (±inf clamp to ±127). */
static inline __m512i codes16(__m512 x, __m512 inv)
{
	__m512 r = _mm512_roundscale_ps(_mm512_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r);
	r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-(float)NN_QMAX)), _mm512_set1_ps((float)NN_QMAX));
	return _mm512_cvtps_epi32(r);
}
#endif

void quant_row_codes_u8(const float *x, int K, float inv, uint8_t *out)
{
	int k = 0;
#ifdef __AVX512F__
	__m512 vi = _mm512_set1_ps(inv);
	__m512i off = _mm512_set1_epi32(128);
	for (; k + 16 <= K; k += 16)
		_mm_storeu_si128((__m128i *)(out + k), _mm512_cvtepi32_epi8(_mm512_add_epi32(codes16(_mm512_loadu_ps(x + k), vi), off)));
#endif
	for (; k < K; k++)
		out[k] = (uint8_t)(nn_quant_q(x[k], inv) + 128);
}

void quant_row_codes_s8(const float *x, int K, float inv, int8_t *out)
{
	int k = 0;
#ifdef __AVX512F__
	__m512 vi = _mm512_set1_ps(inv);
	for (; k + 16 <= K; k += 16)
		_mm_storeu_si128((__m128i *)(out + k), _mm512_cvtepi32_epi8(codes16(_mm512_loadu_ps(x + k), vi)));
#endif
	for (; k < K; k++)
		out[k] = (int8_t)nn_quant_q(x[k], inv);
}

void quant_act_dynamic(const float *x, int N, int K, int8_t *q, float *scale)
{
	for (int n = 0; n < N; n++) {
		const float *r = x + (size_t)n * K;
		float s = nn_quant_scale(nn_quant_row_amax(r, K)), inv = 1.0f / s;
		scale[n] = s;
		quant_row_codes_s8(r, K, inv, q + (size_t)n * K);
	}
}

double quant_sqnr_db(double signal, double noise)
{
	if (noise <= 0)
		return 200.0;
	if (signal <= 0)
		return -200.0;
	double db = 10.0 * log10(signal / noise);
	return db > 200.0 ? 200.0 : db;
}
