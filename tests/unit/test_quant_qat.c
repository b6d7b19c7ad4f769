/* tests/unit/test_quant_qat.c — the fake quantization QAT trains with (nn's, nn_gpt_set_fake_quant)
 * computes exactly what quant's fake-quant model computes (QUANT_EXEC_FAKE) on the same weights and
 * scales: the loss and every logit bit for bit, for each scheme, per channel and per tensor, with a
 * layer kept fp32; and the INT8 codes of the exported weights dequantize to nn's Q(w). */
#include "quant/quant.h"
#include "tests/unit/nn_fixture.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static const struct nn_config CFG = { .vocab_size = 64, .max_seq = 16, .n_layer = 2, .n_head = 4, .n_embd = 32 };

TestSuite(quant_qat);

static void tiny(struct nn_gpt *m, uint64_t seed)
{
	OK(nn_gpt_init(m, &CFG));
	fx_rough_weights(m, seed, 0.05f);
	m->param[NN_LN1W][5] = 6.0f;   /* an outlier channel */
}

Test(quant_qat, nn_fake_quant_equals_quant_fake_model)
{
	const int B = 2, T = 16, N = B * T, V = CFG.vocab_size, L = CFG.n_layer;
	int x[32], y[32];
	uint64_t st = rng_seed(3, 1);
	for (int i = 0; i < N; i++) {
		x[i] = (int)(rng_u32(&st) % (uint32_t)V);
		y[i] = (int)(rng_u32(&st) % (uint32_t)V);
	}
	for (int scheme = 0; scheme < QUANT_NSCHEMES; scheme++)
		for (int pt = 0; pt < 2; pt++) {
			struct nn_gpt fp, m;
			tiny(&fp, 17);
			OK(nn_gpt_init(&m, &CFG));
			memcpy(m.params_mem, fp.params_mem, fp.n_params * sizeof(float));
			struct quant_model qm;
			OK(quant_model_init(&qm, &fp, (enum quant_scheme)scheme, pt));
			struct nn_fq_layer lin[2 * NN_FQ_PER_LAYER];
			for (int i = 0; i < qm.nlin; i++) {
				qm.lin[i].quantized = i != 2;   /* h.0.mlp.c_fc stays fp32 */
				qm.lin[i].in_scale = scheme == QUANT_W8A8_STATIC ? (i % 2 ? 0.003f : 0.02f) : 0.0f;
				lin[i] = (struct nn_fq_layer){ .on = qm.lin[i].quantized, .in_scale = qm.lin[i].in_scale };
			}
			OK(quant_model_quantize_weights(&qm));
			struct nn_fake_quant fq = { .n_layer = L, .per_tensor = pt, .lin = lin,
						    .act = scheme == QUANT_W8A8_STATIC    ? NN_FQ_ACT_STATIC
							   : scheme == QUANT_W8A8_DYNAMIC ? NN_FQ_ACT_DYNAMIC
											  : NN_FQ_ACT_NONE };
			OK(nn_gpt_set_fake_quant(&m, &fq));
			OK(quant_model_forward(&qm, QUANT_EXEC_FAKE, x, y, B, T, NULL));
			OK(nn_gpt_forward(&m, x, y, B, T));
			cr_assert_eq(memcmp(&qm.loss, &m.loss, sizeof m.loss), 0, "%s per_tensor %d: quant %.9g nn %.9g",
				     quant_scheme_name(scheme), pt, qm.loss, m.loss);
			const float *a = quant_model_logits(&qm), *b = nn_gpt_logits(&m);
			for (int i = 0; i < N * V; i++)
				cr_assert_eq(a[i], b[i], "%s per_tensor %d logit %d: %.9g vs %.9g", quant_scheme_name(scheme), pt,
					     i, a[i], b[i]);
			/* and it is fake quantization: the fp32 model differs */
			OK(quant_model_forward(&qm, QUANT_EXEC_FP32, x, y, B, T, NULL));
			cr_assert_neq(qm.loss, m.loss);
			/* the INT8 codes dequantize to nn's Q(w) */
			for (int i = 0; i < qm.nlin; i++) {
				const struct quant_layer *l = &qm.lin[i];
				if (!l->quantized)
					continue;
				size_t n = (size_t)l->in * l->out;
				float *w = malloc(n * sizeof(float)), *s = malloc((size_t)l->out * sizeof(float));
				nn_fq_weight(w, s, qm.fp.param[l->wid] + (size_t)l->layer * n, l->in, l->out, pt);
				cr_assert_eq(memcmp(w, l->wdeq, n * sizeof(float)), 0, "%s", l->name);
				cr_assert_eq(memcmp(s, l->wscale, (size_t)l->out * sizeof(float)), 0, "%s", l->name);
				free(w);
				free(s);
			}
			quant_model_release(&qm);
			nn_gpt_release(&m);
		}
}
