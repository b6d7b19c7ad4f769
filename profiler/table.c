/* profiler/table.c — the text tables `report` and `diff` print: a header and rows of strings,
 * aligned (numbers right, a name column fitted to the width) or as CSV. profiler/table.h. */
#include "profiler/table.h"
#include "common/common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>


void prof_tbl_row(struct prof_tbl *t, ...)
{
	if (t->err)
		return;
	if (t->nrows == t->caprows) {
		int nc = t->caprows ? t->caprows * 2 : 32;
		char **c2 = realloc(t->cells, (size_t)nc * (size_t)t->ncol * sizeof *c2);
		if (!c2) {
			t->err = 1;
			return;
		}
		t->cells = c2;
		t->caprows = nc;
	}
	va_list ap;
	va_start(ap, t);
	for (int i = 0; i < t->ncol; i++) {
		const char *v = va_arg(ap, const char *);
		/* names come from traces: a control byte would drive the terminal (or split a CSV row) */
		char *s = units_printable(v ? v : "");
		if (!s)
			t->err = 1;
		t->cells[t->nrows * t->ncol + i] = s;
	}
	va_end(ap);
	t->nrows++;
}

static int is_num(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!strchr("0123456789.-+e% nusmGBKMkx", *s))
			return 0;
	return 1;
}

static void csv_cell(FILE *f, const char *s)
{
	if (!strpbrk(s, ",\"\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

/* The name columns (a header naming what the row is: "Name", "Stack") shortened so that the
 * table fits t->width columns (units_name: C++ arguments elided, then head~tail), each at least
 * 24 wide; w: the columns' widths, updated. */
static void fit_names(struct prof_tbl *t, int *w)
{
	if (t->width <= 0 || t->ncol > 32)
		return;
	int fixed = 0, nname = 0;
	for (int i = 0; i < t->ncol; i++) {
		int name = !strcmp(t->cols[i], "Name") || !strcmp(t->cols[i], "Stack");
		nname += name;
		fixed += (name ? 0 : w[i]) + 2;
	}
	if (!nname)
		return;
	int room = (t->width - fixed) / nname;
	if (room < 24)
		room = 24;
	for (int i = 0; i < t->ncol; i++) {
		if ((strcmp(t->cols[i], "Name") && strcmp(t->cols[i], "Stack")) || w[i] <= room)
			continue;
		w[i] = (int)strlen(t->cols[i]);
		for (int r = 0; r < t->nrows; r++) {
			char **c = &t->cells[r * t->ncol + i];
			if ((int)strlen(*c) > room) {
				size_t n = strlen(*c) + 1;
				char *s = malloc(n);
				if (s) {
					units_name(s, n, *c, room);
					free(*c);
					*c = s;
				}
			}
			int l = (int)strlen(*c);
			if (l > w[i])
				w[i] = l;
		}
	}
}

void prof_tbl_print(struct prof_tbl *t, FILE *f, int csv, const char *title)
{
	if (t->err) {
		fprintf(f, "%s: out of memory\n", title ? title : "table");
		return;
	}
	if (csv) {
		for (int i = 0; i < t->ncol; i++) {
			if (i)
				fputc(',', f);
			csv_cell(f, t->cols[i]);
		}
		fputc('\n', f);
		for (int r = 0; r < t->nrows; r++) {
			for (int i = 0; i < t->ncol; i++) {
				if (i)
					fputc(',', f);
				csv_cell(f, t->cells[r * t->ncol + i]);
			}
			fputc('\n', f);
		}
		return;
	}
	if (title)
		fprintf(f, "\n%s\n\n", title);
	int w[32] = { 0 };
	for (int i = 0; i < t->ncol && i < 32; i++) {
		w[i] = (int)strlen(t->cols[i]);
		for (int r = 0; r < t->nrows; r++) {
			int l = (int)strlen(t->cells[r * t->ncol + i]);
			if (l > w[i])
				w[i] = l;
		}
	}
	fit_names(t, w);
	for (int i = 0; i < t->ncol; i++) {
		if (i == t->ncol - 1)   /* the last column unpadded: no trailing blanks */
			fprintf(f, "%s%s", i ? "  " : " ", t->cols[i]);
		else
			fprintf(f, "%s%*s", i ? "  " : " ", w[i], t->cols[i]);
	}
	fputc('\n', f);
	for (int i = 0; i < t->ncol; i++) {
		fputs(i ? "  " : " ", f);
		for (int k = 0; k < w[i]; k++)
			fputc('-', f);
	}
	fputc('\n', f);
	for (int r = 0; r < t->nrows; r++) {
		for (int i = 0; i < t->ncol; i++) {
			const char *c = t->cells[r * t->ncol + i];
			int right = i < t->ncol - 1 || is_num(c);
			fprintf(f, "%s%*s", i ? "  " : " ", right ? w[i] : i == t->ncol - 1 ? 0 : -w[i], c);
		}
		fputc('\n', f);
	}
	if (!t->nrows)
		fprintf(f, " (no data)\n");
}

void prof_tbl_free(struct prof_tbl *t)
{
	for (int i = 0; i < t->nrows * t->ncol; i++)
		free(t->cells[i]);
	free(t->cells);
	t->cells = NULL;
	t->nrows = t->caprows = 0;
}
