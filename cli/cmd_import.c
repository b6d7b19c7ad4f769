/* cli/cmd_import.c — `ascent import SRC... -o OUT.db [-j N] [--rank N] [-q]`: parses options, calls imp_run
 * (import/). */
#include "cli/cli.h"
#include "import/import.h"

#include <stdlib.h>
#include <unistd.h>

int cmd_import(int argc, char **argv)
{
	/* each worker is a two-thread pipeline (parsing, inserting): one per two cores */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int help = 0, quiet = 0, rank = -1, mixed = 0, jobs = cores >= 4 ? (int)(cores / 2) : 1;
	const char *out = NULL, *step_range = NULL;
	struct opt_spec specs[] = {
		{ .name = "output", .short_name = 'o', .type = OPT_STR, .dest = &out, .metavar = "OUT.db",
		  .help = "the profile to write (replaced atomically when the import succeeds; never one of the inputs)" },
		{ .name = "rank", .type = OPT_INT, .dest = &rank, .min = 0, .max = 999999, .metavar = "N",
		  .help = "the rank of the (single) input, over what the trace or its file name says" },
		{ .name = "step-range", .type = OPT_STR, .dest = &step_range, .metavar = "REGEX",
		  .help = "Nsight: NVTX ranges whose name matches become steps (extended regex, any case; default "
			  "ProfilerStep#N or step N)" },
		{ .name = "jobs", .short_name = 'j', .type = OPT_INT, .dest = &jobs, .min = 1, .max = 1024, .metavar = "N",
		  .help = "workers reading files at once (processes, each parsing and inserting on two threads), their "
			  "parts then combined; 1: one file after another (default: half the cores online)" },
		{ .name = "quiet", .short_name = 'q', .type = OPT_FLAG, .dest = &quiet, .help = "no progress on stderr" },
		{ .name = "allow-mixed-runs", .type = OPT_FLAG, .dest = &mixed,
		  .help = "combine files of one rank from different sessions or profilers (refused by default)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	/* any number of inputs (the system's limit on arguments is the only one) */
	char **pos = malloc((size_t)(argc > 0 ? argc : 1) * sizeof *pos);
	if (!pos)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int np;
	int rc = opt_parse("import", specs, argc, argv, pos, argc, &np);
	if (rc) {
		free(pos);
		return rc;
	}
	if (help) {
		free(pos);
		opt_usage(stdout, "import",
			  "SRC... -o OUT.db [-j N] [--rank N] [--step-range REGEX] [-q]\n"
			  "  SRC: PyTorch profiler traces (.json, .json.gz; torch.profiler / Kineto Chrome traces), Nsight\n"
			  "  Systems exports (nsys export --type sqlite: one rank per process), Ascend profiler databases\n"
			  "  (ascend_pytorch_profiler*.db, or torch_npu's output folder) or folders of them; one trace\n"
			  "  file per rank (distributedInfo.rank, else rank-N in the file name, else the order)",
			  specs);
		return 0;
	}
	if (np < 1)
		rc = ascent_error(ASCENT_EUSAGE, "import needs at least one trace (e.g. 'ascent import rank-0.json.gz -o "
				  "trace.db')");
	else if (!out)
		rc = ascent_error(ASCENT_EUSAGE, "import needs an output: -o OUT.db");
	else {
		struct imp_opts o = { .out_path = out, .quiet = quiet, .rank = rank, .step_range = step_range,
				      .allow_mixed_runs = mixed, .jobs = jobs };
		rc = imp_run(&o, (const char *const *)pos, np);
	}
	free(pos);
	return rc;
}
