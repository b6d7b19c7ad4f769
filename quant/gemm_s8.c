/* quant/gemm_s8.c — INT8 GEMM: C(M,N) s32 = A(M,K) s8 · B(N,K)ᵀ s8. oneDNN's INT8 matmul on AMX
 * tiles (TDPBUSD, u8 × s8 → s32, on weights reordered once at pack time, one primitive per shape),
 * our AVX512-VNNI kernel (VPDPBUSD, u8 × s8 → s32); both undo the +128 shift of A by a per-column
 * compensation computed at pack time. The codes through fp32 GEMM for CPUs without VNNI (exact:
 * products and partial sums stay integers below 2^24), oneDNN's dnnl_gemm_s8s8s32 / u8s8s32, and
 * the plain reference. No intermediate saturation on our paths: VPDPBUSD and TDPBUSD add four
 * u8·s8 products (|.| <= 255·128) exactly into s32. oneDNN's GEMM API is exact only with VNNI or
 * AMX (quant_gemm_onednn_exact). The VNNI kernel and the AMX path's epilogue are AVX-512 code, built
 * where the compiler targets AVX512F, BW and VNNI (-march=native on such a CPU); elsewhere
 * quant_have_vnni() is 0, the packed GEMMs run a portable loop of the same arithmetic, and models
 * take the fp32 path. */
#include "quant/quant.h"

#include "common/common.h"
#include "nn/nn.h"

#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512VNNI__)
#define QUANT_VNNI_BUILT 1
#else
#define QUANT_VNNI_BUILT 0
#endif

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
		have = QUANT_VNNI_BUILT && ci.avx512vnni && ci.avx512bw && ci.avx512f && dnnl_isa_has_vnni() &&
		       strcmp(nn_dnnl_isa(), "avx2_vnni");
	}
	return have;
}

int quant_have_amx(void)
{
	static int have = -1;
	if (have < 0) {
		struct cpu_info ci;
		cpu_detect(&ci);
		have = ci.amx && quant_have_vnni() && !strcmp(nn_dnnl_isa(), "avx512_core_amx");
	}
	return have;
}

int quant_gemm_onednn_exact(void)
{
	return dnnl_isa_has_vnni();
}

void quant_gemm_set_backend(enum quant_gemm_backend b)
{
	if (b == QUANT_GEMM_AMX && !quant_have_amx())
		b = QUANT_GEMM_VNNI;
	if (b == QUANT_GEMM_VNNI && !quant_have_vnni())
		b = QUANT_GEMM_F32;
	g_backend = (int)b;
}

enum quant_gemm_backend quant_gemm_get_backend(void)
{
	if (g_backend < 0)
		g_backend = quant_have_amx() ? QUANT_GEMM_AMX : quant_have_vnni() ? QUANT_GEMM_VNNI : QUANT_GEMM_F32;
	return (enum quant_gemm_backend)g_backend;
}

const char *quant_gemm_backend_name(enum quant_gemm_backend b)
{
	return b == QUANT_GEMM_VNNI ? "vnni" : b == QUANT_GEMM_F32 ? "f32" : b == QUANT_GEMM_AMX ? "amx" : "onednn";
}

/* ------------------------------------------------------------------------------------------ */
/* oneDNN's INT8 matmul on AMX: weights reordered at pack time, primitives cached by shape */

struct quant_amx_w {
	dnnl_memory_desc_t md;       /* the blocked layout oneDNN's AMX kernel chose for (N, K) */
	void *data;                  /* owned, md's size */
};

/* The models have four shapes per preset; tests and generation's growing M add more. When full,
 * the entry built longest ago makes room (round robin), as in nn/matmul.c. */
#define AMX_NCACHE 64
/* The M the weights' layout is chosen with: oneDNN picks its AMX kernel for every M >= 3 and the
 * same layout for all of them (measured on oneDNN 2.6.3: N,K in {512,1536,2048} × {64,512,2048},
 * M 1…4096); for M <= 2 on narrow layers it offers only ref_int8 on that layout (the VNNI kernel
 * runs those anyway, AMX_MIN_M), and for K < 16 it picks its VNNI kernel (no AMX layout then). */
#define AMX_PACK_M 64
/* Below 4 rows (generation's one token per step) the VNNI kernel is faster: AMX ran at 0.6-0.8x
 * its speed at M=1 and 0.65-1.0x at M=2, 1.2-1.9x at M=4, 1.4-2.6x at M=8 (quant_gemm_u8s8_packed_f32
 * timed alone on the small model's four shapes, 1 thread, Sapphire Rapids; bench_quant's
 * gemm_int8 lines give M=1 and 64). */
#define AMX_MIN_M 4
/* The fused-dequantize path runs AMX on 64 rows at a time into an s32 scratch of 64·N that stays
 * in L2, dequantizing each block at once: at M=512 this ran 1.3-1.7 TOP/s where one 512-row
 * product then one dequantize pass over it ran 0.5-0.7 (1 thread; 128 rows: 0.7-1.7). */
#define AMX_CHUNK_M 64

struct amx_entry {
	int M, N, K, lda, ldc;       /* K: the packed weights' Kp */
	int nthr;                    /* the threads it was built for (amx_threads) */
	dnnl_memory_desc_t wmd;
	int amx;                     /* oneDNN's implementation is an AMX kernel: prim is used */
	char impl[64];               /* oneDNN's name for it */
	dnnl_primitive_t prim;
	dnnl_memory_t a, b, c;
};

static struct {
	pthread_mutex_t mu;
	int init, failed, n, next;
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	struct amx_entry e[AMX_NCACHE];
	int32_t *scratch;            /* the s32 products of the f32 variant, grown as needed */
	size_t scratch_n;
} g_amx = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void amx_entry_destroy(struct amx_entry *e)
{
	if (e->prim)
		dnnl_primitive_destroy(e->prim);
	if (e->a)
		dnnl_memory_destroy(e->a);
	if (e->b)
		dnnl_memory_destroy(e->b);
	if (e->c)
		dnnl_memory_destroy(e->c);
}

/* Under g_amx.mu. */
static int amx_engine(void)
{
	if (!g_amx.init) {
		g_amx.init = 1;
		if (dnnl_engine_create(&g_amx.eng, dnnl_cpu, 0) != dnnl_success ||
		    dnnl_stream_create(&g_amx.strm, g_amx.eng, dnnl_stream_default_flags) != dnnl_success)
			g_amx.failed = 1;
	}
	return !g_amx.failed;
}

/* The matmul's primitive descriptor: u8 A (M,K) with row stride lda, s8 weights (K,N) in `wmd`
 * (or format any when NULL), s32 C (M,N) with row stride ldc. Its implementation's name into
 * impl[64]. Under g_amx.mu. */
static dnnl_primitive_desc_t amx_pd(int M, int N, int K, int lda, int ldc, const dnnl_memory_desc_t *wmd,
				    char impl[64])
{
	dnnl_memory_desc_t amd, bmd, cmd;
	dnnl_dims_t ad = { M, K }, bd = { K, N }, cd = { M, N }, as = { lda, 1 }, cs = { ldc, 1 };
	dnnl_matmul_desc_t md;
	dnnl_primitive_desc_t pd = NULL;
	const char *name = NULL;
	if (wmd)
		bmd = *wmd;
	if (dnnl_memory_desc_init_by_strides(&amd, 2, ad, dnnl_u8, as) != dnnl_success ||
	    (!wmd && dnnl_memory_desc_init_by_tag(&bmd, 2, bd, dnnl_s8, dnnl_format_tag_any) != dnnl_success) ||
	    dnnl_memory_desc_init_by_strides(&cmd, 2, cd, dnnl_s32, cs) != dnnl_success ||
	    dnnl_matmul_desc_init(&md, &amd, &bmd, NULL, &cmd) != dnnl_success ||
	    dnnl_primitive_desc_create(&pd, &md, NULL, g_amx.eng, NULL) != dnnl_success)
		return NULL;
	if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) != dnnl_success || !name)
		name = "unknown";
	snprintf(impl, 64, "%s", name);
	return pd;
}

/* Reorder B (N rows of K codes, row stride ldb) into the layout of oneDNN's AMX kernel for
 * (N, Kp): the matmul runs on K rounded up to 4 with zero weights in the padding, as the VNNI
 * kernel does, because oneDNN's AMX kernel takes a strided A (lda = Kp > K) only when its K spans
 * the row (oneDNN 2.6.3 falls back to ref_int8 otherwise). 1 when oneDNN offers no AMX kernel
 * (p->amx stays NULL: the VNNI kernel runs), 0 done, < 0 error. */
static int amx_pack(struct quant_packed *p, const int8_t *B, int N, int K, int ldb)
{
	int Kp = p->Kp;
	int8_t *dense = calloc((size_t)N * Kp, 1);
	if (!dense)
		return ascent_error(ASCENT_ENOMEM, "out of memory for an %dx%d INT8 weight", N, K);
	for (int n = 0; n < N; n++)
		memcpy(dense + (size_t)n * Kp, B + (size_t)n * ldb, (size_t)K);
	pthread_mutex_lock(&g_amx.mu);
	char impl[64];
	dnnl_primitive_desc_t pd = amx_engine() ? amx_pd(AMX_PACK_M, N, Kp, Kp, N, NULL, impl) : NULL;
	struct quant_amx_w *w = NULL;
	dnnl_memory_t src = NULL, dst = NULL;
	dnnl_primitive_desc_t rpd = NULL;
	dnnl_primitive_t r = NULL;
	int rc = 1;
	if (!pd || !strstr(impl, "amx"))
		goto out;
	dnnl_memory_desc_t plain;
	dnnl_dims_t bd = { Kp, N }, bs = { 1, Kp };
	w = calloc(1, sizeof *w);
	if (!w) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory for an AMX weight layout");
		goto out;
	}
	w->md = *dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
	size_t bytes = dnnl_memory_desc_get_size(&w->md);
	w->data = aligned_alloc(64, (bytes + 63) & ~(size_t)63);
	if (!w->data) {
		rc = ascent_error(ASCENT_ENOMEM, "cannot allocate %zu bytes for an AMX INT8 weight", bytes);
		goto out;
	}
	if (dnnl_memory_desc_init_by_strides(&plain, 2, bd, dnnl_s8, bs) != dnnl_success ||
	    dnnl_memory_create(&src, &plain, g_amx.eng, dense) != dnnl_success ||
	    dnnl_memory_create(&dst, &w->md, g_amx.eng, w->data) != dnnl_success ||
	    dnnl_reorder_primitive_desc_create(&rpd, &plain, g_amx.eng, &w->md, g_amx.eng, NULL) != dnnl_success ||
	    dnnl_primitive_create(&r, rpd) != dnnl_success)
		goto out;
	dnnl_exec_arg_t args[2] = { { DNNL_ARG_FROM, src }, { DNNL_ARG_TO, dst } };
	if (dnnl_primitive_execute(r, g_amx.strm, 2, args) != dnnl_success ||
	    dnnl_stream_wait(g_amx.strm) != dnnl_success)
		goto out;
	p->amx = w;
	w = NULL;
	rc = 0;
out:
	if (w) {
		free(w->data);
		free(w);
	}
	if (r)
		dnnl_primitive_destroy(r);
	if (rpd)
		dnnl_primitive_desc_destroy(rpd);
	if (src)
		dnnl_memory_destroy(src);
	if (dst)
		dnnl_memory_destroy(dst);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	pthread_mutex_unlock(&g_amx.mu);
	free(dense);
	return rc;
}

/* The threads a product of M rows runs on: one below 2^25 multiply-adds, as the VNNI kernel
 * decides (waking the second thread costs more than it saves there), else nn's. oneDNN sizes a
 * primitive's thread team when it is built (omp_get_max_threads), so the count is set around
 * building and running it. */
static int amx_threads(int M, const struct quant_packed *B)
{
	return (int64_t)M * B->N * B->Kp < (1 << 25) ? 1 : nn_get_threads();
}

/* The cached primitive for (M, B's layout, lda, ldc, threads), built on first use; NULL when
 * oneDNN fails. An entry whose implementation is not an AMX kernel is cached too (amx = 0).
 * Under g_amx.mu. */
static struct amx_entry *amx_get(int M, const struct quant_packed *B, int lda, int ldc)
{
	if (!amx_engine())
		return NULL;
	int nthr = amx_threads(M, B);
	for (int i = 0; i < g_amx.n; i++) {
		struct amx_entry *e = &g_amx.e[i];
		if (e->M == M && e->N == B->N && e->K == B->Kp && e->lda == lda && e->ldc == ldc && e->nthr == nthr &&
		    dnnl_memory_desc_equal(&e->wmd, &B->amx->md))
			return e;
	}
	struct amx_entry e = { .M = M, .N = B->N, .K = B->Kp, .lda = lda, .ldc = ldc, .nthr = nthr, .wmd = B->amx->md };
	omp_set_num_threads(nthr);
	dnnl_primitive_desc_t pd = amx_pd(M, B->N, B->Kp, lda, ldc, &B->amx->md, e.impl);
	if (!pd) {
		omp_set_num_threads(nn_get_threads());
		return NULL;
	}
	e.amx = strstr(e.impl, "amx") != NULL;
	int ok = 1;
	if (e.amx)
		ok = dnnl_primitive_create(&e.prim, pd) == dnnl_success &&
		     dnnl_memory_create(&e.a, dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), g_amx.eng,
					DNNL_MEMORY_NONE) == dnnl_success &&
		     dnnl_memory_create(&e.b, &e.wmd, g_amx.eng, DNNL_MEMORY_NONE) == dnnl_success &&
		     dnnl_memory_create(&e.c, dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), g_amx.eng,
					DNNL_MEMORY_NONE) == dnnl_success;
	omp_set_num_threads(nn_get_threads());
	dnnl_primitive_desc_destroy(pd);
	if (!ok) {
		amx_entry_destroy(&e);
		return NULL;
	}
	if (g_amx.n < AMX_NCACHE) {
		g_amx.e[g_amx.n] = e;
		return &g_amx.e[g_amx.n++];
	}
	struct amx_entry *slot = &g_amx.e[g_amx.next];
	g_amx.next = (g_amx.next + 1) % AMX_NCACHE;
	amx_entry_destroy(slot);
	*slot = e;
	return slot;
}

/* C (M,N) s32 with row stride ldc = A·B (A u8 = a + 128), and when `sub`, − comp: Σ a·b exactly,
 * wrapping like the VNNI kernel's _mm512_sub_epi32. 0 when it ran, -1 when the VNNI kernel must run
 * instead. Under g_amx.mu. */
static int amx_run(int M, const uint8_t *A, int lda, const struct quant_packed *B, int32_t *C, int ldc, int sub)
{
	if (quant_gemm_get_backend() != QUANT_GEMM_AMX || !B->amx || M < AMX_MIN_M)
		return -1;
	struct amx_entry *e = amx_get(M, B, lda, ldc);
	if (!e || !e->amx)
		return -1;
	dnnl_exec_arg_t args[3] = { { DNNL_ARG_SRC, e->a }, { DNNL_ARG_WEIGHTS, e->b }, { DNNL_ARG_DST, e->c } };
	omp_set_num_threads(e->nthr);
	int ok = dnnl_memory_set_data_handle(e->a, (void *)A) == dnnl_success &&
		 dnnl_memory_set_data_handle(e->b, B->amx->data) == dnnl_success &&
		 dnnl_memory_set_data_handle(e->c, C) == dnnl_success &&
		 dnnl_primitive_execute(e->prim, g_amx.strm, 3, args) == dnnl_success &&
		 dnnl_stream_wait(g_amx.strm) == dnnl_success;
	omp_set_num_threads(nn_get_threads());
	if (!ok)
		return -1;
	if (!sub)
		return 0;
	int N = B->N;
	const int32_t *comp = B->comp;
#pragma omp parallel for num_threads(nn_get_threads()) schedule(static) if ((int64_t)M * N >= (1 << 16))
	for (int m = 0; m < M; m++) {
		int32_t *c = C + (size_t)m * ldc;
		for (int n = 0; n < N; n++)
			c[n] = (int32_t)((uint32_t)c[n] - (uint32_t)comp[n]);
	}
	return 0;
}

const char *quant_gemm_packed_impl(int M, const struct quant_packed *B)
{
	static __thread char name[64];
	snprintf(name, sizeof name, "ascent:avx512_vnni");
	if (quant_gemm_get_backend() != QUANT_GEMM_AMX || !B->amx || M < AMX_MIN_M)
		return name;
	pthread_mutex_lock(&g_amx.mu);
	struct amx_entry *e = amx_get(M < AMX_CHUNK_M ? M : AMX_CHUNK_M, B, B->Kp, B->N);
	if (e && e->amx)
		snprintf(name, sizeof name, "%s", e->impl);
	pthread_mutex_unlock(&g_amx.mu);
	return name;
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
	int rc = quant_have_amx() ? amx_pack(p, B, N, K, ldb) : 1;
	if (rc < 0)
		quant_packed_release(p);
	return rc < 0 ? rc : 0;
}

void quant_packed_release(struct quant_packed *p)
{
	if (!p)
		return;
	free(p->data);
	free(p->comp);
	if (p->amx) {
		free(p->amx->data);
		free(p->amx);
	}
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

#if QUANT_VNNI_BUILT

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

#else /* !QUANT_VNNI_BUILT */

/* The same arithmetic without AVX-512 (never chosen by quant_gemm_get_backend here; it keeps the
 * packed GEMMs correct when called): u8 × s8 products summed exactly, less the compensation, then
 * the epilogue's multiply and fused multiply-add. */
static void vnni_gemm(int M, const uint8_t *A, int lda, const struct quant_packed *B, const struct epi *e)
{
	size_t panel = (size_t)B->Kp * 16;
	for (int m = 0; m < M; m++)
		for (int n = 0; n < B->N; n++) {
			const int8_t *b = B->data + (size_t)(n / 16) * panel + (size_t)(n % 16) * 4;
			int64_t sum = 0;
			for (int k = 0; k < B->Kp; k++)
				sum += (int64_t)A[(size_t)m * lda + k] * b[(size_t)(k / 4) * 64 + (k % 4)];
			int32_t c = (int32_t)(sum - B->comp[n]);
			if (e->Y)
				e->Y[(size_t)m * e->ldy + n] = fmaf((float)c, e->bscale[n] * e->ascale[(size_t)m * e->ascale_stride],
								    e->bias ? e->bias[n] : 0.0f);
			else
				e->C[(size_t)m * e->ldc + n] = c;
		}
}

#endif /* QUANT_VNNI_BUILT */

void quant_gemm_u8s8_packed_s32(int M, const uint8_t *A, int lda, const struct quant_packed *B, int32_t *C, int ldc)
{
	if (B->amx) {
		pthread_mutex_lock(&g_amx.mu);
		int rc = amx_run(M, A, lda, B, C, ldc, 1);
		pthread_mutex_unlock(&g_amx.mu);
		if (!rc)
			return;
	}
	struct epi e = { .C = C, .ldc = ldc };
	vnni_gemm(M, A, lda, B, &e);
}

/* The VNNI kernel's epilogue on the AMX path's s32 products (comp not yet subtracted): the same
 * instructions in the same order (subtract comp, scale product bscale·ascale, one fused
 * multiply-add with the bias or 0), so the AMX path's f32 output is bit-identical to the VNNI
 * kernel's. One pass over C, 16 columns at a time. */
#if QUANT_VNNI_BUILT
static void amx_dequant(int M, int N, const int32_t *C, const int32_t *comp, const float *ascale, int ascale_stride,
			const float *bscale, const float *bias, float *Y, int ldy)
{
#pragma omp parallel for num_threads(nn_get_threads()) schedule(static) if ((int64_t)M * N >= (1 << 16))
	for (int m = 0; m < M; m++) {
		__m512 as = _mm512_set1_ps(ascale[(size_t)m * ascale_stride]);
		const int32_t *c = C + (size_t)m * N;
		float *y = Y + (size_t)m * ldy;
		for (int n = 0; n < N; n += 16) {
			int left = N - n;
			__mmask16 mk = left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1u);
			__m512i v = _mm512_sub_epi32(_mm512_maskz_loadu_epi32(mk, c + n), _mm512_maskz_loadu_epi32(mk, comp + n));
			__m512 bs = _mm512_maskz_loadu_ps(mk, bscale + n);
			__m512 bb = bias ? _mm512_maskz_loadu_ps(mk, bias + n) : _mm512_setzero_ps();
			__m512 yv = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), _mm512_mul_ps(bs, as), bb);
			_mm512_mask_storeu_ps(y + n, mk, yv);
		}
	}
}
#else
static void amx_dequant(int M, int N, const int32_t *C, const int32_t *comp, const float *ascale, int ascale_stride,
			const float *bscale, const float *bias, float *Y, int ldy)
{
	for (int m = 0; m < M; m++)
		for (int n = 0; n < N; n++)
			Y[(size_t)m * ldy + n] = fmaf((float)(C[(size_t)m * N + n] - comp[n]), bscale[n] * ascale[(size_t)m * ascale_stride],
						      bias ? bias[n] : 0.0f);
}
#endif

void quant_gemm_u8s8_packed_f32(int M, const uint8_t *A, int lda, const struct quant_packed *B, const float *ascale,
				int ascale_stride, const float *bscale, const float *bias, float *Y, int ldy)
{
	int m0 = 0;
	if (B->amx) {
		pthread_mutex_lock(&g_amx.mu);
		size_t need = (size_t)(M < AMX_CHUNK_M ? M : AMX_CHUNK_M) * B->N;
		if (need > g_amx.scratch_n) {
			int32_t *s = realloc(g_amx.scratch, need * sizeof *s);
			if (s) {
				g_amx.scratch = s;
				g_amx.scratch_n = need;
			}
		}
		while (m0 < M && need <= g_amx.scratch_n) {
			int mc = M - m0 < AMX_CHUNK_M ? M - m0 : AMX_CHUNK_M;
			if (amx_run(mc, A + (size_t)m0 * lda, lda, B, g_amx.scratch, B->N, 0))
				break;
			amx_dequant(mc, B->N, g_amx.scratch, B->comp, ascale + (size_t)m0 * ascale_stride, ascale_stride, bscale,
				    bias, Y + (size_t)m0 * ldy, ldy);
			m0 += mc;
		}
		pthread_mutex_unlock(&g_amx.mu);
		if (m0 == M)
			return;
	}
	/* the rows AMX did not take (all of them, or a remainder below AMX_MIN_M) */
	struct epi e = { .Y = Y + (size_t)m0 * ldy, .ldy = ldy, .ascale = ascale + (size_t)m0 * ascale_stride,
			 .ascale_stride = ascale_stride, .bscale = bscale, .bias = bias };
	vnni_gemm(M - m0, A + (size_t)m0 * lda, lda, B, &e);
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
