/* tests/fuzz/flight_dump.c — comm/'s flight-recorder dumps read by `ascent diag hang`
 * (diag_hang_run): the input is split at its first NUL byte into two ranks' dumps,
 * RUN/flight/rank-00000.json and rank-00001.json, so matching across ranks is exercised. */
#include "fuzz.h"
#include "diag/diag.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char path[4200], run[4200];
	const uint8_t *nul = memchr(data, 0, len);
	size_t n0 = nul ? (size_t)(nul - data) : len;
	fuzz_write("run/flight/rank-00000.json", data, n0, path, sizeof path);
	snprintf(path, sizeof path, "%s/run/flight/rank-00001.json", fuzz_dir());
	unlink(path);
	if (nul)
		fuzz_write("run/flight/rank-00001.json", nul + 1, len - n0 - 1, path, sizeof path);
	snprintf(run, sizeof run, "%s/run", fuzz_dir());
	struct diag_report r;
	if (diag_report_init(&r) == 0) {
		(void)diag_hang_run(run, 1.0, &r);
		diag_report_release(&r);
	}
	return 0;
}
