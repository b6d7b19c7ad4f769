/* quant/observer.c — observers and calibrators: running min/max, moving-average min/max, and a
 * growing histogram of |x| from which the percentile, MSE-search and KL (TensorRT entropy)
 * thresholds are computed. One observer pass serves every method. */
#include "quant/quant.h"

#include <float.h>
#include <stdlib.h>
#include <string.h>

static const char *const METHOD_NAMES[QUANT_NMETHODS] = { "minmax", "ema", "percentile", "mse", "kl" };

const char *quant_method_name(enum quant_method m)
{
	return m >= 0 && m < QUANT_NMETHODS ? METHOD_NAMES[m] : "?";
}

int quant_method_parse(const char *s, enum quant_method *out)
{
	for (int i = 0; i < QUANT_NMETHODS; i++)
		if (!strcmp(s, METHOD_NAMES[i])) {
			*out = (enum quant_method)i;
			return 0;
		}
	return ascent_error(ASCENT_EUSAGE, "unknown calibration method '%s' (use minmax, ema, percentile, mse or kl)", s);
}

void quant_observer_init(struct quant_observer *o)
{
	memset(o, 0, sizeof *o);
	o->min = DBL_MAX;
	o->max = -DBL_MAX;
}

/* Double the histogram's range until it covers `amax`, merging adjacent bins. */
static void hist_grow(struct quant_observer *o, double amax)
{
	if (o->range <= 0) {
		o->range = amax;
		return;
	}
	while (o->range < amax) {
		for (int i = 0; i < QUANT_HIST_BINS / 2; i++)
			o->hist[i] = o->hist[2 * i] + o->hist[2 * i + 1];
		for (int i = QUANT_HIST_BINS / 2; i < QUANT_HIST_BINS; i++)
			o->hist[i] = 0;
		o->range *= 2;
	}
}

void quant_observer_update(struct quant_observer *o, const float *x, size_t n)
{
	if (n == 0)
		return;
	double lo = DBL_MAX, hi = -DBL_MAX;
	size_t finite = 0;
	for (size_t i = 0; i < n; i++) {
		double v = x[i];
		if (!isfinite(v))
			continue;
		finite++;
		lo = v < lo ? v : lo;
		hi = v > hi ? v : hi;
	}
	o->nonfinite += (int64_t)(n - finite);
	if (finite == 0)
		return;
	o->min = lo < o->min ? lo : o->min;
	o->max = hi > o->max ? hi : o->max;
	if (o->batches == 0) {
		o->ema_min = lo;
		o->ema_max = hi;
	} else {
		o->ema_min += QUANT_EMA_C * (lo - o->ema_min);
		o->ema_max += QUANT_EMA_C * (hi - o->ema_max);
	}
	o->batches++;
	double amax = fabs(lo) > fabs(hi) ? fabs(lo) : fabs(hi);
	if (amax > 0)
		hist_grow(o, amax);
	if (o->range <= 0) {                   /* all zeros so far */
		o->hist[0] += (double)finite;
		o->count += (double)finite;
		return;
	}
	double k = QUANT_HIST_BINS / o->range;
	for (size_t i = 0; i < n; i++) {
		if (!isfinite(x[i]))
			continue;
		double b = fabs((double)x[i]) * k;    /* in double: the bin index never overflows an int */
		o->hist[b >= QUANT_HIST_BINS - 1 ? QUANT_HIST_BINS - 1 : (int)b] += 1.0;
	}
	o->count += (double)finite;
}

int quant_kl_threshold(const double *hist, int nbins, int levels, int start, double *kl_out)
{
	if (start < levels)
		start = levels;
	double total = 0;
	for (int i = 0; i < nbins; i++)
		total += hist[i];
	double *p = malloc((size_t)nbins * sizeof *p), *q = malloc((size_t)nbins * sizeof *q);
	int best = nbins;
	double best_kl = INFINITY;
	if (!p || !q || total <= 0) {
		free(p);
		free(q);
		if (kl_out)
			*kl_out = 0;
		return nbins;
	}
	double below = 0;                      /* Σ hist[0..start) */
	for (int i = 0; i < start && i < nbins; i++)
		below += hist[i];
	for (int i = start; i <= nbins; i++) {
		if (i > start)
			below += hist[i - 1];
		double tail = total - below;
		for (int b = 0; b < i; b++)
			p[b] = hist[b];
		p[i - 1] += tail;
		/* Q: `levels` groups of i/levels bins (the remainder joins the last group) */
		int merged = i / levels;
		for (int g = 0; g < levels; g++) {
			int b0 = g * merged, b1 = g == levels - 1 ? i : b0 + merged;
			double sum = 0;
			int nz = 0;
			for (int b = b0; b < b1; b++) {
				sum += hist[b];
				nz += p[b] != 0;
			}
			for (int b = b0; b < b1; b++)
				q[b] = p[b] != 0 && nz ? sum / nz : 0;
		}
		double ps = 0, qs = 0;
		for (int b = 0; b < i; b++) {
			ps += p[b];
			qs += q[b];
		}
		double kl = 0;
		for (int b = 0; b < i; b++)
			if (p[b] > 0 && q[b] > 0)
				kl += (p[b] / ps) * log((p[b] / ps) / (q[b] / qs));
		if (kl < best_kl) {
			best_kl = kl;
			best = i;
		}
	}
	free(p);
	free(q);
	if (kl_out)
		*kl_out = best_kl;
	return best;
}

static double obs_amax(const struct quant_observer *o)
{
	if (o->batches == 0)
		return 0;
	return fabs(o->min) > fabs(o->max) ? fabs(o->min) : fabs(o->max);
}

/* Mean squared error of 8-bit fake-quant at threshold t, over the histogram's bin centres. */
static double hist_mse(const struct quant_observer *o, double t)
{
	double w = o->range / QUANT_HIST_BINS, s = t / NN_QMAX, err = 0;
	for (int b = 0; b < QUANT_HIST_BINS; b++) {
		if (o->hist[b] == 0)
			continue;
		double c = (b + 0.5) * w, r = rint(c / s);
		r = r > NN_QMAX ? NN_QMAX : r;
		double d = c - r * s;
		err += o->hist[b] * d * d;
	}
	return err;
}

double quant_observer_amax(const struct quant_observer *o, enum quant_method m, double percentile)
{
	double amax = obs_amax(o);
	if (amax <= 0 || o->range <= 0)
		return amax;
	double w = o->range / QUANT_HIST_BINS, t = amax;
	switch (m) {
	case QUANT_MINMAX:
		return amax;
	case QUANT_EMA:
		return fabs(o->ema_min) > fabs(o->ema_max) ? fabs(o->ema_min) : fabs(o->ema_max);
	case QUANT_PERCENTILE: {
		double target = o->count * (percentile / 100.0), cum = 0;
		for (int b = 0; b < QUANT_HIST_BINS; b++) {
			cum += o->hist[b];
			if (cum >= target) {
				t = (b + 1) * w;
				break;
			}
		}
		break;
	}
	case QUANT_MSE: {
		double best = INFINITY;
		for (int b = 1; b <= QUANT_HIST_BINS; b++) {
			double e = hist_mse(o, b * w);
			if (e < best) {
				best = e;
				t = b * w;
			}
		}
		break;
	}
	case QUANT_KL:
		t = quant_kl_threshold(o->hist, QUANT_HIST_BINS, 128, 128, NULL) * w;
		break;
	default:
		break;
	}
	return t < amax ? t : amax;
}
