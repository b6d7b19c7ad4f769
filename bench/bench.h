/* bench/bench.h — what the bench programs share.
 *
 * bench_wanted(ENV, name): whether part `name` of a bench is to run. ENV names an environment
 * variable holding a comma-separated list of parts (BENCH_COMM_ONLY=sweep,small); unset or empty
 * runs every part. A name matches a whole list item only ("dp" does not match "dp2"). */
#ifndef ASCENT_BENCH_H
#define ASCENT_BENCH_H

#include <stdlib.h>
#include <string.h>

static inline int bench_wanted(const char *env, const char *name)
{
	const char *only = getenv(env);
	if (!only || !*only)
		return 1;
	size_t n = strlen(name);
	for (const char *p = only; (p = strstr(p, name)) != NULL; p += n)
		if ((p == only || p[-1] == ',') && (p[n] == 0 || p[n] == ','))
			return 1;
	return 0;
}

#endif
