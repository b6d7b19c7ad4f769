/* comm/clock.c — clock alignment for the profiler: each rank measures the offset of rank 0's
 * CLOCK_MONOTONIC to its own with a ping-pong (the exchange with the smallest round trip wins; the
 * error bound is half of it). Runs on a private duplicate of the world communicator. */
#include "comm/impl.h"

#define NPINGS 16
#define TAG_PING 1
#define TAG_PONG 2

int comm_clock_offset(struct comm *c, int64_t *offset_ns, int64_t *err_ns)
{
	*offset_ns = 0;
	*err_ns = 0;
	if (!c->use_mpi || c->world_size == 1)
		return 0;
	MPI_Comm mc = c->clock_comm;
	int mrc;
	if (c->world_rank == 0) {
		for (int r = 1; r < c->world_size; r++) {
			for (int i = 0; i < NPINGS; i++) {
				int64_t dummy, now;
				if ((mrc = MPI_Recv(&dummy, 1, MPI_INT64_T, r, TAG_PING, mc, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
					return comm_mpi_err(mrc, "MPI_Recv (clock ping)", c, COMM_WORLD);
				now = clock_ns();
				if ((mrc = MPI_Send(&now, 1, MPI_INT64_T, r, TAG_PONG, mc)) != MPI_SUCCESS)
					return comm_mpi_err(mrc, "MPI_Send (clock pong)", c, COMM_WORLD);
			}
		}
		return 0;
	}
	int64_t best_rtt = INT64_MAX, best_off = 0;
	for (int i = 0; i < NPINGS; i++) {
		int64_t t0 = clock_ns(), remote = 0;
		if ((mrc = MPI_Send(&t0, 1, MPI_INT64_T, 0, TAG_PING, mc)) != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Send (clock ping)", c, COMM_WORLD);
		if ((mrc = MPI_Recv(&remote, 1, MPI_INT64_T, 0, TAG_PONG, mc, MPI_STATUS_IGNORE)) != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Recv (clock pong)", c, COMM_WORLD);
		int64_t t1 = clock_ns();
		if (t1 - t0 < best_rtt) {
			best_rtt = t1 - t0;
			best_off = remote - (t0 + (t1 - t0) / 2);
		}
	}
	*offset_ns = best_off;
	*err_ns = (best_rtt + 1) / 2;
	return 0;
}

int comm_prof_clock(void *arg, struct prof_clock_sync *out)
{
	return comm_clock_offset((struct comm *)arg, &out->offset_ns, &out->err_ns);
}
