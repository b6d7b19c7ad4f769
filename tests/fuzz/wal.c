/* tests/fuzz/wal.c — a rank file's write-ahead log as `ascent merge` inspects it before recovery
 * (db_wal_check_buf: header, salts, checksums, commit frames, a partial frame at the end). The
 * counts it returns must add up. */
#include "fuzz.h"
#include "db/db.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	(void)fuzz_dir();
	struct db_wal_loss wl;
	if (db_wal_check_buf(data, len, &wl) != 0)
		abort();
	if (wl.frames_kept < 0 || wl.frames_lost < 0 || wl.partial_bytes < 0 || wl.bytes_lost < 0 ||
	    wl.bytes_lost > (int64_t)len || wl.partial_bytes > wl.bytes_lost || (len && !wl.present))
		abort();
	return 0;
}
