/* interpose/exec.c — the exec family around the profiled process: before the program image is
 * replaced, the profiler's sampling timer is deleted and its pending SIGPROF taken, and what was
 * recorded is committed (prof_exec_prepare); the new image, which loads this library again, goes on
 * writing the same rank file (prof_options.resume). When exec returns (it failed), sampling goes on.
 * Processes other than the profiled one (a forked or vforked child) pass straight through. */
#include "interpose/impl.h"

#include <alloca.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <string.h>
#include <unistd.h>

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

static execve_fn real_execve, real_execvpe;
static fexecve_fn real_fexecve;

/* dlsym returns an object pointer; ISO C has no cast to a function pointer, memcpy is exact. */
static void resolve(const char *name, void *fnptr, size_t size)
{
	void *p = dlsym(RTLD_NEXT, name);
	memcpy(fnptr, &p, size);
}

/* Looked up at load, not in a wrapper: a forked child of a threaded program may call exec while
 * another thread held the dynamic linker's lock at the fork. */
__attribute__((constructor)) static void ip_exec_resolve(void)
{
	resolve("execve", &real_execve, sizeof real_execve);
	resolve("execvpe", &real_execvpe, sizeof real_execvpe);
	resolve("fexecve", &real_fexecve, sizeof real_fexecve);
}

/* 1 when this is the profiled process and its profile was readied for the exec. */
static int before_exec(void)
{
	if (!real_execve)
		ip_exec_resolve();
	if (ip.pid != (int)getpid() || !prof_initialized())
		return 0;
	prof_exec_prepare();
	return 1;
}

/* exec returned: it failed; the profile goes on, errno kept for the caller. */
static int after_failed_exec(int prepared)
{
	int e = errno;
	if (prepared)
		prof_exec_failed();
	errno = e;
	return -1;
}

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[], char *const envp[])
{
	int p = before_exec();
	if (real_execve)
		real_execve(path, argv, envp);
	else
		errno = ENOSYS;
	return after_failed_exec(p);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[], char *const envp[])
{
	int p = before_exec();
	if (real_execvpe)
		real_execvpe(file, argv, envp);
	else
		errno = ENOSYS;
	return after_failed_exec(p);
}

/* execv and execvp are execve and execvpe with the current environment, as the C library defines
 * them: one wrapper each. */
__attribute__((visibility("default"))) int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

__attribute__((visibility("default"))) int fexecve(int fd, char *const argv[], char *const envp[])
{
	int p = before_exec();
	if (real_fexecve)
		real_fexecve(fd, argv, envp);
	else
		errno = ENOSYS;
	return after_failed_exec(p);
}

/* execl, execlp, execle: their arguments into an array on the stack (as the C library does: a fork
 * child of a threaded program may not call malloc), then the array forms above. */
#define COLLECT_ARGS(first, ap, argv)                                              \
	do {                                                                                   \
		va_list cp;                                                                    \
		va_copy(cp, ap);                                                               \
		size_t n_ = 1;                                                                 \
		while (va_arg(cp, const char *))                                               \
			n_++;                                                                  \
		va_end(cp);                                                                    \
		argv = alloca((n_ + 1) * sizeof *argv);                                        \
		argv[0] = (char *)(first);                                                     \
		for (size_t i_ = 1; i_ <= n_; i_++)                                            \
			argv[i_] = va_arg(ap, char *);                                         \
	} while (0)

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...)
{
	char **argv;
	char *const *envp = NULL;
	va_list ap;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv);
	envp = va_arg(ap, char *const *);   /* after the argument list's NULL */
	va_end(ap);
	return execve(path, argv, envp);
}
