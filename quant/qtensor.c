/* quant/qtensor.c — symmetric INT8 quantize/dequantize of weights (per channel or per tensor)
 * and activations (per-token dynamic, per-tensor static), and their fake-quant forms. Every
 * function rounds with quant_q() (rint, half to even), so fake-quant and INT8 codes agree. */
#include "quant/quant.h"

#include <string.h>

void quant_weight_quantize(const float *w, int IC, int OC, int per_tensor, int8_t *q, float *scale)
{
	for (int o = 0; o < OC; o++)
		scale[o] = 0.0f;
	/* column amax of the (IC,OC) matrix */
	for (int i = 0; i < IC; i++) {
		const float *r = w + (size_t)i * OC;
		for (int o = 0; o < OC; o++) {
			float a = fabsf(r[o]);
			if (a > scale[o])
				scale[o] = a;
		}
	}
	if (per_tensor) {
		float m = 0.0f;
		for (int o = 0; o < OC; o++)
			m = scale[o] > m ? scale[o] : m;
		for (int o = 0; o < OC; o++)
			scale[o] = m;
	}
	for (int o = 0; o < OC; o++)
		scale[o] = quant_scale(scale[o]);
	for (int o = 0; o < OC; o++) {
		float inv = 1.0f / scale[o];
		int8_t *qr = q + (size_t)o * IC;
		for (int i = 0; i < IC; i++)
			qr[i] = (int8_t)quant_q(w[(size_t)i * OC + o], inv);
	}
}

void quant_weight_dequantize(const int8_t *q, const float *scale, int IC, int OC, float *w)
{
	for (int i = 0; i < IC; i++)
		for (int o = 0; o < OC; o++)
			w[(size_t)i * OC + o] = scale[o] * (float)q[(size_t)o * IC + i];
}

static float row_amax(const float *x, int K)
{
	float m = 0.0f;
	for (int k = 0; k < K; k++) {
		float a = fabsf(x[k]);
		m = a > m ? a : m;
	}
	return m;
}

void quant_act_dynamic(const float *x, int N, int K, int8_t *q, float *scale)
{
	for (int n = 0; n < N; n++) {
		const float *r = x + (size_t)n * K;
		float s = quant_scale(row_amax(r, K)), inv = 1.0f / s;
		scale[n] = s;
		for (int k = 0; k < K; k++)
			q[(size_t)n * K + k] = (int8_t)quant_q(r[k], inv);
	}
}

void quant_fake_act_dynamic(float *out, const float *x, int N, int K)
{
	for (int n = 0; n < N; n++) {
		const float *r = x + (size_t)n * K;
		float s = quant_scale(row_amax(r, K)), inv = 1.0f / s;
		for (int k = 0; k < K; k++)
			out[(size_t)n * K + k] = quant_fake(r[k], s, inv);
	}
}

void quant_fake_act_static(float *out, const float *x, size_t n, float s)
{
	float inv = 1.0f / s;
	for (size_t i = 0; i < n; i++)
		out[i] = quant_fake(x[i], s, inv);
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
