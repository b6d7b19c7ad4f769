/* import/kineto.c — the PyTorch profiler's (Kineto's) Chrome-trace JSON as an import source.
 *
 * Streamed with yajl (Debian's libyajl2): a SAX parser that hands every number over as its text,
 * so `ts`/`dur` (µs with three decimals) become exact nanoseconds, and that keeps only the event
 * being read in memory. cJSON (already a dependency) builds whole documents and cannot stream a
 * multi-GB trace; yajl is small and in Debian for years. Each event's `args` object is written
 * again, without whitespace, for the `arg` table by `struct jw` below (the bytes yajl's generator
 * wrote, at less cost). The input goes through zlib's gzread, which reads plain and gzip files
 * alike. docs/import.md has the mapping. */
#include "import/import.h"
#include "import/npu.h"

#include "common/common.h"
#include "db/db.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yajl/yajl_parse.h>
#include <zlib.h>

#define CHUNK (256 * 1024)
#define CHUNK_MAX ((size_t)256 << 20)   /* the largest read a long token grows it to */

/* a growable text buffer */
struct text {
	char *s;
	size_t n, cap;
	int set;          /* the field was present */
	int is_str;       /* it was a JSON string (else a number, bool or null) */
};

static int text_set(struct text *t, const char *s, size_t n, int is_str)
{
	if (n + 1 > t->cap) {
		size_t nc = t->cap ? t->cap : 64;
		while (nc < n + 1)
			nc *= 2;
		char *p = realloc(t->s, nc);
		if (!p)
			return -1;
		t->s = p;
		t->cap = nc;
	}
	memcpy(t->s, s, n);
	t->s[n] = 0;
	t->n = n;
	t->set = 1;
	t->is_str = is_str;
	return 0;
}

/* event fields */
enum field { F_NONE = -1, F_PH, F_CAT, F_NAME, F_PID, F_TID, F_TS, F_DUR, F_ID, F_S, F_COUNT };
struct key {
	const char *s;
	size_t len;
};
#define KEY(s) { s, sizeof s - 1 }
static const struct key FIELD[F_COUNT] = { KEY("ph"), KEY("cat"), KEY("name"), KEY("pid"), KEY("tid"),
					   KEY("ts"), KEY("dur"), KEY("id"), KEY("s") };

/* args kept as values (top level of "args") */
enum arg { A_COLL, A_DTYPE, A_IN_N, A_OUT_N, A_GROUP_SIZE, A_PG_NAME, A_PG_DESC, A_PG_RANKS, A_BYTES, A_MBYTES,
	   A_TOTAL_ALLOC, A_DEV_TYPE, A_DEV_ID, A_SRC_RANK, A_DST_RANK, A_NAME, A_LABELS, A_STEP, A_TASK_TYPE,
	   A_HCCL_COUNT, A_HCCL_DTYPE, A_CORR, A_COUNT };
static const struct key ARG[A_COUNT] = { KEY("Collective name"), KEY("dtype"), KEY("In msg nelems"),
					 KEY("Out msg nelems"), KEY("Group size"), KEY("Process Group Name"),
					 KEY("Process Group Description"), KEY("Process Group Ranks"), KEY("bytes"),
					 KEY("Bytes"), KEY("Total Allocated"), KEY("Device Type"), KEY("Device Id"),
					 KEY("Src Rank"), KEY("Dst Rank"), KEY("name"), KEY("labels"), KEY("step"),
					 KEY("Task Type"), KEY("count"), KEY("data_type"), KEY("correlation") };

/* The index of key s[0..len) in names[0..n), −1 none (keys are compared for every key of every
 * event: the length and the first byte decide most, before any memcmp). */
static int find_key(const struct key *names, int n, const unsigned char *s, size_t len)
{
	for (int i = 0; i < n; i++)
		if (names[i].len == len && names[i].s[0] == (char)s[0] && !memcmp(names[i].s, s, len))
			return i;
	return -1;
}

enum capture { C_NONE, C_ARGS, C_DIST };

/* The captured JSON (an event's args, distributedInfo) written again without whitespace, byte for
 * byte as yajl's generator (yajl_gen, default options) writes the same parse events: strings
 * escaped as yajl_string_encode does (\" \\ \b \f \n \r \t; other bytes below 0x20 as \u00XX
 * in upper-case hex; '/' and bytes from 0x7f as they are), numbers as their text, ',' and ':'
 * between. Nesting 128 deep (yajl_gen's limit) or a second value after a complete one spoils the
 * capture, as it did with yajl_gen. Done here because yajl_gen's per-call checks and buffer calls
 * were a fifth of the parsing thread's time; tests/fuzz/kineto_import checks the texts. */
#define JW_MAX_DEPTH 128
enum jw_state { JW_START, JW_MAP_START, JW_MAP_KEY, JW_MAP_VAL, JW_ARRAY_START, JW_IN_ARRAY, JW_COMPLETE };

struct jw {
	char *s;
	size_t n, cap;
	int depth;
	int bad;                  /* nesting too deep, or a value after the complete one */
	unsigned char state[JW_MAX_DEPTH];
};

static void jw_reset(struct jw *w)
{
	w->n = 0;
	w->depth = 0;
	w->bad = 0;
	w->state[0] = JW_START;
}

/* Room for n more bytes (0 when out of memory: then the capture is spoiled). */
static int jw_room(struct jw *w, size_t n)
{
	if (w->n + n <= w->cap)
		return 1;
	size_t nc = w->cap ? w->cap : 1024;
	while (nc < w->n + n)
		nc *= 2;
	char *p = realloc(w->s, nc);
	if (!p) {
		w->bad = 1;
		return 0;
	}
	w->s = p;
	w->cap = nc;
	return 1;
}

/* The separator before a value or key at the current depth; 0 when the capture is spoiled. */
static int jw_sep(struct jw *w)
{
	if (w->bad)
		return 0;
	enum jw_state st = w->state[w->depth];
	if (st == JW_COMPLETE) {
		w->bad = 1;
		return 0;
	}
	if (st == JW_MAP_KEY || st == JW_IN_ARRAY || st == JW_MAP_VAL) {
		if (!jw_room(w, 1))
			return 0;
		w->s[w->n++] = st == JW_MAP_VAL ? ':' : ',';
	}
	return 1;
}

/* After a value or key at the current depth. */
static void jw_appended(struct jw *w)
{
	unsigned char *st = &w->state[w->depth];
	*st = *st == JW_MAP_START || *st == JW_MAP_KEY ? JW_MAP_VAL
	      : *st == JW_MAP_VAL			? JW_MAP_KEY
	      : *st == JW_ARRAY_START			? JW_IN_ARRAY
	      : *st == JW_START				? JW_COMPLETE
							: *st;
}

static void jw_raw(struct jw *w, const char *s, size_t n)
{
	if (!jw_sep(w) || !jw_room(w, n))
		return;
	memcpy(w->s + w->n, s, n);
	w->n += n;
	jw_appended(w);
}

static void jw_string(struct jw *w, const unsigned char *s, size_t n)
{
	static const char HEX[] = "0123456789ABCDEF";
	if (!jw_sep(w) || !jw_room(w, 6 * n + 2))
		return;
	char *o = w->s + w->n;
	*o++ = '"';
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c >= 0x20 && c != '"' && c != '\\') {
			*o++ = (char)c;
			continue;
		}
		*o++ = '\\';
		switch (c) {
		case '"': *o++ = '"'; break;
		case '\\': *o++ = '\\'; break;
		case '\b': *o++ = 'b'; break;
		case '\f': *o++ = 'f'; break;
		case '\n': *o++ = 'n'; break;
		case '\r': *o++ = 'r'; break;
		case '\t': *o++ = 't'; break;
		default:
			*o++ = 'u';
			*o++ = '0';
			*o++ = '0';
			*o++ = HEX[c >> 4];
			*o++ = HEX[c & 15];
		}
	}
	*o++ = '"';
	w->n = (size_t)(o - w->s);
	jw_appended(w);
}

static void jw_open(struct jw *w, int map)
{
	if (!jw_sep(w))
		return;
	if (++w->depth >= JW_MAX_DEPTH) {
		w->bad = 1;
		return;
	}
	w->state[w->depth] = map ? JW_MAP_START : JW_ARRAY_START;
	if (!jw_room(w, 1))
		return;
	w->s[w->n++] = map ? '{' : '[';
}

static void jw_close(struct jw *w, int map)
{
	if (w->bad || w->depth == 0) {
		w->bad = 1;
		return;
	}
	w->depth--;
	jw_appended(w);
	if (!jw_room(w, 1))
		return;
	w->s[w->n++] = map ? '}' : ']';
}

struct meta_name {          /* an M record: a process's or a thread's name */
	uint64_t key;         /* lane key (thread) or pid hash (process) */
	int thread;           /* 1 thread_name, 0 process_name / process_labels */
	int labels;
	const struct npu_process *npu;   /* the thread's process when it is torch_npu's */
	char *name;
};

struct npu_pid {            /* a process of torch_npu's trace_view.json (import/npu.h's table) */
	uint64_t pid;         /* pid_key */
	const struct npu_process *p;
};

struct open_range {
	uint64_t key;           /* b: hash of pid, cat, id, name; B: lane key */
	int sync;               /* 1 B/E, 0 b/e */
	int64_t ts;
	char *name, *cat;       /* B: its name and category (E carries neither) */
};

/* Where a trace names its host: key paths from the top object, in order of preference (the first
 * found wins). TraceLens-style traces write the system's facts under "metadata": uname's node name
 * and the environment's HOSTNAME. Kineto itself writes no host (a file name may: host_from_name). */
#define HOST_DEPTH 4
static const char *const HOST_PATHS[] = { "metadata/system/uname/node", "metadata/system/env/HOSTNAME" };
#define HOST_NPATHS ((int)(sizeof HOST_PATHS / sizeof HOST_PATHS[0]))

struct kin {
	struct imp *im;
	/* torch_npu's trace_view.json: its processes by pid (from process_name, which it writes after
	 * the events: a bare array is read once for them first, prescan) */
	struct npu_pid *npu;
	int nnpu, capnpu;
	int npu_file;             /* the file names a process only torch_npu writes: times may be strings */
	/* [memory] records without "Total Allocated" (PyTorch 1.8-1.10): bytes in use summed from the
	 * file's own records, per device (the first 16 seen) */
	struct { int device; int64_t in_use; } mem_sum[16];
	int nmem_sum;
	int prescan;              /* this pass reads process names only */
	int prescan_stop;         /* the file is an object (Kineto's form): the pass stopped at its start */
	struct jw g2;             /* a collective's args with its operator name added */
	const char *path;
	int rc;                   /* a sink error that stopped the parse */
	int64_t offset;           /* bytes of JSON text fed before the current chunk */
	int64_t consumed_stored;  /* bytes of the stored file read so far */
	int depth;
	int64_t tokens;           /* scalars and keys completed (run: a chunk that completes none grows the next) */
	int top;                  /* 0 none yet, 1 object, 2 bare array */
	int events_depth;         /* depth of the traceEvents array, 0 outside */
	int saw_events;
	char topkey[32];
	int topkey_known;
	/* the event being read */
	int ev_depth;             /* depth of the event's map, 0 outside */
	enum field field;
	struct text f[F_COUNT];
	int bad_type;
	int64_t ev_index;
	/* capture (args, distributedInfo) */
	enum capture cap;
	int cap_depth;
	struct jw g;              /* the capture's text (a spoiled one, g.bad, is dropped) */
	int arg_key;              /* known arg at the args' top level, −1 none */
	struct text a[A_COUNT];
	int has_args;
	/* file facts */
	int64_t base_ns;
	int dist_rank;            /* −1 none */
	int rank_by_pid;          /* ascent's own export (traceName "ascent"): each pid is a rank */
	int64_t cur_pid;          /* then: the pid of the rank begun last */
	int world_size;
	char backend[32];
	/* the host: the keys of the top object's maps being read (depth 1..HOST_DEPTH; "" inside an
	 * array), the host found at HOST_PATHS[host_at] (host_at HOST_NPATHS: none yet) */
	char hkey[HOST_DEPTH + 1][32];
	char host[256];
	int host_at;
	int rank_started;
	struct meta_name *meta;
	int nmeta, capmeta;
	/* begin records waiting for their end: async pairs (b/e, by pid, cat, id, name) and
	 * per-thread ranges (B/E, by pid and tid, innermost last) */
	struct open_range *open;
	int nopen, capopen;
	/* launches by correlation id (corr_links): the CPU calls and the device work carrying a
	 * "correlation" argument, and the launch link ends the file has (id, start or end) */
	int launch_flows;         /* launch link ends (ac2g, ...) seen in the file */
	struct corr_end *corr_cpu, *corr_dev;
	int ncorr_cpu, capcorr_cpu, ncorr_dev, capcorr_dev;
	int64_t *lflow_start, *lflow_end;   /* the ids of the launch links' start ends and end ends */
	int nlflow_start, caplflow_start, nlflow_end, caplflow_end;
	int64_t lflow_next;       /* above the launch links' ids (0 when none is ≥ 0): own_ids_start */
	int64_t next_id;          /* the next id of a link of ascent's own (above every id of the file's) */
	/* CUPTI range profiling (category cuda_profiler_range): the counter ranges and the kernel launch
	 * calls, paired in time order at the end (counter_links) */
	struct corr_end *cnt_range, *cnt_launch;
	int ncnt_range, capcnt_range, ncnt_launch, capcnt_launch;
	/* device lanes of their own (GPU user annotations beside their stream, counter ranges), named at
	 * the end from their stream's name (name_lanes) */
	struct own_lane *own;
	int nown, capown;
};

/* A device lane of its own: what it holds (DEV_LANE_*), the stream lane's key it stands beside. */
struct own_lane {
	uint64_t stream_key;
	int tid, device, stream, what;
};

struct corr_end {
	int64_t corr, ts;
	uint64_t lane;            /* the lane key, as given to imp_lane */
};

static uint64_t fnv(const char *s, size_t n, uint64_t h)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	return h;
}

static uint64_t lane_key(const struct text *pid, const struct text *tid)
{
	uint64_t h = 1469598103934665603ULL;
	h = fnv(pid->set ? pid->s : "", pid->set ? pid->n : 0, h);
	h = fnv("\x1f", 1, h);
	return fnv(tid->set ? tid->s : "", tid->set ? tid->n : 0, h);
}

static uint64_t pid_key(const struct text *pid)
{
	return fnv(pid->set ? pid->s : "", pid->set ? pid->n : 0, 7);
}

/* A time in µs (JSON number text) as exact ns: digits, an optional fraction (first three digits
 * exact, the fourth rounds), an optional exponent (then through long double). −1 when negative,
 * not a number, or out of int64 range. */
static int us_to_ns(const char *s, int64_t *out)
{
	if (!s || !*s || *s == '-')
		return -1;
	if (strpbrk(s, "eE")) {
		char *end;
		errno = 0;
		long double v = strtold(s, &end);
		if (errno || *end || v < 0 || v * 1000.0L > 9.2e18L)
			return -1;
		*out = (int64_t)(v * 1000.0L + 0.5L);
		return 0;
	}
	int64_t ip = 0;
	const char *p = s;
	if (*p < '0' || *p > '9')
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (ip > (INT64_MAX / 1000 - 9) / 10)
			return -1;
		ip = ip * 10 + (*p - '0');
	}
	int64_t frac = 0;
	int nd = 0, round_up = 0;
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++, nd++) {
			if (nd < 3)
				frac = frac * 10 + (*p - '0');
			else if (nd == 3)
				round_up = *p >= '5';
		}
	}
	if (*p)
		return -1;
	for (int k = nd; k < 3; k++)
		frac *= 10;
	*out = ip * 1000 + frac + round_up;
	return 0;
}

static int parse_i64(const struct text *t, int64_t *v)
{
	if (!t->set || !t->n)
		return -1;
	char *end;
	errno = 0;
	long long x = strtoll(t->s, &end, 10);
	if (errno || *end) {
		/* numbers written as 1.0 or 1e3 */
		double d = strtod(t->s, &end);
		if (*end || d != d || d > 9.2e18 || d < -9.2e18)
			return -1;
		x = (long long)d;
	}
	*v = x;
	return 0;
}

static int dtype_size(const char *d)
{
	static const struct {
		const char *name;
		int size;
	} T[] = { { "Float", 4 }, { "float", 4 }, { "Half", 2 }, { "BFloat16", 2 }, { "Double", 8 }, { "Int", 4 },
		  { "Long", 8 }, { "Short", 2 }, { "Char", 1 }, { "Byte", 1 }, { "Bool", 1 }, { "ComplexFloat", 8 },
		  { "ComplexDouble", 16 }, { "ComplexHalf", 4 }, { "UInt16", 2 }, { "UInt32", 4 }, { "UInt64", 8 } };
	for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
		if (!strcmp(T[i].name, d))
			return T[i].size;
	if (!strncmp(d, "Float8", 6))
		return 1;
	return 0;
}

/* "[0, 1, 2]" → members (malloc'd), −1 when not such a list */
static int parse_ranks(const char *s, int **out)
{
	*out = NULL;
	cJSON *j = cJSON_Parse(s);
	if (!j || !cJSON_IsArray(j)) {
		cJSON_Delete(j);
		return -1;
	}
	int n = cJSON_GetArraySize(j);
	int *m = n > 0 ? malloc((size_t)n * sizeof *m) : NULL;
	int k = 0;
	cJSON *it;
	cJSON_ArrayForEach(it, j)
	{
		if (!m || !cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > 1e7)
			break;
		m[k++] = (int)it->valuedouble;
	}
	cJSON_Delete(j);
	if (k != n) {
		free(m);
		return -1;
	}
	*out = m;
	return n;
}

static const char *txt(const struct text *t)
{
	return t->set ? t->s : "";
}

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* ---------------------------------------------------------------------------------------- */
/* one event */

static void where(const struct kin *k, char *buf, size_t n)
{
	snprintf(buf, n, "event %" PRId64 " of traceEvents", k->ev_index);
}

static void warn(struct kin *k, enum imp_warning w)
{
	if (k->prescan)
		return;   /* the second pass counts */
	char b[64];
	where(k, b, sizeof b);
	imp_warn(k->im, w, b);
}

/* ---- torch_npu's processes (import/npu.h) ---- */

static const struct npu_process *npu_of(const struct kin *k, const struct text *pid)
{
	if (!k->nnpu)
		return NULL;
	uint64_t key = pid_key(pid);
	for (int i = 0; i < k->nnpu; i++)
		if (k->npu[i].pid == key)
			return k->npu[i].p;
	return NULL;
}

static int npu_add(struct kin *k, const struct text *pid, const char *process_name)
{
	const struct npu_process *p = npu_process(process_name);
	if (!p || npu_of(k, pid))
		return 0;
	if (ARRAY_GROW(k->npu, k->nnpu + 1, k->capnpu, 8, "torch_npu processes"))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	k->npu[k->nnpu++] = (struct npu_pid){ .pid = pid_key(pid), .p = p };
	k->npu_file |= npu_process_is_npu(p);
	return 0;
}

/* The lane key of an event or link end: a torch_npu host thread by its tid alone (Python's and
 * CANN's events of one thread are one lane), else pid and tid. */
static uint64_t ev_lane_key(const struct kin *k, const struct npu_process *np)
{
	if (np && np->lane == NPU_LANE_THREAD) {
		static const struct text none = { 0 };
		return lane_key(&none, &k->f[F_TID]) ^ 0x6e7075;   /* "npu" */
	}
	return lane_key(&k->f[F_PID], &k->f[F_TID]);
}

static int begin_rank(struct kin *k, int64_t origin)
{
	int64_t pid;
	if (k->rank_by_pid && imp_rank_forced(k->im) < 0 && parse_i64(&k->f[F_PID], &pid) == 0 && pid >= 0 && pid < 1000000) {
		if (k->rank_started && pid == k->cur_pid)
			return 0;
		k->rank_started = 1;
		k->cur_pid = pid;
		return imp_rank_begin(k->im, (int)pid, origin);
	}
	if (k->rank_started)
		return 0;
	/* --rank, else distributedInfo.rank, else the file name or the argument order */
	int rank = imp_rank_forced(k->im) >= 0 ? imp_rank_forced(k->im)
		   : k->dist_rank >= 0	    ? k->dist_rank
					    : imp_rank_default(k->im, k->path);
	k->rank_started = 1;
	return imp_rank_begin(k->im, rank, origin);
}

static int meta_add(struct kin *k, uint64_t key, int thread, int labels, const struct npu_process *npu, const char *name)
{
	if (k->nmeta == k->capmeta) {
		int nc = k->capmeta ? k->capmeta * 2 : 32;
		struct meta_name *m = realloc(k->meta, (size_t)nc * sizeof *m);
		if (!m)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		k->meta = m;
		k->capmeta = nc;
	}
	char *n = strdup(name);
	if (!n)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	k->meta[k->nmeta++] = (struct meta_name){ .key = key, .thread = thread, .labels = labels, .npu = npu, .name = n };
	return 0;
}

static int ev_metadata(struct kin *k)
{
	const char *n = txt(&k->f[F_NAME]);
	if (k->prescan)   /* the first pass of a bare array: torch_npu's processes only */
		return !strcmp(n, "process_name") && k->a[A_NAME].set ? npu_add(k, &k->f[F_PID], k->a[A_NAME].s) : 0;
	const struct npu_process *np = npu_of(k, &k->f[F_PID]);
	if (!strcmp(n, "thread_name") && k->a[A_NAME].set)
		return meta_add(k, ev_lane_key(k, np), 1, 0, np, k->a[A_NAME].s);
	if (!strcmp(n, "process_name") && k->a[A_NAME].set) {
		int rc = npu_add(k, &k->f[F_PID], k->a[A_NAME].s);
		return rc ? rc : meta_add(k, pid_key(&k->f[F_PID]), 0, 0, NULL, k->a[A_NAME].s);
	}
	if (!strcmp(n, "process_labels") && k->a[A_LABELS].set)
		return meta_add(k, pid_key(&k->f[F_PID]), 0, 1, NULL, k->a[A_LABELS].s);
	return 0;   /* sort indexes and other metadata: nothing to keep */
}

/* Where a device category's events go: on their stream's lane, or on a lane of their own. */
enum {
	DEV_LANE_STREAM = 0,    /* the lane of (pid = device, tid = stream) */
	DEV_LANE_ANNOT = 1,     /* GPU user annotations: a lane beside their stream's ("gpu D stream S
				 * annotations"), so that they are a row of their own, not ranges around
				 * the stream's kernels */
	DEV_LANE_COUNTERS = 2,  /* CUPTI range profiling's kernels with their counters: the device's lane
				 * of stream DB_STREAM_COUNTERS ("gpu D counters (CUPTI)") */
};

/* What a category is: Kineto's vocabulary (2021's PyTorch 1.8-1.10 and today's), MTIA's, and
 * ascent's own export's, so that an exported profile imports back with its kinds. */
struct kin_cat {
	const char *cat;
	int prefix;   /* 1: every category that starts with `cat` */
	int kind;     /* DB_KIND_* (device categories: DB_KIND_RANGE for work that is no kernel, copy or set) */
};

/* Categories of device work: the event goes on a device lane (pid = device, tid = stream). A
 * kernel whose name says nccl or rccl is a collective (is_comm_kernel). */
static const struct kin_cat DEVICE_CATS[] = {
	{ "kernel", 0, DB_KIND_KERNEL },
	{ "Kernel", 0, DB_KIND_KERNEL },            /* PyTorch 1.8-1.10 */
	{ "mtia_ccp_events", 0, DB_KIND_KERNEL },   /* MTIA's device work: kernels, DMA, event waits (HTA
						     * counts them all as kernels; db_kernel_class classes
						     * them by name, dma_* as memory) */
	{ "gpu_memcpy", 0, DB_KIND_MEMCPY },
	{ "Memcpy", 0, DB_KIND_MEMCPY },            /* PyTorch 1.8-1.10 */
	{ "memcpy", 0, DB_KIND_MEMCPY },            /* ascent's export */
	{ "gpu_memset", 0, DB_KIND_MEMSET },
	{ "Memset", 0, DB_KIND_MEMSET },            /* PyTorch 1.8-1.10 */
	{ "memset", 0, DB_KIND_MEMSET },            /* ascent's export */
	{ "gpu_", 1, DB_KIND_RANGE },               /* gpu_user_annotation and any other */
	{ "mtia_ccp", 1, DB_KIND_RANGE },
	{ "cuda_profiler_range", 0, DB_KIND_RANGE },
};

/* Device categories whose events go on a lane of their own (DEV_LANE_*), not on their stream's. */
static const struct {
	const char *cat;
	int lane;
} OWN_LANE_CATS[] = {
	{ "gpu_user_annotation", DEV_LANE_ANNOT },
	{ "cuda_profiler_range", DEV_LANE_COUNTERS },   /* a kernel's counters (args); its time is not the
							 * kernel's: the range profiler replays each kernel */
};

/* The DEV_LANE_* of a device category. */
static int dev_lane_of(const char *cat)
{
	for (size_t i = 0; i < sizeof OWN_LANE_CATS / sizeof OWN_LANE_CATS[0]; i++)
		if (!strcmp(cat, OWN_LANE_CATS[i].cat))
			return OWN_LANE_CATS[i].lane;
	return DEV_LANE_STREAM;
}

/* The launch calls CUPTI range profiling's kernels are paired with (counter_links): CPU events of
 * this category whose name starts so (cudaLaunchKernel, cudaLaunchKernelExC). */
#define COUNTER_LAUNCH_CAT "cuda_runtime"
#define COUNTER_LAUNCH_NAME "cudaLaunchKernel"


/* CPU categories: operators, and those kept as plain ranges (runtime and driver calls, annotations,
 * Python functions, ...: Kineto's activity types, today's and 2021's). An event named
 * ProfilerStep#N is step N whatever its category. A category on no list is kept as a range too,
 * and counted (IMP_W_CATEGORY): a trace whose work hides in a category this table lacks says so. */
static const struct kin_cat CPU_CATS[] = {
	{ "cpu_op", 0, DB_KIND_OP },
	{ "Operator", 0, DB_KIND_OP },   /* PyTorch 1.8-1.10 */
	{ "user_annotation", 0, DB_KIND_RANGE },
	{ "python_function", 0, DB_KIND_RANGE },
	{ "cuda_runtime", 0, DB_KIND_RANGE },
	{ "cuda_driver", 0, DB_KIND_RANGE },
	{ "cuda_sync", 0, DB_KIND_RANGE },
	{ "cuda_event", 0, DB_KIND_RANGE },
	{ "mtia_runtime", 0, DB_KIND_RANGE },
	{ "mtia_insight", 0, DB_KIND_RANGE },
	{ "mtia_counters", 0, DB_KIND_RANGE },
	{ "xpu_runtime", 0, DB_KIND_RANGE },
	{ "xpu_driver", 0, DB_KIND_RANGE },
	{ "xpu_sync", 0, DB_KIND_RANGE },
	{ "xpu_scope_profiler", 0, DB_KIND_RANGE },
	{ "privateuse1_runtime", 0, DB_KIND_RANGE },   /* custom backends (torch_npu's Kineto traces) */
	{ "privateuse1_driver", 0, DB_KIND_RANGE },
	{ "glow_runtime", 0, DB_KIND_RANGE },
	{ "hpu_op", 0, DB_KIND_RANGE },
	{ "collective_comm", 0, DB_KIND_RANGE },
	{ "external_correlation", 0, DB_KIND_RANGE },
	{ "cpu_instant_event", 0, DB_KIND_RANGE },
	{ "overhead", 0, DB_KIND_RANGE },
	{ "Trace", 0, DB_KIND_RANGE },     /* the profiling window */
	{ "Runtime", 0, DB_KIND_RANGE },   /* PyTorch 1.8-1.10 */
	{ "Python", 0, DB_KIND_RANGE },
};

/* Link categories (flow events, ph s/f): the kind of link. */
static const struct kin_cat FLOW_CATS[] = {
	{ "ac2g", 0, DB_FLOW_LAUNCH },               /* launch -> kernel */
	{ "async_cpu_to_gpu", 0, DB_FLOW_LAUNCH },   /* 2022 */
	{ "async", 0, DB_FLOW_LAUNCH },              /* PyTorch 1.8-1.10 */
	{ "fwdbwd", 0, DB_FLOW_FWDBWD },             /* forward op -> its backward */
};

/* The table's row for `cat`, or NULL. */
static const struct kin_cat *cat_find(const struct kin_cat *t, size_t n, const char *cat)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].prefix ? starts(cat, t[i].cat) : !strcmp(cat, t[i].cat))
			return &t[i];
	return NULL;
}
#define CAT_FIND(table, cat) cat_find(table, sizeof table / sizeof table[0], cat)

/* CPU categories of ascent's own export (cat = the event kind's name), so that an exported profile
 * imports back with its kinds; −1 for any other category. */
static int ascent_cpu_kind(const char *cat)
{
	static const int K[] = { DB_KIND_OP, DB_KIND_COMM, DB_KIND_P2P, DB_KIND_PHASE, DB_KIND_DATA, DB_KIND_IO,
				 DB_KIND_CHECKPOINT, DB_KIND_MICROBATCH, DB_KIND_WAIT, DB_KIND_RANGE };
	for (size_t i = 0; i < sizeof K / sizeof K[0]; i++)
		if (!strcmp(cat, db_kind_name(K[i])))
			return K[i];
	return -1;
}

static int is_comm_kernel(const char *name)
{
	return strcasestr(name, "nccl") || strcasestr(name, "rccl");
}

/* e's args: the event's own with "op name": name first (an HCCL collective renamed to its type). */
static int args_with_op_name(struct kin *k, const char *name, struct imp_event *e)
{
	struct jw *w = &k->g2;
	jw_reset(w);
	jw_open(w, 1);
	jw_string(w, (const unsigned char *)"op name", 7);
	jw_string(w, (const unsigned char *)name, strlen(name));
	int more = e->args && e->args_len > 2;   /* the own args: "{...}" with at least one member */
	size_t n = more ? e->args_len - 1 : 1;
	if (!jw_room(w, n + 1))
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	if (more) {
		w->s[w->n++] = ',';
		memcpy(w->s + w->n, e->args + 1, n);
	} else {
		w->s[w->n] = '}';
	}
	w->n += n;
	e->args = w->s;
	e->args_len = w->n;
	return 0;
}

/* A device event's stream from its tid: a number, or PyTorch 1.8-1.10's "stream 7"; 0 otherwise. */
static int device_stream(const struct text *tid)
{
	int64_t v;
	if (parse_i64(tid, &v) != 0 && tid->set && tid->n > 7 && !strncmp(tid->s, "stream ", 7)) {
		struct text rest = { .s = tid->s + 7, .n = tid->n - 7, .set = 1 };
		if (parse_i64(&rest, &v) != 0)
			return 0;
	} else if (!tid->set || parse_i64(tid, &v) != 0) {
		return 0;
	}
	return v >= INT32_MIN && v <= INT32_MAX ? (int)v : 0;
}

/* Keep a CPU call's or a device event's correlation id (corr_links pairs them at the end). */
static int corr_keep(struct kin *k, int dev, int64_t corr, uint64_t lane, int64_t ts)
{
	struct corr_end **a = dev ? &k->corr_dev : &k->corr_cpu;
	int *n = dev ? &k->ncorr_dev : &k->ncorr_cpu, *cap = dev ? &k->capcorr_dev : &k->capcorr_cpu;
	int rc = ARRAY_GROW(*a, *n, *cap, 1024, "reading correlation ids");
	if (!rc)
		(*a)[(*n)++] = (struct corr_end){ corr, ts, lane };
	return rc;
}

static int cmp_corr(const void *a, const void *b)
{
	const struct corr_end *x = a, *y = b;
	if (x->corr != y->corr)
		return x->corr < y->corr ? -1 : 1;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* The index of `corr` in the n correlation ids of `d` (sorted by id), −1 when none has it. */
static int corr_find(const struct corr_end *d, int n, int64_t corr)
{
	int lo = 0, hi = n;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		if (d[mid].corr < corr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && d[lo].corr == corr ? lo : -1;
}

/* Launches the file does not link, linked by their correlation ids as Holistic Trace Analysis
 * links them: each device event whose id a CPU call carries (the earliest such call, the first in
 * the file among calls at one time: a runtime call and the driver call inside it carry one id)
 * gets a link when the file has no launch links at all (Kineto writes none in sampled or trimmed
 * traces), or when the file's links name its id but none starts (their ids are the correlation
 * ids; the start was lost: ROCm traces miss it for about a third of their launches). A device
 * event the file links itself, or whose id its links do not use, is left as the file has it. Each
 * pair gets an id of its own (above the file's: a graph launch's one id runs many kernels), in the
 * order of the device events' ids and times.
 * Memory: the device events are sorted (their order gives the links' ids) and those that can get
 * no link dropped before the CPU calls are read once, in file order, each against the few left. */
static int corr_links(struct kin *k)
{
	if (!k->ncorr_cpu || !k->ncorr_dev)
		return 0;
	qsort(k->corr_dev, (size_t)k->ncorr_dev, sizeof *k->corr_dev, cmp_corr);
	int nd = k->ncorr_dev;
	if (k->launch_flows) {   /* keep the device events whose id the links name by ends only */
		unsigned char *seen = calloc((size_t)nd, 1);   /* 1: an end names the id; 2: a start does */
		if (!seen)
			return ascent_error(ASCENT_ENOMEM, "out of memory linking launches by correlation id");
		for (int i = 0; i < k->nlflow_end; i++) {
			int j = corr_find(k->corr_dev, nd, k->lflow_end[i]);
			if (j >= 0)
				seen[j] |= 1;
		}
		for (int i = 0; i < k->nlflow_start; i++) {
			int j = corr_find(k->corr_dev, nd, k->lflow_start[i]);
			if (j >= 0)
				seen[j] |= 2;
		}
		int n = 0;
		for (int j = 0; j < nd; j++) {
			if (j > 0 && k->corr_dev[j].corr == k->corr_dev[j - 1].corr)
				seen[j] = seen[j - 1];   /* corr_find marks a run's first: the run shares it */
			if (seen[j] == 1)
				k->corr_dev[n++] = k->corr_dev[j];
		}
		free(seen);
		nd = n;
	}
	free(k->lflow_start);
	free(k->lflow_end);
	k->lflow_start = k->lflow_end = NULL;
	k->nlflow_start = k->nlflow_end = 0;
	/* the earliest CPU call of each id left (the first in the file at equal times) */
	int nu = 0;
	for (int j = 0; j < nd; j++)
		if (!j || k->corr_dev[j].corr != k->corr_dev[j - 1].corr)
			nu++;
	struct corr_end *first = nu ? malloc((size_t)nu * sizeof *first) : NULL;
	unsigned char *found = nu ? calloc((size_t)nu, 1) : NULL;
	if (nu && (!first || !found)) {
		free(first);
		free(found);
		return ascent_error(ASCENT_ENOMEM, "out of memory linking launches by correlation id");
	}
	for (int j = 0, u = 0; j < nd; j++)
		if (!j || k->corr_dev[j].corr != k->corr_dev[j - 1].corr)
			first[u++].corr = k->corr_dev[j].corr;
	for (int i = 0; i < k->ncorr_cpu; i++) {
		const struct corr_end *c = &k->corr_cpu[i];
		int u = corr_find(first, nu, c->corr);
		if (u >= 0 && (!found[u] || c->ts < first[u].ts)) {
			first[u] = *c;
			found[u] = 1;
		}
	}
	int64_t id = k->next_id;
	int rc = 0;
	for (int j = 0, u = -1; j < nd && !rc; j++) {
		const struct corr_end *d = &k->corr_dev[j];
		if (!j || d->corr != k->corr_dev[j - 1].corr)
			u++;
		if (!found[u])
			continue;
		if (id == INT64_MAX)
			break;   /* no id left: the file's links end at the largest id there is */
		rc = imp_flow(k->im, DB_FLOW_LAUNCH, id, 1, first[u].lane, first[u].ts);
		if (!rc)
			rc = imp_flow(k->im, DB_FLOW_LAUNCH, id, 0, d->lane, d->ts);
		id++;
	}
	free(first);
	free(found);
	k->next_id = id;
	return rc;
}

/* The first id of ascent's own links: above every id of the file's. */
static int64_t own_ids_start(const struct kin *k)
{
	return k->lflow_next;
}

static int cmp_ts(const void *a, const void *b)
{
	const struct corr_end *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/* CUPTI range profiling writes each profiled kernel as a cuda_profiler_range event carrying its
 * counters, with no correlation id and no launch link: Holistic Trace Analysis pairs the n-th such
 * range with the n-th cudaLaunchKernel call in time order, and so does ascent, with a launch link
 * from the call to the range (the operators open at the call are the kernel's). When the two counts
 * differ the pairing would be wrong: none is made, and the counters stay without their operators. */
static int counter_links(struct kin *k)
{
	if (!k->ncnt_range)
		return 0;
	if (k->ncnt_range != k->ncnt_launch) {
		char b[200];
		snprintf(b, sizeof b, "%d cuda_profiler_range events, %d " COUNTER_LAUNCH_NAME " calls", k->ncnt_range,
			 k->ncnt_launch);
		imp_warn(k->im, IMP_W_COUNTER_PAIRS, b);
		return 0;
	}
	qsort(k->cnt_range, (size_t)k->ncnt_range, sizeof *k->cnt_range, cmp_ts);
	qsort(k->cnt_launch, (size_t)k->ncnt_launch, sizeof *k->cnt_launch, cmp_ts);
	int rc = 0;
	for (int i = 0; i < k->ncnt_range && !rc && k->next_id < INT64_MAX; i++, k->next_id++) {
		rc = imp_flow(k->im, DB_FLOW_LAUNCH, k->next_id, 1, k->cnt_launch[i].lane, k->cnt_launch[i].ts);
		if (!rc)
			rc = imp_flow(k->im, DB_FLOW_LAUNCH, k->next_id, 0, k->cnt_range[i].lane, k->cnt_range[i].ts);
	}
	return rc;
}

/* Keep a counter range or a kernel launch call for counter_links. */
static int counter_keep(struct kin *k, int range, uint64_t lane, int64_t ts)
{
	struct corr_end **a = range ? &k->cnt_range : &k->cnt_launch;
	int *n = range ? &k->ncnt_range : &k->ncnt_launch, *cap = range ? &k->capcnt_range : &k->capcnt_launch;
	int rc = ARRAY_GROW(*a, *n, *cap, 256, "reading CUPTI counter ranges");
	if (!rc)
		(*a)[(*n)++] = (struct corr_end){ 0, ts, lane };
	return rc;
}

/* The lane of a device event of a category that has one of its own (DEV_LANE_ANNOT, _COUNTERS):
 * made on first use and remembered for name_lanes. */
static int own_lane(struct kin *k, uint64_t stream_key, int what, int device, int stream, uint64_t *key, int *tid)
{
	static const struct text none = { 0 };
	if (what == DEV_LANE_COUNTERS) {   /* one lane per device */
		*key = lane_key(&k->f[F_PID], &none) ^ 0x63757074ULL;   /* "cupt" */
		stream = DB_STREAM_COUNTERS;
	} else {
		*key = stream_key ^ 0x616e6e6f74ULL;   /* "annot" */
	}
	int rc = imp_lane(k->im, *key, device, stream, 0, tid);
	for (int i = 0; !rc && i < k->nown; i++)
		if (k->own[i].tid == *tid)
			return 0;
	if (!rc && (rc = ARRAY_GROW(k->own, k->nown, k->capown, 8, "reading device lanes")) == 0)
		k->own[k->nown++] = (struct own_lane){ stream_key, *tid, device, stream, what };
	return rc;
}

/* A complete event (X, or a begin/end pair with dur_known ≥ 0). */
static int ev_complete(struct kin *k, int64_t ts, int64_t dur_known, const char *args, size_t args_len)
{
	int64_t dur = dur_known;
	const struct npu_process *np = npu_of(k, &k->f[F_PID]);
	if (np && np->lane == NPU_LANE_NONE) {   /* torch_npu's derived rows */
		warn(k, np->skip);
		return 0;
	}
	if (dur < 0 && !k->f[F_DUR].set) {
		warn(k, IMP_W_NO_DUR);
		return 0;
	}
	if (dur < 0 && ((k->f[F_DUR].is_str && !k->npu_file) || us_to_ns(k->f[F_DUR].s, &dur) != 0)) {
		warn(k, k->f[F_DUR].is_str && !k->npu_file ? IMP_W_BAD_TYPE : IMP_W_BAD_TIME);
		return 0;
	}
	if (ts > INT64_MAX - dur) {
		warn(k, IMP_W_BAD_TIME);
		return 0;
	}
	const char *cat = txt(&k->f[F_CAT]);
	const char *name = txt(&k->f[F_NAME]);
	int rc = begin_rank(k, ts);
	if (rc)
		return rc;
	int device = -1, stream = 0;
	int npu_device = np && (np->lane == NPU_LANE_STREAM || np->lane == NPU_LANE_HCCL);
	int64_t os_tid = 0, v;
	const struct kin_cat *dc = CAT_FIND(DEVICE_CATS, cat);
	if (dc || npu_device) {
		device = parse_i64(&k->f[F_PID], &v) == 0 && v >= 0 && v < 1 << 20 ? (int)v : 0;
		stream = device_stream(&k->f[F_TID]);
		if (npu_device) {   /* one NPU: the streams of Ascend Hardware; HCCL's rows beside them */
			device = 0;
			stream = (np->lane == NPU_LANE_HCCL ? NPU_HCCL_STREAMS : 0) + (stream >= 0 && stream < NPU_HCCL_STREAMS ? stream : 0);
		}
	} else if (parse_i64(&k->f[F_TID], &v) == 0) {
		os_tid = v;
	}
	int tid;
	uint64_t key = ev_lane_key(k, np);
	int dlane = dc && !np ? dev_lane_of(cat) : DEV_LANE_STREAM;
	if (dlane != DEV_LANE_STREAM)
		rc = own_lane(k, ev_lane_key(k, np), dlane, device, stream, &key, &tid);
	else
		rc = imp_lane(k->im, key, device, stream, os_tid, &tid);
	if (rc)
		return rc;
	struct imp_event e = { .kind = DB_KIND_RANGE, .tid = tid, .start_ns = ts, .dur_ns = dur, .name = name,
			       .step = -1, .args = k->has_args ? args : NULL, .args_len = k->has_args ? args_len : 0 };
	struct imp_collective c = { .peer = -1 };
	int *members = NULL;
	char coll_type[256];
	if (np && !np->by_category) {   /* torch_npu's processes: import/npu.h's table */
		e.kind = np->kind;
		if (np->by_task_type) {
			int known;
			e.kind = npu_task_kind(name, k->a[A_TASK_TYPE].set ? k->a[A_TASK_TYPE].s : NULL, &known);
			if (!known && !k->prescan) {
				char b[200];
				snprintf(b, sizeof b, "event %" PRId64 " of traceEvents (Task Type '%.100s')", k->ev_index,
					 k->a[A_TASK_TYPE].set ? k->a[A_TASK_TYPE].s : "");
				imp_warn(k->im, IMP_W_TASK_TYPE, b);
			}
		} else if (np->lane == NPU_LANE_HCCL && starts(name, "hcom_")) {
			/* an HCCL collective: named by its type, as the database export's opType; the
			 * operator's own name kept in args as "op name" */
			e.kind = DB_KIND_COMM;
			npu_collective_type(name, coll_type, sizeof coll_type);
			e.name = coll_type;
			if ((rc = args_with_op_name(k, name, &e)) != 0)
				return rc;
		}
	} else if (device >= 0) {
		if (dc)
			e.kind = dc->kind == DB_KIND_KERNEL && is_comm_kernel(name) ? DB_KIND_COMM : dc->kind;
		if ((e.kind == DB_KIND_MEMCPY || e.kind == DB_KIND_MEMSET) && parse_i64(&k->a[A_BYTES], &v) == 0 && v > 0)
			e.bytes = v;
	} else if (starts(name, "ProfilerStep#")) {
		char *end;
		long long st = strtoll(name + 13, &end, 10);
		if (*end == 0 && end != name + 13 && st >= 0) {
			e.kind = DB_KIND_STEP;
			e.step = st;
		}
	} else if (!strcmp(cat, "step") && parse_i64(&k->a[A_STEP], &v) == 0 && v >= 0) {
		e.kind = DB_KIND_STEP;   /* ascent's own export */
		e.step = v;
	} else if (!strcmp(cat, "user_annotation") && starts(name, "gloo:")) {
		e.kind = DB_KIND_COMM;   /* gloo's own range around a CPU collective: it launches no kernel */
	} else if (CAT_FIND(CPU_CATS, cat)) {
		e.kind = CAT_FIND(CPU_CATS, cat)->kind;
	} else if (ascent_cpu_kind(cat) >= 0) {
		e.kind = ascent_cpu_kind(cat);
		if (e.kind == DB_KIND_WAIT && starts(name, DB_WAIT_PREFIX))   /* "wait: allreduce" */
			e.name = name + strlen(DB_WAIT_PREFIX);
		if ((e.kind == DB_KIND_P2P || e.kind == DB_KIND_WAIT) && parse_i64(&k->a[A_BYTES], &v) == 0 && v > 0)
			e.bytes = v;
	} else if (!np && !k->prescan) {   /* kept as a range, and counted */
		char b[200];
		snprintf(b, sizeof b, "event %" PRId64 " of traceEvents (category '%.100s')", k->ev_index, cat);
		imp_warn(k->im, IMP_W_CATEGORY, b);
	}
	if (e.kind == DB_KIND_COMM) {
		int64_t in = 0, out = 0, count;
		int have_in = parse_i64(&k->a[A_IN_N], &in) == 0, have_out = parse_i64(&k->a[A_OUT_N], &out) == 0;
		int ds = k->a[A_DTYPE].set ? dtype_size(k->a[A_DTYPE].s) : 0;
		int64_t ne = in > out ? in : out;
		if ((have_in || have_out) && ds > 0 && ne >= 0 && ne < INT64_MAX / 16)
			c.bytes = ne * ds;
		if (k->a[A_PG_NAME].set)
			c.group = k->a[A_PG_NAME].s;
		if (k->a[A_PG_DESC].set)
			c.group_desc = k->a[A_PG_DESC].s;
		if (k->a[A_PG_RANKS].set) {
			int n = parse_ranks(k->a[A_PG_RANKS].s, &members);
			if (n > 0) {
				c.members = members;
				c.nmembers = n;
			}
		}
		if (!c.nmembers && parse_i64(&k->a[A_GROUP_SIZE], &v) == 0 && v > 0 && v < 1 << 24)
			c.nmembers = (int)v;
		if (!c.bytes && parse_i64(&k->a[A_BYTES], &v) == 0 && v > 0 && v < INT64_MAX / 16)
			c.bytes = v;   /* ascent's own export: the collective's bytes */
		int hs = np && k->a[A_HCCL_DTYPE].set ? npu_dtype_size(k->a[A_HCCL_DTYPE].s) : 0;
		if (!c.bytes && hs > 0 && parse_i64(&k->a[A_HCCL_COUNT], &count) == 0 && count > 0 && count < INT64_MAX / 16)
			c.bytes = count * hs;   /* HCCL: count elements of data_type */
		e.coll = &c;
	}
	rc = imp_event(k->im, &e);
	free(members);
	if (!rc && !np && !k->prescan && imp_event_stored(k->im) && parse_i64(&k->a[A_CORR], &v) == 0 && v > 0)
		rc = corr_keep(k, device >= 0, v, key, ts);
	if (!rc && !np && !k->prescan && imp_event_stored(k->im)) {
		if (dlane == DEV_LANE_COUNTERS)
			rc = counter_keep(k, 1, key, ts);
		else if (device < 0 && !strcmp(cat, COUNTER_LAUNCH_CAT) && starts(name, COUNTER_LAUNCH_NAME))
			rc = counter_keep(k, 0, key, ts);
	}
	return rc;
}

static int ev_instant(struct kin *k, int64_t ts)
{
	if (!strcmp(txt(&k->f[F_NAME]), "[memory]")) {
		int64_t bytes, total, dtype = 1, did = 0;
		int has_total = k->a[A_TOTAL_ALLOC].set;
		if (parse_i64(&k->a[A_MBYTES], &bytes) != 0 || (has_total && parse_i64(&k->a[A_TOTAL_ALLOC], &total) != 0)) {
			warn(k, IMP_W_BAD_TYPE);
			return 0;
		}
		parse_i64(&k->a[A_DEV_TYPE], &dtype);
		parse_i64(&k->a[A_DEV_ID], &did);
		int device = dtype == 0 ? -1 : (int)(did & 0xffff);
		if (!has_total) {   /* in use: the file's allocations less its frees so far, on this device */
			int i = 0;
			while (i < k->nmem_sum && k->mem_sum[i].device != device)
				i++;
			if (i == 16) {
				warn(k, IMP_W_BAD_TYPE);
				return 0;
			}
			if (i == k->nmem_sum)
				k->mem_sum[k->nmem_sum++].device = device;
			if (bytes < -INT64_MAX / 2 || bytes > INT64_MAX / 2 || k->mem_sum[i].in_use > INT64_MAX / 2) {
				warn(k, IMP_W_BAD_TYPE);
				return 0;
			}
			total = k->mem_sum[i].in_use += bytes;
		}
		int rc = begin_rank(k, ts);
		return rc ? rc : imp_mem(k->im, ts, bytes, total, device);
	}
	if (!strcmp(txt(&k->f[F_S]), "g"))   /* global markers (Iteration Start, Record Window End) carry no data */
		return 0;
	warn(k, IMP_W_INSTANT);
	return 0;
}

static int ev_flow(struct kin *k, int64_t ts, char ph)
{
	const char *cat = txt(&k->f[F_CAT]);
	const struct kin_cat *fc = CAT_FIND(FLOW_CATS, cat);
	int kind = fc ? fc->kind : -1;
	int npu_kind = k->npu_file && kind < 0 ? npu_flow_kind(cat) : -2;   /* torch_npu's link categories */
	if (npu_kind == -1) {
		warn(k, IMP_W_LINK_KIND);
		return 0;
	}
	if (npu_kind >= 0)
		kind = npu_kind;
	if (kind < 0 || ph == 't') {
		warn(k, IMP_W_FLOW_CAT);
		return 0;
	}
	int64_t id;
	if (!k->f[F_ID].set) {
		warn(k, IMP_W_BAD_TYPE);
		return 0;
	}
	if (parse_i64(&k->f[F_ID], &id) != 0)
		id = (int64_t)fnv(k->f[F_ID].s, k->f[F_ID].n, 1469598103934665603ULL);
	int rc = 0;
	if (kind == DB_FLOW_LAUNCH) {   /* corr_links: which launches the file links itself */
		k->launch_flows++;
		if (!k->npu_file && ph == 's' &&
		    (rc = ARRAY_GROW(k->lflow_start, k->nlflow_start, k->caplflow_start, 1024, "reading links")) == 0)
			k->lflow_start[k->nlflow_start++] = id;
		else if (!k->npu_file && ph != 's' &&
			 (rc = ARRAY_GROW(k->lflow_end, k->nlflow_end, k->caplflow_end, 1024, "reading links")) == 0)
			k->lflow_end[k->nlflow_end++] = id;
		if (!k->npu_file && id >= k->lflow_next)
			k->lflow_next = id == INT64_MAX ? INT64_MAX : id + 1;
	}
	if (!rc)
		rc = begin_rank(k, ts);
	return rc ? rc : imp_flow(k->im, kind, id, ph == 's', ev_lane_key(k, npu_of(k, &k->f[F_PID])), ts);
}

static uint64_t async_key(const struct kin *k)
{
	uint64_t h = pid_key(&k->f[F_PID]);
	h = fnv(txt(&k->f[F_CAT]), strlen(txt(&k->f[F_CAT])), h);
	h = fnv("\x1f", 1, h);
	h = fnv(txt(&k->f[F_ID]), strlen(txt(&k->f[F_ID])), h);
	h = fnv("\x1f", 1, h);
	return fnv(txt(&k->f[F_NAME]), strlen(txt(&k->f[F_NAME])), h);
}

/* Begin/end pairs become complete events: b/e (async, matched by pid, cat, id and name) and B/E
 * (a thread's ranges, each E closing the innermost open B). A begin never ended is dropped and
 * counted; so is an end without a begin. */
static int ev_pair(struct kin *k, int64_t ts, char p, const char *args, size_t args_len)
{
	int sync = p == 'B' || p == 'E';
	uint64_t key = sync ? lane_key(&k->f[F_PID], &k->f[F_TID]) : async_key(k);
	if (p == 'b' || p == 'B') {
		if (!sync && !k->f[F_NAME].set) {
			warn(k, IMP_W_NO_NAME);
			return 0;
		}
		if (k->nopen == k->capopen) {
			int nc = k->capopen ? k->capopen * 2 : 16;
			struct open_range *o = realloc(k->open, (size_t)nc * sizeof *o);
			if (!o)
				return ascent_error(ASCENT_ENOMEM, "out of memory");
			k->open = o;
			k->capopen = nc;
		}
		struct open_range *o = &k->open[k->nopen];
		*o = (struct open_range){ .key = key, .sync = sync, .ts = ts };
		if (sync && (!(o->name = strdup(txt(&k->f[F_NAME]))) || !(o->cat = strdup(txt(&k->f[F_CAT]))))) {
			free(o->name);
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		}
		k->nopen++;
		return 0;
	}
	int i = k->nopen - 1;
	while (i >= 0 && !(k->open[i].key == key && k->open[i].sync == sync))
		i--;
	if (i < 0 || ts < k->open[i].ts) {
		warn(k, IMP_W_PHASE);
		return 0;
	}
	struct open_range o = k->open[i];
	memmove(&k->open[i], &k->open[i + 1], (size_t)(k->nopen - i - 1) * sizeof *k->open);
	k->nopen--;
	int rc = 0;
	if (sync) {   /* the E has no name: the B's */
		if ((o.name && *o.name && text_set(&k->f[F_NAME], o.name, strlen(o.name), 1)) ||
		    (o.cat && text_set(&k->f[F_CAT], o.cat, strlen(o.cat), 1)))
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		if (!rc && !k->f[F_NAME].set)
			warn(k, IMP_W_NO_NAME);
		else if (!rc)
			rc = ev_complete(k, o.ts, ts - o.ts, args, args_len);
	} else {
		rc = ev_complete(k, o.ts, ts - o.ts, args, args_len);
	}
	free(o.name);
	free(o.cat);
	return rc;
}

static int ev_done(struct kin *k, const char *args, size_t args_len)
{
	const struct text *ph = &k->f[F_PH];
	if (k->bad_type || (ph->set && !ph->is_str) || (k->f[F_NAME].set && !k->f[F_NAME].is_str) ||
	    (k->f[F_CAT].set && !k->f[F_CAT].is_str) || (k->f[F_TS].set && k->f[F_TS].is_str && !k->npu_file)) {
		/* torch_npu's trace_view.json (it names the Ascend processes) writes ts and dur as strings */
		warn(k, IMP_W_BAD_TYPE);
		return 0;
	}
	if (!ph->set || ph->n != 1) {
		warn(k, IMP_W_PHASE);
		return 0;
	}
	char p = ph->s[0];
	if (p == 'M')
		return ev_metadata(k);
	if (k->prescan)
		return 0;
	if (!strchr("XiIsftbeBE", p)) {
		warn(k, IMP_W_PHASE);
		return 0;
	}
	int64_t ts;
	if (!k->f[F_TS].set || us_to_ns(k->f[F_TS].s, &ts) != 0) {
		warn(k, IMP_W_BAD_TIME);
		return 0;
	}
	if (p == 'X') {
		if (!k->f[F_NAME].set) {
			warn(k, IMP_W_NO_NAME);
			return 0;
		}
		return ev_complete(k, ts, -1, args, args_len);
	}
	if (p == 'b' || p == 'e' || p == 'B' || p == 'E')
		return ev_pair(k, ts, p, args, args_len);
	if (p == 'i' || p == 'I')
		return ev_instant(k, ts);
	return ev_flow(k, ts, p);
}

/* ---------------------------------------------------------------------------------------- */
/* distributedInfo (captured as JSON text, parsed with cJSON: it is small) */

static int dist_done(struct kin *k, const char *json, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(json, len);
	if (!j)
		return 0;
	cJSON *r = cJSON_GetObjectItemCaseSensitive(j, "rank");
	cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "world_size");
	cJSON *b = cJSON_GetObjectItemCaseSensitive(j, "backend");
	if (cJSON_IsNumber(r) && r->valuedouble >= 0 && r->valuedouble < 1e6) {
		if (k->rank_started && (int)r->valuedouble != imp_rank_current(k->im))
			imp_warn(k->im, IMP_W_LATE_RANK, "distributedInfo");
		else
			k->dist_rank = (int)r->valuedouble;
	}
	if (cJSON_IsNumber(w) && w->valuedouble > 0 && w->valuedouble < 1e7)
		k->world_size = (int)w->valuedouble;
	if (cJSON_IsString(b))
		snprintf(k->backend, sizeof k->backend, "%s", b->valuestring);
	int rc = 0;
	cJSON *pgs = cJSON_GetObjectItemCaseSensitive(j, "pg_config"), *pg;
	if (cJSON_IsArray(pgs)) {
		cJSON_ArrayForEach(pg, pgs)
		{
			cJSON *nm = cJSON_GetObjectItemCaseSensitive(pg, "pg_name");
			cJSON *ds = cJSON_GetObjectItemCaseSensitive(pg, "pg_desc");
			cJSON *rk = cJSON_GetObjectItemCaseSensitive(pg, "ranks");
			cJSON *sz = cJSON_GetObjectItemCaseSensitive(pg, "pg_size");
			if (!cJSON_IsString(nm))
				continue;
			int *m = NULL, n = 0;
			if (cJSON_IsArray(rk)) {
				char *t = cJSON_PrintUnformatted(rk);
				n = t ? parse_ranks(t, &m) : -1;
				free(t);
			}
			if (n <= 0 && cJSON_IsNumber(sz) && sz->valuedouble > 0 && sz->valuedouble < 1e7)
				n = (int)sz->valuedouble;
			rc = imp_group(k->im, nm->valuestring, cJSON_IsString(ds) ? ds->valuestring : NULL, m, n > 0 ? n : 0);
			free(m);
			if (rc)
				break;
		}
	}
	cJSON_Delete(j);
	return rc;
}

/* ---------------------------------------------------------------------------------------- */
/* yajl callbacks */

static void cap_finish(struct kin *k)
{
	if (k->cap == C_DIST && !k->rc && !k->g.bad)
		k->rc = dist_done(k, k->g.s, k->g.n);
	if (k->cap == C_ARGS)
		k->has_args = 1;   /* kept in the generator until the event ends */
	k->cap = C_NONE;
}

static void set_arg(struct kin *k, const char *s, size_t n, int is_str)
{
	if (k->cap == C_ARGS && k->depth == k->cap_depth && k->arg_key >= 0) {
		if (text_set(&k->a[k->arg_key], s, n, is_str))
			k->rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	}
}

/* A string at depth 2..HOST_DEPTH of the top object: the host when its key path is one of HOST_PATHS
 * preferred to the one found so far. */
static void host_value(struct kin *k, const char *s, size_t n)
{
	char path[(HOST_DEPTH + 1) * 32] = "";
	for (int d = 1; d <= k->depth; d++) {
		if (!k->hkey[d][0])
			return;   /* inside an array, or a key too long for any path */
		size_t l = strlen(path);
		snprintf(path + l, sizeof path - l, "%s%s", d > 1 ? "/" : "", k->hkey[d]);
	}
	for (int i = 0; i < k->host_at; i++)
		if (!strcmp(path, HOST_PATHS[i]) && n > 0 && n < sizeof k->host && !memchr(s, 0, n)) {
			memcpy(k->host, s, n);
			k->host[n] = 0;
			k->host_at = i;
			return;
		}
}

/* "{worker}.{timestamp}.pt.trace.json[.gz]", the worker "{host}_{pid}": the timestamp ≥ 13 digits
 * (ms since the epoch, or time_ns), the pid 1-10 digits after the worker's last '_', the host the
 * rest ("node-1.cluster_a_4037.…" → "node-1.cluster_a"). */
int imp_kineto_host_from_name(const char *path, char *host, size_t len)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	static const char *const TAILS[] = { ".pt.trace.json.gz", ".pt.trace.json" };
	size_t t = 0;
	for (int i = 0; i < 2 && !t; i++) {
		size_t l = strlen(TAILS[i]);
		if (n > l && !strcmp(b + n - l, TAILS[i]))
			t = l;
	}
	if (!t)
		return 0;
	n -= t;   /* "{host}_{pid}.{timestamp}" */
	size_t e = n, d = 0;
	while (e > 0 && b[e - 1] >= '0' && b[e - 1] <= '9')
		e--, d++;
	if (d < 13 || e == 0 || b[e - 1] != '.')
		return 0;
	n = e - 1;   /* "{host}_{pid}" */
	e = n, d = 0;
	while (e > 0 && b[e - 1] >= '0' && b[e - 1] <= '9')
		e--, d++;
	if (d < 1 || d > 10 || e < 2 || b[e - 1] != '_')
		return 0;
	n = e - 1;   /* "{host}" */
	if (n >= len)
		return 0;
	memcpy(host, b, n);
	host[n] = 0;
	return 1;
}

/* A scalar value: into the capture, the event's field, or the top level. */
static int scalar(struct kin *k, const char *s, size_t n, int is_str)
{
	k->tokens++;
	if (k->cap != C_NONE) {
		set_arg(k, s, n, is_str);
		return !k->rc;
	}
	if (k->ev_depth && k->depth == k->ev_depth) {
		if (k->field != F_NONE && text_set(&k->f[k->field], s, n, is_str))
			k->rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		return !k->rc;
	}
	if (k->events_depth && k->depth == k->events_depth) {   /* a scalar where an event should be */
		k->ev_index++;
		warn(k, IMP_W_BAD_TYPE);
		return 1;
	}
	if (k->top == 1 && is_str && !k->ev_depth && k->depth >= 2 && k->depth <= HOST_DEPTH)
		host_value(k, s, n);
	if (k->top == 1 && k->depth == 1 && k->topkey_known) {
		if (!strcmp(k->topkey, "baseTimeNanoseconds") && !is_str) {
			char b[32];
			snprintf(b, sizeof b, "%.*s", (int)(n < 31 ? n : 31), s);
			char *end;
			long long v = strtoll(b, &end, 10);
			if (!*end && v > 0)
				k->base_ns = v;
		}
		if (!strcmp(k->topkey, "traceEvents"))   /* traceEvents that is not an array */
			k->saw_events = -1;
		if (!strcmp(k->topkey, "traceName") && is_str && n == 6 && !memcmp(s, "ascent", 6))
			k->rank_by_pid = 1;   /* ascent's own export: the ranks of a profile, pid = rank */
	}
	if (k->top == 0) {
		k->top = 3;   /* a bare scalar document */
	}
	return 1;
}

static int cb_null(void *ctx)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE)
		jw_raw(&k->g, "null", 4);
	return scalar(k, "null", 4, 0);
}

static int cb_bool(void *ctx, int b)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE)
		jw_raw(&k->g, b ? "true" : "false", b ? 4 : 5);
	return scalar(k, b ? "true" : "false", b ? 4 : 5, 0);
}

static int cb_number(void *ctx, const char *s, size_t n)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE)
		jw_raw(&k->g, s, n);
	return scalar(k, s, n, 0);
}

static int cb_string(void *ctx, const unsigned char *s, size_t n)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE)
		jw_string(&k->g, s, n);
	return scalar(k, (const char *)s, n, 1);
}

static void ev_reset(struct kin *k)
{
	for (int i = 0; i < F_COUNT; i++)
		k->f[i].set = 0;
	for (int i = 0; i < A_COUNT; i++)
		k->a[i].set = 0;
	k->bad_type = 0;
	k->has_args = 0;
	k->field = F_NONE;
	jw_reset(&k->g);
}

static int cb_start_map(void *ctx)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE) {
		jw_open(&k->g, 1);
		if (k->depth == k->cap_depth && k->arg_key >= 0)   /* a known arg that is not a scalar */
			k->arg_key = -1;
		k->depth++;
		return 1;
	}
	k->depth++;
	if (k->depth <= HOST_DEPTH)
		k->hkey[k->depth][0] = 0;   /* until its first key */
	if (k->depth == 1) {
		k->top = 1;
		k->prescan_stop = k->prescan;   /* Kineto's object form: no first pass needed */
		return !k->prescan;
	}
	if (k->events_depth && k->depth == k->events_depth + 1) {
		k->ev_depth = k->depth;
		k->ev_index++;
		ev_reset(k);
		return 1;
	}
	if (k->ev_depth && k->depth == k->ev_depth + 1 && k->field == F_NONE && k->arg_key == -2) {
		/* "args": capture it */
		k->cap = C_ARGS;
		k->cap_depth = k->depth;
		k->arg_key = -1;
		jw_open(&k->g, 1);
		return 1;
	}
	if (k->ev_depth && k->depth == k->ev_depth + 1 && k->field != F_NONE)
		k->bad_type = 1;   /* ph, name, ts, ... as an object */
	if (k->top == 1 && k->depth == 2 && k->topkey_known && !strcmp(k->topkey, "distributedInfo")) {
		jw_reset(&k->g);
		k->cap = C_DIST;
		k->cap_depth = k->depth;
		k->arg_key = -1;
		jw_open(&k->g, 1);
	}
	if (k->top == 1 && k->depth == 2 && k->topkey_known && !strcmp(k->topkey, "traceEvents"))
		k->saw_events = -1;
	return 1;
}

static int cb_map_key(void *ctx, const unsigned char *s, size_t n)
{
	struct kin *k = ctx;
	k->tokens++;
	if (k->cap != C_NONE) {
		jw_string(&k->g, s, n);
		if (k->depth == k->cap_depth)
			k->arg_key = find_key(ARG, A_COUNT, s, n);
		return 1;
	}
	if (k->ev_depth && k->depth == k->ev_depth) {
		k->field = F_NONE;
		k->arg_key = -1;
		if (n == 4 && !memcmp(s, "args", 4)) {
			k->arg_key = -2;   /* the next map is the args */
			return 1;
		}
		int f = find_key(FIELD, F_COUNT, s, n);
		k->field = f < 0 ? F_NONE : (enum field)f;
		return 1;
	}
	if (k->top == 1 && !k->ev_depth && k->depth >= 1 && k->depth <= HOST_DEPTH) {
		int fits = n < sizeof k->hkey[0];
		memcpy(k->hkey[k->depth], s, fits ? n : 0);
		k->hkey[k->depth][fits ? n : 0] = 0;
	}
	if (k->top == 1 && k->depth == 1) {
		k->topkey_known = n < sizeof k->topkey;
		if (k->topkey_known) {
			memcpy(k->topkey, s, n);
			k->topkey[n] = 0;
		}
	}
	return 1;
}

static int cb_end_map(void *ctx)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE) {
		jw_close(&k->g, 1);
		k->depth--;
		if (k->depth < k->cap_depth)
			cap_finish(k);
		return !k->rc;
	}
	if (k->ev_depth && k->depth == k->ev_depth) {
		const char *buf = NULL;
		size_t len = 0;
		if (k->has_args && !k->g.bad) {
			buf = k->g.s;
			len = k->g.n;
		} else {
			k->has_args = 0;
		}
		k->rc = ev_done(k, buf, len);
		k->ev_depth = 0;
		k->field = F_NONE;
	}
	k->depth--;
	return !k->rc;
}

static int cb_start_array(void *ctx)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE) {
		jw_open(&k->g, 0);
		if (k->depth == k->cap_depth && k->arg_key >= 0)
			k->arg_key = -1;
		k->depth++;
		return 1;
	}
	k->depth++;
	if (k->depth <= HOST_DEPTH)
		k->hkey[k->depth][0] = 0;   /* an array's items have no key: no host path goes through it */
	if (k->depth == 1) {
		k->top = 2;
		k->events_depth = 1;
		k->saw_events = 1;
		return 1;
	}
	if (k->top == 1 && k->depth == 2 && k->topkey_known && !strcmp(k->topkey, "traceEvents")) {
		k->events_depth = 2;
		k->saw_events = 1;
		return 1;
	}
	if (k->ev_depth && k->depth == k->ev_depth + 1 && k->field != F_NONE)
		k->bad_type = 1;
	if (k->events_depth && k->depth == k->events_depth + 1) {   /* an array where an event should be */
		k->ev_index++;
		warn(k, IMP_W_BAD_TYPE);
	}
	return 1;
}

static int cb_end_array(void *ctx)
{
	struct kin *k = ctx;
	if (k->cap != C_NONE) {
		jw_close(&k->g, 0);
		k->depth--;
		return 1;
	}
	if (k->events_depth && k->depth == k->events_depth)
		k->events_depth = 0;
	k->depth--;
	return 1;
}

static const yajl_callbacks CALLBACKS = { cb_null, cb_bool, NULL, NULL, cb_number, cb_string, cb_start_map,
					  cb_map_key, cb_end_map, cb_start_array, cb_end_array };

/* ---------------------------------------------------------------------------------------- */
/* driving the parser */

typedef long (*read_fn)(void *src, unsigned char *buf, size_t n, const char **err, int64_t *stored_pos);
typedef int (*rewind_fn)(void *src);   /* back to the first byte: 0, or −1 */

static int parse_error(struct kin *k, yajl_handle h, const unsigned char *chunk, size_t len)
{
	if (k->rc)
		return k->rc;
	if (k->offset == 0 && len >= 16 && !memcmp(chunk, "SQLite format 3", 16))
		return ascent_error(ASCENT_EINPUT, "'%s' is an SQLite database read as a stream (a pipe or FIFO): SQLite "
				    "needs a regular file it can seek in (copy it to one first)", k->path);
	unsigned char *msg = yajl_get_error(h, 0, chunk, len);
	size_t at = yajl_get_bytes_consumed(h);
	for (unsigned char *p = msg; p && *p; p++)   /* one line */
		if (*p == '\n')
			*p = *(p + 1) ? ' ' : 0;
	int rc = ascent_error(ASCENT_EINPUT, "'%s': byte %" PRId64 ": not valid JSON (%s); is it a complete PyTorch "
			      "profiler trace?", k->path, k->offset + (int64_t)at, msg ? (const char *)msg : "?");
	yajl_free_error(h, msg);
	return rc;
}

static int run(struct kin *k, read_fn rd, void *src)
{
	yajl_handle h = yajl_alloc(&CALLBACKS, NULL, k);
	size_t chunk = CHUNK;
	unsigned char *buf = malloc(chunk);
	if (!h || !buf) {
		if (h)
			yajl_free(h);
		free(buf);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int rc = 0;
	for (;;) {
		/* yajl scans a token that spans chunks again from its start with every chunk: a chunk in
		 * which no token ended (inside a 100 MB name) doubles the next one, so a long token costs
		 * a few scans of itself, not one per chunk */
		int64_t tokens = k->tokens;
		const char *err = NULL;
		int64_t pos = 0;
		long n = rd(src, buf, chunk, &err, &pos);
		if (n < 0) {
			rc = ascent_error(ASCENT_EINPUT, "'%s': byte %" PRId64 " of the JSON text: cannot read on: %s (a "
					  "truncated or damaged .gz file?)", k->path, k->offset, err ? err : "read error");
			break;
		}
		if (n == 0 && k->offset == 0) {
			rc = ascent_error(ASCENT_EINPUT, "'%s': byte 0: the file is empty, no JSON text (not a trace)", k->path);
			break;
		}
		if (n == 0) {
			if (yajl_complete_parse(h) != yajl_status_ok)
				rc = k->rc ? k->rc
					   : ascent_error(ASCENT_EINPUT, "'%s': byte %" PRId64 ": the JSON ends early (a "
							  "truncated trace?)", k->path, k->offset);
			break;
		}
		if (yajl_parse(h, buf, (size_t)n) != yajl_status_ok) {
			if (!k->prescan_stop)
				rc = parse_error(k, h, buf, (size_t)n);
			break;
		}
		k->offset += n;
		if (!k->prescan)
			imp_progress(k->im, pos);
		if (k->tokens == tokens && (size_t)n == chunk && chunk < CHUNK_MAX) {
			unsigned char *nb = realloc(buf, chunk * 2);
			if (!nb) {
				rc = ascent_error(ASCENT_ENOMEM, "'%s': out of memory reading a %zu-byte token at byte %" PRId64,
						  k->path, chunk, k->offset);
				break;
			}
			buf = nb;
			chunk *= 2;
		} else if (k->tokens != tokens && chunk > CHUNK) {
			chunk = CHUNK;   /* the buffer stays; reads are small again */
		}
	}
	if (k->prescan) {
		yajl_free(h);
		free(buf);
		return rc;   /* the second pass checks the rest */
	}
	if (!rc && k->rc)
		rc = k->rc;
	if (!rc && k->top != 1 && k->top != 2)
		rc = ascent_error(ASCENT_EINPUT, "'%s': not a PyTorch profiler trace: the JSON is not an object with "
				  "traceEvents nor an array of events", k->path);
	if (!rc && k->saw_events != 1)
		rc = ascent_error(ASCENT_EINPUT, "'%s': not a PyTorch profiler trace: no traceEvents array (byte %" PRId64
				  ")", k->path, k->offset);
	yajl_free(h);
	free(buf);
	return rc;
}

static void kin_free(struct kin *k)
{
	for (int i = 0; i < F_COUNT; i++)
		free(k->f[i].s);
	for (int i = 0; i < A_COUNT; i++)
		free(k->a[i].s);
	for (int i = 0; i < k->nmeta; i++)
		free(k->meta[i].name);
	free(k->meta);
	free(k->npu);
	free(k->g2.s);
	for (int i = 0; i < k->nopen; i++) {
		free(k->open[i].name);
		free(k->open[i].cat);
	}
	free(k->open);
	free(k->g.s);
	free(k->corr_cpu);
	free(k->corr_dev);
	free(k->lflow_start);
	free(k->lflow_end);
	free(k->cnt_range);
	free(k->cnt_launch);
	free(k->own);
}

/* Lane names from the M records, now that every lane exists. */
static int name_lanes(struct kin *k)
{
	int rc = 0;
	for (int i = 0; i < k->nmeta && !rc; i++) {
		const struct meta_name *m = &k->meta[i];
		if (!m->thread)
			continue;
		int device = -1;
		int tid = imp_lane_lookup(k->im, m->key, &device);
		if (tid < 0)
			continue;
		if (device < 0) {
			rc = imp_lane_name(k->im, tid, m->name);
			continue;
		}
		/* "gpu D stream S": Kineto's thread name ("stream 7 ", with a trailing space) trimmed */
		const char *t = m->name;
		int len = (int)strlen(t);
		while (*t == ' ')
			t++, len--;
		while (len > 0 && t[len - 1] == ' ')
			len--;
		char name[200];
		if (m->npu)   /* torch_npu's lanes: "device D [HCCL ]NAME" */
			snprintf(name, sizeof name, "device %d %s%.*s", device,
				 m->npu->lane == NPU_LANE_HCCL ? "HCCL " : "", len, t);
		else
			snprintf(name, sizeof name, "gpu %d %.*s", device, len, t);
		rc = imp_lane_name(k->im, tid, name);
	}
	/* lanes of their own: "gpu D stream S annotations" (the stream's name, as above), "gpu D counters (CUPTI)" */
	for (int i = 0; i < k->nown && !rc; i++) {
		const struct own_lane *o = &k->own[i];
		char name[240];
		if (o->what == DEV_LANE_COUNTERS) {
			snprintf(name, sizeof name, "gpu %d counters (CUPTI)", o->device);
		} else {
			const char *t = NULL;
			for (int j = 0; j < k->nmeta && !t; j++)
				if (k->meta[j].thread && k->meta[j].key == o->stream_key)
					t = k->meta[j].name;
			int len = t ? (int)strlen(t) : 0;
			while (t && *t == ' ')
				t++, len--;
			while (len > 0 && t[len - 1] == ' ')
				len--;
			if (len > 0)
				snprintf(name, sizeof name, "gpu %d %.*s annotations", o->device, len, t);
			else
				snprintf(name, sizeof name, "gpu %d stream %d annotations", o->device, o->stream);
		}
		rc = imp_lane_name(k->im, o->tid, name);
	}
	return rc;
}

/* The first pass of a bare array: torch_npu's processes, whose names come after their events. */
static int prescan(struct kin *k, read_fn rd, rewind_fn rw, void *src)
{
	struct kin p = { .im = k->im, .path = k->path, .dist_rank = -1, .field = F_NONE, .arg_key = -1, .prescan = 1,
			 .host_at = HOST_NPATHS };
	int rc = run(&p, rd, src);
	if (!rc && rw(src) != 0)
		rc = ascent_error(ASCENT_EINPUT, "'%s': cannot read the file a second time (its process names come after "
				  "its events)", k->path);
	if (!rc) {
		k->npu = p.npu;
		k->nnpu = p.nnpu;
		k->capnpu = p.capnpu;
		k->npu_file = p.npu_file;
		p.npu = NULL;
	}
	kin_free(&p);
	return rc;
}

static int kin_read(struct imp *im, const char *path, int64_t size, read_fn rd, rewind_fn rw, void *src)
{
	struct kin k = { .im = im, .path = path, .dist_rank = -1, .field = F_NONE, .arg_key = -1, .host_at = HOST_NPATHS };
	int rc = imp_file_begin(im, path, size);
	if (!rc)
		rc = prescan(&k, rd, rw, src);
	if (!rc)
		rc = run(&k, rd, src);
	k.next_id = own_ids_start(&k);
	if (!rc)
		rc = corr_links(&k);
	if (!rc)
		rc = counter_links(&k);
	if (!rc)
		rc = name_lanes(&k);
	for (int i = 0; !rc && i < k.nopen; i++)
		imp_warn(im, IMP_W_PHASE, "a begin (B or b) without its end");
	/* the host: the trace's own (HOST_PATHS), else the trace handler's file name, counted */
	if (!rc && k.host_at == HOST_NPATHS && imp_kineto_host_from_name(path, k.host, sizeof k.host))
		imp_warn(im, IMP_W_HOST_FROM_NAME, path);
	if (!rc) {
		struct imp_file_facts f = { .world_size = k.world_size, .base_ns = k.base_ns, .host = k.host,
					    .backend = k.backend[0] ? k.backend : k.npu_file ? "hccl" : NULL,
					    .source = k.npu_file ? "ascend pytorch profiler (text)"
								 : "pytorch-profiler (kineto chrome trace)" };
		rc = imp_file_end(im, &f);
	}
	kin_free(&k);
	return rc;
}

/* A file or a stream through zlib. A stream (a pipe, a FIFO) cannot be rewound for the second
 * pass: what the first pass reads of it is kept in an unnamed temporary file (tmpfile) and read
 * again from there, then the stream goes on. */
struct gz_src {
	gzFile gz;
	int stream;               /* not seekable */
	FILE *spool;              /* a stream's bytes read before the rewind */
	int replay;               /* reading the spool again */
	const char *path;
};

static long gz_read(void *src, unsigned char *buf, size_t n, const char **err, int64_t *pos)
{
	struct gz_src *g = src;
	if (g->replay) {
		size_t r = fread(buf, 1, n, g->spool);
		if (r > 0) {
			*pos = gzoffset(g->gz);
			return (long)r;
		}
		if (ferror(g->spool)) {
			*err = "cannot read the stream's first part back from its temporary copy";
			return -1;
		}
		g->replay = 0;
	}
	int r = gzread(g->gz, buf, (unsigned)n);
	int e = Z_OK;
	const char *msg = gzerror(g->gz, &e);
	if (r < 0 || (r == 0 && e != Z_OK)) {   /* zlib reports a truncated stream only as an error */
		*err = msg;
		return -1;
	}
	if (r == 0 && !gzdirect(g->gz) && !gzeof(g->gz)) {
		*err = "the gzip stream stops before its end";
		return -1;
	}
	if (g->stream && g->spool && r > 0 && fwrite(buf, 1, (size_t)r, g->spool) != (size_t)r) {
		*err = "cannot keep a copy of the stream for the second pass (temporary folder full?)";
		return -1;
	}
	*pos = gzoffset(g->gz);
	return r;
}

static int gz_rewind(void *src)
{
	struct gz_src *g = src;
	if (!g->stream)
		return gzrewind(g->gz) == 0 ? 0 : -1;
	if (!g->spool || fflush(g->spool) != 0 || fseek(g->spool, 0, SEEK_SET) != 0)
		return -1;
	g->replay = 1;
	return 0;
}

int imp_read_kineto_fd(struct imp *im, const char *path, int fd, int64_t size)
{
	struct stat st;
	struct gz_src s = { .stream = fstat(fd, &st) != 0 || !S_ISREG(st.st_mode), .path = path };
	if (s.stream && !(s.spool = tmpfile())) {
		int e = errno;
		close(fd);
		return ascent_error(ASCENT_EIO, "'%s': cannot make a temporary file to read the stream twice: %s", path,
				    strerror(e));
	}
	s.gz = gzdopen(fd, "rb");
	if (!s.gz) {
		close(fd);
		if (s.spool)
			fclose(s.spool);
		return ascent_error(ASCENT_ENOMEM, "out of memory reading '%s'", path);
	}
	gzbuffer(s.gz, 1 << 17);
	int rc = kin_read(im, path, size, gz_read, gz_rewind, &s);
	gzclose(s.gz);
	if (s.spool)
		fclose(s.spool);
	return rc;
}

int imp_read_kineto(struct imp *im, const char *path)
{
	int fd;
	struct stat st;
	int rc = fs_open_read(path, &fd, &st);
	if (rc)
		return rc;
	return imp_read_kineto_fd(im, path, fd, S_ISREG(st.st_mode) ? st.st_size : 0);
}

struct mem_src {
	const unsigned char *p;
	size_t n, at;
	int gz;                   /* gzip: inflate through z */
	z_stream z;
	int z_end;
};

static long mem_read(void *src, unsigned char *buf, size_t n, const char **err, int64_t *pos)
{
	struct mem_src *m = src;
	if (!m->gz) {
		size_t k = m->n - m->at < n ? m->n - m->at : n;
		memcpy(buf, m->p + m->at, k);
		m->at += k;
		*pos = (int64_t)m->at;
		return (long)k;
	}
	if (m->z_end)
		return 0;
	m->z.next_out = buf;
	m->z.avail_out = (uInt)n;
	while (m->z.avail_out == n) {
		int r = inflate(&m->z, Z_NO_FLUSH);
		if (r == Z_STREAM_END) {
			m->z_end = 1;
			break;
		}
		if (r != Z_OK) {
			*err = m->z.msg ? m->z.msg : "the gzip stream is damaged or stops before its end";
			return -1;
		}
	}
	*pos = (int64_t)m->z.total_in;
	return (long)(n - m->z.avail_out);
}

static int mem_rewind(void *src)
{
	struct mem_src *m = src;
	m->at = 0;
	if (!m->gz)
		return 0;
	if (inflateReset(&m->z) != Z_OK)
		return -1;
	m->z.next_in = (Bytef *)m->p;
	m->z.avail_in = (uInt)m->n;
	m->z_end = 0;
	return 0;
}

int imp_read_kineto_mem(struct imp *im, const char *name, const void *data, size_t len)
{
	struct mem_src m = { .p = data, .n = len };
	m.gz = len >= 2 && m.p[0] == 0x1f && m.p[1] == 0x8b;
	if (m.gz) {
		if (inflateInit2(&m.z, 16 + MAX_WBITS) != Z_OK)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		m.z.next_in = (Bytef *)m.p;   /* zlib does not write through next_in */
		m.z.avail_in = (uInt)len;
	}
	int rc = kin_read(im, name, (int64_t)len, mem_read, mem_rewind, &m);
	if (m.gz)
		inflateEnd(&m.z);
	return rc;
}
