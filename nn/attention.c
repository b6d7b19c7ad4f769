/* nn/attention.c — causal multi-head self-attention, forward and backward, through nn_gemm per
 * (batch, head), skipping the masked upper triangle block by block. The reference is in
 * kernels_ref.c. */
#include "nn/nn.h"
#include "nn/simd.h"

#include <math.h>
#include <string.h>

/* Rows are processed in blocks of ABLK; block r only needs key columns [0, (r+1)·ABLK). */
#define ABLK 64

size_t nn_attention_scratch_floats(int B, int T, int H)
{
	return (size_t)B * H * T * T; /* one T×T score-gradient tile per (batch, head) */
}

/* In place: row i of s (T wide) holds scaled scores for columns <= i; make it softmax, zero the rest. */
static void causal_softmax(float *s, int T)
{
	for (int i = 0; i < T; i++) {
		float *r = s + (size_t)i * T;
		float mx = -INFINITY, sum = 0;
		for (int j = 0; j <= i; j++)
			mx = r[j] > mx ? r[j] : mx;
		int j = 0;
#ifdef NN_AVX512
		__m512 m = _mm512_set1_ps(mx), acc = _mm512_setzero_ps();
		for (; j + 16 <= i + 1; j += 16) {
			__m512 e = nn_exp512(_mm512_sub_ps(_mm512_loadu_ps(r + j), m));
			_mm512_storeu_ps(r + j, e);
			acc = _mm512_add_ps(acc, e);
		}
		sum = _mm512_reduce_add_ps(acc);
#endif
		for (; j <= i; j++) {
			r[j] = expf(r[j] - mx);
			sum += r[j];
		}
		float inv = 1.0f / sum;
#pragma omp simd
		for (j = 0; j <= i; j++)
			r[j] *= inv;
		for (j = i + 1; j < T; j++)
			r[j] = 0;
	}
}

/* One (batch, head): scores by row blocks (causal), softmax, then att·V. */
static void head_forward(float *o, float *a, const float *q, int T, int C, int hs, float scale)
{
	const float *k = q + C, *v = q + 2 * C;
	int C3 = 3 * C;
	for (int r0 = 0; r0 < T; r0 += ABLK) {
		int rows = T - r0 < ABLK ? T - r0 : ABLK, cols = r0 + rows;
		nn_gemm('N', 'T', rows, cols, hs, scale, q + (size_t)r0 * C3, C3, k, C3, 0.0f, a + (size_t)r0 * T, T);
	}
	causal_softmax(a, T);
	for (int r0 = 0; r0 < T; r0 += ABLK) {
		int rows = T - r0 < ABLK ? T - r0 : ABLK, cols = r0 + rows;
		nn_gemm('N', 'N', rows, hs, cols, 1.0f, a + (size_t)r0 * T, T, v, C3, 0.0f, o + (size_t)r0 * C, C);
	}
}

static void head_backward(float *dq, float *da, const float *dy, const float *q, const float *a, int T, int C,
			  int hs, float scale)
{
	const float *k = q + C, *v = q + 2 * C;
	float *dk = dq + C, *dv = dq + 2 * C;
	int C3 = 3 * C;
	/* datt = dy · vᵀ (lower triangle, by row blocks) */
	for (int r0 = 0; r0 < T; r0 += ABLK) {
		int rows = T - r0 < ABLK ? T - r0 : ABLK, cols = r0 + rows;
		nn_gemm('N', 'T', rows, cols, hs, 1.0f, dy + (size_t)r0 * C, C, v, C3, 0.0f, da + (size_t)r0 * T, T);
	}
	/* dv = attᵀ · dy: key block c0 gets contributions only from query rows >= c0 */
	for (int c0 = 0; c0 < T; c0 += ABLK) {
		int cols = T - c0 < ABLK ? T - c0 : ABLK;
		nn_gemm('T', 'N', cols, hs, T - c0, 1.0f, a + (size_t)c0 * T + c0, T, dy + (size_t)c0 * C, C, 0.0f,
			dv + (size_t)c0 * C3, C3);
	}
	/* softmax backward: dpre = a·(da - Σ a·da)·scale */
	for (int i = 0; i < T; i++) {
		const float *ar = a + (size_t)i * T;
		float *dr = da + (size_t)i * T;
		float s = 0;
#pragma omp simd reduction(+ : s)
		for (int j = 0; j <= i; j++)
			s += ar[j] * dr[j];
#pragma omp simd
		for (int j = 0; j <= i; j++)
			dr[j] = ar[j] * (dr[j] - s) * scale;
		for (int j = i + 1; j < T; j++)
			dr[j] = 0;
	}
	/* dq = dpre · k (row blocks); dk = dpreᵀ · q (key blocks, rows >= c0) */
	for (int r0 = 0; r0 < T; r0 += ABLK) {
		int rows = T - r0 < ABLK ? T - r0 : ABLK, cols = r0 + rows;
		nn_gemm('N', 'N', rows, hs, cols, 1.0f, da + (size_t)r0 * T, T, k, C3, 0.0f, dq + (size_t)r0 * C3, C3);
	}
	for (int c0 = 0; c0 < T; c0 += ABLK) {
		int cols = T - c0 < ABLK ? T - c0 : ABLK;
		nn_gemm('T', 'N', cols, hs, T - c0, 1.0f, da + (size_t)c0 * T + c0, T, q + (size_t)c0 * C3, C3, 0.0f,
			dk + (size_t)c0 * C3, C3);
	}
}

/* oneDNN runs single-threaded inside an OpenMP region, so with it the (batch, head) pairs are split
 * over threads (two parallel regions per layer instead of one per GEMM); OpenBLAS's pthread build
 * cannot be told to stay on one thread per call, so with it each GEMM is threaded instead. */
static int heads_in_parallel(void)
{
	return nn_gemm_get_backend() == NN_GEMM_ONEDNN;
}

void nn_attention_forward(float *out, float *att, const float *qkv, int B, int T, int C, int H)
{
	if (nn_get_reference()) {
		nn_attention_forward_ref(out, att, qkv, B, T, C, H);
		return;
	}
	int hs = C / H, C3 = 3 * C;
	float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic, 1) if (heads_in_parallel())
	for (int bh = 0; bh < B * H; bh++) {
		int b = bh / H, h = bh % H;
		head_forward(out + (size_t)b * T * C + (size_t)h * hs, att + (size_t)bh * T * T,
			     qkv + (size_t)b * T * C3 + (size_t)h * hs, T, C, hs, scale);
	}
}

void nn_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *att,
			   int B, int T, int C, int H)
{
	if (nn_get_reference()) {
		nn_attention_backward_ref(dqkv, dout, qkv, att, B, T, C, H);
		return;
	}
	int hs = C / H, C3 = 3 * C;
	float scale = 1.0f / sqrtf((float)hs);
#pragma omp parallel for schedule(dynamic, 1) if (heads_in_parallel())
	for (int bh = 0; bh < B * H; bh++) {
		int b = bh / H, h = bh % H;
		head_backward(dqkv + (size_t)b * T * C3 + (size_t)h * hs, scratch + (size_t)bh * T * T,
			      dout + (size_t)b * T * C + (size_t)h * hs, qkv + (size_t)b * T * C3 + (size_t)h * hs,
			      att + (size_t)bh * T * T, T, C, hs, scale);
	}
}
