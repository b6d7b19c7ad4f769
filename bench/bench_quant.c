/* bench/bench_quant.c — INT8 vs fp32, same thread count, one JSON line per figure:
 *   gemm_int8: oneDNN's AMX-INT8 matmul and our VNNI kernel (u8s8 packed, fused dequantize to f32;
 *              0 where this process has no AMX / no VNNI) and oneDNN s8s8s32 against fp32 sgemm
 *              (OpenBLAS with the fast core, and oneDNN) on the small model's linear shapes, M in
 *              {1, 64, 512, 2048}; speedup = int8 GOP/s ÷ OpenBLAS sgemm GFLOP/s; "amx_impl" is
 *              oneDNN's name for the kernel the AMX path ran at that M (quant_gemm_packed_impl).
 *   prefill:   the small model's forward over 512 tokens (B=2, T=256): nn_gpt_forward (fp32) vs
 *              quant_model_forward in INT8, W8A8 dynamic and static (random weights: speed only).
 *   eval:      the same with targets (the loss): what `ascent quant eval` times, fp32 vs INT8.
 *   prefill_breakdown: the dynamic forward's time split into per-token activation quantization,
 *              INT8 GEMM and the rest (attention, norms, GELU, LM head), each timed alone.
 * Every line names the INT8 GEMM that ran ("gemm": the backend, "int8_impl": the kernel at the
 * line's M, read back from oneDNN where oneDNN runs it) and the ISA oneDNN dispatched for
 * ("int8_isa": dnnl_get_effective_cpu_isa). bench/run.sh runs this program twice, the second time
 * under ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI, so the speed-up is reported with and without AMX.
 * `bench_quant prefill` skips the GEMM table.
 * Best of 5 timings of ~30 ms each; environment noise on the shared machine is
 * 10–25 % (docs/background.md), more on a busy host: compare ratios measured in the same run. */
#include "nn/nn.h"
#include "quant/quant.h"

#include <stdlib.h>
#include <string.h>

/* Best of 5 timings of `reps` calls each, after a warm-up call; reps 0: as many calls as take about
 * 30 ms (one call timed first), so tiny shapes are not all timer and wake-up noise. */
static double best_of(int reps, void (*fn)(void *), void *ctx)
{
	double best = 1e30;
	int64_t w0 = clock_ns();
	fn(ctx); /* warm-up */
	if (reps <= 0) {
		double one = (double)(clock_ns() - w0) * 1e-9;
		reps = one > 0.03 ? 1 : (int)(0.03 / (one > 1e-7 ? one : 1e-7)) + 1;
		reps = reps > 100000 ? 100000 : reps;
	}
	for (int r = 0; r < 5; r++) {
		int64_t t0 = clock_ns();
		for (int i = 0; i < reps; i++)
			fn(ctx);
		double s = (double)(clock_ns() - t0) * 1e-9 / reps;
		best = s < best ? s : best;
	}
	return best;
}

struct gctx {
	int M, N, K;
	float *A, *W, *C;           /* fp32: A (M,K), W (K,N) Conv1D layout */
	int8_t *a8, *w8;            /* s8: a (M,K), w (N,K) */
	uint8_t *au;                /* (M, Kp) */
	int32_t *c32;
	float *as, *ws;
	struct quant_packed pk;
};

static void run_sgemm(void *p)
{
	struct gctx *g = p;
	nn_gemm('N', 'N', g->M, g->N, g->K, 1.0f, g->A, g->K, g->W, g->N, 0.0f, g->C, g->N);
}
/* the packed kernel of the current backend: AMX or VNNI (quant_gemm_set_backend before) */
static void run_packed(void *p)
{
	struct gctx *g = p;
	quant_gemm_u8s8_packed_f32(g->M, g->au, g->pk.Kp, &g->pk, g->as, 1, g->ws, NULL, g->C, g->N);
}
static void run_onednn(void *p)
{
	struct gctx *g = p;
	quant_gemm_s8s8s32_onednn(g->M, g->N, g->K, g->a8, g->K, g->w8, g->K, g->c32, g->N);
}

static void run_f32(void *p)
{
	struct gctx *g = p;
	quant_gemm_s8s8s32_f32(g->M, g->N, g->K, g->a8, g->K, g->w8, g->K, g->c32, g->N);
}

static void bench_gemm(void)
{
	enum quant_gemm_backend keep = quant_gemm_get_backend();
	static const struct {
		const char *name;
		int N, K;
	} sh[] = { { "c_attn", 1536, 512 }, { "attn_proj", 512, 512 }, { "c_fc", 2048, 512 }, { "mlp_proj", 512, 2048 } };
	static const int Ms[] = { 1, 64, 512, 2048 };
	size_t maxe = (size_t)2048 * 2048;
	struct gctx g;
	memset(&g, 0, sizeof g);
	g.A = malloc(maxe * 4);
	g.W = malloc(maxe * 4);
	g.C = malloc(maxe * 4);
	g.a8 = malloc(maxe);
	g.w8 = malloc(maxe);
	g.au = malloc(maxe + 4096);
	g.c32 = malloc(maxe * 4);
	g.as = malloc(2048 * 4);
	g.ws = malloc(2048 * 4);
	uint64_t st = rng_seed(9, 9);
	rng_normal(&st, g.A, maxe, 0, 1);
	rng_normal(&st, g.W, maxe, 0, 1);
	for (size_t i = 0; i < maxe; i++) {
		g.a8[i] = (int8_t)((int)(rng_u32(&st) % 255) - 127);
		g.w8[i] = (int8_t)((int)(rng_u32(&st) % 255) - 127);
	}
	for (int i = 0; i < 2048; i++)
		g.as[i] = g.ws[i] = 0.01f;
	for (size_t s = 0; s < sizeof sh / sizeof sh[0]; s++)
		for (size_t mi = 0; mi < sizeof Ms / sizeof Ms[0]; mi++) {
			g.M = Ms[mi];
			g.N = sh[s].N;
			g.K = sh[s].K;
			quant_pack_b(&g.pk, g.w8, g.N, g.K, g.K);
			for (int m = 0; m < g.M; m++)
				for (int k = 0; k < g.K; k++)
					g.au[(size_t)m * g.pk.Kp + k] = (uint8_t)(g.a8[(size_t)m * g.K + k] + 128);
			double ops = 2.0 * g.M * g.N * g.K;
			int reps = 0;                        /* ~30 ms per timing: 1 ms timings were mostly noise */
			nn_gemm_set_backend(NN_GEMM_OPENBLAS);
			double t_blas = best_of(reps, run_sgemm, &g);
			nn_gemm_set_backend(NN_GEMM_ONEDNN);
			double t_dsg = best_of(reps, run_sgemm, &g);
			/* the AMX path only where this process has AMX, our VNNI kernel only where the CPU (and
			 * the ISA cap) has VNNI: 0 elsewhere */
			double t_amx = 0, t_vnni = 0;
			char amx_impl[64] = "none";
			if (quant_have_amx()) {
				quant_gemm_set_backend(QUANT_GEMM_AMX);
				snprintf(amx_impl, sizeof amx_impl, "%s", quant_gemm_packed_impl(g.M, &g.pk));
				t_amx = best_of(reps, run_packed, &g);
			}
			if (quant_have_vnni()) {
				quant_gemm_set_backend(QUANT_GEMM_VNNI);
				t_vnni = best_of(reps, run_packed, &g);
			}
			quant_gemm_set_backend(keep);
			double t_f32 = best_of(reps, run_f32, &g);
			double t_dnnl = best_of(reps, run_onednn, &g);
			printf("{\"bench\":\"gemm_int8\",\"shape\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"threads\":%d,"
			       "\"sgemm_openblas_gflops\":%.1f,\"sgemm_onednn_gflops\":%.1f,\"int8_amx_gops\":%.1f,"
			       "\"int8_vnni_gops\":%.1f,\"int8_f32_gops\":%.1f,\"int8_onednn_gops\":%.1f,\"onednn_exact\":%d,"
			       "\"speedup_amx\":%.2f,\"speedup_vnni\":%.2f,\"speedup_f32\":%.2f,\"speedup_onednn\":%.2f,"
			       "\"amx_impl\":\"%s\",\"int8_isa\":\"%s\"}\n",
			       sh[s].name, g.M, g.N, g.K, nn_get_threads(), ops / t_blas * 1e-9, ops / t_dsg * 1e-9,
			       t_amx > 0 ? ops / t_amx * 1e-9 : 0, t_vnni > 0 ? ops / t_vnni * 1e-9 : 0, ops / t_f32 * 1e-9,
			       ops / t_dnnl * 1e-9, quant_gemm_onednn_exact(), t_amx > 0 ? t_blas / t_amx : 0,
			       t_vnni > 0 ? t_blas / t_vnni : 0, t_blas / t_f32, t_blas / t_dnnl, amx_impl, nn_dnnl_isa());
			fflush(stdout);
			quant_packed_release(&g.pk);
		}
	free(g.A), free(g.W), free(g.C), free(g.a8), free(g.w8), free(g.au), free(g.c32), free(g.as), free(g.ws);
}

struct pctx {
	struct nn_gpt *m;
	struct quant_model *qm;
	int *in, *tg;
};
static void run_fp32(void *p)
{
	struct pctx *c = p;
	nn_gpt_forward(c->m, c->in, NULL, 2, 256);
}
static void run_int8(void *p)
{
	struct pctx *c = p;
	quant_model_forward(c->qm, QUANT_EXEC_INT8, c->in, NULL, 2, 256, NULL);
}
static void run_fp32_loss(void *p)
{
	struct pctx *c = p;
	nn_gpt_forward(c->m, c->in, c->tg, 2, 256);
}
static void run_int8_loss(void *p)
{
	struct pctx *c = p;
	quant_model_forward(c->qm, QUANT_EXEC_INT8, c->in, c->tg, 2, 256, NULL);
}

/* The kernel the INT8 forward's linear layers run at M rows: oneDNN's name for it on AMX, ours
 * for the VNNI kernel, the backend's name otherwise. */
static const char *int8_impl(const struct quant_model *qm, int M)
{
	enum quant_gemm_backend be = quant_gemm_get_backend();
	if (be == QUANT_GEMM_AMX || be == QUANT_GEMM_VNNI)
		return quant_gemm_packed_impl(M, &qm->lin[0].pk);
	return be == QUANT_GEMM_F32 ? "ascent:f32_gemm" : "onednn:gemm_s8s8s32";
}

/* Where the INT8 forward's time goes: the per-token activation quantization (amax + codes, as
 * model.c does it) and the INT8 GEMM of each linear layer, timed alone on the prefill's shapes
 * (N = 512 rows), against the whole forward; the rest is attention, norms, GELU, residuals and the
 * fp32 LM head. */
struct bdctx {
	struct quant_model *qm;
	int li, N;
	const float *x;
	uint8_t *u8;
	float *as, *y;
};
static void run_actq(void *p)
{
	struct bdctx *c = p;
	const struct quant_layer *q = &c->qm->lin[c->li];
	int K = q->in, Kp = q->pk.Kp;
#pragma omp parallel for num_threads(nn_get_threads()) schedule(static)
	for (int n = 0; n < c->N; n++) {
		const float *r = c->x + (size_t)n * K;
		float s = nn_quant_scale(nn_quant_row_amax(r, K));
		c->as[n] = s;
		quant_row_codes_u8(r, K, 1.0f / s, c->u8 + (size_t)n * Kp);
	}
}
static void run_lgemm(void *p)
{
	struct bdctx *c = p;
	const struct quant_layer *q = &c->qm->lin[c->li];
	quant_gemm_u8s8_packed_f32(c->N, c->u8, q->pk.Kp, &q->pk, c->as, 1, q->wscale, NULL, c->y, q->out);
}

static void prefill_breakdown(struct quant_model *qm, double total_s)
{
	int N = 512, C = qm->fp.cfg.n_embd;
	size_t n = (size_t)N * (4 * C + 4);
	float *x = malloc(n * sizeof *x), *as = malloc((size_t)N * sizeof *as), *y = malloc(n * sizeof *y);
	uint8_t *u8 = calloc(n, 1);
	if (!x || !as || !y || !u8) {
		free(x), free(as), free(y), free(u8);
		return;
	}
	uint64_t st = rng_seed(3, 3);
	rng_normal(&st, x, n, 0, 1);
	double tq = 0, tg = 0;
	for (int k = 0; k < QUANT_LIN_PER_LAYER; k++) {   /* every block has the same four shapes */
		struct bdctx c = { qm, k, N, x, u8, as, y };
		tq += best_of(3, run_actq, &c) * qm->fp.cfg.n_layer;
		tg += best_of(3, run_lgemm, &c) * qm->fp.cfg.n_layer;
	}
	printf("{\"bench\":\"prefill_breakdown\",\"scheme\":\"%s\",\"tokens\":%d,\"threads\":%d,\"int8_impl\":\"%s\","
	       "\"int8_isa\":\"%s\",\"total_ms\":%.2f,\"act_quant_ms\":%.2f,\"int8_gemm_ms\":%.2f,\"rest_ms\":%.2f,"
	       "\"act_quant_pct\":%.1f,\"int8_gemm_pct\":%.1f}\n",
	       quant_scheme_name(qm->scheme), N, nn_get_threads(), quant_gemm_packed_impl(N, &qm->lin[0].pk), nn_dnnl_isa(),
	       total_s * 1e3, tq * 1e3, tg * 1e3,
	       (total_s - tq - tg) * 1e3, 100 * tq / total_s, 100 * tg / total_s);
	fflush(stdout);
	free(x), free(as), free(y), free(u8);
}

static int bench_prefill(void)
{
	struct nn_config cfg;
	nn_config_preset("small", &cfg);
	int in[512], tg[512];
	for (int i = 0; i < 512; i++) {
		in[i] = (i * 37 + 11) % cfg.vocab_size;
		tg[i] = (i * 53 + 7) % cfg.vocab_size;
	}
	for (int sc = QUANT_W8A8_DYNAMIC; sc <= QUANT_W8A8_STATIC; sc++) {
		struct nn_gpt m, m2;
		int rc = nn_gpt_init(&m, &cfg);
		if (!rc)
			rc = nn_gpt_init(&m2, &cfg);
		if (rc)
			return rc;
		nn_gpt_init_weights(&m, 42);
		memcpy(m2.params_mem, m.params_mem, m.n_params * sizeof(float));
		struct quant_model qm;
		rc = quant_model_init(&qm, &m2, (enum quant_scheme)sc, 0);
		if (!rc)
			rc = quant_model_quantize_weights(&qm);
		for (int i = 0; i < qm.nlin; i++)
			qm.lin[i].in_scale = 4.0f / 127; /* a plausible static scale: speed only */
		if (rc)
			return rc;
		nn_gemm_set_backend(NN_GEMM_OPENBLAS);
		struct pctx c = { &m, &qm, in, tg };
		double tb = best_of(3, run_fp32, &c);
		nn_gemm_set_backend(NN_GEMM_ONEDNN);
		double td = best_of(3, run_fp32, &c);
		double tq = best_of(3, run_int8, &c);
		double tf = tb < td ? tb : td;
		const char *be = quant_gemm_backend_name(quant_gemm_get_backend());
		printf("{\"bench\":\"prefill\",\"preset\":\"small\",\"tokens\":512,\"B\":2,\"T\":256,\"scheme\":\"%s\","
		       "\"threads\":%d,\"gemm\":\"%s\",\"int8_impl\":\"%s\",\"int8_isa\":\"%s\","
		       "\"fp32_openblas_tokens_per_s\":%.0f,\"fp32_onednn_tokens_per_s\":%.0f,"
		       "\"int8_tokens_per_s\":%.0f,\"speedup_vs_best_fp32\":%.2f}\n",
		       quant_scheme_name((enum quant_scheme)sc), nn_get_threads(), be, int8_impl(&qm, 512), nn_dnnl_isa(),
		       512 / tb, 512 / td, 512 / tq, tf / tq);
		fflush(stdout);
		/* eval: with targets, fp32 on its default (oneDNN) GEMM as `quant eval` runs it */
		double tfe = best_of(3, run_fp32_loss, &c), tqe = best_of(3, run_int8_loss, &c);
		printf("{\"bench\":\"eval\",\"preset\":\"small\",\"tokens\":512,\"B\":2,\"T\":256,\"scheme\":\"%s\","
		       "\"threads\":%d,\"gemm\":\"%s\",\"int8_impl\":\"%s\",\"int8_isa\":\"%s\",\"fp32_tokens_per_s\":%.0f,"
		       "\"int8_tokens_per_s\":%.0f,\"speedup\":%.2f}\n",
		       quant_scheme_name((enum quant_scheme)sc), nn_get_threads(), be, int8_impl(&qm, 512), nn_dnnl_isa(),
		       512 / tfe, 512 / tqe, tfe / tqe);
		fflush(stdout);
		if (sc == QUANT_W8A8_DYNAMIC)
			prefill_breakdown(&qm, tq);
		nn_gpt_release(&m);
		quant_model_release(&qm);
	}
	return 0;
}

int main(int argc, char **argv)
{
	nn_blas_fix_core(argc, argv);
	nn_set_threads(0);
	enum nn_gemm_backend keep = nn_gemm_get_backend();
	printf("{\"bench\":\"quant_env\",\"blas\":\"%s\",\"vnni\":%d,\"amx\":%d,\"gemm\":\"%s\",\"int8_isa\":\"%s\","
	       "\"threads\":%d}\n",
	       nn_blas_describe(), quant_have_vnni(), quant_have_amx(), quant_gemm_backend_name(quant_gemm_get_backend()),
	       nn_dnnl_isa(), nn_get_threads());
	/* `bench_quant prefill` runs only the end-to-end figure (for profiling) */
	int only_prefill = 0;
	for (int i = 1; i < argc; i++)
		only_prefill |= !strcmp(argv[i], "prefill");
	if (!only_prefill)
		bench_gemm();
	int rc = bench_prefill();
	nn_gemm_set_backend(keep);
	if (rc) {
		fprintf(stderr, "bench_quant: %s\n", ascent_errmsg());
		return 1;
	}
	return 0;
}
