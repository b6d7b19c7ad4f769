/* import/npu_map.c — torch_npu's text export (trace_view.json) as tables: process → lane and kind,
 * device task type → kind, link category → link kind; and the HCCL facts both Ascend exports share
 * (collective type from the operator name, data type sizes). docs/import.md shows the same tables.
 * What the tables say was read off real torch_npu output (Ascend910B, 2024 and 2025 releases). */
#include "import/npu.h"

#include "db/db.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const struct npu_process PROCESSES[] = {
	{ "Python", NPU_LANE_THREAD, 0, 1, DB_KIND_RANGE, IMP_W_COUNT,
	  "host threads: cpu_op → operators, ProfilerStep#N → steps, python_function / enqueue / dequeue → ranges" },
	{ "CANN", NPU_LANE_THREAD, 0, 0, DB_KIND_RANGE, IMP_W_COUNT,
	  "runtime calls (AscendCL@…, Node@launch): ranges on the thread that made them" },
	{ "Ascend Hardware", NPU_LANE_STREAM, 1, 0, DB_KIND_KERNEL, IMP_W_COUNT,
	  "one event per device task, on its stream: the kind by Task Type" },
	{ "HCCL", NPU_LANE_HCCL, 0, 0, DB_KIND_RANGE, IMP_W_COUNT,
	  "hcom_* → collectives; the planes' rows (the same tasks as on Ascend Hardware, per link) → ranges" },
	{ "Overlap Analysis", NPU_LANE_NONE, 0, 0, DB_KIND_RANGE, IMP_W_DERIVED,
	  "torch_npu's own computing / communication / free split: derived, not kept (counted)" },
};

const struct npu_process *npu_process(const char *name)
{
	for (size_t i = 0; name && i < sizeof PROCESSES / sizeof *PROCESSES; i++)
		if (!strcmp(PROCESSES[i].name, name))
			return &PROCESSES[i];
	return NULL;
}

int npu_process_is_npu(const struct npu_process *p)
{
	return p && p != &PROCESSES[0];   /* "Python" is also what other tools call a process */
}

/* Device tasks by args."Task Type". Communication tasks and synchronization are device time that is
 * not computing: ranges (the collective on the HCCL lane is the communication). */
static const struct {
	const char *task_type;
	int kind;
} TASK_TYPES[] = {
	{ "AI_CORE", DB_KIND_KERNEL },        { "AI_VECTOR_CORE", DB_KIND_KERNEL }, { "AI_CPU", DB_KIND_KERNEL },
	{ "MIX_AIC", DB_KIND_KERNEL },        { "MIX_AIV", DB_KIND_KERNEL },        { "DSA_SQE", DB_KIND_KERNEL },
	{ "KERNEL_AICORE", DB_KIND_KERNEL },  { "KERNEL_AIVEC", DB_KIND_KERNEL },   { "KERNEL_AICPU", DB_KIND_KERNEL },
	{ "Other", DB_KIND_KERNEL },          /* 2024 releases: every task; copies are told by name */
	{ "PCIE_DMA_SQE", DB_KIND_MEMCPY },   { "SDMA_SQE", DB_KIND_MEMCPY },
	{ "Notify Wait", DB_KIND_RANGE },     { "SDMA", DB_KIND_RANGE },            { "Write Value", DB_KIND_RANGE },
	{ "EVENT_RECORD_SQE", DB_KIND_RANGE }, { "EVENT_WAIT_SQE", DB_KIND_RANGE }, { "PLACE_HOLDER_SQE", DB_KIND_RANGE },
};

/* Device tasks by name, before the task type: copies whatever their engine. */
static const struct {
	const char *name;
	int kind;
} TASK_NAMES[] = { { "MEMCPY_ASYNC", DB_KIND_MEMCPY } };

int npu_task_kind(const char *name, const char *task_type, int *known)
{
	*known = 1;
	for (size_t i = 0; name && i < sizeof TASK_NAMES / sizeof *TASK_NAMES; i++)
		if (!strcmp(TASK_NAMES[i].name, name))
			return TASK_NAMES[i].kind;
	for (size_t i = 0; task_type && i < sizeof TASK_TYPES / sizeof *TASK_TYPES; i++)
		if (!strcmp(TASK_TYPES[i].task_type, task_type))
			return TASK_TYPES[i].kind;
	*known = 0;
	return DB_KIND_KERNEL;
}

static const struct {
	const char *cat;
	int kind;   /* enum db_flow_kind, −1 not kept */
} FLOWS[] = {
	{ "HostToDevice", DB_FLOW_LAUNCH },   /* the CANN call → the device task (the same connection_id) */
	{ "async_npu", -1 },                  /* the operator → the device task: the launch link says it, from the call */
	{ "async_task_queue", -1 },           /* enqueue → dequeue of torch_npu's task queue */
};

int npu_flow_kind(const char *cat)
{
	for (size_t i = 0; cat && i < sizeof FLOWS / sizeof *FLOWS; i++)
		if (!strcmp(FLOWS[i].cat, cat))
			return FLOWS[i].kind;
	return -2;
}

void npu_collective_type(const char *op_name, char *out, size_t cap)
{
	size_t n = strlen(op_name), end = n;
	int groups = 0;
	while (groups < 3) {   /* strip "_<digits>" three times from the end */
		size_t j = end;
		while (j > 0 && op_name[j - 1] >= '0' && op_name[j - 1] <= '9')
			j--;
		if (j == end || j == 0 || op_name[j - 1] != '_')
			break;
		end = j - 1;
		groups++;
	}
	if (groups < 3 || end == 0)
		end = n;
	snprintf(out, cap, "%.*s", (int)end, op_name);
}

int npu_dtype_size(const char *t)
{
	static const struct {
		const char *name;
		int size;
	} T[] = { { "INT8", 1 },   { "UINT8", 1 },  { "INT16", 2 }, { "UINT16", 2 }, { "FP16", 2 },
		  { "BFP16", 2 },  { "INT32", 4 },  { "UINT32", 4 }, { "FP32", 4 },  { "INT64", 8 },
		  { "UINT64", 8 }, { "FP64", 8 },   { "INT128", 16 } };
	for (size_t i = 0; t && i < sizeof T / sizeof *T; i++)
		if (!strcasecmp(t, T[i].name))
			return T[i].size;
	return 0;
}

int npu_db_task_is_copy(const char *task_type)
{
	int known;
	return task_type && npu_task_kind(task_type, task_type, &known) == DB_KIND_MEMCPY && known;
}
