/* cli/cmd_eval.c — `ascent eval`: mean loss and perplexity of a checkpoint over data read in order
 * (an INT8 checkpoint of `ascent quant` runs its INT8 forward, quant/infer.c). */
#include "cli/cli.h"
#include "quant/quant.h"
#include "trainer/trainer.h"

int cmd_eval(int argc, char **argv)
{
	struct trainer_eval_opts o = { .batch = 8, .seq = 0, .batches = 0, .threads = 0 };
	int help = 0;
	struct opt_spec specs[] = {
		{ .name = "ckpt", .type = OPT_STR, .dest = &o.ckpt, .metavar = "DIR",
		  .help = "checkpoint directory (runs/NAME/ckpt/step-NNNNNN) or a run directory (its newest)" },
		{ .name = "data", .type = OPT_STR, .dest = &o.data, .metavar = "PATH",
		  .help = "text, llm.c shard or directory (default: the fortunes corpus's validation split)" },
		{ .name = "batch", .type = OPT_INT, .dest = &o.batch, .min = 1, .max = 65536, .metavar = "B",
		  .help = "sequences per batch (default 8)" },
		{ .name = "seq", .type = OPT_INT, .dest = &o.seq, .min = 1, .max = 1 << 20, .metavar = "T",
		  .help = "tokens per sequence (default: the seq it was trained with, else n_positions)" },
		{ .name = "batches", .type = OPT_INT, .dest = &o.batches, .min = 1, .max = 1000000000, .metavar = "N",
		  .help = "evaluate the first N batches (default: every full batch)" },
		{ .name = "threads", .type = OPT_INT, .dest = &o.threads, .min = 0, .max = 4096, .metavar = "N",
		  .help = "threads; 0 = cores on the host (default)" },
		{ .name = "json", .type = OPT_FLAG, .dest = &o.json, .help = "print {\"loss\":..., \"ppl\":..., \"tokens\":...}" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("eval", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "eval", "--ckpt DIR [--data PATH] [--batch B] [--seq T] [--batches N] [--json]", specs);
		printf("\nBatch b covers tokens b*B*T ... (b+1)*B*T of the data (inputs) and the next tokens (targets).\n");
		return 0;
	}
	if (!o.ckpt)
		return ascent_error(ASCENT_EUSAGE, "'ascent eval' needs --ckpt DIR (a checkpoint or run directory)");
	/* a checkpoint written by `ascent quant ptq|qat` runs its real INT8 forward (quant/ sits right of
	 * trainer/, so the dispatch is here) */
	char dir[TRAINER_PATH_MAX + 64];
	if (trainer_ckpt_resolve(o.ckpt, dir, sizeof dir) == 0 && quant_is_quantized_ckpt(dir))
		return quant_eval_ckpt_run(&o);
	return trainer_eval_run(&o);
}
