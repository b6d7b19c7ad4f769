/* cli/cmd_import.c — `ascent import SRC... -o OUT.db [-j N] [--rank N] [-q]`: parses options, calls imp_run
 * (import/); under a launcher with several processes (srun, mpirun), shares the import among them
 * (imp_spread) over comm/. */
#include "cli/cli.h"
#include "comm/comm.h"
#include "import/import.h"
#include "interpose/interpose.h"

#include <stdlib.h>
#include <unistd.h>

/* imp_spread's exchange: an allgather over the world that sleeps while it waits (the other processes
 * may still be reading their share, or rank 0 combining, for minutes). */
static int spread_allgather(void *ctx, const void *mine, void *all, size_t bytes)
{
	struct comm *c = ctx;
	struct comm_req *req = NULL;
	int rc = comm_iallgather(c, COMM_WORLD, mine, all, bytes, COMM_BYTE, &req);
	return rc ? rc : comm_wait(c, &req);
}

/* The import shared by the launcher's processes: MPI started, every process's share, rank 0 writes. */
static int import_spread(struct imp_opts *o, const char *const *inputs, int n, int jobs_given)
{
	/* a process waits in an exchange as long as the slowest share takes: no watchdog; the workers are
	 * forked after MPI started and never call MPI, so Open MPI's warning about fork says nothing here */
	setenv("ASCENT_COMM_TIMEOUT", "0", 1);
	setenv("OMPI_MCA_mpi_warn_on_fork", "0", 0);
	struct comm *c = NULL;
	int rc = comm_init(&c);
	if (rc)
		return rc;
	struct imp_spread sp = { .rank = comm_rank(c, COMM_WORLD), .size = comm_size(c, COMM_WORLD), .ctx = c,
				 .allgather = spread_allgather };
	o->spread = &sp;
	if (!jobs_given)   /* the launcher's processes are the parallelism asked for */
		o->jobs = 1;
	if (sp.rank)
		o->quiet = 1;
	rc = imp_run(o, inputs, n);   /* the others fail with process 0 and point to its message */
	int x = comm_finalize(c);
	return rc ? rc : x;
}

int cmd_import(int argc, char **argv)
{
	/* each worker is a two-thread pipeline (parsing, inserting): one per two cores */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	int help = 0, quiet = 0, rank = -1, mixed = 0, jobs = 0;
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
			  "parts then combined; 1: one file after another (default: half the cores online; 1 per process "
			  "under srun or mpirun, where the processes share the files and rank 0 writes OUT.db)" },
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
				      .allow_mixed_runs = mixed, .jobs = jobs ? jobs : cores >= 4 ? (int)(cores / 2) : 1 };
		int lrank, lsize;
		if (interpose_launcher_rank(&lrank, &lsize) && lsize > 1)
			rc = import_spread(&o, (const char *const *)pos, np, jobs != 0);
		else
			rc = imp_run(&o, (const char *const *)pos, np);
	}
	free(pos);
	return rc;
}
