/* bench/bench_import.c — `ascent import` at scale: a PyTorch profiler trace of ≥ 1 GB built by
 * repeating a real fixture's steps (tests/fixtures/kineto/nccl_parser_config__nccl_data.json.gz,
 * a 2-rank DDP job's rank 0) with shifted times, step numbers and link ids, then imported the way
 * the command does (imp_run) in a child process. JSON lines:
 *   generate:  bytes and events of the trace written (s)
 *   phases:    the import's wall time split: parsing and inserting (events per second of that
 *              phase; the writer thread's busy time and the reader's waits for it), links and
 *              ranks after it, db_finalize (indexes, op_stat, step_stat) with the viewer's tables
 *   import:    events written per second (goal ≥ 1M/s), peak RSS of the importing process
 *              (goal ≤ 300 MB), wall seconds, output bytes
 *   view:      cache build (once per file) and the first screen (open + overview, goal < 1 s)
 *
 *   bench_import [--mb N] [--keep DIR]     (ASCENT_BENCH_IMPORT_MB also sets N; default 1100)
 * Run from the repository root (make bench does). */
#include "common/common.h"
#include "db/db.h"
#include "import/import.h"
#include "bench/bench_trace.h"
#include "viewer/viewer.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>


static double ms_since(int64_t t0)
{
	return (double)(clock_ns() - t0) / 1e6;
}

int main(int argc, char **argv)
{
	int64_t mb = getenv("ASCENT_BENCH_IMPORT_MB") ? atoll(getenv("ASCENT_BENCH_IMPORT_MB")) : 1100;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else {
			fprintf(stderr, "usage: bench_import [--mb N] [--keep DIR]\n");
			return 2;
		}
	}
	char dir[4096] = "/tmp/ascent-bench-import-XXXXXX", trace[4200], out[4200];
	if (keep)
		snprintf(dir, sizeof dir, "%s", keep);
	else if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(trace, sizeof trace, "%s/rank-0.json", dir);
	snprintf(out, sizeof out, "%s/trace.db", dir);
	/* generate in a child, so its memory never counts against the import */
	int64_t t0 = clock_ns();
	pid_t p = fork();
	if (p == 0) {
		int64_t bytes = 0;
		int64_t n = generate(trace, mb << 20, 0, 2, &bytes);
		if (n < 0)
			_exit(1);
		printf("{\"bench\":\"import\",\"what\":\"generate\",\"source\":\"%s\",\"bytes\":%" PRId64 ",\"records\":%" PRId64
		       ",\"s\":%.2f}\n",
		       FIXTURE, bytes, n, ms_since(t0) / 1e3);
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "generating the trace failed\n");
		return 1;
	}
	/* import in a child: its peak RSS is the importer's */
	t0 = clock_ns();
	p = fork();
	if (p == 0) {
		struct imp_phases ph = { 0 };
		struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .phases = &ph };
		const char *in[1] = { trace };
		if (imp_run(&o, in, 1) != 0) {
			fprintf(stderr, "import failed: %s\n", ascent_errmsg());
			_exit(1);
		}
		/* the phase split: parsing and inserting (two threads) vs what comes after */
		double rd = (double)ph.read_ns / 1e9;
		printf("{\"bench\":\"import\",\"what\":\"phases\",\"parse_insert_s\":%.2f,\"parse_insert_events_per_s\":%.0f,"
		       "\"reader_cpu_s\":%.2f,\"writer_cpu_s\":%.2f,\"writer_busy_s\":%.2f,\"reader_wait_s\":%.2f,\"post_s\":%.2f,"
		       "\"finalize_s\":%.2f}\n",
		       rd, rd > 0 ? (double)ph.events / rd : 0, (double)ph.reader_cpu_ns / 1e9, (double)ph.writer_cpu_ns / 1e9,
		       (double)ph.writer_busy_ns / 1e9, (double)ph.reader_wait_ns / 1e9,
		       (double)ph.post_ns / 1e9, (double)ph.finalize_ns / 1e9);
		fflush(stdout);
		_exit(0);
	}
	struct rusage ru;
	if (p < 0 || wait4(p, &st, 0, &ru) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "the import failed\n");
		return 1;
	}
	double secs = ms_since(t0) / 1e3;
	struct db *db;
	int64_t ev = 0, fbytes = 0;
	if (db_open(out, DB_READ, &db) == 0) {
		db_count(db, "event", &ev);
		fbytes = db_file_bytes(db);
		db_close(db);
	}
	double rate = secs > 0 ? (double)ev / secs : 0, rss_mb = (double)ru.ru_maxrss / 1024.0;
	double cpu = rusage_cpu_s(&ru);
	/* on a shared host the wall rate depends on the load: the CPU seconds say what the importer costs */
	printf("{\"bench\":\"import\",\"what\":\"import\",\"events\":%" PRId64 ",\"s\":%.2f,\"cpu_s\":%.2f,"
	       "\"events_per_s\":%.0f,\"events_per_cpu_s\":%.0f,\"goal_events_per_s\":1000000,\"peak_rss_mb\":%.1f,"
	       "\"goal_rss_mb\":300,\"db_bytes\":%" PRId64 ",\"within_goal\":%s}\n",
	       ev, secs, cpu, rate, cpu > 0 ? (double)ev / cpu : 0, rss_mb, fbytes,
	       rate >= 1e6 && rss_mb <= 300 ? "true" : "false");
	fflush(stdout);
	/* the viewer on the result: the cache build (once per file), then the first screen */
	struct viewer_options vo = { .path = out, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_OVERVIEW };
	struct viewer *v;
	int64_t built = 0;
	if (viewer_open(&vo, &v, &built) != 0) {
		fprintf(stderr, "view: %s\n", ascent_errmsg());
		return 1;
	}
	viewer_free(v);
	printf("{\"bench\":\"import\",\"what\":\"view_cache_build\",\"events\":%" PRId64 ",\"s\":%.2f}\n", ev,
	       (double)built / 1e3);
	struct vw_screen s;
	vw_screen_init(&s, 120, 40);
	t0 = clock_ns();
	if (viewer_open(&vo, &v, NULL) != 0) {
		fprintf(stderr, "view: %s\n", ascent_errmsg());
		return 1;
	}
	viewer_render(v, &s);
	double ms = ms_since(t0);
	printf("{\"bench\":\"import\",\"what\":\"view_first_screen\",\"ms\":%.2f,\"goal_ms\":1000,\"within_goal\":%s}\n", ms,
	       ms < 1000 ? "true" : "false");
	viewer_free(v);
	vw_screen_release(&s);
	if (!keep)
		fs_rm_rf(dir);
	return 0;
}
