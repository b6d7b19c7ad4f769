/* tests/fuzz/fuzz.h — what every libFuzzer target shares: a private scratch folder (for readers
 * that take a path), writing an input into it, quiet logging, and the importers' harness
 * (fuzz_import). Each target is one .c defining
 * LLVMFuzzerTestOneInput (docs/fuzzing.md). A reader may refuse an input with an error; it must
 * never crash, leak, hang or read out of bounds. */
#ifndef ASCENT_FUZZ_H
#define ASCENT_FUZZ_H

#include "common/common.h"
#include "db/db.h"
#include "import/import.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_dir_[4096];

static void fuzz_cleanup_(void)
{
	if (fuzz_dir_[0])
		fs_rm_rf(fuzz_dir_);
}

/* The scratch folder ($TMPDIR, else /dev/shm, else /tmp; made on first use, removed at exit). */
static inline const char *fuzz_dir(void)
{
	if (!fuzz_dir_[0]) {
		/* memory-backed when possible: SQLite's fsyncs on a disk would take most of the time */
		const char *t = getenv("TMPDIR");
		if (!t || !*t)
			t = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
		snprintf(fuzz_dir_, sizeof fuzz_dir_, "%s/ascent-fuzz-XXXXXX", t);
		if (!mkdtemp(fuzz_dir_)) {
			perror("mkdtemp");
			abort();
		}
		atexit(fuzz_cleanup_);
		log_set_level(LOG_ERROR);
	}
	return fuzz_dir_;
}

/* dir/name, written with the input (folders made); out gets the path. */
static inline void fuzz_write(const char *name, const uint8_t *data, size_t len, char *out, size_t n)
{
	snprintf(out, n, "%s/%s", fuzz_dir(), name);
	char *sl = strrchr(out, '/');
	*sl = 0;
	fs_mkdir_p(out);
	*sl = '/';
	FILE *f = fopen(out, "wb");
	if (!f || (len && fwrite(data, 1, len, f) != len) || fclose(f) != 0) {
		perror(out);
		abort();
	}
}

/* The importers' targets share one harness: `ascent import` of one input named `name` into a
 * scratch profile through the whole path (the reader, sink, collective numbering, links,
 * statistics, atomic rename), then the profile opened again. `read` is the reader under test; it
 * gets the input's path and bytes. With `on_disk` the bytes are first written to that path (readers
 * that open files: SQLite reads pages from disk). A refused input is fine; a crash, leak, hang or
 * stray file is not, and neither is a scratch output that does not open or a successful import
 * that is not a readable profile (both abort). */
typedef int (*fuzz_reader)(struct imp *im, const char *path, const uint8_t *data, size_t len);

static inline void fuzz_import(const char *name, int on_disk, fuzz_reader read, const uint8_t *data, size_t len)
{
	static FILE *devnull;   /* for the importer's warnings */
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	char out[4200], in[4200];
	snprintf(out, sizeof out, "%s/out.db", fuzz_dir());
	if (on_disk)
		fuzz_write(name, data, len, in, sizeof in);
	else
		snprintf(in, sizeof in, "%s/%s", fuzz_dir(), name);
	struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .msgs = devnull };
	const char *inputs[1] = { in };
	struct imp *im;
	if (imp_open(&o, inputs, 1, &im) != 0)
		abort();
	if (read(im, in, data, len) == 0) {
		if (imp_finish(im) == 0) {
			struct db *db;
			if (db_open(out, DB_READ, &db) != 0)
				abort();
			db_close(db);
		}
	} else {
		imp_abort(im);
	}
	unlink(out);
	if (on_disk)
		unlink(in);
}

#endif
