/* tests/unit/test_trainer.c — trainer/ without training: configuration (file, options, merge,
 * errors), llm.c shards, text and directory loading, the default corpus, the split, the sampler
 * and the learning-rate schedule. The model-dependent tests are in test_trainer_model.c. */
#include "trainer/trainer.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* argv-style arrays of literals below: -Wwrite-strings would make them const */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-trainer-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(trainer, .init = mk_tmp, .fini = rm_tmp);

static void put_file(const char *path, const char *text)
{
	cr_assert_eq(atomic_write_file(path, text, strlen(text)), 0, "%s", ascent_errmsg());
}

static void tpath(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

/* ------------------------------------------------------------------------------------------ */
/* configuration */

Test(trainer, config_file_keys_types_and_ranges)
{
	char p[128];
	tpath(p, sizeof p, "c.json");
	struct trainer_config c;
	trainer_config_defaults(&c);
	unsigned char seen[TRAINER_MAX_FIELDS] = { 0 };
	put_file(p, "{\"steps\": 42, \"lr\": 0.0005, \"preset\": \"small\", \"data\": \"x.txt\", \"seed\": 7}");
	cr_assert_eq(trainer_config_load_file(&c, p, seen), 0, "%s", ascent_errmsg());
	cr_assert_eq(c.steps, 42);
	cr_assert_float_eq(c.lr, 0.0005, 1e-12);
	cr_assert_str_eq(c.preset, "small");
	cr_assert_str_eq(c.data, "x.txt");
	cr_assert_eq(c.seed, 7);
	cr_assert_eq(seen[trainer_field_find("steps") - trainer_fields], 1);
	cr_assert_eq(seen[trainer_field_find("batch") - trainer_fields], 0);

	struct {
		const char *json, *want1, *want2;
	} bad[] = {
		{ "{\"stepz\": 3}", "unknown key 'stepz'", "c.json" },
		{ "{\"steps\": \"ten\"}", "key 'steps'", "got a string" },
		{ "{\"steps\": 2.5}", "key 'steps'", "integer" },
		{ "{\"batch\": 0}", "key 'batch'", "[1, 65536]" },
		{ "{\"lr\": -1}", "key 'lr'", "(0, 10]" },
		{ "{\"lr\": 0}", "key 'lr'", "(0, 10]" },
		{ "{\"preset\": \"huge\"}", "key 'preset'", "tiny|small|gpt2-124m" },
		{ "{\"beta2\": 1}", "key 'beta2'", "got 1" },
		{ "[1, 2]", "must be a JSON object", "c.json" },
		{ "{\"steps\": 3", "not valid JSON", "line" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		put_file(p, bad[i].json);
		trainer_config_defaults(&c);
		int rc = trainer_config_load_file(&c, p, NULL);
		cr_assert_eq(rc, ASCENT_EINPUT, "%s: rc %d", bad[i].json, rc);
		cr_assert(strstr(ascent_errmsg(), bad[i].want1), "%s: %s", bad[i].json, ascent_errmsg());
		cr_assert(strstr(ascent_errmsg(), bad[i].want2), "%s: %s", bad[i].json, ascent_errmsg());
	}
}

Test(trainer, config_options_override_file)
{
	char p[128];
	tpath(p, sizeof p, "c.json");
	put_file(p, "{\"steps\": 5, \"batch\": 3, \"lr\": 0.01, \"grad_accum\": 2}");
	struct trainer_cli cli;
	trainer_cli_init(&cli);
	char *argv[] = { "--config", p, "--steps", "7", "--grad-accum=4", "--out", "somewhere", "--seq", "64" };
	char *pos[1];
	int np;
	cr_assert_eq(opt_parse("train", cli.specs, 9, argv, pos, 0, &np), 0, "%s", ascent_errmsg());
	struct trainer_config c;
	cr_assert_eq(trainer_config_resolve(&c, &cli, "train"), 0, "%s", ascent_errmsg());
	cr_assert_eq(c.steps, 7);       /* option over file */
	cr_assert_eq(c.batch, 3);       /* file over default */
	cr_assert_eq(c.grad_accum, 4);
	cr_assert_float_eq(c.lr, 0.01, 1e-12);
	cr_assert_float_eq(c.min_lr, 0.001, 1e-12); /* resolved: lr / 10 */
	cr_assert_eq(c.seq, 64);
	cr_assert_str_eq(c.out, "somewhere");
	/* the preset filled the model */
	cr_assert_eq(c.n_layer, 4);
	cr_assert_eq(c.n_embd, 256);
	cr_assert_eq(c.vocab_size, 256);
	cr_assert_eq(c.max_seq, 256);
}

Test(trainer, config_bad_options_name_option_and_values)
{
	struct {
		const char *opt, *val, *want;
	} bad[] = {
		{ "--steps", "abc", "[1, 1000000000]" },
		{ "--batch", "0", "[1, 65536]" },
		{ "--lr", "-1", "(0, 10]" },
		{ "--grad-accum", "x", "integer" },
		{ "--seq", "999", "max_seq" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct trainer_cli cli;
		trainer_cli_init(&cli);
		char *argv[] = { (char *)bad[i].opt, (char *)bad[i].val, "--out", "x" };
		char *pos[1];
		int np;
		cr_assert_eq(opt_parse("train", cli.specs, 4, argv, pos, 0, &np), 0);
		struct trainer_config c;
		int rc = trainer_config_resolve(&c, &cli, "train");
		cr_assert_eq(rc, ASCENT_EUSAGE, "%s %s: rc %d", bad[i].opt, bad[i].val, rc);
		cr_assert(strstr(ascent_errmsg(), bad[i].want), "%s", ascent_errmsg());
		if (strcmp(bad[i].opt, "--seq"))
			cr_assert(strstr(ascent_errmsg(), bad[i].opt), "%s", ascent_errmsg());
	}
	/* an unknown option and a bad choice are refused by the parser */
	struct trainer_cli cli;
	trainer_cli_init(&cli);
	char *argv[] = { "--stepz", "3" };
	char *pos[1];
	int np;
	cr_assert_eq(opt_parse("train", cli.specs, 2, argv, pos, 0, &np), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "--stepz"));
	char *argv2[] = { "--preset", "huge" };
	cr_assert_eq(opt_parse("train", cli.specs, 2, argv2, pos, 0, &np), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "tiny|small|gpt2-124m"));
}

Test(trainer, config_written_json_reloads_identically)
{
	struct trainer_config c, d;
	trainer_config_defaults(&c);
	c.steps = 11;
	c.batch = 5;
	c.lr = 3e-4;
	snprintf(c.data, sizeof c.data, "some/dir");
	cr_assert_eq(trainer_config_finish(&c), 0, "%s", ascent_errmsg());
	char p[128];
	tpath(p, sizeof p, "config.json");
	cr_assert_eq(trainer_config_write(p, &c), 0);
	trainer_config_defaults(&d);
	cr_assert_eq(trainer_config_load_file(&d, p, NULL), 0, "%s", ascent_errmsg());
	cr_assert_eq(trainer_config_finish(&d), 0);
	cr_assert_eq(memcmp(&c, &d, sizeof c), 0);
	cr_assert_eq(trainer_config_hash(&c, NULL), trainer_config_hash(&d, NULL));
	d.lr = 1e-3;
	cr_assert_neq(trainer_config_hash(&c, NULL), trainer_config_hash(&d, NULL));
	d = c;
	d.eval_every = 3; /* not an exact field: the hash ignores it */
	cr_assert_eq(trainer_config_hash(&c, NULL), trainer_config_hash(&d, NULL));
	/* a stored configuration written before a setting existed: the hash over the keys it has
	 * ignores that setting, and equals the full hash when every key is there */
	unsigned char seen[TRAINER_MAX_FIELDS];
	memset(seen, 1, sizeof seen);
	cr_assert_eq(trainer_config_hash(&c, seen), trainer_config_hash(&c, NULL));
	const struct trainer_field *lrf = trainer_field_find("lr");
	cr_assert(lrf && lrf->exact);
	seen[lrf - trainer_fields] = 0;
	d = c;
	d.lr = 1e-3;
	cr_assert_eq(trainer_config_hash(&c, seen), trainer_config_hash(&d, seen));
	cr_assert_neq(trainer_config_hash(&c, seen), trainer_config_hash(&c, NULL));
}

/* ------------------------------------------------------------------------------------------ */
/* shards and data */

Test(trainer, shard_round_trip_and_header)
{
	char p[128];
	tpath(p, sizeof p, "s.bin");
	uint16_t tok[1000];
	for (int i = 0; i < 1000; i++)
		tok[i] = (uint16_t)((i * 37) % 256);
	cr_assert_eq(trainer_shard_write(p, tok, 1000), 0, "%s", ascent_errmsg());
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(st.st_size, 1024 + 2 * 1000);
	char *raw;
	size_t len;
	cr_assert_eq(fs_read_all(p, &raw, &len), 0);
	int32_t hdr[3];
	memcpy(hdr, raw, sizeof hdr);
	cr_assert_eq(hdr[0], 20240520);
	cr_assert_eq(hdr[1], 1);
	cr_assert_eq(hdr[2], 1000);
	free(raw);
	cr_assert(trainer_is_shard(p));
	struct trainer_tokens t;
	cr_assert_eq(trainer_shard_read(p, 256, &t), 0, "%s", ascent_errmsg());
	cr_assert_eq(t.n, 1000);
	cr_assert_eq(memcmp(t.tok, tok, sizeof tok), 0);
	trainer_tokens_release(&t);
	/* through the generic loader too */
	cr_assert_eq(trainer_tokens_load(p, 256, &t), 0, "%s", ascent_errmsg());
	cr_assert_eq(t.n, 1000);
	trainer_tokens_release(&t);
}

static void write_raw(const char *path, const void *d, size_t n)
{
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(d, 1, n, f), n);
	fclose(f);
}

Test(trainer, shard_refuses_bad_files)
{
	char p[128];
	tpath(p, sizeof p, "bad.bin");
	unsigned char buf[1024 + 20];
	struct trainer_tokens t;
	memset(buf, 0, sizeof buf);
	int32_t h[3] = { 20240520, 1, 10 };
	memcpy(buf, h, sizeof h);

	/* valid: 10 tokens */
	write_raw(p, buf, 1024 + 20);
	cr_assert_eq(trainer_shard_read(p, 256, &t), 0, "%s", ascent_errmsg());
	trainer_tokens_release(&t);

	/* truncated */
	write_raw(p, buf, 1024 + 18);
	cr_assert_eq(trainer_shard_read(p, 256, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "truncated"), "%s", ascent_errmsg());
	/* shorter than the header */
	write_raw(p, buf, 100);
	cr_assert_eq(trainer_shard_read(p, 256, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "header"), "%s", ascent_errmsg());
	/* bad magic */
	int32_t m = 12345;
	memcpy(buf, &m, 4);
	write_raw(p, buf, 1024 + 20);
	cr_assert_eq(trainer_shard_read(p, 256, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "magic"), "%s", ascent_errmsg());
	cr_assert_eq(trainer_tokens_load(p, 256, &t), ASCENT_EINPUT); /* .bin is read as a shard */
	/* bad version */
	m = 20240520;
	memcpy(buf, &m, 4);
	int32_t v = 7;
	memcpy(buf + 4, &v, 4);
	write_raw(p, buf, 1024 + 20);
	cr_assert_eq(trainer_shard_read(p, 256, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "version"), "%s", ascent_errmsg());
	/* out of vocabulary */
	v = 1;
	memcpy(buf + 4, &v, 4);
	uint16_t big = 300;
	memcpy(buf + 1024 + 6, &big, 2);
	write_raw(p, buf, 1024 + 20);
	cr_assert_eq(trainer_shard_read(p, 256, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "300") && strstr(ascent_errmsg(), "position 3"), "%s", ascent_errmsg());
	cr_assert_eq(trainer_shard_read(p, 512, &t), 0, "a larger vocabulary accepts it: %s", ascent_errmsg());
	cr_assert_eq(t.tok[3], 300);
	trainer_tokens_release(&t);
}

Test(trainer, text_and_directory_loading_order)
{
	char d[128], p[256];
	tpath(d, sizeof d, "data");
	snprintf(p, sizeof p, "%s/sub", d);
	cr_assert_eq(fs_mkdir_p(p), 0);
	snprintf(p, sizeof p, "%s/b.txt", d);
	put_file(p, "BB");
	snprintf(p, sizeof p, "%s/a.txt", d);
	put_file(p, "AA");
	snprintf(p, sizeof p, "%s/sub/c.txt", d);
	put_file(p, "CC");
	snprintf(p, sizeof p, "%s/.hidden", d);
	put_file(p, "HH");
	struct trainer_tokens t;
	cr_assert_eq(trainer_tokens_load(d, 256, &t), 0, "%s", ascent_errmsg());
	cr_assert_eq(t.n, 6);
	char s[7];
	for (int i = 0; i < 6; i++)
		s[i] = (char)t.tok[i];
	s[6] = 0;
	cr_assert_str_eq(s, "AABBCC");
	trainer_tokens_release(&t);
	/* a byte >= vocab_size is refused */
	snprintf(p, sizeof p, "%s/a.txt", d);
	cr_assert_eq(trainer_tokens_load(p, 65, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "vocabulary"), "%s", ascent_errmsg());
	/* missing path */
	snprintf(p, sizeof p, "%s/nope", d);
	cr_assert_eq(trainer_tokens_load(p, 256, &t), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "does not exist"), "%s", ascent_errmsg());
}

Test(trainer, default_corpus_is_plain_text_in_order)
{
	char **files;
	int n;
	cr_assert_eq(trainer_default_corpus_files(&files, &n), 0, "%s", ascent_errmsg());
	cr_assert_gt(n, 10);
	for (int i = 0; i < n; i++) {
		size_t l = strlen(files[i]);
		cr_assert(l < 4 || strcmp(files[i] + l - 4, ".dat"), "%s", files[i]);
		cr_assert(l < 3 || strcmp(files[i] + l - 3, ".u8"), "%s", files[i]);
		if (i)
			cr_assert_lt(strcmp(files[i - 1], files[i]), 0);
	}
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

Test(trainer, split_keeps_the_last_fraction_for_validation)
{
	char p[128];
	tpath(p, sizeof p, "d.txt");
	char text[10001];
	for (int i = 0; i < 10000; i++)
		text[i] = (char)('a' + i % 26);
	text[10000] = 0;
	put_file(p, text);
	struct trainer_config c;
	trainer_config_defaults(&c);
	snprintf(c.data, sizeof c.data, "%s", p);
	c.n_layer = 1;
	c.n_head = 1;
	c.n_embd = 8;
	c.max_seq = 16;
	c.seq = 16;
	c.batch = 4;
	cr_assert_eq(trainer_config_finish(&c), 0, "%s", ascent_errmsg());
	struct trainer_data d;
	cr_assert_eq(trainer_data_open(&d, &c), 0, "%s", ascent_errmsg());
	cr_assert_eq(d.nval, 500);
	cr_assert_eq(d.ntrain, 9500);
	cr_assert_eq(d.val, d.train + 9500);
	cr_assert_eq(d.val[0], 'a' + 9500 % 26);
	trainer_data_release(&d);
	/* too little validation data for one batch: a clear error */
	c.batch = 64;
	cr_assert_eq(trainer_data_open(&d, &c), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "validation"), "%s", ascent_errmsg());
}

/* ------------------------------------------------------------------------------------------ */
/* sampler */

Test(trainer, sampler_is_deterministic_and_in_range)
{
	struct trainer_sampler s = { .seed = 42, .ntokens = 1000, .batch = 8, .seq = 64 };
	size_t a[8], b[8], c[8];
	trainer_sampler_batch(&s, 5, 0, 0, 1, a);
	trainer_sampler_batch(&s, 5, 0, 0, 1, b);
	cr_assert_eq(memcmp(a, b, sizeof a), 0);
	trainer_sampler_batch(&s, 6, 0, 0, 1, c);
	cr_assert_neq(memcmp(a, c, sizeof a), 0, "another step draws other sequences");
	s.seed = 43;
	trainer_sampler_batch(&s, 5, 0, 0, 1, c);
	cr_assert_neq(memcmp(a, c, sizeof a), 0, "another seed draws other sequences");
	s.seed = 42;
	/* in range: inputs [o, o+T) and targets [o+1, o+T] inside the data; all offsets hit */
	static int hit[1000];
	for (int64_t st = 0; st < 2000; st++)
		for (int i = 0; i < 8; i++) {
			size_t o = trainer_sample_offset(&s, st, i);
			cr_assert_leq(o + (size_t)s.seq, s.ntokens - 1);
			hit[o] = 1;
		}
	int nh = 0;
	for (int i = 0; i < 1000; i++)
		nh += hit[i];
	cr_assert_eq(nh, 1000 - 64, "every valid offset is drawn: %d", nh);
}

Test(trainer, sampler_slices_one_global_batch)
{
	/* global batch of 8: world 1 x batch 8 == world 2 x batch 4 == accum 2 x batch 4 == world 2 x accum 2 x 2 */
	struct trainer_sampler s8 = { .seed = 9, .ntokens = 100000, .batch = 8, .seq = 32 };
	struct trainer_sampler s4 = s8, s2 = s8;
	s4.batch = 4;
	s2.batch = 2;
	size_t all[8], r0[4], r1[4], q[2];
	trainer_sampler_batch(&s8, 3, 0, 0, 1, all);
	trainer_sampler_batch(&s4, 3, 0, 0, 2, r0);
	trainer_sampler_batch(&s4, 3, 0, 1, 2, r1);
	cr_assert_eq(memcmp(all, r0, sizeof r0), 0);
	cr_assert_eq(memcmp(all + 4, r1, sizeof r1), 0);
	trainer_sampler_batch(&s4, 3, 1, 0, 1, r1);
	cr_assert_eq(memcmp(all + 4, r1, sizeof r1), 0, "micro-batch 1 of 2 is the second half");
	for (int k = 0; k < 2; k++)
		for (int r = 0; r < 2; r++) {
			trainer_sampler_batch(&s2, 3, k, r, 2, q);
			cr_assert_eq(memcmp(all + (k * 2 + r) * 2, q, sizeof q), 0, "micro %d rank %d", k, r);
		}
	/* the batch holds the right tokens */
	uint16_t tok[64];
	for (int i = 0; i < 64; i++)
		tok[i] = (uint16_t)i;
	size_t off[2] = { 3, 10 };
	int in[2 * 4], tg[2 * 4];
	trainer_fill_batch(tok, off, 2, 4, in, tg);
	int want_in[8] = { 3, 4, 5, 6, 10, 11, 12, 13 }, want_tg[8] = { 4, 5, 6, 7, 11, 12, 13, 14 };
	cr_assert_eq(memcmp(in, want_in, sizeof in), 0);
	cr_assert_eq(memcmp(tg, want_tg, sizeof tg), 0);
}

/* ------------------------------------------------------------------------------------------ */
/* learning-rate schedule */

Test(trainer, lr_warmup_then_cosine)
{
	struct trainer_config c;
	trainer_config_defaults(&c);
	c.lr = 1e-3;
	c.min_lr = 1e-4;
	c.warmup = 10;
	c.steps = 110;
	cr_assert_float_eq(trainer_lr(&c, 0), 1e-4, 1e-15);
	cr_assert_float_eq(trainer_lr(&c, 4), 5e-4, 1e-15);
	cr_assert_float_eq(trainer_lr(&c, 9), 1e-3, 1e-15);
	cr_assert_float_eq(trainer_lr(&c, 10), 1e-3, 1e-15);      /* cosine starts at the peak */
	/* 49 of 99 steps into the cosine */
	cr_assert_float_eq(trainer_lr(&c, 59), 1e-4 + 0.5 * (1 + cos(M_PI * 49.0 / 99.0)) * 9e-4,
			   1e-15);
	cr_assert_float_eq(trainer_lr(&c, 109), 1e-4, 1e-15);     /* the last step: min_lr */
	for (int s = 11; s < 110; s++)
		cr_assert_lt(trainer_lr(&c, s), trainer_lr(&c, s - 1) + 1e-18, "monotone after warm-up at %d", s);
	strcpy(c.lr_schedule, "constant");
	cr_assert_float_eq(trainer_lr(&c, 100), 1e-3, 1e-15);
	cr_assert_float_eq(trainer_lr(&c, 0), 1e-4, 1e-15);
	/* warmup 0: the peak from the first step */
	strcpy(c.lr_schedule, "cosine");
	c.warmup = 0;
	cr_assert_float_eq(trainer_lr(&c, 0), 1e-3, 1e-15);
}
