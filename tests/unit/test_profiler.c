/* tests/unit/test_profiler.c — profiler/: the schedule's windows, ring wrap and overflow under
 * several threads, warm-up dropping, the size budget, turning itself off on a write error, stacks,
 * and a strict validation of the exported Chrome JSON and the report's JSON document. */
#include "profiler/prof.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char tmpdir[64];
static char dbp[256];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-proftest-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(dbp, sizeof dbp, "%s/rank-00000.db", tmpdir);
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(prof, .init = mk_tmp, .fini = rm_tmp);

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static int64_t count(const char *table)
{
	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	int64_t n;
	OK(db_count(db, table, &n));
	db_close(db);
	return n;
}

Test(prof, off_path_records_nothing)
{
	cr_assert_eq(prof_on(), 0);
	struct prof_tok t = prof_op_begin("x", 0, 1);
	cr_assert_eq(t.t0, 0);
	prof_op_end(&t);
	{
		PROF_SCOPE("scoped");
	}
	prof_counter("loss", 1);
	prof_mem_alloc(DB_MEM_PARAM, 10, NULL);
	prof_step_begin(0);
	prof_step_end();
	OK(prof_shutdown());
	struct prof_stats st;
	prof_get_stats(&st);
	cr_assert_eq(st.events, 0);
}

Test(prof, schedule_parse_and_windows)
{
	struct prof_schedule s;
	OK(prof_schedule_parse("wait=1,warmup=1,active=2,repeat=1", &s));
	enum prof_action want[] = { PROF_NONE, PROF_WARMUP, PROF_RECORD, PROF_RECORD, PROF_NONE, PROF_NONE, PROF_NONE };
	for (int i = 0; i < 7; i++)
		cr_assert_eq(prof_schedule_action(&s, i), want[i], "step %d", i);
	OK(prof_schedule_parse("skip=3,active=1,wait=1", &s));   /* repeat 0: forever */
	enum prof_action w2[] = { PROF_NONE, PROF_NONE, PROF_NONE, PROF_NONE, PROF_RECORD, PROF_NONE, PROF_RECORD };
	for (int i = 0; i < 7; i++)
		cr_assert_eq(prof_schedule_action(&s, i), w2[i], "step %d", i);
	cr_assert_eq(prof_schedule_parse("wait=1", &s), ASCENT_EUSAGE);
	cr_assert_eq(prof_schedule_parse("active=0", &s), ASCENT_EUSAGE);
	cr_assert_eq(prof_schedule_parse("active=2,bogus=1", &s), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "bogus"));
	cr_assert_eq(prof_schedule_parse("active=-2", &s), ASCENT_EUSAGE);
	cr_assert_eq(prof_schedule_parse("active", &s), ASCENT_EUSAGE);
}

Test(prof, init_errors_leave_it_off)
{
	struct prof_options o = { .db_path = "/nonexistent-dir/x/rank-00000.db" };
	cr_assert_neq(prof_init(&o), 0);
	cr_assert_eq(prof_on(), 0);
	cr_assert(strstr(ascent_errmsg(), "nonexistent-dir"), "%s", ascent_errmsg());
	struct prof_options o2 = { .db_path = dbp, .schedule = "active=0" };
	cr_assert_eq(prof_init(&o2), ASCENT_EUSAGE);
	OK(prof_shutdown());
}

Test(prof, ring_wraps_without_loss)
{
	struct prof_options o = { .db_path = dbp, .ring_events = 256, .flush_ms = 1000 };
	OK(prof_init(&o));
	int64_t sum = 0, n = 0;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 200; i++) {
			struct prof_tok t = prof_op_begin("op", i % 7, (double)(round * 1000 + i + 1));
			prof_op_end(&t);
			sum += round * 1000 + i + 1;
			n++;
		}
		OK(prof_flush());   /* the ring's head wraps past its size many times */
	}
	struct prof_stats st;
	prof_get_stats(&st);
	cr_assert_eq(st.dropped, 0);
	cr_assert_eq(st.events, n);
	OK(prof_shutdown());
	cr_assert_eq(count("event"), n);
	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	struct db_op_stat *s;
	int ns;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &s, &ns));
	cr_assert_eq(ns, 1);
	cr_assert_eq(s[0].count, n);
	cr_assert_float_eq(s[0].flops, (double)sum, 0.5);
	db_op_stats_free(s, ns);
	db_close(db);
}

#define NTHREADS 4
#define PER_THREAD 20000

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < PER_THREAD; i++) {
		struct prof_tok t = prof_range_begin("r");
		prof_range_end(&t);
	}
	return NULL;
}

Test(prof, overflow_under_threads_counts_drops)
{
	struct prof_options o = { .db_path = dbp, .ring_events = 64, .flush_ms = 1000 };
	OK(prof_init(&o));
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, hammer, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	struct prof_stats st;
	prof_get_stats(&st);
	cr_assert_eq(st.threads, NTHREADS);
	cr_assert_eq(st.events + st.dropped, NTHREADS * PER_THREAD);
	cr_assert_gt(st.dropped, 0);
	OK(prof_shutdown());
	cr_assert_eq(count("event"), st.events);
	cr_assert_eq(count("thread"), NTHREADS);
	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	char *d = db_get_meta(db, "events_dropped");
	cr_assert_not_null(d);
	cr_assert_eq(atoll(d), st.dropped);
	free(d);
	db_close(db);
}

Test(prof, many_threads_no_loss_with_big_rings)
{
	struct prof_options o = { .db_path = dbp, .ring_events = 1 << 16, .flush_ms = 20 };
	OK(prof_init(&o));
	pthread_t th[NTHREADS];
	for (int i = 0; i < NTHREADS; i++)
		pthread_create(&th[i], NULL, hammer, NULL);
	for (int i = 0; i < NTHREADS; i++)
		pthread_join(th[i], NULL);
	OK(prof_shutdown());
	cr_assert_eq(count("event"), NTHREADS * PER_THREAD);
}

Test(prof, schedule_drops_warmup_and_waits)
{
	struct prof_options o = { .db_path = dbp, .schedule = "wait=1,warmup=1,active=2" };
	OK(prof_init(&o));
	cr_assert_eq(prof_on(), 0);   /* before the first step with a schedule */
	for (int s = 0; s < 6; s++) {
		prof_step_begin(s);
		struct prof_tok t = prof_op_begin("op", -1, 0);
		prof_op_end(&t);
		prof_step_end();
	}
	OK(prof_shutdown());
	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	struct db_step_stat *ss;
	int n;
	OK(db_step_stats(db, DB_FILTER_ALL, &ss, &n));
	cr_assert_eq(n, 2);
	cr_assert_eq(ss[0].step, 2);
	cr_assert_eq(ss[1].step, 3);
	free(ss);
	int64_t ev;
	OK(db_count(db, "event", &ev));
	cr_assert_eq(ev, 4);
	db_close(db);
}

Test(prof, size_budget_stops_detail_keeps_aggregates)
{
	struct prof_options o = { .db_path = dbp, .max_mb = 1, .flush_ms = 1000 };
	OK(prof_init(&o));
	for (int s = 0; s < 30; s++) {
		prof_step_begin(s);
		for (int i = 0; i < 3000; i++) {
			struct prof_tok t = prof_op_begin(i % 2 ? "a" : "b", i % 12, 1e6);
			prof_op_end(&t);
		}
		prof_step_end();
		OK(prof_flush());
	}
	struct prof_stats st;
	prof_get_stats(&st);
	cr_assert_gt(st.detail_skipped, 0);
	OK(prof_shutdown());
	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	char *m = db_get_meta(db, "detail_stopped_at_step");
	cr_assert_not_null(m);
	free(m);
	int64_t agg, steps, ev;
	OK(db_count(db, "step_agg", &agg));
	OK(db_count(db, "step_stat", &steps));
	OK(db_count(db, "event", &ev));
	cr_assert_eq(agg, 30 * 3);         /* a, b and the step itself, every step */
	cr_assert_eq(steps, 30);           /* step ranges continue */
	cr_assert_lt(ev, 30 * 3000);
	db_close(db);
	cr_assert_lt(fs_exists(dbp), 2);
}

Test(prof, write_error_turns_it_off_and_training_goes_on)
{
	signal(SIGXFSZ, SIG_IGN);
	struct prof_options o = { .db_path = dbp, .flush_ms = 10 };
	OK(prof_init(&o));
	struct rlimit rl = { 256 * 1024, 256 * 1024 };
	cr_assert_eq(setrlimit(RLIMIT_FSIZE, &rl), 0);
	struct prof_stats st = { 0 };
	for (int s = 0; s < 400 && !st.failed; s++) {
		prof_step_begin(s);
		for (int i = 0; i < 2000; i++) {
			struct prof_tok t = prof_op_begin("op", i, 1);
			prof_op_end(&t);
		}
		prof_step_end();
		prof_flush();
		prof_get_stats(&st);
	}
	cr_assert_eq(st.failed, 1);
	cr_assert_eq(prof_on(), 0);
	struct prof_tok t = prof_op_begin("after", 0, 0);   /* hooks stay harmless */
	cr_assert_eq(t.t0, 0);
	prof_op_end(&t);
	cr_assert_eq(prof_shutdown(), ASCENT_EIO);
	cr_assert(strstr(ascent_errmsg(), "turned itself off"), "%s", ascent_errmsg());
}

Test(prof, stacks_are_captured_and_symbolized)
{
	struct prof_options o = { .db_path = dbp, .stacks = 1 };
	OK(prof_init(&o));
	for (int i = 0; i < 100; i++) {
		struct prof_tok t = prof_op_begin("with_stack", 0, 0);
		prof_op_end(&t);
		prof_mem_alloc(DB_MEM_WORKSPACE, 64, NULL);
	}
	OK(prof_shutdown());
	cr_assert_gt(count("stack"), 0);
	cr_assert_gt(count("frame"), 0);
	struct db *db;
	OK(db_open(dbp, DB_READ, &db));
	struct db_op_stat *s;
	int n;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &s, &n));
	db_op_stats_free(s, n);
	db_close(db);
}

/* ---------------------------------------------------------------------------------------- */
/* exported JSON, strictly */

static void workload(void)
{
	prof_comm_register(0, "world", 1, 0);
	for (int s = 0; s < 3; s++) {
		prof_step_begin(s);
		{
			PROF_SCOPE_KIND(DB_KIND_PHASE, "forward");
			for (int l = 0; l < 3; l++) {
				struct prof_tok t = prof_op_begin("matmul", l, 1000);
				struct prof_tok u = prof_op_begin("inner", l, 10);
				prof_op_end(&u);
				prof_op_end(&t);
			}
			/* two ranges that overlap without nesting on one thread */
			struct prof_tok a = prof_range_begin("overlap_a");
			struct prof_tok b = prof_range_begin("overlap_b");
			prof_range_end(&a);
			prof_range_end(&b);
		}
		struct prof_tok c = prof_comm_begin("allreduce", 0, s, 4096, -1);
		prof_comm_end(&c);
		prof_mem_alloc(DB_MEM_ACTIVATION, 1000, NULL);
		prof_mem_free(DB_MEM_ACTIVATION, 1000, NULL);
		prof_counter("loss", 5.0 - s);
		struct prof_tok w = prof_range_begin("bad\x01name\xc3\xa9\"q\\");
		prof_range_end(&w);
		prof_step_end();
	}
}

struct xev {
	double ts, dur;
	int tid;
};

static int cmp_xev(const void *a, const void *b)
{
	const struct xev *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid - y->tid;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->dur > y->dur ? -1 : x->dur < y->dur;
}

Test(prof, chrome_export_is_strictly_valid)
{
	struct prof_options o = { .db_path = dbp };
	OK(prof_init(&o));
	workload();
	OK(prof_shutdown());
	char out[300];
	snprintf(out, sizeof out, "%s/trace.json", tmpdir);
	struct prof_export_opts eo = { .db_path = dbp, .out_path = out, .rank = -1, .step_lo = -1, .step_hi = -1 };
	int64_t nev = 0;
	OK(prof_export(&eo, &nev));
	char *txt;
	size_t len;
	OK(fs_read_all(out, &txt, &len));
	for (size_t i = 0; i < len; i++)
		cr_assert((unsigned char)txt[i] < 0x7f && ((unsigned char)txt[i] >= 0x20 || txt[i] == '\n'),
			  "byte %zu is 0x%02x", i, (unsigned char)txt[i]);
	cJSON *root = cJSON_Parse(txt);
	free(txt);
	cr_assert_not_null(root, "exported JSON does not parse");
	cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(root, "baseTimeNanoseconds")));
	cJSON *evs = cJSON_GetObjectItem(root, "traceEvents");
	cr_assert(cJSON_IsArray(evs));
	cr_assert_eq(cJSON_GetArraySize(evs), nev);
	struct xev *xs = calloc((size_t)nev, sizeof *xs);
	int nx = 0, nproc_meta = 0, nthread_meta = 0, ncounter = 0, nb = 0, ne = 0, saw_bad = 0;
	int tids_seen[64] = { 0 }, tids_named[64] = { 0 };
	cJSON *e;
	cJSON_ArrayForEach(e, evs)
	{
		cJSON *ph = cJSON_GetObjectItem(e, "ph"), *pid = cJSON_GetObjectItem(e, "pid"),
		      *tid = cJSON_GetObjectItem(e, "tid"), *name = cJSON_GetObjectItem(e, "name");
		cr_assert(cJSON_IsString(ph) && cJSON_IsNumber(pid) && cJSON_IsNumber(tid) && cJSON_IsString(name));
		cr_assert_eq(pid->valueint, 0);
		int t = tid->valueint;
		cr_assert(t >= 0 && t < 64);
		const char *p = ph->valuestring;
		if (!strcmp(p, "M")) {
			cJSON *args = cJSON_GetObjectItem(e, "args");
			cr_assert(cJSON_IsObject(args));
			if (!strcmp(name->valuestring, "process_name")) {
				nproc_meta++;
				cr_assert(cJSON_IsString(cJSON_GetObjectItem(args, "name")));
			}
			if (!strcmp(name->valuestring, "thread_name")) {
				nthread_meta++;
				tids_named[t] = 1;
			}
			continue;
		}
		cJSON *ts = cJSON_GetObjectItem(e, "ts");
		cr_assert(cJSON_IsNumber(ts) && ts->valuedouble >= 0);
		if (!strcmp(p, "X")) {
			cJSON *dur = cJSON_GetObjectItem(e, "dur");
			cr_assert(cJSON_IsNumber(dur) && dur->valuedouble >= 0);
			cr_assert(cJSON_IsString(cJSON_GetObjectItem(e, "cat")));
			/* args are optional (omitted when the event has none), an object when present */
			cJSON *xa = cJSON_GetObjectItem(e, "args");
			cr_assert(!xa || cJSON_IsObject(xa));
			xs[nx++] = (struct xev){ ts->valuedouble, dur->valuedouble, t };
			tids_seen[t] = 1;
			if (strstr(name->valuestring, "bad?name??\"q\\"))
				saw_bad = 1;
		} else if (!strcmp(p, "C")) {
			cJSON *args = cJSON_GetObjectItem(e, "args"), *a;
			cr_assert(cJSON_IsObject(args));
			cJSON_ArrayForEach(a, args) cr_assert(cJSON_IsNumber(a));
			ncounter++;
		} else if (!strcmp(p, "b")) {
			cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(e, "id")));
			nb++;
		} else if (!strcmp(p, "e")) {
			ne++;
		} else {
			cr_assert(!strcmp(p, "s") || !strcmp(p, "f"), "unexpected ph %s", p);
		}
	}
	cr_assert_eq(nproc_meta, 1);
	cr_assert_geq(nthread_meta, 1);
	for (int t = 0; t < 64; t++)
		if (tids_seen[t])
			cr_assert(tids_named[t], "thread %d has no thread_name", t);
	cr_assert_eq(ncounter, 3 + 6);   /* loss ×3, memory ×6 */
	cr_assert_eq(nb, ne);
	cr_assert_geq(nb, 3);             /* the overlapping range each step */
	cr_assert(saw_bad, "escaped name not found");
	/* strict nesting of X per thread (in ns: µs with 3 decimals) */
	qsort(xs, (size_t)nx, sizeof *xs, cmp_xev);
	int64_t stack[64];
	int sp = 0, cur = -1;
	for (int i = 0; i < nx; i++) {
		int64_t s = (int64_t)(xs[i].ts * 1000 + 0.5), en = s + (int64_t)(xs[i].dur * 1000 + 0.5);
		if (xs[i].tid != cur)
			sp = 0, cur = xs[i].tid;
		while (sp && stack[sp - 1] <= s)
			sp--;
		if (sp)
			cr_assert_leq(en, stack[sp - 1], "X event at %lld overlaps its parent", (long long)s);
		cr_assert_lt(sp, 64);
		stack[sp++] = en;
	}
	free(xs);
	cJSON_Delete(root);

	/* gzip by extension, and folded */
	snprintf(out, sizeof out, "%s/trace.json.gz", tmpdir);
	eo.out_path = out;
	OK(prof_export(&eo, NULL));
	cr_assert(fs_exists(out));
	eo.format = "xml";
	cr_assert_eq(prof_export(&eo, NULL), ASCENT_EUSAGE);
}

/* The exporter's compact form: µs with the trailing zeros of the ns decimals trimmed (exact, and
 * still JSON numbers), no "args" member for an event without arguments. */
Test(prof, chrome_export_compact_numbers)
{
	struct db *db;
	OK(db_open(dbp, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info ri = { .rank = 0, .host = "h", .pid = 1, .dp_rank = -1, .tp_rank = -1, .pp_rank = -1 };
	OK(db_put_rank(db, &ri));
	int64_t plain, stepped;
	OK(db_intern(db, "plain", &plain));
	OK(db_intern(db, "stepped", &stepped));
	struct db_event e = { .rank = 0, .tid = 0, .kind = DB_KIND_RANGE, .name_id = plain, .start_ns = 12000,
			      .dur_ns = 1500, .step = -1, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	OK(db_put_event(db, &e));
	e.name_id = stepped;
	e.start_ns = 20010;
	e.dur_ns = 1234567;
	e.step = 3;
	OK(db_put_event(db, &e));
	OK(db_commit(db));
	OK(db_finalize(db));
	db_close(db);
	char out[300];
	snprintf(out, sizeof out, "%s/compact.json", tmpdir);
	struct prof_export_opts eo = { .db_path = dbp, .out_path = out, .rank = -1, .step_lo = -1, .step_hi = -1 };
	OK(prof_export(&eo, NULL));
	char *txt;
	size_t len;
	OK(fs_read_all(out, &txt, &len));
	cr_assert_not_null(strstr(txt, "\"name\":\"plain\",\"cat\":\"range\",\"pid\":0,\"tid\":0,\"ts\":12,\"dur\":1.5}"),
			   "%s", txt);
	cr_assert_not_null(strstr(txt, "\"ts\":20.01,\"dur\":1234.567,\"args\":{\"step\":3}}"), "%s", txt);
	cJSON *root = cJSON_Parse(txt);
	cr_assert_not_null(root, "not JSON");
	cJSON_Delete(root);
	free(txt);
}

Test(prof, report_json_document)
{
	struct prof_options o = { .db_path = dbp };
	OK(prof_init(&o));
	workload();
	OK(prof_shutdown());
	char out[300];
	snprintf(out, sizeof out, "%s/report.json", tmpdir);
	FILE *f = fopen(out, "w");
	struct prof_report_opts ro = { .db_path = dbp, .rank = -1, .step_lo = -1, .step_hi = -1, .format = "json",
				       .out = f };
	OK(prof_report(&ro));
	fclose(f);
	cJSON *root;
	OK(json_read_file(out, &root));
	const char *arrays[] = { "ops", "comm", "steps", "ranks", "mem", "overhead" };
	for (int i = 0; i < 6; i++)
		cr_assert(cJSON_IsArray(cJSON_GetObjectItem(root, arrays[i])), "no array %s", arrays[i]);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItem(root, "steps")), 3);
	cJSON *op0 = cJSON_GetArrayItem(cJSON_GetObjectItem(root, "ops"), 0);
	cr_assert(cJSON_IsNumber(cJSON_GetObjectItem(op0, "total_ns")));
	cJSON_Delete(root);
	ro.by = "nope";
	ro.format = "table";
	cr_assert_eq(prof_report(&ro), ASCENT_EUSAGE);
	ro.by = NULL;
	ro.rank = 7;
	cr_assert_eq(prof_report(&ro), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "no rank 7"));
}
