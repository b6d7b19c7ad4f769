/* trainer/dist.c — data parallelism: gradient buckets launched as non-blocking allreduces (or
 * ZeRO reduce-scatters) while the backward goes on, MPI progress from the grad-ready callback, the
 * tied-embedding sum between the first and last pipeline stage, the global gradient norm with each
 * element counted once, and the AdamW update of what this rank owns (ZeRO: its shard of each
 * bucket, then an allgather of the parameters). */
#include "trainer/internal.h"

#include "comm/comm.h"
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>

static int per_layer(int id)
{
	return id >= NN_LN1W && id <= NN_FCPROJB;
}

static int chunk_of(const struct trainer *t, const struct nn_gpt *m)
{
	for (int v = 0; v < t->vstages; v++)
		if (t->chunk[v] == m)
			return v;
	return -1;
}

static int cmp_bucket(const void *a, const void *b)
{
	const struct trainer_bucket *x = a, *y = b;
	if (x->v != y->v)
		return x->v < y->v ? 1 : -1;   /* the last chunk first: its backward ends first */
	if (x->ready_at != y->ready_at)
		return x->ready_at < y->ready_at ? -1 : 1;
	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return x->off < y->off ? 1 : x->off > y->off ? -1 : 0;
}

/* The model is cut into several chunks: the tied wte has two copies to sum. */
static int split_model(const struct trainer *t)
{
	return t->pp * t->vstages > 1;
}

static int grad_ready(void *arg, struct nn_gpt *m, int layer);

int trainer_dist_setup(struct trainer *t)
{
	size_t bucket_floats = (size_t)(t->cfg.bucket_mb * 1e6 / sizeof(float));
	if (bucket_floats < 1)
		bucket_floats = 1;
	int cap = 0;
	for (int v = 0; v < t->vstages; v++) {
		const struct nn_gpt *m = t->chunk[v];
		for (int id = 0; id < NN_NPARAMS; id++)
			cap += per_layer(id) ? (m->n_layer_local > 0 ? m->n_layer_local : 1) : 1;
	}
	t->buckets = calloc((size_t)cap, sizeof *t->buckets);
	if (!t->buckets)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the gradient buckets");
	int nb = 0;
	for (int v = 0; v < t->vstages; v++) {
		struct nn_gpt *m = t->chunk[v];
		const struct nn_shard *sh = &m->shard;
		int Ll = m->n_layer_local, base = sh->has_head ? 1 : 0;
		size_t off = 0;
		for (int id = 0; id < NN_NPARAMS; id++) {
			size_t sz = m->param_sizes[id];
			size_t toff = off;
			off += sz;
			if (!sz)
				continue;
			int weight = nn_param_tp_split((enum nn_param_id)id) == NN_TP_REPLICATED ? t->tp_rank == 0 : 1;
			struct trainer_bucket proto = { .v = v, .id = id, .weight = weight,
							.decay = nn_param_decays((enum nn_param_id)id) };
			if (per_layer(id)) {
				size_t s = sz / (size_t)Ll;
				int g = (int)(bucket_floats / s);
				if (g < 1)
					g = 1;
				for (int top = Ll; top > 0; top -= g) {
					int lo = top - g < 0 ? 0 : top - g;
					struct trainer_bucket b = proto;
					b.off = toff + (size_t)lo * s;
					b.count = (size_t)(top - lo) * s;
					b.ready_at = base + (Ll - 1 - lo);
					t->buckets[nb++] = b;
				}
				continue;
			}
			struct trainer_bucket b = proto;
			b.off = toff;
			b.count = sz;
			if (id == NN_WTE) {
				b.ready_at = sh->has_embed ? base + Ll : 0;
				if (split_model(t))
					b.ready_at = TRAINER_BUCKET_DEFERRED;
				if (!sh->has_embed)
					b.weight = 0;   /* the head's copy: chunk 0 counts wte */
			} else if (id == NN_WPE) {
				b.ready_at = base + Ll;
			} else {
				b.ready_at = 0;   /* lnf: final after the head */
			}
			t->buckets[nb++] = b;
		}
	}
	t->nbuckets = nb;
	qsort(t->buckets, (size_t)nb, sizeof *t->buckets, cmp_bucket);

	/* optimizer state: identity layout without ZeRO (chunk after chunk), shards with it */
	int zero = t->cfg.zero && t->dp > 1;
	size_t chunk_base[TRAINER_MAX_VSTAGES] = { 0 }, total = 0;
	for (int v = 0; v < t->vstages; v++) {
		chunk_base[v] = total;
		total += t->chunk[v]->n_params;
	}
	size_t nopt = zero ? 0 : total;
	for (int i = 0; i < nb; i++) {
		struct trainer_bucket *b = &t->buckets[i];
		if (zero) {
			b->part = b->count / (size_t)t->dp;
			b->tail = b->count - b->part * (size_t)t->dp;
			b->opt_off = nopt;
			nopt += b->part + b->tail;
		} else {
			b->opt_off = chunk_base[b->v] + b->off;
		}
	}
	t->n_opt = nopt;
	t->opt_mem = calloc(2 * (nopt ? nopt : 1), sizeof(float));
	if (!t->opt_mem)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the optimizer state (%zu floats)", 2 * nopt);
	t->adam_m = t->opt_mem;
	t->adam_v = t->opt_mem + nopt;
	prof_mem_alloc(DB_MEM_OPTIMIZER, (int64_t)(2 * nopt * sizeof(float)), t->opt_mem);
	for (int v = 0; v < t->vstages; v++)
		nn_gpt_set_grad_ready(t->chunk[v], grad_ready, t);
	return 0;
}

void trainer_dist_release(struct trainer *t)
{
	if (t->buckets && t->comm) {
		for (int i = 0; i < t->nbuckets; i++) {
			comm_wait(t->comm, &t->buckets[i].req);
			comm_wait(t->comm, &t->buckets[i].req_tail);
		}
	}
	free(t->buckets);
	t->buckets = NULL;
	if (t->opt_mem)
		prof_mem_free(DB_MEM_OPTIMIZER, (int64_t)(2 * t->n_opt * sizeof(float)), t->opt_mem);
	free(t->opt_mem);
	t->opt_mem = NULL;
}

void trainer_dist_begin_step(struct trainer *t)
{
	for (int i = 0; i < t->nbuckets; i++)
		t->buckets[i].launched = 0;
	t->armed = 0;
}

static int launch(struct trainer *t, struct trainer_bucket *b)
{
	float *g = t->chunk[b->v]->grads_mem + b->off;
	b->launched = 1;
	int rc = 0;
	if (!t->cfg.zero) {
		rc = comm_iallreduce(t->comm, COMM_DP, g, g, b->count, COMM_F32, COMM_AVG, &b->req);
	} else {
		if (b->part)
			rc = comm_ireduce_scatter(t->comm, COMM_DP, NULL, g, b->part, COMM_F32, COMM_AVG, &b->req);
		if (!rc && b->tail)
			rc = comm_iallreduce(t->comm, COMM_DP, g + b->count - b->tail, g + b->count - b->tail, b->tail,
					     COMM_F32, COMM_AVG, &b->req_tail);
	}
	return rc;
}

/* Drive MPI progress on the buckets in flight (non-blocking collectives advance only inside MPI
 * calls). */
static int progress(struct trainer *t)
{
	for (int i = 0; i < t->nbuckets; i++) {
		struct trainer_bucket *b = &t->buckets[i];
		int done, rc;
		if (b->req && (rc = comm_test(t->comm, &b->req, &done)))
			return rc;
		if (b->req_tail && (rc = comm_test(t->comm, &b->req_tail, &done)))
			return rc;
	}
	return 0;
}

static int grad_ready(void *arg, struct nn_gpt *m, int layer)
{
	struct trainer *t = arg;
	if (!t->armed)
		return 0;
	int v = chunk_of(t, m);
	if (v < 0)
		return ascent_error(ASCENT_EINTERNAL, "gradient callback from an unknown model chunk");
	const struct nn_shard *sh = &m->shard;
	int base = sh->has_head ? 1 : 0, ord;
	if (layer == NN_GRADS_HEAD)
		ord = 0;
	else if (layer == NN_GRADS_EMBED)
		ord = base + m->n_layer_local;
	else
		ord = base + (sh->layer_end - 1 - layer);
	int rc = 0;
	for (int i = 0; i < t->nbuckets && !rc; i++) {
		struct trainer_bucket *b = &t->buckets[i];
		if (b->v == v && !b->launched && b->ready_at <= ord)
			rc = launch(t, b);
	}
	return rc ? rc : progress(t);
}

/* Sum the two copies of the tied embedding's gradient: the first chunk (stage 0, virtual stage 0)
 * and the last (stage pp−1, virtual stage V−1) exchange theirs and each adds the other's
 * (a + b == b + a exactly, so the copies stay bitwise equal). */
static int tied_exchange(struct trainer *t)
{
	if (!split_model(t))
		return 0;
	struct nn_gpt *m = NULL;
	int peer = -1;
	if (t->pp_rank == 0 && t->chunk[0]->shard.has_embed) {
		m = t->chunk[0];
		peer = t->pp - 1;
	} else if (t->pp_rank == t->pp - 1 && t->chunk[t->vstages - 1]->shard.has_head) {
		m = t->chunk[t->vstages - 1];
		peer = 0;
	}
	if (!m)
		return 0;
	size_t n = m->param_sizes[NN_WTE];
	float *other = malloc(n * sizeof(float));
	if (!other)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the tied embedding gradient");
	prof_mem_alloc(DB_MEM_COMM, (int64_t)(n * sizeof(float)), other);
	struct comm_req *rq = NULL;
	int rc = comm_isend(t->comm, COMM_PP, m->grad[NN_WTE], n, COMM_F32, peer, 32000, &rq);
	if (!rc)
		rc = comm_recv(t->comm, COMM_PP, other, n, COMM_F32, peer, 32000);
	int rc2 = comm_wait(t->comm, &rq);
	if (!rc)
		rc = rc2;
	if (!rc) {
		float *g = m->grad[NN_WTE];
		for (size_t i = 0; i < n; i++)
			g[i] += other[i];
	}
	prof_mem_free(DB_MEM_COMM, (int64_t)(n * sizeof(float)), other);
	free(other);
	return rc;
}

int trainer_dist_finish_grads(struct trainer *t)
{
	t->armed = 0;
	struct prof_tok tok = prof_range_begin_kind(DB_KIND_PHASE, "grad_sync", NULL);
	int rc = t->comm ? tied_exchange(t) : 0;
	if (!rc && t->dp > 1) {
		for (int i = 0; i < t->nbuckets && !rc; i++)
			if (!t->buckets[i].launched)
				rc = launch(t, &t->buckets[i]);
		for (int i = 0; i < t->nbuckets; i++) {
			struct trainer_bucket *b = &t->buckets[i];
			int r1 = comm_wait(t->comm, &b->req), r2 = comm_wait(t->comm, &b->req_tail);
			if (!rc)
				rc = r1 ? r1 : r2;
			if (!rc && t->cfg.zero && b->part && t->dp_rank > 0) {
				float *g = t->chunk[b->v]->grads_mem + b->off;
				memmove(g + (size_t)t->dp_rank * b->part, g, b->part * sizeof(float));
			}
		}
	}
	prof_range_end(&tok);
	return rc;
}

int trainer_bucket_owned(const struct trainer *t, const struct trainer_bucket *b, size_t lo[2], size_t n[2],
			 size_t opt[2])
{
	if (!t->cfg.zero || t->dp == 1) {
		lo[0] = b->off;
		n[0] = b->count;
		opt[0] = b->opt_off;
		return 1;
	}
	int k = 0;
	if (b->part) {
		lo[k] = b->off + (size_t)t->dp_rank * b->part;
		n[k] = b->part;
		opt[k] = b->opt_off;
		k++;
	}
	if (b->tail) {
		lo[k] = b->off + b->count - b->tail;
		n[k] = b->tail;
		opt[k] = b->opt_off + b->part;
		k++;
	}
	return k;
}

double trainer_dist_sumsq(const struct trainer *t)
{
	double s = 0;
	int zero = t->cfg.zero && t->dp > 1;
	for (int i = 0; i < t->nbuckets; i++) {
		const struct trainer_bucket *b = &t->buckets[i];
		if (!b->weight)
			continue;
		const float *g = t->chunk[b->v]->grads_mem;
		if (!zero) {
			if (t->dp_rank == 0)
				s += nn_sumsq(g + b->off, b->count);
			continue;
		}
		if (b->part)
			s += nn_sumsq(g + b->off + (size_t)t->dp_rank * b->part, b->part);
		if (b->tail && t->dp_rank == 0)
			s += nn_sumsq(g + b->off + b->count - b->tail, b->tail);
	}
	return s;
}

int trainer_dist_update(struct trainer *t, const struct nn_adamw *o, int step1, float f)
{
	for (int i = 0; i < t->nbuckets; i++) {
		const struct trainer_bucket *b = &t->buckets[i];
		struct nn_gpt *m = t->chunk[b->v];
		size_t lo[2], n[2], opt[2];
		int k = trainer_bucket_owned(t, b, lo, n, opt);
		for (int j = 0; j < k; j++) {
			if (f != 1.0f)
				nn_scale(m->grads_mem + lo[j], n[j], f);
			nn_adamw_step(o, step1, m->params_mem + lo[j], m->grads_mem + lo[j], t->adam_m + opt[j],
				      t->adam_v + opt[j], n[j], b->decay);
		}
	}
	if (!t->cfg.zero || t->dp == 1)
		return 0;
	int rc = 0;
	for (int i = 0; i < t->nbuckets && !rc; i++) {
		struct trainer_bucket *b = &t->buckets[i];
		if (b->part)
			rc = comm_iallgather(t->comm, COMM_DP, NULL, t->chunk[b->v]->params_mem + b->off, b->part, COMM_F32,
					     &b->req);
	}
	for (int i = 0; i < t->nbuckets; i++) {
		int r = comm_wait(t->comm, &t->buckets[i].req);
		if (!rc)
			rc = r;
	}
	return rc;
}

void trainer_mem_bytes(const struct trainer *t, int64_t *param, int64_t *grad, int64_t *opt, int64_t *comm_buf)
{
	int64_t p = 0;
	for (int v = 0; v < t->vstages; v++)
		p += (int64_t)(t->chunk[v]->n_params * sizeof(float));
	*param = p;
	*grad = p;
	*opt = (int64_t)(2 * t->n_opt * sizeof(float));
	*comm_buf = (int64_t)((size_t)(2 + t->nsend) * (size_t)t->mb_batch * (size_t)t->cfg.seq *
			      (size_t)t->mc.n_embd * sizeof(float));
	if (!t->act_buf)
		*comm_buf = 0;
}
