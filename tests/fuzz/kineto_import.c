/* tests/fuzz/kineto_import.c — `ascent import` of a PyTorch profiler trace as a user might hand one
 * over: cut, edited, of another tool, not JSON at all. The input is the trace text (the reader also
 * takes gzip: seeds include one). Every input is imported into a scratch profile through the whole
 * path (streaming reader, sink, collective numbering, links, statistics, atomic rename), then the
 * profile is opened again. A refused input is fine; a crash, leak, hang or stray file is not.
 * The harness is fuzz.h's fuzz_import. */
#include "fuzz.h"

static int read_kineto(struct imp *im, const char *path, const uint8_t *data, size_t len)
{
	return imp_read_kineto_mem(im, path, data, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	fuzz_import("rank-3.json", 0, read_kineto, data, len);
	return 0;
}
