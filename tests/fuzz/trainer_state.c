/* tests/fuzz/trainer_state.c — a checkpoint's trainer_state.safetensors (its metadata: step, loss
 * scale, data fingerprint, the configuration JSON and its hash) read by trainer_ckpt_read_state. */
#include "fuzz.h"
#include "trainer/trainer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char path[4200], dir[4200];
	fuzz_write("ckpt/trainer_state.safetensors", data, len, path, sizeof path);
	snprintf(dir, sizeof dir, "%s/ckpt", fuzz_dir());
	struct trainer_state st;
	memset(&st, 0, sizeof st);
	(void)trainer_ckpt_read_state(dir, &st);
	return 0;
}
