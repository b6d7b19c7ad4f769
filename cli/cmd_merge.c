/* cli/cmd_merge.c — `ascent merge RUN_DIR`: merge rank-NNNNN.db files into RUN_DIR/trace.db. */
#include "cli/cli.h"
#include "profiler/prof.h"

int cmd_merge(int argc, char **argv)
{
	int help = 0, keep = 0, force = 0, mixed = 0;
	const char *out = NULL;
	struct opt_spec specs[] = {
		{ .name = "output", .short_name = 'o', .type = OPT_STR, .dest = &out, .metavar = "FILE",
		  .help = "merged database (default RUN_DIR/trace.db)" },
		{ .name = "keep", .type = OPT_FLAG, .dest = &keep, .help = "keep the rank files after merging" },
		{ .name = "force", .type = OPT_FLAG, .dest = &force,
		  .help = "write over a FILE that is a checkpoint or token shard (never over a rank file)" },
		{ .name = "allow-mixed-runs", .type = OPT_FLAG, .dest = &mixed,
		  .help = "combine rank files of different runs (refused by default: each file names its run)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("merge", specs, argc, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "merge", "RUN_DIR [-o FILE] [--keep] [--allow-mixed-runs]", specs);
		return 0;
	}
	if (np != 1)
		return ascent_error(ASCENT_EUSAGE, "merge needs a run folder (e.g. 'ascent merge runs/x')");
	const char *ins[] = { pos[0] };
	struct fs_output fo = { .cmd = "merge", .option = "-o", .path = out, .inputs = ins, .ninputs = 1,
				.makes = FS_HOLDS_PROFILE, .force = force };
	if ((rc = fs_output_check(&fo)) != 0)
		return rc;
	if ((rc = prof_merge_runs(pos[0], out, !keep, mixed)) != 0)
		return rc;
	printf("merged into %s%s\n", out ? out : pos[0], out ? "" : "/trace.db");
	return 0;
}
