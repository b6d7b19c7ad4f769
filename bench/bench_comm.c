/* bench/bench_comm.c — comm/'s collectives against plain MPI, one JSON line each, measured side by
 * side in one run (the build machine is shared and loaded: every figure alternates the two sides
 * rep by rep and keeps each side's best repetition):
 *   comm_allreduce_vs_mpi     comm_allreduce (the traced path `ascent diag comm` times) against
 *                             plain MPI_Allreduce (comm_raw_allreduce), in place and out of place,
 *                             32 KiB .. 64 MiB, at 2 and 4 ranks: single calls alternating comm,
 *                             MPI, comm, ... each timed; ratio = MPI's median ÷ comm's (goal >= 0.95
 *                             at every size), the minimums too (the least disturbed calls)
 *   comm_allreduce_small      the same at 8 B: time added per call (goal <= 0.3 µs)
 *   comm_nonblocking_design   how non-blocking collectives should progress while the caller
 *                             computes: 8 gradient-like buckets of 1 MiB enqueued one per compute
 *                             slice (a fixed amount of arithmetic), then all waited for; time from
 *                             the first enqueue to the last completion and the time the caller waited
 *                             at the end, for (a) comm/'s communication thread running blocking
 *                             MPI_Allreduce, (b) a progress thread polling MPI_Iallreduce with
 *                             MPI_Test, (c) MPI_Iallreduce progressed only by the caller's MPI_Test
 *                             between slices (comm/ before the thread)
 * It runs itself under mpirun (`bench_comm --worker N`), one run per rank count. BENCH_COMM_REPS
 * (default 5) scales the calls per size (5·reps .. 40·reps) and the design repetitions;
 * BENCH_COMM_ONLY=NAME[,NAME] runs only those parts (sweep: comm_allreduce_vs_mpi, small:
 * comm_allreduce_small, design: comm_nonblocking_design). */
#include "bench/bench.h"
#include "comm/comm.h"
#include "common/common.h"

#include <mpi.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int reps = 5;

/* Whether part `name` is to run (BENCH_COMM_ONLY). */
static int wanted(const char *name)
{
	return bench_wanted("BENCH_COMM_ONLY", name);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int call(struct comm *c, int raw, const float *src, float *r, size_t n)
{
	int rc = raw ? comm_raw_allreduce(c, COMM_WORLD, src, r, n, COMM_F32, COMM_SUM)
		     : comm_allreduce(c, COMM_WORLD, src, r, n, COMM_F32, COMM_SUM);
	if (rc) {
		fprintf(stderr, "bench_comm: %s\n", ascent_errmsg());
		exit(1);
	}
	return rc;
}

/* `calls` single calls of each side, alternating call by call (comm, MPI, comm, ...), each timed;
 * per side the minimum and the median µs per call, of the slowest rank. */
struct side {
	double min_us, med_us;
};
static void pair(struct comm *c, float *s, float *r, size_t n, int in_place, int calls, struct side *traced,
		 struct side *mpi)
{
	const float *src = in_place ? r : s;
	double *t[2];
	t[0] = malloc((size_t)calls * sizeof(double));
	t[1] = malloc((size_t)calls * sizeof(double));
	for (int w = 0; w < 3; w++) {
		call(c, 0, src, r, n);
		call(c, 1, src, r, n);
	}
	comm_barrier(c, COMM_WORLD);
	for (int i = 0; i < calls; i++)
		for (int raw = 0; raw < 2; raw++) {
			int64_t t0 = clock_ns();
			call(c, raw, src, r, n);
			t[raw][i] = (double)(clock_ns() - t0) / 1e3;
		}
	struct side *out[2] = { traced, mpi };
	for (int k = 0; k < 2; k++) {
		qsort(t[k], (size_t)calls, sizeof(double), cmp_d);
		double v[2] = { t[k][0], t[k][calls / 2] };
		comm_allreduce(c, COMM_WORLD, NULL, v, 2, COMM_F64, COMM_MAX);
		out[k]->min_us = v[0];
		out[k]->med_us = v[1];
		free(t[k]);
	}
}

/* A slice of computation: a fixed amount of arithmetic (not a time), so every design gets the
 * same work. */
static double compute_slice(int units)
{
	volatile double x = 1;
	for (int u = 0; u < units; u++)
		for (int i = 0; i < 100000; i++)
			x = x * 1.0000001 + 1e-9;
	return x;
}

struct poller {
	MPI_Request *req;
	int n;              /* requests posted so far (atomic) */
	int total;
	int stop;
};

static void *poll_main(void *arg)
{
	struct poller *p = arg;
	for (;;) {
		int n = __atomic_load_n(&p->n, __ATOMIC_ACQUIRE), done = 0, flag;
		for (int i = 0; i < n; i++) {
			if (p->req[i] != MPI_REQUEST_NULL)
				MPI_Test(&p->req[i], &flag, MPI_STATUS_IGNORE);
			done += p->req[i] == MPI_REQUEST_NULL;
		}
		if (done == p->total)
			return NULL;
		sched_yield();
	}
}

enum { NBUCKETS = 8, BUCKET_FLOATS = 262144, SLICE_UNITS = 20 };

/* One step of the design: enqueue a bucket after each compute slice, then wait for all. *wait_us:
 * time the caller waited at the end; returns the step time in µs. */
static double design_step(struct comm *c, int design, float **b, double *wait_us)
{
	struct comm_req *q[NBUCKETS] = { 0 };
	MPI_Request mq[NBUCKETS];
	struct poller p = { .req = mq, .n = 0, .total = NBUCKETS };
	pthread_t th;
	for (int i = 0; i < NBUCKETS; i++)
		mq[i] = MPI_REQUEST_NULL;
	comm_barrier(c, COMM_WORLD);
	if (design == 1)
		pthread_create(&th, NULL, poll_main, &p);
	int64_t t0 = clock_ns();
	for (int i = 0; i < NBUCKETS; i++) {
		compute_slice(SLICE_UNITS);
		if (design == 0) {
			comm_iallreduce(c, COMM_WORLD, b[i], b[i], BUCKET_FLOATS, COMM_F32, COMM_SUM, &q[i]);
		} else {
			MPI_Iallreduce(MPI_IN_PLACE, b[i], BUCKET_FLOATS, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &mq[i]);
			__atomic_store_n(&p.n, i + 1, __ATOMIC_RELEASE);
			if (design == 2)
				for (int j = 0; j <= i; j++) {
					int flag;
					if (mq[j] != MPI_REQUEST_NULL)
						MPI_Test(&mq[j], &flag, MPI_STATUS_IGNORE);
				}
		}
	}
	int64_t tw = clock_ns();
	if (design == 0)
		comm_waitall(c, q, NBUCKETS);
	else if (design == 1)
		pthread_join(th, NULL);
	else
		MPI_Waitall(NBUCKETS, mq, MPI_STATUSES_IGNORE);
	int64_t t1 = clock_ns();
	*wait_us = (double)(t1 - tw) / 1e3;
	return (double)(t1 - t0) / 1e3;
}

static int worker(int np)
{
	struct comm *c;
	if (comm_init(&c)) {
		fprintf(stderr, "bench_comm: %s\n", ascent_errmsg());
		return 1;
	}
	int me = comm_rank(c, COMM_WORLD);
	size_t cap = (size_t)64 << 20;
	float *s = malloc(cap), *r = malloc(cap);
	if (!s || !r)
		return 1;
	for (size_t i = 0; i < cap / 4; i++)
		s[i] = r[i] = (float)(i % 1024);
	double worst[2] = { 1e300, 1e300 };
	int64_t worst_at[2] = { 0, 0 };
	for (int64_t bytes = 32768; wanted("sweep") && bytes <= ((int64_t)64 << 20);) {
		size_t n = (size_t)bytes / 4;
		int calls = (int)(((int64_t)64 << 20) / bytes);
		calls = calls < 5 * reps ? 5 * reps : calls > 40 * reps ? 40 * reps : calls;
		for (int ip = 0; ip < 2; ip++) {
			struct side t, m;
			pair(c, s, r, n, ip, calls, &t, &m);
			double ratio = m.med_us / t.med_us;
			if (ratio < worst[ip])
				worst[ip] = ratio, worst_at[ip] = bytes;
			if (me == 0)
				printf("{\"bench\":\"comm_allreduce_vs_mpi\",\"ranks\":%d,\"bytes\":%lld,\"in_place\":%s,"
				       "\"comm_median_us\":%.2f,\"mpi_median_us\":%.2f,\"ratio_median\":%.3f,\"comm_min_us\":%.2f,"
				       "\"mpi_min_us\":%.2f,\"ratio_min\":%.3f,\"goal\":0.95,\"calls\":%d,\"basis\":\"single calls "
				       "alternating comm/MPI, slowest rank's median and minimum\"}\n",
				       np, (long long)bytes, ip ? "true" : "false", t.med_us, m.med_us, ratio, t.min_us, m.min_us,
				       m.min_us / t.min_us, calls);
		}
		fflush(stdout);
		bytes = bytes * 4 > ((int64_t)64 << 20) && bytes < ((int64_t)64 << 20) ? ((int64_t)64 << 20) : bytes * 4;
	}
	if (me == 0 && wanted("sweep"))
		printf("{\"bench\":\"comm_allreduce_vs_mpi_worst\",\"ranks\":%d,\"out_of_place_ratio_median\":%.3f,"
		       "\"out_of_place_bytes\":%lld,\"in_place_ratio_median\":%.3f,\"in_place_bytes\":%lld,\"goal\":0.95}\n",
		       np, worst[0], (long long)worst_at[0], worst[1], (long long)worst_at[1]);
	for (int ip = 0; ip < 2 && wanted("small"); ip++) {
		struct side t, m;
		pair(c, s, r, 2, ip, 4000, &t, &m);
		if (me == 0)
			printf("{\"bench\":\"comm_allreduce_small\",\"ranks\":%d,\"bytes\":8,\"in_place\":%s,"
			       "\"comm_min_us\":%.3f,\"mpi_min_us\":%.3f,\"added_min_us\":%.3f,\"comm_median_us\":%.3f,"
			       "\"mpi_median_us\":%.3f,\"added_median_us\":%.3f,\"goal_added_us\":0.3,\"basis\":\"4000 single "
			       "calls alternating comm/MPI, slowest rank\"}\n",
			       np, ip ? "true" : "false", t.min_us, m.min_us, t.min_us - m.min_us, t.med_us, m.med_us,
			       t.med_us - m.med_us);
	}
	fflush(stdout);
	if (np == 2 && wanted("design")) {
		float *b[NBUCKETS];
		for (int i = 0; i < NBUCKETS; i++)
			b[i] = s + (size_t)i * BUCKET_FLOATS;
		static const char *const names[3] = { "comm_thread_blocking", "progress_thread_iallreduce",
						       "caller_polls_iallreduce" };
		double best[3] = { 1e300, 1e300, 1e300 }, bwait[3] = { 0, 0, 0 };
		for (int k = 0; k < reps; k++)
			for (int d = 0; d < 3; d++) {
				double w, t = design_step(c, d, b, &w);
				comm_allreduce(c, COMM_WORLD, NULL, &t, 1, COMM_F64, COMM_MAX);
				comm_allreduce(c, COMM_WORLD, NULL, &w, 1, COMM_F64, COMM_MAX);
				if (t < best[d])
					best[d] = t, bwait[d] = w;
			}
		if (me == 0) {
			printf("{\"bench\":\"comm_nonblocking_design\",\"ranks\":2,\"buckets\":%d,\"bucket_bytes\":%d",
			       NBUCKETS, BUCKET_FLOATS * 4);
			for (int d = 0; d < 3; d++)
				printf(",\"%s_step_us\":%.0f,\"%s_wait_us\":%.0f", names[d], best[d], names[d], bwait[d]);
			printf(",\"basis\":\"best of %d alternating steps; step = first enqueue to last completion, wait = "
			       "time the caller waited after its last compute slice\"}\n", reps);
		}
		fflush(stdout);
	}
	free(s);
	free(r);
	return comm_finalize(c) ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *e = getenv("BENCH_COMM_REPS");
	if (e && atoi(e) > 0)
		reps = atoi(e);
	if (argc > 2 && !strcmp(argv[1], "--worker"))
		return worker(atoi(argv[2]));
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		printf("{\"bench\":\"comm\",\"error\":\"cannot find my own executable\"}\n");
		return 1;
	}
	self[n] = 0;
	if (system("command -v mpirun >/dev/null 2>&1")) {
		printf("{\"bench\":\"comm_allreduce_vs_mpi\",\"skipped\":\"mpirun not found\"}\n");
		return 0;
	}
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	int rc = 0;
	for (int np = 2; np <= 4; np += 2) {
		char cmd[8192];
		/* more ranks than cores (4 on the 2-core build host): no binding, and ranks that wait yield
		 * the core — the same settings for both sides, which run in the same processes */
		int over = np > (int)sysconf(_SC_NPROCESSORS_ONLN);
		snprintf(cmd, sizeof cmd, "mpirun --oversubscribe%s --mca mpi_yield_when_idle 1 -np %d '%s' --worker %d",
			 over ? " --bind-to none" : "", np, self, np);
		fflush(stdout);
		if (system(cmd)) {
			printf("{\"bench\":\"comm_allreduce_vs_mpi\",\"ranks\":%d,\"error\":\"the MPI run failed\"}\n", np);
			rc = 1;
		}
	}
	return rc;
}
