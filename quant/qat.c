/* quant/qat.c — `ascent quant qat`: quantization-aware fine-tuning.
 *
 * It runs PTQ first (OUTDIR/ptq: the same scheme, calibrator, skip list; its report is the
 * baseline QAT must beat), starts from that model (dequantized weights, calibrated static input
 * scales), then fine-tunes on the train split (trainer's sampler) with fake quantization in every
 * quantized linear layer: weights per-channel min-max re-quantized every step, activations
 * per-token dynamic or static with the PTQ scale (fixed: calibrated clipping). Backward is the
 * straight-through estimator with clipping: the gradient passes where the code was not clamped
 * (|rint(x/s)| <= 127) and is zero outside. AdamW (no weight decay), gradient-norm clip 1,
 * linear warm-up then cosine to lr/10. Single process: the trainer's loop is not pluggable yet,
 * so this loop is not data-parallel. */
#include "quant/internal.h"

#include <stdlib.h>
#include <string.h>

struct qat_layer_acts {
	float *xin, *ln1, *mean1, *rstd1, *a1, *qkv, *att, *atty, *a2, *res2, *ln2, *mean2, *rstd2, *a3, *fch, *fcg, *a4;
};

struct qat {
	struct quant_model *qm;
	int B, T, N;
	float *mem;                              /* one block for every activation */
	struct qat_layer_acts *la;               /* L */
	float *xout, *lnf, *meanf, *rstdf, *logits, *lse, *losses, *dlogits, *dres, *dc, *d4, *scratch;
	float *wfake;                            /* fake-quant weights of every linear, in nn's block order */
	float **wf;                              /* nlin pointers into wfake */
	int8_t *codes;                           /* scratch for the weight codes */
	float *scales;                           /* scratch */
};

static void qat_free(struct qat *q)
{
	free(q->mem);
	free(q->la);
	free(q->wfake);
	free(q->wf);
	free(q->codes);
	free(q->scales);
	memset(q, 0, sizeof *q);
}

static int qat_init(struct qat *q, struct quant_model *qm, int B, int T)
{
	memset(q, 0, sizeof *q);
	const struct nn_config *c = &qm->fp.cfg;
	size_t N = (size_t)B * T, C = (size_t)c->n_embd, V = (size_t)c->vocab_size, L = (size_t)c->n_layer;
	size_t H = (size_t)c->n_head;
	size_t per_layer = N * C * 11 + N * 3 * C + N * 4 * C * 3 + N * 4 + (size_t)B * H * T * T;
	size_t rest = N * C * 2 + N * 2 + N * V * 2 + N * 2 + N * C * 2 + N * 4 * C + nn_attention_scratch_floats(B, T, c->n_head);
	q->qm = qm;
	q->B = B;
	q->T = T;
	q->N = (int)N;
	q->mem = malloc((per_layer * L + rest) * sizeof(float));
	q->la = calloc(L, sizeof *q->la);
	size_t wtot = 0, wmax = 0;
	for (int i = 0; i < qm->nlin; i++) {
		size_t n = (size_t)qm->lin[i].in * qm->lin[i].out;
		wtot += n;
		wmax = n > wmax ? n : wmax;
	}
	q->wfake = malloc(wtot * sizeof(float));
	q->wf = calloc((size_t)qm->nlin, sizeof *q->wf);
	q->codes = malloc(wmax);
	q->scales = malloc(4 * C * sizeof(float));
	if (!q->mem || !q->la || !q->wfake || !q->wf || !q->codes || !q->scales) {
		qat_free(q);
		return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu MiB of QAT activations (use a smaller --batch)",
				    (per_layer * L + rest) * 4 >> 20);
	}
	float *p = q->mem;
#define TAKE(dst, n) (dst = p, p += (n))
	for (size_t l = 0; l < L; l++) {
		struct qat_layer_acts *a = &q->la[l];
		TAKE(a->xin, N * C);
		TAKE(a->ln1, N * C);
		TAKE(a->mean1, N);
		TAKE(a->rstd1, N);
		TAKE(a->a1, N * C);
		TAKE(a->qkv, N * 3 * C);
		TAKE(a->att, (size_t)B * H * T * T);
		TAKE(a->atty, N * C);
		TAKE(a->a2, N * C);
		TAKE(a->res2, N * C);
		TAKE(a->ln2, N * C);
		TAKE(a->mean2, N);
		TAKE(a->rstd2, N);
		TAKE(a->a3, N * C);
		TAKE(a->fch, N * 4 * C);
		TAKE(a->fcg, N * 4 * C);
		TAKE(a->a4, N * 4 * C);
	}
	TAKE(q->xout, N * C);
	TAKE(q->lnf, N * C);
	TAKE(q->meanf, N);
	TAKE(q->rstdf, N);
	TAKE(q->logits, N * V);
	TAKE(q->dlogits, N * V);
	TAKE(q->lse, N);
	TAKE(q->losses, N);
	TAKE(q->dres, N * C);
	TAKE(q->dc, N * C);
	TAKE(q->d4, N * 4 * C);
	TAKE(q->scratch, nn_attention_scratch_floats(B, T, c->n_head));
#undef TAKE
	float *w = q->wfake;
	for (int i = 0; i < qm->nlin; i++) {
		q->wf[i] = w;
		w += (size_t)qm->lin[i].in * qm->lin[i].out;
	}
	return 0;
}

static float *master_w(struct quant_model *qm, int li)
{
	const struct quant_layer *l = &qm->lin[li];
	return qm->fp.param[l->wid] + (size_t)l->layer * l->in * l->out;
}

/* Fake-quant weights from the current master weights (per-channel min-max, every step). */
static void qat_fake_weights(struct qat *q)
{
	struct quant_model *qm = q->qm;
	for (int i = 0; i < qm->nlin; i++) {
		const struct quant_layer *l = &qm->lin[i];
		if (!l->quantized) {
			memcpy(q->wf[i], master_w(qm, i), (size_t)l->in * l->out * sizeof(float));
			continue;
		}
		quant_weight_quantize(master_w(qm, i), l->in, l->out, qm->per_tensor, q->codes, q->scales);
		quant_weight_dequantize(q->codes, q->scales, l->in, l->out, q->wf[i]);
	}
}

static void fq_act(const struct quant_model *qm, int li, float *out, const float *x, int N, int K)
{
	const struct quant_layer *l = &qm->lin[li];
	if (!l->quantized || qm->scheme == QUANT_W8)
		memcpy(out, x, (size_t)N * K * sizeof(float));
	else if (qm->scheme == QUANT_W8A8_DYNAMIC)
		quant_fake_act_dynamic(out, x, N, K);
	else
		quant_fake_act_static(out, x, (size_t)N * K, l->in_scale);
}

/* Clipped STE: zero the gradient where the static code was clamped. */
static void ste_mask(const struct quant_model *qm, int li, float *dx, const float *x, size_t n)
{
	const struct quant_layer *l = &qm->lin[li];
	if (!l->quantized || qm->scheme != QUANT_W8A8_STATIC)
		return;
	float inv = 1.0f / l->in_scale;
	for (size_t i = 0; i < n; i++)
		if (fabsf(rintf(x[i] * inv)) > (float)QUANT_QMAX)
			dx[i] = 0.0f;
}

static void qat_forward(struct qat *q, const int *in, const int *tg)
{
	struct quant_model *qm = q->qm;
	const struct nn_config *c = &qm->fp.cfg;
	int B = q->B, T = q->T, N = q->N, C = c->n_embd, H = c->n_head, L = c->n_layer, V = c->vocab_size;
	float *const *P = qm->fp.param;
	nn_encoder_forward(q->la[0].xin, in, P[NN_WTE], P[NN_WPE], B, T, C);
	for (int l = 0; l < L; l++) {
		struct qat_layer_acts *a = &q->la[l];
		int li = l * QUANT_LIN_PER_LAYER;
		size_t lc = (size_t)l * C;
		float *out = l + 1 < L ? q->la[l + 1].xin : q->xout;
		nn_layernorm_forward(a->ln1, a->mean1, a->rstd1, a->xin, P[NN_LN1W] + lc, P[NN_LN1B] + lc, N, C);
		fq_act(qm, li, a->a1, a->ln1, N, C);
		nn_linear_forward(a->qkv, a->a1, q->wf[li], P[NN_QKVB] + 3 * lc, N, C, 3 * C);
		nn_attention_forward(a->atty, a->att, a->qkv, B, T, C, H);
		fq_act(qm, li + 1, a->a2, a->atty, N, C);
		nn_linear_forward(a->res2, a->a2, q->wf[li + 1], P[NN_ATTPROJB] + lc, N, C, C);
		nn_residual_forward(a->res2, a->res2, a->xin, (size_t)N * C);
		nn_layernorm_forward(a->ln2, a->mean2, a->rstd2, a->res2, P[NN_LN2W] + lc, P[NN_LN2B] + lc, N, C);
		fq_act(qm, li + 2, a->a3, a->ln2, N, C);
		nn_linear_forward(a->fch, a->a3, q->wf[li + 2], P[NN_FCB] + 4 * lc, N, C, 4 * C);
		nn_gelu_forward(a->fcg, a->fch, (size_t)N * 4 * C);
		fq_act(qm, li + 3, a->a4, a->fcg, N, 4 * C);
		nn_linear_forward(out, a->a4, q->wf[li + 3], P[NN_FCPROJB] + lc, N, 4 * C, C);
		nn_residual_forward(out, out, a->res2, (size_t)N * C);
	}
	nn_layernorm_forward(q->lnf, q->meanf, q->rstdf, q->xout, P[NN_LNFW], P[NN_LNFB], N, C);
	nn_gemm('N', 'T', N, V, C, 1.0f, q->lnf, C, P[NN_WTE], C, 0.0f, q->logits, V);
	nn_crossentropy_forward(q->losses, q->lse, q->logits, tg, N, V);
	double s = 0;
	for (int i = 0; i < N; i++)
		s += q->losses[i];
	qm->loss = (float)(s / N);
}

static void qat_backward(struct qat *q, const int *in, const int *tg)
{
	struct quant_model *qm = q->qm;
	const struct nn_config *c = &qm->fp.cfg;
	int B = q->B, T = q->T, N = q->N, C = c->n_embd, H = c->n_head, L = c->n_layer, V = c->vocab_size;
	float *const *P = qm->fp.param, *const *G = qm->fp.grad;
	nn_crossentropy_backward(q->dlogits, q->logits, q->lse, tg, 1.0f / (float)N, N, V);
	nn_gemm('N', 'N', N, C, V, 1.0f, q->dlogits, V, P[NN_WTE], C, 0.0f, q->dc, C);
	nn_gemm('T', 'N', V, C, N, 1.0f, q->dlogits, V, q->lnf, C, 1.0f, G[NN_WTE], C);
	memset(q->dres, 0, (size_t)N * C * sizeof(float));
	nn_layernorm_backward(q->dres, G[NN_LNFW], G[NN_LNFB], q->dc, q->xout, P[NN_LNFW], q->meanf, q->rstdf, N, C);
	for (int l = L - 1; l >= 0; l--) {
		struct qat_layer_acts *a = &q->la[l];
		int li = l * QUANT_LIN_PER_LAYER;
		size_t lc = (size_t)l * C, CC = (size_t)C * C;
		nn_linear_backward(q->d4, G[NN_FCPROJW] + lc * 4 * C, G[NN_FCPROJB] + lc, q->dres, a->a4, q->wf[li + 3], N,
				   4 * C, C);
		ste_mask(qm, li + 3, q->d4, a->fcg, (size_t)N * 4 * C);
		nn_gelu_backward(q->d4, a->fch, q->d4, (size_t)N * 4 * C);
		nn_linear_backward(q->dc, G[NN_FCW] + (size_t)l * 4 * CC, G[NN_FCB] + 4 * lc, q->d4, a->a3, q->wf[li + 2], N,
				   C, 4 * C);
		ste_mask(qm, li + 2, q->dc, a->ln2, (size_t)N * C);
		nn_layernorm_backward(q->dres, G[NN_LN2W] + lc, G[NN_LN2B] + lc, q->dc, a->res2, P[NN_LN2W] + lc, a->mean2,
				      a->rstd2, N, C);
		nn_linear_backward(q->dc, G[NN_ATTPROJW] + (size_t)l * CC, G[NN_ATTPROJB] + lc, q->dres, a->a2, q->wf[li + 1],
				   N, C, C);
		ste_mask(qm, li + 1, q->dc, a->atty, (size_t)N * C);
		nn_attention_backward(q->d4, q->scratch, q->dc, a->qkv, a->att, B, T, C, H);
		nn_linear_backward(q->dc, G[NN_QKVW] + (size_t)l * 3 * CC, G[NN_QKVB] + 3 * lc, q->d4, a->a1, q->wf[li], N, C,
				   3 * C);
		ste_mask(qm, li, q->dc, a->ln1, (size_t)N * C);
		nn_layernorm_backward(q->dres, G[NN_LN1W] + lc, G[NN_LN1B] + lc, q->dc, a->xin, P[NN_LN1W] + lc, a->mean1,
				      a->rstd1, N, C);
	}
	nn_encoder_backward(G[NN_WTE], G[NN_WPE], q->dres, in, B, T, C);
}

int quant_qat_run(const struct quant_qat_opts *o)
{
	int64_t t0 = clock_ns();
	const struct quant_ptq_opts *po = &o->ptq;
	if (!po->out || !*po->out)
		return ascent_error(ASCENT_EUSAGE, "missing -o OUTDIR (where the quantized checkpoint goes)");
	if (o->steps < 1 || o->batch < 1 || !(o->lr > 0))
		return ascent_error(ASCENT_EUSAGE, "qat needs --steps >= 1, --batch >= 1 and --lr > 0");
	char ptqdir[TRAINER_PATH_MAX + 16];
	struct quant_model qm;
	char src[TRAINER_PATH_MAX + 64];
	int rc;
	if (o->fp32_control) {
		/* the control: the same loop on the fp32 checkpoint with nothing quantized */
		rc = quant_resolve_ckpt(po->ckpt, src, sizeof src);
		if (rc)
			return rc;
		if (quant_is_quantized_ckpt(src))
			return ascent_error(ASCENT_EINPUT, "'%s' is already quantized (pass the fp32 checkpoint)", src);
		struct nn_gpt m;
		rc = trainer_model_open(src, &m);
		if (!rc)
			rc = quant_model_init(&qm, &m, po->scheme, 0);
		if (rc)
			return rc;
		for (int i = 0; i < qm.nlin; i++)
			qm.lin[i].quantized = 0;
		snprintf(ptqdir, sizeof ptqdir, "%s", "");
	} else {
		/* 1. PTQ into OUTDIR/ptq: the starting point and the baseline */
		snprintf(ptqdir, sizeof ptqdir, "%s/ptq", po->out);
		struct quant_ptq_opts p = *po;
		p.out = ptqdir;
		p.quiet = 1;
		rc = quant_ptq_run(&p);
		if (rc)
			return ascent_error_ctx(rc, "qat: the PTQ starting point failed");
		rc = quant_model_open(ptqdir, &qm, src, sizeof src);
		if (rc)
			return rc;
	}
	const struct nn_config *c = &qm.fp.cfg;
	int ts = quant_trained_seq(src, c), T = po->seq > 0 ? po->seq : (ts < 256 ? ts : 256);
	struct trainer_data d;
	rc = quant_ckpt_data(src, &d);
	if (rc) {
		quant_model_release(&qm);
		return rc;
	}
	struct qat q;
	size_t np = qm.fp.n_params;
	float *mom = calloc(2 * np, sizeof(float));
	int *in = malloc((size_t)o->batch * T * sizeof(int)), *tg = malloc((size_t)o->batch * T * sizeof(int));
	size_t *offs = malloc((size_t)o->batch * sizeof(size_t));
	rc = qat_init(&q, &qm, o->batch, T);
	if (!rc && (!mom || !in || !tg || !offs))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc && d.ntrain < (size_t)T + 2)
		rc = ascent_error(ASCENT_EINPUT, "the training split has %zu tokens, too few for --seq %d", d.ntrain, T);
	struct trainer_sampler smp = { (uint64_t)o->seed, d.ntrain, o->batch, T };
	struct nn_adamw opt = { (float)o->lr, 0.9f, 0.95f, 1e-8f, 0.0f };
	int warm = o->steps < 100 ? o->steps / 10 : 10;
	double first = 0, last = 0;
	if (!po->quiet && !rc)
		printf("qat%s: %d steps of %d x %d tokens, lr %g, scheme %s, from %s\n", o->fp32_control ? " (fp32 control)" : "",
		       o->steps, o->batch, T, o->lr, o->fp32_control ? "none" : quant_scheme_name(qm.scheme),
		       o->fp32_control ? src : ptqdir);
	for (int s = 0; s < o->steps && !rc; s++) {
		trainer_sampler_batch(&smp, s, 0, 0, 1, offs);
		trainer_fill_batch(d.train, offs, o->batch, T, in, tg);
		nn_gpt_zero_grad(&qm.fp);
		qat_fake_weights(&q);
		qat_forward(&q, in, tg);
		if (!isfinite(qm.loss)) {
			rc = ascent_error(ASCENT_EFAIL, "qat: the loss is not finite at step %d (use a smaller --lr)", s);
			break;
		}
		qat_backward(&q, in, tg);
		double gn = sqrt(nn_sumsq(qm.fp.grads_mem, np));
		if (gn > 1.0)
			nn_scale(qm.fp.grads_mem, np, (float)(1.0 / gn));
		double lr = s < warm ? o->lr * (s + 1) / warm
				     : o->lr * (0.1 + 0.9 * 0.5 * (1 + cos(M_PI * (s - warm) / fmax(1, o->steps - warm))));
		opt.lr = (float)lr;
		size_t off = 0;
		for (int i = 0; i < NN_NPARAMS; i++) {
			nn_adamw_step(&opt, s + 1, qm.fp.param[i], qm.fp.grad[i], mom + off, mom + np + off, qm.fp.param_sizes[i],
				      nn_param_decays((enum nn_param_id)i));
			off += qm.fp.param_sizes[i];
		}
		if (s == 0)
			first = qm.loss;
		last = qm.loss;
		if (!po->quiet && (s % 10 == 0 || s == o->steps - 1))
			printf("qat step %d/%d | loss %.4f | lr %.2e | grad norm %.3f\n", s + 1, o->steps, qm.loss, lr, gn);
	}
	if (o->fp32_control) {
		/* a plain fp32 checkpoint ('ascent eval' reads it) */
		char path[TRAINER_PATH_MAX + 32];
		if (!rc)
			rc = fs_mkdir_p(po->out);
		snprintf(path, sizeof path, "%s/model.safetensors", po->out);
		if (!rc)
			rc = trainer_model_save(path, &qm.fp);
		snprintf(path, sizeof path, "%s/config.json", po->out);
		if (!rc)
			rc = trainer_hf_config_write(path, &qm.fp.cfg);
		if (!rc && !po->quiet)
			printf("wrote the fp32 control %s/model.safetensors, config.json (loss %.4f -> %.4f) in %.1f s\n", po->out,
			       first, last, (double)(clock_ns() - t0) / 1e9);
		qat_free(&q);
		free(mom);
		free(in);
		free(tg);
		free(offs);
		trainer_data_release(&d);
		quant_model_release(&qm);
		return rc;
	}
	/* 2. export: codes from the fine-tuned weights, the calibrated input scales */
	if (!rc)
		rc = quant_model_quantize_weights(&qm);
	struct quant_save_info si = { po->scheme == QUANT_W8A8_STATIC ? quant_method_name(po->method) : NULL, po->smooth,
				      src, "qat" };
	if (!rc)
		rc = quant_save(po->out, &qm, &si);
	/* 3. the per-layer report of the fine-tuned model: SQNR and single-layer ΔPPL on PTQ's sets */
	double *sqnr = calloc((size_t)qm.nlin, sizeof *sqnr), *dppl = calloc((size_t)qm.nlin, sizeof *dppl), sbase = 0;
	struct quant_seqset cal = { 0 }, sens = { 0 };
	if (!rc && (!sqnr || !dppl))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc)
		rc = quant_ptq_sets(po, src, c->vocab_size, T, &cal, &sens);
	if (!rc)
		rc = quant_analyze(&qm, &cal, &sens, sqnr, dppl, &sbase);
	if (!rc && po->db)
		rc = quant_db_write(po->db, &qm, sqnr, dppl, si.method, po->smooth, "qat", src, po->out);
	if (!rc) {
		char path[TRAINER_PATH_MAX + 32];
		snprintf(path, sizeof path, "%s/quant_report.json", po->out);
		FILE *f = fopen(path, "w");
		if (!f) {
			rc = ascent_error(ASCENT_EIO, "cannot write '%s'", path);
		} else {
			fprintf(f, "{\"producer\":\"qat\",\"source\":");
			json_fput_string(f, src);
			fprintf(f, ",\"scheme\":\"%s\",\"steps\":%d,\"batch\":%d,\"seq\":%d,\"lr\":%g,\"first_loss\":%.6f,"
				   "\"last_loss\":%.6f,\"ptq_baseline\":",
				quant_scheme_name(qm.scheme), o->steps, o->batch, T, o->lr, first, last);
			json_fput_string(f, ptqdir);
			fprintf(f, ",\"wall_s\":%.2f,\"layers\":[", (double)(clock_ns() - t0) / 1e9);
			for (int i = 0; i < qm.nlin; i++) {
				fprintf(f, "%s{\"name\":\"%s\",\"quantized\":%s,\"input_scale\":%.9g", i ? "," : "",
					qm.lin[i].name, qm.lin[i].quantized ? "true" : "false", qm.lin[i].in_scale);
				if (isfinite(sqnr[i]))
					fprintf(f, ",\"sqnr_db\":%.4f", sqnr[i]);
				if (isfinite(dppl[i]))
					fprintf(f, ",\"delta_ppl_pct\":%.6f", dppl[i]);
				fprintf(f, "}");
			}
			fprintf(f, "]}\n");
			if (fclose(f))
				rc = ascent_error(ASCENT_EIO, "cannot write '%s'", path);
		}
	}
	if (!rc && !po->quiet)
		printf("wrote %s/model.safetensors, config.json, quant_report.json (PTQ baseline in %s; compare with "
		       "'ascent quant eval --ckpt DIR' on both) in %.1f s\n", po->out, ptqdir, (double)(clock_ns() - t0) / 1e9);
	qat_free(&q);
	free(sqnr);
	free(dppl);
	quant_seqset_free(&cal);
	quant_seqset_free(&sens);
	free(mom);
	free(in);
	free(tg);
	free(offs);
	trainer_data_release(&d);
	quant_model_release(&qm);
	return rc;
}
