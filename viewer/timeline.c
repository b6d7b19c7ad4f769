/* viewer/timeline.c — the timeline view: one lane per (rank, thread), events drawn to scale by
 * class (compute '#', communication '=', data '~', other ranges '-', idle blank), names written
 * into wide events, step markers on the ruler, a centre cursor; zoom (w/s, +/-), pan (a/d, arrows),
 * lane selection (up/down), details of the event under the cursor (Enter), next/previous event
 * matching the filter (n/N). Every lane is one paged query on (rank, start_ns) or, zoomed out, on
 * the cached bins (db_view_lane_bins). */
#include "viewer/internal.h"

#include <stdlib.h>
#include <string.h>

#define TL_LABEL 12
#define TL_MAX_EXACT 20000   /* events per lane read directly; more → cached bins */

int vw_tl_load(struct viewer *v)
{
	struct tl_state *t = &v->tl;
	db_view_lanes_free(t->lanes, t->nlanes);
	t->lanes = NULL;
	t->nlanes = 0;
	int rc = db_view_lanes(v->db, v->f.rank, &t->lanes, &t->nlanes);
	if (rc)
		return rc;
	int64_t T0 = v->run.t0_ns, T1 = v->run.t1_ns > v->run.t0_ns ? v->run.t1_ns : v->run.t0_ns + 1;
	int reset = !t->loaded || t->T0 != T0 || t->T1 != T1;
	t->T0 = T0;
	t->T1 = T1;
	if (reset) {
		t->t0 = T0;
		t->t1 = T1;
		/* a step restriction opens the window on those steps (of the first lane's rank) */
		if (v->f.step_lo >= 0 && t->nlanes) {
			int64_t st[4096], sn[4096];
			int n = 0;
			if (db_view_step_marks(v->db, t->lanes[0].rank, t->lanes[0].shift_ns, T0, i64_add_sat(T1, 1), 4096, st, sn, &n) == 0) {
				int64_t a = -1, e = -1;
				for (int i = 0; i < n; i++) {
					if (sn[i] == v->f.step_lo)
						a = st[i];
					if (sn[i] == v->f.step_hi + 1)
						e = st[i];
				}
				if (a >= 0) {
					t->t0 = a;
					t->t1 = e > a ? e : T1;
				}
			}
		}
	}
	if (t->lane >= t->nlanes)
		t->lane = t->nlanes ? t->nlanes - 1 : 0;
	t->loaded = 1;
	return 0;
}

static void clamp_window(struct tl_state *t)
{
	/* window arithmetic saturates: a damaged profile's times may lie near the int64 limits */
	int64_t w = i64_sub_sat(t->t1, t->t0), full = i64_sub_sat(t->T1, t->T0);
	if (w < 1000)
		w = 1000;   /* 1 us: the finest zoom */
	if (w > full)
		w = full;
	if (t->t0 < t->T0)
		t->t0 = t->T0;
	t->t1 = i64_add_sat(t->t0, w);
	if (t->t1 > t->T1) {
		t->t1 = t->T1;
		t->t0 = i64_sub_sat(t->t1, w);
	}
}

void vw_tl_goto(struct viewer *v, int rank, int tid, int64_t astart, int64_t dur)
{
	struct tl_state *t = &v->tl;
	for (int i = 0; i < t->nlanes; i++)
		if (t->lanes[i].rank == rank && t->lanes[i].tid == tid)
			t->lane = i;
	int64_t w = dur > INT64_MAX / 8 ? INT64_MAX : dur * 8;
	if (w < 10000)
		w = 10000;
	t->t0 = i64_sub_sat(i64_add_sat(astart, dur / 2), w / 2);
	t->t1 = i64_add_sat(t->t0, w);
	clamp_window(t);
	/* keep the event under the centre cursor even when the window hits an edge */
}

/* From the event in the details to the other end of its launch link (key g). */
void vw_tl_follow_link(struct viewer *v)
{
	struct tl_state *t = &v->tl;
	int64_t shift = 0;
	for (int i = 0; i < t->nlanes; i++)
		if (t->lanes[i].rank == v->ev.e.rank)
			shift = t->lanes[i].shift_ns;
	vw_tl_goto(v, v->ev.e.rank, v->ev_link_tid, v->ev_link_ns + shift, 0);
	vw_set_status(v, 0, "%s: queue delay %.3f us (kernel start - launch start)",
		      v->ev_link_dir > 0 ? "the kernel this launched" : "the launch of this kernel",
		      (double)(v->ev_link_dir > 0 ? v->ev_link_ns - v->ev.e.start_ns : v->ev.e.start_ns - v->ev_link_ns) / 1e3);
}

static int64_t centre(const struct tl_state *t)
{
	return i64_add_sat(t->t0, i64_sub_sat(t->t1, t->t0) / 2);
}

/* name ids matching the filter (case-insensitive substring), for n/N */
static int match_ids(struct viewer *v, int64_t **ids, int *n)
{
	*ids = NULL;
	*n = 0;
	struct db_view_op *o;
	int no;
	int rc = db_view_ops(v->db, DB_FILTER_ALL, ~(1u << DB_KIND_STEP), &o, &no);
	if (rc)
		return rc;
	*ids = malloc((size_t)(no ? no : 1) * sizeof **ids);
	if (!*ids) {
		db_view_ops_free(o, no);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < no; i++)
		if (strcasestr(o[i].name, v->filter)) {
			int dup = 0;
			for (int k = 0; k < *n; k++)
				dup |= (*ids)[k] == o[i].name_id;
			if (!dup)
				(*ids)[(*n)++] = o[i].name_id;
		}
	db_view_ops_free(o, no);
	return 0;
}

int vw_tl_key(struct viewer *v, int key)
{
	struct tl_state *t = &v->tl;
	int64_t w = i64_sub_sat(t->t1, t->t0), c = centre(t);
	switch (key) {
	case 'w': case '+': case '=':
		w /= 2;
		t->t0 = i64_sub_sat(c, w / 2);
		t->t1 = i64_add_sat(t->t0, w);
		break;
	case 's': case '-':
		w = i64_add_sat(w, w);
		t->t0 = i64_sub_sat(c, w / 2);
		t->t1 = i64_add_sat(t->t0, w);
		break;
	case 'a':
		t->t0 = i64_sub_sat(t->t0, w / 4);
		t->t1 = i64_sub_sat(t->t1, w / 4);
		break;
	case 'd':
		t->t0 = i64_add_sat(t->t0, w / 4);
		t->t1 = i64_add_sat(t->t1, w / 4);
		break;
	case VK_LEFT:
		t->t0 = i64_sub_sat(t->t0, w / 10);
		t->t1 = i64_sub_sat(t->t1, w / 10);
		break;
	case VK_RIGHT:
		t->t0 = i64_add_sat(t->t0, w / 10);
		t->t1 = i64_add_sat(t->t1, w / 10);
		break;
	case '0': case VK_HOME:
		t->t0 = t->T0;
		t->t1 = t->T1;
		break;
	case VK_UP: case 'k':
		if (t->lane > 0)
			t->lane--;
		return 1;
	case VK_DOWN: case 'j':
		if (t->lane + 1 < t->nlanes)
			t->lane++;
		return 1;
	case VK_PGUP:
		t->lane = t->lane > 10 ? t->lane - 10 : 0;
		return 1;
	case VK_PGDN:
		t->lane = t->lane + 10 < t->nlanes ? t->lane + 10 : (t->nlanes ? t->nlanes - 1 : 0);
		return 1;
	case VK_ENTER: {
		if (!t->nlanes)
			return 1;
		db_view_event_free(&v->ev);
		int rc = db_view_event_at(v->db, &t->lanes[t->lane], c, &v->ev);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			vw_set_status(v, 0, "no event under the cursor on this lane (move with a/d, zoom with w/s)");
			return 1;
		}
		v->details = 1;
		free(v->ev_args);
		v->ev_args = NULL;
		v->ev_link_dir = 0;
		if ((rc = db_event_args(v->db, &v->ev.e, &v->ev_args)) != 0 ||
		    (rc = db_event_link(v->db, &v->ev.e, &v->ev_link_tid, &v->ev_link_ns, &v->ev_link_dir)) != 0)
			return rc;
		return 1;
	}
	case 'n': case 'N': {
		if (!*v->filter) {
			vw_set_status(v, 0, "type / and a name first; n and N then jump to its next and previous event");
			return 1;
		}
		if (!t->nlanes)
			return 1;
		int64_t *ids;
		int nids;
		int rc = match_ids(v, &ids, &nids);
		if (rc)
			return rc;
		struct db_view_event e;
		rc = nids ? db_view_event_next(v->db, &t->lanes[t->lane], c, key == 'n' ? 1 : -1, ids, nids, &e) : 0;
		free(ids);
		if (rc < 0)
			return rc;
		if (rc == 0) {
			vw_set_status(v, 0, "no %s event matching '%s' on this lane", key == 'n' ? "later" : "earlier", v->filter);
			return 1;
		}
		t->t0 = e.astart_ns + e.e.dur_ns / 2 - w / 2;
		t->t1 = t->t0 + w;
		if (e.e.dur_ns * 2 > w) {   /* zoom out so it fits */
			vw_tl_goto(v, t->lanes[t->lane].rank, t->lanes[t->lane].tid, e.astart_ns, e.e.dur_ns);
		}
		vw_set_status(v, 0, "%s at +%.6f s", e.name, (double)(e.astart_ns - t->T0) / 1e9);
		db_view_event_free(&e);
		break;
	}
	default:
		return 0;
	}
	clamp_window(t);
	return 1;
}

static char class_char(int cls)
{
	static const char C[] = "#=~-";
	return cls >= 0 && cls < 4 ? C[cls] : ' ';
}

static int class_attr(int cls)
{
	static const int A[] = { VA_COMPUTE, VA_COMM, VA_DATA, VA_OTHER };
	return cls >= 0 && cls < 4 ? A[cls] : VA_NORMAL;
}

/* dominant class of a bin: the busiest of compute/comm/data; else other ranges; else idle (−1) */
static int dominant(const struct db_view_bin *b, int64_t binw)
{
	int best = -1;
	int64_t bv = 0;
	for (int c = 0; c < 3; c++)
		if (b->busy_ns[c] > bv) {
			bv = b->busy_ns[c];
			best = c;
		}
	if (best >= 0 && bv * 20 >= binw)   /* at least 5 % busy */
		return best;
	if (b->busy_ns[DB_VC_OTHER] * 2 >= binw)
		return DB_VC_OTHER;
	return best >= 0 && bv > 0 ? best : -1;
}

/* The columns of a lane's events on the critical path (the devices view computed it) drawn marked. */
static void mark_critical(struct viewer *v, struct vw_screen *s, const struct db_view_lane *l, int x0, int y, int w)
{
	const struct tl_state *t = &v->tl;
	if (vw_cp_rank(v, l->rank) != 0)
		return;
	for (int i = 0; i < v->ncp; i++) {
		if (v->cp[i].rank != l->rank || vw_cp_events(v, i) != 0)
			continue;
		const struct db_critpath *c = &v->cp[i];
		for (int j = 0; j < c->nev; j++) {
			const struct db_cp_event *e = &c->ev[j];
			int64_t a = i64_add_sat(e->start_ns, l->shift_ns), z = i64_add_sat(a, e->dur_ns);
			if (e->tid != l->tid || !e->on_path || z < t->t0 || a >= t->t1)
				continue;
			int xa = (int)((double)(a - t->t0) / (double)(t->t1 - t->t0) * w);
			int xz = (int)((double)(z - t->t0) / (double)(t->t1 - t->t0) * w);
			for (int x = xa < 0 ? 0 : xa; x <= xz && x < w; x++)
				vw_put(s, x0 + x, y, 1, VA_MARK, (char[2]){ s->text[y * s->w + x0 + x], 0 });
		}
	}
}

void vw_tl_draw(struct viewer *v, struct vw_screen *s, int y0, int h)
{
	struct tl_state *t = &v->tl;
	int x0 = TL_LABEL + 1, w = s->w - x0;
	if (w < 8 || h < 4)
		return;
	char b[32], b2[32];
	/* header: window and scale */
	vw_putf(s, 0, y0, -1, VA_TITLE, "window +%s .. +%s (%s wide, %s per column)",
		units_ns(b, sizeof b, (double)(t->t0 - t->T0)), units_ns(b2, sizeof b2, (double)(t->t1 - t->T0)),
		units_ns(b + 16, 16, (double)(t->t1 - t->t0)), units_ns(b2 + 16, 16, (double)(t->t1 - t->t0) / w));
	/* ruler with step markers of the selected lane's rank */
	int yr = y0 + 1;
	vw_fill(s, 0, yr, s->w, 1, ' ', VA_HEADER);
	vw_put(s, 0, yr, TL_LABEL, VA_HEADER, "steps");
	if (t->nlanes) {
		const struct db_view_lane *l = &t->lanes[t->lane];
		int64_t st[512], sn[512];
		int n = 0;
		if (db_view_step_marks(v->db, l->rank, l->shift_ns, t->t0, t->t1, 512, st, sn, &n) == 0) {
			int lastx = -100;
			for (int i = 0; i < n; i++) {
				int x = x0 + (int)((double)(st[i] - t->t0) / (double)(t->t1 - t->t0) * w);
				vw_put(s, x, yr, 1, VA_MARK, "|");
				if (x - lastx > 6) {
					char lab[24];
					snprintf(lab, sizeof lab, "%lld", (long long)sn[i]);
					vw_put(s, x + 1, yr, (int)strlen(lab), VA_MARK, lab);
					lastx = x + (int)strlen(lab);
				}
			}
		}
	}
	int cx = x0 + w / 2;
	vw_put(s, cx, yr, 1, VA_SEL, "v");
	/* lanes */
	int rows = h - 3;
	if (t->lane < t->lane_top)
		t->lane_top = t->lane;
	if (t->lane >= t->lane_top + rows)
		t->lane_top = t->lane - rows + 1;
	if (t->lane_top < 0)
		t->lane_top = 0;
	struct db_view_bin *bins = calloc((size_t)w, sizeof *bins);
	if (!bins)
		return;
	int64_t binw = (t->t1 - t->t0) / w;
	if (binw < 1)
		binw = 1;
	int approx = 0;
	for (int i = 0; i < rows && t->lane_top + i < t->nlanes; i++) {
		int li = t->lane_top + i;
		const struct db_view_lane *l = &t->lanes[li];
		int y = yr + 1 + i;
		char lab[64];
		snprintf(lab, sizeof lab, "r%d t%d %s", l->rank, l->tid, l->name);
		vw_put(s, 0, y, TL_LABEL, li == t->lane ? VA_SEL : VA_HEADER, lab);
		int exact = 0;
		if (db_view_lane_bins(v->db, l, t->t0, t->t1, w, TL_MAX_EXACT, bins, &exact) != 0)
			continue;
		approx |= !exact;
		for (int k = 0; k < w; k++) {
			int cls = dominant(&bins[k], binw);
			char ch[2] = { cls >= 0 ? class_char(cls) : ' ', 0 };
			vw_put(s, x0 + k, y, 1, cls >= 0 ? class_attr(cls) : VA_NORMAL, ch);
		}
		/* names into runs of one event wide enough to hold them */
		if (exact) {
			for (int k = 0; k < w;) {
				int e = k;
				while (e + 1 < w && bins[e + 1].name_id == bins[k].name_id && bins[e + 1].name_start == bins[k].name_start)
					e++;
				int len = e - k + 1;
				if (bins[k].name_id > 0 && bins[k].name_id < v->nnames && len >= 5) {
					int cls = db_view_class_of(bins[k].kind);
					vw_put(s, x0 + k + 1, y, len - 2, class_attr(cls), v->names[bins[k].name_id]);
				}
				k = e + 1;
			}
		}
		mark_critical(v, s, l, x0, y, w);
		if (li == t->lane)
			vw_put(s, cx, y, 1, VA_SEL, (char[2]){ s->text[y * s->w + cx], 0 });
	}
	free(bins);
	if (!t->nlanes)
		vw_put(s, 2, yr + 1, -1, VA_DIM, "(no lanes: nothing recorded for this rank)");
	/* legend */
	int yl = y0 + h - 1;
	vw_putf(s, 0, yl, -1, VA_DIM, "# compute  = comm  ~ data/io  - other range  blank idle%s%s  lanes %d-%d of %d",
		approx ? "  (zoomed out: cached bins)" : "", v->ncp ? "  marked: on the critical path (devices view)" : "", t->nlanes ? t->lane_top + 1 : 0,
		t->lane_top + rows < t->nlanes ? t->lane_top + rows : t->nlanes, t->nlanes);
}
