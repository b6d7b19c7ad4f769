/* db/write.c — the batched writer: transactions, interning, one prepared INSERT per table plus a
 * 64-row event INSERT (db_put_events), finalize (indexes after the bulk insert, op_stat, step_stat). */
#include "db/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int db_begin(struct db *db)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_BEGIN, &s);
	return rc ? rc : db_step_done(db, s, "cannot begin a transaction on");
}

int db_commit(struct db *db)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_COMMIT, &s);
	return rc ? rc : db_step_done(db, s, "cannot commit to");
}

int db_rollback(struct db *db)
{
	if (sqlite3_get_autocommit(db->h))
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_ROLLBACK, &s);
	return rc ? rc : db_step_done(db, s, "cannot roll back");
}

int db_set_sync(struct db *db, int sync)
{
	return db_exec(db, sync ? "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = OFF");
}

int db_intern(struct db *db, const char *str, int64_t *id)
{
	if (!str)
		str = "";
	if (!db->strs_loaded) {
		int rc = db_load_strings(db);
		if (rc)
			return rc;
	}
	if (db_strmap_get(&db->strs, str, id))
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_STR_INS, &s);
	if (rc)
		return rc;
	int64_t nid = db->next_str_id;
	db_bind_i64(db, s, 1, nid);
	db_bind_text_static(db, s, 2, str);
	if ((rc = db_step_done(db, s, "cannot intern a string in")) != 0)
		return rc;
	if ((rc = db_strmap_put(&db->strs, str, nid)) != 0)
		return rc;
	db->next_str_id++;
	*id = nid;
	return 0;
}

/* INSERT OR IGNORE (no statement journal, which a bulk insert without a rollback journal cannot
 * have) and then the count: an event whose whole key (ord included) is stored already would be lost,
 * and is an error instead. */
static int key_taken(struct db *db, int64_t n)
{
	return ascent_error(ASCENT_EINTERNAL, "cannot insert events into '%s': %lld of them have the key (rank, start, "
			    "lane, kind, name, duration, ord) of an event stored already (the writer gave two events one ord)",
			    db->path, (long long)n);
}

int db_put_event(struct db *db, const struct db_event *e)
{
	sqlite3_stmt *s = NULL;
	int rc = db->events_added ? 0 : db_op_stat_invalidate(db);
	if (!rc)
		rc = db_stmt(db, S_EVENT, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, e->rank);
	db_bind_i64(db, s, 2, e->start_ns);
	db_bind_i64(db, s, 3, e->tid);
	db_bind_i64(db, s, 4, e->kind);
	db_bind_i64(db, s, 5, e->name_id);
	db_bind_i64(db, s, 6, e->dur_ns);
	db_bind_opt_i64(db, s, 7, e->step, e->step >= 0);
	db_bind_opt_i64(db, s, 8, e->mb, e->mb >= 0);
	db_bind_opt_i64(db, s, 9, e->layer, e->layer >= 0);
	db_bind_opt_i64(db, s, 10, e->bytes, db_event_has_bytes(e->kind, e->bytes));
	db_bind_opt_i64(db, s, 11, e->flops, e->flops > 0);
	db_bind_opt_i64(db, s, 12, e->peer, e->peer >= 0);
	db_bind_opt_i64(db, s, 13, e->comm_id, e->comm_id >= 0);
	db_bind_opt_i64(db, s, 14, e->seq, e->seq >= 0);
	db_bind_opt_i64(db, s, 15, e->stack_id, e->stack_id > 0);
	db_bind_opt_i64(db, s, 16, e->site_id, e->site_id > 0);
	db_bind_i64(db, s, 17, e->ord);
	rc = db_step(db, s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		return db_sql_err(db, rc, "cannot insert an event into", NULL);
	return sqlite3_changes(db->h) == 1 ? 0 : key_taken(db, 1);
}

/* The 17 column values of an event row as db_put_event stores them; present[c] = 0 → NULL. */
static inline void event_values(const struct db_event *e, int64_t *v, unsigned char *present)
{
	v[0] = e->rank, present[0] = 1;
	v[1] = e->start_ns, present[1] = 1;
	v[2] = e->tid, present[2] = 1;
	v[3] = e->kind, present[3] = 1;
	v[4] = e->name_id, present[4] = 1;
	v[5] = e->dur_ns, present[5] = 1;
	v[6] = e->step, present[6] = e->step >= 0;
	v[7] = e->mb, present[7] = e->mb >= 0;
	v[8] = e->layer, present[8] = e->layer >= 0;
	v[9] = e->bytes, present[9] = (unsigned char)db_event_has_bytes(e->kind, e->bytes);
	v[10] = e->flops, present[10] = e->flops > 0;
	v[11] = e->peer, present[11] = e->peer >= 0;
	v[12] = e->comm_id, present[12] = e->comm_id >= 0;
	v[13] = e->seq, present[13] = e->seq >= 0;
	v[14] = e->stack_id, present[14] = e->stack_id > 0;
	v[15] = e->site_id, present[15] = e->site_id > 0;
	v[16] = e->ord, present[16] = 1;
}

int db_put_events(struct db *db, const struct db_event *ev, size_t n)
{
	size_t i = 0;
	if (!db->events_added && n) {
		int rc = db_op_stat_invalidate(db);
		if (rc)
			return rc;
	}
	if (n >= DB_EVENT_ROWS) {
		sqlite3_stmt *s = NULL;
		int rc = db_stmt(db, S_EVENT_MULTI, &s);
		if (rc)
			return rc;
		struct bindcache *bc = db->evbind;
		for (; i + DB_EVENT_ROWS <= n; i += DB_EVENT_ROWS) {
			for (int r = 0; r < DB_EVENT_ROWS; r++) {
				int64_t v[DB_EVENT_COLS];
				unsigned char present[DB_EVENT_COLS];
				event_values(&ev[i + (size_t)r], v, present);
				int base = r * DB_EVENT_COLS;
				for (int c = 0; c < DB_EVENT_COLS; c++) {
					int k = base + c;
					if (present[c]) {
						if (bc->state[k] != 2 || bc->v[k] != v[c]) {
							db_bind_i64(db, s, k + 1, v[c]);
							bc->state[k] = 2;
							bc->v[k] = v[c];
						}
					} else if (bc->state[k] != 1) {
						db_bind_null(db, s, k + 1);
						bc->state[k] = 1;
					}
				}
			}
			rc = db_step(db, s);
			sqlite3_reset(s);
			if (rc != SQLITE_DONE)
				return db_sql_err(db, rc, "cannot insert events into", NULL);
			int stored = sqlite3_changes(db->h);
			if (stored != DB_EVENT_ROWS)
				return key_taken(db, DB_EVENT_ROWS - stored);
		}
	}
	for (; i < n; i++) {
		int rc = db_put_event(db, &ev[i]);
		if (rc)
			return rc;
	}
	return 0;
}

int db_put_counter(struct db *db, int rank, int64_t name_id, int64_t ts_ns, double value)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_COUNTER, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, name_id);
	db_bind_i64(db, s, 3, ts_ns);
	db_bind_double(db, s, 4, value);
	return db_step_done(db, s, "cannot insert a counter into");
}

int db_put_mem(struct db *db, int rank, int device, int64_t ts_ns, int64_t bytes, int category, int64_t in_use,
	       int64_t stack_id)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_MEM, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, ts_ns);
	db_bind_i64(db, s, 3, bytes);
	db_bind_i64(db, s, 4, category);
	db_bind_i64(db, s, 5, in_use);
	db_bind_opt_i64(db, s, 6, stack_id, stack_id > 0);
	db_bind_i64(db, s, 7, device);
	return db_step_done(db, s, "cannot insert a memory event into");
}

int db_put_stack_frame(struct db *db, int64_t stack_id, int depth, int64_t frame_id)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_STACK, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, stack_id);
	db_bind_i64(db, s, 2, depth);
	db_bind_i64(db, s, 3, frame_id);
	return db_step_done(db, s, "cannot insert a stack into");
}

int db_put_frame(struct db *db, int64_t frame_id, uint64_t ip, const char *symbol, const char *module,
		 int64_t offset)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_FRAME, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, frame_id);
	db_bind_i64(db, s, 2, (int64_t)ip);
	db_bind_text(db, s, 3, symbol);
	db_bind_text(db, s, 4, module);
	db_bind_i64(db, s, 5, offset);
	return db_step_done(db, s, "cannot insert a frame into");
}

int db_put_sample(struct db *db, int rank, int tid, int64_t ts_ns, int64_t stack_id, int64_t period_ns)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_SAMPLE, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, tid);
	db_bind_i64(db, s, 3, ts_ns);
	db_bind_i64(db, s, 4, stack_id);
	if (period_ns > 0)
		db_bind_i64(db, s, 5, period_ns);
	else
		db_bind_null(db, s, 5);
	return db_step_done(db, s, "cannot insert a sample into");
}

int db_put_overhead(struct db *db, int rank, int64_t ts_ns, int64_t dur_ns, const char *what)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_OVERHEAD, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, ts_ns);
	db_bind_i64(db, s, 3, dur_ns);
	db_bind_text(db, s, 4, what);
	db_bind_null(db, s, 5);
	return db_step_done(db, s, "cannot insert overhead into");
}

int db_put_thread(struct db *db, int rank, int tid, int64_t os_tid, const char *name)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_THREAD, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, tid);
	db_bind_i64(db, s, 3, os_tid);
	db_bind_text(db, s, 4, name);
	return db_step_done(db, s, "cannot insert a thread into");
}

int db_put_rank(struct db *db, const struct db_rank_info *r)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_RANK, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, r->rank);
	db_bind_text(db, s, 2, r->host);
	db_bind_i64(db, s, 3, r->pid);
	db_bind_i64(db, s, 4, r->dp_rank);
	db_bind_i64(db, s, 5, r->tp_rank);
	db_bind_i64(db, s, 6, r->pp_rank);
	db_bind_i64(db, s, 7, r->threads);
	db_bind_i64(db, s, 8, r->t0_ns);
	db_bind_i64(db, s, 9, r->t0_utc_ns);
	db_bind_i64(db, s, 10, r->clock_offset_ns);
	db_bind_i64(db, s, 11, r->clock_err_ns);
	db_bind_i64(db, s, 12, r->clock_offset_end_ns);
	db_bind_i64(db, s, 13, r->clock_err_end_ns);
	db_bind_i64(db, s, 14, r->end_ns);
	return db_step_done(db, s, "cannot insert a rank into");
}

int db_put_run(struct db *db, const char *command_line, const char *config_json, int world_size)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_RUN, &s);
	if (rc)
		return rc;
	char now[32];
	clock_format_utc(clock_utc_ns(), 0, now, sizeof now);
	db_bind_text(db, s, 1, command_line);
	db_bind_text(db, s, 2, config_json);
	db_bind_i64(db, s, 3, world_size);
	db_bind_text(db, s, 4, now);
	return db_step_done(db, s, "cannot insert the run into");
}

int db_put_comm(struct db *db, int rank, int comm_id, const char *name, int size, int rank_in_comm)
{
	sqlite3_stmt *s = NULL;
	int rc;
	if (name && *name) {
		/* one communicator per (rank, name): a re-built grid replaces the rank's earlier one */
		if ((rc = db_stmt(db, S_COMM_DEL, &s)))
			return rc;
		db_bind_i64(db, s, 1, rank);
		db_bind_text(db, s, 2, name);
		db_bind_i64(db, s, 3, comm_id);
		if ((rc = db_step_done(db, s, "cannot replace a communicator in")))
			return rc;
	}
	rc = db_stmt(db, S_COMM, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, comm_id);
	db_bind_text(db, s, 3, name);
	db_bind_i64(db, s, 4, size);
	db_bind_i64(db, s, 5, rank_in_comm);
	return db_step_done(db, s, "cannot insert a communicator into");
}

int db_put_step_agg(struct db *db, int rank, int64_t step, int kind, int64_t name_id, int64_t count,
		    int64_t total_ns)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_STEP_AGG, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, step);
	db_bind_i64(db, s, 3, kind);
	db_bind_i64(db, s, 4, name_id);
	db_bind_i64(db, s, 5, count);
	db_bind_i64(db, s, 6, total_ns);
	return db_step_done(db, s, "cannot insert a step aggregate into");
}

int db_put_note(struct db *db, int rank, int64_t ts_ns, const char *level, const char *text)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_NOTE, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, ts_ns);
	db_bind_text(db, s, 3, level);
	db_bind_text(db, s, 4, text);
	return db_step_done(db, s, "cannot insert a note into");
}

/* ---------------------------------------------------------------------------------------- */
/* finalize: indexes, then op_stat and step_stat (db/opstat.c, db/steps.c) from one pass over the
 * events in nesting order */

/* What ANALYZE writes into sqlite_stat1 for event's indexes, counted in the pass instead of a second
 * scan: rows and distinct key prefixes of the primary key (rank, start_ns, tid, kind, name_id,
 * dur_ns, ord), of event_step (kind, rank, step) over the steps and of event_comm (comm_id, seq) over the
 * events with a communicator. */
struct keystats {
	int64_t nrow, d[6];            /* distinct prefixes of 1..6 primary key columns (all 7: nrow) */
	int rank;
	int64_t start;
	struct grpkey {
		int64_t tid, kind, name_id, dur_ns;
	} *g;                          /* the keys of the events that start at `start` */
	int ng, capg;
	int64_t (*step)[2];            /* (rank, step) of each step */
	int64_t (*comm)[2];            /* (comm_id, seq) */
	int nstep, capstep, ncomm, capcomm;
};

static int cmp_grpkey(const void *a, const void *b)
{
	const struct grpkey *x = a, *y = b;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->name_id != y->name_id)
		return x->name_id < y->name_id ? -1 : 1;
	return (x->dur_ns > y->dur_ns) - (x->dur_ns < y->dur_ns);
}

static int cmp_pair(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return (x[1] > y[1]) - (x[1] < y[1]);
}

/* The distinct (tid), (tid, kind), (tid, kind, name_id), (tid, kind, name_id, dur_ns) of one group of
 * events that start together. */
static void keystats_group(struct keystats *k)
{
	if (k->ng > 1)
		qsort(k->g, (size_t)k->ng, sizeof *k->g, cmp_grpkey);
	for (int i = 0; i < k->ng; i++) {
		const struct grpkey *a = &k->g[i], *p = i ? &k->g[i - 1] : NULL;
		int same_tid = p && p->tid == a->tid, same_kind = same_tid && p->kind == a->kind;
		int same_name = same_kind && p->name_id == a->name_id;
		k->d[2] += !same_tid;
		k->d[3] += !same_kind;
		k->d[4] += !same_name;
		k->d[5] += !(same_name && p->dur_ns == a->dur_ns);
	}
	k->ng = 0;
}

static int push_pair(int64_t (**v)[2], int *n, int *cap, int64_t a, int64_t b)
{
	int rc = ARRAY_GROW(*v, *n, *cap, 64, "finishing the profile");
	if (rc)
		return rc;
	(*v)[*n][0] = a;
	(*v)[(*n)++][1] = b;
	return 0;
}

static int keystats_event(struct keystats *k, const struct db_event *e)
{
	if (!k->nrow || e->rank != k->rank || e->start_ns != k->start) {
		keystats_group(k);
		k->d[0] += !k->nrow || e->rank != k->rank;
		k->d[1]++;
		k->rank = e->rank;
		k->start = e->start_ns;
	}
	k->nrow++;
	int rc = ARRAY_GROW(k->g, k->ng, k->capg, 16, "finishing the profile");
	if (rc)
		return rc;
	k->g[k->ng++] = (struct grpkey){ e->tid, e->kind, e->name_id, e->dur_ns };
	if (e->kind == DB_KIND_STEP)
		rc = push_pair(&k->step, &k->nstep, &k->capstep, e->rank, e->step);
	if (!rc && e->comm_id >= 0)
		rc = push_pair(&k->comm, &k->ncomm, &k->capcomm, e->comm_id, e->seq);
	return rc;
}

static void keystats_free(struct keystats *k)
{
	free(k->g);
	free(k->step);
	free(k->comm);
}

/* ANALYZE's figure for a prefix with d distinct values among n rows: rows per value, rounded up */
static int64_t rows_per_value(int64_t n, int64_t d)
{
	int64_t v = (n + d - 1) / d;
	return v == 2 && n * 10 <= d * 11 ? 1 : v;
}

/* "n v1 v2 ..." for a sorted list of pairs: distinct first members, then distinct pairs; lead: a
 * constant column before them (event_step's kind) */
static void pair_stat(char *buf, size_t len, int64_t (*v)[2], int n, int lead)
{
	if (n > 1)
		qsort(v, (size_t)n, sizeof *v, cmp_pair);
	int64_t d0 = 0, d1 = 0;
	for (int i = 0; i < n; i++) {
		d0 += !i || v[i][0] != v[i - 1][0];
		d1 += !i || v[i][0] != v[i - 1][0] || v[i][1] != v[i - 1][1];
	}
	int at = snprintf(buf, len, "%d", n);
	if (lead)
		at += snprintf(buf + at, len - (size_t)at, " %d", n);
	snprintf(buf + at, len - (size_t)at, " %" PRId64 " %" PRId64, rows_per_value(n, d0), rows_per_value(n, d1));
}

/* Write event's rows of sqlite_stat1, as `ANALYZE event` would (an index it does not know on event,
 * such as the viewer's: ANALYZE event itself), and have the connection load them. */
static int write_event_stat1(struct db *db, struct keystats *k)
{
	keystats_group(k);
	int64_t other = 0;
	int rc = db_scalar_i64(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND tbl_name = 'event'"
			       " AND name NOT IN ('event_comm', 'event_step') AND name NOT LIKE 'sqlite_autoindex_%'",
			       &other, NULL);
	if (rc || other)
		return rc ? rc : db_exec(db, "ANALYZE event");
	rc = db_exec(db, "ANALYZE sqlite_schema; DELETE FROM sqlite_stat1 WHERE tbl = 'event'");
	sqlite3_stmt *s = NULL;
	if (!rc)
		rc = db_prep(db, "INSERT INTO sqlite_stat1(tbl, idx, stat) VALUES('event', ?1, ?2)", &s);
	char buf[200];
	if (!rc && k->nrow) {
		int at = snprintf(buf, sizeof buf, "%" PRId64, k->nrow);
		for (int i = 0; i < 6; i++)
			at += snprintf(buf + at, sizeof buf - (size_t)at, " %" PRId64, rows_per_value(k->nrow, k->d[i]));
		snprintf(buf + at, sizeof buf - (size_t)at, " 1");
		db_bind_text(db, s, 1, "event");
		db_bind_text(db, s, 2, buf);
		rc = db_step_done(db, s, "cannot write index statistics to");
	}
	if (!rc && k->nstep) {
		pair_stat(buf, sizeof buf, k->step, k->nstep, 1);
		db_bind_text(db, s, 1, "event_step");
		db_bind_text(db, s, 2, buf);
		rc = db_step_done(db, s, "cannot write index statistics to");
	}
	if (!rc && k->ncomm) {
		pair_stat(buf, sizeof buf, k->comm, k->ncomm, 0);
		db_bind_text(db, s, 1, "event_comm");
		db_bind_text(db, s, 2, buf);
		rc = db_step_done(db, s, "cannot write index statistics to");
	}
	sqlite3_finalize(s);
	if (!rc)
		rc = db_exec(db, "ANALYZE sqlite_schema");   /* loads the statistics into this connection */
	return rc;
}

struct finalize_pass {
	struct db_opacc *op;
	struct db_stepacc *steps;
	struct keystats keys;
};

static int finalize_event(void *ud, const struct db_event *e)
{
	struct finalize_pass *p = ud;
	int rc = db_opacc_event(p->op, e);
	if (!rc)
		rc = db_stepacc_event(p->steps, e);
	return rc ? rc : keystats_event(&p->keys, e);
}

static int write_step_stats(struct db *db, const struct db_step_stat *ss, int n)
{
	int rc = db_exec(db, "DELETE FROM step_stat");
	sqlite3_stmt *s = NULL;
	if (!rc)
		rc = db_stmt(db, S_STEP_STAT, &s);
	for (int i = 0; !rc && i < n; i++) {
		const struct db_step_stat *o = &ss[i];
		int64_t v[11] = { o->rank, o->step, o->start_ns, o->total_ns, o->computing_ns, o->comm_ns,
				  o->overlapped_ns, o->comm_not_overlapped_ns, o->free_ns, o->bubble_ns,
				  o->preparing_ns };
		for (int k = 0; k < 11; k++)
			db_bind_i64(db, s, k + 1, v[k]);
		rc = db_step_done(db, s, "cannot write step statistics to");
	}
	return rc;
}

int db_finalize_indexes(struct db *db)
{
	int rc = db_create_tables(db);   /* a file from before op_stat existed */
	return rc ? rc : db_exec(db, db_schema_indexes());
}

/* What db_finalize's pass computed, until db_finalize_write writes it. */
struct db_finalize_result {
	struct finalize_pass p;
	struct db_step_stat *ss;
	int n;
};

void db_finalize_result_free(struct db_finalize_result *r)
{
	if (!r)
		return;
	db_stepacc_free(r->p.steps);
	db_opacc_free(r->p.op);
	keystats_free(&r->p.keys);
	free(r->ss);
	free(r);
}

int db_finalize_pass(struct db *db, struct db_finalize_result **out)
{
	*out = NULL;
	struct db_finalize_result *r = calloc(1, sizeof *r);
	if (!r)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int rc = db_opacc_new(db, (1u << DB_KIND_COUNT) - 1, 0, &r->p.op);
	if (!rc)
		rc = db_stepacc_new(db, &r->p.steps);
	if (!rc)
		rc = db_each_event_nested_lean(db, DB_FILTER_ALL, finalize_event, &r->p);
	if (!rc)
		rc = db_stepacc_finish(r->p.steps, &r->ss, &r->n);
	if (rc) {
		db_finalize_result_free(r);
		return rc;
	}
	*out = r;
	return 0;
}

int db_finalize_write(struct db *db, struct db_finalize_result *r)
{
	int rc = db_begin(db);
	if (!rc) {
		rc = db_write_op_stat(db, r->p.op);
		if (!rc)
			rc = write_step_stats(db, r->ss, r->n);
		if (!rc)
			rc = write_event_stat1(db, &r->p.keys);
		if (!rc)
			rc = db_commit(db);
		else
			db_rollback(db);
	}
	return rc ? rc : db_exec(db, "PRAGMA optimize");
}

int db_finalize(struct db *db)
{
	int rc = db_finalize_indexes(db);
	struct db_finalize_result *r = NULL;
	if (!rc)
		rc = db_finalize_pass(db, &r);
	if (!rc)
		rc = db_finalize_write(db, r);
	db_finalize_result_free(r);
	return rc;
}

int db_max_stack_ids(struct db *db, int64_t *stack_id, int64_t *frame_id)
{
	int rc = db_scalar_i64(db, "SELECT coalesce(max(stack_id), 0) FROM stack", stack_id, NULL);
	if (!rc)
		rc = db_scalar_i64(db, "SELECT coalesce(max(frame_id), 0) FROM frame", frame_id, NULL);
	return rc;
}
