/* tests/fuzz/profile_db.c — a profile database as a user might hand one over: damaged, edited or
 * not a profile at all. The opener (db_open's checks), every `ascent report` section in every
 * format, the advisor's rules, the Chrome-trace export, `ascent diff` of the file against itself, the viewer (which
 * builds its summary tables in the file) rendering every view and the ranks view's heat map, and the live viewer reading the
 * same bytes as a running rank's file (p/run/rank-00000.db, no trace.db beside it). The input is
 * the whole file; mutations hit pages, so SQLite's own corruption checks and ours both get
 * exercised. */
#include "fuzz.h"
#include "db/db.h"
#include "diag/diag.h"
#include "profiler/prof.h"
#include "viewer/viewer.h"

static FILE *devnull;

static void clear_aux(const char *path)
{
	char aux[4300];
	snprintf(aux, sizeof aux, "%s-wal", path);
	unlink(aux);
	snprintf(aux, sizeof aux, "%s-shm", path);
	unlink(aux);
	snprintf(aux, sizeof aux, "%s-journal", path);
	unlink(aux);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	/* json (no --by) holds every section; each section also goes through the table or csv renderer */
	static const char *const by[] = { NULL, NULL, "op", "comm", "step", "rank", "mem", "stack", "overhead",
					  "shape", "device", "device", "runtime", "runtime", "opkernels", "opkernels",
					  "critpath", "critpath", "spread", "spread", "collective", "collective", "matrix", "matrix" };
	static const char *const fmt[] = { "json", "table", "csv", "table", "csv", "table", "csv", "table", "csv",
					   "table", "table", "csv", "table", "json", "table", "json", "table", "json",
					   "table", "csv", "table", "csv", "table", "csv" };
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	char path[4200], out[4300];
	snprintf(path, sizeof path, "%s/p/trace.db", fuzz_dir());
	clear_aux(path);   /* a log left by the last input would be replayed into this one */
	fuzz_write("p/trace.db", data, len, path, sizeof path);
	struct db *db;
	if (db_open(path, DB_READ, &db) != 0)
		return 0;
	struct db_diff d;
	if (db_diff(db, DB_FILTER_ALL, db, DB_FILTER_ALL, 0, &d) == 0) {
		struct prof_diff_opts dopt = { .a_label = "a", .b_label = "b", .format = "json" };
		(void)prof_diff_print(&d, &dopt, devnull);
		dopt.format = "table";
		(void)prof_diff_print(&d, &dopt, devnull);
		db_diff_free(&d);
	}
	struct diag_advice adv;   /* the advisor's rules over the same damaged profile */
	if (diag_advise(db, &adv) == 0)
		diag_advice_release(&adv);
	db_close(db);
	for (size_t i = 0; i < sizeof by / sizeof by[0]; i++) {
		struct prof_report_opts o = { .db_path = path, .by = by[i], .rank = -1, .step_lo = -1, .step_hi = -1,
					      .format = fmt[i], .out = devnull };
		(void)prof_report(&o);
	}
	struct prof_report_opts os = { .db_path = path, .by = "op", .rank = 0, .step_lo = 1, .step_hi = 2,
				       .format = "csv", .out = devnull };
	(void)prof_report(&os);
	snprintf(out, sizeof out, "%s/p/trace.json", fuzz_dir());
	struct prof_export_opts e = { .db_path = path, .out_path = out, .rank = -1, .step_lo = -1, .step_hi = -1 };
	(void)prof_export(&e, NULL);
	unlink(out);
	struct viewer_options vo = { .path = path, .rank = -1, .step_lo = -1, .step_hi = -1, .mono = 1 };
	struct viewer *v;
	if (viewer_open(&vo, &v, NULL) == 0) {
		for (int view = 0; view < VW_NVIEWS; view++)
			(void)viewer_dump(v, view, 100, 30, devnull);
		/* the ranks view's heat map ('m'): by host pair, then by rank pair (few ranks) */
		for (int k = 0; k < 2 && viewer_key(v, 'm') == 0; k++)
			(void)viewer_dump(v, VW_RANKS, 100, 30, devnull);
		viewer_free(v);
	}
	/* the same bytes as a running rank's file: the live reader never writes them */
	char live[4300];
	snprintf(live, sizeof live, "%s/p/run/rank-00000.db", fuzz_dir());
	clear_aux(live);
	fuzz_write("p/run/rank-00000.db", data, len, live, sizeof live);
	char run[4300];
	snprintf(run, sizeof run, "%s/p/run", fuzz_dir());
	struct viewer_options lo = { .path = run, .rank = -1, .step_lo = -1, .step_hi = -1, .mono = 1 };
	if (viewer_open(&lo, &v, NULL) == 0) {
		for (int view = 0; view < VW_NVIEWS; view++)
			(void)viewer_dump(v, view, 100, 30, devnull);
		viewer_free(v);
	}
	clear_aux(live);
	clear_aux(path);
	return 0;
}
