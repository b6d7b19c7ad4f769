/* diag/versions.c — `ascent diag versions`: collect the versions of the OS, toolchain, libraries,
 * GPU/NPU stacks and Python packages (from files under a root prefix, so fixture trees can stand
 * in for a machine), check them against the compatibility matrix, and diff them across ranks. */
#include "db/db.h"
#include "diag/diag.h"
#include "comm/comm.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <dnnl.h>
#include <glob.h>
#include <gnu/libc-version.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

/* OpenBLAS and ncurses: declared here so diag does not include their headers (ncurses.h belongs to
 * the viewer). Both are exported by the libraries ascent links. */
extern char *openblas_get_config(void);
extern int openblas_get_num_threads(void);
extern const char *curses_version(void);

/* ------------------------------------------------------------------------------------------ */
/* Version strings */

static int is_sep(char c)
{
	return c == '.' || c == '-' || c == '_' || c == '+';
}

/* Next segment of a version: [*p, *p + len). Returns 0 at the end. */
static int next_seg(const char **p, const char **seg, size_t *len)
{
	while (**p && is_sep(**p))
		(*p)++;
	if (!**p)
		return 0;
	*seg = *p;
	if (isdigit((unsigned char)**p)) {
		while (**p && isdigit((unsigned char)**p))
			(*p)++;
	} else {
		while (**p && !is_sep(**p) && !isdigit((unsigned char)**p))
			(*p)++;
		while (**p && isdigit((unsigned char)**p))   /* "rc2" is one segment */
			(*p)++;
	}
	*len = (size_t)(*p - *seg);
	return 1;
}

static int cmp_word(const char *a, size_t la, const char *b, size_t lb)
{
	size_t wa = 0, wb = 0;
	while (wa < la && !isdigit((unsigned char)a[wa]))
		wa++;
	while (wb < lb && !isdigit((unsigned char)b[wb]))
		wb++;
	size_t m = wa < wb ? wa : wb;
	for (size_t i = 0; i < m; i++) {
		int d = tolower((unsigned char)a[i]) - tolower((unsigned char)b[i]);
		if (d)
			return d;
	}
	if (wa != wb)
		return wa < wb ? -1 : 1;
	long na = wa < la ? strtol(a + wa, NULL, 10) : 0, nb = wb < lb ? strtol(b + wb, NULL, 10) : 0;
	return na < nb ? -1 : na > nb;
}

int diag_version_cmp(const char *a, const char *b)
{
	const char *pa = a ? a : "", *pb = b ? b : "";
	for (;;) {
		const char *sa = NULL, *sb = NULL;
		size_t la = 0, lb = 0;
		int ha = next_seg(&pa, &sa, &la), hb = next_seg(&pb, &sb, &lb);
		if (!ha && !hb)
			return 0;
		/* a missing segment is "0" */
		int da = ha ? isdigit((unsigned char)*sa) : 1, db = hb ? isdigit((unsigned char)*sb) : 1;
		if (da && db) {
			unsigned long long na = ha ? strtoull(sa, NULL, 10) : 0, nb = hb ? strtoull(sb, NULL, 10) : 0;
			if (na != nb)
				return na < nb ? -1 : 1;
		} else if (da != db) {
			return da ? 1 : -1;   /* a word sorts before a number */
		} else {
			int c = cmp_word(sa, la, sb, lb);
			if (c)
				return c < 0 ? -1 : 1;
		}
	}
}

int diag_version_has_prefix(const char *v, const char *prefix)
{
	size_t n = strlen(prefix);
	if (!v || strncasecmp(v, prefix, n) != 0)
		return 0;
	return v[n] == 0 || is_sep(v[n]);
}

static void trim_copy(char *out, size_t n, const char *s, size_t len)
{
	while (len && (isspace((unsigned char)*s) || *s == '"' || *s == '\'')) {
		s++;
		len--;
	}
	while (len && (isspace((unsigned char)s[len - 1]) || s[len - 1] == '"' || s[len - 1] == '\''))
		len--;
	if (len >= n)
		len = n - 1;
	memcpy(out, s, len);
	out[len] = 0;
}

int diag_kv_find(const char *text, const char *key, char sep, char *out, size_t n)
{
	size_t kl = strlen(key);
	for (const char *line = text; line && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		const char *p = line;
		while (p < line + len && (*p == ' ' || *p == '\t'))
			p++;
		if ((size_t)(line + len - p) > kl && !strncmp(p, key, kl)) {
			const char *q = p + kl;
			while (q < line + len && (*q == ' ' || *q == '\t'))
				q++;
			if (q < line + len && *q == sep) {
				q++;
				trim_copy(out, n, q, (size_t)(line + len - q));
				return 1;
			}
		}
		line = end ? end + 1 : NULL;
	}
	return 0;
}

/* Copy the first token of `s` that looks like a dotted version (digits and dots, >= one dot). */
static int first_dotted(const char *s, char *out, size_t n)
{
	for (const char *p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || (p > s && (isalnum((unsigned char)p[-1]) || p[-1] == '.')))
			continue;
		const char *q = p;
		int dots = 0;
		while (isdigit((unsigned char)*q) || (*q == '.' && isdigit((unsigned char)q[1]))) {
			dots += *q == '.';
			q++;
		}
		if (dots >= 1) {
			trim_copy(out, n, p, (size_t)(q - p));
			return 1;
		}
	}
	return 0;
}

int diag_parse_nvidia_proc(const char *text, char *out, size_t n)
{
	const char *p = strstr(text, "Kernel Module");
	if (!p)
		p = strstr(text, "NVRM version:");
	if (!p)
		return 0;
	return first_dotted(p, out, n);
}

int diag_parse_cuda_version(const char *text, char *out, size_t n)
{
	cJSON *j = cJSON_Parse(text);
	if (j) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(j, "cuda");
		const cJSON *v = c ? cJSON_GetObjectItemCaseSensitive(c, "version") : NULL;
		int ok = cJSON_IsString(v);
		if (ok)
			snprintf(out, n, "%s", v->valuestring);
		cJSON_Delete(j);
		return ok;
	}
	const char *p = strstr(text, "CUDA Version");
	return p ? first_dotted(p, out, n) : 0;
}

static int define_int(const char *text, const char *name, long *v)
{
	size_t nl = strlen(name);
	for (const char *p = strstr(text, "#define"); p; p = strstr(p + 1, "#define")) {
		const char *q = p + 7;
		while (*q == ' ' || *q == '\t')
			q++;
		if (!strncmp(q, name, nl) && (q[nl] == ' ' || q[nl] == '\t')) {
			char *end;
			*v = strtol(q + nl, &end, 10);
			return end != q + nl;
		}
	}
	return 0;
}

int diag_parse_nccl_header(const char *text, char *out, size_t n)
{
	long ma, mi, pa;
	if (!define_int(text, "NCCL_MAJOR", &ma) || !define_int(text, "NCCL_MINOR", &mi) ||
	    !define_int(text, "NCCL_PATCH", &pa))
		return 0;
	snprintf(out, n, "%ld.%ld.%ld", ma, mi, pa);
	return 1;
}

int diag_parse_cann_info(const char *text, char *out, size_t n)
{
	if (diag_kv_find(text, "version", '=', out, n) || diag_kv_find(text, "Version", '=', out, n))
		return out[0] != 0;
	/* version.cfg: runtime_running_version=[7.0.0.5.242:8.0.RC1] — the CANN version after ':' */
	const char *p = strstr(text, "_running_version=[");
	if (!p)
		p = strstr(text, "_installed_version=[");
	if (!p)
		return 0;
	const char *colon = strchr(p, ':'), *close = strchr(p, ']');
	if (!colon || !close || colon > close)
		return 0;
	trim_copy(out, n, colon + 1, (size_t)(close - colon - 1));
	return out[0] != 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Collection */

const char *diag_versions_get(const struct diag_versions *vs, const char *name)
{
	for (int i = 0; i < vs->n; i++)
		if (!strcmp(vs->v[i].name, name))
			return vs->v[i].version;
	return NULL;
}

int diag_versions_set(struct diag_versions *vs, const char *name, const char *version, const char *detail,
		      const char *source)
{
	struct diag_version *v = NULL;
	for (int i = 0; i < vs->n; i++)
		if (!strcmp(vs->v[i].name, name))
			v = &vs->v[i];
	if (!v) {
		if (vs->n == DIAG_MAX_VERSIONS)
			return ascent_error(ASCENT_EINTERNAL, "too many versions (max %d)", DIAG_MAX_VERSIONS);
		v = &vs->v[vs->n++];
	}
	snprintf(v->name, sizeof v->name, "%s", name);
	snprintf(v->version, sizeof v->version, "%s", version ? version : "");
	snprintf(v->detail, sizeof v->detail, "%s", detail ? detail : "");
	snprintf(v->source, sizeof v->source, "%s", source ? source : "");
	return 0;
}

/* Read ROOT+path; 1 read (caller frees *text), 0 absent, <0 error on a present unreadable file. */
static int read_rooted(const char *root, const char *path, char *full, size_t nfull, char **text)
{
	snprintf(full, nfull, "%s%s", root, path);
	*text = NULL;
	if (!fs_exists(full))
		return 0;
	size_t len;
	int rc = fs_read_all(full, text, &len);
	return rc ? rc : 1;
}

static void collect_os(const char *root, int with_libs, struct diag_versions *vs)
{
	char full[4096], val[128];
	char *t;
	if (read_rooted(root, "/etc/os-release", full, sizeof full, &t) == 1) {
		char pretty[256] = "";
		diag_kv_find(t, "PRETTY_NAME", '=', pretty, sizeof pretty);
		if (!diag_kv_find(t, "VERSION_ID", '=', val, sizeof val))
			snprintf(val, sizeof val, "%s", pretty);
		char id[64] = "";
		diag_kv_find(t, "ID", '=', id, sizeof id);
		char ver[192];
		snprintf(ver, sizeof ver, "%s %s", id, val);
		diag_versions_set(vs, "os", ver, pretty, full);
		free(t);
	}
	if (read_rooted(root, "/proc/sys/kernel/osrelease", full, sizeof full, &t) == 1) {
		trim_copy(val, sizeof val, t, strlen(t));
		diag_versions_set(vs, "kernel", val, "", full);
		free(t);
	} else if (with_libs) {
		struct utsname u;
		if (uname(&u) == 0)
			diag_versions_set(vs, "kernel", u.release, u.version, "uname()");
	}
}

static void collect_libs(struct diag_versions *vs)
{
	char buf[512];
	diag_versions_set(vs, "glibc", gnu_get_libc_version(), "", "gnu_get_libc_version()");
#ifdef __VERSION__
	snprintf(buf, sizeof buf, "%d.%d.%d", __GNUC__, __GNUC_MINOR__, __GNUC_PATCHLEVEL__);
	diag_versions_set(vs, "compiler", buf, "gcc " __VERSION__, "__VERSION__ (the compiler that built ascent)");
#endif
	const char *cfg = openblas_get_config();
	char ver[64] = "";
	if (cfg && !strncmp(cfg, "OpenBLAS ", 9))
		first_dotted(cfg + 9, ver, sizeof ver);
	snprintf(buf, sizeof buf, "%s; core %s; %d threads", cfg ? cfg : "?", nn_blas_core(),
		 openblas_get_num_threads());
	diag_versions_set(vs, "openblas", ver, buf, "openblas_get_config()");
	diag_versions_set(vs, "openblas_core", nn_blas_core(),
			  getenv("OPENBLAS_CORETYPE") ? "OPENBLAS_CORETYPE is set" : "detected by DYNAMIC_ARCH",
			  "nn_blas_core()");
	const dnnl_version_t *dv = dnnl_version();
	snprintf(ver, sizeof ver, "%d.%d.%d", dv->major, dv->minor, dv->patch);
	snprintf(buf, sizeof buf, "oneDNN %s (git %s)", ver, dv->hash);
	diag_versions_set(vs, "onednn", ver, buf, "dnnl_version()");
	const char *cap = getenv("ONEDNN_MAX_CPU_ISA");
	if (cap && *cap)
		snprintf(buf, sizeof buf, "capped by ONEDNN_MAX_CPU_ISA=%.100s", cap);
	else
		snprintf(buf, sizeof buf, "the CPU's best; ONEDNN_MAX_CPU_ISA unset");
	diag_versions_set(vs, "onednn_isa", nn_dnnl_isa(), buf, "dnnl_get_effective_cpu_isa()");
	struct cpu_info ci;
	cpu_detect(&ci);
	cpu_isa_describe(&ci, buf, sizeof buf);
	diag_versions_set(vs, "cpu_isa", buf, ci.brand, "cpuid");
	char lib[MPI_MAX_LIBRARY_VERSION_STRING];
	int len = 0;
	if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
		lib[len < (int)sizeof lib ? len : (int)sizeof lib - 1] = 0;
		char *nl = strchr(lib, '\n');
		if (nl)
			*nl = 0;
		char *v = strstr(lib, " v");
		ver[0] = 0;
		if (v)
			first_dotted(v + 2, ver, sizeof ver);
		else
			first_dotted(lib, ver, sizeof ver);
		int ma = 0, mi = 0;
		MPI_Get_version(&ma, &mi);
		snprintf(buf, sizeof buf, "%.200s (MPI %d.%d)", lib, ma, mi);
		char name[64] = "mpi";
		diag_versions_set(vs, name, ver, buf, "MPI_Get_library_version()");
	}
	const char *cv = curses_version();
	ver[0] = 0;
	if (cv)
		first_dotted(cv, ver, sizeof ver);
	diag_versions_set(vs, "ncurses", ver, cv, "curses_version()");
	diag_versions_set(vs, "cjson", cJSON_Version(), "", "cJSON_Version()");
	diag_versions_set(vs, "sqlite", db_sqlite_version(), "", "db_sqlite_version() (the library profiles are read with)");
}

static void collect_gpu(const char *root, struct diag_versions *vs)
{
	char full[4096], val[128];
	char *t;
	if (read_rooted(root, "/proc/driver/nvidia/version", full, sizeof full, &t) == 1) {
		if (diag_parse_nvidia_proc(t, val, sizeof val)) {
			char *nl = strchr(t, '\n');
			if (nl)
				*nl = 0;
			diag_versions_set(vs, "nvidia_driver", val, t, full);
		}
		free(t);
	}
	static const char *cuda_files[] = { "/usr/local/cuda/version.json", "/usr/local/cuda/version.txt",
					    "/usr/local/cuda/include/cuda_runtime_api.h" };
	for (int i = 0; i < 3; i++) {
		if (read_rooted(root, cuda_files[i], full, sizeof full, &t) != 1)
			continue;
		long cv = 0;
		int ok = i < 2 ? diag_parse_cuda_version(t, val, sizeof val) : define_int(t, "CUDART_VERSION", &cv) && cv > 0;
		if (i == 2 && ok)   /* 13000 → 13.0 (the toolkit's major.minor; no update number in the header) */
			snprintf(val, sizeof val, "%ld.%ld", cv / 1000, cv % 1000 / 10);
		free(t);
		if (ok) {
			diag_versions_set(vs, "cuda", val, "", full);
			break;
		}
	}
	static const char *nccl_hdrs[] = { "/usr/include/nccl.h", "/usr/local/cuda/include/nccl.h",
					   "/usr/local/nccl/include/nccl.h" };
	for (int i = 0; i < 3; i++) {
		if (read_rooted(root, nccl_hdrs[i], full, sizeof full, &t) != 1)
			continue;
		int ok = diag_parse_nccl_header(t, val, sizeof val);
		free(t);
		if (ok) {
			diag_versions_set(vs, "nccl", val, "", full);
			return;
		}
	}
	static const char *nccl_libs[] = { "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64",
					   "/usr/local/cuda/lib64", "/usr/local/nccl/lib" };
	for (int i = 0; i < 5; i++) {
		snprintf(full, sizeof full, "%s%s", root, nccl_libs[i]);
		DIR *d = opendir(full);
		if (!d)
			continue;
		struct dirent *e;
		char best[128] = "";
		while ((e = readdir(d))) {
			if (strncmp(e->d_name, "libnccl.so.", 11))
				continue;
			const char *v = e->d_name + 11;
			if (strchr(v, '.') && diag_version_cmp(v, best) > 0)   /* X.Y.Z, not the soname "2" */
				snprintf(best, sizeof best, "%s", v);
		}
		closedir(d);
		if (best[0]) {
			char src[4200];
			snprintf(src, sizeof src, "%s/libnccl.so.%s", full, best);
			diag_versions_set(vs, "nccl", best, "from the library file name", src);
			return;
		}
	}
}

static void collect_ascend(const char *root, struct diag_versions *vs)
{
	char full[4096], val[128];
	char *t;
	if (read_rooted(root, "/usr/local/Ascend/driver/version.info", full, sizeof full, &t) == 1) {
		if (diag_kv_find(t, "Version", '=', val, sizeof val))
			diag_versions_set(vs, "ascend_driver", val, "", full);
		free(t);
	}
	if (read_rooted(root, "/usr/local/Ascend/firmware/version.info", full, sizeof full, &t) == 1) {
		if (diag_kv_find(t, "Version", '=', val, sizeof val))
			diag_versions_set(vs, "ascend_firmware", val, "", full);
		free(t);
	}
	static const char *pats[] = { "/usr/local/Ascend/ascend-toolkit/latest/*/ascend_toolkit_install.info",
				      "/usr/local/Ascend/ascend-toolkit/latest/version.cfg",
				      "/usr/local/Ascend/nnae/latest/*/ascend_nnae_install.info" };
	for (int i = 0; i < 3; i++) {
		char pat[4096];
		snprintf(pat, sizeof pat, "%s%s", root, pats[i]);
		glob_t g;
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		int done = 0;
		for (size_t k = 0; k < g.gl_pathc && !done; k++) {
			size_t len;
			if (fs_read_all(g.gl_pathv[k], &t, &len))
				continue;
			if (diag_parse_cann_info(t, val, sizeof val)) {
				diag_versions_set(vs, "cann", val, "", g.gl_pathv[k]);
				done = 1;
			}
			free(t);
		}
		globfree(&g);
		if (done)
			return;
	}
}

/* Python packages from their installation metadata (dist-info METADATA or egg-info PKG-INFO). */
static int python_pkg(const char *dir, const char *pkg, char *ver, size_t n, char *src, size_t nsrc)
{
	static const char *kinds[] = { "dist-info/METADATA", "egg-info/PKG-INFO", "egg-info" };
	for (int k = 0; k < 3; k++) {
		char pat[4200];
		const char *suffix = kinds[k];
		char ext[32];
		snprintf(ext, sizeof ext, "%.*s", (int)strcspn(suffix, "/"), suffix);
		snprintf(pat, sizeof pat, "%s/%s-[0-9]*.%s%s", dir, pkg, ext, strchr(suffix, '/') ? strchr(suffix, '/') : "");
		glob_t g;
		if (glob(pat, 0, NULL, &g) != 0)
			continue;
		int found = 0;
		for (size_t i = 0; i < g.gl_pathc && !found; i++) {
			if (fs_is_dir(g.gl_pathv[i]))
				continue;
			char *t;
			size_t len;
			if (fs_read_all(g.gl_pathv[i], &t, &len))
				continue;
			if (diag_kv_find(t, "Version", ':', ver, n)) {
				snprintf(src, nsrc, "%s", g.gl_pathv[i]);
				found = 1;
			}
			free(t);
		}
		globfree(&g);
		if (found)
			return 1;
	}
	return 0;
}

static void collect_python(const char *root, struct diag_versions *vs)
{
	char pats[6][4200];
	int np = 0;
	snprintf(pats[np++], sizeof pats[0], "%s/usr/lib/python3/dist-packages", root);
	snprintf(pats[np++], sizeof pats[0], "%s/usr/local/lib/python3*/*-packages", root);
	snprintf(pats[np++], sizeof pats[0], "%s/usr/lib/python3*/site-packages", root);
	snprintf(pats[np++], sizeof pats[0], "%s/usr/lib64/python3*/site-packages", root);
	const char *venv = root[0] ? NULL : getenv("VIRTUAL_ENV");
	if (venv && *venv)
		snprintf(pats[np++], sizeof pats[0], "%s/lib/python3*/site-packages", venv);
	const char *conda = root[0] ? NULL : getenv("CONDA_PREFIX");
	if (conda && *conda)
		snprintf(pats[np++], sizeof pats[0], "%s/lib/python3*/site-packages", conda);
	static const char *pkgs[][2] = { { "torch", "torch" }, { "torch_npu", "torch_npu" }, { "numpy", "numpy" } };
	for (int k = 0; k < 3; k++) {
		/* the last-listed site dir (venv, conda) wins: that is what `python` imports first */
		for (int i = np - 1; i >= 0; i--) {
			glob_t g;
			if (glob(pats[i], GLOB_ONLYDIR, NULL, &g) != 0)
				continue;
			char ver[128], src[4200];
			int found = 0;
			for (size_t j = 0; j < g.gl_pathc && !found; j++)
				found = python_pkg(g.gl_pathv[j], pkgs[k][0], ver, sizeof ver, src, sizeof src);
			globfree(&g);
			if (found) {
				diag_versions_set(vs, pkgs[k][1], ver, "", src);
				break;
			}
		}
	}
}

int diag_versions_collect(const char *root, int with_libs, struct diag_versions *out)
{
	memset(out, 0, sizeof *out);
	if (!root || !strcmp(root, "/"))
		root = "";
	collect_os(root, with_libs, out);
	if (with_libs)
		collect_libs(out);
	collect_gpu(root, out);
	collect_ascend(root, out);
	collect_python(root, out);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* The compatibility matrix */

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* "repo path@commit" or the document, for messages. */
static void source_text(const cJSON *row, char *out, size_t n)
{
	const cJSON *s = cJSON_GetObjectItemCaseSensitive(row, "source");
	const char *repo = s ? jstr(s, "repo") : NULL, *path = s ? jstr(s, "path") : NULL;
	const char *commit = s ? jstr(s, "commit") : NULL, *doc = s ? jstr(s, "doc") : NULL;
	if (repo)
		snprintf(out, n, "%s %s%s%.12s", repo, path ? path : "", commit ? "@" : "", commit ? commit : "");
	else
		snprintf(out, n, "%s", doc ? doc : "no source");
}

/* Torch's local version label ("2.1.0+cpu") is not part of the release. */
static void strip_local(const char *v, char *out, size_t n)
{
	snprintf(out, n, "%.*s", (int)strcspn(v, "+"), v);
}

static void check_torch_npu(const struct diag_versions *vs, const cJSON *m, struct diag_report *r)
{
	const char *npu = diag_versions_get(vs, "torch_npu");
	if (!npu)
		return;
	const char *torch_raw = diag_versions_get(vs, "torch"), *cann = diag_versions_get(vs, "cann");
	char torch[128] = "";
	if (torch_raw)
		strip_local(torch_raw, torch, sizeof torch);
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(m, "torch_npu"), *row;
	const cJSON *hit = NULL, *cann_hit = NULL;
	char canns[512] = "";
	cJSON_ArrayForEach(row, rows)
	{
		const char *v = jstr(row, "torch_npu");
		if (!v || diag_version_cmp(v, npu) != 0)
			continue;
		hit = row;
		const char *c = jstr(row, "cann");
		if (c && cann && diag_version_cmp(c, cann) == 0)
			cann_hit = row;
		if (c && strlen(canns) + strlen(c) + 3 < sizeof canns)
			snprintf(canns + strlen(canns), sizeof canns - strlen(canns), "%s%s", canns[0] ? ", " : "", c);
	}
	char src[512];
	if (!hit) {
		diag_check_add(r, DIAG_WARN, "versions.matrix.torch_npu", "check the torch_npu release notes for this version",
			       "unknown combination: torch_npu %s is not in the matrix (torch %s, CANN %s)", npu,
			       torch[0] ? torch : "absent", cann ? cann : "absent");
		return;
	}
	source_text(hit, src, sizeof src);
	const char *want = jstr(hit, "pytorch");
	if (torch[0] && want && diag_version_cmp(torch, want) != 0) {
		diag_check_add(r, DIAG_FAIL, "versions.matrix.torch_npu",
			       "install the PyTorch the torch_npu release was built for, or the torch_npu for this PyTorch",
			       "known incompatible: torch_npu %s is built for PyTorch %s but PyTorch %s is installed (%s)", npu,
			       want, torch, src);
		return;
	}
	if (cann && !cann_hit) {
		diag_check_add(r, DIAG_WARN, "versions.matrix.torch_npu", "use a CANN listed for this torch_npu",
			       "unknown combination: torch_npu %s lists CANN %s, found CANN %s (%s)", npu, canns, cann, src);
		return;
	}
	if (cann_hit)
		source_text(cann_hit, src, sizeof src);
	diag_check_add(r, DIAG_PASS, "versions.matrix.torch_npu", NULL, "compatible: torch_npu %s, PyTorch %s, CANN %s (%s)",
		       npu, torch[0] ? torch : want, cann ? cann : "absent", src);
}

static void check_cann_driver(const struct diag_versions *vs, const cJSON *m, struct diag_report *r)
{
	const char *cann = diag_versions_get(vs, "cann"), *drv = diag_versions_get(vs, "ascend_driver");
	if (!cann || !drv)
		return;
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(m, "cann_driver"), *row;
	const cJSON *listed = NULL, *any = NULL;
	int older_than_all = 1;
	char drivers[512] = "";
	cJSON_ArrayForEach(row, rows)
	{
		const char *c = jstr(row, "cann");
		if (!c || diag_version_cmp(c, cann) != 0)
			continue;
		any = row;
		const cJSON *d;
		cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(row, "drivers"))
		{
			if (!cJSON_IsString(d))
				continue;
			if (diag_version_cmp(d->valuestring, drv) == 0)
				listed = row;
			if (diag_version_cmp(drv, d->valuestring) >= 0)
				older_than_all = 0;
			if (!strstr(drivers, d->valuestring) && strlen(drivers) + strlen(d->valuestring) + 3 < sizeof drivers)
				snprintf(drivers + strlen(drivers), sizeof drivers - strlen(drivers), "%s%s",
					 drivers[0] ? ", " : "", d->valuestring);
		}
	}
	char src[512];
	if (!any) {
		diag_check_add(r, DIAG_WARN, "versions.matrix.cann_driver", "check CANN's release notes for the matching driver",
			       "unknown combination: CANN %s is not in the matrix (driver %s)", cann, drv);
		return;
	}
	source_text(listed ? listed : any, src, sizeof src);
	if (listed)
		diag_check_add(r, DIAG_PASS, "versions.matrix.cann_driver", NULL, "compatible: CANN %s with driver %s (%s)",
			       cann, drv, src);
	else if (older_than_all)
		diag_check_add(r, DIAG_FAIL, "versions.matrix.cann_driver", "upgrade the NPU driver and firmware (Ascend HDK)",
			       "known incompatible: driver %s is older than every driver listed for CANN %s (%s; %s)", drv,
			       cann, drivers, src);
	else
		diag_check_add(r, DIAG_WARN, "versions.matrix.cann_driver", "use a driver listed for this CANN release",
			       "unknown combination: driver %s is not listed for CANN %s (listed: %s; %s)", drv, cann,
			       drivers, src);
}

static void check_cuda_driver(const struct diag_versions *vs, const cJSON *m, struct diag_report *r)
{
	const char *cuda = diag_versions_get(vs, "cuda"), *drv = diag_versions_get(vs, "nvidia_driver");
	if (!cuda || !drv)
		return;
	int ma = 0, mi = 0, up = 0;
	sscanf(cuda, "%d.%d.%d", &ma, &mi, &up);
	char mm[32];
	snprintf(mm, sizeof mm, "%d.%d", ma, mi);
	const cJSON *cd = cJSON_GetObjectItemCaseSensitive(m, "cuda_driver");
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(cd, "rows"), *row, *best = NULL;
	int best_up = -1;
	cJSON_ArrayForEach(row, rows)
	{
		const char *c = jstr(row, "cuda");
		const cJSON *u = cJSON_GetObjectItemCaseSensitive(row, "update");
		int ru = cJSON_IsNumber(u) ? u->valueint : 0;
		if (c && !strcmp(c, mm) && ru <= up && ru > best_up) {
			best = row;
			best_up = ru;
		}
	}
	char src[512];
	source_text(cd, src, sizeof src);
	if (!best) {
		diag_check_add(r, DIAG_WARN, "versions.matrix.cuda_driver", "check NVIDIA's CUDA release notes (Table 3)",
			       "unknown combination: CUDA %s is not in the matrix (driver %s)", cuda, drv);
		return;
	}
	const char *min = jstr(best, "min_driver");
	if (min && diag_version_cmp(drv, min) >= 0) {
		diag_check_add(r, DIAG_PASS, "versions.matrix.cuda_driver", NULL,
			       "compatible: driver %s >= %s required by %s (%s)", drv, min, jstr(best, "published"), src);
		return;
	}
	const cJSON *mc = cJSON_GetObjectItemCaseSensitive(m, "cuda_minor_compat");
	char majs[16];
	snprintf(majs, sizeof majs, "%d", ma);
	cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(mc, "rows"))
	{
		const char *cm = jstr(row, "cuda_major"), *mmin = jstr(row, "min_driver");
		if (cm && mmin && !strcmp(cm, majs) && diag_version_cmp(drv, mmin) >= 0) {
			diag_check_add(r, DIAG_WARN, "versions.matrix.cuda_driver",
				       "upgrade the NVIDIA driver for the full feature set",
				       "driver %s is below %s required by %s but >= %s: runs only through minor-version "
				       "compatibility (limited features, PTX JIT may fail) (%s)",
				       drv, min, jstr(best, "published"), mmin, src);
			return;
		}
	}
	diag_check_add(r, DIAG_FAIL, "versions.matrix.cuda_driver", "upgrade the NVIDIA driver",
		       "known incompatible: driver %s is below %s required by %s and below CUDA %d.x's minor-version "
		       "compatibility minimum (%s)",
		       drv, min ? min : "?", jstr(best, "published"), ma, src);
}

static void check_nccl_cuda(const struct diag_versions *vs, const cJSON *m, struct diag_report *r)
{
	const char *nccl = diag_versions_get(vs, "nccl"), *cuda = diag_versions_get(vs, "cuda");
	if (!nccl || !cuda)
		return;
	int ma = 0, mi = 0;
	sscanf(cuda, "%d.%d", &ma, &mi);
	char mm[32];
	snprintf(mm, sizeof mm, "%d.%d", ma, mi);
	const cJSON *row;
	char src[512], listed[1024] = "";
	int seen = 0;
	cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(m, "nccl_cuda"))
	{
		const char *n = jstr(row, "nccl");
		if (!n || !(diag_version_has_prefix(nccl, n) || diag_version_has_prefix(n, nccl)))
			continue;
		seen = 1;
		source_text(row, src, sizeof src);
		const cJSON *list = cJSON_GetObjectItemCaseSensitive(row, "cuda"), *c;
		if (list) {
			cJSON_ArrayForEach(c, list)
			{
				if (cJSON_IsString(c) && diag_version_cmp(c->valuestring, mm) == 0) {
					diag_check_add(r, DIAG_PASS, "versions.matrix.nccl_cuda", NULL,
						       "compatible: NCCL %s supports CUDA %s (%s)", nccl, mm, src);
					return;
				}
				if (cJSON_IsString(c) && strlen(listed) + strlen(c->valuestring) + 3 < sizeof listed)
					snprintf(listed + strlen(listed), sizeof listed - strlen(listed), "%s%s",
						 listed[0] ? ", " : "", c->valuestring);
			}
			continue;
		}
		const char *lo = jstr(row, "cuda_min"), *hi = jstr(row, "cuda_below");
		if (lo && hi) {
			/* a range is one distribution's build ("cuda-version >=12.4,<13"): NCCL ships other
			 * builds per CUDA, so outside it is unknown, not incompatible */
			int in = diag_version_cmp(cuda, lo) >= 0 && diag_version_cmp(cuda, hi) < 0;
			if (in) {
				diag_check_add(r, DIAG_PASS, "versions.matrix.nccl_cuda", NULL,
					       "compatible: NCCL %s built for CUDA >= %s and < %s, found %s (%s)", nccl, lo, hi,
					       cuda, src);
				return;
			}
			snprintf(listed + strlen(listed), sizeof listed - strlen(listed), "%s>= %s and < %s (%.200s)",
				 listed[0] ? ", " : "", lo, hi, src);
			continue;
		}
	}
	if (seen)
		diag_check_add(r, DIAG_WARN, "versions.matrix.nccl_cuda", "use an NCCL build for this CUDA",
			       "unknown combination: NCCL %s is published for CUDA %s, found CUDA %s", nccl, listed, mm);
	else
		diag_check_add(r, DIAG_WARN, "versions.matrix.nccl_cuda", "check NCCL's release notes",
			       "unknown combination: NCCL %s is not in the matrix (CUDA %s)", nccl, cuda);
}

int diag_versions_check_matrix(const struct diag_versions *vs, const cJSON *matrix, struct diag_report *r)
{
	size_t before = (size_t)r->n;
	check_torch_npu(vs, matrix, r);
	check_cann_driver(vs, matrix, r);
	check_cuda_driver(vs, matrix, r);
	check_nccl_cuda(vs, matrix, r);
	if ((size_t)r->n == before)
		diag_check_add(r, DIAG_SKIP, "versions.matrix", NULL,
			       "no pair in the matrix applies here (no torch_npu, CANN + driver, CUDA + driver, NCCL + CUDA)");
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Across ranks */

int diag_versions_compare_ranks(const struct diag_versions *vs, const char *const *hosts, int n,
				struct diag_report *r)
{
	if (n <= 1) {
		diag_check_add(r, DIAG_SKIP, "versions.ranks", NULL, "one rank: nothing to compare (run under mpirun)");
		return 0;
	}
	/* every component any rank reports */
	char msg[1024] = "";
	int ndiff = 0;
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < vs[i].n; k++) {
			const char *name = vs[i].v[k].name;
			int first = 1;   /* only handle a name at its first appearance */
			for (int j = 0; j < i && first; j++)
				if (diag_versions_get(&vs[j], name))
					first = 0;
			for (int kk = 0; kk < k && first; kk++)
				if (!strcmp(vs[i].v[kk].name, name))
					first = 0;
			/* the CPU's extensions and oneDNN's ISA describe hardware, not installed software:
			 * nodes of two CPU generations are no installation fault */
			if (!first || !strcmp(name, "cpu_isa") || !strcmp(name, "onednn_isa"))
				continue;
			/* the majority value */
			int best = -1, bestc = 0;
			for (int a = 0; a < n; a++) {
				const char *va = diag_versions_get(&vs[a], name);
				int c = 0;
				for (int b = 0; b < n; b++) {
					const char *vb = diag_versions_get(&vs[b], name);
					c += (!va && !vb) || (va && vb && !strcmp(va, vb));
				}
				if (c > bestc) {
					bestc = c;
					best = a;
				}
			}
			if (bestc == n)
				continue;
			const char *maj = diag_versions_get(&vs[best], name);
			ndiff++;
			size_t off = strlen(msg);
			snprintf(msg + off, sizeof msg - off, "%s%s: %s on %d ranks but", off ? "; " : "", name,
				 maj ? maj : "absent", bestc);
			for (int a = 0; a < n; a++) {
				const char *va = diag_versions_get(&vs[a], name);
				if ((!va && !maj) || (va && maj && !strcmp(va, maj)))
					continue;
				off = strlen(msg);
				snprintf(msg + off, sizeof msg - off, " rank %d (%s) has %s,", a, hosts && hosts[a] ? hosts[a] : "?",
					 va ? va : "none");
			}
			off = strlen(msg);
			if (off && msg[off - 1] == ',')
				msg[off - 1] = 0;
		}
	}
	if (!ndiff)
		return diag_check_add(r, DIAG_PASS, "versions.ranks", NULL, "all %d ranks report the same versions", n);
	return diag_check_add(r, DIAG_FAIL, "versions.ranks",
			      "install the same software on every node (a library differing on one node hangs or "
			      "corrupts collectives)",
			      "%d component(s) differ across ranks: %s", ndiff, msg);
}

/* ------------------------------------------------------------------------------------------ */

static const char *default_matrix(char *buf, size_t n)
{
	const char *e = getenv("ASCENT_VERSION_MATRIX");
	if (e && *e)
		return e;
	/* next to the binary: BIN/../samples (the repo) or PREFIX/share/ascent */
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len > 0) {
		exe[len] = 0;
		for (int up = 0; up < 4; up++) {
			char *slash = strrchr(exe, '/');
			if (!slash)
				break;
			*slash = 0;
			snprintf(buf, n, "%.4000s/samples/version_matrix.json", exe);
			if (fs_exists(buf))
				return buf;
			snprintf(buf, n, "%.4000s/share/ascent/version_matrix.json", exe);
			if (fs_exists(buf))
				return buf;
		}
	}
	if (fs_exists("samples/version_matrix.json"))
		return "samples/version_matrix.json";
	return NULL;
}

int diag_versions_run(const struct diag_versions_opts *o, struct diag_report *r)
{
	const char *root = o->root && *o->root ? o->root : "/";
	if (o->root && *o->root && !fs_is_dir(o->root))
		return ascent_error(ASCENT_EUSAGE, "--root '%s' is not a directory", o->root);
	struct diag_versions *vs = calloc(1, sizeof *vs);
	if (!vs)
		return ascent_error(ASCENT_ENOMEM, "out of memory collecting versions");
	int with_libs = !strcmp(root, "/");
	int rc = diag_versions_collect(root, with_libs, vs);
	if (rc) {
		free(vs);
		return rc;
	}
	cJSON *arr = cJSON_AddArrayToObject(r->data, "versions");
	for (int i = 0; i < vs->n; i++) {
		const struct diag_version *v = &vs->v[i];
		cJSON *o2 = cJSON_CreateObject();
		cJSON_AddStringToObject(o2, "name", v->name);
		cJSON_AddStringToObject(o2, "version", v->version);
		cJSON_AddStringToObject(o2, "detail", v->detail);
		cJSON_AddStringToObject(o2, "source", v->source);
		cJSON_AddItemToArray(arr, o2);
		diag_ident_add(r, v->name, "%s%s%s%s", v->version, v->detail[0] ? "  (" : "", v->detail,
			       v->detail[0] ? ")" : "");
	}
	/* components a pre-flight user expects to see, reported absent like collect_env does */
	static const char *expected[] = { "nvidia_driver", "cuda", "nccl", "ascend_driver", "cann", "torch",
					  "torch_npu", "numpy" };
	char absent[256] = "";
	for (size_t i = 0; i < sizeof expected / sizeof expected[0]; i++)
		if (!diag_versions_get(vs, expected[i]))
			snprintf(absent + strlen(absent), sizeof absent - strlen(absent), "%s%s", absent[0] ? ", " : "",
				 expected[i]);
	diag_check_add(r, DIAG_PASS, "versions.collect", NULL, "%d components found under '%s'%s%s", vs->n, root,
		       absent[0] ? "; not installed: " : "", absent);
	if (o->comm && comm_size(o->comm, COMM_WORLD) > 1) {
		int n = comm_size(o->comm, COMM_WORLD);
		struct diag_versions *all = calloc((size_t)n, sizeof *all);
		char(*hosts)[64] = calloc((size_t)n, 64);
		const char **hp = calloc((size_t)n, sizeof *hp);
		char host[64] = "";
		gethostname(host, sizeof host - 1);
		rc = !all || !hosts || !hp ? ascent_error(ASCENT_ENOMEM, "out of memory gathering versions") : 0;
		if (!rc)
			rc = comm_allgather(o->comm, COMM_WORLD, vs, all, sizeof *vs, COMM_BYTE);
		if (!rc)
			rc = comm_allgather(o->comm, COMM_WORLD, host, hosts, sizeof host, COMM_BYTE);
		if (!rc) {
			for (int i = 0; i < n; i++) {
				hosts[i][63] = 0;
				hp[i] = hosts[i];
			}
			/* the thread count is part of openblas's detail, not its version: compare versions only */
			diag_versions_compare_ranks(all, hp, n, r);
		}
		free(all);
		free(hosts);
		free(hp);
		if (rc) {
			free(vs);
			return rc;
		}
	}
	char mbuf[4096];
	const char *mpath = o->matrix ? o->matrix : default_matrix(mbuf, sizeof mbuf);
	if (!mpath) {
		diag_check_add(r, DIAG_SKIP, "versions.matrix", "pass --matrix FILE or set ASCENT_VERSION_MATRIX",
			       "no compatibility matrix found (samples/version_matrix.json)");
	} else {
		cJSON *m;
		rc = json_read_file(mpath, &m);
		if (rc) {
			free(vs);
			return ascent_error_ctx(rc, "compatibility matrix");
		}
		if (!cJSON_IsObject(m) || !cJSON_GetObjectItemCaseSensitive(m, "schema")) {
			cJSON_Delete(m);
			free(vs);
			return ascent_error(ASCENT_EINPUT,
					    "'%s' is not a version matrix (no \"schema\" member; see samples/version_matrix.json)",
					    mpath);
		}
		cJSON_AddStringToObject(r->data, "matrix", mpath);
		diag_versions_check_matrix(vs, m, r);
		cJSON_Delete(m);
	}
	free(vs);
	return 0;
}
