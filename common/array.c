/* common/array.c — growable arrays: the one home of "double the capacity when full" (ARRAY_GROW). */
#include "common/common.h"

#include <stdlib.h>
#include <string.h>

int array_grow_(void *arrayp, int n, int *cap, int first, size_t elem, const char *what)
{
	if (n < *cap)
		return 0;
	int64_t nc = *cap > 0 ? (int64_t)*cap * 2 : first;
	if (nc <= n || nc > INT32_MAX || (uint64_t)nc > SIZE_MAX / elem)
		return ascent_error(ASCENT_ENOMEM, "out of memory %s", what);
	void *v;
	memcpy(&v, arrayp, sizeof v);   /* the caller's T * (any object pointer converts to void *) */
	void *v2 = realloc(v, (size_t)nc * elem);
	if (!v2)
		return ascent_error(ASCENT_ENOMEM, "out of memory %s", what);
	memset((char *)v2 + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
	memcpy(arrayp, &v2, sizeof v2);
	*cap = (int)nc;
	return 0;
}
