/* db/opkernels.c — imported traces: each CPU operator with the device work it launched (its kernel
 * sequence and launch delay) and the frequent kernel sequences on a stream (fusion candidates), for
 * `report --by opkernels` (docs/device.md). A launch belongs to operators by db_diff's rule (every
 * operator name open on the launching thread, once per name), so diff's `device` and this agree. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

/* One launch: its operator-side key (rank, tid, at), the launch call's start, the device event. */
struct okl {
	int rank, tid;
	int64_t at, call_ns, dev_ns, dur, name_id;
};

/* One operator call: its name and duration; its launches are the credits with its index. */
struct okcall {
	int64_t name_id, dur;
};

/* A launch given to a call (in launch order, as given). */
struct okcredit {
	int call, launch;
};

struct okscan {
	struct db_opkernels *out;
	struct okl *l;
	int nl, capl, next;
	int rank;                   /* INT32_MIN before the first event */
	struct db_opstacks ops;     /* the operators open on each thread */
	struct okcall *calls;
	int ncalls, capcalls;
	struct okcredit *cr;
	int ncr, capcr;
	int64_t nnames;
	char **names;
};

static int okl_row(void *ud, sqlite3_stmt *s)
{
	struct okscan *x = ud;
	int rc = ARRAY_GROW(x->l, x->nl, x->capl, 1024, "reading launch links");
	if (rc)
		return rc;
	x->l[x->nl++] = (struct okl){ .rank = sqlite3_column_int(s, 0), .tid = sqlite3_column_int(s, 1),
				      .at = sqlite3_column_int64(s, 2), .call_ns = sqlite3_column_int64(s, 3),
				      .dev_ns = sqlite3_column_int64(s, 4), .dur = sqlite3_column_int64(s, 5),
				      .name_id = sqlite3_column_int64(s, 6) };
	return 0;
}

/* One launch to the outermost open operator of each name on its thread (db_diff's give_launch). */
static int ok_give(struct okscan *x, int li)
{
	const struct okl *l = &x->l[li];
	x->out->launches++;
	x->out->launches_ns = i64_add_sat(x->out->launches_ns, l->dur);
	int n;
	const struct db_opframe *v = db_opstack_open(&x->ops, l->tid, l->at, &n);
	if (!n)
		return 0;
	x->out->in_ops++;
	x->out->in_ops_ns = i64_add_sat(x->out->in_ops_ns, l->dur);
	for (int i = 0; i < n; i++) {
		if (!db_opstack_first(v, i))
			continue;
		int rc = ARRAY_GROW(x->cr, x->ncr, x->capcr, 1024, "following operators");
		if (rc)
			return rc;
		x->cr[x->ncr++] = (struct okcredit){ v[i].call, li };
	}
	return 0;
}

static int ok_give_until(struct okscan *x, int64_t ns)
{
	int rc = 0;
	while (x->next < x->nl && x->l[x->next].rank < x->rank) {   /* a rank without events in the filter */
		x->out->launches++;
		x->out->launches_ns = i64_add_sat(x->out->launches_ns, x->l[x->next++].dur);
	}
	while (!rc && x->next < x->nl && x->l[x->next].rank == x->rank && x->l[x->next].at < ns)
		rc = ok_give(x, x->next++);
	return rc;
}

static int ok_event(void *ud, const struct db_event *e)
{
	struct okscan *x = ud;
	int rc = 0;
	if (e->rank != x->rank) {
		if (x->rank != INT32_MIN && (rc = ok_give_until(x, INT64_MAX)) != 0)
			return rc;
		x->rank = e->rank;
		db_opstack_clear(&x->ops);
	}
	if ((rc = ok_give_until(x, e->start_ns)) != 0)
		return rc;
	if (e->kind != DB_KIND_OP || e->name_id <= 0 || e->name_id >= x->nnames)
		return 0;
	if ((rc = ARRAY_GROW(x->calls, x->ncalls, x->capcalls, 1024, "following operators")) != 0 ||
	    (rc = db_opstack_push(&x->ops, e->tid, e->start_ns,
				  (struct db_opframe){ e->name_id, i64_add_sat(e->start_ns, e->dur_ns), x->ncalls })) != 0)
		return rc;
	x->calls[x->ncalls++] = (struct okcall){ e->name_id, e->dur_ns };
	return 0;
}

/* ---- grouping calls by name and kernel sequence ---- */

/* A call's launches: cr[first .. first+n) (credits sorted by call, then launch order). */
struct okseq {
	int call, first, n;
};

/* Sequences by their kernels' names (strings, so the order does not depend on string ids), then length. */
static int seq_cmp(const struct okscan *x, const struct okseq *a, const struct okseq *b)
{
	for (int i = 0; i < a->n && i < b->n; i++) {
		int64_t p = x->l[x->cr[a->first + i].launch].name_id, q = x->l[x->cr[b->first + i].launch].name_id;
		if (p == q)
			continue;
		int c = strcmp(p > 0 && p < x->nnames ? x->names[p] : "", q > 0 && q < x->nnames ? x->names[q] : "");
		if (c)
			return c;
		return p < q ? -1 : 1;
	}
	return (a->n > b->n) - (a->n < b->n);
}

static int cmp_okseq(const void *pa, const void *pb, void *ud)
{
	const struct okscan *x = ud;
	const struct okseq *a = pa, *b = pb;
	int64_t na = x->calls[a->call].name_id, nb = x->calls[b->call].name_id;
	if (na != nb)
		return na < nb ? -1 : 1;
	int c = seq_cmp(x, a, b);
	return c ? c : (a->call > b->call) - (a->call < b->call);
}

static int cmp_credit(const void *pa, const void *pb)
{
	const struct okcredit *a = pa, *b = pb;
	if (a->call != b->call)
		return a->call < b->call ? -1 : 1;
	return (a->launch > b->launch) - (a->launch < b->launch);
}

static int cmp_opstat(const void *pa, const void *pb)
{
	const struct db_opkernel_stat *a = pa, *b = pb;
	if (a->device_ns != b->device_ns)
		return a->device_ns > b->device_ns ? -1 : 1;
	return strcmp(a->name, b->name);
}

static char **names_of(const struct okscan *x, const struct okseq *s)
{
	char **v = calloc((size_t)s->n + 1, sizeof *v);
	for (int i = 0; v && i < s->n; i++) {
		int64_t id = x->l[x->cr[s->first + i].launch].name_id;
		if (!(v[i] = strdup(id > 0 && id < x->nnames ? x->names[id] : ""))) {
			for (int j = 0; j < i; j++)
				free(v[j]);
			free(v);
			return NULL;
		}
	}
	return v;
}

/* One row per operator name with at least one launch. seq: every call, sorted by (name, sequence). */
static int ok_rows(struct okscan *x, struct okseq *seq, int nseq)
{
	struct db_opkernels *o = x->out;
	int cap = 0, rc = 0;
	int64_t *d = NULL;
	size_t capd = 0;
	for (int i = 0; i < nseq && !rc;) {
		int64_t name = x->calls[seq[i].call].name_id;
		int j = i;
		int64_t kernels = 0;
		while (j < nseq && x->calls[seq[j].call].name_id == name)
			kernels += seq[j++].n;
		if (!kernels) {
			i = j;
			continue;
		}
		if ((rc = ARRAY_GROW(o->ops, o->nops, cap, 32, "reading operators")) != 0)
			break;
		struct db_opkernel_stat *r = &o->ops[o->nops++];
		memset(r, 0, sizeof *r);
		if (!(r->name = strdup(x->names[name]))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		if ((size_t)kernels > capd) {
			int64_t *d2 = realloc(d, (size_t)kernels * sizeof *d2);
			if (!d2) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			d = d2;
			capd = (size_t)kernels;
		}
		int64_t nd = 0, sum = 0;
		int best = -1;
		int64_t best_n = 0;
		for (int k = i; k < j;) {
			int m = k;
			while (m < j && !seq_cmp(x, &seq[k], &seq[m]))
				m++;
			if (seq[k].n && m - k > best_n) {   /* equal counts: the first in name order */
				best = k;
				best_n = m - k;
			}
			for (int q = k; q < m; q++) {
				r->calls++;
				r->cpu_ns = i64_add_sat(r->cpu_ns, x->calls[seq[q].call].dur);
				r->calls_launching += seq[q].n > 0;
				for (int c = seq[q].first; c < seq[q].first + seq[q].n; c++) {
					const struct okl *l = &x->l[x->cr[c].launch];
					r->kernels++;
					r->device_ns = i64_add_sat(r->device_ns, l->dur);
					d[nd++] = l->dev_ns - l->call_ns;
					sum = i64_add_sat(sum, l->dev_ns - l->call_ns);
				}
			}
			k = m;
		}
		r->delay_mean_ns = (double)sum / (double)nd;
		int64_t p95;
		db_quantiles(d, nd, &r->delay_p50_ns, &p95);
		r->seq_calls = best_n;
		r->seq_n = seq[best].n;
		if (!(r->seq = names_of(x, &seq[best])))
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		i = j;
	}
	free(d);
	if (!rc && o->nops)
		qsort(o->ops, (size_t)o->nops, sizeof *o->ops, cmp_opstat);
	return rc;
}

static int ok_ops(struct db *db, struct db_filter f, struct okscan *x)
{
	int rc = 0;
	/* each launch link's device event, as db_diff reads them: where the launching call is itself
	 * the end of an operator → call link (Ascend), the launch counts at the operator's start */
	if (db_has_table(db, "flow"))
		rc = db_scan_windows(db, f,
				     "SELECT fl.rank, coalesce(c.src_tid, fl.src_tid), coalesce(c.src_ns, fl.src_ns) AS at,"
				     " fl.src_ns, fl.dst_ns, max(e.dur_ns), e.name_id" DB_SQL_LAUNCHES_FROM " GROUP BY fl.rowid"
				     " ORDER BY fl.rank, at, fl.src_ns, fl.dst_ns",
				     okl_row, x);
	if (!rc)
		rc = db_each_event_nested(db, f, ok_event, x);
	if (!rc && x->rank != INT32_MIN)
		rc = ok_give_until(x, INT64_MAX);
	for (int i = x->next; !rc && i < x->nl; i++) {   /* ranks after the last with events */
		x->out->launches++;
		x->out->launches_ns = i64_add_sat(x->out->launches_ns, x->l[i].dur);
	}
	if (rc || !x->ncalls)
		return rc;
	if (x->ncr)
		qsort(x->cr, (size_t)x->ncr, sizeof *x->cr, cmp_credit);
	struct okseq *seq = malloc((size_t)x->ncalls * sizeof *seq);
	if (!seq)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0, c = 0; i < x->ncalls; i++) {
		seq[i] = (struct okseq){ .call = i, .first = c };
		while (c < x->ncr && x->cr[c].call == i)
			c++;
		seq[i].n = c - seq[i].first;
	}
	qsort_r(seq, (size_t)x->ncalls, sizeof *seq, cmp_okseq, x);
	rc = ok_rows(x, seq, x->ncalls);
	free(seq);
	return rc;
}

/* ---- frequent sequences on a stream ---- */

struct okdev {
	int rank, tid;
	int64_t start, dur, name_id;
};

struct okdevs {
	struct okdev *v;
	int n, cap;
};

static int okdev_row(void *ud, sqlite3_stmt *s)
{
	struct okdevs *x = ud;
	int rc = ARRAY_GROW(x->v, x->n, x->cap, 1024, "reading device work");
	if (rc)
		return rc;
	x->v[x->n++] = (struct okdev){ sqlite3_column_int(s, 0), sqlite3_column_int(s, 1), sqlite3_column_int64(s, 2),
				       sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4) };
	return 0;
}

static int cmp_okdev(const void *pa, const void *pb)
{
	const struct okdev *a = pa, *b = pb;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return (a->dur > b->dur) - (a->dur < b->dur);
}

struct winctx {
	const struct okdev *v;
	int len;
	char **names;
	int64_t nnames;
};

static int cmp_win(const void *pa, const void *pb, void *ud)
{
	const struct winctx *c = ud;
	int a = *(const int *)pa, b = *(const int *)pb;
	for (int i = 0; i < c->len; i++) {
		int64_t p = c->v[a + i].name_id, q = c->v[b + i].name_id;
		if (p != q)
			return p < q ? -1 : 1;
	}
	return (a > b) - (a < b);
}

static const char *win_name(const struct winctx *c, int i)
{
	int64_t id = c->v[i].name_id;
	return id > 0 && id < c->nnames ? c->names[id] : "";
}

/* Do the windows at a and b hold the same names? */
static int win_eq(const struct winctx *c, int a, int b)
{
	for (int i = 0; i < c->len; i++)
		if (c->v[a + i].name_id != c->v[b + i].name_id)
			return 0;
	return 1;
}

/* One distinct sequence: its first window, how often, the device time of its windows, on how many streams. */
struct okcand {
	int first;
	int64_t count, device_ns, streams;
};

/* Most frequent first, then the most device time, then by names. */
static int cmp_cand(const void *pa, const void *pb, void *ud)
{
	const struct winctx *c = ud;
	const struct okcand *a = pa, *b = pb;
	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	if (a->device_ns != b->device_ns)
		return a->device_ns > b->device_ns ? -1 : 1;
	for (int i = 0; i < c->len; i++) {
		int r = strcmp(win_name(c, a->first + i), win_name(c, b->first + i));
		if (r)
			return r;
	}
	return (a->first > b->first) - (a->first < b->first);
}

static int ok_seqs(struct db *db, struct db_filter f, struct okscan *x, int len, int top)
{
	struct db_opkernels *o = x->out;
	struct okdevs d = { 0 };
	int rc = 0;
	if (db_has_table(db, "device_lane")) {
		/* device work on device lanes, selected by its launch call's start (its own start unlinked) */
		static const char *const SQL_LINKED =
			"SELECT e.rank, e.tid, e.start_ns, e.dur_ns, e.name_id FROM event e JOIN device_lane dl ON"
			" dl.rank = e.rank AND dl.tid = e.tid WHERE e.kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_KERNEL ", "
			DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET ") AND (?1 < 0 OR e.rank = ?1) AND coalesce((SELECT"
			" min(fl.src_ns) FROM flow fl WHERE fl.rank = e.rank AND fl.dst_tid = e.tid AND fl.dst_ns = e.start_ns"
			" AND fl.kind = " DB_SQL_FLOW_LAUNCH "), e.start_ns) BETWEEN ?2 AND ?3 - 1";
		static const char *const SQL_PLAIN =
			"SELECT e.rank, e.tid, e.start_ns, e.dur_ns, e.name_id FROM event e JOIN device_lane dl ON"
			" dl.rank = e.rank AND dl.tid = e.tid WHERE e.kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_KERNEL ", "
			DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET ") AND (?1 < 0 OR e.rank = ?1) AND e.start_ns >= ?2"
			" AND e.start_ns < ?3";
		rc = db_scan_windows(db, f, db_has_table(db, "flow") ? SQL_LINKED : SQL_PLAIN, okdev_row, &d);
	}
	if (!rc && d.n)
		qsort(d.v, (size_t)d.n, sizeof *d.v, cmp_okdev);
	/* every window of len consecutive events on one stream */
	int *w = NULL, nw = 0;
	if (!rc && d.n >= len && !(w = malloc((size_t)d.n * sizeof *w)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && w && i + len <= d.n; i++)
		if (d.v[i + len - 1].rank == d.v[i].rank && d.v[i + len - 1].tid == d.v[i].tid)
			w[nw++] = i;
	o->windows = nw;
	struct winctx c = { d.v, len, x->names, x->nnames };
	if (!rc && nw)
		qsort_r(w, (size_t)nw, sizeof *w, cmp_win, &c);
	struct okcand *all = NULL;
	int nall = 0, cap = 0;
	for (int i = 0; !rc && i < nw;) {
		int j = i;
		int64_t ns = 0, streams = 0;
		for (; j < nw && win_eq(&c, w[i], w[j]); j++) {
			for (int k = 0; k < len; k++)
				ns = i64_add_sat(ns, d.v[w[j] + k].dur);
			streams += j == i || d.v[w[j]].rank != d.v[w[j - 1]].rank || d.v[w[j]].tid != d.v[w[j - 1]].tid;
		}
		if ((rc = ARRAY_GROW(all, nall, cap, 256, "counting kernel sequences")) != 0)
			break;
		all[nall++] = (struct okcand){ .first = w[i], .count = j - i, .device_ns = ns, .streams = streams };
		i = j;
	}
	if (!rc && nall) {
		struct winctx cc = c;
		qsort_r(all, (size_t)nall, sizeof *all, cmp_cand, &cc);
	}
	int keep = nall < top ? nall : top;
	o->nseq_distinct = nall;
	if (!rc && keep && !(o->seqs = calloc((size_t)keep, sizeof *o->seqs)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < keep; i++) {
		struct db_kernel_seq *q = &o->seqs[i];
		*q = (struct db_kernel_seq){ .n = len, .count = all[i].count, .device_ns = all[i].device_ns,
					     .streams = all[i].streams };
		o->nseqs = i + 1;
		if (!(q->names = calloc((size_t)len, sizeof *q->names))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		for (int k = 0; k < len && !rc; k++)
			if (!(q->names[k] = strdup(win_name(&c, all[i].first + k))))
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	free(all);
	free(w);
	free(d.v);
	return rc;
}

int db_opkernels(struct db *db, struct db_filter f, int seq_len, int top, struct db_opkernels *out)
{
	memset(out, 0, sizeof *out);
	if (seq_len < 1 || seq_len > DB_KSEQ_MAX)
		return ascent_error(ASCENT_EUSAGE, "kernel sequence length %d out of range (1 to %d)", seq_len, DB_KSEQ_MAX);
	out->seq_len = seq_len;
	struct okscan x = { .out = out, .rank = INT32_MIN };
	int rc = db_strings(db, &x.names, &x.nnames);
	if (!rc)
		rc = ok_ops(db, f, &x);
	if (!rc)
		rc = ok_seqs(db, f, &x, seq_len, top < 0 ? 0 : top);
	db_opstack_free(&x.ops);
	free(x.l);
	free(x.calls);
	free(x.cr);
	db_strings_free(x.names, x.nnames);
	if (rc)
		db_opkernels_free(out);
	return rc;
}

void db_opkernels_free(struct db_opkernels *o)
{
	for (int i = 0; o->ops && i < o->nops; i++) {
		free(o->ops[i].name);
		for (int k = 0; o->ops[i].seq && k < o->ops[i].seq_n; k++)
			free(o->ops[i].seq[k]);
		free(o->ops[i].seq);
	}
	free(o->ops);
	for (int i = 0; o->seqs && i < o->nseqs; i++) {
		for (int k = 0; o->seqs[i].names && k < o->seqs[i].n; k++)
			free(o->seqs[i].names[k]);
		free(o->seqs[i].names);
	}
	free(o->seqs);
	memset(o, 0, sizeof *o);
}
