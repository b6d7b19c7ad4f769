/* common/half.c — bf16 and IEEE fp16 conversions, round to nearest even. */
#include "common/common.h"

#include <string.h>

static uint32_t bits_of(float x)
{
	uint32_t u;
	memcpy(&u, &x, 4);
	return u;
}

static float float_of(uint32_t u)
{
	float x;
	memcpy(&x, &u, 4);
	return x;
}

uint16_t bf16_from_f32(float x)
{
	uint32_t u = bits_of(x);
	if ((u & 0x7fffffffu) > 0x7f800000u)          /* NaN: keep it quiet NaN */
		return (uint16_t)((u >> 16) | 0x40);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

float f32_from_bf16(uint16_t h)
{
	return float_of((uint32_t)h << 16);
}

uint16_t f16_from_f32(float x)
{
	uint32_t u = bits_of(x);
	uint32_t sign = (u >> 16) & 0x8000u;
	uint32_t ax = u & 0x7fffffffu;
	if (ax > 0x7f800000u)
		return (uint16_t)(sign | 0x7e00u);
	if (ax >= 0x477ff000u)                        /* rounds to >= 65520: inf */
		return (uint16_t)(sign | 0x7c00u);
	if (ax < 0x38800000u) {                       /* subnormal or zero in fp16 */
		/* scale into the subnormal range and let the FPU round to nearest even */
		float f = float_of(ax) * 16777216.0f;     /* 2^24: units of the fp16 subnormal step */
		uint32_t q = (uint32_t)f;
		float rem = f - (float)q;
		if (rem > 0.5f || (rem == 0.5f && (q & 1u)))
			q++;
		return (uint16_t)(sign | q);
	}
	uint32_t e = ((ax >> 23) - 127 + 15);
	uint32_t m = ax & 0x7fffffu;
	uint32_t h = (e << 10) | (m >> 13);
	uint32_t rest = m & 0x1fffu;
	if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
		h++;
	return (uint16_t)(sign | h);
}

float f32_from_f16(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t e = (h >> 10) & 0x1fu;
	uint32_t m = h & 0x3ffu;
	if (e == 0) {
		float f = (float)m / 16777216.0f;
		return sign ? -f : f;
	}
	if (e == 31)
		return float_of(sign | 0x7f800000u | (m << 13));
	return float_of(sign | ((e - 15 + 127) << 23) | (m << 13));
}
