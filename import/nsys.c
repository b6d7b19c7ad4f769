/* import/nsys.c — the Nsight Systems source: an `nsys export --type sqlite` file, read with SQLite
 * (tables as they are: a missing table means no such events, a missing optional column reads as
 * NULL). Each process of the export becomes a rank. docs/import.md has the mapping. */
#include "import/import.h"

#include "common/common.h"
#include "db/db.h"
#include "import/sqlsrc.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define PID_OF(gt) "(((" gt ") >> 24) & 16777215)"


/* ---- lanes ---- */

static int cpu_lane(struct sqlsrc *n, int64_t gtid, int *tid)
{
	return imp_lane(n->im, (uint64_t)gtid & ~(1ULL << 63), -1, 0, gtid % 16777216, tid);
}

static uint64_t device_key(int64_t pid, int64_t device, int64_t stream)
{
	return (1ULL << 63) | ((uint64_t)pid & 0xffffff) << 36 | ((uint64_t)device & 0xfff) << 24 | ((uint64_t)stream & 0xffffff);
}

static int device_lane(struct sqlsrc *n, int64_t pid, int64_t device, int64_t stream, int *tid)
{
	if (device < 0 || device > 4095 || stream < 0 || stream > 0xffffff) {
		return 1;
	}
	return imp_lane(n->im, device_key(pid, device, stream), (int)device, (int)stream, 0, tid);
}

/* ---- device activity ---- */

struct dev_ctx {
	int64_t pid;
	const char *table;
	int kind;
};

static int is_comm_kernel(const char *name)
{
	return strcasestr(name, "nccl") || strcasestr(name, "rccl");
}

static const char *copy_kind_name(int64_t k)
{
	/* CUPTI_ACTIVITY_MEMCPY_KIND */
	switch (k) {
	case 1: return "Memcpy HtoD";
	case 2: return "Memcpy DtoH";
	case 3: return "Memcpy HtoA";
	case 4: return "Memcpy AtoH";
	case 5: return "Memcpy AtoA";
	case 6: return "Memcpy AtoD";
	case 7: return "Memcpy DtoA";
	case 8: return "Memcpy DtoD";
	case 9: return "Memcpy HtoH";
	case 10: return "Memcpy PtoP";
	default: return "Memcpy";
	}
}

/* columns: start, end, deviceId, streamId, correlationId, then per table:
 * kernel: name, short name, gridX..Z, blockX..Z, registersPerThread; memcpy: bytes, copyKind;
 * memset: bytes */
static int device_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	struct dev_ctx *c = arg;
	int64_t start, dur;
	if (sqlsrc_row_time(n, st, 0, c->table, &start, &dur))
		return 0;
	int tid;
	int rc = device_lane(n, c->pid, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), &tid);
	if (rc > 0) {
		sqlsrc_warn_row(n, IMP_W_BAD_TYPE, c->table);
		return 0;
	}
	if (rc)
		return rc;
	char args[512];
	struct imp_event e = { .kind = c->kind, .tid = tid, .start_ns = start, .dur_ns = dur, .step = -1 };
	if (c->kind == DB_KIND_KERNEL) {
		e.name = sqlsrc_text(st, 5);
		if (!e.name || !*e.name)
			e.name = sqlsrc_text(st, 6);
		if (!e.name || !*e.name) {
			sqlsrc_warn_row(n, IMP_W_NO_NAME, c->table);
			return 0;
		}
		if (is_comm_kernel(e.name))
			e.kind = DB_KIND_COMM;
		const char *shortn = sqlsrc_text(st, 6);
		char esc[160];
		size_t j = 0;
		for (const char *p = shortn ? shortn : ""; *p && j + 7 < sizeof esc; p++) {
			unsigned char ch = (unsigned char)*p;
			if (ch == '"' || ch == '\\') {
				esc[j++] = '\\';
				esc[j++] = (char)ch;
			} else if (ch >= 0x20 && ch < 0x7f) {
				esc[j++] = (char)ch;
			}
		}
		esc[j] = 0;
		int len = snprintf(args, sizeof args,
				   "{\"short name\": \"%s\", \"grid\": [%lld, %lld, %lld], \"block\": [%lld, %lld, %lld], "
				   "\"registers per thread\": %lld, \"correlation\": %lld}",
				   esc, (long long)sqlite3_column_int64(st, 7), (long long)sqlite3_column_int64(st, 8),
				   (long long)sqlite3_column_int64(st, 9), (long long)sqlite3_column_int64(st, 10),
				   (long long)sqlite3_column_int64(st, 11), (long long)sqlite3_column_int64(st, 12),
				   (long long)sqlite3_column_int64(st, 13), (long long)sqlite3_column_int64(st, 4));
		e.args = args;
		e.args_len = (size_t)len;
	} else {
		int64_t bytes = sqlite3_column_int64(st, 5);
		e.bytes = bytes > 0 ? bytes : 0;
		e.name = c->kind == DB_KIND_MEMCPY ? copy_kind_name(sqlite3_column_int64(st, 6)) : "Memset";
	}
	if ((rc = imp_event(n->im, &e)) != 0)
		return rc;
	if (!sqlsrc_is_null(st, 4))
		rc = imp_flow(n->im, DB_FLOW_LAUNCH, sqlite3_column_int64(st, 4), 0,
			      device_key(c->pid, sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3)), start);
	return rc;
}

static int read_device(struct sqlsrc *n, int64_t pid)
{
	static const char *const need[] = { "start", "end", "deviceId", "streamId", NULL };
	char sql[1024];
	int rc = 0;
	const char *t = "CUPTI_ACTIVITY_KIND_KERNEL";
	if (sqlsrc_has_table(n, t)) {
		static const char *const kneed[] = { "demangledName", "globalPid", NULL };
		if ((rc = sqlsrc_need_columns(n, t, need)) || (rc = sqlsrc_need_columns(n, t, kneed)))
			return rc;
		snprintf(sql, sizeof sql,
			 "SELECT k.start, k.end, k.deviceId, k.streamId, k.%s, d.value, s.value, %s, %s, %s, %s, %s, %s, %s "
			 "FROM %s k LEFT JOIN StringIds d ON d.id = k.demangledName LEFT JOIN StringIds s ON s.id = k.%s "
			 "WHERE " PID_OF("k.globalPid") " = ?1",
			 sqlsrc_col_or_null(n, t, "correlationId"), sqlsrc_col_or_null(n, t, "gridX"), sqlsrc_col_or_null(n, t, "gridY"),
			 sqlsrc_col_or_null(n, t, "gridZ"), sqlsrc_col_or_null(n, t, "blockX"), sqlsrc_col_or_null(n, t, "blockY"),
			 sqlsrc_col_or_null(n, t, "blockZ"), sqlsrc_col_or_null(n, t, "registersPerThread"), t,
			 sqlsrc_has_column(n, t, "shortName") ? "shortName" : "demangledName");
		struct dev_ctx c = { pid, t, DB_KIND_KERNEL };
		if ((rc = sqlsrc_each_row(n, t, sql, pid, device_row, &c)) != 0)
			return rc;
	}
	t = "CUPTI_ACTIVITY_KIND_MEMCPY";
	if (sqlsrc_has_table(n, t)) {
		static const char *const mneed[] = { "bytes", "globalPid", NULL };
		if ((rc = sqlsrc_need_columns(n, t, need)) || (rc = sqlsrc_need_columns(n, t, mneed)))
			return rc;
		snprintf(sql, sizeof sql,
			 "SELECT start, end, deviceId, streamId, %s, bytes, %s FROM %s WHERE " PID_OF("globalPid") " = ?1",
			 sqlsrc_col_or_null(n, t, "correlationId"), sqlsrc_col_or_null(n, t, "copyKind"), t);
		struct dev_ctx c = { pid, t, DB_KIND_MEMCPY };
		if ((rc = sqlsrc_each_row(n, t, sql, pid, device_row, &c)) != 0)
			return rc;
	}
	t = "CUPTI_ACTIVITY_KIND_MEMSET";
	if (sqlsrc_has_table(n, t)) {
		static const char *const sneed[] = { "bytes", "globalPid", NULL };
		if ((rc = sqlsrc_need_columns(n, t, need)) || (rc = sqlsrc_need_columns(n, t, sneed)))
			return rc;
		snprintf(sql, sizeof sql,
			 "SELECT start, end, deviceId, streamId, %s, bytes FROM %s WHERE " PID_OF("globalPid") " = ?1",
			 sqlsrc_col_or_null(n, t, "correlationId"), t);
		struct dev_ctx c = { pid, t, DB_KIND_MEMSET };
		rc = sqlsrc_each_row(n, t, sql, pid, device_row, &c);
	}
	return rc;
}

/* ---- CPU: CUDA runtime calls, OS runtime calls ---- */

struct cpu_ctx {
	const char *table;
	int links;
	int64_t last_link;    /* the correlation id of the last link started (−1 none) */
};

/* columns: start, end, globalTid, name, correlationId */
static int cpu_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	struct cpu_ctx *c = arg;
	int64_t start, dur;
	if (sqlsrc_row_time(n, st, 0, c->table, &start, &dur))
		return 0;
	const char *name = sqlsrc_text(st, 3);
	if (!name || !*name) {
		sqlsrc_warn_row(n, IMP_W_NO_NAME, c->table);
		return 0;
	}
	int64_t gtid = sqlite3_column_int64(st, 2);
	int tid;
	int rc = cpu_lane(n, gtid, &tid);
	if (rc)
		return rc;
	struct imp_event e = { .kind = DB_KIND_RANGE, .tid = tid, .start_ns = start, .dur_ns = dur, .name = name,
			       .step = -1 };
	if ((rc = imp_event(n->im, &e)) != 0)
		return rc;
	/* Nsight records a runtime call twice (cudaMemcpy and the nested cudaMemcpy_v3020, one
	 * correlation id): the link starts at the first, the outer one */
	if (c->links && !sqlsrc_is_null(st, 4) && sqlite3_column_int64(st, 4) != c->last_link && (c->last_link = sqlite3_column_int64(st, 4), 1))
		rc = imp_flow(n->im, DB_FLOW_LAUNCH, sqlite3_column_int64(st, 4), 1, (uint64_t)gtid & ~(1ULL << 63), start);
	return rc;
}

/* CUDA runtime calls and OS runtime calls: ranges on their thread's lane. A launch link starts
 * only at calls whose correlation id some kernel, copy or memset of the process carries, so the
 * other runtime calls are not unpaired links. */
static int read_cpu(struct sqlsrc *n, int64_t pid)
{
	static const char *const need[] = { "start", "end", "globalTid", "nameId", NULL };
	char sql[2048];
	int rc = 0;
	const char *t = "CUPTI_ACTIVITY_KIND_RUNTIME";
	if (sqlsrc_has_table(n, t)) {
		if ((rc = sqlsrc_need_columns(n, t, need)) != 0)
			return rc;
		/* the correlation id only where device work carries it: a launch link then always pairs */
		char dev[512] = "";
		size_t used = 0;
		static const char *const devt[] = { "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
						    "CUPTI_ACTIVITY_KIND_MEMSET" };
		for (int i = 0; i < 3; i++)
			if (sqlsrc_has_table(n, devt[i]) && sqlsrc_has_column(n, devt[i], "correlationId") &&
			    sqlsrc_has_column(n, devt[i], "globalPid"))
				used += (size_t)snprintf(dev + used, sizeof dev - used,
							 "%sSELECT correlationId FROM %s WHERE " PID_OF("globalPid") " = ?1",
							 used ? " UNION ALL " : "", devt[i]);
		int links = used > 0 && sqlsrc_has_column(n, t, "correlationId");
		char corr[700] = "NULL";
		if (links)
			snprintf(corr, sizeof corr, "CASE WHEN r.correlationId IN (%s) THEN r.correlationId END", dev);
		snprintf(sql, sizeof sql,
			 "SELECT r.start, r.end, r.globalTid, s.value, %s FROM %s r LEFT JOIN StringIds s ON s.id = r.nameId "
			 "WHERE " PID_OF("r.globalTid") " = ?1",
			 corr, t);
		struct cpu_ctx c = { t, links, -1 };
		if ((rc = sqlsrc_each_row(n, t, sql, pid, cpu_row, &c)) != 0)
			return rc;
	}
	t = "OSRT_API";
	if (sqlsrc_has_table(n, t)) {
		if ((rc = sqlsrc_need_columns(n, t, need)) != 0)
			return rc;
		snprintf(sql, sizeof sql,
			 "SELECT o.start, o.end, o.globalTid, s.value, NULL FROM %s o LEFT JOIN StringIds s ON s.id = o.nameId "
			 "WHERE " PID_OF("o.globalTid") " = ?1",
			 t);
		struct cpu_ctx c = { t, 0, -1 };
		rc = sqlsrc_each_row(n, t, sql, pid, cpu_row, &c);
	}
	return rc;
}

/* ---- NVTX ---- */

/* MPI calls that are one collective of the communicator / a transfer with one peer */
static int mpi_kind(const char *name)
{
	static const char *const coll[] = { "MPI_Allreduce", "MPI_Iallreduce", "MPI_Bcast", "MPI_Ibcast", "MPI_Reduce",
					    "MPI_Ireduce", "MPI_Allgather", "MPI_Iallgather", "MPI_Allgatherv",
					    "MPI_Alltoall", "MPI_Ialltoall", "MPI_Alltoallv", "MPI_Barrier",
					    "MPI_Ibarrier", "MPI_Reduce_scatter", "MPI_Reduce_scatter_block",
					    "MPI_Gather", "MPI_Gatherv", "MPI_Scatter", "MPI_Scatterv", "MPI_Scan",
					    "MPI_Exscan", NULL };
	static const char *const p2p[] = { "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Ssend", "MPI_Bsend",
					   "MPI_Rsend", "MPI_Sendrecv", "MPI_Sendrecv_replace", "MPI_Issend", NULL };
	for (int i = 0; coll[i]; i++)
		if (!strcmp(name, coll[i]))
			return DB_KIND_COMM;
	for (int i = 0; p2p[i]; i++)
		if (!strcmp(name, p2p[i]))
			return DB_KIND_P2P;
	return -1;
}

/* A step number from a range name the step regex matched: the first run of digits in it. */
static int64_t step_number(const char *name, const regmatch_t *m)
{
	const char *p = name + m[0].rm_so, *end = name + m[0].rm_eo;
	for (; p < end; p++)
		if (*p >= '0' && *p <= '9')
			return strtoll(p, NULL, 10);
	return -1;
}

/* columns: start, end, globalTid, name, domain name, eventType, int64 payload */
static int nvtx_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	(void)arg;
	int64_t type = sqlite3_column_int64(st, 5);
	if (type != 59 && type != 60 && type != 70 && type != 71)   /* push/pop and start/end ranges */
		return 0;
	int64_t start, dur;
	if (sqlsrc_row_time(n, st, 0, "NVTX_EVENTS", &start, &dur))
		return 0;
	const char *name = sqlsrc_text(st, 3);
	if (!name || !*name) {
		sqlsrc_warn_row(n, IMP_W_NO_NAME, "NVTX_EVENTS");
		return 0;
	}
	const char *domain = sqlsrc_text(st, 4);
	int tid;
	int rc = cpu_lane(n, sqlite3_column_int64(st, 2), &tid);
	if (rc)
		return rc;
	struct imp_event e = { .kind = DB_KIND_RANGE, .tid = tid, .start_ns = start, .dur_ns = dur, .name = name,
			       .step = -1 };
	struct imp_collective coll = { .peer = -1 };
	regmatch_t m[1];
	int mk;
	if (n->has_step_re && regexec(&n->step_re, name, 1, m, 0) == 0 && (e.step = step_number(name, m)) >= 0) {
		e.kind = DB_KIND_STEP;
	} else if ((mk = mpi_kind(name)) >= 0) {
		e.step = -1;
		e.kind = mk;
		e.coll = &coll;
	} else if (domain && !strcasecmp(domain, "NCCL") && strncmp(name, "ncclGroup", 9) &&
		   strncmp(name, "ncclComm", 8)) {
		e.step = -1;
		e.kind = strstr(name, "Send") || strstr(name, "Recv") ? DB_KIND_P2P : DB_KIND_COMM;
		e.coll = &coll;
	} else {
		e.step = -1;
	}
	return imp_event(n->im, &e);
}

static int read_nvtx(struct sqlsrc *n, int64_t pid)
{
	const char *t = "NVTX_EVENTS";
	if (!sqlsrc_has_table(n, t))
		return 0;
	static const char *const need[] = { "start", "end", "eventType", "globalTid", NULL };
	int rc = sqlsrc_need_columns(n, t, need);
	if (rc)
		return rc;
	char sql[1024];
	int has_text_id = sqlsrc_has_column(n, t, "textId");
	/* a range's domain: the text of its domain's creation row (eventType 75) */
	int has_domain = sqlsrc_has_column(n, t, "domainId") && sqlsrc_has_column(n, t, "text");
	snprintf(sql, sizeof sql,
		 "SELECT e.start, e.end, e.globalTid, COALESCE(%s, %s), %s, e.eventType, NULL FROM %s e%s%s "
		 "WHERE " PID_OF("e.globalTid") " = ?1",
		 has_text_id ? "s.value" : "NULL", sqlsrc_has_column(n, t, "text") ? "e.text" : "NULL", has_domain ? "d.name" : "NULL",
		 t, has_text_id ? " LEFT JOIN StringIds s ON s.id = e.textId" : "",
		 has_domain ? " LEFT JOIN (SELECT domainId, min(text) AS name FROM NVTX_EVENTS WHERE eventType = 75 AND "
			   PID_OF("globalTid") " = ?1 GROUP BY domainId) d ON d.domainId = e.domainId"
			 : "");
	return sqlsrc_each_row(n, t, sql, pid, nvtx_row, NULL);
}

/* ---- memory ---- */

/* columns: start, bytes, deviceId, memoryOperationType (0 allocation, 1 free) */
static int mem_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	int64_t *in_use = arg;
	int64_t ts = sqlite3_column_int64(st, 0), bytes = sqlite3_column_int64(st, 1);
	if (ts < 0 || bytes < 0 || bytes > INT64_MAX / 4) {
		sqlsrc_warn_row(n, IMP_W_BAD_TIME, "CUDA_GPU_MEMORY_USAGE_EVENTS");
		return 0;
	}
	if (sqlite3_column_int64(st, 3) == 1)
		bytes = -bytes;
	if ((bytes > 0 && *in_use > INT64_MAX / 2) || (bytes < 0 && *in_use < INT64_MIN / 2)) {
		sqlsrc_warn_row(n, IMP_W_BAD_TIME, "CUDA_GPU_MEMORY_USAGE_EVENTS");
		return 0;
	}
	*in_use += bytes;
	int64_t dev = sqlite3_column_int64(st, 2);
	return imp_mem(n->im, ts, bytes, *in_use, dev >= 0 && dev < 4096 ? (int)dev : -1);
}

static int read_memory(struct sqlsrc *n, int64_t pid)
{
	const char *t = "CUDA_GPU_MEMORY_USAGE_EVENTS";
	if (!sqlsrc_has_table(n, t))
		return 0;
	static const char *const need[] = { "start", "globalPid", "deviceId", "bytes", "memoryOperationType", NULL };
	int rc = sqlsrc_need_columns(n, t, need);
	if (rc)
		return rc;
	char sql[512];
	snprintf(sql, sizeof sql,
		 "SELECT start, bytes, deviceId, memoryOperationType FROM %s WHERE " PID_OF("globalPid") " = ?1 "
		 "ORDER BY start",
		 t);
	int64_t in_use = 0;
	return sqlsrc_each_row(n, t, sql, pid, mem_row, &in_use);
}

/* ---- lane names ---- */

static int name_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	(void)arg;
	int tid = imp_lane_lookup(n->im, (uint64_t)sqlite3_column_int64(st, 0) & ~(1ULL << 63), NULL);
	const char *name = sqlsrc_text(st, 1);
	return tid >= 0 && name && *name ? imp_lane_name(n->im, tid, name) : 0;
}

static int gpu_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	int64_t pid = *(int64_t *)arg;
	int tid = imp_lane_lookup(n->im, device_key(pid, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)), NULL);
	const char *gpu = sqlsrc_text(st, 2);
	if (tid < 0)
		return 0;
	char name[200];
	snprintf(name, sizeof name, "device %lld stream %lld%s%s", (long long)sqlite3_column_int64(st, 0),
		 (long long)sqlite3_column_int64(st, 1), gpu && *gpu ? " " : "", gpu ? gpu : "");
	return imp_lane_name(n->im, tid, name);
}

static int name_lanes(struct sqlsrc *n, int64_t pid)
{
	int rc = 0;
	if (sqlsrc_has_table(n, "ThreadNames") && sqlsrc_has_column(n, "ThreadNames", "globalTid") &&
	    sqlsrc_has_column(n, "ThreadNames", "nameId"))
		rc = sqlsrc_each_row(n, "ThreadNames",
			      "SELECT t.globalTid, s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId "
			      "WHERE " PID_OF("t.globalTid") " = ?1",
			      pid, name_row, NULL);
	/* device lanes: "device D stream S" and the GPU's name */
	const char *t = "CUPTI_ACTIVITY_KIND_KERNEL";
	if (!rc && sqlsrc_has_table(n, t) && sqlsrc_has_table(n, "TARGET_INFO_GPU") && sqlsrc_has_column(n, "TARGET_INFO_GPU", "name") &&
	    sqlsrc_has_column(n, "TARGET_INFO_GPU", "id")) {
		char sql[1024];
		size_t used = 0;
		static const char *const devt[] = { "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
						    "CUPTI_ACTIVITY_KIND_MEMSET" };
		char u[600] = "";
		for (int i = 0; i < 3; i++)
			if (sqlsrc_has_table(n, devt[i]))
				used += (size_t)snprintf(u + used, sizeof u - used,
							 "%sSELECT deviceId, streamId FROM %s WHERE " PID_OF("globalPid") " = ?1",
							 used ? " UNION " : "", devt[i]);
		snprintf(sql, sizeof sql,
			 "SELECT l.deviceId, l.streamId, (SELECT name FROM TARGET_INFO_GPU g WHERE g.id = l.deviceId LIMIT 1) "
			 "FROM (%s) l",
			 u);
		rc = sqlsrc_each_row(n, "TARGET_INFO_GPU", sql, pid, gpu_row, &pid);
	}
	return rc;
}

/* ---- the file ---- */

/* The processes with events, in pid order, and each one's MPI rank from an NVTX marker or a thread
 * name "MPI Rank N" (−1 none). */
struct proc {
	int64_t pid;
	int rank;
};

static int proc_row(struct sqlsrc *n, sqlite3_stmt *st, void *arg)
{
	(void)n;
	struct proc **pp = arg;
	size_t k = 0;
	while ((*pp)[k].pid >= 0)
		k++;
	struct proc *p2 = realloc(*pp, (k + 2) * sizeof *p2);
	if (!p2)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	*pp = p2;
	p2[k] = (struct proc){ .pid = sqlite3_column_int64(st, 0), .rank = -1 };
	const char *mark = sqlsrc_text(st, 1);
	const char *r = mark ? strstr(mark, "MPI Rank ") : NULL;
	if (r) {
		long v = strtol(r + 9, NULL, 10);
		if (v >= 0 && v < 1000000)
			p2[k].rank = (int)v;
	}
	p2[k + 1].pid = -1;
	return 0;
}

static int list_processes(struct sqlsrc *n, struct proc **out)
{
	static const struct {
		const char *table, *col;
	} src[] = { { "CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid" }, { "CUPTI_ACTIVITY_KIND_KERNEL", "globalPid" },
		    { "CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid" }, { "CUPTI_ACTIVITY_KIND_MEMSET", "globalPid" },
		    { "NVTX_EVENTS", "globalTid" }, { "OSRT_API", "globalTid" },
		    { "CUDA_GPU_MEMORY_USAGE_EVENTS", "globalPid" } };
	char u[2048] = "";
	size_t used = 0;
	for (size_t i = 0; i < sizeof src / sizeof *src; i++)
		if (sqlsrc_has_table(n, src[i].table) && sqlsrc_has_column(n, src[i].table, src[i].col))
			used += (size_t)snprintf(u + used, sizeof u - used, "%sSELECT DISTINCT " PID_OF("%s") " AS pid FROM %s",
						 used ? " UNION " : "", src[i].col, src[i].table);
	*out = malloc(sizeof **out);
	if (!*out)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	(*out)[0].pid = -1;
	if (!used)
		return 0;
	char marks[1024] = "NULL";
	if (sqlsrc_has_table(n, "ThreadNames") && sqlsrc_has_column(n, "ThreadNames", "nameId"))
		snprintf(marks, sizeof marks,
			 "(SELECT s.value FROM ThreadNames t JOIN StringIds s ON s.id = t.nameId WHERE " PID_OF("t.globalTid")
			 " = p.pid AND s.value LIKE 'MPI Rank %%' LIMIT 1)");
	if (sqlsrc_has_table(n, "NVTX_EVENTS") && sqlsrc_has_column(n, "NVTX_EVENTS", "text")) {
		char m2[1024];
		snprintf(m2, sizeof m2,
			 "COALESCE((SELECT text FROM NVTX_EVENTS e WHERE " PID_OF("e.globalTid")
			 " = p.pid AND text LIKE 'MPI Rank %%' LIMIT 1), %s)",
			 marks);
		snprintf(marks, sizeof marks, "%s", m2);
	}
	char sql[4096];
	snprintf(sql, sizeof sql, "SELECT p.pid, %s FROM (%s) p ORDER BY p.pid", marks, u);
	return sqlsrc_each_row(n, "(processes)", sql, -1, proc_row, out);
}

static int read_file(struct sqlsrc *n)
{
	/* an export: StringIds, and the export's own metadata table under either of its names */
	int rc = sqlsrc_query_i64(n, "sqlite_master", "SELECT count(*) FROM sqlite_master", &(int64_t){ 0 });
	if (rc)
		return ascent_error(ASCENT_EINPUT, "'%s' is not an SQLite database (%s): give an `nsys export --type sqlite` file",
				    n->path, sqlite3_errmsg(n->db));
	if (!sqlsrc_has_table(n, "StringIds") ||
	    !(sqlsrc_has_table(n, "EXPORT_META_DATA") || sqlsrc_has_table(n, "META_DATA_EXPORT") || sqlsrc_has_table(n, "TARGET_INFO_SESSION_START_TIME")))
		return ascent_error(ASCENT_EINPUT,
				    "'%s' is an SQLite database but not an Nsight Systems export (no StringIds and "
				    "EXPORT_META_DATA tables): give an `nsys export --type sqlite` file",
				    n->path);
	if (!sqlsrc_has_column(n, "StringIds", "id") || !sqlsrc_has_column(n, "StringIds", "value"))
		return ascent_error(ASCENT_EINPUT, "'%s': table StringIds has no id or value column", n->path);
	int64_t base = 0;
	if (sqlsrc_has_table(n, "TARGET_INFO_SESSION_START_TIME") && sqlsrc_has_column(n, "TARGET_INFO_SESSION_START_TIME", "utcEpochNs") &&
	    (rc = sqlsrc_query_i64(n, "TARGET_INFO_SESSION_START_TIME", "SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME LIMIT 1",
			    &base)) != 0)
		return rc;
	if (base < 0)
		base = 0;
	/* the origin: the earliest start of any table read */
	static const char *const timed[] = { "CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_KERNEL",
					     "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
					     "NVTX_EVENTS", "OSRT_API", "CUDA_GPU_MEMORY_USAGE_EVENTS" };
	n->origin = INT64_MAX;
	for (size_t i = 0; i < sizeof timed / sizeof *timed && !rc; i++) {
		if (!sqlsrc_has_table(n, timed[i]) || !sqlsrc_has_column(n, timed[i], "start"))
			continue;
		char sql[200];
		int64_t v = INT64_MAX;
		snprintf(sql, sizeof sql, "SELECT min(start) FROM %s WHERE start >= 0", timed[i]);
		rc = sqlsrc_query_i64(n, timed[i], sql, &v);
		if (v < n->origin)
			n->origin = v;
		int64_t count = 0;
		snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", timed[i]);
		if (!rc && (rc = sqlsrc_query_i64(n, timed[i], sql, &count)) == 0)
			n->total_rows += count;
	}
	if (n->origin == INT64_MAX)
		n->origin = 0;
	char host[256] = "";
	if (!rc && sqlsrc_has_table(n, "TARGET_INFO_SYSTEM_ENV") && sqlsrc_has_column(n, "TARGET_INFO_SYSTEM_ENV", "name") &&
	    sqlsrc_has_column(n, "TARGET_INFO_SYSTEM_ENV", "value")) {
		sqlite3_stmt *st;
		if ((rc = sqlsrc_prepare(n, "TARGET_INFO_SYSTEM_ENV",
				  "SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name = 'Hostname' LIMIT 1", &st)) == 0) {
			if (sqlite3_step(st) == SQLITE_ROW && sqlsrc_text(st, 0))
				snprintf(host, sizeof host, "%s", sqlsrc_text(st, 0));
			sqlite3_finalize(st);
		}
	}
	struct proc *procs = NULL;
	if (!rc)
		rc = list_processes(n, &procs);
	int nprocs = 0;
	while (!rc && procs[nprocs].pid >= 0)
		nprocs++;
	if (!rc && imp_rank_forced(n->im) >= 0 && nprocs > 1)
		rc = ascent_error(ASCENT_EUSAGE, "'%s' holds %d processes (ranks): --rank sets the rank of a file of one",
				  n->path, nprocs);
	for (int i = 0; i < nprocs && !rc; i++) {
		int rank = imp_rank_forced(n->im) >= 0 ? imp_rank_forced(n->im)
			   : procs[i].rank >= 0	    ? procs[i].rank
			   : nprocs == 1	    ? imp_rank_default(n->im, n->path)
						    : i;
		int64_t pid = procs[i].pid;
		if ((rc = imp_rank_begin(n->im, rank, n->origin)) == 0 && (rc = read_cpu(n, pid)) == 0 &&
		    (rc = read_nvtx(n, pid)) == 0 && (rc = read_device(n, pid)) == 0 && (rc = read_memory(n, pid)) == 0)
			rc = name_lanes(n, pid);
	}
	free(procs);
	if (!rc) {
		struct imp_file_facts f = { .base_ns = base, .host = host };
		rc = imp_file_end(n->im, &f);
	}
	return rc;
}

int imp_read_nsys(struct imp *im, const char *path, const char *step_regex)
{
	struct stat sb;
	if (stat(path, &sb) != 0)
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': %s", path, strerror(errno));
	struct sqlsrc n = { .im = im, .path = path };
	const char *re = step_regex && *step_regex ? step_regex : IMP_STEP_RANGE_DEFAULT;
	int e = regcomp(&n.step_re, re, REG_EXTENDED | REG_ICASE);
	if (e) {
		char b[200];
		regerror(e, &n.step_re, b, sizeof b);
		return ascent_error(ASCENT_EUSAGE, "--step-range '%s': %s", re, b);
	}
	n.has_step_re = 1;
	n.size = (int64_t)sb.st_size;
	int rc = imp_file_begin(im, path, (int64_t)sb.st_size);
	if (!rc) {
		rc = sqlsrc_open(&n);
	}	if (!rc)
		rc = read_file(&n);
	sqlsrc_close(&n);
	return rc;
}
