/* bench/bench_import.c — `ascent import` at scale: a PyTorch profiler trace of ≥ 1 GB built by
 * repeating a real fixture's steps (tests/fixtures/kineto/nccl_parser_config__nccl_data.json.gz,
 * a 2-rank DDP job's rank 0) with shifted times, step numbers and link ids, then imported the way
 * the command does (imp_run) in a child process. JSON lines:
 *   generate:  bytes and events of the trace written (s)
 *   phases:    the import's wall time split: parsing and inserting (events per second of that
 *              phase; the writer thread's busy time and the reader's waits for it), links and
 *              ranks after it, db_finalize (indexes, op_stat, step_stat)
 *   import:    events written per second (goal ≥ 1M/s), peak RSS of the importing process
 *              (goal ≤ 300 MB), wall seconds, output bytes
 *   view:      cache build (once per file) and the first screen (open + overview, goal < 1 s)
 *
 *   bench_import [--mb N] [--keep DIR]     (ASCENT_BENCH_IMPORT_MB also sets N; default 1100)
 * Run from the repository root (make bench does). */
#include "common/common.h"
#include "db/db.h"
#include "import/import.h"
#include "viewer/viewer.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define FIXTURE "tests/fixtures/kineto/nccl_parser_config__nccl_data.json.gz"

static double ms_since(int64_t t0)
{
	return (double)(clock_ns() - t0) / 1e6;
}

static char *read_gz(const char *path, size_t *len)
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

/* Write the trace: the fixture's events `copies` times, copy c shifted by c × span µs, its steps
 * renumbered after the previous copy's, its link ids moved out of the way. Returns events written. */
static int64_t generate(const char *out, int64_t target_bytes, int64_t *bytes)
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
	fprintf(f, "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 2},\n"
		   "\"traceEvents\": [\n");
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

int main(int argc, char **argv)
{
	int64_t mb = getenv("ASCENT_BENCH_IMPORT_MB") ? atoll(getenv("ASCENT_BENCH_IMPORT_MB")) : 1100;
	const char *keep = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mb") && i + 1 < argc)
			mb = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else {
			fprintf(stderr, "usage: bench_import [--mb N] [--keep DIR]\n");
			return 2;
		}
	}
	char dir[4096] = "/tmp/ascent-bench-import-XXXXXX", trace[4200], out[4200];
	if (keep)
		snprintf(dir, sizeof dir, "%s", keep);
	else if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(trace, sizeof trace, "%s/rank-0.json", dir);
	snprintf(out, sizeof out, "%s/trace.db", dir);
	/* generate in a child, so its memory never counts against the import */
	int64_t t0 = clock_ns();
	pid_t p = fork();
	if (p == 0) {
		int64_t bytes = 0;
		int64_t n = generate(trace, mb << 20, &bytes);
		if (n < 0)
			_exit(1);
		printf("{\"bench\":\"import\",\"what\":\"generate\",\"source\":\"%s\",\"bytes\":%" PRId64 ",\"records\":%" PRId64
		       ",\"s\":%.2f}\n",
		       FIXTURE, bytes, n, ms_since(t0) / 1e3);
		fflush(stdout);
		_exit(0);
	}
	int st;
	if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "generating the trace failed\n");
		return 1;
	}
	/* import in a child: its peak RSS is the importer's */
	t0 = clock_ns();
	p = fork();
	if (p == 0) {
		struct imp_phases ph = { 0 };
		struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .phases = &ph };
		const char *in[1] = { trace };
		if (imp_run(&o, in, 1) != 0) {
			fprintf(stderr, "import failed: %s\n", ascent_errmsg());
			_exit(1);
		}
		/* the phase split: parsing and inserting (two threads) vs what comes after */
		double rd = (double)ph.read_ns / 1e9;
		printf("{\"bench\":\"import\",\"what\":\"phases\",\"parse_insert_s\":%.2f,\"parse_insert_events_per_s\":%.0f,"
		       "\"reader_cpu_s\":%.2f,\"writer_cpu_s\":%.2f,\"writer_busy_s\":%.2f,\"reader_wait_s\":%.2f,\"post_s\":%.2f,"
		       "\"finalize_s\":%.2f}\n",
		       rd, rd > 0 ? (double)ph.events / rd : 0, (double)ph.reader_cpu_ns / 1e9, (double)ph.writer_cpu_ns / 1e9,
		       (double)ph.writer_busy_ns / 1e9, (double)ph.reader_wait_ns / 1e9,
		       (double)ph.post_ns / 1e9, (double)ph.finalize_ns / 1e9);
		fflush(stdout);
		_exit(0);
	}
	struct rusage ru;
	if (p < 0 || wait4(p, &st, 0, &ru) != p || !WIFEXITED(st) || WEXITSTATUS(st)) {
		fprintf(stderr, "the import failed\n");
		return 1;
	}
	double secs = ms_since(t0) / 1e3;
	struct db *db;
	int64_t ev = 0, fbytes = 0;
	if (db_open(out, DB_READ, &db) == 0) {
		db_count(db, "event", &ev);
		fbytes = db_file_bytes(db);
		db_close(db);
	}
	double rate = secs > 0 ? (double)ev / secs : 0, rss_mb = (double)ru.ru_maxrss / 1024.0;
	double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
	/* on a shared host the wall rate depends on the load: the CPU seconds say what the importer costs */
	printf("{\"bench\":\"import\",\"what\":\"import\",\"events\":%" PRId64 ",\"s\":%.2f,\"cpu_s\":%.2f,"
	       "\"events_per_s\":%.0f,\"events_per_cpu_s\":%.0f,\"goal_events_per_s\":1000000,\"peak_rss_mb\":%.1f,"
	       "\"goal_rss_mb\":300,\"db_bytes\":%" PRId64 ",\"within_goal\":%s}\n",
	       ev, secs, cpu, rate, cpu > 0 ? (double)ev / cpu : 0, rss_mb, fbytes,
	       rate >= 1e6 && rss_mb <= 300 ? "true" : "false");
	fflush(stdout);
	/* the viewer on the result: the cache build (once per file), then the first screen */
	struct viewer_options vo = { .path = out, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_OVERVIEW };
	struct viewer *v;
	int64_t built = 0;
	if (viewer_open(&vo, &v, &built) != 0) {
		fprintf(stderr, "view: %s\n", ascent_errmsg());
		return 1;
	}
	viewer_free(v);
	printf("{\"bench\":\"import\",\"what\":\"view_cache_build\",\"events\":%" PRId64 ",\"s\":%.2f}\n", ev,
	       (double)built / 1e3);
	struct vw_screen s;
	vw_screen_init(&s, 120, 40);
	t0 = clock_ns();
	if (viewer_open(&vo, &v, NULL) != 0) {
		fprintf(stderr, "view: %s\n", ascent_errmsg());
		return 1;
	}
	viewer_render(v, &s);
	double ms = ms_since(t0);
	printf("{\"bench\":\"import\",\"what\":\"view_first_screen\",\"ms\":%.2f,\"goal_ms\":1000,\"within_goal\":%s}\n", ms,
	       ms < 1000 ? "true" : "false");
	viewer_free(v);
	vw_screen_release(&s);
	if (!keep)
		fs_rm_rf(dir);
	return 0;
}
