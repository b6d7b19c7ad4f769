/* tests/unit/test_quant_model.c — the quantized model on tiny random models built here: the
 * fake-quant forward agrees with the real INT8 forward (same codes, both GEMM backends), every
 * layer alone and the whole logits; SmoothQuant keeps the fp32 function; the checkpoint format
 * round-trips exactly (codes, scales, dequantized weights = the fake-quant model) and bad
 * checkpoints are refused with a clear message. */
#include "quant/quant.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-quant-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	nn_set_threads(2);
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(quant_model, .init = mk_tmp, .fini = rm_tmp);

static const struct nn_config CFG = { .vocab_size = 64, .max_seq = 32, .n_layer = 2, .n_head = 4, .n_embd = 64 };

static void tiny(struct nn_gpt *m, uint64_t seed)
{
	cr_assert_eq(nn_gpt_init(m, &CFG), 0);
	nn_gpt_init_weights(m, seed);
	/* non-trivial norms and biases, and one outlier input channel, like trained models have */
	uint64_t st = rng_seed(seed, 99);
	for (size_t i = 0; i < m->n_params; i++)
		if (m->param[NN_LN1B] <= m->params_mem + i && m->params_mem + i < m->param[NN_LN1B] + 2 * 64)
			m->params_mem[i] = 0.1f * (rng_f32(&st) - 0.5f);
	m->param[NN_LN1W][5] = 8.0f;
	rng_normal(&st, m->param[NN_QKVB], m->param_sizes[NN_QKVB], 0, 0.02f);
}

static void tokens(int *in, int *tg, int n, uint64_t seed)
{
	uint64_t st = rng_seed(seed, 1);
	for (int i = 0; i < n; i++) {
		in[i] = (int)(rng_u32(&st) % 64);
		tg[i] = (int)(rng_u32(&st) % 64);
	}
}

/* Static scales from a min-max observer over one forward. */
struct obs_ctx {
	struct quant_observer o[8];
};
static void obs_hook(void *ctx, int li, const float *x, const float *y, int N, int K, int OC)
{
	(void)y;
	(void)OC;
	quant_observer_update(&((struct obs_ctx *)ctx)->o[li], x, (size_t)N * K);
}

static void build(struct quant_model *qm, enum quant_scheme sc, uint64_t seed)
{
	struct nn_gpt m;
	tiny(&m, seed);
	cr_assert_eq(quant_model_init(qm, &m, sc, 0), 0);
	cr_assert_eq(quant_model_quantize_weights(qm), 0);
	if (sc == QUANT_W8A8_STATIC) {
		struct obs_ctx oc;
		for (int i = 0; i < 8; i++)
			quant_observer_init(&oc.o[i]);
		int in[64], tg[64];
		tokens(in, tg, 64, seed + 1);
		struct quant_hooks h = { obs_hook, &oc };
		cr_assert_eq(quant_model_forward(qm, QUANT_EXEC_FP32, in, tg, 2, 32, &h), 0);
		for (int i = 0; i < qm->nlin; i++)
			qm->lin[i].in_scale = nn_quant_scale((float)quant_observer_amax(&oc.o[i], QUANT_PERCENTILE, 99.0));
	}
}

Test(quant_model, fake_quant_agrees_with_int8_per_layer_and_end_to_end)
{
	enum quant_gemm_backend keep = quant_gemm_get_backend();
	static const enum quant_gemm_backend bes[] = { QUANT_GEMM_AMX, QUANT_GEMM_VNNI, QUANT_GEMM_ONEDNN, QUANT_GEMM_F32 };
	for (int sc = QUANT_W8; sc <= QUANT_W8A8_STATIC; sc++)
		for (size_t bi = 0; bi < sizeof bes / sizeof bes[0]; bi++) {
			enum quant_gemm_backend be = bes[bi];
			/* oneDNN without VNNI saturates (quant.h); ascent never picks it there */
			if (be == QUANT_GEMM_ONEDNN && !quant_gemm_onednn_exact())
				continue;
			if (be == QUANT_GEMM_AMX && !quant_have_amx())
				continue;   /* it would run VNNI, next */
			quant_gemm_set_backend((enum quant_gemm_backend)be);
			struct quant_model qm;
			build(&qm, (enum quant_scheme)sc, 7);
			/* one layer alone on random input: identical codes, so only fp32 summation order differs */
			int N = 37;
			float *x = malloc((size_t)N * 256 * sizeof *x), *yf = malloc((size_t)N * 256 * sizeof *yf),
			      *yq = malloc((size_t)N * 256 * sizeof *yq);
			uint64_t st = rng_seed(3, 3);
			rng_normal(&st, x, (size_t)N * 256, 0, 1);
			for (int li = 0; li < qm.nlin; li++) {
				cr_assert_eq(quant_layer_forward(&qm, li, QUANT_EXEC_FAKE, x, yf, N), 0);
				cr_assert_eq(quant_layer_forward(&qm, li, QUANT_EXEC_INT8, x, yq, N), 0, "%s", ascent_errmsg());
				int OC = qm.lin[li].out;
				double ymax = 0;
				for (int i = 0; i < N * OC; i++)
					ymax = fmax(ymax, fabs(yf[i]));
				for (int i = 0; i < N * OC; i++)
					cr_assert_leq(fabs(yf[i] - yq[i]), 1e-5 * (ymax + 1), "%s %s %s: element %d %g vs %g",
						      quant_scheme_name(qm.scheme), quant_gemm_backend_name(quant_gemm_get_backend()), qm.lin[li].name, i,
						      yf[i], yq[i]);
			}
			/* the whole model: logits agree to float-summation noise */
			int in[64], tg[64];
			tokens(in, tg, 64, 11);
			cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_FAKE, in, tg, 2, 32, NULL), 0);
			float lf = qm.loss;
			float *lg = malloc(64 * 64 * sizeof *lg);
			memcpy(lg, quant_model_logits(&qm), 64 * 64 * sizeof *lg);
			cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_INT8, in, tg, 2, 32, NULL), 0);
			const float *lq = quant_model_logits(&qm);
			for (int i = 0; i < 64 * 64; i++)
				cr_assert_leq(fabsf(lg[i] - lq[i]), 2e-3f, "%s logits[%d] %g vs %g", quant_scheme_name(qm.scheme),
					      i, lg[i], lq[i]);
			cr_assert_float_eq(lf, qm.loss, 1e-4);
			/* and quantization changed something (the test can fail) but not much */
			cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_FP32, in, tg, 2, 32, NULL), 0);
			cr_assert_neq(lf, qm.loss);
			cr_assert_float_eq(lf, qm.loss, 0.05);
			free(x);
			free(yf);
			free(yq);
			free(lg);
			quant_model_release(&qm);
		}
	quant_gemm_set_backend(keep);
}

/* The INT8 forward's logits and loss are the same bits whether the linear layers run on AMX or on
 * the VNNI kernel (exact s32 sums, the same dequantization): the ISA never changes a result. */
Test(quant_model, int8_forward_same_bits_on_amx_and_vnni)
{
	if (!quant_have_amx())
		cr_skip_test("no AMX here (oneDNN dispatches %s): nothing to compare", nn_dnnl_isa());
	enum quant_gemm_backend keep = quant_gemm_get_backend();
	for (int sc = QUANT_W8A8_DYNAMIC; sc <= QUANT_W8A8_STATIC; sc++) {
		struct quant_model qm;
		build(&qm, (enum quant_scheme)sc, 9);
		int in[256], tg[256];
		tokens(in, tg, 256, 13);
		float *lg[2];
		float loss[2];
		for (int k = 0; k < 2; k++) {
			quant_gemm_set_backend(k ? QUANT_GEMM_VNNI : QUANT_GEMM_AMX);
			cr_assert_eq(quant_gemm_get_backend(), k ? QUANT_GEMM_VNNI : QUANT_GEMM_AMX);
			cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_INT8, in, tg, 8, 32, NULL), 0, "%s", ascent_errmsg());
			loss[k] = qm.loss;
			lg[k] = malloc(256 * 64 * sizeof(float));
			memcpy(lg[k], quant_model_logits(&qm), 256 * 64 * sizeof(float));
		}
		/* 8 x 32 = 256 rows: every layer's GEMM ran on AMX */
		cr_assert(strstr(quant_gemm_packed_impl(256, &qm.lin[0].pk), "ascent") != NULL);   /* VNNI now */
		quant_gemm_set_backend(QUANT_GEMM_AMX);
		for (int i = 0; i < qm.nlin; i++)
			cr_assert(strstr(quant_gemm_packed_impl(256, &qm.lin[i].pk), "amx") != NULL, "%s: %s", qm.lin[i].name,
				  quant_gemm_packed_impl(256, &qm.lin[i].pk));
		cr_assert_arr_eq(lg[0], lg[1], 256 * 64 * sizeof(float), "%s: logits differ between AMX and VNNI",
				 quant_scheme_name(qm.scheme));
		cr_assert_eq(loss[0], loss[1]);
		free(lg[0]);
		free(lg[1]);
		quant_model_release(&qm);
	}
	quant_gemm_set_backend(keep);
}

Test(quant_model, fp32_exec_equals_nn_forward)
{
	struct nn_gpt ref;
	tiny(&ref, 5);
	struct quant_model qm;
	build(&qm, QUANT_W8A8_DYNAMIC, 5);
	int in[64], tg[64];
	tokens(in, tg, 64, 2);
	cr_assert_eq(nn_gpt_forward(&ref, in, tg, 2, 32), 0);
	cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_FP32, in, tg, 2, 32, NULL), 0);
	cr_assert_eq(memcmp(nn_gpt_logits(&ref), quant_model_logits(&qm), 64 * 64 * sizeof(float)), 0);
	nn_gpt_release(&ref);
	quant_model_release(&qm);
}

Test(quant_model, smoothquant_keeps_the_fp32_function)
{
	struct quant_model qm;
	build(&qm, QUANT_W8A8_STATIC, 9);
	int in[64], tg[64];
	tokens(in, tg, 64, 4);
	cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_FP32, in, tg, 2, 32, NULL), 0);
	float *l0 = malloc(64 * 64 * sizeof *l0);
	memcpy(l0, quant_model_logits(&qm), 64 * 64 * sizeof *l0);
	float amax[2 * 2 * 64];
	for (int i = 0; i < 256; i++)
		amax[i] = 0.5f + (float)(i % 7);
	float g5 = qm.fp.param[NN_LN1W][5], w5 = qm.fp.param[NN_QKVW][5 * 192];
	cr_assert_eq(quant_smooth_apply(&qm, amax, 0.5), 0);
	/* s_5 = sqrt(amax_5 / max|W_5,:|): γ divided, the weight row multiplied by it */
	float s = qm.fp.param[NN_QKVW][5 * 192] / w5;
	cr_assert_float_eq(qm.fp.param[NN_LN1W][5], g5 / s, 1e-5 * fabsf(g5));
	cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_FP32, in, tg, 2, 32, NULL), 0);
	const float *l1 = quant_model_logits(&qm);
	for (int i = 0; i < 64 * 64; i++)
		cr_assert_float_eq(l0[i], l1[i], 1e-4, "logit %d", i);
	cr_assert_eq(quant_smooth_apply(&qm, amax, 1.5), ASCENT_EUSAGE);
	free(l0);
	quant_model_release(&qm);
}

Test(quant_model, checkpoint_round_trips_exactly)
{
	for (int sc = QUANT_W8; sc <= QUANT_W8A8_STATIC; sc++) {
		struct quant_model qm;
		build(&qm, (enum quant_scheme)sc, 21);
		qm.lin[3].quantized = 0; /* one layer kept fp32: it must be in the ignore list */
		char dir[128];
		snprintf(dir, sizeof dir, "%s/q%d", tmpdir, sc);
		struct quant_save_info si = { "percentile", -1, "/nonexistent/source", "ptq" };
		cr_assert_eq(quant_save(dir, &qm, &si), 0, "%s", ascent_errmsg());
		cr_assert(quant_is_quantized_ckpt(dir));
		struct quant_model lq;
		char src[256];
		cr_assert_eq(quant_model_open(dir, &lq, src, sizeof src), 0, "%s", ascent_errmsg());
		cr_assert_str_eq(src, "/nonexistent/source");
		cr_assert_eq(lq.scheme, qm.scheme);
		for (int i = 0; i < qm.nlin; i++) {
			struct quant_layer *a = &qm.lin[i], *b = &lq.lin[i];
			cr_assert_eq(a->quantized, b->quantized, "%s", a->name);
			size_t n = (size_t)a->in * a->out;
			float *w = lq.fp.param[b->wid] + (size_t)b->layer * n;
			if (!a->quantized) {
				cr_assert_eq(memcmp(w, qm.fp.param[a->wid] + (size_t)a->layer * n, n * 4), 0);
				continue;
			}
			cr_assert_eq(memcmp(a->wq, b->wq, n), 0, "%s codes", a->name);
			cr_assert_eq(memcmp(a->wscale, b->wscale, (size_t)a->out * 4), 0);
			cr_assert_eq(memcmp(a->wdeq, w, n * 4), 0, "%s: loaded+dequantized != fake-quant weights", a->name);
			cr_assert_eq(a->in_scale, b->in_scale);
		}
		for (int id = 0; id < NN_NPARAMS; id++)
			if (id != NN_QKVW && id != NN_ATTPROJW && id != NN_FCW && id != NN_FCPROJW)
				cr_assert_eq(memcmp(qm.fp.param[id], lq.fp.param[id], qm.fp.param_sizes[id] * 4), 0);
		/* the same forward, bit for bit */
		int in[64], tg[64];
		tokens(in, tg, 64, 8);
		cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_INT8, in, tg, 2, 32, NULL), 0);
		float *l0 = malloc(64 * 64 * 4);
		memcpy(l0, quant_model_logits(&qm), 64 * 64 * 4);
		cr_assert_eq(quant_model_forward(&lq, QUANT_EXEC_INT8, in, tg, 2, 32, NULL), 0);
		cr_assert_eq(memcmp(l0, quant_model_logits(&lq), 64 * 64 * 4), 0);
		/* for ascent eval/generate: the dequantized model = the weight fake-quant model */
		struct nn_gpt dm;
		cr_assert_eq(quant_load_dequantized(dir, &dm), 0);
		cr_assert_eq(memcmp(dm.params_mem, lq.fp.params_mem, dm.n_params * 4), 0);
		if (sc == QUANT_W8) { /* weight-only: fake-quant forward == fp32 forward of the dequantized model */
			cr_assert_eq(nn_gpt_forward(&dm, in, tg, 2, 32), 0);
			cr_assert_eq(quant_model_forward(&qm, QUANT_EXEC_FAKE, in, tg, 2, 32, NULL), 0);
			cr_assert_eq(memcmp(nn_gpt_logits(&dm), quant_model_logits(&qm), 64 * 64 * 4), 0);
		}
		/* the config carries compressed-tensors fields */
		char path[256];
		snprintf(path, sizeof path, "%s/config.json", dir);
		cJSON *root;
		cr_assert_eq(json_read_file(path, &root), 0);
		cJSON *qc = cJSON_GetObjectItem(root, "quantization_config");
		cr_assert_str_eq(cJSON_GetObjectItem(qc, "quant_method")->valuestring, "compressed-tensors");
		cr_assert_str_eq(cJSON_GetObjectItem(qc, "format")->valuestring, "int-quantized");
		cJSON *ign = cJSON_GetObjectItem(qc, "ignore");
		cr_assert_eq(cJSON_GetArraySize(ign), 2);
		cr_assert_str_eq(cJSON_GetArrayItem(ign, 1)->valuestring, "h.0.mlp.c_proj");
		cJSON *ia = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(qc, "config_groups"), "group_0"),
						"input_activations");
		if (sc == QUANT_W8)
			cr_assert(cJSON_IsNull(ia));
		else
			cr_assert_str_eq(cJSON_GetObjectItem(ia, "strategy")->valuestring, sc == QUANT_W8A8_STATIC ? "tensor" : "token");
		cJSON_Delete(root);
		nn_gpt_release(&dm);
		free(l0);
		quant_model_release(&lq);
		quant_model_release(&qm);
	}
}

Test(quant_model, bad_checkpoints_are_refused)
{
	/* an fp32 checkpoint is not a quantized one */
	struct nn_gpt m;
	tiny(&m, 1);
	char fdir[128], path[256];
	snprintf(fdir, sizeof fdir, "%s/fp32", tmpdir);
	cr_assert_eq(fs_mkdir_p(fdir), 0);
	snprintf(path, sizeof path, "%s/model.safetensors", fdir);
	cr_assert_eq(trainer_model_save(path, &m), 0);
	snprintf(path, sizeof path, "%s/config.json", fdir);
	cr_assert_eq(trainer_hf_config_write(path, &m.cfg), 0);
	nn_gpt_release(&m);
	cr_assert_not(quant_is_quantized_ckpt(fdir));
	struct quant_model qm;
	cr_assert_eq(quant_model_open(fdir, &qm, NULL, 0), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "is not an ascent quantized checkpoint"), "%s", ascent_errmsg());
	/* a missing directory */
	cr_assert_eq(quant_model_open("/nonexistent/q", &qm, NULL, 0), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "does not exist"), "%s", ascent_errmsg());
	/* a dynamic checkpoint whose config claims static: the input scales are missing */
	struct quant_model q2;
	build(&q2, QUANT_W8A8_DYNAMIC, 2);
	char qdir[128];
	snprintf(qdir, sizeof qdir, "%s/dyn", tmpdir);
	cr_assert_eq(quant_save(qdir, &q2, NULL), 0);
	quant_model_release(&q2);
	snprintf(path, sizeof path, "%s/config.json", qdir);
	cJSON *root;
	cr_assert_eq(json_read_file(path, &root), 0);
	cJSON *asc = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "quantization_config"), "ascent");
	cJSON_ReplaceItemInObject(asc, "scheme", cJSON_CreateString("w8a8-static"));
	cr_assert_eq(json_write_file(path, root), 0);
	/* first the input activations (still the dynamic scheme's) contradict the scheme … */
	cr_assert_eq(quant_model_open(qdir, &qm, NULL, 0), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "input_activations.strategy is \"token\"; ascent implements tensor"), "%s",
		  ascent_errmsg());
	/* … and with a static scheme's input activations, the missing scales are named */
	cJSON *ia = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(root,
		"quantization_config"), "config_groups"), "group_0"), "input_activations");
	cr_assert_not_null(ia);
	cJSON_ReplaceItemInObject(ia, "strategy", cJSON_CreateString("tensor"));
	cJSON_ReplaceItemInObject(ia, "dynamic", cJSON_CreateFalse());
	cr_assert_eq(json_write_file(path, root), 0);
	cr_assert_eq(quant_model_open(qdir, &qm, NULL, 0), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "has no tensor 'h.0.attn.c_attn.input_scale'"), "%s", ascent_errmsg());
	/* an unknown scheme */
	cJSON_ReplaceItemInObject(asc, "scheme", cJSON_CreateString("w4"));
	cr_assert_eq(json_write_file(path, root), 0);
	cr_assert_eq(quant_model_open(qdir, &qm, NULL, 0), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "unknown scheme 'w4'"), "%s", ascent_errmsg());
	cJSON_Delete(root);
	enum quant_method me;
	cr_assert_eq(quant_method_parse("entropy", &me), ASCENT_EUSAGE);
}
