/* comm/ops.c — the collectives and send/recv. Every operation, blocking or not, goes through one
 * traced path: op_begin (checks, fault injection, flight-recorder entry, profiler begin, sequence
 * numbers), the non-blocking MPI call, and req_finish (flight entry completed, profiler end, the
 * division of COMM_AVG). Blocking calls are the non-blocking ones plus req_wait, a test loop that
 * yields the CPU (oversubscribed ranks share cores) while the watchdog watches the entry. */
#include "comm/impl.h"
#include "profiler/prof.h"

#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* Record the start of an operation: fault injection, sequence number, flight entry, profiler.
 * `peer_group` is the group rank of the p2p peer or broadcast root (-1 none). */
static void op_begin(struct comm *c, struct comm_req *r, int kind, int op, int dtype, size_t count, int64_t bytes,
		     int peer_group)
{
	struct comm_group *g = &c->g[kind];
	int p2p = op == OP_SEND || op == OP_RECV;
	memset(r, 0, sizeof *r);
	r->c = c;
	r->kind = kind;
	r->op = op;
	r->mreq[0] = MPI_REQUEST_NULL;

	pthread_mutex_lock(&c->lock);
	int64_t next = c->next_op_index + 1;
	int64_t seq = p2p ? (op == OP_SEND ? g->send_seq[peer_group] : g->recv_seq[peer_group]) + 1 : g->last_enq + 1;
	pthread_mutex_unlock(&c->lock);
	if (c->nfaults)
		fault_before(c, kind, op, next, seq);

	int peer_world = peer_group >= 0 ? g->ranks[peer_group] : -1;
	pthread_mutex_lock(&c->lock);
	if (p2p)
		seq = (op == OP_SEND ? ++g->send_seq[peer_group] : ++g->recv_seq[peer_group]);
	else
		seq = ++g->last_enq;
	r->op_index = flight_begin(c, kind, op, seq, dtype, (int64_t)count, bytes, peer_world);
	r->seq = seq;
	c->inflight++;
	pthread_mutex_unlock(&c->lock);
	if (p2p)
		r->tok = prof_p2p_begin(comm_op_name(op), (int)g->id, seq, bytes, peer_group);
	else
		r->tok = prof_comm_begin(comm_op_name(op), (int)g->id, seq, bytes, peer_group);
}

static void op_started(struct comm *c, struct comm_req *r)
{
	pthread_mutex_lock(&c->lock);
	flight_set_state(c, r->op_index, FL_STARTED);
	if (r->op != OP_SEND && r->op != OP_RECV && r->seq > c->g[r->kind].last_start)
		c->g[r->kind].last_start = r->seq;
	pthread_mutex_unlock(&c->lock);
}

static void divide(void *buf, size_t n, int dtype, int div)
{
	switch (dtype) {
	case COMM_F32:
		for (size_t i = 0; i < n; i++)
			((float *)buf)[i] /= (float)div;
		break;
	case COMM_F64:
		for (size_t i = 0; i < n; i++)
			((double *)buf)[i] /= (double)div;
		break;
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

/* The operation has completed (or failed: rc != 0). */
static int req_finish(struct comm *c, struct comm_req *r, int rc)
{
	pthread_mutex_lock(&c->lock);
	flight_set_state(c, r->op_index, FL_COMPLETED);
	if (r->op != OP_SEND && r->op != OP_RECV && r->seq > c->g[r->kind].last_done)
		c->g[r->kind].last_done = r->seq;
	c->inflight--;
	pthread_mutex_unlock(&c->lock);
	if (!rc && r->avg_div > 1)
		divide(r->avg_buf, r->avg_count, r->avg_dtype, r->avg_div);
	prof_comm_end(&r->tok);
	return rc;
}

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

static int req_wait(struct comm *c, struct comm_req *r)
{
	if (r->local)
		return req_finish(c, r, 0);
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

/* Set up the request for the local (no MPI) case: the group has one member. */
static void local_copy(void *dst, const void *src, size_t bytes)
{
	if (dst && src && dst != src && bytes)
		memmove(dst, src, bytes);
}

/* Finish a posted request: blocking callers wait on their stack request; non-blocking ones get a
 * heap copy. */
static int hand_out(struct comm *c, struct comm_req *r, struct comm_req **out)
{
	if (!out)
		return req_wait(c, r);
	struct comm_req *h = malloc(sizeof *h);
	if (!h) {
		/* cannot hand it out: wait here so the buffers are safe, then report */
		req_wait(c, r);
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
	if (out)
		*out = NULL;
	int rc = check_args(c, kind, t, count, "allreduce");
	if (rc || (rc = check_reduce(kind, t, rop, "allreduce")))
		return rc;
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_req r;
	op_begin(c, &r, kind, OP_ALLREDUCE, t, count, (int64_t)(count * sz), -1);
	struct comm_group *g = &c->g[kind];
	if (rop == COMM_AVG)
		r.avg_buf = recv, r.avg_count = count, r.avg_dtype = t, r.avg_div = g->size;
	if (!c->use_mpi) {
		local_copy(recv, send, count * sz);
		r.local = 1;
	} else {
		const void *sb = (!send || send == recv) ? MPI_IN_PLACE : send;
		int mrc = MPI_Iallreduce(sb, recv, (int)count, comm_mpi_dtype((enum comm_dtype)t), mpi_op(rop), g->mc,
					 &r.mreq[0]);
		if (mrc != MPI_SUCCESS)
			return post_failed(c, &r, mrc, "MPI_Iallreduce");
	}
	op_started(c, &r);
	return hand_out(c, &r, out);
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
	return do_allreduce(c, k, send, recv, count, t, op, req);
}

static int do_reduce_scatter(struct comm *c, int kind, const void *send, void *recv, size_t count, int t, int rop,
			     struct comm_req **out)
{
	if (out)
		*out = NULL;
	int rc = check_args(c, kind, t, count, "reduce_scatter");
	if (rc || (rc = check_reduce(kind, t, rop, "reduce_scatter")))
		return rc;
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_group *g = &c->g[kind];
	struct comm_req r;
	op_begin(c, &r, kind, OP_REDUCE_SCATTER, t, count, (int64_t)(count * sz * (size_t)g->size), -1);
	if (rop == COMM_AVG)
		r.avg_buf = recv, r.avg_count = count, r.avg_dtype = t, r.avg_div = g->size;
	if (!c->use_mpi) {
		local_copy(recv, send, count * sz);
		r.local = 1;
	} else {
		const void *sb = (!send || send == recv) ? MPI_IN_PLACE : send;
		int mrc = MPI_Ireduce_scatter_block(sb, recv, (int)count, comm_mpi_dtype((enum comm_dtype)t), mpi_op(rop),
						    g->mc, &r.mreq[0]);
		if (mrc != MPI_SUCCESS)
			return post_failed(c, &r, mrc, "MPI_Ireduce_scatter_block");
	}
	op_started(c, &r);
	return hand_out(c, &r, out);
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
	return do_reduce_scatter(c, k, send, recv, count, t, op, req);
}

static int do_allgather(struct comm *c, int kind, const void *send, void *recv, size_t count, int t,
			struct comm_req **out)
{
	if (out)
		*out = NULL;
	int rc = check_args(c, kind, t, count, "allgather");
	if (rc)
		return rc;
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_group *g = &c->g[kind];
	struct comm_req r;
	op_begin(c, &r, kind, OP_ALLGATHER, t, count, (int64_t)(count * sz * (size_t)g->size), -1);
	if (!c->use_mpi) {
		local_copy(recv, send, count * sz);
		r.local = 1;
	} else {
		int mrc;
		MPI_Datatype dt = comm_mpi_dtype((enum comm_dtype)t);
		if (!send || send == (char *)recv + (size_t)g->rank * count * sz)
			mrc = MPI_Iallgather(MPI_IN_PLACE, 0, dt, recv, (int)count, dt, g->mc, &r.mreq[0]);
		else
			mrc = MPI_Iallgather(send, (int)count, dt, recv, (int)count, dt, g->mc, &r.mreq[0]);
		if (mrc != MPI_SUCCESS)
			return post_failed(c, &r, mrc, "MPI_Iallgather");
	}
	op_started(c, &r);
	return hand_out(c, &r, out);
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
	return do_allgather(c, k, send, recv, count, t, req);
}

static int do_broadcast(struct comm *c, int kind, void *buf, size_t count, int t, int root, struct comm_req **out)
{
	if (out)
		*out = NULL;
	int rc = check_args(c, kind, t, count, "broadcast");
	if (rc)
		return rc;
	struct comm_group *g = &c->g[kind];
	if (root < 0 || root >= g->size)
		return ascent_error(ASCENT_EINTERNAL, "broadcast on '%s': root %d is not a member (0..%d)",
				    comm_kind_name((enum comm_kind)kind), root, g->size - 1);
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_req r;
	op_begin(c, &r, kind, OP_BROADCAST, t, count, (int64_t)(count * sz), root);
	if (!c->use_mpi) {
		r.local = 1;
	} else {
		int mrc = MPI_Ibcast(buf, (int)count, comm_mpi_dtype((enum comm_dtype)t), root, g->mc, &r.mreq[0]);
		if (mrc != MPI_SUCCESS)
			return post_failed(c, &r, mrc, "MPI_Ibcast");
	}
	op_started(c, &r);
	return hand_out(c, &r, out);
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
	return do_broadcast(c, k, buf, count, t, root, req);
}

static int do_alltoall(struct comm *c, int kind, const void *send, void *recv, size_t count, int t,
		       struct comm_req **out)
{
	if (out)
		*out = NULL;
	int rc = check_args(c, kind, t, count, "alltoall");
	if (rc)
		return rc;
	if (!send || send == recv)
		return ascent_error(ASCENT_EINTERNAL, "alltoall: in place is not supported (give two buffers)");
	size_t sz = comm_dtype_size((enum comm_dtype)t);
	struct comm_group *g = &c->g[kind];
	struct comm_req r;
	op_begin(c, &r, kind, OP_ALLTOALL, t, count, (int64_t)(count * sz * (size_t)g->size), -1);
	if (!c->use_mpi) {
		local_copy(recv, send, count * sz);
		r.local = 1;
	} else {
		MPI_Datatype dt = comm_mpi_dtype((enum comm_dtype)t);
		int mrc = MPI_Ialltoall(send, (int)count, dt, recv, (int)count, dt, g->mc, &r.mreq[0]);
		if (mrc != MPI_SUCCESS)
			return post_failed(c, &r, mrc, "MPI_Ialltoall");
	}
	op_started(c, &r);
	return hand_out(c, &r, out);
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
	return do_alltoall(c, k, send, recv, count, t, req);
}

int comm_barrier(struct comm *c, enum comm_kind k)
{
	int rc = check_args(c, k, COMM_BYTE, 0, "barrier");
	if (rc)
		return rc;
	struct comm_req r;
	op_begin(c, &r, k, OP_BARRIER, COMM_BYTE, 0, 0, -1);
	if (!c->use_mpi) {
		r.local = 1;
	} else {
		int mrc = MPI_Ibarrier(c->g[k].mc, &r.mreq[0]);
		if (mrc != MPI_SUCCESS)
			return post_failed(c, &r, mrc, "MPI_Ibarrier");
	}
	op_started(c, &r);
	return req_wait(c, &r);
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
	op_begin(c, &r, kind, op, t, count, (int64_t)(count * sz), peer);
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
	return hand_out(c, &r, out);
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

int comm_wait(struct comm *c, struct comm_req **req)
{
	if (!req || !*req)
		return 0;
	struct comm_req *r = *req;
	*req = NULL;
	int rc = req_wait(c, r);
	free(r);
	return rc;
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
	int flag = 1, rc = 0;
	if (!r->local)
		rc = test_once(c, r, &flag);
	if (rc || flag) {
		rc = req_finish(c, r, rc);
		free(r);
		*req = NULL;
		*done = 1;
	}
	return rc;
}
