/* trainer/train.c — the trainer object for one rank of a dp × tp × pp grid (or one process): the
 * layout checks, this rank's model chunks and optimizer state, and one training step split in two
 * (gradients over the accumulated rounds of the pipeline, then norm, clipping and AdamW). The
 * pipeline execution is pipe_run.c, gradient buckets and ZeRO are dist.c, the loop is run.c. */
#include "trainer/internal.h"

#include "comm/comm.h"
#include "profiler/prof.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Layers of global chunk c of n chunks: [c·L/n, (c+1)·L/n). */
static void chunk_layers(int L, int n, int c, int *lo, int *hi)
{
	*lo = (int)((int64_t)c * L / n);
	*hi = (int)((int64_t)(c + 1) * L / n);
}

static int layout_check(struct trainer *t)
{
	const struct trainer_config *c = &t->cfg;
	int tp = c->tp, pp = c->pp;
	if (!c->dp && t->world % (tp * pp))
		return ascent_error(ASCENT_EUSAGE,
				    "the %d rank(s) of this launch are not a multiple of tp x pp = %d x %d = %d (mpirun -np "
				    "must be dp x tp x pp)",
				    t->world, tp, pp, tp * pp);
	int dp = c->dp ? c->dp : t->world / (tp * pp);
	if ((int64_t)dp * tp * pp != t->world)
		return ascent_error(ASCENT_EUSAGE,
				    "dp x tp x pp = %d x %d x %d = %lld does not match the %d rank(s) of this launch (mpirun -np "
				    "%d); pick --dp/--tp/--pp whose product is the number of ranks",
				    dp, tp, pp, (long long)dp * tp * pp, t->world, t->world);
	t->dp = dp;
	t->tp = tp;
	t->pp = pp;
	t->vstages = c->virtual_stages;
	t->micro = c->microbatches ? c->microbatches : pp;
	int rc = trainer_pp_parse(c->schedule, &t->sched);
	if (rc)
		return rc;
	if (pp == 1 && t->vstages == 1 && t->sched == TRAINER_PP_INTERLEAVED)
		return ascent_error(ASCENT_EUSAGE, "--schedule interleaved needs --pp > 1 and --virtual-stages >= 2");
	if ((rc = trainer_pp_check(t->sched, pp, t->micro, t->vstages)))
		return rc;
	if (c->batch % (dp * t->micro))
		return ascent_error(ASCENT_EUSAGE,
				    "--batch %d (the global batch of one accumulation round) must be a multiple of dp x "
				    "microbatches = %d x %d = %d",
				    c->batch, dp, t->micro, dp * t->micro);
	if (c->zero && dp == 1)
		log_info("--zero %d with dp 1 shards nothing", c->zero);
	if ((int64_t)pp * t->vstages * t->micro * 2 >= 32768)
		return ascent_error(ASCENT_EUSAGE, "pp x virtual stages x microbatches = %d is too large (at most 16383)",
				    pp * t->vstages * t->micro);
	t->mb_batch = c->batch / (dp * t->micro);
	return 0;
}

int trainer_init_dist(struct trainer *t, const struct trainer_config *cfg, struct comm *comm)
{
	memset(t, 0, sizeof *t);
	t->cfg = *cfg;
	t->comm = comm;
	t->world = comm ? comm_size(comm, COMM_WORLD) : 1;
	t->rank = comm ? comm_rank(comm, COMM_WORLD) : 0;
	trainer_config_model(cfg, &t->mc);
	int rc = layout_check(t);
	if (rc)
		return rc;
	if (comm) {
		if ((rc = comm_set_grid(comm, t->dp, t->tp, t->pp)))
			return rc;
		t->dp_rank = comm_rank(comm, COMM_DP);
		t->tp_rank = comm_rank(comm, COMM_TP);
		t->pp_rank = comm_rank(comm, COMM_PP);
	}
	if ((rc = nn_precision_parse(cfg->precision, &t->precision)))
		return rc;
	t->scaler = (struct trainer_scaler){ .scale = t->precision == NN_FP16 ? cfg->loss_scale : 1.0,
					     .window = cfg->loss_scale_window };
	rc = trainer_data_open(&t->data, cfg);
	if (rc)
		return rc;

	int n = t->pp * t->vstages;
	for (int v = 0; v < t->vstages && !rc; v++) {
		int cg = v * t->pp + t->pp_rank;
		struct nn_shard sh = { .tp_rank = t->tp_rank, .tp_size = t->tp, .tp = t->tp > 1 ? comm : NULL,
				       .has_embed = cg == 0, .has_head = cg == n - 1 };
		chunk_layers(cfg->n_layer, n, cg, &sh.layer_begin, &sh.layer_end);
		struct nn_gpt *m = v == 0 ? &t->model : calloc(1, sizeof *m);
		if (!m) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory for model chunk %d", v);
			break;
		}
		t->chunk[v] = m;
		rc = trainer_dist_windowed(t) ? nn_gpt_init_shard_window(m, &t->mc, &sh, trainer_dist_grad_dest, t)
					      : nn_gpt_init_shard(m, &t->mc, &sh);
		if (rc) {
			if (v)
				free(m);
			t->chunk[v] = NULL;
			break;
		}
		nn_gpt_init_weights(m, (uint64_t)cfg->seed);
		nn_gpt_set_precision(m, t->precision);
		nn_gpt_set_recompute(m, cfg->recompute);
	}
	if (!rc)
		rc = trainer_pp_setup(t);
	if (!rc)
		rc = trainer_dist_setup(t);
	size_t bt = (size_t)t->mb_batch * (size_t)cfg->seq;
	if (!rc) {
		t->inputs = malloc(bt * sizeof(int));
		t->targets = malloc(bt * sizeof(int));
		t->offsets = malloc((size_t)t->mb_batch * sizeof(size_t));
		if (!t->inputs || !t->targets || !t->offsets)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory for a batch");
	}
	if (rc) {
		trainer_release(t);
		return rc;
	}
	t->sampler = (struct trainer_sampler){ .seed = (uint64_t)cfg->seed, .ntokens = t->data.ntrain,
					       .batch = cfg->batch / t->dp, .seq = cfg->seq };
	return 0;
}

int trainer_init(struct trainer *t, const struct trainer_config *cfg)
{
	return trainer_init_dist(t, cfg, NULL);
}

int trainer_set_fake_quant(struct trainer *t, const struct nn_fake_quant *fq)
{
	for (int v = 0; v < t->vstages; v++) {
		int rc = nn_gpt_set_fake_quant(t->chunk[v], fq);
		if (rc)
			return rc;
	}
	return 0;
}

int trainer_set_soft_targets(struct trainer *t, trainer_soft_targets_fn fn, void *arg)
{
	free(t->soft);
	t->soft = NULL;
	t->soft_fn = NULL;
	t->soft_arg = NULL;
	if (!fn)
		return 0;
	if (t->chunk[t->vstages - 1]->shard.has_head) {
		size_t n = (size_t)t->mb_batch * (size_t)t->cfg.seq * (size_t)t->mc.vocab_size;
		if (!(t->soft = malloc(n * sizeof(float))))
			return ascent_error(ASCENT_ENOMEM, "out of memory for the soft targets of a micro-batch");
	}
	t->soft_fn = fn;
	t->soft_arg = arg;
	return 0;
}

void trainer_release(struct trainer *t)
{
	if (!t)
		return;
	trainer_pp_release(t);
	trainer_dist_release(t);
	for (int v = 0; v < TRAINER_MAX_VSTAGES; v++) {
		if (!t->chunk[v])
			continue;
		nn_gpt_release(t->chunk[v]);
		if (v)
			free(t->chunk[v]);
	}
	trainer_data_release(&t->data);
	free(t->inputs);
	free(t->targets);
	free(t->offsets);
	free(t->soft);
	memset(t, 0, sizeof *t);
}

/* A double sum over the world (in one process: itself). */
int trainer_world_sum(struct trainer *t, double *v, int n)
{
	if (!t->comm || t->world == 1)
		return 0;
	return comm_allreduce(t->comm, COMM_WORLD, v, v, (size_t)n, COMM_F64, COMM_SUM);
}

int trainer_compute_grads(struct trainer *t, double *loss)
{
	for (int v = 0; v < t->vstages; v++)
		nn_gpt_zero_grad(t->chunk[v]);
	trainer_dist_begin_step(t);
	double sum = 0;
	int rc = 0;
	for (int k = 0; k < t->cfg.grad_accum && !rc; k++)
		rc = trainer_pp_round(t, k, &sum);
	if (!rc)
		rc = trainer_dist_finish_grads(t);
	if (rc)
		return ascent_error_ctx(rc, "step %lld", (long long)t->step + 1);
	/* the global mean: the head chunks of TP rank 0 hold every micro-batch's loss once per DP rank */
	int holder = t->chunk[t->vstages - 1]->shard.has_head && t->tp_rank == 0;
	double v = holder ? sum / ((double)t->cfg.grad_accum * t->micro * t->dp) : 0;
	if ((rc = trainer_world_sum(t, &v, 1)))
		return rc;
	*loss = v;
	return 0;
}

int trainer_apply_grads(struct trainer *t, double *grad_norm, double *lr)
{
	const struct trainer_config *c = &t->cfg;
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_PHASE, "optimizer", NULL);
	double sumsq = trainer_dist_sumsq(t);
	int rc = trainer_world_sum(t, &sumsq, 1);
	if (rc) {
		prof_range_end(&tok);
		return rc;
	}
	/* the reduced gradients are DP sums (trainer/dist.c), of the loss scaled by S: the mean
	 * gradient is 1/(S·dp) of them */
	double S = t->scaler.scale, unscale = 1.0 / (S * t->dp);
	double norm = sqrt(sumsq) * unscale;
	*grad_norm = norm;
	double l = trainer_lr(c, t->step);
	*lr = l;
	t->last_skipped = 0;
	if (t->precision == NN_FP16) {
		if (trainer_scaler_update(&t->scaler, isfinite(norm))) {
			t->last_skipped = 1;
			log_warn("step %lld: inf/NaN gradients at loss scale %g: step skipped, scale now %g",
				 (long long)t->step + 1, S, t->scaler.scale);
			prof_counter("skipped_steps", (double)t->scaler.skipped);
			t->step++;
			prof_range_end(&tok);
			return 0;
		}
	} else if (!isfinite(norm)) {
		prof_range_end(&tok);
		return ascent_error(ASCENT_EFAIL,
				    "the gradient norm is not finite at step %lld (diverged: lower --lr or raise --warmup)",
				    (long long)t->step + 1);
	}
	/* one factor: the DP mean, undo the loss scale, and clip */
	double f = unscale;
	if (c->clip > 0 && norm > c->clip)
		f *= c->clip / norm;
	struct nn_adamw o = { .lr = (float)l, .beta1 = (float)c->beta1, .beta2 = (float)c->beta2, .eps = (float)c->eps,
			      .weight_decay = (float)c->weight_decay };
	/* AdamW's bias correction counts the updates made: fp16 steps skipped on overflow are not */
	rc = trainer_dist_update(t, &o, (int)(t->step + 1 - t->scaler.skipped), f != 1.0 ? (float)f : 1.0f);
	prof_range_end(&tok);
	if (rc)
		return rc;
	t->step++;
	return 0;
}

static int nn_batch_loss(void *arg, const int *inputs, const int *targets, int B, int T, double *loss)
{
	struct nn_gpt *m = arg;
	int rc = nn_gpt_forward(m, inputs, targets, B, T);
	*loss = m->loss;
	return rc;
}

int trainer_eval_tokens(struct nn_gpt *m, const uint16_t *tok, size_t n, int B, int T, int max_batches, double *loss,
			int64_t *tokens)
{
	return trainer_eval_tokens_with(nn_batch_loss, m, tok, n, B, T, max_batches, loss, tokens);
}

int trainer_eval_tokens_with(trainer_batch_loss_fn batch_loss, void *arg, const uint16_t *tok, size_t n, int B,
			     int T, int max_batches, double *loss, int64_t *tokens)
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
		double l = 0;
		rc = batch_loss(arg, in, tg, B, T, &l);
		sum += l;   /* per-batch means, averaged over batches */
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
