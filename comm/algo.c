/* comm/algo.c — which algorithm MPI runs for a collective, when that is known. ascent's collectives
 * are MPI's (exec_collective in ops.c: MPI_Allreduce, MPI_Allgather, ...), and Open MPI's `tuned`
 * component picks an algorithm per call by its own rules (message size, communicator size) unless
 * its dynamic rules lock one: `coll_tuned_use_dynamic_rules` true and `coll_tuned_allreduce_algorithm`
 * 4 (ring) or 5 (segmented ring), `coll_tuned_allgather_algorithm` 4 (ring) — set as MCA parameters
 * (`mpirun --mca ...`, `-x OMPI_MCA_...`, a params file). comm_algo_read asks MPI for those control
 * variables once after MPI_Init (the MPI tool interface, MPI_T: the values in effect, wherever they
 * were set); comm_algo_of then names "ring" for a call those locks decide, NULL for every other
 * (another MPI, no lock, another operation, or a call Open MPI's ring hands to another algorithm:
 * an allreduce of fewer elements than members). The profiler records the name on the call's event
 * ({"algo": "ring"}); `report --by matrix` puts such calls on the links to the ring neighbours. */
#include "comm/impl.h"

#include <string.h>

/* The value of MPI control variable `name` as an integer (an int, or a bool: Open MPI's are one
 * byte); 0 when MPI has none, or not as one such value. */
static int cvar_int(const char *name, int *out)
{
	int idx, count, size = 0;
	MPI_T_cvar_handle h;
	char nm[128], desc[8];
	int nlen = (int)sizeof nm, dlen = (int)sizeof desc, verbosity, bind, scope;
	MPI_Datatype dt;
	MPI_T_enum en;
	if (MPI_T_cvar_get_index(name, &idx) != MPI_SUCCESS)
		return 0;
	if (MPI_T_cvar_get_info(idx, nm, &nlen, &verbosity, &dt, &en, desc, &dlen, &bind, &scope) != MPI_SUCCESS ||
	    bind != MPI_T_BIND_NO_OBJECT || (dt != MPI_INT && dt != MPI_C_BOOL) ||
	    MPI_Type_size(dt, &size) != MPI_SUCCESS || (size != 1 && size != (int)sizeof(int)))
		return 0;
	if (MPI_T_cvar_handle_alloc(idx, NULL, &h, &count) != MPI_SUCCESS)
		return 0;
	union { int i; unsigned char b; char pad[16]; } v;
	memset(&v, 0, sizeof v);
	int ok = count == 1 && MPI_T_cvar_read(h, &v) == MPI_SUCCESS;
	MPI_T_cvar_handle_free(&h);
	if (ok)
		*out = size == 1 ? v.b : v.i;
	return ok;
}

void comm_algo_read(struct comm *c)
{
	c->ring_allreduce = c->ring_allgather = 0;
	int provided, dyn = 0, ar = 0, ag = 0;
	if (!c->use_mpi || MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
		return;
	if (cvar_int("coll_tuned_use_dynamic_rules", &dyn) && dyn) {
		if (cvar_int("coll_tuned_allreduce_algorithm", &ar))
			c->ring_allreduce = ar == 4 || ar == 5;
		if (cvar_int("coll_tuned_allgather_algorithm", &ag))
			c->ring_allgather = ag == 4;
	}
	MPI_T_finalize();
}

const char *comm_algo_of(const struct comm *c, const struct comm_req *r)
{
	const struct comm_group *g = &c->g[r->kind];
	if (!c->use_mpi || g->size < 2)
		return NULL;
	if (r->op == OP_ALLREDUCE && c->ring_allreduce && r->count >= (size_t)g->size)
		return "ring";
	if (r->op == OP_ALLGATHER && c->ring_allgather)
		return "ring";
	return NULL;
}
