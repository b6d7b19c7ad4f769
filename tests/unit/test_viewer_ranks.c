/* tests/unit/test_viewer_ranks.c — the ranks view of a many-rank job: slowest first by default,
 * sorted by any column, the heat strip (a character per step: the rank's compute over the step's
 * median over ranks), and ':' N Enter to go to a rank. The profile is written through db/: 64 ranks
 * × 4 steps, each step 1000 ns with one 400 ns operator, except
 *   rank 37: 600 ns in steps 2 and 3 (600 / 400 = 1.50: '#'), 400 in steps 0 and 1 ('.');
 *   rank 5:  440 ns in step 0 (1.10: '='), 400 after;
 *   rank 60: 410 ns in step 1 (1.025: ':');
 * so the median of every step is 400 ns, and the ranks' compute totals are 1600 ns but for rank 37
 * (2000: more than 5 % above the median 1600, marked slow), rank 5 (1640) and rank 60 (1610).
 * Rank r's collective time (comm) is r ns in step 0. */
#include "viewer/viewer.h"
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NR 64
#define NS 4

static char dir[64], path[128];

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

static void ev(struct db *db, int rank, int kind, int64_t name, int64_t s, int64_t d, int64_t step)
{
	struct db_event e = { .start_ns = s, .dur_ns = d, .step = step, .name_id = name, .rank = rank, .tid = 0,
			      .kind = kind, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	OK(db_put_event(db, &e));
}

static int64_t op_ns(int rank, int step)
{
	if (rank == 37 && step >= 2)
		return 600;
	if (rank == 5 && step == 0)
		return 440;
	if (rank == 60 && step == 1)
		return 410;
	return 400;
}

static void mk(void)
{
	strcpy(dir, "/tmp/ascent-vranks-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/trace.db", dir);
	struct db *db;
	OK(db_open(path, DB_CREATE, &db));
	OK(db_begin(db));
	OK(db_put_run(db, "test_viewer_ranks", "{\"dp\":64}", NR));
	int64_t step_id, op_id, ar_id;
	OK(db_intern(db, "step", &step_id));
	OK(db_intern(db, "matmul", &op_id));
	OK(db_intern(db, "allreduce", &ar_id));
	for (int r = 0; r < NR; r++) {
		char host[16];
		snprintf(host, sizeof host, "node%d", r / 8);
		struct db_rank_info ri = { .rank = r, .host = host, .pid = 100 + r, .threads = 1, .dp_rank = r, .end_ns = NS * 1000 };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 1000 + r, "main"));
		for (int s = 0; s < NS; s++) {
			ev(db, r, DB_KIND_STEP, step_id, s * 1000, 1000, s);
			ev(db, r, DB_KIND_OP, op_id, s * 1000, op_ns(r, s), s);
			if (s == 0 && r > 0)
				ev(db, r, DB_KIND_COMM, ar_id, 900, r, s);
		}
	}
	OK(db_commit(db));
	OK(db_finalize(db));
	db_close(db);
}

static void rm(void)
{
	fs_rm_rf(dir);
}

TestSuite(viewer_ranks, .init = mk, .fini = rm);

static struct viewer *open_ranks(void)
{
	struct viewer_options o = { .path = path, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_RANKS };
	struct viewer *v;
	OK(viewer_open(&o, &v, NULL));
	struct vw_screen s;   /* a view loads its table when first drawn */
	OK(vw_screen_init(&s, 160, 60));
	OK(viewer_render(v, &s));
	vw_screen_release(&s);
	return v;
}

/* The screen's line that starts with `prefix` (e.g. "r37 "), into buf; 0 when none. */
static int screen_line(struct viewer *v, const char *prefix, char *buf)
{
	struct vw_screen s;
	OK(vw_screen_init(&s, 160, 60));
	OK(viewer_render(v, &s));
	int found = 0;
	for (int y = 0; y < s.h && !found; y++) {
		vw_row_text(&s, y, buf);
		found = !strncmp(buf, prefix, strlen(prefix));
	}
	vw_screen_release(&s);
	return found;
}

/* The last whitespace-separated word of a line: the heat strip (the table's last column). */
static const char *last_word(const char *line)
{
	const char *p = line + strlen(line);
	while (p > line && p[-1] != ' ')
		p--;
	return p;
}

Test(viewer_ranks, slowest_first_sort_any_column)
{
	struct viewer *v = open_ranks();
	cr_assert_eq(viewer_table_rows(v), NR);
	/* default: compute, largest first — 37 (2000), 5 (1640), 60 (1610), then the rest */
	cr_assert_str_eq(viewer_selected_name(v), "r37 *");
	viewer_key(v, 'j');
	cr_assert_str_eq(viewer_selected_name(v), "r5");    /* 1640 < 1.05 × 1600: not marked slow */
	viewer_key(v, 'j');
	cr_assert_str_eq(viewer_selected_name(v), "r60");
	viewer_key(v, 'g');
	/* '>' to comm: rank 63's 63 ns first; 'r' reverses: rank 0 (no collective) first */
	viewer_key(v, '>');
	cr_assert_str_eq(viewer_selected_name(v), "r63");
	viewer_key(v, 'r');
	cr_assert_str_eq(viewer_selected_name(v), "r0");
	/* '<' back to compute, then to total (every rank 4 steps × 1000 ns: ties stay in rank order) */
	viewer_key(v, '<');
	cr_assert_str_eq(viewer_selected_name(v), "r37 *");
	viewer_key(v, '<');
	cr_assert_str_eq(viewer_selected_name(v), "r0");
	/* the rank column sorts by number: 0, 1, ..., 10 (not 0, 1, 10) */
	viewer_key(v, '<');   /* steps */
	viewer_key(v, '<');   /* host */
	viewer_key(v, '<');   /* rank */
	viewer_key(v, 'G');
	cr_assert_str_eq(viewer_selected_name(v), "r63");
	viewer_free(v);
}

Test(viewer_ranks, heat_strip_per_step)
{
	struct viewer *v = open_ranks();
	char line[256];
	cr_assert(screen_line(v, "r37 ", line), "no row of rank 37");
	cr_assert_str_eq(last_word(line), "..##", "%s", line);
	cr_assert(screen_line(v, "r5 ", line));
	cr_assert_str_eq(last_word(line), "=...", "%s", line);
	cr_assert(screen_line(v, "r60 ", line));
	cr_assert_str_eq(last_word(line), ".:..", "%s", line);
	/* rank 63 is off the first screen until sorted to the top */
	viewer_key(v, ':');
	viewer_key(v, '6');
	viewer_key(v, '3');
	viewer_key(v, VK_ENTER);
	cr_assert(screen_line(v, "r63 ", line));
	cr_assert_str_eq(last_word(line), "....", "%s", line);
	cr_assert(screen_line(v, "heat: a character per step", line));
	/* steps 2:3 only: rank 37 '##', rank 5 '..' */
	viewer_key(v, 'S');
	viewer_key(v, '2');
	viewer_key(v, ':');
	viewer_key(v, '3');
	viewer_key(v, VK_ENTER);
	cr_assert(screen_line(v, "r37 ", line));
	cr_assert_str_eq(last_word(line), "##", "%s", line);
	cr_assert(screen_line(v, "r5 ", line));
	cr_assert_str_eq(last_word(line), "..", "%s", line);
	viewer_free(v);
}

Test(viewer_ranks, jump_to_a_rank)
{
	struct viewer *v = open_ranks();
	/* ':' 1 2 Enter: rank 12; the digits go to the prompt, not to the view keys */
	cr_assert_eq(viewer_key(v, ':'), 0);
	cr_assert_eq(viewer_key(v, '1'), 0);
	cr_assert_eq(viewer_key(v, '2'), 0);
	cr_assert_eq(viewer_current_view(v), VW_RANKS);
	char line[256];
	cr_assert(screen_line(v, "go to rank: 12_", line));
	cr_assert_eq(viewer_key(v, VK_ENTER), 0);
	cr_assert_str_eq(viewer_selected_name(v), "r12");
	/* a filter that hides the rank is cleared */
	viewer_key(v, '/');
	viewer_key(v, '3');
	viewer_key(v, '7');
	viewer_key(v, VK_ENTER);
	cr_assert_eq(viewer_table_rows(v), 1);
	viewer_key(v, ':');
	viewer_key(v, '4');
	viewer_key(v, VK_ENTER);
	cr_assert_eq(viewer_table_rows(v), NR);
	cr_assert_str_eq(viewer_selected_name(v), "r4");
	/* a rank that does not exist: the selection stays, the status says so */
	viewer_key(v, ':');
	viewer_key(v, '9');
	viewer_key(v, '9');
	viewer_key(v, VK_ENTER);
	cr_assert_str_eq(viewer_selected_name(v), "r4");
	cr_assert(screen_line(v, "no rank 99 here", line));
	/* Esc cancels the prompt */
	viewer_key(v, ':');
	viewer_key(v, '7');
	viewer_key(v, VK_ESC);
	cr_assert_str_eq(viewer_selected_name(v), "r4");
	/* the steps view: ':' goes to a step */
	viewer_key(v, '4');
	cr_assert_eq(viewer_current_view(v), VW_STEPS);
	viewer_key(v, ':');
	viewer_key(v, '2');
	viewer_key(v, VK_ENTER);
	cr_assert_str_eq(viewer_selected_name(v), "2");
	/* views whose rows are names: ':' says where it works and types nothing */
	viewer_key(v, '2');
	cr_assert_eq(viewer_current_view(v), VW_OPS);
	viewer_key(v, ':');
	cr_assert(screen_line(v, ": jumps to a rank", line));
	viewer_key(v, '5');
	cr_assert_eq(viewer_current_view(v), VW_RANKS);
	viewer_free(v);
}

/* More than 32 steps: 32 groups of consecutive steps, each character its group's worst step.
 * 3 ranks × 40 steps (400 ns of compute each; the median of every step 400): step s goes to group
 * s × 32 / 40, so steps 0 and 1 share group 0 and step 39 is alone in group 31. Rank 1: 440 ns in
 * step 1 (1.10: '=' for group 0); rank 2: 600 ns in step 39 (1.50: '#' last). */
static char dir40[64], path40[128];

static void mk40(void)
{
	strcpy(dir40, "/tmp/ascent-vranks40-XXXXXX");
	cr_assert_not_null(mkdtemp(dir40));
	snprintf(path40, sizeof path40, "%s/trace.db", dir40);
	struct db *db;
	OK(db_open(path40, DB_CREATE, &db));
	OK(db_begin(db));
	OK(db_put_run(db, "test_viewer_ranks", "{\"dp\":3}", 3));
	int64_t step_id, op_id;
	OK(db_intern(db, "step", &step_id));
	OK(db_intern(db, "matmul", &op_id));
	for (int r = 0; r < 3; r++) {
		struct db_rank_info ri = { .rank = r, .host = "node0", .pid = 100 + r, .threads = 1, .dp_rank = r, .end_ns = 40000 };
		OK(db_put_rank(db, &ri));
		OK(db_put_thread(db, r, 0, 1000 + r, "main"));
		for (int s = 0; s < 40; s++) {
			ev(db, r, DB_KIND_STEP, step_id, s * 1000, 1000, s);
			ev(db, r, DB_KIND_OP, op_id, s * 1000, r == 1 && s == 1 ? 440 : r == 2 && s == 39 ? 600 : 400, s);
		}
	}
	OK(db_commit(db));
	OK(db_finalize(db));
	db_close(db);
}

static void rm40(void)
{
	fs_rm_rf(dir40);
}

TestSuite(viewer_ranks_groups, .init = mk40, .fini = rm40);

Test(viewer_ranks_groups, heat_strip_groups_steps)
{
	struct viewer_options o = { .path = path40, .rank = -1, .step_lo = -1, .step_hi = -1, .view = VW_RANKS };
	struct viewer *v;
	OK(viewer_open(&o, &v, NULL));
	char line[256], want[40];
	cr_assert(screen_line(v, "r1 ", line));
	memset(want, '.', 32);
	want[0] = '=';
	want[32] = 0;
	cr_assert_str_eq(last_word(line), want, "%s", line);
	cr_assert(screen_line(v, "r2 ", line));
	memset(want, '.', 32);
	want[31] = '#';
	cr_assert_str_eq(last_word(line), want, "%s", line);
	cr_assert(screen_line(v, "heat: a character per group of steps (its worst)", line));
	viewer_free(v);
}
