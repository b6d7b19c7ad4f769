/* cli/cli.h — the command table shared by cli/main.c and the cli/cmd_*.c files.
 * Each cmd_* function parses its options and calls its module's *_run; it returns an
 * ASCENT_E* code (0 on success) and main() turns it into the exit status. */
#ifndef ASCENT_CLI_H
#define ASCENT_CLI_H

#include "common/common.h"

struct cli_command {
	const char *name;
	const char *summary;                     /* one line for `ascent help`; NULL hides it */
	int (*run)(int argc, char **argv);       /* argv[0] is the first argument after the name */
	int gemm;                                /* runs the model's matrix products: main() first lets nn
						  * fix OpenBLAS's core (nn_blas_fix_core), which may restart
						  * the process and warns about a slow core */
};

/* Print the message of a failed command to stderr as "error: ..." */
void cli_report_error(int rc);

int cmd_version(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_profile(int argc, char **argv);
/* "A:B" (inclusive), "A:" (to the end) or "A" into [lo, hi] (cmd_report.c). */
int cli_parse_steps(const char *s, int64_t *lo, int64_t *hi);
int cmd_diag(int argc, char **argv);
int cmd_advise(int argc, char **argv);
int cmd_commtest(int argc, char **argv);
int cmd_train(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_quant(int argc, char **argv);
int cmd_view(int argc, char **argv);

#endif
