/* viewer/screen.c — the screen model (a grid of ASCII characters with one attribute per cell)
 * that every view draws into; the TUI copies it to the terminal, --dump prints it. Also the
 * number formatters the views share. */
#include "viewer/internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int vw_screen_init(struct vw_screen *s, int w, int h)
{
	memset(s, 0, sizeof *s);
	if (w < 1 || h < 1 || w > 10000 || h > 10000)
		return ascent_error(ASCENT_EUSAGE, "screen size %dx%d is out of range (1..10000)", w, h);
	s->text = malloc((size_t)w * h);
	s->attr = malloc((size_t)w * h);
	if (!s->text || !s->attr) {
		vw_screen_release(s);
		return ascent_error(ASCENT_ENOMEM, "out of memory for a %dx%d screen", w, h);
	}
	s->w = w;
	s->h = h;
	vw_screen_clear(s);
	return 0;
}

void vw_screen_release(struct vw_screen *s)
{
	if (!s)
		return;
	free(s->text);
	free(s->attr);
	memset(s, 0, sizeof *s);
}

void vw_screen_clear(struct vw_screen *s)
{
	memset(s->text, ' ', (size_t)s->w * s->h);
	memset(s->attr, VA_NORMAL, (size_t)s->w * s->h);
}

int vw_put(struct vw_screen *s, int x, int y, int maxw, int attr, const char *str)
{
	if (y < 0 || y >= s->h || !str)
		return 0;
	int lim = maxw < 0 ? s->w - x : maxw;
	int n = 0;
	for (; *str && n < lim; str++, n++) {
		int cx = x + n;
		if (cx < 0)
			continue;
		if (cx >= s->w)
			break;
		unsigned char c = (unsigned char)*str;
		s->text[y * s->w + cx] = (char)(c >= 32 && c < 127 ? c : '?');
		s->attr[y * s->w + cx] = (unsigned char)attr;
	}
	return n;
}

int vw_putf(struct vw_screen *s, int x, int y, int maxw, int attr, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return vw_put(s, x, y, maxw, attr, buf);
}

void vw_fill(struct vw_screen *s, int x, int y, int w, int h, char c, int attr)
{
	for (int j = y; j < y + h; j++)
		for (int i = x; i < x + w; i++)
			if (i >= 0 && j >= 0 && i < s->w && j < s->h) {
				s->text[j * s->w + i] = c;
				s->attr[j * s->w + i] = (unsigned char)attr;
			}
}

void vw_row_text(const struct vw_screen *s, int y, char *buf)
{
	int n = 0;
	if (y >= 0 && y < s->h) {
		memcpy(buf, s->text + (size_t)y * s->w, (size_t)s->w);
		n = s->w;
		while (n > 0 && buf[n - 1] == ' ')
			n--;
	}
	buf[n] = 0;
}

void vw_screen_print(const struct vw_screen *s, FILE *f)
{
	char *buf = malloc((size_t)s->w + 1);
	if (!buf)
		return;
	for (int y = 0; y < s->h; y++) {
		vw_row_text(s, y, buf);
		fprintf(f, "%s\n", buf);
	}
	free(buf);
}

char *vw_fmt_count(char *buf, size_t n, int64_t c)
{
	if (c < 100000)
		snprintf(buf, n, "%lld", (long long)c);
	else if (c < 100000000)
		snprintf(buf, n, "%.1fk", (double)c / 1e3);
	else
		snprintf(buf, n, "%.1fM", (double)c / 1e6);
	return buf;
}
