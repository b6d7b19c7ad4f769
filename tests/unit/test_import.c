/* tests/unit/test_import.c — import/: no event is merged with another. Kineto writes µs with three
 * decimals, so two calls of one operator on one thread can have the same start, duration and name:
 * each stays its own row (its arguments too), and the count the import prints is the rows stored. */
#include "import/import.h"
#include "db/db.h"
#include "common/common.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-imptest-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(import, .init = mk_tmp, .fini = rm_tmp);

static int64_t scalar(const char *path, const char *sql)
{
	sqlite3 *h;
	sqlite3_stmt *s;
	cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", sql, sqlite3_errmsg(h));
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return v;
}

/* Exact duplicates: three identical aten::zeros (one with other arguments), two identical kernels
 * on one stream, identical steps; every one of them is a row, and so is each one's arguments. */
Test(import, exact_duplicates_are_all_kept)
{
	char in[256], out[256], msg[256];
	snprintf(in, sizeof in, "%s/dups.json", tmpdir);
	snprintf(out, sizeof out, "%s/dups.db", tmpdir);
	snprintf(msg, sizeof msg, "%s/msgs.txt", tmpdir);
	FILE *f = fopen(in, "w");
	cr_assert_not_null(f);
	fputs("{\"traceEvents\": [\n"
	      " {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":50},\n"
	      " {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::zeros\",\"pid\":1,\"tid\":1,\"ts\":101.001,\"dur\":2.5,"
	      "\"args\":{\"External id\":1}},\n"
	      " {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::zeros\",\"pid\":1,\"tid\":1,\"ts\":101.001,\"dur\":2.5,"
	      "\"args\":{\"External id\":2}},\n"
	      " {\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::zeros\",\"pid\":1,\"tid\":1,\"ts\":101.001,\"dur\":2.5,"
	      "\"args\":{\"External id\":1}},\n"
	      " {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":110,\"dur\":3,"
	      "\"args\":{\"device\":0,\"stream\":7}},\n"
	      " {\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":110,\"dur\":3,"
	      "\"args\":{\"device\":0,\"stream\":7}},\n"
	      " {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":100,\"dur\":50}\n"
	      "]}\n",
	      f);
	fclose(f);
	FILE *m = fopen(msg, "w+");
	cr_assert_not_null(m);
	struct imp_opts o = { .out_path = out, .rank = -1, .msgs = m };
	const char *inputs[] = { in };
	cr_assert_eq(imp_run(&o, inputs, 1), 0, "%s", ascent_errmsg());
	rewind(m);
	char line[512], *said = NULL;
	while (fgets(line, sizeof line, m))
		if (strstr(line, "events of"))
			said = strdup(line);
	fclose(m);
	cr_assert_eq(scalar(out, "SELECT count(*) FROM event"), 7);
	cr_assert_eq(scalar(out, "SELECT count(*) FROM event e JOIN string s ON s.id = e.name_id WHERE s.value = 'aten::zeros'"), 3);
	cr_assert_eq(scalar(out, "SELECT count(*) FROM event WHERE kind = 11"), 2);
	cr_assert_eq(scalar(out, "SELECT count(*) FROM event WHERE kind = 3"), 2);
	cr_assert_eq(scalar(out, "SELECT count(*) FROM arg"), 5);
	cr_assert_eq(scalar(out, "SELECT count(*) FROM arg a JOIN event e USING (rank, start_ns, tid, kind, name_id, dur_ns, ord)"), 5,
		     "each argument row belongs to its own event");
	cr_assert_eq(scalar(out, "SELECT count(*) FROM arg WHERE json_extract(args, '$.\"External id\"') = 2"), 1);
	cr_assert_eq(scalar(out, "SELECT sum(count) FROM op_stat WHERE rank = -1 AND kind = 0"), 3);
	cr_assert_eq(scalar(out, "SELECT value FROM meta WHERE key = 'import_events'"), 7);
	cr_assert_not_null(said, "no summary line");
	cr_assert(!strncmp(said, "import: 7 events of 1 rank", 26), "the import said: %s", said);
	free(said);
}

/* The host in a tensorboard_trace_handler file name: only a trailing "_<digits>" of the worker is its
 * pid; dots and underscores of the host stay; names of other forms give none. */
Test(import, kineto_host_from_name)
{
	static const struct {
		const char *path, *host;   /* host NULL: no match */
	} C[] = {
		{ "node0003_4037.1682725897226.pt.trace.json", "node0003" },
		{ "/a/b/node-1.cluster.local_12.1682725897226.pt.trace.json.gz", "node-1.cluster.local" },
		{ "gpu_node_7_4037.1702725897226123456.pt.trace.json", "gpu_node_7" },
		{ "host_a_b_1.1682725897226.pt.trace.json", "host_a_b" },
		{ "kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz", NULL },   /* no _pid */
		{ "cpu_only__rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz", NULL },   /* a 4-digit "timestamp" */
		{ "node0003_4037.1682725897226.json", NULL },
		{ "_4037.1682725897226.pt.trace.json", NULL },                     /* no host before the pid */
		{ "node0003_.1682725897226.pt.trace.json", NULL },
		{ "node0003_12345678901.1682725897226.pt.trace.json", NULL },     /* 11 digits: no pid */
		{ "node0003_4037.pt.trace.json", NULL },
	};
	for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
		char h[64] = "";
		int got = imp_kineto_host_from_name(C[i].path, h, sizeof h);
		cr_assert_eq(got, C[i].host != NULL, "%s: %d", C[i].path, got);
		if (C[i].host)
			cr_assert_str_eq(h, C[i].host, "%s", C[i].path);
	}
	char small[4];
	cr_assert_eq(imp_kineto_host_from_name("node0003_4037.1682725897226.pt.trace.json", small, sizeof small), 0,
		     "a host longer than the buffer is refused, not cut");
}

/* Every row of table t of a (main) missing from b (attached as "b"), and the other way round. */
static int64_t rows_apart(sqlite3 *h, const char *t)
{
	char *sql = sqlite3_mprintf("SELECT (SELECT count(*) FROM (SELECT * FROM main.\"%w\" EXCEPT SELECT * FROM b.\"%w\"))"
				    " + (SELECT count(*) FROM (SELECT * FROM b.\"%w\" EXCEPT SELECT * FROM main.\"%w\"))"
				    " + abs((SELECT count(*) FROM main.\"%w\") - (SELECT count(*) FROM b.\"%w\"))",
				    t, t, t, t, t, t);
	sqlite3_stmt *s;
	cr_assert_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK, "%s: %s", t, sqlite3_errmsg(h));
	sqlite3_free(sql);
	cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
	int64_t v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	return v;
}

/* The import's finish on three connections (db_finalize_view: the statistics, the device tables, the
 * summary tables of the nesting-order pass, each built on its own, written into the file one after
 * the other) gives the same file as db_finalize then db_view_prepare on one: the same tables and
 * indexes, every row of every table (the planner's statistics sqlite_stat1 included: PRAGMA optimize
 * analyzes the tables the connection's earlier queries used, so the statistics' connection runs
 * nothing but db_finalize's), on three real traces (one GPU rank of a DDP job, a sampled rank of a
 * 128-rank job, ResNet-50 on two devices). Only the times of creation (meta's and run's created_utc)
 * may differ. */
Test(import, finish_on_three_connections_equals_one)
{
	static const char *const traces[] = {
		"tests/fixtures/kineto/nccl_parser_config__nccl_data.json.gz",
		"tests/fixtures/kineto/trace_filter__sampled_rank-0.json.gz",
		"tests/fixtures/kineto/kineto_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
	};
	const char *root = getenv("ASCENT_ROOT") ? getenv("ASCENT_ROOT") : ".";
	for (size_t i = 0; i < sizeof traces / sizeof traces[0]; i++) {
		char in[4096], two[256], one[256];
		snprintf(in, sizeof in, "%s/%s", root, traces[i]);
		snprintf(two, sizeof two, "%s/two-%zu.db", tmpdir, i);
		snprintf(one, sizeof one, "%s/one-%zu.db", tmpdir, i);
		const char *inputs[] = { in };
		struct imp_opts o = { .out_path = two, .rank = -1, .quiet = 1 };
		cr_assert_eq(imp_run(&o, inputs, 1), 0, "%s", ascent_errmsg());
		o.out_path = one;
		o.no_view_tables = 1;   /* db_finalize alone */
		cr_assert_eq(imp_run(&o, inputs, 1), 0, "%s", ascent_errmsg());
		struct db *db;
		int built = 0;
		cr_assert_eq(db_open(one, DB_UPDATE, &db), 0, "%s", ascent_errmsg());
		cr_assert_eq(db_view_prepare(db, &built), 0, "%s", ascent_errmsg());
		cr_assert(built);
		db_close(db);

		sqlite3 *h;
		cr_assert_eq(sqlite3_open_v2(two, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
		char *att = sqlite3_mprintf("ATTACH %Q AS b", one);
		cr_assert_eq(sqlite3_exec(h, att, NULL, NULL, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
		sqlite3_free(att);
		const char *same_schema = "SELECT count(*) FROM (SELECT type, name, tbl_name FROM main.sqlite_master EXCEPT"
					  " SELECT type, name, tbl_name FROM b.sqlite_master)";
		sqlite3_stmt *s;
		cr_assert_eq(sqlite3_prepare_v2(h, same_schema, -1, &s, NULL), SQLITE_OK, "%s", sqlite3_errmsg(h));
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		cr_assert_eq(sqlite3_column_int64(s, 0), 0, "%s: a table or index of one file is not in the other", traces[i]);
		sqlite3_finalize(s);
		cr_assert_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM main.sqlite_master", -1, &s, NULL), SQLITE_OK);
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		int64_t nobj = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		cr_assert_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM b.sqlite_master", -1, &s, NULL), SQLITE_OK);
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		cr_assert_eq(sqlite3_column_int64(s, 0), nobj, "%s: the files hold different numbers of tables", traces[i]);
		sqlite3_finalize(s);
		cr_assert_eq(sqlite3_prepare_v2(h, "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name != 'meta'"
					       " AND name != 'run' ORDER BY name", -1, &s, NULL), SQLITE_OK);
		int tables = 0, views = 0;
		while (sqlite3_step(s) == SQLITE_ROW) {
			const char *t = (const char *)sqlite3_column_text(s, 0);
			cr_assert_eq(rows_apart(h, t), 0, "%s: table %s differs", traces[i], t);
			tables++;
			views += !strncmp(t, "view_", 5);
		}
		sqlite3_finalize(s);
		cr_assert(views >= 19 && tables > views, "%s: %d tables, %d of the viewer", traces[i], tables, views);
		cr_assert_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM (SELECT id, command_line, config_json, world_size FROM"
					       " main.run EXCEPT SELECT id, command_line, config_json, world_size FROM b.run)",
					       -1, &s, NULL), SQLITE_OK);
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		cr_assert_eq(sqlite3_column_int64(s, 0), 0, "%s: run differs", traces[i]);
		sqlite3_finalize(s);
		cr_assert_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM (SELECT * FROM main.meta WHERE key != 'created_utc'"
					       " EXCEPT SELECT * FROM b.meta)", -1, &s, NULL), SQLITE_OK);
		cr_assert_eq(sqlite3_step(s), SQLITE_ROW);
		cr_assert_eq(sqlite3_column_int64(s, 0), 0, "%s: meta differs", traces[i]);
		sqlite3_finalize(s);
		sqlite3_close(h);
	}
}
