/* db/steps.c — msprof's step decomposition from interval sets (REFERENCE §1.5): computing,
 * communication, overlapped, communication not overlapped, free, bubble, preparing. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

static int cmp_iv(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : (x[1] < y[1] ? -1 : x[1] > y[1]);
}

/* Sort [start,end) pairs clipped to [s0,s1) and merge them in place; returns the pair count. */
static int merge_union(int64_t *iv, int n, int64_t s0, int64_t s1)
{
	int m = 0;
	for (int i = 0; i < n; i++) {
		int64_t a = iv[2 * i] < s0 ? s0 : iv[2 * i], b = iv[2 * i + 1] > s1 ? s1 : iv[2 * i + 1];
		if (b > a) {
			iv[2 * m] = a;
			iv[2 * m + 1] = b;
			m++;
		}
	}
	int sorted = 1;   /* events arrive in start order: skip the sort then */
	for (int i = 1; i < m && sorted; i++)
		sorted = cmp_iv(&iv[2 * (i - 1)], &iv[2 * i]) <= 0;
	if (m > 1 && !sorted)
		qsort(iv, (size_t)m, 2 * sizeof(int64_t), cmp_iv);
	int k = 0;
	for (int i = 0; i < m; i++) {
		if (k && iv[2 * i] <= iv[2 * (k - 1) + 1]) {
			if (iv[2 * i + 1] > iv[2 * (k - 1) + 1])
				iv[2 * (k - 1) + 1] = iv[2 * i + 1];
		} else {
			iv[2 * k] = iv[2 * i];
			iv[2 * k + 1] = iv[2 * i + 1];
			k++;
		}
	}
	return k;
}

static int64_t total_len(const int64_t *iv, int n)
{
	int64_t t = 0;
	for (int i = 0; i < n; i++)
		t += iv[2 * i + 1] - iv[2 * i];
	return t;
}

static int64_t inter_len(const int64_t *a, int na, const int64_t *b, int nb)
{
	int64_t t = 0;
	int i = 0, j = 0;
	while (i < na && j < nb) {
		int64_t lo = a[2 * i] > b[2 * j] ? a[2 * i] : b[2 * j];
		int64_t hi = a[2 * i + 1] < b[2 * j + 1] ? a[2 * i + 1] : b[2 * j + 1];
		if (hi > lo)
			t += hi - lo;
		if (a[2 * i + 1] < b[2 * j + 1])
			i++;
		else
			j++;
	}
	return t;
}

void db_step_decompose(int64_t s0, int64_t s1, const int64_t *op, int nop, const int64_t *cm, int ncm,
		       const int64_t *bl, int nbl, const int64_t *rv, int nrv, struct db_step_stat *out)
{
	/* work on copies: the caller's arrays stay as given */
	size_t need = (size_t)(nop + ncm + nbl + nrv) * 2;
	int64_t *buf = malloc((need + 1) * sizeof *buf);   /* never NULL + 0 below (UB) for a step without intervals */
	out->total_ns = s1 > s0 ? s1 - s0 : 0;
	if (!buf) {
		out->free_ns = out->total_ns;
		out->preparing_ns = out->total_ns;
		return;
	}
	int64_t *a = buf, *b = buf + 2 * nop, *d = buf + 2 * (nop + ncm), *c = buf + 2 * (nop + ncm + nbl);
	if (nop)
		memcpy(a, op, (size_t)nop * 2 * sizeof *a);
	if (ncm)
		memcpy(b, cm, (size_t)ncm * 2 * sizeof *b);
	if (nbl)
		memcpy(d, bl, (size_t)nbl * 2 * sizeof *d);
	if (nrv)
		memcpy(c, rv, (size_t)nrv * 2 * sizeof *c);
	int na = merge_union(a, nop, s0, s1), nb = merge_union(b, ncm, s0, s1), nc = merge_union(c, nrv, s0, s1);
	int nd = merge_union(d, nbl, s0, s1);
	out->computing_ns = total_len(a, na);
	out->comm_ns = total_len(b, nb);
	/* exposed: time a thread was blocked on communication with no operator running */
	out->comm_not_overlapped_ns = total_len(d, nd) - inter_len(a, na, d, nd);
	if (out->comm_not_overlapped_ns > out->comm_ns)
		out->comm_not_overlapped_ns = out->comm_ns;
	out->overlapped_ns = out->comm_ns - out->comm_not_overlapped_ns;
	out->free_ns = out->total_ns - (out->computing_ns + out->comm_ns - inter_len(a, na, b, nb));
	out->bubble_ns = total_len(c, nc);
	int64_t first = s1;
	if (na && a[0] < first)
		first = a[0];
	if (nb && b[0] < first)
		first = b[0];
	out->preparing_ns = first - s0;
	free(buf);
}
