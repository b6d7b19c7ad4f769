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
	S_DEVLANE, S_ARG, S_FLOW, S_FLOW_END,
	S_COUNT_
};

/* db_put_events: rows per multi-row INSERT (S_EVENT_MULTI) and columns per event row. */
#define DB_EVENT_ROWS 64
#define DB_EVENT_COLS 16

/* What a statement's parameters are bound to now (bindings survive sqlite3_reset), so a batch
 * re-binds only the values that changed: state 0 unknown, 1 NULL, 2 the integer in v. */
struct bindcache {
	int64_t v[DB_EVENT_ROWS * DB_EVENT_COLS];
	unsigned char state[DB_EVENT_ROWS * DB_EVENT_COLS];
};

struct strmap {               /* string → id, open addressing */
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
	struct strmap strs;
	int64_t next_str_id;
	int strs_loaded;
	struct bindcache *evbind;  /* S_EVENT_MULTI's bindings (allocated with it) */
	int events_added;          /* this connection inserted events (op_stat marked stale) */
	int flow_end_made;         /* the staging table of db_put_flow_end exists */
};

/* Set an error from the connection: "<what>: sqlite error N (extended M): msg [in: sql]". */
int db_sql_err(struct db *db, int rc, const char *what, const char *sql);
/* The prepared statement for `id` (prepared on first use), reset and with bindings cleared. */
int db_stmt(struct db *db, enum db_stmt id, sqlite3_stmt **out);
/* Run a statement string (no results). */
int db_exec(struct db *db, const char *sql);
/* Step a statement expecting SQLITE_DONE, then reset. */
int db_step_done(struct db *db, sqlite3_stmt *s, const char *what);
/* Load every string into the map (before interning into an existing file). */
int db_load_strings(struct db *db);
/* msprof step decomposition computed from the events (db_finalize, db_step_stats). */
int db_compute_step_stats(struct db *db, struct db_filter f, struct db_step_stat **out, int *n);
/* Time windows selected by a filter: per rank, [lo, hi). No step filter: one window, everything.
 * Caller frees *w. */
struct window {
	int rank;
	int64_t lo, hi;
};
int db_filter_windows(struct db *db, struct db_filter f, struct window **w, int *n);
/* Build op_stat (per rank and kind and name, and rank −1 = all ranks) from one ordered scan of the
 * events (db_finalize; inside its transaction). */
int db_build_op_stat(struct db *db);
/* Forget that op_stat is current (events are being added): called before the first event insert
 * of a connection. */
int db_op_stat_invalidate(struct db *db);
/* 1 when the file has this table (a v1 file lacks the v2 tables). */
int db_has_table(struct db *db, const char *table);
/* Create the schema's tables and views that are missing. */
int db_create_tables(struct db *db);
/* The index statements of the schema (after the @@INDEXES@@ marker). */
const char *db_schema_indexes(void);

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

void strmap_free(struct strmap *m);
int strmap_get(const struct strmap *m, const char *k, int64_t *id);
int strmap_put(struct strmap *m, const char *k, int64_t id);

#endif
