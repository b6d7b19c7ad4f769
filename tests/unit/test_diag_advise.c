/* tests/unit/test_diag_advise.c — the advisor's rules on fixture profiles written through db/'s
 * writer API: for every rule one fixture built to trigger it and one built not to (a healthy run
 * with that one knob changed), checking the severity, that the right rank/host is named, and that
 * evidence, query and fix are filled. Also the slow-rank/slow-link detector of diag comm on
 * synthetic bandwidth matrices, the busbw factors, --ops parsing, and diag_report_store. */
#include "diag/diag.h"
#include "db/db.h"

#include <criterion/criterion.h>
#include <sqlite3.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One knob per rule; zero means "healthy" for every field (see fx_defaults). */
struct fx {
	int ranks, steps;
	int64_t T;                 /* step length, ns */
	double compute, comm, overlap, data, bubble;   /* fractions of T */
	double slow_extra;         /* extra compute fraction of slow_rank */
	int slow_rank;
	int late_rank;             /* arrives late at every collective by late_frac·T */
	double late_frac;
	int tiny;                  /* tiny (4 KiB) collectives per step, 50 µs each */
	int tiny_unknown;          /* 1: their size is unknown (0 B, as in a trace that names none) */
	int ring;                  /* p2p ring transfers each step */
	int slow_a, slow_b;        /* ring pair (a → b) 10x slower; -1 none */
	int pp;                    /* ranks split into pp stages (pp_rank = rank / (ranks/pp)) */
	const char *config;        /* run config JSON */
	const char *hosts[8];      /* host per rank; NULL = "node0" */
	int tp;                    /* tp groups of this size registered in the comm table */
	double mem_share;          /* peak memory as a share of mem_limit_bytes (0 = no memory events) */
	double dev_share;          /* device 0's memory (an imported GPU's) at this share of it (0 = none) */
	int nan_step;              /* loss NaN at this step (-1 none) */
	int scale_collapse;        /* 1: loss_scale halves every step down to below 1; 2: stable */
	const char *meta[8][2];    /* extra meta key/value */
};

static void fx_defaults(struct fx *f)
{
	memset(f, 0, sizeof *f);
	f->ranks = 4;
	f->steps = 6;
	f->T = 10000000;
	f->compute = 0.85;
	f->comm = 0.10;
	f->overlap = 0.5;
	f->slow_rank = f->late_rank = -1;
	f->slow_a = f->slow_b = -1;
	f->pp = 1;
	f->nan_step = -1;
}

static int64_t sid(struct db *db, const char *s)
{
	int64_t id;
	cr_assert_eq(db_intern(db, s, &id), 0, "%s", ascent_errmsg());
	return id;
}

static void ev(struct db *db, int rank, int kind, const char *name, int64_t start, int64_t dur, int64_t step,
	       int64_t bytes, int comm_id, int64_t seq, int peer, int mb)
{
	struct db_event e = { .start_ns = start, .dur_ns = dur, .step = step, .name_id = sid(db, name), .bytes = bytes,
			      .seq = seq, .rank = rank, .tid = 0, .kind = kind, .mb = mb, .layer = -1, .peer = peer,
			      .comm_id = comm_id };
	cr_assert_eq(db_put_event(db, &e), 0, "%s", ascent_errmsg());
}

static char *build(const struct fx *f, const char *tag)
{
	static char path[256];
	snprintf(path, sizeof path, "/tmp/ascent-advise-%d-%s.db", (int)getpid(), tag);
	struct db *db;
	cr_assert_eq(db_open(path, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_begin(db), 0);
	cr_assert_eq(db_put_run(db, "ascent train (fixture)", f->config ? f->config : "{}", f->ranks), 0);
	int per_stage = f->ranks / (f->pp > 0 ? f->pp : 1);
	for (int r = 0; r < f->ranks; r++) {
		struct db_rank_info ri = { .rank = r, .pid = 100 + r, .dp_rank = r % per_stage, .tp_rank = 0,
					   .pp_rank = f->pp > 1 ? r / per_stage : 0, .threads = 1,
					   .host = f->hosts[r] ? f->hosts[r] : "node0" };
		cr_assert_eq(db_put_rank(db, &ri), 0, "%s", ascent_errmsg());
		cr_assert_eq(db_put_comm(db, r, 0, "world", f->ranks, r), 0);
		if (f->tp > 1)
			cr_assert_eq(db_put_comm(db, r, 0x2000000 + r / f->tp, "tp", f->tp, r % f->tp), 0);
	}
	for (int i = 0; i < 8 && f->meta[i][0]; i++)
		cr_assert_eq(db_set_meta(db, f->meta[i][0], f->meta[i][1]), 0);
	int64_t T = f->T;
	int mb_count = 0;
	if (f->config) {
		const char *m = strstr(f->config, "\"microbatches\":");
		if (m)
			mb_count = atoi(m + 15);
	}
	for (int r = 0; r < f->ranks; r++) {
		double scale = 65536;
		for (int s = 0; s < f->steps; s++) {
			int64_t t = (int64_t)s * T;
			ev(db, r, DB_KIND_STEP, "step", t, T, s, 0, -1, -1, -1, -1);
			int64_t a = t;
			if (f->data > 0) {
				ev(db, r, DB_KIND_DATA, "load_batch", t, (int64_t)(f->data * T), s, 0, -1, -1, -1, -1);
				a += (int64_t)(f->data * T);
			}
			int64_t cd = (int64_t)((f->compute + (r == f->slow_rank ? f->slow_extra : 0)) * T);
			ev(db, r, DB_KIND_OP, "matmul", a, cd, s, 0, -1, -1, -1, mb_count ? 0 : -1);
			int64_t seq = (int64_t)s * (1 + f->tiny) + 1;
			int64_t c0 = a + cd - (int64_t)(f->overlap * f->comm * T);
			if (r == f->late_rank)
				c0 += (int64_t)(f->late_frac * T);
			int64_t cend = c0 + (int64_t)(f->comm * T);
			if (f->comm > 0)
				ev(db, r, DB_KIND_COMM, "allreduce", c0, (int64_t)(f->comm * T), s, 25 << 20, 0, seq, -1, -1);
			int64_t x = cend;
			for (int k = 0; k < f->tiny; k++) {
				ev(db, r, DB_KIND_COMM, "allreduce", x, 50000, s, f->tiny_unknown ? 0 : 4096, 0, seq + 1 + k, -1, -1);
				x += 50000;
			}
			if (f->bubble > 0) {
				ev(db, r, DB_KIND_P2P, "recv", x, (int64_t)(f->bubble * T), s, 1 << 20, 0x3000000, s + 1, 0, -1);
				x += (int64_t)(f->bubble * T);
			}
			if (f->ring) {
				int to = (r + 1) % f->ranks, from = (r + f->ranks - 1) % f->ranks;
				int64_t d_out = (r == f->slow_a && to == f->slow_b) ? 1000000 : 100000;
				int64_t d_in = (from == f->slow_a && r == f->slow_b) ? 1000000 : 100000;
				ev(db, r, DB_KIND_P2P, "send", x, d_out, s, 1 << 20, 0, s + 1, to, -1);
				ev(db, r, DB_KIND_P2P, "recv", x, d_in, s, 1 << 20, 0, s + 1, from, -1);
			}
			if (f->nan_step >= 0 || f->scale_collapse)
				cr_assert_eq(db_put_counter(db, r, sid(db, "loss"), t + T - 10,
							    s == f->nan_step ? NAN : 5.5 - 0.1 * s), 0);
			if (f->scale_collapse) {
				if (f->scale_collapse == 1)
					scale = s == 0 ? 65536 : scale / 4096;
				else if (s == 3)
					scale /= 2;
				cr_assert_eq(db_put_counter(db, r, sid(db, "loss_scale"), t + T - 5, scale), 0);
			}
		}
		if (f->mem_share > 0) {
			int64_t lim = 1LL << 30;
			int64_t p = lim / 10, o = lim / 5, act = (int64_t)(f->mem_share * lim) - p - o;
			cr_assert_eq(db_put_mem(db, r, DB_MEM_HOST, 1, p, DB_MEM_PARAM, p, 0), 0);
			cr_assert_eq(db_put_mem(db, r, DB_MEM_HOST, 2, o, DB_MEM_OPTIMIZER, o, 0), 0);
			cr_assert_eq(db_put_mem(db, r, DB_MEM_HOST, 3, act, DB_MEM_ACTIVATION, act, 0), 0);
			cr_assert_eq(db_put_mem(db, r, DB_MEM_HOST, 4, -act, DB_MEM_ACTIVATION, 0, 0), 0);
		}
		if (f->dev_share > 0) {
			int64_t d = (int64_t)(f->dev_share * (double)(1LL << 30));
			cr_assert_eq(db_put_mem(db, r, 0, 5, d, DB_MEM_OTHER, d, 0), 0);
		}
	}
	if (f->mem_share > 0 || f->dev_share > 0)
		cr_assert_eq(db_set_meta(db, "mem_limit_bytes", "1073741824"), 0);
	cr_assert_eq(db_commit(db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_finalize(db), 0, "%s", ascent_errmsg());
	db_close(db);
	return path;
}

/* Every finding's query runs as printed in the sqlite3 shell on the profile (users paste it there). */
static void queries_run(const char *path, const struct diag_advice *a)
{
	sqlite3 *h = NULL;
	cr_assert_eq(sqlite3_open_v2(path, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	for (int i = 0; i < a->n; i++) {
		char *err = NULL;
		int rc = sqlite3_exec(h, a->f[i].query, NULL, NULL, &err);
		cr_assert_eq(rc, SQLITE_OK, "%s: its query does not run (%s): %s", a->f[i].rule, err ? err : "?",
			     a->f[i].query);
		sqlite3_free(err);
	}
	sqlite3_close(h);
}

/* A fixture profile removed with the write-ahead log and shared-memory files beside it (the
 * read-only connections of queries_run cannot remove them when they close). */
static void remove_db(const char *path)
{
	char aux[300];
	unlink(path);
	snprintf(aux, sizeof aux, "%s-wal", path);
	unlink(aux);
	snprintf(aux, sizeof aux, "%s-shm", path);
	unlink(aux);
}

static void advise(const struct fx *f, const char *tag, struct diag_advice *a)
{
	char *p = build(f, tag);
	struct db *db;
	cr_assert_eq(db_open(p, DB_READ, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(diag_advise(db, a), 0, "%s", ascent_errmsg());
	db_close(db);
	queries_run(p, a);
	remove_db(p);
}

static const struct diag_finding *fired(const struct diag_advice *a, const char *rule, enum diag_severity min)
{
	const struct diag_finding *d = diag_advice_find(a, rule);
	if (!d) {
		const struct diag_rule_result *r = diag_advice_rule(a, rule);
		cr_assert_fail("rule %s did not fire: %s", rule, r ? r->note : "(not run)");
	}
	cr_assert_geq(d->severity, min, "%s: severity %s", rule, diag_severity_name(d->severity));
	cr_assert(d->evidence[0] && d->query[0] && d->fix[0], "%s: evidence, query and fix must be filled", rule);
	return d;
}

static void quiet(const struct diag_advice *a, const char *rule)
{
	const struct diag_finding *d = diag_advice_find(a, rule);
	cr_assert_null(d, "rule %s fired on a healthy fixture: %s | %s", rule, d ? d->title : "", d ? d->evidence : "");
	const struct diag_rule_result *r = diag_advice_rule(a, rule);
	cr_assert_not_null(r, "rule %s did not run", rule);
	cr_assert_eq(r->state, DIAG_RULE_OK, "rule %s: %s", rule, r->note);
}

/* The healthy fixture: no rule fires, and each rule reports OK or a reason to skip. */
Test(advise, healthy_run_has_no_findings)
{
	struct fx f;
	fx_defaults(&f);
	struct diag_advice a;
	advise(&f, "healthy", &a);
	for (int i = 0; i < a.n; i++)
		cr_assert_fail("unexpected finding %s: %s", a.f[i].rule, a.f[i].title);
	quiet(&a, "compute.free_time");
	quiet(&a, "comm.exposed");
	quiet(&a, "comm.not_overlapped");
	quiet(&a, "comm.tiny");
	quiet(&a, "rank.slow");
	cr_assert_eq(diag_advice_rule(&a, "pipeline.bubble")->state, DIAG_RULE_SKIPPED);
	cr_assert_eq(diag_advice_rule(&a, "memory.limit")->state, DIAG_RULE_SKIPPED);
	diag_advice_release(&a);
}

Test(advise, free_time)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.40;
	struct diag_advice a;
	advise(&f, "free", &a);
	const struct diag_finding *d = fired(&a, "compute.free_time", DIAG_SEV_HIGH);   /* free ≈ 55% */
	cr_assert_gt(d->value, 0.40);
	cr_assert(strstr(d->evidence, "step 0 excluded as warm-up"), "%s", d->evidence);
	diag_advice_release(&a);
	f.compute = 0.80;   /* free = 1 - (0.80 + 0.05 exposed comm) = 15% */
	advise(&f, "free-ok", &a);
	quiet(&a, "compute.free_time");
	diag_advice_release(&a);
}

Test(advise, data_loading)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.60;
	f.data = 0.20;
	struct diag_advice a;
	advise(&f, "data", &a);
	const struct diag_finding *d = fired(&a, "data.loading", DIAG_SEV_MEDIUM);
	cr_assert_float_eq(d->value, 0.20, 0.01);
	diag_advice_release(&a);
	f.data = 0.03;
	f.compute = 0.80;
	advise(&f, "data-ok", &a);
	quiet(&a, "data.loading");
	diag_advice_release(&a);
}

Test(advise, comm_exposed_and_not_overlapped)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.45;
	f.comm = 0.45;
	f.overlap = 0;
	struct diag_advice a;
	advise(&f, "exposed", &a);
	const struct diag_finding *d = fired(&a, "comm.exposed", DIAG_SEV_MEDIUM);
	cr_assert_float_eq(d->value, 0.45, 0.01);
	cr_assert(strstr(d->evidence, "allreduce"), "top collectives named: %s", d->evidence);
	fired(&a, "comm.not_overlapped", DIAG_SEV_MEDIUM);
	diag_advice_release(&a);
	/* 20% communication, half of it overlapped: neither fires */
	f.compute = 0.70;
	f.comm = 0.20;
	f.overlap = 0.5;
	advise(&f, "exposed-ok", &a);
	quiet(&a, "comm.exposed");
	quiet(&a, "comm.not_overlapped");
	diag_advice_release(&a);
	/* 20% communication, none overlapped: only not_overlapped fires */
	f.overlap = 0;
	advise(&f, "overlap", &a);
	quiet(&a, "comm.exposed");
	fired(&a, "comm.not_overlapped", DIAG_SEV_MEDIUM);
	diag_advice_release(&a);
}

Test(advise, tiny_collectives)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.60;
	f.tiny = 40;   /* 40 × 50 µs = 2 ms of 10 ms */
	struct diag_advice a;
	advise(&f, "tiny", &a);
	const struct diag_finding *d = fired(&a, "comm.tiny", DIAG_SEV_HIGH);
	cr_assert_float_eq(d->value, 0.20, 0.02);
	diag_advice_release(&a);
	f.tiny = 4;
	advise(&f, "tiny-ok", &a);
	quiet(&a, "comm.tiny");
	diag_advice_release(&a);
	/* the same 40 calls with no size known: not tiny, not counted (4 ranks x 5 usable steps x 40 of
	 * the 820 collectives); with no size known at all the rule cannot judge and says so */
	f.tiny = 40;
	f.tiny_unknown = 1;
	advise(&f, "tiny-unknown", &a);
	quiet(&a, "comm.tiny");
	cr_assert(strstr(diag_advice_rule(&a, "comm.tiny")->note, "800 of 820 collective(s) of unknown size"), "%s",
		  diag_advice_rule(&a, "comm.tiny")->note);
	diag_advice_release(&a);
	f.comm = 0;
	advise(&f, "sizes-unknown", &a);
	const struct diag_rule_result *r = diag_advice_rule(&a, "comm.tiny");
	cr_assert(r && r->state == DIAG_RULE_SKIPPED && strstr(r->note, "sizes unknown"), "%s", r ? r->note : "");
	diag_advice_release(&a);
}

Test(advise, tp_across_hosts)
{
	struct fx f;
	fx_defaults(&f);
	f.tp = 2;
	f.hosts[0] = "nodeA", f.hosts[1] = "nodeB", f.hosts[2] = "nodeA", f.hosts[3] = "nodeB";
	struct diag_advice a;
	advise(&f, "tp", &a);
	const struct diag_finding *d = fired(&a, "comm.tp_across_hosts", DIAG_SEV_HIGH);
	cr_assert(strstr(d->evidence, "nodeA") && strstr(d->evidence, "nodeB"), "%s", d->evidence);
	diag_advice_release(&a);
	f.hosts[1] = "nodeA", f.hosts[2] = "nodeB";   /* {0,1} on A, {2,3} on B */
	advise(&f, "tp-ok", &a);
	quiet(&a, "comm.tp_across_hosts");
	diag_advice_release(&a);
}

Test(advise, pipeline_bubble)
{
	struct fx f;
	fx_defaults(&f);
	f.pp = 2;
	f.config = "{\"pp\":2,\"microbatches\":4}";   /* theory 1/5 = 20% */
	f.compute = 0.45;
	f.comm = 0.05;
	f.bubble = 0.45;
	struct diag_advice a;
	advise(&f, "bubble", &a);
	const struct diag_finding *d = fired(&a, "pipeline.bubble", DIAG_SEV_MEDIUM);
	cr_assert(strstr(d->evidence, "20.0%"), "theory stated: %s", d->evidence);
	cr_assert_float_eq(d->value, 0.45, 0.02);
	diag_advice_release(&a);
	f.config = "{\"pp\":2,\"microbatches\":8}";   /* theory 1/9 = 11.1% */
	f.compute = 0.75;
	f.bubble = 0.12;
	advise(&f, "bubble-ok", &a);
	quiet(&a, "pipeline.bubble");
	diag_advice_release(&a);
}

Test(advise, slow_rank_by_compute)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.70;
	f.slow_rank = 2;
	f.slow_extra = 0.10;   /* 0.80 vs 0.70: spread 14% */
	f.hosts[2] = "slowhost";
	struct diag_advice a;
	advise(&f, "slow", &a);
	const struct diag_finding *d = fired(&a, "rank.slow", DIAG_SEV_MEDIUM);
	cr_assert(strstr(d->title, "rank 2 (slowhost)"), "%s", d->title);
	cr_assert(strstr(d->evidence, "median"), "denominator stated: %s", d->evidence);
	diag_advice_release(&a);
	f.slow_extra = 0.02;   /* 3%: under 5% */
	advise(&f, "slow-ok", &a);
	quiet(&a, "rank.slow");
	diag_advice_release(&a);
}

Test(advise, slow_rank_by_arrival)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.70;
	f.late_rank = 3;
	f.late_frac = 0.10;   /* arrives 1 ms late at every collective of a 10 ms step */
	struct diag_advice a;
	advise(&f, "late", &a);
	const struct diag_finding *d = fired(&a, "rank.slow", DIAG_SEV_MEDIUM);
	cr_assert(strstr(d->title, "rank 3"), "%s", d->title);
	cr_assert(strstr(d->evidence, "arrived last at 100%"), "%s", d->evidence);
	diag_advice_release(&a);
	f.late_frac = 0.01;
	advise(&f, "late-ok", &a);
	quiet(&a, "rank.slow");
	diag_advice_release(&a);
}

Test(advise, slow_link)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.60;
	f.ring = 1;
	f.slow_a = 1, f.slow_b = 2;
	f.hosts[1] = "h1", f.hosts[2] = "h2";
	struct diag_advice a;
	advise(&f, "link", &a);
	const struct diag_finding *d = fired(&a, "link.slow", DIAG_SEV_MEDIUM);
	cr_assert(strstr(d->title, "rank 1 (h1) -> rank 2 (h2)"), "%s", d->title);   /* source -> destination */
	cr_assert(!strstr(d->title, "rank 0"), "only the slow pair: %s", d->title);
	diag_advice_release(&a);
	f.slow_a = f.slow_b = -1;
	advise(&f, "link-ok", &a);
	quiet(&a, "link.slow");
	diag_advice_release(&a);
}

Test(advise, memory_limit)
{
	struct fx f;
	fx_defaults(&f);
	f.mem_share = 0.95;
	struct diag_advice a;
	advise(&f, "mem", &a);
	const struct diag_finding *d = fired(&a, "memory.limit", DIAG_SEV_HIGH);
	cr_assert(strstr(d->title, "activation"), "largest category named: %s", d->title);
	cr_assert(strstr(d->fix, "recompute"), "%s", d->fix);
	diag_advice_release(&a);
	f.mem_share = 0.50;
	advise(&f, "mem-ok", &a);
	quiet(&a, "memory.limit");
	diag_advice_release(&a);
	/* a GPU's memory is not the host's: 3x the host limit on device 0 leaves the host at 50% */
	f.dev_share = 3.0;
	advise(&f, "mem-dev", &a);
	quiet(&a, "memory.limit");
	cr_assert(strstr(diag_advice_rule(&a, "memory.limit")->note, "50.0%"), "%s", diag_advice_rule(&a, "memory.limit")->note);
	diag_advice_release(&a);
	/* device memory only: no limit to weigh it against, said so */
	f.mem_share = 0;
	f.dev_share = 0.95;
	advise(&f, "mem-devonly", &a);
	const struct diag_rule_result *rr = diag_advice_rule(&a, "memory.limit");
	cr_assert_eq(rr->state, DIAG_RULE_SKIPPED);
	cr_assert(strstr(rr->note, "only device memory recorded (4 records)"), "%s", rr->note);
	diag_advice_release(&a);
}

Test(advise, loss_nan)
{
	struct fx f;
	fx_defaults(&f);
	f.nan_step = 3;
	struct diag_advice a;
	advise(&f, "nan", &a);
	const struct diag_finding *d = fired(&a, "loss.nan", DIAG_SEV_HIGH);
	cr_assert(strstr(d->evidence, "in step 3"), "%s", d->evidence);
	diag_advice_release(&a);
	f.nan_step = -1;
	f.scale_collapse = 2;   /* loss counter present, finite */
	advise(&f, "nan-ok", &a);
	quiet(&a, "loss.nan");
	diag_advice_release(&a);
}

Test(advise, loss_scale_collapse)
{
	struct fx f;
	fx_defaults(&f);
	f.scale_collapse = 1;
	struct diag_advice a;
	advise(&f, "scale", &a);
	fired(&a, "loss.scale_collapse", DIAG_SEV_HIGH);
	diag_advice_release(&a);
	f.scale_collapse = 2;   /* one halving in 6 steps */
	advise(&f, "scale-ok", &a);
	quiet(&a, "loss.scale_collapse");
	diag_advice_release(&a);
}

Test(advise, threads_and_blas_core)
{
	struct fx f;
	fx_defaults(&f);
	f.meta[0][0] = "blas_threads", f.meta[0][1] = "2";
	f.meta[1][0] = "host_cores", f.meta[1][1] = "2";
	f.meta[2][0] = "blas_core", f.meta[2][1] = "Prescott";
	f.meta[3][0] = "cpu_isa", f.meta[3][1] = "sse4_2 avx2 avx512f avx512bw";
	struct diag_advice a;
	advise(&f, "host", &a);
	const struct diag_finding *d = fired(&a, "host.threads", DIAG_SEV_HIGH);   /* 4 ranks × 2 on 2 cores */
	cr_assert_float_eq(d->value, 4.0, 1e-9);
	cr_assert(strstr(d->fix, "OPENBLAS_NUM_THREADS"), "%s", d->fix);
	d = fired(&a, "host.blas_core", DIAG_SEV_HIGH);
	cr_assert(strstr(d->fix, "SkylakeX"), "%s", d->fix);
	diag_advice_release(&a);
	f.meta[0][1] = "1";
	f.meta[1][1] = "8";
	f.meta[2][1] = "SkylakeX";
	advise(&f, "host-ok", &a);
	quiet(&a, "host.threads");
	quiet(&a, "host.blas_core");
	diag_advice_release(&a);
}

/* Device fixtures (an imported GPU trace): one rank, 6 steps of 10 ms (step 0 the warm-up, so the
 * rules read steps 1-5: 50 ms), CPU thread 0 and device lane 1 (device 0, stream 7); each kernel
 * launched by a 5 us cudaLaunchKernel on thread 0 with a launch link to it.
 * - HEALTHY: per step 100 launches every 100 us (at t0), kernels of 95 us at t0 + 10 us (gaps of 5
 *   us), and one cudaStreamSynchronize [t + 5000, t + 9990) us while the device is busy: the host is
 *   blocked 49.9% of the step, the device idle after running dry only in the 50 gaps that begin
 *   inside it, 50 x 5 us = 250 us a step (2.5%).
 * - ITEM_LOOP (.item() every iteration): 100 launches every 100 us, kernels of 8 us at t0 + 10 us,
 *   each followed by cudaStreamSynchronize [t0 + 5, t0 + 23) us: blocked 100 x 18 us = 18% of the
 *   step; every gap between kernels (92 us) begins inside a synchronisation: 499 gaps over the
 *   steps (the window's last has no next kernel) = 45.908 ms of 50 ms, 91.8%.
 * - LAUNCH: ITEM_LOOP without the synchronisations (launch-bound: tiny kernels, shallow queue).
 * - LONG_SYNC (the host launches far ahead, then waits in a synchronous copy): 500 launches every 5
 *   us from t, kernels of 8 us back to back from t + 10 us (the queue deepens: launch delays
 *   10 + 3i us, median of i = 0..499 the mean of i = 249 and 250, 758.5 us), cudaMemcpy
 *   [t + 2500, t + 4020) us, then no launch until the next step: blocked 1520 us a step (15.2%),
 *   the device idle from t + 4010 to the next step's t + 10010, 6000 us begun inside the copy, 4
 *   such gaps in the window = 24 ms, 48% of the step. */
enum dfx { DFX_HEALTHY, DFX_ITEM_LOOP, DFX_LAUNCH, DFX_LONG_SYNC };

static void dev_launch(struct db *db, int64_t *flow, int64_t call, int64_t kernel, int64_t kdur)
{
	struct db_event c = { .start_ns = call, .dur_ns = 5000, .step = -1, .name_id = sid(db, "cudaLaunchKernel"),
			      .tid = 0, .kind = DB_KIND_RANGE, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	cr_assert_eq(db_put_event(db, &c), 0, "%s", ascent_errmsg());
	struct db_event k = c;
	k.tid = 1;
	k.kind = DB_KIND_KERNEL;
	k.name_id = sid(db, "elementwise_kernel");
	k.start_ns = kernel;
	k.dur_ns = kdur;
	cr_assert_eq(db_put_event(db, &k), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_put_flow(db, 0, DB_FLOW_LAUNCH, ++*flow, 0, call, 1, kernel), 0, "%s", ascent_errmsg());
}

static void dev_call(struct db *db, const char *name, int64_t start, int64_t dur)
{
	struct db_event c = { .start_ns = start, .dur_ns = dur, .step = -1, .name_id = sid(db, name), .tid = 0,
			      .kind = DB_KIND_RANGE, .mb = -1, .layer = -1, .peer = -1, .comm_id = -1, .seq = -1 };
	cr_assert_eq(db_put_event(db, &c), 0, "%s", ascent_errmsg());
}

static void advise_device(enum dfx mode, const char *tag, struct diag_advice *a)
{
	char path[256];
	snprintf(path, sizeof path, "/tmp/ascent-advise-%d-%s.db", (int)getpid(), tag);
	struct db *db;
	cr_assert_eq(db_open(path, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_begin(db), 0);
	cr_assert_eq(db_put_run(db, "import (fixture)", "{}", 1), 0);
	struct db_rank_info ri = { .rank = 0, .pid = 100, .dp_rank = -1, .tp_rank = -1, .pp_rank = -1, .threads = 2,
				   .host = "node0" };
	cr_assert_eq(db_put_rank(db, &ri), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_put_thread(db, 0, 0, 100, "main"), 0);
	cr_assert_eq(db_put_thread(db, 0, 1, 7, "GPU 0 stream 7"), 0);
	cr_assert_eq(db_put_device_lane(db, 0, 1, 0, 7), 0);
	const int64_t T = 10000000, US = 1000;
	int64_t flow = 0;
	for (int s = 0; s < 6; s++) {
		int64_t t = s * T;
		char name[32];
		snprintf(name, sizeof name, "ProfilerStep#%d", s);
		ev(db, 0, DB_KIND_STEP, name, t, T, s, 0, -1, -1, -1, -1);
		if (mode == DFX_LONG_SYNC) {
			for (int i = 0; i < 500; i++)
				dev_launch(db, &flow, t + 5 * US * i, t + 10 * US + 8 * US * i, 8 * US);
			dev_call(db, "cudaMemcpy", t + 2500 * US, 1520 * US);
			continue;
		}
		for (int i = 0; i < 100; i++) {
			int64_t t0 = t + 100 * US * i;
			dev_launch(db, &flow, t0, t0 + 10 * US, mode == DFX_HEALTHY ? 95 * US : 8 * US);
			if (mode == DFX_ITEM_LOOP)
				dev_call(db, "cudaStreamSynchronize", t0 + 5 * US, 18 * US);
		}
		if (mode == DFX_HEALTHY)
			dev_call(db, "cudaStreamSynchronize", t + 5000 * US, 4990 * US);
	}
	cr_assert_eq(db_commit(db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_finalize(db), 0, "%s", ascent_errmsg());
	cr_assert_eq(diag_advise(db, a), 0, "%s", ascent_errmsg());
	db_close(db);
	queries_run(path, a);
	remove_db(path);
}

static void note_has(const struct diag_advice *a, const char *rule, const char *text)
{
	const struct diag_rule_result *r = diag_advice_rule(a, rule);
	cr_assert_not_null(r, "rule %s did not run", rule);
	cr_assert(strstr(r->note, text), "%s: '%s' not in: %s", rule, text, r->note);
}

Test(advise, host_blocked_healthy)
{
	struct diag_advice a;
	advise_device(DFX_HEALTHY, "dev-healthy", &a);
	quiet(&a, "host.blocked");
	quiet(&a, "device.idle");
	quiet(&a, "device.launch_bound");
	/* blocked 49.9%, idle after 2.5%: the host waits for a busy device */
	note_has(&a, "host.blocked", "49.9% of the step");
	note_has(&a, "host.blocked", "during one 2.5% of it");
	note_has(&a, "host.blocked", "5 step(s) 1-5");
	diag_advice_release(&a);
}

Test(advise, host_blocked_item_loop_not_launch_bound)
{
	struct diag_advice a;
	advise_device(DFX_ITEM_LOOP, "dev-item", &a);
	const struct diag_finding *d = fired(&a, "host.blocked", DIAG_SEV_HIGH);
	cr_assert_float_eq(d->value, 45908.0 / 50000.0, 1e-9, "idle after a blocking call: %f", d->value);
	cr_assert(strstr(d->evidence, "18.0% of the step time"), "%s", d->evidence);
	cr_assert(strstr(d->evidence, "cudaStreamSynchronize x500 9.00 ms"), "%s", d->evidence);
	cr_assert(strstr(d->evidence, "5 step(s) 1-5"), "%s", d->evidence);
	cr_assert_null(diag_advice_find(&a, "device.launch_bound"), "launch_bound fired beside host.blocked");
	note_has(&a, "device.launch_bound", "secondary");
	diag_advice_release(&a);
}

Test(advise, launch_bound_without_blocking)
{
	struct diag_advice a;
	advise_device(DFX_LAUNCH, "dev-launch", &a);
	const struct diag_finding *d = fired(&a, "device.launch_bound", DIAG_SEV_MEDIUM);
	cr_assert(strstr(d->evidence, "500 of 500 kernels"), "%s", d->evidence);
	cr_assert(strstr(d->evidence, "5 step(s) 1-5"), "%s", d->evidence);
	quiet(&a, "host.blocked");
	note_has(&a, "host.blocked", "no blocking runtime call");
	diag_advice_release(&a);
}

Test(advise, host_blocked_long_sync_deep_queue)
{
	struct diag_advice a;
	advise_device(DFX_LONG_SYNC, "dev-long", &a);
	const struct diag_finding *d = fired(&a, "host.blocked", DIAG_SEV_HIGH);
	cr_assert_float_eq(d->value, 24000.0 / 50000.0, 1e-9, "idle after a blocking call: %f", d->value);
	cr_assert(strstr(d->evidence, "15.2% of the step time"), "%s", d->evidence);
	cr_assert(strstr(d->evidence, "cudaMemcpy x5 7.60 ms (15.2% of the step, synchronous copy)"), "%s", d->evidence);
	cr_assert_null(diag_advice_find(&a, "device.launch_bound"), "launch_bound fired on a deep queue");
	note_has(&a, "device.launch_bound", "758.5 us or more");
	diag_advice_release(&a);
}

Test(advise, findings_sorted_and_json)
{
	struct fx f;
	fx_defaults(&f);
	f.compute = 0.40;          /* High free time */
	f.tiny = 4;
	f.scale_collapse = 2;
	f.meta[0][0] = "blas_threads", f.meta[0][1] = "1";
	f.meta[1][0] = "host_cores", f.meta[1][1] = "3";   /* 4 ranks × 1 on 3 cores: Medium */
	struct diag_advice a;
	advise(&f, "sorted", &a);
	cr_assert_geq(a.n, 2);
	for (int i = 1; i < a.n; i++)
		cr_assert_geq(a.f[i - 1].severity, a.f[i].severity, "findings are High first");
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	cr_assert_eq(diag_advice_print_json(m, &a, "x.db"), 0);
	fclose(m);
	cr_assert(strstr(buf, "\"findings\"") && strstr(buf, "\"severity\":\t\"High\"") && strstr(buf, "\"rules\""),
		  "%s", buf);
	free(buf);
	diag_advice_release(&a);
}

Test(advise, refuses_a_foreign_file)
{
	char p[64];
	snprintf(p, sizeof p, "/tmp/ascent-advise-%d.txt", (int)getpid());
	FILE *f = fopen(p, "w");
	fputs("not a database\n", f);
	fclose(f);
	int rc = diag_advise_run(p, "table", stdout);
	unlink(p);
	cr_assert_eq(rc, ASCENT_EINPUT, "%s", ascent_errmsg());
	cr_assert_eq(diag_advise_run("/nonexistent/run.db", "table", stdout), ASCENT_EINPUT);
}

/* ---- diag comm helpers, diag_report_store ------------------------------------------------ */

Test(comm_bench, busbw_factors_and_ops)
{
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_ALLREDUCE, 4), 1.5, 1e-12);
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_ALLGATHER, 4), 0.75, 1e-12);
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_REDUCESCATTER, 2), 0.5, 1e-12);
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_ALLTOALL, 8), 0.875, 1e-12);
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_BROADCAST, 8), 1.0, 1e-12);
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_SENDRECV, 8), 1.0, 1e-12);
	cr_assert_float_eq(diag_comm_busbw_factor(DIAG_OP_ALLREDUCE, 1), 0.0, 1e-12);
	unsigned m;
	cr_assert_eq(diag_comm_parse_ops("allreduce,sendrecv", &m), 0);
	cr_assert_eq(m, (1u << DIAG_OP_ALLREDUCE) | (1u << DIAG_OP_SENDRECV));
	cr_assert_eq(diag_comm_parse_ops("allreduce,bogus", &m), ASCENT_EUSAGE);
	cr_assert(strstr(ascent_errmsg(), "bogus"));
}

static void matrix(double *m, int n, double v)
{
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			m[i * n + j] = i == j ? 0 : v + 0.01 * ((i * 7 + j * 3) % 5);   /* mild noise */
}

Test(comm_bench, find_slow_rank_and_link)
{
	int n = 5, sr[5], sl[25];
	double m[25], rref[2], lref[2];
	/* healthy: nothing */
	matrix(m, n, 10);
	cr_assert_eq(diag_comm_find_slow(m, NULL, n, 0.5, sr, sl, rref, lref), 0);
	/* rank 3 slow: all of its links at 1 GB/s */
	for (int j = 0; j < n; j++)
		if (j != 3)
			m[3 * n + j] = m[j * n + 3] = 1.0;
	cr_assert_eq(diag_comm_find_slow(m, NULL, n, 0.5, sr, sl, rref, lref), 1);
	for (int i = 0; i < n; i++)
		cr_assert_eq(sr[i], i == 3, "rank %d", i);
	for (int i = 0; i < n * n; i++)
		cr_assert_eq(sl[i], 0, "the slow rank's links are not reported as slow links");
	/* link 0-1 slow only */
	matrix(m, n, 10);
	m[0 * n + 1] = m[1 * n + 0] = 2.0;
	cr_assert_eq(diag_comm_find_slow(m, NULL, n, 0.5, sr, sl, rref, lref), 1);
	for (int i = 0; i < n; i++)
		cr_assert_eq(sr[i], 0);
	cr_assert(sl[0 * n + 1] && sl[1 * n + 0]);
	cr_assert_float_eq(lref[0], 10.0, 0.1);
	/* with 3 ranks a slow rank is still found (its best link is slow, the others' best is not) */
	int s3[3], l3[9];
	double m3[9] = { 0, 10, 1, 10, 0, 1, 1, 1, 0 };
	cr_assert_eq(diag_comm_find_slow(m3, NULL, 3, 0.5, s3, l3, rref, lref), 1);
	cr_assert(s3[2] && !s3[0] && !s3[1]);
	/* two hosts x 3 ranks: links between hosts (1 GB/s) are judged with each other, links inside a
	 * host (shared memory, 10 GB/s) with each other */
	int s6[6], l6[36];
	double m6[36], lr6[2];
	unsigned char between[36];
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++) {
			between[i * 6 + j] = i / 3 != j / 3;
			m6[i * 6 + j] = i == j ? 0 : between[i * 6 + j] ? 1.0 : 10.0;
		}
	cr_assert_eq(diag_comm_find_slow(m6, between, 6, 0.5, s6, l6, rref, lr6), 0);
	cr_assert_float_eq(lr6[0], 10.0, 1e-9);
	cr_assert_float_eq(lr6[1], 1.0, 1e-9);
	/* a shared-memory link at 2 GB/s is slow for its kind; next to the network links it hides */
	m6[0 * 6 + 1] = m6[1 * 6 + 0] = 2.0;
	cr_assert_eq(diag_comm_find_slow(m6, between, 6, 0.5, s6, l6, rref, lr6), 1);
	cr_assert(l6[0 * 6 + 1] && l6[1 * 6 + 0]);
	cr_assert_eq(diag_comm_find_slow(m6, NULL, 6, 0.5, s6, l6, rref, lr6), 0);
	/* a slow network link among network links */
	m6[0 * 6 + 1] = m6[1 * 6 + 0] = 10.0;
	m6[0 * 6 + 4] = m6[4 * 6 + 0] = 0.2;
	cr_assert_eq(diag_comm_find_slow(m6, between, 6, 0.5, s6, l6, rref, lr6), 1);
	cr_assert(l6[0 * 6 + 4] && l6[4 * 6 + 0]);
	/* three hosts x 2 ranks, rank 4 slow (every link 0.01 GB/s): its host peer rank 5 has only a
	 * slow shared-memory link, but its network links are as good as anyone's, so it is not slow */
	for (int i = 0; i < 6; i++)
		for (int j = 0; j < 6; j++) {
			between[i * 6 + j] = i / 2 != j / 2;
			m6[i * 6 + j] = i == j ? 0 : between[i * 6 + j] ? 1.0 + 0.01 * ((i + j) % 3) : 10.0;
			if (i == 4 || j == 4)
				m6[i * 6 + j] = i == j ? 0 : 0.01;
		}
	cr_assert_eq(diag_comm_find_slow(m6, between, 6, 0.5, s6, l6, rref, lr6), 1);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(s6[i], i == 4, "rank %d", i);
	cr_assert_float_eq(rref[0], 10.0, 1e-9);
	/* two ranks: undecidable */
	double m2[4] = { 0, 1, 1, 0 };
	cr_assert_eq(diag_comm_find_slow(m2, NULL, 2, 0.5, s3, l3, rref, lref), 0);
}

struct count_ud {
	int n, fail;
	char fix_seen;
};

static int count_cb(void *ud, int64_t id, int64_t ts, const char *name, const char *status, double value,
		    const char *unit, const char *detail)
{
	(void)id;
	(void)value;
	(void)unit;
	struct count_ud *c = ud;
	c->n++;
	cr_assert_gt(ts, 0);
	if (!strcmp(status, "FAIL")) {
		c->fail++;
		cr_assert_str_eq(name, "env.x");
		c->fix_seen = strstr(detail, "| fix: do y") != NULL;
	}
	return 0;
}

Test(comm_bench, report_store_appends_to_diag_check)
{
	char p[64];
	snprintf(p, sizeof p, "/tmp/ascent-store-%d.db", (int)getpid());
	unlink(p);
	struct diag_report r;
	cr_assert_eq(diag_report_init(&r), 0);
	diag_check_add(&r, DIAG_PASS, "versions.mpi", NULL, "ok");
	diag_check_add(&r, DIAG_FAIL, "env.x", "do y", "x is %d", 3);
	cr_assert_eq(diag_report_store(&r, p), 0, "%s", ascent_errmsg());   /* creates the file */
	cr_assert_eq(diag_report_store(&r, p), 0, "%s", ascent_errmsg());   /* appends */
	diag_report_release(&r);
	struct db *db;
	cr_assert_eq(db_open(p, DB_READ, &db), 0);
	struct count_ud c = { 0, 0, 0 };
	cr_assert_eq(db_each_diag_check(db, count_cb, &c), 0);
	db_close(db);
	cr_assert_eq(c.n, 4);
	cr_assert_eq(c.fail, 2);
	cr_assert(c.fix_seen);
	/* a file that is not a profile is refused */
	FILE *f = fopen(p, "w");
	fputs("plain text", f);
	fclose(f);
	cr_assert_eq(diag_report_init(&r), 0);
	diag_check_add(&r, DIAG_PASS, "a", NULL, "b");
	cr_assert_neq(diag_report_store(&r, p), 0);
	diag_report_release(&r);
	unlink(p);
}
