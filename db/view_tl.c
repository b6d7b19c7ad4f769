/* db/view_tl.c — the packed bins of the viewer's timeline summary (view_tl, db/internal.h).
 *
 * A lane's bins are stored as one row per chunk of DB_TL_CHUNK consecutive bins, the chunk's
 * non-empty bins packed into a BLOB as records: the first bin's offset in the chunk and the run of
 * bins that hold the same values (one byte each; an event that covers many bins gives them equal
 * values), then the six values (compute, comm, data, other ns, events, top name) as zigzag LEB128
 * varints. One row per bin cost
 * the import one SQLite insert per bin touched (two per event on a small trace, 4.7 per event on a
 * 64-rank job: a quarter of its time); a chunk's row costs one. */
#include "db/internal.h"

static size_t put_varint(unsigned char *p, int64_t v)
{
	uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);   /* zigzag: small magnitudes, small codes */
	size_t n = 0;
	while (u >= 0x80) {
		p[n++] = (unsigned char)(u | 0x80);
		u >>= 7;
	}
	p[n++] = (unsigned char)u;
	return n;
}

/* One varint at p (at most len bytes): its byte count, 0 when cut short or longer than 10 bytes. */
static size_t get_varint(const unsigned char *p, size_t len, int64_t *v)
{
	uint64_t u = 0;
	for (size_t i = 0; i < len && i < 10; i++) {
		u |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (!(p[i] & 0x80)) {
			*v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
			return i + 1;
		}
	}
	return 0;
}

size_t db_tl_pack(unsigned char *buf, int off, int run, const struct db_tl_bin *b)
{
	size_t n = 0;
	buf[n++] = (unsigned char)off;
	buf[n++] = (unsigned char)run;
	for (int q = 0; q < 4; q++)
		n += put_varint(buf + n, b->c[q]);
	n += put_varint(buf + n, b->n);
	n += put_varint(buf + n, b->top);
	return n;
}

size_t db_tl_unpack(const unsigned char *p, size_t len, int *off, int *run, struct db_tl_bin *b)
{
	if (len < 2 || p[1] < 1 || p[0] + p[1] > DB_TL_CHUNK)
		return 0;
	size_t n = 2, k;
	int64_t *v[6] = { &b->c[0], &b->c[1], &b->c[2], &b->c[3], &b->n, &b->top };
	for (int i = 0; i < 6; i++) {
		if (!(k = get_varint(p + n, len - n, v[i])))
			return 0;
		n += k;
	}
	*off = p[0];
	*run = p[1];
	return n;
}
