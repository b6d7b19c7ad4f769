/* tests/unit/test_nn_kernels.c — nn kernels: each optimized kernel against its plain reference,
 * each backward against central finite differences, GEMM backends against nn_gemm_ref, AdamW.
 * Tolerances are stated per test; inputs are small so the file runs in well under a second. */
#include "nn/nn.h"

#include "common/common.h"
#include "tests/unit/nn_fixture.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* max |a-b| / (atol + rtol·|b|) must be <= 1 */
static void assert_close(const float *a, const float *b, size_t n, double atol, double rtol, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)a[i] - b[i]);
		if (!(d <= atol + rtol * fabs((double)b[i])))
			cr_assert_fail("%s: element %zu differs: %.8g vs %.8g (atol %g, rtol %g)", what, i, a[i], b[i],
				       atol, rtol);
	}
}

static double dot(const float *a, const float *b, size_t n)
{
	double s = 0;
	for (size_t i = 0; i < n; i++)
		s += (double)a[i] * b[i];
	return s;
}

TestSuite(nn_kernels);

/* ------------------------------------------------------------------------------------------ */

/* Every transpose pair, padded strides, and the (alpha, beta) pairs the model uses (1,0), (1,1)
 * besides a general one; shapes with every side >= 16 run oneDNN's cached matmul primitive, a thin
 * one (M = 3) dnnl_sgemm. Each shape twice: the second call finds the cached primitive. */
static void check_gemm(enum nn_gemm_backend be)
{
	enum nn_gemm_backend keep = nn_gemm_get_backend();
	nn_gemm_set_backend(be);
	static const float ab[3][2] = { { 0.7f, 0.3f }, { 1.0f, 0.0f }, { 1.0f, 1.0f } };
	const char tr[2] = { 'N', 'T' };
	for (int rep = 0; rep < 2 * 3 * 2; rep++) {
		const int M = rep / 6 ? 3 : 37, N = 29, K = 45;
		const float alpha = ab[rep % 3][0], beta = ab[rep % 3][1];
		for (int ia = 0; ia < 2; ia++)
		for (int ib = 0; ib < 2; ib++) {
			int lda = (tr[ia] == 'N' ? K : M) + 3, ldb = (tr[ib] == 'N' ? N : K) + 5, ldc = N + 2;
			int ra = tr[ia] == 'N' ? M : K, rb = tr[ib] == 'N' ? K : N;
			float *A = fx_normal((size_t)ra * lda, 1, 1), *B = fx_normal((size_t)rb * ldb, 2, 1);
			float *C1 = fx_normal((size_t)M * ldc, 3, 1), *C2 = malloc((size_t)M * ldc * sizeof(float));
			memcpy(C2, C1, (size_t)M * ldc * sizeof(float));
			nn_gemm(tr[ia], tr[ib], M, N, K, alpha, A, lda, B, ldb, beta, C1, ldc);
			nn_gemm_ref(tr[ia], tr[ib], M, N, K, alpha, A, lda, B, ldb, beta, C2, ldc);
			assert_close(C1, C2, (size_t)M * ldc, 1e-4, 1e-4, "gemm");
			free(A), free(B), free(C1), free(C2);
		}
	}
	nn_gemm_set_backend(keep);
}

Test(nn_kernels, gemm_openblas_matches_ref) { check_gemm(NN_GEMM_OPENBLAS); }

/* nn_blas_idle stops OpenBLAS's worker threads; a GEMM after it starts them again and computes the
 * same as before (K as in check_gemm, so the same tolerance; 512 x 512 x 45 is over OpenBLAS's
 * threshold for running threaded), also after a second idle in a row and between GEMMs. */
Test(nn_kernels, gemm_openblas_after_blas_idle)
{
	enum nn_gemm_backend keep = nn_gemm_get_backend();
	nn_gemm_set_backend(NN_GEMM_OPENBLAS);
	const int M = 512, N = 512, K = 45;
	float *A = fx_normal((size_t)M * K, 1, 1), *B = fx_normal((size_t)K * N, 2, 1);
	float *C1 = malloc((size_t)M * N * sizeof(float)), *C2 = malloc((size_t)M * N * sizeof(float));
	nn_gemm_ref('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C2, N);
	for (int rep = 0; rep < 3; rep++) {
		nn_blas_idle();
		if (rep == 1)
			nn_blas_idle();
		memset(C1, 0, (size_t)M * N * sizeof(float));
		nn_gemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N);
		assert_close(C1, C2, (size_t)M * N, 1e-4, 1e-4, "gemm after nn_blas_idle");
	}
	free(A), free(B), free(C1), free(C2);
	nn_gemm_set_backend(keep);
}
Test(nn_kernels, gemm_onednn_matches_ref) { check_gemm(NN_GEMM_ONEDNN); }

/* More shapes than the matmul cache holds (128): the oldest entries make room, and a shape whose
 * primitive was replaced is built again and still right. */
Test(nn_kernels, gemm_onednn_cache_turnover)
{
	enum nn_gemm_backend keep = nn_gemm_get_backend();
	nn_gemm_set_backend(NN_GEMM_ONEDNN);
	const int K = 16, N = 16, MAXM = 16 + 140;
	float *A = fx_normal((size_t)MAXM * K, 61, 1), *B = fx_normal((size_t)K * N, 62, 1);
	float *C1 = malloc((size_t)MAXM * N * 4), *C2 = malloc((size_t)MAXM * N * 4);
	for (int pass = 0; pass < 2; pass++)
		for (int M = 16; M < MAXM; M += pass ? 35 : 1) {
			nn_gemm('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C1, N);
			nn_gemm_ref('N', 'N', M, N, K, 1.0f, A, K, B, N, 0.0f, C2, N);
			assert_close(C1, C2, (size_t)M * N, 1e-4, 1e-4, "gemm after cache turnover");
		}
	nn_gemm_set_backend(keep);
	free(A), free(B), free(C1), free(C2);
}

Test(nn_kernels, gemm_ref_known_values)
{
	float A[6] = { 1, 2, 3, 4, 5, 6 };     /* 2x3 */
	float B[6] = { 7, 8, 9, 10, 11, 12 };  /* 3x2 */
	float C[4] = { NAN, NAN, NAN, NAN };   /* beta 0 must ignore C */
	nn_gemm_ref('N', 'N', 2, 2, 3, 1, A, 3, B, 2, 0, C, 2);
	cr_assert_float_eq(C[0], 58, 0);
	cr_assert_float_eq(C[1], 64, 0);
	cr_assert_float_eq(C[2], 139, 0);
	cr_assert_float_eq(C[3], 154, 0);
}

/* ------------------------------------------------------------------------------------------ */
/* bf16 */

static float f32_of_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* fp32 → bf16: known roundings (ties to even both ways, carry into the exponent, overflow to inf,
 * NaN kept NaN even when only its low mantissa bits are set), then the vector path against the
 * reference on 1007 values (a tail that is not a multiple of 16). The vector path may flush fp32
 * denormals to ±0 (vcvtneps2bf16); the reference rounds them. */
Test(nn_kernels, bf16_conversion_matches_ref)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} known[] = {
		{ 0x3f800000u, 0x3f80 }, /* 1 */
		{ 0x3f808000u, 0x3f80 }, /* 1 + half an ulp: tie, to even (down) */
		{ 0x3f818000u, 0x3f82 }, /* tie, to even (up) */
		{ 0x3f808001u, 0x3f81 }, /* just above the tie: up */
		{ 0xbf80ffffu, 0xbf81 }, /* negative, rounds away */
		{ 0x3fffffffu, 0x4000 }, /* carries into the exponent */
		{ 0x7f7fffffu, 0x7f80 }, /* the largest float rounds to inf */
		{ 0xff800000u, 0xff80 }, /* -inf */
		{ 0x00000000u, 0x0000 },
		{ 0x80000000u, 0x8000 },
	};
	size_t nk = sizeof known / sizeof known[0];
	float kin[16];
	uint16_t kv[16], kr[16];
	for (size_t i = 0; i < nk; i++)
		kin[i] = f32_of_bits(known[i].in);
	nn_bf16_from_f32(kv, kin, nk);
	nn_bf16_from_f32_ref(kr, kin, nk);
	for (size_t i = 0; i < nk; i++) {
		cr_assert_eq(kr[i], known[i].out, "ref: %08x -> %04x, want %04x", known[i].in, kr[i], known[i].out);
		cr_assert_eq(kv[i], known[i].out, "vector: %08x -> %04x, want %04x", known[i].in, kv[i], known[i].out);
		cr_assert_eq(f32_from_bf16(kv[i]), f32_of_bits((uint32_t)known[i].out << 16));
	}
	float nan_in[2] = { f32_of_bits(0x7f800001u), f32_of_bits(0xffc00000u) };
	uint16_t nv[2], nr[2];
	nn_bf16_from_f32(nv, nan_in, 2);
	nn_bf16_from_f32_ref(nr, nan_in, 2);
	for (int i = 0; i < 2; i++) {
		cr_assert(isnan(f32_from_bf16(nv[i])), "NaN %d became %04x", i, nv[i]);
		cr_assert(isnan(f32_from_bf16(nr[i])), "ref NaN %d became %04x", i, nr[i]);
	}
	const size_t n = 1000 + 7;
	float *x = fx_normal(n, 71, 1);
	for (size_t i = 0; i < n; i++)
		x[i] *= ldexpf(1.0f, (int)(i % 61) - 30); /* exponents across 2^-30 .. 2^30 */
	x[5] = f32_of_bits(0x00400001u); /* a denormal */
	x[9] = f32_of_bits(0x3f808000u);
	uint16_t *v = malloc(n * 2), *r = malloc(n * 2);
	nn_bf16_from_f32(v, x, n);
	nn_bf16_from_f32_ref(r, x, n);
	for (size_t i = 0; i < n; i++) {
		if (i == 5) {
			cr_assert(v[i] == r[i] || v[i] == 0, "denormal: %04x vs ref %04x", v[i], r[i]);
			continue;
		}
		cr_assert_eq(v[i], r[i], "element %zu (%a): %04x vs ref %04x", i, (double)x[i], v[i], r[i]);
		/* and the rounding is to the nearest: within half a bf16 ulp (2^-8 relative) */
		double d = fabs((double)f32_from_bf16(r[i]) - x[i]);
		cr_assert(d <= ldexp(fabs((double)x[i]), -8), "element %zu: %a rounds to %a", i, (double)x[i],
			  (double)f32_from_bf16(r[i]));
	}
	free(x), free(v), free(r);
}

/* nn_gemm_bf16 against nn_gemm_ref on the operands' fp32 values: every transpose pair, padded
 * strides, beta 0 (C's NaNs ignored) and 1, shapes with every side >= 16 and a K that is not a
 * multiple of the AMX/VNNI pair (45). Products of bf16 values are exact in fp32, so only the
 * summation order differs: 1e-5 of Σ|a||b| per element. A wrong transpose, stride or beta is off
 * by O(1). Where oneDNN cannot run bf16 (no AVX512_BF16, or a cap below it), nn_gemm_bf16 must
 * say so (-1) and leave C alone. */
Test(nn_kernels, gemm_bf16_matches_ref)
{
	const char tr[2] = { 'N', 'T' };
	const int M = 37, N = 29, K = 45;
	for (int beta1 = 0; beta1 < 2; beta1++)
		for (int ia = 0; ia < 2; ia++)
			for (int ib = 0; ib < 2; ib++) {
				int lda = (tr[ia] == 'N' ? K : M) + 3, ldb = (tr[ib] == 'N' ? N : K) + 5, ldc = N + 2;
				size_t na = (size_t)(tr[ia] == 'N' ? M : K) * lda, nb = (size_t)(tr[ib] == 'N' ? K : N) * ldb;
				float *A = fx_normal(na, 81, 1), *B = fx_normal(nb, 82, 1), *C1 = fx_normal((size_t)M * ldc, 83, 1);
				float *C2 = malloc((size_t)M * ldc * 4), *C0 = malloc((size_t)M * ldc * 4);
				float *Aa = malloc(na * 4), *Ba = malloc(nb * 4);
				uint16_t *Ah = malloc(na * 2), *Bh = malloc(nb * 2);
				nn_bf16_from_f32_ref(Ah, A, na);
				nn_bf16_from_f32_ref(Bh, B, nb);
				for (size_t i = 0; i < na; i++)
					Aa[i] = f32_from_bf16(Ah[i]), A[i] = fabsf(Aa[i]);
				for (size_t i = 0; i < nb; i++)
					Ba[i] = f32_from_bf16(Bh[i]), B[i] = fabsf(Ba[i]);
				if (!beta1)
					for (int i = 0; i < M; i++)
						C1[(size_t)i * ldc + 3] = NAN;
				memcpy(C2, C1, (size_t)M * ldc * 4);
				memcpy(C0, C1, (size_t)M * ldc * 4);
				int rc = nn_gemm_bf16(tr[ia], tr[ib], M, N, K, Ah, lda, Bh, ldb, (float)beta1, C1, ldc);
				if (rc) {
					cr_log_info("nn_gemm_bf16 does not run here (oneDNN ISA %s)", nn_dnnl_isa());
					cr_assert_eq(memcmp(C1, C0, (size_t)M * ldc * 4), 0, "refused, but wrote C");
				} else {
					float *S = calloc((size_t)M * ldc, 4); /* Σ|a||b| */
					nn_gemm_ref(tr[ia], tr[ib], M, N, K, 1.0f, Aa, lda, Ba, ldb, (float)beta1, C2, ldc);
					nn_gemm_ref(tr[ia], tr[ib], M, N, K, 1.0f, A, lda, B, ldb, 0.0f, S, ldc);
					for (int i = 0; i < M; i++)
						for (int j = 0; j < N; j++) {
							size_t k = (size_t)i * ldc + j;
							cr_assert(fabs((double)C1[k] - C2[k]) <= 1e-5 * (S[k] + 1.0),
								  "%c%c beta %d C[%d,%d] = %g vs ref %g", tr[ia], tr[ib], beta1,
								  i, j, C1[k], C2[k]);
						}
					/* the padding columns are not written */
					for (int i = 0; i < M; i++)
						for (int j = N; j < ldc; j++)
							cr_assert_eq(memcmp(&C1[(size_t)i * ldc + j], &C0[(size_t)i * ldc + j], 4), 0);
					free(S);
				}
				free(A), free(B), free(C1), free(C2), free(C0), free(Aa), free(Ba), free(Ah), free(Bh);
			}
}

/* The fused bf16 outputs of LayerNorm and GELU: out exactly as the fp32 kernel writes it, out_h
 * exactly nn_bf16_from_f32(out); in reference mode, the references' out and its reference
 * rounding. */
Test(nn_kernels, layernorm_and_gelu_bf16_outputs)
{
	const int N = 13, C = 72; /* C not a multiple of 16: the row tail */
	const size_t n = (size_t)N * C;
	float *x = fx_normal(n, 91, 2), *w = fx_normal((size_t)C, 92, 1), *b = fx_normal((size_t)C, 93, 1);
	float *o1 = malloc(n * 4), *o2 = malloc(n * 4), mean1[13], rstd1[13], mean2[13], rstd2[13];
	uint16_t *h = malloc(n * 2), *h2 = malloc(n * 2);
	for (int ref = 0; ref < 2; ref++) {
		nn_set_reference(ref);
		void (*conv)(uint16_t *, const float *, size_t) = ref ? nn_bf16_from_f32_ref : nn_bf16_from_f32;
		nn_layernorm_forward(o1, mean1, rstd1, x, w, b, N, C);
		nn_layernorm_forward_bf16(o2, h, mean2, rstd2, x, w, b, N, C);
		cr_assert_eq(memcmp(o1, o2, n * 4), 0, "layernorm out (reference %d)", ref);
		cr_assert_eq(memcmp(mean1, mean2, sizeof mean1), 0);
		cr_assert_eq(memcmp(rstd1, rstd2, sizeof rstd1), 0);
		conv(h2, o1, n);
		cr_assert_eq(memcmp(h, h2, n * 2), 0, "layernorm bf16 out (reference %d)", ref);
		nn_gelu_forward(o1, x, n);
		nn_gelu_forward_bf16(o2, h, x, n);
		cr_assert_eq(memcmp(o1, o2, n * 4), 0, "gelu out (reference %d)", ref);
		conv(h2, o1, n);
		cr_assert_eq(memcmp(h, h2, n * 2), 0, "gelu bf16 out (reference %d)", ref);
	}
	nn_set_reference(0);
	free(x), free(w), free(b), free(o1), free(o2), free(h), free(h2);
}

/* The residual add fused with the LayerNorm after it: res, out, mean, rstd and out_h exactly what
 * the unfused kernels (nn_residual_forward, then nn_layernorm_forward[_bf16]) make, so fp32 training
 * is unchanged by the fusion; in place (res aliasing a) too; close to the reference; in reference
 * mode the reference itself. */
Test(nn_kernels, residual_layernorm_fused_matches_unfused)
{
	const int N = 13, C = 72; /* C not a multiple of 16: the row tail */
	const size_t n = (size_t)N * C;
	float *a = fx_normal(n, 81, 1), *b = fx_normal(n, 82, 2), *w = fx_normal((size_t)C, 83, 1), *bias = fx_normal((size_t)C, 84, 1);
	float *r1 = malloc(n * 4), *r2 = malloc(n * 4), *o1 = malloc(n * 4), *o2 = malloc(n * 4);
	float m1[13], m2[13], s1[13], s2[13];
	uint16_t *h1 = malloc(n * 2), *h2 = malloc(n * 2);
	for (int ref = 0; ref < 2; ref++) {
		nn_set_reference(ref);
		for (int bf = 0; bf < 2; bf++) {
			nn_residual_forward(r1, a, b, n);
			if (ref)
				nn_layernorm_forward_ref(o1, m1, s1, r1, w, bias, N, C);
			else
				nn_layernorm_forward_bf16(o1, h1, m1, s1, r1, w, bias, N, C);
			if (ref)
				nn_bf16_from_f32_ref(h1, o1, n);
			memset(h2, 0xff, n * 2);
			nn_residual_layernorm_forward(r2, o2, bf ? h2 : NULL, m2, s2, a, b, w, bias, N, C);
			cr_assert_eq(memcmp(r1, r2, n * 4), 0, "residual (reference %d)", ref);
			cr_assert_eq(memcmp(o1, o2, n * 4), 0, "layernorm out (reference %d, bf16 %d)", ref, bf);
			cr_assert_eq(memcmp(m1, m2, sizeof m1), 0);
			cr_assert_eq(memcmp(s1, s2, sizeof s1), 0);
			if (bf)
				cr_assert_eq(memcmp(h1, h2, n * 2), 0, "bf16 out (reference %d)", ref);
		}
		/* in place: the sum overwrites a */
		float *a2 = malloc(n * 4);
		memcpy(a2, a, n * 4);
		nn_residual_layernorm_forward(a2, o2, h2, m2, s2, a2, b, w, bias, N, C);
		cr_assert_eq(memcmp(a2, r1, n * 4), 0, "in-place residual (reference %d)", ref);
		cr_assert_eq(memcmp(o1, o2, n * 4), 0, "in-place layernorm out (reference %d)", ref);
		free(a2);
	}
	nn_set_reference(0);
	/* the fast kernel against the reference: LayerNorm's tolerance (layernorm_matches_ref_and_fd) */
	nn_residual_layernorm_forward(r1, o1, h1, m1, s1, a, b, w, bias, N, C);
	nn_residual_layernorm_forward_ref(r2, o2, h2, m2, s2, a, b, w, bias, N, C);
	cr_assert_eq(memcmp(r1, r2, n * 4), 0, "residual vs reference");
	assert_close(o1, o2, n, 1e-5, 1e-5, "fused layernorm vs reference");
	assert_close(m1, m2, (size_t)N, 1e-6, 1e-5, "fused mean vs reference");
	assert_close(s1, s2, (size_t)N, 1e-6, 1e-5, "fused rstd vs reference");
	free(a), free(b), free(w), free(bias), free(r1), free(r2), free(o1), free(o2), free(h1), free(h2);
}

/* The GELU backward fused with the next linear backward's conversion and bias gradient: dinp as
 * nn_gelu_backward's reference (gelu_matches_ref_and_fd's tolerance), dinp_h exactly
 * nn_bf16_from_f32(dinp), db (from a nonzero start) exactly the row-order column sums of dinp added
 * to it, in place (dinp aliasing dout) too, with a column count that splits unevenly over threads
 * and ends in a partial vector; with the gradient given in bf16 (dout_h, dinp not stored, in place
 * and not), what the fp32 gradient widened from it gives; in reference mode, the reference. */
Test(nn_kernels, gelu_backward_bf16_fused)
{
	const int N = 11, OC = 200;
	const size_t n = (size_t)N * OC;
	float *x = fx_normal(n, 71, 3), *dy = fx_normal(n, 72, 1), *db0 = fx_normal((size_t)OC, 73, 1);
	x[0] = 0, x[1] = -12, x[2] = 12, x[3] = 1e-4f, x[4] = -50, x[5] = 50;
	float *d1 = malloc(n * 4), *d2 = malloc(n * 4), *db1 = malloc(OC * 4), *db2 = malloc(OC * 4);
	uint16_t *h1 = malloc(n * 2), *h2 = malloc(n * 2);
	for (int ref = 0; ref < 2; ref++) {
		nn_set_reference(ref);
		for (int inplace = 0; inplace < 2; inplace++) {
			memcpy(db1, db0, OC * 4);
			if (inplace) {
				memcpy(d1, dy, n * 4);
				nn_gelu_backward_bf16(d1, h1, db1, x, d1, NULL, N, OC);
			} else {
				nn_gelu_backward_bf16(d1, h1, db1, x, dy, NULL, N, OC);
			}
			nn_gelu_backward_ref(d2, x, dy, n);
			if (ref)
				cr_assert_eq(memcmp(d1, d2, n * 4), 0, "reference mode dinp");
			else
				assert_close(d1, d2, n, 1e-6, 1e-5, "fused gelu bwd vs reference");
			(ref ? nn_bf16_from_f32_ref : nn_bf16_from_f32)(h2, d1, n);
			cr_assert_eq(memcmp(h1, h2, n * 2), 0, "dinp_h (reference %d, in place %d)", ref, inplace);
			memcpy(db2, db0, OC * 4);
			for (int i = 0; i < N; i++)
				for (int c = 0; c < OC; c++)
					db2[c] += d1[(size_t)i * OC + c];
			cr_assert_eq(memcmp(db1, db2, OC * 4), 0, "db (reference %d, in place %d)", ref, inplace);
		}
		/* db NULL: no bias gradient, the rest the same */
		nn_gelu_backward_bf16(d2, h2, NULL, x, dy, NULL, N, OC);
		cr_assert_eq(memcmp(d1, d2, n * 4), 0);
		cr_assert_eq(memcmp(h1, h2, n * 2), 0);
		/* the incoming gradient in bf16 (dout_h), no fp32 dinp stored, in place (dinp_h over
		 * dout_h) and not: bit for bit the fp32 kernel on the widened gradient */
		uint16_t *gh = malloc(n * 2);
		nn_bf16_from_f32_ref(gh, dy, n);
		for (size_t i = 0; i < n; i++)
			d2[i] = f32_from_bf16(gh[i]);
		memcpy(db1, db0, OC * 4);
		nn_gelu_backward_bf16(d1, h1, db1, x, d2, NULL, N, OC);
		for (int inplace = 0; inplace < 2; inplace++) {
			uint16_t *out = inplace ? gh : h2;
			if (inplace)
				nn_bf16_from_f32_ref(gh, dy, n);
			memcpy(db2, db0, OC * 4);
			nn_gelu_backward_bf16(NULL, out, db2, x, NULL, gh, N, OC);
			cr_assert_eq(memcmp(h1, out, n * 2), 0, "dinp_h from dout_h (reference %d, in place %d)", ref,
				     inplace);
			cr_assert_eq(memcmp(db1, db2, OC * 4), 0, "db from dout_h (reference %d, in place %d)", ref,
				     inplace);
		}
		free(gh);
	}
	nn_set_reference(0);
	free(x), free(dy), free(db0), free(d1), free(d2), free(db1), free(db2), free(h1), free(h2);
}

/* g (3C: dw, db, dlin) += the sums of the rows as nn_layernorm_backward_bf16 adds them on a team of
 * threads: each thread a contiguous range of rows (N·t/team on), thread 0's rows added to g row by
 * row, each other thread's summed row by row from 0 and those sums then added in thread order.
 * dlin (lin) sums dx, the final input gradient. */
static void ln_split_sums(float *g, const float *x, const float *dy, const float *dx, const float *m, const float *r,
			  int N, int C, int team, int lin)
{
	float *q = malloc((size_t)3 * C * 4);
	cr_assert(q);
	for (int t = 0; t < team; t++) {
		float *s = t ? q : g;
		if (t)
			memset(q, 0, (size_t)3 * C * 4);
		for (int i = (int)((long long)N * t / team); i < (int)((long long)N * (t + 1) / team); i++)
			for (int c = 0; c < C; c++) {
				const size_t e = (size_t)i * C + c;
				s[C + c] += dy[e];
				s[c] += (x[e] - m[i]) * r[i] * dy[e];
				if (lin)
					s[2 * C + c] += dx[e];
			}
		for (int c = 0; t && c < (lin ? 3 : 2) * C; c++)
			g[c] += q[c];
	}
	free(q);
}

/* The LayerNorm backward's fast forms. The plain form: dw and db exactly the row-order sums over
 * the rows (added to a nonzero start; the reference sums in double). The bf16 form: dinp bit for bit
 * the plain form's, dinp_h = nn_bf16_from_f32(dinp), and dw, db, dlin (dinp's column sums) exactly
 * as ln_split_sums orders them (at one thread the row order). Shapes: fewer rows than one pass
 * takes, several passes and a partial one, many rows; channel counts that split unevenly over the
 * threads and end in a partial vector; 1, 2 and 3 threads; dlin NULL; in reference mode, the
 * reference. */
Test(nn_kernels, layernorm_backward_bf16_fused)
{
	static const struct {
		int N, C;
	} shapes[] = { { 13, 200 }, { 141, 200 }, { 4096 + 77, 40 } };
	static const int threads[] = { 2, 1, 3 };
	for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++) {
		const int N = shapes[sh].N, C = shapes[sh].C;
		size_t n = (size_t)N * C;
		float *x = fx_normal(n, 81, 1.5f), *w = fx_normal(C, 82, 1), *b = fx_normal(C, 83, 1),
		      *dy = fx_normal(n, 84, 1), *d0 = fx_normal(n, 85, 1), *g0 = fx_normal(3 * C, 86, 1);
		float *o = malloc(n * 4), *m = malloc(N * 4), *r = malloc(N * 4), *d1 = malloc(n * 4),
		      *d2 = malloc(n * 4), *g1 = malloc(3 * C * 4), *g2 = malloc(3 * C * 4), *g3 = malloc(3 * C * 4);
		uint16_t *h1 = malloc(n * 2), *h2 = malloc(n * 2);
		cr_assert(o && m && r && d1 && d2 && g1 && g2 && g3 && h1 && h2);
		nn_layernorm_forward(o, m, r, x, w, b, N, C);
		for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
			nn_set_threads(threads[t]);
			for (int ref = 0; ref < 2; ref++) {
				nn_set_reference(ref);
				for (int lin = 0; lin < 2; lin++) {
					memcpy(d1, d0, n * 4), memcpy(d2, d0, n * 4), memcpy(g1, g0, 3 * C * 4),
						memcpy(g2, g0, 3 * C * 4);
					nn_layernorm_backward_bf16(d1, h1, lin ? g1 + 2 * C : NULL, g1, g1 + C, dy, x, w, m, r,
								   N, C);
					nn_layernorm_backward(d2, g2, g2 + C, dy, x, w, m, r, N, C);
					cr_assert_eq(memcmp(d1, d2, n * 4), 0, "dinp (%dx%d, %d threads, reference %d)", N, C,
						     threads[t], ref);
					(ref ? nn_bf16_from_f32_ref : nn_bf16_from_f32)(h2, d1, n);
					cr_assert_eq(memcmp(h1, h2, n * 2), 0, "dinp_h (%dx%d, %d threads, reference %d)", N,
						     C, threads[t], ref);
					/* the plain form: row by row (fast), or the reference's own */
					memcpy(g3, g0, 3 * C * 4);
					ln_split_sums(g3, x, dy, d1, m, r, N, C, 1, lin);
					cr_assert(ref || memcmp(g2, g3, 2 * C * 4) == 0,
						  "plain dw, db row by row (%dx%d, %d threads)", N, C, threads[t]);
					/* the bf16 form: split by the threads (fast), or the reference's row order */
					memcpy(g3, g0, 3 * C * 4);
					ln_split_sums(g3, x, dy, d1, m, r, N, C, ref ? 1 : threads[t], lin);
					cr_assert(memcmp(g1, ref ? g2 : g3, 2 * C * 4) == 0, "dw, db (%dx%d, %d threads, reference %d)",
						  N, C, threads[t], ref);
					cr_assert(memcmp(g1 + 2 * C, g3 + 2 * C, C * 4) == 0,
						  "dlin (%dx%d, %d threads, reference %d, given %d)", N, C, threads[t], ref, lin);
				}
			}
		}
		nn_set_threads(0);
		nn_set_reference(0);
		free(x), free(w), free(b), free(dy), free(d0), free(g0), free(o), free(m), free(r), free(d1);
		free(d2), free(g1), free(g2), free(g3), free(h1), free(h2);
	}
}

/* ------------------------------------------------------------------------------------------ */

Test(nn_kernels, layernorm_matches_ref_and_fd)
{
	enum { N = 13, C = 40 };
	size_t n = (size_t)N * C;
	float *x = fx_normal(n, 11, 1.5f), *w = fx_normal(C, 12, 1), *b = fx_normal(C, 13, 1), *dy = fx_normal(n, 14, 1);
	for (size_t i = 0; i < n; i++)
		x[i] += 0.5f;
	float *o1 = malloc(n * 4), *o2 = malloc(n * 4), m1[N], m2[N], r1[N], r2[N];
	nn_layernorm_forward(o1, m1, r1, x, w, b, N, C);
	nn_layernorm_forward_ref(o2, m2, r2, x, w, b, N, C);
	assert_close(o1, o2, n, 1e-5, 1e-5, "layernorm fwd");
	assert_close(m1, m2, N, 1e-6, 1e-5, "layernorm mean");
	assert_close(r1, r2, N, 1e-6, 1e-5, "layernorm rstd");

	/* backward: fast vs ref, both accumulating onto the same nonzero start */
	float *dx1 = fx_normal(n, 15, 1), *dx2 = malloc(n * 4), *dw1 = fx_normal(C, 16, 1), *dw2 = malloc(C * 4),
	      *db1 = fx_normal(C, 17, 1), *db2 = malloc(C * 4);
	memcpy(dx2, dx1, n * 4), memcpy(dw2, dw1, C * 4), memcpy(db2, db1, C * 4);
	nn_layernorm_backward(dx1, dw1, db1, dy, x, w, m1, r1, N, C);
	nn_layernorm_backward_ref(dx2, dw2, db2, dy, x, w, m2, r2, N, C);
	assert_close(dx1, dx2, n, 1e-4, 1e-4, "layernorm dinp");
	assert_close(dw1, dw2, C, 1e-4, 1e-4, "layernorm dw");
	assert_close(db1, db2, C, 1e-4, 1e-4, "layernorm db");

	/* ref backward vs finite differences of L = sum(dy * out): fp32, eps 1e-2, tol 2e-3 + 1% */
	float *dx = calloc(n, 4), *dw = calloc(C, 4), *db = calloc(C, 4);
	nn_layernorm_backward_ref(dx, dw, db, dy, x, w, m2, r2, N, C);
	const double eps = 1e-2;
	for (size_t i = 0; i < n; i += 7) {
		float keep = x[i];
		x[i] = keep + eps;
		nn_layernorm_forward_ref(o2, m2, r2, x, w, b, N, C);
		double lp = dot(dy, o2, n);
		x[i] = keep - eps;
		nn_layernorm_forward_ref(o2, m2, r2, x, w, b, N, C);
		double lm = dot(dy, o2, n);
		x[i] = keep;
		double fd = (lp - lm) / (2 * eps);
		cr_assert(fabs(fd - dx[i]) <= 2e-3 + 1e-2 * fabs(fd), "layernorm dx[%zu]: %g vs fd %g", i, dx[i], fd);
	}
	for (int c = 0; c < C; c += 3) {
		float keep = w[c];
		w[c] = keep + eps;
		nn_layernorm_forward_ref(o2, m2, r2, x, w, b, N, C);
		double lp = dot(dy, o2, n);
		w[c] = keep - eps;
		nn_layernorm_forward_ref(o2, m2, r2, x, w, b, N, C);
		double lm = dot(dy, o2, n);
		w[c] = keep;
		double fd = (lp - lm) / (2 * eps);
		cr_assert(fabs(fd - dw[c]) <= 2e-3 + 1e-2 * fabs(fd), "layernorm dw[%d]: %g vs fd %g", c, dw[c], fd);
		double sdb = 0;
		for (int i = 0; i < N; i++)
			sdb += dy[(size_t)i * C + c];
		cr_assert(fabs(sdb - db[c]) <= 1e-4, "layernorm db[%d]", c);
	}
	free(x), free(w), free(b), free(dy), free(o1), free(o2), free(dx1), free(dx2), free(dw1), free(dw2);
	free(db1), free(db2), free(dx), free(dw), free(db);
}

/* ------------------------------------------------------------------------------------------ */

Test(nn_kernels, gelu_matches_ref_and_fd)
{
	const size_t n = 1000 + 7; /* a tail that is not a multiple of 16 */
	float *x = fx_normal(n, 21, 3), *dy = fx_normal(n, 22, 1);
	x[0] = 0, x[1] = -12, x[2] = 12, x[3] = 1e-4f, x[4] = -50, x[5] = 50;
	float *o1 = malloc(n * 4), *o2 = malloc(n * 4), *d1 = malloc(n * 4), *d2 = malloc(n * 4);
	nn_gelu_forward(o1, x, n);
	nn_gelu_forward_ref(o2, x, n);
	assert_close(o1, o2, n, 1e-6, 1e-5, "gelu fwd");
	nn_gelu_backward(d1, x, dy, n);
	nn_gelu_backward_ref(d2, x, dy, n);
	assert_close(d1, d2, n, 1e-6, 1e-5, "gelu bwd");
	/* in place (dinp aliases dout) */
	memcpy(d1, dy, n * 4);
	nn_gelu_backward(d1, x, d1, n);
	assert_close(d1, d2, n, 1e-6, 1e-5, "gelu bwd in place");
	/* known values: gelu_new(1) = 0.8411919906 (HF), gelu_new(-1) = -0.1588080094 */
	float k[2] = { 1, -1 }, ko[2];
	nn_gelu_forward(ko, k, 2);
	cr_assert_float_eq(ko[0], 0.8411919906f, 1e-6);
	cr_assert_float_eq(ko[1], -0.1588080094f, 1e-6);
	/* ref backward vs finite differences, elementwise: eps 1e-3, tol 1e-4 + 1e-3 rel */
	for (size_t i = 0; i < 200; i++) {
		float p = x[i] + 1e-3f, m = x[i] - 1e-3f, op, om;
		nn_gelu_forward_ref(&op, &p, 1);
		nn_gelu_forward_ref(&om, &m, 1);
		double fd = ((double)op - om) / ((double)p - m) * dy[i];
		cr_assert(fabs(fd - d2[i]) <= 1e-3 + 1e-3 * fabs(fd), "gelu d[%zu] x=%g: %g vs fd %g", i, x[i], d2[i],
			  fd);
	}
	free(x), free(dy), free(o1), free(o2), free(d1), free(d2);
}

Test(nn_kernels, residual_and_encoder)
{
	float a[5] = { 1, 2, 3, 4, 5 }, b[5] = { 10, 20, 30, 40, 50 }, o[5];
	nn_residual_forward(o, a, b, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_float_eq(o[i], a[i] + b[i], 0);
	/* encoder: B=2, T=3, C=4, V=5 */
	const int B = 2, T = 3, C = 4, V = 5;
	float *wte = fx_normal(V * C, 31, 1), *wpe = fx_normal(T * C, 32, 1), out[2 * 3 * 4];
	int inp[6] = { 4, 0, 4, 2, 2, 1 };
	nn_encoder_forward(out, inp, wte, wpe, B, T, C);
	for (int i = 0; i < B * T; i++)
		for (int c = 0; c < C; c++)
			cr_assert_float_eq(out[i * C + c], wte[inp[i] * C + c] + wpe[(i % T) * C + c], 0);
	float dwte[5 * 4] = { 0 }, dwpe[3 * 4] = { 0 }, dout[24];
	for (int i = 0; i < 24; i++)
		dout[i] = (float)i;
	nn_encoder_backward(dwte, dwpe, dout, inp, B, T, C);
	/* token 4 at positions 0 and 2 of batch 0: rows 0 and 2 */
	for (int c = 0; c < C; c++) {
		cr_assert_float_eq(dwte[4 * C + c], dout[0 * C + c] + dout[2 * C + c], 0);
		cr_assert_float_eq(dwte[2 * C + c], dout[3 * C + c] + dout[4 * C + c], 0);
		cr_assert_float_eq(dwte[3 * C + c], 0, 0);
		cr_assert_float_eq(dwpe[1 * C + c], dout[1 * C + c] + dout[4 * C + c], 0);
	}
	free(wte), free(wpe);
}

/* ------------------------------------------------------------------------------------------ */

Test(nn_kernels, linear_backward_fd)
{
	const int N = 6, IC = 9, OC = 11;
	float *x = fx_normal(N * IC, 41, 1), *w = fx_normal(IC * OC, 42, 1), *b = fx_normal(OC, 43, 1), *dy = fx_normal(N * OC, 44, 1);
	float *o = malloc(N * OC * 4), *o2 = malloc(N * OC * 4), *dx = malloc(N * IC * 4), *dw = calloc(IC * OC, 4),
	      *db = calloc(OC, 4);
	nn_linear_forward(o, x, w, b, N, IC, OC);
	for (int i = 0; i < N; i++)
		for (int j = 0; j < OC; j++) {
			double s = b[j];
			for (int k = 0; k < IC; k++)
				s += (double)x[i * IC + k] * w[k * OC + j];
			cr_assert(fabs(s - o[i * OC + j]) < 1e-4, "linear fwd");
		}
	nn_linear_backward(dx, dw, db, dy, x, w, N, IC, OC);
	/* linear in every input: finite differences are exact up to rounding; eps 0.5, tol 1e-3 */
	float *ps[3] = { x, w, b }, *gs[3] = { dx, dw, db };
	int ns[3] = { N * IC, IC * OC, OC };
	for (int t = 0; t < 3; t++)
		for (int i = 0; i < ns[t]; i += 2) {
			float keep = ps[t][i];
			ps[t][i] = keep + 0.5f;
			nn_linear_forward(o2, x, w, b, N, IC, OC);
			double lp = dot(dy, o2, N * OC);
			ps[t][i] = keep - 0.5f;
			nn_linear_forward(o2, x, w, b, N, IC, OC);
			double lm = dot(dy, o2, N * OC);
			ps[t][i] = keep;
			double fd = (lp - lm) / 1.0;
			cr_assert(fabs(fd - gs[t][i]) < 1e-3 + 1e-4 * fabs(fd), "linear grad %d[%d]: %g vs %g", t, i,
				  gs[t][i], fd);
		}
	free(x), free(w), free(b), free(dy), free(o), free(o2), free(dx), free(dw), free(db);
}

/* The optimized linear forward (bias fused into oneDNN's matmul, or copied then accumulated on
 * OpenBLAS) against reference mode, with and without a bias, on both backends. */
Test(nn_kernels, linear_forward_matches_ref)
{
	const int N = 70, IC = 48, OC = 80;
	float *x = fx_normal((size_t)N * IC, 51, 1), *w = fx_normal((size_t)IC * OC, 52, 1), *b = fx_normal(OC, 53, 1);
	float *o1 = malloc((size_t)N * OC * 4), *o2 = malloc((size_t)N * OC * 4);
	enum nn_gemm_backend keep = nn_gemm_get_backend();
	for (int be = 0; be < 2; be++)
		for (int hb = 0; hb < 2; hb++) {
			nn_gemm_set_backend(be ? NN_GEMM_ONEDNN : NN_GEMM_OPENBLAS);
			for (int i = 0; i < N * OC; i++)
				o1[i] = NAN; /* the output is written, never read */
			nn_linear_forward(o1, x, w, hb ? b : NULL, N, IC, OC);
			nn_set_reference(1);
			nn_linear_forward(o2, x, w, hb ? b : NULL, N, IC, OC);
			nn_set_reference(0);
			assert_close(o1, o2, (size_t)N * OC, 1e-4, 1e-4, "linear forward");
		}
	nn_gemm_set_backend(keep);
	free(x), free(w), free(b), free(o1), free(o2);
}

/* ------------------------------------------------------------------------------------------ */

static void check_attention(int B, int T, int C, int H)
{
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * H * T;
	float *qkv = fx_normal(nq, 51, 1), *dy = fx_normal(no, 52, 1);
	float *o1 = malloc(no * 4), *o2 = malloc(no * 4), *l1 = malloc(nl * 4), *l2 = malloc(nl * 4);
	float *d1 = malloc(nq * 4), *d2 = malloc(nq * 4);
	float *scr = malloc(nn_attention_scratch_floats(T, C, H, 0) * 4);
	nn_attention_forward(o1, l1, scr, qkv, B, T, C, H);
	nn_attention_forward_ref(o2, l2, qkv, B, T, C, H);
	assert_close(l1, l2, nl, 1e-5, 1e-5, "attention log-sum-exp");
	assert_close(o1, o2, no, 1e-5, 1e-4, "attention out");
	/* dqkv is overwritten, whatever was there */
	for (size_t i = 0; i < nq; i++)
		d1[i] = NAN;
	nn_attention_backward(d1, scr, dy, qkv, o1, l1, B, T, C, H);
	nn_attention_backward_ref(d2, dy, qkv, l2, B, T, C, H);
	assert_close(d1, d2, nq, 1e-5, 1e-4, "attention dqkv");
	free(qkv), free(dy), free(o1), free(o2), free(l1), free(l2), free(d1), free(d2), free(scr);
}

Test(nn_kernels, attention_matches_ref)
{
	check_attention(2, 7, 12, 3);     /* T below one tile, head size 4 (masked lanes) */
	check_attention(2, 130, 32, 2);   /* several key chunks, a ragged last tile, head size 16 */
	check_attention(1, 67, 160, 2);   /* head size 80: two register blocks, the second partial */
	check_attention(2, 256, 128, 2);  /* the models' head size 64 over whole chunks */
	nn_set_threads(1);                /* one thread owns every head */
	check_attention(3, 33, 64, 4);
	nn_set_threads(0);
}

/* A probability of the reference's softmax, recomputed from q, k and the row's log-sum-exp. */
static double ref_prob(const float *qkv, const float *lse, int T, int C, int H, int b, int h, int i, int j)
{
	int hs = C / H;
	const float *q = qkv + ((size_t)b * T + i) * 3 * C + (size_t)h * hs;
	const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + (size_t)h * hs;
	double s = 0;
	for (int d = 0; d < hs; d++)
		s += (double)q[d] * k[d];
	return exp(s / sqrt((double)hs) - lse[((size_t)b * H + h) * T + i]);
}

Test(nn_kernels, attention_backward_fd)
{
	const int B = 2, T = 5, C = 8, H = 2;
	size_t nq = (size_t)B * T * 3 * C, no = (size_t)B * T * C, nl = (size_t)B * H * T;
	float *qkv = fx_normal(nq, 61, 1), *dy = fx_normal(no, 62, 1), *o = malloc(no * 4), *l = malloc(nl * 4),
	      *d = malloc(nq * 4);
	nn_attention_forward_ref(o, l, qkv, B, T, C, H);
	nn_attention_backward_ref(d, dy, qkv, l, B, T, C, H);
	const double eps = 1e-2;
	for (size_t i = 0; i < nq; i++) {
		float keep = qkv[i];
		qkv[i] = keep + eps;
		nn_attention_forward_ref(o, l, qkv, B, T, C, H);
		double lp = dot(dy, o, no);
		qkv[i] = keep - eps;
		nn_attention_forward_ref(o, l, qkv, B, T, C, H);
		double lm = dot(dy, o, no);
		qkv[i] = keep;
		double fd = (lp - lm) / (2 * eps);
		cr_assert(fabs(fd - d[i]) <= 2e-3 + 1e-2 * fabs(fd), "attention dqkv[%zu]: %g vs fd %g", i, d[i], fd);
	}
	nn_attention_forward_ref(o, l, qkv, B, T, C, H);
	/* causality: the first query of each sequence sees only itself (its output is its own v), and
	 * each row's probabilities over the keys it sees sum to 1 */
	for (int b = 0; b < B; b++)
		for (int h = 0; h < H; h++) {
			cr_assert_float_eq(ref_prob(qkv, l, T, C, H, b, h, 0, 0), 1.0, 1e-6);
			for (int dd = 0; dd < C / H; dd++)
				cr_assert_float_eq(o[(size_t)b * T * C + (size_t)h * (C / H) + dd],
						   qkv[(size_t)b * T * 3 * C + 2 * C + (size_t)h * (C / H) + dd], 1e-6);
			for (int i = 0; i < T; i++) {
				double s = 0;
				for (int j = 0; j <= i; j++)
					s += ref_prob(qkv, l, T, C, H, b, h, i, j);
				cr_assert_float_eq(s, 1.0, 1e-5);
			}
		}
	free(qkv), free(dy), free(o), free(l), free(d);
}

/* ------------------------------------------------------------------------------------------ */

Test(nn_kernels, crossentropy_matches_ref_and_fd)
{
	const int N = 9, V = 37;
	float *z = fx_normal((size_t)N * V, 71, 3);
	int tg[9] = { 0, 36, 5, 5, 17, 1, 2, 35, 20 };
	float l1[9], l2[9], s1[9], s2[9];
	float *d1 = malloc((size_t)N * V * 4), *d2 = malloc((size_t)N * V * 4);
	nn_crossentropy_forward(l1, s1, z, tg, N, V);
	nn_crossentropy_forward_ref(l2, s2, z, tg, N, V);
	assert_close(l1, l2, N, 1e-5, 1e-5, "cross-entropy loss");
	assert_close(s1, s2, N, 1e-5, 1e-5, "cross-entropy lse");
	nn_crossentropy_backward(d1, z, s1, tg, 0.25f, N, V);
	nn_crossentropy_backward_ref(d2, z, s2, tg, 0.25f, N, V);
	assert_close(d1, d2, (size_t)N * V, 1e-7, 1e-5, "cross-entropy dlogits");
	/* rows of the gradient sum to 0 */
	for (int i = 0; i < N; i++) {
		double s = 0;
		for (int v = 0; v < V; v++)
			s += d2[i * V + v];
		cr_assert(fabs(s) < 1e-6, "dlogits row %d sums to %g", i, s);
	}
	/* FD of 0.25·Σ losses */
	const double eps = 1e-2;
	for (int i = 0; i < N * V; i += 5) {
		float keep = z[i];
		double lp = 0, lm = 0;
		z[i] = keep + eps;
		nn_crossentropy_forward_ref(l2, s2, z, tg, N, V);
		for (int r = 0; r < N; r++)
			lp += l2[r];
		z[i] = keep - eps;
		nn_crossentropy_forward_ref(l2, s2, z, tg, N, V);
		for (int r = 0; r < N; r++)
			lm += l2[r];
		z[i] = keep;
		double fd = 0.25 * (lp - lm) / (2 * eps);
		cr_assert(fabs(fd - d1[i]) <= 1e-4 + 1e-2 * fabs(fd), "dlogits[%d]: %g vs fd %g", i, d1[i], fd);
	}
	/* uniform logits: loss = ln V exactly */
	float u[37] = { 0 };
	int t0 = 3;
	nn_crossentropy_forward(l1, s1, u, &t0, 1, V);
	cr_assert_float_eq(l1[0], logf(37.0f), 1e-6);
	free(z), free(d1), free(d2);
}

/* ------------------------------------------------------------------------------------------ */

Test(nn_kernels, adamw_matches_ref_and_known_step)
{
	const size_t n = 1003;
	struct nn_adamw o = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f };
	float *p1 = fx_normal(n, 81, 1), *g = fx_normal(n, 82, 1), *p2 = malloc(n * 4);
	float *m1 = calloc(n, 4), *v1 = calloc(n, 4), *m2 = calloc(n, 4), *v2 = calloc(n, 4);
	memcpy(p2, p1, n * 4);
	for (int t = 1; t <= 3; t++)
		for (int decay = 0; decay < 2; decay++) {
			nn_adamw_step(&o, t, p1, g, m1, v1, n, decay);
			nn_adamw_step_ref(&o, t, p2, g, m2, v2, n, decay);
		}
	assert_close(p1, p2, n, 1e-6, 1e-5, "adamw params");
	assert_close(m1, m2, n, 1e-7, 1e-5, "adamw m");
	assert_close(v1, v2, n, 1e-7, 1e-5, "adamw v");
	/* first step from zero moments: p' = p(1 - lr·wd) - lr·sign(g) (up to eps) */
	float p = 2.0f, gr = -0.5f, m = 0, v = 0;
	nn_adamw_step(&o, 1, &p, &gr, &m, &v, 1, 1);
	cr_assert_float_eq(p, 2.0f * (1 - 1e-3f) + 1e-2f, 1e-6);
	p = 2.0f, m = 0, v = 0;
	nn_adamw_step_ref(&o, 1, &p, &gr, &m, &v, 1, 0);
	cr_assert_float_eq(p, 2.0f + 1e-2f, 1e-6);
	free(p1), free(p2), free(g), free(m1), free(v1), free(m2), free(v2);
}

/* AdamW writing the bf16 copy in its pass: param, m, v exactly nn_adamw_step's, param_h exactly
 * nn_bf16_from_f32 of the new param (a tail that is not a multiple of 16, thread ranges that end
 * mid-vector); in reference mode the reference and its rounding. */
Test(nn_kernels, adamw_bf16_copy_matches_plain_step)
{
	const size_t n = 1003;
	struct nn_adamw o = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
			      .grad_scale = 0.5f };
	float *p1 = fx_normal(n, 85, 1), *g = fx_normal(n, 86, 1), *p2 = malloc(n * 4);
	float *m1 = calloc(n, 4), *v1 = calloc(n, 4), *m2 = calloc(n, 4), *v2 = calloc(n, 4);
	uint16_t *h1 = malloc(n * 2), *h2 = malloc(n * 2);
	memcpy(p2, p1, n * 4);
	for (int ref = 0; ref < 2; ref++) {
		nn_set_reference(ref);
		for (int t = 1; t <= 3; t++)
			for (int decay = 0; decay < 2; decay++) {
				nn_adamw_step_bf16(&o, t, p1, h1, g, m1, v1, n, decay);
				nn_adamw_step(&o, t, p2, g, m2, v2, n, decay);
				cr_assert_eq(memcmp(p1, p2, n * 4), 0, "param (reference %d, step %d)", ref, t);
				cr_assert_eq(memcmp(m1, m2, n * 4), 0, "m (reference %d)", ref);
				cr_assert_eq(memcmp(v1, v2, n * 4), 0, "v (reference %d)", ref);
				(ref ? nn_bf16_from_f32_ref : nn_bf16_from_f32)(h2, p2, n);
				cr_assert_eq(memcmp(h1, h2, n * 2), 0, "bf16 copy (reference %d, step %d)", ref, t);
			}
	}
	nn_set_reference(0);
	/* NULL: no copy, the same step */
	nn_adamw_step_bf16(&o, 4, p1, NULL, g, m1, v1, n, 1);
	nn_adamw_step(&o, 4, p2, g, m2, v2, n, 1);
	cr_assert_eq(memcmp(p1, p2, n * 4), 0);
	free(p1), free(p2), free(g), free(m1), free(v1), free(m2), free(v2), free(h1), free(h2);
}

/* grad_scale in AdamW's pass is the same step as scaling the gradients first, bit for bit (the
 * trainer folds the DP mean, the loss scale and clipping into it), in the fast path and the ref. */
Test(nn_kernels, adamw_grad_scale_is_scaling_first)
{
	const size_t n = 1003;
	struct nn_adamw o = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f };
	float *g = fx_normal(n, 84, 1), *gs = malloc(n * 4);
	for (int ref = 0; ref < 2; ref++)
		for (int k = 0; k < 2; k++) {
			float s = k ? 0.3f : 0.5f;   /* a clip-like factor and a power of two */
			float *pa = fx_normal(n, 85, 1), *pb = fx_normal(n, 85, 1);
			float *ma = calloc(n, 4), *va = calloc(n, 4), *mb = calloc(n, 4), *vb = calloc(n, 4);
			memcpy(gs, g, n * 4);
			nn_scale(gs, n, s);
			struct nn_adamw os = o;
			os.grad_scale = s;
			for (int t = 1; t <= 2; t++) {
				(ref ? nn_adamw_step_ref : nn_adamw_step)(&os, t, pa, g, ma, va, n, 1);
				(ref ? nn_adamw_step_ref : nn_adamw_step)(&o, t, pb, gs, mb, vb, n, 1);
			}
			cr_assert(!memcmp(pa, pb, n * 4) && !memcmp(ma, mb, n * 4) && !memcmp(va, vb, n * 4),
				  "adamw (%s) with grad_scale %g differs from scaling the gradients first", ref ? "ref" : "fast", s);
			free(pa), free(pb), free(ma), free(va), free(mb), free(vb);
		}
	free(g), free(gs);
}

Test(nn_kernels, sumsq_and_scale)
{
	const size_t n = 10007;
	float *x = malloc(n * 4);
	double want = 0;
	for (size_t i = 0; i < n; i++) {
		x[i] = (float)((int)(i % 13) - 6) * 0.5f;
		want += (double)x[i] * x[i];
	}
	cr_assert(fabs(nn_sumsq(x, n) - want) < 1e-6 * want);
	nn_scale(x, n, -2.0f);
	cr_assert(fabs(nn_sumsq(x, n) - 4 * want) < 4e-6 * want);
	cr_assert_float_eq(x[0], 6.0f, 0);
	free(x);
}

Test(nn_kernels, threads_and_blas_description)
{
	nn_set_threads(1);
	cr_assert_eq(nn_get_threads(), 1);
	nn_set_threads(0);
	cr_assert_geq(nn_get_threads(), 1);
	const char *d = nn_blas_describe();
	cr_assert(strstr(d, "OpenBLAS") && strstr(d, "core"), "%s", d);
	cr_assert_eq(nn_gemm_get_backend(), NN_GEMM_ONEDNN); /* the measured default */
	nn_gemm_set_backend(NN_GEMM_OPENBLAS);
	cr_assert_eq(nn_gemm_get_backend(), NN_GEMM_OPENBLAS);
	cr_assert(strstr(nn_blas_describe(), "gemm OpenBLAS"));
	nn_gemm_set_backend(NN_GEMM_ONEDNN);
	cr_assert(strstr(nn_blas_describe(), "gemm oneDNN"));
}

/* nn_zero_floats: every element of [x, x + n) zeroed and nothing either side of it, for starts
 * that are not 64-byte aligned, lengths around a vector and a cache line, at 1, 2 and 3 threads. */
Test(nn_kernels, zero_floats)
{
	static const size_t lens[] = { 0, 1, 15, 16, 17, 31, 33, 1000, 4099 };
	float *buf = aligned_alloc(64, 4224 * sizeof(float));
	cr_assert(buf);
	for (int t = 1; t <= 3; t++) {
		nn_set_threads(t);
		for (size_t off = 0; off < 20; off += 3)
			for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
				for (size_t i = 0; i < 4224; i++)
					buf[i] = 1.5f;
				nn_zero_floats(buf + 8 + off, lens[k]);
				for (size_t i = 0; i < 4224; i++) {
					int in = i >= 8 + off && i < 8 + off + lens[k];
					cr_assert_eq(buf[i], in ? 0.0f : 1.5f, "element %zu (start %zu, n %zu, %d threads)", i,
						     8 + off, lens[k], t);
				}
			}
	}
	nn_set_threads(0);
	free(buf);
}

/* nn_adamw_pieces: pieces of odd lengths (a vector's tail, a single element), with and without
 * decay and bf16 copies, in one pass at 1, 2 and 3 threads: bit for bit each piece stepped alone
 * by nn_adamw_step_bf16 at one thread (an element's value does not depend on where a thread's
 * range starts or ends); within the reference's tolerance of nn_adamw_step_ref. */
Test(nn_kernels, adamw_pieces_one_pass)
{
	static const size_t len[] = { 37, 1, 16, 333, 15, 64 };
	enum { NP = sizeof len / sizeof len[0] };
	size_t total = 0, at[NP];
	for (int j = 0; j < NP; j++)
		at[j] = total, total += len[j];
	float *g = fx_normal(total, 91, 1), *p0 = fx_normal(total, 92, 1), *m0 = fx_normal(total, 93, 0.1f),
	      *v0 = fx_normal(total, 94, 0.1f);
	for (size_t i = 0; i < total; i++)
		v0[i] = fabsf(v0[i]);
	float *p1 = malloc(total * 4), *m1 = malloc(total * 4), *v1 = malloc(total * 4);
	float *p2 = malloc(total * 4), *m2 = malloc(total * 4), *v2 = malloc(total * 4);
	uint16_t *h1 = malloc(total * 2), *h2 = malloc(total * 2);
	cr_assert(p1 && m1 && v1 && p2 && m2 && v2 && h1 && h2);
	const struct nn_adamw o = { .lr = 1e-2f, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.1f,
				    .grad_scale = 0.5f };
	memcpy(p1, p0, total * 4), memcpy(m1, m0, total * 4), memcpy(v1, v0, total * 4);
	memset(h1, 0, total * 2);
	nn_set_threads(1);
	for (int j = 0; j < NP; j++)
		nn_adamw_step_bf16(&o, 3, p1 + at[j], j % 3 ? h1 + at[j] : NULL, g + at[j], m1 + at[j], v1 + at[j], len[j],
				   j % 2);
	for (int t = 1; t <= 3; t++) {
		nn_set_threads(t);
		memcpy(p2, p0, total * 4), memcpy(m2, m0, total * 4), memcpy(v2, v0, total * 4);
		memset(h2, 0, total * 2);
		struct nn_adamw_piece pc[NP];
		for (int j = 0; j < NP; j++)
			pc[j] = (struct nn_adamw_piece){ p2 + at[j], j % 3 ? h2 + at[j] : NULL, g + at[j], m2 + at[j],
							 v2 + at[j], len[j], j % 2 };
		nn_adamw_pieces(&o, 3, pc, NP);
		cr_assert(memcmp(p1, p2, total * 4) == 0 && memcmp(m1, m2, total * 4) == 0 &&
				  memcmp(v1, v2, total * 4) == 0 && memcmp(h1, h2, total * 2) == 0,
			  "one pass at %d threads against each piece alone", t);
	}
	nn_set_threads(0);
	memcpy(p2, p0, total * 4), memcpy(m2, m0, total * 4), memcpy(v2, v0, total * 4);
	for (int j = 0; j < NP; j++)
		nn_adamw_step_ref(&o, 3, p2 + at[j], g + at[j], m2 + at[j], v2 + at[j], len[j], j % 2);
	assert_close(p1, p2, total, 1e-6, 1e-5, "adamw pieces params");
	assert_close(m1, m2, total, 1e-7, 1e-5, "adamw pieces m");
	assert_close(v1, v2, total, 1e-7, 1e-5, "adamw pieces v");
	free(g), free(p0), free(m0), free(v0), free(p1), free(m1), free(v1), free(p2), free(m2), free(v2), free(h1);
	free(h2);
}

/* nn_sumsq_many: spans of 0, 1, a chunk less one, a chunk and one more, and many elements, at 1, 2
 * and 3 threads: within what fp32 sums of 4096 positive terms can lose (4096·2^-24 of the sum) of
 * the double sum, the same value every call at a thread count, and one span the same as nn_sumsq. */
Test(nn_kernels, sumsq_many_spans)
{
	static const size_t len[] = { 0, 1, 4095, 4097, 20000, 3 };
	enum { K = sizeof len / sizeof len[0] };
	const float *x[K];
	float *buf[K];
	double want = 0;
	for (int j = 0; j < K; j++) {
		buf[j] = fx_normal(len[j] ? len[j] : 1, 95 + j, 1);
		x[j] = buf[j];
		for (size_t i = 0; i < len[j]; i++)
			want += (double)buf[j][i] * buf[j][i];
	}
	for (int t = 1; t <= 3; t++) {
		nn_set_threads(t);
		double s = nn_sumsq_many(x, len, K);
		cr_assert(fabs(s - want) <= 4096 * 0x1p-24 * want, "%d threads: %.17g against %.17g", t, s, want);
		cr_assert(nn_sumsq_many(x, len, K) == s, "%d threads: another call, another sum", t);
		cr_assert(nn_sumsq_many(x + 4, len + 4, 1) == nn_sumsq(x[4], len[4]), "%d threads: one span", t);
	}
	nn_set_threads(0);
	for (int j = 0; j < K; j++)
		free(buf[j]);
}
