/* import/npu.h — what the readers know of torch_npu (Ascend) output, private to import/:
 *
 *   npu_map.c  the mapping tables of torch_npu's text export (ASCEND_PROFILER_OUTPUT/trace_view.json,
 *              a Chrome trace read by kineto.c): each process (by its process_name), each device
 *              task (by its "Task Type") and each link category → the event kind, the lane and the
 *              role; the collective type of an HCCL operator name (both exports); which device tasks
 *              of the database export are copies.
 *   npu_dir.c  torch_npu's output folders: one `*_ascend_pt` folder per rank (its traces in
 *              ASCEND_PROFILER_OUTPUT, its rank in profiler_info_N.json), a folder of them (the ranks
 *              of a job), and the summaries written beside the traces (CSVs, communication*.json,
 *              analysis.db), which are not read and are counted.
 *
 * docs/import.md lists the tables as the user reads them. */
#ifndef ASCENT_IMPORT_NPU_H
#define ASCENT_IMPORT_NPU_H

#include <stddef.h>

#include "import/import.h"

/* ---- the text export's processes ---- */

enum npu_lane {
	NPU_LANE_KINETO,    /* the Kineto rules decide (not a torch_npu process) */
	NPU_LANE_THREAD,    /* a host thread, named by tid: Python's and CANN's events of one thread share a lane */
	NPU_LANE_STREAM,    /* a device stream (tid = the stream id) */
	NPU_LANE_HCCL,      /* HCCL's rows (tid: 0 the collectives, N the plane N−1), beside the device's streams */
	NPU_LANE_NONE,      /* not kept: the events are counted as skipped */
};

/* HCCL's rows are the streams NPU_HCCL_STREAMS + tid of the NPU (above its streams' ids). */
#define NPU_HCCL_STREAMS 1000000

/* How the events of one process are read. */
struct npu_process {
	const char *name;       /* its process_name */
	enum npu_lane lane;
	int by_task_type;       /* the kind comes from the event's args."Task Type" (npu_task) */
	int by_category;        /* the kind comes from the Kineto category rules (cpu_op, ProfilerStep#N, ...) */
	int kind;               /* otherwise: the events' kind (enum db_kind); HCCL: hcom_* are collectives */
	enum imp_warning skip;  /* lane NONE: the reason they are counted under */
	const char *role;       /* what they are, for docs/import.md */
};

/* The process named `name`, or NULL when it is not one of torch_npu's (then the file's other rules
 * apply). A file that names one of them is a torch_npu trace (npu_process_is_npu). */
const struct npu_process *npu_process(const char *name);
/* 1 for a process only torch_npu writes (Ascend Hardware, CANN, HCCL, Overlap Analysis): the file is
 * torch_npu's text export, whose times are decimal strings. */
int npu_process_is_npu(const struct npu_process *p);

/* ---- the text export's device tasks ---- */

/* The kind of a device task of "Ascend Hardware" from its name and args."Task Type" (NULL: none):
 * kernel, memcpy, or range (HCCL's communication tasks, stream synchronization). *known is 0 when
 * the task type is not in the table (then the task is a kernel, as every task of that process was
 * before the table, and the caller counts it under IMP_W_TASK_TYPE). */
int npu_task_kind(const char *name, const char *task_type, int *known /* OUT */);

/* ---- links ---- */

/* The link kind (enum db_flow_kind) of a torch_npu link category, −1 for one not kept (the caller
 * counts it), −2 when the category is not torch_npu's (the Kineto rules apply). */
int npu_flow_kind(const char *cat);

/* ---- HCCL collectives (both exports) ---- */

/* The collective's type from its HCCL operator name: "hcom_allReduce__586_0_1" → "hcom_allReduce_"
 * (the name without its trailing _N_N_N, as the database export's opType writes it). Copies the
 * name unchanged when it has no such tail. */
void npu_collective_type(const char *op_name, char *out, size_t cap);
/* Bytes of one element of an HCCL data type name (FP32, BFP16, INT8, ...), 0 unknown. */
int npu_dtype_size(const char *dtype);

/* ---- the database export's device tasks ---- */

/* 1 when a TASK row of this task type (its STRING_IDS value) is a copy (MEMCPY_ASYNC, ...). */
int npu_db_task_is_copy(const char *task_type);

/* ---- folders ---- */

/* The inputs of path when it is one of torch_npu's folders: a `*_ascend_pt` folder (one holding
 * ASCEND_PROFILER_OUTPUT), an ASCEND_PROFILER_OUTPUT folder, or a folder holding `*_ascend_pt`
 * folders (one per rank). *files (malloc'd paths, sorted by rank folder) gets the traces: per rank
 * folder its ascend_pytorch_profiler_N.db when there is one, else its trace_view.json; the other
 * files of ASCEND_PROFILER_OUTPUT (summaries) are counted in *skipped, the first in *first_skipped
 * (malloc'd, NULL when none). Returns 0 with *n = 0 when path is not such a folder; a folder of
 * rank folders may also hold traces of its own, which the caller lists. */
int npu_dir_inputs(const char *path, char ***files /* OUT */, int *n /* OUT */, int *skipped /* OUT */,
		   char **first_skipped /* OUT */);
/* The rank torch_npu recorded for a file of a `*_ascend_pt` folder: rank_id of the folder's
 * profiler_info_N.json (else its N), −1 when the file is not in such a folder or it has none. */
int npu_dir_rank(const char *file_path);

#endif
