/* bench/bench_import_parallel.c — `ascent import -j N` against -j 1 on one job's rank files: RANKS
 * traces (default 8) of MB megabytes each (default 24), built from a real trace (bench_trace.h, each
 * with its own distributedInfo.rank), imported the way the command does (imp_run) in a child
 * process with 1 worker and with 2, alternately, REPS times (default 2): the best wall time of each
 * and their ratio, from the same run. JSON lines:
 *   generate:         files, bytes and events written
 *   import_parallel:  per jobs: events, best wall s, events/s, peak RSS of the importing process
 *                     and of its largest worker (MB), output bytes
 *   import_parallel_ratio: -j 1 s / -j 2 s (the speedup), the cores online and j2_ceiling (2 / the
 *                    cores -j 1 kept busy: the most two workers could gain at no more CPU than one)
 *
 *   bench_import_parallel [--ranks N] [--mb N] [--reps N]
 *   (ASCENT_BENCH_IMPORT_PAR_RANKS, _MB, _REPS also set them) Run from the repository root. */
#include "common/common.h"
#include "db/db.h"
#include "import/import.h"
#include "bench/bench_trace.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int env_int(const char *name, int dflt)
{
	const char *v = getenv(name);
	return v && *v ? atoi(v) : dflt;
}


int main(int argc, char **argv)
{
	int ranks = env_int("ASCENT_BENCH_IMPORT_PAR_RANKS", 8), mb = env_int("ASCENT_BENCH_IMPORT_PAR_MB", 24);
	int reps = env_int("ASCENT_BENCH_IMPORT_PAR_REPS", 2);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			ranks = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
			reps = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_import_parallel [--ranks N] [--mb N] [--reps N]\n");
			return 2;
		}
	}
	if (ranks < 2 || ranks > 4096 || mb < 1 || reps < 1) {
		fprintf(stderr, "bench_import_parallel: --ranks 2..4096, --mb ≥ 1, --reps ≥ 1\n");
		return 2;
	}
	char dir[4096] = "/tmp/ascent-bench-import-par-XXXXXX", out[4200];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(out, sizeof out, "%s/trace.db", dir);
	char **files = calloc((size_t)ranks, sizeof *files);
	int64_t bytes = 0, records = 0;
	for (int r = 0; files && r < ranks; r++) {
		int64_t b = 0, n;
		if (!(files[r] = malloc(4200)))
			return 1;
		snprintf(files[r], 4200, "%s/rank-%d.json", dir, r);
		if ((n = generate(files[r], (int64_t)mb << 20, r, ranks, &b)) < 0) {
			fprintf(stderr, "generating the traces failed\n");
			return 1;
		}
		bytes += b;
		records += n;
	}
	if (!files)
		return 1;
	printf("{\"bench\":\"import_parallel\",\"what\":\"generate\",\"source\":\"%s\",\"files\":%d,\"bytes\":%" PRId64
	       ",\"records\":%" PRId64 "}\n", FIXTURE, ranks, bytes, records);
	fflush(stdout);
	double best[3] = { 0, 0, 0 }, cpu[3] = { 0, 0, 0 }, rss[3] = { 0, 0, 0 }, wrss[3] = { 0, 0, 0 };
	for (int rep = 0; rep < reps; rep++)
		for (int jobs = 1; jobs <= 2; jobs++) {   /* alternately, so both see the same host load */
			double s, c, r, w;
			if (bench_import_child((const char *const *)files, ranks, out, jobs, &s, &c, &r, &w) != 0) {
				fprintf(stderr, "the import with %d worker(s) failed\n", jobs);
				return 1;
			}
			if (!best[jobs] || s < best[jobs]) {
				best[jobs] = s;
				cpu[jobs] = c;
			}
			rss[jobs] = r > rss[jobs] ? r : rss[jobs];
			wrss[jobs] = w > wrss[jobs] ? w : wrss[jobs];
		}
	struct db *db;
	int64_t ev = 0, fbytes = 0;
	if (db_open(out, DB_READ, &db) == 0) {
		db_count(db, "event", &ev);
		fbytes = db_file_bytes(db);
		db_close(db);
	}
	for (int jobs = 1; jobs <= 2; jobs++)
		printf("{\"bench\":\"import_parallel\",\"what\":\"import\",\"jobs\":%d,\"files\":%d,\"events\":%" PRId64
		       ",\"s\":%.2f,\"cpu_s\":%.2f,\"cores_used\":%.2f,\"events_per_s\":%.0f,\"peak_rss_mb\":%.1f,"
		       "\"worker_peak_rss_mb\":%.1f,\"db_bytes\":%" PRId64 ",\"reps\":%d}\n",
		       jobs, ranks, ev, best[jobs], cpu[jobs], best[jobs] > 0 ? cpu[jobs] / best[jobs] : 0,
		       best[jobs] > 0 ? (double)ev / best[jobs] : 0, rss[jobs], wrss[jobs], fbytes, reps);
	double ratio = best[2] > 0 ? best[1] / best[2] : 0;
	/* j2_ceiling: the most -j 2 could gain on two cores if it cost no more CPU than -j 1 (the cores
	 * -j 1 already keeps busy, its reader and writer threads, bound it) */
	double used1 = best[1] > 0 ? cpu[1] / best[1] : 0;
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	printf("{\"bench\":\"import_parallel\",\"what\":\"ratio\",\"j1_over_j2\":%.2f,\"cores_online\":%ld,"
	       "\"j2_ceiling\":%.2f,\"goal\":1.6,\"within_goal\":%s}\n",
	       ratio, cores, used1 > 0 ? (cores < 2 ? (double)cores : 2.0) / used1 : 0, ratio >= 1.6 ? "true" : "false");
	for (int r = 0; r < ranks; r++)
		free(files[r]);
	free(files);
	fs_rm_rf(dir);
	return 0;
}
