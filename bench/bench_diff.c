/* bench/bench_diff.c — `ascent diff` and the viewer's diff view on two large imported profiles
 * (docs/diff.md, "Speed"): two PyTorch profiler traces built from a real fixture (bench_trace.h:
 * A of --mb MB, B of 90% of that, so counts differ), each imported as `ascent import` does but
 * without the viewer's summary tables first. JSON lines:
 *   generate:          bytes and events of each trace (s)
 *   import:            events and seconds per side (the import without the summary tables)
 *   diff_scan:         the diff read from the events, as it reads a file without the summary
 *                      (the baseline, in this same run): db_diff and its table printed (s)
 *   summary_build:     db_view_prepare on both files, the one pass `ascent import` and `merge`
 *                      make anyway (s)
 *   diff_summary:      the same diff from the summary tables (s), and the baseline over it
 *                      (speedup), and whether both printed the same table
 *   view_diff_screen:  `ascent view B --against A`: open both and draw the diff view (ms; goal < 1000)
 *
 *   bench_diff [--mb N] [--keep DIR]    (ASCENT_BENCH_DIFF_MB also sets N; default 1100)
 * Run from the repository root (make bench does). */
#include "bench/bench_trace.h"
#include "common/common.h"
#include "db/db.h"
#include "import/import.h"
#include "profiler/prof.h"
#include "viewer/viewer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static double s_since(int64_t t0)
{
	return (double)(clock_ns() - t0) / 1e9;
}

/* Generate and import one side in children (their memory is not the bench's). */
static int make_side(const char *dir, const char *which, int64_t bytes_goal, int rank, char *db_path, size_t n)
{
	char trace[4200];
	snprintf(trace, sizeof trace, "%s/%s.json", dir, which);
	snprintf(db_path, n, "%s/%s.db", dir, which);
	int64_t t0 = clock_ns();
	pid_t p = fork();
	if (p == 0) {
		int64_t bytes = 0, ev = generate(trace, bytes_goal, rank, 2, &bytes);
		if (ev < 0)
			_exit(1);
		printf("{\"bench\":\"diff\",\"what\":\"generate\",\"side\":\"%s\",\"bytes\":%" PRId64 ",\"records\":%" PRId64
		       ",\"s\":%.2f}\n", which, bytes, ev, s_since(t0));
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
		return fprintf(stderr, "generating %s failed\n", trace), 1;
	t0 = clock_ns();
	p = fork();
	if (p == 0) {
		struct imp_opts o = { .out_path = db_path, .quiet = 1, .rank = -1, .no_view_tables = 1 };
		const char *in[1] = { trace };
		if (imp_run(&o, in, 1) != 0) {
			fprintf(stderr, "import failed: %s\n", ascent_errmsg());
			_exit(1);
		}
		_exit(0);
	}
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st))
		return fprintf(stderr, "importing %s failed\n", trace), 1;
	double secs = s_since(t0);
	struct db *db;
	int64_t ev = 0, fbytes = 0;
	if (db_open(db_path, DB_READ, &db) == 0) {
		db_count(db, "event", &ev);
		fbytes = db_file_bytes(db);
		db_close(db);
	}
	printf("{\"bench\":\"diff\",\"what\":\"import\",\"side\":\"%s\",\"events\":%" PRId64 ",\"db_bytes\":%" PRId64
	       ",\"s\":%.2f}\n", which, ev, fbytes, secs);
	fflush(stdout);
	unlink(trace);
	return 0;
}

/* `ascent diff A B` as the command runs it: open, compare, print the table (into out). */
static int run_diff(const char *a, const char *b, FILE *out, double *secs)
{
	int64_t t0 = clock_ns();
	struct db *da = NULL, *dbb = NULL;
	struct db_diff d = { 0 };
	int rc = db_open(a, DB_READ, &da);
	if (!rc)
		rc = db_open(b, DB_READ, &dbb);
	if (!rc)
		rc = db_diff(da, DB_FILTER_ALL, dbb, DB_FILTER_ALL, 0, &d);
	if (!rc) {
		struct prof_diff_opts o = { .a_label = "A", .b_label = "B", .format = "table" };
		rc = prof_diff_print(&d, &o, out);
	}
	db_diff_free(&d);
	db_close(da);
	db_close(dbb);
	*secs = s_since(t0);
	return rc;
}

static int same_file(const char *x, const char *y)
{
	FILE *f = fopen(x, "rb"), *g = fopen(y, "rb");
	int same = f && g;
	while (same) {
		int c = fgetc(f), d = fgetc(g);
		if (c != d)
			same = 0;
		if (c == EOF || d == EOF)
			break;
	}
	if (f)
		fclose(f);
	if (g)
		fclose(g);
	return same;
}

int main(int argc, char **argv)
{
	int64_t mb = getenv("ASCENT_BENCH_DIFF_MB") ? atoll(getenv("ASCENT_BENCH_DIFF_MB")) : 1100;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else
			return fprintf(stderr, "usage: bench_diff [--mb N] [--keep DIR]\n"), 2;
	}
	char dir[4096] = "/tmp/ascent-bench-diff-XXXXXX", a[4200], b[4200], t1[4200], t2[4200];
	if (keep)
		snprintf(dir, sizeof dir, "%s", keep);
	else if (!mkdtemp(dir))
		return perror("mkdtemp"), 1;
	if (make_side(dir, "a", mb << 20, 0, a, sizeof a) || make_side(dir, "b", (mb << 20) / 10 * 9, 1, b, sizeof b))
		return 1;
	snprintf(t1, sizeof t1, "%s/scan.txt", dir);
	snprintf(t2, sizeof t2, "%s/summary.txt", dir);
	/* the baseline: the files hold no summary tables, the diff reads the events */
	double scan_s = 0, sum_s = 0;
	FILE *f = fopen(t1, "w");
	if (!f || run_diff(a, b, f, &scan_s) != 0)
		return fprintf(stderr, "diff (scan): %s\n", ascent_errmsg()), 1;
	fclose(f);
	printf("{\"bench\":\"diff\",\"what\":\"diff_scan\",\"s\":%.3f}\n", scan_s);
	fflush(stdout);
	/* the summary tables, as import and merge build them */
	int64_t t0 = clock_ns();
	const char *sides[2] = { a, b };
	for (int i = 0; i < 2; i++) {
		struct db *db;
		int rc = db_open(sides[i], DB_UPDATE, &db);
		if (!rc)
			rc = db_view_prepare(db, NULL);
		db_close(db);
		if (rc)
			return fprintf(stderr, "summary of %s: %s\n", sides[i], ascent_errmsg()), 1;
	}
	printf("{\"bench\":\"diff\",\"what\":\"summary_build\",\"s\":%.2f}\n", s_since(t0));
	fflush(stdout);
	f = fopen(t2, "w");
	if (!f || run_diff(a, b, f, &sum_s) != 0)
		return fprintf(stderr, "diff (summary): %s\n", ascent_errmsg()), 1;
	fclose(f);
	printf("{\"bench\":\"diff\",\"what\":\"diff_summary\",\"s\":%.3f,\"baseline_scan_s\":%.3f,\"speedup\":%.1f,"
	       "\"same_table\":%s}\n",
	       sum_s, scan_s, sum_s > 0 ? scan_s / sum_s : 0, same_file(t1, t2) ? "true" : "false");
	fflush(stdout);
	/* the viewer: open B against A, draw the diff view */
	struct viewer_options vo = { .path = b, .against = a, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_DIFF };
	struct vw_screen s;
	vw_screen_init(&s, 120, 40);
	t0 = clock_ns();
	struct viewer *v;
	if (viewer_open(&vo, &v, NULL) != 0)
		return fprintf(stderr, "view: %s\n", ascent_errmsg()), 1;
	viewer_render(v, &s);
	double ms = s_since(t0) * 1e3;
	printf("{\"bench\":\"diff\",\"what\":\"view_diff_screen\",\"ms\":%.1f,\"goal_ms\":1000,\"within_goal\":%s}\n", ms,
	       ms < 1000 ? "true" : "false");
	viewer_free(v);
	vw_screen_release(&s);
	if (!keep)
		fs_rm_rf(dir);
	return 0;
}
