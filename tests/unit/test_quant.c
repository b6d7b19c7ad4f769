/* tests/unit/test_quant.c — quant/ kernels and math: quantize/dequantize bounds and rounding,
 * each observer/calibrator against hand-computed values, the INT8 GEMM (the default backend's
 * kernel — AMX where present, else VNNI —, fused dequantize, oneDNN s8s8s32/u8s8s32 and its offset
 * semantics) bit-exact against the int32 reference on odd shapes, and the AMX path bit-identical to
 * the VNNI kernel (s32 and f32). The model-level tests are in test_quant_model.c. */
#include "quant/quant.h"

#include <criterion/criterion.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

static int8_t *rnd_s8(size_t n, uint64_t seed)
{
	int8_t *x = malloc(n ? n : 1);
	cr_assert_not_null(x);
	uint64_t st = rng_seed(seed, 3);
	for (size_t i = 0; i < n; i++)
		x[i] = (int8_t)((int)(rng_u32(&st) % 255) - 127);
	return x;
}

static float *rnd_f(size_t n, uint64_t seed, float std)
{
	float *x = malloc(n * sizeof *x);
	cr_assert_not_null(x);
	uint64_t st = rng_seed(seed, 5);
	rng_normal(&st, x, n, 0.0f, std);
	return x;
}

/* ------------------------------------------------------------------------------------------ */

Test(quant, rounding_is_half_to_even_and_clamped)
{
	cr_assert_eq(nn_quant_q(0.5f, 1.0f), 0);
	cr_assert_eq(nn_quant_q(1.5f, 1.0f), 2);
	cr_assert_eq(nn_quant_q(2.5f, 1.0f), 2);
	cr_assert_eq(nn_quant_q(-0.5f, 1.0f), 0);
	cr_assert_eq(nn_quant_q(-1.5f, 1.0f), -2);
	cr_assert_eq(nn_quant_q(126.6f, 1.0f), 127);
	cr_assert_eq(nn_quant_q(1000.0f, 1.0f), 127);
	cr_assert_eq(nn_quant_q(-1000.0f, 1.0f), -127);
	cr_assert_eq(nn_quant_q(NAN, 1.0f), 0);
	cr_assert_float_eq(nn_quant_scale(12.7f), 0.1f, 1e-7);
	cr_assert_eq(nn_quant_scale(0.0f), 1.0f);
}

/* The vectorized row kernels of the INT8 path give exactly nn_quant_q's codes: ties at ±k.5 (half to
 * even), the clamp, ±inf, NaN, and a K that leaves a scalar tail. */
Test(quant, row_kernels_match_nn_quant_q)
{
	int K = 16 * 9 + 7;
	float *x = rnd_f((size_t)K, 21, 40.0f);
	const float special[] = { 0.5f, 1.5f, 2.5f, -0.5f, -2.5f, 126.5f, -126.5f, 127.5f, 300.0f, -300.0f,
				  INFINITY, -INFINITY, NAN, -0.0f, 1e-30f, 63.5f };
	for (int i = 0; i < 16; i++)
		x[3 + 9 * i] = special[i];
	x[K - 1] = 2.5f;   /* in the scalar tail */
	x[K - 2] = NAN;
	uint8_t *u = malloc((size_t)K);
	int8_t *q = malloc((size_t)K);
	cr_assert(u && q);
	const float invs[] = { 1.0f, 0.37f, 3.0f };
	for (int t = 0; t < 3; t++) {
		quant_row_codes_u8(x, K, invs[t], u);
		quant_row_codes_s8(x, K, invs[t], q);
		for (int k = 0; k < K; k++) {
			int want = nn_quant_q(x[k], invs[t]);
			cr_assert_eq((int)q[k], want, "s8 x[%d] = %g inv %g: %d, nn_quant_q %d", k, x[k], invs[t], q[k], want);
			cr_assert_eq((int)u[k], want + 128, "u8 x[%d] = %g: %d", k, x[k], u[k]);
		}
	}
	/* amax ignores NaN like the scalar loop, and sees an inf */
	float m = 0.0f;
	for (int k = 0; k < K; k++)
		if (fabsf(x[k]) > m)
			m = fabsf(x[k]);
	cr_assert_eq(nn_quant_row_amax(x, K), m);
	x[3 + 9 * 10] = 0.0f;
	x[3 + 9 * 11] = 0.0f;
	m = 0.0f;
	for (int k = 0; k < K; k++)
		if (fabsf(x[k]) > m)
			m = fabsf(x[k]);
	cr_assert_eq(nn_quant_row_amax(x, K), m);
	cr_assert_eq(nn_quant_row_amax(x, 0), 0.0f);
	free(x);
	free(u);
	free(q);
}

Test(quant, weight_per_channel_bounds_and_layout)
{
	int IC = 37, OC = 11;
	float *w = rnd_f((size_t)IC * OC, 1, 0.05f), *wd = malloc((size_t)IC * OC * sizeof(float));
	w[3 * OC + 4] = 0.9f;    /* an outlier in channel 4 only */
	for (int i = 0; i < IC; i++)
		w[i * OC + 7] = 0.0f; /* an all-zero channel */
	int8_t q[37 * 11];
	float s[11];
	quant_weight_quantize(w, IC, OC, 0, q, s);
	quant_weight_dequantize(q, s, IC, OC, wd);
	for (int o = 0; o < OC; o++) {
		float amax = 0;
		for (int i = 0; i < IC; i++)
			amax = fmaxf(amax, fabsf(w[i * OC + o]));
		cr_assert_float_eq(s[o], o == 7 ? 1.0f : amax / 127.0f, 1e-9, "channel %d scale", o);
		for (int i = 0; i < IC; i++) {
			int v = q[o * IC + i];
			cr_assert(v >= -127 && v <= 127);
			cr_assert_eq(v, (int)rintf(w[i * OC + o] / s[o]), "code (%d,%d)", o, i);
			cr_assert_leq(fabsf(w[i * OC + o] - s[o] * v), s[o] * 0.5f * (1 + 1e-6f));
			cr_assert_eq(wd[i * OC + o], s[o] * (float)v);
		}
	}
	cr_assert_eq(q[4 * IC + 3], 127);    /* the channel max maps to +127 */
	/* per-tensor: one scale, the tensor's amax / 127 */
	quant_weight_quantize(w, IC, OC, 1, q, s);
	for (int o = 0; o < OC; o++)
		cr_assert_float_eq(s[o], 0.9f / 127.0f, 1e-9);
	free(w);
	free(wd);
}

Test(quant, activations_dynamic_and_static)
{
	float x[2 * 4] = { 1.0f, -2.54f, 0.01f, 0.5f, 0, 0, 0, 0 };
	int8_t q[8];
	float s[2];
	quant_act_dynamic(x, 2, 4, q, s);
	cr_assert_float_eq(s[0], 2.54f / 127, 1e-9);
	cr_assert_eq(s[1], 1.0f);
	cr_assert_eq(q[0], 50);     /* 1/0.02 = 50 */
	cr_assert_eq(q[1], -127);
	cr_assert_eq(q[2], 0);      /* 0.5 → half to even: 0 */
	cr_assert_eq(q[3], 25);
	float f[8];
	nn_fq_act_dynamic(f, x, 2, 4);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(f[i], s[0] * q[i]);
	nn_fq_act_static(f, x, 4, 0.01f);
	cr_assert_float_eq(f[0], 1.0f, 1e-6);
	cr_assert_float_eq(f[1], -1.27f, 1e-6);  /* clipped at -127·s */
	cr_assert_float_eq(f[2], 0.01f, 1e-8);
}

/* ------------------------------------------------------------------------------------------ */
/* Observers */

Test(quant, observer_minmax_and_ema)
{
	struct quant_observer o;
	quant_observer_init(&o);
	float b1[] = { -1.0f, 2.0f }, b2[] = { -3.0f, 1.0f }, b3[] = { 0.5f, 4.0f };
	quant_observer_update(&o, b1, 2);
	quant_observer_update(&o, b2, 2);
	quant_observer_update(&o, b3, 2);
	cr_assert_float_eq(quant_observer_amax(&o, QUANT_MINMAX, 0), 4.0, 1e-12);
	/* ema: min -1 → -1 + .01(-3+1) = -1.02 → -1.02 + .01(0.5+1.02) = -1.0048;
	 *      max  2 → 2 + .01(1-2) = 1.99 → 1.99 + .01(4-1.99) = 2.0101 */
	cr_assert_float_eq(o.ema_min, -1.0048, 1e-12);
	cr_assert_float_eq(o.ema_max, 2.0101, 1e-12);
	cr_assert_float_eq(quant_observer_amax(&o, QUANT_EMA, 0), 2.0101, 1e-12);
	cr_assert_float_eq(o.count, 6, 0);
}

Test(quant, observer_histogram_grows_without_losing_samples)
{
	struct quant_observer o;
	quant_observer_init(&o);
	float a[] = { 1.0f, 0.25f }, b[] = { 3.0f };
	quant_observer_update(&o, a, 2);
	cr_assert_float_eq(o.range, 1.0, 0);
	quant_observer_update(&o, b, 1);
	cr_assert_float_eq(o.range, 4.0, 0);      /* doubled twice */
	double tot = 0;
	for (int i = 0; i < QUANT_HIST_BINS; i++)
		tot += o.hist[i];
	cr_assert_float_eq(tot, 3, 0);
	/* 0.25 was in bin 512 of [0,1]; after two merges it is in bin 128 of [0,4] */
	cr_assert_float_eq(o.hist[128], 1, 0);
	cr_assert_float_eq(o.hist[QUANT_HIST_BINS / 4 - 1], 1, 0);   /* 1.0 sat in the top bin of [0,1] */
	cr_assert_float_eq(o.hist[1536], 1, 0);                      /* 3.0 → bin 3/4·2048 */
}

/* Issue 14 finding 1: a NaN or Inf input indexed the histogram with (int)(NaN·k) and crashed PTQ. Now
 * non-finite samples are counted and left out; finite ones are observed as usual, in every order. */
Test(quant, observer_counts_and_skips_non_finite)
{
	struct quant_observer o;
	quant_observer_init(&o);
	float a[] = { NAN, 1.0f, INFINITY, -2.0f, -INFINITY }, b[] = { NAN, NAN }, c[] = { 3.5f, NAN };
	quant_observer_update(&o, b, 2);          /* only NaN: nothing observed yet */
	cr_assert_eq(o.batches, 0);
	quant_observer_update(&o, a, 5);
	quant_observer_update(&o, c, 2);
	cr_assert_eq(o.nonfinite, 6);
	cr_assert_float_eq(o.count, 3, 0);
	cr_assert_float_eq(o.min, -2.0, 0);
	cr_assert_float_eq(o.max, 3.5, 0);
	cr_assert_float_eq(o.range, 4.0, 0);
	double tot = 0;
	for (int i = 0; i < QUANT_HIST_BINS; i++)
		tot += o.hist[i];
	cr_assert_float_eq(tot, 3, 0);
	for (int m = 0; m < QUANT_NMETHODS; m++) {
		double t = quant_observer_amax(&o, (enum quant_method)m, 99.99);
		cr_assert(isfinite(t) && t > 0 && t <= 3.5, "%s: %g", quant_method_name((enum quant_method)m), t);
	}
	/* the largest finite float grows the range (a double) and lands inside the histogram */
	float big[] = { 3.4e38f, 1.0f };
	quant_observer_update(&o, big, 2);
	tot = 0;
	for (int i = 0; i < QUANT_HIST_BINS; i++)
		tot += o.hist[i];
	cr_assert(isfinite(o.range) && o.range >= 3.4e38 && tot == 5, "range %g, %g samples", o.range, tot);
}

Test(quant, observer_percentile)
{
	/* 1000 values 0.001 … 1.000: the 99th percentile is 0.990; the histogram answers with the
	 * upper edge of its bin, within one bin width (1/2048) above. */
	struct quant_observer o;
	quant_observer_init(&o);
	float x[1000];
	for (int i = 0; i < 1000; i++)
		x[i] = (float)(i + 1) / 1000.0f;
	quant_observer_update(&o, x, 1000);
	double t = quant_observer_amax(&o, QUANT_PERCENTILE, 99.0);
	cr_assert(t >= 0.990 - 1e-6 && t <= 0.990 + 1.0 / 2048 + 1e-6, "percentile %g", t);
	cr_assert_float_eq(quant_observer_amax(&o, QUANT_PERCENTILE, 100.0), 1.0, 1e-9);
}

/* The MSE objective of quant_observer_amax, written out from its definition. */
static double mse_at(const struct quant_observer *o, double t)
{
	double w = o->range / QUANT_HIST_BINS, s = t / 127, e = 0;
	for (int b = 0; b < QUANT_HIST_BINS; b++) {
		double c = (b + 0.5) * w, r = fmin(rint(c / s), 127);
		e += o->hist[b] * (c - r * s) * (c - r * s);
	}
	return e;
}

Test(quant, observer_mse_clips_when_the_mass_pays_for_it)
{
	/* 10^6 samples uniform in [0, 0.5) and one at 64. At threshold t the rounding error of the
	 * mass is ≈ N·s²/12 with s = t/127, the outlier costs (64 − t)²; the sum is smallest at
	 * t = 64 / (1 + N/(12·127²)) = 64 / 6.167 ≈ 10.4 — far below min-max's 64. The histogram
	 * (bin width 64/2048) holds the mass in 16 bins, so its answer lies near, not at, 10.4. */
	struct quant_observer o;
	quant_observer_init(&o);
	size_t n = 1000000;
	float *x = malloc((n + 1) * sizeof *x);
	for (size_t i = 0; i < n; i++)
		x[i] = 0.5f * ((float)i + 0.5f) / (float)n;
	x[n] = 64.0f;
	quant_observer_update(&o, x, n + 1);
	double t = quant_observer_amax(&o, QUANT_MSE, 0);
	cr_assert(t >= 6.0 && t <= 13.0, "mse threshold %g, expected about 10.4", t);
	/* it is the argmin of the objective over the bin edges */
	double w = o.range / QUANT_HIST_BINS, best = INFINITY, tb = 0;
	for (int b = 1; b <= QUANT_HIST_BINS; b++) {
		double e = mse_at(&o, b * w);
		if (e < best) {
			best = e;
			tb = b * w;
		}
	}
	cr_assert_float_eq(t, tb, 1e-12);
	cr_assert_lt(mse_at(&o, t), mse_at(&o, 64.0) / 5);
	/* a lone outlier among 100 samples is worth keeping: t within the top bin of 64 */
	quant_observer_init(&o);
	quant_observer_update(&o, x + n - 100, 101);
	cr_assert_geq(quant_observer_amax(&o, QUANT_MSE, 0), 64.0 - 2 * 64.0 / 2048);
	free(x);
}

Test(quant, kl_threshold_hand_computed)
{
	/* 4 bins, 2 levels, thresholds i = 2 … 4.
	 * hist = {4, 2, 0, 1}, total 7.
	 *  i=2: P = {4, 2+1} = {4,3}; Q: groups of 1 → {4,2} → normalised P {4/7,3/7}, Q {4/6,2/6}
	 *       KL = 4/7 ln((4/7)/(4/6)) + 3/7 ln((3/7)/(2/6)) = 0.0196…
	 *  i=3: P = {4,2,1}; merged = 1, groups {0},{1,2}: Q = {4, 2, 2}/8 → P/7: KL = 4/7 ln(8/7) +
	 *       2/7 ln(8/7) + 1/7 ln((1/7)/(2/8))
	 *  i=4: P = {4,2,0,1}; groups {0,1},{2,3}: Q = {3,3,0,1}: KL = 4/7 ln(4/3) + 2/7 ln(2/3) */
	double h[4] = { 4, 2, 0, 1 }, kl;
	double k2 = 4.0 / 7 * log((4.0 / 7) / (4.0 / 6)) + 3.0 / 7 * log((3.0 / 7) / (2.0 / 6));
	double k3 = 4.0 / 7 * log(8.0 / 7) + 2.0 / 7 * log(8.0 / 7) + 1.0 / 7 * log((1.0 / 7) / (2.0 / 8));
	double k4 = 4.0 / 7 * log(4.0 / 3) + 2.0 / 7 * log(2.0 / 3);
	double best = fmin(k2, fmin(k3, k4));
	int want = best == k2 ? 2 : best == k3 ? 3 : 4;
	int i = quant_kl_threshold(h, 4, 2, 2, &kl);
	cr_assert_eq(i, want, "threshold %d, want %d (KLs %g %g %g)", i, want, k2, k3, k4);
	cr_assert_float_eq(kl, best, 1e-12);
	/* a flat 2048-bin histogram: Q equals P only at the full range */
	double *flat = malloc(2048 * sizeof *flat);
	for (int j = 0; j < 2048; j++)
		flat[j] = 10;
	cr_assert_eq(quant_kl_threshold(flat, 2048, 128, 128, &kl), 2048);
	cr_assert_float_eq(kl, 0, 1e-12);
	free(flat);
}

/* ------------------------------------------------------------------------------------------ */
/* INT8 GEMM */

static void check_gemm(int M, int N, int K)
{
	int8_t *A = rnd_s8((size_t)M * K, (uint64_t)(M * 131 + K)), *B = rnd_s8((size_t)N * K, (uint64_t)(N * 7 + K));
	/* extremes: the worst case for saturating paths */
	A[0] = -127;
	B[0] = -127;
	if (K > 1) {
		A[1] = 127;
		B[1] = -127;
	}
	int32_t *ref = malloc((size_t)M * N * 4), *got = malloc((size_t)M * N * 4);
	quant_gemm_s8s8s32_ref(M, N, K, A, K, B, K, ref, N);
	memset(got, 0x55, (size_t)M * N * 4);
	cr_assert_eq(quant_gemm_s8s8s32(M, N, K, A, K, B, K, got, N), 0);
	cr_assert_arr_eq(got, ref, (size_t)M * N * 4, "%s M=%d N=%d K=%d", quant_gemm_backend_name(quant_gemm_get_backend()), M,
			 N, K);
	memset(got, 0x55, (size_t)M * N * 4);
	cr_assert_eq(quant_gemm_s8s8s32_f32(M, N, K, A, K, B, K, got, N), 0, "%s", ascent_errmsg());
	cr_assert_arr_eq(got, ref, (size_t)M * N * 4, "f32 M=%d N=%d K=%d", M, N, K);
	/* oneDNN's INT8 GEMM saturates 16-bit pair sums without VNNI (its header's warning): it is held
	 * to the reference only where it is exact, and ascent never picks it elsewhere */
	if (!quant_gemm_onednn_exact()) {
		cr_assert_neq(quant_gemm_get_backend(), QUANT_GEMM_ONEDNN);
		free(ref), free(got), free(A), free(B);
		return;
	}
	memset(got, 0x55, (size_t)M * N * 4);
	cr_assert_eq(quant_gemm_s8s8s32_onednn(M, N, K, A, K, B, K, got, N), 0, "%s", ascent_errmsg());
	cr_assert_arr_eq(got, ref, (size_t)M * N * 4, "onednn s8s8 M=%d N=%d K=%d", M, N, K);
	uint8_t *Au = malloc((size_t)M * K);
	for (size_t i = 0; i < (size_t)M * K; i++)
		Au[i] = (uint8_t)(A[i] + 128);
	memset(got, 0x55, (size_t)M * N * 4);
	cr_assert_eq(quant_gemm_u8s8s32_onednn(M, N, K, Au, K, B, K, got, N), 0, "%s", ascent_errmsg());
	cr_assert_arr_eq(got, ref, (size_t)M * N * 4, "onednn u8s8 (ao=128) M=%d N=%d K=%d", M, N, K);
	free(A);
	free(B);
	free(Au);
	free(ref);
	free(got);
}

Test(quant, gemm_bit_exact_on_odd_shapes)
{
	static const int shapes[][3] = { { 1, 1, 1 }, { 1, 17, 3 }, { 1, 64, 256 }, { 7, 33, 5 }, { 6, 16, 4 },
					 { 13, 100, 67 }, { 64, 129, 130 }, { 65, 48, 257 }, { 3, 1, 9 } };
	for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
		check_gemm(shapes[i][0], shapes[i][1], shapes[i][2]);
}

/* The fp32 path past one chunk of K: all codes at ±127 make every partial sum as large as it gets
 * (3000 · 16129 > 2^25), where a single fp32 GEMM would round; chunks of 1024 stay exact. */
Test(quant, gemm_f32_exact_past_2_pow_24)
{
	int M = 3, N = 5, K = 3000;
	int8_t *A = malloc((size_t)M * K), *B = malloc((size_t)N * K);
	for (int i = 0; i < M * K; i++)
		A[i] = (int8_t)(i % 97 == 3 ? 127 : -127);
	for (int i = 0; i < N * K; i++)
		B[i] = (int8_t)(i % 89 == 5 ? 126 : -127);
	int32_t ref[15], got[15];
	quant_gemm_s8s8s32_ref(M, N, K, A, K, B, K, ref, N);
	cr_assert_gt(ref[0], 1 << 25);
	cr_assert_eq(quant_gemm_s8s8s32_f32(M, N, K, A, K, B, K, got, N), 0, "%s", ascent_errmsg());
	cr_assert_arr_eq(got, ref, sizeof ref, "fp32 path, K=%d", K);
	free(A);
	free(B);
}

Test(quant, gemm_worst_case_magnitudes)
{
	/* K = 2048 of (-127)·(-127): 33 M, far below 2^31, and no 16-bit intermediate anywhere */
	int M = 2, N = 20, K = 2051;
	int8_t *A = malloc((size_t)M * K), *B = malloc((size_t)N * K);
	memset(A, -127, (size_t)M * K);
	memset(B, -127, (size_t)N * K);
	int32_t C[40];
	cr_assert_eq(quant_gemm_s8s8s32(M, N, K, A, K, B, K, C, N), 0);
	for (int i = 0; i < M * N; i++)
		cr_assert_eq(C[i], 127 * 127 * K);
	free(A);
	free(B);
}

/* oneDNN's AMX-INT8 matmul and our VNNI kernel on the same packed weights and u8 activations: the
 * same s32 sums (exact integers, both equal to the reference) and bit-identical f32 after the
 * fused dequantization, with and without bias, per-row and per-tensor scales. The AMX kernel must
 * actually run where M >= 4 (oneDNN names it; below, the VNNI kernel runs by design), so the
 * comparison cannot pass by running the VNNI kernel twice; M = 130 covers the 64-row blocks and a
 * 2-row remainder the VNNI kernel finishes. Skipped where the CPU or ONEDNN_MAX_CPU_ISA leaves no AMX. */
Test(quant, gemm_amx_equals_vnni_bit_for_bit)
{
	if (!quant_have_amx())
		cr_skip_test("no AMX here (cpu or ONEDNN_MAX_CPU_ISA=%s, oneDNN dispatches %s): nothing to compare",
			     getenv("ONEDNN_MAX_CPU_ISA") ? getenv("ONEDNN_MAX_CPU_ISA") : "unset", nn_dnnl_isa());
	enum quant_gemm_backend keep = quant_gemm_get_backend();
	static const int shapes[][3] = { { 1, 64, 256 }, { 2, 100, 37 }, { 3, 17, 3 }, { 7, 33, 5 }, { 13, 100, 67 },
					 { 64, 129, 130 }, { 65, 48, 257 }, { 37, 1536, 512 }, { 130, 512, 2048 } };
	for (size_t si = 0; si < sizeof shapes / sizeof shapes[0]; si++) {
		int M = shapes[si][0], N = shapes[si][1], K = shapes[si][2], Kp = (K + 3) & ~3;
		int8_t *A = rnd_s8((size_t)M * K, (uint64_t)(M * 31 + K)), *B = rnd_s8((size_t)N * K, (uint64_t)(N * 5 + K));
		A[0] = B[0] = -127;
		struct quant_packed p;
		cr_assert_eq(quant_pack_b(&p, B, N, K, K), 0, "%s", ascent_errmsg());
		/* oneDNN 2.6 picks its VNNI kernel, not AMX, for K < 16 (then the VNNI kernel runs here) */
		if (K >= 64)
			cr_assert_not_null(p.amx, "no AMX weight layout for N=%d K=%d", N, K);
		uint8_t *Au = calloc((size_t)M * Kp, 1);
		for (int m = 0; m < M; m++)
			for (int k = 0; k < K; k++)
				Au[(size_t)m * Kp + k] = (uint8_t)(A[(size_t)m * K + k] + 128);
		float *as = rnd_f((size_t)M, 20, 0.01f), *bs = rnd_f((size_t)N, 21, 0.01f), *bias = rnd_f((size_t)N, 22, 1);
		size_t n = (size_t)M * N;
		int32_t *ref = malloc(n * 4), *ca = malloc(n * 4), *cv = malloc(n * 4);
		float *ya = malloc(n * 4), *yv = malloc(n * 4);
		quant_gemm_s8s8s32_ref(M, N, K, A, K, B, K, ref, N);
		for (int pass = 0; pass < 3; pass++) {   /* bias, none, per-tensor scale */
			const float *bb = pass == 0 ? bias : NULL;
			int stride = pass == 2 ? 0 : 1;
			quant_gemm_set_backend(QUANT_GEMM_AMX);
			const char *impl = quant_gemm_packed_impl(M, &p);
			if (M >= 4 && p.amx)
				cr_assert(strstr(impl, "amx") != NULL, "M=%d N=%d K=%d ran %s, not AMX", M, N, K, impl);
			memset(ca, 0x55, n * 4);
			quant_gemm_u8s8_packed_s32(M, Au, Kp, &p, ca, N);
			quant_gemm_u8s8_packed_f32(M, Au, Kp, &p, as, stride, bs, bb, ya, N);
			quant_gemm_set_backend(QUANT_GEMM_VNNI);
			cr_assert_str_eq(quant_gemm_packed_impl(M, &p), "ascent:avx512_vnni");
			if (!p.amx)
				cr_assert_str_eq(impl, "ascent:avx512_vnni");
			memset(cv, 0x55, n * 4);
			quant_gemm_u8s8_packed_s32(M, Au, Kp, &p, cv, N);
			quant_gemm_u8s8_packed_f32(M, Au, Kp, &p, as, stride, bs, bb, yv, N);
			cr_assert_arr_eq(ca, ref, n * 4, "amx s32 vs reference, M=%d N=%d K=%d", M, N, K);
			cr_assert_arr_eq(cv, ref, n * 4, "vnni s32 vs reference, M=%d N=%d K=%d", M, N, K);
			cr_assert_arr_eq(ya, yv, n * 4, "amx f32 vs vnni f32 (pass %d), M=%d N=%d K=%d", pass, M, N, K);
		}
		quant_packed_release(&p);
		free(A), free(B), free(Au), free(as), free(bs), free(bias), free(ref), free(ca), free(cv), free(ya), free(yv);
	}
	quant_gemm_set_backend(keep);
}

Test(quant, gemm_fused_dequantize)
{
	int M = 9, N = 37, K = 45, Kp = (K + 3) & ~3;
	int8_t *A = rnd_s8((size_t)M * K, 11), *B = rnd_s8((size_t)N * K, 12);
	int32_t *ref = malloc((size_t)M * N * 4);
	quant_gemm_s8s8s32_ref(M, N, K, A, K, B, K, ref, N);
	struct quant_packed p;
	cr_assert_eq(quant_pack_b(&p, B, N, K, K), 0);
	uint8_t *Au = calloc((size_t)M * Kp, 1);
	for (int m = 0; m < M; m++)
		for (int k = 0; k < K; k++)
			Au[m * Kp + k] = (uint8_t)(A[m * K + k] + 128);
	float as[9], bs[37], bias[37], *Y = malloc((size_t)M * N * sizeof(float));
	for (int m = 0; m < M; m++)
		as[m] = 0.01f * (m + 1);
	for (int n = 0; n < N; n++) {
		bs[n] = 0.002f * (n + 1);
		bias[n] = 0.5f - n * 0.01f;
	}
	quant_gemm_u8s8_packed_f32(M, Au, Kp, &p, as, 1, bs, bias, Y, N);
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			float want = (float)ref[m * N + n] * (as[m] * bs[n]) + bias[n];
			cr_assert_float_eq(Y[m * N + n], want, 1e-6f * (1 + fabsf(want)), "(%d,%d)", m, n);
		}
	/* per-tensor activation scale: stride 0 */
	quant_gemm_u8s8_packed_f32(M, Au, Kp, &p, as, 0, bs, NULL, Y, N);
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++)
			cr_assert_float_eq(Y[m * N + n], (float)ref[m * N + n] * (as[0] * bs[n]), 1e-5f);
	quant_packed_release(&p);
	quant_packed_release(&p); /* twice is fine */
	free(A);
	free(B);
	free(Au);
	free(Y);
	free(ref);
}

Test(quant, onednn_offset_semantics)
{
	/* docs/background.md, "INT8 conventions": confirm C = (A − ao)(B − bo) + co on a tiny case, and which of 'R'/'C'
	 * indexes co by column. A (2x3) row-major, B (3x2). */
	int8_t A[6] = { 1, 2, 3, 4, 5, 6 }, B[6] = { 1, 0, 0, 1, 1, 1 };
	int32_t C[4], co[2] = { 100, 200 };
	/* 'R': one offset per column n (a row vector added to every row) */
	cr_assert_eq(dnnl_gemm_s8s8s32('N', 'N', 'R', 2, 2, 3, 1.0f, A, 3, 0, B, 2, 0, 0.0f, C, 2, co), dnnl_success);
	/* A·B = {{1+3, 2+3}, {4+6, 5+6}} = {{4,5},{10,11}} */
	cr_assert_eq(C[0], 104);
	cr_assert_eq(C[1], 205);
	cr_assert_eq(C[2], 110);
	cr_assert_eq(C[3], 211);
	/* 'C': one offset per row m */
	cr_assert_eq(dnnl_gemm_s8s8s32('N', 'N', 'C', 2, 2, 3, 1.0f, A, 3, 0, B, 2, 0, 0.0f, C, 2, co), dnnl_success);
	cr_assert_eq(C[0], 104);
	cr_assert_eq(C[1], 105);
	cr_assert_eq(C[2], 210);
	cr_assert_eq(C[3], 211);
	/* ao = 1 subtracts 1 from every A element: (A−1)·B */
	uint8_t Au[6] = { 1, 2, 3, 4, 5, 6 };
	int32_t z = 0;
	cr_assert_eq(dnnl_gemm_u8s8s32('N', 'N', 'F', 2, 2, 3, 1.0f, Au, 3, 1, B, 2, 0, 0.0f, C, 2, &z), dnnl_success);
	cr_assert_eq(C[0], 0 + 2);  /* {0,1,2}·cols: {0+2, 1+2} */
	cr_assert_eq(C[1], 3);
	cr_assert_eq(C[2], 3 + 5);
	cr_assert_eq(C[3], 4 + 5);
}
