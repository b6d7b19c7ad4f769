/* diag/env.c — `ascent diag env`: the launcher's variables (RANK, WORLD_SIZE, ... and the
 * OMPI_COMM_WORLD_* / PMI_* / PMIX_* / SLURM_* equivalents) and whether they agree, the effective
 * timeouts of each layer, thread oversubscription, the OpenBLAS core against the CPU, the
 * locked-memory limit RDMA needs, free memory and free disk. */
#include "diag/diag.h"
#include "comm/comm.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <unistd.h>


/* Parse a non-negative decimal integer: 1 ok, 0 not an integer. */
static int parse_int(const char *s, long *out)
{
	if (!s || !*s)
		return 0;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	while (*end == ' ')
		end++;
	if (*end || errno || v < 0 || v > 1000000000L)
		return 0;
	*out = v;
	return 1;
}

struct var_group {
	const char *what;          /* "rank" */
	const char *vars[5];
};

static const struct var_group GROUPS[] = {
	{ "rank", { "RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID" } },
	{ "world_size", { "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", NULL } },
	{ "local_rank", { "LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", NULL } },
	{ "local_world_size", { "LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", NULL, NULL } },
};

/* Resolve one group: the first variable set gives the value; others must agree. Returns the value
 * or -1; *bad is set when a check failed. */
static int resolve_group(const struct var_group *g, struct diag_report *r, cJSON *vars, int *bad)
{
	long val = -1;
	const char *from = NULL;
	for (int i = 0; i < 5 && g->vars[i]; i++) {
		const char *s = getenv(g->vars[i]);
		if (!s)
			continue;
		cJSON_AddStringToObject(vars, g->vars[i], s);
		long v;
		char name[64];
		snprintf(name, sizeof name, "env.launcher.%s", g->vars[i]);
		if (!parse_int(s, &v)) {
			diag_check_add(r, DIAG_FAIL, name, "set it to a non-negative integer or unset it",
				       "%s='%s' is not a non-negative integer", g->vars[i], s);
			*bad = 1;
			continue;
		}
		if (val < 0) {
			val = v;
			from = g->vars[i];
		} else if (v != val) {
			diag_check_add(r, DIAG_FAIL, name,
				       "launch with one launcher, or export the torchrun-style variables from the MPI ones",
				       "%s=%ld disagrees with %s=%ld (%s)", g->vars[i], v, from, val, g->what);
			*bad = 1;
		}
	}
	return (int)val;
}

static int is_loopback_addr(const char *a)
{
	return !strncmp(a, "127.", 4) || !strcmp(a, "localhost") || !strcmp(a, "::1");
}

int diag_env_launcher(struct diag_report *r, struct diag_env_rank *e)
{
	memset(e, 0, sizeof *e);
	if (gethostname(e->host, sizeof e->host - 1) != 0)
		snprintf(e->host, sizeof e->host, "?");
	cJSON *vars = cJSON_AddObjectToObject(r->data, "launcher");
	int bad = 0;
	int v[4];
	for (int i = 0; i < 4; i++)
		v[i] = resolve_group(&GROUPS[i], r, vars, &bad);
	e->rank = v[0];
	e->world_size = v[1];
	e->local_rank = v[2];
	e->local_world_size = v[3];
	const char *ma = getenv("MASTER_ADDR"), *mp = getenv("MASTER_PORT");
	snprintf(e->master_addr, sizeof e->master_addr, "%s", ma ? ma : "");
	e->master_port = -1;
	if (ma)
		cJSON_AddStringToObject(vars, "MASTER_ADDR", ma);
	if (mp) {
		cJSON_AddStringToObject(vars, "MASTER_PORT", mp);
		long p;
		if (!parse_int(mp, &p) || p < 1 || p > 65535) {
			diag_check_add(r, DIAG_FAIL, "env.launcher.MASTER_PORT", "use a free TCP port in 1..65535",
				       "MASTER_PORT='%s' is not a port number (1..65535)", mp);
			bad = 1;
		} else {
			e->master_port = (int)p;
		}
	}
	if (e->world_size == 0) {
		diag_check_add(r, DIAG_FAIL, "env.launcher.world_size", "WORLD_SIZE must be >= 1", "world size is 0");
		bad = 1;
	}
	if (e->rank >= 0 && e->world_size > 0 && e->rank >= e->world_size) {
		diag_check_add(r, DIAG_FAIL, "env.launcher.rank", "fix the launcher's rank numbering",
			       "rank %d is not below world size %d", e->rank, e->world_size);
		bad = 1;
	}
	if (e->local_rank >= 0 && e->local_world_size > 0 && e->local_rank >= e->local_world_size) {
		diag_check_add(r, DIAG_FAIL, "env.launcher.local_rank", "fix the launcher's local rank numbering",
			       "local rank %d is not below local world size %d", e->local_rank, e->local_world_size);
		bad = 1;
	}
	if (e->local_world_size > 0 && e->world_size > 0 && e->local_world_size > e->world_size) {
		diag_check_add(r, DIAG_FAIL, "env.launcher.local_world_size", "fix LOCAL_WORLD_SIZE",
			       "local world size %d exceeds world size %d", e->local_world_size, e->world_size);
		bad = 1;
	}
	if (ma && e->world_size > 0 && e->local_world_size > 0 && e->world_size > e->local_world_size &&
	    is_loopback_addr(ma)) {
		diag_check_add(r, DIAG_FAIL, "env.launcher.MASTER_ADDR",
			       "set MASTER_ADDR to rank 0's address reachable from every host",
			       "MASTER_ADDR=%s is a loopback address but the job spans hosts (world %d > %d ranks here)", ma,
			       e->world_size, e->local_world_size);
		bad = 1;
	}
	if (!bad) {
		if (e->rank < 0 && e->world_size < 0)
			diag_check_add(r, DIAG_PASS, "env.launcher", NULL, "no launcher variables: one process on %s", e->host);
		else
			diag_check_add(r, DIAG_PASS, "env.launcher", NULL,
				       "launcher variables agree: rank %d of %d, local rank %d of %d on %s%s%s", e->rank,
				       e->world_size, e->local_rank, e->local_world_size, e->host, ma ? ", master " : "",
				       ma ? ma : "");
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */

int diag_env_compare_ranks(const struct diag_env_rank *e, int n, struct diag_report *r)
{
	if (n <= 1) {
		diag_check_add(r, DIAG_SKIP, "env.ranks", NULL, "one rank: nothing to compare across ranks");
		return 0;
	}
	char msg[1024] = "";
	int bad = 0;
#define ADD(...) snprintf(msg + strlen(msg), sizeof msg - strlen(msg), __VA_ARGS__)
	/* duplicate (host, local rank) pairs */
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (e[i].local_rank >= 0 && e[i].local_rank == e[j].local_rank && !strcmp(e[i].host, e[j].host)) {
				ADD("%sranks %d and %d both have local rank %d on %s", bad++ ? "; " : "", i, j, e[i].local_rank,
				    e[i].host);
			}
	/* the launcher's rank numbers: duplicates and gaps (process i's RANK variable) */
	int *seen = calloc((size_t)n, sizeof *seen);
	if (!seen)
		return ascent_error(ASCENT_ENOMEM, "out of memory comparing ranks");
	int have = 0;
	for (int i = 0; i < n; i++) {
		if (e[i].rank < 0)
			continue;
		have = 1;
		if (e[i].rank >= n) {
			ADD("%sprocess %d (%s) has RANK %d >= %d processes", bad++ ? "; " : "", i, e[i].host, e[i].rank, n);
			continue;
		}
		if (seen[e[i].rank]++)
			ADD("%sRANK %d is used twice (process %d on %s)", bad++ ? "; " : "", e[i].rank, i, e[i].host);
	}
	if (have)
		for (int k = 0; k < n; k++)
			if (!seen[k])
				ADD("%sno process has RANK %d (gap)", bad++ ? "; " : "", k);
	free(seen);
	/* world size, master, timeouts identical everywhere */
	for (int i = 1; i < n; i++) {
		if (e[i].world_size != e[0].world_size)
			ADD("%srank %d (%s) has world size %d, rank 0 has %d", bad++ ? "; " : "", i, e[i].host,
			    e[i].world_size, e[0].world_size);
		if (e[i].world_size > 0 && e[i].world_size != n)
			ADD("%srank %d (%s) has world size %d but %d processes run", bad++ ? "; " : "", i, e[i].host,
			    e[i].world_size, n);
		if (strcmp(e[i].master_addr, e[0].master_addr) || e[i].master_port != e[0].master_port)
			ADD("%srank %d (%s) has master %s:%d, rank 0 has %s:%d", bad++ ? "; " : "", i, e[i].host,
			    e[i].master_addr, e[i].master_port, e[0].master_addr, e[0].master_port);
		if (strcmp(e[i].timeouts, e[0].timeouts))
			ADD("%srank %d (%s) has timeouts '%s', rank 0 has '%s'", bad++ ? "; " : "", i, e[i].host,
			    e[i].timeouts, e[0].timeouts);
	}
#undef ADD
	if (!bad)
		return diag_check_add(r, DIAG_PASS, "env.ranks", NULL,
				       "%d ranks: unique (host, local rank), no gaps, same world size, master and timeouts", n);
	return diag_check_add(r, DIAG_FAIL, "env.ranks",
			      "launch every rank with the same environment (mpirun -x VAR) and one rank per slot", "%s", msg);
}

/* ------------------------------------------------------------------------------------------ */
/* Timeouts */

struct timeout_var {
	const char *layer, *var;
	long dflt;            /* -1: no default */
	const char *unit, *note;
};

static const struct timeout_var TIMEOUTS[] = {
	{ "ascent", "ASCENT_COMM_TIMEOUT", 600, "s", "ascent's collective watchdog (comm/); 0 = off" },
	{ "hccl", "HCCL_CONNECT_TIMEOUT", 120, "s", "range [120, 7200]; effective +20 s" },
	{ "hccl", "HCCL_EXEC_TIMEOUT", 1836, "s", "Atlas training rounds down to a multiple of 68" },
	{ "torch_npu", "HCCL_EVENT_TIMEOUT", 1868, "s", "must exceed HCCL_EXEC_TIMEOUT" },
	{ "torch_npu", "TORCH_HCCL_BLOCKING_WAIT", 0, "", "1 = blocking wait(), no watchdog" },
	{ "nccl", "NCCL_IB_TIMEOUT", 20, "exp", "4.096 us x 2^N per retry" },
	{ "nccl", "NCCL_IB_RETRY_CNT", 7, "", "retries" },
	{ "pytorch", "TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC", 480, "s", "watchdog heartbeat kill" },
	{ "pytorch", "TORCH_NCCL_ASYNC_ERROR_HANDLING", 3, "", "0 none, 1 abort+teardown, 2 abort, 3 teardown" },
	{ "pytorch", "TORCH_NCCL_BLOCKING_WAIT", 0, "", "1 = blocking wait()" },
};
#define NTIMEOUTS (int)(sizeof TIMEOUTS / sizeof TIMEOUTS[0])

/* Value of a timeout variable: set and valid → value; unset → default; invalid → -2. */
static long tvalue(const struct timeout_var *t, int *set)
{
	const char *s = getenv(t->var);
	*set = s != NULL;
	if (!s)
		return t->dflt;
	long v;
	if (parse_int(s, &v))
		return v;
	char *end;
	double d = strtod(s, &end);   /* ASCENT_COMM_TIMEOUT takes fractions */
	return end != s && !*end && d > 0 && d < 1e9 && !strcmp(t->var, "ASCENT_COMM_TIMEOUT") ? (long)(d + 0.999) : -2;
}

int diag_env_timeouts(struct diag_report *r)
{
	cJSON *arr = cJSON_AddArrayToObject(r->data, "timeouts");
	int bad = 0;
	long val[NTIMEOUTS];
	int set[NTIMEOUTS];
	for (int i = 0; i < NTIMEOUTS; i++) {
		const struct timeout_var *t = &TIMEOUTS[i];
		val[i] = tvalue(t, &set[i]);
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "layer", t->layer);
		cJSON_AddStringToObject(o, "variable", t->var);
		cJSON_AddStringToObject(o, "value", set[i] ? getenv(t->var) : "");
		if (t->dflt >= 0)
			cJSON_AddNumberToObject(o, "default", (double)t->dflt);
		long eff = val[i];
		if (!strcmp(t->var, "HCCL_CONNECT_TIMEOUT") && eff >= 0)
			eff += 20;
		if (!strcmp(t->var, "HCCL_EXEC_TIMEOUT") && eff >= 68)
			eff = eff / 68 * 68;
		if (!strcmp(t->var, "NCCL_IB_TIMEOUT") && eff >= 0 && eff < 32)
			cJSON_AddNumberToObject(o, "effective_s", 4.096e-6 * (double)(1L << eff));
		else if (eff >= 0)
			cJSON_AddNumberToObject(o, "effective", (double)eff);
		cJSON_AddStringToObject(o, "unit", t->unit);
		cJSON_AddStringToObject(o, "note", t->note);
		cJSON_AddItemToArray(arr, o);
		if (set[i]) {
			char key[64];
			snprintf(key, sizeof key, "timeout %s", t->var);
			diag_ident_add(r, key, "%s%s (%s)", getenv(t->var), t->unit, t->note);
		}
		if (val[i] == -2) {
			char name[80];
			snprintf(name, sizeof name, "env.timeouts.%s", t->var);
			diag_check_add(r, DIAG_FAIL, name, "set it to a whole number or unset it", "%s='%s' is not an integer",
				       t->var, getenv(t->var));
			bad = 1;
		}
	}
	/* indexes into TIMEOUTS */
	enum { ASC = 0, CONN = 1, EXEC = 2, EVENT = 3 };
	if (set[ASC] && val[ASC] == 0) {
		diag_check_add(r, DIAG_WARN, "env.timeouts.ASCENT_COMM_TIMEOUT", "give a positive number of seconds",
			       "ASCENT_COMM_TIMEOUT=0 turns the collective watchdog off: a hang will never be reported");
		bad = bad ? bad : 2;
	}
	if (set[CONN] && val[CONN] >= 0 && (val[CONN] < 120 || val[CONN] > 7200)) {
		diag_check_add(r, DIAG_FAIL, "env.timeouts.HCCL_CONNECT_TIMEOUT", "use a value in [120, 7200]",
			       "HCCL_CONNECT_TIMEOUT=%ld is outside HCCL's range [120, 7200] s", val[CONN]);
		bad = 1;
	}
	if (set[EXEC] && val[EXEC] >= 0 && val[EXEC] % 68 != 0) {
		diag_check_add(r, DIAG_WARN, "env.timeouts.HCCL_EXEC_TIMEOUT", "use a multiple of 68",
			       "HCCL_EXEC_TIMEOUT=%ld: Atlas training devices round it down to %ld s", val[EXEC],
			       val[EXEC] < 68 ? 68 : val[EXEC] / 68 * 68);
		bad = bad ? bad : 2;
	}
	if ((set[EXEC] || set[EVENT]) && val[EXEC] >= 0 && val[EVENT] >= 0 && val[EVENT] <= val[EXEC]) {
		diag_check_add(r, DIAG_FAIL, "env.timeouts.HCCL_EVENT_TIMEOUT",
			       "set HCCL_EVENT_TIMEOUT above HCCL_EXEC_TIMEOUT (defaults 1868 > 1836)",
			       "HCCL_EVENT_TIMEOUT=%ld%s is not above HCCL_EXEC_TIMEOUT=%ld%s: torch_npu gives up before HCCL "
			       "reports the stuck operator",
			       val[EVENT], set[EVENT] ? "" : " (default)", val[EXEC], set[EXEC] ? "" : " (default)");
		bad = 1;
	}
	if (!bad) {
		int n = 0;
		for (int i = 0; i < NTIMEOUTS; i++)
			n += set[i];
		diag_check_add(r, DIAG_PASS, "env.timeouts", NULL, "%d timeout variable(s) set, consistent across layers", n);
	}
	return 0;
}

/* "VAR=value;..." of the timeout variables set, for comparing ranks. */
static void timeouts_fingerprint(char *out, size_t n)
{
	out[0] = 0;
	for (int i = 0; i < NTIMEOUTS; i++) {
		const char *s = getenv(TIMEOUTS[i].var);
		if (s)
			snprintf(out + strlen(out), n - strlen(out), "%s=%s;", TIMEOUTS[i].var, s);
	}
}

/* ------------------------------------------------------------------------------------------ */

int diag_env_threads(struct diag_report *r, int threads, int ranks, int cores)
{
	long total = (long)threads * ranks;
	if (total > cores)
		return diag_check_add(r, DIAG_WARN, "env.threads",
				      "set OMP_NUM_THREADS / OPENBLAS_NUM_THREADS to cores / ranks per host (or unset them: "
				      "ascent then uses cores / ranks)",
				      "oversubscribed: %d threads per rank x %d ranks on this host = %ld > %d cores (contention "
				      "cut busbw 2-3x and made runs 15x noisier on the build machine)",
				      threads, ranks, total, cores);
	return diag_check_add(r, DIAG_PASS, "env.threads", NULL, "%d threads per rank x %d ranks on this host = %ld <= %d cores",
			      threads, ranks, total, cores);
}

/* OpenBLAS core names by the widest vector ISA their kernels use: 0 SSE-era, 1 AVX, 2 AVX2, 3 AVX-512. */
static int core_level(const char *core)
{
	static const char *avx512[] = { "SkylakeX", "Cooperlake", "SapphireRapids", "Zen4", NULL };
	static const char *avx2[] = { "Haswell", "Zen", "Zen2", "Zen3", "Excavator", "Skylake", NULL };
	static const char *avx[] = { "Sandybridge", "Bulldozer", "Piledriver", "Steamroller", NULL };
	for (int i = 0; avx512[i]; i++)
		if (!strcasecmp(core, avx512[i]))
			return 3;
	for (int i = 0; avx2[i]; i++)
		if (!strcasecmp(core, avx2[i]))
			return 2;
	for (int i = 0; avx[i]; i++)
		if (!strcasecmp(core, avx[i]))
			return 1;
	return 0;
}

int diag_env_blas_core(struct diag_report *r, const char *core, const struct cpu_info *ci)
{
	int cpu = ci->avx512f ? 3 : ci->avx2 ? 2 : 0;
	int lv = core_level(core ? core : "");
	const char *want = ci->avx512f ? "SkylakeX" : "Haswell";   /* what nn_blas_fix_core picks */
	if (lv >= cpu || cpu == 0)
		return diag_check_add(r, DIAG_PASS, "env.blas_core", NULL, "OpenBLAS core %s suits this CPU (%s%s)",
				      core, ci->avx512f ? "AVX-512" : ci->avx2 ? "AVX2" : "no AVX2",
				      getenv("OPENBLAS_CORETYPE") ? ", set by OPENBLAS_CORETYPE" : "");
	char fix[256];
	snprintf(fix, sizeof fix, "export OPENBLAS_CORETYPE=%s (ascent train does this itself; other programs do not)",
		 want);
	if (lv == 0 && cpu == 3)
		return diag_check_add(r, DIAG_WARN, "env.blas_core", fix,
				      "OpenBLAS runs the generic core %s on an AVX-512 CPU (%s): %s is 4-6x faster on sgemm and "
				      "2.3-3.2x on end-to-end training (quoted from docs/background.md, measured on the build "
				      "machine: ~50 vs ~250 GFLOP/s on 2 threads), not measured by this check",
				      core, ci->brand, want);
	return diag_check_add(r, DIAG_WARN, "env.blas_core", fix,
			      "OpenBLAS runs core %s, narrower than this CPU's %s (%s): %s uses the wider vectors "
			      "(up to %dx the FLOPs per cycle; speed-up not measured here)",
			      core, cpu == 3 ? "AVX-512" : "AVX2", ci->brand, want, 1 << (cpu - lv));
}

int diag_env_memlock(struct diag_report *r, uint64_t limit, int rdma)
{
	char lim[64];
	if (limit == UINT64_MAX)
		snprintf(lim, sizeof lim, "unlimited");
	else
		snprintf(lim, sizeof lim, "%llu KiB", (unsigned long long)(limit / 1024));
	if (!rdma)
		return diag_check_add(r, DIAG_PASS, "env.memlock", NULL, "locked-memory limit %s (no RDMA device needs it)",
				      lim);
	if (limit == UINT64_MAX)
		return diag_check_add(r, DIAG_PASS, "env.memlock", NULL, "locked-memory limit unlimited for %d RDMA device(s)",
				      rdma);
	const char *fix = "set 'memlock unlimited' in /etc/security/limits.conf (and LimitMEMLOCK=infinity for the "
			  "launcher's systemd unit / container --ulimit memlock=-1)";
	if (limit < 64ull << 20)
		return diag_check_add(r, DIAG_FAIL, "env.memlock", fix,
				      "locked-memory limit %s with %d RDMA device(s): registering communication buffers "
				      "(ibv_reg_mr) will fail",
				      lim, rdma);
	return diag_check_add(r, DIAG_WARN, "env.memlock", fix,
			      "locked-memory limit %s with %d RDMA device(s): large buffers may fail to register", lim, rdma);
}

int diag_env_free(struct diag_report *r, int64_t avail, int64_t total, int64_t min_mem, const char *path,
		  int64_t disk_free, int64_t min_disk)
{
	char a[32], t[32], m[32], d[32], md[32];
	units_bytes_bin(a, sizeof a, avail);
	units_bytes_bin(t, sizeof t, total);
	units_bytes_bin(m, sizeof m, min_mem);
	units_bytes_bin(d, sizeof d, disk_free);
	units_bytes_bin(md, sizeof md, min_disk);
	if (avail < 0)
		diag_check_add(r, DIAG_SKIP, "env.memory", NULL, "cannot read /proc/meminfo");
	else if (avail < min_mem)
		diag_check_add(r, DIAG_FAIL, "env.memory", "stop other jobs on the host or lower the per-rank memory",
			       "%s of %s memory available, below the minimum %s", a, t, m);
	else if (total > 0 && avail * 10 < total)
		diag_check_add(r, DIAG_WARN, "env.memory", "check what else runs on this host",
			       "only %s of %s memory available (< 10%%)", a, t);
	else
		diag_check_add(r, DIAG_PASS, "env.memory", NULL, "%s of %s memory available", a, t);
	if (disk_free < 0)
		diag_check_add(r, DIAG_SKIP, "env.disk", NULL, "cannot stat '%s'", path);
	else if (disk_free < min_disk)
		diag_check_add(r, DIAG_FAIL, "env.disk", "free space or write checkpoints elsewhere",
			       "%s free at '%s', below the minimum %s for checkpoints", d, path, md);
	else
		diag_check_add(r, DIAG_PASS, "env.disk", NULL, "%s free at '%s' (minimum %s)", d, path, md);
	return 0;
}

int64_t diag_meminfo_bytes(const char *key)
{
	char *t;
	size_t len;
	if (fs_read_all("/proc/meminfo", &t, &len))
		return -1;
	char v[64];
	int64_t kb = -1;
	if (diag_kv_find(t, key, ':', v, sizeof v))
		kb = strtoll(v, NULL, 10);
	free(t);
	return kb < 0 ? -1 : kb * 1024;
}

static int count_rdma(const char *sysfs)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/class/infiniband", sysfs && *sysfs ? sysfs : "/sys");
	DIR *d = opendir(path);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

/* Threads a rank will run: the larger explicit OMP_NUM_THREADS / OPENBLAS_NUM_THREADS, else
 * ascent's default (cores ÷ ranks on the host). */
static int threads_per_rank(int ranks, const char **why)
{
	long t = 0, v;
	*why = "ascent's default, cores / ranks on the host";
	static const char *vars[] = { "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS" };
	for (int i = 0; i < 3; i++)
		if (parse_int(getenv(vars[i]), &v) && v > t) {
			t = v;
			*why = vars[i];
		}
	return t > 0 ? (int)t : cpu_default_threads(ranks);
}

int diag_env_run(const struct diag_env_opts *o, struct diag_report *r)
{
	struct diag_env_rank e;
	int rc = diag_env_launcher(r, &e);
	if (rc)
		return rc;
	timeouts_fingerprint(e.timeouts, sizeof e.timeouts);
	diag_ident_add(r, "host", "%s", e.host);
	if (e.rank >= 0)
		diag_ident_add(r, "rank", "%d of %d (local %d of %d)", e.rank, e.world_size, e.local_rank, e.local_world_size);
	rc = diag_env_timeouts(r);
	if (rc)
		return rc;
	if (o->comm && comm_size(o->comm, COMM_WORLD) > 1) {
		int n = comm_size(o->comm, COMM_WORLD), me = comm_rank(o->comm, COMM_WORLD);
		if ((e.rank >= 0 && e.rank != me) || (e.world_size > 0 && e.world_size != n))
			diag_check_add(r, DIAG_FAIL, "env.mpi", "launch with one launcher (the variables come from another job?)",
				       "the launcher says rank %d of %d but MPI says rank %d of %d", e.rank, e.world_size, me, n);
		else
			diag_check_add(r, DIAG_PASS, "env.mpi", NULL, "launcher variables match MPI: rank %d of %d", me, n);
		struct diag_env_rank *all = calloc((size_t)n, sizeof *all);
		if (!all)
			return ascent_error(ASCENT_ENOMEM, "out of memory gathering %d ranks' environments", n);
		rc = comm_allgather(o->comm, COMM_WORLD, &e, all, sizeof e, COMM_BYTE);
		if (!rc)
			diag_env_compare_ranks(all, n, r);
		/* a launcher that does not say how many ranks share this host (srun with PMIx sets no
		 * local size): count the ranks whose host name is ours */
		if (!rc && e.local_world_size <= 0) {
			e.local_world_size = 0;
			for (int i = 0; i < n; i++)
				e.local_world_size += !strcmp(all[i].host, e.host);
		}
		free(all);
		if (rc)
			return rc;
	} else if (e.world_size > 1) {
		diag_check_add(r, DIAG_SKIP, "env.ranks", "run under mpirun so the ranks can be compared",
			       "world size %d but this process runs alone: ranks not compared", e.world_size);
	}

	struct cpu_info ci;
	cpu_detect(&ci);
	int ranks = e.local_world_size > 0 ? e.local_world_size : 1;
	const char *why;
	int threads = threads_per_rank(ranks, &why);
	diag_ident_add(r, "cpu", "%s, %d cpus, avx2=%d avx512f=%d", ci.brand, ci.online_cpus, ci.avx2, ci.avx512f);
	diag_ident_add(r, "threads", "%d per rank (%s), OpenMP max %d", threads, why, omp_get_max_threads());
	/* the host's cores, not this process's affinity mask (mpirun binds each rank to a core) */
	long host_cores = sysconf(_SC_NPROCESSORS_ONLN);
	diag_env_threads(r, threads, ranks, host_cores > 0 ? (int)host_cores : ci.online_cpus);
	/* ascent restarts itself with the right core (nn_blas_fix_core): judge the core OpenBLAS picked
	 * on its own, which is what every other program on this host gets */
	const char *desc = nn_blas_describe(), *from = desc ? strstr(desc, "restarted from ") : NULL;
	if (from) {
		char orig[64];
		snprintf(orig, sizeof orig, "%.*s", (int)strcspn(from + 15, ") "), from + 15);
		diag_env_blas_core(r, orig, &ci);
		if (r->n && r->checks[r->n - 1].status != DIAG_PASS) {
			struct diag_check *ck = &r->checks[r->n - 1];
			size_t l = strlen(ck->message);
			snprintf(ck->message + l, sizeof ck->message - l,
				 "; ascent itself restarted with core %s, other programs (PyTorch, numpy) keep %s",
				 nn_blas_core(), orig);
		}
	} else {
		diag_env_blas_core(r, nn_blas_core(), &ci);
	}

	struct rlimit rl;
	uint64_t lim = UINT64_MAX;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		lim = (uint64_t)rl.rlim_cur;
	diag_env_memlock(r, lim, count_rdma(o->sysfs));

	const char *path = o->disk_path ? o->disk_path : ".";
	struct statvfs sv;
	int64_t disk = -1;
	if (statvfs(path, &sv) == 0)
		disk = (int64_t)sv.f_bavail * (int64_t)sv.f_frsize;
	else if (o->disk_path)
		return ascent_error(ASCENT_EUSAGE, "cannot check free disk at '%s': %s", path, strerror(errno));
	int64_t gib = 1LL << 30;
	diag_env_free(r, diag_meminfo_bytes("MemAvailable"), diag_meminfo_bytes("MemTotal"),
		      o->min_mem > 0 ? o->min_mem : gib, path, disk,
		      o->min_disk > 0 ? o->min_disk : gib);
	return 0;
}
