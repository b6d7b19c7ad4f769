/* tests/unit/test_viewer.c — the viewer's db queries (db/view_*.c) and screen model on a fixture
 * profile built through the db writer API; every number below is computed by hand from the
 * fixture (comments give the arithmetic). Also the keys → actions of the viewer state, and the
 * messages for files that cannot be viewed.
 *
 * With ASCENT_VIEW_FIXTURE=PATH, the test fixture/write copies the fixture to PATH (the
 * integration scripts use it to get a profile without a trainer). */
#include "common/common.h"
#include "db/db.h"
#include "viewer/internal.h"   /* vw_live_refresh: a live refresh now, not at the next tick */
#include "viewer/viewer.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[64];
static char fixture[128];

static int64_t id_of(struct db *db, const char *s)
{
	int64_t id = 0;
	cr_assert_eq(db_intern(db, s, &id), 0, "%s", ascent_errmsg());
	return id;
}

static void ev(struct db *db, int rank, int tid, int kind, const char *name, int64_t start, int64_t dur, int64_t step,
	       int64_t bytes, int64_t flops, int peer, int comm_id, int64_t seq, int64_t stack)
{
	struct db_event e = { .start_ns = start, .dur_ns = dur, .step = step, .name_id = id_of(db, name), .bytes = bytes,
			      .flops = flops, .seq = seq, .stack_id = stack, .rank = rank, .tid = tid, .kind = kind, .mb = -1,
			      .layer = -1, .peer = peer, .comm_id = comm_id };
	cr_assert_eq(db_put_event(db, &e), 0, "%s", ascent_errmsg());
}

/* The fixture: 2 ranks, 2 steps; see the file comment of each number in the tests. */
static void build_fixture(const char *path)
{
	struct db *db;
	cr_assert_eq(db_open(path, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_begin(db), 0);
	db_put_run(db, "ascent train --dp 2", "{\"dp\":2,\"tp\":1,\"pp\":1,\"precision\":\"fp32\"}", 2);
	struct db_rank_info r0 = { .rank = 0, .host = "nodeA", .pid = 11, .dp_rank = 0, .tp_rank = 0, .pp_rank = 0,
				   .threads = 2, .t0_ns = 1000000, .end_ns = 2100 };
	struct db_rank_info r1 = { .rank = 1, .host = "nodeB", .pid = 12, .dp_rank = 1, .threads = 1, .t0_ns = 1500000,
				   .clock_offset_ns = -500000, .end_ns = 2100 };   /* shift 0 */
	db_put_rank(db, &r0);
	db_put_rank(db, &r1);
	db_put_thread(db, 0, 0, 100, "main");
	db_put_thread(db, 0, 1, 101, "data");
	db_put_thread(db, 1, 0, 200, "main");
	db_put_comm(db, 0, 1, "dp", 2, 0);
	db_put_comm(db, 1, 1, "dp", 2, 1);
	db_put_frame(db, 1, 0x1000, "nn_gelu_forward", "/usr/bin/ascent", 0x10);
	db_put_frame(db, 2, 0x2000, "trainer_step", "/usr/bin/ascent", 0x20);
	db_put_stack_frame(db, 7, 0, 1);
	db_put_stack_frame(db, 7, 1, 2);
	int64_t loss = id_of(db, "loss");
	for (int s = 0; s < 2; s++) {
		int64_t b = s * 1000;
		/* rank 0: step [b, b+1000); forward [b, b+400): matmul 100, matmul 200, gelu 50 */
		ev(db, 0, 0, DB_KIND_STEP, "step", b, 1000, s, 0, 0, -1, -1, -1, 0);
		ev(db, 0, 0, DB_KIND_PHASE, "forward", b, 400, s, 0, 0, -1, -1, -1, 0);
		ev(db, 0, 0, DB_KIND_OP, "matmul", b, 100, s, 0, 1000, -1, -1, -1, 0);
		ev(db, 0, 0, DB_KIND_OP, "matmul", b + 100, 200, s, 0, 2000, -1, -1, -1, 0);
		ev(db, 0, 0, DB_KIND_OP, "gelu", b + 300, 50, s, 0, 0, -1, -1, -1, s == 0 ? 7 : 0);
		ev(db, 0, 0, DB_KIND_COMM, "allreduce", b + 500, 300, s, 1000000, 0, 0, 1, s, 0);
		/* it waited 40 (step 0), 60 (step 1) in its communicator's queue: the lane's argument */
		struct db_event qe = { .rank = 0, .tid = 0, .start_ns = b + 500, .kind = DB_KIND_COMM,
				       .name_id = id_of(db, "allreduce"), .dur_ns = 300 };
		cr_assert_eq(db_put_arg(db, &qe, s ? "{\"queue_ns\":60}" : "{\"queue_ns\":40}", 15), 0, "%s", ascent_errmsg());
		ev(db, 0, 0, DB_KIND_P2P, "send", b + 850, 50, s, 1000, 0, 1, 2, s, 0);
		ev(db, 0, 1, DB_KIND_DATA, "load", b, 200, s, 0, 0, -1, -1, -1, 0);
		db_put_counter(db, 0, loss, b + 990, 5.0 - s);
		/* rank 1: step [b, b+1000) (step 1: 1100); forward [b, b+450): matmul 150, 250, gelu 50 */
		ev(db, 1, 0, DB_KIND_STEP, "step", b, s ? 1100 : 1000, s, 0, 0, -1, -1, -1, 0);
		ev(db, 1, 0, DB_KIND_PHASE, "forward", b, 450, s, 0, 0, -1, -1, -1, 0);
		ev(db, 1, 0, DB_KIND_OP, "matmul", b, 150, s, 0, 1500, -1, -1, -1, 0);
		ev(db, 1, 0, DB_KIND_OP, "matmul", b + 150, 250, s, 0, 2500, -1, -1, -1, 0);
		ev(db, 1, 0, DB_KIND_OP, "gelu", b + 400, 50, s, 0, 0, -1, -1, -1, 0);
		ev(db, 1, 0, DB_KIND_COMM, "allreduce", b + 600, 200, s, 1000000, 0, 0, 1, s, 0);
		ev(db, 1, 0, DB_KIND_P2P, "recv", b + 850, 100, s, 1000, 0, 0, 2, s, 0);
		db_put_counter(db, 1, loss, b + 990, 5.2 - s);
	}
	/* memory, rank 0: param +1000 @10; activation +500 @20, −500 @700, +800 @1100 */
	db_put_mem(db, 0, DB_MEM_HOST, 10, 1000, DB_MEM_PARAM, 1000, 0);
	db_put_mem(db, 0, DB_MEM_HOST, 20, 500, DB_MEM_ACTIVATION, 500, 0);
	db_put_mem(db, 0, DB_MEM_HOST, 700, -500, DB_MEM_ACTIVATION, 0, 0);
	db_put_mem(db, 0, DB_MEM_HOST, 1100, 800, DB_MEM_ACTIVATION, 800, 0);
	db_put_note(db, 0, 5, "warn", "size budget reached at step 9");
	cr_assert_eq(db_commit(db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_finalize(db), 0, "%s", ascent_errmsg());
	db_close(db);
}

static void setup(void)
{
	strcpy(tmpdir, "/tmp/ascent-view-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(fixture, sizeof fixture, "%s/trace.db", tmpdir);
	build_fixture(fixture);
}

static void teardown(void)
{
	fs_rm_rf(tmpdir);
}

static struct db *open_prepared(void)
{
	struct db *db;
	cr_assert_eq(db_open(fixture, DB_READ, &db), 0, "%s", ascent_errmsg());
	int built = 0;
	cr_assert_eq(db_view_prepare(db, &built), 0, "%s", ascent_errmsg());
	return db;
}

TestSuite(viewer, .init = setup, .fini = teardown);

Test(viewer, fixture_write)
{
	const char *out = getenv("ASCENT_VIEW_FIXTURE");
	if (!out)
		return;
	char *data;
	size_t len;
	cr_assert_eq(fs_read_all(fixture, &data, &len), 0);
	cr_assert_eq(atomic_write_file(out, data, len), 0, "%s", ascent_errmsg());
	free(data);
}

static const struct db_view_op *find_op(const struct db_view_op *o, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(o[i].name, name))
			return &o[i];
	cr_assert_fail("no operator %s", name);
	return NULL;
}

Test(viewer, cache_is_built_once_and_kept_in_the_file)
{
	struct db *db;
	cr_assert_eq(db_open(fixture, DB_READ, &db), 0);
	struct db_view_probe p;
	cr_assert_eq(db_view_probe(db, &p), 0);
	cr_assert(p.indexed && p.has_events && !p.cached);
	cr_assert_eq(p.nranks, 2);
	int built = 0;
	cr_assert_eq(db_view_prepare(db, &built), 0, "%s", ascent_errmsg());
	cr_assert_eq(built, 1);
	db_close(db);
	cr_assert_eq(db_open(fixture, DB_READ, &db), 0);
	cr_assert_eq(db_view_probe(db, &p), 0);
	cr_assert(p.cached);
	cr_assert_eq(db_view_prepare(db, &built), 0);
	cr_assert_eq(built, 0);
	db_close(db);
}

Test(viewer, operator_statistics)
{
	struct db *db = open_prepared();
	struct db_view_op *o;
	int n;
	cr_assert_eq(db_view_ops(db, DB_FILTER_ALL, 1u << DB_KIND_OP, &o, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 2);
	const struct db_view_op *m = find_op(o, n, "matmul");
	/* 2 steps x (100 + 200) on rank 0 + 2 x (150 + 250) on rank 1 */
	cr_assert_eq(m->count, 8);
	cr_assert_eq(m->total_ns, 1400);
	cr_assert_eq(m->self_ns, 1400);
	cr_assert_eq(m->min_ns, 100);
	cr_assert_eq(m->max_ns, 250);
	cr_assert_eq(m->med_ns, 175);     /* sorted 100 100 150 150 200 200 250 250 */
	cr_assert_eq(m->p95_ns, 250);     /* ceil(0.95 * 8) = 8th */
	cr_assert_float_eq(m->flops / (double)m->flops_ns, 10.0, 1e-9);   /* flops = 10 x ns */
	const struct db_view_op *g = find_op(o, n, "gelu");
	cr_assert_eq(g->count, 4);
	cr_assert_eq(g->total_ns, 200);
	cr_assert_eq(g->med_ns, 50);
	db_view_ops_free(o, n);
	/* phases: forward self = 400 − 350 on rank 0, 450 − 450 on rank 1, per step */
	cr_assert_eq(db_view_ops(db, DB_FILTER_ALL, 1u << DB_KIND_PHASE, &o, &n), 0);
	cr_assert_eq(n, 1);
	cr_assert_eq(o[0].total_ns, 2 * 400 + 2 * 450);
	cr_assert_eq(o[0].self_ns, 2 * 50);
	db_view_ops_free(o, n);
	/* rank 1 only: 2 x (150 + 250), median of 150 150 250 250 = 200 */
	cr_assert_eq(db_view_ops(db, (struct db_filter){ 1, -1, -1 }, 1u << DB_KIND_OP, &o, &n), 0);
	m = find_op(o, n, "matmul");
	cr_assert_eq(m->total_ns, 800);
	cr_assert_eq(m->med_ns, 200);
	db_view_ops_free(o, n);
	/* step 1 only: 100 + 200 + 150 + 250; no exact median under a step filter */
	cr_assert_eq(db_view_ops(db, (struct db_filter){ -1, 1, 1 }, 1u << DB_KIND_OP, &o, &n), 0);
	m = find_op(o, n, "matmul");
	cr_assert_eq(m->total_ns, 700);
	cr_assert_eq(m->count, 4);
	cr_assert_eq(m->med_ns, -1);
	db_view_ops_free(o, n);
	db_close(db);
}

/* All ranks under a step restriction read view_opstep (the ranks' rows of each step added up): the
 * same figures as each rank's own rows (view_op) added up here, for every step range and kind. */
Test(viewer, ops_of_all_ranks_by_step_equal_the_ranks_summed)
{
	struct db *db = open_prepared();
	const struct db_filter F[] = { { -1, 0, 0 }, { -1, 1, 1 }, { -1, 0, 1 }, { -1, 0, 5 }, { -1, 3, 4 } };
	const unsigned masks[] = { 1u << DB_KIND_OP, 1u << DB_KIND_PHASE, ~0u };
	for (size_t k = 0; k < sizeof F / sizeof F[0]; k++)
		for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
			struct db_view_op *a, *r0, *r1;
			int na, n0, n1;
			cr_assert_eq(db_view_ops(db, F[k], masks[m], &a, &na), 0, "%s", ascent_errmsg());
			struct db_filter f0 = F[k], f1 = F[k];
			f0.rank = 0;
			f1.rank = 1;
			cr_assert_eq(db_view_ops(db, f0, masks[m], &r0, &n0), 0);
			cr_assert_eq(db_view_ops(db, f1, masks[m], &r1, &n1), 0);
			int names = 0;
			for (int i = 0; i < na; i++) {
				const struct db_view_op *x = &a[i], *y0 = NULL, *y1 = NULL;
				for (int j = 0; j < n0; j++)
					y0 = r0[j].kind == x->kind && r0[j].name_id == x->name_id ? &r0[j] : y0;
				for (int j = 0; j < n1; j++)
					y1 = r1[j].kind == x->kind && r1[j].name_id == x->name_id ? &r1[j] : y1;
				cr_assert(y0 || y1, "filter %zu: %s in no rank", k, x->name);
				int64_t count = (y0 ? y0->count : 0) + (y1 ? y1->count : 0);
				int64_t total = (y0 ? y0->total_ns : 0) + (y1 ? y1->total_ns : 0);
				int64_t self = (y0 ? y0->self_ns : 0) + (y1 ? y1->self_ns : 0);
				int64_t fns = (y0 ? y0->flops_ns : 0) + (y1 ? y1->flops_ns : 0);
				int64_t mn = y0 && y1 ? (y0->min_ns < y1->min_ns ? y0->min_ns : y1->min_ns) : y0 ? y0->min_ns : y1->min_ns;
				int64_t mx = y0 && y1 ? (y0->max_ns > y1->max_ns ? y0->max_ns : y1->max_ns) : y0 ? y0->max_ns : y1->max_ns;
				double fl = (y0 ? y0->flops : 0) + (y1 ? y1->flops : 0);
				cr_expect(x->count == count && x->total_ns == total && x->self_ns == self && x->flops_ns == fns &&
						  x->min_ns == mn && x->max_ns == mx && x->med_ns == -1 && x->p95_ns == -1,
					  "filter %zu mask %zu: %s", k, m, x->name);
				/* the fixture's FLOPs are integers far below 2^53: their sums are exact in any order */
				cr_expect(x->flops == fl, "filter %zu: %s flops %g, ranks %g", k, x->name, x->flops, fl);
				names++;
			}
			/* and no name of a rank is missing */
			for (int j = 0; j < n0 + n1; j++) {
				const struct db_view_op *y = j < n0 ? &r0[j] : &r1[j - n0];
				int found = 0;
				for (int i = 0; i < na; i++)
					found |= a[i].kind == y->kind && a[i].name_id == y->name_id;
				cr_expect(found, "filter %zu: %s missing", k, y->name);
			}
			if (k < 3 && m == 0)
				cr_assert_gt(names, 0, "filter %zu: no operator", k);
			db_view_ops_free(a, na);
			db_view_ops_free(r0, n0);
			db_view_ops_free(r1, n1);
		}
	db_close(db);
}

Test(viewer, collectives_matching_wait_transit_late)
{
	struct db *db = open_prepared();
	struct db_view_comm *c;
	int n;
	cr_assert_eq(db_view_comms(db, DB_FILTER_ALL, 0, &c, &n), 0, "%s", ascent_errmsg());
	const struct db_view_comm *a = NULL;
	for (int i = 0; i < n; i++)
		if (!strcmp(c[i].name, "allreduce"))
			a = &c[i];
	cr_assert_not_null(a);
	cr_assert_eq(a->count, 4);
	cr_assert_eq(a->total_ns, 2 * (300 + 200));
	cr_assert_eq(a->bytes, 4000000);
	cr_assert_eq(a->bucket, 524288);      /* largest power of two <= 1e6 */
	cr_assert_eq(a->group_size, 2);
	cr_assert_eq(a->matched, 4);
	/* per step: last arrival 600; rank 0 waits 100, rank 1 0; both transit 200; rank 1 late 100 */
	cr_assert_eq(a->wait_ns, 200);
	cr_assert_eq(a->transit_ns, 800);
	cr_assert_eq(a->late_ns, 200);
	cr_assert_eq(a->queue_ns, 100);       /* rank 0's arguments 40 + 60 */
	db_view_comms_free(c, n);
	struct db_comm_stat *cs;   /* the report's rows sum them too */
	cr_assert_eq(db_comm_stats(db, DB_FILTER_ALL, &cs, &n), 0, "%s", ascent_errmsg());
	int64_t q = -1;
	for (int i = 0; i < n; i++)
		if (!strcmp(cs[i].name, "allreduce"))
			q = cs[i].queue_ns;
	cr_assert_eq(q, 100);
	db_comm_stats_free(cs, n);
	cr_assert_eq(db_view_comms(db, DB_FILTER_ALL, 1, &c, &n), 0);
	cr_assert(n >= 1);
	int found = 0;
	for (int i = 0; i < n; i++)
		if (c[i].comm_id == 1) {
			found = 1;
			cr_assert_str_eq(c[i].name, "dp");
			cr_assert_eq(c[i].count, 4);
			cr_assert_eq(c[i].group_size, 2);
			cr_assert_str_eq(c[i].members, "0,1");   /* by rank in the communicator */
		}
	cr_assert(found);
	db_view_comms_free(c, n);
	/* rank x rank: allreduce 1e6 each way per step; send 0 -> 1 1000 per step */
	int *ranks, m;
	int64_t *bytes, *count;
	cr_assert_eq(db_view_matrix(db, DB_FILTER_ALL, &ranks, &m, &bytes, &count), 0, "%s", ascent_errmsg());
	cr_assert_eq(m, 2);
	cr_assert_eq(bytes[0 * 2 + 1], 2 * (1000000 + 1000));
	cr_assert_eq(bytes[1 * 2 + 0], 2 * 1000000);
	cr_assert_eq(bytes[0], 0);
	free(ranks);
	free(bytes);
	free(count);
	db_close(db);
}

Test(viewer, steps_ranks_memory)
{
	struct db *db = open_prepared();
	struct db_view_step *s;
	int n;
	cr_assert_eq(db_view_steps(db, DB_FILTER_ALL, &s, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 2);
	cr_assert_eq(s[0].step, 0);
	cr_assert_eq(s[0].max_total_ns - s[0].min_total_ns, 0);
	cr_assert_eq(s[1].max_total_ns, 1100);
	cr_assert_eq(s[1].max_total_ns - s[1].min_total_ns, 100);
	cr_assert_eq(s[1].slow_rank, 1);
	cr_assert_eq(s[0].computing_ns, (350 + 450) / 2);
	cr_assert_eq(s[0].bubble_ns, (0 + 100) / 2);        /* the recv on rank 1 */
	cr_assert(s[0].has_loss);
	cr_assert_float_eq(s[0].loss, 5.1, 1e-9);
	cr_assert_float_eq(s[1].loss, 4.1, 1e-9);
	free(s);
	struct db_view_rank *r;
	cr_assert_eq(db_view_ranks(db, DB_FILTER_ALL, &r, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 2);
	cr_assert_eq(r[0].computing_ns, 700);
	cr_assert_eq(r[1].computing_ns, 900);
	cr_assert_eq(r[0].late_ns, 0);
	cr_assert_eq(r[1].late_ns, 200);
	cr_assert_eq(r[0].wait_ns, 200);
	cr_assert_str_eq(r[1].host, "nodeB");
	cr_assert_eq(r[1].free_ns, (1000 - 750) + (1100 - 750));
	db_view_ranks_free(r, n);
	struct db_mem_stat *m;
	cr_assert_eq(db_view_mem_peaks(db, DB_FILTER_ALL, &m, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 2);
	cr_assert_eq(m[0].category, DB_MEM_PARAM);
	cr_assert_eq(m[0].peak_bytes, 1000);
	cr_assert_eq(m[1].category, DB_MEM_ACTIVATION);
	cr_assert_eq(m[1].peak_bytes, 800);
	cr_assert_eq(m[1].peak_ts_ns, 1100);
	cr_assert_eq(m[1].allocs, 2);
	cr_assert_eq(m[1].frees, 1);
	free(m);
	int64_t ser[4];
	cr_assert_eq(db_view_mem_series(db, -1, 0, 2100, 4, ser), 0, "%s", ascent_errmsg());
	int64_t mx = 0;
	for (int i = 0; i < 4; i++)
		mx = ser[i] > mx ? ser[i] : mx;
	cr_assert_eq(mx, 1800);          /* param 1000 + activation 800 */
	cr_assert_eq(ser[0], 1500);      /* [0, 525): 1000 + 500 */
	db_close(db);
}

Test(viewer, timeline_bins_and_events)
{
	struct db *db = open_prepared();
	struct db_view_lane *l;
	int n;
	cr_assert_eq(db_view_lanes(db, -1, &l, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 3);
	cr_assert_eq(l[1].rank, 0);
	cr_assert_eq(l[1].tid, 1);
	cr_assert_str_eq(l[1].name, "data");
	cr_assert_eq(l[0].maxdur_ns, 400);   /* the forward phase (steps excluded) */
	struct db_view_bin b[10];
	int exact = 0;
	cr_assert_eq(db_view_lane_bins(db, &l[0], 0, 1000, 10, 1000, b, &exact), 0, "%s", ascent_errmsg());
	cr_assert(exact);
	cr_assert_eq(b[0].busy_ns[DB_VC_COMPUTE], 100);
	cr_assert_eq(b[3].busy_ns[DB_VC_COMPUTE], 50);      /* gelu [300, 350) */
	cr_assert_eq(b[5].busy_ns[DB_VC_COMM], 100);
	cr_assert_eq(b[7].busy_ns[DB_VC_COMM], 100);        /* allreduce [500, 800) */
	cr_assert_eq(b[8].busy_ns[DB_VC_COMM], 50);         /* send [850, 900) */
	cr_assert_eq(b[9].busy_ns[DB_VC_COMM], 0);
	cr_assert_eq(b[4].busy_ns[DB_VC_COMPUTE] + b[4].busy_ns[DB_VC_COMM], 0);   /* idle [400, 500) */
	/* the cached bins give the same totals */
	struct db_view_bin c[10];
	cr_assert_eq(db_view_lane_bins(db, &l[0], 0, 1000, 10, 0, c, &exact), 0);
	cr_assert(!exact);
	int64_t se = 0, sc = 0;
	for (int i = 0; i < 10; i++) {
		se += b[i].busy_ns[DB_VC_COMPUTE];
		sc += c[i].busy_ns[DB_VC_COMPUTE];
	}
	cr_assert_eq(se, 350);
	cr_assert(sc >= 340 && sc <= 360, "cached compute %lld", (long long)sc);
	struct db_view_event e;
	cr_assert_eq(db_view_event_at(db, &l[0], 320, &e), 1, "%s", ascent_errmsg());
	cr_assert_str_eq(e.name, "gelu");
	cr_assert_eq(e.nframes, 2);
	cr_assert(strstr(e.frames[0], "nn_gelu_forward"));
	db_view_event_free(&e);
	cr_assert_eq(db_view_event_at(db, &l[0], 450, &e), 0);   /* inside only the step */
	int64_t ids[1];
	struct db *w = db;
	ids[0] = 0;
	char **names;
	int64_t nn;
	cr_assert_eq(db_strings(w, &names, &nn), 0);
	for (int64_t i = 1; i < nn; i++)
		if (!strcmp(names[i], "matmul"))
			ids[0] = i;
	db_strings_free(names, nn);
	cr_assert_eq(db_view_event_next(db, &l[0], 0, 1, ids, 1, &e), 1);
	cr_assert_eq(e.astart_ns, 100);
	db_view_event_free(&e);
	cr_assert_eq(db_view_event_next(db, &l[0], 1100, -1, ids, 1, &e), 1);
	cr_assert_eq(e.astart_ns, 1000);
	db_view_event_free(&e);
	int64_t st[8], sn[8];
	int k;
	cr_assert_eq(db_view_step_marks(db, 0, 0, 0, 5000, 8, st, sn, &k), 0);
	cr_assert_eq(k, 2);
	cr_assert_eq(st[1], 1000);
	struct db_event *in;
	int64_t total;
	cr_assert_eq(db_view_instances(db, DB_FILTER_ALL, DB_KIND_OP, ids[0], 0, 0, 3, &in, &k, &total), 0, "%s",
		     ascent_errmsg());
	cr_assert_eq(total, 8);
	cr_assert_eq(k, 3);
	cr_assert_eq(in[0].dur_ns, 250);
	cr_assert_eq(in[2].dur_ns, 200);
	free(in);
	db_view_lanes_free(l, n);
	db_close(db);
}

/* ---------------------------------------------------------------------------------------- */
/* screen model and keys */

static struct viewer *open_viewer(int view)
{
	struct viewer_options o = { .path = fixture, .rank = -1, .step_lo = -1, .step_hi = -1, .view = view };
	struct viewer *v;
	cr_assert_eq(viewer_open(&o, &v, NULL), 0, "%s", ascent_errmsg());
	return v;
}

static int screen_has(struct viewer *v, int w, int h, const char *needle)
{
	struct vw_screen s;
	cr_assert_eq(vw_screen_init(&s, w, h), 0);
	cr_assert_eq(viewer_render(v, &s), 0);
	char *row = malloc((size_t)w + 1);
	int found = 0;
	for (int y = 0; y < h && !found; y++) {
		vw_row_text(&s, y, row);
		found = strstr(row, needle) != NULL;
	}
	free(row);
	vw_screen_release(&s);
	return found;
}

/* A lane of 20,000 events of 10 ns every 100 ns (span 2 ms): the cache keeps 16,384 bins of 123 ns,
 * 64 to a view_tl row (a chunk: about 78 events). The window [1,000,000, 1,000,500) holds 5 events:
 * the estimate that chooses events or bins counts the bins inside the window, not the whole chunks
 * around it (which hold about 78 each), so with a limit of 20 events the window is drawn exactly;
 * and the whole span read from the bins gives the lane's busy time. */
Test(viewer, timeline_bins_packed_by_chunk)
{
	char path[128];
	snprintf(path, sizeof path, "%s/chunks.db", tmpdir);
	struct db *db;
	cr_assert_eq(db_open(path, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_begin(db), 0);
	struct db_rank_info r0 = { .rank = 0, .host = "nodeA", .pid = 11, .threads = 1, .end_ns = 2000000 };
	db_put_rank(db, &r0);
	db_put_thread(db, 0, 0, 100, "main");
	for (int i = 0; i < 20000; i++)
		ev(db, 0, 0, DB_KIND_OP, i % 2 ? "matmul" : "gelu", (int64_t)i * 100, 10, -1, 0, 0, -1, -1, -1, 0);
	cr_assert_eq(db_commit(db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_finalize(db), 0, "%s", ascent_errmsg());
	int built = 0;
	cr_assert_eq(db_view_prepare(db, &built), 0, "%s", ascent_errmsg());
	struct db_view_lane *l;
	int n;
	cr_assert_eq(db_view_lanes(db, -1, &l, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 1);
	struct db_view_bin b[50];
	int exact = 0;
	cr_assert_eq(db_view_lane_bins(db, &l[0], 1000000, 1000500, 50, 20, b, &exact), 0, "%s", ascent_errmsg());
	cr_assert(exact, "5 events in the window, limit 20: drawn from the events");
	int64_t busy = 0;
	for (int k = 0; k < 50; k++)
		busy += b[k].busy_ns[DB_VC_COMPUTE];
	cr_assert_eq(busy, 50);
	cr_assert_eq(db_view_lane_bins(db, &l[0], 1000000, 1000500, 50, 4, b, &exact), 0, "%s", ascent_errmsg());
	cr_assert(!exact, "limit 4: from the bins");
	/* the whole span from the bins: 200,000 ns busy (shares of bins cut by the columns' edges round
	 * down, at most 1 ns per bin and column: 16,384 + 100) */
	struct db_view_bin w[100];
	cr_assert_eq(db_view_lane_bins(db, &l[0], 0, 2000000, 100, 0, w, &exact), 0, "%s", ascent_errmsg());
	cr_assert(!exact);
	busy = 0;
	for (int k = 0; k < 100; k++)
		busy += w[k].busy_ns[DB_VC_COMPUTE];
	cr_assert(busy <= 200000 && busy >= 200000 - 16484, "busy %lld", (long long)busy);
	cr_assert(w[0].name_id > 0 && w[99].name_id > 0, "each column names its top event");
	db_view_lanes_free(l, n);
	db_close(db);
}

Test(viewer, ops_view_sort_filter_and_drill_down)
{
	struct viewer *v = open_viewer(VW_OPS);
	cr_assert(screen_has(v, 120, 40, "matmul"));
	cr_assert(screen_has(v, 120, 40, "1.40 us"));     /* matmul total */
	cr_assert_eq(viewer_table_rows(v), 2);
	cr_assert_str_eq(viewer_selected_name(v), "matmul");    /* sorted by total, largest first */
	cr_assert_eq(viewer_key(v, 'r'), 0);
	cr_assert_str_eq(viewer_selected_name(v), "gelu");
	cr_assert_eq(viewer_key(v, 'r'), 0);
	/* '<' twice: from total to the name column; names sort A..Z */
	viewer_key(v, '<');
	viewer_key(v, '<');
	cr_assert_str_eq(viewer_selected_name(v), "gelu");
	viewer_key(v, '>');
	viewer_key(v, '>');
	/* filter, incremental */
	viewer_key(v, '/');
	viewer_key(v, 'g');
	viewer_key(v, 'e');
	cr_assert_eq(viewer_table_rows(v), 1);
	cr_assert_str_eq(viewer_selected_name(v), "gelu");
	viewer_key(v, VK_ENTER);                   /* keep the filter */
	cr_assert_eq(viewer_table_rows(v), 1);
	viewer_key(v, VK_ESC);                     /* clear it */
	cr_assert_eq(viewer_table_rows(v), 2);
	/* self time toggle keeps matmul's 1.40 us (no children) */
	viewer_key(v, 's');
	cr_assert(screen_has(v, 120, 40, "self"));
	viewer_key(v, 's');
	/* drill: matmul → its 8 instances, slowest first → the timeline → back, back */
	cr_assert_str_eq(viewer_selected_name(v), "matmul");
	cr_assert_eq(viewer_key(v, VK_ENTER), 0, "%s", ascent_errmsg());
	cr_assert_eq(viewer_current_view(v), VW_INSTANCES);
	cr_assert_eq(viewer_table_rows(v), 8);
	cr_assert(screen_has(v, 120, 40, "8 instances of op 'matmul'"));
	cr_assert(screen_has(v, 120, 40, "250 ns"));
	char crumb[256];
	cr_assert_str_eq(viewer_breadcrumb(v, crumb, sizeof crumb), "ops > matmul");
	cr_assert_eq(viewer_key(v, VK_ENTER), 0, "%s", ascent_errmsg());
	cr_assert_eq(viewer_current_view(v), VW_TIMELINE);
	int64_t t0, t1;
	int rank, tid;
	viewer_timeline_window(v, &t0, &t1, &rank, &tid);
	/* the slowest instance: rank 1's 250 ns matmul at 150 or 1150 */
	cr_assert_eq(rank, 1);
	cr_assert(t0 <= 150 + 1000 && t1 >= 150 + 250, "window %lld..%lld", (long long)t0, (long long)t1);
	cr_assert_str_eq(viewer_breadcrumb(v, crumb, sizeof crumb), "ops > matmul #1 > timeline");
	viewer_key(v, VK_BACKSPACE);
	cr_assert_eq(viewer_current_view(v), VW_INSTANCES);
	viewer_key(v, VK_BACKSPACE);
	cr_assert_eq(viewer_current_view(v), VW_OPS);
	viewer_free(v);
}

Test(viewer, view_switching_help_and_quit)
{
	struct viewer *v = open_viewer(VW_OVERVIEW);
	cr_assert(screen_has(v, 120, 40, "ascent train --dp 2"));
	cr_assert(screen_has(v, 120, 40, "precision fp32"));
	cr_assert(screen_has(v, 120, 40, "size budget reached"));   /* a warn note is a finding */
	for (int k = '1'; k <= '8'; k++) {
		cr_assert_eq(viewer_key(v, k), 0, "%s", ascent_errmsg());
		cr_assert_eq(viewer_current_view(v), k - '1');
	}
	/* the fixture is ascent's own run: no device lanes, and the devices view says where they come from */
	cr_assert(screen_has(v, 120, 40, "no device lanes"));
	viewer_key(v, VK_TAB);
	cr_assert_eq(viewer_current_view(v), VW_OVERVIEW);
	viewer_key(v, VK_BTAB);
	cr_assert_eq(viewer_current_view(v), VW_DEVICES);
	viewer_key(v, '?');
	cr_assert(screen_has(v, 80, 24, "keys (any key closes)"));
	viewer_key(v, 'x');   /* closes the overlay only */
	cr_assert(!screen_has(v, 80, 24, "keys (any key closes)"));
	cr_assert_eq(viewer_key(v, VK_CTRL_C), 1);
	cr_assert_eq(viewer_key(v, 'q'), 1);
	viewer_free(v);
}

Test(viewer, timeline_keys)
{
	struct viewer *v = open_viewer(VW_TIMELINE);
	cr_assert(screen_has(v, 120, 40, "r0 t0 main"));
	cr_assert(screen_has(v, 120, 40, "r0 t1 data"));
	int64_t t0, t1, a0, a1;
	int rank, tid;
	viewer_timeline_window(v, &t0, &t1, &rank, &tid);
	cr_assert_eq(t0, 0);
	cr_assert_eq(t1, 2100);   /* rank 1's step 1 ends at 2100 */
	viewer_key(v, 'w');
	viewer_timeline_window(v, &a0, &a1, &rank, &tid);
	cr_assert_eq(a1 - a0, 1050);
	viewer_key(v, 'a');
	viewer_timeline_window(v, &a0, &a1, &rank, &tid);
	cr_assert_eq(a0, 525 - 262);
	viewer_key(v, 's');
	viewer_timeline_window(v, &a0, &a1, &rank, &tid);
	cr_assert_eq(a1 - a0, 2100);
	viewer_key(v, VK_DOWN);
	viewer_timeline_window(v, &a0, &a1, &rank, &tid);
	cr_assert_eq(tid, 1);
	viewer_key(v, VK_UP);
	/* find matmul events with / and n */
	viewer_key(v, '/');
	viewer_key(v, 'm');
	viewer_key(v, 'a');
	viewer_key(v, 't');
	viewer_key(v, VK_ENTER);
	viewer_key(v, '0');
	viewer_key(v, 'n');
	viewer_timeline_window(v, &a0, &a1, &rank, &tid);
	cr_assert((a0 + a1) / 2 >= 1000 && (a0 + a1) / 2 < 1300, "centre %lld", (long long)((a0 + a1) / 2));
	/* details of the event under the cursor */
	cr_assert_eq(viewer_key(v, VK_ENTER), 0);
	cr_assert(screen_has(v, 120, 40, "event (any key closes)"));
	viewer_key(v, ' ');
	viewer_free(v);
}

Test(viewer, restrictions_by_rank_and_steps)
{
	struct viewer_options o = { .path = fixture, .rank = 1, .step_lo = 1, .step_hi = 1, .view = VW_OPS };
	struct viewer *v;
	cr_assert_eq(viewer_open(&o, &v, NULL), 0, "%s", ascent_errmsg());
	cr_assert(screen_has(v, 120, 40, "rank 1  steps 1:1"));
	cr_assert(screen_has(v, 120, 40, "400 ns"));    /* rank 1, step 1: 150 + 250 */
	viewer_key(v, 'x');
	cr_assert(screen_has(v, 120, 40, "1.40 us"));
	viewer_key(v, 'R');                              /* all → rank 0 */
	cr_assert(screen_has(v, 120, 40, "rank 0  steps all"));
	cr_assert(screen_has(v, 120, 40, "600 ns"));
	viewer_key(v, 'S');
	viewer_key(v, '0');
	viewer_key(v, VK_ENTER);
	cr_assert(screen_has(v, 120, 40, "steps 0:0"));
	viewer_free(v);
	o.rank = 5;
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "no events of rank 5"));
}

Test(viewer, every_view_at_80x24_keeps_the_key_bar)
{
	struct viewer *v = open_viewer(VW_OVERVIEW);
	struct vw_screen s;
	cr_assert_eq(vw_screen_init(&s, 80, 24), 0);
	char row[81];
	for (int k = 0; k < VW_NVIEWS; k++) {
		cr_assert_eq(viewer_dump(v, k, 80, 24, fopen("/dev/null", "w")), 0);
		viewer_render(v, &s);
		vw_row_text(&s, 23, row);
		cr_assert(strstr(row, "help") && strstr(row, "quit"), "view %d: key bar '%s'", k, row);
		vw_row_text(&s, 1, row);
		cr_assert(strstr(row, "1 overview"), "view %d: tabs '%s'", k, row);
	}
	viewer_key(v, '5');
	viewer_render(v, &s);
	cr_assert(screen_has(v, 80, 24, "r1 *"));   /* rank 1 computes 900 > 1.05 x median 800 */
	vw_screen_release(&s);
	viewer_free(v);
}

Test(viewer, files_that_cannot_be_viewed)
{
	struct viewer *v;
	char p[256];
	struct viewer_options o = { .rank = -1, .step_lo = -1, .step_hi = -1 };
	snprintf(p, sizeof p, "%s/missing.db", tmpdir);
	o.path = p;
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "no such file"), "%s", ascent_errmsg());
	snprintf(p, sizeof p, "%s/text.db", tmpdir);
	cr_assert_eq(atomic_write_file(p, "hello, this is not sqlite\n", 26), 0);
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "not a database"), "%s", ascent_errmsg());
	snprintf(p, sizeof p, "%s/corrupt.db", tmpdir);
	char junk[4096];
	memset(junk, 0x5a, sizeof junk);
	memcpy(junk, "SQLite format 3", 16);
	cr_assert_eq(atomic_write_file(p, junk, sizeof junk), 0);
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "cannot open"), "%s", ascent_errmsg());
	/* an empty, finished run */
	snprintf(p, sizeof p, "%s/empty.db", tmpdir);
	struct db *db;
	cr_assert_eq(db_open(p, DB_CREATE, &db), 0);
	cr_assert_eq(db_finalize(db), 0);
	db_close(db);
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "holds no events"), "%s", ascent_errmsg());
	/* a rank's database still being written: no indexes, WAL open */
	snprintf(p, sizeof p, "%s/rank-00000.db", tmpdir);
	cr_assert_eq(db_open(p, DB_CREATE, &db), 0);
	db_begin(db);
	ev(db, 0, 0, DB_KIND_OP, "matmul", 0, 10, 0, 0, 0, -1, -1, -1, 0);
	db_commit(db);
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "still being written"), "%s", ascent_errmsg());
	db_close(db);
	/* a folder with neither trace.db nor rank files */
	snprintf(p, sizeof p, "%s/empty", tmpdir);
	cr_assert_eq(mkdir(p, 0755), 0);
	o.path = p;
	cr_assert_eq(viewer_open(&o, &v, NULL), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "holds neither trace.db nor rank files"), "%s", ascent_errmsg());
}

/* A run being written (a rank file of this process, no trace.db) with a metrics.jsonl that holds
 * what a live reader must get past: a line longer than any fixed buffer, lines that are no step's,
 * a step number no int64 holds, and a last line still being written. The steps view shows the
 * losses of the complete step lines, and the line being written once it is complete. */
Test(viewer, live_metrics_lines)
{
	char dir[128], p[200];
	snprintf(dir, sizeof dir, "%s/run", tmpdir);
	cr_assert_eq(fs_mkdir_p(dir), 0);
	snprintf(p, sizeof p, "%s/rank-00000.db", dir);
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	struct db *db;
	cr_assert_eq(db_open(p, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_begin(db), 0);
	db_put_run(db, "ascent train", "{\"steps\":100}", 1);
	struct db_rank_info r = { .rank = 0, .host = host, .pid = (int)getpid(), .dp_rank = 0, .threads = 1 };
	cr_assert_eq(db_put_rank(db, &r), 0, "%s", ascent_errmsg());
	const int64_t S = 1000000000LL;
	for (int s = 1; s <= 6; s++) {   /* steps 1..6 of 1 s each: the early ones are settled */
		ev(db, 0, 0, DB_KIND_STEP, "step", s * S, S, s, 0, 0, -1, -1, -1, 0);
		ev(db, 0, 0, DB_KIND_OP, "matmul", s * S + 100, S / 2, s, 0, 0, -1, -1, -1, 0);
	}
	cr_assert_eq(db_commit(db), 0);
	snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
	FILE *f = fopen(p, "w");
	cr_assert_not_null(f);
	fputs("{\"note\":\"", f);
	for (int i = 0; i < 20000; i++)
		fputc('x', f);
	fputs("\"}\n{\"step\":1e300,\"loss\":7}\nnot json\n{\"step\":1,\"loss\":2.5}\n{\"step\":2,\"loss\":2.125}\n", f);
	fputs("{\"step\":3,\"loss\":1.7", f);   /* being written */
	fflush(f);
	struct viewer_options o = { .path = dir, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_STEPS };
	struct viewer *v;
	cr_assert_eq(viewer_open(&o, &v, NULL), 0, "%s", ascent_errmsg());
	cr_assert(screen_has(v, 120, 40, "2.5000"), "step 1's loss, after a 20 kB line");
	cr_assert(screen_has(v, 120, 40, "2.1250"), "step 2's loss");
	cr_assert(!screen_has(v, 120, 40, "1.7"), "a line being written is not read");
	fputs("5}\n", f);   /* step 3's line is complete now */
	fclose(f);
	cr_assert_eq(vw_live_refresh(v), 0, "%s", ascent_errmsg());
	cr_assert(screen_has(v, 120, 40, "1.7500"), "step 3's loss once its line is complete");
	viewer_free(v);
	db_close(db);
}
