/* import/import.h — `ascent import`: traces written by other profilers into an ordinary ascent
 * profile (the schema of db/db.h), so report, view, advise, export and merge read them unchanged.
 *
 * Two layers, so that each new format is only a reader:
 *
 *   source  reads one format and describes what it finds in the terms below: kineto.c, the
 *           PyTorch profiler's Chrome-trace JSON (torch.profiler / Kineto, also ROCm builds),
 *           streamed with yajl; nsys.c, Nsight Systems SQLite exports; ascend.c, torch_npu's
 *           Ascend profiler databases (the SQLite readers share sqlsrc.c). run.c picks the reader
 *           by content.
 *   sink    (struct imp, sink.c) everything that does not depend on the format: the output file
 *           (a temporary beside OUT, renamed over it only when complete; never one of the inputs),
 *           ranks and their clocks, lanes (CPU threads and device streams), interned names, the
 *           event kinds, collectives (groups, members, bytes, the per-group ordinal that matches
 *           calls across ranks), memory records, links between events (launch → kernel,
 *           forward → backward), event arguments, counted warnings, progress on stderr.
 *
 * A source calls, per input file:
 *   imp_file_begin(im, path, size)            then, for the file's rank,
 *   imp_rank_begin(im, rank, origin)          (before its first event),
 *   imp_lane / imp_event / imp_mem / imp_flow / imp_group / imp_warn / imp_progress, and
 *   imp_file_end(im, facts)                   (world size, base time, lane names).
 * The command calls imp_open, the source for every input, then imp_finish (or imp_abort).
 *
 * Time: a source gives times as int64 ns on the file's own clock (for Kineto: µs with three
 * decimals, parsed exactly, relative to baseTimeNanoseconds when present). The sink stores them
 * relative to the rank's origin (the first time the source declared) and keeps the origin (plus
 * the base, when known) as rank.t0_ns and rank.t0_utc_ns, so ranks align as ascent's own do.
 *
 * Errors: functions return 0 or a negative ASCENT_E* code with a message; bad input is
 * ASCENT_EINPUT with the file and the byte offset. Records that can be skipped are not errors:
 * imp_warn counts them by reason, and imp_finish prints one line per reason (with the first place
 * it happened) on stderr.
 */
#ifndef ASCENT_IMPORT_H
#define ASCENT_IMPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "db/db.h"

/* Where an import's time went (wall ns), filled by imp_finish when imp_opts.phases is set (the
 * bench's phase split). */
struct imp_phases {
	int64_t read_ns;           /* imp_open until every batch is written: parsing and inserting */
	int64_t writer_busy_ns;    /* of which the writer thread spent inserting */
	int64_t reader_wait_ns;    /* of which the reading thread waited for a free batch */
	int64_t reader_cpu_ns;     /* CPU time of the reading thread in that phase */
	int64_t writer_cpu_ns;     /* CPU time of the writer thread */
	int64_t post_ns;           /* links paired, collectives numbered, ranks and lanes written */
	int64_t finalize_ns;       /* db_finalize (indexes, op_stat, step_stat) and the viewer's tables */
	int64_t events;
};

struct imp_opts {
	const char *out_path;      /* the profile to write (OUT.db) */
	int quiet;                 /* no progress lines (warnings are still printed) */
	int rank;                  /* ≥ 0: the rank of the single input (--rank); −1: from the source */
	FILE *msgs;                /* where progress and warnings go; NULL: stderr */
	const char *step_range;    /* POSIX extended regex (case-insensitive) of the range names that are
				    * steps, for sources whose steps are named ranges (Nsight's NVTX);
				    * NULL: IMP_STEP_RANGE_DEFAULT */
	struct imp_phases *phases; /* NULL, or filled by imp_finish on success */
	int allow_mixed_runs;      /* 1: files of one rank from different sessions (base times) or
				    * different profilers are combined with a warning; 0: refused */
	int no_view_tables;        /* 1: skip the viewer's summary tables (a temporary import nobody views: diff) */
	int jobs;                  /* imp_run: files read at once, each by a worker process (import/part.h);
				    * ≤ 1: one after another in this process */
	/* A worker of a parallel import (import/part.h) sets these three; otherwise zero. */
	const char *part_path;     /* write this open temporary (an fs_tmp's name) as a part: no output check,
				    * no rename, no statistics, warnings and process groups recorded in the
				    * part's import_part_* tables instead of printed */
	const int *file_no;        /* each input's number among all the import's files (rank default, the
				    * order of warnings); NULL: 0, 1, ... */
	volatile int64_t *progress; /* [0] bytes read so far, [1] events (imp_progress, quiet or not), [2] files read */
	const struct imp_spread *spread; /* NULL, or this process's place in an import shared by several */
};

/* An import shared by several processes, on one host or many (`srun -n K ascent import ...`,
 * `mpirun -n K ...`): every process lists the same files and cuts them into the same parts; part k
 * is read by process k mod K (with its own imp_opts.jobs workers) into a folder beside OUT (so OUT's
 * folder must be on a file system every host sees, as a training run's folder is), then the process
 * of rank 0 combines the parts exactly as `-j N` does (import/part.h) and removes the folder. The
 * result is the profile one process would write. The caller supplies the exchange (the command uses
 * comm/'s allgather), so import/ needs no MPI. */
struct imp_spread {
	int rank, size;            /* this process among the import's (0 combines) */
	void *ctx;
	/* Every process gives `bytes` bytes at `mine`; `all` receives size × bytes, process r's at r × bytes. */
	int (*allgather)(void *ctx, const void *mine, void *all, size_t bytes);
};

/* ProfilerStep#N, "step N", "step_N", "Step #N", "train step N": the step number is the first run
 * of digits in the match. */
#define IMP_STEP_RANGE_DEFAULT "ProfilerStep#[0-9]+|(^|[^a-z])step[ _#]*[0-9]+$"

struct imp;

/* Start an import of `inputs` (files or folders, as given) into o->out_path. Refuses an output that
 * is one of the inputs (the same file, however it is named) with ASCENT_EUSAGE. */
int imp_open(const struct imp_opts *o, const char *const *inputs, int ninputs, struct imp **out /* OUT */);
/* Post-process (links, collective ordinals, steps, statistics), write the ranks and lanes, then
 * rename the temporary file over OUT. Frees im (also on error, after removing the temporary). */
int imp_finish(struct imp *im);
/* Give up: remove the temporary file, free im. Accepts NULL. */
void imp_abort(struct imp *im);

/* ---- per file ---- */

/* A new input file of `size` bytes as stored (compressed or not), for progress and messages. */
int imp_file_begin(struct imp *im, const char *path, int64_t size);
/* The rank the events that follow belong to (the source decides: its own field, the file name,
 * --rank or the argument order; imp_rank_default gives the last two). A source whose file holds
 * several ranks (several processes in one export) calls it again to switch. origin_ns: a time on
 * the file's clock at or before most of the rank's events (the first one it saw); the rank's
 * origin is that of its first file. Several files may hold the same rank if their time spans do
 * not overlap (a profiler schedule's repeats); overlapping spans are refused by imp_file_end.
 * The file's facts (imp_file_end) go to the rank named last. */
int imp_rank_begin(struct imp *im, int rank, int64_t origin_ns);
/* The rank of the current file when the source has none: --rank, else the rank torch_npu recorded
 * for a file of a `*_ascend_pt` folder (its profiler_info_N.json), else rank-N / rank_N / rankN in
 * the file name, else the number of files before it. */
int imp_rank_default(const struct imp *im, const char *path);
/* --rank N (imp_opts.rank): ≥ 0 overrides whatever the source says; −1 when not given. */
int imp_rank_forced(const struct imp *im);
/* The rank currently being imported (−1 before imp_rank_begin). */
int imp_rank_current(const struct imp *im);
/* The current rank's process id as the file recorded it (rank.pid; the first one given stays). */
void imp_rank_pid(struct imp *im, int64_t pid);

struct imp_file_facts {
	int world_size;            /* 0 unknown */
	int64_t base_ns;           /* the file's clock origin in ns since the epoch (0: its times are
				    * already epoch-based, or unknown) */
	const char *backend;       /* "nccl", "gloo", ... or NULL */
	const char *host;          /* the host the file was recorded on, or NULL */
	const char *source;        /* the format read, for the profile's import_source meta
				    * ("pytorch-profiler (kineto chrome trace)", "nsight systems", ...) */
};
/* The facts go to every rank that has events in the file (a source may hold several). */
int imp_file_end(struct imp *im, const struct imp_file_facts *f);

/* ---- lanes ---- */

/* The lane (thread.tid, small, per rank) for a source key. key: any 64-bit value the source uses
 * to name a lane within a file (Kineto: a hash of pid and tid); links (imp_flow) name lanes by the
 * same key. device < 0: a CPU thread (os_tid: its OS thread id, 0 unknown); device ≥ 0: stream
 * `stream` of that device. A key keeps the lane it was first given. */
int imp_lane(struct imp *im, uint64_t key, int device, int stream, int64_t os_tid, int *tid /* OUT */);
/* The lane of a key already given to imp_lane: its tid (−1 none) and device (−1 CPU). */
int imp_lane_lookup(const struct imp *im, uint64_t key, int *device /* OUT, may be NULL */);
/* Name a lane (a thread's name, "GPU 0 stream 7", ...); may come after its events. */
int imp_lane_name(struct imp *im, int tid, const char *name);

/* ---- events ---- */

/* A collective's description (on a kind DB_KIND_COMM event). */
struct imp_collective {
	const char *group;         /* the process group's name ("0", "default_pg"); NULL: the default group */
	const char *group_desc;    /* its description or NULL */
	const int *members;        /* its world ranks in group order, or NULL when unknown */
	int nmembers;              /* 0 unknown; group size otherwise (with or without members) */
	int64_t bytes;             /* elements × dtype size; 0 unknown */
	int peer;                  /* point-to-point peer (world rank), −1 none */
};

struct imp_event {
	int kind;                  /* enum db_kind: op, comm, step, range, kernel, memcpy, memset, ... */
	int tid;                   /* from imp_lane */
	int64_t start_ns, dur_ns;  /* the file's clock (ns) */
	const char *name;
	int64_t step;              /* kind step: its number; else −1 */
	int64_t bytes;             /* memcpy/memset bytes; 0 unknown */
	const struct imp_collective *coll;   /* kind comm: the collective (may be NULL: default group) */
	const char *args;          /* the event's arguments as a JSON object text, or NULL */
	size_t args_len;
};
int imp_event(struct imp *im, const struct imp_event *e);
/* 1 when the last imp_event stored its event, 0 when it skipped it (an impossible time: counted in
 * a warning), so that a reader links only events that exist. */
int imp_event_stored(const struct imp *im);

/* A process group a rank belongs to (Kineto: distributedInfo.pg_config), so collectives that name
 * only the group still know its members. */
int imp_group(struct imp *im, const char *group, const char *desc, const int *members, int nmembers);

/* A memory record: `bytes` allocated (+) or freed (−) on `device` (DB_MEM_HOST −1, or the
 * accelerator's index), `in_use` bytes allocated on that device afterwards. Every device of a
 * rank is kept, each its own (mem_event.device). */
int imp_mem(struct imp *im, int64_t ts_ns, int64_t bytes, int64_t in_use, int device);

/* One end of a link: kind DB_FLOW_LAUNCH, DB_FLOW_FWDBWD or DB_FLOW_CALL, the source's link id, start (1) or
 * end (0), the lane key (as given to imp_lane) and the time on the file's clock. Ends are paired
 * by (rank, kind, id) when the import finishes; an end without its partner is counted. */
int imp_flow(struct imp *im, int kind, int64_t id, int is_start, uint64_t lane_key, int64_t ts_ns);

/* ---- the bounds of what is stored ----
 * Every source's values pass here once: the sink counts and skips an event whose time lies more
 * than IMP_MAX_NS from its rank's origin or whose duration is negative or over IMP_MAX_NS, and
 * drops (counts, stores as unknown) a byte count over IMP_MAX_BYTES or a base time past
 * IMP_MAX_EPOCH_NS; the SQLite readers' bulk inserts filter with the same constants (the _SQL
 * spellings). So every stored time, end and difference fits an int64 with room to spare.
 * IMP_MAX_NS is 2^50 ns (about 13 days), IMP_MAX_BYTES 2^50 bytes (1 PiB), IMP_MAX_EPOCH_NS 2^62 ns
 * (the year 2116). */
#define IMP_MAX_NS (INT64_C(1) << 50)
#define IMP_MAX_NS_SQL "1125899906842624"
#define IMP_MAX_BYTES (INT64_C(1) << 50)
#define IMP_MAX_BYTES_SQL "1125899906842624"
#define IMP_MAX_EPOCH_NS (INT64_C(1) << 62)

/* ---- warnings and progress ---- */

enum imp_warning {
	IMP_W_NO_DUR,          /* a complete event without a duration */
	IMP_W_BAD_TIME,        /* a negative, overflowing or unparsable ts/dur */
	IMP_W_BAD_TYPE,        /* a known field of the wrong JSON type */
	IMP_W_PHASE,           /* a phase ascent does not keep (C, O, N, D, ...), or a begin/end without its partner */
	IMP_W_INSTANT,         /* an instant event that is not a memory record */
	IMP_W_FLOW_CAT,        /* a link of an unknown category */
	IMP_W_FLOW_UNPAIRED,   /* a link end without its partner, or on a lane with no events */
	IMP_W_NO_LAUNCH,       /* device work whose launching call is not in the file (kept, unlinked) */
	IMP_W_NO_NAME,         /* an event without a name */
	IMP_W_BASE_TIME,       /* files of one rank with different base times (not aligned) */
	IMP_W_LATE_RANK,       /* distributedInfo after traceEvents: rank not taken from it */
	IMP_W_GROUP_CONFLICT,  /* a group definition (members, size) that disagrees with the group's first */
	IMP_W_BAD_VALUE,       /* an impossible size or base time (the value dropped, the record kept) */
	IMP_W_DERIVED,         /* an event the profiler derived from others (torch_npu's Overlap Analysis, STEP_TIME
				* beside ProfilerStep#N): not kept */
	IMP_W_TASK_TYPE,       /* a torch_npu device task of a Task Type not in the table (kept as a kernel) */
	IMP_W_LINK_KIND,       /* a link of a known category that ascent does not keep (torch_npu's async_npu, ...) */
	IMP_W_SUMMARY_FILE,    /* a file of a torch_npu output folder that summarizes the trace (CSV, ...): not read */
	IMP_W_CATEGORY,        /* an event of a category the reader's table does not know (kept as a plain range) */
	IMP_W_COUNTER_PAIRS,   /* CUPTI counter ranges and kernel launch calls of different counts (not paired) */
	IMP_W_HOST_FROM_NAME,  /* a Kineto file whose host is read from its name (tensorboard_trace_handler's "{host}_{pid}") */
	IMP_W_COUNT
};
/* Count one skipped record of the current file; `where` says where (e.g. "event 1234"), kept for
 * the first of each reason. */
void imp_warn(struct imp *im, enum imp_warning w, const char *where);
int64_t imp_warnings(const struct imp *im, enum imp_warning w);
/* Bytes of the current file consumed so far (as stored); prints a progress line to stderr at most
 * every second (bytes, events, rate, ETA) unless quiet. */
void imp_progress(struct imp *im, int64_t bytes_done);
/* Events written so far (all files). */
int64_t imp_events(const struct imp *im);

/* ---- sources that are SQLite files: insert by query ----
 *
 * Such a source attaches its input to the output's connection (read-only, immutable) and moves
 * rows with INSERT ... SELECT into the profile's tables (event, arg, flow), reading small facts
 * (lanes, names, warnings) with queries whose rows come back to it. What the rows it inserted
 * change in the sink's bookkeeping it reports with imp_bulk_events. */

/* Attach `path` as schema `schema` (db_attach's rules); imp_detach undoes it. */
int imp_attach(struct imp *im, const char *path, const char *schema);
int imp_detach(struct imp *im, const char *schema);
/* db_query on the output's connection, after the batched events are written. */
int imp_query(struct imp *im, const char *sql, const struct db_bind *binds, int nbinds, db_query_cb row, void *ud,
	      int64_t *changes /* OUT, may be NULL */);
/* db_function on the output's connection, after the batched events are written: a function the
 * source's INSERT ... SELECT calls per row (counting skipped rows, making lanes) in the same pass. */
int imp_function(struct imp *im, const char *name, int nargs, db_sql_fn fn, void *ud);
/* The id of a name in the profile's string table (interned), after the batched events are written. */
int imp_intern(struct imp *im, const char *name, int64_t *id /* OUT */);
/* The comm_id a kind DB_KIND_COMM event of `group` (NULL: the default group) carries; the current
 * rank is recorded as using the group (as imp_event does). */
int imp_comm_id(struct imp *im, const char *group, int64_t *comm_id /* OUT */);
/* The current rank's origin on the file's clock: stored time = file time − origin. */
int64_t imp_origin(const struct imp *im);
/* n events of the current rank were inserted by query, spanning [lo_ns, hi_ns) on the file's
 * clock: counted, and the rank's span (file overlap check, end time) takes them in. */
void imp_bulk_events(struct imp *im, int64_t n, int64_t lo_ns, int64_t hi_ns);

/* ---- sources ---- */

/* Kineto (PyTorch profiler) Chrome-trace JSON, plain or gzip: the object form with traceEvents and
 * the bare-array form. Streams: memory does not grow with the file. A bare array is read twice: first
 * its process names only, so a torch_npu trace_view.json (process names after the events, times as
 * decimal strings) is known as one from its first event (its processes: import/npu.h's table).
 * docs/import.md has the mapping. */
int imp_read_kineto(struct imp *im, const char *path);
/* The same from `fd`, read from where it stands to its end (a pipe, a FIFO, or a file opened once
 * to tell its format: one stream, never opened twice); closes fd. size: for progress, 0 unknown. */
int imp_read_kineto_fd(struct imp *im, const char *path, int fd, int64_t size);
/* Kineto from memory (the fuzz target): `name` is used in messages and for the rank default. */
int imp_read_kineto_mem(struct imp *im, const char *name, const void *data, size_t len);
/* The host in a Kineto file's name as torch's tensorboard_trace_handler writes it,
 * "{host}_{pid}.{timestamp}.pt.trace.json[.gz]" (its default worker name "{host}_{pid}"; the
 * timestamp at least 13 digits): the host is everything before the worker's last "_{digits}", dots
 * and underscores included. 1 and host set when the name has that form, else 0. The reader takes
 * it when the trace names no host itself (docs/import.md, Kineto's mapping). */
int imp_kineto_host_from_name(const char *path, char *host /* OUT */, size_t len);

/* Nsight Systems `nsys export --type sqlite` files: one rank per process of the export (its MPI
 * rank from an "MPI Rank N" NVTX marker or thread name, else --rank or the file name for an export
 * of one process, else the process order). Opened read-only and immutable: nothing is written
 * beside it. step_range: as imp_opts.step_range. */
int imp_read_nsys(struct imp *im, const char *path, const char *step_range);
/* Ascend: an ascend_pytorch_profiler_{rank}.db (torch_npu.profiler's database): one rank per file
 * (--rank, else RANK_DEVICE_MAP, else _N.db in the name, else the argument order). Read-only and
 * immutable, as for Nsight. */
int imp_read_ascend(struct imp *im, const char *path);

/* The whole command: expand folders (their *.json, *.json.gz, *.sqlite and ascend_pytorch_profiler*.db
 * files, sorted; torch_npu's output folders — a `*_ascend_pt` rank folder, its ASCEND_PROFILER_OUTPUT,
 * a folder of rank folders — give each rank's database, else its trace_view.json, and count the
 * summaries beside them), import each input with the reader its content calls for (SQLite with
 * STRING_IDS: Ascend; other SQLite: Nsight; else Kineto JSON, which also reads torch_npu's text
 * export), finish. Each input is opened once and its format told from that stream (a FIFO or
 * /dev/stdin is read once, as JSON: SQLite needs a regular file). With o->jobs > 1 and several
 * files, or o->spread (several processes), the parallel import of import/part.h. */
int imp_run(const struct imp_opts *o, const char *const *inputs, int ninputs);

#endif
