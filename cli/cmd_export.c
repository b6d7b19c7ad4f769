/* cli/cmd_export.c — `ascent export RUN.db`: Chrome trace JSON or folded stacks (prof_export). */
#include "cli/cli.h"
#include "profiler/prof.h"

int cmd_export(int argc, char **argv)
{
	int help = 0, rank = -1, gz = 0, force = 0;
	const char *out = NULL, *steps = NULL, *format = "chrome";
	struct opt_spec specs[] = {
		{ .name = "format", .type = OPT_STR, .dest = &format, .choices = "chrome|folded", .metavar = "FMT",
		  .help = "chrome (Perfetto, chrome://tracing; default) or folded (flame graphs)" },
		{ .name = "output", .short_name = 'o', .type = OPT_STR, .dest = &out, .metavar = "FILE",
		  .help = "output file (default: RUN.json / RUN.folded); gzip when it ends in .gz; - for standard output" },
		{ .name = "gzip", .type = OPT_FLAG, .dest = &gz, .help = "gzip the output" },
		{ .name = "rank", .type = OPT_INT, .dest = &rank, .min = 0, .max = 1000000, .metavar = "R",
		  .help = "only this rank" },
		{ .name = "steps", .type = OPT_STR, .dest = &steps, .metavar = "A:B", .help = "only steps A to B (inclusive)" },
		{ .name = "force", .type = OPT_FLAG, .dest = &force,
		  .help = "write over a FILE that is a profile, checkpoint or token shard (never over RUN.db)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("export", specs, argc, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "export", "RUN.db [--format chrome|folded] [-o FILE] [--gzip] [--steps A:B] [--rank R]",
			  specs);
		return 0;
	}
	if (np != 1)
		return ascent_error(ASCENT_EUSAGE, "export needs a profile database (e.g. 'ascent export runs/x/trace.db')");
	struct prof_export_opts o = { .db_path = pos[0], .out_path = out, .format = format, .gzip = gz, .rank = rank,
				      .step_lo = -1, .step_hi = -1, .force = force };
	if (steps && (rc = cli_parse_steps(steps, &o.step_lo, &o.step_hi)) != 0)
		return rc;
	int64_t n = 0;
	int64_t t0 = clock_ns();
	if ((rc = prof_export(&o, &n)) != 0)
		return rc;
	double s = (double)(clock_ns() - t0) / 1e9;
	fprintf(stderr, "exported %lld trace events in %.2f s\n", (long long)n, s);
	return 0;
}
