/* trainer/sampler.c — deterministic batches. Sequence i of step s starts at an offset that is a
 * hash of (seed, s, i), so batches need no state to checkpoint, a resumed run draws what an
 * uninterrupted one draws, and ranks and micro-batches slice one global batch. */
#include "trainer/trainer.h"

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

size_t trainer_sample_offset(const struct trainer_sampler *s, int64_t step, int64_t index)
{
	uint64_t h = mix64(s->seed * 0x9E3779B97F4A7C15ULL + 0x5851F42D4C957F2DULL);
	h = mix64(h ^ ((uint64_t)step * 0xD1B54A32D192ED03ULL));
	h = mix64(h ^ ((uint64_t)index * 0xABC98388FB8FAC03ULL + 1));
	/* offsets 0 … ntokens − seq − 1: the targets need one token past the inputs */
	uint64_t range = (uint64_t)(s->ntokens - (size_t)s->seq);
	/* the modulo's bias is below range / 2^64: negligible */
	return (size_t)(h % range);
}

void trainer_sampler_batch(const struct trainer_sampler *s, int64_t step, int micro, int rank, int world,
			   size_t *offsets)
{
	int64_t first = ((int64_t)micro * world + rank) * s->batch;
	for (int b = 0; b < s->batch; b++)
		offsets[b] = trainer_sample_offset(s, step, first + b);
}

void trainer_fill_batch(const uint16_t *tok, const size_t *offsets, int batch, int seq, int *inputs, int *targets)
{
	for (int b = 0; b < batch; b++) {
		const uint16_t *p = tok + offsets[b];
		int *in = inputs + (size_t)b * seq, *tg = targets + (size_t)b * seq;
		for (int t = 0; t < seq; t++) {
			in[t] = p[t];
			tg[t] = p[t + 1];
		}
	}
}

int64_t trainer_sample_first(const struct trainer_sampler *s, int round, int rank, int world, int mb, int nmb)
{
	return ((int64_t)round * world + rank) * s->batch + (int64_t)mb * (s->batch / nmb);
}
