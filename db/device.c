/* db/device.c — what imported traces add to a profile (schema v2): device lanes, event arguments,
 * links between events (launch → kernel, forward → backward), and the reads over them (device
 * lanes, operators by input shape, launch-to-kernel queue delays, the temporal breakdown per device
 * and its streams' idle time, queue length and launch delays, its copies by kind and their
 * bandwidth). A v1 file has none of these tables: every read here answers "nothing" for it. */
#include "db/internal.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

int db_exec_sql(struct db *db, const char *sql)
{
	return db_exec(db, sql);
}

int db_set_bulk(struct db *db)
{
	return db_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; PRAGMA temp_store = FILE;");
}

int db_put_device_lane(struct db *db, int rank, int tid, int device, int stream)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_DEVLANE, &s);
	if (rc)
		return rc;
	db_bind_int(db, s, 1, rank);
	db_bind_int(db, s, 2, tid);
	db_bind_int(db, s, 3, device);
	db_bind_int(db, s, 4, stream);
	return db_step_done(db, s, "cannot insert a device lane into");
}

int db_put_arg(struct db *db, const struct db_event *e, const char *json, size_t len)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_ARG, &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, e->rank);
	db_bind_i64(db, s, 2, e->tid);
	db_bind_i64(db, s, 3, e->start_ns);
	db_bind_i64(db, s, 4, e->kind);
	db_bind_i64(db, s, 5, e->name_id);
	db_bind_i64(db, s, 6, e->dur_ns);
	db_bind_i64(db, s, 7, e->ord);
	db_bind_text_n_static(db, s, 8, json, len);
	rc = db_step_done(db, s, "cannot insert event arguments into");
	db_bind_null(db, s, 8);
	return rc;
}

int db_put_args(struct db *db, const struct db_arg_row *a, size_t n)
{
	size_t i = 0;
	if (n >= DB_ARG_ROWS) {
		sqlite3_stmt *s = NULL;
		int rc = db_stmt(db, S_ARG_MULTI, &s);
		if (rc)
			return rc;
		for (; i + DB_ARG_ROWS <= n; i += DB_ARG_ROWS) {
			for (int r = 0; r < DB_ARG_ROWS; r++) {
				const struct db_arg_row *x = &a[i + (size_t)r];
				int64_t v[7] = { x->e->rank, x->e->tid, x->e->start_ns, x->e->kind, x->e->name_id, x->e->dur_ns,
						 x->e->ord };
				for (int c = 0; c < 7; c++)
					db_bind_i64(db, s, r * 8 + c + 1, v[c]);
				db_bind_text_n_static(db, s, r * 8 + 8, x->json, x->len);
			}
			rc = db_step(db, s);
			sqlite3_reset(s);
			if (rc != SQLITE_DONE)
				return db_sql_err(db, rc, "cannot insert event arguments into", NULL);
		}
		sqlite3_clear_bindings(s);   /* no pointer into the caller's text outlives the call */
	}
	for (; i < n; i++) {
		int rc = db_put_arg(db, a[i].e, a[i].json, a[i].len);
		if (rc)
			return rc;
	}
	return 0;
}

int db_put_flow(struct db *db, int rank, int kind, int64_t flow_id, int src_tid, int64_t src_ns, int dst_tid,
		int64_t dst_ns)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_FLOW, &s);
	if (rc)
		return rc;
	int64_t v[7] = { rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns };
	for (int i = 0; i < 7; i++)
		db_bind_i64(db, s, i + 1, v[i]);
	return db_step_done(db, s, "cannot insert a link into");
}

int db_put_flows(struct db *db, const struct db_flow *f, size_t n)
{
	size_t i = 0;
	int rc = 0;
	sqlite3_stmt *s = NULL;
	if (n >= DB_FLOW_ROWS) {
		if ((rc = db_stmt(db, S_FLOW_MULTI, &s)) != 0)
			return rc;
		for (; i + DB_FLOW_ROWS <= n; i += DB_FLOW_ROWS) {
			for (int r = 0; r < DB_FLOW_ROWS; r++) {
				const struct db_flow *x = &f[i + (size_t)r];
				int64_t v[7] = { x->rank, x->kind, x->flow_id, x->src_tid, x->src_ns, x->dst_tid, x->dst_ns };
				for (int c = 0; c < 7; c++)
					db_bind_i64(db, s, r * 7 + c + 1, v[c]);
			}
			rc = db_step(db, s);
			sqlite3_reset(s);
			if (rc != SQLITE_DONE)
				return db_sql_err(db, rc, "cannot insert links into", NULL);
		}
		rc = 0;
	}
	for (; i < n && !rc; i++)
		rc = db_put_flow(db, f[i].rank, f[i].kind, f[i].flow_id, f[i].src_tid, f[i].src_ns, f[i].dst_tid, f[i].dst_ns);
	return rc;
}

static int flow_end_table(struct db *db)
{
	if (db->flow_end_made)
		return 0;
	int rc = db_exec(db, "CREATE TABLE IF NOT EXISTS flow_end(rank INTEGER, kind INTEGER, file INTEGER, id INTEGER,"
			     " start INTEGER, tid INTEGER, ns INTEGER, seq INTEGER, used INTEGER)");
	if (!rc)
		db->flow_end_made = 1;
	return rc;
}

static void flow_end_values(const struct db_flow_end *x, int64_t v[9])
{
	v[0] = x->rank, v[1] = x->kind, v[2] = x->file, v[3] = x->id, v[4] = x->is_start ? 1 : 0;
	v[5] = x->tid, v[6] = x->ns, v[7] = x->seq, v[8] = x->used ? 1 : 0;
}

int db_put_flow_ends(struct db *db, const struct db_flow_end *f, size_t n)
{
	int rc = n ? flow_end_table(db) : 0;
	if (rc)
		return rc;
	size_t i = 0;
	sqlite3_stmt *s = NULL;
	int64_t v[9];
	if (n >= DB_FLOW_END_ROWS) {
		if ((rc = db_stmt(db, S_FLOW_END_MULTI, &s)) != 0)
			return rc;
		for (; i + DB_FLOW_END_ROWS <= n; i += DB_FLOW_END_ROWS) {
			for (int r = 0; r < DB_FLOW_END_ROWS; r++) {
				flow_end_values(&f[i + (size_t)r], v);
				for (int c = 0; c < 9; c++)
					db_bind_i64(db, s, r * 9 + c + 1, v[c]);
			}
			rc = db_step(db, s);
			sqlite3_reset(s);
			if (rc != SQLITE_DONE)
				return db_sql_err(db, rc, "cannot stage link ends in", NULL);
		}
	}
	for (; i < n; i++) {
		if ((rc = db_stmt(db, S_FLOW_END, &s)) != 0)
			return rc;
		flow_end_values(&f[i], v);
		for (int c = 0; c < 9; c++)
			db_bind_i64(db, s, c + 1, v[c]);
		if ((rc = db_step_done(db, s, "cannot stage a link end in")) != 0)
			return rc;
	}
	return 0;
}

/* One sorted pass over the staged ends: per (rank, kind, file, id) the first start (in `seq`
 * order) pairs with every end; everything else is unpaired, except a start marked used. */
int db_flow_pair(struct db *db, int64_t *links, int64_t *unpaired)
{
	*links = *unpaired = 0;
	if (!db->flow_end_made)
		return 0;
	sqlite3_stmt *q = NULL, *ins = NULL;
	int rc = db_prep(db,
			 "SELECT rank, kind, file, id, start, tid, ns, used FROM flow_end"
			 " ORDER BY rank, kind, file, id, start DESC, seq",
			 &q);
	if (!rc)
		rc = db_stmt(db, S_FLOW, &ins);
	int64_t rows = 0, used = 0, key[4] = { 0 }, src_tid = 0, src_ns = 0;
	int have_src = 0, src_used = 0, first = 1, src = SQLITE_DONE;
	while (!rc && (src = db_step(db, q)) == SQLITE_ROW) {
		int64_t k[4];
		for (int i = 0; i < 4; i++)
			k[i] = sqlite3_column_int64(q, i);
		int start = sqlite3_column_int(q, 4);
		rows++;
		if (first || memcmp(k, key, sizeof key)) {   /* a new link id */
			first = 0;
			memcpy(key, k, sizeof key);
			have_src = start;   /* starts sort first: the earliest one is the link's start */
			src_used = start && sqlite3_column_int(q, 7);   /* its link already written */
			used += src_used;
			src_tid = sqlite3_column_int64(q, 5);
			src_ns = sqlite3_column_int64(q, 6);
			continue;
		}
		if (start || !have_src)
			continue;
		int64_t v[7] = { k[0], k[1], k[3], src_tid, src_ns, sqlite3_column_int64(q, 5), sqlite3_column_int64(q, 6) };
		for (int i = 0; i < 7; i++)
			db_bind_i64(db, ins, i + 1, v[i]);
		rc = db_step_done(db, ins, "cannot insert a link into");
		(*links)++;
		if (!src_used)
			used++;
		src_used = 1;
	}
	if (!rc && src != SQLITE_DONE)
		rc = db_step_check(db, src, q, "cannot read");
	sqlite3_finalize(q);
	if (!rc)
		rc = db_exec(db, "DROP TABLE flow_end");
	if (rc)
		return rc;
	db->flow_end_made = 0;
	/* every end that is not the end of a link, nor the (first) start one used */
	*unpaired = rows - *links - used;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* reads */

int db_has_table(struct db *db, const char *table)
{
	sqlite3_stmt *s = NULL;
	if (db_prep(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", &s))
		return 0;
	db_bind_text_static(db, s, 1, table);
	int src = db_step(db, s), found = src == SQLITE_ROW;
	db_finish(db, s, src, 0);
	return found;
}

int db_device_lanes(struct db *db, struct db_device_lane **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (!db_has_table(db, "device_lane"))
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, tid, device, stream FROM device_lane ORDER BY rank, tid", &s);
	if (rc)
		return rc;
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 16, "reading device lanes")) != 0)
			break;
		struct db_device_lane *l = &(*out)[(*n)++];
		l->rank = sqlite3_column_int(s, 0);
		l->tid = sqlite3_column_int(s, 1);
		l->device = sqlite3_column_int(s, 2);
		l->stream = sqlite3_column_int(s, 3);
	}
	rc = db_finish(db, s, src, rc);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_device_lane_find(const struct db_device_lane *l, int n, int rank, int tid)
{
	int lo = 0, hi = n - 1;
	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		if (l[mid].rank == rank && l[mid].tid == tid)
			return mid;
		if (l[mid].rank < rank || (l[mid].rank == rank && l[mid].tid < tid))
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

/* db_shape_stats' rows: ranks add up into one row per (name, input dims, input types). */
struct shape_scan {
	struct db_shape_stat **out;
	int *n, cap;
};

static int shape_row(void *ud, sqlite3_stmt *s)
{
	struct shape_scan *x = ud;
	struct db_shape_stat *out = *x->out;
	const char *name = (const char *)sqlite3_column_text(s, 1);
	const char *dims = (const char *)sqlite3_column_text(s, 2);
	const char *types = (const char *)sqlite3_column_text(s, 3);
	name = name ? name : "";
	dims = dims ? dims : "";
	types = types ? types : "";
	int64_t cnt = sqlite3_column_int64(s, 4), tot = sqlite3_column_int64(s, 5);
	for (int i = 0; i < *x->n; i++)
		if (!strcmp(out[i].name, name) && !strcmp(out[i].input_dims, dims) && !strcmp(out[i].input_types, types)) {
			out[i].count += cnt;
			out[i].total_ns += tot;
			return 0;
		}
	int rc = ARRAY_GROW(*x->out, *x->n, x->cap, 16, "reading device lanes");
	if (rc)
		return rc;
	struct db_shape_stat *o = &(*x->out)[(*x->n)++];
	memset(o, 0, sizeof *o);
	o->kind = sqlite3_column_int(s, 0);
	o->name = strdup(name);
	o->input_dims = strdup(dims);
	o->input_types = strdup(types);
	o->count = cnt;
	o->total_ns = tot;
	return !o->name || !o->input_dims || !o->input_types ? ascent_error(ASCENT_ENOMEM, "out of memory") : 0;
}

int db_shape_stats(struct db *db, struct db_filter f, struct db_shape_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (!db_has_table(db, "arg"))
		return 0;
	struct shape_scan x = { out, n, 0 };
	int rc = db_scan_windows(db, f,
				 "SELECT a.kind, s.value, coalesce(json_extract(a.args, '$.\"Input Dims\"'), ''),"
				 " coalesce(json_extract(a.args, '$.\"Input type\"'), ''), count(*), sum(a.dur_ns)"
				 " FROM arg a JOIN string s ON s.id = a.name_id"
				 " WHERE a.kind = " DB_SQL_KIND_OP " AND (?1 < 0 OR a.rank = ?1) AND a.start_ns >= ?2"
				 " AND a.start_ns < ?3 AND json_valid(a.args)"
				 " GROUP BY a.name_id, 3, 4", shape_row, &x);
	if (rc) {
		db_shape_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int cmp_shape(const void *a, const void *b)
{
	const struct db_shape_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	int c = strcmp(x->name, y->name);
	return c ? c : strcmp(x->input_dims, y->input_dims);
}

void db_shape_stats_sort(struct db_shape_stat *s, int n)
{
	if (n > 1)
		qsort(s, (size_t)n, sizeof *s, cmp_shape);
}

void db_shape_stats_free(struct db_shape_stat *s, int n)
{
	for (int i = 0; s && i < n; i++) {
		free(s[i].name);
		free(s[i].input_dims);
		free(s[i].input_types);
	}
	free(s);
}

/* The nearest-rank 95th percentile of sorted d[0..nd) (nd > 0). */
static int64_t sorted_p95(const int64_t *d, size_t nd)
{
	return d[(nd * 95 + 99) / 100 - 1];
}

/* Close the rank whose sorted delays are d[0..nd): one row of *out. */
static void launch_row(struct db_launch_stat *o, const int64_t *d, size_t nd)
{
	int64_t sum = 0;
	for (size_t i = 0; i < nd; i++)
		sum = i64_add_sat(sum, d[i]);   /* a damaged profile's delays must not wrap */
	o->delay_total_ns = sum;
	o->delay_med_ns = stats_median_sorted_i64(d, nd);
	o->delay_p95_ns = sorted_p95(d, nd);
	o->delay_max_ns = d[nd - 1];
}

/* db_launch_stats' rows: one rank's delays are gathered in d, then closed into its row. */
struct launch_scan {
	struct db_launch_stat **out, *o;   /* o: the rank being gathered */
	int *n, cap;
	int64_t *d;
	size_t nd, capd;
};

static void launch_close(struct launch_scan *x)
{
	if (!x->o || !x->nd)
		return;
	qsort(x->d, x->nd, sizeof *x->d, stats_cmp_i64);
	launch_row(x->o, x->d, x->nd);
}

static int launch_scan_row(void *ud, sqlite3_stmt *s)
{
	struct launch_scan *x = ud;
	int rank = sqlite3_column_int(s, 0);
	if (!x->o || x->o->rank != rank) {
		launch_close(x);
		int rc = ARRAY_GROW(*x->out, *x->n, x->cap, 16, "reading device lanes");
		if (rc)
			return rc;
		x->o = &(*x->out)[(*x->n)++];
		memset(x->o, 0, sizeof *x->o);
		x->o->rank = rank;
		x->nd = 0;
	}
	if (x->nd == x->capd) {
		size_t nc = x->capd ? x->capd * 2 : 1024;
		int64_t *d2 = realloc(x->d, nc * sizeof *d2);
		if (!d2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		x->d = d2;
		x->capd = nc;
	}
	int64_t dur = sqlite3_column_int64(s, 2);
	x->d[x->nd++] = sqlite3_column_int64(s, 1);
	x->o->linked++;
	switch (sqlite3_column_int(s, 3)) {
	case DB_KIND_KERNEL:
		x->o->kernels++;
		x->o->kernel_ns = i64_add_sat(x->o->kernel_ns, dur);
		x->o->small += dur < DB_SMALL_KERNEL_NS;
		break;
	case DB_KIND_MEMCPY: x->o->copies++; break;
	case DB_KIND_MEMSET: x->o->memsets++; break;
	default: x->o->collectives++; break;
	}
	return 0;
}

int db_launch_stats(struct db *db, struct db_filter f, struct db_launch_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (!db_has_table(db, "flow"))
		return 0;
	/* the kernel (or copy, memset, device collective) that starts where the link ends; a step
	 * filter gives one window per rank, in rank order, so each rank's rows come together */
	struct launch_scan x = { .out = out, .n = n };
	int rc = db_scan_windows(db, f,
				 "SELECT fl.rank, fl.dst_ns - fl.src_ns, max(e.dur_ns), e.kind FROM flow fl JOIN event e"
				 " ON e.rank = fl.rank AND e.start_ns = fl.dst_ns AND e.tid = fl.dst_tid"
				 " WHERE fl.kind = " DB_SQL_FLOW_LAUNCH " AND (?1 < 0 OR fl.rank = ?1) AND fl.src_ns >= ?2"
				 " AND fl.src_ns < ?3 AND e.kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_KERNEL ", " DB_SQL_KIND_MEMCPY
				 ", " DB_SQL_KIND_MEMSET ") GROUP BY fl.rowid ORDER BY fl.rank", launch_scan_row, &x);
	if (!rc)
		launch_close(&x);
	free(x.d);
	if (rc) {
		free(*out);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

int db_event_args(struct db *db, const struct db_event *e, char **json)
{
	*json = NULL;
	if (!db_has_table(db, "arg"))
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT args FROM arg WHERE rank = ?1 AND tid = ?2 AND start_ns = ?3 AND name_id = ?4"
			     " AND kind = ?5 LIMIT 1", &s);
	if (rc)
		return rc;
	int64_t v[5] = { e->rank, e->tid, e->start_ns, e->name_id, e->kind };
	for (int i = 0; i < 5; i++)
		db_bind_i64(db, s, i + 1, v[i]);
	int src = db_step(db, s);
	if (src == SQLITE_ROW) {
		const char *t = (const char *)sqlite3_column_text(s, 0);
		if (t && !(*json = strdup(t)))
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	return db_finish(db, s, src, rc);
}

int db_event_link(struct db *db, const struct db_event *e, int *tid, int64_t *start_ns, int *dir)
{
	*dir = 0;
	if (!db_has_table(db, "flow"))
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT dst_tid, dst_ns, 1 FROM flow WHERE rank = ?1 AND src_tid = ?2 AND src_ns = ?3 AND kind = "
			     DB_SQL_FLOW_LAUNCH " UNION ALL SELECT src_tid, src_ns, -1 FROM flow WHERE rank = ?1 AND dst_tid = ?2"
			     " AND dst_ns = ?3 AND kind = " DB_SQL_FLOW_LAUNCH " LIMIT 1", &s);
	if (rc)
		return rc;
	db_bind_i64(db, s, 1, e->rank);
	db_bind_i64(db, s, 2, e->tid);
	db_bind_i64(db, s, 3, e->start_ns);
	int src = db_step(db, s);
	if (src == SQLITE_ROW) {
		*tid = sqlite3_column_int(s, 0);
		*start_ns = sqlite3_column_int64(s, 1);
		*dir = sqlite3_column_int(s, 2);
	}
	return db_finish(db, s, src, 0);
}

/* ---------------------------------------------------------------------------------------- */
/* the temporal breakdown per device (docs/device.md) */

/* HTA's name rules, in its order: the first rule that matches gives the class. */
enum name_match { M_PREFIX, M_CONTAINS, M_PREFIX_THEN };   /* M_PREFIX_THEN: starts with a, then holds b */
static const struct {
	enum name_match m;
	const char *a, *b;
	enum db_kclass cls;
} KCLASS_RULES[] = {
	{ M_PREFIX, "nccl", NULL, DB_KCLASS_COMM },
	{ M_PREFIX, "hip", NULL, DB_KCLASS_COMM },
	{ M_PREFIX, "hccl", NULL, DB_KCLASS_COMM },
	{ M_CONTAINS, "ncclKernel", NULL, DB_KCLASS_COMM },
	{ M_PREFIX, "Memcpy", NULL, DB_KCLASS_MEMORY },
	{ M_PREFIX, "Memset", NULL, DB_KCLASS_MEMORY },
	{ M_PREFIX, "dma", NULL, DB_KCLASS_MEMORY },
	/* not compute: neither of the above, nor a kernel */
	{ M_CONTAINS, "Memcpy", NULL, DB_KCLASS_OTHER },
	{ M_CONTAINS, "Memset", NULL, DB_KCLASS_OTHER },
	{ M_CONTAINS, "dma", NULL, DB_KCLASS_OTHER },
	{ M_CONTAINS, "Sync", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX, "Stream Wait Event", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX_THEN, "cuda", "LaunchKernel", DB_KCLASS_OTHER },
	{ M_PREFIX, "runFunction", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX, "job_exe", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX, "packet", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX, "pe_exe", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX, "cpum_exe_subgraph", NULL, DB_KCLASS_OTHER },
	{ M_PREFIX, "collective_subgraph_execution", NULL, DB_KCLASS_OTHER },
};

int db_kernel_class(const char *name, int kind)
{
	if (kind == DB_KIND_MEMCPY || kind == DB_KIND_MEMSET)
		return DB_KCLASS_MEMORY;
	if (kind == DB_KIND_COMM)
		return DB_KCLASS_COMM;
	for (size_t i = 0; i < sizeof KCLASS_RULES / sizeof KCLASS_RULES[0]; i++) {
		const char *a = KCLASS_RULES[i].a;
		size_t la = strlen(a);
		int hit = KCLASS_RULES[i].m == M_CONTAINS ? strstr(name, a) != NULL : !strncmp(name, a, la);
		if (hit && KCLASS_RULES[i].m == M_PREFIX_THEN)
			hit = strstr(name + la, KCLASS_RULES[i].b) != NULL;
		if (hit)
			return KCLASS_RULES[i].cls;
	}
	return DB_KCLASS_COMPUTE;
}

/* A copy's direction by the names CUDA (Kineto, Nsight) and ROCm give it: the first that the name holds. */
static const struct {
	const char *holds;
	enum db_copy_kind kind;
} COPY_NAMES[] = {
	{ "HtoD", DB_COPY_HTOD },   { "HostToDevice", DB_COPY_HTOD },   { "DtoH", DB_COPY_DTOH },
	{ "DeviceToHost", DB_COPY_DTOH }, { "DtoD", DB_COPY_DTOD }, { "DeviceToDevice", DB_COPY_DTOD },
	{ "PtoP", DB_COPY_PTOP },   { "PeerToPeer", DB_COPY_PTOP },
};
static const char *const COPY_KIND_NAMES[DB_COPY_KINDS] = { "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD",
							    "Memcpy PtoP", "Memcpy other", "Memset" };

int db_copy_kind(const char *name, int kind)
{
	if (kind == DB_KIND_MEMSET)
		return DB_COPY_MEMSET;
	if (kind != DB_KIND_MEMCPY)
		return -1;
	for (size_t i = 0; name && i < sizeof COPY_NAMES / sizeof COPY_NAMES[0]; i++)
		if (strstr(name, COPY_NAMES[i].holds))
			return COPY_NAMES[i].kind;
	return DB_COPY_OTHER;
}

const char *db_copy_kind_name(int copy_kind)
{
	return copy_kind >= 0 && copy_kind < DB_COPY_KINDS ? COPY_KIND_NAMES[copy_kind] : "?";
}

/* A set of [start, end) pairs being gathered. */
struct ivset {
	int64_t *v;
	int n, cap;   /* pairs */
};

static int ivset_add(struct ivset *s, int64_t a, int64_t b)
{
	if (s->n == s->cap) {
		int nc = s->cap ? s->cap * 2 : 256;
		int64_t *v = realloc(s->v, (size_t)nc * 2 * sizeof *v);
		if (!v)
			return ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
		s->v = v;
		s->cap = nc;
	}
	s->v[2 * s->n] = a;
	s->v[2 * s->n + 1] = b;
	s->n++;
	return 0;
}

/* How a rank's device work is counted: the last step's start, whether it has steps and launch
 * links; with a step filter, its windows. */
struct dev_rank {
	int rank, has_links;
	int64_t last_step;   /* INT64_MIN: no step */
};

/* One counted device event, for the per-stream figures. */
struct dev_work {
	int stream;
	int64_t start, end;
	int64_t launch;     /* its launch call's start; INT64_MIN: no link */
	int64_t call_ns;    /* its launch call's duration; −1: unknown */
};

/* A copy's or memset's bandwidth change for HTA's series: at time t, +bw at its start, −bw at its end. */
struct bw_point {
	int kind;   /* enum db_copy_kind */
	int64_t t;
	double delta;
};

static int cmp_bw_point(const void *a, const void *b)
{
	const struct bw_point *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return (x->delta > 0) - (y->delta > 0);   /* ends first */
}

/* db_device_stats' scan: the (rank, device) being gathered, with its work per class. */
struct dev_scan {
	struct db_device_stat **out, *o;
	int *n, cap;
	struct dev_rank *ranks;
	int nranks;
	struct window *w;   /* the step filter's windows (ordered by rank), NULL without one */
	int nw;
	const struct dev_rank *r;   /* the open device's rank in ranks, NULL when none */
	int w0, w1;                 /* the open device's rank's windows: w[w0..w1) */
	struct ivset all, cls[3];   /* every counted event; compute, communication, memory */
	struct dev_work *work;      /* every counted event of the device */
	int nwork, capwork;
	int64_t *d;                 /* scratch: delays, queue changes */
	size_t capd;
	struct bw_point *bw;        /* the device's copies' bandwidth changes */
	int nbw, capbw;
	/* db_device_stats_each: the open device's rows, replayed once per step */
	struct dev_in *rows;
	int nrows, caprows, open, cur_rank, cur_device;
	const struct step_window *sw;   /* every (rank, step) window, ordered by rank, step */
	int nsw;
	const int64_t *steps;           /* every step (ascending) */
	int nsteps;
	db_devstat_cb cb;
	void *ud;
};

/* HTA's memory bandwidth summary per copy kind (struct db_copy_stat) from x->bw. */
static void bw_close(struct dev_scan *x, struct db_device_stat *o)
{
	if (x->nbw)
		qsort(x->bw, (size_t)x->nbw, sizeof *x->bw, cmp_bw_point);
	double sum = 0;
	for (int i = 0; i < x->nbw; i++) {
		if (i && x->bw[i].kind != x->bw[i - 1].kind)
			sum = 0;
		sum += x->bw[i].delta;
		if (sum <= DB_BW_ZERO_GBS)
			continue;
		struct db_copy_stat *c = &o->copies[x->bw[i].kind];
		if (!c->bw_samples || sum < c->bw_min_gbs)
			c->bw_min_gbs = sum;
		if (!c->bw_samples || sum > c->bw_max_gbs)
			c->bw_max_gbs = sum;
		c->bw_mean_gbs += sum;   /* the sum until the end */
		c->bw_samples++;
	}
	for (int k = 0; k < DB_COPY_KINDS; k++)
		if (o->copies[k].bw_samples)
			o->copies[k].bw_mean_gbs /= (double)o->copies[k].bw_samples;
	x->nbw = 0;
}

static int cmp_work(const void *a, const void *b)
{
	const struct dev_work *x = a, *y = b;
	if (x->stream != y->stream)
		return x->stream < y->stream ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* Queue changes are (time, −delta) pairs sorted as pairs: at one time a launch (−1) before a start (+1). */
static int cmp_pair(const void *a, const void *b)
{
	const int64_t *x = a, *y = b;
	if (x[0] != y[0])
		return x[0] < y[0] ? -1 : 1;
	return x[1] < y[1] ? -1 : x[1] > y[1];
}

static int scratch(struct dev_scan *x, size_t n)
{
	if (n <= x->capd)
		return 0;
	int64_t *d = realloc(x->d, n * sizeof *d);
	if (!d)
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
	x->d = d;
	x->capd = n;
	return 0;
}

/* The figures of one stream, its counted work w[0..n) sorted by start (docs/device.md). */
static int stream_close(struct dev_scan *x, const struct dev_work *w, int n, struct db_stream_stat *o)
{
	memset(o, 0, sizeof *o);
	o->stream = w[0].stream;
	o->kernels = n;
	o->launch_delay_p50_ns = o->launch_delay_p95_ns = -1;
	int64_t frontier = w[0].end;   /* the latest end so far */
	for (int i = 0; i < n; i++) {
		const struct dev_work *k = &w[i];
		if (i && k->start > frontier) {
			int64_t gap = k->start - frontier;
			int cause = k->launch != INT64_MIN && k->launch > frontier ? DB_IDLE_HOST_WAIT
				    : gap < DB_KERNEL_WAIT_NS ? DB_IDLE_KERNEL_WAIT : DB_IDLE_OTHER;
			o->idle_ns[cause] += gap;
		}
		if (k->end > frontier)
			frontier = k->end;
		if (k->launch == INT64_MIN)
			continue;
		o->linked++;
		o->short_kernels += k->call_ns >= 0 && k->call_ns <= DB_SHORT_CALL_NS && k->end - k->start < k->call_ns;
	}
	if (!o->linked)
		return 0;
	int rc = scratch(x, 4 * (size_t)o->linked);
	if (rc)
		return rc;
	size_t m = 0;
	for (int i = 0; i < n; i++)
		if (w[i].launch != INT64_MIN)
			x->d[m++] = w[i].start - w[i].launch;
	qsort(x->d, m, sizeof *x->d, stats_cmp_i64);
	o->launch_delay_p50_ns = stats_median_sorted_i64(x->d, m);
	o->launch_delay_p95_ns = sorted_p95(x->d, m);
	m = 0;
	for (int i = 0; i < n; i++)
		if (w[i].launch != INT64_MIN) {
			x->d[2 * m] = w[i].launch, x->d[2 * m + 1] = -1, m++;
			x->d[2 * m] = w[i].start, x->d[2 * m + 1] = 1, m++;
		}
	qsort(x->d, m, 2 * sizeof *x->d, cmp_pair);
	int64_t q = 0, sum = 0;
	for (size_t i = 0; i < m; i++) {
		q -= x->d[2 * i + 1];
		sum += q;
		if (q > o->queue_len_max)
			o->queue_len_max = q;
	}
	o->queue_len_mean = (double)sum / (double)m;
	return 0;
}

/* The device's streams, idle time by cause and launch delays from x->work. */
static int streams_close(struct dev_scan *x, struct db_device_stat *o)
{
	o->launch_delay_p50_ns = o->launch_delay_p95_ns = -1;
	if (!x->nwork)
		return 0;
	qsort(x->work, (size_t)x->nwork, sizeof *x->work, cmp_work);
	int ns = 1;
	for (int i = 1; i < x->nwork; i++)
		ns += x->work[i].stream != x->work[i - 1].stream;
	if (!(o->streams = calloc((size_t)ns, sizeof *o->streams)))
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
	int rc = 0;
	for (int i = 0, j; i < x->nwork && !rc; i = j) {
		for (j = i + 1; j < x->nwork && x->work[j].stream == x->work[i].stream; j++)
			;
		struct db_stream_stat *st = &o->streams[o->nstreams++];
		rc = stream_close(x, &x->work[i], j - i, st);
		for (int c = 0; c < DB_IDLE_CAUSES; c++)
			o->idle_by_cause_ns[c] += st->idle_ns[c];
		o->linked += st->linked;
	}
	if (rc || !o->linked)
		return rc;
	if ((rc = scratch(x, (size_t)o->linked)) != 0)
		return rc;
	size_t m = 0;
	for (int i = 0; i < x->nwork; i++)
		if (x->work[i].launch != INT64_MIN)
			x->d[m++] = x->work[i].start - x->work[i].launch;
	qsort(x->d, m, sizeof *x->d, stats_cmp_i64);
	o->launch_delay_p50_ns = stats_median_sorted_i64(x->d, m);
	o->launch_delay_p95_ns = sorted_p95(x->d, m);
	return 0;
}

/* Time covered by exactly each combination of the three merged, disjoint class sets. */
static int class_sweep(struct ivset cls[3], int64_t out[8])
{
	int nb = 0;
	for (int c = 0; c < 3; c++)
		nb += 2 * cls[c].n;
	int64_t *b = malloc(((size_t)nb + 1) * 2 * sizeof *b);   /* (time, ±bit) */
	if (!b)
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
	int k = 0;
	for (int c = 0; c < 3; c++)
		for (int i = 0; i < 2 * cls[c].n; i++) {
			b[2 * k] = cls[c].v[i];
			b[2 * k + 1] = i % 2 ? -(1 << c) : 1 << c;
			k++;
		}
	qsort(b, (size_t)nb, 2 * sizeof *b, stats_cmp_i64);
	int mask = 0;
	for (int i = 0; i < nb; i++) {
		if (i && mask)
			out[mask] += b[2 * i] - b[2 * (i - 1)];
		mask += (int)b[2 * i + 1];
	}
	free(b);
	return 0;
}

static int dev_close(struct dev_scan *x)
{
	struct db_device_stat *o = x->o;
	if (!o)
		return 0;
	x->all.n = db_iv_union(x->all.v, x->all.n, INT64_MIN, INT64_MAX);
	for (int c = 0; c < 3; c++)
		x->cls[c].n = db_iv_union(x->cls[c].v, x->cls[c].n, INT64_MIN, INT64_MAX);
	if (x->all.n)
		o->span_ns = x->all.v[2 * x->all.n - 1] - x->all.v[0];
	o->busy_ns = db_iv_len(x->all.v, x->all.n);
	o->compute_ns = db_iv_len(x->cls[DB_KCLASS_COMPUTE].v, x->cls[DB_KCLASS_COMPUTE].n);
	o->comm_ns = db_iv_len(x->cls[DB_KCLASS_COMM].v, x->cls[DB_KCLASS_COMM].n);
	o->comm_under_compute_ns = db_iv_inter(x->cls[DB_KCLASS_COMPUTE].v, x->cls[DB_KCLASS_COMPUTE].n,
					       x->cls[DB_KCLASS_COMM].v, x->cls[DB_KCLASS_COMM].n);
	bw_close(x, o);
	int rc = class_sweep(x->cls, o->class_ns);
	if (!rc)
		rc = streams_close(x, o);
	x->all.n = 0;
	for (int c = 0; c < 3; c++)
		x->cls[c].n = 0;
	x->nwork = 0;
	return rc;
}

/* 1: the event launched at launch (INT64_MIN: no link) on rank r, starting at start, is counted;
 * 0 left out (counted there). */
static int dev_counted(struct dev_scan *x, const struct dev_rank *r, int64_t launch, int64_t start)
{
	int has_links = r && r->has_links;
	int by_step = x->w || (r && r->last_step != INT64_MIN);   /* no step: everything counts */
	if (!by_step)
		return 1;
	if (has_links && launch == INT64_MIN) {
		x->o->unlinked++;
		return 0;
	}
	int64_t t = has_links ? launch : start;
	int in = 0;
	if (x->w) {
		for (int i = x->w0; i < x->w1 && !in; i++)
			in = t >= x->w[i].lo && t < x->w[i].hi;
	} else
		in = !has_links || t < r->last_step;
	if (!in)
		x->o->after_last_step++;
	return in;
}

/* The first of n records (size bytes each, ordered by an int `rank` field at offset off) whose rank
 * is >= rank: n when none. One binary search for the scan's three arrays ordered by rank. */
static int first_of_rank(const void *base, int n, size_t size, size_t off, int rank)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int r;
		memcpy(&r, (const char *)base + (size_t)mid * size + off, sizeof r);
		if (r < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* x->r and x->w0..w1 for rank: looked up once per device, not once per event (at 1,024 ranks a scan
 * of every rank and window for each of 2.4 M device events was most of db_device_stats' time). */
static void dev_find_rank(struct dev_scan *x, int rank)
{
	/* ranks ordered by rank (dev_ranks), windows by rank (db_filter_windows) */
	int i = first_of_rank(x->ranks, x->nranks, sizeof *x->ranks, offsetof(struct dev_rank, rank), rank);
	x->r = i < x->nranks && x->ranks[i].rank == rank ? &x->ranks[i] : NULL;
	x->w0 = x->w1 = first_of_rank(x->w, x->nw, sizeof *x->w, offsetof(struct window, rank), rank);
	while (x->w1 < x->nw && x->w[x->w1].rank == rank)
		x->w1++;
}

/* One device event as the query gives it. */
struct dev_in {
	int64_t start, end, launch, call_ns, bytes;
	double bw;
	int stream, ck, cls, has_bw;
};

static void dev_parse(sqlite3_stmt *s, struct dev_in *in)
{
	in->start = sqlite3_column_int64(s, 2);
	in->end = in->start + sqlite3_column_int64(s, 3);
	in->launch = sqlite3_column_type(s, 6) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(s, 6);
	in->stream = sqlite3_column_int(s, 7);
	in->call_ns = sqlite3_column_type(s, 8) == SQLITE_NULL ? -1 : sqlite3_column_int64(s, 8);
	const char *name = (const char *)sqlite3_column_text(s, 5);
	int kind = sqlite3_column_int(s, 4);
	in->ck = db_copy_kind(name, kind);
	in->cls = db_kernel_class(name ? name : "", kind);
	in->bytes = sqlite3_column_type(s, 9) == SQLITE_INTEGER ? sqlite3_column_int64(s, 9) : 0;
	in->has_bw = sqlite3_column_type(s, 10) == SQLITE_INTEGER || sqlite3_column_type(s, 10) == SQLITE_FLOAT;
	in->bw = in->has_bw ? sqlite3_column_double(s, 10) : 0;
}

/* The event added to the open device x->o when it counts. */
static int dev_add(struct dev_scan *x, const struct dev_in *in)
{
	int rc;
	int64_t start = in->start, end = in->end;
	if (!dev_counted(x, x->r, in->launch, start))
		return 0;
	x->o->counted++;
	if ((rc = ARRAY_GROW(x->work, x->nwork, x->capwork, 256, "reading device work")) != 0)
		return rc;
	x->work[x->nwork++] = (struct dev_work){ .stream = in->stream, .start = start, .end = end, .launch = in->launch,
						 .call_ns = in->call_ns };
	if (in->ck >= 0) {
		struct db_copy_stat *c = &x->o->copies[in->ck];
		c->count++;
		c->total_ns = i64_add_sat(c->total_ns, end - start);
		if (in->bytes > 0)
			c->bytes = i64_add_sat(c->bytes, in->bytes);
		else
			c->no_bytes++;
		if (in->has_bw) {
			int64_t e1 = end > start ? end : start + 1;
			for (int k = 0; k < 2 && !rc; k++)
				if (!(rc = ARRAY_GROW(x->bw, x->nbw, x->capbw, 256, "reading device copies")))
					x->bw[x->nbw++] = (struct bw_point){ in->ck, k ? e1 : start, k ? -in->bw : in->bw };
			if (rc)
				return rc;
		}
	}
	if ((rc = ivset_add(&x->all, start, end)) != 0)
		return rc;
	return in->cls == DB_KCLASS_OTHER ? 0 : ivset_add(&x->cls[in->cls], start, end);
}

static int dev_row(void *ud, sqlite3_stmt *s)
{
	struct dev_scan *x = ud;
	int rank = sqlite3_column_int(s, 0), device = sqlite3_column_int(s, 1), rc;
	if (!x->o || x->o->rank != rank || x->o->device != device) {
		if ((rc = dev_close(x)) != 0 || (rc = ARRAY_GROW(*x->out, *x->n, x->cap, 8, "reading device work")) != 0)
			return rc;
		x->o = &(*x->out)[(*x->n)++];
		memset(x->o, 0, sizeof *x->o);
		x->o->rank = rank;
		x->o->device = device;
		dev_find_rank(x, rank);
	}
	struct dev_in in;
	dev_parse(s, &in);
	return dev_add(x, &in);
}

/* Per rank: its last step's start and whether it has launch links. */
static int dev_ranks(struct db *db, struct dev_rank **out, int *n)
{
	*out = NULL;
	*n = 0;
	sqlite3_stmt *s = NULL;
	int has_flow = db_has_table(db, "flow");
	/* the last step's start, of a rank with two steps or more: with one, as with none, all of its
	 * device work counts (HTA keeps every event of a trace with a single ProfilerStep) */
	int rc = db_prep(db, has_flow ? "SELECT r.rank, (SELECT CASE WHEN count(*) > 1 THEN max(start_ns) END FROM event e WHERE"
				       " e.rank = r.rank AND e.kind = " DB_SQL_KIND_STEP "), EXISTS (SELECT 1 FROM flow fl WHERE"
				       " fl.rank = r.rank AND fl.kind = " DB_SQL_FLOW_LAUNCH ") FROM (SELECT DISTINCT rank FROM"
				       " device_lane) r ORDER BY r.rank"
				     : "SELECT r.rank, (SELECT CASE WHEN count(*) > 1 THEN max(start_ns) END FROM event e WHERE"
				       " e.rank = r.rank AND e.kind = " DB_SQL_KIND_STEP "), 0 FROM (SELECT DISTINCT rank FROM"
				       " device_lane) r ORDER BY r.rank", &s);
	if (rc)
		return rc;
	int cap = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*out, *n, cap, 8, "reading device work")) != 0)
			break;
		struct dev_rank *r = &(*out)[(*n)++];
		r->rank = sqlite3_column_int(s, 0);
		r->last_step = sqlite3_column_type(s, 1) == SQLITE_NULL ? INT64_MIN : sqlite3_column_int64(s, 1);
		r->has_links = sqlite3_column_int(s, 2);
	}
	return db_finish(db, s, src, rc);
}

/* The device events of every rank (rank < 0) or one, ordered by rank, device, start, prepared in *s
 * with ?1 bound: rank, device, start, dur, kind, name, launch, stream, launch call's dur, bytes, GB/s. */
static int dev_query(struct db *db, int rank, sqlite3_stmt **s)
{
	/* the launch: the earliest link's start, and the shortest event starting there (the runtime
	 * call, innermost of what starts with it); a copy's or memset's bytes and Kineto's bandwidth: its
	 * `bytes` and `memory bandwidth (GB/s)` arguments */
	static const char CALL[] =
		"(SELECT c.dur_ns FROM flow fl JOIN event c ON c.rank = fl.rank AND c.start_ns = fl.src_ns AND c.tid ="
		" fl.src_tid WHERE fl.rank = e.rank AND fl.dst_tid = e.tid AND fl.dst_ns = e.start_ns AND fl.kind = "
		DB_SQL_FLOW_LAUNCH " ORDER BY fl.src_ns, c.dur_ns LIMIT 1)";
	static const char ARG_JOIN[] =
		" LEFT JOIN arg a ON e.kind IN (" DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET ") AND a.rank = e.rank AND"
		" a.start_ns = e.start_ns AND a.tid = e.tid AND a.kind = e.kind AND a.name_id = e.name_id AND"
		" a.dur_ns = e.dur_ns AND a.ord = e.ord";
	static const char ARG_COLS[] =
		"CASE WHEN json_valid(a.args) THEN json_extract(a.args, '$.bytes') END, CASE WHEN json_valid(a.args)"
		" THEN json_extract(a.args, '$.\"memory bandwidth (GB/s)\"') END";
	int has_flow = db_has_table(db, "flow"), has_arg = db_has_table(db, "arg");
	char *sql = sqlite3_mprintf(
		"SELECT e.rank, dl.device, e.start_ns, e.dur_ns, e.kind, s.value, %s, dl.stream, %s, %s FROM"
		" event e JOIN device_lane dl ON dl.rank = e.rank AND dl.tid = e.tid JOIN string s ON"
		" s.id = e.name_id%s WHERE e.kind IN (" DB_SQL_KINDS_DEVICE_EVENT ") AND %s"
		" ORDER BY e.rank, dl.device, e.start_ns", has_flow ? DB_SQL_LAUNCH_START_OF_E : "NULL", has_flow ? CALL : "NULL",
		has_arg ? ARG_COLS : "NULL, NULL", has_arg ? ARG_JOIN : "",
		/* one rank: an equality SQLite seeks in event's clustering key (the OR is planned
		 * once for any ?1, as a scan of every rank) */
		rank >= 0 ? "e.rank = ?1" : "?1 < 0");
	if (!sql)
		return ascent_error(ASCENT_ENOMEM, "out of memory reading device work");
	int rc = db_prep(db, sql, s);
	sqlite3_free(sql);
	if (!rc)
		db_bind_i64(db, *s, 1, rank);
	return rc;
}

static void dev_scan_free(struct dev_scan *x)
{
	free(x->all.v);
	for (int c = 0; c < 3; c++)
		free(x->cls[c].v);
	free(x->ranks);
	free(x->w);
	free(x->work);
	free(x->d);
	free(x->bw);
	free(x->rows);
}

int db_device_stats(struct db *db, struct db_filter f, struct db_device_stat **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (!db_has_table(db, "device_lane"))
		return 0;
	struct dev_scan x = { .out = out, .n = n };
	int rc = dev_ranks(db, &x.ranks, &x.nranks);
	if (!rc && f.step_lo >= 0)
		rc = db_filter_windows(db, f, &x.w, &x.nw);
	sqlite3_stmt *s = NULL;
	if (!rc)
		rc = dev_query(db, f.rank, &s);
	if (!rc)
		rc = db_each_row(db, s, dev_row, &x);
	if (!rc)
		rc = dev_close(&x);
	dev_scan_free(&x);
	if (rc) {
		db_device_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

/* db_device_stats_each: the open device's rows replayed for the whole run (no windows), then under
 * each step's window on its rank (none: nothing counts), each result given to cb. */
static int dev_each_flush(struct dev_scan *x)
{
	if (!x->open)
		return 0;
	x->open = 0;
	int rc = 0;
	/* the rank's windows: sw ordered by rank, step */
	int lo = first_of_rank(x->sw, x->nsw, sizeof *x->sw, offsetof(struct step_window, rank), x->cur_rank);
	for (int k = -1; k < x->nsteps && !rc; k++) {
		struct db_device_stat o;
		memset(&o, 0, sizeof o);
		o.rank = x->cur_rank;
		o.device = x->cur_device;
		x->o = &o;
		x->w = NULL;
		x->nw = 0;
		dev_find_rank(x, x->cur_rank);
		struct window win = { x->cur_rank, 0, 0 };
		if (k >= 0) {   /* the step filter's window on this rank, if it has the step */
			while (lo < x->nsw && x->sw[lo].rank == x->cur_rank && x->sw[lo].step < x->steps[k])
				lo++;
			int has = lo < x->nsw && x->sw[lo].rank == x->cur_rank && x->sw[lo].step == x->steps[k];
			if (has) {
				win.lo = x->sw[lo].lo;
				win.hi = x->sw[lo].hi;
			}
			x->w = &win;
			x->w0 = 0;
			x->w1 = has;
		}
		for (int i = 0; i < x->nrows && !rc; i++)
			rc = dev_add(x, &x->rows[i]);
		if (!rc)
			rc = dev_close(x);
		if (!rc)
			rc = x->cb(x->ud, k < 0 ? -1 : x->steps[k], &o);
		free(o.streams);
		x->o = NULL;
	}
	x->w = NULL;
	x->nrows = 0;
	return rc;
}

static int dev_each_row(void *ud, sqlite3_stmt *s)
{
	struct dev_scan *x = ud;
	int rank = sqlite3_column_int(s, 0), device = sqlite3_column_int(s, 1), rc;
	if (!x->open || x->cur_rank != rank || x->cur_device != device) {
		if ((rc = dev_each_flush(x)) != 0)
			return rc;
		x->open = 1;
		x->cur_rank = rank;
		x->cur_device = device;
	}
	if ((rc = ARRAY_GROW(x->rows, x->nrows, x->caprows, 256, "reading device work")) != 0)
		return rc;
	dev_parse(s, &x->rows[x->nrows++]);
	return 0;
}

/* Every (rank, step) window, ordered by rank, step (db_filter_windows' windows of each single step),
 * and the steps. */
static int step_windows(struct db *db, struct step_window **w, int *nw, int64_t **steps, int *nsteps)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT rank, step, min(start_ns), max(start_ns + dur_ns) FROM event WHERE kind = " DB_SQL_KIND_STEP
			 " AND step IS NOT NULL GROUP BY rank, step ORDER BY rank, step", &s);
	int cap = 0, src = SQLITE_DONE;
	while (!rc && (src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*w, *nw, cap, 64, "reading step windows")) != 0)
			break;
		(*w)[(*nw)++] = (struct step_window){ sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1),
						      sqlite3_column_int64(s, 2), sqlite3_column_int64(s, 3) };
	}
	if (s)
		rc = db_finish(db, s, src, rc);
	s = NULL;
	if (!rc)
		rc = db_prep(db, "SELECT DISTINCT step FROM event WHERE kind = " DB_SQL_KIND_STEP " AND step IS NOT NULL"
			     " ORDER BY step", &s);
	cap = 0;
	while (!rc && (src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*steps, *nsteps, cap, 64, "reading step windows")) != 0)
			break;
		(*steps)[(*nsteps)++] = sqlite3_column_int64(s, 0);
	}
	if (s)
		rc = db_finish(db, s, src, rc);
	return rc;
}

int db_device_stats_each(struct db *db, int per_step, db_devstat_cb cb, void *ud, int *stepped)
{
	*stepped = 0;
	if (!db_has_table(db, "device_lane"))
		return 0;
	struct dev_scan x = { .cb = cb, .ud = ud };
	struct step_window *sw = NULL;
	int64_t *steps = NULL;
	int nsw = 0, nsteps = 0;
	int rc = dev_ranks(db, &x.ranks, &x.nranks);
	if (!rc && per_step)
		rc = step_windows(db, &sw, &nsw, &steps, &nsteps);
	x.sw = sw;
	x.nsw = nsw;
	x.steps = steps;
	x.nsteps = nsteps;
	sqlite3_stmt *s = NULL;
	if (!rc)
		rc = dev_query(db, -1, &s);
	if (!rc)
		rc = db_each_row(db, s, dev_each_row, &x);
	if (!rc)
		rc = dev_each_flush(&x);
	dev_scan_free(&x);
	free(sw);
	free(steps);
	*stepped = !rc && per_step;
	return rc;
}

void db_device_stats_free(struct db_device_stat *s, int n)
{
	for (int i = 0; s && i < n; i++)
		free(s[i].streams);
	free(s);
}

/* ---------------------------------------------------------------------------------------- */
/* host-to-device copies and the part of them no other device work hides */

struct h2d_scan {
	struct db_h2d_exposure *o;
	int rank, device, open;       /* the (rank, device) being gathered */
	struct ivset copy, other;
	struct window *w;             /* the filter's windows: a copy counts when its launch is in one */
	int nw;
};

static void h2d_close(struct h2d_scan *x)
{
	if (!x->open)
		return;
	x->copy.n = db_iv_union(x->copy.v, x->copy.n, INT64_MIN, INT64_MAX);
	x->other.n = db_iv_union(x->other.v, x->other.n, INT64_MIN, INT64_MAX);
	int64_t u = db_iv_len(x->copy.v, x->copy.n);
	x->o->union_ns = i64_add_sat(x->o->union_ns, u);
	x->o->exposed_ns = i64_add_sat(x->o->exposed_ns, u - db_iv_inter(x->copy.v, x->copy.n, x->other.v, x->other.n));
	x->copy.n = x->other.n = 0;
	x->open = 0;
}

static int h2d_row(void *ud, sqlite3_stmt *s)
{
	struct h2d_scan *x = ud;
	int rank = sqlite3_column_int(s, 0), device = sqlite3_column_int(s, 1);
	if (!x->open || x->rank != rank || x->device != device) {
		h2d_close(x);
		x->rank = rank;
		x->device = device;
		x->open = 1;
	}
	int64_t start = sqlite3_column_int64(s, 2), end = i64_add_sat(start, sqlite3_column_int64(s, 3));
	const char *name = (const char *)sqlite3_column_text(s, 5);
	if (sqlite3_column_int(s, 4) == DB_KIND_MEMCPY && name && strcasestr(name, "HtoD")) {
		/* the copy belongs to the steps that launched it (its start when it has no launch link) */
		int64_t t = sqlite3_column_type(s, 6) == SQLITE_NULL ? start : sqlite3_column_int64(s, 6);
		int in = 0;
		for (int i = 0; i < x->nw && !in; i++)
			in = (x->w[i].rank < 0 || x->w[i].rank == rank) && t >= x->w[i].lo && t < x->w[i].hi;
		if (!in)   /* another step's copy: other work that can hide these */
			return ivset_add(&x->other, start, end);
		x->o->copies++;
		x->o->pageable += strcasestr(name, "Pageable") != NULL;
		x->o->total_ns = i64_add_sat(x->o->total_ns, end - start);
		return ivset_add(&x->copy, start, end);
	}
	return ivset_add(&x->other, start, end);
}

int db_h2d_exposure(struct db *db, struct db_filter f, struct db_h2d_exposure *out)
{
	memset(out, 0, sizeof *out);
	if (!db_has_table(db, "device_lane"))
		return 0;
	/* every device event of the device can hide a selected copy, whichever step launched it */
	struct h2d_scan x = { .o = out };
	int rc = db_filter_windows(db, f, &x.w, &x.nw);
	char *sql = NULL;
	sqlite3_stmt *s = NULL;
	if (!rc && !(sql = sqlite3_mprintf("SELECT e.rank, dl.device, e.start_ns, e.dur_ns, e.kind, s.value, %s FROM event e"
					   " JOIN device_lane dl ON dl.rank = e.rank AND dl.tid = e.tid JOIN string s ON"
					   " s.id = e.name_id WHERE e.kind IN (" DB_SQL_KINDS_DEVICE_EVENT ") AND"
					   " (?1 < 0 OR e.rank = ?1) ORDER BY e.rank, dl.device, e.start_ns",
					   db_has_table(db, "flow") ? DB_SQL_LAUNCH_START_OF_E : "NULL")))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading device copies");
	if (!rc)
		rc = db_prep(db, sql, &s);
	sqlite3_free(sql);
	if (!rc) {
		db_bind_i64(db, s, 1, f.rank);
		rc = db_each_row(db, s, h2d_row, &x);
	}
	if (!rc)
		h2d_close(&x);
	free(x.copy.v);
	free(x.other.v);
	free(x.w);
	if (rc)
		memset(out, 0, sizeof *out);
	return rc;
}
