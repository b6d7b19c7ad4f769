/* viewer/live.c — a run watched while it runs: `ascent view RUN_DIR` before the run's trace.db
 * exists. The profile comes from db/'s live reader (db_live_*: the rank files, read-only, the new
 * rows of each refresh), the loss and tokens/s from the run's metrics.jsonl (the lines appended
 * since the last refresh). Once a second (viewer_tick) both are read again and the current table
 * reloaded; when trace.db appears the viewer reopens on it (the merged profile, every view).
 * Also here: the query seam of the table views (vw_q_*: the finished profile's queries, or the
 * live reader's) and the live overview. */
#include "viewer/internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define LIVE_REFRESH_NS 1000000000LL
#define LIVE_LAST_N 10
#define LIVE_LAST_N_TEXT "10"

struct vw_live {
	struct db_live *db;
	char dir[4096];
	char metrics[4200];
	long moff;                 /* bytes of metrics.jsonl parsed */
	struct vw_metric *m;       /* by step as logged */
	int nm, capm;
	int64_t total_steps;       /* the run's --steps (0 unknown) */
	int last_n;                /* tables cover each rank's last last_n steps; 0 all steps */
	int64_t next_ns;           /* the next refresh (clock_ns) */
	int64_t refreshes;
	char switch_err[256];      /* trace.db appeared but could not be opened yet */
};

struct vw_metric {
	int64_t step;
	double loss, tokens_per_s, ms;
};

int vw_is_live(const struct viewer *v)
{
	return v->live != NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* metrics.jsonl: the complete lines appended since the last read */

/* A number from a metrics line, or -1 when absent, not a number or not finite. */
static double metric_num(const cJSON *j, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) ? v->valuedouble : -1;
}

static int read_metrics(struct vw_live *L)
{
	FILE *f = fopen(L->metrics, "r");
	if (!f)
		return 0;   /* not written yet */
	if (fseek(f, L->moff, SEEK_SET) != 0) {
		fclose(f);
		return 0;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t l;
	int rc = 0;
	while ((l = getline(&line, &cap, f)) > 0) {
		if (line[l - 1] != '\n')
			break;   /* a line being written: read it whole next time */
		L->moff += (long)l;
		cJSON *j = cJSON_Parse(line);
		double st = metric_num(j, "step");
		if (st >= 0 && st <= 9007199254740992.0) {   /* a step number (2^53: exact in a double) */
			if ((rc = ARRAY_GROW(L->m, L->nm, L->capm, 256, "reading metrics.jsonl")) != 0) {
				cJSON_Delete(j);
				break;
			}
			L->m[L->nm++] = (struct vw_metric){ (int64_t)st, metric_num(j, "loss"), metric_num(j, "tokens_per_s"),
							    metric_num(j, "ms") };
		}
		cJSON_Delete(j);   /* a line that is no step's (or no JSON) is not a metric: skipped */
	}
	free(line);
	fclose(f);
	return rc;
}

static const struct vw_metric *metric_of(const struct vw_live *L, int64_t step)
{
	for (int i = L->nm - 1; i >= 0; i--)   /* steps are logged in order: the recent ones are asked for */
		if (L->m[i].step == step)
			return &L->m[i];
	return NULL;
}

/* ---------------------------------------------------------------------------------------- */
/* opening, refreshing, switching to trace.db */

static int64_t config_steps(const char *config_json)
{
	cJSON *c = config_json && *config_json ? cJSON_Parse(config_json) : NULL;
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(c, "steps");
	int64_t n = cJSON_IsNumber(s) ? (int64_t)s->valuedouble : 0;
	cJSON_Delete(c);
	return n;
}

int vw_live_open(struct viewer *v, const char *dir)
{
	struct vw_live *L = calloc(1, sizeof *L);
	if (!L)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	snprintf(L->dir, sizeof L->dir, "%s", dir);
	snprintf(L->metrics, sizeof L->metrics, "%s/metrics.jsonl", dir);
	L->last_n = LIVE_LAST_N;
	int rc = db_live_open(dir, &L->db);
	if (rc) {
		free(L);
		return rc;
	}
	v->live = L;
	return vw_live_refresh(v);
}

void vw_live_free(struct vw_live *L)
{
	if (!L)
		return;
	db_live_close(L->db);
	free(L->m);
	free(L);
}

int vw_live_refresh(struct viewer *v)
{
	struct vw_live *L = v->live;
	int rc = db_live_refresh(L->db);
	if (!rc)
		rc = read_metrics(L);
	if (!L->total_steps)
		L->total_steps = config_steps(db_live_config_json(L->db));
	L->refreshes++;
	L->next_ns = clock_ns() + LIVE_REFRESH_NS;
	v->run.world_size = db_live_world_size(L->db);
	v->run.nranks = db_live_nranks(L->db);
	for (int i = 0; i <= VW_NVIEWS; i++)
		v->nav[i].loaded = 0;   /* the next render reloads the table, keeping selection and sort */
	return rc;
}

/* The run ended: its merged profile replaces the live one, on the same view and restriction. */
static int switch_to_trace(struct viewer *v, const char *trace)
{
	struct viewer_options o = v->o;
	o.path = trace;
	o.view = v->view < VW_NVIEWS ? v->view : VW_OVERVIEW;
	o.rank = -1;
	struct viewer *nv;
	int rc = viewer_open(&o, &nv, NULL);
	if (rc) {
		snprintf(v->live->switch_err, sizeof v->live->switch_err, "%s", ascent_errmsg());
		return 0;   /* try again at the next tick */
	}
	snprintf(nv->path_buf, sizeof nv->path_buf, "%s", trace);
	nv->o.path = nv->path_buf;
	nv->f = v->f;
	for (int i = 0; i < VW_NVIEWS; i++) {
		nv->nav[i].sort_col = v->nav[i].sort_col;
		nv->nav[i].reverse = v->nav[i].reverse;
	}
	snprintf(nv->filter, sizeof nv->filter, "%s", v->filter);
	struct viewer old = *v;
	*v = *nv;
	*nv = old;
	v->o.path = v->path_buf;   /* it pointed into nv's copy, which is freed next */
	viewer_free(nv);
	vw_set_status(v, 0, "the run ended: showing its merged profile %s", trace);
	return 1;
}

int viewer_tick(struct viewer *v)
{
	if (!v->live || clock_ns() < v->live->next_ns)
		return 0;
	char trace[4200];
	snprintf(trace, sizeof trace, "%s/trace.db", v->live->dir);
	struct stat st;
	if (!stat(trace, &st) && S_ISREG(st.st_mode) && switch_to_trace(v, trace))
		return 1;
	int rc = vw_live_refresh(v);
	if (rc)
		vw_set_status(v, 1, "%s", ascent_errmsg());
	return 1;
}

int vw_live_toggle_all(struct viewer *v)
{
	struct vw_live *L = v->live;
	L->last_n = L->last_n ? 0 : LIVE_LAST_N;
	vw_invalidate(v);
	vw_set_status(v, 0, L->last_n ? "live: tables cover each rank's last %d steps (A: all steps)"
				       : "live: tables cover all steps (A: the last %d)", LIVE_LAST_N);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the views' queries: the finished profile's, or the live reader's */

int vw_q_ops(struct viewer *v, struct db_view_op **o, int *n)
{
	if (!v->live)
		return db_view_ops(v->db, v->f, DB_KINDS_OPERATORS, o, n);
	return db_live_ops(v->live->db, v->f, v->live->last_n ? v->live->last_n : -1, DB_KINDS_OPERATORS, o, n);
}

int vw_q_comms(struct viewer *v, int by_comm, struct db_view_comm **c, int *n)
{
	if (!v->live)
		return db_view_comms(v->db, v->f, by_comm, c, n);
	if (by_comm) {   /* per communicator needs the ranks matched: after the run */
		*c = NULL;
		*n = 0;
		return 0;
	}
	return db_live_comms(v->live->db, v->f, v->live->last_n ? v->live->last_n : -1, c, n);
}

int vw_q_steps(struct viewer *v, struct db_view_step **s, int *n)
{
	if (!v->live)
		return db_view_steps(v->db, v->f, s, n);
	int rc = db_live_steps(v->live->db, v->f, s, n);
	for (int i = 0; !rc && i < *n; i++) {
		const struct vw_metric *m = metric_of(v->live, (*s)[i].step);
		if (m && m->loss >= 0) {
			(*s)[i].loss = m->loss;
			(*s)[i].has_loss = 1;
		}
	}
	return rc;
}

int vw_q_ranks(struct viewer *v, struct db_view_rank **r, int *n)
{
	if (!v->live)
		return db_view_ranks(v->db, v->f, r, n);
	return db_live_ranks(v->live->db, v->f, v->live->last_n ? v->live->last_n : -1, r, n);
}

/* ---------------------------------------------------------------------------------------- */
/* what the title and the overview say */

static const char *state_name(int s)
{
	static const char *const N[] = { "starting", "running", "ended", "DIED" };
	return s >= 0 && s < 4 ? N[s] : "?";
}

/* The last logged step, steps per second and the time left, from metrics.jsonl's last N lines. */
static void rate(const struct vw_live *L, int64_t *last, double *steps_s, double *eta_s)
{
	*last = L->nm ? L->m[L->nm - 1].step : -1;
	double ms = 0;
	int k = 0;
	for (int i = L->nm - 1; i >= 0 && k < LIVE_LAST_N; i--)
		if (L->m[i].ms > 0) {
			ms += L->m[i].ms;
			k++;
		}
	*steps_s = k && ms > 0 ? 1000.0 * k / ms : 0;
	*eta_s = *steps_s > 0 && L->total_steps > *last ? (double)(L->total_steps - *last) / *steps_s : -1;
}

void vw_live_banner(const struct viewer *v, char *buf, size_t n)
{
	const struct vw_live *L = v->live;
	int64_t last;
	double sps, eta;
	rate(L, &last, &sps, &eta);
	size_t k = (size_t)snprintf(buf, n, "LIVE");
	/* a dead rank first: the title is cut at the screen's width */
	for (int i = 0; i < db_live_nranks(L->db) && k < n; i++) {
		const struct db_live_rank *r = db_live_rank_at(L->db, i);
		if (r->state != DB_LIVE_DEAD)
			continue;
		char when[32];
		clock_format_utc(r->state_utc_ns, 0, when, sizeof when);
		k += (size_t)snprintf(buf + k, n - k, "  rank %d DIED (pid %d, seen %s)", r->rank, r->pid,
				      strchr(when, 'T') ? strchr(when, 'T') + 1 : when);
	}
	char tot[32] = "", e[32] = "-";
	if (L->total_steps)
		snprintf(tot, sizeof tot, "/%lld", (long long)L->total_steps);
	if (eta >= 0)
		units_ns(e, sizeof e, eta * 1e9);
	if (k < n && last >= 0)
		k += (size_t)snprintf(buf + k, n - k, "  step %lld%s  %.2f steps/s  ETA %s", (long long)last, tot, sps, e);
	else if (k < n)
		k += (size_t)snprintf(buf + k, n - k, "  (no step logged yet)");
	if (k < n)
		k += (size_t)snprintf(buf + k, n - k, "  tables: %s", L->last_n ? "last " LIVE_LAST_N_TEXT " steps (A: all)"
										 : "all steps (A: last " LIVE_LAST_N_TEXT ")");
	if (*L->switch_err && k < n)
		snprintf(buf + k, n - k, "  | trace.db: %s", L->switch_err);
}

static void spark(struct vw_screen *s, int x, int y, int w, const struct vw_live *L, int tokens, int attr)
{
	static const char LV[] = "_.-:=+*#";
	int n = L->nm < w ? L->nm : w, first = L->nm - n;
	double lo = 0, hi = 0;
	int any = 0;
	for (int i = first; i < L->nm; i++) {
		double x2 = tokens ? L->m[i].tokens_per_s : L->m[i].loss;
		if (x2 < 0)
			continue;
		if (!any || x2 < lo)
			lo = x2;
		if (!any || x2 > hi)
			hi = x2;
		any = 1;
	}
	for (int i = first; i < L->nm; i++) {
		double x2 = tokens ? L->m[i].tokens_per_s : L->m[i].loss;
		if (x2 < 0)
			continue;
		int lv = hi > lo ? (int)((x2 - lo) / (hi - lo) * 7.999) : 4;
		char ch[2] = { LV[lv], 0 };
		vw_put(s, x + i - first, y, 1, attr, ch);
	}
}

int vw_live_draw_overview(struct viewer *v, struct vw_screen *s, int y0, int h)
{
	const struct vw_live *L = v->live;
	int y = y0, ymax = y0 + h;
	char b[32], b2[32];
	int64_t last;
	double sps, eta;
	rate(L, &last, &sps, &eta);
	vw_put(s, 0, y++, -1, VA_TITLE, "run (live: refreshed every second; the merged profile replaces it when the run ends)");
	const char *cmd = db_live_command_line(L->db);
	vw_putf(s, 2, y++, -1, VA_NORMAL, "command    %s", *cmd ? cmd : "(not recorded yet)");
	vw_putf(s, 2, y++, -1, VA_NORMAL, "folder     %s   ranks %d of %d", L->dir, db_live_nranks(L->db),
		db_live_world_size(L->db));
	if (last >= 0) {
		const struct vw_metric *m = &L->m[L->nm - 1];
		vw_putf(s, 2, y++, -1, VA_NORMAL, "step       %lld%s%s   %.2f steps/s   ETA %s", (long long)last,
			L->total_steps ? " of " : "", L->total_steps ? (snprintf(b2, sizeof b2, "%lld", (long long)L->total_steps), b2) : "",
			sps, eta >= 0 ? units_ns(b, sizeof b, eta * 1e9) : "-");
		vw_putf(s, 2, y++, -1, VA_NORMAL, "loss       %.4f     tokens/s %.1f", m->loss, m->tokens_per_s);
		if (y < ymax) {
			vw_put(s, 2, y, 11, VA_NORMAL, "loss curve");
			spark(s, 13, y++, s->w - 14, L, 0, VA_GOOD);
		}
		if (y < ymax) {
			vw_put(s, 2, y, 11, VA_NORMAL, "tokens/s");
			spark(s, 13, y++, s->w - 14, L, 1, VA_COMPUTE);
		}
	} else {
		vw_put(s, 2, y++, -1, VA_DIM, "no step in metrics.jsonl yet");
	}
	y++;
	if (y < ymax)
		vw_put(s, 0, y++, -1, VA_TITLE, "ranks");
	for (int i = 0; i < db_live_nranks(L->db) && y < ymax; i++) {
		const struct db_live_rank *r = db_live_rank_at(L->db, i);
		char when[32] = "";
		if (r->state == DB_LIVE_DEAD || r->state == DB_LIVE_ENDED)
			clock_format_utc(r->state_utc_ns, 0, when, sizeof when);
		vw_putf(s, 2, y++, -1, r->state == DB_LIVE_DEAD ? VA_WARN : VA_NORMAL,
			"rank %-4d %-8s %s%s pid %-7d %-16.16s last step %-6lld events %-9s at +%s", r->rank,
			state_name(r->state), when, *when ? "" : "", r->pid, *r->host ? r->host : "-", (long long)r->last_step,
			vw_fmt_count(b2, sizeof b2, r->events), units_ns(b, sizeof b, (double)r->last_ns));
	}
	return y;
}
