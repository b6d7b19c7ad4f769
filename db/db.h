/* db/db.h — the public face of `db`: the profile database (schema db/schema.sql, v2), opening and
 * validating it, the batched writer the profiler uses, merging ranks' files, and the read queries
 * every tool shares (summaries, step decomposition, collective matching, event iteration).
 *
 * Only db/ calls sqlite3_*. Every statement is prepared once and held in struct db, so this
 * header is the catalogue of queries. Nothing here prints for humans.
 *
 * Time: every *_ns timestamp stored is int64 ns since the rank's profiler start (rank.t0_ns, a
 * CLOCK_MONOTONIC reading); durations in ns. To put rank r's time on rank 0's clock:
 *   t + rank.t0_ns + rank.clock_offset_ns − rank0.t0_ns          (see docs/schema.md)
 *
 * Errors: 0 or a negative ASCENT_E* code with a message (SQL errors carry the code, extended code,
 * message and statement). Every function accepts only a db from db_open.
 */
#ifndef ASCENT_DB_H
#define ASCENT_DB_H

#include <stddef.h>
#include <stdint.h>

#define DB_SCHEMA_VERSION 5
#define DB_APP_ID 0x41534354   /* "ASCT", PRAGMA application_id */
#define DB_HEADER_BYTES 72     /* a file's first bytes that db_header_is_profile reads */
/* 1 when a file's first n bytes are an ascent profile's: SQLite's header with ascent's
 * application id (offset 68, big-endian), told without opening the file as a database. */
int db_header_is_profile(const unsigned char *head, size_t n);

/* event.kind */
enum db_kind {
	DB_KIND_OP = 0,          /* an operator / kernel (flops, layer) */
	DB_KIND_COMM = 1,        /* a collective (bytes, comm_id, seq, peer = root) */
	DB_KIND_P2P = 2,         /* a send or receive (bytes, comm_id, seq, peer) */
	DB_KIND_STEP = 3,        /* one training step */
	DB_KIND_PHASE = 4,       /* forward, backward, optimizer, ... */
	DB_KIND_DATA = 5,        /* data loading */
	DB_KIND_IO = 6,          /* file I/O */
	DB_KIND_CHECKPOINT = 7,  /* saving / loading a checkpoint */
	DB_KIND_RANGE = 8,       /* a user range */
	DB_KIND_MICROBATCH = 9,  /* one micro-batch */
	DB_KIND_WAIT = 10,       /* a thread blocked on communication that runs elsewhere (bytes, comm_id,
				  * seq of the collective it waits for): the exposed communication */
	DB_KIND_KERNEL = 11,     /* a device kernel (on a device lane; v2) */
	DB_KIND_MEMCPY = 12,     /* a device copy (bytes) */
	DB_KIND_MEMSET = 13,     /* a device memset (bytes) */
	DB_KIND_COUNT
};
/* The name a thread's wait on a collective (kind wait) has in exported traces: "wait: allreduce",
 * so that it is not counted as the collective; importers strip it. */
#define DB_WAIT_PREFIX "wait: "
const char *db_kind_name(int kind);          /* "op", "comm", ..., "wait", "kernel", "memcpy", "memset"; "?" out of range */
/* Events of this kind carry bytes, comm_id, seq and peer (comm, p2p, wait). */
static inline int db_kind_has_comm(int kind)
{
	return kind == DB_KIND_COMM || kind == DB_KIND_P2P || kind == DB_KIND_WAIT;
}
/* An event's bytes are stored (else NULL): a communication kind's always, a copy's or a memset's
 * when known (> 0). */
static inline int db_event_has_bytes(int kind, int64_t bytes)
{
	return db_kind_has_comm(kind) || ((kind == DB_KIND_MEMCPY || kind == DB_KIND_MEMSET) && bytes > 0);
}
/* The kinds the operator tables list: op, kernel, memcpy, memset (a bit mask of 1 << kind). */
#define DB_KINDS_OPERATORS ((1u << DB_KIND_OP) | (1u << DB_KIND_KERNEL) | (1u << DB_KIND_MEMCPY) | (1u << DB_KIND_MEMSET))
/* The kinds that keep a device busy computing (device lanes): kernel, memcpy, memset. */
#define DB_KINDS_DEVICE_WORK ((1u << DB_KIND_KERNEL) | (1u << DB_KIND_MEMCPY) | (1u << DB_KIND_MEMSET))

/* Event kinds as SQL text, for statements: db's own and the evidence queries the advisor prints for
 * users to paste into sqlite3. Each is the number the file holds followed by the kind's name in an
 * SQL comment, so the query stays valid and says what it selects: "WHERE kind = " DB_SQL_KIND_DATA. */
#define DB_SQL_KIND_OP "0 /* op */"
#define DB_SQL_KIND_COMM "1 /* comm */"
#define DB_SQL_KIND_P2P "2 /* p2p */"
#define DB_SQL_KIND_STEP "3 /* step */"
#define DB_SQL_KIND_PHASE "4 /* phase */"
#define DB_SQL_KIND_DATA "5 /* data */"
#define DB_SQL_KIND_IO "6 /* io */"
#define DB_SQL_KIND_CHECKPOINT "7 /* checkpoint */"
#define DB_SQL_KIND_RANGE "8 /* range */"
#define DB_SQL_KIND_MICROBATCH "9 /* microbatch */"
#define DB_SQL_KIND_WAIT "10 /* wait */"
#define DB_SQL_KIND_KERNEL "11 /* kernel */"
#define DB_SQL_KIND_MEMCPY "12 /* memcpy */"
#define DB_SQL_KIND_MEMSET "13 /* memset */"
_Static_assert(DB_KIND_OP == 0 && DB_KIND_COMM == 1 && DB_KIND_P2P == 2 && DB_KIND_STEP == 3 && DB_KIND_PHASE == 4 &&
		       DB_KIND_DATA == 5 && DB_KIND_IO == 6 && DB_KIND_CHECKPOINT == 7 && DB_KIND_RANGE == 8 &&
		       DB_KIND_MICROBATCH == 9 && DB_KIND_WAIT == 10 && DB_KIND_KERNEL == 11 && DB_KIND_MEMCPY == 12 &&
		       DB_KIND_MEMSET == 13,
	       "DB_SQL_KIND_* must match enum db_kind");

/* mem_event.category */
enum db_mem_cat {
	DB_MEM_PARAM = 0, DB_MEM_GRAD = 1, DB_MEM_OPTIMIZER = 2, DB_MEM_ACTIVATION = 3,
	DB_MEM_COMM = 4, DB_MEM_WORKSPACE = 5, DB_MEM_OTHER = 6, DB_MEM_COUNT
};
const char *db_mem_cat_name(int cat);        /* "param", ..., "comm_buffer", "workspace", "other" */
/* mem_event.device (v5): the host's memory, or an accelerator's by its index on the rank's host */
enum { DB_MEM_HOST = -1,          /* CPU memory: everything the profiler records */
       DB_MEM_DEVICE_UNKNOWN = -2 /* an imported file before v5 kept one device per rank, not which */ };
/* "host", "device N", "unknown" into buf (n bytes); returns buf. */
const char *db_mem_device_name(int device, char *buf, size_t n);

/* The schema text (db/schema.sql, embedded at build time). */
extern const char db_schema_sql[];

struct db;

enum db_mode {
	DB_READ = 0,     /* existing database, read only; refused if foreign, newer, corrupt */
	DB_CREATE = 1,   /* new database (an existing file at path is replaced), schema created */
	DB_UPDATE = 2,   /* existing database, read-write (migrated to the current version) */
	DB_CREATE_TEMP = 3, /* new database in an fs_tmp's file (path: its name, "/proc/self/fd/N" or
			     * the named temporary), schema created; no journal and no log beside it
			     * (a failure discards the whole file), no fsync (fs_tmp_commit's) */
	DB_READ_LIVE = 4,   /* a file another process is writing (a run's rank file): opened with SQLite's
			     * read-only flag, so this connection never writes the file or its log, never
			     * checkpoints, not even at close when it is the last one (a killed writer's
			     * log stays for merge); it reads each commit of the writer as a WAL reader */
};
/* Open `path`. A file that is not an ascent database, has a newer schema version, or is corrupt
 * is refused with ASCENT_EINPUT and a message naming the file and what to do. */
int db_open(const char *path, int mode, struct db **out /* OUT */);
void db_close(struct db *db);                 /* accepts NULL */
const char *db_path(const struct db *db);
int db_schema_version(struct db *db);         /* the file's version */

/* ------------------------------------------------------------------------------------------ */
/* Writing (the profiler's writer thread; one thread per struct db). Insert between db_begin and
 * db_commit; statements are prepared once and reused. */

struct db_event {
	int64_t start_ns, dur_ns;
	int64_t step;             /* -1 none */
	int64_t name_id;          /* from db_intern */
	int64_t bytes;            /* comm/p2p, else 0 (stored NULL) */
	int64_t flops;            /* op, 0 unknown (stored NULL) */
	int64_t seq;              /* comm/p2p, -1 none */
	int64_t stack_id;         /* 0 none */
	int64_t site_id;          /* call-site string id, 0 none */
	int64_t ord;              /* v4: tells apart events equal in (rank, start_ns, tid, kind, name_id, dur_ns):
				   * the writer's ordinal of the event on its lane; readers leave it 0 */
	int32_t rank, tid;        /* tid: the rank's thread index (thread table) */
	int32_t kind;             /* enum db_kind */
	int32_t mb;               /* micro-batch, -1 none */
	int32_t layer;            /* -1 none */
	int32_t peer;             /* p2p peer, collective root, as a rank in comm_id (the comm table maps
				   * it to a world rank); -1 none */
	int32_t comm_id;          /* -1 none */
};

struct db_rank_info {
	int rank, pid, dp_rank, tp_rank, pp_rank, threads;
	const char *host;
	int64_t t0_ns;                       /* CLOCK_MONOTONIC at profiler start */
	int64_t t0_utc_ns;                   /* CLOCK_REALTIME at the same moment */
	int64_t clock_offset_ns, clock_err_ns;           /* to rank 0 at start */
	int64_t clock_offset_end_ns, clock_err_end_ns;   /* to rank 0 at end */
	int64_t end_ns;                      /* last time recorded (relative), 0 unknown */
};

int db_begin(struct db *db);
int db_commit(struct db *db);
int db_rollback(struct db *db);
/* Intern `s` (the string table; cached in memory, so repeated calls are cheap). id ≥ 1. */
int db_intern(struct db *db, const char *s, int64_t *id /* OUT */);
/* Insert an event. No event is merged with another: writers give events that are equal in (rank,
 * start_ns, tid, kind, name_id, dur_ns) distinct `ord`s (their ordinal on the lane), and a row whose
 * whole key is stored already is an error (ASCENT_EINTERNAL), never dropped silently. */
int db_put_event(struct db *db, const struct db_event *e);
/* Insert n events at once (the writer's bulk path): multi-row INSERTs of 64 rows that re-bind only
 * changed values, then single rows for the remainder. Same rows and rules as n db_put_event calls. */
int db_put_events(struct db *db, const struct db_event *e, size_t n);
int db_put_counter(struct db *db, int rank, int64_t name_id, int64_t ts_ns, double value);
/* A memory record of `device` (DB_MEM_HOST, or an accelerator's index): `bytes` allocated (+) or
 * freed (−), `in_use` the bytes in use in `category` on that device after it. */
int db_put_mem(struct db *db, int rank, int device, int64_t ts_ns, int64_t bytes, int category, int64_t in_use,
	       int64_t stack_id);
int db_put_stack_frame(struct db *db, int64_t stack_id, int depth, int64_t frame_id);
int db_put_frame(struct db *db, int64_t frame_id, uint64_t ip, const char *symbol, const char *module,
		 int64_t offset);
/* period_ns: the CPU time the sample stands for (0: unknown, stored NULL). */
int db_put_sample(struct db *db, int rank, int tid, int64_t ts_ns, int64_t stack_id, int64_t period_ns);
int db_put_overhead(struct db *db, int rank, int64_t ts_ns, int64_t dur_ns, const char *what);
int db_put_thread(struct db *db, int rank, int tid, int64_t os_tid, const char *name);
int db_put_rank(struct db *db, const struct db_rank_info *r);
int db_put_run(struct db *db, const char *command_line, const char *config_json, int world_size);
/* A rank has one communicator per name ("world", "dp", "tp", "pp"): putting (rank, name) with a new
 * comm_id removes that rank's row of the same name and another id (comm_set_grid re-built the
 * groups; the old ones are gone). */
int db_put_comm(struct db *db, int rank, int comm_id, const char *name, int size, int rank_in_comm);
/* Per-step aggregate that survives the size budget: count and total ns of (kind, name). */
int db_put_step_agg(struct db *db, int rank, int64_t step, int kind, int64_t name_id, int64_t count,
		    int64_t total_ns);
/* A note: level "info"/"warn"/"error" — "profiler turned off: ...", "size budget reached ...". */
int db_put_note(struct db *db, int rank, int64_t ts_ns, const char *level, const char *text);
int db_set_meta(struct db *db, const char *key, const char *value);
/* Imported traces (v2). A device lane: thread `tid` of `rank` is stream `stream` of device `device`
 * (put its thread row too). */
int db_put_device_lane(struct db *db, int rank, int tid, int device, int stream);
/* The arguments of the event with this key (ord included), a JSON object text of len bytes. */
int db_put_arg(struct db *db, const struct db_event *e, const char *json, size_t len);
/* n of them at once (multi-row INSERTs of 32 rows, then single rows): the same rows, in order. */
struct db_arg_row {
	const struct db_event *e;
	const char *json;
	size_t len;
};
int db_put_args(struct db *db, const struct db_arg_row *a, size_t n);
/* A link between two events of a rank: kind 0 launch → kernel, 1 forward → backward, 2 operator →
 * the runtime API call it made (Ascend's torch-cann-task links). */
enum db_flow_kind { DB_FLOW_LAUNCH = 0, DB_FLOW_FWDBWD = 1, DB_FLOW_CALL = 2 };
/* Link kinds as SQL text, like DB_SQL_KIND_*: "WHERE kind = " DB_SQL_FLOW_LAUNCH. */
#define DB_SQL_FLOW_LAUNCH "0 /* launch */"
#define DB_SQL_FLOW_FWDBWD "1 /* forward-backward */"
#define DB_SQL_FLOW_CALL "2 /* operator-call */"
_Static_assert(DB_FLOW_LAUNCH == 0 && DB_FLOW_FWDBWD == 1 && DB_FLOW_CALL == 2, "DB_SQL_FLOW_* must match enum db_flow_kind");
int db_put_flow(struct db *db, int rank, int kind, int64_t flow_id, int src_tid, int64_t src_ns, int dst_tid,
		int64_t dst_ns);
/* n links at once (multi-row INSERTs), in order. */
struct db_flow {
	int rank, kind, src_tid, dst_tid;
	int64_t flow_id, src_ns, dst_ns;
};
int db_put_flows(struct db *db, const struct db_flow *f, size_t n);
/* Ends of links whose partners may come later (an importer reading a file in its own order),
 * n at once (multi-row INSERTs): staged in the file (table flow_end, made on first use), so memory
 * does not grow with the links. `file` is the input file the end came from: ids are the source's
 * own and only unique within one file, so two files of one rank (a profiler schedule's repeats,
 * or two runs) never pair each other's ends. `seq` orders the ends of one id as they arrived
 * (the earliest start is the link's); `used` marks a start whose link was already written by
 * the caller (import/links.c pairs most ends in memory and stages only what it could not), so it
 * pairs later ends but is not counted as unpaired. db_flow_pair turns the staged ends into flow
 * rows (each end with the first start of the same (rank, kind, file, id)), counts the ends that
 * found no partner, and drops the staging table. */
struct db_flow_end {
	int rank, kind, is_start, tid, file, used;
	int64_t id, ns, seq;
};
int db_put_flow_ends(struct db *db, const struct db_flow_end *f, size_t n);
int db_flow_pair(struct db *db, int64_t *links /* OUT */, int64_t *unpaired /* OUT */);
/* Run a statement (several separated by ';') that returns no rows: the importer's set-based steps
 * (staging tables, numbering collectives). Only for SQL written in this program, never user text. */
int db_exec_sql(struct db *db, const char *sql);
/* Another SQLite file read beside this one (an importer's input, inserted by query): attached as
 * `schema` read-only and immutable (SQLite writes nothing beside it: no journal, no lock, no WAL
 * index), the path percent-encoded into a URI. An open transaction is committed before and begun
 * again after (SQLite attaches only outside one). Fails for a db whose own path begins with
 * "file:" (opened without URI names). */
int db_attach(struct db *db, const char *path, const char *schema);
int db_detach(struct db *db, const char *schema);
/* The "file:...?mode=ro&immutable=1" URI that opens `path` read-only and immutable (what
 * db_attach attaches; for sqlite3_open_v2 with SQLITE_OPEN_URI), the path percent-encoded where
 * URI syntax would read it otherwise. Malloc'd (the caller frees it); NULL when out of memory. */
char *db_readonly_uri(const char *path);
/* A query through the seam: `sql` (written in this program, never user text; several statements
 * separated by ';' run in turn, each with the same parameters) with parameters
 * ?1..?nbinds bound to binds (text when .text is non-NULL, else the integer; those past the
 * statement's last parameter are not bound), each result row
 * handed to row (NULL: rows ignored; a non-zero return stops and is returned), *changes (NULL:
 * not wanted) the rows an INSERT/UPDATE/DELETE changed. Errors name the statement; a damaged
 * file read (SQLite's CORRUPT, NOTADB) is ASCENT_EINPUT. */
struct db_bind {
	const char *text;
	int64_t i;
};
struct db_row;   /* a result row, valid during the callback */
int64_t db_row_i64(const struct db_row *r, int col);
double db_row_f64(const struct db_row *r, int col);
const char *db_row_text(const struct db_row *r, int col);
int db_row_is_null(const struct db_row *r, int col);
typedef int (*db_query_cb)(void *ud, const struct db_row *r);
int db_query(struct db *db, const char *sql, const struct db_bind *binds, int nbinds, db_query_cb row, void *ud,
	     int64_t *changes /* OUT, may be NULL */);
/* After a failed db_query over an attached input: 1 when the data caused it (a table or column
 * missing, a value SQL cannot take, a damaged page, a query interrupted by db_limit_steps), with
 * SQLite's message in *msg; 0 when it was the output, memory or the file system. */
int db_failed_on_data(const struct db *db, const char **msg /* OUT */);
/* An SQL function `name` of nargs arguments on db's connection, for a bulk INSERT ... SELECT whose
 * rows the caller must see as they pass (count, map, remember) without reading them twice: fn gets
 * ud through sqlite3_user_data. fn NULL removes it. Direct use only (not from views or triggers). */
typedef struct sqlite3_context sqlite3_context;
typedef struct sqlite3_value sqlite3_value;
typedef void (*db_sql_fn)(sqlite3_context *ctx, int argc, sqlite3_value **argv);
int db_function(struct db *db, const char *name, int nargs, db_sql_fn fn, void *ud);
/* A file that is being filled and renamed only when complete: no journal, no fsync until
 * db_close (crash safety comes from the rename, not from SQLite). Its sorts spill to temporary
 * files (temp_store FILE), not to memory: an index over millions of rows (db_finalize, the
 * viewer's tables) then holds about the page cache, where in memory it held ~60 bytes per row. */
int db_set_bulk(struct db *db);
/* sync 0: a file being filled that this program reads again before anyone keeps it (a profiler
 * rank file while its run goes; merged into trace.db at the end): the write-ahead log stays (a
 * live reader sees each commit, a killed process loses nothing it committed: it is in the OS's
 * page cache) but nothing is fsynced, so an OS crash or power loss can lose or damage the file;
 * about 1.3x the insert rate. sync 1: back to the default (fsync at each checkpoint, and at close). */
int db_set_sync(struct db *db, int sync);
/* Checkpoints taken off the thread that commits (a profiler rank file): SQLite's automatic
 * checkpoint (the committing connection copies the write-ahead log into the file once it holds
 * 1000 pages, reading every page back) is replaced by fn(arg, frames), called after each commit
 * with the pages in the log; fn runs on the committing thread, inside the commit, and must not use
 * this connection. The caller checkpoints with db_checkpoint, from a second connection to the file
 * on another thread. fn NULL: SQLite's automatic checkpoint again. */
int db_set_wal_notify(struct db *db, void (*fn)(void *arg, int frames), void *arg);
/* Copy the write-ahead log into the file as far as no reader needs it, without waiting for anyone
 * (SQLite's passive checkpoint): a writer on another connection goes on committing meanwhile, and
 * the log starts over at its next transaction once the copy is complete. Another checkpoint
 * already running is not an error (nothing is done). */
int db_checkpoint(struct db *db);
/* NULL when absent; the string is the caller's (free()). */
char *db_get_meta(struct db *db, const char *key);
/* Create the indexes (idempotent), fill step_stat (msprof decomposition) for every rank and
 * op_stat (per rank/kind/name statistics, read by db_op_stats). Inserting events afterwards
 * through this API marks op_stat stale until the next db_finalize. */
int db_finalize(struct db *db);
/* Logical size of the database now (page_count · page_size; in WAL mode this includes pages
 * still in the WAL). */
int64_t db_file_bytes(struct db *db);

/* What SQLite's recovery of a rank file's write-ahead log (PATH-wal) will drop: the frames after the
 * last complete transaction (a run killed mid-write), a damaged frame and all after it, a partial
 * frame at the end (a log cut short by a full disk or a partial copy). Call before db_open, since
 * closing a file checkpoints and removes its log. No log: all zero. */
struct db_wal_loss {
	int present;              /* a non-empty PATH-wal exists */
	int header_bad;           /* its header is damaged: SQLite ignores the whole log */
	int64_t commits;          /* complete transactions kept */
	int64_t frames_kept;      /* pages kept (in those transactions) */
	int64_t frames_lost;      /* whole pages written after the last complete transaction */
	int64_t partial_bytes;    /* bytes of a frame cut short at the end */
	int64_t bytes_lost;       /* of the log, all dropped bytes (lost frames + partial) */
};
int db_wal_check(const char *db_path, struct db_wal_loss *out /* OUT */);
/* The same on a log's bytes (fuzzing, tests). */
int db_wal_check_buf(const unsigned char *wal, size_t len, struct db_wal_loss *out /* OUT */);

/* The SQLite library version this ascent runs with ("3.40.1"). */
const char *db_sqlite_version(void);

/* Merge `n` rank databases into a new database `out_path` (written to out_path.tmp, then renamed).
 * Inputs may come from a killed run (WAL recovered on open). Strings, stacks and frames are
 * re-numbered; indexes and step_stat are built. Inputs with overlapping ranks are refused, and so
 * (ASCENT_EINPUT, naming both files and runs) are inputs whose meta run_id differ, unless
 * allow_mixed; ranks below the run's world size that no input holds are warned about and noted. */
int db_merge(const char *out_path, const char *const *inputs, int n, int allow_mixed);
/* db_merge's step for one input: copy the profile `in` into `out` (open for writing), its strings
 * re-interned, stacks and frames re-numbered, in one transaction. Refuses (ASCENT_EINPUT) an input
 * whose ranks are already in out. Builds nothing: the caller runs db_finalize when all are in. */
int db_merge_append(struct db *out, const char *in);

/* ------------------------------------------------------------------------------------------ */
/* Reading. Filters: rank < 0 = all ranks; step_lo..step_hi inclusive, step_lo < 0 = all steps
 * (a step filter selects events inside those steps' time ranges on each rank). */

struct db_filter {
	int rank;
	int64_t step_lo, step_hi;
};
#define DB_FILTER_ALL ((struct db_filter){ -1, -1, -1 })

/* All strings: (*names)[id] for id in [1, *n); names[0] = "". Free with db_strings_free. */
int db_strings(struct db *db, char ***names /* OUT */, int64_t *n /* OUT */);
void db_strings_free(char **names, int64_t n);

/* Ranks present, ascending (caller frees *ranks). */
int db_ranks(struct db *db, struct db_rank_info **ranks /* OUT, host strings inside are owned by
			  the array: free with db_ranks_free */, int *n /* OUT */);
void db_ranks_free(struct db_rank_info *ranks, int n);
/* Each rank's host as an index into the distinct host names, numbered in order of their first
 * rank: host_of[i] for ranks[i] (−1: no host named), names[k] the k-th host's name (pointing into
 * ranks). host_of and names have room for n. Returns the number of hosts. */
int db_rank_hosts(const struct db_rank_info *ranks, int n, int *host_of, const char **names);
/* The largest stack and frame ids in use (0 when none): a writer going on with an existing file
 * numbers its new ones after them. */
int db_max_stack_ids(struct db *db, int64_t *stack_id /* OUT */, int64_t *frame_id /* OUT */);

/* Stream events ordered by (rank, start_ns) — the table's clustering order, no sort; on one
 * thread a parent starts before its children (each begin reads the clock), so it comes first.
 * cb returns non-zero to stop (that value is returned). */
typedef int (*db_event_cb)(void *ud, const struct db_event *e);
int db_each_event(struct db *db, struct db_filter f, db_event_cb cb, void *ud);
/* Stream counters (rank, name_id, ts_ns, value) ordered by rank, name, time. */
typedef int (*db_counter_cb)(void *ud, int rank, int64_t name_id, int64_t ts_ns, double value);
int db_each_counter(struct db *db, struct db_filter f, db_counter_cb cb, void *ud);
/* Stream memory events ordered by rank, device, time (a file before v5: every row's device is
 * DB_MEM_HOST when the profiler wrote it, DB_MEM_DEVICE_UNKNOWN when it was imported). */
struct db_mem_row {
	int rank, device, category;
	int64_t ts_ns, bytes, in_use;   /* in_use: in the category on the device after the record */
};
typedef int (*db_mem_cb)(void *ud, const struct db_mem_row *m);
int db_each_mem(struct db *db, struct db_filter f, db_mem_cb cb, void *ud);
/* Threads: (rank, tid) → name, os tid. */
typedef int (*db_thread_cb)(void *ud, int rank, int tid, int64_t os_tid, const char *name);
int db_each_thread(struct db *db, db_thread_cb cb, void *ud);
/* Folded stacks: every stack with its weight (samples × interval or range self time), frames
 * outermost first. */
typedef int (*db_stack_cb)(void *ud, int64_t stack_id, int nframes, const char *const *frames,
			   int64_t weight);
int db_each_stack_weight(struct db *db, struct db_filter f, db_stack_cb cb, void *ud);

/* Per operator name (kinds op, kernel, memcpy, memset — DB_KINDS_OPERATORS — and every other kind but
 * steps when ops_only = 0): nsys-stats statistics. */
struct db_op_stat {
	char *name;
	int kind;
	int64_t count, total_ns, self_ns, min_ns, max_ns, med_ns, p95_ns;
	double avg_ns, stddev_ns;
	double flops;             /* summed FLOPs of instances that declared them */
	int64_t flops_ns;         /* time of those instances (for GFLOP/s) */
};
/* Sorted by total DESC, count, name. Without a step filter this reads the op_stat table that
 * db_finalize builds (a few rows); with one, or on a file never finalized (a killed run), it scans
 * the events. Free with db_op_stats_free. */
int db_op_stats(struct db *db, struct db_filter f, int ops_only, struct db_op_stat **out, int *n);
void db_op_stats_free(struct db_op_stat *s, int n);

/* Per collective (name) and size bucket (power of two ≤ bytes). */
struct db_comm_stat {
	char *name;
	int kind;                 /* comm or p2p */
	int64_t bucket;           /* bytes bucket lower bound */
	int64_t count, total_ns, bytes;
	double avg_ns, algbw_gbs, busbw_gbs;   /* GB/s = 1e9 B/s; algbw = bytes / transfer time: the
				   * transit (last member's arrival → end) when every call matched,
				   * else total_ns */
	int group_size;           /* n used for busbw (from the comm table; 1 if unknown) */
	int64_t matched;          /* calls matched across ranks by (comm_id, seq) */
	int64_t wait_ns, transit_ns;           /* over matched calls */
	int64_t err_ns;           /* clock uncertainty bound on wait/transit */
	int64_t queue_ns;         /* summed time the calls waited in their communicator's queue before
				   * the transfer (enqueue → start; the event argument "queue_ns") */
};
int db_comm_stats(struct db *db, struct db_filter f, struct db_comm_stat **out, int *n);
void db_comm_stats_free(struct db_comm_stat *s, int n);
/* Algorithm bandwidth in GB/s of `count` calls moving `bytes` in all: over the transfer proper —
 * the transit (each call from the last member's arrival to its end) when every call matched
 * across ranks (matched == count), else the recorded total. */
double db_comm_algbw(int64_t bytes, int64_t count, int64_t total_ns, int64_t matched, int64_t transit_ns);
/* busbw factor for a collective name and n (nccl-tests): allreduce 2(n−1)/n; reduce_scatter,
 * allgather, alltoall (n−1)/n; broadcast, reduce, others 1. */
double db_busbw_factor(const char *name, int n);
/* The side a point-to-point event stands for, from its name: DB_P2P_RECV for names containing
 * "recv" (the receiving side; receives count as pipeline bubble), DB_P2P_EXCHANGE for "sendrecv"
 * and "sendrecv_replace" (an MPI_Sendrecv: sends to its peer and receives, one event; the
 * exchanges of two ranks with each other match as a pair, whoever is the sender), else
 * DB_P2P_SEND. Collective matching and the viewer key p2p matches on it. */
enum db_p2p_side { DB_P2P_SEND = 0, DB_P2P_RECV = 1, DB_P2P_EXCHANGE = 2 };
int db_p2p_side(const char *name);
/* The matching key of a p2p event of `rank` with `peer` (world ranks): (sender, receiver), or the
 * unordered pair for an exchange. */
void db_p2p_key(int side, int64_t rank, int64_t peer, int64_t *k1 /* OUT */, int64_t *k2 /* OUT */);

/* Communicators with their members and traffic: one row per comm_id of the comm table, ordered by
 * id; members = the world ranks in communicator order ("0,2"); count/bytes/total_ns over the
 * filter's collectives and p2p on it (all members' calls together). Caller frees with
 * db_comm_groups_free. */
struct db_comm_group {
	int64_t comm_id;
	char *name;               /* "" unknown */
	int size;                 /* members (max over ranks of comm.size) */
	char *members;
	int64_t count, bytes, total_ns;
};
int db_comm_groups(struct db *db, struct db_filter f, struct db_comm_group **out /* OUT */, int *n /* OUT */);
void db_comm_groups_free(struct db_comm_group *g, int n);

/* msprof step decomposition for one (rank, step). */
struct db_step_stat {
	int rank;
	int64_t step, start_ns, total_ns;
	int64_t computing_ns;     /* union of op time */
	int64_t comm_ns;          /* union of comm + p2p + wait time */
	int64_t overlapped_ns;    /* comm − comm_not_overlapped: communication hidden behind work */
	int64_t comm_not_overlapped_ns;   /* time a thread was blocked on communication (waits; p2p and
				   * collectives recorded on the thread itself) with no op running */
	int64_t free_ns;          /* neither op nor comm */
	int64_t bubble_ns;        /* union of receive (p2p named recv*) time */
	int64_t preparing_ns;     /* step start → first op or comm */
};
/* Ordered by step, rank. Reads step_stat when present (db_finalize), else computes. */
int db_step_stats(struct db *db, struct db_filter f, struct db_step_stat **out, int *n);
/* The decomposition from intervals (exposed for tests): ops/comms/blocked/recvs are [start, end)
 * arrays inside [s0, s1); comms hold every communication interval (a lane's collectives, p2p,
 * waits), blocked those during which the recording thread was blocked (not a lane's collectives);
 * fills the *_ns fields of out except rank/step. */
void db_step_decompose(int64_t s0, int64_t s1, const int64_t *op, int nop, const int64_t *cm, int ncm,
		       const int64_t *bl, int nbl, const int64_t *rv, int nrv, struct db_step_stat *out);

/* Per (rank, device, category), ordered so (device: the host first, then by index). */
struct db_mem_stat {
	int rank, device, category;
	int64_t peak_bytes, peak_ts_ns, final_bytes, allocs, frees;
};
int db_mem_stats(struct db *db, struct db_filter f, struct db_mem_stat **out, int *n);

struct db_overhead_stat {
	int rank;
	char *what;
	int64_t count, total_ns;
	int64_t profiled_ns;      /* the rank's recorded span (for the share) */
};
int db_overhead_stats(struct db *db, struct db_overhead_stat **out, int *n);
void db_overhead_stats_free(struct db_overhead_stat *s, int n);

/* Notes (profiler off, budget reached), oldest first. */
typedef int (*db_note_cb)(void *ud, int rank, int64_t ts_ns, const char *level, const char *text);
int db_each_note(struct db *db, db_note_cb cb, void *ud);

/* Matched collectives: for each (comm_id, seq) seen on ≥ 2 ranks, each rank's call with its start
 * and end on rank 0's clock; wait = last arrival − own start, transit = own end − last arrival. */
struct db_match {
	int rank, tid;
	int64_t name_id, comm_id, seq, bytes;
	int64_t start_ns, end_ns;           /* aligned to rank 0 */
	int64_t wait_ns, transit_ns, err_ns;
	int nranks;                          /* ranks in the match */
	int64_t p2p_src, p2p_dst;            /* point to point: sender and receiver (world ranks; an exchange:
					      * the lower, the higher); 0 for collectives. Calls of one match
					      * come one after another, each match's ranks ascending. */
};
typedef int (*db_match_cb)(void *ud, const struct db_match *m);
int db_each_match(struct db *db, struct db_filter f, int kind /* DB_KIND_COMM or DB_KIND_P2P */,
		  db_match_cb cb, void *ud);
/* The same over every call with a communicator and sequence, matched or not: a call no other
 * member's call matches comes alone (nranks 1, wait 0, transit = its duration). */
int db_each_call(struct db *db, struct db_filter f, int kind, db_match_cb cb, void *ud);

/* ---- hosts' clocks (db/clocks.c; docs/import.md, "Hosts' clocks") ----
 * An imported job's hosts each wrote on their own clock. db_clock_fit measures the hosts' clocks
 * against each other from the collectives matched across hosts (db_each_match, DB_KIND_COMM: the
 * members of a call leave it together, so their ends differ by their clocks): per host pair sharing
 * calls, the median over the calls of the difference of their earliest members' ends, its spread
 * 1.4826 × the median absolute deviation. From the host of the lowest rank (host 0) hosts are
 * reached along the pairs of most calls (at least DB_CLOCK_FIT_MIN_CALLS), offsets and spreads
 * added along the way; a host no such pair joins to them roots a tree of its own (its hosts measured
 * against it: they share no call with the others, so nothing compares their clocks). A fit
 * `applies` when its offset is at least DB_CLOCK_FIT_MIN_NS (members of one collective leave it
 * microseconds apart on a shared clock: kernels on different devices end at their own pace, so a
 * smaller offset is no better known than that) and more than DB_CLOCK_FIT_SIGMAS spreads: then db_clock_fit_apply sets its ranks' rank.clock_offset_ns (less the offset) and
 * clock_err_ns (the spread), which every analysis across ranks already applies (matching, the
 * timeline, export); the events stay as the source wrote them. */
#define DB_CLOCK_FIT_MIN_CALLS 5
#define DB_CLOCK_FIT_MIN_NS 20000
#define DB_CLOCK_FIT_SIGMAS 3
struct db_clock_fit {
	char *host;                          /* host names in order of their lowest rank; [0] is host 0 */
	int root;                            /* the host its offset is measured against (itself: a root) */
	int via;                             /* the host it was measured from (−1: a root) */
	int applies;                         /* 1: significant (above), written by db_clock_fit_apply */
	int64_t calls;                       /* calls shared with `via` */
	int64_t offset_ns;                   /* its clock's reading − root's at the same moment */
	int64_t spread_ns;                   /* the uncertainty of offset_ns */
};
/* *out: one entry a host (none with fewer than two hosts); free with db_clock_fit_free. */
int db_clock_fit(struct db *db, struct db_clock_fit **out /* OUT */, int *n /* OUT */);
int db_clock_fit_apply(struct db *db, const struct db_clock_fit *f, int n);
void db_clock_fit_free(struct db_clock_fit *f, int n);

/* ---- cluster analyses (db/cluster.c; definitions in docs/cluster.md, "Reading a whole job") ----
 * All three read a whole job's ranks at once: per-rank work is linear in its events (the matching
 * sorts the calls once), nothing pairs every rank with every other. */

/* The parts of a step's split whose spread over ranks is given (db_step_stat's fields). */
enum db_split_part { DB_SPLIT_TOTAL, DB_SPLIT_COMPUTING, DB_SPLIT_COMM_NOT_OVL, DB_SPLIT_OVERLAPPED, DB_SPLIT_FREE,
		     DB_SPLIT_BUBBLE, DB_SPLIT_PARTS };
const char *db_split_part_name(int part);   /* "total", "computing", "comm_not_overlapped", ... */
struct db_spread {
	int64_t min_ns, med_ns, max_ns;      /* median of an even count: the mean of the middle two */
	int min_rank, max_rank;              /* the lowest rank holding the minimum / the maximum */
};
/* One step over all its ranks (stage −1), or over one pipeline stage's ranks (stage = pp_rank;
 * given only when the ranks hold two or more stages). msprof-analyze's "stage" rows are the max. */
struct db_step_spread {
	int64_t step;
	int stage, nranks;
	struct db_spread part[DB_SPLIT_PARTS];
};
/* From db_step_stats' rows (ordered by step, rank) and db_ranks' (for pp_rank); ordered by step,
 * then the all-ranks row, then stages ascending. Free with free(). */
int db_step_spreads(const struct db_step_stat *steps, int nsteps, const struct db_rank_info *ranks, int nranks,
		    struct db_step_spread **out, int *n);

/* Collectives matched across ranks (db_each_match), per call and rank:
 *   elapse  = the rank's duration of the call;
 *   sync    = its start → the last member's arrival (clipped to its end): waiting for ranks to arrive;
 *   transit = the call's data-moving part: the shortest (end − last arrival) of its members;
 *   wait    = elapse − transit: all its time not moving data (sync, and after the fastest member
 *             was done, waiting for the transfer to finish elsewhere).
 * Ratios as msprof-analyze gives them: sync / (sync + transit), wait / (wait + transit). */
struct db_coll_rank {                     /* one collective name on one rank */
	const char *name;                    /* owned by struct db_coll */
	int rank;
	int64_t calls, partial, last;        /* matched calls; with members missing from the profile; arrived last */
	int64_t elapse_ns, sync_ns, wait_ns, transit_ns;
	int64_t late_ns;                     /* its start − the first member's start, summed: how late it arrives */
	double sync_ratio, wait_ratio;
};
struct db_coll_kind {                     /* one collective name over all ranks */
	const char *name;
	int64_t calls, partial;              /* matched calls (each counted once, not once per member) */
	int64_t events, unmatched;           /* its events; those of no match (no other member's call) */
	int64_t bytes;                       /* of the matched calls' members */
	int64_t elapse_ns, sync_ns, wait_ns, transit_ns;   /* summed over members */
	double sync_ratio, wait_ratio;
	int worst_rank;                      /* the highest wait ratio (−1 none) */
	double worst_wait_ratio, worst_sync_ratio;
};
struct db_coll_call {                     /* one matched call, the worst by their members' summed sync */
	const char *name;
	int64_t comm_id, seq, bytes;
	int members, group_size;             /* members in the profile, the communicator's size (0 unknown) */
	int first_rank, last_rank;           /* first and last to arrive */
	int64_t start_ns;                    /* the first arrival, on rank 0's clock */
	int64_t sync_sum_ns, sync_max_ns, transit_ns, elapse_max_ns;
};
struct db_coll {
	char **names;                        /* the string table (names point into it) */
	int64_t nnames;
	struct db_coll_kind *kinds;          /* by summed wait, highest first */
	int nkinds;
	struct db_coll_rank *ranks;          /* by name (kinds' order), then rank */
	int nranks;
	struct db_coll_call *calls;          /* the `top` worst, worst first */
	int ncalls;
};
int db_coll_analysis(struct db *db, int top, struct db_coll *out);
void db_coll_free(struct db_coll *c);

/* The communication matrix: point-to-point transfers and two-member collectives per (source,
 * destination) world rank, and the same summed per host pair. A transfer matched across its two ranks
 * (db_each_match) counts its sender's bytes over its time = the receive's end − the later start of
 * the two calls (both posted → the data received; a send may return before the data arrives, or
 * block after it did), so bandwidth = bytes / time, 1e9 B/s = GB/s; a time below 0 (clock error)
 * counts as 0. A transfer whose other side is not in the profile is counted apart (one_sided), with
 * its own call's duration; it is in no bandwidth. An exchange (sendrecv on both sides) is two
 * transfers, each side's bytes in its own direction, over the later end − the later start.
 * A collective of a two-member communicator (the comm table's size is 2; an NCCL kernel of a
 * two-rank process group: a pipeline's send/recv) matched on both members is an exchange on the
 * link between them (via DB_MATRIX_COLL): two transfers, each member's bytes toward the other, over
 * the call's transit (db_coll_analysis: the shortest end − last arrival of its two members). A
 * collective of three or more members whose events say they ran a ring (the profiler's argument
 * {"algo": "ring"}: comm/ knows it when Open MPI's rules lock the ring), made by every member of its
 * communicator, puts each member's ring bytes on the link to the next member in the communicator's
 * order (via DB_MATRIX_RING): an allreduce 2 (n − 1) B / n, an allgather (n − 1) B / n of the event's
 * bytes B, rounded down, over the call's transit (the shortest end − the latest start). Other
 * collectives are not attributed to links (the algorithm MPI or NCCL picked is not in the trace; an
 * imported trace's never is): `collectives` counts their events. */
enum db_matrix_via { DB_MATRIX_P2P, DB_MATRIX_COLL, DB_MATRIX_RING };
const char *db_matrix_via_name(int via);   /* "p2p", "collective", "ring" */
struct db_matrix_cell {
	int via;                             /* enum db_matrix_via */
	int src, dst;                        /* world ranks, or for host rows indices into hosts */
	int64_t transfers, bytes, time_ns;   /* matched (two-member collectives: calls, each member's bytes, transit) */
	double gbs;                          /* bytes / time_ns; 0 without time */
	int64_t one_sided, one_sided_bytes, one_sided_ns;
};
struct db_comm_matrix {
	struct db_matrix_cell *cells;        /* by (via, src, dst) */
	int ncells;
	char **hosts;                        /* distinct host names, sorted ("?" unknown) */
	int nhosts;
	struct db_matrix_cell *host_cells;   /* src/dst index hosts; by (via, src, dst) */
	int nhost_cells;
	int64_t collectives;                 /* collective events (each rank's call) not attributed to links */
};
int db_comm_matrix(struct db *db, struct db_comm_matrix *out);
void db_comm_matrix_free(struct db_comm_matrix *m);

/* Events in the database: from op_stat when db_finalize built it (no scan), else count(*). */
int db_event_count(struct db *db, int64_t *n /* OUT */);

/* Count rows of a table (tests, bench): table must be one of the schema's. */
int db_count(struct db *db, const char *table, int64_t *n /* OUT */);

/* ---- imported traces (db/device.c; schema v2: device_lane, arg, flow) ---- A v1 file has none of
 * these tables: the reads below then return nothing (n = 0), not an error. */

/* Device lanes ordered by (rank, tid); free(*out). A lane holds one stream's work, or (imported
 * Kineto traces) the GPU user annotations of a stream on a lane of their own beside it (same device
 * and stream, ranges only), or a device's CUPTI counter ranges on the lane of stream
 * DB_STREAM_COUNTERS (ranges only: the range profiler's kernels, their counters in args). */
#define DB_STREAM_COUNTERS (-1)
struct db_device_lane {
	int rank, tid, device, stream;
};
int db_device_lanes(struct db *db, struct db_device_lane **out /* OUT */, int *n /* OUT */);
/* Index of (rank, tid) in lanes sorted as db_device_lanes returns them, −1 when not a device lane. */
int db_device_lane_find(const struct db_device_lane *lanes, int n, int rank, int tid);

/* CPU operators (kind op) grouped by name and input shapes, as PyTorch's
 * key_averages(group_by_input_shape=True): the "Input Dims" and "Input type" arguments as JSON text
 * ("" when the event has none). All ranks add up. Unordered: db_shape_stats_sort orders by total
 * time. Free with db_shape_stats_free. */
struct db_shape_stat {
	char *name, *input_dims, *input_types;
	int kind;
	int64_t count, total_ns;
};
int db_shape_stats(struct db *db, struct db_filter f, struct db_shape_stat **out /* OUT */, int *n /* OUT */);
void db_shape_stats_sort(struct db_shape_stat *s, int n);
void db_shape_stats_free(struct db_shape_stat *s, int n);

/* Launch → kernel links per rank (one row per rank that has them, by rank): the queue delay of each
 * linked kernel = its start − the start of the launch call (the host-side runtime call). */
#define DB_SMALL_KERNEL_NS 10000   /* kernels shorter than this (10 µs) count as small */
struct db_launch_stat {
	int rank;
	int64_t linked;                        /* kernels (copies, memsets, device collectives) linked */
	int64_t kernels, copies, memsets, collectives;   /* of them, per kind */
	int64_t small;                         /* of the kernels, those shorter than DB_SMALL_KERNEL_NS */
	int64_t kernel_ns;                     /* the kernels' summed duration (copies, memsets and
						* collectives are not kernels a launch-bound step waits on) */
	int64_t delay_total_ns, delay_med_ns, delay_p95_ns, delay_max_ns;
};
int db_launch_stats(struct db *db, struct db_filter f, struct db_launch_stat **out /* OUT */, int *n /* OUT */);

/* Device work classed by name as Holistic Trace Analysis does (docs/device.md): communication
 * (names starting nccl, hccl, hip, or holding ncclKernel), memory (starting Memcpy, Memset, dma), other
 * (synchronisation and runtime names: holding Sync, Memcpy, Memset or dma, starting Stream Wait
 * Event, runFunction, ...), compute (the rest). Before the name, the kind: a copy or memset is
 * memory, a device collective communication. */
enum db_kclass { DB_KCLASS_COMPUTE = 0, DB_KCLASS_COMM = 1, DB_KCLASS_MEMORY = 2, DB_KCLASS_OTHER = 3 };
int db_kernel_class(const char *name, int kind);

/* Idle time on a stream, by cause (HTA's get_idle_time_breakdown; docs/device.md). Idle on a stream
 * is each gap between one counted event's start and the latest end of the earlier counted events
 * on the stream (the stream's own work, not the device's: summed over streams, idle time can exceed
 * the device's). A gap is host wait when the launch call of the event after it started after the
 * gap began (the host had not yet asked for the work), else kernel wait when it is shorter than
 * DB_KERNEL_WAIT_NS (back-to-back launch overhead), else other (waiting on an event, another
 * stream, a collective's peer). An event without a launch link is never host wait. */
enum db_idle_cause { DB_IDLE_HOST_WAIT = 0, DB_IDLE_KERNEL_WAIT = 1, DB_IDLE_OTHER = 2, DB_IDLE_CAUSES = 3 };
#define DB_KERNEL_WAIT_NS 30000   /* HTA's consecutive_kernel_delay, 30, compared with microseconds */
/* A short kernel (HTA's launch statistics): linked, shorter on the device than its launch call
 * took on the host, the call itself no longer than DB_SHORT_CALL_NS (HTA's runtime_cutoff). */
#define DB_SHORT_CALL_NS 50000

/* One stream of a device, over the counted work on it. Launch delay = device start − start of the
 * launch call (the start of its launch link), over the linked work; −1 when none is linked. Queue
 * length (HTA's get_queue_length_summary): the stream's work launched but not yet started, sampled
 * after each launch (+1) and each start (−1) of its linked work, in time order (a launch before a
 * start at the same time); the mean is over those samples (each event weighs the same, not each
 * nanosecond), 0 with nothing linked. */
struct db_stream_stat {
	int stream;
	int64_t kernels;                      /* counted device events on the stream (all kinds) */
	int64_t linked;                       /* of them, with a launch link */
	double queue_len_mean;
	int64_t queue_len_max;
	int64_t launch_delay_p50_ns, launch_delay_p95_ns;   /* median (mean of the middle two), nearest-rank p95 */
	int64_t short_kernels;                /* see DB_SHORT_CALL_NS */
	int64_t idle_ns[DB_IDLE_CAUSES];      /* by enum db_idle_cause */
};

/* Copies by direction (docs/device.md): a device copy's kind by its name, HTA's memory kinds. */
enum db_copy_kind {
	DB_COPY_HTOD = 0,   /* name holds "HtoD" or "HostToDevice" */
	DB_COPY_DTOH,       /* "DtoH", "DeviceToHost" */
	DB_COPY_DTOD,       /* "DtoD", "DeviceToDevice" */
	DB_COPY_PTOP,       /* "PtoP", "PeerToPeer" */
	DB_COPY_OTHER,      /* a copy naming none of these */
	DB_COPY_MEMSET,     /* a memset */
	DB_COPY_KINDS
};
/* The kind of a copy (kind DB_KIND_MEMCPY) or memset named `name`; −1 for any other kind. */
int db_copy_kind(const char *name, int kind);
/* "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy PtoP", "Memcpy other", "Memset": HTA's
 * names of the memory kinds (its "Memcpy Unknown" is "Memcpy other"). */
const char *db_copy_kind_name(int copy_kind);
/* One kind of copy over a device's counted work: bytes from each event's `bytes` argument (0 when
 * it has none; `no_bytes` counts those). Achieved bandwidth = bytes / total_ns (GB/s, 1e9 B/s).
 * HTA's get_memory_bw_summary: the copies' `memory bandwidth (GB/s)` arguments (Kineto's, from the
 * copy's exact duration) summed over the copies of the kind running at once, sampled after each
 * start and end in time order (at one time ends first; a zero-length copy lasts 1 ns), samples
 * not above 1e-9 GB/s left out (sums back to zero); the mean, min and max of the samples. */
#define DB_BW_ZERO_GBS 1e-9   /* a summed bandwidth at or below this is no sample (0 up to rounding) */
struct db_copy_stat {
	int64_t count, bytes, total_ns;
	int64_t no_bytes;   /* of count, events without a positive `bytes` argument */
	int64_t bw_samples;  /* HTA's samples; 0: no copy of the kind has the argument (the three below 0) */
	double bw_mean_gbs, bw_min_gbs, bw_max_gbs;
};

/* The temporal breakdown of one device of a rank (HTA's get_temporal_breakdown,
 * get_gpu_kernel_breakdown, get_comm_comp_overlap, get_idle_time_breakdown,
 * get_queue_length_summary, get_cuda_kernel_launch_stats; docs/device.md), over the counted device
 * work: without a step filter, work launched before the start of the rank's last step (all of it
 * when the rank has no step or no launch link); with one, work launched inside the selected steps. */
struct db_device_stat {
	int rank, device;
	int64_t counted;                /* device events counted */
	int64_t after_last_step;        /* left out: launched in or after the last step (or outside --steps) */
	int64_t unlinked;               /* left out: no launch link while the rank has links */
	int64_t span_ns;                /* first start → last end of the counted work */
	int64_t busy_ns;                /* union of the counted work */
	int64_t compute_ns;             /* union of compute kernels */
	int64_t comm_ns;                /* union of communication kernels */
	int64_t comm_under_compute_ns;  /* of comm_ns, the time compute kernels run too */
	int64_t class_ns[8];            /* time covered by exactly the classes of bit mask i (bit 0
					 * compute, 1 communication, 2 memory); [0] unused */
	int64_t idle_by_cause_ns[DB_IDLE_CAUSES];   /* the streams' idle_ns summed */
	int64_t linked;                 /* counted events with a launch link */
	int64_t launch_delay_p50_ns, launch_delay_p95_ns;   /* over the device's linked work; −1 when none */
	struct db_copy_stat copies[DB_COPY_KINDS];   /* by enum db_copy_kind */
	struct db_stream_stat *streams; /* by stream number */
	int nstreams;
};
/* Ordered by rank, device; free with db_device_stats_free. */
int db_device_stats(struct db *db, struct db_filter f, struct db_device_stat **out /* OUT */, int *n /* OUT */);
void db_device_stats_free(struct db_device_stat *s, int n);

/* Host-to-device copies (device copies whose name holds "HtoD", any case) launched in the filter's
 * windows (the start of their launch call, as db_step_work attributes device work to steps; a copy
 * without a launch link by its own start), and how much of their time the device spends on nothing
 * else: per (rank, device), the union of the copies less the part of it under other device work of
 * the same device (kernels, collectives, memsets, other copies, whichever step launched them), summed.
 * A copy hidden under a kernel costs the step nothing; only `exposed_ns` can. */
struct db_h2d_exposure {
	int64_t copies, pageable;   /* copies; of them from pageable memory (name holds "Pageable") */
	int64_t total_ns;           /* their summed duration */
	int64_t union_ns;           /* the time at least one of them runs, per device, summed */
	int64_t exposed_ns;         /* of union_ns, the time no other device work runs */
};
int db_h2d_exposure(struct db *db, struct db_filter f, struct db_h2d_exposure *out /* OUT */);

/* ---- device work by the step that launched it (db/stepwork.c; docs/device.md, "Device work per
 * step") ---- A device event (kernel, copy, memset, device collective) belongs to the step of its
 * rank whose window [start, start + dur) holds the start of its launch call (its launch link's
 * start; the importer links by correlation id where a trace has no flows), wherever it runs on the
 * device. Work launched before the rank's first step, after a step and before the next (or after
 * the last), and work without a launch link are rows of their own, so every device event of a
 * rank is in exactly one of its rows: the rows' events and device_ns add up to the rank's. */
enum db_sw_where {
	DB_SW_STEP = 0,       /* launched inside step `step` */
	DB_SW_BEFORE = 1,     /* launched before the rank's first step (`step`: the first step) */
	DB_SW_AFTER = 2,      /* launched after step `step` ended, before the next one started */
	DB_SW_UNLINKED = 3,   /* no launch link: its launching call is unknown */
	DB_SW_NO_STEP = 4,    /* linked, on a rank without steps */
};
struct db_step_work {
	int rank;
	int where;                  /* enum db_sw_where */
	int64_t step;               /* see where; −1 for unlinked and no step */
	int64_t step_start_ns, step_end_ns;   /* the step's window (DB_SW_STEP), else 0 */
	int64_t events;             /* device events */
	int64_t device_ns;          /* their summed durations */
	int64_t busy_ns;            /* the union of their intervals per device, summed over devices */
	int64_t compute_ns;         /* the same for the compute kernels alone (db_kernel_class) */
	int64_t in_window_ns;       /* of busy_ns, the time inside the step's window (DB_SW_STEP) */
	int64_t first_start_ns, last_end_ns;  /* the first device start and the last device end (0: no event) */
};
/* Per rank (ascending): before, then each step and the gap after it in start order, then unlinked.
 * A step's row is there even without device work; the others only with some. With a step filter
 * (f.step_lo >= 0), only the rows of the steps step_lo..step_hi: work selected by launching step.
 * free(*out). */
int db_step_work(struct db *db, struct db_filter f, struct db_step_work **out /* OUT */, int *n /* OUT */);
/* The row's name in tables: "12", "before 10", "after 12", "unlinked", "no step" (snprintf's result). */
int db_step_work_label(const struct db_step_work *w, char *buf, size_t size);
/* "step", "before", "after", "unlinked", "no step": the JSON value of where. */
const char *db_step_work_where_name(int where);
/* --steps for device work: a device event (kernel, copy, memset, device collective on a device
 * lane; db_is_device_event) is selected by the step that launched it, not by where it runs. With a
 * step filter, db_each_device_event_launched calls cb for each device event whose launch call starts
 * in the filter's windows (on a rank without any launch link: whose own start is in them; an
 * unlinked event on a rank with links is in no step), per window in nesting order (rank, start,
 * longest first); without one, for every device event. Scans of the other events by window pair it
 * with db_is_device_event to leave device events to it (db_op_stats does). */
int db_is_device_event(const struct db_device_lane *lanes, int nlanes, const struct db_event *e);
int db_each_device_event_launched(struct db *db, struct db_filter f, db_event_cb cb, void *ud);
/* The step of each event, for summaries that keep one per event (the viewer's view_op, view_comm):
 * its own step number when it has one (ascent's profiles); else, on a rank with device lanes or
 * whose events carry no step number (an imported trace), a device event's launching step (as
 * --steps selects it) and any other event the step whose window holds its start; −1 none. */
struct db_stepmap;
int db_stepmap_new(struct db *db, struct db_stepmap **out /* OUT */);
int64_t db_stepmap_step(const struct db_stepmap *m, const struct db_event *e);
void db_stepmap_free(struct db_stepmap *m);

/* ---- the host's runtime calls (db/runtime.c; docs/device.md) ---- A runtime call is a CPU range
 * (kind range, on a lane that is no device lane) whose name is a runtime API's (cuda*, cu*, hip*,
 * aclrt* followed by an upper-case letter; MTIA's synchronize, synchronizeStream, recordEvent,
 * enqueueCommand …, runFunction - …), or the innermost range a launch link starts from (any
 * runtime, named or not). Whether it blocks the host: */
enum db_rt_block {
	DB_RT_NONBLOCKING = 0,    /* returns without waiting for the device */
	DB_RT_SYNC = 1,           /* synchronisation: the name holds "Synchronize" (any case) */
	DB_RT_SYNC_COPY = 2,      /* a copy call without "Async": cudaMemcpy, cuMemcpyHtoD, hipMemcpyWithStream, ... */
	DB_RT_PAGEABLE_COPY = 3,  /* an asynchronous call whose linked device copy names pageable memory
				   * ("Pageable"): the runtime copies through a staging buffer, the host waits */
};
/* The class of a call named `name` by name alone: −1 not a runtime API name, else enum db_rt_block
 * (never DB_RT_PAGEABLE_COPY: that needs the linked copy). */
int db_runtime_class(const char *name);
/* "synchronisation", "synchronous copy", "copy with pageable memory", "" for DB_RT_NONBLOCKING. */
const char *db_runtime_block_name(int block);
/* Per (name, block) the runtime calls starting in the filter's windows, all ranks added up, by total
 * time (largest first). p95: nearest rank. Free with db_runtime_stats_free. */
struct db_runtime_stat {
	char *name;
	int block;                 /* enum db_rt_block */
	int64_t count, launches;   /* calls; of them, those that start a launch link */
	int64_t total_ns, p95_ns, max_ns;
};
int db_runtime_stats(struct db *db, struct db_filter f, struct db_runtime_stat **out /* OUT */, int *n /* OUT */);
void db_runtime_stats_free(struct db_runtime_stat *s, int n);
/* The blocking runtime calls (block != DB_RT_NONBLOCKING) starting in the filter's windows: their
 * count and summed duration, and per rank the time at least one of them runs (calls nested in one
 * another or on two threads at once counted once), summed over ranks. And what they cost the
 * device: over the device work starting in the windows (all device lanes of a rank together), the
 * gaps between it (idle_ns), and of them the gaps that begin while a blocking call of the rank
 * runs (idle_after_ns): the device ran out of work while the host waited, and then waits for the
 * host's next launch. */
struct db_host_blocked {
	int64_t calls, total_ns, union_ns;
	int ranks;                  /* ranks with a blocking call */
	int64_t idle_ns, idle_after_ns;
};
int db_host_blocked(struct db *db, struct db_filter f, struct db_host_blocked *out /* OUT */);

/* ---- the critical path of a step (db/critpath.c; docs/device.md, `report --by critpath`) ----
 * Per rank with device lanes, Holistic Trace Analysis' critical path over a window: steps
 * f.step_lo..f.step_hi (from the first's start to the last's end), else the `instance`-th (from 0,
 * in start order) CPU range whose name holds `window_name`, else the whole rank. The graph: the start
 * and end of each CPU operator and runtime call starting in the window and of each device event whose
 * launch call does; edges for their own time, nesting and order on a thread, the runtime lock,
 * launches into an empty stream, kernel → kernel on a stream, and synchronisation (stream, device,
 * event). Its longest path, each edge on it put to a cause: */
enum db_cp_cause {
	DB_CP_CPU = 0,            /* a CPU operator's or runtime call's own time (HTA: cpu_bound) */
	DB_CP_GPU_COMPUTE = 1,    /* a device event's time (gpu_compute_bound) */
	DB_CP_GPU_COMM = 2,       /* a communication kernel's time (gpu_communication_bound) */
	DB_CP_KERNEL_KERNEL = 3,  /* the gap between two kernels on a stream (gpu_kernel_kernel_overhead) */
	DB_CP_LAUNCH = 4,         /* launch call start → device start (gpu_kernel_launch_overhead) */
	DB_CP_CAUSES
};
const char *db_cp_cause_name(int cause);   /* HTA's bound_by: "cpu_bound", ... */
struct db_critpath_opts {
	const char *window_name;  /* NULL: steps or the whole rank */
	int instance;             /* which range named so, from 0 */
	int top;                  /* how many top events to keep (0: all) */
};
/* An event with a point on the path or time credited to it (time order): an edge's time goes to
 * the event it is attributed to (HTA's rule: an event's own time and the gaps before its first
 * nested call and after its last to it, the gap between two calls to their parent, a kernel →
 * kernel gap to the earlier kernel), a launch's time to the work it launched. */
struct db_cp_event {
	int tid, kind, cause;
	int on_path;              /* a point of the event is on the path (else only time credited: a parent) */
	int64_t start_ns, dur_ns, name_id, path_ns;
};
/* Time on the path per event name and cause, largest first. */
struct db_cp_top {
	char *name;
	int cause;
	int64_t ns, events;
};
struct db_critpath {
	int rank;
	int cycle;                          /* the graph has a loop (timestamps out of order): no path */
	int64_t window_lo_ns, window_hi_ns; /* the window */
	int64_t start_ns, end_ns;           /* the path's first and last points */
	int64_t length_ns;                  /* the path's length: the sum of cause_ns */
	int64_t cause_ns[DB_CP_CAUSES];
	int64_t nodes, edges, path_nodes;   /* the graph's points and edges; the path's points */
	int64_t path_events;                /* events with a point on the path (HTA's critical_path_events_set) */
	struct db_cp_event *ev;
	int nev;
	struct db_cp_top *top;
	int ntop;
};
/* One per rank with device lanes and a window (ordered by rank); free with db_critpath_free. */
int db_critpath(struct db *db, struct db_filter f, const struct db_critpath_opts *o, struct db_critpath **out /* OUT */,
		int *n /* OUT */);
/* db_critpath's paths of the ranks in[0..nin) only (the filter's rank ignored), in one call: its
 * per-call set-up (names, lanes, ranks) read once, not once a rank. */
int db_critpath_ranks(struct db *db, struct db_filter f, const struct db_critpath_opts *o, const int *in, int nin,
		      struct db_critpath **out /* OUT */, int *n /* OUT */);
void db_critpath_free(struct db_critpath *c, int n);

/* ---- operators and their kernels (db/opkernels.c; docs/device.md, `report --by opkernels`) ---- */

/* A launch (a launch link whose device event is a kernel, copy, memset or device collective, its
 * launch call starting in the filter's windows) belongs to every CPU operator (kind op) open on the
 * launching thread when the call starts, once per name (the outermost of a name nested in itself):
 * db_diff's rule for an operator's device work. Where the call is the end of an operator → call
 * link (Ascend), it counts at that operator's start. Per operator name with at least one launch,
 * largest device time first: */
struct db_opkernel_stat {
	char *name;
	int64_t calls;            /* operators of the name starting in the windows */
	int64_t calls_launching;  /* of them, those with a launch */
	int64_t cpu_ns;           /* the calls' summed duration */
	int64_t kernels;          /* launches given to the name */
	int64_t device_ns;        /* their device events' summed duration */
	char **seq;               /* the most common non-empty kernel sequence of a call: device event names in
				   * launch order (launch call start, then device start); equal counts: the first
				   * by names */
	int seq_n;                /* its length */
	int64_t seq_calls;        /* calls whose sequence is exactly it */
	double delay_mean_ns;     /* launch delay (device start − launch call start) over the launches */
	int64_t delay_p50_ns;     /* its median (the mean of the middle two) */
};
/* A contiguous sequence of n device events on one stream (device lane), counted at every position
 * (overlapping: A A A A holds A A A twice); the device events are those on device lanes whose launch
 * call starts in the windows (unlinked ones: whose own start does). */
struct db_kernel_seq {
	char **names;
	int n;
	int64_t count;            /* occurrences */
	int64_t device_ns;        /* the summed duration of the events of every occurrence */
	int64_t streams;          /* streams (rank, lane) it occurs on */
};
#define DB_KSEQ_MAX 64
struct db_opkernels {
	struct db_opkernel_stat *ops;
	int nops;
	int64_t launches, launches_ns;   /* every launch read, and their device time */
	int64_t in_ops, in_ops_ns;       /* of them, those launched inside an operator */
	struct db_kernel_seq *seqs;      /* the `top` most frequent, then most device time */
	int nseqs, seq_len;
	int64_t windows;                 /* positions counted (sequences of seq_len on one stream) */
	int64_t nseq_distinct;           /* distinct sequences among them */
};
/* Both tables over the filter. seq_len 1..DB_KSEQ_MAX (ASCENT_EUSAGE otherwise); top: how many
 * sequences to keep. Free with db_opkernels_free (also after a failure; *out is zeroed). */
int db_opkernels(struct db *db, struct db_filter f, int seq_len, int top, struct db_opkernels *out /* OUT */);
void db_opkernels_free(struct db_opkernels *o);

/* GPU user annotations (db/annotations.c; docs/device.md): the ranges on the device lanes of
 * streams (Kineto's gpu_user_annotation: a record_function, a ProfilerStep, a DDP or optimizer range
 * as the device ran it) per rank and name, those starting in the filter's windows. Ordered by rank,
 * then total time (largest first), then name. HTA: get_gpu_user_annotation_breakdown. */
struct db_annotation_stat {
	int rank;
	char *name;
	int64_t count;
	int64_t total_ns;           /* summed durations (HTA's sum) */
	int64_t min_ns, max_ns;
	int64_t span_ns;            /* the union of the instances: device time spanned (total less overlaps) */
};
int db_annotation_stats(struct db *db, struct db_filter f, struct db_annotation_stat **out /* OUT */, int *n /* OUT */);
void db_annotation_stats_free(struct db_annotation_stat *a, int n);

/* CUPTI counters per kernel (db/counters.c; docs/device.md): the counter ranges of CUPTI range
 * profiling (device lanes of stream DB_STREAM_COUNTERS), each with the numeric members of its args
 * and the CPU operators open at its launch (the launch link the import made), selected by the
 * launch's start in the filter's windows (a range without a launch: its own start). HTA:
 * get_cupti_counter_data_with_operators. Free with db_counters_free (also after a failure). */
struct db_kernel_counters {
	int rank, device;
	int64_t start_ns, dur_ns;   /* the range (the profiler's replay of the kernel, not its time) */
	char *name;                 /* the kernel */
	int linked;                 /* 1: paired with its launch call */
	int launch_tid;
	int64_t launch_ns;
	char **ops;                 /* the operators open at the launch, outermost first */
	int nops;
	double *values;             /* values[i]: counter i of db_counters.counters, NaN where it has none */
	int nvalues;                /* ≤ ncounters (missing ones at the end: none) */
};
enum db_counter_level { DB_COUNTERS_BY_KERNEL = 0, DB_COUNTERS_BY_OP = 1, DB_COUNTERS_BY_TOP_OP = 2 };
/* Counters summed over the kernels of one name (BY_KERNEL), of one innermost operator at launch
 * (BY_OP: HTA's bottom_level_op) or one outermost (BY_TOP_OP: top_level_op); "" for kernels without
 * an operator. */
struct db_counter_group {
	int rank, level;
	char *name;
	int64_t kernels;
	double *sums;               /* sums[i]: counter i over the group's kernels that have it */
};
struct db_counters {
	char **counters;            /* counter names, in the order first met */
	int ncounters;
	struct db_kernel_counters *kernels;   /* by rank, device, start */
	int nkernels, linked;
	struct db_counter_group *groups;      /* by level, rank, kernels (most first), name */
	int ngroups;
};
int db_counters(struct db *db, struct db_filter f, struct db_counters *out /* OUT */);
void db_counters_free(struct db_counters *c);

/* The arguments of an event as JSON text (*json NULL when it has none; caller frees). */
int db_event_args(struct db *db, const struct db_event *e, char **json /* OUT */);
/* The event a launch link joins e to: *dir = 1 (e launched the kernel at (*tid, *start_ns)), −1 (e is
 * the kernel, launched from there), 0 none. */
int db_event_link(struct db *db, const struct db_event *e, int *tid /* OUT */, int64_t *start_ns /* OUT */,
		  int *dir /* OUT */);

/* ---- queries for the advisor ---- (db/advise_queries.c: `ascent advise` and `diag --db`) */

/* Append one row to diag_check (ts_utc_ns: when the check ran, ns since the epoch; value: NAN
 * stores NULL; unit and detail may be NULL). Autocommits unless inside db_begin/db_commit. */
int db_put_diag_check(struct db *db, int64_t ts_utc_ns, const char *name, const char *status, double value,
		      const char *unit, const char *detail);
/* Stream diag_check rows in id order. Strings are valid during the call only; value is NAN for NULL. */
typedef int (*db_diag_check_cb)(void *ud, int64_t id, int64_t ts_utc_ns, const char *name, const char *status,
				double value, const char *unit, const char *detail);
int db_each_diag_check(struct db *db, db_diag_check_cb cb, void *ud);

/* The run row (the first one). Strings are malloc'd (NULL when the column is NULL or there is no
 * row: then *found = 0); free with db_run_info_free. */
struct db_run_info {
	char *command_line, *config_json, *created_utc;
	int world_size;
};
int db_get_run(struct db *db, struct db_run_info *out /* OUT */, int *found /* OUT */);
void db_run_info_free(struct db_run_info *r);   /* frees the strings; accepts NULL */

/* Counter samples of series `name` whose value is NULL (SQLite stores a NaN as NULL, so this is how
 * a NaN loss shows): *n of them, the earliest (by ts_ns, then rank) in *first_rank and *first_ts
 * (-1 when none). */
int db_counter_nulls(struct db *db, const char *name, int64_t *n /* OUT */, int *first_rank /* OUT */,
		     int64_t *first_ts /* OUT */);

/* Stream the comm table (which communicators each rank belongs to) ordered by comm_id, rank.
 * name may be NULL. */
typedef int (*db_comm_cb)(void *ud, int rank, int64_t comm_id, const char *name, int size, int rank_in_comm);
int db_each_comm(struct db *db, db_comm_cb cb, void *ud);

/* ---- queries for the viewer (viewer engineer) ---- */
/* db/view_cache.c, db/view_query.c. The viewer's summary tables (view_*: per rank/step/operator,
 * per collective, rank x rank traffic, memory over time, timeline bins, loss per step) are built
 * once per database by db_view_prepare and kept in the file (or, when the file is read-only, in
 * this connection's temporary tables); then every function below is a query on those small tables
 * or a paged query on an indexed column. docs/viewer.md lists the tables.
 * Time in these functions is on the lowest rank's clock (each rank shifted by
 * t0_ns + clock_offset_ns − t0_ns of the lowest rank), in ns, unless a field says otherwise. */

struct db_view_probe {
	int indexed;          /* db_finalize's indexes exist (0: the run is live or was killed) */
	int wal;              /* a non-empty "-wal" file lies next to the database */
	int has_events;       /* at least one event */
	int cached;           /* the viewer's summary tables are present and current */
	int64_t nranks;       /* rows of the rank table */
};
/* Inspect a file without changing it. */
int db_view_probe(struct db *db, struct db_view_probe *out /* OUT */);
/* Build the summary tables when missing (seconds for millions of events; once per file).
 * *built (may be NULL) = 1 when they were built now. ASCENT_EINPUT when the file has no events. */
int db_view_prepare(struct db *db, int *built /* OUT */);
/* A finished import's db_finalize and db_view_prepare (summary tables in the file) on three
 * connections: while this one runs db_finalize's pass over the events, two more opened on db's
 * path build the device tables (device work per launching step, per-device figures, critical
 * paths) and the tables of the pass in nesting order into their temporary tables; then one at a
 * time they write into the file: the statistics, the device tables, the rest and the name index.
 * The same rows in every table as db_finalize then db_view_prepare (test_import). The file must be
 * db's alone (no other writer); a file without events gets db_finalize only, a job of more than 64
 * ranks the two one after the other on this connection (the passes' working sets grow with the
 * ranks: held at once they would add up). */
int db_finalize_view(struct db *db);

/* The run, for the overview. Strings are the caller's: free with db_view_run_free. */
struct db_view_run {
	char *command_line, *config_json, *created_utc, *host, *tool_version;   /* "" when unknown */
	int world_size, nranks, nlanes;
	int64_t nsteps, step_lo, step_hi;    /* steps recorded (step events); lo/hi −1 when none */
	int64_t t0_ns, t1_ns;                /* aligned span of all events */
	int64_t nevents;                     /* events summarised */
};
int db_view_run(struct db *db, struct db_view_run *out /* OUT */);
void db_view_run_free(struct db_view_run *r);

/* Per (kind, name) over the filter (rank < 0 all; steps step_lo..step_hi, step_lo < 0 all).
 * kind_mask: bit (1 << kind) selects kinds. med_ns/p95_ns are exact over the whole run (per rank
 * or all ranks) and −1 when a step filter is active. Unordered. Free with db_view_ops_free. */
struct db_view_op {
	char *name;
	int64_t name_id;
	int kind;
	int64_t count, total_ns, self_ns, min_ns, max_ns, med_ns, p95_ns;
	double flops;            /* summed FLOPs of instances that declared them */
	int64_t flops_ns;        /* their time */
};
int db_view_ops(struct db *db, struct db_filter f, unsigned kind_mask, struct db_view_op **out /* OUT */,
		int *n /* OUT */);
void db_view_ops_free(struct db_view_op *v, int n);

/* Collectives and p2p: by_comm = 0 per (kind, name, size bucket); 1 per communicator (comm_id,
 * with its name and size from the comm table; name "" when unknown). wait/transit/late are sums
 * over calls matched across ranks by (comm_id, seq); late = own start − first arrival. */
struct db_view_comm {
	char *name;              /* operation name (by_comm = 0) or communicator name (by_comm = 1) */
	int64_t name_id;         /* by_comm = 0 */
	int kind;                /* DB_KIND_COMM or DB_KIND_P2P (by_comm = 0) */
	int64_t bucket;          /* bytes bucket: largest power of two ≤ bytes (by_comm = 0) */
	int comm_id;             /* by_comm = 1 */
	char *members;           /* by_comm = 1: its world ranks in communicator order, "0,2" ("" unknown) */
	int group_size;          /* members (max over ranks of comm.size; 1 unknown) */
	int64_t count, total_ns, bytes, matched, wait_ns, transit_ns, late_ns;
	int64_t queue_ns;        /* time in the communicator's queue before the transfer ("queue_ns" arguments) */
};
int db_view_comms(struct db *db, struct db_filter f, int by_comm, struct db_view_comm **out /* OUT */,
		  int *n /* OUT */);
void db_view_comms_free(struct db_view_comm *v, int n);

/* One row per step over the filter's ranks: the msprof split averaged over ranks, the slowest rank
 * and the spread (max − min of the step's total across ranks); loss = mean over ranks of the last
 * "loss" counter inside the step (has_loss 0 when none). Ordered by step. Caller frees *out. */
struct db_view_step {
	int64_t step;
	int nranks;
	int64_t max_total_ns, min_total_ns;
	int slow_rank;
	int64_t computing_ns, comm_not_overlapped_ns, overlapped_ns, free_ns, bubble_ns, preparing_ns; /* means */
	double loss;
	int has_loss;
};
int db_view_steps(struct db *db, struct db_filter f, struct db_view_step **out /* OUT */, int *n /* OUT */);
/* db_step_work(db, f, ...)'s rows read from view_stepwork (built once over the whole profile by
 * db_view_prepare): the same rows in the same order, a query instead of a scan of the device
 * events; computed by db_step_work when the summary tables are missing or not current (a profile
 * not imported and never viewed). free(*out). */
int db_view_step_work(struct db *db, struct db_filter f, struct db_step_work **out /* OUT */, int *n /* OUT */);
/* db_device_stats(db, f, ...)'s result: without a step filter read from view_device, view_devcopy
 * and view_stream (built once over the whole profile by db_view_prepare; a device's figures do not
 * depend on the rank filter), with a single step (A:A) of the profile from view_devstep,
 * view_devcopystep and view_streamstep (each step's, built in the same read when devices × steps ≤
 * DB_VIEW_DEVSTEP_MAX), with a range of steps, or when the summary tables are missing or not
 * current, computed from the events (a range's figures are not sums of its steps': interval unions,
 * quantiles, queue lengths). Free with db_device_stats_free. */
int db_view_device_stats(struct db *db, struct db_filter f, struct db_device_stat **out /* OUT */, int *n /* OUT */);
/* A profile with a rank of more events than this gets no view_device tables (db_device_stats keeps a
 * rank's device events in memory: 300 MB for a 4M-event rank, inside the import); db_view_device_stats
 * then computes from the events. */
#define DB_VIEW_DEV_MAX_EVENTS 1000000
/* At most this many devices × steps get per-step device rows (view_devstep: 1,024 devices × 64 steps). */
#define DB_VIEW_DEVSTEP_MAX 65536
/* db_critpath(db, f, {.top = DB_VIEW_CP_TOP}, ...)'s result: without a step filter read from
 * view_critpath and view_cptop (built once over each whole rank by db_view_prepare) without the
 * path's events (ev NULL, nev 0: db_critpath for that rank alone gives them), with one computed
 * from the events, events included. Free with db_critpath_free. */
#define DB_VIEW_CP_TOP 3
int db_view_critpath(struct db *db, struct db_filter f, struct db_critpath **out /* OUT */, int *n /* OUT */);
/* A rank of more events than this has no summarised path in view_critpath (its graph takes about
 * 350 bytes an event: a whole 4M-event trace took 1.4 GB inside the import); db_view_critpath_skipped
 * says how many ranks were left out (report --by critpath --steps A:B computes any window). */
#define DB_VIEW_CP_MAX_EVENTS 400000
int db_view_critpath_skipped(struct db *db);

/* One row per rank (all ranks of the rank table and of the events; f.rank is ignored so a view can
 * highlight one): sums of the msprof split over the filter's steps, and lateness to matched
 * collectives. Ordered by rank. Free with db_view_ranks_free. */
struct db_view_rank {
	int rank;
	char *host;
	int64_t steps, total_ns, computing_ns, comm_ns, comm_not_overlapped_ns, overlapped_ns, free_ns, bubble_ns;
	int64_t late_ns, late_calls;   /* Σ(own start − first arrival), calls matched */
	int64_t wait_ns;               /* Σ wait over matched calls */
};
int db_view_ranks(struct db *db, struct db_filter f, struct db_view_rank **out /* OUT */, int *n /* OUT */);
void db_view_ranks_free(struct db_view_rank *v, int n);

/* Each rank's computing time in each step of the filter (f.rank is ignored), from step_stat:
 * the ranks view's heat strip. Ordered by step, then rank. Caller frees *out. */
struct db_view_rank_step {
	int rank;
	int64_t step, computing_ns;
};
int db_view_rank_steps(struct db *db, struct db_filter f, struct db_view_rank_step **out /* OUT */, int *n /* OUT */);

/* ---- a run read while it runs (db/view_live.c) ----
 * The rank files (rank-NNNNN.db) of a run folder, opened DB_READ_LIVE: never written, never
 * checkpointed, no read transaction left open between refreshes, so the writers never wait. Each
 * db_live_refresh reads per rank only the events since the last one (the open step and the last
 * two seconds: docs/viewer.md); the summaries live in memory. The queries give the structs of the
 * finished profile's viewer queries above; last_n > 0 (without a step range in f) covers each
 * rank's last last_n steps, last_n < 0 the whole run. Not available live: operator self time,
 * median and p95 (−1), collectives' matching across ranks (matched 0), lateness. */
enum db_live_state { DB_LIVE_STARTING = 0, DB_LIVE_RUNNING, DB_LIVE_ENDED, DB_LIVE_DEAD };
struct db_live_rank {
	int rank;                 /* from the file name */
	const char *path, *host;  /* host "" until the file says */
	int pid;                  /* −1 until the file says */
	int local;                /* on this host (its pid is checked too) */
	int state;                /* enum db_live_state: ENDED finalized, DEAD its writer lock free
				   * without that (profiler/writer.c's flock) */
	int64_t state_utc_ns;     /* when this reader saw the state change */
	int64_t events;           /* read so far */
	int64_t last_ns;          /* latest event end (ns since the rank's start) */
	int64_t t0_utc_ns;        /* the rank's start (wall clock) */
	int64_t last_step;        /* −1 none */
};
struct db_live;
/* The number of rank files in dir (0 when none or no folder). */
int db_live_rank_files(const char *dir);
int db_live_open(const char *dir, struct db_live **out /* OUT */);
int db_live_refresh(struct db_live *lv);
void db_live_close(struct db_live *lv);       /* accepts NULL */
int db_live_nranks(const struct db_live *lv);
const struct db_live_rank *db_live_rank_at(const struct db_live *lv, int i);   /* by rank */
const char *db_live_command_line(const struct db_live *lv);   /* "" until known */
const char *db_live_config_json(const struct db_live *lv);
int db_live_world_size(const struct db_live *lv);
/* Steps seen on any rank of f (ordered): time = the step event's duration; the split (means over
 * the ranks whose step is settled) is −1 until one is; has_loss 0 (the run's metrics have it). */
int db_live_steps(struct db_live *lv, struct db_filter f, struct db_view_step **out /* OUT */, int *n /* OUT */);
/* Every rank (f.rank ignored): sums of its settled steps' splits (the last last_n, or f's range). */
int db_live_ranks(struct db_live *lv, struct db_filter f, int last_n, struct db_view_rank **out /* OUT */,
		  int *n /* OUT */);
int db_live_ops(struct db_live *lv, struct db_filter f, int last_n, unsigned kind_mask, struct db_view_op **out /* OUT */,
		int *n /* OUT */);
int db_live_comms(struct db_live *lv, struct db_filter f, int last_n, struct db_view_comm **out /* OUT */,
		  int *n /* OUT */);

/* Rank x rank traffic over the filter's steps: bytes[i * n + j] from ranks[i] to ranks[j], count
 * likewise (p2p sends; a matched collective spreads each member's bytes evenly over the others).
 * *ranks lists the n ranks, ascending. Caller frees the three arrays. */
int db_view_matrix(struct db *db, struct db_filter f, int **ranks /* OUT */, int *n /* OUT */,
		   int64_t **bytes /* OUT */, int64_t **count /* OUT */);

/* The communication matrix as a heat map: db_comm_matrix's cells over the whole job (view_link: all
 * link kinds of a pair summed: point-to-point, two-member collectives, ring links) by host pair
 * (by_host) or by rank pair, each cell's bandwidth (bytes / time) against the median cell's. Labels
 * are the hosts (sorted; "?" unknown) or the ranks ("r5", ascending): every rank of the rank table and
 * of the links, every host of those ranks. Cells are sparse, by (src, dst) as label indices;
 * slowness = median GB/s / the cell's GB/s (1 the median, 2 half its bandwidth; below 1 faster), 0
 * when the cell has no time or no bytes (no bandwidth). One query of the cached view tables (plus the
 * rank table). Free with db_view_heat_free. */
struct db_view_heat_cell {
	int src, dst;
	int64_t transfers, bytes, time_ns;
	double gbs, slowness;
};
struct db_view_heat {
	int by_host;
	int n;                          /* labels (rows = columns) */
	char **labels;
	struct db_view_heat_cell *cells;
	int ncells;
	double median_gbs;              /* over the cells with a bandwidth; 0 none */
	int slowest;                    /* index of the cell of least bandwidth, −1 none */
	int nranks, nhosts;
};
int db_view_heat(struct db *db, int by_host, struct db_view_heat *out /* OUT */);
void db_view_heat_free(struct db_view_heat *h);

/* Peak bytes in use per (rank, device, category) (all ranks when f.rank < 0), ordered by rank, device,
 * category. */
int db_view_mem_peaks(struct db *db, struct db_filter f, struct db_mem_stat **out /* OUT */, int *n /* OUT */);
/* Bytes in use on one device (all categories) over [t0, t1) (aligned ns) in nbins bins: out[k] = the
 * most in use on any one device of the rank during bin k (of any rank when rank < 0: the fullest
 * device), −1 where nothing is known. Downsampled from a cached series. */
int db_view_mem_series(struct db *db, int rank, int64_t t0, int64_t t1, int nbins, int64_t *out /* OUT nbins */);

/* Timeline lanes: one per (rank, thread) with events, ordered by rank, tid; rank < 0 all. */
struct db_view_lane {
	int rank, tid;
	char *name;              /* thread name, "" unknown */
	int64_t shift_ns;        /* add to the rank's stored times to get aligned times */
	int64_t maxdur_ns;       /* longest non-step event (bounds paged window queries) */
	int64_t nevents;
};
int db_view_lanes(struct db *db, int rank, struct db_view_lane **out /* OUT */, int *n /* OUT */);
void db_view_lanes_free(struct db_view_lane *v, int n);

/* Classes a timeline draws. */
enum db_view_class { DB_VC_COMPUTE = 0, DB_VC_COMM = 1, DB_VC_DATA = 2, DB_VC_OTHER = 3, DB_VC_COUNT };
int db_view_class_of(int kind);   /* op → compute; comm, p2p → comm; data, io, checkpoint → data; else other */

/* What one lane holds in [t0, t1) (aligned ns) cut into nbins equal bins: busy ns per class, and
 * the name (and start, aligned) of the leaf event with the largest overlap in each bin. Reads the
 * events themselves (a paged query on (rank, start_ns)) when the window holds at most
 * `max_events` of them, else the cached bins (name_start then −1); *exact says which. */
struct db_view_bin {
	int64_t busy_ns[DB_VC_COUNT];
	int64_t name_id;         /* 0 none */
	int64_t name_start;      /* aligned start of that event; −1 unknown */
	int kind;                /* its kind, −1 none */
};
int db_view_lane_bins(struct db *db, const struct db_view_lane *lane, int64_t t0, int64_t t1, int nbins,
		      int64_t max_events, struct db_view_bin *out /* OUT nbins */, int *exact /* OUT */);
/* Step boundaries of a rank in [t0, t1) aligned: starts[i], steps[i]; at most max. */
int db_view_step_marks(struct db *db, int rank, int64_t shift_ns, int64_t t0, int64_t t1, int max,
		       int64_t *starts /* OUT */, int64_t *steps /* OUT */, int *n /* OUT */);

/* One event with its details and stack (frames innermost first). Free with db_view_event_free. */
struct db_view_event {
	struct db_event e;       /* stored times (rank's clock) */
	int64_t astart_ns;       /* aligned start */
	char *name, *site;       /* site: "file.c:LINE" or "" */
	char *comm_name;         /* communicator name or "" */
	int nframes;
	char **frames;           /* "symbol (module+0xoff)" */
};
/* The innermost non-step event of `lane` covering aligned time t (1 found, 0 none). */
int db_view_event_at(struct db *db, const struct db_view_lane *lane, int64_t t, struct db_view_event *out /* OUT */);
/* The next (dir > 0) or previous (dir < 0) event on the lane whose name id is in ids[0..nids)
 * starting after (before) aligned time t; 1 found (out filled), 0 none. */
int db_view_event_next(struct db *db, const struct db_view_lane *lane, int64_t t, int dir, const int64_t *ids,
		       int nids, struct db_view_event *out /* OUT */);
void db_view_event_free(struct db_view_event *e);

/* Instances of one (kind, name), slowest first (reverse: fastest first), rows [offset, offset+limit)
 * of the filter (rank and steps). *total = all matching instances. Paged on index (name_id, dur_ns).
 * Caller frees *out (plain structs). */
int db_view_instances(struct db *db, struct db_filter f, int kind, int64_t name_id, int reverse, int64_t offset,
		      int limit, struct db_event **out /* OUT */, int *n /* OUT */, int64_t *total /* OUT */);

/* Findings stored with the profile: diag_check rows that are not PASS, and notes of level warn or
 * error; cb gets ("diag"|"note", level, text). */
typedef int (*db_view_finding_cb)(void *ud, const char *source, const char *level, const char *text);
int db_view_findings(struct db *db, db_view_finding_cb cb, void *ud);

/* ---- quant results (quant engineer) ---- (db/quant_queries.c: `ascent quant ptq|qat --db`) */

/* Append one row to quant_layer: the layer's HF module name ("h.3.mlp.c_fc"), the method that set
 * its scale (a calibrator name, "dynamic", "weight-only" or "fp32"; may be NULL), the scale
 * (NAN stores NULL), the SQNR in dB of its output (NAN: NULL), and a JSON object `detail` (may be
 * NULL). Autocommits unless inside db_begin/db_commit. ASCENT_EINTERNAL on a read-only db. */
int db_put_quant_layer(struct db *db, const char *layer, const char *method, double scale, double sqnr_db,
		       const char *detail);
/* Stream quant_layer rows in id order. Strings are valid during the call only (method and detail
 * may be NULL); scale and sqnr_db are NAN for NULL. A non-zero return from cb stops and is returned. */
typedef int (*db_quant_layer_cb)(void *ud, int64_t id, const char *layer, const char *method, double scale,
				 double sqnr_db, const char *detail);
int db_each_quant_layer(struct db *db, db_quant_layer_cb cb, void *ud);

/* ---- two profiles compared (db/diff.c: `ascent diff A B`, docs/diff.md) ----
 * Side 0 is A (the baseline), side 1 is B; every change is B − A. Each side has its own filter (a
 * rank, a step range: the steps of two runs need not have the same numbers). Names are matched as
 * text, so the two files may come from different sources (ascent's own run, Kineto, Nsight, Ascend),
 * except that unless exact_names a hexadecimal address in a name ("0x" and 6 or more hex digits,
 * as Python's "<built-in method item of Tensor object at 0xfffcd9bd7270>") is written "0x...": an
 * object's address differs from run to run. Rows are matched, and named, by that name. */

/* What happened to a name, by count (as Holistic Trace Analysis' TraceDiff): added (A has none),
 * removed (B has none), increased / decreased (B has more / fewer calls), unchanged (as many). */
enum db_diff_cat { DB_DIFF_UNCHANGED = 0, DB_DIFF_ADDED, DB_DIFF_REMOVED, DB_DIFF_INCREASED, DB_DIFF_DECREASED };
int db_diff_category(int64_t a_count, int64_t b_count);
const char *db_diff_cat_name(int cat);        /* "unchanged", "added", "removed", "increased", "decreased" */

/* One side's overview. Step sums are over the (rank, step) rows of db_step_stats under the side's
 * filter; the split's shares are of step_total_ns. */
struct db_diff_side {
	int nranks;                   /* ranks of the rank table under the filter */
	int64_t steps;                /* distinct step numbers */
	int64_t step_rows;            /* (rank, step) rows decomposed */
	int64_t step_total_ns, computing_ns, comm_not_overlapped_ns, free_ns, bubble_ns;
	int has_tokens;               /* a tokens_per_s counter (ascent's trainer) under the filter */
	double tokens_per_s;          /* the mean of its samples on the lowest rank that has them */
	int has_mem;                  /* memory records under the filter */
	int64_t peak_mem_bytes;       /* max over ranks, devices and time of one device's bytes in use, all categories summed */
	int64_t linked;               /* device events reached by a launch link launched under the filter */
	int64_t linked_ns;            /* their time */
	int64_t unattributed, unattributed_ns;   /* of them, launched outside every CPU operator (kind op) */
};

/* One (kind, name) of either side: kinds op, comm, p2p, phase, data, io, checkpoint, range, wait,
 * microbatch, kernel, memcpy, memset (every kind but step: steps are the overview). */
struct db_diff_row {
	char *name;
	int kind;
	int64_t count[2], total_ns[2];   /* 0 where a side lacks it */
	int category;                    /* enum db_diff_cat */
};

/* Collectives and point-to-point per (kind, name, size bucket), as db_comm_stats gives them. */
struct db_diff_comm {
	char *name;
	int kind;
	int64_t bucket;
	int64_t count[2], bytes[2], total_ns[2];
	double busbw_gbs[2];             /* 0 where a side lacks it */
};

/* A CPU operator (kind op) with the device work it launched: each launch link (DB_FLOW_LAUNCH)
 * whose launch (a runtime call) lies inside an instance of the operator on the same thread (or
 * is the call an operator → call link (DB_FLOW_CALL, Ascend) comes from the operator to) gives
 * the device event it reaches (kernel, copy, memset, device collective) to that operator name,
 * once per name however deeply the name nests (device_ns), and to the innermost operator
 * (device_self_ns). Only operators that launched something on either side. */
struct db_diff_opdev {
	char *name;
	int64_t count[2], cpu_ns[2];
	int64_t launched[2];             /* device events launched inside it */
	int64_t device_ns[2], device_self_ns[2];
	int category;                    /* by count */
};

struct db_diff {
	struct db_diff_side side[2];
	struct db_diff_row *rows;        /* by |Δ total_ns| descending, then kind, name */
	int nrows;
	struct db_diff_comm *comms;      /* by kind, name, bucket */
	int ncomms;
	struct db_diff_opdev *opdev;     /* by |Δ device_ns| descending, then name */
	int nopdev;
};
/* Compare profile a under fa with profile b under fb (the same db may be given twice). */
int db_diff(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int exact_names,
	    struct db_diff *out /* OUT */);
void db_diff_free(struct db_diff *d);   /* accepts a zeroed struct */

/* One row's distribution on both sides (the viewer's diff view, Enter on a row): the durations of
 * the (kind, name) instances under each side's filter — every name id whose matched name (as
 * db_diff matches, exact_names likewise) is `name` — their count, mean, min, median and p95 (as
 * report's: db_quantiles), max, and a histogram over log-spaced bins shared by both sides, from the
 * shortest to the longest instance of either (bin k: edge_ns[k] <= d < edge_ns[k + 1], the last
 * bin also holds its upper edge). Reads the events of those names (the viewer's index on
 * (name_id, dur_ns) when the file has it), not the whole table. */
#define DB_DIFF_DIST_BINS 12
struct db_diff_dist {
	int64_t n[2], min_ns[2], med_ns[2], p95_ns[2], max_ns[2];
	double mean_ns[2];
	int nbins;                                  /* 0 when neither side has an instance */
	int64_t edge_ns[DB_DIFF_DIST_BINS + 1];
	int64_t hist[2][DB_DIFF_DIST_BINS];
};
int db_diff_dist(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int kind, const char *name,
		 int exact_names, struct db_diff_dist *out /* OUT */);

/* The regressions that matter (db_diff_advise, `ascent diff A B --advise`, docs/diff.md): the named
 * rows of a db_diff ranked by their share of the change in mean step time. Each row's time is made
 * per step and per rank (its total over the side's (rank, step) rows of the step decomposition),
 * so runs of different step and rank counts compare: delta_per_step_ns = B total / B step_rows −
 * A total / A step_rows, and share = delta_per_step_ns / (B mean step − A mean step). Rows are
 * the kinds that do work — CPU operators, kernels, copies, memsets, collectives, point-to-point,
 * waits, data loading, file I/O, checkpoints — not the containers around them (phases, user
 * ranges, micro-batches), plus the steps' free (idle) time, which has no name of its own. Rows
 * nest (a kernel inside its operator, an operator inside another), so shares need not add up.
 * A row's total counts whatever the side's filter selects, outside steps too unless steps are
 * filtered. */
enum db_diff_verdict {
	DB_DIFF_SLOWER = 0,     /* B's mean step is longer than A's by more than min_change of A's */
	DB_DIFF_FASTER,         /* shorter by more than that */
	DB_DIFF_SAME,           /* within it (min_change 0: equal) */
	DB_DIFF_NO_STEPS,       /* a side has no step: rows are made per rank only, no share */
};
const char *db_diff_verdict_name(int v);    /* "slower", "faster", "unchanged", "no steps" */

/* The step phases a row's time falls in, by kind (db_step_stats' split). */
enum db_diff_phase { DB_PHASE_COMPUTING = 0, DB_PHASE_COMM, DB_PHASE_FREE, DB_PHASE_BUBBLE, DB_PHASE_COUNT };
const char *db_diff_phase_name(int p);      /* "computing", "communication not overlapped", "free", "bubble" */

#define DB_DIFF_FREE_KIND (-1)              /* the kind of the row of the steps' free (idle) time */
struct db_diff_regression {
	const char *name;       /* the row's name (points into the db_diff, or a constant for free time) */
	int kind;               /* enum db_kind, or DB_DIFF_FREE_KIND */
	int category;           /* enum db_diff_cat (free time: unchanged) */
	int64_t count[2], total_ns[2];
	double per_step_ns[2];  /* total / the side's step rows (per rank where a side has no step) */
	double delta_per_step_ns;
	double share;           /* of the step-time change; NAN unless the verdict is DB_DIFF_SLOWER */
	int phase;              /* enum db_diff_phase */
	const char *cause;      /* what usually causes this kind of change (a constant; "" for a decrease) */
	char evidence[768];     /* the numbers behind it: counts, means, bytes and bus bandwidth, the
				 * operator's device work, the phase's share of the step on both sides */
};

struct db_diff_advice {
	int verdict;                      /* enum db_diff_verdict */
	double min_change;                /* as given */
	double step_mean_ns[2];           /* per side; 0 where it has no step */
	double step_change_ns;            /* B − A */
	double phase_change_ns[DB_PHASE_COUNT];   /* per step: B − A of each phase's time per (rank, step) */
	struct db_diff_regression *r;     /* slower: rows with delta_per_step_ns > 0 by it, descending;
					   * else every row whose delta_per_step_ns is not 0 by its absolute
					   * value, descending (the largest changes, no share); then kind, name */
	int n;
};
/* Rank d's rows (d must outlive out). min_change: the step-time change, as a fraction of A's mean
 * step, below which the verdict is DB_DIFF_SAME (0.01: 1%; 0: any change counts); top: at most
 * that many rows (0: all). ASCENT_EUSAGE for a min_change outside [0, 10]. */
int db_diff_advise(const struct db_diff *d, double min_change, int top, struct db_diff_advice *out /* OUT */);
void db_diff_advice_free(struct db_diff_advice *a);   /* accepts a zeroed struct */

#endif
