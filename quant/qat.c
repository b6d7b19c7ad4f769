/* quant/qat.c — `ascent quant qat`: quantization-aware fine-tuning through the trainer.
 *
 * 1. PTQ into OUTDIR/ptq (the same scheme, calibrator, skip list, budget): the baseline QAT must
 *    beat and the source of the static input scales. Under mpirun world rank 0 computes it (inside
 *    the trainer's prepare hook, once MPI is up) and broadcasts the per-layer flags and scales.
 * 2. The trainer fine-tunes (trainer_run_with: any data-parallel or pipeline layout; tensor
 *    parallelism is refused) from the ORIGINAL fp32 weights (--init-from the source checkpoint: a
 *    fresh AdamW at step 0), with nn's fake quantization on the quantized linear layers: weights
 *    per output channel (or per tensor) min-max re-quantized from the master weights at every
 *    forward, inputs static with PTQ's calibrated scales (fixed clipping) or per-token dynamic,
 *    backward through the clipped straight-through estimator. The run directory is OUTDIR/train
 *    (config.json, metrics.jsonl, logs, the final checkpoint) like any `ascent train` run.
 * 3. World rank 0 loads the final checkpoint, quantizes its weights with PTQ's input scales, exports
 *    OUTDIR/model.safetensors and config.json, and writes quant_report.json (SQNR and single-layer
 *    ΔPPL of the fine-tuned model on PTQ's calibration and sensitivity sets).
 * The loss of step 2 is, by default, DISTILLATION: every rank holds its own copy of the fp32 source
 * as a teacher (quant's fp32 forward) and, for each micro-batch on the head chunk's rank, turns its
 * logits into soft targets (softmax, temperature 1); the trainer minimizes the mean
 * KL(teacher ‖ student) (trainer_set_soft_targets). The student starts equal to the teacher but for
 * the quantization, so the fine-tuning can only recover quantization error. With --loss ce it is the
 * training data's cross-entropy instead, and --fp32-control runs step 2 with nothing quantized and
 * exports the result as a plain fp32 checkpoint: what the same fine-tuning gains without
 * quantization-awareness (refused with distillation: that student equals its teacher). */
#include "quant/internal.h"

#include "comm/comm.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct qat_ctx {
	const struct quant_qat_opts *o;
	const char *ptqdir;
	const char *src;              /* the fp32 source checkpoint */
	int rank, world;              /* set by the prepare hook */
	int L;
	struct nn_fq_layer *lin;      /* (L, 4): PTQ's flags and static scales, every rank */
	struct quant_model teacher;   /* distillation: the fp32 source, every rank its own copy */
	int has_teacher;
};

int quant_qat_loss_parse(const char *s, enum quant_qat_loss *out)
{
	if (!strcmp(s, "distill"))
		*out = QUANT_QAT_DISTILL;
	else if (!strcmp(s, "ce"))
		*out = QUANT_QAT_CE;
	else
		return ascent_error(ASCENT_EUSAGE, "unknown QAT loss '%s' (use distill or ce)", s);
	return 0;
}

const char *quant_qat_loss_name(enum quant_qat_loss l)
{
	return l == QUANT_QAT_CE ? "ce" : "distill";
}

/* The trainer's soft-target hook: the teacher's next-token probabilities of the micro-batch. */
static int qat_soft_targets(void *arg, const int *inputs, int B, int T, float *probs)
{
	struct qat_ctx *q = arg;
	if (!q->has_teacher)
		return ascent_error(ASCENT_EINTERNAL, "qat: soft targets asked for without a teacher");
	int rc = quant_model_forward(&q->teacher, QUANT_EXEC_FP32, inputs, NULL, B, T, NULL);
	if (rc)
		return ascent_error_ctx(rc, "qat: the fp32 teacher's forward");
	const float *z = quant_model_logits(&q->teacher);
	const int N = B * T, V = q->teacher.fp.cfg.vocab_size;
#pragma omp parallel for schedule(static)
	for (int i = 0; i < N; i++) {
		const float *r = z + (size_t)i * V;
		float *p = probs + (size_t)i * V;
		double mx = -INFINITY, s = 0;
		for (int v = 0; v < V; v++)
			mx = r[v] > mx ? r[v] : mx;
		for (int v = 0; v < V; v++)
			s += exp((double)r[v] - mx);
		double lse = mx + log(s);
		for (int v = 0; v < V; v++)
			p[v] = (float)exp((double)r[v] - lse);
	}
	return 0;
}

/* Every rank: the fp32 source as the distillation teacher. */
static int qat_load_teacher(struct qat_ctx *q)
{
	struct nn_gpt m;
	int rc = trainer_model_open(q->src, &m);
	if (!rc)
		rc = quant_model_init(&q->teacher, &m, q->o->ptq.scheme, q->o->ptq.per_tensor);
	if (rc)
		return ascent_error_ctx(rc, "qat: loading the fp32 teacher '%s'", q->src);
	q->has_teacher = 1;
	log_info("qat: distillation from the fp32 teacher %s (its own copy on this rank, temperature 1)", q->src);
	return 0;
}

/* The trainer's prepare hook, on every rank: world rank 0 runs PTQ, everybody gets its scales. */
static int qat_prepare(void *arg, struct comm *comm, struct nn_fake_quant *fq)
{
	struct qat_ctx *q = arg;
	const struct quant_ptq_opts *po = &q->o->ptq;
	q->rank = comm ? comm_rank(comm, COMM_WORLD) : 0;
	q->world = comm ? comm_size(comm, COMM_WORLD) : 1;
	if (q->o->fp32_control)
		return 0;
	int n = q->L * NN_FQ_PER_LAYER, rc = 0;
	if (q->o->loss == QUANT_QAT_DISTILL && (rc = qat_load_teacher(q)))
		return rc;
	int *on = calloc((size_t)n + 1, sizeof *on);
	float *scale = calloc((size_t)n, sizeof *scale);
	if (!on || !scale) {
		free(on);
		free(scale);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (q->rank == 0) {
		struct quant_ptq_opts p = *po;
		p.out = q->ptqdir;
		p.quiet = 1;
		rc = quant_ptq_run(&p);
		if (rc)
			rc = ascent_error_ctx(rc, "qat: the PTQ starting point failed");
		struct quant_model qm;
		if (!rc && !(rc = quant_model_open(q->ptqdir, &qm, NULL, 0))) {
			if (qm.nlin != n)
				rc = ascent_error(ASCENT_EINTERNAL, "qat: '%s' has %d linear layers, expected %d", q->ptqdir, qm.nlin, n);
			for (int i = 0; i < n && !rc; i++) {
				on[i] = qm.lin[i].quantized;
				scale[i] = qm.lin[i].in_scale;
			}
			quant_model_release(&qm);
		}
		on[n] = rc;
	}
	if (comm && q->world > 1) {
		/* rank 0's message travels too: whichever rank mpirun lets print first says what failed */
		char msg[1024] = "";
		if (q->rank == 0 && on[n])
			snprintf(msg, sizeof msg, "%s", ascent_errmsg());
		int r = comm_broadcast(comm, COMM_WORLD, on, (size_t)n + 1, COMM_I32, 0);
		if (!r)
			r = comm_broadcast(comm, COMM_WORLD, scale, (size_t)n, COMM_F32, 0);
		if (!r)
			r = comm_broadcast(comm, COMM_WORLD, msg, sizeof msg, COMM_BYTE, 0);
		msg[sizeof msg - 1] = 0;
		if (!rc && r)
			rc = r;
		if (!rc && on[n])
			rc = ascent_error(on[n], "%s (on rank 0)", msg[0] ? msg : "rank 0 could not compute the PTQ starting point");
	}
	for (int i = 0; i < n && !rc; i++)
		q->lin[i] = (struct nn_fq_layer){ .on = on[i], .in_scale = scale[i] };
	free(on);
	free(scale);
	if (rc)
		return rc;
	fq->n_layer = q->L;
	fq->per_tensor = po->per_tensor;
	fq->act = po->scheme == QUANT_W8A8_STATIC ? NN_FQ_ACT_STATIC
		  : po->scheme == QUANT_W8A8_DYNAMIC ? NN_FQ_ACT_DYNAMIC : NN_FQ_ACT_NONE;
	fq->lin = q->lin;
	log_info("qat: fake quantization %s from %s (PTQ baseline), weights per %s", quant_scheme_name(po->scheme),
		 q->ptqdir, po->per_tensor ? "tensor" : "output channel");
	return 0;
}

/* The loss of the first and the last line of the run's metrics.jsonl. */
static int read_losses(const char *run, double *first, double *last)
{
	char path[TRAINER_PATH_MAX + 32], line[4096];
	snprintf(path, sizeof path, "%s/metrics.jsonl", run);
	FILE *f = fopen(path, "r");
	if (!f)
		return ascent_error(ASCENT_EIO, "cannot read '%s'", path);
	int n = 0;
	while (fgets(line, sizeof line, f)) {
		cJSON *o = cJSON_Parse(line);
		const cJSON *l = o ? cJSON_GetObjectItemCaseSensitive(o, "loss") : NULL;
		if (cJSON_IsNumber(l)) {
			if (!n++)
				*first = l->valuedouble;
			*last = l->valuedouble;
		}
		cJSON_Delete(o);
	}
	fclose(f);
	return n ? 0 : ascent_error(ASCENT_EINPUT, "'%s' holds no step", path);
}

/* quant_report.json, written atomically like PTQ's. */
static int write_report(const char *path, const struct quant_qat_opts *o, const struct qat_ctx *q,
			const struct quant_model *qm, const char *src, const char *train, int T, double first,
			double last, const double *sqnr, const double *dppl, double wall_s)
{
	cJSON *r = cJSON_CreateObject();
	if (!r)
		return ascent_error(ASCENT_ENOMEM, "out of memory for '%s'", path);
	cJSON_AddStringToObject(r, "producer", "qat");
	cJSON_AddStringToObject(r, "source", src);
	cJSON_AddStringToObject(r, "scheme", quant_scheme_name(qm->scheme));
	cJSON_AddStringToObject(r, "loss", quant_qat_loss_name(o->loss));
	cJSON_AddNumberToObject(r, "steps", o->steps);
	cJSON_AddNumberToObject(r, "batch", o->batch);
	cJSON_AddNumberToObject(r, "seq", T);
	cJSON_AddNumberToObject(r, "lr", o->lr);
	cJSON_AddNumberToObject(r, "ranks", q->world);
	cJSON_AddNumberToObject(r, "first_loss", first);
	cJSON_AddNumberToObject(r, "last_loss", last);
	cJSON_AddStringToObject(r, "ptq_baseline", q->ptqdir);
	cJSON_AddStringToObject(r, "train", train);
	cJSON_AddNumberToObject(r, "wall_s", wall_s);
	cJSON *arr = cJSON_AddArrayToObject(r, "layers");
	if (!arr) {
		cJSON_Delete(r);
		return ascent_error(ASCENT_ENOMEM, "out of memory for '%s'", path);
	}
	for (int i = 0; i < qm->nlin; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddStringToObject(e, "name", qm->lin[i].name);
		cJSON_AddBoolToObject(e, "quantized", qm->lin[i].quantized);
		cJSON_AddNumberToObject(e, "input_scale", qm->lin[i].in_scale);
		if (isfinite(sqnr[i]))
			cJSON_AddNumberToObject(e, "sqnr_db", sqnr[i]);
		if (isfinite(dppl[i]))
			cJSON_AddNumberToObject(e, "delta_ppl_pct", dppl[i]);
		cJSON_AddItemToArray(arr, e);
	}
	int rc = json_write_file(path, r);
	cJSON_Delete(r);
	return rc;
}

/* Rank 0, after the training: export the fine-tuned weights (fp32 control, or quantized with PTQ's
 * scales) and the report. */
static int qat_export(const struct quant_qat_opts *o, const struct qat_ctx *q, const char *src, const char *train,
		      int T, int64_t t0)
{
	const struct quant_ptq_opts *po = &o->ptq;
	char ck[TRAINER_PATH_MAX + 64], path[TRAINER_PATH_MAX + 32];
	double first = 0, last = 0;
	snprintf(ck, sizeof ck, "%s/ckpt/step-%06d", train, o->steps);
	struct nn_gpt m;
	int rc = read_losses(train, &first, &last);
	if (!rc)
		rc = trainer_model_open(ck, &m);
	if (rc)
		return rc;
	if (o->fp32_control) {
		/* a plain fp32 checkpoint ('ascent eval' reads it) */
		rc = fs_mkdir_p(po->out);
		snprintf(path, sizeof path, "%s/model.safetensors", po->out);
		if (!rc)
			rc = trainer_model_save(path, &m);
		snprintf(path, sizeof path, "%s/config.json", po->out);
		if (!rc)
			rc = trainer_hf_config_write(path, &m.cfg);
		nn_gpt_release(&m);
		if (!rc && !po->quiet)
			printf("wrote the fp32 control %s/model.safetensors, config.json (train loss %.4f -> %.4f, %d rank(s), "
			       "run %s) in %.1f s\n", po->out, first, last, q->world, train, (double)(clock_ns() - t0) / 1e9);
		return rc;
	}
	struct quant_model qm;
	rc = quant_model_init(&qm, &m, po->scheme, po->per_tensor);   /* takes m, also on failure */
	if (rc)
		return rc;
	for (int i = 0; i < qm.nlin; i++) {
		qm.lin[i].quantized = q->lin[i].on;
		qm.lin[i].in_scale = po->scheme == QUANT_W8A8_STATIC && q->lin[i].on ? q->lin[i].in_scale : 0.0f;
	}
	rc = quant_model_quantize_weights(&qm);
	struct quant_save_info si = { po->scheme == QUANT_W8A8_STATIC ? quant_method_name(po->method) : NULL, po->smooth,
				      src, "qat" };
	if (!rc)
		rc = quant_save(po->out, &qm, &si);
	/* the per-layer report of the fine-tuned model: SQNR and single-layer ΔPPL on PTQ's sets */
	double *sqnr = calloc((size_t)qm.nlin, sizeof *sqnr), *dppl = calloc((size_t)qm.nlin, sizeof *dppl), sbase = 0;
	struct quant_seqset cal = { 0 }, sens = { 0 };
	if (!rc && (!sqnr || !dppl))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc)
		rc = quant_ptq_sets(po, src, qm.fp.cfg.vocab_size, T, &cal, &sens);
	if (!rc)
		rc = quant_analyze(&qm, &cal, &sens, sqnr, dppl, &sbase);
	if (!rc && po->db)
		rc = quant_db_write(po->db, &qm, sqnr, dppl, si.method, po->smooth, "qat", src, po->out);
	snprintf(path, sizeof path, "%s/quant_report.json", po->out);
	if (!rc)
		rc = write_report(path, o, q, &qm, src, train, T, first, last, sqnr, dppl, (double)(clock_ns() - t0) / 1e9);
	if (!rc && !po->quiet)
		printf("wrote %s/model.safetensors, config.json, quant_report.json (train %s %.6g -> %.6g with fake "
		       "quantization, %d rank(s), run %s; PTQ baseline in %s: compare with 'ascent quant eval --ckpt DIR' "
		       "on both) in %.1f s\n", po->out, o->loss == QUANT_QAT_CE ? "loss" : "KL to the fp32 teacher", first,
		       last, q->world, train, q->ptqdir, (double)(clock_ns() - t0) / 1e9);
	free(sqnr);
	free(dppl);
	quant_seqset_free(&cal);
	quant_seqset_free(&sens);
	quant_model_release(&qm);
	return rc;
}

/* An OUTDIR of an earlier `quant qat` (finished: a quantized checkpoint; or stopped: its ptq/):
 * its own, so the QAT-run check below gives the message. */
static int qat_is_own(const char *dir)
{
	char p[TRAINER_PATH_MAX + 16];
	snprintf(p, sizeof p, "%s/ptq", dir);
	return quant_is_quantized_ckpt(dir) || quant_is_quantized_ckpt(p);
}

int quant_qat_run(const struct quant_qat_opts *o)
{
	int64_t t0 = clock_ns();
	const struct quant_ptq_opts *po = &o->ptq;
	if (!po->out || !*po->out)
		return ascent_error(ASCENT_EUSAGE, "missing -o OUTDIR (where the quantized checkpoint goes)");
	if (o->steps < 1 || o->batch < 1 || !(o->lr > 0))
		return ascent_error(ASCENT_EUSAGE, "qat needs --steps >= 1, --batch >= 1 and --lr > 0");
	if (o->tp > 1)
		return ascent_error(ASCENT_EUSAGE, "qat: --tp %d is not supported: fake quantization of the row-parallel "
				    "layers would need a cross-rank max of their scales (use data parallelism, the default "
				    "under mpirun, or --pp)", o->tp);
	if (o->fp32_control && o->loss != QUANT_QAT_CE)
		return ascent_error(ASCENT_EUSAGE, "qat: --fp32-control needs --loss ce: with distillation an fp32 student "
				    "starts equal to its fp32 teacher (KL 0), so there is nothing to learn; the fair control of "
				    "distilled QAT is the PTQ baseline in OUTDIR/ptq");
	if (o->loss != QUANT_QAT_DISTILL && o->loss != QUANT_QAT_CE)
		return ascent_error(ASCENT_EUSAGE, "qat: bad loss %d", (int)o->loss);
	if (po->smooth >= 0)
		return ascent_error(ASCENT_EUSAGE, "qat: --smooth is not supported: QAT fine-tunes the fp32 weights, and "
				    "SmoothQuant's folding would change the activations the static scales were calibrated on "
				    "(run 'ascent quant ptq --smooth' for that baseline)");
	char src[TRAINER_PATH_MAX], ptqdir[TRAINER_PATH_MAX + 16], train[TRAINER_PATH_MAX + 16];
	int rc = trainer_ckpt_resolve(po->ckpt, src, sizeof src);
	if (rc)
		return rc;
	const char *ins[] = { src, po->ckpt, po->calib, po->db };
	struct fs_output fo = { .cmd = "quant qat", .option = "-o", .path = po->out, .inputs = ins, .ninputs = 4,
				.is_own = qat_is_own, .force = po->force, .folder = 1 };
	if ((rc = fs_output_check(&fo)))
		return rc;
	if (quant_is_quantized_ckpt(src))
		return ascent_error(ASCENT_EINPUT, "'%s' is already quantized (pass the fp32 checkpoint)", src);
	snprintf(ptqdir, sizeof ptqdir, "%s/ptq", po->out);
	snprintf(train, sizeof train, "%s/train", po->out);
	char p[TRAINER_PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/config.json", train);
	if (strlen(train) >= TRAINER_PATH_MAX)
		return ascent_error(ASCENT_EUSAGE, "-o '%s' is too long", po->out);
	if (fs_exists(p))
		return ascent_error(ASCENT_EUSAGE, "'%s' already holds a QAT run: pass another -o OUTDIR or remove it", train);
	struct nn_config mc;
	if ((rc = trainer_hf_config_read(src, &mc)))
		return rc;
	int ts = quant_trained_seq(src, &mc), T = po->seq > 0 ? po->seq : (ts < 256 ? ts : 256);
	if ((rc = trainer_check_seq(T, &mc)))
		return rc;

	/* the trainer's configuration: the source run's data and split, fine-tuning from its weights */
	struct trainer_config run, c;
	if ((rc = quant_ckpt_config(src, &run)))
		return rc;
	trainer_config_defaults(&c);
	if (run.preset[0])
		snprintf(c.preset, sizeof c.preset, "%s", run.preset);
	memcpy(c.data, run.data, sizeof c.data);
	memcpy(c.val_data, run.val_data, sizeof c.val_data);
	c.val_fraction = run.val_fraction;
	snprintf(c.init_from, sizeof c.init_from, "%s", src);
	snprintf(c.out, sizeof c.out, "%s", train);
	c.steps = o->steps;
	c.batch = o->batch;
	c.seq = T;
	c.lr = o->lr;
	c.min_lr = o->lr / 10;
	c.warmup = o->steps < 100 ? o->steps / 10 : 10;
	c.weight_decay = 0.0;
	c.clip = 1.0;
	c.seed = o->seed;
	c.threads = po->threads;
	c.tp = 1;
	c.pp = o->pp > 0 ? o->pp : 1;
	c.eval_every = 0;
	c.ckpt_every = 0;
	if ((rc = trainer_config_finish(&c)))
		return ascent_error_ctx(rc, "qat");

	struct qat_ctx q = { .o = o, .ptqdir = ptqdir, .src = src, .L = mc.n_layer };
	q.lin = calloc((size_t)mc.n_layer * NN_FQ_PER_LAYER, sizeof *q.lin);
	if (!q.lin)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	struct trainer_hooks h = { .prepare = qat_prepare, .arg = &q,
				   .soft_targets = o->loss == QUANT_QAT_DISTILL ? qat_soft_targets : NULL };
	rc = trainer_run_with(&c, &h);
	if (q.has_teacher)
		quant_model_release(&q.teacher);
	if (!rc && q.rank == 0)
		rc = qat_export(o, &q, src, train, T, t0);
	free(q.lin);
	return rc;
}
