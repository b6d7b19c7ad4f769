/* profiler/prof.h — the public face of `profiler`: the hook API (like NVTX) that the trainer, nn/,
 * comm/ and any other C program call to record where time and memory go, plus the profiler's
 * lifecycle (init, per-step schedule, shutdown, merge of the ranks' databases).
 *
 * Cost model
 *   Off (never initialised, outside the schedule's active/warmup windows, or turned off after an
 *   error): every hook is ONE predictable branch on prof_g.on, inlined here. On: no lock, no
 *   malloc, no syscall other than the vDSO clock — a record is appended to this thread's ring
 *   buffer (the ring itself is allocated on a thread's first recorded event), and a writer thread
 *   drains the rings into the rank's SQLite database in batched transactions.
 *
 * Names
 *   `name` arguments are NOT copied on the hot path: they must stay valid and unchanged until
 *   prof_shutdown() returns — string literals are ideal. For a name built at run time call
 *   prof_intern() once (it copies, takes a lock) and pass the pointer it returns.
 *
 * Threads
 *   Hooks may be called from any thread. Ranges are per thread: end a range on the thread that
 *   began it. prof_init/prof_step_begin/prof_step_end/prof_shutdown are called from one thread (the
 *   training loop's).
 *
 * A training loop (see docs/profiler-api.md):
 *
 *     struct prof_options po = { .db_path = "runs/x/rank-00000.db", .rank = 0, .world_size = 1,
 *                                .schedule = "wait=1,warmup=1,active=3" };
 *     if (prof_init(&po)) log_warn("profiling disabled: %s", ascent_errmsg());   // job goes on
 *     for (step = 0; step < n; step++) {
 *         prof_step_begin(step);                       // advances the schedule
 *         { PROF_SCOPE("forward"); ... }
 *         struct prof_tok t = prof_op_begin("matmul", layer, 2.0 * M * N * K);
 *         nn_gemm(...);
 *         prof_op_end(&t);
 *         prof_counter("loss", loss);
 *         prof_step_end();
 *     }
 *     prof_shutdown();                                 // flush, indexes, close
 *     // all ranks done (barrier in comm/), then on rank 0:
 *     prof_merge("runs/x", NULL, 1);                   // → runs/x/trace.db, parts removed
 *
 * Errors: functions returning int give 0 or a negative ASCENT_E* code with ascent_error()'s
 * message. Hooks return nothing and never fail: if the database cannot be written the profiler
 * turns itself off, logs why, records it in the database when it can, and the program goes on.
 */
#ifndef ASCENT_PROF_H
#define ASCENT_PROF_H

#include <stdint.h>
#include <stdio.h>

#include "common/common.h"
#include "db/db.h"   /* enum db_kind, enum db_mem_cat: the codes stored in the database */

/* ------------------------------------------------------------------------------------------ */
/* The hooks' per-process state, read on every hook (the rest of the profiler's state is struct
 * prof_state in profiler/internal.h; docs/background.md, "Globals", lists the project's few
 * process-wide globals). Fields and the threads that write them:
 *   on        written by the thread that calls prof_init/prof_step_begin/prof_shutdown (the
 *             schedule) and by the writer thread (turns it off on a write error); read by every
 *             hook with a relaxed load. 1 = hooks record.
 *   step      written by the prof_step_begin thread only; read by hooks (tag on each event).
 *   mb        written by prof_microbatch_begin/end (the training thread); read by hooks.
 *   everything else lives in the profiler sources, behind functions. */
struct prof_global {
	int on;
	int mb;
	int64_t step;
};
extern struct prof_global prof_g;

static inline int prof_on(void)
{
	return __builtin_expect(__atomic_load_n(&prof_g.on, __ATOMIC_RELAXED), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* Lifecycle */

struct prof_options {
	const char *db_path;      /* this rank's database, e.g. "runs/x/rank-00003.db" (created;
				   * an existing file is replaced). Required. */
	int rank;                 /* this process's rank (0 without MPI) */
	int world_size;           /* 1 without MPI */
	int dp_rank, tp_rank, pp_rank;            /* coordinates, -1 when unknown */
	const char *schedule;     /* "skip=S,wait=W,warmup=U,active=A,repeat=R" (PyTorch's rule,
				   * docs/background.md; any subset, defaults 0 except active) or NULL /
				   * "" = record every step (and everything before the first step) */
	int64_t max_mb;           /* size budget of this rank's database in MB (1e6 B); after it
				   * detail stops, per-step aggregates go on; 0 = unlimited */
	int stacks;               /* 1: capture call stacks (libunwind) at range begin and alloc */
	int sample_hz;            /* > 0: SIGPROF sampler at this rate (stacks of CPU time) */
	int ring_events;          /* records per thread ring (rounded up to a power of two);
				   * 0 = 65536 (4 MiB per thread) */
	int flush_ms;             /* writer commits at least this often; 0 = 200 ms (≤ 1000) */
	const char *command_line; /* stored in the run table; may be NULL */
	const char *config_json;  /* resolved configuration, stored in the run table; may be NULL */
	int resume;               /* 1: when db_path holds this rank's profile written by this same
				   * process id (the image before an exec, prof_exec_prepare), go on
				   * writing it with its t0 instead of replacing it */
};

/* Parse a --profile-steps string into its five numbers. Errors (ASCENT_EUSAGE) name the bad key
 * or value. Constraints: all ≥ 0, active > 0. */
struct prof_schedule { int64_t skip, wait, warmup, active, repeat; };
int prof_schedule_parse(const char *s, struct prof_schedule *out /* OUT */);
/* PyTorch's action for a step: 0 none, 1 warmup (hooks run, data dropped), 2 record. */
enum prof_action { PROF_NONE = 0, PROF_WARMUP = 1, PROF_RECORD = 2 };
enum prof_action prof_schedule_action(const struct prof_schedule *s, int64_t step);

/* Create the database, start the writer thread, arm the schedule. Failure leaves the profiler
 * off and returns the error; the caller logs it and goes on. Calling twice is ASCENT_EUSAGE. */
int prof_init(const struct prof_options *o);
/* Stop hooks, drain the rings, write aggregates and the overhead table, symbolize stacks, build
 * indexes, close. Returns the first error the profiler met (it was off since), else 0. Safe to
 * call when prof_init failed or was never called (then 0). */
int prof_shutdown(void);
/* Before this process execs (the preload's exec wrappers): the sampler's timer deleted and its
 * pending SIGPROF taken (else the new program would meet it without a handler), an "exec" instant
 * range recorded, everything recorded so far committed. The new image's prof_init with
 * .resume goes on writing the same file. prof_exec_failed restarts the sampler when exec returned.
 * Both do nothing when the profiler is not running. */
void prof_exec_prepare(void);
void prof_exec_failed(void);
/* 1 between a successful prof_init and prof_shutdown (even while the schedule has hooks off). */
int prof_initialized(void);

/* Merge every rank-NNNNN.db in run_dir into out_path (NULL = run_dir/trace.db), written to a
 * temporary then renamed (an out_path that is one of the rank files is refused, fs_output_check),
 * and build the viewer's tables in it; the parts are removed when remove_parts is 1. Works on
 * databases left by a killed run (a log that lost data is warned about and noted in the profile);
 * refuses (ASCENT_EINPUT, nothing written or removed) a run whose rank file is still being written:
 * each writer holds a lock on its file from prof_init to prof_shutdown.
 * Call it on one process after every rank's prof_shutdown (a barrier). */
int prof_merge(const char *run_dir, const char *out_path, int remove_parts);
/* prof_merge, and allow_mixed: 1 to combine rank files of different runs (each rank file carries its
 * run's id, meta run_id: the launcher's job id, or pid and start of a process alone); 0 refuses them
 * (ASCENT_EINPUT naming the files and their runs). Ranks of the run's world size that no file holds
 * are warned about and noted ("ranks 2, 3 of 4 missing"). */
int prof_merge_runs(const char *run_dir, const char *out_path, int remove_parts, int allow_mixed);
/* A fact about this run for the profile's meta table (the trainer's layout, schedule, BLAS), kept
 * and written into this rank's file at prof_shutdown; merging copies it from the first rank that
 * has it. Each rank file also records its host's facts at prof_init (host_cores, host_mem_bytes,
 * mem_limit_bytes, cpu_isa, cpu_brand), and prof_merge builds the viewer's tables, so a profile
 * merged by hand (`ascent merge RUN`) is the one the program would have made. 0 and nothing done
 * when the profiler is not running. */
int prof_set_meta(const char *key, const char *value);
/* A note for this rank's profile ("info", "warn", "error" and a sentence), written at prof_shutdown:
 * `report` lists notes, `advise` raises "error" ones. 0 and nothing done when not running. */
int prof_add_note(const char *level, const char *text);
/* How this rank's program ended, recorded by the process that waited for it (`ascent profile`):
 * status as waitpid gives it. A signal becomes an "error" note of the merged profile, a non-zero
 * exit status a "warn" one (prof_merge reads them from DIR/rank-NNNNN.end); a clean exit nothing. */
int prof_record_end(const char *run_dir, int rank, int status);
/* "DIR/rank-%05d.db" into buf. */
void prof_rank_db_path(const char *run_dir, int rank, char *buf, size_t n);

/* A run-time name made permanent (copied once, deduplicated; lives until prof_shutdown).
 * Returns "?" when out of memory. Takes a lock: call it outside hot loops. */
const char *prof_intern(const char *s);

/* Clock alignment (docs/background.md, "Time"). comm/ implements it with an MPI ping-pong; the profiler
 * calls it at prof_init (if already set) or at registration, and again in prof_shutdown. It is a
 * collective: every rank must register it at the same point of the program. `out`: offset_ns =
 * rank 0's CLOCK_MONOTONIC minus this rank's, at the moment of measurement; err_ns its
 * uncertainty (half the best round trip). Return 0 or an ASCENT_E* code. Without it (one rank,
 * or before comm/ exists) offsets are 0 ± 0. */
struct prof_clock_sync { int64_t offset_ns, err_ns; };
typedef int (*prof_clock_fn)(void *arg, struct prof_clock_sync *out /* OUT */);
void prof_set_clock_sync(prof_clock_fn fn, void *arg);

/* ------------------------------------------------------------------------------------------ */
/* Steps. Call prof_step_begin at the top of each training step (it advances the schedule and may
 * turn hooks on or off) and prof_step_end at its bottom. Steps are numbered by the caller. */
void prof_step_begin(int64_t step);
void prof_step_end(void);

/* ------------------------------------------------------------------------------------------ */
/* Ranges. A token is returned by value by *_begin and consumed by *_end (pass its address). A
 * token begun while off has t0 == 0 and its end is one branch. */
struct prof_tok {
	int64_t t0;            /* start, CLOCK_MONOTONIC ns; 0 = not recording */
	const char *name;
	const char *site;      /* "file.c:123" from the PROF_* macros, or NULL */
	int64_t amount;        /* op: FLOPs (0 unknown); comm/p2p: bytes */
	int64_t seq;           /* comm/p2p: sequence number on the communicator */
	uint64_t stack;        /* stack hash with --profile-stacks, else 0 */
	int32_t arg;           /* op: layer (-1 none); comm: root or -1; p2p: peer rank */
	int32_t comm_id;       /* comm/p2p: communicator id */
	int16_t kind;          /* enum db_kind */
	int16_t mb;            /* micro-batch at begin */
};

struct prof_tok prof__begin(int kind, const char *name, const char *site, int64_t amount, int32_t arg,
			    int32_t comm_id, int64_t seq);
void prof__end(struct prof_tok *t);

/* A plain range (kind: DB_KIND_RANGE, or any enum db_kind: phase, data, io, checkpoint). */
static inline struct prof_tok prof_range_begin(const char *name)
{
	if (!prof_on())
		return (struct prof_tok){ 0 };
	return prof__begin(DB_KIND_RANGE, name, NULL, 0, -1, -1, -1);
}
static inline struct prof_tok prof_range_begin_kind(int kind, const char *name, const char *site)
{
	if (!prof_on())
		return (struct prof_tok){ 0 };
	return prof__begin(kind, name, site, 0, -1, -1, -1);
}
static inline void prof_range_end(struct prof_tok *t)
{
	if (__builtin_expect(t->t0 != 0, 0))
		prof__end(t);
}

/* An operator (kernel) range: `layer` is the transformer block (-1: none), `flops` the floating
 * point operations it performs (0: unknown). End with prof_op_end. */
static inline struct prof_tok prof_op_begin(const char *name, int layer, double flops)
{
	if (!prof_on())
		return (struct prof_tok){ 0 };
	return prof__begin(DB_KIND_OP, name, NULL, (int64_t)flops, layer, -1, -1);
}
#define prof_op_end prof_range_end

/* A collective on communicator `comm_id` (register it with prof_comm_register), its per-
 * communicator sequence number `seq` (the same on every member rank, so calls match across ranks),
 * `bytes` = the message size as nccl-tests counts it (S = count·sizeof; alltoall ×n; reduce-scatter
 * and all-gather: the full array), `root` (-1: none). */
static inline struct prof_tok prof_comm_begin(const char *name, int comm_id, int64_t seq, int64_t bytes,
					      int root)
{
	if (!prof_on())
		return (struct prof_tok){ 0 };
	return prof__begin(DB_KIND_COMM, name, NULL, bytes, root, comm_id, seq);
}
/* A point-to-point transfer to/from `peer` (rank in comm_id). Name it "send"/"recv" (or with those
 * prefixes: receives count as pipeline bubble). seq: per (communicator, pair, direction) counter,
 * equal on the sender and the receiver, so the export can draw a flow arrow. */
static inline struct prof_tok prof_p2p_begin(const char *name, int comm_id, int64_t seq, int64_t bytes,
					     int peer)
{
	if (!prof_on())
		return (struct prof_tok){ 0 };
	return prof__begin(DB_KIND_P2P, name, NULL, bytes, peer, comm_id, seq);
}
#define prof_comm_end prof_range_end
#define prof_p2p_end prof_range_end

/* Lanes. A lane is a row of the profile of its own (a `thread` row that no OS thread owns), for
 * work that runs beside the threads that asked for it, as a CUDA stream or NCCL's communicator is
 * a row of a PyTorch trace. comm/ ends each collective on its communicator's lane ("comm dp"),
 * whichever thread ran it, with the token's t0 moved to the start of the transfer. Any thread may
 * end a range on a lane (a lock serializes them); ranges on one lane must not overlap unless
 * nested — the caller runs one operation at a time per lane. `lane` is its name (it must stay
 * valid until prof_shutdown: a string literal). */
void prof__lane_end(struct prof_tok *t, const char *lane);
static inline void prof_lane_end(struct prof_tok *t, const char *lane)
{
	if (__builtin_expect(t->t0 != 0, 0))
		prof__lane_end(t, lane);
}
/* The same for a collective that waited `queue_ns` in its communicator's queue before the transfer
 * began (enqueue → start; ≤ 0: it did not wait) and ran the algorithm `algo` (a string literal such
 * as "ring" when the caller knows which one MPI ran, NULL when not): the event gets the argument
 * {"queue_ns": N, "algo": "ring"} (the arg table; each key only when there is one), which `report`
 * sums per collective row (queue_ns) and puts on ring links (algo: docs/cluster.md, "matrix"). */
void prof__lane_end_queued(struct prof_tok *t, const char *lane, int64_t queue_ns, const char *algo);
static inline void prof_lane_end_queued(struct prof_tok *t, const char *lane, int64_t queue_ns, const char *algo)
{
	if (__builtin_expect(t->t0 != 0, 0))
		prof__lane_end_queued(t, lane, queue_ns, algo);
}
/* A wait: this thread is blocked on communication that runs elsewhere (a collective on a lane),
 * `name` the collective's, with its communicator, seq and bytes. Ended with prof_range_end. The
 * waits are the communication the computation did not hide. */
static inline struct prof_tok prof_wait_begin(const char *name, int comm_id, int64_t seq, int64_t bytes)
{
	if (!prof_on())
		return (struct prof_tok){ 0 };
	return prof__begin(DB_KIND_WAIT, name, NULL, bytes, -1, comm_id, seq);
}

/* Describe a communicator once (not a hook; takes a lock): its id, name ("world", "dp", "tp",
 * "pp"), number of members and this rank's index in it. Used for bus bandwidth (n) in reports.
 * A rank is in one communicator per name: registering a name again under another id (the grid was
 * re-built) replaces the earlier one. `name` must stay valid (a string literal). */
void prof_comm_register(int comm_id, const char *name, int size, int rank_in_comm);

/* Micro-batches: tags every event until the end (and records a DB_KIND_MICROBATCH range). */
struct prof_tok prof__mb_begin(int mb);
static inline struct prof_tok prof_microbatch_begin(int mb)
{
	if (!prof_on()) {
		prof_g.mb = mb;
		return (struct prof_tok){ 0 };
	}
	return prof__mb_begin(mb);
}
static inline void prof_microbatch_end(struct prof_tok *t)
{
	prof_g.mb = -1;
	prof_range_end(t);
}

/* ------------------------------------------------------------------------------------------ */
/* Memory: `bytes` allocated or freed in category `cat` (enum db_mem_cat), `ptr` its address (for
 * pairing; may be NULL). In-use totals per category are kept even while hooks are off, so the
 * first recorded event has the right total. */
void prof__mem(int cat, int64_t bytes, const void *ptr);
static inline void prof_mem_alloc(int cat, int64_t bytes, const void *ptr)
{
	prof__mem(cat, bytes, ptr);
}
static inline void prof_mem_free(int cat, int64_t bytes, const void *ptr)
{
	prof__mem(cat, -bytes, ptr);
}

/* Counters: a named series (loss, lr, loss_scale, tokens_per_s, ...) sampled now. */
void prof__counter(const char *name, double value);
static inline void prof_counter(const char *name, double value)
{
	if (prof_on())
		prof__counter(name, value);
}

/* ------------------------------------------------------------------------------------------ */
/* Macros that capture the call site ("file.c:LINE") and a scope that ends itself. */
#define PROF__STR2(x) #x
#define PROF__STR(x) PROF__STR2(x)
#define PROF_SITE __FILE__ ":" PROF__STR(__LINE__)
#define PROF__CAT2(a, b) a##b
#define PROF__CAT(a, b) PROF__CAT2(a, b)

/* struct prof_tok t = PROF_BEGIN("name"); ... prof_range_end(&t); */
#define PROF_BEGIN(name) prof_range_begin_kind(DB_KIND_RANGE, (name), PROF_SITE)
/* Range over the rest of the enclosing block: { PROF_SCOPE("forward"); ... } */
static inline void prof__scope_end(struct prof_tok *t)
{
	prof_range_end(t);
}
#define PROF_SCOPE(name)                                                                          \
	struct prof_tok PROF__CAT(prof__scope_, __LINE__) __attribute__((cleanup(prof__scope_end))) = \
		prof_range_begin_kind(DB_KIND_RANGE, (name), PROF_SITE)
#define PROF_SCOPE_KIND(kind, name)                                                               \
	struct prof_tok PROF__CAT(prof__scope_, __LINE__) __attribute__((cleanup(prof__scope_end))) = \
		prof_range_begin_kind((kind), (name), PROF_SITE)

/* ------------------------------------------------------------------------------------------ */
/* Tools on a profile database (ascent report / export / merge call these). */

struct prof_report_opts {
	const char *db_path;
	const char *by;           /* NULL: overview + op + comm; or op|comm|step|rank|mem|stack|overhead|shape|device|runtime|opkernels|annotations|counters|critpath,
				   * or the whole job's spread|collective|matrix (docs/cluster.md) */
	int rank;                 /* -1: all */
	int64_t step_lo, step_hi; /* step_lo < 0: all steps */
	const char *format;       /* table (default), csv, json (all sections, one document) */
	FILE *out;                /* stdout when NULL */
	int wide;                 /* tables: whole names; else names shortened to the terminal's width
				   * (COLUMNS, else 200 columns when the output is no terminal) */
	int seq_len;              /* --by opkernels: length of the frequent kernel sequences (0: 3) */
	int top;                  /* --by opkernels: how many frequent sequences; --by critpath: top events; --by collective: worst calls (0: 20) */
	const char *window;       /* --by critpath: the window is a CPU range whose name holds this (NULL: steps or all) */
	int instance;             /* --by critpath: which such range, from 0 */
};
int prof_report(const struct prof_report_opts *o);

/* `ascent diff A B` (docs/diff.md): the comparison db_diff computed, rendered to f. Tables: the
 * overview (both sides' steps, step split, tokens/s, peak memory), every name of both sides, the
 * collectives per size, the CPU operators with the device work they launched; CSV: one of them
 * (--by's, else every name); JSON: one document {a, b, overview {a, b}, ops [], comm [], op_device []}
 * whose ops carry name, kind, category, a_count, b_count, a_total_ns, b_total_ns (0 where a side
 * lacks the name), their means and diff_total_ns. ASCENT_EUSAGE for an unknown format or --by. */
struct prof_diff_opts {
	const char *a_label, *b_label;   /* the inputs as the user named them */
	const char *by;           /* NULL: everything; "op" (host rows), "kernel" (device rows and the
				   * operators' device work), "comm" (communication rows, collectives), "step"
				   * (the overview only) */
	const char *format;       /* table (default), csv, json */
	int top;                  /* tables: at most this many rows per table (0: all) */
	int wide;                 /* tables: whole names (else fitted to the terminal, as report's) */
};
int prof_diff_print(const struct db_diff *d, const struct prof_diff_opts *o, FILE *f);
/* `ascent diff A B --advise` (docs/diff.md): the regressions db_diff_advise ranked, rendered to f.
 * Table: the overview, the verdict in a sentence (slower, not slower, nothing changed, no steps),
 * the change per step of each step phase, the regressions (rank, share, change and both sides per
 * step, category, kind, phase, name), then each one's evidence and usual cause. CSV: the
 * regressions' table with evidence and cause. JSON: {a, b, overview {a, b}, advice {verdict,
 * message, min_change, a_step_mean_ns, b_step_mean_ns, step_change_ns, phase_change_ns {phase: ns}},
 * regressions [{rank_order, kind, name, category, a_count, b_count, a_total_ns, b_total_ns,
 * a_per_step_ns, b_per_step_ns, delta_per_step_ns, share_of_step_change (null unless slower),
 * phase, evidence, cause}]}. o's by and top are not used (db_diff_advise took top).
 * ASCENT_EUSAGE for an unknown format. */
int prof_diff_advice_print(const struct db_diff *d, const struct db_diff_advice *a, const struct prof_diff_opts *o,
			   FILE *f);

struct prof_export_opts {
	const char *db_path;
	const char *out_path;     /* NULL: db path with .db replaced by .json (.folded for folded); "-":
				   * standard output */
	const char *format;       /* chrome (default) or folded */
	int gzip;                 /* also implied by out_path ending in .gz */
	int rank;
	int64_t step_lo, step_hi;
	int force;                /* write over a profile, checkpoint or shard at out_path (never over db_path) */
};
/* Refuses an out_path that is db_path, or (unless force) that is a profile, checkpoint or token shard
 * (fs_output_check), before writing anything. Writes to a temporary put in place when complete
 * (fs_tmp), or to standard output. *events (may be NULL): trace events written. */
int prof_export(const struct prof_export_opts *o, int64_t *events /* OUT */);

/* ------------------------------------------------------------------------------------------ */
/* State for tests and tools. */
struct prof_stats {
	int64_t events;           /* records pushed into rings */
	int64_t dropped;          /* records lost to full rings */
	int64_t written;          /* rows the writer inserted */
	int64_t detail_skipped;   /* records not stored in detail because of the size budget */
	int64_t hook_ns;          /* estimated time spent in hooks */
	int64_t writer_ns;        /* time the writer thread spent working (wall clock) */
	int64_t writer_cpu_ns;    /* CPU time of the writer thread while working (a shared, loaded
				   * machine inflates writer_ns, not this) */
	int threads;              /* rings registered */
	int failed;               /* 1 after a write error turned the profiler off */
};
void prof_get_stats(struct prof_stats *out /* OUT */);
/* Wait until the writer has committed everything recorded so far (tests, before a crash test). */
int prof_flush(void);

#endif
