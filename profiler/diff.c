/* profiler/diff.c — `ascent diff A B` rendered: the comparison db_diff computed (db/diff.c) as
 * aligned tables for people, one CSV table, or one JSON document (docs/diff.md). Renders only. */
#include "profiler/prof.h"
#include "profiler/table.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

/* What each kind of named row is for --by: host work (op), device work (kernel), communication
 * (comm). Indexed by enum db_kind. */
static const char *const KIND_GROUP[DB_KIND_COUNT] = {
	[DB_KIND_OP] = "op", [DB_KIND_COMM] = "comm", [DB_KIND_P2P] = "comm", [DB_KIND_STEP] = "step",
	[DB_KIND_PHASE] = "op", [DB_KIND_DATA] = "op", [DB_KIND_IO] = "op", [DB_KIND_CHECKPOINT] = "op",
	[DB_KIND_RANGE] = "op", [DB_KIND_MICROBATCH] = "op", [DB_KIND_WAIT] = "comm", [DB_KIND_KERNEL] = "kernel",
	[DB_KIND_MEMCPY] = "kernel", [DB_KIND_MEMSET] = "kernel",
};

static int row_wanted(const struct prof_diff_opts *o, int kind)
{
	if (!o->by)
		return 1;
	return kind >= 0 && kind < DB_KIND_COUNT && KIND_GROUP[kind] && !strcmp(KIND_GROUP[kind], o->by);
}

static int want(const struct prof_diff_opts *o, const char *section)
{
	return !o->by || !strcmp(o->by, section);
}

/* ---------------------------------------------------------------------------------------- */
/* cells: numbers for people (tables) or raw (CSV) */

struct cells {
	int raw;
	char buf[32][64];
	int i;
};

static char *cell(struct cells *c)
{
	return c->buf[c->i++ % 32];
}

static const char *c_ns(struct cells *c, int64_t v, int sign)
{
	char *b = cell(c);
	if (c->raw)
		snprintf(b, 64, "%lld", (long long)v);
	else if (v < 0)
		b[0] = '-', units_ns(b + 1, 63, -(double)v);
	else if (sign && v > 0)
		b[0] = '+', units_ns(b + 1, 63, (double)v);
	else
		units_ns(b, 64, (double)v);
	return b;
}

static const char *c_bytes(struct cells *c, int64_t v)
{
	char *b = cell(c);
	if (c->raw)
		snprintf(b, 64, "%lld", (long long)v);
	else
		units_bytes(b, 64, (double)v);
	return b;
}

static const char *c_int(struct cells *c, int64_t v)
{
	char *b = cell(c);
	snprintf(b, 64, "%lld", (long long)v);
	return b;
}

static const char *c_fmt(struct cells *c, const char *fmt, ...)
{
	char *b = cell(c);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b, 64, fmt, ap);
	va_end(ap);
	return b;
}

/* B relative to A: "+12.5%", "new" when A is 0 and B is not, "" when both are 0. */
static const char *c_rel(struct cells *c, int64_t a, int64_t b)
{
	if (a == 0)
		return b ? "new" : "";
	return c_fmt(c, "%+.1f%%", 100.0 * ((double)b - (double)a) / (double)a);
}

static int64_t mean(int64_t total, int64_t count)
{
	return count > 0 ? total / count : 0;
}

/* A side's mean: "-" in a table where the side lacks the name. */
static const char *c_mean(struct cells *c, int64_t total, int64_t count)
{
	return !c->raw && count == 0 ? "-" : c_ns(c, mean(total, count), 0);
}

/* ---------------------------------------------------------------------------------------- */

/* ---------------------------------------------------------------------------------------- */
/* the overview */

struct metric {
	const char *what;
	int has[2];
	double v[2];
	int kind;          /* 0 count, 1 ns, 2 share of the step (points), 3 rate, 4 bytes */
};

static double share(int64_t part, int64_t whole)
{
	return whole > 0 ? 100.0 * (double)part / (double)whole : 0;
}

/* The overview's lines, both sides: n of them into m (at most 16). */
static int overview_metrics(const struct db_diff *d, struct metric *m)
{
	int n = 0;
	const struct db_diff_side *a = &d->side[0], *b = &d->side[1];
	m[n++] = (struct metric){ "ranks", { 1, 1 }, { a->nranks, b->nranks }, 0 };
	m[n++] = (struct metric){ "steps", { 1, 1 }, { (double)a->steps, (double)b->steps }, 0 };
	m[n++] = (struct metric){ "mean step time",
				  { a->step_rows > 0, b->step_rows > 0 },
				  { a->step_rows ? (double)a->step_total_ns / (double)a->step_rows : 0,
				    b->step_rows ? (double)b->step_total_ns / (double)b->step_rows : 0 },
				  1 };
	struct {
		const char *what;
		int64_t a, b;
	} split[] = {
		{ "computing", a->computing_ns, b->computing_ns },
		{ "communication not overlapped", a->comm_not_overlapped_ns, b->comm_not_overlapped_ns },
		{ "free (idle)", a->free_ns, b->free_ns },
		{ "bubble", a->bubble_ns, b->bubble_ns },
	};
	for (size_t i = 0; i < sizeof split / sizeof split[0]; i++)
		m[n++] = (struct metric){ split[i].what,
					  { a->step_rows > 0, b->step_rows > 0 },
					  { share(split[i].a, a->step_total_ns), share(split[i].b, b->step_total_ns) },
					  2 };
	m[n++] = (struct metric){ "tokens/s", { a->has_tokens, b->has_tokens }, { a->tokens_per_s, b->tokens_per_s }, 3 };
	m[n++] = (struct metric){ "peak memory in use", { a->has_mem, b->has_mem },
				  { (double)a->peak_mem_bytes, (double)b->peak_mem_bytes }, 4 };
	m[n++] = (struct metric){ "device time launched (linked)", { a->linked > 0, b->linked > 0 },
				  { (double)a->linked_ns, (double)b->linked_ns }, 1 };
	m[n++] = (struct metric){ "  of it launched inside CPU operators", { a->linked > 0, b->linked > 0 },
				  { (double)(a->linked_ns - a->unattributed_ns), (double)(b->linked_ns - b->unattributed_ns) }, 1 };
	return n;
}

static const char *metric_value(struct cells *c, const struct metric *m, int s)
{
	if (!m->has[s])
		return "-";
	switch (m->kind) {
	case 1: return c_ns(c, (int64_t)m->v[s], 0);
	case 2: return c_fmt(c, "%.1f%%", m->v[s]);
	case 3: return c_fmt(c, "%.1f", m->v[s]);
	case 4: return c_bytes(c, (int64_t)m->v[s]);
	default: return c_fmt(c, "%.0f", m->v[s]);
	}
}

static const char *metric_change(struct cells *c, const struct metric *m)
{
	if (!m->has[0] || !m->has[1])
		return "";
	double dv = m->v[1] - m->v[0];
	switch (m->kind) {
	case 2: return c_fmt(c, "%+.1f pt", dv);
	case 1:
		return m->v[0] > 0 ? c_fmt(c, "%s (%+.1f%%)", c_ns(c, (int64_t)dv, 1), 100.0 * dv / m->v[0])
				   : c_ns(c, (int64_t)dv, 1);
	case 0: return c_fmt(c, "%+.0f", dv);
	default: return m->v[0] > 0 ? c_fmt(c, "%+.1f%%", 100.0 * dv / m->v[0]) : c_fmt(c, "%+.0f", dv);
	}
}

static void print_overview(const struct db_diff *d, const struct prof_diff_opts *o, FILE *f, int csv)
{
	struct metric m[16];
	int n = overview_metrics(d, m);
	static const char *const C[] = { "A", "B", "Change", "Overview" };
	struct prof_tbl t = { .ncol = 4, .cols = C };
	struct cells c = { .raw = csv };
	for (int i = 0; i < n; i++) {
		c.i = 0;
		prof_tbl_row(&t, metric_value(&c, &m[i], 0), metric_value(&c, &m[i], 1), metric_change(&c, &m[i]), m[i].what);
	}
	if (!csv)
		fprintf(f, "A: %s\nB: %s\n", o->a_label, o->b_label);
	prof_tbl_print(&t, f, csv, "Overview (step split: share of the step time; change in points)");
	prof_tbl_free(&t);
}

/* ---------------------------------------------------------------------------------------- */
/* the tables */

static void print_rows(const struct db_diff *d, const struct prof_diff_opts *o, FILE *f, int csv, int width)
{
	static const char *const C[] = { "Change", "Change (%)", "A total", "B total", "A count", "B count", "A mean",
					 "B mean", "Category", "Kind", "Name" };
	struct prof_tbl t = { .ncol = 11, .cols = C };
	struct cells c = { .raw = csv };
	int shown = 0;
	for (int i = 0; i < d->nrows; i++) {
		const struct db_diff_row *r = &d->rows[i];
		if (!row_wanted(o, r->kind) || (!csv && o->top > 0 && shown >= o->top))
			continue;
		shown++;
		c.i = 0;
		prof_tbl_row(&t, c_ns(&c, r->total_ns[1] - r->total_ns[0], 1), c_rel(&c, r->total_ns[0], r->total_ns[1]),
			c_ns(&c, r->total_ns[0], 0), c_ns(&c, r->total_ns[1], 0), c_int(&c, r->count[0]),
			c_int(&c, r->count[1]), c_mean(&c, r->total_ns[0], r->count[0]),
			c_mean(&c, r->total_ns[1], r->count[1]), db_diff_cat_name(r->category), db_kind_name(r->kind),
			r->name);
	}
	t.width = width;
	prof_tbl_print(&t, f, csv, "Every name, both sides (by the absolute change in total time; category by count)");
	prof_tbl_free(&t);
}

static void print_comms(const struct db_diff *d, FILE *f, int csv, int width)
{
	static const char *const C[] = { "Size", "A count", "B count", "A bytes", "B bytes", "A total", "B total",
					 "A busbw", "B busbw", "Kind", "Name" };
	struct prof_tbl t = { .ncol = 11, .cols = C };
	struct cells c = { .raw = csv };
	for (int i = 0; i < d->ncomms; i++) {
		const struct db_diff_comm *r = &d->comms[i];
		c.i = 0;
		prof_tbl_row(&t, c.raw ? c_int(&c, r->bucket) : c_fmt(&c, ">= %s", c_bytes(&c, r->bucket)), c_int(&c, r->count[0]),
			c_int(&c, r->count[1]), c_bytes(&c, r->bytes[0]), c_bytes(&c, r->bytes[1]), c_ns(&c, r->total_ns[0], 0),
			c_ns(&c, r->total_ns[1], 0), c_fmt(&c, "%.2f", r->busbw_gbs[0]), c_fmt(&c, "%.2f", r->busbw_gbs[1]),
			db_kind_name(r->kind), r->name);
	}
	t.width = width;
	prof_tbl_print(&t, f, csv, "Collectives and point-to-point per size (busbw in GB/s)");
	prof_tbl_free(&t);
}

static void print_opdev(const struct db_diff *d, const struct prof_diff_opts *o, FILE *f, int csv, int width)
{
	static const char *const C[] = { "Device change", "A device", "B device", "A self dev", "B self dev",
					 "A launched", "B launched", "A count", "B count", "A CPU", "B CPU", "Name" };
	struct prof_tbl t = { .ncol = 12, .cols = C };
	struct cells c = { .raw = csv };
	for (int i = 0; i < d->nopdev && (csv || o->top <= 0 || i < o->top); i++) {
		const struct db_diff_opdev *r = &d->opdev[i];
		c.i = 0;
		/* a side none of whose launch links starts inside an operator knows nothing of its operators'
		 * device work: "-", no change */
		int k0 = d->side[0].linked > d->side[0].unattributed, k1 = d->side[1].linked > d->side[1].unattributed;
		prof_tbl_row(&t, k0 && k1 ? c_ns(&c, r->device_ns[1] - r->device_ns[0], 1) : "",
			k0 ? c_ns(&c, r->device_ns[0], 0) : "-", k1 ? c_ns(&c, r->device_ns[1], 0) : "-",
			k0 ? c_ns(&c, r->device_self_ns[0], 0) : "-", k1 ? c_ns(&c, r->device_self_ns[1], 0) : "-",
			k0 ? c_int(&c, r->launched[0]) : "-", k1 ? c_int(&c, r->launched[1]) : "-", c_int(&c, r->count[0]),
			c_int(&c, r->count[1]), c_ns(&c, r->cpu_ns[0], 0), c_ns(&c, r->cpu_ns[1], 0), r->name);
	}
	if (!csv && !t.nrows && !d->side[0].linked && !d->side[1].linked) {
		prof_tbl_free(&t);
		return;   /* neither side has launch links (a host-only run): no table */
	}
	t.width = width;
	prof_tbl_print(&t, f, csv, "CPU operators with the device work they launched (launch links; 'self': launched by the innermost "
		  "operator; '-': no launch link of the side starts inside an operator)");
	prof_tbl_free(&t);
}

/* ---------------------------------------------------------------------------------------- */
/* JSON */

static void json_side(cJSON *o, const struct db_diff_side *s)
{
	cJSON_AddNumberToObject(o, "ranks", s->nranks);
	cJSON_AddNumberToObject(o, "steps", (double)s->steps);
	cJSON_AddNumberToObject(o, "step_rows", (double)s->step_rows);
	cJSON_AddNumberToObject(o, "step_total_ns", (double)s->step_total_ns);
	cJSON_AddNumberToObject(o, "step_mean_ns", s->step_rows ? (double)s->step_total_ns / (double)s->step_rows : 0);
	cJSON_AddNumberToObject(o, "computing_ns", (double)s->computing_ns);
	cJSON_AddNumberToObject(o, "comm_not_overlapped_ns", (double)s->comm_not_overlapped_ns);
	cJSON_AddNumberToObject(o, "free_ns", (double)s->free_ns);
	cJSON_AddNumberToObject(o, "bubble_ns", (double)s->bubble_ns);
	if (s->has_tokens)
		cJSON_AddNumberToObject(o, "tokens_per_s", s->tokens_per_s);
	else
		cJSON_AddNullToObject(o, "tokens_per_s");
	if (s->has_mem)
		cJSON_AddNumberToObject(o, "peak_mem_bytes", (double)s->peak_mem_bytes);
	else
		cJSON_AddNullToObject(o, "peak_mem_bytes");
	cJSON_AddNumberToObject(o, "linked", (double)s->linked);
	cJSON_AddNumberToObject(o, "linked_ns", (double)s->linked_ns);
	cJSON_AddNumberToObject(o, "unattributed", (double)s->unattributed);
	cJSON_AddNumberToObject(o, "unattributed_ns", (double)s->unattributed_ns);
}

static cJSON *json_doc(const struct db_diff *d, const struct prof_diff_opts *o)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "a", o->a_label);
	cJSON_AddStringToObject(root, "b", o->b_label);
	cJSON *ov = cJSON_AddObjectToObject(root, "overview");
	json_side(cJSON_AddObjectToObject(ov, "a"), &d->side[0]);
	json_side(cJSON_AddObjectToObject(ov, "b"), &d->side[1]);
	cJSON *ops = cJSON_AddArrayToObject(root, "ops");
	for (int i = 0; ops && i < d->nrows; i++) {
		const struct db_diff_row *r = &d->rows[i];
		if (!row_wanted(o, r->kind))
			continue;
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(ops, x);
		cJSON_AddStringToObject(x, "name", r->name);
		cJSON_AddStringToObject(x, "kind", db_kind_name(r->kind));
		cJSON_AddStringToObject(x, "category", db_diff_cat_name(r->category));
		cJSON_AddNumberToObject(x, "a_count", (double)r->count[0]);
		cJSON_AddNumberToObject(x, "b_count", (double)r->count[1]);
		cJSON_AddNumberToObject(x, "a_total_ns", (double)r->total_ns[0]);
		cJSON_AddNumberToObject(x, "b_total_ns", (double)r->total_ns[1]);
		cJSON_AddNumberToObject(x, "a_mean_ns", (double)mean(r->total_ns[0], r->count[0]));
		cJSON_AddNumberToObject(x, "b_mean_ns", (double)mean(r->total_ns[1], r->count[1]));
		cJSON_AddNumberToObject(x, "diff_total_ns", (double)(r->total_ns[1] - r->total_ns[0]));
	}
	cJSON *cm = want(o, "comm") ? cJSON_AddArrayToObject(root, "comm") : NULL;
	for (int i = 0; cm && i < d->ncomms; i++) {
		const struct db_diff_comm *r = &d->comms[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(cm, x);
		cJSON_AddStringToObject(x, "name", r->name);
		cJSON_AddStringToObject(x, "kind", db_kind_name(r->kind));
		cJSON_AddNumberToObject(x, "bucket", (double)r->bucket);
		for (int s = 0; s < 2; s++) {
			char k[32];
			const char *p = s ? "b_" : "a_";
			snprintf(k, sizeof k, "%scount", p);
			cJSON_AddNumberToObject(x, k, (double)r->count[s]);
			snprintf(k, sizeof k, "%sbytes", p);
			cJSON_AddNumberToObject(x, k, (double)r->bytes[s]);
			snprintf(k, sizeof k, "%stotal_ns", p);
			cJSON_AddNumberToObject(x, k, (double)r->total_ns[s]);
			snprintf(k, sizeof k, "%sbusbw_gbs", p);
			cJSON_AddNumberToObject(x, k, r->busbw_gbs[s]);
		}
	}
	cJSON *od = want(o, "kernel") || want(o, "op") ? cJSON_AddArrayToObject(root, "op_device") : NULL;
	for (int i = 0; od && i < d->nopdev; i++) {
		const struct db_diff_opdev *r = &d->opdev[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(od, x);
		cJSON_AddStringToObject(x, "name", r->name);
		cJSON_AddStringToObject(x, "category", db_diff_cat_name(r->category));
		for (int s = 0; s < 2; s++) {
			char k[32];
			const char *p = s ? "b_" : "a_";
			struct {
				const char *key;
				int64_t v;
			} f[] = { { "count", r->count[s] }, { "cpu_ns", r->cpu_ns[s] }, { "launched", r->launched[s] },
				  { "device_ns", r->device_ns[s] }, { "device_self_ns", r->device_self_ns[s] } };
			for (size_t j = 0; j < sizeof f / sizeof f[0]; j++) {
				snprintf(k, sizeof k, "%s%s", p, f[j].key);
				cJSON_AddNumberToObject(x, k, (double)f[j].v);
			}
		}
	}
	return root;
}

/* ---------------------------------------------------------------------------------------- */
/* the regressions that matter (--advise) */

static const char *reg_kind(const struct db_diff_regression *r)
{
	return r->kind == DB_DIFF_FREE_KIND ? "free" : db_kind_name(r->kind);
}

/* The advice's verdict in a sentence. */
static void advice_message(const struct db_diff_advice *a, char *buf, size_t n)
{
	char ch[40], x[32], y[32];
	double dv = a->step_change_ns;
	units_ns(x, sizeof x, a->step_mean_ns[0]);
	units_ns(y, sizeof y, a->step_mean_ns[1]);
	ch[0] = dv < 0 ? '-' : '+';
	units_ns(ch + 1, sizeof ch - 1, dv < 0 ? -dv : dv);
	double pct = a->step_mean_ns[0] > 0 ? 100.0 * dv / a->step_mean_ns[0] : 0;
	switch (a->verdict) {
	case DB_DIFF_SLOWER:
		snprintf(buf, n, "B is slower: mean step %s -> %s, %s (%+.1f%%). The regressions, by their share of that "
			 "change (per step and rank; rows nest, a kernel inside its operator, so shares need not add up):",
			 x, y, ch, pct);
		break;
	case DB_DIFF_FASTER:
		snprintf(buf, n, "B is not slower: mean step %s -> %s, %s (%+.1f%%), no regression to explain. The largest "
			 "changes either way, per step and rank (no share):", x, y, ch, pct);
		break;
	case DB_DIFF_SAME:
		if (!a->n)
			snprintf(buf, n, "Nothing changed: the mean step time (%s) and every row's time are the same on both "
				 "sides.", x);
		else
			snprintf(buf, n, "The step time did not change: mean step %s -> %s, %s (%+.1f%%, within %g%%), no "
				 "regression to explain. The largest changes either way, per step and rank (no share):",
				 x, y, ch, pct, 100.0 * a->min_change);
		break;
	default:
		snprintf(buf, n, "No step time to compare (a side has no step): the largest changes either way, per rank "
			 "(no share).");
	}
}

static void print_advice_table(const struct db_diff_advice *a, FILE *f, int csv, int width)
{
	static const char *const C[] = { "Rank", "Share", "Change", "A", "B", "Category", "Kind", "Phase", "Name",
					 "Evidence", "Cause" };
	struct prof_tbl t = { .ncol = csv ? 11 : 9, .cols = C };
	struct cells c = { .raw = csv };
	for (int i = 0; i < a->n; i++) {
		const struct db_diff_regression *r = &a->r[i];
		c.i = 0;
		const char *sh = isnan(r->share) ? (csv ? "" : "-") : c_fmt(&c, csv ? "%.6f" : "%.1f%%", csv ? r->share
												 : 100.0 * r->share);
		prof_tbl_row(&t, c_int(&c, i + 1), sh, c_ns(&c, (int64_t)llround(r->delta_per_step_ns), 1),
			c_ns(&c, (int64_t)llround(r->per_step_ns[0]), 0), c_ns(&c, (int64_t)llround(r->per_step_ns[1]), 0),
			db_diff_cat_name(r->category), reg_kind(r), db_diff_phase_name(r->phase), r->name, r->evidence,
			r->cause);
	}
	t.width = width;
	prof_tbl_print(&t, f, csv, a->verdict == DB_DIFF_SLOWER
			  ? "Regressions (A, B and Change: time per step and rank; Share: of the step-time change)"
			  : "Largest changes (A, B and Change: time per step and rank; no share: B is not slower)");
	prof_tbl_free(&t);
	if (csv)
		return;
	char nm[1024];
	for (int i = 0; i < a->n; i++) {
		const struct db_diff_regression *r = &a->r[i];
		char *name = units_printable(r->name), *ev = units_printable(r->evidence);
		fprintf(f, "\n%d. %s %s\n   evidence: %s\n", i + 1, reg_kind(r),
			name ? (width > 0 ? units_name(nm, sizeof nm, name, width - 8 > 40 ? width - 8 : 40) : name) : "?",
			ev ? ev : "?");
		if (*r->cause)
			fprintf(f, "   usual cause: %s\n", r->cause);
		free(name);
		free(ev);
	}
}

static cJSON *json_advice(const struct db_diff *d, const struct db_diff_advice *a, const struct prof_diff_opts *o)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "a", o->a_label);
	cJSON_AddStringToObject(root, "b", o->b_label);
	cJSON *ov = cJSON_AddObjectToObject(root, "overview");
	json_side(cJSON_AddObjectToObject(ov, "a"), &d->side[0]);
	json_side(cJSON_AddObjectToObject(ov, "b"), &d->side[1]);
	cJSON *ad = cJSON_AddObjectToObject(root, "advice");
	char msg[1024];
	advice_message(a, msg, sizeof msg);
	cJSON_AddStringToObject(ad, "verdict", db_diff_verdict_name(a->verdict));
	cJSON_AddStringToObject(ad, "message", msg);
	cJSON_AddNumberToObject(ad, "min_change", a->min_change);
	cJSON_AddNumberToObject(ad, "a_step_mean_ns", a->step_mean_ns[0]);
	cJSON_AddNumberToObject(ad, "b_step_mean_ns", a->step_mean_ns[1]);
	cJSON_AddNumberToObject(ad, "step_change_ns", a->step_change_ns);
	cJSON *pc = cJSON_AddObjectToObject(ad, "phase_change_ns");
	for (int p = 0; pc && p < DB_PHASE_COUNT; p++)
		cJSON_AddNumberToObject(pc, db_diff_phase_name(p), a->phase_change_ns[p]);
	cJSON *rs = cJSON_AddArrayToObject(root, "regressions");
	for (int i = 0; rs && i < a->n; i++) {
		const struct db_diff_regression *r = &a->r[i];
		cJSON *x = cJSON_CreateObject();
		cJSON_AddItemToArray(rs, x);
		cJSON_AddNumberToObject(x, "rank_order", i + 1);
		cJSON_AddStringToObject(x, "kind", reg_kind(r));
		cJSON_AddStringToObject(x, "name", r->name);
		cJSON_AddStringToObject(x, "category", db_diff_cat_name(r->category));
		cJSON_AddNumberToObject(x, "a_count", (double)r->count[0]);
		cJSON_AddNumberToObject(x, "b_count", (double)r->count[1]);
		cJSON_AddNumberToObject(x, "a_total_ns", (double)r->total_ns[0]);
		cJSON_AddNumberToObject(x, "b_total_ns", (double)r->total_ns[1]);
		cJSON_AddNumberToObject(x, "a_per_step_ns", r->per_step_ns[0]);
		cJSON_AddNumberToObject(x, "b_per_step_ns", r->per_step_ns[1]);
		cJSON_AddNumberToObject(x, "delta_per_step_ns", r->delta_per_step_ns);
		if (isnan(r->share))
			cJSON_AddNullToObject(x, "share_of_step_change");
		else
			cJSON_AddNumberToObject(x, "share_of_step_change", r->share);
		cJSON_AddStringToObject(x, "phase", db_diff_phase_name(r->phase));
		cJSON_AddStringToObject(x, "evidence", r->evidence);
		cJSON_AddStringToObject(x, "cause", r->cause);
	}
	return root;
}

/* ---------------------------------------------------------------------------------------- */

static int out_width(FILE *f)
{
	struct winsize ws;
	if (isatty(fileno(f)) && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	const char *c = getenv("COLUMNS");
	long v = c ? strtol(c, NULL, 10) : 0;
	return v > 0 && v < 100000 ? (int)v : 200;
}

int prof_diff_print(const struct db_diff *d, const struct prof_diff_opts *o, FILE *f)
{
	const char *fmt = o->format ? o->format : "table";
	int csv = !strcmp(fmt, "csv"), json = !strcmp(fmt, "json");
	if (!csv && !json && strcmp(fmt, "table"))
		return ascent_error(ASCENT_EUSAGE, "unknown --format '%s' (expected table, csv or json)", fmt);
	if (o->by && strcmp(o->by, "op") && strcmp(o->by, "kernel") && strcmp(o->by, "comm") && strcmp(o->by, "step"))
		return ascent_error(ASCENT_EUSAGE, "unknown --by '%s' (expected op, kernel, comm or step)", o->by);
	if (json) {
		cJSON *root = json_doc(d, o);
		char *txt = root ? cJSON_Print(root) : NULL;
		cJSON_Delete(root);
		if (!txt)
			return ascent_error(ASCENT_ENOMEM, "out of memory printing JSON");
		fputs(txt, f);
		fputc('\n', f);
		free(txt);
		return 0;
	}
	int width = csv || o->wide ? 0 : out_width(f);
	if (csv) {   /* one table per CSV document: --by's, else every name */
		if (o->by && !strcmp(o->by, "step"))
			print_overview(d, o, f, 1);
		else if (o->by && !strcmp(o->by, "comm"))
			print_comms(d, f, 1, 0);
		else
			print_rows(d, o, f, 1, 0);
		return 0;
	}
	print_overview(d, o, f, 0);
	if (o->by && !strcmp(o->by, "step"))
		return 0;
	print_rows(d, o, f, 0, width);
	if (want(o, "comm") && d->ncomms)
		print_comms(d, f, 0, width);
	if (want(o, "kernel") || want(o, "op"))   /* the operators' device work belongs to both */
		print_opdev(d, o, f, 0, width);
	return 0;
}

int prof_diff_advice_print(const struct db_diff *d, const struct db_diff_advice *a, const struct prof_diff_opts *o,
			   FILE *f)
{
	const char *fmt = o->format ? o->format : "table";
	int csv = !strcmp(fmt, "csv"), json = !strcmp(fmt, "json");
	if (!csv && !json && strcmp(fmt, "table"))
		return ascent_error(ASCENT_EUSAGE, "unknown --format '%s' (expected table, csv or json)", fmt);
	if (json) {
		cJSON *root = json_advice(d, a, o);
		char *txt = root ? cJSON_Print(root) : NULL;
		cJSON_Delete(root);
		if (!txt)
			return ascent_error(ASCENT_ENOMEM, "out of memory printing JSON");
		fputs(txt, f);
		fputc('\n', f);
		free(txt);
		return 0;
	}
	if (csv) {
		print_advice_table(a, f, 1, 0);
		return 0;
	}
	print_overview(d, o, f, 0);
	char msg[1024];
	advice_message(a, msg, sizeof msg);
	fprintf(f, "\n%s\n", msg);
	if (a->verdict != DB_DIFF_NO_STEPS) {
		fprintf(f, "Per step and rank, by phase:");
		for (int p = 0; p < DB_PHASE_COUNT; p++) {
			char b[40];
			double v = a->phase_change_ns[p];
			b[0] = v < 0 ? '-' : '+';
			units_ns(b + 1, sizeof b - 1, v < 0 ? -v : v);
			fprintf(f, "%s %s %s", p ? "," : "", db_diff_phase_name(p), b);
		}
		fputc('\n', f);
	}
	if (a->n)
		print_advice_table(a, f, 0, o->wide ? 0 : out_width(f));
	return 0;
}
