/* common/fs.c — small filesystem helpers and atomic file writes (tmp, fsync, rename, fsync dir). */
#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int fs_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

int fs_is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int fs_mkdir_p(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);
	if (n == 0 || n >= sizeof buf)
		return ascent_error(ASCENT_EINPUT, "bad directory path '%s'", path);
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) && errno != EEXIST)
			return ascent_error(ASCENT_EIO, "cannot create directory '%s': %s", buf, strerror(errno));
		*p = '/';
	}
	if (mkdir(buf, 0777) && errno != EEXIST)
		return ascent_error(ASCENT_EIO, "cannot create directory '%s': %s", buf, strerror(errno));
	if (!fs_is_dir(buf))
		return ascent_error(ASCENT_EIO, "'%s' exists and is not a directory", buf);
	return 0;
}

int fs_read_all(const char *path, char **data, size_t *len)
{
	*data = NULL;
	*len = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return ascent_error(errno == ENOENT ? ASCENT_EINPUT : ASCENT_EIO, "cannot open '%s': %s", path,
				    strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		fclose(f);
		return ascent_error(ASCENT_EINPUT, "cannot read '%s': it is a folder; give the file inside it", path);
	}
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	if (!buf) {
		fclose(f);
		return ascent_error(ASCENT_ENOMEM, "out of memory reading '%s'", path);
	}
	for (;;) {
		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				fclose(f);
				return ascent_error(ASCENT_ENOMEM, "out of memory reading '%s'", path);
			}
			buf = nb;
			cap *= 2;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	int err = ferror(f) ? errno : 0;
	fclose(f);
	if (err) {
		free(buf);
		return ascent_error(ASCENT_EIO, "cannot read '%s': %s", path, strerror(err));
	}
	buf[n] = 0;
	*data = buf;
	*len = n;
	return 0;
}

int fs_open_read(const char *path, int *fd, struct stat *st)
{
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd >= 0 && fstat(*fd, st) == 0)
		return 0;
	int e = errno;
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
	return ascent_error(ASCENT_EINPUT, "cannot open '%s': %s", path, strerror(e));
}

int fs_rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st))
		return errno == ENOENT ? 0 : ascent_error(ASCENT_EIO, "cannot stat '%s': %s", path, strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (!d)
			return ascent_error(ASCENT_EIO, "cannot open directory '%s': %s", path, strerror(errno));
		struct dirent *e;
		int rc = 0;
		while ((e = readdir(d)) && !rc) {
			if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
				continue;
			char sub[4096];
			snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
			rc = fs_rm_rf(sub);
		}
		closedir(d);
		if (rc)
			return rc;
		if (rmdir(path))
			return ascent_error(ASCENT_EIO, "cannot remove '%s': %s", path, strerror(errno));
		return 0;
	}
	if (unlink(path))
		return ascent_error(ASCENT_EIO, "cannot remove '%s': %s", path, strerror(errno));
	return 0;
}

int atomic_open(struct atomic_file *af, const char *path)
{
	memset(af, 0, sizeof *af);
	int rc = fs_tmp_open(&af->t, path);
	if (rc)
		return rc;
	int fd = dup(af->t.fd);
	if (fd < 0 || !(af->f = fdopen(fd, "wb"))) {
		int e = errno;
		if (fd >= 0)
			close(fd);
		atomic_abort(af);
		return ascent_error(ASCENT_EIO, "cannot open '%s': %s", path, strerror(e));
	}
	return 0;
}

int fs_copy_to_fd(const char *src, int dst)
{
	int in;
	struct stat st;
	int rc = fs_open_read(src, &in, &st);
	if (rc)
		return rc;
	char buf[1 << 16];
	int plain = 0;
	for (;;) {
		ssize_t n = plain ? -1 : copy_file_range(in, NULL, dst, NULL, 1 << 30, 0);
		if (n < 0 && !plain && (errno == EXDEV || errno == ENOSYS || errno == EINVAL || errno == EOPNOTSUPP)) {
			plain = 1;   /* another file system, or none that copies: read and write */
			continue;
		}
		if (plain) {
			n = read(in, buf, sizeof buf);
			for (ssize_t w = 0, m; n > 0 && w < n; w += m)
				if ((m = write(dst, buf + w, (size_t)(n - w))) < 0) {
					n = -1;
					break;
				}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			rc = ascent_error(ASCENT_EIO, "cannot copy '%s': %s", src, strerror(errno));
			break;
		}
		if (n == 0)
			break;
	}
	if (!rc && fsync(dst))
		rc = ascent_error(ASCENT_EIO, "cannot copy '%s': %s", src, strerror(errno));
	close(in);
	return rc;
}

int fs_sync(const char *path)
{
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return ascent_error(ASCENT_EIO, "cannot open '%s' to sync it: %s", path, strerror(errno));
	int rc = 0;
	/* a folder on a filesystem that cannot sync folders says EINVAL: nothing more to do there */
	if (fsync(fd) && errno != EINVAL)
		rc = ascent_error(ASCENT_EIO, "cannot sync '%s' to disk: %s", path, strerror(errno));
	close(fd);
	return rc;
}

/* rename, then sync the folder (best effort); the file is synced already. */
static int rename_synced(const char *tmp, const char *path)
{
	int rc = 0;
	if (rename(tmp, path))
		rc = ascent_error(ASCENT_EIO, "cannot rename '%s' to '%s': %s", tmp, path, strerror(errno));
	/* the rename is done: syncing the folder is best effort (as before), a failure there must not
	 * report the file as unwritten */
	char *dup = rc ? NULL : strdup(path);
	if (dup) {
		int fd = open(dirname(dup), O_RDONLY | O_DIRECTORY);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	}
	free(dup);
	return rc;
}

int fs_rename_durable(const char *tmp, const char *path)
{
	int rc = fs_sync(tmp);
	return rc ? rc : rename_synced(tmp, path);
}

int atomic_commit(struct atomic_file *af)
{
	int rc = 0;
	if (!af->f)
		return ascent_error(ASCENT_EINTERNAL, "atomic_commit on a file that is not open");
	if (fflush(af->f) || ferror(af->f))
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", af->t.path, strerror(errno));
	if (fclose(af->f) && !rc)
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", af->t.path, strerror(errno));
	af->f = NULL;
	if (!rc)
		rc = fs_tmp_commit(&af->t);   /* fsync, in place, folder synced */
	atomic_abort(af);
	return rc;
}

void atomic_abort(struct atomic_file *af)
{
	if (!af)
		return;
	if (af->f)
		fclose(af->f);
	fs_tmp_abort(&af->t);
	memset(af, 0, sizeof *af);
}

int atomic_write_file(const char *path, const void *data, size_t len)
{
	struct atomic_file af;
	int rc = atomic_open(&af, path);
	if (rc)
		return rc;
	if (len && fwrite(data, 1, len, af.f) != len) {
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", path, strerror(errno));
		atomic_abort(&af);
		return rc;
	}
	return atomic_commit(&af);
}

/* ---------------------------------------------------------------------------------------- */
/* temporaries that cannot outlive their process (fs_tmp) */

void fs_tmp_name(const char *path, char *out, size_t n)
{
	static unsigned seq;
	snprintf(out, n, "%s.tmp-%ld-%u", path, (long)getpid(), __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
}

/* The folder of `path` ("." for a bare name) into dir, its last component into *base. */
static void split_path(const char *path, char *dir, size_t n, const char **base)
{
	const char *slash = strrchr(path, '/');
	*base = slash ? slash + 1 : path;
	if (!slash)
		snprintf(dir, n, ".");
	else if (slash == path)
		snprintf(dir, n, "/");
	else
		snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Remove "BASE.tmp-PID..." beside path whose PID no longer runs: what an interrupted process left
 * where no unnamed temporary could be made (or in the instant between linking one in and renaming
 * it), and what earlier versions left. */
static void sweep_stale(const char *path)
{
	char dir[4096];
	const char *base;
	split_path(path, dir, sizeof dir, &base);
	size_t bl = strlen(base);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		const char *s = e->d_name;
		if (strncmp(s, base, bl) || strncmp(s + bl, ".tmp-", 5))
			continue;
		char *end;
		long pid = strtol(s + bl + 5, &end, 10);
		if (end == s + bl + 5 || (*end && *end != '-') || pid <= 0 || pid == (long)getpid() ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		char p[8200];
		snprintf(p, sizeof p, "%s/%s", dir, s);
		if (unlink(p) == 0)
			log_warn("removed '%s', left by process %ld that ended before finishing it", p, pid);
	}
	closedir(d);
}

int fs_tmp_open(struct fs_tmp *t, const char *path)
{
	memset(t, 0, sizeof *t);
	t->fd = -1;
	sweep_stale(path);
	char dir[4096];
	const char *base;
	split_path(path, dir, sizeof dir, &base);
	if (!(t->path = strdup(path)))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	/* unnamed, and linkable later (no O_EXCL); "/proc/self/fd/N" opens it again by name */
	t->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0666);
	if (t->fd >= 0) {
		snprintf(t->name, sizeof t->name, "/proc/self/fd/%d", t->fd);
		if (access(t->name, F_OK) == 0)
			return 0;
		close(t->fd);
	}
	t->named = 1;
	fs_tmp_name(path, t->name, sizeof t->name);
	t->fd = open(t->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (t->fd < 0) {
		int e = errno;
		free(t->path);
		t->path = NULL;
		return ascent_error(ASCENT_EIO, "cannot create a temporary file next to '%s': %s", path, strerror(e));
	}
	return 0;
}

int fs_tmp_commit(struct fs_tmp *t)
{
	if (!t->path)
		return ascent_error(ASCENT_EINTERNAL, "fs_tmp_commit on a temporary that is not open");
	int rc = 0;
	if (fsync(t->fd))
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", t->path, strerror(errno));
	if (!rc && !t->named) {
		/* a name first (rename replaces the target in one step, linkat would not) */
		char named[4200];
		fs_tmp_name(t->path, named, sizeof named);
		if (linkat(AT_FDCWD, t->name, AT_FDCWD, named, AT_SYMLINK_FOLLOW))
			rc = ascent_error(ASCENT_EIO, "cannot write '%s': linking the finished file in: %s", t->path,
					  strerror(errno));
		else {
			snprintf(t->name, sizeof t->name, "%s", named);
			t->named = 1;
		}
	}
	/* synced above: nothing slow between linking the name in and the rename (a process killed in
	 * that instant leaves the name, which the next fs_tmp_open of the path removes) */
	if (!rc)
		rc = rename_synced(t->name, t->path);
	if (!rc)
		t->named = 0;      /* nothing left to remove */
	fs_tmp_abort(t);
	return rc;
}

void fs_tmp_abort(struct fs_tmp *t)
{
	if (!t || !t->path)
		return;
	if (t->named)
		unlink(t->name);
	if (t->fd >= 0)
		close(t->fd);
	free(t->path);
	memset(t, 0, sizeof *t);
	t->fd = -1;
}
