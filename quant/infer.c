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

struct int8_batch {
	struct quant_model *qm;
	enum quant_exec ex;
};

static int int8_batch_loss(void *arg, const int *inputs, const int *targets, int B, int T, double *loss)
{
	struct int8_batch *b = arg;
	int rc = quant_model_forward(b->qm, b->ex, inputs, targets, B, T, NULL);
	*loss = b->qm->loss;
	return rc;
}

int quant_eval_tokens(struct quant_model *qm, enum quant_exec ex, const uint16_t *tok, size_t n, int B, int T,
		      int max_batches, double *loss, int64_t *tokens)
{
	struct int8_batch b = { qm, ex };
	return trainer_eval_tokens_with(int8_batch_loss, &b, tok, n, B, T, max_batches, loss, tokens);
}

int quant_eval_ckpt_run(const struct trainer_eval_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64], src[TRAINER_PATH_MAX + 64] = "";
	int rc = trainer_ckpt_resolve(o->ckpt, dir, sizeof dir);
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
	if ((rc = trainer_check_seq(T, c))) {
		quant_model_release(&qm);
		return rc;
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

static int int8_next_logits(void *arg, const int *ctx, int T, const float **logits)
{
	struct quant_model *qm = arg;
	int rc = quant_model_forward(qm, QUANT_EXEC_INT8, ctx, NULL, 1, T, NULL);
	*logits = quant_model_logits(qm) + (size_t)(T - 1) * (size_t)qm->fp.cfg.vocab_size;
	return rc;
}

int quant_generate_ckpt_run(const struct trainer_generate_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64], src[TRAINER_PATH_MAX + 64] = "";
	int rc = trainer_ckpt_resolve(o->ckpt, dir, sizeof dir);
	if (rc)
		return rc;
	if (!o->prompt || !*o->prompt)
		return ascent_error(ASCENT_EUSAGE, "--prompt must not be empty (sampling starts from its bytes)");
	nn_set_threads(o->threads);
	struct quant_model qm;
	rc = quant_model_open(dir, &qm, src, sizeof src);
	if (rc)
		return rc;
	rc = trainer_generate_with(o, qm.fp.cfg.vocab_size, quant_trained_seq(src, &qm.fp.cfg), int8_next_logits, &qm);
	quant_model_release(&qm);
	return rc;
}
