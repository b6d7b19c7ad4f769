/* tests/unit/test_nn_stage.c — nn's distributed-training API in one process: shard shapes and the
 * local ↔ full mapping (round trip over TP × PP layouts), shard weight init equal to the whole
 * model's slice, recomputation bitwise equal to the stored path, pipeline chunks chained in one
 * process equal to the whole model (loss and every gradient), several micro-batches in flight in
 * slots, the gradient-ready callback's order and finality, the gradient window (ZeRO-2) against
 * the whole gradient block, and the API's errors. TP with real
 * ranks is tested by `ascent nn-selftest` under mpirun (tests/integration/nn_tp.sh). */
#include "nn/nn.h"
#include "tests/unit/nn_fixture.h"

#include "common/common.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const struct nn_config TINY = { .vocab_size = 32, .max_seq = 8, .n_layer = 3, .n_head = 4, .n_embd = 16 };

#define OK(x) cr_assert_eq((x), 0, "%s: %s", #x, ascent_errmsg())

/* Load a shard's parameters from a whole model. */
static void load_from(struct nn_gpt *sh, const struct nn_gpt *whole)
{
	for (int id = 0; id < NN_NPARAMS; id++)
		OK(nn_shard_from_full(sh, id, whole->param[id], sh->param[id]));
}

static struct nn_shard shard(int tp_rank, int tp_size, int lb, int le, int embed, int head)
{
	return (struct nn_shard){ .tp_rank = tp_rank, .tp_size = tp_size, .tp = NULL, .layer_begin = lb,
				  .layer_end = le, .has_embed = embed, .has_head = head };
}

TestSuite(nn_stage);

Test(nn_stage, whole_model_init_is_unchanged)
{
	/* the shard-aware init must give the whole model the values it always had */
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &TINY));
	nn_gpt_init_weights(&m, 7);
	const int ids[] = { NN_WTE, NN_QKVW, NN_FCPROJW };
	for (int k = 0; k < 3; k++) {
		int id = ids[k];
		float *ref = malloc(m.param_sizes[id] * sizeof(float));
		uint64_t st = rng_seed(7, (uint64_t)id + 1);
		float std = id == NN_FCPROJW ? 0.02f / sqrtf(2.0f * TINY.n_layer) : 0.02f;
		rng_normal(&st, ref, m.param_sizes[id], 0.0f, std);
		cr_assert_eq(memcmp(ref, m.param[id], m.param_sizes[id] * sizeof(float)), 0, "tensor %d", id);
		free(ref);
	}
	cr_assert_eq(m.shard.tp_size, 1);
	cr_assert_eq(m.n_layer_local, 3);
	nn_gpt_release(&m);
}

Test(nn_stage, shard_sizes_and_mapping_round_trip)
{
	struct nn_gpt whole;
	OK(nn_gpt_init(&whole, &TINY));
	fx_rough_weights(&whole, 11, 0.1f);
	size_t full[NN_NPARAMS];
	nn_param_sizes(&TINY, full);
	/* layouts: tp 2 and 4 over pp chunks {embed,[0,1)} {[1,2)} {[2,3),head} and one whole-layer tp 2 */
	const int tps[] = { 2, 4, 1 };
	const int ranges[3][4] = { { 0, 1, 1, 0 }, { 1, 2, 0, 0 }, { 2, 3, 0, 1 } };
	for (int t = 0; t < 3; t++) {
		int P = tps[t];
		float *sum[NN_NPARAMS];
		for (int id = 0; id < NN_NPARAMS; id++)
			sum[id] = calloc(full[id], sizeof(float));
		size_t total = 0;
		for (int c = 0; c < 3; c++)
			for (int r = 0; r < P; r++) {
				struct nn_shard s = shard(r, P, ranges[c][0], ranges[c][1], ranges[c][2], ranges[c][3]);
				struct nn_gpt m;
				OK(nn_gpt_init_shard(&m, &TINY, &s));
				int C = TINY.n_embd, Cl = C / P;
				cr_assert_eq(m.param_sizes[NN_QKVW], (size_t)C * 3 * Cl);
				cr_assert_eq(m.param_sizes[NN_ATTPROJW], (size_t)Cl * C);
				cr_assert_eq(m.param_sizes[NN_FCB], (size_t)4 * Cl);
				cr_assert_eq(m.param_sizes[NN_LN1W], (size_t)C);
				cr_assert_eq(m.param_sizes[NN_WTE], ranges[c][2] || ranges[c][3] ? (size_t)32 * C : 0);
				cr_assert_eq(m.param_sizes[NN_WPE], ranges[c][2] ? (size_t)8 * C : 0);
				cr_assert_eq(m.param_sizes[NN_LNFW], ranges[c][3] ? (size_t)C : 0);
				load_from(&m, &whole);
				for (int id = 0; id < NN_NPARAMS; id++) {
					float *buf = calloc(full[id], sizeof(float));
					OK(nn_shard_to_full(&m, id, m.param[id], buf));
					for (size_t i = 0; i < full[id]; i++)
						sum[id][i] += buf[i];
					free(buf);
				}
				total += m.n_params;
				nn_gpt_release(&m);
			}
		/* the SUM over all shards rebuilds every tensor exactly */
		for (int id = 0; id < NN_NPARAMS; id++) {
			cr_assert_eq(memcmp(sum[id], whole.param[id], full[id] * sizeof(float)), 0,
				     "tp %d: tensor %d not rebuilt", P, id);
			free(sum[id]);
		}
		/* sharded parameters add up to the whole model, plus replicas */
		cr_assert(total >= whole.n_params);
	}
	/* a spot check of the q|k|v column mapping: tp rank 1 of 2, local column Cl + 3 (k part) */
	struct nn_shard s = shard(1, 2, 0, 3, 1, 1);
	struct nn_gpt m;
	OK(nn_gpt_init_shard(&m, &TINY, &s));
	load_from(&m, &whole);
	int C = 16, Cl = 8;
	for (int l = 0; l < 3; l++)
		for (int row = 0; row < C; row++)
			cr_assert_eq(m.param[NN_QKVW][(size_t)l * C * 3 * Cl + (size_t)row * 3 * Cl + Cl + 3],
				     whole.param[NN_QKVW][(size_t)l * C * 3 * C + (size_t)row * 3 * C + C + Cl + 3]);
	/* shard init equals the whole model's slice */
	nn_gpt_init_weights(&whole, 5);
	nn_gpt_init_weights(&m, 5);
	float *loc = malloc(m.n_params * sizeof(float));
	for (int id = 0; id < NN_NPARAMS; id++)
		OK(nn_shard_from_full(&m, id, whole.param[id], loc + (m.param[id] - m.params_mem)));
	cr_assert_eq(memcmp(loc, m.params_mem, m.n_params * sizeof(float)), 0);
	free(loc);
	cr_assert_eq(nn_shard_to_full(&m, NN_NPARAMS, m.param[0], whole.param[0]), ASCENT_EINPUT);
	nn_gpt_release(&m);
	nn_gpt_release(&whole);
}

Test(nn_stage, shard_errors)
{
	struct nn_gpt m;
	struct nn_shard s = shard(0, 3, 0, 3, 1, 1);
	cr_assert_eq(nn_gpt_init_shard(&m, &TINY, &s), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "n_head"), "%s", ascent_errmsg());
	s = shard(2, 2, 0, 3, 1, 1);
	cr_assert_eq(nn_gpt_init_shard(&m, &TINY, &s), ASCENT_EINPUT);
	s = shard(0, 1, 2, 4, 0, 1);
	cr_assert_eq(nn_gpt_init_shard(&m, &TINY, &s), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "layer range"), "%s", ascent_errmsg());
	s = shard(0, 1, 1, 1, 0, 0);
	cr_assert_eq(nn_gpt_init_shard(&m, &TINY, &s), ASCENT_EINPUT);
	/* tp > 1 without a communicator maps but does not run */
	s = shard(0, 2, 0, 3, 1, 1);
	OK(nn_gpt_init_shard(&m, &TINY, &s));
	int x[8] = { 0 };
	cr_assert_eq(nn_gpt_forward(&m, x, x, 1, 8), ASCENT_EUSAGE);
	nn_gpt_release(&m);
	/* a middle chunk needs in_act, and dout for its backward; whole-model calls are refused */
	s = shard(0, 1, 1, 2, 0, 0);
	OK(nn_gpt_init_shard(&m, &TINY, &s));
	cr_assert_eq(nn_gpt_stage_forward(&m, 0, x, NULL, NULL, 1, 8), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "in_act"), "%s", ascent_errmsg());
	cr_assert_eq(nn_gpt_forward(&m, x, x, 1, 8), ASCENT_EINTERNAL);
	float act[8 * 16] = { 0 };
	cr_assert_eq(nn_gpt_stage_backward(&m, 0, act, 1.0f, NULL), ASCENT_EINTERNAL); /* empty slot */
	OK(nn_gpt_stage_forward(&m, 0, NULL, act, NULL, 1, 8));
	cr_assert_eq(nn_gpt_stage_backward(&m, 0, NULL, 1.0f, NULL), ASCENT_EINPUT);
	cr_assert_eq(nn_gpt_stage_forward(&m, -1, NULL, act, NULL, 1, 8), ASCENT_EINPUT);
	cr_assert_eq(nn_gpt_set_slots(&m, 0, 1, 8), ASCENT_EINPUT);
	size_t off, n;
	cr_assert_eq(nn_gpt_layer_slice(&m, NN_QKVW, 0, &off, &n), ASCENT_EINPUT);
	OK(nn_gpt_layer_slice(&m, NN_QKVW, 1, &off, &n));
	cr_assert_eq(off, (size_t)(m.param[NN_QKVW] - m.params_mem));
	cr_assert_eq(n, (size_t)16 * 48);
	cr_assert_eq(nn_gpt_layer_slice(&m, NN_WTE, 1, &off, &n), ASCENT_EINPUT);
	nn_gpt_release(&m);
}

static void copy_grads(const struct nn_gpt *m, float **out)
{
	*out = malloc(m->n_params * sizeof(float));
	memcpy(*out, m->grads_mem, m->n_params * sizeof(float));
}

Test(nn_stage, recompute_is_bitwise_equal)
{
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &TINY));
	fx_rough_weights(&m, 21, 0.1f);
	int x[24], y[24];
	fx_tokens(x, 24, 32, 1);
	fx_tokens(y, 24, 32, 2);
	OK(nn_gpt_forward(&m, x, y, 3, 8));
	float loss = m.loss;
	nn_gpt_zero_grad(&m);
	OK(nn_gpt_backward(&m, 1.0f));
	float *g;
	copy_grads(&m, &g);

	struct nn_gpt r;
	OK(nn_gpt_init(&r, &TINY));
	memcpy(r.params_mem, m.params_mem, m.n_params * sizeof(float));
	nn_gpt_set_recompute(&r, 1);
	OK(nn_gpt_forward(&r, x, y, 3, 8));
	cr_assert_eq(memcmp(&loss, &r.loss, sizeof loss), 0, "loss %.9g vs %.9g", loss, r.loss);
	cr_assert_eq(memcmp(nn_gpt_logits(&m), nn_gpt_logits(&r), 24 * 32 * sizeof(float)), 0);
	nn_gpt_zero_grad(&r);
	OK(nn_gpt_backward(&r, 1.0f));
	for (int id = 0; id < NN_NPARAMS; id++)
		cr_assert_eq(memcmp(g + (m.grad[id] - m.grads_mem), r.grad[id], m.param_sizes[id] * sizeof(float)), 0,
			     "tensor %d differs with recompute", id);
	/* at a bigger shape (T = 8, B = 4: the regrown path), in bf16 too */
	fx_tokens(x, 24, 32, 3);
	for (int prec = 0; prec < 2; prec++) {
		int xb[32], yb[32];
		fx_tokens(xb, 32, 32, 4);
		fx_tokens(yb, 32, 32, 5);
		nn_gpt_set_precision(&m, prec ? NN_BF16 : NN_FP32);
		nn_gpt_set_precision(&r, prec ? NN_BF16 : NN_FP32);
		OK(nn_gpt_forward(&m, xb, yb, 4, 8));
		nn_gpt_zero_grad(&m);
		OK(nn_gpt_backward(&m, 1.0f));
		OK(nn_gpt_forward(&r, xb, yb, 4, 8));
		nn_gpt_zero_grad(&r);
		OK(nn_gpt_backward(&r, 1.0f));
		cr_assert_eq(m.loss, r.loss);
		cr_assert_eq(memcmp(m.grads_mem, r.grads_mem, m.n_params * sizeof(float)), 0, "precision %d", prec);
	}
	free(g);
	nn_gpt_release(&r);
	nn_gpt_release(&m);
}

/* Run the whole model as chunks (given as layer ranges) chained in one process, with `nmb`
 * micro-batches in flight (all forwards, then the backwards in reverse), recompute on or off;
 * compare losses and every gradient with the whole model doing the same micro-batches one by one. */
static void chain_check_prec(int nchunks, const int (*rg)[2], int nmb, int recompute, enum nn_precision prec)
{
	const int B = 2, T = 8, N = B * T, C = TINY.n_embd;
	struct nn_gpt whole;
	OK(nn_gpt_init(&whole, &TINY));
	fx_rough_weights(&whole, 33, 0.1f);
	nn_gpt_set_precision(&whole, prec);
	int x[4][16], y[4][16];
	float wl[4];
	nn_gpt_zero_grad(&whole);
	for (int k = nmb - 1; k >= 0; k--) { /* the order the chunks' backwards accumulate in */
		fx_tokens(x[k], N, 32, 10 + k);
		fx_tokens(y[k], N, 32, 20 + k);
		OK(nn_gpt_forward(&whole, x[k], y[k], B, T));
		wl[k] = whole.loss;
		OK(nn_gpt_backward(&whole, 1.0f / nmb));
	}
	struct nn_gpt ch[3];
	for (int c = 0; c < nchunks; c++) {
		struct nn_shard s = shard(0, 1, rg[c][0], rg[c][1], c == 0, c == nchunks - 1);
		OK(nn_gpt_init_shard(&ch[c], &TINY, &s));
		load_from(&ch[c], &whole);
		nn_gpt_set_recompute(&ch[c], recompute);
		nn_gpt_set_precision(&ch[c], prec);
		nn_gpt_zero_grad(&ch[c]);
		if (c == 1)
			OK(nn_gpt_set_slots(&ch[c], nmb, B, T));
	}
	/* forwards of every micro-batch (slot k), then backwards last-first */
	for (int k = 0; k < nmb; k++) {
		const float *act = NULL;
		for (int c = 0; c < nchunks; c++) {
			OK(nn_gpt_stage_forward(&ch[c], k, x[k], act, y[k], B, T));
			act = nn_gpt_stage_output(&ch[c], k);
			cr_assert((c == nchunks - 1) == (act == NULL));
		}
	}
	float *d = malloc((size_t)N * C * sizeof(float)), *d2 = malloc((size_t)N * C * sizeof(float));
	for (int k = nmb - 1; k >= 0; k--) {
		float loss = nn_gpt_slot_loss(&ch[nchunks - 1], k);
		cr_assert_eq(memcmp(&loss, &wl[k], sizeof loss), 0, "micro-batch %d loss %.9g vs whole %.9g", k, loss,
			     wl[k]);
		const float *dout = NULL;
		for (int c = nchunks - 1; c >= 0; c--) {
			OK(nn_gpt_stage_backward(&ch[c], k, dout, 1.0f / nmb, c ? d : NULL));
			/* bf16 at one thread, one micro-batch: the chunk's top fcprojb gradient is exactly the
			 * row-order column sums of the gradient it was given */
			const int Lc = rg[c][1] - rg[c][0];
			if (prec == NN_BF16 && nmb == 1 && dout && Lc > 0)
				for (int j = 0; j < C; j++) {
					float sum = 0;
					for (int i = 0; i < N; i++)
						sum += dout[(size_t)i * C + j];
					cr_assert_eq(sum, ch[c].grad[NN_FCPROJB][(size_t)(Lc - 1) * C + j],
						     "chunk %d fcprojb[%d]: %.9g vs the sums of its dout %.9g", c, j,
						     ch[c].grad[NN_FCPROJB][(size_t)(Lc - 1) * C + j], sum);
				}
			memcpy(d2, d, (size_t)N * C * sizeof(float));
			dout = d2;
		}
	}
	for (int c = 0; c < nchunks; c++)
		cr_assert_float_eq(nn_gpt_slot_loss(&ch[c], 0), c == nchunks - 1 ? wl[0] : -1.0f, 0);
	/* gradients: each chunk's slice equals the whole model's, bitwise; wte = embed + head parts */
	size_t full[NN_NPARAMS];
	nn_param_sizes(&TINY, full);
	for (int id = 0; id < NN_NPARAMS; id++) {
		float *g = calloc(full[id], sizeof(float));
		for (int c = 0; c < nchunks; c++) {
			if (id == NN_WTE && c == nchunks - 1 && nchunks > 1) {
				for (size_t i = 0; i < full[id]; i++)
					g[i] += ch[c].grad[id][i];
				continue;
			}
			OK(nn_shard_to_full(&ch[c], id, ch[c].grad[id], g));
		}
		if (id == NN_WTE && nchunks > 1) {
			for (size_t i = 0; i < full[id]; i++)
				cr_assert(fabsf(g[i] - whole.grad[id][i]) <= 1e-6f * (1 + fabsf(whole.grad[id][i])),
					  "wte grad %zu: %g vs %g", i, g[i], whole.grad[id][i]);
		} else {
			for (size_t i = 0; i < full[id]; i++)
				cr_assert_eq(g[i], whole.grad[id][i], "chunks %d mb %d rc %d: tensor %d [%zu]: %.9g vs %.9g",
					     nchunks, nmb, recompute, id, i, g[i], whole.grad[id][i]);
		}
		free(g);
	}
	free(d);
	free(d2);
	for (int c = 0; c < nchunks; c++)
		nn_gpt_release(&ch[c]);
	nn_gpt_release(&whole);
}

static void chain_check(int nchunks, const int (*rg)[2], int nmb, int recompute)
{
	chain_check_prec(nchunks, rg, nmb, recompute, NN_FP32);
}

Test(nn_stage, two_chunks_equal_whole_model)
{
	static const int rg[2][2] = { { 0, 2 }, { 2, 3 } };
	chain_check(2, rg, 1, 0);
	/* bf16 at one thread, where every sum is in row order: the whole model's block 2 leaves block 1
	 * its fc projection's dout in bf16 and bias sums (nn_acts' dres_carry), the chunks' block 2 is in
	 * another chunk and leaves nothing, so block 1 makes them itself: bit for bit the same */
	nn_set_threads(1);
	chain_check_prec(2, rg, 1, 0, NN_BF16);
	nn_set_threads(0);
}

Test(nn_stage, three_chunks_slots_and_recompute)
{
	/* the last chunk holds no layers: only the head */
	static const int rg[3][2] = { { 0, 1 }, { 1, 3 }, { 3, 3 } };
	chain_check(3, rg, 3, 0);
	chain_check(3, rg, 3, 1);
	static const int rg2[3][2] = { { 0, 0 }, { 0, 2 }, { 2, 3 } };
	chain_check(3, rg2, 2, 1);
	/* bf16 at one thread: the whole model's final LayerNorm leaves block 2 its fc projection's dout
	 * in bf16 and bias sums; here the head is a chunk of its own and leaves nothing (with and
	 * without recomputation: the sums alone, then) */
	nn_set_threads(1);
	chain_check_prec(3, rg, 3, 0, NN_BF16);
	chain_check_prec(3, rg, 3, 1, NN_BF16);
	nn_set_threads(0);
}

struct hook_log {
	int n, order[16];
	float *snap;            /* grads at the moment each layer was announced (whole copy) */
	const struct nn_gpt *m;
	int fail_at;
};

static int hook(void *arg, struct nn_gpt *m, int layer)
{
	struct hook_log *h = arg;
	if (h->n < 16)
		h->order[h->n] = layer;
	if (layer >= 0) {
		/* copy this layer's 12 slices as they are now */
		for (int id = 0; id < NN_NPARAMS; id++) {
			size_t off, n;
			if (nn_gpt_layer_slice(m, id, layer, &off, &n) == 0)
				memcpy(h->snap + off, m->grads_mem + off, n * sizeof(float));
		}
	} else if (layer == NN_GRADS_EMBED) {
		memcpy(h->snap + (m->grad[NN_WTE] - m->grads_mem), m->grad[NN_WTE], m->param_sizes[NN_WTE] * 4);
		memcpy(h->snap + (m->grad[NN_WPE] - m->grads_mem), m->grad[NN_WPE], m->param_sizes[NN_WPE] * 4);
	} else if (layer == NN_GRADS_HEAD) {
		memcpy(h->snap + (m->grad[NN_LNFW] - m->grads_mem), m->grad[NN_LNFW], 2 * m->param_sizes[NN_LNFW] * 4);
	}
	h->n++;
	return h->n == h->fail_at ? ASCENT_EIO : 0;
}

Test(nn_stage, grad_ready_callback)
{
	struct nn_gpt m;
	OK(nn_gpt_init(&m, &TINY));
	fx_rough_weights(&m, 44, 0.1f);
	int x[16], y[16];
	fx_tokens(x, 16, 32, 1);
	fx_tokens(y, 16, 32, 2);
	struct hook_log h = { .snap = calloc(m.n_params, sizeof(float)), .m = &m };
	nn_gpt_set_grad_ready(&m, hook, &h);
	OK(nn_gpt_forward(&m, x, y, 2, 8));
	nn_gpt_zero_grad(&m);
	OK(nn_gpt_backward(&m, 1.0f));
	int want[] = { NN_GRADS_HEAD, 2, 1, 0, NN_GRADS_EMBED };
	cr_assert_eq(h.n, 5);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(h.order[i], want[i], "call %d: layer %d", i, h.order[i]);
	/* what was announced was final */
	cr_assert_eq(memcmp(h.snap, m.grads_mem, m.n_params * sizeof(float)), 0);
	/* a failing callback stops the backward with its code */
	h.n = 0;
	h.fail_at = 2;
	cr_assert_eq(nn_gpt_backward(&m, 1.0f), ASCENT_EIO);
	cr_assert_eq(h.n, 2);
	nn_gpt_set_grad_ready(&m, NULL, NULL);
	h.n = 0;
	OK(nn_gpt_backward(&m, 1.0f));
	cr_assert_eq(h.n, 0);
	free(h.snap);
	nn_gpt_release(&m);
}

Test(nn_stage, slots_keep_their_activations)
{
	/* forward mb 0 and mb 1 into slots 0 and 1 of one chunk, read outputs, then backward in
	 * either order: same as each micro-batch alone */
	static const struct nn_config c = { .vocab_size = 32, .max_seq = 8, .n_layer = 2, .n_head = 2, .n_embd = 16 };
	struct nn_shard s = { .tp_size = 1, .layer_begin = 0, .layer_end = 2, .has_embed = 1, .has_head = 0 };
	struct nn_gpt m;
	OK(nn_gpt_init_shard(&m, &c, &s));
	fx_rough_weights(&m, 5, 0.1f);
	int x0[16], x1[8];
	fx_tokens(x0, 16, 32, 1);
	fx_tokens(x1, 8, 32, 2);
	/* singles */
	float *o0 = malloc(16 * 16 * 4), *o1 = malloc(8 * 16 * 4), *dy = malloc(16 * 16 * 4);
	uint64_t st = rng_seed(1, 1);
	rng_normal(&st, dy, 16 * 16, 0, 1);
	nn_gpt_zero_grad(&m);
	OK(nn_gpt_stage_forward(&m, 0, x0, NULL, NULL, 2, 8));
	memcpy(o0, nn_gpt_stage_output(&m, 0), 16 * 16 * 4);
	OK(nn_gpt_stage_backward(&m, 0, dy, 1.0f, NULL));
	OK(nn_gpt_stage_forward(&m, 0, x1, NULL, NULL, 1, 8));
	memcpy(o1, nn_gpt_stage_output(&m, 0), 8 * 16 * 4);
	OK(nn_gpt_stage_backward(&m, 0, dy, 1.0f, NULL));
	float *g;
	copy_grads(&m, &g);
	/* in flight, different shapes per slot, backward 0 first (g = g0 + g1 in the same order) */
	nn_gpt_zero_grad(&m);
	OK(nn_gpt_stage_forward(&m, 0, x0, NULL, NULL, 2, 8));
	OK(nn_gpt_stage_forward(&m, 1, x1, NULL, NULL, 1, 8));
	cr_assert_eq(memcmp(o0, nn_gpt_stage_output(&m, 0), 16 * 16 * 4), 0);
	cr_assert_eq(memcmp(o1, nn_gpt_stage_output(&m, 1), 8 * 16 * 4), 0);
	cr_assert_null(nn_gpt_stage_output(&m, 2));
	OK(nn_gpt_stage_backward(&m, 0, dy, 1.0f, NULL));
	OK(nn_gpt_stage_backward(&m, 1, dy, 1.0f, NULL));
	cr_assert_eq(memcmp(g, m.grads_mem, m.n_params * sizeof(float)), 0);
	/* pre-sizing keeps live slots intact */
	OK(nn_gpt_stage_forward(&m, 1, x1, NULL, NULL, 1, 8));
	OK(nn_gpt_set_slots(&m, 4, 2, 8));
	cr_assert_eq(memcmp(o1, nn_gpt_stage_output(&m, 1), 8 * 16 * 4), 0);
	free(g);
	free(o0);
	free(o1);
	free(dy);
	nn_gpt_release(&m);
}

/* The gradient window: a provider with two buffers; each block's gradients are copied out at its
 * grad-ready call into a full-size array, which must equal the whole-block backward exactly, over
 * two micro-batches (the provider zeroes a buffer when it hands it out, so accumulation across
 * micro-batches is the caller's; here we add). */
struct win {
	float *buf[2];
	int next, handed_layer[2], cur;
	float *full;            /* accumulated per-layer gradients, in grads_mem's layout */
	struct nn_gpt *m;
	int calls, give_null;
};

static float *win_dest(void *arg, struct nn_gpt *m, int layer)
{
	struct win *w = arg;
	if (w->give_null)
		return NULL;
	int i = w->next;
	w->next ^= 1;
	memset(w->buf[i], 0, nn_gpt_layer_grad_floats(m) * sizeof(float));
	w->handed_layer[i] = layer;
	w->cur = i;
	w->calls++;
	return w->buf[i];
}

static int win_ready(void *arg, struct nn_gpt *m, int layer)
{
	struct win *w = arg;
	if (layer < 0)
		return 0;
	cr_assert_eq(w->handed_layer[w->cur], layer, "ready for block %d, buffer holds %d", layer,
		     w->handed_layer[w->cur]);
	for (int id = NN_LN1W; id <= NN_FCPROJB; id++) {
		size_t woff, n, off, n2;
		OK(nn_gpt_layer_grad_offset(m, id, &woff, &n));
		OK(nn_gpt_layer_slice(m, id, layer, &off, &n2));
		cr_assert_eq(n, n2);
		for (size_t i = 0; i < n; i++)
			w->full[off + i] += w->buf[w->cur][woff + i];
	}
	return 0;
}

Test(nn_stage, gradient_window_equals_whole_block)
{
	struct nn_gpt ref, m;
	struct nn_shard s = shard(0, 1, 0, 3, 1, 1);
	OK(nn_gpt_init(&ref, &TINY));
	fx_rough_weights(&ref, 61, 0.1f);
	struct win w = { .next = 0 };
	OK(nn_gpt_init_shard_window(&m, &TINY, &s, win_dest, &w));
	load_from(&m, &ref);
	/* only the unlayered tensors have whole gradients */
	size_t unl = m.param_sizes[NN_WTE] + m.param_sizes[NN_WPE] + m.param_sizes[NN_LNFW] + m.param_sizes[NN_LNFB];
	cr_assert_eq(m.n_grads, unl);
	cr_assert_null(m.grad[NN_QKVW]);
	cr_assert_not_null(m.grad[NN_WTE]);
	size_t lf = nn_gpt_layer_grad_floats(&m);
	cr_assert_eq(lf * 3 + unl, m.n_params);
	w.buf[0] = malloc(lf * sizeof(float));
	w.buf[1] = malloc(lf * sizeof(float));
	w.full = calloc(m.n_params, sizeof(float));
	w.m = &m;
	nn_gpt_set_grad_ready(&m, win_ready, &w);
	int x[2][16], y[2][16];
	for (int k = 0; k < 2; k++) {
		fx_tokens(x[k], 16, 32, 10 + k);
		fx_tokens(y[k], 16, 32, 20 + k);
	}
	nn_gpt_zero_grad(&ref);
	nn_gpt_zero_grad(&m);
	for (int k = 0; k < 2; k++) {
		OK(nn_gpt_stage_forward(&ref, k, x[k], NULL, y[k], 2, 8));
		OK(nn_gpt_stage_forward(&m, k, x[k], NULL, y[k], 2, 8));
	}
	for (int k = 0; k < 2; k++) {
		OK(nn_gpt_stage_backward(&ref, k, NULL, 0.5f, NULL));
		OK(nn_gpt_stage_backward(&m, k, NULL, 0.5f, NULL));
	}
	cr_assert_eq(w.calls, 6, "one buffer per block and backward");
	/* per-layer: the window's sums equal the whole block; unlayered: the same grads_mem values */
	for (int id = 0; id < NN_NPARAMS; id++) {
		size_t n = ref.param_sizes[id];
		const float *want = ref.grad[id];
		const float *got = m.grad[id] ? m.grad[id] : w.full + (ref.param[id] - ref.params_mem);
		for (size_t i = 0; i < n; i++)
			cr_assert(fabsf(want[i] - got[i]) <= 1e-6f * (1.0f + fabsf(want[i])), "tensor %d [%zu]: %g vs %g",
				  id, i, want[i], got[i]);
	}
	/* back to a whole block, and a provider that gives nothing is an error */
	OK(nn_gpt_set_grad_window(&m, NULL, NULL));
	cr_assert_eq(m.n_grads, m.n_params);
	cr_assert_not_null(m.grad[NN_QKVW]);
	OK(nn_gpt_set_grad_window(&m, win_dest, &w));
	w.give_null = 1;
	OK(nn_gpt_stage_forward(&m, 0, x[0], NULL, y[0], 2, 8));
	cr_assert_eq(nn_gpt_stage_backward(&m, 0, NULL, 1.0f, NULL), ASCENT_EINTERNAL);
	free(w.buf[0]);
	free(w.buf[1]);
	free(w.full);
	nn_gpt_release(&m);
	nn_gpt_release(&ref);
}
