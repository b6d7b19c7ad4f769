/* common/stats.c — statistics of small samples (timings, bandwidths) that several modules take.
 * The profile database's exact quantiles over millions of durations are db/stats.c's. */
#include "common/common.h"

#include <stdlib.h>

int stats_cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

int stats_cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double stats_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, stats_cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int64_t stats_median_sorted_i64(const int64_t *v, size_t n)
{
	int64_t a = v[(n - 1) / 2], b = v[n / 2], d; /* a <= b: the middle two (one value for an odd n) */
	if (!__builtin_sub_overflow(b, a, &d))
		return a + d / 2;
	return a / 2 + b / 2; /* signs apart by more than INT64_MAX (damaged times): within 1 of the mean */
}
