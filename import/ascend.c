/* import/ascend.c — the Ascend source: `ascend_pytorch_profiler_{rank}.db`, the SQLite database
 * torch_npu.profiler writes (tables as the CANN profiling documentation publishes them; names are
 * ids into STRING_IDS, times ns of Unix time). One file per rank. docs/import.md has the mapping
 * and says what it was tested on. */
#include "import/import.h"
#include "import/npu.h"

#include "common/common.h"
#include "db/db.h"
#include "import/sqlsrc.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Lanes: CPU threads by globalTid (high 32 bits pid, low 32 tid); device streams by device and
 * stream; the collectives (COMMUNICATION_OP has no stream) on one lane of the rank's device. */
#define KEY_DEVICE (1ULL << 63)
#define KEY_STEPS (1ULL << 62)
#define HCCL_STREAM 0xfffff   /* the collectives' lane (not a stream id of the device) */

static uint64_t device_key(int64_t device, int64_t stream)
{
	return KEY_DEVICE | ((uint64_t)device & 0xffff) << 24 | ((uint64_t)stream & 0xffffff);
}

struct asc {
	struct sqlsrc s;
	int device;            /* the rank's device (RANK_DEVICE_MAP, else the first task's) */
	/* read_connections' walk over the operators of one relation id */
	int64_t rel;           /* the relation id of the rows seen last (−1 none) */
	int has_fwd;           /* the forward operator of that id is known: */
	int64_t fwd_start;
	uint64_t fwd_key;
	int64_t links;         /* links made (their ids) */
};

/* HcclDataType ids, for a file without ENUM_HCCL_DATA_TYPE */
static const char *dtype_by_id(int64_t id)
{
	static const char *const N[] = { "INT8", "INT16", "INT32", "FP16", "FP32", "INT64", "UINT64",
					 "UINT8", "UINT16", "UINT32", "FP64", "BFP16", "INT128" };
	return id >= 0 && id < (int64_t)(sizeof N / sizeof *N) ? N[id] : NULL;
}

static int device_lane(struct asc *a, int64_t device, int64_t stream, int *tid)
{
	if (device < 0 || device > 0xffff || stream < 0 || stream > 0xffffff)
		return 1;
	return imp_lane(a->s.im, device_key(device, stream), (int)device, (int)stream, 0, tid);
}

/* JSON string body: printable ASCII, quotes and backslashes escaped, cut to fit */
static void json_str(char *out, size_t cap, const char *in)
{
	size_t j = 0;
	for (const char *p = in ? in : ""; *p && j + 3 < cap; p++) {
		unsigned char ch = (unsigned char)*p;
		if (ch == '"' || ch == '\\') {
			out[j++] = '\\';
			out[j++] = (char)ch;
		} else if (ch >= 0x20 && ch < 0x7f) {
			out[j++] = (char)ch;
		}
	}
	out[j] = 0;
}

/* ---- device tasks: TASK with COMPUTE_TASK_INFO (kernels) or COMMUNICATION_TASK_INFO (transfers) ---- */

/* CANN_API calls link to the tasks they launched by connectionId (both tables have it) */
static int cann_links(struct sqlsrc *s)
{
	return sqlsrc_has_table(s, "CANN_API") && sqlsrc_has_column(s, "CANN_API", "connectionId") &&
	       sqlsrc_has_column(s, "TASK", "connectionId");
}

/* columns: start, end, deviceId, streamId, task type, compute name, op type, block dim, input shapes,
 * output shapes, comm task name (its HCCL task type, else its name), src rank, dst rank, size,
 * transport, link type, link id (the connectionId when a CANN_API call has it), comm task's
 * operator name */
static int task_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	struct asc *a = arg;
	int64_t start, dur;
	if (sqlsrc_row_time(s, st, 0, "TASK", &start, &dur))
		return 0;
	int tid;
	int rc = device_lane(a, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), &tid);
	if (rc > 0) {
		sqlsrc_warn_row(s, IMP_W_BAD_TYPE, "TASK");
		return 0;
	}
	if (rc)
		return rc;
	char args[1500], e1[300], e2[300], e3[300];
	struct imp_event e = { .kind = DB_KIND_RANGE, .tid = tid, .start_ns = start, .dur_ns = dur, .step = -1 };
	int len = 0;
	if (!sqlsrc_is_null(st, 5)) {   /* a compute task: a kernel */
		e.kind = DB_KIND_KERNEL;
		e.name = sqlsrc_text(st, 5);
		json_str(e1, sizeof e1, sqlsrc_text(st, 6));
		json_str(e2, sizeof e2, sqlsrc_text(st, 8));
		json_str(e3, sizeof e3, sqlsrc_text(st, 9));
		len = snprintf(args, sizeof args,
			       "{\"op type\": \"%s\", \"block dim\": %lld, \"input shapes\": \"%s\", \"output shapes\": \"%s\"}",
			       e1, (long long)sqlite3_column_int64(st, 7), e2, e3);
	} else if (!sqlsrc_is_null(st, 10)) {   /* a communication task (one link of a collective) */
		e.name = sqlsrc_text(st, 10);
		json_str(e1, sizeof e1, sqlsrc_text(st, 14));
		json_str(e2, sizeof e2, sqlsrc_text(st, 15));
		json_str(e3, sizeof e3, sqlsrc_text(st, 17));
		len = snprintf(args, sizeof args,
			       "{\"op name\": \"%s\", \"src rank\": %lld, \"dst rank\": %lld, \"size\": %lld, \"transport\": \"%s\", \"link type\": \"%s\"}",
			       e3, (long long)sqlite3_column_int64(st, 11), (long long)sqlite3_column_int64(st, 12),
			       (long long)sqlite3_column_int64(st, 13), e1, e2);
	} else {   /* another task (a copy, an event record, ...): named by its type */
		e.name = sqlsrc_text(st, 4);
		if (npu_db_task_is_copy(e.name))
			e.kind = DB_KIND_MEMCPY;
	}
	if (!e.name || !*e.name) {
		sqlsrc_warn_row(s, IMP_W_NO_NAME, "TASK");
		return 0;
	}
	if (len > 0 && (size_t)len < sizeof args) {
		e.args = args;
		e.args_len = (size_t)len;
	}
	rc = imp_event(s->im, &e);
	if (!rc && !sqlsrc_is_null(st, 16))   /* the end of the launch link from its CANN_API call */
		rc = imp_flow(s->im, DB_FLOW_LAUNCH, sqlite3_column_int64(st, 16), 0,
			      device_key(sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)), start);
	return rc;
}

/* ---- CANN API calls: CANN_API ---- */

/* columns: start, end, globalTid, name, link id (the connectionId when a task has it) */
static int cann_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	(void)arg;
	int64_t start, dur;
	if (sqlsrc_row_time(s, st, 0, "CANN_API", &start, &dur))
		return 0;
	const char *name = sqlsrc_text(st, 3);
	if (!name || !*name) {
		sqlsrc_warn_row(s, IMP_W_NO_NAME, "CANN_API");
		return 0;
	}
	int64_t gtid = sqlite3_column_int64(st, 2);
	uint64_t key = (uint64_t)gtid & ~(3ULL << 62);   /* the thread's lane, as for PYTORCH_API */
	int tid;
	int rc = imp_lane(s->im, key, -1, 0, gtid & 0xffffffff, &tid);
	struct imp_event e = { .kind = DB_KIND_RANGE, .tid = tid, .start_ns = start, .dur_ns = dur, .name = name, .step = -1 };
	if (!rc)
		rc = imp_event(s->im, &e);
	if (!rc && !sqlsrc_is_null(st, 4))   /* the start of the launch link to its tasks */
		rc = imp_flow(s->im, DB_FLOW_LAUNCH, sqlite3_column_int64(st, 4), 1, key, start);
	return rc;
}

/* CANN API calls (aclnn…, launch, memcpy: the host side of the tasks): ranges on their thread, and
 * a launch link to every task with the same connectionId (as Kineto's launch → kernel links). */
static int read_cann(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	const char *t = "CANN_API";
	static const char *const need[] = { "startNs", "endNs", "globalTid", "name", NULL };
	int rc = 0;
	if (!sqlsrc_use_table(s, t, need, &rc))
		return rc;   /* absent: no such events; a column missing: the error */
	char sql[600];
	snprintf(sql, sizeof sql,
		 "SELECT c.startNs, c.endNs, c.globalTid, n.value, %s FROM CANN_API c LEFT JOIN STRING_IDS n ON n.id = c.name",
		 cann_links(s) ? "CASE WHEN c.connectionId IN (SELECT connectionId FROM TASK WHERE connectionId IS NOT NULL)"
				 " THEN c.connectionId END"
			       : "NULL");
	return sqlsrc_each_row(s, t, sql, -1, cann_row, a);
}

static int read_tasks(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	if (!sqlsrc_has_table(s, "TASK"))
		return 0;
	static const char *const need[] = { "startNs", "endNs", "deviceId", "streamId", "globalTaskId", NULL };
	int rc = sqlsrc_need_columns(s, "TASK", need);
	if (rc)
		return rc;
	int compute = sqlsrc_has_table(s, "COMPUTE_TASK_INFO"), comm = sqlsrc_has_table(s, "COMMUNICATION_TASK_INFO");
	static const char *const cneed[] = { "globalTaskId", "name", NULL };
	if ((compute && (rc = sqlsrc_need_columns(s, "COMPUTE_TASK_INFO", cneed)) != 0) ||
	    (comm && (rc = sqlsrc_need_columns(s, "COMMUNICATION_TASK_INFO", cneed)) != 0))
		return rc;
	int link_enum = comm && sqlsrc_has_table(s, "ENUM_HCCL_LINK_TYPE");
	int transport_enum = comm && sqlsrc_has_table(s, "ENUM_HCCL_TRANSPORT_TYPE");
	char sql[3000];
	snprintf(sql, sizeof sql,
		 "SELECT t.startNs, t.endNs, t.deviceId, t.streamId, tt.value, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s "
		 "FROM TASK t LEFT JOIN STRING_IDS tt ON tt.id = t.taskType %s %s",
		 compute ? "(SELECT value FROM STRING_IDS WHERE id = c.name)" : "NULL",
		 compute && sqlsrc_has_column(s, "COMPUTE_TASK_INFO", "opType") ? "(SELECT value FROM STRING_IDS WHERE id = c.opType)" : "NULL",
		 compute ? sqlsrc_col_or_null(s, "COMPUTE_TASK_INFO", "blockDim") : "NULL",
		 compute && sqlsrc_has_column(s, "COMPUTE_TASK_INFO", "inputShapes") ? "(SELECT value FROM STRING_IDS WHERE id = c.inputShapes)" : "NULL",
		 compute && sqlsrc_has_column(s, "COMPUTE_TASK_INFO", "outputShapes") ? "(SELECT value FROM STRING_IDS WHERE id = c.outputShapes)" : "NULL",
		 !comm ? "NULL"
		 : sqlsrc_has_column(s, "COMMUNICATION_TASK_INFO", "taskType")
			 ? "CASE WHEN m.globalTaskId IS NOT NULL THEN COALESCE((SELECT value FROM STRING_IDS WHERE id = m.taskType),"
			   " (SELECT value FROM STRING_IDS WHERE id = m.name), '') END"
			 : "(SELECT value FROM STRING_IDS WHERE id = m.name)",
		 comm ? sqlsrc_col_or_null(s, "COMMUNICATION_TASK_INFO", "srcRank") : "NULL",
		 comm ? sqlsrc_col_or_null(s, "COMMUNICATION_TASK_INFO", "dstRank") : "NULL",
		 comm ? sqlsrc_col_or_null(s, "COMMUNICATION_TASK_INFO", "size") : "NULL",
		 transport_enum && sqlsrc_has_column(s, "COMMUNICATION_TASK_INFO", "transportType")
			 ? "(SELECT name FROM ENUM_HCCL_TRANSPORT_TYPE WHERE id = m.transportType)" : "NULL",
		 link_enum && sqlsrc_has_column(s, "COMMUNICATION_TASK_INFO", "linkType")
			 ? "(SELECT name FROM ENUM_HCCL_LINK_TYPE WHERE id = m.linkType)" : "NULL",
		 cann_links(s) ? "CASE WHEN t.connectionId IN (SELECT connectionId FROM CANN_API) THEN t.connectionId END" : "NULL",
		 comm ? "(SELECT value FROM STRING_IDS WHERE id = m.name)" : "NULL",
		 compute ? "LEFT JOIN COMPUTE_TASK_INFO c ON c.globalTaskId = t.globalTaskId" : "",
		 comm ? "LEFT JOIN COMMUNICATION_TASK_INFO m ON m.globalTaskId = t.globalTaskId" : "");
	return sqlsrc_each_row(s, "TASK", sql, -1, task_row, a);
}

/* ---- collectives: COMMUNICATION_OP ---- */

/* columns: start, end, op type, op name, group, count, data type name, data type id, alg type */
static int comm_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	struct asc *a = arg;
	int64_t start, dur;
	if (sqlsrc_row_time(s, st, 0, "COMMUNICATION_OP", &start, &dur))
		return 0;
	/* named by opType ("hcom_allReduce_"); Level0 writes it as "N/A": then the type from opName */
	const char *name = sqlsrc_text(st, 2), *op = sqlsrc_text(st, 3);
	char type[256];
	if ((!name || !*name || !strcmp(name, "N/A")) && op && *op) {
		npu_collective_type(op, type, sizeof type);
		name = type;
	}
	if (!name || !*name) {
		sqlsrc_warn_row(s, IMP_W_NO_NAME, "COMMUNICATION_OP");
		return 0;
	}
	int tid;
	int rc = device_lane(a, a->device, HCCL_STREAM, &tid);
	if (rc)
		return rc > 0 ? 0 : rc;
	const char *dtype = sqlsrc_text(st, 6);
	if (!dtype && !sqlsrc_is_null(st, 7))
		dtype = dtype_by_id(sqlite3_column_int64(st, 7));
	int64_t count = sqlite3_column_int64(st, 5);
	int size = npu_dtype_size(dtype);
	struct imp_collective coll = { .group = sqlsrc_text(st, 4), .peer = -1,
				       .bytes = count > 0 && size > 0 && count < INT64_MAX / 16 ? count * size : 0 };
	char args[900], e1[300], e2[100], e3[100];
	json_str(e1, sizeof e1, sqlsrc_text(st, 3));
	json_str(e2, sizeof e2, dtype);
	json_str(e3, sizeof e3, sqlsrc_text(st, 8));
	int len = snprintf(args, sizeof args, "{\"op name\": \"%s\", \"count\": %lld, \"data type\": \"%s\", \"algorithm\": \"%s\"}",
			   e1, (long long)count, e2, e3);
	struct imp_event e = { .kind = DB_KIND_COMM, .tid = tid, .start_ns = start, .dur_ns = dur, .name = name,
			       .step = -1, .coll = &coll, .args = args, .args_len = (size_t)len };
	return imp_event(s->im, &e);
}

static int read_comm(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	const char *t = "COMMUNICATION_OP";
	static const char *const need[] = { "startNs", "endNs", "opName", "groupName", NULL };
	int rc = 0;
	if (!sqlsrc_use_table(s, t, need, &rc))
		return rc;   /* absent: no such events; a column missing: the error */
	int enum_dt = sqlsrc_has_table(s, "ENUM_HCCL_DATA_TYPE") && sqlsrc_has_column(s, t, "dataType");
	char sql[1500];
	snprintf(sql, sizeof sql,
		 "SELECT o.startNs, o.endNs, %s, n.value, g.value, %s, %s, %s, %s FROM COMMUNICATION_OP o "
		 "LEFT JOIN STRING_IDS n ON n.id = o.opName LEFT JOIN STRING_IDS g ON g.id = o.groupName ORDER BY o.startNs",
		 sqlsrc_has_column(s, t, "opType") ? "(SELECT value FROM STRING_IDS WHERE id = o.opType)" : "NULL",
		 sqlsrc_col_or_null(s, t, "count"),
		 enum_dt ? "(SELECT name FROM ENUM_HCCL_DATA_TYPE WHERE id = o.dataType)" : "NULL",
		 sqlsrc_col_or_null(s, t, "dataType"),
		 sqlsrc_has_column(s, t, "algType") ? "(SELECT value FROM STRING_IDS WHERE id = o.algType)" : "NULL");
	return sqlsrc_each_row(s, t, sql, -1, comm_row, a);
}

/* ---- CPU operators: PYTORCH_API ---- */

/* N of "ProfilerStep#N", −1 for any other name. */
static int64_t profiler_step(const char *name)
{
	if (strncmp(name, "ProfilerStep#", 13) || name[13] < '0' || name[13] > '9')
		return -1;
	char *end;
	errno = 0;
	long long v = strtoll(name + 13, &end, 10);
	return *end || errno ? -1 : v;
}

/* columns: start, end, globalTid, name, api type name, input shapes, input dtypes */
static int api_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	(void)arg;
	int64_t start, dur;
	if (sqlsrc_row_time(s, st, 0, "PYTORCH_API", &start, &dur))
		return 0;
	const char *name = sqlsrc_text(st, 3);
	if (!name || !*name) {
		sqlsrc_warn_row(s, IMP_W_NO_NAME, "PYTORCH_API");
		return 0;
	}
	int64_t gtid = sqlite3_column_int64(st, 2);
	int tid;
	int rc = imp_lane(s->im, (uint64_t)gtid & ~(3ULL << 62), -1, 0, gtid & 0xffffffff, &tid);
	if (rc)
		return rc;
	const char *type = sqlsrc_text(st, 4);
	char args[1000], e1[450], e2[450];
	json_str(e1, sizeof e1, sqlsrc_text(st, 5));
	json_str(e2, sizeof e2, sqlsrc_text(st, 6));
	int len = snprintf(args, sizeof args, "{\"Input Dims\": \"%s\", \"Input type\": \"%s\"}", e1, e2);
	struct imp_event e = { .kind = !type || !strcmp(type, "op") ? DB_KIND_OP : DB_KIND_RANGE, .tid = tid,
			       .start_ns = start, .dur_ns = dur, .name = name, .step = -1, .args = args,
			       .args_len = (size_t)len };
	int64_t step = profiler_step(name);
	if (step >= 0) {   /* the profiler's step range: the step, as Kineto's ProfilerStep#N */
		e.kind = DB_KIND_STEP;
		e.step = step;
	}
	return imp_event(s->im, &e);
}

static int read_api(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	const char *t = "PYTORCH_API";
	static const char *const need[] = { "startNs", "endNs", "globalTid", "name", NULL };
	int rc = 0;
	if (!sqlsrc_use_table(s, t, need, &rc))
		return rc;   /* absent: no such events; a column missing: the error */
	char sql[1200];
	/* startNs and endNs are TEXT columns in this table: compared as integers */
	snprintf(sql, sizeof sql,
		 "SELECT CAST(p.startNs AS INTEGER), CAST(p.endNs AS INTEGER), p.globalTid, n.value, %s, %s, %s "
		 "FROM PYTORCH_API p LEFT JOIN STRING_IDS n ON n.id = p.name",
		 sqlsrc_has_column(s, t, "type") && sqlsrc_has_table(s, "ENUM_API_TYPE")
			 ? "(SELECT name FROM ENUM_API_TYPE WHERE id = p.type)" : "NULL",
		 sqlsrc_has_column(s, t, "inputShapes") ? "(SELECT value FROM STRING_IDS WHERE id = p.inputShapes)" : "NULL",
		 sqlsrc_has_column(s, t, "inputDtypes") ? "(SELECT value FROM STRING_IDS WHERE id = p.inputDtypes)" : "NULL");
	return sqlsrc_each_row(s, t, sql, -1, api_row, a);
}

/* ---- operator links: CONNECTION_IDS ---- */

/* A row's start when its times are valid (what the event readers keep; they counted the others). */
static int valid_start(sqlite3_stmt *st, int i, int64_t *start)
{
	int64_t end;
	return !sqlsrc_time(st, i, start) && !sqlsrc_time(st, i + 1, &end) && *start >= 0 && end >= *start &&
	       end - *start <= IMP_MAX_NS;
}

/* columns: relation id, operator start, end, globalTid, its type name, CANN call start, end,
 * globalTid (NULL: no CANN call has this id); in relation id, start order */
static int connection_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	struct asc *a = arg;
	int64_t rel = sqlite3_column_int64(st, 0), start, call;
	if (rel != a->rel) {
		a->rel = rel;
		a->has_fwd = 0;
	}
	if (!valid_start(st, 1, &start))
		return 0;
	uint64_t key = (uint64_t)sqlite3_column_int64(st, 3) & ~(3ULL << 62);
	int rc = 0;
	if (!sqlsrc_is_null(st, 7)) {   /* torch-cann-task: the operator → the CANN call */
		if (valid_start(st, 5, &call)) {
			int64_t id = a->links++;
			rc = imp_flow(s->im, DB_FLOW_CALL, id, 1, key, start);
			if (!rc)
				rc = imp_flow(s->im, DB_FLOW_CALL, id, 0, (uint64_t)sqlite3_column_int64(st, 7) & ~(3ULL << 62), call);
		}
		return rc;
	}
	const char *type = sqlsrc_text(st, 4);
	if (type && strcmp(type, "op"))   /* task_queue (queue rows) and others: not kept */
		return 0;
	if (!a->has_fwd) {   /* fwd_bwd: the first operator of the id is the forward one */
		a->has_fwd = 1;
		a->fwd_start = start;
		a->fwd_key = key;
		return 0;
	}
	int64_t id = a->links++;
	rc = imp_flow(s->im, DB_FLOW_FWDBWD, id, 1, a->fwd_key, a->fwd_start);
	return rc ? rc : imp_flow(s->im, DB_FLOW_FWDBWD, id, 0, key, start);
}

/* PYTORCH_API.connectionId → CONNECTION_IDS.id → its relation ids (CONNECTION_IDS.connectionId):
 * one that a CANN_API call has is the operator's call into CANN (a link operator → call); one that
 * several operators share is a forward → backward pair (a link from the first to each later one);
 * queue rows (task_queue) are not linked. Only rows the event readers kept are linked. */
static int read_connections(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	const char *t = "CONNECTION_IDS";
	if (!sqlsrc_has_table(s, t) || !sqlsrc_has_table(s, "PYTORCH_API") ||
	    !sqlsrc_has_column(s, "PYTORCH_API", "connectionId"))
		return 0;
	static const char *const need[] = { "id", "connectionId", NULL };
	int rc = sqlsrc_need_columns(s, t, need);
	if (rc)
		return rc;
	int calls = sqlsrc_has_table(s, "CANN_API") && sqlsrc_has_column(s, "CANN_API", "connectionId");
	char sql[1600];
	snprintf(sql, sizeof sql,
		 "SELECT ci.connectionId, CAST(p.startNs AS INTEGER), CAST(p.endNs AS INTEGER), p.globalTid, %s, %s"
		 " FROM PYTORCH_API p JOIN STRING_IDS n ON n.id = p.name AND n.value <> ''"
		 " JOIN CONNECTION_IDS ci ON ci.id = p.connectionId%s"
		 " WHERE ci.connectionId IS NOT NULL ORDER BY ci.connectionId, 2, p.rowid",
		 sqlsrc_has_column(s, "PYTORCH_API", "type") && sqlsrc_has_table(s, "ENUM_API_TYPE")
			 ? "(SELECT name FROM ENUM_API_TYPE WHERE id = p.type)" : "NULL",
		 calls ? "x.startNs, x.endNs, x.globalTid" : "NULL, NULL, NULL",
		 calls ? " LEFT JOIN CANN_API x ON x.connectionId = ci.connectionId"
			 " AND x.name IN (SELECT id FROM STRING_IDS WHERE value <> '')" : "");
	a->rel = -1;
	a->has_fwd = 0;
	return sqlsrc_each_row(s, t, sql, -1, connection_row, a);
}

/* ---- steps: STEP_TIME ---- */

static int step_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	(void)arg;
	int64_t start, dur;
	if (sqlsrc_row_time(s, st, 1, "STEP_TIME", &start, &dur))
		return 0;
	int64_t id = sqlite3_column_int64(st, 0);
	if (sqlsrc_is_null(st, 0) || id < 0) {
		sqlsrc_warn_row(s, IMP_W_BAD_TYPE, "STEP_TIME");
		return 0;
	}
	if (sqlite3_column_int(st, 3)) {   /* PYTORCH_API's ProfilerStep#N is this step */
		sqlsrc_warn_row(s, IMP_W_DERIVED, "STEP_TIME");
		return 0;
	}
	int tid;
	int rc = imp_lane(s->im, KEY_STEPS, -1, 0, 0, &tid);
	if (!rc)
		rc = imp_lane_name(s->im, tid, "steps (STEP_TIME)");
	char name[40];
	snprintf(name, sizeof name, "ProfilerStep#%lld", (long long)id);
	struct imp_event e = { .kind = DB_KIND_STEP, .tid = tid, .start_ns = start, .dur_ns = dur, .name = name, .step = id };
	return rc ? rc : imp_event(s->im, &e);
}

/* ---- memory: MEMORY_RECORD of one component ---- */

/* The previous record of one device (rows come device by device, each in time order). */
struct mem_prev {
	int64_t device, alloc;
};

static int mem_row(struct sqlsrc *s, sqlite3_stmt *st, void *arg)
{
	struct mem_prev *p = arg;
	int64_t dev = sqlite3_column_int64(st, 2);
	if (dev != p->device)
		*p = (struct mem_prev){ .device = dev, .alloc = 0 };
	int64_t *prev = &p->alloc;
	int64_t ts = 0, alloc = sqlite3_column_int64(st, 1);
	if (sqlsrc_time(st, 0, &ts) || ts < 0 || alloc < 0 || alloc > IMP_MAX_BYTES) {
		sqlsrc_warn_row(s, IMP_W_BAD_TIME, "MEMORY_RECORD");
		return 0;
	}
	int rc = imp_mem(s->im, ts, alloc - *prev, alloc, dev >= 0 && dev < 65536 ? (int)dev : -1);
	*prev = alloc;
	return rc;
}

static int read_memory(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	const char *t = "MEMORY_RECORD";
	static const char *const need[] = { "component", "timestamp", "totalAllocated", "deviceId", NULL };
	int rc = 0;
	if (!sqlsrc_use_table(s, t, need, &rc))
		return rc;   /* absent: no such events; a column missing: the error */
	/* one allocator's view: PTA (torch_npu's caching allocator) when recorded, else the first component */
	int64_t comp = -1;
	if ((rc = sqlsrc_query_i64(s, t,
				   "SELECT component FROM MEMORY_RECORD m ORDER BY "
				   "(SELECT value FROM STRING_IDS WHERE id = m.component) IS NOT 'PTA', component LIMIT 1",
				   &comp)) != 0)
		return rc;
	struct mem_prev prev = { .device = INT64_MIN };
	return sqlsrc_each_row(s, t,
			       "SELECT timestamp, totalAllocated, deviceId FROM MEMORY_RECORD WHERE component = ?1 "
			       "ORDER BY deviceId, timestamp",
			       comp, mem_row, &prev);
}

/* ---- groups: META_DATA parallel_group_info ---- */

static int read_groups(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	if (!sqlsrc_has_table(s, "META_DATA") || !sqlsrc_has_column(s, "META_DATA", "name") ||
	    !sqlsrc_has_column(s, "META_DATA", "value"))
		return 0;
	sqlite3_stmt *st;
	int rc = sqlsrc_prepare(s, "META_DATA", "SELECT value FROM META_DATA WHERE name = 'parallel_group_info'", &st);
	if (rc)
		return rc;
	int r = sqlite3_step(st);
	if (r == SQLITE_ROW && sqlsrc_text(st, 0)) {
		cJSON *root = cJSON_Parse(sqlsrc_text(st, 0));
		if (!root || !cJSON_IsObject(root)) {
			sqlsrc_warn_row(s, IMP_W_BAD_TYPE, "META_DATA (parallel_group_info is not a JSON object)");
		} else {
			for (cJSON *g = root->child; g && !rc; g = g->next) {
				cJSON *ranks = cJSON_GetObjectItemCaseSensitive(g, "global_ranks");
				cJSON *desc = cJSON_GetObjectItemCaseSensitive(g, "group_name");
				int n = cJSON_IsArray(ranks) ? cJSON_GetArraySize(ranks) : 0;
				if (!g->string || n <= 0 || n > 1000000) {
					sqlsrc_warn_row(s, IMP_W_BAD_TYPE, "META_DATA (parallel_group_info)");
					continue;
				}
				int *m = malloc((size_t)n * sizeof *m), k = 0;
				if (!m) {
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
					break;
				}
				for (cJSON *x = ranks->child; x; x = x->next)
					if (cJSON_IsNumber(x) && x->valuedouble >= 0 && x->valuedouble < 1000000)
						m[k++] = (int)x->valuedouble;
				if (k == n)
					rc = imp_group(s->im, g->string, cJSON_IsString(desc) ? desc->valuestring : NULL, m, n);
				else
					sqlsrc_warn_row(s, IMP_W_BAD_TYPE, "META_DATA (parallel_group_info)");
				free(m);
			}
		}
		cJSON_Delete(root);
	} else if (r != SQLITE_ROW && r != SQLITE_DONE) {
		rc = sqlsrc_fail(s, "META_DATA", r);
	}
	sqlite3_finalize(st);
	return rc;
}

/* ---- the file ---- */

/* The rank: --rank, else RANK_DEVICE_MAP (a rank id of 0..999999), else _N.db at the end of the
 * file name, else the argument order. */
static int file_rank(struct asc *a, int64_t *device)
{
	struct sqlsrc *s = &a->s;
	if (imp_rank_forced(s->im) >= 0)
		return imp_rank_forced(s->im);
	int64_t rank = -1;
	if (sqlsrc_has_table(s, "RANK_DEVICE_MAP") && sqlsrc_has_column(s, "RANK_DEVICE_MAP", "rankId")) {
		sqlsrc_query_i64(s, "RANK_DEVICE_MAP", "SELECT rankId FROM RANK_DEVICE_MAP LIMIT 1", &rank);
		if (sqlsrc_has_column(s, "RANK_DEVICE_MAP", "deviceId"))
			sqlsrc_query_i64(s, "RANK_DEVICE_MAP", "SELECT deviceId FROM RANK_DEVICE_MAP LIMIT 1", device);
	}
	if (rank >= 0 && rank < 1000000)
		return (int)rank;
	const char *base = strrchr(s->path, '/');
	base = base ? base + 1 : s->path;
	const char *u = strrchr(base, '_');
	if (u && u[1] >= '0' && u[1] <= '9') {
		char *end;
		long v = strtol(u + 1, &end, 10);
		if (!strcmp(end, ".db") && v >= 0 && v < 1000000)
			return (int)v;
	}
	return imp_rank_default(s->im, s->path);
}

static int read_file(struct asc *a)
{
	struct sqlsrc *s = &a->s;
	int64_t count = 0;
	if (sqlsrc_query_i64(s, "sqlite_master", "SELECT count(*) FROM sqlite_master", &count) != 0)
		return ascent_error(ASCENT_EINPUT, "'%s' is not an SQLite database (%s): give an ascend_pytorch_profiler_N.db",
				    s->path, sqlite3_errmsg(s->db));
	if (!sqlsrc_has_table(s, "STRING_IDS"))
		return ascent_error(ASCENT_EINPUT, "'%s': no STRING_IDS table: not an Ascend profiler database", s->path);
	static const char *const sneed[] = { "id", "value", NULL };
	int rc = sqlsrc_need_columns(s, "STRING_IDS", sneed);
	if (rc)
		return rc;
	int64_t device = -1;
	int rank = file_rank(a, &device);
	if (device < 0 && sqlsrc_has_table(s, "TASK") && sqlsrc_has_column(s, "TASK", "deviceId"))
		rc = sqlsrc_query_i64(s, "TASK", "SELECT deviceId FROM TASK LIMIT 1", &device);
	a->device = device >= 0 && device <= 0xffff ? (int)device : 0;
	/* the origin: the earliest start of the timed tables */
	static const struct {
		const char *table, *col;
	} timed[] = { { "TASK", "startNs" }, { "COMMUNICATION_OP", "startNs" }, { "STEP_TIME", "startNs" },
		      { "MEMORY_RECORD", "timestamp" }, { "PYTORCH_API", "startNs" }, { "CANN_API", "startNs" } };
	s->origin = INT64_MAX;
	for (size_t i = 0; i < sizeof timed / sizeof *timed && !rc; i++) {
		if (!sqlsrc_has_table(s, timed[i].table) || !sqlsrc_has_column(s, timed[i].table, timed[i].col))
			continue;
		char sql[700];
		int64_t v = INT64_MAX, n = 0;
		char tv[500];   /* the column as a time, NULL when it is none (sqlsrc_time) */
		sqlsrc_time_sql(timed[i].col, tv, sizeof tv);
		snprintf(sql, sizeof sql, "SELECT min(t) FROM (SELECT %s AS t FROM %s) WHERE t >= 0", tv, timed[i].table);
		rc = sqlsrc_query_i64(s, timed[i].table, sql, &v);
		if (v < s->origin)
			s->origin = v;
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", timed[i].table);
		if (!rc && (rc = sqlsrc_query_i64(s, timed[i].table, sql, &n)) == 0)
			s->total_rows += n;
	}
	if (s->origin == INT64_MAX)
		s->origin = 0;
	char host[256] = "";
	if (!rc && sqlsrc_has_table(s, "HOST_INFO") && sqlsrc_has_column(s, "HOST_INFO", "hostName")) {
		rc = sqlsrc_query_text(s, "HOST_INFO", "SELECT hostName FROM HOST_INFO LIMIT 1", host, sizeof host);
	}
	if (!rc)
		rc = imp_rank_begin(s->im, rank, s->origin);
	if (!rc)
		rc = read_groups(a);
	if (!rc)
		rc = read_api(a);
	if (!rc)
		rc = read_cann(a);
	if (!rc)
		rc = read_connections(a);
	if (!rc)
		rc = read_tasks(a);
	if (!rc)
		rc = read_comm(a);
	if (!rc && sqlsrc_has_table(s, "STEP_TIME")) {
		static const char *const need[] = { "id", "startNs", "endNs", NULL };
		/* a step PYTORCH_API has as ProfilerStep#N (read as the step above) is not read twice */
		int api = sqlsrc_has_table(s, "PYTORCH_API") && sqlsrc_has_column(s, "PYTORCH_API", "name");
		char sql[400];
		snprintf(sql, sizeof sql, "SELECT t.id, t.startNs, t.endNs, %s FROM STEP_TIME t",
			 api ? "EXISTS (SELECT 1 FROM PYTORCH_API p JOIN STRING_IDS n ON n.id = p.name"
			       " WHERE n.value = 'ProfilerStep#' || t.id)" : "0");
		if ((rc = sqlsrc_need_columns(s, "STEP_TIME", need)) == 0)
			rc = sqlsrc_each_row(s, "STEP_TIME", sql, -1, step_row, a);
	}
	if (!rc)
		rc = read_memory(a);
	if (!rc) {
		int tid = imp_lane_lookup(s->im, device_key(a->device, HCCL_STREAM), NULL);
		if (tid >= 0) {
			char name[64];
			snprintf(name, sizeof name, "device %d HCCL", a->device);
			rc = imp_lane_name(s->im, tid, name);
		}
	}
	if (!rc) {
		/* times are ns since the epoch already: no base */
		struct imp_file_facts f = { .backend = "hccl", .host = host,
					     .source = "ascend pytorch profiler (database)" };
		rc = imp_file_end(s->im, &f);
	}
	return rc;
}

int imp_read_ascend(struct imp *im, const char *path)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': %s", path, strerror(errno));
	struct asc a = { .s = { .im = im, .path = path, .size = (int64_t)sb.st_size } };
	int rc = imp_file_begin(im, path, (int64_t)sb.st_size);
	if (!rc)
		rc = sqlsrc_open(&a.s);
	if (!rc)
		rc = read_file(&a);
	return sqlsrc_close(&a.s, rc);
}
