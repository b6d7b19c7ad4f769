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

int diag_hang_run(const char *run_dir, double min_wait_s, struct diag_report *r)
{
	struct hdump *d;
	int nd;
	int rc = load_dumps(run_dir, &d, &nd);
	if (rc)
		return rc;
	cJSON *stuck = cJSON_AddArrayToObject(r->data, "stuck");
	cJSON *missing = cJSON_AddArrayToObject(r->data, "missing");
	cJSON *inflight = cJSON_AddArrayToObject(r->data, "in_flight");
	int ninflight = 0;
	cJSON_AddStringToObject(r->data, "run_dir", run_dir);
	/* the ranks the dumps name (their own, their communicators' members below the world size they
	 * claim): the ones expected to dump, and the only ones that can be missing. A real dump's
	 * "world" communicator lists every rank; a damaged world_size of 2e9 must not make ranks out of
	 * nothing, nor an array that size */
	int claimed = 0;
	for (int i = 0; i < nd; i++)
		claimed = d[i].world_size > claimed ? d[i].world_size : claimed;
	int nknown = nd, capk = nd + 16;
	int *known = malloc((size_t)capk * sizeof *known);
	for (int i = 0; known && i < nd; i++)
		known[i] = d[i].rank;
	for (int i = 0; known && i < nd; i++) {
		const cJSON *cm, *rk;
		cJSON_ArrayForEach(cm, cJSON_GetObjectItemCaseSensitive(d[i].doc, "comms"))
			cJSON_ArrayForEach(rk, cJSON_GetObjectItemCaseSensitive(cm, "ranks"))
			{
				if (!cJSON_IsNumber(rk) || rk->valueint < 0 || rk->valueint >= claimed)
					continue;
				if (nknown == capk) {
					int *nk = realloc(known, (size_t)(capk *= 2) * sizeof *nk);
					if (!nk) {
						free(known);
						known = NULL;
						break;
					}
					known = nk;
				}
				known[nknown++] = rk->valueint;
			}
	}
	unsigned char *is_missing = NULL;
	char (*hosts)[64] = NULL;
	if (known) {
		qsort(known, (size_t)nknown, sizeof *known, cmp_int);
		int u = 0;
		for (int i = 0; i < nknown; i++)
			if (!u || known[i] != known[u - 1])
				known[u++] = known[i];
		nknown = u;
		is_missing = calloc((size_t)nknown + 1, 1);
	}
	if (!known || !is_missing) {
		free(known);
		known = NULL;
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	int world = known[nknown - 1] + 1 < claimed ? known[nknown - 1] + 1 : claimed;
	diag_ident_add(r, "run", "%s", run_dir);
	if (claimed != world)
		diag_ident_add(r, "world size", "%d (the dumps say %d; only ranks below %d appear in them)", world, claimed,
			       world);
	else
		diag_ident_add(r, "world size", "%d", world);
	char reasons[512] = "";
	for (int i = 0; i < nd; i++) {
		size_t l = strlen(reasons);
		if (l + 48 < sizeof reasons)
			snprintf(reasons + l, sizeof reasons - l, "%s%d:%s", l ? " " : "", d[i].rank, d[i].reason);
	}
	diag_ident_add(r, "dumps (rank:reason)", "%s", reasons);
	cJSON *dumps = cJSON_AddArrayToObject(r->data, "dumps");
	for (int i = 0; i < nd; i++)
		cJSON_AddItemToArray(dumps, cJSON_CreateNumber(d[i].rank));

	hosts = load_hosts(d, nd, known, nknown);
	if (!hosts) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
#define HOST(q) (known_index(known, nknown, (q)) >= 0 ? hosts[known_index(known, nknown, (q))] : "?")
	/* dumps present */
	char nodump[512] = "";
	int nnodump = 0;
	for (int k = 0; k < nknown; k++)
		if (!find_dump(d, nd, known[k])) {
			size_t l = strlen(nodump);
			if (l + 80 < sizeof nodump)
				snprintf(nodump + l, sizeof nodump - l, "%s%d (%.60s)", l ? ", " : "", known[k], hosts[k]);
			nnodump++;
		}
	if (nnodump)
		diag_check_add(r, DIAG_WARN, "hang.dumps",
			       "a rank without a dump died before it could write one (SIGKILL, out of memory) or never "
			       "reached comm_init; look at its log (runs/NAME/logs/rank-NNNNN.log)",
			       "%d of %d ranks wrote flight-recorder dumps; none from rank(s) %s", nd, world, nodump);
	else
		diag_check_add(r, DIAG_PASS, "hang.dumps", NULL, "all %d ranks wrote flight-recorder dumps", world);

	/* stuck: every pending entry, oldest per rank first */
	char stuck_msg[1024] = "", missing_msg[1024] = "";
	int nstuck = 0, nmissing = 0;
	for (int i = 0; i < nd; i++) {
		const cJSON *e = find_pending(&d[i], -1, NULL, -1);
		if (!e)
			continue;
		double waited = waited_s(&d[i], e);
		int p2p = (int)num_field(e, "p2p", 0);
		cJSON *o = cJSON_CreateObject();
		if (waited < min_wait_s) { /* a call in progress, not (yet) a hang */
			cJSON_AddNumberToObject(o, "rank", d[i].rank);
			cJSON_AddStringToObject(o, "comm", str_field(e, "comm"));
			cJSON_AddStringToObject(o, "op", str_field(e, "op"));
			cJSON_AddNumberToObject(o, "seq", (double)num_field(e, "seq", 0));
			cJSON_AddNumberToObject(o, "waited_s", waited);
			cJSON_AddItemToArray(inflight, o);
			ninflight++;
			continue;
		}
		nstuck++;
		cJSON_AddNumberToObject(o, "rank", d[i].rank);
		cJSON_AddStringToObject(o, "host", HOST(d[i].rank));
		cJSON_AddStringToObject(o, "comm", str_field(e, "comm"));
		cJSON_AddNumberToObject(o, "comm_id", (double)num_field(e, "comm_id", -1));
		cJSON_AddStringToObject(o, "op", str_field(e, "op"));
		cJSON_AddNumberToObject(o, "seq", (double)num_field(e, "seq", 0));
		cJSON_AddBoolToObject(o, "p2p", p2p);
		cJSON_AddNumberToObject(o, "peer", (double)num_field(e, "peer", -1));
		cJSON_AddStringToObject(o, "state", str_field(e, "state"));
		cJSON_AddNumberToObject(o, "waited_s", waited);
		cJSON_AddItemToArray(stuck, o);
		size_t l = strlen(stuck_msg);
		if (l + 128 < sizeof stuck_msg) {
			if (p2p)
				snprintf(stuck_msg + l, sizeof stuck_msg - l,
					 "%srank %d (%.60s) in %s %s rank %lld on '%s' for %.1f s", l ? "; " : "", d[i].rank,
					 HOST(d[i].rank), str_field(e, "op"), !strcmp(str_field(e, "op"), "send") ? "to" : "from",
					 (long long)num_field(e, "peer", -1), str_field(e, "comm"), waited);
			else
				snprintf(stuck_msg + l, sizeof stuck_msg - l, "%srank %d (%.60s) in %s seq %lld on '%s' for %.1f s",
					 l ? "; " : "", d[i].rank, HOST(d[i].rank), str_field(e, "op"), (long long)num_field(e, "seq", 0),
					 str_field(e, "comm"), waited);
			int npend = 0;
			const cJSON *pe;
			cJSON_ArrayForEach(pe, cJSON_GetObjectItemCaseSensitive(d[i].doc, "entries"))
				npend += strcmp(str_field(pe, "state"), "completed") != 0;
			cJSON_AddNumberToObject(o, "pending", npend);
			l = strlen(stuck_msg);
			if (npend > 1 && l + 40 < sizeof stuck_msg)
				snprintf(stuck_msg + l, sizeof stuck_msg - l, " (%d calls pending)", npend);
		}

		/* p2p: who should be there too */
		if (!p2p)
			continue;
		int64_t cid = num_field(e, "comm_id", -1);
		int peer = get_rank(e, "peer");
		const char *want = !strcmp(str_field(e, "op"), "recv") ? "send" : "recv";
		const struct hdump *pd = find_dump(d, nd, peer);
		int pk = known_index(known, nknown, peer);
		if (pk < 0 || is_missing[pk] || (pd && find_pending(pd, cid, want, d[i].rank)))
			continue;
		is_missing[pk] = 1;
		nmissing++;
		cJSON *m = cJSON_CreateObject();
		cJSON_AddNumberToObject(m, "rank", peer);
		cJSON_AddStringToObject(m, "host", HOST(peer));
		cJSON_AddStringToObject(m, "comm", str_field(e, "comm"));
		cJSON_AddNumberToObject(m, "comm_id", (double)cid);
		cJSON_AddStringToObject(m, "op", want);
		cJSON_AddNumberToObject(m, "seq", (double)num_field(e, "seq", 0));
		cJSON_AddBoolToObject(m, "dump", pd != NULL);
		cJSON_AddItemToArray(missing, m);
		size_t ml = strlen(missing_msg);
		if (ml + 128 < sizeof missing_msg)
			snprintf(missing_msg + ml, sizeof missing_msg - ml,
				 "%srank %d (%.60s) never posted the %s matching rank %d's %s on '%s'%s", ml ? "; " : "", peer,
				 HOST(peer), want, d[i].rank, str_field(e, "op"), str_field(e, "comm"), pd ? "" : " (no dump)");
	}

	/* collectives, per communicator: the first seq some members started and a member never reached */
	for (int i = 0; i < nd; i++) {
		const cJSON *cm;
		cJSON_ArrayForEach(cm, cJSON_GetObjectItemCaseSensitive(d[i].doc, "comms"))
		{
			int64_t cid = num_field(cm, "id", -1);
			const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(cm, "ranks");
			if (cid < 0 || cJSON_GetArraySize(ranks) < 2)
				continue;
			/* each communicator once: at the first dump (lowest rank) that has it */
			int seen = 0;
			for (int j = 0; j < i && !seen; j++)
				seen = find_comm(&d[j], cid) != NULL;
			if (seen)
				continue;
			int64_t lo = INT64_MAX, hi = -1;
			const cJSON *rk;
			cJSON_ArrayForEach(rk, ranks)
			{
				const struct hdump *qd = find_dump(d, nd, rk->valueint);
				const cJSON *qc = qd ? find_comm(qd, cid) : NULL;
				if (!qc)
					continue;
				int64_t le = arrived(qc);
				lo = le < lo ? le : lo;
				hi = le > hi ? le : hi;
			}
			if (hi < 0)
				continue;
			/* stuck on this communicator: a member pending on it for min_wait_s or more; the oldest
			 * collective pending on it is what the waiting members wait for */
			const char *op = NULL, *cname = str_field(cm, "kind"), *pend_op = NULL;
			int64_t pend_seq = INT64_MAX;
			int stuck_here = 0;
			for (int j = 0; j < nd; j++) {
				const cJSON *e;
				cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(d[j].doc, "entries"))
				{
					if (num_field(e, "comm_id", -1) != cid || num_field(e, "p2p", 0))
						continue;
					if (lo < INT64_MAX && num_field(e, "seq", 0) == lo + 1 && !op) {
						op = str_field(e, "op");
						cname = str_field(e, "comm");
					}
					if (!strcmp(str_field(e, "state"), "completed"))
						continue;
					if (waited_s(&d[j], e) >= min_wait_s)
						stuck_here = 1;
					if (num_field(e, "seq", 0) < pend_seq) {
						pend_seq = num_field(e, "seq", 0);
						pend_op = str_field(e, "op");
					}
				}
			}
			if (!stuck_here)
				continue;
			/* members with a dump are compared by seq: the first one some started and they never did;
			 * a member without one (killed with -9) is missing at the call the others wait in */
			int64_t seq = lo < INT64_MAX ? lo + 1 : lo;
			if (!op)
				op = "collective";
			int64_t seq_nodump = pend_seq < INT64_MAX ? pend_seq : seq;
			const char *op_nodump = pend_op ? pend_op : op;
			cJSON_ArrayForEach(rk, ranks)
			{
				int q = rk->valueint;
				int qk = known_index(known, nknown, q);
				if (qk < 0 || is_missing[qk])
					continue;
				const struct hdump *qd = find_dump(d, nd, q);
				const cJSON *qc = qd ? find_comm(qd, cid) : NULL;
				int64_t q_enq = qc ? num_field(qc, "last_enqueued", 0) : -1;
				if (qc && (hi == lo || arrived(qc) > lo))
					continue; /* every member arrived, or this one reached the first seq they differ */
				is_missing[qk] = 1;
				nmissing++;
				cJSON *m = cJSON_CreateObject();
				cJSON_AddNumberToObject(m, "rank", q);
				cJSON_AddStringToObject(m, "host", HOST(q));
				cJSON_AddStringToObject(m, "comm", cname);
				cJSON_AddNumberToObject(m, "comm_id", (double)cid);
				cJSON_AddStringToObject(m, "op", qc ? op : op_nodump);
				cJSON_AddNumberToObject(m, "seq", (double)(qc ? seq : seq_nodump));
				cJSON_AddBoolToObject(m, "dump", qd != NULL);
				if (qc) {
					cJSON_AddNumberToObject(m, "last_enqueued", (double)q_enq);
					cJSON_AddNumberToObject(m, "last_started", (double)arrived(qc));
					cJSON_AddBoolToObject(m, "enqueued_not_started", q_enq >= seq);
					cJSON_AddNumberToObject(m, "last_completed", (double)num_field(qc, "last_completed", 0));
				}
				cJSON_AddItemToArray(missing, m);
				size_t ml = strlen(missing_msg);
				if (ml + 200 < sizeof missing_msg) {
					if (qc && q_enq >= seq)
						snprintf(missing_msg + ml, sizeof missing_msg - ml,
							 "%srank %d (%.60s) never arrived at %s seq %lld on '%s': it enqueued the call "
							 "but never started it (its communication thread is stuck; others reached seq "
							 "%lld; its last started there: seq %lld, completed %lld)",
							 ml ? "; " : "", q, HOST(q), op, (long long)seq, cname, (long long)hi,
							 (long long)arrived(qc), (long long)num_field(qc, "last_completed", 0));
					else if (qc)
						snprintf(missing_msg + ml, sizeof missing_msg - ml,
							 "%srank %d (%.60s) never arrived at %s seq %lld on '%s' (first seq where the "
							 "ranks differ, others reached seq %lld; its last there: seq %lld, completed "
							 "%lld)", ml ? "; " : "", q, HOST(q), op, (long long)seq, cname, (long long)hi,
							 (long long)q_enq, (long long)num_field(qc, "last_completed", 0));
					else
						snprintf(missing_msg + ml, sizeof missing_msg - ml,
							 "%srank %d (%.60s) never arrived at %s seq %lld on '%s' (the seq the "
							 "others wait in; it wrote no dump)", ml ? "; " : "", q, HOST(q), op_nodump,
							 (long long)seq_nodump, cname);
				}
			}
		}
	}
	if (!nstuck) {
		diag_check_add(r, DIAG_PASS, "hang.stuck", NULL,
			       "no operation had waited %.1f s or more in any of the %d dumps (%d call(s) in progress); the "
			       "job was not stuck in comm when they were written", min_wait_s, nd, ninflight);
	} else {
		diag_check_add(r, DIAG_FAIL, "hang.stuck",
			       "the stuck ranks wait for the missing ones; see hang.missing",
			       "%d rank(s) stuck: %s", nstuck, stuck_msg);
		if (nmissing) {
			/* the hosts of the missing ranks: one host with all its ranks missing points at the host
			 * (its link, its processes) rather than at one rank */
			char by_host[512] = "";
			for (int q = 0; q < nknown; q++) {   /* indices into known[] */
				if (!is_missing[q])
					continue;
				int first = 1;
				for (int p = 0; p < q && first; p++)
					first = !(is_missing[p] && !strcmp(hosts[p], hosts[q]));
				if (!first)
					continue;
				size_t l = strlen(by_host);
				snprintf(by_host + l, sizeof by_host - l, "%s%.60s (rank", l ? ", " : "", hosts[q]);
				for (int p = q, k = 0; p < nknown; p++)
					if (is_missing[p] && !strcmp(hosts[p], hosts[q])) {
						l = strlen(by_host);
						snprintf(by_host + l, sizeof by_host - l, "%s%d", k++ ? "," : " ", known[p]);
					}
				l = strlen(by_host);
				snprintf(by_host + l, sizeof by_host - l, ")");
			}
			diag_check_add(r, DIAG_FAIL, "hang.missing",
				       "find out what the missing rank was doing instead: its log, its last completed "
				       "operation, a stack (gdb -p PID or SIGUSR1 for a dump while it runs); a rank that "
				       "skips or reorders a collective desynchronises the job; when every rank of a host "
				       "is missing, check that host (diag net there: its link, its MTU)",
				       "missing on host(s) %s: %s", by_host, missing_msg);
		}
		else
			diag_check_add(r, DIAG_WARN, "hang.missing",
				       "every member reached the call: suspect the network or the MPI library (try "
				       "'ascent diag net'), or a rank that died after its dump",
				       "every member of the stuck communicators arrived at the pending calls");
	}
out:
#undef HOST
	free(is_missing);
	free(known);
	free(hosts);
	for (int i = 0; i < nd; i++)
		cJSON_Delete(d[i].doc);
	free(d);
	return rc;
}
