/* db/write.c — the batched writer: transactions, interning, one prepared INSERT per table plus a
 * 64-row event INSERT (db_put_events), finalize (indexes after the bulk insert, op_stat, step_stat). */
#include "db/internal.h"

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

int db_intern(struct db *db, const char *str, int64_t *id)
{
	if (!str)
		str = "";
	if (!db->strs_loaded) {
		int rc = db_load_strings(db);
		if (rc)
			return rc;
	}
	if (strmap_get(&db->strs, str, id))
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_STR_INS, &s);
	if (rc)
		return rc;
	int64_t nid = db->next_str_id;
	sqlite3_bind_int64(s, 1, nid);
	sqlite3_bind_text(s, 2, str, -1, SQLITE_STATIC);
	if ((rc = db_step_done(db, s, "cannot intern a string in")) != 0)
		return rc;
	if ((rc = strmap_put(&db->strs, str, nid)) != 0)
		return rc;
	db->next_str_id++;
	*id = nid;
	return 0;
}

static void bind_opt(sqlite3_stmt *s, int i, int64_t v, int present)
{
	if (present)
		sqlite3_bind_int64(s, i, v);
	else
		sqlite3_bind_null(s, i);
}

int db_put_event(struct db *db, const struct db_event *e)
{
	sqlite3_stmt *s = NULL;
	int rc = db->events_added ? 0 : db_op_stat_invalidate(db);
	if (!rc)
		rc = db_stmt(db, S_EVENT, &s);
	if (rc)
		return rc;
	int comm = db_kind_has_comm(e->kind);
	sqlite3_bind_int64(s, 1, e->rank);
	sqlite3_bind_int64(s, 2, e->start_ns);
	sqlite3_bind_int64(s, 3, e->tid);
	sqlite3_bind_int64(s, 4, e->kind);
	sqlite3_bind_int64(s, 5, e->name_id);
	sqlite3_bind_int64(s, 6, e->dur_ns);
	bind_opt(s, 7, e->step, e->step >= 0);
	bind_opt(s, 8, e->mb, e->mb >= 0);
	bind_opt(s, 9, e->layer, e->layer >= 0);
	bind_opt(s, 10, e->bytes, comm);
	bind_opt(s, 11, e->flops, e->flops > 0);
	bind_opt(s, 12, e->peer, e->peer >= 0);
	bind_opt(s, 13, e->comm_id, e->comm_id >= 0);
	bind_opt(s, 14, e->seq, e->seq >= 0);
	bind_opt(s, 15, e->stack_id, e->stack_id > 0);
	bind_opt(s, 16, e->site_id, e->site_id > 0);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	return rc == SQLITE_DONE ? 0 : db_sql_err(db, rc, "cannot insert an event into", NULL);
}

/* The 16 column values of an event row as db_put_event stores them; present[c] = 0 → NULL. */
static inline void event_values(const struct db_event *e, int64_t *v, unsigned char *present)
{
	int comm = db_kind_has_comm(e->kind);
	v[0] = e->rank, present[0] = 1;
	v[1] = e->start_ns, present[1] = 1;
	v[2] = e->tid, present[2] = 1;
	v[3] = e->kind, present[3] = 1;
	v[4] = e->name_id, present[4] = 1;
	v[5] = e->dur_ns, present[5] = 1;
	v[6] = e->step, present[6] = e->step >= 0;
	v[7] = e->mb, present[7] = e->mb >= 0;
	v[8] = e->layer, present[8] = e->layer >= 0;
	v[9] = e->bytes, present[9] = (unsigned char)comm;
	v[10] = e->flops, present[10] = e->flops > 0;
	v[11] = e->peer, present[11] = e->peer >= 0;
	v[12] = e->comm_id, present[12] = e->comm_id >= 0;
	v[13] = e->seq, present[13] = e->seq >= 0;
	v[14] = e->stack_id, present[14] = e->stack_id > 0;
	v[15] = e->site_id, present[15] = e->site_id > 0;
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
							sqlite3_bind_int64(s, k + 1, v[c]);
							bc->state[k] = 2;
							bc->v[k] = v[c];
						}
					} else if (bc->state[k] != 1) {
						sqlite3_bind_null(s, k + 1);
						bc->state[k] = 1;
					}
				}
			}
			rc = sqlite3_step(s);
			sqlite3_reset(s);
			if (rc != SQLITE_DONE)
				return db_sql_err(db, rc, "cannot insert events into", NULL);
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
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, name_id);
	sqlite3_bind_int64(s, 3, ts_ns);
	sqlite3_bind_double(s, 4, value);
	return db_step_done(db, s, "cannot insert a counter into");
}

int db_put_mem(struct db *db, int rank, int64_t ts_ns, int64_t bytes, int category, int64_t in_use,
	       int64_t stack_id)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_MEM, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, ts_ns);
	sqlite3_bind_int64(s, 3, bytes);
	sqlite3_bind_int64(s, 4, category);
	sqlite3_bind_int64(s, 5, in_use);
	bind_opt(s, 6, stack_id, stack_id > 0);
	return db_step_done(db, s, "cannot insert a memory event into");
}

int db_put_stack_frame(struct db *db, int64_t stack_id, int depth, int64_t frame_id)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_STACK, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, stack_id);
	sqlite3_bind_int64(s, 2, depth);
	sqlite3_bind_int64(s, 3, frame_id);
	return db_step_done(db, s, "cannot insert a stack into");
}

int db_put_frame(struct db *db, int64_t frame_id, uint64_t ip, const char *symbol, const char *module,
		 int64_t offset)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_FRAME, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, frame_id);
	sqlite3_bind_int64(s, 2, (int64_t)ip);
	sqlite3_bind_text(s, 3, symbol, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 4, module, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 5, offset);
	return db_step_done(db, s, "cannot insert a frame into");
}

int db_put_sample(struct db *db, int rank, int tid, int64_t ts_ns, int64_t stack_id)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_SAMPLE, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, tid);
	sqlite3_bind_int64(s, 3, ts_ns);
	sqlite3_bind_int64(s, 4, stack_id);
	sqlite3_bind_null(s, 5);
	return db_step_done(db, s, "cannot insert a sample into");
}

int db_put_overhead(struct db *db, int rank, int64_t ts_ns, int64_t dur_ns, const char *what)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_OVERHEAD, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, ts_ns);
	sqlite3_bind_int64(s, 3, dur_ns);
	sqlite3_bind_text(s, 4, what, -1, SQLITE_TRANSIENT);
	sqlite3_bind_null(s, 5);
	return db_step_done(db, s, "cannot insert overhead into");
}

int db_put_thread(struct db *db, int rank, int tid, int64_t os_tid, const char *name)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_THREAD, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, tid);
	sqlite3_bind_int64(s, 3, os_tid);
	sqlite3_bind_text(s, 4, name, -1, SQLITE_TRANSIENT);
	return db_step_done(db, s, "cannot insert a thread into");
}

int db_put_rank(struct db *db, const struct db_rank_info *r)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_RANK, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, r->rank);
	sqlite3_bind_text(s, 2, r->host, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, r->pid);
	sqlite3_bind_int64(s, 4, r->dp_rank);
	sqlite3_bind_int64(s, 5, r->tp_rank);
	sqlite3_bind_int64(s, 6, r->pp_rank);
	sqlite3_bind_int64(s, 7, r->threads);
	sqlite3_bind_int64(s, 8, r->t0_ns);
	sqlite3_bind_int64(s, 9, r->t0_utc_ns);
	sqlite3_bind_int64(s, 10, r->clock_offset_ns);
	sqlite3_bind_int64(s, 11, r->clock_err_ns);
	sqlite3_bind_int64(s, 12, r->clock_offset_end_ns);
	sqlite3_bind_int64(s, 13, r->clock_err_end_ns);
	sqlite3_bind_int64(s, 14, r->end_ns);
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
	sqlite3_bind_text(s, 1, command_line, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 2, config_json, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 3, world_size);
	sqlite3_bind_text(s, 4, now, -1, SQLITE_TRANSIENT);
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
		sqlite3_bind_int64(s, 1, rank);
		sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
		sqlite3_bind_int64(s, 3, comm_id);
		if ((rc = db_step_done(db, s, "cannot replace a communicator in")))
			return rc;
	}
	rc = db_stmt(db, S_COMM, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, comm_id);
	sqlite3_bind_text(s, 3, name, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int64(s, 4, size);
	sqlite3_bind_int64(s, 5, rank_in_comm);
	return db_step_done(db, s, "cannot insert a communicator into");
}

int db_put_step_agg(struct db *db, int rank, int64_t step, int kind, int64_t name_id, int64_t count,
		    int64_t total_ns)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_STEP_AGG, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, step);
	sqlite3_bind_int64(s, 3, kind);
	sqlite3_bind_int64(s, 4, name_id);
	sqlite3_bind_int64(s, 5, count);
	sqlite3_bind_int64(s, 6, total_ns);
	return db_step_done(db, s, "cannot insert a step aggregate into");
}

int db_put_note(struct db *db, int rank, int64_t ts_ns, const char *level, const char *text)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_NOTE, &s);
	if (rc)
		return rc;
	sqlite3_bind_int64(s, 1, rank);
	sqlite3_bind_int64(s, 2, ts_ns);
	sqlite3_bind_text(s, 3, level, -1, SQLITE_TRANSIENT);
	sqlite3_bind_text(s, 4, text, -1, SQLITE_TRANSIENT);
	return db_step_done(db, s, "cannot insert a note into");
}

/* ---------------------------------------------------------------------------------------- */
/* finalize: indexes, then step_stat for every rank and step. */

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
	const char *sql_steps = "SELECT rank, step, start_ns, dur_ns FROM event WHERE kind = 3"
				" AND (?1 < 0 OR rank = ?1) AND (?2 < 0 OR step BETWEEN ?2 AND ?3)"
				" ORDER BY step, rank, start_ns";
	/* lane: a collective recorded on a communicator's lane (a thread row no OS thread owns, named
	 * "comm ..."), which blocks no thread by itself: the waits say when one was blocked */
	const char *sql_q = "SELECT start_ns, dur_ns, kind, name_id, kind = 1 AND EXISTS(SELECT 1 FROM thread t WHERE"
			    " t.rank = event.rank AND t.tid = event.tid AND t.os_tid = 0 AND t.name LIKE 'comm %'), tid"
			    " FROM event WHERE rank = ?1 AND start_ns >= ?2 AND start_ns < ?3 AND kind IN (0, 1, 2, 10, 11, 12, 13)";
	/* A rank with device lanes (an imported GPU trace) is split on its devices: computing = kernels,
	 * copies and memsets, communication = collectives on device lanes; its CPU operators and the
	 * host side of its collectives are not device time. */
	struct db_device_lane *lanes = NULL;
	int nlanes = 0;
	if ((rc = db_device_lanes(db, &lanes, &nlanes)) != 0) {
		free(isrecv);
		return rc;
	}
	rc = sqlite3_prepare_v2(db->h, sql_steps, -1, &steps, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_prepare_v2(db->h, sql_q, -1, &q, NULL);
	if (rc != SQLITE_OK) {
		rc = db_sql_err(db, rc, "cannot read steps of", NULL);
		goto done;
	}
	sqlite3_bind_int64(steps, 1, f.rank);
	sqlite3_bind_int64(steps, 2, f.step_lo);
	sqlite3_bind_int64(steps, 3, f.step_hi);
	struct ivec op = { 0 }, cm = { 0 }, bl = { 0 }, rv = { 0 };
	int cap = 0;
	rc = 0;
	int src;
	while ((src = sqlite3_step(steps)) == SQLITE_ROW) {
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
		sqlite3_bind_int64(q, 1, rank);
		sqlite3_bind_int64(q, 2, s0);
		sqlite3_bind_int64(q, 3, s0 + d);
		int qrc;
		int64_t s1 = s0 + d;
		int on_device = 0;   /* does this rank have device lanes? */
		for (int i = 0; i < nlanes && !on_device; i++)
			on_device = lanes[i].rank == rank;
		while ((qrc = sqlite3_step(q)) == SQLITE_ROW) {
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

int db_finalize(struct db *db)
{
	int rc = db_create_tables(db);   /* a file from before op_stat existed */
	if (!rc)
		rc = db_exec(db, db_schema_indexes());
	if (rc)
		return rc;
	struct db_step_stat *ss;
	int n;
	rc = db_compute_step_stats(db, DB_FILTER_ALL, &ss, &n);
	if (rc)
		return rc;
	rc = db_begin(db);
	if (!rc)
		rc = db_build_op_stat(db);
	if (!rc)
		rc = db_exec(db, "DELETE FROM step_stat");
	sqlite3_stmt *s = NULL;
	if (!rc)
		rc = db_stmt(db, S_STEP_STAT, &s);
	for (int i = 0; !rc && i < n; i++) {
		const struct db_step_stat *o = &ss[i];
		int64_t v[11] = { o->rank, o->step, o->start_ns, o->total_ns, o->computing_ns, o->comm_ns,
				  o->overlapped_ns, o->comm_not_overlapped_ns, o->free_ns, o->bubble_ns,
				  o->preparing_ns };
		for (int k = 0; k < 11; k++)
			sqlite3_bind_int64(s, k + 1, v[k]);
		rc = db_step_done(db, s, "cannot write step statistics to");
	}
	free(ss);
	if (!rc)
		rc = db_commit(db);
	else
		db_rollback(db);
	if (!rc)
		rc = db_exec(db, "PRAGMA optimize");
	return rc;
}
