/* nn/config.c — model configurations: presets, validation, parameter sizes, FLOPs per token. */
#include "nn/nn.h"

#include "common/common.h"

#include <string.h>

int nn_config_preset(const char *name, struct nn_config *out)
{
	static const struct {
		const char *name;
		struct nn_config c;
	} presets[] = {
		{ "tiny", { .vocab_size = 256, .max_seq = 256, .n_layer = 4, .n_head = 4, .n_embd = 256 } },
		{ "small", { .vocab_size = 256, .max_seq = 256, .n_layer = 6, .n_head = 8, .n_embd = 512 } },
		{ "gpt2-124m", { .vocab_size = 256, .max_seq = 1024, .n_layer = 12, .n_head = 12, .n_embd = 768 } },
	};
	for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++) {
		if (name && strcmp(name, presets[i].name) == 0) {
			*out = presets[i].c;
			return 0;
		}
	}
	return ascent_error(ASCENT_EUSAGE, "unknown model preset '%s' (accepted: tiny, small, gpt2-124m)",
			    name ? name : "(null)");
}

int nn_config_validate(const struct nn_config *c)
{
	if (c->vocab_size < 1 || c->vocab_size > (1 << 24))
		return ascent_error(ASCENT_EINPUT, "model vocab_size %d is out of range [1, 16777216]",
				    c->vocab_size);
	if (c->max_seq < 1 || c->max_seq > (1 << 20))
		return ascent_error(ASCENT_EINPUT, "model max_seq %d is out of range [1, 1048576]", c->max_seq);
	if (c->n_layer < 1 || c->n_layer > 1024)
		return ascent_error(ASCENT_EINPUT, "model n_layer %d is out of range [1, 1024]", c->n_layer);
	if (c->n_head < 1 || c->n_head > 1024)
		return ascent_error(ASCENT_EINPUT, "model n_head %d is out of range [1, 1024]", c->n_head);
	if (c->n_embd < 1 || c->n_embd > 65536)
		return ascent_error(ASCENT_EINPUT, "model n_embd %d is out of range [1, 65536]", c->n_embd);
	if (c->n_embd % c->n_head != 0)
		return ascent_error(ASCENT_EINPUT, "model n_embd %d is not a multiple of n_head %d", c->n_embd,
				    c->n_head);
	return 0;
}

void nn_param_sizes(const struct nn_config *c, size_t s[NN_NPARAMS])
{
	size_t V = (size_t)c->vocab_size, T = (size_t)c->max_seq, L = (size_t)c->n_layer, C = (size_t)c->n_embd;
	s[NN_WTE] = V * C;
	s[NN_WPE] = T * C;
	s[NN_LN1W] = L * C;
	s[NN_LN1B] = L * C;
	s[NN_QKVW] = L * C * 3 * C;
	s[NN_QKVB] = L * 3 * C;
	s[NN_ATTPROJW] = L * C * C;
	s[NN_ATTPROJB] = L * C;
	s[NN_LN2W] = L * C;
	s[NN_LN2B] = L * C;
	s[NN_FCW] = L * C * 4 * C;
	s[NN_FCB] = L * 4 * C;
	s[NN_FCPROJW] = L * 4 * C * C;
	s[NN_FCPROJB] = L * C;
	s[NN_LNFW] = C;
	s[NN_LNFB] = C;
}

size_t nn_param_count(const struct nn_config *c)
{
	size_t s[NN_NPARAMS], n = 0;
	nn_param_sizes(c, s);
	for (int i = 0; i < NN_NPARAMS; i++)
		n += s[i];
	return n;
}

int nn_param_decays(enum nn_param_id id)
{
	return id == NN_WTE || id == NN_WPE || id == NN_QKVW || id == NN_ATTPROJW || id == NN_FCW ||
	       id == NN_FCPROJW;
}

double nn_flops_per_token(const struct nn_config *c, int T)
{
	size_t s[NN_NPARAMS];
	nn_param_sizes(c, s);
	double n = (double)nn_param_count(c) - (double)s[NN_WPE];
	return 6.0 * n + 12.0 * c->n_layer * (double)T * c->n_embd;
}

static const struct {
	const char *name;
	int layered;
} HF[NN_NPARAMS] = {
	[NN_WTE] = { "wte.weight", 0 },
	[NN_WPE] = { "wpe.weight", 0 },
	[NN_LN1W] = { "ln_1.weight", 1 },
	[NN_LN1B] = { "ln_1.bias", 1 },
	[NN_QKVW] = { "attn.c_attn.weight", 1 },
	[NN_QKVB] = { "attn.c_attn.bias", 1 },
	[NN_ATTPROJW] = { "attn.c_proj.weight", 1 },
	[NN_ATTPROJB] = { "attn.c_proj.bias", 1 },
	[NN_LN2W] = { "ln_2.weight", 1 },
	[NN_LN2B] = { "ln_2.bias", 1 },
	[NN_FCW] = { "mlp.c_fc.weight", 1 },
	[NN_FCB] = { "mlp.c_fc.bias", 1 },
	[NN_FCPROJW] = { "mlp.c_proj.weight", 1 },
	[NN_FCPROJB] = { "mlp.c_proj.bias", 1 },
	[NN_LNFW] = { "ln_f.weight", 0 },
	[NN_LNFB] = { "ln_f.bias", 0 },
};

int nn_param_layered(enum nn_param_id id)
{
	return HF[id].layered;
}

void nn_param_hf_name(enum nn_param_id id, int layer, char *buf, size_t n)
{
	if (HF[id].layered)
		snprintf(buf, n, "h.%d.%s", layer, HF[id].name);
	else
		snprintf(buf, n, "%s", HF[id].name);
}

int nn_param_hf_shape(const struct nn_config *c, enum nn_param_id id, int64_t shape[2])
{
	int64_t C = c->n_embd;
	switch (id) {
	case NN_WTE: shape[0] = c->vocab_size; shape[1] = C; return 2;
	case NN_WPE: shape[0] = c->max_seq; shape[1] = C; return 2;
	case NN_QKVW: shape[0] = C; shape[1] = 3 * C; return 2;
	case NN_QKVB: shape[0] = 3 * C; return 1;
	case NN_ATTPROJW: shape[0] = C; shape[1] = C; return 2;
	case NN_FCW: shape[0] = C; shape[1] = 4 * C; return 2;
	case NN_FCB: shape[0] = 4 * C; return 1;
	case NN_FCPROJW: shape[0] = 4 * C; shape[1] = C; return 2;
	default: shape[0] = C; return 1;
	}
}
