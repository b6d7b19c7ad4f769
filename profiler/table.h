/* profiler/table.h — private to profiler/: the text tables `report` (report.c) and `diff` (diff.c)
 * print. Rows are added as strings (control bytes escaped: names come from traces); printed aligned
 * — every column right-aligned but a last column of text, the columns titled "Name" or "Stack"
 * shortened (units_name) so that the table fits `width` columns, each at least 24 wide — or as CSV
 * (RFC 4180 quoting, whole names). Out of memory while adding rows makes the print say so. */
#ifndef ASCENT_PROF_TABLE_H
#define ASCENT_PROF_TABLE_H

#include <stdio.h>

struct prof_tbl {
	int ncol;
	const char *const *cols;
	char **cells;      /* rows × ncol */
	int nrows, caprows;
	int err;
	int width;         /* the table's width in columns: names shortened to fit (0: whole names) */
};
/* Add a row: ncol strings (NULL: empty). */
void prof_tbl_row(struct prof_tbl *t, ...);
/* Print with `title` above (tables; CSV has none). */
void prof_tbl_print(struct prof_tbl *t, FILE *f, int csv, const char *title);
void prof_tbl_free(struct prof_tbl *t);   /* the rows; the table can be filled again */

#endif
