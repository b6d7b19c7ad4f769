/* common/error.c — per-thread error messages and the code → exit status map. */
#include "common/common.h"

#include <string.h>

static _Thread_local char errbuf[2048];

int ascent_error(int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(errbuf, sizeof errbuf, fmt, ap);
	va_end(ap);
	return code;
}

int ascent_error_ctx(int code, const char *fmt, ...)
{
	char old[sizeof errbuf];
	char pre[512];
	va_list ap;
	memcpy(old, errbuf, sizeof old);
	va_start(ap, fmt);
	vsnprintf(pre, sizeof pre, fmt, ap);
	va_end(ap);
	/* a message longer than the buffer is cut, which is fine for a message */
	size_t n = strlen(pre);
	if (n > sizeof errbuf - 3)
		n = sizeof errbuf - 3;
	memcpy(errbuf, pre, n);
	memcpy(errbuf + n, ": ", 2);
	size_t rest = sizeof errbuf - n - 3;
	size_t m = strnlen(old, rest);
	memcpy(errbuf + n + 2, old, m);
	errbuf[n + 2 + m] = 0;
	return code;
}

const char *ascent_errmsg(void)
{
	return errbuf;
}

const char *ascent_strerror(int code)
{
	switch (code) {
	case ASCENT_OK: return "ok";
	case ASCENT_EUSAGE: return "bad usage";
	case ASCENT_EINPUT: return "bad input";
	case ASCENT_EIO: return "i/o error";
	case ASCENT_ENOMEM: return "out of memory";
	case ASCENT_EFAIL: return "failed";
	case ASCENT_EDB: return "database error";
	case ASCENT_EMPI: return "MPI error";
	case ASCENT_ETIMEOUT: return "timed out";
	case ASCENT_EINTERNAL: return "internal error";
	default: return "unknown error";
	}
}

int ascent_exit_code(int code)
{
	switch (code) {
	case ASCENT_OK: return 0;
	case ASCENT_EUSAGE:
	case ASCENT_EINPUT: return 2;
	case ASCENT_EINTERNAL: return 3;
	default: return 1;
	}
}
