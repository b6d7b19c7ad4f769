/* cli/cmd_view.c — `ascent view RUN_DIR | RUN.db`: the interactive profile viewer (viewer/), or one
 * view as text with --dump VIEW --size WxH; a run folder whose run still goes is watched live. */
#include "cli/cli.h"
#include "viewer/viewer.h"

#include <stdio.h>
#include <string.h>

int cmd_view(int argc, char **argv)
{
	struct viewer_run_options ro = { .o = { .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_OVERVIEW } };
	const char *steps = NULL, *size = NULL, *first = NULL;
	int help = 0;
	struct opt_spec specs[] = {
		{ .name = "rank", .type = OPT_INT, .dest = &ro.o.rank, .min = 0, .max = 1 << 24, .metavar = "R",
		  .help = "show only rank R (key R cycles ranks)" },
		{ .name = "steps", .type = OPT_STR, .dest = &steps, .metavar = "A:B",
		  .help = "show only steps A..B inclusive, or one step A (key S)" },
		{ .name = "against", .type = OPT_STR, .dest = &ro.o.against, .metavar = "A",
		  .help = "compare with profile A (a .db or a finished run's folder): opens on the diff view (key D), "
			  "the steps view shows A's step times beside" },
		{ .name = "view", .type = OPT_STR, .dest = &first, .metavar = "VIEW",
		  .choices = "overview|ops|comm|steps|ranks|memory|timeline|devices|diff",
		  .help = "the view to open on (diff: with --against)" },
		{ .name = "dump", .type = OPT_STR, .dest = &ro.dump, .metavar = "VIEW",
		  .choices = "overview|ops|comm|steps|ranks|ranks-heat|ranks-heat-ranks|memory|timeline|devices|diff|diff-row",
		  .help = "print VIEW as plain text and exit (for scripts and golden tests; diff-row: the distributions "
			  "of the diff's first row; ranks-heat, ranks-heat-ranks: the ranks view's traffic heat map by host "
			  "pair, by rank pair: key m)" },
		{ .name = "size", .type = OPT_STR, .dest = &size, .metavar = "WxH", .help = "--dump's size (default 120x40)" },
		{ .name = "mono", .short_name = 'C', .type = OPT_FLAG, .dest = &ro.o.mono,
		  .help = "no colour (also when NO_COLOR is set)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("view", specs, argc, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "view", "RUN_DIR|RUN.db [--against A] [--rank R] [--steps A:B] [-C] [--dump VIEW [--size WxH]]",
			  specs);
		printf("\nViews (keys 1-8, Tab): overview, ops, comm, steps, ranks, memory, timeline, devices; with --against A,\n"
		       "the diff view (key D): every name of A and of this profile by its change, as 'ascent diff A B'.\n"
		       "Press ? inside for every key. The first open of a large profile builds summary tables kept in the file.\n"
		       "A run folder opens its trace.db; while the run goes (no trace.db yet) it is watched live from\n"
		       "its rank files and metrics.jsonl, refreshed every second, until trace.db appears.\n");
		return 0;
	}
	if (np < 1)
		return ascent_error(ASCENT_EUSAGE, "'ascent view' needs a run folder or a profile database: ascent view runs/NAME");
	ro.o.path = pos[0];
	if (steps) {
		long long a, b;
		char extra;
		if (sscanf(steps, "%lld:%lld%c", &a, &b, &extra) == 2) {
		} else if (sscanf(steps, "%lld%c", &a, &extra) == 1) {
			b = a;
		} else {
			return ascent_error(ASCENT_EUSAGE, "--steps '%s': expected A:B (e.g. 10:20) or one step", steps);
		}
		if (a < 0 || b < a)
			return ascent_error(ASCENT_EUSAGE, "--steps '%s': need 0 <= A <= B", steps);
		ro.o.step_lo = a;
		ro.o.step_hi = b;
	}
	if (size) {
		char extra;
		if (sscanf(size, "%dx%d%c", &ro.width, &ro.height, &extra) != 2 || ro.width < 20 || ro.height < 6 ||
		    ro.width > 1000 || ro.height > 1000)
			return ascent_error(ASCENT_EUSAGE, "--size '%s': expected WxH with 20 <= W <= 1000, 6 <= H <= 1000 "
					    "(e.g. 120x40)", size);
	}
	if (first)
		ro.o.view = vw_view_by_name(first);
	else if (ro.o.against)
		ro.o.view = VW_DIFF;   /* B against A opens on what changed */
	return viewer_run(&ro);
}
