/* db/wal.c — what a rank file's write-ahead log holds that SQLite's recovery will not keep: the
 * frames after the last complete transaction (a run killed mid-write, a log cut short by a full disk
 * or a partial copy). Read before the file is opened, since closing it checkpoints and removes the
 * log. The format is SQLite's (https://www.sqlite.org/fileformat2.html, "WAL File Format").
 * And checkpoints taken off the committing thread (db_set_wal_notify, db_checkpoint). */
#include "db/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static uint32_t rd32be(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* SQLite's WAL checksum: the input as 32-bit words (big-endian when `be`), two running sums. */
static void wal_cksum(int be, const unsigned char *p, size_t n, uint32_t s[2])
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		uint32_t x0, x1;
		if (be) {
			x0 = rd32be(p + i);
			x1 = rd32be(p + i + 4);
		} else {
			x0 = (uint32_t)p[i + 3] << 24 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 1] << 8 | p[i];
			x1 = (uint32_t)p[i + 7] << 24 | (uint32_t)p[i + 6] << 16 | (uint32_t)p[i + 5] << 8 | p[i + 4];
		}
		s[0] += x0 + s[1];
		s[1] += x1 + s[0];
	}
}

int db_wal_check_buf(const unsigned char *w, size_t len, struct db_wal_loss *out)
{
	memset(out, 0, sizeof *out);
	if (len == 0)
		return 0;
	out->present = 1;
	uint32_t magic = len >= 32 ? rd32be(w) : 0;
	uint32_t ps = len >= 32 ? rd32be(w + 8) : 0;
	int be = magic == 0x377f0683;
	uint32_t s[2] = { 0, 0 };
	if (len >= 32)
		wal_cksum(be, w, 24, s);
	if ((magic & ~1u) != 0x377f0682 || ps < 512 || ps > 65536 || (ps & (ps - 1)) || s[0] != rd32be(w + 24) ||
	    s[1] != rd32be(w + 28)) {
		/* no valid header: SQLite ignores the whole log */
		out->bytes_lost = (int64_t)len;
		out->header_bad = 1;
		return 0;
	}
	uint32_t salt1 = rd32be(w + 16), salt2 = rd32be(w + 20);
	size_t fsz = 24 + (size_t)ps, off = 32, kept_end = 32;
	int64_t frames = 0, lost = 0;
	int stale = 0;
	while (off + fsz <= len) {
		const unsigned char *f = w + off;
		if (rd32be(f + 8) != salt1 || rd32be(f + 12) != salt2) {
			stale = 1;   /* left over from before the log was restarted: not part of this log */
			break;
		}
		uint32_t c[2] = { s[0], s[1] };
		wal_cksum(be, f, 8, c);
		wal_cksum(be, f + 24, ps, c);
		if (rd32be(f) == 0 || c[0] != rd32be(f + 16) || c[1] != rd32be(f + 20)) {
			lost++;      /* a damaged frame: it and all after it are dropped */
			off += fsz;
			break;
		}
		s[0] = c[0];
		s[1] = c[1];
		off += fsz;
		frames++;
		if (rd32be(f + 4)) {   /* a commit frame: everything so far is kept */
			out->frames_kept += frames;
			out->commits++;
			frames = 0;
			kept_end = off;
		}
	}
	if (!stale) {
		for (; off + fsz <= len; off += fsz)
			if (rd32be(w + off + 8) == salt1 && rd32be(w + off + 12) == salt2)
				lost++;
		out->frames_lost = frames + lost;
		out->partial_bytes = (int64_t)(len > off ? len - off : 0);
		out->bytes_lost = (int64_t)(off - kept_end) + out->partial_bytes;
	} else {
		out->frames_lost = frames;
		out->bytes_lost = (int64_t)(frames * (int64_t)fsz);
	}
	return 0;
}

int db_wal_check(const char *db_path, struct db_wal_loss *out)
{
	memset(out, 0, sizeof *out);
	char wal[4200];
	snprintf(wal, sizeof wal, "%s-wal", db_path);
	int fd = open(wal, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : ascent_error(ASCENT_EIO, "cannot read '%s': %s", wal, strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': not a regular file", wal);
	}
	if (st.st_size == 0) {
		close(fd);
		return 0;
	}
	void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	int err = m == MAP_FAILED ? errno : 0;
	close(fd);
	if (err)
		return ascent_error(ASCENT_EIO, "cannot read '%s': %s", wal, strerror(err));
	int rc = db_wal_check_buf(m, (size_t)st.st_size, out);
	munmap(m, (size_t)st.st_size);
	return rc;
}

/* ---- checkpoints off the committing thread ---- */

static int wal_notify_hook(void *arg, sqlite3 *h, const char *schema, int frames)
{
	(void)h;
	(void)schema;
	struct db *db = arg;
	db->wal_fn(db->wal_arg, frames);
	return SQLITE_OK;
}

int db_set_wal_notify(struct db *db, void (*fn)(void *arg, int frames), void *arg)
{
	db->wal_fn = fn;
	db->wal_arg = arg;
	if (fn) {
		sqlite3_wal_hook(db->h, wal_notify_hook, db);
		return 0;
	}
	int rc = sqlite3_wal_autocheckpoint(db->h, 1000);   /* SQLite's default */
	return rc == SQLITE_OK ? 0 : db_sql_err(db, rc, "cannot restore the automatic checkpoint of", NULL);
}

int db_checkpoint(struct db *db)
{
	int rc = sqlite3_wal_checkpoint_v2(db->h, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	if (rc == SQLITE_OK || rc == SQLITE_BUSY || rc == SQLITE_LOCKED)
		return 0;
	return db_sql_err(db, rc, "cannot checkpoint", NULL);
}
