/* db/strmap.c — the string → id map the writer interns strings with (open addressing, FNV-1a). */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ULL;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ULL;
	return h;
}

int db_strmap_get(const struct db_strmap *m, const char *k, int64_t *id)
{
	if (!m->cap)
		return 0;
	for (size_t i = hash_str(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->key[i])
			return 0;
		if (!strcmp(m->key[i], k)) {
			*id = m->id[i];
			return 1;
		}
	}
}

int db_strmap_put(struct db_strmap *m, const char *k, int64_t id)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 256;
		char **nk = calloc(nc, sizeof *nk);
		int64_t *ni = calloc(nc, sizeof *ni);
		if (!nk || !ni) {
			free(nk);
			free(ni);
			return ascent_error(ASCENT_ENOMEM, "out of memory interning strings");
		}
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->key[i])
				continue;
			size_t j = hash_str(m->key[i]) & (nc - 1);
			while (nk[j])
				j = (j + 1) & (nc - 1);
			nk[j] = m->key[i];
			ni[j] = m->id[i];
		}
		free(m->key);
		free(m->id);
		m->key = nk;
		m->id = ni;
		m->cap = nc;
	}
	size_t i = hash_str(k) & (m->cap - 1);
	while (m->key[i]) {
		if (!strcmp(m->key[i], k)) {
			m->id[i] = id;
			return 0;
		}
		i = (i + 1) & (m->cap - 1);
	}
	m->key[i] = strdup(k);
	if (!m->key[i])
		return ascent_error(ASCENT_ENOMEM, "out of memory interning strings");
	m->id[i] = id;
	m->n++;
	return 0;
}

void db_strmap_free(struct db_strmap *m)
{
	for (size_t i = 0; i < m->cap; i++)
		free(m->key[i]);
	free(m->key);
	free(m->id);
	memset(m, 0, sizeof *m);
}
