/* db/diff.c — two profiles compared (`ascent diff A B`, docs/diff.md): each side's overview (steps
 * and their split, tokens/s, peak memory), every (kind, name) of either side with its count and
 * time on both, collectives per size, and CPU operators with the device work they launched. Both
 * sides are read with the queries every tool shares (db_op_stats, db_step_stats, db_comm_stats)
 * and matched by name as text. Computes only; profiler/diff.c renders. */
#include "db/internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int db_diff_category(int64_t a_count, int64_t b_count)
{
	if (a_count == 0 && b_count > 0)
		return DB_DIFF_ADDED;
	if (a_count > 0 && b_count == 0)
		return DB_DIFF_REMOVED;
	return b_count > a_count ? DB_DIFF_INCREASED : b_count < a_count ? DB_DIFF_DECREASED : DB_DIFF_UNCHANGED;
}

const char *db_diff_cat_name(int cat)
{
	static const char *const N[] = { "unchanged", "added", "removed", "increased", "decreased" };
	return cat >= 0 && cat < (int)(sizeof N / sizeof N[0]) ? N[cat] : "?";
}

static int64_t abs64(int64_t v)
{
	return v < 0 ? (v == INT64_MIN ? INT64_MAX : -v) : v;
}

/* ---------------------------------------------------------------------------------------- */
/* the overview of one side */

static int count_ranks(struct db *db, struct db_filter f, int *n)
{
	struct db_rank_info *r = NULL;
	int nr = 0;
	int rc = db_ranks(db, &r, &nr);
	if (rc)
		return rc;
	*n = 0;
	for (int i = 0; i < nr; i++)
		*n += f.rank < 0 || r[i].rank == f.rank;
	db_ranks_free(r, nr);
	return 0;
}

static int side_steps(struct db *db, struct db_filter f, struct db_diff_side *s)
{
	struct db_step_stat *st = NULL;
	int n = 0;
	int rc = db_step_stats(db, f, &st, &n);
	if (rc)
		return rc;
	int64_t *nums = malloc(((size_t)n + 1) * sizeof *nums);
	if (!nums) {
		free(st);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++) {
		s->step_total_ns = i64_add_sat(s->step_total_ns, st[i].total_ns);
		s->computing_ns = i64_add_sat(s->computing_ns, st[i].computing_ns);
		s->comm_not_overlapped_ns = i64_add_sat(s->comm_not_overlapped_ns, st[i].comm_not_overlapped_ns);
		s->free_ns = i64_add_sat(s->free_ns, st[i].free_ns);
		s->bubble_ns = i64_add_sat(s->bubble_ns, st[i].bubble_ns);
		nums[i] = st[i].step;
	}
	s->step_rows = n;
	qsort(nums, (size_t)n, sizeof *nums, stats_cmp_i64);
	for (int i = 0; i < n; i++)
		s->steps += i == 0 || nums[i] != nums[i - 1];
	free(nums);
	free(st);
	return 0;
}

struct tokens_scan {
	int64_t name_id;
	int rank;             /* the rank whose samples are taken, −1 none yet */
	double sum;
	int64_t n;
};

static int tokens_row(void *ud, int rank, int64_t name_id, int64_t ts, double v)
{
	(void)ts;
	struct tokens_scan *t = ud;
	if (name_id != t->name_id || v != v)
		return 0;
	if (t->rank < 0)
		t->rank = rank;
	if (rank == t->rank) {
		t->sum += v;
		t->n++;
	}
	return 0;
}

static int name_id_row(void *ud, const struct db_row *r)
{
	*(int64_t *)ud = db_row_i64(r, 0);
	return 0;
}

struct tokens_rank {
	double sum;
	int64_t n;
};

static int tokens_value(void *ud, const struct db_row *r)
{
	struct tokens_rank *t = ud;
	if (db_row_is_null(r, 0))
		return 0;   /* NaN is stored as NULL */
	t->sum += db_row_f64(r, 0);
	t->n++;
	return 0;
}

static int side_tokens(struct db *db, struct db_filter f, struct db_diff_side *s)
{
	struct tokens_scan t = { .name_id = 0, .rank = -1 };
	const struct db_bind b = { .text = "tokens_per_s" };
	int rc = db_query(db, "SELECT id FROM string WHERE value = ?1", &b, 1, name_id_row, &t.name_id, NULL);
	if (rc || !t.name_id)
		return rc;
	if (f.step_lo < 0) {
		/* the whole run: each rank's samples through the counter table's key, lowest rank first */
		struct db_rank_info *ri = NULL;
		int nr = 0;
		if ((rc = db_ranks(db, &ri, &nr)) != 0)
			return rc;
		for (int i = 0; i < nr && !rc && !t.n; i++) {
			if (f.rank >= 0 && ri[i].rank != f.rank)
				continue;
			struct tokens_rank tr = { 0, 0 };
			const struct db_bind kb[2] = { { .i = ri[i].rank }, { .i = t.name_id } };
			rc = db_query(db, "SELECT value FROM counter WHERE rank = ?1 AND name_id = ?2 ORDER BY ts_ns", kb, 2,
				      tokens_value, &tr, NULL);
			t.sum = tr.sum;
			t.n = tr.n;
		}
		db_ranks_free(ri, nr);
	} else {
		rc = db_each_counter(db, f, tokens_row, &t);
	}
	if (rc)
		return rc;
	if (t.n) {
		s->has_tokens = 1;
		s->tokens_per_s = t.sum / (double)t.n;
	}
	return 0;
}

/* The peak of one device's bytes in use (all categories), the fullest device of any rank. */
struct mem_scan {
	struct db_diff_side *s;
	int rank, device;
	int64_t in_use[DB_MEM_COUNT];
};

static int mem_row(void *ud, const struct db_mem_row *r)
{
	struct mem_scan *m = ud;
	if (r->rank != m->rank || r->device != m->device) {
		memset(m->in_use, 0, sizeof m->in_use);
		m->rank = r->rank;
		m->device = r->device;
	}
	int cat = r->category < 0 || r->category >= DB_MEM_COUNT ? DB_MEM_OTHER : r->category;
	m->in_use[cat] = r->in_use;
	int64_t tot = 0;
	for (int i = 0; i < DB_MEM_COUNT; i++)
		tot = i64_add_sat(tot, m->in_use[i]);
	if (!m->s->has_mem || tot > m->s->peak_mem_bytes)
		m->s->peak_mem_bytes = tot;
	m->s->has_mem = 1;
	return 0;
}

static int mem_peak_row(void *ud, const struct db_row *r)
{
	struct db_diff_side *s = ud;
	if (!db_row_is_null(r, 0)) {
		s->has_mem = 1;
		s->peak_mem_bytes = db_row_i64(r, 0);
	}
	return 0;
}

static int side_overview(struct db *db, struct db_filter f, struct db_diff_side *s)
{
	int rc = count_ranks(db, f, &s->nranks);
	if (!rc)
		rc = side_steps(db, f, s);
	if (!rc)
		rc = side_tokens(db, f, s);
	int cached = 0;
	if (!rc && f.step_lo < 0)
		rc = db_view_current(db, &cached);
	if (!rc && cached) {   /* the viewer's summary: the most in use per rank, device and time bin */
		const struct db_bind b = { .i = f.rank };
		rc = db_query(db, "SELECT max(max_bytes) FROM view_mem WHERE ?1 < 0 OR rank = ?1", &b, 1, mem_peak_row, s,
			      NULL);
	} else if (!rc) {
		struct mem_scan m = { .s = s, .rank = -1, .device = INT32_MIN };
		rc = db_each_mem(db, f, mem_row, &m);
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* named rows: both sides' (kind, name) merged */

struct named {
	char *name;          /* the name rows are matched by (match_name), owned */
	int kind, side;
	int64_t bucket;
	const void *src;
};

/* The name rows are matched by: the name with each hexadecimal address ("0x" and 6 or more hex
 * digits, as in Python's "<built-in method item of Tensor object at 0xfffcd9bd7270>") written
 * "0x...", since an object's address differs from run to run; exact: the name as it is. Malloc'd. */
static char *match_name(const char *s, int exact)
{
	char *out = strdup(s), *o = out;
	if (!out || exact)
		return out;
	for (const char *p = s; *p;) {
		size_t h = 0;
		if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
			while (strchr("0123456789abcdefABCDEF", p[2 + h]) && p[2 + h])
				h++;
		if (h >= 6) {
			memcpy(o, "0x...", 5);   /* 5 bytes for at least 8 */
			o += 5;
			p += 2 + h;
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

static void named_free(struct named *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].name);
	free(v);
}

static int cmp_named(const void *a, const void *b)
{
	const struct named *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	int c = strcmp(x->name, y->name);
	if (c)
		return c;
	if (x->bucket != y->bucket)
		return x->bucket < y->bucket ? -1 : 1;
	return x->side - y->side;
}

static int same_key(const struct named *x, const struct named *y)
{
	return x->kind == y->kind && x->bucket == y->bucket && !strcmp(x->name, y->name);
}

static int cmp_row(const void *a, const void *b)
{
	const struct db_diff_row *x = a, *y = b;
	int64_t dx = abs64(x->total_ns[1] - x->total_ns[0]), dy = abs64(y->total_ns[1] - y->total_ns[0]);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return strcmp(x->name, y->name);
}

static int diff_rows(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int exact, struct db_diff *d)
{
	struct db_op_stat *ops[2] = { NULL, NULL };
	int nops[2] = { 0, 0 };
	struct named *v = NULL;
	int rc = db_op_stats(a, fa, 0, &ops[0], &nops[0]);
	if (!rc)
		rc = db_op_stats(b, fb, 0, &ops[1], &nops[1]);
	size_t nv = (size_t)nops[0] + (size_t)nops[1];
	if (!rc && !(v = calloc(nv + 1, sizeof *v)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc && !(d->rows = calloc(nv + 1, sizeof *d->rows)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc) {
		size_t k = 0;
		for (int s = 0; s < 2; s++)
			for (int i = 0; i < nops[s]; i++)
				v[k++] = (struct named){ match_name(ops[s][i].name, exact), ops[s][i].kind, s, 0, &ops[s][i] };
		for (size_t i = 0; i < nv && !rc; i++)
			if (!v[i].name)
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc) {
		qsort(v, nv, sizeof *v, cmp_named);
		for (size_t i = 0; i < nv && !rc; i++) {
			struct db_diff_row *r = &d->rows[d->nrows];
			if (i == 0 || !same_key(&v[i], &v[i - 1])) {
				d->nrows++;
				r->kind = v[i].kind;
				if (!(r->name = strdup(v[i].name)))
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			} else {
				r = &d->rows[d->nrows - 1];
			}
			const struct db_op_stat *o = v[i].src;
			r->count[v[i].side] += o->count;
			r->total_ns[v[i].side] = i64_add_sat(r->total_ns[v[i].side], o->total_ns);
		}
		for (int i = 0; i < d->nrows; i++)
			d->rows[i].category = db_diff_category(d->rows[i].count[0], d->rows[i].count[1]);
		qsort(d->rows, (size_t)d->nrows, sizeof *d->rows, cmp_row);
	}
	named_free(v, nv);
	db_op_stats_free(ops[0], nops[0]);
	db_op_stats_free(ops[1], nops[1]);
	return rc;
}

/* One side's collectives per (kind, name, size bucket): without a step filter from the viewer's
 * summary (view_comm, the same sums, matching and bus bandwidth as the comm view) when the file
 * has it, else db_comm_stats over the events. */
static int side_comms(struct db *db, struct db_filter f, struct db_comm_stat **out, int *n)
{
	int cached = 0, rc = f.step_lo < 0 ? db_view_current(db, &cached) : 0;
	if (rc || !cached)
		return rc ? rc : db_comm_stats(db, f, out, n);
	struct db_view_comm *vc = NULL;
	int nv = 0;
	*out = NULL;
	*n = 0;
	if ((rc = db_view_comms(db, f, 0, &vc, &nv)) != 0)
		return rc;
	if (!(*out = calloc((size_t)nv + 1, sizeof **out)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < nv && !rc; i++) {
		const struct db_view_comm *c = &vc[i];
		struct db_comm_stat *o = &(*out)[(*n)++];
		o->name = vc[i].name;
		vc[i].name = NULL;   /* moved */
		o->kind = c->kind;
		o->bucket = c->bucket;
		o->count = c->count;
		o->total_ns = c->total_ns;
		o->bytes = c->bytes;
		o->matched = c->matched;
		o->wait_ns = c->wait_ns;
		o->transit_ns = c->transit_ns;
		o->queue_ns = c->queue_ns;
		o->group_size = c->group_size;
		o->avg_ns = c->count ? (double)c->total_ns / (double)c->count : 0;
		o->algbw_gbs = db_comm_algbw(c->bytes, c->count, c->total_ns, c->matched, c->transit_ns);
		o->busbw_gbs = o->algbw_gbs * (c->kind == DB_KIND_COMM ? db_busbw_factor(o->name, c->group_size) : 1.0);
	}
	db_view_comms_free(vc, nv);
	if (rc) {
		db_comm_stats_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return rc;
}

static int diff_comms(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int exact, struct db_diff *d)
{
	struct db_comm_stat *cs[2] = { NULL, NULL };
	int ncs[2] = { 0, 0 };
	struct named *v = NULL;
	int rc = side_comms(a, fa, &cs[0], &ncs[0]);
	if (!rc)
		rc = side_comms(b, fb, &cs[1], &ncs[1]);
	size_t nv = (size_t)ncs[0] + (size_t)ncs[1];
	if (!rc && !(v = calloc(nv + 1, sizeof *v)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc && !(d->comms = calloc(nv + 1, sizeof *d->comms)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc) {
		size_t k = 0;
		for (int s = 0; s < 2; s++)
			for (int i = 0; i < ncs[s]; i++)
				v[k++] = (struct named){ match_name(cs[s][i].name, exact), cs[s][i].kind, s, cs[s][i].bucket,
							 &cs[s][i] };
		for (size_t i = 0; i < nv && !rc; i++)
			if (!v[i].name)
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	if (!rc) {
		qsort(v, nv, sizeof *v, cmp_named);
		for (size_t i = 0; i < nv && !rc; i++) {
			struct db_diff_comm *r = &d->comms[d->ncomms];
			if (i == 0 || !same_key(&v[i], &v[i - 1])) {
				d->ncomms++;
				r->kind = v[i].kind;
				r->bucket = v[i].bucket;
				if (!(r->name = strdup(v[i].name)))
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			} else {
				r = &d->comms[d->ncomms - 1];
			}
			const struct db_comm_stat *c = v[i].src;
			int s = v[i].side;
			r->count[s] += c->count;
			r->bytes[s] = i64_add_sat(r->bytes[s], c->bytes);
			r->total_ns[s] = i64_add_sat(r->total_ns[s], c->total_ns);
			r->busbw_gbs[s] = c->busbw_gbs;
		}
	}
	named_free(v, nv);
	db_comm_stats_free(cs[0], ncs[0]);
	db_comm_stats_free(cs[1], ncs[1]);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* operators with the device work they launched (one side) */

struct opdev_sum {
	struct db_diff_side *side;
	struct db_opdev_name *acc;    /* by name id, the filter's ranks added up */
};

static int opdev_rank(void *ud, int rank, const struct db_opdev_name *acc, const int64_t *touched, int64_t ntouched,
		      const struct db_opdev_rank *tot)
{
	(void)rank;
	struct opdev_sum *x = ud;
	for (int64_t i = 0; i < ntouched; i++) {
		const struct db_opdev_name *a = &acc[touched[i]];
		struct db_opdev_name *o = &x->acc[touched[i]];
		o->count += a->count;
		o->cpu_ns = i64_add_sat(o->cpu_ns, a->cpu_ns);
		o->launched += a->launched;
		o->device_ns = i64_add_sat(o->device_ns, a->device_ns);
		o->self_ns = i64_add_sat(o->self_ns, a->self_ns);
	}
	struct db_diff_side *s = x->side;
	s->linked += tot->linked;
	s->linked_ns = i64_add_sat(s->linked_ns, tot->linked_ns);
	s->unattributed += tot->unattributed;
	s->unattributed_ns = i64_add_sat(s->unattributed_ns, tot->unattributed_ns);
	return 0;
}

static int opdev_event(void *ud, const struct db_event *e)
{
	return db_opdev_event(ud, e);
}

/* From the viewer's summary (view_opdev, view_launch: the same accumulator, run when the file was
 * imported or merged), per rank: added up over the filter's ranks. */
static int opdev_row(void *ud, const struct db_row *r)
{
	struct opdev_sum *x = ud;
	int64_t id = db_row_i64(r, 0);
	if (id < 0 || !x->acc)
		return 0;
	struct db_opdev_name *o = &x->acc[id];
	o->count = db_row_i64(r, 1);
	o->cpu_ns = db_row_i64(r, 2);
	o->launched = db_row_i64(r, 3);
	o->device_ns = db_row_i64(r, 4);
	o->self_ns = db_row_i64(r, 5);
	return 0;
}

static int launch_tot_row(void *ud, const struct db_row *r)
{
	struct db_diff_side *s = ud;
	s->linked = db_row_i64(r, 0);
	s->linked_ns = db_row_i64(r, 1);
	s->unattributed = db_row_i64(r, 2);
	s->unattributed_ns = db_row_i64(r, 3);
	return 0;
}

/* Per name id of db: the operators' counts and time and the device work they launched. Without a
 * step filter, from the viewer's summary when the file has it; else read from the events. */
static int opdev_side(struct db *db, struct db_filter f, struct db_diff_side *side, struct db_opdev_name **acc,
		      int64_t nnames)
{
	struct opdev_sum x = { .side = side };
	*acc = NULL;
	if (!(x.acc = calloc((size_t)nnames + 1, sizeof *x.acc)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int cached = 0, rc = f.step_lo < 0 ? db_view_current(db, &cached) : 0;
	if (!rc && cached) {
		const struct db_bind b[2] = { { .i = f.rank }, { .i = nnames } };
		rc = db_query(db, "SELECT name_id, sum(count), sum(cpu_ns), sum(launched), sum(device_ns), sum(self_ns)"
			      " FROM view_opdev WHERE (?1 < 0 OR rank = ?1) AND name_id < ?2 GROUP BY name_id",
			      b, 2, opdev_row, &x, NULL);
		if (!rc)
			rc = db_query(db, "SELECT coalesce(sum(linked), 0), coalesce(sum(linked_ns), 0),"
				      " coalesce(sum(unattributed), 0), coalesce(sum(unattributed_ns), 0)"
				      " FROM view_launch WHERE ?1 < 0 OR rank = ?1", b, 1, launch_tot_row, side, NULL);
	} else if (!rc) {
		struct db_opdev *od = NULL;
		rc = db_opdev_new(db, f, nnames, opdev_rank, &x, &od);
		if (!rc)
			rc = db_each_event_nested(db, f, opdev_event, od);
		if (!rc)
			rc = db_opdev_finish(od);
		db_opdev_free(od);
	}
	if (rc) {
		free(x.acc);
		return rc;
	}
	*acc = x.acc;
	return 0;
}

static int cmp_opdev(const void *a, const void *b)
{
	const struct db_diff_opdev *x = a, *y = b;
	int64_t dx = abs64(x->device_ns[1] - x->device_ns[0]), dy = abs64(y->device_ns[1] - y->device_ns[0]);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int diff_opdev(struct db *dbs[2], const struct db_filter fs[2], int exact, struct db_diff *d)
{
	char **names[2] = { NULL, NULL };
	int64_t nn[2] = { 0, 0 };
	struct db_opdev_name *acc[2] = { NULL, NULL };
	struct named *v = NULL;
	size_t nv = 0;
	int rc = 0, cap = 0;
	for (int s = 0; s < 2 && !rc; s++) {
		rc = db_strings(dbs[s], &names[s], &nn[s]);
		if (!rc)
			rc = opdev_side(dbs[s], fs[s], &d->side[s], &acc[s], nn[s]);
	}
	if (!rc && !(v = calloc((size_t)nn[0] + (size_t)nn[1] + 1, sizeof *v)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int s = 0; s < 2 && !rc; s++)
		for (int64_t i = 1; i < nn[s] && !rc; i++)
			if (acc[s][i].count && !(v[nv++] = (struct named){ match_name(names[s][i], exact), DB_KIND_OP, s, 0,
										   &acc[s][i] }).name)
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc) {
		qsort(v, nv, sizeof *v, cmp_named);
		/* names with device work on either side */
		for (size_t i = 0, j; i < nv && !rc; i = j) {
			int64_t launched = 0;
			for (j = i; j < nv && same_key(&v[j], &v[i]); j++)
				launched += ((const struct db_opdev_name *)v[j].src)->launched;
			if (!launched)
				continue;
			if (ARRAY_GROW(d->opdev, d->nopdev, cap, 64, "comparing operators")) {
				rc = ASCENT_ENOMEM;
				break;
			}
			struct db_diff_opdev *o = &d->opdev[d->nopdev++];
			memset(o, 0, sizeof *o);
			if (!(o->name = strdup(v[i].name))) {
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			for (size_t k = i; k < j; k++) {
				const struct db_opdev_name *a = v[k].src;
				int s = v[k].side;
				o->count[s] = a->count;
				o->cpu_ns[s] = a->cpu_ns;
				o->launched[s] = a->launched;
				o->device_ns[s] = a->device_ns;
				o->device_self_ns[s] = a->self_ns;
			}
			o->category = db_diff_category(o->count[0], o->count[1]);
		}
		if (rc == 0 && d->nopdev > 1)
			qsort(d->opdev, (size_t)d->nopdev, sizeof *d->opdev, cmp_opdev);
	}
	named_free(v, nv);
	for (int s = 0; s < 2; s++) {
		free(acc[s]);
		db_strings_free(names[s], nn[s]);
	}
	return rc;
}

/* ---------------------------------------------------------------------------------------- */

int db_diff(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int exact_names, struct db_diff *out)
{
	memset(out, 0, sizeof *out);
	struct db *dbs[2] = { a, b };
	const struct db_filter fs[2] = { fa, fb };
	int rc = 0;
	for (int s = 0; s < 2 && !rc; s++)
		rc = side_overview(dbs[s], fs[s], &out->side[s]);
	if (!rc)
		rc = diff_rows(a, fa, b, fb, exact_names, out);
	if (!rc)
		rc = diff_comms(a, fa, b, fb, exact_names, out);
	if (!rc)
		rc = diff_opdev(dbs, fs, exact_names, out);
	if (rc)
		db_diff_free(out);
	return rc;
}

void db_diff_free(struct db_diff *d)
{
	if (!d)
		return;
	for (int i = 0; i < d->nrows; i++)
		free(d->rows[i].name);
	for (int i = 0; i < d->ncomms; i++)
		free(d->comms[i].name);
	for (int i = 0; i < d->nopdev; i++)
		free(d->opdev[i].name);
	free(d->rows);
	free(d->comms);
	free(d->opdev);
	memset(d, 0, sizeof *d);
}

/* ---------------------------------------------------------------------------------------- */
/* one row's distribution on both sides (db_diff_dist) */

struct durs {
	int64_t *v;
	int n, cap;
};

static int dur_row(void *ud, sqlite3_stmt *s)
{
	struct durs *d = ud;
	if (ARRAY_GROW(d->v, d->n, d->cap, 1024, "reading durations"))
		return ASCENT_ENOMEM;
	d->v[d->n++] = sqlite3_column_int64(s, 0);
	return 0;
}

/* The durations of the instances of (kind, every name id matching `name`) under the filter. */
static int side_durations(struct db *db, struct db_filter f, int kind, const char *name, int exact, struct durs *d)
{
	char **names = NULL;
	int64_t nn = 0;
	int rc = db_strings(db, &names, &nn);
	for (int64_t id = 1; id < nn && !rc; id++) {
		char *m = match_name(names[id], exact);
		if (!m) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		int same = !strcmp(m, name);
		free(m);
		if (!same)
			continue;
		char sql[256];
		snprintf(sql, sizeof sql,
			 "SELECT dur_ns FROM event WHERE name_id = %lld AND kind = %d AND (?1 < 0 OR rank = ?1)"
			 " AND start_ns >= ?2 AND start_ns < ?3",
			 (long long)id, kind);
		rc = db_scan_windows(db, f, sql, dur_row, d);
	}
	db_strings_free(names, nn);
	return rc;
}

static int bin_of(const struct db_diff_dist *o, int64_t d)
{
	int k = 0;
	while (k + 1 < o->nbins && d >= o->edge_ns[k + 1])
		k++;
	return k;
}

int db_diff_dist(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int kind, const char *name,
		 int exact_names, struct db_diff_dist *out)
{
	memset(out, 0, sizeof *out);
	struct durs d[2] = { { 0 }, { 0 } };
	struct db *dbs[2] = { a, b };
	const struct db_filter fs[2] = { fa, fb };
	int rc = 0;
	for (int s = 0; s < 2 && !rc; s++)
		rc = side_durations(dbs[s], fs[s], kind, name, exact_names, &d[s]);
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	for (int s = 0; s < 2 && !rc; s++) {
		out->n[s] = d[s].n;
		if (!d[s].n)
			continue;
		double sum = 0;
		out->min_ns[s] = INT64_MAX;
		out->max_ns[s] = INT64_MIN;
		for (int i = 0; i < d[s].n; i++) {
			int64_t x = d[s].v[i];
			sum += (double)x;
			if (x < out->min_ns[s])
				out->min_ns[s] = x;
			if (x > out->max_ns[s])
				out->max_ns[s] = x;
		}
		out->mean_ns[s] = sum / d[s].n;
		if (out->min_ns[s] < lo)
			lo = out->min_ns[s];
		if (out->max_ns[s] > hi)
			hi = out->max_ns[s];
	}
	if (!rc && hi >= lo) {
		/* log-spaced edges from the shortest to the longest (1 ns at least), integers, increasing */
		double l = lo > 1 ? (double)lo : 1, h = hi > l ? (double)hi : l + 1;
		out->nbins = DB_DIFF_DIST_BINS;
		out->edge_ns[0] = lo;
		for (int k = 1; k < DB_DIFF_DIST_BINS; k++) {
			int64_t e = (int64_t)(l * pow(h / l, (double)k / DB_DIFF_DIST_BINS));
			out->edge_ns[k] = e > out->edge_ns[k - 1] ? e : out->edge_ns[k - 1] + 1;
		}
		out->edge_ns[DB_DIFF_DIST_BINS] = hi > out->edge_ns[DB_DIFF_DIST_BINS - 1] ? hi
											  : out->edge_ns[DB_DIFF_DIST_BINS - 1] + 1;
		for (int s = 0; s < 2; s++)
			for (int i = 0; i < d[s].n; i++)
				out->hist[s][bin_of(out, d[s].v[i])]++;
	}
	for (int s = 0; s < 2 && !rc; s++)   /* last: selection reorders the values */
		if (d[s].n)
			db_quantiles(d[s].v, d[s].n, &out->med_ns[s], &out->p95_ns[s]);
	free(d[0].v);
	free(d[1].v);
	if (rc)
		memset(out, 0, sizeof *out);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* the regressions that matter (db_diff_advise) */

const char *db_diff_verdict_name(int v)
{
	static const char *const N[] = { "slower", "faster", "unchanged", "no steps" };
	return v >= 0 && v < (int)(sizeof N / sizeof N[0]) ? N[v] : "?";
}

const char *db_diff_phase_name(int p)
{
	static const char *const N[] = { "computing", "communication not overlapped", "free", "bubble" };
	return p >= 0 && p < DB_PHASE_COUNT ? N[p] : "?";
}

/* What a row's kind is for the advice: its group (for its cause) and the step phase its time
 * falls in (db_step_stats' split: operators and device work compute, communication blocks, what is
 * neither is free). Kinds without a group are containers (phases, ranges, micro-batches) or steps:
 * not rows of the advice. */
enum adv_group { G_NONE = 0, G_KERNEL, G_COPY, G_COMM, G_RECV, G_WAIT, G_OP_DEVICE, G_OP_HOST, G_OP_CPU, G_DATA, G_IO,
		 G_FREE };
static const struct {
	int group, phase;
} KIND_ADVICE[DB_KIND_COUNT] = {
	[DB_KIND_OP] = { G_OP_CPU, DB_PHASE_COMPUTING },      /* refined by its device work */
	[DB_KIND_COMM] = { G_COMM, DB_PHASE_COMM },
	[DB_KIND_P2P] = { G_COMM, DB_PHASE_COMM },            /* a receive: G_RECV, bubble */
	[DB_KIND_DATA] = { G_DATA, DB_PHASE_FREE },
	[DB_KIND_IO] = { G_IO, DB_PHASE_FREE },
	[DB_KIND_CHECKPOINT] = { G_IO, DB_PHASE_FREE },
	[DB_KIND_WAIT] = { G_WAIT, DB_PHASE_COMM },
	[DB_KIND_KERNEL] = { G_KERNEL, DB_PHASE_COMPUTING },
	[DB_KIND_MEMCPY] = { G_COPY, DB_PHASE_COMPUTING },
	[DB_KIND_MEMSET] = { G_KERNEL, DB_PHASE_COMPUTING },
};

/* How a row grew: new (A has none), more calls, or as many (or fewer) calls taking longer. */
enum adv_change { CH_ANY = -1, CH_ADDED = 0, CH_MORE, CH_SLOWER };

/* What usually causes each kind of growth: the first entry matching (group, change) is the
 * row's cause. */
static const struct {
	int group, change;
	const char *cause;
} CAUSES[] = {
	{ G_KERNEL, CH_ADDED, "new kernels: a different kernel choice (another library or algorithm, a dtype or shape "
			      "that selects other kernels) or a new operator; look for the kernels removed alongside" },
	{ G_KERNEL, CH_MORE, "more launches: more layers, micro-batches or work per step, a lost fusion or graph "
			     "capture, the same work in smaller pieces" },
	{ G_KERNEL, CH_SLOWER, "the same launches take longer: a different kernel choice, shape or dtype (larger "
			       "inputs, fp32 instead of bf16), or a slower device (clocks, another model, contention)" },
	{ G_COPY, CH_ANY, "more or longer copies: data placement (tensors on the host that were on the device, "
			  "pageable instead of pinned memory, .to()/.cpu()/.item() in the loop, larger transfers)" },
	{ G_COMM, CH_ADDED, "new collectives: a parallelism change (data, tensor or pipeline parallelism added, "
			    "sharded optimizer or parameters)" },
	{ G_COMM, CH_MORE, "more collectives: more ranks or process groups, smaller gradient buckets, a parallelism "
			   "change" },
	{ G_COMM, CH_SLOWER, "slower collectives: more bytes, more ranks, a slower link (ranks on other hosts, the "
			     "network), or waiting inside the collective for a slower rank" },
	{ G_RECV, CH_ANY, "longer pipeline receives (bubble): stage imbalance or fewer micro-batches per step" },
	{ G_WAIT, CH_ANY, "waiting for communication: less overlap with computation, or a slower rank the others "
			  "wait for" },
	{ G_OP_DEVICE, CH_ANY, "its device work grew: see its kernels (a different kernel choice, shape or dtype)" },
	{ G_OP_HOST, CH_ANY, "host overhead: the operator's device work did not grow (Python or dispatcher overhead, "
			     "CPU contention or fewer threads, synchronisation, debug modes)" },
	{ G_OP_CPU, CH_ADDED, "a new operator: a change in the code or the model" },
	{ G_OP_CPU, CH_ANY, "host compute: larger shapes (batch, sequence, model), another dtype, fewer threads or "
			    "another BLAS" },
	{ G_DATA, CH_ANY, "data loading: a slower loader, fewer workers, storage or preprocessing" },
	{ G_IO, CH_ANY, "file I/O: larger checkpoints or outputs, a slower file system" },
	{ G_FREE, CH_ANY, "idle time between work: the host does not keep up (launch overhead, data loading, "
			  "synchronisation, Python between operators)" },
};

static const char *cause_of(int group, int change)
{
	for (size_t i = 0; i < sizeof CAUSES / sizeof CAUSES[0]; i++)
		if (CAUSES[i].group == group && (CAUSES[i].change == CH_ANY || CAUSES[i].change == change))
			return CAUSES[i].cause;
	return "";
}

static double per(int64_t v, double div)
{
	return div > 0 ? (double)v / div : 0;
}

/* A receive, as the step decomposition tells one (its time is the bubble). */
static int is_recv(const char *name)
{
	return strcasestr(name, "recv") != NULL;
}

/* Append printf-style text to buf (truncated to n). */
static void cat_text(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void cat_text(char *buf, size_t n, const char *fmt, ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, n - l, fmt, ap);
	va_end(ap);
}

static const struct db_diff_opdev *opdev_named(const struct db_diff *d, const char *name)
{
	for (int i = 0; i < d->nopdev; i++)
		if (!strcmp(d->opdev[i].name, name))
			return &d->opdev[i];
	return NULL;
}

/* The steps' time in a phase, per side (ns summed over the step rows). */
static int64_t phase_ns(const struct db_diff_side *s, int phase)
{
	switch (phase) {
	case DB_PHASE_COMPUTING: return s->computing_ns;
	case DB_PHASE_COMM: return s->comm_not_overlapped_ns;
	case DB_PHASE_FREE: return s->free_ns;
	default: return s->bubble_ns;
	}
}

static void evidence_ns(char *buf, size_t n, const char *what, double a, double b)
{
	char x[32], y[32];
	units_ns(x, sizeof x, a);
	units_ns(y, sizeof y, b);
	cat_text(buf, n, "%s%s %s -> %s", *buf ? "; " : "", what, x, y);
}

/* A row's evidence: its counts and means, per step; what its kind adds (an operator's device work,
 * a collective's bytes and bus bandwidth); the phase's share of the step on both sides. */
static void row_evidence(const struct db_diff *d, const struct db_diff_regression *r, const double div[2],
			 const struct db_diff_opdev *od, int links, char *buf, size_t n)
{
	const char *unit = d->side[0].step_rows > 0 && d->side[1].step_rows > 0 ? "step" : "rank";
	buf[0] = 0;
	if (r->kind != DB_DIFF_FREE_KIND) {
		cat_text(buf, n, "count %lld -> %lld (%.2f -> %.2f per %s)", (long long)r->count[0],
			     (long long)r->count[1], per(r->count[0], div[0]), per(r->count[1], div[1]), unit);
		evidence_ns(buf, n, "mean", r->count[0] ? (double)r->total_ns[0] / (double)r->count[0] : 0,
			    r->count[1] ? (double)r->total_ns[1] / (double)r->count[1] : 0);
	}
	evidence_ns(buf, n, unit[0] == 's' ? "per step" : "per rank", r->per_step_ns[0], r->per_step_ns[1]);
	if (r->kind == DB_KIND_OP) {
		if (!links)
			cat_text(buf, n, "; its device work unknown (no launch links inside operators on a side)");
		else
			evidence_ns(buf, n, "device work it launched per step", od ? per(od->device_ns[0], div[0]) : 0,
				    od ? per(od->device_ns[1], div[1]) : 0);
	}
	if (r->kind == DB_KIND_COMM || r->kind == DB_KIND_P2P) {
		int64_t bytes[2] = { 0, 0 }, most[2] = { -1, -1 };
		double bw[2] = { 0, 0 };
		for (int i = 0; i < d->ncomms; i++) {
			const struct db_diff_comm *c = &d->comms[i];
			if (c->kind != r->kind || strcmp(c->name, r->name))
				continue;
			for (int s = 0; s < 2; s++) {
				bytes[s] = i64_add_sat(bytes[s], c->bytes[s]);
				if (c->count[s] && c->total_ns[s] > most[s])
					most[s] = c->total_ns[s], bw[s] = c->busbw_gbs[s];
			}
		}
		char x[32], y[32];
		units_bytes(x, sizeof x, per(bytes[0], div[0]));
		units_bytes(y, sizeof y, per(bytes[1], div[1]));
		cat_text(buf, n, "; bytes per %s %s -> %s; bus bandwidth (busiest size) %.2f -> %.2f GB/s", unit, x, y,
			     bw[0], bw[1]);
	}
	if (d->side[0].step_total_ns > 0 && d->side[1].step_total_ns > 0)
		cat_text(buf, n, "; %s %.1f%% -> %.1f%% of the step", db_diff_phase_name(r->phase),
			     100.0 * (double)phase_ns(&d->side[0], r->phase) / (double)d->side[0].step_total_ns,
			     100.0 * (double)phase_ns(&d->side[1], r->phase) / (double)d->side[1].step_total_ns);
}

static int cmp_regression(const void *p, const void *q)
{
	const struct db_diff_regression *x = p, *y = q;
	double dx = fabs(x->delta_per_step_ns), dy = fabs(y->delta_per_step_ns);
	if (dx != dy)
		return dx > dy ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	return strcmp(x->name, y->name);
}

int db_diff_advise(const struct db_diff *d, double min_change, int top, struct db_diff_advice *out)
{
	memset(out, 0, sizeof *out);
	if (!(min_change >= 0 && min_change <= 10))
		return ascent_error(ASCENT_EUSAGE, "--min-change must be a fraction of A's mean step from 0 to 10 (0.01: "
						   "1%%), not %g", min_change);
	out->min_change = min_change;
	const struct db_diff_side *sd = d->side;
	int steps = sd[0].step_rows > 0 && sd[1].step_rows > 0;
	double div[2];
	for (int s = 0; s < 2; s++) {
		div[s] = steps ? (double)sd[s].step_rows : (double)(sd[s].nranks > 0 ? sd[s].nranks : 1);
		out->step_mean_ns[s] = sd[s].step_rows > 0 ? (double)sd[s].step_total_ns / (double)sd[s].step_rows : 0;
	}
	out->step_change_ns = out->step_mean_ns[1] - out->step_mean_ns[0];
	if (!steps)
		out->verdict = DB_DIFF_NO_STEPS;
	else if (out->step_change_ns > 0 && out->step_change_ns > min_change * out->step_mean_ns[0])
		out->verdict = DB_DIFF_SLOWER;
	else if (out->step_change_ns < 0 && -out->step_change_ns > min_change * out->step_mean_ns[0])
		out->verdict = DB_DIFF_FASTER;
	else
		out->verdict = DB_DIFF_SAME;
	for (int p = 0; steps && p < DB_PHASE_COUNT; p++)
		out->phase_change_ns[p] = per(phase_ns(&sd[1], p), div[1]) - per(phase_ns(&sd[0], p), div[0]);
	int links = sd[0].linked > sd[0].unattributed && sd[1].linked > sd[1].unattributed;

	if (!(out->r = calloc((size_t)d->nrows + 2, sizeof *out->r)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i <= d->nrows; i++) {
		struct db_diff_regression *r = &out->r[out->n];
		memset(r, 0, sizeof *r);
		int group;
		if (i < d->nrows) {
			const struct db_diff_row *row = &d->rows[i];
			if (row->kind < 0 || row->kind >= DB_KIND_COUNT || !KIND_ADVICE[row->kind].group)
				continue;
			*r = (struct db_diff_regression){ .name = row->name, .kind = row->kind, .category = row->category,
							  .count = { row->count[0], row->count[1] },
							  .total_ns = { row->total_ns[0], row->total_ns[1] },
							  .phase = KIND_ADVICE[row->kind].phase };
			group = KIND_ADVICE[row->kind].group;
			if (row->kind == DB_KIND_P2P && is_recv(row->name))
				group = G_RECV, r->phase = DB_PHASE_BUBBLE;
		} else {
			if (!steps)
				continue;   /* free time is the steps' */
			*r = (struct db_diff_regression){ .name = "free (idle) time in steps", .kind = DB_DIFF_FREE_KIND,
							  .total_ns = { sd[0].free_ns, sd[1].free_ns },
							  .phase = DB_PHASE_FREE };
			group = G_FREE;
		}
		for (int s = 0; s < 2; s++)
			r->per_step_ns[s] = per(r->total_ns[s], div[s]);
		r->delta_per_step_ns = r->per_step_ns[1] - r->per_step_ns[0];
		if (r->delta_per_step_ns == 0 || (out->verdict == DB_DIFF_SLOWER && r->delta_per_step_ns < 0))
			continue;
		const struct db_diff_opdev *od = r->kind == DB_KIND_OP ? opdev_named(d, r->name) : NULL;
		if (r->kind == DB_KIND_OP && links) {   /* did its device work grow with it? */
			double ddev = od ? per(od->device_ns[1], div[1]) - per(od->device_ns[0], div[0]) : 0;
			group = ddev >= 0.5 * r->delta_per_step_ns ? G_OP_DEVICE : G_OP_HOST;
		}
		int change = r->count[0] == 0 ? CH_ADDED : per(r->count[1], div[1]) > per(r->count[0], div[0]) ? CH_MORE
															 : CH_SLOWER;
		r->cause = r->delta_per_step_ns > 0 ? cause_of(group, change) : "";
		r->share = out->verdict == DB_DIFF_SLOWER ? r->delta_per_step_ns / out->step_change_ns : NAN;
		row_evidence(d, r, div, od, links, r->evidence, sizeof r->evidence);
		out->n++;
	}
	qsort(out->r, (size_t)out->n, sizeof *out->r, cmp_regression);
	if (top > 0 && out->n > top)
		out->n = top;
	return 0;
}

void db_diff_advice_free(struct db_diff_advice *a)
{
	if (!a)
		return;
	free(a->r);
	memset(a, 0, sizeof *a);
}
