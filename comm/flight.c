/* comm/flight.c — the flight recorder: a ring of the last N operations of this rank, its JSON dump
 * (written with async-signal-safe calls only, so the same code serves the watchdog, SIGUSR1 and a
 * fatal signal), and the signal handlers that trigger dumps.
 *
 * The one process-wide variable here, `sig_comm`, is unavoidable: a signal handler has no other
 * way to find the struct comm. It is set by comm_init (first comm only) and cleared by
 * comm_finalize. */
#include "comm/impl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct comm *volatile sig_comm;
static struct sigaction old_act[NSIG];
static const int DUMP_SIGNALS[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM };
#define NDUMP_SIGNALS (int)(sizeof DUMP_SIGNALS / sizeof DUMP_SIGNALS[0])
static char altstack[1 << 16];

int comm_flight_alloc(struct comm *c)
{
	if (c->flight_size <= 0)
		return 0;
	c->ring = calloc((size_t)c->flight_size, sizeof *c->ring);
	if (!c->ring)
		return ascent_error(ASCENT_ENOMEM, "out of memory for a flight recorder of %lld entries "
				    "(lower ASCENT_FLIGHT_SIZE)", (long long)c->flight_size);
	return 0;
}

void comm_flight_free(struct comm *c)
{
	free(c->ring);
	c->ring = NULL;
}

int64_t comm_flight_begin(struct comm *c, int kind, int op, int64_t seq, int dtype, int64_t count, int64_t bytes,
		     int peer)
{
	int64_t idx = ++c->next_op_index;
	if (!c->ring)
		return idx;
	struct flight_entry *e = &c->ring[idx % c->flight_size];
	atomic_store(&e->state, FL_ENQUEUED);
	e->op_index = idx;
	e->comm_id = c->g[kind].id;
	e->seq = seq;
	e->count = count;
	e->bytes = bytes;
	e->peer = peer;
	e->kind = (unsigned char)kind;
	e->op = (unsigned char)op;
	e->dtype = (unsigned char)dtype;
	e->t_enq = comm_flight_now();
	e->t_start = e->t_end = 0;
	return idx;
}

void comm_flight_set_state(struct comm *c, int64_t op_index, int state, int64_t t)
{
	if (!c->ring)
		return;
	struct flight_entry *e = &c->ring[op_index % c->flight_size];
	if (e->op_index != op_index)
		return; /* overwritten by newer entries while in flight */
	if (state == FL_STARTED)
		e->t_start = t ? t : e->t_enq;
	else
		e->t_end = t ? t : comm_flight_now();
	atomic_store_explicit(&e->state, state, memory_order_release);   /* after its time: a plain store on x86 */
}

/* ---------------------------------------------------------------------------------------- */
/* An async-signal-safe buffered writer: write(2) only, our own number formatting. */

struct fw {
	int fd, err;
	size_t n;
	char buf[8192];
};

static void fw_flush(struct fw *w)
{
	size_t off = 0;
	while (off < w->n && !w->err) {
		ssize_t k = write(w->fd, w->buf + off, w->n - off);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			w->err = errno;
			break;
		}
		off += (size_t)k;
	}
	w->n = 0;
}

static void fw_ch(struct fw *w, char ch)
{
	if (w->n == sizeof w->buf)
		fw_flush(w);
	w->buf[w->n++] = ch;
}

static void fw_raw(struct fw *w, const char *s)
{
	while (*s)
		fw_ch(w, *s++);
}

static void fw_i64(struct fw *w, int64_t v)
{
	char tmp[24];
	int n = 0;
	uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		fw_ch(w, '-');
	while (n)
		fw_ch(w, tmp[--n]);
}

static void fw_str(struct fw *w, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	fw_ch(w, '"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if (ch == '"' || ch == '\\') {
			fw_ch(w, '\\');
			fw_ch(w, (char)ch);
		} else if (ch < 0x20 || ch >= 0x7f) {
			fw_raw(w, "\\u00");
			fw_ch(w, hex[ch >> 4]);
			fw_ch(w, hex[ch & 15]);
		} else {
			fw_ch(w, (char)ch);
		}
	}
	fw_ch(w, '"');
}

static void fw_key(struct fw *w, const char *k)
{
	fw_str(w, k);
	fw_ch(w, ':');
}

static void fw_kv_i64(struct fw *w, const char *k, int64_t v, int comma)
{
	fw_key(w, k);
	fw_i64(w, v);
	if (comma)
		fw_ch(w, ',');
}

static void fw_kv_str(struct fw *w, const char *k, const char *v, int comma)
{
	fw_key(w, k);
	fw_str(w, v);
	if (comma)
		fw_ch(w, ',');
}

static void write_doc(struct fw *w, struct comm *c, const char *reason)
{
	fw_ch(w, '{');
	fw_kv_i64(w, "version", 1, 1);
	fw_kv_i64(w, "rank", c->world_rank, 1);
	fw_kv_i64(w, "world_size", c->world_size, 1);
	fw_kv_i64(w, "pid", (int64_t)getpid(), 1);
	fw_kv_str(w, "host", c->host, 1);
	if (c->hosts) {
		fw_key(w, "hosts");
		fw_ch(w, '[');
		for (int i = 0; i < c->world_size; i++) {
			if (i)
				fw_ch(w, ',');
			fw_str(w, c->hosts[i]);
		}
		fw_raw(w, "],");
	}
	fw_kv_str(w, "reason", reason, 1);
	fw_kv_i64(w, "dump_ns", clock_ns(), 1);
	fw_kv_i64(w, "dump_utc_ns", clock_utc_ns(), 1);
	int64_t ms = (int64_t)(c->timeout_s * 1000 + 0.5);
	fw_key(w, "timeout_s");
	fw_i64(w, ms / 1000);
	fw_ch(w, '.');
	fw_ch(w, (char)('0' + ms / 100 % 10));
	fw_ch(w, (char)('0' + ms / 10 % 10));
	fw_ch(w, (char)('0' + ms % 10));
	fw_ch(w, ',');
	fw_kv_i64(w, "flight_size", c->flight_size, 1);
	int64_t last = c->next_op_index;
	fw_kv_i64(w, "dropped", last > c->flight_size ? last - c->flight_size : 0, 1);
	fw_raw(w, "\n\"grid\":{");
	fw_kv_i64(w, "dp", c->dp, 1);
	fw_kv_i64(w, "tp", c->tp, 1);
	fw_kv_i64(w, "pp", c->pp, 1);
	fw_kv_i64(w, "dp_rank", c->dp_rank, 1);
	fw_kv_i64(w, "tp_rank", c->tp_rank, 1);
	fw_kv_i64(w, "pp_rank", c->pp_rank, 0);
	fw_raw(w, "},\n\"comms\":[");
	for (int k = 0; k < COMM_NKINDS; k++) {
		const struct comm_group *g = &c->g[k];
		fw_raw(w, k ? ",\n{" : "\n{");
		fw_kv_str(w, "kind", comm_kind_name((enum comm_kind)k), 1);
		fw_kv_i64(w, "id", g->id, 1);
		fw_kv_i64(w, "rank", g->rank, 1);
		fw_kv_i64(w, "size", g->size, 1);
		fw_key(w, "ranks");
		fw_ch(w, '[');
		for (int i = 0; g->ranks && i < g->size; i++) {
			if (i)
				fw_ch(w, ',');
			fw_i64(w, g->ranks[i]);
		}
		fw_raw(w, "],");
		fw_kv_i64(w, "last_enqueued", g->last_enq, 1);
		fw_kv_i64(w, "last_started", g->last_start, 1);
		fw_kv_i64(w, "last_completed", g->last_done, 0);
		fw_ch(w, '}');
	}
	fw_raw(w, "],\n\"entries\":[");
	int first = 1;
	int64_t from = c->ring && last > c->flight_size ? last - c->flight_size + 1 : 1;
	for (int64_t i = from; c->ring && i <= last; i++) {
		const struct flight_entry *e = &c->ring[i % c->flight_size];
		if (e->op_index != i)
			continue;
		int st = atomic_load(&e->state);
		fw_raw(w, first ? "\n{" : ",\n{");
		first = 0;
		fw_kv_i64(w, "op_index", e->op_index, 1);
		fw_kv_str(w, "comm", comm_kind_name((enum comm_kind)e->kind), 1);
		fw_kv_i64(w, "comm_id", e->comm_id, 1);
		fw_kv_i64(w, "seq", e->seq, 1);
		fw_kv_i64(w, "p2p", e->op == OP_SEND || e->op == OP_RECV, 1);
		fw_kv_str(w, "op", comm_op_name(e->op), 1);
		fw_kv_str(w, "dtype", comm_dtype_name(e->dtype), 1);
		fw_kv_i64(w, "count", e->count, 1);
		fw_kv_i64(w, "bytes", e->bytes, 1);
		fw_kv_i64(w, "peer", e->peer, 1);
		fw_kv_str(w, "state", comm_state_name(st), 1);
		fw_kv_i64(w, "enqueued_ns", e->t_enq, 1);
		fw_kv_i64(w, "started_ns", e->t_start, 1);
		fw_kv_i64(w, "completed_ns", e->t_end, 0);
		fw_ch(w, '}');
	}
	fw_raw(w, "\n]}\n");
}

int comm_flight_write(struct comm *c, const char *reason, int durable)
{
	if (!c->dump_path[0])
		return ASCENT_EUSAGE;
	/* RUN and RUN/flight; mkdir is async-signal-safe */
	char dir[sizeof c->dump_path];
	size_t n = strlen(c->dump_path);
	memcpy(dir, c->dump_path, n + 1);
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = 0;
		char *up = strrchr(dir, '/');
		if (up) {
			*up = 0;
			mkdir(dir, 0777);
			*up = '/';
		}
		mkdir(dir, 0777);
	}
	int fd = open(c->dump_tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return ASCENT_EIO;
	static struct fw w; /* static: a signal handler's stack may be the small alternate one */
	w.fd = fd;
	w.err = 0;
	w.n = 0;
	write_doc(&w, c, reason);
	fw_flush(&w);
	int err = w.err;
	if (durable && fsync(fd) && !err)
		err = errno;
	close(fd);
	if (err || rename(c->dump_tmp, c->dump_path)) {
		unlink(c->dump_tmp);
		return ASCENT_EIO;
	}
	return 0;
}

int comm_flight_dump_locked(struct comm *c, const char *reason, int durable)
{
	if (!c->dump_path[0])
		return ascent_error(ASCENT_EUSAGE, "no run directory for flight-recorder dumps (call comm_set_run_dir)");
	if (c->run_dir) {
		char d[4200];
		snprintf(d, sizeof d, "%s/flight", c->run_dir);
		int rc = fs_mkdir_p(d);
		if (rc)
			return rc;
	}
	if (atomic_exchange(&c->dumping, 1))
		return ascent_error(ASCENT_EIO, "a flight-recorder dump is already being written");
	pthread_mutex_lock(&c->lock);
	int rc = comm_flight_write(c, reason, durable);
	pthread_mutex_unlock(&c->lock);
	atomic_store(&c->dumping, 0);
	if (rc)
		return ascent_error(ASCENT_EIO, "cannot write the flight-recorder dump '%s': %s", c->dump_path,
				    strerror(errno));
	return 0;
}

int comm_flight_dump(struct comm *c, const char *reason)
{
	return comm_flight_dump_locked(c, reason, 1);
}

/* ---------------------------------------------------------------------------------------- */
/* Signals */

static const char *sig_reason(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	case SIGTERM: return "SIGTERM";
	default: return "signal";
	}
}

static void on_usr1(int sig)
{
	(void)sig;
	int saved = errno;
	struct comm *c = sig_comm;
	if (c) {
		atomic_store(&c->usr1, 1);
		sem_post(&c->wake); /* async-signal-safe; the watchdog thread writes the dump */
	}
	errno = saved;
}

static void on_fatal(int sig)
{
	struct comm *c = sig_comm;
	if (c && atomic_exchange(&c->final_dumped, 1)) {
		/* the watchdog is writing its timeout dump: give it up to 0.8 s before dying */
		for (int i = 0; i < 160 && !atomic_load(&c->final_done); i++) {
			struct timespec ts = { 0, 5000000 };
			nanosleep(&ts, NULL);
		}
	} else if (c && !atomic_exchange(&c->dumping, 1)) {
		static const char pre[] = "ascent: fatal signal, writing the flight recorder\n";
		if (write(2, pre, sizeof pre - 1) < 0) {
		}
		/* no lock (best effort, see comm.h) and no fsync: the launcher sends SIGKILL one second
		 * after SIGTERM, and the page cache outlives the process anyway */
		comm_flight_write(c, sig_reason(sig), 0);
		atomic_store(&c->dumping, 0);
	}
	/* hand the signal to whoever had it before (MPI's handler or the default action) */
	sigaction(sig, &old_act[sig], NULL);
	raise(sig);
}

int comm_flight_signals_install(struct comm *c)
{
	if (sig_comm)
		return 0; /* a second struct comm in this process: the first keeps the handlers */
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack, .ss_flags = 0 };
	sigaltstack(&ss, NULL);
	sig_comm = c;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_usr1;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGUSR1, &sa, &old_act[SIGUSR1]))
		return ascent_error(ASCENT_EIO, "cannot install the SIGUSR1 handler: %s", strerror(errno));
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_ONSTACK;
	for (int i = 0; i < NDUMP_SIGNALS; i++)
		if (sigaction(DUMP_SIGNALS[i], &sa, &old_act[DUMP_SIGNALS[i]]))
			return ascent_error(ASCENT_EIO, "cannot install the %s handler: %s", sig_reason(DUMP_SIGNALS[i]),
					    strerror(errno));
	return 0;
}

void comm_flight_signals_restore(struct comm *c)
{
	if (sig_comm != c)
		return;
	sigaction(SIGUSR1, &old_act[SIGUSR1], NULL);
	for (int i = 0; i < NDUMP_SIGNALS; i++)
		sigaction(DUMP_SIGNALS[i], &old_act[DUMP_SIGNALS[i]], NULL);
	sig_comm = NULL;
}
