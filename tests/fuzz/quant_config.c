/* tests/fuzz/quant_config.c — an INT8 checkpoint's config.json (GPT2Config keys plus the
 * compressed-tensors quantization_config) read by quant_is_quantized_ckpt and quant_model_open.
 * The folder holds no model.safetensors: the config must be judged (or refused) first. A model a
 * config asks for may be as big as a user likes; beyond 4M parameters the target stops before
 * allocating it (a big model is not a bug, and libFuzzer's memory limit would call it one). */
#include "fuzz.h"
#include "nn/nn.h"
#include "quant/quant.h"
#include "trainer/trainer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t len)
{
	char path[4200], dir[4200];
	fuzz_write("q/config.json", data, len, path, sizeof path);
	snprintf(dir, sizeof dir, "%s/q", fuzz_dir());
	if (!quant_is_quantized_ckpt(dir))
		return 0;
	struct nn_config cfg;
	if (trainer_hf_config_read(dir, &cfg) == 0 && nn_param_count(&cfg) > (4u << 20))
		return 0;
	struct quant_model qm;
	char src[4200];
	memset(&qm, 0, sizeof qm);
	if (quant_model_open(dir, &qm, src, sizeof src) == 0)
		quant_model_release(&qm);
	return 0;
}
