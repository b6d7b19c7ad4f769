/* interpose/interpose.h — the contract between `ascent profile` (cli/cmd_profile.c) and the
 * library it preloads, build/libascent-preload.so (installed as PREFIX/lib/ascent/).
 *
 * What the library does
 *   Loaded with LD_PRELOAD into the command `ascent profile -- CMD` runs, it starts the profiler
 *   (profiler/prof.h) in a constructor, before CMD's main, and records every MPI call of interest
 *   through MPI's profiling interface: it defines MPI_Allreduce, MPI_Isend, MPI_Wait, ... which
 *   record and call PMPI_Allreduce, ... in libmpi.
 *     - collectives (blocking ones on the calling thread; non-blocking ones from the post to the
 *       MPI_Wait.../MPI_Test... that saw them complete, on the communicator's lane "comm NAME" as comm/
 *       records the trainer's, with the time an MPI_Wait... blocked on them as a wait event of the
 *       thread), named as MPI names them, lower case without the prefix: "allreduce",
 *       "iallreduce", "bcast", "reduce_scatter_block", ...; bytes as nccl-tests counts S (the
 *       full array for allgather, reduce_scatter and alltoall); root for rooted ones; a sequence
 *       number per communicator (equal on every member), so calls match across ranks;
 *     - point to point: "send", "ssend", "bsend", "rsend", "isend", "issend", "recv", "irecv"
 *       (peer and bytes of a receive from its status), "sendrecv" and "sendrecv_replace" (one
 *       event per call: peer = dest, bytes sent; matched with the partner's exchange);
 *     - MPI_Init / MPI_Init_thread / MPI_Finalize as ranges; the rank's host, and rank 0's clock
 *       offset with its error bar measured by a ping-pong at MPI_Init and again at MPI_Finalize
 *       (on a private duplicate of MPI_COMM_WORLD, not recorded);
 *     - communicators: MPI_COMM_WORLD is "world" (id 0), MPI_COMM_SELF "self"; each communicator
 *       made by MPI_Comm_split, _split_type, _dup, _dup_with_info, _create,
 *       _create_group, MPI_Cart_create, MPI_Cart_sub, MPI_Graph_create, MPI_Dist_graph_create(_adjacent) gets a
 *       job-unique id agreed by its members (one extra PMPI_Allreduce of two integers on the new
 *       communicator, at creation) and a name "split#N", "dup#N", ... (N the agreed counter); its
 *       size and this rank's place in it go to the comm table, so the report lists each group's
 *       members. Intercommunicators are not tracked (their calls are recorded without id).
 *     - MPI_Abort: recorded with an "error" note, then the rank's profile is closed before the job
 *       is killed;
 *     - exec (execve, execv, execvp, execvpe, execl, execlp, execle, fexecve; exec.c): the
 *       sampler's timer deleted and the profile committed first; the new image resumes the file.
 *   A program that never calls MPI still gets one rank's profile (its samples). Without MPI_Init
 *   the profile is closed at exit. Everything after MPI_Finalize is not recorded.
 *   Not recorded: persistent requests (MPI_*_init, MPI_Start), MPI_Alltoallw, neighbourhood
 *   collectives, one-sided (RMA) and I/O calls, probes; Fortran's mpif.h/mpi module bindings of
 *   Open MPI call PMPI_* directly, so Fortran programs' MPI calls are not seen (C and anything
 *   calling the C API, such as mpi4py, are).
 *
 * How its MPI_* come before libmpi's
 *   LD_PRELOAD puts the library in the global symbol scope right after the executable, and its
 *   own dependency libmpi.so after it; every later lookup of MPI_Allreduce — from the executable,
 *   from libraries it links, and from objects dlopen'ed later with RTLD_LOCAL such as mpi4py's
 *   MPI.*.so (local scope is searched after the global one) — finds the wrapper first, and the
 *   wrapper's PMPI_Allreduce binds to libmpi. The library exports nothing but MPI_* and the exec family (its copy of
 *   the profiler is hidden), so it cannot clash with a program that links libascent.
 *
 * The environment (set by `ascent profile`; the names below)
 *   ASCENT_PROFILE_DIR     absolute folder for rank-NNNNN.db (required: unset, the library is inert)
 *   ASCENT_PROFILE_PID     the pid of the process to profile: `ascent profile` forks, the child
 *                          sets it to its own pid and execs CMD (exec keeps the pid). Processes
 *                          CMD starts inherit LD_PRELOAD but have another pid: the library stays
 *                          inert in them (their MPI calls go straight to PMPI), so a shell or a
 *                          helper CMD runs cannot overwrite the profile. A process CMD forks
 *                          without exec stops recording in the child.
 *   ASCENT_PROFILE_SAMPLE  SIGPROF samples per second of CPU time (0 or unset: no sampling)
 *   ASCENT_PROFILE_STACKS  1: a call stack at each recorded MPI call
 *   ASCENT_PROFILE         0: the library is inert (and `ascent profile` does not preload it)
 *   The rank comes from the launcher, before MPI_Init (see launcher_rank below); without a
 *   launcher the process is rank 0 of 1.
 */
#ifndef ASCENT_INTERPOSE_H
#define ASCENT_INTERPOSE_H

#include <stdlib.h>

#define INTERPOSE_ENV_DIR "ASCENT_PROFILE_DIR"
#define INTERPOSE_ENV_PID "ASCENT_PROFILE_PID"
#define INTERPOSE_ENV_SAMPLE "ASCENT_PROFILE_SAMPLE"
#define INTERPOSE_ENV_STACKS "ASCENT_PROFILE_STACKS"
#define INTERPOSE_ENV_SWITCH "ASCENT_PROFILE"
#define INTERPOSE_LIB_NAME "libascent-preload.so"

/* This process's rank and world size as its launcher announced them in the environment: Open MPI's
 * mpirun (OMPI_COMM_WORLD_RANK/SIZE), PMIx (PMIX_RANK with OMPI_COMM_WORLD_SIZE or
 * SLURM_NTASKS), Slurm's srun (SLURM_PROCID/SLURM_NTASKS), MPICH's Hydra and Intel MPI
 * (PMI_RANK/PMI_SIZE). Returns 1 when found, else 0 with rank 0 of 1. Shared by `ascent profile`
 * (which rank merges) and the library (which file it writes) so both read the same variables. */
static inline int interpose_launcher_rank(int *rank, int *size)
{
	static const char *const R[][2] = { { "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE" },
					    { "PMIX_RANK", "OMPI_COMM_WORLD_SIZE" },
					    { "SLURM_PROCID", "SLURM_NTASKS" },
					    { "PMI_RANK", "PMI_SIZE" },
					    { "PMIX_RANK", "SLURM_NTASKS" } };
	for (size_t i = 0; i < sizeof R / sizeof R[0]; i++) {
		const char *r = getenv(R[i][0]), *s = getenv(R[i][1]);
		if (r && *r && s && *s) {
			long rv = strtol(r, NULL, 10), sv = strtol(s, NULL, 10);
			if (rv >= 0 && sv > rv) {
				*rank = (int)rv;
				*size = (int)sv;
				return 1;
			}
		}
	}
	*rank = 0;
	*size = 1;
	return 0;
}

#endif
