/* interpose/record.c — what a recorded MPI call becomes (communicator id, sequence number, bytes,
 * peer) and the wrappers of the collectives, blocking and non-blocking. Bytes follow nccl-tests'
 * S: count · type size; the full array for allgather, reduce_scatter and alltoall; a rooted call
 * counts the root's array on every member when the members can know it, else their own part. */
#include "interpose/impl.h"

int64_t ip_type_bytes(MPI_Datatype t, int64_t count)
{
	int sz = 0;
	if (count <= 0 || PMPI_Type_size(t, &sz) != MPI_SUCCESS || sz < 0)
		return 0;
	return count * sz;
}

int64_t ip_sum_counts(const int *counts, int n)
{
	int64_t s = 0;
	for (int i = 0; counts && i < n; i++)
		s += counts[i];
	return s;
}

int ip_comm_size_of(MPI_Comm mc)
{
	struct ip_comm *c = ip_comm_find(mc);
	int n = 1;
	if (c)
		return c->size;
	if (PMPI_Comm_size(mc, &n) != MPI_SUCCESS)
		return 1;
	return n;
}

int ip_comm_is_root(MPI_Comm mc, int root)
{
	struct ip_comm *c = ip_comm_find(mc);
	int r = -1;
	if (c)
		return c->rank == root;
	return PMPI_Comm_rank(mc, &r) == MPI_SUCCESS && r == root;
}

struct prof_tok ip_coll_begin(const char *name, MPI_Comm mc, int64_t bytes, int root)
{
	struct ip_comm *c = ip_comm_find(mc);
	if (!c || c->id < 0)
		return prof_comm_begin(name, -1, -1, bytes, root);
	int64_t seq = __atomic_add_fetch(&c->coll_seq, 1, __ATOMIC_RELAXED);
	return prof_comm_begin(name, c->id, seq, bytes, root);
}

struct prof_tok ip_send_begin(const char *name, MPI_Comm mc, int64_t bytes, int dest, int exchange)
{
	struct ip_comm *c = ip_comm_find(mc);
	if (!c || c->id < 0 || dest < 0 || dest >= c->size)
		return prof_p2p_begin(name, -1, -1, bytes, dest);
	int64_t seq = __atomic_add_fetch(exchange ? &c->xchg_seq[dest] : &c->send_seq[dest], 1, __ATOMIC_RELAXED);
	return prof_p2p_begin(name, c->id, seq, bytes, dest);
}

struct prof_tok ip_recv_begin(const char *name, MPI_Comm mc)
{
	(void)mc;
	return prof_p2p_begin(name, -1, -1, 0, -1);
}

void ip_recv_end(struct prof_tok *t, MPI_Comm mc, const MPI_Status *st, MPI_Datatype dt)
{
	if (!t->t0)
		return;
	int src = st ? st->MPI_SOURCE : -1, got = 0;
	if (st && PMPI_Get_count(st, dt, &got) == MPI_SUCCESS && got != MPI_UNDEFINED)
		t->amount = ip_type_bytes(dt, got);
	t->arg = src;
	struct ip_comm *c = ip_comm_find(mc);
	if (c && c->id >= 0 && src >= 0 && src < c->size) {
		t->comm_id = c->id;
		t->seq = __atomic_add_fetch(&c->recv_seq[src], 1, __ATOMIC_RELAXED);
	}
	prof_range_end(t);
}

/* ---------------------------------------------------------------------------------------- */
/* Collectives. BLOCKING(name, bytes, root, call): pass straight through when not recording. */

#define BLOCKING(NAME, COMM, BYTES, ROOT, CALL)                                       \
	do {                                                                          \
		if (!ip_on())                                                         \
			return CALL;                                                  \
		struct prof_tok t_ = ip_coll_begin(NAME, COMM, BYTES, ROOT);          \
		int rc_ = CALL;                                                       \
		prof_range_end(&t_);                                                  \
		return rc_;                                                           \
	} while (0)

#define NONBLOCKING(NAME, COMM, BYTES, ROOT, CALL, REQ)                               \
	do {                                                                          \
		if (!ip_on())                                                         \
			return CALL;                                                  \
		struct prof_tok t_ = ip_coll_begin(NAME, COMM, BYTES, ROOT);          \
		int rc_ = CALL;                                                       \
		if (rc_ == MPI_SUCCESS)                                               \
			ip_req_track(*(REQ), &t_, 0, COMM, MPI_DATATYPE_NULL);         \
		return rc_;                                                           \
	} while (0)

#define IN_PLACE(b) ((b) == MPI_IN_PLACE)

int MPI_Barrier(MPI_Comm comm)
{
	BLOCKING("barrier", comm, 0, -1, PMPI_Barrier(comm));
}

int MPI_Ibarrier(MPI_Comm comm, MPI_Request *req)
{
	NONBLOCKING("ibarrier", comm, 0, -1, PMPI_Ibarrier(comm, req), req);
}

int MPI_Bcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm)
{
	BLOCKING("bcast", comm, ip_type_bytes(dt, count), root, PMPI_Bcast(buf, count, dt, root, comm));
}

int MPI_Ibcast(void *buf, int count, MPI_Datatype dt, int root, MPI_Comm comm, MPI_Request *req)
{
	NONBLOCKING("ibcast", comm, ip_type_bytes(dt, count), root, PMPI_Ibcast(buf, count, dt, root, comm, req), req);
}

int MPI_Allreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	BLOCKING("allreduce", comm, ip_type_bytes(dt, count), -1, PMPI_Allreduce(sb, rb, count, dt, op, comm));
}

int MPI_Iallreduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm, MPI_Request *req)
{
	NONBLOCKING("iallreduce", comm, ip_type_bytes(dt, count), -1, PMPI_Iallreduce(sb, rb, count, dt, op, comm, req),
		    req);
}

int MPI_Reduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm)
{
	BLOCKING("reduce", comm, ip_type_bytes(dt, count), root, PMPI_Reduce(sb, rb, count, dt, op, root, comm));
}

int MPI_Ireduce(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, int root, MPI_Comm comm,
		MPI_Request *req)
{
	NONBLOCKING("ireduce", comm, ip_type_bytes(dt, count), root,
		    PMPI_Ireduce(sb, rb, count, dt, op, root, comm, req), req);
}

int MPI_Scan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	BLOCKING("scan", comm, ip_type_bytes(dt, count), -1, PMPI_Scan(sb, rb, count, dt, op, comm));
}

int MPI_Exscan(const void *sb, void *rb, int count, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	BLOCKING("exscan", comm, ip_type_bytes(dt, count), -1, PMPI_Exscan(sb, rb, count, dt, op, comm));
}

/* all-gather: the full array, n · recvcount */
int MPI_Allgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	BLOCKING("allgather", comm, ip_type_bytes(rt, (int64_t)rc * ip_comm_size_of(comm)), -1,
		 PMPI_Allgather(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Iallgather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
		   MPI_Request *req)
{
	NONBLOCKING("iallgather", comm, ip_type_bytes(rt, (int64_t)rc * ip_comm_size_of(comm)), -1,
		    PMPI_Iallgather(sb, sc, st, rb, rc, rt, comm, req), req);
}

int MPI_Allgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
		   MPI_Datatype rt, MPI_Comm comm)
{
	BLOCKING("allgatherv", comm, ip_type_bytes(rt, ip_sum_counts(rcs, ip_comm_size_of(comm))), -1,
		 PMPI_Allgatherv(sb, sc, st, rb, rcs, displs, rt, comm));
}

int MPI_Iallgatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
		    MPI_Datatype rt, MPI_Comm comm, MPI_Request *req)
{
	NONBLOCKING("iallgatherv", comm, ip_type_bytes(rt, ip_sum_counts(rcs, ip_comm_size_of(comm))), -1,
		    PMPI_Iallgatherv(sb, sc, st, rb, rcs, displs, rt, comm, req), req);
}

/* gather: the root's full array; the others count n times what they send */
static int64_t gather_bytes(const void *sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	int64_t n = ip_comm_size_of(comm);
	if (ip_comm_is_root(comm, root) || IN_PLACE(sb))
		return ip_type_bytes(rt, (int64_t)rc * n);
	return ip_type_bytes(st, (int64_t)sc * n);
}

int MPI_Gather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	BLOCKING("gather", comm, gather_bytes(sb, sc, st, rc, rt, root, comm), root,
		 PMPI_Gather(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Igather(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm,
		MPI_Request *req)
{
	NONBLOCKING("igather", comm, gather_bytes(sb, sc, st, rc, rt, root, comm), root,
		    PMPI_Igather(sb, sc, st, rb, rc, rt, root, comm, req), req);
}

int MPI_Gatherv(const void *sb, int sc, MPI_Datatype st, void *rb, const int rcs[], const int displs[],
		MPI_Datatype rt, int root, MPI_Comm comm)
{
	int64_t b = !ip_on()			   ? 0
		    : ip_comm_is_root(comm, root) ? ip_type_bytes(rt, ip_sum_counts(rcs, ip_comm_size_of(comm)))
						   : ip_type_bytes(st, sc);
	BLOCKING("gatherv", comm, b, root, PMPI_Gatherv(sb, sc, st, rb, rcs, displs, rt, root, comm));
}

/* scatter: the root's full array, as for gather */
static int64_t scatter_bytes(int sc, MPI_Datatype st, const void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	int64_t n = ip_comm_size_of(comm);
	if (ip_comm_is_root(comm, root) || IN_PLACE(rb))
		return ip_type_bytes(st, (int64_t)sc * n);
	return ip_type_bytes(rt, (int64_t)rc * n);
}

int MPI_Scatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root, MPI_Comm comm)
{
	BLOCKING("scatter", comm, scatter_bytes(sc, st, rb, rc, rt, root, comm), root,
		 PMPI_Scatter(sb, sc, st, rb, rc, rt, root, comm));
}

int MPI_Iscatter(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, int root,
		 MPI_Comm comm, MPI_Request *req)
{
	NONBLOCKING("iscatter", comm, scatter_bytes(sc, st, rb, rc, rt, root, comm), root,
		    PMPI_Iscatter(sb, sc, st, rb, rc, rt, root, comm, req), req);
}

int MPI_Scatterv(const void *sb, const int scs[], const int displs[], MPI_Datatype st, void *rb, int rc,
		 MPI_Datatype rt, int root, MPI_Comm comm)
{
	int64_t b = !ip_on()			   ? 0
		    : ip_comm_is_root(comm, root) ? ip_type_bytes(st, ip_sum_counts(scs, ip_comm_size_of(comm)))
						   : ip_type_bytes(rt, rc);
	BLOCKING("scatterv", comm, b, root, PMPI_Scatterv(sb, scs, displs, st, rb, rc, rt, root, comm));
}

/* all-to-all: the full array, n · sendcount */
static int64_t alltoall_bytes(const void *sb, int sc, MPI_Datatype st, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	int64_t n = ip_comm_size_of(comm);
	return IN_PLACE(sb) ? ip_type_bytes(rt, (int64_t)rc * n) : ip_type_bytes(st, (int64_t)sc * n);
}

int MPI_Alltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	BLOCKING("alltoall", comm, alltoall_bytes(sb, sc, st, rc, rt, comm), -1,
		 PMPI_Alltoall(sb, sc, st, rb, rc, rt, comm));
}

int MPI_Ialltoall(const void *sb, int sc, MPI_Datatype st, void *rb, int rc, MPI_Datatype rt, MPI_Comm comm,
		  MPI_Request *req)
{
	NONBLOCKING("ialltoall", comm, alltoall_bytes(sb, sc, st, rc, rt, comm), -1,
		    PMPI_Ialltoall(sb, sc, st, rb, rc, rt, comm, req), req);
}

int MPI_Alltoallv(const void *sb, const int scs[], const int sdispls[], MPI_Datatype st, void *rb, const int rcs[],
		  const int rdispls[], MPI_Datatype rt, MPI_Comm comm)
{
	int n = ip_on() ? ip_comm_size_of(comm) : 0;
	int64_t b = IN_PLACE(sb) ? ip_type_bytes(rt, ip_sum_counts(rcs, n)) : ip_type_bytes(st, ip_sum_counts(scs, n));
	BLOCKING("alltoallv", comm, b, -1, PMPI_Alltoallv(sb, scs, sdispls, st, rb, rcs, rdispls, rt, comm));
}

/* reduce-scatter: the full array */
int MPI_Reduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	BLOCKING("reduce_scatter_block", comm, ip_type_bytes(dt, (int64_t)rc * ip_comm_size_of(comm)), -1,
		 PMPI_Reduce_scatter_block(sb, rb, rc, dt, op, comm));
}

int MPI_Ireduce_scatter_block(const void *sb, void *rb, int rc, MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
			      MPI_Request *req)
{
	NONBLOCKING("ireduce_scatter_block", comm, ip_type_bytes(dt, (int64_t)rc * ip_comm_size_of(comm)), -1,
		    PMPI_Ireduce_scatter_block(sb, rb, rc, dt, op, comm, req), req);
}

int MPI_Reduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
	BLOCKING("reduce_scatter", comm, ip_type_bytes(dt, ip_sum_counts(rcs, ip_comm_size_of(comm))), -1,
		 PMPI_Reduce_scatter(sb, rb, rcs, dt, op, comm));
}

int MPI_Ireduce_scatter(const void *sb, void *rb, const int rcs[], MPI_Datatype dt, MPI_Op op, MPI_Comm comm,
			MPI_Request *req)
{
	NONBLOCKING("ireduce_scatter", comm, ip_type_bytes(dt, ip_sum_counts(rcs, ip_comm_size_of(comm))), -1,
		    PMPI_Ireduce_scatter(sb, rb, rcs, dt, op, comm, req), req);
}
