/* db/sql.c — the SQLite seam of db/, in one place (as fossil's db.c keeps it): preparing a
 * statement, binding its parameters, stepping it and checking what the step returned, the error
 * message of a failed call, scalar queries, and the windowed scan every filtered stream uses.
 *
 * A bind cannot fail on a well-formed statement, but when one does (a wrong index, out of memory
 * copying a text) the parameter silently stays NULL or stale; so every bind goes through db_bind_*,
 * which keeps the first failure in struct db, and the next db_step on that connection returns it
 * instead of running the statement with a wrong parameter: every caller's existing step check
 * then reports it. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

int db_sql_err(struct db *db, int rc, const char *what, const char *sql)
{
	const char *path = db && db->path ? db->path : "?";
	if (db && db->h)
		return ascent_error(ASCENT_EDB, "%s '%s': sqlite error %d (extended %d): %s%s%s%s", what, path,
				    rc & 0xff, sqlite3_extended_errcode(db->h), sqlite3_errmsg(db->h),
				    sql ? " [in: " : "", sql ? sql : "", sql ? "]" : "");
	return ascent_error(ASCENT_EDB, "%s '%s': sqlite error %d: %s", what, path, rc, sqlite3_errstr(rc));
}

int db_failed_on_data(const struct db *db, const char **msg)
{
	int code = sqlite3_errcode(db->h) & 0xff;
	*msg = sqlite3_errmsg(db->h);
	return code == SQLITE_ERROR || code == SQLITE_CORRUPT || code == SQLITE_NOTADB || code == SQLITE_MISMATCH ||
	       code == SQLITE_TOOBIG || code == SQLITE_INTERRUPT || code == SQLITE_RANGE;
}

int db_prep(struct db *db, const char *sql, sqlite3_stmt **s)
{
	*s = NULL;
	int rc = sqlite3_prepare_v2(db->h, sql, -1, s, NULL);
	return rc == SQLITE_OK ? 0 : db_sql_err(db, rc, "cannot query", sql);
}

/* ---------------------------------------------------------------------------------------- */
/* stepping and checking */

int db_step(struct db *db, sqlite3_stmt *s)
{
	if (db->bind_rc != SQLITE_OK) {
		int rc = db->bind_rc;
		db->bind_rc = SQLITE_OK;
		return rc;
	}
	return sqlite3_step(s);
}

int db_step_check(struct db *db, int src, sqlite3_stmt *s, const char *what)
{
	if (src == SQLITE_DONE || src == SQLITE_ROW || src == SQLITE_OK)
		return 0;
	return db_sql_err(db, src, what ? what : "cannot read", s ? sqlite3_sql(s) : NULL);
}

int db_finish(struct db *db, sqlite3_stmt *s, int src, int rc)
{
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	return rc;
}

int db_each_row(struct db *db, sqlite3_stmt *s, db_row_cb row, void *ud)
{
	int src, rc = 0;
	while ((src = db_step(db, s)) == SQLITE_ROW)
		if ((rc = row(ud, s)) != 0)
			break;
	return db_finish(db, s, src, rc);
}

int db_step_done(struct db *db, sqlite3_stmt *s, const char *what)
{
	int rc = db_step(db, s);
	sqlite3_reset(s);
	return db_step_check(db, rc, s, what);
}

int db_exec(struct db *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db->h, sql, NULL, NULL, &msg);
	if (rc != SQLITE_OK) {
		int r = ascent_error(ASCENT_EDB, "cannot update '%s': sqlite error %d (extended %d): %s [in: %.200s]",
				     db->path, rc & 0xff, sqlite3_extended_errcode(db->h), msg ? msg : sqlite3_errstr(rc),
				     sql);
		sqlite3_free(msg);
		return r;
	}
	return 0;
}

int db_scalar_i64(struct db *db, const char *sql, int64_t *out, int *null)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	*out = 0;
	if (null)
		*null = 1;
	if (rc)
		return rc;
	int src = db_step(db, s);
	if (src == SQLITE_ROW) {
		if (null)
			*null = sqlite3_column_type(s, 0) == SQLITE_NULL;
		*out = sqlite3_column_int64(s, 0);
	}
	return db_finish(db, s, src, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* the windowed scan */

int db_filter_windows(struct db *db, struct db_filter f, struct window **w, int *n)
{
	*w = NULL;
	*n = 0;
	if (f.step_lo < 0) {
		*w = malloc(sizeof **w);
		if (!*w)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		(*w)[0] = (struct window){ f.rank, INT64_MIN, INT64_MAX };
		*n = 1;
		return 0;
	}
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, min(start_ns), max(start_ns + dur_ns) FROM event WHERE kind = " DB_SQL_KIND_STEP
			 " AND step BETWEEN ?1 AND ?2 AND (?3 < 0 OR rank = ?3)"
			 " GROUP BY rank ORDER BY rank", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, f.step_lo);
	db_bind_i64(db, s, 2, f.step_hi);
	db_bind_i64(db, s, 3, f.rank);
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*w, *n, cap, 8, "reading windows")))
			break;
		(*w)[(*n)++] = (struct window){ sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1),
						 sqlite3_column_int64(s, 2) };
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		free(*w);
		*w = NULL;
		*n = 0;
	}
	return rc;
}

/* sql with each "(?1 < 0 OR X.rank = ?1)" written "(X.rank = ?1)", for windows of one rank: SQLite
 * plans the OR once for any ?1, as a skip-scan over every rank's time range, so a window of one
 * rank read every rank's events in its time range (O(ranks²) over a job: 1.6 s a window, 27 minutes
 * for one query of the advisor at 1,024 ranks); the equality seeks the rank in event's clustering
 * key. NULL when out of memory. */
static char *rank_only_sql(const char *sql)
{
	static const char pre[] = "(?1 < 0 OR ";
	char *out = strdup(sql);
	if (!out)
		return NULL;
	for (char *p = strstr(out, pre); p; p = strstr(p, pre)) {
		char *close = strchr(p + sizeof pre - 1, ')');
		if (!close || !memmem(p, (size_t)(close - p), "= ?1", 4)) {   /* not the rank filter: leave it */
			p += sizeof pre - 1;
			continue;
		}
		memmove(p + 1, p + sizeof pre - 1, strlen(p + sizeof pre - 1) + 1);
	}
	return out;
}

int db_scan_windows(struct db *db, struct db_filter f, const char *sql, db_row_cb row, void *ud)
{
	struct window *w;
	int nw;
	int rc = db_filter_windows(db, f, &w, &nw);
	if (rc)
		return rc;
	int one_rank = 1;   /* every window of one rank (a step filter gives one a rank) */
	for (int i = 0; i < nw; i++)
		one_rank &= w[i].rank >= 0;
	char *ranked = one_rank ? rank_only_sql(sql) : NULL;
	if (one_rank && !ranked) {
		free(w);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	sqlite3_stmt *s = NULL;
	rc = db_prep(db, ranked ? ranked : sql, &s);
	free(ranked);
	for (int i = 0; !rc && i < nw; i++) {
		sqlite3_reset(s);
		db_bind_i64(db, s, 1, w[i].rank);
		db_bind_i64(db, s, 2, w[i].lo);
		db_bind_i64(db, s, 3, w[i].hi);
		int src;
		while ((src = db_step(db, s)) == SQLITE_ROW)
			if ((rc = row(ud, s)) != 0)
				break;
		if (!rc)
			rc = db_step_check(db, src, s, NULL);
	}
	sqlite3_finalize(s);
	free(w);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* other files attached, queries from outside db/ */

char *db_readonly_uri(const char *path)
{
	/* percent-encode what URI syntax would read otherwise */
	size_t len = strlen(path);
	char *uri = malloc(len * 3 + 40);
	if (!uri)
		return NULL;
	/* "file:" then the path, or for an absolute one "file://" (an empty authority) then the path: a
	 * path that starts with two slashes would otherwise read as an authority */
	size_t j = (size_t)sprintf(uri, path[0] == '/' ? "file://" : "file:");
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)path[i];
		if (ch == '?' || ch == '#' || ch == '%' || ch < 0x20 || ch >= 0x7f)
			j += (size_t)sprintf(uri + j, "%%%02X", ch);
		else
			uri[j++] = (char)ch;
	}
	sprintf(uri + j, "?mode=ro&immutable=1");
	return uri;
}

int db_attach(struct db *db, const char *path, const char *schema)
{
	if (!db->uri)
		return ascent_error(ASCENT_EUSAGE, "cannot read '%s' into '%s': an output whose name begins with 'file:' cannot "
				    "attach another file; give it another name (./file:...)", path, db->path);
	char *uri = db_readonly_uri(path);
	if (!uri)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int in_tx = !sqlite3_get_autocommit(db->h);
	int rc = in_tx ? db_exec(db, "COMMIT") : 0;
	char sql[160];
	snprintf(sql, sizeof sql, "ATTACH ?1 AS \"%s\"", schema);
	if (!rc) {
		sqlite3_stmt *s = NULL;
		int src = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
		if (src == SQLITE_OK) {
			sqlite3_bind_text(s, 1, uri, -1, SQLITE_STATIC);
			src = sqlite3_step(s);
		}
		if (src != SQLITE_OK && src != SQLITE_DONE)   /* the other file: bad input */
			rc = ascent_error(ASCENT_EINPUT, "cannot open '%s' as SQLite: %s", path, sqlite3_errmsg(db->h));
		sqlite3_finalize(s);
	}
	free(uri);
	int rc2 = in_tx ? db_exec(db, "BEGIN") : 0;
	return rc ? rc : rc2;
}

int db_detach(struct db *db, const char *schema)
{
	int in_tx = !sqlite3_get_autocommit(db->h);
	int rc = in_tx ? db_exec(db, "COMMIT") : 0;
	char sql[160];
	snprintf(sql, sizeof sql, "DETACH \"%s\"", schema);
	if (!rc)
		rc = db_exec(db, sql);
	int rc2 = in_tx ? db_exec(db, "BEGIN") : 0;
	return rc ? rc : rc2;
}

int64_t db_row_i64(const struct db_row *r, int col)
{
	return sqlite3_column_int64((sqlite3_stmt *)r, col);
}

double db_row_f64(const struct db_row *r, int col)
{
	return sqlite3_column_double((sqlite3_stmt *)r, col);
}

const char *db_row_text(const struct db_row *r, int col)
{
	return (const char *)sqlite3_column_text((sqlite3_stmt *)r, col);
}

int db_row_is_null(const struct db_row *r, int col)
{
	return sqlite3_column_type((sqlite3_stmt *)r, col) == SQLITE_NULL;
}

int db_function(struct db *db, const char *name, int nargs, db_sql_fn fn, void *ud)
{
	int rc = sqlite3_create_function_v2(db->h, name, nargs, SQLITE_UTF8 | SQLITE_DIRECTONLY, ud, fn, NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return ascent_error(ASCENT_EDB, "cannot define the SQL function %s on '%s': %s", name, db->path,
				    sqlite3_errmsg(db->h));
	return 0;
}

int db_query(struct db *db, const char *sql, const struct db_bind *binds, int nbinds, db_query_cb row, void *ud,
	     int64_t *changes)
{
	int rc = 0;
	if (changes)
		*changes = 0;
	for (const char *p = sql; !rc && p && *p;) {   /* each statement of the text in turn */
		sqlite3_stmt *s = NULL;
		const char *tail = NULL;
		int prc = sqlite3_prepare_v2(db->h, p, -1, &s, &tail);
		if (prc != SQLITE_OK)
			return db_sql_err(db, prc, "cannot query", p);
		p = tail;
		if (!s)   /* only space or a comment */
			continue;
		int np = sqlite3_bind_parameter_count(s);
		for (int i = 0; i < nbinds && i < np; i++) {
			if (binds[i].text)
				db_bind_text(db, s, i + 1, binds[i].text);
			else
				db_bind_i64(db, s, i + 1, binds[i].i);
		}
		int src;
		while ((src = db_step(db, s)) == SQLITE_ROW)
			if (row && (rc = row(ud, (const struct db_row *)s)) != 0)
				break;
		if (changes && !sqlite3_stmt_readonly(s))
			*changes += sqlite3_changes64(db->h);
		int code = src == SQLITE_ROW || src == SQLITE_DONE ? SQLITE_OK : sqlite3_errcode(db->h);
		rc = db_finish(db, s, src, rc);
		if (rc && (code == SQLITE_CORRUPT || code == SQLITE_NOTADB))   /* a damaged file read: bad input */
			rc = ascent_error_ctx(ASCENT_EINPUT, "a damaged SQLite file");
	}
	return rc;
}
