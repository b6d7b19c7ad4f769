/* tests/fuzz/ascend_text.c — `ascent import` of a torch_npu output folder as a user might hand one
 * over: its trace_view.json (the text export: a bare array, string times, process names after the
 * events) cut, edited or not JSON at all, its profiler_info_N.json damaged, and other files beside
 * the trace. The input is three parts split at NUL bytes: file names (one per line) made beside the
 * trace in ASCEND_PROFILER_OUTPUT (empty files; at most 8, names cut to [A-Za-z0-9_.-]), then
 * profiler_info_3.json, then trace_view.json (a missing part: no such file). The job's folder (its
 * parent) goes through the whole command (imp_run: folder layout, reader by content, sink,
 * statistics, atomic rename), then the profile is opened again. A refused input is fine; a crash,
 * leak, hang or stray file is not. Seeds: cuts of real trace_view.json files
 * (tests/fixtures/ascend) and times that are not decimals. */
#include "fuzz.h"

#include <ctype.h>

/* The next part of data (up to a NUL or the end): *part, *n; returns the rest's start. */
static const uint8_t *next_part(const uint8_t *p, const uint8_t *end, const uint8_t **part, size_t *n)
{
	const uint8_t *z = p ? memchr(p, 0, (size_t)(end - p)) : NULL;
	*part = p;
	*n = p ? (size_t)((z ? z : end) - p) : 0;
	return z ? z + 1 : NULL;
}

static void write_in(const char *dir, const char *name, const uint8_t *data, size_t len)
{
	char path[4200], rel[4300];
	snprintf(rel, sizeof rel, "%s/%s", dir, name);
	fuzz_write(rel, data, len, path, sizeof path);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	static FILE *devnull;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	const uint8_t *end = data + len, *names, *info, *trace;
	size_t nnames, ninfo, ntrace;
	const uint8_t *rest = next_part(len ? data : NULL, end, &names, &nnames);
	int has_info = rest != NULL, has_trace;
	rest = next_part(rest, end, &info, &ninfo);
	has_trace = rest != NULL;
	next_part(rest, end, &trace, &ntrace);
	if (!has_trace) {   /* fewer than three parts: the whole input is the trace */
		trace = data;
		ntrace = len;
		has_trace = 1;
		nnames = 0;
		has_info = 0;
	}

	char job[4200], out[4200];
	snprintf(job, sizeof job, "%s/job", fuzz_dir());
	snprintf(out, sizeof out, "%s/out.db", fuzz_dir());
	const char *rank = "job/rank3_ascend_pt", *outdir = "job/rank3_ascend_pt/ASCEND_PROFILER_OUTPUT";
	if (has_trace)
		write_in(outdir, "trace_view.json", trace, ntrace);
	if (has_info)
		write_in(rank, "profiler_info_3.json", info, ninfo);
	int made = 0;
	for (size_t i = 0; i < nnames && made < 8;) {   /* the other files beside the trace */
		char name[65];
		size_t k = 0;
		for (; i < nnames && names[i] != '\n'; i++)
			if (k < 64 && (isalnum(names[i]) || names[i] == '_' || names[i] == '-' || (names[i] == '.' && k)))
				name[k++] = (char)names[i];
		i++;
		name[k] = 0;
		if (k && strcmp(name, "trace_view.json")) {
			write_in(outdir, name, (const uint8_t *)"", 0);
			made++;
		}
	}
	struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .msgs = devnull };
	const char *inputs[1] = { job };
	if (imp_run(&o, inputs, 1) == 0) {
		struct db *db;
		if (db_open(out, DB_READ, &db) != 0)
			abort();
		db_close(db);
	}
	unlink(out);
	fs_rm_rf(job);
	return 0;
}
