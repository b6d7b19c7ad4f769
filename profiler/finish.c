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

void prof_clear_set_meta(void)
{
	pthread_mutex_lock(&meta_lock);
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
	if (!rc)
		rc = db_view_prepare(db, &built);
	db_close(db);
	return rc ? ascent_error_ctx(rc, "cannot build the viewer's tables in '%s'", path) : 0;
}
