/* common/log.c — the process-wide logger: one file per rank, optional echo to stderr. */
#include "common/common.h"

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static struct {
	pthread_mutex_t lock;
	FILE *f;
	int rank;
	int echo;
	enum log_level level;
	char path[1024];
} L = { PTHREAD_MUTEX_INITIALIZER, NULL, 0, 1, LOG_INFO, "" };

int log_open(const char *path, int rank, int echo)
{
	pthread_mutex_lock(&L.lock);
	if (L.f) {
		fclose(L.f);
		L.f = NULL;
	}
	L.path[0] = 0;
	L.rank = rank;
	L.echo = echo;
	pthread_mutex_unlock(&L.lock);
	if (!path)
		return 0;
	char *dup = strdup(path);
	if (!dup)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	int rc = fs_mkdir_p(dirname(dup));
	free(dup);
	if (rc)
		return rc;
	FILE *f = fopen(path, "a");
	if (!f)
		return ascent_error(ASCENT_EIO, "cannot open log '%s': %s", path, strerror(errno));
	setvbuf(f, NULL, _IOLBF, 0);
	pthread_mutex_lock(&L.lock);
	L.f = f;
	snprintf(L.path, sizeof L.path, "%s", path);
	pthread_mutex_unlock(&L.lock);
	return 0;
}

void log_close(void)
{
	pthread_mutex_lock(&L.lock);
	if (L.f && fclose(L.f))
		fprintf(stderr, "warning: rank %d cannot write its log '%s': %s\n", L.rank, L.path, strerror(errno));
	L.f = NULL;
	L.path[0] = 0;
	pthread_mutex_unlock(&L.lock);
}

void log_set_level(enum log_level lvl)
{
	L.level = lvl;
}

void log_set_echo(int echo)
{
	L.echo = echo;
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	static const char *names[] = { "debug", "info", "warning", "error" };
	if (lvl < L.level)
		return;
	char msg[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	char ts[32];
	clock_format_utc(clock_utc_ns(), 0, ts, sizeof ts);
	pthread_mutex_lock(&L.lock);
	int lost = 0;
	if (L.f) {
		fprintf(L.f, "%s rank %d %s: %s\n", ts, L.rank, names[lvl], msg);
		if (fflush(L.f) || ferror(L.f)) {
			/* a full disk: say so once, and send this line and every later one to stderr */
			int e = errno;
			fclose(L.f);
			L.f = NULL;
			fprintf(stderr, "warning: rank %d cannot write its log '%s': %s; this and later messages go to "
					"stderr only\n", L.rank, L.path, strerror(e));
			lost = 1;
		}
	}
	if (L.echo || lost || (!L.f && (L.path[0] || lvl >= LOG_WARN))) {
		if (lvl == LOG_INFO)
			fprintf(stderr, "%s\n", msg);
		else
			fprintf(stderr, "%s: %s\n", names[lvl], msg);
	}
	pthread_mutex_unlock(&L.lock);
}

void clock_format_utc(int64_t utc_ns, int compact, char *buf, size_t n)
{
	time_t s = (time_t)(utc_ns / 1000000000LL);
	struct tm tm;
	gmtime_r(&s, &tm);
	strftime(buf, n, compact ? "%Y%m%d-%H%M%S" : "%Y-%m-%dT%H:%M:%SZ", &tm);
}
