/* tests/unit/test_import_npu.c — torch_npu's tables and folders (import/npu.h): the collective type
 * from an HCCL operator name, the device task table, the link table, and the folder layout
 * (which trace of a rank folder is read, the summaries counted, the rank from profiler_info_N.json),
 * each against cases written out by hand. */
#include "import/npu.h"

#include "common/common.h"
#include "db/db.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-npu-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(import_npu, .init = mk_tmp, .fini = rm_tmp);

static void coll(const char *in, const char *want)
{
	char out[64];
	npu_collective_type(in, out, sizeof out);
	cr_assert_str_eq(out, want, "%s → %s, want %s", in, out, want);
}

Test(import_npu, collective_type)
{
	coll("hcom_allReduce__586_0_1", "hcom_allReduce_");
	coll("hcom_broadcast__210_3_1", "hcom_broadcast_");
	coll("hcom_allGather__1_22_333", "hcom_allGather_");
	coll("hcom_allReduce_", "hcom_allReduce_");          /* already a type */
	coll("hcom_allReduce__586_0", "hcom_allReduce__586_0"); /* two groups only: unchanged */
	coll("_1_2_3", "_1_2_3");                             /* nothing left: unchanged */
	coll("", "");
	char small[6];
	npu_collective_type("hcom_allReduce__586_0_1", small, sizeof small);
	cr_assert_str_eq(small, "hcom_");                     /* cut to fit, terminated */
}

Test(import_npu, task_kinds)
{
	int known;
	cr_assert_eq(npu_task_kind("MatMulV2", "AI_CORE", &known), DB_KIND_KERNEL);
	cr_assert(known);
	cr_assert_eq(npu_task_kind("x", "MIX_AIV", &known), DB_KIND_KERNEL);
	cr_assert_eq(npu_task_kind("MEMCPY_ASYNC", "SDMA_SQE", &known), DB_KIND_MEMCPY);
	cr_assert_eq(npu_task_kind("MEMCPY_ASYNC", "Other", &known), DB_KIND_MEMCPY);   /* by name first */
	cr_assert_eq(npu_task_kind("Notify Wait", "Notify Wait", &known), DB_KIND_RANGE);
	cr_assert_eq(npu_task_kind("SDMA", "SDMA", &known), DB_KIND_RANGE);
	cr_assert_eq(npu_task_kind("Write Value", "Write Value", &known), DB_KIND_RANGE);
	cr_assert_eq(npu_task_kind("EVENT_WAIT", "EVENT_WAIT_SQE", &known), DB_KIND_RANGE);
	cr_assert(known);
	cr_assert_eq(npu_task_kind("new", "FUTURE_SQE", &known), DB_KIND_KERNEL);
	cr_assert(!known);
	cr_assert_eq(npu_task_kind("new", NULL, &known), DB_KIND_KERNEL);
	cr_assert(!known);
	cr_assert(npu_db_task_is_copy("MEMCPY_ASYNC"));
	cr_assert(!npu_db_task_is_copy("SDMA"));
	cr_assert(!npu_db_task_is_copy("FUTURE_SQE"));
	cr_assert(!npu_db_task_is_copy(NULL));
}

Test(import_npu, processes_and_links)
{
	cr_assert_eq(npu_process("Overlap Analysis")->lane, NPU_LANE_NONE);
	cr_assert_eq(npu_process("Overlap Analysis")->skip, IMP_W_DERIVED);
	cr_assert(npu_process("Ascend Hardware")->by_task_type);
	cr_assert(npu_process("Python")->by_category);
	cr_assert(!npu_process_is_npu(npu_process("Python")));   /* others name a process Python too */
	cr_assert(npu_process_is_npu(npu_process("CANN")));
	cr_assert_null(npu_process("python"));
	cr_assert_null(npu_process(NULL));
	cr_assert_eq(npu_flow_kind("HostToDevice"), DB_FLOW_LAUNCH);
	cr_assert_eq(npu_flow_kind("async_npu"), -1);
	cr_assert_eq(npu_flow_kind("ac2g"), -2);
	cr_assert_eq(npu_dtype_size("BFP16"), 2);
	cr_assert_eq(npu_dtype_size("fp32"), 4);
	cr_assert_eq(npu_dtype_size("INVALID_TYPE"), 0);
}

static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
	char *sl = strrchr(path, '/');
	*sl = 0;
	cr_assert_eq(fs_mkdir_p(path), 0);
	*sl = '/';
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(text, f);
	fclose(f);
}

static int inputs(const char *rel, char ***files, int *skipped, char **first)
{
	char path[512];
	int n;
	snprintf(path, sizeof path, "%s/%s", tmpdir, rel);
	cr_assert_eq(npu_dir_inputs(path, files, &n, skipped, first), 0, "%s", ascent_errmsg());
	return n;
}

static void free_list(char **files, int n, char *first)
{
	for (int i = 0; i < n; i++)
		free(files[i]);
	free(files);
	free(first);
}

Test(import_npu, folders)
{
	put("job/r1_ascend_pt/profiler_info_1.json", "{\"rank_id\": 1}");
	put("job/r1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", "[]");
	put("job/r1_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv", "a");
	put("job/r1_ascend_pt/ASCEND_PROFILER_OUTPUT/communication.json", "{}");
	put("job/r0_ascend_pt/profiler_info_0.json", "{\"rank_id\": 0}");
	put("job/r0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db", "");
	put("job/r0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db-wal", "");
	put("job/r0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", "[]");   /* both exports: the database */
	put("job/r0_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db", "");
	put("job/notes.txt", "x");
	char **files, *first;
	int skipped;
	int n = inputs("job", &files, &skipped, &first);
	cr_assert_eq(n, 2);
	cr_assert(strstr(files[0], "r0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db") && !strstr(files[0], "-wal"));
	cr_assert(strstr(files[1], "r1_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json"));
	cr_assert_eq(skipped, 4, "%d", skipped);   /* analysis.db, r0's trace_view.json, the CSV, communication.json */
	cr_assert(strstr(first, "analysis.db"));
	cr_assert_eq(npu_dir_rank(files[0]), 0);
	cr_assert_eq(npu_dir_rank(files[1]), 1);
	free_list(files, n, first);

	cr_assert_eq(inputs("job/r1_ascend_pt", &files, &skipped, &first), 1);   /* a rank folder */
	cr_assert_eq(skipped, 2);
	free_list(files, 1, first);
	cr_assert_eq(inputs("job/r1_ascend_pt/ASCEND_PROFILER_OUTPUT", &files, &skipped, &first), 1);
	free_list(files, 1, first);

	put("plain/a.json", "[]");   /* not torch_npu's: nothing, the caller lists it */
	cr_assert_eq(inputs("plain", &files, &skipped, &first), 0);
	cr_assert_eq(skipped, 0);
	cr_assert_null(first);
	free_list(files, 0, first);

	put("unparsed_ascend_pt/ASCEND_PROFILER_OUTPUT/x.csv", "a");   /* no trace: an error naming it */
	char path[512];
	int m, sk;
	snprintf(path, sizeof path, "%s/unparsed_ascend_pt", tmpdir);
	cr_assert_eq(npu_dir_inputs(path, &files, &m, &sk, &first), ASCENT_EINPUT);
	cr_assert(strstr(ascent_errmsg(), "neither ascend_pytorch_profiler_N.db nor trace_view.json"), "%s", ascent_errmsg());

	/* the rank: rank_id, else the N of the name; none outside a rank folder */
	put("n_ascend_pt/profiler_info_7.json", "{\"rank_id\": -1}");
	put("n_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", "[]");
	snprintf(path, sizeof path, "%s/n_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", tmpdir);
	cr_assert_eq(npu_dir_rank(path), 7);
	put("bad_ascend_pt/profiler_info.json", "not json");
	put("bad_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", "[]");
	snprintf(path, sizeof path, "%s/bad_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", tmpdir);
	cr_assert_eq(npu_dir_rank(path), -1);
	snprintf(path, sizeof path, "%s/plain/a.json", tmpdir);
	cr_assert_eq(npu_dir_rank(path), -1);
	cr_assert_eq(npu_dir_rank("ASCEND_PROFILER_OUTPUT/trace_view.json"), -1);   /* "." has no profiler_info */
	cr_assert_eq(npu_dir_rank("trace_view.json"), -1);
}
