/* profiler/schedule.c — the --profile-steps schedule, PyTorch's rule (docs/background.md, "Profiler schedule"). */
#include "profiler/prof.h"

#include <stdlib.h>
#include <string.h>

int prof_schedule_parse(const char *s, struct prof_schedule *out)
{
	struct prof_schedule r = { 0, 0, 0, 0, 0 };
	int have_active = 0;
	if (!s || !*s)
		return ascent_error(ASCENT_EUSAGE, "empty --profile-steps (expected e.g. 'wait=1,warmup=1,active=3')");
	char buf[256];
	if (strlen(s) >= sizeof buf)
		return ascent_error(ASCENT_EUSAGE, "--profile-steps is too long");
	strcpy(buf, s);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		if (!eq)
			return ascent_error(ASCENT_EUSAGE, "bad --profile-steps item '%s': expected key=N with key one of "
					    "skip, wait, warmup, active, repeat", tok);
		*eq = 0;
		long long v;
		char what[64];
		snprintf(what, sizeof what, "--profile-steps %s", tok);
		int rc = opt_parse_int(what, eq + 1, 0, 1LL << 40, &v);
		if (rc)
			return rc;
		if (!strcmp(tok, "skip"))
			r.skip = v;
		else if (!strcmp(tok, "wait"))
			r.wait = v;
		else if (!strcmp(tok, "warmup"))
			r.warmup = v;
		else if (!strcmp(tok, "active"))
			r.active = v, have_active = 1;
		else if (!strcmp(tok, "repeat"))
			r.repeat = v;
		else
			return ascent_error(ASCENT_EUSAGE, "unknown --profile-steps key '%s' (expected skip, wait, warmup, "
					    "active, repeat)", tok);
	}
	if (!have_active || r.active <= 0)
		return ascent_error(ASCENT_EUSAGE, "--profile-steps needs active=N with N > 0 (got '%s')", s);
	*out = r;
	return 0;
}

enum prof_action prof_schedule_action(const struct prof_schedule *s, int64_t step)
{
	if (step < s->skip)
		return PROF_NONE;
	int64_t x = step - s->skip;
	int64_t cycle = s->wait + s->warmup + s->active;
	if (cycle <= 0)
		return PROF_NONE;
	if (s->repeat > 0 && x >= s->repeat * cycle)
		return PROF_NONE;
	int64_t r = x % cycle;
	if (r < s->wait)
		return PROF_NONE;
	if (r < s->wait + s->warmup)
		return PROF_WARMUP;
	return PROF_RECORD;
}
