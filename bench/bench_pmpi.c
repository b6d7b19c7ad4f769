/* bench/bench_pmpi.c — what `ascent profile` adds to each MPI call of a program, one JSON line per
 * call measured. The program runs itself (a one-rank MPI job, MPI_Init as a singleton) in four
 * ways, alternated over ROUNDS rounds so that a loaded, shared host slows them alike:
 *   plain    ./bench_pmpi --work
 *   off      ASCENT_PROFILE=0 ascent profile -- ./bench_pmpi --work   (nothing preloaded)
 *   inert    LD_PRELOAD=libascent-preload.so without `ascent profile` (the wrappers pass through)
 *   on       ascent profile --out TMP -- ./bench_pmpi --work          (every call recorded)
 * Each run prints the median ns per call over batches of 1000 calls of MPI_Allreduce (8 bytes),
 * MPI_Iallreduce + MPI_Wait and MPI_Sendrecv to itself; the driver takes each way's median over
 * the rounds and reports added = way − plain. Goals (issue 18): on adds ≤ 200 ns per call; off
 * adds nothing measurable. Needs ASCENT_BIN (bench/run.sh sets it) for bin/ascent; the preload
 * library is found beside it as `ascent profile` finds it. */
#include "common/common.h"

#include <mpi.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 5
#define BATCHES 96
#define PER 1000
enum { CALL_ALLREDUCE, CALL_IALLREDUCE, CALL_SENDRECV, NCALLS };
static const char *const CALL_NAMES[NCALLS] = { "allreduce", "iallreduce_wait", "sendrecv_self" };
enum { WAY_PLAIN, WAY_OFF, WAY_INERT, WAY_ON, NWAYS };
static const char *const WAY_NAMES[NWAYS] = { "plain", "off", "inert", "on" };

static void one_call(int which, double *a, double *b)
{
	MPI_Request q;
	switch (which) {
	case CALL_ALLREDUCE:
		MPI_Allreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		break;
	case CALL_IALLREDUCE:
		MPI_Iallreduce(a, b, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q);
		MPI_Wait(&q, MPI_STATUS_IGNORE);
		break;
	default:
		MPI_Sendrecv(a, 1, MPI_DOUBLE, 0, 1, b, 1, MPI_DOUBLE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		break;
	}
}

/* The workload: median ns per call of each kind, on one line of numbers. */
static int work(void)
{
	MPI_Init(NULL, NULL);
	double a = 1, b = 0, v[BATCHES];
	for (int c = 0; c < NCALLS; c++) {
		for (int i = 0; i < PER; i++)
			one_call(c, &a, &b);
		for (int k = 0; k < BATCHES; k++) {
			int64_t t0 = clock_ns();
			for (int i = 0; i < PER; i++)
				one_call(c, &a, &b);
			v[k] = (double)(clock_ns() - t0) / PER;
			if (k % 24 == 23)
				usleep(250000);   /* the profiler's writer drains the ring (64 Ki records) */
		}
		printf("%.2f ", stats_median(v, BATCHES));
	}
	printf("\n");
	MPI_Finalize();
	return 0;
}

/* Run one way; parse its line into ns[NCALLS]. */
static int run_way(int way, const char *self, const char *ascent, const char *lib, const char *dir, double *ns)
{
	char cmd[8192];
	switch (way) {
	case WAY_PLAIN:
		snprintf(cmd, sizeof cmd, "'%s' --work", self);
		break;
	case WAY_OFF:
		snprintf(cmd, sizeof cmd, "ASCENT_PROFILE=0 '%s' profile -- '%s' --work", ascent, self);
		break;
	case WAY_INERT:
		snprintf(cmd, sizeof cmd, "LD_PRELOAD='%s' '%s' --work", lib, self);
		break;
	default:
		snprintf(cmd, sizeof cmd, "rm -rf '%s/on' && '%s' profile --out '%s/on' -- '%s' --work 2>/dev/null", dir, ascent,
			 dir, self);
		break;
	}
	FILE *p = popen(cmd, "r");
	if (!p)
		return -1;
	int got = 0;
	for (int c = 0; c < NCALLS; c++)
		got += fscanf(p, "%lf", &ns[c]) == 1;
	int st = pclose(p);
	return got == NCALLS && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

static long long dropped_events(const char *dir)
{
	char path[4200];
	snprintf(path, sizeof path, "%s/on/trace.db", dir);
	sqlite3 *db;
	long long n = -1;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *s;
		if (sqlite3_prepare_v2(db, "SELECT sum(CAST(value AS INTEGER)) FROM meta WHERE key = 'events_dropped'", -1, &s,
				       NULL) == SQLITE_OK) {
			if (sqlite3_step(s) == SQLITE_ROW)
				n = sqlite3_column_int64(s, 0);
			sqlite3_finalize(s);
		}
	}
	sqlite3_close(db);
	return n;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--work"))
		return work();
	const char *ascent = getenv("ASCENT_BIN");
	char self[4096], lib[4200], dir[] = "/tmp/ascent-bench-pmpi-XXXXXX";
	ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
	if (!ascent || access(ascent, X_OK) || k <= 0) {
		printf("{\"bench\":\"pmpi_call\",\"skipped\":\"set ASCENT_BIN to bin/ascent (bench/run.sh does)\"}\n");
		return 0;
	}
	self[k] = 0;
	/* the preload library of this build: BUILD/bench/bench_pmpi → BUILD/libascent-preload.so */
	snprintf(lib, sizeof lib, "%s", self);
	char *cut = strstr(lib, "/bench/bench_pmpi");
	if (!cut || !mkdtemp(dir)) {
		printf("{\"bench\":\"pmpi_call\",\"error\":\"cannot locate the build folder or make a temporary one\"}\n");
		return 1;
	}
	snprintf(cut, sizeof lib - (size_t)(cut - lib), "/libascent-preload.so");
	double ns[NWAYS][ROUNDS][NCALLS];
	for (int r = 0; r < ROUNDS; r++)
		for (int w = 0; w < NWAYS; w++)
			if (run_way(w, self, ascent, lib, dir, ns[w][r])) {
				printf("{\"bench\":\"pmpi_call\",\"error\":\"the %s run failed\"}\n", WAY_NAMES[w]);
				return 1;
			}
	long long dropped = dropped_events(dir);
	for (int c = 0; c < NCALLS; c++) {
		double med[NWAYS];
		for (int w = 0; w < NWAYS; w++) {
			double v[ROUNDS];
			for (int r = 0; r < ROUNDS; r++)
				v[r] = ns[w][r][c];
			med[w] = stats_median(v, ROUNDS);
		}
		printf("{\"bench\":\"pmpi_call\",\"call\":\"%s\",\"rounds\":%d,\"plain_ns\":%.1f,\"off_ns\":%.1f,"
		       "\"inert_ns\":%.1f,\"on_ns\":%.1f,\"added_off_ns\":%.1f,\"added_inert_ns\":%.1f,\"added_on_ns\":%.1f,"
		       "\"off_over_plain\":%.3f,\"goal_added_on_ns\":200,\"events_dropped\":%lld}\n",
		       CALL_NAMES[c], ROUNDS, med[WAY_PLAIN], med[WAY_OFF], med[WAY_INERT], med[WAY_ON],
		       med[WAY_OFF] - med[WAY_PLAIN], med[WAY_INERT] - med[WAY_PLAIN], med[WAY_ON] - med[WAY_PLAIN],
		       med[WAY_OFF] / med[WAY_PLAIN], dropped);
	}
	char rm[4200];
	snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
	if (system(rm) != 0)
		fprintf(stderr, "could not remove %s\n", dir);
	return 0;
}
