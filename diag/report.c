/* diag/report.c — the diag report: checks (PASS/WARN/FAIL/SKIP with message and fix), an identity
 * table and command-specific JSON data; printed as a table for people and as one JSON document
 * for scripts (the contract in diag.h). */
#include "diag/diag.h"
#include "comm/comm.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int diag_report_init(struct diag_report *r)
{
	memset(r, 0, sizeof *r);
	r->data = cJSON_CreateObject();
	if (!r->data)
		return ascent_error(ASCENT_ENOMEM, "out of memory creating a diag report");
	return 0;
}

void diag_report_release(struct diag_report *r)
{
	if (!r)
		return;
	free(r->checks);
	free(r->ident);
	cJSON_Delete(r->data);
	memset(r, 0, sizeof *r);
}

static void copy_str(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
}

int diag_check_add(struct diag_report *r, enum diag_status st, const char *name, const char *fix,
		   const char *fmt, ...)
{
	if (ARRAY_GROW(r->checks, r->n, r->cap, 16, "adding diag checks"))
		return ASCENT_ENOMEM;
	struct diag_check *c = &r->checks[r->n++];
	memset(c, 0, sizeof *c);
	copy_str(c->name, sizeof c->name, name);
	c->status = st;
	copy_str(c->fix, sizeof c->fix, fix);
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->message, sizeof c->message, fmt, ap);
	va_end(ap);
	return 0;
}

int diag_ident_add(struct diag_report *r, const char *key, const char *fmt, ...)
{
	struct diag_ident *id = NULL;
	for (int i = 0; i < r->nident; i++)
		if (!strcmp(r->ident[i].key, key))
			id = &r->ident[i];
	if (!id) {
		if (ARRAY_GROW(r->ident, r->nident, r->cap_ident, 16, "adding identity rows"))
			return ASCENT_ENOMEM;
		id = &r->ident[r->nident++];
		copy_str(id->key, sizeof id->key, key);
	}
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(id->value, sizeof id->value, fmt, ap);
	va_end(ap);
	return 0;
}

int diag_report_merge(struct diag_report *dst, struct diag_report *src)
{
	for (int i = 0; i < src->nident; i++) {
		int rc = diag_ident_add(dst, src->ident[i].key, "%s", src->ident[i].value);
		if (rc)
			return rc;
	}
	for (int i = 0; i < src->n; i++) {
		const struct diag_check *c = &src->checks[i];
		int rc = diag_check_add(dst, c->status, c->name, c->fix, "%s", c->message);
		if (rc)
			return rc;
	}
	src->n = 0;
	src->nident = 0;
	while (src->data && src->data->child) {
		cJSON *item = src->data->child;
		cJSON_DetachItemViaPointer(src->data, item);
		cJSON_DeleteItemFromObjectCaseSensitive(dst->data, item->string);
		cJSON_AddItemToObject(dst->data, item->string, item);
	}
	return 0;
}

const char *diag_status_name(enum diag_status s)
{
	switch (s) {
	case DIAG_PASS: return "PASS";
	case DIAG_WARN: return "WARN";
	case DIAG_FAIL: return "FAIL";
	case DIAG_SKIP: return "SKIP";
	}
	return "?";
}

enum diag_status diag_report_worst(const struct diag_report *r)
{
	enum diag_status w = DIAG_PASS;
	for (int i = 0; i < r->n; i++)
		if (r->checks[i].status > w)
			w = r->checks[i].status;
	return w;
}

int diag_report_count(const struct diag_report *r, enum diag_status st)
{
	int k = 0;
	for (int i = 0; i < r->n; i++)
		k += r->checks[i].status == st;
	return k;
}

const struct diag_check *diag_report_find(const struct diag_report *r, const char *name)
{
	for (int i = 0; i < r->n; i++)
		if (!strcmp(r->checks[i].name, name))
			return &r->checks[i];
	return NULL;
}

static int use_colour(FILE *f)
{
	const char *nc = getenv("NO_COLOR");
	return (!nc || !*nc) && isatty(fileno(f));
}

void diag_report_print(FILE *f, const struct diag_report *r, const char *title)
{
	int colour = use_colour(f);
	if (title)
		fprintf(f, "# %s\n", title);
	int kw = 0;
	for (int i = 0; i < r->nident; i++) {
		int l = (int)strlen(r->ident[i].key);
		kw = l > kw ? l : kw;
	}
	for (int i = 0; i < r->nident; i++)
		fprintf(f, "  %-*s  %s\n", kw, r->ident[i].key, r->ident[i].value);
	if (r->nident)
		fputc('\n', f);
	static const char *col[] = { "\033[32m", "\033[2m", "\033[33m", "\033[31m" };
	for (int i = 0; i < r->n; i++) {
		const struct diag_check *c = &r->checks[i];
		if (colour)
			fprintf(f, "%s%-4s\033[0m %s: %s\n", col[c->status], diag_status_name(c->status), c->name,
				c->message);
		else
			fprintf(f, "%-4s %s: %s\n", diag_status_name(c->status), c->name, c->message);
		if (c->fix[0] && c->status != DIAG_PASS)
			fprintf(f, "     fix: %s\n", c->fix);
	}
	fprintf(f, "\n%d checks: %d pass, %d warn, %d fail, %d skip -> %s\n", r->n, diag_report_count(r, DIAG_PASS),
		diag_report_count(r, DIAG_WARN), diag_report_count(r, DIAG_FAIL), diag_report_count(r, DIAG_SKIP),
		diag_report_worst(r) == DIAG_FAIL ? "FAIL" : "PASS");
}

int diag_report_print_json(FILE *f, const struct diag_report *r, const char *command)
{
	cJSON *doc = cJSON_CreateObject();
	if (!doc)
		return ascent_error(ASCENT_ENOMEM, "out of memory printing the diag report");
	cJSON_AddStringToObject(doc, "command", command ? command : "");
	cJSON_AddStringToObject(doc, "verdict", diag_report_worst(r) == DIAG_FAIL ? "FAIL" : "PASS");
	cJSON *ident = cJSON_AddObjectToObject(doc, "identity");
	for (int i = 0; i < r->nident; i++)
		cJSON_AddStringToObject(ident, r->ident[i].key, r->ident[i].value);
	cJSON *checks = cJSON_AddArrayToObject(doc, "checks");
	for (int i = 0; i < r->n; i++) {
		const struct diag_check *c = &r->checks[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", c->name);
		cJSON_AddStringToObject(o, "status", diag_status_name(c->status));
		cJSON_AddStringToObject(o, "message", c->message);
		cJSON_AddStringToObject(o, "fix", c->fix);
		cJSON_AddItemToArray(checks, o);
	}
	for (cJSON *it = r->data ? r->data->child : NULL; it; it = it->next) {
		if (cJSON_GetObjectItemCaseSensitive(doc, it->string))
			continue;
		cJSON_AddItemToObject(doc, it->string, cJSON_Duplicate(it, 1));
	}
	char *s = cJSON_Print(doc);
	cJSON_Delete(doc);
	if (!s)
		return ascent_error(ASCENT_ENOMEM, "out of memory printing the diag report");
	fputs(s, f);
	fputc('\n', f);
	free(s);
	if (fflush(f) != 0)
		return ascent_error(ASCENT_EIO, "cannot write the diag report");
	return 0;
}

int diag_report_verdict(const struct diag_report *r)
{
	int nf = diag_report_count(r, DIAG_FAIL);
	if (!nf)
		return 0;
	char names[512] = "";
	size_t off = 0;
	for (int i = 0; i < r->n && off < sizeof names - 1; i++) {
		if (r->checks[i].status != DIAG_FAIL)
			continue;
		int w = snprintf(names + off, sizeof names - off, "%s%s", off ? ", " : "", r->checks[i].name);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	return ascent_error(ASCENT_EFAIL, "%d of %d checks failed: %s", nf, r->n, names);
}

/* What each rank contributes to diag_report_gather. */
struct rank_summary {
	char host[64];
	int worst;
	char names[960];   /* "STATUS name; ..." of the non-PASS, non-SKIP checks */
};

int diag_report_gather(struct comm *c, struct diag_report *r)
{
	if (!c || comm_size(c, COMM_WORLD) <= 1)
		return 0;
	int n = comm_size(c, COMM_WORLD), me = comm_rank(c, COMM_WORLD);
	struct rank_summary mine;
	memset(&mine, 0, sizeof mine);
	if (gethostname(mine.host, sizeof mine.host - 1) != 0)
		snprintf(mine.host, sizeof mine.host, "?");
	mine.worst = (int)diag_report_worst(r);
	for (int i = 0; i < r->n; i++) {
		const struct diag_check *ck = &r->checks[i];
		if (ck->status == DIAG_PASS || ck->status == DIAG_SKIP)
			continue;
		size_t l = strlen(mine.names);
		snprintf(mine.names + l, sizeof mine.names - l, "%s%s %s", l ? "; " : "", diag_status_name(ck->status),
			 ck->name);
	}
	struct rank_summary *all = calloc((size_t)n, sizeof *all);
	if (!all)
		return ascent_error(ASCENT_ENOMEM, "out of memory gathering %d ranks' checks", n);
	int rc = comm_allgather(c, COMM_WORLD, &mine, all, sizeof mine, COMM_BYTE);
	if (rc) {
		free(all);
		return rc;
	}
	char msg[1024] = "";
	int worst = DIAG_PASS, bad = 0;
	for (int i = 0; i < n; i++) {
		if (i == me || !all[i].names[0])
			continue;
		all[i].host[sizeof all[i].host - 1] = 0;
		all[i].names[sizeof all[i].names - 1] = 0;
		worst = all[i].worst > worst ? all[i].worst : worst;
		bad++;
		size_t l = strlen(msg);
		snprintf(msg + l, sizeof msg - l, "%srank %d (%s): %s", l ? " | " : "", i, all[i].host, all[i].names);
	}
	free(all);
	if (!bad)
		return diag_check_add(r, DIAG_PASS, "ranks.checks", NULL, "the other %d rank(s) passed their own checks", n - 1);
	return diag_check_add(r, worst == DIAG_FAIL ? DIAG_FAIL : DIAG_WARN, "ranks.checks",
			      "run the command on the named host(s) to see the details",
			      "%d other rank(s) had findings: %s", bad, msg);
}
