/* viewer/table.c — the table model of the list views: rows of formatted cells with numeric sort
 * keys, filtering by name (case-insensitive substring), sorting by any column, and drawing with a
 * selection and scrolling into a rectangle of the screen model, dropping low-priority columns on a
 * narrow screen. */
#include "viewer/internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void vw_table_reset(struct vw_table *t)
{
	for (int i = 0; i < t->nrows; i++)
		for (int c = 0; c < VW_MAXCOLS; c++)
			free(t->rows[i].cell[c]);
	free(t->rows);
	free(t->order);
	t->rows = NULL;
	t->order = NULL;
	t->nrows = t->norder = 0;
}

struct vw_row *vw_table_add(struct vw_table *t)
{
	struct vw_row *r2 = realloc(t->rows, (size_t)(t->nrows + 1) * sizeof *r2);
	if (!r2)
		return NULL;
	t->rows = r2;
	struct vw_row *r = &t->rows[t->nrows++];
	memset(r, 0, sizeof *r);
	return r;
}

int vw_row_set(struct vw_row *r, int col, double key, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	free(r->cell[col]);
	r->cell[col] = strdup(buf);
	r->key[col] = key;
	return r->cell[col] ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory");
}

struct sortctx {
	const struct vw_table *t;
	int col, rev;
};

static int cmp_rows(const void *a, const void *b, void *ud)
{
	const struct sortctx *sc = ud;
	const struct vw_table *sort_t = sc->t;
	int sort_col = sc->col, sort_rev = sc->rev;
	const struct vw_row *x = &sort_t->rows[*(const int *)a], *y = &sort_t->rows[*(const int *)b];
	int c;
	if (sort_col == sort_t->name_col && sort_t->name_numeric) {
		c = x->key[sort_col] < y->key[sort_col] ? -1 : x->key[sort_col] > y->key[sort_col] ? 1 : 0;
	} else if (sort_col == sort_t->name_col) {
		c = strcasecmp(x->cell[sort_col] ? x->cell[sort_col] : "", y->cell[sort_col] ? y->cell[sort_col] : "");
	} else {
		/* numbers: largest first by default */
		c = x->key[sort_col] > y->key[sort_col] ? -1 : x->key[sort_col] < y->key[sort_col] ? 1 : 0;
	}
	if (!c)
		c = *(const int *)a - *(const int *)b;   /* stable */
	return sort_rev ? -c : c;
}

int vw_table_apply(struct vw_table *t, const char *filter, int col, int reverse)
{
	free(t->order);
	t->order = malloc((size_t)(t->nrows ? t->nrows : 1) * sizeof *t->order);
	t->norder = 0;
	if (!t->order)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < t->nrows; i++) {
		const char *name = t->rows[i].cell[t->name_col];
		if (filter && *filter && !(name && strcasestr(name, filter)))
			continue;
		t->order[t->norder++] = i;
	}
	if (col >= 0 && col < t->ncols) {
		struct sortctx sc = { t, col, reverse };
		qsort_r(t->order, (size_t)t->norder, sizeof *t->order, cmp_rows, &sc);
	}
	return 0;
}

/* Which columns fit in w: drop the lowest prio until the fixed widths leave ≥ 14 for the name. */
static void fit_cols(const struct vw_table *t, int w, int *show, int *namew)
{
	for (int c = 0; c < t->ncols; c++)
		show[c] = 1;
	for (;;) {
		int fixed = 0, flex = 0;
		for (int c = 0; c < t->ncols; c++)
			if (show[c]) {
				if (t->col[c].flex)
					flex++;
				else
					fixed += t->col[c].width + 1;
			}
		int left = w - fixed;
		if (left >= 14 * (flex ? 1 : 0) || fixed == 0) {
			*namew = flex ? left - 1 : 0;
			int cap = 48;
			for (int c = 0; c < t->ncols; c++)
				if (show[c] && t->col[c].flex && t->col[c].width > 0)
					cap = t->col[c].width;
			if (*namew > cap && flex)
				*namew = cap;
			return;
		}
		int drop = -1;
		for (int c = 0; c < t->ncols; c++)
			if (show[c] && !t->col[c].flex && (drop < 0 || t->col[c].prio < t->col[drop].prio))
				drop = c;
		if (drop < 0) {
			*namew = left > 1 ? left - 1 : 1;
			return;
		}
		show[drop] = 0;
	}
}

void vw_table_draw(struct vw_screen *s, int x, int y, int w, int h, const struct vw_table *t, struct vw_nav *nav,
		   int show_sel)
{
	if (h < 2 || w < 4)
		return;
	int show[VW_MAXCOLS], namew;
	fit_cols(t, w, show, &namew);
	/* header */
	vw_fill(s, x, y, w, 1, ' ', VA_HEADER);
	int cx = x;
	for (int c = 0; c < t->ncols; c++) {
		if (!show[c])
			continue;
		int cw = t->col[c].flex ? namew : t->col[c].width;
		char title[64];
		snprintf(title, sizeof title, "%s%s", t->col[c].title,
			 c == nav->sort_col ? (nav->reverse ? " ^" : " v") : "");
		int len = (int)strlen(title);
		int px = t->col[c].align == AL_RIGHT && len < cw ? cx + cw - len : cx;
		vw_put(s, px, y, cw, VA_HEADER, title);
		cx += cw + 1;
	}
	int rows = h - 1;
	if (t->norder == 0) {
		vw_put(s, x + 1, y + 1, w - 1, VA_DIM, t->nrows ? "(no row matches the filter; Esc clears it)" : "(nothing recorded)");
		nav->sel = -1;
		return;
	}
	if (nav->sel < 0)
		nav->sel = 0;
	if (nav->sel >= t->norder)
		nav->sel = t->norder - 1;
	if (nav->top > nav->sel)
		nav->top = nav->sel;
	if (nav->sel >= nav->top + rows)
		nav->top = nav->sel - rows + 1;
	if (nav->top > t->norder - rows)
		nav->top = t->norder - rows > 0 ? t->norder - rows : 0;
	if (nav->top < 0)
		nav->top = 0;
	for (int i = 0; i < rows && nav->top + i < t->norder; i++) {
		int ri = t->order[nav->top + i];
		const struct vw_row *r = &t->rows[ri];
		int sel = show_sel && nav->top + i == nav->sel;
		int attr = sel ? VA_SEL : r->attr;
		if (sel)
			vw_fill(s, x, y + 1 + i, w, 1, ' ', VA_SEL);
		cx = x;
		for (int c = 0; c < t->ncols; c++) {
			if (!show[c])
				continue;
			int cw = t->col[c].flex ? namew : t->col[c].width;
			const char *txt = r->cell[c] ? r->cell[c] : "";
			int len = (int)strlen(txt);
			char cut[256];
			if (t->col[c].flex && len > cw && cw >= 8 && cw < (int)sizeof cut) {
				/* too long for the name column: shortened as report's tables do (C++ template
				 * arguments and parameters elided, then head~tail) */
				txt = units_name(cut, sizeof cut, txt, cw);
				len = (int)strlen(txt);
			}
			int px = t->col[c].align == AL_RIGHT && len < cw ? cx + cw - len : cx;
			vw_put(s, px, y + 1 + i, cw, attr, txt);
			cx += cw + 1;
		}
	}
}
