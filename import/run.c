/* import/run.c — `ascent import SRC... -o OUT.db`: expand folders, pick each input's reader, finish. */
#include "import/import.h"

#include "common/common.h"

#include <dirent.h>
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
	return ends_with(name, ".json") || ends_with(name, ".json.gz");
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append path (or the traces in folder path, sorted) to *list. */
static int expand(const char *path, char ***list, int *n, int *cap)
{
	char **found = NULL;
	int nf = 0;
	if (fs_is_dir(path)) {
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
				free(f2 ? f2 : found);
				closedir(d);
				return ascent_error(ASCENT_ENOMEM, "out of memory");
			}
			found = f2;
			snprintf(p, len, "%s/%s", path, de->d_name);
			found[nf++] = p;
		}
		closedir(d);
		if (!nf)
			return ascent_error(ASCENT_EINPUT, "the folder '%s' holds no trace (*.json or *.json.gz)", path);
		qsort(found, (size_t)nf, sizeof *found, cmp_str);
	} else {
		found = malloc(sizeof *found);
		if (!found || !(found[0] = strdup(path))) {
			free(found);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		nf = 1;
	}
	int rc = 0;
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
	for (int i = 0; i < ninputs && !rc; i++)
		rc = expand(inputs[i], &files, &n, &cap);
	if (!rc && o->rank >= 0 && n != 1)
		rc = ascent_error(ASCENT_EUSAGE, "--rank sets the rank of a single file, and %d were given", n);
	struct imp *im = NULL;
	if (!rc)
		rc = imp_open(o, (const char *const *)files, n, &im);
	for (int i = 0; i < n && !rc; i++)
		rc = imp_read_kineto(im, files[i]);
	if (!rc)
		rc = imp_finish(im);
	else
		imp_abort(im);
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	return rc;
}
