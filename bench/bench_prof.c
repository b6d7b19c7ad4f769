/* bench/bench_prof.c — the profiler's figures, one JSON line each: hook cost per begin/end pair
 * (off and on, median of batches), ingest rate into SQLite (hooks → rings → writer → database),
 * bytes per event in the finished database, `report` time and export rate on a generated
 * database of BENCH_PROF_EVENTS events (default 5,000,000). Goals (issue): ingest >= 2 M/s,
 * <= 40 B/event, report < 2 s at 5 M events, export >= 1 M events/s. */
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* median ns per begin/end pair over batches of 1000 */
static double pair_cost(int batches)
{
	double *v = malloc((size_t)batches * sizeof *v);
	for (int b = 0; b < batches; b++) {
		int64_t t0 = clock_ns();
		for (int i = 0; i < 1000; i++) {
			struct prof_tok t = prof_op_begin("bench_op", i & 7, 100.0);
			prof_op_end(&t);
		}
		v[b] = (double)(clock_ns() - t0) / 1000.0;
		if (prof_initialized() && b % 50 == 49)
			prof_flush();   /* keep rings from filling: we time the hooks, not drops */
	}
	qsort(v, (size_t)batches, sizeof *v, cmp_d);
	double m = v[batches / 2];
	free(v);
	return m;
}

int main(void)
{
	char dir[] = "/tmp/ascent-bench-prof-XXXXXX";
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char path[256], path2[256], out[256];
	snprintf(path, sizeof path, "%s/rank-00000.db", dir);
	snprintf(path2, sizeof path2, "%s/big.db", dir);
	snprintf(out, sizeof out, "%s/big.json", dir);
	log_set_level(LOG_ERROR);

	double off = pair_cost(2000);
	printf("{\"bench\":\"prof_hook\",\"state\":\"off\",\"ns_per_pair\":%.2f}\n", off);

	struct prof_options o = { .db_path = path, .ring_events = 1 << 20, .flush_ms = 100 };
	if (prof_init(&o)) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	double on = pair_cost(2000);
	printf("{\"bench\":\"prof_hook\",\"state\":\"on\",\"ns_per_pair\":%.2f}\n", on);
	prof_flush();

	/* ingest: 2 M events through hooks, rings and the writer */
	struct prof_stats s0, s1;
	prof_get_stats(&s0);
	const int N = 2000000;
	int64_t t0 = clock_ns();
	for (int i = 0; i < N; i++) {
		struct prof_tok t = prof_op_begin((i & 1) ? "matmul" : "gelu", i & 15, 1000.0);
		prof_op_end(&t);
		if ((i & 262143) == 262143)
			prof_flush();
	}
	prof_flush();
	int64_t t1 = clock_ns();
	prof_get_stats(&s1);
	double wall = (double)(t1 - t0) / 1e9;
	double wsec = (double)(s1.writer_ns - s0.writer_ns) / 1e9;
	double wcpu = (double)(s1.writer_cpu_ns - s0.writer_cpu_ns) / 1e9;
	int64_t nw = s1.written - s0.written;
	printf("{\"bench\":\"prof_ingest\",\"events\":%lld,\"dropped\":%lld,\"events_per_s_end_to_end\":%.0f,"
	       "\"events_per_s_writer\":%.0f,\"events_per_writer_cpu_s\":%.0f,\"goal\":2000000}\n",
	       (long long)nw, (long long)(s1.dropped - s0.dropped), (double)nw / wall, wsec > 0 ? (double)nw / wsec : 0,
	       wcpu > 0 ? (double)nw / wcpu : 0);
	/* what ending costs: the last drain, db_finalize (op_stat, step_stat, indexes) and the closing checkpoint
	 * that fsyncs the finished file */
	t0 = clock_ns();
	prof_shutdown();
	printf("{\"bench\":\"prof_shutdown\",\"events\":%lld,\"s\":%.3f}\n", (long long)s1.written,
	       (double)(clock_ns() - t0) / 1e9);
	struct db *db;
	if (db_open(path, DB_READ, &db) == 0) {
		int64_t ev = 0;
		db_count(db, "event", &ev);
		int64_t bytes = db_file_bytes(db);
		printf("{\"bench\":\"prof_size\",\"events\":%lld,\"file_bytes\":%lld,\"bytes_per_event\":%.1f,\"goal\":40}\n",
		       (long long)ev, (long long)bytes, ev ? (double)bytes / (double)ev : 0);
		db_close(db);
	}

	/* a big generated database: steps of 1000 ops on 2 threads, an allreduce per step */
	const char *env = getenv("BENCH_PROF_EVENTS");
	int64_t big = env ? atoll(env) : 5000000;
	if (db_open(path2, DB_CREATE, &db) != 0) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	int64_t names[8];
	const char *nm[8] = { "matmul", "gelu", "layernorm", "softmax", "attention", "adamw", "step", "allreduce" };
	t0 = clock_ns();
	db_begin(db);
	struct db_rank_info ri = { .rank = 0, .host = "bench", .threads = 2, .dp_rank = -1, .tp_rank = -1, .pp_rank = -1 };
	db_put_rank(db, &ri);
	db_put_thread(db, 0, 0, 1, "main");
	db_put_thread(db, 0, 1, 2, "worker");
	for (int i = 0; i < 8; i++)
		db_intern(db, nm[i], &names[i]);
	int64_t ts = 0, n = 0, step = 0;
	enum { CHUNK = 4096 };
	struct db_event *buf = malloc(CHUNK * sizeof *buf);
	size_t nb = 0;
#define PUT(ev)                                         \
	do {                                            \
		buf[nb++] = (ev);                       \
		if (nb == CHUNK) {                      \
			db_put_events(db, buf, nb);     \
			nb = 0;                         \
		}                                       \
	} while (0)
	while (n < big) {
		struct db_event se = { .start_ns = ts, .dur_ns = 1002 * 1500, .step = step, .name_id = names[6], .seq = -1,
				       .rank = 0, .tid = 0, .kind = DB_KIND_STEP, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1 };
		PUT(se);
		n++;
		for (int k = 0; k < 1000 && n < big; k++, n++) {
			struct db_event e = { .start_ns = ts + 100 + k * 1500, .dur_ns = 1000 + (k * 37) % 400, .step = step,
					      .name_id = names[k % 6], .flops = 2000000, .seq = -1, .rank = 0, .tid = k & 1,
					      .kind = DB_KIND_OP, .mb = -1, .layer = k % 12, .peer = -1, .comm_id = -1 };
			PUT(e);
		}
		struct db_event c = { .start_ns = ts + 1000 * 1500, .dur_ns = 2000, .step = step, .name_id = names[7],
				      .bytes = 1 << 20, .seq = step, .rank = 0, .tid = 1, .kind = DB_KIND_COMM, .mb = -1,
				      .layer = -1, .peer = -1, .comm_id = 0 };
		PUT(c);
		n++;
		ts += 1002 * 1500 + 1000;
		step++;
		if (step % 200 == 0) {
			db_put_events(db, buf, nb);
			nb = 0;
			db_commit(db);
			db_begin(db);
		}
	}
#undef PUT
	db_put_events(db, buf, nb);
	free(buf);
	db_commit(db);
	double gen = (double)(clock_ns() - t0) / 1e9;
	printf("{\"bench\":\"prof_db_insert\",\"events\":%lld,\"events_per_s\":%.0f}\n", (long long)n, (double)n / gen);
	t0 = clock_ns();
	db_finalize(db);
	printf("{\"bench\":\"prof_finalize\",\"events\":%lld,\"s\":%.3f}\n", (long long)n, (double)(clock_ns() - t0) / 1e9);
	int64_t fb = db_file_bytes(db);
	printf("{\"bench\":\"prof_size_big\",\"events\":%lld,\"bytes_per_event\":%.1f,\"goal\":40}\n", (long long)n,
	       (double)fb / (double)n);
	db_close(db);

	FILE *devnull = fopen("/dev/null", "w");
	struct prof_report_opts ro = { .db_path = path2, .rank = -1, .step_lo = -1, .step_hi = -1, .out = devnull };
	t0 = clock_ns();
	int rc = prof_report(&ro);
	double rs = (double)(clock_ns() - t0) / 1e9;
	printf("{\"bench\":\"prof_report\",\"events\":%lld,\"s\":%.3f,\"ok\":%d,\"goal_s\":2}\n", (long long)n, rs, rc == 0);
	fclose(devnull);
	struct prof_export_opts eo = { .db_path = path2, .out_path = out, .rank = -1, .step_lo = -1, .step_hi = -1 };
	int64_t ne = 0;
	t0 = clock_ns();
	rc = prof_export(&eo, &ne);
	double es = (double)(clock_ns() - t0) / 1e9;
	printf("{\"bench\":\"prof_export\",\"events\":%lld,\"s\":%.3f,\"events_per_s\":%.0f,\"ok\":%d,\"goal\":1000000}\n",
	       (long long)ne, es, es > 0 ? (double)ne / es : 0, rc == 0);
	if (getenv("BENCH_PROF_KEEP"))
		fprintf(stderr, "kept %s\n", dir);
	else
		fs_rm_rf(dir);
	return 0;
}
