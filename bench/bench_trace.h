/* bench/bench_trace.h — a PyTorch profiler trace of any size built from a real one, for the import
 * benches: the fixture's events (tests/fixtures/kineto/nccl_parser_config__nccl_data.json.gz, a
 * 2-rank DDP job's rank 0) repeated with shifted times, step numbers and link ids; reading a gzip
 * file whole (read_gz) and an import measured in a child process (bench_import_child). Run from
 * the repository root. */
#ifndef ASCENT_BENCH_TRACE_H
#define ASCENT_BENCH_TRACE_H

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/common.h"
#include "import/import.h"

/* User + system CPU seconds of a rusage. */
static inline double rusage_cpu_s(const struct rusage *r)
{
	return (double)r->ru_utime.tv_sec + (double)r->ru_stime.tv_sec +
	       ((double)r->ru_utime.tv_usec + (double)r->ru_stime.tv_usec) / 1e6;
}

#define FIXTURE "tests/fixtures/kineto/nccl_parser_config__nccl_data.json.gz"

static inline char *read_gz(const char *path, size_t *len)
{
	gzFile g = gzopen(path, "rb");
	if (!g)
		return NULL;
	size_t cap = 1 << 24, n = 0;
	char *b = malloc(cap + 1);
	int r;
	while (b && (r = gzread(g, b + n, (unsigned)(cap - n))) > 0) {
		n += (size_t)r;
		if (n == cap) {
			char *b2 = realloc(b, 2 * cap + 1);
			if (!b2) {
				free(b);
				b = NULL;
				break;
			}
			b = b2;
			cap *= 2;
		}
	}
	gzclose(g);
	if (b)
		b[n] = 0;
	*len = n;
	return b;
}

/* Import the files with `jobs` workers (imp_run) in a child process into `out` (an earlier one
 * removed first): wall seconds, CPU seconds (user + system of the child and its workers: what the
 * import cost the host's cores, whatever their number), peak RSS of the child and of its largest
 * worker (MB). −1 when the import failed (its message on stderr). */
static inline int bench_import_child(const char *const *files, int n, const char *out, int jobs, double *secs,
				     double *cpu, double *rss, double *worker_rss)
{
	int pipefd[2];
	if (pipe(pipefd) != 0)
		return -1;
	unlink(out);
	int64_t t0 = clock_ns();
	pid_t p = fork();
	if (p == 0) {
		close(pipefd[0]);
		struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .jobs = jobs };
		int rc = imp_run(&o, files, n);
		if (rc)
			fprintf(stderr, "bench: the import failed: %s\n", ascent_errmsg());
		struct rusage ch;
		getrusage(RUSAGE_CHILDREN, &ch);
		double w = (double)ch.ru_maxrss / 1024.0;
		if (write(pipefd[1], &w, sizeof w) != (ssize_t)sizeof w)
			rc = -1;
		_exit(rc ? 1 : 0);
	}
	close(pipefd[1]);
	struct rusage ru;
	int st;
	double w = 0;
	ssize_t got = p > 0 ? read(pipefd[0], &w, sizeof w) : -1;
	close(pipefd[0]);
	if (p < 0 || wait4(p, &st, 0, &ru) != p || !WIFEXITED(st) || WEXITSTATUS(st) || got != (ssize_t)sizeof w)
		return -1;
	*secs = (double)(clock_ns() - t0) / 1e9;
	*cpu = rusage_cpu_s(&ru);   /* wait4's usage holds the workers the child waited for */
	*rss = (double)ru.ru_maxrss / 1024.0;
	*worker_rss = w;
	return 0;
}

/* Write the trace of `rank` of `world`: the fixture's events repeated to target_bytes, copy c shifted by c × span µs, its steps
 * renumbered after the previous copy's, its link ids moved out of the way. Returns events written. */

static inline int64_t generate(const char *out, int64_t target_bytes, int rank, int world, int64_t *bytes)
{
	size_t len;
	char *txt = read_gz(FIXTURE, &len);
	if (!txt) {
		fprintf(stderr, "cannot read %s (run from the repository root)\n", FIXTURE);
		return -1;
	}
	cJSON *doc = cJSON_Parse(txt);
	free(txt);
	cJSON *evs = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
	if (!cJSON_IsArray(evs))
		return -1;
	double lo = INFINITY, hi = -INFINITY;
	cJSON *e;
	cJSON_ArrayForEach(e, evs)
	{
		cJSON *ts = cJSON_GetObjectItemCaseSensitive(e, "ts"), *d = cJSON_GetObjectItemCaseSensitive(e, "dur");
		if (!cJSON_IsNumber(ts))
			continue;
		lo = fmin(lo, ts->valuedouble);
		hi = fmax(hi, ts->valuedouble + (cJSON_IsNumber(d) ? d->valuedouble : 0));
	}
	double span = ceil(hi - lo) + 1000;
	/* each event rendered once without ts and id; a copy writes {"ts":T,"id":I, + the rest */
	int ne = cJSON_GetArraySize(evs), k = 0;
	char **rest = calloc((size_t)ne, sizeof *rest);
	double *ts0 = calloc((size_t)ne, sizeof *ts0), *id0 = calloc((size_t)ne, sizeof *id0);
	int *step0 = calloc((size_t)ne, sizeof *step0), *meta = calloc((size_t)ne, sizeof *meta);
	if (!rest || !ts0 || !id0 || !step0 || !meta)
		return -1;
	cJSON_ArrayForEach(e, evs)
	{
		cJSON *x = cJSON_Duplicate(e, 1);
		cJSON *ts = cJSON_DetachItemFromObjectCaseSensitive(x, "ts");
		cJSON *id = cJSON_DetachItemFromObjectCaseSensitive(x, "id");
		cJSON *nm = cJSON_GetObjectItemCaseSensitive(x, "name"), *ph = cJSON_GetObjectItemCaseSensitive(x, "ph");
		ts0[k] = cJSON_IsNumber(ts) ? ts->valuedouble : NAN;
		id0[k] = cJSON_IsNumber(id) ? id->valuedouble : NAN;
		step0[k] = cJSON_IsString(nm) && !strncmp(nm->valuestring, "ProfilerStep#", 13) ? atoi(nm->valuestring + 13) : -1;
		meta[k] = cJSON_IsString(ph) && !strcmp(ph->valuestring, "M");
		if (step0[k] >= 0)
			cJSON_DeleteItemFromObjectCaseSensitive(x, "name");
		cJSON_Delete(ts);
		cJSON_Delete(id);
		char *t = cJSON_PrintUnformatted(x);
		cJSON_Delete(x);
		if (!t)
			return -1;
		rest[k++] = t;
	}
	FILE *f = fopen(out, "w");
	if (!f)
		return -1;
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	fprintf(f, "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d},\n"
		   "\"traceEvents\": [\n", rank, world);
	int64_t n = 0, w = 0;
	for (int c = 0; w < target_bytes; c++) {
		for (int i = 0; i < ne; i++) {
			if (meta[i] && c > 0)
				continue;
			w += fprintf(f, "%s{", n ? ",\n" : "");
			if (!isnan(ts0[i]))
				w += fprintf(f, "\"ts\":%.3f,", ts0[i] + c * span);
			if (!isnan(id0[i]))
				w += fprintf(f, "\"id\":%.0f,", id0[i] + (double)c * 10000000.0);
			if (step0[i] >= 0)
				w += fprintf(f, "\"name\":\"ProfilerStep#%d\",", step0[i] + 3 * c);
			w += fprintf(f, "%s", rest[i] + 1);
			n++;
		}
	}
	for (int i = 0; i < ne; i++)
		free(rest[i]);
	free(rest);
	free(ts0);
	free(id0);
	free(step0);
	free(meta);
	w += fprintf(f, "\n], \"baseTimeNanoseconds\": 1711964646000000000}\n");
	cJSON_Delete(doc);
	if (fclose(f) != 0)
		return -1;
	*bytes = w;
	return n;
}

#endif
