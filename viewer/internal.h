/* viewer/internal.h — private to viewer/: struct viewer, the table model shared by the table
 * views, formatting helpers. Nothing outside viewer/ includes this. */
#ifndef ASCENT_VIEWER_INTERNAL_H
#define ASCENT_VIEWER_INTERNAL_H

#include "common/common.h"
#include "db/db.h"
#include "viewer/viewer.h"

#define VW_MAXCOLS 16
#define VW_FILTER_MAX 64

enum vw_align { AL_LEFT = 0, AL_RIGHT = 1 };

struct vw_col {
	const char *title;
	int width;               /* preferred width (the name column takes what is left) */
	int align;
	int prio;                /* columns with the lowest prio are dropped first on a narrow screen */
	int flex;                /* 1: the name column */
};

struct vw_row {
	char *cell[VW_MAXCOLS];  /* owned */
	double key[VW_MAXCOLS];  /* sort keys (numbers); the name column sorts by text */
	int attr;                /* VA_NORMAL or VA_WARN (highlight) */
	int64_t id;              /* name_id, rank, step, ... */
	int kind;
	int64_t aux;             /* extra (tid, start) */
};

struct vw_table {
	int ncols;
	struct vw_col col[VW_MAXCOLS];
	int nrows;
	struct vw_row *rows;
	int *order;              /* rows shown (filtered, sorted) */
	int norder;
	int name_col;            /* column the filter matches and that sorts by text */
	int name_numeric;        /* the name column sorts by its key, ascending (step numbers) */
};

/* Per-view navigation state (kept while switching views). */
struct vw_nav {
	int sort_col, reverse, sel, top;
	int loaded;              /* table built for the current rank/step filter */
};

/* A breadcrumb entry. */
struct vw_crumb {
	int view;
	char label[80];
};

struct tl_state {
	int64_t T0, T1;          /* whole span */
	int64_t t0, t1;          /* window */
	int lane, lane_top;      /* selected lane, first lane shown */
	struct db_view_lane *lanes;
	int nlanes;
	int loaded;
};

/* Text input in progress: none, the table filter (/), the steps prompt (S), or the number to jump
 * to (:) in a table of ranks or steps. */
enum vw_edit { VW_EDIT_NONE = 0, VW_EDIT_FILTER, VW_EDIT_STEPS, VW_EDIT_JUMP };

struct viewer {
	struct db *db;
	struct viewer_options o;
	struct db_filter f;      /* rank and steps restriction */
	int view;
	struct vw_nav nav[VW_NALL];
	struct vw_table tab[VW_NALL];
	struct vw_table commtab;          /* collectives view: per communicator */
	int self_mode;                    /* ops: self instead of total */
	/* instances (drill-down) */
	int inst_kind;
	int64_t inst_name_id;
	char inst_name[128];
	int64_t inst_total;
	/* navigation */
	struct vw_crumb crumbs[16];
	int ncrumbs;
	/* filter and prompts */
	char filter[VW_FILTER_MAX];
	enum vw_edit editing;             /* what the keys type into */
	char prompt[VW_FILTER_MAX];
	/* overlays */
	int help;
	int details;
	struct db_view_event ev;          /* details shown */
	char *ev_args;                    /* its arguments (imported traces), JSON text or NULL */
	int ev_link_dir;                  /* its launch link: 1 it launched, −1 it was launched, 0 none */
	int ev_link_tid;                  /* the other end: lane and stored start */
	int64_t ev_link_ns;
	char status[256];
	int status_err;
	struct tl_state tl;
	struct db_view_run run;
	char **names;                     /* string table (db_strings), for timeline labels */
	int64_t nnames;
	int nranks_all;
	int *rank_list;
	int nrank_list;
	struct db_view_step *steps;       /* steps view: rows of the last load (sparklines) */
	int nsteps;
	struct db_device_stat *dev;       /* devices view: the devices of the last load */
	int ndev;
	struct db_critpath *cp;           /* devices view: each rank's critical path (its events marked on the timeline) */
	int ncp;
	int *cp_ranks;                    /* a step restriction of all ranks: the ranks whose path is computed when */
	unsigned char *cp_tried;          /* needed (vw_cp_rank), in db_critpath's order; which are done */
	int ncp_ranks, cp_next;           /* cp_ranks[0..cp_next) all tried */
	int *mranks, mn;                  /* ranks view: the traffic matrix of the last load */
	int heat_width;                   /* ranks view: characters in the heat strips of the last load (0: none) */
	int64_t *mbytes, *mcount;
	int heat_mode;                    /* ranks view: 0 the rank table, VW_HEAT_HOSTS / VW_HEAT_RANKS the matrix as a heat map ('m') */
	int heat_top;                     /* its first row shown */
	struct db_view_heat heat;         /* its cells (db_view_heat: the whole job), loaded with the mode */
	int last_h, last_w;               /* size of the last render (page keys) */
	struct vw_live *live;             /* a run watched while it runs (live.c); NULL: a profile file */
	/* --against A (diffview.c): A's profile, the diff of A and this profile under the same filter
	 * (db_diff, as `ascent diff A B` computes it), the distributions of the row drilled into, and A's
	 * steps for the steps view */
	struct db *adb;
	char apath[4200];
	struct db_diff diff;
	struct db_diff_dist dist;
	int dist_row;                     /* index into diff.rows, −1 none */
	struct db_view_step *asteps;
	int nasteps;
	char path_buf[4200];              /* o.path when the viewer chose it (RUN_DIR, RUN_DIR/trace.db) */
};

/* format helpers: into buf (≥ 16 bytes); return buf */
char *vw_fmt_count(char *buf, size_t n, int64_t c);
/* "%.1f" or "-" for a negative */

/* tables (table.c) */
void vw_table_reset(struct vw_table *t);                 /* free rows, keep nothing */
struct vw_row *vw_table_add(struct vw_table *t);         /* NULL on out of memory */
int vw_row_set(struct vw_row *r, int col, double key, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Recompute t->order from the filter and the sort. */
int vw_table_apply(struct vw_table *t, const char *filter, int sort_col, int reverse);
/* Draw the table in the rectangle; nav->sel/top are clamped. */
void vw_table_draw(struct vw_screen *s, int x, int y, int w, int h, const struct vw_table *t, struct vw_nav *nav,
		   int show_sel);

/* views (views.c): build the table of a view from the database */
int vw_load_view(struct viewer *v, int view);
/* The path's events of v->cp[i] (the devices view reads the cached summaries without them):
 * db_critpath for that rank alone, once, when the timeline marks its lanes. */
int vw_cp_events(struct viewer *v, int i);
/* Under a step restriction of all ranks the devices view computes the paths of the first ranks only
 * (as many as the screen shows); this computes the path of `rank` when it has not been yet (the
 * timeline, marking that rank's lanes). */
int vw_cp_rank(struct viewer *v, int rank);
void vw_draw_view(struct viewer *v, struct vw_screen *s, int y0, int h);

/* the diff view (diffview.c) */
int vw_diff_open(struct viewer *v, const char *path);   /* --against: open A (sets v->adb) */
int vw_diff_load(struct viewer *v);                      /* the diff table */
int vw_diff_drill(struct viewer *v);                     /* Enter: the selected row's distributions */
void vw_diff_draw(struct viewer *v, struct vw_screen *s, int y0, int h);
void vw_diff_row_draw(struct viewer *v, struct vw_screen *s, int y0, int h);
void vw_diff_free(struct viewer *v);

/* timeline (timeline.c) */
int vw_tl_load(struct viewer *v);
void vw_tl_draw(struct viewer *v, struct vw_screen *s, int y0, int h);
int vw_tl_key(struct viewer *v, int key);                   /* 1 handled */
void vw_tl_goto(struct viewer *v, int rank, int tid, int64_t astart, int64_t dur);
void vw_tl_follow_link(struct viewer *v);

/* live (live.c): a run folder read while its run writes it */
struct vw_live;
int vw_live_open(struct viewer *v, const char *dir);     /* sets v->live and reads once */
void vw_live_free(struct vw_live *L);                    /* accepts NULL */
int vw_live_refresh(struct viewer *v);
int vw_is_live(const struct viewer *v);
int vw_live_toggle_all(struct viewer *v);                /* key A: the last N steps / all steps */
void vw_live_banner(const struct viewer *v, char *buf, size_t n);
int vw_live_draw_overview(struct viewer *v, struct vw_screen *s, int y0, int h);   /* next row */
/* The views' queries: the profile file's (db_view_*), or the live reader's (db_live_*). */
int vw_q_ops(struct viewer *v, struct db_view_op **o, int *n);
int vw_q_comms(struct viewer *v, int by_comm, struct db_view_comm **c, int *n);
int vw_q_steps(struct viewer *v, struct db_view_step **s, int *n);
int vw_q_ranks(struct viewer *v, struct db_view_rank **r, int *n);

void vw_set_status(struct viewer *v, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void vw_invalidate(struct viewer *v);                    /* rank/steps changed: reload tables */

/* views.c: the ranks view's heat map of the communication matrix */
enum { VW_HEAT_OFF = 0, VW_HEAT_HOSTS, VW_HEAT_RANKS };
#define VW_HEAT_RANKS_MAX 64   /* rank × rank only for jobs of at most this many ranks */
int vw_heat_set(struct viewer *v, int mode);   /* load (or drop) the map of mode */
int vw_heat_key(struct viewer *v, int key);    /* 1 handled, 0 not a heat-map key, < 0 error */

#endif
