/* nn/stage.c — forward and backward of one model shard for one micro-batch (an activation slot):
 * the embedding, the transformer blocks with Megatron tensor parallelism (the f/g conjugate
 * operators as allreduces on the TP communicator), activation recomputation, the head and the
 * loss, the gradient-ready callback, and a profiler op range (name, layer, FLOPs) around each op. */
#include "nn/internal.h"

#include "comm/comm.h"
#include "common/common.h"
#include "profiler/prof.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* One op inside a profiler range: with profiling off, one predictable branch at each end. */
#define OP(name, layer, flops, ...)                                                    \
	do {                                                                           \
		struct prof_tok op_tok_ = prof_op_begin((name), (layer), (flops));     \
		__VA_ARGS__;                                                           \
		prof_op_end(&op_tok_);                                                 \
	} while (0)

/* In-place SUM over the shard's TP group (f's backward, g's forward). */
static int tp_allreduce(struct nn_gpt *m, float *x, size_t n)
{
	return comm_allreduce(m->shard.tp, COMM_TP, x, x, n, COMM_F32, COMM_SUM);
}

/* db (OC) += column sums of dout (N,OC); each thread owns a range of columns. */
static void colsum_add(float *db, const float *dout, int N, int OC)
{
#pragma omp parallel
	{
		size_t nt = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
		size_t lo = (size_t)OC * id / nt, hi = (size_t)OC * (id + 1) / nt;
		for (int i = 0; i < N; i++) {
			const float *d = dout + (size_t)i * OC;
#pragma omp simd
			for (size_t c = lo; c < hi; c++)
				db[c] += d[c];
		}
	}
}

/* Linear layers in the model's precision (fp32: the plain kernels, unchanged), with fake
 * quantization when q is not NULL: Q(w), Q(x) in the forward; the straight-through estimator in the
 * backward (Q(w), Q(x) recomputed, dinp masked where a static code of x was clamped). out_h (bf16
 * only; NULL: none): the forward's result goes there in bf16 instead, and out (N,OC) is only the
 * scratch of the fallback where oneDNN refuses the bf16 product. */
static void linear_fwd(struct nn_gpt *m, const struct nn_fq_layer *q, float *out, uint16_t *out_h, const float *inp,
		       const float *w, const float *b, int N, int IC, int OC, const uint16_t *inp_h, const uint16_t *w_h)
{
	if (q) {
		inp_h = w_h = NULL; /* the bf16 copies are of the plain operands */
		w = nn_fq_quant_weight(m, q, w, IC, OC);
		inp = nn_fq_quant_input(m, q, inp, N, IC);
	}
	if (m->precision == NN_FP32) {
		nn_linear_forward(out, inp, w, b, N, IC, OC);
		return;
	}
	if (nn_linear_fwd_bf16(m, out, out_h, inp, w, b, N, IC, OC, inp_h, w_h) == 0)
		return;
	if (b) {
#pragma omp parallel for schedule(static)
		for (int i = 0; i < N; i++)
			memcpy(out + (size_t)i * OC, b, (size_t)OC * sizeof *b);
	}
	nn_gemm_prec(m, 'N', 'N', N, OC, IC, inp, IC, w, OC, b ? 1.0f : 0.0f, out, OC, 1);
	if (out_h)
		nn_bf16_from_f32(out_h, out, (size_t)N * OC);
}

/* The backward of linear_fwd's layer; dinp_h as in nn_linear_bwd_bf16 (bf16 only; 1 returned when
 * dinp was made in fp32 instead). dout may be NULL where the op before made only dout_h (bf16 only,
 * db NULL). 0, 1 or an error. */
static int linear_bwd(struct nn_gpt *m, const struct nn_fq_layer *q, float *dinp, uint16_t *dinp_h, float *dw,
		      float *db, const float *dout, const float *inp, const float *w, int N, int IC, int OC,
		      const uint16_t *inp_h, const uint16_t *w_h, const uint16_t *dout_h)
{
	const float *x = inp;
	int rc = 0;
	if (q) {
		inp_h = w_h = NULL;
		w = nn_fq_quant_weight(m, q, w, IC, OC);
		inp = nn_fq_quant_input(m, q, inp, N, IC);
	}
	if (m->precision == NN_FP32) {
		nn_linear_backward(dinp, dw, db, dout, inp, w, N, IC, OC);
	} else {
		rc = nn_linear_bwd_bf16(m, dinp, dinp_h, dw, db, dout, inp, w, N, IC, OC, inp_h, w_h, dout_h);
		if (rc == -1) {
			if (!dout)
				return ascent_error(ASCENT_EINTERNAL, "linear_bwd: a bf16-only gradient without bf16");
			if (dinp)
				nn_gemm_prec(m, 'N', 'T', N, IC, OC, dout, OC, w, OC, 0.0f, dinp, IC, 1);
			nn_gemm_prec(m, 'T', 'N', IC, OC, N, inp, IC, dout, OC, 1.0f, dw, OC, 0);
			if (db)
				colsum_add(db, dout, N, OC);
			rc = dinp_h != NULL;
		} else if (rc < 0) {
			return rc;
		}
	}
	if (q && dinp)
		nn_fq_ste(m, q, dinp, x, (size_t)N * IC);
	return rc;
}

/* Block l's bf16 operands: the weights' copies (nn_bf16_weights) and the inputs' (la's *_h); all
 * NULL (on = 0) unless the bf16 path runs and la has the copies. qkv: where the attention runs on
 * the tiles too, the qkv product is stored in bf16 only, in la->qkv's storage (half of it), and the
 * attention reads it there (no fp32 q, k, v are made; NULL otherwise). */
struct nn_layer_h {
	int on;
	const uint16_t *qkvw, *attprojw, *fcw, *fcprojw, *ln1, *atty, *ln2, *fch_gelu;
	uint16_t *qkv;
};

static void layer_h(const struct nn_gpt *m, int l, const struct nn_layer_acts *la, struct nn_layer_h *h)
{
	memset(h, 0, sizeof *h);
	const struct nn_acts *a = m->acts;
	if (!la->ln1_h || !a->wb || !nn_bf16_active(m))
		return;
	h->on = 1;
	h->qkvw = a->wb_t[NN_QKVW] + (size_t)l * nn_layer_size(&m->cfg, &m->shard, NN_QKVW);
	h->attprojw = a->wb_t[NN_ATTPROJW] + (size_t)l * nn_layer_size(&m->cfg, &m->shard, NN_ATTPROJW);
	h->fcw = a->wb_t[NN_FCW] + (size_t)l * nn_layer_size(&m->cfg, &m->shard, NN_FCW);
	h->fcprojw = a->wb_t[NN_FCPROJW] + (size_t)l * nn_layer_size(&m->cfg, &m->shard, NN_FCPROJW);
	h->ln1 = la->ln1_h;
	h->atty = la->atty_h;
	h->ln2 = la->ln2_h;
	h->fch_gelu = la->fch_gelu_h;
	h->qkv = nn_attention_bf16_tiles() ? (uint16_t *)la->qkv : NULL;
}

/* ------------------------------------------------------------------------------------------ */
/* One transformer block (LOCAL index l) for a slot of shape (B,T): `in` (N,C) is its input
 * residual, `out` (N,C) its output; activations go to `la`. full = 0 (recomputation) stops after
 * the GELU: the backward needs nothing the last projection makes. The residual adds are fused
 * with the LayerNorm after them: prev_res2 (NULL: none) = the previous block's res2, whose add to
 * `in` that block left to this one (in += prev_res2 in LN1's pass); defer: leave this block's own
 * last add (out += res2) to the next block. */

static int block_forward(struct nn_gpt *m, int B, int T, int l, float *in, float *out,
			 const struct nn_layer_acts *la, int full, const float *prev_res2, int defer)
{
	const struct nn_config *c = &m->cfg;
	const int P = m->shard.tp_size, N = B * T, C = c->n_embd, Cl = C / P, Hl = c->n_head / P;
	const int gl = m->shard.layer_begin + l, lead = m->shard.tp_rank == 0;
	const double n = (double)N;
	struct nn_layer_params p;
	int rc;
	nn_layer_params_at(m, m->param, l, &p);
	const struct nn_fq_layer *fq[NN_FQ_PER_LAYER];
	for (int k = 0; k < NN_FQ_PER_LAYER; k++)
		fq[k] = nn_fq_layer_at(m, gl, k);
	struct nn_layer_h wh;
	layer_h(m, l, la, &wh);

	if (prev_res2)
		OP("residual_layernorm", gl, 0,
		   nn_residual_layernorm_forward(in, la->ln1, wh.on ? la->ln1_h : NULL, la->ln1_mean, la->ln1_rstd, in,
						 prev_res2, p.ln1w, p.ln1b, N, C));
	else
		OP("layernorm", gl, 0, {
			if (wh.on)
				nn_layernorm_forward_bf16(la->ln1, la->ln1_h, la->ln1_mean, la->ln1_rstd, in, p.ln1w, p.ln1b,
							  N, C);
			else
				nn_layernorm_forward(la->ln1, la->ln1_mean, la->ln1_rstd, in, p.ln1w, p.ln1b, N, C);
		});
	/* bf16 q, k, v: the fallback's fp32 product goes to dbuf_4c, which only the backward uses */
	OP("matmul_qkv", gl, 2.0 * n * C * 3 * Cl,
	   linear_fwd(m, fq[NN_FQ_QKV], wh.qkv ? m->acts->dbuf_4c : la->qkv, wh.qkv, la->ln1, p.qkvw, p.qkvb, N, C,
		      3 * Cl, wh.ln1, wh.qkvw));
	OP("attention", gl, 4.0 * n * T * Cl, {
		if (wh.on)
			nn_attention_forward_bf16(la->atty, la->atty_h, la->att_lse, m->acts->attn_scratch,
						  wh.qkv ? NULL : la->qkv, wh.qkv, B, T, Cl, Hl);
		else
			nn_attention_forward(la->atty, la->att_lse, m->acts->attn_scratch, la->qkv, B, T, Cl, Hl);
	});
	OP("matmul_attproj", gl, 2.0 * n * Cl * C,
	   linear_fwd(m, fq[NN_FQ_ATTPROJ], la->res2, NULL, la->atty, p.attprojw, lead ? p.attprojb : NULL, N, Cl, C, wh.atty,
		      wh.attprojw));
	if (P > 1 && (rc = tp_allreduce(m, la->res2, (size_t)N * C)))
		return rc;
	OP("residual_layernorm", gl, 0,
	   nn_residual_layernorm_forward(la->res2, la->ln2, wh.on ? la->ln2_h : NULL, la->ln2_mean, la->ln2_rstd,
					 la->res2, in, p.ln2w, p.ln2b, N, C));
	OP("matmul_fc", gl, 2.0 * n * C * 4 * Cl,
	   linear_fwd(m, fq[NN_FQ_FC], la->fch, NULL, la->ln2, p.fcw, p.fcb, N, C, 4 * Cl, wh.ln2, wh.fcw));
	OP("gelu", gl, 0, {
		if (wh.on)
			nn_gelu_forward_bf16(la->fch_gelu, la->fch_gelu_h, la->fch, (size_t)N * 4 * Cl);
		else
			nn_gelu_forward(la->fch_gelu, la->fch, (size_t)N * 4 * Cl);
	});
	if (!full)
		return 0;
	OP("matmul_fcproj", gl, 2.0 * n * 4 * Cl * C,
	   linear_fwd(m, fq[NN_FQ_FCPROJ], out, NULL, la->fch_gelu, p.fcprojw, lead ? p.fcprojb : NULL, N, 4 * Cl,
		      C, wh.fch_gelu, wh.fcprojw));
	if (P > 1 && (rc = tp_allreduce(m, out, (size_t)N * C)))
		return rc;
	if (!defer)
		OP("residual", gl, 0, nn_residual_forward(out, out, la->res2, (size_t)N * C));
	return 0;
}

/* The LayerNorm backward that makes dres (+= into it), the residual gradient the block below,
 * global layer gl_below, gets next; below as in block_backward (0: no block follows). In bf16 (on),
 * unless fake quantization is on that block's fc projection (whose backward converts its own
 * operands), it also leaves dres's column sums and dres in bf16 for that projection (nn_acts'
 * dres_carry = below). */
static void ln_bwd_dres(struct nn_gpt *m, int on, int below, int gl_below, float *dres, float *dw, float *db,
			const float *dout, const float *inp, const float *w, const float *mean, const float *rstd, int N,
			int C)
{
	struct nn_acts *a = m->acts;
	const int carry = below && on && a->dres_sum && !nn_fq_layer_at(m, gl_below, NN_FQ_FCPROJ);
	if (carry) {
		memset(a->dres_sum, 0, (size_t)C * sizeof(float));
		nn_layernorm_backward_bf16(dres, nn_bf16_dout_buf(m), a->dres_sum, dw, db, dout, inp, w, mean, rstd, N, C);
	} else {
		nn_layernorm_backward(dres, dw, db, dout, inp, w, mean, rstd, N, C);
	}
	a->dres_carry = carry ? below : 0;
}

/* Backward of block l: on entry dres (N,C) is d(loss)/d(out); on return d(loss)/d(in). below: 0, no
 * block's backward follows on this workspace; 1, the block below (l - 1) follows after its
 * recomputation; 2, it follows at once. In bf16 the LayerNorm backward then leaves dres's column
 * sums (and with 2, whose pa no recomputation reuses between, dres in bf16) for that block's fc
 * projection (acts' dres_carry), which so need not read the fp32 dres for them; the sums are made
 * the same way either way, so recomputation changes no bit. */
static int block_backward(struct nn_gpt *m, int B, int T, int l, const float *in, float *dres,
			  const struct nn_layer_acts *la, int below)
{
	const struct nn_config *c = &m->cfg;
	struct nn_acts *a = m->acts;
	const int P = m->shard.tp_size, N = B * T, C = c->n_embd, Cl = C / P, Hl = c->n_head / P;
	const int gl = m->shard.layer_begin + l;
	const double n = (double)N;
	struct nn_layer_params p, g;
	int rc;
	nn_layer_params_at(m, m->param, l, &p);
	if ((rc = nn_layer_grads(m, l, &g)))
		return rc;
	float *d4 = a->dbuf_4c, *dc = a->dbuf_c;
	const struct nn_fq_layer *fq[NN_FQ_PER_LAYER];
	for (int k = 0; k < NN_FQ_PER_LAYER; k++)
		fq[k] = nn_fq_layer_at(m, gl, k);
	struct nn_layer_h wh;
	layer_h(m, l, la, &wh);

	/* bf16: the GELU's output gradient is the bf16 product (as autocast's matmul makes it; the fp32
	 * one is not stored), in d4's storage; not under fake quantization, whose straight-through
	 * mask applies to the fp32 gradient */
	uint16_t *dgelu_h = wh.on && !fq[NN_FQ_FCPROJ] ? (uint16_t *)d4 : NULL;
	/* bf16: fcprojb's gradient is dres's column sums made from 0, then added (so that it is the same
	 * whether the block above left them or not: grad accumulation adds to a nonzero start), and
	 * dres in bf16; either left by the block above (below) or made here in one pass */
	const int own = wh.on && a->dres_sum && !fq[NN_FQ_FCPROJ], carried = own ? a->dres_carry : 0;
	uint16_t *dout_h = own ? nn_bf16_dout_buf(m) : NULL;
	a->dres_carry = 0;
	OP("matmul_fcproj_bwd", gl, 4.0 * n * 4 * Cl * C, {
		if (own && !carried)
			memset(a->dres_sum, 0, (size_t)C * sizeof(float));
		if (own && carried < 2)
			nn_bf16_colsum(dout_h, carried ? NULL : a->dres_sum, dres, N, C);
		rc = linear_bwd(m, fq[NN_FQ_FCPROJ], d4, dgelu_h, g.fcprojw, own ? NULL : g.fcprojb, dres, la->fch_gelu,
				p.fcprojw, N, 4 * Cl, C, wh.fch_gelu, wh.fcprojw, dout_h);
		for (int k = 0; own && k < C; k++)
			g.fcprojb[k] += a->dres_sum[k];
	});
	if (rc == 1) /* oneDNN refused the bf16 destination: d4 holds the gradient in fp32 */
		dgelu_h = NULL;
	else if (rc)
		return rc;
	/* bf16: the GELU's backward writes its gradient in bf16 (only: the fc backward reads that) and
	 * fcb's gradient, which the fc backward would otherwise make in a pass of its own */
	uint16_t *d4h = wh.on ? nn_bf16_dout_buf(m) : NULL;
	OP("gelu_bwd", gl, 0, {
		if (d4h)
			nn_gelu_backward_bf16(dgelu_h ? NULL : d4, d4h, g.fcb, la->fch, d4, dgelu_h, N, 4 * Cl);
		else
			nn_gelu_backward(d4, la->fch, d4, (size_t)N * 4 * Cl);
	});
	OP("matmul_fc_bwd", gl, 4.0 * n * C * 4 * Cl,
	   rc = linear_bwd(m, fq[NN_FQ_FC], dc, NULL, g.fcw, d4h ? NULL : g.fcb, dgelu_h ? NULL : d4, la->ln2, p.fcw,
			   N, C, 4 * Cl, wh.ln2, wh.fcw, d4h));
	if (rc)
		return rc;
	if (P > 1 && (rc = tp_allreduce(m, dc, (size_t)N * C)))
		return rc;
	/* bf16: the LayerNorm's backward also writes the residual gradient in bf16 and attprojb's
	 * gradient, which the attention projection's backward reads */
	uint16_t *dres_h = wh.on ? nn_bf16_dout_buf(m) : NULL;
	OP("layernorm_bwd", gl, 0, {
		if (dres_h)
			nn_layernorm_backward_bf16(dres, dres_h, g.attprojb, g.ln2w, g.ln2b, dc, la->res2, p.ln2w,
						   la->ln2_mean, la->ln2_rstd, N, C);
		else
			nn_layernorm_backward(dres, g.ln2w, g.ln2b, dc, la->res2, p.ln2w, la->ln2_mean, la->ln2_rstd, N, C);
	});
	OP("matmul_attproj_bwd", gl, 4.0 * n * Cl * C,
	   rc = linear_bwd(m, fq[NN_FQ_ATTPROJ], dc, NULL, g.attprojw, dres_h ? NULL : g.attprojb, dres, la->atty,
			   p.attprojw, N, Cl, C, wh.atty, wh.attprojw, dres_h));
	if (rc)
		return rc;
	/* bf16: the attention's backward also writes its gradient in bf16 and qkvb's gradient, which
	 * the qkv backward would otherwise sum in a pass of its own */
	uint16_t *dqkv_h = wh.on ? nn_bf16_dout_buf(m) : NULL;
	int dqkv_f32 = 1; /* 0: the bf16 attention made only dqkv_h (and qkvb's gradient) */
	OP("attention_bwd", gl, 8.0 * n * T * Cl, {
		if (wh.on)
			dqkv_f32 = nn_attention_backward_bf16(d4, dqkv_h, g.qkvb, a->attn_scratch, dc,
							      wh.qkv ? NULL : la->qkv, wh.qkv, la->atty, la->att_lse, B,
							      T, Cl, Hl);
		else
			nn_attention_backward(d4, a->attn_scratch, dc, la->qkv, la->atty, la->att_lse, B, T, Cl, Hl);
	});
	OP("matmul_qkv_bwd", gl, 4.0 * n * C * 3 * Cl,
	   rc = linear_bwd(m, fq[NN_FQ_QKV], dc, NULL, g.qkvw, dqkv_h ? NULL : g.qkvb, dqkv_f32 ? d4 : NULL, la->ln1,
			   p.qkvw, N, C, 3 * Cl, wh.ln1, wh.qkvw, dqkv_h));
	if (rc)
		return rc;
	if (P > 1 && (rc = tp_allreduce(m, dc, (size_t)N * C)))
		return rc;
	OP("layernorm_bwd", gl, 0,
	   ln_bwd_dres(m, wh.on, below, gl - 1, dres, g.ln1w, g.ln1b, dc, in, p.ln1w, la->ln1_mean, la->ln1_rstd, N,
		       C));
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

static int check_tokens(const int *x, int N, int V, const char *what)
{
	for (int i = 0; i < N; i++)
		if (x[i] < 0 || x[i] >= V)
			return ascent_error(ASCENT_EINPUT, "%s token %d at position %d is outside the vocabulary "
					    "[0, %d)", what, x[i], i, V);
	return 0;
}

/* A row of soft targets must be a probability distribution: finite, >= 0, summing to 1 (1e-3). */
static int check_probs(const float *p, int N, int V)
{
	for (int i = 0; i < N; i++) {
		const float *r = p + (size_t)i * V;
		double s = 0;
		for (int v = 0; v < V; v++) {
			if (!(r[v] >= 0.0f) || !isfinite(r[v]))
				return ascent_error(ASCENT_EINPUT, "soft target %g at position %d, class %d is not a "
						    "probability (pass the teacher's softmax)", (double)r[v], i, v);
			s += r[v];
		}
		if (fabs(s - 1.0) > 1e-3)
			return ascent_error(ASCENT_EINPUT, "soft targets at position %d sum to %.6f, not 1 (pass the "
					    "teacher's softmax)", i, s);
	}
	return 0;
}

/* The forward of both entry points: integer targets, soft targets (probs), or neither. */
static int stage_forward(struct nn_gpt *m, int slot, const int *inputs, const float *in_act, const int *targets,
			 const float *probs, int B, int T)
{
	const struct nn_config *c = &m->cfg;
	const struct nn_shard *sh = &m->shard;
	if (!m->params_mem)
		return ascent_error(ASCENT_EINTERNAL, "nn_gpt_stage_forward: model is not initialised");
	if (slot < 0 || slot >= 65536)
		return ascent_error(ASCENT_EINPUT, "activation slot %d is outside [0, 65536)", slot);
	if (sh->tp_size > 1 && !sh->tp)
		return ascent_error(ASCENT_EUSAGE, "shard tp %d/%d has no TP communicator: it can map tensors "
				    "but not run (pass the struct comm in nn_shard.tp)", sh->tp_rank, sh->tp_size);
	if (B < 1 || T < 1)
		return ascent_error(ASCENT_EINPUT, "batch shape B=%d T=%d must be positive", B, T);
	if (T > c->max_seq)
		return ascent_error(ASCENT_EINPUT, "sequence length %d exceeds the model's max_seq %d "
				    "(use a shorter sequence)", T, c->max_seq);
	if ((int64_t)B * T > (1 << 28))
		return ascent_error(ASCENT_EINPUT, "batch B=%d T=%d is too large", B, T);
	const int N = B * T, V = c->vocab_size, C = c->n_embd, Ll = m->n_layer_local;
	int rc;
	if (sh->has_embed) {
		if (!inputs)
			return ascent_error(ASCENT_EINPUT, "the first pipeline chunk needs input token ids (inputs is NULL)");
		if ((rc = check_tokens(inputs, N, V, "input")))
			return rc;
	} else if (!in_act) {
		return ascent_error(ASCENT_EINPUT, "a pipeline chunk without the embedding needs the previous "
				    "stage's activation (in_act is NULL)");
	}
	if (sh->has_head && targets && (rc = check_tokens(targets, N, V, "target")))
		return rc;
	if (sh->has_head && probs && (rc = check_probs(probs, N, V)))
		return rc;
	if ((rc = nn_slot_ensure(m, slot, B, T, 0)) || (rc = nn_ws_ensure(m, B, T, m->recompute)))
		return rc;
	struct nn_acts *a = m->acts;
	struct nn_slot *sl = &a->slot[slot];
	const int soft = sh->has_head && probs;
	if (soft && sl->cap_soft < (size_t)N * V) {
		float *p = malloc((size_t)N * V * sizeof(float));
		if (!p)
			return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB of soft targets for B=%d T=%d",
					    (size_t)N * V * sizeof(float) >> 20, B, T);
		if (sl->soft)
			prof_mem_free(DB_MEM_ACTIVATION, (int64_t)(sl->cap_soft * sizeof(float)), sl->soft);
		free(sl->soft);
		sl->soft = p;
		sl->cap_soft = (size_t)N * V;
		prof_mem_alloc(DB_MEM_ACTIVATION, (int64_t)(sl->cap_soft * sizeof(float)), p);
	}
	sl->B = B;
	sl->T = T;
	sl->has_targets = sh->has_head && (targets || probs);
	sl->has_soft = soft;
	sl->loss = -1.0f;
	m->B = B;
	m->T = T;
	m->loss = -1.0f;
	a->last = slot;
	if (sh->has_embed)
		memcpy(sl->tok, inputs, (size_t)N * sizeof(int));
	if (sl->has_targets && !soft)
		memcpy(sl->tok + sl->cap_tok, targets, (size_t)N * sizeof(int));
	if (soft)
		memcpy(sl->soft, probs, (size_t)N * V * sizeof(float));

	if (sl->bf16 && Ll && (rc = nn_bf16_weights(m))) {
		sl->B = 0;
		a->last = -1;
		return rc;
	}
	float *res = sl->residual;
	if (sh->has_embed)
		OP("encoder", -1, 0, nn_encoder_forward(res, inputs, m->param[NN_WTE], m->param[NN_WPE], B, T, C));
	else
		memcpy(res, in_act, (size_t)N * C * sizeof(float));
	/* block l's last residual add is made by block l+1's first LayerNorm pass (with recomputation
	 * too: the shared buffers' res2 is still block l's until block l+1's attention projection) */
	const float *prev_res2 = NULL;
	for (int l = 0; l < Ll; l++) {
		struct nn_layer_acts la;
		if (sl->recompute)
			la = a->rc;
		else
			nn_slot_layer(m, sl, l, &la);
		rc = block_forward(m, B, T, l, res + (size_t)l * N * C, res + (size_t)(l + 1) * N * C, &la, 1, prev_res2,
				   l + 1 < Ll);
		prev_res2 = la.res2;
		if (rc) {
			sl->B = 0;
			a->last = -1;
			return rc;
		}
	}
	if (!sh->has_head)
		return 0;
	const float *x = res + (size_t)Ll * N * C;
	OP("layernorm", -1, 0,
	   nn_layernorm_forward(sl->lnf, sl->lnf_mean, sl->lnf_rstd, x, m->param[NN_LNFW], m->param[NN_LNFB], N, C));
	OP("matmul_lm_head", -1, 2.0 * N * C * V,
	   nn_gemm_prec(m, 'N', 'T', N, V, C, sl->lnf, C, m->param[NN_WTE], C, 0.0f, sl->logits, V, 1));
	if (soft)
		OP("kldiv", -1, 0, nn_kldiv_forward(sl->losses, sl->lse, sl->logits, sl->soft, N, V));
	else if (targets)
		OP("crossentropy", -1, 0, nn_crossentropy_forward(sl->losses, sl->lse, sl->logits, targets, N, V));
	if (sl->has_targets) {
		double s = 0;
		for (int i = 0; i < N; i++)
			s += sl->losses[i];
		sl->loss = (float)(s / N);
		m->loss = sl->loss;
	}
	return 0;
}

int nn_gpt_stage_forward(struct nn_gpt *m, int slot, const int *inputs, const float *in_act, const int *targets,
			 int B, int T)
{
	return stage_forward(m, slot, inputs, in_act, targets, NULL, B, T);
}

int nn_gpt_stage_forward_soft(struct nn_gpt *m, int slot, const int *inputs, const float *in_act,
			      const float *probs, int B, int T)
{
	if (m->shard.has_head && !probs)
		return ascent_error(ASCENT_EINPUT, "a distillation forward of the head chunk needs soft targets "
				    "(probs is NULL)");
	return stage_forward(m, slot, inputs, in_act, NULL, probs, B, T);
}

static int ready(struct nn_gpt *m, int layer)
{
	return m->grad_ready ? m->grad_ready(m->grad_ready_arg, m, layer) : 0;
}

int nn_gpt_stage_backward(struct nn_gpt *m, int slot, const float *dout, float scale, float *dinput)
{
	const struct nn_config *c = &m->cfg;
	const struct nn_shard *sh = &m->shard;
	struct nn_acts *a = m->acts;
	if (!a || slot < 0 || slot >= a->nslots || !a->slot[slot].B)
		return ascent_error(ASCENT_EINTERNAL, "backward of activation slot %d: it holds no forward", slot);
	struct nn_slot *sl = &a->slot[slot];
	if (sh->has_head && !sl->has_targets)
		return ascent_error(ASCENT_EINTERNAL, "backward needs a forward with targets or soft targets first "
				    "(slot %d)", slot);
	if (!sh->has_head && !dout)
		return ascent_error(ASCENT_EINPUT, "backward of a chunk without the head needs the output "
				    "gradient from the next stage (dout is NULL)");
	const int B = sl->B, T = sl->T, N = B * T, V = c->vocab_size, C = c->n_embd, Ll = m->n_layer_local;
	int rc = nn_ws_ensure(m, B, T, sl->recompute);
	if (rc)
		return rc;
	a = m->acts;
	a->dres_carry = 0;
	float *res = sl->residual, *dres = a->dres;

	if (sh->has_head) {
		const int *targets = sl->tok + sl->cap_tok;
		if (sl->has_soft)
			OP("kldiv_bwd", -1, 0,
			   nn_kldiv_backward(a->dlogits, sl->logits, sl->lse, sl->soft, scale / (float)N, N, V));
		else
			OP("crossentropy_bwd", -1, 0,
			   nn_crossentropy_backward(a->dlogits, sl->logits, sl->lse, targets, scale / (float)N, N, V));
		OP("matmul_lm_head_bwd", -1, 4.0 * N * C * V, {
			nn_gemm_prec(m, 'N', 'N', N, C, V, a->dlogits, V, m->param[NN_WTE], C, 0.0f, a->dbuf_c, C, 1);
			nn_gemm_prec(m, 'T', 'N', V, C, N, a->dlogits, V, sl->lnf, C, 1.0f, m->grad[NN_WTE], C, 0);
		});
		nn_zero_floats(dres, (size_t)N * C);
		OP("layernorm_bwd", -1, 0,
		   ln_bwd_dres(m, sl->bf16, Ll == 0 ? 0 : sl->recompute ? 1 : 2, sh->layer_begin + Ll - 1, dres,
			       m->grad[NN_LNFW], m->grad[NN_LNFB], a->dbuf_c, res + (size_t)Ll * N * C,
			       m->param[NN_LNFW], sl->lnf_mean, sl->lnf_rstd, N, C));
		if ((rc = ready(m, NN_GRADS_HEAD)))
			return rc;
	} else {
		memcpy(dres, dout, (size_t)N * C * sizeof(float));
	}
	for (int l = Ll - 1; l >= 0; l--) {
		struct nn_layer_acts la;
		float *in = res + (size_t)l * N * C;
		if (sl->recompute) {
			la = a->rc;
			if ((rc = block_forward(m, B, T, l, in, NULL, &la, 0, NULL, 0)))
				return rc;
		} else {
			nn_slot_layer(m, sl, l, &la);
		}
		if ((rc = block_backward(m, B, T, l, in, dres, &la, l == 0 ? 0 : sl->recompute ? 1 : 2)))
			return rc;
		if ((rc = ready(m, sh->layer_begin + l)))
			return rc;
	}
	if (sh->has_embed) {
		OP("encoder_bwd", -1, 0, nn_encoder_backward(m->grad[NN_WTE], m->grad[NN_WPE], dres, sl->tok, B, T, C));
		if ((rc = ready(m, NN_GRADS_EMBED)))
			return rc;
	} else if (dinput) {
		memcpy(dinput, dres, (size_t)N * C * sizeof(float));
	}
	return 0;
}
