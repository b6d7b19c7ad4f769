/* nn/shard.c — model shards: validation, the local shape of each tensor (layer range, embedding,
 * head, Megatron tensor-parallel slices), the mapping between a shard's local tensors and the
 * canonical full tensors, per-layer slices for gradient buckets, and the GPT-2 weight init, which
 * gives every shard exactly its slice of the whole model's values. */
#include "nn/internal.h"

#include "comm/comm.h"
#include "common/common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void nn_shard_whole(const struct nn_config *c, struct nn_shard *out)
{
	memset(out, 0, sizeof *out);
	out->tp_size = 1;
	out->layer_begin = 0;
	out->layer_end = c->n_layer;
	out->has_embed = 1;
	out->has_head = 1;
}

int nn_shard_validate(const struct nn_config *c, const struct nn_shard *s)
{
	if (s->tp_size < 1 || s->tp_size > c->n_head || c->n_head % s->tp_size)
		return ascent_error(ASCENT_EINPUT, "shard tp_size %d must divide the model's n_head %d "
				    "(choose a TP degree that divides the head count)", s->tp_size, c->n_head);
	if (s->tp_rank < 0 || s->tp_rank >= s->tp_size)
		return ascent_error(ASCENT_EINPUT, "shard tp_rank %d is outside [0, %d)", s->tp_rank, s->tp_size);
	if (s->tp_size > 1 && s->tp &&
	    (comm_size(s->tp, COMM_TP) != s->tp_size || comm_rank(s->tp, COMM_TP) != s->tp_rank))
		return ascent_error(ASCENT_EINPUT, "shard tp %d/%d does not match the communicator's TP group "
				    "(rank %d of %d): call comm_set_grid first", s->tp_rank, s->tp_size,
				    comm_rank(s->tp, COMM_TP), comm_size(s->tp, COMM_TP));
	if (s->layer_begin < 0 || s->layer_end > c->n_layer || s->layer_begin > s->layer_end)
		return ascent_error(ASCENT_EINPUT, "shard layer range [%d, %d) is not inside [0, %d)",
				    s->layer_begin, s->layer_end, c->n_layer);
	if (s->layer_begin == s->layer_end && !s->has_embed && !s->has_head)
		return ascent_error(ASCENT_EINPUT, "shard holds nothing (no layers, no embedding, no head)");
	return 0;
}

size_t nn_layer_size(const struct nn_config *c, const struct nn_shard *s, int id)
{
	size_t C = (size_t)c->n_embd, Cl = C / (size_t)s->tp_size;
	switch (id) {
	case NN_LN1W: case NN_LN1B: case NN_ATTPROJB: case NN_LN2W: case NN_LN2B: case NN_FCPROJB:
		return C;
	case NN_QKVW: return C * 3 * Cl;
	case NN_QKVB: return 3 * Cl;
	case NN_ATTPROJW: return Cl * C;
	case NN_FCW: return C * 4 * Cl;
	case NN_FCB: return 4 * Cl;
	case NN_FCPROJW: return 4 * Cl * C;
	default: return 0;
	}
}

void nn_shard_param_sizes(const struct nn_config *c, const struct nn_shard *s, size_t sizes[NN_NPARAMS])
{
	size_t V = (size_t)c->vocab_size, T = (size_t)c->max_seq, C = (size_t)c->n_embd;
	size_t Ll = (size_t)(s->layer_end - s->layer_begin);
	for (int i = 0; i < NN_NPARAMS; i++)
		sizes[i] = Ll * nn_layer_size(c, s, i);
	sizes[NN_WTE] = s->has_embed || s->has_head ? V * C : 0;
	sizes[NN_WPE] = s->has_embed ? T * C : 0;
	sizes[NN_LNFW] = s->has_head ? C : 0;
	sizes[NN_LNFB] = s->has_head ? C : 0;
}

enum nn_tp_split nn_param_tp_split(enum nn_param_id id)
{
	switch (id) {
	case NN_QKVW: case NN_QKVB: case NN_FCW: case NN_FCB: return NN_TP_COLUMNS;
	case NN_ATTPROJW: case NN_FCPROJW: return NN_TP_ROWS;
	default: return NN_TP_REPLICATED;
	}
}

/* The slice of one layer (or of the whole tensor for wte/wpe/lnf): local row i, segment k covers
 * full[(row0 + i)·fcols + col0[k] .. + ncol) and local[i·nseg·ncol + k·ncol .. + ncol). */
struct slice {
	int nlayers;            /* layers in this shard (1 for unstacked tensors) */
	size_t full_layer;      /* floats per full layer */
	size_t local_layer;     /* floats per local layer */
	int first_layer;        /* full layer index of local layer 0 */
	size_t fcols;           /* full row width */
	size_t row0, nrows;
	int nseg;
	size_t col0[3], ncol;
	int writer;             /* 1 if this shard writes the tensor in nn_shard_to_full */
};

static int slice_of(const struct nn_gpt *m, int id, struct slice *d)
{
	if (id < 0 || id >= NN_NPARAMS)
		return ascent_error(ASCENT_EINPUT, "parameter id %d is out of range [0, %d)", id, NN_NPARAMS);
	const struct nn_config *c = &m->cfg;
	const struct nn_shard *s = &m->shard;
	size_t C = (size_t)c->n_embd, P = (size_t)s->tp_size, r = (size_t)s->tp_rank, Cl = C / P;
	memset(d, 0, sizeof *d);
	d->nlayers = m->n_layer_local;
	d->first_layer = s->layer_begin;
	d->nseg = 1;
	d->writer = s->tp_rank == 0;
	size_t rows = 1, cols = C;
	switch (id) {
	case NN_WTE:
	case NN_WPE:
		d->nlayers = m->param_sizes[id] ? 1 : 0;
		d->first_layer = 0;
		rows = id == NN_WTE ? (size_t)c->vocab_size : (size_t)c->max_seq;
		d->writer = d->writer && s->has_embed;
		break;
	case NN_LNFW:
	case NN_LNFB:
		d->nlayers = s->has_head ? 1 : 0;
		d->first_layer = 0;
		break;
	case NN_QKVW:
	case NN_QKVB:
		rows = id == NN_QKVW ? C : 1;
		cols = 3 * C;
		d->nseg = 3;
		for (int k = 0; k < 3; k++)
			d->col0[k] = (size_t)k * C + r * Cl;
		d->ncol = Cl;
		d->writer = 1;
		break;
	case NN_FCW:
	case NN_FCB:
		rows = id == NN_FCW ? C : 1;
		cols = 4 * C;
		d->col0[0] = r * 4 * Cl;
		d->ncol = 4 * Cl;
		d->writer = 1;
		break;
	case NN_ATTPROJW:
		rows = C;
		d->row0 = r * Cl;
		d->nrows = Cl;
		d->writer = 1;
		break;
	case NN_FCPROJW:
		rows = 4 * C;
		d->row0 = r * 4 * Cl;
		d->nrows = 4 * Cl;
		d->writer = 1;
		break;
	default: /* replicated per-layer vectors */
		break;
	}
	d->fcols = cols;
	d->full_layer = rows * cols;
	if (!d->nrows)
		d->nrows = rows;
	if (!d->ncol)
		d->ncol = cols;
	d->local_layer = d->nrows * d->nseg * d->ncol;
	return 0;
}

/* dir 1: local → full; dir 0: full → local. */
static void copy_slice(const struct slice *d, float *full, float *local, int dir)
{
	for (int l = 0; l < d->nlayers; l++) {
		float *fl = full + (size_t)(d->first_layer + l) * d->full_layer;
		float *ll = local + (size_t)l * d->local_layer;
		for (size_t i = 0; i < d->nrows; i++)
			for (int k = 0; k < d->nseg; k++) {
				float *f = fl + (d->row0 + i) * d->fcols + d->col0[k];
				float *x = ll + (i * (size_t)d->nseg + (size_t)k) * d->ncol;
				if (dir)
					memcpy(f, x, d->ncol * sizeof(float));
				else
					memcpy(x, f, d->ncol * sizeof(float));
			}
	}
}

int nn_shard_to_full(const struct nn_gpt *m, int id, const float *local, float *full)
{
	struct slice d;
	int rc = slice_of(m, id, &d);
	if (rc)
		return rc;
	if (d.writer)
		copy_slice(&d, full, (float *)local, 1);
	return 0;
}

int nn_shard_from_full(const struct nn_gpt *m, int id, const float *full, float *local)
{
	struct slice d;
	int rc = slice_of(m, id, &d);
	if (rc)
		return rc;
	copy_slice(&d, (float *)full, local, 0);
	return 0;
}

int nn_gpt_layer_slice(const struct nn_gpt *m, int id, int layer, size_t *offset, size_t *count)
{
	size_t n = id >= 0 && id < NN_NPARAMS ? nn_layer_size(&m->cfg, &m->shard, id) : 0;
	if (!n)
		return ascent_error(ASCENT_EINPUT, "parameter id %d is not a per-layer tensor", id);
	if (layer < m->shard.layer_begin || layer >= m->shard.layer_end)
		return ascent_error(ASCENT_EINPUT, "layer %d is not in this shard's range [%d, %d)", layer,
				    m->shard.layer_begin, m->shard.layer_end);
	*offset = (size_t)(m->param[id] - m->params_mem) + (size_t)(layer - m->shard.layer_begin) * n;
	*count = n;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Weight init. The whole model draws each tensor from its own stream, rng_seed(seed, id + 1), in
 * full-tensor order. A shard replays the same stream one full layer at a time (rng_normal makes
 * pairs, so drawing in even-sized chunks gives the same numbers as one call) and keeps its slice. */

#define CHUNK 4096 /* even */

struct normal_stream {
	uint64_t st;
	float std;
	float buf[CHUNK];
	size_t pos, len;
};

static void stream_take(struct normal_stream *ns, float *out, size_t n)
{
	while (n) {
		if (ns->pos == ns->len) {
			rng_normal(&ns->st, ns->buf, CHUNK, 0.0f, ns->std);
			ns->pos = 0;
			ns->len = CHUNK;
		}
		size_t k = ns->len - ns->pos < n ? ns->len - ns->pos : n;
		memcpy(out, ns->buf + ns->pos, k * sizeof *out);
		ns->pos += k;
		out += k;
		n -= k;
	}
}

void nn_gpt_init_weights(struct nn_gpt *m, uint64_t seed)
{
	nn_gpt_params_changed(m);
	const struct nn_config *c = &m->cfg;
	float resid_std = 0.02f / sqrtf(2.0f * (float)c->n_layer);
	size_t full[NN_NPARAMS];
	nn_param_sizes(c, full);
	for (int i = 0; i < NN_NPARAMS; i++) {
		float *p = m->param[i];
		size_t n = m->param_sizes[i];
		if (!n)
			continue;
		float std = 0.02f;
		switch (i) {
		case NN_ATTPROJW:
		case NN_FCPROJW:
			std = resid_std;
			/* fall through */
		case NN_WTE:
		case NN_WPE:
		case NN_QKVW:
		case NN_FCW: {
			struct slice d;
			slice_of(m, i, &d);
			struct normal_stream *ns = malloc(sizeof *ns);
			float *tmp = malloc(d.full_layer * sizeof(float));
			if (!ns || !tmp) {
				/* cannot fail the void contract: fall back to one draw per element */
				free(ns);
				free(tmp);
				uint64_t st = rng_seed(seed, (uint64_t)i + 1);
				rng_normal(&st, p, n, 0.0f, std);
				log_warn("out of memory while initialising weights: shard %d values differ", i);
				break;
			}
			ns->st = rng_seed(seed, (uint64_t)i + 1);
			ns->std = std;
			ns->pos = ns->len = 0;
			int lo = d.first_layer, hi = d.first_layer + d.nlayers;
			for (int l = 0; l < hi; l++) {
				stream_take(ns, tmp, d.full_layer);
				if (l >= lo) {
					struct slice one = d;
					one.nlayers = 1;
					one.first_layer = 0;
					copy_slice(&one, tmp, p + (size_t)(l - lo) * d.local_layer, 0);
				}
			}
			free(tmp);
			free(ns);
			break;
		}
		case NN_LN1W:
		case NN_LN2W:
		case NN_LNFW:
			for (size_t k = 0; k < n; k++)
				p[k] = 1.0f;
			break;
		default:
			memset(p, 0, n * sizeof *p);
		}
	}
}
