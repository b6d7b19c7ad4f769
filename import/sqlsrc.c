/* import/sqlsrc.c — the SQLite sources' shared reading (sqlsrc.h). */
#include "import/sqlsrc.h"

#include "common/common.h"

#include <stdlib.h>
#include <string.h>

int sqlsrc_open(struct sqlsrc *s)
{
	/* read-only and immutable: SQLite writes nothing beside the input (no journal, no WAL) */
	char *uri = db_readonly_uri(s->path);
	if (!uri)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int rc = 0;
	if (sqlite3_open_v2(uri, &s->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, NULL) != SQLITE_OK)
		rc = ascent_error(ASCENT_EINPUT, "cannot open '%s' as SQLite: %s", s->path,
				  s->db ? sqlite3_errmsg(s->db) : "out of memory");
	free(uri);
	/* a view can make a read endless (a recursive one) or enormous (a cross join), and the
	 * profilers write none: refused (a file SQLite cannot read is reported by the reader) */
	sqlite3_stmt *st = NULL;
	if (!rc && sqlite3_prepare_v2(s->db, "SELECT name FROM sqlite_master WHERE type = 'view' LIMIT 1", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		rc = ascent_error(ASCENT_EINPUT, "'%s' holds a view ('%s'): profiler exports hold only tables, and a view can "
				  "make a read endless; import the file the profiler wrote, or drop the views", s->path,
				  sqlsrc_text(st, 0) ? sqlsrc_text(st, 0) : "?");
	sqlite3_finalize(st);
	return rc;
}

int sqlsrc_close(struct sqlsrc *s, int rc)
{
	if (!rc)
		rc = s->err;
	sqlite3_close(s->db);
	s->db = NULL;
	if (s->has_step_re)
		regfree(&s->step_re);
	s->has_step_re = 0;
	return rc;
}

/* The one place an SQLite failure becomes a message: the file and the table. */
int sqlsrc_fail(struct sqlsrc *n, const char *table, int rc)
{
	return ascent_error(rc == SQLITE_NOMEM ? ASCENT_ENOMEM : ASCENT_EINPUT, "'%s': table %s: %s", n->path,
			    table, sqlite3_errmsg(n->db));
}

/* Whether the one-row probe `sql` (text parameters a, b) finds a row; a failure is kept in n->err
 * (reported by sqlsrc_close) and answers "absent". */
static int probe(struct sqlsrc *n, const char *table, const char *sql, const char *a, const char *b)
{
	sqlite3_stmt *st;
	int rc = sqlite3_prepare_v2(n->db, sql, -1, &st, NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_bind_text(st, 1, a, -1, SQLITE_STATIC);
	if (rc == SQLITE_OK && b)
		rc = sqlite3_bind_text(st, 2, b, -1, SQLITE_STATIC);
	int found = 0;
	if (rc == SQLITE_OK) {
		rc = sqlite3_step(st);
		found = rc == SQLITE_ROW;
		if (rc == SQLITE_ROW || rc == SQLITE_DONE)
			rc = SQLITE_OK;
	}
	if (rc != SQLITE_OK && !n->err)
		n->err = sqlsrc_fail(n, table, rc);
	sqlite3_finalize(st);
	return found;
}

int sqlsrc_has_table(struct sqlsrc *n, const char *table)
{
	return probe(n, table, "SELECT 1 FROM sqlite_master WHERE type IN ('table','view') AND name = ?1", table, NULL);
}

int sqlsrc_has_column(struct sqlsrc *n, const char *table, const char *col)
{
	return probe(n, table, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", table, col);
}

/* `col` of table `t` as an expression: the column, or NULL when this export lacks it. */
const char *sqlsrc_col_or_null(struct sqlsrc *n, const char *t, const char *col)
{
	return sqlsrc_has_column(n, t, col) ? col : "NULL";
}

/* Required columns of a table this reader uses: an error naming the first one missing. */
int sqlsrc_need_columns(struct sqlsrc *n, const char *table, const char *const *cols)
{
	for (int i = 0; cols[i]; i++)
		if (!sqlsrc_has_column(n, table, cols[i]))
			return ascent_error(ASCENT_EINPUT, "'%s': table %s has no column %s: a version of this format the importer does not know",
					    n->path, table, cols[i]);
	return 0;
}

int sqlsrc_use_table(struct sqlsrc *n, const char *table, const char *const *cols, int *rc)
{
	*rc = 0;
	if (!sqlsrc_has_table(n, table))
		return 0;
	*rc = sqlsrc_need_columns(n, table, cols);
	return !*rc;
}

int sqlsrc_prepare(struct sqlsrc *n, const char *table, const char *sql, sqlite3_stmt **st)
{
	int rc = sqlite3_prepare_v2(n->db, sql, -1, st, NULL);
	return rc == SQLITE_OK ? 0 : sqlsrc_fail(n, table, rc);
}

int sqlsrc_each_row(struct sqlsrc *n, const char *table, const char *sql, int64_t pid,
		    int (*row)(struct sqlsrc *, sqlite3_stmt *, void *), void *arg)
{
	sqlite3_stmt *st;
	int rc = sqlsrc_prepare(n, table, sql, &st);
	if (rc)
		return rc;
	int s = pid >= 0 ? sqlite3_bind_int64(st, 1, pid) : SQLITE_OK;
	if (s != SQLITE_OK) {
		sqlite3_finalize(st);
		return sqlsrc_fail(n, table, s);
	}
	while ((s = sqlite3_step(st)) == SQLITE_ROW) {
		if ((rc = row(n, st, arg)) != 0)
			break;
		if ((++n->rows & 0xffff) == 0 && n->total_rows > 0)
			imp_progress(n->im, (int64_t)((double)n->size * (double)(n->rows < n->total_rows ? n->rows : n->total_rows) /
						      (double)n->total_rows));
	}
	if (!rc && s != SQLITE_DONE)
		rc = sqlsrc_fail(n, table, s);
	sqlite3_finalize(st);
	return rc;
}

const char *sqlsrc_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

int sqlsrc_is_null(sqlite3_stmt *st, int i)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL;
}

void sqlsrc_warn_row(struct sqlsrc *n, enum imp_warning w, const char *table)
{
	char b[160];
	snprintf(b, sizeof b, "table %s", table);
	imp_warn(n->im, w, b);
}

int sqlsrc_time(sqlite3_stmt *st, int i, int64_t *v)
{
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		*v = sqlite3_column_int64(st, i);
		return 0;
	case SQLITE_FLOAT: {
		double d = sqlite3_column_double(st, i);
		if (!(d > -4.0e18 && d < 4.0e18) || d != (double)(int64_t)d)
			return -1;
		*v = (int64_t)d;
		return 0;
	}
	case SQLITE_TEXT: {
		const unsigned char *t = sqlite3_column_text(st, i);
		int64_t x = 0;
		int n = 0;
		for (; t && t[n] >= '0' && t[n] <= '9'; n++)
			if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, t[n] - '0', &x))
				return -1;
		if (!t || !n || t[n])   /* empty or not digits only */
			return -1;
		*v = x;
		return 0;
	}
	default:
		return -1;
	}
}

void sqlsrc_time_sql(const char *col, char *out, size_t n)
{
	const char *c = col;
	snprintf(out, n,
		 "(CASE WHEN typeof(%s) = 'integer' THEN %s WHEN typeof(%s) = 'text' AND length(%s) BETWEEN 1 AND 19"
		 " AND %s NOT GLOB '*[^0-9]*' THEN CAST(%s AS INTEGER) WHEN typeof(%s) = 'real' AND abs(%s) < 4.0e18"
		 " AND %s = CAST(%s AS INTEGER) THEN CAST(%s AS INTEGER) END)",
		 c, c, c, c, c, c, c, c, c, c, c);
}

/* start, end of a row as a checked duration: 0 ok, else counted and skipped. */
int sqlsrc_row_time(struct sqlsrc *n, sqlite3_stmt *st, int i, const char *table, int64_t *start, int64_t *dur)
{
	if (sqlsrc_is_null(st, i) || sqlsrc_is_null(st, i + 1)) {
		sqlsrc_warn_row(n, IMP_W_NO_DUR, table);
		return -1;
	}
	int64_t end;
	if (sqlsrc_time(st, i, start) || sqlsrc_time(st, i + 1, &end) || *start < 0 || end < *start ||
	    end - *start > IMP_MAX_NS) {
		sqlsrc_warn_row(n, IMP_W_BAD_TIME, table);
		return -1;
	}
	*dur = end - *start;
	return 0;
}

int sqlsrc_query_i64(struct sqlsrc *n, const char *table, const char *sql, int64_t *v)
{
	sqlite3_stmt *st;
	int rc = sqlsrc_prepare(n, table, sql, &st);
	if (rc)
		return rc;
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW && !sqlsrc_is_null(st, 0))
		*v = sqlite3_column_int64(st, 0);
	else if (s != SQLITE_ROW && s != SQLITE_DONE)
		rc = sqlsrc_fail(n, table, s);
	sqlite3_finalize(st);
	return rc;
}

int sqlsrc_query_text(struct sqlsrc *n, const char *table, const char *sql, char *out, size_t size)
{
	sqlite3_stmt *st;
	int rc = sqlsrc_prepare(n, table, sql, &st);
	if (rc)
		return rc;
	int s = sqlite3_step(st);
	if (s == SQLITE_ROW && sqlsrc_text(st, 0))
		snprintf(out, size, "%s", sqlsrc_text(st, 0));
	else if (s != SQLITE_ROW && s != SQLITE_DONE)
		rc = sqlsrc_fail(n, table, s);
	sqlite3_finalize(st);
	return rc;
}
