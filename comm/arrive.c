/* comm/arrive.c — arrival flags of a communicator whose members all share this host: a small
 * POSIX shared-memory segment with one 64-byte slot per member. Before a collective on the
 * communication thread, a member writes the collective's sequence number into its slot and wakes
 * any member sleeping on it (futex); it then sleeps on the slots of the members not yet there. The
 * thread so waits for a late peer without using the core the computation runs on, and starts the
 * moment the last member arrives: the MPI_Ibarrier it replaces had to be polled (MPI has no
 * blocking wait that sleeps), and each poll between short sleeps cost a context switch pair on the
 * computing core (half the thread's CPU in a DP=2 step on 2 cores), while longer sleeps start the
 * collective late and leave the peer polling inside it.
 *
 * A group spanning hosts, or one where the segment cannot be made or is not seen by every member
 * (a private /dev/shm), has no flags: ready_wait (ops.c) then polls an MPI_Ibarrier. */
#include "comm/impl.h"

#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct comm_arrive_slot {
	_Atomic uint32_t seq;        /* low 32 bits of the last collective this member reached */
	uint32_t magic;              /* set once by its member: proves the segment is shared */
	char pad[56];
};

#define ARRIVE_MAGIC 0x61726976u   /* "ariv" */

static long futex(_Atomic uint32_t *addr, int op, uint32_t val, const struct timespec *ts)
{
	return syscall(SYS_futex, (uint32_t *)addr, op, val, ts, NULL, 0);
}

void comm_arrive_free(struct comm_group *g)
{
	if (g->arrive)
		munmap(g->arrive, (size_t)g->size * sizeof *g->arrive);
	g->arrive = NULL;
}

/* The segment of `bytes` bytes: made by group rank 0, whose name it broadcasts; opened and
 * mapped by the others. NULL (and *ok 0) when this member cannot have it. */
static struct comm_arrive_slot *segment(struct comm_group *g, size_t bytes, int *ok)
{
	static int serial;
	char name[64] = "";
	int fd = -1;
	if (g->rank == 0) {
		snprintf(name, sizeof name, "/ascent-arrive-%ld-%lld-%d", (long)getpid(), (long long)g->id, serial++);
		fd = shm_open(name, O_RDWR | O_CREAT | O_EXCL, 0600);
		if (fd >= 0 && ftruncate(fd, (off_t)bytes)) {
			close(fd);
			shm_unlink(name);
			fd = -1;
		}
		if (fd < 0)
			name[0] = 0;   /* tells the others there is none */
	}
	if (MPI_Bcast(name, sizeof name, MPI_CHAR, 0, g->mc) != MPI_SUCCESS)
		name[0] = 0;
	name[sizeof name - 1] = 0;
	if (g->rank != 0 && name[0])
		fd = shm_open(name, O_RDWR, 0);
	void *p = MAP_FAILED;
	if (fd >= 0) {
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
	}
	*ok = p != MAP_FAILED;
	if (*ok) {
		struct comm_arrive_slot *s = p;
		atomic_store_explicit(&s[g->rank].seq, 0, memory_order_relaxed);
		s[g->rank].magic = ARRIVE_MAGIC;
	}
	/* everyone has it open (or has given up): the name can go; the mappings stay */
	MPI_Barrier(g->mc);
	if (g->rank == 0 && name[0])
		shm_unlink(name);
	return *ok ? p : NULL;
}

int comm_arrive_setup(struct comm *c, int kind)
{
	struct comm_group *g = &c->g[kind];
	g->arrive = NULL;
	if (!c->use_mpi || g->mc == MPI_COMM_NULL || g->size < 2)
		return 0;
	/* every member on this host: the shared-memory split is then the whole group on every member
	 * (and on none otherwise), so all take the same branch */
	MPI_Comm node;
	int mrc = MPI_Comm_split_type(g->mc, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
	if (mrc != MPI_SUCCESS)
		return comm_mpi_err(mrc, "MPI_Comm_split_type", c, kind);
	int nsize = 0;
	MPI_Comm_size(node, &nsize);
	MPI_Comm_free(&node);
	if (nsize != g->size)
		return 0;
	size_t bytes = (size_t)g->size * sizeof(struct comm_arrive_slot);
	int ok;
	struct comm_arrive_slot *s = segment(g, bytes, &ok);
	for (int i = 0; ok && i < g->size; i++)   /* every member's mark is visible here */
		ok = s[i].magic == ARRIVE_MAGIC;
	int all = ok;
	mrc = MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, g->mc);
	if (mrc != MPI_SUCCESS || !all) {
		if (s)
			munmap(s, bytes);
		if (mrc != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Allreduce", c, kind);
		log_debug("comm: '%s' has no shared arrival flags (the segment is not shared by every member); its "
			  "communication thread polls an MPI_Ibarrier instead", g->lane);
		return 0;
	}
	g->arrive = s;
	return 0;
}

void comm_arrive_wait(struct comm_group *g, int64_t seq)
{
	uint32_t s = (uint32_t)seq;
	struct comm_arrive_slot *a = g->arrive;
	atomic_store_explicit(&a[g->rank].seq, s, memory_order_release);
	futex(&a[g->rank].seq, FUTEX_WAKE, INT_MAX, NULL);
	for (int i = 0; i < g->size; i++) {
		if (i == g->rank)
			continue;
		for (;;) {
			uint32_t v = atomic_load_explicit(&a[i].seq, memory_order_acquire);
			if ((int32_t)(v - s) >= 0)
				break;
			/* a bounded sleep: a wake-up lost to a member that died is the watchdog's */
			struct timespec ts = { 0, 100 * 1000 * 1000 };
			futex(&a[i].seq, FUTEX_WAIT, v, &ts);
		}
	}
}
