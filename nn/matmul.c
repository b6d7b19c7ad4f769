/* nn/matmul.c — oneDNN's matmul primitive with the primitives cached by shape: fp32 GEMMs (nn_gemm's
 * oneDNN backend, with the linear layers' bias fused into the product) and bf16 GEMMs
 * (precision.c), whose result may also be stored in bf16 (the qkv product the bf16 attention
 * reads). Measured on the build machine (Sapphire Rapids, 2 threads) the fp32 matmul runs
 * the model's GEMM shapes on oneDNN's brgemm kernels as fast as dnnl_sgemm or faster, most on the
 * backward's transposed operands (dnnl_sgemm's 'T','N' shapes run at 145-170 GFLOP/s, the matmul
 * at 230-300); see bench_nn's "gemm" lines. */
#include "nn/internal.h"

#include <oneapi/dnnl/dnnl.h>
#include <pthread.h>

/* The model has a dozen shapes per preset; tests, evaluation and generation add more. When full,
 * the entry built longest ago makes room (round robin). */
#define NCACHE 128

struct mm_entry {
	int bf16, dst16, M, N, K, ta, tb, lda, ldb, ldc, bias;
	float alpha, beta;
	dnnl_primitive_t prim;
	dnnl_memory_t a, b, c, bias_mem;
};

static struct {
	pthread_mutex_t mu;
	int init, failed, n, next;  /* next: the entry to replace when full */
	dnnl_engine_t eng;
	dnnl_stream_t strm;
	struct mm_entry e[NCACHE];
} g_mm = { .mu = PTHREAD_MUTEX_INITIALIZER };

static void entry_destroy(struct mm_entry *e)
{
	if (e->prim)
		dnnl_primitive_destroy(e->prim);
	if (e->a)
		dnnl_memory_destroy(e->a);
	if (e->b)
		dnnl_memory_destroy(e->b);
	if (e->c)
		dnnl_memory_destroy(e->c);
	if (e->bias_mem)
		dnnl_memory_destroy(e->bias_mem);
}

/* Build (or find) the primitive for `key`; NULL when oneDNN refuses it. Under g_mm.mu. */
static struct mm_entry *mm_get(const struct mm_entry *key)
{
	if (!g_mm.init) {
		g_mm.init = 1;
		if (dnnl_engine_create(&g_mm.eng, dnnl_cpu, 0) != dnnl_success ||
		    dnnl_stream_create(&g_mm.strm, g_mm.eng, dnnl_stream_default_flags) != dnnl_success)
			g_mm.failed = 1;
	}
	if (g_mm.failed)
		return NULL;
	for (int i = 0; i < g_mm.n; i++) {
		struct mm_entry *e = &g_mm.e[i];
		if (e->bf16 == key->bf16 && e->dst16 == key->dst16 && e->M == key->M && e->N == key->N && e->K == key->K &&
		    e->ta == key->ta && e->tb == key->tb && e->lda == key->lda && e->ldb == key->ldb && e->ldc == key->ldc &&
		    e->bias == key->bias && e->alpha == key->alpha && e->beta == key->beta)
			return e;
	}
	struct mm_entry e = *key;
	e.prim = NULL;
	e.a = e.b = e.c = e.bias_mem = NULL;
	dnnl_data_type_t in = e.bf16 ? dnnl_bf16 : dnnl_f32;
	dnnl_memory_desc_t amd, bmd, cmd, biasmd;
	dnnl_dims_t ad = { e.M, e.K }, bd = { e.K, e.N }, cd = { e.M, e.N }, bsd = { 1, e.N };
	dnnl_dims_t as = { e.ta ? 1 : e.lda, e.ta ? e.lda : 1 }, bs = { e.tb ? 1 : e.ldb, e.tb ? e.ldb : 1 },
		    cs = { e.ldc, 1 }, bss = { e.N, 1 };
	dnnl_matmul_desc_t md;
	dnnl_primitive_attr_t attr = NULL;
	dnnl_post_ops_t po = NULL;
	dnnl_primitive_desc_t pd = NULL;
	int ok = dnnl_memory_desc_init_by_strides(&amd, 2, ad, in, as) == dnnl_success &&
		 dnnl_memory_desc_init_by_strides(&bmd, 2, bd, in, bs) == dnnl_success &&
		 dnnl_memory_desc_init_by_strides(&cmd, 2, cd, e.dst16 ? dnnl_bf16 : dnnl_f32, cs) == dnnl_success &&
		 dnnl_memory_desc_init_by_strides(&biasmd, 2, bsd, dnnl_f32, bss) == dnnl_success &&
		 dnnl_matmul_desc_init(&md, &amd, &bmd, e.bias ? &biasmd : NULL, &cmd) == dnnl_success &&
		 dnnl_primitive_attr_create(&attr) == dnnl_success;
	if (ok && e.alpha != 1.0f)
		ok = dnnl_primitive_attr_set_output_scales(attr, 1, 0, &e.alpha) == dnnl_success;
	if (ok && e.beta != 0.0f)
		ok = dnnl_post_ops_create(&po) == dnnl_success && dnnl_post_ops_append_sum(po, e.beta) == dnnl_success &&
		     dnnl_primitive_attr_set_post_ops(attr, po) == dnnl_success;
	ok = ok && dnnl_primitive_desc_create(&pd, &md, attr, g_mm.eng, NULL) == dnnl_success &&
	     dnnl_primitive_create(&e.prim, pd) == dnnl_success &&
	     dnnl_memory_create(&e.a, &amd, g_mm.eng, DNNL_MEMORY_NONE) == dnnl_success &&
	     dnnl_memory_create(&e.b, &bmd, g_mm.eng, DNNL_MEMORY_NONE) == dnnl_success &&
	     dnnl_memory_create(&e.c, &cmd, g_mm.eng, DNNL_MEMORY_NONE) == dnnl_success &&
	     (!e.bias || dnnl_memory_create(&e.bias_mem, &biasmd, g_mm.eng, DNNL_MEMORY_NONE) == dnnl_success);
	if (pd)
		dnnl_primitive_desc_destroy(pd);
	if (po)
		dnnl_post_ops_destroy(po);
	if (attr)
		dnnl_primitive_attr_destroy(attr);
	if (!ok) {
		entry_destroy(&e);
		return NULL;
	}
	if (g_mm.n < NCACHE) {
		g_mm.e[g_mm.n] = e;
		return &g_mm.e[g_mm.n++];
	}
	struct mm_entry *slot = &g_mm.e[g_mm.next];
	g_mm.next = (g_mm.next + 1) % NCACHE;
	entry_destroy(slot);
	*slot = e;
	return slot;
}

int nn_matmul(int flags, int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B,
	      int ldb, const float *bias, float beta, void *C, int ldc)
{
	if (M <= 0 || N <= 0 || K <= 0)
		return -1;
	struct mm_entry key = { .bf16 = (flags & NN_MM_BF16) != 0, .dst16 = (flags & NN_MM_DST_BF16) != 0, .M = M, .N = N,
				.K = K, .ta = ta != 0, .tb = tb != 0, .lda = lda,
				.ldb = ldb, .ldc = ldc, .bias = bias != NULL, .alpha = alpha, .beta = beta };
	pthread_mutex_lock(&g_mm.mu);
	struct mm_entry *e = mm_get(&key);
	int ok = e != NULL;
	if (ok) {
		dnnl_exec_arg_t args[4] = { { DNNL_ARG_SRC, e->a },
					    { DNNL_ARG_WEIGHTS, e->b },
					    { DNNL_ARG_DST, e->c },
					    { DNNL_ARG_BIAS, e->bias_mem } };
		ok = dnnl_memory_set_data_handle(e->a, (void *)A) == dnnl_success &&
		     dnnl_memory_set_data_handle(e->b, (void *)B) == dnnl_success &&
		     dnnl_memory_set_data_handle(e->c, C) == dnnl_success &&
		     (!bias || dnnl_memory_set_data_handle(e->bias_mem, (void *)bias) == dnnl_success) &&
		     dnnl_primitive_execute(e->prim, g_mm.strm, bias ? 4 : 3, args) == dnnl_success &&
		     dnnl_stream_wait(g_mm.strm) == dnnl_success;
	}
	pthread_mutex_unlock(&g_mm.mu);
	return ok ? 0 : -1;
}
