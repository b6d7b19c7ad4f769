/* cli/cmd_train.c — `ascent train`: parse the options (trainer's field table), resolve the
 * configuration (defaults < resumed checkpoint < --config file < options), run the trainer. */
#include "cli/cli.h"
#include "trainer/trainer.h"

int cmd_train(int argc, char **argv)
{
	struct trainer_cli cli;
	trainer_cli_init(&cli);
	char *pos[1];
	int np;
	int rc = opt_parse("train", cli.specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (cli.help) {
		opt_usage(stdout, "train", "[--preset tiny|small|gpt2-124m] [--data PATH] [--steps N] [options]", cli.specs);
		printf("\nWrites the run directory (config.json, logs/, metrics.jsonl, ckpt/step-NNNNNN/, summary.json);\n"
		       "see trainer/trainer.h. Without --data it trains on the fortunes corpus (last 5%% for validation).\n");
		return 0;
	}
	struct trainer_config cfg;
	rc = trainer_config_resolve(&cfg, &cli, "train");
	if (rc)
		return rc;
	return trainer_run(&cfg);
}
