/* tests/unit/test_db.c — db/: create/open, refusing foreign, newer and corrupt files (with a
 * fuzz loop over damaged copies), the batch writer, hand-computed report numbers on a fixture
 * (operator statistics with self time, msprof step decomposition, collective matching with wait
 * and transit, bus bandwidth), memory peaks and merging rank files. */
#include "db/db.h"
#include "db/internal.h"   /* db_compute_step_stats, db_each_event_nested, db->h */
#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-dbtest-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(db, .init = mk_tmp, .fini = rm_tmp);

static void path_in(char *buf, const char *name)
{
	snprintf(buf, 256, "%s/%s", tmpdir, name);
}

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static void ev(struct db *db, int rank, int tid, int kind, const char *name, int64_t s, int64_t d, int64_t flops,
	       int comm_id, int64_t seq, int64_t bytes, int64_t step)
{
	static int64_t ord;   /* every event its own row, equal ones too (as the writers number them) */
	int64_t nid;
	OK(db_intern(db, name, &nid));
	struct db_event e = { .start_ns = s, .dur_ns = d, .step = step, .name_id = nid, .bytes = bytes, .flops = flops,
			      .seq = seq, .rank = rank, .tid = tid, .kind = kind, .mb = -1, .layer = -1, .peer = -1,
			      .comm_id = comm_id, .ord = ord++ };
	OK(db_put_event(db, &e));
}

/* The fixture of docs: one step [1000, 11000) on rank 0 with ops A (twice, one with B nested),
 * an allreduce on another thread, a receive; rank 1 (when both) has a late allreduce. */
static void fill_rank(struct db *db, int rank)
{
	OK(db_begin(db));
	struct db_rank_info r = { .rank = rank, .host = "h", .pid = 1, .dp_rank = rank, .tp_rank = 0, .pp_rank = 0,
				  .threads = 2, .t0_ns = rank ? 2000000 : 1000000, .clock_offset_ns = rank ? -999900 : 0,
				  .clock_err_ns = rank ? 50 : 0, .end_ns = 11000 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, rank, 0, 100 + rank, "main"));
	OK(db_put_thread(db, rank, 1, 200 + rank, "comm"));
	OK(db_put_comm(db, rank, 0, "world", 4, rank));
	ev(db, rank, 0, DB_KIND_STEP, "step", 1000, 10000, 0, -1, -1, 0, 0);
	if (rank == 0) {
		ev(db, 0, 0, DB_KIND_OP, "A", 2000, 2000, 4000, -1, -1, 0, 0);
		ev(db, 0, 0, DB_KIND_OP, "B", 3000, 500, 0, -1, -1, 0, 0);
		ev(db, 0, 0, DB_KIND_OP, "A", 5000, 1000, 0, -1, -1, 0, 0);
		ev(db, 0, 1, DB_KIND_COMM, "allreduce", 5500, 2500, 0, 0, 0, 1000, 0);
		ev(db, 0, 0, DB_KIND_P2P, "recv", 9000, 1000, 0, 1, 0, 64, 0);
	} else {
		ev(db, rank, 1, DB_KIND_COMM, "allreduce", 6400, 1600, 0, 0, 0, 1000, 0);
	}
	int64_t loss;
	OK(db_intern(db, "loss", &loss));
	OK(db_put_counter(db, rank, loss, 10500, 5.5));
	OK(db_put_mem(db, rank, DB_MEM_HOST, 1500, 100, DB_MEM_ACTIVATION, 100, 0));
	OK(db_put_mem(db, rank, DB_MEM_HOST, 1600, 50, DB_MEM_ACTIVATION, 150, 0));
	OK(db_put_mem(db, rank, DB_MEM_HOST, 1700, -100, DB_MEM_ACTIVATION, 50, 0));
	OK(db_put_overhead(db, rank, 10000, 250, "writer"));
	OK(db_commit(db));
}

static struct db *fixture(const char *name, int ranks)
{
	char p[256];
	path_in(p, name);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	for (int r = 0; r < ranks; r++)
		fill_rank(db, r);
	OK(db_finalize(db));
	return db;
}

Test(db, create_reopen_meta_and_counts)
{
	struct db *db = fixture("a.db", 1);
	char *v = db_get_meta(db, "schema_version");
	char want[16];
	snprintf(want, sizeof want, "%d", DB_SCHEMA_VERSION);
	cr_assert_str_eq(v, want);
	free(v);
	int64_t n;
	OK(db_count(db, "event", &n));
	cr_assert_eq(n, 6);
	cr_assert_eq(db_count(db, "nope; drop table event", &n), ASCENT_EUSAGE);
	db_close(db);
	char p[256];
	path_in(p, "a.db");
	OK(db_open(p, DB_READ, &db));
	cr_assert_eq(db_schema_version(db), DB_SCHEMA_VERSION);
	OK(db_count(db, "counter", &n));
	cr_assert_eq(n, 1);
	db_close(db);
	db_close(NULL);
}

/* view_tl's packed bins (db/view_tl.c): every value round-trips, extremes included, and a run; a
 * chunk cut anywhere, an offset or run past the chunk, reads as its end, never past the bytes given. */
Test(db, timeline_bins_pack_round_trip)
{
	static const int64_t vals[] = { 0, 1, -1, 63, 64, -64, 127, 128, 300, 1000000007, INT64_MAX, INT64_MIN,
					INT64_MAX - 1, INT64_MIN + 1, 4611686018427387904LL, -4611686018427387905LL };
	int nv = (int)(sizeof vals / sizeof vals[0]);
	unsigned char buf[DB_TL_CHUNK * DB_TL_PACKED_MAX];
	struct db_tl_bin in[DB_TL_CHUNK];
	size_t len = 0, ends[DB_TL_CHUNK + 1];
	ends[0] = 0;
	for (int k = 0; k < DB_TL_CHUNK; k++) {
		for (int q = 0; q < 4; q++)
			in[k].c[q] = vals[(k + q) % nv];
		in[k].n = vals[(3 * k + 1) % nv];
		in[k].top = vals[(5 * k + 2) % nv];
		size_t w = db_tl_pack(buf + len, k, 1, &in[k]);
		cr_assert(w >= 8 && w <= DB_TL_PACKED_MAX, "bin %d: %zu bytes", k, w);
		len += w;
		ends[k + 1] = len;
	}
	const unsigned char *p = buf;
	size_t left = len, used;
	int k = 0, off, run;
	struct db_tl_bin o;
	for (; (used = db_tl_unpack(p, left, &off, &run, &o)) != 0; p += used, left -= used, k++) {
		cr_assert_eq(off, k);
		cr_assert_eq(run, 1);
		cr_assert_eq(memcmp(&o, &in[k], sizeof o), 0, "bin %d differs", k);
	}
	cr_assert_eq(k, DB_TL_CHUNK);
	cr_assert_eq(left, 0);
	/* cut inside each bin: the bins before it read, that one does not */
	for (int cut = 1; cut < DB_TL_CHUNK; cut += 7) {
		size_t at = ends[cut] - 1;
		int got = 0;
		for (p = buf, left = at; (used = db_tl_unpack(p, left, &off, &run, &o)) != 0; p += used, left -= used)
			got++;
		cr_assert_eq(got, cut - 1, "cut in bin %d: %d bins read", cut - 1, got);
	}
	/* a run: bins 10 .. 49 */
	size_t w = db_tl_pack(buf, 10, 40, &in[3]);
	cr_assert_eq(db_tl_unpack(buf, w, &off, &run, &o), w);
	cr_assert(off == 10 && run == 40 && !memcmp(&o, &in[3], sizeof o));
	unsigned char bad[][8] = { { DB_TL_CHUNK, 1, 0, 0, 0, 0, 0, 0 },   /* offset past the chunk */
				   { 60, 5, 0, 0, 0, 0, 0, 0 },            /* run past the chunk */
				   { 0, 0, 0, 0, 0, 0, 0, 0 } };           /* empty run */
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		cr_assert_eq(db_tl_unpack(bad[i], sizeof bad[i], &off, &run, &o), 0, "bad record %zu", i);
	unsigned char long_varint[14] = { 0, 1, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1 };
	cr_assert_eq(db_tl_unpack(long_varint, sizeof long_varint, &off, &run, &o), 0, "a varint over 10 bytes");
}

Test(db, op_stats_hand_computed)
{
	struct db *db = fixture("ops.db", 1);
	struct db_op_stat *s;
	int n;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &s, &n));
	cr_assert_eq(n, 2);
	cr_assert_str_eq(s[0].name, "A");
	cr_assert_eq(s[0].count, 2);
	cr_assert_eq(s[0].total_ns, 3000);
	cr_assert_eq(s[0].self_ns, 2500, "self %lld", (long long)s[0].self_ns);   /* 2000 − 500 (B) + 1000 */
	cr_assert_eq(s[0].min_ns, 1000);
	cr_assert_eq(s[0].max_ns, 2000);
	cr_assert_eq(s[0].med_ns, 1500);
	cr_assert_eq(s[0].p95_ns, 2000);
	cr_assert_float_eq(s[0].avg_ns, 1500.0, 1e-9);
	cr_assert_float_eq(s[0].stddev_ns, sqrt(500000.0), 1e-6);
	cr_assert_float_eq(s[0].flops, 4000.0, 1e-9);
	cr_assert_eq(s[0].flops_ns, 2000);
	cr_assert_str_eq(s[1].name, "B");
	cr_assert_eq(s[1].self_ns, 500);
	db_op_stats_free(s, n);
	db_close(db);
}

Test(db, step_decomposition_hand_computed)
{
	struct db *db = fixture("steps.db", 1);
	struct db_step_stat *s;
	int n;
	OK(db_step_stats(db, DB_FILTER_ALL, &s, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(s[0].total_ns, 10000);
	cr_assert_eq(s[0].computing_ns, 3000);
	cr_assert_eq(s[0].comm_ns, 3500);
	cr_assert_eq(s[0].overlapped_ns, 500);
	cr_assert_eq(s[0].comm_not_overlapped_ns, 3000);
	cr_assert_eq(s[0].free_ns, 4000);
	cr_assert_eq(s[0].bubble_ns, 1000);
	cr_assert_eq(s[0].preparing_ns, 1000);
	free(s);
	/* a step filter that selects nothing */
	struct db_filter f = { -1, 5, 9 };
	OK(db_step_stats(db, f, &s, &n));
	cr_assert_eq(n, 0);
	free(s);
	db_close(db);
	/* the pure function: overlapping ops inside one window, clipped to it */
	int64_t op[] = { 0, 50, 40, 120 }, cm[] = { 100, 200 }, rv[] = { 150, 250 };
	struct db_step_stat o = { 0 };
	db_step_decompose(10, 210, op, 2, cm, 1, cm, 1, rv, 1, &o);   /* recorded on the thread: blocked */
	cr_assert_eq(o.total_ns, 200);
	cr_assert_eq(o.computing_ns, 110);   /* [10,120) */
	cr_assert_eq(o.comm_ns, 100);        /* [100,200) */
	cr_assert_eq(o.overlapped_ns, 20);
	cr_assert_eq(o.comm_not_overlapped_ns, 80);
	cr_assert_eq(o.free_ns, 200 - (110 + 100 - 20));
	cr_assert_eq(o.bubble_ns, 60);       /* [150,210) */
	cr_assert_eq(o.preparing_ns, 0);
	/* a collective on a lane [100,200) while the thread computes until 120, does other work, then
	 * waits [180,200): only the wait is exposed; comm is the lane's transfer (the wait inside it) */
	int64_t lane[] = { 100, 200, 180, 200 }, wt[] = { 180, 200 };
	memset(&o, 0, sizeof o);
	db_step_decompose(10, 210, op, 2, lane, 2, wt, 1, NULL, 0, &o);
	cr_assert_eq(o.comm_ns, 100);
	cr_assert_eq(o.comm_not_overlapped_ns, 20);
	cr_assert_eq(o.overlapped_ns, 80);
	cr_assert_eq(o.free_ns, 200 - (110 + 100 - 20));
	cr_assert_eq(o.bubble_ns, 0);
}

/* A damaged file: an operator whose end (start + dur) passes INT64_MAX inside a step that ends
 * at INT64_MAX. Ends saturate (make check's UBSan traps signed overflow), clipped to the step. */
Test(db, step_split_saturates_damaged_durations)
{
	char path[256];
	path_in(path, "damaged.db");
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .pid = 1, .threads = 1, .end_ns = INT64_MAX };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	ev(db, 0, 0, DB_KIND_STEP, "step", 1000, INT64_MAX - 1000, 0, -1, -1, 0, 0);
	ev(db, 0, 0, DB_KIND_OP, "huge", 2000, INT64_MAX, 0, -1, -1, 0, 0);
	OK(db_commit(db));
	OK(db_finalize(db));
	for (int filtered = 0; filtered < 2; filtered++) {
		struct db_filter f = { -1, 0, 0 };
		struct db_step_stat *st;
		int n;
		OK(db_step_stats(db, filtered ? f : DB_FILTER_ALL, &st, &n));
		cr_assert_eq(n, 1);
		cr_assert_eq(st[0].total_ns, INT64_MAX - 1000);
		cr_assert_eq(st[0].computing_ns, INT64_MAX - 2000, "%s: %lld", filtered ? "filtered" : "step_stat",
			     (long long)st[0].computing_ns);
		cr_assert_eq(st[0].preparing_ns, 1000);
		free(st);
	}
	db_close(db);
}

Test(db, comm_matching_wait_transit_busbw)
{
	struct db *db = fixture("comm.db", 2);
	struct db_comm_stat *c;
	int n;
	OK(db_comm_stats(db, DB_FILTER_ALL, &c, &n));
	cr_assert_eq(n, 2);
	struct db_comm_stat *ar = !strcmp(c[0].name, "allreduce") ? &c[0] : &c[1];
	cr_assert_str_eq(ar->name, "allreduce");
	cr_assert_eq(ar->count, 2);
	cr_assert_eq(ar->total_ns, 4100);
	cr_assert_eq(ar->bytes, 2000);
	cr_assert_eq(ar->bucket, 512);
	cr_assert_eq(ar->group_size, 4);
	/* every call matched: the bandwidths use the transfer proper (the transit, 3100 ns), not the
	 * 4100 ns from each rank's start, which includes rank 0's wait for rank 1 */
	cr_assert_float_eq(ar->algbw_gbs, 2000.0 / 3100.0, 1e-12);
	cr_assert_float_eq(ar->busbw_gbs, 1.5 * 2000.0 / 3100.0, 1e-12);
	cr_assert_eq(ar->matched, 2);
	/* rank 1's call lands at 6500 on rank 0's clock: rank 0 waits 1000, transits 1500; rank 1 0 and 1600 */
	cr_assert_eq(ar->wait_ns, 1000, "wait %lld", (long long)ar->wait_ns);
	cr_assert_eq(ar->transit_ns, 3100, "transit %lld", (long long)ar->transit_ns);
	cr_assert_eq(ar->err_ns, 100);
	db_comm_stats_free(c, n);
	cr_assert_float_eq(db_busbw_factor("all_gather", 4), 0.75, 1e-12);
	cr_assert_float_eq(db_busbw_factor("AllReduce", 8), 1.75, 1e-12);
	cr_assert_float_eq(db_busbw_factor("broadcast", 8), 1.0, 1e-12);
	db_close(db);
}

Test(db, mem_peaks)
{
	struct db *db = fixture("mem.db", 1);
	struct db_mem_stat *m;
	int n;
	OK(db_mem_stats(db, DB_FILTER_ALL, &m, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(m[0].category, DB_MEM_ACTIVATION);
	cr_assert_eq(m[0].peak_bytes, 150);
	cr_assert_eq(m[0].peak_ts_ns, 1600);
	cr_assert_eq(m[0].final_bytes, 50);
	cr_assert_eq(m[0].allocs, 2);
	cr_assert_eq(m[0].frees, 1);
	free(m);
	db_close(db);
}

Test(db, merge_several_ranks)
{
	char in[3][256], out[256];
	for (int r = 0; r < 3; r++) {
		char name[32];
		snprintf(name, sizeof name, "rank-%05d.db", r);
		path_in(in[r], name);
		struct db *db;
		OK(db_open(in[r], DB_CREATE, &db));
		fill_rank(db, r);
		if (r == 2) {   /* a string only this rank has, interned first so ids differ */
			OK(db_begin(db));
			ev(db, 2, 0, DB_KIND_OP, "only_on_2", 1200, 10, 0, -1, -1, 0, 0);
			OK(db_put_mem(db, 2, 0, 1800, 7, DB_MEM_OTHER, 7, 0));   /* a device's memory */
			OK(db_commit(db));
		}
		if (r == 1)   /* a rank file before v5: mem_event without device (the profiler's: the host) */
			OK(db_exec(db, "CREATE TABLE m4(rank INTEGER NOT NULL, ts_ns INTEGER NOT NULL, bytes INTEGER NOT NULL,"
				       " category INTEGER NOT NULL, in_use INTEGER NOT NULL, stack_id INTEGER);"
				       "INSERT INTO m4 SELECT rank, ts_ns, bytes, category, in_use, stack_id FROM mem_event;"
				       "DROP VIEW mem_peak; DROP TABLE mem_event; ALTER TABLE m4 RENAME TO mem_event;"
				       "PRAGMA user_version = 4;"));
		db_close(db);
	}
	path_in(out, "trace.db");
	const char *ins[3] = { in[0], in[1], in[2] };
	OK(db_merge(out, ins, 3, 0));
	struct db *db;
	OK(db_open(out, DB_READ, &db));
	int64_t n;
	OK(db_count(db, "event", &n));
	cr_assert_eq(n, 6 + 2 + 3, "events %lld", (long long)n);
	OK(db_count(db, "rank", &n));
	cr_assert_eq(n, 3);
	OK(db_count(db, "step_stat", &n));
	cr_assert_eq(n, 3);
	struct db_op_stat *s;
	int ns;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &s, &ns));
	cr_assert_eq(ns, 3);
	cr_assert_str_eq(s[0].name, "A");
	cr_assert_str_eq(s[2].name, "only_on_2");
	db_op_stats_free(s, ns);
	struct db_filter f1 = { 1, -1, -1 };
	OK(db_op_stats(db, f1, 1, &s, &ns));
	cr_assert_eq(ns, 0);
	db_op_stats_free(s, ns);
	/* memory: every rank's host rows (rank 1's from its v4 file), rank 2's device 0 apart */
	struct db_mem_stat *m;
	int nm;
	OK(db_mem_stats(db, DB_FILTER_ALL, &m, &nm));
	cr_assert_eq(nm, 4);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(m[i].rank, i);
		cr_assert_eq(m[i].device, DB_MEM_HOST);
		cr_assert_eq(m[i].peak_bytes, 150);
		cr_assert_eq(m[i].allocs + m[i].frees, 3);
	}
	cr_assert_eq(m[3].rank, 2);
	cr_assert_eq(m[3].device, 0);
	cr_assert_eq(m[3].peak_bytes, 7);
	free(m);
	db_close(db);
	/* the same rank twice is refused */
	const char *dup[2] = { in[0], in[0] };
	char out2[256];
	path_in(out2, "dup.db");
	cr_assert_eq(db_merge(out2, dup, 2, 0), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "already"), "%s", ascent_errmsg());
	cr_assert(!fs_exists(out2));
}

/* ---------------------------------------------------------------------------------------- */

static void write_file(const char *p, const void *d, size_t n)
{
	FILE *f = fopen(p, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(d, 1, n, f), n);
	fclose(f);
}

static int all_queries(const char *p)
{
	struct db *db;
	int rc = db_open(p, DB_READ, &db);
	if (rc)
		return rc;
	struct db_op_stat *s;
	int n;
	if (db_op_stats(db, DB_FILTER_ALL, 0, &s, &n) == 0)
		db_op_stats_free(s, n);
	struct db_comm_stat *c;
	if (db_comm_stats(db, DB_FILTER_ALL, &c, &n) == 0)
		db_comm_stats_free(c, n);
	struct db_step_stat *st;
	if (db_step_stats(db, DB_FILTER_ALL, &st, &n) == 0)
		free(st);
	struct db_mem_stat *m;
	if (db_mem_stats(db, DB_FILTER_ALL, &m, &n) == 0)
		free(m);
	struct db_overhead_stat *o;
	if (db_overhead_stats(db, &o, &n) == 0)
		db_overhead_stats_free(o, n);
	db_close(db);
	return 0;
}

Test(db, refuses_foreign_newer_corrupt_and_survives_fuzz)
{
	char p[256], bad[256];
	struct db *db = fixture("good.db", 2);
	db_close(db);
	path_in(p, "good.db");
	char *img;
	size_t len;
	OK(fs_read_all(p, &img, &len));
	cr_assert_gt(len, 4096);
	path_in(bad, "bad.db");

	cr_assert_eq(db_open(bad, DB_READ, &db), ASCENT_EINPUT);    /* missing */
	write_file(bad, "", 0);
	cr_assert_eq(db_open(bad, DB_READ, &db), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "empty"), "%s", ascent_errmsg());
	write_file(bad, "hello, this is a text file and not a database\n", 46);
	cr_assert_eq(db_open(bad, DB_READ, &db), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "not a database"), "%s", ascent_errmsg());

	char *cp = malloc(len);
	memcpy(cp, img, len);
	memset(cp + 68, 0, 4);                                       /* application id */
	write_file(bad, cp, len);
	cr_assert_eq(db_open(bad, DB_READ, &db), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "not an ascent profile"), "%s", ascent_errmsg());

	memcpy(cp, img, len);
	cp[60] = 0, cp[61] = 0, cp[62] = 0, cp[63] = 99;             /* user_version 99 */
	write_file(bad, cp, len);
	cr_assert_eq(db_open(bad, DB_READ, &db), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "newer"), "%s", ascent_errmsg());

	write_file(bad, img, len / 3);                                /* truncated */
	int rc = all_queries(bad);
	cr_assert(rc == 0 || rc == ASCENT_EINPUT || rc == ASCENT_EDB, "rc %d", rc);

	uint64_t st = rng_seed(7, 1);
	for (int it = 0; it < 150; it++) {
		memcpy(cp, img, len);
		int flips = 1 + (int)(rng_u32(&st) % 64);
		for (int k = 0; k < flips; k++) {
			size_t at = (size_t)rng_u32(&st) % len;
			if (it % 3 == 0)
				at = 100 + (size_t)rng_u32(&st) % 4000;          /* the schema page */
			cp[at] = (char)rng_u32(&st);
		}
		write_file(bad, cp, len);
		char aux[300];
		snprintf(aux, sizeof aux, "%s-wal", bad);
		unlink(aux);
		snprintf(aux, sizeof aux, "%s-shm", bad);
		unlink(aux);
		rc = all_queries(bad);
		cr_assert(rc == 0 || rc == ASCENT_EINPUT || rc == ASCENT_EDB || rc == ASCENT_EIO, "rc %d", rc);
	}
	free(cp);
	free(img);
}

/* op_stat (built by db_finalize) must give exactly what the scan computes: every rank, all ranks,
 * ops only or every kind; and events inserted afterwards make it stale (the scan is used again). */
static void same_stats(struct db *db, struct db_filter f, int ops_only, const struct db_op_stat *a, int na)
{
	struct db_op_stat *b;
	int nb;
	OK(db_op_stats(db, f, ops_only, &b, &nb));
	cr_assert_eq(na, nb, "rank %d ops_only %d: %d vs %d rows", f.rank, ops_only, na, nb);
	for (int i = 0; i < na; i++) {
		cr_assert_str_eq(a[i].name, b[i].name);
		cr_assert_eq(a[i].kind, b[i].kind);
		cr_assert_eq(a[i].count, b[i].count);
		cr_assert_eq(a[i].total_ns, b[i].total_ns);
		cr_assert_eq(a[i].self_ns, b[i].self_ns, "%s self", a[i].name);
		cr_assert_eq(a[i].min_ns, b[i].min_ns);
		cr_assert_eq(a[i].max_ns, b[i].max_ns);
		cr_assert_eq(a[i].med_ns, b[i].med_ns, "%s med", a[i].name);
		cr_assert_eq(a[i].p95_ns, b[i].p95_ns, "%s p95", a[i].name);
		cr_assert_float_eq(a[i].avg_ns, b[i].avg_ns, 1e-9);
		cr_assert_float_eq(a[i].stddev_ns, b[i].stddev_ns, 1e-6 * (1 + a[i].stddev_ns));
		cr_assert_float_eq(a[i].flops, b[i].flops, 1e-9);
		cr_assert_eq(a[i].flops_ns, b[i].flops_ns);
	}
	db_op_stats_free(b, nb);
}

Test(db, op_stat_table_equals_scan)
{
	char p[256];
	path_in(p, "opstat.db");
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	uint64_t st = rng_seed(11, 3);
	for (int r = 0; r < 3; r++) {
		fill_rank(db, r);
		OK(db_begin(db));
		for (int i = 0; i < 301 + 40 * r; i++) {   /* odd and even counts, nested and flat ranges */
			int64_t s = 20000 + 1000 * i, d = 1 + rng_u32(&st) % 997;
			ev(db, r, i % 3, i % 5 ? DB_KIND_OP : DB_KIND_PHASE, i % 2 ? "mm" : "gelu", s, d, i % 4 ? 7 : 0, -1, -1, 0,
			   1);
			if (i % 7 == 0)
				ev(db, r, i % 3, DB_KIND_OP, "inner", s + 1, d / 2, 0, -1, -1, 0, 1);
		}
		OK(db_commit(db));
	}
	struct db_filter fs[4] = { DB_FILTER_ALL, { 0, -1, -1 }, { 1, -1, -1 }, { 2, -1, -1 } };
	struct db_op_stat *a[4][2];
	int na[4][2];
	int64_t n0;
	OK(db_event_count(db, &n0));
	for (int k = 0; k < 4; k++)
		for (int o = 0; o < 2; o++)
			OK(db_op_stats(db, fs[k], o, &a[k][o], &na[k][o]));   /* scans: not finalized */
	OK(db_finalize(db));
	int64_t rows, n1;
	OK(db_count(db, "op_stat", &rows));
	cr_assert_gt(rows, 0);
	OK(db_event_count(db, &n1));
	cr_assert_eq(n0, n1);
	for (int k = 0; k < 4; k++)
		for (int o = 0; o < 2; o++) {
			same_stats(db, fs[k], o, a[k][o], na[k][o]);   /* reads op_stat */
			db_op_stats_free(a[k][o], na[k][o]);
		}
	/* a new event after finalize: op_stat is stale, the numbers include the event */
	OK(db_begin(db));
	ev(db, 0, 0, DB_KIND_OP, "late", 900000, 5, 0, -1, -1, 0, 1);
	OK(db_commit(db));
	OK(db_event_count(db, &n1));
	cr_assert_eq(n1, n0 + 1);
	struct db_op_stat *s;
	int ns, found = 0;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &s, &ns));
	for (int i = 0; i < ns; i++)
		found |= !strcmp(s[i].name, "late");
	cr_assert(found, "an event added after db_finalize is missing from the statistics");
	db_op_stats_free(s, ns);
	db_close(db);
}

/* db_finalize's one pass (db/write.c) against the routes it replaced, on a profile made to hit their
 * corner cases: ranges that start together (longest first, ties in clustering order), a step that
 * starts with a longer range already open, overlapping steps, an empty step, a step number written
 * twice, a communicator lane, receives, waits, a rank with device lanes. Its step_stat equals the
 * per-step queries (db_compute_step_stats, the later row of a (rank, step) kept), its order equals
 * SQL's, and its statistics of event's indexes equal ANALYZE's. */
struct order {
	int64_t (*v)[6];
	int64_t n;
};

static int collect_order(void *ud, const struct db_event *e)
{
	struct order *o = ud;
	int64_t k[6] = { e->rank, e->start_ns, e->tid, e->kind, e->name_id, e->dur_ns };
	memcpy(o->v[o->n++], k, sizeof k);
	return 0;
}

static void stat1_rows(struct db *db, char *out, size_t len)
{
	out[0] = 0;
	sqlite3 *h = db->h;
	sqlite3_stmt *s;
	cr_assert_eq(sqlite3_prepare_v2(h, "SELECT idx, stat FROM sqlite_stat1 WHERE tbl = 'event' ORDER BY idx", -1, &s,
					NULL), SQLITE_OK);
	size_t at = 0;
	while (sqlite3_step(s) == SQLITE_ROW)
		at += (size_t)snprintf(out + at, len - at, "%s=%s;", sqlite3_column_text(s, 0), sqlite3_column_text(s, 1));
	sqlite3_finalize(s);
}

Test(db, finalize_pass_equals_queries)
{
	char p[256];
	path_in(p, "pass.db");
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	for (int r = 0; r < 2; r++) {
		struct db_rank_info ri = { .rank = r, .host = "h", .pid = 1, .dp_rank = r, .threads = 3, .end_ns = 40000 };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 100 + r, "main"));
		OK(db_put_thread(db, r, 1, 0, "comm dp"));   /* a communicator's lane */
		OK(db_put_thread(db, r, 2, 300 + r, "worker"));
	}
	OK(db_put_thread(db, 1, 5, 0, "gpu 0 stream 7"));
	OK(db_put_device_lane(db, 1, 5, 0, 7));
	for (int r = 0; r < 2; r++) {
		ev(db, r, 2, DB_KIND_OP, "long", 1000, 11000, 0, -1, -1, 0, -1);   /* starts with step 1, longer */
		ev(db, r, 0, DB_KIND_STEP, "step", 1000, 10000, 0, -1, -1, 0, 1);
		ev(db, r, 0, DB_KIND_STEP, "step", 11000, 10000, 0, -1, -1, 0, 2);
		ev(db, r, 2, DB_KIND_STEP, "step", 15000, 15000, 0, -1, -1, 0, 3);   /* overlaps step 2 */
		ev(db, r, 2, DB_KIND_STEP, "step", 21000, 1000, 0, -1, -1, 0, 2);    /* step 2 again: kept */
		ev(db, r, 0, DB_KIND_STEP, "step", 30000, 0, 0, -1, -1, 0, 4);       /* empty */
		ev(db, r, 0, DB_KIND_OP, "X", 4000, 100, 0, -1, -1, 0, 1);           /* ties */
		ev(db, r, 0, DB_KIND_OP, "Y", 4000, 100, 0, -1, -1, 0, 1);
		ev(db, r, 0, DB_KIND_OP, "Z", 4000, 300, 0, -1, -1, 0, 1);
	}
	const char *names[] = { "mm", "gelu", "recv_fwd", "send_bwd", "allreduce", "k_gemm", "copy" };
	int kinds[] = { DB_KIND_OP, DB_KIND_COMM, DB_KIND_P2P, DB_KIND_WAIT, DB_KIND_PHASE, DB_KIND_KERNEL, DB_KIND_MEMCPY };
	uint64_t st = rng_seed(5, 9);
	for (int i = 0; i < 1500; i++) {
		int r = (int)(rng_u32(&st) % 2), k = (int)(rng_u32(&st) % 7), tid = (int)(rng_u32(&st) % 3);
		if (r == 1 && k >= 5)
			tid = 5;
		else if (r == 1 && rng_u32(&st) % 4 == 0)
			tid = 5;   /* comm and ops on the device lane too */
		int64_t s = 500 + 25 * (int64_t)(rng_u32(&st) % 1400), d = rng_u32(&st) % 4 ? rng_u32(&st) % 3000 : 50;
		int comm = db_kind_has_comm(kinds[k]);
		ev(db, r, tid, kinds[k], names[k == 2 ? (int)(rng_u32(&st) % 2) + 2 : k], s, d, k == 0 ? 100 : 0,
		   comm ? (int)(rng_u32(&st) % 3) : -1, comm ? (int64_t)(rng_u32(&st) % 50) : -1, comm ? 64 : 0, -1);
	}
	OK(db_commit(db));

	/* the step split of the per-step queries, the later row of a (rank, step) kept */
	struct db_step_stat *want;
	int nwant;
	OK(db_compute_step_stats(db, DB_FILTER_ALL, &want, &nwant));
	int nk = 0;
	for (int i = 0; i < nwant; i++) {
		int j = 0;
		while (j < nk && !(want[j].rank == want[i].rank && want[j].step == want[i].step))
			j++;
		want[j] = want[i];
		nk += j == nk;
	}
	cr_assert_eq(nk, 8);
	/* nesting order against SQL's, ties in clustering order */
	int64_t nev;
	OK(db_count(db, "event", &nev));
	struct order got = { malloc((size_t)nev * sizeof *got.v), 0 };
	OK(db_each_event_nested(db, DB_FILTER_ALL, collect_order, &got));
	cr_assert_eq(got.n, nev);
	sqlite3_stmt *q;
	cr_assert_eq(sqlite3_prepare_v2(db->h, "SELECT rank, start_ns, tid, kind, name_id, dur_ns FROM event"
					" ORDER BY rank, start_ns, dur_ns DESC, tid, kind, name_id, ord", -1, &q, NULL), SQLITE_OK);
	for (int64_t i = 0; i < nev; i++) {
		cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
		for (int c = 0; c < 6; c++)
			cr_assert_eq(got.v[i][c], sqlite3_column_int64(q, c), "event %lld column %d", (long long)i, c);
	}
	sqlite3_finalize(q);
	free(got.v);

	OK(db_finalize(db));
	struct db_step_stat *have;
	int nhave;
	OK(db_step_stats(db, DB_FILTER_ALL, &have, &nhave));   /* step_stat, ordered by step, rank */
	cr_assert_eq(nhave, nk);
	for (int i = 0; i < nhave; i++) {
		int j = 0;
		while (j < nk && !(want[j].rank == have[i].rank && want[j].step == have[i].step))
			j++;
		cr_assert_lt(j, nk);
		const struct db_step_stat *x = &want[j], *y = &have[i];
		int64_t vx[10] = { x->start_ns, x->total_ns, x->computing_ns, x->comm_ns, x->overlapped_ns,
				   x->comm_not_overlapped_ns, x->free_ns, x->bubble_ns, x->preparing_ns, x->rank };
		int64_t vy[10] = { y->start_ns, y->total_ns, y->computing_ns, y->comm_ns, y->overlapped_ns,
				   y->comm_not_overlapped_ns, y->free_ns, y->bubble_ns, y->preparing_ns, y->rank };
		for (int c = 0; c < 10; c++)
			cr_assert_eq(vx[c], vy[c], "rank %d step %lld: field %d %lld vs %lld", y->rank, (long long)y->step, c,
				     (long long)vx[c], (long long)vy[c]);
	}
	free(want);
	free(have);
	char mine[512], analyzed[512];
	stat1_rows(db, mine, sizeof mine);
	OK(db_exec_sql(db, "ANALYZE event"));
	stat1_rows(db, analyzed, sizeof analyzed);
	cr_assert_str_eq(mine, analyzed);
	cr_assert(strstr(mine, "event_step=") && strstr(mine, "event_comm="), "%s", mine);
	db_close(db);
}

struct wal_seen {
	int calls, last, max;
};

static void wal_seen(void *arg, int frames)
{
	struct wal_seen *w = arg;
	w->calls++;
	w->last = frames;
	if (frames > w->max)
		w->max = frames;
}

/* db_set_wal_notify, db_checkpoint (the profiler's checkpointer): the committing connection reports
 * its log's length after each commit and no longer checkpoints by itself (the log passes SQLite's
 * 1000 pages and keeps growing); a second connection's checkpoint copies it into the file and the
 * log starts over at the writer's next transaction; every value reads back; NULL unhooks it. */
Test(db, checkpoint_from_a_second_connection)
{
	char p[256];
	path_in(p, "ck.db");
	struct db *w, *ck;
	OK(db_open(p, DB_CREATE, &w));
	OK(db_set_sync(w, 0));
	struct wal_seen seen = { 0 };
	OK(db_set_wal_notify(w, wal_seen, &seen));
	enum { N = 20, LEN = 1 << 20 };   /* 20 commits of 1 MiB: about 1300 pages of 16 KiB */
	char *big = malloc(LEN + 1);
	cr_assert_not_null(big);
	char key[32];
	for (int i = 0; i < N; i++) {
		memset(big, 'a' + i, LEN);
		big[LEN] = 0;
		snprintf(key, sizeof key, "big%d", i);
		OK(db_set_meta(w, key, big));
	}
	cr_assert_geq(seen.calls, N);
	cr_assert_gt(seen.max, 1000, "the log was checkpointed by the writer (%d pages at most)", seen.max);
	cr_assert_eq(seen.last, seen.max, "the log restarted without a checkpoint (%d after %d)", seen.last, seen.max);
	OK(db_open(p, DB_READ, &ck));
	OK(db_checkpoint(ck));
	OK(db_set_meta(w, "small", "1"));
	cr_assert_lt(seen.last, 10, "the log did not start over after the checkpoint (%d pages)", seen.last);
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof key, "big%d", i);
		char *v = db_get_meta(ck, key);
		cr_assert_not_null(v, "%s", key);
		cr_assert_eq(strlen(v), (size_t)LEN);
		cr_assert(v[0] == 'a' + i && v[LEN - 1] == 'a' + i);
		free(v);
	}
	OK(db_set_wal_notify(w, NULL, NULL));
	int calls = seen.calls;
	OK(db_set_meta(w, "small", "2"));
	cr_assert_eq(seen.calls, calls, "still notified after db_set_wal_notify(NULL)");
	db_close(ck);
	db_close(w);
	OK(db_open(p, DB_READ, &w));
	char *v = db_get_meta(w, "small");
	cr_assert_str_eq(v, "2");
	free(v);
	db_close(w);
	free(big);
}
