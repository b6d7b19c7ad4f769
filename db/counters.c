/* db/counters.c — imported traces: the performance counters CUPTI range profiling measured per
 * kernel (Kineto's cuda_profiler_range events, their counters in args, on each device's lane of
 * stream DB_STREAM_COUNTERS), each kernel with the CPU operators open at its launch, and the
 * counters summed per operator, for `report --by counters` (docs/device.md). The launch is the
 * import's pairing (import/kineto.c: the n-th range with the n-th cudaLaunchKernel call, as
 * Holistic Trace Analysis pairs them); the operators are those open on the launching thread at the
 * call's start (db/opstack.c), outermost first. */
#include "db/internal.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

struct cscan {
	struct db_counters *out;
	int capk;
	int capnames;
	int next;                   /* the next kernel (in rank, launch order) to give its operators */
	int rank;                   /* INT32_MIN before the first event */
	struct db_opstacks ops;
	char **names;               /* every string (operator names) */
	int64_t nnames;
};

/* The index of counter `name`, added when new. */
static int counter_index(struct cscan *x, const char *name, int *at)
{
	struct db_counters *o = x->out;
	for (int i = 0; i < o->ncounters; i++)
		if (!strcmp(o->counters[i], name)) {
			*at = i;
			return 0;
		}
	int rc = ARRAY_GROW(o->counters, o->ncounters, x->capnames, 16, "reading counter names");
	if (rc)
		return rc;
	if (!(o->counters[o->ncounters] = strdup(name)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	*at = o->ncounters++;
	return 0;
}

/* A kernel's counters from its args: every numeric member; values[i] for counter i (grown to the
 * counters known so far, NaN where the kernel has none). */
static int kernel_values(struct cscan *x, struct db_kernel_counters *k, const char *args)
{
	cJSON *j = args ? cJSON_Parse(args) : NULL;
	int rc = 0;
	for (const cJSON *m = j ? j->child : NULL; m && !rc; m = m->next) {
		if (!cJSON_IsNumber(m) || !m->string)
			continue;
		int at = 0;
		if ((rc = counter_index(x, m->string, &at)) != 0)
			break;
		if (at >= k->nvalues) {
			double *v = realloc(k->values, (size_t)(at + 1) * sizeof *v);
			if (!v) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			for (int i = k->nvalues; i <= at; i++)
				v[i] = NAN;
			k->values = v;
			k->nvalues = at + 1;
		}
		k->values[at] = m->valuedouble;
	}
	cJSON_Delete(j);
	return rc;
}

static int kernel_row(void *ud, sqlite3_stmt *s)
{
	struct cscan *x = ud;
	struct db_counters *o = x->out;
	int rc = ARRAY_GROW(o->kernels, o->nkernels, x->capk, 256, "reading counter ranges");
	if (rc)
		return rc;
	struct db_kernel_counters *k = &o->kernels[o->nkernels++];
	const char *name = (const char *)sqlite3_column_text(s, 4);
	*k = (struct db_kernel_counters){ .rank = sqlite3_column_int(s, 0), .device = sqlite3_column_int(s, 1),
					  .start_ns = sqlite3_column_int64(s, 2), .dur_ns = sqlite3_column_int64(s, 3),
					  .linked = sqlite3_column_type(s, 6) != SQLITE_NULL,
					  .launch_tid = sqlite3_column_int(s, 6), .launch_ns = sqlite3_column_int64(s, 7) };
	if (!(k->name = strdup(name ? name : "")))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	return kernel_values(x, k, (const char *)sqlite3_column_text(s, 5));
}

/* The operators open at the launch of every kernel launched before `ns` on the current rank. */
static int give_until(struct cscan *x, int64_t ns)
{
	struct db_counters *o = x->out;
	for (; x->next < o->nkernels; x->next++) {
		struct db_kernel_counters *k = &o->kernels[x->next];
		if (k->rank > x->rank || (k->rank == x->rank && k->linked && k->launch_ns >= ns))
			break;
		if (k->rank < x->rank || !k->linked)
			continue;
		int n;
		const struct db_opframe *v = db_opstack_open(&x->ops, k->launch_tid, k->launch_ns, &n);
		if (!n)
			continue;
		if (!(k->ops = calloc((size_t)n, sizeof *k->ops)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		for (int i = 0; i < n; i++) {
			const char *nm = v[i].name_id > 0 && v[i].name_id < x->nnames ? x->names[v[i].name_id] : "";
			if (!(k->ops[i] = strdup(nm)))
				return ascent_error(ASCENT_ENOMEM, "out of memory");
			k->nops++;
		}
	}
	return 0;
}

static int op_event(void *ud, const struct db_event *e)
{
	struct cscan *x = ud;
	int rc = 0;
	if (e->rank != x->rank) {
		if (x->rank != INT32_MIN && (rc = give_until(x, INT64_MAX)) != 0)
			return rc;
		x->rank = e->rank;
		db_opstack_clear(&x->ops);
	}
	if ((rc = give_until(x, e->start_ns)) != 0 || e->kind != DB_KIND_OP)
		return rc;
	return db_opstack_push(&x->ops, e->tid, e->start_ns,
			       (struct db_opframe){ e->name_id, i64_add_sat(e->start_ns, e->dur_ns), 0 });
}

/* Kernels sorted for the operator pass: rank, then launch time (unlinked ones, with no operators,
 * first: they are skipped). */
static int cmp_launch(const void *a, const void *b)
{
	const struct db_kernel_counters *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->linked != y->linked)
		return x->linked ? 1 : -1;
	if (x->launch_ns != y->launch_ns)
		return x->launch_ns < y->launch_ns ? -1 : 1;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

/* Kernels as reported: rank, device, then the range's start. */
static int cmp_kernel(const void *a, const void *b)
{
	const struct db_kernel_counters *x = a, *y = b;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->device != y->device)
		return x->device < y->device ? -1 : 1;
	return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
}

static int cmp_group(const void *a, const void *b)
{
	const struct db_counter_group *x = a, *y = b;
	if (x->level != y->level)
		return x->level - y->level;
	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	if (x->kernels != y->kernels)
		return x->kernels > y->kernels ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* Add kernel k's counters to the group (rank, level, name), made when new. */
static int group_add(struct db_counters *o, int *cap, int level, const struct db_kernel_counters *k, const char *name)
{
	struct db_counter_group *g = NULL;
	for (int i = 0; i < o->ngroups && !g; i++)
		if (o->groups[i].level == level && o->groups[i].rank == k->rank && !strcmp(o->groups[i].name, name))
			g = &o->groups[i];
	if (!g) {
		int rc = ARRAY_GROW(o->groups, o->ngroups, *cap, 32, "summing counters");
		if (rc)
			return rc;
		g = &o->groups[o->ngroups++];
		*g = (struct db_counter_group){ .rank = k->rank, .level = level };
		if (!(g->name = strdup(name)) || !(g->sums = calloc((size_t)(o->ncounters ? o->ncounters : 1), sizeof *g->sums)))
			return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	g->kernels++;
	for (int i = 0; i < k->nvalues && i < o->ncounters; i++)
		if (k->values[i] == k->values[i])   /* not NaN: the kernel has the counter */
			g->sums[i] += k->values[i];
	return 0;
}

static int groups(struct db_counters *o)
{
	int cap = 0, rc = 0;
	for (int i = 0; i < o->nkernels && !rc; i++) {
		const struct db_kernel_counters *k = &o->kernels[i];
		rc = group_add(o, &cap, DB_COUNTERS_BY_KERNEL, k, k->name);
		if (!rc)
			rc = group_add(o, &cap, DB_COUNTERS_BY_OP, k, k->nops ? k->ops[k->nops - 1] : "");
		if (!rc)
			rc = group_add(o, &cap, DB_COUNTERS_BY_TOP_OP, k, k->nops ? k->ops[0] : "");
	}
	if (!rc && o->ngroups)
		qsort(o->groups, (size_t)o->ngroups, sizeof *o->groups, cmp_group);
	return rc;
}

int db_counters(struct db *db, struct db_filter f, struct db_counters *out)
{
	*out = (struct db_counters){ 0 };
	if (!db_has_table(db, "device_lane") || !db_has_table(db, "flow") || !db_has_table(db, "arg"))
		return 0;
	struct cscan x = { .out = out, .rank = INT32_MIN };
	/* every counter range with its args and its launch; selected by the launch's start (a range
	 * without one: its own) */
	int rc = db_scan_windows(db, f,
				 "SELECT e.rank, dl.device, e.start_ns, e.dur_ns, s.value, a.args, fl.src_tid, fl.src_ns,"
				 " coalesce(fl.src_ns, e.start_ns) AS at FROM event e JOIN device_lane dl ON dl.rank = e.rank"
				 " AND dl.tid = e.tid JOIN string s ON s.id = e.name_id LEFT JOIN arg a ON a.rank = e.rank"
				 " AND a.start_ns = e.start_ns AND a.tid = e.tid AND a.kind = e.kind AND a.name_id = e.name_id"
				 " AND a.dur_ns = e.dur_ns AND a.ord = e.ord LEFT JOIN flow fl ON fl.rank = e.rank AND"
				 " fl.dst_tid = e.tid AND fl.dst_ns = e.start_ns AND fl.kind = " DB_SQL_FLOW_LAUNCH
				 " WHERE dl.stream = -1 AND e.kind = " DB_SQL_KIND_RANGE " AND (?1 < 0 OR e.rank = ?1)"
				 " AND at >= ?2 AND at < ?3 ORDER BY e.rank, at",
				 kernel_row, &x);
	if (!rc && out->nkernels) {
		qsort(out->kernels, (size_t)out->nkernels, sizeof *out->kernels, cmp_launch);
		rc = db_strings(db, &x.names, &x.nnames);
		if (!rc)
			rc = db_each_event_nested(db, (struct db_filter){ f.rank, -1, -1 }, op_event, &x);
		if (!rc)
			rc = give_until(&x, INT64_MAX);
		qsort(out->kernels, (size_t)out->nkernels, sizeof *out->kernels, cmp_kernel);
		for (int i = 0; i < out->nkernels; i++)
			out->linked += out->kernels[i].linked;
	}
	if (!rc)
		rc = groups(out);
	db_opstack_free(&x.ops);
	db_strings_free(x.names, x.nnames);
	if (rc)
		db_counters_free(out);
	return rc;
}

void db_counters_free(struct db_counters *c)
{
	for (int i = 0; i < c->nkernels; i++) {
		struct db_kernel_counters *k = &c->kernels[i];
		free(k->name);
		free(k->values);
		for (int j = 0; j < k->nops; j++)
			free(k->ops[j]);
		free(k->ops);
	}
	free(c->kernels);
	for (int i = 0; i < c->ngroups; i++) {
		free(c->groups[i].name);
		free(c->groups[i].sums);
	}
	free(c->groups);
	for (int i = 0; i < c->ncounters; i++)
		free(c->counters[i]);
	free(c->counters);
	*c = (struct db_counters){ 0 };
}
