/* tests/unit/test_db_live.c — db/view_live.c: a run's rank files read while they are written.
 * Each refresh counts every event once (rows already read are told by their keys, a late row
 * inside the window is found), settles a step's split once the events are LIVE_LAG_NS (2 s) past
 * its end, tells a finished rank from a dead one, and never writes the files: a killed writer's
 * write-ahead log is left as it was (merge recovers it), even when the reader is the last
 * connection and closes. */
#include "common/common.h"
#include "db/db.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define S 1000000000LL   /* one second in ns */

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof dir, "/tmp/ascent-live-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
	cr_assert_eq(system(cmd), 0);
}

static int64_t id_of(struct db *db, const char *s)
{
	int64_t id = 0;
	cr_assert_eq(db_intern(db, s, &id), 0, "%s", ascent_errmsg());
	return id;
}

static void ev(struct db *db, int rank, int kind, const char *name, int64_t start, int64_t dur, int64_t step)
{
	struct db_event e = { .start_ns = start, .dur_ns = dur, .step = step, .name_id = id_of(db, name), .rank = rank,
			      .kind = kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	cr_assert_eq(db_put_event(db, &e), 0, "%s", ascent_errmsg());
}

/* A rank file as the profiler starts it: the rank row (pid, this host), in WAL mode. */
static struct db *rank_file(int rank, int pid)
{
	char p[128], host[256] = "";
	snprintf(p, sizeof p, "%s/rank-%05d.db", dir, rank);
	gethostname(host, sizeof host - 1);
	struct db *db;
	cr_assert_eq(db_open(p, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_begin(db), 0);
	db_put_run(db, "ascent train --dp 2", "{\"steps\":100}", 2);
	struct db_rank_info r = { .rank = rank, .host = host, .pid = pid, .dp_rank = rank, .threads = 1 };
	cr_assert_eq(db_put_rank(db, &r), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_commit(db), 0);
	return db;
}

/* One step on rank `rank`: [t, t + 1 s) with a 600 ms operator (step s). */
static void step(struct db *db, int rank, int64_t s, int64_t t)
{
	ev(db, rank, DB_KIND_STEP, "step", t, S, s);
	ev(db, rank, DB_KIND_OP, "matmul", t + 100, 6 * S / 10, s);
}

static int64_t op_calls(struct db_live *lv, int last_n)
{
	struct db_view_op *o;
	int n;
	cr_assert_eq(db_live_ops(lv, DB_FILTER_ALL, last_n, DB_KINDS_OPERATORS, &o, &n), 0, "%s", ascent_errmsg());
	int64_t c = 0;
	for (int i = 0; i < n; i++)
		c += o[i].count;
	db_view_ops_free(o, n);
	return c;
}

TestSuite(live, .init = setup, .fini = teardown);

Test(live, each_event_once_and_late_rows_found)
{
	struct db *w = rank_file(0, getpid());
	db_begin(w);
	for (int s = 1; s <= 3; s++)
		step(w, 0, s, (int64_t)s * S);
	db_commit(w);
	struct db_live *lv;
	cr_assert_eq(db_live_open(dir, &lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_refresh(lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(op_calls(lv, -1), 3);
	cr_assert_eq(db_live_rank_at(lv, 0)->events, 6);
	cr_assert_eq(db_live_rank_at(lv, 0)->state, DB_LIVE_RUNNING);
	/* nothing new: nothing counted twice */
	cr_assert_eq(db_live_refresh(lv), 0);
	cr_assert_eq(op_calls(lv, -1), 3);
	/* the next commit brings step 4 and a row that started before the newest one read (a thread's
	 * ring drained late): both counted, once */
	db_begin(w);
	step(w, 0, 4, 4 * S);
	ev(w, 0, DB_KIND_OP, "gelu", 3 * S + 700, 1000, 3);
	db_commit(w);
	cr_assert_eq(db_live_refresh(lv), 0);
	cr_assert_eq(db_live_refresh(lv), 0);
	cr_assert_eq(op_calls(lv, -1), 5);
	cr_assert_eq(db_live_rank_at(lv, 0)->events, 9);
	cr_assert_eq(op_calls(lv, 1), 1, "the last step holds one operator");
	cr_assert_eq(op_calls(lv, 2), 3, "steps 3 and 4: matmul twice and the late gelu");
	struct db_view_step *st;
	int n;
	cr_assert_eq(db_live_steps(lv, DB_FILTER_ALL, &st, &n), 0);
	cr_assert_eq(n, 4);
	cr_assert_eq(st[3].step, 4);
	cr_assert_eq(st[3].max_total_ns, S);
	/* settled: step 1 only (its end, 2 s, is 2 s behind the newest start, 4 s + 100 ns) */
	cr_assert_eq(st[0].computing_ns, 6 * S / 10);
	cr_assert_eq(st[0].free_ns, 4 * S / 10);
	cr_assert_eq(st[1].computing_ns, -1);
	cr_assert_eq(st[2].computing_ns, -1);
	cr_assert_eq(st[3].computing_ns, -1);
	free(st);
	db_live_close(lv);
	db_close(w);
}

Test(live, ended_and_dead_ranks)
{
	/* rank 0 runs in this process; rank 1's process is gone (a child that exited) */
	pid_t child = fork();
	if (!child)
		_exit(0);
	cr_assert_eq(waitpid(child, NULL, 0), child);
	struct db *w0 = rank_file(0, getpid()), *w1 = rank_file(1, child);
	db_begin(w0);
	step(w0, 0, 1, S);
	db_commit(w0);
	db_begin(w1);
	step(w1, 1, 1, S);
	db_commit(w1);
	struct db_live *lv;
	cr_assert_eq(db_live_open(dir, &lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_refresh(lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_nranks(lv), 2);
	cr_assert_eq(db_live_rank_at(lv, 0)->state, DB_LIVE_RUNNING);
	cr_assert_eq(db_live_rank_at(lv, 1)->state, DB_LIVE_DEAD);
	cr_assert_gt(db_live_rank_at(lv, 1)->state_utc_ns, 0);
	cr_assert_eq(db_live_rank_at(lv, 1)->pid, child);
	/* a dead rank's steps are all settled: nothing more comes */
	struct db_view_rank *r;
	int n;
	cr_assert_eq(db_live_ranks(lv, DB_FILTER_ALL, 10, &r, &n), 0);
	cr_assert_eq(n, 2);
	cr_assert_eq(r[1].steps, 1);
	cr_assert_eq(r[1].computing_ns, 6 * S / 10);
	cr_assert_eq(r[0].steps, 0, "rank 0's step is not settled yet");
	db_view_ranks_free(r, n);
	/* rank 0 finishes (the profiler's shutdown finalizes its file): ended */
	cr_assert_eq(db_finalize(w0), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_refresh(lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_rank_at(lv, 0)->state, DB_LIVE_ENDED);
	db_live_close(lv);
	db_close(w0);
	db_close(w1);
}

/* A rank on another host: its writer's lock (profiler/writer.c's exclusive flock) says whether it
 * runs; its pid means nothing here. */
Test(live, writer_lock_tells_a_remote_rank)
{
	char p[128];
	snprintf(p, sizeof p, "%s/rank-00000.db", dir);
	struct db *w;
	cr_assert_eq(db_open(p, DB_CREATE, &w), 0, "%s", ascent_errmsg());
	db_begin(w);
	db_put_run(w, "ascent train", "{}", 1);
	struct db_rank_info ri = { .rank = 0, .host = "another-host.example", .pid = 1, .threads = 1 };
	db_put_rank(w, &ri);
	step(w, 0, 1, S);
	db_commit(w);
	int fd = open(p, O_RDWR | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_assert_eq(flock(fd, LOCK_EX | LOCK_NB), 0);
	struct db_live *lv;
	cr_assert_eq(db_live_open(dir, &lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_refresh(lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_rank_at(lv, 0)->local, 0);
	cr_assert_eq(db_live_rank_at(lv, 0)->state, DB_LIVE_RUNNING);
	close(fd);   /* the writer's process ends: the kernel drops its lock */
	cr_assert_eq(db_live_refresh(lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_rank_at(lv, 0)->state, DB_LIVE_DEAD);
	db_live_close(lv);
	db_close(w);
}

static int64_t file_size(const char *p)
{
	struct stat st;
	return stat(p, &st) ? -1 : (int64_t)st.st_size;
}

Test(live, never_writes_a_killed_writers_files)
{
	/* a writer killed mid-run: its last commits are only in rank-00000.db-wal */
	pid_t child = fork();
	if (!child) {
		struct db *w = rank_file(0, getpid());
		db_begin(w);
		for (int s = 1; s <= 5; s++)
			step(w, 0, s, (int64_t)s * S);
		db_commit(w);
		_exit(0);   /* no close: what SIGKILL leaves */
	}
	int status;
	cr_assert_eq(waitpid(child, &status, 0), child);
	char p[128], wal[140];
	snprintf(p, sizeof p, "%s/rank-00000.db", dir);
	snprintf(wal, sizeof wal, "%s-wal", p);
	int64_t db0 = file_size(p), wal0 = file_size(wal);
	cr_assert_gt(wal0, 0);
	struct db_live *lv;
	cr_assert_eq(db_live_open(dir, &lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_refresh(lv), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_live_rank_at(lv, 0)->events, 10);
	cr_assert_eq(db_live_rank_at(lv, 0)->state, DB_LIVE_DEAD);
	db_live_close(lv);   /* the last connection: a read-write one would checkpoint and delete the log */
	cr_assert_eq(file_size(wal), wal0, "the reader changed the write-ahead log");
	cr_assert_eq(file_size(p), db0, "the reader wrote the rank file");
}

Test(live, no_rank_files)
{
	struct db_live *lv;
	cr_assert_eq(db_live_open(dir, &lv), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "no rank files"), "%s", ascent_errmsg());
	cr_assert_eq(db_live_rank_files(dir), 0);
}
