/* tests/fuzz/safetensors.c — the safetensors reader (common/safetensors.c st_parse) on any bytes;
 * on success every tensor and metadata entry it hands out is read in full. */
#include "fuzz.h"

static volatile uint8_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	(void)fuzz_dir();
	struct st_file f;
	if (st_parse(&f, data, len, "fuzz") == 0) {
		for (int i = 0; i < f.n; i++) {
			const uint8_t *p = f.t[i].data;
			for (uint64_t j = 0; j < f.t[i].nbytes; j++)
				sink ^= p[j];
			(void)st_find(&f, f.t[i].name);
		}
		for (int i = 0; i < f.nmeta; i++)
			(void)st_meta(&f, f.meta_key[i]);
		st_close(&f);
	}
	return 0;
}
