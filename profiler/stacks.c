/* profiler/stacks.c — call stacks: capture with libunwind at range begin and allocation
 * (--profile-stacks), the SIGPROF sampler (--profile-sample HZ), and, on the writer side,
 * deduplication into stack/frame rows and symbolization (dladdr) at the end of the run. */
#define UNW_LOCAL_ONLY
#include "profiler/internal.h"

#include <dlfcn.h>
#include <errno.h>
#include <libunwind.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

extern __thread volatile int prof_tls_in_hook;

static uint64_t hash_ips(void *const *ip, int n)
{
	uint64_t h = 1469598103934665603ULL ^ (uint64_t)n;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint64_t)(uintptr_t)ip[i]) * 1099511628211ULL;
	return h ? h : 1;
}

/* Send a stack's frames as REC_STACK parts, unless this thread sent it already. */
static uint64_t send_stack(void *const *ip, int n)
{
	uint64_t h = hash_ips(ip, n);
	struct prof_rec r;
	memset(&r, 0, sizeof r);
	r.type = REC_STACK;
	r.arg = n;
	for (int p = 0; p * REC_STACK_IPS < n; p++) {
		int k = n - p * REC_STACK_IPS;
		if (k > REC_STACK_IPS)
			k = REC_STACK_IPS;
		r.u.s.hash = h;
		for (int i = 0; i < k; i++)
			r.u.s.ip[i] = (uint64_t)(uintptr_t)ip[p * REC_STACK_IPS + i];
		r.kind = (uint8_t)p;
		r.comm_id = k;
		prof_push(&r);
	}
	return h;
}

static __thread uint64_t tls_seen[1024];

uint64_t prof_stack_capture(int skip)
{
	void *ip[PROF_STACK_DEPTH + 4];
	int n = unw_backtrace(ip, PROF_STACK_DEPTH + skip);
	if (n <= skip)
		return 0;
	uint64_t h = hash_ips(ip + skip, n - skip);
	uint64_t *slot = &tls_seen[h & 1023];
	if (*slot != h) {
		send_stack(ip + skip, n - skip);
		*slot = h;
	}
	return h;
}

/* ---------------------------------------------------------------------------------------- */
/* SIGPROF sampler: a POSIX timer on the process's CPU-time clock (timer_create), not setitimer's
 * ITIMER_PROF. An interval timer survives execve: the new program would get SIGPROF before anything
 * installed a handler, and die of it ("Profiling timer expired"). A POSIX timer is deleted by
 * execve and not inherited by fork's child. Neither kind fires more often than the kernel's tick
 * (CONFIG_HZ: 250 a second on many kernels) however short its period; the expirations missed
 * between two signals are the signal's overrun count, so each sample stands for period × (1 +
 * overrun) of CPU time (its period_ns), and prof_sampler_result says what rate was achieved. */

static struct sigaction old_sa;
static int sampler_on;
static timer_t sampler_timer;
static int64_t sample_period_ns, sampler_cpu0_ns;
static int sampler_hz;
static int64_t sampler_signals;        /* atomics: signals handled, expirations they stand for */
static int64_t sampler_expirations;

static int64_t process_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_sigprof(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)uc;
	int64_t times = 1;
	if (si && si->si_code == SI_TIMER && si->si_overrun > 0)
		times += si->si_overrun;
	__atomic_add_fetch(&sampler_signals, 1, __ATOMIC_RELAXED);
	__atomic_add_fetch(&sampler_expirations, times, __ATOMIC_RELAXED);
	if (prof_tls_in_hook || !prof_ctx.initialized || !prof_g.on)
		return;
	void *ip[PROF_STACK_DEPTH + 4];
	int n = unw_backtrace(ip, PROF_STACK_DEPTH + 2);
	if (n <= 2)
		return;
	/* the thread's seen-set is not used here: a hook may be mid-update of it */
	uint64_t h = send_stack(ip + 2, n - 2);
	struct prof_rec r;
	memset(&r, 0, sizeof r);
	r.type = REC_SAMPLE;
	r.u.e.t0 = clock_ns() - prof_ctx.t0_ns;
	r.u.e.stack = h;
	r.u.e.amount = sample_period_ns * times;
	r.step = (int32_t)prof_g.step;
	prof_push(&r);
}

int prof_sampler_start(int hz)
{
	if (hz <= 0)
		return 0;
	if (hz > 10000)
		return ascent_error(ASCENT_EUSAGE, "--profile-sample %d is too high (at most 10000 Hz)", hz);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigprof;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, &old_sa) != 0)
		return ascent_error(ASCENT_EIO, "cannot install the SIGPROF sampler: %s", strerror(errno));
	struct sigevent ev;
	memset(&ev, 0, sizeof ev);
	ev.sigev_notify = SIGEV_SIGNAL;
	ev.sigev_signo = SIGPROF;
	if (timer_create(CLOCK_PROCESS_CPUTIME_ID, &ev, &sampler_timer) != 0) {
		int e = errno;
		sigaction(SIGPROF, &old_sa, NULL);
		return ascent_error(ASCENT_EIO, "cannot create the SIGPROF timer: %s", strerror(e));
	}
	sample_period_ns = 1000000000LL / hz;
	struct itimerspec it = { { 0, sample_period_ns }, { 0, sample_period_ns } };
	if (timer_settime(sampler_timer, 0, &it, NULL) != 0) {
		int e = errno;
		timer_delete(sampler_timer);
		sigaction(SIGPROF, &old_sa, NULL);
		return ascent_error(ASCENT_EIO, "cannot start the SIGPROF timer: %s", strerror(e));
	}
	if (!sampler_hz) {   /* the first start (not a restart after a failed exec) starts the count */
		sampler_cpu0_ns = process_cpu_ns();
		__atomic_store_n(&sampler_signals, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&sampler_expirations, 0, __ATOMIC_RELAXED);
	}
	sampler_hz = hz;
	sampler_on = 1;
	return 0;
}

/* Delete the timer, then take any SIGPROF it raised that is still pending, with the handler still
 * installed: a pending signal outlives execve, and would meet the new program's default action. */
static void sampler_disarm(void)
{
	timer_delete(sampler_timer);
	sigset_t prof, old;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, &old);
	struct timespec zero = { 0, 0 };
	while (sigtimedwait(&prof, NULL, &zero) == SIGPROF)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	sampler_on = 0;
}

void prof_block_sampler(void)
{
	sigset_t prof;
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
}

void prof_sampler_pause(void)
{
	if (sampler_on)
		sampler_disarm();
}

void prof_sampler_resume(void)
{
	if (sampler_hz && !sampler_on && prof_sampler_start(sampler_hz) != 0)
		log_warn("profiler: sampler not restarted: %s", ascent_errmsg());
}

int prof_sampler_result(struct prof_sampler_result *out)
{
	memset(out, 0, sizeof *out);
	if (!sampler_hz)
		return 0;
	out->hz = sampler_hz;
	out->signals = __atomic_load_n(&sampler_signals, __ATOMIC_RELAXED);
	out->expirations = __atomic_load_n(&sampler_expirations, __ATOMIC_RELAXED);
	out->cpu_ns = process_cpu_ns() - sampler_cpu0_ns;
	return 1;
}

void prof_sampler_stop(void)
{
	if (sampler_on) {
		sampler_disarm();
		sigaction(SIGPROF, &old_sa, NULL);
	}
	sampler_hz = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* writer side: hash → stack id; ip → frame id (the writer thread only) */

struct wstack {
	uint64_t hash;
	int64_t id;            /* 0 until complete */
	int n, got;
	uint64_t ip[PROF_STACK_DEPTH + 4];
};

static struct wstack *stk;
static size_t stk_cap, stk_n;
static int64_t next_stack_id = 1;

struct wframe {
	uint64_t ip;
	int64_t id;
};
static struct wframe *frm;
static size_t frm_cap, frm_n;
static int64_t next_frame_id = 1;
static uint64_t *pending;      /* hashes of stacks completed but not yet written */
static size_t npending, cappending;

void prof_stacks_reset(void)
{
	prof_elf_reset();
	free(stk);
	free(frm);
	free(pending);
	stk = NULL;
	frm = NULL;
	pending = NULL;
	stk_cap = stk_n = frm_cap = frm_n = npending = cappending = 0;
	next_stack_id = next_frame_id = 1;
}

int prof_stacks_resume(struct db *db)
{
	int64_t st = 0, fr = 0;
	int rc = db_max_stack_ids(db, &st, &fr);
	if (!rc) {
		next_stack_id = st + 1;
		next_frame_id = fr + 1;
	}
	return rc;
}

static struct wstack *stk_find(uint64_t h, int create)
{
	if (create && (stk_n + 1) * 2 > stk_cap) {
		size_t nc = stk_cap ? stk_cap * 2 : 1024;
		struct wstack *n2 = calloc(nc, sizeof *n2);
		if (!n2)
			return NULL;
		for (size_t i = 0; i < stk_cap; i++)
			if (stk[i].hash) {
				size_t j = stk[i].hash & (nc - 1);
				while (n2[j].hash)
					j = (j + 1) & (nc - 1);
				n2[j] = stk[i];
			}
		free(stk);
		stk = n2;
		stk_cap = nc;
	}
	if (!stk_cap)
		return NULL;
	size_t i = h & (stk_cap - 1);
	while (stk[i].hash && stk[i].hash != h)
		i = (i + 1) & (stk_cap - 1);
	if (stk[i].hash == h)
		return &stk[i];
	if (!create)
		return NULL;
	stk[i].hash = h;
	stk_n++;
	return &stk[i];
}

int prof_stack_add_part(const struct prof_rec *r)
{
	struct wstack *s = stk_find(r->u.s.hash, 1);
	if (!s)
		return 0;
	if (s->id)
		return 0;   /* complete already (another thread sent it too) */
	int part = r->kind, k = r->comm_id;
	s->n = r->arg > PROF_STACK_DEPTH + 4 ? PROF_STACK_DEPTH + 4 : r->arg;
	for (int i = 0; i < k; i++) {
		int at = part * REC_STACK_IPS + i;
		if (at < s->n)
			s->ip[at] = r->u.s.ip[i];
	}
	s->got += k;
	if (s->got >= s->n) {
		s->id = -(next_stack_id++);    /* negative: complete, not yet written */
		if (npending == cappending) {
			size_t nc = cappending ? cappending * 2 : 256;
			uint64_t *p2 = realloc(pending, nc * sizeof *p2);
			if (!p2)
				return 0;
			pending = p2;
			cappending = nc;
		}
		pending[npending++] = s->hash;
	}
	return 0;
}

int64_t prof_stack_id(uint64_t hash)
{
	if (!hash)
		return 0;
	struct wstack *s = stk_find(hash, 0);
	if (!s || !s->id)
		return 0;
	return s->id < 0 ? -s->id : s->id;
}

static int64_t frame_id(uint64_t ip, int *fresh)
{
	*fresh = 0;
	if ((frm_n + 1) * 2 > frm_cap) {
		size_t nc = frm_cap ? frm_cap * 2 : 1024;
		struct wframe *n2 = calloc(nc, sizeof *n2);
		if (!n2)
			return 0;
		for (size_t i = 0; i < frm_cap; i++)
			if (frm[i].id) {
				size_t j = (frm[i].ip * 0x9E3779B97F4A7C15ULL >> 20) & (nc - 1);
				while (n2[j].id)
					j = (j + 1) & (nc - 1);
				n2[j] = frm[i];
			}
		free(frm);
		frm = n2;
		frm_cap = nc;
	}
	size_t i = (ip * 0x9E3779B97F4A7C15ULL >> 20) & (frm_cap - 1);
	while (frm[i].id && frm[i].ip != ip)
		i = (i + 1) & (frm_cap - 1);
	if (!frm[i].id) {
		frm[i].ip = ip;
		frm[i].id = next_frame_id++;
		frm_n++;
		*fresh = 1;
	}
	return frm[i].id;
}

/* dladdr names the executable after argv[0] (relative, or a bare name found on PATH): its real
 * path instead, so that its file can be read for .symtab and the frame says where it came from. */
static const char *module_path(const Dl_info *di)
{
	static void *main_base;
	static char exe[4096];
	static int known;
	if (!known) {
		Dl_info m;
		if (dladdr((void *)(uintptr_t)getauxval(AT_ENTRY), &m))
			main_base = m.dli_fbase;
		ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
		exe[k > 0 ? k : 0] = 0;
		known = 1;
	}
	return di->dli_fbase == main_base && exe[0] ? exe : di->dli_fname;
}

static int put_frame(struct db *db, int64_t id, uint64_t ip, int symbolize)
{
	const char *sym = NULL, *mod = NULL;
	int64_t off = 0;
	Dl_info di;
	if (symbolize && dladdr((void *)(uintptr_t)ip, &di)) {
		sym = di.dli_sname;
		mod = module_path(&di);
		off = (int64_t)(ip - (uint64_t)(uintptr_t)(di.dli_sname ? di.dli_saddr : di.dli_fbase));
		uint64_t o2;
		const char *s2 = sym ? NULL : prof_elf_name(mod, (uint64_t)(uintptr_t)di.dli_fbase, ip, &o2);
		if (s2) {   /* not exported (static, or an executable without -rdynamic): its .symtab */
			sym = s2;
			off = (int64_t)o2;
		}
	}
	return db_put_frame(db, id, ip, sym, mod, off);
}

int prof_stacks_flush(struct db *db)
{
	int rc = 0;
	for (size_t p = 0; p < npending && !rc; p++) {
		struct wstack *s = stk_find(pending[p], 0);
		if (!s || s->id >= 0)
			continue;
		int64_t sid = -s->id;
		for (int d = 0; d < s->n && !rc; d++) {
			int fresh;
			int64_t fid = frame_id(s->ip[d], &fresh);
			if (!fid)
				return ascent_error(ASCENT_ENOMEM, "out of memory recording stacks");
			if (fresh)
				rc = put_frame(db, fid, s->ip[d], 0);
			if (!rc)
				rc = db_put_stack_frame(db, sid, d, fid);
		}
		s->id = sid;
	}
	npending = 0;
	return rc;
}

int prof_symbolize(struct db *db)
{
	int rc = 0;
	for (size_t i = 0; i < frm_cap && !rc; i++)
		if (frm[i].id)
			rc = put_frame(db, frm[i].id, frm[i].ip, 1);
	return rc;
}
