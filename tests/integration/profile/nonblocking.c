/* tests/integration/profile/nonblocking.c — a C MPI program (not ascent's) for profile_mpi.sh:
 * non-blocking collectives completed by MPI_Waitall and by an MPI_Testany loop, a ring of
 * MPI_Isend/MPI_Irecv(MPI_ANY_SOURCE) with a receive buffer larger than the message (the profile
 * must take the size and the peer from the status), completed by MPI_Waitall with statuses. It
 * prints "tally NAME CALLS BYTES" per operation for the test to compare, and exits with 3. */
#include <mpi.h>
#include <stdio.h>

static struct { const char *name; long calls, bytes; } tally[] = {
	{ "iallreduce", 0, 0 }, { "ibcast", 0, 0 }, { "iallgather", 0, 0 }, { "ibarrier", 0, 0 },
	{ "isend", 0, 0 }, { "irecv", 0, 0 },
};

static void did(int i, long bytes)
{
	tally[i].calls++;
	tally[i].bytes += bytes;
}

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r, n;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	double a[256], b[256 * 8];
	for (int i = 0; i < 256; i++)
		a[i] = r + i;
	for (int it = 0; it < 5; it++) {
		MPI_Request q[2];
		MPI_Iallreduce(a, b, 256, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &q[0]);
		did(0, 256 * 8);
		MPI_Ibcast(a, 16, MPI_DOUBLE, 0, MPI_COMM_WORLD, &q[1]);
		did(1, 16 * 8);
		MPI_Waitall(2, q, MPI_STATUSES_IGNORE);
	}
	for (int it = 0; it < 3; it++) {
		MPI_Request q[2];
		MPI_Iallgather(a, 4, MPI_DOUBLE, b, 4, MPI_DOUBLE, MPI_COMM_WORLD, &q[0]);
		did(2, 4L * 8 * n);
		MPI_Ibarrier(MPI_COMM_WORLD, &q[1]);
		did(3, 0);
		for (int done = 0; done < 2;) {
			int idx, flag = 0;
			MPI_Testany(2, q, &idx, &flag, MPI_STATUS_IGNORE);
			if (flag && idx != MPI_UNDEFINED)
				done++;
		}
	}
	int out[64], in[100];
	int mine = 10 + r, right = (r + 1) % n;
	for (int i = 0; i < mine; i++)
		out[i] = r;
	MPI_Request q[2];
	MPI_Status st[2];
	MPI_Irecv(in, 100, MPI_INT, MPI_ANY_SOURCE, 5, MPI_COMM_WORLD, &q[0]);
	MPI_Isend(out, mine, MPI_INT, right, 5, MPI_COMM_WORLD, &q[1]);
	MPI_Waitall(2, q, st);
	int got = 0;
	MPI_Get_count(&st[0], MPI_INT, &got);
	did(4, (long)mine * 4);
	did(5, (long)got * 4);
	for (size_t i = 0; i < sizeof tally / sizeof tally[0]; i++)
		printf("tally %s %ld %ld\n", tally[i].name, tally[i].calls, tally[i].bytes);
	MPI_Finalize();
	return 3;
}
