/* diag/advise_impl.h — private to the advisor (advise.c, advise_rules.c): the context the rules
 * share (the profile's ranks, step decomposition, strings, run config, read once through db/) and
 * the helpers that record a rule's outcome. Nothing outside diag/ includes this. */
#ifndef ASCENT_DIAG_ADVISE_IMPL_H
#define ASCENT_DIAG_ADVISE_IMPL_H

#include "diag/diag.h"
#include "db/db.h"

struct cJSON;

struct adv_ctx {
	struct db *db;
	struct diag_advice *a;
	struct db_rank_info *ranks;      /* ascending rank */
	int nranks;
	struct db_step_stat *steps;      /* the usable (rank, step) rows: warm-up step excluded */
	int nsteps;
	int64_t step_lo, step_hi;        /* usable step range (inclusive); lo < 0: no steps */
	int64_t warmup_step;             /* the excluded first step, -1 none */
	int distinct_steps;              /* usable steps */
	char **names;                    /* string table */
	int64_t nnames;
	struct cJSON *config;            /* the run's config_json parsed, or NULL */
};

/* The index of a rank in ranks (binary search; −1 absent). */
int adv_rank_index(const struct adv_ctx *x, int rank);
/* "host" of a rank, "?" when unknown. */
const char *adv_host(const struct adv_ctx *x, int rank);
/* pp_rank of a rank (-1 unknown). */
int adv_pp_rank(const struct adv_ctx *x, int rank);
/* An integer from the run config (top level or under "parallel"/"train"), or dflt. */
int adv_config_int(const struct adv_ctx *x, const char *key, int dflt);
/* A meta value parsed as a number; 0 when absent or not a number (then *found = 0). */
double adv_meta_num(const struct adv_ctx *x, const char *key, int *found);
/* Step range text: "steps 1-9 (step 0 excluded as warm-up)". */
void adv_steps_text(const struct adv_ctx *x, char *buf, size_t n);

/* Record outcomes. evidence/fix/query are copied; title is printf-style. */
int adv_fire(struct adv_ctx *x, const char *rule, enum diag_severity sev, double value, double threshold,
	     const char *evidence, const char *query, const char *fix, const char *title_fmt, ...)
	__attribute__((format(printf, 9, 10)));
int adv_ok(struct adv_ctx *x, const char *rule, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int adv_skip(struct adv_ctx *x, const char *rule, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Append printf-style text to a fixed buffer (truncates). */
void adv_cat(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The rules (advise_rules.c), each records one or more outcomes; non-zero only on an error. */
int adv_rule_free_time(struct adv_ctx *x);
int adv_rule_data_loading(struct adv_ctx *x);
int adv_rule_comm_exposed(struct adv_ctx *x);
int adv_rule_comm_overlap(struct adv_ctx *x);
int adv_rule_tp_across_hosts(struct adv_ctx *x);
int adv_rule_tiny_collectives(struct adv_ctx *x);
int adv_rule_bubble(struct adv_ctx *x);
int adv_rule_slow_rank(struct adv_ctx *x);
int adv_rule_slow_link(struct adv_ctx *x);
int adv_rule_slow_host(struct adv_ctx *x);
int adv_rule_memory(struct adv_ctx *x);
int adv_rule_loss_nan(struct adv_ctx *x);
int adv_rule_loss_scale(struct adv_ctx *x);
int adv_rule_threads(struct adv_ctx *x);
int adv_rule_blas_core(struct adv_ctx *x);
int adv_rule_preflight(struct adv_ctx *x);
int adv_rule_run_end(struct adv_ctx *x);   /* "error" notes: a signal, MPI_Abort */
/* device traces (advise_device.c) */
int adv_rule_device_idle(struct adv_ctx *x);
int adv_rule_host_blocked(struct adv_ctx *x);
int adv_rule_launch_bound(struct adv_ctx *x);
int adv_rule_h2d_copies(struct adv_ctx *x);

#endif
