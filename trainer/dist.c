/* trainer/dist.c — data parallelism: gradient buckets launched as non-blocking allreduces (or
 * ZeRO reduce-scatters) while the backward goes on (comm/'s communication thread runs them, no
 * polling here), the ZeRO-2 gradient window (each block's gradients reduce-scattered into this
 * rank's shard as they are made), the tied-embedding sum between the first and last pipeline stage, the global gradient
 * norm with each element counted once, and the AdamW update of what this rank owns (ZeRO: its
 * shard of each bucket, then an allgather of the parameters). */
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

/* ZeRO-2's gradient window: WIN_SLOTS buffers of one block's gradients, used in turn. A slot holds
 * block `layer` of chunk `v` from nn's request until its reduce-scatters are done and added into
 * gshard (when the slot comes round again, or at the end of the step). */
#define WIN_SLOTS 2
#define WIN_MAXB (NN_FCPROJB - NN_LN1W + 1)

struct win_slot {
	float *buf;
	int busy, launched, v, layer;
	int nb, bi[WIN_MAXB];                   /* the buckets launched from this slot */
	struct comm_req *req[WIN_MAXB], *req_tail[WIN_MAXB];
};

struct trainer_gwin {
	float *gshard;            /* n_opt floats: this rank's reduced gradients (optimizer layout) */
	float *mem;               /* WIN_SLOTS × floats */
	size_t floats;            /* one block's gradients (the largest chunk's) */
	int next;
	struct win_slot slot[WIN_SLOTS];
};

static int zero2(const struct trainer *t)
{
	return t->cfg.zero == 2 && t->dp > 1;
}

int trainer_dist_windowed(const struct trainer *t)
{
	return zero2(t);
}

/* Wait for a collective and its tail; the first error wins. */
static int wait_pair(struct trainer *t, struct comm_req **req, struct comm_req **req_tail)
{
	int r1 = comm_wait(t->comm, req), r2 = comm_wait(t->comm, req_tail);
	return r1 ? r1 : r2;
}

static int win_setup(struct trainer *t)
{
	struct trainer_gwin *w = calloc(1, sizeof *w);
	if (!w)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the ZeRO-2 gradient window");
	t->gwin = w;
	for (int v = 0; v < t->vstages; v++) {
		size_t n = t->chunk[v]->n_layer_local ? nn_gpt_layer_grad_floats(t->chunk[v]) : 0;
		w->floats = n > w->floats ? n : w->floats;
		if (t->chunk[v]->grad_dest != trainer_dist_grad_dest)   /* trainer_init_dist sets it */
			return ascent_error(ASCENT_EINTERNAL, "ZeRO-2: model chunk %d was made without the gradient window", v);
	}
	w->gshard = calloc(t->n_opt ? t->n_opt : 1, sizeof(float));
	size_t bytes = (WIN_SLOTS * w->floats * sizeof(float) + 63) & ~(size_t)63;
	w->mem = aligned_alloc(64, bytes ? bytes : 64);
	if (!w->gshard || !w->mem)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the ZeRO-2 gradient shard (%zu floats) and window",
				    t->n_opt);
	prof_mem_alloc(DB_MEM_GRAD, (int64_t)(t->n_opt * sizeof(float)), w->gshard);
	prof_mem_alloc(DB_MEM_GRAD, (int64_t)(WIN_SLOTS * w->floats * sizeof(float)), w->mem);
	for (int i = 0; i < WIN_SLOTS; i++)
		w->slot[i].buf = w->mem + (size_t)i * w->floats;
	return 0;
}

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
			struct trainer_bucket proto = { .v = v, .id = id, .weight = weight, .layer = -1,
							.decay = nn_param_decays((enum nn_param_id)id) };
			if (per_layer(id)) {
				size_t s = sz / (size_t)Ll;
				int g = (int)(bucket_floats / s);
				if (g < 1 || zero2(t))
					g = 1;   /* ZeRO-2: one block per bucket, the window's unit */
				for (int top = Ll; top > 0; top -= g) {
					int lo = top - g < 0 ? 0 : top - g;
					struct trainer_bucket b = proto;
					b.off = toff + (size_t)lo * s;
					b.count = (size_t)(top - lo) * s;
					b.ready_at = base + (Ll - 1 - lo);
					if (zero2(t)) {
						size_t wcount;
						b.layer = sh->layer_begin + lo;
						nn_gpt_layer_grad_offset(m, id, &b.woff, &wcount);
					}
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
	return zero2(t) ? win_setup(t) : 0;
}

void trainer_dist_release(struct trainer *t)
{
	if (t->buckets && t->comm) {
		for (int i = 0; i < t->nbuckets; i++)
			wait_pair(t, &t->buckets[i].req, &t->buckets[i].req_tail);
	}
	struct trainer_gwin *w = t->gwin;
	if (w) {
		for (int i = 0; i < WIN_SLOTS && t->comm; i++)
			for (int j = 0; j < w->slot[i].nb; j++)
				wait_pair(t, &w->slot[i].req[j], &w->slot[i].req_tail[j]);
		if (w->gshard)
			prof_mem_free(DB_MEM_GRAD, (int64_t)(t->n_opt * sizeof(float)), w->gshard);
		if (w->mem)
			prof_mem_free(DB_MEM_GRAD, (int64_t)(WIN_SLOTS * w->floats * sizeof(float)), w->mem);
		free(w->gshard);
		free(w->mem);
		free(w);
		t->gwin = NULL;
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
	if (t->gwin)
		memset(t->gwin->gshard, 0, t->n_opt * sizeof(float));
}

/* A bucket's gradients in grads_mem (not for a windowed bucket: its block is in a window slot). */
static float *bucket_grad(const struct trainer *t, const struct trainer_bucket *b)
{
	const struct nn_gpt *m = t->chunk[b->v];
	return m->grad[b->id] + (b->off - (size_t)(m->param[b->id] - m->params_mem));
}

/* Reduce the bucket's gradients at g over DP: allreduce (zero 0), or a reduce-scatter that leaves
 * this rank's part at g[0, part) and an allreduce of the tail (zero >= 1). The sum: the mean's
 * division by dp is folded into the optimizer's pass (trainer_apply_grads' factor, applied as
 * nn_adamw's grad_scale), where the loss scale and clipping are undone anyway; a COMM_AVG would
 * add a pass over every bucket on the communication thread. */
static int launch_at(struct trainer *t, const struct trainer_bucket *b, float *g, struct comm_req **req,
		     struct comm_req **req_tail)
{
	int rc = 0;
	if (!t->cfg.zero) {
		rc = comm_iallreduce(t->comm, COMM_DP, g, g, b->count, COMM_F32, COMM_SUM, req);
	} else {
		if (b->part)
			rc = comm_ireduce_scatter(t->comm, COMM_DP, NULL, g, b->part, COMM_F32, COMM_SUM, req);
		if (!rc && b->tail)
			rc = comm_iallreduce(t->comm, COMM_DP, g + b->count - b->tail, g + b->count - b->tail, b->tail,
					     COMM_F32, COMM_SUM, req_tail);
	}
	return rc;
}

static int launch(struct trainer *t, struct trainer_bucket *b)
{
	b->launched = 1;
	return launch_at(t, b, bucket_grad(t, b), &b->req, &b->req_tail);
}

/* Add a reduced bucket (this rank's part at g[0, part), the tail at its end) into gshard. */
static void shard_add(struct trainer *t, const struct trainer_bucket *b, const float *g)
{
	float *d = t->gwin->gshard + b->opt_off;
	for (size_t i = 0; i < b->part; i++)
		d[i] += g[i];
	const float *tl = g + b->count - b->tail;
	for (size_t i = 0; i < b->tail; i++)
		d[b->part + i] += tl[i];
}

/* Finish a window slot: wait for its collectives and add their results into gshard. */
static int win_drain(struct trainer *t, struct win_slot *s)
{
	int rc = 0;
	for (int j = 0; j < s->nb; j++) {
		int r = wait_pair(t, &s->req[j], &s->req_tail[j]);
		if (!rc)
			rc = r;
		const struct trainer_bucket *b = &t->buckets[s->bi[j]];
		if (!rc)
			shard_add(t, b, s->buf + b->woff);
	}
	s->nb = 0;
	s->busy = s->launched = 0;
	return rc;
}

/* nn asks for the buffer of block `layer`'s gradients: the next slot, drained and zeroed. */
float *trainer_dist_grad_dest(void *arg, struct nn_gpt *m, int layer)
{
	struct trainer *t = arg;
	struct trainer_gwin *w = t->gwin;
	if (!w) {
		ascent_error(ASCENT_EINTERNAL, "backward before the ZeRO-2 gradient window was set up");
		return NULL;
	}
	struct win_slot *s = &w->slot[w->next];
	w->next = (w->next + 1) % WIN_SLOTS;
	if (s->busy && win_drain(t, s))
		return NULL;
	memset(s->buf, 0, w->floats * sizeof(float));
	s->v = chunk_of(t, m);
	s->layer = layer;
	s->busy = 1;
	return s->buf;
}

/* Block `layer` of chunk v is final in its slot: reduce-scatter its buckets from there. */
static int win_launch(struct trainer *t, int v, int layer)
{
	struct trainer_gwin *w = t->gwin;
	struct win_slot *s = NULL;
	for (int i = 0; i < WIN_SLOTS; i++)
		if (w->slot[i].busy && !w->slot[i].launched && w->slot[i].v == v && w->slot[i].layer == layer)
			s = &w->slot[i];
	if (!s)
		return ascent_error(ASCENT_EINTERNAL, "no gradient window slot holds block %d of chunk %d", layer, v);
	s->launched = 1;
	int rc = 0;
	for (int i = 0; i < t->nbuckets && !rc; i++) {
		const struct trainer_bucket *b = &t->buckets[i];
		if (b->v != v || b->layer != layer)
			continue;
		if (s->nb == WIN_MAXB)
			return ascent_error(ASCENT_EINTERNAL, "block %d has more than %d gradient buckets", layer, WIN_MAXB);
		int j = s->nb++;
		s->bi[j] = i;
		rc = launch_at(t, b, s->buf + b->woff, &s->req[j], &s->req_tail[j]);
	}
	return rc;
}

static int grad_ready(void *arg, struct nn_gpt *m, int layer)
{
	struct trainer *t = arg;
	int v = chunk_of(t, m);
	if (v < 0)
		return ascent_error(ASCENT_EINTERNAL, "gradient callback from an unknown model chunk");
	if (t->gwin && layer >= 0) {   /* every micro-batch's block gradients leave at once */
		return win_launch(t, v, layer);
	}
	if (!t->armed)
		return 0;
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
		if (b->v == v && !b->launched && b->layer < 0 && b->ready_at <= ord)
			rc = launch(t, b);
	}
	return rc;
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
			if (!t->buckets[i].launched && t->buckets[i].layer < 0)
				rc = launch(t, &t->buckets[i]);
		for (int i = 0; i < t->nbuckets; i++) {
			struct trainer_bucket *b = &t->buckets[i];
			if (b->layer >= 0)
				continue;
			int r = wait_pair(t, &b->req, &b->req_tail);
			if (!rc)
				rc = r;
			if (!rc && t->gwin)
				shard_add(t, b, bucket_grad(t, b));
			else if (!rc && t->cfg.zero && b->part && t->dp_rank > 0) {
				float *g = bucket_grad(t, b);
				memmove(g + (size_t)t->dp_rank * b->part, g, b->part * sizeof(float));
			}
		}
		for (int i = 0; t->gwin && i < WIN_SLOTS; i++) {
			struct win_slot *s = &t->gwin->slot[i];
			int r = s->busy ? win_drain(t, s) : 0;
			if (!rc)
				rc = r;
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

/* The gradient spans trainer_dist_sumsq hands nn_sumsq_many at a time. */
enum { SUMSQ_SPANS = 64 };

struct sumsq_spans {
	const float *x[SUMSQ_SPANS];
	size_t n[SUMSQ_SPANS];
	int k;
	double s;
};

static void sumsq_add(struct sumsq_spans *ss, const float *x, size_t n)
{
	if (ss->k == SUMSQ_SPANS) {
		ss->s += nn_sumsq_many(ss->x, ss->n, ss->k);
		ss->k = 0;
	}
	ss->x[ss->k] = x;
	ss->n[ss->k++] = n;
}

double trainer_dist_sumsq(const struct trainer *t)
{
	/* every span this rank counts, SUMSQ_SPANS at a time in one pass of the threads */
	struct sumsq_spans ss = { .k = 0, .s = 0 };
	int zero = t->cfg.zero && t->dp > 1;
	for (int i = 0; i < t->nbuckets; i++) {
		const struct trainer_bucket *b = &t->buckets[i];
		if (!b->weight)
			continue;
		if (t->gwin) {
			const float *g = t->gwin->gshard + b->opt_off;
			sumsq_add(&ss, g, b->part);
			if (b->tail && t->dp_rank == 0)
				sumsq_add(&ss, g + b->part, b->tail);
			continue;
		}
		const float *g = t->chunk[b->v]->grads_mem;
		if (!zero) {
			if (t->dp_rank == 0)
				sumsq_add(&ss, g + b->off, b->count);
			continue;
		}
		if (b->part)
			sumsq_add(&ss, g + b->off + (size_t)t->dp_rank * b->part, b->part);
		if (b->tail && t->dp_rank == 0)
			sumsq_add(&ss, g + b->off + b->count - b->tail, b->tail);
	}
	return ss.k ? ss.s + nn_sumsq_many(ss.x, ss.n, ss.k) : ss.s;
}

int trainer_dist_update(struct trainer *t, const struct nn_adamw *o, int step1, float f)
{
	struct nn_adamw os = *o;
	os.grad_scale = f;   /* in AdamW's one pass over the gradients */
	/* every owned span of a chunk in one optimizer pass (one wake of the threads, not one a bucket) */
	struct nn_adamw_span *sp = malloc(sizeof *sp * 2 * (size_t)(t->nbuckets ? t->nbuckets : 1));
	if (!sp)
		return ascent_error(ASCENT_ENOMEM, "cannot allocate the optimizer's %d buckets", t->nbuckets);
	for (int v = 0; v < t->vstages; v++) {
		struct nn_gpt *m = t->chunk[v];
		int ns = 0;
		for (int i = 0; i < t->nbuckets; i++) {
			const struct trainer_bucket *b = &t->buckets[i];
			if (b->v != v)
				continue;
			size_t lo[2], n[2], opt[2];
			int k = trainer_bucket_owned(t, b, lo, n, opt);
			for (int j = 0; j < k; j++) {
				float *g = t->gwin ? t->gwin->gshard + opt[j] : bucket_grad(t, b) + (lo[j] - b->off);
				sp[ns++] = (struct nn_adamw_span){ m->params_mem + lo[j], g, t->adam_m + opt[j],
								   t->adam_v + opt[j], n[j], b->decay };
			}
		}
		if (ns)
			nn_gpt_adamw_steps(m, &os, step1, sp, ns);
	}
	free(sp);
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
	int64_t p = 0, g = 0;
	for (int v = 0; v < t->vstages; v++) {
		p += (int64_t)(t->chunk[v]->n_params * sizeof(float));
		g += (int64_t)(t->chunk[v]->n_grads * sizeof(float));
	}
	if (t->gwin)
		g += (int64_t)((t->n_opt + WIN_SLOTS * t->gwin->floats) * sizeof(float));
	*param = p;
	*grad = g;
	*opt = (int64_t)(2 * t->n_opt * sizeof(float));
	*comm_buf = (int64_t)((size_t)(2 + t->nsend) * (size_t)t->mb_batch * (size_t)t->cfg.seq *
			      (size_t)t->mc.n_embd * sizeof(float));
	if (!t->act_buf)
		*comm_buf = 0;
}
