/* interpose/comm.c — the communicators this rank belongs to: a table from MPI_Comm to its
 * job-unique id and counters (lock-free lookups on the hot path, inserts and removals under a
 * lock), the id agreement at creation, and the wrappers of the creating and freeing calls. */
#include "interpose/impl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NSLOTS 4096   /* power of two; a program with more live communicators leaves the rest untracked */

enum { SLOT_EMPTY = 0, SLOT_USED, SLOT_GONE };

static struct {
	int state;                 /* acquire/release: a reader sees `c` complete once it sees USED */
	MPI_Comm key;
	struct ip_comm *c;
} slots[NSLOTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int warned_full;

static size_t slot_of(MPI_Comm mc)
{
	return (size_t)(((uintptr_t)mc * 0x9E3779B97F4A7C15ULL) >> 40) & (NSLOTS - 1);
}

struct ip_comm *ip_comm_find(MPI_Comm mc)
{
	size_t i = slot_of(mc);
	for (size_t n = 0; n < NSLOTS; n++, i = (i + 1) & (NSLOTS - 1)) {
		int st = __atomic_load_n(&slots[i].state, __ATOMIC_ACQUIRE);
		if (st == SLOT_EMPTY)
			return NULL;
		if (st == SLOT_USED && slots[i].key == mc)
			return slots[i].c;
	}
	return NULL;
}

static void comm_free(struct ip_comm *c)
{
	if (!c)
		return;
	free(c->send_seq);
	free(c->recv_seq);
	free(c->xchg_seq);
	free(c);
}

void ip_comm_add(MPI_Comm mc, int32_t id, const char *name)
{
	int size = 0, rank = 0;
	if (PMPI_Comm_size(mc, &size) != MPI_SUCCESS || PMPI_Comm_rank(mc, &rank) != MPI_SUCCESS || size < 1)
		return;
	struct ip_comm *c = calloc(1, sizeof *c);
	if (!c)
		return;
	c->mc = mc;
	c->id = id;
	c->size = size;
	c->rank = rank;
	c->send_seq = calloc((size_t)size, sizeof *c->send_seq);
	c->recv_seq = calloc((size_t)size, sizeof *c->recv_seq);
	c->xchg_seq = calloc((size_t)size, sizeof *c->xchg_seq);
	c->name = prof_intern(name);
	static int nlanes;
	char lane[80];
	snprintf(lane, sizeof lane, "comm %s", __atomic_fetch_add(&nlanes, 1, __ATOMIC_RELAXED) < IP_LANES ? name : "other");
	c->lane = prof_intern(lane);
	if (!c->send_seq || !c->recv_seq || !c->xchg_seq) {
		comm_free(c);
		return;
	}
	pthread_mutex_lock(&lock);
	size_t i = slot_of(mc), n;
	for (n = 0; n < NSLOTS; n++, i = (i + 1) & (NSLOTS - 1))
		if (slots[i].state != SLOT_USED)
			break;
	if (n == NSLOTS) {
		pthread_mutex_unlock(&lock);
		if (!warned_full++)
			log_warn("ascent profile: more than %d live communicators; the others are recorded without id",
				 NSLOTS);
		comm_free(c);
		return;
	}
	slots[i].key = mc;
	slots[i].c = c;
	__atomic_store_n(&slots[i].state, SLOT_USED, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	if (id >= 0)
		prof_comm_register(id, c->name, size, rank);
}

const char *ip_comm_lane(MPI_Comm mc)
{
	struct ip_comm *c = ip_comm_find(mc);
	return c ? c->lane : "comm other";
}

void ip_comm_forget(MPI_Comm mc)
{
	struct ip_comm *gone = NULL;
	pthread_mutex_lock(&lock);
	size_t i = slot_of(mc);
	for (size_t n = 0; n < NSLOTS; n++, i = (i + 1) & (NSLOTS - 1)) {
		if (slots[i].state == SLOT_EMPTY)
			break;
		if (slots[i].state == SLOT_USED && slots[i].key == mc) {
			gone = slots[i].c;
			__atomic_store_n(&slots[i].state, SLOT_GONE, __ATOMIC_RELEASE);
			/* a run of tombstones that ends a chain is empty again: without this, a program that
			 * creates and frees communicators all run long leaves no EMPTY slot, and every lookup
			 * of an untracked communicator (its MPI calls' hot path) would probe all NSLOTS */
			for (size_t j = i; slots[(j + 1) & (NSLOTS - 1)].state == SLOT_EMPTY &&
					   slots[j].state == SLOT_GONE;
			     j = (j - 1) & (NSLOTS - 1))
				__atomic_store_n(&slots[j].state, SLOT_EMPTY, __ATOMIC_RELEASE);
			break;
		}
	}
	pthread_mutex_unlock(&lock);
	/* MPI forbids using a communicator while it is freed, so no reader holds `gone` now */
	comm_free(gone);
}

/* The members agree on (max of their creation counters, min of their world ranks): the id
 * 0x40000000 + counter·world_size + min_rank is the same on every member and differs between
 * communicators: two with the same lowest member were both created by that rank, whose counter
 * moved past the first one's before it proposed for the second. */
void ip_comm_created(MPI_Comm mc, const char *how)
{
	if (!ip.active || mc == MPI_COMM_NULL)
		return;
	int inter = 0;
	if (PMPI_Comm_test_inter(mc, &inter) != MPI_SUCCESS || inter)
		return;
	int64_t v[2] = { __atomic_load_n(&ip.comm_counter, __ATOMIC_RELAXED), -(int64_t)ip.rank };
	if (PMPI_Allreduce(MPI_IN_PLACE, v, 2, MPI_INT64_T, MPI_MAX, mc) != MPI_SUCCESS)
		return;
	int64_t counter = v[0], low = -v[1];
	int64_t next = counter + 1, cur = __atomic_load_n(&ip.comm_counter, __ATOMIC_RELAXED);
	while (cur < next && !__atomic_compare_exchange_n(&ip.comm_counter, &cur, next, 0, __ATOMIC_RELAXED,
							 __ATOMIC_RELAXED))
		;
	int64_t id = 0x40000000LL + counter * (int64_t)(ip.size > 0 ? ip.size : 1) + low;
	char name[64];
	snprintf(name, sizeof name, "%s#%lld", how, (long long)counter);
	ip_comm_add(mc, id <= INT32_MAX ? (int32_t)id : -1, name);
}

/* ---------------------------------------------------------------------------------------- */

int MPI_Comm_split(MPI_Comm comm, int color, int key, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_split(comm, color, key, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "split");
	return rc;
}

int MPI_Comm_split_type(MPI_Comm comm, int split_type, int key, MPI_Info info, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_split_type(comm, split_type, key, info, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "split_type");
	return rc;
}

int MPI_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_dup(comm, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "dup");
	return rc;
}

int MPI_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "dup");
	return rc;
}

int MPI_Comm_create(MPI_Comm comm, MPI_Group group, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_create(comm, group, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "create");
	return rc;
}

int MPI_Comm_create_group(MPI_Comm comm, MPI_Group group, int tag, MPI_Comm *newcomm)
{
	int rc = PMPI_Comm_create_group(comm, group, tag, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "create_group");
	return rc;
}

int MPI_Cart_create(MPI_Comm comm, int ndims, const int dims[], const int periods[], int reorder, MPI_Comm *newcomm)
{
	int rc = PMPI_Cart_create(comm, ndims, dims, periods, reorder, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "cart");
	return rc;
}

int MPI_Cart_sub(MPI_Comm comm, const int remain_dims[], MPI_Comm *newcomm)
{
	int rc = PMPI_Cart_sub(comm, remain_dims, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "cart_sub");
	return rc;
}

int MPI_Graph_create(MPI_Comm comm, int nnodes, const int index[], const int edges[], int reorder,
		     MPI_Comm *newcomm)
{
	int rc = PMPI_Graph_create(comm, nnodes, index, edges, reorder, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "graph");
	return rc;
}

int MPI_Dist_graph_create(MPI_Comm comm, int n, const int sources[], const int degrees[], const int destinations[],
			  const int weights[], MPI_Info info, int reorder, MPI_Comm *newcomm)
{
	int rc = PMPI_Dist_graph_create(comm, n, sources, degrees, destinations, weights, info, reorder, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "dist_graph");
	return rc;
}

int MPI_Dist_graph_create_adjacent(MPI_Comm comm, int indegree, const int sources[], const int sourceweights[],
				   int outdegree, const int destinations[], const int destweights[], MPI_Info info,
				   int reorder, MPI_Comm *newcomm)
{
	int rc = PMPI_Dist_graph_create_adjacent(comm, indegree, sources, sourceweights, outdegree, destinations,
						 destweights, info, reorder, newcomm);
	if (rc == MPI_SUCCESS)
		ip_comm_created(*newcomm, "dist_graph");
	return rc;
}

int MPI_Comm_free(MPI_Comm *comm)
{
	if (ip.mpi_up && comm)
		ip_comm_forget(*comm);
	return PMPI_Comm_free(comm);
}
