/* common/opts.c — table-driven command-line parsing with range-checked numbers and messages
 * that name the option and the accepted values. */
#include "common/common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int opt_parse_int(const char *what, const char *s, long long min, long long max, long long *out)
{
	char *end;
	errno = 0;
	if (!s || !*s)
		return ascent_error(ASCENT_EUSAGE, "%s expects an integer, got an empty value", what);
	long long v = strtoll(s, &end, 10);
	if (errno || *end)
		return ascent_error(ASCENT_EUSAGE, "%s expects an integer in [%lld, %lld], got '%s'", what, min, max, s);
	if (v < min || v > max)
		return ascent_error(ASCENT_EUSAGE, "%s must be in [%lld, %lld], got %lld", what, min, max, v);
	*out = v;
	return 0;
}

int opt_parse_double(const char *what, const char *s, double min, double max, double *out)
{
	char *end;
	errno = 0;
	if (!s || !*s)
		return ascent_error(ASCENT_EUSAGE, "%s expects a number, got an empty value", what);
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return ascent_error(ASCENT_EUSAGE, "%s expects a number in [%g, %g], got '%s'", what, min, max, s);
	if (v < min || v > max)
		return ascent_error(ASCENT_EUSAGE, "%s must be in [%g, %g], got %g", what, min, max, v);
	*out = v;
	return 0;
}

static int choice_ok(const char *choices, const char *v)
{
	size_t n = strlen(v);
	const char *p = choices;
	while (*p) {
		const char *bar = strchr(p, '|');
		size_t len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, v, n))
			return 1;
		if (!bar)
			break;
		p = bar + 1;
	}
	return 0;
}

static const struct opt_spec *find_long(const struct opt_spec *s, const char *name, size_t len)
{
	for (; s->name || s->short_name; s++)
		if (s->name && strlen(s->name) == len && !strncmp(s->name, name, len))
			return s;
	return NULL;
}

static const struct opt_spec *find_short(const struct opt_spec *s, char c)
{
	for (; s->name || s->short_name; s++)
		if (s->short_name == c)
			return s;
	return NULL;
}

static int set_value(const char *cmd, const struct opt_spec *s, const char *val)
{
	char what[128];
	snprintf(what, sizeof what, "option '--%s' of 'ascent %s'", s->name ? s->name : "?", cmd);
	int has_range = !(s->min == 0 && s->max == 0);
	switch (s->type) {
	case OPT_INT: {
		long long v;
		long long lo = has_range ? (long long)s->min : -2147483647LL;
		long long hi = has_range ? (long long)s->max : 2147483647LL;
		int rc = opt_parse_int(what, val, lo, hi, &v);
		if (rc)
			return rc;
		*(int *)s->dest = (int)v;
		return 0;
	}
	case OPT_I64: {
		long long v;
		long long lo = has_range ? (long long)s->min : INT64_MIN;
		long long hi = has_range ? (long long)s->max : INT64_MAX;
		int rc = opt_parse_int(what, val, lo, hi, &v);
		if (rc)
			return rc;
		*(int64_t *)s->dest = v;
		return 0;
	}
	case OPT_FLOAT: {
		double v;
		double lo = has_range ? s->min : -HUGE_VAL, hi = has_range ? s->max : HUGE_VAL;
		int rc = opt_parse_double(what, val, lo, hi, &v);
		if (rc)
			return rc;
		if ((s->min_open && v == lo) || (s->max_open && v == hi))
			return ascent_error(ASCENT_EUSAGE, "%s must be in %c%g, %g%c, got %g", what,
					    s->min_open ? '(' : '[', lo, hi, s->max_open ? ')' : ']', v);
		*(double *)s->dest = v;
		return 0;
	}
	case OPT_STR:
		if (s->choices && !choice_ok(s->choices, val))
			return ascent_error(ASCENT_EUSAGE, "%s expects one of %s, got '%s'", what, s->choices, val);
		*(const char **)s->dest = val;
		return 0;
	default:
		return ascent_error(ASCENT_EINTERNAL, "bad option table for '%s'", s->name);
	}
}

int opt_parse(const char *cmd, const struct opt_spec *specs, int argc, char **argv, char **pos,
	      int max_pos, int *npos)
{
	int np = 0;
	int only_pos = 0;
	for (int i = 0; i < argc; i++) {
		char *a = argv[i];
		if (only_pos || a[0] != '-' || a[1] == 0) {
			if (np >= max_pos)
				return ascent_error(ASCENT_EUSAGE, "unexpected argument '%s' for 'ascent %s' (see 'ascent %s --help')",
						    a, cmd, cmd);
			pos[np++] = a;
			continue;
		}
		if (!strcmp(a, "--")) {
			only_pos = 1;
			continue;
		}
		const struct opt_spec *s;
		const char *val = NULL;
		if (a[1] == '-') {
			const char *name = a + 2;
			const char *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			s = find_long(specs, name, len);
			if (!s)
				return ascent_error(ASCENT_EUSAGE, "unknown option '--%.*s' for 'ascent %s' (see 'ascent %s --help')",
						    (int)len, name, cmd, cmd);
			if (eq)
				val = eq + 1;
		} else {
			if (a[2] != 0 && !find_short(specs, a[1]))
				return ascent_error(ASCENT_EUSAGE, "unknown option '%s' for 'ascent %s' (see 'ascent %s --help')", a,
						    cmd, cmd);
			s = find_short(specs, a[1]);
			if (!s)
				return ascent_error(ASCENT_EUSAGE, "unknown option '%s' for 'ascent %s' (see 'ascent %s --help')", a,
						    cmd, cmd);
			if (a[2])
				val = a + 2;
		}
		if (s->seen)
			*s->seen = 1;
		if (s->type == OPT_FLAG || s->type == OPT_HELP) {
			if (val)
				return ascent_error(ASCENT_EUSAGE, "option '--%s' of 'ascent %s' takes no value", s->name, cmd);
			*(int *)s->dest = 1;
			continue;
		}
		if (!val) {
			if (i + 1 >= argc)
				return ascent_error(ASCENT_EUSAGE, "option '--%s' of 'ascent %s' needs a value%s%s", s->name, cmd,
						    s->choices ? ": one of " : "", s->choices ? s->choices : "");
			val = argv[++i];
		}
		int rc = set_value(cmd, s, val);
		if (rc)
			return rc;
	}
	*npos = np;
	return 0;
}

void opt_usage(FILE *f, const char *cmd, const char *synopsis, const struct opt_spec *specs)
{
	fprintf(f, "usage: ascent %s %s\n\noptions:\n", cmd, synopsis ? synopsis : "[options]");
	for (const struct opt_spec *s = specs; s->name || s->short_name; s++) {
		char left[96];
		const char *mv = s->metavar;
		if (!mv)
			mv = s->type == OPT_STR ? (s->choices ? s->choices : "STR")
			     : s->type == OPT_FLOAT ? "X" : "N";
		if (s->type == OPT_FLAG || s->type == OPT_HELP)
			mv = NULL;
		if (s->short_name && s->name)
			snprintf(left, sizeof left, "-%c, --%s%s%s", s->short_name, s->name, mv ? " " : "", mv ? mv : "");
		else if (s->name)
			snprintf(left, sizeof left, "    --%s%s%s", s->name, mv ? " " : "", mv ? mv : "");
		else
			snprintf(left, sizeof left, "-%c%s%s", s->short_name, mv ? " " : "", mv ? mv : "");
		fprintf(f, "  %-30s %s\n", left, s->help ? s->help : "");
	}
}
