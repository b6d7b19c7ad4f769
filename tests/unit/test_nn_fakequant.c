/* tests/unit/test_nn_fakequant.c — nn's fake quantization (quantization-aware training): the
 * kernels against plain scalar loops (weights per channel and per tensor, inputs dynamic and static,
 * the clipped STE mask), weight-only fake quantization equal to the plain model on Q(w) (loss,
 * logits and every gradient, bitwise), the whole model's STE forward/backward against a reference
 * composed here from nn's public kernels (static with clamping, and dynamic), recomputation bitwise
 * equal to the stored path, pipeline chunks (global layer indices) equal to the whole model, and
 * the setter's errors (tensor parallelism refused). quant's fake-quant model is compared with nn's
 * in tests/unit/test_quant_qat.c. */
#include "nn/nn.h"
#include "tests/unit/nn_fixture.h"

#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct nn_config TINY = { .vocab_size = 32, .max_seq = 8, .n_layer = 3, .n_head = 4, .n_embd = 16 };

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

TestSuite(nn_fakequant);

/* The scalar definition, written out: s = amax/127 (1 for 0), q = clamp(rint(x/s)), x̂ = s·q. */
static float ref_scale(float amax)
{
	return amax > 0 ? amax / 127.0f : 1.0f;
}
static float ref_fake(float x, float s)
{
	float r = rintf(x * (1.0f / s));
	r = r != r ? 0.0f : r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
	return s * (float)(int)r;   /* the code is an integer: no −0 */
}
/* bit for bit (−0 and +0 differ) */
static int same(float a, float b)
{
	return !memcmp(&a, &b, sizeof a);
}

Test(nn_fakequant, kernels_match_plain_loops)
{
	const int IC = 37, OC = 19, N = 5, K = 45;
	uint64_t st = rng_seed(5, 1);
	float *w = malloc(IC * OC * sizeof(float)), *q = malloc(IC * OC * sizeof(float)), s[19];
	rng_normal(&st, w, (size_t)IC * OC, 0.0f, 0.05f);
	w[3 * OC + 4] = 0.9f;   /* an outlier in column 4 */
	w[7 * OC + 4] = 0.5f * 0.9f / 127.0f * 127.0f + 0.9f / 254.0f;   /* near a tie */
	for (int pt = 0; pt < 2; pt++) {
		nn_fq_weight(q, s, w, IC, OC, pt);
		float tmax = 0;
		for (int i = 0; i < IC * OC; i++)
			tmax = fmaxf(tmax, fabsf(w[i]));
		for (int o = 0; o < OC; o++) {
			float amax = 0;
			for (int i = 0; i < IC; i++)
				amax = fmaxf(amax, fabsf(w[i * OC + o]));
			float rs = ref_scale(pt ? tmax : amax);
			cr_assert_eq(s[o], rs, "per_tensor %d scale %d: %g vs %g", pt, o, s[o], rs);
			for (int i = 0; i < IC; i++)
				cr_assert(same(q[i * OC + o], ref_fake(w[i * OC + o], rs)), "w[%d,%d]", i, o);
		}
	}
	/* activations: dynamic per row, static with clamping; in place */
	float *x = malloc(N * K * sizeof(float)), *y = malloc(N * K * sizeof(float));
	rng_normal(&st, x, (size_t)N * K, 0.0f, 1.0f);
	x[K + 3] = 9.0f;
	nn_fq_act_dynamic(y, x, N, K);
	for (int n = 0; n < N; n++) {
		float amax = 0;
		for (int k = 0; k < K; k++)
			amax = fmaxf(amax, fabsf(x[n * K + k]));
		cr_assert_eq(nn_quant_row_amax(x + n * K, K), amax);
		for (int k = 0; k < K; k++)
			cr_assert(same(y[n * K + k], ref_fake(x[n * K + k], ref_scale(amax))), "dynamic [%d,%d]", n, k);
	}
	const float ss = 0.012f;   /* clamps |x| > ~1.53 */
	memcpy(y, x, N * K * sizeof(float));
	nn_fq_act_static(y, y, (size_t)N * K, ss);
	int clamped = 0;
	float *dx = malloc(N * K * sizeof(float));
	for (int i = 0; i < N * K; i++) {
		cr_assert(same(y[i], ref_fake(x[i], ss)), "static [%d]", i);
		dx[i] = 1.0f + (float)i;
	}
	nn_fq_ste_static(dx, x, (size_t)N * K, ss);
	for (int i = 0; i < N * K; i++) {
		int out = fabsf(rintf(x[i] / ss)) > 127.0f;
		clamped += out;
		cr_assert_eq(dx[i], out ? 0.0f : 1.0f + (float)i, "ste [%d] x %g", i, x[i]);
	}
	cr_assert(clamped > 5 && clamped < N * K / 2, "the test must clamp some codes (%d)", clamped);
	/* ties round half to even, ±inf clamp, NaN gives 0 (and keeps its gradient), in the vector body
	 * (16 lanes) and the scalar tail alike */
	float sp[40], fq[40], g[40];
	const float special[8] = { 0.625f, 0.875f, -0.1f, 1e30f, -INFINITY, NAN, 31.875f, -31.875f };
	for (int i = 0; i < 40; i++) {
		sp[i] = special[i % 8];
		g[i] = 1.0f;
	}
	nn_fq_act_static(fq, sp, 40, 0.25f);
	nn_fq_ste_static(g, sp, 40, 0.25f);
	for (int i = 0; i < 40; i++) {
		cr_assert(same(fq[i], ref_fake(sp[i], 0.25f)), "special %d: %g -> %g", i, sp[i], fq[i]);
		cr_assert_eq(g[i], i % 8 == 3 || i % 8 == 4 || i % 8 >= 6 ? 0.0f : 1.0f, "ste special %d", i);
	}
	cr_assert(fq[0] == 0.5f && fq[1] == 1.0f && fq[5] == 0.0f && fq[6] == 31.75f);
	nn_fq_weight(fq, s, sp, 2, 19, 0);   /* columns with an inf: scale inf → 1 */
	for (int i = 0; i < 38; i++)
		cr_assert(same(fq[i], ref_fake(sp[i], s[i % 19])), "weight special %d", i);
	free(w);
	free(q);
	free(x);
	free(y);
	free(dx);
}

/* A fake-quant setting for TINY: every linear on (but layer 1's fc), `act`, static scales. */
static struct nn_fq_layer LIN[3 * NN_FQ_PER_LAYER];
static struct nn_fake_quant setting(enum nn_fq_act act, int per_tensor)
{
	for (int l = 0; l < 3; l++)
		for (int k = 0; k < NN_FQ_PER_LAYER; k++) {
			/* LayerNorm outputs are O(1), the attention and GELU outputs smaller: clamp some of each */
			float s = k == NN_FQ_QKV || k == NN_FQ_FC ? 0.012f : 0.004f;
			LIN[l * NN_FQ_PER_LAYER + k] = (struct nn_fq_layer){ .on = !(l == 1 && k == NN_FQ_FC), .in_scale = s };
		}
	return (struct nn_fake_quant){ .n_layer = 3, .per_tensor = per_tensor, .act = act, .lin = LIN };
}

Test(nn_fakequant, weight_only_equals_plain_model_on_quantized_weights)
{
	const int B = 3, T = 8, N = B * T;
	int x[24], y[24];
	fx_tokens(x, N, 32, 1);
	fx_tokens(y, N, 32, 2);
	for (int pt = 0; pt < 2; pt++) {
		struct nn_gpt m, r;
		OK(nn_gpt_init(&m, &TINY));
		OK(nn_gpt_init(&r, &TINY));
		fx_rough_weights(&m, 21, 0.1f);
		memcpy(r.params_mem, m.params_mem, m.n_params * sizeof(float));
		struct nn_fake_quant fq = setting(NN_FQ_ACT_NONE, pt);
		OK(nn_gpt_set_fake_quant(&m, &fq));
		/* r: the plain model on Q(w) of the layers that are on */
		const int wid[4] = { NN_QKVW, NN_ATTPROJW, NN_FCW, NN_FCPROJW };
		const int C = TINY.n_embd, ic[4] = { C, C, C, 4 * C }, oc[4] = { 3 * C, C, 4 * C, C };
		float s[64];
		for (int l = 0; l < 3; l++)
			for (int k = 0; k < 4; k++) {
				if (!LIN[l * 4 + k].on)
					continue;
				size_t n = (size_t)ic[k] * oc[k];
				float *tmp = malloc(n * sizeof(float));
				nn_fq_weight(tmp, s, m.param[wid[k]] + l * n, ic[k], oc[k], pt);
				memcpy(r.param[wid[k]] + l * n, tmp, n * sizeof(float));
				free(tmp);
			}
		OK(nn_gpt_forward(&m, x, y, B, T));
		OK(nn_gpt_forward(&r, x, y, B, T));
		cr_assert_eq(memcmp(&m.loss, &r.loss, sizeof m.loss), 0, "loss %.9g vs %.9g", m.loss, r.loss);
		cr_assert_eq(memcmp(nn_gpt_logits(&m), nn_gpt_logits(&r), (size_t)N * 32 * sizeof(float)), 0);
		nn_gpt_zero_grad(&m);
		nn_gpt_zero_grad(&r);
		OK(nn_gpt_backward(&m, 1.0f));
		OK(nn_gpt_backward(&r, 1.0f));
		/* STE: dw = xᵀ·dout and dx = dout·Q(w)ᵀ are the plain model's gradients at Q(w) */
		cr_assert_eq(memcmp(m.grads_mem, r.grads_mem, m.n_params * sizeof(float)), 0, "per_tensor %d", pt);
		/* and they differ from the unquantized model's */
		OK(nn_gpt_set_fake_quant(&m, NULL));
		OK(nn_gpt_forward(&m, x, y, B, T));
		cr_assert_neq(m.loss, r.loss);
		nn_gpt_release(&m);
		nn_gpt_release(&r);
	}
}

/* ------------------------------------------------------------------------------------------ */
/* The reference: the whole model written out with nn's public kernels, the fake quantization and
 * the clipped STE applied by hand around each linear layer (whole model, fp32). */

struct ref_layer {
	float *xin, *ln1, *m1, *r1, *qkv, *att_lse, *atty, *res2, *ln2, *m2, *r2, *fch, *fcg;
};

static const struct nn_fq_layer *on(const struct nn_fake_quant *fq, int l, int k)
{
	return fq->lin[l * NN_FQ_PER_LAYER + k].on ? &fq->lin[l * NN_FQ_PER_LAYER + k] : NULL;
}
/* Q(x) into buf, or x for weight-only / off */
static const float *qx(const struct nn_fake_quant *fq, const struct nn_fq_layer *q, const float *x, float *buf, int N,
		       int K)
{
	if (!q || fq->act == NN_FQ_ACT_NONE)
		return x;
	for (int n = 0; n < N; n++) {
		float s = q->in_scale;
		if (fq->act == NN_FQ_ACT_DYNAMIC) {
			float amax = 0;
			for (int k = 0; k < K; k++)
				amax = fmaxf(amax, fabsf(x[n * K + k]));
			s = ref_scale(amax);
		}
		for (int k = 0; k < K; k++)
			buf[n * K + k] = ref_fake(x[n * K + k], s);
	}
	return buf;
}
static const float *qw(const struct nn_fake_quant *fq, const struct nn_fq_layer *q, const float *w, float *buf, int IC,
		       int OC)
{
	if (!q)
		return w;
	float tmax = 0;
	for (int i = 0; i < IC * OC; i++)
		tmax = fmaxf(tmax, fabsf(w[i]));
	for (int o = 0; o < OC; o++) {
		float amax = 0;
		for (int i = 0; i < IC; i++)
			amax = fmaxf(amax, fabsf(w[i * OC + o]));
		float s = ref_scale(fq->per_tensor ? tmax : amax);
		for (int i = 0; i < IC; i++)
			buf[i * OC + o] = ref_fake(w[i * OC + o], s);
	}
	return buf;
}
static int ste(const struct nn_fake_quant *fq, const struct nn_fq_layer *q, float *dx, const float *x, int n)
{
	int c = 0;
	if (!q || fq->act != NN_FQ_ACT_STATIC)
		return 0;
	for (int i = 0; i < n; i++)
		if (fabsf(rintf(x[i] * (1.0f / q->in_scale))) > 127.0f) {
			dx[i] = 0.0f;
			c++;
		}
	return c;
}

/* Forward and backward of the reference: OUT loss, grads (n_params, zeroed here), clamped count. */
static float ref_run(const struct nn_gpt *m, const struct nn_fake_quant *fq, const int *in, const int *tg, int B,
		     int T, float *G_mem, int *clamped)
{
	const int N = B * T, C = TINY.n_embd, H = TINY.n_head, L = TINY.n_layer, V = TINY.vocab_size;
	float *const *P = m->param;
	float *G[NN_NPARAMS];
	memset(G_mem, 0, m->n_params * sizeof(float));
	for (int id = 0; id < NN_NPARAMS; id++)
		G[id] = G_mem + (m->param[id] - m->params_mem);
	struct ref_layer la[3];
	size_t per = (size_t)N * (C * 8 + 4 + 3 * C + 8 * C) + (size_t)B * H * T;
	float *mem = calloc(per * L + (size_t)N * (C * 4 + V * 2 + 4 + 4 * C * 2) + 16 * C * C +
				    nn_attention_scratch_floats(T, C, H, 0),
			    sizeof(float));
	float *p = mem;
#define TAKE(d, n) (d = p, p += (n))
	for (int l = 0; l < L; l++) {
		struct ref_layer *a = &la[l];
		TAKE(a->xin, N * C);
		TAKE(a->ln1, N * C);
		TAKE(a->m1, N);
		TAKE(a->r1, N);
		TAKE(a->qkv, N * 3 * C);
		TAKE(a->att_lse, (size_t)B * H * T);
		TAKE(a->atty, N * C);
		TAKE(a->res2, N * C);
		TAKE(a->ln2, N * C);
		TAKE(a->m2, N);
		TAKE(a->r2, N);
		TAKE(a->fch, N * 4 * C);
		TAKE(a->fcg, N * 4 * C);
	}
	float *xout, *lnf, *mf, *rf, *logits, *dlogits, *lse, *losses, *dres, *dc, *d4, *xq, *wq, *scr;
	TAKE(xout, N * C);
	TAKE(lnf, N * C);
	TAKE(mf, N);
	TAKE(rf, N);
	TAKE(logits, N * V);
	TAKE(dlogits, N * V);
	TAKE(lse, N);
	TAKE(losses, N);
	TAKE(dres, N * C);
	TAKE(dc, N * C);
	TAKE(d4, N * 4 * C);
	TAKE(xq, N * 4 * C);
	TAKE(wq, 16 * C * C);
	TAKE(scr, nn_attention_scratch_floats(T, C, H, 0));
#undef TAKE
	nn_encoder_forward(la[0].xin, in, P[NN_WTE], P[NN_WPE], B, T, C);
	for (int l = 0; l < L; l++) {
		struct ref_layer *a = &la[l];
		size_t lc = (size_t)l * C, CC = (size_t)C * C;
		float *out = l + 1 < L ? la[l + 1].xin : xout;
		nn_layernorm_forward(a->ln1, a->m1, a->r1, a->xin, P[NN_LN1W] + lc, P[NN_LN1B] + lc, N, C);
		const struct nn_fq_layer *q = on(fq, l, 0);
		nn_linear_forward(a->qkv, qx(fq, q, a->ln1, xq, N, C), qw(fq, q, P[NN_QKVW] + l * 3 * CC, wq, C, 3 * C),
				  P[NN_QKVB] + 3 * lc, N, C, 3 * C);
		nn_attention_forward(a->atty, a->att_lse, scr, a->qkv, B, T, C, H);
		q = on(fq, l, 1);
		nn_linear_forward(a->res2, qx(fq, q, a->atty, xq, N, C), qw(fq, q, P[NN_ATTPROJW] + l * CC, wq, C, C),
				  P[NN_ATTPROJB] + lc, N, C, C);
		nn_residual_forward(a->res2, a->res2, a->xin, (size_t)N * C);
		nn_layernorm_forward(a->ln2, a->m2, a->r2, a->res2, P[NN_LN2W] + lc, P[NN_LN2B] + lc, N, C);
		q = on(fq, l, 2);
		nn_linear_forward(a->fch, qx(fq, q, a->ln2, xq, N, C), qw(fq, q, P[NN_FCW] + l * 4 * CC, wq, C, 4 * C),
				  P[NN_FCB] + 4 * lc, N, C, 4 * C);
		nn_gelu_forward(a->fcg, a->fch, (size_t)N * 4 * C);
		q = on(fq, l, 3);
		nn_linear_forward(out, qx(fq, q, a->fcg, xq, N, 4 * C), qw(fq, q, P[NN_FCPROJW] + l * 4 * CC, wq, 4 * C, C),
				  P[NN_FCPROJB] + lc, N, 4 * C, C);
		nn_residual_forward(out, out, a->res2, (size_t)N * C);
	}
	nn_layernorm_forward(lnf, mf, rf, xout, P[NN_LNFW], P[NN_LNFB], N, C);
	nn_gemm('N', 'T', N, V, C, 1.0f, lnf, C, P[NN_WTE], C, 0.0f, logits, V);
	nn_crossentropy_forward(losses, lse, logits, tg, N, V);
	double sum = 0;
	for (int i = 0; i < N; i++)
		sum += losses[i];
	*clamped = 0;
	nn_crossentropy_backward(dlogits, logits, lse, tg, 1.0f / (float)N, N, V);
	nn_gemm('N', 'N', N, C, V, 1.0f, dlogits, V, P[NN_WTE], C, 0.0f, dc, C);
	nn_gemm('T', 'N', V, C, N, 1.0f, dlogits, V, lnf, C, 1.0f, G[NN_WTE], C);
	nn_layernorm_backward(dres, G[NN_LNFW], G[NN_LNFB], dc, xout, P[NN_LNFW], mf, rf, N, C);
	for (int l = L - 1; l >= 0; l--) {
		struct ref_layer *a = &la[l];
		size_t lc = (size_t)l * C, CC = (size_t)C * C;
		const struct nn_fq_layer *q = on(fq, l, 3);
		nn_linear_backward(d4, G[NN_FCPROJW] + l * 4 * CC, G[NN_FCPROJB] + lc, dres, qx(fq, q, a->fcg, xq, N, 4 * C),
				   qw(fq, q, P[NN_FCPROJW] + l * 4 * CC, wq, 4 * C, C), N, 4 * C, C);
		*clamped += ste(fq, q, d4, a->fcg, N * 4 * C);
		nn_gelu_backward(d4, a->fch, d4, (size_t)N * 4 * C);
		q = on(fq, l, 2);
		nn_linear_backward(dc, G[NN_FCW] + l * 4 * CC, G[NN_FCB] + 4 * lc, d4, qx(fq, q, a->ln2, xq, N, C),
				   qw(fq, q, P[NN_FCW] + l * 4 * CC, wq, C, 4 * C), N, C, 4 * C);
		*clamped += ste(fq, q, dc, a->ln2, N * C);
		nn_layernorm_backward(dres, G[NN_LN2W] + lc, G[NN_LN2B] + lc, dc, a->res2, P[NN_LN2W] + lc, a->m2, a->r2, N, C);
		q = on(fq, l, 1);
		nn_linear_backward(dc, G[NN_ATTPROJW] + l * CC, G[NN_ATTPROJB] + lc, dres, qx(fq, q, a->atty, xq, N, C),
				   qw(fq, q, P[NN_ATTPROJW] + l * CC, wq, C, C), N, C, C);
		*clamped += ste(fq, q, dc, a->atty, N * C);
		nn_attention_backward(d4, scr, dc, a->qkv, a->atty, a->att_lse, B, T, C, H);
		q = on(fq, l, 0);
		nn_linear_backward(dc, G[NN_QKVW] + l * 3 * CC, G[NN_QKVB] + 3 * lc, d4, qx(fq, q, a->ln1, xq, N, C),
				   qw(fq, q, P[NN_QKVW] + l * 3 * CC, wq, C, 3 * C), N, C, 3 * C);
		*clamped += ste(fq, q, dc, a->ln1, N * C);
		nn_layernorm_backward(dres, G[NN_LN1W] + lc, G[NN_LN1B] + lc, dc, a->xin, P[NN_LN1W] + lc, a->m1, a->r1, N, C);
	}
	nn_encoder_backward(G[NN_WTE], G[NN_WPE], dres, in, B, T, C);
	free(mem);
	return (float)(sum / N);
}

static void close_all(const float *a, const float *b, size_t n, const char *what)
{
	double amax = 0;
	for (size_t i = 0; i < n; i++)
		amax = fmax(amax, fabs(b[i]));
	for (size_t i = 0; i < n; i++)
		cr_assert(fabs(a[i] - b[i]) <= 1e-5 * amax + 1e-7, "%s [%zu]: %.9g vs reference %.9g", what, i, a[i], b[i]);
}

Test(nn_fakequant, ste_backward_matches_reference)
{
	const int B = 2, T = 8, N = B * T;
	int x[16], y[16];
	fx_tokens(x, N, 32, 7);
	fx_tokens(y, N, 32, 8);
	const enum nn_fq_act acts[3] = { NN_FQ_ACT_STATIC, NN_FQ_ACT_DYNAMIC, NN_FQ_ACT_NONE };
	for (int k = 0; k < 3; k++) {
		struct nn_gpt m;
		OK(nn_gpt_init(&m, &TINY));
		fx_rough_weights(&m, 31, 0.1f);
		struct nn_fake_quant fq = setting(acts[k], k == 1);
		OK(nn_gpt_set_fake_quant(&m, &fq));
		OK(nn_gpt_forward(&m, x, y, B, T));
		nn_gpt_zero_grad(&m);
		OK(nn_gpt_backward(&m, 1.0f));
		float *g = malloc(m.n_params * sizeof(float));
		int clamped;
		float loss = ref_run(&m, &fq, x, y, B, T, g, &clamped);
		cr_assert(fabsf(m.loss - loss) <= 1e-6f * loss, "act %d loss %.9g vs reference %.9g", k, m.loss, loss);
		if (acts[k] == NN_FQ_ACT_STATIC)
			cr_assert(clamped > 20, "the static scales must clamp some inputs (%d)", clamped);
		for (int id = 0; id < NN_NPARAMS; id++) {
			char what[32];
			snprintf(what, sizeof what, "act %d tensor %d", k, id);
			close_all(m.grad[id], g + (m.grad[id] - m.grads_mem), m.param_sizes[id], what);
		}
		free(g);
		nn_gpt_release(&m);
	}
}

Test(nn_fakequant, recompute_is_bitwise_equal)
{
	const int B = 3, T = 8, N = B * T;
	int x[24], y[24];
	fx_tokens(x, N, 32, 1);
	fx_tokens(y, N, 32, 2);
	for (int k = 0; k < 2; k++) {
		struct nn_fake_quant fq = setting(k ? NN_FQ_ACT_DYNAMIC : NN_FQ_ACT_STATIC, 0);
		struct nn_gpt m, r;
		OK(nn_gpt_init(&m, &TINY));
		OK(nn_gpt_init(&r, &TINY));
		fx_rough_weights(&m, 41, 0.1f);
		memcpy(r.params_mem, m.params_mem, m.n_params * sizeof(float));
		nn_gpt_set_recompute(&r, 1);
		OK(nn_gpt_set_fake_quant(&m, &fq));
		OK(nn_gpt_set_fake_quant(&r, &fq));
		OK(nn_gpt_forward(&m, x, y, B, T));
		OK(nn_gpt_forward(&r, x, y, B, T));
		cr_assert_eq(memcmp(&m.loss, &r.loss, sizeof m.loss), 0);
		nn_gpt_zero_grad(&m);
		nn_gpt_zero_grad(&r);
		OK(nn_gpt_backward(&m, 1.0f));
		OK(nn_gpt_backward(&r, 1.0f));
		cr_assert_eq(memcmp(m.grads_mem, r.grads_mem, m.n_params * sizeof(float)), 0, "act %d", k);
		nn_gpt_release(&m);
		nn_gpt_release(&r);
	}
}

Test(nn_fakequant, pipeline_chunks_equal_whole_model)
{
	const int B = 2, T = 8, N = B * T, C = TINY.n_embd;
	int x[16], y[16];
	fx_tokens(x, N, 32, 3);
	fx_tokens(y, N, 32, 4);
	struct nn_fake_quant fq = setting(NN_FQ_ACT_STATIC, 0);
	struct nn_gpt whole, ch[2];
	OK(nn_gpt_init(&whole, &TINY));
	fx_rough_weights(&whole, 51, 0.1f);
	OK(nn_gpt_set_fake_quant(&whole, &fq));
	OK(nn_gpt_forward(&whole, x, y, B, T));
	nn_gpt_zero_grad(&whole);
	OK(nn_gpt_backward(&whole, 1.0f));
	const int rg[2][2] = { { 0, 1 }, { 1, 3 } };
	for (int c = 0; c < 2; c++) {
		struct nn_shard s = { .tp_size = 1, .layer_begin = rg[c][0], .layer_end = rg[c][1], .has_embed = c == 0,
				      .has_head = c == 1 };
		OK(nn_gpt_init_shard(&ch[c], &TINY, &s));
		for (int id = 0; id < NN_NPARAMS; id++)
			OK(nn_shard_from_full(&ch[c], id, whole.param[id], ch[c].param[id]));
		OK(nn_gpt_set_fake_quant(&ch[c], &fq));
		nn_gpt_zero_grad(&ch[c]);
	}
	OK(nn_gpt_stage_forward(&ch[0], 0, x, NULL, NULL, B, T));
	OK(nn_gpt_stage_forward(&ch[1], 0, NULL, nn_gpt_stage_output(&ch[0], 0), y, B, T));
	cr_assert_eq(memcmp(&ch[1].loss, &whole.loss, sizeof whole.loss), 0, "%.9g vs %.9g", ch[1].loss, whole.loss);
	float *d = malloc((size_t)N * C * sizeof(float));
	OK(nn_gpt_stage_backward(&ch[1], 0, NULL, 1.0f, d));
	OK(nn_gpt_stage_backward(&ch[0], 0, d, 1.0f, NULL));
	size_t full[NN_NPARAMS];
	nn_param_sizes(&TINY, full);
	for (int id = 0; id < NN_NPARAMS; id++) {
		if (id == NN_WTE)
			continue;   /* split between the two chunks' copies (test_nn_stage checks the sum) */
		float *g = calloc(full[id], sizeof(float));
		for (int c = 0; c < 2; c++)
			OK(nn_shard_to_full(&ch[c], id, ch[c].grad[id], g));
		cr_assert_eq(memcmp(g, whole.grad[id], full[id] * sizeof(float)), 0, "tensor %d", id);
		free(g);
	}
	free(d);
	for (int c = 0; c < 2; c++)
		nn_gpt_release(&ch[c]);
	nn_gpt_release(&whole);
}

Test(nn_fakequant, setter_errors)
{
	struct nn_fake_quant fq = setting(NN_FQ_ACT_STATIC, 0);
	struct nn_gpt t;
	struct nn_shard s = { .tp_rank = 0, .tp_size = 2, .layer_begin = 0, .layer_end = 3, .has_embed = 1, .has_head = 1 };
	OK(nn_gpt_init_shard(&t, &TINY, &s));
	cr_assert_eq(nn_gpt_set_fake_quant(&t, &fq), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "tensor parallelism"), "%s", ascent_errmsg());
	cr_assert_null(t.fq);
	nn_gpt_release(&t);

	struct nn_gpt m;
	OK(nn_gpt_init(&m, &TINY));
	struct nn_fake_quant bad = fq;
	bad.n_layer = 2;
	cr_assert_eq(nn_gpt_set_fake_quant(&m, &bad), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "2 layers"), "%s", ascent_errmsg());
	OK(nn_gpt_set_fake_quant(&m, &fq));
	LIN[5].in_scale = 0.0f;
	cr_assert_eq(nn_gpt_set_fake_quant(&m, &fq), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "static input scale"), "%s", ascent_errmsg());
	cr_assert_not_null(m.fq, "an error keeps the previous setting");
	cr_assert_float_eq(m.fq->lin[5].in_scale, 0.004f, 0);
	LIN[5].on = 0;   /* a layer that is off needs no scale */
	OK(nn_gpt_set_fake_quant(&m, &fq));
	OK(nn_gpt_set_fake_quant(&m, NULL));
	cr_assert_null(m.fq);
	nn_gpt_release(&m);
}
