/* tests/fuzz/ascend_import.c — `ascent import` of an Ascend profiler database
 * (ascend_pytorch_profiler_N.db) as a user might hand one over: cut, damaged, of another tool, not
 * SQLite at all. The input bytes are written to a scratch .db file (the reader opens files: SQLite
 * reads pages from disk) and imported through the whole path (the reader's queries, sink,
 * collectives, statistics, atomic rename), then the profile is opened again. A refused input is
 * fine; a crash, leak, hang or stray file is not. The seed is rank 0 of
 * tests/fixtures/ascend/make_fixture.py.
 *
 * Built by the fuzz harness (clang -fsanitize=fuzzer, which brings libFuzzer's main). Without it
 * (the plain build), the weak main below replays the files given as arguments. */
#include "common/common.h"
#include "db/db.h"
#include "import/import.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[4096];
static FILE *devnull;

static void cleanup(void)
{
	if (dir[0])
		fs_rm_rf(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	if (!dir[0]) {
		const char *t = getenv("TMPDIR");
		snprintf(dir, sizeof dir, "%s/ascent-fuzz-ascend-XXXXXX", t && *t ? t : "/tmp");
		if (!mkdtemp(dir))
			abort();
		atexit(cleanup);
		if (!(devnull = fopen("/dev/null", "w")))   /* for the importer's warnings */
			abort();
	}
	char out[4200], in[4200];
	snprintf(out, sizeof out, "%s/out.db", dir);
	snprintf(in, sizeof in, "%s/ascend_pytorch_profiler_0.db", dir);
	FILE *f = fopen(in, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0)
		abort();
	struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .msgs = devnull };
	const char *inputs[1] = { in };
	struct imp *im;
	if (imp_open(&o, inputs, 1, &im) != 0)
		abort();   /* a scratch output must always open */
	if (imp_read_ascend(im, in) == 0) {
		if (imp_finish(im) == 0) {
			struct db *db;
			if (db_open(out, DB_READ, &db) != 0)
				abort();   /* an import that succeeded must be a readable profile */
			db_close(db);
		}
	} else {
		imp_abort(im);
	}
	unlink(out);
	unlink(in);
	return 0;
}

/* The plain build's replayer: each argument is an input file. */
__attribute__((weak)) int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char *d;
		size_t n;
		if (fs_read_all(argv[i], &d, &n) != 0) {
			fprintf(stdout, "%s: %s\n", argv[i], ascent_errmsg());
			return 2;
		}
		LLVMFuzzerTestOneInput((const uint8_t *)d, n);
		free(d);
	}
	return 0;
}
