/* common/output.c — the "never write over an input" rule shared by every command that writes
 * (fs_output_check): an output that is one of the command's inputs is refused; an output that
 * holds a checkpoint, a profile or a token shard the command did not make is refused unless
 * --force. What a path holds is recognised by content (file magic), never by its name. */
#include "common/common.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SHARD_MAGIC 20240520u     /* llm.c token shards: the first int32, little-endian */
#define SCAN_DEPTH 3              /* RUN/ckpt/step-N/model.safetensors */
#define SCAN_ENTRIES 4096         /* entries looked at in one folder tree */

/* What one regular file is, from its first bytes. */
static unsigned file_kind(const char *path, off_t size)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	unsigned char b[16];
	size_t n = fread(b, 1, sizeof b, f);
	fclose(f);
	if (n == 16 && !memcmp(b, "SQLite format 3", 16))
		return FS_HOLDS_PROFILE;
	if (n >= 4 && ((uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24) == SHARD_MAGIC)
		return FS_HOLDS_SHARD;
	if (n >= 9 && b[8] == '{') {
		uint64_t hl = 0;
		for (int i = 7; i >= 0; i--)
			hl = hl << 8 | b[i];
		if (hl >= 2 && hl <= (uint64_t)size - 8)
			return FS_HOLDS_CHECKPOINT;
	}
	return 0;
}

struct scan {
	unsigned want;            /* kinds looked for: the scan stops at the first one found */
	unsigned holds;
	char first[4096];         /* that file, named in messages */
	int entries;
};

static void scan_path(struct scan *s, const char *path, int depth)
{
	struct stat st;
	if ((s->holds & s->want) || lstat(path, &st) || s->entries++ >= SCAN_ENTRIES)
		return;
	if (S_ISREG(st.st_mode)) {
		unsigned k = file_kind(path, st.st_size) & s->want;
		if (k && !s->first[0])
			snprintf(s->first, sizeof s->first, "%s", path);
		s->holds |= k;
		return;
	}
	if (!S_ISDIR(st.st_mode) || depth > SCAN_DEPTH)
		return;
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char p[4096];
		if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p)
			continue;
		scan_path(s, p, depth + 1);
	}
	closedir(d);
}

unsigned fs_holds(const char *path, unsigned want, char *example, size_t n)
{
	struct scan s = { .want = want };
	struct stat st;
	if (stat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			/* follow the top folder itself even when it is a link */
			DIR *d = opendir(path);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
					continue;
				char p[4096];
				if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) < (int)sizeof p)
					scan_path(&s, p, 1);
			}
			if (d)
				closedir(d);
		} else if (S_ISREG(st.st_mode)) {
			s.holds = file_kind(path, st.st_size) & want;
			if (s.holds)
				snprintf(s.first, sizeof s.first, "%s", path);
		}
	}
	if (example && n)
		snprintf(example, n, "%s", s.first);
	return s.holds;
}

static const char *kind_text(unsigned k)
{
	if (k & FS_HOLDS_CHECKPOINT)
		return "a checkpoint (safetensors)";
	if (k & FS_HOLDS_PROFILE)
		return "a profile (an SQLite database)";
	return "an llm.c token shard";
}

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static const char *type_text(mode_t m)
{
	return S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISCHR(m) ? "a character device"
	       : S_ISBLK(m) ? "a block device" : S_ISSOCK(m) ? "a socket" : S_ISDIR(m) ? "a folder" : S_ISREG(m) ? "a regular file" : "not a regular file";
}

/* Rule 3: what the output is (checked after rule 1, before rule 2). */
static int check_type(const struct fs_output *o, const char *cmd, const char *opt)
{
	struct stat sl, st;
	if (lstat(o->path, &sl))
		return 0;
	int exists = stat(o->path, &st) == 0;
	if (o->folder) {
		if (exists && S_ISDIR(st.st_mode))
			return 0;
		return ascent_error(ASCENT_EUSAGE, "%s: %s '%s' is %s, not a folder (give a folder, or a name that does "
				    "not exist yet)", cmd, opt, o->path, type_text(exists ? st.st_mode : sl.st_mode));
	}
	if (S_ISREG(sl.st_mode))
		return 0;
	if (S_ISLNK(sl.st_mode)) {
		char to[4096];
		ssize_t n = readlink(o->path, to, sizeof to - 1);
		to[n > 0 ? n : 0] = 0;
		return ascent_error(ASCENT_EUSAGE, "%s: %s '%s' is a symbolic link (to '%s'): the output is written by "
				    "replacing the file, which would replace the link, not write where it points (give "
				    "the file it points to, or another name)", cmd, opt, o->path, to);
	}
	if (S_ISDIR(sl.st_mode))
		return ascent_error(ASCENT_EUSAGE, "%s: %s '%s' is a folder; give a file name", cmd, opt, o->path);
	return ascent_error(ASCENT_EUSAGE, "%s: %s '%s' is %s, not a regular file: the output is written by "
			    "replacing the file, which would replace the %s itself (give a regular file%s)", cmd, opt,
			    o->path, type_text(sl.st_mode), S_ISFIFO(sl.st_mode) ? "FIFO" : S_ISSOCK(sl.st_mode) ? "socket" : "device",
			    !strcmp(cmd, "export") ? ", or - for standard output" : "");
}

int fs_output_check(const struct fs_output *o)
{
	const char *cmd = o->cmd ? o->cmd : "ascent", *opt = o->option ? o->option : "the output";
	struct stat so;
	if (!o->path)
		return 0;
	for (int i = 0; i < o->ninputs && stat(o->path, &so) == 0; i++) {
		struct stat si;
		if (!o->inputs[i] || stat(o->inputs[i], &si))
			continue;
		if (same_file(&so, &si))
			return ascent_error(ASCENT_EUSAGE, "%s: %s '%s' is its input '%s': writing it would destroy what it "
							   "reads (choose another output)", cmd, opt, o->path, o->inputs[i]);
	}
	int rc = check_type(o, cmd, opt);
	if (rc || stat(o->path, &so))
		return rc;   /* a new file or folder replaces nothing */
	if (o->force || (o->is_own && o->is_own(o->path)))
		return 0;
	char ex[4096];
	unsigned k = fs_holds(o->path, FS_HOLDS_ANY & ~o->makes, ex, sizeof ex);
	if (!k)
		return 0;
	int dir = S_ISDIR(so.st_mode);
	return ascent_error(ASCENT_EUSAGE, "%s: %s '%s' %s %s that '%s' did not make%s%s%s; writing there would replace "
					   "it (choose another output, or pass --force to write there anyway)",
			    cmd, opt, o->path, dir ? "holds" : "is", kind_text(k), cmd, dir ? " ('" : "", dir ? ex : "",
			    dir ? "')" : "");
}

int fs_relative_path(const char *from_dir, const char *to, char *out, size_t n)
{
	char a[4096], b[4096];
	if (!realpath(from_dir, a) || !realpath(to, b))
		return ascent_error(ASCENT_EINPUT, "cannot resolve '%s' or '%s': %s", from_dir, to, strerror(errno));
	/* the longest common prefix that ends at a component boundary */
	size_t i = 0, cut = 0;
	for (; a[i] && a[i] == b[i]; i++)
		if (a[i] == '/')
			cut = i;
	if ((!a[i] && (b[i] == '/' || !b[i])) || (!b[i] && a[i] == '/'))
		cut = i;                 /* one is the other or below it */
	size_t o = 0;
	out[0] = 0;
	for (const char *p = a + cut; *p; p++)     /* one ".." per component of from_dir past the prefix */
		if (*p == '/' && o + 4 < n) {
			memcpy(out + o, o ? "/.." : "..", o ? 3 : 2);
			o += o ? 3 : 2;
			out[o] = 0;
		}
	const char *rest = b[cut] == '/' ? b + cut + 1 : b + cut;
	int w = snprintf(out + o, n - o, "%s%s", o && *rest ? "/" : "", *rest || o ? rest : ".");
	if (w < 0 || (size_t)w >= n - o)
		return ascent_error(ASCENT_EINPUT, "the relative path from '%s' to '%s' is too long", from_dir, to);
	return 0;
}
