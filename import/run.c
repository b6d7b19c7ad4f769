/* import/run.c — `ascent import SRC... -o OUT.db`: expand folders, pick each input's reader, finish. */
#include "import/import.h"
#include "import/npu.h"

#include "common/common.h"

#include <dirent.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

/* A file this importer reads: a Chrome-trace JSON, plain or gzip. */
static int is_trace_name(const char *name)
{
	return ends_with(name, ".json") || ends_with(name, ".json.gz") || ends_with(name, ".sqlite") ||
	       (!strncmp(name, "ascend_pytorch_profiler", 23) && ends_with(name, ".db"));
}

/* An SQLite database (its 16-byte header), whatever its name. */
static int is_sqlite_file(const char *path)
{
	static const char magic[16] = "SQLite format 3";
	char head[16];
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t got = fread(head, 1, sizeof head, f);
	fclose(f);
	return got == sizeof head && !memcmp(head, magic, sizeof magic);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* An Ascend profiler database: SQLite with a STRING_IDS table (Nsight's is StringIds). */
static int is_ascend_db(const char *path)
{
	sqlite3 *db = NULL;
	int yes = 0;
	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *st;
		if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE name = 'STRING_IDS'", -1, &st, NULL) == SQLITE_OK) {
			yes = sqlite3_step(st) == SQLITE_ROW;
			sqlite3_finalize(st);
		}
	}
	sqlite3_close(db);
	return yes;
}

/* Files of torch_npu's output folders that are not traces (its summaries), counted when the import
 * opens. */
struct skipped_files {
	int n;
	char *first;
};

/* Append path (or the traces in folder path, sorted; torch_npu's folders as npu_dir_inputs reads
 * them) to *list. */
static int expand(const char *path, char ***list, int *n, int *cap, struct skipped_files *sk)
{
	char **found = NULL, *first = NULL;
	int nf = 0, skipped = 0;
	int rc = npu_dir_inputs(path, &found, &nf, &skipped, &first);
	if (rc)
		return rc;
	sk->n += skipped;
	if (!sk->first)
		sk->first = first;
	else
		free(first);
	if (nf) {
		/* torch_npu's folders: the traces npu_dir_inputs chose */
	} else if (fs_is_dir(path)) {
		DIR *d = opendir(path);
		if (!d)
			return ascent_error(ASCENT_EINPUT, "cannot read the folder '%s'", path);
		struct dirent *de;
		while ((de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.' || !is_trace_name(de->d_name))
				continue;
			char **f2 = realloc(found, (size_t)(nf + 1) * sizeof *f2);
			size_t len = strlen(path) + strlen(de->d_name) + 2;
			char *p = malloc(len);
			if (!f2 || !p) {
				free(p);
				if (f2)
					found = f2;
				for (int i = 0; i < nf; i++)
					free(found[i]);
				free(found);
				closedir(d);
				return ascent_error(ASCENT_ENOMEM, "out of memory");
			}
			found = f2;
			snprintf(p, len, "%s/%s", path, de->d_name);
			found[nf++] = p;
		}
		closedir(d);
		if (!nf)
			return ascent_error(ASCENT_EINPUT, "the folder '%s' holds no trace (*.json, *.json.gz, *.sqlite or ascend_pytorch_profiler*.db)", path);
		qsort(found, (size_t)nf, sizeof *found, cmp_str);
	} else {
		found = malloc(sizeof *found);
		if (!found || !(found[0] = strdup(path))) {
			free(found);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		nf = 1;
	}
	for (int i = 0; i < nf; i++) {
		if (!rc && *n == *cap) {
			int nc = *cap ? *cap * 2 : 16;
			char **l2 = realloc(*list, (size_t)nc * sizeof *l2);
			if (!l2)
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			else {
				*list = l2;
				*cap = nc;
			}
		}
		if (rc)
			free(found[i]);
		else
			(*list)[(*n)++] = found[i];
	}
	free(found);
	return rc;
}

int imp_run(const struct imp_opts *o, const char *const *inputs, int ninputs)
{
	char **files = NULL;
	int n = 0, cap = 0, rc = 0;
	struct skipped_files sk = { 0 };
	for (int i = 0; i < ninputs && !rc; i++)
		rc = expand(inputs[i], &files, &n, &cap, &sk);
	if (!rc && o->rank >= 0 && n != 1)
		rc = ascent_error(ASCENT_EUSAGE, "--rank sets the rank of a single file, and %d were given", n);
	struct imp *im = NULL;
	if (!rc)
		rc = imp_open(o, (const char *const *)files, n, &im);
	for (int i = 0; i < sk.n && !rc; i++)
		imp_warn(im, IMP_W_SUMMARY_FILE, sk.first);
	free(sk.first);
	for (int i = 0; i < n && !rc; i++)
		rc = !is_sqlite_file(files[i]) ? imp_read_kineto(im, files[i])
		     : is_ascend_db(files[i]) ? imp_read_ascend(im, files[i])
					      : imp_read_nsys(im, files[i], o->step_range);
	if (!rc)
		rc = imp_finish(im);
	else
		imp_abort(im);
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return rc;
}
