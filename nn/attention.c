/* nn/attention.c — causal multi-head self-attention, forward and backward, fused and tiled in the
 * manner of flash attention: no (T,T) probability matrix is ever stored. The forward walks each
 * tile of QR query rows over chunks of KC keys with an online softmax (running max and sum, the
 * output rescaled as the max grows) and keeps only each row's log-sum-exp; the backward recomputes
 * the probabilities of a tile from q, k and that log-sum-exp, and accumulates dq in place and dk, dv
 * per key chunk. One (batch, head) per OpenMP task; AVX-512 with masked lanes for any head size.
 * The plain reference is in kernels_ref.c. */
#include "nn/internal.h"
#include "nn/simd.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#define QR 4   /* query rows per tile */
#define KC 64  /* keys per chunk: four 16-lane vectors */
#define DB 64  /* head-size block kept in registers while accumulating */

static size_t round_up(size_t n, size_t m)
{
	return (n + m - 1) / m * m;
}

/* Floats one thread needs: kᵀ and vᵀ (hs × Tp), one chunk's dk and dv (KC × hs), D (Tp), the
 * probability and score-gradient tiles (QR × KC each), a dummy output row, alignment. */
static size_t per_thread_floats(int T, int hs)
{
	size_t Tp = round_up((size_t)T, KC), D = round_up((size_t)hs, 16);
	return 2 * D * Tp + 2 * (size_t)KC * D + Tp + 2 * QR * KC + D + 32;
}

size_t nn_attention_scratch_floats(int T, int C, int H, int threads)
{
	size_t a = per_thread_floats(T, C / H), b = nn_attention_bf16_thread_floats(T, C / H);
	return (size_t)(threads > 0 ? threads : nn_get_threads()) * (a > b ? a : b);
}

#ifdef NN_AVX512

/* dst (hs × Tp) = srcᵀ for rows [0,T) of src (row stride ld), zero for columns [T, Tp): for 16
 * rows at a time, column d of all 16 is one gather (their 16 rows stay in L1 across d). */
static void transpose(float *dst, const float *src, int ld, int T, int hs, size_t Tp)
{
	const __m512i rows = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
					       _mm512_set1_epi32(ld));
	for (int j0 = 0; j0 < T; j0 += 16) {
		int jn = T - j0 < 16 ? T - j0 : 16;
		__mmask16 mk = (__mmask16)((1u << jn) - 1);
		const float *s = src + (size_t)j0 * ld;
		for (int d = 0; d < hs; d++)
			_mm512_mask_storeu_ps(dst + (size_t)d * Tp + j0, mk,
					      _mm512_mask_i32gather_ps(_mm512_setzero_ps(), mk, rows, s + d, 4));
	}
	for (int d = 0; d < hs; d++)
		memset(dst + (size_t)d * Tp + T, 0, (Tp - (size_t)T) * sizeof(float));
}

/* s[r][c] = Σ_d a[r][d] · bt[d][j0 + 16c + lane]: a QR × KC tile of dot products. */
static inline __attribute__((always_inline)) void tile_dot(__m512 s[QR][4], const float *const a[QR],
							   const float *bt, size_t Tp, int j0, int hs)
{
#pragma GCC unroll 4
	for (int r = 0; r < QR; r++)
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			s[r][c] = _mm512_setzero_ps();
	const float *b = bt + j0;
	for (int d = 0; d < hs; d++, b += Tp) {
		__m512 b0 = _mm512_loadu_ps(b), b1 = _mm512_loadu_ps(b + 16), b2 = _mm512_loadu_ps(b + 32),
		       b3 = _mm512_loadu_ps(b + 48);
#pragma GCC unroll 4
		for (int r = 0; r < QR; r++) {
			__m512 x = _mm512_set1_ps(a[r][d]);
			s[r][0] = _mm512_fmadd_ps(x, b0, s[r][0]);
			s[r][1] = _mm512_fmadd_ps(x, b1, s[r][1]);
			s[r][2] = _mm512_fmadd_ps(x, b2, s[r][2]);
			s[r][3] = _mm512_fmadd_ps(x, b3, s[r][3]);
		}
	}
}

/* Lanes of vector c (keys j0+16c ...) that row i may attend to (keys <= i). */
static inline __mmask16 causal_mask(int i, int j0, int c)
{
	int n = i - j0 - 16 * c + 1;
	return n >= 16 ? (__mmask16)0xffff : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* Lanes of the head-size vector starting at d that exist. */
static inline __mmask16 dim_mask(int d, int hs)
{
	int n = hs - d;
	return n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
}

/* acc[r] (hs) += Σ_{j<jn} w[r][j] · x_j for QR rows, x_j = x + j·ld; acc rows have stride ldacc.
 * Register-blocked by DB columns of the head. */
static inline __attribute__((always_inline)) void tile_accum(float *const acc[QR], const float (*w)[KC], int jn,
							     const float *x, int ld, int hs)
{
	for (int d0 = 0; d0 < hs; d0 += DB) {
		__mmask16 mk[4];
		__m512 o[QR][4];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			mk[c] = d0 + 16 * c < hs ? dim_mask(d0 + 16 * c, hs) : 0;
#pragma GCC unroll 4
		for (int r = 0; r < QR; r++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				o[r][c] = _mm512_maskz_loadu_ps(mk[c], acc[r] + d0 + 16 * c);
		for (int j = 0; j < jn; j++) {
			const float *xj = x + (size_t)j * ld + d0;
			__m512 v[4];
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				v[c] = _mm512_maskz_loadu_ps(mk[c], xj + 16 * c);
#pragma GCC unroll 4
			for (int r = 0; r < QR; r++) {
				__m512 p = _mm512_set1_ps(w[r][j]);
#pragma GCC unroll 4
				for (int c = 0; c < 4; c++)
					o[r][c] = _mm512_fmadd_ps(p, v[c], o[r][c]);
			}
		}
#pragma GCC unroll 4
		for (int r = 0; r < QR; r++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				_mm512_mask_storeu_ps(acc[r] + d0 + 16 * c, mk[c], o[r][c]);
	}
}

/* acc_j (hs, stride hs) += Σ_r w[r][j] · x_r for keys j < jn of a chunk: dk and dv of a tile. */
static inline __attribute__((always_inline)) void tile_accum_keys(float *acc, const float (*w)[KC], int jn,
								  const float *const x[QR], int hs)
{
	for (int d0 = 0; d0 < hs; d0 += DB) {
		__mmask16 mk[4];
		__m512 xr[QR][4];
#pragma GCC unroll 4
		for (int c = 0; c < 4; c++)
			mk[c] = d0 + 16 * c < hs ? dim_mask(d0 + 16 * c, hs) : 0;
#pragma GCC unroll 4
		for (int r = 0; r < QR; r++)
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				xr[r][c] = _mm512_maskz_loadu_ps(mk[c], x[r] + d0 + 16 * c);
		for (int j = 0; j < jn; j++) {
			float *aj = acc + (size_t)j * hs + d0;
			__m512 o[4];
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				o[c] = _mm512_maskz_loadu_ps(mk[c], aj + 16 * c);
#pragma GCC unroll 4
			for (int r = 0; r < QR; r++) {
				__m512 p = _mm512_set1_ps(w[r][j]);
#pragma GCC unroll 4
				for (int c = 0; c < 4; c++)
					o[c] = _mm512_fmadd_ps(p, xr[r][c], o[c]);
			}
#pragma GCC unroll 4
			for (int c = 0; c < 4; c++)
				_mm512_mask_storeu_ps(aj + 16 * c, mk[c], o[c]);
		}
	}
}

/* One (batch, head): q, k, v rows of stride ld; out rows of stride ldo; lse (T). */
static void head_forward(float *out, int ldo, float *lse, const float *q, const float *k, const float *v, int ld,
			 int T, int hs, float scale, float *scr)
{
	size_t Tp = round_up((size_t)T, KC);
	float *kt = scr;
	float(*p)[KC] = (float(*)[KC])round_up((size_t)(kt + round_up((size_t)hs, 16) * Tp), 64);
	float *dummy = p[QR];
	transpose(kt, k, ld, T, hs, Tp);
	const __m512 sc = _mm512_set1_ps(scale);
	for (int i0 = 0; i0 < T; i0 += QR) {
		int nr = T - i0 < QR ? T - i0 : QR, jend = i0 + nr;
		const float *qr[QR];
		float *orow[QR], mx[QR], l[QR];
		int row[QR];
		for (int r = 0; r < QR; r++) {
			row[r] = r < nr ? i0 + r : T - 1;  /* absent rows repeat the last query, output to dummy */
			qr[r] = q + (size_t)row[r] * ld;
			orow[r] = r < nr ? out + (size_t)row[r] * ldo : dummy;
			mx[r] = -INFINITY;
			l[r] = 0;
		}
		/* the output rows accumulate in place */
		for (int r = 0; r < QR; r++)
			memset(orow[r], 0, (size_t)hs * sizeof(float));
		for (int j0 = 0; j0 < jend; j0 += KC) {
			__m512 s[QR][4];
			tile_dot(s, qr, kt, Tp, j0, hs);
			for (int r = 0; r < QR; r++) {
				__mmask16 mk[4];
				__m512 m = _mm512_set1_ps(-INFINITY);
				for (int c = 0; c < 4; c++) {
					mk[c] = causal_mask(row[r], j0, c);
					s[r][c] = _mm512_mul_ps(s[r][c], sc);
					m = _mm512_mask_max_ps(m, mk[c], m, s[r][c]);
				}
				float mnew = _mm512_reduce_max_ps(m);
				mnew = mnew > mx[r] ? mnew : mx[r];
				float alpha = expf(mx[r] - mnew);
				__m512 mv = _mm512_set1_ps(mnew), sum = _mm512_setzero_ps();
				for (int c = 0; c < 4; c++) {
					__m512 e = _mm512_maskz_mov_ps(mk[c], nn_exp512(_mm512_sub_ps(s[r][c], mv)));
					sum = _mm512_add_ps(sum, e);
					_mm512_store_ps(p[r] + 16 * c, e);
				}
				l[r] = l[r] * alpha + _mm512_reduce_add_ps(sum);
				mx[r] = mnew;
				if (alpha != 1.0f)
					for (int d = 0; d < hs; d++)
						orow[r][d] *= alpha;
			}
			int jn = jend - j0 < KC ? jend - j0 : KC;
			tile_accum(orow, (const float(*)[KC])p, jn, v + (size_t)j0 * ld, ld, hs);
		}
		for (int r = 0; r < nr; r++) {
			float inv = 1.0f / l[r];
			for (int d = 0; d < hs; d++)
				orow[r][d] *= inv;
			lse[i0 + r] = mx[r] + logf(l[r]);
		}
	}
}

/* One (batch, head): dq, dk, dv rows of stride ld (overwritten). */
static void head_backward(float *dq, float *dk, float *dv, const float *dout, const float *out, int ldo,
			  const float *lse, const float *q, const float *k, const float *v, int ld, int T, int hs,
			  float scale, float *scr)
{
	size_t Tp = round_up((size_t)T, KC), Dp = round_up((size_t)hs, 16);
	float *kt = scr, *vt = kt + Dp * Tp, *dkb = vt + Dp * Tp, *dvb = dkb + (size_t)KC * hs, *dd = dvb + (size_t)KC * hs;
	float(*p)[KC] = (float(*)[KC])round_up((size_t)(dd + Tp), 64);
	float(*ds)[KC] = p + QR;
	float *dummy = ds[QR];
	transpose(kt, k, ld, T, hs, Tp);
	transpose(vt, v, ld, T, hs, Tp);
	/* D_i = dout_i · out_i = Σ_j p_ij (dout_i · v_j) */
	for (int i = 0; i < T; i++) {
		const float *a = dout + (size_t)i * ldo, *b = out + (size_t)i * ldo;
		__m512 acc = _mm512_setzero_ps();
		for (int d = 0; d < hs; d += 16) {
			__mmask16 mk = dim_mask(d, hs);
			acc = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(mk, a + d), _mm512_maskz_loadu_ps(mk, b + d), acc);
		}
		dd[i] = _mm512_reduce_add_ps(acc);
		memset(dq + (size_t)i * ld, 0, (size_t)hs * sizeof(float));
	}
	const __m512 sc = _mm512_set1_ps(scale);
	for (int j0 = 0; j0 < T; j0 += KC) {
		int jn = T - j0 < KC ? T - j0 : KC;
		memset(dkb, 0, (size_t)jn * hs * sizeof(float));
		memset(dvb, 0, (size_t)jn * hs * sizeof(float));
		for (int i0 = j0; i0 < T; i0 += QR) {
			int nr = T - i0 < QR ? T - i0 : QR;
			const float *qr[QR], *dor[QR];
			float *dqr[QR];
			int row[QR];
			for (int r = 0; r < QR; r++) {
				row[r] = r < nr ? i0 + r : T - 1;
				qr[r] = q + (size_t)row[r] * ld;
				dor[r] = dout + (size_t)row[r] * ldo;
				dqr[r] = r < nr ? dq + (size_t)row[r] * ld : dummy;
			}
			__m512 s[QR][4], dp[QR][4];
			tile_dot(s, qr, kt, Tp, j0, hs);
			tile_dot(dp, dor, vt, Tp, j0, hs);
			for (int r = 0; r < QR; r++) {
				__m512 lv = _mm512_set1_ps(lse[row[r]]), dv_ = _mm512_set1_ps(dd[row[r]]);
				for (int c = 0; c < 4; c++) {
					__mmask16 mk = r < nr ? causal_mask(row[r], j0, c) : 0;
					__m512 e = _mm512_maskz_mov_ps(mk, nn_exp512(_mm512_fmsub_ps(s[r][c], sc, lv)));
					_mm512_store_ps(p[r] + 16 * c, e);
					_mm512_store_ps(ds[r] + 16 * c,
							_mm512_mul_ps(_mm512_mul_ps(e, _mm512_sub_ps(dp[r][c], dv_)), sc));
				}
			}
			/* keys past the tile's last row have zero weight in every row */
			int jm = i0 + nr - j0 < jn ? i0 + nr - j0 : jn;
			tile_accum_keys(dvb, (const float(*)[KC])p, jm, dor, hs);
			tile_accum_keys(dkb, (const float(*)[KC])ds, jm, qr, hs);
			tile_accum(dqr, (const float(*)[KC])ds, jm, k + (size_t)j0 * ld, ld, hs);
		}
		for (int j = 0; j < jn; j++) {
			memcpy(dk + (size_t)(j0 + j) * ld, dkb + (size_t)j * hs, (size_t)hs * sizeof(float));
			memcpy(dv + (size_t)(j0 + j) * ld, dvb + (size_t)j * hs, (size_t)hs * sizeof(float));
		}
	}
}

#endif /* NN_AVX512 */

void nn_attention_forward(float *out, float *lse, float *scratch, const float *qkv, int B, int T, int C, int H)
{
#ifdef NN_AVX512
	if (!nn_get_reference()) {
		int hs = C / H, C3 = 3 * C, nt = nn_get_threads();
		float scale = 1.0f / sqrtf((float)hs);
		size_t per = per_thread_floats(T, hs);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
		for (int bh = 0; bh < B * H; bh++) {
			int b = bh / H, h = bh % H;
			const float *q = qkv + (size_t)b * T * C3 + (size_t)h * hs;
			head_forward(out + (size_t)b * T * C + (size_t)h * hs, C, lse + (size_t)bh * T, q, q + C, q + 2 * C,
				     C3, T, hs, scale, scratch + (size_t)omp_get_thread_num() * per);
		}
		return;
	}
#endif
	(void)scratch;
	nn_attention_forward_ref(out, lse, qkv, B, T, C, H);
}

void nn_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
			   const float *lse, int B, int T, int C, int H)
{
#ifdef NN_AVX512
	if (!nn_get_reference()) {
		int hs = C / H, C3 = 3 * C, nt = nn_get_threads();
		float scale = 1.0f / sqrtf((float)hs);
		size_t per = per_thread_floats(T, hs);
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt)
		for (int bh = 0; bh < B * H; bh++) {
			int b = bh / H, h = bh % H;
			size_t qo = (size_t)b * T * C3 + (size_t)h * hs, oo = (size_t)b * T * C + (size_t)h * hs;
			head_backward(dqkv + qo, dqkv + qo + C, dqkv + qo + 2 * C, dout + oo, out + oo, C,
				      lse + (size_t)bh * T, qkv + qo, qkv + qo + C, qkv + qo + 2 * C, C3, T, hs, scale,
				      scratch + (size_t)omp_get_thread_num() * per);
		}
		return;
	}
#endif
	(void)scratch;
	(void)out;
	nn_attention_backward_ref(dqkv, dout, qkv, lse, B, T, C, H);
}
