/* tests/unit/test_db_diff.c — db_diff (db/diff.c) on two small profiles whose numbers are worked
 * out by hand: the category by count, names matched across files with addresses elided, the
 * operators' device work through launch links (a name nested in itself counted once, the innermost
 * operator's self, a launch outside every operator unattributed), tokens/s and peak memory. */
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-dbdiff-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(db_diff, .init = mk_tmp, .fini = rm_tmp);

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static void ev(struct db *db, int tid, int kind, const char *name, int64_t s, int64_t d, int64_t step)
{
	int64_t nid;
	OK(db_intern(db, name, &nid));
	struct db_event e = { .start_ns = s, .dur_ns = d, .step = step, .name_id = nid, .rank = 0, .tid = tid,
			      .kind = kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	OK(db_put_event(db, &e));
}

/* A kernel (or copy) on device lane 1 at `at`, launched from thread 0 at `from`. */
static void launch(struct db *db, int kind, const char *name, int64_t from, int64_t at, int64_t dur)
{
	static int64_t id;
	ev(db, 1, kind, name, at, dur, -1);
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, ++id, 0, from, 1, at));
}

/* Thread 0: fwd [0, 10000) holding linear [1000, 5000) holding linear [1100, 4000); launches at
 * 1200 (gemm: inside both linears and fwd), 4500 (gemm: the outer linear and fwd), 6000 (a copy,
 * side A only: fwd) and 20000 (k2, side A only: no operator). B's gemms take twice as long; B has
 * an operator "extra" A lacks. Each side has an operator named with an address. */
static struct db *fill(const char *path, int b)
{
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	OK(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#3", 0, 30000, 3);
	ev(db, 0, DB_KIND_OP, "fwd", 0, 10000, -1);
	ev(db, 0, DB_KIND_OP, "linear", 1000, 4000, -1);
	ev(db, 0, DB_KIND_OP, "linear", 1100, 2900, -1);
	launch(db, DB_KIND_KERNEL, "gemm", 1200, 1300, b ? 600 : 300);
	launch(db, DB_KIND_KERNEL, "gemm", 4500, 4600, b ? 200 : 100);
	if (!b) {
		launch(db, DB_KIND_MEMCPY, "Memcpy HtoD", 6000, 6100, 50);
		launch(db, DB_KIND_KERNEL, "k2", 20000, 20100, 7);
	} else {
		ev(db, 0, DB_KIND_OP, "extra", 12000, 100, -1);
	}
	ev(db, 0, DB_KIND_RANGE, b ? "<method of object at 0x7fff0011aa>" : "<method of object at 0xdeadbeef12>", 25000, 10,
	   -1);
	int64_t tps;
	OK(db_intern(db, "tokens_per_s", &tps));
	OK(db_put_counter(db, 0, tps, 100, 100.0));
	OK(db_put_counter(db, 0, tps, 200, 300.0));
	OK(db_put_mem(db, 0, DB_MEM_HOST, 1, 1000, DB_MEM_PARAM, 1000, 0));
	OK(db_put_mem(db, 0, DB_MEM_HOST, 2, 500, DB_MEM_ACTIVATION, 500, 0));
	OK(db_put_mem(db, 0, DB_MEM_HOST, 3, -300, DB_MEM_ACTIVATION, 200, 0));
	OK(db_commit(db));
	OK(db_finalize(db));
	return db;
}

static const struct db_diff_row *row(const struct db_diff *d, int kind, const char *name)
{
	for (int i = 0; i < d->nrows; i++)
		if (d->rows[i].kind == kind && !strcmp(d->rows[i].name, name))
			return &d->rows[i];
	return NULL;
}

static const struct db_diff_opdev *opdev(const struct db_diff *d, const char *name)
{
	for (int i = 0; i < d->nopdev; i++)
		if (!strcmp(d->opdev[i].name, name))
			return &d->opdev[i];
	return NULL;
}

Test(db_diff, category_by_count)
{
	cr_assert_eq(db_diff_category(0, 3), DB_DIFF_ADDED);
	cr_assert_eq(db_diff_category(3, 0), DB_DIFF_REMOVED);
	cr_assert_eq(db_diff_category(2, 3), DB_DIFF_INCREASED);
	cr_assert_eq(db_diff_category(3, 2), DB_DIFF_DECREASED);
	cr_assert_eq(db_diff_category(2, 2), DB_DIFF_UNCHANGED);
	cr_assert_str_eq(db_diff_cat_name(DB_DIFF_REMOVED), "removed");
	cr_assert_str_eq(db_diff_cat_name(99), "?");
}

Test(db_diff, two_profiles)
{
	char pa[256], pb[256];
	snprintf(pa, sizeof pa, "%s/a.db", tmpdir);
	snprintf(pb, sizeof pb, "%s/b.db", tmpdir);
	struct db *a = fill(pa, 0), *b = fill(pb, 1);
	struct db_diff d;
	OK(db_diff(a, DB_FILTER_ALL, b, DB_FILTER_ALL, 0, &d));

	const struct db_diff_row *r = row(&d, DB_KIND_KERNEL, "gemm");
	cr_assert_not_null(r);
	cr_assert(r->count[0] == 2 && r->count[1] == 2 && r->total_ns[0] == 400 && r->total_ns[1] == 800);
	cr_assert_eq(r->category, DB_DIFF_UNCHANGED);
	cr_assert_eq(&d.rows[0], r, "the largest change first: %s", d.rows[0].name);
	r = row(&d, DB_KIND_OP, "linear");
	cr_assert(r && r->count[0] == 2 && r->total_ns[0] == 6900 && r->total_ns[1] == 6900);
	r = row(&d, DB_KIND_MEMCPY, "Memcpy HtoD");
	cr_assert(r && r->category == DB_DIFF_REMOVED && r->count[1] == 0 && r->total_ns[1] == 0);
	r = row(&d, DB_KIND_OP, "extra");
	cr_assert(r && r->category == DB_DIFF_ADDED && r->count[0] == 0 && r->total_ns[1] == 100);
	cr_assert_null(row(&d, DB_KIND_STEP, "ProfilerStep#3"), "steps are the overview, not rows");
	r = row(&d, DB_KIND_RANGE, "<method of object at 0x...>");
	cr_assert(r && r->category == DB_DIFF_UNCHANGED && r->count[0] == 1 && r->count[1] == 1);
	for (int i = 1; i < d.nrows; i++)
		cr_assert_geq(llabs(d.rows[i - 1].total_ns[1] - d.rows[i - 1].total_ns[0]),
			      llabs(d.rows[i].total_ns[1] - d.rows[i].total_ns[0]));

	/* A: fwd gets every launch inside it (300 + 100 + 50) and, as innermost, the copy; linear
	 * both gemms once though it nests in itself, and their self time; k2 no operator */
	const struct db_diff_opdev *o = opdev(&d, "fwd");
	cr_assert_not_null(o);
	cr_assert(o->device_ns[0] == 450 && o->device_self_ns[0] == 50 && o->launched[0] == 3, "%lld %lld %lld",
		  (long long)o->device_ns[0], (long long)o->device_self_ns[0], (long long)o->launched[0]);
	cr_assert(o->device_ns[1] == 800 && o->device_self_ns[1] == 0 && o->launched[1] == 2);
	o = opdev(&d, "linear");
	cr_assert(o && o->device_ns[0] == 400 && o->device_self_ns[0] == 400 && o->launched[0] == 2 && o->count[0] == 2);
	cr_assert(o->device_ns[1] == 800 && o->cpu_ns[1] == 6900);
	cr_assert_null(opdev(&d, "extra"), "no device work on either side");
	const struct db_diff_side *sa = &d.side[0], *sb = &d.side[1];
	cr_assert(sa->linked == 4 && sa->linked_ns == 457 && sa->unattributed == 1 && sa->unattributed_ns == 7);
	cr_assert(sb->linked == 2 && sb->linked_ns == 800 && sb->unattributed == 0);

	/* the overview: one step each, tokens/s the mean of the samples, the peak the largest sum of
	 * the categories in use (1000 + 500) */
	cr_assert(sa->steps == 1 && sa->step_rows == 1 && sa->nranks == 1);
	cr_assert(sa->has_tokens && sa->tokens_per_s == 200.0);
	cr_assert(sa->has_mem && sa->peak_mem_bytes == 1500, "%lld", (long long)sa->peak_mem_bytes);
	db_diff_free(&d);

	/* exact names: the two addresses are two names */
	OK(db_diff(a, DB_FILTER_ALL, b, DB_FILTER_ALL, 1, &d));
	cr_assert_null(row(&d, DB_KIND_RANGE, "<method of object at 0x...>"));
	r = row(&d, DB_KIND_RANGE, "<method of object at 0xdeadbeef12>");
	cr_assert(r && r->category == DB_DIFF_REMOVED);
	db_diff_free(&d);

	/* a step filter selects on each side; a rank a side lacks selects nothing */
	struct db_filter f = { 0, 3, 3 };
	OK(db_diff(a, f, b, f, 0, &d));
	cr_assert(d.side[0].steps == 1 && d.side[0].linked == 4);
	db_diff_free(&d);
	struct db_filter none = { 5, -1, -1 };
	OK(db_diff(a, none, b, DB_FILTER_ALL, 0, &d));
	cr_assert(d.side[0].nranks == 0 && d.side[0].linked == 0 && d.side[1].nranks == 1);
	r = row(&d, DB_KIND_KERNEL, "gemm");
	cr_assert(r && r->category == DB_DIFF_ADDED);
	db_diff_free(&d);
	db_close(a);
	db_close(b);
}

/* The same comparison read from the viewer's summary tables (built as import and merge build them)
 * equals the one read from the events, field by field; db_diff_dist gives gemm's durations. */
Test(db_diff, summary_tables_and_distributions)
{
	char pa[256], pb[256];
	snprintf(pa, sizeof pa, "%s/a.db", tmpdir);
	snprintf(pb, sizeof pb, "%s/b.db", tmpdir);
	struct db *a = fill(pa, 0), *b = fill(pb, 1);
	struct db_diff s, c;
	OK(db_diff(a, DB_FILTER_ALL, b, DB_FILTER_ALL, 0, &s));   /* no summary yet: the events */
	int built = 0;
	OK(db_view_prepare(a, &built));
	cr_assert(built);
	OK(db_view_prepare(b, &built));
	OK(db_diff(a, DB_FILTER_ALL, b, DB_FILTER_ALL, 0, &c));
	cr_assert_eq(memcmp(&s.side, &c.side, sizeof s.side), 0, "overview: linked %lld/%lld, peak %lld/%lld",
		     (long long)s.side[0].linked, (long long)c.side[0].linked, (long long)s.side[0].peak_mem_bytes,
		     (long long)c.side[0].peak_mem_bytes);
	cr_assert(s.nrows == c.nrows && s.ncomms == c.ncomms && s.nopdev == c.nopdev);
	for (int i = 0; i < s.nrows; i++)
		cr_assert(!strcmp(s.rows[i].name, c.rows[i].name) && s.rows[i].kind == c.rows[i].kind &&
			  !memcmp(s.rows[i].count, c.rows[i].count, sizeof s.rows[i].count) &&
			  !memcmp(s.rows[i].total_ns, c.rows[i].total_ns, sizeof s.rows[i].total_ns));
	for (int i = 0; i < s.nopdev; i++) {
		const struct db_diff_opdev *x = &s.opdev[i], *y = &c.opdev[i];
		cr_assert(!strcmp(x->name, y->name) && !memcmp(x->count, y->count, sizeof x->count) &&
			  !memcmp(x->cpu_ns, y->cpu_ns, sizeof x->cpu_ns) && !memcmp(x->launched, y->launched, sizeof x->launched) &&
			  !memcmp(x->device_ns, y->device_ns, sizeof x->device_ns) &&
			  !memcmp(x->device_self_ns, y->device_self_ns, sizeof x->device_self_ns), "%s", x->name);
	}
	cr_assert(c.side[0].linked == 4 && c.side[0].unattributed_ns == 7 && c.side[0].peak_mem_bytes == 1500);
	db_diff_free(&s);
	db_diff_free(&c);

	/* gemm: A 300 and 100 ns, B 600 and 200 ns */
	struct db_diff_dist d;
	OK(db_diff_dist(a, DB_FILTER_ALL, b, DB_FILTER_ALL, DB_KIND_KERNEL, "gemm", 0, &d));
	cr_assert(d.n[0] == 2 && d.n[1] == 2);
	cr_assert(d.min_ns[0] == 100 && d.max_ns[0] == 300 && d.med_ns[0] == 200 && d.p95_ns[0] == 300 && d.mean_ns[0] == 200);
	cr_assert(d.min_ns[1] == 200 && d.max_ns[1] == 600 && d.med_ns[1] == 400 && d.p95_ns[1] == 600 && d.mean_ns[1] == 400);
	cr_assert(d.nbins == DB_DIFF_DIST_BINS && d.edge_ns[0] == 100 && d.edge_ns[DB_DIFF_DIST_BINS] == 600);
	int64_t tot[2] = { 0, 0 };
	for (int k = 0; k < d.nbins; k++) {
		cr_assert_lt(d.edge_ns[k], d.edge_ns[k + 1]);
		tot[0] += d.hist[0][k];
		tot[1] += d.hist[1][k];
	}
	cr_assert(tot[0] == 2 && tot[1] == 2 && d.hist[0][0] == 1 && d.hist[1][DB_DIFF_DIST_BINS - 1] == 1);
	/* a name on one side only, matched with its address elided; a name on neither */
	OK(db_diff_dist(a, DB_FILTER_ALL, b, DB_FILTER_ALL, DB_KIND_RANGE, "<method of object at 0x...>", 0, &d));
	cr_assert(d.n[0] == 1 && d.n[1] == 1 && d.min_ns[0] == 10 && d.max_ns[1] == 10);
	OK(db_diff_dist(a, DB_FILTER_ALL, b, DB_FILTER_ALL, DB_KIND_OP, "extra", 0, &d));
	cr_assert(d.n[0] == 0 && d.n[1] == 1 && d.max_ns[1] == 100 && d.hist[1][0] == 1);
	OK(db_diff_dist(a, DB_FILTER_ALL, b, DB_FILTER_ALL, DB_KIND_OP, "nothing", 0, &d));
	cr_assert(d.n[0] == 0 && d.n[1] == 0 && d.nbins == 0);
	db_close(a);
	db_close(b);
}

/* db_diff_advise on a comparison written by hand: A has 1 rank × 2 steps of 1000 ns, B 2 ranks ×
 * 2 steps of 1200 ns (mean step +200 ns). Per (rank, step): gemm 400/2 → 1600/4 = 200 → 400 (+200,
 * share 1.0, the same calls per step: slower calls); allreduce 0 → 400/4 (+100, 0.5, added);
 * matmul (an operator, no launch links: host compute) 200/2 → 800/4 (+100, 0.5); a copy that went
 * away (−100) and the phase "forward" (a container) are no regressions; free time 100 → 100. */
static struct db_diff hand_diff(void)
{
	static struct db_diff_row rows[] = {
		{ (char *)"gemm", DB_KIND_KERNEL, { 2, 4 }, { 400, 1600 }, DB_DIFF_INCREASED },
		{ (char *)"forward", DB_KIND_PHASE, { 2, 4 }, { 1000, 3000 }, DB_DIFF_INCREASED },
		{ (char *)"allreduce", DB_KIND_COMM, { 0, 8 }, { 0, 400 }, DB_DIFF_ADDED },
		{ (char *)"matmul", DB_KIND_OP, { 2, 4 }, { 200, 800 }, DB_DIFF_INCREASED },
		{ (char *)"Memcpy HtoD", DB_KIND_MEMCPY, { 2, 0 }, { 200, 0 }, DB_DIFF_REMOVED },
	};
	struct db_diff d = { .rows = rows, .nrows = 5 };
	d.side[0] = (struct db_diff_side){ .nranks = 1, .steps = 2, .step_rows = 2, .step_total_ns = 2000,
					   .computing_ns = 1200, .free_ns = 200 };
	d.side[1] = (struct db_diff_side){ .nranks = 2, .steps = 2, .step_rows = 4, .step_total_ns = 4800,
					   .computing_ns = 3200, .comm_not_overlapped_ns = 400, .free_ns = 400 };
	return d;
}

Test(db_diff, advise_share_per_step_and_rank)
{
	struct db_diff d = hand_diff();
	struct db_diff_advice a;
	OK(db_diff_advise(&d, 0.01, 0, &a));
	cr_assert_eq(a.verdict, DB_DIFF_SLOWER);
	cr_assert_float_eq(a.step_mean_ns[0], 1000, 1e-9);
	cr_assert_float_eq(a.step_mean_ns[1], 1200, 1e-9);
	cr_assert_float_eq(a.step_change_ns, 200, 1e-9);
	cr_assert_float_eq(a.phase_change_ns[DB_PHASE_COMPUTING], 800 - 600, 1e-9);
	cr_assert_float_eq(a.phase_change_ns[DB_PHASE_COMM], 100, 1e-9);
	cr_assert_float_eq(a.phase_change_ns[DB_PHASE_FREE], 0, 1e-9);
	cr_assert_eq(a.n, 3, "%d rows", a.n);
	const char *names[] = { "gemm", "matmul", "allreduce" };
	const double delta[] = { 200, 100, 100 }, share[] = { 1.0, 0.5, 0.5 };
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(a.r[i].name, names[i]);
		cr_assert_float_eq(a.r[i].delta_per_step_ns, delta[i], 1e-9);
		cr_assert_float_eq(a.r[i].share, share[i], 1e-12);
	}
	cr_assert_float_eq(a.r[0].per_step_ns[0], 200, 1e-9);
	cr_assert_float_eq(a.r[0].per_step_ns[1], 400, 1e-9);
	cr_assert_eq(a.r[0].phase, DB_PHASE_COMPUTING);
	cr_assert(strstr(a.r[0].cause, "same launches take longer"), "%s", a.r[0].cause);
	cr_assert(strstr(a.r[1].cause, "host compute"), "%s", a.r[1].cause);
	cr_assert(strstr(a.r[1].evidence, "device work unknown"), "%s", a.r[1].evidence);
	cr_assert_eq(a.r[2].phase, DB_PHASE_COMM);
	cr_assert(strstr(a.r[2].cause, "parallelism change"), "%s", a.r[2].cause);
	db_diff_advice_free(&a);

	OK(db_diff_advise(&d, 0.01, 2, &a));   /* top */
	cr_assert_eq(a.n, 2);
	db_diff_advice_free(&a);
}

Test(db_diff, advise_not_slower)
{
	struct db_diff d = hand_diff();
	struct db_diff_advice a;
	OK(db_diff_advise(&d, 0.25, 0, &a));   /* +20% is within 25% */
	cr_assert_eq(a.verdict, DB_DIFF_SAME);
	cr_assert_eq(a.n, 4, "%d rows", a.n);   /* the copy's −100 too, by |change| */
	for (int i = 0; i < a.n; i++)
		cr_assert(isnan(a.r[i].share));
	cr_assert_str_eq(a.r[3].name, "Memcpy HtoD");
	cr_assert_float_eq(a.r[3].delta_per_step_ns, -100, 1e-9);
	cr_assert_str_eq(a.r[3].cause, "");
	db_diff_advice_free(&a);

	d.side[1].step_total_ns = 3600;   /* B's mean step 900: faster */
	OK(db_diff_advise(&d, 0.01, 0, &a));
	cr_assert_eq(a.verdict, DB_DIFF_FASTER);
	cr_assert_eq(a.n, 4);   /* free time: 100 → 100 per step, no change */
	db_diff_advice_free(&a);

	d.side[1].step_rows = 0;   /* no steps: per rank */
	OK(db_diff_advise(&d, 0.01, 0, &a));
	cr_assert_eq(a.verdict, DB_DIFF_NO_STEPS);
	cr_assert_str_eq(a.r[0].name, "gemm");
	cr_assert_float_eq(a.r[0].delta_per_step_ns, 1600 / 2 - 400, 1e-9);
	db_diff_advice_free(&a);

	cr_assert_eq(db_diff_advise(&d, -1, 0, &a), ASCENT_EUSAGE);
	struct db_diff same = hand_diff();
	same.side[1] = same.side[0];
	for (int i = 0; i < same.nrows; i++)
		same.rows[i].total_ns[1] = same.rows[i].total_ns[0], same.rows[i].count[1] = same.rows[i].count[0];
	OK(db_diff_advise(&same, 0.01, 0, &a));
	cr_assert_eq(a.verdict, DB_DIFF_SAME);
	cr_assert_eq(a.n, 0);
	db_diff_advice_free(&a);
}
