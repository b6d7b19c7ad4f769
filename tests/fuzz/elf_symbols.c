/* tests/fuzz/elf_symbols.c — profiler/elfsym.c reads the .symtab of whatever module a sampled
 * address lies in: a file on disk, possibly truncated, replaced or not ELF at all while the program
 * ran. Every input is parsed as an ELF image and looked up at a few addresses; a refused input is
 * fine, a crash, a read outside the image or a leak is not.
 *
 * Built by the fuzz harness (clang -fsanitize=fuzzer, which brings libFuzzer's main). Without it
 * (the plain build), the weak main below replays the files given as arguments. */
#include "profiler/internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	/* a copy of exactly len bytes, so that ASan sees any read past the end */
	unsigned char *img = malloc(len ? len : 1);
	if (!img)
		return 0;
	memcpy(img, data, len);
	struct prof_elf_syms s;
	if (prof_elf_symbols(img, len, &s) == 0) {
		uint64_t off;
		for (size_t i = 0; i < s.n; i++) {
			if (s.s[i].lo > s.s[i].hi || !s.s[i].name)
				abort();
			const char *n = prof_elf_lookup(&s, s.s[i].lo, &off);
			if (!n || strlen(n) > len)
				abort();
		}
		prof_elf_lookup(&s, 0, &off);
		prof_elf_lookup(&s, UINT64_MAX, &off);
		prof_elf_syms_free(&s);
	}
	free(img);
	return 0;
}

/* The plain build's replayer: each argument is an input file. */
__attribute__((weak)) int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		char *d;
		size_t n;
		if (fs_read_all(argv[i], &d, &n) != 0) {
			fprintf(stdout, "%s: %s\n", argv[i], ascent_errmsg());
			return 2;
		}
		LLVMFuzzerTestOneInput((const uint8_t *)d, n);
		free(d);
	}
	return 0;
}
