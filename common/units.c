/* common/units.c — numbers with units for people: durations and sizes as every tool prints them
 * (report's tables, the viewer, diag's messages), so the same quantity reads the same everywhere. */
#include "common/common.h"

#include <stdio.h>

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
