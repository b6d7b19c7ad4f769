/* cli/cmd_advise.c — `ascent advise RUN.db [--format table|json]`: parse options and call the
 * advisor (diag/advise.c), which reads the profile through db/ and prints ranked findings. */
#include "cli/cli.h"
#include "diag/diag.h"

int cmd_advise(int argc, char **argv)
{
	int help = 0;
	const char *format = "table", *against = NULL;
	struct opt_spec specs[] = {
		{ .name = "format", .type = OPT_STR, .dest = &format, .choices = "table|json",
		  .help = "table (default) or json (one document: findings, rules, summary)" },
		{ .name = "against", .type = OPT_STR, .dest = &against, .metavar = "A",
		  .help = "compare with the baseline A instead: 'ascent advise --against A B' is 'ascent diff A B --advise' "
			  "(the regressions from A to B, by their share of the step-time change; docs/diff.md)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[2];
	int np;
	int rc = opt_parse("advise", specs, argc, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "advise", "RUN.db [--format table|json] | --against A.db B.db", specs);
		printf("\nReads a profile (runs/NAME/trace.db) and lists findings, High first, each with the evidence\n"
		       "(numbers, steps, ranks and hosts, the SQL behind them) and the fix: idle/host-bound steps, data\n"
		       "loading, exposed or non-overlapped communication, tiny collectives, pipeline bubble above\n"
		       "theory, slow rank, slow link, memory near the limit, NaN loss, loss-scale collapse, thread\n"
		       "oversubscription, a generic OpenBLAS core; for imported GPU traces the idle device, the host\n"
		       "blocked in synchronising runtime calls, launch-bound kernels and host-to-device copies\n"
		       "(docs/device.md). Rules without the data they need are listed as skipped. Exit 0 whatever\n"
		       "the findings; 2 for a file that is not a profile.\n");
		return 0;
	}
	if (against && np == 1) {   /* the same code as `ascent diff A B --advise` */
		char *dargv[] = { (char *)against, pos[0], (char *)"--advise", (char *)"--format", (char *)format, NULL };
		return cmd_diff(5, dargv);
	}
	if (np != 1)
		return ascent_error(ASCENT_EUSAGE, "advise needs one profile database (ascent advise runs/NAME/trace.db)");
	return diag_advise_run(pos[0], format, stdout);
}
