/* db/opstat.c — per-operator statistics (nsys-stats columns with self time, median and p95): the
 * accumulator (struct db_opacc) fed one event at a time in nesting order, with db/stats.c's self
 * time and quantiles; db_finalize keeps its rows in the op_stat table so that `ascent report` and
 * `ascent advise` read a few rows instead of scanning millions of events, and the viewer's pass
 * (db/view_cache.c) feeds the same accumulator for its operator quantiles. db_op_stats reads
 * op_stat when it is current and no step filter is asked, else computes. */
#include "db/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct db_opacc {
	unsigned kinds;        /* bit (1 << kind): collected kinds */
	int merge_ranks;       /* 1: one entry per (kind, name) over all ranks (rank −1) */
	int64_t nnames;
	int *index;            /* (name_id * DB_KIND_COUNT + kind) → entry + 1, for the current rank */
	struct db_opent *v;
	int n, cap;
	struct db_selftime self;
	int cur_rank;
};

/* A range closed: tag[0] is its entry (−1 when its kind is not collected). */
static void credit_self(void *ud, const int64_t tag[3], int64_t self_ns)
{
	struct db_opacc *a = ud;
	if (tag[0] >= 0)
		a->v[tag[0]].self_ns = i64_add_sat(a->v[tag[0]].self_ns, self_ns);
}

void db_opacc_free(struct db_opacc *a)
{
	if (!a)
		return;
	db_selftime_free(&a->self);
	free(a->index);
	for (int i = 0; i < a->n; i++)
		free(a->v[i].d);
	free(a->v);
	free(a);
}

int db_opacc_new(struct db *db, unsigned kinds, int merge_ranks, struct db_opacc **out)
{
	*out = NULL;
	struct db_opacc *a = calloc(1, sizeof *a);
	if (!a)
		return ascent_error(ASCENT_ENOMEM, "out of memory computing operator statistics");
	a->kinds = kinds;
	a->merge_ranks = merge_ranks;
	a->cur_rank = -1;
	int rc = db_scalar_i64(db, "SELECT coalesce(max(id), 0) FROM string", &a->nnames, NULL);
	if (!rc)
		a->nnames++;
	if (!rc && (a->nnames < 1 || a->nnames > 100000001))
		rc = ascent_error(ASCENT_EINPUT, "cannot read '%s': string ids are damaged (max id %lld)", db->path,
				  (long long)a->nnames - 1);
	if (!rc && !(a->index = calloc((size_t)a->nnames * DB_KIND_COUNT, sizeof *a->index)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory computing operator statistics");
	if (rc) {
		db_opacc_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

static int push_dur(struct db_opent *o, int64_t x)
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

/* The entry of (kind, name) for the current rank, created on first use; −1 when not collected. */
static int entry_of(struct db_opacc *a, int rank, int kind, int64_t name_id, int *ent)
{
	*ent = -1;
	if (kind < 0 || kind >= DB_KIND_COUNT || !(a->kinds >> kind & 1) || name_id < 0 || name_id >= a->nnames)
		return 0;
	int64_t key = name_id * DB_KIND_COUNT + kind;
	if (!a->index[key]) {
		if (ARRAY_GROW(a->v, a->n, a->cap, 64, "computing operator statistics"))
			return ASCENT_ENOMEM;
		struct db_opent *o = &a->v[a->n];
		memset(o, 0, sizeof *o);
		o->rank = a->merge_ranks ? -1 : rank;
		o->kind = kind;
		o->name_id = name_id;
		o->min_ns = INT64_MAX;
		o->max_ns = INT64_MIN;
		a->index[key] = ++a->n;
	}
	*ent = a->index[key] - 1;
	return 0;
}

int db_opacc_event(struct db_opacc *a, const struct db_event *e)
{
	if (e->rank != a->cur_rank) {
		db_selftime_flush(&a->self, credit_self, a);
		if (!a->merge_ranks && a->cur_rank != -1)
			memset(a->index, 0, (size_t)a->nnames * DB_KIND_COUNT * sizeof *a->index);
		a->cur_rank = e->rank;
	}
	if (!DB_TID_OK(e->tid))
		return 0;
	int ent;
	int rc = entry_of(a, e->rank, e->kind, e->name_id, &ent);
	if (!rc && ent >= 0) {
		struct db_opent *o = &a->v[ent];
		int64_t dur = e->dur_ns;
		o->count++;
		o->total_ns = i64_add_sat(o->total_ns, dur);
		if (dur < o->min_ns)
			o->min_ns = dur;
		if (dur > o->max_ns)
			o->max_ns = dur;
		if (e->flops > 0) {
			o->flops += (double)e->flops;
			o->flops_ns = i64_add_sat(o->flops_ns, dur);
		}
		rc = push_dur(o, dur);
	}
	if (!rc)
		rc = db_selftime_event(&a->self, e->tid, e->start_ns, e->dur_ns, (int64_t[3]){ ent, 0, 0 }, credit_self, a);
	return rc;
}

static int opacc_event_cb(void *ud, const struct db_event *e)
{
	return db_opacc_event(ud, e);
}

/* med, p95, avg, stddev (sample). Reorders o->d. */
static void finish_entry(struct db_opent *o)
{
	int64_t n = o->nd;
	if (n <= 0)
		return;
	o->avg_ns = (double)o->total_ns / (double)o->count;
	db_quantiles(o->d, n, &o->med_ns, &o->p95_ns);
	double var = 0;
	for (int64_t j = 0; j < n; j++)
		var += ((double)o->d[j] - o->avg_ns) * ((double)o->d[j] - o->avg_ns);
	o->stddev_ns = n > 1 ? sqrt(var / (double)(n - 1)) : 0;
}

/* A step filter's scan: the events of its windows other than device events (those go by the step
 * that launched them, db_each_device_event_launched). */
struct host_scan {
	struct db_opacc *a;
	struct db_device_lane *lanes;
	int nlanes;
};

static int host_event_cb(void *ud, const struct db_event *e)
{
	struct host_scan *h = ud;
	return db_is_device_event(h->lanes, h->nlanes, e) ? 0 : db_opacc_event(h->a, e);
}

/* Scan the events of the filter's windows, in nesting order, into the accumulator; with a step
 * filter, device events by the step that launched them (docs/device.md), after the rest. */
static int acc_scan(struct db *db, struct db_filter f, struct db_opacc *a)
{
	struct host_scan h = { a, NULL, 0 };
	int rc = f.step_lo >= 0 ? db_device_lanes(db, &h.lanes, &h.nlanes) : 0;
	if (!rc && !h.nlanes)
		rc = db_each_event_nested(db, f, opacc_event_cb, a);
	else if (!rc) {
		rc = db_each_event_nested(db, f, host_event_cb, &h);
		if (!rc)
			db_selftime_flush(&a->self, credit_self, a);
		if (!rc)
			rc = db_each_device_event_launched(db, f, opacc_event_cb, a);
	}
	free(h.lanes);
	if (!rc)
		db_selftime_flush(&a->self, credit_self, a);
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
	if (ARRAY_GROW(*out, *n, *cap, 32, "computing operator statistics"))
		return ASCENT_ENOMEM;
	struct db_op_stat *o = &(*out)[(*n)++];
	*o = *s;
	o->name = strdup(name_id >= 0 && name_id < nn ? names[name_id] : "?");
	return o->name ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory");
}

static void from_entry(struct db_op_stat *s, const struct db_opent *o)
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
			  " stddev_ns, flops, flops_ns FROM op_stat WHERE rank = ?1 AND kind != " DB_SQL_KIND_STEP
			  " AND (?2 = 0 OR kind IN (" DB_SQL_KIND_OP ", " DB_SQL_KIND_KERNEL ", " DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET
			  "))";
	if (sqlite3_prepare_v2(db->h, sql, -1, &s, NULL) != SQLITE_OK)
		return 0;   /* an older file without the table: compute (not an error, so not db_prep) */
	db_bind_int(db, s, 1, rank < 0 ? -1 : rank);
	db_bind_int(db, s, 2, ops_only);
	int cap = 0, src, rc = 0;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
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
	*used = 1;
	return db_finish(db, s, src, rc);
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
		struct db_opacc *a = NULL;
		unsigned kinds = ops_only ? DB_KINDS_OPERATORS : ((1u << DB_KIND_COUNT) - 1) & ~(1u << DB_KIND_STEP);
		rc = db_opacc_new(db, kinds, 1, &a);
		if (!rc)
			rc = acc_scan(db, f, a);
		int cap = 0;
		for (int i = 0; !rc && i < a->n; i++) {
			struct db_op_stat st;
			finish_entry(&a->v[i]);
			from_entry(&st, &a->v[i]);
			rc = out_push(out, n, &cap, &st, names, nn, a->v[i].name_id);
		}
		db_opacc_free(a);
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
/* the rows of an accumulator: per rank, then all ranks (−1) */

static int cmp_kind_name(const void *a, const void *b)
{
	const struct db_opent *x = *(const struct db_opent *const *)a, *y = *(const struct db_opent *const *)b;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return (x->name_id > y->name_id) - (x->name_id < y->name_id);
}

int db_opacc_rows(struct db_opacc *a, db_opent_cb row, void *ud)
{
	db_selftime_flush(&a->self, credit_self, a);
	/* per rank */
	int rc = 0, nranks = 0, last = INT32_MIN;
	for (int i = 0; !rc && i < a->n; i++) {
		if (a->v[i].rank != last)
			nranks++, last = a->v[i].rank;
		finish_entry(&a->v[i]);
		rc = row(ud, a->v[i].rank, &a->v[i]);
	}
	/* all ranks (−1): one rank → the same rows; several → durations concatenated per (kind, name) */
	struct db_opent **ord = rc || !a->n ? NULL : malloc((size_t)a->n * sizeof *ord);
	if (!rc && a->n && !ord)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < a->n; i++)
		ord[i] = &a->v[i];
	if (!rc && a->n > 1)
		qsort(ord, (size_t)a->n, sizeof *ord, cmp_kind_name);
	for (int i = 0; !rc && i < a->n;) {
		int j = i + 1;
		while (j < a->n && ord[j]->kind == ord[i]->kind && ord[j]->name_id == ord[i]->name_id)
			j++;
		if (j - i == 1 || nranks == 1) {
			rc = row(ud, -1, ord[i]);
		} else {
			struct db_opent m = { .rank = -1, .kind = ord[i]->kind, .name_id = ord[i]->name_id,
					      .min_ns = INT64_MAX, .max_ns = INT64_MIN };
			for (int k = i; k < j; k++)
				m.nd += ord[k]->nd;
			m.d = malloc((size_t)m.nd * sizeof *m.d);
			if (!m.d) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			int64_t at = 0;
			for (int k = i; k < j; k++) {
				const struct db_opent *o = ord[k];
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
			rc = row(ud, -1, &m);
			free(m.d);
		}
		i = j;
	}
	free(ord);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* op_stat: built by db_finalize */

struct op_stat_writer {
	struct db *db;
	sqlite3_stmt *ins;
};

static int put_row(void *ud, int rank, const struct db_opent *o)
{
	struct op_stat_writer *w = ud;
	struct db *db = w->db;
	sqlite3_stmt *s = w->ins;
	db_bind_int(db, s, 1, rank);
	db_bind_int(db, s, 2, o->kind);
	db_bind_i64(db, s, 3, o->name_id);
	db_bind_i64(db, s, 4, o->count);
	db_bind_i64(db, s, 5, o->total_ns);
	db_bind_i64(db, s, 6, o->self_ns);
	db_bind_i64(db, s, 7, o->min_ns);
	db_bind_i64(db, s, 8, o->max_ns);
	db_bind_i64(db, s, 9, o->med_ns);
	db_bind_i64(db, s, 10, o->p95_ns);
	db_bind_double(db, s, 11, o->avg_ns);
	db_bind_double(db, s, 12, o->stddev_ns);
	db_bind_double(db, s, 13, o->flops);
	db_bind_i64(db, s, 14, o->flops_ns);
	return db_step_done(db, s, "cannot write operator statistics to");
}

int db_write_op_stat(struct db *db, struct db_opacc *a)
{
	struct op_stat_writer w = { db, NULL };
	int rc = db_exec(db, "DELETE FROM op_stat");
	if (!rc)
		rc = db_prep(db, "INSERT INTO op_stat(rank, kind, name_id, count, total_ns, self_ns, min_ns, max_ns, med_ns,"
			     " p95_ns, avg_ns, stddev_ns, flops, flops_ns) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
			     &w.ins);
	if (!rc)
		rc = db_opacc_rows(a, put_row, &w);
	sqlite3_finalize(w.ins);
	if (!rc)
		rc = db_set_meta(db, "op_stat_built", "1");
	if (!rc)
		db->events_added = 0;   /* the next insert marks it stale again */
	return rc;
}

int db_op_stat_invalidate(struct db *db)
{
	db->events_added = 1;
	return db_exec(db, "DELETE FROM meta WHERE key = 'op_stat_built'");
}

int db_event_count(struct db *db, int64_t *n)
{
	*n = 0;
	char *built = db_get_meta(db, "op_stat_built");
	sqlite3_stmt *s = NULL;
	if (built && sqlite3_prepare_v2(db->h, "SELECT coalesce(sum(count), 0) FROM op_stat WHERE rank = -1", -1, &s,
					NULL) == SQLITE_OK) {   /* no table (an older file): count the events */
		free(built);
		int src = db_step(db, s);
		if (src == SQLITE_ROW)
			*n = sqlite3_column_int64(s, 0);
		return db_finish(db, s, src, 0);
	}
	free(built);
	return db_count(db, "event", n);
}
