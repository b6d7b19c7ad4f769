/* diag/mem.c — `ascent diag mem`: per-rank memory estimate by category (parameters, gradients,
 * optimizer states, activations, communication buffers) for a model and a parallel layout, and the
 * search for layouts that fit a per-device budget.
 *
 * Formulas (stated again in the JSON "formulas" member):
 *   parameters per rank: nn_param_sizes split by stage (layers L/pp, remainder to the first
 *     stages; wte+wpe on the first stage, lnf and the tied LM head's copy of wte on the last when
 *     pp > 1) and by TP (qkv, fc, projections' weights and the column biases / t; wte vocab-parallel / t).
 *   bytes per parameter (ZeRO 4.7): fp32 p 4, g 4, optimizer (m, v) 8; bf16/fp16 p 2, g 2,
 *     optimizer (fp32 master, m, v) 12. ZeRO-1 divides optimizer states by dp, ZeRO-2 also the
 *     gradients, ZeRO-3 also the parameters.
 *   activations: the fp32 tensors nn/gpt.c keeps (acts_layout), per token per layer
 *     residual C + ln1 C + 2 (mean, rstd) + qkv 3C/t + atty C/t + att H·T/t + res2 C + ln2 C + 2
 *     + fch 4C/t + fch_gelu 4C/t; first stage + embeddings C and token ids; last stage + lnf C + 2,
 *     logits V/t, lse, losses. Full recompute keeps only each layer's input (residual C) plus one
 *     layer's working set. Backward scratch once per rank: dres C, dbuf C, dbuf_4c 4C/t, dlogits V/t
 *     (last stage), attention scratch. In flight: 1F1B stage s keeps min(m, p − s) micro-batches,
 *     GPipe m.
 *   communication buffers: DP 2 gradient buckets of 25 MiB (capped at the gradient bytes); ZeRO-3
 *     two layers' parameters gathered; TP 2·N·C fp32; PP send + recv 2·N·C fp32.
 */
#include "diag/diag.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#define BUCKET_BYTES (25LL << 20)

const char *diag_mem_cat_name(enum diag_mem_cat c)
{
	static const char *n[] = { "params", "grads", "optimizer", "activations", "comm_buffers" };
	return c < DIAG_MEM_NCAT ? n[c] : "?";
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

/* Parameter elements one rank of stage s holds (before ZeRO-3). */
static double stage_params(const struct nn_config *c, const struct diag_mem_layout *l, int s)
{
	size_t sz[NN_NPARAMS];
	nn_param_sizes(c, sz);
	double L = c->n_layer, t = l->tp;
	/* per layer: split by TP, replicated */
	double split = (double)(sz[NN_QKVW] + sz[NN_QKVB] + sz[NN_ATTPROJW] + sz[NN_FCW] + sz[NN_FCB] + sz[NN_FCPROJW]) / L;
	double repl = (double)(sz[NN_LN1W] + sz[NN_LN1B] + sz[NN_ATTPROJB] + sz[NN_LN2W] + sz[NN_LN2B] + sz[NN_FCPROJB]) / L;
	double p = stage_layers(c->n_layer, l->pp, s) * (split / t + repl);
	int first = s == 0, last = s == l->pp - 1;
	double wte = (double)sz[NN_WTE] / t;
	if (first)
		p += wte + (double)sz[NN_WPE];
	if (last) {
		p += (double)(sz[NN_LNFW] + sz[NN_LNFB]);
		if (!first)
			p += wte;   /* the tied LM head's copy */
	}
	return p;
}

int64_t diag_mem_activation_bytes(const struct nn_config *c, const struct diag_mem_layout *l, int layers, int first,
				  int last)
{
	double N = (double)l->batch * l->seq, C = c->n_embd, H = c->n_head, T = l->seq, V = c->vocab_size, t = l->tp;
	double layer = N * (C + C + 2 + 3 * C / t + C / t + H * T / t + C + C + 2 + 4 * C / t + 4 * C / t);
	double f;
	if (l->recompute)
		f = layers * N * C + (layers ? layer : 0);
	else
		f = layers * layer;
	if (first)
		f += N * C + 2 * N;   /* embeddings; inputs and targets (int32, same size as a float) */
	if (last)
		f += N * C + 2 * N + N * V / t + 2 * N;
	return (int64_t)(f * 4);
}

/* Backward scratch kept once per rank (nn/gpt.c dres, dbuf_c, dbuf_4c, dlogits, attention scratch). */
static int64_t scratch_bytes(const struct nn_config *c, const struct diag_mem_layout *l, int last)
{
	double N = (double)l->batch * l->seq, C = c->n_embd, t = l->tp;
	double f = N * C * 2 + 4 * N * C / t;
	if (last)
		f += N * c->vocab_size / t;
	int heads = c->n_head / l->tp;
	f += (double)nn_attention_scratch_floats(l->batch, l->seq, heads > 0 ? heads : 1);
	return (int64_t)(f * 4);
}

int diag_mem_estimate(const struct nn_config *c, const struct diag_mem_layout *l, struct diag_mem_estimate *out)
{
	int best = 0;
	double pb = l->precision == DIAG_FP32 ? 4 : 2, gb = pb, ob = l->precision == DIAG_FP32 ? 8 : 12;
	for (int s = 0; s < l->pp; s++) {
		struct diag_mem_estimate *e = &out[s];
		memset(e, 0, sizeof *e);
		e->stage = s;
		e->layers = stage_layers(c->n_layer, l->pp, s);
		e->params = stage_params(c, l, s);
		double dp = l->dp;
		e->bytes[DIAG_MEM_PARAMS] = (int64_t)(e->params * pb / (l->zero >= 3 ? dp : 1));
		e->bytes[DIAG_MEM_GRADS] = (int64_t)(e->params * gb / (l->zero >= 2 ? dp : 1));
		e->bytes[DIAG_MEM_OPTIMIZER] = (int64_t)(e->params * ob / (l->zero >= 1 ? dp : 1));
		int first = s == 0, last = s == l->pp - 1;
		e->act_per_microbatch = diag_mem_activation_bytes(c, l, e->layers, first, last);
		e->in_flight = l->schedule == DIAG_GPIPE ? l->microbatches
							  : (l->microbatches < l->pp - s ? l->microbatches : l->pp - s);
		e->bytes[DIAG_MEM_ACTIVATIONS] = e->act_per_microbatch * e->in_flight + scratch_bytes(c, l, last);
		int64_t comm = 0;
		double N = (double)l->batch * l->seq;
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

static void fmt_gib(int64_t b, char *out, size_t n)
{
	if (b >= (1LL << 30))
		snprintf(out, n, "%.2f GiB", (double)b / (1LL << 30));
	else
		snprintf(out, n, "%.1f MiB", (double)b / (1LL << 20));
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

static int64_t mem_available(void)
{
	char *t;
	size_t len;
	if (fs_read_all("/proc/meminfo", &t, &len))
		return -1;
	char v[64];
	int64_t kb = -1;
	if (diag_kv_find(t, "MemAvailable", ':', v, sizeof v))
		kb = strtoll(v, NULL, 10);
	free(t);
	return kb < 0 ? -1 : kb * 1024;
}

int diag_mem_run(const struct diag_mem_opts *o, struct diag_report *r)
{
	const struct nn_config *c = &o->model;
	const struct diag_mem_layout *l = &o->layout;
	int rc = diag_mem_layout_validate(c, l);
	if (rc)
		return rc;
	struct diag_mem_estimate *est = calloc((size_t)l->pp, sizeof *est);
	if (!est)
		return ascent_error(ASCENT_ENOMEM, "out of memory estimating memory");
	int peak = diag_mem_estimate(c, l, est);
	const struct diag_mem_estimate *e = &est[peak];

	cJSON *model = cJSON_AddObjectToObject(r->data, "model");
	cJSON_AddNumberToObject(model, "n_layer", c->n_layer);
	cJSON_AddNumberToObject(model, "n_head", c->n_head);
	cJSON_AddNumberToObject(model, "n_embd", c->n_embd);
	cJSON_AddNumberToObject(model, "vocab_size", c->vocab_size);
	cJSON_AddNumberToObject(model, "max_seq", c->max_seq);
	cJSON_AddNumberToObject(model, "params", (double)nn_param_count(c));
	cJSON_AddItemToObject(r->data, "layout", layout_json(l));
	cJSON *pr = cJSON_AddObjectToObject(r->data, "per_rank");
	for (int k = 0; k < DIAG_MEM_NCAT; k++)
		cJSON_AddNumberToObject(pr, diag_mem_cat_name(k), (double)e->bytes[k]);
	cJSON_AddNumberToObject(pr, "total", (double)e->total);
	cJSON_AddNumberToObject(pr, "stage", e->stage);
	cJSON *st = cJSON_AddArrayToObject(r->data, "stages");
	for (int s = 0; s < l->pp; s++) {
		cJSON *so = cJSON_CreateObject();
		cJSON_AddNumberToObject(so, "stage", s);
		cJSON_AddNumberToObject(so, "layers", est[s].layers);
		cJSON_AddNumberToObject(so, "params", est[s].params);
		for (int k = 0; k < DIAG_MEM_NCAT; k++)
			cJSON_AddNumberToObject(so, diag_mem_cat_name(k), (double)est[s].bytes[k]);
		cJSON_AddNumberToObject(so, "total", (double)est[s].total);
		cJSON_AddNumberToObject(so, "activations_per_microbatch", (double)est[s].act_per_microbatch);
		cJSON_AddNumberToObject(so, "in_flight", est[s].in_flight);
		cJSON_AddItemToArray(st, so);
	}
	cJSON *f = cJSON_AddObjectToObject(r->data, "formulas");
	cJSON_AddStringToObject(f, "bytes_per_param", "fp32: p 4 + g 4 + optimizer 8; bf16/fp16: p 2 + g 2 + optimizer 12 "
				"(fp32 master, m, v); ZeRO-1 optimizer/dp, ZeRO-2 + grads/dp, ZeRO-3 + params/dp");
	cJSON_AddStringToObject(f, "activations", "fp32, per token per layer: 8C + 12C/t + H*T/t + 4 floats (nn/gpt.c "
				"acts_layout); recompute: C per layer + one layer; x in-flight micro-batches (1F1B min(m, p-s), "
				"GPipe m) + backward scratch once");
	cJSON_AddStringToObject(f, "comm_buffers", "DP 2 x 25 MiB buckets (capped at grads), ZeRO-3 + 2 layers of params, "
				"TP 2*N*C*4, PP 2*N*C*4");

	char tot[32], cat[DIAG_MEM_NCAT][32];
	fmt_gib(e->total, tot, sizeof tot);
	for (int k = 0; k < DIAG_MEM_NCAT; k++)
		fmt_gib(e->bytes[k], cat[k], sizeof cat[k]);
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
	diag_check_add(r, DIAG_PASS, "mem.estimate", NULL,
		       "stage %d needs %s per rank: params %s, grads %s, optimizer %s, activations %s, comm %s", e->stage,
		       tot, cat[0], cat[1], cat[2], cat[3], cat[4]);

	int ranks = o->ranks_on_host;
	if (ranks <= 0) {
		const char *s = getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
		if (!s)
			s = getenv("LOCAL_WORLD_SIZE");
		ranks = s ? atoi(s) : 0;
		if (ranks <= 0)
			ranks = 1;
	}
	int64_t avail = mem_available();
	if (avail > 0) {
		char av[32], need[32];
		fmt_gib(avail, av, sizeof av);
		fmt_gib(e->total * ranks, need, sizeof need);
		if (e->total * ranks > avail)
			diag_check_add(r, DIAG_FAIL, "mem.host", "use ZeRO, recompute, more pipeline stages or a smaller micro-batch "
				       "(see --fit)",
				       "%d rank(s) on this host need %s, only %s available", ranks, need, av);
		else
			diag_check_add(r, DIAG_PASS, "mem.host", NULL, "%d rank(s) on this host need %s of %s available", ranks,
				       need, av);
	}

	if (o->fit > 0) {
		int world = o->world > 0 ? o->world : l->dp * l->tp * l->pp;
		struct diag_mem_fit *fits;
		int nf;
		rc = diag_mem_fit_search(c, l, world, o->fit, o->fixed_microbatches, &fits, &nf);
		if (rc) {
			free(est);
			return rc;
		}
		cJSON *fa = cJSON_AddArrayToObject(r->data, "fit");
		for (int i = 0; i < nf; i++) {
			cJSON *fo = layout_json(&fits[i].l);
			cJSON_AddNumberToObject(fo, "peak", (double)fits[i].peak);
			cJSON_AddNumberToObject(fo, "bubble", fits[i].bubble);
			cJSON_AddNumberToObject(fo, "rank", i + 1);
			cJSON_AddItemToArray(fa, fo);
		}
		cJSON_AddStringToObject(r->data, "fit_rule",
					"ranked by fewest model-parallel ranks (tp*pp), then lower ZeRO stage, then smaller "
					"pipeline bubble (p-1)/(m+p-1), then lower peak");
		char b[32];
		fmt_gib(o->fit, b, sizeof b);
		for (int i = 0; i < nf && i < 10; i++) {
			char key[32], pk[32];
			snprintf(key, sizeof key, "fit #%d", i + 1);
			fmt_gib(fits[i].peak, pk, sizeof pk);
			diag_ident_add(r, key, "dp %d tp %d pp %d zero %d m %d: peak %s, bubble %.0f%%", fits[i].l.dp,
				       fits[i].l.tp, fits[i].l.pp, fits[i].l.zero, fits[i].l.microbatches, pk,
				       100 * fits[i].bubble);
		}
		if (e->total <= o->fit)
			diag_check_add(r, DIAG_PASS, "mem.fit", NULL, "the layout needs %s per rank, within the budget %s; %d "
				       "layout(s) of %d ranks fit",
				       tot, b, nf, world);
		else if (nf)
			diag_check_add(r, DIAG_FAIL, "mem.fit", "use a layout from the fit list (best first)",
				       "the layout needs %s per rank, over the budget %s; %d layout(s) of %d ranks fit, best dp %d "
				       "tp %d pp %d zero %d m %d",
				       tot, b, nf, world, fits[0].l.dp, fits[0].l.tp, fits[0].l.pp, fits[0].l.zero,
				       fits[0].l.microbatches);
		else
			diag_check_add(r, DIAG_FAIL, "mem.fit", "add ranks, enable --recompute, or shrink the micro-batch",
				       "the layout needs %s per rank, over the budget %s, and no layout of %d ranks fits", tot, b,
				       world);
		free(fits);
	}
	free(est);
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
