/* tests/unit/test_trainer_model.c — trainer/ with a (tiny) model: gradient accumulation equals a
 * larger batch, checkpoints round-trip in Hugging Face's layout and refuse bad files, and a
 * resumed run continues bit for bit. */
#include "trainer/trainer.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[64];
static char datapath[128];

/* Deterministic word soup: enough structure to learn, cheap to make. */
static void make_data(void)
{
	static const char *words[] = { "the ", "cat ", "sat ", "on ", "a ", "mat. ", "dogs ", "bark ", "at ",
				       "night, ", "and ", "we ", "sleep ", "well.\n", "so ", "it ", "goes " };
	size_t n = 60000, len = 0;
	char *buf = malloc(n + 32);
	cr_assert_not_null(buf);
	uint64_t rng = rng_seed(5, 1);
	while (len < n) {
		const char *w = words[rng_u32(&rng) % (sizeof words / sizeof words[0])];
		size_t k = strlen(w);
		memcpy(buf + len, w, k);
		len += k;
	}
	snprintf(datapath, sizeof datapath, "%s/soup.txt", tmpdir);
	cr_assert_eq(atomic_write_file(datapath, buf, len), 0);
	free(buf);
}

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-trainer-m-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	make_data();
	nn_set_threads(1);
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(trainer_model, .init = mk_tmp, .fini = rm_tmp);

/* A tiny model: L2 C32 H2 T32, V256. */
static void tiny_config(struct trainer_config *c, int batch, int accum)
{
	trainer_config_defaults(c);
	c->n_layer = 2;
	c->n_head = 2;
	c->n_embd = 32;
	c->max_seq = 32;
	c->seq = 32;
	c->batch = batch;
	c->grad_accum = accum;
	c->steps = 20;
	c->warmup = 2;
	c->lr = 3e-3;
	c->seed = 11;
	snprintf(c->data, sizeof c->data, "%s", datapath);
	cr_assert_eq(trainer_config_finish(c), 0, "%s", ascent_errmsg());
}

static double rel_diff(const float *a, const float *b, size_t n)
{
	double d = 0, s = 0;
	for (size_t i = 0; i < n; i++) {
		d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
		s += (double)a[i] * a[i];
	}
	return sqrt(d / (s > 0 ? s : 1));
}

/* --grad-accum K over batch B gives the gradient of one batch of K·B, up to float rounding:
 * ||g_K − g_1|| / ||g_1|| < 1e-5, and the mean losses agree to 1e-6 (relative). */
Test(trainer_model, grad_accum_equals_larger_batch)
{
	struct trainer_config c1, c4;
	tiny_config(&c1, 8, 1);
	tiny_config(&c4, 2, 4);
	struct trainer t1, t4;
	cr_assert_eq(trainer_init(&t1, &c1), 0, "%s", ascent_errmsg());
	cr_assert_eq(trainer_init(&t4, &c4), 0, "%s", ascent_errmsg());
	for (int step = 0; step < 3; step++) {
		double l1, l4, n1, n4, lr1, lr4;
		cr_assert_eq(trainer_compute_grads(&t1, &l1), 0, "%s", ascent_errmsg());
		cr_assert_eq(trainer_compute_grads(&t4, &l4), 0, "%s", ascent_errmsg());
		cr_assert(fabs(l1 - l4) <= 1e-6 * fabs(l1), "step %d: loss %.9g vs %.9g", step, l1, l4);
		double r = rel_diff(t4.model.grads_mem, t1.model.grads_mem, t1.model.n_params);
		cr_assert_lt(r, 1e-5, "step %d: relative gradient difference %g", step, r);
		cr_assert_eq(trainer_apply_grads(&t1, &n1, &lr1), 0);
		cr_assert_eq(trainer_apply_grads(&t4, &n4, &lr4), 0);
		cr_assert(fabs(n1 - n4) <= 1e-5 * n1, "grad norms %g vs %g", n1, n4);
		cr_assert_eq(lr1, lr4);
	}
	/* after three updates the weights still agree closely */
	double r = rel_diff(t4.model.params_mem, t1.model.params_mem, t1.model.n_params);
	cr_assert_lt(r, 1e-4, "relative parameter difference after 3 steps %g", r);
	trainer_release(&t1);
	trainer_release(&t4);
}

Test(trainer_model, training_lowers_the_loss)
{
	struct trainer_config c;
	tiny_config(&c, 8, 1);
	struct trainer t;
	cr_assert_eq(trainer_init(&t, &c), 0, "%s", ascent_errmsg());
	double v0, v1, loss, n, lr;
	cr_assert_eq(trainer_val_loss(&t, 4, &v0), 0, "%s", ascent_errmsg());
	cr_assert(fabs(v0 - log(256.0)) < 0.3, "initial loss %g is about ln 256", v0);
	for (int i = 0; i < 20; i++) {
		cr_assert_eq(trainer_compute_grads(&t, &loss), 0);
		cr_assert_eq(trainer_apply_grads(&t, &n, &lr), 0);
	}
	cr_assert_eq(trainer_val_loss(&t, 4, &v1), 0);
	cr_assert_lt(v1, v0 - 1.5, "val loss %g -> %g after 20 steps", v0, v1);
	trainer_release(&t);
}

Test(trainer_model, checkpoint_round_trip_in_hf_layout)
{
	struct trainer_config c;
	tiny_config(&c, 4, 1);
	struct trainer t;
	cr_assert_eq(trainer_init(&t, &c), 0, "%s", ascent_errmsg());
	double loss, n, lr;
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(trainer_compute_grads(&t, &loss), 0);
		cr_assert_eq(trainer_apply_grads(&t, &n, &lr), 0);
	}
	struct trainer_state st = { .step = t.step, .data_fingerprint = t.data.fingerprint, .ntrain = t.data.ntrain,
				    .config = c };
	char dir[256];
	cr_assert_eq(trainer_ckpt_save(tmpdir, &t.model, t.adam_m, t.adam_v, &st, dir, sizeof dir), 0, "%s",
		     ascent_errmsg());
	char want[256];
	snprintf(want, sizeof want, "%s/ckpt/step-000002", tmpdir);
	cr_assert_str_eq(dir, want);

	/* Hugging Face names and (in, out) shapes */
	char p[320];
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	struct st_file f;
	cr_assert_eq(st_open(&f, p), 0, "%s", ascent_errmsg());
	cr_assert_eq(f.n, 4 + 12 * 2, "tensors: %d", f.n);
	struct {
		const char *name;
		int nd;
		int64_t d0, d1;
	} names[] = {
		{ "wte.weight", 2, 256, 32 },        { "wpe.weight", 2, 32, 32 },       { "h.0.ln_1.weight", 1, 32, 0 },
		{ "h.1.attn.c_attn.weight", 2, 32, 96 }, { "h.1.attn.c_attn.bias", 1, 96, 0 },
		{ "h.0.attn.c_proj.weight", 2, 32, 32 }, { "h.1.mlp.c_fc.weight", 2, 32, 128 },
		{ "h.1.mlp.c_fc.bias", 1, 128, 0 },   { "h.0.mlp.c_proj.weight", 2, 128, 32 },
		{ "h.1.ln_2.bias", 1, 32, 0 },        { "ln_f.weight", 1, 32, 0 },       { "ln_f.bias", 1, 32, 0 },
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const struct st_tensor *x = st_find(&f, names[i].name);
		cr_assert_not_null(x, "%s", names[i].name);
		cr_assert_eq(x->dtype, ST_F32);
		cr_assert_eq(x->ndim, names[i].nd, "%s", names[i].name);
		cr_assert_eq(x->shape[0], names[i].d0, "%s", names[i].name);
		if (names[i].nd == 2)
			cr_assert_eq(x->shape[1], names[i].d1, "%s", names[i].name);
	}
	/* a per-layer slice is a straight copy: h.1.mlp.c_fc.weight is layer 1 of NN_FCW */
	const struct st_tensor *fc1 = st_find(&f, "h.1.mlp.c_fc.weight");
	cr_assert_eq(memcmp(fc1->data, t.model.param[NN_FCW] + 32 * 128, 32 * 128 * sizeof(float)), 0);
	st_close(&f);

	struct nn_config hc;
	cr_assert_eq(trainer_hf_config_read(dir, &hc), 0, "%s", ascent_errmsg());
	cr_assert_eq(hc.n_layer, 2);
	cr_assert_eq(hc.n_embd, 32);
	cr_assert_eq(hc.max_seq, 32);

	/* load into a fresh model: everything identical */
	struct nn_gpt m2;
	struct nn_config mc;
	trainer_config_model(&c, &mc);
	cr_assert_eq(nn_gpt_init(&m2, &mc), 0);
	float *am = calloc(m2.n_params, sizeof(float)), *av = calloc(m2.n_params, sizeof(float));
	struct trainer_state st2;
	cr_assert_eq(trainer_ckpt_load(dir, &m2, am, av, &st2), 0, "%s", ascent_errmsg());
	cr_assert_eq(memcmp(m2.params_mem, t.model.params_mem, m2.n_params * sizeof(float)), 0);
	cr_assert_eq(memcmp(am, t.adam_m, m2.n_params * sizeof(float)), 0);
	cr_assert_eq(memcmp(av, t.adam_v, m2.n_params * sizeof(float)), 0);
	cr_assert_eq(st2.step, 2);
	cr_assert_eq(st2.data_fingerprint, t.data.fingerprint);
	cr_assert_eq(memcmp(&st2.config, &c, sizeof c), 0, "the configuration round-trips exactly");
	struct nn_gpt m3;
	cr_assert_eq(trainer_model_open(dir, &m3), 0, "%s", ascent_errmsg());
	cr_assert_eq(memcmp(m3.params_mem, t.model.params_mem, m3.n_params * sizeof(float)), 0);
	nn_gpt_release(&m3);

	/* find: the run directory and its ckpt/ folder resolve to the newest checkpoint */
	char found[512];
	cr_assert_eq(trainer_ckpt_find(tmpdir, NULL, found, sizeof found), 0, "%s", ascent_errmsg());
	cr_assert_str_eq(found, want);
	cr_assert_eq(trainer_ckpt_find("latest", tmpdir, found, sizeof found), 0, "%s", ascent_errmsg());
	cr_assert_str_eq(found, want);
	free(am);
	free(av);
	nn_gpt_release(&m2);
	trainer_release(&t);
}

/* Write a model.safetensors from `m` with one tensor changed by `mode`. */
static void write_broken(const char *dir, const struct nn_gpt *m, const char *victim, int mode)
{
	char p[320];
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	cr_assert_eq(trainer_model_save(p, m), 0);
	struct st_file f;
	cr_assert_eq(st_open(&f, p), 0);
	struct st_writer *w = st_writer_new();
	static uint16_t half[4096];
	float *z = NULL; /* borrowed by the writer until st_writer_write */
	for (int i = 0; i < f.n; i++) {
		const struct st_tensor *t = &f.t[i];
		if (strcmp(t->name, victim)) {
			cr_assert_eq(st_writer_add(w, t->name, t->dtype, t->ndim, t->shape, t->data), 0);
		} else if (mode == 1) {
			int64_t s[2] = { t->shape[0], t->ndim == 2 ? t->shape[1] + 1 : 0 };
			z = calloc((size_t)(s[0] * (t->ndim == 2 ? s[1] : 1)), sizeof(float));
			cr_assert_eq(st_writer_add(w, t->name, ST_F32, t->ndim, s, z), 0);
		} else if (mode == 2) {
			cr_assert_eq(st_writer_add(w, t->name, ST_F16, t->ndim, t->shape, half), 0);
		}
		/* mode 0: left out */
	}
	cr_assert_eq(st_writer_meta(w, "format", "pt"), 0);
	char q[340];
	snprintf(q, sizeof q, "%s.new", p);
	cr_assert_eq(st_writer_write(w, q), 0, "%s", ascent_errmsg());
	st_writer_free(w);
	free(z);
	st_close(&f);
	cr_assert_eq(rename(q, p), 0);
}

Test(trainer_model, checkpoint_refuses_missing_wrong_shape_dtype_and_corrupt)
{
	struct trainer_config c;
	tiny_config(&c, 4, 1);
	struct nn_config mc;
	trainer_config_model(&c, &mc);
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &mc), 0);
	nn_gpt_init_weights(&m, 3);
	char dir[128];
	snprintf(dir, sizeof dir, "%s/ck", tmpdir);
	cr_assert_eq(fs_mkdir_p(dir), 0);
	char p[320];
	snprintf(p, sizeof p, "%s/config.json", dir);
	cr_assert_eq(trainer_hf_config_write(p, &mc), 0);

	write_broken(dir, &m, "ln_f.bias", 0);
	cr_assert_eq(trainer_model_load(dir, &m), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "'ln_f.bias' is missing"), "%s", ascent_errmsg());

	write_broken(dir, &m, "h.1.mlp.c_fc.weight", 1);
	cr_assert_eq(trainer_model_load(dir, &m), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "h.1.mlp.c_fc.weight") && strstr(ascent_errmsg(), "shape (32, 129)"), "%s",
		  ascent_errmsg());

	write_broken(dir, &m, "wpe.weight", 2);
	cr_assert_eq(trainer_model_load(dir, &m), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "wpe.weight") && strstr(ascent_errmsg(), "dtype F16"), "%s", ascent_errmsg());

	/* a truncated file is refused by the reader */
	write_broken(dir, &m, "none", 0);
	cr_assert_eq(trainer_model_load(dir, &m), 0, "%s", ascent_errmsg());
	snprintf(p, sizeof p, "%s/model.safetensors", dir);
	cr_assert_eq(truncate(p, 1000), 0);
	cr_assert_eq(trainer_model_load(dir, &m), ASCENT_EINPUT);

	/* a config.json that is not GPT-2's */
	snprintf(p, sizeof p, "%s/config.json", dir);
	cr_assert_eq(atomic_write_file(p, "{\"n_embd\": 32}", 14), 0);
	struct nn_config hc;
	cr_assert_eq(trainer_hf_config_read(dir, &hc), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "vocab_size"), "%s", ascent_errmsg());
	nn_gpt_release(&m);
}

/* Train 4 steps in one go, or 2 + checkpoint + 2 from the loaded checkpoint: the same losses,
 * bit for bit. */
Test(trainer_model, resume_is_bit_exact)
{
	struct trainer_config c;
	tiny_config(&c, 4, 2);
	struct trainer a;
	cr_assert_eq(trainer_init(&a, &c), 0, "%s", ascent_errmsg());
	double la[4], loss, n, lr;
	for (int i = 0; i < 4; i++) {
		cr_assert_eq(trainer_compute_grads(&a, &la[i]), 0);
		cr_assert_eq(trainer_apply_grads(&a, &n, &lr), 0);
	}
	struct trainer b;
	cr_assert_eq(trainer_init(&b, &c), 0);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(trainer_compute_grads(&b, &loss), 0);
		cr_assert_eq(loss, la[i]);
		cr_assert_eq(trainer_apply_grads(&b, &n, &lr), 0);
	}
	struct trainer_state st = { .step = b.step, .data_fingerprint = b.data.fingerprint, .ntrain = b.data.ntrain,
				    .config = c };
	char dir[256];
	cr_assert_eq(trainer_ckpt_save(tmpdir, &b.model, b.adam_m, b.adam_v, &st, dir, sizeof dir), 0, "%s",
		     ascent_errmsg());
	trainer_release(&b);

	struct trainer r;
	struct trainer_state st2;
	cr_assert_eq(trainer_init(&r, &c), 0);
	cr_assert_eq(trainer_ckpt_load(dir, &r.model, r.adam_m, r.adam_v, &st2), 0, "%s", ascent_errmsg());
	r.step = st2.step;
	for (int i = 2; i < 4; i++) {
		cr_assert_eq(trainer_compute_grads(&r, &loss), 0);
		cr_assert_eq(loss, la[i], "step %d: %.17g vs %.17g", i + 1, loss, la[i]);
		cr_assert_eq(trainer_apply_grads(&r, &n, &lr), 0);
	}
	cr_assert_eq(memcmp(r.model.params_mem, a.model.params_mem, a.model.n_params * sizeof(float)), 0);
	trainer_release(&r);
	trainer_release(&a);
}

/* Fine-tuning: --init-from takes the model dimensions from the checkpoint (a differing one is
 * refused), the weights load into a new trainer at step 0 with zero moments, and its first step
 * computes the checkpoint model's loss; --resume with --init-from is refused. Fake quantization on
 * the trainer's chunks changes the loss and gradients, off again restores them. */
Test(trainer_model, init_from_and_fake_quant)
{
	struct trainer_config c;
	tiny_config(&c, 4, 1);
	struct trainer a;
	cr_assert_eq(trainer_init(&a, &c), 0, "%s", ascent_errmsg());
	double loss, n, lr;
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(trainer_compute_grads(&a, &loss), 0);
		cr_assert_eq(trainer_apply_grads(&a, &n, &lr), 0);
	}
	struct trainer_state st = { .step = a.step, .data_fingerprint = a.data.fingerprint, .ntrain = a.data.ntrain,
				    .config = c };
	char dir[256];
	cr_assert_eq(trainer_ckpt_save(tmpdir, &a.model, a.adam_m, a.adam_v, &st, dir, sizeof dir), 0, "%s",
		     ascent_errmsg());

	struct trainer_config f;
	trainer_config_defaults(&f);
	f.seq = 32;
	f.batch = 4;
	f.seed = 11;
	snprintf(f.data, sizeof f.data, "%s", datapath);
	snprintf(f.init_from, sizeof f.init_from, "%s", tmpdir);   /* the run directory: its newest checkpoint */
	cr_assert_eq(trainer_config_finish(&f), 0, "%s", ascent_errmsg());
	cr_assert_str_eq(f.init_from, dir);
	cr_assert_eq(f.n_layer, 2);
	cr_assert_eq(f.n_embd, 32);
	cr_assert_eq(f.max_seq, 32);
	struct trainer b;
	cr_assert_eq(trainer_init(&b, &f), 0, "%s", ascent_errmsg());
	cr_assert_eq(trainer_load_weights_dist(&b, f.init_from), 0, "%s", ascent_errmsg());
	cr_assert_eq(memcmp(b.model.params_mem, a.model.params_mem, a.model.n_params * sizeof(float)), 0);
	cr_assert_eq(b.step, 0);
	for (size_t i = 0; i < b.n_opt; i++)
		cr_assert(b.adam_m[i] == 0 && b.adam_v[i] == 0);
	/* the checkpoint model's loss on b's step-0 batch, and a different one with fake quantization */
	double l0, lq, l1;
	cr_assert_eq(trainer_compute_grads(&b, &l0), 0);
	a.step = 0;
	cr_assert_eq(trainer_compute_grads(&a, &loss), 0);
	cr_assert_eq(loss, l0);
	struct nn_fq_layer lin[2 * NN_FQ_PER_LAYER];
	for (int i = 0; i < 2 * NN_FQ_PER_LAYER; i++)
		lin[i] = (struct nn_fq_layer){ .on = 1, .in_scale = 0.01f };
	struct nn_fake_quant fq = { .n_layer = 2, .act = NN_FQ_ACT_STATIC, .lin = lin };
	cr_assert_eq(trainer_set_fake_quant(&b, &fq), 0, "%s", ascent_errmsg());
	cr_assert_eq(trainer_compute_grads(&b, &lq), 0);
	cr_assert_neq(lq, l0);
	cr_assert(fabs(lq - l0) < 0.1 * l0, "fake quantization is a small perturbation: %g vs %g", lq, l0);
	cr_assert_eq(trainer_set_fake_quant(&b, NULL), 0);
	cr_assert_eq(trainer_compute_grads(&b, &l1), 0);
	cr_assert_eq(l1, l0);
	trainer_release(&b);
	trainer_release(&a);

	/* a differing dimension is refused, naming it */
	trainer_config_defaults(&f);
	f.n_embd = 64;
	snprintf(f.init_from, sizeof f.init_from, "%s", dir);
	cr_assert_eq(trainer_config_finish(&f), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "--n-embd 64 differs"), "%s", ascent_errmsg());
	snprintf(f.init_from, sizeof f.init_from, "%s/nothing", tmpdir);
	f.n_embd = 0;
	cr_assert_eq(trainer_config_finish(&f), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "no model.safetensors"), "%s", ascent_errmsg());
	/* --resume and --init-from exclude each other */
	struct trainer_cli cli;
	trainer_cli_init(&cli);
	char o1[] = "--resume", o2[] = "--init-from";
	char *argv[] = { o1, dir, o2, dir };
	int np;
	cr_assert_eq(opt_parse("train", cli.specs, 4, argv, NULL, 0, &np), 0, "%s", ascent_errmsg());
	struct trainer_config r;
	cr_assert_eq(trainer_config_resolve(&r, &cli, "train"), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "exclude each other"), "%s", ascent_errmsg());
}
