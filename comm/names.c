/* comm/names.c — comm's name tables in one place: communicator kinds and their profiler lanes,
 * operations, data types and the states of a flight-recorder entry, as they appear in messages,
 * profiles and flight dumps. Each function returns a static string ("?" out of range) and is async-signal-safe (the flight
 * recorder's dump calls them from a signal handler). */
#include "comm/impl.h"

static const char *const KIND_NAMES[COMM_NKINDS] = { "world", "dp", "tp", "pp" };
/* The profiler lane of each communicator's collectives (a thread row named with "comm"). */
static const char *const LANE_NAMES[COMM_NKINDS] = { "comm world", "comm dp", "comm tp", "comm pp" };
static const char *const OP_NAMES[OP_NOPCODES] = { "allreduce", "reduce_scatter", "allgather", "broadcast",
						   "alltoall",  "barrier",        "send",      "recv" };
static const char *const DTYPE_NAMES[COMM_NDTYPES] = { "f32", "f64", "i64", "i32", "byte" };
static const char *const STATE_NAMES[3] = { "enqueued", "started", "completed" };

const char *comm_kind_name(enum comm_kind k)
{
	return (unsigned)k < COMM_NKINDS ? KIND_NAMES[k] : "?";
}

const char *comm_lane_name(enum comm_kind k)
{
	return (unsigned)k < COMM_NKINDS ? LANE_NAMES[k] : "comm ?";
}

const char *comm_op_name(int op)
{
	return op >= 0 && op < OP_NOPCODES ? OP_NAMES[op] : "?";
}

const char *comm_dtype_name(int t)
{
	return t >= 0 && t < COMM_NDTYPES ? DTYPE_NAMES[t] : "?";
}

const char *comm_state_name(int st)
{
	return st >= 0 && st <= 2 ? STATE_NAMES[st] : "?";
}
