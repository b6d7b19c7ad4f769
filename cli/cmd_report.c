/* cli/cmd_report.c — `ascent report RUN.db`: parses options, calls prof_report (profiler/). */
#include "cli/cli.h"
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>

/* "A:B", "A:" or "A" into [lo, hi]. Shared by report and export through cli.h. */
int cli_parse_steps(const char *s, int64_t *lo, int64_t *hi)
{
	long long a, b;
	char buf[64];
	if (strlen(s) >= sizeof buf)
		return ascent_error(ASCENT_EUSAGE, "bad --steps '%s' (expected A:B)", s);
	strcpy(buf, s);
	char *colon = strchr(buf, ':');
	if (colon)
		*colon = 0;
	int rc = opt_parse_int("--steps start", buf, 0, 1LL << 50, &a);
	if (rc)
		return rc;
	b = a;
	if (colon && colon[1] && (rc = opt_parse_int("--steps end", colon + 1, 0, 1LL << 50, &b)) != 0)
		return rc;
	if (colon && !colon[1])
		b = 1LL << 50;
	if (b < a)
		return ascent_error(ASCENT_EUSAGE, "bad --steps '%s': the end is before the start", s);
	*lo = a;
	*hi = b;
	return 0;
}

int cmd_report(int argc, char **argv)
{
	int help = 0, rank = -1, wide = 0, seq_len = 3, top = 20, instance = 0;
	const char *by = NULL, *steps = NULL, *format = "table", *window = NULL;
	struct opt_spec specs[] = {
		{ .name = "by", .type = OPT_STR, .dest = &by, .choices = "op|comm|step|rank|mem|stack|overhead|shape|device|runtime|opkernels|annotations|counters|critpath|spread|collective|matrix",
		  .metavar = "WHAT", .help = "one table: op, comm, step (the split of each step's time; on imported traces also the device "
					     "work each step launched, wherever it ran), rank, mem, stack, overhead, shape (operators by input "
					     "shape, imported traces) or device (temporal breakdown per device, imported traces; "
					     "docs/device.md) or runtime (the host's CUDA/HIP/ACL/MTIA runtime calls per name, those that "
					     "block the host marked; imported traces) or opkernels (each CPU operator with its kernel sequence and "
					     "launch delay, and the frequent kernel sequences on a stream; imported traces) or annotations "
					     "(GPU user annotations per name; imported traces) or counters (CUPTI counters per kernel and "
					     "operator; imported traces taken with CUPTI range profiling) or critpath (the critical path per "
					     "rank with its share per cause and its top events; imported traces) or the whole job's analyses "
					     "(docs/cluster.md): spread (each step's split over ranks and pipeline stages: min, median, max, "
					     "which rank), collective (synchronisation, wait and transit per collective and rank, "
					     "msprof-analyze's ratios, the worst calls) or matrix (point-to-point bytes, time and bandwidth "
					     "per source and destination rank and per host pair) (default: overview, op, comm)" },
		{ .name = "seq-len", .type = OPT_INT, .dest = &seq_len, .min = 1, .max = 64, .metavar = "L",
		  .help = "--by opkernels: length of the frequent kernel sequences (default 3)" },
		{ .name = "top", .type = OPT_INT, .dest = &top, .min = 1, .max = 1000000, .metavar = "N",
		  .help = "--by opkernels: how many frequent kernel sequences; --by critpath: how many top events; --by "
			  "collective: how many worst calls (default 20)" },
		{ .name = "window", .type = OPT_STR, .dest = &window, .metavar = "TEXT",
		  .help = "--by critpath: the window is a CPU range whose name holds TEXT (HTA's annotation; default: --steps, "
			  "else the whole rank)" },
		{ .name = "instance", .type = OPT_INT, .dest = &instance, .min = 0, .max = 1000000000, .metavar = "I",
		  .help = "--by critpath with --window: the I-th such range in start order, from 0 (default 0)" },
		{ .name = "rank", .type = OPT_INT, .dest = &rank, .min = 0, .max = 1000000, .metavar = "R",
		  .help = "only this rank" },
		{ .name = "steps", .type = OPT_STR, .dest = &steps, .metavar = "A:B", .help = "only steps A to B (inclusive); device work (kernels, copies, "
		  "memsets) by the step that launched it (docs/device.md)" },
		{ .name = "format", .type = OPT_STR, .dest = &format, .choices = "table|csv|json", .metavar = "FMT",
		  .help = "table (default), csv, or json (one document: ops, comm, groups, steps, ranks, device_steps, mem, "
			  "overhead)" },
		{ .name = "wide", .type = OPT_FLAG, .dest = &wide,
		  .help = "tables: whole names (by default a name too long for the terminal has its C++ template arguments and "
			  "parameters elided, then its middle cut; csv and json always carry whole names)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("report", specs, argc, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "report", "RUN.db [--by op|comm|step|rank|mem|stack|overhead|shape|device|runtime|opkernels|annotations|counters|critpath|"
					    "spread|collective|matrix] [--rank R] [--steps A:B] [--window TEXT [--instance I]] [--format table|csv|json] [--wide]", specs);
		return 0;
	}
	if (np != 1)
		return ascent_error(ASCENT_EUSAGE, "report needs a profile database (e.g. 'ascent report runs/x/trace.db')");
	struct prof_report_opts o = { .db_path = pos[0], .by = by, .rank = rank, .step_lo = -1, .step_hi = -1,
				      .format = format, .wide = wide, .seq_len = seq_len, .top = top,
				      .window = window, .instance = instance };
	if (steps && (rc = cli_parse_steps(steps, &o.step_lo, &o.step_hi)) != 0)
		return rc;
	return prof_report(&o);
}
