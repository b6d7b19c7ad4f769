/* tests/unit/test_nn_model.c — the GPT-2 model: configs and parameter counts, forward loss of an
 * untrained model (≈ ln V), a golden loss from the reference path, fast vs reference gradients,
 * the whole model's gradient against finite differences, gradient accumulation, input errors,
 * activation regrowth, and a few AdamW steps that must lower the loss. Tiny configs only. */
#include "nn/nn.h"
#include "tests/unit/nn_fixture.h"

#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct nn_config TINY = { .vocab_size = 32, .max_seq = 8, .n_layer = 2, .n_head = 2, .n_embd = 16 };


/* Weights with every parameter nonzero and O(0.1-1), so every path carries gradient. */
static void rough_weights(struct nn_gpt *m, uint64_t seed)
{
	fx_rough_weights(m, seed, 0.1f);
	for (size_t i = 0; i < m->param_sizes[NN_WTE]; i++)
		m->param[NN_WTE][i] *= 5.0f;
}

TestSuite(nn_model, .fini = NULL);

Test(nn_model, presets_counts_flops)
{
	struct nn_config c;
	cr_assert_eq(nn_config_preset("tiny", &c), 0);
	cr_assert_eq(c.n_layer, 4);
	size_t s[NN_NPARAMS];
	nn_param_sizes(&c, s);
	cr_assert_eq(nn_param_count(&c) - s[NN_WPE], 3225088); /* docs/background.md, "Model size" */
	cr_assert(fabs(nn_flops_per_token(&c, 256) - 22496256.0) < 1);
	cr_assert_eq(nn_config_preset("small", &c), 0);
	nn_param_sizes(&c, s);
	cr_assert_eq(nn_param_count(&c) - s[NN_WPE], 19046400);
	cr_assert(fabs(nn_flops_per_token(&c, 256) / 1e6 - 123.7) < 0.05);
	cr_assert_eq(nn_config_preset("gpt2-124m", &c), 0);
	cr_assert_eq(c.max_seq, 1024);
	cr_assert_eq(nn_config_preset("huge", &c), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "huge") && strstr(ascent_errmsg(), "tiny"));
	struct nn_config bad = TINY;
	bad.n_head = 3;
	cr_assert_eq(nn_config_validate(&bad), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "n_head"));
	cr_assert(nn_param_decays(NN_QKVW) && nn_param_decays(NN_WTE) && !nn_param_decays(NN_QKVB) &&
		  !nn_param_decays(NN_LNFW));
}

Test(nn_model, untrained_loss_is_ln_v)
{
	struct nn_gpt m;
	struct nn_config c = { .vocab_size = 256, .max_seq = 64, .n_layer = 2, .n_head = 4, .n_embd = 64 };
	cr_assert_eq(nn_gpt_init(&m, &c), 0);
	nn_gpt_init_weights(&m, 1);
	int x[4 * 64], y[4 * 64];
	fx_tokens(x, 4 * 64, 256, 1);
	fx_tokens(y, 4 * 64, 256, 2);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 4, 64), 0, "%s", ascent_errmsg());
	cr_assert(fabs(m.loss - logf(256)) < 0.02, "loss %f vs ln 256 = %f", m.loss, logf(256));
	nn_gpt_release(&m);
}

/* Golden loss: computed once with the reference path (nn_set_reference(1)) for TINY, seed 1234,
 * rough_weights, B=2 T=8; pinned to 1e-4 absolute. The fast path must match it to 1e-4 too. */
#define GOLDEN_LOSS 6.1285377f

Test(nn_model, golden_loss_reference_and_fast)
{
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &TINY), 0);
	rough_weights(&m, 1234);
	int x[16], y[16];
	fx_tokens(x, 16, 32, 5);
	fx_tokens(y, 16, 32, 6);
	nn_set_reference(1);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), 0);
	float ref = m.loss;
	nn_set_reference(0);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), 0);
	cr_log_info("reference loss %.7f, fast loss %.7f", ref, m.loss);
	cr_assert(fabs(ref - GOLDEN_LOSS) < 1e-4, "reference loss %.7f, golden %.7f", ref, GOLDEN_LOSS);
	cr_assert(fabs(m.loss - ref) < 1e-4, "fast loss %.7f vs reference %.7f", m.loss, ref);
	nn_gpt_release(&m);
}

Test(nn_model, fast_gradients_match_reference)
{
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &TINY), 0);
	rough_weights(&m, 77);
	int x[24], y[24];
	fx_tokens(x, 24, 32, 8);
	fx_tokens(y, 24, 32, 9);
	nn_set_reference(1);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 3, 8), 0);
	nn_gpt_zero_grad(&m);
	cr_assert_eq(nn_gpt_backward(&m, 1.0f), 0);
	float *gref = malloc(m.n_params * sizeof(float));
	memcpy(gref, m.grads_mem, m.n_params * sizeof(float));
	nn_set_reference(0);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 3, 8), 0);
	nn_gpt_zero_grad(&m);
	cr_assert_eq(nn_gpt_backward(&m, 1.0f), 0);
	/* per tensor: max |fast - ref| <= 1e-4 · max|ref| + 1e-6 */
	for (int t = 0; t < NN_NPARAMS; t++) {
		size_t off = (size_t)(m.grad[t] - m.grads_mem);
		double mx = 0, err = 0;
		for (size_t i = 0; i < m.param_sizes[t]; i++) {
			mx = fmax(mx, fabs(gref[off + i]));
			err = fmax(err, fabs((double)m.grad[t][i] - gref[off + i]));
		}
		cr_assert(err <= 1e-4 * mx + 1e-6, "tensor %d: max error %g, max |grad| %g", t, err, mx);
		if (t != NN_WPE)
			cr_assert(mx > 0, "tensor %d has an all-zero gradient", t);
	}
	free(gref);
	nn_gpt_release(&m);
}

/* Whole-model gradient against central differences, in reference mode (double accumulators),
 * on TINY with B=2 T=8. fp32 parameters, eps 1e-3: |g - fd| <= 2e-4 + 2e-2·|fd| for ~8 entries
 * of every tensor. */
Test(nn_model, gradient_matches_finite_differences)
{
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &TINY), 0);
	rough_weights(&m, 4242);
	int x[16], y[16];
	fx_tokens(x, 16, 32, 10);
	fx_tokens(y, 16, 32, 11);
	nn_set_reference(1);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), 0);
	nn_gpt_zero_grad(&m);
	cr_assert_eq(nn_gpt_backward(&m, 1.0f), 0);
	uint64_t st = rng_seed(5, 5);
	const float eps = 1e-3f;
	int checked = 0;
	for (int t = 0; t < NN_NPARAMS; t++) {
		for (int k = 0; k < 8; k++) {
			size_t i = rng_u32(&st) % m.param_sizes[t];
			if (t == NN_WPE)
				i %= (size_t)8 * TINY.n_embd; /* positions used by T=8 */
			float keep = m.param[t][i];
			m.param[t][i] = keep + eps;
			nn_gpt_forward(&m, x, y, 2, 8);
			double lp = m.loss;
			m.param[t][i] = keep - eps;
			nn_gpt_forward(&m, x, y, 2, 8);
			double lm = m.loss;
			m.param[t][i] = keep;
			double fd = (lp - lm) / (2.0 * eps), g = m.grad[t][i];
			cr_assert(fabs(g - fd) <= 2e-4 + 2e-2 * fabs(fd), "tensor %d [%zu]: grad %g vs fd %g", t, i, g, fd);
			checked++;
		}
	}
	cr_assert_eq(checked, 8 * NN_NPARAMS);
	nn_set_reference(0);
	nn_gpt_release(&m);
}

Test(nn_model, gradient_accumulation_and_scale)
{
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &TINY), 0);
	rough_weights(&m, 3);
	int x[16], y[16];
	fx_tokens(x, 16, 32, 12);
	fx_tokens(y, 16, 32, 13);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), 0);
	nn_gpt_zero_grad(&m);
	cr_assert_eq(nn_gpt_backward(&m, 1.0f), 0);
	float *g1 = malloc(m.n_params * sizeof(float));
	memcpy(g1, m.grads_mem, m.n_params * sizeof(float));
	nn_gpt_zero_grad(&m);
	cr_assert_eq(nn_gpt_backward(&m, 0.25f), 0);
	cr_assert_eq(nn_gpt_backward(&m, 0.75f), 0);
	for (size_t i = 0; i < m.n_params; i++)
		cr_assert(fabs(m.grads_mem[i] - g1[i]) <= 1e-6 + 1e-5 * fabs(g1[i]), "grad %zu: %g vs %g", i,
			  m.grads_mem[i], g1[i]);
	free(g1);
	nn_gpt_release(&m);
}

Test(nn_model, input_errors_and_regrowth)
{
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &TINY), 0);
	nn_gpt_init_weights(&m, 9);
	int x[16], y[16];
	fx_tokens(x, 16, 32, 14);
	fx_tokens(y, 16, 32, 15);
	cr_assert_eq(nn_gpt_backward(&m, 1.0f), ASCENT_EINTERNAL); /* no forward yet */
	int bad = x[3];
	x[3] = 32;
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "vocabulary"), "%s", ascent_errmsg());
	x[3] = bad;
	y[5] = -1;
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), ASCENT_EINPUT);
	y[5] = 0;
	cr_assert_eq(nn_gpt_forward(&m, x, y, 1, 16), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "max_seq"), "%s", ascent_errmsg());

	/* small shape first, then larger (regrowth), then back: same loss as a fresh model */
	cr_assert_eq(nn_gpt_forward(&m, x, y, 1, 4), 0);
	cr_assert_eq(nn_gpt_forward(&m, x, y, 2, 8), 0);
	float big = m.loss;
	cr_assert_eq(nn_gpt_forward(&m, x, y, 1, 8), 0);
	float one = m.loss;
	struct nn_gpt f;
	cr_assert_eq(nn_gpt_init(&f, &TINY), 0);
	nn_gpt_init_weights(&f, 9);
	cr_assert_eq(nn_gpt_forward(&f, x, y, 2, 8), 0);
	cr_assert_float_eq(f.loss, big, 1e-6);
	cr_assert_eq(nn_gpt_forward(&f, x, y, 1, 8), 0);
	cr_assert_float_eq(f.loss, one, 1e-6);

	/* logits only: loss -1, same logits; backward refused */
	float *lg = malloc(8 * 32 * sizeof(float));
	memcpy(lg, nn_gpt_logits(&f), 8 * 32 * sizeof(float));
	cr_assert_eq(nn_gpt_forward(&f, x, NULL, 1, 8), 0);
	cr_assert_float_eq(f.loss, -1.0f, 0);
	cr_assert_eq(memcmp(lg, nn_gpt_logits(&f), 8 * 32 * sizeof(float)), 0);
	cr_assert_eq(nn_gpt_backward(&f, 1.0f), ASCENT_EINTERNAL);
	free(lg);
	nn_gpt_release(&f);
	nn_gpt_release(&m);
	nn_gpt_release(NULL);
}

Test(nn_model, adamw_steps_lower_the_loss)
{
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &TINY), 0);
	nn_gpt_init_weights(&m, 21);
	float *mo = calloc(m.n_params, sizeof(float)), *vo = calloc(m.n_params, sizeof(float));
	int x[32], y[32];
	fx_tokens(x, 32, 32, 16);
	for (int i = 0; i < 32; i++)
		y[i] = (x[i] + 1) % 32; /* learnable: next id */
	struct nn_adamw o = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.0f };
	float first = 0;
	for (int step = 1; step <= 30; step++) {
		cr_assert_eq(nn_gpt_forward(&m, x, y, 4, 8), 0);
		if (step == 1)
			first = m.loss;
		nn_gpt_zero_grad(&m);
		cr_assert_eq(nn_gpt_backward(&m, 1.0f), 0);
		for (int t = 0; t < NN_NPARAMS; t++) {
			size_t off = (size_t)(m.param[t] - m.params_mem);
			nn_adamw_step(&o, step, m.param[t], m.grad[t], mo + off, vo + off, m.param_sizes[t],
				      nn_param_decays(t));
		}
	}
	cr_assert(first > 3.0f && m.loss < 0.5f * first, "loss %f -> %f", first, m.loss);
	free(mo), free(vo);
	nn_gpt_release(&m);
}
