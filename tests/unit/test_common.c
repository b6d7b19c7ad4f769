/* tests/unit/test_common.c — common/: options, half floats, atomic writes, safetensors. */
#include "common/common.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* argv-style arrays of literals below: -Wwrite-strings would make them const */
#pragma GCC diagnostic ignored "-Wdiscarded-qualifiers"

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(common, .init = mk_tmp, .fini = rm_tmp);

Test(common, opts_parse_and_errors)
{
	int steps = 10, flag = 0;
	double lr = 0.1;
	const char *sched = "1f1b";
	struct opt_spec specs[] = {
		{ .name = "steps", .type = OPT_INT, .dest = &steps, .min = 1, .max = 1000000 },
		{ .name = "lr", .type = OPT_FLOAT, .dest = &lr, .min = 0, .max = 10, .min_open = 1 },
		{ .name = "schedule", .type = OPT_STR, .dest = &sched, .choices = "gpipe|1f1b|interleaved" },
		{ .name = "recompute", .type = OPT_FLAG, .dest = &flag },
		{ 0 },
	};
	char *pos[2];
	int np;
	char *ok[] = { "--steps", "20", "--lr=0.5", "--schedule", "gpipe", "--recompute", "x" };
	cr_assert_eq(opt_parse("train", specs, 7, ok, pos, 2, &np), 0, "%s", ascent_errmsg());
	cr_assert_eq(steps, 20);
	cr_assert_float_eq(lr, 0.5, 1e-12);
	cr_assert_str_eq(sched, "gpipe");
	cr_assert_eq(flag, 1);
	cr_assert_eq(np, 1);

	char *bad1[] = { "--steps", "abc" };
	cr_assert_eq(opt_parse("train", specs, 2, bad1, pos, 2, &np), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "--steps"));
	cr_assert(strstr(ascent_errmsg(), "abc"));
	char *bad2[] = { "--steps", "0" };
	cr_assert_eq(opt_parse("train", specs, 2, bad2, pos, 2, &np), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "[1, 1000000]"));
	char *bad3[] = { "--lr", "-1" };
	cr_assert_eq(opt_parse("train", specs, 2, bad3, pos, 2, &np), ASCENT_EUSAGE);
	char *bad3b[] = { "--lr", "0" };
	cr_assert_eq(opt_parse("train", specs, 2, bad3b, pos, 2, &np), ASCENT_EUSAGE);
	char *bad4[] = { "--nope" };
	cr_assert_eq(opt_parse("train", specs, 1, bad4, pos, 2, &np), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "unknown option '--nope'"));
	char *bad5[] = { "--schedule", "zigzag" };
	cr_assert_eq(opt_parse("train", specs, 2, bad5, pos, 2, &np), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "gpipe|1f1b|interleaved"));
	char *bad6[] = { "--steps" };
	cr_assert_eq(opt_parse("train", specs, 1, bad6, pos, 2, &np), ASCENT_EUSAGE);
	char *bad7[] = { "a", "b", "c" };
	cr_assert_eq(opt_parse("train", specs, 3, bad7, pos, 2, &np), ASCENT_EUSAGE);
}

Test(common, half_round_trip)
{
	/* bf16: exact for values with 8 significant bits; round to nearest even */
	cr_assert_eq(f32_from_bf16(bf16_from_f32(1.0f)), 1.0f);
	cr_assert_eq(f32_from_bf16(bf16_from_f32(-3.5f)), -3.5f);
	cr_assert_eq(bf16_from_f32(1.0f + 1.0f / 256), 0x3f80);          /* tie → even (down) */
	cr_assert_eq(bf16_from_f32(1.0f + 3.0f / 256), 0x3f82);          /* tie → even (up) */
	cr_assert(isnan(f32_from_bf16(bf16_from_f32(NAN))));
	/* fp16 */
	float vals[] = { 0.0f, 1.0f, -2.0f, 0.5f, 65504.0f, 6.103515625e-05f, 5.960464477539063e-08f, 0.333251953125f };
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++)
		cr_assert_eq(f32_from_f16(f16_from_f32(vals[i])), vals[i], "value %g", vals[i]);
	cr_assert(isinf(f32_from_f16(f16_from_f32(70000.0f))));
	cr_assert_eq(f16_from_f32(1.0f + 1.0f / 2048), 0x3c00);           /* tie → even */
	for (int i = -2000; i < 2000; i++) {
		float x = (float)i * 0.01234f;
		float y = f32_from_f16(f16_from_f32(x));
		cr_assert(fabsf(x - y) <= fabsf(x) * (1.0f / 2048) + 3e-8f, "x=%g y=%g", x, y);
	}
}

Test(common, atomic_write_replaces_whole_file)
{
	char path[128];
	snprintf(path, sizeof path, "%s/a.txt", tmpdir);
	cr_assert_eq(atomic_write_file(path, "hello", 5), 0);
	cr_assert_eq(atomic_write_file(path, "bye", 3), 0);
	char *d;
	size_t n;
	cr_assert_eq(fs_read_all(path, &d, &n), 0);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(d, "bye");
	free(d);
	struct atomic_file af;
	cr_assert_eq(atomic_open(&af, path), 0);
	fputs("partial", af.f);
	atomic_abort(&af);
	cr_assert_eq(fs_read_all(path, &d, &n), 0);
	cr_assert_str_eq(d, "bye");
	free(d);
	char bad[160];
	snprintf(bad, sizeof bad, "%s/no/such/dir/x", tmpdir);
	cr_assert_eq(atomic_write_file(bad, "x", 1), ASCENT_EIO);
	cr_assert(strstr(ascent_errmsg(), "no/such/dir"));
}

/* The rename step every durable write shares: a file or a folder replaces its target; a missing
 * temporary or target folder is an error naming the paths, and the target is left as it was. */
Test(common, rename_durable_files_and_folders)
{
	char tmp[160], path[160], dtmp[160], dpath[160], inner[200];
	snprintf(tmp, sizeof tmp, "%s/r.tmp", tmpdir);
	snprintf(path, sizeof path, "%s/r.txt", tmpdir);
	cr_assert_eq(atomic_write_file(path, "old", 3), 0);
	cr_assert_eq(atomic_write_file(tmp, "new", 3), 0);
	cr_assert_eq(fs_rename_durable(tmp, path), 0, "%s", ascent_errmsg());
	char *d;
	size_t n;
	cr_assert_eq(fs_read_all(path, &d, &n), 0);
	cr_assert_str_eq(d, "new");
	free(d);
	cr_assert(!fs_exists(tmp));
	cr_assert_eq(fs_rename_durable(tmp, path), ASCENT_EIO);   /* the temporary is gone */
	cr_assert(strstr(ascent_errmsg(), "r.tmp"), "%s", ascent_errmsg());
	cr_assert_eq(fs_read_all(path, &d, &n), 0);
	cr_assert_str_eq(d, "new");
	free(d);
	snprintf(dtmp, sizeof dtmp, "%s/d.tmp", tmpdir);
	snprintf(dpath, sizeof dpath, "%s/d", tmpdir);
	snprintf(inner, sizeof inner, "%s/f", dtmp);
	cr_assert_eq(fs_mkdir_p(dtmp), 0);
	cr_assert_eq(atomic_write_file(inner, "x", 1), 0);
	cr_assert_eq(fs_rename_durable(dtmp, dpath), 0, "%s", ascent_errmsg());
	snprintf(inner, sizeof inner, "%s/f", dpath);
	cr_assert(fs_exists(inner));
	cr_assert_eq(atomic_write_file(tmp, "z", 1), 0);
	snprintf(path, sizeof path, "%s/no/such/dir/x", tmpdir);
	cr_assert_eq(fs_rename_durable(tmp, path), ASCENT_EIO);
	cr_assert(strstr(ascent_errmsg(), "no/such/dir"), "%s", ascent_errmsg());
	cr_assert(fs_exists(tmp));
}

/* ARRAY_GROW: room for element n, capacity doubling from `first`, new slots zeroed, the elements
 * kept; a capacity that cannot grow is an error naming what was being done, the array unchanged. */
Test(common, array_grow_doubles_zeroes_and_refuses_overflow)
{
	int64_t *v = NULL;
	int n = 0, cap = 0;
	for (int i = 0; i < 100; i++) {
		cr_assert_eq(ARRAY_GROW(v, n, cap, 4, "testing"), 0);
		cr_assert(cap > n && (cap == 4 || (cap & (cap - 1)) == 0), "cap %d at n %d", cap, n);
		cr_assert_eq(v[n], 0, "a new slot is zeroed");
		for (int k = n + 1; k < cap; k++)
			cr_assert_eq(v[k], 0);
		v[n++] = i * 7;
	}
	cr_assert_eq(cap, 128);
	for (int i = 0; i < 100; i++)
		cr_assert_eq(v[i], i * 7);
	int big = INT32_MAX / 2 + 1;   /* doubling would overflow int */
	int64_t *keep = v;
	cr_assert_eq(ARRAY_GROW(v, big, big, 4, "testing overflow"), ASCENT_ENOMEM);
	cr_assert(strstr(ascent_errmsg(), "out of memory testing overflow"), "%s", ascent_errmsg());
	cr_assert_eq(v, keep);
	free(v);
}

Test(common, safetensors_round_trip)
{
	char path[128];
	snprintf(path, sizeof path, "%s/m.safetensors", tmpdir);
	float a[6] = { 1, 2, 3, 4, 5, 6 };
	int8_t b[3] = { -127, 0, 127 };
	uint16_t c[2] = { 0x3f80, 0xbf80 };
	struct st_writer *w = st_writer_new();
	cr_assert_eq(st_writer_add(w, "a.weight", ST_F32, 2, (int64_t[]){ 2, 3 }, a), 0);
	cr_assert_eq(st_writer_add(w, "b", ST_I8, 1, (int64_t[]){ 3 }, b), 0);
	cr_assert_eq(st_writer_add(w, "c", ST_BF16, 1, (int64_t[]){ 2 }, c), 0);
	cr_assert_eq(st_writer_add(w, "scalar", ST_F32, 0, NULL, a), 0);
	cr_assert_eq(st_writer_add(w, "b", ST_I8, 1, (int64_t[]){ 3 }, b), ASCENT_EINTERNAL);
	cr_assert_eq(st_writer_meta(w, "format", "pt"), 0);
	cr_assert_eq(st_writer_write(w, path), 0, "%s", ascent_errmsg());
	st_writer_free(w);

	struct st_file f;
	cr_assert_eq(st_open(&f, path), 0, "%s", ascent_errmsg());
	cr_assert_eq(f.n, 4);
	const struct st_tensor *t = st_find(&f, "a.weight");
	cr_assert_not_null(t);
	cr_assert_eq(t->dtype, ST_F32);
	cr_assert_eq(t->ndim, 2);
	cr_assert_eq(t->shape[0], 2);
	cr_assert_eq(t->shape[1], 3);
	cr_assert_eq(memcmp(t->data, a, sizeof a), 0);
	t = st_find(&f, "b");
	cr_assert_eq(memcmp(t->data, b, 3), 0);
	t = st_find(&f, "scalar");
	cr_assert_eq(t->ndim, 0);
	cr_assert_eq(t->nbytes, 4);
	cr_assert_str_eq(st_meta(&f, "format"), "pt");
	cr_assert_null(st_find(&f, "nope"));
	/* the header is padded to a multiple of 8 */
	uint64_t hl;
	memcpy(&hl, f.map, 8);
	cr_assert_eq(hl % 8, 0);
	st_close(&f);
}

static int parse_str(const char *hdr, size_t datalen)
{
	size_t hl = strlen(hdr);
	size_t len = 8 + hl + datalen;
	unsigned char *buf = calloc(1, len + 1);
	uint64_t h = hl;
	memcpy(buf, &h, 8);
	memcpy(buf + 8, hdr, hl);
	struct st_file f;
	int rc = st_parse(&f, buf, len, "x.safetensors");
	if (rc == 0)
		st_close(&f);
	free(buf);
	return rc;
}

Test(common, safetensors_refuses_bad_files)
{
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), 0, "%s",
		     ascent_errmsg());
	/* shape × dtype != range */
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "'a'"));
	/* out of bounds */
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4), ASCENT_EINPUT);
	/* unknown dtype */
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"Q4\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "dtype"));
	/* overlap */
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
			       "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8),
		     ASCENT_EINPUT);
	/* hole and trailing bytes */
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8), ASCENT_EINPUT);
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 8), ASCENT_EINPUT);
	/* bad JSON, not an object, negative dims, metadata not strings, duplicate metadata */
	cr_assert_eq(parse_str("{\"a\":", 0), ASCENT_EINPUT);
	cr_assert_eq(parse_str("[1,2]", 0), ASCENT_EINPUT);
	cr_assert_eq(parse_str("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,0]}}", 0), ASCENT_EINPUT);
	cr_assert_eq(parse_str("{\"__metadata__\":{\"k\":1}}", 0), ASCENT_EINPUT);
	cr_assert_eq(parse_str("{\"__metadata__\":{\"k\":\"v\"},\"__metadata__\":{\"k\":\"v\",\"j\":\"w\"}}", 0),
		     ASCENT_EINPUT);
	/* header length larger than the file */
	unsigned char small[16] = { 0xff, 0xff, 0, 0, 0, 0, 0, 0, '{', '}' };
	struct st_file f;
	cr_assert_eq(st_parse(&f, small, sizeof small, "s"), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "header length"));
	cr_assert_eq(st_parse(&f, small, 4, "s"), ASCENT_EINPUT);
	cr_assert_eq(st_open(&f, "/nonexistent/file.safetensors"), ASCENT_EINPUT);
}

Test(common, safetensors_fuzz_random_corruption)
{
	/* flip random bytes of a valid file: the parser must refuse or accept, never crash */
	float a[16];
	for (int i = 0; i < 16; i++)
		a[i] = (float)i;
	char path[128];
	snprintf(path, sizeof path, "%s/f.safetensors", tmpdir);
	struct st_writer *w = st_writer_new();
	st_writer_add(w, "x", ST_F32, 2, (int64_t[]){ 4, 2 }, a);
	st_writer_add(w, "y", ST_F32, 1, (int64_t[]){ 8 }, a + 8);
	cr_assert_eq(st_writer_write(w, path), 0);
	st_writer_free(w);
	char *img;
	size_t n;
	cr_assert_eq(fs_read_all(path, &img, &n), 0);
	uint64_t s = rng_seed(7, 0);
	for (int it = 0; it < 3000; it++) {
		unsigned char *buf = malloc(n);
		memcpy(buf, img, n);
		int flips = 1 + (int)(rng_u32(&s) % 4);
		for (int k = 0; k < flips; k++)
			buf[rng_u32(&s) % n] = (unsigned char)rng_u32(&s);
		size_t len = n - (rng_u32(&s) % 3 == 0 ? rng_u32(&s) % n : 0);
		struct st_file f;
		if (st_parse(&f, buf, len, "fuzz") == 0) {
			for (int i = 0; i < f.n; i++) {
				const unsigned char *d = f.t[i].data;
				cr_assert(d >= buf && d + f.t[i].nbytes <= buf + len);
			}
			st_close(&f);
		}
		free(buf);
	}
	free(img);
}

Test(common, rng_is_deterministic)
{
	uint64_t a = rng_seed(42, 1), b = rng_seed(42, 1), c = rng_seed(42, 2);
	cr_assert_eq(a, b);
	cr_assert_neq(a, c);
	float x[1000];
	rng_normal(&a, x, 1000, 0, 1);
	double m = 0, v = 0;
	for (int i = 0; i < 1000; i++)
		m += x[i];
	m /= 1000;
	for (int i = 0; i < 1000; i++)
		v += (x[i] - m) * (x[i] - m);
	v /= 1000;
	cr_assert(fabs(m) < 0.1 && fabs(v - 1) < 0.15, "mean %g var %g", m, v);
}

/* Issue 14 findings 2-4: the one "never write over an input" check every writing command calls. */
static int own_if_marked(const char *path)
{
	char p[256];
	snprintf(p, sizeof p, "%s/mine", path);
	return fs_exists(p);
}

Test(common, output_check_refuses_inputs_and_foreign_data)
{
	char text[128], link[128], db[128], run[160], ck[192], st[224], fresh[128], mark[192];
	snprintf(text, sizeof text, "%s/a.txt", tmpdir);
	snprintf(link, sizeof link, "%s/link.txt", tmpdir);
	snprintf(db, sizeof db, "%s/trace.db", tmpdir);
	snprintf(run, sizeof run, "%s/run", tmpdir);
	snprintf(ck, sizeof ck, "%s/ckpt/step-000001", run);
	snprintf(st, sizeof st, "%s/model.safetensors", ck);
	snprintf(fresh, sizeof fresh, "%s/new.bin", tmpdir);
	cr_assert_eq(atomic_write_file(text, "hello", 5), 0);
	cr_assert_eq(symlink(text, link), 0);
	cr_assert_eq(atomic_write_file(db, "SQLite format 3\0rest of a page", 31), 0);
	cr_assert_eq(fs_mkdir_p(ck), 0);
	struct st_writer *w = st_writer_new();
	float x[2] = { 1, 2 };
	cr_assert_eq(st_writer_add(w, "x", ST_F32, 1, (int64_t[]){ 2 }, x), 0);
	cr_assert_eq(st_writer_write(w, st), 0, "%s", ascent_errmsg());
	st_writer_free(w);

	/* what a path holds, by content: the folder three levels above the checkpoint file holds it */
	char ex[256];
	cr_assert_eq(fs_holds(run, FS_HOLDS_ANY, ex, sizeof ex), FS_HOLDS_CHECKPOINT);
	cr_assert_str_eq(ex, st);
	cr_assert_eq(fs_holds(db, FS_HOLDS_ANY, NULL, 0), FS_HOLDS_PROFILE);
	cr_assert_eq(fs_holds(text, FS_HOLDS_ANY, NULL, 0), 0);
	cr_assert_eq(fs_holds(tmpdir, FS_HOLDS_PROFILE, NULL, 0), FS_HOLDS_PROFILE);

	/* rule 1: the output is an input, under any name; --force does not lift it */
	const char *ins[] = { NULL, text };
	struct fs_output o = { .cmd = "tokenize", .option = "-o", .path = link, .inputs = ins, .ninputs = 2, .force = 1 };
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "tokenize: -o '") && strstr(ascent_errmsg(), "is its input"), "%s", ascent_errmsg());
	const char *run_in[] = { run };
	o = (struct fs_output){ .cmd = "train", .option = "--out", .path = run, .inputs = run_in, .ninputs = 1, .force = 1,
				.folder = 1 };
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);

	/* rule 2: a profile or checkpoint it did not make, unless it makes that kind, owns it, or --force */
	o = (struct fs_output){ .cmd = "export", .option = "-o", .path = db, .inputs = ins, .ninputs = 2 };
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "is a profile") && strstr(ascent_errmsg(), "--force"), "%s", ascent_errmsg());
	o.makes = FS_HOLDS_PROFILE;
	cr_assert_eq(fs_output_check(&o), 0);
	o = (struct fs_output){ .cmd = "quant ptq", .option = "-o", .path = run, .is_own = own_if_marked, .folder = 1 };
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "holds a checkpoint") && strstr(ascent_errmsg(), st), "%s", ascent_errmsg());
	snprintf(mark, sizeof mark, "%s/mine", run);
	cr_assert_eq(atomic_write_file(mark, "", 0), 0);
	cr_assert_eq(fs_output_check(&o), 0);
	unlink(mark);
	o.force = 1;
	cr_assert_eq(fs_output_check(&o), 0);
	/* plain text and a path that does not exist yet replace nothing */
	o = (struct fs_output){ .cmd = "export", .option = "-o", .path = text };
	cr_assert_eq(fs_output_check(&o), 0);
	o.path = fresh;
	cr_assert_eq(fs_output_check(&o), 0);

	/* rule 3: a file output is a regular file (a link, a FIFO or a folder would be replaced or
	 * cannot be), a folder output is a folder */
	char fifo[128];
	snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	o = (struct fs_output){ .cmd = "export", .option = "-o", .path = fifo, .force = 1 };
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "is a FIFO (named pipe), not a regular file"), "%s", ascent_errmsg());
	o.path = link;
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "is a symbolic link (to '"), "%s", ascent_errmsg());
	o.path = run;
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "is a folder; give a file name"), "%s", ascent_errmsg());
	o = (struct fs_output){ .cmd = "train", .option = "--out", .path = text, .folder = 1 };
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "is a regular file, not a folder"), "%s", ascent_errmsg());
	o.path = fifo;
	cr_assert_eq(fs_output_check(&o), ASCENT_EUSAGE);
	unlink(fifo);
}

/* The entries of tmpdir/sub, sorted, space-separated. */
static void list_dir(const char *dir, char *out, size_t n)
{
	struct dirent **e;
	int k = scandir(dir, &e, NULL, alphasort);
	out[0] = 0;
	for (int i = 0; i < k; i++) {
		if (e[i]->d_name[0] != '.') {
			strncat(out, e[i]->d_name, n - strlen(out) - 2);
			strcat(out, " ");
		}
		free(e[i]);
	}
	free(k > 0 ? e : NULL);
}

Test(common, tmp_files_leave_nothing_but_the_output)
{
	char dir[128], out[192], names[1024], stale[256];
	snprintf(dir, sizeof dir, "%s/tmpfiles", tmpdir);
	cr_assert_eq(fs_mkdir_p(dir), 0);
	snprintf(out, sizeof out, "%s/out.bin", dir);
	/* while written, the file has no name in the folder; committed, it is the output */
	struct fs_tmp t;
	cr_assert_eq(fs_tmp_open(&t, out), 0, "%s", ascent_errmsg());
	cr_assert_eq(write(t.fd, "new", 3), 3);
	list_dir(dir, names, sizeof names);
	cr_assert_str_eq(names, t.named ? strrchr(t.name, '/') + 1 : "", "%s", names);
	cr_assert_eq(fs_tmp_commit(&t), 0, "%s", ascent_errmsg());
	list_dir(dir, names, sizeof names);
	cr_assert_str_eq(names, "out.bin ");
	char *data;
	size_t len;
	cr_assert_eq(fs_read_all(out, &data, &len), 0);
	cr_assert_str_eq(data, "new");
	free(data);
	/* abandoned: the output is what it was, nothing else is left */
	cr_assert_eq(fs_tmp_open(&t, out), 0);
	cr_assert_eq(write(t.fd, "other", 5), 5);
	fs_tmp_abort(&t);
	fs_tmp_abort(&t);   /* twice is harmless */
	list_dir(dir, names, sizeof names);
	cr_assert_str_eq(names, "out.bin ");
	/* what a process that ended left beside the output is removed by the next open */
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	snprintf(stale, sizeof stale, "%s.tmp-%ld-0", out, (long)pid);
	cr_assert_eq(atomic_write_file(stale, "x", 1), 0);
	cr_assert_eq(fs_tmp_open(&t, out), 0);
	fs_tmp_abort(&t);
	list_dir(dir, names, sizeof names);
	cr_assert_str_eq(names, "out.bin ");
}

Test(common, relative_path_between_folders)
{
	char a[128], b[128], c[128], out[256];
	snprintf(a, sizeof a, "%s/x/q", tmpdir);
	snprintf(b, sizeof b, "%s/run/ckpt/step-1", tmpdir);
	snprintf(c, sizeof c, "%s/xy", tmpdir);
	cr_assert_eq(fs_mkdir_p(a), 0);
	cr_assert_eq(fs_mkdir_p(b), 0);
	cr_assert_eq(fs_mkdir_p(c), 0);
	cr_assert_eq(fs_relative_path(a, b, out, sizeof out), 0, "%s", ascent_errmsg());
	cr_assert_str_eq(out, "../../run/ckpt/step-1");
	cr_assert_eq(fs_relative_path(b, a, out, sizeof out), 0);
	cr_assert_str_eq(out, "../../../x/q");
	cr_assert_eq(fs_relative_path(a, a, out, sizeof out), 0);
	cr_assert_str_eq(out, ".");
	cr_assert_eq(fs_relative_path(tmpdir, b, out, sizeof out), 0);
	cr_assert_str_eq(out, "run/ckpt/step-1");
	cr_assert_eq(fs_relative_path(c, a, out, sizeof out), 0);   /* "xy" is not below "x" */
	cr_assert_str_eq(out, "../x/q");
	cr_assert_eq(fs_relative_path(a, tmpdir, out, sizeof out), 0);
	cr_assert_str_eq(out, "../..");
	cr_assert_eq(fs_relative_path(a, "/nonexistent/path", out, sizeof out), ASCENT_EINPUT);
}

/* Names for table cells: whole when they fit; C++ template arguments and parameter lists elided
 * when they do not; then head~tail. */
Test(common, units_name)
{
	char b[512];
	cr_assert_str_eq(units_name(b, sizeof b, "saxpy", 20), "saxpy");
	cr_assert_str_eq(units_name(b, sizeof b, "f<int>(a, b)", 0), "f<int>(a, b)");   /* 0: any width */
	const char *k = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
			"at::detail::Array<char *, 3>>(int, T2, T3)";
	cr_assert_str_eq(units_name(b, sizeof b, k, 60), "void at::native::vectorized_elementwise_kernel<...>(...)");
	cr_assert_str_eq(units_name(b, sizeof b, k, (int)strlen(k)), k);
	/* "(anonymous namespace)", "operator<" and "()" are not elided */
	cr_assert_str_eq(units_name(b, sizeof b, "void a::(anonymous namespace)::k<float>(int, float *)", 50),
			 "void a::(anonymous namespace)::k<...>(...)");
	cr_assert_str_eq(units_name(b, sizeof b, "bool operator<(const A &, const B &)", 30), "bool operator<(...)");
	cr_assert_str_eq(units_name(b, sizeof b, "<unnamed>::nvfuser_pointwise_f0_c1_r0_g0(CudaCodeGenTensor<float, 2, 2>)", 50),
			 "<unnamed>::nvfuser_pointwise_f0_c1_r0_g0(...)");
	cr_assert_str_eq(units_name(b, sizeof b, "void run_kernel_with_a_long_name<float>()", 40), "void run_kernel_with_a_long_name<...>()");
	/* still too long: head and tail, so names that differ at the end stay apart */
	cr_assert_str_eq(units_name(b, sizeof b, "matmul_fcproj_bwd_and_more", 13), "matmul~d_more");
	cr_assert_eq(strlen(units_name(b, sizeof b, k, 30)), 30);
	/* a name much longer than the buffer: cut to the buffer, never past it */
	char big[3000];
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = 0;
	cr_assert_eq(strlen(units_name(b, sizeof b, big, 100)), 100);
	cr_assert_eq(strlen(units_name(b, 16, big, 0)), 15);
}

/* The medians of common/stats.c: the middle value, the mean of the middle two (stats_median), or
 * its floor for integers (stats_median_sorted_i64: for signed values and times saturated by a
 * damaged file too, without overflow). */
Test(common, medians)
{
	double d[] = { 5, 1, 3, 2 };
	cr_assert_eq(stats_median(d, 4), 2.5);
	cr_assert_eq(stats_median(d, 3), 2); /* sorted by the first call: 1 2 3 */
	cr_assert_eq(stats_median(d, 0), 0);
	const int64_t odd[] = { -7, 2, 9 }, even[] = { 1, 4, 6, 10 }, neg[] = { -4, -3 }, mixed[] = { -3, 4 },
		      big[] = { INT64_MAX - 1, INT64_MAX }, wide[] = { INT64_MIN, INT64_MAX };
	cr_assert_eq(stats_median_sorted_i64(odd, 3), 2);
	cr_assert_eq(stats_median_sorted_i64(odd, 1), -7);
	cr_assert_eq(stats_median_sorted_i64(even, 4), 5);
	cr_assert_eq(stats_median_sorted_i64(even + 1, 2), 5);
	cr_assert_eq(stats_median_sorted_i64(neg, 2), -4, "floor of -3.5");
	cr_assert_eq(stats_median_sorted_i64(mixed, 2), 0, "floor of 0.5");
	cr_assert_eq(stats_median_sorted_i64(big, 2), INT64_MAX - 1, "no overflow near INT64_MAX");
	cr_assert_eq(stats_median_sorted_i64(wide, 2), -1, "no overflow across the range: floor of -0.5");
}
