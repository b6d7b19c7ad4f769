/* db/view_query.c — the viewer's read queries (db.h, section "queries for the viewer"): each is a
 * query on the summary tables db_view_prepare built (view_*), or a paged query on an indexed
 * column of event (the (rank, start_ns) primary key, the (name_id, dur_ns) index), so no screen of
 * `ascent view` reads the whole database. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

static char *dup_col(sqlite3_stmt *s, int i)
{
	const char *t = (const char *)sqlite3_column_text(s, i);
	return strdup(t ? t : "");
}

static int64_t info(struct db *db, const char *key, int64_t dflt)
{
	sqlite3_stmt *s = NULL;
	if (db_prep(db, "SELECT value FROM view_info WHERE key = ?1", &s))
		return dflt;
	db_bind_text_static(db, s, 1, key);
	int64_t v = dflt;
	if (db_step(db, s) == SQLITE_ROW)
		v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

static void bind_filter(struct db *db, sqlite3_stmt *s, struct db_filter f)
{
	db_bind_i64(db, s, 1, f.rank);
	db_bind_i64(db, s, 2, f.step_lo);
	db_bind_i64(db, s, 3, f.step_lo < 0 ? -1 : f.step_hi);
}

#define FILTER_SQL " (?1 < 0 OR rank = ?1) AND (?2 < 0 OR step BETWEEN ?2 AND ?3) "

/* ---------------------------------------------------------------------------------------- */

int db_view_run(struct db *db, struct db_view_run *r)
{
	memset(r, 0, sizeof *r);
	r->step_lo = r->step_hi = -1;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT command_line, config_json, created_utc, world_size FROM run ORDER BY id LIMIT 1", &s);
	if (rc)
		return rc;
	int src = db_step(db, s);
	if (src == SQLITE_ROW) {
		r->command_line = dup_col(s, 0);
		r->config_json = dup_col(s, 1);
		r->created_utc = dup_col(s, 2);
		r->world_size = sqlite3_column_int(s, 3);
	}
	rc = db_finish(db, s, src, 0);
	if (!r->command_line) {
		r->command_line = strdup("");
		r->config_json = strdup("");
		r->created_utc = strdup("");
	}
	char *h = db_get_meta(db, "host"), *v = db_get_meta(db, "tool_version");
	r->host = h ? h : strdup("");
	r->tool_version = v ? v : strdup("");
	if (!*r->created_utc) {
		char *c = db_get_meta(db, "created_utc");
		if (c) {
			free(r->created_utc);
			r->created_utc = c;
		}
	}
	if (!r->command_line || !r->config_json || !r->created_utc || !r->host || !r->tool_version) {
		db_view_run_free(r);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (rc)
		return rc;
	if ((rc = db_prep(db, "SELECT count(DISTINCT rank), count(*), coalesce(sum(n), 0) FROM view_lane", &s)) != 0)
		return rc;
	if ((src = db_step(db, s)) == SQLITE_ROW) {
		r->nranks = sqlite3_column_int(s, 0);
		r->nlanes = sqlite3_column_int(s, 1);
		r->nevents = sqlite3_column_int64(s, 2);
	}
	if ((rc = db_finish(db, s, src, 0)) != 0)
		return rc;
	if ((rc = db_prep(db, "SELECT count(*), coalesce(min(step), -1), coalesce(max(step), -1) FROM view_step", &s)) != 0)
		return rc;
	if ((src = db_step(db, s)) == SQLITE_ROW) {
		r->nsteps = sqlite3_column_int64(s, 0);
		r->step_lo = sqlite3_column_int64(s, 1);
		r->step_hi = sqlite3_column_int64(s, 2);
	}
	if ((rc = db_finish(db, s, src, 0)) != 0)
		return rc;
	r->t0_ns = info(db, "t0_ns", 0);
	r->t1_ns = info(db, "t1_ns", 0);
	if (!r->world_size)
		r->world_size = r->nranks;
	return 0;
}

void db_view_run_free(struct db_view_run *r)
{
	if (!r)
		return;
	free(r->command_line);
	free(r->config_json);
	free(r->created_utc);
	free(r->host);
	free(r->tool_version);
	memset(r, 0, sizeof *r);
}

/* ---------------------------------------------------------------------------------------- */

int db_view_ops(struct db *db, struct db_filter f, unsigned kind_mask, struct db_view_op **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	/* The whole run: op_stat (db_finalize's) holds these sums per rank and for all ranks (−1), a
	 * row per name; view_op a row per rank, step and name (at 1,024 ranks its sums took 0.5 s). */
	int whole = 0, rc = 0;
	if (f.step_lo < 0) {
		if ((rc = db_prep(db, "SELECT 1 FROM op_stat WHERE rank = max(?1, -1) LIMIT 1", &s)) != 0)
			return rc;
		db_bind_i64(db, s, 1, f.rank);
		int src = db_step(db, s);
		whole = src == SQLITE_ROW;
		if ((rc = db_finish(db, s, src, 0)) != 0)
			return rc;
		s = NULL;
	}
	if (whole)
		rc = db_prep(db, "SELECT o.kind, o.name_id, coalesce(st.value, '?'), count, total_ns, self_ns, min_ns, max_ns,"
			      " flops, flops_ns,"
			      " (SELECT med_ns FROM view_opq q WHERE q.rank = max(?1, -1) AND q.kind = o.kind AND q.name_id = o.name_id),"
			      " (SELECT p95_ns FROM view_opq q WHERE q.rank = max(?1, -1) AND q.kind = o.kind AND q.name_id = o.name_id)"
			      " FROM op_stat o LEFT JOIN string st ON st.id = o.name_id"
			      " WHERE o.rank = max(?1, -1) AND ?2 < 0 AND ?3 = ?3 AND ((1 << o.kind) & ?4) != 0", &s);
	else   /* all ranks: view_opstep's rows, a row per step and name, not one per rank besides */
		rc = db_prep(db, f.rank < 0 ? "SELECT o.kind, o.name_id, coalesce(st.value, '?'), sum(count), sum(total_ns),"
			  " sum(self_ns), min(min_ns), max(max_ns), sum(flops), sum(flops_ns),"
			  " CASE WHEN ?2 < 0 THEN (SELECT med_ns FROM view_opq q WHERE q.rank = -1 AND"
			  "  q.kind = o.kind AND q.name_id = o.name_id) END,"
			  " CASE WHEN ?2 < 0 THEN (SELECT p95_ns FROM view_opq q WHERE q.rank = -1 AND"
			  "  q.kind = o.kind AND q.name_id = o.name_id) END"
			  " FROM view_opstep o LEFT JOIN string st ON st.id = o.name_id"
			  " WHERE ?1 < 0 AND (?2 < 0 OR step BETWEEN ?2 AND ?3) AND ((1 << o.kind) & ?4) != 0"
			  " GROUP BY o.kind, o.name_id"
			  : "SELECT o.kind, o.name_id, coalesce(st.value, '?'), sum(count), sum(total_ns), sum(self_ns),"
			  " min(min_ns), max(max_ns), sum(flops), sum(flops_ns),"
			  " CASE WHEN ?2 < 0 THEN (SELECT med_ns FROM view_opq q WHERE q.rank = max(?1, -1) AND"
			  "  q.kind = o.kind AND q.name_id = o.name_id) END,"
			  " CASE WHEN ?2 < 0 THEN (SELECT p95_ns FROM view_opq q WHERE q.rank = max(?1, -1) AND"
			  "  q.kind = o.kind AND q.name_id = o.name_id) END"
			  " FROM view_op o LEFT JOIN string st ON st.id = o.name_id"
			  " WHERE" FILTER_SQL "AND ((1 << o.kind) & ?4) != 0 GROUP BY o.kind, o.name_id", &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	db_bind_i64(db, s, 4, kind_mask);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading the profile")) != 0)
			break;
		struct db_view_op *o = &(*out)[(*n)++];
		o->kind = sqlite3_column_int(s, 0);
		o->name_id = sqlite3_column_int64(s, 1);
		o->name = dup_col(s, 2);
		o->count = sqlite3_column_int64(s, 3);
		o->total_ns = sqlite3_column_int64(s, 4);
		o->self_ns = sqlite3_column_int64(s, 5);
		o->min_ns = sqlite3_column_int64(s, 6);
		o->max_ns = sqlite3_column_int64(s, 7);
		o->flops = sqlite3_column_double(s, 8);
		o->flops_ns = sqlite3_column_int64(s, 9);
		o->med_ns = sqlite3_column_type(s, 10) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 10);
		o->p95_ns = sqlite3_column_type(s, 11) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 11);
		if (!o->name) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		db_view_ops_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_view_ops_free(struct db_view_op *v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

int db_view_comms(struct db *db, struct db_filter f, int by_comm, struct db_view_comm **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	/* each communicator's first name (its lowest rank's row, as a scan of comm's key finds it), size
	 * and members (by rank in it) once, not a scan of comm for each row (2,048 rows by 1,024 at
	 * 1,024 ranks: 93 ms) */
#define COMM_CTE                                                                                                   \
	"WITH cn(comm_id, name, r0) AS MATERIALIZED (SELECT comm_id, name, min(rank) FROM comm GROUP BY comm_id),"  \
	" cs(comm_id, size) AS MATERIALIZED (SELECT comm_id, max(size) FROM comm GROUP BY comm_id),"                \
	" cm(comm_id, members) AS MATERIALIZED (SELECT comm_id, group_concat(rank, ',') FROM (SELECT comm_id, rank" \
	" FROM comm ORDER BY comm_id, rank_in_comm) GROUP BY comm_id) "
	const char *sql = by_comm
		? COMM_CTE "SELECT coalesce(cn.name, ''), min(kind), 0, v.comm_id, coalesce(cs.size, 1),"
		  " sum(count), sum(total_ns), sum(bytes), sum(matched), sum(wait_ns), sum(transit_ns), sum(late_ns), 0,"
		  " coalesce(cm.members, ''), sum(queue_ns)"
		  " FROM view_comm v LEFT JOIN cn ON cn.comm_id = v.comm_id LEFT JOIN cs ON cs.comm_id = v.comm_id"
		  " LEFT JOIN cm ON cm.comm_id = v.comm_id WHERE" FILTER_SQL "AND v.comm_id >= 0 GROUP BY v.comm_id"
		: COMM_CTE "SELECT coalesce(st.value, '?'), kind, bucket, -1, coalesce(max(cs.size), 1),"
		  " sum(count), sum(total_ns), sum(bytes), sum(matched), sum(wait_ns), sum(transit_ns), sum(late_ns), v.name_id,"
		  " '', sum(queue_ns)"
		  " FROM view_comm v LEFT JOIN string st ON st.id = v.name_id LEFT JOIN cs ON cs.comm_id = v.comm_id WHERE"
		  FILTER_SQL " GROUP BY kind, v.name_id, bucket";
#undef COMM_CTE
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading the profile")) != 0)
			break;
		struct db_view_comm *c = &(*out)[(*n)++];
		c->name = dup_col(s, 0);
		c->kind = sqlite3_column_int(s, 1);
		c->bucket = sqlite3_column_int64(s, 2);
		c->comm_id = sqlite3_column_int(s, 3);
		c->group_size = sqlite3_column_int(s, 4);
		if (c->group_size < 1)
			c->group_size = 1;
		c->count = sqlite3_column_int64(s, 5);
		c->total_ns = sqlite3_column_int64(s, 6);
		c->bytes = sqlite3_column_int64(s, 7);
		c->matched = sqlite3_column_int64(s, 8);
		c->wait_ns = sqlite3_column_int64(s, 9);
		c->transit_ns = sqlite3_column_int64(s, 10);
		c->late_ns = sqlite3_column_int64(s, 11);
		c->name_id = sqlite3_column_int64(s, 12);
		c->members = dup_col(s, 13);
		c->queue_ns = sqlite3_column_int64(s, 14);
		if (!c->name || !c->members) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		db_view_comms_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_view_comms_free(struct db_view_comm *v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].members);
	}
	free(v);
}

/* ---------------------------------------------------------------------------------------- */

int db_view_steps(struct db *db, struct db_filter f, struct db_view_step **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT s.step, s.rank, s.total_ns, s.computing_ns, s.comm_not_overlapped_ns, s.overlapped_ns,"
			  " s.free_ns, s.bubble_ns, s.preparing_ns, v.loss FROM step_stat s LEFT JOIN view_step v"
			  " ON v.step = s.step WHERE (?1 < 0 OR s.rank = ?1) AND (?2 < 0 OR s.step BETWEEN ?2 AND ?3)"
			  " ORDER BY s.step, s.rank", &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	int cap = 0, src;
	struct db_view_step *cur = NULL;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		int64_t step = sqlite3_column_int64(s, 0);
		int64_t tot = sqlite3_column_int64(s, 2);
		if (!cur || cur->step != step) {
			if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading the profile")) != 0)
				break;
			cur = &(*out)[(*n)++];
			memset(cur, 0, sizeof *cur);
			cur->step = step;
			cur->min_total_ns = INT64_MAX;
			cur->max_total_ns = -1;
			cur->has_loss = sqlite3_column_type(s, 9) != SQLITE_NULL;
			cur->loss = sqlite3_column_double(s, 9);
		}
		cur->nranks++;
		if (tot > cur->max_total_ns) {
			cur->max_total_ns = tot;
			cur->slow_rank = sqlite3_column_int(s, 1);
		}
		if (tot < cur->min_total_ns)
			cur->min_total_ns = tot;
		cur->computing_ns += sqlite3_column_int64(s, 3);
		cur->comm_not_overlapped_ns += sqlite3_column_int64(s, 4);
		cur->overlapped_ns += sqlite3_column_int64(s, 5);
		cur->free_ns += sqlite3_column_int64(s, 6);
		cur->bubble_ns += sqlite3_column_int64(s, 7);
		cur->preparing_ns += sqlite3_column_int64(s, 8);
	}
	rc = db_finish(db, s, src, rc);
	for (int i = 0; !rc && i < *n; i++) {
		struct db_view_step *x = &(*out)[i];
		x->computing_ns /= x->nranks;
		x->comm_not_overlapped_ns /= x->nranks;
		x->overlapped_ns /= x->nranks;
		x->free_ns /= x->nranks;
		x->bubble_ns /= x->nranks;
		x->preparing_ns /= x->nranks;
	}
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_view_step_work(struct db *db, struct db_filter f, struct db_step_work **out, int *n)
{
	*out = NULL;
	*n = 0;
	int cached = 0;
	int rc = db_view_current(db, &cached);
	if (rc)
		return rc;
	if (!cached)
		return db_step_work(db, f, out, n);
	sqlite3_stmt *s = NULL;
	/* db_step_work's step filter keeps the rows of the selected steps only (place 0: DB_SW_STEP) */
	rc = db_prep(db, "SELECT rank, place, step, step_start_ns, step_end_ns, events, device_ns, busy_ns, compute_ns,"
			  " in_window_ns, first_start_ns, last_end_ns FROM view_stepwork WHERE (?1 < 0 OR rank = ?1)"
			  " AND (?2 < 0 OR (place = 0 AND step BETWEEN ?2 AND ?3)) ORDER BY seq", &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 256, "reading device work per step")) != 0)
			break;
		struct db_step_work *w = &(*out)[(*n)++];
		w->rank = sqlite3_column_int(s, 0);
		w->where = sqlite3_column_int(s, 1);
		w->step = sqlite3_column_int64(s, 2);
		w->step_start_ns = sqlite3_column_int64(s, 3);
		w->step_end_ns = sqlite3_column_int64(s, 4);
		w->events = sqlite3_column_int64(s, 5);
		w->device_ns = sqlite3_column_int64(s, 6);
		w->busy_ns = sqlite3_column_int64(s, 7);
		w->compute_ns = sqlite3_column_int64(s, 8);
		w->in_window_ns = sqlite3_column_int64(s, 9);
		w->first_start_ns = sqlite3_column_int64(s, 10);
		w->last_end_ns = sqlite3_column_int64(s, 11);
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* The device of (rank, device) in d[0..n) (ordered by rank, device), or NULL. */
static struct db_device_stat *device_of(struct db_device_stat *d, int n, int rank, int device)
{
	int lo = 0, hi = n - 1;
	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;
		if (d[mid].rank == rank && d[mid].device == device)
			return &d[mid];
		if (d[mid].rank < rank || (d[mid].rank == rank && d[mid].device < device))
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return NULL;
}

/* The whole run's device rows (step < 0) or one step's (view_devstep, ...: the same columns and a
 * trailing step). */
static int read_devices(struct db *db, struct db_filter f, int64_t step, struct db_device_stat **out, int *n)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, step < 0 ? "SELECT * FROM view_device WHERE (?1 < 0 OR rank = ?1) AND ?2 < 0 ORDER BY rank, device"
				      : "SELECT * FROM view_devstep WHERE (?1 < 0 OR rank = ?1) AND step = ?2 ORDER BY rank, device",
			 &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	db_bind_i64(db, s, 2, step);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 16, "reading device work")) != 0)
			break;
		struct db_device_stat *x = &(*out)[(*n)++];
		memset(x, 0, sizeof *x);
		int64_t v[23];
		for (int k = 0; k < 23; k++)
			v[k] = sqlite3_column_int64(s, k);
		x->rank = (int)v[0];
		x->device = (int)v[1];
		x->counted = v[2];
		x->after_last_step = v[3];
		x->unlinked = v[4];
		x->span_ns = v[5];
		x->busy_ns = v[6];
		x->compute_ns = v[7];
		x->comm_ns = v[8];
		x->comm_under_compute_ns = v[9];
		for (int k = 1; k < 8; k++)
			x->class_ns[k] = v[9 + k];
		x->idle_by_cause_ns[DB_IDLE_HOST_WAIT] = v[17];
		x->idle_by_cause_ns[DB_IDLE_KERNEL_WAIT] = v[18];
		x->idle_by_cause_ns[DB_IDLE_OTHER] = v[19];
		x->linked = v[20];
		x->launch_delay_p50_ns = v[21];
		x->launch_delay_p95_ns = v[22];
	}
	rc = db_finish(db, s, src, rc);
	if (rc || !*n)
		return rc;
	rc = db_prep(db, step < 0 ? "SELECT rank, device, kind, count, bytes, total_ns, no_bytes, bw_samples, bw_mean_gbs,"
				     " bw_min_gbs, bw_max_gbs FROM view_devcopy WHERE (?1 < 0 OR rank = ?1) AND ?2 < 0"
				   : "SELECT rank, device, kind, count, bytes, total_ns, no_bytes, bw_samples, bw_mean_gbs,"
				     " bw_min_gbs, bw_max_gbs FROM view_devcopystep WHERE (?1 < 0 OR rank = ?1) AND step = ?2", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	db_bind_i64(db, s, 2, step);
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		struct db_device_stat *x = device_of(*out, *n, sqlite3_column_int(s, 0), sqlite3_column_int(s, 1));
		int k = sqlite3_column_int(s, 2);
		if (!x || k < 0 || k >= DB_COPY_KINDS)
			continue;   /* none: the tables are written together */
		struct db_copy_stat *c = &x->copies[k];
		c->count = sqlite3_column_int64(s, 3);
		c->bytes = sqlite3_column_int64(s, 4);
		c->total_ns = sqlite3_column_int64(s, 5);
		c->no_bytes = sqlite3_column_int64(s, 6);
		c->bw_samples = sqlite3_column_int64(s, 7);
		c->bw_mean_gbs = sqlite3_column_double(s, 8);
		c->bw_min_gbs = sqlite3_column_double(s, 9);
		c->bw_max_gbs = sqlite3_column_double(s, 10);
	}
	if ((rc = db_finish(db, s, src, rc)) != 0)
		return rc;
	char *sql = sqlite3_mprintf("SELECT rank, device, stream, kernels, linked, queue_len_mean, queue_len_max,"
				    " launch_delay_p50_ns, launch_delay_p95_ns, short_kernels, idle_host_wait_ns, idle_kernel_wait_ns,"
				    " idle_other_ns FROM %s WHERE (?1 < 0 OR rank = ?1) AND %s ORDER BY rank, device, stream",
				    step < 0 ? "view_stream" : "view_streamstep", step < 0 ? "?2 < 0" : "step = ?2");
	rc = sql ? db_prep(db, sql, &s) : ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
	sqlite3_free(sql);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	db_bind_i64(db, s, 2, step);
	struct db_device_stat *x = NULL;
	int scap = 0;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		int rank = sqlite3_column_int(s, 0), device = sqlite3_column_int(s, 1);
		if (!x || x->rank != rank || x->device != device) {
			x = device_of(*out, *n, rank, device);
			scap = 0;
		}
		if (!x)
			continue;
		if ((rc = ARRAY_GROW(x->streams, x->nstreams, scap, 4, "reading device work")) != 0)
			break;
		struct db_stream_stat *t = &x->streams[x->nstreams++];
		memset(t, 0, sizeof *t);
		t->stream = sqlite3_column_int(s, 2);
		t->kernels = sqlite3_column_int64(s, 3);
		t->linked = sqlite3_column_int64(s, 4);
		t->queue_len_mean = sqlite3_column_double(s, 5);
		t->queue_len_max = sqlite3_column_int64(s, 6);
		t->launch_delay_p50_ns = sqlite3_column_int64(s, 7);
		t->launch_delay_p95_ns = sqlite3_column_int64(s, 8);
		t->short_kernels = sqlite3_column_int64(s, 9);
		t->idle_ns[DB_IDLE_HOST_WAIT] = sqlite3_column_int64(s, 10);
		t->idle_ns[DB_IDLE_KERNEL_WAIT] = sqlite3_column_int64(s, 11);
		t->idle_ns[DB_IDLE_OTHER] = sqlite3_column_int64(s, 12);
	}
	return db_finish(db, s, src, rc);
}

int db_view_device_stats(struct db *db, struct db_filter f, struct db_device_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	/* the tables hold the whole run's figures, when they are current and the ranks were small enough
	 * to build them */
	int cached = 0;
	int rc = f.step_lo >= 0 && f.step_lo != f.step_hi ? 0 : db_view_current(db, &cached);
	if (rc)
		return rc;
	/* one step: its rows when they were built (none for a step the profile lacks: computed) */
	int64_t step = f.step_lo >= 0 ? f.step_lo : -1;
	if (!cached || !info(db, "devices_cached", 1) || (step >= 0 && !info(db, "devices_by_step", 0)))
		return db_device_stats(db, f, out, n);
	rc = read_devices(db, f, step, out, n);
	if (!rc && step >= 0 && !*n) {
		db_device_stats_free(*out, *n);
		*out = NULL;
		return db_device_stats(db, f, out, n);
	}
	if (rc) {
		db_device_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int read_critpath(struct db *db, struct db_filter f, struct db_critpath **out, int *n)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT * FROM view_critpath WHERE ?1 < 0 OR rank = ?1 ORDER BY rank", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 16, "reading critical paths")) != 0)
			break;
		struct db_critpath *c = &(*out)[(*n)++];
		memset(c, 0, sizeof *c);
		int64_t v[16];
		for (int k = 0; k < 16; k++)
			v[k] = sqlite3_column_int64(s, k);
		c->rank = (int)v[0];
		c->cycle = (int)v[1];
		c->window_lo_ns = v[2];
		c->window_hi_ns = v[3];
		c->start_ns = v[4];
		c->end_ns = v[5];
		c->length_ns = v[6];
		c->cause_ns[DB_CP_CPU] = v[7];
		c->cause_ns[DB_CP_GPU_COMPUTE] = v[8];
		c->cause_ns[DB_CP_GPU_COMM] = v[9];
		c->cause_ns[DB_CP_KERNEL_KERNEL] = v[10];
		c->cause_ns[DB_CP_LAUNCH] = v[11];
		c->nodes = v[12];
		c->edges = v[13];
		c->path_nodes = v[14];
		c->path_events = v[15];
	}
	rc = db_finish(db, s, src, rc);
	if (rc || !*n)
		return rc;
	rc = db_prep(db, "SELECT rank, name, cause, ns, events FROM view_cptop WHERE ?1 < 0 OR rank = ?1 ORDER BY rank, i", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	int at = 0;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		int rank = sqlite3_column_int(s, 0);
		while (at < *n && (*out)[at].rank < rank)
			at++;
		if (at >= *n || (*out)[at].rank != rank)
			continue;   /* none: the tables are written together */
		struct db_critpath *c = &(*out)[at];
		if (!c->top && !(c->top = calloc(DB_VIEW_CP_TOP, sizeof *c->top))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory reading critical paths");
			break;
		}
		if (c->ntop >= DB_VIEW_CP_TOP)
			continue;
		const char *name = (const char *)sqlite3_column_text(s, 1);
		struct db_cp_top *t = &c->top[c->ntop];
		if (!(t->name = strdup(name ? name : ""))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory reading critical paths");
			break;
		}
		c->ntop++;
		t->cause = sqlite3_column_int(s, 2);
		t->ns = sqlite3_column_int64(s, 3);
		t->events = sqlite3_column_int64(s, 4);
	}
	return db_finish(db, s, src, rc);
}

int db_view_critpath(struct db *db, struct db_filter f, struct db_critpath **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (f.step_lo >= 0) {   /* the tables hold each whole rank's path */
		const struct db_critpath_opts o = { .top = DB_VIEW_CP_TOP };
		return db_critpath(db, f, &o, out, n);
	}
	int rc = read_critpath(db, f, out, n);
	if (rc) {
		db_critpath_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_view_critpath_skipped(struct db *db)
{
	return (int)info(db, "critpath_skipped", 0);
}

/* ---------------------------------------------------------------------------------------- */

int db_view_ranks(struct db *db, struct db_filter f, struct db_view_rank **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "WITH rk(rank) AS (SELECT rank FROM rank UNION SELECT DISTINCT rank FROM view_lane)"
			  " SELECT rk.rank, coalesce((SELECT host FROM rank r WHERE r.rank = rk.rank), ''),"
			  " count(s.step), coalesce(sum(s.total_ns), 0), coalesce(sum(s.computing_ns), 0),"
			  " coalesce(sum(s.comm_ns), 0), coalesce(sum(s.comm_not_overlapped_ns), 0),"
			  " coalesce(sum(s.overlapped_ns), 0), coalesce(sum(s.free_ns), 0), coalesce(sum(s.bubble_ns), 0),"
			  " (SELECT coalesce(sum(late_ns), 0) FROM view_comm c WHERE c.rank = rk.rank AND"
			  "  (?2 < 0 OR c.step BETWEEN ?2 AND ?3)),"
			  " (SELECT coalesce(sum(matched), 0) FROM view_comm c WHERE c.rank = rk.rank AND"
			  "  (?2 < 0 OR c.step BETWEEN ?2 AND ?3)),"
			  " (SELECT coalesce(sum(wait_ns), 0) FROM view_comm c WHERE c.rank = rk.rank AND"
			  "  (?2 < 0 OR c.step BETWEEN ?2 AND ?3))"
			  " FROM rk LEFT JOIN step_stat s ON s.rank = rk.rank AND (?2 < 0 OR s.step BETWEEN ?2 AND ?3)"
			  " GROUP BY rk.rank ORDER BY rk.rank", &s);
	if (rc)
		return rc;
	struct db_filter g = f;
	g.rank = -1;
	bind_filter(db, s, g);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading the profile")) != 0)
			break;
		struct db_view_rank *r = &(*out)[(*n)++];
		r->rank = sqlite3_column_int(s, 0);
		r->host = dup_col(s, 1);
		int64_t *v[] = { &r->steps, &r->total_ns, &r->computing_ns, &r->comm_ns, &r->comm_not_overlapped_ns,
				 &r->overlapped_ns, &r->free_ns, &r->bubble_ns, &r->late_ns, &r->late_calls, &r->wait_ns };
		for (int k = 0; k < 11; k++)
			*v[k] = sqlite3_column_int64(s, 2 + k);
		if (!r->host) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		db_view_ranks_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_view_rank_steps(struct db *db, struct db_filter f, struct db_view_rank_step **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, step, computing_ns FROM step_stat WHERE (?2 < 0 OR step BETWEEN ?2 AND ?3)"
			  " AND ?1 = ?1 ORDER BY step, rank", &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 256, "reading the profile")) != 0)
			break;
		(*out)[(*n)++] = (struct db_view_rank_step){ sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1),
							      sqlite3_column_int64(s, 2) };
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_view_ranks_free(struct db_view_rank *v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i].host);
	free(v);
}

int db_view_matrix(struct db *db, struct db_filter f, int **ranks, int *n, int64_t **bytes, int64_t **count)
{
	*ranks = NULL;
	*bytes = *count = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank FROM rank UNION SELECT DISTINCT rank FROM view_lane ORDER BY 1", &s);
	if (rc)
		return rc;
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*ranks, *n, cap, 32, "reading the profile")) != 0)
			break;
		(*ranks)[(*n)++] = sqlite3_column_int(s, 0);
	}
	rc = db_finish(db, s, src, rc);
	int m = *n;
	if (!rc && m) {
		*bytes = calloc((size_t)m * m, sizeof **bytes);
		*count = calloc((size_t)m * m, sizeof **count);
		if (!*bytes || !*count)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc && m) {
		rc = db_prep(db, "SELECT src, dst, sum(count), sum(bytes) FROM view_pair WHERE (?1 < 0 OR ?1 = ?1) AND"
			      " (?2 < 0 OR step BETWEEN ?2 AND ?3) GROUP BY src, dst", &s);
		if (!rc) {
			bind_filter(db, s, f);
			while ((src = db_step(db, s)) == SQLITE_ROW) {
				int a = sqlite3_column_int(s, 0), b = sqlite3_column_int(s, 1), i = -1, j = -1;
				for (int k = 0; k < m; k++) {
					if ((*ranks)[k] == a)
						i = k;
					if ((*ranks)[k] == b)
						j = k;
				}
				if (i < 0 || j < 0)
					continue;
				(*count)[i * m + j] += sqlite3_column_int64(s, 2);
				(*bytes)[i * m + j] += sqlite3_column_int64(s, 3);
			}
			rc = db_finish(db, s, src, 0);
		}
	}
	if (rc) {
		free(*ranks);
		free(*bytes);
		free(*count);
		*ranks = NULL;
		*bytes = *count = NULL;
		*n = 0;
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* the heat map of the communication matrix */

void db_view_heat_free(struct db_view_heat *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->n; i++)
		free(h->labels[i]);
	free(h->labels);
	free(h->cells);
	memset(h, 0, sizeof *h);
}

struct heat_rank {
	int rank;
	const char *host;       /* into the rank rows' strings */
	int label;              /* its row/column */
};

static int cmp_heat_rank(const void *a, const void *b)
{
	const struct heat_rank *x = a, *y = b;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_heat_host(const void *a, const void *b)
{
	const struct heat_rank *x = *(const struct heat_rank *const *)a, *y = *(const struct heat_rank *const *)b;
	int c = strcmp(x->host, y->host);
	return c ? c : (x->rank > y->rank) - (x->rank < y->rank);
}

static int cmp_heat_cell(const void *a, const void *b)
{
	const struct db_view_heat_cell *x = a, *y = b;
	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	return (x->dst > y->dst) - (x->dst < y->dst);
}

static int label_of(const struct heat_rank *r, int n, int rank)
{
	struct heat_rank k = { .rank = rank };
	const struct heat_rank *hit = bsearch(&k, r, (size_t)n, sizeof k, cmp_heat_rank);
	return hit ? hit->label : -1;
}

int db_view_heat(struct db *db, int by_host, struct db_view_heat *out)
{
	memset(out, 0, sizeof *out);
	out->by_host = by_host;
	out->slowest = -1;
	struct heat_rank *r = NULL;
	struct heat_rank **byh = NULL;
	char **hostv = NULL;            /* each rank's host string, owned */
	double *tmp = NULL;
	int nr = 0, cap = 0, caph = 0, src;
	sqlite3_stmt *s = NULL;
	/* the ranks: the rank table's and the links' (a rank without a row has host "?") */
	int rc = db_prep(db, "SELECT rank, coalesce(nullif(max(host), ''), '?') FROM (SELECT rank, host FROM rank UNION ALL "
			     "SELECT src, NULL FROM view_link UNION ALL SELECT dst, NULL FROM view_link) GROUP BY rank "
			     "ORDER BY rank", &s);
	if (rc)
		return rc;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(r, nr, cap, 64, "reading the heat map")) ||
		    (rc = ARRAY_GROW(hostv, nr, caph, 64, "reading the heat map")))
			break;
		const char *h = (const char *)sqlite3_column_text(s, 1);
		if (!(hostv[nr] = strdup(h ? h : "?"))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory reading the heat map");
			break;
		}
		r[nr] = (struct heat_rank){ .rank = sqlite3_column_int(s, 0), .host = hostv[nr] };
		nr++;
	}
	rc = db_finish(db, s, src, rc);
	out->nranks = nr;
	/* labels: the ranks in order, or the distinct hosts sorted */
	if (!rc && nr && !(byh = malloc((size_t)nr * sizeof *byh)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading the heat map");
	if (!rc && nr && !(out->labels = calloc((size_t)nr, sizeof *out->labels)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading the heat map");
	for (int i = 0; i < nr && !rc; i++)
		byh[i] = &r[i];
	if (!rc && nr > 1)
		qsort(byh, (size_t)nr, sizeof *byh, cmp_heat_host);
	for (int i = 0; i < nr && !rc; i++) {
		int newhost = !i || strcmp(byh[i]->host, byh[i - 1]->host);
		out->nhosts += newhost;
		if (!by_host) {
			char l[24];
			snprintf(l, sizeof l, "r%d", r[i].rank);
			r[i].label = i;
			if (!(out->labels[out->n++] = strdup(l)))
				rc = ascent_error(ASCENT_ENOMEM, "out of memory reading the heat map");
		} else {
			if (newhost && !(out->labels[out->n++] = strdup(byh[i]->host)))
				rc = ascent_error(ASCENT_ENOMEM, "out of memory reading the heat map");
			byh[i]->label = out->n - 1;
		}
	}
	/* the cells: the links' sums per (src, dst) label pair, one query */
	int capc = 0;
	if (!rc && nr)
		rc = db_prep(db, "SELECT src, dst, sum(transfers), sum(bytes), sum(time_ns) FROM view_link GROUP BY src, dst", &s);
	if (!rc && nr) {
		while ((src = db_step(db, s)) == SQLITE_ROW) {
			int a = label_of(r, nr, sqlite3_column_int(s, 0)), b = label_of(r, nr, sqlite3_column_int(s, 1));
			if (a < 0 || b < 0)
				continue;
			if ((rc = ARRAY_GROW(out->cells, out->ncells, capc, 256, "reading the heat map")))
				break;
			out->cells[out->ncells++] = (struct db_view_heat_cell){ .src = a, .dst = b,
				.transfers = sqlite3_column_int64(s, 2), .bytes = sqlite3_column_int64(s, 3),
				.time_ns = sqlite3_column_int64(s, 4) };
		}
		rc = db_finish(db, s, src, rc);
	}
	/* by host: rank pairs summed into host pairs (sorted, then equal keys merged) */
	if (!rc && out->ncells > 1)
		qsort(out->cells, (size_t)out->ncells, sizeof *out->cells, cmp_heat_cell);
	int k = 0;
	for (int i = 0; i < out->ncells && !rc; i++) {
		struct db_view_heat_cell *c = &out->cells[i];
		if (k && out->cells[k - 1].src == c->src && out->cells[k - 1].dst == c->dst) {
			struct db_view_heat_cell *d = &out->cells[k - 1];
			d->transfers += c->transfers;
			d->bytes = i64_add_sat(d->bytes, c->bytes);
			d->time_ns = i64_add_sat(d->time_ns, c->time_ns);
		} else
			out->cells[k++] = *c;
	}
	out->ncells = k;
	/* bandwidth, its median over the cells that have one, each cell's slowness against it */
	if (!rc && k && !(tmp = malloc((size_t)k * sizeof *tmp)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading the heat map");
	int nb = 0;
	for (int i = 0; i < k && !rc; i++) {
		struct db_view_heat_cell *c = &out->cells[i];
		c->gbs = c->time_ns > 0 && c->bytes > 0 ? (double)c->bytes / (double)c->time_ns : 0;
		if (c->gbs > 0) {
			tmp[nb++] = c->gbs;
			if (out->slowest < 0 || c->gbs < out->cells[out->slowest].gbs)
				out->slowest = i;
		}
	}
	if (!rc && nb) {
		out->median_gbs = stats_median(tmp, nb);
		for (int i = 0; i < k; i++)
			out->cells[i].slowness = out->cells[i].gbs > 0 ? out->median_gbs / out->cells[i].gbs : 0;
	}
	free(tmp);
	free(byh);
	free(r);
	for (int i = 0; i < nr; i++)
		free(hostv[i]);
	free(hostv);
	if (rc)
		db_view_heat_free(out);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */

int db_view_mem_peaks(struct db *db, struct db_filter f, struct db_mem_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, category, peak_bytes, peak_ts_ns, final_bytes, allocs, frees, device FROM"
			  " view_mempeak WHERE (?1 < 0 OR rank = ?1) ORDER BY rank, device, category", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.rank);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading the profile")) != 0)
			break;
		struct db_mem_stat *m = &(*out)[(*n)++];
		m->rank = sqlite3_column_int(s, 0);
		m->category = sqlite3_column_int(s, 1);
		m->peak_bytes = sqlite3_column_int64(s, 2);
		m->peak_ts_ns = sqlite3_column_int64(s, 3);
		m->final_bytes = sqlite3_column_int64(s, 4);
		m->allocs = sqlite3_column_int64(s, 5);
		m->frees = sqlite3_column_int64(s, 6);
		m->device = sqlite3_column_int(s, 7);
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_view_mem_series(struct db *db, int rank, int64_t t0, int64_t t1, int nbins, int64_t *out)
{
	for (int k = 0; k < nbins; k++)
		out[k] = -1;
	if (nbins <= 0 || t1 <= t0)
		return 0;
	int64_t T0 = info(db, "t0_ns", 0), T1 = info(db, "t1_ns", 1), nb = info(db, "mem_bins", 1024);
	int64_t w = (T1 - T0 + nb - 1) / nb;
	if (w < 1)
		w = 1;
	int64_t b0 = (t0 - T0) / w, b1 = (t1 - 1 - T0) / w;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT bin, max(max_bytes) FROM view_mem WHERE (?1 < 0 OR rank = ?1) AND bin BETWEEN ?2 AND ?3"
			  " GROUP BY bin", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	db_bind_i64(db, s, 2, b0);
	db_bind_i64(db, s, 3, b1);
	int src;
	double span = (double)(t1 - t0);
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		int64_t bin = sqlite3_column_int64(s, 0), v = sqlite3_column_int64(s, 1);
		int64_t lo = T0 + bin * w, hi = lo + w;
		int k0 = (int)((double)(lo - t0) / span * nbins), k1 = (int)((double)(hi - 1 - t0) / span * nbins);
		if (k0 < 0)
			k0 = 0;
		if (k1 >= nbins)
			k1 = nbins - 1;
		for (int k = k0; k <= k1; k++)
			if (v > out[k])
				out[k] = v;
	}
	return db_finish(db, s, src, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* timeline */

int db_view_class_of(int kind)
{
	switch (kind) {
	case DB_KIND_OP: case DB_KIND_KERNEL: case DB_KIND_MEMCPY: case DB_KIND_MEMSET: return DB_VC_COMPUTE;
	case DB_KIND_COMM: case DB_KIND_P2P: case DB_KIND_WAIT: return DB_VC_COMM;
	case DB_KIND_DATA: case DB_KIND_IO: case DB_KIND_CHECKPOINT: return DB_VC_DATA;
	default: return DB_VC_OTHER;
	}
}

int db_view_lanes(struct db *db, int rank, struct db_view_lane **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT l.rank, l.tid, coalesce(t.name, ''), l.shift_ns, l.maxdur_ns, l.n FROM view_lane l"
			  " LEFT JOIN thread t ON t.rank = l.rank AND t.tid = l.tid WHERE (?1 < 0 OR l.rank = ?1)"
			  " ORDER BY l.rank, l.tid", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, rank);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading the profile")) != 0)
			break;
		struct db_view_lane *l = &(*out)[(*n)++];
		l->rank = sqlite3_column_int(s, 0);
		l->tid = sqlite3_column_int(s, 1);
		l->name = dup_col(s, 2);
		l->shift_ns = sqlite3_column_int64(s, 3);
		l->maxdur_ns = sqlite3_column_int64(s, 4);
		l->nevents = sqlite3_column_int64(s, 5);
		if (!l->name) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		db_view_lanes_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_view_lanes_free(struct db_view_lane *v, int n)
{
	if (!v)
		return;
	for (int i = 0; i < n; i++)
		free(v[i].name);
	free(v);
}

/* The screen's columns k0..k1 (of nbins over [t0, t1)) that [a, b) touches, clamped to the screen. */
static void columns_of(int64_t t0, int64_t t1, int nbins, int64_t a, int64_t b, int *k0, int *k1)
{
	double span = (double)(t1 - t0);
	*k0 = (int)((double)((a > t0 ? a : t0) - t0) / span * nbins);
	*k1 = (int)((double)((b < t1 ? b : t1) - 1 - t0) / span * nbins);
	if (*k0 < 0)
		*k0 = 0;
	if (*k1 >= nbins)
		*k1 = nbins - 1;
}

/* The ns of [a, b) inside screen column k (of nbins over [t0, t1)); ≤ 0 when none. */
static int64_t column_overlap(int64_t t0, int64_t t1, int nbins, int k, int64_t a, int64_t b)
{
	double span = (double)(t1 - t0);
	int64_t lo = t0 + (int64_t)((double)k * span / nbins), hi = t0 + (int64_t)((double)(k + 1) * span / nbins);
	return (b < hi ? b : hi) - (a > lo ? a : lo);
}

static void add_span(struct db_view_bin *out, int nbins, int64_t t0, int64_t t1, int64_t as, int64_t ae,
		     int cls, int64_t name_id, int64_t name_start, int kind, int64_t *topov)
{
	if (ae <= t0 || as >= t1 || ae <= as)
		return;
	int k0, k1;
	columns_of(t0, t1, nbins, as, ae, &k0, &k1);
	for (int k = k0; k <= k1; k++) {
		int64_t ov = column_overlap(t0, t1, nbins, k, as, ae);
		if (ov <= 0)
			continue;
		out[k].busy_ns[cls] += ov;
		/* the innermost wins ties: a later (nested) event with the same overlap replaces */
		if (cls != DB_VC_OTHER && ov >= topov[k] && name_id > 0) {
			topov[k] = ov;
			out[k].name_id = name_id;
			out[k].name_start = name_start;
			out[k].kind = kind;
		}
	}
}

/* A cached bin [lo, lo + bw) spread over the screen's nbins columns of [t0, t1), each column
 * getting its share of the bin's time by overlap; its top name where it leads the column. */
static void spread_bin(struct db_view_bin *out, int nbins, int64_t t0, int64_t t1, int64_t lo, int64_t bw,
		       const struct db_tl_bin *v, int64_t *topov)
{
	int64_t hi = lo + bw;
	int k0, k1;
	columns_of(t0, t1, nbins, lo, hi, &k0, &k1);
	for (int k = k0; k <= k1; k++) {
		int64_t ov = column_overlap(t0, t1, nbins, k, lo, hi);
		if (ov <= 0)
			continue;
		double fr = (double)ov / (double)bw;
		int64_t lead = 0;
		for (int q = 0; q < 4; q++) {
			int64_t add = (int64_t)((double)v->c[q] * fr);
			out[k].busy_ns[q] += add;
			if (q < 3)
				lead += add;
		}
		if (v->top > 0 && lead >= topov[k]) {
			topov[k] = lead;
			out[k].name_id = v->top;
		}
	}
}

int db_view_lane_bins(struct db *db, const struct db_view_lane *lane, int64_t t0, int64_t t1, int nbins,
		      int64_t max_events, struct db_view_bin *out, int *exact)
{
	*exact = 0;
	for (int k = 0; k < nbins; k++) {
		memset(&out[k], 0, sizeof out[k]);
		out[k].name_start = -1;
		out[k].kind = -1;
	}
	if (nbins <= 0 || t1 <= t0)
		return 0;
	int64_t *topov = calloc((size_t)nbins, sizeof *topov);
	if (!topov)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int64_t T0 = info(db, "t0_ns", 0), bw = info(db, "bin_ns", 1), NB = info(db, "bins", 1);
	if (bw < 1)
		bw = 1;
	int64_t b0 = (t0 - T0) / bw, b1 = (t1 - 1 - T0) / bw;
	if (b0 < 0)
		b0 = 0;
	if (b1 >= NB)
		b1 = NB - 1;
	sqlite3_stmt *s = NULL;
	int64_t est = 0;
	/* the raw query scans the rank's (rank, start_ns) range whatever the thread: count all its lanes */
	int rc = 0, src = SQLITE_DONE;
	int memo = db->view_est_ok && db->view_est[0] == lane->rank && db->view_est[1] == b0 && db->view_est[2] == b1;
	if (memo)   /* drawing the rank's next lane: one sum per window, not one per lane */
		est = db->view_est[3];
	else
		rc = db_prep(db, "SELECT chunk, n, bins FROM view_tl WHERE rank = ?1 AND tid IN (SELECT tid FROM view_lane"
			     " WHERE rank = ?1) AND chunk BETWEEN ?2 AND ?3", &s);
	if (!rc && !memo) {
		db_bind_int(db, s, 1, lane->rank);
		db_bind_i64(db, s, 2, b0 / DB_TL_CHUNK);
		db_bind_i64(db, s, 3, b1 / DB_TL_CHUNK);
		while ((src = db_step(db, s)) == SQLITE_ROW) {
			int64_t c0 = sqlite3_column_int64(s, 0) * DB_TL_CHUNK;
			if (c0 >= b0 && c0 + DB_TL_CHUNK - 1 <= b1) {   /* whole chunk inside: its sum */
				est = i64_add_sat(est, sqlite3_column_int64(s, 1));
				continue;
			}
			const unsigned char *p = sqlite3_column_blob(s, 2);
			size_t len = (size_t)sqlite3_column_bytes(s, 2), k;
			struct db_tl_bin v;
			int off, run;
			for (; p && (k = db_tl_unpack(p, len, &off, &run, &v)) != 0; p += k, len -= k) {
				int64_t lo = c0 + off > b0 ? c0 + off : b0, hi = c0 + off + run - 1 < b1 ? c0 + off + run - 1 : b1;
				if (lo <= hi)   /* the run's bins inside the window */
					est = i64_add_sat(est, i64_mul_sat(v.n, hi - lo + 1));
			}
		}
		rc = db_finish(db, s, src, 0);
		if (!rc) {
			db->view_est[0] = lane->rank;
			db->view_est[1] = b0;
			db->view_est[2] = b1;
			db->view_est[3] = est;
			db->view_est_ok = 1;
		}
	}
	if (!rc && est <= max_events) {
		*exact = 1;
		rc = db_prep(db, "SELECT start_ns, dur_ns, kind, name_id FROM event WHERE rank = ?1 AND start_ns >= ?2 AND"
			      " start_ns < ?3 AND tid = ?4 AND kind != " DB_SQL_KIND_STEP " ORDER BY start_ns", &s);
		if (!rc) {
			db_bind_int(db, s, 1, lane->rank);
			db_bind_i64(db, s, 2, t0 - lane->shift_ns - lane->maxdur_ns);
			db_bind_i64(db, s, 3, t1 - lane->shift_ns);
			db_bind_int(db, s, 4, lane->tid);
			while ((src = db_step(db, s)) == SQLITE_ROW) {
				int64_t as = sqlite3_column_int64(s, 0) + lane->shift_ns;
				int64_t ae = as + sqlite3_column_int64(s, 1);
				int kind = sqlite3_column_int(s, 2);
				add_span(out, nbins, t0, t1, as, ae, db_view_class_of(kind), sqlite3_column_int64(s, 3), as,
					 kind, topov);
			}
			rc = db_finish(db, s, src, 0);
		}
	} else if (!rc) {
		rc = db_prep(db, "SELECT chunk, bins FROM view_tl WHERE rank = ?1 AND tid = ?2 AND chunk BETWEEN ?3 AND ?4", &s);
		if (!rc) {
			db_bind_int(db, s, 1, lane->rank);
			db_bind_int(db, s, 2, lane->tid);
			db_bind_i64(db, s, 3, b0 / DB_TL_CHUNK);
			db_bind_i64(db, s, 4, b1 / DB_TL_CHUNK);
			while ((src = db_step(db, s)) == SQLITE_ROW) {
				int64_t c0 = sqlite3_column_int64(s, 0) * DB_TL_CHUNK;
				const unsigned char *p = sqlite3_column_blob(s, 1);
				size_t len = (size_t)sqlite3_column_bytes(s, 1), used;
				struct db_tl_bin v;
				int off, run;
				for (; p && (used = db_tl_unpack(p, len, &off, &run, &v)) != 0; p += used, len -= used)
					for (int64_t bin = c0 + off; bin < c0 + off + run; bin++)
						if (bin >= b0 && bin <= b1)
							spread_bin(out, nbins, t0, t1, T0 + bin * bw, bw, &v, topov);
			}
			rc = db_finish(db, s, src, 0);
		}
	}
	free(topov);
	return rc;
}

int db_view_step_marks(struct db *db, int rank, int64_t shift_ns, int64_t t0, int64_t t1, int max, int64_t *starts,
		       int64_t *steps, int *n)
{
	*n = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT start_ns, step FROM event WHERE kind = " DB_SQL_KIND_STEP " AND rank = ?1 AND step IS NOT NULL ORDER BY step",
		      &s);
	if (rc)
		return rc;
	db_bind_int(db, s, 1, rank);
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW && *n < max) {
		int64_t a = sqlite3_column_int64(s, 0) + shift_ns;
		if (a < t0 || a >= t1)
			continue;
		starts[*n] = a;
		steps[*n] = sqlite3_column_int64(s, 1);
		(*n)++;
	}
	return db_finish(db, s, src, 0);
}

static char *str_of(struct db *db, int64_t id)
{
	sqlite3_stmt *s = NULL;
	char *v = NULL;
	if (id > 0 && !db_prep(db, "SELECT value FROM string WHERE id = ?1", &s)) {
		db_bind_i64(db, s, 1, id);
		if (db_step(db, s) == SQLITE_ROW)
			v = dup_col(s, 0);
		sqlite3_finalize(s);
	}
	return v ? v : strdup("");
}

/* Fill the names, communicator and stack of out->e. */
static int detail(struct db *db, const struct db_view_lane *lane, struct db_view_event *out)
{
	out->astart_ns = out->e.start_ns + lane->shift_ns;
	out->name = str_of(db, out->e.name_id);
	out->site = str_of(db, out->e.site_id);
	out->comm_name = NULL;
	sqlite3_stmt *s = NULL;
	int rc = 0, src;
	if (out->e.comm_id >= 0 && !db_prep(db, "SELECT coalesce(name, '') FROM comm WHERE rank = ?1 AND comm_id = ?2", &s)) {
		db_bind_int(db, s, 1, out->e.rank);
		db_bind_int(db, s, 2, out->e.comm_id);
		if (db_step(db, s) == SQLITE_ROW)
			out->comm_name = dup_col(s, 0);
		sqlite3_finalize(s);
	}
	if (!out->comm_name)
		out->comm_name = strdup("");
	if (out->e.stack_id > 0) {
		rc = db_prep(db, "SELECT coalesce(f.symbol, ''), coalesce(f.module, ''), coalesce(f.offset, 0), coalesce(f.ip, 0)"
			      " FROM stack st JOIN frame f ON f.frame_id = st.frame_id WHERE st.stack_id = ?1"
			      " ORDER BY st.depth LIMIT 64", &s);
		if (!rc) {
			db_bind_i64(db, s, 1, out->e.stack_id);
			int cap = 0;
			while ((src = db_step(db, s)) == SQLITE_ROW) {
				if ((rc = ARRAY_GROW(out->frames, out->nframes, cap, 32, "reading the profile")) != 0)
					break;
				const char *sym = (const char *)sqlite3_column_text(s, 0);
				const char *mod = (const char *)sqlite3_column_text(s, 1);
				const char *base = mod ? strrchr(mod, '/') : NULL;
				base = base ? base + 1 : (mod ? mod : "");
				char buf[512];
				if (sym && *sym)
					snprintf(buf, sizeof buf, "%s (%s+0x%llx)", sym, base,
						 (unsigned long long)sqlite3_column_int64(s, 2));
				else
					snprintf(buf, sizeof buf, "0x%llx (%s)", (unsigned long long)sqlite3_column_int64(s, 3), base);
				out->frames[out->nframes] = strdup(buf);
				if (!out->frames[out->nframes]) {
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
					break;
				}
				out->nframes++;
			}
			rc = db_finish(db, s, src, rc);
		}
	}
	if (!rc && (!out->name || !out->site || !out->comm_name))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	return rc;
}

int db_view_event_at(struct db *db, const struct db_view_lane *lane, int64_t t, struct db_view_event *out)
{
	memset(out, 0, sizeof *out);
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, DB_EVENT_SELECT " FROM event WHERE rank = ?1 AND start_ns <= ?2 AND start_ns >= ?2 - ?3 AND"
			  " tid = ?4 AND start_ns + dur_ns > ?2 AND kind != " DB_SQL_KIND_STEP " ORDER BY dur_ns, start_ns DESC LIMIT 1", &s);
	if (rc)
		return rc;
	db_bind_int(db, s, 1, lane->rank);
	db_bind_i64(db, s, 2, t - lane->shift_ns);
	db_bind_i64(db, s, 3, lane->maxdur_ns);
	db_bind_int(db, s, 4, lane->tid);
	int src = db_step(db, s), found = 0;
	if (src == SQLITE_ROW) {
		db_event_from_row(s, &out->e);
		found = 1;
	}
	if ((rc = db_finish(db, s, src, 0)) != 0)
		return rc;
	if (found && (rc = detail(db, lane, out)) != 0) {
		db_view_event_free(out);
		return rc;
	}
	return found;
}

int db_view_event_next(struct db *db, const struct db_view_lane *lane, int64_t t, int dir, const int64_t *ids, int nids,
		       struct db_view_event *out)
{
	memset(out, 0, sizeof *out);
	if (nids <= 0)
		return 0;
	size_t cap = sizeof DB_EVENT_SELECT + 256 + (size_t)nids * 24;   /* the select, the rest of the query, the ids */
	char *sql = malloc(cap);
	if (!sql)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	size_t k = (size_t)snprintf(sql, cap, DB_EVENT_SELECT " FROM event WHERE rank = ?1 AND start_ns %s ?2 AND"
				    " tid = ?3 AND kind != " DB_SQL_KIND_STEP " AND +name_id IN (", dir > 0 ? ">" : "<");
	for (int i = 0; i < nids; i++)
		k += (size_t)snprintf(sql + k, cap - k, "%s%lld", i ? "," : "", (long long)ids[i]);
	snprintf(sql + k, cap - k, ") ORDER BY start_ns %s LIMIT 1", dir > 0 ? "ASC" : "DESC");
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	free(sql);
	if (rc)
		return rc;
	db_bind_int(db, s, 1, lane->rank);
	db_bind_i64(db, s, 2, t - lane->shift_ns);
	db_bind_int(db, s, 3, lane->tid);
	int src = db_step(db, s), found = 0;
	if (src == SQLITE_ROW) {
		db_event_from_row(s, &out->e);
		found = 1;
	}
	if ((rc = db_finish(db, s, src, 0)) != 0)
		return rc;
	if (found && (rc = detail(db, lane, out)) != 0) {
		db_view_event_free(out);
		return rc;
	}
	return found;
}

void db_view_event_free(struct db_view_event *e)
{
	if (!e)
		return;
	free(e->name);
	free(e->site);
	free(e->comm_name);
	for (int i = 0; i < e->nframes; i++)
		free(e->frames[i]);
	free(e->frames);
	memset(e, 0, sizeof *e);
}

int db_view_instances(struct db *db, struct db_filter f, int kind, int64_t name_id, int reverse, int64_t offset,
		      int limit, struct db_event **out, int *n, int64_t *total)
{
	*out = NULL;
	*n = 0;
	*total = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, f.rank < 0 ? "SELECT coalesce(sum(count), 0) FROM view_opstep WHERE ?1 < 0 AND"
				       " (?2 < 0 OR step BETWEEN ?2 AND ?3) AND kind = ?4 AND name_id = ?5"
				     : "SELECT coalesce(sum(count), 0) FROM view_op WHERE" FILTER_SQL "AND kind = ?4 AND name_id = ?5",
			 &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	db_bind_int(db, s, 4, kind);
	db_bind_i64(db, s, 5, name_id);
	int src = db_step(db, s);
	if (src == SQLITE_ROW)
		*total = sqlite3_column_int64(s, 0);
	if ((rc = db_finish(db, s, src, 0)) != 0)
		return rc;
	if (limit <= 0)
		return 0;
	rc = db_prep(db, reverse ? DB_EVENT_SELECT " FROM event WHERE name_id = ?5 AND kind = ?4 AND" FILTER_SQL
				" ORDER BY dur_ns ASC LIMIT ?6 OFFSET ?7"
			      : DB_EVENT_SELECT " FROM event WHERE name_id = ?5 AND kind = ?4 AND" FILTER_SQL
				" ORDER BY dur_ns DESC LIMIT ?6 OFFSET ?7", &s);
	if (rc)
		return rc;
	bind_filter(db, s, f);
	db_bind_int(db, s, 4, kind);
	db_bind_i64(db, s, 5, name_id);
	db_bind_int(db, s, 6, limit);
	db_bind_i64(db, s, 7, offset);
	*out = calloc((size_t)limit, sizeof **out);
	if (!*out) {
		sqlite3_finalize(s);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	while ((src = db_step(db, s)) == SQLITE_ROW && *n < limit)
		db_event_from_row(s, &(*out)[(*n)++]);
	rc = db_finish(db, s, src, 0);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_view_findings(struct db *db, db_view_finding_cb cb, void *ud)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT 'diag', status, name || ': ' || coalesce(detail, '') FROM diag_check WHERE status != 'PASS'"
			  " UNION ALL SELECT 'note', level, text FROM (SELECT level, text FROM note WHERE level IN"
			  " ('warn', 'error') ORDER BY rank, ts_ns)", &s);
	if (rc)
		return rc;
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		const char *a = (const char *)sqlite3_column_text(s, 0), *b = (const char *)sqlite3_column_text(s, 1),
			   *c = (const char *)sqlite3_column_text(s, 2);
		if ((rc = cb(ud, a ? a : "", b ? b : "", c ? c : "")) != 0)
			break;
	}
	return db_finish(db, s, src, rc);
}
