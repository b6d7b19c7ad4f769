/* common/rng.c — seeding and normal samples for the xorshift64* generator in common.h. */
#include "common/common.h"

#include <math.h>

uint64_t rng_seed(uint64_t seed, uint64_t stream)
{
	/* splitmix64 of (seed, stream): well-mixed, never 0 */
	uint64_t z = seed * 0x9E3779B97F4A7C15ULL + stream * 0xD1B54A32D192ED03ULL + 0x632BE59BD9B4E019ULL;
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	z ^= z >> 31;
	return z ? z : 0x1234567ULL;
}

void rng_normal(uint64_t *state, float *out, size_t n, float mean, float std)
{
	for (size_t i = 0; i < n; i += 2) {
		float u1 = rng_f32(state), u2 = rng_f32(state);
		if (u1 < 1e-12f)
			u1 = 1e-12f;
		float r = sqrtf(-2.0f * logf(u1));
		float th = 6.2831853071795864f * u2;
		out[i] = mean + std * r * cosf(th);
		if (i + 1 < n)
			out[i + 1] = mean + std * r * sinf(th);
	}
}
