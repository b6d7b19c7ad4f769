/* import/run.c — `ascent import SRC... -o OUT.db`: expand folders, pick each input's reader, finish. */
#include "import/import.h"
#include "import/npu.h"
#include "import/part.h"

#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* One input, opened once: its format told from the stream the reader then keeps (a FIFO or a pipe
 * can be read only once; reading its first bytes, closing and opening it again would hang or lose
 * them), and read. SQLite files are read by name, so only regular files can be. */
static int read_input(struct imp *im, const struct imp_opts *o, const char *path)
{
	int fd;
	struct stat st;
	int rc = fs_open_read(path, &fd, &st);
	if (rc)
		return rc;
	if (S_ISDIR(st.st_mode)) {
		close(fd);
		return ascent_error(ASCENT_EINPUT, "'%s' is a folder named like a trace file, not a trace (give the "
				    "traces in it by name, or the folder on its own)", path);
	}
	if (!S_ISREG(st.st_mode))   /* a FIFO, a pipe, a terminal: JSON, read once as it comes */
		return imp_read_kineto_fd(im, path, fd, 0);
	static const char magic[16] = "SQLite format 3";
	unsigned char head[DB_HEADER_BYTES];
	ssize_t got = pread(fd, head, sizeof head, 0);
	if (got < 16 || memcmp(head, magic, sizeof magic)) {
		if (ends_with(path, ".db") || ends_with(path, ".sqlite")) {
			close(fd);
			return ascent_error(ASCENT_EINPUT, "'%s' is named like an SQLite database (an Nsight Systems export or "
					    "an Ascend profiler database) but %s: a truncated or damaged copy?", path,
					    st.st_size == 0 ? "is empty (0 bytes)" : "does not start with SQLite's header");
		}
		return imp_read_kineto_fd(im, path, fd, st.st_size);
	}
	close(fd);
	if (db_header_is_profile(head, (size_t)got))
		return ascent_error(ASCENT_EINPUT, "'%s' is an ascent profile already: report, view, advise, export and "
				    "diff read it as it is (ascent merge combines profiles)", path);
	return is_ascend_db(path) ? imp_read_ascend(im, path) : imp_read_nsys(im, path, o->step_range);
}

int imp_run_files(const struct imp_opts *o, const char *const *files, int n, int *failed_at)
{
	struct imp *im = NULL;
	*failed_at = 0;
	int rc = imp_open(o, files, n, &im);
	for (int i = 0; i < n && !rc; i++) {
		*failed_at = i;
		rc = read_input(im, o, files[i]);
	}
	if (rc) {
		imp_abort(im);
		return rc;
	}
	*failed_at = n;
	return imp_finish(im);
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
	if (!rc && ((o->jobs > 1 && n > 1) || (o->spread && o->spread->size > 1))) {
		rc = imp_run_parallel(o, (const char *const *)files, n, sk.n, sk.first);
		free(sk.first);
		for (int i = 0; i < n; i++)
			free(files[i]);
		free(files);
		return rc;
	}
	struct imp *im = NULL;
	if (!rc)
		rc = imp_open(o, (const char *const *)files, n, &im);
	for (int i = 0; i < sk.n && !rc; i++)
		imp_warn(im, IMP_W_SUMMARY_FILE, sk.first);
	free(sk.first);
	for (int i = 0; i < n && !rc; i++)
		rc = read_input(im, o, files[i]);
	if (!rc)
		rc = imp_finish(im);
	else
		imp_abort(im);
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return rc;
}
