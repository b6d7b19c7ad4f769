/* viewer/diffview.c — `ascent view B --against A`: the diff view (key D) and its drill-down. The
 * table is db_diff's (db/diff.c: the rows and numbers of `ascent diff A B` under the viewer's rank
 * and step restriction, on both sides), sorted by the absolute change in total time; above it each
 * side's mean step and split, below it the selected row on both sides. Enter shows the row's
 * distributions on A and on B (db_diff_dist: count, mean, min, median, p95, max, a histogram on
 * bins both share). docs/viewer.md, docs/diff.md. */
#include "viewer/internal.h"

#include <stdlib.h>
#include <string.h>

#define T(x) units_ns(b, sizeof b, (double)(x))

int vw_diff_open(struct viewer *v, const char *path)
{
	/* a run folder: its trace.db, as for the profile itself */
	char trace[4200];
	if (fs_is_dir(path)) {
		snprintf(trace, sizeof trace, "%s/trace.db", path);
		if (!fs_exists(trace))
			return ascent_error(ASCENT_EINPUT, "--against '%s': the folder holds no trace.db (a finished run's folder "
					    "or a profile database)", path);
		path = trace;
	}
	if (!fs_exists(path))
		return ascent_error(ASCENT_EINPUT, "--against '%s': no such file (a profile: runs/NAME/trace.db, or the "
				    "output of ascent import)", path);
	snprintf(v->apath, sizeof v->apath, "%s", path);
	int rc = db_open(path, DB_READ, &v->adb);
	if (rc)
		return ascent_error_ctx(rc, "--against '%s'", path);
	struct db_view_probe p;
	if ((rc = db_view_probe(v->adb, &p)) != 0)
		return rc;
	if (!p.has_events)
		return ascent_error(ASCENT_EINPUT, "--against '%s' holds no events: nothing to compare with", path);
	if (!p.indexed)
		return ascent_error(ASCENT_EINPUT, "--against '%s': the profile was not finished (no indexes); merge or "
				    "finalize it first", path);
	/* its summary tables, as for the profile itself: the diff reads them (docs/diff.md, Speed) */
	return db_view_prepare(v->adb, NULL);
}

void vw_diff_free(struct viewer *v)
{
	db_diff_free(&v->diff);
	free(v->asteps);
	v->asteps = NULL;
	v->nasteps = 0;
	db_close(v->adb);
	v->adb = NULL;
}

/* ---------------------------------------------------------------------------------------- */

int vw_diff_load(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_DIFF];
	static const struct vw_col C[] = {
		{ "name", 0, AL_LEFT, 100, 1 }, { "kind", 10, AL_LEFT, 5, 0 }, { "category", 9, AL_LEFT, 7, 0 },
		{ "change", 11, AL_RIGHT, 10, 0 }, { "change %", 9, AL_RIGHT, 6, 0 }, { "A total", 10, AL_RIGHT, 9, 0 },
		{ "B total", 10, AL_RIGHT, 9, 0 }, { "A calls", 8, AL_RIGHT, 4, 0 }, { "B calls", 8, AL_RIGHT, 4, 0 },
	};   /* the means are in the panel under the table */
	vw_table_reset(t);
	t->ncols = 9;
	for (int i = 0; i < t->ncols; i++)
		t->col[i] = C[i];
	t->name_col = 0;
	t->name_numeric = 0;
	db_diff_free(&v->diff);
	v->dist_row = -1;
	int rc = db_diff(v->adb, v->f, v->db, v->f, 0, &v->diff);
	if (rc)
		return rc;
	char b[32];
	for (int i = 0; i < v->diff.nrows; i++) {
		const struct db_diff_row *d = &v->diff.rows[i];
		struct vw_row *r = vw_table_add(t);
		if (!r)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		int64_t delta = d->total_ns[1] - d->total_ns[0];
		r->id = i;
		r->kind = d->kind;
		vw_row_set(r, 0, 0, "%s", d->name);
		vw_row_set(r, 1, d->kind, "%s", db_kind_name(d->kind));
		vw_row_set(r, 2, d->category, "%s", db_diff_cat_name(d->category));
		/* sorted by the size of the change, either way; shown with its sign */
		vw_row_set(r, 3, (double)(delta < 0 ? -delta : delta), "%s%s", delta > 0 ? "+" : delta < 0 ? "-" : "",
			   T(delta < 0 ? -delta : delta));
		if (d->total_ns[0] > 0) {
			double pct = 100.0 * (double)delta / (double)d->total_ns[0];
			if (pct < 10000)
				vw_row_set(r, 4, pct < 0 ? -pct : pct, "%+.1f%%", pct);
			else   /* 100 times A's and more: the ratio */
				vw_row_set(r, 4, pct, "x%.0f", (double)d->total_ns[1] / (double)d->total_ns[0]);
		} else {
			vw_row_set(r, 4, 1e300, "%s", d->total_ns[1] > 0 ? "new" : "-");
		}
		vw_row_set(r, 5, (double)d->total_ns[0], "%s", T(d->total_ns[0]));
		vw_row_set(r, 6, (double)d->total_ns[1], "%s", T(d->total_ns[1]));
		vw_row_set(r, 7, (double)d->count[0], "%s", vw_fmt_count(b, sizeof b, d->count[0]));
		vw_row_set(r, 8, (double)d->count[1], "%s", vw_fmt_count(b, sizeof b, d->count[1]));
	}
	return 0;
}

static const struct db_diff_row *sel_diff_row(const struct viewer *v)
{
	const struct vw_table *t = &v->tab[VW_DIFF];
	int s = v->nav[VW_DIFF].sel;
	if (s < 0 || s >= t->norder)
		return NULL;
	int64_t i = t->rows[t->order[s]].id;
	return i >= 0 && i < v->diff.nrows ? &v->diff.rows[i] : NULL;
}

int vw_diff_drill(struct viewer *v)
{
	const struct db_diff_row *d = sel_diff_row(v);
	if (!d)
		return 0;
	v->dist_row = (int)(d - v->diff.rows);
	return db_diff_dist(v->adb, v->f, v->db, v->f, d->kind, d->name, 0, &v->dist);
}

/* ---------------------------------------------------------------------------------------- */

/* Each side's mean step time and split, the change in points. */
static int draw_sides(struct viewer *v, struct vw_screen *s, int y)
{
	const struct db_diff_side *sd = v->diff.side;
	char b[32], b2[32], b3[32];
	double mean[2];
	for (int i = 0; i < 2; i++)
		mean[i] = sd[i].step_rows ? (double)sd[i].step_total_ns / (double)sd[i].step_rows : 0;
	vw_putf(s, 0, y, -1, VA_TITLE, "A %s   B %s", v->apath, v->o.path);
	y++;
	if (sd[0].step_rows && sd[1].step_rows) {
		double d = mean[1] - mean[0];
		vw_putf(s, 0, y, -1, VA_NORMAL, "mean step %s -> %s, %s%s (%+.1f%%)   steps %lld -> %lld   ranks %d -> %d",
			units_ns(b, sizeof b, mean[0]), units_ns(b2, sizeof b2, mean[1]), d > 0 ? "+" : d < 0 ? "-" : "",
			units_ns(b3, sizeof b3, d < 0 ? -d : d), mean[0] > 0 ? 100 * (mean[1] - mean[0]) / mean[0] : 0,
			(long long)sd[0].steps, (long long)sd[1].steps, sd[0].nranks, sd[1].nranks);
		y++;
		const int64_t *ph[2][4] = { { &sd[0].computing_ns, &sd[0].comm_not_overlapped_ns, &sd[0].free_ns, &sd[0].bubble_ns },
					    { &sd[1].computing_ns, &sd[1].comm_not_overlapped_ns, &sd[1].free_ns, &sd[1].bubble_ns } };
		static const char *const PN[4] = { "computing", "comm not overlapped", "free", "bubble" };
		int x = 0;
		for (int p = 0; p < 4; p++) {
			double pa = 100.0 * (double)*ph[0][p] / (double)sd[0].step_total_ns,
			       pb = 100.0 * (double)*ph[1][p] / (double)sd[1].step_total_ns;
			x += vw_putf(s, x, y, -1, VA_NORMAL, "%s %.1f%% -> %.1f%% (%+.1f pt)  ", PN[p], pa, pb, pb - pa);
		}
	} else {
		vw_putf(s, 0, y, -1, VA_DIM, "steps %lld -> %lld: a side has no step (no step time to compare)   ranks %d -> %d",
			(long long)sd[0].steps, (long long)sd[1].steps, sd[0].nranks, sd[1].nranks);
	}
	return y + 1;
}

void vw_diff_draw(struct viewer *v, struct vw_screen *s, int y0, int h)
{
	int y = draw_sides(v, s, y0);
	int panel = h >= 16 ? 3 : 0;
	vw_table_draw(s, 0, y, s->w, y0 + h - y - panel, &v->tab[VW_DIFF], &v->nav[VW_DIFF], 1);
	const struct db_diff_row *d = sel_diff_row(v);
	if (!panel || !d)
		return;
	char b[32], b2[32];
	int yp = y0 + h - panel;
	vw_putf(s, 0, yp, -1, VA_TITLE, "%s (Enter: its distributions on A and on B): %s %s", db_diff_cat_name(d->category),
		db_kind_name(d->kind), d->name);
	for (int k = 0; k < 2; k++) {
		double m = d->count[k] ? (double)d->total_ns[k] / (double)d->count[k] : 0;
		vw_putf(s, 2, yp + 1 + k, -1, VA_NORMAL, "%s  calls %-10lld total %-11s mean %s", k ? "B" : "A",
			(long long)d->count[k], units_ns(b, sizeof b, (double)d->total_ns[k]),
			d->count[k] ? units_ns(b2, sizeof b2, m) : "-");
	}
}

void vw_diff_row_draw(struct viewer *v, struct vw_screen *s, int y0, int h)
{
	int y = y0, ymax = y0 + h;
	if (v->dist_row < 0 || v->dist_row >= v->diff.nrows) {
		vw_put(s, 0, y, -1, VA_DIM, "(no row: Backspace goes back to the diff)");
		return;
	}
	const struct db_diff_row *d = &v->diff.rows[v->dist_row];
	const struct db_diff_dist *ds = &v->dist;
	char b[32];
	vw_putf(s, 0, y++, -1, VA_TITLE, "durations on A and on B (%s by count): %s %s", db_diff_cat_name(d->category),
		db_kind_name(d->kind), d->name);
	y++;
	static const char *const H[] = { "", "instances", "mean", "min", "median", "p95", "max" };
	int x = 0;
	for (int c = 0; c < 7; c++)
		x += vw_putf(s, x, y, c ? 12 : 4, VA_HEADER, c ? "%11s " : "%-3s ", H[c]);
	y++;
	for (int k = 0; k < 2 && y < ymax; k++, y++) {
		x = vw_putf(s, 0, y, 4, VA_NORMAL, "%-3s ", k ? "B" : "A");
		if (!ds->n[k]) {
			vw_put(s, x, y, -1, VA_DIM, "none under the restriction");
			continue;
		}
		const double val[5] = { ds->mean_ns[k], (double)ds->min_ns[k], (double)ds->med_ns[k], (double)ds->p95_ns[k],
					(double)ds->max_ns[k] };
		x += vw_putf(s, x, y, 12, VA_NORMAL, "%11lld ", (long long)ds->n[k]);
		for (int c = 0; c < 5; c++)
			x += vw_putf(s, x, y, 12, VA_NORMAL, "%11s ", units_ns(b, sizeof b, val[c]));
	}
	y++;
	if (!ds->nbins || y >= ymax)
		return;
	vw_putf(s, 0, y++, -1, VA_TITLE, "histogram (instances per duration bin, log-spaced; # A, = B)");
	int64_t most = 1;
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < ds->nbins; i++)
			if (ds->hist[k][i] > most)
				most = ds->hist[k][i];
	int barw = s->w - 48 > 8 ? s->w - 48 : 8;
	for (int i = 0; i < ds->nbins && y + 1 < ymax; i++) {
		char lo[32], hi[32];
		units_ns(lo, sizeof lo, (double)ds->edge_ns[i]);
		units_ns(hi, sizeof hi, (double)ds->edge_ns[i + 1]);
		for (int k = 0; k < 2; k++, y++) {
			if (k == 0)
				vw_putf(s, 0, y, 22, VA_NORMAL, "%9s-%-10s", lo, hi);
			vw_putf(s, 22, y, 12, VA_NORMAL, "%s %8lld ", k ? "B" : "A", (long long)ds->hist[k][i]);
			int n = (int)((double)ds->hist[k][i] / (double)most * barw + 0.5);
			if (ds->hist[k][i] > 0 && n == 0)
				n = 1;
			for (int c = 0; c < n; c++)
				vw_put(s, 34 + c, y, 1, k ? VA_COMM : VA_COMPUTE, k ? "=" : "#");
		}
	}
}
