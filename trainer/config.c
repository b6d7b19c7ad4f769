/* trainer/config.c — the training configuration: the field table that drives options, --config
 * files, the resolved config.json and resume checks; defaults, presets and cross-field checks. */
#include "trainer/trainer.h"
#include "profiler/prof.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define F(k, o, t, field, lo, hi, ch, mv, ex, h)                                                              \
	{ .key = k, .option = o, .type = t, .offset = offsetof(struct trainer_config, field),                 \
	  .size = sizeof(((struct trainer_config *)0)->field), .min = lo, .max = hi, .choices = ch, .metavar = mv, \
	  .exact = ex, .help = h }
#define FO(k, o, t, field, lo, hi, mv, ex, h)                                                                 \
	{ .key = k, .option = o, .type = t, .offset = offsetof(struct trainer_config, field),                 \
	  .size = sizeof(((struct trainer_config *)0)->field), .min = lo, .max = hi, .min_open = 1, .metavar = mv, \
	  .exact = ex, .help = h }

#define BIG 1e9

const struct trainer_field trainer_fields[] = {
	F("preset", "preset", TF_STRING, preset, 0, 0, "tiny|small|gpt2-124m", NULL, 1,
	  "model preset: tiny (L4 C256 H4), small (L6 C512 H8), gpt2-124m (L12 C768 H12)"),
	F("vocab_size", "vocab-size", TF_INT, vocab_size, 1, 65536, NULL, "V", 1, "vocabulary size (default: the preset's, 256)"),
	F("max_seq", "max-seq", TF_INT, max_seq, 1, 1 << 20, NULL, "T", 1, "positions in wpe, n_positions (default: the preset's)"),
	F("n_layer", "n-layer", TF_INT, n_layer, 1, 4096, NULL, "L", 1, "layers (default: the preset's)"),
	F("n_head", "n-head", TF_INT, n_head, 1, 4096, NULL, "H", 1, "attention heads (default: the preset's)"),
	F("n_embd", "n-embd", TF_INT, n_embd, 1, 1 << 16, NULL, "C", 1, "embedding width (default: the preset's)"),
	F("data", "data", TF_STRING, data, 0, 0, NULL, "PATH", 1,
	  "text file, llm.c shard (.bin) or a directory of them (default: the fortunes corpus)"),
	F("val_data", "val-data", TF_STRING, val_data, 0, 0, NULL, "PATH",
	  0, "validation data (default: the last --val-fraction of --data)"),
	F("val_fraction", "val-fraction", TF_DOUBLE, val_fraction, 0.0001, 0.5, NULL, "X", 1,
	  "share of the data kept for validation, from its end (default 0.05)"),
	F("steps", "steps", TF_INT, steps, 1, BIG, NULL, "N", 1, "optimizer steps (default 300)"),
	F("batch", "batch", TF_INT, batch, 1, 65536, NULL, "B", 1, "sequences per micro-batch (default 64)"),
	F("seq", "seq", TF_INT, seq, 1, 1 << 20, NULL, "T", 1, "tokens per sequence (default 64; at most max_seq)"),
	F("grad_accum", "grad-accum", TF_INT, grad_accum, 1, 65536, NULL, "K",
	  1, "micro-batches per optimizer step (default 1)"),
	FO("lr", "lr", TF_DOUBLE, lr, 0, 10, "X", 1, "peak learning rate, in (0, 10] (default 0.0015)"),
	F("min_lr", "min-lr", TF_DOUBLE, min_lr, 0, 10, NULL, "X", 1, "final learning rate of the cosine (default lr/10)"),
	F("warmup", "warmup", TF_INT, warmup, 0, BIG, NULL, "N", 1, "linear warm-up steps (default 30)"),
	F("lr_schedule", "lr-schedule", TF_STRING, lr_schedule, 0, 0, "cosine|constant", NULL, 1,
	  "after warm-up: cosine decay to min_lr, or constant (default cosine)"),
	F("weight_decay", "weight-decay", TF_DOUBLE, weight_decay, 0, 10, NULL, "X", 1,
	  "AdamW decoupled weight decay on the matrices (default 0.1)"),
	F("beta1", "beta1", TF_DOUBLE, beta1, 0, 0.999999, NULL, "X", 1, "AdamW beta1 (default 0.9)"),
	F("beta2", "beta2", TF_DOUBLE, beta2, 0, 0.999999, NULL, "X", 1, "AdamW beta2 (default 0.95)"),
	FO("eps", "eps", TF_DOUBLE, eps, 0, 1, "X", 1, "AdamW epsilon (default 1e-8)"),
	F("clip", "clip", TF_DOUBLE, clip, 0, 1e9, NULL, "X", 1, "clip the global gradient norm to X; 0 = off (default 1)"),
	F("seed", "seed", TF_I64, seed, 0, 9007199254740992.0, NULL, "S", 1, "seed of the weights and the batches (default 1337)"),
	F("threads", "threads", TF_INT, threads, 0, 4096, NULL, "N", 0,
	  "threads for BLAS and kernels; 0 = cores on the host / ranks on the host"),
	F("dp", "dp", TF_INT, dp, 0, 65536, NULL, "N", 0,
	  "data-parallel ranks; 0 = world size / (tp x pp) (dp x tp x pp must equal the ranks of mpirun)"),
	F("tp", "tp", TF_INT, tp, 1, 4096, NULL, "N", 0, "tensor-parallel ranks, Megatron-style (divides n_head; default 1)"),
	F("pp", "pp", TF_INT, pp, 1, 4096, NULL, "N", 0, "pipeline stages (default 1)"),
	F("zero", "zero", TF_INT, zero, 0, 2, NULL, "0|1|2", 0,
	  "ZeRO stage: 1 shards the optimizer state over DP, 2 also the gradients (reduce-scattered block by block as the backward makes them)"),
	F("schedule", "schedule", TF_STRING, schedule, 0, 0, "gpipe|1f1b|interleaved", NULL, 0,
	  "pipeline schedule (default 1f1b)"),
	F("microbatches", "microbatches", TF_INT, microbatches, 0, 4096, NULL, "M", 0,
	  "pipeline micro-batches per accumulation round; each DP rank's share of --batch is cut in M (0 = pp)"),
	F("virtual_stages", "virtual-stages", TF_INT, virtual_stages, 1, TRAINER_MAX_VSTAGES, NULL, "V", 0,
	  "model chunks per pipeline stage for --schedule interleaved (default 1)"),
	F("bucket_mb", "bucket-mb", TF_DOUBLE, bucket_mb, 0.001, 4096, NULL, "X", 0,
	  "DP gradient bucket size in MB, launched as the backward finishes them (default 1)"),
	F("precision", "precision", TF_STRING, precision, 0, 0, "fp32|bf16|fp16", NULL, 1,
	  "GEMM precision; master weights, gradients and optimizer stay fp32 (default fp32)"),
	F("recompute", "recompute", TF_BOOL, recompute, 0, 0, NULL, NULL, 0,
	  "activation recomputation: keep block inputs only, recompute each block in backward"),
	FO("loss_scale", "loss-scale", TF_DOUBLE, loss_scale, 0, 16777216.0, "X", 1,
	   "fp16: initial dynamic loss scale (default 65536)"),
	F("loss_scale_window", "loss-scale-window", TF_INT, loss_scale_window, 1, BIG, NULL, "N", 1,
	  "fp16: clean steps before the loss scale doubles (default 2000)"),
	F("profile", "profile", TF_BOOL, profile, 0, 0, NULL, NULL, 0,
	  "profile the run: RUN/trace.db (ascent report / view / export read it)"),
	F("profile_steps", "profile-steps", TF_STRING, profile_steps, 0, 0, NULL, "SCHED", 0,
	  "profiler schedule skip=S,wait=W,warmup=U,active=A,repeat=R (default: every step)"),
	F("profile_max_mb", "profile-max-mb", TF_INT, profile_max_mb, 0, BIG, NULL, "N", 0,
	  "per-rank profile size budget in MB, then per-step aggregates only (default 0 = unlimited)"),
	F("profile_stacks", "profile-stacks", TF_BOOL, profile_stacks, 0, 0, NULL, NULL, 0,
	  "capture call stacks at range begin (libunwind)"),
	F("profile_sample", "profile-sample", TF_INT, profile_sample, 0, 10000, NULL, "HZ", 0,
	  "SIGPROF stack sampler rate; 0 = off"),
	F("eval_every", "eval-every", TF_INT, eval_every, 0, BIG, NULL, "N", 0,
	  "evaluate on the validation split every N steps; 0 = only at the end (default 100)"),
	F("eval_batches", "eval-batches", TF_INT, eval_batches, 1, BIG, NULL, "N", 0,
	  "validation batches per evaluation, read in order (default 20)"),
	F("ckpt_every", "ckpt-every", TF_INT, ckpt_every, 0, BIG, NULL, "N", 0,
	  "write a checkpoint every N steps; 0 = only at the end"),
	F("keep_ckpts", "keep-ckpts", TF_INT, keep_ckpts, 0, BIG, NULL, "N", 0,
	  "keep only the newest N checkpoints, plus any whose folder holds a file named 'keep' (default 0 = keep all)"),
	F("out", "out", TF_STRING, out, 0, 0, NULL, "DIR", 0, "run directory (default runs/<UTC timestamp>)"),
	F("resume", "resume", TF_STRING, resume, 0, 0, NULL, "DIR|latest", 0,
	  "continue from a checkpoint, a run directory's newest checkpoint, or 'latest'"),
	F("init_from", "init-from", TF_STRING, init_from, 0, 0, NULL, "DIR", 0,
	  "fine-tune: start from this checkpoint's (or run's newest checkpoint's) weights at step 0 with a fresh "
	  "optimizer; the model dimensions come from it"),
};
const int trainer_nfields = (int)(sizeof trainer_fields / sizeof trainer_fields[0]);

_Static_assert(sizeof trainer_fields / sizeof trainer_fields[0] <= TRAINER_MAX_FIELDS, "raise TRAINER_MAX_FIELDS");

const struct trainer_field *trainer_field_find(const char *key)
{
	for (int i = 0; i < trainer_nfields; i++)
		if (!strcmp(trainer_fields[i].key, key))
			return &trainer_fields[i];
	return NULL;
}

void trainer_config_defaults(struct trainer_config *c)
{
	memset(c, 0, sizeof *c);
	strcpy(c->preset, "tiny");
	c->val_fraction = 0.05;
	c->steps = 300;
	c->batch = 64;
	c->seq = 64;
	c->grad_accum = 1;
	c->lr = 1.5e-3;
	c->min_lr = -1;
	c->warmup = 30;
	strcpy(c->lr_schedule, "cosine");
	c->weight_decay = 0.1;
	c->beta1 = 0.9;
	c->beta2 = 0.95;
	c->eps = 1e-8;
	c->clip = 1.0;
	c->seed = 1337;
	c->threads = 0;
	c->dp = 0;
	c->tp = 1;
	c->pp = 1;
	c->zero = 0;
	strcpy(c->schedule, "1f1b");
	c->microbatches = 0;
	c->virtual_stages = 1;
	c->bucket_mb = 1.0;
	strcpy(c->precision, "fp32");
	c->recompute = 0;
	c->loss_scale = 65536.0;
	c->loss_scale_window = 2000;
	c->profile = 0;
	c->profile_steps[0] = 0;
	c->profile_max_mb = 0;
	c->profile_stacks = 0;
	c->profile_sample = 0;
	c->eval_every = 100;
	c->eval_batches = 20;
	c->ckpt_every = 0;
}

static void *fptr(struct trainer_config *c, const struct trainer_field *f)
{
	return (char *)c + f->offset;
}

static const void *fcptr(const struct trainer_config *c, const struct trainer_field *f)
{
	return (const char *)c + f->offset;
}

static int choice_ok(const char *choices, const char *v)
{
	size_t n = strlen(v);
	for (const char *p = choices; *p;) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, v, n))
			return 1;
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

static const char *range_text(const struct trainer_field *f, char *buf, size_t n)
{
	if (f->type == TF_DOUBLE)
		snprintf(buf, n, "%c%g, %g]", f->min_open ? '(' : '[', f->min, f->max);
	else
		snprintf(buf, n, "[%.0f, %.0f]", f->min, f->max);
	return buf;
}

/* Check a number against the field's range; `code` is the error code to use. */
static int check_range(const struct trainer_field *f, double v, const char *where, int code)
{
	char r[96];
	if (v < f->min || v > f->max || (f->min_open && v == f->min))
		return ascent_error(code, "%s must be in %s, got %g", where, range_text(f, r, sizeof r), v);
	return 0;
}

static int set_string(struct trainer_config *c, const struct trainer_field *f, const char *v, const char *where,
		      int code)
{
	if (f->choices && !choice_ok(f->choices, v))
		return ascent_error(code, "%s expects one of %s, got '%s'", where, f->choices, v);
	if (strlen(v) >= f->size)
		return ascent_error(code, "%s is too long (%zu bytes, at most %zu)", where, strlen(v), f->size - 1);
	memcpy(fptr(c, f), v, strlen(v) + 1);
	return 0;
}

int trainer_config_set(struct trainer_config *c, const struct trainer_field *f, const char *value, const char *where)
{
	char r[96];
	switch (f->type) {
	case TF_INT:
	case TF_I64: {
		char *end;
		errno = 0;
		long long v = strtoll(value, &end, 10);
		if (!*value || errno || *end)
			return ascent_error(ASCENT_EUSAGE, "%s expects an integer in %s, got '%s'", where,
					    range_text(f, r, sizeof r), value);
		int rc = check_range(f, (double)v, where, ASCENT_EUSAGE);
		if (rc)
			return rc;
		if (f->type == TF_INT)
			*(int *)fptr(c, f) = (int)v;
		else
			*(int64_t *)fptr(c, f) = v;
		return 0;
	}
	case TF_DOUBLE: {
		char *end;
		errno = 0;
		double v = strtod(value, &end);
		if (!*value || errno || *end || !isfinite(v))
			return ascent_error(ASCENT_EUSAGE, "%s expects a number in %s, got '%s'", where,
					    range_text(f, r, sizeof r), value);
		int rc = check_range(f, v, where, ASCENT_EUSAGE);
		if (rc)
			return rc;
		*(double *)fptr(c, f) = v;
		return 0;
	}
	case TF_STRING:
		return set_string(c, f, value, where, ASCENT_EUSAGE);
	case TF_BOOL:
		if (!strcmp(value, "1") || !strcmp(value, "true"))
			*(int *)fptr(c, f) = 1;
		else if (!strcmp(value, "0") || !strcmp(value, "false"))
			*(int *)fptr(c, f) = 0;
		else
			return ascent_error(ASCENT_EUSAGE, "%s expects true or false, got '%s'", where, value);
		return 0;
	}
	return ascent_error(ASCENT_EINTERNAL, "field '%s' has an unknown type", f->key);
}

static const char *json_type_name(const cJSON *v)
{
	if (cJSON_IsBool(v))
		return "a boolean";
	if (cJSON_IsNumber(v))
		return "a number";
	if (cJSON_IsString(v))
		return "a string";
	if (cJSON_IsArray(v))
		return "an array";
	if (cJSON_IsObject(v))
		return "an object";
	if (cJSON_IsNull(v))
		return "null";
	return "an unknown value";
}

static int apply_json_value(struct trainer_config *c, const struct trainer_field *f, const cJSON *v,
			    const char *where)
{
	char r[96];
	switch (f->type) {
	case TF_INT:
	case TF_I64: {
		if (!cJSON_IsNumber(v))
			return ascent_error(ASCENT_EINPUT, "%s must be an integer in %s, got %s", where,
					    range_text(f, r, sizeof r), json_type_name(v));
		double d = v->valuedouble;
		if (d != floor(d) || !isfinite(d))
			return ascent_error(ASCENT_EINPUT, "%s must be an integer in %s, got %g", where,
					    range_text(f, r, sizeof r), d);
		int rc = check_range(f, d, where, ASCENT_EINPUT);
		if (rc)
			return rc;
		if (f->type == TF_INT)
			*(int *)fptr(c, f) = (int)d;
		else
			*(int64_t *)fptr(c, f) = (int64_t)d;
		return 0;
	}
	case TF_DOUBLE: {
		if (!cJSON_IsNumber(v))
			return ascent_error(ASCENT_EINPUT, "%s must be a number in %s, got %s", where,
					    range_text(f, r, sizeof r), json_type_name(v));
		int rc = check_range(f, v->valuedouble, where, ASCENT_EINPUT);
		if (rc)
			return rc;
		*(double *)fptr(c, f) = v->valuedouble;
		return 0;
	}
	case TF_STRING:
		if (!cJSON_IsString(v))
			return ascent_error(ASCENT_EINPUT, "%s must be a string%s%s, got %s", where,
					    f->choices ? ": one of " : "", f->choices ? f->choices : "", json_type_name(v));
		return set_string(c, f, v->valuestring, where, ASCENT_EINPUT);
	case TF_BOOL:
		if (!cJSON_IsBool(v))
			return ascent_error(ASCENT_EINPUT, "%s must be true or false, got %s", where, json_type_name(v));
		*(int *)fptr(c, f) = cJSON_IsTrue(v) ? 1 : 0;
		return 0;
	}
	return ascent_error(ASCENT_EINTERNAL, "field '%s' has an unknown type", f->key);
}

int trainer_config_apply_json(struct trainer_config *c, const cJSON *obj, const char *path, unsigned char *seen)
{
	if (!cJSON_IsObject(obj))
		return ascent_error(ASCENT_EINPUT, "'%s': the configuration must be a JSON object of settings, got %s", path,
				    json_type_name(obj));
	for (const cJSON *it = obj->child; it; it = it->next) {
		const char *key = it->string ? it->string : "";
		const struct trainer_field *f = trainer_field_find(key);
		if (!f)
			return ascent_error(ASCENT_EINPUT,
					    "'%s': unknown key '%s' (the keys are those of a run's config.json; "
					    "see 'ascent train --help')",
					    path, key);
		char where[TRAINER_PATH_MAX + 128];
		snprintf(where, sizeof where, "'%s': key '%s'", path, key);
		int rc = apply_json_value(c, f, it, where);
		if (rc)
			return rc;
		if (seen)
			seen[f - trainer_fields] = 1;
	}
	return 0;
}

int trainer_config_load_file(struct trainer_config *c, const char *path, unsigned char *seen)
{
	cJSON *root;
	int rc = json_read_file(path, &root);
	if (rc)
		return rc;
	rc = trainer_config_apply_json(c, root, path, seen);
	cJSON_Delete(root);
	return rc;
}

void trainer_config_model(const struct trainer_config *c, struct nn_config *out)
{
	out->vocab_size = c->vocab_size;
	out->max_seq = c->max_seq;
	out->n_layer = c->n_layer;
	out->n_head = c->n_head;
	out->n_embd = c->n_embd;
}

/* init_from: resolve the checkpoint directory and take the model dimensions from its config.json. */
static int init_from_model(struct trainer_config *c)
{
	char dir[TRAINER_PATH_MAX] = "";
	if (trainer_ckpt_resolve(c->init_from, dir, sizeof dir))
		return ascent_error(ASCENT_EUSAGE, "--init-from '%s': no model.safetensors there and no run checkpoints "
				    "(pass a checkpoint directory such as RUN/ckpt/step-000300, or a run directory)",
				    c->init_from);
	struct nn_config m;
	int rc = trainer_hf_config_read(dir, &m);
	if (rc)
		return ascent_error_ctx(rc, "--init-from '%s'", c->init_from);
	const struct { const char *opt; int *have, want; } dims[] = {
		{ "vocab-size", &c->vocab_size, m.vocab_size }, { "max-seq", &c->max_seq, m.max_seq },
		{ "n-layer", &c->n_layer, m.n_layer },          { "n-head", &c->n_head, m.n_head },
		{ "n-embd", &c->n_embd, m.n_embd },
	};
	for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
		if (*dims[i].have && *dims[i].have != dims[i].want)
			return ascent_error(ASCENT_EUSAGE, "--%s %d differs from the --init-from checkpoint's %d (leave the model "
					    "dimensions out: they come from '%s')", dims[i].opt, *dims[i].have, dims[i].want, dir);
		*dims[i].have = dims[i].want;
	}
	snprintf(c->init_from, sizeof c->init_from, "%s", dir);
	return 0;
}

int trainer_config_finish(struct trainer_config *c)
{
	struct nn_config p;
	int rc = nn_config_preset(c->preset, &p);
	if (rc)
		return rc;
	if (c->init_from[0] && !c->resume[0] && (rc = init_from_model(c)))
		return rc;
	if (!c->vocab_size)
		c->vocab_size = p.vocab_size;
	if (!c->max_seq)
		c->max_seq = p.max_seq;
	if (!c->n_layer)
		c->n_layer = p.n_layer;
	if (!c->n_head)
		c->n_head = p.n_head;
	if (!c->n_embd)
		c->n_embd = p.n_embd;
	if (!c->seq)
		c->seq = c->max_seq;
	if (c->min_lr < 0)
		c->min_lr = c->lr / 10;
	struct nn_config m;
	trainer_config_model(c, &m);
	rc = nn_config_validate(&m);
	if (rc)
		return ascent_error_ctx(ASCENT_EUSAGE, "bad model configuration");
	if (c->seq > c->max_seq)
		return ascent_error(ASCENT_EUSAGE, "seq %d is longer than the model's max_seq %d (use --seq <= %d or a larger --max-seq)",
				    c->seq, c->max_seq, c->max_seq);
	if (c->min_lr > c->lr)
		return ascent_error(ASCENT_EUSAGE, "min_lr %g is above lr %g (min_lr must be <= lr)", c->min_lr, c->lr);
	enum trainer_pp_kind k;
	if ((rc = trainer_pp_parse(c->schedule, &k)))
		return rc;
	if (c->pp > 1 || c->virtual_stages > 1) {
		int M = c->microbatches ? c->microbatches : c->pp;
		if ((rc = trainer_pp_check(k, c->pp, M, c->virtual_stages)))
			return rc;
		if (c->n_layer < c->pp * c->virtual_stages)
			return ascent_error(ASCENT_EUSAGE,
					    "%d layers cannot fill %d pipeline chunks (pp %d x virtual stages %d): every chunk "
					    "needs a layer",
					    c->n_layer, c->pp * c->virtual_stages, c->pp, c->virtual_stages);
	}
	if (c->n_head % c->tp)
		return ascent_error(ASCENT_EUSAGE, "--tp %d must divide the number of heads %d", c->tp, c->n_head);
	if (c->profile_steps[0]) {
		struct prof_schedule ps;
		if ((rc = prof_schedule_parse(c->profile_steps, &ps)))
			return ascent_error_ctx(rc, "--profile-steps");
	}
	if ((int64_t)c->batch * c->seq > (int64_t)1 << 30)
		return ascent_error(ASCENT_EUSAGE, "batch x seq = %lld tokens is too large (at most 2^30)",
				    (long long)c->batch * c->seq);
	return 0;
}

/* The shortest decimal text that reads back as exactly `v` (cJSON's own printing may lose the
 * last bit, which would break bit-exact resume and the configuration hash). */
static cJSON *exact_number(double v)
{
	char buf[64];
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, sizeof buf, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return cJSON_CreateRaw(buf);
}

cJSON *trainer_config_to_json(const struct trainer_config *c)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	for (int i = 0; i < trainer_nfields; i++) {
		const struct trainer_field *f = &trainer_fields[i];
		const void *p = fcptr(c, f);
		cJSON *v = NULL;
		switch (f->type) {
		case TF_INT: v = cJSON_CreateNumber(*(const int *)p); break;
		case TF_I64: v = exact_number((double)*(const int64_t *)p); break;
		case TF_DOUBLE: v = exact_number(*(const double *)p); break;
		case TF_STRING: v = cJSON_CreateString((const char *)p); break;
		case TF_BOOL: v = cJSON_CreateBool(*(const int *)p); break;
		}
		if (!v || !cJSON_AddItemToObject(o, f->key, v)) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

int trainer_config_write(const char *path, const struct trainer_config *c)
{
	cJSON *o = trainer_config_to_json(c);
	if (!o)
		return ascent_error(ASCENT_ENOMEM, "out of memory writing '%s'", path);
	int rc = json_write_file(path, o);
	cJSON_Delete(o);
	return rc;
}

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

uint64_t trainer_config_hash(const struct trainer_config *c, const unsigned char *seen)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (int i = 0; i < trainer_nfields; i++) {
		const struct trainer_field *f = &trainer_fields[i];
		if (!f->exact || (seen && !seen[i]))
			continue;
		h = fnv(h, f->key, strlen(f->key) + 1);
		const void *p = fcptr(c, f);
		h = fnv(h, p, f->type == TF_STRING ? strlen(p) + 1 : f->size);
	}
	return h;
}

void trainer_cli_init(struct trainer_cli *cli)
{
	memset(cli, 0, sizeof *cli);
	int n = 0;
	cli->specs[n++] = (struct opt_spec){ .name = "config", .type = OPT_STR, .dest = &cli->config_file,
					     .metavar = "FILE.json",
					     .help = "settings from a JSON file (keys as in a run's config.json); options override it" };
	for (int i = 0; i < trainer_nfields; i++) {
		const struct trainer_field *f = &trainer_fields[i];
		if (!f->option)
			continue;
		struct opt_spec *s = &cli->specs[n++];
		s->name = f->option;
		s->metavar = f->metavar;
		s->help = f->help;
		if (f->type == TF_BOOL) {
			s->type = OPT_FLAG;
			s->dest = &cli->flag[i];
		} else {
			s->type = OPT_STR;
			s->dest = &cli->value[i];
			s->choices = f->choices;
		}
	}
	cli->specs[n++] = (struct opt_spec){ .name = "force", .type = OPT_FLAG, .dest = &cli->force,
					     .help = "write into an --out folder that holds a checkpoint, profile or token shard "
						     "this run did not make (never over its --data)" };
	cli->specs[n++] = (struct opt_spec){ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &cli->help,
					     .help = "show this help" };
	cli->specs[n] = (struct opt_spec){ 0 };
}

static void copy_field(struct trainer_config *dst, const struct trainer_config *src, const struct trainer_field *f)
{
	memcpy(fptr(dst, f), fcptr(src, f), f->size);
}

/* A new run directory name: runs/<UTC yyyymmdd-hhmmss>, with -2, -3… when it exists. */
static void default_out(char *buf, size_t n)
{
	char ts[32];
	clock_format_utc(clock_utc_ns(), 1, ts, sizeof ts);
	snprintf(buf, n, "runs/%s", ts);
	for (int k = 2; fs_exists(buf) && k < 1000; k++)
		snprintf(buf, n, "runs/%s-%d", ts, k);
}

int trainer_config_resolve(struct trainer_config *out, const struct trainer_cli *cli, const char *cmd)
{
	struct trainer_config file, opts;
	unsigned char file_seen[TRAINER_MAX_FIELDS] = { 0 }, opt_seen[TRAINER_MAX_FIELDS] = { 0 };
	trainer_config_defaults(&file);
	trainer_config_defaults(&opts);
	int rc;
	if (cli->config_file) {
		rc = trainer_config_load_file(&file, cli->config_file, file_seen);
		if (rc)
			return rc;
	}
	for (int i = 0; i < trainer_nfields; i++) {
		const struct trainer_field *f = &trainer_fields[i];
		if (!f->option)
			continue;
		char where[160];
		snprintf(where, sizeof where, "option '--%s' of 'ascent %s'", f->option, cmd);
		if (f->type == TF_BOOL && cli->flag[i]) {
			*(int *)fptr(&opts, f) = 1;
			opt_seen[i] = 1;
		} else if (f->type != TF_BOOL && cli->value[i]) {
			rc = trainer_config_set(&opts, f, cli->value[i], where);
			if (rc)
				return rc;
			opt_seen[i] = 1;
		}
	}
	const struct trainer_field *f_resume = trainer_field_find("resume"), *f_out = trainer_field_find("out");
	int i_resume = (int)(f_resume - trainer_fields), i_out = (int)(f_out - trainer_fields);
	const char *resume = opt_seen[i_resume] ? opts.resume : file_seen[i_resume] ? file.resume : "";
	const char *out_given = opt_seen[i_out] ? opts.out : file_seen[i_out] ? file.out : "";
	int i_init = (int)(trainer_field_find("init_from") - trainer_fields);
	if (*resume && (opt_seen[i_init] || file_seen[i_init]))
		return ascent_error(ASCENT_EUSAGE, "--resume and --init-from exclude each other: --resume continues a run "
				    "(its weights, optimizer and step), --init-from starts a new one from a checkpoint's weights");

	struct trainer_config c;
	trainer_config_defaults(&c);
	char ckdir[TRAINER_PATH_MAX] = "";
	if (*resume) {
		rc = trainer_ckpt_find(resume, out_given, ckdir, sizeof ckdir);
		if (rc)
			return rc;
		struct trainer_state st;
		rc = trainer_ckpt_read_state(ckdir, &st);
		if (rc)
			return rc;
		c = st.config;
		c.out[0] = 0;
		/* the layout is this launch's, never the checkpoint's: resume in any layout */
		struct trainer_config d;
		trainer_config_defaults(&d);
		static const char *const layout[] = { "dp", "tp", "pp", "zero", "schedule", "microbatches",
						      "virtual_stages", "bucket_mb", "profile", "profile_steps",
						      "profile_max_mb", "profile_stacks", "profile_sample" };
		for (size_t i = 0; i < sizeof layout / sizeof layout[0]; i++)
			copy_field(&c, &d, trainer_field_find(layout[i]));
	}
	for (int i = 0; i < trainer_nfields; i++)
		if (file_seen[i])
			copy_field(&c, &file, &trainer_fields[i]);
	for (int i = 0; i < trainer_nfields; i++)
		if (opt_seen[i])
			copy_field(&c, &opts, &trainer_fields[i]);
	if (*resume) {
		if (strlen(ckdir) >= sizeof c.resume)
			return ascent_error(ASCENT_EUSAGE, "checkpoint path '%s' is too long", ckdir);
		strcpy(c.resume, ckdir);
		if (!*out_given) {
			/* continue in the run the checkpoint belongs to: RUN/ckpt/step-N */
			char run[TRAINER_PATH_MAX];
			snprintf(run, sizeof run, "%s", ckdir);
			char *s = strrchr(run, '/');
			if (s) {
				*s = 0;
				char *s2 = strrchr(run, '/');
				if (s2 && !strcmp(s2 + 1, "ckpt")) {
					*s2 = 0;
					snprintf(c.out, sizeof c.out, "%s", s2 == run ? "/" : run);
				} else if (!strcmp(run, "ckpt")) {
					snprintf(c.out, sizeof c.out, ".");
				}
			}
		}
	}
	if (!c.out[0])
		default_out(c.out, sizeof c.out);
	c.force = cli->force;
	rc = trainer_config_finish(&c);
	if (rc)
		return rc;
	*out = c;
	return 0;
}
