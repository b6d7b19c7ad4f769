/* profiler/report.c — `ascent report`: nsys-stats-style tables from a profile database, as an
 * aligned table, CSV, or one JSON document with the arrays ops, comm, groups (communicators: members, traffic), steps, ranks, mem, overhead.
 * All numbers come from db/'s shared queries. */
#include "profiler/prof.h"
#include "profiler/table.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* ---------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------- */
/* number formatting: CSV gets raw ns/bytes; tables get units */

struct fmt {
	int raw;
	char buf[24][48];
	int i;
};

static const char *ns(struct fmt *f, double v)
{
	char *b = f->buf[f->i++ % 24];
	if (f->raw)
		snprintf(b, 48, "%.0f", v);
	else if (v < 0)   /* a signed difference (units_ns prints a negative as unknown) */
		b[0] = '-', units_ns(b + 1, 47, -v);
	else
		units_ns(b, 48, v);
	return b;
}

static const char *by(struct fmt *f, double v)
{
	char *b = f->buf[f->i++ % 24];
	if (f->raw)
		snprintf(b, 48, "%.0f", v);
	else if (v < 0)
		b[0] = '-', units_bytes(b + 1, 47, -v);
	else
		units_bytes(b, 48, v);
	return b;
}

static const char *num(struct fmt *f, const char *fmtstr, double v)
{
	char *b = f->buf[f->i++ % 24];
	snprintf(b, 48, fmtstr, v);
	return b;
}

static const char *in(struct fmt *f, int64_t v)
{
	char *b = f->buf[f->i++ % 24];
	snprintf(b, 48, "%lld", (long long)v);
	return b;
}

/* A time that may be unknown (negative): "-" in a table, empty in CSV. */
static const char *ns_opt(struct fmt *f, int64_t v)
{
	return v >= 0 ? ns(f, (double)v) : f->raw ? "" : "-";
}

/* ---------------------------------------------------------------------------------------- */

struct data {
	struct db_op_stat *ops;
	int nops;
	struct db_comm_stat *comm;
	int ncomm;
	struct db_comm_group *groups;   /* per communicator: members, traffic */
	int ngroups;
	struct db_step_stat *steps;
	int nsteps;
	struct db_mem_stat *mem;
	int nmem;
	struct db_overhead_stat *ovh;
	int novh;
	struct db_rank_info *ranks;
	int nranks;
	struct db_shape_stat *shapes;   /* --by shape */
	int nshapes;
	struct db_launch_stat *launch;  /* imported traces: launch → kernel queue delays per rank */
	int nlaunch;
	struct db_device_lane *lanes;   /* imported traces: device lanes (their ranks split on devices) */
	int nlanes;
	struct db_device_stat *devs;    /* --by device: the temporal breakdown per rank and device */
	int ndevs;
	struct db_runtime_stat *rt;     /* --by runtime: the host's runtime calls per name */
	int nrt;
	struct db_step_work *sw;        /* imported traces: device work by the step that launched it */
	int nsw;
	struct db_opkernels ok;         /* --by opkernels: operators' kernel sequences, frequent sequences */
	int has_ok;
	struct db_critpath *cp;         /* --by critpath: the critical path per rank */
	int ncp, has_cp;
	struct db_annotation_stat *ann; /* --by annotations: GPU user annotations per rank and name */
	int nann, has_ann;
	struct db_counters ctr;         /* --by counters: CUPTI counters per kernel and operator */
	int has_ctr;
	struct db_step_spread *spread;  /* --by spread: each step's split over ranks and pipeline stages */
	int nspread, has_spread;
	struct db_coll coll;            /* --by collective: sync, wait, transit per collective and rank */
	int has_coll;
	struct db_comm_matrix mat;      /* --by matrix: point-to-point bytes, time, bandwidth per rank and host pair */
	int has_mat;
	int width;                      /* tables: the terminal's width (names shortened to fit), 0 whole names */
};

static void data_free(struct data *d)
{
	db_op_stats_free(d->ops, d->nops);
	db_comm_stats_free(d->comm, d->ncomm);
	db_comm_groups_free(d->groups, d->ngroups);
	free(d->steps);
	free(d->mem);
	db_overhead_stats_free(d->ovh, d->novh);
	db_ranks_free(d->ranks, d->nranks);
	db_shape_stats_free(d->shapes, d->nshapes);
	free(d->launch);
	free(d->lanes);
	db_device_stats_free(d->devs, d->ndevs);
	db_runtime_stats_free(d->rt, d->nrt);
	db_opkernels_free(&d->ok);
	free(d->sw);
	db_critpath_free(d->cp, d->ncp);
	db_annotation_stats_free(d->ann, d->nann);
	db_counters_free(&d->ctr);
	free(d->spread);
	db_coll_free(&d->coll);
	db_comm_matrix_free(&d->mat);
}

/* "device" when the rank's steps are split on its device lanes (an imported GPU trace), else "host". */
static const char *split_of(const struct data *d, int rank)
{
	for (int i = 0; i < d->nlanes; i++)
		if (d->lanes[i].rank == rank)
			return "device";
	return "host";
}

/* per-rank totals from the step decomposition */
struct rank_sum {
	int rank;
	int64_t steps, total, computing, comm, cno, ovl, free, bubble;
};

static int rank_sums(const struct data *d, struct rank_sum **out)
{
	struct rank_sum *r = calloc((size_t)d->nranks + 1, sizeof *r);
	if (!r)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < d->nranks; i++)
		r[i].rank = d->ranks[i].rank;
	for (int s = 0; s < d->nsteps; s++)
		for (int i = 0; i < d->nranks; i++)
			if (r[i].rank == d->steps[s].rank) {
				r[i].steps++;
				r[i].total = i64_add_sat(r[i].total, d->steps[s].total_ns);
				r[i].computing = i64_add_sat(r[i].computing, d->steps[s].computing_ns);
				r[i].comm = i64_add_sat(r[i].comm, d->steps[s].comm_ns);
				r[i].cno = i64_add_sat(r[i].cno, d->steps[s].comm_not_overlapped_ns);
				r[i].ovl = i64_add_sat(r[i].ovl, d->steps[s].overlapped_ns);
				r[i].free = i64_add_sat(r[i].free, d->steps[s].free_ns);
				r[i].bubble = i64_add_sat(r[i].bubble, d->steps[s].bubble_ns);
			}
	*out = r;
	return 0;
}

static void sec_ops(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Time (%)", "Total", "Instances", "Avg", "Med", "Min", "Max", "StdDev", "p95",
					 "Self", "GFLOP/s", "Name" };
	struct prof_tbl t = { .ncol = 12, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	int64_t sum = 0;
	for (int i = 0; i < d->nops; i++)
		sum = i64_add_sat(sum, d->ops[i].total_ns);   /* a damaged profile's durations may near INT64_MAX */
	for (int i = 0; i < d->nops; i++) {
		struct db_op_stat *o = &d->ops[i];
		char gf[32] = "-";
		if (o->flops_ns > 0)
			snprintf(gf, sizeof gf, "%.2f", o->flops / (double)o->flops_ns);
		prof_tbl_row(&t, num(&m, "%.1f", sum ? 100.0 * (double)o->total_ns / (double)sum : 0), ns(&m, (double)o->total_ns),
			in(&m, o->count), ns(&m, o->avg_ns), ns(&m, (double)o->med_ns), ns(&m, (double)o->min_ns),
			ns(&m, (double)o->max_ns), ns(&m, o->stddev_ns), ns(&m, (double)o->p95_ns), ns(&m, (double)o->self_ns),
			gf, o->name);
	}
	prof_tbl_print(&t, f, csv, "Operators (time % of summed operator time; self = minus nested ranges):");
	prof_tbl_free(&t);
}

static void sec_comm(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Total", "Count", "Avg", "Size", "Bytes", "AlgBW GB/s", "BusBW GB/s", "n",
					 "Matched", "Wait", "Transit", "+-", "Queued", "Name" };
	struct prof_tbl t = { .ncol = 14, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->ncomm; i++) {
		struct db_comm_stat *c = &d->comm[i];
		prof_tbl_row(&t, ns(&m, (double)c->total_ns), in(&m, c->count), ns(&m, c->avg_ns), by(&m, (double)c->bucket),
			by(&m, (double)c->bytes), num(&m, "%.3f", c->algbw_gbs), num(&m, "%.3f", c->busbw_gbs),
			in(&m, c->group_size), in(&m, c->matched), c->matched ? ns(&m, (double)c->wait_ns) : "-",
			c->matched ? ns(&m, (double)c->transit_ns) : "-", c->matched ? ns(&m, (double)c->err_ns) : "-",
			ns(&m, (double)c->queue_ns), c->name);
	}
	prof_tbl_print(&t, f, csv, "Communication (per name and size bucket; wait/transit from calls matched across "
			      "ranks; algbw and busbw (nccl-tests) from the transit when every call matched, else "
			      "from the total; queued = time in the communicator's queue before the transfer):");
	prof_tbl_free(&t);
}

/* The communicators with traffic, their members as world ranks (the comm table of every rank). */
static void sec_groups(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Id", "Name", "n", "Members", "Count", "Bytes", "Total" };
	struct prof_tbl t = { .ncol = 7, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	int rows = 0;
	for (int i = 0; i < d->ngroups; i++) {
		struct db_comm_group *g = &d->groups[i];
		if (!g->count)
			continue;
		prof_tbl_row(&t, in(&m, g->comm_id), g->name && *g->name ? g->name : "?", in(&m, g->size),
			g->members && *g->members ? g->members : "?", in(&m, g->count), by(&m, (double)g->bytes),
			ns(&m, (double)g->total_ns));
		rows++;
	}
	if (rows)
		prof_tbl_print(&t, f, csv, "Communicators (members as world ranks, in communicator order; calls of all members):");
	prof_tbl_free(&t);
}

static void sec_steps(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Step", "Rank", "Total", "Computing", "Comm (not ovl)", "Overlapped", "Free",
					 "Bubble", "Preparing" };
	struct prof_tbl t = { .ncol = 9, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->nsteps; i++) {
		struct db_step_stat *s = &d->steps[i];
		prof_tbl_row(&t, in(&m, s->step), in(&m, s->rank), ns(&m, (double)s->total_ns), ns(&m, (double)s->computing_ns),
			ns(&m, (double)s->comm_not_overlapped_ns), ns(&m, (double)s->overlapped_ns),
			ns(&m, (double)s->free_ns), ns(&m, (double)s->bubble_ns), ns(&m, (double)s->preparing_ns));
		/* spread across ranks after the last rank of a step */
		if (d->nranks > 1 && (i + 1 == d->nsteps || d->steps[i + 1].step != s->step)) {
			int64_t lo = INT64_MAX, hi = INT64_MIN;
			for (int k = i; k >= 0 && d->steps[k].step == s->step; k--) {
				lo = d->steps[k].total_ns < lo ? d->steps[k].total_ns : lo;
				hi = d->steps[k].total_ns > hi ? d->steps[k].total_ns : hi;
			}
			prof_tbl_row(&t, in(&m, s->step), "spread", ns(&m, (double)(hi - lo)), "", "", "", "", "", "");
		}
	}
	prof_tbl_print(&t, f, csv, "Steps (msprof decomposition; 'spread' = max - min of the step total across ranks):");
	prof_tbl_free(&t);
}

/* Device work by the step that launched it (db_step_work; docs/device.md), one row per launching
 * step of each rank and the rows of work launched outside every step or not linked; a total per rank. */
static void sec_step_work(struct data *d, FILE *f)
{
	if (!d->nsw)
		return;
	static const char *const C[] = { "Launched in", "Rank", "Events", "Device time", "Busy", "Compute",
					 "In own step %", "Runs past step end" };
	struct prof_tbl t = { .ncol = 8, .cols = C, .width = d->width };
	struct fmt m = { 0 };
	for (int i = 0; i < d->nsw; i++) {
		const struct db_step_work *w = &d->sw[i];
		char label[48];
		db_step_work_label(w, label, sizeof label);
		int step = w->where == DB_SW_STEP && w->events;
		prof_tbl_row(&t, label, in(&m, w->rank), in(&m, w->events), ns(&m, (double)w->device_ns), ns(&m, (double)w->busy_ns),
			     ns(&m, (double)w->compute_ns), step ? num(&m, "%.1f", 100.0 * (double)w->in_window_ns /
									    (double)(w->busy_ns ? w->busy_ns : 1)) : "-",
			     step && w->last_end_ns > w->step_end_ns ? ns(&m, (double)(w->last_end_ns - w->step_end_ns)) : "-");
		if (i + 1 == d->nsw || d->sw[i + 1].rank != w->rank) {   /* the rank's total: every device event once */
			int64_t ev = 0, dn = 0;
			for (int k = i; k >= 0 && d->sw[k].rank == w->rank; k--)
				ev += d->sw[k].events, dn = i64_add_sat(dn, d->sw[k].device_ns);
			prof_tbl_row(&t, "all", in(&m, w->rank), in(&m, ev), ns(&m, (double)dn), "", "", "", "");
		}
	}
	prof_tbl_print(&t, f, 0, "Device work by the step that launched it (docs/device.md; a kernel, copy, memset or "
			     "device collective belongs to the step whose window holds the start of its launch call, "
			     "wherever it runs; device time = summed durations, busy = their union, compute = union of "
			     "compute kernels; in own step = share of busy inside the step's window):");
	prof_tbl_free(&t);
}

static void sec_shapes(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Total", "Count", "Avg", "Input Dims", "Input type", "Name" };
	struct prof_tbl t = { .ncol = 6, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->nshapes; i++) {
		struct db_shape_stat *h = &d->shapes[i];
		prof_tbl_row(&t, ns(&m, (double)h->total_ns), in(&m, h->count), ns(&m, (double)h->total_ns / (double)h->count),
			h->input_dims, h->input_types, h->name);
	}
	prof_tbl_print(&t, f, csv, "Operators by input shape (imported traces' Input Dims and Input type; as PyTorch's "
			      "key_averages(group_by_input_shape=True)):");
	prof_tbl_free(&t);
}

/* The kernel-class combinations of db_device_stat.class_ns, by bit mask: JSON keys and CSV columns. */
static const char *const KCLASS_KEYS[8] = { NULL, "compute", "communication", "compute+communication", "memory",
					    "compute+memory", "communication+memory", "compute+communication+memory" };

static double pct_of(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* Achieved bandwidth of a kind of copy, GB/s (1e9 B/s): bytes / time; 0 without time. */
static double copy_gbs(const struct db_copy_stat *c)
{
	return c->total_ns > 0 ? (double)c->bytes / (double)c->total_ns : 0;
}

static void sec_devices(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Rank", "Device", "Span", "Idle", "Idle %", "Compute", "Compute %", "Non-compute",
					 "Non-compute %", "Comm under compute %", "Counted", "Left out",
					 "compute", "communication", "compute+communication", "memory", "compute+memory",
					 "communication+memory", "compute+communication+memory", "Host wait", "Kernel wait",
					 "Other idle", "Launch p50", "Launch p95" };
	struct prof_tbl t = { .ncol = csv ? 24 : 12, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->ndevs; i++) {
		struct db_device_stat *v = &d->devs[i];
		int64_t idle = v->span_ns - v->busy_ns, noncomp = v->busy_ns - v->compute_ns;
		prof_tbl_row(&t, in(&m, v->rank), in(&m, v->device), ns(&m, (double)v->span_ns), ns(&m, (double)idle),
			num(&m, "%.2f", pct_of(idle, v->span_ns)), ns(&m, (double)v->compute_ns),
			num(&m, "%.2f", pct_of(v->compute_ns, v->span_ns)), ns(&m, (double)noncomp),
			num(&m, "%.2f", pct_of(noncomp, v->span_ns)), num(&m, "%.2f", pct_of(v->comm_under_compute_ns, v->comm_ns)),
			in(&m, v->counted), in(&m, v->after_last_step + v->unlinked), ns(&m, (double)v->class_ns[1]),
			ns(&m, (double)v->class_ns[2]), ns(&m, (double)v->class_ns[3]), ns(&m, (double)v->class_ns[4]),
			ns(&m, (double)v->class_ns[5]), ns(&m, (double)v->class_ns[6]), ns(&m, (double)v->class_ns[7]),
			ns(&m, (double)v->idle_by_cause_ns[DB_IDLE_HOST_WAIT]),
			ns(&m, (double)v->idle_by_cause_ns[DB_IDLE_KERNEL_WAIT]),
			ns(&m, (double)v->idle_by_cause_ns[DB_IDLE_OTHER]), ns_opt(&m, v->launch_delay_p50_ns),
			ns_opt(&m, v->launch_delay_p95_ns));
	}
	prof_tbl_print(&t, f, csv, "Devices (HTA's temporal breakdown over the device work launched before the last step, "
			      "docs/device.md; idle = span - busy, non-compute = busy - compute; % of span; comm under "
			      "compute = share of communication-kernel time with a compute kernel running; left out = "
			      "launched in or after the last step, or with no launch link; --format csv or json for the "
			      "time per kernel class):");
	prof_tbl_free(&t);
}

/* --by device, second table: the streams of each device, then the device's totals (stream "all"). */
static void sec_streams(struct data *d, FILE *f)
{
	static const char *const C[] = { "Rank", "Device", "Stream", "Kernels", "Linked", "Queue mean", "Queue max",
					 "Launch p50", "Launch p95", "Short", "Host wait", "Kernel wait", "Other idle" };
	struct prof_tbl t = { .ncol = 13, .cols = C, .width = d->width };
	struct fmt m = { 0 };
	for (int i = 0; i < d->ndevs; i++) {
		struct db_device_stat *v = &d->devs[i];
		int64_t nshort = 0;
		for (int j = 0; j < v->nstreams; j++) {
			struct db_stream_stat *s = &v->streams[j];
			nshort += s->short_kernels;
			prof_tbl_row(&t, in(&m, v->rank), in(&m, v->device), in(&m, s->stream), in(&m, s->kernels),
				in(&m, s->linked), num(&m, "%.2f", s->queue_len_mean), in(&m, s->queue_len_max),
				ns_opt(&m, s->launch_delay_p50_ns), ns_opt(&m, s->launch_delay_p95_ns), in(&m, s->short_kernels),
				ns(&m, (double)s->idle_ns[DB_IDLE_HOST_WAIT]), ns(&m, (double)s->idle_ns[DB_IDLE_KERNEL_WAIT]),
				ns(&m, (double)s->idle_ns[DB_IDLE_OTHER]));
		}
		if (v->nstreams > 1)
			prof_tbl_row(&t, in(&m, v->rank), in(&m, v->device), "all", in(&m, v->counted), in(&m, v->linked), "-", "-",
				ns_opt(&m, v->launch_delay_p50_ns), ns_opt(&m, v->launch_delay_p95_ns), in(&m, nshort),
				ns(&m, (double)v->idle_by_cause_ns[DB_IDLE_HOST_WAIT]),
				ns(&m, (double)v->idle_by_cause_ns[DB_IDLE_KERNEL_WAIT]),
				ns(&m, (double)v->idle_by_cause_ns[DB_IDLE_OTHER]));
	}
	prof_tbl_print(&t, f, 0, "Streams (same work; HTA's idle time breakdown, queue length and launch statistics, "
			    "docs/device.md; queue = launched, not yet started, mean over launches and starts; launch = "
			    "device start - launch call start; short = shorter than its launch call (of <= 50 us); idle "
			    "between the stream's work: host wait = launched after the gap began, kernel wait = gap < 30 "
			    "us, other = the rest; summed over streams, idle can exceed the device's):");
	prof_tbl_free(&t);
}

/* --by device, third table: copies and memsets per kind. */
static void sec_copies(struct data *d, FILE *f)
{
	static const char *const C[] = { "Rank", "Device", "Kind", "Count", "Bytes", "Time", "GB/s", "No bytes",
					 "HTA mean", "HTA min", "HTA max" };
	struct prof_tbl t = { .ncol = 11, .cols = C, .width = d->width };
	struct fmt m = { 0 };
	for (int i = 0; i < d->ndevs; i++) {
		struct db_device_stat *v = &d->devs[i];
		for (int k = 0; k < DB_COPY_KINDS; k++) {
			const struct db_copy_stat *c = &v->copies[k];
			if (c->count)
				prof_tbl_row(&t, in(&m, v->rank), in(&m, v->device), db_copy_kind_name(k), in(&m, c->count),
					in(&m, c->bytes), ns(&m, (double)c->total_ns), num(&m, "%.2f", copy_gbs(c)),
					in(&m, c->no_bytes), c->bw_samples ? num(&m, "%.2f", c->bw_mean_gbs) : "-",
					c->bw_samples ? num(&m, "%.2f", c->bw_min_gbs) : "-",
					c->bw_samples ? num(&m, "%.2f", c->bw_max_gbs) : "-");
		}
	}
	if (t.nrows)
		prof_tbl_print(&t, f, 0, "Copies (same work, by kind; bytes = the events' bytes argument; GB/s = bytes / time, "
				    "1e9 B/s; HTA = get_memory_bw_summary over the copies' own bandwidth arguments, "
				    "summed while they overlap, GB/s; docs/device.md):");
	prof_tbl_free(&t);
}

/* --by runtime: the host's runtime calls per name; a call that blocks the host says why. */
static void sec_runtime(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Total", "Count", "Mean", "p95", "Max", "Launches", "Blocks host", "Name" };
	struct prof_tbl t = { .ncol = 8, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->nrt; i++) {
		struct db_runtime_stat *r = &d->rt[i];
		prof_tbl_row(&t, ns(&m, (double)r->total_ns), in(&m, r->count), ns(&m, (double)r->total_ns / (double)r->count),
			ns(&m, (double)r->p95_ns), ns(&m, (double)r->max_ns), in(&m, r->launches),
			r->block ? db_runtime_block_name(r->block) : csv ? "" : "-", r->name);
	}
	prof_tbl_print(&t, f, csv, "Runtime calls (CUDA, HIP, ACL, MTIA calls of imported traces, all ranks; docs/device.md; "
			      "launches = calls that start a launch link; blocks host: synchronisation, a synchronous copy, or "
			      "an asynchronous copy with pageable host memory):");
	prof_tbl_free(&t);
}

static double share_of(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* --by critpath: per rank the path's length and its share per cause; tables add the top events.
 * CSV: the causes' table alone. */
static void sec_critpath(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Rank", "Time", "Share", "Cause" };
	struct prof_tbl t = { .ncol = 4, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->ncp; i++) {
		const struct db_critpath *c = &d->cp[i];
		for (int k = 0; k < DB_CP_CAUSES; k++)
			prof_tbl_row(&t, in(&m, c->rank), ns(&m, (double)c->cause_ns[k]),
				     num(&m, "%.1f%%", share_of(c->cause_ns[k], c->length_ns)), db_cp_cause_name(k));
	}
	if (csv) {
		prof_tbl_print(&t, f, 1, NULL);
		prof_tbl_free(&t);
		return;
	}
	if (!d->ncp)
		fprintf(f, "Critical path: no rank with device lanes and the window asked for (imported GPU traces; "
			   "docs/device.md)\n");
	for (int i = 0; i < d->ncp; i++) {
		const struct db_critpath *c = &d->cp[i];
		if (c->cycle)
			fprintf(f, "Critical path, rank %d: none (the graph has a loop: timestamps out of order)\n", c->rank);
		else
			fprintf(f, "Critical path, rank %d: %s from %s to %s of the window %s .. %s (%lld of the graph's %lld "
				   "points, %lld edges)\n",
				c->rank, ns(&m, (double)c->length_ns), ns(&m, (double)c->start_ns), ns(&m, (double)c->end_ns),
				ns(&m, (double)c->window_lo_ns), ns(&m, (double)c->window_hi_ns), (long long)c->path_nodes,
				(long long)c->nodes, (long long)c->edges);
	}
	prof_tbl_print(&t, f, 0, "Critical path by cause (HTA's bound_by; docs/device.md):");
	prof_tbl_free(&t);
	static const char *const T[] = { "Rank", "Time", "Share", "Events", "Cause", "Name" };
	struct prof_tbl tt = { .ncol = 6, .cols = T, .width = d->width };
	for (int i = 0; i < d->ncp; i++) {
		const struct db_critpath *c = &d->cp[i];
		for (int j = 0; j < c->ntop; j++)
			prof_tbl_row(&tt, in(&m, c->rank), ns(&m, (double)c->top[j].ns),
				     num(&m, "%.1f%%", share_of(c->top[j].ns, c->length_ns)), in(&m, c->top[j].events),
				     db_cp_cause_name(c->top[j].cause), c->top[j].name);
	}
	prof_tbl_print(&tt, f, 0, "Top events on the critical path (time on the path per name and cause; a launch's "
				  "delay is its kernel's):");
	prof_tbl_free(&tt);
}

/* A kernel sequence as one cell: names joined by " -> "; in a table fitted to the terminal each name
 * is shortened (units_name) so that the sequence fits about `room` columns. Caller frees. */
static char *seq_cell(char *const *names, int n, int room)
{
	size_t cap = 1;
	for (int i = 0; i < n; i++)
		cap += strlen(names[i]) + 4;
	char *s = malloc(cap), *p = s;
	if (!s)
		return NULL;
	int each = room > 0 && n > 0 ? (room - 4 * (n - 1)) / n : 0;
	if (room > 0 && each < 16)
		each = 16;
	*p = 0;
	for (int i = 0; i < n; i++) {
		if (i)
			p = stpcpy(p, " -> ");
		if (each > 0 && (int)strlen(names[i]) > each) {
			units_name(p, (size_t)(cap - (size_t)(p - s)), names[i], each);
			p += strlen(p);
		} else
			p = stpcpy(p, names[i]);
	}
	return s;
}

/* --by opkernels: each CPU operator with its kernel sequence and launch delay; then (tables only)
 * the frequent kernel sequences on a stream. */
/* ---------------------------------------------------------------------------------------- */
/* the whole job's analyses (db/cluster.c; docs/cluster.md) */

/* The host of a rank ("?" unknown, or a rank not in the profile). */
static const char *host_of(const struct data *d, int rank)
{
	int lo = 0, hi = d->nranks;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (d->ranks[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->nranks && d->ranks[lo].rank == rank && d->ranks[lo].host && *d->ranks[lo].host ? d->ranks[lo].host
												       : "?";
}

static const char *stage_name(struct fmt *m, int stage)
{
	return stage < 0 ? "all" : in(m, stage);
}

/* --by spread: one row per step, stage and part of the split (a table leaves out parts that are
 * zero on every rank; CSV has every row). */
static void sec_spread(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Step", "Stage", "Ranks", "Part", "Min", "Median", "Max", "(Max-Min)/Median %",
					 "Min rank", "Max rank", "Max host" };
	struct prof_tbl t = { .ncol = 11, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->nspread; i++) {
		const struct db_step_spread *v = &d->spread[i];
		for (int p = 0; p < DB_SPLIT_PARTS; p++) {
			const struct db_spread *s = &v->part[p];
			if (!csv && s->max_ns == 0 && p != DB_SPLIT_TOTAL)
				continue;
			char pct[32] = "-";
			if (s->med_ns > 0)
				snprintf(pct, sizeof pct, "%.1f", 100.0 * (double)(s->max_ns - s->min_ns) / (double)s->med_ns);
			prof_tbl_row(&t, in(&m, v->step), stage_name(&m, v->stage), in(&m, v->nranks), db_split_part_name(p),
				     ns(&m, (double)s->min_ns), ns(&m, (double)s->med_ns), ns(&m, (double)s->max_ns), pct,
				     in(&m, s->min_rank), in(&m, s->max_rank), host_of(d, s->max_rank));
		}
	}
	prof_tbl_print(&t, f, csv, "Step split over ranks (stage all) and over each pipeline stage's ranks (msprof's "
			      "split; msprof-analyze's stage rows are the Max column; the rank holding the min and the max):");
	prof_tbl_free(&t);
}

static const char *ratio_txt(struct fmt *m, double r)
{
	return num(m, "%.3f", r);
}

static void sec_coll_kinds(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Calls", "Partial", "Unmatched", "Elapse", "Sync", "Wait", "Transit", "Sync ratio",
					 "Wait ratio", "Worst rank", "its wait ratio", "its sync ratio", "Name" };
	struct prof_tbl t = { .ncol = 13, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->coll.nkinds; i++) {
		const struct db_coll_kind *k = &d->coll.kinds[i];
		prof_tbl_row(&t, in(&m, k->calls), in(&m, k->partial), in(&m, k->unmatched), ns(&m, (double)k->elapse_ns),
			     ns(&m, (double)k->sync_ns), ns(&m, (double)k->wait_ns), ns(&m, (double)k->transit_ns),
			     ratio_txt(&m, k->sync_ratio), ratio_txt(&m, k->wait_ratio),
			     k->worst_rank >= 0 ? in(&m, k->worst_rank) : "-", ratio_txt(&m, k->worst_wait_ratio),
			     ratio_txt(&m, k->worst_sync_ratio), k->name);
	}
	prof_tbl_print(&t, f, csv, "Collectives matched across ranks (summed over members; sync = start to the last "
			      "member's arrival, transit = the call's shortest end - last arrival, wait = elapse - "
			      "transit; ratios sync/(sync+transit), wait/(wait+transit) as msprof-analyze; partial = "
			      "members missing from the profile; unmatched = calls no other member's call matched):");
	prof_tbl_free(&t);
}

static void sec_coll_ranks(struct data *d, FILE *f, int csv, int rank)
{
	static const char *const C[] = { "Rank", "Host", "Calls", "Last", "Late", "Elapse", "Sync", "Wait", "Transit",
					 "Sync ratio", "Wait ratio", "Name" };
	struct prof_tbl t = { .ncol = 12, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->coll.nranks; i++) {
		const struct db_coll_rank *r = &d->coll.ranks[i];
		if (rank >= 0 && r->rank != rank)
			continue;
		prof_tbl_row(&t, in(&m, r->rank), host_of(d, r->rank), in(&m, r->calls), in(&m, r->last),
			     ns(&m, (double)r->late_ns), ns(&m, (double)r->elapse_ns), ns(&m, (double)r->sync_ns), ns(&m, (double)r->wait_ns),
			     ns(&m, (double)r->transit_ns), ratio_txt(&m, r->sync_ratio), ratio_txt(&m, r->wait_ratio), r->name);
	}
	prof_tbl_print(&t, f, csv, "Collectives per rank (last = calls it arrived last at; late = its start - the first "
			      "member's start, summed):");
	prof_tbl_free(&t);
}

static void sec_coll_calls(struct data *d, FILE *f)
{
	static const char *const C[] = { "Comm", "Seq", "Members", "Size", "Bytes", "First", "Last", "Sync sum", "Sync max",
					 "Transit", "Elapse max", "Name" };
	struct prof_tbl t = { .ncol = 12, .cols = C, .width = d->width };
	struct fmt m = { 0 };
	for (int i = 0; i < d->coll.ncalls; i++) {
		const struct db_coll_call *c = &d->coll.calls[i];
		prof_tbl_row(&t, in(&m, c->comm_id), in(&m, c->seq), in(&m, c->members),
			     c->group_size ? in(&m, c->group_size) : "?", by(&m, (double)c->bytes), in(&m, c->first_rank),
			     in(&m, c->last_rank), ns(&m, (double)c->sync_sum_ns), ns(&m, (double)c->sync_max_ns),
			     ns(&m, (double)c->transit_ns), ns(&m, (double)c->elapse_max_ns), c->name);
	}
	if (d->coll.ncalls)
		prof_tbl_print(&t, f, 0, "The worst calls (by their members' summed sync; first and last to arrive):");
	prof_tbl_free(&t);
}

static void matrix_rows(struct prof_tbl *t, struct fmt *m, const struct db_matrix_cell *c, const char *src,
			const char *src_host, const char *dst, const char *dst_host)
{
	prof_tbl_row(t, db_matrix_via_name(c->via), src, src_host, dst, dst_host, in(m, c->transfers), by(m, (double)c->bytes), ns(m, (double)c->time_ns),
		     c->time_ns > 0 ? num(m, "%.3f", c->gbs) : "-", in(m, c->one_sided), by(m, (double)c->one_sided_bytes),
		     ns(m, (double)c->one_sided_ns));
}

static const char *const MATRIX_COLS[] = { "Via", "Src", "Src host", "Dst", "Dst host", "Transfers", "Bytes", "Time", "GB/s",
					   "One-sided", "One-sided bytes", "One-sided time" };

/* --by matrix: by rank pair, then (tables) by host pair */
static void sec_matrix(struct data *d, FILE *f, int csv)
{
	struct prof_tbl t = { .ncol = 12, .cols = MATRIX_COLS, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->mat.ncells; i++) {
		const struct db_matrix_cell *c = &d->mat.cells[i];
		char s[24], t2[24];
		snprintf(s, sizeof s, "%d", c->src);
		snprintf(t2, sizeof t2, "%d", c->dst);
		matrix_rows(&t, &m, c, s, host_of(d, c->src), t2, host_of(d, c->dst));
	}
	prof_tbl_print(&t, f, csv, "Communication matrix by rank (p2p: a transfer matched across its two ranks, the sender's "
			      "bytes over both posted -> the data received; collective: a two-member communicator's call, each "
			      "member's bytes toward the other over the call's transit; ring: a collective that ran a ring, each "
			      "member's ring bytes to the next member over the call's transit; GB/s = bytes / time; one-sided = "
			      "the other side is not in the profile, with its own call's time):");
	prof_tbl_free(&t);
	if (csv)
		return;
	for (int i = 0; i < d->mat.nhost_cells; i++) {
		const struct db_matrix_cell *c = &d->mat.host_cells[i];
		const char *sh = c->src >= 0 ? d->mat.hosts[c->src] : "?", *dh = c->dst >= 0 ? d->mat.hosts[c->dst] : "?";
		matrix_rows(&t, &m, c, "*", sh, "*", dh);
	}
	if (d->mat.nhost_cells)
		prof_tbl_print(&t, f, 0, "By host pair (the rank pairs' sums):");
	prof_tbl_free(&t);
	fprintf(f, "\n %lld collective event(s) (each rank's call) of communicators of 3+ members whose algorithm the profile "
		   "does not name (MPI's or NCCL's choice; a ring is named when comm/ knew it), or unmatched, not attributed "
		   "to links: 'ascent report --by collective'\n",
		(long long)d->mat.collectives);
}

static void sec_opkernels(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Device", "Calls", "CPU total", "Kernels/call", "Delay mean", "Delay p50",
					 "Seq calls", "Name", "Most common kernel sequence" };
	struct prof_tbl t = { .ncol = 9, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	int room = d->width > 0 ? (d->width > 160 ? d->width - 100 : 60) : 0;
	for (int i = 0; i < d->ok.nops; i++) {
		struct db_opkernel_stat *o = &d->ok.ops[i];
		char *seq = seq_cell(o->seq, o->seq_n, room);
		prof_tbl_row(&t, ns(&m, (double)o->device_ns), in(&m, o->calls), ns(&m, (double)o->cpu_ns),
			num(&m, "%.2f", (double)o->kernels / (double)(o->calls ? o->calls : 1)), ns(&m, o->delay_mean_ns),
			ns(&m, (double)o->delay_p50_ns), in(&m, o->seq_calls), o->name, seq ? seq : "");
		free(seq);
	}
	char title[400];
	snprintf(title, sizeof title, "CPU operators and the device work they launched (imported traces; docs/device.md; a "
		 "launch counts for every operator open on its thread, as in diff; delay = device start - launch call "
		 "start; %lld of %lld launches inside an operator):", (long long)d->ok.in_ops, (long long)d->ok.launches);
	prof_tbl_print(&t, f, csv, title);
	prof_tbl_free(&t);
	if (csv)   /* one table per CSV document */
		return;
	static const char *const S[] = { "Count", "Device total", "Streams", "Sequence" };
	struct prof_tbl u = { .ncol = 4, .cols = S, .width = d->width };
	for (int i = 0; i < d->ok.nseqs; i++) {
		struct db_kernel_seq *q = &d->ok.seqs[i];
		char *seq = seq_cell(q->names, q->n, d->width > 0 ? d->width - 40 : 0);
		prof_tbl_row(&u, in(&m, q->count), ns(&m, (double)q->device_ns), in(&m, q->streams), seq ? seq : "");
		free(seq);
	}
	snprintf(title, sizeof title, "Frequent kernel sequences (fusion candidates): %d consecutive device events on a stream, "
		 "counted at every position (%lld positions, %lld distinct sequences; the %d most frequent):",
		 d->ok.seq_len, (long long)d->ok.windows, (long long)d->ok.nseq_distinct, d->ok.nseqs);
	fputc('\n', f);
	prof_tbl_print(&u, f, 0, title);
	prof_tbl_free(&u);
}

/* --by annotations: the GPU user annotations per rank and name. */
static void sec_annotations(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Rank", "Total", "Count", "Mean", "Min", "Max", "Spanned", "Name" };
	struct prof_tbl t = { .ncol = 8, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->nann; i++) {
		struct db_annotation_stat *a = &d->ann[i];
		prof_tbl_row(&t, in(&m, a->rank), ns(&m, (double)a->total_ns), in(&m, a->count),
			ns(&m, (double)a->total_ns / (double)a->count), ns(&m, (double)a->min_ns), ns(&m, (double)a->max_ns),
			ns(&m, (double)a->span_ns), a->name);
	}
	prof_tbl_print(&t, f, csv, "GPU user annotations (imported traces: user ranges as the device ran them; "
			      "docs/device.md; total = summed durations, spanned = their union):");
	prof_tbl_free(&t);
}

/* The part of counter name `s` that tells it from the others: the counters' common prefix and
 * suffix left out (pre, suf: their lengths), or the whole name when that leaves nothing. */
static const char *counter_label(const char *s, size_t pre, size_t suf, char *b, size_t nb)
{
	size_t n = strlen(s);
	if (n <= pre + suf)
		return s;
	snprintf(b, nb, "%.*s", (int)(n - pre - suf), s + pre);
	return b;
}

/* The common prefix and suffix of the counter names (0, 0 with fewer than two). */
static void counter_affixes(const struct db_counters *c, size_t *pre, size_t *suf)
{
	*pre = *suf = 0;
	if (c->ncounters < 2)
		return;
	size_t p = strlen(c->counters[0]), q = p;
	for (int i = 1; i < c->ncounters; i++) {
		const char *a = c->counters[0], *b = c->counters[i];
		size_t na = strlen(a), nb = strlen(b), k = 0;
		while (k < p && k < nb && a[k] == b[k])
			k++;
		p = k;
		k = 0;
		while (k < q && k < na && k < nb && a[na - 1 - k] == b[nb - 1 - k])
			k++;
		q = k;
	}
	*pre = p;
	*suf = q;
}

/* A counter value for people: whole below 1e9, else 4 significant digits. */
static const char *counter_num(struct fmt *m, double v)
{
	return v == (double)(int64_t)v && v < 1e9 && v > -1e9 ? num(m, "%.0f", v) : num(m, "%.4g", v);
}

/* --by counters: CUPTI counters summed per kernel name, per innermost and per outermost operator at
 * the launch. A table lists each group's non-zero counters in one cell, by their distinguishing
 * part; CSV one row per group and counter. */
static void sec_counters(struct data *d, FILE *f, int csv)
{
	const struct db_counters *c = &d->ctr;
	struct fmt m = { .raw = csv };
	static const char *const LEVEL[] = { "kernel", "operator", "top operator" };
	if (csv) {
		static const char *const C[] = { "Level", "Rank", "Kernels", "Counter", "Sum", "Name" };
		struct prof_tbl t = { .ncol = 6, .cols = C };
		for (int g = 0; g < c->ngroups; g++)
			for (int i = 0; i < c->ncounters; i++)
				prof_tbl_row(&t, LEVEL[c->groups[g].level], in(&m, c->groups[g].rank), in(&m, c->groups[g].kernels),
					c->counters[i], num(&m, "%.17g", c->groups[g].sums[i]), c->groups[g].name);
		prof_tbl_print(&t, f, 1, NULL);
		prof_tbl_free(&t);
		return;
	}
	size_t pre, suf;
	counter_affixes(c, &pre, &suf);
	static const char *const C[] = { "Rank", "Kernels", "Counters (non-zero sums)", "Name" };
	static const char *const TITLE[] = { "by kernel name", "by operator (the innermost open at the launch)",
					     "by top-level operator (the outermost open at the launch)" };
	char title[700];
	snprintf(title, sizeof title, "CUPTI counters (imported traces with CUPTI range profiling; docs/device.md): %d kernels, "
		 "%d paired with their launch (operators), %d counters named %.*s<X>%s:", c->nkernels, c->linked,
		 c->ncounters, (int)pre, c->ncounters ? c->counters[0] : "", c->ncounters ? c->counters[0] +
		 strlen(c->counters[0]) - suf : "");
	fprintf(f, "\n%s\n", title);
	for (int level = 0; level < 3; level++) {
		struct prof_tbl t = { .ncol = 4, .cols = C, .width = d->width };
		for (int g = 0; g < c->ngroups; g++) {
			const struct db_counter_group *x = &c->groups[g];
			if (x->level != level)
				continue;
			char cell[2000] = "", lb[200];
			size_t at = 0;
			for (int i = 0; i < c->ncounters && at < sizeof cell - 1; i++)
				if (x->sums[i] != 0)
					at += (size_t)snprintf(cell + at, sizeof cell - at, "%s%s %s", at ? "  " : "",
							       counter_label(c->counters[i], pre, suf, lb, sizeof lb),
							       counter_num(&m, x->sums[i]));
			prof_tbl_row(&t, in(&m, x->rank), in(&m, x->kernels), cell, x->name[0] ? x->name : "(no operator)");
		}
		prof_tbl_print(&t, f, 0, TITLE[level]);
		prof_tbl_free(&t);
	}
}

static void sec_ranks(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Rank", "Host", "Steps", "Total", "Computing", "Comm (not ovl)", "Free",
					 "Bubble", "vs mean", "Clock +-" };
	struct prof_tbl t = { .ncol = 10, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	struct rank_sum *r;
	if (rank_sums(d, &r))
		return;
	double mean = 0;
	for (int i = 0; i < d->nranks; i++)
		mean += (double)r[i].total;
	mean = d->nranks ? mean / d->nranks : 0;
	for (int i = 0; i < d->nranks; i++) {
		char dev[32];
		snprintf(dev, sizeof dev, "%+.1f%%%s", mean > 0 ? 100.0 * ((double)r[i].total - mean) / mean : 0.0,
			 mean > 0 && ((double)r[i].total - mean) / mean > 0.05 ? " slow" : "");
		prof_tbl_row(&t, in(&m, r[i].rank), d->ranks[i].host, in(&m, r[i].steps), ns(&m, (double)r[i].total),
			ns(&m, (double)r[i].computing), ns(&m, (double)r[i].cno), ns(&m, (double)r[i].free),
			ns(&m, (double)r[i].bubble), dev, ns(&m, (double)d->ranks[i].clock_err_ns));
	}
	free(r);
	prof_tbl_print(&t, f, csv, "Ranks (summed over steps; 'slow' = total more than 5% above the mean of ranks):");
	prof_tbl_free(&t);
}

static void sec_mem(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Rank", "Device", "Category", "Peak", "Peak at", "Final", "Allocs", "Frees" };
	struct prof_tbl t = { .ncol = 8, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->nmem; i++) {
		struct db_mem_stat *s = &d->mem[i];
		char dev[24];
		prof_tbl_row(&t, in(&m, s->rank), db_mem_device_name(s->device, dev, sizeof dev),
			db_mem_cat_name(s->category), by(&m, (double)s->peak_bytes), ns(&m, (double)s->peak_ts_ns),
			by(&m, (double)s->final_bytes), in(&m, s->allocs), in(&m, s->frees));
	}
	prof_tbl_print(&t, f, csv, "Memory (bytes in use per device and category; 'peak at' = time since the rank's "
		       "start):");
	prof_tbl_free(&t);
}

static void sec_overhead(struct data *d, FILE *f, int csv)
{
	static const char *const C[] = { "Rank", "What", "Count", "Total", "Share of profiled time" };
	struct prof_tbl t = { .ncol = 5, .cols = C, .width = d->width };
	struct fmt m = { .raw = csv };
	for (int i = 0; i < d->novh; i++) {
		struct db_overhead_stat *o = &d->ovh[i];
		char sh[32] = "-";
		if (o->profiled_ns > 0)
			snprintf(sh, sizeof sh, "%.3f%%", 100.0 * (double)o->total_ns / (double)o->profiled_ns);
		prof_tbl_row(&t, in(&m, o->rank), o->what, in(&m, o->count), ns(&m, (double)o->total_ns), sh);
	}
	prof_tbl_print(&t, f, csv, "Profiler overhead (hooks: estimated from calibrated cost per record; writer: its "
			      "own thread's busy time):");
	prof_tbl_free(&t);
}

struct stack_top {
	char *line;
	int64_t w;
};

struct stacks_acc {
	struct stack_top *v;
	int n, cap;
};

static int stack_cb(void *ud, int64_t id, int nf, const char *const *fr, int64_t w)
{
	(void)id;
	struct stacks_acc *a = ud;
	size_t len = 1;
	for (int i = 0; i < nf; i++)
		len += strlen(fr[i]) + 1;
	char *l = malloc(len);
	if (!l)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	l[0] = 0;
	for (int i = 0; i < nf; i++) {
		if (i)
			strcat(l, ";");
		strcat(l, fr[i]);
	}
	if (a->n == a->cap) {
		int nc = a->cap ? a->cap * 2 : 64;
		struct stack_top *v2 = realloc(a->v, (size_t)nc * sizeof *v2);
		if (!v2) {
			free(l);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		a->v = v2;
		a->cap = nc;
	}
	a->v[a->n++] = (struct stack_top){ l, w };
	return 0;
}

static int cmp_top(const void *a, const void *b)
{
	const struct stack_top *x = a, *y = b;
	return (x->w < y->w) - (x->w > y->w);
}

static int sec_stack(struct db *db, struct db_filter flt, FILE *f, int csv, int width)
{
	struct stacks_acc a = { 0 };
	int rc = db_each_stack_weight(db, flt, stack_cb, &a);
	if (!rc) {
		if (a.n > 1)
			qsort(a.v, (size_t)a.n, sizeof *a.v, cmp_top);
		static const char *const C[] = { "Weight", "Stack (outermost first)" };
		struct prof_tbl t = { .ncol = 2, .cols = C, .width = width };
		struct fmt m = { .raw = 1 };
		for (int i = 0; i < a.n && (csv || i < 20); i++)
			prof_tbl_row(&t, in(&m, a.v[i].w), a.v[i].line);
		prof_tbl_print(&t, f, csv, "Stacks (weight: samples with --profile-sample, else range time in us):");
		prof_tbl_free(&t);
	}
	for (int i = 0; i < a.n; i++)
		free(a.v[i].line);
	free(a.v);
	return rc;
}

static int note_cb(void *ud, int rank, int64_t ts, const char *level, const char *text)
{
	(void)ts;
	char *lv = units_printable(level), *tx = units_printable(text);
	fprintf((FILE *)ud, " note (rank %d, %s): %s\n", rank, lv ? lv : "?", tx ? tx : "?");
	free(lv);
	free(tx);
	return 0;
}

static void sec_overview(struct db *db, struct data *d, FILE *f)
{
	struct rank_sum *r;
	if (rank_sums(d, &r))
		return;
	int64_t ev = 0, samples = 0;
	db_count(db, "event", &ev);
	db_count(db, "sample", &samples);
	struct fmt m = { 0 };
	fprintf(f, "Profile %s: %d rank%s, %lld events, %lld CPU samples, %d step rows\n", db_path(db), d->nranks,
		d->nranks == 1 ? "" : "s", (long long)ev, (long long)samples, d->nsteps);
	if (!ev && samples)
		fprintf(f, " samples only (no MPI or hook calls were recorded): 'ascent report %s --by stack' or "
			   "'ascent export --format folded' show where the CPU time went\n", db_path(db));
	int64_t tot = 0, comp = 0, cno = 0, fr = 0, bub = 0, com = 0, ovl = 0;
	for (int i = 0; i < d->nranks; i++) {
		com = i64_add_sat(com, r[i].comm);
		ovl = i64_add_sat(ovl, r[i].ovl);
		tot = i64_add_sat(tot, r[i].total);
		comp = i64_add_sat(comp, r[i].computing);
		cno = i64_add_sat(cno, r[i].cno);
		fr = i64_add_sat(fr, r[i].free);
		bub = i64_add_sat(bub, r[i].bubble);
	}
	if (tot > 0)
		fprintf(f, " step time %s over all ranks: computing %.1f%%, communication not overlapped %.1f%%, free "
			   "%.1f%%, bubble %.1f%%\n",
			ns(&m, (double)tot), 100.0 * (double)comp / (double)tot, 100.0 * (double)cno / (double)tot,
			100.0 * (double)fr / (double)tot, 100.0 * (double)bub / (double)tot);
	if (com > 0)   /* steps' communication: collectives on their lanes and the waits for them */
		fprintf(f, " communication in steps %s over all ranks: %.1f%% hidden behind computation (overlapped), "
			   "%.1f%% exposed\n",
			ns(&m, (double)com), 100.0 * (double)ovl / (double)com, 100.0 * (double)(com - ovl) / (double)com);
	if (d->nlanes)
		fprintf(f, " ranks with device lanes (imported traces) are split on their devices: computing = kernels, "
			   "copies, memsets; free = device idle\n");
	if (d->nops) {
		char nm[1024], *top = units_printable(d->ops[0].name);
		const char *tn = top ? top : "?";
		fprintf(f, " top operator: %s (%s total, %lld calls)\n",
			d->width > 0 ? units_name(nm, sizeof nm, tn, d->width > 100 ? d->width - 60 : 40) : tn,
			ns(&m, (double)d->ops[0].total_ns), (long long)d->ops[0].count);
		free(top);
	}
	for (int i = 0; i < d->nlaunch; i++) {
		struct db_launch_stat *l = &d->launch[i];
		fprintf(f, " rank %d: %lld device activities linked to their launch (%lld kernels, %lld copies, %lld memsets, "
			   "%lld collectives); queue delay (device start - launch start) median %s, p95 %s, max %s; %lld kernels "
			   "under %s\n",
			l->rank, (long long)l->linked, (long long)l->kernels, (long long)l->copies, (long long)l->memsets,
			(long long)l->collectives, ns(&m, (double)l->delay_med_ns), ns(&m, (double)l->delay_p95_ns),
			ns(&m, (double)l->delay_max_ns), (long long)l->small, ns(&m, (double)DB_SMALL_KERNEL_NS));
	}
	char *st = db_get_meta(db, "detail_stopped_at_step");
	if (st)
		fprintf(f, " detail stopped at step %s (size budget); per-step aggregates continue in step_agg\n", st);
	free(st);
	db_each_note(db, note_cb, f);
	free(r);
}

/* ---------------------------------------------------------------------------------------- */
/* JSON */

static cJSON *jnum(cJSON *o, const char *k, double v)
{
	return cJSON_AddNumberToObject(o, k, v);
}

static void json_ops(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nops; i++) {
		struct db_op_stat *o = &d->ops[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", o->name);
		cJSON_AddStringToObject(x, "kind", db_kind_name(o->kind));
		jnum(x, "instances", (double)o->count);
		jnum(x, "total_ns", (double)o->total_ns);
		jnum(x, "self_ns", (double)o->self_ns);
		jnum(x, "avg_ns", o->avg_ns);
		jnum(x, "med_ns", (double)o->med_ns);
		jnum(x, "min_ns", (double)o->min_ns);
		jnum(x, "max_ns", (double)o->max_ns);
		jnum(x, "stddev_ns", o->stddev_ns);
		jnum(x, "p95_ns", (double)o->p95_ns);
		jnum(x, "flops", o->flops);
		if (o->flops_ns > 0)
			jnum(x, "gflops_per_s", o->flops / (double)o->flops_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_comm(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->ncomm; i++) {
		struct db_comm_stat *c = &d->comm[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", c->name);
		cJSON_AddStringToObject(x, "kind", db_kind_name(c->kind));
		jnum(x, "size_bucket", (double)c->bucket);
		jnum(x, "count", (double)c->count);
		jnum(x, "total_ns", (double)c->total_ns);
		jnum(x, "avg_ns", c->avg_ns);
		jnum(x, "bytes", (double)c->bytes);
		jnum(x, "algbw_gbs", c->algbw_gbs);
		jnum(x, "busbw_gbs", c->busbw_gbs);
		jnum(x, "group_size", c->group_size);
		jnum(x, "matched", (double)c->matched);
		jnum(x, "wait_ns", (double)c->wait_ns);
		jnum(x, "transit_ns", (double)c->transit_ns);
		jnum(x, "err_ns", (double)c->err_ns);
		jnum(x, "queue_ns", (double)c->queue_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_groups(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->ngroups; i++) {
		struct db_comm_group *g = &d->groups[i];
		cJSON *x = cJSON_CreateObject(), *mem = cJSON_CreateArray();
		jnum(x, "comm_id", (double)g->comm_id);
		cJSON_AddStringToObject(x, "name", g->name ? g->name : "");
		jnum(x, "size", g->size);
		for (const char *p = g->members; p && *p;) {
			char *end;
			long v = strtol(p, &end, 10);
			if (end == p)
				break;
			cJSON_AddItemToArray(mem, cJSON_CreateNumber((double)v));
			p = *end == ',' ? end + 1 : end;
		}
		cJSON_AddItemToObject(x, "members", mem);
		jnum(x, "count", (double)g->count);
		jnum(x, "bytes", (double)g->bytes);
		jnum(x, "total_ns", (double)g->total_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_steps(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nsteps; i++) {
		struct db_step_stat *s = &d->steps[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "step", (double)s->step);
		jnum(x, "rank", s->rank);
		jnum(x, "start_ns", (double)s->start_ns);
		jnum(x, "total_ns", (double)s->total_ns);
		jnum(x, "computing_ns", (double)s->computing_ns);
		jnum(x, "comm_ns", (double)s->comm_ns);
		jnum(x, "comm_not_overlapped_ns", (double)s->comm_not_overlapped_ns);
		jnum(x, "overlapped_ns", (double)s->overlapped_ns);
		jnum(x, "free_ns", (double)s->free_ns);
		jnum(x, "bubble_ns", (double)s->bubble_ns);
		jnum(x, "preparing_ns", (double)s->preparing_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_step_work(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nsw; i++) {
		const struct db_step_work *w = &d->sw[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "rank", w->rank);
		cJSON_AddStringToObject(x, "launched", db_step_work_where_name(w->where));
		if (w->step >= 0)
			jnum(x, "step", (double)w->step);
		else
			cJSON_AddNullToObject(x, "step");
		jnum(x, "events", (double)w->events);
		jnum(x, "device_ns", (double)w->device_ns);
		jnum(x, "busy_ns", (double)w->busy_ns);
		jnum(x, "compute_ns", (double)w->compute_ns);
		if (w->where == DB_SW_STEP) {
			jnum(x, "step_start_ns", (double)w->step_start_ns);
			jnum(x, "step_end_ns", (double)w->step_end_ns);
			jnum(x, "in_step_ns", (double)w->in_window_ns);
		}
		if (w->events) {
			jnum(x, "device_start_ns", (double)w->first_start_ns);
			jnum(x, "device_end_ns", (double)w->last_end_ns);
		}
		cJSON_AddItemToArray(a, x);
	}
}

static void json_ranks(cJSON *a, struct data *d)
{
	struct rank_sum *r;
	if (rank_sums(d, &r) == 0) {
		for (int i = 0; i < d->nranks; i++) {
			cJSON *x = cJSON_CreateObject();
			jnum(x, "rank", r[i].rank);
			cJSON_AddStringToObject(x, "host", d->ranks[i].host);
			jnum(x, "steps", (double)r[i].steps);
			jnum(x, "total_ns", (double)r[i].total);
			jnum(x, "computing_ns", (double)r[i].computing);
			jnum(x, "comm_ns", (double)r[i].comm);
			jnum(x, "comm_not_overlapped_ns", (double)r[i].cno);
			jnum(x, "overlapped_ns", (double)r[i].ovl);
			/* the share of its communication hidden behind computation (0 without any) */
			jnum(x, "comm_hidden_share", r[i].comm > 0 ? (double)r[i].ovl / (double)r[i].comm : 0);
			jnum(x, "free_ns", (double)r[i].free);
			cJSON_AddStringToObject(x, "split", split_of(d, r[i].rank));
			jnum(x, "bubble_ns", (double)r[i].bubble);
			jnum(x, "clock_offset_ns", (double)d->ranks[i].clock_offset_ns);
			jnum(x, "clock_err_ns", (double)d->ranks[i].clock_err_ns);
			cJSON_AddItemToArray(a, x);
		}
		free(r);
	}
}

static void json_launch(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nlaunch; i++) {
		struct db_launch_stat *l = &d->launch[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "rank", l->rank);
		jnum(x, "linked", (double)l->linked);
		jnum(x, "kernels_linked", (double)l->kernels);
		jnum(x, "copies_linked", (double)l->copies);
		jnum(x, "memsets_linked", (double)l->memsets);
		jnum(x, "collectives_linked", (double)l->collectives);
		jnum(x, "small_kernels", (double)l->small);
		jnum(x, "kernel_ns", (double)l->kernel_ns);
		jnum(x, "queue_delay_total_ns", (double)l->delay_total_ns);
		jnum(x, "queue_delay_med_ns", (double)l->delay_med_ns);
		jnum(x, "queue_delay_p95_ns", (double)l->delay_p95_ns);
		jnum(x, "queue_delay_max_ns", (double)l->delay_max_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_shapes(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nshapes; i++) {
		struct db_shape_stat *h = &d->shapes[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", h->name);
		cJSON_AddStringToObject(x, "kind", db_kind_name(h->kind));
		cJSON_AddStringToObject(x, "input_dims", h->input_dims);
		cJSON_AddStringToObject(x, "input_types", h->input_types);
		jnum(x, "count", (double)h->count);
		jnum(x, "total_ns", (double)h->total_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_mem(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nmem; i++) {
		struct db_mem_stat *s = &d->mem[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "rank", s->rank);
		jnum(x, "device", s->device);
		cJSON_AddStringToObject(x, "category", db_mem_cat_name(s->category));
		jnum(x, "peak_bytes", (double)s->peak_bytes);
		jnum(x, "peak_ts_ns", (double)s->peak_ts_ns);
		jnum(x, "final_bytes", (double)s->final_bytes);
		jnum(x, "allocs", (double)s->allocs);
		jnum(x, "frees", (double)s->frees);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_overhead(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->novh; i++) {
		struct db_overhead_stat *o = &d->ovh[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "rank", o->rank);
		cJSON_AddStringToObject(x, "what", o->what);
		jnum(x, "count", (double)o->count);
		jnum(x, "total_ns", (double)o->total_ns);
		jnum(x, "profiled_ns", (double)o->profiled_ns);
		if (o->profiled_ns > 0)
			jnum(x, "share", (double)o->total_ns / (double)o->profiled_ns);
		cJSON_AddItemToArray(a, x);
	}
}
static int has_shapes(const struct data *d)
{
	return d->shapes != NULL;
}

/* A time, or null when unknown (negative). */
static void jnum_opt(cJSON *x, const char *key, int64_t v)
{
	if (v >= 0)
		jnum(x, key, (double)v);
	else
		cJSON_AddNullToObject(x, key);
}

/* idle_ns_by_cause: {host_wait, kernel_wait, other} */
static void json_idle(cJSON *x, const int64_t *idle)
{
	cJSON *k = cJSON_AddObjectToObject(x, "idle_ns_by_cause");
	jnum(k, "host_wait", (double)idle[DB_IDLE_HOST_WAIT]);
	jnum(k, "kernel_wait", (double)idle[DB_IDLE_KERNEL_WAIT]);
	jnum(k, "other", (double)idle[DB_IDLE_OTHER]);
}

static void json_devices(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->ndevs; i++) {
		struct db_device_stat *v = &d->devs[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "rank", v->rank);
		jnum(x, "device", v->device);
		jnum(x, "span_ns", (double)v->span_ns);
		jnum(x, "busy_ns", (double)v->busy_ns);
		jnum(x, "idle_ns", (double)(v->span_ns - v->busy_ns));
		jnum(x, "compute_ns", (double)v->compute_ns);
		jnum(x, "non_compute_ns", (double)(v->busy_ns - v->compute_ns));
		jnum(x, "comm_ns", (double)v->comm_ns);
		jnum(x, "comm_under_compute_ns", (double)v->comm_under_compute_ns);
		jnum(x, "comm_overlap_pct", pct_of(v->comm_under_compute_ns, v->comm_ns));
		cJSON *k = cJSON_AddObjectToObject(x, "kernel_types_ns");
		for (int c = 1; c < 8; c++)
			jnum(k, KCLASS_KEYS[c], (double)v->class_ns[c]);
		jnum(x, "events_counted", (double)v->counted);
		jnum(x, "events_out_of_steps", (double)v->after_last_step);
		jnum(x, "events_unlinked", (double)v->unlinked);
		json_idle(x, v->idle_by_cause_ns);
		jnum(x, "events_linked", (double)v->linked);
		jnum_opt(x, "launch_delay_p50_ns", v->launch_delay_p50_ns);
		jnum_opt(x, "launch_delay_p95_ns", v->launch_delay_p95_ns);
		cJSON *cp = cJSON_AddArrayToObject(x, "copies");
		for (int k = 0; k < DB_COPY_KINDS; k++) {
			const struct db_copy_stat *c = &v->copies[k];
			if (!c->count)
				continue;
			cJSON *y = cJSON_CreateObject();
			cJSON_AddStringToObject(y, "kind", db_copy_kind_name(k));
			jnum(y, "count", (double)c->count);
			jnum(y, "bytes", (double)c->bytes);
			jnum(y, "total_ns", (double)c->total_ns);
			jnum(y, "bandwidth_gbs", copy_gbs(c));
			jnum(y, "events_without_bytes", (double)c->no_bytes);
			jnum(y, "hta_bw_samples", (double)c->bw_samples);
			jnum(y, "hta_bw_mean_gbs", c->bw_mean_gbs);
			jnum(y, "hta_bw_min_gbs", c->bw_min_gbs);
			jnum(y, "hta_bw_max_gbs", c->bw_max_gbs);
			cJSON_AddItemToArray(cp, y);
		}
		cJSON *st = cJSON_AddArrayToObject(x, "streams");
		for (int j = 0; j < v->nstreams; j++) {
			struct db_stream_stat *s = &v->streams[j];
			cJSON *y = cJSON_CreateObject();
			jnum(y, "stream", s->stream);
			jnum(y, "kernels", (double)s->kernels);
			jnum(y, "linked", (double)s->linked);
			jnum(y, "queue_len_mean", s->queue_len_mean);
			jnum(y, "queue_len_max", (double)s->queue_len_max);
			jnum_opt(y, "launch_delay_p50_ns", s->launch_delay_p50_ns);
			jnum_opt(y, "launch_delay_p95_ns", s->launch_delay_p95_ns);
			jnum(y, "short_kernels", (double)s->short_kernels);
			json_idle(y, s->idle_ns);
			cJSON_AddItemToArray(st, y);
		}
		cJSON_AddItemToArray(a, x);
	}
}

static int has_step_work(const struct data *d)
{
	return d->sw != NULL;
}

static int has_devices(const struct data *d)
{
	return d->devs != NULL;
}

static void json_runtime(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nrt; i++) {
		struct db_runtime_stat *r = &d->rt[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", r->name);
		jnum(x, "count", (double)r->count);
		jnum(x, "total_ns", (double)r->total_ns);
		jnum(x, "mean_ns", (double)r->total_ns / (double)r->count);
		jnum(x, "p95_ns", (double)r->p95_ns);
		jnum(x, "max_ns", (double)r->max_ns);
		jnum(x, "launches", (double)r->launches);
		cJSON_AddBoolToObject(x, "blocking", r->block != DB_RT_NONBLOCKING);
		cJSON_AddStringToObject(x, "blocking_why", db_runtime_block_name(r->block));
		cJSON_AddItemToArray(a, x);
	}
}

static cJSON *json_strings(char *const *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateString(v[i]));
	return a;
}

static void json_opkernels(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->ok.nops; i++) {
		struct db_opkernel_stat *o = &d->ok.ops[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", o->name);
		jnum(x, "calls", (double)o->calls);
		jnum(x, "calls_launching", (double)o->calls_launching);
		jnum(x, "cpu_ns", (double)o->cpu_ns);
		jnum(x, "kernels", (double)o->kernels);
		jnum(x, "device_ns", (double)o->device_ns);
		jnum(x, "kernels_per_call", (double)o->kernels / (double)(o->calls ? o->calls : 1));
		cJSON_AddItemToObject(x, "sequence", json_strings(o->seq, o->seq_n));
		jnum(x, "sequence_calls", (double)o->seq_calls);
		jnum(x, "launch_delay_mean_ns", o->delay_mean_ns);
		jnum(x, "launch_delay_p50_ns", (double)o->delay_p50_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_kernel_seqs(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->ok.nseqs; i++) {
		struct db_kernel_seq *q = &d->ok.seqs[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToObject(x, "sequence", json_strings(q->names, q->n));
		jnum(x, "count", (double)q->count);
		jnum(x, "device_ns", (double)q->device_ns);
		jnum(x, "streams", (double)q->streams);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_critpath(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->ncp; i++) {
		const struct db_critpath *c = &d->cp[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "rank", c->rank);
		cJSON_AddBoolToObject(x, "cycle", c->cycle);
		jnum(x, "window_start_ns", (double)c->window_lo_ns);
		jnum(x, "window_end_ns", (double)c->window_hi_ns);
		jnum(x, "start_ns", (double)c->start_ns);
		jnum(x, "end_ns", (double)c->end_ns);
		jnum(x, "length_ns", (double)c->length_ns);
		cJSON *k = cJSON_AddObjectToObject(x, "cause_ns"), *p = cJSON_AddObjectToObject(x, "cause_pct");
		for (int j = 0; j < DB_CP_CAUSES; j++) {
			jnum(k, db_cp_cause_name(j), (double)c->cause_ns[j]);
			jnum(p, db_cp_cause_name(j), share_of(c->cause_ns[j], c->length_ns));
		}
		jnum(x, "graph_nodes", (double)c->nodes);
		jnum(x, "graph_edges", (double)c->edges);
		jnum(x, "path_nodes", (double)c->path_nodes);
		jnum(x, "path_events", (double)c->path_events);
		cJSON *t = cJSON_AddArrayToObject(x, "top");
		for (int j = 0; j < c->ntop; j++) {
			cJSON *y = cJSON_CreateObject();
			cJSON_AddStringToObject(y, "name", c->top[j].name);
			cJSON_AddStringToObject(y, "cause", db_cp_cause_name(c->top[j].cause));
			jnum(y, "ns", (double)c->top[j].ns);
			jnum(y, "events", (double)c->top[j].events);
			cJSON_AddItemToArray(t, y);
		}
		cJSON_AddItemToArray(a, x);
	}
}

static int has_critpath(const struct data *d)
{
	return d->has_cp;
}

static void json_annotations(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nann; i++) {
		struct db_annotation_stat *x = &d->ann[i];
		cJSON *o = cJSON_CreateObject();
		jnum(o, "rank", x->rank);
		cJSON_AddStringToObject(o, "name", x->name);
		jnum(o, "count", (double)x->count);
		jnum(o, "total_ns", (double)x->total_ns);
		jnum(o, "mean_ns", (double)x->total_ns / (double)x->count);
		jnum(o, "min_ns", (double)x->min_ns);
		jnum(o, "max_ns", (double)x->max_ns);
		jnum(o, "span_ns", (double)x->span_ns);
		cJSON_AddItemToArray(a, o);
	}
}

static int has_annotations(const struct data *d)
{
	return d->has_ann;
}

/* counters[i] = v[i] for the counters a kernel or group has (NaN: none). */
static cJSON *json_counter_values(const struct db_counters *c, const double *v, int n)
{
	cJSON *o = cJSON_CreateObject();
	for (int i = 0; o && i < n && i < c->ncounters; i++)
		if (v[i] == v[i])
			jnum(o, c->counters[i], v[i]);
	return o;
}

static void json_counter_kernels(cJSON *a, struct data *d)
{
	const struct db_counters *c = &d->ctr;
	for (int i = 0; i < c->nkernels; i++) {
		const struct db_kernel_counters *k = &c->kernels[i];
		cJSON *o = cJSON_CreateObject();
		jnum(o, "rank", k->rank);
		jnum(o, "device", k->device);
		cJSON_AddStringToObject(o, "name", k->name);
		jnum(o, "start_ns", (double)k->start_ns);
		cJSON_AddBoolToObject(o, "linked", k->linked);
		if (k->linked)
			jnum(o, "launch_ns", (double)k->launch_ns);
		else
			cJSON_AddNullToObject(o, "launch_ns");
		cJSON_AddItemToObject(o, "op_stack", json_strings(k->ops, k->nops));
		cJSON_AddStringToObject(o, "top_level_op", k->nops ? k->ops[0] : "");
		cJSON_AddStringToObject(o, "bottom_level_op", k->nops ? k->ops[k->nops - 1] : "");
		cJSON_AddItemToObject(o, "counters", json_counter_values(c, k->values, k->nvalues));
		cJSON_AddItemToArray(a, o);
	}
}

static void json_counter_groups(cJSON *a, struct data *d)
{
	static const char *const LEVEL[] = { "kernel", "operator", "top_operator" };
	const struct db_counters *c = &d->ctr;
	for (int i = 0; i < c->ngroups; i++) {
		const struct db_counter_group *g = &c->groups[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "by", LEVEL[g->level]);
		jnum(o, "rank", g->rank);
		cJSON_AddStringToObject(o, "name", g->name);
		jnum(o, "kernels", (double)g->kernels);
		cJSON_AddItemToObject(o, "sums", json_counter_values(c, g->sums, c->ncounters));
		cJSON_AddItemToArray(a, o);
	}
}

static int has_counters(const struct data *d)
{
	return d->has_ctr;
}

static int has_opkernels(const struct data *d)
{
	return d->has_ok;
}

static int has_runtime(const struct data *d)
{
	return d->rt != NULL;
}

static void json_spread(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->nspread; i++) {
		const struct db_step_spread *v = &d->spread[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "step", (double)v->step);
		if (v->stage >= 0)
			jnum(x, "stage", v->stage);
		else
			cJSON_AddNullToObject(x, "stage");
		jnum(x, "ranks", v->nranks);
		for (int p = 0; p < DB_SPLIT_PARTS; p++) {
			const struct db_spread *s = &v->part[p];
			cJSON *y = cJSON_AddObjectToObject(x, db_split_part_name(p));
			jnum(y, "min_ns", (double)s->min_ns);
			jnum(y, "med_ns", (double)s->med_ns);
			jnum(y, "max_ns", (double)s->max_ns);
			jnum(y, "min_rank", s->min_rank);
			jnum(y, "max_rank", s->max_rank);
		}
		cJSON_AddItemToArray(a, x);
	}
}

static void json_coll_kinds(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->coll.nkinds; i++) {
		const struct db_coll_kind *k = &d->coll.kinds[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", k->name);
		jnum(x, "calls", (double)k->calls);
		jnum(x, "partial", (double)k->partial);
		jnum(x, "events", (double)k->events);
		jnum(x, "unmatched", (double)k->unmatched);
		jnum(x, "bytes", (double)k->bytes);
		jnum(x, "elapse_ns", (double)k->elapse_ns);
		jnum(x, "sync_ns", (double)k->sync_ns);
		jnum(x, "wait_ns", (double)k->wait_ns);
		jnum(x, "transit_ns", (double)k->transit_ns);
		jnum(x, "sync_ratio", k->sync_ratio);
		jnum(x, "wait_ratio", k->wait_ratio);
		jnum(x, "worst_rank", k->worst_rank);
		jnum(x, "worst_wait_ratio", k->worst_wait_ratio);
		jnum(x, "worst_sync_ratio", k->worst_sync_ratio);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_coll_ranks(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->coll.nranks; i++) {
		const struct db_coll_rank *r = &d->coll.ranks[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", r->name);
		jnum(x, "rank", r->rank);
		cJSON_AddStringToObject(x, "host", host_of(d, r->rank));
		jnum(x, "calls", (double)r->calls);
		jnum(x, "partial", (double)r->partial);
		jnum(x, "last", (double)r->last);
		jnum(x, "elapse_ns", (double)r->elapse_ns);
		jnum(x, "sync_ns", (double)r->sync_ns);
		jnum(x, "wait_ns", (double)r->wait_ns);
		jnum(x, "transit_ns", (double)r->transit_ns);
		jnum(x, "late_ns", (double)r->late_ns);
		jnum(x, "sync_ratio", r->sync_ratio);
		jnum(x, "wait_ratio", r->wait_ratio);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_coll_calls(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->coll.ncalls; i++) {
		const struct db_coll_call *c = &d->coll.calls[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", c->name);
		jnum(x, "comm_id", (double)c->comm_id);
		jnum(x, "seq", (double)c->seq);
		jnum(x, "members", c->members);
		jnum(x, "group_size", c->group_size);
		jnum(x, "bytes", (double)c->bytes);
		jnum(x, "first_rank", c->first_rank);
		jnum(x, "last_rank", c->last_rank);
		jnum(x, "start_ns", (double)c->start_ns);
		jnum(x, "sync_sum_ns", (double)c->sync_sum_ns);
		jnum(x, "sync_max_ns", (double)c->sync_max_ns);
		jnum(x, "transit_ns", (double)c->transit_ns);
		jnum(x, "elapse_max_ns", (double)c->elapse_max_ns);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_cell(cJSON *x, const struct db_matrix_cell *c)
{
	cJSON_AddStringToObject(x, "via", db_matrix_via_name(c->via));
	jnum(x, "transfers", (double)c->transfers);
	jnum(x, "bytes", (double)c->bytes);
	jnum(x, "time_ns", (double)c->time_ns);
	jnum(x, "gbs", c->gbs);
	jnum(x, "one_sided", (double)c->one_sided);
	jnum(x, "one_sided_bytes", (double)c->one_sided_bytes);
	jnum(x, "one_sided_ns", (double)c->one_sided_ns);
}

static void json_matrix(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->mat.ncells; i++) {
		const struct db_matrix_cell *c = &d->mat.cells[i];
		cJSON *x = cJSON_CreateObject();
		jnum(x, "src", c->src);
		jnum(x, "dst", c->dst);
		cJSON_AddStringToObject(x, "src_host", host_of(d, c->src));
		cJSON_AddStringToObject(x, "dst_host", host_of(d, c->dst));
		json_cell(x, c);
		cJSON_AddItemToArray(a, x);
	}
}

static void json_host_matrix(cJSON *a, struct data *d)
{
	for (int i = 0; i < d->mat.nhost_cells; i++) {
		const struct db_matrix_cell *c = &d->mat.host_cells[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "src_host", c->src >= 0 ? d->mat.hosts[c->src] : "?");
		cJSON_AddStringToObject(x, "dst_host", c->dst >= 0 ? d->mat.hosts[c->dst] : "?");
		json_cell(x, c);
		cJSON_AddItemToArray(a, x);
	}
}

static int has_spread(const struct data *d)
{
	return d->has_spread;
}

static int has_coll(const struct data *d)
{
	return d->has_coll;
}

static int has_mat(const struct data *d)
{
	return d->has_mat;
}

/* report --format json: one array per section, in this order (scripts rely on the keys) */
static const struct {
	const char *key;
	void (*fill)(cJSON *a, struct data *d);
	int (*present)(const struct data *d);   /* NULL: always */
} json_sections[] = {
	{"ops", json_ops, NULL},
	{"comm", json_comm, NULL},
	{"groups", json_groups, NULL},
	{"steps", json_steps, NULL},
	{"ranks", json_ranks, NULL},
	{"device_steps", json_step_work, has_step_work},
	{"launch", json_launch, NULL},
	{"shapes", json_shapes, has_shapes},
	{"devices", json_devices, has_devices},
	{"runtime", json_runtime, has_runtime},
	{"opkernels", json_opkernels, has_opkernels},
	{"kernel_sequences", json_kernel_seqs, has_opkernels},
	{"critpath", json_critpath, has_critpath},
	{"annotations", json_annotations, has_annotations},
	{"counter_kernels", json_counter_kernels, has_counters},
	{"counter_groups", json_counter_groups, has_counters},
	{"mem", json_mem, NULL},
	{"overhead", json_overhead, NULL},
	{"step_spread", json_spread, has_spread},
	{"collectives", json_coll_kinds, has_coll},
	{"collective_ranks", json_coll_ranks, has_coll},
	{"collective_calls", json_coll_calls, has_coll},
	{"matrix", json_matrix, has_mat},
	{"host_matrix", json_host_matrix, has_mat},
};

static int print_json(struct db *db, struct data *d, FILE *f)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	cJSON_AddStringToObject(root, "database", db_path(db));
	for (size_t i = 0; i < sizeof json_sections / sizeof json_sections[0]; i++)
		if (!json_sections[i].present || json_sections[i].present(d))
			json_sections[i].fill(cJSON_AddArrayToObject(root, json_sections[i].key), d);
	char *txt = cJSON_Print(root);
	cJSON_Delete(root);
	if (!txt)
		return ascent_error(ASCENT_ENOMEM, "out of memory printing JSON");
	fputs(txt, f);
	fputc('\n', f);
	free(txt);
	return 0;
}

/* The width tables are fitted to: the terminal's, else $COLUMNS, else 200. */
static int out_width(FILE *f)
{
	struct winsize ws;
	if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	long v = c ? strtol(c, NULL, 10) : 0;
	return v > 0 && v < 100000 ? (int)v : 200;
}

int prof_report(const struct prof_report_opts *o)
{
	const char *fmt = o->format ? o->format : "table";
	int csv = !strcmp(fmt, "csv"), json = !strcmp(fmt, "json");
	if (!csv && !json && strcmp(fmt, "table"))
		return ascent_error(ASCENT_EUSAGE, "unknown --format '%s' (expected table, csv or json)", fmt);
	const char *sec = o->by;
	static const char *const SECS[] = { "op", "comm", "step", "rank", "mem", "stack", "overhead", "shape",
					     "device", "runtime", "opkernels", "annotations", "counters", "critpath", "spread", "collective",
					     "matrix" };
	if (sec) {
		int ok = 0;
		for (size_t i = 0; i < sizeof SECS / sizeof SECS[0]; i++)
			ok |= !strcmp(sec, SECS[i]);
		if (!ok)
			return ascent_error(ASCENT_EUSAGE, "unknown --by '%s' (expected op, comm, step, rank, mem, stack, "
					    "overhead, shape, device, runtime, opkernels, annotations, counters, critpath, spread, collective or "
					    "matrix)", sec);
	}
	if (csv && !sec)
		sec = "op";
	FILE *f = o->out ? o->out : stdout;
	struct db *db;
	int rc = db_open(o->db_path, DB_READ, &db);
	if (rc)
		return rc;
	struct db_filter flt = { o->rank, o->step_lo, o->step_hi };
	struct data d = { .width = csv || json || o->wide ? 0 : out_width(f) };
	int want_all = json || !sec;
	if (!rc)
		rc = db_ranks(db, &d.ranks, &d.nranks);
	if (!rc && (want_all || !strcmp(sec, "op")))
		rc = db_op_stats(db, flt, 1, &d.ops, &d.nops);
	if (!rc && (want_all || !strcmp(sec, "comm")))
		rc = db_comm_stats(db, flt, &d.comm, &d.ncomm);
	if (!rc && (want_all || !strcmp(sec, "comm")))
		rc = db_comm_groups(db, flt, &d.groups, &d.ngroups);
	if (!rc && (want_all || !strcmp(sec, "step") || !strcmp(sec, "rank") || !strcmp(sec, "spread")))
		rc = db_step_stats(db, flt, &d.steps, &d.nsteps);
	if (!rc && (json || (sec && !strcmp(sec, "spread")))) {
		rc = db_step_spreads(d.steps, d.nsteps, d.ranks, d.nranks, &d.spread, &d.nspread);
		d.has_spread = !rc;
	}
	if (!rc && (json || (sec && !strcmp(sec, "collective")))) {
		rc = db_coll_analysis(db, o->top > 0 ? o->top : 20, &d.coll);
		d.has_coll = !rc;
	}
	if (!rc && (json || (sec && !strcmp(sec, "matrix")))) {
		rc = db_comm_matrix(db, &d.mat);
		d.has_mat = !rc;
	}
	if (!rc && (json || (sec && !strcmp(sec, "mem"))))
		rc = db_mem_stats(db, flt, &d.mem, &d.nmem);
	if (!rc && (json || (sec && !strcmp(sec, "overhead"))))
		rc = db_overhead_stats(db, &d.ovh, &d.novh);
	if (!rc && sec && !strcmp(sec, "shape")) {
		rc = db_shape_stats(db, flt, &d.shapes, &d.nshapes);
		if (!rc && !d.shapes && !(d.shapes = calloc(1, sizeof *d.shapes)))   /* present, even empty */
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		db_shape_stats_sort(d.shapes, d.nshapes);
	}
	if (!rc && sec && !strcmp(sec, "device")) {
		rc = db_view_device_stats(db, flt, &d.devs, &d.ndevs);
		if (!rc && !d.devs && !(d.devs = calloc(1, sizeof *d.devs)))   /* present, even empty */
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc && sec && !strcmp(sec, "runtime")) {
		rc = db_runtime_stats(db, flt, &d.rt, &d.nrt);
		if (!rc && !d.rt && !(d.rt = calloc(1, sizeof *d.rt)))   /* present, even empty */
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc && sec && !strcmp(sec, "opkernels")) {
		rc = db_opkernels(db, flt, o->seq_len > 0 ? o->seq_len : 3, o->top > 0 ? o->top : 20, &d.ok);
		d.has_ok = !rc;
	}
	if (!rc && sec && !strcmp(sec, "critpath")) {
		struct db_critpath_opts co = { .window_name = o->window, .instance = o->instance, .top = o->top > 0 ? o->top : 20 };
		rc = db_critpath(db, flt, &co, &d.cp, &d.ncp);
		d.has_cp = !rc;
	}
	if (!rc && sec && !strcmp(sec, "annotations")) {
		rc = db_annotation_stats(db, flt, &d.ann, &d.nann);
		d.has_ann = !rc;
	}
	if (!rc && sec && !strcmp(sec, "counters")) {
		rc = db_counters(db, flt, &d.ctr);
		d.has_ctr = !rc;
	}
	if (!rc && (want_all || !strcmp(sec, "step") || !strcmp(sec, "rank")))
		rc = db_device_lanes(db, &d.lanes, &d.nlanes);
	if (!rc && (json || (sec && !strcmp(sec, "step")))) {
		rc = db_view_step_work(db, flt, &d.sw, &d.nsw);
		if (!rc && !d.sw && d.nlanes && !(d.sw = calloc(1, sizeof *d.sw)))   /* a trace with devices: present, even empty */
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc && want_all)
		rc = db_launch_stats(db, flt, &d.launch, &d.nlaunch);
	if (!rc && o->rank >= 0) {
		int found = 0;
		for (int i = 0; i < d.nranks; i++)
			found |= d.ranks[i].rank == o->rank;
		if (!found)
			rc = ascent_error(ASCENT_EUSAGE, "no rank %d in '%s' (it has %d rank%s)", o->rank, o->db_path,
					  d.nranks, d.nranks == 1 ? "" : "s");
	}
	if (!rc) {
		if (json)
			rc = print_json(db, &d, f);
		else if (!sec) {
			sec_overview(db, &d, f);
			sec_ops(&d, f, 0);
			sec_comm(&d, f, 0);
			sec_groups(&d, f, 0);
		} else if (!strcmp(sec, "op"))
			sec_ops(&d, f, csv);
		else if (!strcmp(sec, "comm")) {
			sec_comm(&d, f, csv);
			if (!csv)   /* one table per CSV document */
				sec_groups(&d, f, 0);
		}
		else if (!strcmp(sec, "step")) {
			sec_steps(&d, f, csv);
			if (!csv)   /* one table per CSV document */
				sec_step_work(&d, f);
		}
		else if (!strcmp(sec, "rank"))
			sec_ranks(&d, f, csv);
		else if (!strcmp(sec, "mem"))
			sec_mem(&d, f, csv);
		else if (!strcmp(sec, "overhead"))
			sec_overhead(&d, f, csv);
		else if (!strcmp(sec, "stack"))
			rc = sec_stack(db, flt, f, csv, d.width);
		else if (!strcmp(sec, "shape"))
			sec_shapes(&d, f, csv);
		else if (!strcmp(sec, "device")) {
			sec_devices(&d, f, csv);
			if (!csv)   /* one table per CSV document */
				sec_streams(&d, f), sec_copies(&d, f);
		} else if (!strcmp(sec, "runtime"))
			sec_runtime(&d, f, csv);
		else if (!strcmp(sec, "opkernels"))
			sec_opkernels(&d, f, csv);
		else if (!strcmp(sec, "critpath"))
			sec_critpath(&d, f, csv);
		else if (!strcmp(sec, "annotations"))
			sec_annotations(&d, f, csv);
		else if (!strcmp(sec, "counters"))
			sec_counters(&d, f, csv);
		else if (!strcmp(sec, "spread"))
			sec_spread(&d, f, csv);
		else if (!strcmp(sec, "collective")) {
			if (!csv)   /* one table per CSV document: the per-rank one */
				sec_coll_kinds(&d, f, 0);
			sec_coll_ranks(&d, f, csv, o->rank);
			if (!csv)
				sec_coll_calls(&d, f);
		} else if (!strcmp(sec, "matrix"))
			sec_matrix(&d, f, csv);
	}
	data_free(&d);
	db_close(db);
	return rc;
}
