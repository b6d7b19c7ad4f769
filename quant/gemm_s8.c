/* quant/gemm_s8.c — INT8 GEMM: C(M,N) s32 = A(M,K) s8 · B(N,K)ᵀ s8. Our AVX512-VNNI kernel
 * (VPDPBUSD, u8 × s8 → s32 with the +128 shift of A undone by a per-column compensation computed
 * at pack time), the codes through fp32 GEMM for CPUs without VNNI (exact: products and partial sums
 * stay integers below 2^24), oneDNN's dnnl_gemm_s8s8s32 / u8s8s32, and the plain reference. No
 * intermediate saturation on our paths: VPDPBUSD adds four u8·s8 products (|.| <= 255·128)
 * exactly into s32. oneDNN's is exact only with VNNI or AMX (quant_gemm_onednn_exact). */
#include "quant/quant.h"

#include "common/common.h"
#include "nn/nn.h"

#include <immintrin.h>
#include <oneapi/dnnl/dnnl.h>
#include <stdlib.h>
#include <string.h>

void quant_gemm_s8s8s32_ref(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
			    int ldc)
{
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++) {
			int32_t s = 0;
			for (int k = 0; k < K; k++)
				s += (int32_t)A[(size_t)m * lda + k] * (int32_t)B[(size_t)n * ldb + k];
			C[(size_t)m * ldc + n] = s;
		}
}

/* ------------------------------------------------------------------------------------------ */
/* Backend choice */

static int g_backend = -1;

/* oneDNN's ISAs with VNNI (or AMX): its INT8 kernels have no 16-bit intermediate there */
static int dnnl_isa_has_vnni(void)
{
	const char *isa = nn_dnnl_isa();
	return !strcmp(isa, "avx512_core_vnni") || !strcmp(isa, "avx512_core_bf16") ||
	       !strcmp(isa, "avx512_core_amx") || !strcmp(isa, "avx2_vnni");
}

int quant_have_vnni(void)
{
	static int have = -1;
	if (have < 0) {
		struct cpu_info ci;
		cpu_detect(&ci);
		/* ONEDNN_MAX_CPU_ISA below VNNI caps our kernel too (avx2_vnni has no AVX-512) */
		have = ci.avx512vnni && ci.avx512bw && ci.avx512f && dnnl_isa_has_vnni() &&
		       strcmp(nn_dnnl_isa(), "avx2_vnni");
	}
	return have;
}

int quant_gemm_onednn_exact(void)
{
	return dnnl_isa_has_vnni();
}

void quant_gemm_set_backend(enum quant_gemm_backend b)
{
	g_backend = (b == QUANT_GEMM_VNNI && !quant_have_vnni()) ? QUANT_GEMM_F32 : (int)b;
}

enum quant_gemm_backend quant_gemm_get_backend(void)
{
	if (g_backend < 0)
		g_backend = quant_have_vnni() ? QUANT_GEMM_VNNI : QUANT_GEMM_F32;
	return (enum quant_gemm_backend)g_backend;
}

const char *quant_gemm_backend_name(enum quant_gemm_backend b)
{
	return b == QUANT_GEMM_VNNI ? "vnni" : b == QUANT_GEMM_F32 ? "f32" : "onednn";
}

/* ------------------------------------------------------------------------------------------ */
/* Packing */

int quant_pack_b(struct quant_packed *p, const int8_t *B, int N, int K, int ldb)
{
	memset(p, 0, sizeof *p);
	if (N < 1 || K < 1)
		return ascent_error(ASCENT_EINTERNAL, "quant_pack_b: empty matrix %dx%d", N, K);
	int N16 = (N + 15) & ~15, Kp = (K + 3) & ~3;
	size_t bytes = (size_t)N16 * Kp;
	p->data = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	p->comp = calloc((size_t)N16, sizeof *p->comp);
	if (!p->data || !p->comp) {
		quant_packed_release(p);
		return ascent_error(ASCENT_ENOMEM, "cannot allocate %zu bytes for a packed INT8 weight", bytes);
	}
	memset(p->data, 0, bytes);
	p->N = N;
	p->K = K;
	p->Kp = Kp;
	size_t panel = (size_t)Kp * 16;
	for (int n = 0; n < N; n++) {
		int8_t *dst = p->data + (size_t)(n / 16) * panel + (size_t)(n % 16) * 4;
		const int8_t *src = B + (size_t)n * ldb;
		int32_t sum = 0;
		for (int k = 0; k < K; k++) {
			dst[(size_t)(k / 4) * 64 + (k % 4)] = src[k];
			sum += src[k];
		}
		p->comp[n] = 128 * sum;
	}
	return 0;
}

void quant_packed_release(struct quant_packed *p)
{
	if (!p)
		return;
	free(p->data);
	free(p->comp);
	memset(p, 0, sizeof *p);
}

/* ------------------------------------------------------------------------------------------ */
/* The VNNI micro-kernel: MR rows × NV panels of 16 columns. Inlined with constant MR, NV so the
 * accumulators live in registers (MR·NV <= 24 of the 32 zmm). */

#define MR_MAX 6
#define NV_MAX 4

struct epi {
	int32_t *C;                  /* s32 output, or NULL */
	int ldc;
	float *Y;                    /* f32 output, or NULL */
	int ldy;
	const float *ascale;
	int ascale_stride;
	const float *bscale, *bias;
};

static inline __attribute__((always_inline)) void ukernel(const int MR, const int NV, int k4n, const uint8_t *A,
							   int lda, const int8_t *Bp, size_t panel, const int32_t *comp,
							   int m0, int n0, int N, const struct epi *e)
{
	__m512i acc[MR_MAX][NV_MAX];
	#pragma GCC unroll 8
	for (int r = 0; r < MR; r++)
		#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			acc[r][v] = _mm512_setzero_si512();
	for (int k4 = 0; k4 < k4n; k4++) {
		__m512i b[NV_MAX];
		#pragma GCC unroll 8
		for (int v = 0; v < NV; v++)
			b[v] = _mm512_load_si512((const void *)(Bp + (size_t)v * panel + (size_t)k4 * 64));
		#pragma GCC unroll 8
		for (int r = 0; r < MR; r++) {
			int32_t a4;
			memcpy(&a4, A + (size_t)r * lda + (size_t)k4 * 4, 4);
			__m512i a = _mm512_set1_epi32(a4);
			#pragma GCC unroll 8
			for (int v = 0; v < NV; v++)
				acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], a, b[v]);
		}
	}
	#pragma GCC unroll 8
	for (int v = 0; v < NV; v++) {
		int n = n0 + 16 * v, left = N - n;
		__mmask16 mk = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
		__m512i cp = _mm512_loadu_si512((const void *)(comp + n));
		__m512 bs = _mm512_setzero_ps(), bb = _mm512_setzero_ps();
		if (e->Y) {
			bs = _mm512_maskz_loadu_ps(mk, e->bscale + n);
			if (e->bias)
				bb = _mm512_maskz_loadu_ps(mk, e->bias + n);
		}
		#pragma GCC unroll 8
		for (int r = 0; r < MR; r++) {
			__m512i c = _mm512_sub_epi32(acc[r][v], cp);
			if (e->Y) {
				__m512 s = _mm512_mul_ps(bs, _mm512_set1_ps(e->ascale[(size_t)(m0 + r) * e->ascale_stride]));
				__m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), s, bb);
				_mm512_mask_storeu_ps(e->Y + (size_t)(m0 + r) * e->ldy + n, mk, y);
			} else {
				_mm512_mask_storeu_epi32(e->C + (size_t)(m0 + r) * e->ldc + n, mk, c);
			}
		}
	}
}

/* The main 6 × 64 tile with named accumulators (GCC keeps an accumulator array in memory). */
static void ukernel_6x4(int k4n, const uint8_t *A, int lda, const int8_t *Bp, size_t panel, const int32_t *comp,
			int m0, int n0, int N, const struct epi *e)
{
#define Z4(r) __m512i c##r##0 = _mm512_setzero_si512(), c##r##1 = c##r##0, c##r##2 = c##r##0, c##r##3 = c##r##0
	Z4(0); Z4(1); Z4(2); Z4(3); Z4(4); Z4(5);
#undef Z4
	const int8_t *b0p = Bp, *b1p = Bp + panel, *b2p = Bp + 2 * panel, *b3p = Bp + 3 * panel;
	const uint8_t *a0 = A, *a1 = A + lda, *a2 = A + 2 * (size_t)lda, *a3 = A + 3 * (size_t)lda,
		      *a4 = A + 4 * (size_t)lda, *a5 = A + 5 * (size_t)lda;
	for (int k4 = 0; k4 < k4n; k4++) {
		size_t ko = (size_t)k4 * 64, ka = (size_t)k4 * 4;
		__m512i b0 = _mm512_load_si512((const void *)(b0p + ko)), b1 = _mm512_load_si512((const void *)(b1p + ko));
		__m512i b2 = _mm512_load_si512((const void *)(b2p + ko)), b3 = _mm512_load_si512((const void *)(b3p + ko));
		int32_t t;
#define ROW(r)                                                   \
	do {                                                     \
		memcpy(&t, a##r + ka, 4);                        \
		__m512i av = _mm512_set1_epi32(t);               \
		c##r##0 = _mm512_dpbusd_epi32(c##r##0, av, b0);  \
		c##r##1 = _mm512_dpbusd_epi32(c##r##1, av, b1);  \
		c##r##2 = _mm512_dpbusd_epi32(c##r##2, av, b2);  \
		c##r##3 = _mm512_dpbusd_epi32(c##r##3, av, b3);  \
	} while (0)
		ROW(0); ROW(1); ROW(2); ROW(3); ROW(4); ROW(5);
#undef ROW
	}
	__m512i acc[MR_MAX][NV_MAX] = { { c00, c01, c02, c03 }, { c10, c11, c12, c13 }, { c20, c21, c22, c23 },
					 { c30, c31, c32, c33 }, { c40, c41, c42, c43 }, { c50, c51, c52, c53 } };
	for (int v = 0; v < NV_MAX; v++) {
		int n = n0 + 16 * v, left = N - n;
		__mmask16 mk = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
		__m512i cp = _mm512_loadu_si512((const void *)(comp + n));
		__m512 bs = _mm512_setzero_ps(), bb = _mm512_setzero_ps();
		if (e->Y) {
			bs = _mm512_maskz_loadu_ps(mk, e->bscale + n);
			if (e->bias)
				bb = _mm512_maskz_loadu_ps(mk, e->bias + n);
		}
		for (int r = 0; r < MR_MAX; r++) {
			__m512i c = _mm512_sub_epi32(acc[r][v], cp);
			if (e->Y) {
				__m512 sc = _mm512_mul_ps(bs, _mm512_set1_ps(e->ascale[(size_t)(m0 + r) * e->ascale_stride]));
				__m512 y = _mm512_fmadd_ps(_mm512_cvtepi32_ps(c), sc, bb);
				_mm512_mask_storeu_ps(e->Y + (size_t)(m0 + r) * e->ldy + n, mk, y);
			} else {
				_mm512_mask_storeu_epi32(e->C + (size_t)(m0 + r) * e->ldc + n, mk, c);
			}
		}
	}
}

#define UK(mr, nv) ukernel(mr, nv, k4n, A + (size_t)m * lda, lda, Bp, panel, B->comp, m, n0, N, e)

static void vnni_gemm(int M, const uint8_t *A, int lda, const struct quant_packed *B, const struct epi *e)
{
	int N = B->N, npanels = (N + 15) / 16, nblocks = (npanels + NV_MAX - 1) / NV_MAX, k4n = B->Kp / 4;
	size_t panel = (size_t)B->Kp * 16;
	int nt = nn_get_threads();
	/* waking the second thread costs tens of µs (libgomp waits passively: nn_blas_fix_core), so
	 * below ~2^25 multiply-adds one thread is faster (bench_quant: attn_proj 512x512 at M=64 went
	 * from 346 to 651 GOPS, at M=1 from 7 to 214) */
	if ((int64_t)M * N * B->Kp < (1 << 25) || nblocks < 2)
		nt = 1;
#pragma omp parallel for num_threads(nt) schedule(static)
	for (int jb = 0; jb < nblocks; jb++) {
		int p0 = jb * NV_MAX, nv = npanels - p0 < NV_MAX ? npanels - p0 : NV_MAX, n0 = p0 * 16;
		const int8_t *Bp = B->data + (size_t)p0 * panel;
		for (int m = 0; m < M; m += MR_MAX) {
			int mr = M - m < MR_MAX ? M - m : MR_MAX;
			switch (mr * 8 + nv) {
			case 6 * 8 + 4: ukernel_6x4(k4n, A + (size_t)m * lda, lda, Bp, panel, B->comp, m, n0, N, e); break;
			case 5 * 8 + 4: UK(5, 4); break;
			case 4 * 8 + 4: UK(4, 4); break;
			case 3 * 8 + 4: UK(3, 4); break;
			case 2 * 8 + 4: UK(2, 4); break;
			case 1 * 8 + 4: UK(1, 4); break;
			case 6 * 8 + 3: UK(6, 3); break;
			case 5 * 8 + 3: UK(5, 3); break;
			case 4 * 8 + 3: UK(4, 3); break;
			case 3 * 8 + 3: UK(3, 3); break;
			case 2 * 8 + 3: UK(2, 3); break;
			case 1 * 8 + 3: UK(1, 3); break;
			case 6 * 8 + 2: UK(6, 2); break;
			case 5 * 8 + 2: UK(5, 2); break;
			case 4 * 8 + 2: UK(4, 2); break;
			case 3 * 8 + 2: UK(3, 2); break;
			case 2 * 8 + 2: UK(2, 2); break;
			case 1 * 8 + 2: UK(1, 2); break;
			case 6 * 8 + 1: UK(6, 1); break;
			case 5 * 8 + 1: UK(5, 1); break;
			case 4 * 8 + 1: UK(4, 1); break;
			case 3 * 8 + 1: UK(3, 1); break;
			case 2 * 8 + 1: UK(2, 1); break;
			default: UK(1, 1); break;
			}
		}
	}
}

void quant_gemm_u8s8_packed_s32(int M, const uint8_t *A, int lda, const struct quant_packed *B, int32_t *C, int ldc)
{
	struct epi e = { .C = C, .ldc = ldc };
	vnni_gemm(M, A, lda, B, &e);
}

void quant_gemm_u8s8_packed_f32(int M, const uint8_t *A, int lda, const struct quant_packed *B, const float *ascale,
				int ascale_stride, const float *bscale, const float *bias, float *Y, int ldy)
{
	struct epi e = { .Y = Y, .ldy = ldy, .ascale = ascale, .ascale_stride = ascale_stride, .bscale = bscale,
			 .bias = bias };
	vnni_gemm(M, A, lda, B, &e);
}

/* ------------------------------------------------------------------------------------------ */
/* Without VNNI: the codes through fp32 GEMM, exactly */

/* Every product of two codes (|.| <= 127² = 16129) is an integer a float holds exactly, and so is
 * every partial sum while it stays below 2^24: a chunk of at most QUANT_F32_CHUNK_K products
 * (1024 · 16129 < 2^24) sums exactly in any order, with or without FMA, on any ISA. Chunks are
 * added in int32. */
#define QUANT_F32_CHUNK_K 1024

int quant_gemm_s8s8s32_f32(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
			   int ldc)
{
	if (M <= 0 || N <= 0)
		return 0;
	int kc = K < QUANT_F32_CHUNK_K ? K : QUANT_F32_CHUNK_K;
	float *a = malloc((size_t)M * kc * sizeof *a), *b = malloc((size_t)N * kc * sizeof *b),
	      *c = malloc((size_t)M * N * sizeof *c);
	if (!a || !b || !c) {
		free(a), free(b), free(c);
		return ascent_error(ASCENT_ENOMEM, "out of memory for a %dx%dx%d INT8 GEMM", M, N, K);
	}
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++)
			C[(size_t)m * ldc + n] = 0;
	for (int k0 = 0; k0 < K; k0 += kc) {
		int kn = K - k0 < kc ? K - k0 : kc;
		for (int m = 0; m < M; m++)
			for (int k = 0; k < kn; k++)
				a[(size_t)m * kn + k] = A[(size_t)m * lda + k0 + k];
		for (int n = 0; n < N; n++)
			for (int k = 0; k < kn; k++)
				b[(size_t)n * kn + k] = B[(size_t)n * ldb + k0 + k];
		nn_gemm('N', 'T', M, N, kn, 1.0f, a, kn, b, kn, 0.0f, c, N);
		for (int m = 0; m < M; m++)
			for (int n = 0; n < N; n++)
				C[(size_t)m * ldc + n] += (int32_t)c[(size_t)m * N + n];
	}
	free(a), free(b), free(c);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* oneDNN and the convenience path */

int quant_gemm_s8s8s32_onednn(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
			      int ldc)
{
	const int32_t co = 0;
	dnnl_status_t st = dnnl_gemm_s8s8s32('N', 'T', 'F', M, N, K, 1.0f, A, lda, 0, B, ldb, 0, 0.0f, C, ldc, &co);
	if (st != dnnl_success)
		return ascent_error(ASCENT_EINTERNAL, "dnnl_gemm_s8s8s32 refused M=%d N=%d K=%d (status %d)", M, N, K,
				    (int)st);
	return 0;
}

int quant_gemm_u8s8s32_onednn(int M, int N, int K, const uint8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
			      int ldc)
{
	const int32_t co = 0;
	dnnl_status_t st = dnnl_gemm_u8s8s32('N', 'T', 'F', M, N, K, 1.0f, A, lda, 128, B, ldb, 0, 0.0f, C, ldc, &co);
	if (st != dnnl_success)
		return ascent_error(ASCENT_EINTERNAL, "dnnl_gemm_u8s8s32 refused M=%d N=%d K=%d (status %d)", M, N, K,
				    (int)st);
	return 0;
}

int quant_gemm_s8s8s32(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C, int ldc)
{
	if (!quant_have_vnni())
		return quant_gemm_s8s8s32_f32(M, N, K, A, lda, B, ldb, C, ldc);
	struct quant_packed p;
	int rc = quant_pack_b(&p, B, N, K, ldb);
	if (rc)
		return rc;
	int Kp = p.Kp;
	uint8_t *au = calloc((size_t)M * Kp, 1);
	if (!au) {
		quant_packed_release(&p);
		return ascent_error(ASCENT_ENOMEM, "out of memory for an %dx%d INT8 operand", M, K);
	}
	for (int m = 0; m < M; m++)
		for (int k = 0; k < K; k++)
			au[(size_t)m * Kp + k] = (uint8_t)(A[(size_t)m * lda + k] + 128);
	quant_gemm_u8s8_packed_s32(M, au, Kp, &p, C, ldc);
	free(au);
	quant_packed_release(&p);
	return 0;
}
