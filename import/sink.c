/* import/sink.c — the format-independent half of `ascent import` (import/import.h): the output
 * file, ranks and clocks, lanes, events (batched), collectives and their groups, memory, links,
 * arguments, counted warnings and progress. Sources (kineto.c, ...) only describe. */
#include "import/import.h"
#include "import/links.h"
#include "import/npu.h"

#include "common/common.h"
#include "db/db.h"
#include "import/part.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BATCH_EVENTS 16384       /* events per batch handed to the writer thread (sorted by key: the larger, the more local the inserts) */
#define BATCH_FLOWS 4096         /* links, and link ends staged for db_flow_pair, per batch */
#define BATCH_MEM 1024           /* memory records per batch */
#define BATCH_TEXT (4 << 20)     /* bytes of names and arguments per batch */
#define QUEUE 2                  /* batches waiting for the writer (memory stays bounded) */
#define COMM_ID_BASE 0x7e000000   /* imported groups: comm_id = base + index (docs/import.md) */
#define LANE_PENDING (-3)         /* a lane only a link has named so far */
#define ORIGIN_MARGIN_NS 60000000000LL   /* the rank's origin: 60 s before the first time seen */
#define KEY_FINISH (INT64_MAX / 2)   /* imp.wkey once the import finishes (+ 0: links paired, + 1: lanes dropped) */
#define CALL_KEY(file_no, n) ((int64_t)(file_no) * ((int64_t)1 << 40) + (n))   /* a group call's order */


struct lane {
	uint64_t key;
	int tid, device, stream;
	int64_t os_tid;
	int64_t events;           /* events given so far: the next one's ord */
	char *name;
};

struct span {                 /* one file's time span on its rank (stored ns) */
	int64_t lo, hi;
	char *file;
};

struct rank_state {
	int rank;
	int64_t origin;           /* the file clock's time stored as 0 */
	int64_t base;             /* the first file's base time (epoch ns), 0 none */
	int has_base;
	int world_size;
	int64_t pid;              /* the process id the source recorded, 0 unknown */
	char *backend;
	char *host;
	char *source;             /* the profiler that wrote its first file ("Kineto", ...), NULL unknown */
	struct lane *lanes;
	int nlanes, caplanes;
	int *slot;                /* open-addressing index into lanes by key */
	int nslot;
	struct span *spans;
	int nspans;
	int64_t end;              /* last stored time */
	int64_t min;              /* first stored time (< 0: shifted by imp_finish) */
	int64_t file_lo, file_hi; /* stored span of its events in the current file */
	unsigned char *groups;    /* groups[i]: the rank used group i */
	int ngroups;
};

/* A process group as first defined: members (when known) has nmembers entries. */
struct group {
	char *name, *desc;
	int *members;
	int nmembers;
	int64_t conflicts;        /* later definitions that disagreed (counted, the first kept) */
	int last_call;            /* a part's record: its last entry in imp.calls, −1 none */
};

/* A part of a parallel import records every group definition it is given (group_get's calls), run-length
 * coded per group, so the combining process replays them all in the order of the files. */
struct group_call {
	int g;
	char *desc;
	int *members;             /* NULL: not given */
	int nmembers;
	int64_t key;              /* CALL_KEY of its first */
	int64_t n;                /* equal calls in a row */
};

/* What the sources hand over, batched: the reading thread fills a batch, the writer thread
 * interns the names and inserts the rows, so parsing and SQLite run on two cores. A batch's text
 * (names, arguments) lives in its own arena; rows name it by offset. */
struct batch_mem {
	int rank, device;
	int64_t ts, bytes, in_use;
};

struct batch {
	struct db_event ev[BATCH_EVENTS];
	size_t name_at[BATCH_EVENTS], args_at[BATCH_EVENTS], args_len[BATCH_EVENTS];   /* args_len 0: none */
	int nev;
	struct db_flow link[BATCH_FLOWS];        /* links paired in memory (links.c) */
	int nlink;
	struct db_flow_end flow[BATCH_FLOWS];    /* ends staged for db_flow_pair */
	int nflow;
	struct batch_mem mem[BATCH_MEM];
	int nmem;
	char *text;
	size_t ntext, captext;
	/* the writer's scratch */
	struct db_arg_row arg[BATCH_EVENTS];
	int order[BATCH_EVENTS];
	struct db_event sorted[BATCH_EVENTS];
};

/* The writer thread and its queue: at most QUEUE full batches wait, plus one being written and one
 * being filled, so memory does not grow with the input. */
struct writer {
	pthread_t th;
	int started;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct batch *full[QUEUE];     /* FIFO */
	int nfull;
	struct batch *spare[QUEUE + 2];
	int nspare;
	int done;                      /* no more batches */
	int busy;                      /* writing a batch now (flush waits for it) */
	int rc;                        /* the first error; its message in msg */
	char msg[1024];
	int64_t busy_ns;               /* time spent writing batches (imp_phases) */
	int64_t wait_ns;               /* time the reading thread waited for a free batch */
	int64_t cpu_ns;                /* the writer thread's CPU time, when it ended */
};

struct imp {
	struct imp_opts o;
	char *out;
	struct fs_tmp tmp;        /* the output while it is written: gone with the process if interrupted */
	struct db *db;
	/* the current file */
	char *file;
	int64_t file_size;
	int nfiles;
	char sources[256];        /* the distinct imp_file_facts.source seen, ", "-separated */
	struct rank_state *cur;
	int last_stored;          /* imp_event_stored */
	/* all ranks */
	struct rank_state *ranks;
	int nranks;
	/* groups, shared by all ranks (so that comm_id matches across ranks) */
	struct group *groups;
	int ngroups, capgroups;
	int *gslot;               /* open-addressing index into groups by name */
	int ngslot;
	/* batches for the writer thread */
	struct batch *cur_batch;
	struct writer w;
	int64_t events;
	/* warnings */
	int64_t warn[IMP_W_COUNT];
	char *warn_where[IMP_W_COUNT];
	int warn_file[IMP_W_COUNT];   /* the file of the first (its index; nfiles: all of them) */
	char **file_source;           /* each file's format (imp_file_facts.source), by index */
	int nfile_source;
	/* progress */
	int64_t t_start, t_last, bytes_before;
	int64_t cpu_start;        /* the reading thread's CPU time at imp_open */
	int printed;
	int64_t total_bytes;
	struct links *pairing;    /* link ends paired in memory (links.c) */
	int64_t links;            /* links made (imp_finish) */
	/* the order of things across a parallel import's parts (import/part.h) */
	int ninputs;
	int file_no;              /* the current file's number among all the import's files */
	int64_t wkey;             /* now: 2 × file_no while reading it, + 1 after its end; KEY_FINISH + stage */
	int64_t warn_key[IMP_W_COUNT];   /* wkey at each warning's first */
	struct group_call *calls; /* a part's group definitions */
	int ncalls, capcalls;
	int64_t ncall;
	const char *const *files; /* combining: all the import's files, in order (not owned) */
};

static FILE *msgs(const struct imp *im)
{
	return im->o.msgs ? im->o.msgs : stderr;
}

static const char *const WARN_TEXT[IMP_W_COUNT] = {
	[IMP_W_NO_DUR] = "complete events without a duration (skipped)",
	[IMP_W_BAD_TIME] = "events with a negative, overflowing or unreadable time (skipped)",
	[IMP_W_BAD_TYPE] = "events with a known field of the wrong type (skipped)",
	[IMP_W_PHASE] = "events of a phase ascent does not keep (C, O, N, ...) or an unpaired begin/end (skipped)",
	[IMP_W_INSTANT] = "instant events that are not memory records (skipped)",
	[IMP_W_FLOW_CAT] = "links of an unknown category (skipped)",
	[IMP_W_FLOW_UNPAIRED] = "link ends without their partner or lane (skipped: a call that launches nothing, or a partner outside the file)",
	[IMP_W_NO_LAUNCH] = "device activities whose launching call is not in the file (kept, unlinked: the trace began after the launch)",
	[IMP_W_NO_NAME] = "events without a name (skipped)",
	[IMP_W_BASE_TIME] = "files of one rank with different base times (their times are not aligned)",
	[IMP_W_LATE_RANK] = "distributedInfo after traceEvents (rank taken from the file name or order)",
	[IMP_W_BAD_VALUE] = "impossible sizes (over 1 PiB) or base times (past 2116) (the value dropped, the record kept)",
	[IMP_W_GROUP_CONFLICT] = "process-group definitions that disagree with the group's first (events kept in the group, its first members kept)",
	[IMP_W_DERIVED] = "events the profiler derived from the others (torch_npu's Overlap Analysis, STEP_TIME beside ProfilerStep#N; skipped: ascent computes its own)",
	[IMP_W_TASK_TYPE] = "device tasks of a Task Type ascent's table does not list (kept as kernels)",
	[IMP_W_LINK_KIND] = "links of a kind ascent does not keep (torch_npu's async_npu operator → task, async_task_queue enqueue → dequeue; skipped)",
	[IMP_W_SUMMARY_FILE] = "files of a torch_npu output folder that summarize its trace (CSVs, communication*.json, analysis.db; not read)",
	[IMP_W_CATEGORY] = "events of a category ascent does not know (kept as plain ranges: no operator, kernel or step is read from them)",
	[IMP_W_COUNTER_PAIRS] = "files whose CUPTI counter ranges and cudaLaunchKernel calls differ in number (the counters kept, not paired with their launches: no operators)",
	[IMP_W_HOST_FROM_NAME] = "files whose host is read from their name ({host}_{pid}.{timestamp}.pt.trace.json, as torch's tensorboard_trace_handler names them; the trace names none)",
};

/* ---------------------------------------------------------------------------------------- */
/* the writer thread: interns names and inserts each batch while the source reads on */

static void batch_free(struct batch *b)
{
	if (b) {
		free(b->text);
		free(b);
	}
}

/* Copy s[0..n) and a NUL into the batch's text; *at: its offset. */
static int batch_text(struct batch *b, const char *s, size_t n, size_t *at)
{
	if (b->ntext + n + 1 > b->captext) {
		size_t nc = b->captext ? b->captext : 1 << 16;
		while (nc < b->ntext + n + 1)
			nc *= 2;
		char *t = realloc(b->text, nc);
		if (!t)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		b->text = t;
		b->captext = nc;
	}
	memcpy(b->text + b->ntext, s, n);
	b->text[b->ntext + n] = 0;
	*at = b->ntext;
	b->ntext += n + 1;
	return 0;
}

/* The event table's primary key order (rank, start_ns, tid, kind, name_id, dur_ns, ord). */
static int cmp_key(const void *pa, const void *pb, void *ctx)
{
	const struct db_event *ev = ctx, *a = &ev[*(const int *)pa], *b = &ev[*(const int *)pb];
	int64_t x[7] = { a->rank, a->start_ns, a->tid, a->kind, a->name_id, a->dur_ns, a->ord };
	int64_t y[7] = { b->rank, b->start_ns, b->tid, b->kind, b->name_id, b->dur_ns, b->ord };
	for (int i = 0; i < 7; i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

/* One batch into the file: names interned, events and their arguments in key order (both tables
 * are clustered by it: the inserts stay local), links and link ends in the order given, memory
 * records. */
static int batch_write(struct db *db, struct batch *b)
{
	int rc = 0, na = 0;
	for (int i = 0; i < b->nev && !rc; i++) {
		rc = db_intern(db, b->text + b->name_at[i], &b->ev[i].name_id);
		b->order[i] = i;
	}
	if (rc)
		return rc;
	qsort_r(b->order, (size_t)b->nev, sizeof *b->order, cmp_key, b->ev);
	for (int i = 0; i < b->nev; i++) {
		int k = b->order[i];
		b->sorted[i] = b->ev[k];
		if (b->args_len[k])
			b->arg[na++] = (struct db_arg_row){ .e = &b->sorted[i], .json = b->text + b->args_at[k], .len = b->args_len[k] };
	}
	rc = db_put_events(db, b->sorted, (size_t)b->nev);
	if (!rc)
		rc = db_put_args(db, b->arg, (size_t)na);
	if (!rc)
		rc = db_put_flows(db, b->link, (size_t)b->nlink);
	if (!rc)
		rc = db_put_flow_ends(db, b->flow, (size_t)b->nflow);
	for (int i = 0; i < b->nmem && !rc; i++)
		rc = db_put_mem(db, b->mem[i].rank, b->mem[i].device, b->mem[i].ts, b->mem[i].bytes, DB_MEM_OTHER,
				b->mem[i].in_use, 0);
	return rc;
}

static int64_t thread_cpu_ns(void)
{
	struct timespec ts;
	return clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec : 0;
}

static void *writer_main(void *arg)
{
	struct imp *im = arg;
	struct writer *w = &im->w;
	pthread_mutex_lock(&w->mu);
	for (;;) {
		while (!w->nfull && !w->done)
			pthread_cond_wait(&w->cv, &w->mu);
		if (!w->nfull)
			break;
		struct batch *b = w->full[0];
		memmove(&w->full[0], &w->full[1], (size_t)(w->nfull - 1) * sizeof w->full[0]);
		w->nfull--;
		w->busy = 1;
		int skip = w->rc != 0;   /* after an error (or imp_abort) batches are only recycled */
		pthread_mutex_unlock(&w->mu);
		int64_t t0 = clock_ns();
		int rc = skip ? 0 : batch_write(im->db, b);
		int64_t t1 = clock_ns();
		pthread_mutex_lock(&w->mu);
		w->busy_ns += t1 - t0;
		if (rc && !w->rc) {
			w->rc = rc;
			snprintf(w->msg, sizeof w->msg, "%s", ascent_errmsg());
		}
		b->nev = b->nlink = b->nflow = b->nmem = 0;
		b->ntext = 0;
		w->spare[w->nspare++] = b;
		w->busy = 0;
		pthread_cond_broadcast(&w->cv);
	}
	w->cpu_ns = thread_cpu_ns();
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

static int writer_start(struct imp *im)
{
	struct writer *w = &im->w;
	if (pthread_mutex_init(&w->mu, NULL) != 0)
		return ascent_error(ASCENT_ENOMEM, "cannot start the import's writer thread");
	if (pthread_cond_init(&w->cv, NULL) != 0) {
		pthread_mutex_destroy(&w->mu);
		return ascent_error(ASCENT_ENOMEM, "cannot start the import's writer thread");
	}
	if (pthread_create(&w->th, NULL, writer_main, im) != 0) {
		pthread_cond_destroy(&w->cv);
		pthread_mutex_destroy(&w->mu);
		return ascent_error(ASCENT_ENOMEM, "cannot start the import's writer thread");
	}
	w->started = 1;
	return 0;
}

/* The writer's error, raised again on this thread (messages are per thread). Lock held. */
static int writer_error(struct writer *w)
{
	return w->rc ? ascent_error(w->rc, "%s", w->msg) : 0;
}

/* Hand the batch being filled to the writer (waiting while QUEUE batches are waiting already) and
 * take an empty one. */
static int hand_over(struct imp *im)
{
	struct batch *b = im->cur_batch;
	if (!b || (!b->nev && !b->nlink && !b->nflow && !b->nmem))
		return 0;
	struct writer *w = &im->w;
	pthread_mutex_lock(&w->mu);
	if (w->nfull == QUEUE && !w->rc) {
		int64_t t0 = clock_ns();
		while (w->nfull == QUEUE && !w->rc)
			pthread_cond_wait(&w->cv, &w->mu);
		w->wait_ns += clock_ns() - t0;
	}
	int rc = writer_error(w);
	if (!rc) {
		w->full[w->nfull++] = b;
		im->cur_batch = w->nspare ? w->spare[--w->nspare] : NULL;
		pthread_cond_broadcast(&w->cv);
	}
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* Everything handed to the sink so far is in the file and the writer is idle: call it before any
 * use of im->db on the reading thread while the writer runs (the connection is the writer's until
 * then). */
static int flush(struct imp *im)
{
	struct writer *w = &im->w;
	if (!w->started)
		return 0;
	int rc = hand_over(im);
	if (rc)
		return rc;
	pthread_mutex_lock(&w->mu);
	while ((w->nfull || w->busy) && !w->rc)
		pthread_cond_wait(&w->cv, &w->mu);
	rc = writer_error(w);
	pthread_mutex_unlock(&w->mu);
	return rc;
}

/* The batch being filled, with room for one more event, link end and memory record. */
static int batch_room(struct imp *im, struct batch **out)
{
	struct batch *b = im->cur_batch;
	if (b && (b->nev == BATCH_EVENTS || b->nlink == BATCH_FLOWS || b->nflow == BATCH_FLOWS || b->nmem == BATCH_MEM ||
		  b->ntext > BATCH_TEXT)) {
		int rc = hand_over(im);
		if (rc)
			return rc;
		b = im->cur_batch;
	}
	if (!b) {
		b = im->cur_batch = calloc(1, sizeof *b);
		if (!b)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	*out = b;
	return 0;
}

/* links.c's outputs: a link, an end staged for db_flow_pair */
static int batch_link(void *ud, const struct db_flow *f)
{
	struct batch *b;
	int rc = batch_room(ud, &b);
	if (!rc)
		b->link[b->nlink++] = *f;
	return rc;
}

static int batch_stage(void *ud, const struct db_flow_end *e)
{
	struct batch *b;
	int rc = batch_room(ud, &b);
	if (!rc)
		b->flow[b->nflow++] = *e;
	return rc;
}

/* Hand over what is left, wait until everything is written, end the thread. abandon: discard
 * the batches not yet written (imp_abort). Returns the writer's first error. */
static int writer_stop(struct imp *im, int abandon)
{
	struct writer *w = &im->w;
	if (!w->started)
		return 0;
	int rc = abandon ? 0 : flush(im);
	pthread_mutex_lock(&w->mu);
	if (abandon && !w->rc) {
		w->rc = ASCENT_EINTERNAL;
		snprintf(w->msg, sizeof w->msg, "import abandoned");
	}
	w->done = 1;
	pthread_cond_broadcast(&w->cv);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->th, NULL);
	w->started = 0;
	if (!rc && !abandon)
		rc = writer_error(w);
	for (int i = 0; i < w->nspare; i++)
		batch_free(w->spare[i]);
	for (int i = 0; i < w->nfull; i++)
		batch_free(w->full[i]);
	w->nspare = w->nfull = 0;
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->mu);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* opening: the output is a temporary beside OUT, never an input */

int imp_open(const struct imp_opts *o, const char *const *inputs, int ninputs, struct imp **out)
{
	*out = NULL;
	if (!o->out_path || !*o->out_path)
		return ascent_error(ASCENT_EUSAGE, "import needs an output: -o OUT.db");
	/* never over an input (common's rule: the same file under any name), nor over a checkpoint or
	 * token shard; an earlier profile may be replaced (a part: its parent checked) */
	struct fs_output fo = { .cmd = "import", .option = "-o", .path = o->out_path, .inputs = inputs,
				.ninputs = ninputs, .makes = FS_HOLDS_PROFILE };
	int rc0 = o->part_path ? 0 : fs_output_check(&fo);
	if (rc0)
		return rc0;
	struct imp *im = calloc(1, sizeof *im);
	if (!im)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	im->o = *o;
	im->ninputs = ninputs;
	im->wkey = -1;
	im->out = strdup(o->out_path);
	if (!im->out) {
		imp_abort(im);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int rc = o->part_path ? 0 : fs_tmp_open(&im->tmp, o->out_path);
	if (rc) {
		imp_abort(im);
		return rc;
	}
	char spill[4200];
	fs_tmp_name(o->out_path, spill, sizeof spill - 8);
	strcat(spill, "-links");
	struct links_out lo = { .link = batch_link, .stage = batch_stage, .ud = im };
	/* ASCENT_IMPORT_LINK_WINDOW: a smaller window of link ids held in memory (tests: links.h) */
	const char *win = getenv("ASCENT_IMPORT_LINK_WINDOW");
	rc = links_new(spill, win ? atoi(win) : 0, &lo, &im->pairing);
	if (rc) {
		imp_abort(im);
		return rc;
	}
	rc = db_open(o->part_path ? o->part_path : im->tmp.name, DB_CREATE_TEMP, &im->db);
	if (!rc)
		rc = db_set_bulk(im->db);
	if (!rc)
		rc = db_begin(im->db);
	if (rc) {
		imp_abort(im);
		return ascent_error_ctx(rc, "cannot create the output '%s'", o->out_path);
	}
	if ((rc = writer_start(im)) != 0) {
		imp_abort(im);
		return rc;
	}
	for (int i = 0; i < ninputs; i++) {
		struct stat st;
		if (stat(inputs[i], &st) == 0 && S_ISREG(st.st_mode))
			im->total_bytes += st.st_size;
	}
	im->t_start = im->t_last = clock_ns();
	im->cpu_start = thread_cpu_ns();
	*out = im;
	return 0;
}

static void rank_free(struct rank_state *r)
{
	for (int i = 0; i < r->nlanes; i++)
		free(r->lanes[i].name);
	free(r->lanes);
	free(r->slot);
	for (int i = 0; i < r->nspans; i++)
		free(r->spans[i].file);
	free(r->spans);
	free(r->groups);
	free(r->backend);
	free(r->host);
	free(r->source);
}

static void imp_free(struct imp *im)
{
	for (int i = 0; i < im->nranks; i++)
		rank_free(&im->ranks[i]);
	free(im->ranks);
	for (int i = 0; i < im->ngroups; i++) {
		free(im->groups[i].name);
		free(im->groups[i].desc);
		free(im->groups[i].members);
	}
	free(im->groups);
	free(im->gslot);
	for (int i = 0; i < im->ncalls; i++) {
		free(im->calls[i].desc);
		free(im->calls[i].members);
	}
	free(im->calls);
	for (int i = 0; i < IMP_W_COUNT; i++)
		free(im->warn_where[i]);
	for (int i = 0; i < im->nfile_source; i++)
		free(im->file_source[i]);
	free(im->file_source);
	batch_free(im->cur_batch);
	links_free(im->pairing);
	free(im->file);
	free(im->out);
	fs_tmp_abort(&im->tmp);
	free(im);
}

void imp_abort(struct imp *im)
{
	if (!im)
		return;
	writer_stop(im, 1);
	if (im->db) {
		db_rollback(im->db);
		db_close(im->db);
	}
	imp_free(im);
}

/* ---------------------------------------------------------------------------------------- */
/* files and ranks */

int imp_file_begin(struct imp *im, const char *path, int64_t size)
{
	free(im->file);
	im->file = strdup(path);
	if (!im->file)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	im->file_size = size;
	im->file_no = im->o.file_no && im->nfiles < im->ninputs ? im->o.file_no[im->nfiles] : im->nfiles;
	im->wkey = 2 * (int64_t)im->file_no;
	for (int i = 0; i < im->nranks; i++) {
		im->ranks[i].file_lo = INT64_MAX;
		im->ranks[i].file_hi = INT64_MIN;
	}
	im->cur = NULL;
	return 0;
}

int imp_rank_default(const struct imp *im, const char *path)
{
	if (im->o.rank >= 0)
		return im->o.rank;
	int npu = npu_dir_rank(path);   /* torch_npu's profiler_info_N.json beside the trace's folder */
	if (npu >= 0)
		return npu;
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	for (const char *p = base; (p = strstr(p, "rank")) != NULL; p += 4) {
		const char *q = p + 4;
		if (*q == '-' || *q == '_')
			q++;
		if (*q >= '0' && *q <= '9') {
			long v = strtol(q, NULL, 10);
			if (v >= 0 && v < 1000000)
				return (int)v;
		}
	}
	return im->o.file_no && im->nfiles < im->ninputs ? im->o.file_no[im->nfiles] : im->nfiles;
}

int imp_rank_forced(const struct imp *im)
{
	return im->o.rank;
}

int imp_rank_current(const struct imp *im)
{
	return im->cur ? im->cur->rank : -1;
}

void imp_rank_pid(struct imp *im, int64_t pid)
{
	if (im->cur && pid > 0 && !im->cur->pid)
		im->cur->pid = pid;
}

int imp_rank_begin(struct imp *im, int rank, int64_t origin_ns)
{
	if (rank < 0 || rank >= 1000000)
		return ascent_error(ASCENT_EINPUT, "'%s': rank %d is out of range (0 to 999999)", im->file, rank);
	for (int i = 0; i < im->nranks; i++)
		if (im->ranks[i].rank == rank) {
			im->cur = &im->ranks[i];
			return 0;
		}
	struct rank_state *r2 = realloc(im->ranks, (size_t)(im->nranks + 1) * sizeof *r2);
	if (!r2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	im->ranks = r2;
	/* lanes point into ranks by index only, so moving the array is safe */
	struct rank_state *r = &im->ranks[im->nranks++];
	memset(r, 0, sizeof *r);
	r->rank = rank;
	/* a margin before the first time seen: events written out of order in the file (Kineto's
	 * are) still come after the origin; any that do not are shifted when the import finishes */
	r->origin = origin_ns > ORIGIN_MARGIN_NS ? origin_ns - ORIGIN_MARGIN_NS : 0;
	r->min = INT64_MAX;
	r->end = 0;
	im->cur = r;
	return 0;
}

static int64_t stored(const struct imp *im, int64_t t)
{
	return t - im->cur->origin;
}

/* 1 when time t of the current file lies within IMP_MAX_NS of its rank's origin (*s: as stored). */
static int stored_ok(const struct imp *im, int64_t t, int64_t *s)
{
	return !__builtin_sub_overflow(t, im->cur->origin, s) && *s >= -IMP_MAX_NS && *s <= IMP_MAX_NS;
}

/* Count one record with an impossible value w (IMP_W_BAD_TIME, IMP_W_BAD_VALUE): `what` and the
 * value are kept for the first. */
static void warn_value(struct imp *im, enum imp_warning w, const char *what, const char *name, int64_t v)
{
	if (im->warn[w]) {
		im->warn[w]++;
		return;
	}
	char where[200];
	snprintf(where, sizeof where, "%s%s%.80s%s %" PRId64, what, name ? " '" : "", name ? name : "", name ? "'" : "", v);
	imp_warn(im, w, where);
}

/* The current file's events of rank r: refused if they overlap another file's of the same rank. */
static int rank_file_span(struct imp *im, struct rank_state *r)
{
	if (r->file_lo > r->file_hi)
		return 0;
	for (int i = 0; i < r->nspans; i++)
		if (r->file_lo < r->spans[i].hi && r->spans[i].lo < r->file_hi)
			return ascent_error(ASCENT_EINPUT, "'%s' and '%s' both hold rank %d and their times overlap: they are "
					    "different ranks (set the right one with --rank, importing them separately) or "
					    "the same file twice", r->spans[i].file, im->file, r->rank);
	struct span *s2 = realloc(r->spans, (size_t)(r->nspans + 1) * sizeof *s2);
	if (!s2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	r->spans = s2;
	r->spans[r->nspans] = (struct span){ .lo = r->file_lo, .hi = r->file_hi, .file = strdup(im->file) };
	if (!r->spans[r->nspans].file)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	r->nspans++;
	r->file_lo = INT64_MAX;
	r->file_hi = INT64_MIN;
	return 0;
}

/* Files of one rank written by different profilers (an Nsight export and a Kineto trace) are two
 * runs, or two views of one, that would double its events: refused unless allow_mixed_runs. */
static int same_run(struct imp *im, struct rank_state *r, const struct imp_file_facts *f)
{
	if (!f->source || !*f->source)
		return 0;
	if (!r->source) {
		if (r->nspans == 0 && !(r->source = strdup(f->source)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		return 0;
	}
	if (!strcmp(r->source, f->source) || im->o.allow_mixed_runs)
		return 0;
	return ascent_error(ASCENT_EINPUT, "'%s' (%s) and '%s' (%s) both hold rank %d: traces of different profilers "
			    "are different runs (or the same run twice); import each on its own, or pass "
			    "--allow-mixed-runs to combine them", r->nspans ? r->spans[0].file : "?", r->source, im->file,
			    f->source, r->rank);
}

int imp_file_end(struct imp *im, const struct imp_file_facts *f)
{
	int rc0 = links_file_end(im->pairing);   /* its link ids end with it */
	if (rc0)
		return rc0;
	char **fs2 = realloc(im->file_source, (size_t)(im->nfiles + 1) * sizeof *fs2);
	if (!fs2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	im->file_source = fs2;
	fs2[im->nfiles] = f->source ? strdup(f->source) : NULL;
	im->nfile_source = im->nfiles + 1;
	im->nfiles++;
	im->wkey = 2 * (int64_t)im->file_no + 1;   /* its facts' warnings name the next file's format */
	if (im->o.progress)
		__atomic_store_n(&im->o.progress[2], im->nfiles, __ATOMIC_RELAXED);
	im->bytes_before += im->file_size;
	if (f->source && !strstr(im->sources, f->source)) {
		size_t l = strlen(im->sources);
		snprintf(im->sources + l, sizeof im->sources - l, "%s%s", l ? ", " : "", f->source);
	}
	if (!im->cur)   /* a file with no events at all */
		return 0;
	/* the file's facts belong to the ranks it held (one per file for Kineto) */
	for (int i = 0; i < im->nranks; i++) {
		struct rank_state *r = &im->ranks[i];
		if (r != im->cur && r->file_lo > r->file_hi)
			continue;
		if (f->world_size > 0)
			r->world_size = f->world_size;
		if (f->backend && !r->backend && !(r->backend = strdup(f->backend)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		if (f->host && *f->host && !r->host && !(r->host = strdup(f->host)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		int rc1 = same_run(im, r, f);
		if (rc1)
			return rc1;
		if (f->base_ns) {
			int64_t t0;
			if (f->base_ns < 0 || __builtin_add_overflow(f->base_ns, r->origin, &t0) || t0 > IMP_MAX_EPOCH_NS) {
				warn_value(im, IMP_W_BAD_VALUE, "base time (ns)", NULL, f->base_ns);
			} else if (!r->has_base && r->nspans == 0) {
				r->base = f->base_ns;
				r->has_base = 1;
			} else if (r->base != f->base_ns) {
				if (!im->o.allow_mixed_runs)
					return ascent_error(ASCENT_EINPUT, "'%s' and '%s' both hold rank %d but come from "
							    "different profiling sessions (base times %" PRId64 " and %" PRId64
							    " ns): they are two runs; import each on its own, or pass "
							    "--allow-mixed-runs to combine them", r->nspans ? r->spans[0].file : "?",
							    im->file, r->rank, r->base, f->base_ns);
				imp_warn(im, IMP_W_BASE_TIME, im->file);
			}
		}
	}
	int rc = 0;
	for (int i = 0; i < im->nranks && !rc; i++)   /* every rank the file held (a source may hold several) */
		rc = rank_file_span(im, &im->ranks[i]);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* lanes */

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	return k;
}

static int lane_find(const struct rank_state *r, uint64_t key)
{
	if (!r->nslot)
		return -1;
	for (size_t i = mix(key) & (size_t)(r->nslot - 1);; i = (i + 1) & (size_t)(r->nslot - 1)) {
		if (r->slot[i] < 0)
			return -1;
		if (r->lanes[r->slot[i]].key == key)
			return r->slot[i];
	}
}

static int lane_index(struct rank_state *r)
{
	if ((r->nlanes + 1) * 2 > r->nslot) {
		int ns = r->nslot ? r->nslot * 2 : 64;
		int *s2 = malloc((size_t)ns * sizeof *s2);
		if (!s2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		for (int i = 0; i < ns; i++)
			s2[i] = -1;
		for (int l = 0; l < r->nlanes; l++) {
			size_t i = mix(r->lanes[l].key) & (size_t)(ns - 1);
			while (s2[i] >= 0)
				i = (i + 1) & (size_t)(ns - 1);
			s2[i] = l;
		}
		free(r->slot);
		r->slot = s2;
		r->nslot = ns;
	}
	return 0;
}

int imp_lane(struct imp *im, uint64_t key, int device, int stream, int64_t os_tid, int *tid)
{
	struct rank_state *r = im->cur;
	if (!r)
		return ascent_error(ASCENT_EINTERNAL, "imp_lane before imp_rank_begin");
	int l = lane_find(r, key);
	if (l >= 0) {
		struct lane *ln = &r->lanes[l];
		if (ln->device == LANE_PENDING && device != LANE_PENDING) {   /* named by a link first */
			ln->device = device;
			ln->stream = stream;
			ln->os_tid = os_tid;
		}
		*tid = ln->tid;
		return 0;
	}
	int rc = lane_index(r);
	if (rc)
		return rc;
	if (r->nlanes == r->caplanes) {
		int nc = r->caplanes ? r->caplanes * 2 : 16;
		struct lane *l2 = realloc(r->lanes, (size_t)nc * sizeof *l2);
		if (!l2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		r->lanes = l2;
		r->caplanes = nc;
	}
	struct lane *ln = &r->lanes[r->nlanes];
	*ln = (struct lane){ .key = key, .tid = r->nlanes, .device = device, .stream = stream, .os_tid = os_tid };
	size_t i = mix(key) & (size_t)(r->nslot - 1);
	while (r->slot[i] >= 0)
		i = (i + 1) & (size_t)(r->nslot - 1);
	r->slot[i] = r->nlanes;
	*tid = r->nlanes++;
	return 0;
}

int imp_lane_lookup(const struct imp *im, uint64_t key, int *device)
{
	if (!im->cur)
		return -1;
	int l = lane_find(im->cur, key);
	if (l < 0 || im->cur->lanes[l].device == LANE_PENDING)
		return -1;
	if (device)
		*device = im->cur->lanes[l].device;
	return im->cur->lanes[l].tid;
}

int imp_lane_name(struct imp *im, int tid, const char *name)
{
	struct rank_state *r = im->cur;
	if (!r || tid < 0 || tid >= r->nlanes)
		return 0;
	char *n = strdup(name);
	if (!n)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	free(r->lanes[tid].name);
	r->lanes[tid].name = n;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* groups */

static uint64_t name_hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;   /* FNV-1a */
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

/* The group named `name`, −1 none: a hash lookup (traces may hold tens of thousands of groups). */
static int group_find(const struct imp *im, const char *name)
{
	if (!im->ngslot)
		return -1;
	for (size_t i = name_hash(name) & (size_t)(im->ngslot - 1);; i = (i + 1) & (size_t)(im->ngslot - 1)) {
		if (im->gslot[i] < 0)
			return -1;
		if (!strcmp(im->groups[im->gslot[i]].name, name))
			return im->gslot[i];
	}
}

/* A new group named `name` at index im->ngroups, in the hash index. */
static int group_add(struct imp *im, const char *name)
{
	if ((im->ngroups + 1) * 2 > im->ngslot) {
		int ns = im->ngslot ? im->ngslot * 2 : 64;
		int *s2 = malloc((size_t)ns * sizeof *s2);
		if (!s2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		for (int i = 0; i < ns; i++)
			s2[i] = -1;
		free(im->gslot);
		im->gslot = s2;
		im->ngslot = ns;
		for (int g = 0; g < im->ngroups; g++) {
			size_t i = name_hash(im->groups[g].name) & (size_t)(ns - 1);
			while (s2[i] >= 0)
				i = (i + 1) & (size_t)(ns - 1);
			s2[i] = g;
		}
	}
	int rc = ARRAY_GROW(im->groups, im->ngroups, im->capgroups, 16, "process groups");
	if (rc)
		return rc;
	struct group *gr = &im->groups[im->ngroups];
	memset(gr, 0, sizeof *gr);
	gr->last_call = -1;
	if (!(gr->name = strdup(name)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	size_t i = name_hash(name) & (size_t)(im->ngslot - 1);
	while (im->gslot[i] >= 0)
		i = (i + 1) & (size_t)(im->ngslot - 1);
	im->gslot[i] = im->ngroups++;
	return 0;
}

/* A part's record of a call group_get(g, desc, members, nmembers): counted on the group's last entry
 * when equal to it, else a new entry. */
static int record_call(struct imp *im, int g, const char *desc, const int *members, int nmembers)
{
	int64_t key = CALL_KEY(im->file_no, im->ncall++);
	int last = im->groups[g].last_call;
	if (nmembers < 0)
		nmembers = 0;
	if (last >= 0) {
		struct group_call *c = &im->calls[last];
		int same = c->nmembers == nmembers && !c->members == !members &&
			   (!desc ? !c->desc : c->desc && !strcmp(desc, c->desc)) &&
			   (!members || !nmembers || !memcmp(c->members, members, (size_t)nmembers * sizeof *members));
		if (same && (key >> 40) == (c->key >> 40)) {
			c->n++;
			return 0;
		}
	}
	int rc = ARRAY_GROW(im->calls, im->ncalls, im->capcalls, 64, "process group definitions");
	if (rc)
		return rc;
	struct group_call *c = &im->calls[im->ncalls];
	*c = (struct group_call){ .g = g, .nmembers = nmembers, .key = key, .n = 1 };
	if ((desc && !(c->desc = strdup(desc))) ||
	    (members && !(c->members = malloc((size_t)(nmembers ? nmembers : 1) * sizeof *members)))) {
		free(c->desc);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (members && nmembers)
		memcpy(c->members, members, (size_t)nmembers * sizeof *members);
	im->groups[g].last_call = im->ncalls++;
	return 0;
}

/* A group's definition (members and/or size) from a collective or a group table. The first
 * definition is kept: a later one of another size or other members (two runs' files that reuse a
 * group name, a collective whose rank list disagrees with the group's) is counted against the
 * group, and its events stay in the group. A group's member list always has nmembers entries. */
static int group_get(struct imp *im, const char *name, const char *desc, const int *members, int nmembers, int *idx)
{
	int g = group_find(im, name);
	if (g < 0) {
		int rc = group_add(im, name);
		if (rc)
			return rc;
		g = im->ngroups - 1;
	}
	struct group *gr = &im->groups[g];
	if (im->o.part_path) {
		int rc = record_call(im, g, desc, members, nmembers);
		if (rc)
			return rc;
		gr = &im->groups[g];
	}
	if (desc && !gr->desc && !(gr->desc = strdup(desc)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	*idx = g;
	if (nmembers <= 0)
		return 0;   /* nothing said about its members */
	int same = gr->nmembers == 0 || gr->nmembers == nmembers;
	if (same && members && gr->members)
		same = !memcmp(gr->members, members, (size_t)nmembers * sizeof *members);
	if (!same) {
		if (!gr->conflicts++) {
			char where[300];
			snprintf(where, sizeof where, "process group '%.200s': %d members, first defined with %d", name,
				 nmembers, gr->nmembers);
			imp_warn(im, IMP_W_GROUP_CONFLICT, where);
		} else {
			im->warn[IMP_W_GROUP_CONFLICT]++;
		}
		return 0;
	}
	if (members && !gr->members) {
		if (!(gr->members = malloc((size_t)nmembers * sizeof *gr->members)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		memcpy(gr->members, members, (size_t)nmembers * sizeof *members);
	}
	gr->nmembers = nmembers;
	return 0;
}

int imp_group(struct imp *im, const char *group, const char *desc, const int *members, int nmembers)
{
	int g;
	return group_get(im, group, desc, members, nmembers, &g);
}

static int rank_uses_group(struct rank_state *r, int g)
{
	if (g >= r->ngroups) {
		int n = g + 16 > 2 * r->ngroups ? g + 16 : 2 * r->ngroups;   /* doubling: groups come one by one */
		unsigned char *u = realloc(r->groups, (size_t)n);
		if (!u)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		memset(u + r->ngroups, 0, (size_t)(n - r->ngroups));
		r->groups = u;
		r->ngroups = n;
	}
	r->groups[g] = 1;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* events */

int imp_event(struct imp *im, const struct imp_event *e)
{
	struct rank_state *r = im->cur;
	if (!r)
		return ascent_error(ASCENT_EINTERNAL, "imp_event before imp_rank_begin");
	if (e->tid < 0 || e->tid >= r->nlanes)
		return ascent_error(ASCENT_EINTERNAL, "imp_event on lane %d, which imp_lane did not give", e->tid);
	const char *name = e->name ? e->name : "";
	int64_t start, bytes = e->kind == DB_KIND_COMM && e->coll && e->coll->bytes > 0 ? e->coll->bytes : e->bytes;
	im->last_stored = 0;
	if (!stored_ok(im, e->start_ns, &start)) {
		warn_value(im, IMP_W_BAD_TIME, "event", name, e->start_ns);
		return 0;
	}
	if (e->dur_ns < 0 || e->dur_ns > IMP_MAX_NS) {
		warn_value(im, IMP_W_BAD_TIME, "event", name, e->dur_ns);
		return 0;
	}
	if (bytes > IMP_MAX_BYTES) {
		warn_value(im, IMP_W_BAD_VALUE, "bytes of event", name, bytes);
		bytes = 0;
	}
	struct batch *b;
	int rc = batch_room(im, &b);
	if (rc)
		return rc;
	int i = b->nev;
	if ((rc = batch_text(b, name, strlen(name), &b->name_at[i])) != 0)
		return rc;
	b->args_len[i] = 0;
	if (e->args && e->args_len > 2) {
		if ((rc = batch_text(b, e->args, e->args_len, &b->args_at[i])) != 0)
			return rc;
		b->args_len[i] = e->args_len;
	}
	im->last_stored = 1;
	struct db_event *d = &b->ev[i];
	*d = (struct db_event){ .start_ns = start, .dur_ns = e->dur_ns, .step = e->step,
				.name_id = 0, .bytes = bytes > 0 ? bytes : 0, .seq = -1, .rank = r->rank,
				.tid = e->tid, .kind = e->kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1,
				.ord = r->lanes[e->tid].events++ };   /* every event its own row, equal ones too */
	if (e->kind == DB_KIND_COMM) {
		const struct imp_collective *c = e->coll;
		int g;
		rc = group_get(im, c && c->group ? c->group : "default", c ? c->group_desc : NULL, c ? c->members : NULL,
			       c ? c->nmembers : 0, &g);
		if (!rc)
			rc = rank_uses_group(r, g);
		if (rc)
			return rc;
		d->comm_id = COMM_ID_BASE + g;
		if (c && c->peer >= 0)
			d->peer = c->peer;
	}
	if (d->start_ns < r->file_lo)
		r->file_lo = d->start_ns;
	if (d->start_ns + d->dur_ns > r->file_hi)
		r->file_hi = d->start_ns + d->dur_ns;
	if (d->start_ns + d->dur_ns > r->end)
		r->end = d->start_ns + d->dur_ns;
	if (d->start_ns < r->min)
		r->min = d->start_ns;
	b->nev++;
	im->events++;
	return 0;
}

int imp_mem(struct imp *im, int64_t ts_ns, int64_t bytes, int64_t in_use, int device)
{
	struct rank_state *r = im->cur;
	if (!r)
		return ascent_error(ASCENT_EINTERNAL, "imp_mem before imp_rank_begin");
	int64_t t;
	if (!stored_ok(im, ts_ns, &t)) {
		warn_value(im, IMP_W_BAD_TIME, "memory record at", NULL, ts_ns);
		return 0;
	}
	if (bytes < -IMP_MAX_BYTES || bytes > IMP_MAX_BYTES || in_use < -IMP_MAX_BYTES || in_use > IMP_MAX_BYTES) {
		warn_value(im, IMP_W_BAD_VALUE, "memory record of bytes", NULL, bytes);
		return 0;
	}
	if (t < r->min)
		r->min = t;
	struct batch *b;
	int rc = batch_room(im, &b);
	if (!rc)
		b->mem[b->nmem++] = (struct batch_mem){ .rank = r->rank, .device = device, .ts = t, .bytes = bytes, .in_use = in_use };
	return rc;
}

int imp_event_stored(const struct imp *im)
{
	return im->last_stored;
}

int imp_flow(struct imp *im, int kind, int64_t id, int is_start, uint64_t lane_key, int64_t ts_ns)
{
	struct rank_state *r = im->cur;
	if (!r)
		return ascent_error(ASCENT_EINTERNAL, "imp_flow before imp_rank_begin");
	int64_t ns;
	if (!stored_ok(im, ts_ns, &ns)) {
		warn_value(im, IMP_W_BAD_TIME, "link end at", NULL, ts_ns);
		return 0;
	}
	int tid = 0;
	int rc = imp_lane(im, lane_key, LANE_PENDING, -1, 0, &tid);
	if (rc)
		return rc;
	if (ns < r->min)
		r->min = ns;
	/* paired in memory where the partner comes soon enough, else staged in the output and paired
	 * when the import finishes (links.h): a file may hold the ends in any order */
	struct db_flow_end e = { .rank = r->rank, .kind = kind, .file = im->nfiles, .id = id, .is_start = is_start, .tid = tid,
				 .ns = ns };
	return links_end(im->pairing, &e);
}

/* Link ends into links; those that met no partner are counted. */
static int pair_links(struct imp *im)
{
	int64_t unpaired = 0;
	int rc = db_flow_pair(im->db, &im->links, &unpaired);
	im->links += links_made(im->pairing);
	unpaired += links_unpaired(im->pairing);
	if (!rc && unpaired > 0) {
		imp_warn(im, IMP_W_FLOW_UNPAIRED, "links");
		im->warn[IMP_W_FLOW_UNPAIRED] += unpaired - 1;
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* sources that insert by query */

int imp_attach(struct imp *im, const char *path, const char *schema)
{
	int rc = flush(im);
	return rc ? rc : db_attach(im->db, path, schema);
}

int imp_detach(struct imp *im, const char *schema)
{
	int rc = flush(im);
	return rc ? rc : db_detach(im->db, schema);
}

int imp_query(struct imp *im, const char *sql, const struct db_bind *binds, int nbinds, db_query_cb row, void *ud,
	      int64_t *changes)
{
	int rc = flush(im);
	if (!rc && (rc = db_query(im->db, sql, binds, nbinds, row, ud, changes)) == ASCENT_EDB) {
		const char *msg;
		if (db_failed_on_data(im->db, &msg))   /* the input's tables, not the output: name the input */
			rc = ascent_error(ASCENT_EINPUT, "'%s': %s: a damaged file, or a version of its format ascent does not know",
					  im->file ? im->file : "?", msg);
	}
	return rc;
}

int imp_function(struct imp *im, const char *name, int nargs, db_sql_fn fn, void *ud)
{
	int rc = flush(im);
	return rc ? rc : db_function(im->db, name, nargs, fn, ud);
}

int imp_intern(struct imp *im, const char *name, int64_t *id)
{
	/* The writer thread interns too: wait until it has written what was handed over. */
	int rc = flush(im);
	return rc ? rc : db_intern(im->db, name, id);
}

int imp_comm_id(struct imp *im, const char *group, int64_t *comm_id)
{
	if (!im->cur)
		return ascent_error(ASCENT_EINTERNAL, "imp_comm_id before imp_rank_begin");
	int g;
	int rc = group_get(im, group ? group : "default", NULL, NULL, 0, &g);
	if (!rc)
		rc = rank_uses_group(im->cur, g);
	*comm_id = COMM_ID_BASE + g;
	return rc;
}

int64_t imp_origin(const struct imp *im)
{
	return im->cur ? im->cur->origin : 0;
}

void imp_bulk_events(struct imp *im, int64_t n, int64_t lo_ns, int64_t hi_ns)
{
	struct rank_state *r = im->cur;
	if (!r || n <= 0)
		return;
	int64_t lo = stored(im, lo_ns), hi = stored(im, hi_ns);
	if (lo < r->file_lo)
		r->file_lo = lo;
	if (hi > r->file_hi)
		r->file_hi = hi;
	if (hi > r->end)
		r->end = hi;
	if (lo < r->min)
		r->min = lo;
	im->events += n;
}

/* ---------------------------------------------------------------------------------------- */
/* warnings and progress */

void imp_warn(struct imp *im, enum imp_warning w, const char *where)
{
	if (w < 0 || w >= IMP_W_COUNT)
		return;
	if (!im->warn[w]) {
		im->warn_file[w] = im->nfiles;   /* the file being read; at the end: all of them */
		im->warn_key[w] = im->wkey;
	}
	if (!im->warn[w]++ && where) {
		size_t n = strlen(where) + (im->file ? strlen(im->file) : 0) + 8;
		im->warn_where[w] = malloc(n);
		/* a part's warnings of its end: the combining process names the import's last file */
		int bare = im->o.part_path && im->wkey >= KEY_FINISH;
		if (im->warn_where[w]) {
			if (im->file && strcmp(where, im->file) && !bare)
				snprintf(im->warn_where[w], n, "%s: %s", im->file, where);
			else
				snprintf(im->warn_where[w], n, "%s", where);
		}
	}
}

int64_t imp_warnings(const struct imp *im, enum imp_warning w)
{
	return w >= 0 && w < IMP_W_COUNT ? im->warn[w] : 0;
}

int64_t imp_events(const struct imp *im)
{
	return im->events;
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

void imp_progress(struct imp *im, int64_t bytes_done)
{
	if (im->o.progress) {
		__atomic_store_n(&im->o.progress[0], im->bytes_before + bytes_done, __ATOMIC_RELAXED);
		__atomic_store_n(&im->o.progress[1], im->events, __ATOMIC_RELAXED);
	}
	if (im->o.quiet)
		return;
	int64_t now = clock_ns();
	if (now - im->t_last < 1000000000LL)
		return;
	im->t_last = now;
	double secs = (double)(now - im->t_start) / 1e9;
	int64_t done = im->bytes_before + bytes_done;
	char a[32], b[32];
	human_bytes((double)done, a, sizeof a);
	human_bytes((double)im->total_bytes, b, sizeof b);
	double rate = secs > 0 ? (double)im->events / secs : 0;
	double eta = done > 0 && im->total_bytes > done ? secs * (double)(im->total_bytes - done) / (double)done : 0;
	fprintf(msgs(im), "import: %s of %s read, %" PRId64 " events, %.2fM events/s, ETA %.0f s\n", a, b, im->events,
		rate / 1e6, eta);
	im->printed = 1;
}

/* ---------------------------------------------------------------------------------------- */
/* finishing: links, collective ordinals, ranks, lanes, comm groups, statistics, rename */

/* The comm row of rank `rank` (its files' world size rank_world, 0 unknown) in group g: the group's
 * size (its members, else the world), the rank's place in it and its name. */
static int put_comm(const struct imp *im, struct db *db, int rank, int rank_world, int g, int world)
{
	const struct group *gr = &im->groups[g];
	int size = gr->nmembers > 0 ? gr->nmembers : (rank_world > 0 ? rank_world : world);
	int in = -1;
	for (int k = 0; k < gr->nmembers && gr->members; k++)
		if (gr->members[k] == rank)
			in = k;
	if (!gr->members && !strcmp(gr->name, "default"))
		in = rank;
	char name[200];
	snprintf(name, sizeof name, "pg %s%s%s%s", gr->name, gr->desc ? " (" : "", gr->desc ? gr->desc : "",
		 gr->desc ? ")" : "");
	return db_put_comm(db, rank, COMM_ID_BASE + g, name, size > 0 ? size : 1, in);
}

static int put_lanes_and_ranks(struct imp *im)
{
	int rc = 0;
	int world = 0;
	for (int i = 0; i < im->nranks; i++)
		if (im->ranks[i].world_size > world)
			world = im->ranks[i].world_size;
	if (!world)   /* no source gave one: the ranks imported (as run.world_size) */
		world = im->nranks;
	for (int i = 0; i < im->nranks && !rc; i++) {
		struct rank_state *r = &im->ranks[i];
		for (int l = 0; l < r->nlanes && !rc; l++) {
			struct lane *ln = &r->lanes[l];
			if (ln->device == LANE_PENDING)
				continue;
			char name[160];
			if (ln->name)
				snprintf(name, sizeof name, "%s", ln->name);
			else if (ln->device >= 0)
				snprintf(name, sizeof name, "gpu %d stream %d", ln->device, ln->stream);
			else
				snprintf(name, sizeof name, "thread %" PRId64, ln->os_tid);
			rc = db_put_thread(im->db, r->rank, ln->tid, ln->device >= 0 ? ln->stream : ln->os_tid, name);
			if (!rc && ln->device >= 0)
				rc = db_put_device_lane(im->db, r->rank, ln->tid, ln->device, ln->stream);
		}
		int64_t t0 = i64_add_sat(r->origin, r->has_base ? r->base : 0);
		struct db_rank_info ri = { .rank = r->rank, .pid = (int)r->pid, .dp_rank = -1, .tp_rank = -1, .pp_rank = -1,
					   .threads = r->nlanes, .host = r->host ? r->host : "", .t0_ns = t0,
					   .t0_utc_ns = t0 > 946684800000000000LL ? t0 : 0, .end_ns = r->end };
		if (!rc)
			rc = db_put_rank(im->db, &ri);
		/* the groups this rank used: size and its place in them */
		for (int g = 0; g < r->ngroups && g < im->ngroups && !rc; g++)
			if (r->groups[g])
				rc = put_comm(im, im->db, r->rank, r->world_size, g, world);
	}
	if (!rc) {
		char cmd[64];
		snprintf(cmd, sizeof cmd, "ascent import (%d files)", im->nfiles);
		rc = db_put_run(im->db, cmd, NULL, world > 0 ? world : im->nranks);
	}
	return rc;
}

/* Pair link ends, number collectives by their order in their group on each rank, drop the
 * staging tables. */
/* Number collectives by their order in their group on each rank (their ordinal matches calls
 * across ranks). */
static const char FINISH_SQL[] =
	"CREATE TEMP TABLE import_seq AS SELECT rank, start_ns, tid, kind, name_id, dur_ns, ord,"
	" row_number() OVER (PARTITION BY rank, comm_id ORDER BY start_ns, tid, ord) - 1 AS seq"
	" FROM event WHERE kind = 1 AND comm_id IS NOT NULL;"
	"UPDATE event SET seq = q.seq FROM temp.import_seq q WHERE event.rank = q.rank AND event.start_ns = q.start_ns"
	" AND event.tid = q.tid AND event.kind = q.kind AND event.name_id = q.name_id AND event.dur_ns = q.dur_ns"
	" AND event.ord = q.ord;"
	"DROP TABLE temp.import_seq;";

/* Times are stored relative to the rank's origin and readers expect them ≥ 0: a rank with earlier
 * records (more than ORIGIN_MARGIN_NS before its first) moves its origin back and its rows forward. */
static int shift_early_ranks(struct imp *im)
{
	int rc = 0;
	for (int i = 0; i < im->nranks && !rc; i++) {
		struct rank_state *r = &im->ranks[i];
		if (r->min >= 0)
			continue;
		int64_t d = -r->min;
		char sql[600];
		snprintf(sql, sizeof sql,
			 "UPDATE event SET start_ns = start_ns + %" PRId64 " WHERE rank = %d;"
			 "UPDATE arg SET start_ns = start_ns + %" PRId64 " WHERE rank = %d;"
			 "UPDATE flow SET src_ns = src_ns + %" PRId64 ", dst_ns = dst_ns + %" PRId64 " WHERE rank = %d;"
			 "UPDATE mem_event SET ts_ns = ts_ns + %" PRId64 " WHERE rank = %d;",
			 d, r->rank, d, r->rank, d, d, r->rank, d, r->rank);
		rc = db_exec_sql(im->db, sql);
		r->origin -= d;
		r->end += d;
		r->min = 0;
	}
	return rc;
}

/* Links that touch a lane no event ever used (a link end on a thread with no events) are dropped. */
static int drop_pending_lanes(struct imp *im)
{
	int rc = 0;
	for (int i = 0; i < im->nranks && !rc; i++) {
		struct rank_state *r = &im->ranks[i];
		for (int l = 0; l < r->nlanes && !rc; l++)
			if (r->lanes[l].device == LANE_PENDING) {
				char sql[200];
				snprintf(sql, sizeof sql, "DELETE FROM flow WHERE rank = %d AND (src_tid = %d OR dst_tid = %d)",
					 r->rank, l, l);
				rc = db_exec_sql(im->db, sql);
				imp_warn(im, IMP_W_FLOW_UNPAIRED, "a link end on a lane with no events");
			}
	}
	return rc;
}

/* Each warning with the format it comes from: the file of its first (or, for what is counted
 * when the import finishes, the formats of all the files). */
static void print_warnings(const struct imp *im)
{
	for (int w = 0; w < IMP_W_COUNT; w++) {
		if (!im->warn[w])
			continue;
		int f = im->warn_file[w];
		const char *format = f >= 0 && f < im->nfile_source && im->file_source[f] ? im->file_source[f]
				     : f >= im->nfile_source && im->sources[0]  ? im->sources
										 : NULL;
		fprintf(msgs(im), "import: warning: %" PRId64 " %s%s%s%s%s%s\n", im->warn[w], WARN_TEXT[w],
			im->warn_where[w] ? "; first in " : "", im->warn_where[w] ? im->warn_where[w] : "",
			format ? " (" : "", format ? format : "", format ? ")" : "");
	}
}

/* A part's records for the combining process (import/part.h): each file's format, the warnings (but
 * the groups' conflicts, which only all the parts' definitions decide), the groups by index, their
 * definitions in order, each rank's world size. */
static const char PART_SCHEMA[] =
	"CREATE TABLE import_part_file(no INTEGER, source TEXT);"
	"CREATE TABLE import_part_warn(w INTEGER, n INTEGER, key INTEGER, at TEXT);"
	"CREATE TABLE import_part_group(g INTEGER PRIMARY KEY, name TEXT);"
	"CREATE TABLE import_part_call(key INTEGER, g INTEGER, descr TEXT, has_members INTEGER, nmembers INTEGER,"
	" members TEXT, n INTEGER);"
	"CREATE TABLE import_part_rank(rank INTEGER PRIMARY KEY, world INTEGER);";

static int part_put(struct imp *im, const char *sql, const struct db_bind *b, int nb)
{
	return db_query(im->db, sql, b, nb, NULL, NULL, NULL);
}

static int part_write(struct imp *im)
{
	int rc = db_exec_sql(im->db, PART_SCHEMA);
	for (int f = 0; f < im->nfile_source && !rc; f++) {
		struct db_bind b[2] = { { .i = im->o.file_no ? im->o.file_no[f] : f }, { .text = im->file_source[f] } };
		rc = part_put(im, im->file_source[f] ? "INSERT INTO import_part_file VALUES (?1, ?2)"
						     : "INSERT INTO import_part_file VALUES (?1, NULL)", b, im->file_source[f] ? 2 : 1);
	}
	for (int w = 0; w < IMP_W_COUNT && !rc; w++) {
		if (!im->warn[w] || w == IMP_W_GROUP_CONFLICT)
			continue;
		struct db_bind b[4] = { { .i = w }, { .i = im->warn[w] }, { .i = im->warn_key[w] }, { .text = im->warn_where[w] } };
		rc = part_put(im, im->warn_where[w] ? "INSERT INTO import_part_warn VALUES (?1, ?2, ?3, ?4)"
						    : "INSERT INTO import_part_warn VALUES (?1, ?2, ?3, NULL)", b, im->warn_where[w] ? 4 : 3);
	}
	for (int g = 0; g < im->ngroups && !rc; g++) {
		struct db_bind b[2] = { { .i = g }, { .text = im->groups[g].name } };
		rc = part_put(im, "INSERT INTO import_part_group VALUES (?1, ?2)", b, 2);
	}
	for (int i = 0; i < im->ncalls && !rc; i++) {
		const struct group_call *c = &im->calls[i];
		size_t cap = (size_t)c->nmembers * 12 + 1, len = 0;
		char *m = malloc(cap);
		if (!m)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		m[0] = 0;
		for (int k = 0; k < c->nmembers && c->members; k++)
			len += (size_t)snprintf(m + len, cap - len, "%s%d", k ? "," : "", c->members[k]);
		struct db_bind b[7] = { { .i = c->key }, { .i = c->g }, { .i = !!c->members }, { .i = c->nmembers },
					{ .text = m }, { .i = c->n }, { .text = c->desc } };
		rc = part_put(im, c->desc ? "INSERT INTO import_part_call VALUES (?1, ?2, ?7, ?3, ?4, ?5, ?6)"
					  : "INSERT INTO import_part_call VALUES (?1, ?2, NULL, ?3, ?4, ?5, ?6)", b, c->desc ? 7 : 6);
		free(m);
	}
	for (int i = 0; i < im->nranks && !rc; i++) {
		struct db_bind b[2] = { { .i = im->ranks[i].rank }, { .i = im->ranks[i].world_size } };
		rc = part_put(im, "INSERT INTO import_part_rank VALUES (?1, ?2)", b, 2);
	}
	return rc;
}

/* The hosts' clocks fitted and applied in a transaction of their own, with a note in meta
 * (import_clock_fit) and on msgs naming each host moved. */
static int align_clocks(struct db *db, FILE *msgs)
{
	struct db_clock_fit *f = NULL;
	int n = 0, applied = 0;
	int rc = db_clock_fit(db, &f, &n);
	for (int h = 0; !rc && h < n; h++)
		applied += f[h].applies;
	if (rc || !applied) {
		db_clock_fit_free(f, n);
		return rc;
	}
	char note[1024];
	size_t at = (size_t)snprintf(note, sizeof note, "hosts' clocks fitted from the collectives matched across hosts:");
	for (int h = 1, said = 0; h < n && at < sizeof note; h++) {
		if (!f[h].applies)
			continue;
		if (said++ == 8) {
			at += (size_t)snprintf(note + at, sizeof note - at, " and %d more", applied - 8);
			break;
		}
		char off[32], err[32];
		units_ns(off, sizeof off, fabs((double)f[h].offset_ns));
		units_ns(err, sizeof err, (double)f[h].spread_ns);
		at += (size_t)snprintf(note + at, sizeof note - at, "%s %s %s %s %s (±%s, %" PRId64 " calls)",
				       said > 1 ? ";" : "", f[h].host, off, f[h].offset_ns > 0 ? "ahead of" : "behind",
				       f[f[h].root].host, err, f[h].calls);
	}
	rc = db_begin(db);
	if (!rc)
		rc = db_clock_fit_apply(db, f, n);
	if (!rc)
		rc = db_set_meta(db, "import_clock_fit", note);
	rc = rc ? (db_rollback(db), rc) : db_commit(db);
	if (!rc && msgs)
		fprintf(msgs, "import: %s\n", note);
	db_clock_fit_free(f, n);
	return rc;
}

int imp_finish_tables(struct db *db, int view_tables, FILE *msgs)
{
	int rc = align_clocks(db, msgs);
	if (rc)
		return rc;
	return view_tables ? db_finalize_view(db) : db_finalize(db);
}

int imp_finish(struct imp *im)
{
	int rc = writer_stop(im, 0);
	int part = im->o.part_path != NULL;
	int64_t busy_ns = im->w.busy_ns, wait_ns = im->w.wait_ns;   /* the writer has ended: no lock needed */
	int64_t t_read = clock_ns(), t_post = 0, t_fin = 0, cpu_read = thread_cpu_ns() - im->cpu_start;
	if (!rc && im->nranks == 0 && !part)   /* a part without events: the other parts may have some */
		rc = ascent_error(ASCENT_EINPUT, "nothing to import: the inputs hold no events");
	im->wkey = KEY_FINISH;
	if (!rc)
		rc = pair_links(im);
	if (!rc)
		rc = shift_early_ranks(im);
	if (!rc)
		rc = put_lanes_and_ranks(im);
	im->wkey = KEY_FINISH + 1;
	if (!rc)
		rc = drop_pending_lanes(im);
	if (!rc)
		rc = db_exec_sql(im->db, FINISH_SQL);
	char buf[64];
	if (!rc) {
		snprintf(buf, sizeof buf, "%" PRId64, im->events);
		rc = db_set_meta(im->db, "import_events", buf);
	}
	int64_t nwarn = 0;
	for (int w = 0; w < IMP_W_COUNT; w++)
		nwarn += im->warn[w];
	if (!rc) {
		snprintf(buf, sizeof buf, "%" PRId64, nwarn);
		rc = db_set_meta(im->db, "import_warnings", buf);
	}
	if (!rc)
		rc = db_set_meta(im->db, "import_source", im->sources);
	if (!rc && part)
		rc = part_write(im);
	if (!rc)
		rc = db_commit(im->db);
	t_post = clock_ns();
	/* statistics, and the viewer's tables (its first screen after the import is immediate); a
	 * part's are the combined profile's */
	if (!rc && !part)
		rc = imp_finish_tables(im->db, !im->o.no_view_tables, im->o.quiet ? NULL : msgs(im));
	t_fin = clock_ns();
	if (!rc)
		rc = db_exec_sql(im->db, "PRAGMA journal_mode = DELETE");
	if (rc) {
		int r = ascent_error_ctx(rc, "cannot write '%s'", im->out);
		imp_abort(im);
		return r;
	}
	db_close(im->db);
	im->db = NULL;
	if (part) {
		imp_free(im);
		return 0;
	}
	print_warnings(im);
	if ((rc = fs_tmp_commit(&im->tmp)) != 0) {
		imp_abort(im);
		return rc;
	}
	if (im->o.phases)
		*im->o.phases = (struct imp_phases){ .read_ns = t_read - im->t_start, .writer_busy_ns = busy_ns,
						     .reader_wait_ns = wait_ns, .reader_cpu_ns = cpu_read,
						     .writer_cpu_ns = im->w.cpu_ns, .post_ns = t_post - t_read,
						     .finalize_ns = t_fin - t_post, .events = im->events };
	if (!im->o.quiet) {
		double secs = (double)(clock_ns() - im->t_start) / 1e9;
		fprintf(msgs(im), "import: %" PRId64 " events of %d rank%s from %d file%s into %s in %.2f s (%.2fM events/s)\n",
			im->events, im->nranks, im->nranks == 1 ? "" : "s", im->nfiles, im->nfiles == 1 ? "" : "s", im->out,
			secs, secs > 0 ? (double)im->events / secs / 1e6 : 0);
	}
	imp_free(im);
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* combining a parallel import's parts (import/part.h): an imp without an output, whose groups and
 * warnings are those of all the parts, in the order of the files */

int imp_combine_new(const struct imp_opts *o, const char *const *files, int n, struct imp **out)
{
	*out = NULL;
	struct imp *c = calloc(1, sizeof *c);
	if (!c)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	c->o = *o;
	c->o.part_path = NULL;
	c->o.file_no = NULL;
	c->o.progress = NULL;
	c->nfiles = c->ninputs = n;
	c->file_source = calloc((size_t)(n > 0 ? n : 1), sizeof *c->file_source);
	c->nfile_source = n;
	c->files = files;
	if (!c->file_source) {
		imp_free(c);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int w = 0; w < IMP_W_COUNT; w++)
		c->warn_key[w] = INT64_MAX;
	*out = c;
	return 0;
}

int imp_combine_file(struct imp *c, int no, const char *source)
{
	if (no < 0 || no >= c->nfile_source || !source)
		return 0;
	free(c->file_source[no]);
	return (c->file_source[no] = strdup(source)) ? 0 : ascent_error(ASCENT_ENOMEM, "out of memory");
}

int imp_combine_call(struct imp *c, int no, const char *group, const char *desc, const int *members, int nmembers,
		     int64_t n)
{
	if (no < 0 || no >= c->ninputs)
		return ascent_error(ASCENT_EINTERNAL, "a part's group definition names file %d of %d", no, c->ninputs);
	free(c->file);
	if (!(c->file = strdup(c->files[no])))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	c->nfiles = no;   /* a conflict names this file's format, as when read in order */
	int64_t before = c->warn[IMP_W_GROUP_CONFLICT];
	int g;
	int rc = group_get(c, group, desc, members, nmembers, &g);
	if (!rc && n > 1 && c->warn[IMP_W_GROUP_CONFLICT] > before) {   /* equal calls: each disagrees as the first did */
		c->warn[IMP_W_GROUP_CONFLICT] += n - 1;
		c->groups[g].conflicts += n - 1;
	}
	c->nfiles = c->ninputs;
	return rc;
}

int imp_combine_group(const struct imp *c, const char *group)
{
	return group_find(c, group);
}

int imp_combine_comm(const struct imp *c, struct db *out, int rank, int rank_world, int g, int world)
{
	if (g < 0 || g >= c->ngroups)
		return ascent_error(ASCENT_EINTERNAL, "process group %d of %d", g, c->ngroups);
	return put_comm(c, out, rank, rank_world, g, world);
}

int64_t imp_combine_comm_id(int g)
{
	return COMM_ID_BASE + g;
}

int imp_combine_warning(struct imp *c, int w, int64_t n, int64_t key, const char *where)
{
	if (w < 0 || w >= IMP_W_COUNT || w == IMP_W_GROUP_CONFLICT || n <= 0)
		return 0;
	c->warn[w] += n;
	if (key >= c->warn_key[w])
		return 0;
	c->warn_key[w] = key;
	free(c->warn_where[w]);
	c->warn_where[w] = NULL;
	/* the file whose format the warning names: as imp_warn's warn_file when read in order */
	c->warn_file[w] = key < 0 ? 0 : key >= KEY_FINISH ? c->ninputs : (int)(key / 2 + (key & 1));
	if (!where)
		return 0;
	const char *last = c->ninputs ? c->files[c->ninputs - 1] : NULL;
	size_t len = strlen(where) + (last ? strlen(last) : 0) + 8;
	if (!(c->warn_where[w] = malloc(len)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	if (key >= KEY_FINISH && last && strcmp(where, last))   /* found when the import finished: after its last file */
		snprintf(c->warn_where[w], len, "%s: %s", last, where);
	else
		snprintf(c->warn_where[w], len, "%s", where);
	return 0;
}

int64_t imp_combine_finish(struct imp *c)
{
	c->sources[0] = 0;
	for (int f = 0; f < c->nfile_source; f++) {
		const char *src = c->file_source[f];
		if (src && !strstr(c->sources, src)) {
			size_t l = strlen(c->sources);
			snprintf(c->sources + l, sizeof c->sources - l, "%s%s", l ? ", " : "", src);
		}
	}
	int64_t nwarn = 0;
	for (int w = 0; w < IMP_W_COUNT; w++)
		nwarn += c->warn[w];
	return nwarn;
}

const char *imp_combine_sources(const struct imp *c)
{
	return c->sources;
}

void imp_combine_print(const struct imp *c)
{
	print_warnings(c);
}

void imp_combine_free(struct imp *c)
{
	if (c)
		imp_free(c);
}
