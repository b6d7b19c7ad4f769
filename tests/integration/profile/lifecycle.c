/* tests/integration/profile/lifecycle.c — a program that ends or goes on in the ways a profiler must
 * not change (profile_exec.sh). Each mode burns CPU in a function of its own for the sampler, prints
 * a line and ends as named:
 *   exec       before_exec(), then execv of itself as "after": after_exec(), exit 3
 *   execfail   before_exec(), an execv that fails (ENOENT), then after_exec(), exit 6
 *   fork       the child burns in child_work() and exits 4; the parent waits, exits 5 if it did
 *   abort      abort() (SIGABRT)
 *   segv       a write through a null pointer (SIGSEGV) */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

volatile double sink;
volatile int *volatile nowhere;

#define BURN(name)                                                         \
	__attribute__((noinline)) static void name(long n)                 \
	{                                                                  \
		double a = 0;                                              \
		for (long i = 0; i < n; i++)                               \
			a += (double)i * 1e-9;                             \
		sink = a;                                                  \
	}
BURN(before_exec)
BURN(after_exec)
BURN(child_work)
BURN(main_work)

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 1000;
	char num[32];
	snprintf(num, sizeof num, "%ld", n);
	if (!strcmp(mode, "exec")) {
		before_exec(n);
		printf("before exec\n");
		fflush(stdout);
		char *args[] = { argv[0], (char *)"after", num, NULL };
		execv("/proc/self/exe", args);
		return 99;
	}
	if (!strcmp(mode, "after")) {
		after_exec(n);
		printf("after exec\n");
		return 3;
	}
	if (!strcmp(mode, "execfail")) {
		before_exec(n);
		char *args[] = { (char *)"none", NULL };
		int rc = execv("/nonexistent/program", args);
		printf("exec returned %d, %s\n", rc, errno == ENOENT ? "ENOENT" : strerror(errno));
		after_exec(n);
		return 6;
	}
	if (!strcmp(mode, "fork")) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			child_work(n);
			printf("child\n");
			return 4;
		}
		main_work(n);
		int st = 0;
		waitpid(pid, &st, 0);
		printf("parent, child exited %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return WIFEXITED(st) && WEXITSTATUS(st) == 4 ? 5 : 1;
	}
	main_work(n);
	printf("%s\n", mode);
	fflush(stdout);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "segv"))
		*nowhere = 1;
	return 0;
}
