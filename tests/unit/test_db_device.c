/* tests/unit/test_db_device.c — schema v2 (imported traces): the v1 → v2 migration, v3's arg table
 * keyed like event (the v2 → v3 migration), memory per device (v5) and the v4 → v5 migration, the device split
 * of a step, launch → kernel queue delays, operators by input shape, and the per-device and per-stream
 * figures of `report --by device` (idle by cause, queue length, launch delays), device work by launching
 * step (db_step_work), the viewer's copies of these (db_view_step_work, db_view_device_stats), each against numbers worked
 * out by hand. */
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stddef.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-dbdev-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(db_device, .init = mk_tmp, .fini = rm_tmp);

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static struct db_event ev(struct db *db, int tid, int kind, const char *name, int64_t s, int64_t d, int64_t step)
{
	int64_t nid;
	OK(db_intern(db, name, &nid));
	struct db_event e = { .start_ns = s, .dur_ns = d, .step = step, .name_id = nid, .rank = 0, .tid = tid,
			      .kind = kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	OK(db_put_event(db, &e));
	return e;
}

/* rank 0: a step [0, 10000); a CPU operator [1000, 9000) on thread 0 (not device time); on device
 * lane 1: kernels [1000, 3000) and [2000, 4000), a copy [5000, 6000), a collective [3500, 7000).
 * Launches on thread 0 at 900 and 1500 for the kernels at 1000 and 2000, at 4800 for the copy.
 * With streams (fill_streams): the launch calls as events, and a second stream (lane 2, stream 9
 * of device 0) whose four kernels are launched from threads 0 and 3 (see streams_by_hand); with
 * streams = 2 also the calls of runtime_stats_by_hand. */
static struct db *fill_with(const char *path, int streams)
{
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	OK(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#3", 0, 10000, 3);
	struct db_event op = ev(db, 0, DB_KIND_OP, "aten::mm", 1000, 8000, -1);
	const char *a1 = "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"float\"]}";
	OK(db_put_arg(db, &op, a1, strlen(a1)));
	struct db_event op2 = ev(db, 0, DB_KIND_OP, "aten::mm", 9100, 100, -1);
	OK(db_put_arg(db, &op2, a1, strlen(a1)));
	struct db_event op3 = ev(db, 0, DB_KIND_OP, "aten::mm", 9300, 50, -1);
	const char *a2 = "{\"Input Dims\": [[8, 8], [8, 8]], \"Input type\": [\"float\", \"float\"]}";
	OK(db_put_arg(db, &op3, a2, strlen(a2)));
	ev(db, 1, DB_KIND_KERNEL, "gemm", 1000, 2000, -1);
	ev(db, 1, DB_KIND_KERNEL, "gemm", 2000, 2000, -1);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy HtoD", 5000, 1000, -1);
	ev(db, 1, DB_KIND_COMM, "ncclKernel_AllReduce", 3500, 3500, -1);
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 1, 0, 900, 1, 1000));
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 2, 0, 1500, 1, 2000));
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 3, 0, 4800, 1, 5000));
	if (streams) {
		OK(db_put_thread(db, 0, 2, 9, "GPU 0 stream 9"));
		OK(db_put_thread(db, 0, 3, 101, "worker"));
		OK(db_put_device_lane(db, 0, 2, 0, 9));
		ev(db, 0, DB_KIND_RANGE, "cudaLaunchKernel", 900, 50, -1);
		ev(db, 0, DB_KIND_RANGE, "cudaLaunchKernel", 1500, 600, -1);
		ev(db, 0, DB_KIND_RANGE, "cudaMemcpyAsync", 4800, 1500, -1);
		/* stream 9: A [2500,3000) launched [2400,3100); B [3100,3200) launched [3050,63050) on
		 * thread 3; C [50000,50500) launched [2600,2610); D [50600,50700) launched [2700,2710) */
		ev(db, 0, DB_KIND_RANGE, "cudaLaunchKernel", 2400, 700, -1);
		ev(db, 3, DB_KIND_RANGE, "cudaLaunchKernel", 3050, 60000, -1);
		ev(db, 0, DB_KIND_RANGE, "cudaLaunchKernel", 2600, 10, -1);
		ev(db, 0, DB_KIND_RANGE, "cudaLaunchKernel", 2700, 10, -1);
		ev(db, 2, DB_KIND_KERNEL, "A", 2500, 500, -1);
		ev(db, 2, DB_KIND_KERNEL, "B", 3100, 100, -1);
		ev(db, 2, DB_KIND_KERNEL, "C", 50000, 500, -1);
		ev(db, 2, DB_KIND_KERNEL, "D", 50600, 100, -1);
		OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 4, 0, 2400, 2, 2500));
		OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 5, 3, 3050, 2, 3100));
		OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 6, 0, 2600, 2, 50000));
		OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 7, 0, 2700, 2, 50600));
	}
	if (streams > 1) {   /* runtime_stats_by_hand */
		ev(db, 0, DB_KIND_RANGE, "cudaMemcpyAsync", 7000, 400, -1);
		ev(db, 1, DB_KIND_MEMCPY, "Memcpy DtoH (Device -> Pageable)", 7100, 200, -1);
		OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 8, 0, 7000, 1, 7100));
		ev(db, 0, DB_KIND_RANGE, "cudaStreamSynchronize", 7500, 1000, -1);
		ev(db, 0, DB_KIND_RANGE, "my_range", 7500, 2000, -1);   /* not a runtime call */
	}
	OK(db_commit(db));
	OK(db_finalize(db));
	return db;
}

static struct db *fill(const char *path)
{
	return fill_with(path, 0);
}

Test(db_device, step_split_on_device_lanes)
{
	char p[256];
	snprintf(p, sizeof p, "%s/d.db", tmpdir);
	struct db *db = fill(p);
	struct db_step_stat *s;
	int n;
	OK(db_step_stats(db, DB_FILTER_ALL, &s, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(s[0].computing_ns, 4000);       /* [1000,4000) + [5000,6000); the CPU op is not device time */
	cr_assert_eq(s[0].comm_ns, 3500);
	cr_assert_eq(s[0].overlapped_ns, 1500);      /* [3500,4000) + [5000,6000) */
	cr_assert_eq(s[0].comm_not_overlapped_ns, 2000);
	cr_assert_eq(s[0].free_ns, 4000);            /* 10000 − |[1000,7000)| */
	cr_assert_eq(s[0].preparing_ns, 1000);
	free(s);
	db_close(db);
}

Test(db_device, launch_delays_and_shapes)
{
	char p[256];
	snprintf(p, sizeof p, "%s/d.db", tmpdir);
	struct db *db = fill(p);
	struct db_launch_stat *l;
	int n;
	OK(db_launch_stats(db, DB_FILTER_ALL, &l, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(l[0].linked, 3);
	cr_assert_eq(l[0].kernels, 2);
	cr_assert_eq(l[0].copies, 1);
	cr_assert_eq(l[0].delay_total_ns, 800);
	cr_assert_eq(l[0].delay_med_ns, 200);
	cr_assert_eq(l[0].delay_max_ns, 500);
	cr_assert_eq(l[0].kernel_ns, 4000);   /* the kernels only: the 1000 ns copy is no kernel */
	cr_assert_eq(l[0].small, 2);          /* the short copy is not a small kernel either */
	free(l);
	struct db_shape_stat *sh;
	OK(db_shape_stats(db, DB_FILTER_ALL, &sh, &n));
	db_shape_stats_sort(sh, n);
	cr_assert_eq(n, 2);
	cr_assert_str_eq(sh[0].name, "aten::mm");
	cr_assert_str_eq(sh[0].input_dims, "[[2,3],[3,4]]");
	cr_assert_eq(sh[0].count, 2);
	cr_assert_eq(sh[0].total_ns, 8100);
	cr_assert_str_eq(sh[1].input_dims, "[[8,8],[8,8]]");
	cr_assert_eq(sh[1].count, 1);
	db_shape_stats_free(sh, n);
	struct db_op_stat *o;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &o, &n));
	int kinds = 0;
	for (int i = 0; i < n; i++)
		kinds |= 1 << o[i].kind;
	cr_assert_eq(kinds, (1 << DB_KIND_OP) | (1 << DB_KIND_KERNEL) | (1 << DB_KIND_MEMCPY));
	db_op_stats_free(o, n);
	db_close(db);
}

Test(db_device, migrates_v1_and_reads_v1_as_empty)
{
	char p[256];
	snprintf(p, sizeof p, "%s/old.db", tmpdir);
	struct db *db = fill(p);
	db_close(db);
	/* make it a v1 file: no v2 tables, user_version 1 */
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h, "DROP TABLE device_lane; DROP TABLE arg; DROP TABLE flow; PRAGMA user_version = 1;",
				  NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	OK(db_open(p, DB_READ, &db));
	cr_assert_eq(db_schema_version(db), 1);
	struct db_device_lane *l;
	int n = -1;
	OK(db_device_lanes(db, &l, &n));
	cr_assert_eq(n, 0);
	struct db_launch_stat *ls;
	OK(db_launch_stats(db, DB_FILTER_ALL, &ls, &n));
	cr_assert_eq(n, 0);
	db_close(db);
	OK(db_open(p, DB_UPDATE, &db));
	cr_assert_eq(db_schema_version(db), DB_SCHEMA_VERSION);
	db_close(db);
	OK(db_open(p, DB_READ, &db));
	cr_assert_eq(db_schema_version(db), DB_SCHEMA_VERSION);
	db_close(db);
	OK(db_open(p, DB_UPDATE, &db));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	OK(db_device_lanes(db, &l, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(l[0].stream, 7);
	free(l);
	db_close(db);
}

/* the args of aten::mm at 1000 on thread 0 of rank 0 (fill's first operator) */
static char *mm_args(struct db *db)
{
	int64_t nid;
	OK(db_intern(db, "aten::mm", &nid));
	struct db_event e = { .rank = 0, .tid = 0, .start_ns = 1000, .dur_ns = 8000, .kind = DB_KIND_OP, .name_id = nid };
	char *json = NULL;
	OK(db_event_args(db, &e, &json));
	cr_assert_not_null(json);
	return json;
}

Test(db_device, migrates_v2_args_to_v3_keyed_like_events)
{
	char p[256];
	snprintf(p, sizeof p, "%s/v2.db", tmpdir);
	struct db *db = fill(p);
	db_close(db);
	/* v2's arg table: rowids and the index arg_event; a second row for each key written later */
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h,
				  "CREATE TABLE a2(rank INTEGER NOT NULL, tid INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
				  " kind INTEGER NOT NULL, name_id INTEGER NOT NULL, dur_ns INTEGER NOT NULL, args TEXT NOT NULL);"
				  "INSERT INTO a2 SELECT rank, tid, start_ns, kind, name_id, dur_ns, args FROM arg;"
				  "INSERT INTO a2 SELECT rank, tid, start_ns, kind, name_id, dur_ns, '{\"later\": 1}' FROM arg;"
				  "DROP TABLE arg; ALTER TABLE a2 RENAME TO arg; CREATE INDEX arg_event ON arg(rank, tid, start_ns);"
				  "PRAGMA user_version = 2;",
				  NULL, NULL, NULL),
		     SQLITE_OK);
	sqlite3_close(h);
	const char *a1 = "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"float\"]}";
	OK(db_open(p, DB_READ, &db));   /* read as it is: the first row of the key */
	cr_assert_eq(db_schema_version(db), 2);
	char *json = mm_args(db);
	cr_assert_str_eq(json, a1);
	free(json);
	db_close(db);
	OK(db_open(p, DB_UPDATE, &db));
	cr_assert_eq(db_schema_version(db), DB_SCHEMA_VERSION);
	json = mm_args(db);
	cr_assert_str_eq(json, a1);   /* the first written stays */
	free(json);
	struct db_shape_stat *ss;
	int n = 0;
	OK(db_shape_stats(db, DB_FILTER_ALL, &ss, &n));
	int64_t count = 0;
	for (int i = 0; i < n; i++)
		count += ss[i].count;
	cr_assert_eq(count, 3, "one row per event after the migration, got %lld", (long long)count);
	db_shape_stats_free(ss, n);
	db_close(db);
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	sqlite3_stmt *s;
	cr_assert_eq(sqlite3_prepare_v2(h, "SELECT (SELECT count(*) FROM arg), (SELECT count(*) FROM sqlite_master WHERE"
					   " name = 'arg_event'), (SELECT sql LIKE '%WITHOUT ROWID' FROM sqlite_master WHERE name = 'arg')",
					   -1, &s, NULL),
		     SQLITE_OK);
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	cr_assert_eq(sqlite3_column_int(s, 0), 3);
	cr_assert_eq(sqlite3_column_int(s, 1), 0);
	cr_assert_eq(sqlite3_column_int(s, 2), 1);
	sqlite3_finalize(s);
	sqlite3_close(h);
}

Test(db_device, kernel_classes_by_name_and_kind)
{
	cr_assert_eq(db_kernel_class("ncclDevKernel_AllGather_RING_LL(ncclDevComm*)", DB_KIND_KERNEL), DB_KCLASS_COMM);
	cr_assert_eq(db_kernel_class("void ncclKernel_AllReduce(x)", DB_KIND_KERNEL), DB_KCLASS_COMM);
	cr_assert_eq(db_kernel_class("Memcpy HtoD (Pageable -> Device)", DB_KIND_KERNEL), DB_KCLASS_MEMORY);
	cr_assert_eq(db_kernel_class("Memset (Device)", DB_KIND_KERNEL), DB_KCLASS_MEMORY);
	cr_assert_eq(db_kernel_class("Event Sync", DB_KIND_KERNEL), DB_KCLASS_OTHER);
	cr_assert_eq(db_kernel_class("cudaLaunchKernel", DB_KIND_KERNEL), DB_KCLASS_OTHER);
	cr_assert_eq(db_kernel_class("volta_sgemm_128x64_nn", DB_KIND_KERNEL), DB_KCLASS_COMPUTE);
	cr_assert_eq(db_kernel_class("CopyHostToDevice", DB_KIND_MEMCPY), DB_KCLASS_MEMORY);   /* the kind first */
	cr_assert_eq(db_kernel_class("CopyHostToDevice", DB_KIND_KERNEL), DB_KCLASS_COMPUTE);
}

/* No step: every device event counts. gemm [1000,3000) and [2000,4000), a copy [5000,6000), an NCCL
 * kernel [3500,7000), a "Stream Wait Event" [8000,9000) (busy, no class); a CPU operator that is
 * not device work. */
Test(db_device, temporal_breakdown_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/t.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	OK(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	ev(db, 0, DB_KIND_OP, "aten::mm", 0, 20000, -1);
	ev(db, 1, DB_KIND_KERNEL, "gemm", 1000, 2000, -1);
	ev(db, 1, DB_KIND_KERNEL, "gemm", 2000, 2000, -1);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy HtoD", 5000, 1000, -1);
	ev(db, 1, DB_KIND_COMM, "ncclKernel_AllReduce", 3500, 3500, -1);
	ev(db, 1, DB_KIND_KERNEL, "Stream Wait Event", 8000, 1000, -1);
	OK(db_commit(db));
	OK(db_finalize(db));
	struct db_device_stat *d;
	int n;
	OK(db_device_stats(db, DB_FILTER_ALL, &d, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(d[0].counted, 5);
	cr_assert_eq(d[0].span_ns, 8000);
	cr_assert_eq(d[0].busy_ns, 7000);            /* [1000,7000) + [8000,9000) */
	cr_assert_eq(d[0].compute_ns, 3000);
	cr_assert_eq(d[0].comm_ns, 3500);
	cr_assert_eq(d[0].comm_under_compute_ns, 500);
	cr_assert_eq(d[0].class_ns[1], 2500);        /* compute alone [1000,3500) */
	cr_assert_eq(d[0].class_ns[3], 500);         /* compute + communication */
	cr_assert_eq(d[0].class_ns[2], 2000);        /* communication alone [4000,5000) + [6000,7000) */
	cr_assert_eq(d[0].class_ns[6], 1000);        /* communication + memory [5000,6000) */
	cr_assert_eq(d[0].class_ns[4] + d[0].class_ns[5] + d[0].class_ns[7], 0);
	/* no launch link: no host wait; the one gap [7000,8000) is under 30 us */
	cr_assert_eq(d[0].nstreams, 1);
	cr_assert_eq(d[0].idle_by_cause_ns[DB_IDLE_KERNEL_WAIT], 1000);
	cr_assert_eq(d[0].idle_by_cause_ns[DB_IDLE_HOST_WAIT] + d[0].idle_by_cause_ns[DB_IDLE_OTHER], 0);
	cr_assert_eq(d[0].streams[0].linked, 0);
	cr_assert_eq(d[0].streams[0].launch_delay_p50_ns, -1);
	cr_assert_eq(d[0].streams[0].queue_len_max, 0);
	db_device_stats_free(d, n);
	db_close(db);
}

/* An earlier step, ProfilerStep#2 [-10000, 0), before fill()'s step 3: the rank has two steps. */
static void add_earlier_step(struct db *db)
{
	OK(db_begin(db));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#2", -10000, 10000, 2);
	OK(db_commit(db));
}

/* With one step (fill()'s), all device work counts, as HTA keeps all of a trace with one
 * ProfilerStep. With an earlier step added, fill()'s step 3 is the last: every launch is in it, so
 * HTA's default counts nothing; --steps 3:3 counts the two linked kernels and the copy and leaves
 * out the unlinked collective. */
Test(db_device, counted_by_launching_step)
{
	char p[256];
	snprintf(p, sizeof p, "%s/d.db", tmpdir);
	struct db *db = fill(p);
	struct db_device_stat *d;
	int n;
	OK(db_device_stats(db, DB_FILTER_ALL, &d, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(d[0].counted, 4);           /* one step: everything, the unlinked collective too */
	cr_assert_eq(d[0].after_last_step + d[0].unlinked, 0);
	cr_assert_eq(d[0].span_ns, 6000);        /* [1000, 7000) */
	db_device_stats_free(d, n);
	add_earlier_step(db);
	OK(db_device_stats(db, DB_FILTER_ALL, &d, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(d[0].counted, 0);
	cr_assert_eq(d[0].after_last_step, 3);   /* the two kernels and the copy, launched in the last step */
	cr_assert_eq(d[0].unlinked, 1);          /* the collective */
	db_device_stats_free(d, n);
	OK(db_device_stats(db, (struct db_filter){ -1, 3, 3 }, &d, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(d[0].counted, 3);
	cr_assert_eq(d[0].span_ns, 5000);        /* [1000, 6000): the kernels, then the copy */
	cr_assert_eq(d[0].compute_ns, 3000);
	cr_assert_eq(d[0].unlinked, 1);
	db_device_stats_free(d, n);
	db_close(db);
}

/* fill_streams under --steps 3:3 (every launch in the step; the collective, unlinked, left out).
 * Stream 7: kernels [1000,3000) and [2000,4000) launched at 900 (a 50 ns call) and 1500 (600 ns),
 * the copy [5000,6000) launched at 4800 (1500 ns). Stream 9: A, B, C, D as in fill_with. */
/* The viewer's copy (view_device, view_devcopy, view_stream, and each step's view_devstep, ...;
 * db_view_device_stats) equals db_device_stats for the whole run, each rank, each single step (read
 * from the step's rows) and step ranges (which it computes): before the
 * summary tables exist (computed), with them, and with them no longer current (an older cache
 * version, its rows altered: computed again, so the altered rows must not show). */
static void expect_view_devices_pass(struct db *db, int64_t step, const char *when);

static void expect_view_devices_equal(struct db *db, int64_t step)
{
	expect_view_devices_pass(db, step, "no summary tables");
	int built = 0;
	OK(db_view_prepare(db, &built));
	/* a single step reads its rows: one altered shows (then put back) */
	OK(db_exec_sql(db, "UPDATE view_devstep SET busy_ns = busy_ns + 1"));
	struct db_device_stat *a, *b;
	int na, nb;
	OK(db_device_stats(db, (struct db_filter){ -1, step, step }, &a, &na));
	OK(db_view_device_stats(db, (struct db_filter){ -1, step, step }, &b, &nb));
	cr_assert(na > 0 && nb == na && b[0].busy_ns == a[0].busy_ns + 1, "step %lld read from view_devstep", (long long)step);
	db_device_stats_free(a, na);
	db_device_stats_free(b, nb);
	OK(db_exec_sql(db, "UPDATE view_devstep SET busy_ns = busy_ns - 1"));
	expect_view_devices_pass(db, step, "summary tables");
	OK(db_exec_sql(db, "UPDATE view_device SET busy_ns = busy_ns + 1; UPDATE view_devstep SET busy_ns = busy_ns + 1;"
			   " UPDATE view_info SET value = value - 1 WHERE key = 'version'"));
	expect_view_devices_pass(db, step, "an older summary");
}

static void expect_view_devices_pass(struct db *db, int64_t step, const char *when)
{
	/* the whole run and a single step read the tables; a range, and a step the profile lacks, compute */
	const struct db_filter F[] = { { -1, -1, -1 }, { 0, -1, -1 }, { 1, -1, -1 }, { -1, step, step }, { 0, step, step },
				       { 1, step, step }, { -1, step - 1, step - 1 }, { -1, step + 1, step + 1 },
				       { -1, step - 1, step + 1 }, { -1, 1000, 1000 } };
	for (size_t k = 0; k < sizeof F / sizeof F[0]; k++) {
		struct db_device_stat *a, *b;
		int na, nb;
		OK(db_device_stats(db, F[k], &a, &na));
		OK(db_view_device_stats(db, F[k], &b, &nb));
		cr_assert_eq(nb, na, "%s, filter %zu: %d devices, db_device_stats %d", when, k, nb, na);
		for (int i = 0; i < na; i++) {
			/* every field before the streams: integers and the copies' bandwidths, bit for bit */
			cr_expect(!memcmp(&a[i], &b[i], offsetof(struct db_device_stat, streams)), "%s, filter %zu device %d",
				  when, k, i);
			cr_assert_eq(b[i].nstreams, a[i].nstreams, "%s, filter %zu device %d streams", when, k, i);
			for (int j = 0; j < a[i].nstreams; j++) {
				const struct db_stream_stat *x = &a[i].streams[j], *y = &b[i].streams[j];
				cr_expect(x->stream == y->stream && x->kernels == y->kernels && x->linked == y->linked &&
						  x->queue_len_mean == y->queue_len_mean && x->queue_len_max == y->queue_len_max &&
						  x->launch_delay_p50_ns == y->launch_delay_p50_ns &&
						  x->launch_delay_p95_ns == y->launch_delay_p95_ns && x->short_kernels == y->short_kernels &&
						  !memcmp(x->idle_ns, y->idle_ns, sizeof x->idle_ns),
					  "%s, filter %zu device %d stream %d", when, k, i, j);
			}
		}
		db_device_stats_free(a, na);
		db_device_stats_free(b, nb);
	}
}

Test(db_device, streams_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/s.db", tmpdir);
	struct db *db = fill_with(p, 1);
	struct db_device_stat *d;
	int n;
	OK(db_device_stats(db, (struct db_filter){ -1, 3, 3 }, &d, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(d[0].counted, 7);
	cr_assert_eq(d[0].linked, 7);
	cr_assert_eq(d[0].nstreams, 2);
	const struct db_stream_stat *a = &d[0].streams[0], *b = &d[0].streams[1];
	cr_assert_eq(a->stream, 7);
	cr_assert_eq(a->kernels, 3);
	/* the one gap, [4000,5000), ends with the copy launched at 4800, after it began: host wait */
	cr_assert_eq(a->idle_ns[DB_IDLE_HOST_WAIT], 1000);
	cr_assert_eq(a->idle_ns[DB_IDLE_KERNEL_WAIT] + a->idle_ns[DB_IDLE_OTHER], 0);
	cr_assert_eq(a->launch_delay_p50_ns, 200);   /* delays 100, 500, 200 */
	cr_assert_eq(a->launch_delay_p95_ns, 500);
	cr_assert_eq(a->short_kernels, 1);           /* the copy: 1000 ns on the device, its call 1500 */
	/* queue after +900 -1000 +1500 -2000 +4800 -5000: 1 0 1 0 1 0 */
	cr_assert_float_eq(a->queue_len_mean, 0.5, 1e-12);
	cr_assert_eq(a->queue_len_max, 1);
	cr_assert_eq(b->stream, 9);
	cr_assert_eq(b->kernels, 4);
	cr_assert_eq(b->idle_ns[DB_IDLE_HOST_WAIT], 100);     /* [3000,3100): B launched at 3050 */
	cr_assert_eq(b->idle_ns[DB_IDLE_OTHER], 46800);       /* [3200,50000): C launched long before */
	cr_assert_eq(b->idle_ns[DB_IDLE_KERNEL_WAIT], 100);   /* [50500,50600): under 30 us */
	cr_assert_eq(b->launch_delay_p50_ns, 23750);          /* delays 100, 50, 47400, 47900 */
	cr_assert_eq(b->launch_delay_p95_ns, 47900);
	cr_assert_eq(b->short_kernels, 1);   /* A (500 < 700); B's call is 60 us, over HTA's 50 us cut-off */
	/* +2400 -2500 +2600 +2700 +3050 -3100 -50000 -50600: 1 0 1 2 3 2 1 0 */
	cr_assert_float_eq(b->queue_len_mean, 10.0 / 8, 1e-12);
	cr_assert_eq(b->queue_len_max, 3);
	cr_assert_eq(d[0].idle_by_cause_ns[DB_IDLE_HOST_WAIT], 1100);
	cr_assert_eq(d[0].idle_by_cause_ns[DB_IDLE_KERNEL_WAIT], 100);
	cr_assert_eq(d[0].idle_by_cause_ns[DB_IDLE_OTHER], 46800);
	cr_assert_eq(d[0].launch_delay_p50_ns, 200);   /* 50 100 100 200 500 47400 47900 */
	cr_assert_eq(d[0].launch_delay_p95_ns, 47900);
	cr_assert_eq(d[0].span_ns, 49700);             /* [1000, 50700) */
	db_device_stats_free(d, n);
	expect_view_devices_equal(db, 3);
	/* by default, with an earlier step, everything is launched in the last step: nothing counted,
	 * no stream */
	add_earlier_step(db);
	OK(db_device_stats(db, DB_FILTER_ALL, &d, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(d[0].counted, 0);
	cr_assert_eq(d[0].nstreams, 0);
	cr_assert_eq(d[0].launch_delay_p50_ns, -1);
	db_device_stats_free(d, n);
	db_close(db);
}

static int64_t count_sql(sqlite3 *h, const char *sql)
{
	sqlite3_stmt *s;
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW, "%s", sql);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* v4: events equal in (rank, start_ns, tid, kind, name_id, dur_ns) are rows of their own when the
 * writer gives them distinct ords; one whose whole key is stored already is an error, never lost. */
Test(db_device, equal_events_are_rows_of_their_own)
{
	char p[256];
	snprintf(p, sizeof p, "%s/dup.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	int64_t nid;
	OK(db_intern(db, "aten::zeros", &nid));
	struct db_event e[130];
	for (int i = 0; i < 130; i++)   /* two multi-row INSERTs and two single rows */
		e[i] = (struct db_event){ .start_ns = 1000, .dur_ns = 5, .step = -1, .name_id = nid, .rank = 0, .tid = 0,
					  .kind = DB_KIND_OP, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1,
					  .ord = i };
	OK(db_put_events(db, e, 130));
	for (int i = 0; i < 130; i += 43) {
		char js[32];
		int n = snprintf(js, sizeof js, "{\"External id\":%d}", i);
		OK(db_put_arg(db, &e[i], js, (size_t)n));
	}
	cr_assert_eq(db_put_event(db, &e[7]), ASCENT_EINTERNAL, "a second row with one whole key is refused");
	cr_assert_eq(db_put_events(db, e, 64), ASCENT_EINTERNAL, "so are 64 of them");
	OK(db_commit(db));
	OK(db_finalize(db));
	int64_t n;
	OK(db_count(db, "event", &n));
	cr_assert_eq(n, 130);
	OK(db_count(db, "arg", &n));
	cr_assert_eq(n, 4);
	struct db_op_stat *o;
	int no;
	OK(db_op_stats(db, DB_FILTER_ALL, 1, &o, &no));
	cr_assert_eq(no, 1);
	cr_assert_eq(o[0].count, 130);
	cr_assert_eq(o[0].total_ns, 650);
	db_op_stats_free(o, no);
	db_close(db);
}

/* A v3 file (key without ord, every event once) reads as it is, and DB_UPDATE rebuilds event and
 * arg with ord 0 at the end of the key: the same rows, the views and indexes back, equal events
 * addable afterwards. */
Test(db_device, migrates_v3_key_to_v4_with_ord)
{
	char p[256];
	snprintf(p, sizeof p, "%s/v3.db", tmpdir);
	struct db *db = fill(p);
	db_close(db);
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h,
				  "PRAGMA legacy_alter_table = ON;"
				  "CREATE TABLE e3(rank INTEGER NOT NULL, start_ns INTEGER NOT NULL, tid INTEGER NOT NULL,"
				  " kind INTEGER NOT NULL, name_id INTEGER NOT NULL, dur_ns INTEGER NOT NULL, step INTEGER, mb INTEGER,"
				  " layer INTEGER, bytes INTEGER, flops INTEGER, peer INTEGER, comm_id INTEGER, seq INTEGER,"
				  " stack_id INTEGER, site_id INTEGER, PRIMARY KEY(rank, start_ns, tid, kind, name_id, dur_ns)) WITHOUT ROWID;"
				  "INSERT INTO e3 SELECT rank, start_ns, tid, kind, name_id, dur_ns, step, mb, layer, bytes, flops, peer,"
				  " comm_id, seq, stack_id, site_id FROM event;"
				  "CREATE TABLE a3(rank INTEGER NOT NULL, tid INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
				  " kind INTEGER NOT NULL, name_id INTEGER NOT NULL, dur_ns INTEGER NOT NULL, args TEXT NOT NULL,"
				  " PRIMARY KEY(rank, start_ns, tid, kind, name_id, dur_ns)) WITHOUT ROWID;"
				  "INSERT INTO a3 SELECT rank, tid, start_ns, kind, name_id, dur_ns, args FROM arg;"
				  "DROP TABLE event; DROP TABLE arg; ALTER TABLE e3 RENAME TO event; ALTER TABLE a3 RENAME TO arg;"
				  "CREATE INDEX event_comm ON event(comm_id, seq) WHERE comm_id IS NOT NULL;"
				  "CREATE INDEX event_step ON event(kind, rank, step) WHERE kind = 3;"
				  "PRAGMA user_version = 3;",
				  NULL, NULL, NULL),
		     SQLITE_OK, "%s", sqlite3_errmsg(h));
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM pragma_table_info('event') WHERE name = 'ord'"), 0);
	sqlite3_close(h);
	const char *a1 = "{\"Input Dims\": [[2, 3], [3, 4]], \"Input type\": [\"float\", \"float\"]}";
	OK(db_open(p, DB_READ, &db));   /* read as it is */
	cr_assert_eq(db_schema_version(db), 3);
	struct db_step_stat *s;
	int n;
	OK(db_step_stats(db, DB_FILTER_ALL, &s, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(s[0].computing_ns, 4000);
	free(s);
	char *json = mm_args(db);
	cr_assert_str_eq(json, a1);
	free(json);
	db_close(db);
	OK(db_open(p, DB_UPDATE, &db));
	cr_assert_eq(db_schema_version(db), DB_SCHEMA_VERSION);
	json = mm_args(db);
	cr_assert_str_eq(json, a1);
	free(json);
	OK(db_step_stats(db, DB_FILTER_ALL, &s, &n));
	cr_assert_eq(n, 1);
	cr_assert_eq(s[0].computing_ns, 4000);
	free(s);
	/* an event equal to a migrated one (ord 0) is a row of its own with ord 1 */
	OK(db_begin(db));
	int64_t nid;
	OK(db_intern(db, "gemm", &nid));
	struct db_event k = { .start_ns = 1000, .dur_ns = 2000, .step = -1, .name_id = nid, .rank = 0, .tid = 1,
			      .kind = DB_KIND_KERNEL, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1, .ord = 1 };
	OK(db_put_event(db, &k));
	OK(db_commit(db));
	db_close(db);
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM event"), 9);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM event WHERE ord = 0"), 8);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM arg WHERE ord = 0"), 3);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM sqlite_master WHERE name IN ('event_v3', 'arg_v3')"), 0);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name IN ('event_comm', 'event_step')"),
		     2);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM sqlite_master WHERE sql LIKE '%PRIMARY KEY(rank, start_ns, tid, kind,"
				  " name_id, dur_ns, ord)%'"), 2);
	cr_assert_eq(count_sql(h, "SELECT sum(instances) FROM op_summary"), 3, "the views read the new table");
	sqlite3_close(h);
}

/* Host-to-device copies weighed against the other device work of their device: a kernel [0, 1000),
 * copies HtoD [500, 1500) and pageable HtoD [3000, 3400), a DtoH copy [1200, 1300) (other work);
 * on a second device a kernel that hides nothing of the first device's copies. Union of the HtoD
 * copies 1400; under other work [500, 1000) + [1200, 1300) = 600; exposed 800. */
Test(db_device, h2d_exposure)
{
	char p[256];
	snprintf(p, sizeof p, "%s/h2d.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 1, 7, "gpu 0 stream 7"));
	OK(db_put_thread(db, 0, 2, 8, "gpu 1 stream 8"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	OK(db_put_device_lane(db, 0, 2, 1, 8));
	ev(db, 1, DB_KIND_KERNEL, "gemm", 0, 1000, -1);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy HtoD (Device -> Device)", 500, 1000, -1);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy HtoD (Pageable -> Device)", 3000, 400, -1);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy DtoH (Device -> Pinned)", 1200, 100, -1);
	ev(db, 2, DB_KIND_KERNEL, "gemm", 0, 5000, -1);
	OK(db_commit(db));
	OK(db_finalize(db));
	struct db_h2d_exposure e;
	OK(db_h2d_exposure(db, DB_FILTER_ALL, &e));
	cr_assert_eq(e.copies, 2);
	cr_assert_eq(e.pageable, 1);
	cr_assert_eq(e.total_ns, 1400);
	cr_assert_eq(e.union_ns, 1400);
	cr_assert_eq(e.exposed_ns, 800);
	db_close(db);
}

Test(db_device, runtime_calls_classed_by_name)
{
	static const struct {
		const char *name;
		int cls;
	} C[] = {
		{ "cudaLaunchKernel", DB_RT_NONBLOCKING }, { "cudaMemcpyAsync", DB_RT_NONBLOCKING },
		{ "cudaStreamWaitEvent", DB_RT_NONBLOCKING }, { "cudaEventQuery", DB_RT_NONBLOCKING },
		{ "cuLaunchKernelEx", DB_RT_NONBLOCKING }, { "hipLaunchKernel", DB_RT_NONBLOCKING },
		{ "cudaStreamSynchronize", DB_RT_SYNC }, { "cudaDeviceSynchronize", DB_RT_SYNC },
		{ "cudaEventSynchronize", DB_RT_SYNC }, { "cuCtxSynchronize", DB_RT_SYNC },
		{ "hipDeviceSynchronize", DB_RT_SYNC }, { "aclrtSynchronizeStream", DB_RT_SYNC },
		{ "synchronizeStream", DB_RT_SYNC }, { "synchronize", DB_RT_SYNC },
		{ "cudaMemcpy", DB_RT_SYNC_COPY }, { "cudaMemcpy2D", DB_RT_SYNC_COPY }, { "cuMemcpyHtoD_v2", DB_RT_SYNC_COPY },
		{ "hipMemcpyWithStream", DB_RT_SYNC_COPY }, { "aclrtMemcpy", DB_RT_SYNC_COPY },
		{ "aclrtMemcpyAsync", DB_RT_NONBLOCKING }, { "runFunction - job_prep_and_submit_for_execution", DB_RT_NONBLOCKING },
		{ "cudnnConvolutionForward", -1 }, { "hipblasGemmEx", -1 }, { "aten::copy_", -1 }, { "cuda", -1 },
		{ "ProfilerStep#3", -1 }, { "synchronize_all", -1 },
	};
	for (size_t i = 0; i < sizeof C / sizeof C[0]; i++)
		cr_expect_eq(db_runtime_class(C[i].name), C[i].cls, "%s: %d, expected %d", C[i].name,
			     db_runtime_class(C[i].name), C[i].cls);
}

/* The streams fixture's calls by hand: cudaLaunchKernel 50, 600, 700, 60000, 10, 10 ns, all six
 * starting a link (total 61370, nearest-rank p95 of six = the 6th = 60000); cudaMemcpyAsync 1500
 * linked to "Memcpy HtoD" (no "Pageable": not blocking). Added: a pageable copy and a
 * synchronisation nested in an operator and a user range starting with it. */
Test(db_device, runtime_stats_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/rt.db", tmpdir);
	struct db *db = fill_with(p, 2);
	struct db_runtime_stat *r;
	int n;
	OK(db_runtime_stats(db, DB_FILTER_ALL, &r, &n));
	cr_assert_eq(n, 4);
	/* by total, largest first */
	cr_expect_str_eq(r[0].name, "cudaLaunchKernel");
	cr_expect_eq(r[0].count, 6);
	cr_expect_eq(r[0].launches, 6);
	cr_expect_eq(r[0].total_ns, 61370);
	cr_expect_eq(r[0].p95_ns, 60000);
	cr_expect_eq(r[0].max_ns, 60000);
	cr_expect_eq(r[0].block, DB_RT_NONBLOCKING);
	cr_expect_str_eq(r[1].name, "cudaMemcpyAsync");
	cr_expect_eq(r[1].total_ns, 1500);
	cr_expect_eq(r[1].block, DB_RT_NONBLOCKING);
	cr_expect_str_eq(r[2].name, "cudaStreamSynchronize");
	cr_expect_eq(r[2].block, DB_RT_SYNC);
	cr_expect_eq(r[2].count, 1);
	cr_expect_str_eq(r[3].name, "cudaMemcpyAsync");
	cr_expect_eq(r[3].total_ns, 400);
	cr_expect_eq(r[3].block, DB_RT_PAGEABLE_COPY);
	db_runtime_stats_free(r, n);
	/* blocked: [7000, 7400) and [7500, 8500): 1400 ns; the device's gaps after its work (kernels
	 * [1000,3000) [2000,4000), collective [3500,7000), copy [5000,6000), stream 9's A [2500,3000) B
	 * [3100,3200) C [50000,50500) D [50600,50700), the copy [7100,7300)): 7000-7100 (100, begins
	 * at 7000 inside the pageable copy call), 7300-50000 (42700, begins at 7300 inside it),
	 * 50500-50600 (100, not) */
	struct db_host_blocked b;
	OK(db_host_blocked(db, DB_FILTER_ALL, &b));
	cr_expect_eq(b.calls, 2);
	cr_expect_eq(b.total_ns, 1400);
	cr_expect_eq(b.union_ns, 1400);
	cr_expect_eq(b.ranks, 1);
	cr_expect_eq(b.idle_ns, 42900);
	cr_expect_eq(b.idle_after_ns, 42800);
	db_close(db);
}

/* Copies by kind (docs/device.md), worked out by hand: two steps [0,10000) [10000,20000), every
 * device event launched from thread 0 100 ns before it starts, except a copy launched in the last
 * step and one without a link (both left out, as the device section leaves them out). HTA's
 * bandwidth samples: HtoD 4 at 1000, (0 at 2000), 2 at 3000: mean 3; the memsets overlap: 50 at
 * 6000, 60 at 6005, 10 at 6010, (0 at 6020): mean 40, min 10, max 60. */
Test(db_device, copies_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/copies.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	OK(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#1", 0, 10000, 1);
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#2", 10000, 10000, 2);
	static const struct {
		int kind;
		const char *name, *args;
		int64_t start, dur, launch;   /* launch 0: no link */
	} E[] = {
		{ DB_KIND_MEMCPY, "Memcpy HtoD (Pageable -> Device)", "{\"bytes\": 4000, \"memory bandwidth (GB/s)\": 4}", 1000, 1000, 900 },
		{ DB_KIND_MEMCPY, "Memcpy HtoD (Pinned -> Device)", "{\"bytes\": 1000, \"memory bandwidth (GB/s)\": 2}",
		  3000, 500, 2900 },
		{ DB_KIND_MEMCPY, "Memcpy DtoH (Device -> Pinned)", "{\"bytes\": 600}", 4000, 200, 3900 },
		{ DB_KIND_MEMCPY, "Memcpy PtoP (Device -> Device)", "{\"device\": 0}", 5000, 100, 4900 },
		{ DB_KIND_MEMSET, "Memset (Device)", "{\"bytes\": 500, \"memory bandwidth (GB/s)\": 50}", 6000, 10, 5900 },
		{ DB_KIND_MEMSET, "Memset (Device)", "{\"bytes\": 150, \"memory bandwidth (GB/s)\": 10}", 6005, 15, 5905 },
		{ DB_KIND_MEMCPY, "CopyDeviceToDevice", "{\"bytes\": 100000}", 7000, 100, 6900 },
		{ DB_KIND_MEMCPY, "dma_copy", NULL, 8000, 50, 7900 },
		{ DB_KIND_KERNEL, "gemm", "{\"bytes\": 7}", 9000, 500, 8900 },
		{ DB_KIND_MEMCPY, "Memcpy HtoD (Pinned -> Device)", "{\"bytes\": 9}", 12000, 1000, 11000 },
		{ DB_KIND_MEMCPY, "Memcpy HtoD (Pinned -> Device)", "{\"bytes\": 9}", 14000, 500, 0 },
	};
	for (size_t i = 0; i < sizeof E / sizeof E[0]; i++) {
		struct db_event e = ev(db, 1, E[i].kind, E[i].name, E[i].start, E[i].dur, -1);
		if (E[i].args)
			OK(db_put_arg(db, &e, E[i].args, strlen(E[i].args)));
		if (E[i].launch)
			OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, (int64_t)i + 1, 0, E[i].launch, 1, E[i].start));
	}
	OK(db_commit(db));
	OK(db_finalize(db));
	struct db_device_stat *d;
	int n;
	OK(db_device_stats(db, DB_FILTER_ALL, &d, &n));
	cr_assert_eq(n, 1);
	cr_expect_eq(d[0].counted, 9);
	cr_expect_eq(d[0].after_last_step, 1);
	cr_expect_eq(d[0].unlinked, 1);
	static const struct db_copy_stat want[DB_COPY_KINDS] = {
		[DB_COPY_HTOD] = { 2, 5000, 1500, 0, 2, 3, 2, 4 },  [DB_COPY_DTOH] = { 1, 600, 200, 0 },
		[DB_COPY_DTOD] = { 1, 100000, 100, 0 }, [DB_COPY_PTOP] = { 1, 0, 100, 1 },
		[DB_COPY_OTHER] = { 1, 0, 50, 1 },      [DB_COPY_MEMSET] = { 2, 650, 25, 0, 3, 40, 10, 60 },
	};
	for (int k = 0; k < DB_COPY_KINDS; k++) {
		const struct db_copy_stat *g = &d[0].copies[k], *w = &want[k];
		cr_expect(g->count == w->count && g->bytes == w->bytes && g->total_ns == w->total_ns &&
				  g->no_bytes == w->no_bytes && g->bw_samples == w->bw_samples,
			  "%s: count %lld bytes %lld time %lld no bytes %lld samples %lld", db_copy_kind_name(k),
			  (long long)g->count, (long long)g->bytes, (long long)g->total_ns, (long long)g->no_bytes,
			  (long long)g->bw_samples);
		cr_expect(fabs(g->bw_mean_gbs - w->bw_mean_gbs) < 1e-9 && fabs(g->bw_min_gbs - w->bw_min_gbs) < 1e-9 &&
				  fabs(g->bw_max_gbs - w->bw_max_gbs) < 1e-9,
			  "%s: HTA mean %g min %g max %g", db_copy_kind_name(k), g->bw_mean_gbs, g->bw_min_gbs,
			  g->bw_max_gbs);
	}
	db_device_stats_free(d, n);
	expect_view_devices_equal(db, 1);
	db_close(db);
	cr_expect_eq(db_copy_kind("Memcpy DtoH (Device -> Pageable)", DB_KIND_MEMCPY), DB_COPY_DTOH);
	cr_expect_eq(db_copy_kind("CopyHostToDevice", DB_KIND_MEMCPY), DB_COPY_HTOD);
	cr_expect_eq(db_copy_kind("Memcpy HtoD", DB_KIND_KERNEL), -1);
	cr_expect_eq(db_copy_kind("anything", DB_KIND_MEMSET), DB_COPY_MEMSET);
	cr_expect_str_eq(db_copy_kind_name(DB_COPY_PTOP), "Memcpy PtoP");
}

/* Memory of several devices per rank (v5): the host and two GPUs of rank 0, each its own series. By
 * hand: host 100 then 150 (peak 150, final 150); device 0 1000, 3000, 2000 (peak 3000 at 30, final
 * 2000, 2 allocs 1 free); device 1 500 (peak 500). The whole rank summed would peak at 3650, a
 * figure of no device. */
static void put_mem3(struct db *db)
{
	OK(db_put_mem(db, 0, DB_MEM_HOST, 10, 100, DB_MEM_OTHER, 100, 0));
	OK(db_put_mem(db, 0, 0, 20, 1000, DB_MEM_OTHER, 1000, 0));
	OK(db_put_mem(db, 0, 1, 25, 500, DB_MEM_OTHER, 500, 0));
	OK(db_put_mem(db, 0, 0, 30, 2000, DB_MEM_OTHER, 3000, 0));
	OK(db_put_mem(db, 0, DB_MEM_HOST, 35, 50, DB_MEM_OTHER, 150, 0));
	OK(db_put_mem(db, 0, 0, 40, -1000, DB_MEM_OTHER, 2000, 0));
}

static void check_mem3(struct db *db)
{
	struct db_mem_stat *m;
	int n;
	OK(db_mem_stats(db, DB_FILTER_ALL, &m, &n));
	cr_assert_eq(n, 3);
	cr_assert_eq(m[0].device, DB_MEM_HOST);
	cr_assert_eq(m[0].peak_bytes, 150);
	cr_assert_eq(m[0].allocs, 2);
	cr_assert_eq(m[1].device, 0);
	cr_assert_eq(m[1].peak_bytes, 3000);
	cr_assert_eq(m[1].peak_ts_ns, 30);
	cr_assert_eq(m[1].final_bytes, 2000);
	cr_assert_eq(m[1].allocs, 2);
	cr_assert_eq(m[1].frees, 1);
	cr_assert_eq(m[2].device, 1);
	cr_assert_eq(m[2].peak_bytes, 500);
	free(m);
	OK(db_view_mem_peaks(db, DB_FILTER_ALL, &m, &n));   /* the viewer's cached copy */
	cr_assert_eq(n, 3);
	cr_assert_eq(m[1].device, 0);
	cr_assert_eq(m[1].peak_bytes, 3000);
	cr_assert_eq(m[2].device, 1);
	free(m);
	int64_t ser[2];
	OK(db_view_mem_series(db, -1, 0, 10001, 2, ser));
	cr_assert_eq(ser[0], 3000, "the fullest device, not the rank's sum (3650): %lld", (long long)ser[0]);
}

Test(db_device, memory_per_device)
{
	char p[256];
	snprintf(p, sizeof p, "%s/mem.db", tmpdir);
	struct db *db = fill(p);
	OK(db_begin(db));
	put_mem3(db);
	OK(db_commit(db));
	int built;
	OK(db_view_prepare(db, &built));
	check_mem3(db);
	db_close(db);
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	cr_assert_eq(count_sql(h, "SELECT count(*) FROM mem_peak"), 3);
	cr_assert_eq(count_sql(h, "SELECT peak_bytes FROM mem_peak WHERE device = 0"), 3000);
	cr_assert_eq(count_sql(h, "SELECT peak_ts_ns FROM mem_peak WHERE device = 0"), 30);
	sqlite3_close(h);
}

/* A v4 file (mem_event without device, the old mem_peak): read as it is, its rows are the host's
 * when the profiler wrote it and of an unknown device when it was imported; DB_UPDATE migrates it,
 * and a migrated file takes several devices. */
static void make_v4(const char *p, int imported)
{
	struct db *db = fill(p);
	OK(db_begin(db));
	OK(db_put_mem(db, 0, DB_MEM_HOST, 10, 100, DB_MEM_PARAM, 100, 0));
	OK(db_put_mem(db, 0, DB_MEM_HOST, 20, -40, DB_MEM_PARAM, 60, 0));
	if (imported)
		OK(db_set_meta(db, "import_source", "kineto"));
	OK(db_commit(db));
	db_close(db);
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h,
				  "CREATE TABLE m4(rank INTEGER NOT NULL, ts_ns INTEGER NOT NULL, bytes INTEGER NOT NULL,"
				  " category INTEGER NOT NULL, in_use INTEGER NOT NULL, stack_id INTEGER);"
				  "INSERT INTO m4 SELECT rank, ts_ns, bytes, category, in_use, stack_id FROM mem_event ORDER BY rowid;"
				  "DROP VIEW mem_peak; DROP TABLE mem_event; ALTER TABLE m4 RENAME TO mem_event;"
				  "CREATE VIEW mem_peak AS SELECT m.rank, m.category, max(m.in_use) AS peak_bytes FROM mem_event m"
				  " GROUP BY m.rank, m.category;"
				  "PRAGMA user_version = 4;",
				  NULL, NULL, NULL),
		     SQLITE_OK, "%s", sqlite3_errmsg(h));
	sqlite3_close(h);
}

Test(db_device, migrates_v4_memory_to_v5_devices)
{
	for (int imported = 0; imported < 2; imported++) {
		char p[256];
		snprintf(p, sizeof p, "%s/v4-%d.db", tmpdir, imported);
		make_v4(p, imported);
		int want = imported ? DB_MEM_DEVICE_UNKNOWN : DB_MEM_HOST;
		struct db *db;
		OK(db_open(p, DB_READ, &db));
		cr_assert_eq(db_schema_version(db), 4);
		struct db_mem_stat *m;
		int n;
		OK(db_mem_stats(db, DB_FILTER_ALL, &m, &n));
		cr_assert_eq(n, 1);
		cr_assert_eq(m[0].device, want);
		cr_assert_eq(m[0].peak_bytes, 100);
		cr_assert_eq(m[0].final_bytes, 60);
		free(m);
		int built;
		OK(db_view_prepare(db, &built));   /* the viewer on a file opened read-only: temporary tables */
		OK(db_view_mem_peaks(db, DB_FILTER_ALL, &m, &n));
		cr_assert_eq(n, 1);
		cr_assert_eq(m[0].device, want);
		free(m);
		db_close(db);
		OK(db_open(p, DB_UPDATE, &db));
		cr_assert_eq(db_schema_version(db), DB_SCHEMA_VERSION);
		OK(db_mem_stats(db, DB_FILTER_ALL, &m, &n));
		cr_assert_eq(n, 1);
		cr_assert_eq(m[0].device, want);
		cr_assert_eq(m[0].peak_bytes, 100);
		free(m);
		OK(db_begin(db));
		OK(db_put_mem(db, 0, 3, 30, 7, DB_MEM_OTHER, 7, 0));
		OK(db_commit(db));
		OK(db_mem_stats(db, DB_FILTER_ALL, &m, &n));
		cr_assert_eq(n, 2);
		cr_assert_eq(m[1].device, 3);
		cr_assert_eq(m[1].peak_bytes, 7);
		free(m);
		db_close(db);
		sqlite3 *h;
		cr_assert_eq(sqlite3_open(p, &h), SQLITE_OK);
		cr_assert_eq(count_sql(h, "SELECT count(*) FROM mem_event WHERE device = -2"), imported ? 2 : 0);
		cr_assert_eq(count_sql(h, "SELECT count(*) FROM mem_event WHERE device = -1"), imported ? 0 : 2);
		cr_assert_eq(count_sql(h, "SELECT count(*) FROM mem_peak"), 2, "mem_peak made again, by device");
		cr_assert_eq(count_sql(h, "SELECT peak_bytes FROM mem_peak WHERE device = 3"), 7);
		sqlite3_close(h);
	}
}

/* Device work by launching step (db_step_work), by hand. Rank 0: steps 3 [0, 10000) and 5
 * [12000, 20000), a device lane (device 0). Kernels (start, dur; launched at):
 *   "gemm" [500, 1500) at -500: before step 3;
 *   "gemm" [9000, 14000) and a copy [13000, 15000), both at 900: step 3 (busy 6000, compute 5000,
 *     in step 3's window 1000: [9000, 10000));
 *   "gemm" [16000, 17000) at 11000: after step 3 (the gap before step 5);
 *   "gemm" [18000, 23000) at 15000: step 5 (in its window 2000, runs past its end by 3000);
 *   "gemm" [30000, 30100) at 25000: after step 5; "ncclKernel_AllReduce" [21000, 22000) unlinked.
 * Rank 1, no steps: a kernel linked (no step) and one unlinked. Every event in one row. */
static void expect_view_step_work_equal(struct db *db, const char *when);

Test(db_device, step_work_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/sw.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	for (int r = 0; r < 2; r++) {
		struct db_rank_info ri = { .rank = r, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 100, "main"));
		OK(db_put_thread(db, r, 1, 7, "GPU 0 stream 7"));
		OK(db_put_device_lane(db, r, 1, 0, 7));
	}
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#3", 0, 10000, 3);
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#5", 12000, 8000, 5);
	static const struct {
		int kind;
		const char *name;
		int64_t s, d, launch;   /* launch INT64_MIN: no link */
	} K[] = {
		{ DB_KIND_KERNEL, "gemm", 500, 1000, -500 },      { DB_KIND_KERNEL, "gemm", 9000, 5000, 900 },
		{ DB_KIND_MEMCPY, "Memcpy DtoD", 13000, 2000, 900 }, { DB_KIND_KERNEL, "gemm", 16000, 1000, 11000 },
		{ DB_KIND_KERNEL, "gemm", 18000, 5000, 15000 },   { DB_KIND_KERNEL, "gemm", 30000, 100, 25000 },
		{ DB_KIND_COMM, "ncclKernel_AllReduce", 21000, 1000, INT64_MIN },
	};
	int64_t id = 0;
	for (size_t i = 0; i < sizeof K / sizeof K[0]; i++) {
		ev(db, 1, K[i].kind, K[i].name, K[i].s, K[i].d, -1);
		if (K[i].launch != INT64_MIN)
			OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, ++id, 0, K[i].launch, 1, K[i].s));
	}
	int64_t gemm;
	OK(db_intern(db, "gemm", &gemm));
	for (int i = 0; i < 2; i++) {   /* rank 1: [100, 150) linked, [300, 370) not */
		struct db_event e = { .start_ns = i ? 300 : 100, .dur_ns = i ? 70 : 50, .step = -1, .name_id = gemm, .rank = 1,
				      .tid = 1, .kind = DB_KIND_KERNEL, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
		OK(db_put_event(db, &e));
	}
	OK(db_put_flow(db, 1, DB_FLOW_LAUNCH, ++id, 0, 90, 1, 100));
	OK(db_commit(db));
	struct db_step_work *w;
	int n;
	OK(db_step_work(db, DB_FILTER_ALL, &w, &n));
	static const struct {
		int rank, where;
		int64_t step, events, device_ns, busy, compute, in_window;
		const char *label;
	} W[] = {
		{ 0, DB_SW_BEFORE, 3, 1, 1000, 1000, 1000, 0, "before 3" },
		{ 0, DB_SW_STEP, 3, 2, 7000, 6000, 5000, 1000, "3" },
		{ 0, DB_SW_AFTER, 3, 1, 1000, 1000, 1000, 0, "after 3" },
		{ 0, DB_SW_STEP, 5, 1, 5000, 5000, 5000, 2000, "5" },
		{ 0, DB_SW_AFTER, 5, 1, 100, 100, 100, 0, "after 5" },
		{ 0, DB_SW_UNLINKED, -1, 1, 1000, 1000, 0, 0, "unlinked" },   /* a collective: not compute */
		{ 1, DB_SW_NO_STEP, -1, 1, 50, 50, 50, 0, "no step" },
		{ 1, DB_SW_UNLINKED, -1, 1, 70, 70, 70, 0, "unlinked" },
	};
	cr_assert_eq(n, (int)(sizeof W / sizeof W[0]), "%d rows", n);
	for (int i = 0; i < n; i++) {
		char label[48];
		db_step_work_label(&w[i], label, sizeof label);
		cr_expect_eq(w[i].rank, W[i].rank, "row %d rank", i);
		cr_expect_eq(w[i].where, W[i].where, "row %d where %d", i, w[i].where);
		cr_expect_eq(w[i].step, W[i].step, "row %d step %lld", i, (long long)w[i].step);
		cr_expect_eq(w[i].events, W[i].events, "row %d events %lld", i, (long long)w[i].events);
		cr_expect_eq(w[i].device_ns, W[i].device_ns, "row %d device %lld", i, (long long)w[i].device_ns);
		cr_expect_eq(w[i].busy_ns, W[i].busy, "row %d busy %lld", i, (long long)w[i].busy_ns);
		cr_expect_eq(w[i].compute_ns, W[i].compute, "row %d compute %lld", i, (long long)w[i].compute_ns);
		cr_expect_eq(w[i].in_window_ns, W[i].in_window, "row %d in window %lld", i, (long long)w[i].in_window_ns);
		cr_expect_str_eq(label, W[i].label);
	}
	cr_assert_eq(w[3].last_end_ns - w[3].step_end_ns, 3000);
	free(w);
	/* --steps 5:5: step 5's row alone; --steps 4:4 (no such step): nothing */
	OK(db_step_work(db, (struct db_filter){ -1, 5, 5 }, &w, &n));
	cr_assert_eq(n, 1);
	cr_assert(w[0].where == DB_SW_STEP && w[0].step == 5 && w[0].events == 1);
	free(w);
	OK(db_step_work(db, (struct db_filter){ -1, 4, 4 }, &w, &n));
	cr_assert_eq(n, 0);
	free(w);
	/* the viewer's copy (view_stepwork, db_view_step_work): the same rows under every filter, before
	 * the summary tables exist (computed), with them, and with them no longer current (an older cache
	 * version, its rows altered: computed again) */
	expect_view_step_work_equal(db, "no summary tables");
	int built = 0;
	OK(db_view_prepare(db, &built));
	cr_assert_eq(built, 1);
	expect_view_step_work_equal(db, "summary tables");
	OK(db_exec_sql(db, "UPDATE view_stepwork SET events = events + 1; UPDATE view_info SET value = value - 1 WHERE key = 'version'"));
	expect_view_step_work_equal(db, "an older summary");
	db_close(db);
}

static void expect_view_step_work_equal(struct db *db, const char *when)
{
	static const struct db_filter F[] = { { -1, -1, -1 }, { 0, -1, -1 }, { 1, -1, -1 }, { -1, 5, 5 },
					      { -1, 4, 4 }, { 0, 3, 5 },    { 1, 3, 5 } };
	for (size_t k = 0; k < sizeof F / sizeof F[0]; k++) {
		struct db_step_work *v, *w;
		int nv, n;
		OK(db_step_work(db, F[k], &w, &n));
		OK(db_view_step_work(db, F[k], &v, &nv));
		cr_assert_eq(nv, n, "%s, filter %zu: %d rows, db_step_work %d", when, k, nv, n);
		for (int i = 0; i < n; i++) {
			const struct db_step_work *a = &w[i], *b = &v[i];
			cr_expect(a->rank == b->rank && a->where == b->where && a->step == b->step &&
					  a->step_start_ns == b->step_start_ns && a->step_end_ns == b->step_end_ns &&
					  a->events == b->events && a->device_ns == b->device_ns && a->busy_ns == b->busy_ns &&
					  a->compute_ns == b->compute_ns && a->in_window_ns == b->in_window_ns &&
					  a->first_start_ns == b->first_start_ns && a->last_end_ns == b->last_end_ns,
				  "%s, filter %zu row %d differs", when, k, i);
		}
		free(w);
		free(v);
	}
}

/* Host-to-device copies by launching step (--steps 3:3, step 3 = [0, 10000)): a copy launched at
 * 9000 that runs [12000, 13000), after the step's window, is the step's; a copy launched at -100
 * (before the step) that runs [500, 900) is not, though it runs inside the window. The copy of
 * step 3 is hidden under a kernel launched after the step, [12500, 14000): exposed 500. */
Test(db_device, h2d_exposure_by_launching_step)
{
	char p[256];
	snprintf(p, sizeof p, "%s/h2d2.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	OK(db_put_thread(db, 0, 1, 7, "gpu 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#3", 0, 10000, 3);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy HtoD (Pinned -> Device)", 12000, 1000, -1);
	ev(db, 1, DB_KIND_MEMCPY, "Memcpy HtoD (Pinned -> Device)", 500, 400, -1);
	ev(db, 1, DB_KIND_KERNEL, "gemm", 12500, 1500, -1);
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 1, 0, 9000, 1, 12000));
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 2, 0, -100, 1, 500));
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 3, 0, 11000, 1, 12500));
	OK(db_commit(db));
	struct db_h2d_exposure e;
	OK(db_h2d_exposure(db, (struct db_filter){ -1, 3, 3 }, &e));
	cr_assert_eq(e.copies, 1);
	cr_assert_eq(e.total_ns, 1000);
	cr_assert_eq(e.union_ns, 1000);
	cr_assert_eq(e.exposed_ns, 500);
	OK(db_h2d_exposure(db, DB_FILTER_ALL, &e));   /* no filter: both copies */
	cr_assert_eq(e.copies, 2);
	cr_assert_eq(e.exposed_ns, 400 + 500);
	db_close(db);
}

/* The step of each event for the viewer's summaries (db_stepmap): rank 0 an imported trace (steps
 * 3 [0, 10000) and 5 [12000, 20000), events without step numbers, a device lane): a CPU operator at
 * 500 is in step 3, one at 11000 in none; a kernel launched at 9000 that runs at 14000 is step 3's,
 * one launched at 11000 none's, an unlinked one none's. Rank 1 is ascent's own (its events carry
 * step numbers): an operator keeps its step 7 though it runs after the step's window, and one
 * without a step stays without, though it runs inside the window (its own tagging is kept). */
Test(db_device, stepmap_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/sm.db", tmpdir);
	struct db *db;
	OK(db_open(p, DB_CREATE, &db));
	OK(db_begin(db));
	for (int r = 0; r < 2; r++) {
		struct db_rank_info ri = { .rank = r, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 100, "main"));
	}
	OK(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#3", 0, 10000, 3);
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#5", 12000, 8000, 5);
	struct db_event o1 = ev(db, 0, DB_KIND_OP, "aten::mm", 500, 100, -1);
	struct db_event o2 = ev(db, 0, DB_KIND_OP, "aten::mm", 11000, 100, -1);
	struct db_event k1 = ev(db, 1, DB_KIND_KERNEL, "gemm", 14000, 100, -1);
	struct db_event k2 = ev(db, 1, DB_KIND_KERNEL, "gemm", 15000, 100, -1);
	struct db_event k3 = ev(db, 1, DB_KIND_KERNEL, "gemm", 16000, 100, -1);
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 1, 0, 9000, 1, 14000));
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 2, 0, 11000, 1, 15000));
	int64_t mm;
	OK(db_intern(db, "matmul", &mm));
	struct db_event r1[3] = {
		{ .rank = 1, .tid = 0, .kind = DB_KIND_STEP, .name_id = mm, .start_ns = 0, .dur_ns = 1000, .step = 7 },
		{ .rank = 1, .tid = 0, .kind = DB_KIND_OP, .name_id = mm, .start_ns = 1500, .dur_ns = 10, .step = 7 },
		{ .rank = 1, .tid = 0, .kind = DB_KIND_OP, .name_id = mm, .start_ns = 500, .dur_ns = 10, .step = -1 },
	};
	for (int i = 0; i < 3; i++) {
		r1[i].mb = r1[i].layer = r1[i].peer = r1[i].comm_id = -1;
		r1[i].seq = -1;
		OK(db_put_event(db, &r1[i]));
	}
	OK(db_commit(db));
	struct db_stepmap *m;
	OK(db_stepmap_new(db, &m));
	cr_expect_eq(db_stepmap_step(m, &o1), 3);
	cr_expect_eq(db_stepmap_step(m, &o2), -1);
	cr_expect_eq(db_stepmap_step(m, &k1), 3);
	cr_expect_eq(db_stepmap_step(m, &k2), -1);
	cr_expect_eq(db_stepmap_step(m, &k3), -1);
	cr_expect_eq(db_stepmap_step(m, &r1[1]), 7);
	cr_expect_eq(db_stepmap_step(m, &r1[2]), -1);
	db_stepmap_free(m);
	db_close(db);
}
