/* nn/fakequant.c — fake quantization (quantization-aware training): the INT8 rounding every module
 * shares, the fake-quant kernels (weights per output channel or per tensor, inputs per-token
 * dynamic or per-tensor static), the clipped straight-through estimator, the model setting
 * (nn_gpt_set_fake_quant) and the helpers stage.c calls around its four linear layers per block. */
#include "nn/internal.h"

#include "common/common.h"

#include <immintrin.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

float nn_quant_row_amax(const float *x, int K)
{
	float m = 0.0f;
	int k = 0;
#ifdef __AVX512F__
	__m512 vm = _mm512_setzero_ps();
	for (; k + 16 <= K; k += 16)   /* max_ps(a, m) returns m when a is NaN, as the scalar loop does */
		vm = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(x + k)), vm);
	m = _mm512_reduce_max_ps(vm);
#endif
	for (; k < K; k++) {
		float a = fabsf(x[k]);
		m = a > m ? a : m;
	}
	return m;
}

#ifdef __AVX512F__
/* 16 of nn_quant_fake(x, s, inv): rint (MXCSR round-to-nearest-even, as rintf), NaN → 0, the clamp
 * to [−127, 127] (±inf clamp to ±127), times s — the scalar function's values bit for bit (the code r
 * is an integer-valued float, so s·(float)(int)r = s·r once −0 is made +0). */
static inline __m512 fake16(__m512 x, __m512 s, __m512 inv)
{
	__m512 r = _mm512_roundscale_ps(_mm512_mul_ps(x, inv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
	r = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(r, r, _CMP_ORD_Q), r);
	r = _mm512_min_ps(_mm512_max_ps(r, _mm512_set1_ps(-(float)NN_QMAX)), _mm512_set1_ps((float)NN_QMAX));
	r = _mm512_add_ps(r, _mm512_setzero_ps());   /* −0 → +0: the scalar code is the int 0 */
	return _mm512_mul_ps(s, r);
}
#endif

/* out[k] = nn_quant_fake(x[k], s, 1/s) over one row. */
static void fake_row(float *out, const float *x, int K, float s)
{
	float inv = 1.0f / s;
	int k = 0;
#ifdef __AVX512F__
	__m512 vs = _mm512_set1_ps(s), vi = _mm512_set1_ps(inv);
	for (; k + 16 <= K; k += 16)
		_mm512_storeu_ps(out + k, fake16(_mm512_loadu_ps(x + k), vs, vi));
#endif
	for (; k < K; k++)
		out[k] = nn_quant_fake(x[k], s, inv);
}

void nn_fq_weight_scales(const float *w, int IC, int OC, int per_tensor, float *scale)
{
	/* column amax of the (IC,OC) matrix; each thread owns a range of columns */
#pragma omp parallel
	{
		int nt = omp_get_num_threads(), id = omp_get_thread_num();
		int lo = (int)((int64_t)OC * id / nt), hi = (int)((int64_t)OC * (id + 1) / nt);
		for (int o = lo; o < hi; o++)
			scale[o] = 0.0f;
		for (int i = 0; i < IC; i++) {
			const float *r = w + (size_t)i * OC;
			int o = lo;
#ifdef __AVX512F__
			/* max_ps(a, m) returns m when a is NaN, as the scalar comparison does */
			for (; o + 16 <= hi; o += 16)
				_mm512_storeu_ps(scale + o, _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(r + o)),
									  _mm512_loadu_ps(scale + o)));
#endif
			for (; o < hi; o++) {
				float a = fabsf(r[o]);
				if (a > scale[o])
					scale[o] = a;
			}
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
		scale[o] = nn_quant_scale(scale[o]);
}

void nn_fq_weight(float *out, float *scale, const float *w, int IC, int OC, int per_tensor)
{
	nn_fq_weight_scales(w, IC, OC, per_tensor, scale);
#pragma omp parallel for schedule(static)
	for (int i = 0; i < IC; i++) {
		const float *r = w + (size_t)i * OC;
		float *q = out + (size_t)i * OC;
		int o = 0;
#ifdef __AVX512F__
		for (; o + 16 <= OC; o += 16) {
			__m512 vs = _mm512_loadu_ps(scale + o);   /* 1/s: IEEE division, as the scalar form */
			_mm512_storeu_ps(q + o, fake16(_mm512_loadu_ps(r + o), vs, _mm512_div_ps(_mm512_set1_ps(1.0f), vs)));
		}
#endif
		for (; o < OC; o++)
			q[o] = nn_quant_fake(r[o], scale[o], 1.0f / scale[o]);
	}
}

void nn_fq_act_dynamic(float *out, const float *x, int N, int K)
{
#pragma omp parallel for schedule(static)
	for (int n = 0; n < N; n++) {
		const float *r = x + (size_t)n * K;
		fake_row(out + (size_t)n * K, r, K, nn_quant_scale(nn_quant_row_amax(r, K)));
	}
}

void nn_fq_act_static(float *out, const float *x, size_t n, float s)
{
	const size_t chunk = 4096;
#pragma omp parallel for schedule(static)
	for (size_t c = 0; c < n; c += chunk)
		fake_row(out + c, x + c, (int)(n - c < chunk ? n - c : chunk), s);
}

void nn_fq_ste_static(float *dx, const float *x, size_t n, float s)
{
	float inv = 1.0f / s;
	const size_t chunk = 4096;
#pragma omp parallel for schedule(static)
	for (size_t c = 0; c < n; c += chunk) {
		size_t i = c, e = n - c < chunk ? n : c + chunk;
#ifdef __AVX512F__
		__m512 vi = _mm512_set1_ps(inv), lim = _mm512_set1_ps((float)NN_QMAX);
		for (; i + 16 <= e; i += 16) {
			__m512 r = _mm512_roundscale_ps(_mm512_mul_ps(_mm512_loadu_ps(x + i), vi),
							_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			__mmask16 out = _mm512_cmp_ps_mask(_mm512_abs_ps(r), lim, _CMP_GT_OQ);   /* NaN: kept */
			_mm512_mask_storeu_ps(dx + i, out, _mm512_setzero_ps());
		}
#endif
		for (; i < e; i++)
			if (fabsf(rintf(x[i] * inv)) > (float)NN_QMAX)
				dx[i] = 0.0f;
	}
}

/* ------------------------------------------------------------------------------------------ */
/* The model setting */

static void fq_free(struct nn_fake_quant *fq)
{
	if (!fq)
		return;
	free(fq->lin);
	free(fq);
}

void nn_fq_release(struct nn_gpt *m)
{
	fq_free(m->fq);
	m->fq = NULL;
}

int nn_gpt_set_fake_quant(struct nn_gpt *m, const struct nn_fake_quant *fq)
{
	if (!fq) {
		nn_fq_release(m);
		return 0;
	}
	if (m->shard.tp_size > 1)
		return ascent_error(ASCENT_EUSAGE, "fake quantization does not support tensor parallelism (tp %d): the "
				    "row-parallel layers would need a cross-rank max of their scales (use --tp 1; data "
				    "and pipeline parallelism work)", m->shard.tp_size);
	if (fq->n_layer != m->cfg.n_layer || !fq->lin)
		return ascent_error(ASCENT_EINPUT, "fake quantization describes %d layers, the model has %d",
				    fq->n_layer, m->cfg.n_layer);
	if (fq->act != NN_FQ_ACT_NONE && fq->act != NN_FQ_ACT_DYNAMIC && fq->act != NN_FQ_ACT_STATIC)
		return ascent_error(ASCENT_EINPUT, "fake quantization: unknown activation mode %d", (int)fq->act);
	size_t n = (size_t)fq->n_layer * NN_FQ_PER_LAYER;
	for (size_t i = 0; i < n; i++) {
		float s = fq->lin[i].in_scale;
		if (fq->lin[i].on && fq->act == NN_FQ_ACT_STATIC && !(s > 0.0f && isfinite(s)))
			return ascent_error(ASCENT_EINPUT, "fake quantization: block %zu linear %zu has static input scale %g "
					    "(must be finite and > 0: calibrate first)", i / NN_FQ_PER_LAYER,
					    i % NN_FQ_PER_LAYER, (double)s);
	}
	struct nn_fake_quant *c = calloc(1, sizeof *c);
	struct nn_fq_layer *lin = malloc(n * sizeof *lin);
	if (!c || !lin) {
		free(c);
		free(lin);
		return ascent_error(ASCENT_ENOMEM, "out of memory copying the fake-quantization setting");
	}
	*c = *fq;
	memcpy(lin, fq->lin, n * sizeof *lin);
	c->lin = lin;
	nn_fq_release(m);
	m->fq = c;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Helpers of stage.c */

const struct nn_fq_layer *nn_fq_layer_at(const struct nn_gpt *m, int layer, int k)
{
	if (!m->fq)
		return NULL;
	const struct nn_fq_layer *q = &m->fq->lin[(size_t)layer * NN_FQ_PER_LAYER + k];
	return q->on ? q : NULL;
}

const float *nn_fq_quant_weight(struct nn_gpt *m, const struct nn_fq_layer *q, const float *w, int IC, int OC)
{
	if (!q)
		return w;
	struct nn_acts *a = m->acts;
	nn_fq_weight(a->fq_w, a->fq_s, w, IC, OC, m->fq->per_tensor);
	return a->fq_w;
}

const float *nn_fq_quant_input(struct nn_gpt *m, const struct nn_fq_layer *q, const float *x, int N, int K)
{
	if (!q || m->fq->act == NN_FQ_ACT_NONE)
		return x;
	float *out = m->acts->fq_x;
	if (m->fq->act == NN_FQ_ACT_DYNAMIC)
		nn_fq_act_dynamic(out, x, N, K);
	else
		nn_fq_act_static(out, x, (size_t)N * K, q->in_scale);
	return out;
}

void nn_fq_ste(const struct nn_gpt *m, const struct nn_fq_layer *q, float *dx, const float *x, size_t n)
{
	if (q && m->fq->act == NN_FQ_ACT_STATIC)
		nn_fq_ste_static(dx, x, n, q->in_scale);
}
