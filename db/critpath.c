/* db/critpath.c — imported traces: the critical path of a step (Holistic Trace Analysis'
 * critical_path_analysis; `report --by critpath`, the viewer's devices view; docs/device.md).
 *
 * Per rank, over a window (steps, the instance of a named range, or the whole rank), a graph of
 * points in time: the start and the end of each CPU operator and runtime call that starts in the
 * window and of each device event whose launch call does. Its edges, each with a weight in ns:
 *   - an event's own time, and on one thread the time between an operator and the operators nested
 *     in it or following it under one parent (the thread's call stack, walked in nesting order);
 *     the time of a call that waits for the device (synchronisation, a synchronous copy) weighs 0;
 *   - the runtime lock: cudaLaunchKernel, cudaMemcpyAsync and cudaHostAlloc run one at a time
 *     across threads, ordered by their ends;
 *   - launch (call start → device start, when the stream was empty: the queue held no other work
 *     at the launch and at the start, and the previous work on the stream had ended before the call);
 *   - kernel → kernel on a stream (the previous end → this start, under 1.5 ms);
 *   - synchronisation: the last work on a stream → the end of cudaStreamSynchronize (Stream Sync),
 *     of every stream → cudaDeviceSynchronize (Context Sync), an event's recorded work → the end of
 *     cudaEventSynchronize (Event Sync) and → the next work launched on the waiting stream
 *     (Stream Wait Event), the recorded work being the last launched on the recorded stream before
 *     cudaEventRecord.
 * The critical path is the longest path (Kahn's order, then one pass). Each edge on it is put to a
 * cause by its kind and the event it is attributed to: CPU-bound (a CPU event's time), GPU compute or
 * communication (a device event's time), kernel-to-kernel overhead, launch overhead. Linear in the
 * rank's events but for sorting them. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

/* A kernel-to-kernel gap longer than this is no dependency (HTA's threshold: 1.5 ms). */
#define CP_KK_MAX_NS 1500000

/* Name flags (per string id). */
enum {
	NF_RUNTIME = 1 << 0,     /* a runtime API's name (db_runtime_class) */
	NF_LOCK = 1 << 1,        /* takes the runtime lock */
	NF_BLOCKING = 1 << 2,    /* waits for the device: its own time weighs 0 */
	NF_STREAM_SYNC = 1 << 3, /* the device side of a synchronisation (Kineto's cuda_sync events) */
	NF_CONTEXT_SYNC = 1 << 4,
	NF_EVENT_SYNC = 1 << 5,
	NF_WAIT_EVENT = 1 << 6,
	NF_RECORD = 1 << 7,      /* cudaEventRecord */
	NF_FWD = 1 << 8,         /* holds "forward" / "autograd": the forward and backward threads */
	NF_BWD = 1 << 9,
	NF_PYTHON = 1 << 10,     /* a Python function's range ("file.py(12): f") */
	NF_SYNC_ANY = NF_STREAM_SYNC | NF_CONTEXT_SYNC | NF_EVENT_SYNC | NF_WAIT_EVENT,
};

/* Names by exact match. */
static const struct {
	const char *name;
	unsigned flags;
} CP_NAMES[] = {
	{ "cudaLaunchKernel", NF_LOCK },    { "cudaMemcpyAsync", NF_LOCK },  { "cudaHostAlloc", NF_LOCK },
	{ "Stream Sync", NF_STREAM_SYNC },  { "Context Sync", NF_CONTEXT_SYNC }, { "Event Sync", NF_EVENT_SYNC },
	{ "Stream Wait Event", NF_WAIT_EVENT }, { "cudaEventRecord", NF_RECORD },
};

static const char *const CAUSE_NAMES[DB_CP_CAUSES] = { "cpu_bound", "gpu_compute_bound", "gpu_communication_bound",
						       "gpu_kernel_kernel_overhead", "gpu_kernel_launch_overhead" };

const char *db_cp_cause_name(int cause)
{
	return cause >= 0 && cause < DB_CP_CAUSES ? CAUSE_NAMES[cause] : "";
}

enum cp_edge_type { E_OP, E_DEP, E_LAUNCH, E_KK, E_SYNC };

/* One event of the rank. */
struct cpe {
	int64_t start, dur, name_id, step, ord;
	int tid, kind;
	int lane;        /* index into the rank's device lanes, −1 none */
	int call;        /* device side: the launch call's index, −1 none */
	int node;        /* graph points 2·node (start), 2·node + 1 (end); −1 none */
	int parent;      /* CPU: the call-stack parent, −1 none */
	int qcall, qstart;   /* queue length after the launch, after the start (linked device work) */
	int64_t corr, wait_corr, wait_stream;   /* arguments of record calls and event waits; −1 none */
};

struct cpedge {
	int u, v, type, attr;   /* attr: the event an op or kernel-kernel edge is attributed to, else −1 */
	int64_t w;
};

/* A launch: (lane, call start, call thread) → device event. */
struct cplaunch {
	int lane, tid, ev;
	int64_t at;
};

struct cp {
	struct db *db;
	int rank;
	unsigned *nf;
	int64_t nnames;
	char **names;
	struct db_device_lane *lanes;   /* all ranks' (db_device_lanes) */
	int nlanes;
	int *lane_of;                   /* by tid: index into lanes or −1 */
	int nlane_of;
	struct cpe *e;
	int ne, cape;
	int *bytid;                     /* event indexes sorted by (tid, start, dur, index) */
	struct cpedge *ed;
	int ned, caped;
	int *nodev;                     /* node → event */
	int nnodes;
	int64_t lo, hi;
	struct cplaunch *la, *lt;       /* launches by (lane, at) and by (lane, tid, at) */
	int nla;
};

static int cmp_start(const void *pa, const void *pb, void *ud)
{
	const struct cp *x = ud;
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct cpe *p = &x->e[a], *q = &x->e[b];
	if (p->start != q->start)
		return p->start < q->start ? -1 : 1;
	if (p->dur != q->dur)
		return p->dur > q->dur ? -1 : 1;
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	if (p->ord != q->ord)   /* equal ranges on one thread: as the source wrote them */
		return p->ord < q->ord ? -1 : 1;
	return (a > b) - (a < b);
}

static int cmp_tid(const void *pa, const void *pb, void *ud)
{
	const struct cp *x = ud;
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct cpe *p = &x->e[a], *q = &x->e[b];
	if (p->tid != q->tid)
		return p->tid < q->tid ? -1 : 1;
	if (p->start != q->start)
		return p->start < q->start ? -1 : 1;
	if (p->dur != q->dur)
		return p->dur < q->dur ? -1 : 1;
	return (a > b) - (a < b);
}

/* The first index in bytid of an event on tid starting at ns, or −1. */
static int at_find(const struct cp *x, int tid, int64_t ns)
{
	int lo = 0, hi = x->ne;
	while (lo < hi) {
		int m = (lo + hi) / 2;
		const struct cpe *p = &x->e[x->bytid[m]];
		if (p->tid < tid || (p->tid == tid && p->start < ns))
			lo = m + 1;
		else
			hi = m;
	}
	return lo < x->ne && x->e[x->bytid[lo]].tid == tid && x->e[x->bytid[lo]].start == ns ? lo : -1;
}

static int is_work(int kind)
{
	return kind == DB_KIND_KERNEL || kind == DB_KIND_MEMCPY || kind == DB_KIND_MEMSET || kind == DB_KIND_COMM;
}

static unsigned nflags(const struct cp *x, const struct cpe *e)
{
	return e->name_id > 0 && e->name_id < x->nnames ? x->nf[e->name_id] : 0;
}

/* A host event: on a lane that is no device lane, and not the device side of a synchronisation. */
static int is_cpu(const struct cp *x, const struct cpe *e)
{
	return e->lane < 0 && !(nflags(x, e) & NF_SYNC_ANY);
}

static int in_window(const struct cp *x, const struct cpe *e)
{
	return e->start >= x->lo && e->start <= x->hi && e->dur > 0;
}

/* ---- reading ---- */

static int ev_row(void *ud, sqlite3_stmt *s)
{
	struct cp *x = ud;
	int rc = ARRAY_GROW(x->e, x->ne, x->cape, 4096, "reading events");
	if (rc)
		return rc;
	struct cpe *e = &x->e[x->ne++];
	*e = (struct cpe){ .tid = sqlite3_column_int(s, 0), .start = sqlite3_column_int64(s, 1),
			   .dur = sqlite3_column_int64(s, 2), .kind = sqlite3_column_int(s, 3),
			   .name_id = sqlite3_column_int64(s, 4), .step = sqlite3_column_int64(s, 5),
			   .ord = sqlite3_column_int64(s, 6), .lane = -1,
			   .call = -1, .node = -1, .parent = -1, .corr = -1, .wait_corr = -1, .wait_stream = -1 };
	if (e->tid >= 0 && e->tid < x->nlane_of)
		e->lane = x->lane_of[e->tid];
	return 0;
}

static int query_rank(struct cp *x, const char *sql, db_row_cb row)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(x->db, sql, &s);
	if (rc)
		return rc;
	db_bind_int(x->db, s, 1, x->rank);
	return db_each_row(x->db, s, row, x);
}

/* A launch link: its call (the shortest event starting there on its thread) and its device event
 * (device work first, else the device side of a synchronisation). */
static int flow_row(void *ud, sqlite3_stmt *s)
{
	struct cp *x = ud;
	int a = at_find(x, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1));
	int b = at_find(x, sqlite3_column_int(s, 2), sqlite3_column_int64(s, 3));
	if (a < 0 || b < 0)
		return 0;
	int call = x->bytid[a], dev = -1;
	for (int i = b; i < x->ne && x->e[x->bytid[i]].tid == x->e[x->bytid[b]].tid &&
			x->e[x->bytid[i]].start == x->e[x->bytid[b]].start; i++) {
		const struct cpe *d = &x->e[x->bytid[i]];
		if (d->lane >= 0 && is_work(d->kind)) {
			dev = x->bytid[i];
			break;
		}
		if (dev < 0 && (nflags(x, d) & NF_SYNC_ANY))
			dev = x->bytid[i];
	}
	if (dev >= 0 && dev != call && x->e[dev].call < 0)
		x->e[dev].call = call;
	return 0;
}

static int arg_row(void *ud, sqlite3_stmt *s)
{
	struct cp *x = ud;
	int i = at_find(x, sqlite3_column_int(s, 0), sqlite3_column_int64(s, 1));
	int64_t name = sqlite3_column_int64(s, 2), dur = sqlite3_column_int64(s, 3);
	for (; i >= 0 && i < x->ne && x->e[x->bytid[i]].tid == sqlite3_column_int(s, 0) &&
	       x->e[x->bytid[i]].start == sqlite3_column_int64(s, 1); i++) {
		struct cpe *e = &x->e[x->bytid[i]];
		if (e->name_id != name || e->dur != dur)
			continue;
		e->corr = sqlite3_column_type(s, 4) == SQLITE_INTEGER ? sqlite3_column_int64(s, 4) : -1;
		e->wait_corr = sqlite3_column_type(s, 5) == SQLITE_INTEGER ? sqlite3_column_int64(s, 5) : -1;
		e->wait_stream = sqlite3_column_type(s, 6) == SQLITE_INTEGER ? sqlite3_column_int64(s, 6) : -1;
		break;
	}
	return 0;
}

static int cp_read(struct cp *x)
{
	int rc = query_rank(x, "SELECT tid, start_ns, dur_ns, kind, name_id, coalesce(step, -1), ord FROM event WHERE rank = ?1",
			    ev_row);
	if (rc || !x->ne)
		return rc;
	if (!(x->bytid = malloc((size_t)x->ne * sizeof *x->bytid)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < x->ne; i++)
		x->bytid[i] = i;
	qsort_r(x->bytid, (size_t)x->ne, sizeof *x->bytid, cmp_tid, x);
	if (db_has_table(x->db, "flow") &&
	    (rc = query_rank(x, "SELECT src_tid, src_ns, dst_tid, dst_ns FROM flow WHERE rank = ?1 AND kind = "
				DB_SQL_FLOW_LAUNCH, flow_row)) != 0)
		return rc;
	if (db_has_table(x->db, "arg"))
		rc = query_rank(x, "SELECT a.tid, a.start_ns, a.name_id, a.dur_ns,"
				   " json_extract(a.args, '$.correlation'), json_extract(a.args, '$.wait_on_cuda_event_record_corr_id'),"
				   " json_extract(a.args, '$.wait_on_stream') FROM arg a JOIN string s ON s.id = a.name_id"
				   " WHERE a.rank = ?1 AND s.value IN ('cudaEventRecord', 'Stream Wait Event', 'Event Sync')"
				   " AND json_valid(a.args)", arg_row);
	return rc;
}

/* ---- the window ---- */

/* [lo, hi] of the rank: steps step_lo..step_hi, else the instance-th CPU range whose name holds
 * `name`, else every event. 1 when the rank has no such window. */
static int cp_window(struct cp *x, struct db_filter f, const struct db_critpath_opts *o, int *none)
{
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int found = 0;
	if (f.step_lo >= 0) {
		for (int i = 0; i < x->ne; i++) {
			const struct cpe *e = &x->e[i];
			if (e->kind != DB_KIND_STEP || e->lane >= 0 || e->step < f.step_lo || e->step > f.step_hi)
				continue;
			found = 1;
			if (e->start < lo)
				lo = e->start;
			if (i64_add_sat(e->start, e->dur) > hi)
				hi = i64_add_sat(e->start, e->dur);
		}
	} else if (o && o->window_name && *o->window_name) {
		int *ix = malloc((size_t)x->ne * sizeof *ix), n = 0;
		if (!ix)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		for (int i = 0; i < x->ne; i++) {
			const struct cpe *e = &x->e[i];
			if (is_cpu(x, e) && e->name_id > 0 && e->name_id < x->nnames && strstr(x->names[e->name_id], o->window_name))
				ix[n++] = i;
		}
		qsort_r(ix, (size_t)n, sizeof *ix, cmp_start, x);
		if (o->instance >= 0 && o->instance < n) {
			const struct cpe *e = &x->e[ix[o->instance]];
			found = 1;
			lo = e->start;
			hi = i64_add_sat(e->start, e->dur);
		}
		free(ix);
	} else {
		for (int i = 0; i < x->ne; i++) {
			found = 1;
			if (x->e[i].start < lo)
				lo = x->e[i].start;
			if (i64_add_sat(x->e[i].start, x->e[i].dur) > hi)
				hi = i64_add_sat(x->e[i].start, x->e[i].dur);
		}
	}
	*none = !found;
	x->lo = lo;
	x->hi = hi;
	return 0;
}

/* ---- the graph ---- */

static int64_t node_ts(const struct cp *x, int node)
{
	const struct cpe *e = &x->e[x->nodev[node / 2]];
	return node % 2 ? i64_add_sat(e->start, e->dur) : e->start;
}

static int add_edge(struct cp *x, int u, int v, int type, int zero, int attr)
{
	int rc = ARRAY_GROW(x->ed, x->ned, x->caped, 4096, "building the critical path graph");
	if (rc)
		return rc;
	int64_t w = type == E_DEP || type == E_SYNC || zero ? 0 : i64_sub_sat(node_ts(x, v), node_ts(x, u));
	x->ed[x->ned++] = (struct cpedge){ u, v, type, type == E_OP || type == E_KK ? attr : -1, w < 0 ? 0 : w };
	return 0;
}

static int cp_nodes(struct cp *x)
{
	if (!(x->nodev = malloc((size_t)x->ne * sizeof *x->nodev)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < x->ne; i++) {
		struct cpe *e = &x->e[i];
		int node = 0;
		if (is_cpu(x, e))
			node = in_window(x, e) &&
			       (e->kind == DB_KIND_OP || (e->kind == DB_KIND_RANGE && (nflags(x, e) & NF_RUNTIME)));
		else if (e->lane >= 0 && is_work(e->kind) && e->call >= 0)
			node = in_window(x, &x->e[e->call]);
		if (node) {
			e->node = x->nnodes;
			x->nodev[x->nnodes++] = i;
		}
	}
	return 0;
}

/* A launch call is a runtime call whatever its name (db/runtime.c's rule). */
static void cp_mark_calls(struct cp *x)
{
	for (int i = 0; i < x->ne; i++)
		if (x->e[i].call >= 0) {
			struct cpe *c = &x->e[x->e[i].call];
			if (c->kind == DB_KIND_RANGE && c->name_id > 0 && c->name_id < x->nnames)
				x->nf[c->name_id] |= NF_RUNTIME;
		}
}

/* The runtime lock: calls that take it, in order of their points (time, then event), each call's
 * own time from its start to its end when no other end came between, and each end after the end
 * before it. */
struct lockpt {
	int64_t ts;
	int ev, is_start;
};

static int cmp_lockpt(const void *pa, const void *pb)
{
	const struct lockpt *a = pa, *b = pb;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->ev != b->ev)
		return a->ev < b->ev ? -1 : 1;
	return b->is_start - a->is_start;
}

static int cp_lock_edges(struct cp *x)
{
	int n = 0, rc = 0;
	for (int k = 0; k < x->nnodes; k++)
		n += is_cpu(x, &x->e[x->nodev[k]]) && (nflags(x, &x->e[x->nodev[k]]) & NF_LOCK);
	if (!n)
		return 0;
	struct lockpt *p = malloc((size_t)n * 2 * sizeof *p);
	int *open = malloc((size_t)n * sizeof *open), nopen = 0, m = 0;
	if (!p || !open) {
		free(p);
		free(open);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int k = 0; k < x->nnodes; k++) {
		const struct cpe *e = &x->e[x->nodev[k]];
		if (!is_cpu(x, e) || !(nflags(x, e) & NF_LOCK))
			continue;
		p[m++] = (struct lockpt){ e->start, x->nodev[k], 1 };
		p[m++] = (struct lockpt){ i64_add_sat(e->start, e->dur), x->nodev[k], 0 };
	}
	qsort(p, (size_t)m, sizeof *p, cmp_lockpt);
	int last_end = -1, last_was_end = 0;
	for (int i = 0; i < m && !rc; i++) {
		int node = x->e[p[i].ev].node;
		if (p[i].is_start) {
			open[nopen++] = node;
			last_was_end = 0;
			continue;
		}
		while (nopen && !rc) {
			int s = open[--nopen];
			if (s == node)
				rc = add_edge(x, 2 * s, 2 * node + 1, E_OP, 0, p[i].ev);
			else
				rc = add_edge(x, 2 * s, 2 * node + 1, E_DEP, 0, -1);
		}
		if (!rc && last_was_end)
			rc = add_edge(x, last_end, 2 * node + 1, E_DEP, 0, -1);
		last_end = 2 * node + 1;
		last_was_end = 1;
	}
	free(p);
	free(open);
	return rc;
}

/* Two successive points of one thread share the runtime lock: both calls take it, and they are not
 * one's end and the next one's start. */
static int shares_lock(const struct cp *x, int a, int b)
{
	return (nflags(x, &x->e[x->nodev[a / 2]]) & NF_LOCK) && (nflags(x, &x->e[x->nodev[b / 2]]) & NF_LOCK) &&
	       (a % 2 == 0 || b % 2 == 1);
}

/* One thread's call stack walked in nesting order. */
struct cpwalk {
	int last, depth, last_parent;
};

static int walk_enter(struct cp *x, struct cpwalk *w, int ev)
{
	const struct cpe *e = &x->e[ev];
	if (e->node < 0)
		return 0;
	int s = 2 * e->node, rc = 0;
	if (w->last >= 0 && !shares_lock(x, w->last, s)) {
		/* attributed to the event of a start it leaves, else (an end → a start) their parent */
		int attr = w->last % 2 == 0 ? x->nodev[w->last / 2] : w->last_parent;
		rc = add_edge(x, w->last, s, w->depth == 0 ? E_DEP : E_OP, 0, attr);
	}
	w->last = s;
	w->last_parent = e->parent;
	w->depth++;
	return rc;
}

static int walk_exit(struct cp *x, struct cpwalk *w, int ev)
{
	const struct cpe *e = &x->e[ev];
	if (e->node < 0)
		return 0;
	int t = 2 * e->node + 1, rc = 0;
	if (w->last >= 0 && !shares_lock(x, w->last, t)) {
		int attr = w->last % 2 == 0 ? x->nodev[w->last / 2] : ev;
		rc = add_edge(x, w->last, t, E_OP, (nflags(x, e) & NF_BLOCKING) != 0, attr);
	}
	w->last = t;
	w->last_parent = e->parent;
	w->depth--;
	return rc;
}

/* The thread holding every CPU operator or annotation whose name has flag f, or −1 when none or several. */
static int thread_of(const struct cp *x, unsigned f)
{
	int tid = -1;
	for (int i = 0; i < x->ne; i++) {
		const struct cpe *e = &x->e[i];
		if (!is_cpu(x, e) || !in_window(x, e) || !(nflags(x, e) & f) || (nflags(x, e) & (NF_RUNTIME | NF_PYTHON)) ||
		    (e->kind != DB_KIND_OP && e->kind != DB_KIND_RANGE && e->kind != DB_KIND_STEP))
			continue;
		if (tid >= 0 && tid != e->tid)
			return -1;
		tid = e->tid;
	}
	return tid;
}

struct cpord {
	const struct cp *x;
	int fwd, bwd;
};

static int walk_tid(const struct cpord *o, int tid)
{
	return tid == o->bwd ? o->fwd : tid;
}

static int cmp_walk(const void *pa, const void *pb, void *ud)
{
	const struct cpord *o = ud;
	int a = *(const int *)pa, b = *(const int *)pb;
	int ta = walk_tid(o, o->x->e[a].tid), tb = walk_tid(o, o->x->e[b].tid);
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return cmp_start(pa, pb, (void *)o->x);
}

static int cp_stack_edges(struct cp *x)
{
	struct cpord o = { x, thread_of(x, NF_FWD), thread_of(x, NF_BWD) };
	if (o.fwd < 0 || o.bwd < 0 || o.fwd == o.bwd)
		o.fwd = o.bwd = -1;
	int *v = malloc((size_t)x->ne * sizeof *v), n = 0, rc = 0;
	int *stk = malloc((size_t)x->ne * sizeof *stk), ns = 0;
	if (!v || !stk) {
		free(v);
		free(stk);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < x->ne; i++)
		if (is_cpu(x, &x->e[i]) && in_window(x, &x->e[i]))
			v[n++] = i;
	qsort_r(v, (size_t)n, sizeof *v, cmp_walk, &o);
	struct cpwalk w = { -1, 0, -1 };
	for (int i = 0; i < n && !rc; i++) {
		const struct cpe *e = &x->e[v[i]];
		if (i && walk_tid(&o, e->tid) != walk_tid(&o, x->e[v[i - 1]].tid)) {
			while (ns && !rc)
				rc = walk_exit(x, &w, stk[--ns]);
			w = (struct cpwalk){ -1, 0, -1 };
		}
		while (ns && !rc && i64_add_sat(x->e[stk[ns - 1]].start, x->e[stk[ns - 1]].dur) <= e->start)
			rc = walk_exit(x, &w, stk[--ns]);
		x->e[v[i]].parent = ns ? stk[ns - 1] : -1;
		if (!rc)
			rc = walk_enter(x, &w, v[i]);
		stk[ns++] = v[i];
	}
	while (ns && !rc)
		rc = walk_exit(x, &w, stk[--ns]);
	free(v);
	free(stk);
	return rc;
}

/* ---- device work: queue length, launches, synchronisation ---- */

struct qpt {
	int lane, ev, delta;
	int64_t ts;
};

static int cmp_qpt(const void *pa, const void *pb)
{
	const struct qpt *a = pa, *b = pb;
	if (a->lane != b->lane)
		return a->lane < b->lane ? -1 : 1;
	if (a->ts != b->ts)
		return a->ts < b->ts ? -1 : 1;
	if (a->delta != b->delta)
		return b->delta - a->delta;   /* a launch before a start at the same time */
	return (a->ev > b->ev) - (a->ev < b->ev);
}

static int cmp_launch_at(const void *pa, const void *pb)
{
	const struct cplaunch *a = pa, *b = pb;
	if (a->lane != b->lane)
		return a->lane < b->lane ? -1 : 1;
	if (a->at != b->at)
		return a->at < b->at ? -1 : 1;
	return (a->ev > b->ev) - (a->ev < b->ev);
}

static int cmp_launch_tid(const void *pa, const void *pb)
{
	const struct cplaunch *a = pa, *b = pb;
	if (a->lane != b->lane)
		return a->lane < b->lane ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	return cmp_launch_at(pa, pb);
}

/* Queue length per stream over the rank's linked device work: +1 at the launch call's start, −1 at
 * the device start; and the launches sorted for the synchronisation lookups. */
static int cp_queues(struct cp *x)
{
	int n = 0;
	for (int i = 0; i < x->ne; i++)
		n += x->e[i].lane >= 0 && is_work(x->e[i].kind) && x->e[i].call >= 0;
	if (!n)
		return 0;
	struct qpt *q = malloc((size_t)n * 2 * sizeof *q);
	x->la = malloc((size_t)n * sizeof *x->la);
	x->lt = malloc((size_t)n * sizeof *x->lt);
	if (!q || !x->la || !x->lt) {
		free(q);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int m = 0;
	for (int i = 0; i < x->ne; i++) {
		const struct cpe *e = &x->e[i];
		if (e->lane < 0 || !is_work(e->kind) || e->call < 0)
			continue;
		q[m++] = (struct qpt){ e->lane, i, 1, x->e[e->call].start };
		q[m++] = (struct qpt){ e->lane, i, -1, e->start };
		x->la[x->nla++] = (struct cplaunch){ e->lane, x->e[e->call].tid, i, x->e[e->call].start };
	}
	qsort(q, (size_t)m, sizeof *q, cmp_qpt);
	int len = 0;
	for (int i = 0; i < m; i++) {
		if (i && q[i].lane != q[i - 1].lane)
			len = 0;
		len += q[i].delta;
		if (q[i].delta > 0)
			x->e[q[i].ev].qcall = len;
		else
			x->e[q[i].ev].qstart = len;
	}
	free(q);
	memcpy(x->lt, x->la, (size_t)x->nla * sizeof *x->lt);
	qsort(x->la, (size_t)x->nla, sizeof *x->la, cmp_launch_at);
	qsort(x->lt, (size_t)x->nla, sizeof *x->lt, cmp_launch_tid);
	return 0;
}

/* The device event of the last launch on `lane` whose call starts at or before `at`, or −1. */
static int launch_before(const struct cp *x, int lane, int64_t at)
{
	int lo = 0, hi = x->nla;
	while (lo < hi) {
		int m = (lo + hi) / 2;
		if (x->la[m].lane < lane || (x->la[m].lane == lane && x->la[m].at <= at))
			lo = m + 1;
		else
			hi = m;
	}
	return lo > 0 && x->la[lo - 1].lane == lane ? x->la[lo - 1].ev : -1;
}

/* The device event of the first launch on `lane` from thread `tid` whose call starts at or after `at`, or −1. */
static int launch_after(const struct cp *x, int lane, int tid, int64_t at)
{
	int lo = 0, hi = x->nla;
	while (lo < hi) {
		int m = (lo + hi) / 2;
		const struct cplaunch *l = &x->lt[m];
		if (l->lane < lane || (l->lane == lane && (l->tid < tid || (l->tid == tid && l->at < at))))
			lo = m + 1;
		else
			hi = m;
	}
	return lo < x->nla && x->lt[lo].lane == lane && x->lt[lo].tid == tid ? x->lt[lo].ev : -1;
}

struct corrix {
	int64_t corr;
	int ev;
};

static int cmp_corr_only(const void *pa, const void *pb)
{
	const struct corrix *a = pa, *b = pb;
	return (a->corr > b->corr) - (a->corr < b->corr);
}

static int cmp_corr(const void *pa, const void *pb)
{
	const struct corrix *a = pa, *b = pb;
	int c = cmp_corr_only(pa, pb);
	return c ? c : (a->ev > b->ev) - (a->ev < b->ev);
}

/* The lane of the rank's (device, stream), −1 when none. */
static int lane_of_stream(const struct cp *x, int device, int64_t stream)
{
	for (int i = 0; i < x->nlanes; i++)
		if (x->lanes[i].rank == x->rank && x->lanes[i].device == device && x->lanes[i].stream == stream)
			return i;
	return -1;
}

/* The work an event wait (Stream Wait Event, Event Sync) waits for: the last launched on the
 * recorded stream before the cudaEventRecord the wait names, or −1. */
static int waited_work(const struct cp *x, const struct corrix *rec, int nrec, const struct cpe *w)
{
	if (w->wait_corr < 0 || w->wait_stream < 0 || w->lane < 0)
		return -1;
	struct corrix k = { w->wait_corr, -1 };
	const struct corrix *r = nrec ? bsearch(&k, rec, (size_t)nrec, sizeof k, cmp_corr_only) : NULL;
	int lane = lane_of_stream(x, x->lanes[w->lane].device, w->wait_stream);
	if (!r || lane < 0)
		return -1;
	return launch_before(x, lane, x->e[r->ev].start);
}

static int cmp_kernel_order(const void *pa, const void *pb, void *ud)
{
	const struct cp *x = ud;
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct cpe *p = &x->e[a], *q = &x->e[b];
	int64_t ta = (nflags(x, p) & NF_SYNC_ANY) ? i64_add_sat(p->start, p->dur) : p->start;
	int64_t tb = (nflags(x, q) & NF_SYNC_ANY) ? i64_add_sat(q->start, q->dur) : q->start;
	if (ta != tb)
		return ta < tb ? -1 : 1;
	return (a > b) - (a < b);
}

static int cp_kernel_edges(struct cp *x)
{
	int rc = cp_queues(x);
	if (rc)
		return rc;
	/* cudaEventRecord calls by correlation id */
	int nrec = 0, nk = 0;
	for (int i = 0; i < x->ne; i++) {
		const struct cpe *e = &x->e[i];
		nrec += (nflags(x, e) & NF_RECORD) && e->corr >= 0;
		nk += e->node >= 0 && !is_cpu(x, e);
		nk += (nflags(x, e) & NF_SYNC_ANY) && e->call >= 0;
	}
	struct corrix *rec = malloc((size_t)(nrec ? nrec : 1) * sizeof *rec);
	int *k = malloc((size_t)(nk ? nk : 1) * sizeof *k), *last = malloc((size_t)(x->nlanes ? x->nlanes : 1) * sizeof *last);
	int *sync = malloc((size_t)x->ne * sizeof *sync);
	if (!rec || !k || !last || !sync) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	nrec = nk = 0;
	for (int i = 0; i < x->ne; i++) {
		const struct cpe *e = &x->e[i];
		sync[i] = -1;
		if ((nflags(x, e) & NF_RECORD) && e->corr >= 0)
			rec[nrec++] = (struct corrix){ e->corr, i };
		if (e->node >= 0 && !is_cpu(x, e))
			k[nk++] = i;
		else if ((nflags(x, e) & NF_SYNC_ANY) && e->call >= 0 &&
			 (in_window(x, &x->e[e->call]) || (nflags(x, e) & NF_WAIT_EVENT)))
			k[nk++] = i;
	}
	qsort(rec, (size_t)nrec, sizeof *rec, cmp_corr);
	qsort_r(k, (size_t)nk, sizeof *k, cmp_kernel_order, x);
	for (int i = 0; i < x->nlanes; i++)
		last[i] = -1;
	for (int i = 0; i < nk && !rc; i++) {
		struct cpe *e = &x->e[k[i]];
		unsigned f = nflags(x, e);
		const struct cpe *call = &x->e[e->call];
		if (f & NF_SYNC_ANY) {
			if (f & (NF_WAIT_EVENT | NF_EVENT_SYNC)) {
				int src = waited_work(x, rec, nrec, e);
				if (src < 0)
					continue;
				if (f & NF_WAIT_EVENT) {
					int dest = launch_after(x, e->lane, call->tid, call->start);
					if (dest >= 0)
						sync[dest] = src;
				} else if (x->e[src].node >= 0 && call->node >= 0)
					rc = add_edge(x, 2 * x->e[src].node + 1, 2 * call->node + 1, E_SYNC, 0, -1);
				continue;
			}
			if (call->node < 0)
				continue;
			for (int l = 0; l < x->nlanes && !rc; l++)   /* Context Sync: every stream; Stream Sync: its own */
				if (last[l] >= 0 && ((f & NF_CONTEXT_SYNC) ? x->lanes[l].rank == x->rank : l == e->lane))
					rc = add_edge(x, last[l], 2 * call->node + 1, E_SYNC, 0, -1);
			continue;
		}
		int s = 2 * e->node, t = s + 1, lane = e->lane;
		if ((rc = add_edge(x, s, t, E_OP, 0, k[i])) != 0)
			break;
		int ks = sync[k[i]] >= 0 && x->e[sync[k[i]]].node >= 0 ? 2 * x->e[sync[k[i]]].node + 1 : -1;
		if (ks >= 0 && (rc = add_edge(x, ks, s, E_SYNC, 0, -1)) != 0)
			break;
		sync[k[i]] = -1;
		if (e->qcall == 1 && e->qstart == 0 && (last[lane] < 0 || node_ts(x, last[lane]) < call->start) &&
		    (ks < 0 || node_ts(x, ks) < call->start) && call->node >= 0)
			rc = add_edge(x, 2 * call->node, s, E_LAUNCH, 0, -1);
		else if (last[lane] >= 0 && e->start - node_ts(x, last[lane]) < CP_KK_MAX_NS &&
			 (ks < 0 || node_ts(x, ks) < node_ts(x, last[lane])))
			rc = add_edge(x, last[lane], s, E_KK, 0, x->nodev[last[lane] / 2]);
		last[lane] = t;
	}
out:
	free(rec);
	free(k);
	free(last);
	free(sync);
	return rc;
}

/* ---- the longest path and its causes ---- */

static int cause_of(const struct cp *x, const struct cpedge *ed)
{
	if (ed->type == E_KK)
		return DB_CP_KERNEL_KERNEL;
	if (ed->type == E_LAUNCH)
		return DB_CP_LAUNCH;
	if (ed->attr < 0 || is_cpu(x, &x->e[ed->attr]))
		return DB_CP_CPU;
	const struct cpe *e = &x->e[ed->attr];
	return db_kernel_class(e->name_id > 0 && e->name_id < x->nnames ? x->names[e->name_id] : "", e->kind) ==
			       DB_KCLASS_COMM
		       ? DB_CP_GPU_COMM
		       : DB_CP_GPU_COMPUTE;
}

struct topacc {
	int64_t name_id, ns;
	int cause, events;
};

static int cmp_topacc(const void *pa, const void *pb)
{
	const struct topacc *a = pa, *b = pb;
	if (a->name_id != b->name_id)
		return a->name_id < b->name_id ? -1 : 1;
	return a->cause - b->cause;
}

static int cmp_top(const void *pa, const void *pb)
{
	const struct db_cp_top *a = pa, *b = pb;
	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	int c = strcmp(a->name, b->name);
	return c ? c : a->cause - b->cause;
}

static int cp_path(struct cp *x, struct db_critpath *out, int top)
{
	int N = 2 * x->nnodes, rc = 0;
	out->nodes = N;
	out->edges = x->ned;
	if (!N)
		return 0;
	int *indeg = calloc((size_t)N + 1, sizeof *indeg), *first = calloc((size_t)N + 1, sizeof *first);
	int *in = malloc((size_t)(x->ned ? x->ned : 1) * sizeof *in), *outs = malloc((size_t)(x->ned ? x->ned : 1) * sizeof *outs);
	int *ofirst = calloc((size_t)N + 1, sizeof *ofirst), *order = malloc((size_t)N * sizeof *order);
	int64_t *dist = malloc((size_t)N * sizeof *dist);
	int *pred = malloc((size_t)N * sizeof *pred);
	int64_t *cred = calloc((size_t)x->ne, sizeof *cred);
	unsigned char *onpath = calloc((size_t)x->ne, 1);
	struct topacc *acc = NULL;
	if (!indeg || !first || !in || !outs || !ofirst || !order || !dist || !pred || !cred || !onpath) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	/* incoming edges by node in insertion order (CSR), outgoing likewise */
	for (int i = 0; i < x->ned; i++)
		first[x->ed[i].v + 1]++, ofirst[x->ed[i].u + 1]++;
	for (int v = 0; v < N; v++)
		first[v + 1] += first[v], ofirst[v + 1] += ofirst[v];
	for (int v = 0; v < N; v++)
		indeg[v] = first[v + 1] - first[v];
	int *fill = calloc((size_t)N, sizeof *fill), *ofill = calloc((size_t)N, sizeof *ofill);
	if (!fill || !ofill) {
		free(fill);
		free(ofill);
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < x->ned; i++) {
		in[first[x->ed[i].v] + fill[x->ed[i].v]++] = i;
		outs[ofirst[x->ed[i].u] + ofill[x->ed[i].u]++] = i;
	}
	free(fill);
	free(ofill);
	/* Kahn's order, sources by time */
	int head = 0, tail = 0;
	for (int v = 0; v < N; v++)
		if (!indeg[v])
			order[tail++] = v;
	while (head < tail) {
		int u = order[head++];
		for (int j = ofirst[u]; j < ofirst[u + 1]; j++)
			if (!--indeg[x->ed[outs[j]].v])
				order[tail++] = x->ed[outs[j]].v;
	}
	if (tail < N) {
		out->cycle = 1;   /* a dependency loop (clocks out of order): no path */
		goto out;
	}
	int best = -1;
	for (int i = 0; i < N; i++) {
		int v = order[i];
		dist[v] = 0;
		pred[v] = -1;
		for (int j = first[v]; j < first[v + 1]; j++) {
			const struct cpedge *ed = &x->ed[in[j]];
			int64_t d = i64_add_sat(dist[ed->u], ed->w);
			if (pred[v] < 0 || d > dist[v])
				dist[v] = d, pred[v] = in[j];
		}
		if (best < 0 || dist[v] > dist[best])
			best = v;
	}
	out->length_ns = dist[best];
	out->end_ns = node_ts(x, best);
	int v = best, npath = 1;
	onpath[x->nodev[v / 2]] = 1;
	while (pred[v] >= 0) {
		const struct cpedge *ed = &x->ed[pred[v]];
		int cause = cause_of(x, ed);
		if (ed->type != E_DEP && ed->type != E_SYNC)
			out->cause_ns[cause] = i64_add_sat(out->cause_ns[cause], ed->w);
		/* the time goes to the attributed event; a launch's to the work it launched */
		int ev = ed->type == E_LAUNCH ? x->nodev[ed->v / 2] : ed->attr;
		if (ev >= 0 && ed->w > 0)
			cred[ev] = i64_add_sat(cred[ev], ed->w);
		v = ed->u;
		onpath[x->nodev[v / 2]] = 1;
		npath++;
	}
	out->start_ns = node_ts(x, v);
	out->path_nodes = npath;
	/* the events on the path (a point of theirs on it, or time credited) in time order */
	int nev = 0;
	for (int i = 0; i < x->ne; i++)
		nev += onpath[i] || cred[i] > 0;
	if (nev && !(out->ev = calloc((size_t)nev, sizeof *out->ev))) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	int nacc = 0;
	if (nev && !(acc = malloc((size_t)nev * sizeof *acc))) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < x->ne; i++) {
		if (!onpath[i] && cred[i] <= 0)
			continue;
		const struct cpe *e = &x->e[i];
		int cause = is_cpu(x, e) ? DB_CP_CPU : cause_of(x, &(struct cpedge){ .type = E_OP, .attr = i });
		out->ev[out->nev++] = (struct db_cp_event){ .tid = e->tid, .kind = e->kind, .start_ns = e->start,
							    .dur_ns = e->dur, .name_id = e->name_id, .cause = cause,
							    .path_ns = cred[i], .on_path = onpath[i] };
		out->path_events += onpath[i];
		if (cred[i] > 0)
			acc[nacc++] = (struct topacc){ e->name_id, cred[i], cause, 1 };
	}
	/* the top events: time credited per (name, cause) */
	qsort(acc, (size_t)nacc, sizeof *acc, cmp_topacc);
	int ntop = 0;
	for (int i = 0; i < nacc; i++) {
		if (ntop && acc[ntop - 1].name_id == acc[i].name_id && acc[ntop - 1].cause == acc[i].cause) {
			acc[ntop - 1].ns = i64_add_sat(acc[ntop - 1].ns, acc[i].ns);
			acc[ntop - 1].events++;
		} else
			acc[ntop++] = acc[i];
	}
	if (ntop && !(out->top = calloc((size_t)ntop, sizeof *out->top))) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < ntop; i++) {
		int64_t id = acc[i].name_id;
		if (!(out->top[i].name = strdup(id > 0 && id < x->nnames ? x->names[id] : ""))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			goto out;
		}
		out->top[i].cause = acc[i].cause;
		out->top[i].ns = acc[i].ns;
		out->top[i].events = acc[i].events;
		out->ntop++;
	}
	qsort(out->top, (size_t)out->ntop, sizeof *out->top, cmp_top);
	if (top > 0 && out->ntop > top) {
		for (int i = top; i < out->ntop; i++)
			free(out->top[i].name);
		out->ntop = top;
	}
out:
	free(indeg);
	free(first);
	free(in);
	free(outs);
	free(ofirst);
	free(order);
	free(dist);
	free(pred);
	free(cred);
	free(onpath);
	free(acc);
	return rc;
}

/* ---- per rank ---- */

static void cp_result_clear(struct db_critpath *c)
{
	for (int j = 0; j < c->ntop; j++)
		free(c->top[j].name);
	free(c->top);
	free(c->ev);
	memset(c, 0, sizeof *c);
}

static void cp_free(struct cp *x)
{
	free(x->lane_of);
	free(x->e);
	free(x->bytid);
	free(x->ed);
	free(x->nodev);
	free(x->la);
	free(x->lt);
	x->lane_of = NULL, x->e = NULL, x->bytid = NULL, x->ed = NULL, x->nodev = NULL, x->la = x->lt = NULL;
	x->nlane_of = x->ne = x->cape = x->ned = x->caped = x->nnodes = x->nla = 0;
}

static int cp_rank(struct cp *x, struct db_filter f, const struct db_critpath_opts *o, struct db_critpath *out,
		   int *none)
{
	int maxtid = -1;
	for (int i = 0; i < x->nlanes; i++)   /* a lane beyond DB_TID_MAX is a damaged row: not followed */
		if (x->lanes[i].rank == x->rank && x->lanes[i].tid > maxtid && x->lanes[i].tid <= DB_TID_MAX)
			maxtid = x->lanes[i].tid;
	if (maxtid < 0) {   /* no device lane: no device work to follow */
		*none = 1;
		return 0;
	}
	if (!(x->lane_of = malloc((size_t)(maxtid + 1) * sizeof *x->lane_of)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	x->nlane_of = maxtid + 1;
	for (int i = 0; i <= maxtid; i++)
		x->lane_of[i] = -1;
	for (int i = 0; i < x->nlanes; i++)
		if (x->lanes[i].rank == x->rank && x->lanes[i].tid >= 0 && x->lanes[i].tid <= maxtid)
			x->lane_of[x->lanes[i].tid] = i;
	int rc = cp_read(x);
	if (!rc)
		rc = cp_window(x, f, o, none);
	if (rc || *none)
		return rc;
	out->rank = x->rank;
	out->window_lo_ns = x->lo;
	out->window_hi_ns = x->hi;
	cp_mark_calls(x);
	if (!(rc = cp_nodes(x)) && !(rc = cp_lock_edges(x)) && !(rc = cp_stack_edges(x)) && !(rc = cp_kernel_edges(x)))
		rc = cp_path(x, out, o ? o->top : 0);
	return rc;
}

/* db_critpath over the filter's ranks, or when `in` over in[0..nin) only. */
static int critpath_of(struct db *db, struct db_filter f, const struct db_critpath_opts *o, const int *in, int nin,
		       struct db_critpath **out, int *n)
{
	*out = NULL;
	*n = 0;
	struct cp x = { .db = db };
	struct db_rank_info *ranks = NULL;
	int nranks = 0, cap = 0;
	int rc = db_strings(db, &x.names, &x.nnames);
	if (!rc && !(x.nf = calloc((size_t)(x.nnames > 0 ? x.nnames : 1), sizeof *x.nf)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int64_t i = 1; !rc && i < x.nnames; i++) {
		const char *s = x.names[i];
		int cls = db_runtime_class(s);
		unsigned fl = cls >= 0 ? NF_RUNTIME : 0;
		if (cls == DB_RT_SYNC || cls == DB_RT_SYNC_COPY)
			fl |= NF_BLOCKING;
		for (size_t j = 0; j < sizeof CP_NAMES / sizeof CP_NAMES[0]; j++)
			if (!strcmp(s, CP_NAMES[j].name))
				fl |= CP_NAMES[j].flags;
		if (strstr(s, "forward"))
			fl |= NF_FWD;
		if (strstr(s, "autograd"))
			fl |= NF_BWD;
		if (strstr(s, ".py("))
			fl |= NF_PYTHON;
		x.nf[i] = fl;
	}
	if (!rc)
		rc = db_device_lanes(db, &x.lanes, &x.nlanes);
	if (!rc)
		rc = db_ranks(db, &ranks, &nranks);
	for (int r = 0; !rc && r < nranks; r++) {
		if (f.rank >= 0 && ranks[r].rank != f.rank)
			continue;
		int want = !in;
		for (int k = 0; k < nin && !want; k++)
			want = in[k] == ranks[r].rank;
		if (!want)
			continue;
		struct db_critpath one = { 0 };
		int none = 0;
		x.rank = ranks[r].rank;
		rc = cp_rank(&x, f, o, &one, &none);
		cp_free(&x);
		if (!rc && !none && (rc = ARRAY_GROW(*out, *n, cap, 4, "computing critical paths")) == 0)
			(*out)[(*n)++] = one;
		else
			cp_result_clear(&one);
	}
	cp_free(&x);
	db_ranks_free(ranks, nranks);
	free(x.lanes);
	free(x.nf);
	db_strings_free(x.names, x.nnames);
	if (rc) {
		db_critpath_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

void db_critpath_free(struct db_critpath *c, int n)
{
	for (int i = 0; c && i < n; i++)
		cp_result_clear(&c[i]);
	free(c);
}

int db_critpath(struct db *db, struct db_filter f, const struct db_critpath_opts *o, struct db_critpath **out, int *n)
{
	return critpath_of(db, f, o, NULL, 0, out, n);
}

int db_critpath_ranks(struct db *db, struct db_filter f, const struct db_critpath_opts *o, const int *in, int nin,
		      struct db_critpath **out, int *n)
{
	f.rank = -1;
	return critpath_of(db, f, o, in, nin, out, n);
}
