/* diag/mem.c — `ascent diag mem`: per-rank memory estimate by category (parameters, gradients,
 * optimizer states, activations, communication buffers, workspace) for a model and a parallel
 * layout, the search for layouts that fit a per-device budget, and --check: the estimate against
 * the peaks the profiler measured in a run (read through db/).
 *
 * Formulas (stated again in the JSON "formulas" member):
 *   parameters per rank: what nn_shard_param_sizes gives a shard — layers L/pp (remainder to the
 *     first stages); per layer qkv, fc and the projections' weights and the column biases / t, the
 *     LayerNorms and row biases replicated; wte (V·C, not split by TP: nn keeps the whole table) on
 *     the first stage and, tied, on the last; wpe on the first; lnf on the last.
 *   bytes per parameter, generic (ZeRO paper 4.7): fp32 p 4, g 4, optimizer (m, v) 8; bf16/fp16 p 2,
 *     g 2, optimizer (fp32 master, m, v) 12; ZeRO-1 divides optimizer states by dp, ZeRO-2 also the
 *     gradients, ZeRO-3 also the parameters. ascent's trainer (layout.ascent, --check): p 4, g 4,
 *     m+v 8 at every precision (fp32 master weights, bf16/fp16 only in the GEMMs), ZeRO >= 1 divides
 *     m, v by dp; ZeRO-1 keeps the gradient block whole (the reduce-scatter is in place), ZeRO-2
 *     holds the unlayered gradients (wte, wpe, lnf) whole, its shard of all gradients (params/dp)
 *     and a window of two blocks' gradients (trainer/dist.c).
 *   activations: nn's activation slots (nn/gpt.c slot_layout), every tensor rounded up to 16 floats:
 *     residual stream (L+1)·N·C; per layer, unless recompute, ln1 C + mean, rstd 2 + qkv 3C/t +
 *     atty C/t + att H·T/t + res2 C + ln2 C + 2 + fch 4C/t + fch_gelu 4C/t floats per token; the
 *     head (last stage) lnf C + 2 + logits V + lse + losses; token ids 2·N int32; in bf16 where it
 *     runs on oneDNN (nn_bf16_runs_onednn), per layer the bf16 copies of ln1, ln2 (C), atty (C/t)
 *     and fch_gelu (4C/t), 2 bytes each. In flight: 1F1B stage s keeps min(m, p − s) slots, GPipe m.
 *   workspace (once per rank, nn/gpt.c ws_layout): dres C + dbuf C + dbuf_4c 4C/t floats per token,
 *     dlogits V (last stage), the attention scratch, recompute's one-layer working set, and for
 *     bf16/fp16 the two GEMM conversion panels; in bf16 on oneDNN also the bf16 copy of the four
 *     weight matrices (12·C²/t per layer, 2 bytes each).
 *   communication buffers, generic: DP 2 gradient buckets of 25 MiB (capped at the gradient bytes);
 *     ZeRO-3 two layers' parameters gathered; TP 2·N·C fp32; PP send + recv 2·N·C fp32. ascent's
 *     trainer: DP and TP collectives in place (none); PP (2 + slots + 1)·N·C fp32
 *     (trainer/pipe_run.c), plus the tied-embedding gradient exchange V·C fp32 on the first and last
 *     stage.
 */
#include "diag/diag.h"

#include "db/db.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_BYTES (25LL << 20)

const char *diag_mem_cat_name(enum diag_mem_cat c)
{
	static const char *n[] = { "params", "grads", "optimizer", "activations", "comm_buffers", "workspace" };
	return c < DIAG_MEM_NCAT ? n[c] : "?";
}

int diag_mem_cat_db(enum diag_mem_cat c)
{
	static const int m[] = { DB_MEM_PARAM, DB_MEM_GRAD, DB_MEM_OPTIMIZER, DB_MEM_ACTIVATION, DB_MEM_COMM,
				 DB_MEM_WORKSPACE };
	return c < DIAG_MEM_NCAT ? m[c] : DB_MEM_OTHER;
}

int diag_mem_layout_validate(const struct nn_config *c, const struct diag_mem_layout *l)
{
	int rc = nn_config_validate(c);
	if (rc)
		return rc;
	if (l->dp < 1 || l->tp < 1 || l->pp < 1)
		return ascent_error(ASCENT_EUSAGE, "parallel sizes must be >= 1 (dp %d, tp %d, pp %d)", l->dp, l->tp, l->pp);
	if (c->n_head % l->tp)
		return ascent_error(ASCENT_EUSAGE, "--tp %d does not divide the model's %d heads (TP splits by heads)", l->tp,
				    c->n_head);
	if (l->pp > c->n_layer)
		return ascent_error(ASCENT_EUSAGE, "--pp %d exceeds the model's %d layers (each stage needs a layer)", l->pp,
				    c->n_layer);
	if (l->zero < 0 || l->zero > 3)
		return ascent_error(ASCENT_EUSAGE, "--zero %d is not a ZeRO stage (0, 1, 2 or 3)", l->zero);
	if (l->microbatches < 1 || l->batch < 1)
		return ascent_error(ASCENT_EUSAGE, "--microbatches and --batch must be >= 1");
	if (l->seq < 1 || l->seq > c->max_seq)
		return ascent_error(ASCENT_EUSAGE, "--seq %d is outside [1, %d] (the model's positions)", l->seq, c->max_seq);
	return 0;
}

/* Transformer layers on stage s: L/pp, the remainder to the first stages. */
static int stage_layers(int L, int pp, int s)
{
	return L / pp + (s < L % pp);
}

/* Parameter elements of one block on one rank: split by TP, and replicated. */
static double layer_params(const struct nn_config *c, const struct diag_mem_layout *l)
{
	size_t sz[NN_NPARAMS];
	nn_param_sizes(c, sz);
	double L = c->n_layer, t = l->tp;
	double split = (double)(sz[NN_QKVW] + sz[NN_QKVB] + sz[NN_ATTPROJW] + sz[NN_FCW] + sz[NN_FCB] + sz[NN_FCPROJW]) / L;
	double repl = (double)(sz[NN_LN1W] + sz[NN_LN1B] + sz[NN_ATTPROJB] + sz[NN_LN2W] + sz[NN_LN2B] + sz[NN_FCPROJB]) / L;
	return split / t + repl;
}

/* Parameter elements one rank of stage s holds (before ZeRO-3). */
static double stage_params(const struct nn_config *c, const struct diag_mem_layout *l, int s)
{
	size_t sz[NN_NPARAMS];
	nn_param_sizes(c, sz);
	double p = stage_layers(c->n_layer, l->pp, s) * layer_params(c, l);
	int first = s == 0, last = s == l->pp - 1;
	double wte = (double)sz[NN_WTE];   /* nn keeps the whole table on every TP rank */
	if (first)
		p += wte + (double)sz[NN_WPE];
	if (last) {
		p += (double)(sz[NN_LNFW] + sz[NN_LNFB]);
		if (!first)
			p += wte;   /* the tied LM head's copy */
	}
	return p;
}

/* Floats rounded up to 16 (64 bytes), as nn/gpt.c lays out every tensor. */
static double r16(double n)
{
	return ceil(n / 16) * 16;
}

/* 1 when nn keeps bf16 copies of the GEMM operands (nn_bf16_runs_onednn: a bf16 model on a CPU
 * with AVX512_BF16; the estimate is for this host). */
static int bf16_copies(const struct diag_mem_layout *l)
{
	return l->precision == DIAG_BF16 && nn_bf16_runs_onednn();
}

/* Floats holding n bf16 values, rounded up to 16 floats (nn/gpt.c rnd16h). */
static double r16h(double n)
{
	return r16(ceil(n / 2));
}

/* One layer's stacked activation tensors (nn/gpt.c layer_layout), floats. */
static double layer_floats(const struct nn_config *c, const struct diag_mem_layout *l)
{
	double B = l->batch, T = l->seq, N = B * T, C = c->n_embd, t = l->tp, Cl = C / t, Hl = (double)(c->n_head / l->tp);
	double f = r16(N * C) + 2 * r16(N) + r16(N * 3 * Cl) + r16(N * Cl) + r16(B * Hl * T) + r16(N * C) + r16(N * C) +
		   2 * r16(N) + 2 * r16(N * 4 * Cl);
	if (bf16_copies(l))   /* ln1, ln2, atty, fch_gelu in bf16 */
		f += 2 * r16h(N * C) + r16h(N * Cl) + r16h(N * 4 * Cl);
	return f;
}

int64_t diag_mem_activation_bytes(const struct nn_config *c, const struct diag_mem_layout *l, int layers, int first,
				  int last)
{
	(void)first;   /* the embedding output is the residual stream's first row, on every stage */
	double N = (double)l->batch * l->seq, C = c->n_embd, V = c->vocab_size;
	double f = r16((layers + 1) * N * C);
	if (!l->recompute)
		f += layers * layer_floats(c, l);
	if (last)
		f += r16(N * C) + 2 * r16(N) + r16(N * V) + 2 * r16(N);
	return (int64_t)(f * 4 + 2 * N * 4);   /* + inputs and targets, int32 */
}

/* The workspace nn keeps once per rank (nn/gpt.c ws_layout). */
static int64_t workspace_bytes(const struct nn_config *c, const struct diag_mem_layout *l, int layers, int last)
{
	double N = (double)l->batch * l->seq, C = c->n_embd, V = c->vocab_size, Cl = C / l->tp;
	double f = 2 * r16(N * C) + r16(N * 4 * Cl);
	if (last)
		f += r16(N * V);
	int heads = c->n_head / l->tp;
	f += r16((double)nn_attention_scratch_floats(l->seq, (int)Cl, heads > 0 ? heads : 1, l->threads));
	if (l->recompute && layers)
		f += layer_floats(c, l);
	if (l->precision != DIAG_FP32) {
		double D = C > 4 * Cl ? C : 4 * Cl;
		D = D > V ? D : V;
		double w = C * 4 * Cl > V * C ? C * 4 * Cl : V * C;
		f += r16(N * D) + r16(N * D > w ? N * D : w);
	}
	if (bf16_copies(l) && layers) {
		/* the bf16 copies of qkvw, attprojw, fcw, fcprojw (nn/precision.c nn_bf16_weights), each
		 * rounded up to 32 values */
		double per[4] = { C * 3 * Cl, Cl * C, C * 4 * Cl, 4 * Cl * C };
		for (int i = 0; i < 4; i++)
			f += ceil(layers * per[i] / 32) * 32 / 2;
	}
	return (int64_t)(f * 4);
}

int diag_mem_estimate(const struct nn_config *c, const struct diag_mem_layout *l, struct diag_mem_estimate *out)
{
	int best = 0;
	double pb = l->precision == DIAG_FP32 || l->ascent ? 4 : 2, gb = pb;
	double ob = l->precision == DIAG_FP32 || l->ascent ? 8 : 12;
	for (int s = 0; s < l->pp; s++) {
		struct diag_mem_estimate *e = &out[s];
		memset(e, 0, sizeof *e);
		e->stage = s;
		e->layers = stage_layers(c->n_layer, l->pp, s);
		e->params = stage_params(c, l, s);
		double dp = l->dp;
		int zero = l->dp > 1 ? l->zero : 0;
		e->bytes[DIAG_MEM_PARAMS] = (int64_t)(e->params * pb / (zero >= 3 && !l->ascent ? dp : 1));
		e->bytes[DIAG_MEM_GRADS] = (int64_t)(e->params * gb / (zero >= 2 && !l->ascent ? dp : 1));
		if (l->ascent && zero >= 2) {
			/* the trainer's gradient window: the unlayered tensors whole, this rank's shard of
			 * everything, two blocks' worth of window buffers (trainer/dist.c) */
			double blk = layer_params(c, l), unl = e->params - e->layers * blk;
			e->bytes[DIAG_MEM_GRADS] = (int64_t)((unl + e->params / dp + 2 * blk) * 4);
		}
		e->bytes[DIAG_MEM_OPTIMIZER] = (int64_t)(e->params * ob / (zero >= 1 ? dp : 1));
		int first = s == 0, last = s == l->pp - 1;
		e->act_per_microbatch = diag_mem_activation_bytes(c, l, e->layers, first, last);
		e->in_flight = l->schedule == DIAG_GPIPE ? l->microbatches
							  : (l->microbatches < l->pp - s ? l->microbatches : l->pp - s);
		e->bytes[DIAG_MEM_ACTIVATIONS] = e->act_per_microbatch * e->in_flight;
		e->bytes[DIAG_MEM_WORKSPACE] = workspace_bytes(c, l, e->layers, last);
		int64_t comm = 0;
		double N = (double)l->batch * l->seq;
		if (l->ascent) {
			if (l->pp > 1) {
				comm += (int64_t)((2 + e->in_flight + 1) * N * c->n_embd * 4);
				if (first || last)
					comm += (int64_t)c->vocab_size * c->n_embd * 4;
			}
		} else {
			if (l->dp > 1) {
				int64_t g = (int64_t)(e->params * gb);
				comm += g < 2 * BUCKET_BYTES ? g : 2 * BUCKET_BYTES;
				if (l->zero >= 3 && e->layers)
					comm += (int64_t)(2 * (e->params / e->layers) * pb);
			}
			if (l->tp > 1)
				comm += (int64_t)(2 * N * c->n_embd * 4);
			if (l->pp > 1)
				comm += (int64_t)(2 * N * c->n_embd * 4);
		}
		e->bytes[DIAG_MEM_COMM] = comm;
		for (int k = 0; k < DIAG_MEM_NCAT; k++)
			e->total += e->bytes[k];
		if (e->total > out[best].total)
			best = s;
	}
	return best;
}

/* ------------------------------------------------------------------------------------------ */

static int fit_cmp(const void *a, const void *b)
{
	const struct diag_mem_fit *x = a, *y = b;
	int mx = x->l.tp * x->l.pp, my = y->l.tp * y->l.pp;
	if (mx != my)
		return mx - my;
	if (x->l.zero != y->l.zero)
		return x->l.zero - y->l.zero;
	if (x->bubble != y->bubble)
		return x->bubble < y->bubble ? -1 : 1;
	if (x->peak != y->peak)
		return x->peak < y->peak ? -1 : 1;
	return x->l.tp - y->l.tp;
}

int diag_mem_fit_search(const struct nn_config *c, const struct diag_mem_layout *base, int world, int64_t budget,
			int fixed_mb, struct diag_mem_fit **out, int *n)
{
	*out = NULL;
	*n = 0;
	int cap = 64, k = 0;
	struct diag_mem_fit *v = malloc((size_t)cap * sizeof *v);
	struct diag_mem_estimate *est = malloc((size_t)c->n_layer * sizeof *est);
	if (!v || !est) {
		free(v);
		free(est);
		return ascent_error(ASCENT_ENOMEM, "out of memory searching layouts");
	}
	static const int mbs[] = { 1, 2, 4, 8, 16 };
	for (int tp = 1; tp <= world; tp++) {
		if (world % tp || c->n_head % tp)
			continue;
		for (int pp = 1; pp <= world / tp && pp <= c->n_layer; pp++) {
			if ((world / tp) % pp)
				continue;
			int dp = world / tp / pp;
			for (int zero = 0; zero <= (dp > 1 ? 3 : 0); zero++) {
				for (int mi = 0; mi < (fixed_mb ? 1 : 5); mi++) {
					struct diag_mem_layout l = *base;
					l.dp = dp;
					l.tp = tp;
					l.pp = pp;
					l.zero = zero;
					if (!fixed_mb) {
						l.microbatches = mbs[mi];
						if (pp > 1 && l.microbatches < pp)
							continue;
						if (pp == 1 && mi > 0)
							continue;   /* m does not change memory without PP */
					}
					int b = diag_mem_estimate(c, &l, est);
					if (est[b].total > budget)
						continue;
					if (k == cap) {
						cap *= 2;
						struct diag_mem_fit *nv = realloc(v, (size_t)cap * sizeof *v);
						if (!nv) {
							free(v);
							free(est);
							return ascent_error(ASCENT_ENOMEM, "out of memory searching layouts");
						}
						v = nv;
					}
					v[k].l = l;
					v[k].peak = est[b].total;
					v[k].bubble = (double)(pp - 1) / (l.microbatches + pp - 1);
					k++;
				}
			}
		}
	}
	free(est);
	qsort(v, (size_t)k, sizeof *v, fit_cmp);
	*out = v;
	*n = k;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

static const char *prec_name(enum diag_precision p)
{
	return p == DIAG_BF16 ? "bf16" : p == DIAG_FP16 ? "fp16" : "fp32";
}

static cJSON *layout_json(const struct diag_mem_layout *l)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "dp", l->dp);
	cJSON_AddNumberToObject(o, "tp", l->tp);
	cJSON_AddNumberToObject(o, "pp", l->pp);
	cJSON_AddNumberToObject(o, "zero", l->zero);
	cJSON_AddStringToObject(o, "precision", prec_name(l->precision));
	cJSON_AddStringToObject(o, "schedule", l->schedule == DIAG_GPIPE ? "gpipe" : "1f1b");
	cJSON_AddNumberToObject(o, "microbatches", l->microbatches);
	cJSON_AddBoolToObject(o, "recompute", l->recompute);
	cJSON_AddNumberToObject(o, "batch", l->batch);
	cJSON_AddNumberToObject(o, "seq", l->seq);
	return o;
}

/* What `diag mem` finds for one layout (mem_plan_compute), rendered as JSON (mem_plan_json) and as
 * identity rows and checks (mem_plan_report). */
struct mem_plan {
	struct diag_mem_estimate *est;   /* l->pp stages */
	const struct diag_mem_estimate *peak;   /* the stage with the largest total */
	int ranks_on_host;
	int64_t avail;                   /* the host's MemAvailable; <= 0 unknown */
	int world;                       /* --fit: the ranks the layouts are searched for */
	struct diag_mem_fit *fits;       /* --fit: the layouts that fit, best first */
	int nfits;
};

static void mem_plan_free(struct mem_plan *p)
{
	free(p->est);
	free(p->fits);
	memset(p, 0, sizeof *p);
}

static int mem_plan_compute(const struct diag_mem_opts *o, struct mem_plan *p)
{
	const struct nn_config *c = &o->model;
	const struct diag_mem_layout *l = &o->layout;
	memset(p, 0, sizeof *p);
	int rc = diag_mem_layout_validate(c, l);
	if (rc)
		return rc;
	p->est = calloc((size_t)l->pp, sizeof *p->est);
	if (!p->est)
		return ascent_error(ASCENT_ENOMEM, "out of memory estimating memory");
	p->peak = &p->est[diag_mem_estimate(c, l, p->est)];
	p->ranks_on_host = o->ranks_on_host;
	if (p->ranks_on_host <= 0) {
		const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
		if (!s)
			s = getenv("LOCAL_WORLD_SIZE");
		p->ranks_on_host = s ? atoi(s) : 0;
		if (p->ranks_on_host <= 0)
			p->ranks_on_host = 1;
	}
	p->avail = diag_meminfo_bytes("MemAvailable");
	if (o->fit > 0) {
		p->world = o->world > 0 ? o->world : l->dp * l->tp * l->pp;
		rc = diag_mem_fit_search(c, l, p->world, o->fit, o->fixed_microbatches, &p->fits, &p->nfits);
		if (rc) {
			mem_plan_free(p);
			return rc;
		}
	}
	return 0;
}

static void mem_formulas_json(const struct diag_mem_layout *l, cJSON *data)
{
	cJSON *f = cJSON_AddObjectToObject(data, "formulas");
	if (l->ascent)
		cJSON_AddStringToObject(f, "bytes_per_param", "ascent's trainer: p 4 + g 4 + AdamW m, v 8 at every precision "
					"(fp32 master weights); ZeRO>=1 m, v / dp; ZeRO-1 keeps the gradient block whole, "
					"ZeRO-2 grads = unlayered + params/dp + 2 blocks of window");
	else
		cJSON_AddStringToObject(f, "bytes_per_param", "fp32: p 4 + g 4 + optimizer 8; bf16/fp16: p 2 + g 2 + "
					"optimizer 12 (fp32 master, m, v); ZeRO-1 optimizer/dp, ZeRO-2 + grads/dp, "
					"ZeRO-3 + params/dp");
	cJSON_AddStringToObject(f, "activations", "nn activation slots (fp32, tensors rounded to 16 floats): residual "
				"(L+1)*N*C; per layer unless recompute 8C + 12C/t + H*T/t + 4 floats per token; last stage "
				"lnf C + 2 + logits V + 2; token ids 2*N int32; x in-flight micro-batches (1F1B min(m, p-s), "
				"GPipe m)");
	cJSON_AddStringToObject(f, "workspace", "once per rank: dres C + dbuf C + dbuf_4c 4C/t per token, dlogits V (last "
				"stage), attention scratch, recompute's one layer, bf16/fp16 GEMM panels");
	if (l->ascent)
		cJSON_AddStringToObject(f, "comm_buffers", "ascent's trainer: DP/TP in place; PP (2 + in-flight + 1)*N*C*4, "
					"+ V*C*4 tied-embedding exchange on the first and last stage");
	else
		cJSON_AddStringToObject(f, "comm_buffers", "DP 2 x 25 MiB buckets (capped at grads), ZeRO-3 + 2 layers of "
					"params, TP 2*N*C*4, PP 2*N*C*4");
}

static void mem_plan_json(const struct diag_mem_opts *o, const struct mem_plan *p, cJSON *data)
{
	const struct nn_config *c = &o->model;
	const struct diag_mem_layout *l = &o->layout;
	const struct diag_mem_estimate *e = p->peak;
	cJSON *model = cJSON_AddObjectToObject(data, "model");
	cJSON_AddNumberToObject(model, "n_layer", c->n_layer);
	cJSON_AddNumberToObject(model, "n_head", c->n_head);
	cJSON_AddNumberToObject(model, "n_embd", c->n_embd);
	cJSON_AddNumberToObject(model, "vocab_size", c->vocab_size);
	cJSON_AddNumberToObject(model, "max_seq", c->max_seq);
	cJSON_AddNumberToObject(model, "params", (double)nn_param_count(c));
	cJSON_AddItemToObject(data, "layout", layout_json(l));
	cJSON *pr = cJSON_AddObjectToObject(data, "per_rank");
	for (int k = 0; k < DIAG_MEM_NCAT; k++)
		cJSON_AddNumberToObject(pr, diag_mem_cat_name(k), (double)e->bytes[k]);
	cJSON_AddNumberToObject(pr, "total", (double)e->total);
	cJSON_AddNumberToObject(pr, "stage", e->stage);
	cJSON *st = cJSON_AddArrayToObject(data, "stages");
	for (int s = 0; s < l->pp; s++) {
		cJSON *so = cJSON_CreateObject();
		cJSON_AddNumberToObject(so, "stage", s);
		cJSON_AddNumberToObject(so, "layers", p->est[s].layers);
		cJSON_AddNumberToObject(so, "params", p->est[s].params);
		for (int k = 0; k < DIAG_MEM_NCAT; k++)
			cJSON_AddNumberToObject(so, diag_mem_cat_name(k), (double)p->est[s].bytes[k]);
		cJSON_AddNumberToObject(so, "total", (double)p->est[s].total);
		cJSON_AddNumberToObject(so, "activations_per_microbatch", (double)p->est[s].act_per_microbatch);
		cJSON_AddNumberToObject(so, "in_flight", p->est[s].in_flight);
		cJSON_AddItemToArray(st, so);
	}
	mem_formulas_json(l, data);
	if (o->fit <= 0)
		return;
	cJSON *fa = cJSON_AddArrayToObject(data, "fit");
	for (int i = 0; i < p->nfits; i++) {
		cJSON *fo = layout_json(&p->fits[i].l);
		cJSON_AddNumberToObject(fo, "peak", (double)p->fits[i].peak);
		cJSON_AddNumberToObject(fo, "bubble", p->fits[i].bubble);
		cJSON_AddNumberToObject(fo, "rank", i + 1);
		cJSON_AddItemToArray(fa, fo);
	}
	cJSON_AddStringToObject(data, "fit_rule",
				"ranked by fewest model-parallel ranks (tp*pp), then lower ZeRO stage, then smaller "
				"pipeline bubble (p-1)/(m+p-1), then lower peak");
}

/* The --fit rows and the mem.fit check. */
static void mem_plan_report_fit(const struct diag_mem_opts *o, const struct mem_plan *p, const char *tot,
				struct diag_report *r)
{
	const struct diag_mem_fit *fits = p->fits;
	int nf = p->nfits;
	char b[32];
	units_bytes_bin(b, sizeof b, o->fit);
	for (int i = 0; i < nf && i < 10; i++) {
		char key[32], pk[32];
		snprintf(key, sizeof key, "fit #%d", i + 1);
		units_bytes_bin(pk, sizeof pk, fits[i].peak);
		diag_ident_add(r, key, "dp %d tp %d pp %d zero %d m %d: peak %s, bubble %.0f%%", fits[i].l.dp, fits[i].l.tp,
			       fits[i].l.pp, fits[i].l.zero, fits[i].l.microbatches, pk, 100 * fits[i].bubble);
	}
	if (p->peak->total <= o->fit)
		diag_check_add(r, DIAG_PASS, "mem.fit", NULL, "the layout needs %s per rank, within the budget %s; %d "
			       "layout(s) of %d ranks fit",
			       tot, b, nf, p->world);
	else if (nf)
		diag_check_add(r, DIAG_FAIL, "mem.fit", "use a layout from the fit list (best first)",
			       "the layout needs %s per rank, over the budget %s; %d layout(s) of %d ranks fit, best dp %d "
			       "tp %d pp %d zero %d m %d",
			       tot, b, nf, p->world, fits[0].l.dp, fits[0].l.tp, fits[0].l.pp, fits[0].l.zero,
			       fits[0].l.microbatches);
	else
		diag_check_add(r, DIAG_FAIL, "mem.fit", "add ranks, enable --recompute, or shrink the micro-batch",
			       "the layout needs %s per rank, over the budget %s, and no layout of %d ranks fits", tot, b,
			       p->world);
}

static void mem_plan_report(const struct diag_mem_opts *o, const struct mem_plan *p, struct diag_report *r)
{
	const struct nn_config *c = &o->model;
	const struct diag_mem_layout *l = &o->layout;
	const struct diag_mem_estimate *e = p->peak;
	char tot[32], cat[DIAG_MEM_NCAT][32];
	units_bytes_bin(tot, sizeof tot, e->total);
	for (int k = 0; k < DIAG_MEM_NCAT; k++)
		units_bytes_bin(cat[k], sizeof cat[k], e->bytes[k]);
	diag_ident_add(r, "model", "L%d C%d H%d V%d T%d, %zu parameters", c->n_layer, c->n_embd, c->n_head, c->vocab_size,
		       c->max_seq, nn_param_count(c));
	diag_ident_add(r, "layout", "dp %d tp %d pp %d zero %d %s %s m %d %s, micro-batch %d x %d", l->dp, l->tp, l->pp,
		       l->zero, prec_name(l->precision), l->schedule == DIAG_GPIPE ? "gpipe" : "1f1b", l->microbatches,
		       l->recompute ? "recompute" : "no recompute", l->batch, l->seq);
	for (int k = 0; k < DIAG_MEM_NCAT; k++) {
		char key[48];
		snprintf(key, sizeof key, "per rank %s", diag_mem_cat_name(k));
		diag_ident_add(r, key, "%s", cat[k]);
	}
	diag_ident_add(r, "per rank total", "%s (stage %d of %d, %d in flight)", tot, e->stage, l->pp, e->in_flight);
	diag_ident_add(r, "accounting", "%s", l->ascent ? "ascent's trainer (fp32 master weights, in-place DP/TP)"
						       : "generic mixed precision (ZeRO paper, DDP buckets)");
	diag_check_add(r, DIAG_PASS, "mem.estimate", NULL,
		       "stage %d needs %s per rank: params %s, grads %s, optimizer %s, activations %s, comm %s, "
		       "workspace %s",
		       e->stage, tot, cat[0], cat[1], cat[2], cat[3], cat[4], cat[5]);
	if (p->avail > 0) {
		char av[32], need[32];
		int ranks = p->ranks_on_host;
		units_bytes_bin(av, sizeof av, p->avail);
		units_bytes_bin(need, sizeof need, e->total * ranks);
		if (e->total * ranks > p->avail)
			diag_check_add(r, DIAG_FAIL, "mem.host", "use ZeRO, recompute, more pipeline stages or a smaller micro-batch "
				       "(see --fit)",
				       "%d rank(s) on this host need %s, only %s available", ranks, need, av);
		else
			diag_check_add(r, DIAG_PASS, "mem.host", NULL, "%d rank(s) on this host need %s of %s available", ranks,
				       need, av);
	}
	if (o->fit > 0)
		mem_plan_report_fit(o, p, tot, r);
}

int diag_mem_run(const struct diag_mem_opts *o, struct diag_report *r)
{
	struct mem_plan p;
	int rc = mem_plan_compute(o, &p);
	if (rc)
		return rc;
	mem_plan_json(o, &p, r->data);
	mem_plan_report(o, &p, r);
	mem_plan_free(&p);
	if (o->check_db)
		return diag_mem_check(o, o->check_db, r);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

static int get_int(const cJSON *o, const char *k, int *dst, const char *path)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!v)
		return 0;
	if (cJSON_IsBool(v)) {
		*dst = cJSON_IsTrue(v);
		return 0;
	}
	if (!cJSON_IsNumber(v) || v->valuedouble != (double)(int)v->valuedouble)
		return ascent_error(ASCENT_EINPUT, "'%s': \"%s\" must be an integer", path, k);
	*dst = v->valueint;
	return 0;
}

int diag_mem_load_config(const char *path, struct diag_mem_opts *o)
{
	cJSON *root;
	int rc = json_read_file(path, &root);
	if (rc)
		return rc;
	if (!cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return ascent_error(ASCENT_EINPUT, "'%s' is not a JSON object", path);
	}
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(root, "model");
	if (!m)
		m = cJSON_GetObjectItemCaseSensitive(root, "preset");
	if (cJSON_IsString(m)) {
		rc = nn_config_preset(m->valuestring, &o->model);
		if (rc)
			rc = ascent_error_ctx(rc, "'%s'", path);
	} else if (cJSON_IsObject(m)) {
		struct nn_config *c = &o->model;
		if ((rc = get_int(m, "vocab_size", &c->vocab_size, path)) || (rc = get_int(m, "max_seq", &c->max_seq, path)) ||
		    (rc = get_int(m, "n_layer", &c->n_layer, path)) || (rc = get_int(m, "n_head", &c->n_head, path)) ||
		    (rc = get_int(m, "n_embd", &c->n_embd, path))) {
		}
	} else if (m) {
		rc = ascent_error(ASCENT_EINPUT, "'%s': \"model\" must be a preset name or an object", path);
	}
	struct diag_mem_layout *l = &o->layout;
	if (!rc && ((rc = get_int(root, "dp", &l->dp, path)) || (rc = get_int(root, "tp", &l->tp, path)) ||
		    (rc = get_int(root, "pp", &l->pp, path)) || (rc = get_int(root, "zero", &l->zero, path)) ||
		    (rc = get_int(root, "microbatches", &l->microbatches, path)) ||
		    (rc = get_int(root, "recompute", &l->recompute, path)) || (rc = get_int(root, "batch", &l->batch, path)) ||
		    (rc = get_int(root, "seq", &l->seq, path)))) {
	}
	if (!rc) {
		const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "precision");
		if (cJSON_IsString(p)) {
			if (!strcmp(p->valuestring, "fp32"))
				l->precision = DIAG_FP32;
			else if (!strcmp(p->valuestring, "bf16"))
				l->precision = DIAG_BF16;
			else if (!strcmp(p->valuestring, "fp16"))
				l->precision = DIAG_FP16;
			else
				rc = ascent_error(ASCENT_EINPUT, "'%s': precision '%s' is not fp32, bf16 or fp16", path,
						  p->valuestring);
		}
		const cJSON *s = cJSON_GetObjectItemCaseSensitive(root, "schedule");
		if (!rc && cJSON_IsString(s)) {
			if (!strcmp(s->valuestring, "1f1b"))
				l->schedule = DIAG_1F1B;
			else if (!strcmp(s->valuestring, "gpipe"))
				l->schedule = DIAG_GPIPE;
			else
				rc = ascent_error(ASCENT_EINPUT, "'%s': schedule '%s' is not 1f1b or gpipe", path, s->valuestring);
		}
	}
	cJSON_Delete(root);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* --check RUN.db */

int diag_mem_opts_from_db(const char *path, struct diag_mem_opts *o)
{
	struct db *db;
	int rc = db_open(path, DB_READ, &db);
	if (rc)
		return rc;
	struct db_run_info ri;
	int found = 0;
	rc = db_get_run(db, &ri, &found);
	db_close(db);
	if (rc)
		return rc;
	if (!found || !ri.config_json) {
		db_run_info_free(&ri);
		return ascent_error(ASCENT_EINPUT, "'%s' has no run configuration (was it written by 'ascent train "
				    "--profile'?); pass the model and layout (--preset, --dp, ...) instead", path);
	}
	cJSON *cfg = cJSON_Parse(ri.config_json);
	int world = ri.world_size;
	db_run_info_free(&ri);
	if (!cJSON_IsObject(cfg)) {
		cJSON_Delete(cfg);
		return ascent_error(ASCENT_EINPUT, "'%s': the run's config_json is not a JSON object", path);
	}
	struct nn_config mc = { 0 };
	const cJSON *pr = cJSON_GetObjectItemCaseSensitive(cfg, "preset");
	if (cJSON_IsString(pr) && pr->valuestring[0])
		nn_config_preset(pr->valuestring, &mc);   /* the explicit sizes below win */
	struct diag_mem_layout dl = { .dp = 1, .tp = 1, .pp = 1, .microbatches = 0 };
	int batch = 0, vstages = 1;
	char pbuf[16] = "", sbuf[16] = "";
	const struct {
		const char *k;
		int *dst;
	} ints[] = {
		{ "vocab_size", &mc.vocab_size }, { "max_seq", &mc.max_seq }, { "n_layer", &mc.n_layer },
		{ "n_head", &mc.n_head }, { "n_embd", &mc.n_embd }, { "dp", &dl.dp }, { "tp", &dl.tp }, { "pp", &dl.pp },
		{ "zero", &dl.zero }, { "microbatches", &dl.microbatches }, { "recompute", &dl.recompute },
		{ "batch", &batch }, { "seq", &dl.seq }, { "virtual_stages", &vstages }, { "threads", &dl.threads },
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0] && !rc; i++)
		rc = get_int(cfg, ints[i].k, ints[i].dst, path);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(cfg, "precision");
	if (cJSON_IsString(p))
		snprintf(pbuf, sizeof pbuf, "%s", p->valuestring);
	const cJSON *sc = cJSON_GetObjectItemCaseSensitive(cfg, "schedule");
	if (cJSON_IsString(sc))
		snprintf(sbuf, sizeof sbuf, "%s", sc->valuestring);
	cJSON_Delete(cfg);
	if (rc)
		return rc;
	if (dl.tp < 1)
		dl.tp = 1;
	if (dl.pp < 1)
		dl.pp = 1;
	if (dl.dp < 1 && world > 0)
		dl.dp = world / (dl.tp * dl.pp);   /* trainer: dp 0 = what the world leaves */
	if (!mc.n_layer || !mc.n_embd || !mc.n_head || !mc.vocab_size || !batch || dl.dp < 1)
		return ascent_error(ASCENT_EINPUT, "'%s': the run's config lacks the model or batch (n_layer, n_embd, n_head, "
				    "vocab_size, batch, dp, pp); pass --preset and the layout instead", path);
	if (!mc.max_seq)
		mc.max_seq = dl.seq;
	if (!dl.microbatches)
		dl.microbatches = dl.pp;   /* trainer/train.c: 0 = pp */
	dl.batch = batch / (dl.dp * dl.microbatches);
	if (dl.batch < 1)
		return ascent_error(ASCENT_EINPUT, "'%s': batch %d does not cover dp %d x %d micro-batches", path, batch,
				    dl.dp, dl.microbatches);
	dl.precision = !strcmp(pbuf, "bf16") ? DIAG_BF16 : !strcmp(pbuf, "fp16") ? DIAG_FP16 : DIAG_FP32;
	dl.schedule = !strcmp(sbuf, "gpipe") ? DIAG_GPIPE : DIAG_1F1B;
	if (vstages > 1)
		log_warn("'%s': %d virtual stages (interleaved): the estimate models one chunk per stage",
			   path, vstages);
	dl.ascent = 1;
	o->model = mc;
	o->layout = dl;
	return 0;
}

/* PASS within 10 %, WARN within 25 %, FAIL beyond. */
#define CHECK_TOL 0.10
#define CHECK_WARN 0.25

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Position of `rank` in the sorted, distinct rank_of[0..n) (it is there). */
static int rank_index(const int *rank_of, int n, int rank)
{
	const int *p = bsearch(&rank, rank_of, (size_t)n, sizeof *rank_of, cmp_int);
	return p ? (int)(p - rank_of) : 0;
}

/* The peaks a profile measured, per rank, beside the estimate for each pipeline stage
 * (mem_measured_load); compared per category (mem_compare); rendered as JSON (mem_check_json) and
 * as identity rows and checks (mem_check_report). */
struct mem_measured {
	int nr;                          /* distinct ranks */
	int *rank_of;                    /* nr rank numbers, sorted */
	int *stage;                      /* nr pipeline stages */
	int *present;                    /* nr: 1 = the rank has memory events */
	int64_t *meas;                   /* nr × DIAG_MEM_NCAT peak bytes */
	struct diag_mem_estimate *est;   /* l->pp stages */
};

/* Per category: the worst relative error over the ranks that have it both estimated and measured. */
struct mem_compare {
	double worst[DIAG_MEM_NCAT];     /* -1 when no rank has both */
	int worst_rank[DIAG_MEM_NCAT];   /* index into rank_of, -1 none */
	int both[DIAG_MEM_NCAT], only_est[DIAG_MEM_NCAT], only_meas[DIAG_MEM_NCAT];   /* rank counts */
};

static void mem_measured_free(struct mem_measured *m)
{
	free(m->rank_of);
	free(m->stage);
	free(m->present);
	free(m->meas);
	free(m->est);
	memset(m, 0, sizeof *m);
}

static int mem_measured_load(const struct diag_mem_opts *o, const char *path, struct mem_measured *m)
{
	const struct diag_mem_layout *l = &o->layout;
	memset(m, 0, sizeof *m);
	struct db *db;
	int rc = db_open(path, DB_READ, &db);
	if (rc)
		return rc;
	struct db_mem_stat *ms = NULL;
	struct db_rank_info *ranks = NULL;
	int nms = 0, nranks = 0;
	rc = db_mem_stats(db, DB_FILTER_ALL, &ms, &nms);
	if (!rc)
		rc = db_ranks(db, &ranks, &nranks);
	db_close(db);
	m->est = calloc((size_t)l->pp, sizeof *m->est);
	if (!rc && !m->est)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory checking memory");
	if (!rc && !nms)
		rc = ascent_error(ASCENT_EINPUT, "'%s' has no memory events to check against (was it profiled with "
				  "'ascent train --profile'?)", path);
	if (rc) {
		free(ms);
		db_ranks_free(ranks, nranks);
		mem_measured_free(m);
		return rc;
	}
	diag_mem_estimate(&o->model, l, m->est);

	/* the ranks: from the rank table, else whatever mem_event has; indexed by their position in the
	 * sorted list, not by number (a damaged profile may name rank 1000000000) */
	int *rank_of = m->rank_of = malloc(((size_t)nms + (size_t)nranks + 1) * sizeof *rank_of);
	int nr = 0;
	for (int i = 0; rank_of && i < nms; i++)
		if (ms[i].rank >= 0 && ms[i].device == DB_MEM_HOST)
			rank_of[nr++] = ms[i].rank;
	for (int i = 0; rank_of && i < nranks; i++)
		if (ranks[i].rank >= 0)
			rank_of[nr++] = ranks[i].rank;
	if (rank_of && nr > 1) {
		qsort(rank_of, (size_t)nr, sizeof *rank_of, cmp_int);
		int u = 1;
		for (int i = 1; i < nr; i++)
			if (rank_of[i] != rank_of[u - 1])
				rank_of[u++] = rank_of[i];
		nr = u;
	}
	m->nr = nr;
	m->meas = calloc((size_t)nr * DIAG_MEM_NCAT + 1, sizeof *m->meas);
	m->stage = calloc((size_t)nr + 1, sizeof *m->stage);
	m->present = calloc((size_t)nr + 1, sizeof *m->present);
	if (!rank_of || !m->meas || !m->stage || !m->present) {
		free(ms);
		db_ranks_free(ranks, nranks);
		mem_measured_free(m);
		return ascent_error(ASCENT_ENOMEM, "out of memory checking memory");
	}
	for (int i = 0; i < nranks; i++)
		if (ranks[i].rank >= 0 && ranks[i].pp_rank >= 0 && ranks[i].pp_rank < l->pp)
			m->stage[rank_index(rank_of, nr, ranks[i].rank)] = ranks[i].pp_rank;
	for (int i = 0; i < nms; i++) {
		if (ms[i].rank < 0 || ms[i].device != DB_MEM_HOST)   /* the estimate is of the trainer: host memory */
			continue;
		int x = rank_index(rank_of, nr, ms[i].rank);
		m->present[x] = 1;
		for (int k = 0; k < DIAG_MEM_NCAT; k++)
			if (diag_mem_cat_db(k) == ms[i].category)
				m->meas[x * DIAG_MEM_NCAT + k] = ms[i].peak_bytes;
	}
	db_ranks_free(ranks, nranks);
	free(ms);
	return 0;
}

static void mem_compare(const struct mem_measured *m, struct mem_compare *x)
{
	for (int k = 0; k < DIAG_MEM_NCAT; k++) {
		x->worst[k] = -1;
		x->worst_rank[k] = -1;
		x->both[k] = x->only_est[k] = x->only_meas[k] = 0;
	}
	for (int i = 0; i < m->nr; i++) {
		if (!m->present[i])
			continue;
		const struct diag_mem_estimate *e = &m->est[m->stage[i]];
		for (int k = 0; k < DIAG_MEM_NCAT; k++) {
			int64_t ev = e->bytes[k], mv = m->meas[i * DIAG_MEM_NCAT + k];
			if (ev > 0 && mv > 0) {
				double err = fabs((double)(ev - mv)) / (double)mv;
				x->both[k]++;
				if (err > x->worst[k]) {
					x->worst[k] = err;
					x->worst_rank[k] = i;
				}
			} else if (ev > 0) {
				x->only_est[k]++;
			} else if (mv > 0) {
				x->only_meas[k]++;
			}
		}
	}
}

static void mem_check_json(const struct mem_measured *m, const char *path, cJSON *data)
{
	cJSON *ck = cJSON_AddObjectToObject(data, "check");
	cJSON_AddStringToObject(ck, "db", path);
	cJSON_AddNumberToObject(ck, "tolerance", CHECK_TOL);
	cJSON_AddStringToObject(ck, "rule", "per category, the worst rank's |estimate - measured| / measured: PASS <= 10%, "
				"WARN <= 25%, FAIL beyond; each rank against its pipeline stage's estimate");
	cJSON *ra = cJSON_AddArrayToObject(ck, "ranks");
	cJSON *mpr = NULL;
	for (int i = 0; i < m->nr; i++) {
		if (!m->present[i])
			continue;
		const struct diag_mem_estimate *e = &m->est[m->stage[i]];
		const int64_t *mv = m->meas + (size_t)i * DIAG_MEM_NCAT;
		cJSON *ro = cJSON_CreateObject();
		cJSON_AddNumberToObject(ro, "rank", m->rank_of[i]);
		cJSON_AddNumberToObject(ro, "stage", m->stage[i]);
		cJSON *eo = cJSON_AddObjectToObject(ro, "estimate"), *mo = cJSON_AddObjectToObject(ro, "measured");
		cJSON *xo = cJSON_AddObjectToObject(ro, "rel_err");
		for (int k = 0; k < DIAG_MEM_NCAT; k++) {
			cJSON_AddNumberToObject(eo, diag_mem_cat_name(k), (double)e->bytes[k]);
			cJSON_AddNumberToObject(mo, diag_mem_cat_name(k), (double)mv[k]);
			if (e->bytes[k] > 0 && mv[k] > 0)
				cJSON_AddNumberToObject(xo, diag_mem_cat_name(k),
							fabs((double)(e->bytes[k] - mv[k])) / (double)mv[k]);
		}
		if (!mpr) {
			mpr = cJSON_AddObjectToObject(data, "measured_per_rank");
			for (int k = 0; k < DIAG_MEM_NCAT; k++)
				cJSON_AddNumberToObject(mpr, diag_mem_cat_name(k), (double)mv[k]);
			cJSON_AddNumberToObject(mpr, "rank", m->rank_of[i]);
		}
		cJSON_AddItemToArray(ra, ro);
	}
}

/* One identity row per rank and category ("rank R params: estimate, measured, error"), then the
 * mem.check.<category> checks. */
static void mem_check_report(const struct mem_measured *m, const struct mem_compare *x, struct diag_report *r)
{
	for (int i = 0; i < m->nr; i++) {
		if (!m->present[i])
			continue;
		const struct diag_mem_estimate *e = &m->est[m->stage[i]];
		for (int k = 0; k < DIAG_MEM_NCAT; k++) {
			int64_t ev = e->bytes[k], mv = m->meas[i * DIAG_MEM_NCAT + k];
			if (ev <= 0 && mv <= 0)
				continue;
			char key[48], eb[32], mb[32], xs[32] = "n/a";
			snprintf(key, sizeof key, "rank %d %s", m->rank_of[i], diag_mem_cat_name(k));
			units_bytes_bin(eb, sizeof eb, ev);
			units_bytes_bin(mb, sizeof mb, mv);
			if (ev > 0 && mv > 0)
				snprintf(xs, sizeof xs, "%+.1f%%", 100.0 * (double)(ev - mv) / (double)mv);
			diag_ident_add(r, key, "estimate %-10s measured %-10s error %s", eb, mb, xs);
		}
	}
	for (int k = 0; k < DIAG_MEM_NCAT; k++) {
		char name[64], eb[32], mb[32];
		snprintf(name, sizeof name, "mem.check.%s", diag_mem_cat_name(k));
		if (x->both[k]) {
			int i = x->worst_rank[k];
			units_bytes_bin(eb, sizeof eb, m->est[m->stage[i]].bytes[k]);
			units_bytes_bin(mb, sizeof mb, m->meas[i * DIAG_MEM_NCAT + k]);
			enum diag_status st = x->worst[k] <= CHECK_TOL ? DIAG_PASS : x->worst[k] <= CHECK_WARN ? DIAG_WARN
													: DIAG_FAIL;
			diag_check_add(r, st, name,
				       st == DIAG_PASS ? NULL
						       : "the estimator's formula for this category does not match what the "
							 "trainer allocates: compare the formulas in --json with nn/gpt.c and trainer/",
				       "worst rank %d (stage %d): estimate %s, measured %s, error %.1f%% (%d rank(s), limit %.0f%%)",
				       m->rank_of[i], m->stage[i], eb, mb, 100 * x->worst[k], x->both[k], 100 * CHECK_TOL);
		}
		if (x->only_est[k] || x->only_meas[k])
			diag_check_add(r, DIAG_WARN, name, "check that the run's layout is the one estimated (--json: layout)",
				       "%d rank(s) have it only in the estimate, %d only in the measurement", x->only_est[k],
				       x->only_meas[k]);
	}
}

int diag_mem_check(const struct diag_mem_opts *o, const char *path, struct diag_report *r)
{
	struct mem_measured m;
	int rc = mem_measured_load(o, path, &m);
	if (rc)
		return rc;
	struct mem_compare x;
	mem_compare(&m, &x);
	mem_check_json(&m, path, r->data);
	mem_check_report(&m, &x, r);
	mem_measured_free(&m);
	return 0;
}
