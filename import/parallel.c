/* import/parallel.c — `ascent import -j N`: workers (processes) import parts, this process combines
 * them (import/part.h has the design). */
#include "import/part.h"

#include "common/common.h"
#include "db/db.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What a worker tells its parent, in memory both share. */
struct slot {
	int64_t progress[3];     /* bytes read, events, files read (imp_opts.progress) */
	int done;                /* 1: the worker wrote rc and msg */
	int rc;
	int failed_at;           /* the file number whose import failed */
	char msg[2048];
};

#define MAX_PARTS_PER_JOB 2   /* runs of files per worker, so that one slow run does not leave the others idle
			       * long; few, because every part but the first is copied once more (merged) */
#define MAX_PARTS 256         /* parts in all */

/* JOB_REMOTE: read by another process of a shared import (imp_spread); its outcome comes by exchange */
enum job_state { JOB_PENDING, JOB_RUNNING, JOB_OK, JOB_FAILED, JOB_GONE, JOB_REMOTE };

struct job {
	int *files;              /* file numbers, ascending */
	int nfiles;
	struct fs_tmp tmp;       /* its part */
	pid_t pid;
	enum job_state state;
	int *ranks;              /* JOB_OK: the ranks of its part */
	int nranks;
};

struct par {
	const struct imp_opts *o;
	const char *const *files;
	int n;
	struct job *jobs;
	int njobs, capjobs;
	struct slot *slots;      /* one per job (shared) */
	int nslots;
	int err_file;            /* the earliest file whose import failed; n: none */
	int err_rc;
	char err_msg[2048];
	int64_t total_bytes, *file_bytes;
	int64_t t_start, t_last;
	int printed;
	const struct imp_spread *sp;  /* NULL: this process alone */
	char parts_dir[4096];    /* a shared import's folder of named parts ("" until made) */
	int named_parts;         /* 1: job_start writes a named part in parts_dir (the shared round) */
};

static int job_add(struct par *p, const int *files, int nfiles)
{
	if (p->njobs == p->nslots)
		return ascent_error(ASCENT_EINTERNAL, "parallel import: more jobs than slots");
	int rc = ARRAY_GROW(p->jobs, p->njobs, p->capjobs, 16, "import jobs");
	if (rc)
		return rc;
	struct job *j = &p->jobs[p->njobs];
	memset(j, 0, sizeof *j);
	if (!(j->files = malloc((size_t)nfiles * sizeof *j->files)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	memcpy(j->files, files, (size_t)nfiles * sizeof *files);
	j->nfiles = nfiles;
	j->state = JOB_PENDING;
	p->njobs++;
	return 0;
}

/* The worker: import the job's files into its part, say how it went, exit. Never returns. */
static void worker(struct par *p, int k, pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a killed import leaves no worker behind */
	if (getppid() != parent)
		_exit(1);
	struct job *j = &p->jobs[k];
	struct slot *s = &p->slots[k];
	const char **list = malloc((size_t)j->nfiles * sizeof *list);
	int rc, at = 0;
	if (!list) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	} else {
		for (int i = 0; i < j->nfiles; i++)
			list[i] = p->files[j->files[i]];
		struct imp_opts po = *p->o;
		po.part_path = j->tmp.name;
		po.file_no = j->files;
		po.progress = s->progress;
		po.quiet = 1;
		po.jobs = 1;
		po.phases = NULL;
		rc = imp_run_files(&po, list, j->nfiles, &at);
	}
	s->rc = rc;
	s->failed_at = j->files[at < j->nfiles ? at : j->nfiles - 1];
	snprintf(s->msg, sizeof s->msg, "%s", rc ? ascent_errmsg() : "");
	__atomic_store_n(&s->done, 1, __ATOMIC_RELEASE);
	_exit(rc ? 1 : 0);
}

/* Part k of a shared import: a named file in the parts folder, which the other processes can open. */
static void part_name(const struct par *p, int k, char *out, size_t n)
{
	snprintf(out, n, "%s/part-%d.db", p->parts_dir, k);
}

static int part_open_named(struct par *p, int k, struct fs_tmp *t)
{
	memset(t, 0, sizeof *t);
	part_name(p, k, t->name, sizeof t->name);
	if (!(t->path = strdup(t->name)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	t->named = 1;
	t->fd = open(t->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (t->fd < 0) {
		int e = errno;
		free(t->path);
		t->path = NULL;
		return ascent_error(ASCENT_EIO, "cannot create the import part '%s': %s", t->name, strerror(e));
	}
	return 0;
}

/* Let go of a named part without removing it (the combining process reads it). */
static void part_forget(struct fs_tmp *t)
{
	t->named = 0;
	fs_tmp_abort(t);
}

static int job_start(struct par *p, int k)
{
	struct job *j = &p->jobs[k];
	int rc = p->named_parts ? part_open_named(p, k, &j->tmp) : fs_tmp_open(&j->tmp, p->o->out_path);
	if (rc)
		return rc;
	memset(&p->slots[k], 0, sizeof p->slots[k]);
	fflush(NULL);   /* nothing buffered is written twice */
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		fs_tmp_abort(&j->tmp);
		return ascent_error(ASCENT_EIO, "cannot start an import worker: %s", strerror(errno));
	}
	if (pid == 0)
		worker(p, k, parent);
	j->pid = pid;
	j->state = JOB_RUNNING;
	return 0;
}

static void human_bytes(double b, char *buf, size_t n)
{
	const char *u[] = { "B", "KB", "MB", "GB", "TB" };
	int i = 0;
	while (b >= 1000 && i < 4) {
		b /= 1000;
		i++;
	}
	snprintf(buf, n, i ? "%.1f %s" : "%.0f %s", b, u[i]);
}

/* The whole job's progress on stderr, at most once a second: files done, bytes, events, rate, ETA. */
static void progress(struct par *p)
{
	if (p->o->quiet)
		return;
	int64_t now = clock_ns();
	if (now - p->t_last < 1000000000LL)
		return;
	p->t_last = now;
	int64_t bytes = 0, events = 0;
	int files = 0;
	for (int k = 0; k < p->njobs; k++) {
		struct job *j = &p->jobs[k];
		if (j->state == JOB_PENDING || j->state == JOB_GONE)
			continue;
		bytes += __atomic_load_n(&p->slots[k].progress[0], __ATOMIC_RELAXED);
		events += __atomic_load_n(&p->slots[k].progress[1], __ATOMIC_RELAXED);
		files += (int)__atomic_load_n(&p->slots[k].progress[2], __ATOMIC_RELAXED);
	}
	double secs = (double)(now - p->t_start) / 1e9;
	char a[32], b[32];
	human_bytes((double)bytes, a, sizeof a);
	human_bytes((double)p->total_bytes, b, sizeof b);
	double eta = bytes > 0 && p->total_bytes > bytes ? secs * (double)(p->total_bytes - bytes) / (double)bytes : 0;
	fprintf(p->o->msgs ? p->o->msgs : stderr,
		"import: %d of %d files, %s of %s read, %" PRId64 " events, %.2fM events/s, ETA %.0f s\n", files, p->n, a, b,
		events, secs > 0 ? (double)events / secs / 1e6 : 0, eta);
	p->printed = 1;
}

/* A worker that ended: its part kept, or its failure recorded (the earliest file's wins). */
static void job_ended(struct par *p, int k, int status)
{
	struct job *j = &p->jobs[k];
	struct slot *s = &p->slots[k];
	if (j->state == JOB_GONE) {   /* stopped: a file before it failed */
		fs_tmp_abort(&j->tmp);
		return;
	}
	int ok = WIFEXITED(status) && WEXITSTATUS(status) == 0 && __atomic_load_n(&s->done, __ATOMIC_ACQUIRE) && !s->rc;
	if (ok) {
		j->state = JOB_OK;
		return;
	}
	j->state = JOB_FAILED;
	fs_tmp_abort(&j->tmp);
	int at = s->done ? s->failed_at : j->files[0];
	if (at >= p->err_file)
		return;
	p->err_file = at;
	if (s->done && s->rc) {
		p->err_rc = s->rc;
		snprintf(p->err_msg, sizeof p->err_msg, "%s", s->msg);
	} else {
		p->err_rc = ASCENT_EINTERNAL;
		if (WIFSIGNALED(status))
			snprintf(p->err_msg, sizeof p->err_msg, "the worker importing '%s' was killed by signal %d (%s)",
				 p->files[j->files[0]], WTERMSIG(status), strsignal(WTERMSIG(status)));
		else
			snprintf(p->err_msg, sizeof p->err_msg, "the worker importing '%s' ended without saying how (exit %d)",
				 p->files[j->files[0]], WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	}
	/* what comes after the failed file does not matter: as if the import had stopped there */
	for (int q = 0; q < p->njobs; q++)
		if (p->jobs[q].state == JOB_RUNNING && p->jobs[q].files[0] > at) {
			kill(p->jobs[q].pid, SIGKILL);
			p->jobs[q].state = JOB_GONE;
		}
}

/* Run the pending jobs, at most o->jobs at once, until none runs. A job whose first file comes after
 * a failed one is not started. Returns an error only for this process's own failures. */
static int run_jobs(struct par *p)
{
	int rc = 0;
	for (;;) {
		int running = 0;
		for (int k = 0; k < p->njobs; k++)
			running += p->jobs[k].state == JOB_RUNNING || (p->jobs[k].state == JOB_GONE && p->jobs[k].pid > 0);
		for (int k = 0; k < p->njobs && running < p->o->jobs && !rc; k++) {
			struct job *j = &p->jobs[k];
			if (j->state != JOB_PENDING)
				continue;
			if (j->files[0] > p->err_file) {
				j->state = JOB_GONE;
				continue;
			}
			rc = job_start(p, k);
			running += !rc;
		}
		if (rc && !running)
			return rc;
		if (!running)
			return 0;
		int status;
		pid_t pid = waitpid(-1, &status, WNOHANG);
		if (pid < 0 && errno != EINTR)
			return ascent_error(ASCENT_EIO, "waiting for the import workers: %s", strerror(errno));
		if (pid > 0) {
			for (int k = 0; k < p->njobs; k++)
				if (p->jobs[k].pid == pid) {
					p->jobs[k].pid = 0;
					if (p->jobs[k].state == JOB_RUNNING || p->jobs[k].state == JOB_GONE)
						job_ended(p, k, status);
				}
			continue;
		}
		progress(p);
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

static int rank_row(void *ud, const struct db_row *r)
{
	struct job *j = ud;
	int *r2 = realloc(j->ranks, (size_t)(j->nranks + 1) * sizeof *r2);
	if (!r2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	j->ranks = r2;
	j->ranks[j->nranks++] = (int)db_row_i64(r, 0);
	return 0;
}

static int part_ranks(struct job *j)
{
	struct db *db;
	int rc = db_open(j->tmp.name, DB_READ, &db);
	if (rc)
		return rc;
	free(j->ranks);
	j->ranks = NULL;
	j->nranks = 0;
	rc = db_query(db, "SELECT rank FROM rank ORDER BY rank", NULL, 0, rank_row, j, NULL);
	db_close(db);
	return rc;
}

static int cmp_rank_job(const void *x, const void *y)
{
	const int64_t *a = x, *b = y;
	return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] < b[1] ? -1 : a[1] > b[1]);
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

static int find(int *up, int x)
{
	while (up[x] != x)
		x = up[x] = up[up[x]];
	return x;
}

/* Parts that share a rank: their files again as one job (in order), the parts dropped. */
static int regroup(struct par *p, int *again)
{
	*again = 0;
	int nj = p->njobs, rc = 0;
	int *up = malloc((size_t)(nj ? nj : 1) * sizeof *up);
	if (!up)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int k = 0; k < nj; k++)
		up[k] = k;
	int64_t total = 0;
	for (int k = 0; k < nj && !rc; k++)
		if (p->jobs[k].state == JOB_OK && !(rc = part_ranks(&p->jobs[k])))
			total += p->jobs[k].nranks;
	int64_t (*rj)[2] = rc ? NULL : malloc((size_t)(total ? total : 1) * sizeof *rj);
	if (!rc && !rj)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	int64_t m = 0;
	for (int k = 0; k < nj && !rc; k++)
		for (int i = 0; p->jobs[k].state == JOB_OK && i < p->jobs[k].nranks; i++) {
			rj[m][0] = p->jobs[k].ranks[i];
			rj[m++][1] = k;
		}
	if (!rc)
		qsort(rj, (size_t)m, sizeof *rj, cmp_rank_job);
	for (int64_t a = 1; !rc && a < m; a++)
		if (rj[a][0] == rj[a - 1][0]) {
			int x = find(up, (int)rj[a][1]), y = find(up, (int)rj[a - 1][1]);
			if (x != y)
				up[x > y ? x : y] = x < y ? x : y;
		}
	free(rj);
	for (int root = 0; root < nj && !rc; root++) {
		if (find(up, root) != root || p->jobs[root].state != JOB_OK)
			continue;
		int nf = 0, members = 0;
		for (int k = 0; k < nj; k++)
			if (find(up, k) == root) {
				nf += p->jobs[k].nfiles;
				members++;
			}
		if (members < 2)
			continue;
		int *files = malloc((size_t)nf * sizeof *files);
		if (!files) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		nf = 0;
		for (int k = 0; k < nj; k++)
			if (find(up, k) == root) {
				for (int i = 0; i < p->jobs[k].nfiles; i++)
					files[nf++] = p->jobs[k].files[i];
				p->jobs[k].state = JOB_GONE;
				fs_tmp_abort(&p->jobs[k].tmp);
			}
		qsort(files, (size_t)nf, sizeof *files, cmp_int);
		rc = job_add(p, files, nf);
		free(files);
		*again = 1;
	}
	free(up);
	return rc;
}

/* A failed job's files before the earliest failure were read by it but are in no part: they may
 * hold a rank another part holds, whose conflict the sequential import would report first. Import
 * them again as a job of their own. */
static int retry_before_failure(struct par *p, int *more)
{
	*more = 0;
	int rc = 0, nj = p->njobs;
	for (int k = 0; k < nj && !rc; k++) {
		struct job *j = &p->jobs[k];
		if (j->state != JOB_FAILED)
			continue;
		j->state = JOB_GONE;
		int n = 0;
		while (n < j->nfiles && j->files[n] < p->err_file)
			n++;
		if (n) {
			rc = job_add(p, p->jobs[k].files, n);   /* job_add may move p->jobs */
			*more = 1;
		}
	}
	return rc;
}

/* The files in runs of consecutive files of about equal bytes, MAX_PARTS_PER_JOB per worker (a worker
 * that ends early takes the next run) and MAX_PARTS in all (each part costs a process, a descriptor
 * and a merge). Consecutive, so that a part's own order is the import's. */
static int split(struct par *p)
{
	int parts = p->o->jobs * MAX_PARTS_PER_JOB * (p->sp ? p->sp->size : 1);
	if (parts > MAX_PARTS)
		parts = MAX_PARTS;
	if (parts > p->n)
		parts = p->n;
	int rc = 0, first = 0;
	int64_t acc = 0;
	for (int i = 0; i < p->n && !rc; i++) {
		acc += p->file_bytes[i] > 0 ? p->file_bytes[i] : 1;
		int left_files = p->n - i - 1, left_parts = parts - p->njobs - 1;
		/* cut when this run holds its share of the bytes, or when every part left needs a file */
		int64_t share = (p->total_bytes + p->n) * (p->njobs + 1) / parts;
		if (i == p->n - 1 || (left_parts > 0 && (acc >= share || left_files == left_parts))) {
			int *files = malloc((size_t)(i - first + 1) * sizeof *files);
			if (!files)
				return ascent_error(ASCENT_ENOMEM, "out of memory");
			for (int k = first; k <= i; k++)
				files[k - first] = k;
			rc = job_add(p, files, i - first + 1);
			free(files);
			first = i + 1;
		}
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* an import shared by several processes (imp_spread) */

/* What each process tells the others after its share (the first exchange's reply). */
struct spread_report {
	int32_t rc;              /* this process's own failure (not a file's): fatal for the import */
	int32_t njobs;           /* the parts it cut the files into (all must agree) */
	int32_t err_file, err_rc; /* the earliest file whose import failed here (n: none) */
	char msg[2048];          /* rc's or err_rc's message */
	char dir[1024];          /* rank 0: the parts folder */
	int8_t state[MAX_PARTS]; /* its parts' states (enum job_state), others' JOB_REMOTE */
};

/* "OUT.parts-HOST-PID", a folder beside OUT; one left by a process of this host that no longer runs
 * is removed first (its host's name tells whose it is: another host's process ids mean nothing here). */
static int make_parts_dir(struct par *p)
{
	char host[256] = "localhost";
	gethostname(host, sizeof host - 1);
	char prefix[4200];
	snprintf(prefix, sizeof prefix, "%s.parts-%s-", p->o->out_path, host);
	const char *slash = strrchr(prefix, '/');
	char dir[4200];
	snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - prefix) : 1, slash ? prefix : ".");
	const char *base = slash ? slash + 1 : prefix;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		char *end;
		if (strncmp(e->d_name, base, strlen(base)))
			continue;
		long pid = strtol(e->d_name + strlen(base), &end, 10);
		if (*end || pid <= 0 || (kill((pid_t)pid, 0) == 0 || errno != ESRCH))
			continue;
		char stale[8400];
		snprintf(stale, sizeof stale, "%s/%s", dir, e->d_name);
		if (fs_rm_rf(stale) == 0)
			log_warn("removed '%s', left by an import (process %ld) that ended before finishing", stale, pid);
	}
	if (d)
		closedir(d);
	if ((size_t)snprintf(p->parts_dir, sizeof p->parts_dir, "%s%ld", prefix, (long)getpid()) >= sizeof p->parts_dir)
		return ascent_error(ASCENT_EUSAGE, "the output path '%s' is too long", p->o->out_path);
	if (mkdir(p->parts_dir, 0777))
		return ascent_error(ASCENT_EIO, "cannot make the import's parts folder '%s': %s", p->parts_dir, strerror(errno));
	return 0;
}

/* The shared round: every process reads its parts (k mod size), then all learn every part's outcome.
 * Rank 0 goes on with them (the local rounds and the combining); the others are done. */
static int spread_round(struct par *p)
{
	const struct imp_spread *sp = p->sp;
	struct spread_report *me = calloc(1, sizeof *me), *all = calloc((size_t)sp->size, sizeof *all);
	if (!me || !all) {
		free(me);
		free(all);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	/* 1. rank 0's folder, and the parts everyone cut */
	int rc = sp->rank == 0 ? make_parts_dir(p) : 0;
	me->rc = rc;
	me->njobs = p->njobs;
	snprintf(me->msg, sizeof me->msg, "%s", rc ? ascent_errmsg() : "");
	snprintf(me->dir, sizeof me->dir, "%s", p->parts_dir);
	rc = sp->allgather(sp->ctx, me, all, sizeof *me);
	for (int r = 0; r < sp->size && !rc; r++) {
		if (all[r].rc)
			rc = ascent_error(all[r].rc, "import process %d: %s", r, all[r].msg);
		else if (all[r].njobs != p->njobs)
			rc = ascent_error(ASCENT_EUSAGE, "import process %d cut the files into %d parts, process %d into %d: "
					  "do all of them see the same files (a folder every host shares)?",
					  r, all[r].njobs, sp->rank, p->njobs);
	}
	if (!rc && sp->rank)
		snprintf(p->parts_dir, sizeof p->parts_dir, "%s", all[0].dir);
	if (rc) {
		free(me);
		free(all);
		return rc;
	}
	/* 2. this process's parts */
	for (int k = 0; k < p->njobs; k++)
		if (k % sp->size != sp->rank)
			p->jobs[k].state = JOB_REMOTE;
	p->named_parts = 1;
	int own = run_jobs(p);
	p->named_parts = 0;
	memset(me, 0, sizeof *me);
	me->rc = own;
	me->njobs = p->njobs;
	me->err_file = p->err_file;
	me->err_rc = p->err_rc;
	snprintf(me->msg, sizeof me->msg, "%s", own ? ascent_errmsg() : p->err_msg);
	for (int k = 0; k < p->njobs; k++)
		me->state[k] = (int8_t)p->jobs[k].state;
	/* 3. everyone's outcome */
	rc = sp->allgather(sp->ctx, me, all, sizeof *me);
	for (int r = 0; r < sp->size && !rc; r++)
		if (all[r].rc)
			rc = ascent_error(all[r].rc, "import process %d: %s", r, all[r].msg);
	if (!rc && sp->rank == 0) {
		for (int r = 1; r < sp->size; r++)
			if (all[r].err_file < p->err_file) {
				p->err_file = all[r].err_file;
				p->err_rc = all[r].err_rc;
				snprintf(p->err_msg, sizeof p->err_msg, "%s", all[r].msg);
			}
		for (int k = 0; k < p->njobs && !rc; k++) {
			struct job *j = &p->jobs[k];
			if (j->state != JOB_REMOTE)
				continue;
			int st = all[k % sp->size].state[k];
			j->state = st == JOB_OK || st == JOB_FAILED ? st : JOB_GONE;
			if (st == JOB_OK) {   /* its part, by name */
				memset(&j->tmp, 0, sizeof j->tmp);
				j->tmp.fd = -1;
				j->tmp.named = 1;
				part_name(p, k, j->tmp.name, sizeof j->tmp.name);
				if (!(j->tmp.path = strdup(j->tmp.name)))
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			}
		}
	}
	if (sp->rank)   /* its parts stay for rank 0 */
		for (int k = 0; k < p->njobs; k++)
			part_forget(&p->jobs[k].tmp);
	free(me);
	free(all);
	return rc;
}

/* Rank 0, however the import ended: the parts folder and whatever is left in it. */
static void remove_parts_dir(struct par *p)
{
	if (p->sp && p->sp->rank == 0 && p->parts_dir[0])
		fs_rm_rf(p->parts_dir);
}

/* The end of a shared import: rank 0's result for everyone (the others return it, so every
 * process exits as rank 0 does; the message is rank 0's to print). */
static int spread_end(struct par *p, int rc)
{
	struct end {
		int32_t rc;
		char msg[2048];
	} me = { .rc = rc }, *all = calloc((size_t)p->sp->size, sizeof *all);
	if (!all)
		return rc ? rc : ascent_error(ASCENT_ENOMEM, "out of memory");
	snprintf(me.msg, sizeof me.msg, "%s", rc ? ascent_errmsg() : "");
	int x = p->sp->allgather(p->sp->ctx, &me, all, sizeof me);
	if (!x && p->sp->rank && all[0].rc)
		rc = ascent_error(all[0].rc, "the import failed (process 0 says why)");
	else if (!x && p->sp->rank)
		rc = 0;
	free(all);
	return x && !rc ? x : rc;
}

/* A shared import's first part is a named file of the parts folder: its copy becomes the output's
 * temporary (an fs_tmp of OUT), as a local part is. */
static int adopt_part(struct par *p, struct job *j)
{
	if (!p->parts_dir[0] || strncmp(j->tmp.name, p->parts_dir, strlen(p->parts_dir)))
		return 0;
	struct fs_tmp t;
	int rc = fs_tmp_open(&t, p->o->out_path);
	if (rc)
		return rc;
	rc = fs_copy_to_fd(j->tmp.name, t.fd);
	if (rc) {
		fs_tmp_abort(&t);
		return rc;
	}
	fs_tmp_abort(&j->tmp);
	j->tmp = t;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* combining */

struct call_row {
	int64_t key;
	char *group, *desc;
	int *members;            /* NULL: not given */
	int nmembers;
	int64_t n;
};

struct comm_use {
	int job, rank, world, g;  /* g: the part's own group index */
};

struct part_info {
	char **groups;           /* the part's group names by its index */
	int ngroups;
	int *map;                /* its index → the import's */
	int64_t events;
};

struct combine {
	struct par *p;
	struct imp *c;
	struct part_info *parts;  /* by job */
	struct call_row *calls;
	int ncalls, capcalls;
	struct comm_use *uses;
	int nuses, capuses;
	int world, nranks;
	int cur;                  /* the job being read */
};

static int file_row(void *ud, const struct db_row *r)
{
	struct combine *cb = ud;
	return imp_combine_file(cb->c, (int)db_row_i64(r, 0), db_row_is_null(r, 1) ? NULL : db_row_text(r, 1));
}

static int warn_row(void *ud, const struct db_row *r)
{
	struct combine *cb = ud;
	return imp_combine_warning(cb->c, (int)db_row_i64(r, 0), db_row_i64(r, 1), db_row_i64(r, 2),
				   db_row_is_null(r, 3) ? NULL : db_row_text(r, 3));
}

static int group_row(void *ud, const struct db_row *r)
{
	struct part_info *pi = &((struct combine *)ud)->parts[((struct combine *)ud)->cur];
	int g = (int)db_row_i64(r, 0);
	if (g != pi->ngroups)
		return ascent_error(ASCENT_EINTERNAL, "a part's groups are not numbered in order");
	char **g2 = realloc(pi->groups, (size_t)(g + 1) * sizeof *g2);
	if (!g2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	pi->groups = g2;
	if (!(pi->groups[g] = strdup(db_row_text(r, 1) ? db_row_text(r, 1) : "")))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	pi->ngroups++;
	return 0;
}

static int call_row(void *ud, const struct db_row *r)
{
	struct combine *cb = ud;
	struct part_info *pi = &cb->parts[cb->cur];
	int g = (int)db_row_i64(r, 1);
	if (g < 0 || g >= pi->ngroups)
		return ascent_error(ASCENT_EINTERNAL, "a part's group definition names group %d of %d", g, pi->ngroups);
	int rc = ARRAY_GROW(cb->calls, cb->ncalls, cb->capcalls, 64, "process group definitions");
	if (rc)
		return rc;
	struct call_row *c = &cb->calls[cb->ncalls];
	*c = (struct call_row){ .key = db_row_i64(r, 0), .nmembers = (int)db_row_i64(r, 4), .n = db_row_i64(r, 6) };
	c->group = strdup(pi->groups[g]);
	c->desc = db_row_is_null(r, 2) ? NULL : strdup(db_row_text(r, 2));
	if (!c->group || (!db_row_is_null(r, 2) && !c->desc))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc && db_row_i64(r, 3)) {   /* members given: "a,b,c" */
		c->members = malloc((size_t)(c->nmembers > 0 ? c->nmembers : 1) * sizeof *c->members);
		if (!c->members)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		const char *t = db_row_text(r, 5);
		for (int k = 0; !rc && k < c->nmembers; k++) {
			char *end;
			c->members[k] = (int)strtol(t ? t : "", &end, 10);
			t = *end == ',' ? end + 1 : end;
		}
	}
	cb->ncalls++;
	return rc;
}

static int use_row(void *ud, const struct db_row *r)
{
	struct combine *cb = ud;
	int rc = ARRAY_GROW(cb->uses, cb->nuses, cb->capuses, 64, "process group uses");
	if (rc)
		return rc;
	int g = (int)(db_row_i64(r, 1) - imp_combine_comm_id(0));
	if (g < 0 || g >= cb->parts[cb->cur].ngroups)
		return ascent_error(ASCENT_EINTERNAL, "a part's comm row names group %d", g);
	cb->uses[cb->nuses++] = (struct comm_use){ .job = cb->cur, .rank = (int)db_row_i64(r, 0),
						   .world = (int)db_row_i64(r, 2), .g = g };
	return 0;
}

static int rank_world_row(void *ud, const struct db_row *r)
{
	struct combine *cb = ud;
	int w = (int)db_row_i64(r, 1);
	if (w > cb->world)
		cb->world = w;
	cb->nranks++;
	return 0;
}

static int events_row(void *ud, const struct db_row *r)
{
	struct combine *cb = ud;
	cb->parts[cb->cur].events = db_row_is_null(r, 0) ? 0 : strtoll(db_row_text(r, 0), NULL, 10);
	return 0;
}

/* What part k recorded for the combining (import_part_* tables, sink.c). */
static int read_part(struct combine *cb, int k)
{
	struct db *db;
	int rc = db_open(cb->p->jobs[k].tmp.name, DB_READ, &db);
	if (rc)
		return rc;
	cb->cur = k;
	static const struct {
		const char *sql;
		db_query_cb cb;
	} Q[] = {
		{ "SELECT no, source FROM import_part_file", file_row },
		{ "SELECT w, n, key, at FROM import_part_warn", warn_row },
		{ "SELECT g, name FROM import_part_group ORDER BY g", group_row },
		{ "SELECT key, g, descr, has_members, nmembers, members, n FROM import_part_call", call_row },
		{ "SELECT c.rank, c.comm_id, coalesce(r.world, 0) FROM comm c LEFT JOIN import_part_rank r USING (rank)",
		  use_row },
		{ "SELECT rank, world FROM import_part_rank", rank_world_row },
		{ "SELECT value FROM meta WHERE key = 'import_events'", events_row },
	};
	for (size_t i = 0; i < sizeof Q / sizeof Q[0] && !rc; i++)
		rc = db_query(db, Q[i].sql, NULL, 0, Q[i].cb, cb, NULL);
	db_close(db);
	return rc;
}

static int cmp_call(const void *x, const void *y)
{
	const struct call_row *a = x, *b = y;
	return (a->key > b->key) - (a->key < b->key);
}

static int cmp_job_first(const void *x, const void *y, void *ud)
{
	const struct job *jobs = ud;
	return cmp_int(&jobs[*(const int *)x].files[0], &jobs[*(const int *)y].files[0]);
}

/* The comm rows again from the import-wide groups; the events of a part whose groups have other
 * numbers than the import's get the import's. */
static int fix_groups(struct combine *cb, struct db *out, const int *order, int nok)
{
	int rc = db_exec_sql(out, "DELETE FROM comm");
	for (int i = 0; i < cb->nuses && !rc; i++) {
		const struct comm_use *u = &cb->uses[i];
		rc = imp_combine_comm(cb->c, out, u->rank, u->world, cb->parts[u->job].map[u->g], cb->world);
	}
	if (!rc)
		rc = db_exec_sql(out, "CREATE TEMP TABLE import_cmap(old INTEGER PRIMARY KEY, new INTEGER)");
	for (int i = 0; i < nok && !rc; i++) {
		int k = order[i];
		struct part_info *pi = &cb->parts[k];
		int same = 1;
		for (int g = 0; g < pi->ngroups; g++)
			same &= pi->map[g] == g;
		if (same)
			continue;
		rc = db_exec_sql(out, "DELETE FROM temp.import_cmap");
		for (int g = 0; g < pi->ngroups && !rc; g++) {
			struct db_bind b[2] = { { .i = imp_combine_comm_id(g) }, { .i = imp_combine_comm_id(pi->map[g]) } };
			rc = db_query(out, "INSERT INTO temp.import_cmap VALUES (?1, ?2)", b, 2, NULL, NULL, NULL);
		}
		struct job *j = &cb->p->jobs[k];
		for (int r = 0; r < j->nranks && !rc; r++) {
			struct db_bind b = { .i = j->ranks[r] };
			rc = db_query(out, "UPDATE event SET comm_id = (SELECT new FROM temp.import_cmap WHERE old = event.comm_id)"
				      " WHERE rank = ?1 AND comm_id IN (SELECT old FROM temp.import_cmap)", &b, 1, NULL, NULL, NULL);
		}
	}
	if (!rc)
		rc = db_exec_sql(out, "DROP TABLE temp.import_cmap");
	return rc;
}

static int set_meta_i64(struct db *db, const char *key, int64_t v)
{
	char buf[32];
	snprintf(buf, sizeof buf, "%" PRId64, v);
	return db_set_meta(db, key, buf);
}

/* The parts (JOB_OK) into o->out_path, as the sequential import writes it. */
static int combine(struct par *p, int nsummary, const char *summary_first)
{
	struct combine cb = { .p = p };
	int *order = malloc((size_t)(p->njobs ? p->njobs : 1) * sizeof *order);
	cb.parts = calloc((size_t)(p->njobs ? p->njobs : 1), sizeof *cb.parts);
	int rc = !order || !cb.parts ? ascent_error(ASCENT_ENOMEM, "out of memory") : 0;
	int nok = 0;
	for (int k = 0; k < p->njobs && !rc; k++)
		if (p->jobs[k].state == JOB_OK)
			order[nok++] = k;
	if (!rc)
		qsort_r(order, (size_t)nok, sizeof *order, cmp_job_first, p->jobs);
	if (!rc)
		rc = imp_combine_new(p->o, p->files, p->n, &cb.c);
	if (!rc && nsummary)   /* counted before the first file, as imp_run does */
		rc = imp_combine_warning(cb.c, IMP_W_SUMMARY_FILE, nsummary, -1, summary_first);
	for (int i = 0; i < nok && !rc; i++)
		rc = read_part(&cb, order[i]);
	/* the groups' definitions in the order they were given over the files */
	if (!rc)
		qsort(cb.calls, (size_t)cb.ncalls, sizeof *cb.calls, cmp_call);
	for (int i = 0; i < cb.ncalls && !rc; i++) {
		struct call_row *c = &cb.calls[i];
		rc = imp_combine_call(cb.c, (int)(c->key >> 40), c->group, c->desc, c->members, c->nmembers, c->n);
	}
	for (int i = 0; i < nok && !rc; i++) {
		struct part_info *pi = &cb.parts[order[i]];
		if (!(pi->map = malloc((size_t)(pi->ngroups ? pi->ngroups : 1) * sizeof *pi->map)))
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		for (int g = 0; g < pi->ngroups && !rc; g++)
			if ((pi->map[g] = imp_combine_group(cb.c, pi->groups[g])) < 0)
				rc = ascent_error(ASCENT_EINTERNAL, "process group '%s' of a part was never defined", pi->groups[g]);
	}
	if (!rc && !cb.nranks)   /* as imp_finish says it */
		rc = ascent_error_ctx(ascent_error(ASCENT_EINPUT, "nothing to import: the inputs hold no events"),
				      "cannot write '%s'", p->o->out_path);
	if (!cb.world)   /* no source gave one: the ranks imported */
		cb.world = cb.nranks;
	int64_t nwarn = rc ? 0 : imp_combine_finish(cb.c), events = 0;
	for (int i = 0; i < nok; i++)
		events += cb.parts[order[i]].events;
	/* the output: the first part (an fs_tmp of OUT too) with the others merged into it, then what is
	 * the whole import's */
	if (!rc)
		rc = adopt_part(p, &p->jobs[order[0]]);
	struct fs_tmp *tmp = rc ? NULL : &p->jobs[order[0]].tmp;
	struct db *out = NULL;
	if (!rc)
		rc = db_open(tmp->name, DB_UPDATE, &out);
	if (!rc)
		rc = db_set_bulk(out);
	if (!rc)
		rc = db_exec_sql(out, "DROP TABLE import_part_file; DROP TABLE import_part_warn; DROP TABLE import_part_group;"
				 "DROP TABLE import_part_call; DROP TABLE import_part_rank;");
	for (int i = 1; i < nok && !rc; i++) {
		rc = db_merge_append(out, p->jobs[order[i]].tmp.name);
		fs_tmp_abort(&p->jobs[order[i]].tmp);   /* its disk space back at once */
		p->jobs[order[i]].state = JOB_GONE;
	}
	if (!rc)
		rc = db_begin(out);
	if (!rc)
		rc = fix_groups(&cb, out, order, nok);
	if (!rc)
		rc = db_exec_sql(out, "DELETE FROM run");
	if (!rc) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "ascent import (%d files)", p->n);
		rc = db_put_run(out, cmd, NULL, cb.world);
	}
	if (!rc)
		rc = set_meta_i64(out, "import_events", events);
	if (!rc)
		rc = set_meta_i64(out, "import_warnings", nwarn);
	if (!rc)
		rc = db_set_meta(out, "import_source", imp_combine_sources(cb.c));
	if (!rc)
		rc = db_commit(out);
	if (!rc)
		rc = imp_finish_tables(out, !p->o->no_view_tables, p->o->quiet ? NULL : p->o->msgs ? p->o->msgs : stderr);
	if (!rc)
		rc = db_exec_sql(out, "PRAGMA journal_mode = DELETE");
	if (rc && out)
		rc = ascent_error_ctx(rc, "cannot write '%s'", p->o->out_path);
	db_close(out);
	if (!rc)
		imp_combine_print(cb.c);
	if (!rc)
		rc = fs_tmp_commit(tmp);
	if (!rc && !p->o->quiet) {
		double secs = (double)(clock_ns() - p->t_start) / 1e9;
		char procs[48] = "";
		if (p->sp)
			snprintf(procs, sizeof procs, "%d processes x ", p->sp->size);
		fprintf(p->o->msgs ? p->o->msgs : stderr,
			"import: %" PRId64 " events of %d rank%s from %d file%s into %s in %.2f s (%.2fM events/s, %s%d workers)\n",
			events, cb.nranks, cb.nranks == 1 ? "" : "s", p->n, p->n == 1 ? "" : "s", p->o->out_path, secs,
			secs > 0 ? (double)events / secs / 1e6 : 0, procs, p->o->jobs);
	}
	for (int i = 0; i < cb.ncalls; i++) {
		free(cb.calls[i].group);
		free(cb.calls[i].desc);
		free(cb.calls[i].members);
	}
	free(cb.calls);
	free(cb.uses);
	for (int k = 0; cb.parts && k < p->njobs; k++) {
		for (int g = 0; g < cb.parts[k].ngroups; g++)
			free(cb.parts[k].groups[g]);
		free(cb.parts[k].groups);
		free(cb.parts[k].map);
	}
	free(cb.parts);
	free(order);
	imp_combine_free(cb.c);
	return rc;
}

int imp_run_parallel(const struct imp_opts *o, const char *const *files, int n, int nsummary, const char *summary_first)
{
	/* never over an input, checked before anything is read (imp_open's rule) */
	struct fs_output fo = { .cmd = "import", .option = "-o", .path = o->out_path, .inputs = files, .ninputs = n,
				.makes = FS_HOLDS_PROFILE };
	if (!o->out_path || !*o->out_path)
		return ascent_error(ASCENT_EUSAGE, "import needs an output: -o OUT.db");
	int rc = fs_output_check(&fo);
	if (rc)
		return rc;
	/* every part is an open descriptor until the combining: as many as the system allows */
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	struct par p = { .o = o, .files = files, .n = n, .err_file = n };
	p.nslots = 8 * MAX_PARTS;   /* the runs, then those imported again (regrouped, before a failure) */
	p.slots = mmap(NULL, (size_t)p.nslots * sizeof *p.slots, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p.slots == MAP_FAILED)
		return ascent_error(ASCENT_ENOMEM, "cannot share memory with the import workers: %s", strerror(errno));
	p.file_bytes = calloc((size_t)n, sizeof *p.file_bytes);
	if (!p.file_bytes) {
		munmap(p.slots, (size_t)p.nslots * sizeof *p.slots);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		struct stat st;
		if (stat(files[i], &st) == 0 && S_ISREG(st.st_mode))
			p.total_bytes += p.file_bytes[i] = st.st_size;
	}
	p.t_start = p.t_last = clock_ns();
	if (o->spread && o->spread->size > 1)
		p.sp = o->spread;
	rc = split(&p);
	if (p.sp) {   /* every process reads its share; then rank 0 alone goes on */
		int x = spread_round(&p);
		rc = rc ? rc : x;
	}
	/* until every file before the earliest failure is in a part of its own ranks */
	for (int round = 0; !rc && (!p.sp || p.sp->rank == 0); round++) {
		int more = 0;
		rc = run_jobs(&p);
		if (!rc)
			rc = retry_before_failure(&p, &more);
		if (!rc && !more)
			rc = regroup(&p, &more);
		if (!more)
			break;
		if (round == 64)
			rc = ascent_error(ASCENT_EINTERNAL, "parallel import: the parts did not settle");
	}
	if (!rc && p.err_file < n && (!p.sp || p.sp->rank == 0))
		rc = ascent_error(p.err_rc, "%s", p.err_msg);
	if (!rc && (!p.sp || p.sp->rank == 0))
		rc = combine(&p, nsummary, summary_first);
	for (int k = 0; k < p.njobs; k++) {
		if (p.jobs[k].pid > 0) {   /* only after an error of this process's own */
			kill(p.jobs[k].pid, SIGKILL);
			waitpid(p.jobs[k].pid, NULL, 0);
		}
		fs_tmp_abort(&p.jobs[k].tmp);
		free(p.jobs[k].files);
		free(p.jobs[k].ranks);
	}
	free(p.jobs);
	free(p.file_bytes);
	munmap(p.slots, (size_t)p.nslots * sizeof *p.slots);
	if (p.sp) {
		remove_parts_dir(&p);
		rc = spread_end(&p, rc);
	}
	return rc;
}
