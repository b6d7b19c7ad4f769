/* diag/advise.c — `ascent advise`: the advisor's frame. It opens a profile read-only, reads what
 * every rule shares once through db/ (ranks and hosts, the msprof step decomposition without the
 * warm-up step, strings, the run's configuration), runs the rules of advise_rules.c in a fixed
 * order, sorts the findings High → Medium → Low and prints them as a table or one JSON document.
 * Each finding carries its evidence, the SQL a user can run in the sqlite3 shell to see the same
 * numbers, and the fix; rules that could not run say why. */
#include "diag/advise_impl.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *diag_severity_name(enum diag_severity s)
{
	switch (s) {
	case DIAG_SEV_HIGH: return "High";
	case DIAG_SEV_MEDIUM: return "Medium";
	case DIAG_SEV_LOW: return "Low";
	}
	return "?";
}

void diag_advice_init(struct diag_advice *a)
{
	memset(a, 0, sizeof *a);
}

void diag_advice_release(struct diag_advice *a)
{
	if (!a)
		return;
	free(a->f);
	free(a->rules);
	memset(a, 0, sizeof *a);
}

const struct diag_finding *diag_advice_find(const struct diag_advice *a, const char *rule)
{
	for (int i = 0; i < a->n; i++)
		if (!strcmp(a->f[i].rule, rule))
			return &a->f[i];
	return NULL;
}

const struct diag_rule_result *diag_advice_rule(const struct diag_advice *a, const char *rule)
{
	for (int i = 0; i < a->nrules; i++)
		if (!strcmp(a->rules[i].rule, rule))
			return &a->rules[i];
	return NULL;
}

void adv_cat(char *buf, size_t n, const char *fmt, ...)
{
	size_t l = strlen(buf);
	if (l + 1 >= n)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf + l, n - l, fmt, ap);
	va_end(ap);
}

static int add_rule(struct adv_ctx *x, const char *rule, enum diag_rule_state st, const char *note)
{
	struct diag_advice *a = x->a;
	if (ARRAY_GROW(a->rules, a->nrules, a->cap_rules, 16, "adding rule results"))
		return ASCENT_ENOMEM;
	struct diag_rule_result *r = &a->rules[a->nrules++];
	memset(r, 0, sizeof *r);
	snprintf(r->rule, sizeof r->rule, "%s", rule);
	r->state = st;
	snprintf(r->note, sizeof r->note, "%s", note ? note : "");
	return 0;
}

int adv_ok(struct adv_ctx *x, const char *rule, const char *fmt, ...)
{
	char note[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note, sizeof note, fmt, ap);
	va_end(ap);
	return add_rule(x, rule, DIAG_RULE_OK, note);
}

int adv_skip(struct adv_ctx *x, const char *rule, const char *fmt, ...)
{
	char note[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(note, sizeof note, fmt, ap);
	va_end(ap);
	return add_rule(x, rule, DIAG_RULE_SKIPPED, note);
}

int adv_fire(struct adv_ctx *x, const char *rule, enum diag_severity sev, double value, double threshold,
	     const char *evidence, const char *query, const char *fix, const char *title_fmt, ...)
{
	struct diag_advice *a = x->a;
	if (ARRAY_GROW(a->f, a->n, a->cap, 8, "adding findings"))
		return ASCENT_ENOMEM;
	struct diag_finding *f = &a->f[a->n++];
	memset(f, 0, sizeof *f);
	snprintf(f->rule, sizeof f->rule, "%s", rule);
	f->severity = sev;
	f->value = value;
	f->threshold = threshold;
	va_list ap;
	va_start(ap, title_fmt);
	vsnprintf(f->title, sizeof f->title, title_fmt, ap);
	va_end(ap);
	snprintf(f->evidence, sizeof f->evidence, "%s", evidence ? evidence : "");
	snprintf(f->query, sizeof f->query, "%s", query ? query : "");
	snprintf(f->fix, sizeof f->fix, "%s", fix ? fix : "");
	char note[512];
	snprintf(note, sizeof note, "%s: %.400s", diag_severity_name(sev), f->title);
	return add_rule(x, rule, DIAG_RULE_FIRED, note);
}

int adv_rank_index(const struct adv_ctx *x, int rank)
{
	int lo = 0, hi = x->nranks;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (x->ranks[mid].rank < rank)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < x->nranks && x->ranks[lo].rank == rank ? lo : -1;
}

const char *adv_host(const struct adv_ctx *x, int rank)
{
	int i = adv_rank_index(x, rank);
	return i >= 0 && x->ranks[i].host && *x->ranks[i].host ? x->ranks[i].host : "?";
}

int adv_pp_rank(const struct adv_ctx *x, int rank)
{
	int i = adv_rank_index(x, rank);
	return i >= 0 ? x->ranks[i].pp_rank : -1;
}

int adv_config_int(const struct adv_ctx *x, const char *key, int dflt)
{
	if (!x->config)
		return dflt;
	static const char *const sections[] = { NULL, "parallel", "train", "trainer" };
	for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++) {
		const cJSON *o = sections[i] ? cJSON_GetObjectItemCaseSensitive(x->config, sections[i]) : x->config;
		const cJSON *v = o ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
		if (cJSON_IsNumber(v))
			return (int)v->valuedouble;
	}
	return dflt;
}

double adv_meta_num(const struct adv_ctx *x, const char *key, int *found)
{
	*found = 0;
	char *v = db_get_meta(x->db, key);
	if (!v)
		return 0;
	char *end;
	double d = strtod(v, &end);
	if (end != v && !*end && isfinite(d))
		*found = 1;
	free(v);
	return *found ? d : 0;
}

void adv_steps_text(const struct adv_ctx *x, char *buf, size_t n)
{
	if (x->step_lo < 0) {
		snprintf(buf, n, "no steps");
		return;
	}
	snprintf(buf, n, "%d step(s) %lld-%lld over %d rank(s)", x->distinct_steps, (long long)x->step_lo,
		 (long long)x->step_hi, x->nranks);
	if (x->warmup_step >= 0)
		adv_cat(buf, n, ", step %lld excluded as warm-up", (long long)x->warmup_step);
}

/* Load the shared context: ranks, strings, run config, step decomposition minus the warm-up. */
static int load(struct adv_ctx *x)
{
	int rc = db_ranks(x->db, &x->ranks, &x->nranks);
	if (!rc)
		rc = db_strings(x->db, &x->names, &x->nnames);
	if (rc)
		return rc;
	struct db_run_info run;
	int found = 0;
	if ((rc = db_get_run(x->db, &run, &found)))
		return rc;
	if (found && run.config_json && *run.config_json)
		x->config = cJSON_Parse(run.config_json);   /* unparsable: rules that need it skip */
	db_run_info_free(&run);

	struct db_step_stat *all = NULL;
	int n = 0;
	if ((rc = db_step_stats(x->db, DB_FILTER_ALL, &all, &n)))
		return rc;
	x->warmup_step = -1;
	x->step_lo = x->step_hi = -1;
	int64_t lo = INT64_MAX, hi = INT64_MIN;
	int distinct = 0;
	int64_t prev = INT64_MIN;
	for (int i = 0; i < n; i++) {   /* ordered by step, rank */
		if (all[i].step != prev)
			distinct++, prev = all[i].step;
		lo = all[i].step < lo ? all[i].step : lo;
		hi = all[i].step > hi ? all[i].step : hi;
	}
	if (distinct >= 3)
		x->warmup_step = lo;   /* the first step carries allocation and cache warm-up */
	x->steps = malloc((size_t)(n > 0 ? n : 1) * sizeof *x->steps);
	if (!x->steps) {
		free(all);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	for (int i = 0; i < n; i++)
		if (all[i].step != x->warmup_step && all[i].total_ns > 0)
			x->steps[x->nsteps++] = all[i];
	free(all);
	if (x->nsteps) {
		x->step_lo = x->warmup_step >= 0 ? x->warmup_step + 1 : lo;
		x->step_hi = hi;
		x->distinct_steps = distinct - (x->warmup_step >= 0);
	}
	return 0;
}

static void unload(struct adv_ctx *x)
{
	db_ranks_free(x->ranks, x->nranks);
	db_strings_free(x->names, x->nnames);
	cJSON_Delete(x->config);
	free(x->steps);
}

static int cmp_finding(const void *a, const void *b)
{
	const struct diag_finding *x = a, *y = b;
	if (x->severity != y->severity)
		return x->severity > y->severity ? -1 : 1;
	return 0;
}

int diag_advise(struct db *db, struct diag_advice *out)
{
	diag_advice_init(out);
	struct adv_ctx x;
	memset(&x, 0, sizeof x);
	x.db = db;
	x.a = out;
	int rc = load(&x);
	static int (*const RULES[])(struct adv_ctx *) = {
		adv_rule_free_time, adv_rule_device_idle, adv_rule_host_blocked, adv_rule_launch_bound,
		adv_rule_h2d_copies,
		adv_rule_data_loading, adv_rule_comm_exposed, adv_rule_comm_overlap,
		adv_rule_tiny_collectives, adv_rule_tp_across_hosts, adv_rule_bubble, adv_rule_slow_rank,
		adv_rule_slow_link, adv_rule_slow_host, adv_rule_memory, adv_rule_loss_nan, adv_rule_loss_scale, adv_rule_threads,
		adv_rule_blas_core, adv_rule_preflight, adv_rule_run_end,
	};
	for (size_t i = 0; i < sizeof RULES / sizeof RULES[0] && !rc; i++)
		rc = RULES[i](&x);
	unload(&x);
	if (rc) {
		diag_advice_release(out);
		return rc;
	}
	/* stable sort by severity: insertion sort keeps rule order inside a severity */
	for (int i = 1; i < out->n; i++) {
		struct diag_finding t = out->f[i];
		int j = i - 1;
		while (j >= 0 && cmp_finding(&out->f[j], &t) > 0) {
			out->f[j + 1] = out->f[j];
			j--;
		}
		out->f[j + 1] = t;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Output */

static int count_sev(const struct diag_advice *a, enum diag_severity s)
{
	int k = 0;
	for (int i = 0; i < a->n; i++)
		k += a->f[i].severity == s;
	return k;
}

/* Print `text` wrapped at ~100 columns with `indent` spaces on continuation lines. */
static void wrap(FILE *f, const char *label, const char *text, int indent)
{
	fprintf(f, "%*s%s", indent, "", label);
	int col = indent + (int)strlen(label);
	const char *p = text;
	while (*p) {
		const char *sp = p;
		while (*sp && *sp != ' ')
			sp++;
		int w = (int)(sp - p);
		if (col + w > 104 && col > indent + (int)strlen(label)) {
			fprintf(f, "\n%*s", indent + (int)strlen(label), "");
			col = indent + (int)strlen(label);
		}
		fwrite(p, 1, (size_t)w, f);
		col += w;
		p = sp;
		if (*p == ' ') {
			fputc(' ', f);
			col++;
			p++;
		}
	}
	fputc('\n', f);
}

void diag_advice_print(FILE *f, const struct diag_advice *a, const char *db_path)
{
	const char *nc = getenv("NO_COLOR");
	int colour = (!nc || !*nc) && isatty(fileno(f));
	fprintf(f, "# ascent advise %s\n", db_path ? db_path : "");
	fprintf(f, "%d finding(s): %d High, %d Medium, %d Low\n\n", a->n, count_sev(a, DIAG_SEV_HIGH),
		count_sev(a, DIAG_SEV_MEDIUM), count_sev(a, DIAG_SEV_LOW));
	static const char *col[] = { "\033[32m", "\033[33m", "\033[31m" };
	for (int i = 0; i < a->n; i++) {
		const struct diag_finding *d = &a->f[i];
		if (colour)
			fprintf(f, "%d. [%s%s\033[0m] %s: %s\n", i + 1, col[d->severity], diag_severity_name(d->severity),
				d->rule, d->title);
		else
			fprintf(f, "%d. [%s] %s: %s\n", i + 1, diag_severity_name(d->severity), d->rule, d->title);
		wrap(f, "evidence: ", d->evidence, 3);
		wrap(f, "query:    ", d->query, 3);
		wrap(f, "fix:      ", d->fix, 3);
		fputc('\n', f);
	}
	fprintf(f, "rules checked:\n");
	for (int i = 0; i < a->nrules; i++) {
		const struct diag_rule_result *r = &a->rules[i];
		if (r->state == DIAG_RULE_FIRED)
			continue;
		char label[80];
		snprintf(label, sizeof label, "%-8s %-22s ", r->state == DIAG_RULE_OK ? "ok" : "skipped", r->rule);
		wrap(f, label, r->note, 2);
	}
}

int diag_advice_print_json(FILE *f, const struct diag_advice *a, const char *db_path)
{
	cJSON *doc = cJSON_CreateObject();
	if (!doc)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	cJSON_AddStringToObject(doc, "db", db_path ? db_path : "");
	cJSON *fs = cJSON_AddArrayToObject(doc, "findings");
	for (int i = 0; i < a->n; i++) {
		const struct diag_finding *d = &a->f[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "rule", d->rule);
		cJSON_AddStringToObject(o, "severity", diag_severity_name(d->severity));
		cJSON_AddStringToObject(o, "title", d->title);
		cJSON_AddStringToObject(o, "evidence", d->evidence);
		cJSON_AddStringToObject(o, "query", d->query);
		cJSON_AddStringToObject(o, "fix", d->fix);
		cJSON_AddNumberToObject(o, "value", isfinite(d->value) ? d->value : 0);
		cJSON_AddNumberToObject(o, "threshold", isfinite(d->threshold) ? d->threshold : 0);
		cJSON_AddItemToArray(fs, o);
	}
	cJSON *rs = cJSON_AddArrayToObject(doc, "rules");
	static const char *const ST[] = { "ok", "fired", "skipped" };
	for (int i = 0; i < a->nrules; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "rule", a->rules[i].rule);
		cJSON_AddStringToObject(o, "state", ST[a->rules[i].state]);
		cJSON_AddStringToObject(o, "note", a->rules[i].note);
		cJSON_AddItemToArray(rs, o);
	}
	cJSON *sum = cJSON_AddObjectToObject(doc, "summary");
	cJSON_AddNumberToObject(sum, "high", count_sev(a, DIAG_SEV_HIGH));
	cJSON_AddNumberToObject(sum, "medium", count_sev(a, DIAG_SEV_MEDIUM));
	cJSON_AddNumberToObject(sum, "low", count_sev(a, DIAG_SEV_LOW));
	char *s = cJSON_Print(doc);
	cJSON_Delete(doc);
	if (!s)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	fputs(s, f);
	fputc('\n', f);
	free(s);
	return fflush(f) ? ascent_error(ASCENT_EIO, "cannot write the advice") : 0;
}

int diag_advise_run(const char *path, const char *format, FILE *out)
{
	if (!fs_exists(path))
		return ascent_error(ASCENT_EINPUT, "cannot open '%s': no such file (pass a profile, e.g. runs/NAME/trace.db)",
				    path);
	struct db *db = NULL;
	int rc = db_open(path, DB_READ, &db);
	if (rc)
		return rc;
	struct diag_advice a;
	rc = diag_advise(db, &a);
	db_close(db);
	if (rc)
		return rc;
	if (format && !strcmp(format, "json"))
		rc = diag_advice_print_json(out, &a, path);
	else
		diag_advice_print(out, &a, path);
	diag_advice_release(&a);
	return rc;
}
