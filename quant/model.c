/* quant/model.c — the quantized model: its linear layers (codes, scales, dequantized and packed
 * copies), the forward in fp32 / fake-quant / INT8 mode with the norms, softmax, GELU, residuals,
 * embeddings and the tied LM head in fp32 (nn's kernels), calibration hooks, and SmoothQuant. */
#include "quant/quant.h"

#include <stdlib.h>
#include <string.h>

static const char *const SCHEME_NAMES[QUANT_NSCHEMES] = { "w8", "w8a8-dynamic", "w8a8-static" };

const char *quant_scheme_name(enum quant_scheme s)
{
	return s >= 0 && s < QUANT_NSCHEMES ? SCHEME_NAMES[s] : "?";
}

int quant_scheme_parse(const char *s, enum quant_scheme *out)
{
	for (int i = 0; i < QUANT_NSCHEMES; i++)
		if (!strcmp(s, SCHEME_NAMES[i])) {
			*out = (enum quant_scheme)i;
			return 0;
		}
	return ascent_error(ASCENT_EUSAGE, "unknown scheme '%s' (use w8, w8a8-dynamic or w8a8-static)", s);
}

/* Forward scratch, for up to `capN` rows and (capB, capT) attention. */
struct quant_buf {
	int capN, capB, capT;
	float *x, *x2, *ln, *mean, *rstd, *qkv, *att_lse, *att_scr, *atty, *fch, *fcg, *logits, *lse, *losses;
	float *fq;                   /* (N, 4C) fake-quant activations */
	float *ascale;               /* (N) */
	uint8_t *u8;                 /* (N, 4C) codes + 128 */
	int8_t *s8;                  /* (N, 4C) codes (oneDNN backend) */
	int32_t *s32;                /* (N, 4C) */
};

static void buf_free(struct quant_buf *b)
{
	if (!b)
		return;
	float *f[] = { b->x, b->x2, b->ln, b->mean, b->rstd, b->qkv, b->att_lse, b->att_scr, b->atty, b->fch, b->fcg,
		       b->logits, b->lse, b->losses, b->fq, b->ascale };
	for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
		free(f[i]);
	free(b->u8);
	free(b->s8);
	free(b->s32);
	free(b);
}

static int ensure_buf(struct quant_model *qm, int B, int T)
{
	struct quant_buf *b = qm->buf;
	int N = B * T;
	if (b && N <= b->capN && B <= b->capB && T <= b->capT)
		return 0;
	int nB = B, nT = T;
	if (b) {
		nB = B > b->capB ? B : b->capB;
		nT = T > b->capT ? T : b->capT;
	}
	buf_free(b);
	qm->buf = NULL;
	b = calloc(1, sizeof *b);
	if (!b)
		return ascent_error(ASCENT_ENOMEM, "out of memory for the quantized forward");
	const struct nn_config *c = &qm->fp.cfg;
	size_t n = (size_t)nB * nT, C = (size_t)c->n_embd, V = (size_t)c->vocab_size, H = (size_t)c->n_head;
	size_t K4 = 4 * C + 4;
#define AL(p, cnt) ok &= ((p) = aligned_alloc(64, (((cnt) * sizeof *(p)) + 63) & ~(size_t)63)) != NULL
	int ok = 1;
	AL(b->x, n * C);
	AL(b->x2, n * C);
	AL(b->ln, n * C);
	AL(b->mean, n);
	AL(b->rstd, n);
	AL(b->qkv, n * 3 * C);
	AL(b->att_lse, (size_t)nB * H * nT);
	AL(b->att_scr, nn_attention_scratch_floats(nT, (int)C, (int)H, 0));
	AL(b->atty, n * C);
	AL(b->fch, n * 4 * C);
	AL(b->fcg, n * 4 * C);
	AL(b->logits, n * V);
	AL(b->lse, n);
	AL(b->losses, n);
	AL(b->fq, n * K4);
	AL(b->ascale, n);
	AL(b->u8, n * K4);
	AL(b->s8, n * K4);
	AL(b->s32, n * K4);
#undef AL
	if (!ok) {
		buf_free(b);
		return ascent_error(ASCENT_ENOMEM, "out of memory for the quantized forward at B=%d T=%d", nB, nT);
	}
	memset(b->u8, 128, n * K4);
	b->capN = (int)n;
	b->capB = nB;
	b->capT = nT;
	qm->buf = b;
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

int quant_model_init(struct quant_model *qm, struct nn_gpt *fp, enum quant_scheme scheme, int per_tensor)
{
	memset(qm, 0, sizeof *qm);
	qm->fp = *fp;   /* taken over first, so that every failure below releases it (quant.h) */
	memset(fp, 0, sizeof *fp);
	if (scheme < 0 || scheme >= QUANT_NSCHEMES) {
		nn_gpt_release(&qm->fp);
		return ascent_error(ASCENT_EINTERNAL, "quant_model_init: bad scheme %d", (int)scheme);
	}
	qm->scheme = scheme;
	qm->per_tensor = per_tensor;
	qm->loss = -1.0f;
	const struct nn_config *c = &qm->fp.cfg;
	int L = c->n_layer, C = c->n_embd;
	qm->nlin = L * QUANT_LIN_PER_LAYER;
	qm->lin = calloc((size_t)qm->nlin, sizeof *qm->lin);
	if (!qm->lin) {
		nn_gpt_release(&qm->fp);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	static const char *const mod[QUANT_LIN_PER_LAYER] = { "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj" };
	static const int wid[QUANT_LIN_PER_LAYER] = { NN_QKVW, NN_ATTPROJW, NN_FCW, NN_FCPROJW };
	static const int bid[QUANT_LIN_PER_LAYER] = { NN_QKVB, NN_ATTPROJB, NN_FCB, NN_FCPROJB };
	const int ins[QUANT_LIN_PER_LAYER] = { C, C, C, 4 * C }, outs[QUANT_LIN_PER_LAYER] = { 3 * C, C, 4 * C, C };
	for (int l = 0; l < L; l++)
		for (int k = 0; k < QUANT_LIN_PER_LAYER; k++) {
			struct quant_layer *q = &qm->lin[l * QUANT_LIN_PER_LAYER + k];
			snprintf(q->name, sizeof q->name, "h.%d.%s", l, mod[k]);
			q->layer = l;
			q->kind = k;
			q->in = ins[k];
			q->out = outs[k];
			q->wid = (enum nn_param_id)wid[k];
			q->bid = (enum nn_param_id)bid[k];
			q->quantized = 1;
		}
	return 0;
}

static void layer_free(struct quant_layer *q)
{
	free(q->wq);
	free(q->wscale);
	free(q->wdeq);
	quant_packed_release(&q->pk);
	q->wq = NULL;
	q->wscale = NULL;
	q->wdeq = NULL;
}

void quant_model_release(struct quant_model *qm)
{
	if (!qm)
		return;
	for (int i = 0; qm->lin && i < qm->nlin; i++)
		layer_free(&qm->lin[i]);
	free(qm->lin);
	buf_free(qm->buf);
	nn_gpt_release(&qm->fp);
	memset(qm, 0, sizeof *qm);
}

static float *layer_w(struct quant_model *qm, const struct quant_layer *q)
{
	return qm->fp.param[q->wid] + (size_t)q->layer * q->in * q->out;
}

static const float *layer_b(const struct quant_model *qm, const struct quant_layer *q)
{
	return qm->fp.param[q->bid] + (size_t)q->layer * q->out;
}

int quant_layer_quantize(struct quant_model *qm, int li)
{
	struct quant_layer *q = &qm->lin[li];
	size_t n = (size_t)q->in * q->out;
	if (!q->wq) {
		q->wq = malloc(n);
		q->wscale = malloc((size_t)q->out * sizeof *q->wscale);
		q->wdeq = malloc(n * sizeof *q->wdeq);
		if (!q->wq || !q->wscale || !q->wdeq) {
			layer_free(q);
			return ascent_error(ASCENT_ENOMEM, "out of memory quantizing '%s'", q->name);
		}
	}
	quant_weight_quantize(layer_w(qm, q), q->in, q->out, qm->per_tensor, q->wq, q->wscale);
	quant_weight_dequantize(q->wq, q->wscale, q->in, q->out, q->wdeq);
	quant_packed_release(&q->pk);
	return quant_pack_b(&q->pk, q->wq, q->out, q->in, q->in);
}

int quant_model_quantize_weights(struct quant_model *qm)
{
	for (int i = 0; i < qm->nlin; i++) {
		if (!qm->lin[i].quantized)
			continue;
		int rc = quant_layer_quantize(qm, i);
		if (rc)
			return rc;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* One linear layer */

static int linear(struct quant_model *qm, int li, enum quant_exec ex, const float *x, float *out, int N)
{
	struct quant_layer *q = &qm->lin[li];
	struct quant_buf *b = qm->buf;
	const float *bias = layer_b(qm, q);
	int K = q->in, OC = q->out;
	if (ex == QUANT_EXEC_FP32 || !q->quantized) {
		nn_linear_forward(out, x, layer_w(qm, q), bias, N, K, OC);
		return 0;
	}
	if (!q->wq)
		return ascent_error(ASCENT_EINTERNAL, "layer '%s' is marked quantized but has no INT8 weights", q->name);
	if (qm->scheme == QUANT_W8A8_STATIC && !(q->in_scale > 0))
		return ascent_error(ASCENT_EINTERNAL, "layer '%s' has no static input scale (calibrate first)", q->name);
	if (ex == QUANT_EXEC_FAKE || qm->scheme == QUANT_W8) {
		/* weight-only INT8 runs the fp32 GEMM on the dequantized weights in both modes */
		const float *xin = x;
		if (qm->scheme == QUANT_W8A8_DYNAMIC) {
			nn_fq_act_dynamic(b->fq, x, N, K);
			xin = b->fq;
		} else if (qm->scheme == QUANT_W8A8_STATIC) {
			nn_fq_act_static(b->fq, x, (size_t)N * K, q->in_scale);
			xin = b->fq;
		}
		nn_linear_forward(out, xin, q->wdeq, bias, N, K, OC);
		return 0;
	}
	/* real INT8: codes of x (the same nn_quant_q as the fake path), int8 GEMM, fused dequantize */
	int Kp = q->pk.Kp, stride = 1;
	int dyn = qm->scheme == QUANT_W8A8_DYNAMIC;
	if (!dyn) {
		b->ascale[0] = q->in_scale;
		stride = 0;
	}
	enum quant_gemm_backend be = quant_gemm_get_backend();
	/* AMX and VNNI take u8 codes (a + 128) and dequantize in their epilogue; the others are
	 * s8 × s8 → s32 GEMMs, then dequantize */
	int s8codes = be != QUANT_GEMM_VNNI && be != QUANT_GEMM_AMX;
#pragma omp parallel for num_threads(nn_get_threads()) schedule(static) if (N >= 64)
	for (int n = 0; n < N; n++) {
		const float *r = x + (size_t)n * K;
		float s = q->in_scale;
		if (dyn) {
			s = nn_quant_scale(nn_quant_row_amax(r, K));
			b->ascale[n] = s;
		}
		float inv = 1.0f / s;
		if (s8codes)
			quant_row_codes_s8(r, K, inv, b->s8 + (size_t)n * K);
		else
			quant_row_codes_u8(r, K, inv, b->u8 + (size_t)n * Kp);
	}
	if (!s8codes) {
		quant_gemm_u8s8_packed_f32(N, b->u8, Kp, &q->pk, b->ascale, stride, q->wscale, bias, out, OC);
		return 0;
	}
	int rc = be == QUANT_GEMM_ONEDNN ? quant_gemm_s8s8s32_onednn(N, OC, K, b->s8, K, q->wq, K, b->s32, OC)
					 : quant_gemm_s8s8s32_f32(N, OC, K, b->s8, K, q->wq, K, b->s32, OC);
	if (rc)
		return rc;
#pragma omp parallel for num_threads(nn_get_threads()) schedule(static) if (N >= 64)
	for (int n = 0; n < N; n++) {
		float as = b->ascale[(size_t)n * stride];
		for (int o = 0; o < OC; o++)
			out[(size_t)n * OC + o] = (float)b->s32[(size_t)n * OC + o] * (as * q->wscale[o]) + bias[o];
	}
	return 0;
}

int quant_layer_forward(struct quant_model *qm, int li, enum quant_exec ex, const float *x, float *out, int N)
{
	if (li < 0 || li >= qm->nlin)
		return ascent_error(ASCENT_EINTERNAL, "quant_layer_forward: no layer %d", li);
	/* inside a forward's hook the buffers already hold N rows: never reallocate under x */
	int rc = qm->buf && N <= qm->buf->capN ? 0 : ensure_buf(qm, N, 1);
	return rc ? rc : linear(qm, li, ex, x, out, N);
}

/* ------------------------------------------------------------------------------------------ */

static int lin_hook(struct quant_model *qm, int li, enum quant_exec ex, const float *x, float *y, int N,
		    const struct quant_hooks *h)
{
	int rc = linear(qm, li, ex, x, y, N);
	if (!rc && h && h->on_linear)
		h->on_linear(h->ctx, li, x, y, N, qm->lin[li].in, qm->lin[li].out);
	return rc;
}

int quant_model_forward(struct quant_model *qm, enum quant_exec ex, const int *inputs, const int *targets, int B,
			int T, const struct quant_hooks *hooks)
{
	const struct nn_config *c = &qm->fp.cfg;
	if (B < 1 || T < 1 || T > c->max_seq)
		return ascent_error(ASCENT_EINPUT, "batch shape B=%d T=%d does not fit the model (n_positions %d)", B, T,
				    c->max_seq);
	int N = B * T, C = c->n_embd, V = c->vocab_size, H = c->n_head, L = c->n_layer;
	for (int i = 0; i < N; i++)
		if (inputs[i] < 0 || inputs[i] >= V || (targets && (targets[i] < 0 || targets[i] >= V)))
			return ascent_error(ASCENT_EINPUT, "token at position %d is outside the vocabulary [0, %d)", i, V);
	int rc = ensure_buf(qm, B, T);
	if (rc)
		return rc;
	struct quant_buf *b = qm->buf;
	float *const *P = qm->fp.param;
	nn_encoder_forward(b->x, inputs, P[NN_WTE], P[NN_WPE], B, T, C);
	for (int l = 0; l < L && !rc; l++) {
		int li = l * QUANT_LIN_PER_LAYER;
		size_t lc = (size_t)l * C;
		nn_layernorm_forward(b->ln, b->mean, b->rstd, b->x, P[NN_LN1W] + lc, P[NN_LN1B] + lc, N, C);
		rc = lin_hook(qm, li + QUANT_C_ATTN, ex, b->ln, b->qkv, N, hooks);
		if (rc)
			break;
		nn_attention_forward(b->atty, b->att_lse, b->att_scr, b->qkv, B, T, C, H);
		rc = lin_hook(qm, li + QUANT_ATTN_PROJ, ex, b->atty, b->x2, N, hooks);
		if (rc)
			break;
		nn_residual_forward(b->x2, b->x2, b->x, (size_t)N * C);       /* x2 = residual after attention */
		nn_layernorm_forward(b->ln, b->mean, b->rstd, b->x2, P[NN_LN2W] + lc, P[NN_LN2B] + lc, N, C);
		rc = lin_hook(qm, li + QUANT_C_FC, ex, b->ln, b->fch, N, hooks);
		if (rc)
			break;
		nn_gelu_forward(b->fcg, b->fch, (size_t)N * 4 * C);
		rc = lin_hook(qm, li + QUANT_MLP_PROJ, ex, b->fcg, b->x, N, hooks);
		if (rc)
			break;
		nn_residual_forward(b->x, b->x, b->x2, (size_t)N * C);
	}
	if (rc)
		return rc;
	nn_layernorm_forward(b->ln, b->mean, b->rstd, b->x, P[NN_LNFW], P[NN_LNFB], N, C);
	nn_gemm('N', 'T', N, V, C, 1.0f, b->ln, C, P[NN_WTE], C, 0.0f, b->logits, V);
	qm->loss = -1.0f;
	if (targets) {
		nn_crossentropy_forward(b->losses, b->lse, b->logits, targets, N, V);
		double s = 0;
		for (int i = 0; i < N; i++)
			s += b->losses[i];
		qm->loss = (float)(s / N);
	}
	return 0;
}

const float *quant_model_logits(const struct quant_model *qm)
{
	return qm->buf ? qm->buf->logits : NULL;
}

/* ------------------------------------------------------------------------------------------ */

int quant_smooth_apply(struct quant_model *qm, const float *act_amax, double alpha)
{
	if (!(alpha >= 0 && alpha <= 1))
		return ascent_error(ASCENT_EUSAGE, "--smooth %g is outside [0, 1] (SmoothQuant uses 0.5)", alpha);
	const struct nn_config *c = &qm->fp.cfg;
	int L = c->n_layer, C = c->n_embd;
	for (int l = 0; l < L; l++)
		for (int which = 0; which < 2; which++) {
			struct quant_layer *q = &qm->lin[l * QUANT_LIN_PER_LAYER + (which ? QUANT_C_FC : QUANT_C_ATTN)];
			float *W = layer_w(qm, q);
			float *g = qm->fp.param[which ? NN_LN2W : NN_LN1W] + (size_t)l * C;
			float *bt = qm->fp.param[which ? NN_LN2B : NN_LN1B] + (size_t)l * C;
			const float *am = act_amax + ((size_t)l * 2 + which) * C;
			for (int j = 0; j < C; j++) {
				float *row = W + (size_t)j * q->out, wm = 0.0f;
				for (int o = 0; o < q->out; o++)
					wm = fabsf(row[o]) > wm ? fabsf(row[o]) : wm;
				double s = 1.0;
				if (am[j] > 0 && wm > 0)
					s = pow(am[j], alpha) / pow(wm, 1.0 - alpha);
				s = s < 1e-5 ? 1e-5 : s > 1e5 ? 1e5 : s;
				float sf = (float)s;
				g[j] /= sf;
				bt[j] /= sf;
				for (int o = 0; o < q->out; o++)
					row[o] *= sf;
			}
		}
	return 0;
}
