/* bench/bench_view.c — speed of `ascent view` on a generated profile of N events (default 5
 * million: 4 ranks x 250 steps, ops + collectives + p2p + data + memory + loss), written through
 * the db writer API and finalized like a real run. Prints JSON lines:
 *   generate (s), cache build (s, once per file), first screen (open + overview, ms; goal < 1000),
 *   and per key (key + render, ms; goal < 100): view switches, sort, filter, drill-down, timeline
 *   zoom and pan.
 *
 *   bench_view [--events N] [--keep PATH]      (ASCENT_BENCH_VIEW_EVENTS also sets N)
 *
 * Watching a run while it runs (parts, BENCH_VIEW_ONLY=screen,live,watch; unset: all that can run):
 *   live:  two rank files of --live-events N (default 1 million) events each, written as a running
 *          profiler leaves them (WAL, not finalized, its process alive): `--dump steps` of the
 *          folder (open + the first full read + render, ms; goal < 2000), then one refresh with
 *          nothing new and one after a step more (ms: the bounded work of a refresh).
 *   watch: `ascent train --preset tiny --profile` (the binary from $ASCENT; --watch-steps steps,
 *          --watch-pairs pairs) alternately unwatched and watched by a viewer that refreshes and
 *          draws every second as the TUI does; each run's tokens/s (summary.json), the medians and
 *          their ratio. The machine's load average before and after is printed: on a shared,
 *          noisy host the spread between runs of the same kind says how much the ratio means. */
#include "bench/bench.h"
#include "common/common.h"
#include "db/db.h"
#include "viewer/viewer.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *const OPS[] = { "matmul", "matmul_bwd", "gelu", "gelu_bwd", "layernorm", "layernorm_bwd",
				   "attention", "attention_bwd", "softmax", "softmax_bwd", "residual", "embedding",
				   "adamw", "cross_entropy", "dropout", "copy" };
#define NOPS (int)(sizeof OPS / sizeof OPS[0])

static int generate(const char *path, int64_t nevents)
{
	const int ranks = 4;
	int64_t steps = nevents / ranks / 5000;
	if (steps < 2)
		steps = 2;
	int64_t per_step = nevents / ranks / steps;   /* events per rank and step */
	int64_t nops = per_step - 40;                  /* minus step, 2 phases, comms, p2p, data */
	if (nops < 4)
		nops = 4;
	struct db *db;
	int rc = db_open(path, DB_CREATE, &db);
	if (rc)
		return rc;
	int64_t ops_id[NOPS], step_id, fw_id, bw_id, ar_id, send_id, recv_id, load_id, loss_id;
	rc = db_begin(db);
	for (int i = 0; !rc && i < NOPS; i++)
		rc = db_intern(db, OPS[i], &ops_id[i]);
	if (!rc)
		rc = db_intern(db, "step", &step_id);
	if (!rc)
		rc = db_intern(db, "forward", &fw_id);
	if (!rc)
		rc = db_intern(db, "backward", &bw_id);
	if (!rc)
		rc = db_intern(db, "allreduce", &ar_id);
	if (!rc)
		rc = db_intern(db, "send", &send_id);
	if (!rc)
		rc = db_intern(db, "recv", &recv_id);
	if (!rc)
		rc = db_intern(db, "load", &load_id);
	if (!rc)
		rc = db_intern(db, "loss", &loss_id);
	if (!rc)
		rc = db_put_run(db, "bench_view", "{\"dp\":4,\"tp\":1,\"pp\":1,\"precision\":\"fp32\"}", ranks);
	uint64_t rng = rng_seed(42, 1);
	for (int r = 0; !rc && r < ranks; r++) {
		struct db_rank_info ri = { .rank = r, .host = "bench", .pid = 1000 + r, .threads = 2, .t0_ns = 1000000 * r,
					   .clock_offset_ns = -1000000 * r + 1000 * r, .dp_rank = r };
		rc = db_put_rank(db, &ri);
		if (!rc)
			rc = db_put_thread(db, r, 0, 100 + r, "main");
		if (!rc)
			rc = db_put_thread(db, r, 1, 200 + r, "data");
		if (!rc)
			rc = db_put_comm(db, r, 1, "dp", ranks, r);
		int64_t t = 0, mem = 0;
		for (int64_t s = 0; !rc && s < steps; s++) {
			int64_t s0 = t;
			struct db_event e = { .step = s, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1, .rank = r };
			/* ops, with the first half forward and the second half backward */
			int64_t fw0 = t;
			for (int64_t k = 0; !rc && k < nops; k++) {
				if (k == nops / 2) {
					e.kind = DB_KIND_PHASE;
					e.name_id = fw_id;
					e.start_ns = fw0;
					e.dur_ns = t - fw0;
					e.tid = 0;
					rc = db_put_event(db, &e);
					fw0 = t;
				}
				int o = (int)(rng_u32(&rng) % NOPS);
				e.kind = DB_KIND_OP;
				e.name_id = ops_id[o];
				e.start_ns = t;
				e.dur_ns = 2000 + (int64_t)(rng_u32(&rng) % 20000) + 3000 * r * (o == 0);
				e.flops = o < 2 ? e.dur_ns * 50 : 0;
				e.layer = (int32_t)(k % 12);
				e.tid = 0;
				if (!rc)
					rc = db_put_event(db, &e);
				t += e.dur_ns + 100;
				/* collectives every so often (bucketed gradients), overlapping nothing */
				if (k % (nops / 30 + 1) == 0 && !rc) {
					struct db_event c = { .kind = DB_KIND_COMM, .name_id = ar_id, .start_ns = t,
							      .dur_ns = 30000 + (int64_t)(rng_u32(&rng) % 10000), .step = s,
							      .bytes = 1 << (16 + k % 8), .seq = s * 1000 + k, .comm_id = 1,
							      .rank = r, .mb = -1, .layer = -1, .peer = 0 };
					rc = db_put_event(db, &c);
					t += c.dur_ns + 100;
				}
			}
			if (!rc) {
				e.kind = DB_KIND_PHASE;
				e.name_id = bw_id;
				e.start_ns = fw0;
				e.dur_ns = t - fw0;
				e.flops = 0;
				e.layer = -1;
				rc = db_put_event(db, &e);
			}
			/* a pipeline-like exchange with the next rank */
			if (!rc) {
				struct db_event p = { .kind = DB_KIND_P2P, .name_id = send_id, .start_ns = t, .dur_ns = 5000,
						      .step = s, .bytes = 65536, .seq = s, .comm_id = 2, .rank = r, .mb = -1,
						      .layer = -1, .peer = (r + 1) % ranks };
				rc = db_put_event(db, &p);
				p.name_id = recv_id;
				p.start_ns = t + 5100;
				p.peer = (r + ranks - 1) % ranks;
				if (!rc)
					rc = db_put_event(db, &p);
				t += 10200;
			}
			/* data loading on the second thread */
			if (!rc) {
				struct db_event d = { .kind = DB_KIND_DATA, .name_id = load_id, .start_ns = s0, .dur_ns = 50000,
						      .step = s, .tid = 1, .rank = r, .mb = -1, .layer = -1, .peer = -1,
						      .comm_id = -1, .seq = -1 };
				rc = db_put_event(db, &d);
			}
			if (!rc) {
				struct db_event st = { .kind = DB_KIND_STEP, .name_id = step_id, .start_ns = s0, .dur_ns = t - s0,
						       .step = s, .rank = r, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1,
						       .seq = -1 };
				rc = db_put_event(db, &st);
			}
			if (!rc)
				rc = db_put_counter(db, r, loss_id, t - 1, 5.5 * (1.0 - (double)s / (double)(steps + 1)));
			if (!rc)
				rc = db_put_mem(db, r, DB_MEM_HOST, s0, 1 << 20, DB_MEM_ACTIVATION, mem += 1 << 20, 0);
			if (!rc)
				rc = db_put_mem(db, r, DB_MEM_HOST, t - 1, -(1 << 20), DB_MEM_ACTIVATION, mem -= 1 << 20, 0);
			if (!rc && s % 20 == 19) {
				rc = db_commit(db);
				if (!rc)
					rc = db_begin(db);
			}
		}
		if (!rc)
			rc = db_put_mem(db, r, DB_MEM_HOST, 0, 100 << 20, DB_MEM_PARAM, 100 << 20, 0);
	}
	if (!rc)
		rc = db_commit(db);
	if (!rc)
		rc = db_finalize(db);
	db_close(db);
	return rc;
}

static double ms_since(int64_t t0)
{
	return (double)(clock_ns() - t0) / 1e6;
}

static void line(const char *what, double ms, double goal)
{
	printf("{\"bench\":\"view\",\"what\":\"%s\",\"ms\":%.2f,\"goal_ms\":%.0f,\"within_goal\":%s}\n", what, ms, goal,
	       ms < goal ? "true" : "false");
	fflush(stdout);
}

static double key_ms(struct viewer *v, struct vw_screen *s, int key)
{
	int64_t t0 = clock_ns();
	viewer_key(v, key);
	viewer_render(v, s);
	return ms_since(t0);
}

/* ---------------------------------------------------------------------------------------- */
/* a run watched while it runs */

/* A rank file as the profiler leaves it mid-run: events of `steps` steps (an op stream with a
 * collective every 32 ops, a step event each), committed every 20 steps, not finalized; the
 * connection stays open (its WAL with it) until the caller closes it. */
static int live_rank_file(const char *path, int rank, int64_t nevents, int64_t step0, struct db **out)
{
	struct db *db;
	int rc = db_open(path, DB_CREATE, &db);
	if (rc)
		return rc;
	int64_t ops_id[NOPS], step_id, ar_id;
	rc = db_begin(db);
	for (int i = 0; !rc && i < NOPS; i++)
		rc = db_intern(db, OPS[i], &ops_id[i]);
	if (!rc)
		rc = db_intern(db, "step", &step_id);
	if (!rc)
		rc = db_intern(db, "allreduce", &ar_id);
	if (!rc)
		rc = db_put_run(db, "bench_view live", "{\"steps\":100000}", 2);
	struct db_rank_info ri = { .rank = rank, .host = "", .pid = (int)getpid(), .threads = 1, .dp_rank = rank };
	char host[256] = "";
	gethostname(host, sizeof host - 1);
	ri.host = host;
	if (!rc)
		rc = db_put_rank(db, &ri);
	if (!rc)
		rc = db_put_comm(db, rank, 1, "dp", 2, rank);
	uint64_t rng = rng_seed(7, (uint64_t)rank + 1);
	const int per_step = 1000;
	int64_t t = step0 * 12000000;
	for (int64_t s = step0; !rc && (s - step0) * per_step < nevents; s++) {
		int64_t s0 = t;
		for (int k = 0; !rc && k < per_step - 1; k++) {
			struct db_event e = { .step = s, .mb = -1, .layer = k % 12, .peer = -1, .comm_id = -1, .seq = -1,
					      .rank = rank, .start_ns = t };
			if (k % 32 == 31) {
				e.kind = DB_KIND_COMM;
				e.name_id = ar_id;
				e.dur_ns = 20000;
				e.bytes = 1 << 20;
				e.comm_id = 1;
				e.seq = s * 100 + k / 32;
			} else {
				int o = (int)(rng_u32(&rng) % NOPS);
				e.kind = DB_KIND_OP;
				e.name_id = ops_id[o];
				e.dur_ns = 2000 + (int64_t)(rng_u32(&rng) % 16000);
			}
			rc = db_put_event(db, &e);
			t += e.dur_ns + 100;
		}
		struct db_event st = { .kind = DB_KIND_STEP, .name_id = step_id, .start_ns = s0, .dur_ns = t - s0, .step = s,
				       .rank = rank, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
		if (!rc)
			rc = db_put_event(db, &st);
		t = (s + 1) * 12000000 > t ? (s + 1) * 12000000 : t + 1000;
		if (!rc && s % 20 == 19) {
			rc = db_commit(db);
			if (!rc)
				rc = db_begin(db);
		}
	}
	if (!rc)
		rc = db_commit(db);
	if (rc) {
		db_close(db);
		return rc;
	}
	*out = db;
	return 0;
}

static int bench_live(int64_t n)
{
	char dir[64] = "/tmp/ascent-bench-live-XXXXXX", p[2][128];
	if (!mkdtemp(dir))
		return ascent_error(ASCENT_EIO, "mkdtemp failed");
	struct db *w[2] = { NULL, NULL };
	int64_t t0 = clock_ns();
	int rc = 0;
	for (int r = 0; r < 2 && !rc; r++) {
		snprintf(p[r], sizeof p[r], "%s/rank-%05d.db", dir, r);
		rc = live_rank_file(p[r], r, n, 0, &w[r]);
	}
	if (rc)
		goto out;
	printf("{\"bench\":\"view\",\"what\":\"live_generate\",\"ranks\":2,\"events_per_rank\":%lld,\"s\":%.2f}\n",
	       (long long)n, ms_since(t0) / 1e3);
	/* what `ascent view DIR --dump steps` does, in this process */
	struct viewer_options o = { .path = dir, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_STEPS };
	struct viewer *v;
	FILE *null = fopen("/dev/null", "w");
	t0 = clock_ns();
	if ((rc = viewer_open(&o, &v, NULL)) == 0)
		rc = viewer_dump(v, VW_STEPS, 120, 40, null ? null : stdout);
	if (null)
		fclose(null);
	if (rc)
		goto out;
	line("live_dump_steps", ms_since(t0), 2000);
	/* a refresh reads only what is new: nothing, then one step more on each rank */
	struct vw_screen s;
	vw_screen_init(&s, 120, 40);
	viewer_render(v, &s);
	usleep(1100000);
	t0 = clock_ns();
	viewer_tick(v);
	viewer_render(v, &s);
	line("live_refresh_nothing_new", ms_since(t0), 100);
	for (int r = 0; r < 2 && !rc; r++) {
		struct db *x;
		/* one more step appended by a second writer connection, as the profiler commits it */
		db_close(w[r]);
		w[r] = NULL;
		if ((rc = db_open(p[r], DB_UPDATE, &x)) != 0)
			break;
		int64_t sid = 0, oid = 0;
		rc = db_begin(x);
		if (!rc)
			rc = db_intern(x, "step", &sid);
		if (!rc)
			rc = db_intern(x, "matmul", &oid);
		int64_t base = (n / 1000 + 1) * 12000000;
		for (int k = 0; !rc && k < 999; k++) {
			struct db_event e = { .kind = DB_KIND_OP, .name_id = oid, .start_ns = base + k * 10000, .dur_ns = 9000,
					      .step = n / 1000, .rank = r, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1,
					      .seq = -1 };
			rc = db_put_event(x, &e);
		}
		struct db_event st = { .kind = DB_KIND_STEP, .name_id = sid, .start_ns = base, .dur_ns = 10000000,
				       .step = n / 1000, .rank = r, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
		if (!rc)
			rc = db_put_event(x, &st);
		if (!rc)
			rc = db_commit(x);
		w[r] = x;
	}
	if (!rc) {
		usleep(1100000);
		t0 = clock_ns();
		viewer_tick(v);
		viewer_render(v, &s);
		line("live_refresh_one_step_more", ms_since(t0), 100);
	}
	vw_screen_release(&s);
	viewer_free(v);
out:
	for (int r = 0; r < 2; r++)
		db_close(w[r]);
	fs_rm_rf(dir);
	return rc;
}

static double loadavg1(void)
{
	double l = -1;
	FILE *f = fopen("/proc/loadavg", "r");
	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

/* One `ascent train --profile` run, watched or not; its tokens/s from summary.json. */
static int train_once(const char *ascent, const char *out, int steps, int watched, double *tps)
{
	char st[16];
	snprintf(st, sizeof st, "%d", steps);
	fs_rm_rf(out);
	pid_t pid = fork();
	if (pid < 0)
		return ascent_error(ASCENT_EIO, "fork failed");
	if (!pid) {
		if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
			_exit(127);
		execl(ascent, ascent, "train", "--preset", "tiny", "--steps", st, "--batch", "8", "--seq", "64", "--threads",
		      "1", "--warmup", "2", "--eval-every", "0", "--eval-batches", "1", "--profile", "--out", out, (char *)NULL);
		_exit(127);
	}
	struct viewer *v = NULL;
	struct vw_screen s;
	vw_screen_init(&s, 120, 40);
	int status = 0;
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (watched) {
			if (!v) {   /* the folder and its rank files come once the run has started */
				struct viewer_options o = { .path = out, .rank = -1, .step_lo = -1, .step_hi = -1,
							    .view = VW_STEPS };
				if (viewer_open(&o, &v, NULL) != 0)
					v = NULL;
			} else if (viewer_tick(v)) {
				viewer_render(v, &s);
			}
		}
		usleep(200000);   /* the TUI's key timeout */
	}
	viewer_free(v);
	vw_screen_release(&s);
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return ascent_error(ASCENT_EIO, "'%s train' failed (status %d)", ascent, status);
	char sum[4200];
	snprintf(sum, sizeof sum, "%s/summary.json", out);
	cJSON *j = NULL;
	int rc = json_read_file(sum, &j);
	if (rc)
		return rc;
	const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "tokens_per_s");
	*tps = cJSON_IsNumber(t) ? t->valuedouble : -1;
	cJSON_Delete(j);
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_d);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int bench_watch(const char *ascent, int steps, int pairs)
{
	char dir[64] = "/tmp/ascent-bench-watch-XXXXXX", out[128];
	if (!mkdtemp(dir))
		return ascent_error(ASCENT_EIO, "mkdtemp failed");
	snprintf(out, sizeof out, "%s/run", dir);
	double un[16], wa[16];
	if (pairs > 16)
		pairs = 16;
	double l0 = loadavg1();
	int rc = 0;
	for (int i = 0; i < pairs && !rc; i++) {
		rc = train_once(ascent, out, steps, 0, &un[i]);
		if (!rc)
			rc = train_once(ascent, out, steps, 1, &wa[i]);
		if (!rc)
			printf("{\"bench\":\"view\",\"what\":\"watch_pair\",\"pair\":%d,\"unwatched_tokens_s\":%.1f,"
			       "\"watched_tokens_s\":%.1f}\n", i, un[i], wa[i]);
		fflush(stdout);
	}
	if (!rc) {
		double mu = median(un, pairs), mw = median(wa, pairs);
		printf("{\"bench\":\"view\",\"what\":\"watch\",\"steps\":%d,\"pairs\":%d,\"unwatched_median\":%.1f,"
		       "\"watched_median\":%.1f,\"watched_over_unwatched\":%.4f,\"unwatched_min\":%.1f,\"unwatched_max\":%.1f,"
		       "\"loadavg_before\":%.2f,\"loadavg_after\":%.2f}\n", steps, pairs, mu, mw, mu > 0 ? mw / mu : 0, un[0],
		       un[pairs - 1], l0, loadavg1());
	}
	fs_rm_rf(dir);
	return rc;
}

int main(int argc, char **argv)
{
	int64_t n = 5000000;
	const char *keep = NULL;
	if (getenv("ASCENT_BENCH_VIEW_EVENTS"))
		n = atoll(getenv("ASCENT_BENCH_VIEW_EVENTS"));
	int64_t live_n = 1000000;
	int watch_steps = 30, watch_pairs = 3;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--events") && i + 1 < argc)
			n = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--keep") && i + 1 < argc)
			keep = argv[++i];
		else if (!strcmp(argv[i], "--live-events") && i + 1 < argc)
			live_n = atoll(argv[++i]);
		else if (!strcmp(argv[i], "--watch-steps") && i + 1 < argc)
			watch_steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--watch-pairs") && i + 1 < argc)
			watch_pairs = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: bench_view [--events N] [--keep PATH] [--live-events N] [--watch-steps N] "
				"[--watch-pairs N]\n");
			return 2;
		}
	}
	if (bench_wanted("BENCH_VIEW_ONLY", "live") && bench_live(live_n < 2000 ? 2000 : live_n) != 0) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	const char *ascent = getenv("ASCENT");
	if (bench_wanted("BENCH_VIEW_ONLY", "watch") && ascent && *ascent &&
	    bench_watch(ascent, watch_steps > 2 ? watch_steps : 3, watch_pairs > 0 ? watch_pairs : 1) != 0) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	if (!bench_wanted("BENCH_VIEW_ONLY", "screen"))
		return 0;
	if (n < 1000)
		n = 1000;
	char dir[64] = "/tmp/ascent-bench-view-XXXXXX", path[128];
	if (!keep && !mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(path, sizeof path, "%s/trace.db", dir);
	if (keep)
		snprintf(path, sizeof path, "%s", keep);
	int64_t t0 = clock_ns();
	int rc = generate(path, n);
	if (rc) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	struct db *db;
	int64_t ne = 0;
	if (db_open(path, DB_READ, &db) == 0) {
		db_count(db, "event", &ne);
		db_close(db);
	}
	printf("{\"bench\":\"view\",\"what\":\"generate\",\"events\":%lld,\"s\":%.2f}\n", (long long)ne, ms_since(t0) / 1e3);
	fflush(stdout);
	/* first open: builds the summary tables (once per file) */
	struct viewer_options o = { .path = path, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_OVERVIEW };
	struct viewer *v;
	int64_t built = 0;
	t0 = clock_ns();
	if ((rc = viewer_open(&o, &v, &built)) != 0) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	printf("{\"bench\":\"view\",\"what\":\"cache_build\",\"events\":%lld,\"s\":%.2f}\n", (long long)ne, (double)built / 1e3);
	viewer_free(v);
	/* first screen with the cache: open + overview at 120x40 */
	struct vw_screen s;
	vw_screen_init(&s, 120, 40);
	t0 = clock_ns();
	if ((rc = viewer_open(&o, &v, NULL)) != 0) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	viewer_render(v, &s);
	line("first_screen", ms_since(t0), 1000);
	static const char *const NAMES[] = { "", "switch_ops", "switch_comm", "switch_steps", "switch_ranks",
					     "switch_memory", "switch_timeline" };
	for (int k = 2; k <= 7; k++)
		line(NAMES[k - 1], key_ms(v, &s, '0' + k), 100);
	line("switch_overview", key_ms(v, &s, '1'), 100);
	key_ms(v, &s, '2');
	line("sort_ops", key_ms(v, &s, '>'), 100);
	line("reverse_ops", key_ms(v, &s, 'r'), 100);
	key_ms(v, &s, '/');
	line("filter_ops_key1", key_ms(v, &s, 'm'), 100);
	line("filter_ops_key2", key_ms(v, &s, 'a'), 100);
	key_ms(v, &s, VK_ESC);
	key_ms(v, &s, 'r');
	line("drill_instances", key_ms(v, &s, VK_ENTER), 100);
	line("instance_to_timeline", key_ms(v, &s, VK_ENTER), 100);
	key_ms(v, &s, '7');
	line("timeline_whole_run", key_ms(v, &s, '0'), 100);
	line("timeline_zoom_in", key_ms(v, &s, 'w'), 100);
	line("timeline_pan", key_ms(v, &s, 'd'), 100);
	for (int i = 0; i < 8; i++)
		key_ms(v, &s, 'w');
	line("timeline_zoom_in_deep", key_ms(v, &s, 'w'), 100);
	line("timeline_pan_deep", key_ms(v, &s, 'd'), 100);
	line("timeline_event_details", key_ms(v, &s, VK_ENTER), 100);
	key_ms(v, &s, ' ');
	line("timeline_zoom_out", key_ms(v, &s, 's'), 100);
	line("restrict_rank", key_ms(v, &s, 'R'), 100);
	vw_screen_release(&s);
	viewer_free(v);
	if (!keep)
		fs_rm_rf(dir);
	return 0;
}
