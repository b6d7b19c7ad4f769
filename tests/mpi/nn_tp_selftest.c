/* tests/mpi/nn_tp_selftest.c — nn's tensor-parallel self-test, a test program (not an ascent
 * command) that tests/integration/nn_tp.sh runs under mpirun with TP = the world size. Every rank
 * builds the whole model (same seed, so the same weights and batch everywhere) and its TP shards loaded
 * from it, runs forward + backward both ways, and checks:
 *   - the loss of each layout against the whole model's (relative difference <= --tol);
 *   - every gradient slice: the shard's local gradient against the same slice of the whole model's
 *     gradient, per tensor max|shard - whole| <= tol · max|whole| (+1e-12);
 *   - replicated tensors' gradients are bitwise identical on all TP ranks (MIN == MAX);
 *   - gathering: nn_shard_to_full of every rank's parameters, SUM-reduced over TP, rebuilds the
 *     whole model exactly.
 * Layouts: one TP shard of all layers; the same with recomputation; two pipeline chunks per rank
 * (embed + block 0, blocks 1.. + head), each a TP shard, chained in this process with 2
 * micro-batches in flight. The program fails (exit 1) when any rank saw a difference. */
#include "comm/comm.h"
#include "nn/nn.h"
#include "tests/unit/nn_fixture.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nt {
	struct comm *c;
	int me, P;
	double tol;
	long checks, fails;
};

/* One line per failure, written at once (ranks share the terminal). */
#define CHECK(s, cond, ...)                                                             \
	do {                                                                            \
		(s)->checks++;                                                          \
		if (!(cond) && (s)->fails++ < 20) {                                     \
			char msg_[512];                                                 \
			snprintf(msg_, sizeof msg_, __VA_ARGS__);                       \
			fprintf(stderr, "nn-selftest: rank %d: %s\n", (s)->me, msg_);  \
		}                                                                       \
	} while (0)

static const char *const NAMES[NN_NPARAMS] = { "wte", "wpe", "ln1w", "ln1b", "qkvw", "qkvb", "attprojw", "attprojb",
					       "ln2w", "ln2b", "fcw", "fcb", "fcprojw", "fcprojb", "lnfw", "lnfb" };

/* Compare a shard's gradients (summed over its chunks for wte) with the whole model's. */
static int check_grads(struct nt *s, const char *layout, struct nn_gpt *ch, int nch, const struct nn_gpt *whole)
{
	for (int id = 0; id < NN_NPARAMS; id++) {
		for (int c = 0; c < nch; c++) {
			struct nn_gpt *m = &ch[c];
			size_t n = m->param_sizes[id];
			if (!n)
				continue;
			float *want = malloc(n * sizeof(float)), *got = malloc(n * sizeof(float));
			if (!want || !got) {
				free(want);
				free(got);
				return ascent_error(ASCENT_ENOMEM, "out of memory");
			}
			nn_shard_from_full(m, id, whole->grad[id], want);
			memcpy(got, m->grad[id], n * sizeof(float));
			/* tied wte across chunks: the trainer sums the embedding and head parts */
			if (id == NN_WTE && nch > 1) {
				if (c != 0) {
					free(want);
					free(got);
					continue;
				}
				for (int k = 1; k < nch; k++)
					if (ch[k].param_sizes[id])
						for (size_t i = 0; i < n; i++)
							got[i] += ch[k].grad[id][i];
			}
			double mx = 0, err = 0;
			for (size_t i = 0; i < n; i++) {
				mx = fmax(mx, fabs(want[i]));
				err = fmax(err, fabs((double)got[i] - want[i]));
			}
			CHECK(s, err <= s->tol * mx + 1e-12, "%s: chunk %d gradient of %s: max error %.3g, max |grad| %.3g "
			      "(relative %.3g > %.1g)", layout, c, NAMES[id], err, mx, mx > 0 ? err / mx : err, s->tol);
			CHECK(s, mx > 0 || id == NN_WPE, "%s: chunk %d gradient of %s is all zero", layout, c, NAMES[id]);
			/* replicated tensors: the same bits on every TP rank */
			if (nn_param_tp_split(id) == NN_TP_REPLICATED) {
				float *lo = malloc(n * sizeof(float)), *hi = malloc(n * sizeof(float));
				int rc = !lo || !hi ? ascent_error(ASCENT_ENOMEM, "out of memory") : 0;
				if (!rc)
					rc = comm_allreduce(s->c, COMM_TP, m->grad[id], lo, n, COMM_F32, COMM_MIN);
				if (!rc)
					rc = comm_allreduce(s->c, COMM_TP, m->grad[id], hi, n, COMM_F32, COMM_MAX);
				if (!rc)
					CHECK(s, memcmp(lo, hi, n * sizeof(float)) == 0,
					      "%s: chunk %d replicated gradient of %s differs across TP ranks", layout, c,
					      NAMES[id]);
				free(lo);
				free(hi);
				if (rc) {
					free(want);
					free(got);
					return rc;
				}
			}
			free(want);
			free(got);
		}
	}
	return 0;
}

static int check_loss(struct nt *s, const char *layout, float got, float want)
{
	double rel = fabs((double)got - want) / fmax(fabs(want), 1e-30);
	CHECK(s, rel <= s->tol, "%s: loss %.9g vs whole model %.9g (relative %.3g > %.1g)", layout, got, want, rel, s->tol);
	return 0;
}

/* Parameters gathered from every rank's chunks rebuild the whole model. */
static int check_gather(struct nt *s, struct nn_gpt *ch, int nch, const struct nn_gpt *whole)
{
	size_t full[NN_NPARAMS];
	nn_param_sizes(&whole->cfg, full);
	int rc = 0;
	for (int id = 0; !rc && id < NN_NPARAMS; id++) {
		float *buf = calloc(full[id], sizeof(float));
		if (!buf)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		for (int c = 0; !rc && c < nch; c++)
			rc = nn_shard_to_full(&ch[c], id, ch[c].param[id], buf);
		if (!rc)
			rc = comm_allreduce(s->c, COMM_TP, buf, buf, full[id], COMM_F32, COMM_SUM);
		if (!rc)
			CHECK(s, memcmp(buf, whole->param[id], full[id] * sizeof(float)) == 0,
			      "gather: %s is not rebuilt exactly from the TP shards", NAMES[id]);
		free(buf);
	}
	return rc;
}

static int run_tests(struct nt *s)
{
	const struct nn_config cfg = { .vocab_size = 64, .max_seq = 16, .n_layer = 3, .n_head = 4, .n_embd = 32 };
	const int B = 2, T = 16, N = B * T, C = cfg.n_embd, MB = 2;
	struct nn_gpt whole, ch[2];
	memset(ch, 0, sizeof ch);
	int rc = nn_gpt_init(&whole, &cfg);
	if (rc)
		return rc;
	fx_rough_weights(&whole, 1234, 0.05f);
	int x[2][32], y[2][32];
	float wloss[2];
	uint64_t st = rng_seed(77, 1);
	for (int k = 0; k < MB; k++)
		for (int i = 0; i < N; i++) {
			x[k][i] = (int)(rng_u32(&st) % 64u);
			y[k][i] = (int)(rng_u32(&st) % 64u);
		}
	float *act = malloc((size_t)N * C * sizeof(float)), *d = malloc((size_t)N * C * sizeof(float));
	if (!act || !d) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}

	/* 1 and 2: one TP shard of the whole model, without and with recomputation (1 micro-batch) */
	nn_gpt_zero_grad(&whole);
	if ((rc = nn_gpt_forward(&whole, x[0], y[0], B, T)) || (rc = nn_gpt_backward(&whole, 1.0f)))
		goto out;
	wloss[0] = whole.loss;
	for (int recompute = 0; recompute < 2; recompute++) {
		const char *layout = recompute ? "tp shard + recompute" : "tp shard";
		struct nn_shard sh = { .tp_rank = s->me, .tp_size = s->P, .tp = s->c, .layer_begin = 0,
				       .layer_end = cfg.n_layer, .has_embed = 1, .has_head = 1 };
		if ((rc = nn_gpt_init_shard(&ch[0], &cfg, &sh)))
			goto out;
		for (int id = 0; id < NN_NPARAMS; id++)
			nn_shard_from_full(&ch[0], id, whole.param[id], ch[0].param[id]);
		nn_gpt_set_recompute(&ch[0], recompute);
		nn_gpt_zero_grad(&ch[0]);
		if ((rc = nn_gpt_forward(&ch[0], x[0], y[0], B, T)) || (rc = nn_gpt_backward(&ch[0], 1.0f)))
			goto out;
		check_loss(s, layout, ch[0].loss, wloss[0]);
		if ((rc = check_grads(s, layout, ch, 1, &whole)) || (!recompute && (rc = check_gather(s, ch, 1, &whole))))
			goto out;
		nn_gpt_release(&ch[0]);
	}

	/* 3: two pipeline chunks per rank, each a TP shard, 2 micro-batches in flight */
	nn_gpt_zero_grad(&whole);
	for (int k = MB - 1; k >= 0; k--) {
		if ((rc = nn_gpt_forward(&whole, x[k], y[k], B, T)) || (rc = nn_gpt_backward(&whole, 1.0f / MB)))
			goto out;
		wloss[k] = whole.loss;
	}
	for (int c = 0; c < 2; c++) {
		struct nn_shard sh = { .tp_rank = s->me, .tp_size = s->P, .tp = s->c, .layer_begin = c ? 1 : 0,
				       .layer_end = c ? cfg.n_layer : 1, .has_embed = c == 0, .has_head = c == 1 };
		if ((rc = nn_gpt_init_shard(&ch[c], &cfg, &sh)))
			goto out;
		for (int id = 0; id < NN_NPARAMS; id++)
			nn_shard_from_full(&ch[c], id, whole.param[id], ch[c].param[id]);
		nn_gpt_zero_grad(&ch[c]);
		if ((rc = nn_gpt_set_slots(&ch[c], MB, B, T)))
			goto out;
	}
	for (int k = 0; k < MB; k++) {
		if ((rc = nn_gpt_stage_forward(&ch[0], k, x[k], NULL, NULL, B, T)))
			goto out;
		memcpy(act, nn_gpt_stage_output(&ch[0], k), (size_t)N * C * sizeof(float));
		if ((rc = nn_gpt_stage_forward(&ch[1], k, NULL, act, y[k], B, T)))
			goto out;
	}
	for (int k = MB - 1; k >= 0; k--) {
		check_loss(s, "tp x 2 chunks", nn_gpt_slot_loss(&ch[1], k), wloss[k]);
		if ((rc = nn_gpt_stage_backward(&ch[1], k, NULL, 1.0f / MB, d)) ||
		    (rc = nn_gpt_stage_backward(&ch[0], k, d, 1.0f, NULL)))
			goto out;
	}
	if ((rc = check_grads(s, "tp x 2 chunks", ch, 2, &whole)) || (rc = check_gather(s, ch, 2, &whole)))
		goto out;
out:
	free(act);
	free(d);
	nn_gpt_release(&ch[0]);
	nn_gpt_release(&ch[1]);
	nn_gpt_release(&whole);
	return rc;
}

static int selftest(int argc, char **argv)
{
	int help = 0, threads = 1;
	double tol = 1e-5;
	struct opt_spec specs[] = {
		{ .name = "threads", .type = OPT_INT, .dest = &threads, .min = 0, .max = 1024, .metavar = "N",
		  .help = "threads per rank (default 1; 0: cores / ranks)" },
		{ .name = "tol", .type = OPT_FLOAT, .dest = &tol, .min = 0, .max = 1, .metavar = "X",
		  .help = "relative tolerance for losses and gradients (default 1e-5)" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np;
	int rc = opt_parse("nn-selftest", specs, argc, argv, pos, 0, &np);
	if (rc)
		return rc;
	if (help) {
		opt_usage(stdout, "nn-selftest", "[--threads N] [--tol X]  (under mpirun: TP = world size)", specs);
		return 0;
	}
	nn_set_threads(threads);
	struct comm *c = NULL;
	if ((rc = comm_init(&c)))
		return rc;
	struct nt s = { .c = c, .me = comm_rank(c, COMM_WORLD), .P = comm_size(c, COMM_WORLD), .tol = tol };
	rc = comm_set_grid(c, 1, s.P, 1);
	if (!rc && 4 % s.P)
		rc = ascent_error(ASCENT_EUSAGE, "nn-selftest runs TP over the world: use 1, 2 or 4 ranks (the test "
				  "model has 4 heads), not %d", s.P);
	if (!rc)
		rc = run_tests(&s);
	if (!rc) {
		int64_t local[2] = { s.checks, s.fails }, tot[2];
		rc = comm_allreduce(c, COMM_WORLD, local, tot, 2, COMM_I64, COMM_SUM);
		if (!rc && s.me == 0)
			printf("nn-selftest: %lld checks, %lld failed on %d ranks (tp=%d, tol %.1g)\n", (long long)tot[0],
			       (long long)tot[1], s.P, s.P, tol);
		if (!rc && tot[1])
			rc = ascent_error(ASCENT_EFAIL, "nn self-test failed: %lld of %lld checks wrong (see above)",
					  (long long)tot[1], (long long)tot[0]);
	}
	int frc = comm_finalize(c);
	return rc ? rc : frc;
}

int main(int argc, char **argv)
{
	nn_blas_fix_core(argc, argv);   /* as ascent does: the right OpenBLAS core, passive libgomp */
	int rc = selftest(argc - 1, argv + 1);
	if (rc) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return ascent_exit_code(rc);
	}
	return 0;
}
