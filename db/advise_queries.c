/* db/advise_queries.c — the queries `ascent advise` and `ascent diag --db` need beyond the shared
 * catalogue: writing and reading diag_check rows, the run row, and the comm table. Statements are
 * prepared per call (none of these is on a hot path), so struct db's catalogue is left alone. */
#include "db/internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int db_put_diag_check(struct db *db, int64_t ts_utc_ns, const char *name, const char *status, double value,
		      const char *unit, const char *detail)
{
	static const char *sql = "INSERT INTO diag_check(ts_utc_ns, name, status, value, unit, detail)"
				 " VALUES(?1, ?2, ?3, ?4, ?5, ?6)";
	if (db->mode == DB_READ)
		return ascent_error(ASCENT_EINTERNAL, "cannot write diag checks to '%s': opened read-only", db->path);
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, ts_utc_ns);
	db_bind_text_static(db, s, 2, name ? name : "");
	db_bind_text_static(db, s, 3, status ? status : "");
	if (isnan(value))
		db_bind_null(db, s, 4);
	else
		db_bind_double(db, s, 4, value);
	if (unit)
		db_bind_text_static(db, s, 5, unit);
	if (detail)
		db_bind_text_static(db, s, 6, detail);
	int src = db_step(db, s);
	rc = src == SQLITE_DONE ? 0 : db_sql_err(db, src, "cannot write a diag check to", sql);
	sqlite3_finalize(s);
	return rc;
}

static const char *col_text(sqlite3_stmt *s, int i)
{
	return (const char *)sqlite3_column_text(s, i);
}

int db_each_diag_check(struct db *db, db_diag_check_cb cb, void *ud)
{
	static const char *sql = "SELECT id, coalesce(ts_utc_ns, 0), name, status, value, unit, detail"
				 " FROM diag_check ORDER BY id";
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		double v = sqlite3_column_type(s, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 4);
		rc = cb(ud, sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), col_text(s, 2), col_text(s, 3), v,
			col_text(s, 5), col_text(s, 6));
		if (rc)
			break;
	}
	if (!rc && src != SQLITE_DONE)
		rc = db_sql_err(db, src, "cannot read diag checks of", sql);
	sqlite3_finalize(s);
	return rc;
}

static int dup_col(sqlite3_stmt *s, int i, char **out)
{
	const char *t = col_text(s, i);
	*out = NULL;
	if (t && !(*out = strdup(t)))
		return ascent_error(ASCENT_ENOMEM, "out of memory reading the run row");
	return 0;
}

int db_get_run(struct db *db, struct db_run_info *out, int *found)
{
	static const char *sql = "SELECT command_line, config_json, created_utc, coalesce(world_size, 0)"
				 " FROM run ORDER BY id LIMIT 1";
	memset(out, 0, sizeof *out);
	*found = 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	int src = db_step(db, s);
	if (src == SQLITE_ROW) {
		*found = 1;
		out->world_size = sqlite3_column_int(s, 3);
		if ((rc = dup_col(s, 0, &out->command_line)) || (rc = dup_col(s, 1, &out->config_json)) ||
		    (rc = dup_col(s, 2, &out->created_utc)))
			db_run_info_free(out);
	} else if (src != SQLITE_DONE) {
		rc = db_sql_err(db, src, "cannot read the run row of", sql);
	}
	sqlite3_finalize(s);
	return rc;
}

void db_run_info_free(struct db_run_info *r)
{
	if (!r)
		return;
	free(r->command_line);
	free(r->config_json);
	free(r->created_utc);
	memset(r, 0, sizeof *r);
}

int db_each_comm(struct db *db, db_comm_cb cb, void *ud)
{
	static const char *sql = "SELECT rank, comm_id, name, coalesce(size, 0), coalesce(rank_in_comm, -1)"
				 " FROM comm ORDER BY comm_id, rank";
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		rc = cb(ud, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1), col_text(s, 2), sqlite3_column_int(s, 3),
			sqlite3_column_int(s, 4));
		if (rc)
			break;
	}
	if (!rc && src != SQLITE_DONE)
		rc = db_sql_err(db, src, "cannot read the comm table of", sql);
	sqlite3_finalize(s);
	return rc;
}

int db_counter_nulls(struct db *db, const char *name, int64_t *n, int *first_rank, int64_t *first_ts)
{
	static const char *sql = "SELECT c.rank, c.ts_ns FROM counter c JOIN string s ON s.id = c.name_id"
				 " WHERE s.value = ?1 AND c.value IS NULL ORDER BY c.ts_ns, c.rank";
	*n = 0;
	*first_rank = -1;
	*first_ts = -1;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	db_bind_text_static(db, s, 1, name);
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if (!(*n)++) {
			*first_rank = sqlite3_column_int(s, 0);
			*first_ts = sqlite3_column_int64(s, 1);
		}
	}
	if (src != SQLITE_DONE)
		rc = db_sql_err(db, src, "cannot read counters of", sql);
	sqlite3_finalize(s);
	return rc;
}
