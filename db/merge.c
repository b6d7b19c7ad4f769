/* db/merge.c — merging ranks' databases into one (ascent merge, end of a run): strings are
 * re-interned, stack and frame ids shifted, everything else copied; then indexes and step_stat.
 * Runs inside SQLite (ATTACH + INSERT ... SELECT), so it is as fast as the disk. */
#include "db/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int db_merge_append(struct db *out, const char *in)
{
	/* validate the input through the normal open (refuses foreign/newer/corrupt, recovers WAL) */
	struct db *src;
	int rc = db_open(in, DB_READ, &src);
	if (rc)
		return rc;
	int64_t overlap = 0;
	struct db_rank_info *r = NULL;
	int nr = 0;
	rc = db_ranks(src, &r, &nr);
	db_close(src);
	if (rc)
		return rc;
	sqlite3_stmt *q = NULL;
	for (int i = 0; i < nr && !rc; i++) {
		if (!q && sqlite3_prepare_v2(out->h, "SELECT count(*) FROM rank WHERE rank = ?1", -1, &q, NULL) != SQLITE_OK)
			rc = db_sql_err(out, sqlite3_errcode(out->h), "cannot query", NULL);
		if (rc)
			break;
		sqlite3_reset(q);
		db_bind_int(out, q, 1, r[i].rank);
		if (db_step(out, q) == SQLITE_ROW)
			overlap += sqlite3_column_int64(q, 0);
	}
	sqlite3_finalize(q);
	db_ranks_free(r, nr);
	if (rc)
		return rc;
	if (overlap)
		return ascent_error(ASCENT_EINPUT, "cannot merge '%s': its ranks are already in the output (two files "
				    "of the same rank?)", in);
	char *esc = sqlite3_mprintf("ATTACH DATABASE %Q AS src", in);
	if (!esc)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	rc = db_exec(out, esc);
	sqlite3_free(esc);
	if (rc)
		return ascent_error_ctx(rc, "cannot merge '%s'", in);
	static const char *const STEPS[] = {
		"BEGIN",
		"INSERT OR IGNORE INTO main.string(value) SELECT value FROM src.string",
		"DROP TABLE IF EXISTS temp.smap",
		"CREATE TEMP TABLE smap(old INTEGER PRIMARY KEY, new INTEGER)",
		"INSERT INTO temp.smap SELECT s.id, m.id FROM src.string s JOIN main.string m ON m.value = s.value",
		"DROP TABLE IF EXISTS temp.off",
		"CREATE TEMP TABLE off AS SELECT (SELECT coalesce(max(stack_id), 0) FROM main.stack) AS st,"
		" (SELECT coalesce(max(frame_id), 0) FROM main.frame) AS fr",
		"INSERT INTO main.event(rank, start_ns, tid, kind, name_id, dur_ns, step, mb, layer, bytes, flops, peer,"
		" comm_id, seq, stack_id, site_id, ord) SELECT e.rank, e.start_ns, e.tid, e.kind, m.new, e.dur_ns, e.step, e.mb,"
		" e.layer, e.bytes, e.flops, e.peer, e.comm_id, e.seq, e.stack_id + (SELECT st FROM temp.off),"
		" (SELECT new FROM temp.smap WHERE old = e.site_id), e.ord FROM src.event e JOIN temp.smap m ON m.old = e.name_id",
		"INSERT OR REPLACE INTO main.counter SELECT c.rank, m.new, c.ts_ns, c.value FROM src.counter c"
		" JOIN temp.smap m ON m.old = c.name_id",
		"INSERT INTO main.mem_event(rank, ts_ns, bytes, category, in_use, stack_id, device) SELECT rank, ts_ns, bytes,"
		" category, in_use, stack_id + (SELECT st FROM temp.off), device FROM src.mem_event ORDER BY rowid",
		"INSERT OR IGNORE INTO main.stack SELECT stack_id + (SELECT st FROM temp.off), depth,"
		" frame_id + (SELECT fr FROM temp.off) FROM src.stack",
		"INSERT OR REPLACE INTO main.frame SELECT frame_id + (SELECT fr FROM temp.off), ip, symbol, module, offset"
		" FROM src.frame",
		"INSERT INTO main.sample SELECT rank, tid, ts_ns, stack_id + (SELECT st FROM temp.off), period_ns FROM src.sample",
		"INSERT INTO main.overhead SELECT * FROM src.overhead",
		"INSERT INTO main.note SELECT * FROM src.note",
		"INSERT OR REPLACE INTO main.thread SELECT * FROM src.thread",
		"INSERT OR REPLACE INTO main.device_lane SELECT rank, tid, device, stream FROM src.device_lane",
		"INSERT OR IGNORE INTO main.arg(rank, tid, start_ns, kind, name_id, dur_ns, ord, args) SELECT a.rank, a.tid,"
		" a.start_ns, a.kind, m.new, a.dur_ns, a.ord, a.args FROM src.arg a JOIN temp.smap m ON m.old = a.name_id",
		"INSERT INTO main.flow SELECT rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns FROM src.flow",
		"INSERT OR REPLACE INTO main.rank SELECT * FROM src.rank",
		"INSERT OR REPLACE INTO main.comm SELECT * FROM src.comm",
		"INSERT OR REPLACE INTO main.step_agg SELECT a.rank, a.step, a.kind, m.new, a.count, a.total_ns"
		" FROM src.step_agg a JOIN temp.smap m ON m.old = a.name_id",
		"INSERT OR IGNORE INTO main.run SELECT * FROM src.run",
		"INSERT OR IGNORE INTO main.diag_check(ts_utc_ns, name, status, value, unit, detail)"
		" SELECT ts_utc_ns, name, status, value, unit, detail FROM src.diag_check",
		"INSERT OR IGNORE INTO main.quant_layer(layer, method, scale, sqnr_db, detail)"
		" SELECT layer, method, scale, sqnr_db, detail FROM src.quant_layer",
		"INSERT OR IGNORE INTO main.meta SELECT key, value FROM src.meta WHERE key NOT IN"
		" ('schema_version', 'tool_version', 'created_utc', 'sqlite_version', 'op_stat_built')",
		"COMMIT",
	};
	/* a v1 file (written before imported traces) has no device_lane, arg or flow table */
	int v2 = 0;
	sqlite3_stmt *q2 = NULL;
	if (sqlite3_prepare_v2(out->h, "SELECT 1 FROM src.sqlite_master WHERE name = 'device_lane'", -1, &q2, NULL) ==
	    SQLITE_OK)
		v2 = sqlite3_step(q2) == SQLITE_ROW;
	sqlite3_finalize(q2);
	int v4 = sqlite3_prepare_v2(out->h, "SELECT ord FROM src.event LIMIT 0", -1, &q2, NULL) == SQLITE_OK;
	sqlite3_finalize(q2);
	int v5 = sqlite3_prepare_v2(out->h, "SELECT device FROM src.mem_event LIMIT 0", -1, &q2, NULL) == SQLITE_OK;
	sqlite3_finalize(q2);
	for (size_t i = 0; i < sizeof STEPS / sizeof STEPS[0] && !rc; i++) {
		if (!v2 && (strstr(STEPS[i], "src.device_lane") || strstr(STEPS[i], "src.arg") || strstr(STEPS[i], "src.flow")))
			continue;
		/* a file before v4: its rows' ord is 0; before v5: its memory's device is the host or unknown */
		const char *at = v4 ? NULL : strstr(STEPS[i], ".ord");
		const char *dev = v5 ? NULL : strstr(STEPS[i], " device FROM src.mem_event");
		if (!at && !dev) {
			rc = db_exec(out, STEPS[i]);
			continue;
		}
		char *sql = at ? sqlite3_mprintf("%.*s0%s", (int)(at - 1 - STEPS[i]), STEPS[i], at + 4)
			       : sqlite3_mprintf("%.*s%s%s", (int)(dev - STEPS[i]), STEPS[i],
						 " " DB_SQL_MEM_DEVICE_BEFORE_V5_OF("src.meta"), dev + strlen(" device"));
		rc = sql ? db_exec(out, sql) : ascent_error(ASCENT_ENOMEM, "out of memory");
		sqlite3_free(sql);
	}
	if (rc) {
		db_exec(out, "ROLLBACK");
		rc = ascent_error_ctx(rc, "cannot merge '%s'", in);
	}
	db_exec(out, "DETACH DATABASE src");
	out->strs_loaded = 0;
	db_strmap_free(&out->strs);
	return rc;
}

/* A "warn" note in the merged profile: a rank file's log lost data (see db_wal_check). */
static int note_wal_loss(struct db *out, const char *in, const struct db_wal_loss *wl)
{
	char text[4400];
	if (wl->header_bad)
		snprintf(text, sizeof text, "'%s-wal' has a damaged header: all %lld bytes of it were dropped, so this "
			 "rank's profile lacks everything after its last checkpoint", in, (long long)wl->bytes_lost);
	else
		snprintf(text, sizeof text, "'%s-wal' was cut short or damaged: %lld page(s) and %lld byte(s) of a "
			 "partial page after its last complete transaction were dropped (%lld bytes in all; %lld "
			 "transaction(s) kept), so this rank's profile ends early", in, (long long)wl->frames_lost,
			 (long long)wl->partial_bytes, (long long)wl->bytes_lost, (long long)wl->commits);
	return db_put_note(out, -1, 0, "warn", text);
}

/* The run a rank file belongs to: its meta run_id (NULL: none, a file from before it was kept) and
 * the world size its run table says (0 unknown). Call after db_wal_check: opening recovers the log. */
static int run_identity(const char *in, char **run_id, int64_t *world)
{
	*run_id = NULL;
	*world = 0;
	struct db *src;
	int rc = db_open(in, DB_READ, &src);
	if (rc)
		return rc;
	*run_id = db_get_meta(src, "run_id");
	rc = db_scalar_i64(src, "SELECT coalesce(max(world_size), 0) FROM run", world, NULL);
	db_close(src);
	return rc;
}

/* Ranks below the world size that no input held: a warning and a note ("ranks 2, 3 of 4 missing"). */
static int note_missing_ranks(struct db *out, int64_t world)
{
	if (world <= 1 || world > 1 << 20)
		return 0;
	char *have = calloc((size_t)world, 1);
	if (!have)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	struct db_rank_info *r = NULL;
	int nr = 0;
	int rc = db_ranks(out, &r, &nr);
	for (int i = 0; i < nr && !rc; i++)
		if (r[i].rank >= 0 && r[i].rank < world)
			have[r[i].rank] = 1;
	db_ranks_free(r, nr);
	char list[512] = "";
	size_t len = 0;
	int64_t missing = 0;
	for (int64_t k = 0; k < world && !rc; k++) {
		if (have[k])
			continue;
		if (missing++ < 16 && len < sizeof list - 24)
			len += (size_t)snprintf(list + len, sizeof list - len, "%s%lld", missing > 1 ? ", " : "", (long long)k);
	}
	free(have);
	if (rc || !missing)
		return rc;
	char text[700];
	snprintf(text, sizeof text, "rank%s %s%s of %lld missing: no rank file of %s was merged, so this profile covers "
		 "%lld of the run's %lld ranks", missing > 1 ? "s" : "", list, missing > 16 ? ", ..." : "", (long long)world,
		 missing > 1 ? "them" : "it", (long long)(world - missing), (long long)world);
	log_warn("%s", text);
	return db_put_note(out, -1, 0, "warn", text);
}

int db_merge(const char *out_path, const char *const *inputs, int n, int allow_mixed)
{
	if (n < 1)
		return ascent_error(ASCENT_EINPUT, "nothing to merge into '%s': no rank databases given", out_path);
	/* built in a temporary that goes with the process if it is interrupted; merges running at once
	 * into one output each have their own, and the last to finish is what is left */
	struct fs_tmp tmp;
	int rc = fs_tmp_open(&tmp, out_path);
	if (rc)
		return rc;
	struct db *out = NULL;
	rc = db_open(tmp.name, DB_CREATE_TEMP, &out);
	/* one run: every input that carries a run id carries the first one's, unless asked otherwise */
	char *run0 = NULL;
	const char *run0_file = NULL;
	int64_t world = 0;
	for (int i = 0; i < n && !rc; i++) {
		struct db_wal_loss wl;
		rc = db_wal_check(inputs[i], &wl);
		char *rid = NULL;
		int64_t w = 0;
		if (!rc)
			rc = run_identity(inputs[i], &rid, &w);
		world = w > world ? w : world;
		if (!rc && rid && *rid && !run0) {
			run0 = rid;
			run0_file = inputs[i];
			rid = NULL;
		} else if (!rc && rid && *rid && strcmp(rid, run0) && !allow_mixed) {
			rc = ascent_error(ASCENT_EINPUT, "'%s' is from run '%s' but '%s' is from run '%s': merging them would "
					  "mix two runs in one profile; merge each run's files on their own, or pass "
					  "--allow-mixed-runs to combine them anyway", inputs[i], rid, run0_file, run0);
		}
		free(rid);
		if (!rc)
			rc = db_merge_append(out, inputs[i]);
		if (!rc && (wl.frames_lost || wl.partial_bytes || wl.header_bad))
			rc = note_wal_loss(out, inputs[i], &wl);
	}
	free(run0);
	if (!rc)
		rc = note_missing_ranks(out, world);
	if (!rc) {
		char buf[32];
		snprintf(buf, sizeof buf, "%d", n);
		rc = db_set_meta(out, "merged_from", buf);
	}
	if (!rc)
		rc = db_finalize(out);
	if (!rc)
		rc = db_exec(out, "PRAGMA journal_mode = DELETE");
	db_close(out);   /* accepts NULL */
	if (!rc)
		rc = fs_tmp_commit(&tmp);
	fs_tmp_abort(&tmp);
	return rc;
}
