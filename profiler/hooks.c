/* profiler/hooks.c — the hot path: the global flag, per-thread SPSC ring buffers (no lock, no
 * malloc, no syscall but the vDSO clock once a thread's ring exists), the slow halves of the hooks,
 * steps and the schedule, memory totals, counters, interning. */
#include "profiler/internal.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct prof_global prof_g = { .on = 0, .mb = -1, .step = -1 };
struct prof_state prof_ctx = { .lock = PTHREAD_MUTEX_INITIALIZER,
			       .lane_lock = PTHREAD_MUTEX_INITIALIZER,
			       .wlock = PTHREAD_MUTEX_INITIALIZER,
			       .wcond = PTHREAD_COND_INITIALIZER };

static __thread struct prof_ring *tls_ring;
static __thread int tls_gen;
__thread volatile int prof_tls_in_hook;   /* the sampler skips a thread inside a push */

/* prof_ctx.lock, taken so that the SIGPROF sampler skips this thread while it holds it (the handler
 * may register the thread's ring, under the same lock). Returns what to give prof_unlock. */
static int prof_lock(void)
{
	int was = prof_tls_in_hook;
	prof_tls_in_hook = 1;
	pthread_mutex_lock(&prof_ctx.lock);
	return was;
}

static void prof_unlock(int was)
{
	pthread_mutex_unlock(&prof_ctx.lock);
	prof_tls_in_hook = was;
}

/* A new ring in the thread table: the calling thread's (name NULL: its OS name) or a lane's (os_tid
 * 0). NULL when the profiler is off or the table is full. The sampler's signal handler registers a
 * thread whose first record is a sample, so nothing here may take a lock the interrupted thread
 * could hold: the memory comes from mmap (malloc's locks may be held: inside malloc, or across a
 * fork), and the thread table's lock is never held by a thread the handler can interrupt there
 * (prof_lock). */
static struct prof_ring *ring_register(const char *lane)
{
	if (!__atomic_load_n(&prof_ctx.initialized, __ATOMIC_ACQUIRE))
		return NULL;
	int was = prof_lock();
	struct prof_ring *r = NULL;
	if (prof_ctx.nrings < PROF_MAX_THREADS) {
		uint64_t cap = 1;
		uint64_t want = prof_ctx.opt.ring_events > 0 ? (uint64_t)prof_ctx.opt.ring_events : 65536;
		while (cap < want)
			cap <<= 1;
		size_t bytes = sizeof *r + cap * sizeof *r->slot;
		void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m != MAP_FAILED) {
			r = m;   /* zero-filled; the slots follow the ring */
			r->slot = (struct prof_rec *)((char *)m + sizeof *r);
			r->map_bytes = bytes;
			r->mask = cap - 1;
			r->nudge_at = cap >= 8 ? (cap / 8 < PROF_NUDGE_MAX ? cap / 8 : PROF_NUDGE_MAX) : 1;
			r->tid = prof_ctx.nrings;
			if (lane) {
				r->os_tid = 0;
				snprintf(r->name, sizeof r->name, "%s", lane);
			} else {
				r->os_tid = (int64_t)syscall(SYS_gettid);
				if (pthread_getname_np(pthread_self(), r->name, sizeof r->name) != 0)
					snprintf(r->name, sizeof r->name, "thread-%d", r->tid);
			}
			prof_ctx.rings[prof_ctx.nrings] = r;
			__atomic_store_n(&prof_ctx.nrings, prof_ctx.nrings + 1, __ATOMIC_RELEASE);
		}
	}
	prof_unlock(was);
	return r;
}

void prof_ring_free(struct prof_ring *r)
{
	if (r)
		munmap(r, r->map_bytes);
}

static inline struct prof_ring *my_ring(void)
{
	if (__builtin_expect(tls_ring != NULL && tls_gen == prof_ctx.gen, 1))
		return tls_ring;
	tls_ring = ring_register(NULL);
	tls_gen = prof_ctx.gen;
	return tls_ring;
}

static void ring_push(struct prof_ring *r, const struct prof_rec *rec)
{
	prof_tls_in_hook = 1;
	uint64_t h = r->head;
	uint64_t t = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	if (h - t > r->mask) {
		r->dropped++;
	} else {
		r->slot[h & r->mask] = *rec;
		__atomic_store_n(&r->head, h + 1, __ATOMIC_RELEASE);
		r->pushed++;
		if (__builtin_expect(h + 1 - t == r->nudge_at, 0))
			sem_post(&prof_ctx.wake);   /* drain before the ring fills, not at the next tick */
	}
	prof_tls_in_hook = 0;
}

void prof_push(const struct prof_rec *rec)
{
	struct prof_ring *r = my_ring();
	if (r)
		ring_push(r, rec);
}

struct prof_tok prof__begin(int kind, const char *name, const char *site, int64_t amount, int32_t arg,
			    int32_t comm_id, int64_t seq)
{
	struct prof_tok t;
	t.name = name ? name : "?";
	t.site = site;
	t.amount = amount;
	t.seq = seq;
	t.arg = arg;
	t.comm_id = comm_id;
	t.kind = (int16_t)kind;
	t.mb = (int16_t)prof_g.mb;
	t.stack = prof_ctx.opt.stacks ? prof_stack_capture(2) : 0;
	t.t0 = clock_ns();
	return t;
}

/* The record of a range that ends at `now`. */
static void range_rec(const struct prof_tok *t, int64_t now, struct prof_rec *out)
{
	struct prof_rec r;
	r.u.e.t0 = t->t0 - prof_ctx.t0_ns;
	r.u.e.dur = now - t->t0;
	r.u.e.name = t->name;
	r.u.e.site = t->site;
	r.u.e.amount = t->amount;
	r.u.e.seq = t->seq;
	r.u.e.stack = t->stack;
	r.arg = t->arg;
	r.comm_id = t->comm_id;
	r.step = (int32_t)prof_g.step;
	r.mb = t->mb;
	r.type = REC_RANGE;
	r.kind = (uint8_t)t->kind;
	*out = r;
}

void prof__end(struct prof_tok *t)
{
	int64_t now = clock_ns();
	if (prof_ctx.initialized && !prof_ctx.failed) {
		struct prof_rec r;
		range_rec(t, now, &r);
		prof_push(&r);
	}
	t->t0 = 0;
}

/* The lane's ring (lane_lock held), registered on first use in this profiler generation. */
static struct prof_ring *lane_ring(const char *lane)
{
	int i;
	for (i = 0; i < prof_ctx.nlanes; i++)
		if (prof_ctx.lanes[i].name == lane || !strcmp(prof_ctx.lanes[i].name, lane))
			break;
	if (i == prof_ctx.nlanes) {
		if (i == (int)(sizeof prof_ctx.lanes / sizeof prof_ctx.lanes[0]))
			return NULL;
		prof_ctx.lanes[i].name = lane;
		prof_ctx.lanes[i].ring = NULL;
		prof_ctx.nlanes++;
	}
	if (!prof_ctx.lanes[i].ring || prof_ctx.lanes[i].gen != prof_ctx.gen) {
		prof_ctx.lanes[i].ring = ring_register(lane);
		prof_ctx.lanes[i].gen = prof_ctx.gen;
	}
	return prof_ctx.lanes[i].ring;
}

void prof__lane_end(struct prof_tok *t, const char *lane)
{
	prof__lane_end_queued(t, lane, 0, NULL);
}

void prof__lane_end_queued(struct prof_tok *t, const char *lane, int64_t queue_ns, const char *algo)
{
	int64_t now = clock_ns();
	if (lane) {
		struct prof_rec r;
		range_rec(t, now, &r);
		pthread_mutex_lock(&prof_ctx.lane_lock);   /* prof_shutdown turns the profiler off under it */
		struct prof_ring *ring = __atomic_load_n(&prof_ctx.initialized, __ATOMIC_ACQUIRE) && !prof_ctx.failed
						 ? lane_ring(lane) : NULL;
		if (ring) {
			ring_push(ring, &r);
			if (queue_ns > 0 || algo) {
				r.type = REC_QUEUE;
				r.u.e.amount = queue_ns > 0 ? queue_ns : 0;
				r.u.e.site = algo;
				ring_push(ring, &r);
			}
		}
		pthread_mutex_unlock(&prof_ctx.lane_lock);
	}
	t->t0 = 0;
}

struct prof_tok prof__mb_begin(int mb)
{
	prof_g.mb = mb;
	return prof__begin(DB_KIND_MICROBATCH, "microbatch", NULL, 0, mb, -1, -1);
}

void prof__mem(int cat, int64_t bytes, const void *ptr)
{
	(void)ptr;
	if (cat < 0 || cat >= DB_MEM_COUNT)
		cat = DB_MEM_OTHER;
	int64_t in_use = __atomic_add_fetch(&prof_ctx.mem_in_use[cat], bytes, __ATOMIC_RELAXED);
	if (!prof_on())
		return;
	struct prof_rec r;
	memset(&r, 0, sizeof r);
	r.u.e.t0 = clock_ns() - prof_ctx.t0_ns;
	r.u.e.amount = bytes;
	r.u.e.seq = in_use;
	r.u.e.stack = prof_ctx.opt.stacks ? prof_stack_capture(2) : 0;
	r.arg = cat;
	r.step = (int32_t)prof_g.step;
	r.type = REC_MEM;
	prof_push(&r);
}

void prof__counter(const char *name, double value)
{
	struct prof_rec r;
	memset(&r, 0, sizeof r);
	r.u.e.t0 = clock_ns() - prof_ctx.t0_ns;
	r.u.e.name = name ? name : "?";
	memcpy(&r.u.e.amount, &value, sizeof value);
	r.step = (int32_t)prof_g.step;
	r.type = REC_COUNTER;
	prof_push(&r);
}

/* ---------------------------------------------------------------------------------------- */
/* steps and the schedule (called from the training thread) */

void prof_step_begin(int64_t step)
{
	if (!prof_ctx.initialized)
		return;
	if (prof_ctx.step_open)
		prof_step_end();
	prof_g.step = step;
	int on = !prof_ctx.failed;
	if (on && prof_ctx.has_sched)
		on = prof_schedule_action(&prof_ctx.sched, step) != PROF_NONE;
	__atomic_store_n(&prof_g.on, on, __ATOMIC_RELAXED);
	prof_ctx.step_tok = prof_range_begin_kind(DB_KIND_STEP, "step", NULL);
	prof_ctx.step_tok.arg = -1;
	prof_ctx.step_open = 1;
}

void prof_step_end(void)
{
	if (!prof_ctx.step_open)
		return;
	prof_ctx.step_open = 0;
	prof_range_end(&prof_ctx.step_tok);
}

/* ---------------------------------------------------------------------------------------- */

const char *prof_intern(const char *s)
{
	if (!s)
		return "?";
	int was = prof_lock();
	const char *res = NULL;
	for (int i = 0; i < prof_ctx.ninterned; i++)
		if (!strcmp(prof_ctx.interned[i], s)) {
			res = prof_ctx.interned[i];
			break;
		}
	if (!res) {
		if (prof_ctx.ninterned == prof_ctx.capinterned) {
			int nc = prof_ctx.capinterned ? prof_ctx.capinterned * 2 : 64;
			char **n2 = realloc(prof_ctx.interned, (size_t)nc * sizeof *n2);
			if (n2) {
				prof_ctx.interned = n2;
				prof_ctx.capinterned = nc;
			}
		}
		char *c = prof_ctx.ninterned < prof_ctx.capinterned ? strdup(s) : NULL;
		if (c)
			prof_ctx.interned[prof_ctx.ninterned++] = c;
		res = c ? c : "?";
	}
	prof_unlock(was);
	return res;
}

void prof_comm_register(int comm_id, const char *name, int size, int rank_in_comm)
{
	int was = prof_lock();
	int i;
	for (i = 0; i < prof_ctx.ncomms; i++)
		if (prof_ctx.comms[i].id == comm_id)
			break;
	/* one communicator per name: a grid re-built by comm_set_grid replaces the rank's earlier
	 * "dp"/"tp"/"pp" (db_put_comm drops the old row if it was written already) */
	if (i == prof_ctx.ncomms && name)
		for (i = 0; i < prof_ctx.ncomms; i++)
			if (!strcmp(prof_ctx.comms[i].name, name))
				break;
	if (i == PROF_MAX_COMMS && !prof_ctx.comms_full) {
		prof_ctx.comms_full = 1;
		log_warn("profiler: more than %d communicators; '%s' and later ones are not described (their calls "
			 "are recorded, their members unknown)", PROF_MAX_COMMS, name ? name : "?");
	}
	if (i < PROF_MAX_COMMS) {
		if (i == prof_ctx.ncomms)
			prof_ctx.ncomms++;
		prof_ctx.comms[i].id = comm_id;
		prof_ctx.comms[i].size = size;
		prof_ctx.comms[i].rank_in = rank_in_comm;
		prof_ctx.comms[i].name = name ? name : "?";
		prof_ctx.comms[i].written = 0;
	}
	prof_unlock(was);
}

void prof_get_stats(struct prof_stats *out)
{
	memset(out, 0, sizeof *out);
	int n = __atomic_load_n(&prof_ctx.nrings, __ATOMIC_ACQUIRE);
	for (int i = 0; i < n; i++) {
		struct prof_ring *r = prof_ctx.rings[i];
		out->events += __atomic_load_n(&r->pushed, __ATOMIC_RELAXED);
		out->dropped += __atomic_load_n(&r->dropped, __ATOMIC_RELAXED);
	}
	out->written = __atomic_load_n(&prof_ctx.written, __ATOMIC_RELAXED);
	out->detail_skipped = __atomic_load_n(&prof_ctx.detail_skipped, __ATOMIC_RELAXED);
	out->hook_ns = (int64_t)((double)out->events * prof_ctx.hook_cost_ns);
	out->writer_ns = __atomic_load_n(&prof_ctx.writer_ns, __ATOMIC_RELAXED);
	out->writer_cpu_ns = __atomic_load_n(&prof_ctx.writer_cpu_ns, __ATOMIC_RELAXED);
	out->threads = n;
	out->failed = __atomic_load_n(&prof_ctx.failed, __ATOMIC_RELAXED);
}

int prof_initialized(void)
{
	return prof_ctx.initialized;
}

void prof_rank_db_path(const char *run_dir, int rank, char *buf, size_t n)
{
	snprintf(buf, n, "%s/rank-%05d.db", run_dir, rank);
}
