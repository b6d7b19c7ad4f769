/* nn/precision.c — mixed-precision GEMMs for the model: operands rounded to bf16 or fp16 (round to
 * nearest even, with the formats' real range: fp16 overflows to inf above 65504 and flushes below
 * 2^-24), products accumulated in fp32. bf16 runs on oneDNN's bf16 matmul (brgemm: AMX-BF16 tiles
 * where the CPU has them, else AVX512_BF16 vdpbf16ps) with primitives cached by shape, whenever the
 * CPU has AVX512_BF16 (the default, nn_set_bf16_onednn): measured on the build machine (a Sapphire
 * Rapids with AMX, 2 threads, loaded host) the model's GEMM shapes run 2-4x faster than the fp32
 * GEMM. Without AVX512_BF16, or when oneDNN refuses a shape, bf16 (and fp16 always) is emulated:
 * operands rounded, then the fp32 GEMM. On oneDNN the linear layers read bf16 operands made once:
 * the weights by the optimizer's pass (nn_gpt_adamw_step) or else nn_bf16_weights at each forward,
 * the inputs by the ops that make them (stage.c); the gradients flowing back are converted here,
 * once per layer for both of its products, unless the op that made them did (the GELU's).
 * nn_gemm_bf16 (bf16 operands in, fp32 out) and nn_bf16_from_f32 are the public entry points.
 * Also the precision names and the inf/NaN scan for loss scaling. */
#include "nn/internal.h"
#include "nn/simd.h"

#include "common/common.h"
#include "profiler/prof.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>
#if defined(__AVX512F__)
#include <immintrin.h>
#endif

int nn_precision_parse(const char *s, enum nn_precision *out)
{
	static const char *names[] = { "fp32", "bf16", "fp16" };
	for (int i = 0; i < 3; i++)
		if (s && strcmp(s, names[i]) == 0) {
			*out = (enum nn_precision)i;
			return 0;
		}
	return ascent_error(ASCENT_EUSAGE, "unknown precision '%s' (accepted: fp32, bf16, fp16)", s ? s : "(null)");
}

const char *nn_precision_name(enum nn_precision p)
{
	return p == NN_BF16 ? "bf16" : p == NN_FP16 ? "fp16" : p == NN_FP32 ? "fp32" : "?";
}

int nn_has_nonfinite(const float *x, size_t n)
{
	int bad = 0;
#pragma omp parallel for reduction(| : bad) schedule(static)
	for (size_t i = 0; i < n; i += 4096) {
		size_t e = i + 4096 < n ? i + 4096 : n;
		uint32_t acc = 0;
		for (size_t j = i; j < e; j++) {
			uint32_t u;
			memcpy(&u, &x[j], 4);
			acc |= (u & 0x7f800000u) == 0x7f800000u;
		}
		bad |= acc != 0;
	}
	return bad;
}

/* ------------------------------------------------------------------------------------------ */
/* Rounding */

static inline float round_bf16(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return x; /* NaN */
	u += 0x7fffu + ((u >> 16) & 1u);
	u &= 0xffff0000u;
	memcpy(&x, &u, 4);
	return x;
}

/* Copy rows × cols (leading dimension sld) into dst (leading dimension dld), rounded; in place
 * when dst == src and dld == sld. */
static void round_copy(enum nn_precision p, float *dst, int dld, const float *src, int sld, int rows, int cols)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		const float *s = src + (size_t)r * sld;
		float *d = dst + (size_t)r * dld;
		int c = 0;
		if (p == NN_BF16) {
#pragma omp simd
			for (c = 0; c < cols; c++)
				d[c] = round_bf16(s[c]);
			continue;
		}
#if defined(__AVX512F__)
		for (; c + 16 <= cols; c += 16) {
			__m256i h = _mm512_cvtps_ph(_mm512_loadu_ps(s + c), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
			_mm512_storeu_ps(d + c, _mm512_cvtph_ps(h));
		}
#endif
		for (; c < cols; c++)
			d[c] = f32_from_f16(f16_from_f32(s[c]));
	}
}

/* ------------------------------------------------------------------------------------------ */
/* oneDNN bf16 matmul (nn_matmul: primitives cached by shape; the model has a dozen shapes). */

static int g_bf16_onednn = 1; /* process-wide, set by the main thread between calls */

void nn_set_bf16_onednn(int on)
{
	g_bf16_onednn = on != 0;
}

int nn_get_bf16_onednn(void)
{
	return g_bf16_onednn;
}

static int bf16_hw(void)
{
	static int v = -1;
	if (v < 0) {
		struct cpu_info ci;
		cpu_detect(&ci);
		v = ci.avx512bf16 != 0;
	}
	return v;
}

/* fp32 → bf16 bits, rows × cols (ld) into compact dst. */
static void to_bf16(uint16_t *dst, const float *src, int rows, int cols, int ld)
{
#pragma omp parallel for schedule(static)
	for (int r = 0; r < rows; r++) {
		const float *s = src + (size_t)r * ld;
		nn_bf16_row(dst + (size_t)r * cols, s, (size_t)cols);
	}
}

void nn_bf16_from_f32(uint16_t *dst, const float *src, size_t n)
{
	const size_t blk = 1 << 14;
#pragma omp parallel for schedule(static)
	for (size_t i = 0; i < n; i += blk) {
		size_t e = i + blk < n ? i + blk : n;
		nn_bf16_row(dst + i, src + i, e - i);
	}
}

void nn_bf16_from_f32_ref(uint16_t *dst, const float *src, size_t n)
{
	for (size_t i = 0; i < n; i++)
		dst[i] = bf16_from_f32(src[i]);
}

int nn_gemm_bf16(char transa, char transb, int M, int N, int K, const uint16_t *A, int lda, const uint16_t *B,
		 int ldb, float beta, float *C, int ldc)
{
	if (!bf16_hw())
		return -1;
	nn_get_threads(); /* applies the default thread count on first use */
	int ta = transa == 'T' || transa == 't', tb = transb == 'T' || transb == 't';
	return nn_matmul(NN_MM_BF16, ta, tb, M, N, K, 1.0f, A, lda, B, ldb, NULL, beta, C, ldc);
}

/* 0 when done by oneDNN's bf16 matmul. Ab, Bb: the operands already in bf16 (compact, as to_bf16
 * lays them out), or NULL to convert A into the workspace's pa and B into pb here. */
static int gemm_bf16_dnnl(struct nn_gpt *m, int ta, int tb, int M, int N, int K, const float *A, int lda,
			  const float *B, int ldb, float beta, float *C, int ldc, const uint16_t *Ab, const uint16_t *Bb)
{
	struct nn_acts *a = m->acts;
	if (!Ab) {
		to_bf16((uint16_t *)a->pa, A, ta ? K : M, ta ? M : K, lda);
		Ab = (const uint16_t *)a->pa;
	}
	if (!Bb) {
		to_bf16((uint16_t *)a->pb, B, tb ? N : K, tb ? K : N, ldb);
		Bb = (const uint16_t *)a->pb;
	}
	return nn_matmul(NN_MM_BF16, ta, tb, M, N, K, 1.0f, Ab, ta ? M : K, Bb, tb ? K : N, NULL, beta, C, ldc);
}

static int use_bf16_dnnl(const struct nn_gpt *m)
{
	return m->precision == NN_BF16 && !nn_get_reference() && g_bf16_onednn && bf16_hw();
}

int nn_bf16_active(const struct nn_gpt *m)
{
	return use_bf16_dnnl(m);
}

int nn_bf16_runs_onednn(void)
{
	return !nn_get_reference() && g_bf16_onednn && bf16_hw();
}

static const int g_wb_ids[] = { NN_QKVW, NN_ATTPROJW, NN_FCW, NN_FCPROJW };
#define NWB (sizeof g_wb_ids / sizeof g_wb_ids[0])

int nn_bf16_weights(struct nn_gpt *m)
{
	const int *ids = g_wb_ids;
	struct nn_acts *a = m->acts;
	size_t need = 0, elems = 0;
	for (size_t i = 0; i < NWB; i++) {
		need += (m->param_sizes[ids[i]] + 31) & ~(size_t)31; /* 64 B */
		elems += m->param_sizes[ids[i]];
	}
	/* the optimizer wrote every copy since the last forward: they are current */
	const int fresh = a->wb && a->wb_cap >= need && a->wb_fresh == elems;
	a->wb_fresh = 0;
	if (fresh)
		return 0;
	if (need > a->wb_cap) {
		uint16_t *wb = aligned_alloc(64, need * sizeof(uint16_t));
		if (!wb)
			return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB for the bf16 weights",
					    need * sizeof(uint16_t) >> 20);
		if (a->wb)
			prof_mem_free(DB_MEM_WORKSPACE, (int64_t)(a->wb_cap * sizeof(uint16_t)), a->wb);
		free(a->wb);
		a->wb = wb;
		a->wb_cap = need;
		prof_mem_alloc(DB_MEM_WORKSPACE, (int64_t)(need * sizeof(uint16_t)), wb);
	}
	size_t off = 0;
	for (size_t i = 0; i < NWB; i++) {
		a->wb_t[ids[i]] = a->wb + off;
		nn_bf16_from_f32(a->wb_t[ids[i]], m->param[ids[i]], m->param_sizes[ids[i]]);
		off += (m->param_sizes[ids[i]] + 31) & ~(size_t)31;
	}
	return 0;
}

/* The pieces nn_gpt_adamw_steps hands the threads at a time. */
enum { ADAMW_PIECES = 64 };

void nn_gpt_adamw_steps(struct nn_gpt *m, const struct nn_adamw *o, int t, const struct nn_adamw_span *s, int ns)
{
	struct prof_tok tok = prof_op_begin("adamw", -1, 0);
	struct nn_acts *a = m->acts;
	/* the copies exist once a bf16 forward made them (wb_t set), and are read while bf16 runs on oneDNN */
	const int copies = a && a->wb && a->wb_t[g_wb_ids[0]] && use_bf16_dnnl(m);
	struct nn_adamw_piece pc[ADAMW_PIECES];
	int np = 0;
	for (int j = 0; j < ns; j++) {
		size_t done = 0;
		while (done < s[j].n) {
			float *p = s[j].param + done;
			size_t len = s[j].n - done;
			uint16_t *ph = NULL;
			for (size_t k = 0; copies && k < NWB; k++) {
				const int id = g_wb_ids[k];
				float *lo = m->param[id], *hi = lo + m->param_sizes[id];
				if (p >= lo && p < hi) { /* inside matrix id: up to its end */
					ph = a->wb_t[id] + (p - lo);
					len = len < (size_t)(hi - p) ? len : (size_t)(hi - p);
					break;
				}
				if (p < lo && lo < p + len) /* a matrix starts inside: stop before it */
					len = (size_t)(lo - p);
			}
			if (np == ADAMW_PIECES) {
				nn_adamw_pieces(o, t, pc, np);
				np = 0;
			}
			pc[np++] = (struct nn_adamw_piece){ p, ph, s[j].grad + done, s[j].m + done, s[j].v + done, len,
							    s[j].decay };
			if (ph)
				a->wb_fresh += len;
			done += len;
		}
	}
	if (np)
		nn_adamw_pieces(o, t, pc, np);
	prof_op_end(&tok);
}

void nn_gpt_adamw_step(struct nn_gpt *m, const struct nn_adamw *o, int t, float *param, const float *grad,
		       float *mo, float *v, size_t n, int decay)
{
	const struct nn_adamw_span s = { param, grad, mo, v, n, decay };
	nn_gpt_adamw_steps(m, o, t, &s, 1);
}

void nn_gpt_params_changed(struct nn_gpt *m)
{
	if (m->acts)
		m->acts->wb_fresh = 0;
}

int nn_linear_fwd_bf16(struct nn_gpt *m, float *out, uint16_t *out_h, const float *inp, const float *w, const float *b,
		       int N, int IC, int OC, const uint16_t *inp_h, const uint16_t *w_h)
{
	if (!use_bf16_dnnl(m) || N <= 0 || IC <= 0 || OC <= 0)
		return -1;
	struct nn_acts *a = m->acts;
	if (!inp_h) {
		to_bf16((uint16_t *)a->pa, inp, N, IC, IC);
		inp_h = (const uint16_t *)a->pa;
	}
	if (!w_h) {
		to_bf16((uint16_t *)a->pb, w, IC, OC, OC);
		w_h = (const uint16_t *)a->pb;
	}
	if (out_h)
		return nn_matmul(NN_MM_BF16 | NN_MM_DST_BF16, 0, 0, N, OC, IC, 1.0f, inp_h, IC, w_h, OC, b, 0.0f, out_h, OC);
	return nn_matmul(NN_MM_BF16, 0, 0, N, OC, IC, 1.0f, inp_h, IC, w_h, OC, b, 0.0f, out, OC);
}

/* One pass over dout: each thread owns a range of columns (whole 16-lane vectors) and adds the rows
 * in order, so db comes out bit for bit as a separate column-sum pass would make it. */
void nn_bf16_colsum(uint16_t *dst, float *db, const float *dout, int N, int OC)
{
#pragma omp parallel
	{
		size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
		size_t nv = ((size_t)OC + 15) / 16, lo = nv * id / nt * 16, hi = nv * (id + 1) / nt * 16;
		hi = hi < (size_t)OC ? hi : (size_t)OC;
		for (int i = 0; lo < hi && i < N; i++) {
			const float *d = dout + (size_t)i * OC;
			if (dst)
				nn_bf16_row(dst + (size_t)i * OC + lo, d + lo, hi - lo);
			if (db) {
#pragma omp simd
				for (size_t c = lo; c < hi; c++)
					db[c] += d[c];
			}
		}
	}
}

uint16_t *nn_bf16_dout_buf(struct nn_gpt *m)
{
	/* pa holds pa_n floats = 2·pa_n bf16: a converted inp (N·IC <= pa_n) goes in the lower half,
	 * dout (N·OC <= pa_n) in the upper half */
	return (uint16_t *)m->acts->pa + m->acts->pa_n;
}

/* The error when a product must be remade from an fp32 dout that was not made (dout_h only). */
static int refused(int N, int IC, int OC)
{
	return ascent_error(ASCENT_EFAIL, "oneDNN refused a bf16 product of a linear layer's backward (%d x %d x %d) whose "
			    "gradient exists only in bf16, so it cannot be remade in fp32; rerun with --precision fp32",
			    N, IC, OC);
}

int nn_linear_bwd_bf16(struct nn_gpt *m, float *dinp, uint16_t *dinp_h, float *dw, float *db, const float *dout,
			const float *inp, const float *w, int N, int IC, int OC, const uint16_t *inp_h, const uint16_t *w_h,
			const uint16_t *dout_h)
{
	if (!use_bf16_dnnl(m) || N <= 0 || IC <= 0 || OC <= 0)
		return -1;
	if (!dout && (!dout_h || db))
		return ascent_error(ASCENT_EINTERNAL, "nn_linear_bwd_bf16: no fp32 dout needs dout_h and db NULL");
	/* dout converted once for both products (and db summed in the same pass), unless the op that
	 * made dout did both (dout_h) */
	uint16_t *dh = nn_bf16_dout_buf(m);
	if (dout_h) {
		dh = (uint16_t *)dout_h;
		if (db)
			nn_bf16_colsum(NULL, db, dout, N, OC);
	} else {
		nn_bf16_colsum(dh, db, dout, N, OC);
	}
	/* a product oneDNN refuses (nothing written) is made on rounded operands instead; that reuses
	 * pa, so the other product then goes the same way */
	int fell = 0, in_f32 = 0;
	if (dinp_h) {
		/* the input gradient in bf16 (oneDNN's bf16 destination: the fp32 sums rounded to nearest
		 * even); refused, it is made in fp32 in dinp below instead, and the caller told so */
		if (w_h && nn_matmul(NN_MM_BF16 | NN_MM_DST_BF16, 0, 1, N, IC, OC, 1.0f, dh, OC, w_h, OC, NULL, 0.0f,
				     dinp_h, IC) == 0)
			dinp = NULL;
		else
			in_f32 = 1;
	}
	if (dinp && (w_h ? nn_matmul(NN_MM_BF16, 0, 1, N, IC, OC, 1.0f, dh, OC, w_h, OC, NULL, 0.0f, dinp, IC)
			 : gemm_bf16_dnnl(m, 0, 1, N, IC, OC, NULL, 0, w, OC, 0.0f, dinp, IC, dh, NULL))) {
		if (!dout)
			return refused(N, IC, OC);
		nn_gemm_prec(m, 'N', 'T', N, IC, OC, dout, OC, w, OC, 0.0f, dinp, IC, 1);
		fell = 1;
	}
	if (fell || (inp_h ? nn_matmul(NN_MM_BF16, 1, 0, IC, OC, N, 1.0f, inp_h, IC, dh, OC, NULL, 1.0f, dw, OC)
			   : gemm_bf16_dnnl(m, 1, 0, IC, OC, N, inp, IC, NULL, 0, 1.0f, dw, OC, NULL, dh))) {
		if (!dout)
			return refused(N, IC, OC);
		nn_gemm_prec(m, 'T', 'N', IC, OC, N, inp, IC, dout, OC, 1.0f, dw, OC, 0);
	}
	return in_f32;
}

void nn_gemm_prec(struct nn_gpt *m, char ta, char tb, int M, int N, int K, const float *A, int lda,
		  const float *B, int ldb, float beta, float *C, int ldc, int round_out)
{
	int ref = nn_get_reference();
	void (*gemm)(char, char, int, int, int, float, const float *, int, const float *, int, float, float *,
		     int) = ref ? nn_gemm_ref : nn_gemm;
	enum nn_precision p = m->precision;
	if (p == NN_FP32 || M <= 0 || N <= 0) {
		gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
		return;
	}
	int at = ta == 'T' || ta == 't', bt = tb == 'T' || tb == 't';
	if (use_bf16_dnnl(m) && gemm_bf16_dnnl(m, at, bt, M, N, K, A, lda, B, ldb, beta, C, ldc, NULL, NULL) == 0)
		return;
	float *pa = m->acts->pa, *pb = m->acts->pb;
	int ar = at ? K : M, ac = at ? M : K, br = bt ? N : K, bc = bt ? K : N;
	round_copy(p, pa, ac, A, lda, ar, ac);
	round_copy(p, pb, bc, B, ldb, br, bc);
	gemm(ta, tb, M, N, K, 1.0f, pa, ac, pb, bc, beta, C, ldc);
	if (round_out && p == NN_FP16)
		round_copy(p, C, ldc, C, ldc, M, N);
}
