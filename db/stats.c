/* db/stats.c — what every statistic of the events is computed with, so that `ascent report` and
 * `ascent advise` (op_stat, db/opstat.c) and `ascent view` (the view_* tables, db/view_cache.c)
 * get the same numbers by one route: the event streams (clustering order for export, nesting order
 * for statistics), self time from per-thread stacks of open ranges, the median and p95, and the
 * size bucket of a message. */
#include "db/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* event streams */

#define EVENT_COLS DB_EVENT_SELECT " FROM event WHERE (?1 < 0 OR rank = ?1) AND start_ns >= ?2 AND start_ns < ?3"

struct evscan {
	db_event_cb cb;
	void *ud;
};

void db_event_from_row(sqlite3_stmt *s, struct db_event *e)
{
	e->rank = sqlite3_column_int(s, 0);
	e->start_ns = sqlite3_column_int64(s, 1);
	e->tid = sqlite3_column_int(s, 2);
	e->kind = sqlite3_column_int(s, 3);
	e->name_id = sqlite3_column_int64(s, 4);
	e->dur_ns = sqlite3_column_int64(s, 5);
	/* NULLs are mapped by coalesce() in the query (or read as 0): one call per column */
	e->step = sqlite3_column_int64(s, 6);
	e->mb = (int32_t)sqlite3_column_int64(s, 7);
	e->layer = (int32_t)sqlite3_column_int64(s, 8);
	e->bytes = sqlite3_column_int64(s, 9);
	e->flops = sqlite3_column_int64(s, 10);
	e->peer = (int32_t)sqlite3_column_int64(s, 11);
	e->comm_id = (int32_t)sqlite3_column_int64(s, 12);
	e->seq = sqlite3_column_int64(s, 13);
	e->stack_id = sqlite3_column_int64(s, 14);
	e->site_id = sqlite3_column_int64(s, 15);
}

static int event_row(void *ud, sqlite3_stmt *s)
{
	struct evscan *v = ud;
	struct db_event e;
	db_event_from_row(s, &e);
	return v->cb(v->ud, &e);
}

int db_each_event(struct db *db, struct db_filter f, db_event_cb cb, void *ud)
{
	struct evscan v = { cb, ud };
	return db_scan_windows(db, f, EVENT_COLS " ORDER BY rank, start_ns", event_row, &v);
}

/* Nesting order without SQLite's sorter: the rows come in the table's clustering order (rank,
 * start_ns, tid, kind, name_id, dur_ns), and the events that start at the same ns of a rank (a
 * group, mostly of one or two) are put longest first here, ties kept in clustering order, which is
 * the order "ORDER BY rank, start_ns, dur_ns DESC" gives (its sorter is stable over the scan). */
struct nestscan {
	db_event_cb cb;
	void *ud;
	int lean;                 /* 1: the statement reads the lean columns (EVENT_COLS_LEAN) */
	struct db_event *g;       /* the group being collected */
	int n, cap;
	int *ord;                 /* its order, by dur_ns DESC, stable */
	int *tmp;
	int ocap;
};

/* rank, start_ns, tid, kind, name_id, dur_ns, step, flops, comm_id, seq: what op_stat, step_stat and
 * the statistics of event's indexes (db_finalize) need */
#define EVENT_COLS_LEAN                                                                                  \
	"SELECT rank, start_ns, tid, kind, name_id, dur_ns, step, flops, comm_id, seq FROM event"          \
	" WHERE (?1 < 0 OR rank = ?1) AND start_ns >= ?2 AND start_ns < ?3"

static void order_by_dur_desc(const struct db_event *g, int *ord, int *tmp, int n)
{
	/* bottom-up merge sort of indexes: stable, O(n log n) even for a large group */
	for (int i = 0; i < n; i++)
		ord[i] = i;
	for (int w = 1; w < n; w *= 2) {
		for (int lo = 0; lo < n; lo += 2 * w) {
			int mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
			int i = lo, j = mid, k = lo;
			while (i < mid && j < hi)
				tmp[k++] = g[ord[j]].dur_ns > g[ord[i]].dur_ns ? ord[j++] : ord[i++];
			while (i < mid)
				tmp[k++] = ord[i++];
			while (j < hi)
				tmp[k++] = ord[j++];
		}
		memcpy(ord, tmp, (size_t)n * sizeof *ord);
	}
}

static int nest_flush(struct nestscan *v)
{
	int rc = 0, n = v->n;
	v->n = 0;
	if (n == 1)
		return v->cb(v->ud, &v->g[0]);
	if (n > v->ocap) {
		int *o2 = realloc(v->ord, (size_t)n * sizeof *o2), *t2 = o2 ? realloc(v->tmp, (size_t)n * sizeof *t2) : NULL;
		if (o2)
			v->ord = o2;
		if (t2)
			v->tmp = t2;
		if (!o2 || !t2)
			return ascent_error(ASCENT_ENOMEM, "out of memory reading events");
		v->ocap = n;
	}
	order_by_dur_desc(v->g, v->ord, v->tmp, n);
	for (int i = 0; !rc && i < n; i++)
		rc = v->cb(v->ud, &v->g[v->ord[i]]);
	return rc;
}

static int nest_row(void *ud, sqlite3_stmt *s)
{
	struct nestscan *v = ud;
	int rank = sqlite3_column_int(s, 0);
	int64_t start = sqlite3_column_int64(s, 1);
	int rc;
	if (v->n && (v->g[0].rank != rank || v->g[0].start_ns != start) && (rc = nest_flush(v)) != 0)
		return rc;
	if ((rc = ARRAY_GROW(v->g, v->n, v->cap, 16, "reading events")) != 0)
		return rc;
	struct db_event *e = &v->g[v->n++];
	if (!v->lean)
		db_event_from_row(s, e);
	else
		*e = (struct db_event){ .rank = rank, .start_ns = start, .tid = sqlite3_column_int(s, 2),
					.kind = sqlite3_column_int(s, 3), .name_id = sqlite3_column_int64(s, 4),
					.dur_ns = sqlite3_column_int64(s, 5), .step = sqlite3_column_int64(s, 6),
					.flops = sqlite3_column_int64(s, 7), .mb = -1, .layer = -1, .peer = -1,
					.comm_id = sqlite3_column_type(s, 8) == SQLITE_NULL ? -1 : sqlite3_column_int(s, 8),
					.seq = sqlite3_column_type(s, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 9) };
	return 0;
}

static int each_nested(struct db *db, struct db_filter f, int lean, db_event_cb cb, void *ud)
{
	struct nestscan v = { .cb = cb, .ud = ud, .lean = lean };
	int rc = db_scan_windows(db, f, lean ? EVENT_COLS_LEAN " ORDER BY rank, start_ns" : EVENT_COLS " ORDER BY rank, start_ns",
				 nest_row, &v);
	if (!rc && v.n)
		rc = nest_flush(&v);
	free(v.g);
	free(v.ord);
	free(v.tmp);
	return rc;
}

int db_each_event_nested(struct db *db, struct db_filter f, db_event_cb cb, void *ud)
{
	return each_nested(db, f, 0, cb, ud);
}

int db_each_event_nested_lean(struct db *db, struct db_filter f, db_event_cb cb, void *ud)
{
	return each_nested(db, f, 1, cb, ud);
}

/* ---------------------------------------------------------------------------------------- */
/* self time */

void db_selftime_flush(struct db_selftime *st, db_selftime_cb done, void *ud)
{
	for (int i = 0; i < st->nth; i++) {
		struct db_selftime_stack *t = &st->th[i];
		while (t->n) {
			struct db_selftime_range *r = &t->v[--t->n];
			int64_t self = r->dur - r->child;
			done(ud, r->tag, self > 0 ? self : 0);
		}
	}
}

int db_selftime_event(struct db_selftime *st, int tid, int64_t start, int64_t dur, const int64_t tag[3],
		      db_selftime_cb done, void *ud)
{
	if (!DB_TID_OK(tid))
		return 0;
	if (tid >= st->nth) {
		int nn = tid + 8 > 2 * st->nth ? tid + 8 : 2 * st->nth;   /* doubling: lanes come one by one */
		struct db_selftime_stack *t2 = realloc(st->th, (size_t)nn * sizeof *t2);
		if (!t2)
			return ascent_error(ASCENT_ENOMEM, "out of memory computing self times");
		memset(t2 + st->nth, 0, (size_t)(nn - st->nth) * sizeof *t2);
		st->th = t2;
		st->nth = nn;
	}
	struct db_selftime_stack *t = &st->th[tid];
	int64_t end = i64_add_sat(start, dur);   /* a damaged profile's dur_ns may near INT64_MAX */
	while (t->n && t->v[t->n - 1].end <= start) {
		struct db_selftime_range *r = &t->v[--t->n];
		int64_t self = i64_sub_sat(r->dur, r->child);
		done(ud, r->tag, self > 0 ? self : 0);
	}
	if (t->n) {
		struct db_selftime_range *p = &t->v[t->n - 1];
		int64_t ce = end < p->end ? end : p->end;
		p->child = i64_add_sat(p->child, i64_sub_sat(ce, start));
	}
	if (t->n == t->cap) {
		int nc = t->cap ? t->cap * 2 : 16;
		struct db_selftime_range *v2 = realloc(t->v, (size_t)nc * sizeof *v2);
		if (!v2)
			return ascent_error(ASCENT_ENOMEM, "out of memory computing self times");
		t->v = v2;
		t->cap = nc;
	}
	t->v[t->n++] = (struct db_selftime_range){ end, dur, 0, { tag[0], tag[1], tag[2] } };
	return 0;
}

void db_selftime_free(struct db_selftime *st)
{
	for (int i = 0; i < st->nth; i++)
		free(st->th[i].v);
	free(st->th);
	memset(st, 0, sizeof *st);
}

/* ---------------------------------------------------------------------------------------- */
/* quantiles */

/* The k-th smallest of v[0..n) (0-based), moving it to v[k] with smaller-or-equal values before it
 * and greater-or-equal after (quickselect, expected O(n)). */
static int64_t select_kth(int64_t *v, int64_t n, int64_t k)
{
	int64_t lo = 0, hi = n - 1;
	uint64_t rs = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
	while (hi > lo) {
		rs ^= rs << 13, rs ^= rs >> 7, rs ^= rs << 17;
		int64_t piv = v[lo + (int64_t)(rs % (uint64_t)(hi - lo + 1))];
		/* three-way partition: [lo, lt) < piv, [lt, gt] == piv, (gt, hi] > piv */
		int64_t lt = lo, i = lo, gt = hi;
		while (i <= gt) {
			if (v[i] < piv) {
				int64_t x = v[lt];
				v[lt++] = v[i];
				v[i++] = x;
			} else if (v[i] > piv) {
				int64_t x = v[gt];
				v[gt--] = v[i];
				v[i] = x;
			} else {
				i++;
			}
		}
		if (k < lt)
			hi = lt - 1;
		else if (k > gt)
			lo = gt + 1;
		else
			return v[k];
	}
	return v[k];
}

void db_quantiles(int64_t *v, int64_t n, int64_t *med, int64_t *p95)
{
	*med = *p95 = 0;
	if (n <= 0)
		return;
	int64_t hi = select_kth(v, n, n / 2);
	if (n % 2) {
		*med = hi;
	} else {
		int64_t lo = v[0];   /* the largest of the lower half, which select_kth left before n / 2 */
		for (int64_t j = 1; j < n / 2; j++)
			if (v[j] > lo)
				lo = v[j];
		int64_t sum;
		*med = __builtin_add_overflow(lo, hi, &sum) ? lo / 2 + hi / 2 : sum / 2;
	}
	int64_t k = (int64_t)ceil(0.95 * (double)n) - 1;
	*p95 = select_kth(v, n, k < 0 ? 0 : k);
}

int64_t db_bytes_bucket(int64_t bytes)
{
	if (bytes <= 0)
		return 0;
	int64_t p = 1;
	while (p <= bytes / 2)
		p *= 2;
	return p;
}
