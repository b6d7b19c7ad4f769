/* profiler/finish.c — what makes a merged profile complete, the same whoever merged it (the
 * trainer at the end of a run or `ascent merge RUN` later): the facts each rank file carries — the
 * host's, recorded at prof_init, and the program's (layout, BLAS), given with prof_set_meta and
 * written at prof_shutdown — which merging copies from the first rank; and the viewer's tables,
 * built in the merged file by prof_merge. */
#include "profiler/internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t meta_lock = PTHREAD_MUTEX_INITIALIZER;
static struct meta_kv {
	char *key, *value;
} *meta_v;
static int meta_n;

int prof_set_meta(const char *key, const char *value)
{
	if (!key || !*key || !value)
		return ascent_error(ASCENT_EUSAGE, "prof_set_meta: a key and a value are needed");
	if (!prof_initialized())
		return 0;
	int rc = 0;
	pthread_mutex_lock(&meta_lock);
	int i = 0;
	while (i < meta_n && strcmp(meta_v[i].key, key))
		i++;
	char *v = strdup(value);
	if (!v) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	} else if (i < meta_n) {
		free(meta_v[i].value);
		meta_v[i].value = v;
	} else {
		struct meta_kv *nv = realloc(meta_v, (size_t)(meta_n + 1) * sizeof *nv);
		char *k = strdup(key);
		if (nv)
			meta_v = nv;
		if (!nv || !k) {
			free(k);
			free(v);
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		} else {
			meta_v[meta_n++] = (struct meta_kv){ k, v };
		}
	}
	pthread_mutex_unlock(&meta_lock);
	return rc;
}

int prof_write_set_meta(struct db *db)
{
	int rc = 0;
	pthread_mutex_lock(&meta_lock);
	for (int i = 0; i < meta_n && !rc; i++)
		rc = db_set_meta(db, meta_v[i].key, meta_v[i].value);
	pthread_mutex_unlock(&meta_lock);
	return rc;
}

/* Notes given with prof_add_note, written at prof_shutdown (meta_lock). */
static struct pending_note {
	char *level, *text;
	int64_t ts_ns;
} *notes_v;
static int notes_n;

int prof_add_note(const char *level, const char *text)
{
	if (!level || !text)
		return ascent_error(ASCENT_EUSAGE, "prof_add_note: a level and a text are needed");
	if (!prof_initialized())
		return 0;
	int rc = 0;
	pthread_mutex_lock(&meta_lock);
	struct pending_note *nv = realloc(notes_v, (size_t)(notes_n + 1) * sizeof *nv);
	char *l = strdup(level), *t = strdup(text);
	if (nv)
		notes_v = nv;
	if (!nv || !l || !t) {
		free(l);
		free(t);
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	} else {
		notes_v[notes_n++] = (struct pending_note){ l, t, clock_ns() - prof_ctx.t0_ns };
	}
	pthread_mutex_unlock(&meta_lock);
	return rc;
}

int prof_write_notes(struct db *db)
{
	int rc = 0;
	pthread_mutex_lock(&meta_lock);
	for (int i = 0; i < notes_n && !rc; i++)
		rc = db_put_note(db, prof_ctx.opt.rank, notes_v[i].ts_ns, notes_v[i].level, notes_v[i].text);
	pthread_mutex_unlock(&meta_lock);
	return rc;
}

void prof_clear_set_meta(void)
{
	pthread_mutex_lock(&meta_lock);
	for (int i = 0; i < notes_n; i++) {
		free(notes_v[i].level);
		free(notes_v[i].text);
	}
	free(notes_v);
	notes_v = NULL;
	notes_n = 0;
	for (int i = 0; i < meta_n; i++) {
		free(meta_v[i].key);
		free(meta_v[i].value);
	}
	free(meta_v);
	meta_v = NULL;
	meta_n = 0;
	pthread_mutex_unlock(&meta_lock);
}

int prof_write_host_facts(struct db *db)
{
	struct cpu_info ci;
	cpu_detect(&ci);
	char buf[256];
	/* the host's cores, not this rank's affinity mask (mpirun binds each rank to a core) */
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(buf, sizeof buf, "%ld", ncpu > 0 ? ncpu : (long)ci.online_cpus);
	int rc = db_set_meta(db, "host_cores", buf);
	snprintf(buf, sizeof buf, "%s%s%s%s%s%s", ci.avx2 ? "avx2 " : "", ci.fma ? "fma " : "", ci.avx512f ? "avx512f " : "",
		 ci.avx512vnni ? "avx512vnni " : "", ci.avx512bf16 ? "avx512bf16 " : "", ci.avx512fp16 ? "avx512fp16" : "");
	if (!rc)
		rc = db_set_meta(db, "cpu_isa", buf);
	if (!rc)
		rc = db_set_meta(db, "cpu_brand", ci.brand);
	long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
	if (!rc && pages > 0 && psz > 0) {
		snprintf(buf, sizeof buf, "%lld", (long long)pages * psz);
		rc = db_set_meta(db, "host_mem_bytes", buf);
	}
	char *lim = NULL;
	size_t len;
	if (!rc && !fs_read_all("/sys/fs/cgroup/memory.max", &lim, &len) && lim && lim[0] >= '0' && lim[0] <= '9') {
		snprintf(buf, sizeof buf, "%lld", strtoll(lim, NULL, 10));
		rc = db_set_meta(db, "mem_limit_bytes", buf);
	}
	free(lim);
	return rc;
}

int prof_finish_merged(const char *path)
{
	struct db *db;
	int rc = db_open(path, DB_UPDATE, &db);
	int built = 0;
	int64_t events = 0;
	if (!rc)
		rc = db_count(db, "event", &events);
	if (!rc && events)   /* none (a run with samples alone, or nothing): no tables to build, view says why */
		rc = db_view_prepare(db, &built);
	db_close(db);
	return rc ? ascent_error_ctx(rc, "cannot build the viewer's tables in '%s'", path) : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* How a rank's program ended, told by its `ascent profile` (a program killed by SIGSEGV cannot say
 * so itself): DIR/rank-NNNNN.end, one line "LEVEL TEXT", which prof_merge turns into a note. */

/* "DIR/rank-NNNNN.end" for the part "DIR/rank-NNNNN.db"; 0 when it does not fit. */
static int end_path_of(const char *part, char *buf, size_t n)
{
	size_t l = strlen(part);
	return l >= 3 && (size_t)snprintf(buf, n, "%.*s.end", (int)(l - 3), part) < n;
}

int prof_record_end(const char *run_dir, int rank, int status)
{
	char text[300];
	const char *level;
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		const char *abbrev = sigabbrev_np(sig);
		level = "error";
		snprintf(text, sizeof text, "rank %d's program ended by signal %d (SIG%s: %s)%s", rank, sig,
			 abbrev ? abbrev : "?", strsignal(sig), WCOREDUMP(status) ? ", core dumped" : "");
	} else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
		level = "warn";
		snprintf(text, sizeof text, "rank %d's program exited with status %d", rank, WEXITSTATUS(status));
	} else {
		return 0;
	}
	char part[4200], path[4200], line[320];
	prof_rank_db_path(run_dir, rank, part, sizeof part);
	if (!end_path_of(part, path, sizeof path))
		return ascent_error(ASCENT_EUSAGE, "run folder path too long: '%s'", run_dir);
	int n = snprintf(line, sizeof line, "%s %s\n", level, text);
	return atomic_write_file(path, line, (size_t)n);
}

int prof_merge_ends(const char *out_path, char *const *parts, int n, int remove)
{
	struct db *db = NULL;
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		char path[4200], *data = NULL;
		size_t len = 0;
		if (!end_path_of(parts[i], path, sizeof path) || !fs_exists(path))
			continue;
		if (!db && (rc = db_open(out_path, DB_UPDATE, &db)) != 0)
			break;
		if ((rc = fs_read_all(path, &data, &len)) != 0)
			break;
		while (len && (data[len - 1] == '\n' || data[len - 1] == '\r'))
			data[--len] = 0;
		const char *base = strrchr(parts[i], '/');
		int rank = -1;
		if (sscanf(base ? base + 1 : parts[i], "rank-%d.db", &rank) != 1)
			rank = -1;
		char *sp = strchr(data, ' ');
		if (sp) {
			*sp = 0;
			rc = db_put_note(db, rank, 0, data, sp + 1);
		}
		free(data);
		if (!rc && remove)
			unlink(path);
	}
	db_close(db);
	return rc ? ascent_error_ctx(rc, "cannot record how the ranks' programs ended in '%s'", out_path) : 0;
}
