/* db/steps.c — msprof's step decomposition from interval sets (docs/background.md): computing,
 * communication, overlapped, communication not overlapped, free, bubble, preparing. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

static int cmp_iv(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

int db_iv_union(int64_t *iv, int n, int64_t s0, int64_t s1)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		int64_t a = iv[2 * i] < s0 ? s0 : iv[2 * i], b = iv[2 * i + 1] > s1 ? s1 : iv[2 * i + 1];
		if (b > a) {
			iv[2 * m] = a;
			iv[2 * m + 1] = b;
			m++;
		}
	}
	int sorted = 1;   /* events arrive in start order: skip the sort then */
	for (int i = 1; i < m && sorted; i++)
		sorted = cmp_iv(&iv[2 * (i - 1)], &iv[2 * i]) <= 0;
	if (m > 1 && !sorted)
		qsort(iv, (size_t)m, 2 * sizeof(int64_t), cmp_iv);
	int k = 0;
	for (int i = 0; i < m; i++) {
		if (k && iv[2 * i] <= iv[2 * (k - 1) + 1]) {
			if (iv[2 * i + 1] > iv[2 * (k - 1) + 1])
				iv[2 * (k - 1) + 1] = iv[2 * i + 1];
		} else {
			iv[2 * k] = iv[2 * i];
			iv[2 * k + 1] = iv[2 * i + 1];
			k++;
		}
	}
	return k;
}

int64_t db_iv_len(const int64_t *iv, int n)
{
	int64_t t = 0;
	for (int i = 0; i < n; i++)
		t += iv[2 * i + 1] - iv[2 * i];
	return t;
}

int64_t db_iv_inter(const int64_t *a, int na, const int64_t *b, int nb)
{
	int64_t t = 0;
	int i = 0, j = 0;
	while (i < na && j < nb) {
		int64_t lo = a[2 * i] > b[2 * j] ? a[2 * i] : b[2 * j];
		int64_t hi = a[2 * i + 1] < b[2 * j + 1] ? a[2 * i + 1] : b[2 * j + 1];
		if (hi > lo)
			t += hi - lo;
		if (a[2 * i + 1] < b[2 * j + 1])
			i++;
		else
			j++;
	}
	return t;
}

void db_step_decompose(int64_t s0, int64_t s1, const int64_t *op, int nop, const int64_t *cm, int ncm,
		       const int64_t *bl, int nbl, const int64_t *rv, int nrv, struct db_step_stat *out)
{
	/* work on copies: the caller's arrays stay as given */
	size_t need = (size_t)(nop + ncm + nbl + nrv) * 2;
	int64_t *buf = malloc((need + 1) * sizeof *buf);   /* never NULL + 0 below (UB) for a step without intervals */
	out->total_ns = s1 > s0 ? s1 - s0 : 0;
	if (!buf) {
		out->free_ns = out->total_ns;
		out->preparing_ns = out->total_ns;
		return;
	}
	int64_t *a = buf, *b = buf + 2 * nop, *d = buf + 2 * (nop + ncm), *c = buf + 2 * (nop + ncm + nbl);
	if (nop)
		memcpy(a, op, (size_t)nop * 2 * sizeof *a);
	if (ncm)
		memcpy(b, cm, (size_t)ncm * 2 * sizeof *b);
	if (nbl)
		memcpy(d, bl, (size_t)nbl * 2 * sizeof *d);
	if (nrv)
		memcpy(c, rv, (size_t)nrv * 2 * sizeof *c);
	int na = db_iv_union(a, nop, s0, s1), nb = db_iv_union(b, ncm, s0, s1), nc = db_iv_union(c, nrv, s0, s1);
	int nd = db_iv_union(d, nbl, s0, s1);
	out->computing_ns = db_iv_len(a, na);
	out->comm_ns = db_iv_len(b, nb);
	/* exposed: time a thread was blocked on communication with no operator running */
	out->comm_not_overlapped_ns = db_iv_len(d, nd) - db_iv_inter(a, na, d, nd);
	if (out->comm_not_overlapped_ns > out->comm_ns)
		out->comm_not_overlapped_ns = out->comm_ns;
	out->overlapped_ns = out->comm_ns - out->comm_not_overlapped_ns;
	out->free_ns = out->total_ns - (out->computing_ns + out->comm_ns - db_iv_inter(a, na, b, nb));
	out->bubble_ns = db_iv_len(c, nc);
	int64_t first = s1;
	if (na && a[0] < first)
		first = a[0];
	if (nb && b[0] < first)
		first = b[0];
	out->preparing_ns = first - s0;
	free(buf);
}

/* ---------------------------------------------------------------------------------------- */
/* the decomposition of every (rank, step) from the events */

struct ivec {
	int64_t *v;
	int n, cap;
};

static int ivec_push2(struct ivec *a, int64_t x, int64_t y)
{
	if (a->n + 2 > a->cap) {
		int nc = a->cap ? a->cap * 2 : 256;
		int64_t *nv = realloc(a->v, (size_t)nc * sizeof *nv);
		if (!nv)
			return ascent_error(ASCENT_ENOMEM, "out of memory computing step statistics");
		a->v = nv;
		a->cap = nc;
	}
	a->v[a->n++] = x;
	a->v[a->n++] = y;
	return 0;
}

/* What a step's split needs besides the events: which names are receives (pipeline bubble: p2p
 * events whose name contains "recv", any case), the device lanes (a rank with device lanes, an
 * imported GPU trace, is split on its devices: computing = kernels, copies and memsets,
 * communication = collectives on device lanes; its CPU operators and the host side of its
 * collectives are not device time), and the communicator lanes (a collective recorded on a
 * communicator's lane, a thread row no OS thread owns named "comm ...", blocks no thread by
 * itself: the waits say when one was blocked). */
struct stepctx {
	unsigned char *isrecv;
	int64_t nn;
	struct db_device_lane *lanes;
	int nlanes;
	int64_t *commlanes;   /* rank << 32 | tid, ascending */
	int ncommlanes;
};

static void stepctx_free(struct stepctx *c)
{
	free(c->isrecv);
	free(c->lanes);
	free(c->commlanes);
	memset(c, 0, sizeof *c);
}

static int stepctx_load(struct db *db, struct stepctx *c)
{
	memset(c, 0, sizeof *c);
	char **names = NULL;
	int rc = db_strings(db, &names, &c->nn);
	if (rc)
		return rc;
	c->isrecv = calloc((size_t)c->nn + 1, 1);
	for (int64_t i = 1; c->isrecv && i < c->nn; i++)
		c->isrecv[i] = strcasestr(names[i], "recv") != NULL;
	db_strings_free(names, c->nn);
	if (!c->isrecv)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	if ((rc = db_device_lanes(db, &c->lanes, &c->nlanes)) != 0)
		return rc;
	sqlite3_stmt *s = NULL;
	if ((rc = db_prep(db, "SELECT rank, tid FROM thread WHERE os_tid = 0 AND name LIKE 'comm %' ORDER BY rank, tid",
			  &s)) != 0)
		return rc;
	int src, cap = 0;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if (c->ncommlanes == cap) {
			cap = cap ? cap * 2 : 16;
			int64_t *v2 = realloc(c->commlanes, (size_t)cap * sizeof *v2);
			if (!v2) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			c->commlanes = v2;
		}
		c->commlanes[c->ncommlanes++] = (int64_t)sqlite3_column_int(s, 0) << 32 | (uint32_t)sqlite3_column_int(s, 1);
	}
	return db_finish(db, s, src, rc);
}

static int rank_on_device(const struct stepctx *c, int rank)
{
	for (int i = 0; i < c->nlanes; i++)
		if (c->lanes[i].rank == rank)
			return 1;
	return 0;
}

static int is_comm_lane(const struct stepctx *c, int rank, int tid)
{
	int64_t k = (int64_t)rank << 32 | (uint32_t)tid;
	int lo = 0, hi = c->ncommlanes - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (c->commlanes[mid] == k)
			return 1;
		if (c->commlanes[mid] < k)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return 0;
}

/* The interval sets an event of a step adds to (SET_* bits; 0: none). */
enum { SET_OP = 1, SET_COMM = 2, SET_BLOCKED = 4, SET_RECV = 8 };
static unsigned step_sets(const struct stepctx *c, int on_device, int rank, int tid, int kind, int64_t nid)
{
	if (kind < 0 || kind >= 32)
		return 0;
	if (kind != DB_KIND_OP && kind != DB_KIND_COMM && kind != DB_KIND_P2P && kind != DB_KIND_WAIT &&
	    !((1u << kind) & DB_KINDS_DEVICE_WORK))
		return 0;
	if (on_device && (kind == DB_KIND_OP || db_device_lane_find(c->lanes, c->nlanes, rank, tid) < 0))
		return 0;
	if (kind == DB_KIND_OP || ((1u << kind) & DB_KINDS_DEVICE_WORK))
		return SET_OP;
	unsigned m = SET_COMM;
	if (!(kind == DB_KIND_COMM && is_comm_lane(c, rank, tid)))   /* the recording thread was blocked */
		m |= SET_BLOCKED;
	if (kind == DB_KIND_P2P && nid > 0 && nid < c->nn && c->isrecv[nid])
		m |= SET_RECV;
	return m;
}

static int step_stat_push(struct db_step_stat **out, int *n, int *cap, struct db_step_stat **o)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		struct db_step_stat *n2 = realloc(*out, (size_t)nc * sizeof **out);
		if (!n2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		*out = n2;
		*cap = nc;
	}
	*o = &(*out)[(*n)++];
	memset(*o, 0, sizeof **o);
	return 0;
}

int db_compute_step_stats(struct db *db, struct db_filter f, struct db_step_stat **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	struct stepctx c;
	sqlite3_stmt *steps = NULL, *q = NULL;
	const char *sql_steps = "SELECT rank, step, start_ns, dur_ns FROM event WHERE kind = " DB_SQL_KIND_STEP
				" AND (?1 < 0 OR rank = ?1) AND (?2 < 0 OR step BETWEEN ?2 AND ?3)"
				" ORDER BY step, rank, start_ns";
	const char *sql_q = "SELECT start_ns, dur_ns, kind, name_id, tid"
			    " FROM event WHERE rank = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND kind IN (" DB_SQL_KIND_OP ", "
			    DB_SQL_KIND_COMM ", " DB_SQL_KIND_P2P ", " DB_SQL_KIND_WAIT ", " DB_SQL_KIND_KERNEL ", " DB_SQL_KIND_MEMCPY ", "
			    DB_SQL_KIND_MEMSET ")";
	int rc = stepctx_load(db, &c);
	if (!rc)
		rc = db_prep(db, sql_steps, &steps);
	if (!rc)
		rc = db_prep(db, sql_q, &q);
	if (rc)
		goto done;
	db_bind_i64(db, steps, 1, f.rank);
	db_bind_i64(db, steps, 2, f.step_lo);
	db_bind_i64(db, steps, 3, f.step_hi);
	struct ivec op = { 0 }, cm = { 0 }, bl = { 0 }, rv = { 0 };
	int cap = 0;
	int src;
	while ((src = db_step(db, steps)) == SQLITE_ROW) {
		int rank = sqlite3_column_int(steps, 0);
		int64_t step = sqlite3_column_int64(steps, 1);
		int64_t s0 = sqlite3_column_int64(steps, 2), d = sqlite3_column_int64(steps, 3);
		op.n = cm.n = bl.n = rv.n = 0;
		sqlite3_reset(q);
		db_bind_i64(db, q, 1, rank);
		db_bind_i64(db, q, 2, s0);
		int64_t s1 = i64_add_sat(s0, d);   /* a damaged file's sum must not overflow */
		db_bind_i64(db, q, 3, s1);
		int qrc;
		int on_device = rank_on_device(&c, rank);
		while ((qrc = db_step(db, q)) == SQLITE_ROW) {
			int64_t st = sqlite3_column_int64(q, 0), du = sqlite3_column_int64(q, 1);
			int64_t en = i64_add_sat(st, du);
			en = en > s1 ? s1 : en;
			unsigned m = step_sets(&c, on_device, rank, sqlite3_column_int(q, 4), sqlite3_column_int(q, 2),
					       sqlite3_column_int64(q, 3));
			if (m & SET_OP)
				rc = ivec_push2(&op, st, en);
			if (!rc && (m & SET_COMM))
				rc = ivec_push2(&cm, st, en);
			if (!rc && (m & SET_BLOCKED))
				rc = ivec_push2(&bl, st, en);
			if (!rc && (m & SET_RECV))
				rc = ivec_push2(&rv, st, en);
			if (rc)
				break;
		}
		sqlite3_reset(q);
		if (rc)
			break;
		if (qrc != SQLITE_DONE) {
			rc = db_sql_err(db, qrc, "cannot read events of", NULL);
			break;
		}
		struct db_step_stat *o = NULL;
		if ((rc = step_stat_push(out, nout, &cap, &o)) != 0)
			break;
		o->rank = rank;
		o->step = step;
		o->start_ns = s0;
		db_step_decompose(s0, s1, op.v, op.n / 2, cm.v, cm.n / 2, bl.v, bl.n / 2, rv.v, rv.n / 2, o);
	}
	if (!rc && src != SQLITE_DONE)
		rc = db_sql_err(db, src, "cannot read steps of", NULL);
	free(op.v);
	free(cm.v);
	free(bl.v);
	free(rv.v);
done:
	sqlite3_finalize(steps);
	sqlite3_finalize(q);
	stepctx_free(&c);
	if (rc) {
		free(*out);
		*out = NULL;
		*nout = 0;
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* the same split in one pass over the events (db_finalize) */

/* A step still open: its four interval sets, merged as the events come (they come in start order,
 * so a new interval either extends the last one or starts after it). */
struct openstep {
	int64_t step, s0, s1;
	int64_t tid, name_id;        /* the step event's (orders results tied on step, rank, start) */
	struct ivec set[4];          /* op, comm, blocked, recv */
};

/* The event of the current start_ns that a step starting at that ns may have missed (it came
 * before the step in the group of events that start together). */
struct grpev {
	int64_t start, dur, nid;
	int tid, kind;
};

/* A result and what orders results that db_compute_step_stats' query leaves tied on (step, rank,
 * start_ns): the step event's key, as its scan meets them. */
struct result {
	struct db_step_stat s;
	int64_t tid, name_id, dur_ns;
};

struct db_stepacc {
	struct stepctx c;
	int rank, on_device;
	struct openstep *open;
	int nopen, capopen;
	struct grpev *grp;          /* events of the current start_ns */
	int ngrp, capgrp;
	int64_t grp_start;
	struct result *out;
	int nout, capout;
};

static int ivec_add_merged(struct ivec *a, int64_t st, int64_t en)
{
	if (en <= st)
		return 0;
	if (a->n && st <= a->v[a->n - 1]) {
		if (en > a->v[a->n - 1])
			a->v[a->n - 1] = en;
		return 0;
	}
	return ivec_push2(a, st, en);
}

void db_stepacc_free(struct db_stepacc *a)
{
	if (!a)
		return;
	stepctx_free(&a->c);
	for (int i = 0; i < a->capopen; i++)
		for (int k = 0; k < 4; k++)
			free(a->open[i].set[k].v);
	free(a->open);
	free(a->grp);
	free(a->out);
	free(a);
}

int db_stepacc_new(struct db *db, struct db_stepacc **out)
{
	*out = NULL;
	struct db_stepacc *a = calloc(1, sizeof *a);
	if (!a)
		return ascent_error(ASCENT_ENOMEM, "out of memory computing step statistics");
	a->rank = INT32_MIN;
	int rc = stepctx_load(db, &a->c);
	if (rc) {
		db_stepacc_free(a);
		return rc;
	}
	*out = a;
	return 0;
}

static int add_to(struct db_stepacc *a, struct openstep *o, int64_t st, int64_t du, int tid, int kind, int64_t nid)
{
	unsigned m = step_sets(&a->c, a->on_device, a->rank, tid, kind, nid);
	if (!m)
		return 0;
	int64_t en = i64_add_sat(st, du);
	en = en > o->s1 ? o->s1 : en;
	int rc = 0;
	for (int k = 0; !rc && k < 4; k++)
		if (m & (1u << k))
			rc = ivec_add_merged(&o->set[k], st, en);
	return rc;
}

/* Close open step i: its split into the results. */
static int close_step(struct db_stepacc *a, int i)
{
	struct openstep *o = &a->open[i];
	int rc = ARRAY_GROW(a->out, a->nout, a->capout, 64, "computing step statistics");
	if (rc)
		return rc;
	struct result *r = &a->out[a->nout++];
	memset(r, 0, sizeof *r);
	r->s.rank = a->rank;
	r->s.step = o->step;
	r->s.start_ns = o->s0;
	r->tid = o->tid;
	r->name_id = o->name_id;
	r->dur_ns = o->s1 - o->s0;
	const struct ivec *v = o->set;
	db_step_decompose(o->s0, o->s1, v[0].v, v[0].n / 2, v[1].v, v[1].n / 2, v[2].v, v[2].n / 2, v[3].v, v[3].n / 2,
			  &r->s);
	/* keep the slot's buffers: swap it with the last open step */
	struct openstep t = *o;
	*o = a->open[a->nopen - 1];
	a->open[--a->nopen] = t;
	return 0;
}

int db_stepacc_event(struct db_stepacc *a, const struct db_event *e)
{
	int rc = 0;
	if (e->rank != a->rank) {
		while (!rc && a->nopen)
			rc = close_step(a, 0);
		a->rank = e->rank;
		a->on_device = rank_on_device(&a->c, e->rank);
		a->ngrp = 0;
	}
	if (a->ngrp && e->start_ns != a->grp_start)
		a->ngrp = 0;
	a->grp_start = e->start_ns;
	for (int i = 0; !rc && i < a->nopen;)   /* steps this event starts after */
		if (e->start_ns >= a->open[i].s1)
			rc = close_step(a, i);
		else
			i++;
	if (rc)
		return rc;
	if (e->kind == DB_KIND_STEP) {
		rc = ARRAY_GROW(a->open, a->nopen, a->capopen, 4, "computing step statistics");
		if (rc)
			return rc;
		struct openstep *o = &a->open[a->nopen];
		o->step = e->step;
		o->s0 = e->start_ns;
		o->s1 = i64_add_sat(e->start_ns, e->dur_ns);
		o->tid = e->tid;
		o->name_id = e->name_id;
		for (int k = 0; k < 4; k++)
			o->set[k].n = 0;
		if (o->s1 <= o->s0) {   /* an empty step: nothing starts inside it */
			a->nopen++;
			return close_step(a, a->nopen - 1);
		}
		a->nopen++;
		for (int g = 0; !rc && g < a->ngrp; g++)
			rc = add_to(a, o, a->grp[g].start, a->grp[g].dur, a->grp[g].tid, a->grp[g].kind, a->grp[g].nid);
		return rc;
	}
	if (!step_sets(&a->c, a->on_device, a->rank, e->tid, e->kind, e->name_id))
		return 0;
	rc = ARRAY_GROW(a->grp, a->ngrp, a->capgrp, 16, "computing step statistics");
	if (rc)
		return rc;
	a->grp[a->ngrp++] = (struct grpev){ e->start_ns, e->dur_ns, e->name_id, e->tid, e->kind };
	for (int i = 0; !rc && i < a->nopen; i++)
		rc = add_to(a, &a->open[i], e->start_ns, e->dur_ns, e->tid, e->kind, e->name_id);
	return rc;
}

static int cmp_result(const void *x, const void *y)
{
	const struct result *a = x, *b = y;
	int64_t ka[6] = { a->s.step, a->s.rank, a->s.start_ns, a->tid, a->name_id, a->dur_ns };
	int64_t kb[6] = { b->s.step, b->s.rank, b->s.start_ns, b->tid, b->name_id, b->dur_ns };
	for (int i = 0; i < 6; i++)
		if (ka[i] != kb[i])
			return ka[i] < kb[i] ? -1 : 1;
	return 0;
}

int db_stepacc_finish(struct db_stepacc *a, struct db_step_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	int rc = 0;
	while (!rc && a->nopen)
		rc = close_step(a, 0);
	if (rc)
		return rc;
	if (a->nout > 1)
		qsort(a->out, (size_t)a->nout, sizeof *a->out, cmp_result);
	struct db_step_stat *r = malloc((size_t)(a->nout + 1) * sizeof *r);
	if (!r)
		return ascent_error(ASCENT_ENOMEM, "out of memory computing step statistics");
	for (int i = 0; i < a->nout; i++)
		r[i] = a->out[i].s;
	*out = r;
	*n = a->nout;
	return 0;
}
