/* common/units.c — numbers with units for people: durations and sizes as every tool prints them
 * (report's tables, the viewer, diag's messages), so the same quantity reads the same everywhere;
 * names shortened for a cell, and trace text made safe to print on a terminal. */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *units_ns(char *buf, size_t n, double ns)
{
	if (ns < 0)
		snprintf(buf, n, "-");
	else if (ns < 1e3)
		snprintf(buf, n, "%.0f ns", ns);
	else if (ns < 1e6)
		snprintf(buf, n, "%.2f us", ns / 1e3);
	else if (ns < 1e9)
		snprintf(buf, n, "%.2f ms", ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", ns / 1e9);
	return buf;
}

char *units_bytes(char *buf, size_t n, double b)
{
	if (b < 0)
		snprintf(buf, n, "-");
	else if (b < 1e3)
		snprintf(buf, n, "%.0f B", b);
	else if (b < 1e6)
		snprintf(buf, n, "%.1f KB", b / 1e3);
	else if (b < 1e9)
		snprintf(buf, n, "%.1f MB", b / 1e6);
	else
		snprintf(buf, n, "%.2f GB", b / 1e9);
	return buf;
}

char *units_bytes_bin(char *buf, size_t n, int64_t b)
{
	if (b >= (1LL << 30))
		snprintf(buf, n, "%.2f GiB", (double)b / (1LL << 30));
	else
		snprintf(buf, n, "%.1f MiB", (double)b / (1LL << 20));
	return buf;
}

/* The index just past the bracket that closes the one at s[i] ('<' or '('), counting both kinds
 * of nesting; 0 when it is not closed. */
static size_t close_of(const char *s, size_t i)
{
	int depth = 0;
	for (size_t k = i; s[k]; k++) {
		if (s[k] == '<' || s[k] == '(')
			depth++;
		else if ((s[k] == '>' || s[k] == ')') && --depth == 0)
			return k + 1;
	}
	return 0;
}

/* C++ template arguments and parameter lists elided ("f<...>(...)"), as profilers' short names
 * show kernels; "operator<", "(anonymous namespace)", "<unnamed>" and an empty "()" are kept. */
static void elide_cxx(char *out, size_t n, const char *s)
{
	size_t o = 0;
	for (size_t i = 0; s[i] && o + 1 < n;) {
		size_t end = 0;
		int anon = !strncmp(s + i, "(anonymous namespace)", 21) || !strncmp(s + i, "<unnamed>", 9);
		int op = i >= 8 && !strncmp(s + i - 8, "operator", 8);
		if ((s[i] == '<' || (s[i] == '(' && s[i + 1] != ')')) && !anon && !op)
			end = close_of(s, i);
		if (end && o + 6 < n) {
			memcpy(out + o, s[i] == '<' ? "<...>" : "(...)", 5);
			o += 5;
			i = end;
		} else {
			out[o++] = s[i++];
		}
	}
	out[o] = 0;
}

char *units_name(char *buf, size_t n, const char *name, int width)
{
	if (!n)
		return buf;
	size_t len = strlen(name);
	char *e = width > 0 && len > (size_t)width ? malloc(len + 1) : NULL;
	if (!e) {   /* fits (or no memory for the shorter form: the name cut below) */
		snprintf(buf, n, "%s", name);
	} else {
		elide_cxx(e, len + 1, name);
		name = e;
	}
	len = strlen(name);
	if (width > 0 && len > (size_t)width && (size_t)width < n) {
		if (width >= 8) {
			/* still too long: the head and the tail, so names that differ only at the end
			 * ("matmul_fcproj" / "matmul_fcproj_bwd") stay apart */
			int tail = (width - 1) / 2, head = width - 1 - tail;
			snprintf(buf, n, "%.*s~%s", head, name, name + len - (size_t)tail);
		} else {
			snprintf(buf, n, "%.*s", width, name);
		}
	} else if (e) {
		snprintf(buf, n, "%s", e);
	}
	free(e);
	return buf;
}

char *units_printable(const char *s)
{
	if (!s)
		s = "";
	size_t n = 1;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += *p < 0x20 || *p == 0x7f ? 4 : 1;
	char *out = malloc(n), *o = out;
	if (!out)
		return NULL;
	static const char SHORT[] = { [7] = 'a', [8] = 'b', [9] = 't', [10] = 'n', [11] = 'v', [12] = 'f',
				      [13] = 'r', [27] = 'e' };
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x20 && *p != 0x7f)
			*o++ = (char)*p;
		else if (*p < sizeof SHORT && SHORT[*p])
			o += sprintf(o, "\\%c", SHORT[*p]);
		else
			o += sprintf(o, "\\x%02x", *p);
	}
	*o = 0;
	return out;
}
