/* tests/unit/test_viewer_heat.c — the ranks view's heat map of the communication matrix (key m,
 * db_view_heat; docs/viewer.md). The profile is written through db/: 16 ranks on 4 hosts (node0..3,
 * 4 ranks each); rank r sends 1,000,000 bytes to rank (r + 4) mod 16 (the next host), both calls from
 * 1000 ns, the receive ending 1000 ns later — but rank 5's transfer to rank 9 takes 4000 ns. So the
 * host pairs node0->node1, node2->node3, node3->node0 carry 4 MB in 4000 ns (1000 GB/s) and
 * node1->node2 4 MB in 3 × 1000 + 4000 = 7000 ns (571.4 GB/s): the median of the four cells is 1000,
 * node1->node2's character that of 1000 / 571.4 = 1.75 ('#': 1.50 <= x < 2.00), the others '.'.
 * By rank pair: 16 cells, median 1000 GB/s, r5 -> r9 at 250 GB/s: 4.0 ('@'). */
#include "viewer/viewer.h"
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR 16
#define PER_HOST 4

static char dir[64], path[128];

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static void p2p(struct db *db, int rank, int64_t name, int peer, int64_t dur)
{
	struct db_event e = { .start_ns = 1000, .dur_ns = dur, .step = 0, .name_id = name, .rank = rank, .tid = 0,
			      .kind = DB_KIND_P2P, .mb = -1, .layer = -1, .peer = peer, .comm_id = 1, .seq = 1,
			      .bytes = 1000000 };
	OK(db_put_event(db, &e));
}

static void mk(void)
{
	strcpy(dir, "/tmp/ascent-vheat-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/trace.db", dir);
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	OK(db_put_run(db, "test_viewer_heat", "{\"pp\":16}", NR));
	int64_t step_id, send_id, recv_id;
	OK(db_intern(db, "step", &step_id));
	OK(db_intern(db, "send", &send_id));
	OK(db_intern(db, "recv", &recv_id));
	for (int r = 0; r < NR; r++) {
		char host[16];
		snprintf(host, sizeof host, "node%d", r / PER_HOST);
		struct db_rank_info ri = { .rank = r, .host = host, .pid = 100 + r, .threads = 1, .end_ns = 10000 };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 1000 + r, "main"));
		OK(db_put_comm(db, r, 1, "world", NR, r));
		struct db_event st = { .start_ns = 0, .dur_ns = 10000, .step = 0, .name_id = step_id, .rank = r, .tid = 0,
				       .kind = DB_KIND_STEP, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
		OK(db_put_event(db, &st));
		int to = (r + PER_HOST) % NR, from = (r + NR - PER_HOST) % NR;
		p2p(db, r, send_id, to, 10);
		p2p(db, r, recv_id, from, from == 5 ? 4000 : 1000);
	}
	OK(db_commit(db));
	OK(db_finalize(db));
	db_close(db);
}

static void rm(void)
{
	fs_rm_rf(dir);
}

TestSuite(viewer_heat, .init = mk, .fini = rm);

static const struct db_view_heat_cell *cell(const struct db_view_heat *h, int src, int dst)
{
	for (int i = 0; i < h->ncells; i++)
		if (h->cells[i].src == src && h->cells[i].dst == dst)
			return &h->cells[i];
	return NULL;
}

Test(viewer_heat, cells_by_host_and_by_rank)
{
	struct db *db;
	OK(db_open(path, DB_UPDATE, &db));
	OK(db_view_prepare(db, NULL));
	struct db_view_heat h;
	OK(db_view_heat(db, 1, &h));
	cr_assert_eq(h.n, 4);
	cr_assert_eq(h.nranks, NR);
	cr_assert_eq(h.nhosts, 4);
	cr_assert_str_eq(h.labels[1], "node1");
	cr_assert_eq(h.ncells, 4);
	for (int a = 0; a < 4; a++) {
		const struct db_view_heat_cell *c = cell(&h, a, (a + 1) % 4);
		cr_assert_not_null(c, "host %d -> %d", a, (a + 1) % 4);
		cr_assert_eq(c->transfers, 4);
		cr_assert_eq(c->bytes, 4000000);
		cr_assert_eq(c->time_ns, a == 1 ? 7000 : 4000);
	}
	cr_assert_float_eq(h.median_gbs, 1000.0, 1e-9);
	cr_assert_float_eq(cell(&h, 1, 2)->slowness, 7000.0 / 4000.0, 1e-9);
	cr_assert_eq(h.slowest, (int)(cell(&h, 1, 2) - h.cells));
	db_view_heat_free(&h);
	OK(db_view_heat(db, 0, &h));
	cr_assert_eq(h.n, NR);
	cr_assert_eq(h.ncells, NR);
	cr_assert_str_eq(h.labels[9], "r9");
	cr_assert_float_eq(cell(&h, 5, 9)->slowness, 4.0, 1e-9);
	cr_assert_float_eq(cell(&h, 0, 4)->slowness, 1.0, 1e-9);
	db_view_heat_free(&h);
	db_close(db);
}

/* The screen's line that starts with `prefix`, into buf; 0 when none. */
static int screen_line(struct viewer *v, const char *prefix, char *buf)
{
	struct vw_screen s;
	OK(vw_screen_init(&s, 120, 40));
	OK(viewer_render(v, &s));
	int found = 0;
	for (int y = 0; y < s.h && !found; y++) {
		vw_row_text(&s, y, buf);
		found = !strncmp(buf, prefix, strlen(prefix));
	}
	vw_screen_release(&s);
	return found;
}

Test(viewer_heat, key_m_cycles_hosts_ranks_table)
{
	struct viewer_options o = { .path = path, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_RANKS };
	struct viewer *v;
	OK(viewer_open(&o, &v, NULL));
	char line[1024];
	cr_assert(screen_line(v, "r0", line), "the rank table first");
	cr_assert_eq(viewer_key(v, 'm'), 0);
	/* host rows: number, name, then a character per column (node1 -> node2 '#', the others '.') */
	cr_assert(screen_line(v, "0 node0 ", line));
	cr_assert_str_eq(line, "0 node0  .");
	cr_assert(screen_line(v, "1 node1 ", line));
	cr_assert_str_eq(line, "1 node1   #");
	cr_assert(screen_line(v, "3 node3 ", line));
	cr_assert_str_eq(line, "3 node3 .");
	cr_assert(screen_line(v, "slowest: node1 -> node2 ", line), "the footer names the slowest cell");
	cr_assert_eq(viewer_key(v, 'm'), 0);   /* 16 ranks: by rank pair */
	cr_assert(screen_line(v, " 5 r5  ", line));
	cr_assert_str_eq(line, " 5 r5           @");
	cr_assert_eq(viewer_key(v, 'm'), 0);   /* back to the table */
	cr_assert(screen_line(v, "r0", line));
	viewer_free(v);
}
