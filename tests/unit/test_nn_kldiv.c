/* tests/unit/test_nn_kldiv.c — soft targets (distillation) in nn: the KL kernel against its plain
 * reference and against a hand-derived double-precision value and central differences; one-hot
 * soft targets equal the cross-entropy path (kernel, and the whole model's loss and every
 * gradient); the model's KL gradient against finite differences of its loss; slots keep their own
 * soft targets (pipeline order, repeated backward); the API's refusals. */
#include "nn/nn.h"
#include "tests/unit/nn_fixture.h"

#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static const struct nn_config TINY = { .vocab_size = 40, .max_seq = 8, .n_layer = 2, .n_head = 4, .n_embd = 16 };

TestSuite(nn_kldiv);

/* Random logits (N,V) of scale `scale` and random distributions (N,V) (softmax of other logits). */
static void random_case(float *z, float *p, int N, int V, float scale, uint64_t seed)
{
	uint64_t st = rng_seed(seed, 5);
	rng_normal(&st, z, (size_t)N * V, 0.0f, scale);
	for (int i = 0; i < N; i++) {
		double s = 0, w[512];
		for (int v = 0; v < V; v++)
			s += (w[v] = exp(2.0 * (rng_f32(&st) - 0.5)));
		for (int v = 0; v < V; v++)
			p[(size_t)i * V + v] = (float)(w[v] / s);
	}
}

/* KL(p ‖ softmax(z)) of one row in double, straight from the definition. */
static double kl_row(const float *z, const double *zd, const float *p, int V)
{
	double mx = -INFINITY, s = 0, kl = 0;
	for (int v = 0; v < V; v++) {
		double x = zd ? zd[v] : z[v];
		mx = x > mx ? x : mx;
	}
	for (int v = 0; v < V; v++)
		s += exp((zd ? zd[v] : z[v]) - mx);
	for (int v = 0; v < V; v++)
		if (p[v] > 0)
			kl += p[v] * (log(p[v]) - ((zd ? zd[v] : z[v]) - mx - log(s)));
	return kl;
}

Test(nn_kldiv, kernel_equals_reference_and_definition)
{
	const int N = 9;
	for (int V = 37; V <= 64; V += 27) {
		float *z = malloc(sizeof(float) * N * V), *p = malloc(sizeof(float) * N * V);
		float l[9], lse[9], lr[9], lser[9];
		float *d = malloc(sizeof(float) * N * V), *dr = malloc(sizeof(float) * N * V);
		random_case(z, p, N, V, 3.0f, (uint64_t)V);
		nn_kldiv_forward(l, lse, z, p, N, V);
		nn_kldiv_forward_ref(lr, lser, z, p, N, V);
		for (int i = 0; i < N; i++) {
			double want = kl_row(z + (size_t)i * V, NULL, p + (size_t)i * V, V);
			cr_assert(want > 0.01, "row %d: a KL of %g is too small to test", i, want);
			cr_assert(fabs(l[i] - want) <= 1e-5 * want + 1e-7, "V %d row %d: kl %.9g, want %.9g", V, i, l[i], want);
			cr_assert(fabs(lr[i] - want) <= 1e-6 * want + 1e-8, "V %d row %d: ref kl %.9g, want %.9g", V, i, lr[i], want);
			cr_assert(fabs(lse[i] - lser[i]) <= 1e-5f * fabsf(lser[i]) + 1e-6f, "lse %g vs %g", lse[i], lser[i]);
		}
		nn_kldiv_backward(d, z, lse, p, 0.25f, N, V);
		nn_kldiv_backward_ref(dr, z, lser, p, 0.25f, N, V);
		for (int i = 0; i < N * V; i++)
			cr_assert(fabsf(d[i] - dr[i]) <= 1e-6f, "V %d dlogit %d: %g vs ref %g", V, i, d[i], dr[i]);
		/* central differences of the double KL: d KL / d z = softmax(z) - p */
		double zd[64];
		for (int i = 0; i < N; i++) {
			for (int v = 0; v < V; v++)
				zd[v] = z[(size_t)i * V + v];
			for (int v = 0; v < V; v++) {
				const double h = 1e-4, z0 = zd[v];
				zd[v] = z0 + h;
				double up = kl_row(NULL, zd, p + (size_t)i * V, V);
				zd[v] = z0 - h;
				double dn = kl_row(NULL, zd, p + (size_t)i * V, V);
				zd[v] = z0;
				double fd = 0.25 * (up - dn) / (2 * h);
				cr_assert(fabs(d[(size_t)i * V + v] - fd) <= 2e-6, "V %d row %d class %d: %g, finite difference %g", V,
					  i, v, d[(size_t)i * V + v], fd);
			}
		}
		free(z);
		free(p);
		free(d);
		free(dr);
	}
}

Test(nn_kldiv, one_hot_kernel_equals_crossentropy)
{
	const int N = 6, V = 50;
	float z[300], p[300], l[6], lse[6], lc[6], lsec[6], d[300], dc[300];
	int y[6];
	random_case(z, p, N, V, 2.0f, 7);
	memset(p, 0, sizeof p);
	for (int i = 0; i < N; i++) {
		y[i] = (i * 17 + 3) % V;
		p[i * V + y[i]] = 1.0f;
	}
	for (int ref = 0; ref < 2; ref++) {
		(ref ? nn_kldiv_forward_ref : nn_kldiv_forward)(l, lse, z, p, N, V);
		(ref ? nn_crossentropy_forward_ref : nn_crossentropy_forward)(lc, lsec, z, y, N, V);
		(ref ? nn_kldiv_backward_ref : nn_kldiv_backward)(d, z, lse, p, 0.5f, N, V);
		(ref ? nn_crossentropy_backward_ref : nn_crossentropy_backward)(dc, z, lsec, y, 0.5f, N, V);
		for (int i = 0; i < N; i++)
			cr_assert(fabsf(l[i] - lc[i]) <= 1e-6f * lc[i], "ref %d row %d: kl %g, ce %g", ref, i, l[i], lc[i]);
		for (int i = 0; i < N * V; i++)
			cr_assert(fabsf(d[i] - dc[i]) <= 1e-7f, "ref %d dlogit %d: %g vs %g", ref, i, d[i], dc[i]);
	}
}

/* A model with every parameter nonzero, O(0.1-1). */
static void model(struct nn_gpt *m, uint64_t seed)
{
	OK(nn_gpt_init(m, &TINY));
	fx_rough_weights(m, seed, 0.1f);
}

static void tokens(int *x, int n, uint64_t seed)
{
	fx_tokens(x, n, TINY.vocab_size, seed);
}

Test(nn_kldiv, model_one_hot_equals_hard_targets)
{
	const int B = 2, T = 8, N = B * T, V = TINY.vocab_size;
	int x[16], y[16];
	tokens(x, N, 1);
	tokens(y, N, 2);
	float *p = calloc((size_t)N * V, sizeof(float));
	for (int i = 0; i < N; i++)
		p[(size_t)i * V + y[i]] = 1.0f;
	struct nn_gpt a, b;
	model(&a, 11);
	model(&b, 11);
	OK(nn_gpt_forward(&a, x, y, B, T));
	OK(nn_gpt_backward(&a, 0.5f));
	OK(nn_gpt_stage_forward_soft(&b, 0, x, NULL, p, B, T));
	OK(nn_gpt_backward(&b, 0.5f));
	cr_assert(fabsf(a.loss - b.loss) <= 1e-6f * a.loss, "soft one-hot loss %.9g, hard %.9g", b.loss, a.loss);
	cr_assert(fabsf(nn_gpt_slot_loss(&b, 0) - b.loss) == 0.0f);
	for (size_t i = 0; i < a.n_params; i++)
		cr_assert(fabsf(a.grads_mem[i] - b.grads_mem[i]) <= 1e-6f + 1e-5f * fabsf(a.grads_mem[i]),
			  "grad %zu: soft %g, hard %g", i, b.grads_mem[i], a.grads_mem[i]);
	free(p);
	nn_gpt_release(&a);
	nn_gpt_release(&b);
}

Test(nn_kldiv, model_gradient_equals_finite_differences)
{
	const int B = 2, T = 8, N = B * T, V = TINY.vocab_size;
	int x[16];
	tokens(x, N, 4);
	float *z = malloc(sizeof(float) * N * V), *p = malloc(sizeof(float) * N * V);
	random_case(z, p, N, V, 1.0f, 9);
	struct nn_gpt m;
	model(&m, 21);
	nn_set_reference(1);   /* double-accumulating kernels: finite differences in fp32 are less noisy */
	OK(nn_gpt_stage_forward_soft(&m, 0, x, NULL, p, B, T));
	float l0 = m.loss;
	cr_assert(l0 > 0.05f, "KL %g", l0);
	OK(nn_gpt_backward(&m, 1.0f));
	/* the largest gradients of a few tensors: wte (head and embedding), a qkv weight, lnf */
	const int ids[] = { NN_WTE, NN_QKVW, NN_FCPROJW, NN_LNFW };
	int checked = 0;
	for (size_t k = 0; k < sizeof ids / sizeof *ids; k++) {
		float *w = m.param[ids[k]], *g = m.grad[ids[k]];
		size_t n = m.param_sizes[ids[k]], at = 0;
		for (size_t i = 1; i < n; i++)
			if (fabsf(g[i]) > fabsf(g[at]))
				at = i;
		const float h = 1e-2f, w0 = w[at];
		w[at] = w0 + h;
		OK(nn_gpt_stage_forward_soft(&m, 1, x, NULL, p, B, T));
		double up = m.loss;
		w[at] = w0 - h;
		OK(nn_gpt_stage_forward_soft(&m, 1, x, NULL, p, B, T));
		double dn = m.loss;
		w[at] = w0;
		double fd = (up - dn) / (2.0 * h);
		cr_assert(fabs(g[at] - fd) <= 0.02 * fabs(fd) + 1e-4, "param %d[%zu]: gradient %g, finite difference %g",
			  ids[k], at, g[at], fd);
		checked += fabs(fd) > 1e-3;
	}
	nn_set_reference(0);
	cr_assert(checked >= 3, "only %d of the checked gradients are sizeable", checked);
	free(z);
	free(p);
	nn_gpt_release(&m);
}

Test(nn_kldiv, slots_keep_their_soft_targets)
{
	const int B = 1, T = 8, N = B * T, V = TINY.vocab_size;
	int x0[8], x1[8];
	tokens(x0, N, 5);
	tokens(x1, N, 6);
	float *z = malloc(sizeof(float) * N * V), *p0 = malloc(sizeof(float) * N * V), *p1 = malloc(sizeof(float) * N * V);
	random_case(z, p0, N, V, 1.0f, 31);
	random_case(z, p1, N, V, 1.0f, 32);
	struct nn_gpt a, b;
	model(&a, 41);
	model(&b, 41);
	/* a: one micro-batch at a time; b: both forwards first (a pipeline's order), backward 1 then 0 */
	OK(nn_gpt_stage_forward_soft(&a, 0, x0, NULL, p0, B, T));
	float la0 = a.loss;
	OK(nn_gpt_stage_backward(&a, 0, NULL, 1.0f, NULL));
	OK(nn_gpt_stage_forward_soft(&a, 0, x1, NULL, p1, B, T));
	float la1 = a.loss;
	OK(nn_gpt_stage_backward(&a, 0, NULL, 1.0f, NULL));
	OK(nn_gpt_stage_forward_soft(&b, 0, x0, NULL, p0, B, T));
	OK(nn_gpt_stage_forward_soft(&b, 1, x1, NULL, p1, B, T));
	memset(p0, 0, sizeof(float) * N * V);   /* the slots hold copies */
	memset(p1, 0, sizeof(float) * N * V);
	cr_assert_eq(nn_gpt_slot_loss(&b, 0), la0);
	cr_assert_eq(nn_gpt_slot_loss(&b, 1), la1);
	OK(nn_gpt_stage_backward(&b, 1, NULL, 1.0f, NULL));
	OK(nn_gpt_stage_backward(&b, 0, NULL, 1.0f, NULL));
	for (size_t i = 0; i < a.n_params; i++)
		cr_assert(fabsf(a.grads_mem[i] - b.grads_mem[i]) <= 1e-6f + 1e-5f * fabsf(a.grads_mem[i]), "grad %zu: %g vs %g",
			  i, b.grads_mem[i], a.grads_mem[i]);
	/* a repeated backward of slot 0 adds the same gradient again */
	float *g1 = malloc(b.n_params * sizeof(float));
	memcpy(g1, b.grads_mem, b.n_params * sizeof(float));
	nn_gpt_zero_grad(&b);
	OK(nn_gpt_stage_backward(&b, 0, NULL, 1.0f, NULL));
	OK(nn_gpt_stage_backward(&b, 1, NULL, 1.0f, NULL));
	for (size_t i = 0; i < b.n_params; i++)
		cr_assert(fabsf(g1[i] - b.grads_mem[i]) <= 1e-6f + 1e-5f * fabsf(g1[i]), "repeat grad %zu: %g vs %g", i,
			  b.grads_mem[i], g1[i]);
	/* a hard-target forward on slot 0 replaces its soft targets */
	OK(nn_gpt_forward(&b, x0, x1, B, T));
	struct nn_gpt c;
	model(&c, 41);
	OK(nn_gpt_forward(&c, x0, x1, B, T));
	cr_assert_eq(b.loss, c.loss, "hard loss after soft: %g vs %g", b.loss, c.loss);
	free(g1);
	free(z);
	free(p0);
	free(p1);
	nn_gpt_release(&a);
	nn_gpt_release(&b);
	nn_gpt_release(&c);
}

Test(nn_kldiv, refusals)
{
	const int B = 1, T = 4, N = B * T, V = TINY.vocab_size;
	int x[4];
	tokens(x, N, 7);
	float *z = malloc(sizeof(float) * N * V), *p = malloc(sizeof(float) * N * V);
	random_case(z, p, N, V, 1.0f, 8);
	struct nn_gpt m;
	model(&m, 51);
	cr_assert_eq(nn_gpt_stage_forward_soft(&m, 0, x, NULL, NULL, B, T), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "needs soft targets"), "%s", ascent_errmsg());
	float keep = p[V + 3];
	p[V + 3] = -0.01f;
	cr_assert_eq(nn_gpt_stage_forward_soft(&m, 0, x, NULL, p, B, T), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "position 1, class 3 is not a probability"), "%s", ascent_errmsg());
	p[V + 3] = NAN;
	cr_assert_eq(nn_gpt_stage_forward_soft(&m, 0, x, NULL, p, B, T), ASCENT_EINPUT);
	p[V + 3] = keep;
	for (int v = 0; v < V; v++)
		p[2 * V + v] *= 0.5f;
	cr_assert_eq(nn_gpt_stage_forward_soft(&m, 0, x, NULL, p, B, T), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "position 2 sum to 0.5"), "%s", ascent_errmsg());
	/* a refused forward leaves no backward behind */
	cr_assert_eq(nn_gpt_stage_backward(&m, 0, NULL, 1.0f, NULL), ASCENT_EINTERNAL);
	free(z);
	free(p);
	nn_gpt_release(&m);
}
