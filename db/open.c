/* db/open.c — opening, creating, validating and migrating a profile database; the statement
 * catalogue (the SQLite seam itself is db/sql.c, the string map db/strmap.c). */
#include "db/internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The statements, indexed by enum db_stmt. */
static const char *const SQL[S_COUNT_] = {
	[S_BEGIN] = "BEGIN",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_STR_INS] = "INSERT INTO string(id, value) VALUES(?1, ?2)",
	[S_EVENT] = "INSERT OR IGNORE INTO event(rank, start_ns, tid, kind, name_id, dur_ns, step, mb, layer,"
		    " bytes, flops, peer, comm_id, seq, stack_id, site_id, ord)"
		    " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17)",
	[S_COUNTER] = "INSERT OR REPLACE INTO counter(rank, name_id, ts_ns, value) VALUES(?1,?2,?3,?4)",
	[S_MEM] = "INSERT INTO mem_event(rank, ts_ns, bytes, category, in_use, stack_id, device) VALUES(?1,?2,?3,?4,?5,?6,?7)",
	[S_STACK] = "INSERT OR IGNORE INTO stack(stack_id, depth, frame_id) VALUES(?1,?2,?3)",
	[S_FRAME] = "INSERT OR REPLACE INTO frame(frame_id, ip, symbol, module, offset) VALUES(?1,?2,?3,?4,?5)",
	[S_SAMPLE] = "INSERT INTO sample(rank, tid, ts_ns, stack_id, period_ns) VALUES(?1,?2,?3,?4,?5)",
	[S_OVERHEAD] = "INSERT INTO overhead(rank, ts_ns, dur_ns, what, count) VALUES(?1,?2,?3,?4,?5)",
	[S_THREAD] = "INSERT OR REPLACE INTO thread(rank, tid, os_tid, name) VALUES(?1,?2,?3,?4)",
	[S_RANK] = "INSERT OR REPLACE INTO rank(rank, host, pid, dp_rank, tp_rank, pp_rank, threads, t0_ns,"
		   " t0_utc_ns, clock_offset_ns, clock_err_ns, clock_offset_end_ns, clock_err_end_ns, end_ns)"
		   " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
	[S_RUN] = "INSERT OR REPLACE INTO run(id, command_line, config_json, world_size, created_utc)"
		  " VALUES(1,?1,?2,?3,?4)",
	[S_COMM] = "INSERT OR REPLACE INTO comm(rank, comm_id, name, size, rank_in_comm) VALUES(?1,?2,?3,?4,?5)",
	[S_COMM_DEL] = "DELETE FROM comm WHERE rank = ?1 AND name = ?2 AND comm_id <> ?3",
	[S_STEP_AGG] = "INSERT INTO step_agg(rank, step, kind, name_id, count, total_ns) VALUES(?1,?2,?3,?4,?5,?6)"
		       " ON CONFLICT(rank, step, kind, name_id) DO UPDATE SET count = count + excluded.count,"
		       " total_ns = total_ns + excluded.total_ns",
	[S_NOTE] = "INSERT INTO note(rank, ts_ns, level, text) VALUES(?1,?2,?3,?4)",
	[S_META_SET] = "INSERT OR REPLACE INTO meta(key, value) VALUES(?1, ?2)",
	[S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
	[S_STEP_STAT] = "INSERT OR REPLACE INTO step_stat(rank, step, start_ns, total_ns, computing_ns, comm_ns,"
			" overlapped_ns, comm_not_overlapped_ns, free_ns, bubble_ns, preparing_ns)"
			" VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
	[S_EVENT_MULTI] = NULL,   /* built by event_multi_sql(): DB_EVENT_ROWS rows per INSERT */
	[S_DEVLANE] = "INSERT OR REPLACE INTO device_lane(rank, tid, device, stream) VALUES(?1,?2,?3,?4)",
	[S_ARG] = "INSERT OR IGNORE INTO arg(rank, tid, start_ns, kind, name_id, dur_ns, ord, args)"
		  " VALUES(?1,?2,?3,?4,?5,?6,?7,?8)",
	[S_FLOW] = "INSERT INTO flow(rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns) VALUES(?1,?2,?3,?4,?5,?6,?7)",
	[S_FLOW_END] = "INSERT INTO flow_end(rank, kind, file, id, start, tid, ns, seq, used)"
		       " VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9)",
	[S_ARG_MULTI] = NULL,        /* built by multi_sql(): DB_ARG_ROWS rows per INSERT */
	[S_FLOW_END_MULTI] = NULL,   /* built by multi_sql(): DB_FLOW_END_ROWS rows per INSERT */
	[S_FLOW_MULTI] = NULL,       /* built by multi_sql(): DB_FLOW_ROWS rows per INSERT */
};

/* "HEAD (?,...),(?,...)..." with `rows` rows of `cols` parameters (caller frees). */
static char *multi_sql(const char *head, int cols, int rows)
{
	size_t row = 2 + 2 * (size_t)cols + 1;   /* "(?,?,...,?)," */
	size_t n = strlen(head) + row * (size_t)rows + 2;
	char *sql = malloc(n);
	if (!sql)
		return NULL;
	char *p = sql + sprintf(sql, "%s", head);
	for (int r = 0; r < rows; r++) {
		*p++ = r ? ',' : ' ';
		*p++ = '(';
		for (int c = 0; c < cols; c++) {
			if (c)
				*p++ = ',';
			*p++ = '?';
		}
		*p++ = ')';
	}
	*p = 0;
	return sql;
}

/* "INSERT OR IGNORE INTO event(...) VALUES(?,...),(?,...)..." with DB_EVENT_ROWS rows. */
static char *event_multi_sql(void)
{
	return multi_sql("INSERT OR IGNORE INTO event(rank, start_ns, tid, kind, name_id, dur_ns, step, mb, layer,"
			 " bytes, flops, peer, comm_id, seq, stack_id, site_id, ord) VALUES",
			 DB_EVENT_COLS, DB_EVENT_ROWS);
}

int db_header_is_profile(const unsigned char *h, size_t n)
{
	return n >= DB_HEADER_BYTES && !memcmp(h, "SQLite format 3", 16) &&
	       ((uint32_t)h[68] << 24 | (uint32_t)h[69] << 16 | (uint32_t)h[70] << 8 | h[71]) == DB_APP_ID;
}

int db_stmt(struct db *db, enum db_stmt id, sqlite3_stmt **out)
{
	if (!db->st[id] && id == S_EVENT_MULTI) {
		char *sql = event_multi_sql();
		db->evbind = calloc(1, sizeof *db->evbind);
		if (!sql || !db->evbind) {
			free(sql);
			free(db->evbind);
			db->evbind = NULL;
			return ascent_error(ASCENT_ENOMEM, "out of memory preparing an insert for '%s'", db->path);
		}
		int rc = sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &db->st[id], NULL);
		free(sql);
		if (rc != SQLITE_OK) {
			free(db->evbind);
			db->evbind = NULL;
			return db_sql_err(db, rc, "cannot prepare a statement for", "INSERT INTO event (multi-row)");
		}
	} else if (!db->st[id] && (id == S_ARG_MULTI || id == S_FLOW_END_MULTI || id == S_FLOW_MULTI)) {
		char *sql = id == S_ARG_MULTI
				    ? multi_sql("INSERT OR IGNORE INTO arg(rank, tid, start_ns, kind, name_id, dur_ns, ord, args) VALUES",
						8, DB_ARG_ROWS)
			    : id == S_FLOW_MULTI
				    ? multi_sql("INSERT INTO flow(rank, kind, flow_id, src_tid, src_ns, dst_tid, dst_ns) VALUES", 7,
						DB_FLOW_ROWS)
				    : multi_sql("INSERT INTO flow_end(rank, kind, file, id, start, tid, ns, seq, used) VALUES", 9,
						DB_FLOW_END_ROWS);
		if (!sql)
			return ascent_error(ASCENT_ENOMEM, "out of memory preparing an insert for '%s'", db->path);
		int rc = sqlite3_prepare_v3(db->h, sql, -1, SQLITE_PREPARE_PERSISTENT, &db->st[id], NULL);
		free(sql);
		if (rc != SQLITE_OK)
			return db_sql_err(db, rc, "cannot prepare a statement for", "INSERT (multi-row)");
	} else if (!db->st[id]) {
		int rc = sqlite3_prepare_v3(db->h, SQL[id], -1, SQLITE_PREPARE_PERSISTENT, &db->st[id], NULL);
		if (rc != SQLITE_OK)
			return db_sql_err(db, rc, "cannot prepare a statement for", SQL[id]);
	}
	*out = db->st[id];
	return 0;
}

int db_load_strings(struct db *db)
{
	if (db->strs_loaded)
		return 0;
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, "SELECT id, value FROM string", -1, &s, NULL);
	if (rc != SQLITE_OK)
		return db_sql_err(db, rc, "cannot read strings of", NULL);
	db->next_str_id = 1;
	while ((rc = db_step(db, s)) == SQLITE_ROW) {
		int64_t id = sqlite3_column_int64(s, 0);
		const char *v = (const char *)sqlite3_column_text(s, 1);
		if (v && (rc = db_strmap_put(&db->strs, v, id)) != 0) {
			sqlite3_finalize(s);
			return rc;
		}
		if (id >= db->next_str_id)
			db->next_str_id = id + 1;
	}
	sqlite3_finalize(s);
	if (rc != SQLITE_DONE)
		return db_sql_err(db, rc, "cannot read strings of", NULL);
	db->strs_loaded = 1;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* opening */

/* 1 when the folder of `path` (into dir) holds rank-*.db files (the parts a profiled run merges at
 * its end). */
static int has_rank_files(const char *path, char *dir, size_t n)
{
	const char *sl = strrchr(path, '/');
	if (!sl)
		snprintf(dir, n, ".");
	else
		snprintf(dir, n, "%.*s", sl == path ? 1 : (int)(sl - path), path);
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		found = l > 8 && !strncmp(e->d_name, "rank-", 5) && !strcmp(e->d_name + l - 3, ".db");
	}
	closedir(d);
	return found;
}

/* The file's first bytes: a SQLite database, not empty, not a folder. *wal_missing = 1 when the
 * header says WAL mode and no PATH-wal file exists (checked before SQLite opens it and creates one). */
static int check_header(const char *path, int *wal_missing)
{
	*wal_missing = 0;
	struct stat st;
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': it is a folder, not a profile (give "
				    "RUN/trace.db, or run 'ascent merge RUN' first)", path);
	FILE *f = fopen(path, "rb");
	char dir[4096];
	if (!f && errno == ENOENT && has_rank_files(path, dir, sizeof dir))
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': %s; its folder holds per-rank files "
				    "(rank-NNNNN.db) of a run that did not finish merging them: run 'ascent merge "
				    "%s' first", path, strerror(ENOENT), dir);
	if (!f)
		return ascent_error(errno == ENOENT ? ASCENT_EINPUT : ASCENT_EIO, "cannot open '%s': %s", path,
				    strerror(errno));
	unsigned char hdr[20] = { 0 };
	size_t n = fread(hdr, 1, sizeof hdr, f);
	fclose(f);
	if (n == 0)
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': the file is empty (was the run killed before "
				    "the profiler started?)", path);
	if (n < sizeof hdr || memcmp(hdr, "SQLite format 3", 16) != 0)
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': not a database (was it written by ascent?)",
				    path);
	if (hdr[18] == 2 && hdr[19] == 2) {   /* file format versions 2: WAL mode */
		char wal[4200];
		snprintf(wal, sizeof wal, "%s-wal", path);
		*wal_missing = !fs_exists(wal);
	}
	return 0;
}

/* Schema text before the index marker (every statement is IF NOT EXISTS). */
int db_create_tables(struct db *db)
{
	const char *m = strstr(db_schema_sql, "-- @@INDEXES@@");
	size_t n = m ? (size_t)(m - db_schema_sql) : strlen(db_schema_sql);
	char *sql = malloc(n + 1);
	if (!sql)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	memcpy(sql, db_schema_sql, n);
	sql[n] = 0;
	int rc = db_exec(db, sql);
	free(sql);
	return rc;
}

/* Migrations: from version v to v+1, in order. v1 → v2 adds the tables of imported traces
 * (device_lane, arg, flow) and the event kinds 10–12, which need no change to existing rows. */
/* v3: arg, a rowid table with the index arg_event(rank, tid, start_ns) in v2, is keyed like event
 * (its rows clustered by the event's key, no index to build). Of rows with one key (an event the
 * event table kept once) the first written stays, as readers saw it through the index. */
static const char ARG_V3_SQL[] =
	"SAVEPOINT arg_v3;"
	"CREATE TABLE arg_v3(rank INTEGER NOT NULL, tid INTEGER NOT NULL, start_ns INTEGER NOT NULL,"
	" kind INTEGER NOT NULL, name_id INTEGER NOT NULL, dur_ns INTEGER NOT NULL, args TEXT NOT NULL,"
	" PRIMARY KEY(rank, start_ns, tid, kind, name_id, dur_ns)) WITHOUT ROWID;"
	"INSERT OR IGNORE INTO arg_v3 SELECT rank, tid, start_ns, kind, name_id, dur_ns, args FROM arg ORDER BY rowid;"
	"DROP TABLE arg;"
	"ALTER TABLE arg_v3 RENAME TO arg;"
	"RELEASE arg_v3;";

/* v4: event and arg gain `ord` at the end of their key (events equal in the other key columns were
 * one row before: every row of a v3 file is ord 0). A key cannot change in place: the tables are
 * renamed (legacy renaming, so the views that read event are not rewritten to the old name), made
 * again from the schema, filled, and the old ones dropped with their indexes, which are made again. */
static const char KEY_V4_SQL[] =
	"PRAGMA legacy_alter_table = ON;"
	"SAVEPOINT key_v4;"
	"ALTER TABLE event RENAME TO event_v3;"
	"ALTER TABLE arg RENAME TO arg_v3;";
static const char KEY_V4_COPY_SQL[] =
	"INSERT INTO event(rank, start_ns, tid, kind, name_id, dur_ns, step, mb, layer, bytes, flops, peer, comm_id,"
	" seq, stack_id, site_id) SELECT rank, start_ns, tid, kind, name_id, dur_ns, step, mb, layer, bytes, flops, peer,"
	" comm_id, seq, stack_id, site_id FROM event_v3;"
	"INSERT INTO arg(rank, tid, start_ns, kind, name_id, dur_ns, args)"
	" SELECT rank, tid, start_ns, kind, name_id, dur_ns, args FROM arg_v3;"
	"DROP TABLE event_v3;"
	"DROP TABLE arg_v3;"
	"RELEASE key_v4;"
	"PRAGMA legacy_alter_table = OFF;";

static int migrate_key_v4(struct db *db)
{
	int rc = db_exec(db, KEY_V4_SQL);
	if (!rc)
		rc = db_create_tables(db);
	if (!rc)
		rc = db_exec(db, KEY_V4_COPY_SQL);
	if (!rc)
		rc = db_exec(db, db_schema_indexes());
	if (rc) {
		db_exec(db, "ROLLBACK TO key_v4; RELEASE key_v4; PRAGMA legacy_alter_table = OFF;");
		return ascent_error_ctx(rc, "cannot upgrade '%s' to schema version 4", db->path);
	}
	return 0;
}

/* v5: mem_event gains `device` (several devices per rank). The rows of an older file are the host's
 * (the profiler's) or one unnamed device's (an imported file's); mem_peak is made again grouped by
 * device. */
static const char MEM_V5_SQL[] =
	"ALTER TABLE mem_event ADD COLUMN device INTEGER NOT NULL DEFAULT -1;"
	"UPDATE mem_event SET device = " DB_SQL_MEM_DEVICE_BEFORE_V5 ";";

static int migrate_mem_v5(struct db *db)
{
	int64_t has = 0;   /* a file made by hand from a newer one may have the column already */
	int rc = db_exec(db, "SAVEPOINT mem_v5;");
	if (!rc)
		rc = db_scalar_i64(db, "SELECT count(*) FROM pragma_table_info('mem_event') WHERE name = 'device'", &has,
				   NULL);
	if (!rc && !has)
		rc = db_exec(db, MEM_V5_SQL);
	if (!rc)
		rc = db_exec(db, "DROP VIEW IF EXISTS mem_peak;");
	if (!rc)
		rc = db_create_tables(db);
	if (!rc)
		rc = db_exec(db, "RELEASE mem_v5;");
	if (rc) {
		db_exec(db, "ROLLBACK TO mem_v5; RELEASE mem_v5;");
		return ascent_error_ctx(rc, "cannot upgrade '%s' to schema version 5", db->path);
	}
	return 0;
}

const char *db_mem_device_sql(const struct db *db)
{
	return db->version >= 5 ? "device" : DB_SQL_MEM_DEVICE_BEFORE_V5;
}

static int migrate(struct db *db, int from)
{
	int rc = 0;
	if (from < 2)
		rc = db_create_tables(db);   /* v2's tables, arg already in v3's layout */
	else if (from < 3)
		rc = db_exec(db, ARG_V3_SQL);
	if (!rc && from < 4)
		rc = migrate_key_v4(db);
	if (!rc && from < 5)
		rc = migrate_mem_v5(db);
	if (rc)
		return rc;
	char buf[64];
	snprintf(buf, sizeof buf, "PRAGMA user_version = %d", DB_SCHEMA_VERSION);
	return db_exec(db, buf);
}

static int pragma_int(struct db *db, const char *sql, int64_t *out)
{
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = db_step(db, s);
	if (rc == SQLITE_ROW) {
		*out = sqlite3_column_int64(s, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		*out = 0;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc;
}

/* Every table of the schema (db_schema_sql) the file's version has must exist — except op_stat,
 * which db_finalize adds, and tables added by a later version (marked "-- vN:" on their CREATE line;
 * migrate creates them): a profile missing one is damaged, and refused here by name rather than by
 * a query failing later. */
static int check_tables(struct db *db)
{
	static const char mark[] = "CREATE TABLE IF NOT EXISTS ";
	sqlite3_stmt *s = NULL;
	int rc = sqlite3_prepare_v2(db->h, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1", -1, &s,
				    NULL);
	if (rc != SQLITE_OK)
		return db_sql_err(db, rc, "cannot read the tables of", NULL);
	for (const char *p = strstr(db_schema_sql, mark); p && !rc; p = strstr(p, mark)) {
		p += sizeof mark - 1;
		size_t n = strcspn(p, "( \n");
		if (n == 0 || n >= 64 || (n == 7 && !memcmp(p, "op_stat", 7)))
			continue;
		const char *eol = strchr(p, '\n'), *v = strstr(p, "-- v");
		if (v && (!eol || v < eol) && atoi(v + 4) > db->version)
			continue;
		char name[64];
		memcpy(name, p, n);
		name[n] = 0;
		sqlite3_reset(s);
		sqlite3_bind_text(s, 1, name, -1, SQLITE_TRANSIENT);
		int src = sqlite3_step(s);
		if (src == SQLITE_DONE)
			rc = ascent_error(ASCENT_EINPUT, "cannot open '%s': not a complete ascent profile: its table "
					  "'%s' is missing (the file was damaged or edited); re-run the profile, or "
					  "'ascent merge' the run's rank files again", db->path, name);
		else if (src != SQLITE_ROW)
			rc = db_sql_err(db, src, "cannot read the tables of", NULL);
	}
	sqlite3_finalize(s);
	return rc;
}

static int validate(struct db *db, int wal_missing)
{
	int64_t app = 0, ver = 0, ntab = 0;
	int rc = pragma_int(db, "PRAGMA application_id", &app);
	if (rc == SQLITE_OK)
		rc = pragma_int(db, "PRAGMA user_version", &ver);
	if (rc == SQLITE_OK)
		rc = pragma_int(db, "SELECT count(*) FROM sqlite_master", &ntab);
	if (rc != SQLITE_OK) {
		if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
			return ascent_error(ASCENT_EINPUT, "cannot open '%s': the database is corrupt (%s); re-run "
					    "the profile, or recover what you can with sqlite3's .recover", db->path,
					    sqlite3_errstr(rc));
		return db_sql_err(db, rc, "cannot read", NULL);
	}
	if (app == 0 && ntab == 0 && wal_missing)   /* created in WAL mode, nothing checkpointed yet */
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': its write-ahead log '%s-wal' is missing, and "
				    "the data of an unfinished (killed) run is in it; put the -wal file back next to "
				    "the .db (copy both together), then retry", db->path, db->path);
	if (app != DB_APP_ID)
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': not an ascent profile database (application "
				    "id 0x%llx; was it written by ascent?)", db->path, (unsigned long long)app);
	if (ver > DB_SCHEMA_VERSION)
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': schema version %lld is newer than this ascent "
				    "reads (%d); upgrade ascent", db->path, (long long)ver, DB_SCHEMA_VERSION);
	if (ver < 1)
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': schema version %lld is not valid (the file "
				    "is damaged or was not finished)", db->path, (long long)ver);
	db->version = (int)ver;
	/* the tables we rely on must be there and readable */
	sqlite3_stmt *s = NULL;
	rc = sqlite3_prepare_v2(db->h, "SELECT count(*) FROM meta", -1, &s, NULL);
	if (rc == SQLITE_OK) {
		rc = db_step(db, s);
		sqlite3_finalize(s);
		if (rc == SQLITE_ROW)
			rc = SQLITE_OK;
	}
	if (rc == SQLITE_OK) {
		rc = sqlite3_prepare_v2(db->h, "SELECT rank, start_ns, dur_ns FROM event LIMIT 1", -1, &s, NULL);
		if (rc == SQLITE_OK)
			sqlite3_finalize(s);
	}
	if (rc != SQLITE_OK) {
		if (rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB)
			return ascent_error(ASCENT_EINPUT, "cannot open '%s': the database is corrupt (%s)", db->path,
					    sqlite3_errmsg(db->h));
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': tables are missing or damaged (%s)", db->path,
				    sqlite3_errmsg(db->h));
	}
	return check_tables(db);
}

/* DB_CREATE_TEMP's files: an unnamed temporary (fs_tmp) is reached through "/proc/self/fd/N", a
 * link SQLite's unix VFS would resolve (to "DIR/#INODE (deleted)", creating that) and then refuse
 * to open (O_NOFOLLOW). The VFS "ascent-tmp" is the unix one with such a name kept as given, and
 * the unix VFS's open() lets a "/proc/self/fd/" name be followed; every other name and every
 * other call is the unix VFS's own. */
#define PROC_FD "/proc/self/fd/"
static sqlite3_vfs tmp_vfs;
static sqlite3_vfs *unix_vfs;
static sqlite3_syscall_ptr unix_open;

static int tmp_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	(void)vfs;
	if (strncmp(name, PROC_FD, strlen(PROC_FD)))
		return unix_vfs->xFullPathname(unix_vfs, name, n, out);
	if ((int)strlen(name) >= n)
		return SQLITE_CANTOPEN;
	strcpy(out, name);
	return SQLITE_OK;
}

static int tmp_open_syscall(const char *name, int flags, int mode)
{
	if (!strncmp(name, PROC_FD, strlen(PROC_FD)))
		flags &= ~O_NOFOLLOW;
	return ((int (*)(const char *, int, int))unix_open)(name, flags, mode);
}

static void tmp_vfs_register(void)
{
	unix_vfs = sqlite3_vfs_find("unix");
	if (!unix_vfs || !unix_vfs->xGetSystemCall || !(unix_open = unix_vfs->xGetSystemCall(unix_vfs, "open")))
		return;
	tmp_vfs = *unix_vfs;
	tmp_vfs.zName = "ascent-tmp";
	tmp_vfs.xFullPathname = tmp_full_pathname;
	if (unix_vfs->xSetSystemCall(unix_vfs, "open", (sqlite3_syscall_ptr)tmp_open_syscall) == SQLITE_OK)
		sqlite3_vfs_register(&tmp_vfs, 0);
}

/* SQLite's allocation statistics (sqlite3_memory_used) take a global mutex on every malloc and
 * free; nothing reads them, and the bulk writers (profiler, import) allocate per row. Turned off
 * once, before SQLite initialises (later the call is refused, harmlessly). */
static void sqlite_setup(void)
{
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	tmp_vfs_register();
}

int db_open(const char *path, int mode, struct db **out)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	pthread_once(&once, sqlite_setup);
	*out = NULL;
	if (!path || !*path)
		return ascent_error(ASCENT_EUSAGE, "no database path given");
	int rc, wal_missing = 0;
	int create = mode == DB_CREATE || mode == DB_CREATE_TEMP;
	if (mode == DB_CREATE) {
		if (fs_exists(path) && unlink(path) != 0)
			return ascent_error(ASCENT_EIO, "cannot replace '%s': %s", path, strerror(errno));
		char aux[4096];
		snprintf(aux, sizeof aux, "%s-wal", path);
		unlink(aux);
		snprintf(aux, sizeof aux, "%s-shm", path);
		unlink(aux);
	} else if (!create && (rc = check_header(path, &wal_missing)) != 0) {
		return rc;
	}
	struct db *db = calloc(1, sizeof *db);
	if (!db || !(db->path = strdup(path))) {
		free(db);
		return ascent_error(ASCENT_ENOMEM, "out of memory opening '%s'", path);
	}
	db->mode = mode;
	db->next_str_id = 1;
	int flags = (mode == DB_READ_LIVE ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE) | SQLITE_OPEN_NOMUTEX |
		    (create ? SQLITE_OPEN_CREATE : 0);
	/* URI names, so that db_attach can open another file read-only; only a path beginning with
	 * "file:" would read differently, so such a path is opened without */
	db->uri = strncmp(path, "file:", 5) != 0;
	if (db->uri)
		flags |= SQLITE_OPEN_URI;
	/* fs_tmp falls back to a named file where the unix VFS could not be wrapped; an fs_tmp written
	 * earlier (a parallel import's part) is read through its "/proc/self/fd/N" name too */
	int tmp_name = mode == DB_CREATE_TEMP || !strncmp(path, PROC_FD, strlen(PROC_FD));
	const char *vfs = tmp_name && sqlite3_vfs_find("ascent-tmp") ? "ascent-tmp" : NULL;
	rc = sqlite3_open_v2(path, &db->h, flags, vfs);
	if (rc != SQLITE_OK && mode == DB_READ) {
		/* a read-only file or folder: still readable */
		sqlite3_close(db->h);
		db->h = NULL;
		rc = sqlite3_open_v2(path, &db->h, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
	}
	if (rc != SQLITE_OK) {
		int r = ascent_error(rc == SQLITE_CANTOPEN ? ASCENT_EIO : ASCENT_EDB, "cannot open '%s': %s", path,
				     db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc));
		db_close(db);
		return r;
	}
	sqlite3_extended_result_codes(db->h, 0);
	sqlite3_busy_timeout(db->h, 5000);
	if (create) {
		char prag[256];
		snprintf(prag, sizeof prag,
			 "PRAGMA page_size = 16384; PRAGMA journal_mode = %s; PRAGMA synchronous = %s;"
			 "PRAGMA application_id = %d; PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;",
			 mode == DB_CREATE ? "WAL" : "OFF", mode == DB_CREATE ? "NORMAL" : "OFF", DB_APP_ID);
		rc = db_exec(db, prag);
		if (!rc)
			rc = db_exec(db, "BEGIN");
		if (!rc)
			rc = db_create_tables(db);
		if (!rc) {
			snprintf(prag, sizeof prag, "PRAGMA user_version = %d", DB_SCHEMA_VERSION);
			rc = db_exec(db, prag);
		}
		if (!rc)
			rc = db_exec(db, "COMMIT");
		if (!rc) {
			char now[32];
			clock_format_utc(clock_utc_ns(), 0, now, sizeof now);
			char ver[16];
			snprintf(ver, sizeof ver, "%d", DB_SCHEMA_VERSION);
			rc = db_set_meta(db, "schema_version", ver);
			if (!rc)
				rc = db_set_meta(db, "tool_version", ASCENT_VERSION);
			if (!rc)
				rc = db_set_meta(db, "created_utc", now);
			if (!rc)
				rc = db_set_meta(db, "sqlite_version", sqlite3_libversion());
		}
		db->version = DB_SCHEMA_VERSION;
		db->strs_loaded = 1;
		if (rc) {
			db_close(db);
			return ascent_error_ctx(rc, "cannot create '%s'", path);
		}
		*out = db;
		return 0;
	}
	rc = validate(db, wal_missing);
	if (!rc)
		rc = db_exec(db, "PRAGMA cache_size = -65536; PRAGMA temp_store = MEMORY;");
	if (!rc && mode == DB_UPDATE && db->version < DB_SCHEMA_VERSION) {
		rc = migrate(db, db->version);
		if (!rc)
			db->version = DB_SCHEMA_VERSION;
	}
	if (rc) {
		db_close(db);
		return rc;
	}
	*out = db;
	return 0;
}

void db_close(struct db *db)
{
	if (!db)
		return;
	for (int i = 0; i < S_COUNT_; i++)
		sqlite3_finalize(db->st[i]);
	if (db->h)
		sqlite3_close(db->h);
	db_strmap_free(&db->strs);
	free(db->evbind);
	free(db->path);
	free(db);
}

const char *db_path(const struct db *db)
{
	return db->path;
}

int db_schema_version(struct db *db)
{
	return db->version;
}

int db_set_meta(struct db *db, const char *key, const char *value)
{
	sqlite3_stmt *s = NULL;
	int rc = db_stmt(db, S_META_SET, &s);
	if (rc)
		return rc;
	db_bind_text_static(db, s, 1, key);
	db_bind_text_static(db, s, 2, value);
	return db_step_done(db, s, "cannot write meta to");
}

char *db_get_meta(struct db *db, const char *key)
{
	sqlite3_stmt *s = NULL;
	if (db_stmt(db, S_META_GET, &s))
		return NULL;
	db_bind_text_static(db, s, 1, key);
	char *v = NULL;
	if (db_step(db, s) == SQLITE_ROW && sqlite3_column_text(s, 0))
		v = strdup((const char *)sqlite3_column_text(s, 0));
	sqlite3_reset(s);
	return v;
}

int64_t db_file_bytes(struct db *db)
{
	int64_t pc = 0, ps = 0;
	pragma_int(db, "PRAGMA page_count", &pc);
	pragma_int(db, "PRAGMA page_size", &ps);
	return pc * ps;
}

int db_count(struct db *db, const char *table, int64_t *n)
{
	static const char *const OK[] = { "event", "counter", "mem_event", "stack", "frame", "sample",
					  "overhead", "note", "string", "thread", "rank", "comm", "step_agg",
					  "step_stat", "meta", "run", "op_stat", "device_lane", "arg", "flow" };
	int ok = 0;
	for (size_t i = 0; i < sizeof OK / sizeof OK[0]; i++)
		ok |= !strcmp(OK[i], table);
	if (!ok)
		return ascent_error(ASCENT_EUSAGE, "no table '%s' in the profile schema", table);
	char sql[96];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", table);
	int rc = pragma_int(db, sql, n);
	return rc == SQLITE_OK ? 0 : db_sql_err(db, rc, "cannot count rows of", sql);
}

const char *db_sqlite_version(void)
{
	return sqlite3_libversion();
}
