/* db/view_live.c — a run read while it runs: the rank files of a run folder (rank-NNNNN.db, one
 * per rank, written by the profiler's writer thread in WAL mode), opened DB_READ_LIVE: each is a
 * WAL reader that never writes the file, never checkpoints it and holds no lock a writer waits on
 * (every statement is reset before db_live_refresh returns, so no read transaction stays open and
 * the writer's checkpoints can restart the log).
 *
 * What each refresh reads is bounded: per rank the events whose start is at or after a floor,
 *   floor = min(end of the rank's latest step event, latest start seen − LIVE_LAG_NS),
 * on the event table's clustering key (rank, start_ns, ...), in key order. The writer commits what
 * its rings hold every flush interval (200 ms, at most 1 s), so an event can arrive after events
 * that started later; the floor keeps the window open that long (LIVE_LAG_NS), and back to the
 * open step's start, whose step event comes only when the step ends. The rows of the window that
 * the previous refresh read are told by their keys (kept sorted, a merge walk). So a refresh reads
 * the open step and the last two seconds, whatever the size of the file.
 *
 * Each new event feeds: the step list (step events), the whole-run operator and collective sums
 * (per name id of the file), and the pending intervals of the step split (db_step_decompose, as
 * db_finalize computes it: db_stepsets_of gives the sets). A step is settled, its split computed
 * once, when the rank's events have gone LIVE_LAG_NS past its end (or the rank ended or died).
 * Operators and collectives of a few steps (the last N, or --steps A:B) are a range query on each
 * rank's file over those steps' time, counted in memory.
 *
 * Not seen while the run goes (they are in the merged profile): an event that started before the
 * floor and arrived after it passed: ranges longer than LIVE_LAG_NS that enclose a step's end (a
 * range around the whole loop). */
#include "db/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/file.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LIVE_LAG_NS 2000000000LL
#define LIVE_MAX_COMMS 64
/* With no steps (ascent profile -- CMD without step markers), "the last N steps" are the last N
 * seconds of the rank's events. */
#define LIVE_NOSTEP_WINDOW_NS 1000000000LL

/* An event's key: the columns of event's primary key after rank, in its order (ord: schema v4; 0
 * before). */
struct live_key {
	int64_t start, dur, name, ord;
	int tid, kind;
};

static int key_cmp(const struct live_key *a, const struct live_key *b)
{
#define KC(f) if (a->f != b->f) return a->f < b->f ? -1 : 1
	KC(start);
	KC(tid);
	KC(kind);
	KC(name);
	KC(dur);
	KC(ord);
#undef KC
	return 0;
}

struct live_step {
	int64_t step, s0, dur;
	int settled;
	struct db_step_stat st;     /* when settled */
};

/* Sums of one name of a file (operators), or of one (name, kind, size bucket) (collectives). */
struct live_sum {
	int64_t name_id, bucket;
	int kind;
	int64_t count, total_ns, min_ns, max_ns, bytes, flops_ns;
	double flops;
	int group;                  /* collectives: members of the largest communicator it ran on */
};

struct live_sums {
	struct live_sum *v;
	int n, cap;
};

struct live_ivec {
	int64_t *v;            /* [start, end) pairs */
	int n, cap;            /* pairs */
};

struct live_rank {
	struct db_live_rank pub;
	char *path;
	struct db *db;
	int version;
	char **names;
	int64_t nnames;
	struct db_stepsets *sets;
	char hostbuf[256];
	int64_t floor;             /* the scan starts here */
	int64_t max_start, max_end;
	int64_t last_step_end;
	int steps_seen;            /* an event carried a step number */
	struct live_key *seen;     /* keys read at or after floor, sorted */
	int nseen, capseen;
	struct live_step *steps;   /* by start */
	int nsteps, capsteps, nsettled;
	struct live_ivec iv[4];    /* pending intervals: op, comm, blocked, recv */
	struct live_sums ops, comms;   /* whole run */
	int finished;              /* ended or dead: nothing more comes */
	int comm_size[LIVE_MAX_COMMS];   /* members of communicator id i (comm table), 0 unknown */
	char open_err[512];        /* why the file could not be opened yet */
	int lockfd;                /* the file, opened to test its writer lock (closed after db) */
};

struct db_live {
	char *dir;
	char host[256];
	struct live_rank **r;      /* by rank number once known, else by path */
	int n, cap;
	char *command_line, *config_json;
	int world_size;
};

static const unsigned LIVE_OPS = DB_KINDS_OPERATORS;

/* ---------------------------------------------------------------------------------------- */
/* small containers */

static int ivec_push(struct live_ivec *a, int64_t s, int64_t e)
{
	if (a->n == a->cap) {
		int nc = a->cap ? a->cap * 2 : 256;
		int64_t *nv = realloc(a->v, (size_t)nc * 2 * sizeof *nv);
		if (!nv)
			return ascent_error(ASCENT_ENOMEM, "out of memory reading a live run");
		a->v = nv;
		a->cap = nc;
	}
	a->v[2 * a->n] = s;
	a->v[2 * a->n + 1] = e;
	a->n++;
	return 0;
}

/* Keep only the intervals that end after t. */
static void ivec_drop_before(struct live_ivec *a, int64_t t)
{
	int k = 0;
	for (int i = 0; i < a->n; i++)
		if (a->v[2 * i + 1] > t) {
			a->v[2 * k] = a->v[2 * i];
			a->v[2 * k + 1] = a->v[2 * i + 1];
			k++;
		}
	a->n = k;
}

static struct live_sum *sums_get(struct live_sums *s, int64_t name_id, int kind, int64_t bucket)
{
	for (int i = s->n - 1; i >= 0; i--)
		if (s->v[i].name_id == name_id && s->v[i].kind == kind && s->v[i].bucket == bucket)
			return &s->v[i];
	if (ARRAY_GROW(s->v, s->n, s->cap, 32, "reading a live run"))
		return NULL;
	struct live_sum *o = &s->v[s->n++];
	memset(o, 0, sizeof *o);
	o->name_id = name_id;
	o->kind = kind;
	o->bucket = bucket;
	return o;
}

static void sum_add(struct live_sum *o, int64_t dur, int64_t bytes, int64_t flops)
{
	if (!o->count || dur < o->min_ns)
		o->min_ns = dur;
	if (!o->count || dur > o->max_ns)
		o->max_ns = dur;
	o->count++;
	o->total_ns += dur;
	o->bytes += bytes;
	if (flops > 0) {
		o->flops += (double)flops;
		o->flops_ns += dur;
	}
}

/* One event into a pair of sums (operators, collectives); 0 or ASCENT_ENOMEM. */
static int sums_event(struct live_sums *ops, struct live_sums *comms, int kind, int64_t name_id, int64_t dur,
		      int64_t bytes, int64_t flops, int group)
{
	struct live_sum *o = NULL;
	if (kind >= 0 && kind < 32 && (LIVE_OPS & (1u << kind)))
		o = sums_get(ops, name_id, kind, 0);
	else if (kind == DB_KIND_COMM || kind == DB_KIND_P2P)
		o = sums_get(comms, name_id, kind, db_bytes_bucket(bytes));
	else
		return 0;
	if (!o)
		return ASCENT_ENOMEM;
	sum_add(o, dur, bytes, flops);
	if (group > o->group)
		o->group = group;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* opening */

static void rank_free(struct live_rank *r)
{
	if (!r)
		return;
	db_close(r->db);
	if (r->lockfd > 0)   /* after SQLite's connection: closing another descriptor of the file would
			      * drop this process's fcntl locks on it */
		close(r->lockfd);
	db_strings_free(r->names, r->nnames);
	db_stepsets_free(r->sets);
	free(r->path);
	free(r->seen);
	free(r->steps);
	for (int k = 0; k < 4; k++)
		free(r->iv[k].v);
	free(r->ops.v);
	free(r->comms.v);
	free(r);
}

void db_live_close(struct db_live *lv)
{
	if (!lv)
		return;
	for (int i = 0; i < lv->n; i++)
		rank_free(lv->r[i]);
	free(lv->r);
	free(lv->dir);
	free(lv->command_line);
	free(lv->config_json);
	free(lv);
}

/* "rank-NNNNN.db" → N; −1 for any other name. */
static int rank_file_number(const char *name)
{
	size_t l = strlen(name);
	if (strncmp(name, "rank-", 5) || l < 9 || strcmp(name + l - 3, ".db"))
		return -1;
	char *end;
	long v = strtol(name + 5, &end, 10);
	return end == name + l - 3 && v >= 0 && v < (1L << 24) ? (int)v : -1;
}

int db_live_rank_files(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		n += rank_file_number(e->d_name) >= 0;
	closedir(d);
	return n;
}

static int cmp_rank(const void *a, const void *b)
{
	const struct live_rank *x = *(struct live_rank *const *)a, *y = *(struct live_rank *const *)b;
	return (x->pub.rank > y->pub.rank) - (x->pub.rank < y->pub.rank);
}

/* Rank files that appeared since the last look (a rank starts later than the others). */
static int find_new_files(struct db_live *lv)
{
	DIR *d = opendir(lv->dir);
	if (!d)
		return 0;   /* the folder went away: keep what we have */
	struct dirent *e;
	int rc = 0, added = 0;
	while (!rc && (e = readdir(d))) {
		int num = rank_file_number(e->d_name);
		if (num < 0)
			continue;
		int have = 0;
		for (int i = 0; i < lv->n && !have; i++)
			have = lv->r[i]->pub.rank == num;
		if (have)
			continue;
		struct live_rank *r = calloc(1, sizeof *r);
		if (!r || ARRAY_GROW(lv->r, lv->n, lv->cap, 8, "reading a live run")) {
			free(r);
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		size_t pl = strlen(lv->dir) + strlen(e->d_name) + 2;
		if (!(r->path = malloc(pl))) {
			free(r);
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		snprintf(r->path, pl, "%s/%s", lv->dir, e->d_name);
		r->pub.rank = num;
		r->pub.path = r->path;
		r->pub.pid = -1;
		r->pub.host = "";
		r->pub.last_step = -1;
		lv->r[lv->n++] = r;
		added = 1;
	}
	closedir(d);
	if (added)
		qsort(lv->r, (size_t)lv->n, sizeof *lv->r, cmp_rank);
	return rc;
}

int db_live_open(const char *dir, struct db_live **out)
{
	*out = NULL;
	struct db_live *lv = calloc(1, sizeof *lv);
	if (!lv || !(lv->dir = strdup(dir))) {
		free(lv);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	gethostname(lv->host, sizeof lv->host - 1);
	int rc = find_new_files(lv);
	if (!rc && !lv->n)
		rc = ascent_error(ASCENT_EINPUT, "'%s' holds no rank files (rank-NNNNN.db) and no trace.db: not a profiled "
				  "run (ascent train --profile, ascent profile -- CMD)", dir);
	if (rc) {
		db_live_close(lv);
		return rc;
	}
	*out = lv;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* one rank file: its state */

static int read_rank_row(struct db_live *lv, struct live_rank *r)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(r->db, "SELECT pid, coalesce(host, ''), coalesce(t0_utc_ns, 0) FROM rank WHERE rank = ?1", &s);
	if (rc)
		return rc;
	db_bind_int(r->db, s, 1, r->pub.rank);
	int src = db_step(r->db, s);
	if (src == SQLITE_ROW) {
		r->pub.pid = sqlite3_column_int(s, 0);
		snprintf(r->hostbuf, sizeof r->hostbuf, "%s", (const char *)sqlite3_column_text(s, 1));
		r->pub.host = r->hostbuf;
		r->pub.t0_utc_ns = sqlite3_column_int64(s, 2);
		r->pub.local = !strcmp(r->hostbuf, lv->host);
	}
	rc = db_finish(r->db, s, src, 0);
	if (!rc && !lv->command_line) {
		if ((rc = db_prep(r->db, "SELECT coalesce(command_line, ''), coalesce(config_json, ''), coalesce(world_size, 0)"
				  " FROM run ORDER BY id LIMIT 1", &s)) != 0)
			return rc;
		if ((src = db_step(r->db, s)) == SQLITE_ROW) {
			lv->command_line = strdup((const char *)sqlite3_column_text(s, 0));
			lv->config_json = strdup((const char *)sqlite3_column_text(s, 1));
			lv->world_size = sqlite3_column_int(s, 2);
		}
		rc = db_finish(r->db, s, src, 0);
	}
	return rc;
}

/* Whether the profiler's writer lock on the file is free (profiler/writer.c: an exclusive flock
 * held from prof_init to prof_shutdown, dropped by the kernel however the process ends; merge
 * refuses a part whose lock is held). Tested by taking it shared without waiting and dropping it
 * at once; asked only once the file holds events, which the writer commits after taking its lock,
 * so the test never stands in the way of its taking it. */
static int writer_gone(struct live_rank *r)
{
	if (r->lockfd <= 0)
		r->lockfd = open(r->path, O_RDONLY | O_CLOEXEC);
	if (r->lockfd <= 0)
		return 0;
	if (flock(r->lockfd, LOCK_SH | LOCK_NB) != 0)
		return 0;   /* held: the writer runs */
	flock(r->lockfd, LOCK_UN);
	return 1;
}

/* The writer's state: ended when the file was finalized (its indexes exist: prof_shutdown), dead
 * when it is not and its writer lock is free — unless the writer's pid still runs on this host (a
 * file written by a profiler older than the lock). */
static int check_state(struct live_rank *r)
{
	int64_t idx = 0;
	int rc = db_scalar_i64(r->db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'event_step'",
			       &idx, NULL);
	if (rc)
		return rc;
	int was = r->pub.state;
	if (idx > 0)
		r->pub.state = DB_LIVE_ENDED;
	else if (r->pub.events > 0 && writer_gone(r) &&
		 !(r->pub.local && r->pub.pid > 0 && (kill((pid_t)r->pub.pid, 0) == 0 || errno != ESRCH)))
		r->pub.state = DB_LIVE_DEAD;
	else
		r->pub.state = DB_LIVE_RUNNING;
	if (r->pub.state != was)
		r->pub.state_utc_ns = clock_utc_ns();
	return 0;
}

static int open_rank(struct db_live *lv, struct live_rank *r)
{
	int rc = db_open(r->path, DB_READ_LIVE, &r->db);
	if (rc) {
		/* a file just created may not hold its schema yet: try again at the next refresh */
		snprintf(r->open_err, sizeof r->open_err, "%s", ascent_errmsg());
		r->db = NULL;
		return 0;
	}
	r->version = db_schema_version(r->db);
	return read_rank_row(lv, r);
}

/* ---------------------------------------------------------------------------------------- */
/* one rank file: new events */

static int step_insert(struct live_rank *r, int64_t step, int64_t s0, int64_t dur)
{
	int rc = ARRAY_GROW(r->steps, r->nsteps, r->capsteps, 64, "reading a live run");
	if (rc)
		return rc;
	int i = r->nsteps;
	while (i > r->nsettled && r->steps[i - 1].s0 > s0)
		i--;
	memmove(&r->steps[i + 1], &r->steps[i], (size_t)(r->nsteps - i) * sizeof *r->steps);
	r->steps[i] = (struct live_step){ .step = step, .s0 = s0, .dur = dur };
	r->nsteps++;
	int64_t e = i64_add_sat(s0, dur);
	if (e > r->last_step_end)
		r->last_step_end = e;
	if (step > r->pub.last_step)
		r->pub.last_step = step;
	return 0;
}

/* The split of step i from the pending intervals that overlap it. */
static int settle_one(struct live_rank *r, struct live_step *st)
{
	int64_t s1 = i64_add_sat(st->s0, st->dur);
	struct live_ivec in[4] = { { 0 } };
	int rc = 0;
	for (int k = 0; k < 4 && !rc; k++)
		for (int i = 0; i < r->iv[k].n && !rc; i++) {
			int64_t a = r->iv[k].v[2 * i], b = r->iv[k].v[2 * i + 1];
			if (a < s1 && b > st->s0 && a >= st->s0)
				rc = ivec_push(&in[k], a, b);
		}
	if (!rc) {
		st->st.rank = r->pub.rank;
		st->st.step = st->step;
		st->st.start_ns = st->s0;
		db_step_decompose(st->s0, s1, in[0].v, in[0].n, in[1].v, in[1].n, in[2].v, in[2].n, in[3].v, in[3].n,
				  &st->st);
		st->settled = 1;
	}
	for (int k = 0; k < 4; k++)
		free(in[k].v);
	return rc;
}

/* Settle the steps whose end the events have passed by LIVE_LAG_NS (all of them once the rank has
 * finished); drop the intervals no unsettled step can need. */
static int settle(struct live_rank *r)
{
	int rc = 0, any = 0;
	while (r->nsettled < r->nsteps && !rc) {
		struct live_step *st = &r->steps[r->nsettled];
		int64_t s1 = i64_add_sat(st->s0, st->dur);
		if (!r->finished && r->max_start - LIVE_LAG_NS < s1)
			break;
		rc = settle_one(r, st);
		r->nsettled++;
		any = 1;
	}
	int64_t keep_after = INT64_MIN;
	if (any && r->nsettled)
		keep_after = i64_add_sat(r->steps[r->nsettled - 1].s0, r->steps[r->nsettled - 1].dur);
	else if (!r->steps_seen && !r->nsteps)
		keep_after = r->max_start - LIVE_LAG_NS;   /* no steps: nothing will ask for these */
	if (keep_after != INT64_MIN)
		for (int k = 0; k < 4; k++)
			ivec_drop_before(&r->iv[k], keep_after);
	return rc;
}

static int64_t current_floor(const struct live_rank *r)
{
	int64_t f = r->max_start - LIVE_LAG_NS;
	if (r->steps_seen && r->last_step_end < f)
		f = r->last_step_end;
	return f > r->floor ? f : r->floor;
}

static int group_of(const struct live_rank *r, int64_t comm_id)
{
	return comm_id >= 0 && comm_id < LIVE_MAX_COMMS && r->comm_size[comm_id] > 0 ? r->comm_size[comm_id] : 1;
}

static int new_event(struct live_rank *r, const struct live_key *k, int64_t step, int64_t bytes, int64_t flops,
		     int64_t comm_id)
{
	int rc = 0;
	r->pub.events++;
	int64_t end = i64_add_sat(k->start, k->dur);
	if (k->start > r->max_start)
		r->max_start = k->start;
	if (end > r->max_end)
		r->max_end = end;
	r->pub.last_ns = r->max_end;
	if (step >= 0)
		r->steps_seen = 1;
	if (k->kind == DB_KIND_STEP && step >= 0)
		rc = step_insert(r, step, k->start, k->dur);
	if (!rc)
		rc = sums_event(&r->ops, &r->comms, k->kind, k->name, k->dur, bytes, flops, group_of(r, comm_id));
	if (!rc && r->sets) {
		unsigned m = db_stepsets_of(r->sets, r->pub.rank, k->tid, k->kind, k->name);
		for (int b = 0; b < 4 && !rc; b++)
			if (m & (1u << b))
				rc = ivec_push(&r->iv[b], k->start, end);
	}
	return rc;
}

/* The names and the split's classification again when the file has new strings. */
static int load_names(struct live_rank *r)
{
	int64_t mx = 0;
	int rc = db_scalar_i64(r->db, "SELECT coalesce(max(id), 0) FROM string", &mx, NULL);
	if (rc || mx + 1 <= r->nnames)
		return rc;
	db_strings_free(r->names, r->nnames);
	r->names = NULL;
	r->nnames = 0;
	if ((rc = db_strings(r->db, &r->names, &r->nnames)) != 0)
		return rc;
	db_stepsets_free(r->sets);
	r->sets = NULL;
	return db_stepsets_new(r->db, &r->sets);
}

static int load_comms(struct live_rank *r)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(r->db, "SELECT comm_id, coalesce(size, 0) FROM comm WHERE rank = ?1", &s);
	if (rc)
		return rc;
	db_bind_int(r->db, s, 1, r->pub.rank);
	int src;
	while ((src = db_step(r->db, s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		if (id >= 0 && id < LIVE_MAX_COMMS)
			r->comm_size[id] = sqlite3_column_int(s, 1);
	}
	return db_finish(r->db, s, src, 0);
}

static int scan_events(struct live_rank *r)
{
	char sql[400];
	snprintf(sql, sizeof sql,
		 "SELECT start_ns, tid, kind, name_id, dur_ns, %s, coalesce(step, -1), bytes, flops,"
		 " coalesce(comm_id, -1) FROM event WHERE rank = ?1 AND start_ns >= ?2 ORDER BY start_ns, tid, kind, name_id, dur_ns%s",
		 r->version >= 4 ? "ord" : "0", r->version >= 4 ? ", ord" : "");
	sqlite3_stmt *s = NULL;
	int rc = db_prep(r->db, sql, &s);
	if (rc)
		return rc;
	db_bind_int(r->db, s, 1, r->pub.rank);
	db_bind_i64(r->db, s, 2, r->floor);
	struct live_key *cur = NULL;
	int ncur = 0, capcur = 0, j = 0, src;
	while ((src = db_step(r->db, s)) == SQLITE_ROW) {
		struct live_key k = {
			.start = sqlite3_column_int64(s, 0), .tid = sqlite3_column_int(s, 1),
			.kind = sqlite3_column_int(s, 2), .name = sqlite3_column_int64(s, 3),
			.dur = sqlite3_column_int64(s, 4), .ord = sqlite3_column_int64(s, 5),
		};
		if ((rc = ARRAY_GROW(cur, ncur, capcur, 1024, "reading a live run")) != 0)
			break;
		cur[ncur++] = k;
		int c = 1;
		while (j < r->nseen && (c = key_cmp(&r->seen[j], &k)) < 0)
			j++;
		if (j < r->nseen && c == 0)
			continue;   /* read by an earlier refresh */
		if ((rc = new_event(r, &k, sqlite3_column_int64(s, 6), sqlite3_column_int64(s, 7),
				    sqlite3_column_int64(s, 8), sqlite3_column_int64(s, 9))) != 0)
			break;
		if ((ncur & 4095) == 0) {   /* a long first read: settle and forget as it goes */
			int64_t f = current_floor(r);
			if ((rc = settle(r)) != 0)
				break;
			int drop = 0;
			while (drop < ncur && cur[drop].start < f)
				drop++;
			if (drop > ncur / 2) {
				memmove(cur, cur + drop, (size_t)(ncur - drop) * sizeof *cur);
				ncur -= drop;
			}
		}
	}
	rc = db_finish(r->db, s, src, rc);
	if (rc) {
		free(cur);
		return rc;
	}
	free(r->seen);
	r->seen = cur;
	r->nseen = ncur;
	r->capseen = capcur;
	r->floor = current_floor(r);
	int drop = 0;
	while (drop < r->nseen && r->seen[drop].start < r->floor)
		drop++;
	if (drop)   /* (seen is NULL while nothing was seen: no arithmetic on it) */
		memmove(r->seen, r->seen + drop, (size_t)(r->nseen - drop) * sizeof *r->seen);
	r->nseen -= drop;
	return 0;
}

static int refresh_rank(struct db_live *lv, struct live_rank *r)
{
	if (r->finished)
		return 0;
	int rc = 0;
	if (!r->db && ((rc = open_rank(lv, r)) != 0 || !r->db))
		return rc;
	if (r->pub.pid <= 0 && (rc = read_rank_row(lv, r)) != 0)
		return rc;
	/* the state first: what a finished writer committed is all there is, so read it after */
	if ((rc = check_state(r)) != 0)
		return rc;
	if ((rc = load_names(r)) != 0 || (rc = load_comms(r)) != 0)
		return rc;
	int64_t had = r->pub.events;
	if ((rc = scan_events(r)) != 0)
		return rc;
	if (!had && r->pub.events && r->pub.state == DB_LIVE_RUNNING) {
		/* the first events: the lock can be asked now; a writer found gone is read once more */
		if ((rc = check_state(r)) != 0)
			return rc;
		if (r->pub.state == DB_LIVE_DEAD && (rc = scan_events(r)) != 0)
			return rc;
	}
	r->finished = r->pub.state == DB_LIVE_ENDED || r->pub.state == DB_LIVE_DEAD;
	return settle(r);
}

int db_live_refresh(struct db_live *lv)
{
	int rc = find_new_files(lv), nopen = 0;
	for (int i = 0; i < lv->n && !rc; i++) {
		rc = refresh_rank(lv, lv->r[i]);
		if (rc)
			ascent_error_ctx(rc, "reading '%s' while its run writes it", lv->r[i]->path);
		nopen += lv->r[i]->db != NULL;
	}
	if (!rc && lv->n && !nopen)
		return ascent_error(ASCENT_EINPUT, "cannot watch the run in '%s': none of its %d rank file(s) can be read "
				    "yet (%s); a run that is starting writes them in a moment: try again", lv->dir, lv->n,
				    lv->r[0]->open_err);
	return rc;
}

int db_live_nranks(const struct db_live *lv)
{
	return lv->n;
}

const struct db_live_rank *db_live_rank_at(const struct db_live *lv, int i)
{
	return i >= 0 && i < lv->n ? &lv->r[i]->pub : NULL;
}

const char *db_live_command_line(const struct db_live *lv)
{
	return lv->command_line ? lv->command_line : "";
}

const char *db_live_config_json(const struct db_live *lv)
{
	return lv->config_json ? lv->config_json : "";
}

int db_live_world_size(const struct db_live *lv)
{
	return lv->world_size > lv->n ? lv->world_size : lv->n;
}

/* ---------------------------------------------------------------------------------------- */
/* the views' queries */

static int want_rank(struct db_filter f, const struct live_rank *r)
{
	return f.rank < 0 || f.rank == r->pub.rank;
}

int db_live_steps(struct db_live *lv, struct db_filter f, struct db_view_step **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	/* every step number any rank has, ascending */
	int64_t *all = NULL;
	int na = 0, cap = 0;
	for (int i = 0; i < lv->n; i++) {
		struct live_rank *r = lv->r[i];
		if (!want_rank(f, r))
			continue;
		for (int k = 0; k < r->nsteps; k++) {
			int64_t s = r->steps[k].step;
			if (f.step_lo >= 0 && (s < f.step_lo || s > f.step_hi))
				continue;
			int rc = ARRAY_GROW(all, na, cap, 256, "reading a live run");
			if (rc) {
				free(all);
				return rc;
			}
			all[na++] = s;
		}
	}
	if (na)
		qsort(all, (size_t)na, sizeof *all, stats_cmp_i64);
	int nu = 0;
	for (int i = 0; i < na; i++)
		if (!nu || all[nu - 1] != all[i])
			all[nu++] = all[i];
	struct db_view_step *v = calloc((size_t)nu + 1, sizeof *v);
	if (!v) {
		free(all);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < nu; i++) {
		v[i].step = all[i];
		v[i].slow_rank = -1;
		v[i].computing_ns = v[i].comm_not_overlapped_ns = v[i].overlapped_ns = v[i].free_ns = v[i].bubble_ns =
			v[i].preparing_ns = -1;
	}
	/* each rank's steps are in start order, which is step order: one walk per rank */
	int *nsplit = calloc((size_t)nu + 1, sizeof *nsplit);
	if (!nsplit) {
		free(all);
		free(v);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < lv->n; i++) {
		struct live_rank *r = lv->r[i];
		if (!want_rank(f, r))
			continue;
		for (int k = 0; k < r->nsteps; k++) {
			const struct live_step *st = &r->steps[k];
			int64_t *p = bsearch(&st->step, all, (size_t)nu, sizeof *all, stats_cmp_i64);
			if (!p)
				continue;
			struct db_view_step *o = &v[p - all];
			if (!o->nranks || st->dur > o->max_total_ns) {
				o->max_total_ns = st->dur;
				o->slow_rank = r->pub.rank;
			}
			if (!o->nranks || st->dur < o->min_total_ns)
				o->min_total_ns = st->dur;
			o->nranks++;
			if (!st->settled)
				continue;
			int *ns = &nsplit[p - all];
			if (!*ns)
				o->computing_ns = o->comm_not_overlapped_ns = o->overlapped_ns = o->free_ns = o->bubble_ns =
					o->preparing_ns = 0;
			(*ns)++;
			o->computing_ns += st->st.computing_ns;
			o->comm_not_overlapped_ns += st->st.comm_not_overlapped_ns;
			o->overlapped_ns += st->st.overlapped_ns;
			o->free_ns += st->st.free_ns;
			o->bubble_ns += st->st.bubble_ns;
			o->preparing_ns += st->st.preparing_ns;
		}
	}
	for (int i = 0; i < nu; i++)
		if (nsplit[i]) {
			v[i].computing_ns /= nsplit[i];
			v[i].comm_not_overlapped_ns /= nsplit[i];
			v[i].overlapped_ns /= nsplit[i];
			v[i].free_ns /= nsplit[i];
			v[i].bubble_ns /= nsplit[i];
			v[i].preparing_ns /= nsplit[i];
		}
	free(nsplit);
	free(all);
	*out = v;
	*nout = nu;
	return 0;
}

/* The steps of r that a query covers: those of f's range, or (f's range unset and last_n > 0) its
 * last last_n steps, or all (last_n 0). [*lo, *hi) into r->steps. */
static void step_span(const struct live_rank *r, struct db_filter f, int last_n, int settled_only, int *lo, int *hi)
{
	int n = settled_only ? r->nsettled : r->nsteps;
	*lo = 0;
	*hi = n;
	if (f.step_lo >= 0) {
		while (*lo < n && r->steps[*lo].step < f.step_lo)
			(*lo)++;
		*hi = *lo;
		while (*hi < n && r->steps[*hi].step <= f.step_hi)
			(*hi)++;
	} else if (last_n > 0 && n > last_n) {
		*lo = n - last_n;
	}
}

int db_live_ranks(struct db_live *lv, struct db_filter f, int last_n, struct db_view_rank **out, int *nout)
{
	*out = calloc((size_t)lv->n + 1, sizeof **out);
	*nout = 0;
	if (!*out)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < lv->n; i++) {
		const struct live_rank *r = lv->r[i];
		struct db_view_rank *o = &(*out)[(*nout)++];
		o->rank = r->pub.rank;
		if (!(o->host = strdup(r->pub.host))) {
			db_view_ranks_free(*out, *nout);
			*out = NULL;
			*nout = 0;
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		int lo, hi;
		step_span(r, f, last_n, 1, &lo, &hi);
		for (int k = lo; k < hi; k++) {
			const struct db_step_stat *s = &r->steps[k].st;
			o->steps++;
			o->total_ns += s->total_ns;
			o->computing_ns += s->computing_ns;
			o->comm_ns += s->comm_ns;
			o->comm_not_overlapped_ns += s->comm_not_overlapped_ns;
			o->overlapped_ns += s->overlapped_ns;
			o->free_ns += s->free_ns;
			o->bubble_ns += s->bubble_ns;
		}
	}
	return 0;
}

/* The events of r in the time of the query's steps, summed: a range query on the file. With no
 * steps on the rank, the last LIVE_NOSTEP_WINDOW_NS · last_n of its events. */
static int range_sums(struct live_rank *r, struct db_filter f, int last_n, struct live_sums *ops,
		      struct live_sums *comms)
{
	int64_t t0, t1 = INT64_MAX;
	if (r->nsteps) {
		int lo, hi;
		step_span(r, f, last_n, 0, &lo, &hi);
		if (hi <= lo)
			return 0;
		t0 = r->steps[lo].s0;
		t1 = i64_add_sat(r->steps[hi - 1].s0, r->steps[hi - 1].dur);
	} else {
		t0 = r->max_end - LIVE_NOSTEP_WINDOW_NS * (last_n > 0 ? last_n : 1);
	}
	sqlite3_stmt *s = NULL;
	int rc = db_prep(r->db, "SELECT kind, name_id, dur_ns, bytes, flops, coalesce(comm_id, -1) FROM event"
				" WHERE rank = ?1 AND start_ns >= ?2 AND start_ns < ?3", &s);
	if (rc)
		return rc;
	db_bind_int(r->db, s, 1, r->pub.rank);
	db_bind_i64(r->db, s, 2, t0);
	db_bind_i64(r->db, s, 3, t1);
	int src;
	while ((src = db_step(r->db, s)) == SQLITE_ROW && !rc)
		rc = sums_event(ops, comms, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int64(s, 2),
				sqlite3_column_int64(s, 3), sqlite3_column_int64(s, 4), group_of(r, sqlite3_column_int64(s, 5)));
	return db_finish(r->db, s, src, rc);
}

static const char *name_of(const struct live_rank *r, int64_t id)
{
	return id > 0 && id < r->nnames && r->names[id] ? r->names[id] : "?";
}

/* Sums of every wanted rank (whole run: last_n < 0; else the query's steps), keyed by name across
 * ranks: out[i].name_id is an index into *names (borrowed strings). */
static int gather(struct db_live *lv, struct db_filter f, int last_n, int comm, struct live_sums *out,
		  const char ***names, int *nnames)
{
	int rc = 0, cap = 0;
	*names = NULL;
	*nnames = 0;
	for (int i = 0; i < lv->n && !rc; i++) {
		struct live_rank *r = lv->r[i];
		if (!r->db || !want_rank(f, r))
			continue;
		struct live_sums tops = { 0 }, tcomms = { 0 }, *src;
		if (last_n < 0 && f.step_lo < 0) {
			src = comm ? &r->comms : &r->ops;
		} else {
			rc = range_sums(r, f, last_n, &tops, &tcomms);
			src = comm ? &tcomms : &tops;
		}
		for (int k = 0; k < src->n && !rc; k++) {
			const struct live_sum *e = &src->v[k];
			const char *nm = name_of(r, e->name_id);
			int id = 0;
			while (id < *nnames && strcmp((*names)[id], nm))
				id++;
			if (id == *nnames) {
				if ((rc = ARRAY_GROW(*names, *nnames, cap, 32, "reading a live run")) != 0)
					break;
				(*names)[(*nnames)++] = nm;
			}
			struct live_sum *o = sums_get(out, id, e->kind, e->bucket);
			if (!o) {
				rc = ASCENT_ENOMEM;
				break;
			}
			if (e->group > o->group)
				o->group = e->group;
			if (!o->count || e->min_ns < o->min_ns)
				o->min_ns = e->min_ns;
			if (!o->count || e->max_ns > o->max_ns)
				o->max_ns = e->max_ns;
			o->count += e->count;
			o->total_ns += e->total_ns;
			o->bytes += e->bytes;
			o->flops += e->flops;
			o->flops_ns += e->flops_ns;
		}
		free(tops.v);
		free(tcomms.v);
	}
	return rc;
}

int db_live_ops(struct db_live *lv, struct db_filter f, int last_n, unsigned kind_mask, struct db_view_op **out,
		int *nout)
{
	*out = NULL;
	*nout = 0;
	struct live_sums s = { 0 };
	const char **names;
	int nn;
	int rc = gather(lv, f, last_n, 0, &s, &names, &nn);
	struct db_view_op *v = rc ? NULL : calloc((size_t)s.n + 1, sizeof *v);
	if (!rc && !v)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	int n = 0;
	for (int i = 0; i < s.n && !rc; i++) {
		const struct live_sum *e = &s.v[i];
		if (e->kind < 0 || e->kind >= 32 || !(kind_mask & (1u << e->kind)))
			continue;
		struct db_view_op *o = &v[n];
		if (!(o->name = strdup(names[e->name_id]))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		n++;
		o->name_id = 0;   /* names differ per rank file: no instances drill-down while live */
		o->kind = e->kind;
		o->count = e->count;
		o->total_ns = e->total_ns;
		o->self_ns = -1;
		o->min_ns = e->min_ns;
		o->max_ns = e->max_ns;
		o->med_ns = o->p95_ns = -1;
		o->flops = e->flops;
		o->flops_ns = e->flops_ns;
	}
	free(s.v);
	free(names);
	if (rc) {
		db_view_ops_free(v, n);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}

int db_live_comms(struct db_live *lv, struct db_filter f, int last_n, struct db_view_comm **out, int *nout)
{
	*out = NULL;
	*nout = 0;
	struct live_sums s = { 0 };
	const char **names;
	int nn;
	int rc = gather(lv, f, last_n, 1, &s, &names, &nn);
	struct db_view_comm *v = rc ? NULL : calloc((size_t)s.n + 1, sizeof *v);
	if (!rc && !v)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	int n = 0;
	for (int i = 0; i < s.n && !rc; i++) {
		const struct live_sum *e = &s.v[i];
		struct db_view_comm *o = &v[n];
		if (!(o->name = strdup(names[e->name_id])) || !(o->members = strdup(""))) {
			free(o->name);
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		n++;
		o->kind = e->kind;
		o->bucket = e->bucket;
		o->comm_id = -1;
		o->group_size = e->group > 0 ? e->group : 1;
		o->count = e->count;
		o->total_ns = e->total_ns;
		o->bytes = e->bytes;
	}
	free(s.v);
	free(names);
	if (rc) {
		db_view_comms_free(v, n);
		return rc;
	}
	*out = v;
	*nout = n;
	return 0;
}
