/* common/common.h — the public face of the `common` module: errors, logging, clocks, option
 * parsing, JSON helpers, atomic file writes, safetensors, bf16/fp16, CPU facts, the RNG.
 *
 * `common` knows nothing about training, SQL or MPI. Every other module may include it.
 */
#ifndef ASCENT_COMMON_H
#define ASCENT_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#define ASCENT_VERSION "0.1.0"

/* ------------------------------------------------------------------------------------------ */
/* Errors (error.c). Functions that can fail return 0 or a negative ASCENT_E* code and put the
 * detail in a per-thread message, read with ascent_errmsg(). Only cli/ turns codes into exits. */

enum ascent_err {
	ASCENT_OK = 0,
	ASCENT_EUSAGE = -1,    /* bad command line: exit 2 */
	ASCENT_EINPUT = -2,    /* bad input file or value: exit 2 */
	ASCENT_EIO = -3,       /* a file or system call failed: exit 1 */
	ASCENT_ENOMEM = -4,    /* out of memory: exit 1 */
	ASCENT_EFAIL = -5,     /* a check or job failed (diag FAIL, training diverged): exit 1 */
	ASCENT_EDB = -6,       /* SQLite error: exit 1 */
	ASCENT_EMPI = -7,      /* MPI error: exit 1 */
	ASCENT_ETIMEOUT = -8,  /* a timeout: exit 1 */
	ASCENT_EINTERNAL = -9, /* a bug: exit 3 */
};

/* Set this thread's error message (printf-style) and return `code`, so callers write
 *   return ascent_error(ASCENT_EINPUT, "cannot open '%s': %s", path, strerror(errno)); */
int ascent_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prefix the current message: "ctx: <old message>". Returns code. */
int ascent_error_ctx(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
const char *ascent_errmsg(void);           /* this thread's last message ("" if none) */
const char *ascent_strerror(int code);     /* short name of a code */
int ascent_exit_code(int code);            /* 0, 1, 2 or 3: docs/background.md */

/* ------------------------------------------------------------------------------------------ */
/* Logging (log.c). One process-wide logger: a file (per rank) and, optionally, stderr.
 * Thread-safe. Before log_open() everything goes to stderr. When a line cannot be written to the
 * file (a full disk), a warning on stderr names the log and the reason, the file is closed, and
 * that line and every later one go to stderr: nothing is lost without a word. */

enum log_level { LOG_DEBUG = 0, LOG_INFO = 1, LOG_WARN = 2, LOG_ERROR = 3 };

/* Open `path` (parents created) for appending; `echo` also writes to stderr. path may be NULL. */
int log_open(const char *path, int rank, int echo);
void log_close(void);
void log_set_level(enum log_level lvl);
void log_set_echo(int echo);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)

/* ------------------------------------------------------------------------------------------ */
/* Clocks. All profile timestamps are int64 ns of CLOCK_MONOTONIC (vDSO, no syscall). */

static inline int64_t clock_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
static inline int64_t clock_utc_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
/* a + b, a − b and a × b clamped to [INT64_MIN, INT64_MAX]: for times and durations read from files a user
 * may have damaged (a dur_ns near INT64_MAX must not overflow an end time). */
static inline int64_t i64_add_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t i64_sub_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t i64_mul_sat(int64_t a, int64_t b)
{
	int64_t r;
	return __builtin_mul_overflow(a, b, &r) ? ((a < 0) != (b < 0) ? INT64_MIN : INT64_MAX) : r;
}
/* Growable arrays (array.c), as git's ALLOC_GROW: ARRAY_GROW(v, n, cap, first, what) makes room for
 * element n of `T *v` whose capacity is `int cap`: when n == cap the capacity doubles (from `first`)
 * and the new slots are zeroed. 0, or ASCENT_ENOMEM "out of memory <what>" with v unchanged. */
int array_grow_(void *arrayp, int n, int *cap, int first, size_t elem, const char *what);
#define ARRAY_GROW(v, n, cap, first, what) array_grow_(&(v), (n), &(cap), (first), sizeof *(v), (what))
/* "2026-11-29T20:31:05Z" into buf (>= 21 bytes) for `utc_ns`; compact=1 gives "20261129-203105". */
void clock_format_utc(int64_t utc_ns, int compact, char *buf, size_t n);

/* ------------------------------------------------------------------------------------------ */
/* Command-line options (opts.c). Table-driven; accepts "--name value" and "--name=value".
 * Errors name the option and the accepted values and return ASCENT_EUSAGE. */

enum opt_type {
	OPT_FLAG,   /* int*: set to 1 */
	OPT_INT,    /* int*, range [min, max] */
	OPT_I64,    /* int64_t*, range [min, max] */
	OPT_FLOAT,  /* double*, range [min, max]; min_open/max_open make it exclusive */
	OPT_STR,    /* const char**; `choices` "a|b|c" restricts it */
	OPT_HELP,   /* -h/--help: sets *(int*)dest */
};

struct opt_spec {
	const char *name;      /* long name without "--", e.g. "steps" */
	char short_name;       /* 'o' for -o, or 0 */
	enum opt_type type;
	void *dest;
	double min, max;       /* numeric range (ignored when min == max == 0) */
	const char *choices;   /* OPT_STR: "a|b|c" or NULL */
	const char *metavar;   /* shown in usage: "N", "FILE" */
	const char *help;      /* one line */
	int *seen;             /* optional: set to 1 when given on the command line */
	int min_open, max_open;
};

/* Parse argv[0..argc) (argv[0] is the first argument after the command name). Positional
 * arguments are collected in order into pos[] (at most max_pos; more is an error).
 * `cmd` ("train") is used in messages. */
int opt_parse(const char *cmd, const struct opt_spec *specs, int argc, char **argv,
	      char **pos, int max_pos, int *npos /* OUT */);
/* Print "usage: ascent CMD SYNOPSIS" then one line per option. */
void opt_usage(FILE *f, const char *cmd, const char *synopsis, const struct opt_spec *specs);
/* Parse a number with range checks; `what` names it in the message. */
int opt_parse_int(const char *what, const char *s, long long min, long long max, long long *out);
int opt_parse_double(const char *what, const char *s, double min, double max, double *out);

/* ------------------------------------------------------------------------------------------ */
/* Files (fs.c). Writes of anything a user keeps are atomic: a temporary file in the
 * same folder, fsync, rename over the target, fsync the folder. */

int fs_mkdir_p(const char *path);                      /* like mkdir -p; 0 if it exists */
int fs_exists(const char *path);                       /* 1 if path exists */
int fs_is_dir(const char *path);
/* Read a whole file into a malloc'd buffer (NUL-terminated); caller frees *data. */
int fs_read_all(const char *path, char **data /* OUT */, size_t *len /* OUT */);
/* Open `path` read-only (close-on-exec) and fstat it, once: a FIFO or a pipe can be opened and read
 * only once, so what the stat says and what is then read are the same object. *fd is -1 on error
 * (ASCENT_EINPUT: "cannot open 'PATH': REASON"). */
struct stat;
int fs_open_read(const char *path, int *fd /* OUT */, struct stat *st /* OUT */);
int fs_rm_rf(const char *path);
/* The bytes of the file at src appended to the open descriptor dst (copy_file_range, else read and
 * write), synced. */
int fs_copy_to_fd(const char *src, int dst);
/* fsync a file or a folder (a folder: its entries, so a rename in it survives a crash). Best
 * effort for folders on filesystems that refuse it; 0 or ASCENT_EIO naming the path. */
int fs_sync(const char *path);
/* Make a finished temporary durable under its final name: fsync `tmp` (file or folder), rename it
 * to `path` (replacing what is there), fsync `path`'s folder (best effort: the rename has happened). The one rename-and-sync step of
 * atomic_commit, the importer's output, `merge` and checkpoints. */
int fs_rename_durable(const char *tmp, const char *path);

/* A file being made for `path` that nobody sees before it is complete and that cannot outlive its
 * process: an unnamed file (O_TMPFILE) in path's folder, which the kernel frees when the process
 * ends however it ends (kill -9 included), linked in under `path` by fs_tmp_commit. Where the file
 * system has no unnamed files (or /proc is not mounted), a named one, "path.tmp-PID-N", removed by
 * fs_tmp_abort. Either way fs_tmp_open first removes, and reports on stderr, what a process that
 * died left for the same path ("path.tmp-PID..." whose PID no longer runs). */
struct fs_tmp {
	char *path;        /* the target; NULL when not open */
	int fd;            /* the file, read-write */
	int named;         /* 1: the fallback named temporary */
	char name[4200];   /* where the file can be opened: "/proc/self/fd/N", or the named temporary */
};
int fs_tmp_open(struct fs_tmp *t, const char *path);
/* fsync, put it in place of `path` (rename over what is there), fsync the folder; closes. */
int fs_tmp_commit(struct fs_tmp *t);
void fs_tmp_abort(struct fs_tmp *t);                   /* discard; accepts one never opened (zeroed) */
/* "path.tmp-PID-N": a name unique to this process and call for scratch files beside `path`. */
void fs_tmp_name(const char *path, char *out, size_t n);

struct atomic_file {
	FILE *f;           /* write here */
	struct fs_tmp t;   /* the file until atomic_commit puts it in place */
};
int atomic_open(struct atomic_file *af, const char *path);
int atomic_commit(struct atomic_file *af);             /* flush, fsync, rename, fsync dir */
void atomic_abort(struct atomic_file *af);             /* remove the temporary; accepts unopened */
int atomic_write_file(const char *path, const void *data, size_t len);

/* ------------------------------------------------------------------------------------------ */
/* Never write over an input (output.c). Every command that writes a file or a folder calls
 * fs_output_check on its output before it reads or computes anything, with the inputs it reads:
 *  1. an output that IS one of its inputs (same file or folder: device and inode, so links and
 *     other spellings of the path count) is refused, always: "quant ptq: -o 'X' is its input 'X'";
 *  2. an output that holds a checkpoint, a profile or a token shard the command did not make is
 *     refused unless `force` (the command's --force): "export: -o 'trace.db' is a profile (an
 *     SQLite database) that 'export' did not make; … pass --force to write there anyway".
 *  3. a file output that exists must be a regular file: a device, a FIFO, a socket or a symbolic
 *     link would be replaced by a regular file (as root, -o /dev/null would stop being the null
 *     device), and a folder cannot be; a folder output must be a folder (or a link to one);
 * All are ASCENT_EUSAGE (exit 2), and nothing has been written yet. What a path holds is told by
 * content, never by name (fs_holds): a file whose first bytes are SQLite's header (a profile), an
 * llm.c shard's magic 20240520, or a safetensors header (a checkpoint); a folder holds what any
 * file in it, or up to three folders below it (RUN/ckpt/step-N/model.safetensors), is. Only
 * regular files are opened (links are not followed below the output itself, FIFOs never opened).
 * An output that does not exist yet passes. Files a command finds inside an input folder that
 * are its own output (tokenize DIR -o DIR/x.bin) are the command's to skip, not refused here. */

enum fs_holds_kind {
	FS_HOLDS_CHECKPOINT = 1,     /* a safetensors file */
	FS_HOLDS_PROFILE = 2,        /* an SQLite database */
	FS_HOLDS_SHARD = 4,          /* an llm.c token shard */
	FS_HOLDS_ANY = 7,
};
/* The kinds among `want` that `path` is or holds; `example` (may be NULL) gets the first such
 * file found. 0 when it holds none or does not exist. */
unsigned fs_holds(const char *path, unsigned want, char *example /* OUT */, size_t n);

struct fs_output {
	const char *cmd;                 /* "quant ptq": names the command in messages */
	const char *option;              /* "-o": the option that named the output */
	const char *path;                /* the output file or folder */
	const char *const *inputs;       /* what the command reads (files or folders; NULL entries skipped) */
	int ninputs;
	unsigned makes;                  /* FS_HOLDS_* kinds the command writes itself: those may be replaced */
	int (*is_own)(const char *path); /* optional: 1 when `path` is something this command made (a
					  * quantized checkpoint for quant ptq): rule 2 does not apply */
	int force;                       /* --force: rule 2 is off (rule 1 never is) */
	int folder;                      /* the output is a folder (train --out, quant -o): it may be a
					  * folder or a link to one; otherwise a file, written by replacing
					  * it, so it must be a regular file itself (rule 3) */
};
int fs_output_check(const struct fs_output *o);
/* The path of `to` relative to the folder `from_dir` ("../ckpt/step-000003"; "." when they are the
 * same), both resolved through realpath first (so both must exist). */
int fs_relative_path(const char *from_dir, const char *to, char *out /* OUT */, size_t n);

/* ------------------------------------------------------------------------------------------ */
/* JSON (json.c), on cJSON. */

struct cJSON;
/* Parse a file; on a syntax error the message gives the line and column. Caller cJSON_Delete()s. */
int json_read_file(const char *path, struct cJSON **out);
/* Print `root` (formatted) to `path` atomically. */
int json_write_file(const char *path, const struct cJSON *root);
/* Escape `s` to a JSON string literal with only printable ASCII (non-ASCII and control bytes as
 * \u00XX), writing to f. */
void json_fput_string(FILE *f, const char *s);

/* ------------------------------------------------------------------------------------------ */
/* safetensors (safetensors.c). The reader validates everything before handing out pointers:
 * header length against file size, JSON, dtypes, shape × dtype size == byte range, ranges in
 * bounds, not overlapping, no holes. */

enum st_dtype {
	ST_BOOL, ST_U8, ST_I8, ST_I16, ST_U16, ST_F16, ST_BF16, ST_I32, ST_U32, ST_F32, ST_F64,
	ST_I64, ST_U64, ST_DTYPE_COUNT
};
#define ST_MAX_DIMS 8

struct st_tensor {
	char *name;
	enum st_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	uint64_t nbytes;
	const void *data;        /* into the file's mapping (reader) */
};

struct st_file {
	int n;
	struct st_tensor *t;     /* n tensors in file order */
	int nmeta;
	char **meta_key, **meta_val;
	void *map;               /* whole file */
	size_t map_len;
};

const char *st_dtype_name(enum st_dtype d);
size_t st_dtype_size(enum st_dtype d);
/* Map and validate `path`. On error the message names the file and the fault. */
int st_open(struct st_file *f, const char *path);
/* Validate an in-memory image (borrowed, must outlive f); used by st_open and the fuzzer. */
int st_parse(struct st_file *f, const void *buf, size_t len, const char *what);
void st_close(struct st_file *f);
const struct st_tensor *st_find(const struct st_file *f, const char *name);
/* ASCENT_EINPUT naming `path`, the tensor, how many of its values are NaN or ±Inf and where the
 * first is, when an F32 tensor holds any (other dtypes: 0). Loaders of weights and optimizer
 * state call it: a non-finite weight only ever turns into a NaN loss or NUL bytes later. */
int st_check_finite(const struct st_tensor *t, const char *path);
const char *st_meta(const struct st_file *f, const char *key);

struct st_writer;
struct st_writer *st_writer_new(void);
/* `data` is borrowed until st_writer_write returns. shape has ndim entries. */
int st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim,
		  const int64_t *shape, const void *data);
int st_writer_meta(struct st_writer *w, const char *key, const char *value);
int st_writer_write(struct st_writer *w, const char *path);   /* atomic */
void st_writer_free(struct st_writer *w);

/* ------------------------------------------------------------------------------------------ */
/* bf16 / fp16 (half.c): round to nearest even; NaN stays NaN. */

uint16_t bf16_from_f32(float x);
float f32_from_bf16(uint16_t h);
uint16_t f16_from_f32(float x);
float f32_from_f16(uint16_t h);

/* ------------------------------------------------------------------------------------------ */
/* Numbers with units for people (units.c); each writes buf (n bytes) and returns it. */

/* Durations: "750 ns", "1.25 us", "3.40 ms", "2.125 s"; "-" for a negative value (unknown). */
char *units_ns(char *buf, size_t n, double ns);
/* Sizes in decimal units: "512 B", "524.3 KB", "4.0 MB", "1.25 GB"; "-" for a negative value. */
char *units_bytes(char *buf, size_t n, double b);
/* Memory in binary units: "1.5 MiB" below 1 GiB, else "2.25 GiB". */
char *units_bytes_bin(char *buf, size_t n, int64_t b);
/* Text from a trace (names, notes) made safe for a terminal: control bytes (ESC, BEL, newline, ...)
 * as C escapes ("\e", "\a", "\n", "\x01"), everything else as is; a malloc'ed copy, NULL when
 * out of memory. */
char *units_printable(const char *s);
/* A name for a table cell of `width` columns (≤ 0: any): the whole name when it fits; else C++
 * template arguments and parameter lists elided ("void f<...>(...)", as profilers' short kernel
 * names), then, if still too long, its head and tail around a '~'. Report's tables and the viewer
 * both shorten names with it; JSON and CSV carry the whole name. */
char *units_name(char *buf, size_t n, const char *name, int width);

/* ------------------------------------------------------------------------------------------ */
/* Statistics of small samples (stats.c). */

/* Median of v[0..n) (the mean of the two middle values for an even n), 0 for n <= 0; sorts v. */
double stats_median(double *v, int n);
/* Median of sorted v[0..n), n >= 1: the middle value, or the floor of the mean of the middle two
 * (never overflowing, so saturated times from a damaged file are safe). */
int64_t stats_median_sorted_i64(const int64_t *v, size_t n);
/* qsort comparators, ascending: int64_t and double elements. */
int stats_cmp_i64(const void *a, const void *b);
int stats_cmp_double(const void *a, const void *b);

/* ------------------------------------------------------------------------------------------ */
/* CPU facts (cpu.c). */

struct cpu_info {
	int family, model, stepping;
	char vendor[16];
	char brand[64];
	int avx2, fma, avx512f, avx512bw, avx512vl, avx512vnni, avx512bf16, avx512fp16, amx;
	int online_cpus;       /* sysconf(_SC_NPROCESSORS_ONLN), or the affinity mask's count */
};
void cpu_detect(struct cpu_info *out);
/* The vector and matrix extensions that decide which kernels run, best first, joined by '+':
 * "amx+avx512_fp16+avx512_bf16+avx512_vnni+avx512+avx2" (or "none"). */
void cpu_isa_describe(const struct cpu_info *c, char *out, size_t n);
/* Threads a process should use: cores on the host ÷ ranks on the host, at least 1. */
int cpu_default_threads(int ranks_on_host);
/* Peak resident memory of this process in bytes (getrusage). */
int64_t cpu_peak_rss_bytes(void);

/* ------------------------------------------------------------------------------------------ */
/* Deterministic RNG: xorshift64* with a 64-bit state, so it checkpoints as one integer. */

static inline uint32_t rng_u32(uint64_t *state)
{
	*state ^= *state >> 12;
	*state ^= *state << 25;
	*state ^= *state >> 27;
	return (uint32_t)((*state * 0x2545F4914F6CDD1DULL) >> 32);
}
static inline float rng_f32(uint64_t *state)   /* uniform [0, 1) */
{
	return (float)(rng_u32(state) >> 8) / 16777216.0f;
}
/* Seed a state from a user seed and a stream number (never 0). */
uint64_t rng_seed(uint64_t seed, uint64_t stream);
/* n normal(mean, std) samples (Box–Muller). */
void rng_normal(uint64_t *state, float *out, size_t n, float mean, float std);

#endif
