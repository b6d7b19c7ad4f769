/* nn/kernels.c — the optimized elementwise and row kernels (embedding, LayerNorm, linear via
 * nn_gemm, gelu_new, residual, softmax + cross-entropy), OpenMP over rows and AVX-512 where it
 * pays, and the reference-mode switch. AdamW is wrapped in a profiler op range ("adamw"); the
 * model's ops are wrapped by their callers in stage.c. References are in kernels_ref.c. */
#include "nn/internal.h"
#include "nn/simd.h"
#include "profiler/prof.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

static int g_reference;

void nn_set_reference(int on)
{
	g_reference = on != 0;
}

int nn_get_reference(void)
{
	return g_reference;
}

/* This thread's share [*lo, *hi) of n items, split evenly; must be called inside a parallel region. */
static inline void thread_range(size_t n, size_t *lo, size_t *hi)
{
	size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
	*lo = n * id / nt;
	*hi = n * (id + 1) / nt;
}

/* ------------------------------------------------------------------------------------------ */
/* Embedding */

void nn_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C)
{
#pragma omp parallel for schedule(static)
	for (int i = 0; i < B * T; i++) {
		const float *e = wte + (size_t)inp[i] * C, *p = wpe + (size_t)(i % T) * C;
		float *o = out + (size_t)i * C;
#pragma omp simd
		for (int c = 0; c < C; c++)
			o[c] = e[c] + p[c];
	}
}

void nn_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C)
{
	/* each thread owns a range of channels: no races, deterministic order */
#pragma omp parallel
	{
		size_t lo, hi;
		thread_range((size_t)C, &lo, &hi);
		for (int i = 0; i < B * T; i++) {
			const float *d = dout + (size_t)i * C;
			float *e = dwte + (size_t)inp[i] * C, *p = dwpe + (size_t)(i % T) * C;
#pragma omp simd
			for (size_t c = lo; c < hi; c++) {
				e[c] += d[c];
				p[c] += d[c];
			}
		}
	}
}

/* ------------------------------------------------------------------------------------------ */
/* LayerNorm */

/* One row of the LayerNorm forward: o = LN(x), mean and rstd; oh (NULL: none) gets o in bf16 while
 * the row is in cache. Shared by the plain and the residual-fused forward, so both compute the
 * same bits. */
static inline void ln_row(float *o, uint16_t *oh, float *mean, float *rstd, const float *x, const float *w,
			  const float *b, int C)
{
	float s = 0;
#pragma omp simd reduction(+ : s)
	for (int c = 0; c < C; c++)
		s += x[c];
	float m = s / C, v = 0;
#pragma omp simd reduction(+ : v)
	for (int c = 0; c < C; c++)
		v += (x[c] - m) * (x[c] - m);
	float r = 1.0f / sqrtf(v / C + 1e-5f);
#pragma omp simd
	for (int c = 0; c < C; c++)
		o[c] = (x[c] - m) * r * w[c] + b[c];
	if (oh)
		nn_bf16_row(oh, o, (size_t)C);
	*mean = m;
	*rstd = r;
}

/* LayerNorm forward; out_h (NULL: none) gets out in bf16 in the same pass (each row while it is in
 * cache). */
static void layernorm_fwd(float *out, uint16_t *out_h, float *mean, float *rstd, const float *inp, const float *w,
			  const float *b, int N, int C)
{
	if (g_reference) {
		nn_layernorm_forward_ref(out, mean, rstd, inp, w, b, N, C);
		if (out_h)
			nn_bf16_from_f32_ref(out_h, out, (size_t)N * C);
		return;
	}
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++)
		ln_row(out + (size_t)i * C, out_h ? out_h + (size_t)i * C : NULL, mean + i, rstd + i, inp + (size_t)i * C,
		       w, b, C);
}

void nn_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
			  const float *b, int N, int C)
{
	layernorm_fwd(out, NULL, mean, rstd, inp, w, b, N, C);
}

void nn_layernorm_forward_bf16(float *out, uint16_t *out_h, float *mean, float *rstd, const float *inp,
			       const float *w, const float *b, int N, int C)
{
	layernorm_fwd(out, out_h, mean, rstd, inp, w, b, N, C);
}

void nn_residual_layernorm_forward(float *res, float *out, uint16_t *out_h, float *mean, float *rstd,
				   const float *a, const float *b, const float *w, const float *bias, int N, int C)
{
	if (g_reference) {
		nn_residual_layernorm_forward_ref(res, out, out_h, mean, rstd, a, b, w, bias, N, C);
		return;
	}
	/* each row's sum is made and normalised while it is in cache: the residual stream is read once
	 * instead of written by one pass and read back by the next */
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++) {
		const size_t o = (size_t)i * C;
		float *r = res + o;
#pragma omp simd
		for (int c = 0; c < C; c++)
			r[c] = a[o + c] + b[o + c];
		ln_row(out + o, out_h ? out_h + o : NULL, mean + i, rstd + i, r, w, bias, C);
	}
}

/* The rows LayerNorm's backward takes at a time: the pass that makes their dx and the channel pass
 * over them run back to back, so the channel pass reads x, dy and dx from the core's caches, not
 * from memory (64 rows of 3 fp32 arrays is 768 bytes a channel: 384 KB at C = 512). */
enum { LN_BWD_ROWS = 64 };

/* One row's two sums of the LayerNorm backward: ab[0] = mean(w·dy), ab[1] = mean(w·dy·x̂). */
static inline void ln_bwd_row_sums(float ab[2], const float *dy, const float *x, const float *w, float m, float r,
				   int C)
{
	float a = 0, bsum = 0;
#pragma omp simd reduction(+ : a, bsum)
	for (int c = 0; c < C; c++) {
		float dn = w[c] * dy[c];
		a += dn;
		bsum += dn * (x[c] - m) * r;
	}
	ab[0] = a / C;
	ab[1] = bsum / C;
}

/* dx += the input gradient over channels lo..hi of one row, from its sums ab. */
static inline void ln_bwd_row_apply(float *dx, const float *dy, const float *x, const float *w, float m, float r,
				    const float ab[2], size_t lo, size_t hi)
{
	const float a = ab[0], bsum = ab[1];
#pragma omp simd
	for (size_t c = lo; c < hi; c++) {
		float xh = (x[c] - m) * r;
		dx[c] += (w[c] * dy[c] - a - xh * bsum) * r;
	}
}

/* The channel pass of LayerNorm's backward over rows i0..i1 and channels lo..hi: db += dy,
 * dw += x̂·dy and (dlin not NULL) dlin += dx, each channel's sum taken row by row in order.
 * LN_BWD_COLS channels at a time, their sums held in registers across the rows rather than
 * loaded and stored for every row. */
enum { LN_BWD_COLS = 32 };
static void ln_bwd_channels(float *dlin, float *dw, float *db, const float *dinp, const float *dout,
			    const float *inp, const float *mean, const float *rstd, int i0, int i1, size_t lo,
			    size_t hi, int C)
{
	size_t c0 = lo;
	for (; c0 + LN_BWD_COLS <= hi; c0 += LN_BWD_COLS) {
		float sb[LN_BWD_COLS], sw[LN_BWD_COLS], sl[LN_BWD_COLS];
		memcpy(sb, db + c0, sizeof sb);
		memcpy(sw, dw + c0, sizeof sw);
		if (dlin)
			memcpy(sl, dlin + c0, sizeof sl);
		for (int i = i0; i < i1; i++) {
			const size_t o = (size_t)i * C + c0;
			const float *x = inp + o, *dy = dout + o;
			const float m = mean[i], r = rstd[i];
#pragma omp simd
			for (int k = 0; k < LN_BWD_COLS; k++) {
				sb[k] += dy[k];
				sw[k] += (x[k] - m) * r * dy[k];
			}
			if (dlin) {
				const float *dx = dinp + o;
#pragma omp simd
				for (int k = 0; k < LN_BWD_COLS; k++)
					sl[k] += dx[k];
			}
		}
		memcpy(db + c0, sb, sizeof sb);
		memcpy(dw + c0, sw, sizeof sw);
		if (dlin)
			memcpy(dlin + c0, sl, sizeof sl);
	}
	for (int i = i0; i < i1; i++) {
		const size_t o = (size_t)i * C;
		const float *x = inp + o, *dy = dout + o;
		const float m = mean[i], r = rstd[i];
		for (size_t c = c0; c < hi; c++) {
			db[c] += dy[c];
			dw[c] += (x[c] - m) * r * dy[c];
			if (dlin)
				dlin[c] += dinp[o + c];
		}
	}
}

/* nn_layernorm_backward: LN_BWD_ROWS rows at a time, the threads split the rows (each whole, dx
 * final at once), then each thread adds those rows to its own range of channels, row by row in
 * order, so every channel's sum is the same at any thread count. No barrier: the channel pass
 * reads only x and dy. */
static void ln_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp, const float *w,
		   const float *mean, const float *rstd, int N, int C)
{
#pragma omp parallel
	{
		size_t lo, hi;
		thread_range((size_t)C, &lo, &hi);
		for (int i0 = 0; i0 < N; i0 += LN_BWD_ROWS) {
			const int i1 = N - i0 < LN_BWD_ROWS ? N : i0 + LN_BWD_ROWS;
#pragma omp for schedule(static) nowait
			for (int i = i0; i < i1; i++) {
				const size_t o = (size_t)i * C;
				float ab[2];
				ln_bwd_row_sums(ab, dout + o, inp + o, w, mean[i], rstd[i], C);
				ln_bwd_row_apply(dinp + o, dout + o, inp + o, w, mean[i], rstd[i], ab, 0, (size_t)C);
			}
			ln_bwd_channels(NULL, dw, db, dinp, dout, inp, mean, rstd, i0, i1, lo, hi, C);
		}
	}
}

/* nn_layernorm_backward_bf16: dinp's column sums (dlin) need each row's final dx, and a channel pass
 * in row order over every row would then read each row twice from memory, or need a barrier every
 * few rows, which costs more than it saves where the threads sleep in it (the trainer's
 * OMP_WAIT_POLICY=passive). So each thread takes a contiguous range of rows and, LN_BWD_ROWS at a
 * time, makes their dx (the plain form's expressions: the same bits), the bf16 copy, and adds the
 * rows to its own channel sums while they are in cache: thread 0 into dw, db, dlin themselves,
 * thread t > 0 into sums of its own, which, after one barrier, are added to dw, db, dlin in thread
 * order (each thread a range of channels). At one thread that is the plain form's row order, and at
 * any thread count the same every time. Without memory for the sums it runs on one thread. */
static void ln_bwd_bf16(float *dinp, uint16_t *dinp_h, float *dlin, float *dw, float *db, const float *dout,
			const float *inp, const float *w, const float *mean, const float *rstd, int N, int C)
{
	const int nt = omp_get_max_threads();
	float *part = nt > 1 ? malloc(sizeof *part * 3 * (size_t)C * (size_t)(nt - 1)) : NULL;
#pragma omp parallel num_threads(part ? nt : 1)
	{
		const int id = omp_get_thread_num(), team = omp_get_num_threads();
		float *pw = dw, *pb = db, *pl = dlin;
		if (id > 0) {
			pw = part + 3 * (size_t)C * (size_t)(id - 1), pb = pw + C, pl = dlin ? pb + C : NULL;
			memset(pw, 0, sizeof *pw * 3 * (size_t)C);
		}
		const int r0 = (int)((long long)N * id / team), r1 = (int)((long long)N * (id + 1) / team);
		for (int i0 = r0; i0 < r1; i0 += LN_BWD_ROWS) {
			const int i1 = r1 - i0 < LN_BWD_ROWS ? r1 : i0 + LN_BWD_ROWS;
			for (int i = i0; i < i1; i++) {
				const size_t o = (size_t)i * C;
				float ab[2];
				ln_bwd_row_sums(ab, dout + o, inp + o, w, mean[i], rstd[i], C);
				ln_bwd_row_apply(dinp + o, dout + o, inp + o, w, mean[i], rstd[i], ab, 0, (size_t)C);
				if (dinp_h)
					nn_bf16_row(dinp_h + o, dinp + o, (size_t)C);
			}
			ln_bwd_channels(pl, pw, pb, dinp, dout, inp, mean, rstd, i0, i1, 0, (size_t)C, C);
		}
		if (team > 1) {
#pragma omp barrier
			size_t lo, hi;
			thread_range((size_t)C, &lo, &hi);
			for (int t = 1; t < team; t++) {
				const float *q = part + 3 * (size_t)C * (size_t)(t - 1);
				for (size_t c = lo; c < hi; c++) {
					dw[c] += q[c];
					db[c] += q[C + c];
					if (dlin)
						dlin[c] += q[2 * (size_t)C + c];
				}
			}
		}
	}
	free(part);
}

void nn_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
			   const float *w, const float *mean, const float *rstd, int N, int C)
{
	if (g_reference) {
		nn_layernorm_backward_ref(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
		return;
	}
	ln_bwd(dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

void nn_layernorm_backward_bf16(float *dinp, uint16_t *dinp_h, float *dlin, float *dw, float *db, const float *dout,
				const float *inp, const float *w, const float *mean, const float *rstd, int N, int C)
{
	if (g_reference) {
		nn_layernorm_backward_bf16_ref(dinp, dinp_h, dlin, dw, db, dout, inp, w, mean, rstd, N, C);
		return;
	}
	ln_bwd_bf16(dinp, dinp_h, dlin, dw, db, dout, inp, w, mean, rstd, N, C);
}

/* ------------------------------------------------------------------------------------------ */
/* Linear (Conv1D layout) */

void nn_linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int IC, int OC)
{
	if (!g_reference) {
		nn_gemm_bias(N, OC, IC, inp, w, b, out);
		return;
	}
	if (b) {
		for (int i = 0; i < N; i++)
			memcpy(out + (size_t)i * OC, b, (size_t)OC * sizeof *b);
	}
	nn_gemm_ref('N', 'N', N, OC, IC, 1.0f, inp, IC, w, OC, b ? 1.0f : 0.0f, out, OC);
}

void nn_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
			const float *w, int N, int IC, int OC)
{
	void (*gemm)(char, char, int, int, int, float, const float *, int, const float *, int, float, float *,
		     int) = g_reference ? nn_gemm_ref : nn_gemm;
	if (dinp)
		gemm('N', 'T', N, IC, OC, 1.0f, dout, OC, w, OC, 0.0f, dinp, IC);
	gemm('T', 'N', IC, OC, N, 1.0f, inp, IC, dout, OC, 1.0f, dw, OC);
	if (db) {
#pragma omp parallel
		{
			size_t lo, hi;
			thread_range((size_t)OC, &lo, &hi);
			for (int i = 0; i < N; i++) {
				const float *d = dout + (size_t)i * OC;
#pragma omp simd
				for (size_t c = lo; c < hi; c++)
					db[c] += d[c];
			}
		}
	}
}

/* ------------------------------------------------------------------------------------------ */
/* gelu_new = x·sigmoid(2u), u = sqrt(2/pi)(x + 0.044715x^3)  (0.5(1 + tanh u) = sigmoid(2u)) */

#define GELU_K 0.7978845608028654f
#define GELU_C 0.044715f

#ifdef NN_AVX512
/* gelu_new of 16 lanes: x / (1 + e^(-2u)). */
static inline __m512 gelu512(__m512 x)
{
	const __m512 k2 = _mm512_set1_ps(-2.0f * GELU_K), c = _mm512_set1_ps(GELU_C), one = _mm512_set1_ps(1.0f);
	__m512 x2 = _mm512_mul_ps(x, x);
	__m512 u = _mm512_mul_ps(k2, _mm512_fmadd_ps(_mm512_mul_ps(c, x2), x, x)); /* -2u */
	return _mm512_div_ps(x, _mm512_add_ps(one, nn_exp512(u)));
}

/* gelu_new'(x) of 16 lanes: s + x·s(1-s)·2u', s = sigmoid(2u), u' = K(1 + 3Cx^2). */
static inline __m512 gelu_grad512(__m512 x)
{
	const __m512 k2 = _mm512_set1_ps(-2.0f * GELU_K), c = _mm512_set1_ps(GELU_C), c3 = _mm512_set1_ps(3.0f * GELU_C),
		     one = _mm512_set1_ps(1.0f), twok = _mm512_set1_ps(2.0f * GELU_K);
	__m512 x2 = _mm512_mul_ps(x, x);
	__m512 u = _mm512_mul_ps(k2, _mm512_fmadd_ps(_mm512_mul_ps(c, x2), x, x));
	__m512 s = _mm512_div_ps(one, _mm512_add_ps(one, nn_exp512(u)));
	__m512 du = _mm512_mul_ps(twok, _mm512_fmadd_ps(c3, x2, one));
	return _mm512_fmadd_ps(_mm512_mul_ps(_mm512_mul_ps(x, s), _mm512_sub_ps(one, s)), du, s);
}

/* 16 bf16 values widened to fp32 (exactly). */
static inline __m512 bf16x16_load(const uint16_t *p)
{
	return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)), 16));
}
#endif

/* Scalar gelu_new and gelu_new' (the vector tails and the builds without AVX-512). */
static inline float gelu1(float x)
{
	float u = GELU_K * (x + GELU_C * x * x * x);
	return x / (1.0f + expf(-2.0f * u));
}

static inline float gelu_grad1(float x)
{
	float u = GELU_K * (x + GELU_C * x * x * x);
	float s = 1.0f / (1.0f + expf(-2.0f * u));
	return s + x * s * (1.0f - s) * 2.0f * GELU_K * (1.0f + 3.0f * GELU_C * x * x);
}

/* gelu_new forward; out_h (NULL: none) gets out in bf16 in the same pass. */
static void gelu_fwd(float *out, uint16_t *out_h, const float *inp, size_t n)
{
	if (g_reference) {
		nn_gelu_forward_ref(out, inp, n);
		if (out_h)
			nn_bf16_from_f32_ref(out_h, out, n);
		return;
	}
#pragma omp parallel
	{
		size_t lo, hi;
		thread_range(n, &lo, &hi);
		size_t i = lo;
#ifdef NN_AVX512
		for (; i + 16 <= hi; i += 16) {
			_mm512_storeu_ps(out + i, gelu512(_mm512_loadu_ps(inp + i)));
			if (out_h)
				nn_bf16_row(out_h + i, out + i, 16);
		}
#endif
		size_t tail = i;
		for (; i < hi; i++)
			out[i] = gelu1(inp[i]);
		if (out_h)
			nn_bf16_row(out_h + tail, out + tail, hi - tail);
	}
}

void nn_gelu_forward(float *out, const float *inp, size_t n)
{
	gelu_fwd(out, NULL, inp, n);
}

void nn_gelu_forward_bf16(float *out, uint16_t *out_h, const float *inp, size_t n)
{
	gelu_fwd(out, out_h, inp, n);
}

/* dinp[lo, hi) = gelu'(inp)·dout: d/dx x·s(2u) = s + x·s(1-s)·2u',  u' = K(1 + 3Cx^2); 16 lanes at
 * a time, the rest scalar (dinp may alias dout). */
static inline void gelu_bwd_span(float *dinp, const float *inp, const float *dout, size_t lo, size_t hi)
{
	size_t i = lo;
#ifdef NN_AVX512
	for (; i + 16 <= hi; i += 16)
		_mm512_storeu_ps(dinp + i, _mm512_mul_ps(gelu_grad512(_mm512_loadu_ps(inp + i)), _mm512_loadu_ps(dout + i)));
#endif
	for (; i < hi; i++)
		dinp[i] = gelu_grad1(inp[i]) * dout[i];
}

void nn_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n)
{
	if (g_reference) {
		nn_gelu_backward_ref(dinp, inp, dout, n);
		return;
	}
#pragma omp parallel
	{
		size_t lo, hi;
		thread_range(n, &lo, &hi);
		gelu_bwd_span(dinp, inp, dout, lo, hi);
	}
}

void nn_gelu_backward_bf16(float *dinp, uint16_t *dinp_h, float *db, const float *inp, const float *dout,
			   const uint16_t *dout_h, int N, int OC)
{
	if (g_reference) {
		nn_gelu_backward_bf16_ref(dinp, dinp_h, db, inp, dout, dout_h, N, OC);
		return;
	}
	/* each thread owns a range of columns (whole 16-lane vectors) and walks the rows in order: the
	 * gradient, its bf16 copy and the bias gradient's column sums in one pass (db bit for bit what
	 * a separate column-sum pass over dinp makes) */
#pragma omp parallel
	{
		size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
		size_t nv = ((size_t)OC + 15) / 16, lo = nv * id / nt * 16, hi = nv * (id + 1) / nt * 16;
		hi = hi < (size_t)OC ? hi : (size_t)OC;
		float tmp[16];
		for (int i = 0; lo < hi && i < N; i++) {
			const size_t o = (size_t)i * OC;
			for (size_t c = lo; c < hi; c += 16) {
				const size_t k = hi - c < 16 ? hi - c : 16, e = o + c;
				float *d = dinp ? dinp + e : tmp;
#ifdef NN_AVX512
				if (k == 16) {
					__m512 dy = dout_h ? bf16x16_load(dout_h + e) : _mm512_loadu_ps(dout + e);
					_mm512_storeu_ps(d, _mm512_mul_ps(gelu_grad512(_mm512_loadu_ps(inp + e)), dy));
				} else
#endif
				{
					for (size_t j = 0; j < k; j++)
						d[j] = gelu_grad1(inp[e + j]) * (dout_h ? f32_from_bf16(dout_h[e + j]) : dout[e + j]);
				}
				nn_bf16_row(dinp_h + e, d, k);
				if (db) {
#pragma omp simd
					for (size_t j = 0; j < k; j++)
						db[c + j] += d[j];
				}
			}
		}
	}
}

void nn_residual_forward(float *out, const float *a, const float *b, size_t n)
{
#pragma omp parallel for simd schedule(static)
	for (size_t i = 0; i < n; i++)
		out[i] = a[i] + b[i];
}

/* ------------------------------------------------------------------------------------------ */
/* Softmax + cross-entropy */

static float row_lse(const float *z, int V)
{
	float mx = -INFINITY;
	for (int v = 0; v < V; v++)
		mx = z[v] > mx ? z[v] : mx;
	float s = 0;
	int v = 0;
#ifdef NN_AVX512
	__m512 acc = _mm512_setzero_ps(), m = _mm512_set1_ps(mx);
	for (; v + 16 <= V; v += 16)
		acc = _mm512_add_ps(acc, nn_exp512(_mm512_sub_ps(_mm512_loadu_ps(z + v), m)));
	s = _mm512_reduce_add_ps(acc);
#endif
	for (; v < V; v++)
		s += expf(z[v] - mx);
	return mx + logf(s);
}

void nn_crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets, int N, int V)
{
	if (g_reference) {
		nn_crossentropy_forward_ref(losses, lse, logits, targets, N, V);
		return;
	}
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		float l = row_lse(z, V);
		lse[i] = l;
		if (losses)
			losses[i] = l - z[targets[i]];
	}
}

void nn_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int *targets,
			      float dloss, int N, int V)
{
	if (g_reference) {
		nn_crossentropy_backward_ref(dlogits, logits, lse, targets, dloss, N, V);
		return;
	}
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V;
		float *dz = dlogits + (size_t)i * V;
		float l = lse[i];
		int v = 0;
#ifdef NN_AVX512
		__m512 lv = _mm512_set1_ps(l), dl = _mm512_set1_ps(dloss);
		for (; v + 16 <= V; v += 16)
			_mm512_storeu_ps(dz + v, _mm512_mul_ps(dl, nn_exp512(_mm512_sub_ps(_mm512_loadu_ps(z + v), lv))));
#endif
		for (; v < V; v++)
			dz[v] = dloss * expf(z[v] - l);
		dz[targets[i]] -= dloss;
	}
}

/* Distillation: KL(p ‖ softmax(z)) per row and its gradient. Each term p·(log p − log q) is small
 * when the distributions are close, so the row sum (in double) keeps the small KL's digits. */

void nn_kldiv_forward(float *losses, float *lse, const float *logits, const float *probs, int N, int V)
{
	if (g_reference) {
		nn_kldiv_forward_ref(losses, lse, logits, probs, N, V);
		return;
	}
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V, *p = probs + (size_t)i * V;
		float l = row_lse(z, V);
		lse[i] = l;
		double s = 0;
		for (int v = 0; v < V; v++)
			if (p[v] > 0.0f)
				s += (double)(p[v] * (logf(p[v]) - (z[v] - l)));
		losses[i] = (float)s;
	}
}

void nn_kldiv_backward(float *dlogits, const float *logits, const float *lse, const float *probs, float dloss, int N,
		       int V)
{
	if (g_reference) {
		nn_kldiv_backward_ref(dlogits, logits, lse, probs, dloss, N, V);
		return;
	}
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++) {
		const float *z = logits + (size_t)i * V, *p = probs + (size_t)i * V;
		float *dz = dlogits + (size_t)i * V;
		float l = lse[i];
		int v = 0;
#ifdef NN_AVX512
		__m512 lv = _mm512_set1_ps(l), dl = _mm512_set1_ps(dloss);
		for (; v + 16 <= V; v += 16)
			_mm512_storeu_ps(dz + v, _mm512_mul_ps(dl, _mm512_sub_ps(nn_exp512(_mm512_sub_ps(_mm512_loadu_ps(z + v), lv)),
									      _mm512_loadu_ps(p + v))));
#endif
		for (; v < V; v++)
			dz[v] = dloss * (expf(z[v] - l) - p[v]);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* Optimizer and reductions */

void nn_zero_floats(float *x, size_t n)
{
#pragma omp parallel
	{
		size_t lo, hi;
		thread_range(n, &lo, &hi);
#ifdef NN_AVX512
		size_t i = lo;
		for (; i < hi && ((uintptr_t)(x + i) & 63); i++)
			x[i] = 0.0f;
		for (; i + 16 <= hi; i += 16)
			_mm512_stream_ps(x + i, _mm512_setzero_ps());
		for (; i < hi; i++)
			x[i] = 0.0f;
		_mm_sfence();
#else
		memset(x + lo, 0, (hi - lo) * sizeof *x);
#endif
	}
}

/* AdamW's per-call constants. */
struct adamw_k {
	float b1, b2, c1, c2, eps, lr, ib1, ib2, gs, decayed;
};

/* AdamW on elements [lo, hi) of piece p; p->param_h (NULL: none) gets each new parameter in bf16
 * while it is in a register. Every element is computed by the same operations whether it falls in
 * a vector or in the scalar tail (fused multiply-adds in both), so where a range starts or ends
 * changes no bit. */
static void adamw_range(const struct adamw_k *k, const struct nn_adamw_piece *p, size_t lo, size_t hi)
{
	float *param = p->param, *m = p->m, *v = p->v;
	const float *grad = p->grad;
	const float keep = p->decay ? k->decayed : 1.0f;
	size_t i = lo;
#ifdef NN_AVX512
	const __m512 vb1 = _mm512_set1_ps(k->b1), vb2 = _mm512_set1_ps(k->b2), vc1 = _mm512_set1_ps(k->c1),
		     vc2 = _mm512_set1_ps(k->c2), vib1 = _mm512_set1_ps(k->ib1), vib2 = _mm512_set1_ps(k->ib2),
		     veps = _mm512_set1_ps(k->eps), vlr = _mm512_set1_ps(k->lr), vkeep = _mm512_set1_ps(keep),
		     vgs = _mm512_set1_ps(k->gs);
	for (; i + 16 <= hi; i += 16) {
		__m512 g = _mm512_mul_ps(_mm512_loadu_ps(grad + i), vgs);
		__m512 mi = _mm512_fmadd_ps(vb1, _mm512_loadu_ps(m + i), _mm512_mul_ps(vc1, g));
		__m512 vi = _mm512_fmadd_ps(vb2, _mm512_loadu_ps(v + i), _mm512_mul_ps(_mm512_mul_ps(vc2, g), g));
		_mm512_storeu_ps(m + i, mi);
		_mm512_storeu_ps(v + i, vi);
		__m512 den = _mm512_add_ps(_mm512_sqrt_ps(_mm512_mul_ps(vi, vib2)), veps);
		__m512 upd = _mm512_div_ps(_mm512_mul_ps(vlr, _mm512_mul_ps(mi, vib1)), den);
		_mm512_storeu_ps(param + i, _mm512_fmsub_ps(_mm512_loadu_ps(param + i), vkeep, upd));
		if (p->param_h)
			nn_bf16_row(p->param_h + i, param + i, 16);
	}
#endif
	size_t tail = i;
	for (; i < hi; i++) {
		float g = grad[i] * k->gs;
		float mi = fmaf(k->b1, m[i], k->c1 * g);
		float vi = fmaf(k->b2, v[i], k->c2 * g * g);
		m[i] = mi;
		v[i] = vi;
		float upd = k->lr * (mi * k->ib1) / (sqrtf(vi * k->ib2) + k->eps);
		param[i] = fmaf(param[i], keep, -upd);
	}
	if (p->param_h)
		nn_bf16_row(p->param_h + tail, param + tail, hi - tail);
}

void nn_adamw_pieces(const struct nn_adamw *o, int t, const struct nn_adamw_piece *p, int np)
{
	if (g_reference) {
		for (int j = 0; j < np; j++) {
			nn_adamw_step_ref(o, t, p[j].param, p[j].grad, p[j].m, p[j].v, p[j].n, p[j].decay);
			if (p[j].param_h)
				nn_bf16_from_f32_ref(p[j].param_h, p[j].param, p[j].n);
		}
		return;
	}
	const struct adamw_k k = {
		.b1 = o->beta1, .b2 = o->beta2, .c1 = 1.0f - o->beta1, .c2 = 1.0f - o->beta2, .eps = o->eps, .lr = o->lr,
		.ib1 = (float)(1.0 / (1.0 - pow(o->beta1, t))), .ib2 = (float)(1.0 / (1.0 - pow(o->beta2, t))),
		.gs = o->grad_scale != 0.0f ? o->grad_scale : 1.0f, .decayed = 1.0f - o->lr * o->weight_decay,
	};
	size_t total = 0;
	for (int j = 0; j < np; j++)
		total += p[j].n;
	/* one pass, one parallel region for every piece: each thread an equal share of their elements
	 * (each element's gradient, moments and parameter read and written once) */
#pragma omp parallel
	{
		size_t lo, hi, off = 0;
		thread_range(total, &lo, &hi);
		for (int j = 0; j < np && off < hi; off += p[j].n, j++) {
			size_t a = lo > off ? lo - off : 0, b = hi - off < p[j].n ? hi - off : p[j].n;
			if (a < b)
				adamw_range(&k, &p[j], a, b);
		}
	}
}

void nn_adamw_step(const struct nn_adamw *o, int t, float *param, const float *grad, float *m, float *v,
		   size_t n, int decay)
{
	struct prof_tok tok = prof_op_begin("adamw", -1, 0);
	const struct nn_adamw_piece p = { param, NULL, grad, m, v, n, decay };
	nn_adamw_pieces(o, t, &p, 1);
	prof_op_end(&tok);
}

void nn_adamw_step_bf16(const struct nn_adamw *o, int t, float *param, uint16_t *param_h, const float *grad,
			float *m, float *v, size_t n, int decay)
{
	const struct nn_adamw_piece p = { param, param_h, grad, m, v, n, decay };
	nn_adamw_pieces(o, t, &p, 1);
}

/* The elements nn_sumsq_many sums in fp32 before adding them to a thread's double sum. */
enum { SUMSQ_CHUNK = 4096 };

double nn_sumsq_many(const float *const *x, const size_t *n, int k)
{
	size_t chunks = 0;
	for (int j = 0; j < k; j++)
		chunks += (n[j] + SUMSQ_CHUNK - 1) / SUMSQ_CHUNK;
	const int nt = omp_get_max_threads();
	double one = 0, *part = nt > 1 ? calloc((size_t)nt, sizeof *part) : NULL;
	/* each thread an equal share of all the spans' chunks; the threads' sums added in thread order
	 * (without memory for them, one thread) */
#pragma omp parallel num_threads(part ? nt : 1)
	{
		size_t lo, hi, base = 0;
		thread_range(chunks, &lo, &hi);
		double s = 0;
		for (int j = 0; j < k && base < hi; j++) {
			const size_t cj = (n[j] + SUMSQ_CHUNK - 1) / SUMSQ_CHUNK;
			for (size_t c = lo > base ? lo - base : 0; c < cj && base + c < hi; c++) {
				const size_t i = c * SUMSQ_CHUNK, e = i + SUMSQ_CHUNK < n[j] ? i + SUMSQ_CHUNK : n[j];
				float p = 0;
#pragma omp simd reduction(+ : p)
				for (size_t q = i; q < e; q++)
					p += x[j][q] * x[j][q];
				s += p;
			}
			base += cj;
		}
		if (part)
			part[omp_get_thread_num()] = s;
		else
			one = s;
	}
	for (int t = 0; part && t < nt; t++)
		one += part[t];
	free(part);
	return one;
}

double nn_sumsq(const float *x, size_t n)
{
	return nn_sumsq_many(&x, &n, 1);
}

void nn_scale(float *x, size_t n, float s)
{
#pragma omp parallel for simd schedule(static)
	for (size_t i = 0; i < n; i++)
		x[i] *= s;
}
