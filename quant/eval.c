/* quant/eval.c — `ascent quant eval`: the quantized checkpoint in real INT8 (our VNNI GEMM or
 * oneDNN) against its fp32 source, over the validation split (or --data) read in order: loss,
 * perplexity, top-1 agreement, mean KL(fp32 ‖ int8) per token, tokens/s of both forwards (same
 * threads, same batches) and file sizes. */
#include "quant/quant.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int64_t file_bytes(const char *dir)
{
	char p[2 * TRAINER_PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	struct stat st;
	return stat(p, &st) ? -1 : (int64_t)st.st_size;
}

/* KL(p‖q) of two logit rows (natural log), and whether their argmaxes agree. */
static double row_kl(const float *a, const float *b, int V, int *agree)
{
	int ia = 0, ib = 0;
	double ma = a[0], mb = b[0];
	for (int v = 1; v < V; v++) {
		if (a[v] > ma) {
			ma = a[v];
			ia = v;
		}
		if (b[v] > mb) {
			mb = b[v];
			ib = v;
		}
	}
	double sa = 0, sb = 0;
	for (int v = 0; v < V; v++) {
		sa += exp(a[v] - ma);
		sb += exp(b[v] - mb);
	}
	double lza = ma + log(sa), lzb = mb + log(sb), kl = 0;
	for (int v = 0; v < V; v++) {
		double lpa = a[v] - lza, lpb = b[v] - lzb;
		kl += exp(lpa) * (lpa - lpb);
	}
	*agree = ia == ib;
	return kl;
}

int quant_eval_run(const struct quant_eval_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64], src[TRAINER_PATH_MAX + 64] = "", fpdir[TRAINER_PATH_MAX + 64];
	int rc = trainer_ckpt_resolve(o->ckpt, dir, sizeof dir);
	if (!rc && o->fp32 && (rc = trainer_ckpt_resolve(o->fp32, fpdir, sizeof fpdir)))
		rc = ascent_error_ctx(rc, "--fp32");
	if (rc)
		return rc;
	nn_set_threads(o->threads);
	struct quant_model qm;
	rc = quant_model_open(dir, &qm, src, sizeof src);
	if (rc)
		return rc;
	const char *fp32dir = o->fp32 ? fpdir : src;
	if (!*fp32dir) {
		quant_model_release(&qm);
		return ascent_error(ASCENT_EUSAGE, "'%s' does not record its fp32 source checkpoint: pass --fp32 DIR", dir);
	}
	struct nn_gpt fm;
	rc = trainer_model_open(fp32dir, &fm);
	if (rc) {
		quant_model_release(&qm);
		return ascent_error_ctx(rc, "cannot load the fp32 model to compare with (pass --fp32 DIR)");
	}
	if (memcmp(&fm.cfg, &qm.fp.cfg, sizeof fm.cfg)) {
		nn_gpt_release(&fm);
		quant_model_release(&qm);
		return ascent_error(ASCENT_EINPUT, "'%s' and '%s' are different models (dimensions differ)", fp32dir, dir);
	}
	const struct nn_config *c = &fm.cfg;
	int ts = quant_trained_seq(fp32dir, c), T = o->seq > 0 ? o->seq : (ts < 256 ? ts : 256);
	int B = o->batch > 0 ? o->batch : 4;
	int V = c->vocab_size;
	if ((rc = trainer_check_seq(T, c))) {
		nn_gpt_release(&fm);
		quant_model_release(&qm);
		return rc;
	}
	struct trainer_tokens tk = { 0 };
	struct trainer_data d;
	memset(&d, 0, sizeof d);
	const uint16_t *tok;
	size_t n;
	if (o->data) {
		rc = trainer_tokens_load(o->data, V, &tk);
		tok = tk.tok;
		n = tk.n;
	} else {
		rc = quant_ckpt_data(fs_exists(fp32dir) ? fp32dir : dir, &d);
		tok = d.val;
		n = d.nval;
	}
	size_t per = (size_t)B * T;
	int64_t nb = n > per ? (int64_t)((n - 1) / per) : 0;
	if (!rc && nb < 1)
		rc = ascent_error(ASCENT_EINPUT, "the evaluation data has %zu tokens, fewer than one batch of %d x %d + 1 "
						 "(use a smaller --batch or --seq)", n, B, T);
	if (o->batches > 0 && nb > o->batches)
		nb = o->batches;
	int *in = malloc(per * sizeof *in), *tg = malloc(per * sizeof *tg);
	if (!rc && (!in || !tg))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	double lf = 0, lq = 0, kl = 0;
	int64_t agree = 0, ntok = 0, ns_f = 0, ns_q = 0;
	for (int64_t b = 0; b < nb && !rc; b++) {
		const uint16_t *p = tok + (size_t)b * per;
		for (size_t i = 0; i < per; i++) {
			in[i] = p[i];
			tg[i] = p[i + 1];
		}
		int64_t t1 = clock_ns();
		rc = nn_gpt_forward(&fm, in, tg, B, T);
		int64_t t2 = clock_ns();
		if (!rc)
			rc = quant_model_forward(&qm, QUANT_EXEC_INT8, in, tg, B, T, NULL);
		int64_t t3 = clock_ns();
		if (rc)
			break;
		ns_f += t2 - t1;
		ns_q += t3 - t2;
		lf += (double)fm.loss * per;
		lq += (double)qm.loss * per;
		const float *a = nn_gpt_logits(&fm), *q = quant_model_logits(&qm);
		for (size_t i = 0; i < per; i++) {
			int ag;
			kl += row_kl(a + i * V, q + i * V, V, &ag);
			agree += ag;
		}
		ntok += (int64_t)per;
	}
	if (!rc) {
		lf /= (double)ntok;
		lq /= (double)ntok;
		double pf = exp(lf), pq = exp(lq), dp = (pq / pf - 1) * 100, top1 = (double)agree / (double)ntok;
		double mkl = kl / (double)ntok, tf = ntok / ((double)ns_f / 1e9), tq = ntok / ((double)ns_q / 1e9);
		int64_t bf = file_bytes(fp32dir), bq = file_bytes(dir);
		/* linear weights: fp32 bytes vs int8 codes + fp32 scales (+ input scale) */
		int64_t lin_f = 0, lin_q = 0;
		for (int i = 0; i < qm.nlin; i++) {
			struct quant_layer *l = &qm.lin[i];
			lin_f += (int64_t)l->in * l->out * 4;
			lin_q += l->quantized ? (int64_t)l->in * l->out + 4 * l->out + (qm.scheme == QUANT_W8A8_STATIC ? 4 : 0)
					      : (int64_t)l->in * l->out * 4;
		}
		const char *scheme = quant_scheme_name(qm.scheme);
		const char *gemm = qm.scheme == QUANT_W8 ? "fp32 (dequantized weights)"
				   : quant_gemm_backend_name(quant_gemm_get_backend());
		if (o->json) {
			printf("{\"fp32\":{\"loss\":%.6f,\"ppl\":%.6f,\"tokens_per_s\":%.1f,\"bytes\":%lld},"
			       "\"int8\":{\"loss\":%.6f,\"ppl\":%.6f,\"tokens_per_s\":%.1f,\"bytes\":%lld},"
			       "\"delta_ppl_pct\":%.6f,\"top1_agreement\":%.6f,\"mean_kl\":%.8f,\"scheme\":\"%s\","
			       "\"tokens\":%lld,\"batch\":%d,\"seq\":%d,\"threads\":%d,\"gemm\":\"%s\","
			       "\"linear_weight_bytes\":{\"fp32\":%lld,\"int8\":%lld,\"ratio\":%.6f},\"speedup\":%.4f}\n",
			       lf, pf, tf, (long long)bf, lq, pq, tq, (long long)bq, dp, top1, mkl, scheme, (long long)ntok, B,
			       T, nn_get_threads(), gemm, (long long)lin_f, (long long)lin_q, (double)lin_q / (double)lin_f,
			       tq / tf);
		} else {
			printf("quantized  %s (%s, INT8 GEMM: %s)\n", dir, scheme, gemm);
			printf("fp32       %s\n", fp32dir);
			printf("data       %s, %lld tokens (%lld batches of %d x %d), %d threads\n",
			       o->data ? o->data : "validation split", (long long)ntok, (long long)nb, B, T, nn_get_threads());
			printf("\n%-6s %10s %10s %12s %14s\n", "", "loss", "ppl", "tokens/s", "file bytes");
			printf("%-6s %10.4f %10.4f %12.0f %14lld\n", "fp32", lf, pf, tf, (long long)bf);
			printf("%-6s %10.4f %10.4f %12.0f %14lld\n", "int8", lq, pq, tq, (long long)bq);
			printf("\ndelta ppl %+.3f%%, top-1 agreement %.3f%%, mean KL %.3g nats/token, speed-up %.2fx\n", dp,
			       top1 * 100, mkl, tq / tf);
			printf("linear weights: %lld -> %lld bytes (%.2f%%)\n", (long long)lin_f, (long long)lin_q,
			       100.0 * (double)lin_q / (double)lin_f);
		}
	}
	free(in);
	free(tg);
	trainer_tokens_release(&tk);
	trainer_data_release(&d);
	nn_gpt_release(&fm);
	quant_model_release(&qm);
	return rc;
}
