/* diag/advise_rules_run.c — the advisor's rules about the run as a whole rather than its timeline:
 * NaN loss, loss-scale collapse, thread oversubscription and the OpenBLAS core (from the meta
 * table), and the pre-flight results stored with the profile (diag_check). Same contract as
 * advise_rules.c: a finding with evidence, query and fix, an OK with the figure, or a skip. */
#include "diag/advise_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- loss -------------------------------------------------------------------------------- */

static int64_t name_id(const struct adv_ctx *x, const char *name)
{
	for (int64_t i = 1; i < x->nnames; i++)
		if (!strcmp(x->names[i], name))
			return i;
	return -1;
}

struct series {
	int64_t id;
	int64_t n, bad, decreases;
	int bad_rank;
	int64_t bad_ts;
	double first_bad;
	int cur_rank;
	double prev, max, min, final;
	int fin_rank, min_rank;
	int64_t min_ts;
};

static int series_cb(void *ud, int rank, int64_t nid, int64_t ts, double v)
{
	struct series *s = ud;
	if (nid != s->id)
		return 0;
	if (!isfinite(v)) {
		if (!s->bad++) {
			s->bad_rank = rank;
			s->bad_ts = ts;
			s->first_bad = v;
		}
		return 0;
	}
	if (!s->n || rank != s->cur_rank) {
		s->cur_rank = rank;
		s->prev = v;
	} else if (v < s->prev) {
		s->decreases++;
	}
	s->prev = v;
	if (!s->n || v > s->max)
		s->max = v;
	if (!s->n || v < s->min) {
		s->min = v;
		s->min_rank = rank;
		s->min_ts = ts;
	}
	s->final = v;
	s->fin_rank = rank;
	s->n++;
	return 0;
}

struct step_find {
	int rank;
	int64_t ts, step;
};

static int step_find_cb(void *ud, const struct db_event *e)
{
	struct step_find *f = ud;
	if (e->kind == DB_KIND_STEP && e->rank == f->rank && f->ts >= e->start_ns && f->ts < e->start_ns + e->dur_ns)
		f->step = e->step;
	return 0;
}

/* The step on `rank` whose range holds `ts`; -1 when none. */
static int64_t step_at(struct adv_ctx *x, int rank, int64_t ts)
{
	struct step_find f = { rank, ts, -1 };
	if (db_each_event(x->db, (struct db_filter){ rank, -1, -1 }, step_find_cb, &f))
		return -1;
	return f.step;
}

int adv_rule_loss_nan(struct adv_ctx *x)
{
	const char *R = "loss.nan";
	struct series s;
	memset(&s, 0, sizeof s);
	s.id = name_id(x, "loss");
	if (s.id < 0)
		return adv_skip(x, R, "no 'loss' counter in the profile");
	int rc = db_each_counter(x->db, DB_FILTER_ALL, series_cb, &s);
	if (rc)
		return rc;
	/* SQLite stores NaN as NULL: those samples come back as 0 above, count them here */
	int64_t nulls, nts;
	int nrank;
	if ((rc = db_counter_nulls(x->db, "loss", &nulls, &nrank, &nts)))
		return rc;
	if (nulls) {
		s.n -= nulls;   /* they were counted as finite zeros */
		if (!s.bad || nts < s.bad_ts) {
			s.bad_rank = nrank;
			s.bad_ts = nts;
			s.first_bad = NAN;
		}
		s.bad += nulls;
	}
	if (!s.bad)
		return adv_ok(x, R, "%lld finite loss value(s)", (long long)s.n);
	int64_t step = step_at(x, s.bad_rank, s.bad_ts);
	char ev[2048] = "";
	adv_cat(ev, sizeof ev, "%lld of %lld loss value(s) are NaN (stored as NULL) or infinite; the first (%s) on rank %d "
			       "(%s) at %.3f s",
		(long long)s.bad, (long long)(s.bad + s.n), isnan(s.first_bad) ? "NaN" : "inf", s.bad_rank,
		adv_host(x, s.bad_rank), s.bad_ts / 1e9);
	if (step >= 0)
		adv_cat(ev, sizeof ev, ", in step %lld", (long long)step);
	return adv_fire(x, R, DIAG_SEV_HIGH, (double)s.bad, 0, ev,
			"SELECT c.rank, c.ts_ns, c.value FROM counter c JOIN string s ON s.id = c.name_id WHERE s.value = 'loss' "
			"AND (c.value IS NULL OR abs(c.value) > 1e308) ORDER BY c.ts_ns LIMIT 20;",
			"the run diverged: lower the learning rate or lengthen warm-up, clip gradients (1.0), use bf16 or a "
			"dynamic loss scale instead of fp16 with a fixed scale, and check the input data of that step; "
			"resume from the last checkpoint before it",
			"loss became %s (%lld value(s))", isnan(s.first_bad) ? "NaN" : "infinite", (long long)s.bad);
}

int adv_rule_loss_scale(struct adv_ctx *x)
{
	const char *R = "loss.scale_collapse";
	struct series s;
	memset(&s, 0, sizeof s);
	s.id = name_id(x, "loss_scale");
	if (s.id < 0)
		return adv_skip(x, R, "no 'loss_scale' counter (fp32/bf16 runs do not scale the loss)");
	int rc = db_each_counter(x->db, DB_FILTER_ALL, series_cb, &s);
	if (rc)
		return rc;
	if (!s.n)
		return adv_skip(x, R, "the loss_scale counter has no finite values");
	char ev[2048] = "";
	adv_cat(ev, sizeof ev,
		"loss scale over %lld sample(s): max %g, min %g (rank %d (%s) at %.3f s), final %g; it fell %lld time(s) "
		"(each fall is a skipped step on overflow)",
		(long long)s.n, s.max, s.min, s.min_rank, adv_host(x, s.min_rank), s.min_ts / 1e9, s.final,
		(long long)s.decreases);
	const char *q = "SELECT c.rank, c.ts_ns, c.value FROM counter c JOIN string s ON s.id = c.name_id "
			"WHERE s.value = 'loss_scale' ORDER BY c.rank, c.ts_ns;";
	const char *fix = "gradients overflow fp16 again and again: lower the learning rate or clip gradients, check for "
			  "NaN/inf in the data or a layer that blows up (keep norms and softmax in fp32), or train in bf16, "
			  "which needs no loss scale";
	int collapsed = s.min < 1.0 || s.final <= s.max / 1024.0;
	if (collapsed) {
		int64_t step = step_at(x, s.min_rank, s.min_ts);
		if (step >= 0)
			adv_cat(ev, sizeof ev, "; minimum reached in step %lld", (long long)step);
		return adv_fire(x, R, DIAG_SEV_HIGH, s.max > 0 ? s.final / s.max : 0, 1.0 / 1024, ev, q, fix,
				"loss scale collapsed from %g to %g (rule: below 1, or final <= max/1024)", s.max, s.min);
	}
	if (s.n >= 8 && s.decreases * 4 >= s.n)
		return adv_fire(x, R, DIAG_SEV_MEDIUM, (double)s.decreases / s.n, 0.25, ev, q, fix,
				"loss scale falls at %.0f%% of its updates (threshold 25%%): frequent overflows skip steps",
				100.0 * s.decreases / s.n);
	return adv_ok(x, R, "loss scale %g..%g, %lld fall(s) over %lld sample(s)", s.min, s.max, (long long)s.decreases,
		      (long long)s.n);
}

/* ---- host: threads and the BLAS core ------------------------------------------------------ */

int adv_rule_threads(struct adv_ctx *x)
{
	const char *R = "host.threads";
	int f1, f2;
	double thr = adv_meta_num(x, "blas_threads", &f1);
	double cores = adv_meta_num(x, "host_cores", &f2);
	if (!f1 || !f2 || thr < 1 || cores < 1)
		return adv_skip(x, R, "meta blas_threads and host_cores not recorded");
	if (!x->nranks)
		return adv_skip(x, R, "no ranks in the profile");
	int worst_n = 0;
	const char *worst_h = "?";
	for (int i = 0; i < x->nranks; i++) {
		const char *h = adv_host(x, x->ranks[i].rank);
		int k = 0;
		for (int j = 0; j < x->nranks; j++)
			k += !strcmp(adv_host(x, x->ranks[j].rank), h);
		if (k > worst_n)
			worst_n = k, worst_h = h;
	}
	double used = thr * worst_n;
	if (used <= cores)
		return adv_ok(x, R, "%g thread(s) x %d rank(s) on %s = %g <= %g cores", thr, worst_n, worst_h, used, cores);
	char ev[1024];
	snprintf(ev, sizeof ev,
		 "host %s runs %d rank(s) x %g BLAS/OpenMP thread(s) = %g threads on %g cores (%.1fx oversubscribed); "
		 "spinning BLAS threads then steal cores from each other and from MPI progress",
		 worst_h, worst_n, thr, used, cores, used / cores);
	char fix[512];
	int per = (int)(cores / worst_n);
	snprintf(fix, sizeof fix,
		 "set OPENBLAS_NUM_THREADS=OMP_NUM_THREADS=%d (cores / ranks per host; ascent train --threads does this), "
		 "and OMP_WAIT_POLICY=passive when ranks share cores",
		 per < 1 ? 1 : per);
	return adv_fire(x, R, used >= 2 * cores ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, used / cores, 1.0, ev,
			"SELECT key, value FROM meta WHERE key IN ('blas_threads','host_cores'); "
			"SELECT host, count(*) AS ranks FROM rank GROUP BY host;",
			fix, "threads oversubscribed %.1fx on %s (%g threads, %g cores)", used / cores, worst_h, used, cores);
}

int adv_rule_blas_core(struct adv_ctx *x)
{
	const char *R = "host.blas_core";
	char *core = db_get_meta(x->db, "blas_core");
	char *isa = db_get_meta(x->db, "cpu_isa");
	if (!core || !isa) {
		free(core);
		free(isa);
		return adv_skip(x, R, "meta blas_core and cpu_isa not recorded");
	}
	struct cpu_info ci;
	memset(&ci, 0, sizeof ci);
	ci.avx2 = strstr(isa, "avx2") != NULL;
	ci.avx512f = strstr(isa, "avx512f") != NULL || strstr(isa, "avx512 ") != NULL;
	char *brand = db_get_meta(x->db, "cpu_brand");
	snprintf(ci.brand, sizeof ci.brand, "%s", brand ? brand : "cpu_isa: recorded flags");
	free(brand);
	struct diag_report r;
	int rc = diag_report_init(&r);
	if (!rc)
		rc = diag_env_blas_core(&r, core, &ci);
	if (rc) {
		diag_report_release(&r);
		free(core);
		free(isa);
		return rc;
	}
	const struct diag_check *c = &r.checks[r.n - 1];
	if (c->status == DIAG_PASS) {
		rc = adv_ok(x, R, "OpenBLAS core %s suits the CPU (%s)", core, isa);
	} else {
		char ev[2048];
		snprintf(ev, sizeof ev, "meta blas_core = %s, cpu_isa = %s: %s", core, isa, c->message);
		rc = adv_fire(x, R, ci.avx512f ? DIAG_SEV_HIGH : DIAG_SEV_MEDIUM, 0, 0, ev,
			      "SELECT key, value FROM meta WHERE key IN ('blas_core','cpu_isa','cpu_brand');", c->fix,
			      "OpenBLAS ran the %s core on a CPU with %s", core, ci.avx512f ? "AVX-512" : "AVX2");
	}
	diag_report_release(&r);
	free(core);
	free(isa);
	return rc;
}

/* ---- pre-flight results stored with the profile (diag all --db) ---------------------------- */

struct pre_acc {
	int fail, warn, total;
	char ev[1536];
};

static int pre_cb(void *ud, int64_t id, int64_t ts, const char *name, const char *status, double value,
		  const char *unit, const char *detail)
{
	(void)id;
	(void)ts;
	(void)value;
	(void)unit;
	struct pre_acc *p = ud;
	p->total++;
	int f = status && !strcmp(status, "FAIL"), w = status && !strcmp(status, "WARN");
	if (!f && !w)
		return 0;
	p->fail += f;
	p->warn += w;
	adv_cat(p->ev, sizeof p->ev, "%s%s %s: %.160s", p->fail + p->warn > 1 ? "; " : "", status, name ? name : "?",
		detail ? detail : "");
	return 0;
}

int adv_rule_preflight(struct adv_ctx *x)
{
	const char *R = "preflight";
	struct pre_acc p;
	memset(&p, 0, sizeof p);
	int rc = db_each_diag_check(x->db, pre_cb, &p);
	if (rc)
		return rc;
	if (!p.total)
		return adv_skip(x, R, "no pre-flight results stored (run ascent diag all --db RUN.db)");
	if (!p.fail && !p.warn)
		return adv_ok(x, R, "all %d stored pre-flight check(s) passed or were skipped", p.total);
	char ev[2048];
	snprintf(ev, sizeof ev, "%d FAIL and %d WARN among %d pre-flight check(s) stored with this run: %s", p.fail, p.warn,
		 p.total, p.ev);
	return adv_fire(x, R, p.fail ? DIAG_SEV_HIGH : DIAG_SEV_LOW, p.fail + p.warn, 0, ev,
			"SELECT name, status, detail FROM diag_check WHERE status IN ('FAIL','WARN') ORDER BY id;",
			"fix the pre-flight findings first (each stored row carries its own fix after '| fix:'), then rerun "
			"ascent diag all before the next job",
			"the pre-flight checks stored with this run found %d failure(s) and %d warning(s)", p.fail, p.warn);
}

/* ---- how the run ended: the "error" notes (a rank killed by a signal, MPI_Abort) ----------- */

struct end_acc {
	int n;
	char ev[1536];
};

static int end_cb(void *ud, int rank, int64_t ts, const char *level, const char *text)
{
	(void)rank;
	(void)ts;
	struct end_acc *e = ud;
	if (!level || strcmp(level, "error"))
		return 0;
	adv_cat(e->ev, sizeof e->ev, "%s%.300s", e->n++ ? "; " : "", text ? text : "?");
	return 0;
}

int adv_rule_run_end(struct adv_ctx *x)
{
	const char *R = "run.ended_abnormally";
	struct end_acc e;
	memset(&e, 0, sizeof e);
	int rc = db_each_note(x->db, end_cb, &e);
	if (rc)
		return rc;
	if (!e.n)
		return adv_ok(x, R, "no rank recorded an abnormal end (signal, MPI_Abort)");
	return adv_fire(x, R, DIAG_SEV_HIGH, e.n, 0, e.ev, "SELECT rank, level, text FROM note WHERE level = 'error';",
			"the profile stops where the run failed: find the cause first (a core dump or the rank's log "
			"for a signal, the caller of MPI_Abort), then profile again; figures of an aborted run describe "
			"only the part before it", "the run ended abnormally (%d error note(s)): %.180s", e.n, e.ev);
}
