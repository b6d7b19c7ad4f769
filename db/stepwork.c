/* db/stepwork.c — device work by the step that launched it (docs/device.md, "Device work per
 * step"): each device event (kernel, copy, memset, device collective) of an imported trace belongs
 * to the step whose window holds the start of its launch call (the start of its launch link; the
 * importer links by correlation id where a trace has no flows). Work launched before the rank's
 * first step, between two steps or after the last, and work without a launch link, are rows of
 * their own: every device event is in exactly one row of its rank. */
#include "db/internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A rank's steps in start order. */
struct sw_step {
	int64_t step, s0, s1;
};

/* One device event and the row it belongs to (an index into its rank's rows). */
struct sw_ev {
	int rank, device, row, compute;
	int64_t start, end;
};

const char *db_step_work_where_name(int where)
{
	switch (where) {
	case DB_SW_STEP: return "step";
	case DB_SW_BEFORE: return "before";
	case DB_SW_AFTER: return "after";
	case DB_SW_UNLINKED: return "unlinked";
	case DB_SW_NO_STEP: return "no step";
	}
	return "?";
}

int db_step_work_label(const struct db_step_work *w, char *buf, size_t size)
{
	switch (w->where) {
	case DB_SW_STEP: return snprintf(buf, size, "%lld", (long long)w->step);
	case DB_SW_BEFORE: return snprintf(buf, size, "before %lld", (long long)w->step);
	case DB_SW_AFTER: return snprintf(buf, size, "after %lld", (long long)w->step);
	default: return snprintf(buf, size, "%s", db_step_work_where_name(w->where));
	}
}

/* The row of a launch at t among a rank's steps st[0..n) (start order): the row indices are
 * 0 before the first step, 2i+1 in step i, 2i+2 after step i (before step i+1 starts; a launch
 * inside two overlapping steps goes to the later one), 2n+1 unlinked. A rank without steps has
 * rows 0 (linked: no step) and 1 (unlinked). */
static int row_of(const struct sw_step *st, int n, int64_t t, int linked)
{
	if (!linked)
		return 2 * n + 1;
	if (!n || t < st[0].s0)
		return 0;
	int lo = 0, hi = n - 1;   /* the last step starting at or before t */
	while (lo < hi) {
		int mid = (lo + hi + 1) / 2;
		if (st[mid].s0 <= t)
			lo = mid;
		else
			hi = mid - 1;
	}
	return t < st[lo].s1 ? 2 * lo + 1 : 2 * lo + 2;
}

static int cmp_sw_ev(const void *a, const void *b)
{
	const struct sw_ev *x = a, *y = b;
	int64_t ka[4] = { x->rank, x->row, x->device, x->start }, kb[4] = { y->rank, y->row, y->device, y->start };
	for (int i = 0; i < 4; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

/* The steps of every rank with device lanes, by rank then start. */
struct sw_ranks {
	int *rank;          /* the ranks, ascending */
	int *first;         /* rank i's steps are st[first[i] .. first[i+1]) */
	struct sw_step *st;
	int n, nst;
};

/* Rank i's steps (NULL when no rank has any: no pointer arithmetic on NULL). */
static struct sw_step *sw_steps_of(const struct sw_ranks *r, int i)
{
	return r->st ? &r->st[r->first[i]] : NULL;
}

static void sw_ranks_free(struct sw_ranks *r)
{
	free(r->rank);
	free(r->first);
	free(r->st);
}

static int sw_rank_index(const struct sw_ranks *r, int rank)
{
	int lo = 0, hi = r->n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (r->rank[mid] == rank)
			return mid;
		if (r->rank[mid] < rank)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static int sw_load_ranks(struct db *db, int rank_filter, struct sw_ranks *r)
{
	memset(r, 0, sizeof *r);
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT DISTINCT rank FROM device_lane WHERE ?1 < 0 OR rank = ?1 ORDER BY rank", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank_filter);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(r->rank, r->n, cap, 8, "reading device work per step")) != 0)
			break;
		r->rank[r->n++] = sqlite3_column_int(s, 0);
	}
	if ((rc = db_finish(db, s, src, rc)) != 0)
		return rc;
	if (!(r->first = calloc((size_t)r->n + 1, sizeof *r->first)))
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work per step");
	rc = db_prep(db, "SELECT rank, step, start_ns, dur_ns FROM event WHERE kind = " DB_SQL_KIND_STEP
			 " AND (?1 < 0 OR rank = ?1) ORDER BY rank, start_ns, step", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank_filter);
	cap = 0;
	int at = 0;   /* the rank index whose steps are being read */
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		int i = sw_rank_index(r, sqlite3_column_int(s, 0));
		if (i < 0)
			continue;   /* a rank without device lanes */
		while (at < i)
			r->first[++at] = r->nst;
		if ((rc = ARRAY_GROW(r->st, r->nst, cap, 64, "reading device work per step")) != 0)
			break;
		int64_t s0 = sqlite3_column_int64(s, 2);
		r->st[r->nst++] = (struct sw_step){ sqlite3_column_int64(s, 1), s0, i64_add_sat(s0, sqlite3_column_int64(s, 3)) };
	}
	while (at < r->n)
		r->first[++at] = r->nst;
	return db_finish(db, s, src, rc);
}

/* Close the rows of one rank: rows[0 .. 2n+2) from its events e[0..ne) sorted by (row, device, start). */
static int sw_close_rank(const struct sw_step *st, int nst, int rank, const struct sw_ev *e, int ne, struct db_filter f,
			 struct db_step_work **out, int *n, int *cap)
{
	int64_t *iv = malloc(((size_t)ne + 1) * 2 * sizeof *iv), *cv = malloc(((size_t)ne + 1) * 2 * sizeof *cv);
	if (!iv || !cv) {
		free(iv);
		free(cv);
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work per step");
	}
	int rc = 0, k = 0;
	for (int row = 0; row <= 2 * nst + 1 && !rc; row++) {
		int j = k;
		while (j < ne && e[j].row == row)
			j++;
		int is_step = nst && row % 2 == 1 && row <= 2 * nst - 1;
		const struct sw_step *s = is_step ? &st[row / 2] : NULL;
		int selected = f.step_lo < 0 || (s && s->step >= f.step_lo && s->step <= f.step_hi);
		if (!selected || (!s && j == k)) {   /* a row other than a step's only when it has work */
			k = j;
			continue;
		}
		if ((rc = ARRAY_GROW(*out, *n, *cap, 64, "reading device work per step")) != 0)
			break;
		struct db_step_work *o = &(*out)[(*n)++];
		memset(o, 0, sizeof *o);
		o->rank = rank;
		o->step = -1;
		if (row == 2 * nst + 1)
			o->where = DB_SW_UNLINKED;
		else if (!nst)
			o->where = DB_SW_NO_STEP;
		else if (row == 0)
			o->where = DB_SW_BEFORE, o->step = st[0].step;
		else if (s)
			o->where = DB_SW_STEP, o->step = s->step, o->step_start_ns = s->s0, o->step_end_ns = s->s1;
		else
			o->where = DB_SW_AFTER, o->step = st[row / 2 - 1].step;
		/* per device: the union of the row's work and of its compute kernels */
		for (int a = k, b; a < j; a = b) {
			int ni = 0, nc = 0;
			for (b = a; b < j && e[b].device == e[a].device; b++) {
				iv[2 * ni] = e[b].start, iv[2 * ni + 1] = e[b].end, ni++;
				if (e[b].compute)
					cv[2 * nc] = e[b].start, cv[2 * nc + 1] = e[b].end, nc++;
				o->events++;
				o->device_ns = i64_add_sat(o->device_ns, e[b].end - e[b].start);
				if (o->events == 1 || e[b].start < o->first_start_ns)
					o->first_start_ns = e[b].start;
				if (o->events == 1 || e[b].end > o->last_end_ns)
					o->last_end_ns = e[b].end;
			}
			ni = db_iv_union(iv, ni, INT64_MIN, INT64_MAX);
			nc = db_iv_union(cv, nc, INT64_MIN, INT64_MAX);
			o->busy_ns += db_iv_len(iv, ni);
			o->compute_ns += db_iv_len(cv, nc);
			if (s) {
				int64_t w[2] = { s->s0, s->s1 };
				o->in_window_ns += db_iv_inter(iv, ni, w, 1);
			}
		}
		k = j;
	}
	free(iv);
	free(cv);
	return rc;
}

int db_step_work(struct db *db, struct db_filter f, struct db_step_work **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (!db_has_table(db, "device_lane"))
		return 0;
	struct sw_ranks r;
	int rc = sw_load_ranks(db, f.rank, &r);
	struct sw_ev *ev = NULL;
	int nev = 0, capev = 0;
	sqlite3_stmt *s = NULL;
	char *sql = NULL;
	int has_flow = db_has_table(db, "flow");
	if (!rc && !(sql = sqlite3_mprintf("SELECT e.rank, dl.device, e.start_ns, e.dur_ns, e.kind, s.value, %s FROM event e"
					   " JOIN device_lane dl ON dl.rank = e.rank AND dl.tid = e.tid JOIN string s ON"
					   " s.id = e.name_id WHERE e.kind IN (" DB_SQL_KINDS_DEVICE_EVENT ") AND"
					   " (?1 < 0 OR e.rank = ?1)", has_flow ? DB_SQL_LAUNCH_START_OF_E : "NULL")))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading device work per step");
	if (!rc)
		rc = db_prep(db, sql, &s);
	sqlite3_free(sql);
	if (!rc) {
		db_bind_i64(db, s, 1, f.rank);
		int src;
		while ((src = db_step(db, s)) == SQLITE_ROW) {
			int i = sw_rank_index(&r, sqlite3_column_int(s, 0));
			if (i < 0)
				continue;
			if ((rc = ARRAY_GROW(ev, nev, capev, 1024, "reading device work per step")) != 0)
				break;
			int64_t start = sqlite3_column_int64(s, 2);
			const char *name = (const char *)sqlite3_column_text(s, 5);
			int linked = sqlite3_column_type(s, 6) != SQLITE_NULL;
			ev[nev++] = (struct sw_ev){ .rank = r.rank[i], .device = sqlite3_column_int(s, 1),
						    .row = row_of(sw_steps_of(&r, i), r.first[i + 1] - r.first[i],
								  linked ? sqlite3_column_int64(s, 6) : 0, linked),
						    .compute = db_kernel_class(name ? name : "", sqlite3_column_int(s, 4)) ==
							       DB_KCLASS_COMPUTE,
						    .start = start, .end = i64_add_sat(start, sqlite3_column_int64(s, 3)) };
		}
		rc = db_finish(db, s, src, rc);
	}
	if (!rc && nev > 1)
		qsort(ev, (size_t)nev, sizeof *ev, cmp_sw_ev);
	int cap = 0;
	for (int i = 0, k = 0; !rc && i < r.n; i++) {
		int j = k;
		while (j < nev && ev[j].rank == r.rank[i])
			j++;
		rc = sw_close_rank(sw_steps_of(&r, i), r.first[i + 1] - r.first[i], r.rank[i], ev ? &ev[k] : NULL, j - k, f, out, n,
				   &cap);
		k = j;
	}
	free(ev);
	sw_ranks_free(&r);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* --steps for device work: the device events launched in the selected steps */

int db_is_device_event(const struct db_device_lane *lanes, int nlanes, const struct db_event *e)
{
	return (e->kind == DB_KIND_KERNEL || e->kind == DB_KIND_MEMCPY || e->kind == DB_KIND_MEMSET ||
		e->kind == DB_KIND_COMM) && db_device_lane_find(lanes, nlanes, e->rank, e->tid) >= 0;
}

int db_each_device_event_launched(struct db *db, struct db_filter f, db_event_cb cb, void *ud)
{
	if (!db_has_table(db, "device_lane"))
		return 0;
	int has_flow = db_has_table(db, "flow");
	struct window *w;
	int nw, rc = db_filter_windows(db, f, &w, &nw);
	if (rc)
		return rc;
	/* every window of one rank (a step filter gives each its rank): the rank as an equality, so
	 * SQLite reads that rank's events only; "(?1 < 0 OR e.rank = ?1)" read every rank's device
	 * events for each window (O(ranks × events): 1.5 s of `report --steps` at 64 ranks) */
	int one_rank = 1;
	for (int i = 0; i < nw; i++)
		one_rank &= w[i].rank >= 0;
	char *sql = sqlite3_mprintf(
		"SELECT * FROM (SELECT e.rank, e.start_ns, e.tid, e.kind, e.name_id, e.dur_ns, coalesce(e.step, -1),"
		" coalesce(e.mb, -1), coalesce(e.layer, -1), e.bytes, e.flops, coalesce(e.peer, -1), coalesce(e.comm_id, -1),"
		" coalesce(e.seq, -1), e.stack_id, e.site_id, %s AS t FROM event e JOIN device_lane dl ON dl.rank = e.rank AND"
		" dl.tid = e.tid WHERE e.kind IN (" DB_SQL_KINDS_DEVICE_EVENT ") AND %s)"
		" WHERE t >= ?2 AND t < ?3 ORDER BY rank, start_ns, dur_ns DESC, tid, kind, name_id",
		has_flow ? DB_SQL_STEP_TIME_OF_DEVICE_E : "e.start_ns", one_rank ? "e.rank = ?1" : "(?1 < 0 OR e.rank = ?1)");
	if (!sql) {
		free(w);
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
	}
	sqlite3_stmt *s = NULL;
	rc = db_prep(db, sql, &s);
	sqlite3_free(sql);
	for (int i = 0; !rc && i < nw; i++) {
		sqlite3_reset(s);
		db_bind_i64(db, s, 1, w[i].rank);
		db_bind_i64(db, s, 2, w[i].lo);
		db_bind_i64(db, s, 3, w[i].hi);
		int src;
		while ((src = db_step(db, s)) == SQLITE_ROW) {
			struct db_event e;
			db_event_from_row(s, &e);
			if ((rc = cb(ud, &e)) != 0)
				break;
		}
		if (!rc)
			rc = db_step_check(db, src, s, NULL);
	}
	sqlite3_finalize(s);
	free(w);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* the step of each event, for summaries that keep one per event (the viewer's) */

struct dev_t {
	int rank, tid;
	int64_t start, t;   /* t: the time that selects it (launch, or start on a rank without links); INT64_MIN none */
};

struct db_stepmap {
	struct sw_step *st;   /* every rank's steps, by rank then start */
	int *srank;           /* the rank of st[i] */
	int nst;
	struct dev_t *dev;    /* the device events of ranks with device lanes, by (rank, tid, start) */
	size_t ndev;
	struct db_device_lane *lanes;
	int nlanes;
};

void db_stepmap_free(struct db_stepmap *m)
{
	if (!m)
		return;
	free(m->st);
	free(m->srank);
	free(m->dev);
	free(m->lanes);
	free(m);
}

static int cmp_dev_t(const void *a, const void *b)
{
	const struct dev_t *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

int db_stepmap_new(struct db *db, struct db_stepmap **out)
{
	*out = NULL;
	struct db_stepmap *m = calloc(1, sizeof *m);
	if (!m)
		return ascent_error(ASCENT_ENOMEM, "out of memory reading steps");
	int rc = db_device_lanes(db, &m->lanes, &m->nlanes);
	sqlite3_stmt *s = NULL;
	int src = SQLITE_DONE;
	/* the steps of the ranks whose events carry no step number (imported traces: the first event
	 * with one ends the search on a rank of ascent's own), and of the ranks with device lanes */
	char *q = rc ? NULL
		     : sqlite3_mprintf("SELECT rank, step, start_ns, dur_ns FROM event s WHERE kind = " DB_SQL_KIND_STEP " AND"
				       " s.rank IN (SELECT r.rank FROM (SELECT DISTINCT rank FROM event WHERE kind = "
				       DB_SQL_KIND_STEP ") r WHERE %s NOT EXISTS (SELECT 1 FROM event e WHERE e.rank = r.rank AND"
				       " e.kind != " DB_SQL_KIND_STEP " AND e.step IS NOT NULL)) ORDER BY rank, start_ns, step",
				       m->nlanes ? "r.rank IN (SELECT rank FROM device_lane) OR" : "");
	if (!rc && !q)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading steps");
	if (!rc)
		rc = db_prep(db, q, &s);
	sqlite3_free(q);
	int cap = 0, cap2 = 0;
	while (!rc && s && (src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(m->st, m->nst, cap, 64, "reading steps")) != 0 ||
		    (rc = ARRAY_GROW(m->srank, m->nst, cap2, 64, "reading steps")) != 0)
			break;
		int64_t s0 = sqlite3_column_int64(s, 2);
		m->srank[m->nst] = sqlite3_column_int(s, 0);
		m->st[m->nst++] = (struct sw_step){ sqlite3_column_int64(s, 1), s0, i64_add_sat(s0, sqlite3_column_int64(s, 3)) };
	}
	if (s)
		rc = db_finish(db, s, src, rc);
	s = NULL;
	char *sql = NULL;
	if (!rc && m->nst && m->nlanes && !(sql = sqlite3_mprintf("SELECT e.rank, e.tid, e.start_ns, %s FROM event e JOIN device_lane dl ON"
						      " dl.rank = e.rank AND dl.tid = e.tid WHERE e.kind IN ("
						      DB_SQL_KINDS_DEVICE_EVENT ")",
						      db_has_table(db, "flow") ? DB_SQL_STEP_TIME_OF_DEVICE_E : "e.start_ns")))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading steps");
	if (sql) {
		rc = db_prep(db, sql, &s);
		sqlite3_free(sql);
		size_t capd = 0;
		while (!rc && (src = db_step(db, s)) == SQLITE_ROW) {
			if (m->ndev == capd) {
				size_t nc = capd ? capd * 2 : 4096;
				struct dev_t *d = realloc(m->dev, nc * sizeof *d);
				if (!d) {
					rc = ascent_error(ASCENT_ENOMEM, "out of memory reading steps");
					break;
				}
				m->dev = d;
				capd = nc;
			}
			m->dev[m->ndev++] = (struct dev_t){ sqlite3_column_int(s, 0), sqlite3_column_int(s, 1),
							    sqlite3_column_int64(s, 2), sqlite3_column_type(s, 3) == SQLITE_NULL
							    ? INT64_MIN : sqlite3_column_int64(s, 3) };
		}
		if (s)
			rc = db_finish(db, s, src, rc);
		if (!rc && m->ndev > 1)
			qsort(m->dev, m->ndev, sizeof *m->dev, cmp_dev_t);
	}
	if (rc) {
		db_stepmap_free(m);
		return rc;
	}
	*out = m;
	return 0;
}

/* The step of rank whose window holds t, −1 none. */
static int64_t window_step(const struct db_stepmap *m, int rank, int64_t t)
{
	int lo = 0, hi = m->nst;   /* the first of the rank's steps */
	while (lo < hi) {
		int mid = (lo + hi) / 2;
		if (m->srank[mid] < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	int a = lo;
	hi = m->nst;
	while (lo < hi) {   /* one past the rank's last */
		int mid = (lo + hi) / 2;
		if (m->srank[mid] <= rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (a == lo)
		return -1;
	int r = row_of(m->st ? &m->st[a] : NULL, lo - a, t, 1);
	return r % 2 == 1 ? m->st[a + r / 2].step : -1;
}

int64_t db_stepmap_step(const struct db_stepmap *m, const struct db_event *e)
{
	if (e->step >= 0 || !m->nst)
		return e->step;
	if (!db_is_device_event(m->lanes, m->nlanes, e))   /* the window its start is in (ranks loaded only) */
		return window_step(m, e->rank, e->start_ns);
	struct dev_t key = { e->rank, e->tid, e->start_ns, 0 };
	const struct dev_t *d = bsearch(&key, m->dev, m->ndev, sizeof *m->dev, cmp_dev_t);
	return d && d->t != INT64_MIN ? window_step(m, e->rank, d->t) : -1;
}
