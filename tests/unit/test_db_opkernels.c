/* tests/unit/test_db_opkernels.c — db_opkernels (db/opkernels.c, `report --by opkernels`): each CPU
 * operator with the device work its launches reached (every operator open on the launching thread,
 * once per name), its most common kernel sequence and launch delays, and the frequent runs of
 * consecutive device events on a stream, against numbers worked out by hand. */
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-opk-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(db_opkernels, .init = mk_tmp, .fini = rm_tmp);

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static void ev(struct db *db, int tid, int kind, const char *name, int64_t s, int64_t d, int64_t step)
{
	int64_t nid;
	OK(db_intern(db, name, &nid));
	struct db_event e = { .start_ns = s, .dur_ns = d, .step = step, .name_id = nid, .rank = 0, .tid = tid,
			      .kind = kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	OK(db_put_event(db, &e));
}

/* A launch call on `tid` at `at` (10 ns long) of a kernel on lane `lane` at [start, start + dur). */
static void launch(struct db *db, int64_t id, int tid, int64_t at, int lane, const char *k, int64_t start, int64_t dur)
{
	ev(db, tid, DB_KIND_RANGE, "cudaLaunchKernel", at, 10, -1);
	ev(db, lane, DB_KIND_KERNEL, k, start, dur, -1);
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, id, tid, at, lane, start));
}

/* Thread 0: steps #1 [0,5000) and #2 [5000,11000); operators
 *   fwd [0,10000)
 *     aten::linear [100,2000) > aten::addmm [200,1900): gemm at 300 → [1000,1400), bias at 500 → [1500,1600)
 *     aten::linear [3000,5000) > aten::addmm [3100,4900): gemm at 3200 → [3500,3900), bias at 3300 → [4000,4100)
 *     aten::relu [5000,6000): relu at 5000 (its start) → [5200,5250)
 *     aten::linear [6000,8000) > aten::linear [6100,7000): gemm at 6200 → [6500,6800) (the outer call's)
 *   a launch at 10000 (fwd's end: no operator) of tail → lane 2 [10500,10510)
 * Thread 3 (no operators): a launch at 300 of other → lane 2 [700,720). Lane 1 also holds an
 * unlinked kernel unl [8000,8010). */
static struct db *fill(const char *path)
{
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 4 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 100, "main"));
	OK(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"));
	OK(db_put_thread(db, 0, 2, 9, "GPU 0 stream 9"));
	OK(db_put_thread(db, 0, 3, 101, "worker"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	OK(db_put_device_lane(db, 0, 2, 0, 9));
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#1", 0, 5000, 1);
	ev(db, 0, DB_KIND_STEP, "ProfilerStep#2", 5000, 6000, 2);
	ev(db, 0, DB_KIND_OP, "fwd", 0, 10000, -1);
	ev(db, 0, DB_KIND_OP, "aten::linear", 100, 1900, -1);
	ev(db, 0, DB_KIND_OP, "aten::addmm", 200, 1700, -1);
	ev(db, 0, DB_KIND_OP, "aten::linear", 3000, 2000, -1);
	ev(db, 0, DB_KIND_OP, "aten::addmm", 3100, 1800, -1);
	ev(db, 0, DB_KIND_OP, "aten::relu", 5000, 1000, -1);
	ev(db, 0, DB_KIND_OP, "aten::linear", 6000, 2000, -1);
	ev(db, 0, DB_KIND_OP, "aten::linear", 6100, 900, -1);
	launch(db, 1, 0, 300, 1, "gemm", 1000, 400);
	launch(db, 2, 0, 500, 1, "bias", 1500, 100);
	launch(db, 3, 0, 3200, 1, "gemm", 3500, 400);
	launch(db, 4, 0, 3300, 1, "bias", 4000, 100);
	launch(db, 5, 0, 5000, 1, "relu", 5200, 50);
	launch(db, 6, 0, 6200, 1, "gemm", 6500, 300);
	launch(db, 7, 0, 10000, 2, "tail", 10500, 10);
	launch(db, 8, 3, 300, 2, "other", 700, 20);
	ev(db, 1, DB_KIND_KERNEL, "unl", 8000, 10, -1);
	OK(db_commit(db));
	OK(db_finalize(db));
	return db;
}

static void seq_is(char **got, int n, const char *const *want, int nw)
{
	cr_assert_eq(n, nw, "sequence of %d, expected %d", n, nw);
	for (int i = 0; i < n; i++)
		cr_expect_str_eq(got[i], want[i]);
}

Test(db_opkernels, operators_by_hand)
{
	char p[256];
	snprintf(p, sizeof p, "%s/o.db", tmpdir);
	struct db *db = fill(p);
	struct db_opkernels o;
	OK(db_opkernels(db, DB_FILTER_ALL, 3, 20, &o));
	cr_expect_eq(o.launches, 8);
	cr_expect_eq(o.launches_ns, 400 + 100 + 400 + 100 + 50 + 300 + 10 + 20);
	cr_expect_eq(o.in_ops, 6);   /* not the one at fwd's end, not thread 3's */
	cr_expect_eq(o.in_ops_ns, 1350);
	cr_assert_eq(o.nops, 4);
	/* by device time: fwd 1350, aten::linear 1300, aten::addmm 1000, aten::relu 50 */
	struct db_opkernel_stat *f = &o.ops[0], *l = &o.ops[1], *a = &o.ops[2], *r = &o.ops[3];
	cr_assert_str_eq(f->name, "fwd");
	cr_expect_eq(f->calls, 1);
	cr_expect_eq(f->kernels, 6);
	cr_expect_eq(f->device_ns, 1350);
	cr_expect_eq(f->cpu_ns, 10000);
	seq_is(f->seq, f->seq_n, (const char *const[]){ "gemm", "bias", "gemm", "bias", "relu", "gemm" }, 6);
	cr_expect_eq(f->seq_calls, 1);
	/* delays 700 1000 300 700 200 300: mean 3200 / 6, median (300 + 700) / 2 */
	cr_expect_float_eq(f->delay_mean_ns, 3200.0 / 6.0, 1e-9);
	cr_expect_eq(f->delay_p50_ns, 500);
	cr_assert_str_eq(l->name, "aten::linear");
	cr_expect_eq(l->calls, 4);             /* the nested one too */
	cr_expect_eq(l->calls_launching, 3);   /* its gemm is the outer call's, once per name */
	cr_expect_eq(l->kernels, 5);
	cr_expect_eq(l->device_ns, 1300);
	cr_expect_eq(l->cpu_ns, 1900 + 2000 + 2000 + 900);
	seq_is(l->seq, l->seq_n, (const char *const[]){ "gemm", "bias" }, 2);
	cr_expect_eq(l->seq_calls, 2);
	cr_expect_float_eq(l->delay_mean_ns, 600.0, 1e-9);   /* 700 1000 300 700 300 */
	cr_expect_eq(l->delay_p50_ns, 700);
	cr_assert_str_eq(a->name, "aten::addmm");
	cr_expect_eq(a->calls, 2);
	cr_expect_eq(a->kernels, 4);
	cr_expect_eq(a->device_ns, 1000);
	cr_expect_eq(a->seq_calls, 2);
	cr_expect_float_eq(a->delay_mean_ns, 675.0, 1e-9);   /* 700 1000 300 700 */
	cr_expect_eq(a->delay_p50_ns, 700);
	cr_assert_str_eq(r->name, "aten::relu");   /* launched at its very start: inside */
	cr_expect_eq(r->kernels, 1);
	cr_expect_eq(r->delay_p50_ns, 200);
	seq_is(r->seq, r->seq_n, (const char *const[]){ "relu" }, 1);
	/* lane 1: gemm bias gemm bias relu gemm unl; lane 2: other tail. Runs of 3: five on lane 1, each once */
	cr_expect_eq(o.seq_len, 3);
	cr_expect_eq(o.windows, 5);
	cr_expect_eq(o.nseq_distinct, 5);
	cr_assert_eq(o.nseqs, 5);
	seq_is(o.seqs[0].names, o.seqs[0].n, (const char *const[]){ "gemm", "bias", "gemm" }, 3);
	cr_expect_eq(o.seqs[0].device_ns, 900);
	cr_expect_eq(o.seqs[4].device_ns, 360);   /* relu gemm unl: the least device time */
	db_opkernels_free(&o);

	/* runs of 2: gemm bias twice (1000 ns), then by device time bias gemm 500, relu gemm 350, gemm
	 * unl 310, bias relu 150, other tail 30; top 3 kept */
	OK(db_opkernels(db, DB_FILTER_ALL, 2, 3, &o));
	cr_expect_eq(o.windows, 7);
	cr_expect_eq(o.nseq_distinct, 6);
	cr_assert_eq(o.nseqs, 3);
	seq_is(o.seqs[0].names, o.seqs[0].n, (const char *const[]){ "gemm", "bias" }, 2);
	cr_expect_eq(o.seqs[0].count, 2);
	cr_expect_eq(o.seqs[0].device_ns, 1000);
	cr_expect_eq(o.seqs[0].streams, 1);
	seq_is(o.seqs[1].names, o.seqs[1].n, (const char *const[]){ "bias", "gemm" }, 2);
	seq_is(o.seqs[2].names, o.seqs[2].n, (const char *const[]){ "relu", "gemm" }, 2);
	cr_expect_eq(o.seqs[2].count, 1);
	cr_expect_eq(o.seqs[2].device_ns, 350);
	db_opkernels_free(&o);

	/* step 1 [0,5000): the operators starting there and the launches made there (thread 3's too) */
	struct db_filter s1 = { -1, 1, 1 };
	OK(db_opkernels(db, s1, 2, 20, &o));
	cr_expect_eq(o.launches, 5);
	cr_expect_eq(o.in_ops, 4);
	cr_assert_eq(o.nops, 3);   /* 1000 ns each (gemm bias gemm bias): by name */
	cr_expect_str_eq(o.ops[0].name, "aten::addmm");
	cr_expect_str_eq(o.ops[1].name, "aten::linear");
	cr_expect_str_eq(o.ops[2].name, "fwd");
	cr_expect_eq(o.ops[2].device_ns, 1000);
	cr_expect_eq(o.ops[2].kernels, 4);
	cr_expect_eq(o.ops[2].calls, 1);
	cr_expect_eq(o.ops[1].calls, 2);
	/* device work launched in step 1: lane 1 gemm bias gemm bias, lane 2 other (unl and tail: no) */
	cr_expect_eq(o.windows, 3);
	cr_assert_eq(o.nseqs, 2);
	cr_expect_eq(o.seqs[0].count, 2);
	db_opkernels_free(&o);

	cr_expect_eq(db_opkernels(db, DB_FILTER_ALL, 0, 20, &o), ASCENT_EUSAGE);
	db_close(db);
}
