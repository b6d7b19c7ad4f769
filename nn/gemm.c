/* nn/gemm.c — the GEMM dispatch (OpenBLAS or oneDNN, plus a plain reference), thread counts for
 * BLAS and nn's OpenMP loops, and the OpenBLAS core fix-up (re-exec with OPENBLAS_CORETYPE). */
#include "nn/internal.h"

#include "common/common.h"

#include <cblas.h>
#include <dlfcn.h>
#include <oneapi/dnnl/dnnl.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Process-wide settings, written by the main thread before (or between) model calls. */
/* oneDNN is the default: measured on the build machine (bench_nn, 2 threads) the training step runs
 * 1.1-1.2x faster with it than with OpenBLAS, because oneDNN shares libgomp's thread pool with nn's
 * OpenMP loops while OpenBLAS's own pthreads spin (sched_yield) against them between calls;
 * single large GEMMs are on par (~300 GFLOP/s), per-head attention products 2x faster. */
static enum nn_gemm_backend g_backend = NN_GEMM_ONEDNN;
static int g_threads;          /* 0 until nn_set_threads */
static char g_fixed_from[32];  /* core OpenBLAS had picked before nn_blas_fix_core restarted us */

#define REEXEC_GUARD "ASCENT_BLAS_REEXEC"

void nn_gemm_set_backend(enum nn_gemm_backend b)
{
	g_backend = b;
}

enum nn_gemm_backend nn_gemm_get_backend(void)
{
	return g_backend;
}

/* Ranks sharing this host, from the launcher's environment (1 when not launched by one). */
static int ranks_on_host(void)
{
	static const char *vars[] = { "OMPI_COMM_WORLD_LOCAL_SIZE", "LOCAL_WORLD_SIZE", "MPI_LOCALNRANKS",
				      "SLURM_NTASKS_PER_NODE" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v) {
			int n = atoi(v);
			if (n > 0)
				return n;
		}
	}
	return 1;
}

void nn_set_threads(int n)
{
	if (n <= 0)
		n = cpu_default_threads(ranks_on_host());
	g_threads = n;
	openblas_set_num_threads(n);
	omp_set_num_threads(n);
}

int nn_get_threads(void)
{
	if (g_threads <= 0)
		nn_set_threads(0);
	return g_threads;
}

/* ISA level a core name stands for: 3 AVX-512, 2 AVX2, 1 AVX, 0 older or unknown. */
static int core_level(const char *name)
{
	static const char *l3[] = { "SkylakeX", "Cooperlake", "SapphireRapids" };
	static const char *l2[] = { "Haswell", "Zen", "SkylakeX" };
	static const char *l1[] = { "Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator" };
	for (size_t i = 0; i < sizeof l3 / sizeof l3[0]; i++)
		if (strcasecmp(name, l3[i]) == 0)
			return 3;
	for (size_t i = 0; i < sizeof l2 / sizeof l2[0]; i++)
		if (strcasecmp(name, l2[i]) == 0)
			return 2;
	for (size_t i = 0; i < sizeof l1 / sizeof l1[0]; i++)
		if (strcasecmp(name, l1[i]) == 0)
			return 1;
	return 0;
}

const char *nn_blas_core(void)
{
	return openblas_get_corename();
}

/* OpenBLAS's pthreads server (blas_server.c, 0.3.x) starts its workers when the library loads, and
 * each spins on sched_yield for 2^28 cycles (about 0.1 s) after its start and after every call before
 * it sleeps: on this 2-core host 42 ms of CPU in a process that only sleeps 0.3 s. Its
 * blas_thread_shutdown_ joins them; the next threaded call starts them again (exec_blas_async:
 * blas_thread_init when the server is down). Looked up with dlsym so that a BLAS without it (the
 * OpenMP or serial builds) makes this a no-op. */
void nn_blas_idle(void)
{
	int (*shutdown)(void);
	*(void **)&shutdown = dlsym(RTLD_DEFAULT, "blas_thread_shutdown_");
	if (shutdown)
		shutdown();
}

/* oneDNN's ISA enumeration, by name (oneDNN 2.x; ONEDNN_MAX_CPU_ISA takes the same names in capitals). */
static const struct {
	dnnl_cpu_isa_t isa;
	const char *name;
} dnnl_isa_names[] = {
	{dnnl_cpu_isa_sse41, "sse41"},
	{dnnl_cpu_isa_avx, "avx"},
	{dnnl_cpu_isa_avx2, "avx2"},
	{dnnl_cpu_isa_avx2_vnni, "avx2_vnni"},
	{dnnl_cpu_isa_avx512_mic, "avx512_mic"},
	{dnnl_cpu_isa_avx512_mic_4ops, "avx512_mic_4ops"},
	{dnnl_cpu_isa_avx512_core, "avx512_core"},
	{dnnl_cpu_isa_avx512_core_vnni, "avx512_core_vnni"},
	{dnnl_cpu_isa_avx512_core_bf16, "avx512_core_bf16"},
	{dnnl_cpu_isa_avx512_core_amx, "avx512_core_amx"},
};

const char *nn_dnnl_isa(void)
{
	dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
	for (size_t i = 0; i < sizeof dnnl_isa_names / sizeof dnnl_isa_names[0]; i++)
		if (dnnl_isa_names[i].isa == isa)
			return dnnl_isa_names[i].name;
	return "unknown";
}

void nn_blas_fix_core(int argc, char **argv)
{
	const char *core = openblas_get_corename();
	const char *guard = getenv(REEXEC_GUARD);
	if (guard) {
		/* We are the restarted image: say what happened once, then drop the guard.
		 * "-" marks a restart for OMP_WAIT_POLICY alone. */
		if (!strcmp(guard, "-")) {
			unsetenv(REEXEC_GUARD);
			return;
		}
		snprintf(g_fixed_from, sizeof g_fixed_from, "%s", guard);
		const char *ct = getenv("OPENBLAS_CORETYPE");
		if (core && ct && core_level(core) >= core_level(ct))
			log_debug("OpenBLAS chose core %s on this CPU; restarted with OPENBLAS_CORETYPE=%s "
				 "(now core %s, ~5x faster GEMM)", guard, ct, core);
		else
			log_warn("OpenBLAS chose core %s; restarting with OPENBLAS_CORETYPE=%s did not help "
				 "(core is %s): GEMM will be several times slower", guard, ct ? ct : "?",
				 core ? core : "?");
		unsetenv(REEXEC_GUARD);
		return;
	}
	if (!core)
		return;
	struct cpu_info ci;
	cpu_detect(&ci);
	int cpu_level = ci.avx512f && ci.avx512bw && ci.avx512vl ? 3 : ci.avx2 && ci.fma ? 2 : 0;
	const char *user = getenv("OPENBLAS_CORETYPE");
	const char *want = NULL;
	if (user) {
		/* the user chose; respect it, but say when it leaves speed on the table */
		if (core_level(core) < cpu_level)
			log_warn("OpenBLAS runs core %s (OPENBLAS_CORETYPE=%s) on a CPU with %s: GEMM is several "
				 "times slower than with OPENBLAS_CORETYPE=%s", core, user,
				 cpu_level == 3 ? "AVX-512" : "AVX2", cpu_level == 3 ? "SkylakeX" : "Haswell");
	} else if (cpu_level == 3 && core_level(core) < 3) {
		want = "SkylakeX";
	} else if (cpu_level == 2 && core_level(core) < 2) {
		want = "Haswell";
	}
	/* libgomp's default spin-waiting between parallel regions starves the other threads as soon
	 * as the host is shared (an eval measured 43 s spinning vs 5 s passive on a loaded 2-core
	 * host); libgomp reads OMP_WAIT_POLICY only at load time, so it rides on the same restart. */
	int want_passive = getenv("OMP_WAIT_POLICY") == NULL;
	if ((!want && !want_passive) || argc < 1 || !argv || !argv[0])
		return;
	if ((want && setenv("OPENBLAS_CORETYPE", want, 1)) ||
	    (want_passive && setenv("OMP_WAIT_POLICY", "passive", 1)) || setenv(REEXEC_GUARD, want ? core : "-", 1))
		return;
	fflush(NULL);
	execv("/proc/self/exe", argv);
	/* exec failed: carry on with the slow core, but say so */
	if (want)
		unsetenv("OPENBLAS_CORETYPE");
	unsetenv(REEXEC_GUARD);
	if (!want)
		return;
	log_warn("OpenBLAS chose core %s on a CPU that supports %s, and restarting with "
		 "OPENBLAS_CORETYPE=%s failed: GEMM will be several times slower (set OPENBLAS_CORETYPE=%s)",
		 core, want, want, want);
}

const char *nn_blas_describe(void)
{
	static char buf[256];
	const char *cfg = openblas_get_config();
	char ver[32] = "OpenBLAS";
	if (cfg) {
		/* "OpenBLAS 0.3.21 DYNAMIC_ARCH ..." → first two words */
		const char *sp = strchr(cfg, ' ');
		if (sp) {
			sp = strchr(sp + 1, ' ');
			size_t n = sp ? (size_t)(sp - cfg) : strlen(cfg);
			if (n >= sizeof ver)
				n = sizeof ver - 1;
			memcpy(ver, cfg, n);
			ver[n] = 0;
		}
	}
	const dnnl_version_t *dv = dnnl_version();
	snprintf(buf, sizeof buf, "%s core %s, %d threads, gemm %s%s%s%s (oneDNN %d.%d.%d)", ver,
		 openblas_get_corename(), nn_get_threads(),
		 g_backend == NN_GEMM_ONEDNN ? "oneDNN" : "OpenBLAS", g_fixed_from[0] ? " (restarted from " : "",
		 g_fixed_from, g_fixed_from[0] ? ")" : "", dv->major, dv->minor, dv->patch);
	return buf;
}

void nn_gemm_ref(char transa, char transb, int M, int N, int K, float alpha, const float *A, int lda,
		 const float *B, int ldb, float beta, float *C, int ldc)
{
	int ta = transa == 'T' || transa == 't', tb = transb == 'T' || transb == 't';
	for (int i = 0; i < M; i++) {
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < K; k++) {
				float a = ta ? A[(size_t)k * lda + i] : A[(size_t)i * lda + k];
				float b = tb ? B[(size_t)j * ldb + k] : B[(size_t)k * ldb + j];
				s += (double)a * b;
			}
			float *c = &C[(size_t)i * ldc + j];
			*c = (float)(alpha * s + (beta == 0.0f ? 0.0 : (double)beta * *c));
		}
	}
}

/* The cached matmul primitive for this shape: every dimension at least 16 (the model's GEMMs; a
 * token-at-a-time generation's thin products stay on dnnl_sgemm, which needs no primitive per shape). */
static int matmul_pays(int M, int N, int K)
{
	return M >= 16 && N >= 16 && K >= 16;
}

void nn_gemm(char transa, char transb, int M, int N, int K, float alpha, const float *A, int lda,
	     const float *B, int ldb, float beta, float *C, int ldc)
{
	if (M <= 0 || N <= 0)
		return;
	if (g_threads <= 0)
		nn_set_threads(0);
	int ta = transa == 'T' || transa == 't', tb = transb == 'T' || transb == 't';
	if (g_backend == NN_GEMM_ONEDNN) {
		if (matmul_pays(M, N, K) &&
		    nn_matmul(0, ta, tb, M, N, K, alpha, A, lda, B, ldb, NULL, beta, C, ldc) == 0)
			return;
		if (dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', M, N, K, alpha, A, lda, B, ldb, beta, C, ldc) ==
		    dnnl_success)
			return;
		/* oneDNN refuses only bad arguments; fall through so the result is still computed */
	}
	cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, M, N, K,
		    alpha, A, lda, B, ldb, beta, C, ldc);
}

void nn_gemm_bias(int N, int OC, int IC, const float *inp, const float *w, const float *b, float *out)
{
	if (N <= 0 || OC <= 0)
		return;
	if (g_threads <= 0)
		nn_set_threads(0);
	if (g_backend == NN_GEMM_ONEDNN && matmul_pays(N, OC, IC) &&
	    nn_matmul(0, 0, 0, N, OC, IC, 1.0f, inp, IC, w, OC, b, 0.0f, out, OC) == 0)
		return;
	if (b) {
#pragma omp parallel for schedule(static)
		for (int i = 0; i < N; i++)
			memcpy(out + (size_t)i * OC, b, (size_t)OC * sizeof *b);
	}
	nn_gemm('N', 'N', N, OC, IC, 1.0f, inp, IC, w, OC, b ? 1.0f : 0.0f, out, OC);
}
