/* comm/selftest.c — comm_selftest_run(), the self-test behind the hidden `ascent comm-selftest` command
 * that the comm/ integration tests run (under mpirun, or alone as a singleton). Every rank computes the exact expected result of
 * every collective from the ranks' known inputs and compares element by element; the command
 * fails when any rank saw a difference. Modes:
 *   grid         coordinates and sub-communicator membership; rank 0 prints the groups MPI formed
 *   collectives  allreduce (sum/avg/max/min × f32/f64/i64, in place too), reduce-scatter,
 *                allgather, broadcast from every root, alltoall, send/recv, barrier, blocking and
 *                non-blocking, on the world and every sub-communicator
 *   clock        comm_clock_offset: offsets on one host must be 0 within the error bound
 *   loop         N allreduces on the world (--sleep-ms between them; --nonblocking: each one
 *                enqueued for the communication thread, then waited for): for timeouts, faults,
 *                SIGUSR1
 *   progress     a non-blocking allreduce enqueued before --compute-ms of profiled computation and
 *                waited for after it, never polled: the profile (--run-dir RUN, merged into
 *                RUN/trace.db) shows when it ran on the world's lane against the computation
 *   late         a non-blocking allreduce whose peers arrive --compute-ms late: rank 0's
 *                communication thread sleeps until they do (its context switches counted)
 *   all          grid, collectives, clock */
#include "comm/comm.h"
#include "common/common.h"
#include "profiler/prof.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct st {
	struct comm *c;
	int me;
	long checks, fails;
};

#define CHECK(s, cond, ...)                                                                  \
	do {                                                                                 \
		(s)->checks++;                                                               \
		if (!(cond)) {                                                               \
			if ((s)->fails++ < 10) {                                             \
				fprintf(stderr, "comm-selftest: rank %d: ", (s)->me);        \
				fprintf(stderr, __VA_ARGS__);                                \
				fputc('\n', stderr);                                         \
			}                                                                    \
		}                                                                            \
	} while (0)

/* The input of world rank `wr` at index i: small integers, so float sums are exact in any order. */
static int64_t val(int64_t wr, int64_t i)
{
	return (wr * 131 + i * 7) % 97 - 40;
}

static void put(void *buf, int t, size_t i, int64_t v)
{
	switch (t) {
	case COMM_F32: ((float *)buf)[i] = (float)v; break;
	case COMM_F64: ((double *)buf)[i] = (double)v; break;
	case COMM_I64: ((int64_t *)buf)[i] = v; break;
	default: ((int32_t *)buf)[i] = (int32_t)v; break;
	}
}

/* Expected reduction of the members' values in the buffer's own type (avg: sum then divide). */
static int same(const void *buf, int t, size_t i, const int64_t *vals, int n, int op)
{
	int64_t s = 0, mx = vals[0], mn = vals[0];
	for (int k = 0; k < n; k++) {
		s += vals[k];
		mx = vals[k] > mx ? vals[k] : mx;
		mn = vals[k] < mn ? vals[k] : mn;
	}
	int64_t ref = op == COMM_MAX ? mx : op == COMM_MIN ? mn : s;
	switch (t) {
	case COMM_F32: {
		float e = (float)ref;
		if (op == COMM_AVG)
			e /= (float)n;
		return ((const float *)buf)[i] == e;
	}
	case COMM_F64: {
		double e = (double)ref;
		if (op == COMM_AVG)
			e /= (double)n;
		return ((const double *)buf)[i] == e;
	}
	case COMM_I64: return ((const int64_t *)buf)[i] == (op == COMM_AVG ? ref / n : ref);
	default: return ((const int32_t *)buf)[i] == (int32_t)(op == COMM_AVG ? ref / n : ref);
	}
}

static double getd(const void *buf, int t, size_t i)
{
	switch (t) {
	case COMM_F32: return ((const float *)buf)[i];
	case COMM_F64: return ((const double *)buf)[i];
	case COMM_I64: return (double)((const int64_t *)buf)[i];
	default: return ((const int32_t *)buf)[i];
	}
}

static const char *OPN[] = { "sum", "avg", "max", "min" };
static const char *TN[] = { "f32", "f64", "i64", "i32" };

static int test_grid(struct st *s, int print)
{
	struct comm *c = s->c;
	int W = comm_size(c, COMM_WORLD), me = s->me;
	int dp = comm_size(c, COMM_DP), tp = comm_size(c, COMM_TP), pp = comm_size(c, COMM_PP);
	int dr, tr, pr;
	comm_grid_coords(me, dp, tp, pp, &dr, &tr, &pr);
	CHECK(s, comm_grid_rank(dp, tp, pp, dr, tr, pr) == me, "grid rank of my coordinates is not me");
	CHECK(s, me == pr * dp * tp + dr * tp + tr, "coordinates (%d,%d,%d) do not give rank %d", dr, tr, pr, me);
	CHECK(s, comm_rank(c, COMM_DP) == dr && comm_rank(c, COMM_TP) == tr && comm_rank(c, COMM_PP) == pr,
	      "sub-communicator ranks dp %d tp %d pp %d, expected %d %d %d", comm_rank(c, COMM_DP), comm_rank(c, COMM_TP),
	      comm_rank(c, COMM_PP), dr, tr, pr);
	/* members as MPI sees them: gather world ranks inside each group; then give rank 0 the lot */
	int sizes[4] = { W, dp, tp, pp };
	int *all = calloc((size_t)W * (size_t)(dp + tp + pp), sizeof *all);
	int *mine = calloc((size_t)(dp + tp + pp), sizeof *mine);
	if (!all || !mine) {
		free(all);
		free(mine);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int off = 0, rc = 0;
	for (int k = COMM_DP; k <= COMM_PP && !rc; k++) {
		int32_t wr = me;
		rc = comm_allgather(c, (enum comm_kind)k, &wr, mine + off, 1, COMM_I32);
		for (int i = 0; i < sizes[k] && !rc; i++) {
			int exp = comm_world_rank_of(c, (enum comm_kind)k, i);
			int e2 = k == COMM_DP	? comm_grid_rank(dp, tp, pp, i, tr, pr)
				 : k == COMM_TP ? comm_grid_rank(dp, tp, pp, dr, i, pr)
						: comm_grid_rank(dp, tp, pp, dr, tr, i);
			CHECK(s, mine[off + i] == exp && exp == e2, "%s member %d is world rank %d, expected %d",
			      comm_kind_name((enum comm_kind)k), i, mine[off + i], e2);
		}
		off += sizes[k];
	}
	if (!rc)
		rc = comm_allgather(c, COMM_WORLD, mine, all, (size_t)off, COMM_I32);
	if (!rc && print && me == 0) {
		printf("grid dp=%d tp=%d pp=%d world=%d\n", dp, tp, pp, W);
		int base = 0;
		for (int k = COMM_DP; k <= COMM_PP; k++) {
			/* a group is printed once, by its member 0 */
			printf("%s groups:", comm_kind_name((enum comm_kind)k));
			for (int r = 0; r < W; r++) {
				const int *g = all + (size_t)r * off + base;
				if (g[0] != r)
					continue;
				printf(" {");
				for (int i = 0; i < sizes[k]; i++)
					printf("%s%d", i ? "," : "", g[i]);
				printf("}");
			}
			printf("\n");
			base += sizes[k];
		}
		fflush(stdout);
	}
	free(all);
	free(mine);
	return rc;
}

static int test_allreduce(struct st *s, int k, int t, int op, size_t n, int mode)
{
	struct comm *c = s->c;
	int gs = comm_size(c, (enum comm_kind)k);
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	char *send = malloc(n * sz), *recv = malloc(n * sz);
	int64_t *vals = malloc(sizeof *vals * (size_t)gs);
	if (!send || !recv || !vals) {
		free(send), free(recv), free(vals);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++)
		put(send, t, i, val(s->me, (int64_t)i));
	int rc;
	if (mode == 0) {          /* blocking */
		rc = comm_allreduce(c, (enum comm_kind)k, send, recv, n, (enum comm_dtype)t, (enum comm_op)op);
	} else if (mode == 1) {   /* in place */
		memcpy(recv, send, n * sz);
		rc = comm_allreduce(c, (enum comm_kind)k, NULL, recv, n, (enum comm_dtype)t, (enum comm_op)op);
	} else {                  /* non-blocking, completed by comm_test polling */
		struct comm_req *r = NULL;
		rc = comm_iallreduce(c, (enum comm_kind)k, send, recv, n, (enum comm_dtype)t, (enum comm_op)op, &r);
		int done = 0;
		while (!rc && !done)
			rc = comm_test(c, &r, &done);
	}
	for (size_t i = 0; !rc && i < n; i++) {
		for (int m = 0; m < gs; m++)
			vals[m] = val(comm_world_rank_of(c, (enum comm_kind)k, m), (int64_t)i);
		CHECK(s, same(recv, t, i, vals, gs, op), "allreduce %s %s on %s (n=%zu, mode %d) [%zu] = %g wrong", OPN[op],
		      TN[t], comm_kind_name((enum comm_kind)k), n, mode, i, getd(recv, t, i));
	}
	free(send), free(recv), free(vals);
	return rc;
}

/* Several non-blocking operations in flight at once, completed in reverse order. */
static int test_overlap(struct st *s, int k)
{
	struct comm *c = s->c;
	enum { NB = 3, N = 1000 };
	int gs = comm_size(c, (enum comm_kind)k);
	float *b[NB];
	struct comm_req *r[NB] = { 0 };
	int rc = 0;
	for (int j = 0; j < NB; j++) {
		b[j] = malloc(N * sizeof(float));
		if (!b[j]) {
			while (j-- > 0)
				free(b[j]);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		for (int i = 0; i < N; i++)
			b[j][i] = (float)val(s->me + 1000 * j, i);
	}
	for (int j = 0; j < NB && !rc; j++)
		rc = comm_iallreduce(c, (enum comm_kind)k, b[j], b[j], N, COMM_F32, COMM_SUM, &r[j]);
	for (int j = NB - 1; j >= 0; j--) {
		int e = comm_wait(c, &r[j]);
		rc = rc ? rc : e;
	}
	for (int j = 0; j < NB && !rc; j++)
		for (int i = 0; i < N; i++) {
			int64_t e = 0;
			for (int m = 0; m < gs; m++)
				e += val(comm_world_rank_of(c, (enum comm_kind)k, m) + 1000 * j, i);
			CHECK(s, b[j][i] == (float)e, "overlapped iallreduce %d on %s [%d] = %g, expected %lld", j,
			      comm_kind_name((enum comm_kind)k), i, b[j][i], (long long)e);
		}
	for (int j = 0; j < NB; j++)
		free(b[j]);
	return rc;
}

static int test_others(struct st *s, int k, size_t n, int nb)
{
	struct comm *c = s->c;
	enum comm_kind K = (enum comm_kind)k;
	int gs = comm_size(c, K), gr = comm_rank(c, K);
	size_t full = n * (size_t)gs;
	int64_t *a = malloc(full * 8), *b = malloc(full * 8);
	int64_t *vals = malloc(sizeof *vals * (size_t)gs);
	int rc = 0;
	if (!a || !b || !vals) {
		free(a), free(b), free(vals);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	struct comm_req *r = NULL;
	/* reduce-scatter (sum, avg) */
	for (int op = COMM_SUM; op <= COMM_AVG && !rc; op++) {
		for (size_t i = 0; i < full; i++)
			a[i] = val(s->me, (int64_t)i);
		rc = nb ? comm_ireduce_scatter(c, K, a, b, n, COMM_I64, (enum comm_op)op, &r)
			: comm_reduce_scatter(c, K, a, b, n, COMM_I64, (enum comm_op)op);
		if (!rc && nb)
			rc = comm_wait(c, &r);
		for (size_t i = 0; !rc && i < n; i++) {
			for (int m = 0; m < gs; m++)
				vals[m] = val(comm_world_rank_of(c, K, m), (int64_t)((size_t)gr * n + i));
			CHECK(s, same(b, COMM_I64, i, vals, gs, op), "reduce_scatter %s on %s [%zu] = %lld wrong", OPN[op],
			      comm_kind_name(K), i, (long long)b[i]);
		}
	}
	/* reduce-scatter in place (f64) */
	if (!rc) {
		double *d = (double *)a;
		for (size_t i = 0; i < full; i++)
			d[i] = (double)val(s->me, (int64_t)i);
		rc = comm_reduce_scatter(c, K, NULL, d, n, COMM_F64, COMM_SUM);
		for (size_t i = 0; !rc && i < n; i++) {
			for (int m = 0; m < gs; m++)
				vals[m] = val(comm_world_rank_of(c, K, m), (int64_t)((size_t)gr * n + i));
			CHECK(s, same(d, COMM_F64, i, vals, gs, COMM_SUM), "reduce_scatter in place on %s [%zu] wrong",
			      comm_kind_name(K), i);
		}
	}
	/* allgather, then in place */
	for (int inplace = 0; inplace <= 1 && !rc; inplace++) {
		for (size_t i = 0; i < n; i++)
			a[i] = val(s->me, (int64_t)i) * 3;
		for (size_t i = 0; i < full; i++)
			b[i] = -999;
		if (inplace)
			memcpy(b + (size_t)gr * n, a, n * 8);
		const void *snd = inplace ? NULL : a;
		rc = nb ? comm_iallgather(c, K, snd, b, n, COMM_I64, &r) : comm_allgather(c, K, snd, b, n, COMM_I64);
		if (!rc && nb)
			rc = comm_wait(c, &r);
		for (int m = 0; !rc && m < gs; m++)
			for (size_t i = 0; i < n; i++)
				CHECK(s, b[(size_t)m * n + i] == val(comm_world_rank_of(c, K, m), (int64_t)i) * 3,
				      "allgather%s on %s block %d [%zu] = %lld wrong", inplace ? " in place" : "",
				      comm_kind_name(K), m, i, (long long)b[(size_t)m * n + i]);
	}
	/* broadcast from every root */
	for (int root = 0; root < gs && !rc; root++) {
		for (size_t i = 0; i < n; i++)
			a[i] = gr == root ? val(s->me, (int64_t)i) + 7 : 12345;
		rc = nb ? comm_ibroadcast(c, K, a, n, COMM_I64, root, &r) : comm_broadcast(c, K, a, n, COMM_I64, root);
		if (!rc && nb)
			rc = comm_wait(c, &r);
		for (size_t i = 0; !rc && i < n; i++)
			CHECK(s, a[i] == val(comm_world_rank_of(c, K, root), (int64_t)i) + 7,
			      "broadcast from %d on %s [%zu] = %lld wrong", root, comm_kind_name(K), i, (long long)a[i]);
	}
	/* alltoall: block j of member m's send = val(world(m)*17 + j, i) */
	if (!rc) {
		for (int j = 0; j < gs; j++)
			for (size_t i = 0; i < n; i++)
				a[(size_t)j * n + i] = val((int64_t)s->me * 17 + j, (int64_t)i);
		rc = nb ? comm_ialltoall(c, K, a, b, n, COMM_I64, &r) : comm_alltoall(c, K, a, b, n, COMM_I64);
		if (!rc && nb)
			rc = comm_wait(c, &r);
		for (int m = 0; !rc && m < gs; m++)
			for (size_t i = 0; i < n; i++)
				CHECK(s, b[(size_t)m * n + i] == val((int64_t)comm_world_rank_of(c, K, m) * 17 + gr, (int64_t)i),
				      "alltoall on %s block %d [%zu] wrong", comm_kind_name(K), m, i);
	}
	/* send/recv: a ring with non-blocking calls, then blocking pairs (0,1), (2,3), ... */
	if (!rc && comm_uses_mpi(c)) {
		int next = (gr + 1) % gs, prev = (gr - 1 + gs) % gs;
		struct comm_req *rr = NULL, *rs = NULL;
		for (size_t i = 0; i < n; i++)
			a[i] = val(s->me, (int64_t)i) - 5;
		rc = comm_irecv(c, K, b, n, COMM_I64, prev, 3, &rr);
		if (!rc)
			rc = comm_isend(c, K, a, n, COMM_I64, next, 3, &rs);
		int e1 = comm_wait(c, &rs), e2 = comm_wait(c, &rr);
		rc = rc ? rc : e1 ? e1 : e2;
		for (size_t i = 0; !rc && i < n; i++)
			CHECK(s, b[i] == val(comm_world_rank_of(c, K, prev), (int64_t)i) - 5,
			      "recv from %d on %s [%zu] wrong", prev, comm_kind_name(K), i);
		int partner = gr ^ 1;
		if (!rc && partner < gs) {
			for (size_t i = 0; i < n; i++)
				a[i] = val(s->me, (int64_t)i) + 11;
			if (gr % 2 == 0) {
				rc = comm_send(c, K, a, n, COMM_I64, partner, 4);
				if (!rc)
					rc = comm_recv(c, K, b, n, COMM_I64, partner, 4);
			} else {
				rc = comm_recv(c, K, b, n, COMM_I64, partner, 4);
				if (!rc)
					rc = comm_send(c, K, a, n, COMM_I64, partner, 4);
			}
			for (size_t i = 0; !rc && i < n; i++)
				CHECK(s, b[i] == val(comm_world_rank_of(c, K, partner), (int64_t)i) + 11,
				      "blocking recv from %d on %s [%zu] wrong", partner, comm_kind_name(K), i);
		}
	}
	if (!rc)
		rc = comm_barrier(c, K);
	free(a), free(b), free(vals);
	return rc;
}

static int test_collectives(struct st *s)
{
	static const size_t sizes[] = { 7, 20000 };
	int rc = 0;
	for (int k = 0; k < COMM_NKINDS && !rc; k++) {
		for (int si = 0; si < 2 && !rc; si++)
			for (int t = COMM_F32; t <= COMM_I64 && !rc; t++)
				for (int op = 0; op < COMM_NOPS && !rc; op++)
					rc = test_allreduce(s, k, t, op, sizes[si], (t + op + si) % 3);
		if (!rc)
			rc = test_overlap(s, k);
		for (int si = 0; si < 2 && !rc; si++)
			rc = test_others(s, k, sizes[si] / 4 + 1, si);
	}
	return rc;
}

static int test_clock(struct st *s)
{
	int64_t off = 0, err = 0;
	int rc = comm_clock_offset(s->c, &off, &err);
	if (rc)
		return rc;
	printf("clock rank %d offset_ns %lld err_ns %lld\n", s->me, (long long)off, (long long)err);
	CHECK(s, err >= 0, "negative clock error %lld", (long long)err);
	if (s->me == 0)
		CHECK(s, off == 0 && err == 0, "rank 0 offset %lld err %lld, expected 0", (long long)off, (long long)err);
	/* one host, one CLOCK_MONOTONIC: the true offset is 0, so it must lie within the bound
	 * (plus 1 ms for a rank descheduled between the clock read and the send) */
	CHECK(s, llabs(off) <= err + 1000000, "offset %lld ns exceeds its bound %lld ns on one host", (long long)off,
	      (long long)err);
	return 0;
}

static int test_loop(struct st *s, int iters, int sleep_ms, int nonblocking)
{
	int W = comm_size(s->c, COMM_WORLD);
	for (int it = 1; it <= iters; it++) {
		int64_t x = s->me + it, sum = 0;
		int rc;
		if (nonblocking) {
			struct comm_req *r = NULL;
			rc = comm_iallreduce(s->c, COMM_WORLD, &x, &sum, 1, COMM_I64, COMM_SUM, &r);
			int rc2 = comm_wait(s->c, &r);
			rc = rc ? rc : rc2;
		} else {
			rc = comm_allreduce(s->c, COMM_WORLD, &x, &sum, 1, COMM_I64, COMM_SUM);
		}
		if (rc)
			return rc;
		CHECK(s, sum == (int64_t)W * (W - 1) / 2 + (int64_t)W * it, "loop %d: sum %lld wrong", it, (long long)sum);
		if (sleep_ms > 0) {
			struct timespec ts = { sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000L };
			nanosleep(&ts, NULL);
		}
	}
	return 0;
}

/* The voluntary context switches of this process's communication thread so far (the thread
 * named "ascent comm", from /proc/self/task), or -1 when there is none to read. */
static long comm_thread_switches(void)
{
	DIR *d = opendir("/proc/self/task");
	long v = -1;
	struct dirent *e;
	while (d && v < 0 && (e = readdir(d)) != NULL) {
		char path[300], line[128];
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "r");
		int ours = f && fgets(line, sizeof line, f) && !strncmp(line, "ascent comm", 11);
		if (f)
			fclose(f);
		if (!ours)
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		while (fgets(line, sizeof line, f))
			if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
				break;
		fclose(f);
	}
	if (d)
		closedir(d);
	return v;
}

/* A peer late by late_ms: every rank but world rank 0 sleeps late_ms before it enqueues a
 * non-blocking allreduce that rank 0 enqueued at once and waits for. Rank 0's communication thread
 * waits for the peers sleeping on their arrival flags (comm/arrive.c, every rank on this host):
 * a handful of wake-ups, where polling an MPI_Ibarrier between 20 µs sleeps made thousands. */
static int test_late(struct st *s, int late_ms)
{
	int W = comm_size(s->c, COMM_WORLD);
	int rc = comm_barrier(s->c, COMM_WORLD);
	if (rc)
		return rc;
	long before = s->me == 0 ? comm_thread_switches() : 0;
	if (s->me != 0) {
		struct timespec ts = { late_ms / 1000, (long)(late_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	int64_t x = s->me + 1, sum = 0;
	struct comm_req *r = NULL;
	rc = comm_iallreduce(s->c, COMM_WORLD, &x, &sum, 1, COMM_I64, COMM_SUM, &r);
	int rc2 = comm_wait(s->c, &r);
	if ((rc = rc ? rc : rc2))
		return rc;
	CHECK(s, sum == (int64_t)W * (W + 1) / 2, "late: sum %lld, expected %lld", (long long)sum,
	      (long long)W * (W + 1) / 2);
	if (s->me == 0) {
		long after = comm_thread_switches();
		CHECK(s, before >= 0 && after >= 0, "late: no communication thread to read (%ld, %ld)", before, after);
		CHECK(s, after - before < 100,
		      "late: the communication thread switched %ld times while its peers were %d ms late: it polled "
		      "instead of sleeping on their arrival flags",
		      after - before, late_ms);
		printf("comm-selftest late: the communication thread waited %d ms with %ld context switches\n", late_ms,
		       after - before);
	}
	return 0;
}

/* A non-blocking allreduce enqueued, then compute_ms of computation recorded as the operator
 * "compute" (it never looks at the request), then the wait. The merged profile holds the lane's
 * transfer and the computation for the test script to compare. */
static int test_progress(struct st *s, const char *run_dir, int compute_ms)
{
	enum { N = 65536 };
	struct comm *c = s->c;
	int W = comm_size(c, COMM_WORLD);
	if (!run_dir)
		return ascent_error(ASCENT_EUSAGE, "comm-selftest --test progress needs --run-dir DIR (the profile goes there)");
	char db[4200];
	prof_rank_db_path(run_dir, s->me, db, sizeof db);
	struct prof_options po = { .db_path = db, .rank = s->me, .world_size = W, .dp_rank = -1, .tp_rank = -1,
				   .pp_rank = -1 };
	int rc = prof_init(&po);
	if (rc)
		return rc;
	comm_prof_register(c);
	float *buf = malloc(N * sizeof *buf), *buf2 = malloc(N / 2 * sizeof *buf2);
	if (!buf || !buf2) {
		free(buf);
		free(buf2);
		prof_shutdown();
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < N; i++)
		buf[i] = (float)val(s->me, i);
	for (int i = 0; i < N / 2; i++)
		buf2[i] = (float)val(s->me, i + 7);
	struct comm_req *r = NULL, *r2 = NULL;
	rc = comm_barrier(c, COMM_WORLD);
	if (!rc)
		rc = comm_iallreduce(c, COMM_WORLD, buf, buf, N, COMM_F32, COMM_SUM, &r);
	if (!rc)   /* queued behind the first: its queueing goes into the profile */
		rc = comm_iallreduce(c, COMM_WORLD, buf2, buf2, N / 2, COMM_F32, COMM_SUM, &r2);
	struct prof_tok t = prof_op_begin("compute", -1, 0);
	volatile double x = 1;
	int64_t t0 = clock_ns();
	while (clock_ns() - t0 < (int64_t)compute_ms * 1000000)
		for (int i = 0; i < 10000; i++)
			x = x * 1.0000001 + 1e-9;
	prof_op_end(&t);
	int rc2 = comm_wait(c, &r), rc3 = comm_wait(c, &r2);
	rc = rc ? rc : rc2 ? rc2 : rc3;
	for (int i = 0; !rc && i < N; i++) {
		int64_t e = 0, e2 = 0;
		for (int m = 0; m < W; m++)
			e += val(m, i), e2 += val(m, i + 7);
		CHECK(s, buf[i] == (float)e, "progress: allreduce [%d] = %g, expected %lld", i, buf[i], (long long)e);
		if (i < N / 2)
			CHECK(s, buf2[i] == (float)e2, "progress: second allreduce [%d] = %g, expected %lld", i, buf2[i],
			      (long long)e2);
	}
	free(buf);
	free(buf2);
	int prc = prof_shutdown();
	rc = rc ? rc : prc;
	if (!rc)
		rc = comm_barrier(c, COMM_WORLD);   /* every rank's database is complete */
	if (!rc && s->me == 0)
		rc = prof_merge(run_dir, NULL, 1);
	return rc;
}

int comm_selftest_run(const struct comm_selftest_options *o)
{
	const char *test = o->test ? o->test : "all", *run_dir = o->run_dir;
	int dp = o->dp, tp = o->tp, pp = o->pp, rc;
	struct comm *c = NULL;
	if ((rc = comm_init(&c)))
		return rc;
	struct st s = { .c = c, .me = comm_rank(c, COMM_WORLD) };
	int W = comm_size(c, COMM_WORLD);
	if (dp == 0) {
		dp = W / (tp * pp);
		if (dp < 1)
			dp = 1;
	}
	rc = comm_set_grid(c, dp, tp, pp);
	if (!rc && run_dir) {
		rc = comm_set_run_dir(c, run_dir);
		char path[4200];
		snprintf(path, sizeof path, "%s/pids", run_dir);
		if (!rc)
			rc = fs_mkdir_p(path);
		snprintf(path, sizeof path, "%s/logs/rank-%05d.log", run_dir, s.me);
		if (!rc)
			rc = log_open(path, s.me, 1);
		snprintf(path, sizeof path, "%s/pids/rank-%05d.pid", run_dir, s.me);
		char pid[32];
		int n = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
		if (!rc)
			rc = atomic_write_file(path, pid, (size_t)n);
	}
	int all = !strcmp(test, "all");
	if (!rc && (all || !strcmp(test, "grid")))
		rc = test_grid(&s, 1);
	if (!rc && (all || !strcmp(test, "collectives")))
		rc = test_collectives(&s);
	if (!rc && (all || !strcmp(test, "clock")))
		rc = test_clock(&s);
	if (!rc && !strcmp(test, "loop"))
		rc = test_loop(&s, o->iters, o->sleep_ms, o->nonblocking);
	if (!rc && !strcmp(test, "progress"))
		rc = test_progress(&s, run_dir, o->compute_ms);
	if (!rc && !strcmp(test, "late"))
		rc = test_late(&s, o->compute_ms);
	if (!rc) {
		int64_t local[2] = { s.checks, s.fails }, tot[2];
		rc = comm_allreduce(c, COMM_WORLD, local, tot, 2, COMM_I64, COMM_SUM);
		if (!rc && s.me == 0)
			printf("comm-selftest %s: %lld checks, %lld failed on %d ranks (dp=%d tp=%d pp=%d, %s)\n", test,
			       (long long)tot[0], (long long)tot[1], W, dp, tp, pp,
			       comm_uses_mpi(c) ? "mpi" : "no mpi");
		if (!rc && tot[1])
			rc = ascent_error(ASCENT_EFAIL, "comm self-test failed: %lld of %lld checks wrong (see above)",
					  (long long)tot[1], (long long)tot[0]);
	}
	int frc = comm_finalize(c);
	if (run_dir)
		log_close();
	return rc ? rc : frc;
}
