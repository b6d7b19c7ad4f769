/* tests/fuzz/shard.c — an llm.c token shard (trainer_shard_read: header, count against size,
 * tokens against the vocabulary) and the loader that sniffs shard or text (trainer_tokens_load). */
#include "fuzz.h"
#include "trainer/trainer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char path[4200];
	fuzz_write("data/train.bin", data, len, path, sizeof path);
	struct trainer_tokens t = { 0 };
	if (trainer_shard_read(path, 50257, &t) == 0)
		trainer_tokens_release(&t);
	struct trainer_tokens u = { 0 };
	if (trainer_tokens_load(path, 256, &u) == 0)
		trainer_tokens_release(&u);
	return 0;
}
