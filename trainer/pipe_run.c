/* trainer/pipe_run.c — running the pipeline schedule of pipeline.c on this rank: the batch of each
 * micro-batch (the sampler's slice of this DP rank; with distillation also its soft targets from
 * the hook, on the head chunk's rank), forward and backward of each chunk in its
 * activation slots, activations and gradients between stages by non-blocking sends and blocking
 * receives, and the forward-only evaluation of the validation split. With one stage and one chunk
 * this is plain gradient accumulation over the micro-batches. */
#include "trainer/internal.h"

#include "comm/comm.h"
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>

/* MPI tags: forward activation of edge (chunk c → c+1) for micro-batch j, and its gradient. */
static int tag_fwd(const struct trainer *t, int c, int j)
{
	return 2 * (c * t->micro + j);
}

static int tag_bwd(const struct trainer *t, int c, int j)
{
	return 2 * (c * t->micro + j) + 1;
}

static size_t act_floats(const struct trainer *t)
{
	return (size_t)t->mb_batch * (size_t)t->cfg.seq * (size_t)t->mc.n_embd;
}

int trainer_pp_setup(struct trainer *t)
{
	int M = t->micro, V = t->vstages;
	t->nactions = 2 * M * V;
	t->actions = malloc(sizeof *t->actions * (size_t)t->nactions);
	if (!t->actions)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the pipeline schedule");
	int rc = trainer_pp_schedule(t->sched, t->pp, t->pp_rank, M, V, t->actions, &t->nslots);
	if (rc)
		return rc;
	for (int v = 0; v < V && !rc; v++)
		rc = nn_gpt_set_slots(t->chunk[v], t->nslots, t->mb_batch, t->cfg.seq);
	if (rc || t->pp * V == 1)
		return rc;
	size_t n = act_floats(t);
	t->nsend = t->nslots * V + 1;
	t->act_buf = malloc(n * sizeof(float));
	t->dact_buf = malloc(n * sizeof(float));
	t->send_buf = malloc((size_t)t->nsend * n * sizeof(float));
	t->send_req = calloc((size_t)(t->nsend + V * t->nslots), sizeof *t->send_req);
	if (!t->act_buf || !t->dact_buf || !t->send_buf || !t->send_req)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the pipeline buffers");
	prof_mem_alloc(DB_MEM_COMM, (int64_t)((size_t)(2 + t->nsend) * n * sizeof(float)), t->send_buf);
	return 0;
}

void trainer_pp_release(struct trainer *t)
{
	if (t->send_req && t->comm)
		for (int i = 0; i < t->nsend + t->vstages * t->nslots; i++)
			comm_wait(t->comm, &t->send_req[i]);
	if (t->send_buf)
		prof_mem_free(DB_MEM_COMM, (int64_t)((size_t)(2 + t->nsend) * act_floats(t) * sizeof(float)), t->send_buf);
	free(t->actions);
	free(t->act_buf);
	free(t->dact_buf);
	free(t->send_buf);
	free(t->send_req);
	t->actions = NULL;
	t->act_buf = t->dact_buf = t->send_buf = NULL;
	t->send_req = NULL;
}

/* Inputs and targets of micro-batch j of round k for this DP rank. */
static void fill_batch(struct trainer *t, int k, int j)
{
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_DATA, "batch", NULL);
	int64_t first = trainer_sample_first(&t->sampler, k, t->dp_rank, t->dp, j, t->micro);
	for (int b = 0; b < t->mb_batch; b++)
		t->offsets[b] = trainer_sample_offset(&t->sampler, t->step, first + b);
	trainer_fill_batch(t->data.train, t->offsets, t->mb_batch, t->cfg.seq, t->inputs, t->targets);
	prof_range_end(&tok);
}

int trainer_pp_round(struct trainer *t, int k, double *loss_sum)
{
	const int P = t->pp, M = t->micro, K = t->cfg.grad_accum;
	const int B = t->mb_batch, T = t->cfg.seq;
	const size_t n = act_floats(t);
	const int prev = (t->pp_rank - 1 + P) % P, next = (t->pp_rank + 1) % P;
	float scale = (float)(t->scaler.scale / ((double)K * M));
	int sendi = 0, rc = 0;
	for (int i = 0; i < t->nactions && !rc; i++) {
		const struct trainer_pp_action *a = &t->actions[i];
		struct nn_gpt *m = t->chunk[a->vchunk];
		const struct nn_shard *sh = &m->shard;
		int c = a->vchunk * P + t->pp_rank;
		/* notice finished sends promptly (their profile ranges end there, buffers free up) */
		for (int r = 0; t->send_req && r < t->nsend + t->vstages * t->nslots && !rc; r++) {
			int done;
			if (t->send_req[r])
				rc = comm_test(t->comm, &t->send_req[r], &done);
		}
		if (rc)
			break;
		struct prof_tok mbt = prof_microbatch_begin(k * M + a->mb);
		if (!a->backward) {
			struct comm_req **areq = t->send_req ? &t->send_req[t->nsend + a->vchunk * t->nslots + a->slot] : NULL;
			if (areq && (rc = comm_wait(t->comm, areq)))   /* the slot's output may still be in flight */
				break;
			if (sh->has_embed || sh->has_head)
				fill_batch(t, k, a->mb);
			if (!sh->has_embed)
				rc = comm_recv(t->comm, COMM_PP, t->act_buf, n, COMM_F32, prev, tag_fwd(t, c - 1, a->mb));
			if (!rc && sh->has_head && t->soft_fn) {   /* distillation: the teacher on the same inputs */
				struct prof_tok th = prof_range_begin_kind(DB_KIND_PHASE, "teacher", NULL);
				rc = t->soft_fn(t->soft_arg, t->inputs, B, T, t->soft);
				prof_range_end(&th);
				if (rc)
					rc = ascent_error_ctx(rc, "the soft targets");
			}
			if (!rc) {
				struct prof_tok ph = prof_range_begin_kind(DB_KIND_PHASE, "forward", NULL);
				if (t->soft_fn)
					rc = nn_gpt_stage_forward_soft(m, a->slot, t->inputs, t->act_buf, t->soft, B, T);
				else
					rc = nn_gpt_stage_forward(m, a->slot, t->inputs, t->act_buf,
								  sh->has_head ? t->targets : NULL, B, T);
				prof_range_end(&ph);
			}
			if (!rc && sh->has_head)
				*loss_sum += nn_gpt_slot_loss(m, a->slot);
			if (!rc && !sh->has_head)
				rc = comm_isend(t->comm, COMM_PP, nn_gpt_stage_output(m, a->slot), n, COMM_F32, next,
						tag_fwd(t, c, a->mb), areq);
		} else {
			if (!sh->has_head)
				rc = comm_recv(t->comm, COMM_PP, t->dact_buf, n, COMM_F32, next, tag_bwd(t, c, a->mb));
			float *dinput = NULL;
			struct comm_req **dreq = NULL;
			if (!rc && !sh->has_embed) {
				dreq = &t->send_req[sendi];
				dinput = t->send_buf + (size_t)sendi * n;
				sendi = (sendi + 1) % t->nsend;
				rc = comm_wait(t->comm, dreq);
			}
			if (!rc) {
				t->armed = t->dp > 1 && t->cfg.zero != 1 && k == K - 1 && a->mb == M - 1;
				struct prof_tok ph = prof_range_begin_kind(DB_KIND_PHASE, "backward", NULL);
				rc = nn_gpt_stage_backward(m, a->slot, sh->has_head ? NULL : t->dact_buf, scale, dinput);
				prof_range_end(&ph);
				t->armed = 0;
			}
			if (!rc && !sh->has_embed)
				rc = comm_isend(t->comm, COMM_PP, dinput, n, COMM_F32, prev, tag_bwd(t, c - 1, a->mb), dreq);
		}
		prof_microbatch_end(&mbt);
		if (rc)
			rc = ascent_error_ctx(rc, "%s of micro-batch %d (chunk %d, round %d)", a->backward ? "backward" : "forward",
					      a->mb, c, k);
	}
	/* every send of the round has its receive in the same round on the peer */
	if (t->send_req)
		for (int i = 0; i < t->nsend + t->vstages * t->nslots; i++) {
			int r = comm_wait(t->comm, &t->send_req[i]);
			if (!rc)
				rc = r;
		}
	return rc;
}

int trainer_val_loss(struct trainer *t, int batches, double *loss)
{
	const int B = t->cfg.batch, T = t->cfg.seq, mb = t->mb_batch, P = t->pp;
	size_t per = (size_t)B * (size_t)T;
	size_t avail = t->data.nval >= 1 ? (t->data.nval - 1) / per : 0;
	if (avail == 0)
		return ascent_error(ASCENT_EINPUT,
				    "%zu validation tokens are fewer than one evaluation batch needs (batch x seq + 1 = %zu); "
				    "use a smaller batch or seq",
				    t->data.nval, per + 1);
	size_t nb = batches > 0 && (size_t)batches < avail ? (size_t)batches : avail;
	int nsub = B / mb;   /* = dp·M sub-batches per batch, shared round robin by the DP ranks */
	const size_t n = act_floats(t);
	const int prev = (t->pp_rank - 1 + P) % P, next = (t->pp_rank + 1) % P;
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_PHASE, "eval", NULL);
	double sum = 0;
	int rc = 0;
	for (size_t b = 0; b < nb && !rc; b++) {
		for (int s = t->dp_rank; s < nsub && !rc; s += t->dp) {
			const uint16_t *p = t->data.val + b * per + (size_t)s * (size_t)mb * (size_t)T;
			for (size_t i = 0; i < (size_t)mb * (size_t)T; i++) {
				t->inputs[i] = p[i];
				t->targets[i] = p[i + 1];
			}
			for (int v = 0; v < t->vstages && !rc; v++) {
				struct nn_gpt *m = t->chunk[v];
				const struct nn_shard *sh = &m->shard;
				int c = v * P + t->pp_rank;
				if (!sh->has_embed)
					rc = comm_recv(t->comm, COMM_PP, t->act_buf, n, COMM_F32, prev, tag_fwd(t, c - 1, 0));
				if (!rc)
					rc = nn_gpt_stage_forward(m, 0, t->inputs, t->act_buf, sh->has_head ? t->targets : NULL, mb, T);
				if (!rc && sh->has_head)
					sum += nn_gpt_slot_loss(m, 0);
				else if (!rc)
					rc = comm_send(t->comm, COMM_PP, nn_gpt_stage_output(m, 0), n, COMM_F32, next, tag_fwd(t, c, 0));
			}
		}
		if (t->val_progress)
			t->val_progress(t->val_progress_arg, (int64_t)b + 1, (int64_t)nb);
	}
	prof_range_end(&tok);
	if (rc)
		return ascent_error_ctx(rc, "evaluation");
	int holder = t->chunk[t->vstages - 1]->shard.has_head && t->tp_rank == 0;
	double v = holder ? sum / ((double)nb * nsub) : 0;
	if ((rc = trainer_world_sum(t, &v, 1)))
		return rc;
	*loss = v;
	return 0;
}
