/* tests/unit/nn_fixture.h — fixtures shared by the unit tests that run the model (nn, quant):
 * deterministic token ids and Gaussian arrays, and "rough" weights (GPT-2's init plus Gaussian noise, so that every
 * parameter is nonzero and every path carries gradient). Header-only: each test file includes it. */
#ifndef ASCENT_TESTS_NN_FIXTURE_H
#define ASCENT_TESTS_NN_FIXTURE_H

#include "common/common.h"
#include "nn/nn.h"

#include <stdint.h>
#include <stdlib.h>

/* n floats drawn from N(0, std), the same for the same seed (malloc'd; aborts when out of memory). */
static inline float *fx_normal(size_t n, uint64_t seed, float std)
{
	float *x = malloc(n * sizeof *x);
	if (!x)
		abort();
	uint64_t st = rng_seed(seed, 7);
	rng_normal(&st, x, n, 0.0f, std);
	return x;
}

/* n token ids in [0, V), the same for the same seed. */
static inline void fx_tokens(int *x, int n, int V, uint64_t seed)
{
	uint64_t st = rng_seed(seed, 3);
	for (int i = 0; i < n; i++)
		x[i] = (int)(rng_u32(&st) % (uint32_t)V);
}

/* nn_gpt_init_weights(seed), then N(0, std) noise added to every parameter. */
static inline void fx_rough_weights(struct nn_gpt *m, uint64_t seed, float std)
{
	nn_gpt_init_weights(m, seed);
	uint64_t st = rng_seed(seed, 99);
	float *noise = malloc(m->n_params * sizeof(float));
	if (!noise)
		abort();
	rng_normal(&st, noise, m->n_params, 0.0f, std);
	for (size_t i = 0; i < m->n_params; i++)
		m->params_mem[i] += noise[i];
	free(noise);
}

#endif
