/* bench/bench_bigjob.c — a big job from real rank traces: N ranks imported with `ascent import -j J`,
 * then the ranks view and the advisor on the result.
 *
 * The job: the two ranks of a 128-rank NCCL job in /work/shared/data (copied as
 * tests/fixtures/kineto/trace_filter__sampled_rank-{0,1}.json.gz: 4,855 / 4,720 events, steps
 * 551-552), rank r made from source rank r % 2 with:
 *   - distributedInfo {"rank": r, "world_size": N} and a pg_config naming its pipeline group;
 *   - 8 ranks per host; the file named as torch's tensorboard_trace_handler names it
 *     (node0003_4037.1682725897226.pt.trace.json: host, pid); host h's clock shifted by
 *     ((7h mod 11) − 5) ms;
 *   - the NCCL kernels (SendRecv, 10 per rank) given the group of pipeline neighbours r and r xor 8
 *     (the same local GPU on the neighbouring host: "Process Group Name" "pp<low>", "Process Group
 *     Ranks" "[low, high]", 4 MiB of Byte per call), so each call is matched across the two ranks;
 *   - planted: rank N/2 + 3 runs 20 % slower (every time from its first event and every duration
 *     × 1.2), and the link between ranks N/4 + 1 and N/4 + 9 (hosts N/32 and N/32 + 1) is slow:
 *     their NCCL kernels take 3 × as long.
 * The files are written to a temporary folder, imported, and removed with it.
 *
 * Per N it prints JSON lines:
 *   generate:  files, bytes, events, s
 *   import:    per -j: wall s, events/s, peak RSS of the importing process and of its largest
 *              worker (MB; the goal is ≤ 500 MB at 1,024 ranks), OUT.db bytes
 *   import also: cpu_s (the importing process and its workers, user + system) and cores_used
 *              (cpu_s / s)
 *   ratio:     -j 1 s / -j 2 s, and j2_ceiling: 2 / the cores -j 1 used (the most two workers
 *              could gain on two cores at no more CPU than one)
 *   view:      the ranks view's first screen right after the import (open: the summary tables are
 *              already built by the import, + render at 200 × 50; goal < 1000 ms), then each key
 *              (key + render; goal < 100 ms; cpu_ms: this process's CPU time, which a busy host
 *              does not inflate): sort by each column, reverse, page down, jump to a rank
 *              (: N Enter), its lane on the timeline (Enter) and back, each view in turn (the first
 *              switch to a view loads it); then under a step restriction (S, the first step, Enter;
 *              later S, the first two steps, Enter): the devices, steps, ops, comm, overview and
 *              ranks views, R (next rank) twice with the devices view between, x (all again); then the
 *              traffic heat map's first screen by host pair (key m: heat_map_first_screen), a page
 *              down in it, and m again
 *   advise:    the rules rank.slow / link.slow (each two-rank group's NCCL kernels on its link): fired or
 *              not, its title, whether it names the planted rank / link; host.slow, which has nothing
 *              planted: whether it stays quiet
 *
 *   bench_bigjob [--ranks 64,256] [--jobs 1,2] [--keep DIR]
 *   bench_bigjob --profile DIR/bigjob-N.db     (a kept profile: the view and advise lines only)
 *   ASCENT_BENCH_BIGJOB_RANKS, ASCENT_BENCH_BIGJOB_JOBS set the lists too (make bench: 64,256; the
 *   1,024-rank job with ASCENT_BENCH_BIGJOB_RANKS=64,256,1024). --keep DIR keeps the profile of
 *   the last N as DIR/bigjob-N.db. Run from the repository root. Exits non-zero only when
 *   something fails (a file not written, an import or a query that errs); speed and the advisor's
 *   answer are reported, never judged. */
#include "common/common.h"
#include "db/db.h"
#include "diag/diag.h"
#include "import/import.h"
#include "viewer/viewer.h"
#include "bench/bench_trace.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#define SRC_FMT "tests/fixtures/kineto/trace_filter__sampled_rank-%d.json.gz"
#define PER_HOST 8
#define SLOW_FACTOR 1.2
#define LINK_FACTOR 3.0
#define LINK_BYTES (4 << 20)

/* One source rank's events, each rendered once without its ts, dur (and, for an NCCL kernel, its args). */
struct src {
	int n;
	char **rest;        /* the event's JSON after its '{', without ts/dur(/args) */
	char **args;        /* NCCL kernels: their args' members without the braces ("" none); else NULL */
	double *ts, *dur;   /* NAN when absent */
	double lo;          /* the earliest ts */
	int pid;            /* the CPU process id (the file name holds it) */
};


static int src_load(struct src *s, int which)
{
	char path[256];
	snprintf(path, sizeof path, SRC_FMT, which);
	size_t len;
	char *txt = read_gz(path, &len);
	if (!txt) {
		fprintf(stderr, "bench_bigjob: cannot read %s (run from the repository root)\n", path);
		return -1;
	}
	cJSON *doc = cJSON_Parse(txt);
	free(txt);
	cJSON *evs = cJSON_GetObjectItemCaseSensitive(doc, "traceEvents");
	if (!cJSON_IsArray(evs)) {
		fprintf(stderr, "bench_bigjob: %s has no traceEvents array\n", path);
		cJSON_Delete(doc);
		return -1;
	}
	int ne = cJSON_GetArraySize(evs), k = 0;
	memset(s, 0, sizeof *s);
	s->rest = calloc((size_t)ne, sizeof *s->rest);
	s->args = calloc((size_t)ne, sizeof *s->args);
	s->ts = calloc((size_t)ne, sizeof *s->ts);
	s->dur = calloc((size_t)ne, sizeof *s->dur);
	if (!s->rest || !s->args || !s->ts || !s->dur) {
		cJSON_Delete(doc);
		return -1;
	}
	s->lo = INFINITY;
	cJSON *e;
	cJSON_ArrayForEach(e, evs)
	{
		cJSON *x = cJSON_Duplicate(e, 1);
		cJSON *ts = cJSON_DetachItemFromObjectCaseSensitive(x, "ts");
		cJSON *dur = cJSON_DetachItemFromObjectCaseSensitive(x, "dur");
		cJSON *cat = cJSON_GetObjectItemCaseSensitive(x, "cat"), *nm = cJSON_GetObjectItemCaseSensitive(x, "name");
		cJSON *pid = cJSON_GetObjectItemCaseSensitive(x, "pid");
		s->ts[k] = cJSON_IsNumber(ts) ? ts->valuedouble : NAN;
		s->dur[k] = cJSON_IsNumber(dur) ? dur->valuedouble : NAN;
		if (cJSON_IsNumber(ts) && ts->valuedouble < s->lo)
			s->lo = ts->valuedouble;
		if (cJSON_IsString(cat) && !strcmp(cat->valuestring, "cpu_op") && cJSON_IsNumber(pid))
			s->pid = pid->valueint;
		if (cJSON_IsString(cat) && !strcmp(cat->valuestring, "kernel") && cJSON_IsString(nm) &&
		    strstr(nm->valuestring, "nccl")) {
			cJSON *a = cJSON_DetachItemFromObjectCaseSensitive(x, "args");
			char *t = a ? cJSON_PrintUnformatted(a) : NULL;
			cJSON_Delete(a);
			size_t len = t ? strlen(t) : 0;
			/* "{...}" → "..." */
			s->args[k] = strdup(len > 2 ? t + 1 : "");
			if (s->args[k] && len > 2)
				s->args[k][len - 2] = 0;
			free(t);
		}
		cJSON_Delete(ts);
		cJSON_Delete(dur);
		char *t = cJSON_PrintUnformatted(x);
		cJSON_Delete(x);
		if (!t)
			return -1;
		s->rest[k++] = t;
	}
	s->n = k;
	cJSON_Delete(doc);
	return 0;
}

static void src_free(struct src *s)
{
	for (int i = 0; i < s->n; i++) {
		free(s->rest[i]);
		free(s->args[i]);
	}
	free(s->rest);
	free(s->args);
	free(s->ts);
	free(s->dur);
}

/* What was planted in a job of n ranks. */
static int slow_rank(int n)
{
	return n / 2 + 3;
}
static void slow_link(int n, int *a, int *b)
{
	*a = n / 4 + 1;
	*b = *a ^ PER_HOST;
}

/* Write rank r of n into dir; its path into path. Returns the events written, −1 on failure. */
static int64_t write_rank(const struct src *s, const char *dir, int r, int n, char *path, size_t pathlen, int64_t *bytes)
{
	int host = r / PER_HOST, peer = r ^ PER_HOST, lo = r < peer ? r : peer, hi = r < peer ? peer : r;
	int la, lb;
	slow_link(n, &la, &lb);
	double shift_us = (double)((7 * host) % 11 - 5) * 1000.0;
	double stretch = r == slow_rank(n) ? SLOW_FACTOR : 1.0;
	double link = r == la || r == lb ? LINK_FACTOR : 1.0;
	snprintf(path, pathlen, "%s/node%04d_%d.1682725897226.pt.trace.json", dir, host, s->pid);
	FILE *f = fopen(path, "w");
	if (!f) {
		fprintf(stderr, "bench_bigjob: cannot write %s: %s\n", path, strerror(errno));
		return -1;
	}
	setvbuf(f, NULL, _IOFBF, 1 << 20);
	int64_t w = 0;
	w += fprintf(f,
		     "{\"schemaVersion\": 1, \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d, "
		     "\"pg_count\": 1, \"pg_config\": [{\"pg_name\": \"pp%d\", \"pg_desc\": \"pipeline\", \"pg_size\": 2, "
		     "\"ranks\": [%d, %d]}]},\n\"traceEvents\": [\n",
		     r, n, lo, lo, hi);
	for (int i = 0; i < s->n; i++) {
		w += fprintf(f, "%s{", i ? ",\n" : "");
		if (!isnan(s->ts[i]))
			w += fprintf(f, "\"ts\":%.3f,", s->lo + (s->ts[i] - s->lo) * stretch + shift_us);
		if (!isnan(s->dur[i]))
			w += fprintf(f, "\"dur\":%.3f,", s->dur[i] * stretch * (s->args[i] ? link : 1.0));
		if (s->args[i])
			w += fprintf(f,
				     "\"args\":{\"Process Group Name\":\"pp%d\",\"Process Group Description\":\"pipeline\","
				     "\"Process Group Ranks\":\"[%d, %d]\",\"Group size\":2,\"In msg nelems\":%d,\"Out msg nelems\":%d,"
				     "\"dtype\":\"Byte\"%s%s},",
				     lo, lo, hi, LINK_BYTES, LINK_BYTES, s->args[i][0] ? "," : "", s->args[i]);
		w += fprintf(f, "%s", s->rest[i] + 1);
	}
	w += fprintf(f, "\n]}\n");
	if (ferror(f) | (fclose(f) != 0)) {
		fprintf(stderr, "bench_bigjob: writing %s failed: %s\n", path, strerror(errno));
		return -1;
	}
	*bytes += w;
	return s->n;
}


static double ms_since(int64_t t0)
{
	return (double)(clock_ns() - t0) / 1e6;
}

/* CPU time of this process (ns): on a shared host a key's wall time includes the time others ran */
static int64_t cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t view_cpu0;

static void view_line(int n, const char *what, double ms, double goal)
{
	double cpu = (double)(cpu_ns() - view_cpu0) / 1e6;
	printf("{\"bench\":\"bigjob\",\"what\":\"view\",\"ranks\":%d,\"step\":\"%s\",\"ms\":%.2f,\"cpu_ms\":%.2f,"
	       "\"goal_ms\":%.0f,\"within_goal\":%s}\n",
	       n, what, ms, cpu, goal, ms < goal ? "true" : "false");
	fflush(stdout);
}

/* One key and the render after it, timed; nonzero when either failed. */
static int timed_key(struct viewer *v, struct vw_screen *s, int n, const char *name, int key)
{
	view_cpu0 = cpu_ns();
	int64_t k0 = clock_ns();
	int rc = viewer_key(v, key) < 0 || viewer_render(v, s) != 0;
	view_line(n, name, ms_since(k0), 100);
	if (rc)
		fprintf(stderr, "bench_bigjob: key %s failed: %s\n", name, ascent_errmsg());
	return rc;
}

/* The profile's first two steps (the second = the first when it has one); nonzero when none. */
static int first_steps(const char *out, int64_t *lo, int64_t *hi)
{
	struct db *db;
	struct db_view_step *st = NULL;
	int n = 0;
	if (db_open(out, DB_READ, &db) != 0)
		return -1;
	int rc = db_view_steps(db, DB_FILTER_ALL, &st, &n);
	db_close(db);
	if (!rc && n > 0) {
		*lo = st[0].step;
		*hi = st[n > 1 ? 1 : 0].step;
	}
	free(st);
	return rc || n < 1 ? -1 : 0;
}

/* The ranks view right after the import, then its keys. Run in a child (its own peak RSS). */
static int bench_view(const char *out, int n)
{
	view_cpu0 = cpu_ns();
	int64_t t0 = clock_ns();
	struct viewer_options o = { .path = out, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_RANKS };
	struct viewer *v;
	int64_t built = 0;
	struct vw_screen s;
	if (viewer_open(&o, &v, &built) != 0 || vw_screen_init(&s, 200, 50) != 0) {
		fprintf(stderr, "bench_bigjob: viewing %s failed: %s\n", out, ascent_errmsg());
		return -1;
	}
	if (viewer_render(v, &s) != 0) {
		fprintf(stderr, "bench_bigjob: the ranks view failed: %s\n", ascent_errmsg());
		return -1;
	}
	view_line(n, "first_screen", ms_since(t0), 1000);
	printf("{\"bench\":\"bigjob\",\"what\":\"view_tables\",\"ranks\":%d,\"built_at_open_ms\":%lld}\n", n, (long long)built);
	char sel[64];
	snprintf(sel, sizeof sel, "%s", viewer_selected_name(v));
	printf("{\"bench\":\"bigjob\",\"what\":\"view_top_row\",\"ranks\":%d,\"row\":\"%s\",\"planted_slow_rank\":%d}\n", n, sel,
	       slow_rank(n));
	static const struct {
		const char *name;
		int key;
	} K[] = { { "sort_next_col", '>' }, { "sort_next_col", '>' }, { "sort_next_col", '>' }, { "sort_prev_col", '<' },
		  { "reverse", 'r' }, { "page_down", VK_PGDN }, { "end", VK_END }, { "home", VK_HOME }, { "down", 'j' } };
	int rc = 0;
	for (size_t i = 0; i < sizeof K / sizeof K[0] && !rc; i++)
		rc = timed_key(v, &s, n, K[i].name, K[i].key);
	/* jump to the last rank: ':' then its number, Enter */
	char num[16];
	snprintf(num, sizeof num, "%d", n - 1);
	if (!rc)
		rc = timed_key(v, &s, n, "jump_open", ':');
	for (const char *c = num; *c && !rc; c++)
		rc = timed_key(v, &s, n, "jump_digit", *c);
	if (!rc)
		rc = timed_key(v, &s, n, "jump_enter", VK_ENTER);
	printf("{\"bench\":\"bigjob\",\"what\":\"view_jump\",\"ranks\":%d,\"to\":%d,\"selected\":\"%s\"}\n", n, n - 1,
	       viewer_selected_name(v));
	/* the selected rank's lane on the timeline and back; then every view in turn, back to ranks */
	static const struct {
		const char *name;
		int key;
	} K2[] = { { "drill_to_lane", VK_ENTER }, { "back", VK_BACKSPACE }, { "view_overview", '1' }, { "view_ops", '2' },
		   { "view_comm", '3' }, { "view_steps", '4' }, { "view_memory", '6' }, { "view_timeline", '7' },
		   { "view_devices", '8' }, { "view_timeline_marked", '7' }, { "view_ranks", '5' } };
	for (size_t i = 0; i < sizeof K2 / sizeof K2[0] && !rc; i++)
		rc = timed_key(v, &s, n, K2[i].name, K2[i].key);
	/* under a step restriction (S A Enter: the first step; then S A:B Enter: the first two steps) the
	 * views that read per-step figures, R (next rank), and x (all again) */
	int64_t lo = -1, hi = -1;
	if (!rc && first_steps(out, &lo, &hi) == 0)
		for (int pass = 0; pass < 2 && !rc; pass++) {
			char steps[64], tag[32];
			if (pass == 0)
				snprintf(steps, sizeof steps, "%lld", (long long)lo);
			else
				snprintf(steps, sizeof steps, "%lld:%lld", (long long)lo, (long long)hi);
			snprintf(tag, sizeof tag, "%s", pass == 0 ? "step" : "steps");
			printf("{\"bench\":\"bigjob\",\"what\":\"view_restrict\",\"ranks\":%d,\"steps\":\"%s\"}\n", n, steps);
			rc = timed_key(v, &s, n, "steps_open", 'S');
			for (const char *c = steps; *c && !rc; c++)
				rc = timed_key(v, &s, n, "steps_char", *c);
			char name[64];
			snprintf(name, sizeof name, "%s_enter", tag);
			if (!rc)
				rc = timed_key(v, &s, n, name, VK_ENTER);
			static const struct {
				const char *name;
				int key;
			} K3[] = { { "view_devices", '8' }, { "view_steps", '4' }, { "view_ops", '2' }, { "view_comm", '3' },
				   { "view_overview", '1' }, { "view_ranks", '5' }, { "next_rank", 'R' }, { "view_devices", '8' },
				   { "next_rank", 'R' }, { "all_again", 'x' }, { "view_ranks", '5' } };
			for (size_t i = 0; i < sizeof K3 / sizeof K3[0] && !rc; i++) {
				snprintf(name, sizeof name, "%s_%s", tag, K3[i].name);
				rc = timed_key(v, &s, n, name, K3[i].key);
			}
		}
	/* the traffic heat map ('m'): its first screen by host pair (db_view_heat's one query of view_link
	 * and the render), a page down in it, then on (by rank pair when the job has few ranks, else the
	 * rank table) */
	static const struct {
		const char *name;
		int key;
	} K4[] = { { "heat_map_first_screen", 'm' }, { "heat_map_page_down", VK_PGDN }, { "heat_map_next", 'm' } };
	for (size_t i = 0; i < sizeof K4 / sizeof K4[0] && !rc; i++)
		rc = timed_key(v, &s, n, K4[i].name, K4[i].key);
	vw_screen_release(&s);
	viewer_free(v);
	return rc ? -1 : 0;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s >= 0x20)
			putchar(*s);
	putchar('"');
}

/* The advisor: what rank.slow and link.slow say, and whether they name what was planted. */
static int bench_advise(const char *out, int n)
{
	struct db *db;
	if (db_open(out, DB_READ, &db) != 0) {
		fprintf(stderr, "bench_bigjob: %s\n", ascent_errmsg());
		return -1;
	}
	struct diag_advice a;
	int64_t t0 = clock_ns();
	int rc = diag_advise(db, &a);
	double ms = ms_since(t0);
	db_close(db);
	if (rc) {
		fprintf(stderr, "bench_bigjob: advise failed: %s\n", ascent_errmsg());
		return -1;
	}
	int la, lb;
	slow_link(n, &la, &lb);
	char want_rank[32], want_link[2][64];
	snprintf(want_rank, sizeof want_rank, "rank %d ", slow_rank(n));
	snprintf(want_link[0], sizeof want_link[0], "rank %d ", la);
	snprintf(want_link[1], sizeof want_link[1], "rank %d ", lb);
	/* host.slow: nothing planted (one slow rank of the 8 on its host): it should stay quiet */
	const char *rules[] = { "rank.slow", "link.slow", "host.slow" };
	for (int i = 0; i < 3; i++) {
		const struct diag_finding *f = diag_advice_find(&a, rules[i]);
		const struct diag_rule_result *r = diag_advice_rule(&a, rules[i]);
		int named = i == 0   ? f && strstr(f->title, want_rank) != NULL
			    : i == 1 ? f && strstr(f->title, want_link[0]) && strstr(f->title, want_link[1])
				     : !f;
		printf("{\"bench\":\"bigjob\",\"what\":\"advise\",\"ranks\":%d,\"rule\":\"%s\",\"state\":\"%s\",\"planted\":\"", n,
		       rules[i], !r ? "not run" : r->state == DIAG_RULE_FIRED ? "fired" : r->state == DIAG_RULE_OK ? "ok" : "skipped");
		if (i == 0)
			printf("rank %d", slow_rank(n));
		else if (i == 1)
			printf("rank %d <-> rank %d", la, lb);
		else
			printf("none");
		printf("\",\"%s\":%s,\"says\":", i < 2 ? "names_planted" : "quiet", named ? "true" : "false");
		json_str(f ? f->title : r ? r->note : "");
		printf(",\"advise_ms\":%.0f}\n", ms);
	}
	fflush(stdout);
	diag_advice_release(&a);
	return 0;
}

static int parse_list(const char *s, int *v, int max)
{
	int n = 0;
	for (const char *p = s; *p && n < max;) {
		char *end;
		long x = strtol(p, &end, 10);
		if (end == p || x < 1 || x > 65536)
			return -1;
		v[n++] = (int)x;
		p = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

static int run_job(const struct src *src, int n, const int *jobs, int njobs, const char *keep)
{
	char dir[4096] = "/tmp/ascent-bench-bigjob-XXXXXX", out[4200];
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return -1;
	}
	snprintf(out, sizeof out, "%s/job.db", dir);
	char **files = calloc((size_t)n, sizeof *files);
	int64_t bytes = 0, events = 0, t0 = clock_ns();
	int rc = files ? 0 : -1;
	for (int r = 0; !rc && r < n; r++) {
		char sub[4200];
		snprintf(sub, sizeof sub, "%s/r%d", dir, r);   /* one folder per rank: a host's pid repeats */
		if (mkdir(sub, 0700) != 0 || !(files[r] = malloc(4400))) {
			rc = -1;
			break;
		}
		int64_t e = write_rank(&src[r % 2], sub, r, n, files[r], 4400, &bytes);
		rc = e < 0 ? -1 : 0;
		events += e > 0 ? e : 0;
	}
	if (!rc) {
		printf("{\"bench\":\"bigjob\",\"what\":\"generate\",\"ranks\":%d,\"bytes\":%" PRId64 ",\"records\":%" PRId64
		       ",\"s\":%.2f}\n",
		       n, bytes, events, ms_since(t0) / 1e3);
		fflush(stdout);
	}
	double best1 = 0, best2 = 0, cpu1 = 0;
	for (int j = 0; !rc && j < njobs; j++) {
		double s, c, r, w;
		if (bench_import_child((const char *const *)files, n, out, jobs[j], &s, &c, &r, &w) != 0) {
			fprintf(stderr, "bench_bigjob: the import of %d ranks with -j %d failed\n", n, jobs[j]);
			rc = -1;
			break;
		}
		struct db *db;
		int64_t ev = 0, fbytes = 0;
		if ((rc = db_open(out, DB_READ, &db)) == 0) {
			rc = db_count(db, "event", &ev);
			fbytes = db_file_bytes(db);
			db_close(db);
		}
		if (rc) {
			fprintf(stderr, "bench_bigjob: %s\n", ascent_errmsg());
			break;
		}
		if (jobs[j] == 1) {
			best1 = s;
			cpu1 = c;
		}
		if (jobs[j] == 2)
			best2 = s;
		printf("{\"bench\":\"bigjob\",\"what\":\"import\",\"ranks\":%d,\"jobs\":%d,\"events\":%" PRId64
		       ",\"s\":%.2f,\"cpu_s\":%.2f,\"cores_used\":%.2f,\"events_per_s\":%.0f,\"peak_rss_mb\":%.1f,"
		       "\"worker_peak_rss_mb\":%.1f,\"rss_goal_mb\":500,\"within_goal\":%s,\"db_bytes\":%" PRId64 "}\n",
		       n, jobs[j], ev, s, c, s > 0 ? c / s : 0, s > 0 ? (double)ev / s : 0, r, w,
		       r <= 500 && w <= 500 ? "true" : "false", fbytes);
		fflush(stdout);
	}
	/* j2_ceiling: the most -j 2 could gain on two cores if it cost no more CPU than -j 1, whose reader
	 * and writer threads already keep cpu_s / s cores busy */
	if (!rc && best1 > 0 && best2 > 0 && cpu1 > 0)
		printf("{\"bench\":\"bigjob\",\"what\":\"ratio\",\"ranks\":%d,\"j1_over_j2\":%.2f,\"cores_online\":%ld,"
		       "\"j2_ceiling\":%.2f}\n",
		       n, best1 / best2, sysconf(_SC_NPROCESSORS_ONLN), 2.0 / (cpu1 / best1));
	for (int r = 0; r < n && files; r++)
		if (files[r])
			unlink(files[r]);   /* the traces go before the views: only the profile stays */
	if (!rc) {
		fflush(stdout);
		pid_t p = fork();
		if (p == 0)
			_exit(bench_view(out, n) ? 1 : 0);
		struct rusage ru;
		int st;
		if (p < 0 || wait4(p, &st, 0, &ru) != p || !WIFEXITED(st) || WEXITSTATUS(st))
			rc = -1;
		else
			printf("{\"bench\":\"bigjob\",\"what\":\"view_rss\",\"ranks\":%d,\"peak_rss_mb\":%.1f}\n", n,
			       (double)ru.ru_maxrss / 1024.0);
	}
	if (!rc)
		rc = bench_advise(out, n);
	if (!rc && keep) {
		char kp[4200];
		snprintf(kp, sizeof kp, "%s/bigjob-%d.db", keep, n);
		if (rename(out, kp) != 0) {
			fprintf(stderr, "bench_bigjob: cannot keep %s as %s: %s\n", out, kp, strerror(errno));
			rc = -1;
		}
	}
	for (int r = 0; r < n && files; r++)
		free(files[r]);
	free(files);
	fs_rm_rf(dir);
	return rc;
}

int main(int argc, char **argv)
{
	const char *rl = getenv("ASCENT_BENCH_BIGJOB_RANKS"), *jl = getenv("ASCENT_BENCH_BIGJOB_JOBS"), *keep = NULL;
	const char *profile = NULL;
	char jdef[32];
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if (cores > 2)
		snprintf(jdef, sizeof jdef, "1,2,%ld", cores);
	else
		snprintf(jdef, sizeof jdef, "1,2");
	if (!rl || !*rl)
		rl = "64,256";
	if (!jl || !*jl)
		jl = jdef;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ranks") && i + 1 < argc)
			rl = argv[++i];
		else if (!strcmp(argv[i], "--jobs") && i + 1 < argc)
			jl = argv[++i];
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--profile") && i + 1 < argc)
			profile = argv[++i];
		else {
			fprintf(stderr, "usage: bench_bigjob [--ranks 64,256,1024] [--jobs 1,2] [--keep DIR] | --profile DIR/bigjob-N.db\n");
			return 2;
		}
	}
	if (profile) {   /* a kept profile: the views and the advisor only */
		struct db *db;
		int64_t n = 0;
		if (db_open(profile, DB_READ, &db) != 0 || db_count(db, "rank", &n) != 0) {
			fprintf(stderr, "bench_bigjob: %s\n", ascent_errmsg());
			return 1;
		}
		db_close(db);
		return bench_view(profile, (int)n) || bench_advise(profile, (int)n) ? 1 : 0;
	}
	int ranks[16], jobs[16];
	int nr = parse_list(rl, ranks, 16), nj = parse_list(jl, jobs, 16);
	if (nr < 1 || nj < 1) {
		fprintf(stderr, "bench_bigjob: --ranks and --jobs take comma-separated counts (1..65536)\n");
		return 2;
	}
	for (int i = 0; i < nr; i++)
		if (ranks[i] < 2 * PER_HOST || ranks[i] % (2 * PER_HOST)) {
			fprintf(stderr, "bench_bigjob: a job has a multiple of %d ranks (pairs of hosts of %d)\n", 2 * PER_HOST,
				PER_HOST);
			return 2;
		}
	struct src src[2];
	if (src_load(&src[0], 0) || src_load(&src[1], 1))
		return 1;
	int rc = 0;
	for (int i = 0; i < nr && !rc; i++)
		rc = run_job(src, ranks[i], jobs, nj, keep);
	src_free(&src[0]);
	src_free(&src[1]);
	return rc ? 1 : 0;
}
