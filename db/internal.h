/* db/internal.h — private to db/: struct db, the statement catalogue, helpers shared by the
 * files of db/. Nothing outside db/ includes this. */
#ifndef ASCENT_DB_INTERNAL_H
#define ASCENT_DB_INTERNAL_H

#include <sqlite3.h>

#include "common/common.h"
#include "db/db.h"

/* Prepared statements, prepared on first use and held until db_close. */
enum db_stmt {
	S_BEGIN, S_COMMIT, S_ROLLBACK,
	S_STR_INS, S_EVENT, S_COUNTER, S_MEM, S_STACK, S_FRAME, S_SAMPLE, S_OVERHEAD, S_THREAD, S_RANK,
	S_RUN, S_COMM, S_COMM_DEL, S_STEP_AGG, S_NOTE, S_META_SET, S_META_GET, S_STEP_STAT, S_EVENT_MULTI,
	S_DEVLANE, S_ARG, S_FLOW, S_FLOW_END, S_ARG_MULTI, S_FLOW_END_MULTI, S_FLOW_MULTI,
	S_COUNT_
};

/* db_put_events: rows per multi-row INSERT (S_EVENT_MULTI) and columns per event row. */
#define DB_EVENT_ROWS 64
#define DB_EVENT_COLS 17
/* db_put_args / db_put_flow_ends / db_put_flows: rows per multi-row INSERT (S_ARG_MULTI,
 * S_FLOW_END_MULTI, S_FLOW_MULTI). */
#define DB_ARG_ROWS 32
#define DB_FLOW_END_ROWS 64
#define DB_FLOW_ROWS 64

/* What a statement's parameters are bound to now (bindings survive sqlite3_reset), so a batch
 * re-binds only the values that changed: state 0 unknown, 1 NULL, 2 the integer in v. */
struct bindcache {
	int64_t v[DB_EVENT_ROWS * DB_EVENT_COLS];
	unsigned char state[DB_EVENT_ROWS * DB_EVENT_COLS];
};

/* view_tl (the viewer's timeline summary, db/view_cache.c): a lane's bins in rows of DB_TL_CHUNK
 * consecutive bins, `bins` a BLOB of the chunk's non-empty bins in ascending order, packed by
 * db_tl_pack (db/view_tl.c); consecutive bins of equal values (an event that covers them) are one
 * record with its run length. */
#define DB_TL_CHUNK 64
#define DB_TL_PACKED_MAX (2 + 6 * 10)   /* the most bytes one packed record takes */
struct db_tl_bin {
	int64_t c[4];           /* compute, comm, data, other ns */
	int64_t n;              /* events that touch the bin */
	int64_t top;            /* the name with the largest overlap among leaf classes, 0 none */
};
/* Pack the record of bins off .. off + run − 1 of a chunk (0 ≤ off, 1 ≤ run, off + run ≤
 * DB_TL_CHUNK), each holding b, at buf (DB_TL_PACKED_MAX bytes free): the bytes written. */
size_t db_tl_pack(unsigned char *buf, int off, int run, const struct db_tl_bin *b);
/* The next record of p (len bytes left): its first bin's offset, its run and values; the bytes
 * read, 0 at the end or where the bytes are not a record (a damaged file: the reader stops there). */
size_t db_tl_unpack(const unsigned char *p, size_t len, int *off /* OUT */, int *run /* OUT */,
		    struct db_tl_bin *b /* OUT */);

struct db_strmap {            /* string → id, open addressing (db/strmap.c) */
	char **key;
	int64_t *id;
	size_t cap, n;
};

struct db {
	sqlite3 *h;
	char *path;
	int mode;
	int version;
	sqlite3_stmt *st[S_COUNT_];
	struct db_strmap strs;
	int64_t next_str_id;
	int strs_loaded;
	struct bindcache *evbind;  /* S_EVENT_MULTI's bindings (allocated with it) */
	int events_added;          /* this connection inserted events (op_stat marked stale) */
	int bind_rc;               /* first failed db_bind_* since the last db_step (SQLITE_OK none) */
	int flow_end_made;         /* the staging table of db_put_flow_end exists */
	int uri;                   /* opened with URI names (db_attach can give read-only options) */
	void (*wal_fn)(void *arg, int frames);   /* db_set_wal_notify's callback, its argument */
	void *wal_arg;
	/* db_view_lane_bins' last estimate (the same for every lane of a rank drawn in one window):
	 * rank, first and last bin, events; valid when view_est_ok */
	int64_t view_est[4];
	int view_est_ok;
};

/* ---- the SQLite seam (db/sql.c): every prepare, bind, step and its check goes through here ---- */

/* Set an error from the connection: "<what>: sqlite error N (extended M): msg [in: sql]". */
int db_sql_err(struct db *db, int rc, const char *what, const char *sql);
/* Prepare a one-off statement ("cannot query" error naming the SQL). *s is NULL on failure. */
int db_prep(struct db *db, const char *sql, sqlite3_stmt **s);
/* Bind parameter i. A failure is kept in db->bind_rc and returned by the next db_step, so the
 * caller's check of the step reports it. text: copied (SQLITE_TRANSIENT), NULL binds NULL;
 * text_static: the string must outlive the step; text_n_static: the same for len bytes (not
 * NUL-terminated); blob_static: len bytes that must outlive the step. opt_i64 binds NULL when !present, opt_double when v is NaN. */
static inline void db_bind_result(struct db *db, int rc)
{
	if (rc != SQLITE_OK && db->bind_rc == SQLITE_OK)
		db->bind_rc = rc;
}
static inline void db_bind_i64(struct db *db, sqlite3_stmt *s, int i, int64_t v)
{
	db_bind_result(db, sqlite3_bind_int64(s, i, v));
}
static inline void db_bind_int(struct db *db, sqlite3_stmt *s, int i, int v)
{
	db_bind_result(db, sqlite3_bind_int(s, i, v));
}
static inline void db_bind_double(struct db *db, sqlite3_stmt *s, int i, double v)
{
	db_bind_result(db, sqlite3_bind_double(s, i, v));
}
static inline void db_bind_null(struct db *db, sqlite3_stmt *s, int i)
{
	db_bind_result(db, sqlite3_bind_null(s, i));
}
static inline void db_bind_text(struct db *db, sqlite3_stmt *s, int i, const char *v)
{
	db_bind_result(db, sqlite3_bind_text(s, i, v, -1, SQLITE_TRANSIENT));
}
static inline void db_bind_text_static(struct db *db, sqlite3_stmt *s, int i, const char *v)
{
	db_bind_result(db, sqlite3_bind_text(s, i, v, -1, SQLITE_STATIC));
}
static inline void db_bind_text_n_static(struct db *db, sqlite3_stmt *s, int i, const char *v, size_t len)
{
	db_bind_result(db, sqlite3_bind_text(s, i, v, (int)len, SQLITE_STATIC));
}
static inline void db_bind_blob_static(struct db *db, sqlite3_stmt *s, int i, const void *v, size_t len)
{
	db_bind_result(db, sqlite3_bind_blob(s, i, v, (int)len, SQLITE_STATIC));
}
static inline void db_bind_opt_i64(struct db *db, sqlite3_stmt *s, int i, int64_t v, int present)
{
	db_bind_result(db, present ? sqlite3_bind_int64(s, i, v) : sqlite3_bind_null(s, i));
}
static inline void db_bind_opt_double(struct db *db, sqlite3_stmt *s, int i, double v)
{
	db_bind_result(db, v != v ? sqlite3_bind_null(s, i) : sqlite3_bind_double(s, i, v));   /* NaN: NULL */
}
/* sqlite3_step, or the pending bind failure (then the statement is not run). */
int db_step(struct db *db, sqlite3_stmt *s);
/* The one step-result check: 0 for SQLITE_ROW/DONE/OK, else the error ("what" or "cannot read"
 * '<path>', with the statement's SQL). */
int db_step_check(struct db *db, int src, sqlite3_stmt *s, const char *what);
/* db_step_check unless rc is already set, then finalize s; returns the first error. */
int db_finish(struct db *db, sqlite3_stmt *s, int src, int rc);
/* Step s to its end, row(ud, s) for each row (the first non-zero return stops it), then finalize
 * s; returns row's error or the step's. */
typedef int (*db_row_cb)(void *ud, sqlite3_stmt *s);
int db_each_row(struct db *db, sqlite3_stmt *s, db_row_cb row, void *ud);
/* Step a statement expecting SQLITE_DONE (a row is accepted), then reset. */
int db_step_done(struct db *db, sqlite3_stmt *s, const char *what);
/* Run a statement string (no results). */
int db_exec(struct db *db, const char *sql);
/* The first column of the first row as an integer (0 and *null = 1 when no row or NULL). */
int db_scalar_i64(struct db *db, const char *sql, int64_t *out, int *null /* may be NULL */);
/* Time windows selected by a filter: per rank, [lo, hi). No step filter: one window, everything.
 * Caller frees *w. */
struct window {
	int rank;
	int64_t lo, hi;
};
int db_filter_windows(struct db *db, struct db_filter f, struct window **w, int *n);
/* The windowed scan: run `sql` (parameters ?1 rank or −1, ?2 lo, ?3 hi: "WHERE (?1 < 0 OR rank =
 * ?1) AND ts >= ?2 AND ts < ?3") once per window of the filter, calling row for every result row;
 * a non-zero return from row stops the scan and is returned. */
int db_scan_windows(struct db *db, struct db_filter f, const char *sql, db_row_cb row, void *ud);

/* db_device_stats_each (db/device.c): db_device_stats over the whole profile and, when `per_step`,
 * under each single step's filter, in one read of the device events: cb(ud, −1, d) for each device's
 * whole-run figures, then cb(ud, step, d) for every step of the profile (a step a rank lacks: its
 * devices with nothing counted), each d the same as db_device_stats(db, {−1, step, step}) gives that
 * device; d is the callee's (valid during the call). *stepped: 1 when the steps were given. */
typedef int (*db_devstat_cb)(void *ud, int64_t step, const struct db_device_stat *d);
int db_device_stats_each(struct db *db, int per_step, db_devstat_cb cb, void *ud, int *stepped);
/* A step's window on a rank: [lo, hi) of its step events. */
struct step_window {
	int rank;
	int64_t step, lo, hi;
};

/* Device work of imported traces, in SQL: the kinds of a device event on a device lane (kernel,
 * copy, memset, device collective), and the launch of device event `e` (the start of its launch
 * call: the earliest start of the launch links ending at it; NULL without one). The one rule
 * db_device_stats (db/device.c) and db_step_work (db/stepwork.c) find a launch by. */
#define DB_SQL_KINDS_DEVICE_EVENT DB_SQL_KIND_COMM ", " DB_SQL_KIND_KERNEL ", " DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET
#define DB_SQL_LAUNCH_START_OF_E                                                                                      \
	"(SELECT min(fl.src_ns) FROM flow fl WHERE fl.rank = e.rank AND fl.dst_tid = e.tid AND fl.dst_ns = e.start_ns" \
	" AND fl.kind = " DB_SQL_FLOW_LAUNCH ")"
/* Launch links with their device event, as diff's operators (db/opdev.c) and report --by opkernels
 * (db/opkernels.c) read them: `fl` the launch link, `e` the kernel, copy, memset or device
 * collective starting where it ends, `c` the operator -> call link whose end is the launching call
 * (Ascend: the CANN call on its own thread; then the launch counts at the operator's start:
 * coalesce(c.src_ns, fl.src_ns)). For db_scan_windows: ?1 rank, launches in [?2, ?3). The caller adds
 * "GROUP BY fl.rowid" and its order. */
#define DB_SQL_LAUNCHES_FROM                                                                                          \
	" FROM flow fl JOIN event e ON e.rank = fl.rank AND e.start_ns = fl.dst_ns AND e.tid = fl.dst_tid"           \
	" LEFT JOIN flow c ON c.rank = fl.rank AND c.dst_tid = fl.src_tid AND c.dst_ns = fl.src_ns"                  \
	" AND c.kind = " DB_SQL_FLOW_CALL " WHERE fl.kind = " DB_SQL_FLOW_LAUNCH " AND (?1 < 0 OR fl.rank = ?1)"       \
	" AND fl.src_ns >= ?2 AND fl.src_ns < ?3 AND e.kind IN (" DB_SQL_KINDS_DEVICE_EVENT ")"

/* The time that selects device event `e` by step (--steps; db/stepwork.c): its launch, or on a rank
 * without any launch link its own start (NULL: unlinked on a rank with links, in no step). Needs the
 * flow table (without one: e.start_ns). */
#define DB_SQL_STEP_TIME_OF_DEVICE_E                                                                                  \
	"coalesce(" DB_SQL_LAUNCH_START_OF_E ", CASE WHEN NOT EXISTS (SELECT 1 FROM flow f2 WHERE f2.rank = e.rank AND" \
	" f2.kind = " DB_SQL_FLOW_LAUNCH ") THEN e.start_ns END)"

/* Operators open on each thread while a rank's events are read in start order (db/opstack.c): the
 * one home of the rule by which `diff` and `report --by opkernels` credit a launch to operators —
 * every operator open on the launching thread when the call starts, a name nested in itself once
 * (its outermost call). Push each operator at its start (those ended by then are popped);
 * db_opstack_open pops those ended by `at`
 * and gives the rest, outermost first; db_opstack_first tells whether frame i is its name's
 * outermost open call. */
struct db_opframe {
	int64_t name_id, end;
	int call;                 /* the caller's index of this call (opkernels), else 0 */
};
struct db_opstacks {
	struct db_opstack_thread {
		int tid;
		struct db_opframe *v;
		int n, cap;
	} *th;
	int nth, capth;
};
int db_opstack_push(struct db_opstacks *s, int tid, int64_t start_ns, struct db_opframe f);
/* The frames open on `tid` at `at` (NULL, *n = 0: none). */
const struct db_opframe *db_opstack_open(struct db_opstacks *s, int tid, int64_t at, int *n);
int db_opstack_first(const struct db_opframe *v, int i);
void db_opstack_clear(struct db_opstacks *s);   /* a new rank: every thread empty */
void db_opstack_free(struct db_opstacks *s);

/* *yes = 1 when the viewer's summary tables (db/view_cache.c) are present and of this version. */
int db_view_current(struct db *db, int *yes /* OUT */);

/* The device work CPU operators launched (db/opdev.c; diff's rule, docs/diff.md): db_opdev_new reads
 * the launch links under the filter; feed it the events of that filter in nesting order
 * (db_each_event_nested), then db_opdev_finish. Each rank, once complete, is handed to cb: the
 * per-name sums of that rank in acc[name_id] for the ids in touched[0..ntouched) (acc is zero
 * elsewhere and cleared after the call), and its launches in tot. A rank with launches but no event
 * under the filter comes with its launches unattributed. */
struct db_opdev_name {
	int64_t count, cpu_ns;        /* the operator's calls and time (kind op) */
	int64_t launched, device_ns;  /* device events launched inside it, once per name however nested */
	int64_t self_ns;              /* their time where it is the innermost operator */
};
struct db_opdev_rank {
	int64_t linked, linked_ns;              /* device events reached by a launch link */
	int64_t unattributed, unattributed_ns;  /* of them, launched outside every operator */
};
typedef int (*db_opdev_flush_cb)(void *ud, int rank, const struct db_opdev_name *acc, const int64_t *touched,
				 int64_t ntouched, const struct db_opdev_rank *tot);
struct db_opdev;
int db_opdev_new(struct db *db, struct db_filter f, int64_t nnames, db_opdev_flush_cb cb, void *ud,
		 struct db_opdev **out /* OUT */);
int db_opdev_event(struct db_opdev *x, const struct db_event *e);
int db_opdev_finish(struct db_opdev *x);
void db_opdev_free(struct db_opdev *x);   /* accepts NULL */

/* Interval sets (db/steps.c), the one home for unions and overlaps: iv holds n [start, end) pairs.
 * db_iv_union clips them to [s0, s1), sorts and merges them in place (touching pairs merge) and
 * returns the pair count; db_iv_len sums a merged set; db_iv_inter is the length two merged sets
 * share. */
int db_iv_union(int64_t *iv, int n, int64_t s0, int64_t s1);
int64_t db_iv_len(const int64_t *iv, int n);
int64_t db_iv_inter(const int64_t *a, int na, const int64_t *b, int nb);

/* Reading events (stats.c): DB_EVENT_SELECT lists 16 of an event row's columns (not ord), in struct db_event's
 * order, with NULLs mapped as struct db_event has them (step, mb, layer, peer, comm_id, seq −1;
 * bytes, flops, stack_id, site_id 0, which sqlite3_column_int64 gives a NULL by itself: no
 * coalesce() for them, fewer VDBE steps per row). db_event_from_row fills *e from such a row. */
#define DB_EVENT_SELECT                                                                            \
	"SELECT rank, start_ns, tid, kind, name_id, dur_ns, coalesce(step, -1), coalesce(mb, -1),"  \
	" coalesce(layer, -1), bytes, flops, coalesce(peer, -1), coalesce(comm_id, -1),"            \
	" coalesce(seq, -1), stack_id, site_id"
void db_event_from_row(sqlite3_stmt *s, struct db_event *e);

/* The prepared statement for `id` (prepared on first use), reset and with bindings cleared. */
int db_stmt(struct db *db, enum db_stmt id, sqlite3_stmt **out);
/* Load every string into the map (before interning into an existing file). */
int db_load_strings(struct db *db);
/* ---- the statistics every reader shares (db/stats.c) ---- */

/* Events in nesting order: (rank, start_ns, dur_ns DESC; ties in the table's clustering order), so
 * that on one thread a range comes before the ranges nested in it even when they start at the same
 * ns (db_each_event keeps the table's clustering order instead). The statistics pass of op_stat,
 * step_stat and the viewer's tables. */
int db_each_event_nested(struct db *db, struct db_filter f, db_event_cb cb, void *ud);
/* The same with only rank, start_ns, tid, kind, name_id, dur_ns, step (as stored: NULL reads 0),
 * flops, comm_id and seq read (the others −1 or 0): fewer columns per row for db_finalize's pass. */
int db_each_event_nested_lean(struct db *db, struct db_filter f, db_event_cb cb, void *ud);
/* Thread indexes the statistics follow (a larger tid is a damaged row: skipped). */
#define DB_TID_MAX 1000000
#define DB_TID_OK(tid) ((tid) >= 0 && (tid) <= DB_TID_MAX)
/* Self time: per thread, a stack of the ranges still open; each range's time minus the time of
 * the ranges nested directly inside it. Feed one rank's events in nesting order with
 * db_selftime_event (an event with !DB_TID_OK(tid) is ignored); when a range closes, done gets its
 * tag (the caller's key, 3 integers) and its self time. Flush at the end of each rank. */
typedef void (*db_selftime_cb)(void *ud, const int64_t tag[3], int64_t self_ns);
struct db_selftime_range {
	int64_t end, dur, child;
	int64_t tag[3];
};
struct db_selftime_stack {
	struct db_selftime_range *v;
	int n, cap;
};
struct db_selftime {
	struct db_selftime_stack *th;   /* by tid */
	int nth;
};
int db_selftime_event(struct db_selftime *st, int tid, int64_t start, int64_t dur, const int64_t tag[3],
		      db_selftime_cb done, void *ud);
void db_selftime_flush(struct db_selftime *st, db_selftime_cb done, void *ud);
void db_selftime_free(struct db_selftime *st);
/* Median (mean of the two middle values, truncated, for an even n) and nearest-rank p95 of
 * v[0..n); reorders v. 0 and 0 for n = 0. */
void db_quantiles(int64_t *v, int64_t n, int64_t *med, int64_t *p95);
/* A message's size bucket: the largest power of two <= bytes (0 for bytes <= 0). */
int64_t db_bytes_bucket(int64_t bytes);

/* msprof step decomposition computed from the events (db/steps.c; db_step_stats), one query per
 * step of the filter. */
int db_compute_step_stats(struct db *db, struct db_filter f, struct db_step_stat **out, int *n);
/* The same for every step, from one pass over all the events in nesting order (db_finalize): feed
 * each event to db_stepacc_event; db_stepacc_finish gives what db_compute_step_stats(db,
 * DB_FILTER_ALL) gives, in its order (caller frees *out). */
struct db_stepacc;
int db_stepacc_new(struct db *db, struct db_stepacc **out /* OUT */);
int db_stepacc_event(struct db_stepacc *a, const struct db_event *e);
int db_stepacc_finish(struct db_stepacc *a, struct db_step_stat **out /* OUT */, int *n /* OUT */);
void db_stepacc_free(struct db_stepacc *a);   /* accepts NULL */
/* Which interval sets of the split an event adds to (DB_STEPSET_* bits, 0 none): operators, all
 * communication, the time its thread was blocked on communication, receives (bubble). Loaded from
 * a file's strings, device lanes and communicator lanes. */
enum { DB_STEPSET_OP = 1, DB_STEPSET_COMM = 2, DB_STEPSET_BLOCKED = 4, DB_STEPSET_RECV = 8 };
struct db_stepsets;
int db_stepsets_new(struct db *db, struct db_stepsets **out /* OUT */);
unsigned db_stepsets_of(const struct db_stepsets *s, int rank, int tid, int kind, int64_t name_id);
void db_stepsets_free(struct db_stepsets *s);   /* accepts NULL */
/* ---- operator statistics (db/opstat.c) ---- */

/* One (rank, kind, name): sums, and every duration for the exact median and p95. */
struct db_opent {
	int rank, kind;
	int64_t name_id;
	int64_t count, total_ns, self_ns, min_ns, max_ns, flops_ns;
	double flops;
	int64_t *d;
	int64_t nd, capd;
	int64_t med_ns, p95_ns;   /* filled when the rows are emitted */
	double avg_ns, stddev_ns;
};
/* The accumulator: kinds is a mask (1 << kind) of kinds collected; merge_ranks = 1 keeps one
 * entry per (kind, name) over all ranks (rank −1), 0 one per rank. Feed events in nesting order
 * (db_each_event_nested): self time is counted across every kind, collected or not. */
struct db_opacc;
int db_opacc_new(struct db *db, unsigned kinds, int merge_ranks, struct db_opacc **out /* OUT */);
int db_opacc_event(struct db_opacc *a, const struct db_event *e);
/* The finished rows (med, p95, avg, stddev): each entry with its rank, then per (kind, name) the
 * rank −1 row over all ranks. A non-zero return from row stops and is returned. */
typedef int (*db_opent_cb)(void *ud, int rank, const struct db_opent *o);
int db_opacc_rows(struct db_opacc *a, db_opent_cb row, void *ud);
void db_opacc_free(struct db_opacc *a);   /* accepts NULL */
/* db_finalize in three steps, so that its pass can run while another connection reads the file
 * (db_finalize_view): the tables and indexes; the pass over the events (reads only); its results
 * written, in a transaction of their own, then PRAGMA optimize. */
struct db_finalize_result;
int db_finalize_indexes(struct db *db);
int db_finalize_pass(struct db *db, struct db_finalize_result **out /* OUT */);
int db_finalize_write(struct db *db, struct db_finalize_result *r);
void db_finalize_result_free(struct db_finalize_result *r);   /* accepts NULL */
/* Write op_stat (per rank and kind and name, and rank −1 = all ranks) from an accumulator
 * (db_opacc_new(db, every kind, 0)) fed every event in nesting order, and mark it current
 * (db_finalize; inside its transaction). */
int db_write_op_stat(struct db *db, struct db_opacc *a);
/* Forget that op_stat is current (events are being added): called before the first event insert
 * of a connection. */
int db_op_stat_invalidate(struct db *db);
/* 1 when the file has this table (a v1 file lacks the v2 tables). */
int db_has_table(struct db *db, const char *table);
/* Create the schema's tables and views that are missing. */
int db_create_tables(struct db *db);
/* The index statements of the schema (after the @@INDEXES@@ marker). */
const char *db_schema_indexes(void);
/* mem_event.device of a file before v5, which has no such column: the host where the profiler
 * wrote the file, unknown where it was imported (one device per rank, not recorded which). The
 * v5 migration stores it; readers of an older file opened read-only select it instead. */
#define DB_SQL_MEM_DEVICE_BEFORE_V5_OF(meta) \
	"(CASE WHEN EXISTS(SELECT 1 FROM " meta " WHERE key = 'import_source') THEN -2 ELSE -1 END)"
#define DB_SQL_MEM_DEVICE_BEFORE_V5 DB_SQL_MEM_DEVICE_BEFORE_V5_OF("meta")
/* The expression reading a mem_event row's device in this file: `device`, or the one above. */
const char *db_mem_device_sql(const struct db *db);

/* Communicator members: (comm_id, rank in the communicator) → world rank, from the comm table.
 * Events store a p2p peer as its rank in the event's communicator (prof_p2p_begin); matching and
 * traffic need world ranks. */
struct db_peermap {
	int64_t *key;     /* comm_id << 20 | rank_in_comm, ascending */
	int *world;
	int n;
};
int db_peermap_load(struct db *db, struct db_peermap *m /* OUT */);
/* The world rank of member `peer` of `comm_id`; `peer` itself when the comm table does not know it
 * (a profile written through the hook API without prof_comm_register). */
int db_peermap_world(const struct db_peermap *m, int64_t comm_id, int peer);
void db_peermap_free(struct db_peermap *m);

/* The string map (db/strmap.c): get returns 1 and *id when k is there, else 0; put copies k. */
void db_strmap_free(struct db_strmap *m);
int db_strmap_get(const struct db_strmap *m, const char *k, int64_t *id);
int db_strmap_put(struct db_strmap *m, const char *k, int64_t id);

#endif
