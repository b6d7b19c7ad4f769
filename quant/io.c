/* quant/io.c — quantized checkpoints: model.safetensors with I8 weights (out,in), F32
 * weight_scale (out,1) and input_scale (1), F32 for everything else; config.json with GPT2Config
 * keys and a compressed-tensors quantization_config; validated loading; the data split of a
 * checkpoint (train for calibration, validation for evaluation). */
#include "quant/quant.h"
#include "trainer/trainer.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#define QUANT_FORMAT_VERSION "ascent-quant-1"

static int is_linear_weight(int id)
{
	return id == NN_QKVW || id == NN_ATTPROJW || id == NN_FCW || id == NN_FCPROJW;
}

static size_t shape_count(const int64_t *s, int nd)
{
	size_t n = 1;
	for (int i = 0; i < nd; i++)
		n *= (size_t)s[i];
	return n;
}

/* ------------------------------------------------------------------------------------------ */

static cJSON *qargs(int strategy_token, int tensor, int dynamic, const char *observer)
{
	cJSON *a = cJSON_CreateObject();
	cJSON_AddNumberToObject(a, "num_bits", 8);
	cJSON_AddStringToObject(a, "type", "int");
	cJSON_AddBoolToObject(a, "symmetric", 1);
	cJSON_AddStringToObject(a, "strategy", strategy_token ? "token" : tensor ? "tensor" : "channel");
	cJSON_AddNullToObject(a, "group_size");
	cJSON_AddBoolToObject(a, "dynamic", dynamic);
	if (observer)
		cJSON_AddStringToObject(a, "observer", observer);
	else
		cJSON_AddNullToObject(a, "observer");
	return a;
}

static int write_config(const char *outdir, const struct quant_model *qm, const struct quant_save_info *info)
{
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/config.json", outdir);
	int rc = trainer_hf_config_write(path, &qm->fp.cfg);
	cJSON *root = NULL;
	if (!rc)
		rc = json_read_file(path, &root);
	if (rc)
		return rc;
	cJSON *qc = cJSON_AddObjectToObject(root, "quantization_config");
	cJSON_AddStringToObject(qc, "quant_method", "compressed-tensors");
	cJSON_AddStringToObject(qc, "format", "int-quantized");
	cJSON_AddStringToObject(qc, "quantization_status", "compressed");
	cJSON *groups = cJSON_AddObjectToObject(qc, "config_groups");
	cJSON *g0 = cJSON_AddObjectToObject(groups, "group_0");
	cJSON *targets = cJSON_AddArrayToObject(g0, "targets");
	cJSON_AddItemToArray(targets, cJSON_CreateString("re:.*attn\\.c_attn$"));
	cJSON_AddItemToArray(targets, cJSON_CreateString("re:.*attn\\.c_proj$"));
	cJSON_AddItemToArray(targets, cJSON_CreateString("re:.*mlp\\.c_fc$"));
	cJSON_AddItemToArray(targets, cJSON_CreateString("re:.*mlp\\.c_proj$"));
	cJSON_AddItemToObject(g0, "weights", qargs(0, qm->per_tensor, 0, "minmax"));
	if (qm->scheme == QUANT_W8)
		cJSON_AddNullToObject(g0, "input_activations");
	else if (qm->scheme == QUANT_W8A8_DYNAMIC)
		cJSON_AddItemToObject(g0, "input_activations", qargs(1, 0, 1, NULL));
	else
		cJSON_AddItemToObject(g0, "input_activations", qargs(0, 1, 0, info && info->method ? info->method : "minmax"));
	cJSON_AddNullToObject(g0, "output_activations");
	cJSON *ign = cJSON_AddArrayToObject(qc, "ignore");
	cJSON_AddItemToArray(ign, cJSON_CreateString("lm_head"));
	for (int i = 0; i < qm->nlin; i++)
		if (!qm->lin[i].quantized)
			cJSON_AddItemToArray(ign, cJSON_CreateString(qm->lin[i].name));
	cJSON_AddNullToObject(qc, "kv_cache_scheme");
	cJSON_AddStringToObject(qc, "version", "0.9.0");
	cJSON *a = cJSON_AddObjectToObject(qc, "ascent");
	cJSON_AddStringToObject(a, "format", QUANT_FORMAT_VERSION);
	cJSON_AddStringToObject(a, "scheme", quant_scheme_name(qm->scheme));
	cJSON_AddStringToObject(a, "weight_layout", "out,in");
	cJSON_AddStringToObject(a, "rounding", "half-to-even");
	if (info && info->method && qm->scheme == QUANT_W8A8_STATIC)
		cJSON_AddStringToObject(a, "activation_method", info->method);
	if (info && info->smooth_alpha >= 0)
		cJSON_AddNumberToObject(a, "smooth_alpha", info->smooth_alpha);
	else
		cJSON_AddNullToObject(a, "smooth_alpha");
	/* the source as an absolute path (quant eval works from any folder), and relative to this
	 * folder (it still works after the two are moved together) */
	char abs[4096] = "", rel[4096] = "";
	if (info && info->source && *info->source) {
		if (!realpath(info->source, abs))
			snprintf(abs, sizeof abs, "%s", info->source);
		if (fs_relative_path(outdir, info->source, rel, sizeof rel))
			rel[0] = 0;
	}
	cJSON_AddStringToObject(a, "source", abs);
	cJSON_AddStringToObject(a, "source_from_here", rel);
	cJSON_AddStringToObject(a, "producer", info && info->producer ? info->producer : "ptq");
	rc = json_write_file(path, root);
	cJSON_Delete(root);
	return rc;
}

int quant_save(const char *outdir, const struct quant_model *qm, const struct quant_save_info *info)
{
	int rc = fs_mkdir_p(outdir);
	if (rc)
		return rc;
	const struct nn_config *c = &qm->fp.cfg;
	struct st_writer *w = st_writer_new();
	if (!w)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	char name[128];
	for (int id = 0; id < NN_NPARAMS && !rc; id++) {
		int64_t shape[2];
		int nd = nn_param_hf_shape(c, id, shape);
		size_t per = shape_count(shape, nd);
		int nl = nn_param_layered(id) ? c->n_layer : 1;
		for (int l = 0; l < nl && !rc; l++) {
			nn_param_hf_name(id, l, name, sizeof name);
			const struct quant_layer *q = NULL;
			if (is_linear_weight(id))
				for (int i = 0; i < qm->nlin; i++)
					if (qm->lin[i].wid == (enum nn_param_id)id && qm->lin[i].layer == l)
						q = &qm->lin[i];
			if (!q || !q->quantized) {
				rc = st_writer_add(w, name, ST_F32, nd, shape, qm->fp.param[id] + (size_t)l * per);
				continue;
			}
			if (!q->wq) {
				rc = ascent_error(ASCENT_EINTERNAL, "layer '%s' has no INT8 weights to save", q->name);
				break;
			}
			int64_t ws[2] = { q->out, q->in }, ss[2] = { q->out, 1 }, is[1] = { 1 };
			rc = st_writer_add(w, name, ST_I8, 2, ws, q->wq);
			snprintf(name, sizeof name, "%s.weight_scale", q->name);
			if (!rc)
				rc = st_writer_add(w, name, ST_F32, 2, ss, q->wscale);
			if (!rc && qm->scheme == QUANT_W8A8_STATIC) {
				snprintf(name, sizeof name, "%s.input_scale", q->name);
				rc = st_writer_add(w, name, ST_F32, 1, is, &q->in_scale);
			}
		}
	}
	if (!rc)
		rc = st_writer_meta(w, "format", "pt");
	if (!rc)
		rc = st_writer_meta(w, "quantization", QUANT_FORMAT_VERSION);
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/model.safetensors", outdir);
	if (!rc)
		rc = st_writer_write(w, path);
	st_writer_free(w);
	if (!rc)
		rc = write_config(outdir, qm, info);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */

/* The quantization_config.ascent object of DIR/config.json (root owned by *root). */
static int read_qconfig(const char *dir, cJSON **root, const cJSON **qc, const cJSON **asc)
{
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/config.json", dir);
	*root = NULL;
	if (!fs_exists(path))
		return ascent_error(ASCENT_EINPUT, "'%s' does not exist (pass a directory written by 'ascent quant ptq' or "
						   "'ascent quant qat')", path);
	int rc = json_read_file(path, root);
	if (rc)
		return rc;
	*qc = cJSON_GetObjectItemCaseSensitive(*root, "quantization_config");
	const cJSON *m = *qc ? cJSON_GetObjectItemCaseSensitive(*qc, "quant_method") : NULL;
	*asc = *qc ? cJSON_GetObjectItemCaseSensitive(*qc, "ascent") : NULL;
	const cJSON *f = *asc ? cJSON_GetObjectItemCaseSensitive(*asc, "format") : NULL;
	if (!cJSON_IsString(m) || strcmp(m->valuestring, "compressed-tensors") || !cJSON_IsString(f) ||
	    strcmp(f->valuestring, QUANT_FORMAT_VERSION)) {
		cJSON_Delete(*root);
		*root = NULL;
		return ascent_error(ASCENT_EINPUT, "'%s' is not an ascent quantized checkpoint (config.json has no "
						   "compressed-tensors quantization_config of format %s; quantize an fp32 "
						   "checkpoint with 'ascent quant ptq')", dir, QUANT_FORMAT_VERSION);
	}
	return 0;
}

int quant_is_quantized_ckpt(const char *dir)
{
	cJSON *root;
	const cJSON *qc, *asc;
	char saved[512];
	snprintf(saved, sizeof saved, "%s", ascent_errmsg());
	int rc = read_qconfig(dir, &root, &qc, &asc);
	cJSON_Delete(root);
	if (rc)
		ascent_error(ASCENT_OK, "%s", saved); /* leave the caller's message as it was */
	return rc == 0;
}

static const struct st_tensor *need(const struct st_file *f, const char *name, enum st_dtype dt, int nd,
				    const int64_t *shape, const char *path, int *rc)
{
	const struct st_tensor *t = st_find(f, name);
	if (!t) {
		*rc = ascent_error(ASCENT_EINPUT, "'%s' has no tensor '%s' (the checkpoint is incomplete; quantize again)",
				   path, name);
		return NULL;
	}
	int ok = t->dtype == dt && t->ndim == nd;
	for (int i = 0; ok && i < nd; i++)
		ok = t->shape[i] == shape[i];
	if (!ok) {
		char want[64], got[64];
		int a = snprintf(want, sizeof want, "%s[", st_dtype_name(dt)), b = snprintf(got, sizeof got, "%s[",
											     st_dtype_name(t->dtype));
		for (int i = 0; i < nd; i++)
			a += snprintf(want + a, sizeof want - (size_t)a, i ? ",%lld" : "%lld", (long long)shape[i]);
		for (int i = 0; i < t->ndim && b < 50; i++)
			b += snprintf(got + b, sizeof got - (size_t)b, i ? ",%lld" : "%lld", (long long)t->shape[i]);
		snprintf(want + a, sizeof want - (size_t)a, "]");
		snprintf(got + b, sizeof got - (size_t)b, "]");
		*rc = ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' is %s, expected %s", path, name, got, want);
		return NULL;
	}
	return t;
}

/* Every quantization_config value ascent reads must be one it implements: anything else is refused
 * by name rather than silently computed some other way. `where` names the object in messages. */
static int want_num(const char *file, const char *where, const cJSON *o, const char *key, double want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (v && (!cJSON_IsNumber(v) || v->valuedouble != want))
		return ascent_error(ASCENT_EINPUT, "'%s': %s.%s is %s%g%s; ascent implements %g only", file, where, key,
				    cJSON_IsNumber(v) ? "" : "not a number (", cJSON_IsNumber(v) ? v->valuedouble : 0,
				    cJSON_IsNumber(v) ? "" : ")", want);
	return 0;
}

static int want_bool(const char *file, const char *where, const cJSON *o, const char *key, int want)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (v && (!cJSON_IsBool(v) || cJSON_IsTrue(v) != want))
		return ascent_error(ASCENT_EINPUT, "'%s': %s.%s must be %s (the only %s ascent implements)", file, where, key,
				    want ? "true" : "false", !strcmp(key, "symmetric") ? "quantization" : "setting");
	return 0;
}

/* v must be a string among `choices` ("a|b"); `required`: absence is an error too. */
static int want_str(const char *file, const char *where, const cJSON *o, const char *key, const char *choices,
		    int required)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!v && !required)
		return 0;
	if (cJSON_IsString(v)) {
		size_t l = strlen(v->valuestring);
		for (const char *c = choices; *c;) {
			const char *bar = strchr(c, '|');
			size_t cl = bar ? (size_t)(bar - c) : strlen(c);
			if (cl == l && !strncmp(c, v->valuestring, l))
				return 0;
			c += cl + (bar != NULL);
		}
	}
	char *t = v ? cJSON_PrintUnformatted(v) : NULL;
	int rc = ascent_error(ASCENT_EINPUT, "'%s': %s.%s is %s; ascent implements %s", file, where, key,
			      t ? t : "missing", choices);
	free(t);
	return rc;
}

static int want_null(const char *file, const char *where, const cJSON *o, const char *key, const char *why)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	if (v && !cJSON_IsNull(v))
		return ascent_error(ASCENT_EINPUT, "'%s': %s.%s must be null (%s)", file, where, key, why);
	return 0;
}

/* 8-bit symmetric integer quantization args with this strategy and dynamic flag. */
static int want_args(const char *file, const char *where, const cJSON *a, const char *strategies, int dynamic)
{
	if (!cJSON_IsObject(a))
		return ascent_error(ASCENT_EINPUT, "'%s': %s must be an object", file, where);
	int rc = want_num(file, where, a, "num_bits", 8);
	if (!rc)
		rc = want_str(file, where, a, "type", "int", 0);
	if (!rc)
		rc = want_bool(file, where, a, "symmetric", 1);
	if (!rc)
		rc = want_str(file, where, a, "strategy", strategies, 1);
	if (!rc)
		rc = want_null(file, where, a, "group_size", "group-wise scales are not implemented");
	if (!rc)
		rc = want_bool(file, where, a, "dynamic", dynamic);
	return rc;
}

static int check_qconfig(const char *dir, const cJSON *qc, const cJSON *asc, enum quant_scheme scheme, int *per_tensor)
{
	char file[TRAINER_PATH_MAX + 32];
	snprintf(file, sizeof file, "%s/config.json", dir);
	const char *Q = "quantization_config", *G = "quantization_config.config_groups.group_0";
	int rc = want_str(file, Q, qc, "format", "int-quantized", 0);
	if (!rc)
		rc = want_null(file, Q, qc, "kv_cache_scheme", "a quantized KV cache is not implemented");
	if (!rc)
		rc = want_str(file, "quantization_config.ascent", asc, "weight_layout", "out,in", 0);
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups");
	const cJSON *g0 = cJSON_GetObjectItemCaseSensitive(groups, "group_0");
	if (!rc && (!cJSON_IsObject(g0) || cJSON_GetArraySize(groups) != 1))
		rc = ascent_error(ASCENT_EINPUT, "'%s': %s.config_groups must hold exactly one group, group_0", file, Q);
	char where[128];
	snprintf(where, sizeof where, "%s.weights", G);
	if (!rc)
		rc = want_args(file, where, cJSON_GetObjectItemCaseSensitive(g0, "weights"), "channel|tensor", 0);
	const cJSON *ia = cJSON_GetObjectItemCaseSensitive(g0, "input_activations");
	snprintf(where, sizeof where, "%s.input_activations", G);
	if (!rc && scheme == QUANT_W8)
		rc = want_null(file, G, g0, "input_activations", "scheme w8 quantizes weights only");
	else if (!rc && scheme == QUANT_W8A8_DYNAMIC)
		rc = want_args(file, where, ia, "token", 1);
	else if (!rc)
		rc = want_args(file, where, ia, "tensor", 0);
	if (!rc)
		rc = want_null(file, G, g0, "output_activations", "output quantization is not implemented");
	if (rc)
		return rc;
	const cJSON *wst = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(g0, "weights"), "strategy");
	*per_tensor = !strcmp(wst->valuestring, "tensor");
	return 0;
}

/* The fp32 source a quantized checkpoint records: its absolute path when that still holds a model,
 * else the path relative to `dir` (source_from_here, or a relative "source" of an older
 * checkpoint, taken from `dir`), else the recorded text as it is (the error then names it). */
static void recorded_source(const char *dir, const cJSON *asc, char *out, size_t n)
{
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(asc, "source"),
		    *rel = cJSON_GetObjectItemCaseSensitive(asc, "source_from_here");
	const char *s = cJSON_IsString(src) ? src->valuestring : "";
	char p[2 * TRAINER_PATH_MAX + 64];
	snprintf(out, n, "%s", s);
	snprintf(p, sizeof p, "%s/model.safetensors", s);
	if (!*s || fs_exists(p))
		return;
	const char *r = cJSON_IsString(rel) && *rel->valuestring ? rel->valuestring : s[0] != '/' ? s : NULL;
	if (!r)
		return;
	snprintf(p, sizeof p, "%s/%s/model.safetensors", dir, r);
	if (fs_exists(p))
		snprintf(out, n, "%s/%s", dir, r);
}

int quant_model_open(const char *dir, struct quant_model *qm, char *source, size_t n)
{
	memset(qm, 0, sizeof *qm);
	cJSON *root;
	const cJSON *qc, *asc;
	int rc = read_qconfig(dir, &root, &qc, &asc);
	if (rc)
		return rc;
	enum quant_scheme scheme = QUANT_W8;
	const cJSON *sch = cJSON_GetObjectItemCaseSensitive(asc, "scheme");
	rc = cJSON_IsString(sch) ? quant_scheme_parse(sch->valuestring, &scheme)
				 : ascent_error(ASCENT_EINPUT, "'%s/config.json': quantization_config.ascent.scheme is missing", dir);
	int per_tensor = 0;
	if (!rc)
		rc = check_qconfig(dir, qc, asc, scheme, &per_tensor);
	if (source && n)
		recorded_source(dir, asc, source, n);
	const cJSON *ign = cJSON_GetObjectItemCaseSensitive(qc, "ignore");
	struct nn_config cfg;
	struct nn_gpt m;
	memset(&m, 0, sizeof m);
	if (!rc)
		rc = trainer_hf_config_read(dir, &cfg);
	if (!rc)
		rc = nn_gpt_init(&m, &cfg);
	if (!rc)
		rc = quant_model_init(qm, &m, scheme, per_tensor);
	if (rc) {
		cJSON_Delete(root);
		nn_gpt_release(&m);
		return rc;
	}
	for (int i = 0; i < qm->nlin; i++)
		qm->lin[i].quantized = 1;
	const cJSON *e;
	cJSON_ArrayForEach(e, ign) {
		int known = cJSON_IsString(e) && !strcmp(e->valuestring, "lm_head");
		for (int i = 0; !known && cJSON_IsString(e) && i < qm->nlin; i++)
			if (!strcmp(e->valuestring, qm->lin[i].name))
				known = 1, qm->lin[i].quantized = 0;
		if (!known) {
			char *t = cJSON_PrintUnformatted(e);
			rc = ascent_error(ASCENT_EINPUT, "'%s/config.json': quantization_config.ignore entry %s names no linear "
							 "layer of this model (expected \"lm_head\" or names such as "
							 "\"h.0.mlp.c_fc\")", dir, t ? t : "?");
			free(t);
			break;
		}
	}
	cJSON_Delete(root);
	if (rc) {
		quant_model_release(qm);
		return rc;
	}

	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	struct st_file f;
	rc = st_open(&f, path);
	if (rc) {
		quant_model_release(qm);
		return rc;
	}
	char name[128];
	for (int id = 0; id < NN_NPARAMS && !rc; id++) {
		int64_t shape[2];
		int nd = nn_param_hf_shape(&cfg, id, shape);
		size_t per = shape_count(shape, nd);
		int nl = nn_param_layered(id) ? cfg.n_layer : 1;
		for (int l = 0; l < nl && !rc; l++) {
			nn_param_hf_name(id, l, name, sizeof name);
			struct quant_layer *q = NULL;
			if (is_linear_weight(id))
				for (int i = 0; i < qm->nlin; i++)
					if (qm->lin[i].wid == (enum nn_param_id)id && qm->lin[i].layer == l)
						q = &qm->lin[i];
			float *dst = qm->fp.param[id] + (size_t)l * per;
			if (!q || !q->quantized) {
				const struct st_tensor *t = need(&f, name, ST_F32, nd, shape, path, &rc);
				if (t && !(rc = st_check_finite(t, path)))
					memcpy(dst, t->data, per * sizeof(float));
				continue;
			}
			int64_t ws[2] = { q->out, q->in }, ss[2] = { q->out, 1 }, is[1] = { 1 };
			const struct st_tensor *tw = need(&f, name, ST_I8, 2, ws, path, &rc), *ts = NULL, *ti = NULL;
			snprintf(name, sizeof name, "%s.weight_scale", q->name);
			if (!rc)
				ts = need(&f, name, ST_F32, 2, ss, path, &rc);
			snprintf(name, sizeof name, "%s.input_scale", q->name);
			if (!rc && scheme == QUANT_W8A8_STATIC)
				ti = need(&f, name, ST_F32, 1, is, path, &rc);
			if (rc)
				break;
			q->wq = malloc(per);
			q->wscale = malloc((size_t)q->out * sizeof(float));
			q->wdeq = malloc(per * sizeof(float));
			if (!q->wq || !q->wscale || !q->wdeq) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory loading '%s'", q->name);
				break;
			}
			memcpy(q->wq, tw->data, per);
			memcpy(q->wscale, ts->data, (size_t)q->out * sizeof(float));
			for (int o = 0; o < q->out; o++)
				if (!(q->wscale[o] > 0) || !(q->wscale[o] <= QUANT_MAX_AMAX / NN_QMAX)) {
					rc = ascent_error(ASCENT_EINPUT, "'%s': %s.weight_scale[%d] = %g is not a scale in (0, "
									 "%g] (weights beyond +-%g overflow the forward)", path,
							  q->name, o, q->wscale[o], QUANT_MAX_AMAX / NN_QMAX, QUANT_MAX_AMAX);
					break;
				} else if (qm->per_tensor && q->wscale[o] != q->wscale[0]) {
					rc = ascent_error(ASCENT_EINPUT, "'%s': %s.weight_scale differs between rows (%g, %g) "
									 "but config.json says strategy \"tensor\" (one scale per "
									 "tensor)", path, q->name, q->wscale[0], q->wscale[o]);
					break;
				}
			if (!rc && ti) {
				memcpy(&q->in_scale, ti->data, sizeof(float));
				if (!(q->in_scale > 0) || !(q->in_scale <= QUANT_MAX_AMAX / NN_QMAX))
					rc = ascent_error(ASCENT_EINPUT, "'%s': %s.input_scale = %g is not a scale in (0, %g]",
							  path, q->name, q->in_scale, QUANT_MAX_AMAX / NN_QMAX);
			}
			if (rc)
				break;
			quant_weight_dequantize(q->wq, q->wscale, q->in, q->out, q->wdeq);
			memcpy(dst, q->wdeq, per * sizeof(float));
			rc = quant_pack_b(&q->pk, q->wq, q->out, q->in, q->in);
		}
	}
	st_close(&f);
	if (rc)
		quant_model_release(qm);
	return rc;
}

int quant_load_dequantized(const char *dir, struct nn_gpt *m)
{
	struct quant_model qm;
	int rc = quant_model_open(dir, &qm, NULL, 0);
	if (rc)
		return rc;
	*m = qm.fp;
	memset(&qm.fp, 0, sizeof qm.fp);
	quant_model_release(&qm);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

int quant_ckpt_config(const char *ckpt_dir, struct trainer_config *out)
{
	struct trainer_state st;
	struct trainer_config cfg;
	char saved[512];
	snprintf(saved, sizeof saved, "%s", ascent_errmsg());
	char sp[TRAINER_PATH_MAX + 64];
	snprintf(sp, sizeof sp, "%s/trainer_state.safetensors", ckpt_dir);
	int have = fs_exists(sp);
	if (have && trainer_ckpt_read_state(ckpt_dir, &st) == 0) {
		cfg = st.config;
	} else {
		if (have)   /* say so: the split below is a guess, which --calib / --data avoid */
			log_warn("cannot read the run configuration of '%s' (%s); using the default corpus with 5%% "
				 "validation as the train/validation split", ckpt_dir, ascent_errmsg());
		ascent_error(ASCENT_OK, "%s", saved);
		trainer_config_defaults(&cfg);
		cfg.data[0] = 0;
		cfg.val_data[0] = 0;
		cfg.val_fraction = 0.05;
		struct nn_config mc;
		int rc = trainer_hf_config_read(ckpt_dir, &mc);
		if (rc)
			return rc;
		cfg.vocab_size = mc.vocab_size;
	}
	*out = cfg;
	return 0;
}

int quant_ckpt_data(const char *ckpt_dir, struct trainer_data *d)
{
	struct trainer_config cfg;
	int rc = quant_ckpt_config(ckpt_dir, &cfg);
	if (rc)
		return rc;
	cfg.batch = 1;
	cfg.seq = 16;
	return trainer_data_open(d, &cfg);
}
