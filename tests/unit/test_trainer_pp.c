/* tests/unit/test_trainer_pp.c — the pipeline schedules as data (pipeline.c) and the pieces of the
 * distributed step that need no MPI: every stage's action list runs every forward and backward
 * once, in dependency order, without deadlock; the ideal-machine bubble of the lists the trainer
 * executes equals theory ((p−1)/(m+p−1) for gpipe and 1f1b, ((p−1)/v)/(m+(p−1)/v) for interleaved)
 * to 1e-9, for many (p, m, v) and for forward:backward costs 1:1 and 1:2; 1f1b holds at most p−s
 * activation slots, gpipe m; the fp16 loss scaler; the sampler gives every layout the same
 * sequences. */
#include "trainer/trainer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void check_lists(enum trainer_pp_kind k, int P, int M, int V)
{
	int n = 2 * M * V;
	struct trainer_pp_action *a = malloc(sizeof *a * (size_t)n);
	for (int s = 0; s < P; s++) {
		int slots = -1;
		cr_assert_eq(trainer_pp_schedule(k, P, s, M, V, a, &slots), 0, "%s", ascent_errmsg());
		/* each (chunk, mb) exactly once forward and once backward, the forward first; backwards
		 * of one chunk in increasing micro-batch order (the last one launches DP buckets) */
		int *seen = calloc((size_t)(2 * M * V), sizeof(int));
		int *lastb = malloc(sizeof(int) * (size_t)V);
		for (int v = 0; v < V; v++)
			lastb[v] = -1;
		for (int i = 0; i < n; i++) {
			cr_assert(a[i].vchunk >= 0 && a[i].vchunk < V && a[i].mb >= 0 && a[i].mb < M);
			int key = a[i].vchunk * M + a[i].mb;
			if (!a[i].backward) {
				cr_assert_eq(seen[2 * key], 0);
				seen[2 * key] = 1;
			} else {
				cr_assert_eq(seen[2 * key], 1, "backward before forward");
				cr_assert_eq(seen[2 * key + 1], 0);
				seen[2 * key + 1] = 1;
				cr_assert_gt(a[i].mb, lastb[a[i].vchunk]);
				lastb[a[i].vchunk] = a[i].mb;
			}
			cr_assert(a[i].slot >= 0 && a[i].slot < slots);
		}
		if (k == TRAINER_PP_GPIPE)
			cr_assert_eq(slots, M);
		if (k == TRAINER_PP_1F1B)
			cr_assert_leq(slots, P - s < M ? P - s : M, "1f1b stage %d holds %d slots", s, slots);
		free(seen);
		free(lastb);
	}
	free(a);
}

Test(trainer_pp, bubble_equals_theory)
{
	static const int Ps[] = { 2, 3, 4, 8 }, Ms[] = { 1, 2, 4, 8, 16 };
	for (int k = 0; k < 3; k++)
		for (size_t i = 0; i < sizeof Ps / sizeof *Ps; i++)
			for (size_t j = 0; j < sizeof Ms / sizeof *Ms; j++)
				for (int V = 1; V <= 4; V++) {
					int P = Ps[i], M = Ms[j];
					if (trainer_pp_check(k, P, M, V))
						continue;
					check_lists(k, P, M, V);
					for (int r = 1; r <= 2; r++) {
						double span, bub;
						cr_assert_eq(trainer_pp_simulate(k, P, M, V, 1.0, r, &span, &bub), 0, "%s",
							     ascent_errmsg());
						double th = trainer_pp_bubble_theory(k, P, M, V);
						cr_assert(fabs(bub - th) < 1e-9, "%s P%d M%d V%d tb/tf %d: bubble %.6f, theory %.6f",
							  trainer_pp_name(k), P, M, V, r, bub, th);
					}
				}
	/* the figures of docs/background.md, "Pipeline bubble": p=4, m=8: 27% of the step; v=2: 16% */
	cr_assert(fabs(trainer_pp_bubble_theory(TRAINER_PP_1F1B, 4, 8, 1) - 3.0 / 11) < 1e-12);
	cr_assert(fabs(trainer_pp_bubble_theory(TRAINER_PP_INTERLEAVED, 4, 8, 2) - 1.5 / 9.5) < 1e-12);
}

Test(trainer_pp, bad_combinations)
{
	cr_assert_eq(trainer_pp_check(TRAINER_PP_INTERLEAVED, 4, 6, 2), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "multiple of --pp"), "%s", ascent_errmsg());
	cr_assert_eq(trainer_pp_check(TRAINER_PP_INTERLEAVED, 2, 4, 1), ASCENT_EUSAGE);
	cr_assert_eq(trainer_pp_check(TRAINER_PP_1F1B, 2, 4, 2), ASCENT_EUSAGE);
	enum trainer_pp_kind k;
	cr_assert_eq(trainer_pp_parse("zigzag", &k), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "gpipe, 1f1b or interleaved"));
}

Test(trainer_pp, loss_scaler)
{
	struct trainer_scaler s = { .scale = 65536, .window = 3 };
	cr_assert_eq(trainer_scaler_update(&s, 0), 1);
	cr_assert_eq(s.scale, 32768);
	cr_assert_eq(s.skipped, 1);
	cr_assert_eq(trainer_scaler_update(&s, 1), 0);
	cr_assert_eq(trainer_scaler_update(&s, 1), 0);
	cr_assert_eq(s.scale, 32768);
	cr_assert_eq(trainer_scaler_update(&s, 1), 0);
	cr_assert_eq(s.scale, 65536, "grows after 3 clean steps");
	s.scale = 1;
	trainer_scaler_update(&s, 0);
	cr_assert_eq(s.scale, 1, "never below 1");
}

/* Every layout reads the same global batch: the union over DP ranks, rounds and micro-batches of
 * the sequence indices is 0 … batch·K−1, each once. */
Test(trainer_pp, sampler_slices_the_global_batch)
{
	const int batch = 24, K = 2;
	static const int dps[] = { 1, 2, 3, 4 }, Ms[] = { 1, 2, 3 };
	for (size_t i = 0; i < 4; i++)
		for (size_t j = 0; j < 3; j++) {
			int dp = dps[i], M = Ms[j];
			if (batch % (dp * M))
				continue;
			struct trainer_sampler s = { .seed = 1, .ntokens = 1000, .batch = batch / dp, .seq = 8 };
			int seen[48] = { 0 };
			int mb = batch / (dp * M);
			for (int r = 0; r < dp; r++)
				for (int k = 0; k < K; k++)
					for (int m = 0; m < M; m++) {
						int64_t f = trainer_sample_first(&s, k, r, dp, m, M);
						for (int b = 0; b < mb; b++) {
							cr_assert(f + b >= 0 && f + b < batch * K);
							seen[f + b]++;
						}
					}
			for (int x = 0; x < batch * K; x++)
				cr_assert_eq(seen[x], 1, "dp %d M %d: sequence %d read %d times", dp, M, x, seen[x]);
			/* and micro-batch 0 of one DP rank is what trainer_sampler_batch gives (M = 1) */
			cr_assert_eq(trainer_sample_first(&s, 1, 0, dp, 0, 1), (int64_t)dp * s.batch);
		}
}
