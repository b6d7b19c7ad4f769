/* tests/fuzz/nsys_import.c — `ascent import` of an Nsight Systems SQLite export as a user might hand
 * one over: cut, damaged, of another tool, not SQLite at all. The input bytes are written to a
 * scratch .sqlite file (the reader opens files: SQLite reads pages from disk) and imported through
 * the whole path (the reader's queries, sink, links, statistics, atomic rename), then the profile is
 * opened again. A refused input is fine; a crash, leak, hang or stray file is not. The seed is a
 * small export made from the real fixture's tables.
 * The harness is fuzz.h's fuzz_import. */
#include "fuzz.h"

static int read_nsys(struct imp *im, const char *path, const uint8_t *data, size_t len)
{
	(void)data, (void)len;
	return imp_read_nsys(im, path, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	fuzz_import("in.sqlite", 1, read_nsys, data, len);
	return 0;
}
