/* comm/impl.h — private to comm/: the layout of struct comm, the flight-recorder ring and the
 * functions the files of comm/ share. Nothing outside comm/ includes this. */
#ifndef ASCENT_COMM_IMPL_H
#define ASCENT_COMM_IMPL_H

#include "comm/comm.h"
#include "common/common.h"
#include "profiler/prof.h"

#include <mpi.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>

enum flight_state { FL_ENQUEUED = 0, FL_STARTED = 1, FL_COMPLETED = 2 };

enum comm_opcode {
	OP_ALLREDUCE = 0, OP_REDUCE_SCATTER, OP_ALLGATHER, OP_BROADCAST, OP_ALLTOALL, OP_BARRIER,
	OP_SEND, OP_RECV, OP_NOPCODES
};

/* One flight-recorder entry. Written by the thread issuing the operation under c->lock; read by
 * the watchdog under c->lock and by signal handlers without it. */
struct flight_entry {
	int64_t op_index;            /* 0 = empty slot */
	int64_t comm_id;
	int64_t seq;                 /* collective seq, or p2p seq for OP_SEND/OP_RECV */
	int64_t count, bytes;
	int64_t t_enq, t_start, t_end;   /* comm_flight_now() */
	int peer;                    /* world rank, -1 if none */
	unsigned char kind, op, dtype;
	_Atomic int state;
};

struct comm_group {
	MPI_Comm mc;                 /* MPI_COMM_NULL without MPI */
	int rank, size;
	int64_t id;
	const char *lane;            /* the profiler lane of its collectives: "comm world", "comm dp", ... */
	int busy;                    /* c->lock: a collective of this group is running (inline or on the
				      * communication thread): MPI wants one at a time per communicator */
	int queued;                  /* c->lock: its collectives waiting in the communication queue */
	int *ranks;                  /* size world ranks of the members, in group-rank order */
	int64_t last_enq, last_start, last_done;   /* collective seqs */
	int64_t *send_seq, *recv_seq;             /* per peer group rank */
	struct comm_arrive_slot *arrive;          /* arrive.c: its members' arrival flags when they all
						   * share this host, else NULL */
};

struct comm {
	int use_mpi, own_mpi, thread_level;
	int ring_allreduce, ring_allgather;   /* algo.c: Open MPI's tuned rules lock these to a ring */
	int world_rank, world_size;
	int dp, tp, pp, dp_rank, tp_rank, pp_rank;
	struct comm_group g[COMM_NKINDS];
	MPI_Comm clock_comm;
	char host[64];
	char (*hosts)[64];           /* every world rank's host name, gathered by comm_init (flight dumps) */
	char *run_dir;
	char dump_path[4096];        /* RUN/flight/rank-NNNNN.json, preformatted for signal handlers */
	char dump_tmp[4120];

	double timeout_s;
	int64_t timeout_ns;
	struct comm_fault faults[COMM_MAX_FAULTS];
	int nfaults;

	pthread_mutex_t lock;        /* guards everything below and the ring */
	int64_t next_op_index;       /* last issued op_index */
	struct flight_entry *ring;   /* flight_size entries, slot = op_index % flight_size */
	int64_t flight_size;
	int64_t inflight;            /* requests not yet completed */

	/* The communication thread (ops.c): non-blocking collectives wait in one FIFO (per communicator
	 * order is the FIFO's order) and run there as blocking MPI calls. Off without MPI or below
	 * MPI_THREAD_MULTIPLE: then the non-blocking forms run at once on the caller's thread. */
	int async;                   /* the thread serves non-blocking collectives */
	pthread_t cthread;
	int cthread_running;
	int cstop;                   /* c->lock: finish the queue and exit */
	pthread_cond_t qcond;        /* c->lock: work for the thread (or stop, or a group became free) */
	pthread_cond_t dcond;        /* c->lock: an operation completed or a group became free */
	int dwaiters;                /* c->lock: threads waiting on dcond (no broadcast without one) */
	struct comm_req *qhead, *qtail;

	pthread_t watchdog;
	int watchdog_running;
	sem_t wake;                  /* posted by SIGUSR1 and by comm_finalize */
	_Atomic int stop;
	_Atomic int usr1;            /* SIGUSR1 seen, dump pending */
	_Atomic int final_dumped;    /* a timeout/fatal dump is being written: later dumps skip */
	_Atomic int final_done;      /* ... and it is on disk */
	_Atomic int dumping;
};

enum req_state { RQ_QUEUED = 0, RQ_RUNNING, RQ_DONE };

/* One operation. Collectives carry their arguments and run through exec (inline for the blocking
 * forms, on the communication thread for the non-blocking ones); send/recv are posted as MPI
 * non-blocking calls and completed by MPI_Test from the thread that waits. */
struct comm_req {
	struct comm *c;
	int kind;
	int op;                      /* enum comm_opcode */
	int64_t op_index;
	int64_t seq;
	int64_t bytes;               /* as the profiler and the flight recorder count them */
	int p2p;                     /* send/recv: completed through mreq */
	int state;                   /* enum req_state, c->lock (collectives) */
	int started;                 /* flight entry started */
	int rc;                      /* the collective's result once RQ_DONE */
	char *errmsg;                /* its message when it failed on the communication thread */
	struct comm_req *next;       /* the communication queue */
	struct prof_tok tok;         /* collectives: begun at enqueue, t0 moved to the start */
	MPI_Request mreq[1];
	/* the collective's arguments */
	const void *send;            /* MPI_IN_PLACE for in place */
	void *recv;
	size_t count;                /* elements per member as MPI counts them */
	int dtype, rop, root;
	/* post-processing for COMM_AVG (and the size check of a receive) */
	void *avg_buf;
	size_t avg_count;
	int avg_dtype;
	int avg_div;
};

/* init.c */
MPI_Datatype comm_mpi_dtype(enum comm_dtype t);
int comm_mpi_err(int mpirc, const char *call, const struct comm *c, int kind);

/* flight.c */
/* The flight recorder's clock: CLOCK_MONOTONIC at its last tick (CLOCK_MONOTONIC_COARSE: a few
 * ns to read where the precise clock takes ~30 in a VM, and never ahead of it; the resolution
 * clock_getres reports, 1–4 ms). The recorder is for operations stuck for seconds, and is written
 * on every call, 8 B ones included: the profiler's lanes keep the precise times. */
static inline int64_t comm_flight_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
int comm_flight_alloc(struct comm *c);
void comm_flight_free(struct comm *c);
/* Record a new operation (state enqueued) under the lock; returns its op_index. */
int64_t comm_flight_begin(struct comm *c, int kind, int op, int64_t seq, int dtype, int64_t count, int64_t bytes,
		     int peer);
/* Entry op_index reached `state` at time t (comm_flight_now's clock); t = 0: a start at the enqueue
 * time (in the same critical section), an end now. */
void comm_flight_set_state(struct comm *c, int64_t op_index, int state, int64_t t);
int comm_flight_write(struct comm *c, const char *reason, int durable);  /* async-signal-safe */
int comm_flight_dump_locked(struct comm *c, const char *reason, int durable);    /* comm_flight_dump's body */
int comm_flight_signals_install(struct comm *c);
void comm_flight_signals_restore(struct comm *c);
/* Name tables (names.c); comm_kind_name is public (comm.h). */
const char *comm_lane_name(enum comm_kind k);   /* "comm dp": the profiler lane of a communicator */
const char *comm_op_name(int op);
const char *comm_dtype_name(int t);
const char *comm_state_name(int st);
/* algo.c: read MPI's algorithm locks once after MPI_Init; the algorithm a collective runs ("ring"),
 * NULL when not known */
void comm_algo_read(struct comm *c);
const char *comm_algo_of(const struct comm *c, const struct comm_req *r);   /* a flight entry's state: "enqueued", "started", "completed" */

/* arrive.c: a group's arrival flags (collective over the group; none without MPI, for a single
 * member, or when the members do not all share one host or one shared-memory segment) */
int comm_arrive_setup(struct comm *c, int kind);
void comm_arrive_free(struct comm_group *g);
/* Mark this member as arrived at collective `seq` and sleep until every member has. */
void comm_arrive_wait(struct comm_group *g, int64_t seq);

/* ops.c: the communication thread */
int cthread_start(struct comm *c);
void cthread_stop(struct comm *c);

/* watchdog.c */
int comm_watchdog_start(struct comm *c);
void comm_watchdog_stop(struct comm *c);

/* fault.c: called before each operation with the op_index and seq it is about to get. */
void fault_before(struct comm *c, int kind, int op, int64_t op_index, int64_t seq);
/* fault.c: called by the thread about to run a recorded collective (stall faults). */
void fault_before_start(struct comm *c, int kind, int op, int64_t op_index, int64_t seq);

#endif
