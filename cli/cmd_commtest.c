/* cli/cmd_commtest.c — `ascent comm-selftest`, a hidden command for the comm/ integration tests:
 * parses the options and runs comm_selftest_run (comm/comm.h describes the tests). */
#include "cli/cli.h"
#include "comm/comm.h"

#include <stdio.h>

int cmd_commtest(int argc, char **argv)
{
	int help = 0, dp = 0, tp = 1, pp = 1, iters = 100, sleep_ms = 0, nonblocking = 0, compute_ms = 1500;
	const char *test = "all", *run_dir = NULL;
	struct opt_spec specs[] = {
		{ .name = "test", .type = OPT_STR, .dest = &test, .choices = "all|grid|collectives|clock|loop|progress|late",
		  .metavar = "WHAT", .help = "what to test (default all = grid, collectives, clock)" },
		{ .name = "dp", .type = OPT_INT, .dest = &dp, .min = 0, .max = 1 << 20, .metavar = "N",
		  .help = "data-parallel size (default: world / (tp·pp))" },
		{ .name = "tp", .type = OPT_INT, .dest = &tp, .min = 1, .max = 1 << 20, .metavar = "N", .help = "tensor-parallel size" },
		{ .name = "pp", .type = OPT_INT, .dest = &pp, .min = 1, .max = 1 << 20, .metavar = "N", .help = "pipeline-parallel size" },
		{ .name = "iters", .type = OPT_INT, .dest = &iters, .min = 1, .max = 100000000, .metavar = "N",
		  .help = "loop: allreduces to run (default 100)" },
		{ .name = "sleep-ms", .type = OPT_INT, .dest = &sleep_ms, .min = 0, .max = 60000, .metavar = "MS",
		  .help = "loop: pause after each allreduce" },
		{ .name = "nonblocking", .type = OPT_FLAG, .dest = &nonblocking,
		  .help = "loop: non-blocking allreduces (the communication thread runs them), each waited for" },
		{ .name = "compute-ms", .type = OPT_INT, .dest = &compute_ms, .min = 1, .max = 600000, .metavar = "MS",
		  .help = "progress: length of the computation; late: how late the peers are (default 1500)" },
		{ .name = "run-dir", .type = OPT_STR, .dest = &run_dir, .metavar = "DIR",
		  .help = "flight-recorder dumps go to DIR/flight; pids to DIR/pids" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("comm-selftest", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "comm-selftest", "[--test WHAT] [--dp N --tp N --pp N] [--run-dir DIR]", specs);
		return 0;
	}
	struct comm_selftest_options o = { .test = test, .dp = dp, .tp = tp, .pp = pp, .iters = iters,
					   .sleep_ms = sleep_ms, .nonblocking = nonblocking, .compute_ms = compute_ms,
					   .run_dir = run_dir };
	return comm_selftest_run(&o);
}
