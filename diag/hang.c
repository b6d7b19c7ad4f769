/* diag/hang.c — `ascent diag hang RUN_DIR`: read the flight-recorder dumps RUN_DIR/flight/rank-*.json
 * (written by comm/ on timeout, SIGUSR1, SIGTERM or a fatal signal; format in comm/comm.h) and say
 * which ranks are stuck in which call and which ranks never arrived.
 *
 * Stuck: each rank's oldest pending call that has waited min_wait_s or more (with the number of its
 * calls pending). Missing, per communicator (identified by its job-wide id), independently of how
 * many non-blocking calls are in flight (overlapped DP gradient buckets): the members' collective
 * sequence numbers (last_started in the dumps' "comms": a call queued for the communication thread
 * has not arrived until it starts) are compared; the first seq some members started and a member
 * never reached is (smallest last_started) + 1, and every member whose last_started is that
 * smallest value is missing there (a member that enqueued it but never started it has a stuck
 * communication thread) — when a member that did reach it has a
 * call on that communicator pending for min_wait_s or more (else the difference is only the skew
 * between dump times). A member of such a communicator without a dump is reported missing too ("no
 * dump"). A pending receive (send) whose peer has no matching pending send (receive) names the peer
 * as missing. */
#include "diag/diag.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct hdump {
	int rank, world_size;
	char reason[32];
	int64_t dump_ns;
	cJSON *doc;
};

/* A number of a dump as int64, clamped to the int64 range (a damaged dump may say 1e300). */
static int64_t num_field(const cJSON *o, const char *k, int64_t dflt)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v) || v->valuedouble != v->valuedouble)
		return dflt;
	if (v->valuedouble >= 9223372036854775807.0)
		return INT64_MAX;
	if (v->valuedouble <= -9223372036854775808.0)
		return INT64_MIN;
	return (int64_t)v->valuedouble;
}

/* Seconds entry e had waited when dump d was written. */
static double waited_s(const struct hdump *d, const cJSON *e)
{
	return ((double)d->dump_ns - (double)num_field(e, "enqueued_ns", d->dump_ns)) / 1e9;
}

/* A rank number from a dump: ranks are ints; anything else is -1 (never a rank). */
static int get_rank(const cJSON *o, const char *k)
{
	int64_t v = num_field(o, k, -1);
	return v >= 0 && v <= INT32_MAX ? (int)v : -1;
}

static const char *str_field(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : "";
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

/* Position of `rank` in the sorted, distinct known[0..n), or -1. */
static int known_index(const int *known, int n, int rank)
{
	const int *p = bsearch(&rank, known, (size_t)n, sizeof *known, cmp_int);
	return p ? (int)(p - known) : -1;
}

/* The dump of `rank` (d is sorted by rank; the first of duplicates). */
static const struct hdump *find_dump(const struct hdump *d, int n, int rank)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (d[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && d[lo].rank == rank ? &d[lo] : NULL;
}

static const cJSON *find_comm(const struct hdump *d, int64_t id)
{
	const cJSON *c;
	cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(d->doc, "comms"))
		if (num_field(c, "id", -1) == id)
			return c;
	return NULL;
}

/* The last collective seq a member started on a communicator (its "comms" entry): the call is in
 * MPI then. A call queued for the communication thread and never started has not arrived. Dumps
 * without last_started: last_enqueued. */
static int64_t arrived(const cJSON *comm)
{
	return num_field(comm, "last_started", num_field(comm, "last_enqueued", 0));
}

/* The oldest pending entry of a dump matching (comm id, p2p, op, peer, seq); any field < -1 / NULL
 * is a wildcard. */
static const cJSON *find_pending(const struct hdump *d, int64_t comm_id, const char *op, int peer)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(d->doc, "entries"))
	{
		if (!strcmp(str_field(e, "state"), "completed"))
			continue;
		if (comm_id >= 0 && num_field(e, "comm_id", -1) != comm_id)
			continue;
		if (op && strcmp(str_field(e, "op"), op))
			continue;
		if (peer >= 0 && num_field(e, "peer", -1) != peer)
			continue;
		return e;
	}
	return NULL;
}

static int cmp_dump(const void *a, const void *b)
{
	return ((const struct hdump *)a)->rank - ((const struct hdump *)b)->rank;
}

static int load_dumps(const char *run_dir, struct hdump **out, int *n)
{
	*out = NULL;
	*n = 0;
	char dir[4200];
	snprintf(dir, sizeof dir, "%s/flight", run_dir);
	DIR *dd = opendir(dir);
	if (!dd)
		return ascent_error(ASCENT_EINPUT,
				    "no flight-recorder dumps: cannot open '%s' (is '%s' a run directory? dumps are "
				    "written on a comm timeout, on SIGUSR1 and on a crash)", dir, run_dir);
	struct dirent *de;
	int cap = 0, rc = 0;
	struct hdump *d = NULL;
	while ((de = readdir(dd)) && !rc) {
		size_t l = strlen(de->d_name);
		if (strncmp(de->d_name, "rank-", 5) || l < 10 || strcmp(de->d_name + l - 5, ".json"))
			continue;
		char path[4500];
		snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
		cJSON *doc = NULL;
		rc = json_read_file(path, &doc);
		if (rc)
			break;
		if (!cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "entries")) ||
		    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(doc, "comms")) || get_rank(doc, "rank") < 0) {
			cJSON_Delete(doc);
			rc = ascent_error(ASCENT_EINPUT, "'%s' is not a flight-recorder dump (no rank, comms or entries)", path);
			break;
		}
		if (get_rank(doc, "rank") >= get_rank(doc, "world_size")) {
			rc = ascent_error(ASCENT_EINPUT, "'%s' is not a valid flight-recorder dump: rank %lld is not below its "
					  "world_size %lld", path, (long long)num_field(doc, "rank", -1),
					  (long long)num_field(doc, "world_size", -1));
			cJSON_Delete(doc);
			break;
		}
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct hdump *nd = realloc(d, sizeof *d * (size_t)cap);
			if (!nd) {
				cJSON_Delete(doc);
				rc = ascent_error(ASCENT_ENOMEM, "out of memory");
				break;
			}
			d = nd;
		}
		struct hdump *h = &d[(*n)++];
		h->doc = doc;
		h->rank = get_rank(doc, "rank");
		h->world_size = get_rank(doc, "world_size");
		h->dump_ns = num_field(doc, "dump_ns", 0);
		snprintf(h->reason, sizeof h->reason, "%s", str_field(doc, "reason"));
	}
	closedir(dd);
	if (!rc && *n == 0)
		rc = ascent_error(ASCENT_EINPUT, "no flight-recorder dumps (rank-*.json) in '%s'", dir);
	if (rc) {
		for (int i = 0; i < *n; i++)
			cJSON_Delete(d[i].doc);
		free(d);
		*n = 0;
		return rc;
	}
	qsort(d, (size_t)*n, sizeof *d, cmp_dump);
	*out = d;
	return 0;
}

/* The host of each known rank (known[k] → h[k]): a rank's own dump says its host, and every dump
 * lists the hosts of all ranks ("hosts", written since comm_init gathers them), so ranks without a
 * dump are named too. "?" where no dump says. */
static char (*load_hosts(const struct hdump *d, int nd, const int *known, int nknown))[64]
{
	char (*h)[64] = calloc((size_t)(nknown > 0 ? nknown : 1), sizeof *h);
	if (!h)
		return NULL;
	for (int k = 0; k < nknown; k++)
		snprintf(h[k], sizeof h[k], "?");
	for (int i = 0; i < nd; i++) {
		const cJSON *all = cJSON_GetObjectItemCaseSensitive(d[i].doc, "hosts"), *e;
		int q = 0;
		cJSON_ArrayForEach(e, all)
		{
			int k = known_index(known, nknown, q++);
			if (k >= 0 && cJSON_IsString(e) && !strcmp(h[k], "?"))
				snprintf(h[k], sizeof h[k], "%s", e->valuestring);
		}
	}
	for (int i = 0; i < nd; i++) {
		int k = known_index(known, nknown, d[i].rank);
		if (k >= 0 && *str_field(d[i].doc, "host"))
			snprintf(h[k], sizeof h[0], "%s", str_field(d[i].doc, "host"));
	}
	return h;
}

/* ------------------------------------------------------------------------------------------ */
/* The analysis (hang_compute, into struct hang), then its renderings: the JSON members (hang_json)
 * and the report's identity rows and checks (hang_report). */

/* One dump's oldest pending call: stuck when it had waited min_wait_s or more, else in flight. */
struct hang_call {
	const struct hdump *d;
	const cJSON *e;              /* the entry in d's document */
	double waited_s;
	int p2p, stuck;
	int pending;                 /* calls pending in d */
};

/* A rank missing from a call others wait in. */
struct hang_missing {
	int rank;
	int p2p;                     /* 1: the peer of a pending send/receive; 0: a collective's member */
	const char *comm, *op;       /* op: the call it never made (for p2p: the matching send/recv) */
	int64_t comm_id, seq;
	int dump;                    /* it wrote a dump */
	int waiter;                  /* p2p: the rank whose call it never matched */
	const char *waiter_op;
	const cJSON *qc;             /* collective, with a dump: its entry for the communicator */
	int64_t last_enqueued, others_reached;
};

struct hang {
	const char *run_dir;
	double min_wait_s;
	struct hdump *d;             /* nd dumps, sorted by rank */
	int nd;
	int *known, nknown;          /* the ranks the dumps name, sorted, distinct */
	int claimed, world;          /* the largest world_size a dump claims; the world it is bounded to */
	char (*hosts)[64];           /* nknown: the host of known[k] */
	unsigned char *is_missing;   /* nknown */
	struct hang_call *calls;     /* ncalls (≤ nd): the dumps with a pending call, in rank order */
	int ncalls, nstuck, ninflight;
	struct hang_missing *missing;
	int nmissing, capm;
};

static void hang_free(struct hang *h)
{
	for (int i = 0; i < h->nd; i++)
		cJSON_Delete(h->d[i].doc);
	free(h->d);
	free(h->known);
	free(h->hosts);
	free(h->is_missing);
	free(h->calls);
	free(h->missing);
	memset(h, 0, sizeof *h);
}

static const char *hang_host(const struct hang *h, int rank)
{
	int k = known_index(h->known, h->nknown, rank);
	return k >= 0 ? h->hosts[k] : "?";
}

/* The ranks the dumps name (their own, their communicators' members below the world size they
 * claim): the ones expected to dump, and the only ones that can be missing. A real dump's "world"
 * communicator lists every rank; a damaged world_size of 2e9 must not make ranks out of nothing,
 * nor an array that size. Then their hosts. */
static int hang_known_ranks(struct hang *h)
{
	for (int i = 0; i < h->nd; i++)
		h->claimed = h->d[i].world_size > h->claimed ? h->d[i].world_size : h->claimed;
	int n = h->nd, cap = h->nd + 16;
	int *known = malloc((size_t)cap * sizeof *known);
	for (int i = 0; known && i < h->nd; i++)
		known[i] = h->d[i].rank;
	for (int i = 0; known && i < h->nd; i++) {
		const cJSON *cm, *rk;
		cJSON_ArrayForEach(cm, cJSON_GetObjectItemCaseSensitive(h->d[i].doc, "comms"))
			cJSON_ArrayForEach(rk, cJSON_GetObjectItemCaseSensitive(cm, "ranks"))
			{
				if (!cJSON_IsNumber(rk) || rk->valueint < 0 || rk->valueint >= h->claimed)
					continue;
				if (n == cap) {
					int *nk = realloc(known, (size_t)(cap *= 2) * sizeof *nk);
					if (!nk) {   /* return: going on, a later realloc(NULL) would start over */
						free(known);
						return ascent_error(ASCENT_ENOMEM, "out of memory");
					}
					known = nk;
				}
				known[n++] = rk->valueint;
			}
	}
	if (!known)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	qsort(known, (size_t)n, sizeof *known, cmp_int);
	int u = 0;
	for (int i = 0; i < n; i++)
		if (!u || known[i] != known[u - 1])
			known[u++] = known[i];
	h->known = known;
	h->nknown = u;
	h->world = known[u - 1] + 1 < h->claimed ? known[u - 1] + 1 : h->claimed;
	h->is_missing = calloc((size_t)u + 1, 1);
	h->hosts = load_hosts(h->d, h->nd, known, u);
	h->calls = calloc((size_t)h->nd, sizeof *h->calls);
	if (!h->is_missing || !h->hosts || !h->calls)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	return 0;
}

/* Mark known rank `rank` missing and append its entry (filled by the caller); NULL without memory. */
static struct hang_missing *hang_add_missing(struct hang *h, int rank)
{
	if (h->nmissing == h->capm) {
		int cap = h->capm ? h->capm * 2 : 8;
		struct hang_missing *nm = realloc(h->missing, (size_t)cap * sizeof *nm);
		if (!nm)
			return NULL;
		h->missing = nm;
		h->capm = cap;
	}
	h->is_missing[known_index(h->known, h->nknown, rank)] = 1;
	struct hang_missing *m = &h->missing[h->nmissing++];
	memset(m, 0, sizeof *m);
	m->rank = rank;
	return m;
}

/* Each dump's oldest pending call; for a stuck send (receive), the peer is missing when it has no
 * matching receive (send) pending. */
static int hang_find_stuck(struct hang *h)
{
	for (int i = 0; i < h->nd; i++) {
		const struct hdump *d = &h->d[i];
		const cJSON *e = find_pending(d, -1, NULL, -1), *pe;
		if (!e)
			continue;
		struct hang_call *c = &h->calls[h->ncalls++];
		c->d = d;
		c->e = e;
		c->waited_s = waited_s(d, e);
		c->p2p = (int)num_field(e, "p2p", 0);
		c->stuck = c->waited_s >= h->min_wait_s;   /* else a call in progress, not (yet) a hang */
		cJSON_ArrayForEach(pe, cJSON_GetObjectItemCaseSensitive(d->doc, "entries"))
			c->pending += strcmp(str_field(pe, "state"), "completed") != 0;
		h->nstuck += c->stuck;
		h->ninflight += !c->stuck;
		if (!c->stuck || !c->p2p)
			continue;
		int64_t cid = num_field(e, "comm_id", -1);
		int peer = get_rank(e, "peer");
		const char *want = !strcmp(str_field(e, "op"), "recv") ? "send" : "recv";
		const struct hdump *pd = find_dump(h->d, h->nd, peer);
		int pk = known_index(h->known, h->nknown, peer);
		if (pk < 0 || h->is_missing[pk] || (pd && find_pending(pd, cid, want, d->rank)))
			continue;
		struct hang_missing *m = hang_add_missing(h, peer);
		if (!m)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		m->p2p = 1;
		m->comm = str_field(e, "comm");
		m->comm_id = cid;
		m->op = want;
		m->seq = num_field(e, "seq", 0);
		m->dump = pd != NULL;
		m->waiter = d->rank;
		m->waiter_op = str_field(e, "op");
	}
	return 0;
}

/* What the members of one communicator did: the smallest and largest seq they started (lo, hi;
 * hi < 0: no member's dump has it), the op of seq lo + 1, the oldest collective pending on it, and
 * whether a member is stuck on it (pending for min_wait_s or more). */
struct hang_comm {
	int64_t id, lo, hi, pend_seq;
	const char *op, *name, *pend_op;
	int stuck;
};

static void hang_comm_state(const struct hang *h, const cJSON *cm, struct hang_comm *s)
{
	const cJSON *rk, *e;
	*s = (struct hang_comm){ .id = num_field(cm, "id", -1), .lo = INT64_MAX, .hi = -1, .pend_seq = INT64_MAX,
				 .name = str_field(cm, "kind") };
	cJSON_ArrayForEach(rk, cJSON_GetObjectItemCaseSensitive(cm, "ranks"))
	{
		const struct hdump *qd = find_dump(h->d, h->nd, rk->valueint);
		const cJSON *qc = qd ? find_comm(qd, s->id) : NULL;
		if (!qc)
			continue;
		int64_t le = arrived(qc);
		s->lo = le < s->lo ? le : s->lo;
		s->hi = le > s->hi ? le : s->hi;
	}
	if (s->hi < 0)
		return;
	for (int j = 0; j < h->nd; j++)
		cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(h->d[j].doc, "entries"))
		{
			if (num_field(e, "comm_id", -1) != s->id || num_field(e, "p2p", 0))
				continue;
			if (s->lo < INT64_MAX && num_field(e, "seq", 0) == s->lo + 1 && !s->op) {
				s->op = str_field(e, "op");
				s->name = str_field(e, "comm");
			}
			if (!strcmp(str_field(e, "state"), "completed"))
				continue;
			if (waited_s(&h->d[j], e) >= h->min_wait_s)
				s->stuck = 1;
			if (num_field(e, "seq", 0) < s->pend_seq) {
				s->pend_seq = num_field(e, "seq", 0);
				s->pend_op = str_field(e, "op");
			}
		}
}

/* The members of a communicator someone is stuck on that never arrived: members with a dump are
 * compared by seq (the first one some started and they never did); a member without one (killed
 * with -9) is missing at the call the others wait in. */
static int hang_comm_missing(struct hang *h, const cJSON *cm, const struct hang_comm *s)
{
	int64_t seq = s->lo < INT64_MAX ? s->lo + 1 : s->lo;
	const char *op = s->op ? s->op : "collective";
	const cJSON *rk;
	cJSON_ArrayForEach(rk, cJSON_GetObjectItemCaseSensitive(cm, "ranks"))
	{
		int q = rk->valueint;
		int qk = known_index(h->known, h->nknown, q);
		if (qk < 0 || h->is_missing[qk])
			continue;
		const struct hdump *qd = find_dump(h->d, h->nd, q);
		const cJSON *qc = qd ? find_comm(qd, s->id) : NULL;
		if (qc && (s->hi == s->lo || arrived(qc) > s->lo))
			continue; /* every member arrived, or this one reached the first seq they differ */
		struct hang_missing *m = hang_add_missing(h, q);
		if (!m)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		m->comm = s->name;
		m->comm_id = s->id;
		m->op = qc ? op : s->pend_op ? s->pend_op : op;
		m->seq = qc ? seq : s->pend_seq < INT64_MAX ? s->pend_seq : seq;
		m->dump = qd != NULL;
		m->qc = qc;
		m->last_enqueued = qc ? num_field(qc, "last_enqueued", 0) : -1;
		m->others_reached = s->hi;
	}
	return 0;
}

/* Collectives, per communicator (each once: at the first dump, lowest rank, that has it). */
static int hang_find_missing(struct hang *h)
{
	for (int i = 0; i < h->nd; i++) {
		const cJSON *cm;
		cJSON_ArrayForEach(cm, cJSON_GetObjectItemCaseSensitive(h->d[i].doc, "comms"))
		{
			int64_t cid = num_field(cm, "id", -1);
			if (cid < 0 || cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cm, "ranks")) < 2)
				continue;
			int seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = find_comm(&h->d[j], cid) != NULL;
			if (seen)
				continue;
			struct hang_comm s;
			hang_comm_state(h, cm, &s);
			if (s.hi < 0 || !s.stuck)
				continue;
			int rc = hang_comm_missing(h, cm, &s);
			if (rc)
				return rc;
		}
	}
	return 0;
}

static int hang_compute(const char *run_dir, double min_wait_s, struct hang *h)
{
	memset(h, 0, sizeof *h);
	h->run_dir = run_dir;
	h->min_wait_s = min_wait_s;
	int rc = load_dumps(run_dir, &h->d, &h->nd);
	if (!rc)
		rc = hang_known_ranks(h);
	if (!rc)
		rc = hang_find_stuck(h);
	if (!rc)
		rc = hang_find_missing(h);
	if (rc)
		hang_free(h);
	return rc;
}

static void hang_call_json(const struct hang *h, const struct hang_call *c, cJSON *o)
{
	const cJSON *e = c->e;
	cJSON_AddNumberToObject(o, "rank", c->d->rank);
	if (!c->stuck) {
		cJSON_AddStringToObject(o, "comm", str_field(e, "comm"));
		cJSON_AddStringToObject(o, "op", str_field(e, "op"));
		cJSON_AddNumberToObject(o, "seq", (double)num_field(e, "seq", 0));
		cJSON_AddNumberToObject(o, "waited_s", c->waited_s);
		return;
	}
	cJSON_AddStringToObject(o, "host", hang_host(h, c->d->rank));
	cJSON_AddStringToObject(o, "comm", str_field(e, "comm"));
	cJSON_AddNumberToObject(o, "comm_id", (double)num_field(e, "comm_id", -1));
	cJSON_AddStringToObject(o, "op", str_field(e, "op"));
	cJSON_AddNumberToObject(o, "seq", (double)num_field(e, "seq", 0));
	cJSON_AddBoolToObject(o, "p2p", c->p2p);
	cJSON_AddNumberToObject(o, "peer", (double)num_field(e, "peer", -1));
	cJSON_AddStringToObject(o, "state", str_field(e, "state"));
	cJSON_AddNumberToObject(o, "waited_s", c->waited_s);
	cJSON_AddNumberToObject(o, "pending", c->pending);
}

static void hang_missing_json(const struct hang *h, const struct hang_missing *m, cJSON *o)
{
	cJSON_AddNumberToObject(o, "rank", m->rank);
	cJSON_AddStringToObject(o, "host", hang_host(h, m->rank));
	cJSON_AddStringToObject(o, "comm", m->comm);
	cJSON_AddNumberToObject(o, "comm_id", (double)m->comm_id);
	cJSON_AddStringToObject(o, "op", m->op);
	cJSON_AddNumberToObject(o, "seq", (double)m->seq);
	cJSON_AddBoolToObject(o, "dump", m->dump);
	if (!m->qc)
		return;
	cJSON_AddNumberToObject(o, "last_enqueued", (double)m->last_enqueued);
	cJSON_AddNumberToObject(o, "last_started", (double)arrived(m->qc));
	cJSON_AddBoolToObject(o, "enqueued_not_started", m->last_enqueued >= m->seq);
	cJSON_AddNumberToObject(o, "last_completed", (double)num_field(m->qc, "last_completed", 0));
}

/* data: "stuck", "missing", "in_flight", "run_dir", "dumps". */
static void hang_json(const struct hang *h, cJSON *data)
{
	cJSON *stuck = cJSON_AddArrayToObject(data, "stuck");
	cJSON *missing = cJSON_AddArrayToObject(data, "missing");
	cJSON *inflight = cJSON_AddArrayToObject(data, "in_flight");
	cJSON_AddStringToObject(data, "run_dir", h->run_dir);
	cJSON *dumps = cJSON_AddArrayToObject(data, "dumps");
	for (int i = 0; i < h->nd; i++)
		cJSON_AddItemToArray(dumps, cJSON_CreateNumber(h->d[i].rank));
	for (int i = 0; i < h->ncalls; i++) {
		cJSON *o = cJSON_CreateObject();
		hang_call_json(h, &h->calls[i], o);
		cJSON_AddItemToArray(h->calls[i].stuck ? stuck : inflight, o);
	}
	for (int i = 0; i < h->nmissing; i++) {
		cJSON *o = cJSON_CreateObject();
		hang_missing_json(h, &h->missing[i], o);
		cJSON_AddItemToArray(missing, o);
	}
}

/* "rank 3 (host) in allreduce seq 7 on 'dp' for 12.0 s (4 calls pending)" appended to buf, while it
 * has room. */
static void hang_call_text(const struct hang *h, const struct hang_call *c, char *buf, size_t n)
{
	const cJSON *e = c->e;
	const char *op = str_field(e, "op");
	size_t l = strlen(buf);
	if (l + 128 >= n)
		return;
	if (c->p2p)
		snprintf(buf + l, n - l, "%srank %d (%.60s) in %s %s rank %lld on '%s' for %.1f s", l ? "; " : "",
			 c->d->rank, hang_host(h, c->d->rank), op, !strcmp(op, "send") ? "to" : "from",
			 (long long)num_field(e, "peer", -1), str_field(e, "comm"), c->waited_s);
	else
		snprintf(buf + l, n - l, "%srank %d (%.60s) in %s seq %lld on '%s' for %.1f s", l ? "; " : "",
			 c->d->rank, hang_host(h, c->d->rank), op, (long long)num_field(e, "seq", 0), str_field(e, "comm"),
			 c->waited_s);
	l = strlen(buf);
	if (c->pending > 1 && l + 40 < n)
		snprintf(buf + l, n - l, " (%d calls pending)", c->pending);
}

/* One missing rank's sentence appended to buf, while it has room. */
static void hang_missing_text(const struct hang *h, const struct hang_missing *m, char *buf, size_t n)
{
	size_t l = strlen(buf);
	const char *sep = l ? "; " : "", *host = hang_host(h, m->rank);
	if (m->p2p) {
		if (l + 128 < n)
			snprintf(buf + l, n - l, "%srank %d (%.60s) never posted the %s matching rank %d's %s on '%s'%s", sep,
				 m->rank, host, m->op, m->waiter, m->waiter_op, m->comm, m->dump ? "" : " (no dump)");
		return;
	}
	if (l + 200 >= n)
		return;
	if (m->qc && m->last_enqueued >= m->seq)
		snprintf(buf + l, n - l,
			 "%srank %d (%.60s) never arrived at %s seq %lld on '%s': it enqueued the call but never started "
			 "it (its communication thread is stuck; others reached seq %lld; its last started there: seq "
			 "%lld, completed %lld)", sep, m->rank, host, m->op, (long long)m->seq, m->comm,
			 (long long)m->others_reached, (long long)arrived(m->qc),
			 (long long)num_field(m->qc, "last_completed", 0));
	else if (m->qc)
		snprintf(buf + l, n - l,
			 "%srank %d (%.60s) never arrived at %s seq %lld on '%s' (first seq where the ranks differ, "
			 "others reached seq %lld; its last there: seq %lld, completed %lld)", sep, m->rank, host, m->op,
			 (long long)m->seq, m->comm, (long long)m->others_reached, (long long)m->last_enqueued,
			 (long long)num_field(m->qc, "last_completed", 0));
	else
		snprintf(buf + l, n - l,
			 "%srank %d (%.60s) never arrived at %s seq %lld on '%s' (the seq the others wait in; it wrote "
			 "no dump)", sep, m->rank, host, m->op, (long long)m->seq, m->comm);
}

/* The hosts of the missing ranks, "hostA (rank 1,3), hostB (rank 6)": one host with all its ranks
 * missing points at the host (its link, its processes) rather than at one rank. */
static void hang_missing_hosts(const struct hang *h, char *buf, size_t n)
{
	buf[0] = 0;
	for (int q = 0; q < h->nknown; q++) {   /* indices into known[] */
		if (!h->is_missing[q])
			continue;
		int first = 1;
		for (int p = 0; p < q && first; p++)
			first = !(h->is_missing[p] && !strcmp(h->hosts[p], h->hosts[q]));
		if (!first)
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, n - l, "%s%.60s (rank", l ? ", " : "", h->hosts[q]);
		for (int p = q, k = 0; p < h->nknown; p++)
			if (h->is_missing[p] && !strcmp(h->hosts[p], h->hosts[q])) {
				l = strlen(buf);
				snprintf(buf + l, n - l, "%s%d", k++ ? "," : " ", h->known[p]);
			}
		l = strlen(buf);
		snprintf(buf + l, n - l, ")");
	}
}

/* The identity rows: run, world size, dumps (rank:reason); hang.dumps. */
static void hang_report_dumps(const struct hang *h, struct diag_report *r)
{
	diag_ident_add(r, "run", "%s", h->run_dir);
	if (h->claimed != h->world)
		diag_ident_add(r, "world size", "%d (the dumps say %d; only ranks below %d appear in them)", h->world,
			       h->claimed, h->world);
	else
		diag_ident_add(r, "world size", "%d", h->world);
	char reasons[512] = "", nodump[512] = "";
	for (int i = 0; i < h->nd; i++) {
		size_t l = strlen(reasons);
		if (l + 48 < sizeof reasons)
			snprintf(reasons + l, sizeof reasons - l, "%s%d:%s", l ? " " : "", h->d[i].rank, h->d[i].reason);
	}
	diag_ident_add(r, "dumps (rank:reason)", "%s", reasons);
	int nnodump = 0;
	for (int k = 0; k < h->nknown; k++)
		if (!find_dump(h->d, h->nd, h->known[k])) {
			size_t l = strlen(nodump);
			if (l + 80 < sizeof nodump)
				snprintf(nodump + l, sizeof nodump - l, "%s%d (%.60s)", l ? ", " : "", h->known[k], h->hosts[k]);
			nnodump++;
		}
	if (nnodump)
		diag_check_add(r, DIAG_WARN, "hang.dumps",
			       "a rank without a dump died before it could write one (SIGKILL, out of memory) or never "
			       "reached comm_init; look at its log (runs/NAME/logs/rank-NNNNN.log)",
			       "%d of %d ranks wrote flight-recorder dumps; none from rank(s) %s", h->nd, h->world, nodump);
	else
		diag_check_add(r, DIAG_PASS, "hang.dumps", NULL, "all %d ranks wrote flight-recorder dumps", h->world);
}

/* hang.dumps, hang.stuck and hang.missing. */
static void hang_report(const struct hang *h, struct diag_report *r)
{
	hang_report_dumps(h, r);
	if (!h->nstuck) {
		diag_check_add(r, DIAG_PASS, "hang.stuck", NULL,
			       "no operation had waited %.1f s or more in any of the %d dumps (%d call(s) in progress); the "
			       "job was not stuck in comm when they were written", h->min_wait_s, h->nd, h->ninflight);
		return;
	}
	char stuck_msg[1024] = "", missing_msg[1024] = "", by_host[512];
	for (int i = 0; i < h->ncalls; i++)
		if (h->calls[i].stuck)
			hang_call_text(h, &h->calls[i], stuck_msg, sizeof stuck_msg);
	diag_check_add(r, DIAG_FAIL, "hang.stuck", "the stuck ranks wait for the missing ones; see hang.missing",
		       "%d rank(s) stuck: %s", h->nstuck, stuck_msg);
	if (!h->nmissing) {
		diag_check_add(r, DIAG_WARN, "hang.missing",
			       "every member reached the call: suspect the network or the MPI library (try "
			       "'ascent diag net'), or a rank that died after its dump",
			       "every member of the stuck communicators arrived at the pending calls");
		return;
	}
	for (int i = 0; i < h->nmissing; i++)
		hang_missing_text(h, &h->missing[i], missing_msg, sizeof missing_msg);
	hang_missing_hosts(h, by_host, sizeof by_host);
	diag_check_add(r, DIAG_FAIL, "hang.missing",
		       "find out what the missing rank was doing instead: its log, its last completed "
		       "operation, a stack (gdb -p PID or SIGUSR1 for a dump while it runs); a rank that "
		       "skips or reorders a collective desynchronises the job; when every rank of a host "
		       "is missing, check that host (diag net there: its link, its MTU)",
		       "missing on host(s) %s: %s", by_host, missing_msg);
}

int diag_hang_run(const char *run_dir, double min_wait_s, struct diag_report *r)
{
	struct hang h;
	int rc = hang_compute(run_dir, min_wait_s, &h);
	if (rc)
		return rc;
	hang_json(&h, r->data);
	hang_report(&h, r);
	hang_free(&h);
	return 0;
}
