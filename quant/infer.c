/* quant/infer.c — `ascent eval` and `ascent generate` on a quantized checkpoint (cli/cmd_eval.c and
 * cli/cmd_generate.c dispatch here when quant_is_quantized_ckpt()): the real INT8 forward
 * (quant_model_forward in QUANT_EXEC_INT8, so W8A8 schemes quantize their activations), with the
 * data, defaults, output and sampling of trainer's jobs (trainer/jobs.c): eval reads the data from
 * its beginning in order (batch b covers tokens b·B·T …), the default data is the default corpus's
 * validation split (trainer_data_open's split), seq defaults to the seq the source checkpoint was
 * trained with; generate samples byte by byte from a sliding window with the same sampler. */
#include "quant/quant.h"

#include <stdlib.h>
#include <string.h>

int quant_trained_seq(const char *source, const struct nn_config *c)
{
	char p[TRAINER_PATH_MAX + 64];
	if (source && *source) {
		snprintf(p, sizeof p, "%s/trainer_state.safetensors", source);
		char saved[512];
		snprintf(saved, sizeof saved, "%s", ascent_errmsg());
		struct trainer_state st;
		if (fs_exists(p) && trainer_ckpt_read_state(source, &st) == 0 && st.config.seq > 0 &&
		    st.config.seq < c->max_seq)
			return st.config.seq;
		ascent_error(ASCENT_OK, "%s", saved); /* a missing source is not an error here */
	}
	return c->max_seq;
}

int quant_eval_tokens(struct quant_model *qm, enum quant_exec ex, const uint16_t *tok, size_t n, int B, int T,
		      int max_batches, double *loss, int64_t *tokens)
{
	size_t per = (size_t)B * (size_t)T;
	size_t avail = n >= 1 ? (n - 1) / per : 0;
	if (avail == 0)
		return ascent_error(ASCENT_EINPUT,
				    "%zu tokens are fewer than one evaluation batch needs (batch x seq + 1 = %zu); use a smaller "
				    "batch or seq",
				    n, per + 1);
	size_t nb = max_batches > 0 && (size_t)max_batches < avail ? (size_t)max_batches : avail;
	int *in = malloc(per * sizeof *in), *tg = malloc(per * sizeof *tg);
	if (!in || !tg) {
		free(in);
		free(tg);
		return ascent_error(ASCENT_ENOMEM, "out of memory for an evaluation batch");
	}
	double sum = 0;
	int rc = 0;
	for (size_t b = 0; b < nb && !rc; b++) {
		const uint16_t *p = tok + b * per;
		for (size_t i = 0; i < per; i++) {
			in[i] = p[i];
			tg[i] = p[i + 1];
		}
		rc = quant_model_forward(qm, ex, in, tg, B, T, NULL);
		sum += qm->loss;   /* per-batch mean, averaged over batches: trainer_eval_tokens' arithmetic */
	}
	free(in);
	free(tg);
	if (rc)
		return rc;
	*loss = sum / (double)nb;
	if (tokens)
		*tokens = (int64_t)(nb * per);
	return 0;
}

int quant_eval_ckpt_run(const struct trainer_eval_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64], src[TRAINER_PATH_MAX + 64] = "";
	int rc = quant_resolve_ckpt(o->ckpt, dir, sizeof dir);
	if (rc)
		return rc;
	nn_set_threads(o->threads);
	struct quant_model qm;
	rc = quant_model_open(dir, &qm, src, sizeof src);
	if (rc)
		return rc;
	const struct nn_config *c = &qm.fp.cfg;
	int T = o->seq > 0 ? o->seq : quant_trained_seq(src, c);
	int B = o->batch > 0 ? o->batch : 8;
	if (T > c->max_seq) {
		quant_model_release(&qm);
		return ascent_error(ASCENT_EUSAGE, "--seq %d is longer than the model's n_positions %d", T, c->max_seq);
	}
	/* the data and split of `ascent eval`: --data whole, else the default corpus's validation split */
	struct trainer_tokens tk = { 0 };
	struct trainer_data d;
	memset(&d, 0, sizeof d);
	const uint16_t *p = NULL;
	size_t n = 0;
	if (o->data) {
		rc = trainer_tokens_load(o->data, c->vocab_size, &tk);
		p = tk.tok;
		n = tk.n;
	} else {
		struct trainer_config cfg;
		trainer_config_defaults(&cfg);
		cfg.data[0] = 0;
		cfg.val_data[0] = 0;
		cfg.val_fraction = 0.05;
		cfg.vocab_size = c->vocab_size;
		cfg.batch = 1;           /* the evaluation's own check below names B and T */
		cfg.seq = 1;
		rc = trainer_data_open(&d, &cfg);
		p = d.val;
		n = d.nval;
	}
	double loss = 0;
	int64_t ntok = 0;
	if (!rc) {
		rc = quant_eval_tokens(&qm, QUANT_EXEC_INT8, p, n, B, T, o->batches, &loss, &ntok);
		if (rc)
			rc = ascent_error_ctx(rc, "evaluating '%s'", o->data ? o->data : "the default corpus's validation split");
	}
	if (!rc) {
		const char *scheme = quant_scheme_name(qm.scheme);
		if (o->json) {
			printf("{\"loss\": %.6f, \"ppl\": %.6f, \"tokens\": %lld, \"batches\": %lld, \"batch\": %d, \"seq\": %d, "
			       "\"quantized\": \"%s\", \"ckpt\": ",
			       loss, exp(loss), (long long)ntok, (long long)(ntok / ((int64_t)B * T)), B, T, scheme);
			json_fput_string(stdout, dir);
			printf("}\n");
		} else {
			printf("checkpoint %s (INT8, %s)\n", dir, scheme);
			printf("data       %s (%zu tokens)\n", o->data ? o->data : "default corpus, validation split", n);
			printf("loss       %.4f nats/token over %lld tokens (%lld batches of %d x %d)\n", loss, (long long)ntok,
			       (long long)(ntok / ((int64_t)B * T)), B, T);
			printf("perplexity %.3f\n", exp(loss));
		}
	}
	trainer_tokens_release(&tk);
	trainer_data_release(&d);
	quant_model_release(&qm);
	return rc;
}

int quant_generate_ckpt_run(const struct trainer_generate_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64], src[TRAINER_PATH_MAX + 64] = "";
	int rc = quant_resolve_ckpt(o->ckpt, dir, sizeof dir);
	if (rc)
		return rc;
	size_t plen = strlen(o->prompt);
	if (plen == 0)
		return ascent_error(ASCENT_EUSAGE, "--prompt must not be empty (sampling starts from its bytes)");
	nn_set_threads(o->threads);
	struct quant_model qm;
	rc = quant_model_open(dir, &qm, src, sizeof src);
	if (rc)
		return rc;
	int V = qm.fp.cfg.vocab_size, maxT = quant_trained_seq(src, &qm.fp.cfg);
	size_t total = plen + (size_t)o->tokens;
	int *ctx = malloc(total * sizeof *ctx);
	double *probs = malloc((size_t)V * sizeof *probs);
	if (!ctx || !probs) {
		free(ctx);
		free(probs);
		quant_model_release(&qm);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < plen; i++) {
		ctx[i] = (unsigned char)o->prompt[i];
		if (ctx[i] >= V) {
			rc = ascent_error(ASCENT_EUSAGE, "--prompt byte %d at offset %zu is outside the model's vocabulary (%d)",
					  ctx[i], i, V);
			break;
		}
	}
	uint64_t rng = rng_seed((uint64_t)o->seed, 0x6e6e);
	if (!rc) {
		fwrite(o->prompt, 1, plen, stdout);
		fflush(stdout);
	}
	size_t len = plen;
	for (int k = 0; !rc && k < o->tokens; k++) {
		int T = len < (size_t)maxT ? (int)len : maxT;
		rc = quant_model_forward(&qm, QUANT_EXEC_INT8, ctx + len - (size_t)T, NULL, 1, T, NULL);
		if (rc)
			break;
		const float *lg = quant_model_logits(&qm) + (size_t)(T - 1) * (size_t)V;
		int next = trainer_sample_token(lg, V, o->temperature, o->top_k, &rng, probs);
		ctx[len++] = next;
		fputc(next, stdout);
		if (next == '\n')
			fflush(stdout);
	}
	if (len > plen || !rc)
		fputc('\n', stdout);
	fflush(stdout);
	free(ctx);
	free(probs);
	quant_model_release(&qm);
	return rc;
}
