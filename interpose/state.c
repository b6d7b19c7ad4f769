/* interpose/state.c — the preloaded process: start the profiler in a constructor (before main),
 * close it at MPI_Finalize or at exit, stop recording in forked children; MPI_Init, MPI_Finalize
 * and MPI_Abort; the clock ping-pong against rank 0. */
#include "interpose/impl.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ip_state ip = { .clock_comm = MPI_COMM_NULL, .comm_counter = 1 };

static int env_int(const char *name, int lo, int hi, int dflt)
{
	const char *s = getenv(name);
	if (!s || !*s)
		return dflt;
	char *end = NULL;
	long v = strtol(s, &end, 10);
	if (*end || v < lo || v > hi) {
		log_warn("ascent profile: ignoring %s='%s' (expected an integer in [%d, %d])", name, s, lo, hi);
		return dflt;
	}
	return (int)v;
}

/* /proc/self/cmdline with NULs made spaces, for the run table. */
static char *read_cmdline(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t k;
	while (buf && (k = read(fd, buf + n, cap - n)) > 0) {
		n += (size_t)k;
		if (n == cap) {
			char *b2 = realloc(buf, cap * 2 + 1);
			if (!b2)
				break;
			buf = b2;
			cap *= 2;
		}
	}
	close(fd);
	if (!buf)
		return NULL;
	while (n > 0 && buf[n - 1] == 0)
		n--;
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = 0;
	return buf;
}

static void after_fork_child(void)
{
	/* the child shares the parent's file and writer state: it must never write it */
	ip.active = 0;
	__atomic_store_n(&prof_g.on, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void ip_start(void)
{
	const char *dir = getenv(INTERPOSE_ENV_DIR), *pid = getenv(INTERPOSE_ENV_PID);
	const char *sw = getenv(INTERPOSE_ENV_SWITCH);
	if (!dir || !*dir || !pid || strtol(pid, NULL, 10) != (long)getpid())
		return;   /* not the process `ascent profile` started (a child of it, or preloaded by hand) */
	if (sw && !strcmp(sw, "0"))
		return;
	interpose_launcher_rank(&ip.rank, &ip.size);
	ip.pid = (int)getpid();
	char path[4096];
	prof_rank_db_path(dir, ip.rank, path, sizeof path);
	char *cmdline = read_cmdline();
	struct prof_options po = {
		.db_path = path, .rank = ip.rank, .world_size = ip.size, .dp_rank = -1, .tp_rank = -1, .pp_rank = -1,
		.stacks = env_int(INTERPOSE_ENV_STACKS, 0, 1, 0), .sample_hz = env_int(INTERPOSE_ENV_SAMPLE, 0, 100000, 0),
		.command_line = cmdline,
		.resume = 1,   /* after an exec (same pid): the image before it wrote this file (exec.c) */
	};
	/* active even if the profiler cannot start here: the clock ping-pongs and communicator ids
	 * are collectives every rank must take part in */
	ip.active = 1;
	pthread_atfork(NULL, NULL, after_fork_child);
	int rc = prof_init(&po);
	free(cmdline);
	if (rc)
		log_warn("ascent profile: rank %d is not profiled: %s", ip.rank, ascent_errmsg());
}

__attribute__((destructor)) static void ip_stop(void)
{
	/* a program that never called MPI (or exited without MPI_Finalize) ends here */
	if (ip.pid == (int)getpid() && prof_initialized() && prof_shutdown())
		log_warn("ascent profile: %s", ascent_errmsg());
}

/* ---------------------------------------------------------------------------------------- */
/* Clock alignment: rank 0 answers NPINGS ping-pongs from each rank in turn; each rank keeps the
 * exchange with the smallest round trip (comm/clock.c does the same for the trainer over its own
 * struct comm; this one must call PMPI directly, below comm/, so that it is not recorded). */

#define NPINGS 16

static int clock_measure(struct prof_clock_sync *out)
{
	out->offset_ns = out->err_ns = 0;
	MPI_Comm mc = ip.clock_comm;
	int size = 1, rank = 0;
	if (mc == MPI_COMM_NULL || PMPI_Comm_size(mc, &size) != MPI_SUCCESS || size == 1 ||
	    PMPI_Comm_rank(mc, &rank) != MPI_SUCCESS)
		return 0;
	if (rank == 0) {
		for (int r = 1; r < size; r++)
			for (int i = 0; i < NPINGS; i++) {
				int64_t dummy, now;
				if (PMPI_Recv(&dummy, 1, MPI_INT64_T, r, 1, mc, MPI_STATUS_IGNORE) != MPI_SUCCESS)
					return ascent_error(ASCENT_EMPI, "clock ping from rank %d failed", r);
				now = clock_ns();
				if (PMPI_Send(&now, 1, MPI_INT64_T, r, 2, mc) != MPI_SUCCESS)
					return ascent_error(ASCENT_EMPI, "clock pong to rank %d failed", r);
			}
		return 0;
	}
	int64_t best_rtt = INT64_MAX, best_off = 0;
	for (int i = 0; i < NPINGS; i++) {
		int64_t t0 = clock_ns(), remote = 0;
		if (PMPI_Send(&t0, 1, MPI_INT64_T, 0, 1, mc) != MPI_SUCCESS ||
		    PMPI_Recv(&remote, 1, MPI_INT64_T, 0, 2, mc, MPI_STATUS_IGNORE) != MPI_SUCCESS)
			return ascent_error(ASCENT_EMPI, "clock ping-pong with rank 0 failed");
		int64_t t1 = clock_ns();
		if (t1 - t0 < best_rtt) {
			best_rtt = t1 - t0;
			best_off = remote - (t0 + (t1 - t0) / 2);
		}
	}
	out->offset_ns = best_off;
	out->err_ns = (best_rtt + 1) / 2;
	return 0;
}

/* The profiler's clock function: the latest measurement (taken by us at MPI_Init/MPI_Finalize, at
 * points every rank reaches, never from inside the profiler). */
static int clock_latest(void *arg, struct prof_clock_sync *out)
{
	(void)arg;
	*out = ip.sync;
	return 0;
}

void ip_mpi_started(void)
{
	int rank = 0, size = 1;
	PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
	PMPI_Comm_size(MPI_COMM_WORLD, &size);
	if (rank != ip.rank || size != ip.size)
		log_warn("ascent profile: MPI says rank %d of %d but the launcher's environment said %d of %d "
			 "(this profile is written as rank %d; run under mpirun or srun)", rank, size, ip.rank, ip.size,
			 ip.rank);
	ip.mpi_up = 1;
	ip_comm_add(MPI_COMM_WORLD, 0, "world");
	/* SELF: counter 0 is never agreed (counters start at 1), so this id is this rank's alone */
	ip_comm_add(MPI_COMM_SELF, 0x40000000 + ip.rank, "self");
	if (PMPI_Comm_dup(MPI_COMM_WORLD, &ip.clock_comm) != MPI_SUCCESS)
		ip.clock_comm = MPI_COMM_NULL;
	else
		PMPI_Comm_set_errhandler(ip.clock_comm, MPI_ERRORS_RETURN);
	if (clock_measure(&ip.sync))
		log_warn("ascent profile: clock alignment at MPI_Init failed: %s", ascent_errmsg());
	prof_set_clock_sync(clock_latest, NULL);
}

void ip_mpi_finishing(void)
{
	if (clock_measure(&ip.sync))
		log_warn("ascent profile: clock alignment at MPI_Finalize failed: %s", ascent_errmsg());
	if (prof_shutdown())
		log_warn("ascent profile: %s", ascent_errmsg());
	ip.active = 0;
	/* after this barrier every rank's file is closed: rank 0's `ascent profile` merges them when
	 * its program exits */
	if (ip.clock_comm != MPI_COMM_NULL) {
		PMPI_Barrier(ip.clock_comm);
		PMPI_Comm_free(&ip.clock_comm);
	}
	ip.mpi_up = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* The wrappers of MPI's life cycle. `ip.active` (not ip_on()): these keep every rank in step even
 * when one rank's profiler turned itself off. */

int MPI_Init(int *argc, char ***argv)
{
	struct prof_tok t = prof_range_begin_kind(DB_KIND_RANGE, "MPI_Init", NULL);
	int rc = PMPI_Init(argc, argv);
	if (rc == MPI_SUCCESS && ip.active)
		ip_mpi_started();
	prof_range_end(&t);
	return rc;
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
	struct prof_tok t = prof_range_begin_kind(DB_KIND_RANGE, "MPI_Init", NULL);
	int rc = PMPI_Init_thread(argc, argv, required, provided);
	if (rc == MPI_SUCCESS && ip.active)
		ip_mpi_started();
	prof_range_end(&t);
	return rc;
}

int MPI_Finalize(void)
{
	if (ip.active && ip.mpi_up) {
		struct prof_tok t = prof_range_begin_kind(DB_KIND_RANGE, "MPI_Finalize", NULL);
		prof_range_end(&t);
		ip_mpi_finishing();
	}
	return PMPI_Finalize();
}

int MPI_Abort(MPI_Comm comm, int errorcode)
{
	if (ip.active) {
		struct prof_tok t = prof_range_begin_kind(DB_KIND_RANGE, "MPI_Abort", NULL);
		prof_counter("mpi_abort_errorcode", errorcode);
		prof_range_end(&t);
		char text[160];
		snprintf(text, sizeof text, "rank %d called MPI_Abort with error code %d: the job was aborted", ip.rank,
			 errorcode);
		prof_add_note("error", text);
		ip.active = 0;
		if (prof_shutdown())   /* the job is about to be killed: close this rank's file now */
			log_warn("ascent profile: %s", ascent_errmsg());
	}
	return PMPI_Abort(comm, errorcode);
}
