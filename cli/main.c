/* cli/main.c — `ascent <command>` dispatch and help. Logic lives in the modules. */
#include "cli/cli.h"
#include "nn/nn.h"

#include <string.h>

static int cmd_help(int argc, char **argv);

/* Commands in the order `ascent help` lists them. */
static const struct cli_command COMMANDS[] = {
	{ "train", "train a GPT model, alone or under mpirun with DP/TP/PP/ZeRO (see 'ascent train --help')", cmd_train, 1 },
	{ "eval", "mean loss and perplexity of a checkpoint on data", cmd_eval, 1 },
	{ "generate", "sample text from a checkpoint", cmd_generate, 1 },
	{ "tokenize", "write text as an llm.c token shard", cmd_tokenize, 0 },
	{ "report", "summarise a profile: operators, collectives, steps, ranks, memory, overhead", cmd_report, 0 },
	{ "diff", "what changed between two profiles or traces, and why it got slower: ascent diff A B", cmd_diff, 0 },
	{ "view", "look at a profile interactively (ascent view RUN.db; --dump VIEW for text; --against A.db: what changed)",
	  cmd_view, 0 },
	{ "profile", "profile any program, MPI or not: ascent profile [--out DIR] [--sample HZ] -- CMD ARGS...", cmd_profile, 0 },
	{ "export", "export a profile as Chrome trace JSON (Perfetto) or folded stacks", cmd_export, 0 },
	{ "import", "import PyTorch profiler traces (Kineto JSON), Nsight Systems SQLite exports or Ascend profiler databases as a profile: ascent import SRC... -o OUT.db", cmd_import, 0 },
	{ "merge", "merge a run's rank-NNNNN.db profiles into trace.db", cmd_merge, 0 },
	{ "advise", "findings from a profile (slow rank/link, comm-bound, bubbles, idle, memory) with evidence and fixes", cmd_advise, 0 },
	{ "diag", "check a cluster or a run: versions, net, env, mem, comm, hang, all (see 'ascent diag --help')", cmd_diag, 1 },
	{ "quant", "INT8 quantization: quant ptq|qat|eval (see 'ascent quant --help')", cmd_quant, 1 },
	{ "version", "print the version and the libraries it was built with", cmd_version, 0 },
	{ "help", "show help for ascent or for one command", cmd_help, 0 },
	{ "comm-selftest", NULL /* hidden: tests of comm/ under mpirun */, cmd_commtest, 0 },
};

#define NCOMMANDS (int)(sizeof COMMANDS / sizeof COMMANDS[0])

static const struct cli_command *find(const char *name)
{
	for (int i = 0; i < NCOMMANDS; i++)
		if (!strcmp(COMMANDS[i].name, name))
			return &COMMANDS[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: ascent <command> [options] [args]\n\n"
		   "ascent trains GPT-style models with data, tensor and pipeline parallelism, profiles\n"
		   "them, and checks clusters before a job.\n\ncommands:\n");
	for (int i = 0; i < NCOMMANDS; i++)
		if (COMMANDS[i].summary) /* NULL: a hidden command */
			fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
	fprintf(f, "\n'ascent help <command>' or 'ascent <command> --help' shows a command's options.\n");
}

static int cmd_help(int argc, char **argv)
{
	if (argc < 1) {
		usage(stdout);
		return 0;
	}
	const struct cli_command *c = find(argv[0]);
	if (!c)
		return ascent_error(ASCENT_EUSAGE, "unknown command '%s' (see 'ascent help')", argv[0]);
	char *args[] = { (char *)"--help", NULL };
	return c->run(1, args);
}

void cli_report_error(int rc)
{
	const char *m = ascent_errmsg();
	fprintf(stderr, "error: %s\n", m && *m ? m : ascent_strerror(rc));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	const char *name = argv[1];
	if (!strcmp(name, "--help") || !strcmp(name, "-h"))
		name = "help";
	if (!strcmp(name, "--version"))
		name = "version";
	const struct cli_command *c = find(name);
	if (!c) {
		fprintf(stderr, "error: unknown command '%s' (see 'ascent help' for the list)\n", argv[1]);
		return 2;
	}
	/* Only the commands that multiply matrices restart themselves with the OpenBLAS and OpenMP
	 * settings nn wants, and warn about a slow core: `ascent profile` runs someone else's program
	 * (CMD would inherit them), and import, report, view, ... never call a GEMM. */
	if (c->gemm)
		nn_blas_fix_core(argc, argv);
	else
		nn_blas_idle();   /* OpenBLAS's workers would spin for about 0.1 s of CPU after starting */
	int rc = c->run(argc - 2, argv + 2);
	if (rc) {
		cli_report_error(rc);
		return ascent_exit_code(rc);
	}
	return 0;
}
