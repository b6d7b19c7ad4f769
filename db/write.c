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

int db_put_event(struct db *db, const struct db_event *e)
{
	sqlite3_stmt *s = NULL;
	int rc = db->events_added ? 0 : db_op_stat_invalidate(db);
	if (!rc)
		rc = db_stmt(db, S_EVENT, &s);
	if (rc)
		return rc;
	int comm = db_kind_has_comm(e->kind);
	db_bind_i64(db, s, 1, e->rank);
	db_bind_i64(db, s, 2, e->start_ns);
	db_bind_i64(db, s, 3, e->tid);
	db_bind_i64(db, s, 4, e->kind);
	db_bind_i64(db, s, 5, e->name_id);
	db_bind_i64(db, s, 6, e->dur_ns);
	db_bind_opt_i64(db, s, 7, e->step, e->step >= 0);
	db_bind_opt_i64(db, s, 8, e->mb, e->mb >= 0);
	db_bind_opt_i64(db, s, 9, e->layer, e->layer >= 0);
	db_bind_opt_i64(db, s, 10, e->bytes, comm);
	db_bind_opt_i64(db, s, 11, e->flops, e->flops > 0);
	db_bind_opt_i64(db, s, 12, e->peer, e->peer >= 0);
	db_bind_opt_i64(db, s, 13, e->comm_id, e->comm_id >= 0);
	db_bind_opt_i64(db, s, 14, e->seq, e->seq >= 0);
	db_bind_opt_i64(db, s, 15, e->stack_id, e->stack_id > 0);
	db_bind_opt_i64(db, s, 16, e->site_id, e->site_id > 0);
	rc = db_step(db, s);
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

int db_put_mem(struct db *db, int rank, int64_t ts_ns, int64_t bytes, int category, int64_t in_use,
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

int db_put_sample(struct db *db, int rank, int tid, int64_t ts_ns, int64_t stack_id)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_SAMPLE, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, tid);
	db_bind_i64(db, s, 3, ts_ns);
	db_bind_i64(db, s, 4, stack_id);
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
/* finalize: indexes, op_stat, then step_stat for every rank and step (db/steps.c) */

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
			db_bind_i64(db, s, k + 1, v[k]);
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
