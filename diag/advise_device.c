/* diag/advise_device.c — the advisor's rules for device traces (imported PyTorch profiler traces:
 * ranks with device lanes, whose steps db/ splits on the device): the device idle between kernels,
 * the host blocked in synchronising runtime calls, runs of small kernels bound by their launches,
 * host-to-device copies inside the steps. Each states the steps it used. Each
 * skips, saying why, when the profile has no device lanes or lacks the data. Exposed communication
 * (comm.exposed) and a slow rank (rank.slow) are the general rules, which read the same device
 * split. */
#include "diag/advise_impl.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define NO_DEVICE "no device lanes: not an imported GPU trace (ascent import)"

/* Does `rank` have device lanes? */
static int on_device(const struct db_device_lane *l, int n, int rank)
{
	for (int i = 0; i < n; i++)
		if (l[i].rank == rank)
			return 1;
	return 0;
}

/* Sums of the usable steps of device ranks: total, computing (kernels, copies, memsets), free
 * (device idle), comm not overlapped; *nranks device ranks seen. */
struct dev_sum {
	int64_t total, computing, free, cno;
	int nranks;
	int worst_rank;
	double worst_free;
};

static void dev_sums(const struct adv_ctx *x, const struct db_device_lane *l, int nl, struct dev_sum *d)
{
	memset(d, 0, sizeof *d);
	d->worst_rank = -1;
	for (int i = 0; i < x->nsteps; i++) {
		const struct db_step_stat *s = &x->steps[i];
		if (!on_device(l, nl, s->rank))
			continue;
		d->total += s->total_ns;
		d->computing += s->computing_ns;
		d->free += s->free_ns;
		d->cno += s->comm_not_overlapped_ns;
	}
	/* the rank with the most idle device time */
	for (int k = 0; k < x->nranks; k++) {
		int r = x->ranks[k].rank;
		int64_t tot = 0, fr = 0;
		for (int i = 0; i < x->nsteps; i++)
			if (x->steps[i].rank == r && on_device(l, nl, r)) {
				tot += x->steps[i].total_ns;
				fr += x->steps[i].free_ns;
			}
		double f = tot > 0 ? (double)fr / (double)tot : 0;
		d->nranks += tot > 0;
		if (tot > 0 && (d->worst_rank < 0 || f > d->worst_free)) {
			d->worst_rank = r;
			d->worst_free = f;
		}
	}
}

/* What every rule here starts from: the device lanes and the sums over their ranks' usable steps.
 * *ok = 0 when the profile has no device lanes: the rule is skipped (adv_skip's result returned). */
static int dev_evidence(struct adv_ctx *x, const char *rule, struct dev_sum *d, int *ok)
{
	struct db_device_lane *l;
	int nl, rc = db_device_lanes(x->db, &l, &nl);
	*ok = 0;
	if (rc)
		return rc;
	if (!nl) {
		free(l);
		return adv_skip(x, rule, NO_DEVICE);
	}
	dev_sums(x, l, nl, d);
	free(l);
	*ok = 1;
	return 0;
}

static double share(int64_t part, int64_t total)
{
	return total > 0 ? (double)part / (double)total : 0;
}

/* The device work the usable steps launched (db_step_work) that ran outside its own step's window,
 * as text for the device rules' evidence ("" when none ran outside): the window split above cannot
 * see it, as it is in another step's window or after the last. */
static int launched_outside(struct adv_ctx *x, char *buf, size_t n)
{
	buf[0] = 0;
	struct db_step_work *w;
	int nw, rc = db_view_step_work(x->db, (struct db_filter){ -1, x->step_lo, x->step_hi }, &w, &nw);
	if (rc)
		return rc;
	int64_t busy = 0, in = 0, past = 0;
	for (int i = 0; i < nw; i++) {
		busy += w[i].busy_ns;
		in += w[i].in_window_ns;
		if (w[i].events && w[i].last_end_ns - w[i].step_end_ns > past)
			past = w[i].last_end_ns - w[i].step_end_ns;
	}
	free(w);
	if (busy > in)
		snprintf(buf, n, "; of the device work these steps launched (%.2f ms busy), %.1f%% ran outside its own "
			 "step's window (up to %.2f ms past the step's end: counted in the next step's window or after the "
			 "last)", (double)busy / 1e6, 100 * share(busy - in, busy), (double)past / 1e6);
	return 0;
}

/* The device events the usable steps launched, and those of ranks whose launches are not linked
 * (db_step_work's unlinked and no-step rows: their steps cannot be told, so they count). */
static int device_events(struct adv_ctx *x, int64_t *events)
{
	struct db_step_work *w;
	int nw, rc = db_view_step_work(x->db, (struct db_filter){ -1, -1, -1 }, &w, &nw);
	*events = 0;
	if (rc)
		return rc;
	for (int i = 0; i < nw; i++)
		if ((w[i].where == DB_SW_STEP && w[i].step >= x->step_lo && w[i].step <= x->step_hi) ||
		    w[i].where == DB_SW_UNLINKED || w[i].where == DB_SW_NO_STEP)
			*events += w[i].events;
	free(w);
	return 0;
}

#define IDLE_MIN_EVENTS 10   /* device events the usable steps launched, below which device.idle does not judge */

int adv_rule_device_idle(struct adv_ctx *x)
{
	const char *R = "device.idle";
	struct dev_sum d;
	int ok, rc = dev_evidence(x, R, &d, &ok);
	if (rc || !ok)
		return rc;
	if (!d.total)
		return adv_skip(x, R, "no steps on the ranks with device lanes (no ProfilerStep#N ranges in the trace)");
	double f = share(d.free, d.total);
	char steps[160], ev[1024] = "", q[512], out[256];
	adv_steps_text(x, steps, sizeof steps);
	int64_t events;
	if ((rc = launched_outside(x, out, sizeof out)) != 0 || (rc = device_events(x, &events)) != 0)
		return rc;
	/* a step with a kernel or two is host work (a compile, an example, a warm-up): its idle device
	 * says nothing about how the device is fed */
	if (events < IDLE_MIN_EVENTS)
		return adv_skip(x, R, "too little device work to judge: %lld device event(s) launched in the usable steps "
				"(need >= %d; the device idle %.1f%% of the step); %s", (long long)events, IDLE_MIN_EVENTS,
				100 * f, steps);
	if (f <= 0.20)
		return adv_ok(x, R, "the device is idle %.1f%% of the step (threshold 20%%), computing %.1f%%%s; %s", 100 * f,
			      100 * share(d.computing, d.total), out, steps);
	adv_cat(ev, sizeof ev,
		"device idle (no kernel, copy, memset or collective running) %.1f%% of step time, computing %.1f%%, "
		"communication not overlapped %.1f%%, over %d rank(s); worst rank %d idle %.1f%%%s; %s",
		100 * f, 100 * share(d.computing, d.total), 100 * share(d.cno, d.total), d.nranks, d.worst_rank,
		100 * d.worst_free, out, steps);
	snprintf(q, sizeof q,
		 "SELECT rank, round(100.0*sum(free_ns)/sum(total_ns),1) AS device_idle_pct, "
		 "round(100.0*sum(computing_ns)/sum(total_ns),1) AS computing_pct FROM step_stat WHERE step BETWEEN %lld "
		 "AND %lld AND rank IN (SELECT rank FROM device_lane) GROUP BY rank ORDER BY device_idle_pct DESC;",
		 (long long)x->step_lo, (long long)x->step_hi);
	return adv_fire(x, R, f > 0.40 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, f, 0.20, ev, q,
			"the device waits on the host: see device.launch_bound (launch overhead: CUDA graphs, "
			"torch.compile, fused or fewer larger kernels), synchronisations in the step (cudaStreamSynchronize, "
			".item(), .cpu(), printing tensors), data loading on the critical path (pinned memory, more "
			"DataLoader workers, prefetch), and CPU-heavy operators between kernels",
			"the device is idle %.0f%% of the step (threshold 20%%)", 100 * f);
}

/* host.blocked: fires when the host is blocked more than BLOCKED_MIN of the step and the device
 * idle that begins while it is blocked (the queue ran dry during a synchronising call: from then on
 * the device waits for the host's next launch) exceeds AFTER_MIN of the step; High above AFTER_HIGH. */
#define BLOCKED_MIN 0.10
#define AFTER_MIN 0.10
#define AFTER_HIGH 0.25

static int blocked_fires(double blocked, double after)
{
	return blocked > BLOCKED_MIN && after > AFTER_MIN;
}

/* The blocking calls of the usable steps (db_host_blocked); *blocked: the share of the device
 * ranks' step time the host spends in them, *after: the share the device is idle after running dry
 * during one. */
static int host_blocked(struct adv_ctx *x, const struct dev_sum *d, struct db_host_blocked *b, double *blocked,
			double *after)
{
	struct db_filter f = { -1, x->step_lo, x->step_hi };
	int rc = db_host_blocked(x->db, f, b);
	*blocked = rc ? 0 : share(b->union_ns, d->total);
	*after = rc ? 0 : share(b->idle_after_ns, d->total);
	return rc;
}

int adv_rule_host_blocked(struct adv_ctx *x)
{
	const char *R = "host.blocked";
	struct dev_sum d;
	int ok, rc = dev_evidence(x, R, &d, &ok);
	if (rc || !ok)
		return rc;
	if (!d.total)
		return adv_skip(x, R, "no steps on the ranks with device lanes (no ProfilerStep#N ranges in the trace)");
	struct db_host_blocked b;
	double bl, after;
	if ((rc = host_blocked(x, &d, &b, &bl, &after)) != 0)
		return rc;
	char steps[160];
	adv_steps_text(x, steps, sizeof steps);
	if (!b.calls)
		return adv_ok(x, R, "no blocking runtime call (synchronisation, synchronous copy) in the steps; %s", steps);
	if (!blocked_fires(bl, after))
		return adv_ok(x, R, "the host is blocked in %lld runtime call(s) %.1f%% of the step; the device is idle after "
				    "running dry during one %.1f%% of it (rule: > %.0f%% blocked and > %.0f%% idle after); %s",
			      (long long)b.calls, 100 * bl, 100 * after, 100 * BLOCKED_MIN, 100 * AFTER_MIN, steps);
	/* the calls: the blocking rows of the runtime table, largest first */
	struct db_runtime_stat *rt;
	int n;
	struct db_filter f = { -1, x->step_lo, x->step_hi };
	if ((rc = db_runtime_stats(x->db, f, &rt, &n)) != 0)
		return rc;
	char ev[1024] = "", q[768];
	adv_cat(ev, sizeof ev,
		"the host waits in %lld blocking runtime call(s) for %.1f%% of the step time (%.2f ms over %d rank(s); calls "
		"nested or on two threads at once counted once); the device runs dry during them and is then idle %.1f%% "
		"of the step, waiting for the next launch (%.0f%% of its idle time between work, which is %.1f%% of the "
		"step):",
		(long long)b.calls, 100 * bl, (double)b.union_ns / 1e6, b.ranks, 100 * after,
		100 * share(b.idle_after_ns, b.idle_ns), 100 * share(b.idle_ns, d.total));
	int shown = 0;
	for (int i = 0; i < n && shown < 4; i++)
		if (rt[i].block != DB_RT_NONBLOCKING) {
			adv_cat(ev, sizeof ev, "%s %s x%lld %.2f ms (%.1f%% of the step, %s)", shown ? ";" : "", rt[i].name,
				(long long)rt[i].count, (double)rt[i].total_ns / 1e6, 100 * share(rt[i].total_ns, d.total),
				db_runtime_block_name(rt[i].block));
			shown++;
		}
	db_runtime_stats_free(rt, n);
	adv_cat(ev, sizeof ev, "; %s", steps);
	snprintf(q, sizeof q,
		 "SELECT s.value AS name, count(*) AS calls, sum(e.dur_ns) AS total_ns FROM event e JOIN string s ON s.id = "
		 "e.name_id WHERE e.kind = " DB_SQL_KIND_RANGE " AND (s.value LIKE '%%Synchronize%%' OR (s.value GLOB "
		 "'*Memcpy*' AND s.value NOT GLOB '*Async*')) GROUP BY e.name_id ORDER BY total_ns DESC; -- and "
		 "'ascent report RUN.db --by runtime' (copies with pageable memory too)");
	return adv_fire(x, R, after > AFTER_HIGH ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, after, AFTER_MIN, ev, q,
			"remove the synchronisations from the step: avoid .item(), .cpu(), .tolist(), printing or logging "
			"device tensors every step (accumulate on the device, read every N steps), torch.cuda.synchronize() "
			"outside timing code; copy to and from pinned memory (pin_memory=True, non_blocking=True) so copies "
			"do not block; while the host waits the device's queue drains and the device then waits for the next "
			"launches",
			"the host is blocked %.0f%% of the step in synchronising runtime calls; the device, run dry, then "
			"idles %.0f%% of the step", 100 * bl, 100 * after);
}

/* device.launch_bound: a queue is shallow when a rank's median kernel starts within this of its
 * launch call's start (a launch costs 5-20 us; a deep queue delays kernels by milliseconds). */
#define SHALLOW_QUEUE_NS 100000.0

int adv_rule_launch_bound(struct adv_ctx *x)
{
	const char *R = "device.launch_bound";
	struct dev_sum d;
	int ok, rc = dev_evidence(x, R, &d, &ok);
	if (rc || !ok)
		return rc;
	struct db_launch_stat *ls;
	int n;
	struct db_filter f = { -1, x->step_lo, x->step_hi };
	if ((rc = db_launch_stats(x->db, f, &ls, &n)) != 0)
		return rc;
	int64_t linked = 0, small = 0, kns = 0, med = 0, med_min = -1;   /* linked: kernels linked to a launch */
	for (int i = 0; i < n; i++) {
		linked += ls[i].kernels;
		small += ls[i].small;
		kns += ls[i].kernel_ns;
		if (ls[i].delay_med_ns > med)
			med = ls[i].delay_med_ns;
		if (ls[i].linked && (med_min < 0 || ls[i].delay_med_ns < med_min))
			med_min = ls[i].delay_med_ns;
	}
	free(ls);
	if (linked < 100)
		return adv_skip(x, R, "%lld kernel(s) linked to their launch in the usable steps (need >= 100; the trace "
				      "has no ac2g flows or few kernels)", (long long)linked);
	double sm = share(small, linked), idle = share(d.free, d.total);
	char steps[160];
	adv_steps_text(x, steps, sizeof steps);
	if (sm < 0.5 || idle <= 0.20)
		return adv_ok(x, R, "%.0f%% of %lld launched kernels under 10 us with the device idle %.1f%% (rule: >= 50%% "
				    "small and > 20%% idle); %s", 100 * sm, (long long)linked, 100 * idle, steps);
	/* launch-bound means a shallow queue: each kernel starts soon after its launch call */
	if (med_min > SHALLOW_QUEUE_NS)
		return adv_ok(x, R, "not launch-bound: %.0f%% of %lld launched kernels are under 10 us and the device is idle "
				    "%.1f%%, but the queue is deep: on every rank the median kernel starts %.1f us or more after "
				    "its launch call (launch-bound: <= %.0f us); the idle device waits on something else (see "
				    "device.idle, host.blocked, data.loading); %s", 100 * sm, (long long)linked, 100 * idle,
			      (double)med_min / 1e3, SHALLOW_QUEUE_NS / 1e3, steps);
	/* a host blocked in synchronising calls leaves the device idle too: then launches are not the cause */
	struct db_host_blocked b;
	double bl, after;
	if ((rc = host_blocked(x, &d, &b, &bl, &after)) != 0)
		return rc;
	if (blocked_fires(bl, after) && 2 * b.idle_after_ns >= b.idle_ns)
		return adv_ok(x, R, "secondary: %.0f%% of %lld launched kernels are under 10 us and the device is idle %.1f%%, "
				    "but %.0f%% of that idle time begins while the host is blocked in a synchronising runtime "
				    "call (see host.blocked); %s", 100 * sm, (long long)linked, 100 * idle,
			      100 * share(b.idle_after_ns, b.idle_ns), steps);
	char ev[1024] = "", q[512];
	adv_cat(ev, sizeof ev,
		"%lld of %lld kernels linked to their launch run under 10 us (%.0f%%), %.2f us on average; the largest "
		"per-rank median queue delay (kernel start - launch start) is %.1f us; the device is idle %.1f%% of the "
		"step",
		(long long)small, (long long)linked, 100 * sm, (double)kns / (double)linked / 1e3, (double)med / 1e3,
		100 * idle);
	if (b.calls)
		adv_cat(ev, sizeof ev, "; the host is blocked in synchronising runtime calls %.1f%% of the step, and %.1f%% of "
			"the step the device idles after running dry during one", 100 * bl, 100 * after);
	adv_cat(ev, sizeof ev, "; %s", steps);
	snprintf(q, sizeof q,
		 "SELECT f.rank, count(*) AS kernels, sum(e.dur_ns < 10000) AS small, avg(f.dst_ns - f.src_ns) AS "
		 "queue_delay_ns FROM flow f JOIN event e ON e.rank = f.rank AND e.tid = f.dst_tid AND e.start_ns = f.dst_ns "
		 "WHERE f.kind = " DB_SQL_FLOW_LAUNCH " AND e.kind = " DB_SQL_KIND_KERNEL " GROUP BY f.rank;");
	return adv_fire(x, R, DIAG_SEV_MEDIUM, sm, 0.5, ev, q,
			"the GPU runs many tiny kernels back to back and waits for each launch: capture the step in a CUDA "
			"graph (torch.cuda.graphs, torch.compile mode='reduce-overhead'), fuse elementwise operators "
			"(torch.compile), use fused optimizers (foreach/fused AdamW), or grow the batch so each kernel does "
			"more work",
			"launch-bound: %.0f%% of kernels are under 10 us while the device is idle %.0f%%", 100 * sm,
			100 * idle);
}

int adv_rule_h2d_copies(struct adv_ctx *x)
{
	const char *R = "device.h2d_copies";
	struct dev_sum d;
	int ok, rc = dev_evidence(x, R, &d, &ok);
	if (rc || !ok)
		return rc;
	if (!d.total)
		return adv_skip(x, R, "no steps on the ranks with device lanes");
	struct db_filter f = { -1, x->step_lo, x->step_hi };
	struct db_h2d_exposure e;
	if ((rc = db_h2d_exposure(x->db, f, &e)) != 0)
		return rc;
	if (!e.copies)
		return adv_skip(x, R, "no host-to-device copies in the usable steps");
	/* only the copy time no other device work hides costs the step */
	double s = share(e.exposed_ns, d.total), all = share(e.total_ns, d.total);
	double hidden = e.union_ns ? 1.0 - (double)e.exposed_ns / (double)e.union_ns : 0;
	char steps[160];
	adv_steps_text(x, steps, sizeof steps);
	if (s <= 0.05)
		return adv_ok(x, R, "host-to-device copies exposed %.1f%% of the step (%lld copies, %.1f%% of the step in "
				    "all, %.0f%% of it hidden under other device work; threshold 5%% exposed); %s", 100 * s,
			      (long long)e.copies, 100 * all, 100 * hidden, steps);
	char ev[1024] = "", q[512];
	adv_cat(ev, sizeof ev,
		"%lld host-to-device copies take %.1f%% of step time (device time, summed over %d rank(s)); %.0f%% of "
		"it runs under other device work, leaving %.1f%% of the step exposed; %lld of them from pageable (not "
		"pinned) memory",
		(long long)e.copies, 100 * all, d.nranks, 100 * hidden, 100 * s, (long long)e.pageable);
	adv_cat(ev, sizeof ev, "; %s", steps);
	snprintf(q, sizeof q,
		 "SELECT s.value AS name, count(*), sum(e.dur_ns) FROM event e JOIN string s ON s.id = e.name_id "
		 "WHERE e.kind = " DB_SQL_KIND_MEMCPY " AND s.value LIKE '%%HtoD%%' GROUP BY e.name_id;");
	return adv_fire(x, R, s > 0.15 ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, s, 0.05, ev, q,
			"move input to the device outside the step's critical path: DataLoader(pin_memory=True) and "
			".to(device, non_blocking=True), prefetch the next batch on a side stream, keep constants and "
			"weights on the device instead of copying them every step",
			"host-to-device copies leave %.0f%% of the step exposed (threshold 5%%)", 100 * s);
}
