/* db/runtime.c — the host's calls into the device runtime of imported traces (CUDA, HIP, Ascend's
 * ACL runtime, MTIA): which CPU ranges are runtime calls, which of them block the host, and the
 * per-name table `report --by runtime` shows and the advisor's host.blocked rule reads
 * (docs/device.md). Names are classed by the tables below, in one place. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* A runtime call by name: `prefix` then, when `upper`, an upper-case letter (cudaMalloc, cuLaunchKernel,
 * hipMemcpy, aclrtSynchronizeStream; not cudnnConvolution, a library call, or hipblasGemm); with
 * `exact`, the whole name (MTIA's generic names). */
static const struct {
	const char *prefix;
	int upper, exact;
} RUNTIME_NAMES[] = {
	{ "cuda", 1, 0 },                 /* CUDA runtime: cudaLaunchKernel, cudaMemcpyAsync, ... */
	{ "cu", 1, 0 },                   /* CUDA driver: cuLaunchKernelEx, cuMemcpyHtoD, cuCtxSynchronize */
	{ "hip", 1, 0 },                  /* HIP: hipLaunchKernel, hipMemcpyWithStream, ... */
	{ "aclrt", 1, 0 },                /* Ascend ACL runtime: aclrtSynchronizeStream, aclrtMemcpyAsync */
	{ "synchronizeStream", 0, 1 },    /* MTIA runtime */
	{ "synchronize", 0, 1 },
	{ "recordEvent", 0, 1 },
	{ "enqueueCommand ", 0, 0 },
	{ "runFunction - ", 0, 0 },
};

/* Copy calls: a runtime name starting so is a copy; without "Async" in it, a synchronous one. */
static const char *const COPY_PREFIXES[] = { "cudaMemcpy", "cuMemcpy", "hipMemcpy", "aclrtMemcpy" };

/* Synchronisation: a runtime name holding this (any case) waits for the device. Not
 * cudaStreamWaitEvent (the device waits, not the host) nor cudaEventQuery (it polls). */
#define SYNC_WORD "synchronize"

const char *db_runtime_block_name(int block)
{
	static const char *const N[] = { "", "synchronisation", "synchronous copy", "copy with pageable memory" };
	return block >= 0 && block < (int)(sizeof N / sizeof N[0]) ? N[block] : "";
}

int db_runtime_class(const char *name)
{
	int rt = 0;
	for (size_t i = 0; i < sizeof RUNTIME_NAMES / sizeof RUNTIME_NAMES[0] && !rt; i++) {
		size_t n = strlen(RUNTIME_NAMES[i].prefix);
		if (RUNTIME_NAMES[i].exact)
			rt = !strcmp(name, RUNTIME_NAMES[i].prefix);
		else
			rt = !strncmp(name, RUNTIME_NAMES[i].prefix, n) &&
			     (!RUNTIME_NAMES[i].upper || (name[n] >= 'A' && name[n] <= 'Z'));
	}
	if (!rt)
		return -1;
	if (strcasestr(name, SYNC_WORD))
		return DB_RT_SYNC;
	for (size_t i = 0; i < sizeof COPY_PREFIXES / sizeof COPY_PREFIXES[0]; i++)
		if (!strncmp(name, COPY_PREFIXES[i], strlen(COPY_PREFIXES[i])) && !strstr(name, "Async"))
			return DB_RT_SYNC_COPY;
	return DB_RT_NONBLOCKING;
}

/* One launch link's start: (rank, tid, time), and whether a copy it reaches touches pageable memory. */
struct rt_src {
	int rank, tid;
	int64_t ns;
	int pageable;
};

static int cmp_src(const void *a, const void *b)
{
	const struct rt_src *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* One runtime call found. */
struct rt_call {
	int64_t name_id;
	int block, launches, rank;
	int64_t start, dur;
};

static int cmp_call(const void *a, const void *b)
{
	const struct rt_call *x = a, *y = b;
	if (x->name_id != y->name_id)
		return x->name_id < y->name_id ? -1 : 1;
	if (x->block != y->block)
		return x->block < y->block ? -1 : 1;
	return x->dur < y->dur ? -1 : x->dur > y->dur;
}

struct rt_scan {
	signed char *cls;              /* by name id: db_runtime_class, −1 not a runtime name */
	int64_t nnames;
	struct rt_src *src;
	int nsrc, capsrc;
	struct db_device_lane *lanes;
	int nlanes;
	struct rt_call *calls;
	int ncalls, capcalls;
	int rank, tid;                 /* the last row's key: of several ranges starting where a link */
	int64_t ns;                    /* starts, the shortest (first) is the call */
	int have_last;
};

static int src_row(void *ud, sqlite3_stmt *s)
{
	struct rt_scan *x = ud;
	int rc = ARRAY_GROW(x->src, x->nsrc, x->capsrc, 256, "reading launch links");
	if (rc)
		return rc;
	x->src[x->nsrc++] = (struct rt_src){ .rank = sqlite3_column_int(s, 0), .tid = sqlite3_column_int(s, 1),
					     .ns = sqlite3_column_int64(s, 2), .pageable = sqlite3_column_int(s, 3) };
	return 0;
}

static const struct rt_src *src_find(const struct rt_scan *x, int rank, int tid, int64_t ns)
{
	struct rt_src k = { .rank = rank, .tid = tid, .ns = ns };
	return x->nsrc ? bsearch(&k, x->src, (size_t)x->nsrc, sizeof k, cmp_src) : NULL;
}

static int call_row(void *ud, sqlite3_stmt *s)
{
	struct rt_scan *x = ud;
	int rank = sqlite3_column_int(s, 0), tid = sqlite3_column_int(s, 1);
	int64_t ns = sqlite3_column_int64(s, 2), id = sqlite3_column_int64(s, 4);
	int first = !x->have_last || x->rank != rank || x->tid != tid || x->ns != ns;
	x->have_last = 1;
	x->rank = rank;
	x->tid = tid;
	x->ns = ns;
	if (db_device_lane_find(x->lanes, x->nlanes, rank, tid) >= 0)
		return 0;   /* device lanes: GPU user annotations, not host calls */
	int cls = id > 0 && id < x->nnames ? x->cls[id] : -1;
	const struct rt_src *l = src_find(x, rank, tid, ns);
	if (cls < 0 && !(l && first))
		return 0;   /* neither a runtime name nor the innermost range a launch link starts from */
	if (cls < 0)
		cls = DB_RT_NONBLOCKING;
	if (cls == DB_RT_NONBLOCKING && l && l->pageable)
		cls = DB_RT_PAGEABLE_COPY;
	int rc = ARRAY_GROW(x->calls, x->ncalls, x->capcalls, 256, "reading runtime calls");
	if (rc)
		return rc;
	x->calls[x->ncalls++] = (struct rt_call){ .name_id = id, .block = cls, .launches = l != NULL, .rank = rank,
						  .start = ns, .dur = sqlite3_column_int64(s, 3) };
	return 0;
}

/* Group the sorted calls into rows. */
static int rt_rows(struct rt_scan *x, char **names, struct db_runtime_stat **out, int *n)
{
	int cap = 0, rc = 0;
	int64_t *d = NULL;
	for (int i = 0; i < x->ncalls && !rc;) {
		int j = i;
		while (j < x->ncalls && x->calls[j].name_id == x->calls[i].name_id && x->calls[j].block == x->calls[i].block)
			j++;
		if ((rc = ARRAY_GROW(*out, *n, cap, 32, "reading runtime calls")) != 0)
			break;
		struct db_runtime_stat *o = &(*out)[(*n)++];
		o->block = x->calls[i].block;
		if (!(o->name = strdup(x->calls[i].name_id < x->nnames ? names[x->calls[i].name_id] : ""))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		int64_t *d2 = realloc(d, (size_t)(j - i) * sizeof *d2);
		if (!d2) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		d = d2;
		for (int k = i; k < j; k++) {
			d[k - i] = x->calls[k].dur;
			o->count++;
			o->launches += x->calls[k].launches;
			o->total_ns = i64_add_sat(o->total_ns, x->calls[k].dur);
		}
		o->max_ns = x->calls[j - 1].dur;
		int64_t med;
		db_quantiles(d, j - i, &med, &o->p95_ns);
		i = j;
	}
	free(d);
	return rc;
}

static int cmp_stat(const void *a, const void *b)
{
	const struct db_runtime_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : x->block - y->block;
}

/* Every runtime call starting in the filter's windows into x->calls (unordered); *names is the
 * string table (free with db_strings_free(*names, x->nnames)). */
static int rt_scan(struct db *db, struct db_filter f, struct rt_scan *x, char ***names)
{
	int rc = db_strings(db, names, &x->nnames);
	signed char *cls = NULL;
	if (!rc && !(cls = malloc((size_t)(x->nnames > 0 ? x->nnames : 1))))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int64_t i = 0; !rc && i < x->nnames; i++)
		cls[i] = (signed char)(i ? db_runtime_class((*names)[i]) : -1);
	x->cls = cls;
	if (!rc)
		rc = db_device_lanes(db, &x->lanes, &x->nlanes);
	if (!rc && db_has_table(db, "flow")) {
		/* every launch link's start, and whether a copy it reaches names pageable memory */
		sqlite3_stmt *s = NULL;
		rc = db_prep(db, "SELECT fl.rank, fl.src_tid, fl.src_ns, max(coalesce(d.kind = " DB_SQL_KIND_MEMCPY
				 " AND ds.value LIKE '%Pageable%', 0)) FROM flow fl LEFT JOIN event d ON d.rank = fl.rank AND"
				 " d.start_ns = fl.dst_ns AND d.tid = fl.dst_tid LEFT JOIN string ds ON ds.id = d.name_id"
				 " WHERE fl.kind = " DB_SQL_FLOW_LAUNCH " GROUP BY fl.rank, fl.src_tid, fl.src_ns"
				 " ORDER BY fl.rank, fl.src_tid, fl.src_ns", &s);
		if (!rc)
			rc = db_each_row(db, s, src_row, x);
	}
	/* CPU ranges (runtime calls are plain ranges: neither operators nor steps), innermost first */
	if (!rc)
		rc = db_scan_windows(db, f,
				     "SELECT e.rank, e.tid, e.start_ns, e.dur_ns, e.name_id FROM event e WHERE e.kind = "
				     DB_SQL_KIND_RANGE " AND (?1 < 0 OR e.rank = ?1) AND e.start_ns >= ?2 AND e.start_ns < ?3"
				     " ORDER BY e.rank, e.tid, e.start_ns, e.dur_ns", call_row, x);
	return rc;
}

static void rt_scan_free(struct rt_scan *x, char **names)
{
	free(x->calls);
	free(x->src);
	free(x->lanes);
	free(x->cls);
	db_strings_free(names, x->nnames);
}

int db_runtime_stats(struct db *db, struct db_filter f, struct db_runtime_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	struct rt_scan x = { 0 };
	char **names = NULL;
	int rc = rt_scan(db, f, &x, &names);
	if (!rc && x.ncalls) {
		qsort(x.calls, (size_t)x.ncalls, sizeof *x.calls, cmp_call);
		rc = rt_rows(&x, names, out, n);
	}
	if (!rc && *n)
		qsort(*out, (size_t)*n, sizeof **out, cmp_stat);
	rt_scan_free(&x, names);
	if (rc) {
		db_runtime_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int cmp_rank_start(const void *a, const void *b)
{
	const struct rt_call *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return x->start < y->start ? -1 : x->start > y->start;
}

/* A rank's blocking calls merged into disjoint intervals, by (rank, start). */
struct blk {
	int rank;
	int64_t a, b;
};

/* db_host_blocked's sweep over the device work: the gaps in each rank's device work and whether
 * they begin inside a blocking call. */
struct idle_scan {
	const struct blk *blk;
	int nblk;
	int rank, open;
	int64_t end;                  /* the latest end of the rank's device work so far */
	struct db_host_blocked *o;
};

/* Is t inside one of rank's merged blocking intervals [a, b]? */
static int blk_covers(const struct idle_scan *x, int rank, int64_t t)
{
	int lo = 0, hi = x->nblk;   /* the first interval after (rank, t) */
	while (lo < hi) {
		int m = (lo + hi) / 2;
		if (x->blk[m].rank < rank || (x->blk[m].rank == rank && x->blk[m].a <= t))
			lo = m + 1;
		else
			hi = m;
	}
	return lo > 0 && x->blk[lo - 1].rank == rank && x->blk[lo - 1].a <= t && t <= x->blk[lo - 1].b;
}

static int idle_row(void *ud, sqlite3_stmt *s)
{
	struct idle_scan *x = ud;
	int rank = sqlite3_column_int(s, 0);
	int64_t start = sqlite3_column_int64(s, 1), end = i64_add_sat(start, sqlite3_column_int64(s, 2));
	if (!x->open || x->rank != rank) {
		x->open = 1;
		x->rank = rank;
		x->end = end;
		return 0;
	}
	if (start > x->end) {
		x->o->idle_ns = i64_add_sat(x->o->idle_ns, start - x->end);
		if (blk_covers(x, rank, x->end))
			x->o->idle_after_ns = i64_add_sat(x->o->idle_after_ns, start - x->end);
	}
	if (end > x->end)
		x->end = end;
	return 0;
}

int db_host_blocked(struct db *db, struct db_filter f, struct db_host_blocked *out)
{
	memset(out, 0, sizeof *out);
	struct rt_scan x = { 0 };
	char **names = NULL;
	int rc = rt_scan(db, f, &x, &names);
	int nb = 0;
	for (int i = 0; !rc && i < x.ncalls; i++)
		if (x.calls[i].block != DB_RT_NONBLOCKING)
			x.calls[nb++] = x.calls[i];
	if (!rc && nb)
		qsort(x.calls, (size_t)nb, sizeof *x.calls, cmp_rank_start);
	/* per rank, the union of its blocking calls (nested or on several threads at once: counted once) */
	struct blk *blk = NULL;
	int nblk = 0, cap = 0;
	for (int i = 0; !rc && i < nb; i++) {
		struct rt_call *c = &x.calls[i];
		int64_t e = i64_add_sat(c->start, c->dur);
		out->calls++;
		out->total_ns = i64_add_sat(out->total_ns, c->dur);
		if (!i || c->rank != x.calls[i - 1].rank)
			out->ranks++;
		if (nblk && blk[nblk - 1].rank == c->rank && c->start <= blk[nblk - 1].b) {
			if (e > blk[nblk - 1].b)
				blk[nblk - 1].b = e;
			continue;
		}
		if ((rc = ARRAY_GROW(blk, nblk, cap, 64, "reading runtime calls")) != 0)
			break;
		blk[nblk++] = (struct blk){ c->rank, c->start, e };
	}
	for (int i = 0; !rc && i < nblk; i++)
		out->union_ns = i64_add_sat(out->union_ns, blk[i].b - blk[i].a);
	/* the device's idle gaps, and those that begin while the host is blocked */
	struct idle_scan is = { .blk = blk, .nblk = nblk, .o = out };
	if (!rc && db_has_table(db, "device_lane"))
		rc = db_scan_windows(db, f,
				     "SELECT e.rank, e.start_ns, e.dur_ns FROM event e JOIN device_lane dl ON dl.rank = e.rank"
				     " AND dl.tid = e.tid WHERE e.kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_KERNEL ", "
				     DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET ") AND (?1 < 0 OR e.rank = ?1) AND"
				     " e.start_ns >= ?2 AND e.start_ns < ?3 ORDER BY e.rank, e.start_ns", idle_row, &is);
	free(blk);
	rt_scan_free(&x, names);
	if (rc)
		memset(out, 0, sizeof *out);
	return rc;
}

void db_runtime_stats_free(struct db_runtime_stat *s, int n)
{
	for (int i = 0; s && i < n; i++)
		free(s[i].name);
	free(s);
}
