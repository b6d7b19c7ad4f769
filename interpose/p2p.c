/* interpose/p2p.c — point to point (blocking, non-blocking, sendrecv), the table of non-blocking
 * requests in flight, and MPI_Wait.../MPI_Test..., which end a non-blocking call's record when they
 * see its request complete (a collective's on its communicator's lane) and record the time a
 * MPI_Wait... blocks on a collective as a wait event of the thread (DB_KIND_WAIT). */
#include "interpose/impl.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* Requests in flight: an open-addressing table keyed by the request handle, under one spin lock
 * (a post and a completion each hold it for a few dozen instructions; bench_pmpi measures the
 * whole non-blocking path). Nothing is tracked while not recording. */

#define NREQ 16384

struct pending {
	MPI_Request req;       /* MPI_REQUEST_NULL: free */
	struct prof_tok tok;
	MPI_Comm mc;
	MPI_Datatype dt;
	const char *lane;      /* collectives: where the range ends; NULL: point to point */
	int is_recv;
	int used;
};

static struct pending table[NREQ];
static int ntracked;                       /* atomics; read without the lock as a hint */
static int req_lock;

static void lock(void)
{
	for (int spins = 0; __atomic_exchange_n(&req_lock, 1, __ATOMIC_ACQUIRE); spins++) {
		while (__atomic_load_n(&req_lock, __ATOMIC_RELAXED))
			if (++spins > 200) {
				sched_yield();   /* the holder was preempted (oversubscribed ranks) */
				spins = 0;
			} else {
				__builtin_ia32_pause();
			}
	}
}

static void unlock(void)
{
	__atomic_store_n(&req_lock, 0, __ATOMIC_RELEASE);
}
static int warned_full;

static size_t req_slot(MPI_Request r)
{
	return (size_t)(((uintptr_t)r * 0x9E3779B97F4A7C15ULL) >> 40) & (NREQ - 1);
}

int ip_req_pending(void)
{
	return __atomic_load_n(&ntracked, __ATOMIC_RELAXED);
}

void ip_req_track(MPI_Request req, const struct prof_tok *t, int is_recv, MPI_Comm mc, MPI_Datatype dt)
{
	if (!t->t0 || req == MPI_REQUEST_NULL)
		return;
	const char *lane = t->kind == DB_KIND_COMM ? ip_comm_lane(mc) : NULL;
	lock();
	size_t i = req_slot(req), n;
	for (n = 0; n < NREQ; n++, i = (i + 1) & (NREQ - 1))
		if (!table[i].used)
			break;
	if (n < NREQ) {
		table[i] = (struct pending){ .req = req, .tok = *t, .mc = mc, .dt = dt, .lane = lane, .is_recv = is_recv,
					     .used = 1 };
		__atomic_add_fetch(&ntracked, 1, __ATOMIC_RELAXED);
	}
	unlock();
	if (n == NREQ && !warned_full++)
		log_warn("ascent profile: more than %d non-blocking calls in flight; the others are not recorded", NREQ);
}

/* Remove `req` from the table into *out (1 when it was there); the entries after it move back
 * into the hole (linear probing without tombstones, so misses stay short). */
static int take(MPI_Request req, struct pending *out)
{
	int found = 0;
	lock();
	size_t i = req_slot(req);
	for (size_t n = 0; n < NREQ && table[i].used; n++, i = (i + 1) & (NREQ - 1))
		if (table[i].req == req) {
			*out = table[i];
			found = 1;
			break;
		}
	if (found) {
		size_t hole = i, j = i;
		for (;;) {
			j = (j + 1) & (NREQ - 1);
			if (!table[j].used)
				break;
			size_t home = req_slot(table[j].req);
			/* j may fill the hole unless its home lies cyclically in (hole, j] */
			int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
			if (!stays) {
				table[hole] = table[j];
				hole = j;
			}
		}
		table[hole].used = 0;
		table[hole].req = MPI_REQUEST_NULL;
		__atomic_sub_fetch(&ntracked, 1, __ATOMIC_RELAXED);
	}
	unlock();
	return found;
}

/* The record of a completed request ends. */
static void finish(struct pending *p, const MPI_Status *st)
{
	if (p->is_recv)
		ip_recv_end(&p->tok, p->mc, st, p->dt);
	else if (p->lane)
		prof_lane_end(&p->tok, p->lane);
	else
		prof_range_end(&p->tok);
}

void ip_req_done(MPI_Request saved, const MPI_Status *st)
{
	struct pending p;
	if (saved == MPI_REQUEST_NULL || !take(saved, &p))
		return;
	finish(&p, st);
}

struct prof_tok ip_wait_begin(const MPI_Request *reqs, int n)
{
	struct prof_tok w = { 0 };
	for (int k = 0; k < n && !w.t0; k++) {
		if (reqs[k] == MPI_REQUEST_NULL)
			continue;
		lock();
		size_t i = req_slot(reqs[k]);
		struct prof_tok t = { 0 };
		for (size_t m = 0; m < NREQ && table[i].used; m++, i = (i + 1) & (NREQ - 1))
			if (table[i].req == reqs[k]) {
				if (table[i].lane)
					t = table[i].tok;
				break;
			}
		unlock();
		if (t.t0)
			w = prof_wait_begin(t.name, t.comm_id, t.seq, t.amount);
	}
	return w;
}

void ip_req_drop(MPI_Request saved)
{
	struct pending p;
	if (saved != MPI_REQUEST_NULL)
		take(saved, &p);
}

/* ---------------------------------------------------------------------------------------- */
/* Blocking point to point */

#define SEND(NAME, CALL, COUNT, DT, DEST, COMM)                                                   \
	do {                                                                                      \
		if (!ip_on() || (DEST) == MPI_PROC_NULL)                                          \
			return CALL;                                                              \
		struct prof_tok t_ = ip_send_begin(NAME, COMM, ip_type_bytes(DT, COUNT), DEST, 0); \
		int rc_ = CALL;                                                                   \
		prof_range_end(&t_);                                                              \
		return rc_;                                                                       \
	} while (0)

int MPI_Send(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	SEND("send", PMPI_Send(buf, count, dt, dest, tag, comm), count, dt, dest, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	SEND("ssend", PMPI_Ssend(buf, count, dt, dest, tag, comm), count, dt, dest, comm);
}

int MPI_Bsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	SEND("bsend", PMPI_Bsend(buf, count, dt, dest, tag, comm), count, dt, dest, comm);
}

int MPI_Rsend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm)
{
	SEND("rsend", PMPI_Rsend(buf, count, dt, dest, tag, comm), count, dt, dest, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Status *status)
{
	if (!ip_on() || source == MPI_PROC_NULL)
		return PMPI_Recv(buf, count, dt, source, tag, comm, status);
	MPI_Status mine;
	MPI_Status *st = status == MPI_STATUS_IGNORE ? &mine : status;
	struct prof_tok t = ip_recv_begin("recv", comm);
	int rc = PMPI_Recv(buf, count, dt, source, tag, comm, st);
	ip_recv_end(&t, comm, rc == MPI_SUCCESS ? st : NULL, dt);
	return rc;
}

/* one event per call: peer = dest, bytes sent; matched with the partner's exchange */
int MPI_Sendrecv(const void *sb, int sc, MPI_Datatype st, int dest, int stag, void *rb, int rc, MPI_Datatype rt,
		 int source, int rtag, MPI_Comm comm, MPI_Status *status)
{
	if (!ip_on() || dest == MPI_PROC_NULL)
		return PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, source, rtag, comm, status);
	struct prof_tok t = ip_send_begin("sendrecv", comm, ip_type_bytes(st, sc), dest, 1);
	int r = PMPI_Sendrecv(sb, sc, st, dest, stag, rb, rc, rt, source, rtag, comm, status);
	prof_range_end(&t);
	return r;
}

int MPI_Sendrecv_replace(void *buf, int count, MPI_Datatype dt, int dest, int stag, int source, int rtag,
			 MPI_Comm comm, MPI_Status *status)
{
	if (!ip_on() || dest == MPI_PROC_NULL)
		return PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status);
	struct prof_tok t = ip_send_begin("sendrecv_replace", comm, ip_type_bytes(dt, count), dest, 1);
	int r = PMPI_Sendrecv_replace(buf, count, dt, dest, stag, source, rtag, comm, status);
	prof_range_end(&t);
	return r;
}

/* ---------------------------------------------------------------------------------------- */
/* Non-blocking point to point: the record ends when a Wait/Test sees the request complete */

int MPI_Isend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	if (!ip_on() || dest == MPI_PROC_NULL)
		return PMPI_Isend(buf, count, dt, dest, tag, comm, req);
	struct prof_tok t = ip_send_begin("isend", comm, ip_type_bytes(dt, count), dest, 0);
	int rc = PMPI_Isend(buf, count, dt, dest, tag, comm, req);
	if (rc == MPI_SUCCESS)
		ip_req_track(*req, &t, 0, comm, dt);
	return rc;
}

int MPI_Issend(const void *buf, int count, MPI_Datatype dt, int dest, int tag, MPI_Comm comm, MPI_Request *req)
{
	if (!ip_on() || dest == MPI_PROC_NULL)
		return PMPI_Issend(buf, count, dt, dest, tag, comm, req);
	struct prof_tok t = ip_send_begin("issend", comm, ip_type_bytes(dt, count), dest, 0);
	int rc = PMPI_Issend(buf, count, dt, dest, tag, comm, req);
	if (rc == MPI_SUCCESS)
		ip_req_track(*req, &t, 0, comm, dt);
	return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype dt, int source, int tag, MPI_Comm comm, MPI_Request *req)
{
	if (!ip_on() || source == MPI_PROC_NULL)
		return PMPI_Irecv(buf, count, dt, source, tag, comm, req);
	struct prof_tok t = ip_recv_begin("irecv", comm);
	int rc = PMPI_Irecv(buf, count, dt, source, tag, comm, req);
	if (rc == MPI_SUCCESS)
		ip_req_track(*req, &t, 1, comm, dt);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* Completion. Each wrapper keeps the handles as they were before the PMPI call (it sets completed
 * requests to MPI_REQUEST_NULL) and a status array of its own when the caller ignores statuses
 * (a receive's peer and size come from its status). Nothing of this happens while no request is
 * tracked. */

#define SMALL 64

struct saved {
	MPI_Request r[SMALL], *req;
	MPI_Status s[SMALL], *st;
	int n;
};

static int save(struct saved *v, int n, const MPI_Request reqs[], MPI_Status *user_st)
{
	v->n = n;
	v->req = n <= SMALL ? v->r : malloc((size_t)n * sizeof *v->req);
	if (!v->req)
		return 0;
	memcpy(v->req, reqs, (size_t)n * sizeof *v->req);
	v->st = user_st;
	if (user_st == MPI_STATUSES_IGNORE) {
		v->st = n <= SMALL ? v->s : malloc((size_t)n * sizeof *v->st);
		if (!v->st) {
			if (v->req != v->r)
				free(v->req);
			return 0;
		}
	}
	return 1;
}

static void release(struct saved *v, MPI_Status *user_st)
{
	if (v->req != v->r)
		free(v->req);
	if (user_st == MPI_STATUSES_IGNORE && v->st != v->s)
		free(v->st);
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
	if (!ip_req_pending())
		return PMPI_Wait(req, status);
	/* MPI_Wait completes its request: take it out of the table first (one lookup, not two) */
	struct pending p;
	int mine_req = *req != MPI_REQUEST_NULL && take(*req, &p);
	MPI_Status mine;
	MPI_Status *st = status == MPI_STATUS_IGNORE ? &mine : status;
	struct prof_tok w = { 0 };
	if (mine_req && p.lane)
		w = prof_wait_begin(p.tok.name, p.tok.comm_id, p.tok.seq, p.tok.amount);
	int rc = PMPI_Wait(req, st);
	prof_range_end(&w);
	if (mine_req)   /* a failed wait leaves the status undefined: no peer or size from it */
		finish(&p, rc == MPI_SUCCESS ? st : NULL);
	return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
	if (!ip_req_pending())
		return PMPI_Test(req, flag, status);
	MPI_Request r = *req;
	MPI_Status mine;
	MPI_Status *st = status == MPI_STATUS_IGNORE ? &mine : status;
	int rc = PMPI_Test(req, flag, st);
	if (rc == MPI_SUCCESS && *flag)   /* flag and status are undefined after an error */
		ip_req_done(r, st);
	return rc;
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
	struct saved v;
	if (!ip_req_pending() || n <= 0 || !save(&v, n, reqs, sts))
		return PMPI_Waitall(n, reqs, sts);
	struct prof_tok w = ip_wait_begin(v.req, n);
	int rc = PMPI_Waitall(n, reqs, v.st);
	prof_range_end(&w);
	for (int i = 0; i < n; i++)
		ip_req_done(v.req[i], &v.st[i]);
	release(&v, sts);
	return rc;
}

int MPI_Testall(int n, MPI_Request reqs[], int *flag, MPI_Status sts[])
{
	struct saved v;
	if (!ip_req_pending() || n <= 0 || !save(&v, n, reqs, sts))
		return PMPI_Testall(n, reqs, flag, sts);
	int rc = PMPI_Testall(n, reqs, flag, v.st);
	if (*flag)
		for (int i = 0; i < n; i++)
			ip_req_done(v.req[i], &v.st[i]);
	release(&v, sts);
	return rc;
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *status)
{
	struct saved v;
	if (!ip_req_pending() || n <= 0 || !save(&v, n, reqs, MPI_STATUSES_IGNORE))
		return PMPI_Waitany(n, reqs, index, status);
	MPI_Status *st = status == MPI_STATUS_IGNORE ? &v.st[0] : status;
	struct prof_tok w = ip_wait_begin(v.req, n);
	int rc = PMPI_Waitany(n, reqs, index, st);
	prof_range_end(&w);
	if (*index != MPI_UNDEFINED && *index >= 0 && *index < n)
		ip_req_done(v.req[*index], st);
	release(&v, MPI_STATUSES_IGNORE);
	return rc;
}

int MPI_Testany(int n, MPI_Request reqs[], int *index, int *flag, MPI_Status *status)
{
	struct saved v;
	if (!ip_req_pending() || n <= 0 || !save(&v, n, reqs, MPI_STATUSES_IGNORE))
		return PMPI_Testany(n, reqs, index, flag, status);
	MPI_Status *st = status == MPI_STATUS_IGNORE ? &v.st[0] : status;
	int rc = PMPI_Testany(n, reqs, index, flag, st);
	if (*flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n)
		ip_req_done(v.req[*index], st);
	release(&v, MPI_STATUSES_IGNORE);
	return rc;
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
	struct saved v;
	if (!ip_req_pending() || n <= 0 || !save(&v, n, reqs, sts))
		return PMPI_Waitsome(n, reqs, outcount, indices, sts);
	struct prof_tok w = ip_wait_begin(v.req, n);
	int rc = PMPI_Waitsome(n, reqs, outcount, indices, v.st);
	prof_range_end(&w);
	for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; k++)
		if (indices[k] >= 0 && indices[k] < n)
			ip_req_done(v.req[indices[k]], &v.st[k]);
	release(&v, sts);
	return rc;
}

int MPI_Testsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
	struct saved v;
	if (!ip_req_pending() || n <= 0 || !save(&v, n, reqs, sts))
		return PMPI_Testsome(n, reqs, outcount, indices, sts);
	int rc = PMPI_Testsome(n, reqs, outcount, indices, v.st);
	for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; k++)
		if (indices[k] >= 0 && indices[k] < n)
			ip_req_done(v.req[indices[k]], &v.st[k]);
	release(&v, sts);
	return rc;
}

int MPI_Request_free(MPI_Request *req)
{
	if (ip_req_pending() && req)
		ip_req_drop(*req);
	return PMPI_Request_free(req);
}
