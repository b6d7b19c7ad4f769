/* comm/comm.h — the public face of the `comm` module: the collective layer over MPI.
 *
 * What it gives the trainer:
 *   - comm_init(): MPI under mpirun/srun, or a singleton (plain `ascent train`, world size 1), or
 *     no MPI at all (ASCENT_NO_MPI=1: a world of one process, every operation is a local copy).
 *   - a dp × tp × pp grid with one sub-communicator per kind (comm_set_grid);
 *   - allreduce, reduce-scatter, allgather, broadcast, alltoall, barrier, send/recv, each blocking
 *     and non-blocking (request handles with comm_wait/comm_test);
 *   - every operation goes through one traced path: a flight-recorder entry (enqueued, started,
 *     completed, with times), the profiler's collective hooks, and a watchdog that stops the job
 *     when an operation has not completed within ASCENT_COMM_TIMEOUT seconds;
 *   - the flight recorder dumped as JSON to RUN/flight/rank-NNNNN.json on timeout, on SIGUSR1, on
 *     SIGTERM (what mpirun and Slurm send when they stop a job) and on a fatal signal (mpirun
 *     sends SIGKILL one second after SIGTERM; on a loaded host give the ranks that are not stuck
 *     in the watchdog time to dump with `mpirun --mca odls_base_sigkill_timeout 5`);
 *   - fault injection for tests (ASCENT_FAULT), and the clock-offset ping-pong for the profiler.
 *
 * RANK ORDER OF THE GRID. TP is innermost, then DP, then PP outermost:
 *
 *     world_rank = pp_rank·(dp·tp) + dp_rank·tp + tp_rank
 *
 * so consecutive ranks form a TP group (and stay on one host when ranks are packed by host), a DP
 * group is the ranks with the same (pp_rank, tp_rank) spaced tp apart, and a PP group is the ranks
 * with the same (dp_rank, tp_rank) spaced dp·tp apart. Example, dp=2 tp=2 pp=2 (8 ranks):
 *     TP groups {0,1} {2,3} {4,5} {6,7};  DP groups {0,2} {1,3} {4,6} {5,7};  PP groups {0,4} {1,5} {2,6} {3,7}.
 * Inside every sub-communicator a member's rank is its coordinate on that axis (the TP group's
 * rank is tp_rank, and so on).
 *
 * SEQUENCE NUMBERS. Each communicator counts its collectives from 1 (`seq`); the k-th collective
 * on a communicator is the same call on every member, so (comm id, seq) matches one call across
 * ranks. Point-to-point operations count separately per peer and direction: the k-th send from A
 * to B on a communicator has p2p seq k, and so has the k-th receive on B from A (MPI keeps order
 * per sender, communicator and tag). Each rank also numbers all its operations from 1 in the order
 * it issues them (`op_index`, over every communicator, collectives and p2p alike).
 *
 * COMMUNICATOR IDS, unique across the job so that a profile can match calls:
 *     world: 0;  dp group g: 0x1000000 + g;  tp group g: 0x2000000 + g;  pp group g: 0x3000000 + g
 * where a DP group's index g = pp_rank·tp + tp_rank, a TP group's g = pp_rank·dp + dp_rank, and a
 * PP group's g = dp_rank·tp + tp_rank.
 *
 * ENVIRONMENT (read by comm_init):
 *   ASCENT_COMM_TIMEOUT  seconds, > 0, fractional allowed (default 600); 0 turns the watchdog off.
 *   ASCENT_FLIGHT_SIZE   entries in the flight recorder ring (default 2000; 0 turns it off; ≤ 1e6).
 *   ASCENT_NO_MPI=1      never call MPI (world size 1); for hosts where MPI cannot start.
 *   ASCENT_FAULT         fault injection for tests only, grammar below; a malformed value is an
 *                        error from comm_init (ASCENT_EUSAGE) naming the bad part.
 *
 * ASCENT_FAULT GRAMMAR:
 *     faults := fault { ";" fault }
 *     fault  := kind ":" key "=" value { "," key "=" value }
 *     delay:rank=R,ms=M[,comm=C]     rank R sleeps M ms (0..3600000) before posting each send and
 *                                    each collective (not receives) — a slow rank
 *     hang:rank=R,seq=S[,comm=C]     rank R never enters its S-th operation: it sleeps forever
 *                                    before recording it, as if stuck in compute — a missing rank
 *     stall:rank=R,seq=S[,comm=C]    rank R records its S-th operation (state enqueued) but the
 *                                    thread that would run it never starts it: the communication
 *                                    thread for a non-blocking collective — a stuck comm thread
 *     crash:rank=R,seq=S[,comm=C]    rank R raises SIGSEGV before its S-th operation (tests the
 *                                    fatal-signal dump)
 *   R is a world rank, or "*" for every rank. Without comm=, S counts every operation of the rank
 *   (its op_index, from 1); with comm=world|dp|tp|pp, S is the seq of the collective on that
 *   communicator (p2p operations are not counted then) and a delay applies only to that
 *   communicator. Example: ASCENT_FAULT="delay:rank=3,ms=50;hang:rank=1,seq=40".
 *
 * THREADS. MPI is initialised with MPI_THREAD_MULTIPLE when the library offers it (Open MPI 4.1
 * does), else the best level offered ≥ FUNNELED. Blocking collectives call MPI's blocking
 * collectives on the caller's thread (MPI's tuned algorithms). Non-blocking collectives go to the
 * communication thread ("ascent comm", started by comm_init under MPI_THREAD_MULTIPLE): one FIFO
 * (so one ordered queue per communicator), each run there as the blocking MPI call, one at a time,
 * so they progress while the caller computes without any polling (the thread first waits until
 * every member has reached the collective, then makes the blocking call: when all members share
 * this host it sleeps (futex) on their arrival flags in a small shared-memory segment, so a late
 * peer costs the computing core nothing and the call starts the moment the last member arrives;
 * else it tests an MPI_Ibarrier in a loop for its first 30 µs, where most such waits end, then
 * between 20 µs sleeps; where the process may raise a thread's priority — CAP_SYS_NICE or RLIMIT_NICE
 * — it runs at nice −10, above the computation, else at the caller's); comm_wait sleeps until the thread
 * is done, comm_test only looks. A blocking collective on a communicator with non-blocking ones
 * queued or running waits for them first (MPI allows one collective at a time per communicator).
 * The thread runs collectives of different communicators in the order they were enqueued: ranks
 * must enqueue them in the same order across communicators too, or two ranks can wait for each
 * other (for the training loop, which issues everything from one thread, they do). Without MPI or
 * below MPI_THREAD_MULTIPLE there is no thread and the non-blocking forms complete before they
 * return. Send/recv are MPI non-blocking calls completed by MPI_Test in comm_wait/comm_test on the
 * caller's thread. The watchdog thread never calls MPI except MPI_Abort (and with less than
 * MULTIPLE it raises SIGABRT instead of calling MPI_Abort, after the dump). Operations on one
 * struct comm may come from several threads (the state is locked), but collectives on one
 * communicator must be issued in the same order on every member — MPI's rule.
 *
 * PROFILE. Each collective is recorded on its communicator's lane (prof_lane_end: a row of its own
 * named "comm world", "comm dp", "comm tp", "comm pp"), from the start of the transfer to its end,
 * whichever thread ran it. A collective that waited before its start — in the communication queue,
 * or for its communicator to be free — carries that queueing (enqueue → start) as the event's
 * argument {"queue_ns": N} (prof_lane_end_queued; `report` sums it per row), and a call whose
 * algorithm is known carries {"algo": "ring"}: an allreduce or allgather while Open MPI's tuned rules
 * lock the ring (algo.c; `report --by matrix` then puts it on ring links); the flight recorder
 * keeps the enqueue time too. A thread blocked on a collective — a blocking call, or comm_wait on one not yet done —
 * records a wait event (DB_KIND_WAIT) with the collective's communicator, seq and bytes: the
 * communication the computation did not hide. Send/recv are recorded on the calling thread.
 *
 * ERRORS. Functions that can fail return 0 or a negative ASCENT_E* code with the detail in
 * ascent_errmsg(); every MPI return code is checked (communicators use MPI_ERRORS_RETURN) and
 * reported as ASCENT_EMPI naming the call and the communicator.
 */
#ifndef ASCENT_COMM_H
#define ASCENT_COMM_H

#include <stddef.h>
#include <stdint.h>

enum comm_kind { COMM_WORLD = 0, COMM_DP = 1, COMM_TP = 2, COMM_PP = 3, COMM_NKINDS = 4 };
enum comm_dtype { COMM_F32 = 0, COMM_F64, COMM_I64, COMM_I32, COMM_BYTE, COMM_NDTYPES };
/* COMM_AVG: a sum divided by the group size after the exchange (integers: C division, truncating
 * toward zero). Reductions on COMM_BYTE are refused. */
enum comm_op { COMM_SUM = 0, COMM_AVG, COMM_MAX, COMM_MIN, COMM_NOPS };

struct comm;          /* opaque; one per process, passed explicitly */
struct comm_req;      /* a non-blocking operation in flight */

/* ---------------------------------------------------------------------------------------- */
/* Life cycle */

/* Initialise MPI (unless ASCENT_NO_MPI=1 or MPI is already initialised by the caller, in which
 * case it is reused and not finalised by us), read the environment above, install the SIGUSR1,
 * SIGTERM and fatal-signal handlers and start the watchdog thread. The grid starts as
 * dp=world, tp=1, pp=1. *out is a heap object freed by comm_finalize(). */
int comm_init(struct comm **out /* OUT */);
/* Stop the watchdog, restore signal handlers, free the sub-communicators, MPI_Finalize (if we
 * initialised MPI) and free c. Operations still in flight are an error reported to the log.
 * Accepts NULL. Returns 0 or ASCENT_EMPI. */
int comm_finalize(struct comm *c);

/* Split the world into the dp × tp × pp grid (rank order at the top of this file). Collective over
 * the world; may be called again to change the grid (the previous sub-communicators are freed and
 * their sequence numbers restart at 1). ASCENT_EUSAGE when dp·tp·pp != world size or a factor < 1. */
int comm_set_grid(struct comm *c, int dp, int tp, int pp);

/* Where flight-recorder dumps go: DIR/flight/rank-NNNNN.json (DIR is usually runs/NAME; the folder
 * is created on the first dump). Copied. Until it is set, dumps are skipped with a log line. */
int comm_set_run_dir(struct comm *c, const char *dir);

/* ---------------------------------------------------------------------------------------- */
/* Facts */

int comm_rank(const struct comm *c, enum comm_kind k);            /* rank inside that group */
int comm_size(const struct comm *c, enum comm_kind k);            /* members of that group */
int comm_world_rank_of(const struct comm *c, enum comm_kind k, int group_rank); /* -1 if out of range */
int64_t comm_id(const struct comm *c, enum comm_kind k);          /* the id described above */
const char *comm_kind_name(enum comm_kind k);                     /* "world", "dp", "tp", "pp" */
int comm_uses_mpi(const struct comm *c);                          /* 0 under ASCENT_NO_MPI */
size_t comm_dtype_size(enum comm_dtype t);

/* Pure grid arithmetic (no MPI), the one place the rank order is written down. */
int comm_grid_rank(int dp, int tp, int pp, int dp_rank, int tp_rank, int pp_rank);
void comm_grid_coords(int rank, int dp, int tp, int pp, int *dp_rank /* OUT */, int *tp_rank /* OUT */,
		      int *pp_rank /* OUT */);

/* ---------------------------------------------------------------------------------------- */
/* Collectives. `count` is in elements of `t`. Buffers are borrowed; for the non-blocking forms
 * they must stay valid and untouched until comm_wait/comm_test reports completion.
 * send == NULL or send == recv means in place where noted. */

/* recv[i] = op over the group of send[i], count elements. In place allowed. */
int comm_allreduce(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		   enum comm_dtype t, enum comm_op op);
int comm_iallreduce(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		    enum comm_dtype t, enum comm_op op, struct comm_req **req /* OUT */);
/* send holds size·count elements; member r receives op over the group of send[r·count ..
 * (r+1)·count) into recv (count elements). In place: send == NULL, the input is recv (size·count
 * elements) and the result lands in its first count elements. */
int comm_reduce_scatter(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
			enum comm_dtype t, enum comm_op op);
int comm_ireduce_scatter(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
			 enum comm_dtype t, enum comm_op op, struct comm_req **req /* OUT */);
/* recv (size·count elements) gets member r's send (count elements) at r·count. In place:
 * send == NULL, this member's block is already at recv[rank·count]. */
int comm_allgather(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		   enum comm_dtype t);
int comm_iallgather(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		    enum comm_dtype t, struct comm_req **req /* OUT */);
/* buf (count elements) of group rank `root` is copied to every member. */
int comm_broadcast(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int root);
int comm_ibroadcast(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int root,
		    struct comm_req **req /* OUT */);
/* send and recv hold size·count elements; block j of member i's send lands in block i of member
 * j's recv. Not in place. */
int comm_alltoall(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		  enum comm_dtype t);
int comm_ialltoall(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		   enum comm_dtype t, struct comm_req **req /* OUT */);
int comm_barrier(struct comm *c, enum comm_kind k);

/* Point to point inside group k; `peer` is a group rank, tag ≥ 0 (< 32768). */
int comm_send(struct comm *c, enum comm_kind k, const void *buf, size_t count, enum comm_dtype t, int peer,
	      int tag);
int comm_isend(struct comm *c, enum comm_kind k, const void *buf, size_t count, enum comm_dtype t, int peer,
	       int tag, struct comm_req **req /* OUT */);
int comm_recv(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int peer, int tag);
int comm_irecv(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int peer,
	       int tag, struct comm_req **req /* OUT */);

/* Wait for *req to complete; frees it and sets *req = NULL (also on error). NULL *req is a no-op.
 * While waiting, the watchdog watches the operation. */
int comm_wait(struct comm *c, struct comm_req **req);
/* Wait for n requests (NULL entries skipped); returns the first error, after waiting for all. */
int comm_waitall(struct comm *c, struct comm_req **reqs, int n);
/* *done = 1 and the request freed (*req = NULL) when it has completed; else *done = 0. */
int comm_test(struct comm *c, struct comm_req **req, int *done /* OUT */);

/* Benchmark baseline (comm/raw.c): a plain blocking MPI_Allreduce on group k — NOT traced (no
 * flight entry, no profiler hook, no fault injection, no watchdog, no sequence number). Only
 * `ascent diag comm --raw` uses it, to measure the traced path against plain MPI in one run.
 * COMM_AVG and COMM_BYTE are refused (ASCENT_EINTERNAL). */
int comm_raw_allreduce(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		       enum comm_dtype t, enum comm_op op);

/* ---------------------------------------------------------------------------------------- */
/* Clock alignment. Collective over the world: rank 0 answers NPINGS ping-pongs from each rank in
 * turn; each rank keeps the exchange with the smallest round trip and sets (the profiler's
 * convention, struct prof_clock_sync in profiler/prof.h)
 *     *offset_ns = (rank 0's CLOCK_MONOTONIC) − (this rank's CLOCK_MONOTONIC) at the same instant,
 *                  so  local_ns + offset_ns  is rank 0's time;
 *     *err_ns    = half that round trip (the bound on the offset's error).
 * Rank 0 (and a singleton) gets 0 and 0. Runs on a private duplicate of the world communicator, so
 * it does not disturb sequence numbers or user tags, and is not recorded. */
int comm_clock_offset(struct comm *c, int64_t *offset_ns /* OUT */, int64_t *err_ns /* OUT */);
/* Describe the world and the grid's communicators to the profiler (prof_comm_register); comm_init
 * and comm_set_grid do it too, call it again after prof_init if the profiler starts later. */
void comm_prof_register(const struct comm *c);
/* The same as a prof_clock_fn: prof_set_clock_sync(comm_prof_clock, c). `arg` is the struct comm;
 * `out` a struct prof_clock_sync. */
struct prof_clock_sync;
int comm_prof_clock(void *arg, struct prof_clock_sync *out /* OUT */);

/* ---------------------------------------------------------------------------------------- */
/* Flight recorder. Dump now (reason is a short word such as "request"), atomically, to
 * RUN/flight/rank-NNNNN.json. ASCENT_EUSAGE when no run dir is set. The JSON document:
 *   { "version": 1, "rank", "world_size", "pid", "host", "hosts" (every world rank's host, in rank
 *     order), "reason", "dump_ns" (CLOCK_MONOTONIC),
 *     "dump_utc_ns", "timeout_s", "flight_size", "dropped" (entries overwritten by the ring),
 *     "grid": {"dp","tp","pp","dp_rank","tp_rank","pp_rank"},
 *     "comms": [{"kind", "id", "rank", "size", "ranks": [world ranks], "last_enqueued",
 *                "last_started", "last_completed"}],              (collective seqs)
 *     "entries": [{"op_index", "comm", "comm_id", "seq", "p2p", "op", "dtype", "count", "bytes",
 *                  "peer" (world rank or -1; the root for broadcast), "state"
 *                  ("enqueued"|"started"|"completed"), "enqueued_ns", "started_ns",
 *                  "completed_ns" (0 = not yet; CLOCK_MONOTONIC_COARSE, the same time base
 *                  at the resolution of a clock tick, 1–4 ms: a few ns to read on every call,
 *                  where the profile has the precise times)}]     (oldest first) }
 * The signal-time dump uses only async-signal-safe calls (open/write/fsync/rename and our own
 * number formatting, no stdio, no malloc, no locks); it reads the ring without its lock, so an
 * entry being updated at that instant may show mixed fields. */
int comm_flight_dump(struct comm *c, const char *reason);

/* ---------------------------------------------------------------------------------------- */
/* Parsing helpers, exposed for tests and for `ascent diag env`. */

enum comm_fault_kind { COMM_FAULT_DELAY = 0, COMM_FAULT_HANG, COMM_FAULT_CRASH, COMM_FAULT_STALL };
struct comm_fault {
	enum comm_fault_kind kind;
	int rank;          /* world rank; -1 = every rank ("*") */
	int64_t ms;        /* delay */
	int64_t seq;       /* hang, stall, crash: ≥ 1 */
	int comm;          /* enum comm_kind, or -1 = any */
};
#define COMM_MAX_FAULTS 16
/* Parse an ASCENT_FAULT value into out[0..*n). ASCENT_EUSAGE with a message naming the bad part. */
int comm_fault_parse(const char *spec, struct comm_fault *out /* OUT */, int max, int *n /* OUT */);
/* Parse an ASCENT_COMM_TIMEOUT value (seconds ≥ 0, fractional allowed). ASCENT_EUSAGE if bad. */
int comm_timeout_parse(const char *s, double *out /* OUT */);

/* THE SELF-TEST behind the hidden command `ascent comm-selftest` (comm/selftest.c), run by the
 * comm_* integration tests under mpirun or alone. comm_selftest_run initialises comm (comm_init),
 * sets the grid (dp 0: world / (tp·pp), at least 1), and with run_dir set sends flight dumps to
 * RUN/flight, writes RUN/pids/rank-NNNNN.pid and logs to RUN/logs/rank-NNNNN.log. Every rank
 * computes the exact expected result of every operation from the ranks' known inputs and compares
 * element by element; rank 0 prints one summary line
 *     comm-selftest TEST: C checks, F failed on W ranks (dp=D tp=T pp=P, mpi|no mpi)
 * and the run fails (ASCENT_EFAIL) when any check failed on any rank. test is one of:
 *   grid         coordinates and membership; rank 0 prints "grid dp=.. tp=.. pp=.. world=.." and
 *                one line "KIND groups: {a,b} {c,d}" per kind
 *   collectives  allreduce (every op × f32/f64/i64, in place and non-blocking too), reduce-scatter,
 *                allgather, broadcast from every root, alltoall, send/recv, barrier, overlapped
 *                non-blocking operations, on the world and every sub-communicator
 *   clock        comm_clock_offset; each rank prints "clock rank R offset_ns O err_ns E" (one host:
 *                the offset must lie within its bound)
 *   loop         iters allreduces on the world, sleep_ms after each, non-blocking when nonblocking
 *                is set (for timeouts, faults and SIGUSR1)
 *   progress     a non-blocking allreduce of 256 KiB and one of 128 KiB (queued behind it) enqueued
 *                before compute_ms of profiled computation and waited for after it; needs run_dir
 *                (the profile, merged into RUN/trace.db)
 *   late         every rank but world rank 0 sleeps compute_ms, then a non-blocking allreduce of
 *                the world: rank 0's communication thread must wait for them with fewer than 100
 *                context switches (ranks on one host: it sleeps on their arrival flags)
 *   all (or NULL) grid, collectives, clock */
struct comm_selftest_options {
	const char *test;      /* see above; NULL = "all" */
	int dp, tp, pp;        /* grid; dp 0 = world / (tp·pp); tp, pp ≥ 1 */
	int iters, sleep_ms, nonblocking;   /* loop */
	int compute_ms;        /* progress; late: how late the peers are */
	const char *run_dir;   /* NULL: no dumps, pids, logs (progress needs it) */
};
int comm_selftest_run(const struct comm_selftest_options *o);

#endif
