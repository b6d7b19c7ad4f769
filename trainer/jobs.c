/* trainer/jobs.c — the jobs around training: `ascent eval` (mean loss and perplexity of a
 * checkpoint over data read in order), `ascent generate` (byte-level sampling) and
 * `ascent tokenize` (text to an llm.c shard). */
#include "trainer/trainer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The sequence length the checkpoint was trained with (from its trainer state), capped by the
 * model's positions; n_positions for a checkpoint without trainer state. Positions past it were
 * never trained, so evaluation and generation stay within it by default. */
static int trained_seq(const char *dir, const struct nn_gpt *m)
{
	struct trainer_state st;
	char p[TRAINER_PATH_MAX + 64];
	snprintf(p, sizeof p, "%s/trainer_state.safetensors", dir);
	if (!fs_exists(p))
		return m->cfg.max_seq;   /* a model without trainer state (e.g. from another tool) */
	if (trainer_ckpt_read_state(dir, &st) != 0) {
		log_warn("cannot read the trainer state of '%s' (%s): using n_positions = %d as the sequence length; "
			 "pass --seq to choose", dir, ascent_errmsg(), m->cfg.max_seq);
		return m->cfg.max_seq;
	}
	return st.config.seq > 0 && st.config.seq < m->cfg.max_seq ? st.config.seq : m->cfg.max_seq;
}

int trainer_check_seq(int T, const struct nn_config *c)
{
	if (T > c->max_seq)
		return ascent_error(ASCENT_EUSAGE, "--seq %d is longer than the model's n_positions %d (use --seq <= %d)", T,
				    c->max_seq, c->max_seq);
	return 0;
}

int trainer_eval_run(const struct trainer_eval_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64];
	int rc = trainer_ckpt_resolve(o->ckpt, dir, sizeof dir);
	if (rc)
		return rc;
	nn_set_threads(o->threads);
	struct nn_gpt m;
	rc = trainer_model_open(dir, &m);
	if (rc)
		return rc;
	int T = o->seq > 0 ? o->seq : trained_seq(dir, &m);
	int B = o->batch > 0 ? o->batch : 8;
	if ((rc = trainer_check_seq(T, &m.cfg))) {
		nn_gpt_release(&m);
		return rc;
	}
	struct trainer_tokens tok;
	rc = trainer_tokens_load(o->data ? o->data : "", m.cfg.vocab_size, &tok);
	if (rc) {
		nn_gpt_release(&m);
		return rc;
	}
	const uint16_t *p = tok.tok;
	size_t n = tok.n;
	if (!o->data) {
		/* the default corpus's validation split: its last 5%, as `ascent train` splits it */
		size_t nval = (size_t)((double)tok.n * 0.05);
		p = tok.tok + (tok.n - nval);
		n = nval;
	}
	double loss = 0;
	int64_t ntok = 0;
	rc = trainer_eval_tokens(&m, p, n, B, T, o->batches, &loss, &ntok);
	if (rc)
		rc = ascent_error_ctx(rc, "evaluating '%s'", o->data ? o->data : "the default corpus's validation split");
	if (!rc) {
		if (o->json)
			printf("{\"loss\": %.6f, \"ppl\": %.6f, \"tokens\": %lld, \"batches\": %lld, \"batch\": %d, \"seq\": %d, "
			       "\"ckpt\": ",
			       loss, exp(loss), (long long)ntok, (long long)(ntok / ((int64_t)B * T)), B, T);
		if (o->json) {
			json_fput_string(stdout, dir);
			printf("}\n");
		} else {
			printf("checkpoint %s\n", dir);
			printf("data       %s (%zu tokens)\n", o->data ? o->data : "default corpus, validation split", n);
			printf("loss       %.4f nats/token over %lld tokens (%lld batches of %d x %d)\n", loss, (long long)ntok,
			       (long long)(ntok / ((int64_t)B * T)), B, T);
			printf("perplexity %.3f\n", exp(loss));
		}
	}
	trainer_tokens_release(&tok);
	nn_gpt_release(&m);
	return rc;
}

int trainer_sample_token(const float *logits, int V, double temperature, int top_k, uint64_t *rng, double *probs)
{
	int best = 0;
	for (int i = 1; i < V; i++)
		if (logits[i] > logits[best])
			best = i;
	if (temperature <= 0)
		return best;
	double cut = -INFINITY;
	if (top_k > 0 && top_k < V) {
		/* the k-th largest logit: the smallest one kept */
		for (int i = 0; i < V; i++)
			probs[i] = logits[i];
		for (int k = 0; k < top_k; k++) {
			int j = -1;
			for (int i = 0; i < V; i++)
				if (probs[i] != -INFINITY && (j < 0 || probs[i] > probs[j]))
					j = i;
			cut = probs[j];
			probs[j] = -INFINITY;
		}
	}
	double sum = 0;
	for (int i = 0; i < V; i++) {
		probs[i] = logits[i] >= cut ? exp((logits[i] - logits[best]) / temperature) : 0;
		sum += probs[i];
	}
	double u = (double)rng_f32(rng) * sum, acc = 0;
	for (int i = 0; i < V; i++) {
		acc += probs[i];
		if (u < acc && probs[i] > 0)
			return i;
	}
	return best;
}

int trainer_generate_with(const struct trainer_generate_opts *o, int V, int maxT, trainer_next_logits_fn next_logits,
			  void *arg)
{
	size_t plen = strlen(o->prompt);
	if (plen == 0)
		return ascent_error(ASCENT_EUSAGE, "--prompt must not be empty (sampling starts from its bytes)");
	for (size_t i = 0; i < plen; i++)
		if ((unsigned char)o->prompt[i] >= V)
			return ascent_error(ASCENT_EUSAGE, "--prompt byte %d at offset %zu is outside the model's vocabulary (%d)",
					    (unsigned char)o->prompt[i], i, V);
	size_t total = plen + (size_t)o->tokens;
	int *ctx = malloc(total * sizeof *ctx);
	double *probs = malloc((size_t)V * sizeof *probs);
	if (!ctx || !probs) {
		free(ctx);
		free(probs);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < plen; i++)
		ctx[i] = (unsigned char)o->prompt[i];
	uint64_t rng = rng_seed((uint64_t)o->seed, 0x6e6e);
	fwrite(o->prompt, 1, plen, stdout);
	fflush(stdout);
	size_t len = plen;
	int rc = 0;
	for (int k = 0; !rc && k < o->tokens; k++) {
		int T = len < (size_t)maxT ? (int)len : maxT;
		const float *lg = NULL;
		rc = next_logits(arg, ctx + len - (size_t)T, T, &lg);
		if (rc)
			break;
		int next = trainer_sample_token(lg, V, o->temperature, o->top_k, &rng, probs);
		ctx[len++] = next;
		fputc(next, stdout);
		if (next == '\n')
			fflush(stdout);
	}
	fputc('\n', stdout);
	fflush(stdout);
	free(ctx);
	free(probs);
	return rc;
}

static int nn_next_logits(void *arg, const int *ctx, int T, const float **logits)
{
	struct nn_gpt *m = arg;
	int rc = nn_gpt_forward(m, ctx, NULL, 1, T);
	*logits = nn_gpt_logits(m) + (size_t)(T - 1) * (size_t)m->cfg.vocab_size;
	return rc;
}

int trainer_generate_run(const struct trainer_generate_opts *o)
{
	char dir[TRAINER_PATH_MAX + 64];
	int rc = trainer_ckpt_resolve(o->ckpt, dir, sizeof dir);
	if (rc)
		return rc;
	if (!o->prompt || !*o->prompt)
		return ascent_error(ASCENT_EUSAGE, "--prompt must not be empty (sampling starts from its bytes)");
	nn_set_threads(o->threads);
	struct nn_gpt m;
	rc = trainer_model_open(dir, &m);
	if (rc)
		return rc;
	rc = trainer_generate_with(o, m.cfg.vocab_size, trained_seq(dir, &m), nn_next_logits, &m);
	nn_gpt_release(&m);
	return rc;
}

int trainer_tokenize_run(char *const *inputs, int ninputs, const char *out, int vocab_size, int force)
{
	if (ninputs < 1)
		return ascent_error(ASCENT_EUSAGE, "no input: pass text files or directories to tokenize");
	struct fs_output fo = { .cmd = "tokenize", .option = "-o", .path = out, .inputs = (const char *const *)inputs,
				.ninputs = ninputs, .makes = FS_HOLDS_SHARD, .force = force };
	int rc = fs_output_check(&fo);
	if (rc)
		return rc;
	struct trainer_tokens all = { 0 };
	size_t cap = 0;
	for (int i = 0; i < ninputs && !rc; i++) {
		struct trainer_tokens t;
		rc = trainer_tokens_load_skip(inputs[i], vocab_size, out, &t);
		if (rc)
			break;
		if (all.n + t.n > cap) {
			size_t nc = cap ? cap : 1 << 20;
			while (nc < all.n + t.n)
				nc *= 2;
			uint16_t *np = realloc(all.tok, nc * sizeof *np);
			if (!np) {
				trainer_tokens_release(&t);
				rc = ascent_error(ASCENT_ENOMEM, "out of memory tokenizing '%s'", inputs[i]);
				break;
			}
			all.tok = np;
			cap = nc;
		}
		memcpy(all.tok + all.n, t.tok, t.n * sizeof *t.tok);
		all.n += t.n;
		trainer_tokens_release(&t);
	}
	if (!rc)
		rc = trainer_shard_write(out, all.tok, all.n);
	if (!rc)
		printf("wrote %s: %zu tokens (byte-level, vocab %d) from %d input%s\n", out, all.n, vocab_size, ninputs,
		       ninputs == 1 ? "" : "s");
	trainer_tokens_release(&all);
	return rc;
}
