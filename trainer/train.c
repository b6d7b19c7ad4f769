/* trainer/train.c — one training step, split in two (gradients over the accumulated micro-batches,
 * then clipping and AdamW), and in-order evaluation. The loop around it is run.c. */
#include "trainer/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int trainer_init(struct trainer *t, const struct trainer_config *cfg)
{
	memset(t, 0, sizeof *t);
	t->cfg = *cfg;
	trainer_config_model(cfg, &t->mc);
	int rc = trainer_data_open(&t->data, cfg);
	if (rc)
		return rc;
	rc = nn_gpt_init(&t->model, &t->mc);
	if (rc) {
		trainer_data_release(&t->data);
		return rc;
	}
	nn_gpt_init_weights(&t->model, (uint64_t)cfg->seed);
	size_t np = t->model.n_params;
	size_t bt = (size_t)cfg->batch * (size_t)cfg->seq;
	t->opt_mem = calloc(2 * np, sizeof(float));
	t->inputs = malloc(bt * sizeof(int));
	t->targets = malloc(bt * sizeof(int));
	t->offsets = malloc((size_t)cfg->batch * sizeof(size_t));
	if (!t->opt_mem || !t->inputs || !t->targets || !t->offsets) {
		trainer_release(t);
		return ascent_error(ASCENT_ENOMEM, "out of memory for the optimizer state (%zu parameters)", np);
	}
	t->adam_m = t->opt_mem;
	t->adam_v = t->opt_mem + np;
	t->sampler = (struct trainer_sampler){ .seed = (uint64_t)cfg->seed, .ntokens = t->data.ntrain,
					       .batch = cfg->batch, .seq = cfg->seq };
	return 0;
}

void trainer_release(struct trainer *t)
{
	if (!t)
		return;
	nn_gpt_release(&t->model);
	trainer_data_release(&t->data);
	free(t->opt_mem);
	free(t->inputs);
	free(t->targets);
	free(t->offsets);
	memset(t, 0, sizeof *t);
}

int trainer_compute_grads(struct trainer *t, double *loss)
{
	const struct trainer_config *c = &t->cfg;
	nn_gpt_zero_grad(&t->model);
	double sum = 0;
	float scale = 1.0f / (float)c->grad_accum;
	for (int k = 0; k < c->grad_accum; k++) {
		trainer_sampler_batch(&t->sampler, t->step, k, 0, 1, t->offsets);
		trainer_fill_batch(t->data.train, t->offsets, c->batch, c->seq, t->inputs, t->targets);
		int rc = nn_gpt_forward(&t->model, t->inputs, t->targets, c->batch, c->seq);
		if (!rc)
			rc = nn_gpt_backward(&t->model, scale);
		if (rc)
			return ascent_error_ctx(rc, "step %lld, micro-batch %d", (long long)t->step + 1, k);
		sum += t->model.loss;
	}
	*loss = sum / c->grad_accum;
	return 0;
}

int trainer_apply_grads(struct trainer *t, double *grad_norm, double *lr)
{
	const struct trainer_config *c = &t->cfg;
	struct nn_gpt *m = &t->model;
	double norm = sqrt(nn_sumsq(m->grads_mem, m->n_params));
	*grad_norm = norm;
	if (!isfinite(norm))
		return ascent_error(ASCENT_EFAIL,
				    "the gradient norm is not finite at step %lld (diverged: lower --lr or raise --warmup)",
				    (long long)t->step + 1);
	if (c->clip > 0 && norm > c->clip)
		nn_scale(m->grads_mem, m->n_params, (float)(c->clip / norm));
	double l = trainer_lr(c, t->step);
	*lr = l;
	struct nn_adamw o = { .lr = (float)l, .beta1 = (float)c->beta1, .beta2 = (float)c->beta2, .eps = (float)c->eps,
			      .weight_decay = (float)c->weight_decay };
	int step1 = (int)(t->step + 1);
	size_t off = 0;
	for (int id = 0; id < NN_NPARAMS; id++) {
		size_t n = m->param_sizes[id];
		nn_adamw_step(&o, step1, m->param[id], m->grad[id], t->adam_m + off, t->adam_v + off, n,
			      nn_param_decays((enum nn_param_id)id));
		off += n;
	}
	t->step++;
	return 0;
}

int trainer_eval_tokens(struct nn_gpt *m, const uint16_t *tok, size_t n, int B, int T, int max_batches, double *loss,
			int64_t *tokens)
{
	size_t per = (size_t)B * (size_t)T;
	size_t avail = n >= 1 ? (n - 1) / per : 0;
	if (avail == 0)
		return ascent_error(ASCENT_EINPUT,
				    "%zu tokens are fewer than one evaluation batch needs (batch x seq + 1 = %zu); use a smaller "
				    "batch or seq",
				    n, per + 1);
	size_t nb = max_batches > 0 && (size_t)max_batches < avail ? (size_t)max_batches : avail;
	int *in = malloc(per * sizeof *in), *tg = malloc(per * sizeof *tg);
	if (!in || !tg) {
		free(in);
		free(tg);
		return ascent_error(ASCENT_ENOMEM, "out of memory for an evaluation batch");
	}
	double sum = 0;
	int rc = 0;
	for (size_t b = 0; b < nb && !rc; b++) {
		const uint16_t *p = tok + b * per;
		for (size_t i = 0; i < per; i++) {
			in[i] = p[i];
			tg[i] = p[i + 1];
		}
		rc = nn_gpt_forward(m, in, tg, B, T);
		sum += m->loss;
	}
	free(in);
	free(tg);
	if (rc)
		return rc;
	*loss = sum / (double)nb;
	if (tokens)
		*tokens = (int64_t)(nb * per);
	return 0;
}

int trainer_val_loss(struct trainer *t, int batches, double *loss)
{
	return trainer_eval_tokens(&t->model, t->data.val, t->data.nval, t->cfg.batch, t->cfg.seq, batches, loss, NULL);
}
