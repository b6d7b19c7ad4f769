/* interpose/impl.h — private to the preload library: the process state, the communicator table
 * (MPI_Comm → job-unique id, sizes, sequence counters) and the table of non-blocking requests in
 * flight. interpose/interpose.h says what the library records and why. */
#ifndef ASCENT_INTERPOSE_IMPL_H
#define ASCENT_INTERPOSE_IMPL_H

#include <mpi.h>
#include <stdint.h>

#include "interpose/interpose.h"
#include "profiler/prof.h"

/* One communicator this rank belongs to. Counters are updated with atomics (MPI_THREAD_MULTIPLE). */
struct ip_comm {
	MPI_Comm mc;
	int32_t id;                /* job-unique; -1 when not agreed (intercommunicator, overflow) */
	int size, rank;            /* members, this rank's place */
	int64_t coll_seq;          /* collectives posted on it */
	int64_t *send_seq;         /* per peer: sends posted to it */
	int64_t *recv_seq;         /* per peer: receives completed from it */
	int64_t *xchg_seq;         /* per peer: sendrecv exchanges with it (as dest) */
	const char *name;          /* interned */
	const char *lane;          /* profiler lane of its non-blocking collectives ("comm world") */
};

/* The process. `active`: this is the process `ascent profile` meant and profiling is on (decided
 * in the constructor; off again in a forked child and after MPI_Finalize). */
struct ip_state {
	int active;
	int pid;
	int rank, size;            /* world, from the launcher's environment (then checked at MPI_Init) */
	int mpi_up;                /* between our MPI_Init and MPI_Finalize */
	MPI_Comm clock_comm;       /* private dup of MPI_COMM_WORLD: clock ping-pong, final barrier */
	struct prof_clock_sync sync;   /* the latest clock measurement */
	int64_t comm_counter;      /* next creation counter this rank proposes */
};
extern struct ip_state ip;

/* 1 when MPI calls are being recorded: the hot paths' one branch. */
static inline int ip_on(void)
{
	return prof_on();
}

/* Communicators (comm.c) */
struct ip_comm *ip_comm_find(MPI_Comm mc);              /* NULL when not tracked */
/* Register a predefined or new intracommunicator under `id` with this name (copied). */
void ip_comm_add(MPI_Comm mc, int32_t id, const char *name);
/* A communicator was just created collectively by `how` ("split", "dup", ...): agree its id with the
 * other members and register it. MPI_COMM_NULL and intercommunicators are skipped. */
void ip_comm_created(MPI_Comm mc, const char *how);
void ip_comm_forget(MPI_Comm mc);                        /* before MPI_Comm_free */
/* Open the world/self entries and the clock communicator after PMPI_Init; measure the clock. */
void ip_mpi_started(void);
/* Measure the clock again, close the profile, barrier (every rank's file is complete after it). */
void ip_mpi_finishing(void);

/* Recording helpers (record.c) */
int64_t ip_type_bytes(MPI_Datatype t, int64_t count);   /* count · MPI_Type_size; 0 on error */
int64_t ip_sum_counts(const int *counts, int n);
/* Begin a collective on mc: its sequence number, the communicator's id. */
struct prof_tok ip_coll_begin(const char *name, MPI_Comm mc, int64_t bytes, int root);
int ip_comm_size_of(MPI_Comm mc);                        /* group size (tracked, else PMPI) */
int ip_comm_is_root(MPI_Comm mc, int root);
/* Begin a send (seq per dest) or an exchange (sendrecv) to dest. */
struct prof_tok ip_send_begin(const char *name, MPI_Comm mc, int64_t bytes, int dest, int exchange);
/* Begin a receive: peer and seq are filled at completion by ip_recv_end. */
struct prof_tok ip_recv_begin(const char *name, MPI_Comm mc);
void ip_recv_end(struct prof_tok *t, MPI_Comm mc, const MPI_Status *st, MPI_Datatype dt);

/* The lane a non-blocking collective on mc is recorded on (comm.c): "comm NAME" for the first
 * IP_LANES communicators, "comm other" after them (the profiler has 16 lanes per process). */
#define IP_LANES 12
const char *ip_comm_lane(MPI_Comm mc);

/* Requests in flight (p2p.c). A non-blocking call's token waits here until a Wait/Test completes
 * its request: a collective's range then ends on its communicator's lane (the transfer runs
 * beside the thread, as comm/ records the trainer's), a point-to-point one on the completing
 * thread; for receives, `dt` and `mc` finish the record from the status. */
void ip_req_track(MPI_Request req, const struct prof_tok *t, int is_recv, MPI_Comm mc, MPI_Datatype dt);
int ip_req_pending(void);                                /* 0: nothing tracked (fast path) */
/* Request `saved` (its handle before the PMPI call) completed with status st (may be NULL). */
void ip_req_done(MPI_Request saved, const MPI_Status *st);
/* A wait on this thread for the first tracked collective among reqs[0..n) (a zero token when none):
 * the time MPI_Wait... blocks on a collective is the communication the program did not hide. */
struct prof_tok ip_wait_begin(const MPI_Request *reqs, int n);
void ip_req_drop(MPI_Request saved);                     /* MPI_Request_free */

#endif
