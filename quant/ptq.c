/* quant/ptq.c — `ascent quant ptq`: post-training quantization of an fp32 checkpoint.
 *
 * Data: calibration and the sensitivity set are sequences of the checkpoint's TRAIN split (or of
 * --calib), evenly spaced and disjoint (calibration takes the even slots, sensitivity the odd
 * ones); the validation split, on which `quant eval` measures perplexity, is never read here.
 * Steps: optional SmoothQuant (per-channel amax of the inputs of c_attn and c_fc, folded into
 * ln_1/ln_2), per-channel (or per-tensor) weight quantization, one calibration pass with an
 * observer on every linear input (all methods computed, the chosen one used for static scales),
 * per-layer SQNR of the output against fp32 on the calibration data, per-layer ΔPPL on the
 * sensitivity set (only that layer quantized, fake-quant), the --budget fallback, then export. */
#include "quant/internal.h"
#include "db/db.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

void quant_ptq_defaults(struct quant_ptq_opts *o)
{
	memset(o, 0, sizeof *o);
	o->scheme = QUANT_W8A8_DYNAMIC;
	o->method = QUANT_PERCENTILE;
	o->percentile = 99.99;
	o->calib_seqs = 16;
	o->budget = -1;
	o->smooth = -1;
	o->sens_seqs = 4;
}

/* ------------------------------------------------------------------------------------------ */

void quant_seqset_free(struct quant_seqset *s)
{
	free(s->inputs);
	free(s->targets);
	memset(s, 0, sizeof *s);
}

int quant_make_sets(const uint16_t *tok, size_t n, int T, int ncal, int nsens, struct quant_seqset *cal,
		    struct quant_seqset *sens, const char *what)
{
	memset(cal, 0, sizeof *cal);
	memset(sens, 0, sizeof *sens);
	int slots = 2 * (ncal > nsens ? ncal : nsens);
	if (n < (size_t)slots * (T + 1))
		return ascent_error(ASCENT_EINPUT, "%s has %zu tokens, fewer than the %d x %d needed for %d calibration "
						   "and %d sensitivity sequences (use fewer --calib-seqs or a shorter --seq)",
				    what, n, slots, T + 1, ncal, nsens);
	size_t stride = n / (size_t)slots;
	struct quant_seqset *sets[2] = { cal, sens };
	int counts[2] = { ncal, nsens };
	for (int k = 0; k < 2; k++) {
		struct quant_seqset *s = sets[k];
		s->n = counts[k];
		s->T = T;
		s->inputs = malloc(((size_t)s->n * T + 1) * sizeof(int));
		s->targets = malloc(((size_t)s->n * T + 1) * sizeof(int));
		if (!s->inputs || !s->targets) {
			quant_seqset_free(cal);
			quant_seqset_free(sens);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		for (int i = 0; i < s->n; i++) {
			size_t off = (size_t)(2 * i + k) * stride;
			for (int t = 0; t < T; t++) {
				s->inputs[(size_t)i * T + t] = tok[off + t];
				s->targets[(size_t)i * T + t] = tok[off + t + 1];
			}
		}
	}
	return 0;
}

int quant_ptq_sets(const struct quant_ptq_opts *o, const char *dir, int vocab, int T, struct quant_seqset *cal,
		   struct quant_seqset *sens)
{
	struct trainer_data d;
	struct trainer_tokens ct = { 0 };
	const uint16_t *tok = NULL;
	size_t ntok = 0;
	char what[TRAINER_PATH_MAX + 64];
	int rc;
	memset(&d, 0, sizeof d);
	memset(cal, 0, sizeof *cal);
	memset(sens, 0, sizeof *sens);
	if (o->calib) {
		rc = trainer_tokens_load(o->calib, vocab, &ct);
		tok = ct.tok;
		ntok = ct.n;
		snprintf(what, sizeof what, "'%s'", o->calib);
	} else {
		rc = quant_ckpt_data(dir, &d);
		tok = d.train;
		ntok = d.ntrain;
		snprintf(what, sizeof what, "the checkpoint's training split");
	}
	if (!rc)
		rc = quant_make_sets(tok, ntok, T, o->calib_seqs, o->sens_seqs, cal, sens, what);
	trainer_data_release(&d);
	trainer_tokens_release(&ct);
	return rc;
}

#define CALIB_B 4

/* Mean loss over a set in batches of CALIB_B. */
int quant_set_loss(struct quant_model *qm, enum quant_exec ex, const struct quant_seqset *s, const struct quant_hooks *h,
		   double *loss)
{
	double sum = 0;
	int64_t ntok = 0;
	for (int i = 0; i < s->n; i += CALIB_B) {
		int B = s->n - i < CALIB_B ? s->n - i : CALIB_B;
		int rc = quant_model_forward(qm, ex, s->inputs + (size_t)i * s->T, s->targets + (size_t)i * s->T, B, s->T, h);
		if (rc)
			return rc;
		sum += (double)qm->loss * B * s->T;
		ntok += (int64_t)B * s->T;
	}
	*loss = ntok ? sum / (double)ntok : 0;
	return 0;
}

/* Hooks */
struct smooth_ctx {
	float *amax;                 /* (L,2,C) */
	int C;
};

static void smooth_hook(void *ctx, int li, const float *x, const float *y, int N, int K, int OC)
{
	(void)y;
	(void)OC;
	struct smooth_ctx *s = ctx;
	int kind = li % QUANT_LIN_PER_LAYER, l = li / QUANT_LIN_PER_LAYER;
	if (kind != QUANT_C_ATTN && kind != QUANT_C_FC)
		return;
	float *a = s->amax + ((size_t)l * 2 + (kind == QUANT_C_FC)) * s->C;
	for (int n = 0; n < N; n++)
		for (int k = 0; k < K; k++) {
			float v = fabsf(x[(size_t)n * K + k]);
			a[k] = v > a[k] ? v : a[k];
		}
}

static void calib_hook(void *ctx, int li, const float *x, const float *y, int N, int K, int OC)
{
	(void)y;
	(void)OC;
	struct quant_observer *obs = ctx;
	quant_observer_update(&obs[li], x, (size_t)N * K);
}

struct sqnr_ctx {
	struct quant_model *qm;
	double *sig, *noise;         /* nlin */
	float *tmp;                  /* (4·T, 4C) */
	int rc;
};

static void sqnr_hook(void *ctx, int li, const float *x, const float *y, int N, int K, int OC)
{
	(void)K;
	struct sqnr_ctx *c = ctx;
	if (!c->qm->lin[li].wq || c->rc)
		return;
	int rc = quant_layer_forward(c->qm, li, QUANT_EXEC_FAKE, x, c->tmp, N);
	if (rc) {
		c->rc = rc;
		return;
	}
	double s = 0, e = 0;
	for (size_t i = 0; i < (size_t)N * OC; i++) {
		double d = (double)y[i] - c->tmp[i];
		s += (double)y[i] * y[i];
		e += d * d;
	}
	c->sig[li] += s;
	c->noise[li] += e;
}

static double dppl_pct(double loss, double base)
{
	return (exp(loss - base) - 1.0) * 100.0;
}

int quant_analyze(struct quant_model *qm, const struct quant_seqset *cal, const struct quant_seqset *sens,
		  double *sqnr, double *dppl, double *base)
{
	int nl = qm->nlin, C = qm->fp.cfg.n_embd;
	int *keep = malloc((size_t)nl * sizeof *keep);
	double *sig = calloc((size_t)nl, sizeof *sig), *noise = calloc((size_t)nl, sizeof *noise);
	float *tmp = malloc((size_t)CALIB_B * (cal->T > 0 ? cal->T : 1) * 4 * C * sizeof *tmp);
	int rc = 0;
	*base = 0;
	if (!keep || !sig || !noise || !tmp)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < nl; i++) {
		keep[i] = qm->lin[i].quantized;
		sqnr[i] = dppl[i] = NAN;
	}
	/* SQNR: the fp32 forward feeds each layer; its fake-quant output is compared on the same input */
	struct sqnr_ctx sc = { qm, sig, noise, tmp, 0 };
	struct quant_hooks h = { sqnr_hook, &sc };
	double l;
	if (!rc)
		rc = quant_set_loss(qm, QUANT_EXEC_FP32, cal, &h, &l);
	if (!rc)
		rc = sc.rc;
	for (int i = 0; !rc && i < nl; i++)
		if (qm->lin[i].wq)
			sqnr[i] = quant_sqnr_db(sig[i], noise[i]);
	/* ΔPPL with only layer i fake-quantized */
	if (!rc && sens->n > 0) {
		rc = quant_set_loss(qm, QUANT_EXEC_FP32, sens, NULL, base);
		for (int i = 0; i < nl && !rc; i++) {
			if (!qm->lin[i].wq)
				continue;
			for (int j = 0; j < nl; j++)
				qm->lin[j].quantized = j == i;
			rc = quant_set_loss(qm, QUANT_EXEC_FAKE, sens, NULL, &l);
			dppl[i] = dppl_pct(l, *base);
		}
	}
	for (int i = 0; keep && i < nl; i++)
		qm->lin[i].quantized = keep[i];
	free(keep);
	free(sig);
	free(noise);
	free(tmp);
	return rc;
}

int quant_db_write(const char *path, const struct quant_model *qm, const double *sqnr, const double *dppl,
		   const char *method, double smooth, const char *producer, const char *source, const char *out)
{
	struct db *db = NULL;
	int rc = db_open(path, fs_exists(path) ? DB_UPDATE : DB_CREATE, &db);
	if (rc)
		return ascent_error_ctx(rc, "--db '%s'", path);
	rc = db_begin(db);
	for (int i = 0; i < qm->nlin && !rc; i++) {
		const struct quant_layer *q = &qm->lin[i];
		float wmax = 0;
		for (int k = 0; q->wscale && k < q->out; k++)
			wmax = q->wscale[k] > wmax ? q->wscale[k] : wmax;
		int stat = qm->scheme == QUANT_W8A8_STATIC;
		const char *m = !q->quantized ? "fp32"
				: stat ? (method ? method : "minmax")
				: qm->scheme == QUANT_W8A8_DYNAMIC ? "dynamic" : "weight-only";
		double scale = !q->quantized ? NAN : stat ? (double)q->in_scale : (double)wmax;
		cJSON *d = cJSON_CreateObject();
		cJSON_AddStringToObject(d, "producer", producer);
		cJSON_AddStringToObject(d, "scheme", quant_scheme_name(qm->scheme));
		cJSON_AddStringToObject(d, "weights", qm->per_tensor ? "per-tensor" : "per-channel");
		cJSON_AddBoolToObject(d, "quantized", q->quantized);
		if (isfinite(dppl[i]))
			cJSON_AddNumberToObject(d, "delta_ppl_pct", dppl[i]);
		else
			cJSON_AddNullToObject(d, "delta_ppl_pct");
		if (q->wscale)
			cJSON_AddNumberToObject(d, "weight_amax", (double)wmax * NN_QMAX);
		if (stat)
			cJSON_AddNumberToObject(d, "input_scale", q->in_scale);
		if (smooth >= 0)
			cJSON_AddNumberToObject(d, "smooth_alpha", smooth);
		cJSON_AddStringToObject(d, "source", source ? source : "");
		cJSON_AddStringToObject(d, "out", out ? out : "");
		char *txt = cJSON_PrintUnformatted(d);
		cJSON_Delete(d);
		if (!txt) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		rc = db_put_quant_layer(db, q->name, m, scale, sqnr[i], txt);
		free(txt);
	}
	if (rc)
		db_rollback(db);
	else
		rc = db_commit(db);
	db_close(db);
	return rc;
}

static int skip_match(const char *skip, const char *name)
{
	if (!skip || !*skip)
		return 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", skip);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (*tok && strstr(name, tok))
			return 1;
	return 0;
}

/* What a PTQ run computed, for its report (JSON) and its text summary. */
struct ptq_result {
	const char *dir;                 /* the fp32 checkpoint */
	const struct quant_model *qm;    /* layers: quantized or kept in fp32, scales */
	const struct quant_observer *obs;
	const double *sqnr, *lay_dppl;   /* per layer */
	int T, ncal, nsens, nfallback, nq;
	double sens_base, sens_all, wall;
};

/* quant_report.json's document. */
static cJSON *ptq_report_json(const struct quant_ptq_opts *o, const struct ptq_result *r)
{
	cJSON *rep = cJSON_CreateObject();
	cJSON_AddStringToObject(rep, "producer", "ptq");
	cJSON_AddStringToObject(rep, "source", r->dir);
	cJSON_AddStringToObject(rep, "scheme", quant_scheme_name(o->scheme));
	cJSON_AddStringToObject(rep, "weights", o->per_tensor ? "per-tensor" : "per-channel");
	if (o->scheme == QUANT_W8A8_STATIC) {
		cJSON_AddStringToObject(rep, "method", quant_method_name(o->method));
		if (o->method == QUANT_PERCENTILE)
			cJSON_AddNumberToObject(rep, "percentile", o->percentile);
	}
	if (o->smooth >= 0)
		cJSON_AddNumberToObject(rep, "smooth_alpha", o->smooth);
	cJSON *cj = cJSON_AddObjectToObject(rep, "calibration");
	cJSON_AddStringToObject(cj, "data", o->calib ? o->calib : "train split of the checkpoint's data");
	cJSON_AddNumberToObject(cj, "sequences", r->ncal);
	cJSON_AddNumberToObject(cj, "seq", r->T);
	cJSON_AddNumberToObject(cj, "tokens", (double)r->ncal * r->T);
	cJSON *sj = cJSON_AddObjectToObject(rep, "sensitivity");
	cJSON_AddNumberToObject(sj, "sequences", r->nsens);
	cJSON_AddStringToObject(sj, "data", "train split, disjoint from the calibration sequences");
	if (r->nsens) {
		cJSON_AddNumberToObject(sj, "fp32_loss", r->sens_base);
		cJSON_AddNumberToObject(sj, "quant_loss", r->sens_all);
		cJSON_AddNumberToObject(sj, "delta_ppl_pct", dppl_pct(r->sens_all, r->sens_base));
	}
	if (o->budget >= 0)
		cJSON_AddNumberToObject(rep, "budget_pct", o->budget);
	cJSON_AddNumberToObject(rep, "fallback_layers", r->nfallback);
	cJSON_AddNumberToObject(rep, "quantized_layers", r->nq);
	cJSON_AddNumberToObject(rep, "r->wall_s", r->wall);
	cJSON *arr = cJSON_AddArrayToObject(rep, "layers");
	for (int i = 0; i < r->qm->nlin; i++) {
		const struct quant_layer *q = &r->qm->lin[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", q->name);
		cJSON_AddBoolToObject(e, "quantized", q->quantized);
		cJSON_AddNumberToObject(e, "sqnr_db", r->sqnr[i]);
		if (r->nsens)
			cJSON_AddNumberToObject(e, "delta_ppl_pct", r->lay_dppl[i]);
		float wmax = 0;
		for (int k = 0; k < q->out; k++)
			wmax = q->wscale[k] > wmax ? q->wscale[k] : wmax;
		cJSON_AddNumberToObject(e, "weight_amax", wmax * NN_QMAX);
		if (o->scheme == QUANT_W8A8_STATIC)
			cJSON_AddNumberToObject(e, "input_scale", q->in_scale);
		cJSON *am = cJSON_AddObjectToObject(e, "input_amax");
		for (int k = 0; k < QUANT_NMETHODS; k++)
			cJSON_AddNumberToObject(am, quant_method_name((enum quant_method)k),
						quant_observer_amax(&r->obs[i], (enum quant_method)k, o->percentile));
		cJSON_AddItemToArray(arr, e);
	}
	return rep;
}

/* The text summary of a PTQ run (stdout). */
static void ptq_print(const struct quant_ptq_opts *o, const struct ptq_result *r)
{
	printf("quantized %s -> %s (%s, weights %s%s%s)\n", r->dir, o->out, quant_scheme_name(o->scheme),
	       o->per_tensor ? "per-tensor" : "per-channel",
	       o->scheme == QUANT_W8A8_STATIC ? ", activations " : "",
	       o->scheme == QUANT_W8A8_STATIC ? quant_method_name(o->method) : "");
	printf("calibration: %d x %d tokens of %s; sensitivity: %d sequences (train split)\n", r->ncal, r->T,
	       o->calib ? o->calib : "the train split", r->nsens);
	printf("\n%-20s %5s %9s %10s %10s %10s\n", "layer", "int8", "SQNR dB", "dPPL %", "in amax", "w amax");
	for (int i = 0; i < r->qm->nlin; i++) {
		const struct quant_layer *q = &r->qm->lin[i];
		float wmax = 0;
		for (int k = 0; k < q->out; k++)
			wmax = q->wscale[k] > wmax ? q->wscale[k] : wmax;
		printf("%-20s %5s %9.2f %10.4f %10.4g %10.4g\n", q->name, q->quantized ? "yes" : "fp32",
		       r->sqnr[i], r->nsens ? r->lay_dppl[i] : NAN,
		       quant_observer_amax(&r->obs[i], o->scheme == QUANT_W8A8_STATIC ? o->method : QUANT_MINMAX,
					   o->percentile),
		       wmax * NN_QMAX);
	}
	if (r->nsens)
		printf("\nsensitivity set: fp32 loss %.4f, quantized %.4f (dPPL %+.3f%%)\n", r->sens_base, r->sens_all,
		       dppl_pct(r->sens_all, r->sens_base));
	if (r->nfallback)
		printf("budget %.3g%%: %d layer%s kept in fp32\n", o->budget, r->nfallback, r->nfallback == 1 ? "" : "s");
	printf("wrote %s/model.safetensors, config.json, quant_report.json (%.1f s)\n", o->out, r->wall);
	if (o->db)
		printf("stored %d layers in %s (table quant_layer)\n", r->qm->nlin, o->db);
}

/* The options, the output folder and --db checked before any work; dir gets the checkpoint resolved. */
static int ptq_check(const struct quant_ptq_opts *o, char *dir, size_t dirsize)
{
	if (!o->out || !*o->out)
		return ascent_error(ASCENT_EUSAGE, "missing -o OUTDIR (where the quantized checkpoint goes)");
	if (o->smooth >= 0 && o->scheme == QUANT_W8)
		return ascent_error(ASCENT_EUSAGE, "--smooth does not apply to scheme w8 (weight-only has no activation "
						   "outliers to migrate; use w8a8-dynamic or w8a8-static)");
	if (o->calib_seqs < 1)
		return ascent_error(ASCENT_EUSAGE, "--calib-seqs must be at least 1");
	int rc = trainer_ckpt_resolve(o->ckpt, dir, dirsize);
	if (rc)
		return rc;
	const char *ins[] = { dir, o->ckpt, o->calib, o->db };
	struct fs_output fo = { .cmd = "quant ptq", .option = "-o", .path = o->out, .inputs = ins, .ninputs = 4,
				.is_own = quant_is_quantized_ckpt, .force = o->force, .folder = 1 };
	if ((rc = fs_output_check(&fo)))
		return rc;
	if (o->db) {
		/* refuse a bad database before the work, not after the checkpoint is written */
		struct db *db = NULL;
		rc = db_open(o->db, fs_exists(o->db) ? DB_UPDATE : DB_CREATE, &db);
		db_close(db);
		if (rc)
			return ascent_error_ctx(rc, "--db '%s'", o->db);
	}
	if (quant_is_quantized_ckpt(dir))
		return ascent_error(ASCENT_EINPUT, "'%s' is already quantized (pass the fp32 checkpoint it came from)", dir);
	return 0;
}

/* Step 6 of quant_ptq_run: the whole model's loss on the sensitivity set, layers falling back to
 * fp32 (most sensitive first) while it exceeds --budget; *nfallback the layers that fell back. */
static int ptq_budget_fallback(const struct quant_ptq_opts *o, struct quant_model *qm, const struct quant_seqset *sens,
			       const double *lay_dppl, double sens_base, double *sens_all, int *nfallback)
{
	*nfallback = 0;
	if (sens->n <= 0)
		return 0;
	int rc = quant_set_loss(qm, QUANT_EXEC_FAKE, sens, NULL, sens_all);
	while (!rc && o->budget >= 0 && dppl_pct(*sens_all, sens_base) > o->budget) {
		int worst = -1;
		for (int i = 0; i < qm->nlin; i++)
			if (qm->lin[i].quantized && (worst < 0 || lay_dppl[i] > lay_dppl[worst]))
				worst = i;
		if (worst < 0)
			break;
		qm->lin[worst].quantized = 0;
		(*nfallback)++;
		rc = quant_set_loss(qm, QUANT_EXEC_FAKE, sens, NULL, sens_all);
	}
	return rc;
}

int quant_ptq_run(const struct quant_ptq_opts *o)
{
	int64_t t0 = clock_ns();
	char dir[TRAINER_PATH_MAX + 64];
	int rc = ptq_check(o, dir, sizeof dir);
	if (rc)
		return rc;
	nn_set_threads(o->threads);
	struct nn_gpt m;
	rc = trainer_model_open(dir, &m);
	if (rc)
		return ascent_error_ctx(rc, "cannot load the fp32 checkpoint");
	int ts = quant_trained_seq(dir, &m.cfg), T = o->seq > 0 ? o->seq : (ts < 256 ? ts : 256);
	if ((rc = trainer_check_seq(T, &m.cfg))) {
		nn_gpt_release(&m);
		return rc;
	}
	/* data: the train split (or --calib), never the validation split */
	struct quant_seqset cal = { 0 }, sens = { 0 };
	rc = quant_ptq_sets(o, dir, m.cfg.vocab_size, T, &cal, &sens);
	if (rc) {
		nn_gpt_release(&m);
		return rc;
	}

	struct quant_model qm;
	rc = quant_model_init(&qm, &m, o->scheme, o->per_tensor);   /* takes m, also on failure */
	if (rc) {
		quant_seqset_free(&cal);
		quant_seqset_free(&sens);
		return rc;
	}
	const struct nn_config *cfg = &qm.fp.cfg;
	int nl = qm.nlin, C = cfg->n_embd;
	struct quant_observer *obs = malloc((size_t)nl * sizeof *obs);
	double *sqnr = calloc((size_t)nl, sizeof *sqnr);
	double *lay_dppl = calloc((size_t)nl, sizeof *lay_dppl);
	float *samax = calloc((size_t)cfg->n_layer * 2 * C, sizeof *samax);
	cJSON *rep = NULL;
	if (!obs || !sqnr || !lay_dppl || !samax) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < nl; i++)
		quant_observer_init(&obs[i]);

	/* 1. SmoothQuant */
	double base_loss;
	if (o->smooth >= 0) {
		struct smooth_ctx sc = { samax, C };
		struct quant_hooks h = { smooth_hook, &sc };
		rc = quant_set_loss(&qm, QUANT_EXEC_FP32, &cal, &h, &base_loss);
		if (!rc)
			rc = quant_smooth_apply(&qm, samax, o->smooth);
		if (rc)
			goto out;
	}
	/* 2. weights (every layer, so each has an SQNR) */
	for (int i = 0; i < nl; i++)
		qm.lin[i].quantized = 1;
	rc = quant_model_quantize_weights(&qm);
	if (rc)
		goto out;
	/* 3. observers on every linear input, over the calibration set */
	struct quant_hooks ch = { calib_hook, obs };
	rc = quant_set_loss(&qm, QUANT_EXEC_FP32, &cal, &ch, &base_loss);
	if (rc)
		goto out;
	for (int i = 0; i < nl; i++)
		if (obs[i].nonfinite) {
			rc = ascent_error(ASCENT_EINPUT, "calibration: the input of layer %s holds %lld NaN or infinite "
							 "values: the fp32 forward of '%s' overflows on %s (its weights "
							 "are too large to quantize)", qm.lin[i].name, (long long)obs[i].nonfinite,
					  dir, o->calib ? o->calib : "its training split");
			goto out;
		}
	for (int i = 0; i < nl; i++)
		qm.lin[i].in_scale = o->scheme == QUANT_W8A8_STATIC
					     ? nn_quant_scale((float)quant_observer_amax(&obs[i], o->method, o->percentile))
					     : 0.0f;
	/* 4. SQNR of each layer's output (input from the fp32 model) and 5. sensitivity: ΔPPL with only
	 * layer i quantized, on the sensitivity set */
	double sens_base = 0, sens_all = 0;
	rc = quant_analyze(&qm, &cal, &sens, sqnr, lay_dppl, &sens_base);
	if (rc)
		goto out;
	for (int i = 0; i < nl; i++)
		qm.lin[i].quantized = !skip_match(o->skip, qm.lin[i].name);
	/* 6. the whole model, and the budget fallback (most sensitive first) */
	int nfallback;
	rc = ptq_budget_fallback(o, &qm, &sens, lay_dppl, sens_base, &sens_all, &nfallback);
	if (rc)
		goto out;
	int nq = 0;
	for (int i = 0; i < nl; i++)
		nq += qm.lin[i].quantized;
	if (nq == 0) {
		rc = ascent_error(ASCENT_EUSAGE, "no layer is left to quantize (--skip '%s' or --budget %g keeps every layer "
						 "in fp32)", o->skip ? o->skip : "", o->budget);
		goto out;
	}
	/* 7. export */
	struct quant_save_info si = { o->scheme == QUANT_W8A8_STATIC ? quant_method_name(o->method) : NULL, o->smooth, dir,
				      "ptq" };
	rc = quant_save(o->out, &qm, &si);
	if (rc)
		goto out;
	double wall = (double)(clock_ns() - t0) / 1e9;

	struct ptq_result res = { dir, &qm, obs, sqnr, lay_dppl, T, cal.n, sens.n, nfallback, nq, sens_base, sens_all,
				  wall };
	rep = ptq_report_json(o, &res);
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/quant_report.json", o->out);
	rc = json_write_file(path, rep);
	if (!rc && o->db)
		rc = quant_db_write(o->db, &qm, sqnr, lay_dppl, si.method, o->smooth, "ptq", dir, o->out);
	if (rc)
		goto out;
	if (!o->quiet)
		ptq_print(o, &res);
out:
	cJSON_Delete(rep);
	free(obs);
	free(sqnr);
	free(lay_dppl);
	free(samax);
	quant_seqset_free(&cal);
	quant_seqset_free(&sens);
	quant_model_release(&qm);
	return rc;
}
