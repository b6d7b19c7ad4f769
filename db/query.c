/* db/query.c — the read queries every tool shares: strings, ranks, event/counter/memory streams
 * (with rank and step filters), per-collective statistics (per-operator ones: db/opstat.c), step decomposition,
 * memory peaks, overhead, notes, cross-rank matching of collectives, folded stacks. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

int db_strings(struct db *db, char ***names, int64_t *n)
{
	*names = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT coalesce(max(id), 0) FROM string", &s);
	if (rc)
		return rc;
	int64_t mx = 0;
	int src = db_step(db, s);
	if (src == SQLITE_ROW)
		mx = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	if (src != SQLITE_ROW)
		return db_sql_err(db, src, "cannot read strings of", NULL);
	if (mx < 0 || mx > 100000000)
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': string ids are damaged (max id %lld)", db->path,
				    (long long)mx);
	char **v = calloc((size_t)mx + 1, sizeof *v);
	if (!v)
		return ascent_error(ASCENT_ENOMEM, "out of memory reading strings");
	if ((rc = db_prep(db, "SELECT id, value FROM string", &s)) != 0) {
		free(v);
		return rc;
	}
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		const char *t = (const char *)sqlite3_column_text(s, 1);
		if (id >= 1 && id <= mx && !v[id])
			v[id] = strdup(t ? t : "");
	}
	rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	for (int64_t i = 0; i <= mx; i++)
		if (!v[i] && !(v[i] = strdup(i ? "?" : ""))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory reading strings");
			break;
		}
	if (rc) {
		db_strings_free(v, mx + 1);
		return rc;
	}
	*names = v;
	*n = mx + 1;
	return 0;
}

void db_strings_free(char **names, int64_t n)
{
	if (!names)
		return;
	for (int64_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

int db_ranks(struct db *db, struct db_rank_info **ranks, int *n)
{
	*ranks = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, host, pid, dp_rank, tp_rank, pp_rank, threads, t0_ns, t0_utc_ns,"
			  " clock_offset_ns, clock_err_ns, clock_offset_end_ns, clock_err_end_ns, end_ns"
			  " FROM rank ORDER BY rank", &s);
	if (rc)
		return rc;
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if (ARRAY_GROW(*ranks, *n, cap, 8, "reading ranks")) {
			sqlite3_finalize(s);
			db_ranks_free(*ranks, *n);
			*ranks = NULL;
			*n = 0;
			return ASCENT_ENOMEM;
		}
		struct db_rank_info *r = &(*ranks)[(*n)++];
		r->rank = sqlite3_column_int(s, 0);
		const char *h = (const char *)sqlite3_column_text(s, 1);
		r->host = strdup(h ? h : "");
		r->pid = sqlite3_column_int(s, 2);
		r->dp_rank = sqlite3_column_int(s, 3);
		r->tp_rank = sqlite3_column_int(s, 4);
		r->pp_rank = sqlite3_column_int(s, 5);
		r->threads = sqlite3_column_int(s, 6);
		r->t0_ns = sqlite3_column_int64(s, 7);
		r->t0_utc_ns = sqlite3_column_int64(s, 8);
		r->clock_offset_ns = sqlite3_column_int64(s, 9);
		r->clock_err_ns = sqlite3_column_int64(s, 10);
		r->clock_offset_end_ns = sqlite3_column_int64(s, 11);
		r->clock_err_end_ns = sqlite3_column_int64(s, 12);
		r->end_ns = sqlite3_column_int64(s, 13);
	}
	rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	return rc;
}

int db_rank_hosts(const struct db_rank_info *ranks, int n, int *host_of, const char **names)
{
	int nh = 0;
	for (int i = 0; i < n; i++) {
		host_of[i] = -1;
		if (!ranks[i].host || !*ranks[i].host)
			continue;
		int k = nh - 1;   /* hosts are few against ranks, and a job's ranks are packed by host: the last first */
		while (k >= 0 && strcmp(names[k], ranks[i].host))
			k--;
		if (k < 0) {
			k = nh++;
			names[k] = ranks[i].host;
		}
		host_of[i] = k;
	}
	return nh;
}

void db_ranks_free(struct db_rank_info *ranks, int n)
{
	if (!ranks)
		return;
	for (int i = 0; i < n; i++)
		free((char *)ranks[i].host);
	free(ranks);
}

struct counter_scan {
	db_counter_cb cb;
	void *ud;
};

static int counter_row(void *ud, sqlite3_stmt *s)
{
	struct counter_scan *v = ud;
	return v->cb(v->ud, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
		     sqlite3_column_double(s, 3));
}

int db_each_counter(struct db *db, struct db_filter f, db_counter_cb cb, void *ud)
{
	struct counter_scan v = { cb, ud };
	return db_scan_windows(db, f, "SELECT rank, name_id, ts_ns, value FROM counter WHERE (?1 < 0 OR rank = ?1)"
			       " AND ts_ns >= ?2 AND ts_ns < ?3 ORDER BY rank, name_id, ts_ns", counter_row, &v);
}

struct mem_scan {
	db_mem_cb cb;
	void *ud;
};

static int mem_row(void *ud, sqlite3_stmt *s)
{
	struct mem_scan *v = ud;
	struct db_mem_row m = { .rank = sqlite3_column_int(s, 0), .ts_ns = sqlite3_column_int64(s, 1),
				.bytes = sqlite3_column_int64(s, 2), .category = sqlite3_column_int(s, 3),
				.in_use = sqlite3_column_int64(s, 4), .device = sqlite3_column_int(s, 5) };
	return v->cb(v->ud, &m);
}

int db_each_mem(struct db *db, struct db_filter f, db_mem_cb cb, void *ud)
{
	struct mem_scan v = { cb, ud };
	const char *dev = db_mem_device_sql(db);
	char *sql = sqlite3_mprintf("SELECT rank, ts_ns, bytes, category, in_use, %s FROM mem_event WHERE (?1 < 0 OR"
				    " rank = ?1) AND ts_ns >= ?2 AND ts_ns < ?3 ORDER BY rank, %s, ts_ns, rowid", dev, dev);
	if (!sql)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int rc = db_scan_windows(db, f, sql, mem_row, &v);
	sqlite3_free(sql);
	return rc;
}

int db_each_thread(struct db *db, db_thread_cb cb, void *ud)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, tid, os_tid, name FROM thread ORDER BY rank, tid", &s);
	if (rc)
		return rc;
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		const char *nm = (const char *)sqlite3_column_text(s, 3);
		if ((rc = cb(ud, sqlite3_column_int(s, 0), sqlite3_column_int(s, 1), sqlite3_column_int64(s, 2),
			     nm ? nm : "")) != 0)
			break;
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	return rc;
}

int db_each_note(struct db *db, db_note_cb cb, void *ud)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, ts_ns, level, text FROM note ORDER BY rank, ts_ns, rowid", &s);
	if (rc)
		return rc;
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		const char *l = (const char *)sqlite3_column_text(s, 2), *t = (const char *)sqlite3_column_text(s, 3);
		if ((rc = cb(ud, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1), l ? l : "", t ? t : "")) != 0)
			break;
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* collectives */

double db_busbw_factor(const char *name, int n)
{
	if (n <= 1)
		return 1.0;
	char low[64];
	size_t i = 0;
	for (; name[i] && i < sizeof low - 1; i++)
		low[i] = (char)((name[i] >= 'A' && name[i] <= 'Z') ? name[i] + 32 : name[i]);
	low[i] = 0;
	/* drop separators so all_reduce, all-reduce, allreduce compare equal */
	char c[64];
	size_t k = 0;
	for (i = 0; low[i]; i++)
		if (low[i] != '_' && low[i] != '-' && low[i] != ' ')
			c[k++] = low[i];
	c[k] = 0;
	if (strstr(c, "allreduce"))
		return 2.0 * (n - 1) / n;
	if (strstr(c, "reducescatter") || strstr(c, "allgather") || strstr(c, "alltoall"))
		return (double)(n - 1) / n;
	return 1.0;
}

int db_p2p_side(const char *name)
{
	if (!name || !strcasestr(name, "recv"))
		return DB_P2P_SEND;
	return strncasecmp(name, "sendrecv", 8) == 0 ? DB_P2P_EXCHANGE : DB_P2P_RECV;
}

void db_p2p_key(int side, int64_t rank, int64_t peer, int64_t *k1, int64_t *k2)
{
	if (side == DB_P2P_EXCHANGE) {
		*k1 = rank < peer ? rank : peer;
		*k2 = rank < peer ? peer : rank;
	} else {
		*k1 = side == DB_P2P_RECV ? peer : rank;   /* sender */
		*k2 = side == DB_P2P_RECV ? rank : peer;   /* receiver */
	}
}

struct mrow {
	int rank, kind, tid;
	int64_t name_id, comm_id, seq, bytes, start, end, err, k1, k2;
};

static int cmp_mrow(const void *a, const void *b)
{
	const struct mrow *x = a, *y = b;
	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	return x->rank - y->rank;
}

int db_peermap_load(struct db *db, struct db_peermap *m)
{
	memset(m, 0, sizeof *m);
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT comm_id, rank_in_comm, rank FROM comm WHERE comm_id >= 0 AND rank_in_comm >= 0"
		      " AND rank_in_comm < 1048576 ORDER BY comm_id, rank_in_comm", &s);
	if (rc)
		return rc;
	int capk = 0, capw = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(m->key, m->n, capk, 64, "reading communicators")) ||
		    (rc = ARRAY_GROW(m->world, m->n, capw, 64, "reading communicators")))
			break;
		m->key[m->n] = sqlite3_column_int64(s, 0) << 20 | sqlite3_column_int64(s, 1);
		m->world[m->n++] = sqlite3_column_int(s, 2);
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	if (rc)
		db_peermap_free(m);
	return rc;
}

int db_peermap_world(const struct db_peermap *m, int64_t comm_id, int peer)
{
	if (!m || !m->n || comm_id < 0 || peer < 0 || peer >= 1048576)
		return peer;
	int64_t k = comm_id << 20 | peer;
	const int64_t *hit = bsearch(&k, m->key, (size_t)m->n, sizeof *m->key, stats_cmp_i64);
	return hit ? m->world[hit - m->key] : peer;
}

void db_peermap_free(struct db_peermap *m)
{
	if (!m)
		return;
	free(m->key);
	free(m->world);
	memset(m, 0, sizeof *m);
}

static int each_match(struct db *db, struct db_filter f, int kind, int singles, db_match_cb cb, void *ud)
{
	char **names = NULL;
	int64_t nn = 0;
	int rc = 0;
	struct db_peermap pm = { 0 };
	if (kind == DB_KIND_P2P && (rc = db_strings(db, &names, &nn)) != 0)
		return rc;
	if (kind == DB_KIND_P2P && (rc = db_peermap_load(db, &pm)) != 0) {
		db_strings_free(names, nn);
		return rc;
	}
	sqlite3_stmt *s = NULL;
	rc = db_prep(db, "SELECT e.rank, e.name_id, e.comm_id, e.seq, coalesce(e.bytes, 0), e.start_ns, e.dur_ns,"
		      " coalesce(r.t0_ns, 0) + coalesce(r.clock_offset_ns, 0) -"
		      " coalesce((SELECT t0_ns FROM rank WHERE rank = (SELECT min(rank) FROM rank)), 0),"
		      " coalesce(r.clock_err_ns, 0), coalesce(e.peer, -1), e.tid"
		      " FROM event e LEFT JOIN rank r ON r.rank = e.rank"
		      " WHERE e.comm_id IS NOT NULL AND e.seq IS NOT NULL AND e.kind = ?1", &s);
	if (rc) {
		db_strings_free(names, nn);
		db_peermap_free(&pm);
		return rc;
	}
	db_bind_int(db, s, 1, kind);
	struct mrow *v = NULL;
	int nv = 0, cap = 0;   /* rows of one kind: ARRAY_GROW refuses past INT32_MAX */
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(v, nv, cap, 256, "matching collectives")))
			break;
		struct mrow *m = &v[nv++];
		m->rank = sqlite3_column_int(s, 0);
		m->kind = kind;
		m->name_id = sqlite3_column_int64(s, 1);
		m->comm_id = sqlite3_column_int64(s, 2);
		m->seq = sqlite3_column_int64(s, 3);
		m->bytes = sqlite3_column_int64(s, 4);
		int64_t shift = sqlite3_column_int64(s, 7);
		m->start = sqlite3_column_int64(s, 5) + shift;
		m->end = m->start + sqlite3_column_int64(s, 6);
		m->err = sqlite3_column_int64(s, 8);
		int peer = sqlite3_column_int(s, 9);
		m->tid = sqlite3_column_int(s, 10);
		m->k1 = m->k2 = 0;
		if (kind == DB_KIND_P2P) {
			int side = m->name_id > 0 && m->name_id < nn ? db_p2p_side(names[m->name_id]) : DB_P2P_SEND;
			peer = db_peermap_world(&pm, m->comm_id, peer);   /* stored as the rank in the comm */
			db_p2p_key(side, m->rank, peer, &m->k1, &m->k2);
		}
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	db_strings_free(names, nn);
	db_peermap_free(&pm);
	if (rc) {
		free(v);
		return rc;
	}
	if (nv > 1)
		qsort(v, (size_t)nv, sizeof *v, cmp_mrow);
	for (int64_t i = 0; i < nv && !rc;) {
		int64_t j = i + 1;
		while (j < nv && v[j].comm_id == v[i].comm_id && v[j].seq == v[i].seq && v[j].k1 == v[i].k1 &&
		       v[j].k2 == v[i].k2)
			j++;
		if (j - i >= 2 || singles) {
			int64_t last = v[i].start, lerr = v[i].err;
			for (int64_t k = i; k < j; k++)
				if (v[k].start > last) {
					last = v[k].start;
					lerr = v[k].err;
				}
			for (int64_t k = i; k < j && !rc; k++) {
				if (f.rank >= 0 && v[k].rank != f.rank)
					continue;
				struct db_match m = { .rank = v[k].rank, .tid = v[k].tid, .name_id = v[k].name_id, .comm_id = v[k].comm_id,
						      .seq = v[k].seq, .bytes = v[k].bytes, .start_ns = v[k].start,
						      .end_ns = v[k].end, .nranks = (int)(j - i),
						      .p2p_src = v[k].k1, .p2p_dst = v[k].k2 };
				int64_t arr = last < v[k].end ? last : v[k].end;
				m.wait_ns = arr - v[k].start;
				m.transit_ns = v[k].end - arr;
				m.err_ns = v[k].err + lerr;
				rc = cb(ud, &m);
			}
		}
		i = j;
	}
	free(v);
	return rc;
}

int db_each_match(struct db *db, struct db_filter f, int kind, db_match_cb cb, void *ud)
{
	return each_match(db, f, kind, 0, cb, ud);
}

int db_each_call(struct db *db, struct db_filter f, int kind, db_match_cb cb, void *ud)
{
	return each_match(db, f, kind, 1, cb, ud);
}

struct commacc {
	int64_t nnames;
	char **names;
	struct db_comm_stat *st;
	int n, cap;
	int64_t *gid;          /* comm ids (ascending; any value: comm/ makes them kind << 24 | index) */
	int *gsize;            /* group size of gid[i] (max over ranks) */
	int ngsize;
};

static struct db_comm_stat *comm_slot(struct commacc *a, int kind, int64_t name_id, int64_t bucket)
{
	for (int i = 0; i < a->n; i++)
		if (a->st[i].kind == kind && a->st[i].bucket == bucket && !strcmp(a->st[i].name, a->names[name_id]))
			return &a->st[i];
	if (ARRAY_GROW(a->st, a->n, a->cap, 32, "summing collectives"))
		return NULL;
	struct db_comm_stat *s = &a->st[a->n++];
	memset(s, 0, sizeof *s);
	s->kind = kind;
	s->bucket = bucket;
	s->name = a->names[name_id];
	s->group_size = 1;
	return s;
}

static int comm_ev_cb(void *ud, const struct db_event *e, int64_t queue_ns)
{
	struct commacc *a = ud;
	if (e->kind != DB_KIND_COMM && e->kind != DB_KIND_P2P)
		return 0;
	if (e->name_id < 0 || e->name_id >= a->nnames)
		return 0;
	struct db_comm_stat *s = comm_slot(a, e->kind, e->name_id, db_bytes_bucket(e->bytes));
	if (!s)
		return ASCENT_ENOMEM;   /* comm_slot said why */
	s->count++;
	s->total_ns = i64_add_sat(s->total_ns, e->dur_ns);   /* damaged profiles: saturate, never wrap */
	s->bytes = i64_add_sat(s->bytes, e->bytes);
	s->queue_ns = i64_add_sat(s->queue_ns, queue_ns);
	if (e->kind == DB_KIND_COMM && e->comm_id >= 0) {
		int lo = 0, hi = a->ngsize;   /* binary search of the communicator's size */
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (a->gid[mid] < e->comm_id)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo < a->ngsize && a->gid[lo] == e->comm_id && a->gsize[lo] > s->group_size)
			s->group_size = a->gsize[lo];
	}
	return 0;
}

static int comm_row(void *ud, sqlite3_stmt *s)
{
	struct db_event e;
	memset(&e, 0, sizeof e);
	e.rank = sqlite3_column_int(s, 0);
	e.kind = sqlite3_column_int(s, 1);
	e.name_id = sqlite3_column_int64(s, 2);
	e.dur_ns = sqlite3_column_int64(s, 3);
	e.bytes = sqlite3_column_int64(s, 4);
	e.comm_id = sqlite3_column_int(s, 5);
	return comm_ev_cb(ud, &e, sqlite3_column_int64(s, 6));
}

/* Collectives and p2p only, through the partial index on comm_id (no full scan); with each, the
 * time it waited in its communicator's queue: its argument {"queue_ns": N} (comm/'s communication
 * thread; the arg table is v2). */
static int comm_scan(struct db *db, struct db_filter f, struct commacc *a)
{
	const char *queue = db_schema_version(db) >= 2
		? "coalesce((SELECT CASE WHEN json_valid(g.args) THEN json_extract(g.args, '$.queue_ns') END FROM arg g"
		  " WHERE g.rank = event.rank AND g.tid = event.tid AND g.start_ns = event.start_ns"
		  " AND g.kind = event.kind AND g.name_id = event.name_id LIMIT 1), 0)"
		: "0";
	char sql[2048];
	int split = f.step_lo >= 0 && db_has_table(db, "device_lane");
	/* with a step filter, device collectives go by the step that launched them (docs/device.md):
	 * the window scan takes the others, then a scan of the device lanes by launch */
	snprintf(sql, sizeof sql,
		 "SELECT rank, kind, name_id, dur_ns, coalesce(bytes, 0), comm_id, %s FROM event"
		 " WHERE comm_id IS NOT NULL AND kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_P2P ")"
		 " AND (?1 < 0 OR rank = ?1) AND start_ns >= ?2 AND start_ns < ?3%s", queue,
		 split ? " AND NOT EXISTS (SELECT 1 FROM device_lane dl WHERE dl.rank = event.rank AND dl.tid = event.tid)" : "");
	int rc = db_scan_windows(db, f, sql, comm_row, a);
	if (rc || !split)
		return rc;
	char *q = sqlite3_mprintf("SELECT rank, kind, name_id, dur_ns, coalesce(bytes, 0), comm_id, %s FROM (SELECT e.*, %s AS"
				  " t FROM event e JOIN device_lane dl ON dl.rank = e.rank AND dl.tid = e.tid WHERE e.comm_id IS"
				  " NOT NULL AND e.kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_P2P ") AND (?1 < 0 OR e.rank ="
				  " ?1)) event WHERE t >= ?2 AND t < ?3",
				  queue, db_has_table(db, "flow") ? DB_SQL_STEP_TIME_OF_DEVICE_E : "e.start_ns");
	if (!q)
		return ascent_error(ASCENT_ENOMEM, "out of memory reading collectives");
	rc = db_scan_windows(db, f, q, comm_row, a);
	sqlite3_free(q);
	return rc;
}

static int comm_match_cb(void *ud, const struct db_match *m)
{
	struct commacc *a = ud;
	if (m->name_id < 0 || m->name_id >= a->nnames)
		return 0;
	for (int k = DB_KIND_COMM; k <= DB_KIND_P2P; k++) {
		for (int i = 0; i < a->n; i++) {
			struct db_comm_stat *s = &a->st[i];
			if (s->kind == k && s->bucket == db_bytes_bucket(m->bytes) && !strcmp(s->name, a->names[m->name_id])) {
				s->matched++;
				s->wait_ns += m->wait_ns;
				s->transit_ns += m->transit_ns;
				if (m->err_ns > s->err_ns)
					s->err_ns = m->err_ns;
				return 0;
			}
		}
	}
	return 0;
}

static int cmp_commstat(const void *a, const void *b)
{
	const struct db_comm_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : (x->bucket > y->bucket) - (x->bucket < y->bucket);
}

/* No data moves before the last member arrives: the time before that is waiting for it. */
double db_comm_algbw(int64_t bytes, int64_t count, int64_t total_ns, int64_t matched, int64_t transit_ns)
{
	int64_t xfer = matched == count && transit_ns > 0 ? transit_ns : total_ns;
	return xfer > 0 ? (double)bytes / (double)xfer : 0;
}

int db_comm_stats(struct db *db, struct db_filter f, struct db_comm_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	struct commacc a = { 0 };
	int rc = db_strings(db, &a.names, &a.nnames);
	if (rc)
		return rc;
	sqlite3_stmt *s = NULL;
	rc = db_prep(db, "SELECT comm_id, max(size) FROM comm WHERE comm_id >= 0 GROUP BY comm_id ORDER BY comm_id", &s);
	if (!rc) {
		int src, capi = 0, capg = 0;
		while ((src = db_step(db, s)) == SQLITE_ROW) {
			if ((rc = ARRAY_GROW(a.gid, a.ngsize, capi, 16, "reading communicator sizes")) ||
			    (rc = ARRAY_GROW(a.gsize, a.ngsize, capg, 16, "reading communicator sizes")))
				break;
			a.gid[a.ngsize] = sqlite3_column_int64(s, 0);
			a.gsize[a.ngsize++] = sqlite3_column_int(s, 1);
		}
		if (!rc)
			rc = db_step_check(db, src, s, NULL);
		sqlite3_finalize(s);
	}
	if (!rc)
		rc = comm_scan(db, f, &a);
	if (!rc)
		rc = db_each_match(db, f, DB_KIND_COMM, comm_match_cb, &a);
	if (!rc)   /* sends and receives matched by (comm, seq, sender, receiver): wait/transit too */
		rc = db_each_match(db, f, DB_KIND_P2P, comm_match_cb, &a);
	for (int i = 0; i < a.n; i++) {
		struct db_comm_stat *c = &a.st[i];
		c->name = strdup(c->name);
		if (!c->name && !rc)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		c->avg_ns = c->count ? (double)c->total_ns / (double)c->count : 0;
		c->algbw_gbs = db_comm_algbw(c->bytes, c->count, c->total_ns, c->matched, c->transit_ns);
		c->busbw_gbs = c->algbw_gbs * (c->kind == DB_KIND_COMM ? db_busbw_factor(c->name, c->group_size) : 1.0);
	}
	free(a.gsize);
	free(a.gid);
	db_strings_free(a.names, a.nnames);
	if (rc) {
		db_comm_stats_free(a.st, a.n);
		return rc;
	}
	if (a.n > 1)
		qsort(a.st, (size_t)a.n, sizeof *a.st, cmp_commstat);
	*out = a.st;
	*n = a.n;
	return 0;
}

void db_comm_stats_free(struct db_comm_stat *s, int n)
{
	if (!s)
		return;
	for (int i = 0; i < n; i++)
		free(s[i].name);
	free(s);
}

int db_comm_groups(struct db *db, struct db_filter f, struct db_comm_group **out, int *n)
{
	static const char *sql =
		"SELECT g.comm_id, coalesce(g.name, ''), coalesce(g.size, 1), coalesce(g.members, ''),"
		" coalesce(x.n, 0), coalesce(x.b, 0), coalesce(x.t, 0)"
		" FROM (SELECT comm_id, min(name) AS name, max(size) AS size, group_concat(rank, ',') AS members"
		"       FROM (SELECT comm_id, name, size, rank FROM comm ORDER BY comm_id, rank_in_comm, rank)"
		"       GROUP BY comm_id) g"
		" LEFT JOIN (SELECT comm_id, count(*) AS n, sum(coalesce(bytes, 0)) AS b, sum(dur_ns) AS t FROM event"
		"            WHERE comm_id IS NOT NULL AND kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_P2P ") AND (?1 < 0 OR rank = ?1)"
		"              AND (?2 < 0 OR step BETWEEN ?2 AND ?3) GROUP BY comm_id) x ON x.comm_id = g.comm_id"
		" ORDER BY g.comm_id";
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	db_bind_i64(db, s, 2, f.step_lo);
	db_bind_i64(db, s, 3, f.step_hi);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 16, "reading communicator groups")))
			break;
		struct db_comm_group *g = &(*out)[(*n)++];
		g->comm_id = sqlite3_column_int64(s, 0);
		g->name = strdup((const char *)sqlite3_column_text(s, 1));
		g->size = sqlite3_column_int(s, 2);
		g->members = strdup((const char *)sqlite3_column_text(s, 3));
		g->count = sqlite3_column_int64(s, 4);
		g->bytes = sqlite3_column_int64(s, 5);
		g->total_ns = sqlite3_column_int64(s, 6);
		if (!g->name || !g->members) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	if (rc) {
		db_comm_groups_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_comm_groups_free(struct db_comm_group *g, int n)
{
	for (int i = 0; g && i < n; i++) {
		free(g[i].name);
		free(g[i].members);
	}
	free(g);
}

/* ---------------------------------------------------------------------------------------- */
/* steps, memory, overhead */

int db_step_stats(struct db *db, struct db_filter f, struct db_step_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	int64_t have = 0;
	int rc = db_count(db, "step_stat", &have);
	if (rc)
		return rc;
	if (!have)
		return db_compute_step_stats(db, f, out, n);
	sqlite3_stmt *s = NULL;
	rc = db_prep(db, "SELECT rank, step, start_ns, total_ns, computing_ns, comm_ns, overlapped_ns,"
		      " comm_not_overlapped_ns, free_ns, bubble_ns, preparing_ns FROM step_stat"
		      " WHERE (?1 < 0 OR rank = ?1) AND (?2 < 0 OR step BETWEEN ?2 AND ?3) ORDER BY step, rank", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	db_bind_i64(db, s, 2, f.step_lo);
	db_bind_i64(db, s, 3, f.step_hi);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 64, "reading step statistics")))
			break;
		struct db_step_stat *o = &(*out)[(*n)++];
		o->rank = sqlite3_column_int(s, 0);
		o->step = sqlite3_column_int64(s, 1);
		o->start_ns = sqlite3_column_int64(s, 2);
		o->total_ns = sqlite3_column_int64(s, 3);
		o->computing_ns = sqlite3_column_int64(s, 4);
		o->comm_ns = sqlite3_column_int64(s, 5);
		o->overlapped_ns = sqlite3_column_int64(s, 6);
		o->comm_not_overlapped_ns = sqlite3_column_int64(s, 7);
		o->free_ns = sqlite3_column_int64(s, 8);
		o->bubble_ns = sqlite3_column_int64(s, 9);
		o->preparing_ns = sqlite3_column_int64(s, 10);
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

struct memacc {
	struct db_mem_stat *st;
	int n, cap;
};

static int mem_cb(void *ud, const struct db_mem_row *m)
{
	struct memacc *a = ud;
	struct db_mem_stat *s = NULL;
	for (int i = a->n - 1; i >= 0; i--)
		if (a->st[i].rank == m->rank && a->st[i].device == m->device && a->st[i].category == m->category) {
			s = &a->st[i];
			break;
		}
	if (!s) {
		if (ARRAY_GROW(a->st, a->n, a->cap, 16, "summing memory"))
			return ASCENT_ENOMEM;
		s = &a->st[a->n++];
		*s = (struct db_mem_stat){ .rank = m->rank, .device = m->device, .category = m->category,
					   .peak_bytes = INT64_MIN };
	}
	if (m->in_use > s->peak_bytes) {
		s->peak_bytes = m->in_use;
		s->peak_ts_ns = m->ts_ns;
	}
	s->final_bytes = m->in_use;
	if (m->bytes >= 0)
		s->allocs++;
	else
		s->frees++;
	return 0;
}

/* The order of memory rows everywhere: rank, device (the host, -1, before device 0; unknown, -2,
 * first), category. */
static int cmp_memstat(const void *a, const void *b)
{
	const struct db_mem_stat *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return x->category - y->category;
}

int db_mem_stats(struct db *db, struct db_filter f, struct db_mem_stat **out, int *n)
{
	struct memacc a = { 0 };
	int rc = db_each_mem(db, f, mem_cb, &a);
	if (rc) {
		free(a.st);
		*out = NULL;
		*n = 0;
		return rc;
	}
	if (a.n > 1)
		qsort(a.st, (size_t)a.n, sizeof *a.st, cmp_memstat);
	*out = a.st;
	*n = a.n;
	return 0;
}

int db_overhead_stats(struct db *db, struct db_overhead_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT o.rank, o.what, count(*), sum(o.dur_ns),"
			  " coalesce((SELECT max(end_ns) FROM rank r WHERE r.rank = o.rank), 0)"
			  " FROM overhead o GROUP BY o.rank, o.what ORDER BY o.rank, sum(o.dur_ns) DESC", &s);
	if (rc)
		return rc;
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 16, "reading profiler overhead")))
			break;
		struct db_overhead_stat *o = &(*out)[(*n)++];
		o->rank = sqlite3_column_int(s, 0);
		const char *w = (const char *)sqlite3_column_text(s, 1);
		o->what = strdup(w ? w : "");
		o->count = sqlite3_column_int64(s, 2);
		o->total_ns = sqlite3_column_int64(s, 3);
		o->profiled_ns = sqlite3_column_int64(s, 4);
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	if (rc) {
		db_overhead_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_overhead_stats_free(struct db_overhead_stat *s, int n)
{
	if (!s)
		return;
	for (int i = 0; i < n; i++)
		free(s[i].what);
	free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* folded stacks */

int db_each_stack_weight(struct db *db, struct db_filter f, db_stack_cb cb, void *ud)
{
	int64_t nsamp = 0;
	int rc = db_count(db, "sample", &nsamp);
	if (rc)
		return rc;
	const char *sql = nsamp
		? "SELECT stack_id, count(*) FROM sample WHERE (?1 < 0 OR rank = ?1) GROUP BY stack_id"
		: "SELECT stack_id, sum(dur_ns) / 1000 FROM event WHERE stack_id IS NOT NULL AND (?1 < 0 OR rank = ?1)"
		  " GROUP BY stack_id";
	(void)f;
	sqlite3_stmt *s = NULL, *fr = NULL;
	if ((rc = db_prep(db, sql, &s)) != 0)
		return rc;
	if ((rc = db_prep(db, "SELECT coalesce(f.symbol, printf('0x%x', f.ip)) FROM stack st JOIN frame f ON"
			   " f.frame_id = st.frame_id WHERE st.stack_id = ?1 ORDER BY st.depth DESC", &fr)) != 0) {
		sqlite3_finalize(s);
		return rc;
	}
	db_bind_i64(db, s, 1, f.rank);
	int src;
	const char *frames[128];
	char *own[128];
	while ((src = db_step(db, s)) == SQLITE_ROW && !rc) {
		int64_t sid = sqlite3_column_int64(s, 0), w = sqlite3_column_int64(s, 1);
		sqlite3_reset(fr);
		db_bind_i64(db, fr, 1, sid);
		int nf = 0, frc;
		while ((frc = db_step(db, fr)) == SQLITE_ROW && nf < 128) {
			const char *t = (const char *)sqlite3_column_text(fr, 0);
			own[nf] = strdup(t ? t : "?");
			frames[nf] = own[nf] ? own[nf] : "?";
			nf++;
		}
		if (nf && w > 0)
			rc = cb(ud, sid, nf, frames, w);
		for (int i = 0; i < nf; i++)
			free(own[i]);
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	sqlite3_finalize(fr);
	return rc;
}
