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

/* Sort [start,end) pairs clipped to [s0,s1) and merge them in place; returns the pair count. */
static int merge_union(int64_t *iv, int n, int64_t s0, int64_t s1)
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

static int64_t total_len(const int64_t *iv, int n)
{
	int64_t t = 0;
	for (int i = 0; i < n; i++)
		t += iv[2 * i + 1] - iv[2 * i];
	return t;
}

static int64_t inter_len(const int64_t *a, int na, const int64_t *b, int nb)
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
	int na = merge_union(a, nop, s0, s1), nb = merge_union(b, ncm, s0, s1), nc = merge_union(c, nrv, s0, s1);
	int nd = merge_union(d, nbl, s0, s1);
	out->computing_ns = total_len(a, na);
	out->comm_ns = total_len(b, nb);
	/* exposed: time a thread was blocked on communication with no operator running */
	out->comm_not_overlapped_ns = total_len(d, nd) - inter_len(a, na, d, nd);
	if (out->comm_not_overlapped_ns > out->comm_ns)
		out->comm_not_overlapped_ns = out->comm_ns;
	out->overlapped_ns = out->comm_ns - out->comm_not_overlapped_ns;
	out->free_ns = out->total_ns - (out->computing_ns + out->comm_ns - inter_len(a, na, b, nb));
	out->bubble_ns = total_len(c, nc);
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

/* Receives (pipeline bubble) are p2p events whose name contains "recv", any case. */
static int is_recv_name(const char *s)
{
	return strcasestr(s, "recv") != NULL;
}

int db_compute_step_stats(struct db *db, struct db_filter f, struct db_step_stat **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	/* which name ids are receives */
	char **names = NULL;
	int64_t nn = 0;
	int rc = db_strings(db, &names, &nn);
	if (rc)
		return rc;
	unsigned char *isrecv = calloc((size_t)nn + 1, 1);
	if (!isrecv) {
		db_strings_free(names, nn);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int64_t i = 1; i < nn; i++)
		isrecv[i] = is_recv_name(names[i]);
	db_strings_free(names, nn);

	sqlite3_stmt *steps = NULL, *q = NULL;
	const char *sql_steps = "SELECT rank, step, start_ns, dur_ns FROM event WHERE kind = " DB_SQL_KIND_STEP
				" AND (?1 < 0 OR rank = ?1) AND (?2 < 0 OR step BETWEEN ?2 AND ?3)"
				" ORDER BY step, rank, start_ns";
	/* lane: a collective recorded on a communicator's lane (a thread row no OS thread owns, named
	 * "comm ..."), which blocks no thread by itself: the waits say when one was blocked */
	const char *sql_q = "SELECT start_ns, dur_ns, kind, name_id, kind = " DB_SQL_KIND_COMM
			    " AND EXISTS(SELECT 1 FROM thread t WHERE t.rank = event.rank AND t.tid = event.tid AND t.os_tid = 0"
			    " AND t.name LIKE 'comm %'), tid"
			    " FROM event WHERE rank = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND kind IN (" DB_SQL_KIND_OP ", "
			    DB_SQL_KIND_COMM ", " DB_SQL_KIND_P2P ", " DB_SQL_KIND_WAIT ", " DB_SQL_KIND_KERNEL ", " DB_SQL_KIND_MEMCPY ", "
			    DB_SQL_KIND_MEMSET ")";
	/* A rank with device lanes (an imported GPU trace) is split on its devices: computing = kernels,
	 * copies and memsets, communication = collectives on device lanes; its CPU operators and the
	 * host side of its collectives are not device time. */
	struct db_device_lane *lanes = NULL;
	int nlanes = 0;
	if ((rc = db_device_lanes(db, &lanes, &nlanes)) != 0) {
		free(isrecv);
		return rc;
	}
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
	rc = 0;
	int src;
	while ((src = db_step(db, steps)) == SQLITE_ROW) {
		if (*nout == cap) {
			cap = cap ? cap * 2 : 64;
			struct db_step_stat *n2 = realloc(*out, (size_t)cap * sizeof **out);
			if (!n2) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			*out = n2;
		}
		int rank = sqlite3_column_int(steps, 0);
		int64_t step = sqlite3_column_int64(steps, 1);
		int64_t s0 = sqlite3_column_int64(steps, 2), d = sqlite3_column_int64(steps, 3);
		op.n = cm.n = bl.n = rv.n = 0;
		sqlite3_reset(q);
		db_bind_i64(db, q, 1, rank);
		db_bind_i64(db, q, 2, s0);
		db_bind_i64(db, q, 3, s0 + d);
		int qrc;
		int64_t s1 = s0 + d;
		int on_device = 0;   /* does this rank have device lanes? */
		for (int i = 0; i < nlanes && !on_device; i++)
			on_device = lanes[i].rank == rank;
		while ((qrc = db_step(db, q)) == SQLITE_ROW) {
			int64_t st = sqlite3_column_int64(q, 0), du = sqlite3_column_int64(q, 1);
			int kind = sqlite3_column_int(q, 2);
			int64_t nid = sqlite3_column_int64(q, 3);
			int tid = sqlite3_column_int(q, 5);
			int64_t en = st + du > s1 ? s1 : st + du;
			int lane = sqlite3_column_int(q, 4);
			if (on_device && (kind == DB_KIND_OP ||
					  db_device_lane_find(lanes, nlanes, rank, tid) < 0))
				continue;
			if (kind == DB_KIND_OP || ((1u << kind) & DB_KINDS_DEVICE_WORK))
				rc = ivec_push2(&op, st, en);
			else {
				rc = ivec_push2(&cm, st, en);
				if (!rc && !lane)   /* the recording thread was blocked (or posted and went on) */
					rc = ivec_push2(&bl, st, en);
				if (!rc && kind == DB_KIND_P2P && nid > 0 && nid < nn && isrecv[nid])
					rc = ivec_push2(&rv, st, en);
			}
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
		struct db_step_stat *o = &(*out)[(*nout)++];
		memset(o, 0, sizeof *o);
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
	free(isrecv);
	free(lanes);
	if (rc) {
		free(*out);
		*out = NULL;
		*nout = 0;
	}
	return rc;
}
