/* trainer/checkpoint.c — checkpoints: model.safetensors and config.json in Hugging Face's GPT-2
 * layout (so transformers' GPT2LMHeadModel loads them), the trainer state (AdamW moments, step,
 * configuration) in trainer_state.safetensors, written into a temporary directory and renamed
 * into place; validated loading; finding the newest checkpoint. */
#include "trainer/trainer.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define STATE_FILE "trainer_state.safetensors"
#define MODEL_FILE "model.safetensors"
#define CONFIG_FILE "config.json"
#define STATE_FORMAT "ascent-trainer-state-1"

/* The slice of parameter block `base` (param or grad layout) for (id, layer). */
static size_t slice_len(const struct nn_gpt *m, int id)
{
	return nn_param_layered(id) ? m->param_sizes[id] / (size_t)m->cfg.n_layer : m->param_sizes[id];
}

int trainer_model_save(const char *path, const struct nn_gpt *m)
{
	struct st_writer *w = st_writer_new();
	if (!w)
		return ascent_error(ASCENT_ENOMEM, "out of memory writing '%s'", path);
	int rc = st_writer_meta(w, "format", "pt");
	for (int id = 0; !rc && id < NN_NPARAMS; id++) {
		int nl = nn_param_layered(id) ? m->cfg.n_layer : 1;
		size_t len = slice_len(m, id);
		for (int l = 0; !rc && l < nl; l++) {
			char name[64];
			int64_t shape[2];
			nn_param_hf_name(id, l, name, sizeof name);
			int nd = nn_param_hf_shape(&m->cfg, id, shape);
			rc = st_writer_add(w, name, ST_F32, nd, shape, m->param[id] + (size_t)l * len);
		}
	}
	if (!rc)
		rc = st_writer_write(w, path);
	st_writer_free(w);
	return rc;
}

int trainer_hf_config_write(const char *path, const struct nn_config *c)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return ascent_error(ASCENT_ENOMEM, "out of memory writing '%s'", path);
	cJSON *arch = cJSON_AddArrayToObject(o, "architectures");
	cJSON_AddItemToArray(arch, cJSON_CreateString("GPT2LMHeadModel"));
	cJSON_AddStringToObject(o, "model_type", "gpt2");
	cJSON_AddNumberToObject(o, "vocab_size", c->vocab_size);
	cJSON_AddNumberToObject(o, "n_positions", c->max_seq);
	cJSON_AddNumberToObject(o, "n_ctx", c->max_seq);
	cJSON_AddNumberToObject(o, "n_embd", c->n_embd);
	cJSON_AddNumberToObject(o, "n_layer", c->n_layer);
	cJSON_AddNumberToObject(o, "n_head", c->n_head);
	cJSON_AddNullToObject(o, "n_inner");
	cJSON_AddStringToObject(o, "activation_function", "gelu_new");
	cJSON_AddNumberToObject(o, "layer_norm_epsilon", 1e-5);
	cJSON_AddNumberToObject(o, "initializer_range", 0.02);
	cJSON_AddNumberToObject(o, "resid_pdrop", 0.0);
	cJSON_AddNumberToObject(o, "embd_pdrop", 0.0);
	cJSON_AddNumberToObject(o, "attn_pdrop", 0.0);
	cJSON_AddBoolToObject(o, "scale_attn_weights", 1);
	cJSON_AddBoolToObject(o, "scale_attn_by_inverse_layer_idx", 0);
	cJSON_AddBoolToObject(o, "reorder_and_upcast_attn", 0);
	cJSON_AddBoolToObject(o, "tie_word_embeddings", 1);
	cJSON_AddBoolToObject(o, "use_cache", 1);
	cJSON_AddStringToObject(o, "torch_dtype", "float32");
	int rc = json_write_file(path, o);
	cJSON_Delete(o);
	return rc;
}

static int json_int(const cJSON *o, const char *key, const char *path, int *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v)
		return ascent_error(ASCENT_EINPUT, "'%s': key '%s' is missing (is it a GPT-2 config.json?)", path, key);
	if (!cJSON_IsNumber(v) || v->valuedouble != floor(v->valuedouble) || v->valuedouble < 1 || v->valuedouble > 1e9)
		return ascent_error(ASCENT_EINPUT, "'%s': key '%s' must be a positive integer", path, key);
	*out = (int)v->valuedouble;
	return 0;
}

int trainer_hf_config_read(const char *dir, struct nn_config *out)
{
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/%s", dir, CONFIG_FILE);
	cJSON *o;
	int rc = json_read_file(path, &o);
	if (rc)
		return rc;
	struct nn_config c;
	rc = json_int(o, "vocab_size", path, &c.vocab_size);
	if (!rc)
		rc = json_int(o, "n_positions", path, &c.max_seq);
	if (!rc)
		rc = json_int(o, "n_embd", path, &c.n_embd);
	if (!rc)
		rc = json_int(o, "n_layer", path, &c.n_layer);
	if (!rc)
		rc = json_int(o, "n_head", path, &c.n_head);
	const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "activation_function");
	if (!rc && act && (!cJSON_IsString(act) || strcmp(act->valuestring, "gelu_new")))
		rc = ascent_error(ASCENT_EINPUT, "'%s': activation_function must be \"gelu_new\" (the only one ascent computes)",
				  path);
	const cJSON *eps = cJSON_GetObjectItemCaseSensitive(o, "layer_norm_epsilon");
	if (!rc && eps && (!cJSON_IsNumber(eps) || fabs(eps->valuedouble - 1e-5) > 1e-9))
		rc = ascent_error(ASCENT_EINPUT, "'%s': layer_norm_epsilon must be 1e-5 (the value ascent computes with)", path);
	const cJSON *inner = cJSON_GetObjectItemCaseSensitive(o, "n_inner");
	if (!rc && inner && !cJSON_IsNull(inner) &&
	    (!cJSON_IsNumber(inner) || (int)inner->valuedouble != 4 * c.n_embd))
		rc = ascent_error(ASCENT_EINPUT, "'%s': n_inner must be null or 4 x n_embd = %d", path, 4 * c.n_embd);
	cJSON_Delete(o);
	if (rc)
		return rc;
	rc = nn_config_validate(&c);
	if (rc)
		return ascent_error_ctx(rc, "'%s'", path);
	*out = c;
	return 0;
}

/* Find a tensor by name, with or without the "transformer." prefix transformers adds. */
static const struct st_tensor *find_tensor(const struct st_file *f, const char *name)
{
	const struct st_tensor *t = st_find(f, name);
	if (!t) {
		char alt[96];
		snprintf(alt, sizeof alt, "transformer.%s", name);
		t = st_find(f, alt);
	}
	return t;
}

static int check_tensor(const struct st_tensor *t, const char *name, const char *path, int nd, const int64_t *shape)
{
	if (!t)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' is missing (is it a complete GPT-2 checkpoint?)", path,
				    name);
	if (t->dtype != ST_F32)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has dtype %s, expected F32", path, name,
				    st_dtype_name(t->dtype));
	int ok = t->ndim == nd;
	for (int k = 0; ok && k < nd; k++)
		ok = t->shape[k] == shape[k];
	if (!ok) {
		char got[128] = "", want[128] = "";
		for (int k = 0; k < t->ndim; k++)
			snprintf(got + strlen(got), sizeof got - strlen(got), "%s%lld", k ? ", " : "", (long long)t->shape[k]);
		for (int k = 0; k < nd; k++)
			snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", k ? ", " : "", (long long)shape[k]);
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has shape (%s), expected (%s) for this configuration",
				    path, name, got, want);
	}
	return 0;
}

/* 1 for tensors a Hugging Face GPT-2 file may hold that ascent does not use. */
static int ignorable(const char *name)
{
	if (!strncmp(name, "transformer.", 12))
		name += 12;
	return !strcmp(name, "lm_head.weight") || (strstr(name, ".attn.bias") && !strstr(name, "c_attn")) ||
	       strstr(name, ".attn.masked_bias");
}

int trainer_model_load(const char *dir, struct nn_gpt *m)
{
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/%s", dir, MODEL_FILE);
	struct st_file f;
	int rc = st_open(&f, path);
	if (rc)
		return rc;
	int used = 0;
	for (int id = 0; !rc && id < NN_NPARAMS; id++) {
		int nl = nn_param_layered(id) ? m->cfg.n_layer : 1;
		size_t len = slice_len(m, id);
		for (int l = 0; !rc && l < nl; l++) {
			char name[64];
			int64_t shape[2];
			nn_param_hf_name(id, l, name, sizeof name);
			int nd = nn_param_hf_shape(&m->cfg, id, shape);
			const struct st_tensor *t = find_tensor(&f, name);
			rc = check_tensor(t, name, path, nd, shape);
			if (!rc)
				rc = st_check_finite(t, path);
			if (!rc) {
				memcpy(m->param[id] + (size_t)l * len, t->data, len * sizeof(float));
				nn_gpt_params_changed(m);
				used++;
			}
		}
	}
	for (int i = 0; !rc && i < f.n; i++) {
		if (ignorable(f.t[i].name))
			continue;
		/* every other tensor must have been one we read */
		int known = 0;
		for (int id = 0; !known && id < NN_NPARAMS; id++) {
			int nl = nn_param_layered(id) ? m->cfg.n_layer : 1;
			for (int l = 0; !known && l < nl; l++) {
				char name[64];
				nn_param_hf_name(id, l, name, sizeof name);
				const char *n = f.t[i].name;
				if (!strncmp(n, "transformer.", 12))
					n += 12;
				known = !strcmp(n, name);
			}
		}
		if (!known)
			rc = ascent_error(ASCENT_EINPUT,
					  "'%s': unexpected tensor '%s' (does config.json match the weights? n_layer is %d)", path,
					  f.t[i].name, m->cfg.n_layer);
	}
	st_close(&f);
	(void)used;
	return rc;
}

int trainer_model_open(const char *dir, struct nn_gpt *m)
{
	memset(m, 0, sizeof *m);
	struct nn_config c;
	int rc = trainer_hf_config_read(dir, &c);
	if (rc)
		return rc;
	rc = nn_gpt_init(m, &c);
	if (rc)
		return rc;
	rc = trainer_model_load(dir, m);
	if (rc)
		nn_gpt_release(m);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */
/* Trainer state */

static int write_state(const char *path, const struct nn_gpt *m, const float *am, const float *av,
		       const struct trainer_state *st)
{
	struct st_writer *w = st_writer_new();
	if (!w)
		return ascent_error(ASCENT_ENOMEM, "out of memory writing '%s'", path);
	int64_t shape[1] = { (int64_t)m->n_params };
	char buf[64];
	int rc = st_writer_add(w, "adamw.m", ST_F32, 1, shape, am);
	if (!rc)
		rc = st_writer_add(w, "adamw.v", ST_F32, 1, shape, av);
	if (!rc)
		rc = st_writer_meta(w, "format", STATE_FORMAT);
	snprintf(buf, sizeof buf, "%" PRId64, st->step);
	if (!rc)
		rc = st_writer_meta(w, "step", buf);
	snprintf(buf, sizeof buf, "%016" PRIx64, st->data_fingerprint);
	if (!rc)
		rc = st_writer_meta(w, "data_fingerprint", buf);
	snprintf(buf, sizeof buf, "%" PRIu64, st->ntrain);
	if (!rc)
		rc = st_writer_meta(w, "data_train_tokens", buf);
	snprintf(buf, sizeof buf, "%016" PRIx64, trainer_config_hash(&st->config, NULL));
	if (!rc)
		rc = st_writer_meta(w, "config_hash", buf);
	if (!rc)
		rc = st_writer_meta(w, "sampler", "hash(seed, step, index) v1: stateless, the position is the step");
	/* the data position in sequences drawn, and the sampler's RNG key (derived from the seed) */
	snprintf(buf, sizeof buf, "%" PRId64,
		 st->step * (int64_t)st->config.batch * st->config.grad_accum);
	if (!rc)
		rc = st_writer_meta(w, "data_sequences_drawn", buf);
	snprintf(buf, sizeof buf, "%" PRId64, st->config.seed);
	if (!rc)
		rc = st_writer_meta(w, "rng_seed", buf);
	if (!rc && st->loss_scale > 0) {
		snprintf(buf, sizeof buf, "%.17g", st->loss_scale);
		rc = st_writer_meta(w, "loss_scale", buf);
		snprintf(buf, sizeof buf, "%d", st->scale_clean);
		if (!rc)
			rc = st_writer_meta(w, "loss_scale_clean", buf);
		snprintf(buf, sizeof buf, "%" PRId64, st->skipped);
		if (!rc)
			rc = st_writer_meta(w, "skipped_steps", buf);
	}
	if (!rc)
		rc = st_writer_meta(w, "moments_layout", "nn parameter block order: wte, wpe, ln1w, ln1b, qkvw, qkvb, "
							 "attprojw, attprojb, ln2w, ln2b, fcw, fcb, fcprojw, fcprojb, lnfw, lnfb");
	char *cfg = NULL;
	if (!rc) {
		cJSON *o = trainer_config_to_json(&st->config);
		cfg = o ? cJSON_PrintUnformatted(o) : NULL;
		cJSON_Delete(o);
		rc = cfg ? st_writer_meta(w, "config", cfg) : ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc)
		rc = st_writer_write(w, path);
	free(cfg);
	st_writer_free(w);
	return rc;
}

static int meta_u64(const struct st_file *f, const char *key, const char *path, int base, uint64_t *out)
{
	const char *v = st_meta(f, key);
	if (!v)
		return ascent_error(ASCENT_EINPUT, "'%s': metadata '%s' is missing (not an ascent trainer state?)", path, key);
	char *end;
	errno = 0;
	unsigned long long x = strtoull(v, &end, base);
	/* strtoull takes "-5" (and leading blanks) and wraps it: only plain digits are a count */
	if (errno || !*v || *end || !isxdigit((unsigned char)v[0]))
		return ascent_error(ASCENT_EINPUT, "'%s': metadata '%s' is not an unsigned number: '%s' (the trainer state "
						   "is corrupt)", path, key, v);
	*out = x;
	return 0;
}

static int parse_state(const struct st_file *f, const char *path, struct trainer_state *st)
{
	memset(st, 0, sizeof *st);
	const char *fmt = st_meta(f, "format");
	if (!fmt || strcmp(fmt, STATE_FORMAT))
		return ascent_error(ASCENT_EINPUT, "'%s': not an ascent trainer state (format '%s', expected '%s')", path,
				    fmt ? fmt : "(none)", STATE_FORMAT);
	uint64_t step;
	int rc = meta_u64(f, "step", path, 10, &step);
	if (!rc)
		rc = meta_u64(f, "data_fingerprint", path, 16, &st->data_fingerprint);
	if (!rc)
		rc = meta_u64(f, "data_train_tokens", path, 10, &st->ntrain);
	if (!rc)
		rc = meta_u64(f, "config_hash", path, 16, &st->config_hash);
	if (rc)
		return rc;
	if (step > TRAINER_MAX_STEPS)
		return ascent_error(ASCENT_EINPUT, "'%s': metadata 'step' is %s, not a step count in [0, %d] (the trainer "
						   "state is corrupt: resume from an earlier checkpoint)", path, st_meta(f, "step"),
				    TRAINER_MAX_STEPS);
	st->step = (int64_t)step;
	/* optional (fp16 runs): the dynamic loss scale */
	const char *ls = st_meta(f, "loss_scale");
	if (ls) {
		char *end;
		double x = strtod(ls, &end);
		uint64_t clean = 0, skipped = 0;
		if (*end || !(x > 0))
			return ascent_error(ASCENT_EINPUT, "'%s': metadata 'loss_scale' is not a positive number: '%s'", path, ls);
		if (st_meta(f, "loss_scale_clean") && (rc = meta_u64(f, "loss_scale_clean", path, 10, &clean)))
			return rc;
		if (st_meta(f, "skipped_steps") && (rc = meta_u64(f, "skipped_steps", path, 10, &skipped)))
			return rc;
		st->loss_scale = x;
		st->scale_clean = (int)clean;
		st->skipped = (int64_t)skipped;
	}
	const char *cfg = st_meta(f, "config");
	if (!cfg)
		return ascent_error(ASCENT_EINPUT, "'%s': metadata 'config' is missing", path);
	cJSON *o = cJSON_Parse(cfg);
	if (!o)
		return ascent_error(ASCENT_EINPUT, "'%s': metadata 'config' is not valid JSON", path);
	trainer_config_defaults(&st->config);
	char what[TRAINER_PATH_MAX + 32];
	snprintf(what, sizeof what, "%s (metadata 'config')", path);
	unsigned char seen[TRAINER_MAX_FIELDS] = { 0 };
	rc = trainer_config_apply_json(&st->config, o, what, seen);
	cJSON_Delete(o);
	if (rc)
		return rc;
	if (trainer_config_hash(&st->config, seen) != st->config_hash)
		return ascent_error(ASCENT_EINPUT, "'%s': the stored configuration does not match its hash (the file is corrupt)",
				    path);
	return 0;
}

int trainer_ckpt_read_state(const char *dir, struct trainer_state *st)
{
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/%s", dir, STATE_FILE);
	struct st_file f;
	int rc = st_open(&f, path);
	if (rc)
		return rc;
	rc = parse_state(&f, path, st);
	st_close(&f);
	return rc;
}

/* AdamW's moments: finite, and v (a moving mean of squared gradients) never negative. A corrupt
 * state is named here; left alone it shows up steps later as a NaN loss blamed on --lr. */
static int check_moments(const struct st_tensor *tm, const struct st_tensor *tv, const char *path)
{
	int rc = st_check_finite(tm, path);
	if (!rc)
		rc = st_check_finite(tv, path);
	if (rc)
		return ascent_error_ctx(rc, "corrupt optimizer state (resume from an earlier checkpoint, or fine-tune "
					    "from its weights with --init-from)");
	size_t n = tv->nbytes / sizeof(float), neg = 0, first = 0;
	float fv = 0;
	for (size_t i = 0; i < n; i++) {
		float v;
		memcpy(&v, (const char *)tv->data + i * sizeof v, sizeof v);
		if (v < 0 && !neg++) {
			first = i;
			fv = v;
		}
	}
	if (neg)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor 'adamw.v' holds %zu negative value%s (the first, %g, at "
						   "element %zu): AdamW's second moment is a mean of squares, so the optimizer "
						   "state is corrupt (resume from an earlier checkpoint, or fine-tune from its "
						   "weights with --init-from)", path, neg, neg == 1 ? "" : "s", fv, first);
	return 0;
}

int trainer_ckpt_load(const char *dir, struct nn_gpt *m, float *adam_m, float *adam_v, struct trainer_state *st)
{
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/%s", dir, STATE_FILE);
	struct st_file f;
	int rc = st_open(&f, path);
	if (rc)
		return rc;
	rc = parse_state(&f, path, st);
	struct nn_config c;
	trainer_config_model(&st->config, &c);
	if (!rc && memcmp(&c, &m->cfg, sizeof c))
		rc = ascent_error(ASCENT_EINPUT,
				  "'%s': the checkpoint's model (L%d C%d H%d V%d T%d) differs from this run's (L%d C%d H%d V%d T%d)",
				  dir, c.n_layer, c.n_embd, c.n_head, c.vocab_size, c.max_seq, m->cfg.n_layer, m->cfg.n_embd,
				  m->cfg.n_head, m->cfg.vocab_size, m->cfg.max_seq);
	int64_t shape[1] = { (int64_t)m->n_params };
	const struct st_tensor *tm = st_find(&f, "adamw.m"), *tv = st_find(&f, "adamw.v");
	if (!rc)
		rc = check_tensor(tm, "adamw.m", path, 1, shape);
	if (!rc)
		rc = check_tensor(tv, "adamw.v", path, 1, shape);
	if (!rc)
		rc = check_moments(tm, tv, path);
	if (!rc) {
		memcpy(adam_m, tm->data, m->n_params * sizeof(float));
		memcpy(adam_v, tv->data, m->n_params * sizeof(float));
	}
	st_close(&f);
	if (!rc)
		rc = trainer_model_load(dir, m);
	return rc;
}

int trainer_ckpt_save(const char *run_dir, const struct nn_gpt *m, const float *adam_m, const float *adam_v,
		      const struct trainer_state *st, char *dir_out, size_t n)
{
	char ck[TRAINER_PATH_MAX + 16], fin[TRAINER_PATH_MAX + 64], tmp[TRAINER_PATH_MAX + 96],
		old[TRAINER_PATH_MAX + 96], path[TRAINER_PATH_MAX + 128];
	snprintf(ck, sizeof ck, "%s/ckpt", run_dir);
	snprintf(fin, sizeof fin, "%s/step-%06" PRId64, ck, st->step);
	snprintf(tmp, sizeof tmp, "%s/.step-%06" PRId64 ".tmp-%ld", ck, st->step, (long)getpid());
	snprintf(old, sizeof old, "%s/.step-%06" PRId64 ".old-%ld", ck, st->step, (long)getpid());
	int rc = fs_rm_rf(tmp);
	if (!rc)
		rc = fs_mkdir_p(tmp);
	if (!rc) {
		snprintf(path, sizeof path, "%s/%s", tmp, MODEL_FILE);
		rc = trainer_model_save(path, m);
	}
	if (!rc) {
		snprintf(path, sizeof path, "%s/%s", tmp, CONFIG_FILE);
		rc = trainer_hf_config_write(path, &m->cfg);
	}
	if (!rc) {
		snprintf(path, sizeof path, "%s/%s", tmp, STATE_FILE);
		rc = write_state(path, m, adam_m, adam_v, st);
	}
	if (!rc) {
		rc = fs_sync(tmp);
		int had = !rc && fs_exists(fin);
		if (had && rename(fin, old))
			rc = ascent_error(ASCENT_EIO, "cannot move the old checkpoint '%s' aside: %s", fin, strerror(errno));
		if (!rc)
			rc = fs_rename_durable(tmp, fin);
		if (rc && had && !fs_exists(fin))
			rename(old, fin);   /* the new one failed: the earlier checkpoint goes back */
		if (!rc && had)
			fs_rm_rf(old);
	}
	if (rc) {
		int keep = rc;
		char msg[2048];
		snprintf(msg, sizeof msg, "%s", ascent_errmsg());
		fs_rm_rf(tmp);
		return ascent_error(keep, "%s", msg);
	}
	if (dir_out)
		snprintf(dir_out, n, "%s", fin);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Finding checkpoints */

/* The newest complete step-NNNNNN under `ckdir` (highest N with a trainer state), or -1. */
static int64_t newest_step(const char *ckdir)
{
	DIR *d = opendir(ckdir);
	if (!d)
		return -1;
	int64_t best = -1;
	struct dirent *e;
	while ((e = readdir(d))) {
		long long s;
		char tail;
		if (sscanf(e->d_name, "step-%lld%c", &s, &tail) != 1 || s < 0)
			continue;
		char p[TRAINER_PATH_MAX * 2 + 64];
		snprintf(p, sizeof p, "%s/%s/%s", ckdir, e->d_name, STATE_FILE);
		if (fs_exists(p) && s > best)
			best = s;
	}
	closedir(d);
	return best;
}

static int newest_in_run(const char *run, char *dir, size_t n)
{
	char ck[TRAINER_PATH_MAX + 16];
	snprintf(ck, sizeof ck, "%s/ckpt", run);
	int64_t s = newest_step(ck);
	if (s < 0)
		return ascent_error(ASCENT_EINPUT, "run '%s' has no checkpoint in '%s/ckpt' (nothing to resume)", run, run);
	snprintf(dir, n, "%s/step-%06" PRId64, ck, s);
	return 0;
}

int trainer_ckpt_find(const char *spec, const char *out_hint, char *dir, size_t n)
{
	char p[TRAINER_PATH_MAX * 2 + 64];
	if (!strcmp(spec, "latest")) {
		if (out_hint && *out_hint)
			return newest_in_run(out_hint, dir, n);
		/* the most recently written checkpoint of any run under runs/ */
		DIR *d = opendir("runs");
		if (!d)
			return ascent_error(ASCENT_EINPUT, "--resume latest: no 'runs' directory here (pass --resume DIR)");
		struct dirent *e;
		double best_t = -1;
		char best[TRAINER_PATH_MAX + 64] = "";
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char run[TRAINER_PATH_MAX], ck[TRAINER_PATH_MAX + 64];
			snprintf(run, sizeof run, "runs/%s", e->d_name);
			if (newest_in_run(run, ck, sizeof ck))
				continue;
			snprintf(p, sizeof p, "%s/%s", ck, STATE_FILE);
			struct stat st;
			if (stat(p, &st))
				continue;
			double t = (double)st.st_mtim.tv_sec + 1e-9 * (double)st.st_mtim.tv_nsec;
			if (t > best_t) {
				best_t = t;
				snprintf(best, sizeof best, "%s", ck);
			}
		}
		closedir(d);
		if (!best[0])
			return ascent_error(ASCENT_EINPUT, "--resume latest: no run under 'runs/' has a checkpoint");
		snprintf(dir, n, "%s", best);
		return 0;
	}
	if (!fs_is_dir(spec))
		return ascent_error(ASCENT_EINPUT, "cannot resume from '%s': no such directory (pass a run directory, a "
						   "checkpoint directory or 'latest')",
				    spec);
	snprintf(p, sizeof p, "%s/%s", spec, STATE_FILE);
	if (fs_exists(p)) {
		snprintf(dir, n, "%s", spec);
		return 0;
	}
	snprintf(p, sizeof p, "%s/ckpt", spec);
	if (fs_is_dir(p))
		return newest_in_run(spec, dir, n);
	int64_t s = newest_step(spec);
	if (s >= 0) {
		snprintf(dir, n, "%s/step-%06" PRId64, spec, s);
		return 0;
	}
	return ascent_error(ASCENT_EINPUT,
			    "cannot resume from '%s': it is neither a checkpoint (no %s) nor a run directory with checkpoints",
			    spec, STATE_FILE);
}

int trainer_ckpt_resolve(const char *spec, char *dir, size_t n)
{
	char p[TRAINER_PATH_MAX + 32];
	snprintf(p, sizeof p, "%s/%s", spec, MODEL_FILE);
	if (fs_exists(p)) {
		snprintf(dir, n, "%s", spec);
		return 0;
	}
	if (!fs_is_dir(spec))
		return ascent_error(ASCENT_EINPUT, "checkpoint '%s' does not exist (pass a checkpoint directory such as "
						   "runs/NAME/ckpt/step-000300, or a run directory)", spec);
	if (trainer_ckpt_find(spec, NULL, dir, n))
		return ascent_error(ASCENT_EINPUT, "'%s' holds no model.safetensors and no checkpoints (pass a checkpoint "
						   "directory such as runs/NAME/ckpt/step-000300, or a run directory)", spec);
	return 0;
}

struct step_dir {
	int64_t step;
	char name[64];
};

static int cmp_step_desc(const void *a, const void *b)
{
	int64_t x = ((const struct step_dir *)a)->step, y = ((const struct step_dir *)b)->step;
	return x < y ? 1 : x > y ? -1 : 0;
}

int trainer_ckpt_prune(const char *run_dir, int keep, const char *current, int *removed)
{
	*removed = 0;
	if (keep <= 0)
		return 0;
	char ck[TRAINER_PATH_MAX + 16], p[TRAINER_PATH_MAX + 128];
	snprintf(ck, sizeof ck, "%s/ckpt", run_dir);
	DIR *d = opendir(ck);
	if (!d)
		return ascent_error(ASCENT_EIO, "cannot open '%s': %s", ck, strerror(errno));
	struct step_dir *v = NULL;
	int n = 0, cap = 0, rc = 0;
	const char *cur = current ? strrchr(current, '/') : NULL;
	cur = cur ? cur + 1 : current;
	struct dirent *e;
	while ((e = readdir(d))) {
		long long s;
		char tail;
		if (sscanf(e->d_name, "step-%lld%c", &s, &tail) != 1 || s < 0 || strlen(e->d_name) >= sizeof v->name)
			continue;
		snprintf(p, sizeof p, "%s/%s/%s", ck, e->d_name, STATE_FILE);
		if (!fs_exists(p) || (cur && !strcmp(cur, e->d_name)))
			continue;      /* incomplete (never ours to judge), or the one just written */
		if ((rc = ARRAY_GROW(v, n, cap, 64, "listing checkpoints")))
			break;
		v[n].step = s;
		snprintf(v[n].name, sizeof v[n].name, "%s", e->d_name);
		n++;
	}
	closedir(d);
	if (!rc && n > 1)
		qsort(v, (size_t)n, sizeof *v, cmp_step_desc);
	/* the one just written counts as the newest */
	for (int i = cur ? keep - 1 : keep; !rc && i < n; i++) {
		if (i < 0)
			continue;
		snprintf(p, sizeof p, "%s/%s/keep", ck, v[i].name);
		if (fs_exists(p))
			continue;
		snprintf(p, sizeof p, "%s/%s", ck, v[i].name);
		rc = fs_rm_rf(p);
		if (!rc)
			(*removed)++;
	}
	free(v);
	return rc;
}
