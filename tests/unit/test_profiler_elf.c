/* tests/unit/test_profiler_elf.c — profiler/elfsym.c: functions dladdr cannot name (static ones,
 * an executable's own without -rdynamic) are named from the file's .symtab, with the right offset,
 * in this test binary (a PIE); damaged ELF images are refused without reading outside them. */
#include "profiler/internal.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static int static_probe(int x)
{
	return x * 3 + 1;
}

Test(elfsym, names_a_static_function_of_this_executable)
{
	int (*volatile fn)(int) = static_probe;
	cr_assert_eq(fn(2), 7);
	int (*f)(int) = fn;
	uintptr_t at;
	memcpy(&at, &f, sizeof at);   /* a function's address as a number (ISO C has no cast for it) */
	Dl_info di;
	cr_assert(dladdr((void *)at, &di));
	cr_assert_null(di.dli_sname, "dladdr named a static function: the test proves nothing");
	uint64_t off = 0;
	const char *name = prof_elf_name("/proc/self/exe", (uint64_t)(uintptr_t)di.dli_fbase,
					 (uint64_t)at + 3, &off);
	cr_assert_not_null(name);
	cr_assert_str_eq(name, "static_probe");
	cr_assert_eq(off, 3);
	/* an address between functions' ends is not attributed to the one before */
	cr_assert_null(prof_elf_name("/proc/self/exe", (uint64_t)(uintptr_t)di.dli_fbase, 1, &off));
	cr_assert_null(prof_elf_name("/nonexistent/module", 0, 1234, &off));
	prof_elf_reset();
}

Test(elfsym, damaged_images_are_refused)
{
	struct prof_elf_syms s;
	unsigned char junk[200];
	memset(junk, 0x41, sizeof junk);
	cr_assert_eq(prof_elf_symbols(junk, sizeof junk, &s), ASCENT_EINPUT);
	cr_assert_eq(prof_elf_symbols(junk, 10, &s), ASCENT_EINPUT);
	/* a valid header whose section table lies past the end */
	Elf64_Ehdr eh;
	memset(&eh, 0, sizeof eh);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_type = ET_DYN;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = 4;
	eh.e_shoff = 1u << 30;
	unsigned char img[sizeof eh + 2 * sizeof(Elf64_Shdr)];
	memset(img, 0, sizeof img);
	memcpy(img, &eh, sizeof eh);
	cr_assert_eq(prof_elf_symbols(img, sizeof img, &s), ASCENT_EINPUT);
	/* a symbol table pointing outside the file; its string table index out of range */
	eh.e_shoff = sizeof eh;
	eh.e_shnum = 2;
	memcpy(img, &eh, sizeof eh);
	Elf64_Shdr sh;
	memset(&sh, 0, sizeof sh);
	sh.sh_type = SHT_SYMTAB;
	sh.sh_entsize = sizeof(Elf64_Sym);
	sh.sh_offset = 8;
	sh.sh_size = 1u << 20;
	sh.sh_link = 1;
	memcpy(img + sizeof eh + sizeof sh, &sh, sizeof sh);
	cr_assert_eq(prof_elf_symbols(img, sizeof img, &s), ASCENT_EINPUT);
	sh.sh_size = sizeof(Elf64_Sym);
	sh.sh_link = 7;
	memcpy(img + sizeof eh + sizeof sh, &sh, sizeof sh);
	cr_assert_eq(prof_elf_symbols(img, sizeof img, &s), ASCENT_EINPUT);
	/* no .symtab at all: no symbols, no error */
	sh.sh_type = SHT_PROGBITS;
	memcpy(img + sizeof eh + sizeof sh, &sh, sizeof sh);
	cr_assert_eq(prof_elf_symbols(img, sizeof img, &s), 0);
	cr_assert_eq(s.n, 0);
	prof_elf_syms_free(&s);
}
