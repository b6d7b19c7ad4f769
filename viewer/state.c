/* viewer/state.c — the viewer's state machine: opening a profile (with the checks that give a
 * clear message for every kind of unviewable file), keys → actions (views, sort, filter, drill-down
 * and back, rank/step restriction, overlays), and rendering the frame around a view (title with
 * breadcrumb, tabs, status line, key bar, help and details overlays). */
#include "viewer/internal.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char *const VIEW_NAMES[VW_NALL] = { "overview", "ops", "comm", "steps", "ranks", "memory",
						 "timeline", "devices", "instances", "diff", "diff-row" };

const char *vw_view_name(int view)
{
	return view >= 0 && view < VW_NALL ? VIEW_NAMES[view] : "?";
}

int vw_view_by_name(const char *name)
{
	for (int i = 0; i < VW_NALL; i++)
		if (name && i != VW_INSTANCES && !strcmp(name, VIEW_NAMES[i]))
			return i;
	return -1;
}

void vw_set_status(struct viewer *v, int err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(v->status, sizeof v->status, fmt, ap);
	va_end(ap);
	v->status_err = err;
}

void vw_invalidate(struct viewer *v)
{
	for (int i = 0; i < VW_NALL; i++) {
		v->nav[i].loaded = 0;
		v->nav[i].sel = 0;
		v->nav[i].top = 0;
	}
	vw_table_reset(&v->tab[VW_INSTANCES]);
	if (v->view == VW_DIFFROW)   /* its row is of the diff before the change */
		v->view = VW_DIFF, v->ncrumbs = 0;
	v->tl.loaded = 0;
}

int viewer_open(const struct viewer_options *o, struct viewer **out, int64_t *built_ms)
{
	*out = NULL;
	if (built_ms)
		*built_ms = 0;
	if (!o->path || !*o->path)
		return ascent_error(ASCENT_EUSAGE, "'ascent view' needs a profile database (ascent view RUN.db)");
	/* a run folder: its trace.db when the run has ended, else the rank files while it runs; a
	 * trace.db that does not exist yet beside rank files: the same */
	char dir[4096] = "", trace[4200];
	if (fs_is_dir(o->path)) {
		snprintf(dir, sizeof dir, "%s", o->path);
	} else if (!fs_exists(o->path)) {
		snprintf(dir, sizeof dir, "%s", o->path);
		char *slash = strrchr(dir, '/');
		if (slash)
			*slash = 0;
		else
			snprintf(dir, sizeof dir, ".");
		if (!db_live_rank_files(dir))
			dir[0] = 0;
	}
	if (*dir) {
		snprintf(trace, sizeof trace, "%s/trace.db", dir);
		if (fs_exists(trace)) {
			struct viewer_options o2 = *o;
			o2.path = trace;
			int rc = viewer_open(&o2, out, built_ms);
			if (!rc)
				snprintf((*out)->path_buf, sizeof (*out)->path_buf, "%s", trace), (*out)->o.path = (*out)->path_buf;
			return rc;
		}
		if (!db_live_rank_files(dir))
			return ascent_error(ASCENT_EINPUT, "cannot open '%s': the folder holds neither trace.db nor rank files "
					    "(rank-NNNNN.db): give a profiled run's folder (ascent train --profile, ascent "
					    "profile -- CMD) or a profile database", o->path);
	}
	if (!*dir && !fs_exists(o->path))
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': no such file (a run's profile is runs/NAME/trace.db)",
				    o->path);
	struct viewer *v = calloc(1, sizeof *v);
	if (!v)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	v->o = *o;
	v->f = (struct db_filter){ o->rank, o->step_lo, o->step_lo >= 0 ? o->step_hi : -1 };
	v->view = o->view >= 0 && (o->view < VW_NVIEWS || o->view == VW_DIFF) ? o->view : VW_OVERVIEW;
	v->dist_row = -1;
	for (int i = 0; i < VW_NALL; i++)
		v->nav[i].sort_col = 2;
	v->nav[VW_DIFF].sort_col = 3;   /* the absolute change in total time, largest first */
	v->nav[VW_COMM].sort_col = 4;
	v->nav[VW_STEPS].sort_col = 0;
	v->nav[VW_RANKS].sort_col = 4;   /* compute, largest first: the slowest rank on top */
	v->nav[VW_MEMORY].sort_col = 3;  /* peak, largest first (after category, rank, device) */
	v->nav[VW_INSTANCES].sort_col = -1;
	if (*dir) {
		if (o->against) {
			free(v);
			return ascent_error(ASCENT_EUSAGE, "--against compares finished profiles: '%s' has no trace.db yet (its "
					    "run still goes, or was killed: merge its rank files first)", o->path);
		}
		snprintf(v->path_buf, sizeof v->path_buf, "%s", dir);
		v->o.path = v->path_buf;
		int rc = vw_live_open(v, dir);
		if (rc) {
			viewer_free(v);
			return rc;
		}
		v->nav[VW_STEPS].reverse = 1;   /* the newest step first: the table grows at the top */
		*out = v;
		return 0;
	}
	int rc = db_open(o->path, DB_READ, &v->db);
	if (rc) {
		free(v);
		return rc;
	}
	struct db_view_probe p;
	if ((rc = db_view_probe(v->db, &p)) != 0)
		goto fail;
	if (!p.indexed && (p.wal || strstr(o->path, "rank-"))) {
		rc = ascent_error(ASCENT_EINPUT, "cannot view '%s': the run is still being written (or was killed): a rank's "
				  "own database has no indexes yet; wait for the run to end (its ranks are then merged into "
				  "trace.db), or merge a killed run's rank-*.db files first", o->path);
		goto fail;
	}
	int64_t samples = 0;
	if (!p.has_events && db_count(v->db, "sample", &samples) == 0 && samples > 0) {
		/* the views are built from events; a run profiled with --sample alone has only stacks */
		rc = ascent_error(ASCENT_EINPUT, "'%s' holds %lld CPU samples and no events (a program profiled with --sample "
				  "that made no MPI or hook calls): the viewer shows events; read the samples with 'ascent "
				  "report %s --by stack' or 'ascent export %s --format folded'", o->path, (long long)samples,
				  o->path, o->path);
		goto fail;
	}
	if (!p.has_events) {
		rc = ascent_error(ASCENT_EINPUT, "'%s' holds no events: the run recorded nothing (was the profiler's active "
				  "window reached before the run ended? see 'ascent train --help', --profile-schedule)", o->path);
		goto fail;
	}
	if (!p.indexed) {
		rc = ascent_error(ASCENT_EINPUT, "cannot view '%s': the profile was not finished (no indexes: the run stopped "
				  "before the profiler closed it); merge or finalize it first", o->path);
		goto fail;
	}
	int64_t t0 = clock_ns();
	int built = 0;
	if ((rc = db_view_prepare(v->db, &built)) != 0)
		goto fail;
	if (built_ms)
		*built_ms = built ? (clock_ns() - t0) / 1000000 : 0;
	if ((rc = db_view_run(v->db, &v->run)) != 0)
		goto fail;
	if ((rc = db_strings(v->db, &v->names, &v->nnames)) != 0)
		goto fail;
	if (o->rank >= 0) {
		struct db_view_lane *l;
		int n;
		if ((rc = db_view_lanes(v->db, o->rank, &l, &n)) != 0)
			goto fail;
		db_view_lanes_free(l, n);
		if (!n) {
			rc = ascent_error(ASCENT_EUSAGE, "--rank %d: '%s' has no events of rank %d (it has %d ranks)", o->rank,
					  o->path, o->rank, v->run.nranks);
			goto fail;
		}
	}
	if ((rc = vw_tl_load(v)) != 0)
		goto fail;
	if (o->against && (rc = vw_diff_open(v, o->against)) != 0)
		goto fail;
	if (!o->against && v->view == VW_DIFF) {
		rc = ascent_error(ASCENT_EUSAGE, "the diff view compares two profiles: give the other with --against A.db "
				  "(ascent view %s --against A.db)", o->path);
		goto fail;
	}
	*out = v;
	return 0;
fail:
	viewer_free(v);
	return rc;
}

void viewer_free(struct viewer *v)
{
	if (!v)
		return;
	for (int i = 0; i < VW_NALL; i++)
		vw_table_reset(&v->tab[i]);
	vw_diff_free(v);
	vw_table_reset(&v->commtab);
	db_device_stats_free(v->dev, v->ndev);
	db_critpath_free(v->cp, v->ncp);
	free(v->cp_ranks);
	free(v->cp_tried);
	db_view_event_free(&v->ev);
	free(v->ev_args);
	db_view_lanes_free(v->tl.lanes, v->tl.nlanes);
	db_view_run_free(&v->run);
	db_strings_free(v->names, v->nnames);
	free(v->steps);
	free(v->mranks);
	free(v->mbytes);
	free(v->mcount);
	db_view_heat_free(&v->heat);
	db_close(v->db);
	vw_live_free(v->live);
	free(v);
}

/* ---------------------------------------------------------------------------------------- */

int viewer_current_view(const struct viewer *v)
{
	return v->view;
}

static int is_table(int view)
{
	return view != VW_OVERVIEW && view != VW_TIMELINE && view != VW_DIFFROW;
}

int viewer_selected_row(const struct viewer *v)
{
	return is_table(v->view) && v->tab[v->view].norder ? v->nav[v->view].sel : -1;
}

static const struct vw_row *sel_row(const struct viewer *v)
{
	const struct vw_table *t = &v->tab[v->view];
	int s = viewer_selected_row(v);
	return s >= 0 && s < t->norder ? &t->rows[t->order[s]] : NULL;
}

const char *viewer_selected_name(const struct viewer *v)
{
	const struct vw_row *r = sel_row(v);
	return r && r->cell[v->tab[v->view].name_col] ? r->cell[v->tab[v->view].name_col] : "";
}

int viewer_table_rows(const struct viewer *v)
{
	return is_table(v->view) ? v->tab[v->view].norder : 0;
}

const char *viewer_breadcrumb(const struct viewer *v, char *buf, size_t n)
{
	size_t k = 0;
	buf[0] = 0;
	for (int i = 0; i < v->ncrumbs && k < n; i++)
		k += (size_t)snprintf(buf + k, n - k, "%s > ", v->crumbs[i].label);
	if (k < n) {
		if (v->view == VW_INSTANCES)
			snprintf(buf + k, n - k, "%s", v->inst_name);
		else
			snprintf(buf + k, n - k, "%s", vw_view_name(v->view));
	}
	return buf;
}

void viewer_timeline_window(const struct viewer *v, int64_t *t0, int64_t *t1, int *rank, int *tid)
{
	*t0 = v->tl.t0;
	*t1 = v->tl.t1;
	*rank = v->tl.nlanes ? v->tl.lanes[v->tl.lane].rank : -1;
	*tid = v->tl.nlanes ? v->tl.lanes[v->tl.lane].tid : -1;
}

/* ---------------------------------------------------------------------------------------- */
/* keys */

static int ensure_loaded(struct viewer *v)
{
	if (v->live && (v->view == VW_TIMELINE || v->view == VW_MEMORY))
		return 0;   /* after the run (the view says so) */
	if (v->view == VW_TIMELINE)
		return v->tl.loaded ? 0 : vw_tl_load(v);
	if (!is_table(v->view) || v->nav[v->view].loaded)
		return 0;
	return vw_load_view(v, v->view);
}

static int reapply(struct viewer *v)
{
	if (!is_table(v->view) || v->view == VW_INSTANCES)
		return 0;
	struct vw_nav *nav = &v->nav[v->view];
	return vw_table_apply(&v->tab[v->view], v->filter, nav->sort_col, nav->reverse);
}

static void push_crumb(struct viewer *v, const char *label)
{
	if (v->ncrumbs >= 16)
		memmove(v->crumbs, v->crumbs + 1, 15 * sizeof v->crumbs[0]), v->ncrumbs = 15;
	struct vw_crumb *c = &v->crumbs[v->ncrumbs++];
	c->view = v->view;
	snprintf(c->label, sizeof c->label, "%s", label);
}

static int switch_view(struct viewer *v, int view)
{
	v->ncrumbs = 0;
	v->view = view;
	return ensure_loaded(v);
}

static int drill(struct viewer *v)
{
	const struct vw_row *r = sel_row(v);
	if (v->view == VW_DIFF) {
		if (!r)
			return 0;
		push_crumb(v, "diff");
		v->view = VW_DIFFROW;
		return vw_diff_drill(v);
	}
	if (v->view == VW_OPS || v->view == VW_COMM) {
		if (!r)
			return 0;
		if (r->id <= 0) {
			vw_set_status(v, 0, "no instances to show for this row");
			return 0;
		}
		push_crumb(v, v->view == VW_OPS ? "ops" : "comm");
		v->inst_kind = r->kind;
		v->inst_name_id = r->id;
		snprintf(v->inst_name, sizeof v->inst_name, "%s", r->cell[0] ? r->cell[0] : "?");
		vw_table_reset(&v->tab[VW_INSTANCES]);
		v->nav[VW_INSTANCES] = (struct vw_nav){ .sort_col = -1 };
		v->view = VW_INSTANCES;
		return vw_load_view(v, VW_INSTANCES);
	}
	if (v->view == VW_INSTANCES) {
		if (!r)
			return 0;
		char lab[80];
		snprintf(lab, sizeof lab, "%.60s #%d", v->inst_name, v->nav[VW_INSTANCES].sel + 1);
		push_crumb(v, lab);
		v->view = VW_TIMELINE;
		int rc = ensure_loaded(v);
		if (!rc)
			vw_tl_goto(v, (int)r->id, r->kind, r->aux, (int64_t)r->key[VW_MAXCOLS - 1]);
		return rc;
	}
	if (v->view == VW_STEPS && r) {
		/* the step on the timeline, on its slowest rank */
		char lab[40];
		snprintf(lab, sizeof lab, "step %lld", (long long)r->id);
		push_crumb(v, lab);
		v->view = VW_TIMELINE;
		int rc = ensure_loaded(v);
		if (rc)
			return rc;
		for (int i = 0; i < v->tl.nlanes; i++) {
			const struct db_view_lane *l = &v->tl.lanes[i];
			if (l->rank != (int)r->aux)
				continue;
			int64_t st[4096], sn[4096];
			int n = 0;
			if (db_view_step_marks(v->db, l->rank, l->shift_ns, v->tl.T0, v->tl.T1 + 1, 4096, st, sn, &n) == 0) {
				int64_t a = -1, e = v->tl.T1;
				for (int k = 0; k < n; k++) {
					if (sn[k] == r->id)
						a = st[k];
					if (sn[k] == r->id + 1)
						e = st[k];
				}
				if (a >= 0) {
					v->tl.lane = i;
					v->tl.t0 = a;
					v->tl.t1 = e > a ? e : a + 1000;
				}
			}
			break;
		}
		return 0;
	}
	if (v->view == VW_DEVICES && r) {   /* the stream's lane on the timeline (id: rank, kind: lane) */
		char lab[40];
		snprintf(lab, sizeof lab, "r%lld stream", (long long)r->id);
		push_crumb(v, lab);
		v->view = VW_TIMELINE;
		int rc = ensure_loaded(v);
		for (int i = 0; !rc && i < v->tl.nlanes; i++)
			if (v->tl.lanes[i].rank == (int)r->id && v->tl.lanes[i].tid == r->kind) {
				v->tl.lane = i;
				break;
			}
		return rc;
	}
	if (v->view == VW_RANKS && r) {
		char lab[40];
		snprintf(lab, sizeof lab, "rank %lld", (long long)r->id);
		push_crumb(v, lab);
		v->view = VW_TIMELINE;
		int rc = ensure_loaded(v);
		for (int i = 0; !rc && i < v->tl.nlanes; i++)
			if (v->tl.lanes[i].rank == (int)r->id) {
				v->tl.lane = i;
				break;
			}
		return rc;
	}
	return 0;
}

static int back(struct viewer *v)
{
	if (!v->ncrumbs) {
		vw_set_status(v, 0, "nothing to go back to");
		return 0;
	}
	v->view = v->crumbs[--v->ncrumbs].view;
	return ensure_loaded(v);
}

static int parse_steps(struct viewer *v, const char *s)
{
	if (!*s) {
		v->f.step_lo = v->f.step_hi = -1;
		vw_invalidate(v);
		return 0;
	}
	long long a, b;
	char extra;
	int n = sscanf(s, "%lld:%lld%c", &a, &b, &extra);
	if (n == 1 && sscanf(s, "%lld%c", &a, &extra) == 1)
		b = a, n = 2;
	if (n != 2 || a < 0 || b < a) {
		vw_set_status(v, 1, "steps '%s' not understood: type A:B (e.g. 10:20) or one step, Enter to apply", s);
		return 0;
	}
	v->f.step_lo = a;
	v->f.step_hi = b;
	vw_invalidate(v);
	return 0;
}

static void move_sel(struct viewer *v, int d)
{
	struct vw_nav *nav = &v->nav[v->view];
	int n = v->tab[v->view].norder;
	nav->sel += d;
	if (nav->sel >= n)
		nav->sel = n - 1;
	if (nav->sel < 0)
		nav->sel = 0;
}

/* ':' N Enter: select the row of rank (step) N in a table whose names are numbers, clearing a
 * filter that hides it. */
static int jump_to(struct viewer *v, const char *text)
{
	struct vw_table *t = &v->tab[v->view];
	char *end;
	long long want = strtoll(text, &end, 10);
	if (!*text || *end) {
		vw_set_status(v, 1, "'%s' is not a number: type : then a %s number, Enter", text,
			      v->view == VW_RANKS ? "rank" : "step");
		return 0;
	}
	for (int pass = 0; pass < 2; pass++) {
		for (int i = 0; i < t->norder; i++)
			if (t->rows[t->order[i]].key[t->name_col] == (double)want) {
				v->nav[v->view].sel = i;
				vw_set_status(v, 0, "%s %lld", v->view == VW_RANKS ? "rank" : "step", want);
				return 0;
			}
		if (pass || !*v->filter)
			break;
		v->filter[0] = 0;   /* hidden by the filter? */
		int rc = reapply(v);
		if (rc)
			return rc;
	}
	vw_set_status(v, 1, "no %s %lld here", v->view == VW_RANKS ? "rank" : "step", want);
	return 0;
}

/* global_key: "not mine" (the handlers return 0, 1 to quit, or a negative error code) */
#define KEY_UNHANDLED 2

/* A key while text is typed into the filter (/) or the steps prompt (S). */
static int edit_key(struct viewer *v, int key)
{
	int rc;
	char *buf = v->editing == VW_EDIT_FILTER ? v->filter : v->prompt;
	size_t len = strlen(buf);
	if (key == VK_ESC) {
		buf[0] = 0;
		enum vw_edit was = v->editing;
		v->editing = VW_EDIT_NONE;
		return was == VW_EDIT_FILTER ? reapply(v) : 0;
	}
	if (key == VK_ENTER) {
		enum vw_edit was = v->editing;
		v->editing = VW_EDIT_NONE;
		if (was == VW_EDIT_JUMP)
			return jump_to(v, v->prompt);
		if (was == VW_EDIT_STEPS) {
			if ((rc = parse_steps(v, v->prompt)) != 0)
				return rc;
			return ensure_loaded(v);
		}
		return 0;
	}
	if (key == VK_BACKSPACE) {
		if (len)
			buf[len - 1] = 0;
	} else if (key >= 32 && key < 127 && len + 1 < VW_FILTER_MAX) {
		buf[len] = (char)key;
		buf[len + 1] = 0;
	} else {
		return 0;
	}
	if (v->editing == VW_EDIT_FILTER) {
		v->nav[v->view].sel = 0;
		v->nav[v->view].top = 0;
		return reapply(v);
	}
	return 0;
}

/* Keys every view shares: quit, help, views, filter, rank and step restrictions. KEY_UNHANDLED
 * when the key is not one of them. */
static int global_key(struct viewer *v, int key)
{
	int rc;
	switch (key) {
	case 'q':
		return 1;
	case '?': case 'h': case VK_F1:
		v->help = 1;
		return 0;
	case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
		return switch_view(v, key - '1');
	case VK_TAB:
		return switch_view(v, ((v->view >= VW_NVIEWS ? VW_OPS : v->view) + 1) % VW_NVIEWS);
	case VK_BTAB:
		return switch_view(v, ((v->view >= VW_NVIEWS ? VW_OPS : v->view) + VW_NVIEWS - 1) % VW_NVIEWS);
	case '/':
		v->editing = VW_EDIT_FILTER;
		v->filter[0] = 0;
		return reapply(v);
	case VK_ESC:
		if (*v->filter) {
			v->filter[0] = 0;
			return reapply(v);
		}
		return 0;
	case VK_BACKSPACE:
		return back(v);
	case 'A':
		if (!v->live) {
			vw_set_status(v, 0, "A: live runs only (the last N steps or all steps)");
			return 0;
		}
		vw_live_toggle_all(v);
		return ensure_loaded(v);
	case 'R': {
		/* cycle: all → each rank → all */
		int next = -1;
		if (v->live) {
			struct db_view_rank *lr;
			int n;
			if ((rc = vw_q_ranks(v, &lr, &n)) != 0)
				return rc;
			for (int i = 0; i < n && next < 0; i++)
				if (lr[i].rank > v->f.rank)
					next = lr[i].rank;
			db_view_ranks_free(lr, n);
		} else if (v->run.nranks > 0) {
			struct db_view_lane *l;
			int n;
			if ((rc = db_view_lanes(v->db, -1, &l, &n)) != 0)
				return rc;
			for (int i = 0; i < n; i++)
				if (l[i].rank > v->f.rank) {
					next = l[i].rank;
					break;
				}
			db_view_lanes_free(l, n);
		}
		v->f.rank = next;
		vw_invalidate(v);
		vw_set_status(v, 0, next < 0 ? "showing all ranks" : "showing rank %d (R: next rank)", next);
		return ensure_loaded(v);
	}
	case 'D':
		if (!v->adb) {
			vw_set_status(v, 0, "D: the diff view needs a second profile (ascent view B.db --against A.db)");
			return 0;
		}
		return switch_view(v, VW_DIFF);
	case 'S':
		v->editing = VW_EDIT_STEPS;
		v->prompt[0] = 0;
		return 0;
	case 'x':
		v->f.rank = -1;
		v->f.step_lo = v->f.step_hi = -1;
		vw_invalidate(v);
		vw_set_status(v, 0, "showing all ranks and steps");
		return ensure_loaded(v);
	default:
		return KEY_UNHANDLED;
	}
}

/* Keys of a table view: selection, paging, sorting, drilling down. */
static int table_key(struct viewer *v, int key)
{
	int rc;
	struct vw_nav *nav = &v->nav[v->view];
	struct vw_table *t = &v->tab[v->view];
	int page = v->last_h > 8 ? v->last_h - 8 : 10;
	switch (key) {
	case VK_UP: case 'k': move_sel(v, -1); break;
	case VK_DOWN: case 'j': move_sel(v, 1); break;
	case VK_PGUP: move_sel(v, -page); break;
	case VK_PGDN: move_sel(v, page); break;
	case VK_HOME: case 'g': nav->sel = 0; break;
	case VK_END: case 'G': nav->sel = t->norder ? t->norder - 1 : 0; break;
	case 'n': move_sel(v, 1); break;
	case 'N': move_sel(v, -1); break;
	case ':':
		if (!t->name_numeric) {
			vw_set_status(v, 0, ": jumps to a rank (ranks view) or a step (steps view)");
			break;
		}
		v->editing = VW_EDIT_JUMP;
		v->prompt[0] = 0;
		break;
	case '<': case '>': case VK_LEFT: case VK_RIGHT:
		if (v->view == VW_INSTANCES) {
			vw_set_status(v, 0, "instances are ordered by duration; r reverses");
			break;
		}
		nav->sort_col += key == '<' || key == VK_LEFT ? -1 : 1;
		if (nav->sort_col < 0)
			nav->sort_col = t->ncols - 1;
		if (nav->sort_col >= t->ncols)
			nav->sort_col = 0;
		nav->reverse = 0;
		vw_set_status(v, 0, "sorted by %s", t->col[nav->sort_col].title);
		return reapply(v);
	case 'r':
		nav->reverse = !nav->reverse;
		if (v->view == VW_INSTANCES) {
			vw_table_reset(t);
			nav->sel = nav->top = 0;
			return vw_load_view(v, VW_INSTANCES);
		}
		return reapply(v);
	case 's':
		if (v->view == VW_OPS && v->live) {
			vw_set_status(v, 0, "self time comes when the run ends (the merged profile)");
			break;
		}
		if (v->view == VW_OPS) {
			v->self_mode = !v->self_mode;
			vw_set_status(v, 0, v->self_mode ? "self time (children excluded)" : "total time (children included)");
			return vw_load_view(v, VW_OPS);
		}
		break;
	case VK_ENTER: case 'l':
		return drill(v);
	default:
		break;
	}
	/* instances: fetch the next page when the selection reaches the end */
	if (v->view == VW_INSTANCES && nav->sel >= t->norder - 1 && t->nrows < v->inst_total) {
		int sel = nav->sel;
		if ((rc = vw_load_view(v, VW_INSTANCES)) != 0)
			return rc;
		nav->sel = sel;
	}
	return 0;
}

static int key_inner(struct viewer *v, int key)
{
	if (key == VK_CTRL_C)
		return 1;
	if (key == VK_RESIZE)
		return 0;
	/* overlays close on any key (q still quits; g in details follows a launch link) */
	if (v->help || v->details) {
		int follow = v->details && key == 'g' && v->ev_link_dir;
		v->help = v->details = 0;
		if (follow)
			vw_tl_follow_link(v);
		return key == 'q' ? 1 : 0;
	}
	if (v->editing)
		return edit_key(v, key);
	int rc = global_key(v, key);
	if (rc != KEY_UNHANDLED)
		return rc;
	if (v->view == VW_TIMELINE)
		return vw_tl_key(v, key) < 0 ? -1 : 0;
	if (v->view == VW_RANKS && (rc = vw_heat_key(v, key)) != 0)
		return rc < 0 ? -1 : 0;
	if (!is_table(v->view))
		return 0;
	return table_key(v, key);
}

int viewer_key(struct viewer *v, int key)
{
	int rc = key_inner(v, key);
	if (rc < 0) {
		vw_set_status(v, 1, "%s", ascent_errmsg());
		return rc;
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* rendering */

static const char *const HELP[] = {
	"1-8, Tab, S-Tab  views: overview ops comm steps ranks memory timeline devices",
	"/               filter by name (type; Enter keeps it, Esc clears it)",
	"<  >  Left Right sort column (tables)        r  reverse the sort",
	":N Enter        ranks, steps: go to rank (step) N",
	"Up Down j k     move; PgUp PgDn Home End g G",
	"Enter  l        drill down: operator > instances > timeline;",
	"                step, rank or device stream > timeline; event > details",
	"g (in details)  imported traces: go to the kernel a launch started, or back",
	"Backspace       back (the breadcrumb shows where you are)",
	"n  N            next / previous match (tables: rows; timeline: events)",
	"R               next rank (all > 0 > 1 > ... > all)",
	"m               ranks: traffic heat map by host pair > by rank pair (few ranks) > the table",
	"S               steps A:B (empty: all)     x  all ranks and steps",
	"D               diff view (--against A.db): every name by change; Enter: both distributions",
	"A               live run: tables over the last 10 steps / all steps",
	"s               ops: self vs total time; timeline: zoom out",
	"w s  + -        timeline zoom in / out   a d  Left Right  pan",
	"0  Home         timeline: whole run",
	"? h F1          this help                 q  Ctrl-C  quit",
};

static void draw_box(struct vw_screen *s, int x, int y, int w, int h, const char *title)
{
	vw_fill(s, x, y, w, h, ' ', VA_BOX);
	for (int i = x; i < x + w; i++) {
		vw_put(s, i, y, 1, VA_BOX, "-");
		vw_put(s, i, y + h - 1, 1, VA_BOX, "-");
	}
	for (int j = y; j < y + h; j++) {
		vw_put(s, x, j, 1, VA_BOX, "|");
		vw_put(s, x + w - 1, j, 1, VA_BOX, "|");
	}
	vw_putf(s, x + 2, y, w - 4, VA_BOX, " %s ", title);
}

static void draw_help(struct viewer *v, struct vw_screen *s)
{
	(void)v;
	int n = (int)(sizeof HELP / sizeof HELP[0]);
	int w = s->w - 4 < 76 ? s->w - 4 : 76, h = n + 3 < s->h - 2 ? n + 3 : s->h - 2;
	int x = (s->w - w) / 2, y = (s->h - h) / 2;
	draw_box(s, x, y, w, h, "keys (any key closes)");
	for (int i = 0; i < n && i < h - 3; i++)
		vw_put(s, x + 2, y + 1 + i, w - 4, VA_BOX, HELP[i]);
	vw_put(s, x + 2, y + h - 2, w - 4, VA_BOX, "ascent view RUN_DIR|RUN.db [--against A.db] [--rank R] [--steps A:B] [-C]");
}

static void draw_details(struct viewer *v, struct vw_screen *s)
{
	const struct db_view_event *e = &v->ev;
	char lines[40][160];
	int n = 0;
	char b[32], b2[32];
	snprintf(lines[n++], 160, "name     %s", e->name);
	snprintf(lines[n++], 160, "kind     %s        rank %d  thread %d", db_kind_name(e->e.kind), e->e.rank, e->e.tid);
	snprintf(lines[n++], 160, "start    +%s (from the run's start)   dur %s",
		 units_ns(b, sizeof b, (double)(e->astart_ns - v->tl.T0)), units_ns(b2, sizeof b2, (double)e->e.dur_ns));
	snprintf(lines[n++], 160, "step     %s   micro-batch %s   layer %s",
		 e->e.step >= 0 ? (snprintf(b, sizeof b, "%lld", (long long)e->e.step), b) : "-",
		 e->e.mb >= 0 ? (snprintf(b2, sizeof b2, "%d", e->e.mb), b2) : "-",
		 e->e.layer >= 0 ? (snprintf(b2 + 16, 16, "%d", e->e.layer), b2 + 16) : "-");
	if (e->e.kind == DB_KIND_COMM || e->e.kind == DB_KIND_P2P) {
		snprintf(lines[n++], 160, "bytes    %s   %s %d", units_bytes(b, sizeof b, (double)e->e.bytes),
			 e->e.kind == DB_KIND_P2P ? "peer" : "root", e->e.peer);
		snprintf(lines[n++], 160, "comm     %s (id %d)   seq %lld", *e->comm_name ? e->comm_name : "?", e->e.comm_id,
			 (long long)e->e.seq);
	}
	if (e->e.flops > 0)
		snprintf(lines[n++], 160, "flops    %.3g   %.1f GFLOP/s", (double)e->e.flops,
			 e->e.dur_ns ? (double)e->e.flops / (double)e->e.dur_ns : 0);
	if (*e->site)
		snprintf(lines[n++], 160, "site     %s", e->site);
	if (v->ev_link_dir) {
		int64_t d = v->ev_link_dir > 0 ? v->ev_link_ns - e->e.start_ns : e->e.start_ns - v->ev_link_ns;
		snprintf(lines[n++], 160, "link     %s lane %d, queue delay %s   (g: go there)",
			 v->ev_link_dir > 0 ? "launched a kernel on" : "launched from", v->ev_link_tid,
			 units_ns(b, sizeof b, (double)d));
	}
	if (v->ev_args) {   /* the imported arguments, wrapped */
		size_t len = strlen(v->ev_args);
		for (size_t off = 0; off < len && n < 30; off += 76)
			snprintf(lines[n++], 160, "%s %.76s", off ? "        " : "args    ", v->ev_args + off);
	}
	if (e->nframes) {
		snprintf(lines[n++], 160, "stack (innermost first):");
		for (int i = 0; i < e->nframes && n < 40; i++)
			snprintf(lines[n++], 160, "  %s", e->frames[i]);
	} else if (!v->ev_args) {
		snprintf(lines[n++], 160, "stack    (not recorded: profile with stacks on)");
	}
	int w = s->w - 4 < 90 ? s->w - 4 : 90, h = n + 2 < s->h - 2 ? n + 2 : s->h - 2;
	int x = (s->w - w) / 2, y = (s->h - h) / 2;
	draw_box(s, x, y, w, h, "event (any key closes)");
	for (int i = 0; i < n && i < h - 2; i++)
		vw_put(s, x + 2, y + 1 + i, w - 4, VA_BOX, lines[i]);
}

static void keybar(struct viewer *v, struct vw_screen *s)
{
	static const char *const TAB_KEYS[][2] = {
		{ "?", "help" }, { "q", "quit" }, { "1-8", "views" }, { "/", "filter" }, { "<>", "sort" },
		{ "r", "reverse" }, { ":", "goto" }, { "Enter", "drill" }, { "Bksp", "back" }, { "R", "rank" }, { "S", "steps" }, { NULL, NULL } };
	static const char *const TL_KEYS[][2] = {
		{ "?", "help" }, { "q", "quit" }, { "w/s", "zoom" }, { "a/d", "pan" }, { "Up/Dn", "lane" },
		{ "Ent", "event" }, { "/", "find" }, { "n/N", "next" }, { "0", "all" }, { "Bksp", "back" }, { NULL, NULL } };
	static const char *const RANK_KEYS[][2] = {
		{ "?", "help" }, { "q", "quit" }, { "1-8", "views" }, { "/", "filter" }, { "<>", "sort" },
		{ "r", "reverse" }, { ":", "goto" }, { "Enter", "drill" }, { "m", "heat map" }, { "Bksp", "back" }, { "R", "rank" },
		{ "S", "steps" }, { NULL, NULL } };
	const char *const(*k)[2] = v->view == VW_TIMELINE ? TL_KEYS : v->view == VW_RANKS ? RANK_KEYS : TAB_KEYS;
	int y = s->h - 1, x = 0;
	vw_fill(s, 0, y, s->w, 1, ' ', VA_KEYBAR);
	for (int i = 0; k[i][0]; i++) {
		int need = (int)(strlen(k[i][0]) + strlen(k[i][1]) + 2);
		if (x + need > s->w)
			break;
		x += vw_put(s, x, y, -1, VA_KEY, k[i][0]);
		x += 1;
		x += vw_put(s, x, y, -1, VA_KEYBAR, k[i][1]);
		x += 1;
	}
}

int viewer_render(struct viewer *v, struct vw_screen *s)
{
	vw_screen_clear(s);
	v->last_h = s->h;
	v->last_w = s->w;
	int rc = ensure_loaded(v);
	if (rc)
		vw_set_status(v, 1, "%s", ascent_errmsg());
	/* title: file, restriction, breadcrumb */
	char crumb[256], rest[96];
	viewer_breadcrumb(v, crumb, sizeof crumb);
	char rk[24];
	snprintf(rk, sizeof rk, v->f.rank >= 0 ? "%d" : "all", v->f.rank);
	if (v->f.step_lo >= 0)
		snprintf(rest, sizeof rest, "rank %s  steps %lld:%lld", rk, (long long)v->f.step_lo, (long long)v->f.step_hi);
	else
		snprintf(rest, sizeof rest, "rank %s  steps all", rk);
	vw_fill(s, 0, 0, s->w, 1, ' ', VA_TITLE);
	if (v->live) {
		char banner[512];
		vw_live_banner(v, banner, sizeof banner);
		vw_putf(s, 0, 0, s->w, VA_TITLE, "ascent view  %s  [%s]  %s  %s", v->o.path, rest, crumb, banner);
	} else {
		vw_putf(s, 0, 0, s->w, VA_TITLE, "ascent view  %s%s%s  [%s]  %s", v->o.path, v->adb ? "  against " : "",
			v->adb ? v->apath : "", rest, crumb);
	}
	/* tabs; with the diff's tab and too little room, the others by their key only but the current */
	int x = 0, need = v->adb ? 8 : 0;
	for (int i = 0; i < VW_NVIEWS; i++)
		need += (int)strlen(VIEW_NAMES[i]) + 4;
	for (int i = 0; i < VW_NVIEWS; i++) {
		char tab[24];
		int cur = v->view == i || (v->view == VW_INSTANCES && v->ncrumbs && v->crumbs[0].view == i);
		if (v->adb && need > s->w && !cur)
			snprintf(tab, sizeof tab, " %d ", i + 1);
		else
			snprintf(tab, sizeof tab, " %d %s ", i + 1, VIEW_NAMES[i]);
		x += vw_put(s, x, 1, -1, cur ? VA_TAB_ON : VA_TAB, tab);
	}
	if (v->adb)
		vw_put(s, x, 1, -1, v->view == VW_DIFF || v->view == VW_DIFFROW ? VA_TAB_ON : VA_TAB, " D diff ");
	/* the view */
	int y0 = 2, h = s->h - 4;
	if (h > 0)
		vw_draw_view(v, s, y0, h);
	/* status line */
	int ys = s->h - 2;
	if (ys > 1) {
		vw_fill(s, 0, ys, s->w, 1, ' ', VA_STATUS);
		if (v->editing == VW_EDIT_FILTER)
			vw_putf(s, 0, ys, -1, VA_STATUS, "/%s_   (Enter keeps, Esc clears)", v->filter);
		else if (v->editing == VW_EDIT_STEPS)
			vw_putf(s, 0, ys, -1, VA_STATUS, "steps A:B: %s_   (Enter applies, empty = all, Esc cancels)", v->prompt);
		else if (v->editing == VW_EDIT_JUMP)
			vw_putf(s, 0, ys, -1, VA_STATUS, "go to %s: %s_   (Enter goes, Esc cancels)",
				v->view == VW_RANKS ? "rank" : "step", v->prompt);
		else if (*v->status)
			vw_put(s, 0, ys, -1, v->status_err ? VA_WARN : VA_STATUS, v->status);
		else if (*v->filter)
			vw_putf(s, 0, ys, -1, VA_STATUS, "filter '%s' (n/N next/previous, Esc clears)", v->filter);
		if (is_table(v->view) && !v->editing && v->tab[v->view].norder) {
			char pos[48];
			snprintf(pos, sizeof pos, " %d/%d ", v->nav[v->view].sel + 1, v->tab[v->view].norder);
			vw_put(s, s->w - (int)strlen(pos), ys, -1, VA_STATUS, pos);
		}
	}
	keybar(v, s);
	if (v->help)
		draw_help(v, s);
	else if (v->details)
		draw_details(v, s);
	/* the status message shows once */
	if (!v->editing)
		v->status[0] = 0;
	return 0;
}
