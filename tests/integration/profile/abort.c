/* tests/integration/profile/abort.c — a C MPI program that calls MPI_Abort(7) on rank 1 after four
 * allreduces (profile_mpi.sh): the job ends with 7 and rank 1's profile says so. */
#include <mpi.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	MPI_Init(&argc, &argv);
	int r;
	MPI_Comm_rank(MPI_COMM_WORLD, &r);
	double x = r, y;
	for (int i = 0; i < 4; i++)
		MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	if (r == 1)
		MPI_Abort(MPI_COMM_WORLD, 7);
	sleep(60);   /* rank 0 is killed by the launcher long before */
	MPI_Finalize();
	return 0;
}
