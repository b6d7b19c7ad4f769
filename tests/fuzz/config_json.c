/* tests/fuzz/config_json.c — configuration JSON: `train --config FILE.json` (every key of the
 * trainer's table, then the constraints between them) and a checkpoint's GPT2Config config.json. */
#include "fuzz.h"
#include "nn/nn.h"
#include "trainer/trainer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char path[4200];
	fuzz_write("config.json", data, len, path, sizeof path);
	struct trainer_config c;
	trainer_config_defaults(&c);
	if (trainer_config_load_file(&c, path, NULL) == 0) {
		c.init_from[0] = 0;   /* never read a checkpoint named by the input */
		c.resume[0] = 0;
		(void)trainer_config_finish(&c);
	}
	struct nn_config mc;
	(void)trainer_hf_config_read(fuzz_dir(), &mc);
	return 0;
}
