/* bench/bench_import_nsys.c — `ascent import` of a large Nsight Systems export: an export of N rows
 * (default 1M: half CUDA runtime launches, half kernels on 4 streams, each kernel linked to its
 * launch by correlationId; the tables and columns of Nsight 2022's export schema that the reader
 * uses) written with SQLite, then imported the way the command does (imp_run). One JSON line:
 * rows, wall seconds, CPU seconds, rows per wall second and per CPU second, and issue 12's goal
 * (2M rows/s, not reached: docs/import.md). On a shared host, rows per CPU second is the steadier
 * figure.
 *
 *   bench_import_nsys [--rows N]     (ASCENT_BENCH_NSYS_ROWS also sets N) */
#include "common/common.h"
#include "import/import.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static const char *const SCHEMA =
	"CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE EXPORT_META_DATA (name TEXT, value TEXT);"
	"CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER, utcTime TEXT, localTime TEXT);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER NOT NULL, end INTEGER NOT NULL, eventClass INTEGER NOT NULL,"
	" globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL, returnValue INTEGER NOT NULL, callchainId INTEGER);"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,"
	" contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, correlationId INTEGER, globalPid INTEGER,"
	" demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL, registersPerThread INTEGER NOT NULL,"
	" gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL,"
	" blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL);"
	"INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'void saxpy<float>(int, float, float*, float*)'), (3, 'saxpy');"
	"INSERT INTO EXPORT_META_DATA VALUES ('EXPORT_SCHEMA_VERSION', '2.9.1');"
	"INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1687813257637297504, '', '');";

static int make_export(const char *path, int64_t rows)
{
	sqlite3 *db;
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return -1;
	char sql[2048];
	int64_t half = rows / 2;
	const int64_t gtid = (int64_t)1230493 << 24 | 1230493, gpid = (int64_t)1230493 << 24;
	snprintf(sql, sizeof sql,
		 "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; %s"
		 "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %" PRId64 ") "
		 "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT 1000000 + i * 4000, 1000000 + i * 4000 + 1500, 1, %" PRId64
		 ", i, 1, 0, NULL FROM c;"
		 "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %" PRId64 ") "
		 "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL SELECT 1000000 + i * 4000 + 2000, 1000000 + i * 4000 + 3500, 0, 1,"
		 " 7 + i %% 4, i, %" PRId64 ", 2, 3, 26, 2, 1, 1, 512, 1, 1 FROM c;",
		 SCHEMA, half, gtid, rows - half, gpid);
	int rc = sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
	sqlite3_close(db);
	return rc;
}

static double cpu_s(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	int64_t rows = 1000000;
	const char *env = getenv("ASCENT_BENCH_NSYS_ROWS");
	if (env && *env)
		rows = strtoll(env, NULL, 10);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--rows") && i + 1 < argc) {
			rows = strtoll(argv[++i], NULL, 10);
		} else {
			fprintf(stderr, "usage: bench_import_nsys [--rows N]\n");
			return 2;
		}
	}
	if (rows < 2)
		rows = 2;
	char dir[] = "/tmp/ascent-bench-nsys-XXXXXX", in[200], out[200];
	if (!mkdtemp(dir))
		return 1;
	snprintf(in, sizeof in, "%s/big.sqlite", dir);
	snprintf(out, sizeof out, "%s/out.db", dir);
	int rc = make_export(in, rows);
	if (rc) {
		fprintf(stderr, "bench_import_nsys: cannot write %s\n", in);
	} else {
		struct imp_phases ph = { 0 };
		struct imp_opts o = { .out_path = out, .quiet = 1, .rank = -1, .phases = &ph };
		const char *inputs[1] = { in };
		double c0 = cpu_s();
		int64_t t0 = clock_ns();
		rc = imp_run(&o, inputs, 1);
		double wall = (double)(clock_ns() - t0) / 1e9, cpu = cpu_s() - c0;
		if (rc)
			fprintf(stderr, "bench_import_nsys: %s\n", ascent_errmsg());
		else
			printf("{\"bench\":\"import_nsys\",\"rows\":%" PRId64 ",\"wall_s\":%.3f,\"cpu_s\":%.3f,"
			       "\"rows_per_s\":%.0f,\"rows_per_cpu_s\":%.0f,\"goal_rows_per_s\":2000000}\n",
			       rows, wall, cpu, (double)rows / wall, cpu > 0 ? (double)rows / cpu : 0.0);
		if (!rc)   /* where the time went: reading and inserting, links and ranks, db_finalize */
			printf("{\"bench\":\"import_nsys\",\"what\":\"phases\",\"read_insert_s\":%.3f,\"post_s\":%.3f,"
			       "\"finalize_s\":%.3f}\n",
			       (double)ph.read_ns / 1e9, (double)ph.post_ns / 1e9, (double)ph.finalize_ns / 1e9);
	}
	fs_rm_rf(dir);
	return rc ? 1 : 0;
}
