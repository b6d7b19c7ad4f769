/* db/clocks.c — imported traces: each host's clock against rank 0's host, fitted from the ends of
 * collectives matched across hosts (docs/import.md, "Hosts' clocks").
 *
 * Each host writes its trace on its own clock. A collective's members leave it together — the last
 * to arrive releases them all, and the data-moving part is the same call on every member — so
 * across the members of one call, the ends differ by their hosts' clock offsets plus a little
 * jitter, whatever the arrivals were (a host that arrives late makes the others wait; it does not
 * move the ends). For each pair of hosts that share calls, the median over those calls of the
 * difference of their members' ends is their offset; its spread (1.4826 × the median absolute
 * deviation) is its uncertainty. Hosts are reached from rank 0's host along the pairs that share
 * the most calls (a maximum spanning tree), adding offsets and uncertainties along the way; hosts
 * that share no call with that tree make trees of their own, each measured against its lowest host. */
#include "db/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One host pair's end difference in one call (b's end − a's end, a < b). */
struct pairdiff {
	int a, b;
	int64_t diff_ns;
};

struct member {
	int host;
	int64_t end_ns;
};

struct fitscan {
	const struct db_rank_info *ranks;
	int nranks;
	const int *host_of_rank;   /* rank index → host index */
	int64_t comm_id, seq;      /* the call being gathered */
	int have;
	struct member *m;          /* the call's members */
	int nm, capm;
	struct pairdiff *d;
	int nd, capd;
};

static int rank_index(const struct fitscan *x, int rank)
{
	int lo = 0, hi = x->nranks;   /* db_ranks gives ranks ascending */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (x->ranks[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->nranks && x->ranks[lo].rank == rank ? lo : -1;
}

static int cmp_member(const void *p, const void *q)
{
	const struct member *a = p, *b = q;
	if (a->host != b->host)
		return a->host < b->host ? -1 : 1;
	return (a->end_ns > b->end_ns) - (a->end_ns < b->end_ns);
}

/* The gathered call's pair differences: each host's earliest member end against the call's
 * lowest host's (members sorted by host and end: one pass). */
static int flush_call(struct fitscan *x)
{
	if (x->nm < 2)
		return 0;
	qsort(x->m, (size_t)x->nm, sizeof *x->m, cmp_member);
	int lowest = x->m[0].host;
	int64_t base = x->m[0].end_ns;
	for (int i = 1; i < x->nm; i++) {
		if (x->m[i].host == x->m[i - 1].host)
			continue;
		int rc = ARRAY_GROW(x->d, x->nd, x->capd, 256, "fitting the hosts' clocks");
		if (rc)
			return rc;
		x->d[x->nd++] = (struct pairdiff){ lowest, x->m[i].host, i64_sub_sat(x->m[i].end_ns, base) };
	}
	return 0;
}

static int match_cb(void *ud, const struct db_match *m)
{
	struct fitscan *x = ud;
	if (!x->have || m->comm_id != x->comm_id || m->seq != x->seq) {
		int rc = flush_call(x);
		if (rc)
			return rc;
		x->nm = 0;
		x->have = 1;
		x->comm_id = m->comm_id;
		x->seq = m->seq;
	}
	int k = rank_index(x, m->rank);
	if (k < 0 || x->host_of_rank[k] < 0)
		return 0;
	int rc = ARRAY_GROW(x->m, x->nm, x->capm, 16, "fitting the hosts' clocks");
	if (!rc)
		x->m[x->nm++] = (struct member){ x->host_of_rank[k], m->end_ns };
	return rc;
}

static int cmp_pairdiff(const void *p, const void *q)
{
	const struct pairdiff *a = p, *b = q;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	if (a->b != b->b)
		return a->b < b->b ? -1 : 1;
	return (a->diff_ns > b->diff_ns) - (a->diff_ns < b->diff_ns);
}

/* One pair's fit from its sorted differences d[0..n). */
struct pairfit {
	int a, b;
	int64_t calls, offset_ns, spread_ns;
};

/* |v|, saturated (a damaged file's times saturate: |INT64_MIN| does not exist) */
static int64_t abs_sat(int64_t v)
{
	return v == INT64_MIN ? INT64_MAX : v < 0 ? -v : v;
}

static int fit_pair(const struct pairdiff *d, int64_t n, struct pairfit *out)
{
	int64_t *v = malloc((size_t)n * sizeof *v);
	if (!v)
		return ascent_error(ASCENT_ENOMEM, "out of memory fitting the hosts' clocks");
	for (int64_t i = 0; i < n; i++)   /* d is sorted by difference within the pair */
		v[i] = d[i].diff_ns;
	int64_t med = stats_median_sorted_i64(v, (size_t)n);
	for (int64_t i = 0; i < n; i++)
		v[i] = abs_sat(i64_sub_sat(d[i].diff_ns, med));
	qsort(v, (size_t)n, sizeof *v, stats_cmp_i64);
	int64_t mad = stats_median_sorted_i64(v, (size_t)n);
	free(v);
	*out = (struct pairfit){ .a = d[0].a, .b = d[0].b, .calls = n, .offset_ns = med,
				 .spread_ns = (double)mad * 1.4826 >= 9.2e18 ? INT64_MAX : (int64_t)llround(1.4826 * (double)mad) };
	return 0;
}

void db_clock_fit_free(struct db_clock_fit *f, int n)
{
	if (!f)
		return;
	for (int i = 0; i < n; i++)
		free(f[i].host);
	free(f);
}

/* From the pairs' fits, each host's offset to its root along the maximum spanning forest by calls
 * (Prim's algorithm: hosts are few): host 0 is the first root; a host no pair of enough calls
 * joins to the hosts reached so far starts a tree of its own (its offset 0: the clocks of two
 * trees share no call, so none of their figures compares them). */
static int spanning_offsets(const struct pairfit *p, int np, int nh, struct db_clock_fit *out)
{
	unsigned char *reached = calloc((size_t)nh, 1);
	if (!reached)
		return ascent_error(ASCENT_ENOMEM, "out of memory fitting the hosts' clocks");
	int left = nh;
	while (left > 0) {
		int best = -1;
		for (int i = 0; i < np; i++) {
			if (p[i].calls < DB_CLOCK_FIT_MIN_CALLS || reached[p[i].a] == reached[p[i].b])
				continue;
			if (best < 0 || p[i].calls > p[best].calls)
				best = i;
		}
		if (best < 0) {   /* a new tree at the lowest host not reached */
			int h = 0;
			while (reached[h])
				h++;
			reached[h] = 1;
			out[h].root = h;
			left--;
			continue;
		}
		int from = reached[p[best].a] ? p[best].a : p[best].b;
		int to = from == p[best].a ? p[best].b : p[best].a;
		int64_t d = from == p[best].a ? p[best].offset_ns : -p[best].offset_ns;   /* to's end − from's */
		reached[to] = 1;
		left--;
		out[to].root = out[from].root;
		out[to].via = from;
		out[to].calls = p[best].calls;
		out[to].offset_ns = i64_add_sat(out[from].offset_ns, d);
		out[to].spread_ns = i64_add_sat(out[from].spread_ns, p[best].spread_ns);
	}
	free(reached);
	return 0;
}

int db_clock_fit(struct db *db, struct db_clock_fit **out, int *n)
{
	*out = NULL;
	*n = 0;
	struct db_rank_info *ri = NULL;
	int nr = 0, nh = 0;
	const char **names = NULL;
	struct fitscan x = { 0 };
	struct pairfit *pf = NULL;
	int np = 0;
	int *host_of_rank = NULL;
	int rc = db_ranks(db, &ri, &nr);
	if (!rc && (!(host_of_rank = malloc((size_t)(nr ? nr : 1) * sizeof *host_of_rank)) ||
		    !(names = malloc((size_t)(nr ? nr : 1) * sizeof *names))))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory fitting the hosts' clocks");
	if (!rc)
		nh = db_rank_hosts(ri, nr, host_of_rank, names);
	if (rc || nh < 2)
		goto done;
	x.ranks = ri;
	x.nranks = nr;
	x.host_of_rank = host_of_rank;
	rc = db_each_match(db, DB_FILTER_ALL, DB_KIND_COMM, match_cb, &x);
	if (!rc)
		rc = flush_call(&x);
	if (rc)
		goto done;
	if (x.nd > 1)
		qsort(x.d, (size_t)x.nd, sizeof *x.d, cmp_pairdiff);
	for (int64_t i = 0; i < x.nd && !rc;) {
		int64_t j = i + 1;
		while (j < x.nd && x.d[j].a == x.d[i].a && x.d[j].b == x.d[i].b)
			j++;
		struct pairfit *g = realloc(pf, (size_t)(np + 1) * sizeof *pf);
		if (!g)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory fitting the hosts' clocks");
		else {
			pf = g;
			rc = fit_pair(x.d + i, j - i, &pf[np++]);
		}
		i = j;
	}
	if (rc)
		goto done;
	struct db_clock_fit *f = calloc((size_t)nh, sizeof *f);
	if (!f) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory fitting the hosts' clocks");
		goto done;
	}
	for (int h = 0; h < nh; h++) {
		f[h].via = -1;
		if (!(f[h].host = strdup(names[h]))) {
			db_clock_fit_free(f, nh);
			rc = ascent_error(ASCENT_ENOMEM, "out of memory fitting the hosts' clocks");
			goto done;
		}
	}
	if ((rc = spanning_offsets(pf, np, nh, f)) != 0) {
		db_clock_fit_free(f, nh);
		goto done;
	}
	for (int h = 1; h < nh; h++)
		f[h].applies = f[h].via >= 0 && abs_sat(f[h].offset_ns) >= DB_CLOCK_FIT_MIN_NS &&
			       (double)abs_sat(f[h].offset_ns) > DB_CLOCK_FIT_SIGMAS * (double)f[h].spread_ns;
	*out = f;
	*n = nh;
done:
	free(names);
	free(host_of_rank);
	free(x.m);
	free(x.d);
	free(pf);
	db_ranks_free(ri, nr);
	return rc;
}

int db_clock_fit_apply(struct db *db, const struct db_clock_fit *f, int n)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "UPDATE rank SET clock_offset_ns = coalesce(clock_offset_ns, 0) - ?1,"
			     " clock_err_ns = ?2 WHERE host = ?3", &s);
	for (int h = 0; !rc && h < n; h++) {
		if (!f[h].applies)
			continue;
		sqlite3_reset(s);
		db_bind_i64(db, s, 1, f[h].offset_ns);
		db_bind_i64(db, s, 2, f[h].spread_ns);
		db_bind_text(db, s, 3, f[h].host);
		rc = db_step_done(db, s, "cannot write the hosts' clock offsets to");
	}
	sqlite3_finalize(s);
	return rc;
}
