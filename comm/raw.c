/* comm/raw.c — an untraced baseline for benchmarks: one plain blocking MPI_Allreduce on a group's
 * communicator, with no flight-recorder entry, no profiler hook, no fault injection and no
 * watchdog. `ascent diag comm --raw` times it next to comm_allreduce, so the cost of the traced
 * path is measured in the same run. Never use it in training code. */
#include "comm/impl.h"

#include <string.h>

int comm_raw_allreduce(struct comm *c, enum comm_kind k, const void *send, void *recv, size_t count,
		       enum comm_dtype t, enum comm_op op)
{
	if (!c || (unsigned)k >= COMM_NKINDS || (unsigned)t >= COMM_NDTYPES || t == COMM_BYTE || op == COMM_AVG ||
	    (unsigned)op >= COMM_NOPS)
		return ascent_error(ASCENT_EINTERNAL, "comm_raw_allreduce: bad arguments");
	if (count > 0x7fffffff)
		return ascent_error(ASCENT_EINPUT, "comm_raw_allreduce: %zu elements is more than MPI's limit", count);
	if (!c->use_mpi) {
		if (send && send != recv)
			memmove(recv, send, count * comm_dtype_size(t));
		return 0;
	}
	MPI_Op mop = op == COMM_MAX ? MPI_MAX : op == COMM_MIN ? MPI_MIN : MPI_SUM;
	const void *sb = (!send || send == recv) ? MPI_IN_PLACE : send;
	int mrc = MPI_Allreduce(sb, recv, (int)count, comm_mpi_dtype(t), mop, c->g[k].mc);
	return mrc == MPI_SUCCESS ? 0 : comm_mpi_err(mrc, "MPI_Allreduce", c, k);
}
