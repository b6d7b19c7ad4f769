/* cli/cmd_version.c — `ascent version`. */
#include "cli/cli.h"

#include <cjson/cJSON.h>

int cmd_version(int argc, char **argv)
{
	int help = 0;
	struct opt_spec specs[] = {
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("version", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "version", "", specs);
		return 0;
	}
	struct cpu_info ci;
	cpu_detect(&ci);
	printf("ascent %s\n", ASCENT_VERSION);
	printf("built with gcc %d.%d.%d, cJSON %s\n", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__, cJSON_Version());
	printf("cpu: %s (family %d model 0x%X), %d cpus, avx2=%d avx512f=%d vnni=%d bf16=%d amx=%d\n", ci.brand,
	       ci.family, ci.model, ci.online_cpus, ci.avx2, ci.avx512f, ci.avx512vnni, ci.avx512bf16, ci.amx);
	return 0;
}
