/* trainer/data.c — training data: text files (byte tokens), llm.c shards, directories of both,
 * the default corpus (the Debian fortunes text), and the train/validation split. */
#include "trainer/trainer.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct pathlist {
	char **p;
	int n, cap;
};

static int pl_add(struct pathlist *l, const char *s)
{
	if (ARRAY_GROW(l->p, l->n, l->cap, 64, "listing files"))
		return ASCENT_ENOMEM;
	if (!(l->p[l->n] = strdup(s)))
		return ascent_error(ASCENT_ENOMEM, "out of memory listing files");
	l->n++;
	return 0;
}

static void pl_free(struct pathlist *l)
{
	for (int i = 0; i < l->n; i++)
		free(l->p[i]);
	free(l->p);
	memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int ends_with(const char *s, const char *suf)
{
	size_t n = strlen(s), k = strlen(suf);
	return n >= k && !strcmp(s + n - k, suf);
}

/* Every regular non-hidden file under `dir`, recursively; symbolic links are skipped, and so is
 * the file `skip` (when not NULL: a command's own output found among its inputs). */
static int walk(const char *dir, struct pathlist *l, int depth, const struct stat *skip)
{
	if (depth > 32)
		return ascent_error(ASCENT_EINPUT, "'%s': directories nested too deeply", dir);
	DIR *d = opendir(dir);
	if (!d)
		return ascent_error(ASCENT_EINPUT, "cannot open directory '%s': %s", dir, strerror(errno));
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char path[TRAINER_PATH_MAX * 2];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		struct stat st;
		if (lstat(path, &st))
			continue;
		if (S_ISDIR(st.st_mode))
			rc = walk(path, l, depth + 1, skip);
		else if (S_ISREG(st.st_mode) && skip && st.st_dev == skip->st_dev && st.st_ino == skip->st_ino)
			log_info("skipping '%s': it is the output being written", path);
		else if (S_ISREG(st.st_mode))
			rc = pl_add(l, path);
	}
	closedir(d);
	return rc;
}

int trainer_default_corpus_files(char ***files, int *n)
{
	*files = NULL;
	*n = 0;
	DIR *d = opendir(TRAINER_DEFAULT_CORPUS);
	if (!d)
		return ascent_error(ASCENT_EINPUT,
				    "the default corpus '%s' is missing: %s (install the 'fortunes' package with "
				    "'make deps', or pass --data PATH)",
				    TRAINER_DEFAULT_CORPUS, strerror(errno));
	struct pathlist l = { 0 };
	struct dirent *e;
	int rc = 0;
	while (!rc && (e = readdir(d))) {
		if (e->d_name[0] == '.' || ends_with(e->d_name, ".dat") || ends_with(e->d_name, ".u8"))
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", TRAINER_DEFAULT_CORPUS, e->d_name);
		struct stat st;
		if (lstat(path, &st) || !S_ISREG(st.st_mode))
			continue;
		rc = pl_add(&l, path);
	}
	closedir(d);
	if (!rc && l.n == 0)
		rc = ascent_error(ASCENT_EINPUT, "the default corpus '%s' has no text files (reinstall 'fortunes', or pass --data PATH)",
				  TRAINER_DEFAULT_CORPUS);
	if (rc) {
		pl_free(&l);
		return rc;
	}
	qsort(l.p, (size_t)l.n, sizeof *l.p, cmp_str);
	*files = l.p;
	*n = l.n;
	return 0;
}

/* Append the tokens of one file (shard or text) to *acc. */
static int load_file(const char *path, int vocab_size, struct trainer_tokens *acc, size_t *cap)
{
	struct trainer_tokens t = { 0 };
	int rc;
	if (ends_with(path, ".bin") || trainer_is_shard(path)) {
		rc = trainer_shard_read(path, vocab_size, &t);
		if (rc)
			return rc;
	} else {
		char *buf;
		size_t len;
		rc = fs_read_all(path, &buf, &len);
		if (rc)
			return rc;
		t.tok = malloc((len ? len : 1) * sizeof *t.tok);
		if (!t.tok) {
			free(buf);
			return ascent_error(ASCENT_ENOMEM, "out of memory reading '%s'", path);
		}
		for (size_t i = 0; i < len; i++) {
			t.tok[i] = (unsigned char)buf[i];
			if (t.tok[i] >= vocab_size) {
				rc = ascent_error(ASCENT_EINPUT,
						  "'%s': byte %u at offset %zu is out of the vocabulary (vocab_size %d); "
						  "byte-level text needs vocab_size >= 256",
						  path, t.tok[i], i, vocab_size);
				free(buf);
				trainer_tokens_release(&t);
				return rc;
			}
		}
		t.n = len;
		free(buf);
	}
	if (acc->n + t.n > *cap) {
		size_t nc = *cap ? *cap : 1 << 20;
		while (nc < acc->n + t.n)
			nc *= 2;
		uint16_t *np = realloc(acc->tok, nc * sizeof *np);
		if (!np) {
			trainer_tokens_release(&t);
			return ascent_error(ASCENT_ENOMEM, "out of memory loading '%s'", path);
		}
		acc->tok = np;
		*cap = nc;
	}
	if (t.n)
		memcpy(acc->tok + acc->n, t.tok, t.n * sizeof *t.tok);
	acc->n += t.n;
	trainer_tokens_release(&t);
	return 0;
}

int trainer_tokens_load(const char *path, int vocab_size, struct trainer_tokens *out)
{
	return trainer_tokens_load_skip(path, vocab_size, NULL, out);
}

int trainer_tokens_load_skip(const char *path, int vocab_size, const char *skip, struct trainer_tokens *out)
{
	out->tok = NULL;
	out->n = 0;
	struct pathlist l = { 0 };
	int rc = 0;
	const char *what = path && *path ? path : TRAINER_DEFAULT_CORPUS;
	struct stat st, sk;
	const struct stat *skp = skip && stat(skip, &sk) == 0 ? &sk : NULL;
	if (!path || !*path) {
		rc = trainer_default_corpus_files(&l.p, &l.n);
		l.cap = l.n;
	} else if (stat(path, &st)) {
		rc = ascent_error(ASCENT_EINPUT, "data '%s' does not exist (pass a text file, an llm.c shard or a directory)",
				  path);
	} else if (S_ISDIR(st.st_mode)) {
		rc = walk(path, &l, 0, skp);
		if (!rc && l.n == 0)
			rc = ascent_error(ASCENT_EINPUT, "directory '%s' holds no data files", path);
		if (!rc)
			qsort(l.p, (size_t)l.n, sizeof *l.p, cmp_str);
	} else if (!S_ISREG(st.st_mode)) {
		/* a device reads forever (/dev/zero), a FIFO blocks until a writer comes */
		rc = ascent_error(ASCENT_EINPUT, "data '%s' is not a regular file but a %s: pass a text file, an llm.c "
						 "shard or a directory", path, S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "device"
						 : S_ISFIFO(st.st_mode) ? "FIFO" : S_ISSOCK(st.st_mode) ? "socket" : "special file");
	} else {
		rc = pl_add(&l, path);
	}
	size_t cap = 0;
	for (int i = 0; !rc && i < l.n; i++)
		rc = load_file(l.p[i], vocab_size, out, &cap);
	pl_free(&l);
	if (!rc && out->n == 0)
		rc = ascent_error(ASCENT_EINPUT, "data '%s' holds no tokens", what);
	if (rc)
		trainer_tokens_release(out);
	return rc;
}

static uint64_t fnv_tokens(const uint16_t *t, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	for (size_t i = 0; i < n; i++) {
		h ^= t[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

int trainer_data_open(struct trainer_data *d, const struct trainer_config *cfg)
{
	memset(d, 0, sizeof *d);
	const char *name = cfg->data[0] ? cfg->data : TRAINER_DEFAULT_CORPUS;
	int rc = trainer_tokens_load(cfg->data, cfg->vocab_size, &d->all);
	if (rc)
		return rc;
	if (cfg->val_data[0]) {
		rc = trainer_tokens_load(cfg->val_data, cfg->vocab_size, &d->val_own);
		if (rc) {
			trainer_data_release(d);
			return rc;
		}
		d->train = d->all.tok;
		d->ntrain = d->all.n;
		d->val = d->val_own.tok;
		d->nval = d->val_own.n;
	} else {
		size_t nval = (size_t)((double)d->all.n * cfg->val_fraction);
		d->ntrain = d->all.n - nval;
		d->train = d->all.tok;
		d->val = d->all.tok + d->ntrain;
		d->nval = nval;
	}
	size_t need_train = (size_t)cfg->seq + 1, need_val = (size_t)cfg->batch * (size_t)cfg->seq + 1;
	if (d->ntrain < need_train)
		rc = ascent_error(ASCENT_EINPUT, "'%s' has %zu training tokens, fewer than seq+1 = %zu (use more data or a smaller --seq)",
				  name, d->ntrain, need_train);
	else if (d->nval < need_val)
		rc = ascent_error(ASCENT_EINPUT,
				  "the validation split of '%s' has %zu tokens, fewer than batch x seq + 1 = %zu needed for one "
				  "evaluation batch (use more data, --val-fraction, --val-data, or a smaller --batch/--seq)",
				  cfg->val_data[0] ? cfg->val_data : name, d->nval, need_val);
	if (rc) {
		trainer_data_release(d);
		return rc;
	}
	d->fingerprint = fnv_tokens(d->train, d->ntrain);
	return 0;
}

void trainer_data_release(struct trainer_data *d)
{
	if (!d)
		return;
	trainer_tokens_release(&d->all);
	trainer_tokens_release(&d->val_own);
	memset(d, 0, sizeof *d);
}
