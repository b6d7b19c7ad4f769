/* import/nsys.c — the Nsight Systems source: an `nsys export --type sqlite` file, read with SQLite
 * (tables as they are: a missing table means no such events, a missing optional column reads as
 * NULL). Each process of the export becomes a rank. docs/import.md has the mapping. */
#include "import/import.h"

#include "common/common.h"
#include "db/db.h"
#include "import/sqlsrc.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PID_OF(gt) "(((" gt ") >> 24) & 16777215)"


/* ---- lanes ---- */

static int cpu_lane(struct sqlsrc *n, int64_t gtid, int *tid)
{
	return imp_lane(n->im, (uint64_t)gtid & ~(1ULL << 63), -1, 0, gtid % 16777216, tid);
}

static uint64_t device_key(int64_t pid, int64_t device, int64_t stream)
{
	return (1ULL << 63) | ((uint64_t)pid & 0xffffff) << 36 | ((uint64_t)device & 0xfff) << 24 | ((uint64_t)stream & 0xffffff);
}

static int device_lane(struct sqlsrc *n, int64_t pid, int64_t device, int64_t stream, int *tid)
{
	if (device < 0 || device > 4095 || stream < 0 || stream > 0xffffff)
		return 1;
	return imp_lane(n->im, device_key(pid, device, stream), (int)device, (int)stream, 0, tid);
}

/* ---- the bulk path ----
 *
 * The export is attached to the output's connection as schema `src` (read-only, immutable), and
 * each table of events moves with INSERT ... SELECT: per process (rank), first the names its rows
 * use are interned (temp.nsys_str: the export's string id → the profile's), then one grouping
 * query per table finds its lanes (in the order the rows first use them, as a row-by-row reader
 * would give them) and counts the rows that are skipped and why; the lanes go to temp.nsys_cpu
 * and temp.nsys_dev; then the rows are inserted joined with those maps, kernel arguments by a
 * second query, and launch links by a join on correlationId with the first valid runtime call of
 * each id (temp.nsys_corr). */

#define SRC "src"             /* the schema the export is attached as */
#define T_NSTR "temp.nsys_str"
/* a row's time checks: 1 NULL start or end, 2 no integer, negative, reversed, longer than the sink's
 * IMP_MAX_NS or further than that from the origin (?2), else 0 */
#define T_REASON(a) "CASE WHEN " a ".start IS NULL OR " a ".end IS NULL THEN 1 WHEN NOT " T_OK(a) " THEN 2"
#define T_OK(a) \
	"(typeof(" a ".start) = 'integer' AND typeof(" a ".end) = 'integer' AND " a ".start >= 0 AND " a ".end >= " a \
	".start AND " a ".end - " a ".start <= " IMP_MAX_NS_SQL " AND " a ".start - ?2 BETWEEN -" IMP_MAX_NS_SQL \
	" AND " IMP_MAX_NS_SQL ")"
#define DEV_OK(a) "(" a ".deviceId BETWEEN 0 AND 4095 AND " a ".streamId BETWEEN 0 AND 16777215)"

enum { R_OK = 0, R_NULL = 1, R_TIME = 2, R_LANE = 3, R_NAME = 4 };

static int is_comm_kernel(const char *name)
{
	return strcasestr(name, "nccl") || strcasestr(name, "rccl");
}

/* A copy's name by its copyKind (the export's ENUM_CUDA_MEMCPY_OPER: 11 to 13 are unified memory's
 * migrations); 0 and unknown kinds are "Memcpy". */
#define COPY_KINDS 14
static const char *const COPY_KIND_NAME[COPY_KINDS] = {
	"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy HtoA", "Memcpy AtoH", "Memcpy AtoA", "Memcpy AtoD",
	"Memcpy DtoA", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP", "Memcpy HtoD (unified)", "Memcpy DtoH (unified)",
	"Memcpy DtoD (unified)",
};

/* A growing SQL text (VALUES lists of the temp maps). */
struct sqlbuf {
	char *s;
	size_t n, cap;
	int rows;
};

static int sb_add(struct sqlbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sb_add(struct sqlbuf *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int k = vsnprintf(b->s ? b->s + b->n : NULL, b->s ? b->cap - b->n : 0, fmt, ap);
		va_end(ap);
		if (k < 0)
			return ascent_error(ASCENT_EINTERNAL, "vsnprintf failed");
		if (b->s && b->n + (size_t)k < b->cap) {
			b->n += (size_t)k;
			return 0;
		}
		size_t nc = (b->cap ? b->cap * 2 : 4096) + (size_t)k;
		char *s2 = realloc(b->s, nc);
		if (!s2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		b->s = s2;
		b->cap = nc;
	}
}

/* text as an SQL literal */
static int sb_quote(struct sqlbuf *b, const char *t)
{
	if (!t)
		return sb_add(b, "NULL");
	int rc = sb_add(b, "'");
	for (const char *p = t; !rc && *p;) {
		size_t k = strcspn(p, "'");
		rc = sb_add(b, "%.*s%s", (int)k, p, p[k] ? "''" : "");
		p += k + (p[k] ? 1 : 0);
	}
	return rc ? rc : sb_add(b, "'");
}

/* Run the buffered "INSERT INTO t VALUES" when it is large (or at the end: force). */
static int sb_flush(struct sqlsrc *n, struct sqlbuf *b, const char *head, int force)
{
	if (!b->rows || (!force && b->n < 256 * 1024))
		return 0;
	int rc = imp_query(n->im, b->s, NULL, 0, NULL, NULL, NULL);
	b->n = 0;
	b->rows = 0;
	return rc ? rc : sb_add(b, "%s", head);
}

/* Start a row of a VALUES list. */
static int sb_row(struct sqlsrc *n, struct sqlbuf *b, const char *head)
{
	int rc = sb_flush(n, b, head, 0);
	if (!rc && !b->n)
		rc = sb_add(b, "%s", head);
	if (!rc)
		rc = sb_add(b, "%s", b->rows++ ? ", " : "");
	return rc;
}

struct bulk {
	struct sqlsrc *n;
	int64_t pid;
	struct db_bind bind[4];   /* ?1 rank, ?2 origin, ?3 pid, ?4 comm_id of the default group */
	struct sqlbuf lanes;      /* the lanes found, as VALUES rows */
	int64_t unpaired;         /* device rows with a correlationId and no runtime call */
	unsigned unnamed;         /* bit U_*: some row (with valid times) of that name column has no name */
	int kernel_comm;          /* some kernel name is a communication kernel's */
	struct corrmap *corr;     /* the first kept runtime call of each correlationId */
	struct strmap *strs;      /* the export's string ids the process uses → the profile's */
};

/* the name columns bulk_strings reads, as bits of bulk.unnamed */
enum { U_RUNTIME, U_OSRT, U_KERNEL, U_KERNEL_SHORT, U_MPI };

/* An event's ord (the event table's key: no two events are one row): its row id in the source
 * table, times 16, plus the table's number below, so that rows of two tables on one lane never meet. */
#define ORD(rowid, tag) "(" rowid ") * 16 + " tag
enum { ORD_RUNTIME, ORD_OSRT, ORD_NVTX, ORD_KERNEL, ORD_MEMCPY, ORD_MEMSET, ORD_MPI /* + 4 tables */ };

static int bulk_exec(struct bulk *b, const char *sql, int64_t *changes)
{
	return imp_query(b->n->im, sql, b->bind, 4, NULL, NULL, changes);
}

/* One group of a table's grouping query: key (the lane: globalTid, or deviceId and streamId),
 * the reason its rows are skipped (R_*), the first row, how many, their span, how many carry a
 * correlationId, and a flag per table (kernels: a communication kernel; memcpy: copyKind). */
struct grp {
	int64_t k1, k2, reason, first, count, lo, hi, ncorr, flag;
	const char *name, *domain;   /* NVTX: the range's name and domain (copies) */
};

struct grps {
	struct grp *v;
	int n, cap;
};

/* A new zeroed group at the end of g (NULL when out of memory: the error is set). */
static struct grp *grp_add(struct grps *g)
{
	if (g->n == g->cap) {
		int nc = g->cap ? g->cap * 2 : 64;
		struct grp *v2 = realloc(g->v, (size_t)nc * sizeof *v2);
		if (!v2) {
			ascent_error(ASCENT_ENOMEM, "out of memory");
			return NULL;
		}
		g->v = v2;
		g->cap = nc;
	}
	struct grp *x = &g->v[g->n++];
	memset(x, 0, sizeof *x);
	return x;
}

static int grp_row(void *ud, const struct db_row *r)
{
	struct grps *g = ud;
	struct grp *x = grp_add(g);
	if (!x)
		return ASCENT_ENOMEM;
	int64_t *f[] = { &x->k1, &x->k2, &x->reason, &x->first, &x->count, &x->lo, &x->hi, &x->ncorr, &x->flag };
	for (int i = 0; i < 9; i++)
		*f[i] = db_row_i64(r, i);
	if (!db_row_is_null(r, 9) && !(x->name = strdup(db_row_text(r, 9))))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!db_row_is_null(r, 10) && !(x->domain = strdup(db_row_text(r, 10))))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	return 0;
}

static void grps_free(struct grps *g)
{
	for (int i = 0; i < g->n; i++) {
		free((char *)g->v[i].name);
		free((char *)g->v[i].domain);
	}
	free(g->v);
	memset(g, 0, sizeof *g);
}

static int cmp_first(const void *a, const void *b)
{
	const struct grp *x = a, *y = b;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The skipped rows counted (by reason), the lanes of the others made in the order their first
 * rows come in the table, *n_ok, *lo, *hi: the rows kept and their span. lane_reasons: a mask of
 * the reasons whose rows still make their lane (a kernel without a name, as a row-by-row reader
 * meets the lane before the name). device: the key is (deviceId, streamId). */
static int grps_apply(struct bulk *b, const char *table, struct grps *g, int device, unsigned lane_reasons, int64_t *n_ok,
		      int64_t *lo, int64_t *hi)
{
	static const enum imp_warning w[] = { [R_NULL] = IMP_W_NO_DUR, [R_TIME] = IMP_W_BAD_TIME, [R_LANE] = IMP_W_BAD_TYPE,
					      [R_NAME] = IMP_W_NO_NAME };
	struct sqlsrc *n = b->n;
	*n_ok = 0;
	*lo = INT64_MAX;
	*hi = INT64_MIN;
	for (int i = 0; i < g->n; i++) {
		struct grp *x = &g->v[i];
		if (x->reason == R_OK) {
			*n_ok += x->count;
			if (x->lo < *lo)
				*lo = x->lo;
			if (x->hi > *hi)
				*hi = x->hi;
			b->unpaired += x->ncorr;   /* less the links made, later */
		} else if (x->reason > 0 && x->reason <= R_NAME) {
			for (int64_t k = 0; k < x->count; k++)
				sqlsrc_warn_row(n, w[x->reason], table);
		}
	}
	if (g->n > 1)
		qsort(g->v, (size_t)g->n, sizeof *g->v, cmp_first);
	int rc = 0;
	for (int i = 0; i < g->n && !rc; i++) {
		struct grp *x = &g->v[i];
		if (x->reason < 0 || x->reason > 31 || !(lane_reasons & (1u << x->reason)))
			continue;
		int tid, had = imp_lane_lookup(n->im, device ? device_key(b->pid, x->k1, x->k2) : (uint64_t)x->k1 & ~(1ULL << 63), NULL) >= 0;
		rc = device ? device_lane(n, b->pid, x->k1, x->k2, &tid) : cpu_lane(n, x->k1, &tid);
		if (rc > 0)
			rc = 0;
		else if (!rc && !had) {
			const char *head = device ? "INSERT OR IGNORE INTO temp.nsys_dev VALUES " : "INSERT OR IGNORE INTO temp.nsys_cpu VALUES ";
			if (device)
				rc = sb_add(&b->lanes, "%s(%" PRId64 ", %" PRId64 ", %d);", head, x->k1, x->k2, tid);
			else
				rc = sb_add(&b->lanes, "%s(%" PRId64 ", %d);", head, x->k1, tid);
		}
	}
	if (!rc && b->lanes.n) {
		rc = imp_query(n->im, b->lanes.s, NULL, 0, NULL, NULL, NULL);
		b->lanes.n = 0;
	}
	return rc;
}

/* Group a table's rows of the process (grouping query `sql`), count the skipped ones, make the
 * lanes, and tell the sink about the events the insert will add. */
static int bulk_scan(struct bulk *b, const char *table, const char *sql, int device, unsigned lane_reasons, struct grps *g)
{
	int rc = imp_query(b->n->im, sql, b->bind, 4, grp_row, g, NULL);
	int64_t n_ok = 0, lo = 0, hi = 0;
	if (!rc)
		rc = grps_apply(b, table, g, device, lane_reasons, &n_ok, &lo, &hi);
	if (!rc)
		imp_bulk_events(b->n->im, n_ok, lo, hi);
	b->n->rows += n_ok;
	if (b->n->total_rows > 0)
		imp_progress(b->n->im, (int64_t)((double)b->n->size * (double)(b->n->rows < b->n->total_rows ? b->n->rows : b->n->total_rows) /
						 (double)b->n->total_rows));
	return rc;
}

struct agg_ctx {
	struct grps *g;
};

/* The counting row of bulk_count: rows skipped per reason 1..4, then the kept rows' count, span,
 * correlationIds and flag, as groups for grps_apply. */
static int agg_row(void *ud, const struct db_row *r)
{
	struct grps *g = ud;
	for (int reason = 0; reason <= R_NAME; reason++) {
		int64_t count = db_row_i64(r, reason);
		if (!count)
			continue;
		struct grp *x = grp_add(g);
		if (!x)
			return ASCENT_ENOMEM;
		x->reason = reason;
		x->count = count;
		x->first = INT64_MAX;
		if (reason == R_OK) {
			x->lo = db_row_i64(r, 5);
			x->hi = db_row_i64(r, 6);
			x->ncorr = db_row_i64(r, 7);
			x->flag = db_row_i64(r, 8);
		}
	}
	return 0;
}

#define R_LANE_ONLY 5   /* a group that only names a lane and its first row */

/* bulk_scan without sorting (a GROUP BY over millions of rows sorts them all): the lanes by
 * INSERT OR IGNORE into a small keyed table (the first row of each key stays), the counts and
 * span by one aggregate pass. keys: two key expressions; lane_ok: the rows that make their lane;
 * reason: the R_* expression; fw: "FROM ... WHERE ..."; rowid, start, end, corr: expressions;
 * flag: an expression over the kept rows, aggregated by max, or by the sum of its distinct values
 * when bits (a bit mask). */
static int bulk_count(struct bulk *b, const char *table, const char *keys, const char *lane_ok, const char *reason,
		      const char *fw, const char *rowid, const char *start, const char *end, const char *corr,
		      const char *flag, int bits, int device, struct grps *g)
{
	struct sqlbuf q = { 0 };
	int rc = sb_add(&q,
			"DELETE FROM temp.nsys_found; INSERT OR IGNORE INTO temp.nsys_found SELECT %s, %s %s AND %s;"
			" SELECT k1, k2, %d, first, 0, 0, 0, 0, 0, NULL, NULL FROM temp.nsys_found",
			keys, rowid, fw, lane_ok, R_LANE_ONLY);
	if (!rc)
		rc = imp_query(b->n->im, q.s, b->bind, 4, grp_row, g, NULL);
	q.n = 0;
	if (!rc)
		rc = sb_add(&q,
			    "SELECT count(*) FILTER (WHERE rs = 0), count(*) FILTER (WHERE rs = 1), count(*) FILTER (WHERE rs = 2),"
			    " count(*) FILTER (WHERE rs = 3), count(*) FILTER (WHERE rs = 4), min(st) FILTER (WHERE rs = 0),"
			    " max(en) FILTER (WHERE rs = 0), count(co) FILTER (WHERE rs = 0), %s FILTER (WHERE rs = 0)"
			    " FROM (SELECT %s AS rs, %s AS st, %s AS en, %s AS co, %s AS fl %s)",
			    bits ? "total(DISTINCT fl)" : "max(fl)", reason, start, end, corr, flag, fw);
	if (!rc)
		rc = imp_query(b->n->im, q.s, b->bind, 4, agg_row, g, NULL);
	free(q.s);
	int64_t n_ok = 0, lo = 0, hi = 0;
	if (!rc)
		rc = grps_apply(b, table, g, device, 1u << R_LANE_ONLY, &n_ok, &lo, &hi);
	if (!rc)
		imp_bulk_events(b->n->im, n_ok, lo, hi);
	b->n->rows += n_ok;
	return rc;
}

/* ---- rows counted as they are inserted ----
 *
 * The runtime calls, OS calls and kernels are read by their INSERT ... SELECT alone: each row
 * passes through the SQL function nsys_row(reason, k1, k2, start, end, corr), which counts a
 * skipped row by its reason (R_*), makes the row's lane in the order the rows come (as a
 * row-by-row reader would), adds a kept row to the span, and counts its correlationId (device
 * rows: a link end to pair) or remembers it (runtime calls: the first kept call of each id, for
 * the launch links, in struct corrmap). It returns the lane, or NULL for a skipped row: event.tid
 * is NOT NULL, so INSERT OR IGNORE drops the row. The links then look their launch up with
 * nsys_corr_tid(id) and nsys_corr_ns(id) (NULL when the id has no runtime call). */

struct corr_slot {
	int64_t id, ns;   /* ns: the call's start, stored (relative to the rank's origin) */
	int tid;          /* −1: empty */
};

struct corrmap {
	struct corr_slot *v;
	size_t cap, n;    /* cap: a power of two; n ≤ cap / 2 */
	size_t last;      /* the slot the last lookup found (links ask twice per row) */
};

static size_t corr_hash(int64_t id, size_t cap)
{
	uint64_t h = (uint64_t)id * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 20) & (cap - 1);
}

/* The slot of id, or the empty one where it would go. */
static size_t corr_find(const struct corrmap *m, int64_t id)
{
	size_t i = corr_hash(id, m->cap);
	while (m->v[i].tid >= 0 && m->v[i].id != id)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* Keep (tid, ns) for id unless id has them already (the first call of an id wins). */
static int corr_put(struct corrmap *m, int64_t id, int tid, int64_t ns)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 4096;
		struct corr_slot *v = malloc(nc * sizeof *v), *old = m->v;
		if (!v)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		for (size_t i = 0; i < nc; i++)
			v[i].tid = -1;
		size_t oc = m->cap;
		m->v = v;
		m->cap = nc;
		for (size_t i = 0; i < oc; i++)
			if (old[i].tid >= 0)
				m->v[corr_find(m, old[i].id)] = old[i];
		free(old);
	}
	size_t i = corr_find(m, id);
	if (m->v[i].tid < 0) {
		m->v[i] = (struct corr_slot){ .id = id, .ns = ns, .tid = tid };
		m->n++;
	}
	return 0;
}

/* The slot of id's call, or NULL. */
static const struct corr_slot *corr_get(struct corrmap *m, int64_t id)
{
	if (!m->cap)
		return NULL;
	if (m->v[m->last].tid >= 0 && m->v[m->last].id == id)
		return &m->v[m->last];
	size_t i = corr_find(m, id);
	if (m->v[i].tid < 0)
		return NULL;
	m->last = i;
	return &m->v[i];
}

/* nsys_row's state: one table's insert. */
struct rowacc {
	struct bulk *b;
	const char *table;
	int device;              /* the lane key is (deviceId, streamId), else globalTid */
	unsigned lane_reasons;   /* bit R_*: the rows that make their lane (a kernel without a name
				  * does, as a row-by-row reader meets the lane before the name) */
	int remember_corr;       /* runtime calls: keep the first of each correlationId */
	int64_t n_ok, lo, hi, ncorr;
	int64_t k1, k2;          /* the last lane made or found (rows come in runs of one lane) */
	int tid;                 /* its tid, −1 none */
	struct sqlbuf lanes;     /* the lanes this table made, for the temp maps of the later inserts */
	int rc;                  /* the first error met in a row */
};

static void nsys_row_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	static const enum imp_warning w[] = { [R_NULL] = IMP_W_NO_DUR, [R_TIME] = IMP_W_BAD_TIME, [R_LANE] = IMP_W_BAD_TYPE,
					      [R_NAME] = IMP_W_NO_NAME };
	struct rowacc *a = sqlite3_user_data(ctx);
	struct sqlsrc *n = a->b->n;
	(void)argc;
	int64_t reason = sqlite3_value_int64(v[0]);
	if (reason < R_OK || reason > R_NAME) {
		sqlite3_result_null(ctx);
		return;
	}
	if (reason != R_OK)
		sqlsrc_warn_row(n, w[reason], a->table);
	if (!(a->lane_reasons & (1u << reason))) {
		sqlite3_result_null(ctx);
		return;
	}
	int64_t k1 = sqlite3_value_int64(v[1]), k2 = sqlite3_value_int64(v[2]);
	if (a->tid < 0 || k1 != a->k1 || k2 != a->k2) {
		uint64_t key = a->device ? device_key(a->b->pid, k1, k2) : (uint64_t)k1 & ~(1ULL << 63);
		int tid = -1, had = imp_lane_lookup(n->im, key, NULL) >= 0;
		int rc = a->device ? device_lane(n, a->b->pid, k1, k2, &tid) : cpu_lane(n, k1, &tid);
		if (!rc && !had)
			rc = a->device ? sb_add(&a->lanes, "INSERT OR IGNORE INTO temp.nsys_dev VALUES (%" PRId64 ", %" PRId64 ", %d);",
						k1, k2, tid)
				       : sb_add(&a->lanes, "INSERT OR IGNORE INTO temp.nsys_cpu VALUES (%" PRId64 ", %d);", k1, tid);
		if (rc < 0) {
			a->rc = rc;
			sqlite3_result_error(ctx, ascent_errmsg(), -1);
			return;
		}
		if (rc > 0) {   /* not a lane (the reason says it is): skipped */
			sqlite3_result_null(ctx);
			return;
		}
		a->k1 = k1;
		a->k2 = k2;
		a->tid = tid;
	}
	if (reason != R_OK) {
		sqlite3_result_null(ctx);
		return;
	}
	int64_t start = sqlite3_value_int64(v[3]), end = sqlite3_value_int64(v[4]);
	a->n_ok++;
	if (start < a->lo)
		a->lo = start;
	if (end > a->hi)
		a->hi = end;
	if (sqlite3_value_type(v[5]) != SQLITE_NULL) {
		if (!a->remember_corr) {
			a->ncorr++;
		} else {
			int rc = corr_put(a->b->corr, sqlite3_value_int64(v[5]), a->tid, start - imp_origin(n->im));
			if (rc) {
				a->rc = rc;
				sqlite3_result_error(ctx, ascent_errmsg(), -1);
				return;
			}
		}
	}
	sqlite3_result_int(ctx, a->tid);
}

static void nsys_corr_fn(sqlite3_context *ctx, int argc, sqlite3_value **v, int ns)
{
	struct corrmap *m = sqlite3_user_data(ctx);
	(void)argc;
	const struct corr_slot *c = sqlite3_value_type(v[0]) == SQLITE_NULL ? NULL : corr_get(m, sqlite3_value_int64(v[0]));
	if (!c)
		sqlite3_result_null(ctx);
	else if (ns)
		sqlite3_result_int64(ctx, c->ns);
	else
		sqlite3_result_int(ctx, c->tid);
}

static void nsys_corr_tid_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	nsys_corr_fn(ctx, argc, v, 0);
}

static void nsys_corr_ns_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	nsys_corr_fn(ctx, argc, v, 1);
}

/* The names: the export's string id → the profile's (interned), whether it is a communication
 * kernel's, and its JSON text (for the kernel arguments). Read by nsys_name, nsys_comm and
 * nsys_kernel_args in the inserts (in place of a join per row with temp.nsys_str, which the MPI
 * tables still use). */
struct str_slot {
	int64_t src, id;
	char *js;
	int comm;
	int used;
};

struct strmap {
	struct str_slot *v;
	size_t cap, n;
};

static size_t str_find(const struct strmap *m, int64_t src)
{
	size_t i = corr_hash(src, m->cap);
	while (m->v[i].used && m->v[i].src != src)
		i = (i + 1) & (m->cap - 1);
	return i;
}

/* Keep src → (id, comm, js) unless src is there already; js is copied. */
static int str_put(struct strmap *m, int64_t src, int64_t id, int comm, const char *js)
{
	if (2 * (m->n + 1) > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 256, oc = m->cap;
		struct str_slot *v = calloc(nc, sizeof *v), *old = m->v;
		if (!v)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		m->v = v;
		m->cap = nc;
		for (size_t i = 0; i < oc; i++)
			if (old[i].used)
				m->v[str_find(m, old[i].src)] = old[i];
		free(old);
	}
	size_t i = str_find(m, src);
	if (m->v[i].used)
		return 0;
	char *c = strdup(js ? js : "\"\"");
	if (!c)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	m->v[i] = (struct str_slot){ .src = src, .id = id, .js = c, .comm = comm, .used = 1 };
	m->n++;
	return 0;
}

static void strmap_free(struct strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->v[i].js);
	free(m->v);
	memset(m, 0, sizeof *m);
}

/* The name a string id column's value names, or NULL: as the join on the map's INTEGER PRIMARY
 * KEY matched, only an integer value (or a real one that is an integer) can. */
static const struct str_slot *str_of(const struct strmap *m, sqlite3_value *v)
{
	int64_t src;
	int t = sqlite3_value_numeric_type(v);   /* '12' as the join's affinity reads it */
	if (!m->cap)
		return NULL;
	if (t == SQLITE_INTEGER) {
		src = sqlite3_value_int64(v);
	} else if (t == SQLITE_FLOAT) {
		double d = sqlite3_value_double(v);
		if (!(d >= -9.2e18 && d <= 9.2e18) || (double)(int64_t)d != d)
			return NULL;
		src = (int64_t)d;
	} else {
		return NULL;
	}
	size_t i = str_find(m, src);
	return m->v[i].used ? &m->v[i] : NULL;
}

/* The first of the arguments (string id columns) that names something. */
static const struct str_slot *str_first(const struct strmap *m, int argc, sqlite3_value **v)
{
	for (int i = 0; i < argc; i++) {
		const struct str_slot *x = str_of(m, v[i]);
		if (x)
			return x;
	}
	return NULL;
}

/* nsys_name(id, ...): the profile's string id of the first argument that names something, else NULL */
static void nsys_name_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	const struct str_slot *x = str_first(sqlite3_user_data(ctx), argc, v);
	if (x)
		sqlite3_result_int64(ctx, x->id);
	else
		sqlite3_result_null(ctx);
}

/* nsys_comm(id, ...): 1 when that name is a communication kernel's, 0 when not, NULL when none */
static void nsys_comm_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	const struct str_slot *x = str_first(sqlite3_user_data(ctx), argc, v);
	if (x)
		sqlite3_result_int(ctx, x->comm);
	else
		sqlite3_result_null(ctx);
}

/* int64 as decimal at p; returns the end */
static char *put_i64(char *p, int64_t v)
{
	char tmp[24];
	int k = 0;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do
		tmp[k++] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*p++ = '-';
	while (k)
		*p++ = tmp[--k];
	return p;
}

/* nsys_kernel_args(shortName, gridX, gridY, gridZ, blockX, blockY, blockZ, registersPerThread,
 * correlationId): the kernel's arguments as JSON, the text SQL's printf('{"short name": %s,
 * "grid": [%d, %d, %d], ...}') gave (a number as sqlite3_value_int64 reads it: NULL is 0; the
 * short name's JSON text, "" when it names nothing) at a fifth of its cost. */
static void nsys_kernel_args_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	static const char *const part[] = { "{\"short name\": ", ", \"grid\": [", ", ", ", ", "], \"block\": [", ", ", ", ",
					    "], \"registers per thread\": ", ", \"correlation\": " };
	const struct str_slot *x = argc == 9 ? str_of(sqlite3_user_data(ctx), v[0]) : NULL;
	const char *js = x ? x->js : "\"\"";
	size_t jl = strlen(js), cap = jl + 9 * 24 + 160;
	char stack[1024], *buf = cap <= sizeof stack ? stack : sqlite3_malloc64(cap);
	if (!buf) {
		sqlite3_result_error_nomem(ctx);
		return;
	}
	char *p = buf;
	for (int i = 0; i < 9 && i < argc; i++) {
		size_t l = strlen(part[i]);
		memcpy(p, part[i], l);
		p += l;
		if (i == 0) {
			memcpy(p, js, jl);
			p += jl;
		} else {
			p = put_i64(p, sqlite3_value_int64(v[i]));
		}
	}
	*p++ = '}';
	sqlite3_result_text(ctx, buf, (int)(p - buf), SQLITE_TRANSIENT);
	if (buf != stack)
		sqlite3_free(buf);
}

/* nsys_lane(deviceId, streamId): the tid of that stream's lane of the process, NULL when it has none */
static void nsys_lane_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct bulk *b = sqlite3_user_data(ctx);
	(void)argc;
	int64_t dev = sqlite3_value_int64(v[0]), stream = sqlite3_value_int64(v[1]);
	int tid = -1;
	if (sqlite3_value_type(v[0]) != SQLITE_NULL && sqlite3_value_type(v[1]) != SQLITE_NULL && dev >= 0 && dev <= 4095 &&
	    stream >= 0 && stream <= 0xffffff)
		tid = imp_lane_lookup(b->n->im, device_key(b->pid, dev, stream), NULL);
	if (tid >= 0)
		sqlite3_result_int(ctx, tid);
	else
		sqlite3_result_null(ctx);
}

/* Run `sql`, an INSERT ... SELECT whose lane column is nsys_row(...) over `table`'s rows: the
 * skipped rows counted, the lanes made (and put in the temp maps), the kept rows given to the
 * sink (imp_bulk_events); their correlationIds counted into b->unpaired, or remembered. */
static int bulk_insert_counted(struct bulk *b, struct rowacc *a, const char *sql)
{
	struct sqlsrc *n = b->n;
	a->b = b;
	a->n_ok = a->ncorr = 0;
	a->lo = INT64_MAX;
	a->hi = INT64_MIN;
	a->tid = -1;
	a->rc = 0;
	int rc = imp_function(n->im, "nsys_row", 6, nsys_row_fn, a);
	if (!rc)
		rc = bulk_exec(b, sql, NULL);
	if (a->rc)   /* the row's own error, not SQLite's report of it */
		rc = a->rc;
	if (!rc && a->lanes.n)
		rc = imp_query(n->im, a->lanes.s, NULL, 0, NULL, NULL, NULL);
	free(a->lanes.s);
	a->lanes = (struct sqlbuf){ 0 };
	int rc2 = imp_function(n->im, "nsys_row", 6, NULL, NULL);
	if (!rc)
		rc = rc2;
	if (!rc) {
		imp_bulk_events(n->im, a->n_ok, a->lo, a->hi);
		b->unpaired += a->ncorr;   /* less the links made, later */
		n->rows += a->n_ok;
		if (n->total_rows > 0)
			imp_progress(n->im, (int64_t)((double)n->size * (double)(n->rows < n->total_rows ? n->rows : n->total_rows) /
						     (double)n->total_rows));
	}
	return rc;
}

static int found_row(void *ud, const struct db_row *r)
{
	(void)r;
	*(int64_t *)ud = 1;
	return 0;
}

/* ---- names ---- */

struct str_ctx {
	struct bulk *b;
	struct sqlbuf sql;
};

static const char STR_HEAD[] = "INSERT OR IGNORE INTO " T_NSTR " VALUES ";

/* columns: the string id, its value (NULL: not in StringIds), the U_* column that uses it */
static int str_row(void *ud, const struct db_row *r)
{
	struct str_ctx *c = ud;
	const char *v = db_row_is_null(r, 1) ? NULL : db_row_text(r, 1);
	int64_t id, use = db_row_i64(r, 2);
	if ((!v || !*v) && use >= 0 && use < 32)
		c->b->unnamed |= 1u << use;
	if (v && *v && (use == U_KERNEL || use == U_KERNEL_SHORT) && is_comm_kernel(v))
		c->b->kernel_comm = 1;
	int rc = v && *v ? imp_intern(c->b->n->im, v, &id) : 0;
	if (!rc && v && *v && !db_row_is_null(r, 0))
		rc = str_put(c->b->strs, db_row_i64(r, 0), id, is_comm_kernel(v), db_row_text(r, 3));
	if (!rc && v && *v && (rc = sb_row(c->b->n, &c->sql, STR_HEAD)) == 0)
		rc = sb_add(&c->sql, "(%" PRId64 ", %" PRId64 ", %d, json_quote(", db_row_i64(r, 0), id, is_comm_kernel(v));
	if (!rc && v && *v && (rc = sb_quote(&c->sql, v)) == 0)
		rc = sb_add(&c->sql, "))");
	return rc;
}

/* A table's rows have times (the names pass reads only timed rows; a table without them is refused
 * by its own reader with the column named). */
static int has_times(struct sqlsrc *n, const char *t)
{
	return sqlsrc_has_column(n, t, "start") && sqlsrc_has_column(n, t, "end");
}

/* StringIds' value as a name: text (numbers as their text), NULL for a BLOB or NULL (no name) */
#define NAME_SQL "CASE WHEN typeof(s.value) IN ('text', 'integer', 'real') THEN CAST(s.value AS TEXT) END"

/* The names the process's runtime calls, OS calls and kernels use: interned (in string id order),
 * and their map; which name columns have rows without a name (bulk.unnamed: where they have none,
 * the counting passes need no name lookup) and whether a kernel name is a communication kernel's. */
static int bulk_strings(struct bulk *b)
{
	struct sqlsrc *n = b->n;
	static const struct {
		const char *table, *col, *who;
		int use;
	} use[] = { { "CUPTI_ACTIVITY_KIND_RUNTIME", "nameId", "globalTid", U_RUNTIME },
		    { "OSRT_API", "nameId", "globalTid", U_OSRT },
		    { "CUPTI_ACTIVITY_KIND_KERNEL", "demangledName", "globalPid", U_KERNEL },
		    { "CUPTI_ACTIVITY_KIND_KERNEL", "shortName", "globalPid", U_KERNEL_SHORT },
		    { "MPI_P2P_EVENTS", "textId", "globalTid", U_MPI }, { "MPI_COLLECTIVES_EVENTS", "textId", "globalTid", U_MPI },
		    { "MPI_START_WAIT_EVENTS", "textId", "globalTid", U_MPI }, { "MPI_OTHER_EVENTS", "textId", "globalTid", U_MPI } };
	struct sqlbuf u = { 0 };
	int rc = 0, kboth = 0;
	const char *k = "CUPTI_ACTIVITY_KIND_KERNEL";
	/* the kernels' two name columns from one pass: their distinct pairs (kn) */
	if (sqlsrc_has_table(n, k) && sqlsrc_has_column(n, k, "demangledName") && sqlsrc_has_column(n, k, "shortName") &&
	    sqlsrc_has_column(n, k, "globalPid") && has_times(n, k)) {
		kboth = 1;
		rc = sb_add(&u, "WITH kn(d, s) AS MATERIALIZED (SELECT DISTINCT demangledName, shortName FROM " SRC ".%s t WHERE "
			    PID_OF("t.globalPid") " = ?3 AND " T_OK("t") ") ", k);
	}
	if (!rc)
		rc = sb_add(&u, "SELECT x.id, " NAME_SQL ", x.u, json_quote(" NAME_SQL ") FROM (SELECT DISTINCT u, id FROM (");
	size_t head = u.n;
	for (size_t i = 0; i < sizeof use / sizeof *use && !rc; i++) {
		if (kboth && (use[i].use == U_KERNEL || use[i].use == U_KERNEL_SHORT))
			rc = sb_add(&u, "%sSELECT %d AS u, %s AS id FROM kn", u.n > head ? " UNION ALL " : "", use[i].use,
				    use[i].use == U_KERNEL ? "d" : "s");
		else if (sqlsrc_has_table(n, use[i].table) && sqlsrc_has_column(n, use[i].table, use[i].col) &&
			 sqlsrc_has_column(n, use[i].table, use[i].who) && has_times(n, use[i].table))
			rc = sb_add(&u, "%sSELECT %d AS u, %s AS id FROM " SRC ".%s t WHERE " PID_OF("t.%s") " = ?3 AND " T_OK("t"),
				    u.n > head ? " UNION ALL " : "", use[i].use, use[i].col, use[i].table, use[i].who);
	}
	if (rc || u.n == head) {
		free(u.s);
		return rc;
	}
	struct sqlbuf q = { 0 };
	rc = sb_add(&q, "%s)) x LEFT JOIN " SRC ".StringIds s ON s.id = x.id ORDER BY x.id, x.u", u.s);
	free(u.s);
	struct str_ctx c = { .b = b };
	if (!rc)
		rc = imp_query(n->im, q.s, b->bind, 4, str_row, &c, NULL);
	if (!rc)
		rc = sb_flush(n, &c.sql, STR_HEAD, 1);
	free(q.s);
	free(c.sql.s);
	return rc;
}

/* ---- CPU: CUDA runtime calls, OS runtime calls ---- */

/* Runtime calls and OS calls: ranges on their thread's lane, each table read once (nsys_row); the
 * runtime calls' first kept row of each correlationId remembered for the launch links. */
static int bulk_cpu(struct bulk *b)
{
	static const char *const need[] = { "start", "end", "globalTid", "nameId", NULL };
	struct sqlsrc *n = b->n;
	static const char *const tables[] = { "CUPTI_ACTIVITY_KIND_RUNTIME", "OSRT_API" };
	char sql[2048];
	int rc = 0;
	for (int i = 0; i < 2 && !rc; i++) {
		const char *t = tables[i];
		if (!sqlsrc_has_table(n, t))
			continue;
		if ((rc = sqlsrc_need_columns(n, t, need)) != 0)
			return rc;
		/* every row has a name: no name test */
		int named = !(b->unnamed & (1u << (i == 0 ? U_RUNTIME : U_OSRT)));
		/* the first row of each correlation id: Nsight records a call twice (cudaMemcpy and the
		 * nested cudaMemcpy_v3020, one correlation id); the link starts at the outer one */
		int corr = i == 0 && sqlsrc_has_column(n, t, "correlationId");
		struct rowacc a = { .table = t, .lane_reasons = 1u << R_OK, .remember_corr = 1 };
		snprintf(sql, sizeof sql,
			 "INSERT OR IGNORE INTO main.event(rank, start_ns, tid, kind, name_id, dur_ns, ord)"
			 " SELECT ?1, r.start - ?2, nsys_row(%s, r.globalTid, 0, r.start, r.end, %s), %d, nsys_name(r.nameId),"
			 " r.end - r.start, " ORD("r.rowid", "%d") " FROM " SRC ".%s r WHERE " PID_OF("r.globalTid") " = ?3",
			 named ? T_REASON("r") " ELSE 0 END" : T_REASON("r") " WHEN nsys_name(r.nameId) IS NULL THEN 4 ELSE 0 END",
			 corr ? "r.correlationId" : "NULL", DB_KIND_RANGE, i == 0 ? ORD_RUNTIME : ORD_OSRT, t);
		rc = bulk_insert_counted(b, &a, sql);
	}
	return rc;
}

/* ---- MPI: Nsight's own MPI trace tables ---- */

/* The tables `--trace=mpi` writes (the columns Nsight Systems' `mpi_event_trace` report reads):
 * point-to-point calls with their message size and peer, collectives with their send and receive
 * sizes and root, start/wait and other calls. Each row is a range on its thread's lane, named
 * StringIds[textId]. Rows of one call with one name, start and end (Nsight splits an
 * MPI_Sendrecv whose two halves differ into two rows) are one event: bytes summed, the first
 * row's peer. */
static int bulk_mpi(struct bulk *b)
{
	static const struct {
		const char *table;
		int kind;
	} tabs[] = { { "MPI_P2P_EVENTS", DB_KIND_P2P }, { "MPI_COLLECTIVES_EVENTS", DB_KIND_COMM },
		     { "MPI_START_WAIT_EVENTS", DB_KIND_RANGE }, { "MPI_OTHER_EVENTS", DB_KIND_RANGE } };
	static const char *const need[] = { "start", "end", "globalTid", "textId", NULL };
	/* the collectives with a root (MPI_Bcast, MPI_Reduce, MPI_Gather(v), MPI_Scatter(v) and their
	 * nonblocking forms): their rootRank is the event's peer */
	static const char ROOTED[] = "('MPI_Bcast', 'MPI_Ibcast', 'MPI_Reduce', 'MPI_Ireduce', 'MPI_Gather', 'MPI_Igather',"
				     " 'MPI_Gatherv', 'MPI_Igatherv', 'MPI_Scatter', 'MPI_Iscatter', 'MPI_Scatterv', 'MPI_Iscatterv')";
	struct sqlsrc *n = b->n;
	int rc = 0;
	for (size_t i = 0; i < sizeof tabs / sizeof *tabs && !rc; i++) {
		const char *t = tabs[i].table;
		int kind = tabs[i].kind;
		if (!sqlsrc_has_table(n, t))
			continue;
		if ((rc = sqlsrc_need_columns(n, t, need)) != 0)
			return rc;
		struct grps g = { 0 };
		char fw[400], sql[3000], bytes[300] = "NULL", peer[400] = "NULL";
		snprintf(fw, sizeof fw, "FROM " SRC ".%s r LEFT JOIN " T_NSTR " s ON s.src = r.textId WHERE " PID_OF("r.globalTid") " = ?3",
			 t);
		rc = bulk_count(b, t, "r.globalTid, 0", T_OK("r") " AND s.id IS NOT NULL",
				T_REASON("r") " WHEN s.id IS NULL THEN 4 ELSE 0 END", fw, "r.rowid", "r.start", "r.end", "NULL", "0", 0, 0,
				&g);
		int64_t kept = 0;
		for (int j = 0; j < g.n; j++)
			kept += g.v[j].reason == R_OK ? g.v[j].count : 0;
		grps_free(&g);
		if (rc || !kept)
			continue;
		int64_t comm_id = -1;
		if (kind == DB_KIND_COMM && (rc = imp_comm_id(n->im, NULL, &comm_id)) != 0)
			break;
		/* sizes: negative or missing ones are unknown (0) */
		const char *size = sqlsrc_col_or_null(n, t, "size");
		if (kind == DB_KIND_P2P) {
			snprintf(bytes, sizeof bytes, "total(max(COALESCE(%s, 0), 0))", size);
			if (sqlsrc_has_column(n, t, "remoteRank"))
				snprintf(peer, sizeof peer, "CASE WHEN r.remoteRank BETWEEN 0 AND 999999 THEN r.remoteRank END");
		} else if (kind == DB_KIND_COMM) {
			snprintf(bytes, sizeof bytes, "total(max(COALESCE(%s, 0), COALESCE(%s, 0), 0))", size,
				 sqlsrc_col_or_null(n, t, "recvSize"));
			if (sqlsrc_has_column(n, t, "rootRank"))
				snprintf(peer, sizeof peer,
					 "CASE WHEN r.rootRank BETWEEN 0 AND 999999 AND (SELECT value FROM " SRC
					 ".StringIds WHERE id = r.textId) IN %s THEN r.rootRank END",
					 ROOTED);
		}
		snprintf(sql, sizeof sql,
			 "INSERT OR IGNORE INTO main.event(rank, start_ns, tid, kind, name_id, dur_ns, bytes, peer, comm_id, ord)"
			 " SELECT ?1, r.start - ?2, c.tid, %d, s.id, r.end - r.start, %s, r.peer, %s%" PRId64 ", " ORD("r.rid", "%d")
			 " FROM (SELECT min(r.rowid) AS rid,"
			 " r.start, r.end, r.globalTid, r.textId, %s AS peer, %s AS bytes FROM " SRC ".%s r WHERE " PID_OF("r.globalTid")
			 " = ?3 AND " T_OK("r") " GROUP BY r.globalTid, r.start, r.end, r.textId) r JOIN " T_NSTR " s ON s.src = r.textId"
			 " JOIN temp.nsys_cpu c ON c.gtid = r.globalTid",
			 kind, strcmp(bytes, "NULL") ? "CAST(r.bytes AS INTEGER)" : "NULL", comm_id >= 0 ? "" : "NULL + ", comm_id,
			 ORD_MPI + (int)i, peer, bytes, t);
		rc = bulk_exec(b, sql, NULL);
	}
	return rc;
}

/* ---- device activity ---- */

/* Kernels: events on their device stream's lane (a communication kernel's is a collective), their
 * arguments, and the launch links (the runtime call with the same correlationId), each a pass over
 * the table alone: the names by nsys_name and nsys_comm, the lanes by nsys_row (the events'
 * insert, which counts the rows) and nsys_lane, the launches by nsys_corr_*. */
static int bulk_kernels(struct bulk *b)
{
	static const char *const need[] = { "start", "end", "deviceId", "streamId", "globalPid", "demangledName", NULL };
	struct sqlsrc *n = b->n;
	const char *t = "CUPTI_ACTIVITY_KIND_KERNEL";
	int rc = 0;
	if (!sqlsrc_use_table(n, t, need, &rc))
		return rc;   /* absent: no kernels; a column missing: the error */
	const char *corr = sqlsrc_has_column(n, t, "correlationId") ? "k.correlationId" : "NULL";
	/* the names: demangled, else short (the demangled one again when shortName is absent) */
	const char *shortc = sqlsrc_has_column(n, t, "shortName") ? "shortName" : "demangledName";
	char names[100], where[200], reason[600], sql[4096], cols[600];
	snprintf(names, sizeof names, "k.demangledName, k.%s", shortc);
	snprintf(where, sizeof where, " FROM " SRC ".%s k WHERE " PID_OF("k.globalPid") " = ?3", t);
	/* a kernel without a name is possible only when some demangledName does not resolve */
	int unnamed = (b->unnamed & (1u << U_KERNEL)) != 0;
	snprintf(reason, sizeof reason, T_REASON("k") " WHEN NOT " DEV_OK("k") " THEN 3%s%s%s ELSE 0 END",
		 unnamed ? " WHEN nsys_name(" : "", unnamed ? names : "", unnamed ? ") IS NULL THEN 4" : "");
	/* a communication kernel among the rows kept: a collective of the default group (the first
	 * one found ends the search) */
	int64_t has_comm = 0;
	if (b->kernel_comm) {
		snprintf(sql, sizeof sql, "SELECT 1%s AND " T_OK("k") " AND " DEV_OK("k") " AND nsys_comm(%s) LIMIT 1", where, names);
		rc = imp_query(n->im, sql, b->bind, 4, found_row, &has_comm, NULL);
		if (!rc && has_comm)
			rc = imp_comm_id(n->im, NULL, &b->bind[3].i);
		if (rc)
			return rc;
	}
	if (has_comm)
		snprintf(cols, sizeof cols,
			 "CASE WHEN nsys_comm(%s) THEN %d ELSE %d END, nsys_name(%s), CASE WHEN nsys_comm(%s) THEN 0 END,"
			 " CASE WHEN nsys_comm(%s) THEN ?4 END",
			 names, DB_KIND_COMM, DB_KIND_KERNEL, names, names, names);
	else   /* no communication kernel: one kind */
		snprintf(cols, sizeof cols, "%d, nsys_name(%s), NULL, NULL", DB_KIND_KERNEL, names);
	struct rowacc a = { .table = t, .device = 1, .lane_reasons = 1u << R_OK | 1u << R_NAME };
	snprintf(sql, sizeof sql,
		 "INSERT OR IGNORE INTO main.event(rank, start_ns, tid, kind, name_id, bytes, comm_id, dur_ns, ord)"
		 " SELECT ?1, k.start - ?2, nsys_row(%s, k.deviceId, k.streamId, k.start, k.end, %s), %s, k.end - k.start, "
		 ORD("k.rowid", "%d") "%s",
		 reason, corr, cols, ORD_KERNEL, where);
	rc = bulk_insert_counted(b, &a, sql);
	/* the arguments and the links of the rows kept: a row without a lane or a name is dropped by
	 * the NOT NULL of arg.tid / arg.name_id and flow.src_tid / flow.dst_tid */
	if (!rc) {
		snprintf(sql, sizeof sql,
			 "INSERT OR IGNORE INTO main.arg(rank, tid, start_ns, kind, name_id, dur_ns, ord, args)"
			 " SELECT ?1, nsys_lane(k.deviceId, k.streamId), k.start - ?2, %.*s, k.end - k.start, " ORD("k.rowid", "%d") ","
			 " nsys_kernel_args(k.%s, %s, %s, %s, %s, %s, %s, %s, %s)%s AND " T_OK("k"),
			 (int)(strstr(cols, has_comm ? ", CASE WHEN" : ", NULL") - cols), cols, ORD_KERNEL, shortc,
			 sqlsrc_col_or_null(n, t, "gridX"), sqlsrc_col_or_null(n, t, "gridY"), sqlsrc_col_or_null(n, t, "gridZ"),
			 sqlsrc_col_or_null(n, t, "blockX"), sqlsrc_col_or_null(n, t, "blockY"), sqlsrc_col_or_null(n, t, "blockZ"),
			 sqlsrc_col_or_null(n, t, "registersPerThread"), corr, where);
		rc = bulk_exec(b, sql, NULL);
	}
	if (!rc && strcmp(corr, "NULL")) {
		int64_t links = 0;
		snprintf(sql, sizeof sql,
			 "INSERT OR IGNORE INTO main.flow(rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns)"
			 " SELECT ?1, %d, k.correlationId, nsys_corr_tid(k.correlationId), nsys_corr_ns(k.correlationId),"
			 " nsys_lane(k.deviceId, k.streamId), k.start - ?2%s AND " T_OK("k") "%s%s%s",
			 DB_FLOW_LAUNCH, where, unnamed ? " AND nsys_name(" : "", unnamed ? names : "", unnamed ? ") IS NOT NULL" : "");
		if ((rc = bulk_exec(b, sql, &links)) == 0)
			b->unpaired -= links;
	}
	return rc;
}

/* Copies and memsets: events on their device stream's lane (named by copyKind / "Memset"), and
 * the launch links. */
static int bulk_device(struct bulk *b)
{
	static const char *const need[] = { "start", "end", "deviceId", "streamId", "globalPid", "bytes", NULL };
	struct sqlsrc *n = b->n;
	char sql[4096];
	int rc = 0;
	for (int i = 0; i < 2 && !rc; i++) {
		static const char *const tables[] = { "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET" };
		const char *t = tables[i];
		if (!sqlsrc_use_table(n, t, need, &rc)) {
			if (rc)
				return rc;   /* a column missing */
			continue;
		}
		const char *corr = sqlsrc_has_column(n, t, "correlationId") ? "k.correlationId" : "NULL";
		char where[600];
		int64_t kinds_id[COPY_KINDS];
		int memcpy_t = i == 0;
		const char *copyk = memcpy_t ? sqlsrc_col_or_null(n, t, "copyKind") : "NULL";
		snprintf(where, sizeof where, " WHERE " PID_OF("k.globalPid") " = ?3");
		struct grps g = { 0 };
		char fw[800], ck[200];
		snprintf(fw, sizeof fw, "FROM " SRC ".%s k%s", t, where);
		/* copies: a bit per copyKind (1 to COPY_KINDS − 1, else 0) */
		snprintf(ck, sizeof ck, "1 << CASE WHEN %s BETWEEN 1 AND %d THEN %s ELSE 0 END", copyk, COPY_KINDS - 1, copyk);
		rc = bulk_count(b, t, "k.deviceId, k.streamId", T_OK("k") " AND " DEV_OK("k"),
				T_REASON("k") " WHEN NOT " DEV_OK("k") " THEN 3 ELSE 0 END", fw, "k.rowid", "k.start", "k.end", corr,
				memcpy_t ? ck : "0", memcpy_t, 1, &g);
		/* names: copies by copyKind; memsets one */
		char kindsql[1200] = "";
		if (!rc && memcpy_t) {
			int64_t other = -1;
			size_t used = (size_t)snprintf(kindsql, sizeof kindsql, "CASE k.copyKind");
			for (int j = 0; j < COPY_KINDS; j++)
				kinds_id[j] = -1;
			for (int j = 0; j < g.n && !rc; j++) {
				if (g.v[j].reason != R_OK)
					continue;
				for (int slot = 0; slot < COPY_KINDS && !rc; slot++)   /* the copy kinds kept, in kind order */
					if ((g.v[j].flag >> slot & 1) && kinds_id[slot] < 0 &&
					    (rc = imp_intern(n->im, COPY_KIND_NAME[slot], &kinds_id[slot])) == 0 && slot)
						used += (size_t)snprintf(kindsql + used, sizeof kindsql - used, " WHEN %d THEN %" PRId64,
									 slot, kinds_id[slot]);
			}
			other = kinds_id[0];
			snprintf(kindsql + used, sizeof kindsql - used, " ELSE %" PRId64 " END", other);
			/* no WHEN (no copy kept, or only unknown kinds): SQL has no CASE without one */
			if (!strcmp(copyk, "NULL") || !strstr(kindsql, " WHEN "))
				snprintf(kindsql, sizeof kindsql, "%" PRId64, other);
		} else if (!rc) {
			int64_t id = 0, kept = 0;
			for (int j = 0; j < g.n; j++)
				kept += g.v[j].reason == R_OK;
			if (kept)   /* the name only when a memset is kept */
				rc = imp_intern(n->im, "Memset", &id);
			snprintf(kindsql, sizeof kindsql, "%" PRId64, id);
		}
		grps_free(&g);
		if (rc)
			break;
		/* bytes (0 when unknown or negative) are not stored for their kinds */
		char from[1200];
		snprintf(from, sizeof from, "FROM " SRC ".%s k JOIN temp.nsys_dev l ON l.dev = k.deviceId AND l.stream = k.streamId%s"
			 " AND " T_OK("k"), t, where);
		snprintf(sql, sizeof sql,
			 "INSERT OR IGNORE INTO main.event(rank, start_ns, tid, kind, name_id, dur_ns, ord)"
			 " SELECT ?1, k.start - ?2, l.tid, %d, %s, k.end - k.start, " ORD("k.rowid", "%d") " %s",
			 memcpy_t ? DB_KIND_MEMCPY : DB_KIND_MEMSET, kindsql, memcpy_t ? ORD_MEMCPY : ORD_MEMSET, from);
		rc = bulk_exec(b, sql, NULL);
		if (!rc && strcmp(corr, "NULL")) {
			int64_t links = 0;
			snprintf(sql, sizeof sql,
				 "INSERT OR IGNORE INTO main.flow(rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns)"
				 " SELECT ?1, %d, k.correlationId, nsys_corr_tid(k.correlationId), nsys_corr_ns(k.correlationId), l.tid,"
				 " k.start - ?2 %s",
				 DB_FLOW_LAUNCH, from);
			if ((rc = bulk_exec(b, sql, &links)) == 0)
				b->unpaired -= links;
		}
	}
	return rc;
}

/* ---- NVTX ---- */

/* MPI calls that are one collective of the communicator / a transfer with one peer */
static int mpi_kind(const char *name)
{
	static const char *const coll[] = { "MPI_Allreduce", "MPI_Iallreduce", "MPI_Bcast", "MPI_Ibcast", "MPI_Reduce",
					    "MPI_Ireduce", "MPI_Allgather", "MPI_Iallgather", "MPI_Allgatherv",
					    "MPI_Alltoall", "MPI_Ialltoall", "MPI_Alltoallv", "MPI_Barrier",
					    "MPI_Ibarrier", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
					    "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Scan",
					    "MPI_Exscan", NULL };
	static const char *const p2p[] = { "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Ssend", "MPI_Bsend",
					   "MPI_Rsend", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Issend", NULL };
	for (int i = 0; coll[i]; i++)
		if (!strcmp(name, coll[i]))
			return DB_KIND_COMM;
	for (int i = 0; p2p[i]; i++)
		if (!strcmp(name, p2p[i]))
			return DB_KIND_P2P;
	return -1;
}

/* A step number from a range name the step regex matched: the first run of digits in it. */
static int64_t step_number(const char *name, const regmatch_t *m)
{
	const char *p = name + m[0].rm_so, *end = name + m[0].rm_eo;
	for (; p < end; p++)
		if (*p >= '0' && *p <= '9')
			return strtoll(p, NULL, 10);
	return -1;
}

/* What a range of this name and domain is: a step (its number), an MPI call or NCCL operation
 * (a collective or a point-to-point transfer), else a plain range. */
static int nvtx_class(struct sqlsrc *n, const char *name, const char *domain, int64_t *step)
{
	regmatch_t m[1];
	int mk;
	*step = -1;
	if (n->has_step_re && regexec(&n->step_re, name, 1, m, 0) == 0 && (*step = step_number(name, m)) >= 0)
		return DB_KIND_STEP;
	if ((mk = mpi_kind(name)) >= 0)
		return mk;
	if (domain && !strcasecmp(domain, "NCCL") && strncmp(name, "ncclGroup", 9) && strncmp(name, "ncclComm", 8))
		return strstr(name, "Send") || strstr(name, "Recv") ? DB_KIND_P2P : DB_KIND_COMM;
	return DB_KIND_RANGE;
}

static uint64_t nvtx_key_hash(const struct grp *x)
{
	uint64_t h = 1469598103934665603ull;   /* FNV-1a over the name, a separator, the domain */
	for (const char *p = x->name; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	h = (h ^ (x->domain ? 1u : 2u)) * 1099511628211ull;
	for (const char *p = x->domain ? x->domain : ""; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	return h;
}

/* Whether v[i] is the first group of its (name, domain): the table `seen` (cap slots, a power of
 * two above twice the groups, −1 empty) holds the indices of the first ones met, and takes v[i]'s
 * when it is. */
static int nvtx_first_of_name(int *seen, size_t cap, const struct grp *v, int i)
{
	const struct grp *x = &v[i];
	for (size_t k = (size_t)(nvtx_key_hash(x) >> 17) & (cap - 1);; k = (k + 1) & (cap - 1)) {
		if (seen[k] < 0) {
			seen[k] = i;
			return 1;
		}
		const struct grp *y = &v[seen[k]];
		if (!strcmp(y->name, x->name) && (y->domain ? x->domain && !strcmp(y->domain, x->domain) : !x->domain))
			return 0;
	}
}

/* Push/pop and start/end ranges (eventType 59, 60, 70, 71): each distinct (name, domain) is
 * classified once (temp.nsys_nvtx), the rows inserted joined with it. */
static int bulk_nvtx(struct bulk *b)
{
	struct sqlsrc *n = b->n;
	const char *t = "NVTX_EVENTS";
	static const char *const need[] = { "start", "end", "eventType", "globalTid", NULL };
	int rc = 0;
	if (!sqlsrc_use_table(n, t, need, &rc))
		return rc;   /* absent: no such events; a column missing: the error */
	int has_text_id = sqlsrc_has_column(n, t, "textId"), has_text = sqlsrc_has_column(n, t, "text");
	/* a range's domain: the text of its domain's creation row (eventType 75) */
	int has_domain = sqlsrc_has_column(n, t, "domainId") && has_text;
	char joins[800], where[200], name[200], sql[3000];
	snprintf(name, sizeof name, "COALESCE(%s, %s)", has_text_id ? "s.value" : "NULL", has_text ? "e.text" : "NULL");
	snprintf(joins, sizeof joins, "%s%s",
		 has_text_id ? " LEFT JOIN " SRC ".StringIds s ON s.id = e.textId" : "",
		 has_domain ? " LEFT JOIN (SELECT domainId, min(text) AS name FROM " SRC ".NVTX_EVENTS WHERE eventType = 75 AND "
			      PID_OF("globalTid") " = ?3 GROUP BY domainId) d ON d.domainId = e.domainId"
			    : "");
	snprintf(where, sizeof where, " WHERE " PID_OF("e.globalTid") " = ?3 AND e.eventType IN (59, 60, 70, 71)");
	snprintf(sql, sizeof sql,
		 "SELECT e.globalTid, 0, " T_REASON("e") " WHEN %s IS NULL OR %s = '' THEN 4 ELSE 0 END, min(e.rowid), count(*),"
		 " min(e.start), max(e.end), 0, 0, %s, %s FROM " SRC ".NVTX_EVENTS e%s%s GROUP BY 1, 3, 10, 11",
		 name, name, name, has_domain ? "d.name" : "NULL", joins, where);
	struct grps g = { 0 };
	rc = bulk_scan(b, t, sql, 0, 1u << R_OK, &g);
	/* the classes */
	struct sqlbuf v = { 0 };
	static const char HEAD[] = "INSERT INTO temp.nsys_nvtx VALUES ";
	/* one row per (name, domain): a name is grouped per thread too; the groups already classified
	 * by their (name, domain), in a hash table of indices into g.v (PyTorch's emit_nvtx gives every
	 * range a name of its own: a search of the earlier groups would be quadratic) */
	size_t hcap = 16;
	while (hcap < 2 * (size_t)g.n)
		hcap *= 2;
	int *seen = rc ? NULL : malloc(hcap * sizeof *seen);
	if (!rc && !seen)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (size_t i = 0; seen && i < hcap; i++)
		seen[i] = -1;
	for (int i = 0; i < g.n && !rc; i++) {
		struct grp *x = &g.v[i];
		if (x->reason != R_OK || !x->name)
			continue;
		if (!nvtx_first_of_name(seen, hcap, g.v, i))
			continue;
		int64_t step, id, comm_id = -1;
		int kind = nvtx_class(n, x->name, x->domain, &step);
		rc = imp_intern(n->im, x->name, &id);
		if (!rc && kind == DB_KIND_COMM)
			rc = imp_comm_id(n->im, NULL, &comm_id);
		if (!rc)
			rc = sb_row(n, &v, HEAD);
		if (!rc)
			rc = sb_add(&v, "(");
		if (!rc)
			rc = sb_quote(&v, x->name);
		if (!rc)
			rc = sb_add(&v, ", ");
		if (!rc)
			rc = sb_quote(&v, x->domain);
		if (!rc) {
			int comm = db_kind_has_comm(kind);
			rc = sb_add(&v, ", %d, %s%" PRId64 ", %" PRId64 ", %s, %s%" PRId64 ")", kind, step >= 0 ? "" : "NULL + ",
				    step, id, comm ? "0" : "NULL", comm_id >= 0 ? "" : "NULL + ", comm_id);
		}
	}
	free(seen);
	grps_free(&g);
	if (!rc)
		rc = sb_flush(n, &v, HEAD, 1);
	free(v.s);
	if (!rc) {
		snprintf(sql, sizeof sql,
			 "INSERT OR IGNORE INTO main.event(rank, start_ns, tid, kind, name_id, dur_ns, step, bytes, comm_id, ord)"
			 " SELECT ?1, e.start - ?2, c.tid, v.kind, v.name_id, e.end - e.start, v.step, v.bytes, v.comm_id, "
			 ORD("e.rowid", "%d")
			 " FROM " SRC ".NVTX_EVENTS e%s JOIN temp.nsys_nvtx v ON v.name = %s AND v.domain IS %s"
			 " JOIN temp.nsys_cpu c ON c.gtid = e.globalTid%s AND " T_OK("e"),
			 ORD_NVTX, joins, name, has_domain ? "d.name" : "NULL", where);
		rc = bulk_exec(b, sql, NULL);
	}
	return rc;
}

static const char BULK_SETUP[] =
	"CREATE TEMP TABLE IF NOT EXISTS nsys_str(src INTEGER PRIMARY KEY, id INTEGER NOT NULL, comm INTEGER NOT NULL, js TEXT);"
	"CREATE TEMP TABLE IF NOT EXISTS nsys_cpu(gtid INTEGER PRIMARY KEY, tid INTEGER NOT NULL);"
	"CREATE TEMP TABLE IF NOT EXISTS nsys_dev(dev INTEGER, stream INTEGER, tid INTEGER NOT NULL, PRIMARY KEY(dev, stream));"
	"CREATE TEMP TABLE IF NOT EXISTS nsys_found(k1 INTEGER, k2 INTEGER, first INTEGER, PRIMARY KEY(k1, k2));"
	"CREATE TEMP TABLE IF NOT EXISTS nsys_nvtx(name TEXT NOT NULL, domain TEXT, kind INTEGER NOT NULL, step INTEGER,"
	" name_id INTEGER NOT NULL, bytes INTEGER, comm_id INTEGER);"
	"CREATE INDEX IF NOT EXISTS temp.nsys_nvtx_k ON nsys_nvtx(name, domain);"
	"DELETE FROM temp.nsys_str; DELETE FROM temp.nsys_cpu; DELETE FROM temp.nsys_dev;"
	"DELETE FROM temp.nsys_nvtx;";

/* One process of the export into the current rank. */
static int read_process(struct sqlsrc *n, int64_t pid)
{
	struct corrmap corr = { 0 };
	struct strmap strs = { 0 };
	struct bulk b = { .n = n, .pid = pid, .corr = &corr, .strs = &strs };
	b.bind[0].i = imp_rank_current(n->im);
	b.bind[1].i = imp_origin(n->im);
	b.bind[2].i = pid;
	b.bind[3].i = -1;
	int rc = imp_query(n->im, BULK_SETUP, NULL, 0, NULL, NULL, NULL);
	if (!rc)
		rc = imp_function(n->im, "nsys_corr_tid", 1, nsys_corr_tid_fn, &corr);
	if (!rc)
		rc = imp_function(n->im, "nsys_corr_ns", 1, nsys_corr_ns_fn, &corr);
	if (!rc)
		rc = imp_function(n->im, "nsys_name", -1, nsys_name_fn, &strs);
	if (!rc)
		rc = imp_function(n->im, "nsys_comm", -1, nsys_comm_fn, &strs);
	if (!rc)
		rc = imp_function(n->im, "nsys_kernel_args", 9, nsys_kernel_args_fn, &strs);
	if (!rc)
		rc = imp_function(n->im, "nsys_lane", 2, nsys_lane_fn, &b);
	if (!rc)
		rc = bulk_strings(&b);
	if (!rc)
		rc = bulk_cpu(&b);
	if (!rc)
		rc = bulk_nvtx(&b);
	if (!rc)
		rc = bulk_mpi(&b);
	if (!rc)
		rc = bulk_kernels(&b);
	if (!rc)
		rc = bulk_device(&b);
	/* the functions go with the maps they read */
	static const struct {
		const char *name;
		int nargs;
	} fns[] = { { "nsys_corr_tid", 1 }, { "nsys_corr_ns", 1 }, { "nsys_name", -1 }, { "nsys_comm", -1 },
		    { "nsys_kernel_args", 9 }, { "nsys_lane", 2 } };
	for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
		int rc2 = imp_function(n->im, fns[i].name, fns[i].nargs, NULL, NULL);
		if (!rc)
			rc = rc2;
	}
	free(corr.v);
	strmap_free(&strs);
	free(b.lanes.s);
	if (rc == ASCENT_EINPUT && (strncmp(ascent_errmsg(), "'", 1) || strncmp(ascent_errmsg() + 1, n->path, strlen(n->path))))
		rc = ascent_error_ctx(rc, "'%s'", n->path);   /* a damaged export read by a query: name it (once) */
	/* device work whose launch is not in the export: counted as the sink counts unpaired ends */
	for (int64_t k = 0; !rc && k < b.unpaired; k++)
		imp_warn(n->im, IMP_W_NO_LAUNCH, "a correlationId of no CUPTI_ACTIVITY_KIND_RUNTIME row");
	return rc;
}

/* ---- memory ---- */

/* The running sum of one device's records (rows come device by device, each in time order). */
struct mem_sum {
	int64_t device, in_use;
};

/* columns: start, bytes, deviceId, memoryOperationType (0 allocation, 1 free) */
static int mem_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	struct mem_sum *m = arg;
	int64_t dev = sqlite3_column_int64(st, 2);
	if (dev != m->device)
		*m = (struct mem_sum){ .device = dev, .in_use = 0 };
	int64_t *in_use = &m->in_use;
	int64_t ts = sqlite3_column_int64(st, 0), bytes = sqlite3_column_int64(st, 1);
	if (ts < 0 || bytes < 0 || bytes > INT64_MAX / 4) {
		sqlsrc_warn_row(n, IMP_W_BAD_TIME, "CUDA_GPU_MEMORY_USAGE_EVENTS");
		return 0;
	}
	if (sqlite3_column_int64(st, 3) == 1)
		bytes = -bytes;
	if ((bytes > 0 && *in_use > INT64_MAX / 2) || (bytes < 0 && *in_use < INT64_MIN / 2)) {
		sqlsrc_warn_row(n, IMP_W_BAD_TIME, "CUDA_GPU_MEMORY_USAGE_EVENTS");
		return 0;
	}
	*in_use += bytes;
	return imp_mem(n->im, ts, bytes, *in_use, dev >= 0 && dev < 4096 ? (int)dev : -1);
}

static int read_memory(struct sqlsrc *n, int64_t pid)
{
	const char *t = "CUDA_GPU_MEMORY_USAGE_EVENTS";
	static const char *const need[] = { "start", "globalPid", "deviceId", "bytes", "memoryOperationType", NULL };
	int rc = 0;
	if (!sqlsrc_use_table(n, t, need, &rc))
		return rc;   /* absent: no such events; a column missing: the error */
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT start, bytes, deviceId, memoryOperationType FROM %s WHERE " PID_OF("globalPid") " = ?1 "
		 "ORDER BY deviceId, start",
		 t);
	struct mem_sum m = { .device = INT64_MIN };
	return sqlsrc_each_row(n, t, sql, pid, mem_row, &m);
}

/* ---- lane names ---- */

static int name_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	(void)arg;
	int tid = imp_lane_lookup(n->im, (uint64_t)sqlite3_column_int64(st, 0) & ~(1ULL << 63), NULL);
	const char *name = sqlsrc_text(st, 1);
	return tid >= 0 && name && *name ? imp_lane_name(n->im, tid, name) : 0;
}

static int gpu_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	int64_t pid = *(int64_t *)arg;
	int tid = imp_lane_lookup(n->im, device_key(pid, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)), NULL);
	const char *gpu = sqlsrc_text(st, 2);
	if (tid < 0)
		return 0;
	char name[200];
	snprintf(name, sizeof name, "gpu %lld stream %lld%s%s%s", (long long)sqlite3_column_int64(st, 0),
		 (long long)sqlite3_column_int64(st, 1), gpu && *gpu ? " (" : "", gpu && *gpu ? gpu : "", gpu && *gpu ? ")" : "");
	return imp_lane_name(n->im, tid, name);
}

static int name_lanes(struct sqlsrc *n, int64_t pid)
{
	int rc = 0;
	if (sqlsrc_has_table(n, "ThreadNames") && sqlsrc_has_column(n, "ThreadNames", "globalTid") &&
	    sqlsrc_has_column(n, "ThreadNames", "nameId"))
		rc = sqlsrc_each_row(n, "ThreadNames",
			      "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
			      "WHERE " PID_OF("t.globalTid") " = ?1",
			      pid, name_row, NULL);
	/* device lanes: "gpu D stream S (the GPU's name)" */
	const char *t = "CUPTI_ACTIVITY_KIND_KERNEL";
	if (!rc && sqlsrc_has_table(n, t) && sqlsrc_has_table(n, "TARGET_INFO_GPU") && sqlsrc_has_column(n, "TARGET_INFO_GPU", "name") &&
	    sqlsrc_has_column(n, "TARGET_INFO_GPU", "id")) {
		char sql[1024];
		size_t used = 0;
		static const char *const devt[] = { "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
						    "CUPTI_ACTIVITY_KIND_MEMSET" };
		char u[600] = "";
		for (int i = 0; i < 3; i++)
			if (sqlsrc_has_table(n, devt[i]))
				used += (size_t)snprintf(u + used, sizeof u - used,
							 "%sSELECT deviceId, streamId FROM %s WHERE " PID_OF("globalPid") " = ?1",
							 used ? " UNION " : "", devt[i]);
		snprintf(sql, sizeof sql,
			 "SELECT l.deviceId, l.streamId, (SELECT name FROM TARGET_INFO_GPU g WHERE g.id = l.deviceId LIMIT 1) "
			 "FROM (%s) l",
			 u);
		rc = sqlsrc_each_row(n, "TARGET_INFO_GPU", sql, pid, gpu_row, &pid);
	}
	return rc;
}

/* ---- the file ---- */

/* The processes with events, in pid order, and each one's MPI rank: from Nsight's MPI_RANKS table
 * (written with --trace=mpi), else an NVTX marker or a thread name "MPI Rank N" (−1 none). */
struct proc {
	int64_t pid;
	int rank;
};

static int proc_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	(void)n;
	struct proc **pp = arg;
	size_t k = 0;
	while ((*pp)[k].pid >= 0)
		k++;
	struct proc *p2 = realloc(*pp, (k + 2) * sizeof *p2);
	if (!p2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	*pp = p2;
	p2[k] = (struct proc){ .pid = sqlite3_column_int64(st, 0), .rank = -1 };
	const char *mark = sqlsrc_text(st, 1);
	if (!sqlsrc_is_null(st, 2)) {   /* MPI_RANKS */
		int64_t v = sqlite3_column_int64(st, 2);
		if (v >= 0 && v < 1000000) {
			p2[k].rank = (int)v;
			mark = NULL;
		}
	}
	const char *r = mark ? strstr(mark, "MPI Rank ") : NULL;
	if (r) {
		long v = strtol(r + 9, NULL, 10);
		if (v >= 0 && v < 1000000)
			p2[k].rank = (int)v;
	}
	p2[k + 1].pid = -1;
	return 0;
}

/* The pids of the processes with rows, as the tables name them (their globalTid or globalPid >> 24):
 * collected by nsys_pid() during read_file's one pass per table. */
struct pidset {
	int64_t *v;
	int n, cap;
	int has_null;   /* a row without one: the pid NULL, as SELECT DISTINCT gave it */
};

static void nsys_pid_fn(sqlite3_context *ctx, int argc, sqlite3_value **v)
{
	struct pidset *p = sqlite3_user_data(ctx);
	(void)argc;
	sqlite3_result_int(ctx, 1);
	if (sqlite3_value_type(v[0]) == SQLITE_NULL) {
		p->has_null = 1;
		return;
	}
	int64_t pid = (int64_t)((uint64_t)sqlite3_value_int64(v[0]) >> 24 & 16777215);   /* as PID_OF() */
	for (int i = p->n - 1; i >= 0; i--)
		if (p->v[i] == pid)
			return;
	if (p->n == p->cap) {
		int nc = p->cap ? p->cap * 2 : 16;
		int64_t *v2 = realloc(p->v, (size_t)nc * sizeof *v2);
		if (!v2) {
			sqlite3_result_error_nomem(ctx);
			return;
		}
		p->v = v2;
		p->cap = nc;
	}
	p->v[p->n++] = pid;
}

static int list_processes(struct sqlsrc *n, struct pidset *pids, struct proc **out)
{
	*out = malloc(sizeof **out);
	if (!*out)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	(*out)[0].pid = -1;
	if (!pids->n && !pids->has_null)
		return 0;
	if (pids->n > 1)
		qsort(pids->v, (size_t)pids->n, sizeof *pids->v, stats_cmp_i64);
	struct sqlbuf u = { 0 };
	int rc = sb_add(&u, "SELECT column1 AS pid FROM (VALUES %s", pids->has_null ? "(NULL)" : "");
	for (int i = 0; i < pids->n && !rc; i++)
		rc = sb_add(&u, "%s(%" PRId64 ")", i || pids->has_null ? ", " : "", pids->v[i]);
	if (!rc)
		rc = sb_add(&u, ")");
	char marks[1024] = "NULL";
	if (sqlsrc_has_table(n, "ThreadNames") && sqlsrc_has_column(n, "ThreadNames", "nameId"))
		snprintf(marks, sizeof marks,
			 "(SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId WHERE " PID_OF("t.globalTid")
			 " = p.pid AND s.value LIKE 'MPI Rank %%' LIMIT 1)");
	if (sqlsrc_has_table(n, "NVTX_EVENTS") && sqlsrc_has_column(n, "NVTX_EVENTS", "text")) {
		char m2[1024];
		snprintf(m2, sizeof m2,
			 "COALESCE((SELECT text FROM NVTX_EVENTS e WHERE " PID_OF("e.globalTid")
			 " = p.pid AND text LIKE 'MPI Rank %%' LIMIT 1), %s)",
			 marks);
		snprintf(marks, sizeof marks, "%s", m2);
	}
	/* Nsight's MPI trace: the rank of each thread that made MPI calls */
	const char *mpi_rank = sqlsrc_has_table(n, "MPI_RANKS") && sqlsrc_has_column(n, "MPI_RANKS", "globalTid") &&
				       sqlsrc_has_column(n, "MPI_RANKS", "rank")
				       ? "(SELECT m.rank FROM MPI_RANKS m WHERE " PID_OF("m.globalTid") " = p.pid AND m.rank IS NOT NULL"
					 " ORDER BY m.rowid LIMIT 1)"
				       : "NULL";
	struct sqlbuf q = { 0 };
	if (!rc)
		rc = sb_add(&q, "SELECT p.pid, %s, %s FROM (%s) p ORDER BY p.pid", marks, mpi_rank, u.s);
	free(u.s);
	if (!rc)
		rc = sqlsrc_each_row(n, "(processes)", q.s, -1, proc_row, out);
	free(q.s);
	return rc;
}

static int read_file(struct sqlsrc *n)
{
	/* an export: StringIds, and the export's own metadata table under either of its names */
	int rc = sqlsrc_query_i64(n, "sqlite_master", "SELECT count(*) FROM sqlite_master", &(int64_t){ 0 });
	if (rc)
		return ascent_error(ASCENT_EINPUT, "'%s' is not an SQLite database (%s): give an `nsys export --type sqlite` file",
				    n->path, sqlite3_errmsg(n->db));
	if (!sqlsrc_has_table(n, "StringIds") ||
	    !(sqlsrc_has_table(n, "EXPORT_META_DATA") || sqlsrc_has_table(n, "META_DATA_EXPORT") || sqlsrc_has_table(n, "TARGET_INFO_SESSION_START_TIME")))
		return ascent_error(ASCENT_EINPUT,
				    "'%s' is an SQLite database but not an Nsight Systems export (no StringIds and "
				    "EXPORT_META_DATA tables): give an `nsys export --type sqlite` file",
				    n->path);
	if (!sqlsrc_has_column(n, "StringIds", "id") || !sqlsrc_has_column(n, "StringIds", "value"))
		return ascent_error(ASCENT_EINPUT, "'%s': table StringIds has no id or value column", n->path);
	int64_t base = 0;
	if (sqlsrc_has_table(n, "TARGET_INFO_SESSION_START_TIME") && sqlsrc_has_column(n, "TARGET_INFO_SESSION_START_TIME", "utcEpochNs") &&
	    (rc = sqlsrc_query_i64(n, "TARGET_INFO_SESSION_START_TIME", "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
			    &base)) != 0)
		return rc;
	if (base < 0)
		base = 0;
	/* the origin: the earliest start of any table read */
	static const char *const timed[] = { "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
					     "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
					     "NVTX_EVENTS", "OSRT_API", "CUDA_GPU_MEMORY_USAGE_EVENTS", "MPI_P2P_EVENTS",
					     "MPI_COLLECTIVES_EVENTS", "MPI_START_WAIT_EVENTS", "MPI_OTHER_EVENTS" };
	/* and its processes: one pass per table (nsys_pid collects them) */
	static const char *const pidcol[] = { "globalTid", "globalPid", "globalPid", "globalPid", "globalTid", "globalTid",
					      "globalPid", "globalTid", "globalTid", "globalTid", "globalTid" };
	struct pidset pids = { 0 };
	if (!rc && sqlite3_create_function_v2(n->db, "nsys_pid", 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, &pids, nsys_pid_fn, NULL, NULL,
					      NULL) != SQLITE_OK)
		rc = sqlsrc_fail(n, "(processes)", sqlite3_errcode(n->db));
	n->origin = INT64_MAX;
	for (size_t i = 0; i < sizeof timed / sizeof *timed && !rc; i++) {
		if (!sqlsrc_has_table(n, timed[i]))
			continue;
		int has_start = sqlsrc_has_column(n, timed[i], "start"), has_pid = sqlsrc_has_column(n, timed[i], pidcol[i]);
		if (!has_start && !has_pid)
			continue;
		char sql[300];
		int64_t v = INT64_MAX;
		snprintf(sql, sizeof sql, "SELECT %s, %s%s%s FROM %s", has_start ? "min(start) FILTER (WHERE typeof(start) = 'integer' AND start >= 0)" : "NULL",
			 has_pid ? "sum(nsys_pid(" : "0", has_pid ? pidcol[i] : "", has_pid ? "))" : "", timed[i]);
		rc = sqlsrc_query_i64(n, timed[i], sql, &v);
		if (v < n->origin)
			n->origin = v;
		int64_t count = 0;
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", timed[i]);
		if (!rc && has_start && (rc = sqlsrc_query_i64(n, timed[i], sql, &count)) == 0)
			n->total_rows += count;
	}
	sqlite3_create_function_v2(n->db, "nsys_pid", 1, SQLITE_UTF8, NULL, NULL, NULL, NULL, NULL);
	if (n->origin == INT64_MAX)
		n->origin = 0;
	char host[256] = "";
	if (!rc && sqlsrc_has_table(n, "TARGET_INFO_SYSTEM_ENV") && sqlsrc_has_column(n, "TARGET_INFO_SYSTEM_ENV", "name") &&
	    sqlsrc_has_column(n, "TARGET_INFO_SYSTEM_ENV", "value")) {
		rc = sqlsrc_query_text(n, "TARGET_INFO_SYSTEM_ENV",
				       "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1", host, sizeof host);
	}
	struct proc *procs = NULL;
	if (!rc)
		rc = list_processes(n, &pids, &procs);
	free(pids.v);
	int nprocs = 0;
	while (!rc && procs[nprocs].pid >= 0)
		nprocs++;
	if (!rc && imp_rank_forced(n->im) >= 0 && nprocs > 1)
		rc = ascent_error(ASCENT_EUSAGE, "'%s' holds %d processes (ranks): --rank sets the rank of a file of one",
				  n->path, nprocs);
	for (int i = 0; i < nprocs && !rc; i++) {
		int rank = imp_rank_forced(n->im) >= 0 ? imp_rank_forced(n->im)
			   : procs[i].rank >= 0	    ? procs[i].rank
			   : nprocs == 1	    ? imp_rank_default(n->im, n->path)
						    : i;
		int64_t pid = procs[i].pid;
		if ((rc = imp_rank_begin(n->im, rank, n->origin)) == 0)
			imp_rank_pid(n->im, pid);
		if (!rc && (rc = read_process(n, pid)) == 0 &&
		    (rc = read_memory(n, pid)) == 0)
			rc = name_lanes(n, pid);
	}
	free(procs);
	if (!rc) {
		struct imp_file_facts f = { .base_ns = base, .host = host, .source = "nsight systems (sqlite export)" };
		rc = imp_file_end(n->im, &f);
	}
	return rc;
}

int imp_read_nsys(struct imp *im, const char *path, const char *step_regex)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': %s", path, strerror(errno));
	struct sqlsrc n = { .im = im, .path = path };
	const char *re = step_regex && *step_regex ? step_regex : IMP_STEP_RANGE_DEFAULT;
	int e = regcomp(&n.step_re, re, REG_EXTENDED | REG_ICASE);
	if (e) {
		char b[200];
		regerror(e, &n.step_re, b, sizeof b);
		return ascent_error(ASCENT_EUSAGE, "--step-range '%s': %s", re, b);
	}
	n.has_step_re = 1;
	n.size = (int64_t)sb.st_size;
	int rc = imp_file_begin(im, path, (int64_t)sb.st_size);
	if (!rc)
		rc = sqlsrc_open(&n);
	if (!rc)
		rc = imp_attach(im, path, SRC);
	if (!rc) {
		rc = read_file(&n);
		int rc2 = imp_detach(im, SRC);
		if (!rc)
			rc = rc2;
	}
	return sqlsrc_close(&n, rc);
}
