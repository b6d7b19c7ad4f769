/* db/view_cache.c — the viewer's summary tables (view_*), built once per database in one pass over
 * the events and cached in the file (or, when the file cannot be written, in this connection's
 * temporary tables), so that every screen of `ascent view` is a query on a small table or a paged
 * query on an indexed column. Also: probing a file (indexes, live WAL, events present).
 *
 * Tables (docs/viewer.md describes them):
 *   view_info(key, value)            version, aligned span T0..T1, timeline bin width
 *   view_lane(rank, tid, ...)        one row per timeline lane: clock shift, longest event, counts
 *   view_op(rank, step, kind, name_id, count, total_ns, self_ns, min_ns, max_ns, flops, flops_ns)
 *   view_opstep(step, kind, name_id, ...)   view_op's rows of each step added up over the ranks (the
 *                                    ops view and the overview of all ranks under a step restriction)
 *   view_opq(rank, kind, name_id, med_ns, p95_ns)        exact, whole run; rank −1 = all ranks
 *   view_comm(rank, step, kind, name_id, bucket, comm_id, count, total_ns, bytes, matched, wait_ns,
 *             transit_ns, late_ns, queue_ns)      queue_ns: the events' "queue_ns" arguments
 *   view_pair(step, src, dst, count, bytes)              rank × rank traffic
 *   view_link(via, src, dst, transfers, bytes, time_ns)  db_comm_matrix's rank cells (the whole job:
 *                                    bytes and time per link, for the ranks view's heat map)
 *   view_mem(rank, device, bin, max_bytes), view_mempeak(rank, device, category, ...)
 *   view_tl(rank, tid, chunk, n, busy_ns, bins)   a lane's timeline bins, DB_TL_CHUNK to a row: bins
 *                                    packed (db/view_tl.c: each bin's compute, comm, data, other ns,
 *                                    events, top name), n and busy_ns their sums
 *   view_step(step, loss)
 *   view_opdev(rank, name_id, count, cpu_ns, launched, device_ns, self_ns)   CPU operators with the
 *                                    device work they launched (db/opdev.c: diff's rule)
 *   view_launch(rank, linked, linked_ns, unattributed, unattributed_ns)      launch links per rank
 *   view_stepwork(seq, rank, place, step, step_start_ns, ...)   db_step_work's rows over the whole
 *                                    profile, in its order (seq): device work by launching step
 *   view_device(rank, device, ...), view_devcopy(rank, device, kind, ...), view_stream(rank, device,
 *             stream, ...)       db_device_stats over the whole profile: per device, its copies by
 *                                    kind, its streams (not built when a rank has over
 *                                    DB_VIEW_DEV_MAX_EVENTS events: view_info's devices_cached 0)
 *   view_devstep(..., step), view_devcopystep(..., step), view_streamstep(..., step)   the same
 *                                    columns under each single step's filter (db_device_stats_each, in
 *                                    the same read; devices × steps ≤ DB_VIEW_DEVSTEP_MAX: view_info's
 *                                    devices_by_step 1)
 *   view_critpath(rank, ...), view_cptop(rank, i, name, ...)   db_critpath over each whole rank of
 *                                    at most DB_VIEW_CP_MAX_EVENTS events (view_info's critpath_skipped
 *                                    counts the others):
 *                                    the path's summary and its DB_VIEW_CP_TOP top events (not its
 *                                    events: db_critpath for one rank gives them when needed)
 *   index view_event_name ON event(name_id, dur_ns)      an operator's instances, slowest first
 */
#include "db/internal.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define VIEW_CACHE_VERSION 13  /* 2: p2p peers translated to world ranks; 3: view_comm.queue_ns; 4: memory per
				 * device; 5: view_opdev, view_launch; 6: an imported trace's events in steps
				 * (device work by launching step, db_stepmap); 7: view_stepwork; 8: view_device,
				 * view_devcopy, view_stream; 9: view_critpath, view_cptop; 10: view_link;
				 * 11: view_tl's bins packed by chunk; 12: view_opstep;
				 * 13: view_devstep, view_devcopystep, view_streamstep */

static const char *const VIEW_TABLES =
	"CREATE TABLE %sview_info(key TEXT PRIMARY KEY, value INTEGER);"
	"CREATE TABLE %sview_lane(rank INTEGER, tid INTEGER, shift_ns INTEGER, maxdur_ns INTEGER, n INTEGER,"
	" first_ns INTEGER, last_ns INTEGER, PRIMARY KEY(rank, tid)) WITHOUT ROWID;"
	"CREATE TABLE %sview_op(rank INTEGER, step INTEGER, kind INTEGER, name_id INTEGER, count INTEGER,"
	" total_ns INTEGER, self_ns INTEGER, min_ns INTEGER, max_ns INTEGER, flops REAL, flops_ns INTEGER,"
	" PRIMARY KEY(rank, step, kind, name_id)) WITHOUT ROWID;"
	"CREATE TABLE %sview_opq(rank INTEGER, kind INTEGER, name_id INTEGER, med_ns INTEGER, p95_ns INTEGER,"
	" PRIMARY KEY(rank, kind, name_id)) WITHOUT ROWID;"
	"CREATE TABLE %sview_comm(rank INTEGER, step INTEGER, kind INTEGER, name_id INTEGER, bucket INTEGER,"
	" comm_id INTEGER, count INTEGER, total_ns INTEGER, bytes INTEGER, matched INTEGER, wait_ns INTEGER,"
	" transit_ns INTEGER, late_ns INTEGER, queue_ns INTEGER, PRIMARY KEY(rank, step, kind, name_id, bucket, comm_id))"
	" WITHOUT ROWID;"
	"CREATE TABLE %sview_pair(step INTEGER, src INTEGER, dst INTEGER, count INTEGER, bytes INTEGER,"
	" PRIMARY KEY(step, src, dst)) WITHOUT ROWID;"
	"CREATE TABLE %sview_mem(rank INTEGER, device INTEGER, bin INTEGER, max_bytes INTEGER,"
	" PRIMARY KEY(rank, device, bin)) WITHOUT ROWID;"
	"CREATE TABLE %sview_mempeak(rank INTEGER, device INTEGER, category INTEGER, peak_bytes INTEGER, peak_ts_ns INTEGER,"
	" final_bytes INTEGER, allocs INTEGER, frees INTEGER, PRIMARY KEY(rank, device, category)) WITHOUT ROWID;"
	"CREATE TABLE %sview_tl(rank INTEGER, tid INTEGER, chunk INTEGER, n INTEGER, busy_ns INTEGER, bins BLOB,"
	" PRIMARY KEY(rank, tid, chunk)) WITHOUT ROWID;"
	"CREATE TABLE %sview_step(step INTEGER PRIMARY KEY, loss REAL);"
	"CREATE TABLE %sview_opdev(rank INTEGER, name_id INTEGER, count INTEGER, cpu_ns INTEGER, launched INTEGER,"
	" device_ns INTEGER, self_ns INTEGER, PRIMARY KEY(rank, name_id)) WITHOUT ROWID;"
	"CREATE TABLE %sview_launch(rank INTEGER PRIMARY KEY, linked INTEGER, linked_ns INTEGER, unattributed INTEGER,"
	" unattributed_ns INTEGER);"
	"CREATE TABLE %sview_stepwork(seq INTEGER PRIMARY KEY, rank INTEGER, place INTEGER, step INTEGER,"
	" step_start_ns INTEGER, step_end_ns INTEGER, events INTEGER, device_ns INTEGER, busy_ns INTEGER,"
	" compute_ns INTEGER, in_window_ns INTEGER, first_start_ns INTEGER, last_end_ns INTEGER);"
	"CREATE TABLE %sview_device(rank INTEGER, device INTEGER, counted INTEGER, after_last_step INTEGER,"
	" unlinked INTEGER, span_ns INTEGER, busy_ns INTEGER, compute_ns INTEGER, comm_ns INTEGER,"
	" comm_under_compute_ns INTEGER, class1_ns INTEGER, class2_ns INTEGER, class3_ns INTEGER, class4_ns INTEGER,"
	" class5_ns INTEGER, class6_ns INTEGER, class7_ns INTEGER, idle_host_wait_ns INTEGER,"
	" idle_kernel_wait_ns INTEGER, idle_other_ns INTEGER, linked INTEGER, launch_delay_p50_ns INTEGER,"
	" launch_delay_p95_ns INTEGER, PRIMARY KEY(rank, device)) WITHOUT ROWID;"
	"CREATE TABLE %sview_devcopy(rank INTEGER, device INTEGER, kind INTEGER, count INTEGER, bytes INTEGER,"
	" total_ns INTEGER, no_bytes INTEGER, bw_samples INTEGER, bw_mean_gbs REAL, bw_min_gbs REAL, bw_max_gbs REAL,"
	" PRIMARY KEY(rank, device, kind)) WITHOUT ROWID;"
	"CREATE TABLE %sview_stream(rank INTEGER, device INTEGER, stream INTEGER, kernels INTEGER, linked INTEGER,"
	" queue_len_mean REAL, queue_len_max INTEGER, launch_delay_p50_ns INTEGER, launch_delay_p95_ns INTEGER,"
	" short_kernels INTEGER, idle_host_wait_ns INTEGER, idle_kernel_wait_ns INTEGER, idle_other_ns INTEGER,"
	" PRIMARY KEY(rank, device, stream)) WITHOUT ROWID;"
	"CREATE TABLE %sview_critpath(rank INTEGER PRIMARY KEY, cycle INTEGER, window_lo_ns INTEGER, window_hi_ns INTEGER,"
	" start_ns INTEGER, end_ns INTEGER, length_ns INTEGER, cpu_ns INTEGER, gpu_compute_ns INTEGER, gpu_comm_ns INTEGER,"
	" kernel_kernel_ns INTEGER, launch_ns INTEGER, nodes INTEGER, edges INTEGER, path_nodes INTEGER,"
	" path_events INTEGER);"
	"CREATE TABLE %sview_cptop(rank INTEGER, i INTEGER, name TEXT, cause INTEGER, ns INTEGER, events INTEGER,"
	" PRIMARY KEY(rank, i)) WITHOUT ROWID;";

/* The tables added after VIEW_TABLES reached C's longest portable string literal. */
static const char *const VIEW_TABLES2 =
	"CREATE TABLE %sview_link(via INTEGER, src INTEGER, dst INTEGER, transfers INTEGER, bytes INTEGER,"
	" time_ns INTEGER, PRIMARY KEY(via, src, dst)) WITHOUT ROWID;"
	"CREATE TABLE %sview_opstep(step INTEGER, kind INTEGER, name_id INTEGER, count INTEGER, total_ns INTEGER,"
	" self_ns INTEGER, min_ns INTEGER, max_ns INTEGER, flops REAL, flops_ns INTEGER,"
	" PRIMARY KEY(step, kind, name_id)) WITHOUT ROWID;"
	"CREATE TABLE %sview_devstep(rank INTEGER, device INTEGER, counted INTEGER, after_last_step INTEGER,"
	" unlinked INTEGER, span_ns INTEGER, busy_ns INTEGER, compute_ns INTEGER, comm_ns INTEGER,"
	" comm_under_compute_ns INTEGER, class1_ns INTEGER, class2_ns INTEGER, class3_ns INTEGER, class4_ns INTEGER,"
	" class5_ns INTEGER, class6_ns INTEGER, class7_ns INTEGER, idle_host_wait_ns INTEGER,"
	" idle_kernel_wait_ns INTEGER, idle_other_ns INTEGER, linked INTEGER, launch_delay_p50_ns INTEGER,"
	" launch_delay_p95_ns INTEGER, step INTEGER, PRIMARY KEY(step, rank, device)) WITHOUT ROWID;"
	"CREATE TABLE %sview_devcopystep(rank INTEGER, device INTEGER, kind INTEGER, count INTEGER, bytes INTEGER,"
	" total_ns INTEGER, no_bytes INTEGER, bw_samples INTEGER, bw_mean_gbs REAL, bw_min_gbs REAL, bw_max_gbs REAL,"
	" step INTEGER, PRIMARY KEY(step, rank, device, kind)) WITHOUT ROWID;"
	"CREATE TABLE %sview_streamstep(rank INTEGER, device INTEGER, stream INTEGER, kernels INTEGER, linked INTEGER,"
	" queue_len_mean REAL, queue_len_max INTEGER, launch_delay_p50_ns INTEGER, launch_delay_p95_ns INTEGER,"
	" short_kernels INTEGER, idle_host_wait_ns INTEGER, idle_kernel_wait_ns INTEGER, idle_other_ns INTEGER,"
	" step INTEGER, PRIMARY KEY(step, rank, device, stream)) WITHOUT ROWID;";

static const char *const VIEW_DROP =
	"DROP TABLE IF EXISTS %sview_info; DROP TABLE IF EXISTS %sview_lane; DROP TABLE IF EXISTS %sview_op;"
	"DROP TABLE IF EXISTS %sview_opq; DROP TABLE IF EXISTS %sview_comm; DROP TABLE IF EXISTS %sview_pair;"
	"DROP TABLE IF EXISTS %sview_mem; DROP TABLE IF EXISTS %sview_mempeak; DROP TABLE IF EXISTS %sview_tl;"
	"DROP TABLE IF EXISTS %sview_step; DROP TABLE IF EXISTS %sview_opdev; DROP TABLE IF EXISTS %sview_launch;"
	"DROP TABLE IF EXISTS %sview_stepwork; DROP TABLE IF EXISTS %sview_device; DROP TABLE IF EXISTS %sview_devcopy;"
	"DROP TABLE IF EXISTS %sview_stream; DROP TABLE IF EXISTS %sview_critpath; DROP TABLE IF EXISTS %sview_cptop;"
	"DROP TABLE IF EXISTS %sview_link; DROP TABLE IF EXISTS %sview_opstep;"
	"DROP TABLE IF EXISTS %sview_devstep; DROP TABLE IF EXISTS %sview_devcopystep; DROP TABLE IF EXISTS %sview_streamstep;";

/* ---------------------------------------------------------------------------------------- */
/* small helpers */

/* Fill `tmpl` (with `reps` "%s") with prefix p. */
static char *fill_prefix(const char *tmpl, const char *p)
{
	size_t n = strlen(tmpl) + 64 * strlen(p) + 1;
	char *out = malloc(n);
	if (!out)
		return NULL;
	size_t k = 0;
	for (const char *c = tmpl; *c; c++) {
		if (c[0] == '%' && c[1] == 's') {
			memcpy(out + k, p, strlen(p));
			k += strlen(p);
			c++;
		} else {
			out[k++] = *c;
		}
	}
	out[k] = 0;
	return out;
}

static int exec_prefixed(struct db *db, const char *tmpl, const char *p)
{
	char *sql = fill_prefix(tmpl, p);
	if (!sql)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int rc = db_exec(db, sql);
	free(sql);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* probe */

int db_view_probe(struct db *db, struct db_view_probe *out)
{
	memset(out, 0, sizeof *out);
	int64_t v = 0;
	int null = 0, rc;
	if ((rc = db_scalar_i64(db, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = 'event_step'", &v,
			     NULL)) != 0)
		return rc;
	out->indexed = v > 0;
	char wal[4200];
	snprintf(wal, sizeof wal, "%s-wal", db->path);
	struct stat st;
	out->wal = stat(wal, &st) == 0 && st.st_size > 0;
	if ((rc = db_scalar_i64(db, "SELECT 1 FROM event LIMIT 1", &v, &null)) != 0)
		return rc;
	out->has_events = !null;
	if ((rc = db_scalar_i64(db, "SELECT count(*) FROM rank", &v, NULL)) != 0)
		return rc;
	out->nranks = v;
	return db_view_current(db, &out->cached);
}

int db_view_current(struct db *db, int *yes)
{
	*yes = 0;
	int64_t v = 0, ver = 0;
	int null = 0;
	int rc = db_scalar_i64(db, "SELECT count(*) FROM sqlite_master WHERE name = 'view_info'"
			       " UNION ALL SELECT count(*) FROM sqlite_temp_master WHERE name = 'view_info'"
			       " ORDER BY 1 DESC LIMIT 1", &v, NULL);
	if (rc)
		return rc;
	if (v > 0 && db_scalar_i64(db, "SELECT value FROM view_info WHERE key = 'version'", &ver, &null) == 0 && !null &&
	    ver == VIEW_CACHE_VERSION)
		*yes = 1;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the one pass over events */

struct opagg {              /* view_op row */
	int64_t key_step, name_id;
	int rank, kind;
	int64_t count, total, self, min, max, flops_ns;
	double flops;
	int used;
};

struct opmap {
	struct opagg *v;
	size_t cap, n;
};

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdULL;
	h ^= h >> 33;
	return h;
}

static int64_t opmap_get(struct opmap *m, int rank, int64_t step, int kind, int64_t name_id)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t nc = m->cap ? m->cap * 2 : 1024;
		struct opagg *nv = calloc(nc, sizeof *nv);
		if (!nv)
			return -1;
		for (size_t i = 0; i < m->cap; i++) {
			if (!m->v[i].used)
				continue;
			struct opagg *o = &m->v[i];
			size_t j = mix((uint64_t)o->rank * 1000003u ^ (uint64_t)o->key_step * 7919u ^ (uint64_t)o->kind * 31u ^
				       (uint64_t)o->name_id << 20) & (nc - 1);
			while (nv[j].used)
				j = (j + 1) & (nc - 1);
			nv[j] = *o;
		}
		free(m->v);
		m->v = nv;
		m->cap = nc;
	}
	size_t j = mix((uint64_t)rank * 1000003u ^ (uint64_t)step * 7919u ^ (uint64_t)kind * 31u ^ (uint64_t)name_id << 20) &
		   (m->cap - 1);
	while (m->v[j].used) {
		struct opagg *o = &m->v[j];
		if (o->rank == rank && o->key_step == step && o->kind == kind && o->name_id == name_id)
			return (int64_t)j;
		j = (j + 1) & (m->cap - 1);
	}
	struct opagg *o = &m->v[j];
	memset(o, 0, sizeof *o);
	o->used = 1;
	o->rank = rank;
	o->key_step = step;
	o->kind = kind;
	o->name_id = name_id;
	o->min = INT64_MAX;
	m->n++;
	return (int64_t)j;
}

struct commrow {            /* one collective / p2p call, for matching */
	int rank, kind;
	int64_t step, name_id, bytes, comm_id, seq, peer, start, end, k1, k2;
	int64_t wait, transit, late;
	int64_t queue;          /* its "queue_ns" argument (comm/'s lanes), 0 none */
	int matched;
};

struct tlbin {
	int64_t c[4];           /* compute, comm, data, other ns */
	int64_t n;
	int64_t top, topov;     /* name with the largest overlap among leaf classes */
};

/* A lane's timeline bins: sparse (an open-addressing table of the bins it touched) until it has
 * touched more than TL_SPARSE_MAX, then dense (all nbins). A lane of a few events costs a few bins,
 * so 100,000 lanes cost megabytes, not 16,384 bins each. */
#define TL_SPARSE_MAX 1024
struct tlbins {
	struct tlbin *dense;    /* nbins, or NULL while sparse */
	struct tlbin *sv;       /* sparse: the bins */
	int *sk;                /* sparse: each slot's bin index, −1 empty */
	int cap, used;          /* sparse: slots (a power of two), bins in them */
};

struct lane {
	int tid;
	int64_t n, maxdur, first, last;
	struct tlbins bins;
};

/* The chunk of a lane's bins being packed (put_lane_bins): one view_tl row; the record being
 * extended (bins pend_off .. pend_off + pend_run − 1 holding pend). */
struct tlchunk {
	int64_t no;             /* chunk number (bin / DB_TL_CHUNK), −1 none yet */
	int64_t n, busy;        /* the row's n and busy_ns: its bins' events and ns summed */
	size_t len;
	int pend_off, pend_run; /* pend_run 0: no record pending */
	struct db_tl_bin pend;
	unsigned char buf[DB_TL_CHUNK * DB_TL_PACKED_MAX];
};

struct build {
	struct db *db;
	const char *pfx;
	int64_t T0, T1, bw;     /* aligned span and timeline bin width */
	int nbins;
	int64_t *shift;         /* by rank (index rank − rmin) */
	int rmin, rmax;
	struct opmap ops;       /* the current rank's view_op rows (put_ops writes them at its end) */
	struct db_selftime self;    /* view_op's self times */
	struct db_opacc *opq;       /* view_opq: operator quantiles, the accumulator op_stat is built with */
	int cur_rank;
	struct lane *lanes;     /* of the current rank */
	int nlanes, caplanes;
	int *lslot;             /* open-addressing index of lanes by tid, −1 empty */
	int nlslot;
	int64_t nnames;
	struct commrow *cm;
	size_t ncm, capcm;
	sqlite3_stmt *ins_lane, *ins_tl, *ins_opq, *ins_op;
	struct tlchunk chunk;   /* put_lane_bins' buffer */
	sqlite3_stmt *queue;       /* a collective's "queue_ns" argument; NULL for a v1 file (no arg table) */
	unsigned char *isrecv;     /* per name id: enum db_p2p_side */
	struct db_peermap peers;    /* p2p peers are stored as ranks in their communicator */
	struct db_opdev *opdev;     /* view_opdev, view_launch: operators' device work (db/opdev.c) */
	struct db_stepmap *steps;   /* an imported trace's events: their steps (device work: launching step) */
	sqlite3_stmt *ins_opdev, *ins_launch;
};

#define VIEW_TL_BINS 16384
#define VIEW_MEM_BINS 1024

static int64_t shift_of(struct build *b, int rank)
{
	return rank >= b->rmin && rank <= b->rmax ? b->shift[rank - b->rmin] : 0;
}

/* view_opq: one row of the operator accumulator (kind op only) */
/* Bind v[0..n) to `ins` (as integers; dbl[0..nd) after them as reals) and run it. */
static int insert_row(struct db *db, sqlite3_stmt *ins, const int64_t *v, int n, const double *dbl, int nd)
{
	sqlite3_reset(ins);
	for (int k = 0; k < n; k++)
		db_bind_i64(db, ins, k + 1, v[k]);
	for (int k = 0; k < nd; k++)
		sqlite3_bind_double(ins, n + k + 1, dbl[k]);
	return db_step_done(db, ins, "cannot write the viewer's summary to");
}

static int put_opq(void *ud, int rank, const struct db_opent *o)
{
	struct build *b = ud;
	const int64_t v[5] = { rank, o->kind, o->name_id, o->med_ns, o->p95_ns };
	return insert_row(b->db, b->ins_opq, v, 5, NULL, 0);
}

/* A range closed: add its self time to its view_op row (tag: step, name_id, kind). */
static void credit_self(void *ud, const int64_t tag[3], int64_t self_ns)
{
	struct build *b = ud;
	if (tag[2] == DB_KIND_STEP)
		return;
	int64_t j = opmap_get(&b->ops, b->cur_rank, tag[0], (int)tag[2], tag[1]);
	if (j >= 0)
		b->ops.v[j].self = i64_add_sat(b->ops.v[j].self, self_ns);
}

static void tlbins_free(struct tlbins *t)
{
	free(t->dense);
	free(t->sv);
	free(t->sk);
	memset(t, 0, sizeof *t);
}

static size_t bin_hash(int k, int cap)
{
	return ((uint32_t)k * 2654435761u) & (uint32_t)(cap - 1);
}

/* Put bin x (index k) into the sparse table of cap slots sk/sv. */
static void sparse_put(int *sk, struct tlbin *sv, int cap, int k, const struct tlbin *x)
{
	size_t i = bin_hash(k, cap);
	while (sk[i] >= 0)
		i = (i + 1) & (size_t)(cap - 1);
	sk[i] = k;
	sv[i] = *x;
}

/* Bin k of a lane (0 ≤ k < nbins), zeroed when new; NULL when out of memory. */
static struct tlbin *tl_bin(struct tlbins *t, int k, int nbins)
{
	if (t->dense)
		return &t->dense[k];
	if (t->cap) {
		for (size_t i = bin_hash(k, t->cap);; i = (i + 1) & (size_t)(t->cap - 1)) {
			if (t->sk[i] == k)
				return &t->sv[i];
			if (t->sk[i] < 0)
				break;
		}
	}
	if (t->used + 1 > TL_SPARSE_MAX) {   /* many bins: dense from now on */
		struct tlbin *d = calloc((size_t)nbins, sizeof *d);
		if (!d)
			return NULL;
		for (int i = 0; i < t->cap; i++)
			if (t->sk[i] >= 0)
				d[t->sk[i]] = t->sv[i];
		free(t->sv);
		free(t->sk);
		t->sv = NULL;
		t->sk = NULL;
		t->cap = t->used = 0;
		t->dense = d;
		return &d[k];
	}
	if ((t->used + 1) * 2 > t->cap) {
		int nc = t->cap ? t->cap * 2 : 2;
		int *sk = malloc((size_t)nc * sizeof *sk);
		struct tlbin *sv = malloc((size_t)nc * sizeof *sv);
		if (!sk || !sv) {
			free(sk);
			free(sv);
			return NULL;
		}
		for (int i = 0; i < nc; i++)
			sk[i] = -1;
		for (int i = 0; i < t->cap; i++)
			if (t->sk[i] >= 0)
				sparse_put(sk, sv, nc, t->sk[i], &t->sv[i]);
		free(t->sk);
		free(t->sv);
		t->sk = sk;
		t->sv = sv;
		t->cap = nc;
	}
	struct tlbin zero = { 0 };
	sparse_put(t->sk, t->sv, t->cap, k, &zero);
	t->used++;
	return tl_bin(t, k, nbins);
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return x < y ? -1 : x > y;
}

static void pack_pending(struct tlchunk *ch)
{
	if (!ch->pend_run)
		return;
	ch->len += db_tl_pack(ch->buf + ch->len, ch->pend_off, ch->pend_run, &ch->pend);
	ch->pend_run = 0;
}

static int put_chunk(struct build *b, int tid, struct tlchunk *ch)
{
	pack_pending(ch);
	if (!ch->len)
		return 0;
	sqlite3_stmt *s = b->ins_tl;
	sqlite3_reset(s);
	db_bind_int(b->db, s, 1, b->cur_rank);
	db_bind_int(b->db, s, 2, tid);
	db_bind_i64(b->db, s, 3, ch->no);
	db_bind_i64(b->db, s, 4, ch->n);
	db_bind_i64(b->db, s, 5, ch->busy);
	db_bind_blob_static(b->db, s, 6, ch->buf, ch->len);
	ch->len = 0;
	ch->n = ch->busy = 0;
	return db_step_done(b->db, s, "cannot write the viewer's summary to");
}

/* Add bin k (ascending) to the chunk being packed: it extends the pending record when it follows
 * it with equal values; the chunk before it is written first. */
static int put_bin(struct build *b, int tid, int k, const struct tlbin *x, struct tlchunk *ch)
{
	if (!x->n && !x->c[0] && !x->c[1] && !x->c[2] && !x->c[3])
		return 0;
	int rc = 0;
	if (k / DB_TL_CHUNK != ch->no) {
		rc = put_chunk(b, tid, ch);
		ch->no = k / DB_TL_CHUNK;
	}
	struct db_tl_bin v = { { x->c[0], x->c[1], x->c[2], x->c[3] }, x->n, x->top };
	int off = k % DB_TL_CHUNK;
	if (ch->pend_run && ch->pend_off + ch->pend_run == off && !memcmp(&v, &ch->pend, sizeof v)) {
		ch->pend_run++;
	} else {
		pack_pending(ch);
		ch->pend = v;
		ch->pend_off = off;
		ch->pend_run = 1;
	}
	ch->n = i64_add_sat(ch->n, x->n);
	for (int q = 0; q < 4; q++)
		ch->busy = i64_add_sat(ch->busy, x->c[q]);
	return rc;
}

/* The view_tl rows of the bins the lane touched, in bin order (the table's key order). */
static int put_lane_bins(struct build *b, const struct lane *l)
{
	const struct tlbins *t = &l->bins;
	struct tlchunk *ch = &b->chunk;
	ch->no = -1;
	ch->len = 0;
	ch->n = ch->busy = 0;
	ch->pend_run = 0;
	int rc = 0;
	if (t->dense) {
		for (int k = 0; k < b->nbins && !rc; k++)
			rc = put_bin(b, l->tid, k, &t->dense[k], ch);
		return rc ? rc : put_chunk(b, l->tid, ch);
	}
	/* sparse: (bin index, slot) pairs sorted by bin index */
	int *ks = malloc((size_t)(t->used ? t->used : 1) * 2 * sizeof *ks), nk = 0;
	if (!ks)
		return ascent_error(ASCENT_ENOMEM, "out of memory building the viewer's summary");
	for (int i = 0; i < t->cap; i++)
		if (t->sk[i] >= 0) {
			ks[2 * nk] = t->sk[i];
			ks[2 * nk + 1] = i;
			nk++;
		}
	qsort(ks, (size_t)nk, 2 * sizeof *ks, cmp_int);
	for (int j = 0; j < nk && !rc; j++)
		rc = put_bin(b, l->tid, ks[2 * j], &t->sv[ks[2 * j + 1]], ch);
	free(ks);
	return rc ? rc : put_chunk(b, l->tid, ch);
}

/* The current rank's view_op rows written and the map emptied: it holds one rank's rows at a time
 * (all ranks' at once took 0.78 M rows at 1,024 ranks — a 2 M-slot table of 96-byte rows, 190 MB,
 * 290 MB while it grew — and made the import's peak). */
static int put_ops(struct build *b)
{
	struct db *db = b->db;
	sqlite3_stmt *s = b->ins_op;
	int rc = 0;
	for (size_t i = 0; i < b->ops.cap && !rc; i++) {
		struct opagg *o = &b->ops.v[i];
		if (!o->used || !o->count)
			continue;
		sqlite3_reset(s);
		db_bind_int(db, s, 1, o->rank);
		db_bind_i64(db, s, 2, o->key_step);
		db_bind_int(db, s, 3, o->kind);
		db_bind_i64(db, s, 4, o->name_id);
		db_bind_i64(db, s, 5, o->count);
		db_bind_i64(db, s, 6, o->total);
		db_bind_i64(db, s, 7, o->self);
		db_bind_i64(db, s, 8, o->min);
		db_bind_i64(db, s, 9, o->max);
		db_bind_double(db, s, 10, o->flops);
		db_bind_i64(db, s, 11, o->flops_ns);
		rc = db_step_done(b->db, s, "cannot write the viewer's summary to");
	}
	if (b->ops.n)
		memset(b->ops.v, 0, b->ops.cap * sizeof *b->ops.v);
	b->ops.n = 0;
	return rc;
}

/* Finish the current rank: self times, its operators, lanes and bins. */
static int flush_rank(struct build *b)
{
	struct db *db = b->db;
	db_selftime_flush(&b->self, credit_self, b);
	int rc = put_ops(b);
	if (rc)
		return rc;
	if (b->cur_rank < 0)
		return 0;
	int64_t sh = shift_of(b, b->cur_rank);
	for (int i = 0; i < b->nlanes && !rc; i++) {
		struct lane *l = &b->lanes[i];
		if (!l->n)
			continue;
		const int64_t v[7] = { b->cur_rank, l->tid, sh, l->maxdur, l->n, l->first, l->last };
		rc = insert_row(db, b->ins_lane, v, 7, NULL, 0);
		if (!rc)
			rc = put_lane_bins(b, l);
	}
	for (int i = 0; i < b->nlanes; i++)
		tlbins_free(&b->lanes[i].bins);
	b->nlanes = 0;
	for (int i = 0; i < b->nlslot; i++)
		b->lslot[i] = -1;
	return rc;
}

/* The current rank's lane of thread tid (made on its first event): a hash lookup, as a rank may
 * have 100,000 lanes. NULL when out of memory. */
static struct lane *lane_of(struct build *b, int tid)
{
	size_t mask = (size_t)b->nlslot - 1;
	if (b->nlslot)
		for (size_t i = bin_hash(tid, b->nlslot);; i = (i + 1) & mask) {
			if (b->lslot[i] < 0)
				break;
			if (b->lanes[b->lslot[i]].tid == tid)
				return &b->lanes[b->lslot[i]];
		}
	if ((b->nlanes + 1) * 2 > b->nlslot) {
		int ns = b->nlslot ? b->nlslot * 2 : 64;
		int *s2 = malloc((size_t)ns * sizeof *s2);
		if (!s2)
			return NULL;
		for (int i = 0; i < ns; i++)
			s2[i] = -1;
		for (int l = 0; l < b->nlanes; l++) {
			size_t i = bin_hash(b->lanes[l].tid, ns);
			while (s2[i] >= 0)
				i = (i + 1) & (size_t)(ns - 1);
			s2[i] = l;
		}
		free(b->lslot);
		b->lslot = s2;
		b->nlslot = ns;
	}
	if (ARRAY_GROW(b->lanes, b->nlanes, b->caplanes, 16, "building the viewer's summary"))
		return NULL;
	struct lane *l = &b->lanes[b->nlanes];
	memset(l, 0, sizeof *l);
	l->tid = tid;
	l->first = INT64_MAX;
	size_t i = bin_hash(tid, b->nlslot);
	while (b->lslot[i] >= 0)
		i = (i + 1) & (size_t)(b->nlslot - 1);
	b->lslot[i] = b->nlanes++;
	return l;
}

static int on_event(void *ud, const struct db_event *e)
{
	struct build *b = ud;
	int rank = e->rank, tid = e->tid, kind = e->kind;
	int64_t start = e->start_ns, dur = e->dur_ns, name_id = e->name_id, step = db_stepmap_step(b->steps, e);
	int rc;
	if (rank != b->cur_rank) {
		if ((rc = flush_rank(b)) != 0)
			return rc;
		b->cur_rank = rank;
	}
	if ((rc = db_opdev_event(b->opdev, e)) != 0)   /* every event, as diff's own scan */
		return rc;
	if (!DB_TID_OK(tid))
		return 0;
	if ((rc = db_opacc_event(b->opq, e)) != 0)
		return rc;
	if (kind != DB_KIND_STEP) {
		int64_t slot = opmap_get(&b->ops, rank, step, kind, name_id);
		if (slot < 0)
			return ascent_error(ASCENT_ENOMEM, "out of memory building the viewer's summary");
		struct opagg *o = &b->ops.v[slot];
		o->count++;
		o->total = i64_add_sat(o->total, dur);
		if (dur < o->min)
			o->min = dur;
		if (dur > o->max)
			o->max = dur;
		if (e->flops > 0) {
			o->flops += (double)e->flops;
			o->flops_ns = i64_add_sat(o->flops_ns, dur);
		}
	}
	if ((rc = db_selftime_event(&b->self, tid, start, dur, (int64_t[3]){ step, name_id, kind }, credit_self, b)) != 0)
		return rc;

	/* lanes and timeline bins (aligned time) */
	struct lane *l = lane_of(b, tid);
	if (!l)
		return ascent_error(ASCENT_ENOMEM, "out of memory building the viewer's summary");
	int64_t as = i64_add_sat(start, shift_of(b, rank)), ae = i64_add_sat(as, dur);
	l->n++;
	if (as < l->first)
		l->first = as;
	if (ae > l->last)
		l->last = ae;
	if (kind != DB_KIND_STEP) {
		if (dur > l->maxdur)
			l->maxdur = dur;
		int cls = db_view_class_of(kind);
		int64_t b0 = i64_sub_sat(as, b->T0) / b->bw, b1 = i64_sub_sat(i64_sub_sat(ae, 1), b->T0) / b->bw;
		if (b0 < 0)
			b0 = 0;
		if (b1 >= b->nbins)
			b1 = b->nbins - 1;
		if (b0 < b->nbins) {
			struct tlbin *x = tl_bin(&l->bins, (int)b0, b->nbins);
			if (!x)
				return ascent_error(ASCENT_ENOMEM, "out of memory building the viewer's summary");
			x->n++;
		}
		for (int64_t k = b0; k <= b1; k++) {
			int64_t lo = b->T0 + k * b->bw, hi = lo + b->bw;
			int64_t ov = (ae < hi ? ae : hi) - (as > lo ? as : lo);
			if (ov <= 0)
				continue;
			struct tlbin *x = tl_bin(&l->bins, (int)k, b->nbins);
			if (!x)
				return ascent_error(ASCENT_ENOMEM, "out of memory building the viewer's summary");
			x->c[cls] += ov;
			if (cls < 3 && ov > x->topov) {
				x->topov = ov;
				x->top = name_id;
			}
		}
	}
	/* collectives and p2p, for matching after the pass */
	if (kind == DB_KIND_COMM || kind == DB_KIND_P2P) {
		int has_comm = e->comm_id >= 0 && e->seq >= 0;
		int64_t peer = e->peer;
		if (b->ncm == b->capcm) {
			size_t nc = b->capcm ? b->capcm * 2 : 1024;
			struct commrow *c2 = realloc(b->cm, nc * sizeof *c2);
			if (!c2)
				return ascent_error(ASCENT_ENOMEM, "out of memory building the viewer's summary");
			b->cm = c2;
			b->capcm = nc;
		}
		struct commrow *c = &b->cm[b->ncm++];
		memset(c, 0, sizeof *c);
		c->rank = rank;
		c->kind = kind;
		c->step = step;
		c->name_id = name_id;
		c->bytes = e->bytes;
		c->comm_id = has_comm ? e->comm_id : -1;
		c->seq = has_comm ? e->seq : -1;
		c->peer = peer;
		c->start = as;
		c->end = ae;
		if (kind == DB_KIND_COMM && b->queue) {
			sqlite3_reset(b->queue);
			db_bind_i64(b->db, b->queue, 1, rank);
			db_bind_i64(b->db, b->queue, 2, tid);
			db_bind_i64(b->db, b->queue, 3, start);
			db_bind_i64(b->db, b->queue, 4, name_id);
			int src = db_step(b->db, b->queue);
			if (src == SQLITE_ROW)
				c->queue = sqlite3_column_int64(b->queue, 0);
			else if ((rc = db_step_check(b->db, src, b->queue, NULL)) != 0)
				return rc;
		}
		if (kind == DB_KIND_P2P) {
			int side = name_id > 0 && name_id < b->nnames ? b->isrecv[name_id] : DB_P2P_SEND;
			if (has_comm)
				peer = db_peermap_world(&b->peers, e->comm_id, (int)peer);
			c->peer = peer;
			int64_t k1, k2;
			db_p2p_key(side, rank, peer, &k1, &k2);
			c->k1 = k1;
			c->k2 = k2;
		}
	}
	return 0;
}

static int cmp_commrow(const void *a, const void *b)
{
	const struct commrow *x = a, *y = b;
	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->comm_id != y->comm_id)
		return x->comm_id < y->comm_id ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->k1 != y->k1)
		return x->k1 < y->k1 ? -1 : 1;
	if (x->k2 != y->k2)
		return x->k2 < y->k2 ? -1 : 1;
	return x->rank - y->rank;
}

/* Match calls across ranks by (kind, comm_id, seq[, sender, receiver]): wait = last arrival − own
 * start, transit = own end − last arrival, late = own start − first arrival. Then write view_comm
 * and view_pair. */
static int write_comms(struct build *b)
{
	struct db *db = b->db;
	if (b->ncm > 1)   /* b->cm is NULL when the profile has no collectives */
		qsort(b->cm, b->ncm, sizeof *b->cm, cmp_commrow);
	struct opmap pairs = { 0 };   /* reuse the map: rank=src, kind=dst, key_step=step */
	int rc = 0;
	for (size_t i = 0; i < b->ncm && !rc;) {
		size_t j = i + 1;
		if (b->cm[i].comm_id >= 0 && b->cm[i].seq >= 0)
			while (j < b->ncm && b->cm[j].kind == b->cm[i].kind && b->cm[j].comm_id == b->cm[i].comm_id &&
			       b->cm[j].seq == b->cm[i].seq && b->cm[j].k1 == b->cm[i].k1 && b->cm[j].k2 == b->cm[i].k2)
				j++;
		if (j - i >= 2) {
			int64_t last = b->cm[i].start, first = b->cm[i].start;
			for (size_t k = i; k < j; k++) {
				if (b->cm[k].start > last)
					last = b->cm[k].start;
				if (b->cm[k].start < first)
					first = b->cm[k].start;
			}
			for (size_t k = i; k < j; k++) {
				struct commrow *c = &b->cm[k];
				int64_t arr = last < c->end ? last : c->end;
				c->matched = 1;
				c->wait = arr - c->start;
				c->transit = c->end - arr;
				c->late = c->start - first;
				if (c->kind == DB_KIND_COMM) {
					/* each member's bytes spread evenly over the other members */
					int64_t share = c->bytes / (int64_t)(j - i - 1);
					for (size_t q = i; q < j && !rc; q++) {
						if (q == k || b->cm[q].rank == c->rank)
							continue;
						int64_t s = opmap_get(&pairs, c->rank, c->step, b->cm[q].rank, 0);
						if (s < 0)
							rc = ascent_error(ASCENT_ENOMEM, "out of memory");
						else {
							pairs.v[s].count++;
							pairs.v[s].total += share;
						}
					}
				}
			}
		}
		/* p2p traffic: sends (sender = k1) count, matched or not */
		for (size_t k = i; k < j && !rc; k++) {
			struct commrow *c = &b->cm[k];
			if (c->kind == DB_KIND_P2P && c->rank == c->k1 && c->peer >= 0) {
				int64_t s = opmap_get(&pairs, c->rank, c->step, (int)c->peer, 0);
				if (s < 0)
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				else {
					pairs.v[s].count++;
					pairs.v[s].total += c->bytes;
				}
			}
		}
		i = j;
	}
	/* aggregate per (rank, step, kind, name, bucket, comm_id) */
	struct agg {
		int rank, kind;
		int64_t step, name_id, bucket, comm_id, count, total, bytes, matched, wait, transit, late, queue;
	};
	struct agg *ag = NULL;
	size_t nag = 0, capag = 0;
	struct opmap idx = { 0 };     /* key → index: rank, step, kind*1e6+bucket_log, name_id ⊕ comm_id */
	for (size_t k = 0; k < b->ncm && !rc; k++) {
		struct commrow *c = &b->cm[k];
		int64_t bk = db_bytes_bucket(c->bytes);
		int lg = 0;
		while (lg < 62 && ((int64_t)1 << lg) < bk)
			lg++;
		int64_t s = opmap_get(&idx, c->rank, c->step, c->kind * 64 + lg, c->name_id * 65536 + (c->comm_id + 1));
		if (s < 0) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		struct opagg *o = &idx.v[s];
		if (!o->count) {
			if (nag == capag) {
				capag = capag ? capag * 2 : 256;
				struct agg *a2 = realloc(ag, capag * sizeof *a2);
				if (!a2) {
					rc = ascent_error(ASCENT_ENOMEM, "out of memory");
					break;
				}
				ag = a2;
			}
			ag[nag] = (struct agg){ .rank = c->rank, .kind = c->kind, .step = c->step, .name_id = c->name_id,
						.bucket = bk, .comm_id = c->comm_id };
			o->total = (int64_t)nag++;
		}
		o->count = 1;
		struct agg *a = &ag[o->total];
		a->count++;
		a->total += c->end - c->start;
		a->bytes += c->bytes;
		a->queue += c->queue;
		if (c->matched) {
			a->matched++;
			a->wait += c->wait;
			a->transit += c->transit;
			a->late += c->late;
		}
	}
	sqlite3_stmt *s = NULL;
	char sql[512];
	snprintf(sql, sizeof sql, "INSERT INTO %sview_comm VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)", b->pfx);
	if (!rc)
		rc = db_prep(b->db, sql, &s);
	for (size_t k = 0; k < nag && !rc; k++) {
		struct agg *a = &ag[k];
		const int64_t v[14] = { a->rank, a->step, a->kind, a->name_id, a->bucket, a->comm_id, a->count, a->total,
					a->bytes, a->matched, a->wait, a->transit, a->late, a->queue };
		rc = insert_row(db, s, v, 14, NULL, 0);
	}
	sqlite3_finalize(s);
	s = NULL;
	snprintf(sql, sizeof sql, "INSERT INTO %sview_pair VALUES(?1,?2,?3,?4,?5)", b->pfx);
	if (!rc)
		rc = db_prep(b->db, sql, &s);
	for (size_t k = 0; k < pairs.cap && !rc; k++) {
		struct opagg *o = &pairs.v[k];
		if (!o->used)
			continue;
		const int64_t v[5] = { o->key_step, o->rank, o->kind, o->count, o->total };
		rc = insert_row(db, s, v, 5, NULL, 0);
	}
	sqlite3_finalize(s);
	free(ag);
	free(idx.v);
	free(pairs.v);
	return rc;
}

/* view_opstep: the ranks' view_op rows of each step added up */
static int write_opstep(struct build *b)
{
	char sql[256];
	snprintf(sql, sizeof sql,
		 "INSERT INTO %sview_opstep SELECT step, kind, name_id, sum(count), sum(total_ns), sum(self_ns),"
		 " min(min_ns), max(max_ns), sum(flops), sum(flops_ns) FROM %sview_op GROUP BY step, kind, name_id",
		 b->pfx, b->pfx);
	return db_exec(b->db, sql);
}

/* Memory: peaks per (rank, device, category) and each device's total in use over time, max per bin. */
static int write_mem(struct build *b)
{
	struct db *db = b->db;
	sqlite3_stmt *q = NULL, *ip = NULL, *im = NULL;
	const char *dev = db_mem_device_sql(db);
	char *qs = sqlite3_mprintf("SELECT rank, ts_ns, bytes, category, in_use, %s FROM mem_event ORDER BY rank, %s,"
				   " ts_ns, rowid", dev, dev);
	int rc = qs ? db_prep(b->db, qs, &q) : ascent_error(ASCENT_ENOMEM, "out of memory");
	sqlite3_free(qs);
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT INTO %sview_mempeak VALUES(?1,?2,?3,?4,?5,?6,?7,?8)", b->pfx);
	if (!rc)
		rc = db_prep(b->db, sql, &ip);
	snprintf(sql, sizeof sql, "INSERT INTO %sview_mem VALUES(?1,?2,?3,?4)", b->pfx);
	if (!rc)
		rc = db_prep(b->db, sql, &im);
	int64_t memw = (b->T1 - b->T0 + VIEW_MEM_BINS - 1) / VIEW_MEM_BINS;
	if (memw < 1)
		memw = 1;
	struct { int64_t peak, peak_ts, fin, allocs, frees, cur; int seen; } cat[DB_MEM_COUNT];
	int64_t bins[VIEW_MEM_BINS];
	int rank = INT32_MIN, device = INT32_MIN, src = SQLITE_DONE;
	int64_t lastbin = -1, total = 0;
	for (;;) {
		int r = 0, d = 0, end = 0;
		int64_t ts = 0, bytes = 0, inuse = 0;
		int c = 0;
		if (!rc) {
			src = db_step(db, q);
			if (src == SQLITE_ROW) {
				r = sqlite3_column_int(q, 0);
				ts = sqlite3_column_int64(q, 1);
				bytes = sqlite3_column_int64(q, 2);
				c = sqlite3_column_int(q, 3);
				inuse = sqlite3_column_int64(q, 4);
				d = sqlite3_column_int(q, 5);
			} else {
				end = 1;
				if (src != SQLITE_DONE)
					rc = db_sql_err(b->db, src, "cannot read memory events of", NULL);
			}
		}
		if (rc)
			break;
		int next = end || r != rank || d != device;
		if (next && rank != INT32_MIN) {
			for (int k = 0; k < DB_MEM_COUNT && !rc; k++) {
				if (!cat[k].seen)
					continue;
				int64_t v[8] = { rank, device, k, cat[k].peak, cat[k].peak_ts, cat[k].fin, cat[k].allocs,
						 cat[k].frees };
				sqlite3_reset(ip);
				for (int x = 0; x < 8; x++)
					db_bind_i64(db, ip, x + 1, v[x]);
				rc = db_step_done(b->db, ip, "cannot write the viewer's summary to");
			}
			/* carry the level forward to the last bin of the span */
			for (int64_t k = 0; k < VIEW_MEM_BINS && !rc; k++) {
				if (bins[k] < 0)
					continue;
				sqlite3_reset(im);
				db_bind_int(db, im, 1, rank);
				db_bind_int(db, im, 2, device);
				db_bind_i64(db, im, 3, k);
				db_bind_i64(db, im, 4, bins[k]);
				rc = db_step_done(b->db, im, "cannot write the viewer's summary to");
			}
		}
		if (end || rc)
			break;
		if (next) {
			rank = r;
			device = d;
			memset(cat, 0, sizeof cat);
			for (int k = 0; k < VIEW_MEM_BINS; k++)
				bins[k] = -1;
			lastbin = -1;
			total = 0;
		}
		if (c < 0 || c >= DB_MEM_COUNT)
			c = DB_MEM_OTHER;
		if (!cat[c].seen || inuse > cat[c].peak) {
			cat[c].peak = inuse;
			cat[c].peak_ts = ts;
		}
		cat[c].seen = 1;
		cat[c].fin = inuse;
		if (bytes >= 0)
			cat[c].allocs++;
		else
			cat[c].frees++;
		int64_t before = total;
		total += inuse - cat[c].cur;
		cat[c].cur = inuse;
		int64_t bin = (ts + shift_of(b, r) - b->T0) / memw;
		if (bin < 0)
			bin = 0;
		if (bin >= VIEW_MEM_BINS)
			bin = VIEW_MEM_BINS - 1;
		/* bins from the previous event up to this one hold at least the previous level */
		for (int64_t k = lastbin + 1; lastbin >= 0 && k <= bin; k++)
			if (bins[k] < before)
				bins[k] = before;
		if (bins[bin] < total)
			bins[bin] = total;
		lastbin = bin;
	}
	sqlite3_finalize(q);
	sqlite3_finalize(ip);
	sqlite3_finalize(im);
	return rc;
}

static void build_free(struct build *b)
{
	free(b->shift);
	free(b->ops.v);
	db_selftime_free(&b->self);
	db_opacc_free(b->opq);
	for (int i = 0; i < b->nlanes; i++)
		tlbins_free(&b->lanes[i].bins);
	free(b->lanes);
	free(b->lslot);
	free(b->cm);
	free(b->isrecv);
	db_peermap_free(&b->peers);
	sqlite3_finalize(b->ins_lane);
	sqlite3_finalize(b->queue);
	sqlite3_finalize(b->ins_tl);
	sqlite3_finalize(b->ins_opq);
	sqlite3_finalize(b->ins_op);
	sqlite3_finalize(b->ins_opdev);
	sqlite3_finalize(b->ins_launch);
	db_opdev_free(b->opdev);
	db_stepmap_free(b->steps);
}

/* view_opdev and view_launch: one rank's operators with the device work they launched */
static int put_opdev(void *ud, int rank, const struct db_opdev_name *acc, const int64_t *touched, int64_t ntouched,
		     const struct db_opdev_rank *tot)
{
	struct build *b = ud;
	int rc = 0;
	for (int64_t i = 0; i < ntouched && !rc; i++) {
		const struct db_opdev_name *a = &acc[touched[i]];
		const int64_t v[7] = { rank, touched[i], a->count, a->cpu_ns, a->launched, a->device_ns, a->self_ns };
		rc = insert_row(b->db, b->ins_opdev, v, 7, NULL, 0);
	}
	if (rc || !tot->linked)
		return rc;
	const int64_t w[5] = { rank, tot->linked, tot->linked_ns, tot->unattributed, tot->unattributed_ns };
	return insert_row(b->db, b->ins_launch, w, 5, NULL, 0);
}

/* view_stepwork: db_step_work over the whole profile (a filter selects rows of it: db_view_step_work) */
static int write_stepwork(struct db *db, const char *pfx)
{
	struct db_step_work *w = NULL;
	int n = 0;
	int rc = db_step_work(db, DB_FILTER_ALL, &w, &n);
	if (rc || !n) {
		free(w);
		return rc;
	}
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT INTO %sview_stepwork VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)", pfx);
	sqlite3_stmt *ins = NULL;
	rc = db_prep(db, sql, &ins);
	for (int i = 0; !rc && i < n; i++) {
		const struct db_step_work *x = &w[i];
		const int64_t v[13] = { i, x->rank, x->where, x->step, x->step_start_ns, x->step_end_ns, x->events,
					x->device_ns, x->busy_ns, x->compute_ns, x->in_window_ns, x->first_start_ns,
					x->last_end_ns };
		rc = insert_row(db, ins, v, 13, NULL, 0);
	}
	sqlite3_finalize(ins);
	free(w);
	return rc;
}

/* view_link: the communication matrix's rank cells (db_comm_matrix: point-to-point, two-member
 * collectives, ring links), matched cells only (one-sided calls have no link time). */
static int write_links(struct db *db, const char *pfx)
{
	struct db_comm_matrix m;
	int rc = db_comm_matrix(db, &m);
	if (rc)
		return rc;
	char sql[128];
	snprintf(sql, sizeof sql, "INSERT INTO %sview_link VALUES(?1,?2,?3,?4,?5,?6)", pfx);
	sqlite3_stmt *ins = NULL;
	rc = db_prep(db, sql, &ins);
	for (int i = 0; i < m.ncells && !rc; i++) {
		const struct db_matrix_cell *c = &m.cells[i];
		if (!c->transfers)
			continue;
		const int64_t v[6] = { c->via, c->src, c->dst, c->transfers, c->bytes, c->time_ns };
		rc = insert_row(db, ins, v, 6, NULL, 0);
	}
	sqlite3_finalize(ins);
	db_comm_matrix_free(&m);
	return rc;
}

/* Each rank's events on timeline lanes (valid thread ids: what view_lane's n sums), counted from
 * the events themselves so that the device tables need not wait for the main pass. */
struct rank_events {
	int *rank;
	int64_t *events;
	int n;
};

static void rank_events_free(struct rank_events *r)
{
	free(r->rank);
	free(r->events);
	memset(r, 0, sizeof *r);
}

static int rank_events_read(struct db *db, struct rank_events *r)
{
	memset(r, 0, sizeof *r);
	sqlite3_stmt *q = NULL;
	int rc = db_prep(db, "SELECT rank, count(*) FROM event WHERE tid BETWEEN 0 AND ?1 GROUP BY rank ORDER BY rank", &q);
	int src = SQLITE_DONE, cap = 0, cap2 = 0;
	if (!rc)
		db_bind_i64(db, q, 1, DB_TID_MAX);
	while (!rc && (src = db_step(db, q)) == SQLITE_ROW) {
		if ((rc = ARRAY_GROW(r->rank, r->n, cap, 64, "the viewer's summary")) != 0 ||
		    (rc = ARRAY_GROW(r->events, r->n, cap2, 64, "the viewer's summary")) != 0)
			break;
		r->rank[r->n] = sqlite3_column_int(q, 0);
		r->events[r->n++] = sqlite3_column_int64(q, 1);
	}
	if (q)
		rc = db_finish(db, q, src, rc);
	if (rc)
		rank_events_free(r);
	return rc;
}

/* write_devices' inserts: [0..3) the whole run's tables, [3..6) the per-step ones (a trailing step). */
struct devwrite {
	struct db *db;
	sqlite3_stmt *ins[6];
};

static int put_device(void *ud, int64_t step, const struct db_device_stat *x)
{
	struct devwrite *w = ud;
	struct db *db = w->db;
	sqlite3_stmt **ins = step < 0 ? w->ins : w->ins + 3;
	if (step >= 0) {   /* bound before insert_row, whose reset keeps it */
		db_bind_i64(db, ins[0], 24, step);
		db_bind_i64(db, ins[1], 12, step);
		db_bind_i64(db, ins[2], 14, step);
	}
	const int64_t v[23] = { x->rank, x->device, x->counted, x->after_last_step, x->unlinked, x->span_ns, x->busy_ns,
				x->compute_ns, x->comm_ns, x->comm_under_compute_ns, x->class_ns[1], x->class_ns[2],
				x->class_ns[3], x->class_ns[4], x->class_ns[5], x->class_ns[6], x->class_ns[7],
				x->idle_by_cause_ns[DB_IDLE_HOST_WAIT], x->idle_by_cause_ns[DB_IDLE_KERNEL_WAIT],
				x->idle_by_cause_ns[DB_IDLE_OTHER], x->linked, x->launch_delay_p50_ns,
				x->launch_delay_p95_ns };
	int rc = insert_row(db, ins[0], v, 23, NULL, 0);
	for (int k = 0; !rc && k < DB_COPY_KINDS; k++) {
		const struct db_copy_stat *c = &x->copies[k];
		const int64_t cv[8] = { x->rank, x->device, k, c->count, c->bytes, c->total_ns, c->no_bytes, c->bw_samples };
		const double cd[3] = { c->bw_mean_gbs, c->bw_min_gbs, c->bw_max_gbs };
		rc = insert_row(db, ins[1], cv, 8, cd, 3);
	}
	for (int k = 0; !rc && k < x->nstreams; k++) {
		const struct db_stream_stat *t = &x->streams[k];
		const int64_t sv[5] = { x->rank, x->device, t->stream, t->kernels, t->linked };
		const double q = t->queue_len_mean;
		const int64_t sv2[7] = { t->queue_len_max, t->launch_delay_p50_ns, t->launch_delay_p95_ns,
					 t->short_kernels, t->idle_ns[DB_IDLE_HOST_WAIT], t->idle_ns[DB_IDLE_KERNEL_WAIT],
					 t->idle_ns[DB_IDLE_OTHER] };
		/* columns: the five integers, the mean (real), then seven integers */
		sqlite3_reset(ins[2]);
		for (int j = 0; j < 5; j++)
			db_bind_i64(db, ins[2], j + 1, sv[j]);
		sqlite3_bind_double(ins[2], 6, q);
		for (int j = 0; j < 7; j++)
			db_bind_i64(db, ins[2], j + 7, sv2[j]);
		rc = db_step_done(db, ins[2], "cannot write the viewer's summary to");
	}
	return rc;
}

/* *cached: 0 when a rank is over DB_VIEW_DEV_MAX_EVENTS (no tables written: computed when viewed);
 * *stepped: 1 when each single step's figures were written too (view_devstep, ...: at most
 * DB_VIEW_DEVSTEP_MAX devices × steps), in the same read of the device events. */
static int write_devices(struct db *db, const char *pfx, const struct rank_events *re, int *cached, int *stepped)
{
	*stepped = 0;
	int64_t most = 0;
	for (int i = 0; i < re->n; i++)
		most = re->events[i] > most ? re->events[i] : most;
	*cached = most <= DB_VIEW_DEV_MAX_EVENTS;
	if (!*cached || !db_has_table(db, "device_lane"))
		return 0;
	int64_t devices = 0, steps = 0;
	int rc = db_scalar_i64(db, "SELECT count(*) FROM (SELECT DISTINCT rank, device FROM device_lane)", &devices, NULL);
	if (!rc)
		rc = db_scalar_i64(db, "SELECT count(DISTINCT step) FROM event WHERE kind = " DB_SQL_KIND_STEP
				   " AND step IS NOT NULL", &steps, NULL);
	struct devwrite w = { .db = db };
	static const char *const TMPL[6] = {
		"INSERT INTO %sview_device VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,?23)",
		"INSERT INTO %sview_devcopy VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)",
		"INSERT INTO %sview_stream VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13)",
		("INSERT INTO %sview_devstep VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16,?17,?18,?19,?20,?21,?22,"
		 "?23,?24)"),
		"INSERT INTO %sview_devcopystep VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12)",
		"INSERT INTO %sview_streamstep VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)",
	};
	for (int k = 0; k < 6 && !rc; k++) {
		char sql[256];
		snprintf(sql, sizeof sql, TMPL[k], pfx);
		rc = db_prep(db, sql, &w.ins[k]);
	}
	if (!rc)
		rc = db_device_stats_each(db, devices * steps <= DB_VIEW_DEVSTEP_MAX, put_device, &w, stepped);
	for (int k = 0; k < 6; k++)
		sqlite3_finalize(w.ins[k]);
	return rc;
}

/* One rank's path into view_critpath and view_cptop. */
static int write_critpath_rank(struct db *db, const char *pfx, int rank);

/* view_critpath, view_cptop: db_critpath over each whole rank of at most DB_VIEW_CP_MAX_EVENTS events,
 * one rank at a time, so that one rank's graph is in memory at once (db_view_critpath reads them back);
 * *skipped: the ranks over the bound. */
static int write_critpath(struct db *db, const char *pfx, const struct rank_events *re, int64_t *skipped)
{
	*skipped = 0;
	int rc = 0;
	for (int i = 0; !rc && i < re->n; i++) {
		if (re->events[i] > DB_VIEW_CP_MAX_EVENTS)
			(*skipped)++;
		else
			rc = write_critpath_rank(db, pfx, re->rank[i]);
	}
	return rc;
}

static int write_critpath_rank(struct db *db, const char *pfx, int rank)
{
	struct db_critpath *c = NULL;
	int n = 0;
	const struct db_critpath_opts o = { .top = DB_VIEW_CP_TOP };
	int rc = db_critpath(db, (struct db_filter){ rank, -1, -1 }, &o, &c, &n);
	if (rc || !n) {
		db_critpath_free(c, n);
		return rc;
	}
	sqlite3_stmt *ins = NULL, *top = NULL;
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT INTO %sview_critpath VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14,?15,?16)",
		 pfx);
	rc = db_prep(db, sql, &ins);
	snprintf(sql, sizeof sql, "INSERT INTO %sview_cptop VALUES(?1,?2,?3,?4,?5,?6)", pfx);
	if (!rc)
		rc = db_prep(db, sql, &top);
	for (int i = 0; !rc && i < n; i++) {
		const struct db_critpath *x = &c[i];
		const int64_t v[16] = { x->rank, x->cycle, x->window_lo_ns, x->window_hi_ns, x->start_ns, x->end_ns,
					x->length_ns, x->cause_ns[DB_CP_CPU], x->cause_ns[DB_CP_GPU_COMPUTE],
					x->cause_ns[DB_CP_GPU_COMM], x->cause_ns[DB_CP_KERNEL_KERNEL], x->cause_ns[DB_CP_LAUNCH],
					x->nodes, x->edges, x->path_nodes, x->path_events };
		rc = insert_row(db, ins, v, 16, NULL, 0);
		for (int k = 0; !rc && k < x->ntop; k++) {
			sqlite3_reset(top);
			db_bind_i64(db, top, 1, x->rank);
			db_bind_i64(db, top, 2, k);
			sqlite3_bind_text(top, 3, x->top[k].name ? x->top[k].name : "", -1, SQLITE_TRANSIENT);
			db_bind_i64(db, top, 4, x->top[k].cause);
			db_bind_i64(db, top, 5, x->top[k].ns);
			db_bind_i64(db, top, 6, x->top[k].events);
			rc = db_step_done(db, top, "cannot write the viewer's summary to");
		}
	}
	sqlite3_finalize(ins);
	sqlite3_finalize(top);
	db_critpath_free(c, n);
	return rc;
}

static int set_info(struct db *db, const char *pfx, const char *key, int64_t v)
{
	char sql[256];
	snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO %sview_info VALUES('%s', %lld)", pfx, key, (long long)v);
	return db_exec(db, sql);
}

/* Every table but the device ones: one pass over the events in nesting order (lanes and timeline
 * bins, operators, collectives, memory, the operators' device work), then the links and steps. */
static int build_main_tables(struct db *db, const char *pfx)
{
	db->view_est_ok = 0;   /* db_view_lane_bins' estimate is of the tables built before */
	struct build b = { .db = db, .pfx = pfx, .cur_rank = -1 };
	int rc = 0;
	/* clock shifts per rank onto the lowest rank's clock */
	struct db_rank_info *ri = NULL;
	int nr = 0;
	if ((rc = db_ranks(db, &ri, &nr)) != 0)
		return rc;
	int64_t emin = 0, emax = 0;
	int null = 0;
	rc = db_scalar_i64(db, "SELECT min(rank) FROM event", &emin, &null);
	if (!rc)
		rc = db_scalar_i64(db, "SELECT max(rank) FROM event", &emax, NULL);
	if (rc || null) {
		db_ranks_free(ri, nr);
		return rc;
	}
	b.rmin = (int)emin;
	b.rmax = (int)emax;
	for (int i = 0; i < nr; i++) {
		if (ri[i].rank < b.rmin)
			b.rmin = ri[i].rank;
		if (ri[i].rank > b.rmax)
			b.rmax = ri[i].rank;
	}
	b.shift = calloc((size_t)(b.rmax - b.rmin + 1), sizeof *b.shift);
	if (!b.shift) {
		db_ranks_free(ri, nr);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int64_t base = nr ? ri[0].t0_ns : 0;
	for (int i = 0; i < nr; i++)
		b.shift[ri[i].rank - b.rmin] = ri[i].t0_ns + ri[i].clock_offset_ns - base;
	db_ranks_free(ri, nr);
	/* aligned span: per rank min start and max end (the primary key makes min cheap) */
	b.T0 = INT64_MAX;
	b.T1 = INT64_MIN;
	{
		sqlite3_stmt *s = NULL;
		rc = db_prep(db, "SELECT rank, min(start_ns), max(start_ns + dur_ns) FROM event GROUP BY rank", &s);
		int src = SQLITE_DONE;
		while (!rc && (src = db_step(db, s)) == SQLITE_ROW) {
			int r = sqlite3_column_int(s, 0);
			int64_t lo = sqlite3_column_int64(s, 1) + shift_of(&b, r), hi = sqlite3_column_int64(s, 2) + shift_of(&b, r);
			if (lo < b.T0)
				b.T0 = lo;
			if (hi > b.T1)
				b.T1 = hi;
		}
		if (!rc && src != SQLITE_DONE)
			rc = db_sql_err(db, src, "cannot read", NULL);
		sqlite3_finalize(s);
	}
	if (rc)
		goto out;
	if (b.T1 <= b.T0)
		b.T1 = b.T0 + 1;
	b.nbins = VIEW_TL_BINS;
	b.bw = (b.T1 - b.T0 + b.nbins - 1) / b.nbins;
	if (b.bw < 1)
		b.bw = 1;
	/* names */
	{
		char **names = NULL;
		if ((rc = db_strings(db, &names, &b.nnames)) != 0)
			goto out;
		b.isrecv = calloc((size_t)b.nnames + 1, 1);
		if (b.isrecv)
			for (int64_t i = 1; i < b.nnames; i++)
				b.isrecv[i] = (unsigned char)db_p2p_side(names[i]);
		db_strings_free(names, b.nnames);
		if (!b.isrecv) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			goto out;
		}
		if ((rc = db_peermap_load(db, &b.peers)) != 0)
			goto out;
	}
	char sql[1024];
	snprintf(sql, sizeof sql, "INSERT INTO %sview_lane VALUES(?1,?2,?3,?4,?5,?6,?7)", pfx);
	if ((rc = db_prep(db, sql, &b.ins_lane)) != 0)
		goto out;
	snprintf(sql, sizeof sql, "INSERT INTO %sview_tl VALUES(?1,?2,?3,?4,?5,?6)", pfx);
	if ((rc = db_prep(db, sql, &b.ins_tl)) != 0)
		goto out;
	snprintf(sql, sizeof sql, "INSERT INTO %sview_opq VALUES(?1,?2,?3,?4,?5)", pfx);
	if ((rc = db_prep(db, sql, &b.ins_opq)) != 0)
		goto out;
	snprintf(sql, sizeof sql, "INSERT INTO %sview_op VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)", pfx);
	if ((rc = db_prep(db, sql, &b.ins_op)) != 0)
		goto out;
	if ((rc = db_opacc_new(db, 1u << DB_KIND_OP, 0, &b.opq)) != 0)
		goto out;
	if (db_schema_version(db) >= 2 &&
	    (rc = db_prep(db, "SELECT CASE WHEN json_valid(args) THEN json_extract(args, '$.queue_ns') END FROM arg"
			  " WHERE rank = ?1 AND tid = ?2 AND start_ns = ?3 AND kind = " DB_SQL_KIND_COMM " AND name_id = ?4"
			  " LIMIT 1", &b.queue)) != 0)
		goto out;
	snprintf(sql, sizeof sql, "INSERT INTO %sview_opdev VALUES(?1,?2,?3,?4,?5,?6,?7)", pfx);
	if ((rc = db_prep(db, sql, &b.ins_opdev)) != 0)
		goto out;
	snprintf(sql, sizeof sql, "INSERT INTO %sview_launch VALUES(?1,?2,?3,?4,?5)", pfx);
	if ((rc = db_prep(db, sql, &b.ins_launch)) != 0)
		goto out;
	if ((rc = db_stepmap_new(db, &b.steps)) != 0)
		goto out;
	if ((rc = db_opdev_new(db, DB_FILTER_ALL, b.nnames, put_opdev, &b, &b.opdev)) != 0)
		goto out;
	rc = db_each_event_nested(db, DB_FILTER_ALL, on_event, &b);
	if (!rc)
		rc = db_opdev_finish(b.opdev);
	if (!rc)
		rc = flush_rank(&b);
	if (!rc)
		rc = db_opacc_rows(b.opq, put_opq, &b);
	if (!rc)
		rc = write_opstep(&b);
	if (!rc)
		rc = write_comms(&b);
	if (!rc)
		rc = write_mem(&b);
	if (!rc)
		rc = write_links(db, pfx);
	if (!rc) {
		snprintf(sql, sizeof sql,
			 "INSERT INTO %sview_step SELECT e.step, avg((SELECT c.value FROM counter c WHERE c.rank = e.rank"
			 " AND c.name_id = (SELECT id FROM string WHERE value = 'loss') AND c.ts_ns >= e.start_ns"
			 " AND c.ts_ns <= e.start_ns + e.dur_ns ORDER BY c.ts_ns DESC LIMIT 1))"
			 " FROM event e WHERE e.kind = " DB_SQL_KIND_STEP " AND e.step IS NOT NULL GROUP BY e.step", pfx);
		rc = db_exec(db, sql);
	}
	if (!rc)
		rc = set_info(db, pfx, "t0_ns", b.T0);
	if (!rc)
		rc = set_info(db, pfx, "t1_ns", b.T1);
	if (!rc)
		rc = set_info(db, pfx, "bin_ns", b.bw);
	if (!rc)
		rc = set_info(db, pfx, "bins", b.nbins);
	if (!rc)
		rc = set_info(db, pfx, "mem_bins", VIEW_MEM_BINS);
	if (!rc)
		rc = set_info(db, pfx, "version", VIEW_CACHE_VERSION);
out:
	build_free(&b);
	return rc;
}

/* The device tables: device work per launching step, per-device figures, critical paths (each a
 * computation of its own over the events, independent of build_main_tables' pass). */
static int build_device_tables(struct db *db, const char *pfx)
{
	struct rank_events re;
	int rc = rank_events_read(db, &re);
	if (rc)
		return rc;
	rc = write_stepwork(db, pfx);
	int dev_cached = 0, dev_stepped = 0;
	if (!rc)
		rc = write_devices(db, pfx, &re, &dev_cached, &dev_stepped);
	if (!rc)
		rc = set_info(db, pfx, "devices_cached", dev_cached);
	if (!rc)
		rc = set_info(db, pfx, "devices_by_step", dev_stepped);
	int64_t cp_skipped = 0;
	if (!rc)
		rc = write_critpath(db, pfx, &re, &cp_skipped);
	rank_events_free(&re);
	return rc ? rc : set_info(db, pfx, "critpath_skipped", cp_skipped);
}

enum { BUILD_MAIN = 1, BUILD_DEVICE = 2 };

/* The summary tables made afresh under prefix pfx ("main." or "temp.") and the parts asked for
 * filled (BUILD_MAIN | BUILD_DEVICE: all). */
static int build_into(struct db *db, const char *pfx, int parts)
{
	int rc = exec_prefixed(db, VIEW_DROP, pfx);
	if (!rc)
		rc = exec_prefixed(db, VIEW_TABLES, pfx);
	if (!rc)
		rc = exec_prefixed(db, VIEW_TABLES2, pfx);
	if (!rc && (parts & BUILD_MAIN))
		rc = build_main_tables(db, pfx);
	if (!rc && (parts & BUILD_DEVICE))
		rc = build_device_tables(db, pfx);
	return rc;
}

/* The index of an operator's instances, slowest first. Its sort runs with a small page cache:
 * SQLite's sorter sizes its in-memory runs by the cache, and on the 4 M-event bench trace a 64 MB
 * cache made the statement 2.75 s and 136 MB against 2.2 s and 13 MB with 4 MB (temporary files
 * either way). */
static int create_name_index(struct db *db)
{
	int64_t cache = 0;
	int rc = db_scalar_i64(db, "PRAGMA cache_size", &cache, NULL);
	if (!rc)
		rc = db_exec(db, "PRAGMA cache_size = -4096");
	if (!rc)
		rc = db_exec(db, "CREATE INDEX IF NOT EXISTS view_event_name ON event(name_id, dur_ns)");
	char sql[64];
	snprintf(sql, sizeof sql, "PRAGMA cache_size = %lld", (long long)cache);
	int rc2 = db_exec(db, sql);
	return rc ? rc : rc2;
}

/* Undo a failed build, naming the file. */
static int build_failed(struct db *db, int rc)
{
	char *keep = strdup(ascent_errmsg());
	db_exec(db, "ROLLBACK");
	rc = ascent_error(rc, "cannot build the viewer's summary of '%s': %s", db->path, keep ? keep : "?");
	free(keep);
	return rc;
}

int db_view_prepare(struct db *db, int *built)
{
	if (built)
		*built = 0;
	struct db_view_probe p;
	int rc = db_view_probe(db, &p);
	if (rc)
		return rc;
	if (p.cached)
		return 0;
	if (!p.has_events)
		return ascent_error(ASCENT_EINPUT, "'%s' holds no events (the profiler recorded nothing: was the "
				    "schedule's active window reached before the run ended?)", db->path);
	/* in the file when we may write it; else in this connection's temporary tables */
	const char *pfx = "main.";
	if (sqlite3_db_readonly(db->h, "main") || db_exec(db, "BEGIN IMMEDIATE") != 0)
		pfx = "temp.";
	if (!strcmp(pfx, "temp.") && (rc = db_exec(db, "BEGIN")) != 0)
		return rc;
	rc = build_into(db, pfx, BUILD_MAIN | BUILD_DEVICE);
	if (!rc && !strcmp(pfx, "main."))
		rc = create_name_index(db);
	if (!rc)
		rc = db_exec(db, "COMMIT");
	if (rc)
		return build_failed(db, rc);
	if (built)
		*built = 1;
	return 0;
}

/* ---------------------------------------------------------------------------------------- */
/* db_finalize_view: a finished import's statistics and summary tables on three connections */

#define DB_FINISH_PARALLEL_RANKS 64   /* more ranks: one connection (db_finalize_view) */

/* In one transaction: the summary tables made afresh in the file when `create`, every temporary
 * view table's rows copied into them, then the name index when `index`. */
static int copy_into_file(struct db *db, int create, int index)
{
	int rc = db_exec(db, "BEGIN IMMEDIATE");
	if (rc)
		return rc;
	if (create) {
		rc = exec_prefixed(db, VIEW_DROP, "main.");
		if (!rc)
			rc = exec_prefixed(db, VIEW_TABLES, "main.");
		if (!rc)
			rc = exec_prefixed(db, VIEW_TABLES2, "main.");
	}
	sqlite3_stmt *s = NULL;
	if (!rc)
		rc = db_prep(db, "SELECT name FROM sqlite_temp_master WHERE type = 'table' AND name LIKE 'view\\_%' ESCAPE '\\'"
			     " ORDER BY name", &s);
	int src = SQLITE_DONE;
	while (!rc && (src = db_step(db, s)) == SQLITE_ROW) {
		char *sql = sqlite3_mprintf("INSERT OR REPLACE INTO main.\"%w\" SELECT * FROM temp.\"%w\"",
					    (const char *)sqlite3_column_text(s, 0), (const char *)sqlite3_column_text(s, 0));
		rc = sql ? db_exec(db, sql) : ascent_error(ASCENT_ENOMEM, "out of memory");
		sqlite3_free(sql);
	}
	if (s)
		rc = db_finish(db, s, src, rc);
	if (!rc && index)
		rc = create_name_index(db);
	if (!rc)
		rc = db_exec(db, "COMMIT");
	return rc ? build_failed(db, rc) : 0;
}

/* The parts asked for built into this connection's temporary tables, in a transaction that reads
 * the file as it is now. */
static int build_temp(struct db *db, int parts)
{
	int rc = db_exec(db, "BEGIN");
	if (!rc) {
		rc = build_into(db, "temp.", parts);
		rc = rc ? build_failed(db, rc) : db_exec(db, "COMMIT");
	}
	return rc;
}

/* The finish's threads: each side builds its part into its own temporary tables, then they write
 * into the file one at a time, in the order of `turn` (0: the statistics, on db's connection). */
struct finish {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int built;              /* sides done building (or failed) */
	int turn;               /* whose write it is: 0 the statistics, then each side's order */
	int failed;             /* 1: stop, nothing more is written */
};

struct side {
	struct finish *f;
	const char *path;
	int parts, create, index, order;
	int rc;                 /* the side's outcome */
	char msg[2048];         /* its error message (messages are per thread) */
	pthread_t th;
};

/* The side's build or write failed (rc): keep its message, stop the others. */
static void side_failed(struct side *sd, int rc)
{
	snprintf(sd->msg, sizeof sd->msg, "%s", ascent_errmsg());
	sd->rc = rc;
	pthread_mutex_lock(&sd->f->mu);
	sd->f->failed = 1;
	pthread_cond_broadcast(&sd->f->cv);
	pthread_mutex_unlock(&sd->f->mu);
}

static void *side_main(void *arg)
{
	struct side *sd = arg;
	struct finish *f = sd->f;
	struct db *db = NULL;
	int rc = db_open(sd->path, DB_UPDATE, &db);
	if (!rc)
		rc = db_set_bulk(db);   /* no journal beside an unnamed temporary; sorts in files */
	if (!rc)
		rc = db_exec(db, "PRAGMA cache_size = -8192");
	if (!rc)
		rc = build_temp(db, sd->parts);
	if (rc)
		side_failed(sd, rc);
	pthread_mutex_lock(&f->mu);
	f->built++;
	pthread_cond_broadcast(&f->cv);
	while (!f->failed && f->turn != sd->order)
		pthread_cond_wait(&f->cv, &f->mu);
	int go = !f->failed;
	pthread_mutex_unlock(&f->mu);
	if (go && (rc = copy_into_file(db, sd->create, sd->index)) != 0)
		side_failed(sd, rc);
	pthread_mutex_lock(&f->mu);
	f->turn++;
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
	db_close(db);
	return NULL;
}

/* db_finalize's pass and write on this connection (its indexes made already). */
static int finalize_rest(struct db *db)
{
	struct db_finalize_result *r = NULL;
	int rc = db_finalize_pass(db, &r);
	if (!rc)
		rc = db_finalize_write(db, r);
	db_finalize_result_free(r);
	return rc;
}

/* The same, then the summary tables, on this connection alone. */
static int finalize_then_prepare(struct db *db)
{
	int rc = finalize_rest(db);
	return rc ? rc : db_view_prepare(db, NULL);
}

int db_finalize_view(struct db *db)
{
	int rc = db_finalize_indexes(db);
	struct db_view_probe p;
	if (!rc)
		rc = db_view_probe(db, &p);
	if (rc)
		return rc;
	if (!p.has_events)   /* statistics only */
		return finalize_rest(db);
	/* jobs of many ranks one pass after the other: the passes' working sets grow with the ranks
	 * (operators per rank and step, every device event's step, each rank's durations) and would be
	 * held at once — the 1,024-rank bench job peaked at 660 MB on three connections against 550 MB
	 * on one, for no gain in time (its critical paths, one rank after another, are the longest
	 * part either way) */
	int64_t ranks = 0;
	if ((rc = db_scalar_i64(db, "SELECT count(*) FROM rank", &ranks, NULL)) != 0)
		return rc;
	if (ranks > DB_FINISH_PARALLEL_RANKS)
		return finalize_then_prepare(db);
	/* three connections read the file at once: this one db_finalize's pass, a second the device
	 * tables (device work per launching step, per-device figures, critical paths), a third the
	 * tables of the pass in nesting order; then one at a time they write: the statistics, the
	 * summary tables made in the file with the device rows, the rest of the rows and the name
	 * index. The statistics' connection runs nothing else, so PRAGMA optimize (db_finalize_write)
	 * sees the queries it sees in db_finalize and analyzes the same tables. */
	struct finish f = { .turn = 0 };
	struct side sides[2] = {
		{ .f = &f, .path = db->path, .parts = BUILD_DEVICE, .create = 1, .index = 0, .order = 1 },
		{ .f = &f, .path = db->path, .parts = BUILD_MAIN, .create = 0, .index = 1, .order = 2 },
	};
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	int started = 0;
	while (started < 2 && pthread_create(&sides[started].th, NULL, side_main, &sides[started]) == 0)
		started++;
	if (started < 2) {   /* no threads: one after the other on this connection */
		pthread_mutex_lock(&f.mu);
		f.failed = 1;
		pthread_cond_broadcast(&f.cv);
		pthread_mutex_unlock(&f.mu);
		for (int i = 0; i < started; i++)
			pthread_join(sides[i].th, NULL);
		pthread_mutex_destroy(&f.mu);
		pthread_cond_destroy(&f.cv);
		return finalize_then_prepare(db);
	}
	struct db_finalize_result *r = NULL;
	rc = db_finalize_pass(db, &r);
	pthread_mutex_lock(&f.mu);
	while (f.built < 2)
		pthread_cond_wait(&f.cv, &f.mu);
	int go = !f.failed && !rc;
	pthread_mutex_unlock(&f.mu);
	if (go)
		rc = db_finalize_write(db, r);
	db_finalize_result_free(r);
	pthread_mutex_lock(&f.mu);
	if (rc || !go)
		f.failed = 1;
	else
		f.turn = 1;
	pthread_cond_broadcast(&f.cv);
	pthread_mutex_unlock(&f.mu);
	for (int i = 0; i < 2; i++)
		pthread_join(sides[i].th, NULL);
	pthread_mutex_destroy(&f.mu);
	pthread_cond_destroy(&f.cv);
	for (int i = 0; !rc && i < 2; i++)
		if (sides[i].rc)
			rc = ascent_error(sides[i].rc, "%s", sides[i].msg);
	return rc;
}
