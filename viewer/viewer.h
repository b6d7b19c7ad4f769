/* viewer/viewer.h — the public face of `viewer`: `ascent view RUN.db`, an interactive terminal
 * viewer of a profile (overview, operators, collectives, steps, ranks, memory, timeline, devices).
 *
 * Design: the viewer state (struct viewer) turns keys into actions (viewer_key) and renders the
 * current view into a screen model (struct vw_screen: characters + one attribute per cell) with
 * viewer_render. Data come only through db/ (db.h's "queries for the viewer" section). Only
 * viewer/tui.c includes <ncurses.h>: it maps the screen model to the terminal and terminal keys
 * to VK_* codes. So everything but the drawing is testable without a terminal, and
 * `ascent view RUN.db --dump VIEW --size WxH` prints a view as plain text.
 *
 * Errors: functions returning int give 0 or a negative ASCENT_E* code with ascent_error()'s
 * message (a missing file, a foreign/corrupt/newer database, an empty run, a run still being
 * written each get their own message). Nothing here exits.
 */
#ifndef ASCENT_VIEWER_H
#define ASCENT_VIEWER_H

#include <stdint.h>
#include <stdio.h>

/* Views, in key order (1..8); names are those of --dump. */
enum vw_view {
	VW_OVERVIEW = 0, VW_OPS, VW_COMM, VW_STEPS, VW_RANKS, VW_MEMORY, VW_TIMELINE, VW_DEVICES,
	VW_NVIEWS,
	VW_INSTANCES = VW_NVIEWS,   /* drill-down: the instances of one operator or collective */
	VW_DIFF,                    /* key D, with --against A: every name of A and B, by change */
	VW_DIFFROW,                 /* drill-down: one diff row's distributions on A and on B */
	VW_NALL,
};
const char *vw_view_name(int view);          /* "overview", ..., "devices", "instances", "diff", "diff-row" */
int vw_view_by_name(const char *name);       /* the 8 views, "diff" and "diff-row"; −1 when unknown */

/* Cell attributes of the screen model; tui.c maps them to colours (or bold/reverse in mono). */
enum vw_attr {
	VA_NORMAL = 0, VA_TITLE, VA_TAB, VA_TAB_ON, VA_HEADER, VA_SEL, VA_KEYBAR, VA_KEY, VA_STATUS,
	VA_COMPUTE, VA_COMM, VA_DATA, VA_OTHER, VA_WARN, VA_GOOD, VA_DIM, VA_MARK, VA_BOX,
	VA_COUNT
};

/* A w × h grid of printable ASCII characters and attributes, row-major. */
struct vw_screen {
	int w, h;
	char *text;              /* w*h, no terminators */
	unsigned char *attr;     /* w*h, enum vw_attr */
};
int vw_screen_init(struct vw_screen *s, int w, int h);     /* storage owned by s */
void vw_screen_release(struct vw_screen *s);               /* accepts a zeroed s */
void vw_screen_clear(struct vw_screen *s);
/* Write `str` at (x, y) clipped to the screen and to at most maxw cells (maxw < 0: to the edge);
 * non-printable bytes become '?'. Returns the cells written. */
int vw_put(struct vw_screen *s, int x, int y, int maxw, int attr, const char *str);
int vw_putf(struct vw_screen *s, int x, int y, int maxw, int attr, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
void vw_fill(struct vw_screen *s, int x, int y, int w, int h, char c, int attr);
/* Row y as a NUL-terminated string without trailing blanks (buf ≥ w + 1). */
void vw_row_text(const struct vw_screen *s, int y, char *buf);
/* The whole screen as text, one line per row, trailing blanks removed. */
void vw_screen_print(const struct vw_screen *s, FILE *f);

/* Keys: printable ASCII as themselves, the rest as these codes. */
enum vw_key {
	VK_ENTER = 0x10a, VK_ESC, VK_BACKSPACE, VK_TAB, VK_BTAB, VK_UP, VK_DOWN, VK_LEFT, VK_RIGHT,
	VK_PGUP, VK_PGDN, VK_HOME, VK_END, VK_F1, VK_RESIZE, VK_CTRL_C,
};

struct viewer_options {
	const char *path;        /* the profile database (required) */
	const char *against;     /* --against A: a second profile (or run folder) to compare with: the
				  * diff view (key D) and A's step times beside path's; NULL none */
	int rank;                /* show only this rank; −1 all (default) */
	int64_t step_lo, step_hi;   /* steps A:B inclusive; step_lo −1 all */
	int view;                /* first view (enum vw_view) */
	int mono;                /* -C or NO_COLOR: no colour */
};

struct viewer;

/* Open the database through db/, check it is viewable (missing, foreign, corrupt, newer, empty,
 * still being written → ASCENT_EINPUT with a message saying what to do), build the summary
 * tables when the file does not have them yet. *built_ms (may be NULL) gets the time spent
 * building them (0 when they were cached). */
int viewer_open(const struct viewer_options *o, struct viewer **out /* OUT */, int64_t *built_ms /* OUT */);
void viewer_free(struct viewer *v);             /* accepts NULL */

/* Render the current view (with overlays, key bar and status line) into s (any size; at least
 * 20 × 6 is drawn sensibly, 80 × 24 is the design minimum). */
int viewer_render(struct viewer *v, struct vw_screen *s);
/* Apply one key. Returns 1 when the viewer should quit, 0 to go on, < 0 on an error (the message
 * is also shown on the status line, and the viewer stays usable). */
int viewer_key(struct viewer *v, int key);

/* A run watched while it runs (`ascent view RUN_DIR` before its trace.db exists): read what the
 * run wrote since the last refresh, once a second at most; when the run's trace.db appears, reopen
 * on it. Returns 1 when the screen should be drawn again, 0 when nothing was due. A profile file:
 * always 0. */
int viewer_tick(struct viewer *v);

/* Read-only facts for tests and the TUI. */
int viewer_current_view(const struct viewer *v);
int viewer_selected_row(const struct viewer *v);       /* in the current table, −1 none */
const char *viewer_selected_name(const struct viewer *v);  /* name in the selected row, or "" */
int viewer_table_rows(const struct viewer *v);         /* rows shown after the filter */
const char *viewer_breadcrumb(const struct viewer *v, char *buf, size_t n);
/* Timeline window (aligned ns) and selected lane (rank, tid). */
void viewer_timeline_window(const struct viewer *v, int64_t *t0, int64_t *t1, int *rank, int *tid);

/* The command: --dump prints the view as text (size w × h) to f; otherwise runs the TUI. */
struct viewer_run_options {
	struct viewer_options o;
	const char *dump;        /* view name, or NULL for the TUI */
	int width, height;       /* --size, default 120 × 40 */
};
int viewer_run(const struct viewer_run_options *ro);
/* diff-row: the distributions of the diff's selected row (the first: the largest change). */
int viewer_dump(struct viewer *v, int view, int w, int h, FILE *f);

/* tui.c: the interactive loop on the terminal (the one file with <ncurses.h>). */
int viewer_tui(struct viewer *v, int mono);

#endif
