/* cli/cmd_diff.c — `ascent diff A B`: opens two profiles, importing on the fly what is a trace
 * rather than a profile (import/import.h's imp_run, into a temporary that is gone when the command
 * ends), compares them (db_diff, db/diff.c) and renders the result (prof_diff_print,
 * profiler/diff.c); with --advise, ranks the regressions (db_diff_advise) and renders those
 * (prof_diff_advice_print). docs/diff.md. */
#include "cli/cli.h"
#include "db/db.h"
#include "import/import.h"
#include "profiler/prof.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* 1 when `path` is an ascent profile: SQLite's header with ascent's application id (offset 68,
 * big-endian; PRAGMA application_id). Anything else (a trace, an Nsight or Ascend database) is
 * imported. */
static int is_profile(const char *path)
{
	unsigned char h[DB_HEADER_BYTES];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t got = read(fd, h, sizeof h);
	close(fd);
	return got > 0 && db_header_is_profile(h, (size_t)got);
}

/* Open one side: a profile as it is (a run folder: its trace.db), anything else imported into
 * $TMPDIR (never beside or over the input), opened, and removed at once: the open file stays
 * readable until it is closed, and nothing is left however the command ends. */
static int open_side(const char *path, const char *which, int quiet, struct db **db)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return ascent_error(ASCENT_EINPUT, "diff: %s '%s' cannot be read: %s (give a profile, ascent's .db or a run "
				    "folder, or a trace 'ascent import' reads)", which, path, strerror(errno));
	char run_db[PATH_MAX];
	if (S_ISDIR(st.st_mode) && snprintf(run_db, sizeof run_db, "%s/trace.db", path) < (int)sizeof run_db &&
	    is_profile(run_db))
		path = run_db;
	if (S_ISREG(st.st_mode) || path == run_db) {
		if (is_profile(path))
			return db_open(path, DB_READ, db);
	}
	/* a name of this process's own in $TMPDIR: the import makes it as an unnamed file (gone if the
	 * command is killed) and links it in only when complete */
	const char *tmp = getenv("TMPDIR");
	char out[PATH_MAX];
	if (snprintf(out, sizeof out, "%s/ascent-diff-%ld-%s.db", tmp && *tmp ? tmp : "/tmp", (long)getpid(), which) >=
	    (int)sizeof out)
		return ascent_error(ASCENT_EUSAGE, "diff: TMPDIR is too long");
	const char *in[1] = { path };
	struct imp_opts o = { .out_path = out, .quiet = quiet, .rank = -1, .no_view_tables = 1 };
	int rc = imp_run(&o, in, 1);
	if (rc)
		rc = ascent_error_ctx(rc, "diff: %s '%s' is neither an ascent profile nor a trace 'ascent import' reads "
				      "(importing it failed)", which, path);
	else
		rc = db_open(out, DB_READ, db);
	unlink(out);
	return rc;
}

/* A --rank that the side does not have is a usage error, as in report. */
static int check_rank(struct db *db, int rank, const char *which, const char *path)
{
	if (rank < 0)
		return 0;
	struct db_rank_info *r = NULL;
	int n = 0, found = 0;
	int rc = db_ranks(db, &r, &n);
	for (int i = 0; !rc && i < n; i++)
		found |= r[i].rank == rank;
	db_ranks_free(r, n);
	if (!rc && !found)
		rc = ascent_error(ASCENT_EUSAGE, "diff: no rank %d in %s '%s' (it has %d rank%s; --rank-%c picks one of %s's)",
				  rank, which, path, n, n == 1 ? "" : "s", which[0] == 'A' ? 'a' : 'b', which);
	return rc;
}

int cmd_diff(int argc, char **argv)
{
	int help = 0, rank = -1, rank_a = -1, rank_b = -1, wide = 0, quiet = 0, top = -1, exact = 0, advise = 0;
	double min_change = -1;   /* not given: 1% */
	const char *by = NULL, *steps = NULL, *steps_a = NULL, *steps_b = NULL, *format = "table";
	struct opt_spec specs[] = {
		{ .name = "by", .type = OPT_STR, .dest = &by, .choices = "op|kernel|comm|step", .metavar = "WHAT",
		  .help = "one part: op (host rows: operators, runtime calls, annotations), kernel (device rows, and the CPU "
			  "operators with the device work they launched), comm (communication rows, collectives per size), "
			  "step (the overview only) (default: everything)" },
		{ .name = "steps", .type = OPT_STR, .dest = &steps, .metavar = "A:B",
		  .help = "only steps A to B (inclusive) on both sides (default: the whole profile)" },
		{ .name = "steps-a", .type = OPT_STR, .dest = &steps_a, .metavar = "A:B", .help = "only these steps of A" },
		{ .name = "steps-b", .type = OPT_STR, .dest = &steps_b, .metavar = "A:B", .help = "only these steps of B" },
		{ .name = "rank", .type = OPT_INT, .dest = &rank, .min = 0, .max = 1000000, .metavar = "R",
		  .help = "only rank R on both sides (default: all ranks added up)" },
		{ .name = "rank-a", .type = OPT_INT, .dest = &rank_a, .min = 0, .max = 1000000, .metavar = "R",
		  .help = "only rank R of A" },
		{ .name = "rank-b", .type = OPT_INT, .dest = &rank_b, .min = 0, .max = 1000000, .metavar = "R",
		  .help = "only rank R of B" },
		{ .name = "format", .type = OPT_STR, .dest = &format, .choices = "table|csv|json", .metavar = "FMT",
		  .help = "table (default), csv (one table: --by's, else every name) or json (one document)" },
		{ .name = "top", .type = OPT_INT, .dest = &top, .min = 0, .max = 1000000000, .metavar = "N",
		  .help = "tables: the N largest changes only (default: all)" },
		{ .name = "exact-names", .type = OPT_FLAG, .dest = &exact,
		  .help = "match names exactly (by default a hexadecimal address in a name, 0x and 6 or more digits, "
			  "matches any other: a Python object's address differs from run to run)" },
		{ .name = "advise", .type = OPT_FLAG, .dest = &advise,
		  .help = "the regressions that matter instead: ranked by their share of the step-time change, each with "
			  "its evidence, step phase and usual cause (--top: 10 by default)" },
		{ .name = "min-change", .type = OPT_FLOAT, .dest = &min_change, .min = 0, .max = 1000, .metavar = "PCT",
		  .help = "--advise: a change of the mean step time below PCT % of A's is no change (default 1; 0: any)" },
		{ .name = "wide", .type = OPT_FLAG, .dest = &wide, .help = "tables: whole names" },
		{ .name = "quiet", .short_name = 'q', .type = OPT_FLAG, .dest = &quiet,
		  .help = "no import progress on stderr (warnings are still printed)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[2];
	int np;
	int rc = opt_parse("diff", specs, argc, argv, pos, 2, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diff",
			  "A B [--by op|kernel|comm|step] [--steps A:B | --steps-a A:B --steps-b A:B] [--rank R | --rank-a R "
			  "--rank-b R] [--format table|csv|json] [--top N] [--advise [--min-change PCT]]\n\n"
			  "What changed from A to B. A and B are profiles (ascent's .db, or a run folder holding trace.db) or "
			  "anything 'ascent import' reads (Kineto JSON, Nsight Systems or Ascend databases, torch_npu folders), "
			  "imported into a temporary file first. Changes are B - A; a name's category is by its count: added, "
			  "removed, increased, decreased, unchanged. --advise: the regressions that matter, by their share of "
			  "the change in mean step time, with evidence and usual causes.",
			  specs);
		return 0;
	}
	if (min_change >= 0 && !advise)
		return ascent_error(ASCENT_EUSAGE, "diff: --min-change is --advise's (add --advise)");
	if (min_change < 0)
		min_change = 1.0;
	if (np != 2)
		return ascent_error(ASCENT_EUSAGE, "diff needs two profiles or traces: 'ascent diff A B' (see 'ascent diff "
						   "--help')");
	struct db_filter f[2] = { { rank, -1, -1 }, { rank, -1, -1 } };
	if (rank_a >= 0)
		f[0].rank = rank_a;
	if (rank_b >= 0)
		f[1].rank = rank_b;
	const char *sa = steps_a ? steps_a : steps, *sb = steps_b ? steps_b : steps;
	if (sa && (rc = cli_parse_steps(sa, &f[0].step_lo, &f[0].step_hi)) != 0)
		return rc;
	if (sb && (rc = cli_parse_steps(sb, &f[1].step_lo, &f[1].step_hi)) != 0)
		return rc;
	/* --advise compares step time: by default only what starts inside a step counts (--steps 0:),
	 * not start-up or a final checkpoint; a side without steps is taken whole (no share then) */
	const char *const every_step = "0:";
	if (advise && !sa)
		sa = every_step, f[0].step_lo = 0, f[0].step_hi = INT64_C(1) << 50;
	if (advise && !sb)
		sb = every_step, f[1].step_lo = 0, f[1].step_hi = INT64_C(1) << 50;
	struct db *db[2] = { NULL, NULL };
	rc = open_side(pos[0], "A", quiet || !isatty(2), &db[0]);
	if (!rc)
		rc = open_side(pos[1], "B", quiet || !isatty(2), &db[1]);
	static const char *const WHICH[2] = { "A", "B" };
	for (int s = 0; s < 2 && !rc; s++)
		rc = check_rank(db[s], f[s].rank, WHICH[s], pos[s]);
	struct db_diff d = { 0 };
	if (!rc)
		rc = db_diff(db[0], f[0], db[1], f[1], exact, &d);
	int whole = 0;
	for (int s = 0; s < 2 && !rc; s++)
		if ((s ? sb : sa) == every_step && d.side[s].step_rows == 0)
			f[s].step_lo = f[s].step_hi = -1, whole = 1;
	if (whole) {
		db_diff_free(&d);
		rc = db_diff(db[0], f[0], db[1], f[1], exact, &d);
	}
	for (int s = 0; s < 2 && !rc; s++)
		if (f[s].step_lo >= 0 && d.side[s].step_rows == 0)
			rc = ascent_error(ASCENT_EUSAGE, "diff: %s '%s' has no step in %s ('ascent report %s --by step' lists "
					  "its steps)", WHICH[s], pos[s], s ? sb : sa, pos[s]);
	struct db_diff_advice adv = { 0 };
	if (!rc && advise)
		rc = db_diff_advise(&d, min_change / 100.0, top < 0 ? 10 : top, &adv);
	if (!rc) {
		struct prof_diff_opts o = { .a_label = pos[0], .b_label = pos[1], .by = by, .format = format,
					    .top = top < 0 ? 0 : top, .wide = wide };
		rc = advise ? prof_diff_advice_print(&d, &adv, &o, stdout) : prof_diff_print(&d, &o, stdout);
	}
	db_diff_advice_free(&adv);
	db_diff_free(&d);
	db_close(db[0]);
	db_close(db[1]);
	return rc;
}
