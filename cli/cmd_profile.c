/* cli/cmd_profile.c — `ascent profile [--out DIR] [--sample HZ] [--stacks] -- CMD ARGS...`: run any
 * program with the preload library (interpose/interpose.h) so that its MPI calls and, when asked,
 * its CPU time are recorded; then, on rank 0, merge the ranks' files into DIR/trace.db.
 *
 * The process stays as CMD's parent: it forwards the signals a launcher or a user sends it,
 * waits, merges, and ends the way CMD ended — the same exit status, or the same signal. */
#include "cli/cli.h"
#include "interpose/interpose.h"
#include "profiler/prof.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef ASCENT_BUILD_DIR
#define ASCENT_BUILD_DIR "build"
#endif

static volatile sig_atomic_t child_pid;

/* Signals someone sent to us (kill, a launcher) go on to CMD. Those the terminal sends (Ctrl-C)
 * already reach CMD, which is in our process group: not sent twice. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (child_pid > 0 && si && si->si_code <= 0)
		kill((pid_t)child_pid, sig);
}

static const int FORWARDED[] = { SIGTERM, SIGINT, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM };
#define NFORWARDED (int)(sizeof FORWARDED / sizeof FORWARDED[0])

/* The preload library: beside an installed binary (PREFIX/bin/ascent → PREFIX/lib/ascent/), else in
 * the build folder this binary was built from. */
static int find_library(char *out, size_t n)
{
	char exe[PATH_MAX];
	ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (k > 0) {
		exe[k] = 0;
		char *slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			snprintf(out, n, "%s/../lib/ascent/%s", exe, INTERPOSE_LIB_NAME);
			if (access(out, R_OK) == 0)
				return 0;
		}
	}
	snprintf(out, n, "%s/%s", ASCENT_BUILD_DIR, INTERPOSE_LIB_NAME);
	if (access(out, R_OK) == 0)
		return 0;
	return ascent_error(ASCENT_EINPUT, "cannot find %s (looked in the installed lib/ascent/ beside this binary and "
			    "in %s): run 'make' or 'make install'", INTERPOSE_LIB_NAME, ASCENT_BUILD_DIR);
}

/* The default folder: one name on every rank of a job (the launcher's job id), else this pid. */
static void default_out(char *out, size_t n, const char *cmd)
{
	const char *base = strrchr(cmd, '/') ? strrchr(cmd, '/') + 1 : cmd;
	const char *job = getenv("SLURM_JOB_ID"), *step = getenv("SLURM_STEP_ID");
	const char *ns = getenv("PMIX_NAMESPACE"), *ompi = getenv("OMPI_MCA_ess_base_jobid");
	if (job && *job)
		snprintf(out, n, "ascent-profile-%s-%s.%s", base, job, step && *step ? step : "0");
	else if (ompi && *ompi)
		snprintf(out, n, "ascent-profile-%s-%s", base, ompi);
	else if (ns && *ns)
		snprintf(out, n, "ascent-profile-%s-%s", base, ns);
	else
		snprintf(out, n, "ascent-profile-%s-%ld", base, (long)getpid());
}

static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf)
		return ascent_error(ASCENT_EUSAGE, "--out path too long");
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0777) && errno != EEXIST)
				return ascent_error(ASCENT_EIO, "cannot create '%s': %s", buf, strerror(errno));
			*p = '/';
		}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return ascent_error(ASCENT_EIO, "cannot create '%s': %s", buf, strerror(errno));
	struct stat st;
	if (stat(buf, &st) || !S_ISDIR(st.st_mode))
		return ascent_error(ASCENT_EUSAGE, "--out '%s' is not a folder", path);
	return 0;
}

/* Environment for CMD: the library added to LD_PRELOAD after the user's own preloads (which were
 * chosen to come first: a sanitizer runtime, an allocator). */
static int set_child_env(const char *lib, const char *dir, int sample_hz, int stacks)
{
	const char *old = getenv("LD_PRELOAD");
	size_t n = strlen(lib) + (old ? strlen(old) : 0) + 2;
	char *pre = malloc(n), num[32];
	if (!pre)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	snprintf(pre, n, "%s%s%s", old && *old ? old : "", old && *old ? ":" : "", lib);
	snprintf(num, sizeof num, "%d", sample_hz);
	int bad = setenv("LD_PRELOAD", pre, 1) || setenv(INTERPOSE_ENV_DIR, dir, 1) ||
		  setenv(INTERPOSE_ENV_SAMPLE, num, 1) || setenv(INTERPOSE_ENV_STACKS, stacks ? "1" : "0", 1);
	free(pre);
	return bad ? ascent_error(ASCENT_EIO, "cannot set the environment: %s", strerror(errno)) : 0;
}

/* End this process the way the child ended. */
static void exit_like(int status)
{
	fflush(stdout);
	fflush(stderr);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit none = { 0, 0 };
		setrlimit(RLIMIT_CORE, &none);   /* the child dumped its core if it was going to */
		signal(sig, SIG_DFL);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
		raise(sig);
		exit(128 + sig);
	}
	exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

static void usage(FILE *f, const struct opt_spec *specs)
{
	opt_usage(f, "profile", "[--out DIR] [--sample HZ] [--stacks] -- CMD [ARGS...]", specs);
	fprintf(f, "\nRuns CMD with ascent's profiler preloaded: its MPI calls (collectives, point to point,\n"
		   "communicators, clock offsets) and, with --sample, its CPU time are recorded into\n"
		   "DIR/rank-NNNNN.db; rank 0 merges them into DIR/trace.db when CMD ends. Under a launcher,\n"
		   "put it after the launcher: mpirun -np 4 ascent profile --out prof -- ./app\n"
		   "Exits as CMD exits. ASCENT_PROFILE=0 runs CMD without the profiler.\n"
		   "Then: ascent report DIR/trace.db, ascent view, ascent advise, ascent export --format folded.\n");
}

int cmd_profile(int argc, char **argv)
{
	int dd = -1;
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			dd = i;
			break;
		}
	int help = 0, sample_hz = 0, stacks = 0;
	const char *out = NULL;
	struct opt_spec specs[] = {
		{ .name = "out", .short_name = 'o', .type = OPT_STR, .dest = &out, .metavar = "DIR",
		  .help = "folder of the profile (default ascent-profile-CMD-JOBID)" },
		{ .name = "sample", .type = OPT_INT, .dest = &sample_hz, .min = 0, .max = 10000, .metavar = "HZ",
		  .help = "sample CPU time HZ times a second per thread's CPU (SIGPROF + libunwind); 0 = off" },
		{ .name = "stacks", .type = OPT_FLAG, .dest = &stacks, .help = "a call stack at each recorded MPI call" },
		{ .name = "help", .short_name = 'h', .type = OPT_HELP, .dest = &help, .help = "show this help" },
		{ 0 },
	};
	char *pos[1];
	int np = 0;
	int rc = opt_parse("profile", specs, dd < 0 ? argc : dd, argv, pos, 1, &np);
	if (rc)
		return rc;
	if (help) {
		usage(stdout, specs);
		return 0;
	}
	if (dd < 0 || dd + 1 >= argc)
		return ascent_error(ASCENT_EUSAGE, "profile needs the command after '--': ascent profile [options] -- CMD "
				    "[ARGS...] (see 'ascent profile --help')");
	if (np)
		return ascent_error(ASCENT_EUSAGE, "unexpected '%s' before '--' (the command goes after '--')", pos[0]);
	char **cmd = argv + dd + 1;
	const char *sw = getenv(INTERPOSE_ENV_SWITCH);
	int on = !(sw && !strcmp(sw, "0"));
	int rank = 0, size = 1;
	interpose_launcher_rank(&rank, &size);
	char dir[PATH_MAX] = "", lib[PATH_MAX], dflt[256];
	if (on) {
		if ((rc = find_library(lib, sizeof lib)) != 0)
			return rc;
		if (!out) {
			default_out(dflt, sizeof dflt, cmd[0]);
			out = dflt;
		}
		if ((rc = mkdirs(out)) != 0)
			return rc;
		if (!realpath(out, dir))
			return ascent_error(ASCENT_EIO, "cannot resolve '%s': %s", out, strerror(errno));
		char merged[PATH_MAX + 16];
		snprintf(merged, sizeof merged, "%s/trace.db", dir);
		if (access(merged, F_OK) == 0)
			return ascent_error(ASCENT_EUSAGE, "'%s' already holds a profile (trace.db): choose another --out "
					    "or move it away", out);
		if ((rc = set_child_env(lib, dir, sample_hz, stacks)) != 0)
			return rc;
	}
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid < 0)
		return ascent_error(ASCENT_EIO, "cannot start '%s': fork: %s", cmd[0], strerror(errno));
	if (pid == 0) {
		char me[32];
		snprintf(me, sizeof me, "%ld", (long)getpid());
		if (on)
			setenv(INTERPOSE_ENV_PID, me, 1);
		execvp(cmd[0], cmd);
		int e = errno;
		fprintf(stderr, "ascent profile: cannot run '%s': %s\n", cmd[0], strerror(e));
		_exit(e == ENOENT ? 127 : 126);
	}
	child_pid = pid;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < NFORWARDED; i++)
		sigaction(FORWARDED[i], &sa, NULL);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR) {
			status = 1 << 8;
			break;
		}
	child_pid = 0;
	/* a program killed by a signal cannot say so in its profile: this process does */
	if (on && prof_record_end(dir, rank, status) != 0)
		fprintf(stderr, "ascent profile: %s\n", ascent_errmsg());
	/* a launcher stops the whole job when one rank ends badly: another rank that does holds back a
	 * few seconds so that rank 0 can finish merging first */
	if (on && rank != 0 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
		char merged[PATH_MAX + 16];
		snprintf(merged, sizeof merged, "%s/trace.db", dir);
		for (int i = 0; i < 100 && access(merged, F_OK) != 0; i++)
			usleep(50000);
	}
	/* rank 0 merges: after an MPI program's MPI_Finalize every rank's file is complete (the library
	 * holds a barrier there); after a crash whatever the ranks wrote is merged */
	if (on && rank == 0) {
		int merr = prof_merge(dir, NULL, 1);
		int launched = !(WIFEXITED(status) && (WEXITSTATUS(status) == 126 || WEXITSTATUS(status) == 127));
		if (merr && launched)
			fprintf(stderr, "ascent profile: merging %s failed: %s (the rank files are kept; 'ascent merge %s' "
				"retries)\n", out, ascent_errmsg(), out);
		else if (!merr)
			fprintf(stderr, "ascent profile: %s/trace.db (ascent report %s/trace.db)\n", out, out);
	}
	exit_like(status);
	return 0;
}
