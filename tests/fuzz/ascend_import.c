/* tests/fuzz/ascend_import.c — `ascent import` of an Ascend profiler database
 * (ascend_pytorch_profiler_N.db) as a user might hand one over: cut, damaged, of another tool, not
 * SQLite at all. The input bytes are written to a scratch .db file (the reader opens files: SQLite
 * reads pages from disk) and imported through the whole path (the reader's queries, sink,
 * collectives, statistics, atomic rename), then the profile is opened again. A refused input is
 * fine; a crash, leak, hang or stray file is not. The seed is rank 0 of
 * tests/fixtures/ascend/make_fixture.py.
 * The harness is fuzz.h's fuzz_import. */
#include "fuzz.h"

static int read_ascend(struct imp *im, const char *path, const uint8_t *data, size_t len)
{
	(void)data, (void)len;
	return imp_read_ascend(im, path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	fuzz_import("ascend_pytorch_profiler_0.db", 1, read_ascend, data, len);
	return 0;
}
