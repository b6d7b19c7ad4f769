/* diag/advise_rules.c — the advisor's rules. Each reads the profile through db/ (and the shared
 * context of advise.c), decides with a stated threshold, and records a finding (severity, the
 * numbers with ranks, hosts and steps, the SQL to see them in the sqlite3 shell, the fix), an OK
 * with the figure that stayed below the threshold, or a skip with the missing data.
 *
 * Shares are sums over ranks and usable steps (the first step is excluded as warm-up when there
 * are three or more): share = Σ part_ns / Σ total_ns of step_stat rows. */
#include "diag/advise_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct rank_sum {
	int rank;
	int nsteps;
	int64_t total, computing, comm, overlapped, cno, free, bubble, preparing;
};

/* Per-rank sums of the usable step rows; *out malloc'd (caller frees), ascending rank. */
static int rank_sums(const struct adv_ctx *x, struct rank_sum **out, int *n)
{
	*out = NULL;
	*n = 0;
	struct rank_sum *v = calloc((size_t)(x->nranks ? x->nranks : 1), sizeof *v);
	if (!v)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < x->nranks; i++)
		v[i].rank = x->ranks[i].rank;
	for (int i = 0; i < x->nsteps; i++) {
		const struct db_step_stat *s = &x->steps[i];
		int k = adv_rank_index(x, s->rank);
		if (k < 0)   /* a step row of a rank the rank table lacks: not compared */
			continue;
		struct rank_sum *r = &v[k];
		r->nsteps++;
		r->total += s->total_ns;
		r->computing += s->computing_ns;
		r->comm += s->comm_ns;
		r->overlapped += s->overlapped_ns;
		r->cno += s->comm_not_overlapped_ns;
		r->free += s->free_ns;
		r->bubble += s->bubble_ns;
		r->preparing += s->preparing_ns;
	}
	for (int i = 0; i < x->nranks; i++)   /* ranks with steps only, order kept */
		if (v[i].nsteps)
			v[(*n)++] = v[i];
	*out = v;
	return 0;
}

static void all_sum(const struct adv_ctx *x, struct rank_sum *t)
{
	memset(t, 0, sizeof *t);
	for (int i = 0; i < x->nsteps; i++) {
		const struct db_step_stat *s = &x->steps[i];
		t->total += s->total_ns;
		t->computing += s->computing_ns;
		t->comm += s->comm_ns;
		t->overlapped += s->overlapped_ns;
		t->cno += s->comm_not_overlapped_ns;
		t->free += s->free_ns;
		t->bubble += s->bubble_ns;
		t->preparing += s->preparing_ns;
	}
}

static double share(int64_t part, int64_t total)
{
	return total > 0 ? (double)part / (double)total : 0;
}

static struct db_filter usable(const struct adv_ctx *x)
{
	return (struct db_filter){ -1, x->step_lo, x->step_hi };
}

static int rank_has_lane(const struct db_device_lane *l, int n, int rank)
{
	for (int i = 0; i < n; i++)
		if (l[i].rank == rank)
			return 1;
	return 0;
}

#define NO_STEPS "no step decomposition: the profile recorded no steps (step_stat is empty)"

/* ------------------------------------------------------------------------------------------ */

int adv_rule_free_time(struct adv_ctx *x)
{
	const char *R = "compute.free_time";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	struct db_device_lane *lanes;
	int nlanes, host_steps = 0, rc0 = db_device_lanes(x->db, &lanes, &nlanes);
	if (rc0)
		return rc0;
	for (int i = 0; i < x->nsteps && nlanes; i++)
		host_steps += !rank_has_lane(lanes, nlanes, x->steps[i].rank);
	free(lanes);
	if (nlanes && !host_steps)
		return adv_skip(x, R, "every rank's steps are split on its devices (an imported GPU trace): device.idle "
				      "applies");
	struct rank_sum t, *rs;
	int nr, rc;
	all_sum(x, &t);
	if ((rc = rank_sums(x, &rs, &nr)))
		return rc;
	double f = share(t.free, t.total);
	int worst = 0;
	for (int i = 1; i < nr; i++)
		if (share(rs[i].free, rs[i].total) > share(rs[worst].free, rs[worst].total))
			worst = i;
	char steps[160], ev[2048] = "", q[1024];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev,
		"free (neither computing nor communicating) %.1f%% of step time, computing %.1f%%, communication not "
		"overlapped %.1f%%, preparing (step start to first op) %.1f%%; worst rank %d (%s) free %.1f%%; %s",
		100 * f, 100 * share(t.computing, t.total), 100 * share(t.cno, t.total), 100 * share(t.preparing, t.total),
		rs[worst].rank, adv_host(x, rs[worst].rank), 100 * share(rs[worst].free, rs[worst].total), steps);
	snprintf(q, sizeof q,
		 "SELECT rank, round(100.0*sum(free_ns)/sum(total_ns),1) AS free_pct, "
		 "round(100.0*sum(computing_ns)/sum(total_ns),1) AS computing_pct, "
		 "round(100.0*sum(preparing_ns)/sum(total_ns),1) AS preparing_pct FROM step_stat "
		 "WHERE step BETWEEN %lld AND %lld GROUP BY rank ORDER BY free_pct DESC;",
		 (long long)x->step_lo, (long long)x->step_hi);
	free(rs);
	if (f > 0.20)
		return adv_fire(x, R, f > 0.40 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, f, 0.20, ev, q,
				"the CPU is idle between operators: if data loading shows (data.loading) prefetch the next "
				"batch on a thread and keep shards on local disk; otherwise it is host overhead: a larger "
				"micro-batch or fused operators (fewer, bigger ops), fewer synchronisations/logging per step, "
				"no oversubscribed threads (host.threads), checkpoints outside the step",
				"compute share %.0f%%: the step is idle %.0f%% of the time (threshold 20%%)",
				100 * share(t.computing, t.total), 100 * f);
	return adv_ok(x, R, "free time %.1f%% of the step (threshold 20%%), computing %.1f%%", 100 * f,
		      100 * share(t.computing, t.total));
}

struct data_acc {
	int64_t data_ns, n;
};

static int data_cb(void *ud, const struct db_event *e)
{
	struct data_acc *d = ud;
	if (e->kind == DB_KIND_DATA) {
		d->data_ns += e->dur_ns;
		d->n++;
	}
	return 0;
}

int adv_rule_data_loading(struct adv_ctx *x)
{
	const char *R = "data.loading";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	struct data_acc d = { 0, 0 };
	int rc = db_each_event(x->db, usable(x), data_cb, &d);
	if (rc)
		return rc;
	struct rank_sum t;
	all_sum(x, &t);
	double s = share(d.data_ns, t.total);
	if (!d.n)
		return adv_ok(x, R, "no data-loading ranges recorded in %s", "the usable steps");
	char ev[2048] = "", q[1024];
	char steps[160];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev, "%lld data-loading range(s), %.3f s in total = %.1f%% of step time (summed over ranks); "
			       "mean %.3f ms per range; %s",
		(long long)d.n, d.data_ns / 1e9, 100 * s, d.data_ns / 1e6 / (double)d.n, steps);
	snprintf(q, sizeof q,
		 "SELECT e.rank, count(*) AS ranges, sum(e.dur_ns)/1e6 AS data_ms FROM event e WHERE e.kind = "
		 DB_SQL_KIND_DATA " AND e.step BETWEEN %lld AND %lld GROUP BY e.rank;  -- vs SELECT rank, "
		 "sum(total_ns)/1e6 FROM step_stat GROUP BY rank",
		 (long long)x->step_lo, (long long)x->step_hi);
	if (s > 0.10)
		return adv_fire(x, R, s > 0.25 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, s, 0.10, ev, q,
				"load the next batch while this one computes (a prefetch thread / double buffer), keep "
				"token shards on local disk or in the page cache, and avoid per-step decoding or shuffling "
				"work on the training thread",
				"data loading takes %.0f%% of the step (threshold 10%%)", 100 * s);
	return adv_ok(x, R, "data loading %.1f%% of step time (threshold 10%%)", 100 * s);
}

/* The top collectives by time, for the evidence of the comm rules. */
static void top_comms(struct adv_ctx *x, char *ev, size_t n)
{
	struct db_comm_stat *cs = NULL;
	int nc = 0;
	if (db_comm_stats(x->db, usable(x), &cs, &nc))
		return;
	int idx[3] = { -1, -1, -1 };
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < nc; i++) {
			int used = 0;
			for (int j = 0; j < k; j++)
				used |= idx[j] == i;
			if (!used && (idx[k] < 0 || cs[i].total_ns > cs[idx[k]].total_ns))
				idx[k] = i;
		}
	for (int k = 0; k < 3; k++) {
		if (idx[k] < 0)
			break;
		const struct db_comm_stat *c = &cs[idx[k]];
		adv_cat(ev, n, "%s%s %lld x ~%lld B: %.3f s, busbw %.2f GB/s", k ? "; " : "; top collectives: ", c->name,
			(long long)c->count, c->count ? (long long)(c->bytes / c->count) : 0LL, c->total_ns / 1e9,
			c->busbw_gbs);
	}
	db_comm_stats_free(cs, nc);
}

int adv_rule_comm_exposed(struct adv_ctx *x)
{
	const char *R = "comm.exposed";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	struct rank_sum t;
	all_sum(x, &t);
	double s = share(t.cno, t.total);
	if (s <= 0.30)
		return adv_ok(x, R, "communication not overlapped %.1f%% of the step (threshold 30%%)", 100 * s);
	char ev[2048] = "", q[1024], steps[160];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev,
		"communication not overlapped with compute %.1f%% of step time (the time the computing threads waited "
		"for collectives on the communication lanes, and blocking sends/receives; communication %.1f%%, of "
		"which %.1f%% overlapped); %s",
		100 * s, 100 * share(t.comm, t.total), 100 * share(t.overlapped, t.comm), steps);
	top_comms(x, ev, sizeof ev);
	snprintf(q, sizeof q,
		 "SELECT rank, round(100.0*sum(comm_not_overlapped_ns)/sum(total_ns),1) AS exposed_pct, "
		 "round(100.0*sum(comm_ns)/sum(total_ns),1) AS comm_pct FROM step_stat WHERE step BETWEEN %lld AND %lld "
		 "GROUP BY rank;  SELECT * FROM comm_summary;",
		 (long long)x->step_lo, (long long)x->step_hi);
	return adv_fire(x, R, s > 0.50 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, s, 0.30, ev, q,
			"overlap gradient all-reduce with the backward pass in buckets (DDP-style, ~25 MB buckets, start a "
			"bucket as soon as its grads are ready); keep tensor parallelism inside a host and put pipeline "
			"or data parallelism across hosts; grow the micro-batch or use gradient accumulation so each "
			"step communicates less often; check the links with ascent diag comm",
			"communication is exposed for %.0f%% of the step (threshold 30%%)", 100 * s);
}

int adv_rule_comm_overlap(struct adv_ctx *x)
{
	const char *R = "comm.not_overlapped";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	struct rank_sum t;
	all_sum(x, &t);
	double cs = share(t.comm, t.total), ov = share(t.overlapped, t.comm);
	if (!t.comm)
		return adv_ok(x, R, "no communication recorded in the steps");
	if (cs < 0.10 || ov >= 0.10)
		return adv_ok(x, R, "%.1f%% of communication overlaps compute (communication %.1f%% of the step; rule: "
				    ">= 10%% of the step and < 10%% overlapped)", 100 * ov, 100 * cs);
	char ev[2048] = "", q[1024], steps[160];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev, "communication %.1f%% of step time, only %.1f%% of it overlapped with computing; %s",
		100 * cs, 100 * ov, steps);
	top_comms(x, ev, sizeof ev);
	snprintf(q, sizeof q,
		 "SELECT rank, sum(overlapped_ns)*100.0/sum(comm_ns) AS overlapped_pct_of_comm, "
		 "sum(comm_ns)*100.0/sum(total_ns) AS comm_pct FROM step_stat WHERE step BETWEEN %lld AND %lld GROUP BY rank;",
		 (long long)x->step_lo, (long long)x->step_hi);
	return adv_fire(x, R, DIAG_SEV_MEDIUM, ov, 0.10, ev, q,
			"issue collectives non-blocking (comm_iallreduce) as soon as their inputs are ready and wait only "
			"when the result is needed: bucket gradients during the backward pass, prefetch ZeRO/TP gathers "
			"one layer ahead",
			"communication never overlaps computation (%.0f%% overlapped, %.0f%% of the step)", 100 * ov,
			100 * cs);
}

int adv_rule_tiny_collectives(struct adv_ctx *x)
{
	const char *R = "comm.tiny";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	struct db_comm_stat *cs = NULL;
	int nc = 0, rc = db_comm_stats(x->db, usable(x), &cs, &nc);
	if (rc)
		return rc;
	int64_t cnt = 0, ns = 0, bytes = 0, all = 0, unknown = 0;
	for (int i = 0; i < nc; i++) {
		if (cs[i].kind != DB_KIND_COMM)
			continue;
		all += cs[i].count;
		if (cs[i].bytes == 0) {   /* size unknown (a trace that names no element count or type), or a barrier */
			unknown += cs[i].count;
			continue;
		}
		if (cs[i].bucket < 65536) {
			cnt += cs[i].count;
			ns += cs[i].total_ns;
			bytes += cs[i].bytes;
		}
	}
	db_comm_stats_free(cs, nc);
	if (all && unknown == all)
		return adv_skip(x, R, "sizes unknown: none of the %lld collective(s) has a byte count (the trace names no "
				      "element count or type)", (long long)all);
	struct rank_sum t;
	all_sum(x, &t);
	double per = (double)cnt / x->nsteps, s = share(ns, t.total);
	char unk[128] = "";
	if (unknown)
		snprintf(unk, sizeof unk, "; %lld of %lld collective(s) of unknown size not counted", (long long)unknown,
			 (long long)all);
	if (!cnt || per < 16 || s < 0.05)
		return adv_ok(x, R, "%.1f collective(s) under 64 KiB per rank-step taking %.1f%% of step time (rule: >= 16 "
				    "per rank-step and >= 5%%)%s", per, 100 * s, unk);
	char ev[2048] = "", q[1024], steps[160];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev,
		"%lld of %lld collectives are under 64 KiB (mean %lld B): %.1f per rank per step, %.3f s = %.1f%% of step "
		"time (summed over ranks); at this size each call costs its latency, not its bytes%s; %s",
		(long long)cnt, (long long)all, (long long)(bytes / cnt), per, ns / 1e9, 100 * s, unk, steps);
	snprintf(q, sizeof q,
		 "SELECT s.value AS name, count(*) AS calls, avg(e.bytes) AS mean_bytes, sum(e.dur_ns)/1e6 AS ms FROM event e "
		 "JOIN string s ON s.id = e.name_id WHERE e.kind = " DB_SQL_KIND_COMM " AND e.bytes > 0 AND e.bytes < 65536 AND e.step "
		 "BETWEEN %lld AND %lld GROUP BY s.value ORDER BY ms DESC;",
		 (long long)x->step_lo, (long long)x->step_hi);
	return adv_fire(x, R, s > 0.15 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, s, 0.05, ev, q,
			"bucket small tensors into one flat buffer per collective (DDP buckets of ~25 MB, first bucket "
			"1 MB), coalesce per-layer norms/scalars into one all-reduce per step, and avoid per-parameter "
			"collectives",
			"%.0f tiny collectives per rank-step take %.0f%% of the step: bucket them", per, 100 * s);
}

struct tp_acc {
	struct adv_ctx *x;
	int64_t comm_id;
	char hosts[8][64];
	int nhosts, nmembers;
	char ranks[256];
	int groups, spanning;
	char ev[1536];
};

static void tp_close(struct tp_acc *t)
{
	if (t->comm_id < 0)
		return;
	t->groups++;
	if (t->nhosts > 1) {
		t->spanning++;
		adv_cat(t->ev, sizeof t->ev, "%stp group %lld (ranks %s) spans %d hosts", t->spanning > 1 ? "; " : "",
			(long long)t->comm_id, t->ranks, t->nhosts);
	}
	t->comm_id = -1;
	t->nhosts = t->nmembers = 0;
	t->ranks[0] = 0;
}

static int tp_cb(void *ud, int rank, int64_t comm_id, const char *name, int size, int rank_in_comm)
{
	(void)size;
	(void)rank_in_comm;
	struct tp_acc *t = ud;
	if (!name || strcmp(name, "tp"))
		return 0;
	if (comm_id != t->comm_id) {
		tp_close(t);
		t->comm_id = comm_id;
	}
	const char *h = adv_host(t->x, rank);
	int seen = 0;
	for (int i = 0; i < t->nhosts; i++)
		seen |= !strcmp(t->hosts[i], h);
	if (!seen && t->nhosts < 8)
		snprintf(t->hosts[t->nhosts++], sizeof t->hosts[0], "%s", h);
	adv_cat(t->ranks, sizeof t->ranks, "%s%d (%s)", t->nmembers ? ", " : "", rank, h);
	t->nmembers++;
	return 0;
}

int adv_rule_tp_across_hosts(struct adv_ctx *x)
{
	const char *R = "comm.tp_across_hosts";
	struct tp_acc t;
	memset(&t, 0, sizeof t);
	t.x = x;
	t.comm_id = -1;
	int rc = db_each_comm(x->db, tp_cb, &t);
	if (rc)
		return rc;
	tp_close(&t);
	if (!t.groups)
		return adv_skip(x, R, "no tensor-parallel communicator ('tp') in the comm table");
	if (!t.spanning)
		return adv_ok(x, R, "all %d tensor-parallel group(s) stay on one host", t.groups);
	char ev[2048];
	snprintf(ev, sizeof ev, "%d of %d tensor-parallel group(s) span hosts: %s (TP all-reduces 4 times per layer per "
				"micro-batch, on the critical path)", t.spanning, t.groups, t.ev);
	return adv_fire(x, R, DIAG_SEV_HIGH, t.spanning, 0, ev,
			"SELECT c.comm_id, group_concat(c.rank || '@' || r.host) AS members, count(DISTINCT r.host) AS hosts "
			"FROM comm c JOIN rank r ON r.rank = c.rank WHERE c.name = 'tp' GROUP BY c.comm_id HAVING hosts > 1;",
			"place tensor parallelism inside a host (consecutive ranks form a TP group: launch with ranks packed "
			"by host, e.g. mpirun --map-by ppr:N:node) and use pipeline or data parallelism across hosts",
			"tensor parallelism crosses hosts in %d group(s)", t.spanning);
}

struct mb_acc {
	int max_mb;
};

static int mb_cb(void *ud, const struct db_event *e)
{
	struct mb_acc *m = ud;
	if (e->mb > m->max_mb)
		m->max_mb = e->mb;
	return 0;
}

int adv_rule_bubble(struct adv_ctx *x)
{
	const char *R = "pipeline.bubble";
	int p = adv_config_int(x, "pp", 0);
	if (p <= 0) {   /* from the rank table's pipeline coordinates */
		int mx = -1;
		for (int i = 0; i < x->nranks; i++)
			mx = x->ranks[i].pp_rank > mx ? x->ranks[i].pp_rank : mx;
		p = mx + 1;
	}
	if (p <= 1)
		return adv_skip(x, R, "no pipeline (pp = 1 in the run config and the rank table)");
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	int m = adv_config_int(x, "microbatches", 0);
	const char *msrc = "run config";
	if (m <= 0) {
		struct mb_acc a = { -1 };
		int rc = db_each_event(x->db, usable(x), mb_cb, &a);
		if (rc)
			return rc;
		m = a.max_mb + 1;
		msrc = "largest micro-batch index in the events + 1";
	}
	if (m <= 0)
		return adv_skip(x, R, "pp = %d but the number of micro-batches is unknown (no 'microbatches' in the run "
				      "config, no micro-batch tags on events)", p);
	int v = adv_config_int(x, "virtual_stages", 1);
	v = v < 1 ? 1 : v;
	double theory = (double)(p - 1) / (double)(v * m + p - 1);
	struct rank_sum *rs;
	int nr, rc;
	if ((rc = rank_sums(x, &rs, &nr)))
		return rc;
	double sum = 0;
	int worst = 0;
	char per[768] = "";
	for (int i = 0; i < nr; i++) {
		double b = share(rs[i].bubble, rs[i].total);
		sum += b;
		if (b > share(rs[worst].bubble, rs[worst].total))
			worst = i;
		if (i < 16)
			adv_cat(per, sizeof per, "%srank %d (%s, stage %d) %.1f%%", i ? ", " : "", rs[i].rank,
				adv_host(x, rs[i].rank), adv_pp_rank(x, rs[i].rank), 100 * b);
	}
	double meas = nr ? sum / nr : 0;
	char ev[2048] = "", q[1024], steps[160];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev,
		"bubble (time in pipeline receives) %.1f%% of the step on average over ranks; theory (p-1)/(v*m+p-1) = "
		"%d/(%d*%d+%d) = %.1f%% for p=%d stages, m=%d micro-batches (%s), v=%d; per rank: %s; %s",
		100 * meas, p - 1, v, m, p - 1, 100 * theory, p, m, msrc, v, per, steps);
	snprintf(q, sizeof q,
		 "SELECT s.rank, r.pp_rank, round(100.0*sum(s.bubble_ns)/sum(s.total_ns),1) AS bubble_pct FROM step_stat s "
		 "JOIN rank r ON r.rank = s.rank WHERE s.step BETWEEN %lld AND %lld GROUP BY s.rank;",
		 (long long)x->step_lo, (long long)x->step_hi);
	int need = (int)ceil(9.0 * (p - 1) / v);   /* m for a theoretical bubble under 10% */
	char fix[768];
	int worst_rank = rs[worst].rank;
	free(rs);
	double margin = theory + fmax(0.05, 0.25 * theory);
	if (meas > margin) {
		snprintf(fix, sizeof fix,
			 "the bubble exceeds the schedule's own: balance the stages (layers per stage, the first and last "
			 "stages also hold the embedding and the head), look for a slow stage (rank.slow), and send/recv "
			 "without extra synchronisation; then raise micro-batches (m >= %d gives < 10%% in theory) or "
			 "use the interleaved schedule (v=2 halves the theoretical bubble: %.1f%%)",
			 need, 100.0 * (p - 1) / (2.0 * m + p - 1));
		return adv_fire(x, R, meas > 2 * theory + 0.05 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, meas, margin, ev, q, fix,
				"pipeline bubble %.0f%% of the step, above the %.0f%% the schedule explains (worst rank %d)",
				100 * meas, 100 * theory, worst_rank);
	}
	if (theory > 0.20) {
		snprintf(fix, sizeof fix,
			 "more micro-batches per step (m >= %d brings the theory under 10%%; keep m a multiple of p) or "
			 "the interleaved 1F1B schedule with v=2 (%.1f%%)",
			 need, 100.0 * (p - 1) / (2.0 * m + p - 1));
		return adv_fire(x, R, DIAG_SEV_LOW, meas, 0.20, ev, q, fix,
				"pipeline bubble %.0f%% matches theory, but the schedule itself idles %.0f%% (p=%d, m=%d)",
				100 * meas, 100 * theory, p, m);
	}
	return adv_ok(x, R, "bubble %.1f%% vs theory %.1f%% (p=%d, m=%d, v=%d; rule: > theory + max(5%%, 25%% of "
			    "theory), or theory > 20%%)", 100 * meas, 100 * theory, p, m, v);
}

/* ---- slow rank --------------------------------------------------------------------------- */

struct arrive_acc {
	int64_t comm_id, seq;
	int last_rank;
	int64_t min_wait_seen;  /* the last arriver waits least */
	int64_t max_wait;       /* spread of this call: the first arriver's wait */
	int have;
	int64_t groups, spread_ns;
	int *last_count;        /* per index into ranks */
	struct adv_ctx *x;
};

static void arrive_close(struct arrive_acc *a)
{
	if (!a->have)
		return;
	a->groups++;
	a->spread_ns += a->max_wait;
	int k = adv_rank_index(a->x, a->last_rank);
	if (k >= 0)
		a->last_count[k]++;
	a->have = 0;
}

static int arrive_cb(void *ud, const struct db_match *m)
{
	struct arrive_acc *a = ud;
	if (!a->have || m->comm_id != a->comm_id || m->seq != a->seq) {
		arrive_close(a);
		a->have = 1;
		a->comm_id = m->comm_id;
		a->seq = m->seq;
		a->last_rank = m->rank;
		a->min_wait_seen = m->wait_ns;
		a->max_wait = m->wait_ns;
		return 0;
	}
	if (m->wait_ns < a->min_wait_seen) {
		a->min_wait_seen = m->wait_ns;
		a->last_rank = m->rank;
	}
	if (m->wait_ns > a->max_wait)
		a->max_wait = m->wait_ns;
	return 0;
}

int adv_rule_slow_rank(struct adv_ctx *x)
{
	const char *R = "rank.slow";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	struct rank_sum *rs;
	int nr, rc;
	if ((rc = rank_sums(x, &rs, &nr)))
		return rc;
	if (nr < 2) {
		free(rs);
		return adv_skip(x, R, "one rank: nothing to compare");
	}
	/* 1. computing time per step, compared within each pipeline stage */
	double worst_spread = 0, worst_abs = 0;   /* the spread relative to the median, and in ns per step */
	int slow = -1, slow_stage = -2;
	char per[1024] = "";
	double *tmp = malloc((size_t)nr * sizeof *tmp);
	if (!tmp) {
		free(rs);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < nr; i++)
		if (i < 16)
			adv_cat(per, sizeof per, "%srank %d (%s) %.3f ms", i ? ", " : "", rs[i].rank, adv_host(x, rs[i].rank),
				rs[i].computing / 1e6 / rs[i].nsteps);
	for (int pass = 0; pass < nr; pass++) {
		int stage = adv_pp_rank(x, rs[pass].rank);
		int first = 1;   /* handle each stage once, at its first rank */
		for (int j = 0; j < pass; j++)
			first &= adv_pp_rank(x, rs[j].rank) != stage;
		if (!first)
			continue;
		int k = 0, imax = -1, imin = -1;
		for (int j = 0; j < nr; j++) {
			if (adv_pp_rank(x, rs[j].rank) != stage)
				continue;
			double c = (double)rs[j].computing / rs[j].nsteps;
			tmp[k++] = c;
			if (imax < 0 || c > (double)rs[imax].computing / rs[imax].nsteps)
				imax = j;
			if (imin < 0 || c < (double)rs[imin].computing / rs[imin].nsteps)
				imin = j;
		}
		if (k < 2)
			continue;
		double med = stats_median(tmp, k);
		double spread = med > 0 ? ((double)rs[imax].computing / rs[imax].nsteps -
					   (double)rs[imin].computing / rs[imin].nsteps) / med : 0;
		if (spread > worst_spread) {
			worst_spread = spread;
			worst_abs = (double)rs[imax].computing / rs[imax].nsteps - (double)rs[imin].computing / rs[imin].nsteps;
			slow = rs[imax].rank;
			slow_stage = stage;
		}
	}
	free(tmp);
	/* 2. arrival at collectives */
	struct arrive_acc a;
	memset(&a, 0, sizeof a);
	a.x = x;
	a.last_count = calloc((size_t)(x->nranks ? x->nranks : 1), sizeof *a.last_count);
	if (!a.last_count) {
		free(rs);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	rc = db_each_match(x->db, usable(x), DB_KIND_COMM, arrive_cb, &a);
	arrive_close(&a);
	struct rank_sum t;
	all_sum(x, &t);
	double mean_step = (double)t.total / x->nsteps;
	double arr_share = 0, last_frac = 0;
	int late = -1;
	if (!rc && a.groups) {
		arr_share = (double)a.spread_ns / a.groups / mean_step;
		for (int i = 0; i < x->nranks; i++)
			if (late < 0 || a.last_count[i] > a.last_count[late])
				late = i;
		last_frac = (double)a.last_count[late] / a.groups;
	}
	free(rs);
	if (rc) {
		free(a.last_count);
		return rc;
	}
	char ev[2048] = "", steps[160], q[1024];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev,
		"computing time per step: %s; spread (max - min) / median of the per-rank mean computing time, within "
		"ranks of the same pipeline stage: %.1f%%%s",
		per, 100 * worst_spread, slow >= 0 ? "" : " (no stage with 2+ ranks)");
	if (slow >= 0)
		adv_cat(ev, sizeof ev, ", slowest rank %d (%s, stage %d)", slow, adv_host(x, slow), slow_stage);
	if (a.groups)
		adv_cat(ev, sizeof ev,
			"; collectives: %lld matched call(s), mean arrival spread (first to last arrival) %.3f ms = %.1f%% of "
			"the mean step %.3f ms; rank %d (%s) arrived last at %.0f%% of them",
			(long long)a.groups, a.spread_ns / 1e6 / a.groups, 100 * arr_share, mean_step / 1e6,
			x->ranks[late].rank, adv_host(x, x->ranks[late].rank), 100 * last_frac);
	else
		adv_cat(ev, sizeof ev, "; no collective matched across ranks");
	adv_cat(ev, sizeof ev, "; %s", steps);
	free(a.last_count);
	snprintf(q, sizeof q,
		 "SELECT s.rank, r.host, r.pp_rank, avg(s.computing_ns)/1e6 AS computing_ms, avg(s.total_ns)/1e6 AS step_ms "
		 "FROM step_stat s JOIN rank r ON r.rank = s.rank WHERE s.step BETWEEN %lld AND %lld GROUP BY s.rank ORDER "
		 "BY computing_ms DESC;  -- arrivals: event rows with kind = " DB_SQL_KIND_COMM " grouped by (comm_id, seq)",
		 (long long)x->step_lo, (long long)x->step_hi);
	/* both kinds of evidence past their thresholds: the one costing more of the step names the rank
	 * (a 2 ms computing spread is 60% of a 3 ms computing time but little of a 480 ms step that a
	 * late rank stretches by 27 ms at every collective) */
	double comp_share = mean_step > 0 ? worst_abs / mean_step : 0;
	int by_comp = worst_spread > 0.05 && slow >= 0;
	int by_arrival = arr_share > 0.05 && last_frac > 0.5 && late >= 0 && (!by_comp || arr_share > comp_share);
	double value = by_arrival ? arr_share : worst_spread;
	int who = by_arrival ? x->ranks[late].rank : slow;
	adv_cat(ev, sizeof ev, "; computing spread = %.1f%% of the mean step; named by %s (rule: computing spread > 5%% "
			       "of the median, or arrival spread > 5%% of the step with one rank last at > 50%%; both: the "
			       "larger share of the step)", 100 * comp_share,
		by_arrival ? "its late arrival" : "its computing time");
	if (by_comp || by_arrival)
		return adv_fire(x, R, value > 0.20 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, value, 0.05, ev, q,
				"look at the named rank's host: other processes, CPU frequency/thermal limits, a BLAS with the "
				"wrong core or thread count (host.blas_core, host.threads), a slower CPU model; compare with "
				"ascent diag comm for its links; balance the work if the rank holds more layers",
				"rank %d (%s) is slow: %s spread %.0f%% (threshold 5%%)", who, adv_host(x, who),
				by_arrival ? "arrival" : "computing", 100 * value);
	return adv_ok(x, R, "computing spread %.1f%% and arrival spread %.1f%% of the step (threshold 5%%)",
		      100 * worst_spread, 100 * arr_share);
}

/* ---- slow link: point-to-point transfers and two-member collectives on the matrix ---------- */

/* One link judged against its kind's median: a point-to-point (source, destination) by bandwidth, a
 * two-member collective's pair (a <-> b) by bandwidth, or by mean transit per call when the
 * collectives carry no byte size. ratio = value / median (bandwidth) or median / value (time): below
 * 0.5 is slow. */
struct link_judged {
	int a, b, coll;
	int64_t n;           /* transfers, or calls */
	double value;        /* GB/s, or ms per call */
	double ratio;
};

static int cmp_link_ratio(const void *p, const void *q)
{
	const struct link_judged *a = p, *b = q;
	if (a->ratio != b->ratio)
		return a->ratio < b->ratio ? -1 : 1;
	return a->a != b->a ? (a->a > b->a) - (a->a < b->a) : (a->b > b->b) - (a->b < b->b);
}

/* The matrix's links of one kind (enum db_matrix_via): point-to-point cells or ring links (a member to
 * the next one of its ring collectives) with a bandwidth, or each two-member collective pair once
 * (its two directions' bytes over the calls' transit); *by_time when some pair has no bytes (then
 * every pair is judged by its mean transit per call). Ratios to the median set; sorted slowest
 * first. */
static int links_judge(const struct db_comm_matrix *m, int via, struct link_judged **out, int *n, int *by_time,
		       double *median, int *no_time)
{
	int coll = via == DB_MATRIX_COLL;
	*n = 0;
	*no_time = 0;
	*by_time = 0;
	*median = 0;
	*out = malloc((size_t)(m->ncells ? m->ncells : 1) * sizeof **out);
	double *tmp = malloc((size_t)(m->ncells ? m->ncells : 1) * sizeof *tmp);
	if (!*out || !tmp) {
		free(tmp);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < m->ncells; i++) {
		const struct db_matrix_cell *c = &m->cells[i];
		if (c->via != via || !c->transfers)
			continue;
		struct link_judged l = { .a = c->src, .b = c->dst, .coll = coll, .n = c->transfers };
		if (!coll) {
			if (c->time_ns <= 0 || c->bytes <= 0)
				continue;
			l.value = c->gbs;
		} else {
			if (c->src > c->dst)   /* the pair once: its lower rank's row holds both directions' bytes */
				continue;
			if (c->time_ns <= 0) {   /* its two members' calls never overlapped (a late rank, a clock error) */
				(*no_time)++;
				continue;
			}
			int64_t bytes = c->bytes;
			for (int j = 0; j < m->ncells; j++)   /* the reverse direction: a neighbour in (via, src, dst) order */
				if (m->cells[j].via == DB_MATRIX_COLL && m->cells[j].src == c->dst && m->cells[j].dst == c->src) {
					bytes += m->cells[j].bytes;
					break;
				}
			if (bytes <= 0)
				*by_time = 1;
			l.value = (double)bytes / (double)c->time_ns;                     /* GB/s; time below */
			tmp[*n] = (double)c->time_ns / 1e6 / (double)c->transfers;      /* ms per call */
		}
		(*out)[(*n)++] = l;
	}
	if (coll && *by_time)
		for (int i = 0; i < *n; i++)
			(*out)[i].value = tmp[i];
	for (int i = 0; i < *n; i++)
		tmp[i] = (*out)[i].value;
	*median = stats_median(tmp, *n);
	free(tmp);
	for (int i = 0; i < *n; i++) {
		struct link_judged *l = &(*out)[i];
		if (coll && *by_time)
			l->ratio = l->value > 0 ? *median / l->value : 1e9;
		else
			l->ratio = *median > 0 ? l->value / *median : 1e9;
	}
	if (*n > 1)
		qsort(*out, (size_t)*n, sizeof **out, cmp_link_ratio);
	return 0;
}

/* Evidence for one kind's links, and the slow ones' names; the count of slow links. */
static int links_text(struct adv_ctx *x, const struct link_judged *v, int n, int via, int by_time, double med,
		      int no_time, char *ev, size_t nev, char *names, size_t nnames, int *nnamed)
{
	int coll = via == DB_MATRIX_COLL;
	const char *arrow = coll ? "<->" : "->";
	const char *unit = by_time ? "ms/call" : "GB/s";
	if (via == DB_MATRIX_RING)
		adv_cat(ev, nev, "%sring links per (rank, next rank) of ring collectives, slowest first (ring bytes / the "
				 "calls' transit, GB/s, docs/cluster.md): ", *ev ? "; " : "");
	else if (!coll)
		adv_cat(ev, nev, "%spoint-to-point bandwidth per (source, destination) rank, slowest first (bytes / time from "
				 "both posted to the data received, GB/s, docs/cluster.md): ", *ev ? "; " : "");
	else if (!by_time)
		adv_cat(ev, nev, "%stwo-member collectives per rank pair, slowest first (both members' bytes / the calls' "
				 "transit, GB/s, docs/cluster.md): ", *ev ? "; " : "");
	else
		adv_cat(ev, nev, "%stwo-member collectives per rank pair, slowest first, judged by time: the calls carry no "
				 "byte size, so the mean transit per call (the shorter end - the later start of the two "
				 "members, ms) stands for the link's speed: ", *ev ? "; " : "");
	for (int i = 0; i < n && i < 12; i++)
		adv_cat(ev, nev, "%s%d%s%d %.3f (%lld %s)", i ? ", " : "", v[i].a, arrow, v[i].b, v[i].value, (long long)v[i].n,
			coll || via == DB_MATRIX_RING ? "calls" : "transfers");
	adv_cat(ev, nev, "; median over %d %s %.3f %s; rule: %s", n,
		coll ? "pairs" : via == DB_MATRIX_RING ? "ring links" : "(source, destination) pairs", med,
		unit, by_time ? "a pair above 2 x the median time per call is a slow link"
			      : "a pair below 0.5 x the median bandwidth is a slow link");
	if (no_time)
		adv_cat(ev, nev, "; %d pair(s) not judged: their members' calls never overlapped (transit 0: a late rank or "
				 "a clock error, see rank.slow)", no_time);
	int nslow = 0;
	for (int i = 0; i < n && v[i].ratio < 0.5; i++) {
		nslow++;
		if (++*nnamed <= 8)
			adv_cat(names, nnames, "%srank %d (%s) %s rank %d (%s)", *nnamed > 1 ? ", " : "", v[i].a,
				adv_host(x, v[i].a), arrow, v[i].b, adv_host(x, v[i].b));
	}
	return nslow;
}

int adv_rule_slow_link(struct adv_ctx *x)
{
	const char *R = "link.slow";
	struct db_comm_matrix m;
	int rc = db_comm_matrix(x->db, &m);
	if (rc)
		return rc;
	struct link_judged *p = NULL, *c = NULL, *g = NULL;
	int np = 0, nc = 0, ng = 0, p_time = 0, c_time = 0, g_time = 0, p_none = 0, c_none = 0, g_none = 0;
	double pmed = 0, cmed = 0, gmed = 0;
	if ((rc = links_judge(&m, DB_MATRIX_P2P, &p, &np, &p_time, &pmed, &p_none)) ||
	    (rc = links_judge(&m, DB_MATRIX_COLL, &c, &nc, &c_time, &cmed, &c_none)) ||
	    (rc = links_judge(&m, DB_MATRIX_RING, &g, &ng, &g_time, &gmed, &g_none)))
		goto out;
	if (np < 3 && nc < 3 && ng < 3) {
		rc = adv_skip(x, R, "%d (source, destination) pair(s) with matched point-to-point transfers, %d rank pair(s) "
				"with matched two-member collectives and %d ring link(s): need >= 3 of a kind to find an "
				"outlier", np, nc, ng);
		goto out;
	}
	char ev[4096] = "", names[768] = "";
	int named = 0, nslow = 0;
	double worst = 1e9;
	if (np >= 3) {
		nslow += links_text(x, p, np, DB_MATRIX_P2P, 0, pmed, 0, ev, sizeof ev, names, sizeof names, &named);
		worst = p[0].ratio;
	}
	if (nc >= 3) {
		nslow += links_text(x, c, nc, DB_MATRIX_COLL, c_time, cmed, c_none, ev, sizeof ev, names, sizeof names, &named);
		worst = c[0].ratio < worst ? c[0].ratio : worst;
	}
	if (ng >= 3) {
		nslow += links_text(x, g, ng, DB_MATRIX_RING, 0, gmed, 0, ev, sizeof ev, names, sizeof names, &named);
		worst = g[0].ratio < worst ? g[0].ratio : worst;
	}
	if (named > 8)
		adv_cat(names, sizeof names, " and %d more", named - 8);
	int hk = 0;
	for (int i = 0; i < m.nhost_cells; i++)
		hk += m.host_cells[i].time_ns > 0 && m.host_cells[i].bytes > 0;
	if (hk >= 2) {
		adv_cat(ev, sizeof ev, "; by host pair (GB/s): ");
		for (int i = 0, k = 0; i < m.nhost_cells && k < 8; i++) {
			const struct db_matrix_cell *h = &m.host_cells[i];
			if (h->time_ns > 0 && h->bytes > 0)
				adv_cat(ev, sizeof ev, "%s%s %s->%s %.3f", k++ ? ", " : "", db_matrix_via_name(h->via),
					h->src >= 0 ? m.hosts[h->src] : "?", h->dst >= 0 ? m.hosts[h->dst] : "?", h->gbs);
		}
	}
	if (!nslow) {
		rc = adv_ok(x, R, "no link slow against the median of its kind (%d point-to-point pair(s)%s, %d two-member "
				  "collective pair(s)%s, %d ring link(s)%s)", np, np >= 3 ? "" : ", too few to judge", nc,
			    nc < 3 ? ", too few to judge" : c_time ? ", judged by time: no byte sizes" : "", ng,
			    ng >= 3 ? "" : ", too few to judge");
		goto out;
	}
	adv_cat(ev, sizeof ev, "; slow: %s", names);
	rc = adv_fire(x, R, worst < 0.25 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, worst, 0.5, ev,
		      "SELECT e.rank, e.peer, count(*) AS transfers, sum(e.bytes) AS bytes, sum(e.dur_ns)/1e6 AS ms FROM event "
		      "e WHERE e.kind = " DB_SQL_KIND_P2P " GROUP BY e.rank, e.peer ORDER BY 1.0*bytes/ms;  -- the matrix, "
		      "two-member collectives included: ascent report --by matrix",
		      "test the named pair alone (ascent diag comm under mpirun on those two hosts), check cables/ports, "
		      "MTU and RDMA state on both ends (ascent diag net), switch counters and retransmits; avoid "
		      "placing pipeline neighbours on that link meanwhile",
		      "slow link: %s at %.0f%% of the median %s", names, 100 * worst,
		      c_time && nc >= 3 && c[0].ratio <= worst ? "pair's speed (by transit time per call)"
							     : "pair bandwidth");
out:
	free(p);
	free(c);
	free(g);
	db_comm_matrix_free(&m);
	return rc;
}

/* ---- slow host: the ranks of one host arrive late at collectives ------------------------- */

struct host_late {
	const char *host;
	int nranks;
	double share;            /* the lower median over its ranks of their lateness / their step time */
	int worst_rank;
	double worst_share;
};

int adv_rule_slow_host(struct adv_ctx *x)
{
	const char *R = "host.slow";
	if (!x->nsteps)
		return adv_skip(x, R, NO_STEPS);
	/* hosts, in rank order of their first rank */
	struct host_late *h = calloc((size_t)(x->nranks ? x->nranks : 1), sizeof *h);
	int *host_of = malloc((size_t)(x->nranks ? x->nranks : 1) * sizeof *host_of);
	double *late = calloc((size_t)(x->nranks ? x->nranks : 1), sizeof *late), *tmp = NULL;
	int64_t *calls = calloc((size_t)(x->nranks ? x->nranks : 1), sizeof *calls);
	int nh = 0, rc = 0;
	if (!h || !host_of || !late || !calls) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	const char **names = malloc((size_t)(x->nranks ? x->nranks : 1) * sizeof *names);
	if (!names) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	nh = db_rank_hosts(x->ranks, x->nranks, host_of, names);
	for (int k = 0; k < nh; k++)
		h[k].host = names[k];
	free(names);
	for (int i = 0; i < x->nranks; i++)
		if (host_of[i] >= 0)
			h[host_of[i]].nranks++;
	if (nh < 2) {
		rc = adv_skip(x, R, "%d host(s) named in the profile: nothing to compare", nh);
		goto out;
	}
	struct db_coll c;
	if ((rc = db_coll_analysis(x->db, 0, &c)))
		goto out;
	for (int i = 0; i < c.nranks; i++) {
		int k = adv_rank_index(x, c.ranks[i].rank);
		if (k >= 0) {
			late[k] += (double)c.ranks[i].late_ns;
			calls[k] += c.ranks[i].calls;
		}
	}
	db_coll_free(&c);
	/* each rank's lateness summed over its calls, as a share of its steps' time (all steps: the
	 * calls are all the profile's) */
	struct db_step_stat *all = NULL;
	int nall = 0;
	if ((rc = db_step_stats(x->db, DB_FILTER_ALL, &all, &nall)))
		goto out;
	double *span = calloc((size_t)x->nranks, sizeof *span);
	if (!span) {
		free(all);
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	for (int i = 0; i < nall; i++) {
		int k = adv_rank_index(x, all[i].rank);
		if (k >= 0)
			span[k] += (double)all[i].total_ns;
	}
	free(all);
	int64_t with_calls = 0;
	for (int i = 0; i < x->nranks; i++) {
		late[i] = calls[i] && span[i] > 0 ? late[i] / span[i] : 0;
		with_calls += calls[i] > 0 && span[i] > 0;
	}
	free(span);
	if (with_calls < 2) {
		rc = adv_skip(x, R, "no collective matched across ranks with steps: no arrival to compare");
		goto out;
	}
	/* each host's lower median: a host is late when at least half its ranks are */
	if (!(tmp = malloc((size_t)x->nranks * sizeof *tmp))) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		goto out;
	}
	for (int k = 0; k < nh; k++) {
		int n = 0;
		h[k].worst_rank = -1;
		for (int i = 0; i < x->nranks; i++)
			if (host_of[i] == k && calls[i]) {
				tmp[n++] = late[i];
				if (h[k].worst_rank < 0 || late[i] > h[k].worst_share)
					h[k].worst_rank = x->ranks[i].rank, h[k].worst_share = late[i];
			}
		if (n)
			qsort(tmp, (size_t)n, sizeof *tmp, stats_cmp_double);
		h[k].share = n ? tmp[(n - 1) / 2] : 0;
	}
	int worst = 0;
	for (int k = 1; k < nh; k++)
		if (h[k].share > h[worst].share)
			worst = k;
	int n = 0;   /* the other hosts' median */
	for (int k = 0; k < nh; k++)
		if (k != worst)
			tmp[n++] = h[k].share;
	double ref = stats_median(tmp, n);
	double value = h[worst].share - ref;
	char ev[2048] = "", steps[160];
	adv_steps_text(x, steps, sizeof steps);
	adv_cat(ev, sizeof ev, "lateness at collectives (a rank's start - the first member's start, summed over its calls, "
			       "as a share of its steps' time; calls in flight together each count, so it may pass 100%%), "
			       "the lower median over each host's ranks: ");
	for (int k = 0; k < nh && k < 16; k++)
		adv_cat(ev, sizeof ev, "%s%s (%d ranks) %.1f%%", k ? ", " : "", h[k].host, h[k].nranks, 100 * h[k].share);
	if (nh > 16)
		adv_cat(ev, sizeof ev, " and %d more hosts", nh - 16);
	/* its ranks late alike: one rank far later than its host-mates is a slow rank (rank.slow), and the
	 * mates' lateness is then its delay passed on through the collectives they share with it (on a
	 * loaded machine, enough to pass 5 points on a host of two) */
	int alike = h[worst].share >= 0.25 * h[worst].worst_share;
	adv_cat(ev, sizeof ev, "; %s %.1f%% against the other hosts' median %.1f%%, its latest rank %d (%.1f%%); rule: "
			       "> 5 points above and > 2 x the other hosts', and its ranks late alike (the lower median >= "
			       "0.25 x its latest rank's: %s); all steps of the profile (%s for the others)",
		h[worst].host, 100 * h[worst].share, 100 * ref, h[worst].worst_rank, 100 * h[worst].worst_share,
		alike ? "yes" : "no, a slow rank's delay passed on", steps);
	if (value > 0.05 && h[worst].share > 2 * ref && alike)
		rc = adv_fire(x, R, value > 0.20 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, value, 0.05, ev,
			      "SELECT r.host, e.rank, count(*) AS calls FROM event e JOIN rank r ON r.rank = e.rank WHERE e.kind "
			      "= " DB_SQL_KIND_COMM " GROUP BY e.rank;  -- lateness per rank: ascent report --by collective (Late)",
			      "look at the named host as a whole: other jobs or processes, CPU frequency and thermal limits, "
			      "memory or NUMA placement, its network interface (ascent diag net, ascent diag comm between it and "
			      "a good host); drain it from the job if it stays slow",
			      "host %s is slow: its ranks arrive late at collectives for %.0f%% of their step time (others %.0f%%)",
			      h[worst].host, 100 * h[worst].share, 100 * ref);
	else
		rc = adv_ok(x, R, "latest host %s: late at collectives %.1f%% of its step time against %.1f%% on the others, "
				  "its latest rank %d %.1f%% (rule: > 5 points and > 2 x, its ranks late alike: >= 0.25 x its "
				  "latest rank's)", h[worst].host, 100 * h[worst].share, 100 * ref, h[worst].worst_rank,
			    100 * h[worst].worst_share);
out:
	free(h);
	free(host_of);
	free(late);
	free(calls);
	free(tmp);
	return rc;
}

/* ---- memory ------------------------------------------------------------------------------ */

struct mem_acc {
	struct adv_ctx *x;
	int64_t (*in_use)[DB_MEM_COUNT];   /* per rank index */
	int64_t *peak;
	int64_t (*at_peak)[DB_MEM_COUNT];
	int64_t events, device_events;
};

/* Host memory only: the limits recorded (mem_limit_bytes, host_mem_bytes) are the host's; a device's
 * memory (an imported trace's GPU) has no limit in the profile and is counted apart. */
static int mem_cb(void *ud, const struct db_mem_row *r)
{
	struct mem_acc *m = ud;
	int k = adv_rank_index(m->x, r->rank), cat = r->category;
	if (k < 0 || cat < 0 || cat >= DB_MEM_COUNT)
		return 0;
	if (r->device != DB_MEM_HOST) {
		m->device_events++;
		return 0;
	}
	m->events++;
	m->in_use[k][cat] = r->in_use;
	int64_t tot = 0;
	for (int c = 0; c < DB_MEM_COUNT; c++)
		tot += m->in_use[k][c];
	if (tot > m->peak[k]) {
		m->peak[k] = tot;
		memcpy(m->at_peak[k], m->in_use[k], sizeof m->at_peak[k]);
	}
	return 0;
}

int adv_rule_memory(struct adv_ctx *x)
{
	const char *R = "memory.limit";
	if (!x->nranks)
		return adv_skip(x, R, "no ranks in the profile");
	int f1 = 0, f2 = 0;
	double lim_rank = adv_meta_num(x, "mem_limit_bytes", &f1);
	double lim_host = adv_meta_num(x, "host_mem_bytes", &f2);
	if ((!f1 || lim_rank <= 0) && (!f2 || lim_host <= 0))
		return adv_skip(x, R, "no memory limit recorded (meta mem_limit_bytes per rank or host_mem_bytes per host)");
	struct mem_acc m;
	memset(&m, 0, sizeof m);
	m.x = x;
	size_t n = (size_t)x->nranks;
	m.in_use = calloc(n, sizeof *m.in_use);
	m.peak = calloc(n, sizeof *m.peak);
	m.at_peak = calloc(n, sizeof *m.at_peak);
	int rc = 0;
	if (!m.in_use || !m.peak || !m.at_peak)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc)
		rc = db_each_mem(x->db, DB_FILTER_ALL, mem_cb, &m);
	if (rc || !m.events) {
		free(m.in_use);
		free(m.peak);
		free(m.at_peak);
		return rc ? rc
			  : m.device_events ? adv_skip(x, R, "only device memory recorded (%lld records), whose limit the profile "
						      "does not hold", (long long)m.device_events)
					    : adv_skip(x, R, "no memory events recorded");
	}
	double worst_share = 0, worst_lim = 0;
	int worst = 0;
	for (int i = 0; i < x->nranks; i++) {
		double lim = lim_rank;
		if (!f1 || lim_rank <= 0) {
			int on_host = 0;
			for (int j = 0; j < x->nranks; j++)
				on_host += !strcmp(adv_host(x, x->ranks[j].rank), adv_host(x, x->ranks[i].rank));
			lim = lim_host / (on_host ? on_host : 1);
		}
		double s = (double)m.peak[i] / lim;
		if (s > worst_share)
			worst_share = s, worst = i, worst_lim = lim;
	}
	int wr = x->ranks[worst].rank;
	char ev[2048] = "";
	adv_cat(ev, sizeof ev, "rank %d (%s) host memory peaks at %.3f GiB of %.3f GiB (%.1f%%; limit from %s); at the peak:", wr,
		adv_host(x, wr), m.peak[worst] / 1073741824.0, worst_lim / 1073741824.0, 100 * worst_share,
		f1 && lim_rank > 0 ? "meta mem_limit_bytes" : "meta host_mem_bytes / ranks on the host");
	int big = 0;
	for (int c = 0; c < DB_MEM_COUNT; c++) {
		if (m.at_peak[worst][c] > m.at_peak[worst][big])
			big = c;
		if (m.at_peak[worst][c])
			adv_cat(ev, sizeof ev, " %s %.3f GiB", db_mem_cat_name(c), m.at_peak[worst][c] / 1073741824.0);
	}
	free(m.in_use);
	free(m.peak);
	free(m.at_peak);
	if (worst_share <= 0.80)
		return adv_ok(x, R, "peak %.1f%% of the memory limit on rank %d (threshold 80%%)", 100 * worst_share, wr);
	const char *fix;
	switch (big) {
	case DB_MEM_ACTIVATION:
		fix = "activations dominate: turn on activation recompute, use a smaller micro-batch (more micro-batches "
		      "or gradient accumulation for the same global batch), or shard the sequence (TP+SP)";
		break;
	case DB_MEM_OPTIMIZER:
	case DB_MEM_GRAD:
		fix = "optimizer state / gradients dominate: shard them over data-parallel ranks (ZeRO-1 for optimizer "
		      "state, ZeRO-2 adds gradients), or use mixed precision with fp32 master weights only once";
		break;
	case DB_MEM_PARAM:
		fix = "parameters dominate: split the model (tensor or pipeline parallelism) or shard parameters (ZeRO-3)";
		break;
	default:
		fix = "reduce the largest category shown: recompute activations, a smaller micro-batch, ZeRO for optimizer "
		      "state; check ascent diag mem --fit for a layout that fits";
	}
	return adv_fire(x, R, worst_share > 0.90 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, worst_share, 0.80, ev,
			"SELECT rank, category, peak_bytes/1073741824.0 AS peak_gib FROM mem_peak WHERE device = -1 ORDER BY rank,"
			" peak_bytes DESC; "
			" SELECT key, value FROM meta WHERE key IN ('mem_limit_bytes','host_mem_bytes');",
			fix, "memory at %.0f%% of the limit on rank %d (threshold 80%%), mostly %s", 100 * worst_share, wr,
			db_mem_cat_name(big));
}
