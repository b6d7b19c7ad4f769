/* tests/fuzz/fuzz.h — what every libFuzzer target shares: a private scratch folder (for readers
 * that take a path), writing an input into it, and quiet logging. Each target is one .c defining
 * LLVMFuzzerTestOneInput (docs/fuzzing.md). A reader may refuse an input with an error; it must
 * never crash, leak, hang or read out of bounds. */
#ifndef ASCENT_FUZZ_H
#define ASCENT_FUZZ_H

#include "common/common.h"

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

#endif
