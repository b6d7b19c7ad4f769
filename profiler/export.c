/* profiler/export.c — `ascent export`: Chrome trace JSON (docs/background.md, "Chrome trace JSON": X events strictly nested
 * per thread, overlapping ranges as async b/e, M metadata, C counters for memory and series, flow
 * events for matched point-to-point transfers, µs with ns precision relative to a base, ASCII only)
 * and folded stacks. Written to a temporary (fs_tmp) put in place when complete, or to standard
 * output for "-o -"; gzip when asked or FILE ends in .gz. */
#include "profiler/prof.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct out {
	FILE *f;
	gzFile gz;
	char buf[1 << 20];          /* big buffered writes */
	size_t n;
	int err;
	int64_t events;
};

static void o_flush(struct out *o)
{
	if (!o->n || o->err)
		return;
	if (o->gz) {
		if (gzwrite(o->gz, o->buf, (unsigned)o->n) != (int)o->n)
			o->err = 1;
	} else if (fwrite(o->buf, 1, o->n, o->f) != o->n) {
		o->err = 1;
	}
	o->n = 0;
}

static void o_put(struct out *o, const char *s, size_t l)
{
	if (o->n + l > sizeof o->buf)
		o_flush(o);
	if (l > sizeof o->buf) {
		if (!o->err && (o->gz ? gzwrite(o->gz, s, (unsigned)l) != (int)l : fwrite(s, 1, l, o->f) != l))
			o->err = 1;
		return;
	}
	memcpy(o->buf + o->n, s, l);
	o->n += l;
}

static void o_s(struct out *o, const char *s)
{
	o_put(o, s, strlen(s));
}

static const char DIGITS2[201] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
				 "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
				 "8081828384858687888990919293949596979899";

/* A decimal integer, two digits per step. */
static void o_i(struct out *o, int64_t v)
{
	char b[24];
	int i = 24;
	int neg = v < 0;
	uint64_t u = neg ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;
		u /= 100;
		b[--i] = DIGITS2[d + 1];
		b[--i] = DIGITS2[d];
	}
	if (u >= 10) {
		b[--i] = DIGITS2[u * 2 + 1];
		b[--i] = DIGITS2[u * 2];
	} else {
		b[--i] = (char)('0' + u);
	}
	if (neg)
		b[--i] = '-';
	if (o->n + 24 <= sizeof o->buf) {
		memcpy(o->buf + o->n, b + i, (size_t)(24 - i));
		o->n += (size_t)(24 - i);
	} else {
		o_put(o, b + i, (size_t)(24 - i));
	}
}

/* Writers into a reserved span of the buffer (no bounds check per piece): o_reserve makes room for
 * one whole record (EV_MAX bytes: two escaped names of at most 512 bytes, a dozen numbers), the
 * p_* helpers write at p and return the new end, o_commit takes the span. One event costs a handful
 * of memcpy of known lengths and no per-piece calls. */
#define EV_MAX 4096   /* two names of 512 bytes, a collective's group (GROUP_MAX) and numbers */
#define GROUP_MAX 1536

static char *o_reserve(struct out *o)
{
	if (o->n + EV_MAX > sizeof o->buf)
		o_flush(o);
	return o->err || o->n + EV_MAX > sizeof o->buf ? NULL : o->buf + o->n;
}

static void o_commit(struct out *o, char *end)
{
	o->n = (size_t)(end - o->buf);
}

#define P_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

static inline char *p_mem(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

/* A decimal integer, two digits per step. */
static inline char *p_i(char *p, int64_t v)
{
	char b[48];   /* digits end at b[24]; the fixed 24-byte copy below reads up to b[47] */
	int i = 24;
	int neg = v < 0;
	uint64_t u = neg ? (uint64_t)(-(v + 1)) + 1 : (uint64_t)v;
	while (u >= 100) {
		unsigned d = (unsigned)(u % 100) * 2;
		u /= 100;
		b[--i] = DIGITS2[d + 1];
		b[--i] = DIGITS2[d];
	}
	if (u >= 10) {
		b[--i] = DIGITS2[u * 2 + 1];
		b[--i] = DIGITS2[u * 2];
	} else {
		b[--i] = (char)('0' + u);
	}
	if (neg)
		b[--i] = '-';
	memcpy(p, b + i, 24);   /* fixed size: one move; only 24 - i bytes count */
	return p + (24 - i);
}

/* ns as µs, exact, shortest: "12.345", "12.34" (12340 ns), "12" (12000 ns) — JSON numbers all. */
static inline char *p_us(char *p, int64_t ns)
{
	if (ns < 0)
		ns = 0;
	p = p_i(p, ns / 1000);
	int f = (int)(ns % 1000);
	if (f) {
		*p++ = '.';
		*p++ = (char)('0' + f / 100);
		if (f % 100) {
			*p++ = (char)('0' + f / 10 % 10);
			if (f % 10)
				*p++ = (char)('0' + f % 10);
		}
	}
	return p;
}

static void o_us(struct out *o, int64_t ns)
{
	char b[32];
	o_put(o, b, (size_t)(p_us(b, ns) - b));
}

/* A JSON string of printable ASCII only: quotes and backslashes escaped, anything else '?';
 * into b (512 bytes), returns the length. */
static size_t esc_str(const char *s, char *b)
{
	size_t n = 0;
	b[n++] = '"';
	for (; *s && n < 512 - 4; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			b[n++] = '\\';
			b[n++] = (char)c;
		} else if (c >= 0x20 && c < 0x7f) {
			b[n++] = (char)c;
		} else {
			b[n++] = '?';
		}
	}
	b[n++] = '"';
	return n;
}

static void o_str(struct out *o, const char *s)
{
	char b[512];
	o_put(o, b, esc_str(s, b));
}

/* ---------------------------------------------------------------------------------------- */

struct rk {
	int rank;
	int64_t shift;          /* add to a relative ts to get export ts (ns) */
};

struct open_x {
	int64_t end;
};

struct tstack {
	struct open_x *v;
	int n, cap;
};

struct ex {
	struct out *o;
	char **names;
	int64_t nnames;
	char **qnames;          /* names[i] as a JSON string (quoted, escaped), qlen[i] bytes */
	uint16_t *qlen;
	struct rk *ranks;
	int nranks;
	int cur_rank;
	int64_t shift;
	struct tstack *th;
	int nth;
	int64_t async_id;
	int first;
	int64_t mem[DB_MEM_COUNT];   /* the current (rank, device)'s bytes in use per category */
	int mem_rank, mem_device;
	int64_t match_shift;    /* lowest rank's t0 − base */
	char catpre[16][40];    /* ",\"cat\":\"op\",\"pid\":" per kind (cat_pre) */
	unsigned char catlen[16];
	struct group_args *groups;   /* each communicator's arguments for its collectives */
	int ngroups;
};

/* A communicator as the arguments of its collectives, in Kineto's own keys so that importers
 * (ascent's, HTA) read the group back: ",\"Process Group Name\":\"dp\",\"Group size\":2,
 * \"Process Group Ranks\":\"[0, 1]\"" (the ranks left out past GROUP_MAX bytes). */
struct group_args {
	int64_t comm_id;
	char *js;
	size_t len;
};

static int group_args_make(struct db *db, struct ex *x)
{
	struct db_comm_group *g = NULL;
	int n = 0;
	int rc = db_comm_groups(db, (struct db_filter){ -1, -1, -1 }, &g, &n);
	if (!rc && n && !(x->groups = calloc((size_t)n, sizeof *x->groups)))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int i = 0; i < n && !rc; i++) {
		char name[512], *js = malloc(GROUP_MAX + 64);
		if (!js) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		size_t l = esc_str(g[i].name, name);
		int k = snprintf(js, GROUP_MAX + 64, ",\"Process Group Name\":%.*s,\"Group size\":%d", (int)l, name, g[i].size);
		size_t ml = strlen(g[i].members);
		if (k > 0 && g[i].members[0] && (size_t)k + 2 * ml + 40 < GROUP_MAX) {
			k += snprintf(js + k, GROUP_MAX + 64 - (size_t)k, ",\"Process Group Ranks\":\"[");
			for (const char *m = g[i].members; *m && k < GROUP_MAX; m++)
				k += snprintf(js + k, GROUP_MAX + 64 - (size_t)k, *m == ',' ? ", " : "%c", *m);
			k += snprintf(js + k, GROUP_MAX + 64 - (size_t)k, "]\"");
		}
		x->groups[x->ngroups++] = (struct group_args){ .comm_id = g[i].comm_id, .js = js, .len = k > 0 ? (size_t)k : 0 };
	}
	db_comm_groups_free(g, n);
	return rc;
}

static const struct group_args *group_args_of(const struct ex *x, int64_t comm_id)
{
	for (int i = 0; i < x->ngroups; i++)
		if (x->groups[i].comm_id == comm_id)
			return &x->groups[i];
	return NULL;
}

static int64_t shift_of(struct ex *x, int rank)
{
	for (int i = 0; i < x->nranks; i++)
		if (x->ranks[i].rank == rank)
			return x->ranks[i].shift;
	return 0;
}

static void sep(struct ex *x)
{
	if (x->first)
		x->first = 0;
	else
		o_put(x->o, ",\n", 2);
}

static const char *nm(struct ex *x, int64_t id)
{
	return id >= 0 && id < x->nnames ? x->names[id] : "?";
}

/* The name as a JSON string: pre-escaped once per string id. */
static void o_name(struct ex *x, int64_t id)
{
	if (id >= 0 && id < x->nnames && x->qnames)
		o_put(x->o, x->qnames[id], x->qlen[id]);
	else
		o_str(x->o, nm(x, id));
}

/* The name as a JSON string at p (pre-escaped once per string id). */
static inline char *p_name(struct ex *x, char *p, int64_t id)
{
	if (id >= 0 && id < x->nnames && x->qnames)
		return p_mem(p, x->qnames[id], x->qlen[id]);
	return p + esc_str(nm(x, id), p);
}

/* ",\"args\":{...}}" or just "}" when the event has no argument (args are optional). */
static char *p_args(struct ex *x, char *p, const struct db_event *e)
{
	char *start = p;
	p = P_LIT(p, ",\"args\":{");
	char *first = p;
#define ARG(k, v)                                       \
	do {                                            \
		if (p != first)                         \
			*p++ = ',';                     \
		p = P_LIT(p, "\"" k "\":");             \
		p = p_i(p, v);                          \
	} while (0)
	if (e->step >= 0)
		ARG("step", e->step);
	if (e->mb >= 0)
		ARG("microbatch", e->mb);
	if (e->layer >= 0)
		ARG("layer", e->layer);
	if (e->flops > 0)
		ARG("flops", e->flops);
	if (db_kind_has_comm(e->kind)) {
		ARG("bytes", e->bytes);
		if (e->comm_id >= 0)
			ARG("comm_id", e->comm_id);
		const struct group_args *g = e->kind == DB_KIND_COMM && e->comm_id >= 0 ? group_args_of(x, e->comm_id) : NULL;
		if (g)
			p = p_mem(p, g->js, g->len);   /* after a member: "bytes" is always first */
		if (e->seq >= 0)
			ARG("seq", e->seq);
		if (e->peer >= 0 && e->kind == DB_KIND_P2P)
			ARG("peer", e->peer);
		else if (e->peer >= 0)
			ARG("root", e->peer);
	}
#undef ARG
	if (e->site_id > 0) {
		if (p != first)
			*p++ = ',';
		p = P_LIT(p, "\"site\":");
		p = p_name(x, p, e->site_id);
	}
	if (p == first) {   /* no argument: omit the member */
		*start = '}';
		return start + 1;
	}
	return P_LIT(p, "}}");
}

/* An event's name at p: a thread's wait on a collective is "wait: NAME" (DB_WAIT_PREFIX), so that
 * viewers that count slices by name (speedscope, Perfetto) count the collective once. */
static char *p_ev_name(struct ex *x, char *p, const struct db_event *e)
{
	if (e->kind != DB_KIND_WAIT)
		return p_name(x, p, e->name_id);
	p = P_LIT(p, "\"" DB_WAIT_PREFIX);
	char *q = p_name(x, p, e->name_id);   /* "NAME": its opening quote dropped */
	memmove(p, p + 1, (size_t)(q - p - 1));
	return q - 1;
}

/* ",\"cat\":\"op\",\"pid\":" for a kind, built once. */
static const char *cat_pre(struct ex *x, int kind, size_t *len)
{
	int k = kind >= 0 && kind < 16 ? kind : 15;
	if (!x->catlen[k]) {
		int n = snprintf(x->catpre[k], sizeof x->catpre[k], ",\"cat\":\"%s\",\"pid\":", db_kind_name(kind));
		x->catlen[k] = (unsigned char)(n > 0 && n < (int)sizeof x->catpre[k] ? n : 0);
	}
	*len = x->catlen[k];
	return x->catpre[k];
}

static int ev_cb(void *ud, const struct db_event *e)
{
	struct ex *x = ud;
	struct out *o = x->o;
	if (e->rank != x->cur_rank) {
		for (int i = 0; i < x->nth; i++)
			x->th[i].n = 0;
		x->cur_rank = e->rank;
		x->shift = shift_of(x, e->rank);
	}
	if (e->tid < 0 || e->tid > 1000000)
		return 0;
	if (e->tid >= x->nth) {
		int nn = e->tid + 8;
		struct tstack *t2 = realloc(x->th, (size_t)nn * sizeof *t2);
		if (!t2)
			return ascent_error(ASCENT_ENOMEM, "out of memory");
		memset(t2 + x->nth, 0, (size_t)(nn - x->nth) * sizeof *t2);
		x->th = t2;
		x->nth = nn;
	}
	struct tstack *t = &x->th[e->tid];
	int64_t end = i64_add_sat(e->start_ns, e->dur_ns);
	while (t->n && t->v[t->n - 1].end <= e->start_ns)
		t->n--;
	int64_t ts = i64_add_sat(e->start_ns, x->shift);
	size_t catlen;
	const char *cat = cat_pre(x, e->kind, &catlen);
	if (t->n && end > t->v[t->n - 1].end) {
		/* overlaps its would-be parent without nesting: an async pair on its own track */
		int64_t id = ++x->async_id;
		for (int k = 0; k < 2; k++) {
			char *p = o_reserve(o);
			if (!p)
				return ascent_error(ASCENT_EIO, "cannot write the trace: %s", strerror(errno));
			if (!x->first)
				p = P_LIT(p, ",\n");
			x->first = 0;
			p = k ? P_LIT(p, "{\"ph\":\"e\",\"name\":") : P_LIT(p, "{\"ph\":\"b\",\"name\":");
			p = p_ev_name(x, p, e);
			p = p_mem(p, cat, catlen);
			p = p_i(p, e->rank);
			p = P_LIT(p, ",\"id\":");
			p = p_i(p, id);
			p = P_LIT(p, ",\"tid\":");
			p = p_i(p, e->tid);
			p = P_LIT(p, ",\"ts\":");
			p = p_us(p, k ? i64_add_sat(ts, e->dur_ns) : ts);
			p = k ? P_LIT(p, "}") : p_args(x, p, e);
			o_commit(o, p);
		}
		x->o->events += 2;
		return 0;
	}
	char *p = o_reserve(o);
	if (!p)
		return ascent_error(ASCENT_EIO, "cannot write the trace: %s", strerror(errno));
	if (!x->first)
		p = P_LIT(p, ",\n");
	x->first = 0;
	p = P_LIT(p, "{\"ph\":\"X\",\"name\":");
	p = p_ev_name(x, p, e);
	p = p_mem(p, cat, catlen);
	p = p_i(p, e->rank);
	p = P_LIT(p, ",\"tid\":");
	p = p_i(p, e->tid);
	p = P_LIT(p, ",\"ts\":");
	p = p_us(p, ts);
	p = P_LIT(p, ",\"dur\":");
	p = p_us(p, e->dur_ns);
	p = p_args(x, p, e);
	o_commit(o, p);
	x->o->events++;
	if (ARRAY_GROW(t->v, t->n, t->cap, 16, "exporting open events"))
		return ASCENT_ENOMEM;
	t->v[t->n++].end = end;
	return o->err ? ascent_error(ASCENT_EIO, "cannot write the trace: %s", strerror(errno)) : 0;
}

static int counter_cb(void *ud, int rank, int64_t name_id, int64_t ts, double value)
{
	struct ex *x = ud;
	struct out *o = x->o;
	char v[40];
	snprintf(v, sizeof v, "%.9g", value);
	if (!strcmp(v, "nan") || !strcmp(v, "inf") || !strcmp(v, "-inf") || !strcmp(v, "-nan"))
		return 0;   /* not JSON */
	sep(x);
	o_s(o, "{\"ph\":\"C\",\"name\":");
	o_name(x, name_id);
	o_s(o, ",\"pid\":");
	o_i(o, rank);
	o_s(o, ",\"tid\":0,\"ts\":");
	o_us(o, i64_add_sat(ts, shift_of(x, rank)));
	o_s(o, ",\"args\":{\"value\":");
	o_s(o, v);
	o_s(o, "}}");
	o->events++;
	return 0;
}

/* One counter track per device of a rank: "memory (bytes)" the host's (as before devices were
 * told apart), "memory device N (bytes)" an accelerator's, "memory unknown device (bytes)" an
 * imported file's before v5. */
static int mem_cb(void *ud, const struct db_mem_row *r)
{
	struct ex *x = ud;
	struct out *o = x->o;
	if (r->rank != x->mem_rank || r->device != x->mem_device) {
		memset(x->mem, 0, sizeof x->mem);
		x->mem_rank = r->rank;
		x->mem_device = r->device;
	}
	if (r->category >= 0 && r->category < DB_MEM_COUNT)
		x->mem[r->category] = r->in_use;
	sep(x);
	o_s(o, "{\"ph\":\"C\",\"name\":\"memory ");
	if (r->device >= 0) {
		o_s(o, "device ");
		o_i(o, r->device);
		o_s(o, " ");
	} else if (r->device != DB_MEM_HOST) {
		o_s(o, "unknown device ");
	}
	o_s(o, "(bytes)\",\"pid\":");
	o_i(o, r->rank);
	o_s(o, ",\"tid\":0,\"ts\":");
	o_us(o, i64_add_sat(r->ts_ns, shift_of(x, r->rank)));
	o_s(o, ",\"args\":{");
	for (int i = 0; i < DB_MEM_COUNT; i++) {
		if (i)
			o_put(o, ",", 1);
		o_put(o, "\"", 1);
		o_s(o, db_mem_cat_name(i));
		o_s(o, "\":");
		o_i(o, x->mem[i]);
	}
	o_s(o, "}}");
	o->events++;
	return 0;
}

static int thread_cb(void *ud, int rank, int tid, int64_t os_tid, const char *name)
{
	struct ex *x = ud;
	char label[160];
	/* a lane ("comm dp": no OS thread) is drawn below the threads, like a stream's row */
	int lane = os_tid == 0;
	if (lane)
		snprintf(label, sizeof label, "%s", name);
	else
		snprintf(label, sizeof label, "%s (tid %lld)", name, (long long)os_tid);
	sep(x);
	o_s(x->o, "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":");
	o_i(x->o, rank);
	o_s(x->o, ",\"tid\":");
	o_i(x->o, tid);
	o_s(x->o, ",\"args\":{\"name\":");
	o_str(x->o, label);
	o_s(x->o, "}},\n{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":");
	o_i(x->o, rank);
	o_s(x->o, ",\"tid\":");
	o_i(x->o, tid);
	o_s(x->o, ",\"args\":{\"sort_index\":");
	o_i(x->o, lane ? 1000 + tid : tid);
	o_s(x->o, "}}");
	x->o->events += 2;
	return 0;
}

/* flows: a matched p2p group arrives as consecutive callbacks (one per rank) */
struct flow {
	struct ex *x;
	struct db_match prev;
	int have;
	int64_t id;
};

static int is_recv(struct ex *x, int64_t name_id)
{
	return strcasestr(nm(x, name_id), "recv") != NULL;
}

static int flow_cb(void *ud, const struct db_match *m)
{
	struct flow *fl = ud;
	struct ex *x = fl->x;
	if (fl->have && fl->prev.comm_id == m->comm_id && fl->prev.seq == m->seq) {
		const struct db_match *s = is_recv(x, fl->prev.name_id) ? m : &fl->prev;
		const struct db_match *r = s == m ? &fl->prev : m;
		if (!is_recv(x, s->name_id) && is_recv(x, r->name_id)) {
			int64_t id = ++fl->id;
			for (int k = 0; k < 2; k++) {
				const struct db_match *p = k ? r : s;
				sep(x);
				o_s(x->o, k ? "{\"ph\":\"f\",\"bp\":\"e\"" : "{\"ph\":\"s\"");
				o_s(x->o, ",\"name\":\"p2p\",\"cat\":\"p2p\",\"id\":");
				o_i(x->o, id);
				o_s(x->o, ",\"pid\":");
				o_i(x->o, p->rank);
				o_s(x->o, ",\"tid\":");
				o_i(x->o, p->tid);
				o_s(x->o, ",\"ts\":");
				/* match times are on the lowest rank's t0 (aligned): to export time */
				o_us(x->o, i64_add_sat(p->start_ns, x->match_shift));
				o_s(x->o, "}");
			}
			x->o->events += 2;
		}
		fl->have = 0;
		return 0;
	}
	fl->prev = *m;
	fl->have = 1;
	return 0;
}

static int write_chrome(struct db *db, struct db_filter f, struct out *o)
{
	struct ex x = { .o = o, .cur_rank = -1, .first = 1, .mem_rank = -1, .mem_device = INT32_MIN };
	int rc = db_strings(db, &x.names, &x.nnames);
	if (rc)
		return rc;
	x.qnames = calloc((size_t)x.nnames, sizeof *x.qnames);
	x.qlen = calloc((size_t)x.nnames, sizeof *x.qlen);
	for (int64_t i = 0; x.qnames && x.qlen && i < x.nnames; i++) {
		char b[512];
		size_t l = esc_str(x.names[i], b);
		if (!(x.qnames[i] = malloc(l))) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		memcpy(x.qnames[i], b, l);
		x.qlen[i] = (uint16_t)l;
	}
	if (!rc && (!x.qnames || !x.qlen))
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	struct db_rank_info *ri = NULL;
	int nr = 0;
	if (rc || (rc = db_ranks(db, &ri, &nr)) != 0) {
		db_strings_free(x.qnames, x.qnames ? x.nnames : 0);
		free(x.qlen);
		db_strings_free(x.names, x.nnames);
		return rc;
	}
	/* base = the earliest rank start on rank 0's clock; a rank's ts = rel + t0 + offset − base */
	int64_t base = INT64_MAX, utc = 0;
	for (int i = 0; i < nr; i++)
		if (i64_add_sat(ri[i].t0_ns, ri[i].clock_offset_ns) < base) {
			base = i64_add_sat(ri[i].t0_ns, ri[i].clock_offset_ns);
			utc = ri[i].t0_utc_ns;
		}
	if (nr)
		x.match_shift = i64_sub_sat(ri[0].t0_ns, base);   /* db_ranks is ordered by rank */
	x.ranks = calloc((size_t)nr + 1, sizeof *x.ranks);
	x.nranks = nr;
	for (int i = 0; x.ranks && i < nr; i++)
		x.ranks[i] = (struct rk){ ri[i].rank, i64_sub_sat(i64_add_sat(ri[i].t0_ns, ri[i].clock_offset_ns), base) };
	o_s(o, "{\"schemaVersion\":1,\"traceName\":\"ascent\",\"baseTimeNanoseconds\":");
	o_i(o, nr ? utc : 0);
	o_s(o, ",\"traceEvents\":[\n");
	for (int i = 0; i < nr; i++) {
		if (f.rank >= 0 && ri[i].rank != f.rank)
			continue;
		char label[300];
		snprintf(label, sizeof label, "rank %d (%s, pid %d)", ri[i].rank, ri[i].host, ri[i].pid);
		sep(&x);
		o_s(o, "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":");
		o_i(o, ri[i].rank);
		o_s(o, ",\"tid\":0,\"args\":{\"name\":");
		o_str(o, label);
		o_s(o, "}},\n{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":");
		o_i(o, ri[i].rank);
		o_s(o, ",\"tid\":0,\"args\":{\"sort_index\":");
		o_i(o, ri[i].rank);
		o_s(o, "}}");
		o->events += 2;
	}
	db_ranks_free(ri, nr);
	if (!x.ranks)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	if (!rc)
		rc = group_args_make(db, &x);
	if (!rc)
		rc = db_each_thread(db, thread_cb, &x);
	if (!rc)
		rc = db_each_event(db, f, ev_cb, &x);
	if (!rc)
		rc = db_each_counter(db, f, counter_cb, &x);
	if (!rc)
		rc = db_each_mem(db, f, mem_cb, &x);
	if (!rc) {
		struct flow fl = { .x = &x };
		rc = db_each_match(db, f, DB_KIND_P2P, flow_cb, &fl);
	}
	o_s(o, "\n]}\n");
	for (int i = 0; i < x.nth; i++)
		free(x.th[i].v);
	free(x.th);
	free(x.ranks);
	for (int i = 0; i < x.ngroups; i++)
		free(x.groups[i].js);
	free(x.groups);
	db_strings_free(x.qnames, x.nnames);
	free(x.qlen);
	db_strings_free(x.names, x.nnames);
	return rc;
}

struct folded {
	struct out *o;
};

static int folded_cb(void *ud, int64_t id, int nf, const char *const *fr, int64_t w)
{
	(void)id;
	struct out *o = ((struct folded *)ud)->o;
	for (int i = 0; i < nf; i++) {
		if (i)
			o_put(o, ";", 1);
		for (const char *p = fr[i]; *p; p++) {
			char c = (*p == ' ' || *p == ';' || (unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f) ? '_' : *p;
			o_put(o, &c, 1);
		}
	}
	o_put(o, " ", 1);
	o_i(o, w);
	o_put(o, "\n", 1);
	o->events++;
	return 0;
}

int prof_export(const struct prof_export_opts *opt, int64_t *events)
{
	const char *fmt = opt->format ? opt->format : "chrome";
	int folded = !strcmp(fmt, "folded");
	if (!folded && strcmp(fmt, "chrome"))
		return ascent_error(ASCENT_EUSAGE, "unknown --format '%s' (expected chrome or folded)", fmt);
	char outp[4096];
	const char *path = opt->out_path;
	if (!path) {
		size_t l = strlen(opt->db_path);
		const char *ext = folded ? ".folded" : ".json";
		if (l > 3 && !strcmp(opt->db_path + l - 3, ".db"))
			snprintf(outp, sizeof outp, "%.*s%s%s", (int)(l - 3), opt->db_path, ext, opt->gzip ? ".gz" : "");
		else
			snprintf(outp, sizeof outp, "%s%s%s", opt->db_path, ext, opt->gzip ? ".gz" : "");
		path = outp;
	}
	int to_stdout = !strcmp(path, "-");
	size_t pl = strlen(path);
	int gz = opt->gzip || (pl > 3 && !strcmp(path + pl - 3, ".gz"));
	const char *ins[] = { opt->db_path };
	struct fs_output fo = { .cmd = "export", .option = "-o", .path = path, .inputs = ins, .ninputs = 1,
				.force = opt->force };
	int rc = to_stdout ? 0 : fs_output_check(&fo);
	if (rc)
		return rc;
	struct db *db;
	rc = db_open(opt->db_path, DB_READ, &db);
	if (rc)
		return rc;
	int64_t nstacks = 0;
	if (folded && (rc = db_count(db, "stack", &nstacks)) == 0 && nstacks == 0)
		rc = ascent_error(ASCENT_EINPUT, "'%s' has no call stacks, so there is nothing to fold: record them "
				  "with 'ascent train --profile-stacks' (a stack at each range) or '--profile-sample HZ' "
				  "(sampled stacks)", opt->db_path);
	if (rc) {
		db_close(db);
		return rc;
	}
	/* a file: written in a temporary that goes with the process if it is interrupted; "-": standard
	 * output, as it is written */
	struct fs_tmp tmp = { 0 };
	struct out *o = calloc(1, sizeof *o);
	if (!o || (!to_stdout && (rc = fs_tmp_open(&tmp, path)) != 0)) {
		free(o);
		db_close(db);
		return rc ? rc : ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	const char *shown = to_stdout ? "standard output" : path;
	int wfd = dup(to_stdout ? STDOUT_FILENO : tmp.fd);
	if (wfd >= 0 && gz && !(o->gz = gzdopen(wfd, "wb3")))
		close(wfd);
	else if (wfd >= 0 && !gz && !(o->f = fdopen(wfd, "wb")))
		close(wfd);
	if (!o->gz && !o->f) {
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", shown, strerror(errno));
		fs_tmp_abort(&tmp);
		free(o);
		db_close(db);
		return rc;
	}
	struct db_filter f = { opt->rank, opt->step_lo, opt->step_hi };
	if (folded) {
		struct folded fd = { o };
		rc = db_each_stack_weight(db, f, folded_cb, &fd);
	} else {
		rc = write_chrome(db, f, o);
	}
	o_flush(o);
	int werr = o->err;
	if (o->gz) {
		if (gzclose(o->gz) != Z_OK)
			werr = 1;
	} else if (fclose(o->f) != 0) {
		werr = 1;
	}
	if (!rc && werr)
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s (disk full?)", shown, strerror(errno));
	if (!rc && !to_stdout)
		rc = fs_tmp_commit(&tmp);
	fs_tmp_abort(&tmp);
	if (events)
		*events = o->events;
	free(o);
	db_close(db);
	return rc;
}
