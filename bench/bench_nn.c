/* bench/bench_nn.c — training-step throughput of the nn GPT-2 model (forward + backward + AdamW)
 * on the "tiny", "small" and "gpt2-124m" presets (default B=8 T=256) with random tokens, the
 * machine's measured fp32 FMA peak (an AVX-512 FMA loop on every thread), MFU, the process's peak
 * RSS, and the GEMM backends on the model's shapes: OpenBLAS and oneDNN in fp32, and oneDNN's bf16
 * matmul on operands already in bf16, each shape's rate beside the bf16 peak measured on a 2048³
 * product in alternation with it ("share_of_bf16_peak"; the "bf16_peak" line is the best of those),
 * by wall time and by CPU time ("*_cpu": CPU seconds ÷ threads, the time on an idle host, which a
 * shared host's load disturbs far less; "gemm_step_cpu" weighs the shapes as one step runs them).
 * Prints one JSON line per figure.
 *
 *   bench_nn [--steps N] [--warmup N] [--threads N] [--preset tiny|small|gpt2-124m|all]
 *            [--batch B] [--seq T] [--backend openblas|onednn]
 *            [--precision fp32|bf16|fp16|fp32,bf16|all] [--no-gemm] [--no-attention]
 *            [--no-peak [--peak GFLOPS]]
 * The training step is measured in each precision asked (default fp32 and bf16: the GEMMs in bf16
 * through oneDNN's bf16 matmul, see nn/precision.c). peak_rss_bytes is the process's: run one
 * preset and shape per process to read it as that configuration's (bench/run.sh does, at T=256
 * and T=1024 with the same tokens per step).
 */
#include "common/common.h"
#include "nn/nn.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* fp32 FMA peak: 12 independent 16-lane FMA chains per thread for ~0.3 s; GFLOP/s = 2 per FMA lane. */
static double measure_peak_gflops(int threads)
{
	double best = 0;
	for (int rep = 0; rep < 3; rep++) {
		const long iters = 50 * 1000 * 1000;
		int64_t t0 = clock_ns();
		float sink = 0;
#pragma omp parallel num_threads(threads) reduction(+ : sink)
		{
#if defined(__AVX512F__)
			/* 12 named accumulators: 2 FMA ports x 4-cycle latency needs >= 8 chains in flight */
			const __m512 m = _mm512_set1_ps(0.999999f), c = _mm512_set1_ps(1e-7f);
			__m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2),
			       a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),
			       a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8),
			       a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
			for (long i = 0; i < iters; i++) {
				a0 = _mm512_fmadd_ps(a0, m, c);
				a1 = _mm512_fmadd_ps(a1, m, c);
				a2 = _mm512_fmadd_ps(a2, m, c);
				a3 = _mm512_fmadd_ps(a3, m, c);
				a4 = _mm512_fmadd_ps(a4, m, c);
				a5 = _mm512_fmadd_ps(a5, m, c);
				a6 = _mm512_fmadd_ps(a6, m, c);
				a7 = _mm512_fmadd_ps(a7, m, c);
				a8 = _mm512_fmadd_ps(a8, m, c);
				a9 = _mm512_fmadd_ps(a9, m, c);
				a10 = _mm512_fmadd_ps(a10, m, c);
				a11 = _mm512_fmadd_ps(a11, m, c);
			}
			__m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
						 _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
			s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
			sink += _mm512_reduce_add_ps(s);
#else
			sink += 0;
#endif
		}
		double sec = (double)(clock_ns() - t0) * 1e-9;
#if defined(__AVX512F__)
		double g = (double)iters * 12 * 16 * 2 * threads / sec * 1e-9;
#else
		double g = 0;
#endif
		if (sink == 12345.0f)
			printf("#\n"); /* keep the loop alive */
		if (g > best)
			best = g;
	}
	return best;
}

/* CPU seconds this process has used (all threads): on a shared host the wall clock counts other
 * programs' time too, the CPU time only ours (OpenMP threads wait passively, see nn_blas_fix_core). */
static double process_cpu_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int bench_preset(const char *preset, int B, int T, int steps, int warmup, double peak, enum nn_precision prec)
{
	struct nn_config c;
	int rc = nn_config_preset(preset, &c);
	if (rc)
		return rc;
	if (T > c.max_seq)
		return ascent_error(ASCENT_EUSAGE, "--seq %d exceeds preset %s's max_seq %d", T, preset, c.max_seq);
	const int N = B * T;
	struct nn_gpt m;
	if ((rc = nn_gpt_init(&m, &c)))
		return rc;
	nn_gpt_init_weights(&m, 1);
	nn_gpt_set_precision(&m, prec);
	float *mo = calloc(m.n_params, sizeof(float)), *vo = calloc(m.n_params, sizeof(float));
	int *x = malloc((size_t)N * sizeof(int)), *y = malloc((size_t)N * sizeof(int));
	double *dt = malloc((size_t)steps * sizeof(double)), *ct = malloc((size_t)steps * sizeof(double));
	if (!mo || !vo || !x || !y || !dt || !ct)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	uint64_t st = rng_seed(42, 1);
	struct nn_adamw o = { .lr = 3e-4f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f };
	float loss = 0;
	for (int s = 0; s < warmup + steps; s++) {
		for (int i = 0; i < N; i++) {
			x[i] = (int)(rng_u32(&st) % (uint32_t)c.vocab_size);
			y[i] = (int)(rng_u32(&st) % (uint32_t)c.vocab_size);
		}
		int64_t t0 = clock_ns();
		double c0 = process_cpu_s();
		if ((rc = nn_gpt_forward(&m, x, y, B, T)))
			return rc;
		nn_gpt_zero_grad(&m);
		if ((rc = nn_gpt_backward(&m, 1.0f)))
			return rc;
		struct nn_adamw_span sp[NN_NPARAMS];
		for (int t = 0; t < NN_NPARAMS; t++) {
			size_t off = (size_t)(m.param[t] - m.params_mem);
			sp[t] = (struct nn_adamw_span){ m.param[t], m.grad[t], mo + off, vo + off, m.param_sizes[t],
							nn_param_decays(t) };
		}
		nn_gpt_adamw_steps(&m, &o, s + 1, sp, NN_NPARAMS);
		int64_t t1 = clock_ns();
		double c1 = process_cpu_s();
		loss = m.loss;
		if (s >= warmup) {
			dt[s - warmup] = (double)(t1 - t0) * 1e-9;
			ct[s - warmup] = c1 - c0;
		}
	}
	qsort(dt, (size_t)steps, sizeof *dt, cmp_double);
	qsort(ct, (size_t)steps, sizeof *ct, cmp_double);
	double med = dt[steps / 2];
	double tps = N / med, fpt = nn_flops_per_token(&c, T), gf = fpt * tps * 1e-9;
	printf("{\"bench\":\"train_step\",\"impl\":\"ascent\",\"preset\":\"%s\",\"precision\":\"%s\",\"B\":%d,\"T\":%d,\"threads\":%d,"
	       "\"steps\":%d,\"tokens_per_s\":%.1f,\"tokens_per_s_min\":%.1f,\"tokens_per_s_max\":%.1f,"
	       "\"step_s\":%.4f,\"gflops\":%.1f,\"flops_formula\":\"6N+12LTC\",\"flops_per_token\":%.0f,"
	       "\"peak_gflops\":%.1f,\"mfu\":%.3f,\"cpu_s_per_step\":%.4f,\"tokens_per_cpu_s\":%.1f,"
	       "\"loss\":%.4f,\"peak_rss_bytes\":%lld,\"blas\":",
	       preset, nn_precision_name(prec), B, T, nn_get_threads(), steps, tps, N / dt[steps - 1], N / dt[0], med, gf, fpt, peak,
	       peak > 0 ? gf / peak : 0.0, ct[steps / 2], N / ct[steps / 2], loss, (long long)cpu_peak_rss_bytes());
	json_fput_string(stdout, nn_blas_describe());
	printf("}\n");
	fflush(stdout);
	free(mo), free(vo), free(x), free(y), free(dt), free(ct);
	nn_gpt_release(&m);
	return 0;
}

/* Seconds of one bf16 GEMM C(M,N) = op(A)·op(B) on operands already in bf16, averaged over enough
 * repetitions for ~`gflop` GFLOP: wall time, and in *cpu the process's CPU seconds divided by the
 * threads (OpenMP threads wait passively, so that is the time the product would take on an idle
 * host, which a shared host's load disturbs much less). < 0 when bf16 does not run here (no
 * AVX512_BF16). */
static double bf16_gemm_s(char ta, char tb, int M, int N, int K, const uint16_t *A, const uint16_t *B, float *C,
			  double gflop, double *cpu)
{
	int lda = ta == 'N' ? K : M, ldb = tb == 'N' ? N : K;
	double flop = 2.0 * M * N * K;
	int reps = (int)(gflop * 1e9 / flop) + 1;
	int64_t t0 = clock_ns();
	double c0 = process_cpu_s();
	for (int i = 0; i < reps; i++)
		if (nn_gemm_bf16(ta, tb, M, N, K, A, lda, B, ldb, 0.0f, C, N))
			return -1;
	*cpu = (process_cpu_s() - c0) / nn_get_threads() / reps;
	return (double)(clock_ns() - t0) * 1e-9 / reps;
}

/* The bf16 rates of a shape and of the large square product (2048³, the engine's peak) measured
 * alternately, 5 times each, best of each: on a shared host the share of the peak then compares
 * runs made under the same load. rate[0], peak[0]: by wall time; rate[1], peak[1]: by CPU time
 * (bf16_gemm_s). All 0 when bf16 does not run here. */
static void bf16_rate_pair(char ta, char tb, int M, int N, int K, const uint16_t *A, const uint16_t *B, float *C,
			   double rate[2], double peak[2])
{
	double best[2] = { 1e30, 1e30 }, best_sq[2] = { 1e30, 1e30 }, cs, cq;
	rate[0] = rate[1] = peak[0] = peak[1] = 0;
	if (bf16_gemm_s(ta, tb, M, N, K, A, B, C, 0, &cs) < 0 ||
	    bf16_gemm_s('N', 'N', 2048, 2048, 2048, A, B, C, 0, &cq) < 0)
		return;
	for (int r = 0; r < 5; r++) {
		double s = bf16_gemm_s(ta, tb, M, N, K, A, B, C, 1.0, &cs);
		double q = bf16_gemm_s('N', 'N', 2048, 2048, 2048, A, B, C, 1.0, &cq);
		best[0] = s < best[0] ? s : best[0];
		best[1] = cs < best[1] ? cs : best[1];
		best_sq[0] = q < best_sq[0] ? q : best_sq[0];
		best_sq[1] = cq < best_sq[1] ? cq : best_sq[1];
	}
	for (int k = 0; k < 2; k++) {
		rate[k] = 2.0 * M * N * K / best[k] * 1e-9;
		peak[k] = 2.0 * 2048 * 2048 * 2048 / best_sq[k] * 1e-9;
	}
}

/* Every GEMM of one `small` training step (L6 C512 V256, N = B·T = 2048 rows), each with how many
 * times a step runs it, on both backends: the per-shape rate, then "gemm_step", the flop-weighted
 * rate of the whole set and the tokens/s a step could reach if everything but these GEMMs were free
 * (the practical ceiling the libraries set on this host). att_head is the per-head attention
 * product the tiled kernel replaced, kept for reference (count 0). */
static void bench_gemm(double peak)
{
	static const struct {
		const char *name;
		char ta, tb;
		int M, N, K, count;
	} shapes[] = {
		{ "qkv_fwd", 'N', 'N', 2048, 1536, 512, 6 },
		{ "attproj_fwd", 'N', 'N', 2048, 512, 512, 6 },
		{ "fc_fwd", 'N', 'N', 2048, 2048, 512, 6 },
		{ "fcproj_fwd", 'N', 'N', 2048, 512, 2048, 6 },
		{ "head_fwd", 'N', 'T', 2048, 256, 512, 1 },
		{ "qkv_bwd_dinp", 'N', 'T', 2048, 512, 1536, 6 },
		{ "qkv_bwd_dw", 'T', 'N', 512, 1536, 2048, 6 },
		{ "attproj_bwd_dinp", 'N', 'T', 2048, 512, 512, 6 },
		{ "attproj_bwd_dw", 'T', 'N', 512, 512, 2048, 6 },
		{ "fc_bwd_dinp", 'N', 'T', 2048, 512, 2048, 6 },
		{ "fc_bwd_dw", 'T', 'N', 512, 2048, 2048, 6 },
		{ "fcproj_bwd_dinp", 'N', 'T', 2048, 2048, 512, 6 },
		{ "fcproj_bwd_dw", 'T', 'N', 2048, 512, 2048, 6 },
		{ "head_bwd_dinp", 'N', 'N', 2048, 512, 256, 1 },
		{ "head_bwd_dw", 'T', 'N', 256, 512, 2048, 1 },
		{ "att_head", 'N', 'T', 64, 256, 64, 0 },
	};
	enum nn_gemm_backend keep = nn_gemm_get_backend();
	size_t maxn = (size_t)2048 * 2048;
	/* 64-byte aligned, as the model's buffers: malloc's large blocks start 16 bytes past a page,
	 * which costs oneDNN's AMX kernels about a third */
	float *A = aligned_alloc(64, maxn * 4), *Bm = aligned_alloc(64, maxn * 4), *C = aligned_alloc(64, maxn * 4);
	uint16_t *Ah = aligned_alloc(64, maxn * 2), *Bh = aligned_alloc(64, maxn * 2);
	uint64_t st = rng_seed(3, 3);
	rng_normal(&st, A, maxn, 0, 1);
	rng_normal(&st, Bm, maxn, 0, 1);
	nn_bf16_from_f32(Ah, A, maxn);
	nn_bf16_from_f32(Bh, Bm, maxn);
	/* the bf16 peak: the engine's best rate on a large square product (2048³, operands already
	 * bf16), measured beside every shape (bf16_rate_pair) */
	double bf16_peak = 0, bf16_peak_cpu = 0, step_s_cpu = 0;
	/* [0] openblas, [1] onednn fp32, [2] onednn bf16 */
	double step_flop[3] = { 0, 0, 0 }, step_s[3] = { 0, 0, 0 };
	for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
		int M = shapes[s].M, N = shapes[s].N, K = shapes[s].K;
		int lda = shapes[s].ta == 'N' ? K : M, ldb = shapes[s].tb == 'N' ? N : K;
		double flop = 2.0 * M * N * K, g16[2] = { 0, 0 }, p16[2] = { 0, 0 };
		for (int be = 0; be < 3; be++) {
			double best = 1e30;
			if (be < 2) {
				nn_gemm_set_backend(be ? NN_GEMM_ONEDNN : NN_GEMM_OPENBLAS);
				int reps = (int)(1e9 / flop) + 1;
				for (int r = 0; r < 3; r++) {
					int64_t t0 = clock_ns();
					for (int i = 0; i < reps; i++)
						nn_gemm(shapes[s].ta, shapes[s].tb, M, N, K, 1.0f, A, lda, Bm, ldb, 0.0f, C, N);
					double sec = (double)(clock_ns() - t0) * 1e-9 / reps;
					best = sec < best ? sec : best;
				}
			} else {
				bf16_rate_pair(shapes[s].ta, shapes[s].tb, M, N, K, Ah, Bh, C, g16, p16);
				if (g16[0] <= 0)
					continue;
				best = flop / (g16[0] * 1e9);
				step_s_cpu += shapes[s].count * flop / (g16[1] * 1e9);
				bf16_peak = p16[0] > bf16_peak ? p16[0] : bf16_peak;
				bf16_peak_cpu = p16[1] > bf16_peak_cpu ? p16[1] : bf16_peak_cpu;
			}
			step_flop[be] += shapes[s].count * flop;
			step_s[be] += shapes[s].count * best;
			double g = flop / best * 1e-9;
			printf("{\"bench\":\"gemm\",\"shape\":\"%s\",\"M\":%d,\"N\":%d,\"K\":%d,\"trans\":\"%c%c\","
			       "\"per_step\":%d,\"backend\":\"%s\",\"threads\":%d,\"gflops\":%.1f",
			       shapes[s].name, M, N, K, shapes[s].ta, shapes[s].tb, shapes[s].count,
			       be == 2 ? "onednn_bf16" : be ? "onednn" : "openblas", nn_get_threads(), g);
			if (be == 2)
				printf(",\"square_2048_gflops\":%.1f,\"share_of_bf16_peak\":%.3f,\"gflops_cpu\":%.1f,"
				       "\"square_2048_gflops_cpu\":%.1f,\"share_of_bf16_peak_cpu\":%.3f",
				       p16[0], g / p16[0], g16[1], p16[1], g16[1] / p16[1]);
			printf("}\n");
			fflush(stdout);
		}
	}
	if (bf16_peak > 0)
		printf("{\"bench\":\"bf16_peak\",\"M\":2048,\"N\":2048,\"K\":2048,\"threads\":%d,\"peak_gflops\":%.1f,"
		       "\"peak_gflops_cpu\":%.1f,\"over_fp32_fma_peak\":%.2f,\"onednn_isa\":\"%s\"}\n",
		       nn_get_threads(), bf16_peak, bf16_peak_cpu, peak > 0 ? bf16_peak / peak : 0.0, nn_dnnl_isa());
	struct nn_config c;
	nn_config_preset("small", &c);
	double fpt = nn_flops_per_token(&c, 256);
	for (int be = 0; be < 3; be++) {
		if (step_s[be] <= 0)
			continue;
		double tps = 2048.0 / step_s[be], g = step_flop[be] / step_s[be] * 1e-9, pk = be == 2 ? bf16_peak : peak;
		printf("{\"bench\":\"gemm_step\",\"preset\":\"small\",\"B\":8,\"T\":256,\"backend\":\"%s\","
		       "\"threads\":%d,\"gemm_gflop_per_step\":%.1f,\"gemm_s_per_step\":%.4f,\"gflops\":%.1f,"
		       "\"share_of_peak\":%.3f,\"peak\":\"%s\",\"tokens_per_s_if_only_gemms\":%.1f,\"mfu_if_only_gemms\":%.3f}\n",
		       be == 2 ? "onednn_bf16" : be ? "onednn" : "openblas", nn_get_threads(), step_flop[be] * 1e-9,
		       step_s[be], g, pk > 0 ? g / pk : 0.0, be == 2 ? "bf16_peak" : "fma_peak", tps,
		       peak > 0 ? fpt * tps * 1e-9 / peak : 0.0);
	}
	/* the same by CPU time: the step's bf16 GEMMs against the square product's best CPU-time rate */
	if (step_s_cpu > 0)
		printf("{\"bench\":\"gemm_step_cpu\",\"preset\":\"small\",\"B\":8,\"T\":256,\"backend\":\"onednn_bf16\","
		       "\"threads\":%d,\"gemm_s_per_step\":%.4f,\"gflops\":%.1f,\"bf16_peak_gflops_cpu\":%.1f,"
		       "\"share_of_peak\":%.3f}\n",
		       nn_get_threads(), step_s_cpu, step_flop[2] / step_s_cpu * 1e-9, bf16_peak_cpu,
		       bf16_peak_cpu > 0 ? step_flop[2] / step_s_cpu * 1e-9 / bf16_peak_cpu : 0.0);
	fflush(stdout);
	nn_gemm_set_backend(keep);
	free(A), free(Bm), free(C), free(Ah), free(Bh);
}

/* The attention kernels on `small`'s shape (B 8, T 256, C 512, 8 heads of 64), forward and
 * backward, fp32 (nn_attention_*) and bf16 (nn_attention_*_bf16: AMX tiles where the CPU has them,
 * reading q, k, v in bf16 and writing the gradient's bf16 copy as the model does there):
 * GFLOP/s counted as the profiler's op ranges count them (forward 4·N·T·C, backward 8·N·T·C: the
 * full T×T products, twice the causal half the kernels compute), best of 5 by wall time and by
 * CPU time ÷ threads. */
static void bench_attention(void)
{
	const int B = 8, T = 256, C = 512, H = 8, N = B * T;
	size_t nq = (size_t)N * 3 * C, no = (size_t)N * C;
	float *qkv = malloc(nq * 4), *dqkv = aligned_alloc(64, nq * 4), *out = malloc(no * 4), *dout = malloc(no * 4),
	      *lse = malloc((size_t)B * H * T * 4), *scr = malloc(nn_attention_scratch_floats(T, C, H, 0) * 4);
	uint16_t *out_h = malloc(no * 2), *qkv_h = malloc(nq * 2), *dqkv_h = malloc(nq * 2);
	if (!qkv || !dqkv || !out || !dout || !lse || !scr || !out_h || !qkv_h || !dqkv_h)
		return;
	uint64_t st = rng_seed(5, 5);
	rng_normal(&st, qkv, nq, 0, 1);
	rng_normal(&st, dout, no, 0, 1);
	nn_bf16_from_f32(qkv_h, qkv, nq);
	const uint16_t *qh = nn_attention_bf16_tiles() ? qkv_h : NULL;
	for (int bf = 0; bf < 2; bf++)
		for (int dir = 0; dir < 2; dir++) {
			double best = 1e30, best_cpu = 1e30, flop = (dir ? 8.0 : 4.0) * N * T * C;
			for (int r = 0; r < 6; r++) {
				int64_t t0 = clock_ns();
				double c0 = process_cpu_s();
				if (dir == 0 && bf)
					nn_attention_forward_bf16(out, out_h, lse, scr, qkv, qh, B, T, C, H);
				else if (dir == 0)
					nn_attention_forward(out, lse, scr, qkv, B, T, C, H);
				else if (bf)
					nn_attention_backward_bf16(dqkv, dqkv_h, NULL, scr, dout, qkv, qh, out, lse, B, T, C, H);
				else
					nn_attention_backward(dqkv, scr, dout, qkv, out, lse, B, T, C, H);
				double sec = (double)(clock_ns() - t0) * 1e-9, cpu = (process_cpu_s() - c0) / nn_get_threads();
				if (r == 0)
					continue; /* warm-up */
				best = sec < best ? sec : best;
				best_cpu = cpu < best_cpu ? cpu : best_cpu;
			}
			printf("{\"bench\":\"attention\",\"dir\":\"%s\",\"precision\":\"%s\",\"on\":\"%s\",\"B\":%d,"
			       "\"T\":%d,\"C\":%d,\"H\":%d,\"threads\":%d,\"ms\":%.2f,\"gflops\":%.1f,\"ms_cpu\":%.2f,"
			       "\"gflops_cpu\":%.1f}\n",
			       dir ? "backward" : "forward", bf ? "bf16" : "fp32",
			       bf && nn_attention_bf16_tiles() ? "amx" : "avx512_fp32", B, T, C, H, nn_get_threads(), best * 1e3,
			       flop / best * 1e-9, best_cpu * 1e3, flop / best_cpu * 1e-9);
			fflush(stdout);
		}
	free(qkv), free(dqkv), free(out), free(dout), free(lse), free(scr), free(out_h), free(qkv_h), free(dqkv_h);
}

int main(int argc, char **argv)
{
	nn_blas_fix_core(argc, argv);
	int steps = 6, warmup = 2, threads = 0, help = 0, no_gemm = 0, no_attention = 0, no_peak = 0, batch = 8, seq = 256;
	double given_peak = 0;
	const char *preset = "all", *backend = NULL, *precision = "fp32,bf16";
	struct opt_spec specs[] = {
		{ .name = "steps", .type = OPT_INT, .dest = &steps, .min = 1, .max = 10000, .metavar = "N",
		  .help = "timed steps per preset (median reported)" },
		{ .name = "warmup", .type = OPT_INT, .dest = &warmup, .min = 0, .max = 1000, .metavar = "N",
		  .help = "untimed steps first" },
		{ .name = "threads", .type = OPT_INT, .dest = &threads, .min = 0, .max = 1024, .metavar = "N",
		  .help = "threads (0: cores / ranks on the host)" },
		{ .name = "preset", .type = OPT_STR, .dest = &preset, .choices = "tiny|small|gpt2-124m|all|none",
		  .help = "model preset (none: only the peak and the GEMM table)" },
		{ .name = "batch", .type = OPT_INT, .dest = &batch, .min = 1, .max = 4096, .metavar = "B",
		  .help = "sequences per step (default 8)" },
		{ .name = "seq", .type = OPT_INT, .dest = &seq, .min = 1, .max = 1048576, .metavar = "T",
		  .help = "sequence length (default 256)" },
		{ .name = "backend", .type = OPT_STR, .dest = &backend, .choices = "openblas|onednn",
		  .help = "GEMM backend for the training step (default: nn's default)" },
		{ .name = "precision", .type = OPT_STR, .dest = &precision, .choices = "fp32|bf16|fp16|fp32,bf16|all",
		  .help = "GEMM precision of the training step (default fp32,bf16: both)" },
		{ .name = "no-gemm", .type = OPT_FLAG, .dest = &no_gemm, .help = "skip the GEMM comparison" },
		{ .name = "no-attention", .type = OPT_FLAG, .dest = &no_attention,
		  .help = "skip the attention kernels (fp32 and bf16 on small's shape)" },
		{ .name = "no-peak", .type = OPT_FLAG, .dest = &no_peak, .help = "skip measuring the FMA peak" },
		{ .name = "peak", .type = OPT_FLOAT, .dest = &given_peak, .min = 0, .max = 1e9, .metavar = "GFLOPS",
		  .help = "with --no-peak: the peak to compute MFU against (measured by an earlier run)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "this help" },
		{ 0 },
	};
	int npos;
	int rc = opt_parse("bench_nn", specs, argc - 1, argv + 1, NULL, 0, &npos);
	if (rc || help) {
		if (rc)
			fprintf(stderr, "bench_nn: %s\n", ascent_errmsg());
		opt_usage(rc ? stderr : stdout, "bench_nn", "[options]", specs);
		return rc ? 2 : 0;
	}
	nn_set_threads(threads);
	double peak = given_peak;
	if (!no_peak) {
		peak = measure_peak_gflops(nn_get_threads());
		printf("{\"bench\":\"fma_peak\",\"threads\":%d,\"peak_gflops\":%.1f}\n", nn_get_threads(), peak);
		fflush(stdout);
	}
	if (!no_gemm)
		bench_gemm(peak);
	if (!no_attention)
		bench_attention();
	if (backend)
		nn_gemm_set_backend(strcmp(backend, "onednn") == 0 ? NN_GEMM_ONEDNN : NN_GEMM_OPENBLAS);
	const char *list[3] = { "tiny", "small", "gpt2-124m" };
	static const enum nn_precision precs[3] = { NN_FP32, NN_BF16, NN_FP16 };
	for (int i = 0; i < 3; i++) {
		if (strcmp(preset, "all") && strcmp(preset, list[i]))
			continue;
		for (int k = 0; k < 3; k++) {
			const char *pn = nn_precision_name(precs[k]);
			if (strcmp(precision, "all") && !strstr(precision, pn))
				continue;
			rc = bench_preset(list[i], batch, seq, steps, warmup, peak, precs[k]);
			if (rc) {
				fprintf(stderr, "bench_nn: %s\n", ascent_errmsg());
				return 1;
			}
		}
	}
	return 0;
}
