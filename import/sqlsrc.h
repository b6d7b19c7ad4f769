/* import/sqlsrc.h — what the SQLite sources (nsys.c: Nsight Systems exports, ascend.c: Ascend
 * profiler databases) share: the input opened read-only and immutable (SQLite writes no journal or
 * lock file beside it), tables and columns that may or may not exist in a given version, queries
 * whose rows go to a callback, counted warnings naming the table, progress. Internal to import/.
 *
 * Every SQLite failure becomes one message naming the file and the table (sqlsrc_fail). */
#ifndef ASCENT_IMPORT_SQLSRC_H
#define ASCENT_IMPORT_SQLSRC_H

#include "import/import.h"

#include <regex.h>
#include <sqlite3.h>
#include <stdint.h>

struct sqlsrc {
	struct imp *im;
	const char *path;
	sqlite3 *db;
	int64_t size;         /* the file's size, for progress */
	int64_t rows;         /* rows read so far */
	int64_t total_rows;   /* rows of the tables to read (0 unknown), for progress */
	int64_t origin;       /* the earliest time in the file */
	regex_t step_re;      /* Nsight: the names of ranges that are steps */
	int has_step_re;
	int err;              /* the first failure of a probe (sqlsrc_has_table/_column), else 0 */
};

/* Open s->path (set s->im, s->path, s->size first): an error naming the file if it cannot. */
int sqlsrc_open(struct sqlsrc *s);
/* Close; returns rc, else the first failure a probe met (a probe answers "absent" when SQLite fails,
 * so that a damaged file is still reported as such once the reader is done). */
int sqlsrc_close(struct sqlsrc *s, int rc);

int sqlsrc_fail(struct sqlsrc *s, const char *table, int rc);
int sqlsrc_has_table(struct sqlsrc *s, const char *table);
int sqlsrc_has_column(struct sqlsrc *s, const char *table, const char *col);
/* `col` of `t` as an SQL expression: the column, or NULL when this version lacks it. */
const char *sqlsrc_col_or_null(struct sqlsrc *s, const char *t, const char *col);
/* Required columns (NULL-terminated): an error naming the table and the first one missing. */
int sqlsrc_need_columns(struct sqlsrc *s, const char *table, const char *const *cols);
/* A table a reader maps when it is there: 1 when `table` exists with every column of `cols`; 0 when
 * it is absent (*rc = 0: the export has no such events, never an error) or lacks a column (*rc =
 * sqlsrc_need_columns' error). */
int sqlsrc_use_table(struct sqlsrc *s, const char *table, const char *const *cols, int *rc);
int sqlsrc_prepare(struct sqlsrc *s, const char *table, const char *sql, sqlite3_stmt **st);
/* Run sql (with ?1 bound to `key` when key ≥ 0), handing each row to `row`; a non-zero return stops. */
int sqlsrc_each_row(struct sqlsrc *s, const char *table, const char *sql, int64_t key,
		    int (*row)(struct sqlsrc *, sqlite3_stmt *, void *), void *arg);
/* The first column of the first row into *v (left alone when there is none or it is NULL). */
int sqlsrc_query_i64(struct sqlsrc *s, const char *table, const char *sql, int64_t *v);
/* The same for text, copied into out[size] (left alone when there is no row or it is NULL). */
int sqlsrc_query_text(struct sqlsrc *s, const char *table, const char *sql, char *out, size_t size);
const char *sqlsrc_text(sqlite3_stmt *st, int i);
int sqlsrc_is_null(sqlite3_stmt *st, int i);
/* Count a skipped row of `table`. */
void sqlsrc_warn_row(struct sqlsrc *s, enum imp_warning w, const char *table);
/* A time column's value: an INTEGER, a TEXT of decimal digits only (Ascend stores some times as
 * text) or a whole REAL below 2^62; 0 and *v, else −1 ('abc', '', '0x10', '1.5e30', NULL). */
int sqlsrc_time(sqlite3_stmt *st, int i, int64_t *v);
/* The same test in SQL: into out[n], an expression of column `col` that is its value as an integer,
 * or NULL when it is no time. */
void sqlsrc_time_sql(const char *col, char *out, size_t n);
/* Columns i, i+1 as start and end: 0 and the start and duration, or −1 (counted) when NULL, no
 * time (sqlsrc_time), negative, reversed or longer than IMP_MAX_NS. */
int sqlsrc_row_time(struct sqlsrc *s, sqlite3_stmt *st, int i, const char *table, int64_t *start, int64_t *dur);

#endif
