/* import/npu_dir.c — torch_npu's output folders as users hold them: `NAME_ascend_pt/` per rank
 * (profiler_info_N.json, ASCEND_PROFILER_OUTPUT/ with the trace — ascend_pytorch_profiler_N.db for
 * the database export, trace_view.json for the text export — and the summaries torch_npu derives
 * from it: CSVs, communication*.json, analysis.db), and a folder holding one of those per rank. */
#include "import/npu.h"

#include "common/common.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#define OUTPUT_DIR "ASCEND_PROFILER_OUTPUT"

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);
	return n >= m && !strcmp(s + n - m, suffix);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *join(const char *dir, const char *name)
{
	size_t len = strlen(dir) + strlen(name) + 2;
	char *p = malloc(len);
	if (p)
		snprintf(p, len, "%s/%s", dir, name);
	return p;
}

/* The names in folder dir (no dot files), sorted; *n of them. */
static int list_names(const char *dir, char ***names, int *n)
{
	*names = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return ascent_error(ASCENT_EINPUT, "cannot read the folder '%s'", dir);
	int cap = 0, rc = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL && !rc) {
		if (de->d_name[0] == '.')
			continue;
		char *s = strdup(de->d_name);
		if (!s || ARRAY_GROW(*names, *n + 1, cap, 16, "folder names")) {
			free(s);
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		(*names)[(*n)++] = s;
	}
	closedir(d);
	if (!rc && *n > 1)
		qsort(*names, (size_t)*n, sizeof **names, cmp_str);
	return rc;
}

static void free_names(char **names, int n)
{
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
}

static int is_database_name(const char *name)
{
	return !strncmp(name, "ascend_pytorch_profiler", 23) && ends_with(name, ".db");
}

static int is_text_name(const char *name)
{
	return !strcmp(name, "trace_view.json") || !strcmp(name, "trace_view.json.gz");
}

/* SQLite's own files beside a database: part of it, not summaries. */
static int is_sqlite_side_file(const char *name)
{
	return ends_with(name, "-wal") || ends_with(name, "-shm") || ends_with(name, "-journal");
}

struct found {
	char **files;
	int n, cap;
	int skipped;
	char *first_skipped;
};

static int add(struct found *f, char *path)
{
	if (!path || ARRAY_GROW(f->files, f->n + 1, f->cap, 8, "inputs")) {
		free(path);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	f->files[f->n++] = path;
	return 0;
}

/* One rank's ASCEND_PROFILER_OUTPUT: its databases, else its trace_view.json; the rest counted. */
static int collect_output(const char *out, struct found *f)
{
	char **names;
	int n, rc = list_names(out, &names, &n), db = 0, text = 0, plain = 0;
	for (int i = 0; i < n && !rc; i++) {
		db += is_database_name(names[i]);
		text += is_text_name(names[i]);
		plain += !strcmp(names[i], "trace_view.json");
	}
	if (!rc && !db && !text)
		rc = ascent_error(ASCENT_EINPUT,
				  "'%s' holds neither ascend_pytorch_profiler_N.db nor trace_view.json: torch_npu has not "
				  "parsed this profile yet (run torch_npu.profiler.profiler.analyse on its folder), or it "
				  "is not a torch_npu output folder", out);
	for (int i = 0; i < n && !rc; i++) {
		char *path = join(out, names[i]);
		if (!path) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		/* both exports: the database (it holds more); both text files: the plain one */
		int take = db ? is_database_name(names[i])
			      : !strcmp(names[i], plain ? "trace_view.json" : "trace_view.json.gz");
		if (take) {
			rc = add(f, path);
			continue;
		}
		if (!is_sqlite_side_file(names[i]) && !fs_is_dir(path)) {
			f->skipped++;
			if (!f->first_skipped) {
				f->first_skipped = path;
				path = NULL;
			}
		}
		free(path);
	}
	free_names(names, n);
	return rc;
}

/* The ASCEND_PROFILER_OUTPUT of a rank folder (malloc'd), or NULL when dir is not one. */
static char *output_of(const char *dir)
{
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	if (!strcmp(base, OUTPUT_DIR))
		return strdup(dir);
	char *out = join(dir, OUTPUT_DIR);
	if (out && fs_is_dir(out))
		return out;
	free(out);
	return NULL;
}

int npu_dir_inputs(const char *path, char ***files, int *n, int *skipped, char **first_skipped)
{
	struct found f = { 0 };
	int rc = 0;
	*files = NULL;
	*n = *skipped = 0;
	*first_skipped = NULL;
	if (!fs_is_dir(path))
		return 0;
	char *out = output_of(path);
	if (out) {   /* one rank's folder */
		rc = collect_output(out, &f);
		free(out);
	} else {     /* a folder of rank folders */
		char **names;
		int nn;
		rc = list_names(path, &names, &nn);
		for (int i = 0; i < nn && !rc; i++) {
			char *sub = join(path, names[i]);
			char *o = sub && fs_is_dir(sub) ? output_of(sub) : NULL;
			if (!sub)
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			else if (o)
				rc = collect_output(o, &f);
			free(o);
			free(sub);
		}
		free_names(names, nn);
	}
	if (rc) {
		free_names(f.files, f.n);
		free(f.first_skipped);
		return rc;
	}
	*files = f.files;
	*n = f.n;
	*skipped = f.skipped;
	*first_skipped = f.first_skipped;
	return 0;
}

/* rank_id of a profiler_info file, else the N of its name profiler_info_N.json; −1 none. */
static int info_rank(const char *dir, const char *name)
{
	char *path = join(dir, name);
	cJSON *j = NULL;
	int rank = -1;
	if (path && json_read_file(path, &j) == 0) {
		cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "rank_id");
		if (cJSON_IsNumber(r) && r->valuedouble >= 0 && r->valuedouble < 1000000)
			rank = (int)r->valuedouble;
	}
	cJSON_Delete(j);
	free(path);
	const char *digits = name + strlen("profiler_info_");
	if (rank < 0 && digits[0] >= '0' && digits[0] <= '9') {
		char *end;
		long v = strtol(digits, &end, 10);
		if (!strcmp(end, ".json") && v < 1000000)
			rank = (int)v;
	}
	return rank;
}

int npu_dir_rank(const char *file_path)
{
	/* FILE is RANKDIR/ASCEND_PROFILER_OUTPUT/name */
	const char *slash = strrchr(file_path, '/');
	if (!slash)
		return -1;
	size_t dir_len = (size_t)(slash - file_path), out_len = strlen(OUTPUT_DIR);
	if (dir_len < out_len || strncmp(slash - out_len, OUTPUT_DIR, out_len) ||
	    (dir_len > out_len && slash[-(long)out_len - 1] != '/'))
		return -1;
	size_t rank_len = dir_len > out_len ? dir_len - out_len - 1 : 0;
	char *rank_dir = rank_len ? strndup(file_path, rank_len) : strdup(".");
	char **names = NULL;
	int n = 0, rank = -1;
	/* a folder that cannot be read leaves the rank to the other rules */
	if (rank_dir && list_names(rank_dir, &names, &n) == 0)
		for (int i = 0; i < n && rank < 0; i++)
			if (!strncmp(names[i], "profiler_info", 13) && ends_with(names[i], ".json"))
				rank = info_rank(rank_dir, names[i]);
	free_names(names, n);
	free(rank_dir);
	return rank;
}
