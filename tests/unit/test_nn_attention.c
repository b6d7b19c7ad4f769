/* tests/unit/test_nn_attention.c — the bf16 attention (nn_attention_forward_bf16/backward_bf16, AMX
 * tiles where the CPU has them, else the fp32 kernels) against the fp32 reference, within a bound
 * derived element by element from what bf16 operands can change, and its causality exactly.
 *
 * The bound (first order in u = 2^-8, bf16's unit roundoff: 8 significant bits, round to nearest):
 *   scores   s_ij = scale·q_i·k_j with q, k rounded: |δs_ij| <= Δ_ij = (2u+u²)·scale·Σ_d |q_id||k_jd|;
 *            the row's log-sum-exp moves by at most Δ_i = max_j Δ_ij, so each probability by a
 *            factor within e^{±2Δ_i}.
 *   out      Σ_j p_ij v_j with p (as a product operand) and v rounded once more each:
 *            |δout_id| <= Σ_j p_ij |v_jd| · ((1+u)² e^{2Δ_i} − 1).
 *   backward dp_ij = dO_i·v_j with dO, v rounded: Γ_ij = (2u+u²) Σ_d |dO_id||v_jd|; D_i = dO_i·out_i
 *            with dO rounded and out off by δout: Λ_i = Σ_d |dO_id| (u|out_id| + δout_id);
 *            ds_ij = scale·p_ij (dp_ij − D_i) is then off by Ξ_ij = scale·p_ij (Γ_ij + Λ_i +
 *            |dp_ij − D_i| ((1+u) e^{2Δ_i} − 1)) before it is rounded (u) as a product operand;
 *            dq_id = Σ_j ds_ij k_jd: |δ| <= Σ_j (Ξ_ij + u|ds_ij|)|k_jd| + u Σ_j |ds_ij||k_jd| (k
 *            rounded); dk alike over i with q; dv_jd = Σ_i p_ij dO_id: Σ_i p_ij |dO_id| ((1+u)²
 *            e^{2Δ_i} − 1).
 * Each bound gets 5% for the second-order terms and fp32 accumulation (1e-5 of the terms' absolute
 * sum). With unit-variance inputs and head size 16-96 the bounds come to a few percent of the
 * terms' magnitude, while a wrong scale (1/hs for 1/sqrt(hs)) moves every probability by tens of
 * percent, a key block dropped or attended twice moves a row by the block's share of its mass, and
 * a mask one key off moves the early rows (few keys, each 1/(i+1) of the mass) far past it; the
 * causality test catches a mask error exactly (rows before a changed key are bitwise unchanged). */
#include "nn/nn.h"

#include "common/common.h"
#include "tests/unit/nn_fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TestSuite(nn_attention);

static const double U = 1.0 / 256;

/* The bounds of one (b, h) (see the top), written into the tensors' layouts. */
static void head_bounds(const float *qkv, const float *dy, int T, int C, int H, int b, int h, double *tol_out,
			double *tol_lse, double *tol_dqkv)
{
	const int hs = C / H, C3 = 3 * C;
	const double scale = 1.0 / sqrt((double)hs);
	double *p = calloc((size_t)T * T, sizeof *p), *ds = calloc((size_t)T * T, sizeof *ds);
	double *xi = calloc((size_t)T * T, sizeof *xi), *dl = calloc((size_t)T, sizeof *dl);
	cr_assert(p && ds && xi && dl);
#define Q(i, d) ((double)qkv[((size_t)b * T + (i)) * C3 + (size_t)h * hs + (d)])
#define K(i, d) ((double)qkv[((size_t)b * T + (i)) * C3 + C + (size_t)h * hs + (d)])
#define V(i, d) ((double)qkv[((size_t)b * T + (i)) * C3 + 2 * C + (size_t)h * hs + (d)])
#define DO(i, d) ((double)dy[((size_t)b * T + (i)) * C + (size_t)h * hs + (d)])
	for (int i = 0; i < T; i++) {
		double mx = -INFINITY, sum = 0, delta = 0;
		for (int j = 0; j <= i; j++) {
			double s = 0, a = 0;
			for (int d = 0; d < hs; d++)
				s += Q(i, d) * K(j, d), a += fabs(Q(i, d) * K(j, d));
			p[(size_t)i * T + j] = s * scale;
			mx = fmax(mx, s * scale);
			delta = fmax(delta, (2 * U + U * U) * scale * a);
		}
		for (int j = 0; j <= i; j++)
			sum += exp(p[(size_t)i * T + j] - mx);
		for (int j = 0; j <= i; j++)
			p[(size_t)i * T + j] = exp(p[(size_t)i * T + j] - mx) / sum;
		dl[i] = delta;
		tol_lse[((size_t)b * H + h) * T + i] = 1.05 * delta + 1e-5 * (1 + fabs(mx + log(sum)));
		double e_out = (1 + U) * (1 + U) * exp(2 * delta) - 1, e_p = (1 + U) * exp(2 * delta) - 1;
		double dout_tol[512], D = 0, lam = 0;
		cr_assert(hs <= 512);
		for (int d = 0; d < hs; d++) {
			double o = 0, a = 0;
			for (int j = 0; j <= i; j++)
				o += p[(size_t)i * T + j] * V(j, d), a += p[(size_t)i * T + j] * fabs(V(j, d));
			dout_tol[d] = 1.05 * e_out * a + 1e-5 * a + 1e-6;
			tol_out[((size_t)b * T + i) * C + (size_t)h * hs + d] = dout_tol[d];
			D += DO(i, d) * o;
			lam += fabs(DO(i, d)) * (U * fabs(o) + dout_tol[d]);
		}
		for (int j = 0; j <= i; j++) {
			double dp = 0, g = 0;
			for (int d = 0; d < hs; d++)
				dp += DO(i, d) * V(j, d), g += fabs(DO(i, d) * V(j, d));
			g *= 2 * U + U * U;
			double pij = p[(size_t)i * T + j];
			ds[(size_t)i * T + j] = scale * pij * (dp - D);
			xi[(size_t)i * T + j] = scale * pij * (g + lam + fabs(dp - D) * e_p);
		}
	}
	for (int i = 0; i < T; i++)
		for (int d = 0; d < hs; d++) {
			double tq = 0, tk = 0, tv = 0, aq = 0, ak = 0, av = 0;
			for (int j = 0; j <= i; j++) {  /* dq_i over keys j <= i */
				double w = fabs(ds[(size_t)i * T + j]);
				tq += (xi[(size_t)i * T + j] + 2 * U * w) * fabs(K(j, d));
				aq += w * fabs(K(j, d));
			}
			for (int r = i; r < T; r++) {  /* dk_i, dv_i over the queries r >= i that see key i */
				double w = fabs(ds[(size_t)r * T + i]), pr = p[(size_t)r * T + i];
				tk += (xi[(size_t)r * T + i] + 2 * U * w) * fabs(Q(r, d));
				ak += w * fabs(Q(r, d));
				tv += pr * fabs(DO(r, d)) * ((1 + U) * (1 + U) * exp(2 * dl[r]) - 1);
				av += pr * fabs(DO(r, d));
			}
			size_t at = ((size_t)b * T + i) * C3 + (size_t)h * hs + d;
			tol_dqkv[at] = 1.05 * tq + 1e-5 * aq + 1e-6;
			tol_dqkv[at + C] = 1.05 * tk + 1e-5 * ak + 1e-6;
			tol_dqkv[at + 2 * C] = 1.05 * tv + 1e-5 * av + 1e-6;
		}
#undef Q
#undef K
#undef V
#undef DO
	free(p), free(ds), free(xi), free(dl);
}

static void within(const float *a, const float *ref, const double *tol, size_t n, const char *what, int T, int hs)
{
	double worst = 0;
	for (size_t i = 0; i < n; i++) {
		double r = fabs((double)a[i] - ref[i]) / tol[i];
		worst = r > worst ? r : worst;
		if (!(r <= 1))
			cr_assert_fail("%s (T %d, head size %d): element %zu is %.8g, the reference %.8g, bound %.3g",
				       what, T, hs, i, a[i], ref[i], tol[i]);
	}
	cr_log_info("%s T %d hs %d: worst error %.3f of the bound", what, T, hs, worst);
}

/* q, k, v given in bf16 (qkv_h, as the model's qkv product stores them; qkv NULL where the tiles
 * run) compute bit for bit what their fp32 values (qkv widened from qkv_h) compute: out, out_h, lse
 * and dqkv. Under the bound above then too, since the kernel rounds q, k, v to those values. The
 * bias gradient (db) is dqkv's column sums, bit for bit. */
static void same_from_bf16(const float *qkv, const float *dy, int B, int T, int C, int H)
{
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * H * T;
	uint16_t *qh = malloc(nq * 2), *oh1 = malloc(no * 2), *oh2 = malloc(no * 2);
	float *qw = malloc(nq * 4), *o1 = malloc(no * 4), *o2 = malloc(no * 4), *l1 = malloc(nl * 4), *l2 = malloc(nl * 4);
	float *d1 = aligned_alloc(64, (nq * 4 + 63) / 64 * 64), *d2 = aligned_alloc(64, (nq * 4 + 63) / 64 * 64);
	float *scr = malloc(nn_attention_scratch_floats(T, C, H, 0) * 4);
	cr_assert(qh && oh1 && oh2 && qw && o1 && o2 && l1 && l2 && d1 && d2 && scr);
	nn_bf16_from_f32_ref(qh, qkv, nq);
	for (size_t i = 0; i < nq; i++)
		qw[i] = f32_from_bf16(qh[i]);
	const int tiles = nn_attention_bf16_tiles();
	nn_attention_forward_bf16(o1, oh1, l1, scr, qw, NULL, B, T, C, H);
	nn_attention_forward_bf16(o2, oh2, l2, scr, tiles ? NULL : qw, qh, B, T, C, H);
	cr_assert(memcmp(o1, o2, no * 4) == 0 && memcmp(oh1, oh2, no * 2) == 0 && memcmp(l1, l2, nl * 4) == 0,
		  "forward from bf16 q, k, v (T %d, head size %d)", T, C / H);
	nn_attention_backward_bf16(d1, NULL, NULL, scr, dy, qw, NULL, o1, l1, B, T, C, H);
	/* the gradient's bf16 copy: nn_bf16_from_f32_ref of dqkv, bit for bit */
	uint16_t *dh = malloc(nq * 2), *dh_ref = malloc(nq * 2);
	cr_assert(dh && dh_ref);
	nn_bf16_from_f32_ref(dh_ref, d1, nq);
	/* with dqkv_h, on the tiles only the bf16 copy is made (dqkv untouched: NaN stays), else both */
	for (size_t i = 0; i < nq; i++)
		d2[i] = NAN;
	int f32 = nn_attention_backward_bf16(d2, dh, NULL, scr, dy, tiles ? NULL : qw, qh, o2, l2, B, T, C, H);
	cr_assert_eq(f32, !tiles, "fp32 dqkv made (T %d, head size %d, tiles %d)", T, C / H, tiles);
	cr_assert(f32 ? memcmp(d1, d2, nq * 4) == 0 : isnan(d2[0]) && isnan(d2[nq - 1]),
		  "backward from bf16 q, k, v (T %d, head size %d)", T, C / H);
	cr_assert(memcmp(dh, dh_ref, nq * 2) == 0, "dqkv_h is dqkv in bf16 (T %d, head size %d)", T, C / H);
	/* with the bias gradient (db from a nonzero start; by heads where they split evenly over the
	 * threads, else a pass after, which reads the fp32 dqkv it then makes): dqkv_h unchanged, db +=
	 * dqkv's row-order column sums */
	float *db = malloc((size_t)3 * C * 4), *db_ref = malloc((size_t)3 * C * 4);
	cr_assert(db && db_ref);
	for (int c = 0; c < 3 * C; c++)
		db[c] = db_ref[c] = 0.25f * (float)(c % 7) - 0.5f;
	for (size_t i = 0; i < (size_t)B * T; i++)
		for (int c = 0; c < 3 * C; c++)
			db_ref[c] += d1[i * 3 * C + c];
	for (size_t i = 0; i < nq; i++)
		d2[i] = NAN;
	f32 = nn_attention_backward_bf16(d2, dh, db, scr, dy, tiles ? NULL : qw, qh, o2, l2, B, T, C, H);
	cr_assert_eq(f32, !tiles || H % nn_get_threads() != 0, "fp32 dqkv made with db (T %d, %d heads, %d threads)", T,
		     H, nn_get_threads());
	cr_assert((f32 ? memcmp(d1, d2, nq * 4) == 0 : isnan(d2[0])) && memcmp(dh, dh_ref, nq * 2) == 0,
		  "dqkv with the bias gradient (T %d, head size %d)", T, C / H);
	cr_assert(memcmp(db, db_ref, (size_t)3 * C * 4) == 0, "db: dqkv's column sums (T %d, %d heads, %d threads)", T,
		  H, nn_get_threads());
	free(db), free(db_ref);
	free(qh), free(oh1), free(oh2), free(qw), free(o1), free(o2), free(l1), free(l2), free(d1), free(d2), free(scr);
	free(dh), free(dh_ref);
}

static void check(int B, int T, int C, int H)
{
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * H * T;
	float *qkv = fx_normal(nq, 51 + T, 1), *dy = fx_normal(no, 52 + T, 1);
	float *o1 = malloc(no * 4), *o2 = malloc(no * 4), *l1 = malloc(nl * 4), *l2 = malloc(nl * 4);
	/* 64-byte aligned, as the model's workspace: with head sizes and 3·C multiples of 16 the
	 * gradient rows go out by streaming stores, else by masked ones */
	float *d1 = aligned_alloc(64, (nq * 4 + 63) / 64 * 64), *d2 = malloc(nq * 4);
	uint16_t *oh = malloc(no * 2), *oh_ref = malloc(no * 2);
	double *to = malloc(no * 8), *tl = malloc(nl * 8), *td = malloc(nq * 8);
	float *scr = malloc(nn_attention_scratch_floats(T, C, H, 0) * 4);
	cr_assert(o1 && o2 && l1 && l2 && d1 && d2 && oh && oh_ref && to && tl && td && scr);
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++)
			head_bounds(qkv, dy, T, C, H, b, h, to, tl, td);
	nn_attention_forward_bf16(o1, oh, l1, scr, qkv, NULL, B, T, C, H);
	nn_attention_forward_ref(o2, l2, qkv, B, T, C, H);
	within(l1, l2, tl, nl, "bf16 attention log-sum-exp", T, C / H);
	within(o1, o2, to, no, "bf16 attention out", T, C / H);
	nn_bf16_from_f32_ref(oh_ref, o1, no);
	cr_assert(memcmp(oh, oh_ref, no * 2) == 0, "out_h is out in bf16");
	for (size_t i = 0; i < nq; i++)
		d1[i] = NAN; /* overwritten, whatever was there */
	nn_attention_backward_bf16(d1, NULL, NULL, scr, dy, qkv, NULL, o1, l1, B, T, C, H);
	nn_attention_backward_ref(d2, dy, qkv, l2, B, T, C, H);
	within(d1, d2, td, nq, "bf16 attention dqkv", T, C / H);
	same_from_bf16(qkv, dy, B, T, C, H);
	free(qkv), free(dy), free(o1), free(o2), free(l1), free(l2), free(d1), free(d2), free(oh), free(oh_ref);
	free(to), free(tl), free(td), free(scr);
}

Test(nn_attention, bf16_within_bound_of_fp32_reference)
{
	cr_log_info("bf16 attention on %s (oneDNN ISA %s)", nn_attention_bf16_tiles() ? "AMX tiles" : "the fp32 kernels",
		    nn_dnnl_isa());
	check(1, 1, 8, 1);       /* one query */
	check(2, 7, 12, 3);      /* T below one tile, head size 4 (most of the tile depth padding) */
	check(2, 130, 32, 2);    /* head size 16, a ragged last query block and key pair */
	check(1, 67, 160, 2);    /* head size 80: depth 96, a width of five 16-column tiles */
	check(2, 256, 128, 2);   /* the models' head size 64 over whole chunks */
	check(2, 64, 256, 4);    /* four heads of 64 */
	check(1, 300, 96, 1);    /* head size 96; rows past 128 and 256 merge online-softmax chunks */
	nn_set_threads(1);       /* one thread owns every head */
	check(3, 33, 64, 4);
	nn_set_threads(0);
}

/* Keys after a row never reach it: replacing key and value t (made huge) and everything after
 * leaves every earlier row's output, log-sum-exp and dq bitwise unchanged. */
Test(nn_attention, bf16_causal_exactly)
{
	const int B = 1, T = 100, C = 64, H = 2;
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * H * T;
	float *qkv = fx_normal(nq, 71, 1), *dy = fx_normal(no, 72, 1), *o1 = malloc(no * 4), *o2 = malloc(no * 4),
	      *l1 = malloc(nl * 4), *l2 = malloc(nl * 4), *d1 = malloc(nq * 4), *d2 = malloc(nq * 4);
	float *scr = malloc(nn_attention_scratch_floats(T, C, H, 0) * 4);
	cr_assert(o1 && o2 && l1 && l2 && d1 && d2 && scr);
	for (int t = 1; t < T; t += 15) {
		nn_attention_forward_bf16(o1, NULL, l1, scr, qkv, NULL, B, T, C, H);
		nn_attention_backward_bf16(d1, NULL, NULL, scr, dy, qkv, NULL, o1, l1, B, T, C, H);
		float *x = malloc(nq * 4);
		cr_assert_not_null(x);
		memcpy(x, qkv, nq * 4);
		for (int j = t; j < T; j++)
			for (int c = C; c < 3 * C; c++)
				x[(size_t)j * 3 * C + c] = c < 2 * C ? 40.0f : 1e4f;
		nn_attention_forward_bf16(o2, NULL, l2, scr, x, NULL, B, T, C, H);
		nn_attention_backward_bf16(d2, NULL, NULL, scr, dy, x, NULL, o2, l2, B, T, C, H);
		cr_assert(memcmp(o1, o2, (size_t)t * C * 4) == 0, "rows before %d unchanged", t);
		for (int h = 0; h < H; h++)
			cr_assert(memcmp(l1 + (size_t)h * T, l2 + (size_t)h * T, (size_t)t * 4) == 0, "lse before %d", t);
		for (int i = 0; i < t; i++)
			cr_assert(memcmp(d1 + (size_t)i * 3 * C, d2 + (size_t)i * 3 * C, (size_t)C * 4) == 0, "dq row %d", i);
		free(x);
	}
	free(qkv), free(dy), free(o1), free(o2), free(l1), free(l2), free(d1), free(d2), free(scr);
}
