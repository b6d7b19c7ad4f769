/* tests/unit/test_nn_precision.c — nn's mixed precision and profiler hooks: bf16 and fp16 losses and
 * gradients close to fp32 (tolerances stated below), oneDNN's bf16 matmul agreeing with the
 * rounded-operand path, fp16's real range (a huge loss scale overflows to inf, which
 * nn_has_nonfinite detects; bf16 and fp32 stay finite), the bf16 weight copies following the
 * weights from step to step, the precision names, and the profiler:
 * a real database gets the model's op events (names, layers, GEMM FLOPs) and memory categories. */
#include "nn/nn.h"

#include "common/common.h"
#include "profiler/prof.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

/* GPT-2 init (the trainer's), a model big enough for rounding errors to average like in training. */
static const struct nn_config CFG = { .vocab_size = 256, .max_seq = 32, .n_layer = 2, .n_head = 4, .n_embd = 64 };
enum { B = 4, T = 32, N = B * T };

static void batch(int *x, int *y)
{
	uint64_t st = rng_seed(9, 9);
	for (int i = 0; i < N; i++) {
		x[i] = (int)(rng_u32(&st) % 256u);
		y[i] = (x[i] * 7 + 3) % 256;
	}
}

/* loss and a copy of the gradients of one forward+backward at precision p */
static float run(struct nn_gpt *m, enum nn_precision p, float scale, float **grads)
{
	int x[N], y[N];
	batch(x, y);
	nn_gpt_set_precision(m, p);
	OK(nn_gpt_forward(m, x, y, B, T));
	nn_gpt_zero_grad(m);
	OK(nn_gpt_backward(m, scale));
	if (grads) {
		*grads = malloc(m->n_params * sizeof(float));
		memcpy(*grads, m->grads_mem, m->n_params * sizeof(float));
	}
	return m->loss;
}

static double cosine(const float *a, const float *b, size_t n)
{
	double ab = 0, aa = 0, bb = 0;
	for (size_t i = 0; i < n; i++) {
		ab += (double)a[i] * b[i];
		aa += (double)a[i] * a[i];
		bb += (double)b[i] * b[i];
	}
	return ab / sqrt(aa * bb + 1e-300);
}

TestSuite(nn_precision);

Test(nn_precision, names_and_nonfinite)
{
	enum nn_precision p;
	OK(nn_precision_parse("bf16", &p));
	cr_assert_eq(p, NN_BF16);
	OK(nn_precision_parse("fp16", &p));
	cr_assert_str_eq(nn_precision_name(p), "fp16");
	cr_assert_eq(nn_precision_parse("fp8", &p), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "fp8") && strstr(ascent_errmsg(), "bf16"));
	size_t n = 10000;
	float *x = calloc(n, sizeof(float));
	for (size_t i = 0; i < n; i++)
		x[i] = (float)i - 5000.0f;
	cr_assert_eq(nn_has_nonfinite(x, n), 0);
	x[9999] = INFINITY;
	cr_assert_eq(nn_has_nonfinite(x, n), 1);
	cr_assert_eq(nn_has_nonfinite(x, n - 1), 0);
	x[9999] = 0;
	x[4097] = -NAN;
	cr_assert_eq(nn_has_nonfinite(x, n), 1);
	x[4097] = -INFINITY;
	cr_assert_eq(nn_has_nonfinite(x + 4097, 1), 1);
	cr_assert_eq(nn_has_nonfinite(x, 0), 0);
	free(x);
}

/* Tolerances: bf16 keeps 8 significant bits (relative rounding 2^-9 ≈ 2e-3 per operand), fp16 11
 * (2^-12 ≈ 2.4e-4); with fp32 accumulation the errors of a K-long dot product mostly cancel, so
 * the mean loss moves by far less than one rounding step (measured: 4e-6 and 5e-7 relative). We
 * allow relative loss differences of 1e-3 (bf16) and 2e-4 (fp16), about half a rounding step, and
 * require the gradient direction to agree (cosine ≥ 0.999 for bf16, ≥ 0.9999 for fp16; measured
 * 0.999995 and 1.0) — per-element gradients of small entries can differ more. */
Test(nn_precision, bf16_and_fp16_track_fp32)
{
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &CFG));
	nn_gpt_init_weights(&m, 3);
	float *g32, *g16, *gbf;
	float l32 = run(&m, NN_FP32, 1.0f, &g32);
	float lbf = run(&m, NN_BF16, 1.0f, &gbf);
	float l16 = run(&m, NN_FP16, 1.0f, &g16);
	double rbf = fabs(lbf - l32) / l32, r16 = fabs(l16 - l32) / l32;
	double cbf = cosine(gbf, g32, m.n_params), c16 = cosine(g16, g32, m.n_params);
	cr_log_info("loss fp32 %.6f bf16 %.6f (rel %.2g, cos %.6f) fp16 %.6f (rel %.2g, cos %.6f)", l32, lbf, rbf,
		    cbf, l16, r16, c16);
	cr_assert(rbf <= 1e-3, "bf16 loss %f vs fp32 %f", lbf, l32);
	cr_assert(r16 <= 2e-4, "fp16 loss %f vs fp32 %f", l16, l32);
	cr_assert(cbf >= 0.999, "bf16 gradient cosine %f", cbf);
	cr_assert(c16 >= 0.9999, "fp16 gradient cosine %f", c16);
	/* lower precision really changes the numbers (the setting is not ignored) */
	cr_assert_neq(lbf, l32);
	cr_assert_neq(l16, l32);
	cr_assert_neq(l16, lbf);
	/* and fp32 again gives the fp32 result bit for bit */
	float *again;
	cr_assert_eq(run(&m, NN_FP32, 1.0f, &again), l32);
	cr_assert_eq(memcmp(again, g32, m.n_params * sizeof(float)), 0);
	free(again);
	free(g32), free(g16), free(gbf);
	nn_gpt_release(&m);
}

Test(nn_precision, onednn_bf16_matches_rounded_operands)
{
	/* oneDNN's bf16 matmul (when the CPU has AVX512_BF16) and fp32 GEMM on bf16-rounded operands
	 * compute the same products up to fp32 summation order: 1e-4 relative on the loss,
	 * 1e-3 · max|g| per gradient element. Where the oneDNN side also runs the attention on the AMX
	 * tiles (nn_attention_bf16_tiles) and the other the fp32 attention, the attention's own bf16
	 * operand rounding (u = 2^-8 relative per operand; test_nn_attention bounds it at a few u of
	 * the terms) adds to the gradients: 2u · max|g| (measured 1.1e-3 · max|g|). The oneDNN side
	 * also keeps the GELU's output gradient in bf16 (the fc projection's input-gradient product
	 * stored in bf16): one more rounding of u relative, u · max|g| (measured 1.37e-3 · max|g|
	 * without the tiles). A wrong product (a transpose, a stale operand) is off by the order of
	 * max|g| itself. */
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &CFG));
	nn_gpt_init_weights(&m, 4);
	float *ga, *gb;
	cr_assert_eq(nn_get_bf16_onednn(), 1); /* the default: oneDNN's bf16 matmul where the CPU has it */
	float la = run(&m, NN_BF16, 1.0f, &ga);
	nn_set_bf16_onednn(0);
	float lb = run(&m, NN_BF16, 1.0f, &gb);
	nn_set_bf16_onednn(1);
	cr_assert(fabs(la - lb) <= 1e-4 * fabs(lb), "loss %f vs %f", la, lb);
	double mx = 0, err = 0;
	for (size_t i = 0; i < m.n_params; i++) {
		mx = fmax(mx, fabs(gb[i]));
		err = fmax(err, fabs(ga[i] - gb[i]));
	}
	double tol = (nn_attention_bf16_tiles() ? 2.0 / 256 : 1e-3) + 1.0 / 256;
	cr_assert(err <= tol * mx, "max gradient difference %g (max %g, tolerance %g of it)", err, mx, tol);
	free(ga), free(gb);
	nn_gpt_release(&m);
}

/* The bf16 copies of the weights are made afresh at every forward: a model whose weights change
 * between steps (as the optimizer changes them) computes exactly what a new model holding the new
 * weights computes, loss and gradients, in bf16; and the copies follow the weights when their bf16
 * rounding changes (a stale copy would give the old loss, which differs). */
Test(nn_precision, bf16_weight_copies_follow_the_weights)
{
	struct nn_gpt m, r;
	OK(nn_gpt_init(&m, &CFG));
	OK(nn_gpt_init(&r, &CFG));
	nn_gpt_init_weights(&m, 5);
	float *g0;
	float l0 = run(&m, NN_BF16, 1.0f, &g0);
	/* change every matrix the bf16 GEMMs read, by much more than a bf16 ulp */
	const int ids[] = { NN_QKVW, NN_ATTPROJW, NN_FCW, NN_FCPROJW };
	for (int k = 0; k < 4; k++)
		for (size_t i = 0; i < m.param_sizes[ids[k]]; i++)
			m.param[ids[k]][i] *= (i % 3) ? 1.5f : -0.75f;
	memcpy(r.params_mem, m.params_mem, m.n_params * sizeof(float));
	float *g1, *g2;
	float l1 = run(&m, NN_BF16, 1.0f, &g1), l2 = run(&r, NN_BF16, 1.0f, &g2);
	cr_assert_neq(l1, l0);
	cr_assert_eq(l1, l2, "changed weights: loss %.9g, a new model on them %.9g", l1, l2);
	cr_assert_eq(memcmp(g1, g2, m.n_params * sizeof(float)), 0);
	free(g0), free(g1), free(g2);
	nn_gpt_release(&m);
	nn_gpt_release(&r);
}

/* nn_gpt_adamw_step writes the bf16 weight copies in its pass, and the next forward reads them
 * instead of converting: three steps of it give bit for bit the losses, gradients and weights of
 * steps whose every forward converts afresh (nn_gpt_params_changed before it) — a copy left stale
 * or written from the old weights changes the loss. A step that covers the matrices only in part
 * (here half of fcw by nn_adamw_step) leaves the next forward converting: still equal. */
Test(nn_precision, bf16_weight_copies_written_by_adamw)
{
	if (!nn_bf16_runs_onednn())
		cr_skip_test("bf16 does not run on oneDNN here (no AVX512_BF16): no weight copies");
	struct nn_adamw o = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f };
	for (int partial = 0; partial < 2; partial++) {
		struct nn_gpt m[2];
		float *mo[2], *vo[2], loss[2][3];
		for (int k = 0; k < 2; k++) {
			OK(nn_gpt_init(&m[k], &CFG));
			nn_gpt_init_weights(&m[k], 7);
			mo[k] = calloc(m[k].n_params, sizeof(float));
			vo[k] = calloc(m[k].n_params, sizeof(float));
		}
		for (int step = 0; step < 3; step++)
			for (int k = 0; k < 2; k++) {
				if (k == 1)
					nn_gpt_params_changed(&m[k]); /* model 1 converts at every forward */
				loss[k][step] = run(&m[k], NN_BF16, 1.0f, NULL);
				for (int t = 0; t < NN_NPARAMS; t++) {
					size_t off = (size_t)(m[k].param[t] - m[k].params_mem), n = m[k].param_sizes[t];
					size_t half = partial && t == NN_FCW ? n / 2 : 0;
					if (half)
						nn_adamw_step(&o, step + 1, m[k].param[t], m[k].grad[t], mo[k] + off, vo[k] + off,
							      half, nn_param_decays(t));
					nn_gpt_adamw_step(&m[k], &o, step + 1, m[k].param[t] + half, m[k].grad[t] + half,
							  mo[k] + off + half, vo[k] + off + half, n - half, nn_param_decays(t));
				}
			}
		for (int step = 0; step < 3; step++)
			cr_assert_eq(loss[0][step], loss[1][step], "partial %d step %d: loss %.9g, converting afresh %.9g",
				     partial, step, loss[0][step], loss[1][step]);
		cr_assert_neq(loss[0][2], loss[0][0]);
		cr_assert_eq(memcmp(m[0].grads_mem, m[1].grads_mem, m[0].n_params * sizeof(float)), 0);
		cr_assert_eq(memcmp(m[0].params_mem, m[1].params_mem, m[0].n_params * sizeof(float)), 0);
		for (int k = 0; k < 2; k++) {
			nn_gpt_release(&m[k]);
			free(mo[k]), free(vo[k]);
		}
	}
}

Test(nn_precision, fp16_overflows_like_fp16)
{
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &CFG));
	nn_gpt_init_weights(&m, 5);
	/* a usual loss scale is fine in fp16 */
	run(&m, NN_FP16, 1024.0f, NULL);
	cr_assert_eq(nn_has_nonfinite(m.grads_mem, m.n_params), 0);
	/* a scale that puts activation gradients above 65504 overflows to inf */
	run(&m, NN_FP16, 1e9f, NULL);
	cr_assert_eq(nn_has_nonfinite(m.grads_mem, m.n_params), 1);
	/* bf16 has fp32's range, fp32 too */
	run(&m, NN_BF16, 1e9f, NULL);
	cr_assert_eq(nn_has_nonfinite(m.grads_mem, m.n_params), 0);
	run(&m, NN_FP32, 1e9f, NULL);
	cr_assert_eq(nn_has_nonfinite(m.grads_mem, m.n_params), 0);
	nn_gpt_release(&m);
}

/* ------------------------------------------------------------------------------------------ */
/* Profiler hooks into a real database */

static char tmpdir[64], dbp[256];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-nnprof-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(dbp, sizeof dbp, "%s/rank-00000.db", tmpdir);
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

static const struct db_op_stat *find(const struct db_op_stat *s, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(s[i].name, name))
			return &s[i];
	return NULL;
}

Test(nn_precision, profiler_records_ops_and_memory, .init = mk_tmp, .fini = rm_tmp)
{
	struct prof_options po = { .db_path = dbp, .rank = 0, .world_size = 1, .dp_rank = -1, .tp_rank = -1,
				   .pp_rank = -1 };
	OK(prof_init(&po));
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &CFG));
	nn_gpt_init_weights(&m, 6);
	float *mo = calloc(m.n_params, sizeof(float)), *vo = calloc(m.n_params, sizeof(float));
	struct nn_adamw o = { .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f };
	for (int step = 0; step < 2; step++) {
		prof_step_begin(step);
		run(&m, NN_FP32, 1.0f, NULL);
		for (int t = 0; t < NN_NPARAMS; t++) {
			size_t off = (size_t)(m.param[t] - m.params_mem);
			nn_adamw_step(&o, step + 1, m.param[t], m.grad[t], mo + off, vo + off, m.param_sizes[t],
				      nn_param_decays(t));
		}
		prof_step_end();
	}
	size_t pbytes = m.n_params * sizeof(float);
	nn_gpt_release(&m);
	free(mo), free(vo);
	OK(prof_shutdown());

	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	struct db_op_stat *s;
	int n;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &s, &n));
	const int L = CFG.n_layer, C = CFG.n_embd, V = CFG.vocab_size, steps = 2;
	struct {
		const char *name;
		int64_t count;
		double flops;   /* over both steps; < 0: do not check */
	} want[] = {
		{ "encoder", 1, -1 },
		{ "layernorm", 2, -1 },                /* block 0's first, the head's */
		{ "residual_layernorm", 2 * L - 1, -1 }, /* every other: the residual add before it fused in */
		{ "matmul_qkv", L, 2.0 * N * C * 3 * C * L },
		{ "attention", L, 4.0 * N * T * C * L },
		{ "matmul_attproj", L, 2.0 * N * C * C * L },
		{ "residual", 1, -1 },                 /* the last block's, before the head */
		{ "matmul_fc", L, 2.0 * N * C * 4 * C * L },
		{ "gelu", L, -1 },
		{ "matmul_fcproj", L, 2.0 * N * 4 * C * C * L },
		{ "matmul_lm_head", 1, 2.0 * N * C * V },
		{ "crossentropy", 1, -1 },
		{ "crossentropy_bwd", 1, -1 },
		{ "matmul_lm_head_bwd", 1, 4.0 * N * C * V },
		{ "layernorm_bwd", 2 * L + 1, -1 },
		{ "matmul_fcproj_bwd", L, 4.0 * N * 4 * C * C * L },
		{ "gelu_bwd", L, -1 },
		{ "matmul_fc_bwd", L, 4.0 * N * C * 4 * C * L },
		{ "matmul_attproj_bwd", L, 4.0 * N * C * C * L },
		{ "attention_bwd", L, 8.0 * N * T * C * L },
		{ "matmul_qkv_bwd", L, 4.0 * N * C * 3 * C * L },
		{ "encoder_bwd", 1, -1 },
		{ "adamw", NN_NPARAMS, -1 },
	};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
		const struct db_op_stat *e = find(s, n, want[i].name);
		cr_assert_not_null(e, "no op events named %s", want[i].name);
		cr_assert_eq(e->count, want[i].count * steps, "%s: %lld events, want %lld", want[i].name,
			     (long long)e->count, (long long)(want[i].count * steps));
		if (want[i].flops >= 0)
			cr_assert_float_eq(e->flops, want[i].flops * steps, 0.5, "%s: flops %g want %g", want[i].name,
					   e->flops, want[i].flops * steps);
	}
	db_op_stats_free(s, n);
	/* memory: params and grads with the model's size, activations and workspace present */
	struct db_mem_stat *ms;
	OK(db_mem_stats(db, DB_FILTER_ALL, &ms, &n));
	int seen = 0;
	for (int i = 0; i < n; i++) {
		if (ms[i].category == DB_MEM_PARAM || ms[i].category == DB_MEM_GRAD) {
			cr_assert_eq(ms[i].peak_bytes, (int64_t)pbytes, "category %d peak %lld", ms[i].category,
				     (long long)ms[i].peak_bytes);
			seen |= 1 << ms[i].category;
		}
		if (ms[i].category == DB_MEM_ACTIVATION || ms[i].category == DB_MEM_WORKSPACE) {
			cr_assert_gt(ms[i].peak_bytes, 0);
			seen |= 1 << ms[i].category;
		}
	}
	cr_assert_eq(seen, 1 << DB_MEM_PARAM | 1 << DB_MEM_GRAD | 1 << DB_MEM_ACTIVATION | 1 << DB_MEM_WORKSPACE);
	free(ms);
	db_close(db);
}
