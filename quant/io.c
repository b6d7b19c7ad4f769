/* quant/io.c — quantized checkpoints: model.safetensors with I8 weights (out,in), F32
 * weight_scale (out,1) and input_scale (1), F32 for everything else; config.json with GPT2Config
 * keys and a compressed-tensors quantization_config; validated loading; the data split of a
 * checkpoint (train for calibration, validation for evaluation). */
#include "quant/quant.h"

#include <cjson/cJSON.h>
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
	cJSON_AddStringToObject(a, "source", info && info->source ? info->source : "");
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
	const cJSON *g0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(qc, "config_groups"), "group_0");
	const cJSON *wst = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(g0, "weights"), "strategy");
	int per_tensor = cJSON_IsString(wst) && !strcmp(wst->valuestring, "tensor");
	const cJSON *src = cJSON_GetObjectItemCaseSensitive(asc, "source");
	if (source && n)
		snprintf(source, n, "%s", cJSON_IsString(src) ? src->valuestring : "");
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
	for (int i = 0; i < qm->nlin; i++) {
		qm->lin[i].quantized = 1;
		const cJSON *e;
		cJSON_ArrayForEach(e, ign)
			if (cJSON_IsString(e) && !strcmp(e->valuestring, qm->lin[i].name))
				qm->lin[i].quantized = 0;
	}
	cJSON_Delete(root);

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
				if (!(q->wscale[o] > 0) || !isfinite(q->wscale[o])) {
					rc = ascent_error(ASCENT_EINPUT, "'%s': %s.weight_scale[%d] = %g is not a positive "
									 "finite scale", path, q->name, o, q->wscale[o]);
					break;
				}
			if (!rc && ti) {
				memcpy(&q->in_scale, ti->data, sizeof(float));
				if (!(q->in_scale > 0) || !isfinite(q->in_scale))
					rc = ascent_error(ASCENT_EINPUT, "'%s': %s.input_scale = %g is not a positive finite "
									 "scale", path, q->name, q->in_scale);
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
