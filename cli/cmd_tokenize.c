/* cli/cmd_tokenize.c — `ascent tokenize INPUT... -o OUT.bin`: text to an llm.c token shard. */
#include "cli/cli.h"
#include "trainer/trainer.h"

#define MAX_INPUTS 4096

int cmd_tokenize(int argc, char **argv)
{
	const char *out = NULL;
	int help = 0, force = 0;
	struct opt_spec specs[] = {
		{ .name = "out", .short_name = 'o', .type = OPT_STR, .dest = &out, .metavar = "OUT.bin",
		  .help = "the shard to write (llm.c format: magic 20240520, version 1, uint16 tokens)" },
		{ .name = "force", .type = OPT_FLAG, .dest = &force,
		  .help = "write over an OUT.bin that is a profile or checkpoint (never over an INPUT)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	static char *pos[MAX_INPUTS];
	int np = 0;
	int rc = opt_parse("tokenize", specs, argc, argv, pos, MAX_INPUTS, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "tokenize", "INPUT... -o OUT.bin", specs);
		printf("\nINPUT: text files or directories of them (bytes become tokens 0-255), or shards.\n");
		return 0;
	}
	if (!out)
		return ascent_error(ASCENT_EUSAGE, "'ascent tokenize' needs -o OUT.bin (the shard to write)");
	if (np == 0)
		return ascent_error(ASCENT_EUSAGE, "'ascent tokenize' needs at least one INPUT (a text file or directory)");
	return trainer_tokenize_run(pos, np, out, 256, force);
}
