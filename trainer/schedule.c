/* trainer/schedule.c — the learning-rate schedule: linear warm-up, then cosine decay to min_lr
 * (or constant). */
#include "trainer/trainer.h"

#include <math.h>
#include <string.h>

double trainer_lr(const struct trainer_config *c, int64_t step)
{
	double lr = c->lr, lo = c->min_lr < 0 ? c->lr / 10 : c->min_lr;
	if (step < c->warmup)
		return lr * (double)(step + 1) / (double)c->warmup;
	if (!strcmp(c->lr_schedule, "constant"))
		return lr;
	int64_t span = (int64_t)c->steps - 1 - c->warmup;
	if (span <= 0)
		return lr;
	double r = (double)(step - c->warmup) / (double)span;
	if (r > 1)
		r = 1;
	return lo + 0.5 * (1.0 + cos(M_PI * r)) * (lr - lo);
}
