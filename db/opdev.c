/* db/opdev.c — the device work CPU operators launched (`diff`'s rule, docs/diff.md), accumulated per
 * rank while the events are read in nesting order: each launch link's device event (kernel, copy,
 * memset, device collective) goes to every operator name open on the launching thread when the
 * launch was made (once per name: db/opstack.c's rule) and to the innermost one. Fed by diff.c's
 * own scan (a step filter, a file without the viewer's summary) and by the viewer's summary pass
 * (view_cache.c: view_opdev, view_launch), so both read the same numbers from the same code. */
#include "db/internal.h"

#include <stdlib.h>
#include <string.h>

struct launch {
	int rank, tid;
	int64_t ns, dur;
};

struct db_opdev {
	struct launch *l;
	int nl, capl, next;           /* launches sorted by rank, ns; next: the first not yet given */
	int rank;                     /* the rank being read, INT32_MIN before the first event */
	struct db_opstacks ops;       /* the operators open on each thread */
	struct db_opdev_name *acc;    /* by name id, the current rank's */
	int64_t nnames;
	int64_t *touched;             /* name ids with a non-zero acc entry this rank */
	int64_t ntouched;
	struct db_opdev_rank tot;     /* the current rank's launches */
	db_opdev_flush_cb cb;
	void *ud;
};

static int launch_row(void *ud, sqlite3_stmt *s)
{
	struct db_opdev *x = ud;
	if (ARRAY_GROW(x->l, x->nl, x->capl, 1024, "reading launch links"))
		return ASCENT_ENOMEM;
	x->l[x->nl++] = (struct launch){ sqlite3_column_int(s, 0), sqlite3_column_int(s, 1), sqlite3_column_int64(s, 2),
					 sqlite3_column_int64(s, 3) };
	return 0;
}

int db_opdev_new(struct db *db, struct db_filter f, int64_t nnames, db_opdev_flush_cb cb, void *ud,
		 struct db_opdev **out)
{
	*out = NULL;
	struct db_opdev *x = calloc(1, sizeof *x);
	if (!x)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	x->rank = INT32_MIN;
	x->nnames = nnames;
	x->cb = cb;
	x->ud = ud;
	x->acc = calloc((size_t)nnames + 1, sizeof *x->acc);
	x->touched = malloc(((size_t)nnames + 1) * sizeof *x->touched);
	if (!x->acc || !x->touched) {
		db_opdev_free(x);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int rc = 0;
	/* each link's device event (the kernel, copy, memset or device collective starting where it
	 * ends). Where the launching call is itself the end of an operator → call link (Ascend: the
	 * CANN call on its own thread), the launch counts at the operator's start on its thread. A step
	 * filter gives one window per rank in rank order, so launches come by rank, then time. */
	if (db_has_table(db, "flow"))
		rc = db_scan_windows(db, f,
				     "SELECT fl.rank, coalesce(c.src_tid, fl.src_tid), coalesce(c.src_ns, fl.src_ns) AS at,"
				     " max(e.dur_ns)" DB_SQL_LAUNCHES_FROM " GROUP BY fl.rowid"
				     " ORDER BY fl.rank, at",
				     launch_row, x);
	if (rc) {
		db_opdev_free(x);
		return rc;
	}
	*out = x;
	return 0;
}

static struct db_opdev_name *acc_of(struct db_opdev *x, int64_t id)
{
	struct db_opdev_name *a = &x->acc[id];
	if (!a->count && !a->launched)
		x->touched[x->ntouched++] = id;
	return a;
}

/* One launch: its device time to every operator name open on the launching thread (once per name)
 * and to the innermost. */
static void give_launch(struct db_opdev *x, const struct launch *l)
{
	x->tot.linked++;
	x->tot.linked_ns = i64_add_sat(x->tot.linked_ns, l->dur);
	int n;
	const struct db_opframe *v = db_opstack_open(&x->ops, l->tid, l->ns, &n);
	if (!n) {
		x->tot.unattributed++;
		x->tot.unattributed_ns = i64_add_sat(x->tot.unattributed_ns, l->dur);
		return;
	}
	for (int i = 0; i < n; i++) {
		int64_t id = v[i].name_id;
		if (!db_opstack_first(v, i) || id < 0 || id >= x->nnames)
			continue;
		struct db_opdev_name *a = acc_of(x, id);
		a->launched++;
		a->device_ns = i64_add_sat(a->device_ns, l->dur);
	}
	int64_t top = v[n - 1].name_id;
	if (top >= 0 && top < x->nnames)
		x->acc[top].self_ns = i64_add_sat(x->acc[top].self_ns, l->dur);   /* touched above */
}

/* Give the launches of the current rank before `ns` (all of them: INT64_MAX). */
static void give_until(struct db_opdev *x, int64_t ns)
{
	while (x->next < x->nl && x->l[x->next].rank == x->rank && x->l[x->next].ns < ns)
		give_launch(x, &x->l[x->next++]);
}

/* The current rank is complete: hand it over and start afresh. */
static int flush_rank(struct db_opdev *x)
{
	int rc = x->cb(x->ud, x->rank, x->acc, x->touched, x->ntouched, &x->tot);
	for (int64_t i = 0; i < x->ntouched; i++)
		memset(&x->acc[x->touched[i]], 0, sizeof x->acc[0]);
	x->ntouched = 0;
	memset(&x->tot, 0, sizeof x->tot);
	db_opstack_clear(&x->ops);
	return rc;
}

/* Move to `rank`: finish the current one, and hand over each rank before `rank` that has launches
 * but no event under the filter (its launches launched outside every operator). */
static int to_rank(struct db_opdev *x, int rank)
{
	int rc = 0;
	if (x->rank != INT32_MIN) {
		give_until(x, INT64_MAX);
		rc = flush_rank(x);
	}
	while (!rc && x->next < x->nl && x->l[x->next].rank < rank) {
		x->rank = x->l[x->next].rank;
		give_until(x, INT64_MAX);   /* no operator open: unattributed */
		rc = flush_rank(x);
	}
	x->rank = rank;
	return rc;
}

int db_opdev_event(struct db_opdev *x, const struct db_event *e)
{
	int rc;
	if (e->rank != x->rank && (rc = to_rank(x, e->rank)) != 0)
		return rc;
	give_until(x, e->start_ns);
	if (e->kind != DB_KIND_OP)
		return 0;
	if ((rc = db_opstack_push(&x->ops, e->tid, e->start_ns,
				  (struct db_opframe){ e->name_id, i64_add_sat(e->start_ns, e->dur_ns), 0 })) != 0)
		return rc;
	if (e->name_id >= 0 && e->name_id < x->nnames) {
		struct db_opdev_name *a = acc_of(x, e->name_id);
		a->count++;
		a->cpu_ns = i64_add_sat(a->cpu_ns, e->dur_ns);
	}
	return 0;
}

int db_opdev_finish(struct db_opdev *x)
{
	return to_rank(x, INT32_MAX);   /* flushes the last rank and any after it with launches only */
}

void db_opdev_free(struct db_opdev *x)
{
	if (!x)
		return;
	db_opstack_free(&x->ops);
	free(x->l);
	free(x->acc);
	free(x->touched);
	free(x);
}
