/* db/opstat.c — per-operator statistics (nsys-stats columns with self time, median and p95):
 * computed from one scan of the events in clustering order, and kept in the op_stat table by
 * db_finalize so that `ascent report` reads a few rows instead of scanning millions of events.
 * db_op_stats reads op_stat when it is current and no step filter is asked, else computes. */
#include "db/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* One (rank, kind, name): running sums and every duration (for the exact median and p95). */
struct opent {
	int rank, kind;
	int64_t name_id;
	int64_t count, total_ns, self_ns, min_ns, max_ns, flops_ns;
	double flops;
	int64_t *d;
	int64_t nd, capd;
	int64_t med_ns, p95_ns;
	double avg_ns, stddev_ns;
};

struct open_range {
	int64_t end, dur, child;
	int ent;               /* index into entries, -1 when not collected */
};

struct tstack {
	struct open_range *v;
	int n, cap;
};

struct opacc {
	unsigned kinds;        /* bit (1 << kind): collected kinds */
	int merge_ranks;       /* 1: one entry per (kind, name) over all ranks (rank −1) */
	int64_t nnames;
	int *index;            /* (name_id * DB_KIND_COUNT + kind) → entry + 1, for the current rank */
	struct opent *v;
	int n, cap;
	struct tstack *th;     /* per tid of the current rank */
	int nth;
	int cur_rank;
};

static void pop_one(struct opacc *a, struct tstack *t)
{
	struct open_range *r = &t->v[--t->n];
	if (r->ent >= 0) {
		int64_t self = i64_sub_sat(r->dur, r->child);
		a->v[r->ent].self_ns = i64_add_sat(a->v[r->ent].self_ns, self > 0 ? self : 0);
	}
}

static void flush_threads(struct opacc *a)
{
	for (int i = 0; i < a->nth; i++)
		while (a->th[i].n)
			pop_one(a, &a->th[i]);
}

static void acc_free(struct opacc *a)
{
	for (int i = 0; i < a->nth; i++)
		free(a->th[i].v);
	free(a->th);
	free(a->index);
	for (int i = 0; i < a->n; i++)
		free(a->v[i].d);
	free(a->v);
}

static int acc_init(struct opacc *a, struct db *db, unsigned kinds, int merge_ranks)
{
	memset(a, 0, sizeof *a);
	a->kinds = kinds;
	a->merge_ranks = merge_ranks;
	a->cur_rank = -1;
	int rc = 0;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db->h, "SELECT coalesce(max(id), 0) FROM string", -1, &s, NULL) != SQLITE_OK)
		return db_sql_err(db, sqlite3_errcode(db->h), "cannot read strings of", NULL);
	int src = sqlite3_step(s);
	a->nnames = src == SQLITE_ROW ? sqlite3_column_int64(s, 0) + 1 : 0;
	sqlite3_finalize(s);
	if (src != SQLITE_ROW)
		return db_sql_err(db, src, "cannot read strings of", NULL);
	if (a->nnames < 1 || a->nnames > 100000001)
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': string ids are damaged (max id %lld)", db->path,
				    (long long)a->nnames - 1);
	a->index = calloc((size_t)a->nnames * DB_KIND_COUNT, sizeof *a->index);
	if (!a->index)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory computing operator statistics");
	return rc;
}

static int push_dur(struct opent *o, int64_t x)
{
	if (o->nd == o->capd) {
		int64_t nc = o->capd ? o->capd * 2 : 16;
		int64_t *nv = realloc(o->d, (size_t)nc * sizeof *nv);
		if (!nv)
			return ascent_error(ASCENT_ENOMEM, "out of memory computing operator statistics");
		o->d = nv;
		o->capd = nc;
	}
	o->d[o->nd++] = x;
	return 0;
}

/* One event, in (rank, start_ns) order: self time from per-thread stacks, then the entry's sums. */
static int acc_event(struct opacc *a, int rank, int tid, int kind, int64_t name_id, int64_t start, int64_t dur,
		     int64_t flops)
{
	if (rank != a->cur_rank) {
		flush_threads(a);
		if (!a->merge_ranks && a->cur_rank != -1)
			memset(a->index, 0, (size_t)a->nnames * DB_KIND_COUNT * sizeof *a->index);
		a->cur_rank = rank;
	}
	if (tid < 0 || tid > 1000000)
		return 0;
	if (tid >= a->nth) {
		int nn = tid + 8;
		struct tstack *t2 = realloc(a->th, (size_t)nn * sizeof *t2);
		if (!t2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		memset(t2 + a->nth, 0, (size_t)(nn - a->nth) * sizeof *t2);
		a->th = t2;
		a->nth = nn;
	}
	struct tstack *t = &a->th[tid];
	int64_t end = i64_add_sat(start, dur);
	while (t->n && t->v[t->n - 1].end <= start)
		pop_one(a, t);
	if (t->n) {
		struct open_range *p = &t->v[t->n - 1];
		int64_t ce = end < p->end ? end : p->end;
		p->child = i64_add_sat(p->child, i64_sub_sat(ce, start));
	}
	int ent = -1;
	if (kind >= 0 && kind < DB_KIND_COUNT && (a->kinds >> kind & 1) && name_id >= 0 && name_id < a->nnames) {
		int64_t key = name_id * DB_KIND_COUNT + kind;
		if (!a->index[key]) {
			if (a->n == a->cap) {
				int nc = a->cap ? a->cap * 2 : 64;
				struct opent *v2 = realloc(a->v, (size_t)nc * sizeof *v2);
				if (!v2)
					return ascent_error(ASCENT_ENOMEM, "out of memory");
				a->v = v2;
				a->cap = nc;
			}
			struct opent *o = &a->v[a->n];
			memset(o, 0, sizeof *o);
			o->rank = a->merge_ranks ? -1 : rank;
			o->kind = kind;
			o->name_id = name_id;
			o->min_ns = INT64_MAX;
			o->max_ns = INT64_MIN;
			a->index[key] = ++a->n;
		}
		ent = a->index[key] - 1;
		struct opent *o = &a->v[ent];
		o->count++;
		o->total_ns = i64_add_sat(o->total_ns, dur);
		if (dur < o->min_ns)
			o->min_ns = dur;
		if (dur > o->max_ns)
			o->max_ns = dur;
		if (flops > 0) {
			o->flops += (double)flops;
			o->flops_ns = i64_add_sat(o->flops_ns, dur);
		}
		int rc = push_dur(o, dur);
		if (rc)
			return rc;
	}
	if (t->n == t->cap) {
		int nc = t->cap ? t->cap * 2 : 16;
		struct open_range *v2 = realloc(t->v, (size_t)nc * sizeof *v2);
		if (!v2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		t->v = v2;
		t->cap = nc;
	}
	t->v[t->n++] = (struct open_range){ end, dur, 0, ent };
	return 0;
}

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

/* med (mean of the two middle values, truncated, for even n), p95 (nearest rank), avg, stddev
 * (sample). Reorders o->d. */
static void finish_entry(struct opent *o)
{
	int64_t n = o->nd;
	if (n <= 0)
		return;
	o->avg_ns = (double)o->total_ns / (double)o->count;
	int64_t hi = select_kth(o->d, n, n / 2);
	if (n % 2) {
		o->med_ns = hi;
	} else {
		int64_t lo = o->d[0];
		for (int64_t j = 1; j < n / 2; j++)
			if (o->d[j] > lo)
				lo = o->d[j];
		int64_t sum;
		o->med_ns = __builtin_add_overflow(lo, hi, &sum) ? lo / 2 + hi / 2 : sum / 2;
	}
	int64_t k = (int64_t)ceil(0.95 * (double)n) - 1;
	o->p95_ns = select_kth(o->d, n, k < 0 ? 0 : k);
	double var = 0;
	for (int64_t j = 0; j < n; j++)
		var += ((double)o->d[j] - o->avg_ns) * ((double)o->d[j] - o->avg_ns);
	o->stddev_ns = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
}

/* Scan the events of the filter's windows, in clustering order, into the accumulator. */
static int acc_scan(struct db *db, struct db_filter f, struct opacc *a)
{
	struct window *w;
	int nw;
	int rc = db_filter_windows(db, f, &w, &nw);
	if (rc)
		return rc;
	sqlite3_stmt *s = NULL;
	const char *sql = "SELECT rank, start_ns, tid, kind, name_id, dur_ns, flops FROM event WHERE (?1 < 0 OR rank = ?1)"
			  " AND start_ns >= ?2 AND start_ns < ?3 ORDER BY rank, start_ns";
	int src = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
	if (src != SQLITE_OK)
		rc = db_sql_err(db, src, "cannot query", sql);
	for (int i = 0; !rc && i < nw; i++) {
		sqlite3_reset(s);
		sqlite3_bind_int64(s, 1, w[i].rank);
		sqlite3_bind_int64(s, 2, w[i].lo);
		sqlite3_bind_int64(s, 3, w[i].hi);
		while ((src = sqlite3_step(s)) == SQLITE_ROW) {
			if ((rc = acc_event(a, sqlite3_column_int(s, 0), sqlite3_column_int(s, 2), sqlite3_column_int(s, 3),
					    sqlite3_column_int64(s, 4), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 5),
					    sqlite3_column_int64(s, 6))) != 0)
				break;
		}
		if (!rc && src != SQLITE_DONE)
			rc = db_sql_err(db, src, "cannot read events of", NULL);
	}
	sqlite3_finalize(s);
	free(w);
	if (!rc)
		flush_threads(a);
	return rc;
}

static int cmp_opstat(const void *a, const void *b)
{
	const struct db_op_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	if (x->count != y->count)
		return x->count < y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Append a stat row; the name is copied from names[name_id]. */
static int out_push(struct db_op_stat **out, int *n, int *cap, const struct db_op_stat *s, char **names, int64_t nn,
		    int64_t name_id)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 32;
		struct db_op_stat *o2 = realloc(*out, (size_t)nc * sizeof *o2);
		if (!o2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		*out = o2;
		*cap = nc;
	}
	struct db_op_stat *o = &(*out)[(*n)++];
	*o = *s;
	o->name = strdup(name_id >= 0 && name_id < nn ? names[name_id] : "?");
	return o->name ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory");
}

static void from_entry(struct db_op_stat *s, const struct opent *o)
{
	memset(s, 0, sizeof *s);
	s->kind = o->kind;
	s->count = o->count;
	s->total_ns = o->total_ns;
	s->self_ns = o->self_ns;
	s->min_ns = o->min_ns;
	s->max_ns = o->max_ns;
	s->med_ns = o->med_ns;
	s->p95_ns = o->p95_ns;
	s->avg_ns = o->avg_ns;
	s->stddev_ns = o->stddev_ns;
	s->flops = o->flops;
	s->flops_ns = o->flops_ns;
}

/* 1 and the rows of op_stat for (rank or −1, kinds) when op_stat is current; 0 when it is not. */
static int read_op_stat(struct db *db, int rank, int ops_only, char **names, int64_t nn, struct db_op_stat **out,
			int *n, int *used)
{
	*used = 0;
	char *built = db_get_meta(db, "op_stat_built");
	if (!built)
		return 0;
	free(built);
	sqlite3_stmt *s = NULL;
	const char *sql = "SELECT kind, name_id, count, total_ns, self_ns, min_ns, max_ns, med_ns, p95_ns, avg_ns,"
			  " stddev_ns, flops, flops_ns FROM op_stat WHERE rank = ?1 AND kind != 3 AND (?2 = 0 OR kind IN (0, 11, 12, 13))";
	if (sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;   /* an older file without the table: compute */
	sqlite3_bind_int(s, 1, rank < 0 ? -1 : rank);
	sqlite3_bind_int(s, 2, ops_only);
	int cap = 0, src, rc = 0;
	while ((src = sqlite3_step(s)) == SQLITE_ROW) {
		struct db_op_stat st = {
			.kind = sqlite3_column_int(s, 0), .count = sqlite3_column_int64(s, 2),
			.total_ns = sqlite3_column_int64(s, 3), .self_ns = sqlite3_column_int64(s, 4),
			.min_ns = sqlite3_column_int64(s, 5), .max_ns = sqlite3_column_int64(s, 6),
			.med_ns = sqlite3_column_int64(s, 7), .p95_ns = sqlite3_column_int64(s, 8),
			.avg_ns = sqlite3_column_double(s, 9), .stddev_ns = sqlite3_column_double(s, 10),
			.flops = sqlite3_column_double(s, 11), .flops_ns = sqlite3_column_int64(s, 12),
		};
		if ((rc = out_push(out, n, &cap, &st, names, nn, sqlite3_column_int64(s, 1))) != 0)
			break;
	}
	if (!rc && src != SQLITE_DONE)
		rc = db_sql_err(db, src, "cannot read op_stat of", NULL);
	sqlite3_finalize(s);
	*used = 1;
	return rc;
}

int db_op_stats(struct db *db, struct db_filter f, int ops_only, struct db_op_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	char **names = NULL;
	int64_t nn = 0;
	int rc = db_strings(db, &names, &nn);
	if (rc)
		return rc;
	int used = 0;
	if (f.step_lo < 0)
		rc = read_op_stat(db, f.rank, ops_only, names, nn, out, n, &used);
	if (!rc && !used) {
		struct opacc a;
		unsigned kinds = ops_only ? DB_KINDS_OPERATORS : ((1u << DB_KIND_COUNT) - 1) & ~(1u << DB_KIND_STEP);
		rc = acc_init(&a, db, kinds, 1);
		if (!rc)
			rc = acc_scan(db, f, &a);
		int cap = 0;
		for (int i = 0; !rc && i < a.n; i++) {
			struct db_op_stat st;
			finish_entry(&a.v[i]);
			from_entry(&st, &a.v[i]);
			rc = out_push(out, n, &cap, &st, names, nn, a.v[i].name_id);
		}
		acc_free(&a);
	}
	db_strings_free(names, nn);
	if (rc) {
		db_op_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
		return rc;
	}
	if (*n > 1)
		qsort(*out, (size_t)*n, sizeof **out, cmp_opstat);
	return 0;
}

void db_op_stats_free(struct db_op_stat *s, int n)
{
	if (!s)
		return;
	for (int i = 0; i < n; i++)
		free(s[i].name);
	free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* op_stat: built by db_finalize */

static int cmp_kind_name(const void *a, const void *b)
{
	const struct opent *x = *(const struct opent *const *)a, *y = *(const struct opent *const *)b;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

static int put_row(struct db *db, sqlite3_stmt *s, int rank, const struct opent *o)
{
	sqlite3_bind_int(s, 1, rank);
	sqlite3_bind_int(s, 2, o->kind);
	sqlite3_bind_int64(s, 3, o->name_id);
	sqlite3_bind_int64(s, 4, o->count);
	sqlite3_bind_int64(s, 5, o->total_ns);
	sqlite3_bind_int64(s, 6, o->self_ns);
	sqlite3_bind_int64(s, 7, o->min_ns);
	sqlite3_bind_int64(s, 8, o->max_ns);
	sqlite3_bind_int64(s, 9, o->med_ns);
	sqlite3_bind_int64(s, 10, o->p95_ns);
	sqlite3_bind_double(s, 11, o->avg_ns);
	sqlite3_bind_double(s, 12, o->stddev_ns);
	sqlite3_bind_double(s, 13, o->flops);
	sqlite3_bind_int64(s, 14, o->flops_ns);
	return db_step_done(db, s, "cannot write operator statistics to");
}

int db_build_op_stat(struct db *db)
{
	struct opacc a;
	int rc = acc_init(&a, db, (1u << DB_KIND_COUNT) - 1, 0);
	if (!rc)
		rc = acc_scan(db, DB_FILTER_ALL, &a);
	if (!rc)
		rc = db_exec(db, "DELETE FROM op_stat");
	sqlite3_stmt *s = NULL;
	const char *sql = "INSERT INTO op_stat(rank, kind, name_id, count, total_ns, self_ns, min_ns, max_ns, med_ns,"
			  " p95_ns, avg_ns, stddev_ns, flops, flops_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)";
	if (!rc && sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK)
		rc = db_sql_err(db, sqlite3_errcode(db->h), "cannot prepare", sql);
	/* per rank */
	int nranks = 0, last = INT32_MIN;
	for (int i = 0; !rc && i < a.n; i++) {
		if (a.v[i].rank != last)
			nranks++, last = a.v[i].rank;
		finish_entry(&a.v[i]);
		rc = put_row(db, s, a.v[i].rank, &a.v[i]);
	}
	/* all ranks (−1): one rank → the same rows; several → durations concatenated per (kind, name) */
	struct opent **ord = rc || !a.n ? NULL : malloc((size_t)a.n * sizeof *ord);
	if (!rc && a.n && !ord)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < a.n; i++)
		ord[i] = &a.v[i];
	if (!rc && a.n > 1)
		qsort(ord, (size_t)a.n, sizeof *ord, cmp_kind_name);
	for (int i = 0; !rc && i < a.n;) {
		int j = i + 1;
		while (j < a.n && ord[j]->kind == ord[i]->kind && ord[j]->name_id == ord[i]->name_id)
			j++;
		if (j - i == 1 || nranks == 1) {
			rc = put_row(db, s, -1, ord[i]);
		} else {
			struct opent m = { .kind = ord[i]->kind, .name_id = ord[i]->name_id, .min_ns = INT64_MAX,
					   .max_ns = INT64_MIN };
			for (int k = i; k < j; k++)
				m.nd += ord[k]->nd;
			m.d = malloc((size_t)m.nd * sizeof *m.d);
			if (!m.d) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			int64_t at = 0;
			for (int k = i; k < j; k++) {
				const struct opent *o = ord[k];
				memcpy(m.d + at, o->d, (size_t)o->nd * sizeof *m.d);
				at += o->nd;
				m.count += o->count;
				m.total_ns += o->total_ns;
				m.self_ns += o->self_ns;
				m.min_ns = o->min_ns < m.min_ns ? o->min_ns : m.min_ns;
				m.max_ns = o->max_ns > m.max_ns ? o->max_ns : m.max_ns;
				m.flops += o->flops;
				m.flops_ns += o->flops_ns;
			}
			finish_entry(&m);
			rc = put_row(db, s, -1, &m);
			free(m.d);
		}
		i = j;
	}
	free(ord);
	sqlite3_finalize(s);
	acc_free(&a);
	if (!rc)
		rc = db_set_meta(db, "op_stat_built", "1");
	if (!rc)
		db->events_added = 0;   /* the next insert marks it stale again */
	return rc;
}

int db_op_stat_invalidate(struct db *db)
{
	db->events_added = 1;
	sqlite3_stmt *s = NULL;
	if (sqlite3_prepare_v2(db->h, "DELETE FROM meta WHERE key = 'op_stat_built'", -1, &s, NULL) != SQLITE_OK)
		return db_sql_err(db, sqlite3_errcode(db->h), "cannot update", "DELETE FROM meta");
	int rc = db_step_done(db, s, "cannot update meta of");
	sqlite3_finalize(s);
	return rc;
}

int db_event_count(struct db *db, int64_t *n)
{
	*n = 0;
	char *built = db_get_meta(db, "op_stat_built");
	sqlite3_stmt *s = NULL;
	if (built && sqlite3_prepare_v2(db->h, "SELECT coalesce(sum(count), 0) FROM op_stat WHERE rank = -1", -1, &s,
					NULL) == SQLITE_OK) {
		free(built);
		int src = sqlite3_step(s);
		if (src == SQLITE_ROW)
			*n = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		return src == SQLITE_ROW ? 0 : db_sql_err(db, src, "cannot read op_stat of", NULL);
	}
	free(built);
	return db_count(db, "event", n);
}
