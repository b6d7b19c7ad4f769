/* tests/unit/test_viewer_link.c — the timeline's event details on an imported trace: the event's
 * arguments and its launch link, and `g` from a launch to its kernel (and the queue delay). The
 * profile is written through db/ the way `ascent import` writes one: a CPU thread with a launch, a
 * device lane with its kernel, the link between them. The devices view's critical path, read from
 * the summary tables, and its events computed when the timeline marks them. */
#include "viewer/internal.h"
#include "viewer/viewer.h"
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char dir[64];

static void mk(void)
{
	strcpy(dir, "/tmp/ascent-vlink-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void rm(void)
{
	fs_rm_rf(dir);
}

TestSuite(viewer_link, .init = mk, .fini = rm);

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static void put(struct db *db, int tid, int kind, const char *name, int64_t s, int64_t d, const char *args)
{
	int64_t nid;
	OK(db_intern(db, name, &nid));
	struct db_event e = { .start_ns = s, .dur_ns = d, .step = kind == DB_KIND_STEP ? 1 : -1, .name_id = nid, .rank = 0,
			      .tid = tid, .kind = kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	OK(db_put_event(db, &e));
	if (args)
		OK(db_put_arg(db, &e, args, strlen(args)));
}

Test(viewer_link, details_show_args_and_g_follows_the_launch)
{
	char path[128];
	snprintf(path, sizeof path, "%s/t.db", dir);
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	struct db_rank_info r = { .rank = 0, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2,
				  .end_ns = 100000 };
	OK(db_put_rank(db, &r));
	OK(db_put_thread(db, 0, 0, 11, "main"));
	OK(db_put_thread(db, 0, 1, 7, "device 0 stream 7"));
	OK(db_put_device_lane(db, 0, 1, 0, 7));
	put(db, 0, DB_KIND_STEP, "ProfilerStep#1", 0, 100000, NULL);
	put(db, 0, DB_KIND_RANGE, "cudaLaunchKernel", 40000, 2000, "{\"correlation\": 99, \"External id\": 5}");
	put(db, 1, DB_KIND_KERNEL, "gemm_kernel", 60000, 10000, "{\"grid\": [8, 1, 1]}");
	OK(db_put_flow(db, 0, DB_FLOW_LAUNCH, 99, 0, 40000, 1, 60000));
	OK(db_commit(db));
	OK(db_finalize(db));
	db_close(db);

	struct viewer_options o = { .path = path, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_TIMELINE, .mono = 1 };
	struct viewer *v;
	cr_assert_eq(viewer_open(&o, &v, NULL), 0, "%s", ascent_errmsg());
	struct vw_screen s;
	OK(vw_screen_init(&s, 120, 30));
	viewer_render(v, &s);
	/* the cursor (the window's centre) on the launch, on the CPU lane */
	struct tl_state *t = &v->tl;
	cr_assert(t->nlanes >= 2);
	int cpu = -1, dev = -1;
	for (int i = 0; i < t->nlanes; i++) {
		if (t->lanes[i].tid == 0)
			cpu = i;
		if (t->lanes[i].tid == 1)
			dev = i;
	}
	cr_assert(cpu >= 0 && dev >= 0);
	t->lane = cpu;
	int64_t c = 41000 + t->lanes[cpu].shift_ns;
	t->t0 = c - 5000;
	t->t1 = c + 5000;
	viewer_key(v, VK_ENTER);
	cr_assert(v->details, "no details: %s", v->status);
	cr_assert_str_eq(v->ev.name, "cudaLaunchKernel");
	cr_assert_not_null(v->ev_args);
	cr_assert(strstr(v->ev_args, "\"correlation\""));
	cr_assert_eq(v->ev_link_dir, 1);
	cr_assert_eq(v->ev_link_tid, 1);
	viewer_render(v, &s);
	int seen_link = 0, seen_args = 0;
	for (int y = 0; y < s.h; y++) {
		char row[121];
		memcpy(row, s.text + y * s.w, 120);
		row[120] = 0;
		seen_link |= strstr(row, "launched a kernel on lane 1") != NULL;
		seen_args |= strstr(row, "correlation") != NULL;
	}
	cr_assert(seen_link && seen_args, "the details show the link and the arguments");
	viewer_key(v, 'g');
	cr_assert(!v->details);
	cr_assert_eq(t->lane, dev, "g moved to the kernel's lane");
	cr_assert(strstr(v->status, "queue delay 20.000 us"), "status: %s", v->status);
	/* the devices view (8): the device's line and its stream (one step: all of it counts; the
	 * kernel was launched 20 us before it ran); Enter goes to the stream's lane on the timeline */
	t->lane = cpu;
	viewer_key(v, '8');
	cr_assert_eq(viewer_current_view(v), VW_DEVICES);
	viewer_render(v, &s);
	int seen_dev = 0, seen_stream = 0;
	for (int y = 0; y < s.h; y++) {
		char row[121];
		memcpy(row, s.text + y * s.w, 120);
		row[120] = 0;
		seen_dev |= strstr(row, "r0 gpu 0  span 10.00 us  idle 0.0%  compute 100.0%") != NULL;
		seen_stream |= strstr(row, "r0 gpu 0 stream 7") && strstr(row, "20.00 us");
	}
	cr_assert(seen_dev && seen_stream, "the devices view shows the device and its stream");
	viewer_key(v, VK_ENTER);
	cr_assert_eq(viewer_current_view(v), VW_TIMELINE);
	cr_assert_eq(t->lane, dev, "Enter on the stream selects its lane");
	/* the devices view read each rank's critical path from the summary tables, without the path's
	 * events; drawing the rank's lanes computed them: the same path as db_critpath's */
	cr_assert_eq(v->ncp, 1);
	cr_assert_null(v->cp[0].ev, "the cached path carries no events");
	viewer_render(v, &s);
	struct db_critpath *cp;
	int nc;
	const struct db_critpath_opts co = { .top = DB_VIEW_CP_TOP };
	OK(db_critpath(v->db, DB_FILTER_ALL, &co, &cp, &nc));
	cr_assert_eq(nc, 1);
	cr_assert(cp[0].nev > 0 && cp[0].path_events > 0);
	cr_assert_eq(v->cp[0].nev, cp[0].nev, "%d events marked, db_critpath %d", v->cp[0].nev, cp[0].nev);
	cr_assert(!memcmp(v->cp[0].ev, cp[0].ev, (size_t)cp[0].nev * sizeof *cp[0].ev));
	cr_assert(v->cp[0].length_ns == cp[0].length_ns && v->cp[0].path_events == cp[0].path_events &&
		  !memcmp(v->cp[0].cause_ns, cp[0].cause_ns, sizeof cp[0].cause_ns));
	cr_assert_eq(v->cp[0].ntop, cp[0].ntop);
	for (int i = 0; i < cp[0].ntop; i++)
		cr_assert(!strcmp(v->cp[0].top[i].name, cp[0].top[i].name) && v->cp[0].top[i].ns == cp[0].top[i].ns &&
			  v->cp[0].top[i].cause == cp[0].top[i].cause && v->cp[0].top[i].events == cp[0].top[i].events);
	db_critpath_free(cp, nc);
	vw_screen_release(&s);
	viewer_free(v);
}

/* Under a step restriction of all ranks the devices view computes the critical paths of the first
 * ranks only, as many as its screen shows, and the timeline any other rank's when it marks that
 * rank's lanes: each the same path as db_critpath over all ranks gives that rank. */
Test(viewer_link, restricted_paths_of_the_ranks_on_screen)
{
	enum { RANKS = 40 };
	char path[128];
	snprintf(path, sizeof path, "%s/r.db", dir);
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	int64_t step, launch, gemm;
	OK(db_intern(db, "ProfilerStep#1", &step));
	OK(db_intern(db, "cudaLaunchKernel", &launch));
	OK(db_intern(db, "gemm_kernel", &gemm));
	for (int rk = 0; rk < RANKS; rk++) {
		struct db_rank_info r = { .rank = rk, .host = "h", .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2,
					  .end_ns = 300000 };
		OK(db_put_rank(db, &r));
		OK(db_put_thread(db, rk, 0, 11, "main"));
		OK(db_put_thread(db, rk, 1, 7, "device 0 stream 7"));
		OK(db_put_device_lane(db, rk, 1, 0, 7));
		for (int s = 1; s <= 2; s++) {   /* two steps; the kernel's time grows with the rank */
			int64_t t0 = (s - 1) * 100000;
			struct db_event e[3] = {
				{ .start_ns = t0, .dur_ns = 100000, .step = s, .name_id = step, .tid = 0, .kind = DB_KIND_STEP },
				{ .start_ns = t0 + 40000, .dur_ns = 2000, .step = -1, .name_id = launch, .tid = 0, .kind = DB_KIND_RANGE },
				{ .start_ns = t0 + 60000, .dur_ns = 1000 + 100 * rk, .step = -1, .name_id = gemm, .tid = 1,
				  .kind = DB_KIND_KERNEL },
			};
			for (int k = 0; k < 3; k++) {
				e[k].rank = rk;
				e[k].mb = e[k].layer = e[k].peer = e[k].comm_id = -1;
				e[k].seq = -1;
				OK(db_put_event(db, &e[k]));
			}
			OK(db_put_flow(db, rk, DB_FLOW_LAUNCH, 99 + s, 0, t0 + 40000, 1, t0 + 60000));
		}
	}
	OK(db_commit(db));
	OK(db_finalize(db));
	db_close(db);

	struct viewer_options o = { .path = path, .rank = -1, .step_lo = 2, .step_hi = 2, .view = VW_RANKS, .mono = 1 };
	struct viewer *v;
	cr_assert_eq(viewer_open(&o, &v, NULL), 0, "%s", ascent_errmsg());
	struct vw_screen s;
	OK(vw_screen_init(&s, 160, 16));
	viewer_render(v, &s);
	viewer_key(v, '8');
	cr_assert_eq(viewer_current_view(v), VW_DEVICES);
	viewer_render(v, &s);
	struct db_critpath *cp;
	int nc;
	const struct db_critpath_opts co = { .top = DB_VIEW_CP_TOP };
	OK(db_critpath(v->db, (struct db_filter){ -1, 2, 2 }, &co, &cp, &nc));
	cr_assert_eq(nc, RANKS);
	/* the first ranks' paths, as many as the 16 lines have room for (16 − 1 − 5 device lines), not
	 * all 40; the screen the same as with every rank's path (a viewer told its screen is 1,000 lines
	 * high computes them all) */
	cr_assert_eq(v->ncp, 10, "%d paths computed", v->ncp);
	int lines = 0;
	for (int y = 0; y < s.h; y++)
		lines += memmem(s.text + y * s.w, (size_t)s.w, "critical path", 13) != NULL;
	cr_assert(lines > 0 && lines <= v->ncp, "%d critical path lines drawn from %d paths", lines, v->ncp);
	struct viewer *all;
	cr_assert_eq(viewer_open(&o, &all, NULL), 0, "%s", ascent_errmsg());
	struct vw_screen s2;
	OK(vw_screen_init(&s2, 160, 16));
	viewer_render(all, &s2);
	all->last_h = 1000;
	viewer_key(all, '8');
	cr_assert_eq(all->ncp, RANKS);
	viewer_render(all, &s2);
	cr_assert(!memcmp(s.text, s2.text, (size_t)s.w * (size_t)s.h), "the devices view as drawn from every path");
	vw_screen_release(&s2);
	viewer_free(all);
	/* the timeline on rank 30's lanes: its path computed and marked */
	viewer_key(v, '7');
	struct tl_state *t = &v->tl;
	int at = -1;
	for (int i = 0; i < t->nlanes && at < 0; i++)
		if (t->lanes[i].rank == 30)
			at = i;
	cr_assert(at >= 0);
	t->lane_top = t->lane = at;
	viewer_render(v, &s);
	/* the ranks whose lanes it drew, from rank 30 on, added after the first 10 */
	cr_assert(v->ncp > 10 && v->ncp < RANKS, "%d paths", v->ncp);
	cr_assert_eq(v->cp[10].rank, 30);
	for (int i = 11; i < v->ncp; i++)
		cr_assert_eq(v->cp[i].rank, 30 + i - 10);
	for (int i = 0; i < v->ncp; i++) {
		const struct db_critpath *a = &v->cp[i], *b = &cp[a->rank];
		cr_assert_eq(b->rank, a->rank);
		cr_assert(i >= 10 || a->rank == i, "path %d of rank %d", i, a->rank);
		cr_assert(a->length_ns == b->length_ns && a->path_events == b->path_events && a->nev == b->nev &&
				  !memcmp(a->cause_ns, b->cause_ns, sizeof b->cause_ns) &&
				  !memcmp(a->ev, b->ev, (size_t)b->nev * sizeof *b->ev) && a->ntop == b->ntop,
			  "rank %d: the path of db_critpath over all ranks", a->rank);
		for (int k = 0; k < b->ntop; k++)
			cr_assert(!strcmp(a->top[k].name, b->top[k].name) && a->top[k].ns == b->top[k].ns);
	}
	db_critpath_free(cp, nc);
	vw_screen_release(&s);
	viewer_free(v);
}
