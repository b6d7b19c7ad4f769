/* cli/cmd_diag.c — `ascent diag <sub>`: the dispatcher of the diagnostics. Each subcommand is one
 * row of DIAG_SUBS (name, summary, function); add versions/net/env/mem/comm there. A subcommand
 * parses its options, fills a struct diag_report through its diag_*_run, and prints it as a table
 * or (--json) as one JSON document; the exit status is 1 when a check FAILed (diag_report_verdict). */
#include "cli/cli.h"
#include "diag/diag.h"
#include "comm/comm.h"

#include <stdlib.h>
#include <string.h>

struct diag_sub {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

/* Print the report in the form asked for and turn it into the command's result. */
static int finish(struct diag_report *r, int json, const char *command, const char *title)
{
	int rc = json ? diag_report_print_json(stdout, r, command) : (diag_report_print(stdout, r, title), 0);
	if (!rc)
		rc = diag_report_verdict(r);
	diag_report_release(r);
	return rc;
}

static int diag_hang(int argc, char **argv)
{
	int help = 0, json = 0;
	double min_wait = 1.0;
	struct opt_spec specs[] = {
		{ .name = "min-wait", .type = OPT_FLOAT, .dest = &min_wait, .min = 0, .max = 1e7, .metavar = "S",
		  .help = "a call pending this long (seconds) at dump time counts as stuck (default 1)" },
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document (checks, stuck, missing)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag hang", specs, argc, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag hang", "RUN_DIR [--json] [--min-wait S]", specs);
		printf("\nReads RUN_DIR/flight/rank-*.json (flight-recorder dumps written on a comm timeout, on\n"
		       "SIGUSR1 and on a crash) and names the ranks stuck in a call and the ranks that never arrived.\n");
		return 0;
	}
	if (np != 1)
		return ascent_error(ASCENT_EUSAGE, "diag hang needs the run directory (ascent diag hang runs/NAME)");
	struct diag_report r;
	if ((rc = diag_report_init(&r)))
		return rc;
	rc = diag_hang_run(pos[0], min_wait, &r);
	if (rc) {
		diag_report_release(&r);
		return rc;
	}
	return finish(&r, json, "diag hang", "ascent diag hang");
}

/* ---- versions, net, env, mem, all (diag/versions.c, net.c, env.c, mem.c) ---------------------- */

/* Under a launcher with more than one rank, start comm/ so the checks can compare ranks; a single
 * process never starts MPI. *c stays NULL when there is nothing to compare. */
static int diag_comm_start(struct comm **c)
{
	*c = NULL;
	static const char *vars[] = { "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "SLURM_NTASKS" };
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
		const char *v = getenv(vars[i]);
		if (v && atoi(v) > 1)
			return comm_init(c);
	}
	return 0;
}

/* Multi-rank ending: gather every rank's findings, print on rank 0 only, finalize comm/. With `db`
 * (--db FILE) rank 0 (or the one process) also appends the checks to the profile database. */
static int finish_ranks(struct comm *c, struct diag_report *r, int json, const char *command, const char *title,
			const char *db)
{
	int rc = c ? diag_report_gather(c, r) : 0;
	if (!rc && db && (!c || comm_rank(c, COMM_WORLD) == 0))
		rc = diag_report_store(r, db);
	if (!c) {
		if (rc) {
			diag_report_release(r);
			return rc;
		}
		return finish(r, json, command, title);
	}
	if (!rc && comm_rank(c, COMM_WORLD) != 0) {
		rc = diag_report_verdict(r);
		diag_report_release(r);
		if (rc == ASCENT_EFAIL)
			rc = ascent_error(ASCENT_EFAIL, "diag failed (rank 0 prints the report)");
	} else if (!rc) {
		rc = finish(r, json, command, title);
	} else {
		diag_report_release(r);
	}
	int frc = comm_finalize(c);
	return rc ? rc : frc;
}

/* "2G", "512MiB", "1.5GB", "1048576" → bytes (K/M/G/T are powers of 1024). */
static int parse_bytes(const char *what, const char *s, int64_t *out)
{
	char *end;
	double v = strtod(s, &end);
	double mul = 1;
	if (end != s) {
		switch (*end) {
		case 'k': case 'K': mul = 1024.0; end++; break;
		case 'm': case 'M': mul = 1024.0 * 1024; end++; break;
		case 'g': case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
		case 't': case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
		default: break;
		}
		if (mul > 1 && (*end == 'i' || *end == 'I'))
			end++;
		if (mul > 1 && (*end == 'b' || *end == 'B'))
			end++;
	}
	if (end == s || *end || v <= 0 || v * mul > 9.0e18)
		return ascent_error(ASCENT_EUSAGE, "%s '%s' is not a size (e.g. 80G, 512MiB, 1048576)", what, s);
	*out = (int64_t)(v * mul);
	return 0;
}

static int diag_versions_cmd(int argc, char **argv)
{
	int help = 0, json = 0;
	struct diag_versions_opts o = { 0 };
	struct opt_spec specs[] = {
		{ .name = "root", .type = OPT_STR, .dest = &o.root, .metavar = "PREFIX",
		  .help = "read version files under PREFIX (a fixture tree) instead of / (skips library versions)" },
		{ .name = "matrix", .type = OPT_STR, .dest = &o.matrix, .metavar = "FILE",
		  .help = "compatibility matrix (default samples/version_matrix.json or $ASCENT_VERSION_MATRIX)" },
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag versions", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag versions", "[--root PREFIX] [--matrix FILE] [--json]", specs);
		return 0;
	}
	struct diag_report r;
	if ((rc = diag_comm_start(&o.comm)))
		return rc;
	if ((rc = diag_report_init(&r)) || (rc = diag_versions_run(&o, &r))) {
		diag_report_release(&r);
		comm_finalize(o.comm);
		return rc;
	}
	return finish_ranks(o.comm, &r, json, "diag versions", "ascent diag versions", NULL);
}

static int diag_net_cmd(int argc, char **argv)
{
	int help = 0, json = 0;
	struct diag_net_opts o = { 0 };
	struct opt_spec specs[] = {
		{ .name = "iface", .type = OPT_STR, .dest = &o.iface, .metavar = "NAME",
		  .help = "an interface that carries training traffic (besides ASCENT_IFNAME, *_SOCKET_IFNAME)" },
		{ .name = "expect-mtu", .type = OPT_INT, .dest = &o.expect_mtu, .min = 68, .max = 65536, .metavar = "N",
		  .help = "warn when a training interface's MTU is below N" },
		{ .name = "expect-rdma-mtu", .type = OPT_INT, .dest = &o.expect_rdma_mtu, .min = 256, .max = 4096,
		  .metavar = "N", .help = "RDMA MTU expected on RoCE ports (default 4096)" },
		{ .name = "sysfs", .type = OPT_STR, .dest = &o.sysfs, .metavar = "ROOT",
		  .help = "read ROOT/class/net and ROOT/class/infiniband instead of /sys (fixture trees)" },
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag net", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag net", "[--iface NAME] [--expect-mtu N] [--json]", specs);
		return 0;
	}
	struct diag_report r;
	if ((rc = diag_comm_start(&o.comm)))
		return rc;
	if ((rc = diag_report_init(&r)) || (rc = diag_net_run(&o, &r))) {
		diag_report_release(&r);
		comm_finalize(o.comm);
		return rc;
	}
	return finish_ranks(o.comm, &r, json, "diag net", "ascent diag net", NULL);
}

static int diag_env_cmd(int argc, char **argv)
{
	int help = 0, json = 0;
	struct diag_env_opts o = { 0 };
	const char *min_mem = NULL, *min_disk = NULL;
	struct opt_spec specs[] = {
		{ .name = "disk", .type = OPT_STR, .dest = &o.disk_path, .metavar = "DIR",
		  .help = "where checkpoints go (free-space check; default .)" },
		{ .name = "min-mem", .type = OPT_STR, .dest = &min_mem, .metavar = "SIZE", .help = "minimum available memory (default 1G)" },
		{ .name = "min-disk", .type = OPT_STR, .dest = &min_disk, .metavar = "SIZE", .help = "minimum free disk (default 1G)" },
		{ .name = "sysfs", .type = OPT_STR, .dest = &o.sysfs, .metavar = "ROOT", .help = "sysfs root for RDMA devices" },
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag env", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag env", "[--disk DIR] [--json]", specs);
		return 0;
	}
	if ((min_mem && (rc = parse_bytes("--min-mem", min_mem, &o.min_mem))) ||
	    (min_disk && (rc = parse_bytes("--min-disk", min_disk, &o.min_disk))))
		return rc;
	struct diag_report r;
	if ((rc = diag_comm_start(&o.comm)))
		return rc;
	if ((rc = diag_report_init(&r)) || (rc = diag_env_run(&o, &r))) {
		diag_report_release(&r);
		comm_finalize(o.comm);
		return rc;
	}
	return finish_ranks(o.comm, &r, json, "diag env", "ascent diag env", NULL);
}

/* ---- comm (diag/comm_bench.c) ------------------------------------------------------------------ */

/* Options of the collective benchmark, shared by `diag comm` and `diag all`. */
struct comm_cli {
	const char *ops, *minb, *maxb, *mbytes;
	int no_check, check;
};

static int comm_opts_build(const struct comm_cli *cc, struct diag_comm_opts *o)
{
	int rc;
	if (cc->ops && (rc = diag_comm_parse_ops(cc->ops, &o->ops)))
		return rc;
	if (cc->minb && (rc = parse_bytes("-b/--minbytes", cc->minb, &o->min_bytes)))
		return rc;
	if (cc->maxb && (rc = parse_bytes("-e/--maxbytes", cc->maxb, &o->max_bytes)))
		return rc;
	if (cc->mbytes && (rc = parse_bytes("--matrix-bytes", cc->mbytes, &o->matrix_bytes)))
		return rc;
	if (cc->no_check && cc->check)
		return ascent_error(ASCENT_EUSAGE, "diag comm: --check and --no-check contradict each other");
	o->check = !cc->no_check;
	if (o->min_bytes && o->max_bytes && o->min_bytes > o->max_bytes)
		return ascent_error(ASCENT_EUSAGE, "diag comm: -b %lld is larger than -e %lld (sizes go from -b up to -e)",
				    (long long)o->min_bytes, (long long)o->max_bytes);
	return 0;
}

static int diag_comm_cmd(int argc, char **argv)
{
	int help = 0, json = 0, no_matrix = 0;
	const char *db = NULL;
	struct comm_cli cc = { 0 };
	struct diag_comm_opts o = { 0 };
	o.warmup = 5;
	struct opt_spec specs[] = {
		{ .name = "ops", .type = OPT_STR, .dest = &cc.ops, .metavar = "LIST",
		  .help = "collectives: allreduce,allgather,reducescatter,broadcast,alltoall,sendrecv (default all)" },
		{ .name = "minbytes", .short_name = 'b', .type = OPT_STR, .dest = &cc.minb, .metavar = "SIZE",
		  .help = "smallest size (default 8)" },
		{ .name = "maxbytes", .short_name = 'e', .type = OPT_STR, .dest = &cc.maxb, .metavar = "SIZE",
		  .help = "largest size (default 16M)" },
		{ .name = "stepfactor", .short_name = 'f', .type = OPT_FLOAT, .dest = &o.factor, .min = 1, .max = 1 << 20,
		  .min_open = 1, .metavar = "F", .help = "size multiplier between rows (default 4)" },
		{ .name = "iters", .short_name = 'n', .type = OPT_INT, .dest = &o.iters, .min = 1, .max = 1000000,
		  .metavar = "N", .help = "timed iterations per size (default 20)" },
		{ .name = "warmup", .short_name = 'w', .type = OPT_INT, .dest = &o.warmup, .min = 0, .max = 1000000,
		  .metavar = "N", .help = "untimed iterations per size (default 5)" },
		{ .name = "check", .type = OPT_FLAG, .dest = &cc.check, .help = "verify every result exactly (the default)" },
		{ .name = "no-check", .type = OPT_FLAG, .dest = &cc.no_check, .help = "do not verify (#wrong N/A)" },
		{ .name = "min-busbw", .type = OPT_FLOAT, .dest = &o.min_busbw, .min = 0, .max = 1e6, .metavar = "GB/s",
		  .help = "fail when a collective's average busbw < 0.9 x this (nccl-tests' rule)" },
		{ .name = "raw", .type = OPT_FLAG, .dest = &o.raw,
		  .help = "also time plain MPI_Allreduce (untraced) for the same sizes" },
		{ .name = "timeout", .type = OPT_FLOAT, .dest = &o.conn_timeout_s, .min = 0, .max = 3600, .min_open = 1,
		  .metavar = "S", .help = "connectivity: each pair must answer within S seconds (default 5)" },
		{ .name = "matrix-bytes", .type = OPT_STR, .dest = &cc.mbytes, .metavar = "SIZE",
		  .help = "pairwise bandwidth message size (default 1M)" },
		{ .name = "matrix-iters", .type = OPT_INT, .dest = &o.matrix_iters, .min = 1, .max = 100000, .metavar = "N",
		  .help = "exchanges per pair, best counts (default 5)" },
		{ .name = "no-matrix", .type = OPT_FLAG, .dest = &no_matrix, .help = "skip the pairwise bandwidth matrix" },
		{ .name = "slow-ratio", .type = OPT_FLOAT, .dest = &o.slow_ratio, .min = 0, .max = 1, .min_open = 1,
		  .max_open = 1, .metavar = "R", .help = "slow rank/link: best link < R x median (default 0.5)" },
		{ .name = "db", .type = OPT_STR, .dest = &db, .metavar = "FILE",
		  .help = "also append the checks to FILE's diag_check table (a profile database)" },
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document (checks, rows, matrix)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag comm", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag comm",
			  "[--ops LIST] [-b MIN -e MAX -f F] [--iters N --warmup W] [--check] [--min-busbw X] [--json]",
			  specs);
		printf("\nRun under mpirun (or as one process). Prints nccl-tests' table per collective (out-of-place\n"
		       "and in-place: time, algbw, busbw, #wrong), then a connectivity sweep and a pairwise bandwidth\n"
		       "matrix with slow-rank and slow-link detection. Exit 1 on a wrong element, an unanswered pair\n"
		       "or a busbw below --min-busbw.\n");
		return 0;
	}
	if ((rc = comm_opts_build(&cc, &o)))
		return rc;
	if (no_matrix)
		o.matrix_bytes = -1;
	o.out = json ? NULL : stdout;
	struct diag_report r;
	if ((rc = comm_init(&o.comm)))
		return rc;
	if ((rc = diag_report_init(&r)) || (rc = diag_comm_run(&o, &r))) {
		diag_report_release(&r);
		comm_finalize(o.comm);
		return rc;
	}
	return finish_ranks(o.comm, &r, json, "diag comm", "ascent diag comm", db);
}

/* Options of `diag mem`, shared with `diag all`. */
struct mem_cli {
	const char *preset, *config, *precision, *schedule, *fit, *check;
	int dp, tp, pp, zero, microbatches, recompute, batch, seq, world;
	int seen_mb;
};

#define MEM_SPECS(m)                                                                                               \
	{ .name = "preset", .type = OPT_STR, .dest = &(m).preset, .choices = "tiny|small|gpt2-124m",                \
	  .help = "model preset" },                                                                                \
	{ .name = "config", .type = OPT_STR, .dest = &(m).config, .metavar = "FILE",                                \
	  .help = "JSON config: \"model\" (preset or {n_layer,...}), dp, tp, pp, zero, precision, ..." },           \
	{ .name = "dp", .type = OPT_INT, .dest = &(m).dp, .min = 1, .max = 65536, .help = "data-parallel size" },   \
	{ .name = "tp", .type = OPT_INT, .dest = &(m).tp, .min = 1, .max = 1024, .help = "tensor-parallel size" },  \
	{ .name = "pp", .type = OPT_INT, .dest = &(m).pp, .min = 1, .max = 1024, .help = "pipeline stages" },       \
	{ .name = "zero", .type = OPT_INT, .dest = &(m).zero, .min = 0, .max = 3, .help = "ZeRO stage 0-3" },       \
	{ .name = "precision", .type = OPT_STR, .dest = &(m).precision, .choices = "fp32|bf16|fp16",                \
	  .help = "training precision (default fp32)" },                                                           \
	{ .name = "schedule", .type = OPT_STR, .dest = &(m).schedule, .choices = "1f1b|gpipe",                      \
	  .help = "pipeline schedule (default 1f1b)" },                                                            \
	{ .name = "microbatches", .type = OPT_INT, .dest = &(m).microbatches, .min = 1, .max = 100000,             \
	  .seen = &(m).seen_mb, .help = "micro-batches per step (default 1)" },                                    \
	{ .name = "recompute", .type = OPT_FLAG, .dest = &(m).recompute, .help = "full activation recompute" },    \
	{ .name = "batch", .type = OPT_INT, .dest = &(m).batch, .min = 1, .max = 1 << 20,                           \
	  .help = "micro-batch size in sequences (default 8)" },                                                   \
	{ .name = "seq", .type = OPT_INT, .dest = &(m).seq, .min = 1, .max = 1 << 20,                               \
	  .help = "sequence length (default the model's max)" },                                                   \
	{ .name = "fit", .type = OPT_STR, .dest = &(m).fit, .metavar = "BYTES",                                     \
	  .help = "per-device budget (80G, 512MiB): search the layouts that fit and rank them" },                  \
	{ .name = "world", .type = OPT_INT, .dest = &(m).world, .min = 1, .max = 1 << 20,                           \
	  .help = "ranks for --fit (default dp*tp*pp)" },                                                           \
	{ .name = "check", .type = OPT_STR, .dest = &(m).check, .metavar = "RUN.db",                                \
	  .help = "compare with the peaks measured in a profile (model and layout from its run unless given)" }

/* Build diag_mem_opts from the command line (a --config first, options over it). */
static int mem_opts_build(const struct mem_cli *m, struct diag_mem_opts *o)
{
	memset(o, 0, sizeof *o);
	struct diag_mem_layout *l = &o->layout;
	l->dp = l->tp = l->pp = 1;
	l->microbatches = 1;
	l->batch = 8;
	int rc;
	if (m->check && (rc = diag_mem_opts_from_db(m->check, o)))
		return rc;
	o->check_db = m->check;
	if (m->config && (rc = diag_mem_load_config(m->config, o)))
		return rc;
	if (m->preset && (rc = nn_config_preset(m->preset, &o->model)))
		return rc;
	if (!o->model.n_layer)
		return ascent_error(ASCENT_EUSAGE, "diag mem needs a model: --preset tiny|small|gpt2-124m or --config FILE");
	if (m->dp) l->dp = m->dp;
	if (m->tp) l->tp = m->tp;
	if (m->pp) l->pp = m->pp;
	if (m->zero) l->zero = m->zero;
	if (m->microbatches) l->microbatches = m->microbatches;
	if (m->recompute) l->recompute = 1;
	if (m->batch) l->batch = m->batch;
	if (m->seq) l->seq = m->seq;
	if (!l->seq) l->seq = o->model.max_seq;
	if (m->precision)
		l->precision = !strcmp(m->precision, "bf16") ? DIAG_BF16 : !strcmp(m->precision, "fp16") ? DIAG_FP16 : DIAG_FP32;
	if (m->schedule)
		l->schedule = !strcmp(m->schedule, "gpipe") ? DIAG_GPIPE : DIAG_1F1B;
	o->world = m->world;
	o->fixed_microbatches = m->seen_mb;
	if (m->fit && (rc = parse_bytes("--fit", m->fit, &o->fit)))
		return rc;
	return 0;
}

static int diag_mem_cmd(int argc, char **argv)
{
	int help = 0, json = 0;
	struct mem_cli m = { 0 };
	struct opt_spec specs[] = {
		MEM_SPECS(m),
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document (per_rank bytes by category)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag mem", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag mem",
			  "--preset P | --config FILE | --check RUN.db [--dp N --tp N --pp N --zero S ...] [--fit BYTES]",
			  specs);
		return 0;
	}
	struct diag_mem_opts o;
	if ((rc = mem_opts_build(&m, &o)))
		return rc;
	struct diag_report r;
	if ((rc = diag_report_init(&r)))
		return rc;
	if ((rc = diag_mem_run(&o, &r))) {
		diag_report_release(&r);
		return rc;
	}
	return finish(&r, json, "diag mem", "ascent diag mem");
}

/* Run one part of `diag all` into its own report and merge it; an error becomes a FAIL check. */
static int all_part(struct diag_report *all, const char *name, int rc, struct diag_report *part)
{
	if (rc) {
		char n[64];
		snprintf(n, sizeof n, "%s.error", name);
		rc = diag_check_add(all, rc == ASCENT_EUSAGE || rc == ASCENT_EINPUT ? DIAG_FAIL : DIAG_FAIL, n, NULL,
				    "diag %s could not run: %s", name, ascent_errmsg());
		diag_report_release(part);
		return rc;
	}
	rc = diag_report_merge(all, part);
	diag_report_release(part);
	return rc;
}

static int diag_all_cmd(int argc, char **argv)
{
	int help = 0, json = 0;
	struct mem_cli m = { 0 };
	struct diag_versions_opts vo = { 0 };
	struct diag_net_opts no = { 0 };
	struct diag_env_opts eo = { 0 };
	const char *db = NULL;
	int no_comm = 0;
	struct opt_spec specs[] = {
		{ .name = "matrix", .type = OPT_STR, .dest = &vo.matrix, .metavar = "FILE", .help = "compatibility matrix" },
		{ .name = "db", .type = OPT_STR, .dest = &db, .metavar = "FILE",
		  .help = "also append the results to FILE's diag_check table (a profile database; created if absent)" },
		{ .name = "no-comm", .type = OPT_FLAG, .dest = &no_comm,
		  .help = "skip the collective benchmark (run under mpirun with >= 2 ranks otherwise)" },
		{ .name = "iface", .type = OPT_STR, .dest = &no.iface, .metavar = "NAME", .help = "training interface" },
		{ .name = "expect-mtu", .type = OPT_INT, .dest = &no.expect_mtu, .min = 68, .max = 65536, .metavar = "N",
		  .help = "minimum MTU of training interfaces" },
		{ .name = "disk", .type = OPT_STR, .dest = &eo.disk_path, .metavar = "DIR", .help = "checkpoint folder" },
		MEM_SPECS(m),
		{ .name = "json", .type = OPT_FLAG, .dest = &json, .help = "print one JSON document" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("diag all", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "diag all", "[--preset P ...] [--iface NAME] [--expect-mtu N] [--db FILE] [--json]", specs);
		printf("\nRuns versions, net, env, (with a model) mem and (under mpirun with >= 2 ranks) a small comm\n"
		       "benchmark (every collective 8 B..256 KiB, connectivity, pairwise bandwidth) as one report: the\n"
		       "identity table, then PASS/WARN/FAIL per check with the reason and the fix, then the benchmark\n"
		       "tables. Exit 0 when nothing FAILed, else 1.\n");
		return 0;
	}
	struct diag_mem_opts mo;
	int with_mem = m.preset || m.config || m.check;
	if (with_mem && (rc = mem_opts_build(&m, &mo)))
		return rc;
	struct diag_report all, part;
	struct comm *c;
	if ((rc = diag_comm_start(&c)))
		return rc;
	vo.comm = eo.comm = no.comm = c;
	if ((rc = diag_report_init(&all))) {
		comm_finalize(c);
		return rc;
	}
	diag_ident_add(&all, "ascent", "%s", ASCENT_VERSION);
	if (!(rc = diag_report_init(&part)))
		rc = all_part(&all, "versions", diag_versions_run(&vo, &part), &part);
	if (!rc && !(rc = diag_report_init(&part)))
		rc = all_part(&all, "net", diag_net_run(&no, &part), &part);
	if (!rc && !(rc = diag_report_init(&part)))
		rc = all_part(&all, "env", diag_env_run(&eo, &part), &part);
	if (!rc && with_mem && !(rc = diag_report_init(&part)))
		rc = all_part(&all, "mem", diag_mem_run(&mo, &part), &part);
	if (!rc && !with_mem)
		rc = diag_check_add(&all, DIAG_SKIP, "mem", "pass --preset P or --config FILE (and the layout)",
				    "no model given: memory estimate skipped");
	/* the comm benchmark, small: its tables go after the report (memory stream on rank 0) */
	char *tables = NULL;
	size_t tables_len = 0;
	FILE *tf = NULL;
	if (!rc && c && !no_comm) {
		struct diag_comm_opts co = { .comm = c, .min_bytes = 8, .max_bytes = 256 << 10, .factor = 8, .iters = 5,
					     .warmup = 1, .check = 1, .matrix_bytes = 256 << 10, .matrix_iters = 3 };
		if (!json && comm_rank(c, COMM_WORLD) == 0)
			tf = open_memstream(&tables, &tables_len);
		co.out = tf;
		if (!(rc = diag_report_init(&part)))
			rc = all_part(&all, "comm", diag_comm_run(&co, &part), &part);
		if (tf)
			fclose(tf);
	} else if (!rc) {
		rc = diag_check_add(&all, DIAG_SKIP, "comm", "run under mpirun with >= 2 ranks (e.g. mpirun -np 4 ascent diag all)",
				    no_comm ? "collective benchmark skipped (--no-comm)"
					    : "one process: no collective benchmark, connectivity or bandwidth matrix");
	}
	if (rc) {
		free(tables);
		diag_report_release(&all);
		comm_finalize(c);
		return rc;
	}
	rc = finish_ranks(c, &all, json, "diag all", "ascent diag all", db);
	if (tables && tables_len) {
		printf("\n# benchmark tables (diag comm, small sizes)\n");
		fwrite(tables, 1, tables_len, stdout);
		fflush(stdout);
	}
	free(tables);
	return rc;
}

static const struct diag_sub DIAG_SUBS[] = {
	{ "versions", "OS, compilers, libraries, GPU/NPU stacks, Python packages; the compatibility matrix", diag_versions_cmd },
	{ "net", "interfaces and RDMA ports: state, MTU, speed; training interfaces up and at the expected MTU", diag_net_cmd },
	{ "env", "launcher variables, timeouts per layer, threads, OpenBLAS core, memlock, free memory and disk", diag_env_cmd },
	{ "mem", "per-rank memory estimate by category for a model and layout; --fit searches layouts", diag_mem_cmd },
	{ "comm", "collective benchmark (nccl-tests table), correctness, connectivity, pairwise bandwidth, slow ranks/links", diag_comm_cmd },
	{ "all", "every check that applies, as one report (usable as a job prolog)", diag_all_cmd },
	{ "hang", "which ranks are stuck in which call, which never arrived (reads RUN/flight dumps)", diag_hang },
};
#define NSUBS (int)(sizeof DIAG_SUBS / sizeof DIAG_SUBS[0])

static void usage(FILE *f)
{
	fprintf(f, "usage: ascent diag <check> [options]\n\nchecks:\n");
	for (int i = 0; i < NSUBS; i++)
		fprintf(f, "  %-10s %s\n", DIAG_SUBS[i].name, DIAG_SUBS[i].summary);
	fprintf(f, "\n'ascent diag <check> --help' shows its options; --json prints one JSON document.\n"
		   "exit status: 0 all checks pass (or warn), 1 a check failed, 2 bad usage or input.\n");
}

int cmd_diag(int argc, char **argv)
{
	if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
		usage(stdout);
		return 0;
	}
	for (int i = 0; i < NSUBS; i++)
		if (!strcmp(DIAG_SUBS[i].name, argv[0]))
			return DIAG_SUBS[i].run(argc - 1, argv + 1);
	return ascent_error(ASCENT_EUSAGE, "unknown diag check '%s' (see 'ascent diag --help')", argv[0]);
}
