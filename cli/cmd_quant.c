/* cli/cmd_quant.c — `ascent quant ptq|qat|eval`: option parsing for the INT8 quantizer; the work
 * is in quant/ (quant_ptq_run, quant_qat_run, quant_eval_run). */
#include "cli/cli.h"
#include "quant/quant.h"

#include <string.h>

static void quant_usage(FILE *f)
{
	fprintf(f, "usage: ascent quant <ptq|qat|eval> [options]\n\n"
		   "  ptq   post-training INT8 quantization of an fp32 checkpoint (calibrates on the train split)\n"
		   "  qat   quantization-aware fine-tuning from PTQ's scales, then export\n"
		   "  eval  real INT8 inference against the fp32 model: loss, ppl, top-1, KL, tokens/s, sizes\n\n"
		   "'ascent quant <sub> --help' shows the options; docs/quant.md explains the format.\n");
}

/* Options shared by ptq and qat; `o` receives them. Strings are parsed after opt_parse. */
struct ptq_cli {
	const char *scheme, *method, *skip, *calib, *db, *ckpt, *out;
	double budget, smooth, percentile;
	int calib_seqs, sens_seqs, seq, threads, per_tensor, help, quiet, force;
};

#define PTQ_SPECS(c)                                                                                                   \
	{ "ckpt", 0, OPT_STR, &(c).ckpt, 0, 0, NULL, "DIR", "fp32 checkpoint (or run) directory", NULL, 0, 0 },          \
	{ "out", 'o', OPT_STR, &(c).out, 0, 0, NULL, "OUTDIR", "where model.safetensors, config.json, quant_report.json go", \
	  NULL, 0, 0 },                                                                                                \
	{ "scheme", 0, OPT_STR, &(c).scheme, 0, 0, "w8|w8a8-dynamic|w8a8-static", "S",                                \
	  "weight-only, W8A8 per-token dynamic, or W8A8 per-tensor static (default w8a8-dynamic)", NULL, 0, 0 },        \
	{ "method", 0, OPT_STR, &(c).method, 0, 0, "minmax|ema|percentile|mse|kl", "M",                               \
	  "calibrator of the static activation scales (default percentile)", NULL, 0, 0 },                             \
	{ "percentile", 0, OPT_FLOAT, &(c).percentile, 50, 100, NULL, "P", "percentile of --method percentile (99.99)",  \
	  NULL, 0, 0 },                                                                                                \
	{ "calib", 0, OPT_STR, &(c).calib, 0, 0, NULL, "PATH",                                                         \
	  "calibration data (default: the checkpoint's train split; never the validation split)", NULL, 0, 0 },       \
	{ "calib-seqs", 0, OPT_INT, &(c).calib_seqs, 1, 4096, NULL, "N", "calibration sequences (default 16)", NULL, 0,  \
	  0 },                                                                                                          \
	{ "sens-seqs", 0, OPT_INT, &(c).sens_seqs, 0, 4096, NULL, "N",                                                 \
	  "sequences for the per-layer dPPL (default 4; 0 skips it)", NULL, 0, 0 },                                     \
	{ "seq", 0, OPT_INT, &(c).seq, 1, 1 << 20, NULL, "T", "tokens per sequence (default: the trained seq, at most 256)",    \
	  NULL, 0, 0 },                                                                                                \
	{ "skip", 0, OPT_STR, &(c).skip, 0, 0, NULL, "PATTERN",                                                        \
	  "keep layers whose name contains any of these comma-separated strings in fp32", NULL, 0, 0 },               \
	{ "budget", 0, OPT_FLOAT, &(c).budget, 0, 1000, NULL, "DPPL",                                                  \
	  "allowed perplexity increase in %: keep the most sensitive layers fp32 until within it", NULL, 0, 0 },       \
	{ "smooth", 0, OPT_FLOAT, &(c).smooth, 0, 1, NULL, "ALPHA", "SmoothQuant migration strength (0.5 typical)",   \
	  NULL, 0, 0 },                                                                                                \
	{ "per-tensor", 0, OPT_FLAG, &(c).per_tensor, 0, 0, NULL, NULL, "one weight scale per tensor (default: per "   \
	  "output channel)", NULL, 0, 0 },                                                                              \
	{ "threads", 0, OPT_INT, &(c).threads, 0, 1024, NULL, "N", "threads (0 = cores / ranks on the host)", NULL, 0,  \
	  0 },                                                                                                          \
	{ "db", 0, OPT_STR, &(c).db, 0, 0, NULL, "FILE", "also store the per-layer report in this profile database's " \
	  "quant_layer table (created if missing)", NULL, 0, 0 },                                                                                   \
	{ "quiet", 'q', OPT_FLAG, &(c).quiet, 0, 0, NULL, NULL, "no table on stdout", NULL, 0, 0 },                    \
	{ "force", 0, OPT_FLAG, &(c).force, 0, 0, NULL, NULL, "write into an OUTDIR that holds a checkpoint, profile or " \
	  "shard this command did not make (never over its input)", NULL, 0, 0 },                                      \
	{ "help", 'h', OPT_HELP, &(c).help, 0, 0, NULL, NULL, "show this help", NULL, 0, 0 }

static void ptq_cli_defaults(struct ptq_cli *c)
{
	memset(c, 0, sizeof *c);
	c->budget = -1;
	c->smooth = -1;
	c->percentile = 99.99;
	c->calib_seqs = 16;
	c->sens_seqs = 4;
}

static int ptq_cli_resolve(const struct ptq_cli *c, struct quant_ptq_opts *o, const char *cmd)
{
	quant_ptq_defaults(o);
	if (!c->ckpt)
		return ascent_error(ASCENT_EUSAGE, "%s: missing --ckpt DIR (the fp32 checkpoint to quantize)", cmd);
	if (!c->out)
		return ascent_error(ASCENT_EUSAGE, "%s: missing -o OUTDIR (where the quantized checkpoint goes)", cmd);
	int rc = 0;
	if (c->scheme)
		rc = quant_scheme_parse(c->scheme, &o->scheme);
	if (!rc && c->method)
		rc = quant_method_parse(c->method, &o->method);
	if (rc)
		return rc;
	if (c->method && o->scheme != QUANT_W8A8_STATIC)
		return ascent_error(ASCENT_EUSAGE, "%s: --method calibrates static activation scales and does not apply to "
						   "scheme %s (use --scheme w8a8-static)", cmd, quant_scheme_name(o->scheme));
	o->ckpt = c->ckpt;
	o->out = c->out;
	o->calib = c->calib;
	o->calib_seqs = c->calib_seqs;
	o->sens_seqs = c->sens_seqs;
	o->seq = c->seq;
	o->skip = c->skip;
	o->budget = c->budget;
	o->smooth = c->smooth;
	o->per_tensor = c->per_tensor;
	o->threads = c->threads;
	o->percentile = c->percentile;
	o->quiet = c->quiet;
	o->db = c->db;
	o->force = c->force;
	return 0;
}

static int sub_ptq(int argc, char **argv)
{
	struct ptq_cli c;
	ptq_cli_defaults(&c);
	const struct opt_spec specs[] = { PTQ_SPECS(c), { 0 } };
	int npos, rc = opt_parse("quant ptq", specs, argc, argv, NULL, 0, &npos);
	if (rc)
		return rc;
	if (c.help) {
		opt_usage(stdout, "quant ptq", "--ckpt DIR -o OUTDIR [--scheme S] [--method M] [options]", specs);
		printf("\nCalibration and the per-layer sensitivity read the checkpoint's TRAIN split (disjoint\n"
		       "sequences); 'ascent quant eval' measures on the validation split, which PTQ never reads.\n");
		return 0;
	}
	struct quant_ptq_opts o;
	rc = ptq_cli_resolve(&c, &o, "quant ptq");
	return rc ? rc : quant_ptq_run(&o);
}

static int sub_qat(int argc, char **argv)
{
	struct ptq_cli c;
	ptq_cli_defaults(&c);
	int steps = 100, batch = 4;
	double lr = 1e-5;
	int64_t seed = 1234;
	int control = 0, pp = 1, tp = 1;
	const char *loss = NULL;
	const struct opt_spec specs[] = {
		PTQ_SPECS(c),
		{ "loss", 0, OPT_STR, &loss, 0, 0, "distill|ce", "L",
		  "distill: match the fp32 model's next-token distribution (KL; the default); ce: the training data's "
		  "cross-entropy (also keeps training the model)", NULL, 0, 0 },
		{ "steps", 0, OPT_INT, &steps, 1, 1000000, NULL, "N", "fine-tuning steps (default 100)", NULL, 0, 0 },
		{ "lr", 0, OPT_FLOAT, &lr, 0, 1, NULL, "X", "AdamW learning rate (default 1e-5: the best measured with distillation, docs/quant.md)", NULL, 1, 0 },
		{ "batch", 0, OPT_INT, &batch, 1, 1024, NULL, "B",
		  "sequences per step, over all data-parallel ranks (default 4)", NULL, 0, 0 },
		{ "pp", 0, OPT_INT, &pp, 1, 4096, NULL, "N", "pipeline stages under mpirun (default 1; the other ranks are "
		  "data-parallel)", NULL, 0, 0 },
		{ "tp", 0, OPT_INT, &tp, 1, 4096, NULL, "N", "tensor parallelism: not supported with fake quantization "
		  "(only 1)", NULL, 0, 0 },
		{ "seed", 0, OPT_I64, &seed, 0, 0, NULL, "S", "batch sampling seed (default 1234)", NULL, 0, 0 },
		{ "fp32-control", 0, OPT_FLAG, &control, 0, 0, NULL, NULL,
		  "with --loss ce: run the same fine-tuning with nothing quantized and write a plain fp32 checkpoint "
		  "(the control that shows how much of QAT's gain is only more training)", NULL, 0, 0 },
		{ 0 },
	};
	int npos, rc = opt_parse("quant qat", specs, argc, argv, NULL, 0, &npos);
	if (rc)
		return rc;
	if (c.help) {
		opt_usage(stdout, "quant qat", "--ckpt DIR -o OUTDIR [--scheme S] [--steps N] [--lr X] [options]", specs);
		printf("\nRuns PTQ into OUTDIR/ptq (same options: the baseline and the static scales), fine-tunes the\n"
		       "fp32 weights with fake quantization (clipped STE) on the train split through the trainer\n"
		       "(run directory OUTDIR/train; under mpirun data-parallel), then exports like ptq. By default\n"
		       "the loss is the KL to the fp32 model's own next-token distribution (distillation: QAT only\n"
		       "recovers quantization error, so PTQ is its control); --loss ce trains on the data instead.\n");
		return 0;
	}
	struct quant_qat_opts q;
	memset(&q, 0, sizeof q);
	rc = ptq_cli_resolve(&c, &q.ptq, "quant qat");
	if (rc)
		return rc;
	if (!c.scheme)
		q.ptq.scheme = QUANT_W8A8_STATIC;
	if (loss && (rc = quant_qat_loss_parse(loss, &q.loss)))
		return ascent_error_ctx(rc, "quant qat: --loss");
	q.steps = steps;
	q.lr = lr;
	q.batch = batch;
	q.seed = seed;
	q.fp32_control = control;
	q.pp = pp;
	q.tp = tp;
	return quant_qat_run(&q);
}

static int sub_eval(int argc, char **argv)
{
	struct quant_eval_opts o;
	memset(&o, 0, sizeof o);
	int help = 0;
	const struct opt_spec specs[] = {
		{ "ckpt", 0, OPT_STR, &o.ckpt, 0, 0, NULL, "OUTDIR", "quantized checkpoint (written by quant ptq/qat)", NULL, 0, 0 },
		{ "fp32", 0, OPT_STR, &o.fp32, 0, 0, NULL, "DIR", "fp32 checkpoint to compare with (default: the recorded source)",
		  NULL, 0, 0 },
		{ "data", 0, OPT_STR, &o.data, 0, 0, NULL, "PATH", "evaluation data (default: the source's validation split)",
		  NULL, 0, 0 },
		{ "batch", 0, OPT_INT, &o.batch, 1, 4096, NULL, "B", "sequences per batch (default 4)", NULL, 0, 0 },
		{ "seq", 0, OPT_INT, &o.seq, 1, 1 << 20, NULL, "T", "tokens per sequence (default: the trained seq, at most 256)", NULL,
		  0, 0 },
		{ "batches", 0, OPT_INT, &o.batches, 0, 1 << 30, NULL, "N", "batches to evaluate (default 0 = all)", NULL, 0, 0 },
		{ "threads", 0, OPT_INT, &o.threads, 0, 1024, NULL, "N", "threads for both models", NULL, 0, 0 },
		{ "json", 0, OPT_FLAG, &o.json, 0, 0, NULL, NULL, "print one JSON object", NULL, 0, 0 },
		{ "help", 'h', OPT_HELP, &help, 0, 0, NULL, NULL, "show this help", NULL, 0, 0 },
		{ 0 },
	};
	int npos, rc = opt_parse("quant eval", specs, argc, argv, NULL, 0, &npos);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "quant eval", "--ckpt OUTDIR [--data PATH] [--json]", specs);
		return 0;
	}
	if (!o.ckpt)
		return ascent_error(ASCENT_EUSAGE, "quant eval: missing --ckpt OUTDIR (a directory written by 'ascent quant ptq')");
	return quant_eval_run(&o);
}

int cmd_quant(int argc, char **argv)
{
	if (argc < 1) {
		quant_usage(stderr);
		return ascent_error(ASCENT_EUSAGE, "quant: missing subcommand (ptq, qat or eval)");
	}
	if (!strcmp(argv[0], "--help") || !strcmp(argv[0], "-h") || !strcmp(argv[0], "help")) {
		quant_usage(stdout);
		return 0;
	}
	if (!strcmp(argv[0], "ptq"))
		return sub_ptq(argc - 1, argv + 1);
	if (!strcmp(argv[0], "qat"))
		return sub_qat(argc - 1, argv + 1);
	if (!strcmp(argv[0], "eval"))
		return sub_eval(argc - 1, argv + 1);
	return ascent_error(ASCENT_EUSAGE, "quant: unknown subcommand '%s' (use ptq, qat or eval)", argv[0]);
}
