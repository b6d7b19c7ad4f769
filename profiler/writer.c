/* profiler/writer.c — lifecycle (prof_init, prof_shutdown, prof_flush), the writer thread that
 * drains the rings into the rank's database in batched transactions, the size budget, turning
 * the profiler off on a write error, clock alignment, merging the ranks' files. */
#include "profiler/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* prof_ctx.flush_req: what a flush asks of the writer */
enum { FLUSH_COMMIT = 1, FLUSH_SYMBOLIZE = 2 };

/* ---------------------------------------------------------------------------------------- */
/* writer-thread state (only the writer touches these after init) */

struct pmap {                  /* const char * → string id */
	const void **k;
	int64_t *v;
	size_t cap, n;
};

static struct pmap names;

static int64_t pmap_get(struct pmap *m, const void *k)
{
	if (!m->cap)
		return 0;
	size_t i = ((uintptr_t)k * 0x9E3779B97F4A7C15ULL >> 17) & (m->cap - 1);
	while (m->k[i]) {
		if (m->k[i] == k)
			return m->v[i];
		i = (i + 1) & (m->cap - 1);
	}
	return 0;
}

static int pmap_put(struct pmap *m, const void *k, int64_t v)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 256;
		const void **nk = calloc(nc, sizeof *nk);
		int64_t *nv = calloc(nc, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		for (size_t i = 0; i < m->cap; i++)
			if (m->k[i]) {
				size_t j = ((uintptr_t)m->k[i] * 0x9E3779B97F4A7C15ULL >> 17) & (nc - 1);
				while (nk[j])
					j = (j + 1) & (nc - 1);
				nk[j] = m->k[i];
				nv[j] = m->v[i];
			}
		free(m->k);
		free(m->v);
		m->k = nk;
		m->v = nv;
		m->cap = nc;
	}
	size_t i = ((uintptr_t)k * 0x9E3779B97F4A7C15ULL >> 17) & (m->cap - 1);
	while (m->k[i] && m->k[i] != k)
		i = (i + 1) & (m->cap - 1);
	if (!m->k[i])
		m->n++;
	m->k[i] = k;
	m->v[i] = v;
	return 0;
}

static int name_id(const char *s, int64_t *id)
{
	if (!s) {
		*id = 0;
		return 0;
	}
	if ((*id = pmap_get(&names, s)) != 0)
		return 0;
	int rc = db_intern(prof_ctx.db, s, id);
	return rc ? rc : pmap_put(&names, s, *id);
}

struct agg {
	int64_t step, name_id, count, total;
	int kind, used;
};
static struct agg aggs[4096];
static int naggs;

static int agg_flush(void)
{
	int rc = 0;
	for (size_t i = 0; i < sizeof aggs / sizeof aggs[0] && !rc; i++)
		if (aggs[i].used) {
			rc = db_put_step_agg(prof_ctx.db, prof_ctx.opt.rank, aggs[i].step, aggs[i].kind, aggs[i].name_id,
					     aggs[i].count, aggs[i].total);
			aggs[i].used = 0;
		}
	naggs = 0;
	return rc;
}

static int agg_add(int64_t step, int kind, int64_t nid, int64_t dur)
{
	uint64_t h = ((uint64_t)step * 1000003u) ^ ((uint64_t)nid * 0x9E3779B97F4A7C15ULL) ^ (uint64_t)kind;
	size_t n = sizeof aggs / sizeof aggs[0];
	if (naggs * 2 >= (int)n) {
		int rc = agg_flush();
		if (rc)
			return rc;
	}
	size_t i = (h >> 7) & (n - 1);
	while (aggs[i].used && !(aggs[i].step == step && aggs[i].kind == kind && aggs[i].name_id == nid))
		i = (i + 1) & (n - 1);
	if (!aggs[i].used) {
		aggs[i] = (struct agg){ step, nid, 0, 0, kind, 1 };
		naggs++;
	}
	aggs[i].count++;
	aggs[i].total += dur;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */

static void fail(int rc)
{
	(void)rc;
	if (prof_ctx.failed)
		return;
	snprintf(prof_ctx.errmsg, sizeof prof_ctx.errmsg, "%.500s", ascent_errmsg());
	__atomic_store_n(&prof_g.on, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&prof_ctx.failed, 1, __ATOMIC_RELAXED);
	log_error("profiler: turning itself off, training goes on: %s", prof_ctx.errmsg);
	db_rollback(prof_ctx.db);
	char note[600];
	snprintf(note, sizeof note, "profiler turned off: %s", prof_ctx.errmsg);
	if (db_put_note(prof_ctx.db, prof_ctx.opt.rank, clock_ns() - prof_ctx.t0_ns, "error", note) != 0 ||
	    db_set_meta(prof_ctx.db, "profiler_failed", prof_ctx.errmsg) != 0)
		log_error("profiler: cannot record that it turned off in the profile: %s", ascent_errmsg());
}

static int write_rank_row(int64_t end_ns)
{
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	struct db_rank_info r = {
		.rank = prof_ctx.opt.rank, .pid = (int)getpid(), .dp_rank = prof_ctx.opt.dp_rank,
		.tp_rank = prof_ctx.opt.tp_rank, .pp_rank = prof_ctx.opt.pp_rank,
		.threads = __atomic_load_n(&prof_ctx.nrings, __ATOMIC_ACQUIRE), .host = host,
		.t0_ns = prof_ctx.t0_ns, .t0_utc_ns = prof_ctx.t0_utc_ns,
		.clock_offset_ns = prof_ctx.sync0.offset_ns, .clock_err_ns = prof_ctx.sync0.err_ns,
		.clock_offset_end_ns = prof_ctx.sync1.offset_ns, .clock_err_end_ns = prof_ctx.sync1.err_ns,
		.end_ns = end_ns,
	};
	return db_put_rank(prof_ctx.db, &r);
}

/* Range records waiting for one bulk insert (writer thread). */
#define EVBATCH 4096
static struct db_event evbatch[EVBATCH];
static size_t nevbatch;
/* Ranges written per thread lane: the next one's ord (two equal ranges of a thread stay two rows). */
static int64_t lane_events[PROF_MAX_THREADS];

static int evbatch_flush(void)
{
	size_t n = nevbatch;
	nevbatch = 0;
	return n ? db_put_events(prof_ctx.db, evbatch, n) : 0;
}

static int process(const struct prof_rec *r, int tid)
{
	struct db *db = prof_ctx.db;
	int rank = prof_ctx.opt.rank;
	int rc = 0;
	if (r->type == REC_STACK)
		return prof_stack_add_part(r);
	if (r->type != REC_STACK && r->u.e.t0 > prof_ctx.last_ts)
		prof_ctx.last_ts = r->u.e.t0 + (r->type == REC_RANGE ? r->u.e.dur : 0);
	if (prof_ctx.has_sched && r->step >= 0 &&
	    prof_schedule_action(&prof_ctx.sched, r->step) == PROF_WARMUP)
		return 0;   /* warm-up: traced, dropped */
	switch (r->type) {
	case REC_RANGE: {
		int64_t nid, sid = 0;
		if ((rc = name_id(r->u.e.name, &nid)) != 0)
			return rc;
		if (r->step >= 0 && (rc = agg_add(r->step, r->kind, nid, r->u.e.dur)) != 0)
			return rc;
		if (prof_ctx.detail_off && r->kind != DB_KIND_STEP) {
			prof_ctx.detail_skipped++;
			return 0;
		}
		if (r->u.e.site && (rc = name_id(r->u.e.site, &sid)) != 0)
			return rc;
		int comm = db_kind_has_comm(r->kind);
		if (nevbatch == EVBATCH && (rc = evbatch_flush()) != 0)
			return rc;
		evbatch[nevbatch++] = (struct db_event){
			.start_ns = r->u.e.t0, .dur_ns = r->u.e.dur, .step = r->step, .name_id = nid,
			.bytes = comm ? r->u.e.amount : 0, .flops = r->kind == DB_KIND_OP ? r->u.e.amount : 0,
			.seq = comm ? r->u.e.seq : -1, .stack_id = prof_stack_id(r->u.e.stack), .site_id = sid,
			.rank = rank, .kind = r->kind, .mb = r->mb,
			.layer = r->kind == DB_KIND_OP ? r->arg : -1,
			.peer = comm ? r->arg : -1, .comm_id = comm ? r->comm_id : -1, .tid = tid,
			.ord = lane_events[tid]++,
		};
		return 0;
	}
	case REC_COUNTER: {
		int64_t nid;
		double v;
		memcpy(&v, &r->u.e.amount, sizeof v);
		if ((rc = name_id(r->u.e.name, &nid)) != 0)
			return rc;
		return db_put_counter(db, rank, nid, r->u.e.t0, v);
	}
	case REC_MEM:
		if (prof_ctx.detail_off) {
			prof_ctx.detail_skipped++;
			return 0;
		}
		return db_put_mem(db, rank, DB_MEM_HOST, r->u.e.t0, r->u.e.amount, r->arg, r->u.e.seq, prof_stack_id(r->u.e.stack));
	case REC_QUEUE: {   /* its range came just before it: the argument of that event */
		if (prof_ctx.detail_off)
			return 0;
		int64_t nid;
		if ((rc = name_id(r->u.e.name, &nid)) != 0)
			return rc;
		struct db_event e = { .rank = rank, .tid = tid, .start_ns = r->u.e.t0, .kind = r->kind, .name_id = nid,
				      .dur_ns = r->u.e.dur, .ord = lane_events[tid] - 1 };
		char json[96];
		int len;
		if (r->u.e.site && r->u.e.amount > 0)
			len = snprintf(json, sizeof json, "{\"queue_ns\":%lld,\"algo\":\"%.32s\"}", (long long)r->u.e.amount,
				       r->u.e.site);
		else if (r->u.e.site)
			len = snprintf(json, sizeof json, "{\"algo\":\"%.32s\"}", r->u.e.site);
		else
			len = snprintf(json, sizeof json, "{\"queue_ns\":%lld}", (long long)r->u.e.amount);
		return db_put_arg(db, &e, json, (size_t)len);
	}
	case REC_SAMPLE:
		if (prof_ctx.detail_off) {
			prof_ctx.detail_skipped++;
			return 0;
		}
		return db_put_sample(db, rank, tid, r->u.e.t0, prof_stack_id(r->u.e.stack), r->u.e.amount);
	default:
		return 0;
	}
}

/* ---------------------------------------------------------------------------------------- */
/* The checkpointer. In WAL mode every page is written twice: into the log at commit, then from the
 * log into the file by a checkpoint, which SQLite runs on the committing connection each time the
 * log holds 1000 pages (16 MB), reading each page back. The writer only inserts; this thread, with
 * its own connection to the rank file, copies the log while the writer goes on (passive
 * checkpoints wait for no one). */

#define PROF_CKPT_FRAMES 1000         /* log pages that wake the checkpointer (SQLite's own threshold) */
#define PROF_CKPT_SELF_FRAMES 4096    /* log pages (64 MB) at which the writer checkpoints itself */

/* After each of the writer's commits (writer thread, inside the commit). */
static void wal_grown(void *arg, int frames)
{
	(void)arg;
	prof_ctx.wal_frames = frames;
	if (frames >= PROF_CKPT_FRAMES && !__atomic_exchange_n(&prof_ctx.ck_posted, 1, __ATOMIC_ACQ_REL))
		sem_post(&prof_ctx.ck_wake);
}

static void *ckpt_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ascent-ckpt");
	prof_block_sampler();
	int warned = 0;
	for (;;) {
		while (sem_wait(&prof_ctx.ck_wake) != 0 && errno == EINTR)
			;
		if (__atomic_load_n(&prof_ctx.ck_stop, __ATOMIC_ACQUIRE))
			break;
		__atomic_store_n(&prof_ctx.ck_posted, 0, __ATOMIC_RELEASE);
		if (db_checkpoint(prof_ctx.ckdb) != 0 && !warned) {
			log_warn("profiler: %s (the writer checkpoints when the log reaches %d pages)", ascent_errmsg(),
				 PROF_CKPT_SELF_FRAMES);
			warned = 1;
		}
	}
	return NULL;
}

/* Start the checkpointer for the rank file at path (its schema committed). Without it (a warning)
 * SQLite's automatic checkpoint stays. */
static void ckpt_start(const char *path)
{
	struct prof_state *c = &prof_ctx;
	c->ckdb = NULL;
	c->ck_stop = c->ck_posted = c->wal_frames = c->ck_warned = 0;
	struct db *ck;
	if (db_open(path, DB_READ, &ck) != 0) {
		log_warn("profiler: no checkpoint thread, the writer checkpoints: %s", ascent_errmsg());
		return;
	}
	if (sem_init(&c->ck_wake, 0, 0) != 0) {
		log_warn("profiler: no checkpoint thread, the writer checkpoints: sem_init: %s", strerror(errno));
		db_close(ck);
		return;
	}
	c->ckdb = ck;
	int e = pthread_create(&c->ckpt, NULL, ckpt_main, NULL);
	if (e != 0) {
		log_warn("profiler: no checkpoint thread, the writer checkpoints: %s", strerror(e));
		sem_destroy(&c->ck_wake);
		db_close(ck);
		c->ckdb = NULL;
		return;
	}
	db_set_wal_notify(c->db, wal_grown, NULL);
}

/* Stop it (the writer thread has ended); SQLite's automatic checkpoint again. */
static int ckpt_stop(void)
{
	struct prof_state *c = &prof_ctx;
	if (!c->ckdb)
		return 0;
	__atomic_store_n(&c->ck_stop, 1, __ATOMIC_RELEASE);
	sem_post(&c->ck_wake);
	pthread_join(c->ckpt, NULL);
	sem_destroy(&c->ck_wake);
	db_close(c->ckdb);
	c->ckdb = NULL;
	return db_set_wal_notify(c->db, NULL, NULL);
}

/* After a commit: a log the checkpointer did not keep short (it starts over only when a checkpoint
 * completes between two of the writer's transactions, which a writer that never pauses may not
 * leave time for) is copied by the writer itself. A failed checkpoint loses nothing: said once. */
static void ckpt_if_long(void)
{
	if (!prof_ctx.ckdb || prof_ctx.wal_frames < PROF_CKPT_SELF_FRAMES)
		return;
	prof_ctx.wal_frames = 0;
	if (db_checkpoint(prof_ctx.db) != 0 && !prof_ctx.ck_warned) {
		log_warn("profiler: %s", ascent_errmsg());
		prof_ctx.ck_warned = 1;
	}
}

/* ---------------------------------------------------------------------------------------- */

static int64_t pushed_seen;

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Drain every ring once, in one transaction. */
static int drain(void)
{
	struct db *db = prof_ctx.db;
	int64_t t0 = clock_ns(), c0 = thread_cpu_ns();
	int rc = db_begin(db);
	int64_t nrec = 0;
	int n = __atomic_load_n(&prof_ctx.nrings, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n && !rc; i++) {
		struct prof_ring *r = prof_ctx.rings[i];
		if (!r->announced) {
			rc = db_put_thread(db, prof_ctx.opt.rank, r->tid, r->os_tid, r->name);
			r->announced = 1;
		}
		uint64_t h = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE), t = r->tail;
		for (; t != h && !rc; t++) {
			rc = process(&r->slot[t & r->mask], r->tid);
			nrec++;
		}
		__atomic_store_n(&r->tail, t, __ATOMIC_RELEASE);
	}
	if (!rc)
		rc = evbatch_flush();
	nevbatch = 0;
	if (!rc)
		rc = agg_flush();
	if (!rc)
		rc = prof_stacks_flush(db);
	pthread_mutex_lock(&prof_ctx.lock);
	for (int i = 0; i < prof_ctx.ncomms && !rc; i++)
		if (!prof_ctx.comms[i].written) {
			rc = db_put_comm(db, prof_ctx.opt.rank, prof_ctx.comms[i].id, prof_ctx.comms[i].name,
					 prof_ctx.comms[i].size, prof_ctx.comms[i].rank_in);
			prof_ctx.comms[i].written = 1;
		}
	pthread_mutex_unlock(&prof_ctx.lock);
	if (!rc && __atomic_exchange_n(&prof_ctx.rank_dirty, 0, __ATOMIC_ACQ_REL))
		rc = write_rank_row(prof_ctx.last_ts);
	int64_t t1 = clock_ns();
	if (!rc && nrec) {
		int64_t pushed = 0;
		for (int i = 0; i < n; i++)
			pushed += __atomic_load_n(&prof_ctx.rings[i]->pushed, __ATOMIC_RELAXED);
		int64_t newp = pushed - pushed_seen;
		pushed_seen = pushed;
		rc = db_put_overhead(db, prof_ctx.opt.rank, t0 - prof_ctx.t0_ns, t1 - t0, "writer");
		if (!rc && newp > 0)
			rc = db_put_overhead(db, prof_ctx.opt.rank, t0 - prof_ctx.t0_ns,
					     (int64_t)((double)newp * prof_ctx.hook_cost_ns), "hooks");
	}
	if (!rc)
		rc = db_commit(db);
	if (!rc)
		ckpt_if_long();
	__atomic_add_fetch(&prof_ctx.written, nrec, __ATOMIC_RELAXED);
	__atomic_add_fetch(&prof_ctx.writer_ns, clock_ns() - t0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&prof_ctx.writer_cpu_ns, thread_cpu_ns() - c0, __ATOMIC_RELAXED);
	if (!rc && prof_ctx.opt.max_mb > 0 && !prof_ctx.detail_off &&
	    db_file_bytes(db) > prof_ctx.opt.max_mb * 1000000) {
		prof_ctx.detail_off = 1;
		char msg[200];
		snprintf(msg, sizeof msg, "size budget of %lld MB reached at step %lld: detail stops, per-step "
			 "aggregates (step_agg) go on", (long long)prof_ctx.opt.max_mb, (long long)prof_g.step);
		log_warn("profiler: %s", msg);
		char st[32];
		snprintf(st, sizeof st, "%lld", (long long)prof_g.step);
		rc = db_put_note(db, prof_ctx.opt.rank, clock_ns() - prof_ctx.t0_ns, "warn", msg);
		if (!rc)
			rc = db_set_meta(db, "detail_stopped_at_step", st);
	}
	return rc;
}

/* A ring holds at least its nudge's worth of records: drain again at once. A push wakes the writer
 * only when the fill crosses nudge_at, and records that came during a long drain crossed it before
 * that drain ended; waiting for the tick then would let a fast producer fill its ring. */
static int backlog(void)
{
	int n = __atomic_load_n(&prof_ctx.nrings, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct prof_ring *r = prof_ctx.rings[i];
		if (__atomic_load_n(&r->head, __ATOMIC_ACQUIRE) - r->tail >= r->nudge_at)
			return 1;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "ascent-prof");
	prof_block_sampler();   /* the program's CPU time is sampled, not the profiler's own threads */
	int flush_ms = prof_ctx.opt.flush_ms > 0 ? prof_ctx.opt.flush_ms : 200;
	for (;;) {
		pthread_mutex_lock(&prof_ctx.wlock);
		int pending = prof_ctx.stop || prof_ctx.flush_req;
		pthread_mutex_unlock(&prof_ctx.wlock);
		if (!pending && !prof_ctx.failed)
			pending = backlog();
		if (!pending) {   /* until the tick, or a post: a ring 1/8 full, prof_flush, prof_shutdown */
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += (long)(flush_ms % 1000) * 1000000L;
			ts.tv_sec += flush_ms / 1000 + ts.tv_nsec / 1000000000L;
			ts.tv_nsec %= 1000000000L;
			while (sem_timedwait(&prof_ctx.wake, &ts) != 0 && errno == EINTR)
				;
		}
		pthread_mutex_lock(&prof_ctx.wlock);
		int stop = prof_ctx.stop, freq = prof_ctx.flush_req;
		pthread_mutex_unlock(&prof_ctx.wlock);
		if (!prof_ctx.failed) {
			int rc = drain();
			if (rc)
				fail(rc);
		} else {
			/* off after an error: keep rings empty */
			int n = __atomic_load_n(&prof_ctx.nrings, __ATOMIC_ACQUIRE);
			for (int i = 0; i < n; i++)
				__atomic_store_n(&prof_ctx.rings[i]->tail,
						 __atomic_load_n(&prof_ctx.rings[i]->head, __ATOMIC_ACQUIRE), __ATOMIC_RELEASE);
		}
		if (freq == FLUSH_SYMBOLIZE && !prof_ctx.failed) {
			/* before an exec: this image's addresses mean nothing to the next one */
			int rc = db_begin(prof_ctx.db);
			if (!rc)
				rc = prof_symbolize(prof_ctx.db);
			if (!rc)
				rc = db_commit(prof_ctx.db);
			if (rc)
				fail(rc);
		}
		if (freq) {
			pthread_mutex_lock(&prof_ctx.wlock);
			prof_ctx.flush_req = 0;
			prof_ctx.flush_done++;
			pthread_cond_broadcast(&prof_ctx.wcond);
			pthread_mutex_unlock(&prof_ctx.wlock);
		}
		if (stop)
			break;
	}
	return NULL;
}

/* Wait until the writer drained the rings (how: FLUSH_COMMIT, or FLUSH_SYMBOLIZE to also name the
 * stacks' frames so far). */
static int flush_wait(int how)
{
	if (!prof_ctx.initialized)
		return 0;
	pthread_mutex_lock(&prof_ctx.wlock);
	int target = prof_ctx.flush_done + 1;
	if (prof_ctx.flush_req < how)
		prof_ctx.flush_req = how;
	sem_post(&prof_ctx.wake);
	while (prof_ctx.flush_done < target && !prof_ctx.stop)
		pthread_cond_wait(&prof_ctx.wcond, &prof_ctx.wlock);
	pthread_mutex_unlock(&prof_ctx.wlock);
	return prof_ctx.failed ? ascent_error(ASCENT_EIO, "profiler is off: %s", prof_ctx.errmsg) : 0;
}

int prof_flush(void)
{
	return flush_wait(FLUSH_COMMIT);
}

/* ---------------------------------------------------------------------------------------- */

static double calibrate_hook_cost(void)
{
	enum { N = 4096 };
	static volatile struct prof_rec scratch[64];
	struct prof_rec r;
	memset(&r, 0, sizeof r);
	int64_t t0 = clock_ns();
	for (int i = 0; i < N; i++) {
		r.u.e.t0 = clock_ns();
		r.u.e.dur = clock_ns() - r.u.e.t0;
		memcpy((void *)&scratch[i & 63], &r, sizeof r);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
	return (double)(clock_ns() - t0) / N;
}

/* ---------------------------------------------------------------------------------------- */
/* the rank file's writer lock: held from prof_init to prof_shutdown (an exclusive flock on the
 * file), so that a merge can tell a run still being written, which it refuses, from one whose
 * writers have ended, however they ended (the kernel drops the lock with the process). flock,
 * not fcntl: SQLite's own locks on the file are fcntl locks, and the two do not interact. It is
 * closed only after SQLite's connections to the file are (closing another descriptor of a file
 * would drop the process's fcntl locks on it), and in a forked child (which writes nothing). */

static int writer_lock = -1;

static void writer_lock_drop(void)
{
	if (writer_lock >= 0)
		close(writer_lock);
	writer_lock = -1;
}

static void writer_lock_atfork(void)
{
	pthread_atfork(NULL, NULL, writer_lock_drop);
}

static void writer_lock_take(const char *path)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, writer_lock_atfork);
	writer_lock_drop();
	int fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd >= 0 && flock(fd, LOCK_EX | LOCK_NB) == 0)
		writer_lock = fd;
	else if (fd >= 0)
		close(fd);
}

/* The rank files' writers are gone: each part's lock taken shared (held in fds[] until the merge
 * is over). A part whose writer still runs is refused, naming it. */
static int parts_lock(char **parts, int n, int *fds)
{
	int rc = 0;
	for (int i = 0; i < n; i++)
		fds[i] = -1;
	for (int i = 0; i < n && !rc; i++) {
		fds[i] = open(parts[i], O_RDONLY | O_CLOEXEC);
		if (fds[i] >= 0 && flock(fds[i], LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK)
			rc = ascent_error(ASCENT_EINPUT, "'%s' is still being written: the process profiling that rank is "
					  "running; merge after the run has ended (a run merges its rank files itself "
					  "when it ends)", parts[i]);
	}
	return rc;
}

static void parts_unlock(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* meta run_id: what every rank of one run shares and another run does not — the launcher's job
 * (Slurm job and step, Open MPI's job id, the PMIx namespace); a process alone: its pid and start.
 * None when several ranks run without a launcher's id (then merge cannot tell runs apart). */
static int write_run_id(struct db *db, const struct prof_options *o)
{
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	const char *ompi = getenv("OMPI_MCA_ess_base_jobid"), *ns = getenv("PMIX_NAMESPACE");
	char id[256];
	if (job && *job)
		snprintf(id, sizeof id, "slurm:%s.%s", job, step && *step ? step : "0");
	else if (ompi && *ompi)
		snprintf(id, sizeof id, "ompi:%s", ompi);
	else if (ns && *ns)
		snprintf(id, sizeof id, "pmix:%s", ns);
	else if (o->world_size <= 1)
		snprintf(id, sizeof id, "pid:%ld@%lld", (long)getpid(), (long long)prof_ctx.t0_utc_ns);
	else
		return 0;
	return db_set_meta(db, "run_id", id);
}

/* The image after an exec goes on with the file the image before it wrote (same pid, same rank):
 * 1 with it open and its clock origin, 0 when there is none to go on with (then it is replaced). */
static int resume_rank_file(const struct prof_options *o, struct db **db, int64_t *t0_ns, int64_t *t0_utc_ns)
{
	*db = NULL;
	if (!fs_exists(o->db_path) || db_open(o->db_path, DB_UPDATE, db) != 0)
		return 0;
	struct db_rank_info *r = NULL;
	int nr = 0, found = 0;
	if (db_ranks(*db, &r, &nr) == 0)
		for (int i = 0; i < nr && !found; i++)
			if (r[i].rank == o->rank && r[i].pid == (int)getpid()) {
				*t0_ns = r[i].t0_ns;
				*t0_utc_ns = r[i].t0_utc_ns;
				found = 1;
			}
	db_ranks_free(r, nr);
	if (!found) {
		db_close(*db);
		*db = NULL;
	}
	return found;
}

void prof_exec_prepare(void)
{
	if (!prof_ctx.initialized)
		return;
	prof_sampler_pause();
	struct prof_tok t = prof_range_begin_kind(DB_KIND_RANGE, "exec", NULL);
	prof_range_end(&t);
	if (flush_wait(FLUSH_SYMBOLIZE) != 0)
		log_warn("profiler: before exec: %s", ascent_errmsg());
}

void prof_exec_failed(void)
{
	if (prof_ctx.initialized)
		prof_sampler_resume();
}

int prof_init(const struct prof_options *o)
{
	if (prof_ctx.initialized)
		return ascent_error(ASCENT_EUSAGE, "the profiler is already running (prof_init called twice)");
	if (!o || !o->db_path || !*o->db_path)
		return ascent_error(ASCENT_EUSAGE, "prof_init: no database path given");
	if (o->max_mb < 0)
		return ascent_error(ASCENT_EUSAGE, "--profile-max-mb must be >= 0 (got %lld)", (long long)o->max_mb);
	if (o->flush_ms < 0 || o->flush_ms > 1000)
		return ascent_error(ASCENT_EUSAGE, "profiler flush interval must be in [0, 1000] ms (got %d)", o->flush_ms);
	struct prof_schedule sched = { 0 };
	int has_sched = o->schedule && *o->schedule;
	int rc;
	if (has_sched && (rc = prof_schedule_parse(o->schedule, &sched)) != 0)
		return rc;
	struct db *db;
	int64_t t0_ns = 0, t0_utc_ns = 0;
	int resumed = o->resume ? resume_rank_file(o, &db, &t0_ns, &t0_utc_ns) : 0;
	if (!resumed && (rc = db_open(o->db_path, DB_CREATE, &db)) != 0)
		return ascent_error_ctx(rc, "profiler off");
	/* no fsync while the run goes (prof_shutdown syncs the finished file): a rank file is merged
	 * into the kept trace.db at the end, and a killed process loses nothing it committed */
	if ((rc = db_set_sync(db, 0)) != 0) {
		db_close(db);
		return ascent_error_ctx(rc, "profiler off");
	}
	struct prof_state *c = &prof_ctx;
	c->opt = *o;
	c->db_path = dup_or_null(o->db_path);
	c->schedule_str = dup_or_null(o->schedule);
	c->cmdline = dup_or_null(o->command_line);
	c->config = dup_or_null(o->config_json);
	c->opt.db_path = c->db_path;
	c->opt.schedule = c->schedule_str;
	c->opt.command_line = c->cmdline;
	c->opt.config_json = c->config;
	c->sched = sched;
	c->has_sched = has_sched;
	c->db = db;
	c->failed = 0;
	c->errmsg[0] = 0;
	c->detail_off = 0;
	c->detail_skipped = c->written = c->writer_ns = c->writer_cpu_ns = 0;
	c->stop = c->flush_req = c->flush_done = 0;
	c->nrings = 0;
	c->last_ts = 0;
	c->step_open = 0;
	c->sync0 = c->sync1 = (struct prof_clock_sync){ 0, 0 };
	c->hook_cost_ns = calibrate_hook_cost();
	c->t0_utc_ns = resumed ? t0_utc_ns : clock_utc_ns();
	c->t0_ns = resumed ? t0_ns : clock_ns();
	pushed_seen = 0;
	if (c->clock_fn && c->clock_fn(c->clock_arg, &c->sync0) != 0)
		log_warn("profiler: clock alignment at start failed: %s", ascent_errmsg());
	rc = db_begin(db);
	if (!rc && !resumed)
		rc = db_put_run(db, o->command_line, o->config_json, o->world_size > 0 ? o->world_size : 1);
	if (!rc && resumed)
		rc = prof_stacks_resume(db);
	if (!rc)
		rc = write_rank_row(0);
	if (!rc && !resumed)
		rc = write_run_id(db, o);
	if (!rc)
		rc = prof_write_host_facts(db);
	if (!rc)
		rc = db_set_meta(db, "profile_schedule", has_sched ? o->schedule : "all");
	if (!rc) {
		char buf[32];
		snprintf(buf, sizeof buf, "%lld", (long long)o->max_mb);
		rc = db_set_meta(db, "profile_max_mb", buf);
	}
	if (!rc)
		rc = db_commit(db);
	if (rc) {
		db_close(db);
		c->db = NULL;
		return ascent_error_ctx(rc, "profiler off");
	}
	c->gen++;
	writer_lock_take(c->db_path);
	ckpt_start(c->db_path);
	if (sem_init(&c->wake, 0, 0) != 0) {
		int e = errno;
		ckpt_stop();
		db_close(db);
		writer_lock_drop();
		c->db = NULL;
		return ascent_error(ASCENT_EIO, "profiler off: cannot create the writer's wake-up semaphore: %s", strerror(e));
	}
	__atomic_store_n(&c->initialized, 1, __ATOMIC_RELEASE);
	int e = pthread_create(&c->writer, NULL, writer_main, NULL);
	if (e != 0) {
		c->initialized = 0;
		ckpt_stop();
		db_close(db);
		writer_lock_drop();
		c->db = NULL;
		return ascent_error(ASCENT_EIO, "profiler off: cannot start the writer thread: %s", strerror(e));
	}
	if (o->sample_hz > 0 && (rc = prof_sampler_start(o->sample_hz)) != 0)
		log_warn("profiler: sampler not started: %s", ascent_errmsg());
	prof_g.step = -1;
	prof_g.mb = -1;
	__atomic_store_n(&prof_g.on, has_sched ? 0 : 1, __ATOMIC_RELAXED);
	return 0;
}

void prof_set_clock_sync(prof_clock_fn fn, void *arg)
{
	prof_ctx.clock_fn = fn;
	prof_ctx.clock_arg = arg;
	if (prof_ctx.initialized && fn) {
		if (fn(arg, &prof_ctx.sync0) != 0)
			log_warn("profiler: clock alignment failed: %s", ascent_errmsg());
		__atomic_store_n(&prof_ctx.rank_dirty, 1, __ATOMIC_RELEASE);
	}
}

/* The rate the sampler asked for and the one it achieved (samples per second of the process's CPU
 * time) as meta, and a note when the kernel gave fewer than 90% of them. */
static int write_sampler_facts(struct db *db, const struct prof_sampler_result *sr)
{
	double cpu_s = (double)sr->cpu_ns / 1e9;
	double achieved = cpu_s > 0 ? (double)sr->signals / cpu_s : 0;
	char buf[64];
	snprintf(buf, sizeof buf, "%d", sr->hz);
	int rc = db_set_meta(db, "sample_hz_requested", buf);
	snprintf(buf, sizeof buf, "%.1f", achieved);
	if (!rc)
		rc = db_set_meta(db, "sample_hz_achieved", buf);
	/* under a tenth of a CPU-second the rate says little */
	if (!rc && cpu_s >= 0.1 && achieved < 0.9 * sr->hz) {
		char msg[400];
		snprintf(msg, sizeof msg, "--sample %d achieved %.0f samples per CPU-second (%lld samples in %.2f s of "
			 "CPU time): the kernel fires CPU-time timers at most once per tick; each sample stands for the "
			 "%lld periods that elapsed (sample.period_ns), so CPU-time totals hold", sr->hz, achieved,
			 (long long)sr->signals, cpu_s, (long long)sr->expirations);
		rc = db_put_note(db, prof_ctx.opt.rank, prof_ctx.last_ts, "warn", msg);
	}
	return rc;
}

int prof_shutdown(void)
{
	struct prof_state *c = &prof_ctx;
	if (!c->initialized)
		return 0;
	prof_step_end();
	__atomic_store_n(&prof_g.on, 0, __ATOMIC_RELAXED);
	struct prof_sampler_result sr;
	int sampled = prof_sampler_result(&sr);
	prof_sampler_stop();
	if (c->clock_fn && c->clock_fn(c->clock_arg, &c->sync1) != 0)
		log_warn("profiler: clock alignment at end failed: %s", ascent_errmsg());
	pthread_mutex_lock(&c->wlock);
	c->stop = 1;
	pthread_cond_broadcast(&c->wcond);   /* a prof_flush waiting elsewhere */
	sem_post(&c->wake);
	pthread_mutex_unlock(&c->wlock);
	pthread_join(c->writer, NULL);
	int rc = ckpt_stop();
	if (rc)
		fail(rc);
	if (!c->failed) {
		int64_t t0 = clock_ns();
		rc = db_begin(c->db);
		if (!rc)
			rc = prof_symbolize(c->db);
		if (!rc)
			rc = write_rank_row(c->last_ts);
		if (!rc) {
			struct prof_stats st;
			prof_get_stats(&st);
			char buf[64];
			snprintf(buf, sizeof buf, "%lld", (long long)st.dropped);
			rc = db_set_meta(c->db, "events_dropped", buf);
			if (!rc)
				rc = prof_write_set_meta(c->db);
			if (!rc && sampled)
				rc = write_sampler_facts(c->db, &sr);
			if (!rc)
				rc = prof_write_notes(c->db);
			if (!rc && st.dropped > 0) {
				char msg[160];
				snprintf(msg, sizeof msg, "%lld records were dropped because a thread's ring was full "
					 "(raise ring_events)", (long long)st.dropped);
				rc = db_put_note(c->db, c->opt.rank, c->last_ts, "warn", msg);
			}
		}
		if (!rc)
			rc = db_commit(c->db);
		if (!rc)
			rc = db_finalize(c->db);
		if (!rc)
			rc = db_set_sync(c->db, 1);   /* the closing checkpoint fsyncs the finished file */
		if (!rc)
			rc = db_put_overhead(c->db, c->opt.rank, c->last_ts, clock_ns() - t0, "finalize");
		if (rc)
			fail(rc);
	}
	prof_clear_set_meta();
	int failed = c->failed;
	char msg[600];
	snprintf(msg, sizeof msg, "%.590s", c->errmsg);
	db_close(c->db);
	c->db = NULL;
	writer_lock_drop();
	pthread_mutex_lock(&c->lane_lock);   /* a lane push (any thread) is over or sees it off */
	__atomic_store_n(&c->initialized, 0, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->lane_lock);
	for (int i = 0; i < c->nrings; i++) {
		prof_ring_free(c->rings[i]);
		c->rings[i] = NULL;
	}
	c->nrings = 0;
	c->gen++;
	for (int i = 0; i < c->ninterned; i++)
		free(c->interned[i]);
	free(c->interned);
	c->interned = NULL;
	c->ninterned = c->capinterned = 0;
	c->ncomms = 0;
	c->comms_full = 0;
	free(c->db_path);
	free(c->schedule_str);
	free(c->cmdline);
	free(c->config);
	c->db_path = c->schedule_str = c->cmdline = c->config = NULL;
	free(names.k);
	free(names.v);
	memset(&names, 0, sizeof names);
	prof_stacks_reset();
	c->failed = 0;
	prof_g.step = -1;
	prof_g.mb = -1;
	if (failed)
		return ascent_error(ASCENT_EIO, "the profiler turned itself off: %s", msg);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Say on stderr which rank files' logs lost data (the merged profile keeps the same as notes). */
static void warn_wal_losses(char **parts, int n)
{
	for (int i = 0; i < n; i++) {
		struct db_wal_loss wl;
		if (db_wal_check(parts[i], &wl) || !(wl.frames_lost || wl.partial_bytes || wl.header_bad))
			continue;
		log_warn("'%s-wal' %s: %lld page(s) and %lld partial byte(s) after its last complete transaction are "
			 "lost; this rank's profile ends early", parts[i], wl.header_bad ? "has a damaged header" :
			 "was cut short or damaged", (long long)wl.frames_lost, (long long)wl.partial_bytes);
	}
}

int prof_merge(const char *run_dir, const char *out_path, int remove_parts)
{
	return prof_merge_runs(run_dir, out_path, remove_parts, 0);
}

int prof_merge_runs(const char *run_dir, const char *out_path, int remove_parts, int allow_mixed)
{
	DIR *d = opendir(run_dir);
	if (!d)
		return ascent_error(errno == ENOENT ? ASCENT_EINPUT : ASCENT_EIO, "cannot open run folder '%s': %s",
				    run_dir, strerror(errno));
	char **parts = NULL;
	int n = 0, cap = 0, rc = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, "rank-", 5) != 0 || l < 9 || strcmp(e->d_name + l - 3, ".db") != 0)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 16;
			char **p2 = realloc(parts, (size_t)cap * sizeof *p2);
			if (!p2) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			parts = p2;
		}
		size_t pl = strlen(run_dir) + l + 2;
		if (!(parts[n] = malloc(pl))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		snprintf(parts[n], pl, "%s/%s", run_dir, e->d_name);
		n++;
	}
	closedir(d);
	if (!rc && n == 0)
		rc = ascent_error(ASCENT_EINPUT, "nothing to merge in '%s': no rank-NNNNN.db files (was the run "
				  "profiled with --profile?)", run_dir);
	char outbuf[4096];
	int *locks = rc ? NULL : calloc((size_t)n, sizeof *locks);
	if (!rc && !locks)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc) {
		if (n > 1)
			qsort(parts, (size_t)n, sizeof *parts, cmp_str);
		rc = parts_lock(parts, n, locks);
	}
	if (!rc) {
		if (!out_path) {
			snprintf(outbuf, sizeof outbuf, "%s/trace.db", run_dir);
			out_path = outbuf;
		}
		/* never merge into one of the parts (removed afterwards); what else out_path may be is the
		 * caller's check (cmd_merge's --force) */
		struct fs_output fo = { .cmd = "merge", .option = "-o", .path = out_path,
					.inputs = (const char *const *)parts, .ninputs = n, .force = 1 };
		rc = fs_output_check(&fo);
		if (!rc) {
			warn_wal_losses(parts, n);
			rc = db_merge(out_path, (const char *const *)parts, n, allow_mixed);
		}
		if (!rc)
			rc = prof_merge_ends(out_path, parts, n, remove_parts);
		if (!rc && prof_finish_merged(out_path) != 0)   /* the viewer builds them when it opens it */
			log_warn("%s", ascent_errmsg());
	}
	if (!rc && remove_parts)
		for (int i = 0; i < n; i++) {
			char aux[4200];
			unlink(parts[i]);
			snprintf(aux, sizeof aux, "%s-wal", parts[i]);
			unlink(aux);
			snprintf(aux, sizeof aux, "%s-shm", parts[i]);
			unlink(aux);
		}
	if (locks)
		parts_unlock(locks, n);
	free(locks);
	for (int i = 0; i < n; i++)
		free(parts[i]);
	free(parts);
	return rc;
}
