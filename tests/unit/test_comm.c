/* tests/unit/test_comm.c — comm/ without MPI processes: the grid arithmetic (rank order), the
 * ASCENT_FAULT and ASCENT_COMM_TIMEOUT parsers. Multi-rank behaviour is tested under mpirun in
 * tests/integration/comm_*.sh. */
#include "comm/comm.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <string.h>

Test(comm, grid_rank_order)
{
	/* TP innermost, then DP, then PP: rank = pp·(dp·tp) + dp_rank·tp + tp_rank */
	cr_assert_eq(comm_grid_rank(2, 2, 2, 0, 1, 0), 1);
	cr_assert_eq(comm_grid_rank(2, 2, 2, 1, 0, 0), 2);
	cr_assert_eq(comm_grid_rank(2, 2, 2, 0, 0, 1), 4);
	cr_assert_eq(comm_grid_rank(2, 2, 2, 1, 1, 1), 7);
	cr_assert_eq(comm_grid_rank(3, 4, 2, 2, 3, 1), 1 * 12 + 2 * 4 + 3);
	/* coords invert rank for many shapes, and every rank is hit exactly once */
	for (int dp = 1; dp <= 4; dp++)
		for (int tp = 1; tp <= 4; tp++)
			for (int pp = 1; pp <= 4; pp++) {
				int n = dp * tp * pp;
				char seen[64] = { 0 };
				for (int r = 0; r < n; r++) {
					int d, t, p;
					comm_grid_coords(r, dp, tp, pp, &d, &t, &p);
					cr_assert(d >= 0 && d < dp && t >= 0 && t < tp && p >= 0 && p < pp);
					int back = comm_grid_rank(dp, tp, pp, d, t, p);
					cr_assert_eq(back, r, "grid %dx%dx%d rank %d", dp, tp, pp, r);
					cr_assert_eq(seen[back], 0);
					seen[back] = 1;
					if (t + 1 < tp)   /* consecutive ranks form a TP group */
						cr_assert_eq(comm_grid_rank(dp, tp, pp, d, t + 1, p), r + 1);
				}
			}
}

Test(comm, fault_parse_good)
{
	struct comm_fault f[COMM_MAX_FAULTS];
	int n;
	cr_assert_eq(comm_fault_parse("delay:rank=3,ms=50", f, COMM_MAX_FAULTS, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 1);
	cr_assert_eq(f[0].kind, COMM_FAULT_DELAY);
	cr_assert_eq(f[0].rank, 3);
	cr_assert_eq(f[0].ms, 50);
	cr_assert_eq(f[0].comm, -1);
	cr_assert_eq(comm_fault_parse("hang:rank=1,seq=40;crash:rank=*,seq=7,comm=dp;delay:ms=0,rank=0,comm=pp", f,
				      COMM_MAX_FAULTS, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 3);
	cr_assert_eq(f[0].kind, COMM_FAULT_HANG);
	cr_assert_eq(f[0].rank, 1);
	cr_assert_eq(f[0].seq, 40);
	cr_assert_eq(f[1].kind, COMM_FAULT_CRASH);
	cr_assert_eq(f[1].rank, -1);
	cr_assert_eq(f[1].seq, 7);
	cr_assert_eq(f[1].comm, COMM_DP);
	cr_assert_eq(f[2].comm, COMM_PP);
	cr_assert_eq(f[2].ms, 0);
	cr_assert_eq(comm_fault_parse("stall:rank=1,seq=3,comm=dp", f, COMM_MAX_FAULTS, &n), 0, "%s", ascent_errmsg());
	cr_assert_eq(n, 1);
	cr_assert_eq(f[0].kind, COMM_FAULT_STALL);
	cr_assert_eq(f[0].seq, 3);
	cr_assert_eq(f[0].comm, COMM_DP);
	cr_assert_neq(comm_fault_parse("stall:rank=1", f, COMM_MAX_FAULTS, &n), 0);
}

Test(comm, fault_parse_bad)
{
	struct comm_fault f[2];
	int n;
	static const struct { const char *spec, *msg; } bad[] = {
		{ "", "no fault given" },
		{ "delay", "missing ':'" },
		{ "boom:rank=1", "unknown fault kind" },
		{ "delay:rank=1", "missing ms=" },
		{ "delay:ms=5", "missing rank=" },
		{ "hang:rank=1", "missing seq=" },
		{ "hang:rank=1,seq=0", "seq must be" },
		{ "hang:rank=x,seq=3", "rank must be" },
		{ "delay:rank=1,ms=-3", "ms must be" },
		{ "delay:rank=1,ms=5,seq=2", "'seq' belongs to hang, stall and crash" },
		{ "hang:rank=1,seq=2,ms=5", "'ms' belongs to delay" },
		{ "hang:rank=1,seq=2,comm=xx", "comm must be" },
		{ "hang:rank=1,seq=2,color=red", "unknown key" },
		{ "hang:rank=1,seq", "expected key=value" },
		{ "delay:rank=1,ms=1;delay:rank=2,ms=1;delay:rank=3,ms=1", "too many faults" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(comm_fault_parse(bad[i].spec, f, 2, &n), ASCENT_EUSAGE, "'%s' accepted", bad[i].spec);
		cr_assert(strstr(ascent_errmsg(), bad[i].msg), "'%s': message '%s' lacks '%s'", bad[i].spec, ascent_errmsg(),
			  bad[i].msg);
		cr_assert(strstr(ascent_errmsg(), "ASCENT_FAULT"), "%s", ascent_errmsg());
	}
}

Test(comm, timeout_parse)
{
	double v;
	cr_assert_eq(comm_timeout_parse("600", &v), 0);
	cr_assert_float_eq(v, 600, 1e-12);
	cr_assert_eq(comm_timeout_parse("0.25", &v), 0);
	cr_assert_float_eq(v, 0.25, 1e-12);
	cr_assert_eq(comm_timeout_parse("0", &v), 0);
	cr_assert_float_eq(v, 0, 0);
	const char *bad[] = { "", "x", "-1", "5s", "nan", "inf", "1e9" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		cr_assert_eq(comm_timeout_parse(bad[i], &v), ASCENT_EUSAGE, "'%s' accepted", bad[i]);
		cr_assert(strstr(ascent_errmsg(), "ASCENT_COMM_TIMEOUT"));
	}
}

Test(comm, names_and_sizes)
{
	cr_assert_str_eq(comm_kind_name(COMM_WORLD), "world");
	cr_assert_str_eq(comm_kind_name(COMM_PP), "pp");
	cr_assert_eq(comm_dtype_size(COMM_F32), 4);
	cr_assert_eq(comm_dtype_size(COMM_F64), 8);
	cr_assert_eq(comm_dtype_size(COMM_I64), 8);
	cr_assert_eq(comm_dtype_size(COMM_BYTE), 1);
}
