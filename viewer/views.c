/* viewer/views.c — the list views: each loads its table (or text) from the db/ viewer queries
 * for the current rank/step restriction and draws it into the screen model: overview, operators,
 * collectives (+ per communicator), steps (+ sparklines), ranks (+ rank × rank matrix), memory
 * (+ memory over time), and the instances drill-down. */
#include "viewer/internal.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static void setcols(struct vw_table *t, const struct vw_col *c, int n, int name_col)
{
	t->ncols = n;
	for (int i = 0; i < n; i++)
		t->col[i] = c[i];
	t->name_col = name_col;
	t->name_numeric = 0;
}

#define T(x) units_ns(b, sizeof b, (double)(x))
#define B(x) units_bytes(b, sizeof b, (double)(x))

/* ---------------------------------------------------------------------------------------- */
/* operators */

static int load_ops(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_OPS];
	static const struct vw_col C[] = {
		{ "name", 0, AL_LEFT, 100, 1 }, { "calls", 8, AL_RIGHT, 5, 0 }, { "total", 10, AL_RIGHT, 9, 0 },
		{ "%", 6, AL_RIGHT, 8, 0 }, { "avg", 9, AL_RIGHT, 7, 0 }, { "med", 9, AL_RIGHT, 4, 0 },
		{ "min", 9, AL_RIGHT, 2, 0 }, { "max", 9, AL_RIGHT, 3, 0 }, { "p95", 9, AL_RIGHT, 1, 0 },
		{ "GFLOP/s", 8, AL_RIGHT, 6, 0 },
	};
	vw_table_reset(t);
	setcols(t, C, 10, 0);
	if (v->self_mode)
		t->col[2].title = "self";
	struct db_view_op *o;
	int n;
	int rc = vw_q_ops(v, &o, &n);
	if (rc)
		return rc;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += (double)(v->self_mode ? o[i].self_ns : o[i].total_ns);
	char b[32];
	for (int i = 0; i < n && !rc; i++) {
		struct vw_row *r = vw_table_add(t);
		if (!r) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		double tot = (double)(v->self_mode ? o[i].self_ns : o[i].total_ns);
		r->id = o[i].name_id;
		r->kind = o[i].kind;
		vw_row_set(r, 0, 0, "%s", o[i].name);
		vw_row_set(r, 1, (double)o[i].count, "%s", vw_fmt_count(b, sizeof b, o[i].count));
		vw_row_set(r, 2, tot, "%s", T(tot));
		vw_row_set(r, 3, sum > 0 ? 100 * tot / sum : 0, "%.1f", sum > 0 ? 100 * tot / sum : 0);
		vw_row_set(r, 4, o[i].count ? tot / o[i].count : 0, "%s", T(o[i].count ? tot / o[i].count : 0));
		vw_row_set(r, 5, (double)o[i].med_ns, "%s", T(o[i].med_ns));
		vw_row_set(r, 6, (double)o[i].min_ns, "%s", T(o[i].min_ns));
		vw_row_set(r, 7, (double)o[i].max_ns, "%s", T(o[i].max_ns));
		vw_row_set(r, 8, (double)o[i].p95_ns, "%s", T(o[i].p95_ns));
		double gf = o[i].flops_ns > 0 ? o[i].flops / (double)o[i].flops_ns : -1;
		if (gf >= 0)
			vw_row_set(r, 9, gf, "%.1f", gf);
		else
			vw_row_set(r, 9, -1, "-");
	}
	db_view_ops_free(o, n);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* collectives */

static int load_comm(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_COMM];
	static const struct vw_col C[] = {
		{ "collective", 0, AL_LEFT, 100, 1 }, { "kind", 4, AL_LEFT, 2, 0 }, { "size", 9, AL_RIGHT, 6, 0 },
		{ "calls", 8, AL_RIGHT, 7, 0 }, { "total", 10, AL_RIGHT, 9, 0 }, { "avg", 9, AL_RIGHT, 5, 0 },
		{ "bytes", 9, AL_RIGHT, 4, 0 }, { "algbw", 7, AL_RIGHT, 3, 0 }, { "busbw", 7, AL_RIGHT, 8, 0 },
		{ "wait", 9, AL_RIGHT, 6, 0 }, { "transit", 9, AL_RIGHT, 5, 0 }, { "queued", 9, AL_RIGHT, 1, 0 },
	};
	static const struct vw_col D[] = {
		{ "communicator", 0, AL_LEFT, 100, 1 }, { "ranks", 12, AL_LEFT, 9, 0 }, { "n", 4, AL_RIGHT, 8, 0 },
		{ "calls", 8, AL_RIGHT, 7, 0 }, { "total", 10, AL_RIGHT, 9, 0 }, { "bytes", 9, AL_RIGHT, 6, 0 },
		{ "wait", 9, AL_RIGHT, 8, 0 }, { "transit", 9, AL_RIGHT, 5, 0 }, { "late", 9, AL_RIGHT, 2, 0 },
	};
	vw_table_reset(t);
	setcols(t, C, 12, 0);
	vw_table_reset(&v->commtab);
	setcols(&v->commtab, D, 9, 0);
	struct db_view_comm *c;
	int n;
	int rc = vw_q_comms(v, 0, &c, &n);
	if (rc)
		return rc;
	char b[32];
	for (int i = 0; i < n; i++) {
		struct vw_row *r = vw_table_add(t);
		if (!r) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		r->id = c[i].name_id;
		r->kind = c[i].kind;
		double alg = db_comm_algbw(c[i].bytes, c[i].count, c[i].total_ns, c[i].matched, c[i].transit_ns);
		double bus = c[i].kind == DB_KIND_COMM ? alg * db_busbw_factor(c[i].name, c[i].group_size) : alg;
		vw_row_set(r, 0, 0, "%s", c[i].name);
		vw_row_set(r, 1, c[i].kind, "%s", db_kind_name(c[i].kind));
		vw_row_set(r, 2, (double)c[i].bucket, "%s", B(c[i].bucket));
		vw_row_set(r, 3, (double)c[i].count, "%s", vw_fmt_count(b, sizeof b, c[i].count));
		vw_row_set(r, 4, (double)c[i].total_ns, "%s", T(c[i].total_ns));
		vw_row_set(r, 5, c[i].count ? (double)c[i].total_ns / c[i].count : 0, "%s",
			   T(c[i].count ? (double)c[i].total_ns / c[i].count : 0));
		vw_row_set(r, 6, (double)c[i].bytes, "%s", B(c[i].bytes));
		vw_row_set(r, 7, alg, "%.2f", alg);
		vw_row_set(r, 8, bus, "%.2f", bus);
		vw_row_set(r, 9, (double)c[i].wait_ns, "%s", c[i].matched ? T(c[i].wait_ns) : "-");
		vw_row_set(r, 10, (double)c[i].transit_ns, "%s", c[i].matched ? T(c[i].transit_ns) : "-");
		vw_row_set(r, 11, (double)c[i].queue_ns, "%s", T(c[i].queue_ns));
	}
	db_view_comms_free(c, n);
	if (rc)
		return rc;
	if ((rc = vw_q_comms(v, 1, &c, &n)) != 0)
		return rc;
	for (int i = 0; i < n; i++) {
		struct vw_row *r = vw_table_add(&v->commtab);
		if (!r) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		if (*c[i].name)
			vw_row_set(r, 0, 0, "%s", c[i].name);
		else
			vw_row_set(r, 0, 0, "comm %d", c[i].comm_id);
		/* world ranks of the members (several dp/pp groups share a name); the id when unknown */
		if (*c[i].members)
			vw_row_set(r, 1, c[i].comm_id, "%s", c[i].members);
		else
			vw_row_set(r, 1, c[i].comm_id, "id %d", c[i].comm_id);
		vw_row_set(r, 2, c[i].group_size, "%d", c[i].group_size);
		vw_row_set(r, 3, (double)c[i].count, "%s", vw_fmt_count(b, sizeof b, c[i].count));
		vw_row_set(r, 4, (double)c[i].total_ns, "%s", T(c[i].total_ns));
		vw_row_set(r, 5, (double)c[i].bytes, "%s", B(c[i].bytes));
		vw_row_set(r, 6, (double)c[i].wait_ns, "%s", c[i].matched ? T(c[i].wait_ns) : "-");
		vw_row_set(r, 7, (double)c[i].transit_ns, "%s", c[i].matched ? T(c[i].transit_ns) : "-");
		vw_row_set(r, 8, (double)c[i].late_ns, "%s", c[i].matched ? T(c[i].late_ns) : "-");
	}
	db_view_comms_free(c, n);
	if (!rc)
		rc = vw_table_apply(&v->commtab, NULL, 4, 0);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* steps */


/* Device work the step launched (db_view_step_work: imported traces), over the ranks that have it: the
 * mean of its busy time and the most any rank's ran past the step's end. *nr = 0: none. */
static void step_launched(const struct db_step_work *w, int nw, int64_t step, double *busy_mean, int64_t *past_max,
			  int *nr)
{
	double sum = 0;
	*nr = 0;
	*past_max = 0;
	for (int i = 0; i < nw; i++) {
		if (w[i].where != DB_SW_STEP || w[i].step != step)
			continue;
		sum += (double)w[i].busy_ns;
		(*nr)++;
		if (w[i].events && w[i].last_end_ns - w[i].step_end_ns > *past_max)
			*past_max = w[i].last_end_ns - w[i].step_end_ns;
	}
	*busy_mean = *nr ? sum / *nr : 0;
}

static int load_steps(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_STEPS];
	static const struct vw_col C[] = {
		{ "step", 8, AL_RIGHT, 100, 1 }, { "time", 10, AL_RIGHT, 9, 0 }, { "spread", 9, AL_RIGHT, 8, 0 },
		{ "slow", 5, AL_RIGHT, 7, 0 }, { "compute", 9, AL_RIGHT, 6, 0 }, { "comm", 9, AL_RIGHT, 5, 0 },
		{ "overlap", 9, AL_RIGHT, 2, 0 }, { "free", 9, AL_RIGHT, 3, 0 }, { "bubble", 9, AL_RIGHT, 4, 0 },
		{ "loss", 8, AL_RIGHT, 7, 0 }, { "launched", 9, AL_RIGHT, 1, 0 }, { "past end", 9, AL_RIGHT, 0, 0 },
	};
	/* --against A: A's step of the same rank in order (the k-th step of each side) beside */
	static const struct vw_col CA[] = {
		{ "A step", 8, AL_RIGHT, 6, 0 }, { "A time", 10, AL_RIGHT, 9, 0 }, { "change", 10, AL_RIGHT, 8, 0 },
	};
	/* imported traces: the device work each step launched, wherever it ran (the split above is of
	 * the step's window) */
	struct db_step_work *w = NULL;
	int nw = 0;
	int rc = v->live ? 0 : db_view_step_work(v->db, v->f, &w, &nw);
	if (rc)
		return rc;
	vw_table_reset(t);
	setcols(t, C, nw ? 12 : 10, 0);
	int ca = t->ncols;   /* A's columns, after the others */
	if (v->adb) {
		for (int k = 0; k < 3; k++)
			t->col[ca + k] = CA[k];
		t->ncols += 3;
	}
	t->name_numeric = 1;
	free(v->steps);
	v->steps = NULL;
	v->nsteps = 0;
	free(v->asteps);
	v->asteps = NULL;
	v->nasteps = 0;
	rc = vw_q_steps(v, &v->steps, &v->nsteps);
	if (!rc && v->adb)
		rc = db_view_steps(v->adb, v->f, &v->asteps, &v->nasteps);
	char b[32];
	for (int i = 0; !rc && i < v->nsteps; i++) {
		struct db_view_step *s = &v->steps[i];
		struct vw_row *r = vw_table_add(t);
		if (!r) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		r->id = s->step;
		r->aux = s->slow_rank;
		vw_row_set(r, 0, (double)s->step, "%lld", (long long)s->step);
		vw_row_set(r, 1, (double)s->max_total_ns, "%s", T(s->max_total_ns));
		vw_row_set(r, 2, (double)(s->max_total_ns - s->min_total_ns), "%s", T(s->max_total_ns - s->min_total_ns));
		vw_row_set(r, 3, s->slow_rank, "%s%d", s->nranks > 1 ? "r" : "r", s->slow_rank);
		/* live: the split is −1 until the step is settled (its ranks' events are all in) */
		const int64_t split[5] = { s->computing_ns, s->comm_not_overlapped_ns, s->overlapped_ns, s->free_ns,
					   s->bubble_ns };
		for (int k = 0; k < 5; k++)
			vw_row_set(r, 4 + k, (double)split[k], "%s", split[k] >= 0 ? T(split[k]) : "...");
		if (s->has_loss)
			vw_row_set(r, 9, s->loss, "%.4f", s->loss);
		else
			vw_row_set(r, 9, -1, "-");
		if (nw) {
			double busy;
			int64_t past;
			int nr;
			step_launched(w, nw, s->step, &busy, &past, &nr);
			vw_row_set(r, 10, nr ? busy : -1, "%s", nr ? T(busy) : "-");
			vw_row_set(r, 11, nr ? (double)past : -1, "%s", nr && past > 0 ? T(past) : "-");
		}
		if (!v->adb)
			continue;
		if (i < v->nasteps) {
			const struct db_view_step *a = &v->asteps[i];
			int64_t d = s->max_total_ns - a->max_total_ns;
			vw_row_set(r, ca, (double)a->step, "%lld", (long long)a->step);
			vw_row_set(r, ca + 1, (double)a->max_total_ns, "%s", T(a->max_total_ns));
			vw_row_set(r, ca + 2, (double)d, "%s%s", d > 0 ? "+" : "", T(d));
		} else {
			vw_row_set(r, ca, -1, "-");
			vw_row_set(r, ca + 1, -1, "-");
			vw_row_set(r, ca + 2, 0, "-");
		}
	}
	free(w);
	return rc;
}

/* val < 0: no value. range (may be NULL): [lo, hi] the scale also spans (two series drawn on one
 * scale). */
static void sparkline(struct vw_screen *s, int x, int y, int w, const double *val, int n, int attr, const double *range)
{
	static const char LV[] = " _.-:=+*#";
	if (n <= 0 || w <= 0)
		return;
	double lo = range ? range[0] : 0, hi = range ? range[1] : 0;
	int first = !range;
	for (int i = 0; i < n; i++) {
		if (val[i] < 0)
			continue;
		if (first || val[i] < lo)
			lo = val[i];
		if (first || val[i] > hi)
			hi = val[i];
		first = 0;
	}
	for (int c = 0; c < w; c++) {
		int i0 = (int)((long long)c * n / w), i1 = (int)((long long)(c + 1) * n / w);
		if (i1 <= i0)
			i1 = i0 + 1;
		if (i0 >= n)
			break;
		double m = -1;
		for (int i = i0; i < i1 && i < n; i++)
			if (val[i] > m)
				m = val[i];
		if (m < 0)
			continue;
		int lv = hi > lo ? 1 + (int)((m - lo) / (hi - lo) * 7.999) : 4;
		char ch[2] = { LV[lv], 0 };
		vw_put(s, x + c, y, 1, attr, ch);
	}
}

/* ---------------------------------------------------------------------------------------- */
/* ranks */


/* The heat strip: one character per step (per group of steps when there are more than
 * VW_HEAT_MAX) for each rank, its computing time over the median of all ranks in that step (the
 * worst step of a group). */
#define VW_HEAT_MAX 32
static const double HEAT_AT[] = { 1.02, 1.05, 1.10, 1.20, 1.35, 1.50, 2.00 };
static const char HEAT_CH[] = ".:-=+*#@";   /* below HEAT_AT[0], ..., at or above the last */

static char heat_char(double ratio)
{
	int k = 0;
	while (k < (int)(sizeof HEAT_AT / sizeof HEAT_AT[0]) && ratio >= HEAT_AT[k])
		k++;
	return HEAT_CH[k];
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* For the n ranks in `ranks` (ascending): strip[i * (VW_HEAT_MAX + 1)] their strips (NUL-ended,
 * blank where a rank has no step), worst[i] their worst ratio (0 none); *width the characters of a
 * strip (0: no steps). */
static int heat_strips(const struct db_view_rank_step *rs, int nrs, const int *ranks, int n, char *strip, double *worst,
		       int *width)
{
	int nsteps = 0;
	for (int i = 0; i < nrs; i++)
		nsteps += !i || rs[i].step != rs[i - 1].step;
	int nb = nsteps < VW_HEAT_MAX ? nsteps : VW_HEAT_MAX;
	*width = nb;
	double *ratio = calloc((size_t)n * (size_t)(nb ? nb : 1), sizeof *ratio), *c = malloc((nrs > 0 ? (size_t)nrs : 1) * sizeof *c);
	if (!ratio || !c) {
		free(ratio);
		free(c);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0, si = 0; i < nrs; si++) {
		int j = i, k = 0;
		while (j < nrs && rs[j].step == rs[i].step)
			c[k++] = (double)rs[j++].computing_ns;
		double med = stats_median(c, k);
		int bin = (int)((int64_t)si * nb / nsteps);
		for (; i < j; i++) {
			const int *p = bsearch(&rs[i].rank, ranks, (size_t)n, sizeof *ranks, cmp_int);
			double x = med > 0 ? (double)rs[i].computing_ns / med : 1;
			if (p && x > ratio[(p - ranks) * nb + bin])
				ratio[(p - ranks) * nb + bin] = x;
		}
	}
	for (int r = 0; r < n; r++) {
		char *o = strip + (size_t)r * (VW_HEAT_MAX + 1);
		worst[r] = 0;
		for (int b = 0; b < nb; b++) {
			double x = ratio[r * nb + b];
			o[b] = x > 0 ? heat_char(x) : ' ';
			worst[r] = x > worst[r] ? x : worst[r];
		}
		o[nb] = 0;
	}
	free(ratio);
	free(c);
	return 0;
}

static int load_ranks(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_RANKS];
	static const struct vw_col C[] = {
		{ "rank", 6, AL_LEFT, 100, 1 }, { "host", 12, AL_LEFT, 3, 0 }, { "steps", 6, AL_RIGHT, 2, 0 },
		{ "total", 10, AL_RIGHT, 9, 0 }, { "compute", 10, AL_RIGHT, 8, 0 }, { "comm", 10, AL_RIGHT, 6, 0 },
		{ "not-ovl", 10, AL_RIGHT, 7, 0 }, { "free", 9, AL_RIGHT, 5, 0 }, { "bubble", 9, AL_RIGHT, 4, 0 },
		{ "late", 9, AL_RIGHT, 7, 0 }, { "wait", 9, AL_RIGHT, 1, 0 }, { "heat", 4, AL_LEFT, 8, 0 },
	};
	vw_table_reset(t);
	setcols(t, C, 12, 0);
	t->name_numeric = 1;
	struct db_view_rank *r;
	int n;
	int rc = vw_q_ranks(v, &r, &n);
	if (rc)
		return rc;
	/* the heat strip: a profile file's step_stat (a live run: none) */
	struct db_view_rank_step *rs = NULL;
	int nrs = 0, hw = 0;
	int *ranks = malloc((size_t)(n ? n : 1) * sizeof *ranks);
	char *strip = malloc((size_t)(n ? n : 1) * (VW_HEAT_MAX + 1));
	double *worst = malloc((size_t)(n ? n : 1) * sizeof *worst);
	if (!ranks || !strip || !worst)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < n; i++)
		ranks[i] = r[i].rank;   /* ordered by rank */
	if (!rc && !v->live)
		rc = db_view_rank_steps(v->db, v->f, &rs, &nrs);
	if (!rc)
		rc = heat_strips(rs, nrs, ranks, n, strip, worst, &hw);
	free(rs);
	if (rc) {
		free(ranks);
		free(strip);
		free(worst);
		db_view_ranks_free(r, n);
		return rc;
	}
	v->heat_width = hw;
	t->col[11].width = hw > 4 ? hw : 4;
	/* slow: compute time more than 5 % above the median compute of the ranks (≥ 2 ranks) */
	int64_t med = 0;
	if (n >= 2) {
		int64_t *c = malloc((size_t)n * sizeof *c);
		if (c) {
			for (int i = 0; i < n; i++)
				c[i] = r[i].computing_ns;
			qsort(c, (size_t)n, sizeof *c, stats_cmp_i64);
			med = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
			free(c);
		}
	}
	char b[32];
	for (int i = 0; i < n; i++) {
		struct vw_row *w = vw_table_add(t);
		if (!w) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		int slow = n >= 2 && med > 0 && (double)r[i].computing_ns > 1.05 * (double)med;
		w->id = r[i].rank;
		w->attr = slow ? VA_WARN : VA_NORMAL;
		vw_row_set(w, 0, r[i].rank, "r%d%s", r[i].rank, slow ? " *" : "");
		vw_row_set(w, 1, 0, "%s", r[i].host);
		vw_row_set(w, 2, (double)r[i].steps, "%lld", (long long)r[i].steps);
		vw_row_set(w, 3, (double)r[i].total_ns, "%s", T(r[i].total_ns));
		vw_row_set(w, 4, (double)r[i].computing_ns, "%s", T(r[i].computing_ns));
		vw_row_set(w, 5, (double)r[i].comm_ns, "%s", T(r[i].comm_ns));
		vw_row_set(w, 6, (double)r[i].comm_not_overlapped_ns, "%s", T(r[i].comm_not_overlapped_ns));
		vw_row_set(w, 7, (double)r[i].free_ns, "%s", T(r[i].free_ns));
		vw_row_set(w, 8, (double)r[i].bubble_ns, "%s", T(r[i].bubble_ns));
		vw_row_set(w, 9, (double)r[i].late_ns, "%s", r[i].late_calls ? T(r[i].late_ns) : "-");
		vw_row_set(w, 10, (double)r[i].wait_ns, "%s", r[i].late_calls ? T(r[i].wait_ns) : "-");
		vw_row_set(w, 11, worst[i], "%s", strip + (size_t)i * (VW_HEAT_MAX + 1));
	}
	free(ranks);
	free(strip);
	free(worst);
	db_view_ranks_free(r, n);
	free(v->mbytes);
	free(v->mcount);
	free(v->mranks);
	v->mbytes = v->mcount = NULL;
	v->mranks = NULL;
	v->mn = 0;
	if (!rc && !v->live)   /* the matrix matches collectives across ranks: after the run */
		rc = db_view_matrix(v->db, v->f, &v->mranks, &v->mn, &v->mbytes, &v->mcount);
	return rc;
}

/* The heat characters' thresholds appended to l (of size n, k used): "  . <1.02  : <1.05 ... @ >=2.00". */
static int heat_scale(char *l, size_t n, int k)
{
	double lo = 0;
	for (size_t i = 0; i < sizeof HEAT_CH - 1 && k < (int)n; i++) {
		if (i < sizeof HEAT_AT / sizeof HEAT_AT[0])
			k += snprintf(l + k, n - (size_t)k, "  %c <%.2f", HEAT_CH[i], HEAT_AT[i]);
		else
			k += snprintf(l + k, n - (size_t)k, "  %c >=%.2f", HEAT_CH[i], lo);
		lo = i < sizeof HEAT_AT / sizeof HEAT_AT[0] ? HEAT_AT[i] : lo;
	}
	return k;
}

/* The heat strip's legend, one line. */
static void draw_heat_legend(struct viewer *v, struct vw_screen *s, int y)
{
	char l[256];
	int k = snprintf(l, sizeof l, "heat: a character per %s, compute / the step's median over ranks:",
			 v->heat_width < VW_HEAT_MAX ? "step" : "group of steps (its worst)");
	heat_scale(l, sizeof l, k);
	vw_put(s, 0, y, -1, VA_DIM, l);
}

/* ---- the communication matrix as a heat map ('m'): db_view_heat's cells, one character each ---- */

int vw_heat_set(struct viewer *v, int mode)
{
	db_view_heat_free(&v->heat);
	v->heat_mode = VW_HEAT_OFF;
	v->heat_top = 0;
	if (mode == VW_HEAT_OFF)
		return 0;
	if (v->live) {
		vw_set_status(v, 0, "m: the heat map comes with the merged profile (it matches calls across ranks)");
		return 0;
	}
	int rc = db_view_heat(v->db, mode == VW_HEAT_HOSTS, &v->heat);
	if (!rc)
		v->heat_mode = mode;
	return rc;
}

int vw_heat_key(struct viewer *v, int key)
{
	if (key == 'm') {
		int next = v->heat_mode == VW_HEAT_OFF ? VW_HEAT_HOSTS
			   : v->heat_mode == VW_HEAT_HOSTS && v->heat.nranks <= VW_HEAT_RANKS_MAX ? VW_HEAT_RANKS
												   : VW_HEAT_OFF;
		int rc = vw_heat_set(v, next);
		if (!rc && !v->live)
			vw_set_status(v, 0, "%s (m: %s)", next == VW_HEAT_HOSTS ? "heat map by host pair"
							  : next == VW_HEAT_RANKS ? "heat map by rank pair" : "the rank table",
				      next == VW_HEAT_OFF ? "heat map" : next == VW_HEAT_HOSTS && v->heat.nranks <= VW_HEAT_RANKS_MAX
									     ? "by rank pair" : "the rank table");
		return rc < 0 ? rc : 1;
	}
	if (!v->heat_mode)
		return 0;
	int page = v->last_h > 8 ? v->last_h - 8 : 10;
	switch (key) {
	case VK_UP: case 'k': v->heat_top--; break;
	case VK_DOWN: case 'j': v->heat_top++; break;
	case VK_PGUP: v->heat_top -= page; break;
	case VK_PGDN: v->heat_top += page; break;
	case VK_HOME: case 'g': v->heat_top = 0; break;
	case VK_END: case 'G': v->heat_top = v->heat.n; break;   /* clamped when drawn */
	default: return 0;   /* the table's keys still act on the table underneath */
	}
	if (v->heat_top < 0)
		v->heat_top = 0;
	if (v->heat_top > v->heat.n)
		v->heat_top = v->heat.n;
	return 1;
}

/* The first cell of row `row` (cells sorted by (src, dst)); ncells when none. */
static int heat_row_start(const struct db_view_heat *m, int row)
{
	int lo = 0, hi = m->ncells;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (m->cells[mid].src < row)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void draw_heat_map(struct viewer *v, struct vw_screen *s, int y, int h)
{
	const struct db_view_heat *m = &v->heat;
	const char *what = m->by_host ? "host" : "rank";
	char l[512];
	if (h < 1)
		return;
	int nbw = 0;
	for (int i = 0; i < m->ncells; i++)
		nbw += m->cells[i].gbs > 0;
	vw_putf(s, 0, y, -1, VA_TITLE, "traffic by %s pair (row -> column, whole job): %d %ss, %d cells, median %.3f GB/s "
				     "(%d with a bandwidth)  m: next", what, m->n, what, m->ncells, m->median_gbs, nbw);
	if (!m->ncells) {
		if (h > 1)
			vw_put(s, 0, y + 1, -1, VA_DIM, "no matched point-to-point transfers and no collectives on links in this "
							 "profile (docs/cluster.md, matrix)");
		return;
	}
	if (h > 1) {
		int k = snprintf(l, sizeof l, "cell = median GB/s / its own:");
		k = heat_scale(l, sizeof l, k);
		snprintf(l + k, sizeof l - (size_t)k, "  ? no time");
		vw_put(s, 0, y + 1, -1, VA_DIM, l);
	}
	int nd = 1;   /* digits of the largest index */
	for (int x = m->n - 1; x >= 10; x /= 10)
		nd++;
	int lw = 0;
	for (int i = 0; i < m->n; i++) {
		int len = (int)strlen(m->labels[i]);
		lw = len > lw ? len : lw;
	}
	lw = lw > 16 ? 16 : lw;
	int x0 = nd + 1 + lw + 1, nc = s->w - x0 < m->n ? s->w - x0 : m->n;
	if (nc < 0)
		nc = 0;
	int yh = y + 2, hr = h - 2 - nd - 1;   /* title, legend, the column numbers, the footer */
	if (hr < 1)
		return;
	/* column numbers, one digit a line, the most significant first */
	for (int d = 0; d < nd; d++) {
		int div = 1;
		for (int e = d + 1; e < nd; e++)
			div *= 10;
		for (int j = 0; j < nc; j++) {
			char ch[2] = { (char)('0' + j / div % 10), 0 };
			if (j < div && d < nd - 1)
				ch[0] = ' ';
			vw_put(s, x0 + j, yh + d, 1, VA_HEADER, ch);
		}
	}
	int top = v->heat_top > m->n - hr ? m->n - hr : v->heat_top;
	top = top < 0 ? 0 : top;
	int rows = m->n - top < hr ? m->n - top : hr;
	char *line = malloc((size_t)nc + 1);
	if (!line)
		return;
	for (int r = 0; r < rows; r++) {
		int i = top + r, yy = yh + nd + r;
		vw_putf(s, 0, yy, x0, VA_HEADER, "%*d %-*.*s ", nd, i, lw, lw, m->labels[i]);
		memset(line, ' ', (size_t)nc);
		line[nc] = 0;
		int warn = 0;
		for (int c = heat_row_start(m, i); c < m->ncells && m->cells[c].src == i; c++) {
			const struct db_view_heat_cell *cell = &m->cells[c];
			if (cell->dst >= nc)
				break;
			line[cell->dst] = cell->gbs > 0 ? heat_char(cell->slowness) : '?';
			warn |= cell->slowness >= HEAT_AT[sizeof HEAT_AT / sizeof HEAT_AT[0] - 1];
		}
		vw_put(s, x0, yy, nc, warn ? VA_WARN : VA_NORMAL, line);
	}
	free(line);
	char b[32], b2[32];
	int k = 0;
	if (m->slowest >= 0) {
		const struct db_view_heat_cell *c = &m->cells[m->slowest];
		k = snprintf(l, sizeof l, "slowest: %s -> %s %.3f GB/s (median / its own %.2f), %lld transfers, %s in %s; ",
			     m->labels[c->src], m->labels[c->dst], c->gbs, c->slowness, (long long)c->transfers,
			     units_bytes(b, sizeof b, (double)c->bytes), units_ns(b2, sizeof b2, (double)c->time_ns));
	}
	k += snprintf(l + k, sizeof l - (size_t)k, "rows %d-%d of %d", top, top + rows - 1, m->n);
	if (nc < m->n)
		snprintf(l + k, sizeof l - (size_t)k, ", columns 0-%d of %d (a wider terminal shows more)", nc - 1, m->n);
	vw_put(s, 0, yh + nd + hr, -1, VA_DIM, l);
}

static void draw_matrix(struct viewer *v, struct vw_screen *s, int y, int h)
{
	if (h < 3 || !v->mn)
		return;
	int any = 0;
	for (int i = 0; i < v->mn * v->mn; i++)
		any |= v->mcount[i] != 0;
	vw_put(s, 0, y, -1, VA_TITLE, any ? "traffic rank x rank (bytes sent, row -> column)"
					   : "traffic rank x rank: no p2p or matched collectives recorded");
	if (!any)
		return;
	int cw = 9, fit = (s->w - 6) / cw, nshow = v->mn < fit ? v->mn : fit, rows = h - 2 < v->mn ? h - 2 : v->mn;
	int64_t mx = 1;
	for (int i = 0; i < v->mn * v->mn; i++)
		if (v->mbytes[i] > mx)
			mx = v->mbytes[i];
	for (int j = 0; j < nshow; j++)
		vw_putf(s, 6 + j * cw, y + 1, cw, VA_HEADER, "%*s", cw - 1, "");
	vw_fill(s, 0, y + 1, 6 + nshow * cw, 1, ' ', VA_HEADER);
	for (int j = 0; j < nshow; j++)
		vw_putf(s, 6 + j * cw, y + 1, cw, VA_HEADER, "%8s", "");
	for (int j = 0; j < nshow; j++) {
		char l[16];
		snprintf(l, sizeof l, "r%d", v->mranks[j]);
		vw_putf(s, 6 + j * cw, y + 1, cw, VA_HEADER, "%8s", l);
	}
	char b[32];
	for (int i = 0; i < rows; i++) {
		int hl = v->f.rank >= 0 && v->mranks[i] == v->f.rank;
		vw_putf(s, 0, y + 2 + i, 6, hl ? VA_SEL : VA_HEADER, "r%-4d", v->mranks[i]);
		for (int j = 0; j < nshow; j++) {
			int64_t x = v->mbytes[i * v->mn + j];
			int attr = x == 0 ? VA_DIM : (double)x > 0.66 * (double)mx ? VA_WARN : VA_NORMAL;
			vw_putf(s, 6 + j * cw, y + 2 + i, cw, attr, "%8s", i == j ? "." : x ? B(x) : "0");
		}
	}
	if (nshow < v->mn || rows < v->mn)
		vw_putf(s, 0, y + h - 1, -1, VA_DIM, "(showing %d of %d ranks; restrict with --rank or R)", rows < nshow ? rows : nshow, v->mn);
}

/* ---------------------------------------------------------------------------------------- */
/* memory */

static int load_memory(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_MEMORY];
	static const struct vw_col C[] = {
		{ "category", 12, AL_LEFT, 100, 1 }, { "rank", 5, AL_RIGHT, 8, 0 }, { "device", 9, AL_RIGHT, 6, 0 },
		{ "peak", 10, AL_RIGHT, 9, 0 }, { "at", 10, AL_RIGHT, 5, 0 }, { "final", 10, AL_RIGHT, 7, 0 },
		{ "allocs", 8, AL_RIGHT, 4, 0 }, { "frees", 8, AL_RIGHT, 3, 0 },
	};
	vw_table_reset(t);
	setcols(t, C, 8, 0);
	struct db_mem_stat *m;
	int n;
	int rc = db_view_mem_peaks(v->db, v->f, &m, &n);
	if (rc)
		return rc;
	char b[32];
	for (int i = 0; i < n; i++) {
		struct vw_row *r = vw_table_add(t);
		if (!r) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		r->id = m[i].rank;
		vw_row_set(r, 0, 0, "%s", db_mem_cat_name(m[i].category));
		vw_row_set(r, 1, m[i].rank, "r%d", m[i].rank);
		char dev[24];
		vw_row_set(r, 2, m[i].device, "%s", db_mem_device_name(m[i].device, dev, sizeof dev));
		vw_row_set(r, 3, (double)m[i].peak_bytes, "%s", B(m[i].peak_bytes));
		vw_row_set(r, 4, (double)m[i].peak_ts_ns, "%s", T(m[i].peak_ts_ns));
		vw_row_set(r, 5, (double)m[i].final_bytes, "%s", B(m[i].final_bytes));
		vw_row_set(r, 6, (double)m[i].allocs, "%lld", (long long)m[i].allocs);
		vw_row_set(r, 7, (double)m[i].frees, "%lld", (long long)m[i].frees);
	}
	free(m);
	return rc;
}

static void draw_mem_chart(struct viewer *v, struct vw_screen *s, int y, int h)
{
	if (h < 3)
		return;
	int w = s->w - 11;
	if (w < 10)
		return;
	int64_t *ser = malloc((size_t)w * sizeof *ser);
	if (!ser)
		return;
	int64_t T0 = v->run.t0_ns, T1 = v->run.t1_ns;
	if (db_view_mem_series(v->db, v->f.rank, T0, T1 > T0 ? T1 : T0 + 1, w, ser) != 0) {
		free(ser);
		return;
	}
	int64_t mx = 0;
	for (int i = 0; i < w; i++)
		if (ser[i] > mx)
			mx = ser[i];
	char b[32];
	vw_putf(s, 0, y, -1, VA_TITLE, "memory in use over time (the fullest device of %s; max per column), peak %s",
		v->f.rank >= 0 ? "this rank" : "any rank", B(mx));
	if (mx <= 0) {
		vw_put(s, 2, y + 1, -1, VA_DIM, "(no memory events recorded)");
		free(ser);
		return;
	}
	int rows = h - 2;
	for (int r = 0; r < rows; r++) {
		double lvl = (double)(rows - r) / rows;
		if (r == 0)
			vw_putf(s, 0, y + 1 + r, 10, VA_DIM, "%9s", B(mx));
		if (r == rows - 1)
			vw_putf(s, 0, y + 1 + r, 10, VA_DIM, "%9s", "0");
		for (int c = 0; c < w; c++)
			if (ser[c] >= 0 && (double)ser[c] >= lvl * (double)mx - 0.5 * (double)mx / rows)
				vw_put(s, 10 + c, y + 1 + r, 1, VA_COMPUTE, "#");
	}
	char l0[32], l1[32];
	units_ns(l1, sizeof l1, (double)(T1 - T0));
	snprintf(l0, sizeof l0, "0");
	vw_put(s, 10, y + h - 1, -1, VA_DIM, l0);
	vw_put(s, s->w - (int)strlen(l1) - 1, y + h - 1, -1, VA_DIM, l1);
	free(ser);
}

/* ---------------------------------------------------------------------------------------- */
/* instances (drill-down) */

#define INST_PAGE 500

static int load_instances(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_INSTANCES];
	static const struct vw_col C[] = {
		{ "#", 7, AL_RIGHT, 100, 1 }, { "rank", 5, AL_RIGHT, 9, 0 }, { "tid", 4, AL_RIGHT, 6, 0 },
		{ "start", 12, AL_RIGHT, 8, 0 }, { "dur", 10, AL_RIGHT, 10, 0 }, { "step", 6, AL_RIGHT, 7, 0 },
		{ "layer", 5, AL_RIGHT, 4, 0 }, { "bytes", 9, AL_RIGHT, 5, 0 }, { "GFLOP/s", 8, AL_RIGHT, 3, 0 },
	};
	if (!t->ncols)
		setcols(t, C, 9, 0);
	int have = t->nrows;
	struct db_event *e;
	int n;
	int rc = db_view_instances(v->db, v->f, v->inst_kind, v->inst_name_id, v->nav[VW_INSTANCES].reverse, have,
				   INST_PAGE, &e, &n, &v->inst_total);
	if (rc)
		return rc;
	int64_t shift = 0;
	char b[32];
	for (int i = 0; i < n; i++) {
		struct vw_row *r = vw_table_add(t);
		if (!r) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		shift = 0;
		for (int k = 0; k < v->tl.nlanes; k++)
			if (v->tl.lanes[k].rank == e[i].rank)
				shift = v->tl.lanes[k].shift_ns;
		int64_t as = e[i].start_ns + shift;
		r->id = e[i].rank;
		r->kind = e[i].tid;
		r->aux = as;
		r->key[VW_MAXCOLS - 1] = (double)e[i].dur_ns;
		vw_row_set(r, 0, have + i + 1, "%d", have + i + 1);
		vw_row_set(r, 1, e[i].rank, "%d", e[i].rank);
		vw_row_set(r, 2, e[i].tid, "%d", e[i].tid);
		vw_row_set(r, 3, (double)(as - v->tl.T0), "+%s", T(as - v->tl.T0));
		vw_row_set(r, 4, (double)e[i].dur_ns, "%s", T(e[i].dur_ns));
		vw_row_set(r, 5, (double)e[i].step, e[i].step >= 0 ? "%lld" : "-", (long long)e[i].step);
		vw_row_set(r, 6, e[i].layer, e[i].layer >= 0 ? "%d" : "-", e[i].layer);
		vw_row_set(r, 7, (double)e[i].bytes, "%s", e[i].kind == DB_KIND_OP ? "-" : B(e[i].bytes));
		if (e[i].flops > 0 && e[i].dur_ns > 0)
			vw_row_set(r, 8, (double)e[i].flops / (double)e[i].dur_ns, "%.1f", (double)e[i].flops / (double)e[i].dur_ns);
		else
			vw_row_set(r, 8, -1, "-");
	}
	free(e);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* devices: HTA's analyses per device (db_view_device_stats: db_device_stats' figures, docs/device.md), a
 * row per stream */

/* Rank cp_ranks[k]'s path under the view's filter appended to v->cp (none: nothing), tried once. */
static int cp_try(struct viewer *v, int k)
{
	if (v->cp_tried[k])
		return 0;
	v->cp_tried[k] = 1;
	struct db_filter f = v->f;
	f.rank = v->cp_ranks[k];
	const struct db_critpath_opts o = { .top = DB_VIEW_CP_TOP };
	struct db_critpath *one = NULL;
	int n = 0;
	int rc = db_critpath(v->db, f, &o, &one, &n);
	if (!rc && n == 1) {
		struct db_critpath *cp = realloc(v->cp, (size_t)(v->ncp + 1) * sizeof *cp);
		if (!cp)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		else {
			v->cp = cp;
			v->cp[v->ncp++] = one[0];
			n = 0;
		}
	}
	db_critpath_free(one, n);
	return rc;
}

/* Under a step restriction of all ranks each path is computed from the events (db_critpath: 2.3 s
 * of CPU for the 1,024 ranks of bench_bigjob): the first ranks' paths, in db_critpath's order, until
 * there are as many (without a cycle) as the screen has lines for them — the lines draw_device_lines
 * shows, the same as from all ranks' — and any other rank's when the timeline marks its lanes
 * (vw_cp_rank). Called after the devices are loaded (v->ndev). */
static int load_cp_first(struct viewer *v)
{
	struct db_rank_info *ranks = NULL;
	int n = 0;
	int rc = db_ranks(v->db, &ranks, &n);
	if (!rc && n > 0 && (!(v->cp_ranks = malloc((size_t)n * sizeof *v->cp_ranks)) ||
			     !(v->cp_tried = calloc((size_t)n, 1))))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; !rc && i < n; i++)
		v->cp_ranks[i] = ranks[i].rank;
	db_ranks_free(ranks, n);
	if (rc)
		return rc;
	v->ncp_ranks = n;
	/* draw_device_lines' lines for paths in a view of h ≤ last_h lines: h − 1 less its device lines
	 * (max(1, min(devices, h / 3))), which grows with h */
	int h = v->last_h > 0 ? v->last_h : 50, devl = v->ndev < h / 3 ? v->ndev : h / 3;
	int want = h - 1 - (devl > 1 ? devl : 1), paths = 0;
	/* in batches of the paths still wanted (db_critpath_ranks: its set-up once a batch; a rank at a
	 * time cost 4.1 against 2.2 ms a rank at 1,024 ranks) */
	const struct db_critpath_opts o = { .top = DB_VIEW_CP_TOP };
	while (!rc && v->cp_next < n && paths < want) {
		int take = want - paths < n - v->cp_next ? want - paths : n - v->cp_next;
		struct db_critpath *got = NULL;
		int ngot = 0;
		rc = db_critpath_ranks(v->db, v->f, &o, v->cp_ranks + v->cp_next, take, &got, &ngot);
		struct db_critpath *cp = rc ? NULL : realloc(v->cp, (size_t)(v->ncp + ngot + 1) * sizeof *cp);
		if (!rc && !cp)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		if (!rc) {
			v->cp = cp;
			for (int i = 0; i < ngot; i++) {
				paths += !got[i].cycle;
				v->cp[v->ncp++] = got[i];
			}
			ngot = 0;
			memset(v->cp_tried + v->cp_next, 1, (size_t)take);
			v->cp_next += take;
		}
		db_critpath_free(got, ngot);
	}
	return rc;
}

int vw_cp_rank(struct viewer *v, int rank)
{
	for (int k = v->cp_next; k < v->ncp_ranks; k++)
		if (v->cp_ranks[k] == rank)
			return cp_try(v, k);
	return 0;
}

static int load_devices(struct viewer *v)
{
	struct vw_table *t = &v->tab[VW_DEVICES];
	static const struct vw_col C[] = {
		{ "stream", 0, AL_LEFT, 100, 1 }, { "work", 7, AL_RIGHT, 9, 0 }, { "linked", 7, AL_RIGHT, 2, 0 },
		{ "queue", 6, AL_RIGHT, 7, 0 }, { "qmax", 5, AL_RIGHT, 3, 0 }, { "launch p50", 10, AL_RIGHT, 8, 0 },
		{ "p95", 9, AL_RIGHT, 1, 0 }, { "short", 6, AL_RIGHT, 4, 0 }, { "host wait", 10, AL_RIGHT, 9, 0 },
		{ "kernel wait", 11, AL_RIGHT, 6, 0 }, { "other idle", 10, AL_RIGHT, 5, 0 },
	};
	vw_table_reset(t);
	setcols(t, C, 11, 0);
	db_device_stats_free(v->dev, v->ndev);
	v->dev = NULL;
	v->ndev = 0;
	int rc = db_view_device_stats(v->db, v->f, &v->dev, &v->ndev);
	db_critpath_free(v->cp, v->ncp);
	v->cp = NULL;
	v->ncp = 0;
	free(v->cp_ranks);
	free(v->cp_tried);
	v->cp_ranks = NULL;
	v->cp_tried = NULL;
	v->ncp_ranks = v->cp_next = 0;
	if (!rc && v->f.step_lo >= 0 && v->f.rank < 0)
		rc = load_cp_first(v);
	else if (!rc)   /* without a step restriction: the cached summaries, each rank's events when marked */
		rc = db_view_critpath(v->db, v->f, &v->cp, &v->ncp);
	struct db_device_lane *ln = NULL;
	int nl = 0;
	if (!rc)
		rc = db_device_lanes(v->db, &ln, &nl);
	char b[32];
	for (int i = 0; !rc && i < v->ndev; i++) {
		const struct db_device_stat *d = &v->dev[i];
		for (int j = 0; j < d->nstreams; j++) {
			const struct db_stream_stat *st = &d->streams[j];
			struct vw_row *r = vw_table_add(t);
			if (!r) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			r->id = d->rank;   /* Enter: the stream's lane on the timeline */
			r->kind = -1;
			for (int k = 0; k < nl; k++)
				if (ln[k].rank == d->rank && ln[k].device == d->device && ln[k].stream == st->stream)
					r->kind = ln[k].tid;
			vw_row_set(r, 0, 0, "r%d gpu %d stream %d", d->rank, d->device, st->stream);
			vw_row_set(r, 1, (double)st->kernels, "%s", vw_fmt_count(b, sizeof b, st->kernels));
			vw_row_set(r, 2, (double)st->linked, "%s", vw_fmt_count(b, sizeof b, st->linked));
			vw_row_set(r, 3, st->queue_len_mean, "%.2f", st->queue_len_mean);
			vw_row_set(r, 4, (double)st->queue_len_max, "%lld", (long long)st->queue_len_max);
			vw_row_set(r, 5, (double)st->launch_delay_p50_ns, "%s",
				   st->launch_delay_p50_ns >= 0 ? T(st->launch_delay_p50_ns) : "-");
			vw_row_set(r, 6, (double)st->launch_delay_p95_ns, "%s",
				   st->launch_delay_p95_ns >= 0 ? T(st->launch_delay_p95_ns) : "-");
			vw_row_set(r, 7, (double)st->short_kernels, "%s", vw_fmt_count(b, sizeof b, st->short_kernels));
			vw_row_set(r, 8, (double)st->idle_ns[DB_IDLE_HOST_WAIT], "%s", T(st->idle_ns[DB_IDLE_HOST_WAIT]));
			vw_row_set(r, 9, (double)st->idle_ns[DB_IDLE_KERNEL_WAIT], "%s", T(st->idle_ns[DB_IDLE_KERNEL_WAIT]));
			vw_row_set(r, 10, (double)st->idle_ns[DB_IDLE_OTHER], "%s", T(st->idle_ns[DB_IDLE_OTHER]));
		}
	}
	free(ln);
	return rc;
}

int vw_cp_events(struct viewer *v, int i)
{
	struct db_critpath *c = &v->cp[i];
	if (c->ev || c->cycle || c->path_events <= 0)
		return 0;
	struct db_filter f = v->f;
	f.rank = c->rank;
	const struct db_critpath_opts o = { .top = DB_VIEW_CP_TOP };
	struct db_critpath *one = NULL;
	int n = 0;
	int rc = db_critpath(v->db, f, &o, &one, &n);
	if (!rc && n == 1 && one[0].rank == c->rank) {
		c->ev = one[0].ev;
		c->nev = one[0].nev;
		one[0].ev = NULL;
		one[0].nev = 0;
	}
	db_critpath_free(one, n);
	return rc;
}

static double pct_of(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* A line per device (as many as fit in h / 3): HTA's temporal breakdown and the idle causes. */
static int draw_device_lines(struct viewer *v, struct vw_screen *s, int y, int h)
{
	if (!v->ndev) {
		vw_put(s, 0, y, -1, VA_DIM, "(no device lanes: the device analyses read imported GPU or NPU traces, "
					    "ascent import)");
		return 1;
	}
	int n = v->ndev < h / 3 ? v->ndev : h / 3;
	if (n < 1)
		n = 1;
	char b[32], b2[32], b3[32], b4[32];
	for (int i = 0; i < n; i++) {
		const struct db_device_stat *d = &v->dev[i];
		vw_putf(s, 0, y + i, -1, VA_TITLE,
			"r%d gpu %d  span %s  idle %.1f%%  compute %.1f%%  non-compute %.1f%%  comm under compute %.1f%%  "
			"counted %lld, left out %lld  | streams idle: host wait %s, kernel wait %s, other %s",
			d->rank, d->device, units_ns(b, sizeof b, (double)d->span_ns),
			pct_of(d->span_ns - d->busy_ns, d->span_ns), pct_of(d->compute_ns, d->span_ns),
			pct_of(d->busy_ns - d->compute_ns, d->span_ns), pct_of(d->comm_under_compute_ns, d->comm_ns),
			(long long)d->counted, (long long)(d->after_last_step + d->unlinked),
			units_ns(b2, sizeof b2, (double)d->idle_by_cause_ns[DB_IDLE_HOST_WAIT]),
			units_ns(b3, sizeof b3, (double)d->idle_by_cause_ns[DB_IDLE_KERNEL_WAIT]),
			units_ns(b4, sizeof b4, (double)d->idle_by_cause_ns[DB_IDLE_OTHER]));
	}
	if (n < v->ndev)
		vw_putf(s, 0, y + n, -1, VA_DIM, "(%d more devices: R restricts to one rank)", v->ndev - n);
	int used = n + (n < v->ndev);
	/* each rank's critical path over the view's steps: its share per cause and its top event */
	for (int i = 0; i < v->ncp && used < h - 1; i++) {
		const struct db_critpath *c = &v->cp[i];
		if (c->cycle)
			continue;
		vw_putf(s, 0, y + used++, -1, VA_MARK,
			"r%d critical path %s: cpu %.1f%%  gpu compute %.1f%%  comm %.1f%%  kernel-kernel %.1f%%  launch %.1f%%"
			"  top: %s (%s)  [marked on the timeline]",
			c->rank, units_ns(b, sizeof b, (double)c->length_ns), pct_of(c->cause_ns[DB_CP_CPU], c->length_ns),
			pct_of(c->cause_ns[DB_CP_GPU_COMPUTE], c->length_ns), pct_of(c->cause_ns[DB_CP_GPU_COMM], c->length_ns),
			pct_of(c->cause_ns[DB_CP_KERNEL_KERNEL], c->length_ns), pct_of(c->cause_ns[DB_CP_LAUNCH], c->length_ns),
			c->ntop ? c->top[0].name : "-", c->ntop ? units_ns(b2, sizeof b2, (double)c->top[0].ns) : "-");
	}
	int cp_skipped = v->f.step_lo < 0 ? db_view_critpath_skipped(v->db) : 0;
	if (cp_skipped && used < h - 1)
		vw_putf(s, 0, y + used++, -1, VA_DIM,
			"(critical path of %d rank(s) of over %d events not summarised: S restricts to steps, or ascent report "
			"--by critpath --steps A:B)", cp_skipped, DB_VIEW_CP_MAX_EVENTS);
	return used;
}

/* ---------------------------------------------------------------------------------------- */

int vw_load_view(struct viewer *v, int view)
{
	int rc = 0;
	if (!v->live && !v->tl.loaded && (rc = vw_tl_load(v)) != 0)
		return rc;
	if (v->live && (view == VW_MEMORY || view == VW_TIMELINE || view == VW_DEVICES || view == VW_INSTANCES))
		return 0;   /* after the run: the merged profile */
	switch (view) {
	case VW_OPS: rc = load_ops(v); break;
	case VW_COMM: rc = load_comm(v); break;
	case VW_STEPS: rc = load_steps(v); break;
	case VW_RANKS: rc = load_ranks(v); break;
	case VW_MEMORY: rc = load_memory(v); break;
	case VW_DEVICES: rc = load_devices(v); break;
	case VW_INSTANCES: rc = load_instances(v); break;
	case VW_DIFF: rc = vw_diff_load(v); break;
	default: break;
	}
	if (rc)
		return rc;
	v->nav[view].loaded = 1;
	if (view == VW_INSTANCES)   /* ordered by the query (duration); the filter does not apply */
		return vw_table_apply(&v->tab[view], NULL, -1, 0);
	return vw_table_apply(&v->tab[view], v->filter, v->nav[view].sort_col, v->nav[view].reverse);
}

/* ---------------------------------------------------------------------------------------- */
/* overview */

static void json_find(const cJSON *j, const char *key, char *out, size_t n)
{
	if (!j || *out)
		return;
	for (const cJSON *c = j->child; c; c = c->next) {
		if (c->string && !strcmp(c->string, key)) {
			if (cJSON_IsNumber(c))
				snprintf(out, n, "%g", c->valuedouble);
			else if (cJSON_IsString(c))
				snprintf(out, n, "%s", c->valuestring);
			else if (cJSON_IsBool(c))
				snprintf(out, n, "%s", cJSON_IsTrue(c) ? "on" : "off");
			return;
		}
		if (cJSON_IsObject(c))
			json_find(c, key, out, n);
	}
}

struct fctx {
	struct vw_screen *s;
	int y, ymax, n;
};

static int finding_cb(void *ud, const char *source, const char *level, const char *text)
{
	struct fctx *c = ud;
	c->n++;
	if (c->y < c->ymax) {
		int bad = !strcasecmp(level, "FAIL") || !strcasecmp(level, "error");
		vw_putf(c->s, 2, c->y++, -1, bad ? VA_WARN : VA_NORMAL, "[%s %s] %s", source, level, text);
	}
	return 0;
}

static void bar(struct vw_screen *s, int x, int y, int w, double frac, int attr)
{
	int n = (int)(frac * w + 0.5);
	if (n > w)
		n = w;
	vw_put(s, x, y, 1, VA_DIM, "[");
	for (int i = 0; i < w; i++)
		vw_put(s, x + 1 + i, y, 1, i < n ? attr : VA_DIM, i < n ? "#" : " ");
	vw_put(s, x + 1 + w, y, 1, VA_DIM, "]");
}

static void draw_overview(struct viewer *v, struct vw_screen *s, int y0, int h)
{
	int y = y0, ymax = y0 + h;
	struct db_view_run *r = &v->run;
	char b[32], b2[32];
	if (v->live) {
		y = vw_live_draw_overview(v, s, y0, h) + 1;
		goto split;
	}
	char dp[16] = "", tp[16] = "", pp[16] = "", zero[16] = "", prec[32] = "";
	cJSON *cfg = r->config_json && *r->config_json ? cJSON_Parse(r->config_json) : NULL;
	json_find(cfg, "dp", dp, sizeof dp);
	json_find(cfg, "tp", tp, sizeof tp);
	json_find(cfg, "pp", pp, sizeof pp);
	json_find(cfg, "zero", zero, sizeof zero);
	json_find(cfg, "precision", prec, sizeof prec);
	cJSON_Delete(cfg);
	vw_putf(s, 0, y++, -1, VA_TITLE, "run");
	vw_putf(s, 2, y++, -1, VA_NORMAL, "command    %s", *r->command_line ? r->command_line : "(not recorded)");
	vw_putf(s, 2, y++, -1, VA_NORMAL, "layout     world %d  dp %s  tp %s  pp %s  zero %s   precision %s", r->world_size,
		*dp ? dp : "-", *tp ? tp : "-", *pp ? pp : "-", *zero ? zero : "-", *prec ? prec : "-");
	if (r->nsteps)
		vw_putf(s, 2, y++, -1, VA_NORMAL, "steps      %lld (%lld..%lld)   ranks %d   lanes %d   events %s",
			(long long)r->nsteps, (long long)r->step_lo, (long long)r->step_hi, r->nranks, r->nlanes,
			vw_fmt_count(b2, sizeof b2, r->nevents));
	else
		vw_putf(s, 2, y++, -1, VA_NORMAL, "steps      none recorded   ranks %d   lanes %d   events %s", r->nranks,
			r->nlanes, vw_fmt_count(b2, sizeof b2, r->nevents));
	vw_putf(s, 2, y++, -1, VA_NORMAL, "wall time  %s   recorded %s%s%s", T(r->t1_ns - r->t0_ns),
		*r->created_utc ? r->created_utc : "-", *r->host ? " on " : "", r->host);
	y++;
split:;
	/* per-step split, mean over the selected steps and ranks (live: the settled steps) */
	struct db_view_step *st = NULL;
	int ns = 0;
	if (y < ymax && vw_q_steps(v, &st, &ns) == 0 && ns) {
		int k2 = 0;
		for (int i = 0; i < ns; i++)
			if (st[i].computing_ns >= 0)
				st[k2++] = st[i];
		ns = k2;
	}
	if (ns) {
		/* computing, communication not overlapped and free add up to the step (report's split,
		 * msprof's: computing includes the time communication runs under it); below them, not
		 * adding up: the communication under computing and the bubble (time in pipeline receives) */
		double tot = 0, part[5] = { 0 };
		for (int i = 0; i < ns; i++) {
			double sum = (double)(st[i].computing_ns + st[i].comm_not_overlapped_ns + st[i].free_ns);
			tot += sum;
			part[0] += (double)st[i].computing_ns;
			part[1] += (double)st[i].comm_not_overlapped_ns;
			part[2] += (double)st[i].free_ns;
			part[3] += (double)st[i].overlapped_ns;
			part[4] += (double)st[i].bubble_ns;
		}
		static const char *const NM[5] = { "computing", "comm (not overlapped)", "free", "  comm under it",
						   "  bubble (recv)" };
		static const int AT[5] = { VA_COMPUTE, VA_COMM, VA_DIM, VA_OTHER, VA_WARN };
		vw_putf(s, 0, y++, -1, VA_TITLE, "per-step split (mean over %d steps%s)", ns,
			v->f.rank >= 0 ? ", this rank" : ", all ranks");
		int bw = s->w - 50 > 40 ? 40 : s->w - 50;
		for (int k = 0; k < 5 && y < ymax; k++) {
			double fr = tot > 0 ? part[k] / tot : 0;
			vw_putf(s, 2, y, 22, VA_NORMAL, "%s", NM[k]);
			if (bw >= 5)
				bar(s, 24, y, bw, fr, AT[k]);
			vw_putf(s, 24 + (bw >= 5 ? bw + 3 : 0), y, -1, VA_NORMAL, "%5.1f%%  %s", 100 * fr, T(part[k] / ns));
			y++;
		}
		y++;
	}
	free(st);
	/* top 5 operators and collectives */
	int half = s->w / 2;
	int ytop = y;
	if (y < ymax) {
		vw_put(s, 0, y, -1, VA_TITLE, "top operators");
		vw_put(s, half, y, -1, VA_TITLE, "top collectives");
		y++;
	}
	struct db_view_op *o = NULL;
	int no = 0;
	if (vw_q_ops(v, &o, &no) == 0) {
		double sum = 0;
		for (int i = 0; i < no; i++)
			sum += (double)o[i].total_ns;
		for (int k = 0; k < 5 && k < no && y + k < ymax; k++) {
			int best = -1;
			for (int i = 0; i < no; i++)
				if (o[i].count >= 0 && (best < 0 || o[i].total_ns > o[best].total_ns))
					best = i;
			if (best < 0)
				break;
			vw_putf(s, 2, y + k, half - 3, VA_NORMAL, "%-18.18s %9s %5.1f%%", o[best].name, T(o[best].total_ns),
				sum > 0 ? 100.0 * (double)o[best].total_ns / sum : 0);
			o[best].count = -1;   /* taken */
		}
		if (!no && y < ymax)
			vw_put(s, 2, y, half - 3, VA_DIM, "(none)");
	}
	db_view_ops_free(o, no);
	struct db_view_comm *c = NULL;
	int nc = 0;
	if (vw_q_comms(v, 0, &c, &nc) == 0) {
		for (int k = 0; k < 5 && k < nc && y + k < ymax; k++) {
			int best = -1;
			for (int i = 0; i < nc; i++)
				if (c[i].count >= 0 && (best < 0 || c[i].total_ns > c[best].total_ns))
					best = i;
			if (best < 0)
				break;
			vw_putf(s, half + 2, y + k, s->w - half - 2, VA_NORMAL, "%-16.16s %8s %9s", c[best].name,
				units_bytes(b2, sizeof b2, (double)c[best].bucket), T(c[best].total_ns));
			c[best].count = -1;
		}
		if (!nc && y < ymax)
			vw_put(s, half + 2, y, -1, VA_DIM, "(none)");
	}
	db_view_comms_free(c, nc);
	y = ytop + 7;
	if (y < ymax && !v->live) {
		vw_put(s, 0, y++, -1, VA_TITLE, "findings");
		struct fctx fc = { s, y, ymax, 0 };
		db_view_findings(v->db, finding_cb, &fc);
		if (!fc.n)
			vw_put(s, 2, y, -1, VA_DIM, "(none stored in this profile; run 'ascent advise' for advice)");
		else if (fc.n > fc.y - y)
			vw_putf(s, 2, ymax - 1, -1, VA_DIM, "(%d more)", fc.n - (fc.y - y));
	}
}

void vw_draw_view(struct viewer *v, struct vw_screen *s, int y0, int h)
{
	int view = v->view;
	if (v->live && (view == VW_MEMORY || view == VW_TIMELINE || view == VW_DEVICES)) {
		vw_putf(s, 0, y0, -1, VA_DIM, "(the %s view comes when the run ends: the viewer then opens its merged "
			"profile)", vw_view_name(view));
		return;
	}
	switch (view) {
	case VW_OVERVIEW:
		draw_overview(v, s, y0, h);
		return;
	case VW_TIMELINE:
		vw_tl_draw(v, s, y0, h);
		return;
	case VW_COMM: {
		int n2 = v->commtab.norder;
		int h2 = n2 ? (n2 + 2 < h / 3 ? n2 + 2 : h / 3) : 0;
		if (h2 < 3)
			h2 = n2 ? 3 : 0;
		vw_table_draw(s, 0, y0, s->w, h - h2, &v->tab[view], &v->nav[view], 1);
		if (h2) {
			struct vw_nav nv = { .sort_col = 4, .sel = -1 };
			vw_table_draw(s, 0, y0 + h - h2, s->w, h2, &v->commtab, &nv, 0);
		}
		return;
	}
	case VW_STEPS: {
		if (h > 8 && v->nsteps > 1) {
			double *a = malloc((size_t)v->nsteps * sizeof *a), *l = malloc((size_t)v->nsteps * sizeof *l);
			if (a && l) {
				for (int i = 0; i < v->nsteps; i++) {
					a[i] = (double)v->steps[i].max_total_ns;
					l[i] = v->steps[i].has_loss ? v->steps[i].loss : -1;
				}
				/* with --against A, B's step times and A's on one scale */
				double both[2] = { a[0], a[0] };
				for (int i = 0; i < v->nsteps + v->nasteps; i++) {
					double t = i < v->nsteps ? a[i] : (double)v->asteps[i - v->nsteps].max_total_ns;
					both[0] = t < both[0] ? t : both[0];
					both[1] = t > both[1] ? t : both[1];
				}
				int sx = v->nasteps > 1 ? 7 : 6;   /* room for "A time" */
				vw_put(s, 0, y0, 6, VA_TITLE, "time");
				sparkline(s, sx, y0, s->w - sx - 1, a, v->nsteps, VA_COMPUTE, v->nasteps > 1 ? both : NULL);
				vw_put(s, 0, y0 + 1, 6, VA_TITLE, "loss");
				sparkline(s, sx, y0 + 1, s->w - sx - 1, l, v->nsteps, VA_GOOD, NULL);
				if (v->nasteps > 1) {
					double *aa = malloc((size_t)v->nasteps * sizeof *aa);
					for (int i = 0; aa && i < v->nasteps; i++)
						aa[i] = (double)v->asteps[i].max_total_ns;
					vw_put(s, 0, y0 + 2, 6, VA_TITLE, "A time");
					if (aa)
						sparkline(s, sx, y0 + 2, s->w - sx - 1, aa, v->nasteps, VA_OTHER, both);
					free(aa);
				}
			}
			free(a);
			free(l);
			y0 += v->nasteps > 1 ? 3 : 2;
			h -= v->nasteps > 1 ? 3 : 2;
		}
		vw_table_draw(s, 0, y0, s->w, h, &v->tab[view], &v->nav[view], 1);
		return;
	}
	case VW_RANKS: {
		if (v->heat_mode) {
			draw_heat_map(v, s, y0, h);
			return;
		}
		int legend = v->heat_width > 0 && h >= 6;
		h -= legend;
		int nr = v->tab[view].norder;
		int h1 = nr + 1 < h / 2 ? nr + 1 : h / 2;
		if (v->mn == 0 || h < 10)
			h1 = h;
		if (h1 < 2)
			h1 = 2;
		vw_table_draw(s, 0, y0, s->w, h1, &v->tab[view], &v->nav[view], 1);
		if (legend)
			draw_heat_legend(v, s, y0 + h1);
		draw_matrix(v, s, y0 + h1 + 1 + legend, h - h1 - 1);
		return;
	}
	case VW_MEMORY: {
		int hc = h / 3 < 8 ? h / 3 : 8;
		if (hc >= 4) {
			draw_mem_chart(v, s, y0, hc);
			y0 += hc + 1;
			h -= hc + 1;
		}
		vw_table_draw(s, 0, y0, s->w, h, &v->tab[view], &v->nav[view], 1);
		return;
	}
	case VW_DEVICES: {
		int used = draw_device_lines(v, s, y0, h);
		vw_table_draw(s, 0, y0 + used + 1, s->w, h - used - 1, &v->tab[view], &v->nav[view], 1);
		return;
	}
	case VW_DIFF:
		vw_diff_draw(v, s, y0, h);
		return;
	case VW_DIFFROW:
		vw_diff_row_draw(v, s, y0, h);
		return;
	case VW_INSTANCES: {
		char b[32];
		vw_putf(s, 0, y0, -1, VA_TITLE, "%lld instances of %s '%s', %s first (Enter: show on the timeline)",
			(long long)v->inst_total, db_kind_name(v->inst_kind), v->inst_name,
			v->nav[view].reverse ? "fastest" : "slowest");
		(void)b;
		vw_table_draw(s, 0, y0 + 1, s->w, h - 1, &v->tab[view], &v->nav[view], 1);
		return;
	}
	default:
		vw_table_draw(s, 0, y0, s->w, h, &v->tab[view], &v->nav[view], 1);
	}
}
