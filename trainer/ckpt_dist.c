/* trainer/ckpt_dist.c — checkpoints of any layout in the canonical unsharded layout: on save every
 * rank writes its slices of the parameters and of the AdamW moments into zeroed full-model
 * buffers (nn_shard_to_full), a world sum assembles them and rank 0 writes the checkpoint; on load
 * every rank reads the whole checkpoint and keeps its slices (nn_shard_from_full), so a run saved
 * with --tp 2 --pp 2 resumes under --dp 4 or in one process. Fine-tuning (--init-from) loads only
 * the weights the same way. */
#include "trainer/internal.h"

#include "comm/comm.h"
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>

static int whole_layout(const struct trainer *t)
{
	return t->world == 1 && t->vstages == 1;
}

/* Offsets of each tensor in the full model's block and in chunk v's block. */
static void offsets(const size_t *sizes, size_t *off)
{
	size_t o = 0;
	for (int id = 0; id < NN_NPARAMS; id++) {
		off[id] = o;
		o += sizes[id];
	}
}

/* Chunk v's moments in its own block layout (n_params floats each), zero where this rank owns
 * nothing. */
static void local_moments(const struct trainer *t, int v, float *lm, float *lv)
{
	size_t np = t->chunk[v]->n_params;
	memset(lm, 0, np * sizeof(float));
	memset(lv, 0, np * sizeof(float));
	for (int i = 0; i < t->nbuckets; i++) {
		const struct trainer_bucket *b = &t->buckets[i];
		if (b->v != v)
			continue;
		size_t lo[2], n[2], opt[2];
		int k = trainer_bucket_owned(t, b, lo, n, opt);
		for (int j = 0; j < k; j++) {
			/* the ZeRO tail is held by every DP rank: count it once */
			if (t->cfg.zero && t->dp > 1 && b->tail && lo[j] == b->off + b->count - b->tail && t->dp_rank)
				continue;
			memcpy(lm + lo[j], t->adam_m + opt[j], n[j] * sizeof(float));
			memcpy(lv + lo[j], t->adam_v + opt[j], n[j] * sizeof(float));
		}
	}
}

/* A whole-model nn_gpt that only points at `params` (n_params floats in nn's block order): what
 * trainer_ckpt_save/trainer_ckpt_load read and write (cfg, param_sizes, param[]), without
 * allocating a second model (which would also be counted as parameter memory in the profile). */
static void whole_view(const struct trainer *t, float *params, struct nn_gpt *w)
{
	memset(w, 0, sizeof *w);
	w->cfg = t->mc;
	nn_shard_whole(&t->mc, &w->shard);
	w->n_layer_local = t->mc.n_layer;
	nn_param_sizes(&t->mc, w->param_sizes);
	w->n_params = nn_param_count(&t->mc);
	w->params_mem = params;
	size_t o = 0;
	for (int id = 0; id < NN_NPARAMS; id++) {
		w->param[id] = params + o;
		o += w->param_sizes[id];
	}
	w->loss = -1.0f;
}

static int agree(struct trainer *t, int rc, const char *what)
{
	if (!t->comm || t->world == 1)
		return rc;
	int v = rc;
	int r = comm_allreduce(t->comm, COMM_WORLD, &v, &v, 1, COMM_I32, COMM_MIN);
	if (r)
		return r;
	if (v && !rc)
		return ascent_error(v, "another rank failed while %s (see its log under logs/)", what);
	return rc;
}

int trainer_ckpt_save_dist(struct trainer *t, const char *run_dir, const struct trainer_state *st, char *dir_out,
			   size_t dn)
{
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_CHECKPOINT, "checkpoint_save", NULL);
	int rc;
	if (whole_layout(t)) {
		rc = trainer_ckpt_save(run_dir, &t->model, t->adam_m, t->adam_v, st, dir_out, dn);
		prof_range_end(&tok);
		return rc;
	}
	size_t sizes[NN_NPARAMS], foff[NN_NPARAMS], loff[NN_NPARAMS];
	nn_param_sizes(&t->mc, sizes);
	offsets(sizes, foff);
	size_t nf = nn_param_count(&t->mc), nl = 0;
	for (int v = 0; v < t->vstages; v++)
		if (t->chunk[v]->n_params > nl)
			nl = t->chunk[v]->n_params;
	float *full = calloc(3 * nf, sizeof(float));
	float *lm = malloc((nl ? nl : 1) * sizeof(float)), *lv = malloc((nl ? nl : 1) * sizeof(float));
	rc = full && lm && lv ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory gathering the checkpoint (%zu floats)", 3 * nf);
	rc = agree(t, rc, "gathering the checkpoint");
	int zero = t->cfg.zero && t->dp > 1;
	for (int v = 0; v < t->vstages && !rc; v++) {
		struct nn_gpt *m = t->chunk[v];
		offsets(m->param_sizes, loff);
		local_moments(t, v, lm, lv);
		for (int id = 0; id < NN_NPARAMS && !rc; id++) {
			if (!m->param_sizes[id])
				continue;
			if (t->dp_rank == 0)
				rc = nn_shard_to_full(m, id, m->param[id], full + foff[id]);
			if (!rc && (zero || t->dp_rank == 0))
				rc = nn_shard_to_full(m, id, lm + loff[id], full + nf + foff[id]);
			if (!rc && (zero || t->dp_rank == 0))
				rc = nn_shard_to_full(m, id, lv + loff[id], full + 2 * nf + foff[id]);
		}
	}
	free(lm);
	free(lv);
	/* one sum per tensor, so no call passes MPI's int count limit on big models */
	for (int part = 0; part < 3 && !rc && t->comm && t->world > 1; part++)
		for (int id = 0; id < NN_NPARAMS && !rc; id++)
			rc = comm_allreduce(t->comm, COMM_WORLD, full + part * nf + foff[id], full + part * nf + foff[id],
					    sizes[id], COMM_F32, COMM_SUM);
	if (!rc && t->rank == 0) {
		struct nn_gpt whole;
		whole_view(t, full, &whole);
		rc = trainer_ckpt_save(run_dir, &whole, full + nf, full + 2 * nf, st, dir_out, dn);
	}
	free(full);
	if (t->comm && t->world > 1) {
		/* rank 0's result decides (a write error there fails every rank) */
		int v = rc;
		int r = comm_broadcast(t->comm, COMM_WORLD, &v, 1, COMM_I32, 0);
		if (!rc && r)
			rc = r;
		if (!rc && v)
			rc = ascent_error(v, "rank 0 could not write the checkpoint (see logs/rank-00000.log)");
	}
	prof_range_end(&tok);
	return rc;
}

/* Every chunk of this rank takes its slice of the whole model's parameters. */
static int params_from_whole(struct trainer *t, const struct nn_gpt *whole)
{
	int rc = 0;
	for (int v = 0; v < t->vstages && !rc; v++) {
		struct nn_gpt *m = t->chunk[v];
		for (int id = 0; id < NN_NPARAMS && !rc; id++)
			if (m->param_sizes[id])
				rc = nn_shard_from_full(m, id, whole->param[id], m->param[id]);
		nn_gpt_params_changed(m);
	}
	return rc;
}

int trainer_ckpt_load_dist(struct trainer *t, const char *dir, struct trainer_state *st)
{
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_CHECKPOINT, "checkpoint_load", NULL);
	int rc;
	if (whole_layout(t)) {
		rc = trainer_ckpt_load(dir, &t->model, t->adam_m, t->adam_v, st);
		prof_range_end(&tok);
		return rc;
	}
	size_t sizes[NN_NPARAMS], foff[NN_NPARAMS], loff[NN_NPARAMS];
	nn_param_sizes(&t->mc, sizes);
	offsets(sizes, foff);
	size_t nf = nn_param_count(&t->mc), nl = 0;
	for (int v = 0; v < t->vstages; v++)
		if (t->chunk[v]->n_params > nl)
			nl = t->chunk[v]->n_params;
	struct nn_gpt whole;
	float *fm = malloc(3 * nf * sizeof(float));
	float *lm = malloc(2 * (nl ? nl : 1) * sizeof(float));
	rc = fm && lm ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory reading the checkpoint");
	if (!rc) {
		whole_view(t, fm + 2 * nf, &whole);
		memset(fm + 2 * nf, 0, nf * sizeof(float));
	}
	if (!rc)
		rc = trainer_ckpt_load(dir, &whole, fm, fm + nf, st);
	if (!rc)
		rc = params_from_whole(t, &whole);
	for (int v = 0; v < t->vstages && !rc; v++) {
		struct nn_gpt *m = t->chunk[v];
		float *lv = lm + m->n_params;
		offsets(m->param_sizes, loff);
		for (int id = 0; id < NN_NPARAMS && !rc; id++) {
			if (!m->param_sizes[id])
				continue;
			rc = nn_shard_from_full(m, id, fm + foff[id], lm + loff[id]);
			if (!rc)
				rc = nn_shard_from_full(m, id, fm + nf + foff[id], lv + loff[id]);
		}
		for (int i = 0; i < t->nbuckets && !rc; i++) {
			const struct trainer_bucket *b = &t->buckets[i];
			if (b->v != v)
				continue;
			size_t lo[2], n[2], opt[2];
			int k = trainer_bucket_owned(t, b, lo, n, opt);
			for (int j = 0; j < k; j++) {
				memcpy(t->adam_m + opt[j], lm + lo[j], n[j] * sizeof(float));
				memcpy(t->adam_v + opt[j], lv + lo[j], n[j] * sizeof(float));
			}
		}
	}
	free(fm);
	free(lm);
	rc = agree(t, rc, "loading the checkpoint");
	prof_range_end(&tok);
	return rc;
}

int trainer_load_weights_dist(struct trainer *t, const char *dir)
{
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_CHECKPOINT, "checkpoint_load", NULL);
	int rc;
	if (whole_layout(t)) {
		rc = trainer_model_load(dir, &t->model);
		prof_range_end(&tok);
		return rc;
	}
	size_t nf = nn_param_count(&t->mc);
	float *full = malloc(nf * sizeof(float));
	rc = full ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory reading the weights of '%s'", dir);
	struct nn_gpt whole;
	if (!rc) {
		whole_view(t, full, &whole);
		rc = trainer_model_load(dir, &whole);
	}
	if (!rc)
		rc = params_from_whole(t, &whole);
	free(full);
	rc = agree(t, rc, "loading the weights");
	prof_range_end(&tok);
	return rc;
}
