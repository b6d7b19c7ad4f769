/* comm/ops.c — the collectives and send/recv, every one through one traced path:
 *   op_begin  fault injection, the sequence number, the flight-recorder entry (enqueued) and the
 *             profiler token (begun at the call; a collective's t0 moves to its start);
 *   run       on the thread that executes a collective: a stall fault, flight entry started, the
 *             blocking MPI call (MPI's tuned algorithms), COMM_AVG's division, flight entry
 *             completed, and the range recorded on the communicator's profiler lane ("comm dp"):
 *             start → end is the transfer, whichever thread ran it.
 * Blocking collectives run inline on the caller's thread once their communicator has nothing
 * queued or running (MPI wants one collective at a time per communicator), and the caller records
 * the time it was blocked as a wait event. Non-blocking collectives go to the communication thread
 * (cthread_main): one FIFO, run one at a time with blocking MPI calls, so they progress while the
 * caller computes, without polling (Open MPI 4.1 serves MPI_I* collectives from its generic
 * schedule-based component, slower than the blocking ones, and progresses them only inside MPI
 * calls). comm_wait sleeps on a condition variable and records the wait; comm_test only looks.
 * Without MPI, or below MPI_THREAD_MULTIPLE, there is no thread: the non-blocking forms run at
 * once. Send/recv stay MPI non-blocking calls completed by MPI_Test from the thread that waits: one
 * ordered queue of blocking sends and receives could deadlock a pipeline schedule. */
#include "comm/impl.h"
#include "profiler/prof.h"

#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int check_args(struct comm *c, int kind, int dtype, size_t count, const char *what)
{
	if (!c)
		return ascent_error(ASCENT_EINTERNAL, "%s: no communicator (comm_init first)", what);
	if (kind < 0 || kind >= COMM_NKINDS)
		return ascent_error(ASCENT_EINTERNAL, "%s: bad communicator kind %d", what, kind);
	if (dtype < 0 || dtype >= COMM_NDTYPES)
		return ascent_error(ASCENT_EINTERNAL, "%s: bad data type %d", what, dtype);
	if (count > INT_MAX)
		return ascent_error(ASCENT_EINPUT, "%s on '%s': %zu elements is more than MPI's limit of %d per call "
				    "(split the buffer)", what, comm_kind_name((enum comm_kind)kind), count, INT_MAX);
	return 0;
}

static int check_reduce(int kind, int dtype, int rop, const char *what)
{
	if (rop < 0 || rop >= COMM_NOPS)
		return ascent_error(ASCENT_EINTERNAL, "%s: bad reduction %d", what, rop);
	if (dtype == COMM_BYTE)
		return ascent_error(ASCENT_EINTERNAL, "%s on '%s': cannot reduce raw bytes (use f32, f64, i32 or i64)",
				    what, comm_kind_name((enum comm_kind)kind));
	return 0;
}

static MPI_Op mpi_op(int rop)
{
	return rop == COMM_MAX ? MPI_MAX : rop == COMM_MIN ? MPI_MIN : MPI_SUM;
}

/* The communication thread's nice value where permitted (cthread_main). */
#define COMM_THREAD_NICE (-10)

static int is_p2p(int op)
{
	return op == OP_SEND || op == OP_RECV;
}

static void started_locked(struct comm *c, struct comm_req *r, int64_t t);

/* Record a new operation: fault injection, sequence number, flight entry (enqueued), profiler
 * token. `peer_group` is the group rank of the p2p peer or broadcast root (-1 none). A blocking
 * collective (`blocking`) whose communicator is free claims it and starts in the same critical
 * section (no fault to inject first): the fast path of a small call. */
static void op_begin(struct comm *c, struct comm_req *r, int kind, int op, int dtype, size_t count, int64_t bytes,
		     int peer_group, int blocking)
{
	struct comm_group *g = &c->g[kind];
	int p2p = is_p2p(op);
	memset(r, 0, sizeof *r);
	r->c = c;
	r->kind = kind;
	r->op = op;
	r->p2p = p2p;
	r->dtype = dtype;
	r->count = count;
	r->bytes = bytes;
	r->root = peer_group;
	r->mreq[0] = MPI_REQUEST_NULL;

	if (c->nfaults) {
		pthread_mutex_lock(&c->lock);
		int64_t next = c->next_op_index + 1;
		int64_t seq = p2p ? (op == OP_SEND ? g->send_seq[peer_group] : g->recv_seq[peer_group]) + 1
				  : g->last_enq + 1;
		pthread_mutex_unlock(&c->lock);
		fault_before(c, kind, op, next, seq);
	}
	int peer_world = peer_group >= 0 ? g->ranks[peer_group] : -1;
	int64_t seq;
	pthread_mutex_lock(&c->lock);
	if (p2p)
		seq = (op == OP_SEND ? ++g->send_seq[peer_group] : ++g->recv_seq[peer_group]);
	else
		seq = ++g->last_enq;
	r->op_index = comm_flight_begin(c, kind, op, seq, dtype, (int64_t)count, bytes, peer_world);
	r->seq = seq;
	c->inflight++;
	if (blocking && !c->nfaults && !g->busy && !g->queued) {
		g->busy = 1;
		r->state = RQ_RUNNING;
		started_locked(c, r, 0);   /* started as it was enqueued: nothing to wait for */
	}
	pthread_mutex_unlock(&c->lock);
	if (p2p)
		r->tok = prof_p2p_begin(comm_op_name(op), (int)g->id, seq, bytes, peer_group);
	else
		r->tok = prof_comm_begin(comm_op_name(op), (int)g->id, seq, bytes, peer_group);
}

/* Flight entry started (c->lock held). */
static void started_locked(struct comm *c, struct comm_req *r, int64_t t)
{
	r->started = 1;
	comm_flight_set_state(c, r->op_index, FL_STARTED, t);
	if (!r->p2p && r->seq > c->g[r->kind].last_start)
		c->g[r->kind].last_start = r->seq;
}

/* Flight entry completed, the operation no longer in flight (c->lock held). */
static void completed_locked(struct comm *c, struct comm_req *r)
{
	comm_flight_set_state(c, r->op_index, FL_COMPLETED, 0);
	if (!r->p2p && r->seq > c->g[r->kind].last_done)
		c->g[r->kind].last_done = r->seq;
	c->inflight--;
}

static void op_started(struct comm *c, struct comm_req *r)
{
	pthread_mutex_lock(&c->lock);
	started_locked(c, r, comm_flight_now());
	pthread_mutex_unlock(&c->lock);
}

/* COMM_AVG's division of the reduced sum by the group size, inside the collective's transfer:
 * vectorized (the scalar loop took ~300 µs per MB, about as long as a 1 MB allreduce). A
 * power-of-two size multiplies by its reciprocal, which is exact: bit for bit the quotient. */
static void divide(void *buf, size_t n, int dtype, int div)
{
	int pow2 = (div & (div - 1)) == 0;
	switch (dtype) {
	case COMM_F32: {
		float *x = buf, d = (float)div, inv = 1.0f / d;
		if (pow2) {
#pragma omp simd
			for (size_t i = 0; i < n; i++)
				x[i] *= inv;
		} else {
#pragma omp simd
			for (size_t i = 0; i < n; i++)
				x[i] /= d;
		}
		break;
	}
	case COMM_F64: {
		double *x = buf, d = (double)div, inv = 1.0 / d;
		if (pow2) {
#pragma omp simd
			for (size_t i = 0; i < n; i++)
				x[i] *= inv;
		} else {
#pragma omp simd
			for (size_t i = 0; i < n; i++)
				x[i] /= d;
		}
		break;
	}
	case COMM_I64:
		for (size_t i = 0; i < n; i++)
			((int64_t *)buf)[i] /= div;
		break;
	case COMM_I32:
		for (size_t i = 0; i < n; i++)
			((int32_t *)buf)[i] /= div;
		break;
	default:
		break;
	}
}

/* A send/recv has completed (or failed: rc != 0): flight entry, the profiler range on this thread. */
static int req_finish(struct comm *c, struct comm_req *r, int rc)
{
	pthread_mutex_lock(&c->lock);
	completed_locked(c, r);
	pthread_mutex_unlock(&c->lock);
	prof_p2p_end(&r->tok);
	return rc;
}

/* Set up the request for the local (no MPI) case: the group has one member. */
static void local_copy(void *dst, const void *src, size_t bytes)
{
	if (dst && src && dst != src && src != MPI_IN_PLACE && bytes)
		memmove(dst, src, bytes);
}

/* The blocking MPI call of a collective (a local copy without MPI). */
static int exec_collective(struct comm *c, struct comm_req *r)
{
	struct comm_group *g = &c->g[r->kind];
	size_t sz = comm_dtype_size((enum comm_dtype)r->dtype);
	if (!c->use_mpi) {
		if (r->op != OP_BROADCAST && r->op != OP_BARRIER)
			local_copy(r->recv, r->send, r->count * sz);
		return 0;
	}
	MPI_Datatype dt = comm_mpi_dtype((enum comm_dtype)r->dtype);
	int n = (int)r->count, mrc;
	const char *call;
	switch (r->op) {
	case OP_ALLREDUCE:
		call = "MPI_Allreduce";
		mrc = MPI_Allreduce(r->send, r->recv, n, dt, mpi_op(r->rop), g->mc);
		break;
	case OP_REDUCE_SCATTER:
		call = "MPI_Reduce_scatter_block";
		mrc = MPI_Reduce_scatter_block(r->send, r->recv, n, dt, mpi_op(r->rop), g->mc);
		break;
	case OP_ALLGATHER:
		call = "MPI_Allgather";
		mrc = r->send == MPI_IN_PLACE ? MPI_Allgather(MPI_IN_PLACE, 0, dt, r->recv, n, dt, g->mc)
					      : MPI_Allgather(r->send, n, dt, r->recv, n, dt, g->mc);
		break;
	case OP_BROADCAST:
		call = "MPI_Bcast";
		mrc = MPI_Bcast(r->recv, n, dt, r->root, g->mc);
		break;
	case OP_ALLTOALL:
		call = "MPI_Alltoall";
		mrc = MPI_Alltoall(r->send, n, dt, r->recv, n, dt, g->mc);
		break;
	case OP_BARRIER:
		call = "MPI_Barrier";
		mrc = MPI_Barrier(g->mc);
		break;
	default:
		return ascent_error(ASCENT_EINTERNAL, "comm: operation %d is not a collective", r->op);
	}
	return mrc == MPI_SUCCESS ? 0 : comm_mpi_err(mrc, call, c, r->kind);
}

/* How the communication thread waits for the other members of a group without arrival flags (one
 * spanning hosts) before a collective (ready_wait): MPI_Test in a loop for READY_SPIN_NS (most
 * waits end there: the members of a data-parallel step
 * arrive within tens of µs of each other, and a late start here is a late start for every member,
 * which busy-polls in the collective meanwhile), then between READY_SLEEP_NS sleeps, with the
 * thread's timer slack cut to 1 µs (cthread_main; the default 50 µs made each sleep ~70 µs). */
#define READY_SPIN_NS 30000
#define READY_SLEEP_NS 20000

/* On the communication thread, before the blocking MPI call: wait until every member has reached
 * this collective: asleep on their arrival flags when they all share this host (arrive.c: no
 * polling at all, and the call starts when the last one arrives), else an MPI_Ibarrier tested as
 * READY_SPIN_NS and READY_SLEEP_NS say (each poll after a sleep costs a context switch pair on the
 * computing core: in an 8-step DP=2 run of `small` on 2 cores the thread used 0.24-0.57 s of CPU
 * with up to 74,000 switches per rank, and 0.19-0.23 s with under 500 on the flags). Open MPI's
 * blocking collectives busy-poll while a peer is late; on this thread, which runs beside the
 * computation and above it in priority (cthread_main), that polling would take the core from the
 * very computation the late peer is waiting for. */
static int ready_wait(struct comm *c, struct comm_req *r)
{
	struct comm_group *g = &c->g[r->kind];
	if (!c->use_mpi || g->size < 2)
		return 0;
	if (g->arrive) {   /* every member on this host: sleep on their arrival flags */
		comm_arrive_wait(g, r->seq);
		return 0;
	}
	MPI_Request q;
	int mrc = MPI_Ibarrier(g->mc, &q);
	if (mrc != MPI_SUCCESS)
		return comm_mpi_err(mrc, "MPI_Ibarrier", c, r->kind);
	int64_t t0 = clock_ns();
	for (;;) {
		int flag = 0;
		mrc = MPI_Test(&q, &flag, MPI_STATUS_IGNORE);
		/* q is not freed on failure: MPI forbids MPI_Request_free and MPI_Cancel on the request
		 * of a nonblocking collective, and the communicator is failing anyway */
		if (mrc != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Test", c, r->kind);
		if (flag)
			return 0;
		if (clock_ns() - t0 < READY_SPIN_NS)
			continue;
		struct timespec ts = { 0, READY_SLEEP_NS };
		nanosleep(&ts, NULL);
	}
}

/* The transfer of a collective whose group this thread has claimed and whose flight entry is
 * started, c->lock not held: the blocking MPI call, the profiler range, then (c->lock taken, and
 * held on return) the operation completed (RQ_DONE) and its group free again; the waiter may free
 * r. `queued`: it waited in the queue (the time from its enqueue is its "queue_ns"). A failure's
 * message is kept in r->errmsg when `keep_msg` (the communication thread's messages are per
 * thread: the waiter re-raises it). */
static int run_started(struct comm *c, struct comm_req *r, int queued, int keep_msg)
{
	struct comm_group *g = &c->g[r->kind];
	int64_t queue_ns = 0;
	if (r->tok.t0) {   /* the transfer starts now; enqueue → now was queueing */
		int64_t now = clock_ns();
		queue_ns = queued ? now - r->tok.t0 : 0;
		r->tok.t0 = now;
	}
	int rc = keep_msg ? ready_wait(c, r) : 0;
	if (!rc)
		rc = exec_collective(c, r);
	if (!rc && r->avg_div > 1)
		divide(r->avg_buf, r->avg_count, r->avg_dtype, r->avg_div);
	prof_lane_end_queued(&r->tok, g->lane, queue_ns, comm_algo_of(c, r));
	char *msg = rc && keep_msg ? strdup(ascent_errmsg()) : NULL;
	pthread_mutex_lock(&c->lock);
	completed_locked(c, r);
	g->busy = 0;
	if (c->qhead)
		pthread_cond_signal(&c->qcond);   /* the thread may have work for this group now */
	if (c->dwaiters)
		pthread_cond_broadcast(&c->dcond);
	r->errmsg = msg;
	r->rc = rc;
	r->state = RQ_DONE;
	return rc;
}

/* Run a recorded collective on this thread, which has claimed its group (busy). Called and returns
 * with c->lock held, released while it runs (run_started). */
static int run_claimed(struct comm *c, struct comm_req *r, int keep_msg)
{
	int queued = !r->started;   /* else started as it was enqueued (op_begin's fast path) */
	if (!r->started) {
		if (c->nfaults) {
			pthread_mutex_unlock(&c->lock);
			fault_before_start(c, r->kind, r->op, r->op_index, r->seq);
			pthread_mutex_lock(&c->lock);
		}
		started_locked(c, r, comm_flight_now());
	}
	pthread_mutex_unlock(&c->lock);
	return run_started(c, r, queued, keep_msg);
}

/* A blocking collective (or a non-blocking one without the thread): wait until the communicator
 * has nothing queued or running, then run it here. The caller's thread is blocked throughout: that
 * is recorded as a wait event on it. */
static int run_inline(struct comm *c, struct comm_req *r)
{
	struct comm_group *g = &c->g[r->kind];
	struct prof_tok w = prof_wait_begin(comm_op_name(r->op), (int)g->id, r->seq, r->bytes);
	int rc;
	if (r->state == RQ_RUNNING) {   /* claimed and started by op_begin on this thread: no lock to take */
		rc = run_started(c, r, 0, 0);
	} else {
		pthread_mutex_lock(&c->lock);   /* wait for the communicator, then claim it */
		c->dwaiters++;
		while (g->busy || g->queued)
			pthread_cond_wait(&c->dcond, &c->lock);
		c->dwaiters--;
		g->busy = 1;
		r->state = RQ_RUNNING;
		rc = run_claimed(c, r, 0);
	}
	pthread_mutex_unlock(&c->lock);
	prof_range_end(&w);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* The communication thread */

/* The oldest queued collective whose communicator is free, taken off the queue (c->lock held). */
static struct comm_req *queue_take(struct comm *c)
{
	struct comm_req *prev = NULL;
	for (struct comm_req *r = c->qhead; r; prev = r, r = r->next) {
		struct comm_group *g = &c->g[r->kind];
		if (g->busy)
			continue;
		if (prev)
			prev->next = r->next;
		else
			c->qhead = r->next;
		if (c->qtail == r)
			c->qtail = prev;
		r->next = NULL;
		g->queued--;
		g->busy = 1;
		r->state = RQ_RUNNING;
		return r;
	}
	return NULL;
}

static void *cthread_main(void *arg)
{
	struct comm *c = arg;
	/* Above the computation when allowed (CAP_SYS_NICE or RLIMIT_NICE): a collective then runs as
	 * soon as it is handed over, on every member at once, as a GPU's communication stream does,
	 * instead of in the time slices the computation leaves it. Else it keeps the caller's. */
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), COMM_THREAD_NICE))
		log_debug("comm: the communication thread keeps its priority (nice %d refused: %s)", COMM_THREAD_NICE,
			  strerror(errno));
	/* its ready_wait sleeps are short: a wake-up up to 50 µs late (the default slack) holds up
	 * every member of the collective */
	prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&c->lock);
	for (;;) {
		struct comm_req *r = queue_take(c);
		if (r) {
			run_claimed(c, r, 1);
			continue;
		}
		if (c->cstop && !c->qhead)
			break;
		pthread_cond_wait(&c->qcond, &c->lock);
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

int cthread_start(struct comm *c)
{
	if (!c->use_mpi || c->thread_level != MPI_THREAD_MULTIPLE)
		return 0;   /* the non-blocking forms run at once (comm.h, THREADS) */
	sigset_t all, old;
	sigfillset(&all);   /* signals go to the main thread */
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = pthread_create(&c->cthread, NULL, cthread_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return ascent_error(ASCENT_EIO, "cannot start the communication thread: %s", strerror(e));
	pthread_setname_np(c->cthread, "ascent comm");
	c->cthread_running = 1;
	c->async = 1;
	return 0;
}

void cthread_stop(struct comm *c)
{
	if (!c->cthread_running)
		return;
	pthread_mutex_lock(&c->lock);
	c->cstop = 1;
	pthread_cond_signal(&c->qcond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->cthread, NULL);   /* after the queue ran out: a stuck operation is the watchdog's */
	c->cthread_running = 0;
	c->async = 0;
}

/* Hand a recorded collective to the communication thread, or run it now (blocking forms, or no
 * thread). Non-blocking callers get a heap request. */
static int submit(struct comm *c, struct comm_req *r, struct comm_req **out)
{
	if (!out)
		return run_inline(c, r);
	struct comm_req *h = malloc(sizeof *h);
	if (!h) {
		run_inline(c, r);   /* cannot hand it out: run it here so the buffers are safe, then report */
		return ascent_error(ASCENT_ENOMEM, "out of memory for a request handle");
	}
	*h = *r;
	if (!c->async) {
		run_inline(c, h);
		*out = h;
		return 0;
	}
	struct comm_group *g = &c->g[h->kind];
	pthread_mutex_lock(&c->lock);
	h->state = RQ_QUEUED;
	h->next = NULL;
	if (c->qtail)
		c->qtail->next = h;
	else
		c->qhead = h;
	c->qtail = h;
	g->queued++;
	pthread_cond_signal(&c->qcond);
	pthread_mutex_unlock(&c->lock);
	*out = h;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* Send and receive: MPI non-blocking calls */

/* A failed post: close the entry and return the MPI error. */
static int post_failed(struct comm *c, struct comm_req *r, int mrc, const char *call)
{
	int rc = comm_mpi_err(mrc, call, c, r->kind);
	req_finish(c, r, rc);
	return rc;
}

static int test_once(struct comm *c, struct comm_req *r, int *flag)
{
	MPI_Status st;
	int mrc = MPI_Test(&r->mreq[0], flag, &st);
	if (mrc != MPI_SUCCESS)
		return comm_mpi_err(mrc == MPI_ERR_IN_STATUS ? st.MPI_ERROR : mrc, "MPI_Test", c, r->kind);
	if (*flag && r->op == OP_RECV) {
		int got = 0;
		MPI_Get_count(&st, comm_mpi_dtype((enum comm_dtype)r->avg_dtype), &got);
		if ((size_t)got != r->avg_count)
			return ascent_error(ASCENT_EMPI,
					    "recv on '%s' (rank %d) from group rank %d got %d elements, expected %zu "
					    "(sender and receiver disagree on the message size)",
					    comm_kind_name((enum comm_kind)r->kind), c->world_rank, st.MPI_SOURCE, got,
					    r->avg_count);
	}
	return 0;
}

/* Wait for a send/recv: a test loop that yields the CPU (oversubscribed ranks share cores) while
 * the watchdog watches the entry. */
static int p2p_wait(struct comm *c, struct comm_req *r)
{
	int64_t t0 = clock_ns();
	for (;;) {
		int flag = 0;
		int rc = test_once(c, r, &flag);
		if (rc)
			return req_finish(c, r, rc);
		if (flag)
			return req_finish(c, r, 0);
		int64_t waited = clock_ns() - t0;
		if (waited < 50000) {
			continue; /* spin: most small operations finish here */
		} else if (waited < 5000000) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50000 };
			nanosleep(&ts, NULL);
		}
	}
}

/* Finish a posted send/recv: blocking callers wait on their stack request; non-blocking ones get
 * a heap copy. */
static int p2p_hand_out(struct comm *c, struct comm_req *r, struct comm_req **out)
{
	if (!out)
		return p2p_wait(c, r);
	struct comm_req *h = malloc(sizeof *h);
	if (!h) {
		p2p_wait(c, r);
		return ascent_error(ASCENT_ENOMEM, "out of memory for a request handle");
	}
	*h = *r;
	*out = h;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */

static int do_allreduce(struct comm *c, int kind, const void *send, void *recv, size_t count, int t, int rop,
			struct comm_req **out)
{
	int rc = check_args(c, kind, t, count, "allreduce");
	if (rc || (rc = check_reduce(kind, t, rop, "allreduce")))
		return rc;
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_req r;
	op_begin(c, &r, kind, OP_ALLREDUCE, t, count, (int64_t)(count * sz), -1, !out);
	r.send = (!send || send == recv) ? MPI_IN_PLACE : send;
	r.recv = recv;
	r.rop = rop;
	if (rop == COMM_AVG)
		r.avg_buf = recv, r.avg_count = count, r.avg_dtype = t, r.avg_div = c->g[kind].size;
	return submit(c, &r, out);
}

int comm_allreduce(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count, enum comm_dtype t,
		   enum comm_op op)
{
	return do_allreduce(c, k, send, recv, count, t, op, NULL);
}

int comm_iallreduce(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count, enum comm_dtype t,
		    enum comm_op op, struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_iallreduce: NULL request pointer");
	*req = NULL;
	return do_allreduce(c, k, send, recv, count, t, op, req);
}

static int do_reduce_scatter(struct comm *c, int kind, const void *send, void *recv, size_t count, int t, int rop,
			     struct comm_req **out)
{
	int rc = check_args(c, kind, t, count, "reduce_scatter");
	if (rc || (rc = check_reduce(kind, t, rop, "reduce_scatter")))
		return rc;
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_group *g = &c->g[kind];
	struct comm_req r;
	op_begin(c, &r, kind, OP_REDUCE_SCATTER, t, count, (int64_t)(count * sz * (size_t)g->size), -1, !out);
	r.send = (!send || send == recv) ? MPI_IN_PLACE : send;
	r.recv = recv;
	r.rop = rop;
	if (rop == COMM_AVG)
		r.avg_buf = recv, r.avg_count = count, r.avg_dtype = t, r.avg_div = g->size;
	return submit(c, &r, out);
}

int comm_reduce_scatter(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
			enum comm_dtype t, enum comm_op op)
{
	return do_reduce_scatter(c, k, send, recv, count, t, op, NULL);
}

int comm_ireduce_scatter(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
			 enum comm_dtype t, enum comm_op op, struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_ireduce_scatter: NULL request pointer");
	*req = NULL;
	return do_reduce_scatter(c, k, send, recv, count, t, op, req);
}

static int do_allgather(struct comm *c, int kind, const void *send, void *recv, size_t count, int t,
			struct comm_req **out)
{
	int rc = check_args(c, kind, t, count, "allgather");
	if (rc)
		return rc;
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_group *g = &c->g[kind];
	struct comm_req r;
	op_begin(c, &r, kind, OP_ALLGATHER, t, count, (int64_t)(count * sz * (size_t)g->size), -1, !out);
	void *mine = (char *)recv + (size_t)g->rank * count * sz;
	r.send = (!send || send == mine) ? MPI_IN_PLACE : send;
	if (!c->use_mpi && r.send == MPI_IN_PLACE)
		r.send = mine;   /* the local copy is a no-op */
	r.recv = recv;
	return submit(c, &r, out);
}

int comm_allgather(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count, enum comm_dtype t)
{
	return do_allgather(c, k, send, recv, count, t, NULL);
}

int comm_iallgather(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count, enum comm_dtype t,
		    struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_iallgather: NULL request pointer");
	*req = NULL;
	return do_allgather(c, k, send, recv, count, t, req);
}

static int do_broadcast(struct comm *c, int kind, void *buf, size_t count, int t, int root, struct comm_req **out)
{
	int rc = check_args(c, kind, t, count, "broadcast");
	if (rc)
		return rc;
	struct comm_group *g = &c->g[kind];
	if (root < 0 || root >= g->size)
		return ascent_error(ASCENT_EINTERNAL, "broadcast on '%s': root %d is not a member (0..%d)",
				    comm_kind_name((enum comm_kind)kind), root, g->size - 1);
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_req r;
	op_begin(c, &r, kind, OP_BROADCAST, t, count, (int64_t)(count * sz), root, !out);
	r.recv = buf;
	return submit(c, &r, out);
}

int comm_broadcast(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int root)
{
	return do_broadcast(c, k, buf, count, t, root, NULL);
}

int comm_ibroadcast(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int root,
		    struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_ibroadcast: NULL request pointer");
	*req = NULL;
	return do_broadcast(c, k, buf, count, t, root, req);
}

static int do_alltoall(struct comm *c, int kind, const void *send, void *recv, size_t count, int t,
		       struct comm_req **out)
{
	int rc = check_args(c, kind, t, count, "alltoall");
	if (rc)
		return rc;
	if (!send || send == recv)
		return ascent_error(ASCENT_EINTERNAL, "alltoall: in place is not supported (give two buffers)");
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_group *g = &c->g[kind];
	struct comm_req r;
	op_begin(c, &r, kind, OP_ALLTOALL, t, count, (int64_t)(count * sz * (size_t)g->size), -1, !out);
	r.send = send;
	r.recv = recv;
	return submit(c, &r, out);
}

int comm_alltoall(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count, enum comm_dtype t)
{
	return do_alltoall(c, k, send, recv, count, t, NULL);
}

int comm_ialltoall(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count, enum comm_dtype t,
		   struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_ialltoall: NULL request pointer");
	*req = NULL;
	return do_alltoall(c, k, send, recv, count, t, req);
}

int comm_barrier(struct comm *c, enum comm_kind k)
{
	int rc = check_args(c, k, COMM_BYTE, 0, "barrier");
	if (rc)
		return rc;
	struct comm_req r;
	op_begin(c, &r, k, OP_BARRIER, COMM_BYTE, 0, 0, -1, 1);
	return submit(c, &r, NULL);
}

static int do_p2p(struct comm *c, int kind, int op, void *buf, size_t count, int t, int peer, int tag,
		  struct comm_req **out)
{
	if (out)
		*out = NULL;
	const char *what = op == OP_SEND ? "send" : "recv";
	int rc = check_args(c, kind, t, count, what);
	if (rc)
		return rc;
	struct comm_group *g = &c->g[kind];
	if (peer < 0 || peer >= g->size)
		return ascent_error(ASCENT_EINTERNAL, "%s on '%s' (rank %d): peer %d is not a member (0..%d)", what,
				    comm_kind_name((enum comm_kind)kind), c->world_rank, peer, g->size - 1);
	if (tag < 0 || tag > 32767)
		return ascent_error(ASCENT_EINTERNAL, "%s: tag %d outside [0, 32767]", what, tag);
	if (!c->use_mpi)
		return ascent_error(ASCENT_EUSAGE, "%s to itself needs MPI (ASCENT_NO_MPI is set)", what);
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_req r;
	op_begin(c, &r, kind, op, t, count, (int64_t)(count * sz), peer, 0);
	MPI_Datatype dt = comm_mpi_dtype((enum comm_dtype)t);
	int mrc;
	if (op == OP_SEND) {
		mrc = MPI_Isend(buf, (int)count, dt, peer, tag, g->mc, &r.mreq[0]);
	} else {
		r.avg_count = count, r.avg_dtype = t; /* for the size check at completion */
		mrc = MPI_Irecv(buf, (int)count, dt, peer, tag, g->mc, &r.mreq[0]);
	}
	if (mrc != MPI_SUCCESS)
		return post_failed(c, &r, mrc, op == OP_SEND ? "MPI_Isend" : "MPI_Irecv");
	op_started(c, &r);
	return p2p_hand_out(c, &r, out);
}

int comm_send(struct comm *c, enum comm_kind k, const void *buf, size_t count, enum comm_dtype t, int peer, int tag)
{
	return do_p2p(c, k, OP_SEND, (void *)buf, count, t, peer, tag, NULL);
}

int comm_isend(struct comm *c, enum comm_kind k, const void *buf, size_t count, enum comm_dtype t, int peer, int tag,
	       struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_isend: NULL request pointer");
	return do_p2p(c, k, OP_SEND, (void *)buf, count, t, peer, tag, req);
}

int comm_recv(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int peer, int tag)
{
	return do_p2p(c, k, OP_RECV, buf, count, t, peer, tag, NULL);
}

int comm_irecv(struct comm *c, enum comm_kind k, void *buf, size_t count, enum comm_dtype t, int peer, int tag,
	       struct comm_req **req)
{
	if (!req)
		return ascent_error(ASCENT_EINTERNAL, "comm_irecv: NULL request pointer");
	return do_p2p(c, k, OP_RECV, buf, count, t, peer, tag, req);
}

/* ---------------------------------------------------------------------------------------- */

/* A collective's result, handed to the waiting thread (the error message too, when the
 * communication thread met it). Frees r. */
static int collective_result(struct comm_req *r)
{
	int rc = r->rc;
	if (rc && r->errmsg)
		rc = ascent_error(rc, "%s", r->errmsg);
	free(r->errmsg);
	free(r);
	return rc;
}

int comm_wait(struct comm *c, struct comm_req **req)
{
	if (!req || !*req)
		return 0;
	struct comm_req *r = *req;
	*req = NULL;
	if (r->p2p) {
		int rc = p2p_wait(c, r);
		free(r);
		return rc;
	}
	pthread_mutex_lock(&c->lock);
	if (r->state != RQ_DONE) {
		/* the compute thread waits for communication: its own event, the exposed part */
		pthread_mutex_unlock(&c->lock);
		struct prof_tok w = prof_wait_begin(comm_op_name(r->op), (int)c->g[r->kind].id, r->seq, r->bytes);
		pthread_mutex_lock(&c->lock);
		c->dwaiters++;
		while (r->state != RQ_DONE)
			pthread_cond_wait(&c->dcond, &c->lock);
		c->dwaiters--;
		pthread_mutex_unlock(&c->lock);
		prof_range_end(&w);
	} else {
		pthread_mutex_unlock(&c->lock);
	}
	return collective_result(r);
}

int comm_waitall(struct comm *c, struct comm_req **reqs, int n)
{
	int first = 0;
	for (int i = 0; i < n; i++) {
		int rc = comm_wait(c, &reqs[i]);
		if (rc && !first)
			first = rc;
	}
	return first;
}

int comm_test(struct comm *c, struct comm_req **req, int *done)
{
	*done = 0;
	if (!req || !*req) {
		*done = 1;
		return 0;
	}
	struct comm_req *r = *req;
	if (!r->p2p) {
		pthread_mutex_lock(&c->lock);
		int finished = r->state == RQ_DONE;
		pthread_mutex_unlock(&c->lock);
		if (!finished)
			return 0;
		*req = NULL;
		*done = 1;
		return collective_result(r);
	}
	int flag = 1;
	int rc = test_once(c, r, &flag);
	if (rc || flag) {
		rc = req_finish(c, r, rc);
		free(r);
		*req = NULL;
		*done = 1;
	}
	return rc;
}
