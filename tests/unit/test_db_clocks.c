/* tests/unit/test_db_clocks.c — the hosts' clocks of an imported job fitted from the ends of its
 * collectives (db/clocks.c): planted clock offsets found to the jitter, the collectives' lateness
 * then that of the real arrivals (a host planted late stays late, the hosts whose clocks were off
 * are not), nothing applied where the clocks agree or too few calls are shared, and hosts sharing
 * no call measured against a root of their own. */
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-dbclk-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(db_clocks, .init = mk_tmp, .fini = rm_tmp);

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

#define MS 1000000LL
#define US 1000LL
#define BASE (1000000LL * MS)   /* the profilers' start on the real clock */

/* A job of `hosts` hosts × 2 ranks (host h: ranks 2h, 2h + 1). Host h's clock reads real time +
 * skew[h]: for even h the skew is in the ranks' t0 (the trace's base time), for odd h in the events'
 * times (as a trace whose timestamps are on the host's clock) — the fit must see both. Each call k of
 * `calls` is made by the ranks of the hosts `group(k)` gives (a bit mask); a rank arrives at 10 ms·k
 * + 10 µs·rank, + late_ms for the ranks of host `late_host`; all leave together 200 µs after the
 * last arrival, each with its own jitter of −2..2 µs. */
struct job {
	int hosts, calls, late_host;
	int64_t skew[4], late;
	unsigned (*group)(int k);
	int64_t true_late[8];   /* per rank: Σ over calls (own arrival − the call's first arrival) */
};

static unsigned all_hosts(int k)
{
	(void)k;
	return 0xf;
}

static int64_t jitter(int rank, int k)
{
	return ((rank * 7 + k * 13) % 5 - 2) * US;
}

static struct db *make_job(const char *name, struct job *j)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s.db", tmpdir, name);
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	int nr = 2 * j->hosts;
	static const char *const HOST[4] = { "h0", "h1", "h2", "h3" };
	for (int r = 0; r < nr; r++) {
		int h = r / 2;
		struct db_rank_info ri = { .rank = r, .pid = 100 + r, .dp_rank = r, .tp_rank = 0, .pp_rank = 0, .threads = 1,
					   .host = HOST[h], .t0_ns = BASE + (h % 2 ? 0 : j->skew[h]) };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 100 + r, "main"));
		OK(db_put_comm(db, r, 1, "world", nr, r));
	}
	int64_t nid;
	OK(db_intern(db, "allreduce", &nid));
	memset(j->true_late, 0, sizeof j->true_late);
	for (int k = 0; k < j->calls; k++) {
		unsigned g = j->group(k);
		int64_t arrive[8], first = INT64_MAX, last = INT64_MIN;
		for (int r = 0; r < nr; r++) {
			if (!(g >> (r / 2) & 1))
				continue;
			arrive[r] = 10 * MS * k + 10 * US * r + (r / 2 == j->late_host ? j->late : 0);
			first = arrive[r] < first ? arrive[r] : first;
			last = arrive[r] > last ? arrive[r] : last;
		}
		for (int r = 0; r < nr; r++) {
			if (!(g >> (r / 2) & 1))
				continue;
			int h = r / 2;
			int64_t end = last + 200 * US + jitter(r, k);
			/* on host h's clock, relative to the rank's t0: real − BASE + skew, less the skew t0 holds */
			int64_t start_rel = arrive[r] + (h % 2 ? j->skew[h] : 0);
			struct db_event e = { .start_ns = start_rel, .dur_ns = end - arrive[r], .step = -1, .name_id = nid,
					      .bytes = 1 << 20, .seq = k, .rank = r, .tid = 0, .kind = DB_KIND_COMM, .mb = -1,
					      .layer = -1, .peer = -1, .comm_id = 1 };
			OK(db_put_event(db, &e));
			j->true_late[r] += arrive[r] - first;
		}
	}
	OK(db_commit(db));
	return db;
}

/* Each rank's lateness summed over its calls (db_coll_analysis). */
static void late_per_rank(struct db *db, int64_t *late, int nr)
{
	struct db_coll c;
	OK(db_coll_analysis(db, 0, &c));
	memset(late, 0, (size_t)nr * sizeof *late);
	for (int i = 0; i < c.nranks; i++)
		if (c.ranks[i].rank >= 0 && c.ranks[i].rank < nr)
			late[c.ranks[i].rank] += c.ranks[i].late_ns;
	db_coll_free(&c);
}

static int64_t i64abs(int64_t v)
{
	return v < 0 ? -v : v;
}

Test(db_clocks, planted_offsets_found_and_lateness_then_real)
{
	struct job j = { .hosts = 3, .calls = 30, .late_host = 2, .skew = { 0, 3 * MS, -2 * MS }, .late = 1 * MS,
			 .group = all_hosts };
	struct db *db = make_job("skewed", &j);
	int64_t late[6];
	late_per_rank(db, late, 6);
	/* before the fit, host 1's clock 3 ms ahead makes it look the latest at every call (the test can fail) */
	cr_assert_gt(late[2], late[4], "host 1 %lld vs host 2 %lld before the fit", (long long)late[2], (long long)late[4]);
	struct db_clock_fit *f = NULL;
	int n = 0;
	OK(db_clock_fit(db, &f, &n));
	cr_assert_eq(n, 3);
	cr_assert_str_eq(f[0].host, "h0");
	cr_assert(!f[0].applies && f[0].root == 0 && f[0].via == -1);
	/* the jitter is ±2 µs a member: an offset within a few µs, its spread as small */
	for (int h = 1; h < 3; h++) {
		cr_assert(f[h].applies, "host %d: offset %lld spread %lld", h, (long long)f[h].offset_ns, (long long)f[h].spread_ns);
		cr_assert_eq(f[h].root, 0);
		cr_assert_eq(f[h].calls, 30);
		cr_assert_leq(i64abs(f[h].offset_ns - j.skew[h]), 4 * US, "host %d: %lld against %lld", h,
			      (long long)f[h].offset_ns, (long long)j.skew[h]);
		cr_assert_leq(f[h].spread_ns, 8 * US, "host %d spread %lld", h, (long long)f[h].spread_ns);
	}
	OK(db_begin(db));
	OK(db_clock_fit_apply(db, f, n));
	OK(db_commit(db));
	struct db_rank_info *ri = NULL;
	int nr = 0;
	OK(db_ranks(db, &ri, &nr));
	for (int r = 0; r < nr; r++)
		cr_assert_eq(ri[r].clock_offset_ns, -f[r / 2].offset_ns * (r >= 2), "rank %d", r);
	db_ranks_free(ri, nr);
	late_per_rank(db, late, 6);
	/* now each rank's lateness is its real one, to the fit's error a call */
	for (int r = 0; r < 6; r++)
		cr_assert_leq(i64abs(late[r] - j.true_late[r]), 30 * 8 * US, "rank %d late %lld, real %lld", r,
			      (long long)late[r], (long long)j.true_late[r]);
	cr_assert_gt(late[4], late[2] + 20 * MS, "the late host");
	db_clock_fit_free(f, n);
	db_close(db);
}

Test(db_clocks, nothing_applied_where_clocks_agree)
{
	struct job j = { .hosts = 3, .calls = 30, .late_host = 2, .late = 1 * MS, .group = all_hosts };
	struct db *db = make_job("agree", &j);
	struct db_clock_fit *f = NULL;
	int n = 0;
	OK(db_clock_fit(db, &f, &n));
	cr_assert_eq(n, 3);
	for (int h = 0; h < n; h++)
		cr_assert(!f[h].applies, "host %d: offset %lld spread %lld", h, (long long)f[h].offset_ns, (long long)f[h].spread_ns);
	db_clock_fit_free(f, n);
	db_close(db);
}

static unsigned pairs_apart(int k)   /* hosts 0 and 1 share the even calls, 2 and 3 the odd ones */
{
	return k % 2 ? 0xc : 0x3;
}

static unsigned few_shared(int k)    /* host 1 joins 4 calls (fewer than DB_CLOCK_FIT_MIN_CALLS) */
{
	return k < 4 ? 0x3 : 0x1;
}

Test(db_clocks, hosts_sharing_no_call_fitted_apart)
{
	struct job j = { .hosts = 4, .calls = 40, .late_host = -1, .skew = { 0, 3 * MS, 5 * MS, 1 * MS },
			 .group = pairs_apart };
	struct db *db = make_job("apart", &j);
	struct db_clock_fit *f = NULL;
	int n = 0;
	OK(db_clock_fit(db, &f, &n));
	cr_assert_eq(n, 4);
	cr_assert(f[1].applies && f[1].root == 0 && f[1].via == 0);
	cr_assert_leq(i64abs(f[1].offset_ns - 3 * MS), 4 * US);
	cr_assert(!f[2].applies && f[2].root == 2 && f[2].via == -1, "host 2 roots its own tree");
	cr_assert(f[3].applies && f[3].root == 2 && f[3].via == 2);
	cr_assert_leq(i64abs(f[3].offset_ns - (1 * MS - 5 * MS)), 4 * US, "host 3 against host 2: %lld",
		      (long long)f[3].offset_ns);
	db_clock_fit_free(f, n);
	db_close(db);
	j = (struct job){ .hosts = 2, .calls = 20, .late_host = -1, .skew = { 0, 3 * MS }, .group = few_shared };
	db = make_job("few", &j);
	OK(db_clock_fit(db, &f, &n));
	cr_assert_eq(n, 2);
	cr_assert(!f[1].applies && f[1].root == 1, "4 shared calls fitted: %lld", (long long)f[1].offset_ns);
	db_clock_fit_free(f, n);
	db_close(db);
}
