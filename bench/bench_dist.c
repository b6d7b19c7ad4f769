/* bench/bench_dist.c — the distributed trainer's figures, one JSON line each, measured side by side
 * in one run (the 2-core build machine is shared and noisy: each pair alternates A B A B and keeps
 * each side's best):
 *   dist_dp2_vs_one      tokens/s of the small preset at DP=2 (1 thread per rank) over one process
 *                        with 2 threads, same global batch, median of BENCH_DIST_REPS (default 5)
 *                        alternating runs each (goal >= 1.15)
 *   dist_dp2_bound       the bound of dist_dp2_vs_one on this host: two independent 1-thread processes
 *                        (no communication at all, each pinned to its own core as mpirun pins the
 *                        ranks, each with a DP=2 rank's share of the batch, started together; tokens/s
 *                        summed) over the one process with 2 threads, and DP=2 over them (what the
 *                        communication costs); the three alternate A B C, median of BENCH_DIST_REPS
 *                        each. An independent/one ratio at or below 1.15 puts dist_dp2_vs_one's goal
 *                        beyond the host
 *   dist_dp2_comm        from the DP=2 run's profile: communication share of the step and the share
 *                        of communication hidden behind computation, from the lanes: communication =
 *                        collectives transferring on their lane, hidden = the part the computing
 *                        thread did not wait for (goal >= 0.5)
 *   dist_demo_busbw      make demo's run (tiny, DP=2, profiled): the report's busbw of the 1 MB
 *                        gradient allreduce against diag comm's in-place figure (goal within 2x)
 *   dist_zero2_vs_zero1  small preset at DP=2: rank 0's gradient bytes and tokens/s with ZeRO-2 (the
 *                        gradient window) over ZeRO-1 (the whole gradient block)
 *   profile_overhead_train  tokens/s with --profile (every op hooked, every step recorded) over
 *                        without, tiny and small presets (goal >= 0.98)
 *   pp_bubble            the bubble share of the step table (receive time ÷ step time, steps after
 *                        the first, all ranks) of PP=2 runs on 2 ranks (not oversubscribed) against
 *                        theory, per schedule
 * It runs the trainer as child processes of itself (`bench_dist --train ARGS…` is `ascent train
 * ARGS…`), under mpirun for the multi-rank runs, in a temporary directory it removes.
 * BENCH_DIST_STEPS (default 8) sets the steps per run; BENCH_DIST_ONLY=NAME[,NAME] runs only those
 * figures (dp: dist_dp2_vs_one, dist_dp2_bound and dist_dp2_comm, demo, zero, overhead, pp). */
#include "bench/bench.h"
#include "comm/comm.h"
#include "profiler/prof.h"
#include "trainer/trainer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <sched.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char self[4096];
static int steps = 8;

/* Whether figure `name` is to run (BENCH_DIST_ONLY). */
static int wanted(const char *name)
{
	return bench_wanted("BENCH_DIST_ONLY", name);
}

/* Run the trainer: np ranks (1: no mpirun; 0: two independent single processes, each pinned to
 * a core of its own, run dirs OUT.0 and OUT.1), into run dir `out`; returns the exit status. */
static int run(int np, const char *out, const char *args)
{
	if (np == 0) {
		char cmd[8192];
		snprintf(cmd, sizeof cmd,
			 "'%s' --cpu 0 --train --steps %d --warmup 2 --eval-every 0 --eval-batches 1 --val-data val.txt "
			 "--out %s.0 %s >%s.0.log 2>&1 & p=$!; "
			 "'%s' --cpu 1 --train --steps %d --warmup 2 --eval-every 0 --eval-batches 1 --val-data val.txt "
			 "--out %s.1 %s >%s.1.log 2>&1; s=$?; wait $p; t=$?; exit $((s | t))",
			 self, steps, out, args, out, self, steps, out, args, out);
		int rc = system(cmd);
		if (rc != 0)
			fprintf(stderr, "bench_dist: the independent runs '%s' failed (status %d); see their logs\n", out, rc);
		return rc;
	}
	char cmd[8192];
	/* 2 ranks on the 2-core host are not oversubscribed: MPI's default (polling without yielding)
	 * lets comm/'s communication thread finish a transfer in one go */
	const char *mpi = np > 1 ? "mpirun -np " : "";
	char nps[16] = "";
	if (np > 1)
		snprintf(nps, sizeof nps, "%d ", np);
	snprintf(cmd, sizeof cmd,
		 "%s%s'%s' --train --steps %d --warmup 2 --eval-every 0 --eval-batches 1 --val-data val.txt --out %s %s "
		 ">%s.log 2>&1",
		 mpi, nps, self, steps, out, args, out);
	int rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "bench_dist: '%s' failed (status %d); see its log\n", cmd, rc);
	return rc;
}

static double summary_num(const char *out, const char *key)
{
	char path[512];
	snprintf(path, sizeof path, "%s/summary.json", out);
	cJSON *o;
	if (json_read_file(path, &o))
		return NAN;
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	double d = cJSON_IsNumber(v) ? v->valuedouble : NAN;
	cJSON_Delete(o);
	return d;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* tokens/s of run `out` (np 0: the two independent processes' sum). */
static double run_tokens_per_s(int np, const char *out)
{
	if (np)
		return summary_num(out, "tokens_per_s");
	char o[80];
	snprintf(o, sizeof o, "%s.0", out);
	double a = summary_num(o, "tokens_per_s");
	snprintf(o, sizeof o, "%s.1", out);
	return a + summary_num(o, "tokens_per_s");
}

/* Train `reps` times each of the `n` runs (ranks np[i], arguments args[i]), alternating A B C A B C;
 * each one's best tokens/s into tps[i], or with `median` its median. The other runs of the host
 * disturb every side alike. */
#define MAX_REPS 16
static int alternate(const char *name, int n, const int *np, const char *const *args, int reps, int median,
		     double *tps)
{
	double v[3][MAX_REPS];
	reps = reps < 1 ? 1 : reps > MAX_REPS ? MAX_REPS : reps;
	for (int rep = 0; rep < reps; rep++)
		for (int i = 0; i < n; i++) {
			char o[64];
			snprintf(o, sizeof o, "%s-%c%d", name, 'a' + i, rep);
			if (run(np[i], o, args[i]))
				return -1;
			v[i][rep] = run_tokens_per_s(np[i], o);
		}
	for (int i = 0; i < n; i++) {
		qsort(v[i], (size_t)reps, sizeof v[i][0], cmp_d);
		tps[i] = median ? v[i][reps / 2] : v[i][reps - 1];
	}
	return 0;
}

/* Train twice each, alternating; best tokens/s of each side. */
static int pair(const char *name, int npa, const char *a, int npb, const char *b, double *ta, double *tb)
{
	const int np[2] = { npa, npb };
	const char *args[2] = { a, b };
	double t[2];
	if (alternate(name, 2, np, args, 2, 0, t))
		return -1;
	*ta = t[0];
	*tb = t[1];
	return 0;
}

/* The report's busbw of the allreduce row of size bucket `bucket` (the 1 MB gradient bucket). */
static double report_busbw(const char *out, int64_t bucket)
{
	char db[512];
	snprintf(db, sizeof db, "%s/trace.db", out);
	FILE *f = tmpfile();
	if (!f)
		return NAN;
	struct prof_report_opts o = { .db_path = db, .by = "comm", .rank = -1, .step_lo = -1, .format = "json", .out = f };
	double bw = NAN;
	if (!prof_report(&o)) {
		long n = ftell(f);
		rewind(f);
		char *buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = 0;
			cJSON *j = cJSON_Parse(buf), *e;
			const cJSON *rows = j ? cJSON_GetObjectItemCaseSensitive(j, "comm") : NULL;
			cJSON_ArrayForEach(e, rows)
			{
				const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
				if (cJSON_IsString(nm) && !strcmp(nm->valuestring, "allreduce") &&
				    cJSON_GetObjectItemCaseSensitive(e, "size_bucket")->valuedouble == (double)bucket)
					bw = cJSON_GetObjectItemCaseSensitive(e, "busbw_gbs")->valuedouble;
			}
			cJSON_Delete(j);
		}
		free(buf);
	}
	fclose(f);
	return bw;
}

/* `bench_dist --busbw BYTES` under mpirun: what `ascent diag comm` measures for an in-place
 * allreduce of BYTES (5 warm-up calls, the mean of 20 timed ones averaged over ranks, busbw by
 * nccl-tests' factor); rank 0 prints it. */
static int busbw_worker(int64_t bytes)
{
	struct comm *c;
	if (comm_init(&c))
		return 1;
	size_t n = (size_t)bytes / 4;
	float *r = calloc(n ? n : 1, sizeof *r);
	int rc = r ? 0 : 1;
	for (int i = 0; i < 5 && !rc; i++)
		rc = comm_allreduce(c, COMM_WORLD, r, r, n, COMM_F32, COMM_SUM);
	if (!rc)
		rc = comm_barrier(c, COMM_WORLD);
	int64_t t0 = clock_ns();
	for (int i = 0; i < 20 && !rc; i++)
		rc = comm_allreduce(c, COMM_WORLD, r, r, n, COMM_F32, COMM_SUM);
	double us = (double)(clock_ns() - t0) / 1e3 / 20;
	if (!rc)
		rc = comm_allreduce(c, COMM_WORLD, NULL, &us, 1, COMM_F64, COMM_SUM);
	int np = comm_size(c, COMM_WORLD);
	if (!rc && comm_rank(c, COMM_WORLD) == 0)
		printf("%.6f\n", (double)bytes / (us / np * 1e3) * 2.0 * (np - 1) / np);
	free(r);
	comm_finalize(c);
	return rc ? 1 : 0;
}

/* Sum of step-table columns over steps >= 2 and every rank, via the report's JSON. */
struct steps_sum {
	double total, comm, overlapped, bubble;
};
static int step_sums(const char *out, struct steps_sum *s)
{
	char db[512];
	snprintf(db, sizeof db, "%s/trace.db", out);
	FILE *f = tmpfile();
	if (!f)
		return -1;
	struct prof_report_opts o = { .db_path = db, .by = "step", .rank = -1, .step_lo = -1, .format = "json", .out = f };
	int rc = prof_report(&o);
	memset(s, 0, sizeof *s);
	if (!rc) {
		long n = ftell(f);
		rewind(f);
		char *buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) == (size_t)n) {
			buf[n] = 0;
			cJSON *j = cJSON_Parse(buf);
			const cJSON *st = j ? cJSON_GetObjectItemCaseSensitive(j, "steps") : NULL, *e;
			cJSON_ArrayForEach(e, st)
			{
				if (cJSON_GetObjectItemCaseSensitive(e, "step")->valuedouble < 2)
					continue;
				s->total += cJSON_GetObjectItemCaseSensitive(e, "total_ns")->valuedouble;
				s->comm += cJSON_GetObjectItemCaseSensitive(e, "comm_ns")->valuedouble;
				s->overlapped += cJSON_GetObjectItemCaseSensitive(e, "overlapped_ns")->valuedouble;
				s->bubble += cJSON_GetObjectItemCaseSensitive(e, "bubble_ns")->valuedouble;
			}
			cJSON_Delete(j);
		} else {
			rc = -1;
		}
		free(buf);
	}
	fclose(f);
	return rc || s->total <= 0 ? -1 : 0;
}

static int worker(int argc, char **argv)
{
	struct trainer_cli cli;
	trainer_cli_init(&cli);
	char *pos[1];
	int np;
	int rc = opt_parse("train", cli.specs, argc, argv, pos, 0, &np);
	struct trainer_config cfg;
	if (!rc)
		rc = trainer_config_resolve(&cfg, &cli, "train");
	if (!rc)
		rc = trainer_run(&cfg);
	if (rc)
		fprintf(stderr, "error: %s\n", ascent_errmsg());
	return ascent_exit_code(rc);
}

/* Pin this process to the i-th CPU it may run on (as mpirun binds each rank to a core); a host
 * with fewer CPUs leaves it unpinned. */
static void pin_to_cpu(int i)
{
	cpu_set_t allowed, one;
	if (sched_getaffinity(0, sizeof allowed, &allowed))
		return;
	for (int cpu = 0, k = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || k++ != i)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		if (sched_setaffinity(0, sizeof one, &one))
			fprintf(stderr, "bench_dist: cannot pin to CPU %d: %s\n", cpu, strerror(errno));
		return;
	}
}

int main(int argc, char **argv)
{
	nn_blas_fix_core(argc, argv);
	if (argc > 1 && !strcmp(argv[1], "--train"))
		return worker(argc - 2, argv + 2);
	if (argc > 3 && !strcmp(argv[1], "--cpu") && !strcmp(argv[3], "--train")) {
		pin_to_cpu(atoi(argv[2]));
		return worker(argc - 4, argv + 4);
	}
	if (argc > 2 && !strcmp(argv[1], "--busbw"))
		return busbw_worker(atoll(argv[2]));
	ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
	if (n <= 0) {
		printf("{\"bench\":\"dist\",\"error\":\"cannot find my own executable\"}\n");
		return 1;
	}
	self[n] = 0;
	const char *e = getenv("BENCH_DIST_STEPS");
	if (e && atoi(e) > 2)
		steps = atoi(e);
	int reps = 5;
	e = getenv("BENCH_DIST_REPS");
	if (e && atoi(e) > 0)
		reps = atoi(e);
	setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
	setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
	char dir[] = "/tmp/ascent-bench-dist-XXXXXX";
	if (!mkdtemp(dir) || chdir(dir)) {
		printf("{\"bench\":\"dist\",\"error\":\"cannot make a temporary directory\"}\n");
		return 1;
	}
	/* one validation batch: the figures are about training steps, not the final evaluation */
	if (system("head -c 2100 /usr/share/games/fortunes/wisdom > val.txt")) {
		printf("{\"bench\":\"dist\",\"error\":\"cannot read the fortunes corpus\"}\n");
		return 1;
	}
	int mpi = system("command -v mpirun >/dev/null 2>&1") == 0;
	int rc = 0;
	double a, b;
	const char *small = "--preset small --batch 16 --seq 64";
	const char *tiny = "--preset tiny --batch 16 --seq 64";
	char x[512], y[512];

	if (mpi && wanted("dp")) {
		/* (i) one process, 2 threads; (ii) DP=2, 1 thread per rank; (iii) two independent
		 * 1-thread processes with a DP=2 rank's half of the batch each, no communication */
		char z[512];
		snprintf(x, sizeof x, "%s --threads 2", small);
		snprintf(y, sizeof y, "%s --threads 1 --dp 2", small);
		snprintf(z, sizeof z, "--preset small --batch 8 --seq 64 --threads 1");
		const int np[3] = { 1, 2, 0 };
		const char *args[3] = { x, y, z };
		double t[3];
		if (!alternate("dp", 3, np, args, reps, 1, t)) {
			printf("{\"bench\":\"dist_dp2_vs_one\",\"preset\":\"small\",\"global_batch\":16,\"seq\":64,\"steps\":%d,"
			       "\"one_process_2threads_tokens_per_s\":%.1f,\"dp2_1thread_per_rank_tokens_per_s\":%.1f,"
			       "\"ratio\":%.3f,\"goal\":1.15,\"basis\":\"median of %d alternating runs each\"}\n",
			       steps, t[0], t[1], t[1] / t[0], reps);
			printf("{\"bench\":\"dist_dp2_bound\",\"preset\":\"small\",\"batch_per_process\":8,\"seq\":64,"
			       "\"steps\":%d,\"independent_2x1thread_tokens_per_s\":%.1f,\"independent_over_one\":%.3f,"
			       "\"dp2_over_independent\":%.3f,\"basis\":\"two single-rank runs of half the batch started "
			       "together, each pinned to its own core, tokens/s summed; median of %d runs alternating with "
			       "dist_dp2_vs_one's two\"}\n",
			       steps, t[2], t[2] / t[0], t[1] / t[2], reps);
		} else {
			rc = 1;
		}
		fflush(stdout);
		snprintf(y, sizeof y, "%s --threads 1 --dp 2 --profile", small);
		struct steps_sum s;
		if (!run(2, "dpprof", y) && !step_sums("dpprof", &s))
			printf("{\"bench\":\"dist_dp2_comm\",\"preset\":\"small\",\"bucket_mb\":1,\"comm_share_of_step\":%.3f,"
			       "\"hidden_share_of_comm\":%.3f,\"not_hidden_share_of_step\":%.3f,\"goal_hidden\":0.5,"
			       "\"basis\":\"step table, steps >= 2, both ranks; comm = time a collective transfers on a "
			       "communication lane (or a thread waits for one); not hidden = time the computing thread waited\"}\n",
			       s.comm / s.total, s.comm > 0 ? s.overlapped / s.comm : 0, (s.comm - s.overlapped) / s.total);
		else
			rc = 1;
		fflush(stdout);
	}
	if (mpi && wanted("demo")) {
		/* make demo's run (tiny, DP=2, profiled, default threads): its 1 MB gradient allreduce
		 * against diag comm's in-place allreduce of that size, measured right after it */
		snprintf(y, sizeof y, "--preset tiny --batch 32 --dp 2 --profile");
		double pbw = NAN, dbw = NAN;
		if (!run(2, "demo", y))
			pbw = report_busbw("demo", 1 << 20);
		char cmd[8192];
		snprintf(cmd, sizeof cmd, "mpirun -np 2 '%s' --busbw %d", self, 1 << 20);
		FILE *p = popen(cmd, "r");
		if (p) {
			if (fscanf(p, "%lf", &dbw) != 1)
				dbw = NAN;
			pclose(p);
		}
		if (pbw > 0 && dbw > 0)
			printf("{\"bench\":\"dist_demo_busbw\",\"preset\":\"tiny\",\"dp\":2,\"bytes\":%d,\"profile_busbw_gbs\":%.4f,"
			       "\"diag_comm_busbw_gbs\":%.4f,\"ratio\":%.3f,\"goal\":\"0.5..2\",\"basis\":\"report --format json "
			       "(transit of matched calls) against the traced in-place allreduce, mean of 20 calls\"}\n",
			       1 << 20, pbw, dbw, pbw / dbw);
		else
			rc = 1;
		fflush(stdout);
	}
	if (mpi && wanted("zero")) {
		snprintf(x, sizeof x, "%s --threads 1 --dp 2 --zero 1", small);
		snprintf(y, sizeof y, "%s --threads 1 --dp 2 --zero 2", small);
		if (!pair("zero", 2, x, 2, y, &a, &b)) {
			double ga = summary_num("zero-a0", "rank0_grad_bytes"), gb = summary_num("zero-b0", "rank0_grad_bytes");
			printf("{\"bench\":\"dist_zero2_vs_zero1\",\"preset\":\"small\",\"dp\":2,\"zero1_grad_bytes\":%.0f,"
			       "\"zero2_grad_bytes\":%.0f,\"grad_bytes_ratio\":%.3f,\"zero1_tokens_per_s\":%.1f,"
			       "\"zero2_tokens_per_s\":%.1f,\"speed_ratio\":%.3f}\n",
			       ga, gb, gb / ga, a, b, b / a);
		} else {
			rc = 1;
		}
		fflush(stdout);
	}
	if (!mpi)
		printf("{\"bench\":\"dist_dp2_vs_one\",\"skipped\":\"mpirun not found\"}\n");

	const char *presets[2] = { tiny, small }, *names[2] = { "tiny", "small" };
	for (int i = 0; i < 2 && wanted("overhead"); i++) {
		snprintf(x, sizeof x, "%s --threads 2", presets[i]);
		snprintf(y, sizeof y, "%s --threads 2 --profile", presets[i]);
		char tag[32];
		snprintf(tag, sizeof tag, "prof-%s", names[i]);
		if (!pair(tag, 1, x, 1, y, &a, &b))
			printf("{\"bench\":\"profile_overhead_train\",\"preset\":\"%s\",\"steps\":%d,\"tokens_per_s_off\":%.1f,"
			       "\"tokens_per_s_profiled\":%.1f,\"ratio\":%.3f,\"goal\":0.98}\n",
			       names[i], steps, a, b, b / a);
		else
			rc = 1;
		fflush(stdout);
	}

	if (mpi && wanted("pp")) {
		static const struct {
			const char *sched;
			int v;
		} pp[] = { { "gpipe", 1 }, { "1f1b", 1 }, { "interleaved", 2 } };
		for (int i = 0; i < 3; i++) {
			char out[32];
			snprintf(out, sizeof out, "pp-%s", pp[i].sched);
			snprintf(y, sizeof y, "%s --threads 1 --pp 2 --microbatches 4 --schedule %s --virtual-stages %d --profile",
				 tiny, pp[i].sched, pp[i].v);
			struct steps_sum s;
			enum trainer_pp_kind k;
			trainer_pp_parse(pp[i].sched, &k);
			if (!run(2, out, y) && !step_sums(out, &s))
				printf("{\"bench\":\"pp_bubble\",\"preset\":\"tiny\",\"schedule\":\"%s\",\"p\":2,\"m\":4,\"v\":%d,"
				       "\"measured\":%.3f,\"theory\":%.3f,\"basis\":\"receive time / step time, steps >= 2, both "
				       "ranks, 1 rank per core\"}\n",
				       pp[i].sched, pp[i].v, s.bubble / s.total, trainer_pp_bubble_theory(k, 2, 4, pp[i].v));
			else
				rc = 1;
			fflush(stdout);
		}
	}
	if (chdir("/tmp") == 0)
		fs_rm_rf(dir);
	return rc;
}
