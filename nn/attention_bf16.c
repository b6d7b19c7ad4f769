/* nn/attention_bf16.c — causal multi-head self-attention with bf16 products on AMX tiles: the same
 * blocked (flash-style) algorithm as attention.c — no (T,T) matrix is stored; the forward keeps an
 * online softmax in fp32 over chunks of KB keys, the backward recomputes the probabilities from
 * the forward's log-sum-exp — but every product (QKᵀ and PV forward; QKᵀ, dO·Vᵀ, dS·K, Qᵀ·dS and
 * dOᵀ·P backward) runs on the tile unit (TDPBF16PS: bf16 operands, fp32 accumulation). Per
 * (batch, head) task the head's q, k, v (and dout) are converted once into bf16 copies laid out for
 * the tiles in the thread's scratch (or, where the model's qkv product already stored them in bf16,
 * copied: nn_attention_forward_bf16's qkv_h): row-major (A operands), dword-transposed ("VNNI": pairs of
 * consecutive head columns, B operand of QKᵀ and dO·Vᵀ), row-paired (pairs of consecutive keys, B
 * of PV and dS·K) and transposed (Qᵀ, dOᵀ: A of the key gradients, which are accumulated
 * transposed, dKᵀ += Qᵀ·dS, and transposed back once per head). Softmax, scaling, masking and the
 * D_i = dO_i·out_i term stay fp32 on AVX-512; P and dS are rounded to bf16 only as product
 * operands. Without AMX (or AVX512_BF16) at build or run time, or where ONEDNN_MAX_CPU_ISA caps
 * oneDNN below AMX (the same cap for all bf16 products, so tests can run the other path), the fp32
 * kernels of attention.c run instead. */
#include "nn/internal.h"
#include "nn/simd.h"

#include "common/common.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#if defined(__AMX_TILE__) && defined(__AMX_BF16__) && defined(__AVX512BF16__) && defined(__linux__)
#define NN_AMX 1
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define QB 16   /* query rows per block: one tile's rows */
#define KB 128  /* keys per online-softmax chunk in the forward (a multiple of 32) */

static size_t rup(size_t n, size_t m)
{
	return (n + m - 1) / m * m;
}

/* Per-thread scratch, in floats, carved in 64-byte aligned pieces (the same walk sizes it). */
struct carve {
	float *p;
	size_t n;
};

static void *take(struct carve *c, size_t bytes)
{
	void *r = c->p ? c->p + c->n : NULL;
	c->n += rup(bytes, 64) / sizeof(float);
	return r;
}

/* The per-head buffers of both directions (the backward's superset; the forward uses a prefix of
 * the same names). Tp: T padded to 32 keys; Dp: head size padded to 32 (a tile's depth); D16:
 * padded to 16 (a tile's width). */
struct bufs {
	uint16_t *qb, *kb, *dob, *vb;  /* row-major bf16 (Tp × Dp), zero padding */
	uint32_t *kv, *vtv;            /* dword transposes of kb, vb: (Dp/2 × Tp) */
	uint32_t *kr, *vr;             /* row pairs of kb, vb: (Tp/2 × D16) */
	uint16_t *qt, *dot;            /* q, dout transposed (D16 × Tp) bf16 */
	float *dkt, *dvt;              /* key gradients transposed (D16 × Tp) */
	float *dd;                     /* D_i (Tp) */
	float *s, *dp;                 /* scores / probabilities, dP / dS of one block (QB × Tp) */
	uint16_t *pb;                  /* P (forward) or dS (backward) of one block in bf16 (QB × Tp) */
	uint32_t *pp, *dsp;            /* P and dS row pairs (QB/2 × Tp) */
	float *o;                      /* output / dq block (QB × D16) */
};

static size_t layout(struct bufs *b, float *base, int T, int hs)
{
	size_t Tp = rup((size_t)T, 32), Dp = rup((size_t)hs, 32), D16 = rup((size_t)hs, 16);
	struct carve c = { base, 0 };
	b->qb = take(&c, Tp * Dp * 2);
	b->kb = take(&c, Tp * Dp * 2);
	b->dob = take(&c, Tp * Dp * 2);
	b->vb = take(&c, Tp * Dp * 2);
	b->kv = take(&c, Tp * Dp * 2);
	b->vtv = take(&c, Tp * Dp * 2);
	b->kr = take(&c, Tp * D16 * 2);
	b->vr = take(&c, Tp * D16 * 2);
	b->qt = take(&c, D16 * Tp * 2);
	b->dot = take(&c, D16 * Tp * 2);
	b->dkt = take(&c, D16 * Tp * 4);
	b->dvt = take(&c, D16 * Tp * 4);
	b->dd = take(&c, Tp * 4);
	b->s = take(&c, QB * Tp * 4);
	b->dp = take(&c, QB * Tp * 4);
	b->pb = take(&c, QB * Tp * 2);
	b->pp = take(&c, QB * Tp * 2);
	b->dsp = take(&c, QB * Tp * 2);
	b->o = take(&c, QB * D16 * 4);
	return c.n + 16;
}

size_t nn_attention_bf16_thread_floats(int T, int hs)
{
	struct bufs b;
	return layout(&b, NULL, T, hs);
}

#ifdef NN_AMX

/* 1 when the tiles may run here: built in, the CPU has them, the kernel grants the tile state, and
 * oneDNN is not capped below AMX. Decided once (first call, from the main thread). */
static int amx_ok(void)
{
	static int v = -1;
	if (v < 0) {
		struct cpu_info ci;
		cpu_detect(&ci);
		/* ARCH_REQ_XCOMP_PERM (0x1023) for XFEATURE_XTILEDATA (18): once per process */
		v = ci.amx && ci.avx512bf16 && strstr(nn_dnnl_isa(), "amx") != NULL &&
		    syscall(SYS_arch_prctl, 0x1023, 18) == 0;
	}
	return v;
}

/* One configuration for every product: tile 0 A of depth 32 (16 rows × 64 bytes), 1-2 B of depth
 * 32 (16 × 64), 3 A of depth 16 (16 × 32), 4-5 B of depth 16 (8 × 64), 6-7 the fp32 accumulators
 * (16 × 16). */
static void tiles_config(void)
{
	/* static and initialized: GCC treats ldtilecfg's operand as opaque and drops stores into a
	 * local structure before it */
	static const struct {
		uint8_t palette, start_row, rsv[14];
		uint16_t colsb[16];
		uint8_t rows[16];
	} __attribute__((aligned(64))) cfg = {
		.palette = 1,
		.colsb = { 64, 64, 64, 32, 64, 64, 64, 64 },
		.rows = { 16, 16, 16, 16, 8, 8, 16, 16 },
	};
	_tile_loadconfig(&cfg);
}

static inline __mmask16 lanes(int n)
{
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

static inline __m256i bf16x16(__m512 x)
{
	return (__m256i)_mm512_cvtneps_pbh(x);
}

static inline __mmask32 lanes32(int n)
{
	return n >= 32 ? (__mmask32)0xffffffffu : n <= 0 ? (__mmask32)0 : (__mmask32)((1u << n) - 1);
}

/* dst (Tp × Dp) bf16 = rows [0,T) of src (hs columns, row stride ld), zero elsewhere. */
static void rows_bf16(uint16_t *dst, const float *src, int ld, int T, int hs, size_t Tp, size_t Dp)
{
	for (size_t i = 0; i < Tp; i++) {
		uint16_t *d = dst + i * Dp;
		/* rows 3·C floats apart defeat the hardware prefetchers: ask for a row 8 ahead */
		if ((int)i + 8 < T)
			for (int c = 0; c < hs; c += 16)
				_mm_prefetch((const char *)(src + (i + 8) * (size_t)ld + c), _MM_HINT_T0);
		for (size_t c = 0; c < Dp; c += 16) {
			__m512 x = (int)i < T ? _mm512_maskz_loadu_ps(lanes(hs - (int)c), src + i * (size_t)ld + c)
					      : _mm512_setzero_ps();
			_mm256_storeu_si256((__m256i *)(d + c), bf16x16(x));
		}
	}
}

/* The same from rows already in bf16 (src_h, row stride ld values): copied, zero padded. */
static void rows_copy(uint16_t *dst, const uint16_t *src_h, int ld, int T, int hs, size_t Tp, size_t Dp)
{
	for (size_t i = 0; i < Tp; i++) {
		uint16_t *d = dst + i * Dp;
		if ((int)i + 8 < T)
			for (int c = 0; c < hs; c += 32)
				_mm_prefetch((const char *)(src_h + (i + 8) * (size_t)ld + c), _MM_HINT_T0);
		for (size_t c = 0; c < Dp; c += 32) {
			__m512i x = (int)i < T ? _mm512_maskz_loadu_epi16(lanes32(hs - (int)c), src_h + i * (size_t)ld + c)
					       : _mm512_setzero_si512();
			_mm512_storeu_si512(d + c, x);
		}
	}
}

/* A head's q, k or v rows into dst as rows_bf16 lays them out: from src_h (bf16) when not NULL,
 * else from src (fp32, rounded here). */
static void head_rows(uint16_t *dst, const float *src, const uint16_t *src_h, int ld, int T, int hs, size_t Tp,
		      size_t Dp)
{
	if (src_h)
		rows_copy(dst, src_h, ld, T, hs, Tp, Dp);
	else
		rows_bf16(dst, src, ld, T, hs, Tp, Dp);
}

/* dst (Dp/2 × Tp) dwords = the dword transpose of src (Tp × Dp bf16): dst[r][j] = the pair
 * (src[j][2r], src[j][2r+1]), a B operand over the head dimension. */
static void dword_transpose(uint32_t *dst, const uint16_t *src, size_t Tp, size_t Dp)
{
	const size_t W = Dp / 2;
	const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
					      _mm512_set1_epi32((int)W));
	const uint32_t *s = (const uint32_t *)src;
	for (size_t j0 = 0; j0 < Tp; j0 += 16)
		for (size_t r = 0; r < W; r++)
			_mm512_storeu_si512(dst + r * Tp + j0, _mm512_i32gather_epi32(idx, s + j0 * W + r, 4));
}

/* dst (Tp/2 × D16) dwords: dst[r][d] = the pair (src[2r][d], src[2r+1][d]) of src (Tp × Dp bf16):
 * a B operand over keys. */
static void row_pairs(uint32_t *dst, const uint16_t *src, size_t Tp, size_t Dp, size_t D16)
{
	for (size_t r = 0; r < Tp / 2; r++)
		for (size_t d = 0; d < D16; d += 16) {
			__m512i lo = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + 2 * r * Dp + d)));
			__m512i hi = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(src + (2 * r + 1) * Dp + d)));
			_mm512_storeu_si512(dst + r * D16 + d, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
		}
}

/* dst (D16 × Tp) bf16 = the transpose of src (Tp × Dp bf16): the dword transpose's pairs split
 * into their two rows. */
static void transpose_bf16(uint16_t *dst, const uint16_t *src, size_t Tp, size_t Dp, size_t D16)
{
	const size_t W = Dp / 2;
	const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
					      _mm512_set1_epi32((int)W));
	const uint32_t *s = (const uint32_t *)src;
	for (size_t j0 = 0; j0 < Tp; j0 += 16)
		for (size_t r = 0; r < D16 / 2; r++) {
			__m512i x = _mm512_i32gather_epi32(idx, s + j0 * W + r, 4);
			_mm256_storeu_si256((__m256i *)(dst + 2 * r * Tp + j0), _mm512_cvtepi32_epi16(x));
			_mm256_storeu_si256((__m256i *)(dst + (2 * r + 1) * Tp + j0),
					    _mm512_cvtepi32_epi16(_mm512_srli_epi32(x, 16)));
		}
}

/* 1 when rows of hs floats at stride ld from dst can be written with streaming stores (whole
 * aligned cache lines): the gradient rows are read next by another op, after the whole tensor
 * (larger than the caches) is written, so fetching their lines first would be wasted. */
static int streamable(const float *dst, int ld, int hs)
{
	return hs % 16 == 0 && ((uintptr_t)dst % 64) == 0 && ld % 16 == 0;
}

/* Where a head's gradient rows go: fp32 rows (stride ld; f NULL: none) and their bf16 copies at the
 * same offsets of h (NULL: none); db (NULL: none): the head's hs columns of the bias gradient, to
 * which each row is added as it is put (the rows go out in order, so each column is summed row by
 * row). */
struct grad_out {
	float *f, *db;
	uint16_t *h;
};

/* Row j's hs values x (16 at a time, lane mask mk, column d) of g: the fp32 row (streamed when
 * stream), its bf16 copy and its add to the bias gradient. */
static inline void grad_put(const struct grad_out *g, int ld, int j, int d, __mmask16 mk, __m512 x, int stream)
{
	size_t at = (size_t)j * ld + d;
	if (g->f && stream)
		_mm512_stream_ps(g->f + at, x);
	else if (g->f)
		_mm512_mask_storeu_ps(g->f + at, mk, x);
	if (g->h)
		_mm256_mask_storeu_epi16(g->h + at, mk, bf16x16(x));
	if (g->db)
		_mm512_mask_storeu_ps(g->db + d, mk, _mm512_add_ps(_mm512_maskz_loadu_ps(mk, g->db + d), x));
}

/* g's rows [0,T) (hs columns, stride ld) = transpose of src (D16 × Tp fp32): each row written
 * whole from gathers in the (cache-resident) source. */
static void untranspose(const struct grad_out *g, int ld, const float *src, int T, int hs, size_t Tp)
{
	const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
					      _mm512_set1_epi32((int)Tp));
	const int st = streamable(g->f, ld, hs);
	for (int j = 0; j < T; j++)
		for (int d = 0; d < hs; d += 16) {
			__mmask16 mk = lanes(hs - d);
			grad_put(g, ld, j, d, mk,
				 _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, idx, src + (size_t)d * Tp + j, 4), st);
		}
}

/* c (QB × 32 fp32, row stride ldc floats) = A (QB rows of a, stride lda elements, depth Dp) ·
 * B (dwords bt: Dp/2 rows of stride ldb dwords, 32 columns): a score-like block of 32 keys. */
static inline void prod_32(float *c, size_t ldc, const uint16_t *a, size_t lda, const uint32_t *bt, size_t ldb,
			   size_t Dp)
{
	_tile_zero(6);
	_tile_zero(7);
	for (size_t d = 0; d < Dp; d += 32) {
		_tile_loadd(0, a + d, lda * 2);
		_tile_loadd(1, bt + d / 2 * ldb, ldb * 4);
		_tile_loadd(2, bt + d / 2 * ldb + 16, ldb * 4);
		_tile_dpbf16ps(6, 0, 1);
		_tile_dpbf16ps(7, 0, 2);
	}
	_tile_stored(6, c, ldc * 4);
	_tile_stored(7, c + 16, ldc * 4);
}

/* c (QB × D16, stride D16) (+)= a (QB × kn bf16, stride lda) · rp (row pairs: kn/2 rows of stride D16
 * dwords): the PV / dS·K product over kn keys (a multiple of 32). acc: add to c, else overwrite. */
static inline void prod_rows(float *c, const uint16_t *a, size_t lda, const uint32_t *rp, size_t kn, size_t D16,
			     int acc)
{
	for (size_t d0 = 0; d0 < D16; d0 += 32) {
		int two = d0 + 16 < D16;
		if (acc) {
			_tile_loadd(6, c + d0, D16 * 4);
			if (two)
				_tile_loadd(7, c + d0 + 16, D16 * 4);
		} else {
			_tile_zero(6);
			_tile_zero(7);
		}
		for (size_t k = 0; k < kn; k += 32) {
			_tile_loadd(0, a + k, lda * 2);
			_tile_loadd(1, rp + k / 2 * D16 + d0, D16 * 4);
			_tile_dpbf16ps(6, 0, 1);
			if (two) {
				_tile_loadd(2, rp + k / 2 * D16 + d0 + 16, D16 * 4);
				_tile_dpbf16ps(7, 0, 2);
			}
		}
		_tile_stored(6, c + d0, D16 * 4);
		if (two)
			_tile_stored(7, c + d0 + 16, D16 * 4);
	}
}

/* gt (D16 × Tp fp32) columns [0,kn) += xt (D16 × Tp bf16, the block's QB columns at i0) · w (row
 * pairs of the block: QB/2 rows of stride Tp dwords): a key gradient, transposed, of one block. */
static inline void prod_keys(float *gt, const uint16_t *xt, size_t i0, const uint32_t *w, size_t kn, size_t Tp,
			     size_t D16)
{
	for (size_t d0 = 0; d0 < D16; d0 += 16) {
		_tile_loadd(3, xt + d0 * Tp + i0, Tp * 2);
		for (size_t k = 0; k < kn; k += 32) {
			float *g = gt + d0 * Tp + k;
			_tile_loadd(6, g, Tp * 4);
			_tile_loadd(7, g + 16, Tp * 4);
			_tile_loadd(4, w + k, Tp * 4);
			_tile_loadd(5, w + k + 16, Tp * 4);
			_tile_dpbf16ps(6, 3, 4);
			_tile_dpbf16ps(7, 3, 5);
			_tile_stored(6, g, Tp * 4);
			_tile_stored(7, g + 16, Tp * 4);
		}
	}
}

/* dst (QB/2 × Tp dwords) columns [0,kn): pairs of rows (2r, 2r+1) of src (QB × Tp fp32) in bf16. */
static void block_pairs(uint32_t *dst, const float *src, size_t Tp, size_t kn)
{
	for (size_t r = 0; r < QB / 2; r++)
		for (size_t j = 0; j < kn; j += 16) {
			__m512i lo = _mm512_cvtepu16_epi32(bf16x16(_mm512_loadu_ps(src + 2 * r * Tp + j)));
			__m512i hi = _mm512_cvtepu16_epi32(bf16x16(_mm512_loadu_ps(src + (2 * r + 1) * Tp + j)));
			_mm512_storeu_si512(dst + r * Tp + j, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
		}
}

/* A head's q, k, v: the fp32 rows (q; k and v C values after it) or, when qh is not NULL, the bf16
 * rows (qh likewise); row stride ld values. */
struct head_in {
	const float *q;
	const uint16_t *qh;
	int C, ld;
};

static void head_qkv(uint16_t *qb, uint16_t *kb, uint16_t *vb, const struct head_in *in, int T, int hs, size_t Tp,
		     size_t Dp)
{
	for (int k = 0; k < 3; k++) {
		size_t o = (size_t)k * in->C;
		head_rows(k == 0 ? qb : k == 1 ? kb : vb, in->qh ? NULL : in->q + o, in->qh ? in->qh + o : NULL, in->ld, T, hs,
			  Tp, Dp);
	}
}

/* One (batch, head) forward: out rows (stride ldo; out_h its bf16 copy, or NULL), lse (T). */
static void head_forward(float *out, uint16_t *out_h, int ldo, float *lse, const struct head_in *in, int T, int hs,
			 float scale, float *scr)
{
	struct bufs b;
	layout(&b, scr, T, hs);
	const size_t Tp = rup((size_t)T, 32), Dp = rup((size_t)hs, 32), D16 = rup((size_t)hs, 16);
	head_qkv(b.qb, b.kb, b.vb, in, T, hs, Tp, Dp);
	dword_transpose(b.kv, b.kb, Tp, Dp);
	row_pairs(b.vr, b.vb, Tp, Dp, D16);
	const __m512 sc = _mm512_set1_ps(scale);
	for (int i0 = 0; i0 < T; i0 += QB) {
		int nr = T - i0 < QB ? T - i0 : QB;
		size_t kend = rup((size_t)i0 + QB, 32);
		kend = kend < Tp ? kend : Tp;
		float mx[QB], l[QB];
		for (int r = 0; r < QB; r++)
			mx[r] = -INFINITY, l[r] = 0;
		for (size_t c0 = 0; c0 < kend; c0 += KB) {
			size_t kn = kend - c0 < KB ? kend - c0 : KB;
			for (size_t kk = 0; kk < kn; kk += 32)
				prod_32(b.s + kk, Tp, b.qb + (size_t)i0 * Dp, Dp, b.kv + c0 + kk, Tp, Dp);
			for (int r = 0; r < QB; r++) {
				/* keys <= the row (padding rows past T see every key: finite, never written) */
				int lim = (i0 + r < T ? i0 + r : T - 1) - (int)c0 + 1;
				float *s = b.s + (size_t)r * Tp;
				__m512 m = _mm512_set1_ps(-INFINITY);
				for (size_t j = 0; j < kn; j += 16) {
					__m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + j), sc);
					_mm512_storeu_ps(s + j, x);
					m = _mm512_mask_max_ps(m, lanes(lim - (int)j), m, x);
				}
				float cm = _mm512_reduce_max_ps(m), mnew = cm > mx[r] ? cm : mx[r];
				uint16_t *p = b.pb + (size_t)r * Tp;
				if (mnew == -INFINITY) {  /* no key of this chunk (cannot happen with KB % 32 == 0) */
					memset(p, 0, kn * 2);
					continue;
				}
				float alpha = expf(mx[r] - mnew);
				__m512 mv = _mm512_set1_ps(mnew), sum = _mm512_setzero_ps();
				for (size_t j = 0; j < kn; j += 16) {
					__m512 e = _mm512_maskz_mov_ps(lanes(lim - (int)j),
								       nn_exp512(_mm512_sub_ps(_mm512_loadu_ps(s + j), mv)));
					sum = _mm512_add_ps(sum, e);
					_mm256_storeu_si256((__m256i *)(p + j), bf16x16(e));
				}
				l[r] = l[r] * alpha + _mm512_reduce_add_ps(sum);
				mx[r] = mnew;
				if (alpha != 1.0f && c0 > 0) {  /* the first chunk's product overwrites o */
					float *o = b.o + (size_t)r * D16;
					for (size_t d = 0; d < D16; d += 16)
						_mm512_storeu_ps(o + d, _mm512_mul_ps(_mm512_loadu_ps(o + d), _mm512_set1_ps(alpha)));
				}
			}
			prod_rows(b.o, b.pb, Tp, b.vr + c0 / 2 * D16, kn, D16, c0 > 0);
		}
		for (int r = 0; r < nr; r++) {
			__m512 inv = _mm512_set1_ps(1.0f / l[r]);
			float *orow = out + (size_t)(i0 + r) * ldo;
			for (int d = 0; d < hs; d += 16) {
				__mmask16 mk = lanes(hs - d);
				__m512 x = _mm512_mul_ps(_mm512_loadu_ps(b.o + (size_t)r * D16 + d), inv);
				_mm512_mask_storeu_ps(orow + d, mk, x);
				if (out_h)
					_mm256_mask_storeu_epi16(out_h + (size_t)(i0 + r) * ldo + d, mk, bf16x16(x));
			}
			lse[i0 + r] = mx[r] + logf(l[r]);
		}
	}
}

/* One (batch, head) backward: dq, dk, dv (g[0..2]) rows of stride ld (overwritten; ld = in->ld). */
static void head_backward(const struct grad_out g[3], const float *dout, const float *out, int ldo, const float *lse,
			  const struct head_in *in, int T, int hs, float scale, float *scr)
{
	struct bufs b;
	layout(&b, scr, T, hs);
	const int ld = in->ld;
	const size_t Tp = rup((size_t)T, 32), Dp = rup((size_t)hs, 32), D16 = rup((size_t)hs, 16);
	head_qkv(b.qb, b.kb, b.vb, in, T, hs, Tp, Dp);
	rows_bf16(b.dob, dout, ldo, T, hs, Tp, Dp);
	dword_transpose(b.kv, b.kb, Tp, Dp);
	dword_transpose(b.vtv, b.vb, Tp, Dp);
	row_pairs(b.kr, b.kb, Tp, Dp, D16);
	transpose_bf16(b.qt, b.qb, Tp, Dp, D16);
	transpose_bf16(b.dot, b.dob, Tp, Dp, D16);
	memset(b.dkt, 0, D16 * Tp * sizeof(float));
	memset(b.dvt, 0, D16 * Tp * sizeof(float));
	/* D_i = dO_i · out_i with dO in bf16, as the dP products see it: then Σ_j P_ij (dP_ij − D_i)
	 * is 0 up to P's own rounding */
	for (int i = 0; i < T; i++) {
		__m512 acc = _mm512_setzero_ps();
		for (int d = 0; d < hs; d += 16) {
			__m512 x = _mm512_castsi512_ps(_mm512_slli_epi32(
				_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(b.dob + (size_t)i * Dp + d))), 16));
			acc = _mm512_fmadd_ps(x, _mm512_maskz_loadu_ps(lanes(hs - d), out + (size_t)i * ldo + d), acc);
		}
		b.dd[i] = _mm512_reduce_add_ps(acc);
	}
	const __m512 sc = _mm512_set1_ps(scale);
	for (int i0 = 0; i0 < T; i0 += QB) {
		int nr = T - i0 < QB ? T - i0 : QB;
		size_t kend = rup((size_t)i0 + QB, 32);
		kend = kend < Tp ? kend : Tp;
		for (size_t kk = 0; kk < kend; kk += 32) {
			prod_32(b.s + kk, Tp, b.qb + (size_t)i0 * Dp, Dp, b.kv + kk, Tp, Dp);
			prod_32(b.dp + kk, Tp, b.dob + (size_t)i0 * Dp, Dp, b.vtv + kk, Tp, Dp);
		}
		for (int r = 0; r < QB; r++) {
			int lim = r < nr ? i0 + r + 1 : 0;  /* padding rows: no keys, zero weights */
			float *s = b.s + (size_t)r * Tp, *dp = b.dp + (size_t)r * Tp;
			uint16_t *dsb = b.pb + (size_t)r * Tp;
			__m512 lv = _mm512_set1_ps(r < nr ? lse[i0 + r] : 0), dv_ = _mm512_set1_ps(r < nr ? b.dd[i0 + r] : 0);
			for (size_t j = 0; j < kend; j += 16) {
				__mmask16 mk = lanes(lim - (int)j);
				__m512 e = _mm512_maskz_mov_ps(mk, nn_exp512(_mm512_fmsub_ps(_mm512_loadu_ps(s + j), sc, lv)));
				__m512 ds = _mm512_mul_ps(_mm512_mul_ps(e, _mm512_sub_ps(_mm512_loadu_ps(dp + j), dv_)), sc);
				_mm512_storeu_ps(s + j, e);
				_mm512_storeu_ps(dp + j, ds);
				_mm256_storeu_si256((__m256i *)(dsb + j), bf16x16(ds));
			}
		}
		block_pairs(b.pp, b.s, Tp, kend);
		block_pairs(b.dsp, b.dp, Tp, kend);
		/* dq (block) = dS · K */
		prod_rows(b.o, b.pb, Tp, b.kr, kend, D16, 0);
		const int st = streamable(g[0].f, ld, hs);
		for (int r = 0; r < nr; r++)
			for (int d = 0; d < hs; d += 16)
				grad_put(&g[0], ld, i0 + r, d, lanes(hs - d), _mm512_loadu_ps(b.o + (size_t)r * D16 + d), st);
		/* dKᵀ += Qᵀ · dS, dVᵀ += dOᵀ · P over the block's keys */
		prod_keys(b.dkt, b.qt, (size_t)i0, b.dsp, kend, Tp, D16);
		prod_keys(b.dvt, b.dot, (size_t)i0, b.pp, kend, Tp, D16);
	}
	untranspose(&g[1], ld, b.dkt, T, hs, Tp);
	untranspose(&g[2], ld, b.dvt, T, hs, Tp);
	_mm_sfence(); /* the streaming stores are visible before the task ends */
}

#endif /* NN_AMX */

int nn_attention_bf16_tiles(void)
{
#ifdef NN_AMX
	return !nn_get_reference() && amx_ok();
#else
	return 0;
#endif
}

#ifdef NN_AMX
/* One (batch, head) of the tiled kernels: its q, k, v input, the offsets of its rows in the qkv
 * rows (qo, 3·C wide) and in the output rows (oo, C wide), the softmax scale and this thread's
 * scratch. */
struct head_job {
	struct head_in in;
	size_t qo, oo;
	int bh, T, hs;
	float scale, *scr;
};

/* body(ctx, job) for (batch b, head h). */
static void run_head(int b, int h, const float *qkv, const uint16_t *qkv_h, int H, int T, int C, float scale,
		     float *scr, void (*body)(void *ctx, const struct head_job *j), void *ctx)
{
	int hs = C / H, C3 = 3 * C;
	size_t qo = (size_t)b * T * C3 + (size_t)h * hs, oo = (size_t)b * T * C + (size_t)h * hs;
	const struct head_job j = { .in = { qkv_h ? NULL : qkv + qo, qkv_h ? qkv_h + qo : NULL, C, C3 },
				    .qo = qo, .oo = oo, .bh = b * H + h, .T = T, .hs = hs, .scale = scale, .scr = scr };
	body(ctx, &j);
}

/* body(ctx, job) for every (batch, head) on the tiles, the threads' scratch and tile
 * configuration set up once per thread. by_head: each thread takes whole heads (a static split of
 * the heads) and runs a head's sequences in order, so that a body may sum the head's columns row by
 * row; else (batch, head) pairs are handed out one at a time. */
static void each_head(float *scratch, const float *qkv, const uint16_t *qkv_h, int B, int T, int C, int H,
		      int by_head, void (*body)(void *ctx, const struct head_job *j), void *ctx)
{
	int nt = nn_get_threads();
	float scale = 1.0f / sqrtf((float)(C / H));
	size_t per = nn_attention_scratch_floats(T, C, H, 1);
#pragma omp parallel num_threads(nt)
	{
		tiles_config();
		float *scr = (float *)rup((size_t)(scratch + (size_t)omp_get_thread_num() * per), 64);
		if (by_head) {
#pragma omp for schedule(static)
			for (int h = 0; h < H; h++)
				for (int b = 0; b < B; b++)
					run_head(b, h, qkv, qkv_h, H, T, C, scale, scr, body, ctx);
		} else {
#pragma omp for schedule(dynamic, 1)
			for (int bh = 0; bh < B * H; bh++)
				run_head(bh / H, bh % H, qkv, qkv_h, H, T, C, scale, scr, body, ctx);
		}
		_tile_release();
	}
}

struct fwd_ctx {
	float *out;
	uint16_t *out_h;
	float *lse;
	int C;
};

static void fwd_head(void *ctx, const struct head_job *j)
{
	const struct fwd_ctx *x = ctx;
	head_forward(x->out + j->oo, x->out_h ? x->out_h + j->oo : NULL, x->C, x->lse + (size_t)j->bh * j->T, &j->in,
		     j->T, j->hs, j->scale, j->scr);
}

struct bwd_ctx {
	float *dqkv, *db;
	uint16_t *dqkv_h;
	const float *dout, *out, *lse;
	int C;
};

static void bwd_head(void *ctx, const struct head_job *j)
{
	const struct bwd_ctx *x = ctx;
	struct grad_out g[3];
	for (int k = 0; k < 3; k++) {
		size_t o = j->qo + (size_t)k * x->C;
		/* x->db is set only when each_head runs by head: this thread owns the head's columns */
		g[k] = (struct grad_out){ x->dqkv ? x->dqkv + o : NULL, x->db ? x->db + o % (3 * (size_t)x->C) : NULL,
					  x->dqkv_h ? x->dqkv_h + o : NULL };
	}
	head_backward(g, x->dout + j->oo, x->out + j->oo, x->C, x->lse + (size_t)j->bh * j->T, &j->in, j->T, j->hs,
		      j->scale, j->scr);
}
#endif

void nn_attention_forward_bf16(float *out, uint16_t *out_h, float *lse, float *scratch, const float *qkv,
			       const uint16_t *qkv_h, int B, int T, int C, int H)
{
#ifdef NN_AMX
	if (nn_attention_bf16_tiles()) {
		struct fwd_ctx x = { out, out_h, lse, C };
		each_head(scratch, qkv, qkv_h, B, T, C, H, 0, fwd_head, &x);
		return;
	}
#endif
	(void)qkv_h; /* read only on the tiles */
	nn_attention_forward(out, lse, scratch, qkv, B, T, C, H);
	if (out_h)
		nn_bf16_from_f32(out_h, out, (size_t)B * T * C);
}

int nn_attention_backward_bf16(float *dqkv, uint16_t *dqkv_h, float *db, float *scratch, const float *dout,
			       const float *qkv, const uint16_t *qkv_h, const float *out, const float *lse, int B, int T,
			       int C, int H)
{
#ifdef NN_AMX
	if (nn_attention_bf16_tiles()) {
		/* the bias gradient in the heads' pass where the heads split evenly over the threads; the
		 * fp32 gradient only where something reads it (no bf16 copy, or a column sum after) */
		int by_head = db && H % nn_get_threads() == 0, f32 = !dqkv_h || (db && !by_head);
		struct bwd_ctx x = { f32 ? dqkv : NULL, by_head ? db : NULL, dqkv_h, dout, out, lse, C };
		each_head(scratch, qkv, qkv_h, B, T, C, H, by_head, bwd_head, &x);
		if (db && !by_head)
			nn_bf16_colsum(NULL, db, dqkv, B * T, 3 * C);
		return f32;
	}
#endif
	(void)qkv_h;
	nn_attention_backward(dqkv, scratch, dout, qkv, out, lse, B, T, C, H);
	if (dqkv_h || db)
		nn_bf16_colsum(dqkv_h, db, dqkv, B * T, 3 * C);
	return 1;
}
