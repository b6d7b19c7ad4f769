/* db/diff.c — two profiles compared (`ascent diff A B`, docs/diff.md): each side's overview (steps
 * and their split, tokens/s, peak memory), every (kind, name) of either side with its count and
 * time on both, collectives per size, and CPU operators with the device work they launched. Both
 * sides are read with the queries every tool shares (db_op_stats, db_step_stats, db_comm_stats)
 * and matched by name as text. Computes only; profiler/diff.c renders. */
#include "db/internal.h"

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

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
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
	qsort(nums, (size_t)n, sizeof *nums, cmp_i64);
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

static int side_tokens(struct db *db, struct db_filter f, struct db_diff_side *s)
{
	struct tokens_scan t = { .name_id = 0, .rank = -1 };
	const struct db_bind b = { .text = "tokens_per_s" };
	int rc = db_query(db, "SELECT id FROM string WHERE value = ?1", &b, 1, name_id_row, &t.name_id, NULL);
	if (rc || !t.name_id)
		return rc;
	if ((rc = db_each_counter(db, f, tokens_row, &t)) != 0)
		return rc;
	if (t.n) {
		s->has_tokens = 1;
		s->tokens_per_s = t.sum / (double)t.n;
	}
	return 0;
}

struct mem_scan {
	struct db_diff_side *s;
	int rank;
	int64_t in_use[DB_MEM_COUNT];
};

static int mem_row(void *ud, int rank, int64_t ts, int64_t bytes, int cat, int64_t in_use)
{
	(void)ts;
	(void)bytes;
	struct mem_scan *m = ud;
	if (rank != m->rank) {
		memset(m->in_use, 0, sizeof m->in_use);
		m->rank = rank;
	}
	if (cat < 0 || cat >= DB_MEM_COUNT)
		cat = DB_MEM_OTHER;
	m->in_use[cat] = in_use;
	int64_t tot = 0;
	for (int i = 0; i < DB_MEM_COUNT; i++)
		tot = i64_add_sat(tot, m->in_use[i]);
	if (!m->s->has_mem || tot > m->s->peak_mem_bytes)
		m->s->peak_mem_bytes = tot;
	m->s->has_mem = 1;
	return 0;
}

static int side_overview(struct db *db, struct db_filter f, struct db_diff_side *s)
{
	int rc = count_ranks(db, f, &s->nranks);
	if (!rc)
		rc = side_steps(db, f, s);
	if (!rc)
		rc = side_tokens(db, f, s);
	struct mem_scan m = { .s = s, .rank = -1 };
	if (!rc)
		rc = db_each_mem(db, f, mem_row, &m);
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

static int diff_comms(struct db *a, struct db_filter fa, struct db *b, struct db_filter fb, int exact, struct db_diff *d)
{
	struct db_comm_stat *cs[2] = { NULL, NULL };
	int ncs[2] = { 0, 0 };
	struct named *v = NULL;
	int rc = db_comm_stats(a, fa, &cs[0], &ncs[0]);
	if (!rc)
		rc = db_comm_stats(b, fb, &cs[1], &ncs[1]);
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

struct launch {
	int rank, tid;
	int64_t ns, dur;
};

struct opframe {
	int64_t name_id, end;
};

struct thread_stack {
	int tid;
	struct opframe *v;
	int n, cap;
};

struct opacc {
	int64_t count, cpu_ns, launched, device_ns, self_ns;
};

struct opdev_scan {
	struct db_diff_side *side;
	struct launch *l;
	int nl, capl, next;           /* launches sorted by rank, ns; next: the first not yet given */
	int rank;                     /* the rank being scanned, INT32_MIN before the first event */
	struct thread_stack *th;
	int nth, capth;
	struct opacc *acc;            /* by name id */
	int64_t nnames;
};

static int launch_row(void *ud, sqlite3_stmt *s)
{
	struct opdev_scan *x = ud;
	if (ARRAY_GROW(x->l, x->nl, x->capl, 1024, "reading launch links"))
		return ASCENT_ENOMEM;
	x->l[x->nl++] = (struct launch){ sqlite3_column_int(s, 0), sqlite3_column_int(s, 1), sqlite3_column_int64(s, 2),
					 sqlite3_column_int64(s, 3) };
	return 0;
}

static struct thread_stack *stack_of(struct opdev_scan *x, int tid, int make)
{
	for (int i = 0; i < x->nth; i++)
		if (x->th[i].tid == tid)
			return &x->th[i];
	if (!make || ARRAY_GROW(x->th, x->nth, x->capth, 8, "following operators"))
		return NULL;
	x->th[x->nth] = (struct thread_stack){ .tid = tid };
	return &x->th[x->nth++];
}

static void pop_ended(struct thread_stack *t, int64_t ns)
{
	while (t->n && t->v[t->n - 1].end <= ns)
		t->n--;
}

/* One launch: its device time to every operator name open on the launching thread (once per name)
 * and to the innermost. */
static void give_launch(struct opdev_scan *x, const struct launch *l)
{
	x->side->linked++;
	x->side->linked_ns = i64_add_sat(x->side->linked_ns, l->dur);
	struct thread_stack *t = stack_of(x, l->tid, 0);
	if (t)
		pop_ended(t, l->ns);
	if (!t || !t->n) {
		x->side->unattributed++;
		x->side->unattributed_ns = i64_add_sat(x->side->unattributed_ns, l->dur);
		return;
	}
	for (int i = 0; i < t->n; i++) {
		int64_t id = t->v[i].name_id;
		int seen = 0;
		for (int j = 0; j < i && !seen; j++)
			seen = t->v[j].name_id == id;
		if (seen || id < 0 || id >= x->nnames)
			continue;
		x->acc[id].launched++;
		x->acc[id].device_ns = i64_add_sat(x->acc[id].device_ns, l->dur);
	}
	int64_t top = t->v[t->n - 1].name_id;
	if (top >= 0 && top < x->nnames)
		x->acc[top].self_ns = i64_add_sat(x->acc[top].self_ns, l->dur);
}

/* Give the launches of the current rank before `ns` (all of them: INT64_MAX). */
static void give_until(struct opdev_scan *x, int64_t ns)
{
	while (x->next < x->nl && x->l[x->next].rank < x->rank)
		x->next++;   /* a rank without events under the filter */
	while (x->next < x->nl && x->l[x->next].rank == x->rank && x->l[x->next].ns < ns)
		give_launch(x, &x->l[x->next++]);
}

static int opdev_event(void *ud, const struct db_event *e)
{
	struct opdev_scan *x = ud;
	if (e->rank != x->rank) {
		if (x->rank != INT32_MIN)
			give_until(x, INT64_MAX);
		x->rank = e->rank;
		for (int i = 0; i < x->nth; i++)
			x->th[i].n = 0;
	}
	give_until(x, e->start_ns);
	if (e->kind != DB_KIND_OP)
		return 0;
	struct thread_stack *t = stack_of(x, e->tid, 1);
	if (!t)
		return ASCENT_ENOMEM;
	pop_ended(t, e->start_ns);
	if (ARRAY_GROW(t->v, t->n, t->cap, 16, "following operators"))
		return ASCENT_ENOMEM;
	t->v[t->n++] = (struct opframe){ e->name_id, i64_add_sat(e->start_ns, e->dur_ns) };
	if (e->name_id >= 0 && e->name_id < x->nnames) {
		x->acc[e->name_id].count++;
		x->acc[e->name_id].cpu_ns = i64_add_sat(x->acc[e->name_id].cpu_ns, e->dur_ns);
	}
	return 0;
}

/* Per name id of db: the operators' counts and time and the device work they launched. */
static int opdev_side(struct db *db, struct db_filter f, struct db_diff_side *side, struct opacc **acc, int64_t nnames)
{
	struct opdev_scan x = { .side = side, .rank = INT32_MIN, .nnames = nnames };
	*acc = NULL;
	if (!(x.acc = calloc((size_t)nnames + 1, sizeof *x.acc)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int rc = 0;
	/* each link's device event (the kernel, copy, memset or device collective starting where it
	 * ends). Where the launching call is itself the end of an operator → call link (Ascend: the
	 * CANN call on its own thread), the launch counts at the operator's start on its thread. A step
	 * filter gives one window per rank in rank order, so launches come by rank, then time. */
	if (db_has_table(db, "flow"))
		rc = db_scan_windows(db, f,
				     "SELECT fl.rank, coalesce(c.src_tid, fl.src_tid), coalesce(c.src_ns, fl.src_ns) AS at,"
				     " max(e.dur_ns) FROM flow fl JOIN event e"
				     " ON e.rank = fl.rank AND e.start_ns = fl.dst_ns AND e.tid = fl.dst_tid"
				     " LEFT JOIN flow c ON c.rank = fl.rank AND c.dst_tid = fl.src_tid AND c.dst_ns = fl.src_ns"
				     " AND c.kind = " DB_SQL_FLOW_CALL
				     " WHERE fl.kind = " DB_SQL_FLOW_LAUNCH " AND (?1 < 0 OR fl.rank = ?1) AND fl.src_ns >= ?2"
				     " AND fl.src_ns < ?3 AND e.kind IN (" DB_SQL_KIND_COMM ", " DB_SQL_KIND_KERNEL
				     ", " DB_SQL_KIND_MEMCPY ", " DB_SQL_KIND_MEMSET ") GROUP BY fl.rowid"
				     " ORDER BY fl.rank, at",
				     launch_row, &x);
	if (!rc)
		rc = db_each_event_nested(db, f, opdev_event, &x);
	if (!rc && x.rank != INT32_MIN)
		give_until(&x, INT64_MAX);
	for (int i = x.next; i < x.nl; i++) {   /* launches of ranks with no event under the filter */
		side->linked++;
		side->linked_ns = i64_add_sat(side->linked_ns, x.l[i].dur);
		side->unattributed++;
		side->unattributed_ns = i64_add_sat(side->unattributed_ns, x.l[i].dur);
	}
	for (int i = 0; i < x.nth; i++)
		free(x.th[i].v);
	free(x.th);
	free(x.l);
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
	struct opacc *acc[2] = { NULL, NULL };
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
				launched += ((const struct opacc *)v[j].src)->launched;
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
				const struct opacc *a = v[k].src;
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
