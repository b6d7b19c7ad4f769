/* common/units.c — numbers with units for people: durations and sizes as every tool prints them
 * (report's tables, the viewer, diag's messages), so the same quantity reads the same everywhere;
 * and trace text made safe to print on a terminal. */
#include "common/common.h"

#include <stdio.h>
#include <stdlib.h>

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
