/* nn/gpt.c — the GPT-2 model object for one shard: the parameter and gradient blocks, the
 * activation slots and the shared workspace (each one block, reported to the profiler's memory
 * accounting), the settings (recompute, precision, gradient-ready callback) and the whole-model
 * entry points. The forward and backward themselves are in stage.c, shapes and mapping in shard.c. */
#include "nn/internal.h"

#include "common/common.h"
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Parameters */

void nn_layer_params_at(const struct nn_gpt *m, float *const t[NN_NPARAMS], int l, struct nn_layer_params *p)
{
	const struct nn_config *c = &m->cfg;
	const struct nn_shard *s = &m->shard;
	size_t L = (size_t)l;
#define LP(f, id) p->f = t[id] + L * nn_layer_size(c, s, id)
	LP(ln1w, NN_LN1W);
	LP(ln1b, NN_LN1B);
	LP(qkvw, NN_QKVW);
	LP(qkvb, NN_QKVB);
	LP(attprojw, NN_ATTPROJW);
	LP(attprojb, NN_ATTPROJB);
	LP(ln2w, NN_LN2W);
	LP(ln2b, NN_LN2B);
	LP(fcw, NN_FCW);
	LP(fcb, NN_FCB);
	LP(fcprojw, NN_FCPROJW);
	LP(fcprojb, NN_FCPROJB);
#undef LP
}

int nn_gpt_init(struct nn_gpt *m, const struct nn_config *cfg)
{
	memset(m, 0, sizeof *m);
	int rc = nn_config_validate(cfg);
	if (rc)
		return rc;
	struct nn_shard s;
	nn_shard_whole(cfg, &s);
	return nn_gpt_init_shard(m, cfg, &s);
}

static int per_layer(int id)
{
	return id >= NN_LN1W && id <= NN_FCPROJB;
}

/* (Re)allocate the gradient block: every tensor, or (fn set: a gradient window) the unlayered
 * ones only; zeroed, reported to the profiler, the grad[] pointers set. */
static int grads_alloc(struct nn_gpt *m, nn_grad_dest_fn fn, void *arg)
{
	size_t n = 0;
	for (int i = 0; i < NN_NPARAMS; i++)
		if (!fn || !per_layer(i))
			n += m->param_sizes[i];
	float *g = calloc(n ? n : 1, sizeof(float));
	if (!g)
		return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB for the model's gradients (use a smaller "
				    "model, or ZeRO-2 under mpirun)", n * sizeof(float) >> 20);
	if (m->grads_mem)
		prof_mem_free(DB_MEM_GRAD, (int64_t)(m->n_grads * sizeof(float)), m->grads_mem);
	free(m->grads_mem);
	m->grads_mem = g;
	m->n_grads = n;
	prof_mem_alloc(DB_MEM_GRAD, (int64_t)(n * sizeof(float)), g);
	size_t off = 0;
	for (int i = 0; i < NN_NPARAMS; i++) {
		if (fn && per_layer(i)) {
			m->grad[i] = NULL;
			continue;
		}
		m->grad[i] = g + off;
		off += m->param_sizes[i];
	}
	m->grad_dest = fn;
	m->grad_dest_arg = arg;
	return 0;
}

int nn_gpt_init_shard(struct nn_gpt *m, const struct nn_config *cfg, const struct nn_shard *s)
{
	return nn_gpt_init_shard_window(m, cfg, s, NULL, NULL);
}

int nn_gpt_init_shard_window(struct nn_gpt *m, const struct nn_config *cfg, const struct nn_shard *s,
			     nn_grad_dest_fn fn, void *arg)
{
	memset(m, 0, sizeof *m);
	int rc = nn_config_validate(cfg);
	if (!rc)
		rc = nn_shard_validate(cfg, s);
	if (rc)
		return rc;
	m->cfg = *cfg;
	m->shard = *s;
	if (s->tp_size == 1)
		m->shard.tp = NULL;
	m->n_layer_local = s->layer_end - s->layer_begin;
	nn_shard_param_sizes(cfg, s, m->param_sizes);
	for (int i = 0; i < NN_NPARAMS; i++)
		m->n_params += m->param_sizes[i];
	m->params_mem = calloc(m->n_params ? m->n_params : 1, sizeof(float));
	if (!m->params_mem) {
		size_t mb = m->n_params * sizeof(float) >> 20;
		memset(m, 0, sizeof *m);
		return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB for the model's parameters (use a "
				    "smaller model)", mb);
	}
	if ((rc = grads_alloc(m, fn, arg))) {
		free(m->params_mem);
		memset(m, 0, sizeof *m);
		return rc;
	}
	prof_mem_alloc(DB_MEM_PARAM, (int64_t)(m->n_params * sizeof(float)), m->params_mem);
	size_t off = 0;
	for (int i = 0; i < NN_NPARAMS; i++) {
		m->param[i] = m->params_mem + off;
		off += m->param_sizes[i];
	}
	m->loss = -1.0f;
	return 0;
}

static void slot_free(struct nn_slot *sl)
{
	if (sl->mem)
		prof_mem_free(DB_MEM_ACTIVATION, (int64_t)(sl->cap_floats * sizeof(float)), sl->mem);
	if (sl->tok)
		prof_mem_free(DB_MEM_ACTIVATION, (int64_t)(2 * sl->cap_tok * sizeof(int)), sl->tok);
	if (sl->soft)
		prof_mem_free(DB_MEM_ACTIVATION, (int64_t)(sl->cap_soft * sizeof(float)), sl->soft);
	free(sl->mem);
	free(sl->tok);
	free(sl->soft);
	memset(sl, 0, sizeof *sl);
}

void nn_gpt_release(struct nn_gpt *m)
{
	if (!m)
		return;
	if (m->params_mem) {
		prof_mem_free(DB_MEM_PARAM, (int64_t)(m->n_params * sizeof(float)), m->params_mem);
		prof_mem_free(DB_MEM_GRAD, (int64_t)(m->n_grads * sizeof(float)), m->grads_mem);
	}
	free(m->params_mem);
	free(m->grads_mem);
	struct nn_acts *a = m->acts;
	if (a) {
		for (int i = 0; i < a->nslots; i++)
			slot_free(&a->slot[i]);
		free(a->slot);
		if (a->ws)
			prof_mem_free(DB_MEM_WORKSPACE, (int64_t)(a->ws_cap * sizeof(float)), a->ws);
		free(a->ws);
		if (a->wb)
			prof_mem_free(DB_MEM_WORKSPACE, (int64_t)(a->wb_cap * sizeof(uint16_t)), a->wb);
		free(a->wb);
		free(a);
	}
	nn_fq_release(m);
	memset(m, 0, sizeof *m);
}

void nn_gpt_zero_grad(struct nn_gpt *m)
{
	nn_zero_floats(m->grads_mem, m->n_grads);
}

int nn_gpt_set_grad_window(struct nn_gpt *m, nn_grad_dest_fn fn, void *arg)
{
	return grads_alloc(m, fn, arg);
}

size_t nn_gpt_layer_grad_floats(const struct nn_gpt *m)
{
	size_t n = 0;
	for (int i = NN_LN1W; i <= NN_FCPROJB; i++)
		n += nn_layer_size(&m->cfg, &m->shard, i);
	return n;
}

int nn_gpt_layer_grad_offset(const struct nn_gpt *m, int id, size_t *offset, size_t *count)
{
	if (id < 0 || id >= NN_NPARAMS || !per_layer(id))
		return ascent_error(ASCENT_EINPUT, "parameter id %d is not a per-layer tensor", id);
	size_t off = 0;
	for (int i = NN_LN1W; i < id; i++)
		off += nn_layer_size(&m->cfg, &m->shard, i);
	*offset = off;
	*count = nn_layer_size(&m->cfg, &m->shard, id);
	return 0;
}

int nn_layer_grads(struct nn_gpt *m, int l, struct nn_layer_params *g)
{
	if (!m->grad_dest) {
		nn_layer_params_at(m, m->grad, l, g);
		return 0;
	}
	float *buf = m->grad_dest(m->grad_dest_arg, m, m->shard.layer_begin + l);
	if (!buf)
		return ascent_error(ASCENT_EINTERNAL, "the gradient window gave no buffer for block %d",
				    m->shard.layer_begin + l);
	float *t[NN_NPARAMS] = { 0 };
	size_t off = 0;
	for (int i = NN_LN1W; i <= NN_FCPROJB; i++) {
		t[i] = buf + off;
		off += nn_layer_size(&m->cfg, &m->shard, i);
	}
	nn_layer_params_at(m, t, 0, g);
	return 0;
}

void nn_gpt_set_recompute(struct nn_gpt *m, int on)
{
	m->recompute = on != 0;
}

void nn_gpt_set_precision(struct nn_gpt *m, enum nn_precision p)
{
	m->precision = p;
}

void nn_gpt_set_grad_ready(struct nn_gpt *m, nn_grad_ready_fn fn, void *arg)
{
	m->grad_ready = fn;
	m->grad_ready_arg = arg;
}

/* ------------------------------------------------------------------------------------------ */
/* Activation slots and the workspace */

#define TAKE(ptr, n)                                                \
	do {                                                        \
		(ptr) = base ? base + off : NULL;                   \
		off += ((size_t)(n) + 15) & ~(size_t)15; /* 64 B */ \
	} while (0)

/* Floats per layer of a stacked activation, rounded up to 16 (64 bytes): every layer's buffers are
 * then as aligned as the recompute buffers, so both paths run the same code paths (bitwise equal). */
static size_t rnd16(size_t n)
{
	return (n + 15) & ~(size_t)15;
}

/* Floats holding n bf16 values, rounded up to 16 floats like rnd16. */
static size_t rnd16h(size_t n)
{
	return rnd16((n + 1) / 2);
}

/* Lay out one block's activations ×`nl` layers (stacked) at base+off; bf16: with the bf16 copies
 * of the linear layers' inputs. */
static size_t layer_layout(struct nn_layer_acts *la, const struct nn_gpt *m, int B, int T, size_t nl, int bf16,
			   float *base, size_t off)
{
	size_t N = (size_t)B * T, C = (size_t)m->cfg.n_embd, P = (size_t)m->shard.tp_size, Cl = C / P;
	size_t Hl = (size_t)m->cfg.n_head / P;
	TAKE(la->ln1, nl * rnd16(N * C));
	TAKE(la->ln1_mean, nl * rnd16(N));
	TAKE(la->ln1_rstd, nl * rnd16(N));
	TAKE(la->qkv, nl * rnd16(N * 3 * Cl));
	TAKE(la->atty, nl * rnd16(N * Cl));
	TAKE(la->att_lse, nl * rnd16((size_t)B * Hl * T));
	TAKE(la->res2, nl * rnd16(N * C));
	TAKE(la->ln2, nl * rnd16(N * C));
	TAKE(la->ln2_mean, nl * rnd16(N));
	TAKE(la->ln2_rstd, nl * rnd16(N));
	TAKE(la->fch, nl * rnd16(N * 4 * Cl));
	TAKE(la->fch_gelu, nl * rnd16(N * 4 * Cl));
	la->ln1_h = la->atty_h = la->ln2_h = la->fch_gelu_h = NULL;
	if (bf16) {
		float *p;
		TAKE(p, nl * rnd16h(N * C));
		la->ln1_h = (uint16_t *)p;
		TAKE(p, nl * rnd16h(N * Cl));
		la->atty_h = (uint16_t *)p;
		TAKE(p, nl * rnd16h(N * C));
		la->ln2_h = (uint16_t *)p;
		TAKE(p, nl * rnd16h(N * 4 * Cl));
		la->fch_gelu_h = (uint16_t *)p;
	}
	return off;
}

static size_t slot_layout(struct nn_slot *sl, const struct nn_gpt *m, int B, int T, int recompute, int bf16,
			  float *base)
{
	size_t N = (size_t)B * T, C = (size_t)m->cfg.n_embd, V = (size_t)m->cfg.vocab_size;
	size_t Ll = (size_t)m->n_layer_local, off = 0;
	TAKE(sl->residual, (Ll + 1) * N * C);
	if (!recompute && Ll)
		off = layer_layout(&sl->st, m, B, T, Ll, bf16, base, off);
	else
		memset(&sl->st, 0, sizeof sl->st);
	if (m->shard.has_head) {
		TAKE(sl->lnf, N * C);
		TAKE(sl->lnf_mean, N);
		TAKE(sl->lnf_rstd, N);
		TAKE(sl->logits, N * V);
		TAKE(sl->lse, N);
		TAKE(sl->losses, N);
	}
	return off;
}

static size_t ws_layout(struct nn_acts *a, const struct nn_gpt *m, int B, int T, int recompute, float *base)
{
	size_t N = (size_t)B * T, C = (size_t)m->cfg.n_embd, V = (size_t)m->cfg.vocab_size;
	size_t P = (size_t)m->shard.tp_size, Cl = C / P, off = 0;
	TAKE(a->dres, N * C);
	TAKE(a->dbuf_c, N * C);
	TAKE(a->dbuf_4c, N * 4 * Cl);
	if (m->shard.has_head)
		TAKE(a->dlogits, N * V);
	else
		a->dlogits = NULL;
	TAKE(a->attn_scratch, nn_attention_scratch_floats(T, (int)Cl, m->cfg.n_head / (int)P, 0));
	if (recompute && m->n_layer_local)
		off = layer_layout(&a->rc, m, B, T, 1, nn_bf16_active(m), base, off);
	else
		memset(&a->rc, 0, sizeof a->rc);
	a->pa_n = a->pb_n = 0;
	a->pa = a->pb = NULL;
	if (m->precision != NN_FP32) {
		size_t D = C > 4 * Cl ? C : 4 * Cl;
		D = D > V ? D : V;
		size_t w = C * 4 * Cl > V * C ? C * 4 * Cl : V * C;
		a->pa_n = N * D;
		a->pb_n = N * D > w ? N * D : w;
		TAKE(a->pa, a->pa_n);
		TAKE(a->pb, a->pb_n);
		TAKE(a->dres_sum, C);
	} else {
		a->dres_sum = NULL;
	}
	a->dres_carry = 0;
	a->fq_x = a->fq_w = a->fq_s = NULL;
	if (m->fq) {
		size_t D = C > 4 * Cl ? C : 4 * Cl;
		TAKE(a->fq_x, N * D);
		TAKE(a->fq_w, C * 4 * Cl);
		TAKE(a->fq_s, D);
	}
	return off;
}
#undef TAKE

static int acts_get(struct nn_gpt *m)
{
	if (m->acts)
		return 0;
	m->acts = calloc(1, sizeof *m->acts);
	if (!m->acts)
		return ascent_error(ASCENT_ENOMEM, "cannot allocate the activation descriptor");
	m->acts->last = -1;
	return 0;
}

int nn_ws_ensure(struct nn_gpt *m, int B, int T, int recompute)
{
	int rc = acts_get(m);
	if (rc)
		return rc;
	struct nn_acts *a = m->acts;
	size_t need = ws_layout(a, m, B, T, recompute, NULL);
	if (need > a->ws_cap) {
		float *mem = aligned_alloc(64, need * sizeof(float));
		if (!mem)
			return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB of workspace for B=%d T=%d "
					    "(use a smaller batch or sequence)", need * sizeof(float) >> 20, B, T);
		if (a->ws)
			prof_mem_free(DB_MEM_WORKSPACE, (int64_t)(a->ws_cap * sizeof(float)), a->ws);
		free(a->ws);
		a->ws = mem;
		a->ws_cap = need;
		prof_mem_alloc(DB_MEM_WORKSPACE, (int64_t)(need * sizeof(float)), mem);
	}
	ws_layout(a, m, B, T, recompute, a->ws);
	return 0;
}

int nn_slot_ensure(struct nn_gpt *m, int s, int B, int T, int preserve)
{
	int rc = acts_get(m);
	if (rc)
		return rc;
	struct nn_acts *a = m->acts;
	if (s >= a->nslots) {
		struct nn_slot *ns = realloc(a->slot, (size_t)(s + 1) * sizeof *ns);
		if (!ns)
			return ascent_error(ASCENT_ENOMEM, "cannot allocate %d activation slots", s + 1);
		memset(ns + a->nslots, 0, (size_t)(s + 1 - a->nslots) * sizeof *ns);
		a->slot = ns;
		a->nslots = s + 1;
	}
	struct nn_slot *sl = &a->slot[s];
	const int bf16 = nn_bf16_active(m);
	size_t need = slot_layout(sl, m, B, T, m->recompute, bf16, NULL), ntok = (size_t)B * T;
	if (need > sl->cap_floats || ntok > sl->cap_tok) {
		size_t nf = need > sl->cap_floats ? need : sl->cap_floats;
		size_t nt = ntok > sl->cap_tok ? ntok : sl->cap_tok;
		float *mem = aligned_alloc(64, nf * sizeof(float));
		int *tok = malloc(2 * nt * sizeof(int));
		if (!mem || !tok) {
			free(mem);
			free(tok);
			return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB of activations for B=%d T=%d "
					    "(use a smaller batch or sequence, or --recompute)", nf * sizeof(float) >> 20,
					    B, T);
		}
		struct nn_slot old = *sl;
		float *soft = sl->soft;   /* its own block: kept as it is */
		sl->soft = NULL;
		if (preserve && old.B) {
			/* the live micro-batch keeps its layout: same offsets in the bigger block */
			memcpy(mem, old.mem, old.cap_floats * sizeof(float));
			memcpy(tok, old.tok, old.cap_tok * sizeof(int));
			memcpy(tok + nt, old.tok + old.cap_tok, old.cap_tok * sizeof(int));
		}
		slot_free(sl);
		sl->mem = mem;
		sl->cap_floats = nf;
		sl->tok = tok;
		sl->cap_tok = nt;
		sl->soft = soft;
		sl->cap_soft = old.cap_soft;
		prof_mem_alloc(DB_MEM_ACTIVATION, (int64_t)(nf * sizeof(float)), mem);
		prof_mem_alloc(DB_MEM_ACTIVATION, (int64_t)(2 * nt * sizeof(int)), tok);
		if (preserve && old.B) {
			sl->B = old.B;
			sl->T = old.T;
			sl->recompute = old.recompute;
			sl->bf16 = old.bf16;
			sl->has_targets = old.has_targets;
			sl->has_soft = old.has_soft;
			sl->loss = old.loss;
		}
	}
	if (preserve && sl->B) {
		slot_layout(sl, m, sl->B, sl->T, sl->recompute, sl->bf16, sl->mem);
		return 0;
	}
	slot_layout(sl, m, B, T, m->recompute, bf16, sl->mem);
	sl->recompute = m->recompute;
	sl->bf16 = bf16;
	return 0;
}

void nn_slot_layer(const struct nn_gpt *m, const struct nn_slot *sl, int l, struct nn_layer_acts *la)
{
	size_t N = (size_t)sl->B * sl->T, C = (size_t)m->cfg.n_embd, P = (size_t)m->shard.tp_size, Cl = C / P;
	size_t Hl = (size_t)m->cfg.n_head / P, L = (size_t)l;
	la->ln1 = sl->st.ln1 + L * rnd16(N * C);
	la->ln1_mean = sl->st.ln1_mean + L * rnd16(N);
	la->ln1_rstd = sl->st.ln1_rstd + L * rnd16(N);
	la->qkv = sl->st.qkv + L * rnd16(N * 3 * Cl);
	la->atty = sl->st.atty + L * rnd16(N * Cl);
	la->att_lse = sl->st.att_lse + L * rnd16((size_t)sl->B * Hl * sl->T);
	la->res2 = sl->st.res2 + L * rnd16(N * C);
	la->ln2 = sl->st.ln2 + L * rnd16(N * C);
	la->ln2_mean = sl->st.ln2_mean + L * rnd16(N);
	la->ln2_rstd = sl->st.ln2_rstd + L * rnd16(N);
	la->fch = sl->st.fch + L * rnd16(N * 4 * Cl);
	la->fch_gelu = sl->st.fch_gelu + L * rnd16(N * 4 * Cl);
	la->ln1_h = la->atty_h = la->ln2_h = la->fch_gelu_h = NULL;
	if (sl->st.ln1_h) {
		la->ln1_h = sl->st.ln1_h + L * 2 * rnd16h(N * C);
		la->atty_h = sl->st.atty_h + L * 2 * rnd16h(N * Cl);
		la->ln2_h = sl->st.ln2_h + L * 2 * rnd16h(N * C);
		la->fch_gelu_h = sl->st.fch_gelu_h + L * 2 * rnd16h(N * 4 * Cl);
	}
}

int nn_gpt_set_slots(struct nn_gpt *m, int nslots, int B, int T)
{
	if (nslots < 1 || nslots > 65536 || B < 1 || T < 1 || T > m->cfg.max_seq || (int64_t)B * T > (1 << 28))
		return ascent_error(ASCENT_EINPUT, "cannot size %d activation slots for B=%d T=%d (need 1..65536 "
				    "slots, B >= 1, 1 <= T <= %d)", nslots, B, T, m->cfg.max_seq);
	int rc = nn_ws_ensure(m, B, T, m->recompute);
	for (int s = 0; !rc && s < nslots; s++)
		rc = nn_slot_ensure(m, s, B, T, 1);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* The whole-model entry points */

int nn_gpt_forward(struct nn_gpt *m, const int *inputs, const int *targets, int B, int T)
{
	if (!m->params_mem)
		return ascent_error(ASCENT_EINTERNAL, "nn_gpt_forward: model is not initialised");
	if (!m->shard.has_embed || !m->shard.has_head)
		return ascent_error(ASCENT_EINTERNAL, "nn_gpt_forward needs a shard with the embedding and the head "
				    "(use nn_gpt_stage_forward)");
	return nn_gpt_stage_forward(m, 0, inputs, NULL, targets, B, T);
}

int nn_gpt_backward(struct nn_gpt *m, float scale)
{
	struct nn_acts *a = m->acts;
	if (!a || a->last < 0)
		return ascent_error(ASCENT_EINTERNAL, "nn_gpt_backward needs a forward with targets first");
	if (!m->shard.has_embed || !m->shard.has_head)
		return ascent_error(ASCENT_EINTERNAL, "nn_gpt_backward needs a shard with the embedding and the "
				    "head (use nn_gpt_stage_backward)");
	return nn_gpt_stage_backward(m, a->last, NULL, scale, NULL);
}

const float *nn_gpt_logits(const struct nn_gpt *m)
{
	const struct nn_acts *a = m->acts;
	if (!a || a->last < 0 || !m->shard.has_head)
		return NULL;
	return a->slot[a->last].logits;
}

const float *nn_gpt_stage_output(const struct nn_gpt *m, int slot)
{
	const struct nn_acts *a = m->acts;
	if (!a || slot < 0 || slot >= a->nslots || !a->slot[slot].B || m->shard.has_head)
		return NULL;
	const struct nn_slot *sl = &a->slot[slot];
	return sl->residual + (size_t)m->n_layer_local * sl->B * sl->T * m->cfg.n_embd;
}

float nn_gpt_slot_loss(const struct nn_gpt *m, int slot)
{
	const struct nn_acts *a = m->acts;
	if (!a || slot < 0 || slot >= a->nslots || !a->slot[slot].B || !a->slot[slot].has_targets)
		return -1.0f;
	return a->slot[slot].loss;
}
