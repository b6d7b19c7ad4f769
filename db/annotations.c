/* db/annotations.c — imported traces: the GPU user annotations (Kineto's gpu_user_annotation: a
 * user range, record_function or ProfilerStep, as the device ran it, on a lane of its own beside
 * its stream) per rank and name, for `report --by annotations` (docs/device.md). */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

struct ascan {
	struct db_annotation_stat *v;
	int n, cap;
	int64_t cover_end;          /* the union so far of the current (rank, name): its latest end */
};

static int ann_row(void *ud, sqlite3_stmt *s)
{
	struct ascan *x = ud;
	int rank = sqlite3_column_int(s, 0);
	int64_t start = sqlite3_column_int64(s, 1), dur = sqlite3_column_int64(s, 2),
		end = i64_add_sat(start, dur);
	const char *name = (const char *)sqlite3_column_text(s, 3);
	name = name ? name : "";
	struct db_annotation_stat *a = x->n ? &x->v[x->n - 1] : NULL;
	if (!a || a->rank != rank || strcmp(a->name, name)) {
		int rc = ARRAY_GROW(x->v, x->n, x->cap, 32, "reading GPU user annotations");
		if (rc)
			return rc;
		a = &x->v[x->n++];
		*a = (struct db_annotation_stat){ .rank = rank, .min_ns = dur, .max_ns = dur };
		if (!(a->name = strdup(name)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		x->cover_end = INT64_MIN;
	}
	a->count++;
	a->total_ns = i64_add_sat(a->total_ns, dur);
	a->min_ns = dur < a->min_ns ? dur : a->min_ns;
	a->max_ns = dur > a->max_ns ? dur : a->max_ns;
	/* rows come in start order: the union grows by what lies past the latest end so far */
	int64_t from = start > x->cover_end ? start : x->cover_end;
	if (end > from)
		a->span_ns = i64_add_sat(a->span_ns, end - from);
	if (end > x->cover_end)
		x->cover_end = end;
	return 0;
}

static int cmp_ann(const void *p, const void *q)
{
	const struct db_annotation_stat *a = p, *b = q;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->total_ns != b->total_ns)
		return a->total_ns > b->total_ns ? -1 : 1;
	return strcmp(a->name, b->name);
}

int db_annotation_stats(struct db *db, struct db_filter f, struct db_annotation_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (!db_has_table(db, "device_lane"))
		return 0;
	struct ascan x = { 0 };
	/* ranges on the lanes of real streams (not the counter ranges of stream DB_STREAM_COUNTERS),
	 * grouped by (rank, name) in start order; one window per rank at most, so a group is never
	 * split across windows' scans */
	int rc = db_scan_windows(db, f,
				 "SELECT e.rank, e.start_ns, e.dur_ns, s.value FROM event e JOIN device_lane dl ON"
				 " dl.rank = e.rank AND dl.tid = e.tid JOIN string s ON s.id = e.name_id WHERE e.kind = "
				 DB_SQL_KIND_RANGE " AND dl.stream >= 0 AND (?1 < 0 OR e.rank = ?1) AND e.start_ns >= ?2"
				 " AND e.start_ns < ?3 ORDER BY e.rank, s.value, e.start_ns, e.dur_ns",
				 ann_row, &x);
	if (rc) {
		db_annotation_stats_free(x.v, x.n);
		return rc;
	}
	if (x.n)
		qsort(x.v, (size_t)x.n, sizeof *x.v, cmp_ann);
	*out = x.v;
	*n = x.n;
	return 0;
}

void db_annotation_stats_free(struct db_annotation_stat *a, int n)
{
	for (int i = 0; i < n; i++)
		free(a[i].name);
	free(a);
}
