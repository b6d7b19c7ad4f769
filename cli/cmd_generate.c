/* cli/cmd_generate.c — `ascent generate`: sample text from a checkpoint (byte-level; an INT8
 * checkpoint of `ascent quant` samples from its INT8 forward, quant/infer.c). */
#include "cli/cli.h"
#include "quant/quant.h"
#include "trainer/trainer.h"

int cmd_generate(int argc, char **argv)
{
	struct trainer_generate_opts o = { .tokens = 200, .temperature = 0.8, .top_k = 0, .seed = 1337 };
	int help = 0;
	struct opt_spec specs[] = {
		{ .name = "ckpt", .type = OPT_STR, .dest = &o.ckpt, .metavar = "DIR",
		  .help = "checkpoint directory or run directory (its newest checkpoint)" },
		{ .name = "prompt", .type = OPT_STR, .dest = &o.prompt, .metavar = "TEXT", .help = "text to continue" },
		{ .name = "tokens", .type = OPT_INT, .dest = &o.tokens, .min = 0, .max = 1000000, .metavar = "N",
		  .help = "tokens (bytes) to generate (default 200)" },
		{ .name = "temperature", .type = OPT_FLOAT, .dest = &o.temperature, .min = 0, .max = 100, .metavar = "X",
		  .help = "sampling temperature; 0 = greedy (default 0.8)" },
		{ .name = "top-k", .type = OPT_INT, .dest = &o.top_k, .min = 0, .max = 1 << 20, .metavar = "K",
		  .help = "sample among the K likeliest tokens; 0 = all (default)" },
		{ .name = "seed", .type = OPT_I64, .dest = &o.seed, .min = 0, .max = 9007199254740992.0, .metavar = "S",
		  .help = "sampling seed (default 1337)" },
		{ .name = "threads", .type = OPT_INT, .dest = &o.threads, .min = 0, .max = 4096, .metavar = "N",
		  .help = "threads; 0 = cores on the host (default)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("generate", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "generate", "--ckpt DIR --prompt TEXT [--tokens N] [--temperature X] [--seed S]", specs);
		return 0;
	}
	if (!o.ckpt)
		return ascent_error(ASCENT_EUSAGE, "'ascent generate' needs --ckpt DIR (a checkpoint or run directory)");
	if (!o.prompt)
		return ascent_error(ASCENT_EUSAGE, "'ascent generate' needs --prompt TEXT");
	/* a checkpoint written by `ascent quant ptq|qat` runs its real INT8 forward (quant/ sits right of
	 * trainer/, so the dispatch is here) */
	char dir[TRAINER_PATH_MAX + 64];
	if (trainer_ckpt_resolve(o.ckpt, dir, sizeof dir) == 0 && quant_is_quantized_ckpt(dir))
		return quant_generate_ckpt_run(&o);
	return trainer_generate_run(&o);
}
