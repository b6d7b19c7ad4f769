/* db/cluster.c — the analyses of a whole job (db.h, "cluster analyses"): the step split's spread over
 * ranks and pipeline stages, collectives' synchronisation, wait and transit per rank with
 * msprof-analyze's ratios, and the point-to-point communication matrix by rank and by host pair.
 * Definitions: docs/cluster.md, "Reading a whole job". Every per-call figure comes from the matched
 * calls of db_each_call (query.c), read once, sorted once; per-rank tables are indexed by a binary
 * search of the rank, so the work is linear in the calls (times log ranks), never ranks × ranks. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------------------------------- */
/* the step split's spread */

static const char *const SPLIT_NAMES[DB_SPLIT_PARTS] = { "total", "computing", "comm_not_overlapped", "overlapped",
							 "free", "bubble" };

const char *db_split_part_name(int part)
{
	return part >= 0 && part < DB_SPLIT_PARTS ? SPLIT_NAMES[part] : "?";
}

static int64_t split_part(const struct db_step_stat *s, int part)
{
	switch (part) {
	case DB_SPLIT_TOTAL: return s->total_ns;
	case DB_SPLIT_COMPUTING: return s->computing_ns;
	case DB_SPLIT_COMM_NOT_OVL: return s->comm_not_overlapped_ns;
	case DB_SPLIT_OVERLAPPED: return s->overlapped_ns;
	case DB_SPLIT_FREE: return s->free_ns;
	default: return s->bubble_ns;
	}
}

/* The index of `rank` in ranks (ascending), −1 when absent. */
static int rank_at(const struct db_rank_info *ranks, int nranks, int rank)
{
	int lo = 0, hi = nranks;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (ranks[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < nranks && ranks[lo].rank == rank ? lo : -1;
}

/* The spread of each part over rows[0..n) (pointers into the step rows); tmp holds n doubles. */
static void spread_of(const struct db_step_stat *const *rows, int n, double *tmp, struct db_step_spread *out)
{
	out->nranks = n;
	for (int p = 0; p < DB_SPLIT_PARTS; p++) {
		struct db_spread *s = &out->part[p];
		for (int i = 0; i < n; i++) {
			int64_t v = split_part(rows[i], p);
			tmp[i] = (double)v;
			if (!i || v < s->min_ns || (v == s->min_ns && rows[i]->rank < s->min_rank))
				s->min_ns = v, s->min_rank = rows[i]->rank;
			if (!i || v > s->max_ns || (v == s->max_ns && rows[i]->rank < s->max_rank))
				s->max_ns = v, s->max_rank = rows[i]->rank;
		}
		s->med_ns = (int64_t)(stats_median(tmp, n) + 0.5);
	}
}

struct staged {
	int stage;
	const struct db_step_stat *row;
};

static int cmp_staged(const void *a, const void *b)
{
	const struct staged *x = a, *y = b;
	if (x->stage != y->stage)
		return x->stage < y->stage ? -1 : 1;
	return (x->row->rank > y->row->rank) - (x->row->rank < y->row->rank);
}

int db_step_spreads(const struct db_step_stat *steps, int nsteps, const struct db_rank_info *ranks, int nranks,
		    struct db_step_spread **out, int *n)
{
	*out = NULL;
	*n = 0;
	if (nsteps <= 0)
		return 0;
	const struct db_step_stat **rows = malloc((size_t)nsteps * sizeof *rows);
	struct staged *st = malloc((size_t)nsteps * sizeof *st);
	double *tmp = malloc((size_t)nsteps * sizeof *tmp);
	struct db_step_spread *v = NULL;
	int nv = 0, cap = 0, rc = 0;
	if (!rows || !st || !tmp)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory computing the step spread");
	for (int i = 0; i < nsteps && !rc;) {
		int j = i;
		while (j < nsteps && steps[j].step == steps[i].step)
			j++;
		int k = j - i, nstages = 0;
		for (int r = 0; r < k; r++) {
			rows[r] = &steps[i + r];
			int at = rank_at(ranks, nranks, steps[i + r].rank);
			st[r] = (struct staged){ at >= 0 ? ranks[at].pp_rank : -1, &steps[i + r] };
		}
		if (k > 1)
			qsort(st, (size_t)k, sizeof *st, cmp_staged);
		for (int r = 0; r < k; r++)
			nstages += st[r].stage >= 0 && (!r || st[r].stage != st[r - 1].stage);
		if ((rc = ARRAY_GROW(v, nv, cap, 16, "computing the step spread")))
			break;
		memset(&v[nv], 0, sizeof v[nv]);
		v[nv].step = steps[i].step;
		v[nv].stage = -1;
		spread_of(rows, k, tmp, &v[nv++]);
		for (int a = 0; a < k && nstages >= 2 && !rc;) {
			int b = a;
			while (b < k && st[b].stage == st[a].stage)
				b++;
			if (st[a].stage >= 0) {
				for (int r = a; r < b; r++)
					rows[r - a] = st[r].row;
				if ((rc = ARRAY_GROW(v, nv, cap, 16, "computing the step spread")))
					break;
				memset(&v[nv], 0, sizeof v[nv]);
				v[nv].step = steps[i].step;
				v[nv].stage = st[a].stage;
				spread_of(rows, b - a, tmp, &v[nv++]);
			}
			a = b;
		}
		i = j;
	}
	free(rows);
	free(st);
	free(tmp);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	*n = nv;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the calls of one match, gathered from db_each_call's callbacks (they come one after another) */

struct callbuf {
	struct db_match *m;
	int n, cap;
};

static int same_call(const struct db_match *a, const struct db_match *b)
{
	return a->comm_id == b->comm_id && a->seq == b->seq && a->p2p_src == b->p2p_src && a->p2p_dst == b->p2p_dst &&
	       a->nranks == b->nranks;
}

/* Communicator sizes: (comm_id, max size) ascending. */
struct commsizes {
	int64_t *id;
	int *size;
	int n;
};

static int commsizes_load(struct db *db, struct commsizes *c)
{
	memset(c, 0, sizeof *c);
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, "SELECT comm_id, max(size) FROM comm WHERE comm_id >= 0 GROUP BY comm_id ORDER BY comm_id", &s);
	if (rc)
		return rc;
	int capi = 0, caps = 0, src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(c->id, c->n, capi, 16, "reading communicator sizes")) ||
		    (rc = ARRAY_GROW(c->size, c->n, caps, 16, "reading communicator sizes")))
			break;
		c->id[c->n] = sqlite3_column_int64(s, 0);
		c->size[c->n++] = sqlite3_column_int(s, 1);
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	return rc;
}

static int commsize_of(const struct commsizes *c, int64_t id)
{
	int lo = 0, hi = c->n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (c->id[mid] < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->n && c->id[lo] == id ? c->size[lo] : 0;
}

/* ---------------------------------------------------------------------------------------- */
/* collectives: synchronisation, wait and transit */

struct collacc {
	struct db_coll *out;
	struct db_rank_info *ranks;
	int nranks;
	struct commsizes sizes;
	int *kind_of;                    /* name_id → index into kinds, −1 none */
	struct db_coll_kind *kinds;
	int nkinds, capk;
	struct db_coll_rank *rows;       /* nkinds × nranks */
	int top;
	struct callbuf buf;
};

static double ratio(int64_t part, int64_t rest)
{
	return part + rest > 0 ? (double)part / (double)(part + rest) : 0;
}

static int coll_kind(struct collacc *a, int64_t name_id)
{
	if (name_id < 0 || name_id >= a->out->nnames)
		return -1;
	if (a->kind_of[name_id] >= 0)
		return a->kind_of[name_id];
	int k = a->nkinds;
	if (ARRAY_GROW(a->kinds, a->nkinds, a->capk, 8, "analysing collectives"))
		return -2;
	struct db_coll_rank *rows = realloc(a->rows, (size_t)(k + 1) * (size_t)a->nranks * sizeof *rows);
	if (!rows) {
		ascent_error(ASCENT_ENOMEM, "out of memory analysing collectives");
		return -2;
	}
	a->rows = rows;
	memset(&rows[(size_t)k * (size_t)a->nranks], 0, (size_t)a->nranks * sizeof *rows);
	for (int r = 0; r < a->nranks; r++) {
		rows[(size_t)k * (size_t)a->nranks + (size_t)r].name = a->out->names[name_id];
		rows[(size_t)k * (size_t)a->nranks + (size_t)r].rank = a->ranks[r].rank;
	}
	memset(&a->kinds[k], 0, sizeof a->kinds[k]);
	a->kinds[k].name = a->out->names[name_id];
	a->kinds[k].worst_rank = -1;
	a->nkinds++;
	a->kind_of[name_id] = k;
	return k;
}

static void worst_insert(struct collacc *a, const struct db_coll_call *c)
{
	struct db_coll *o = a->out;
	if (a->top <= 0 || (o->ncalls == a->top && c->sync_sum_ns <= o->calls[o->ncalls - 1].sync_sum_ns))
		return;
	int at = o->ncalls < a->top ? o->ncalls++ : o->ncalls - 1;
	while (at > 0 && o->calls[at - 1].sync_sum_ns < c->sync_sum_ns) {
		o->calls[at] = o->calls[at - 1];
		at--;
	}
	o->calls[at] = *c;
}

static int coll_flush(struct collacc *a)
{
	struct callbuf *b = &a->buf;
	if (!b->n)
		return 0;
	int k = coll_kind(a, b->m[0].name_id);
	int n = b->n;
	b->n = 0;
	if (k == -2)
		return ASCENT_ENOMEM;
	if (k < 0)
		return 0;
	struct db_coll_kind *kd = &a->kinds[k];
	kd->events += n;
	if (n < 2) {
		kd->unmatched += n;
		return 0;
	}
	int64_t last = b->m[0].start_ns, first = b->m[0].start_ns, transit = INT64_MAX;
	int last_rank = b->m[0].rank, first_rank = b->m[0].rank;
	for (int i = 1; i < n; i++) {
		const struct db_match *m = &b->m[i];
		if (m->start_ns > last || (m->start_ns == last && m->rank < last_rank))
			last = m->start_ns, last_rank = m->rank;
		if (m->start_ns < first || (m->start_ns == first && m->rank < first_rank))
			first = m->start_ns, first_rank = m->rank;
	}
	for (int i = 0; i < n; i++) {
		int64_t t = b->m[i].end_ns - (last > b->m[i].start_ns ? last : b->m[i].start_ns);
		t = t > 0 ? t : 0;
		transit = t < transit ? t : transit;
	}
	int gsize = commsize_of(&a->sizes, b->m[0].comm_id);
	int partial = gsize > n;
	struct db_coll_call c = { .name = kd->name, .comm_id = b->m[0].comm_id, .seq = b->m[0].seq, .members = n,
				  .group_size = gsize, .first_rank = first_rank, .last_rank = last_rank, .start_ns = first,
				  .transit_ns = transit };
	kd->calls++;
	kd->partial += partial;
	for (int i = 0; i < n; i++) {
		const struct db_match *m = &b->m[i];
		int64_t elapse = m->end_ns - m->start_ns;
		int64_t sync = (last < m->end_ns ? last : m->end_ns) - m->start_ns;
		sync = sync > 0 ? sync : 0;
		int64_t wait = elapse - transit > 0 ? elapse - transit : 0;
		c.bytes = i64_add_sat(c.bytes, m->bytes);
		c.sync_sum_ns = i64_add_sat(c.sync_sum_ns, sync);
		c.sync_max_ns = sync > c.sync_max_ns ? sync : c.sync_max_ns;
		c.elapse_max_ns = elapse > c.elapse_max_ns ? elapse : c.elapse_max_ns;
		kd->bytes = i64_add_sat(kd->bytes, m->bytes);
		kd->elapse_ns = i64_add_sat(kd->elapse_ns, elapse);
		kd->sync_ns = i64_add_sat(kd->sync_ns, sync);
		kd->wait_ns = i64_add_sat(kd->wait_ns, wait);
		kd->transit_ns = i64_add_sat(kd->transit_ns, transit);
		int r = rank_at(a->ranks, a->nranks, m->rank);
		if (r < 0)   /* a rank missing from the rank table: in the kind's sums only */
			continue;
		struct db_coll_rank *row = &a->rows[(size_t)k * (size_t)a->nranks + (size_t)r];
		row->calls++;
		row->partial += partial;
		row->last += m->rank == last_rank;
		row->elapse_ns = i64_add_sat(row->elapse_ns, elapse);
		row->sync_ns = i64_add_sat(row->sync_ns, sync);
		row->wait_ns = i64_add_sat(row->wait_ns, wait);
		row->transit_ns = i64_add_sat(row->transit_ns, transit);
		row->late_ns = i64_add_sat(row->late_ns, m->start_ns - first);
	}
	worst_insert(a, &c);
	return 0;
}

static int coll_cb(void *ud, const struct db_match *m)
{
	struct collacc *a = ud;
	struct callbuf *b = &a->buf;
	int rc = 0;
	if (b->n && !same_call(&b->m[0], m))
		rc = coll_flush(a);
	if (!rc && !(rc = ARRAY_GROW(b->m, b->n, b->cap, 8, "analysing collectives")))
		b->m[b->n++] = *m;
	return rc;
}

static int cmp_kind_wait(const void *x, const void *y)
{
	const struct db_coll_kind *a = x, *b = y;
	if (a->wait_ns != b->wait_ns)
		return a->wait_ns > b->wait_ns ? -1 : 1;
	return strcmp(a->name, b->name);
}

void db_coll_free(struct db_coll *c)
{
	if (!c)
		return;
	db_strings_free(c->names, c->nnames);
	free(c->kinds);
	free(c->ranks);
	free(c->calls);
	memset(c, 0, sizeof *c);
}

int db_coll_analysis(struct db *db, int top, struct db_coll *out)
{
	memset(out, 0, sizeof *out);
	struct collacc a = { .out = out, .top = top };
	int rc = db_strings(db, &out->names, &out->nnames);
	if (!rc)
		rc = db_ranks(db, &a.ranks, &a.nranks);
	if (!rc)
		rc = commsizes_load(db, &a.sizes);
	if (!rc && (!(a.kind_of = malloc((size_t)(out->nnames ? out->nnames : 1) * sizeof *a.kind_of)) ||
		    (top > 0 && !(out->calls = calloc((size_t)top, sizeof *out->calls)))))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory analysing collectives");
	for (int64_t i = 0; !rc && i < out->nnames; i++)
		a.kind_of[i] = -1;
	if (!rc && a.nranks == 0)
		goto done;
	if (!rc)
		rc = db_each_call(db, DB_FILTER_ALL, DB_KIND_COMM, coll_cb, &a);
	if (!rc)
		rc = coll_flush(&a);
	if (rc)
		goto done;
	/* ratios, the worst rank of each kind, then kinds by summed wait and their rank rows */
	size_t nk = a.nkinds > 0 ? (size_t)a.nkinds : 1;
	int *order = malloc(nk * sizeof *order);
	if (!order) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory analysing collectives");
		goto done;
	}
	size_t nrows = 0;
	for (int k = 0; k < a.nkinds; k++) {
		struct db_coll_kind *kd = &a.kinds[k];
		kd->sync_ratio = ratio(kd->sync_ns, kd->transit_ns);
		kd->wait_ratio = ratio(kd->wait_ns, kd->transit_ns);
		for (int r = 0; r < a.nranks; r++) {
			struct db_coll_rank *row = &a.rows[(size_t)k * (size_t)a.nranks + (size_t)r];
			if (!row->calls)
				continue;
			nrows++;
			row->sync_ratio = ratio(row->sync_ns, row->transit_ns);
			row->wait_ratio = ratio(row->wait_ns, row->transit_ns);
			if (kd->worst_rank < 0 || row->wait_ratio > kd->worst_wait_ratio) {
				kd->worst_rank = row->rank;
				kd->worst_wait_ratio = row->wait_ratio;
				kd->worst_sync_ratio = row->sync_ratio;
			}
		}
	}
	/* sort kinds, remembering where each came from (rows are indexed by the original kind) */
	struct db_coll_kind *sorted = malloc(nk * sizeof *sorted);
	if (!sorted || (nrows && !(out->ranks = malloc(nrows * sizeof *out->ranks)))) {
		free(order);
		free(sorted);
		rc = ascent_error(ASCENT_ENOMEM, "out of memory analysing collectives");
		goto done;
	}
	for (int i = 0; i < a.nkinds; i++)
		sorted[i] = a.kinds[i];
	if (a.nkinds > 1)
		qsort(sorted, (size_t)a.nkinds, sizeof *sorted, cmp_kind_wait);
	for (int i = 0; i < a.nkinds; i++)
		for (int k = 0; k < a.nkinds; k++)
			if (a.kinds[k].name == sorted[i].name)
				order[i] = k;
	for (int i = 0; i < a.nkinds; i++) {
		int k = order[i];
		for (int r = 0; r < a.nranks; r++) {
			struct db_coll_rank *row = &a.rows[(size_t)k * (size_t)a.nranks + (size_t)r];
			if (row->calls)
				out->ranks[out->nranks++] = *row;
		}
	}
	free(order);
	out->kinds = sorted;
	out->nkinds = a.nkinds;
done:
	free(a.kinds);
	free(a.rows);
	free(a.kind_of);
	free(a.buf.m);
	free(a.sizes.id);
	free(a.sizes.size);
	db_ranks_free(a.ranks, a.nranks);
	if (rc)
		db_coll_free(out);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* the communication matrix */

const char *db_matrix_via_name(int via)
{
	return via == DB_MATRIX_COLL ? "collective" : via == DB_MATRIX_RING ? "ring" : "p2p";
}

/* What a member of a ring collective of n members sends to the next member, from its event's bytes B
 * (comm/'s count: an allreduce's buffer; an allgather's whole result, n blocks): an allreduce's ring
 * is a reduce-scatter then an allgather, n − 1 steps each, a block of B / n per step, so
 * 2 (n − 1) B / n; an allgather's ring is n − 1 steps of one block B / n, so (n − 1) B / n. Rounded
 * down (an allreduce's blocks differ by one element when n does not divide the count). */
static const struct ring_op {
	const char *name;
	int phases;          /* the ring passes: (n − 1) blocks of B / n each */
} RING_OPS[] = { { "allreduce", 2 }, { "allgather", 1 } };

static int64_t ring_bytes(const char *name, int64_t bytes, int n)
{
	for (size_t i = 0; i < sizeof RING_OPS / sizeof RING_OPS[0]; i++)
		if (name && !strcmp(name, RING_OPS[i].name)) {
			if (n < 2 || bytes <= 0)
				return 0;
			int64_t k = (int64_t)RING_OPS[i].phases * (n - 1);   /* floor(B k / n) without B k */
			int64_t q = bytes / n;
			return q > INT64_MAX / k ? INT64_MAX : i64_add_sat(q * k, bytes % n * k / n);
		}
	return -1;
}

/* The collective calls whose events say they ran a ring ({"algo": "ring"}: comm/ writes it when
 * Open MPI's rules lock the ring, docs/cluster.md) as (comm_id, seq, rank) ascending, and every
 * communicator's members both ways: (comm_id, rank) → rank_in_comm and (comm_id, rank_in_comm) →
 * rank. A ring's order is the members' order in their communicator, each sending to the next. */
struct ringkey {
	int64_t comm_id, seq;            /* seq: the call's; in the member indexes the key's second part */
	int rank;                        /* the call's member; in the member indexes the value */
};
struct ringcalls {
	struct ringkey *call;
	int ncall;
	struct ringkey *by_rank, *by_index;
	int nby_rank, nby_index;
};

static int cmp_ringkey2(const struct ringkey *a, const struct ringkey *b)
{
	if (a->comm_id != b->comm_id)
		return a->comm_id < b->comm_id ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

static int cmp_ringkey(const void *x, const void *y)
{
	const struct ringkey *a = x, *b = y;
	int c = cmp_ringkey2(a, b);
	return c ? c : (a->rank > b->rank) - (a->rank < b->rank);
}

static int cmp_ringkey_first2(const void *x, const void *y)
{
	return cmp_ringkey2(x, y);
}

/* Rows of `sql` (three integers) into *v, sorted. */
static int ringkeys_load(struct db *db, const char *sql, struct ringkey **v, int *n)
{
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s), cap = 0, src;
	if (rc)
		return rc;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(*v, *n, cap, 64, "reading ring collectives")))
			break;
		(*v)[(*n)++] = (struct ringkey){ sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1), sqlite3_column_int(s, 2) };
	}
	if (!rc)
		rc = db_step_check(db, src, s, NULL);
	sqlite3_finalize(s);
	if (!rc && *n > 1)
		qsort(*v, (size_t)*n, sizeof **v, cmp_ringkey);
	return rc;
}

/* The profiler's own files only (an imported trace says nothing of its algorithm: meta.import_source),
 * and only files with the arg table's `ord` (v4; the profiler wrote no algorithm before). */
static int ringcalls_load(struct db *db, struct ringcalls *r)
{
	memset(r, 0, sizeof *r);
	if (db_schema_version(db) < 4)
		return 0;
	int rc = ringkeys_load(db,
			       "SELECT e.comm_id, e.seq, e.rank FROM arg g JOIN event e ON e.rank = g.rank AND e.start_ns = "
			       "g.start_ns AND e.tid = g.tid AND e.kind = g.kind AND e.name_id = g.name_id AND e.dur_ns = "
			       "g.dur_ns AND e.ord = g.ord WHERE NOT EXISTS (SELECT 1 FROM meta WHERE key = 'import_source') "
			       "AND g.kind = " DB_SQL_KIND_COMM " AND e.comm_id IS NOT NULL AND e.seq IS NOT NULL AND "
			       "json_valid(g.args) AND json_extract(g.args, '$.algo') = 'ring'",
			       &r->call, &r->ncall);
	if (!rc && r->ncall)
		rc = ringkeys_load(db, "SELECT comm_id, rank, rank_in_comm FROM comm WHERE comm_id >= 0 AND rank_in_comm >= 0",
				   &r->by_rank, &r->nby_rank);
	if (!rc && r->ncall)
		rc = ringkeys_load(db, "SELECT comm_id, rank_in_comm, rank FROM comm WHERE comm_id >= 0 AND rank_in_comm >= 0",
				   &r->by_index, &r->nby_index);
	return rc;
}

static void ringcalls_free(struct ringcalls *r)
{
	free(r->call);
	free(r->by_rank);
	free(r->by_index);
	memset(r, 0, sizeof *r);
}

static int ringcall_has(const struct ringcalls *r, int64_t comm_id, int64_t seq, int rank)
{
	struct ringkey k = { comm_id, seq, rank };
	return r->ncall && bsearch(&k, r->call, (size_t)r->ncall, sizeof k, cmp_ringkey);
}

/* The world rank after `rank` in communicator comm_id's order of n members (rank_in_comm + 1, mod
 * n); −1 when the comm table lacks either. */
static int ring_next(const struct ringcalls *r, int64_t comm_id, int rank, int n)
{
	struct ringkey k = { comm_id, rank, 0 };
	const struct ringkey *me = bsearch(&k, r->by_rank, (size_t)r->nby_rank, sizeof k, cmp_ringkey_first2);
	if (!me)
		return -1;
	k.seq = (me->rank + 1) % n;
	const struct ringkey *next = bsearch(&k, r->by_index, (size_t)r->nby_index, sizeof k, cmp_ringkey_first2);
	return next ? next->rank : -1;
}

struct matacc {
	struct callbuf buf;
	struct commsizes sizes;          /* a collective is on a link when its communicator has two members */
	struct db_matrix_cell *v;        /* one per transfer (or one-sided call), reduced at the end */
	int n, cap;
	char **names;                    /* the string table: a call's side from its name */
	int64_t nnames;
	struct ringcalls ring;           /* the calls that ran a ring, and the communicators' members */
	int *next, nnext;                /* a ring call's members' next members */
};

static int side_of(const struct matacc *a, const struct db_match *m)
{
	return m->name_id > 0 && m->name_id < a->nnames ? db_p2p_side(a->names[m->name_id]) : DB_P2P_SEND;
}

static int mat_add(struct matacc *a, int via, int src, int dst, int64_t bytes, int64_t time_ns, int one_sided)
{
	int rc = ARRAY_GROW(a->v, a->n, a->cap, 256, "building the communication matrix");
	if (rc)
		return rc;
	struct db_matrix_cell *c = &a->v[a->n++];
	memset(c, 0, sizeof *c);
	c->via = via;
	c->src = src;
	c->dst = dst;
	if (one_sided) {
		c->one_sided = 1;
		c->one_sided_bytes = bytes;
		c->one_sided_ns = time_ns;
	} else {
		c->transfers = 1;
		c->bytes = bytes;
		c->time_ns = time_ns;
	}
	return 0;
}

static int mat_flush(struct matacc *a)
{
	struct callbuf *b = &a->buf;
	int n = b->n, rc = 0;
	b->n = 0;
	if (n != 2) {   /* alone, or (a sequence reused) more than two calls: each counted one-sided */
		for (int i = 0; i < n && !rc; i++)
			rc = mat_add(a, DB_MATRIX_P2P, (int)b->m[i].p2p_src, (int)b->m[i].p2p_dst, b->m[i].bytes,
				     b->m[i].end_ns - b->m[i].start_ns, 1);
		return rc;
	}
	const struct db_match *x = &b->m[0], *y = &b->m[1];
	int64_t posted = x->start_ns > y->start_ns ? x->start_ns : y->start_ns;
	int64_t done = x->end_ns > y->end_ns ? x->end_ns : y->end_ns;
	int src = (int)x->p2p_src, dst = (int)x->p2p_dst;
	if (side_of(a, x) == DB_P2P_EXCHANGE && side_of(a, y) == DB_P2P_EXCHANGE && x->rank != y->rank) {
		/* an exchange: each side receives; each side's bytes in its own direction, over the one time */
		int64_t t = done - posted > 0 ? done - posted : 0;
		rc = mat_add(a, DB_MATRIX_P2P, x->rank, y->rank, x->bytes, t, 0);
		return rc ? rc : mat_add(a, DB_MATRIX_P2P, y->rank, x->rank, y->bytes, t, 0);
	}
	/* a send and its receive: the sender's bytes, until the receive has the data (its end; a send may
	 * return before the data arrived, or block after) */
	const struct db_match *snd = y->rank == src && x->rank != src ? y : x, *rcv = snd == x ? y : x;
	if (src != dst && rcv->rank == dst)
		done = rcv->end_ns;
	int64_t t = done - posted > 0 ? done - posted : 0;
	return mat_add(a, DB_MATRIX_P2P, src, dst, snd->bytes, t, 0);
}

/* A collective call's members (one after another from db_each_call): on a link when it is a
 * two-member communicator's call matched on both, as db_coll_analysis times it (transit = the shorter
 * end − the later start of the two); on its ring links when every member of a communicator of three
 * or more made it and each member's event says it ran a ring: each member's ring bytes (ring_bytes)
 * to the next member, over the call's transit (the shortest end − the latest start). *on_links
 * counts the events put on links. */
static int mat_coll_flush(struct matacc *a, int64_t *on_links)
{
	struct callbuf *b = &a->buf;
	int n = b->n;
	b->n = 0;
	if (n < 2)
		return 0;
	int size = commsize_of(&a->sizes, b->m[0].comm_id);
	int64_t last = b->m[0].start_ns, end = b->m[0].end_ns;
	for (int i = 1; i < n; i++) {
		last = b->m[i].start_ns > last ? b->m[i].start_ns : last;
		end = b->m[i].end_ns < end ? b->m[i].end_ns : end;
	}
	int64_t t = end - last > 0 ? end - last : 0;
	if (n == 2 && size == 2 && b->m[0].rank != b->m[1].rank) {
		const struct db_match *x = &b->m[0], *y = &b->m[1];
		*on_links += 2;
		int rc = mat_add(a, DB_MATRIX_COLL, x->rank, y->rank, x->bytes, t, 0);
		return rc ? rc : mat_add(a, DB_MATRIX_COLL, y->rank, x->rank, y->bytes, t, 0);
	}
	if (n < 3 || n != size || !a->ring.ncall)
		return 0;
	const char *name = b->m[0].name_id >= 0 && b->m[0].name_id < a->nnames ? a->names[b->m[0].name_id] : NULL;
	if (ring_bytes(name, 1, 2) < 0)
		return 0;
	if (n > a->nnext) {
		int *v = realloc(a->next, (size_t)n * sizeof *v);
		if (!v)
			return ascent_error(ASCENT_ENOMEM, "out of memory building the communication matrix");
		a->next = v;
		a->nnext = n;
	}
	int *next = a->next;
	for (int i = 0; i < n; i++) {
		const struct db_match *m = &b->m[i];
		if ((i && m->rank == b->m[i - 1].rank) || !ringcall_has(&a->ring, m->comm_id, m->seq, m->rank) ||
		    (next[i] = ring_next(&a->ring, m->comm_id, m->rank, n)) < 0)
			return 0;
	}
	*on_links += n;
	int rc = 0;
	for (int i = 0; i < n && !rc; i++)
		rc = mat_add(a, DB_MATRIX_RING, b->m[i].rank, next[i], ring_bytes(name, b->m[i].bytes, n), t, 0);
	return rc;
}

struct matcoll {
	struct matacc *a;
	int64_t on_links;
};

static int mat_coll_cb(void *ud, const struct db_match *m)
{
	struct matcoll *c = ud;
	struct callbuf *b = &c->a->buf;
	int rc = 0;
	if (b->n && !same_call(&b->m[0], m))
		rc = mat_coll_flush(c->a, &c->on_links);
	if (!rc && !(rc = ARRAY_GROW(b->m, b->n, b->cap, 4, "building the communication matrix")))
		b->m[b->n++] = *m;
	return rc;
}

static int mat_cb(void *ud, const struct db_match *m)
{
	struct matacc *a = ud;
	struct callbuf *b = &a->buf;
	int rc = 0;
	if (b->n && !same_call(&b->m[0], m))
		rc = mat_flush(a);
	if (!rc && !(rc = ARRAY_GROW(b->m, b->n, b->cap, 4, "building the communication matrix")))
		b->m[b->n++] = *m;
	return rc;
}

static int cmp_cell(const void *x, const void *y)
{
	const struct db_matrix_cell *a = x, *b = y;
	if (a->via != b->via)
		return a->via < b->via ? -1 : 1;
	if (a->src != b->src)
		return a->src < b->src ? -1 : 1;
	return (a->dst > b->dst) - (a->dst < b->dst);
}

/* Sort v[0..n) by (via, src, dst) and sum equal keys in place; the count left. */
static int cells_reduce(struct db_matrix_cell *v, int n)
{
	if (n > 1)
		qsort(v, (size_t)n, sizeof *v, cmp_cell);
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (k && v[k - 1].via == v[i].via && v[k - 1].src == v[i].src && v[k - 1].dst == v[i].dst) {
			struct db_matrix_cell *c = &v[k - 1];
			c->transfers += v[i].transfers;
			c->bytes = i64_add_sat(c->bytes, v[i].bytes);
			c->time_ns = i64_add_sat(c->time_ns, v[i].time_ns);
			c->one_sided += v[i].one_sided;
			c->one_sided_bytes = i64_add_sat(c->one_sided_bytes, v[i].one_sided_bytes);
			c->one_sided_ns = i64_add_sat(c->one_sided_ns, v[i].one_sided_ns);
		} else
			v[k++] = v[i];
	}
	for (int i = 0; i < k; i++)
		v[i].gbs = v[i].time_ns > 0 ? (double)v[i].bytes / (double)v[i].time_ns : 0;
	return k;
}

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static int host_index(char **hosts, int nhosts, const char *h)
{
	char *const *hit = bsearch(&h, hosts, (size_t)nhosts, sizeof *hosts, cmp_str);
	return hit ? (int)(hit - hosts) : -1;
}

void db_comm_matrix_free(struct db_comm_matrix *m)
{
	if (!m)
		return;
	free(m->cells);
	free(m->host_cells);
	for (int i = 0; i < m->nhosts; i++)
		free(m->hosts[i]);
	free(m->hosts);
	memset(m, 0, sizeof *m);
}

/* The host of a world rank ("?" when the rank or its host is unknown), as an index into hosts. */
static int host_of_rank(const struct db_rank_info *ranks, int nranks, char **hosts, int nhosts, int rank)
{
	int r = rank_at(ranks, nranks, rank);
	const char *h = r >= 0 && ranks[r].host && *ranks[r].host ? ranks[r].host : "?";
	return host_index(hosts, nhosts, h);
}

int db_comm_matrix(struct db *db, struct db_comm_matrix *out)
{
	memset(out, 0, sizeof *out);
	struct matacc a = { 0 };
	struct db_rank_info *ranks = NULL;
	int nranks = 0;
	int rc = db_ranks(db, &ranks, &nranks);
	if (!rc)
		rc = db_strings(db, &a.names, &a.nnames);
	if (!rc)
		rc = commsizes_load(db, &a.sizes);
	if (!rc)
		rc = ringcalls_load(db, &a.ring);
	if (!rc)
		rc = db_each_call(db, DB_FILTER_ALL, DB_KIND_P2P, mat_cb, &a);
	if (!rc)
		rc = mat_flush(&a);
	struct matcoll mc = { .a = &a };
	if (!rc)
		rc = db_each_call(db, DB_FILTER_ALL, DB_KIND_COMM, mat_coll_cb, &mc);
	if (!rc)
		rc = mat_coll_flush(&a, &mc.on_links);
	if (!rc)
		rc = db_scalar_i64(db, "SELECT count(*) FROM event WHERE comm_id IS NOT NULL AND kind = " DB_SQL_KIND_COMM,
				   &out->collectives, NULL);
	if (rc)
		goto done;
	out->collectives -= mc.on_links;
	out->ncells = cells_reduce(a.v, a.n);
	out->cells = a.v;
	a.v = NULL;
	/* hosts: every rank's, and "?" for a rank (or peer) with none */
	if (!(out->hosts = calloc((size_t)nranks + 1, sizeof *out->hosts))) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory building the communication matrix");
		goto done;
	}
	for (int i = 0; i <= nranks && !rc; i++) {
		const char *h = i < nranks && ranks[i].host && *ranks[i].host ? ranks[i].host : "?";
		if (!(out->hosts[out->nhosts++] = strdup(h)))
			rc = ascent_error(ASCENT_ENOMEM, "out of memory building the communication matrix");
	}
	if (rc)
		goto done;
	qsort(out->hosts, (size_t)out->nhosts, sizeof *out->hosts, cmp_str);
	int k = 0;
	for (int i = 0; i < out->nhosts; i++) {
		if (k && !strcmp(out->hosts[k - 1], out->hosts[i]))
			free(out->hosts[i]);
		else
			out->hosts[k++] = out->hosts[i];
	}
	out->nhosts = k;
	if (out->ncells && !(out->host_cells = malloc((size_t)out->ncells * sizeof *out->host_cells))) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory building the communication matrix");
		goto done;
	}
	for (int i = 0; i < out->ncells; i++) {
		struct db_matrix_cell c = out->cells[i];
		c.src = host_of_rank(ranks, nranks, out->hosts, out->nhosts, c.src);
		c.dst = host_of_rank(ranks, nranks, out->hosts, out->nhosts, c.dst);
		out->host_cells[i] = c;
	}
	out->nhost_cells = cells_reduce(out->host_cells, out->ncells);
done:
	free(a.v);
	free(a.buf.m);
	ringcalls_free(&a.ring);
	free(a.next);
	free(a.sizes.id);
	free(a.sizes.size);
	db_strings_free(a.names, a.nnames);
	db_ranks_free(ranks, nranks);
	if (rc)
		db_comm_matrix_free(out);
	return rc;
}
