/* import/links.c — link ends paired in memory within a window (import/links.h has the rules). */
#include "import/links.h"

#include "common/common.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELD_ENDS 2                  /* ends held per id while its start has not come */
#define BLOOM_BITS (1u << 26)        /* 8 MB: about 0.1 % false hits with a million evicted ids */
#define STAGED_BITS (1u << 23)       /* 1 MB: the ids with staged ends (few) */
#define SPILL_CHUNK 1024             /* evicted ends read back at a time */

struct held_end {
	int tid;
	int64_t ns, seq;
};

struct held {                        /* one id of the current file */
	int64_t id;
	int rank, kind, file;
	int has_start;
	int used;                        /* its start has made a link */
	int staged;                      /* more than HELD_ENDS ends before the start: the id went to staging */
	int nend;                        /* ends held (while !has_start) */
	struct held_end start, end[HELD_ENDS];
};

struct links {
	struct links_out o;
	char *spill_path;
	FILE *spill;                 /* the evicted ids' ends (struct db_flow_end), this file's */
	int64_t nspilled;
	struct held *ring;           /* window ids, oldest at head */
	int window, head, n;
	int *slot;                   /* nslot: an index into ring, −1 empty (linear probing) */
	size_t nslot;                /* a power of two ≥ 2 × window */
	uint64_t *bloom;             /* ids evicted in this file (made on the first eviction) */
	int evicted;                 /* some id of this file was evicted: the filter is in use */
	uint64_t *staged_ids;        /* a second filter: ids of this file with ends staged */
	int64_t staged;              /* ends of this file staged */
	int64_t tentative;           /* the evicted ids' unpaired ends, if nothing of this file is staged */
	int64_t seq, unpaired, made;
};

static uint64_t key_hash(int rank, int kind, int64_t id)
{
	uint64_t k = (uint64_t)id * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)(uint32_t)rank << 8 | (uint64_t)(kind & 0xff));
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdULL;
	k ^= k >> 33;
	k *= 0xc4ceb9fe1a85ec53ULL;
	k ^= k >> 33;
	return k;
}

static int same(const struct held *h, int rank, int kind, int64_t id)
{
	return h->id == id && h->rank == rank && h->kind == kind;
}

int links_new(const char *spill, int window, const struct links_out *o, struct links **out)
{
	*out = NULL;
	if (window <= 0 || window > LINKS_WINDOW)
		window = LINKS_WINDOW;
	size_t nslot = 4;
	while (nslot < 2 * (size_t)window)
		nslot *= 2;
	struct links *l = calloc(1, sizeof *l);
	if (!l || !(l->spill_path = strdup(spill)) || !(l->ring = malloc((size_t)window * sizeof *l->ring)) ||
	    !(l->slot = malloc(nslot * sizeof *l->slot))) {
		links_free(l);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	l->window = window;
	l->nslot = nslot;
	memset(l->slot, 0xff, nslot * sizeof *l->slot);
	l->o = *o;
	*out = l;
	return 0;
}

void links_free(struct links *l)
{
	if (!l)
		return;
	if (l->spill)
		fclose(l->spill);
	free(l->spill_path);
	free(l->ring);
	free(l->slot);
	free(l->bloom);
	free(l->staged_ids);
	free(l);
}

/* The slot of (rank, kind, id), or the empty slot where it would go. */
static size_t find(const struct links *l, int rank, int kind, int64_t id)
{
	size_t i = key_hash(rank, kind, id) & (l->nslot - 1);
	while (l->slot[i] >= 0 && !same(&l->ring[l->slot[i]], rank, kind, id))
		i = (i + 1) & (l->nslot - 1);
	return i;
}

/* Empty slot i, moving later entries of its probe run back (no tombstones). */
static void slot_remove(struct links *l, size_t i)
{
	for (size_t j = i;;) {
		j = (j + 1) & (l->nslot - 1);
		if (l->slot[j] < 0)
			break;
		const struct held *h = &l->ring[l->slot[j]];
		size_t home = key_hash(h->rank, h->kind, h->id) & (l->nslot - 1);
		/* the entry at j may move to i unless its home lies cyclically in (i, j] */
		int stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
		if (!stays) {
			l->slot[i] = l->slot[j];
			i = j;
		}
	}
	l->slot[i] = -1;
}

static void bloom_bits(int rank, int kind, int64_t id, uint32_t b[3])
{
	uint64_t h = key_hash(rank, kind, id ^ 0x5bd1e995), h2 = (h >> 32) | 1;
	for (int i = 0; i < 3; i++)
		b[i] = (uint32_t)((h + (uint64_t)i * h2) & (BLOOM_BITS - 1));
}

static int filter_has(const uint64_t *f, uint32_t bits, int rank, int kind, int64_t id)
{
	uint32_t b[3];
	bloom_bits(rank, kind, id, b);
	for (int i = 0; i < 3; i++) {
		uint32_t x = b[i] & (bits - 1);
		if (!(f[x >> 6] >> (x & 63) & 1))
			return 0;
	}
	return 1;
}

static void filter_add(uint64_t *f, uint32_t bits, int rank, int kind, int64_t id)
{
	uint32_t b[3];
	bloom_bits(rank, kind, id, b);
	for (int i = 0; i < 3; i++) {
		uint32_t x = b[i] & (bits - 1);
		f[x >> 6] |= 1ULL << (x & 63);
	}
}

static int bloom_has(const struct links *l, int rank, int kind, int64_t id)
{
	return l->evicted && filter_has(l->bloom, BLOOM_BITS, rank, kind, id);
}

static int bloom_add(struct links *l, int rank, int kind, int64_t id)
{
	if (!l->bloom && !(l->bloom = calloc(BLOOM_BITS / 64, sizeof *l->bloom)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	uint32_t b[3];
	bloom_bits(rank, kind, id, b);
	for (int i = 0; i < 3; i++)
		l->bloom[b[i] >> 6] |= 1ULL << (b[i] & 63);
	l->evicted = 1;
	return 0;
}

static struct db_flow_end end_of(const struct held *h, const struct held_end *x, int is_start)
{
	return (struct db_flow_end){ .rank = h->rank, .kind = h->kind, .is_start = is_start, .tid = x->tid, .file = h->file,
				     .used = is_start && h->used, .id = h->id, .ns = x->ns, .seq = x->seq };
}

static int spill_put(struct links *l, const struct db_flow_end *e)
{
	if (!l->spill) {
		int fd = open(l->spill_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		if (fd >= 0)
			unlink(l->spill_path);
		if (fd < 0 || !(l->spill = fdopen(fd, "w+b"))) {
			int err = errno;
			if (fd >= 0)
				close(fd);
			return ascent_error(ASCENT_EIO, "cannot create '%s' (links waiting for their partners): %s",
					    l->spill_path, strerror(err));
		}
	}
	if (fwrite(e, sizeof *e, 1, l->spill) != 1)
		return ascent_error(ASCENT_EIO, "cannot write '%s' (links waiting for their partners): %s", l->spill_path,
				    strerror(errno));
	l->nspilled++;
	return 0;
}

/* The oldest id leaves the window: its key into the filter, its ends into the spill file. */
static int evict(struct links *l)
{
	struct held *h = &l->ring[l->head];
	slot_remove(l, find(l, h->rank, h->kind, h->id));
	int rc = bloom_add(l, h->rank, h->kind, h->id);
	if (!rc && !h->staged) {
		if (h->has_start) {
			struct db_flow_end e = end_of(h, &h->start, 1);
			rc = spill_put(l, &e);
			l->tentative += !h->used;
		}
		for (int i = 0; i < h->nend && !rc; i++) {
			struct db_flow_end e = end_of(h, &h->end[i], 0);
			rc = spill_put(l, &e);
			l->tentative++;
		}
	}
	l->head = (l->head + 1) % l->window;
	l->n--;
	return rc;
}

static int link_out(struct links *l, const struct held *h, const struct held_end *dst)
{
	struct db_flow f = { .rank = h->rank, .kind = h->kind, .src_tid = h->start.tid, .dst_tid = dst->tid,
			     .flow_id = h->id, .src_ns = h->start.ns, .dst_ns = dst->ns };
	l->made++;
	return l->o.link(l->o.ud, &f);
}

static int stage(struct links *l, const struct db_flow_end *e)
{
	if (!l->staged_ids && !(l->staged_ids = calloc(STAGED_BITS / 64, sizeof *l->staged_ids)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	filter_add(l->staged_ids, STAGED_BITS, e->rank, e->kind, e->id);
	l->staged++;
	return l->o.stage(l->o.ud, e);
}

int links_end(struct links *l, const struct db_flow_end *e0)
{
	struct db_flow_end e = *e0;
	e.seq = l->seq++;
	e.used = 0;
	struct held_end x = { .tid = e.tid, .ns = e.ns, .seq = e.seq };
	size_t i = find(l, e.rank, e.kind, e.id);
	int rc = 0;
	if (l->slot[i] < 0) {   /* an id not held */
		if (bloom_has(l, e.rank, e.kind, e.id))   /* maybe evicted: db_flow_pair settles it */
			return stage(l, &e);
		if (l->n == l->window) {
			if ((rc = evict(l)) != 0)
				return rc;
			i = find(l, e.rank, e.kind, e.id);
		}
		int at = (l->head + l->n++) % l->window;
		l->ring[at] = (struct held){ .id = e.id, .rank = e.rank, .kind = e.kind, .file = e.file };
		l->slot[i] = at;
	}
	struct held *h = &l->ring[l->slot[i]];
	if (h->staged)
		return stage(l, &e);
	if (e.is_start) {
		if (h->has_start) {   /* a second start: the first is the link's */
			l->unpaired++;
			return 0;
		}
		h->has_start = 1;
		h->start = x;
		for (int k = 0; k < h->nend && !rc; k++)
			rc = link_out(l, h, &h->end[k]);
		h->used = h->nend > 0;
		h->nend = 0;
		return rc;
	}
	if (h->has_start) {
		h->used = 1;
		return link_out(l, h, &x);
	}
	if (h->nend < HELD_ENDS) {
		h->end[h->nend++] = x;
		return 0;
	}
	/* more ends before the start than are held: this id goes to staging, whole */
	h->staged = 1;
	for (int k = 0; k < h->nend && !rc; k++) {
		struct db_flow_end s = end_of(h, &h->end[k], 0);
		rc = stage(l, &s);
	}
	h->nend = 0;
	return rc ? rc : stage(l, &e);
}

/* What the spill file holds (this file's evicted ids): the ends of ids that have staged ends too
 * are staged (db_flow_pair sees those ids whole); the others were settled when they left. */
static int spill_replay(struct links *l)
{
	if (fflush(l->spill) != 0 || fseek(l->spill, 0, SEEK_SET) != 0)
		return ascent_error(ASCENT_EIO, "cannot read '%s' back: %s", l->spill_path, strerror(errno));
	struct db_flow_end buf[SPILL_CHUNK];
	int rc = 0;
	for (int64_t left = l->nspilled; left > 0 && !rc;) {
		size_t want = left < SPILL_CHUNK ? (size_t)left : SPILL_CHUNK;
		if (fread(buf, sizeof *buf, want, l->spill) != want)
			return ascent_error(ASCENT_EIO, "cannot read '%s' back: %s", l->spill_path,
					    ferror(l->spill) ? strerror(errno) : "it is shorter than written");
		for (size_t k = 0; k < want && !rc; k++) {
			const struct db_flow_end *e = &buf[k];
			if (filter_has(l->staged_ids, STAGED_BITS, e->rank, e->kind, e->id))
				rc = l->o.stage(l->o.ud, e);
			else
				l->unpaired += e->is_start ? !e->used : 1;
		}
		left -= (int64_t)want;
	}
	return rc;
}

int links_file_end(struct links *l)
{
	for (int k = 0; k < l->n; k++) {
		const struct held *h = &l->ring[(l->head + k) % l->window];
		if (!h->staged)
			l->unpaired += h->has_start ? !h->used : h->nend;
	}
	if (l->n)
		memset(l->slot, 0xff, l->nslot * sizeof *l->slot);
	l->n = l->head = 0;
	int rc = 0;
	if (l->staged && l->nspilled)   /* an evicted id may have later ends: db_flow_pair sees it whole */
		rc = spill_replay(l);
	else
		l->unpaired += l->tentative;
	if (l->spill && (fflush(l->spill) != 0 || fseek(l->spill, 0, SEEK_SET) != 0 || ftruncate(fileno(l->spill), 0) != 0))
		rc = rc ? rc : ascent_error(ASCENT_EIO, "cannot reuse '%s': %s", l->spill_path, strerror(errno));
	if (l->evicted)
		memset(l->bloom, 0, BLOOM_BITS / 8);
	if (l->staged && l->staged_ids)
		memset(l->staged_ids, 0, STAGED_BITS / 8);
	l->evicted = 0;
	l->staged = l->tentative = l->nspilled = 0;
	return rc;
}

int64_t links_unpaired(const struct links *l)
{
	return l->unpaired;
}

int64_t links_made(const struct links *l)
{
	return l->made;
}
