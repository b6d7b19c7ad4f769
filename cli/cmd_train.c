/* cli/cmd_train.c — `ascent train` (alone or under mpirun): parse the options (trainer's field
 * table), resolve the configuration (defaults < resumed checkpoint < --config file < options),
 * run the trainer on every rank. */
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
		printf("\nWrites the run directory (config.json, logs/rank-NNNNN.log, metrics.jsonl, ckpt/step-NNNNNN/,\n"
		       "summary.json, and trace.db with --profile); see trainer/trainer.h. Without --data it trains on the\n"
		       "fortunes corpus (last 5%% for validation).\n"
		       "\nDistributed: mpirun -np N ascent train --dp D --tp T --pp P ... with D x T x P = N (TP innermost,\n"
		       "then DP, then PP). --batch is the GLOBAL batch of one accumulation round, so runs in any layout\n"
		       "with the same seed and batch read the same data; metrics.jsonl has the global mean loss per step.\n"
		       "Checkpoints are unsharded (Hugging Face layout): resume them in any layout.\n");
		return 0;
	}
	struct trainer_config cfg;
	rc = trainer_config_resolve(&cfg, &cli, "train");
	if (rc)
		return rc;
	return trainer_run(&cfg);
}
