/* viewer/tui.c — the terminal side of the viewer and the ONLY file that includes <ncurses.h>:
 * copies the screen model to the terminal (colours when the terminal has them and neither -C nor
 * NO_COLOR asked for monochrome; bold/reverse otherwise), turns terminal keys into VK_* codes,
 * relays out on resize (KEY_RESIZE), and always restores the terminal: on q, on Ctrl-C, SIGTERM
 * and SIGHUP (a flag set by the handler ends the loop, which calls endwin()). */
#include "viewer/internal.h"

#include <ncurses.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Set by the signal handler, read by the loop: the one piece of process state here (a signal
 * handler can do nothing else safely). */
static volatile sig_atomic_t tui_stop;

static void on_signal(int sig)
{
	tui_stop = sig;
}

static int map_key(int c)
{
	switch (c) {
	case '\n': case '\r': case KEY_ENTER: return VK_ENTER;
	case 27: return VK_ESC;
	case KEY_BACKSPACE: case 127: case 8: return VK_BACKSPACE;
	case '\t': return VK_TAB;
	case KEY_BTAB: return VK_BTAB;
	case KEY_UP: return VK_UP;
	case KEY_DOWN: return VK_DOWN;
	case KEY_LEFT: return VK_LEFT;
	case KEY_RIGHT: return VK_RIGHT;
	case KEY_PPAGE: return VK_PGUP;
	case KEY_NPAGE: return VK_PGDN;
	case KEY_HOME: return VK_HOME;
	case KEY_END: return VK_END;
	case KEY_F(1): return VK_F1;
	case KEY_RESIZE: return VK_RESIZE;
	case 3: return VK_CTRL_C;
	default: return c >= 32 && c < 127 ? c : -1;
	}
}

static attr_t attrs[VA_COUNT];

static void setup_attrs(int colour)
{
	static const short FG[VA_COUNT] = {
		[VA_NORMAL] = -1, [VA_TITLE] = COLOR_CYAN, [VA_TAB] = COLOR_WHITE, [VA_TAB_ON] = COLOR_BLACK,
		[VA_HEADER] = COLOR_BLACK, [VA_SEL] = COLOR_BLACK, [VA_KEYBAR] = COLOR_BLACK, [VA_KEY] = COLOR_WHITE,
		[VA_STATUS] = COLOR_YELLOW, [VA_COMPUTE] = COLOR_GREEN, [VA_COMM] = COLOR_MAGENTA, [VA_DATA] = COLOR_YELLOW,
		[VA_OTHER] = COLOR_BLUE, [VA_WARN] = COLOR_RED, [VA_GOOD] = COLOR_GREEN, [VA_DIM] = -1, [VA_MARK] = COLOR_YELLOW,
		[VA_BOX] = COLOR_WHITE,
	};
	static const short BG[VA_COUNT] = {
		[VA_NORMAL] = -1, [VA_TITLE] = -1, [VA_TAB] = -1, [VA_TAB_ON] = COLOR_CYAN, [VA_HEADER] = COLOR_GREEN,
		[VA_SEL] = COLOR_CYAN, [VA_KEYBAR] = COLOR_CYAN, [VA_KEY] = COLOR_BLACK, [VA_STATUS] = -1, [VA_COMPUTE] = -1,
		[VA_COMM] = -1, [VA_DATA] = -1, [VA_OTHER] = -1, [VA_WARN] = -1, [VA_GOOD] = -1, [VA_DIM] = -1, [VA_MARK] = -1,
		[VA_BOX] = COLOR_BLUE,
	};
	if (colour) {
		start_color();
		use_default_colors();
		for (int i = 1; i < VA_COUNT && i < COLOR_PAIRS; i++) {
			init_pair((short)i, FG[i], BG[i]);
			attrs[i] = COLOR_PAIR(i);
		}
		attrs[VA_TITLE] |= A_BOLD;
		attrs[VA_DIM] |= A_DIM;
		attrs[VA_WARN] |= A_BOLD;
		attrs[VA_KEY] |= A_BOLD;
	} else {
		memset(attrs, 0, sizeof attrs);
		attrs[VA_TITLE] = A_BOLD;
		attrs[VA_TAB_ON] = A_REVERSE;
		attrs[VA_HEADER] = A_REVERSE;
		attrs[VA_SEL] = A_REVERSE | A_BOLD;
		attrs[VA_KEYBAR] = A_REVERSE;
		attrs[VA_KEY] = A_BOLD;
		attrs[VA_WARN] = A_BOLD | A_UNDERLINE;
		attrs[VA_DIM] = A_DIM;
		attrs[VA_MARK] = A_BOLD;
		attrs[VA_BOX] = A_NORMAL;
	}
}

static void blit(const struct vw_screen *s)
{
	for (int y = 0; y < s->h; y++) {
		int x = 0;
		while (x < s->w) {
			int a = s->attr[y * s->w + x], e = x;
			while (e < s->w && s->attr[y * s->w + e] == a)
				e++;
			attrset(attrs[a]);
			mvaddnstr(y, x, s->text + y * s->w + x, e - x);
			x = e;
		}
	}
	attrset(A_NORMAL);
	refresh();
}

int viewer_tui(struct viewer *v, int mono)
{
	struct sigaction sa, old_int, old_term, old_hup;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	tui_stop = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
	sigaction(SIGHUP, &sa, &old_hup);
	if (!initscr()) {
		sigaction(SIGINT, &old_int, NULL);
		sigaction(SIGTERM, &old_term, NULL);
		sigaction(SIGHUP, &old_hup, NULL);
		return ascent_error(ASCENT_EIO, "cannot start the terminal interface (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
	}
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	timeout(200);
	setup_attrs(!mono && has_colors());
	struct vw_screen s = { 0 };
	int rc = 0, h = 0, w = 0, dirty = 1;
	while (!tui_stop) {
		int nh, nw;
		getmaxyx(stdscr, nh, nw);
		if (nh != h || nw != w || !s.text) {
			vw_screen_release(&s);
			h = nh > 1 ? nh : 1;
			w = nw > 1 ? nw : 1;
			if ((rc = vw_screen_init(&s, w, h)) != 0)
				break;
			clear();
			dirty = 1;
		}
		if (dirty) {
			viewer_render(v, &s);
			blit(&s);
			dirty = 0;
		}
		int c = getch();
		if (c == ERR) {   /* no key for 200 ms: a live run refreshes (at most once a second) */
			dirty = viewer_tick(v);
			continue;
		}
		int k = map_key(c);
		if (k < 0)
			continue;
		int r = viewer_key(v, k);
		dirty = 1;
		if (r == 1)
			break;
		/* errors stay on the status line; the viewer goes on */
	}
	vw_screen_release(&s);
	endwin();
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	return rc;
}
