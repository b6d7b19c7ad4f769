/* profiler/elfsym.c — names for code addresses dladdr cannot name: functions of an executable not
 * linked with -rdynamic, static functions, anything listed only in a module's .symtab. Each module
 * file is read once (ELF64 section headers, SHT_SYMTAB, STT_FUNC symbols with a size), kept sorted,
 * and searched by address. Used by the writer thread at shutdown (symbolization), so nothing here
 * is on a hot path; every offset read from the file is checked against its size. */
#include "profiler/internal.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct emod {
	char *path;
	struct prof_elf_syms syms;   /* empty when unreadable or stripped */
};

static struct emod *mods;
static size_t nmods, capmods;

static int esym_cmp(const void *a, const void *b)
{
	const struct prof_elf_sym *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static int in_file(uint64_t off, uint64_t len, size_t size)
{
	return off <= size && len <= size - off;
}

/* A defined function with a size, a name inside the string table, not wrapping around. */
static int func_sym(const Elf64_Sym *sy, const char *strs, uint64_t strs_len)
{
	return ELF64_ST_TYPE(sy->st_info) == STT_FUNC && sy->st_size && sy->st_shndx != SHN_UNDEF &&
	       sy->st_value + sy->st_size > sy->st_value && sy->st_name < strs_len &&
	       memchr(strs + sy->st_name, 0, strs_len - sy->st_name);
}

int prof_elf_symbols(const unsigned char *img, size_t size, struct prof_elf_syms *out)
{
	memset(out, 0, sizeof *out);
	if (size < sizeof(Elf64_Ehdr) || memcmp(img, ELFMAG, SELFMAG) != 0 || img[EI_CLASS] != ELFCLASS64 ||
	    img[EI_DATA] != ELFDATA2LSB)
		return ascent_error(ASCENT_EINPUT, "not a little-endian ELF64 file");
	Elf64_Ehdr eh;
	memcpy(&eh, img, sizeof eh);
	out->dyn = eh.e_type == ET_DYN;
	if (eh.e_shentsize != sizeof(Elf64_Shdr) || !in_file(eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr), size))
		return ascent_error(ASCENT_EINPUT, "ELF section headers out of the file");
	const unsigned char *sh0 = img + eh.e_shoff;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh, str;
		memcpy(&sh, sh0 + (size_t)i * sizeof sh, sizeof sh);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		if (sh.sh_entsize != sizeof(Elf64_Sym) || sh.sh_link >= eh.e_shnum || !in_file(sh.sh_offset, sh.sh_size, size))
			return ascent_error(ASCENT_EINPUT, "bad ELF symbol table");
		memcpy(&str, sh0 + (size_t)sh.sh_link * sizeof str, sizeof str);
		if (!in_file(str.sh_offset, str.sh_size, size))
			return ascent_error(ASCENT_EINPUT, "bad ELF string table");
		const char *strs = (const char *)img + str.sh_offset;
		size_t nsym = sh.sh_size / sizeof(Elf64_Sym), pool_len = 0, n = 0;
		for (size_t k = 0; k < nsym; k++) {
			Elf64_Sym sy;
			memcpy(&sy, img + sh.sh_offset + k * sizeof sy, sizeof sy);
			if (!func_sym(&sy, strs, str.sh_size))
				continue;
			pool_len += strlen(strs + sy.st_name) + 1;
			n++;
		}
		out->s = calloc(n ? n : 1, sizeof *out->s);
		out->pool = malloc(pool_len ? pool_len : 1);
		if (!out->s || !out->pool) {
			prof_elf_syms_free(out);
			return ascent_error(ASCENT_ENOMEM, "out of memory reading symbols");
		}
		char *p = out->pool;
		for (size_t k = 0; k < nsym; k++) {
			Elf64_Sym sy;
			memcpy(&sy, img + sh.sh_offset + k * sizeof sy, sizeof sy);
			if (!func_sym(&sy, strs, str.sh_size))
				continue;
			size_t l = strlen(strs + sy.st_name) + 1;
			memcpy(p, strs + sy.st_name, l);
			out->s[out->n].lo = sy.st_value;
			out->s[out->n].hi = sy.st_value + sy.st_size;
			out->s[out->n].name = p;
			out->n++;
			p += l;
		}
		qsort(out->s, out->n, sizeof *out->s, esym_cmp);
		return 0;
	}
	return 0;   /* stripped: no .symtab */
}

void prof_elf_syms_free(struct prof_elf_syms *s)
{
	free(s->s);
	free(s->pool);
	memset(s, 0, sizeof *s);
}

const char *prof_elf_lookup(const struct prof_elf_syms *s, uint64_t addr, uint64_t *off)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {   /* the last symbol starting at or before addr */
		size_t mid = lo + (hi - lo) / 2;
		if (s->s[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0;) {   /* nested or overlapping symbols: the nearest that contains it */
		if (addr < s->s[i].hi) {
			*off = addr - s->s[i].lo;
			return s->s[i].name;
		}
		if (lo - i > 8)
			break;
	}
	return NULL;
}

static struct emod *mod_load(const char *path)
{
	for (size_t i = 0; i < nmods; i++)
		if (!strcmp(mods[i].path, path))
			return &mods[i];
	if (nmods == capmods) {
		size_t nc = capmods ? capmods * 2 : 16;
		struct emod *m2 = realloc(mods, nc * sizeof *m2);
		if (!m2)
			return NULL;
		mods = m2;
		capmods = nc;
	}
	struct emod *m = &mods[nmods];
	memset(m, 0, sizeof *m);
	if (!(m->path = strdup(path)))
		return NULL;
	nmods++;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return m;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
		void *img = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (img != MAP_FAILED) {
			if (prof_elf_symbols(img, (size_t)st.st_size, &m->syms) != 0)
				memset(&m->syms, 0, sizeof m->syms);
			munmap(img, (size_t)st.st_size);
		}
	}
	close(fd);
	return m;
}

const char *prof_elf_name(const char *module, uint64_t base, uint64_t ip, uint64_t *off)
{
	if (!module || !*module)
		return NULL;
	struct emod *m = mod_load(module);
	if (!m || !m->syms.n)
		return NULL;
	return prof_elf_lookup(&m->syms, m->syms.dyn ? ip - base : ip, off);
}

void prof_elf_reset(void)
{
	for (size_t i = 0; i < nmods; i++) {
		free(mods[i].path);
		prof_elf_syms_free(&mods[i].syms);
	}
	free(mods);
	mods = NULL;
	nmods = capmods = 0;
}
