/* common/safetensors.c — a validating safetensors reader (mmap) and an atomic writer.
 * Format: u64 LE header length N; N bytes of JSON; the data buffer. Every entry's
 * data_offsets are relative to the buffer; the entries must tile it exactly. */
#include "common/common.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define ST_MAX_HEADER 100000000ULL

static const struct {
	const char *name;
	size_t size;
} DT[ST_DTYPE_COUNT] = {
	[ST_BOOL] = { "BOOL", 1 }, [ST_U8] = { "U8", 1 },   [ST_I8] = { "I8", 1 },   [ST_I16] = { "I16", 2 },
	[ST_U16] = { "U16", 2 },   [ST_F16] = { "F16", 2 }, [ST_BF16] = { "BF16", 2 }, [ST_I32] = { "I32", 4 },
	[ST_U32] = { "U32", 4 },   [ST_F32] = { "F32", 4 }, [ST_F64] = { "F64", 8 }, [ST_I64] = { "I64", 8 },
	[ST_U64] = { "U64", 8 },
};

const char *st_dtype_name(enum st_dtype d)
{
	return (unsigned)d < ST_DTYPE_COUNT ? DT[d].name : "?";
}

size_t st_dtype_size(enum st_dtype d)
{
	return (unsigned)d < ST_DTYPE_COUNT ? DT[d].size : 0;
}

static int dtype_parse(const char *s, enum st_dtype *out)
{
	for (int i = 0; i < ST_DTYPE_COUNT; i++)
		if (!strcmp(DT[i].name, s)) {
			*out = (enum st_dtype)i;
			return 0;
		}
	return -1;
}

static void st_free_parsed(struct st_file *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->t[i].name);
	free(f->t);
	for (int i = 0; i < f->nmeta; i++) {
		free(f->meta_key[i]);
		free(f->meta_val[i]);
	}
	free(f->meta_key);
	free(f->meta_val);
	f->t = NULL;
	f->meta_key = f->meta_val = NULL;
	f->n = f->nmeta = 0;
}

struct range {
	uint64_t b, e;
	int idx;
};

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	return x->b < y->b ? -1 : x->b > y->b ? 1 : (x->e < y->e ? -1 : x->e > y->e);
}

/* __metadata__: string → string pairs into f->meta_key/meta_val (room for nmeta_max). */
static int parse_metadata(struct st_file *f, const cJSON *it, int nmeta_max, const char *what)
{
	if (!cJSON_IsObject(it))
		return ascent_error(ASCENT_EINPUT, "'%s': __metadata__ is not an object", what);
	for (cJSON *m = it->child; m; m = m->next) {
		if (!cJSON_IsString(m))
			return ascent_error(ASCENT_EINPUT, "'%s': __metadata__ value '%s' is not a string", what,
					    m->string ? m->string : "");
		f->meta_key[f->nmeta] = strdup(m->string);
		f->meta_val[f->nmeta] = strdup(m->valuestring);
		f->nmeta++;
		if (!f->meta_key[f->nmeta - 1] || !f->meta_val[f->nmeta - 1] || f->nmeta >= nmeta_max)
			break;
	}
	return 0;
}

/* One tensor entry {dtype, shape, data_offsets} named key into *t (name not set) and its byte
 * range [*b, *e) of the data section of buflen bytes. */
static int parse_tensor(struct st_tensor *t, const char *key, const cJSON *it, uint64_t buflen, uint64_t *b,
			uint64_t *e, const char *what)
{
	if (!cJSON_IsObject(it))
		return ascent_error(ASCENT_EINPUT, "'%s': entry '%s' is not an object", what, key);
	cJSON *dt = cJSON_GetObjectItemCaseSensitive(it, "dtype");
	cJSON *sh = cJSON_GetObjectItemCaseSensitive(it, "shape");
	cJSON *off = cJSON_GetObjectItemCaseSensitive(it, "data_offsets");
	if (!cJSON_IsString(dt) || dtype_parse(dt->valuestring, &t->dtype))
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has an unknown or missing dtype%s%s", what, key,
				    cJSON_IsString(dt) ? " " : "", cJSON_IsString(dt) ? dt->valuestring : "");
	if (!cJSON_IsArray(sh) || cJSON_GetArraySize(sh) > ST_MAX_DIMS)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has a missing shape or more than %d dimensions", what,
				    key, ST_MAX_DIMS);
	uint64_t elems = 1;
	int nd = 0;
	for (cJSON *d = sh->child; d; d = d->next) {
		if (!cJSON_IsNumber(d) || d->valuedouble < 0 || d->valuedouble > 9.0e15 ||
		    d->valuedouble != (double)(int64_t)d->valuedouble)
			return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has a bad dimension", what, key);
		t->shape[nd++] = (int64_t)d->valuedouble;
		if (t->shape[nd - 1] && elems > UINT64_MAX / (uint64_t)t->shape[nd - 1])
			return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has a shape too large", what, key);
		elems *= (uint64_t)t->shape[nd - 1];
	}
	t->ndim = nd;
	if (!cJSON_IsArray(off) || cJSON_GetArraySize(off) != 2 || !cJSON_IsNumber(off->child) ||
	    !cJSON_IsNumber(off->child->next) || off->child->valuedouble < 0 ||
	    off->child->next->valuedouble < off->child->valuedouble || off->child->next->valuedouble > 9.0e15)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' has bad data_offsets (want [begin, end] with begin <= end)",
				    what, key);
	*b = (uint64_t)off->child->valuedouble;
	*e = (uint64_t)off->child->next->valuedouble;
	if (elems > UINT64_MAX / st_dtype_size(t->dtype) || elems * st_dtype_size(t->dtype) != *e - *b)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' is %s with shape of %llu elements but its byte range is "
				    "%llu bytes", what, key, st_dtype_name(t->dtype), (unsigned long long)elems,
				    (unsigned long long)(*e - *b));
	if (*e > buflen)
		return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' ends at byte %llu, past the %llu bytes of data (truncated "
				    "file?)", what, key, (unsigned long long)*e, (unsigned long long)buflen);
	return 0;
}

/* The tensors' byte ranges (rg[0..f->n), sorted here) must tile the data section exactly. */
static int check_tiling(const struct st_file *f, struct range *rg, uint64_t buflen, const char *what)
{
	qsort(rg, (size_t)f->n, sizeof *rg, cmp_range);
	uint64_t at = 0;
	for (int i = 0; i < f->n; i++) {
		if (rg[i].b < at)
			return ascent_error(ASCENT_EINPUT, "'%s': tensors '%s' and '%s' overlap", what, f->t[rg[i - 1].idx].name,
					    f->t[rg[i].idx].name);
		if (rg[i].b > at)
			return ascent_error(ASCENT_EINPUT, "'%s': %llu unused bytes before tensor '%s'", what,
					    (unsigned long long)(rg[i].b - at), f->t[rg[i].idx].name);
		at = rg[i].e;
	}
	if (at != buflen)
		return ascent_error(ASCENT_EINPUT, "'%s': the data section is %llu bytes but the tensors cover %llu (trailing "
				    "bytes)", what, (unsigned long long)buflen, (unsigned long long)at);
	return 0;
}

int st_parse(struct st_file *f, const void *buf, size_t len, const char *what)
{
	memset(f, 0, sizeof *f);
	const unsigned char *p = buf;
	if (len < 8)
		return ascent_error(ASCENT_EINPUT, "'%s' is not a safetensors file: %zu bytes, shorter than the 8-byte header length",
				    what, len);
	uint64_t n = 0;
	for (int i = 7; i >= 0; i--)
		n = (n << 8) | p[i];
	if (n > ST_MAX_HEADER || n > len - 8)
		return ascent_error(ASCENT_EINPUT,
				    "'%s' is not a valid safetensors file: header length %llu does not fit in the file of %zu bytes",
				    what, (unsigned long long)n, len);
	if (n < 2 || p[8] != '{')
		return ascent_error(ASCENT_EINPUT, "'%s' is not a valid safetensors file: the header does not start with '{'", what);
	const char *hdr = (const char *)p + 8;
	cJSON *root = cJSON_ParseWithLength(hdr, n);
	if (!root || !cJSON_IsObject(root)) {
		cJSON_Delete(root);
		return ascent_error(ASCENT_EINPUT, "'%s' is not a valid safetensors file: the header is not a JSON object", what);
	}
	uint64_t buflen = len - 8 - n;
	const unsigned char *data = p + 8 + n;
	int rc = 0;
	int count = cJSON_GetArraySize(root);
	f->t = calloc((size_t)count + 1, sizeof *f->t);
	cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "__metadata__");
	int nmeta_max = cJSON_IsObject(meta) ? cJSON_GetArraySize(meta) : 0;
	f->meta_key = calloc((size_t)nmeta_max + 1, sizeof(char *));
	f->meta_val = calloc((size_t)nmeta_max + 1, sizeof(char *));
	struct range *rg = calloc((size_t)count + 1, sizeof *rg);
	if (!f->t || !f->meta_key || !f->meta_val || !rg)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory reading '%s'", what);
	for (cJSON *it = root->child; it && !rc; it = it->next) {
		const char *key = it->string;
		if (!key || !*key) {
			rc = ascent_error(ASCENT_EINPUT, "'%s': a tensor has an empty name", what);
			break;
		}
		for (int i = 0; i < f->n && !rc; i++)
			if (!strcmp(f->t[i].name, key))
				rc = ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' appears twice", what, key);
		if (rc)
			break;
		if (!strcmp(key, "__metadata__")) {
			rc = it != meta ? ascent_error(ASCENT_EINPUT, "'%s': __metadata__ appears twice", what)
					: parse_metadata(f, it, nmeta_max, what);
			continue;
		}
		struct st_tensor *t = &f->t[f->n];
		uint64_t b = 0, e = 0;
		if ((rc = parse_tensor(t, key, it, buflen, &b, &e, what)) != 0)
			break;
		t->name = strdup(key);
		if (!t->name) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		t->nbytes = e - b;
		t->data = data + b;
		rg[f->n] = (struct range){ b, e, f->n };
		f->n++;
	}
	if (!rc)
		rc = check_tiling(f, rg, buflen, what);
	free(rg);
	cJSON_Delete(root);
	if (rc)
		st_free_parsed(f);
	return rc;
}

int st_open(struct st_file *f, const char *path)
{
	memset(f, 0, sizeof *f);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return ascent_error(errno == ENOENT ? ASCENT_EINPUT : ASCENT_EIO, "cannot open '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fd, &st)) {
		close(fd);
		return ascent_error(ASCENT_EIO, "cannot stat '%s': %s", path, strerror(errno));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return ascent_error(ASCENT_EINPUT, "'%s' is not a regular file", path);
	}
	size_t len = (size_t)st.st_size;
	void *map = NULL;
	if (len) {
		map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			close(fd);
			return ascent_error(ASCENT_EIO, "cannot map '%s': %s", path, strerror(errno));
		}
	}
	close(fd);
	int rc = st_parse(f, map ? map : "", len, path);
	if (rc) {
		if (map)
			munmap(map, len);
		return rc;
	}
	f->map = map;
	f->map_len = len;
	return 0;
}

void st_close(struct st_file *f)
{
	if (!f)
		return;
	st_free_parsed(f);
	if (f->map)
		munmap(f->map, f->map_len);
	f->map = NULL;
	f->map_len = 0;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}

int st_check_finite(const struct st_tensor *t, const char *path)
{
	if (t->dtype != ST_F32)
		return 0;
	size_t n = t->nbytes / sizeof(float);
	for (size_t i = 0; i < n; i++) {
		float v;
		memcpy(&v, (const char *)t->data + i * sizeof v, sizeof v);   /* the mapping may be unaligned */
		if (!isfinite(v)) {
			size_t bad = 0;
			for (size_t j = i; j < n; j++) {
				memcpy(&v, (const char *)t->data + j * sizeof v, sizeof v);
				bad += !isfinite(v);
			}
			memcpy(&v, (const char *)t->data + i * sizeof v, sizeof v);
			return ascent_error(ASCENT_EINPUT, "'%s': tensor '%s' holds %zu non-finite value%s (the first, %s, "
							   "at element %zu): the file is corrupt or the run diverged (use an "
							   "earlier checkpoint)", path, t->name, bad, bad == 1 ? "" : "s",
					    isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf", i);
		}
	}
	return 0;
}

const char *st_meta(const struct st_file *f, const char *key)
{
	for (int i = 0; i < f->nmeta; i++)
		if (!strcmp(f->meta_key[i], key))
			return f->meta_val[i];
	return NULL;
}

/* ---- writer ---- */

struct st_entry {
	char *name;
	enum st_dtype dtype;
	int ndim;
	int64_t shape[ST_MAX_DIMS];
	const void *data;
	uint64_t nbytes;
};

struct st_writer {
	struct st_entry *e;
	int n, cap;
	char **mk, **mv;
	int nm, mcapk, mcapv;   /* mk and mv grow separately (ARRAY_GROW) */
};

struct st_writer *st_writer_new(void)
{
	return calloc(1, sizeof(struct st_writer));
}

void st_writer_free(struct st_writer *w)
{
	if (!w)
		return;
	for (int i = 0; i < w->n; i++)
		free(w->e[i].name);
	for (int i = 0; i < w->nm; i++) {
		free(w->mk[i]);
		free(w->mv[i]);
	}
	free(w->e);
	free(w->mk);
	free(w->mv);
	free(w);
}

int st_writer_add(struct st_writer *w, const char *name, enum st_dtype dtype, int ndim, const int64_t *shape,
		  const void *data)
{
	if (ndim < 0 || ndim > ST_MAX_DIMS || (unsigned)dtype >= ST_DTYPE_COUNT)
		return ascent_error(ASCENT_EINTERNAL, "st_writer_add: bad dtype or rank for '%s'", name);
	for (int i = 0; i < w->n; i++)
		if (!strcmp(w->e[i].name, name))
			return ascent_error(ASCENT_EINTERNAL, "st_writer_add: tensor '%s' added twice", name);
	if (ARRAY_GROW(w->e, w->n, w->cap, 64, "adding tensors"))
		return ASCENT_ENOMEM;
	struct st_entry *e = &w->e[w->n];
	memset(e, 0, sizeof *e);
	e->name = strdup(name);
	if (!e->name)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	e->dtype = dtype;
	e->ndim = ndim;
	uint64_t el = 1;
	for (int i = 0; i < ndim; i++) {
		e->shape[i] = shape[i];
		el *= (uint64_t)shape[i];
	}
	e->nbytes = el * st_dtype_size(dtype);
	e->data = data;
	w->n++;
	return 0;
}

int st_writer_meta(struct st_writer *w, const char *key, const char *value)
{
	if (ARRAY_GROW(w->mk, w->nm, w->mcapk, 8, "adding metadata") ||
	    ARRAY_GROW(w->mv, w->nm, w->mcapv, 8, "adding metadata"))
		return ASCENT_ENOMEM;
	w->mk[w->nm] = strdup(key);
	w->mv[w->nm] = strdup(value);
	if (!w->mk[w->nm] || !w->mv[w->nm])
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	w->nm++;
	return 0;
}

/* the reference order: larger alignment first, then name */
static int cmp_entry(const void *a, const void *b)
{
	const struct st_entry *x = a, *y = b;
	size_t sx = st_dtype_size(x->dtype), sy = st_dtype_size(y->dtype);
	if (sx != sy)
		return sx > sy ? -1 : 1;
	return strcmp(x->name, y->name);
}

int st_writer_write(struct st_writer *w, const char *path)
{
	qsort(w->e, (size_t)w->n, sizeof *w->e, cmp_entry);
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	if (w->nm) {
		cJSON *m = cJSON_AddObjectToObject(root, "__metadata__");
		for (int i = 0; i < w->nm; i++)
			cJSON_AddStringToObject(m, w->mk[i], w->mv[i]);
	}
	uint64_t off = 0;
	for (int i = 0; i < w->n; i++) {
		struct st_entry *e = &w->e[i];
		cJSON *t = cJSON_AddObjectToObject(root, e->name);
		cJSON_AddStringToObject(t, "dtype", st_dtype_name(e->dtype));
		cJSON *sh = cJSON_AddArrayToObject(t, "shape");
		for (int d = 0; d < e->ndim; d++)
			cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)e->shape[d]));
		cJSON *o = cJSON_AddArrayToObject(t, "data_offsets");
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)off));
		cJSON_AddItemToArray(o, cJSON_CreateNumber((double)(off + e->nbytes)));
		off += e->nbytes;
	}
	char *hdr = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!hdr)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	size_t hl = strlen(hdr);
	size_t padded = (hl + 7) & ~(size_t)7;
	struct atomic_file af;
	int rc = atomic_open(&af, path);
	if (rc) {
		free(hdr);
		return rc;
	}
	unsigned char lenb[8];
	for (int i = 0; i < 8; i++)
		lenb[i] = (unsigned char)((uint64_t)padded >> (8 * i));
	int bad = fwrite(lenb, 1, 8, af.f) != 8 || fwrite(hdr, 1, hl, af.f) != hl;
	for (size_t i = hl; i < padded && !bad; i++)
		bad = fputc(' ', af.f) == EOF;
	free(hdr);
	for (int i = 0; i < w->n && !bad; i++)
		bad = w->e[i].nbytes && fwrite(w->e[i].data, 1, w->e[i].nbytes, af.f) != w->e[i].nbytes;
	if (bad) {
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", path, strerror(errno));
		atomic_abort(&af);
		return rc;
	}
	return atomic_commit(&af);
}
