/* comm/watchdog.c — the watchdog thread: it wakes every min(1 s, timeout/10), writes a dump when
 * SIGUSR1 asked for one, and stops the job when an operation has not completed within
 * ASCENT_COMM_TIMEOUT seconds of being enqueued: message naming rank, communicator, operation and
 * sequence number, flight-recorder dump, then MPI_Abort. It never calls MPI otherwise.
 *
 * Stopping the job is this thread's documented purpose, the one place comm/ ends the process. */
#include "comm/impl.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void fire(struct comm *c, const struct flight_entry *e, int64_t now)
{
	const struct comm_group *g = &c->g[e->kind];
	char what[224];
	if (e->op == OP_SEND || e->op == OP_RECV)
		snprintf(what, sizeof what, "%s %s rank %d (p2p seq %lld)", comm_op_name(e->op),
			 e->op == OP_SEND ? "to" : "from", e->peer, (long long)e->seq);
	else if (atomic_load(&e->state) == FL_ENQUEUED)
		snprintf(what, sizeof what, "%s seq %lld (enqueued, never started: the thread that runs it is stuck)",
			 comm_op_name(e->op), (long long)e->seq);
	else
		snprintf(what, sizeof what, "%s seq %lld", comm_op_name(e->op), (long long)e->seq);
	char members[256] = "";
	size_t off = 0;
	for (int i = 0; i < g->size && off + 16 < sizeof members; i++)
		off += (size_t)snprintf(members + off, sizeof members - off, "%s%d", i ? "," : "", g->ranks[i]);
	if (off + 16 >= sizeof members)
		snprintf(members + off, sizeof members - off, ",...");
	char dumpmsg[4200];
	atomic_store(&c->final_dumped, 1); /* the SIGTERM that follows MPI_Abort must not overwrite it */
	/* no fsync: mpirun follows MPI_Abort with SIGTERM and, a second later, SIGKILL */
	int drc = comm_flight_dump_locked(c, "timeout", 0);
	atomic_store(&c->final_done, 1);
	if (drc)
		snprintf(dumpmsg, sizeof dumpmsg, "no flight-recorder dump: %s", ascent_errmsg());
	else
		snprintf(dumpmsg, sizeof dumpmsg, "flight recorder dumped to %s", c->dump_path);
	char msg[5200];
	snprintf(msg, sizeof msg,
		 "comm timeout on rank %d (%s): %s on communicator '%s' (id %lld, ranks %s; %lld bytes) not "
		 "completed after %.1f s (ASCENT_COMM_TIMEOUT=%g); last completed seq there: %lld; %s; stopping "
		 "the job (run 'ascent diag hang RUN_DIR' to see which rank never arrived)",
		 c->world_rank, c->host, what, comm_kind_name((enum comm_kind)e->kind), (long long)e->comm_id, members,
		 (long long)e->bytes, (double)(now - e->t_enq) / 1e9, c->timeout_s, (long long)g->last_done, dumpmsg);
	log_error("%s", msg); /* the logger puts it on stderr unless this rank only logs to its file */
	if (c->use_mpi && c->thread_level == MPI_THREAD_MULTIPLE)
		MPI_Abort(MPI_COMM_WORLD, 1);
	/* MPI_Abort is not allowed from this thread below MPI_THREAD_MULTIPLE (or there is no MPI):
	 * end the process; the launcher tears the rest of the job down. */
	kill(getpid(), SIGABRT); /* process-directed: this thread blocks every signal */
	struct timespec pause = { 5, 0 };
	nanosleep(&pause, NULL);
	_exit(1);
}

static void *watchdog_main(void *arg)
{
	struct comm *c = arg;
	int64_t interval = 1000000000LL;
	if (c->timeout_ns > 0 && c->timeout_ns / 10 < interval)
		interval = c->timeout_ns / 10;
	if (interval < 5000000)
		interval = 5000000;
	while (!atomic_load(&c->stop)) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int64_t t = (int64_t)ts.tv_nsec + interval;
		ts.tv_sec += (time_t)(t / 1000000000LL);
		ts.tv_nsec = (long)(t % 1000000000LL);
		while (sem_timedwait(&c->wake, &ts) && errno == EINTR) {
		}
		if (atomic_load(&c->stop))
			break;
		if (atomic_exchange(&c->usr1, 0)) {
			if (comm_flight_dump(c, "SIGUSR1"))
				log_warn("SIGUSR1: %s", ascent_errmsg());
			else
				log_info("SIGUSR1: flight recorder dumped to %s", c->dump_path);
		}
		if (c->timeout_ns <= 0 || !c->ring)
			continue;
		struct flight_entry late;
		int found = 0;
		int64_t now = clock_ns();
		pthread_mutex_lock(&c->lock);
		if (c->inflight > 0) {
			int64_t last = c->next_op_index;
			int64_t from = last > c->flight_size ? last - c->flight_size + 1 : 1;
			for (int64_t i = from; i <= last; i++) {
				const struct flight_entry *e = &c->ring[i % c->flight_size];
				if (e->op_index != i || atomic_load(&e->state) == FL_COMPLETED)
					continue;
				if (now - e->t_enq >= c->timeout_ns) {
					memcpy(&late, e, sizeof late);
					found = 1;
					break; /* the oldest one */
				}
			}
		}
		pthread_mutex_unlock(&c->lock);
		if (found)
			fire(c, &late, now);
	}
	return NULL;
}

int comm_watchdog_start(struct comm *c)
{
	/* signals go to the main thread, not here */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = pthread_create(&c->watchdog, NULL, watchdog_main, c);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (e)
		return ascent_error(ASCENT_EIO, "cannot start the comm watchdog thread: %s", strerror(e));
	c->watchdog_running = 1;
	return 0;
}

void comm_watchdog_stop(struct comm *c)
{
	if (!c->watchdog_running)
		return;
	atomic_store(&c->stop, 1);
	sem_post(&c->wake);
	pthread_join(c->watchdog, NULL);
	c->watchdog_running = 0;
}
