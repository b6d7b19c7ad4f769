/* trainer/pipeline.c — pipeline schedules as data: the ordered forward/backward actions of each
 * stage for gpipe, 1f1b and Megatron-LM's interleaved 1F1B, activation-slot assignment, and an
 * ideal-machine simulator that runs all stages' lists together (deadlock check, bubble share). */
#include "trainer/trainer.h"

#include <stdlib.h>
#include <string.h>

int trainer_pp_parse(const char *name, enum trainer_pp_kind *out)
{
	if (!strcmp(name, "gpipe"))
		*out = TRAINER_PP_GPIPE;
	else if (!strcmp(name, "1f1b"))
		*out = TRAINER_PP_1F1B;
	else if (!strcmp(name, "interleaved"))
		*out = TRAINER_PP_INTERLEAVED;
	else
		return ascent_error(ASCENT_EUSAGE, "unknown pipeline schedule '%s' (use gpipe, 1f1b or interleaved)", name);
	return 0;
}

const char *trainer_pp_name(enum trainer_pp_kind k)
{
	return k == TRAINER_PP_GPIPE ? "gpipe" : k == TRAINER_PP_1F1B ? "1f1b" : "interleaved";
}

int trainer_pp_check(enum trainer_pp_kind k, int P, int M, int V)
{
	if (P < 1 || M < 1 || V < 1)
		return ascent_error(ASCENT_EUSAGE, "pipeline: stages %d, micro-batches %d and virtual stages %d must be >= 1",
				    P, M, V);
	if (V > TRAINER_MAX_VSTAGES)
		return ascent_error(ASCENT_EUSAGE, "pipeline: --virtual-stages %d is more than %d", V, TRAINER_MAX_VSTAGES);
	if (k == TRAINER_PP_INTERLEAVED) {
		if (V < 2)
			return ascent_error(ASCENT_EUSAGE,
					    "the interleaved schedule needs --virtual-stages >= 2 (with 1 it is 1f1b: use "
					    "--schedule 1f1b)");
		if (M % P)
			return ascent_error(ASCENT_EUSAGE,
					    "the interleaved schedule needs --microbatches (%d) to be a multiple of --pp (%d)", M, P);
	} else if (V != 1) {
		return ascent_error(ASCENT_EUSAGE, "--virtual-stages %d needs --schedule interleaved (%s runs one chunk per stage)",
				    V, trainer_pp_name(k));
	}
	return 0;
}

/* Megatron-LM's interleaved schedule: chunk and micro-batch of the k-th forward (or backward). */
static int il_chunk(int k, int P, int V, int forward)
{
	int c = (k % (P * V)) / P;
	return forward ? c : V - 1 - c;
}

static int il_mb(int k, int P, int V)
{
	return (k / (P * V)) * P + k % P;
}

int trainer_pp_schedule(enum trainer_pp_kind k, int P, int stage, int M, int V, struct trainer_pp_action *out,
			int *nslots)
{
	int rc = trainer_pp_check(k, P, M, V);
	if (rc)
		return rc;
	if (stage < 0 || stage >= P)
		return ascent_error(ASCENT_EINTERNAL, "pipeline stage %d outside [0, %d)", stage, P);
	int n = 0;
	if (k == TRAINER_PP_GPIPE) {
		for (int j = 0; j < M; j++)
			out[n++] = (struct trainer_pp_action){ 0, 0, j, 0 };
		for (int j = 0; j < M; j++)
			out[n++] = (struct trainer_pp_action){ 1, 0, j, 0 };
	} else if (k == TRAINER_PP_1F1B) {
		int warm = P - stage - 1;
		if (warm > M)
			warm = M;
		for (int j = 0; j < warm; j++)
			out[n++] = (struct trainer_pp_action){ 0, 0, j, 0 };
		for (int i = 0; i < M - warm; i++) {
			out[n++] = (struct trainer_pp_action){ 0, 0, warm + i, 0 };
			out[n++] = (struct trainer_pp_action){ 1, 0, i, 0 };
		}
		for (int j = M - warm; j < M; j++)
			out[n++] = (struct trainer_pp_action){ 1, 0, j, 0 };
	} else {
		int total = M * V;
		int warm = (P - stage - 1) * 2 + (V - 1) * P;
		if (warm > total)
			warm = total;
		for (int f = 0; f < warm; f++)
			out[n++] = (struct trainer_pp_action){ 0, il_chunk(f, P, V, 1), il_mb(f, P, V), 0 };
		for (int i = 0; i < total - warm; i++) {
			int f = warm + i;
			out[n++] = (struct trainer_pp_action){ 0, il_chunk(f, P, V, 1), il_mb(f, P, V), 0 };
			out[n++] = (struct trainer_pp_action){ 1, il_chunk(i, P, V, 0), il_mb(i, P, V), 0 };
		}
		for (int b = total - warm; b < total; b++)
			out[n++] = (struct trainer_pp_action){ 1, il_chunk(b, P, V, 0), il_mb(b, P, V), 0 };
	}
	/* slots: lowest free at the forward, freed at the backward */
	int *slot_of = malloc(sizeof(int) * (size_t)M * (size_t)V);
	unsigned char *used = calloc((size_t)V * (size_t)(M + 1), 1);
	if (!slot_of || !used) {
		free(slot_of);
		free(used);
		return ascent_error(ASCENT_ENOMEM, "out of memory for the pipeline schedule");
	}
	int most = 0;
	for (int i = 0; i < n; i++) {
		struct trainer_pp_action *a = &out[i];
		unsigned char *u = used + (size_t)a->vchunk * (size_t)(M + 1);
		if (!a->backward) {
			int s = 0;
			while (u[s])
				s++;
			u[s] = 1;
			a->slot = s;
			slot_of[a->vchunk * M + a->mb] = s;
			if (s + 1 > most)
				most = s + 1;
		} else {
			a->slot = slot_of[a->vchunk * M + a->mb];
			u[a->slot] = 0;
		}
	}
	free(slot_of);
	free(used);
	if (nslots)
		*nslots = most;
	return 0;
}

double trainer_pp_bubble_theory(enum trainer_pp_kind k, int P, int M, int V)
{
	if (k == TRAINER_PP_INTERLEAVED) {
		double b = (double)(P - 1) / V;
		return b / (M + b);
	}
	return (double)(P - 1) / (M + P - 1);
}

int trainer_pp_simulate(enum trainer_pp_kind k, int P, int M, int V, double tf, double tb, double *makespan,
			double *bubble)
{
	int rc = trainer_pp_check(k, P, M, V);
	if (rc)
		return rc;
	int per = 2 * M * V, C = P * V;
	struct trainer_pp_action *acts = malloc(sizeof *acts * (size_t)per * (size_t)P);
	int *pos = calloc((size_t)P, sizeof(int));
	double *free_at = calloc((size_t)P, sizeof(double)), *busy = calloc((size_t)P, sizeof(double));
	/* done time of forward / backward of (global chunk, micro-batch); < 0 = not yet */
	double *fdone = malloc(sizeof(double) * (size_t)C * (size_t)M), *bdone = malloc(sizeof(double) * (size_t)C * (size_t)M);
	if (!acts || !pos || !free_at || !busy || !fdone || !bdone) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory for the pipeline simulation");
		goto out;
	}
	for (int i = 0; i < C * M; i++)
		fdone[i] = bdone[i] = -1;
	for (int s = 0; s < P && !rc; s++)
		rc = trainer_pp_schedule(k, P, s, M, V, acts + (size_t)s * per, NULL);
	if (rc)
		goto out;
	double cf = tf / V, cb = tb / V;
	int left = per * P;
	while (left > 0) {
		int progressed = 0;
		for (int s = 0; s < P; s++) {
			while (pos[s] < per) {
				const struct trainer_pp_action *a = &acts[(size_t)s * per + pos[s]];
				int c = a->vchunk * P + s;
				double ready;
				if (!a->backward)
					ready = c == 0 ? 0 : fdone[(c - 1) * M + a->mb];
				else if (c == C - 1)
					ready = fdone[c * M + a->mb];
				else
					ready = bdone[(c + 1) * M + a->mb];
				if (ready < 0)
					break;
				double start = ready > free_at[s] ? ready : free_at[s];
				double d = a->backward ? cb : cf;
				free_at[s] = start + d;
				busy[s] += d;
				(a->backward ? bdone : fdone)[c * M + a->mb] = start + d;
				pos[s]++;
				left--;
				progressed = 1;
			}
		}
		if (!progressed) {
			rc = ascent_error(ASCENT_EINTERNAL, "pipeline schedule %s deadlocks (P=%d M=%d V=%d)", trainer_pp_name(k), P,
					  M, V);
			goto out;
		}
	}
	double span = 0;
	for (int s = 0; s < P; s++)
		if (free_at[s] > span)
			span = free_at[s];
	double idle = 0;
	for (int s = 0; s < P; s++)
		idle += (span - busy[s]) / span;
	*makespan = span;
	*bubble = idle / P;
out:
	free(acts);
	free(pos);
	free(free_at);
	free(busy);
	free(fdone);
	free(bdone);
	return rc;
}

int trainer_scaler_update(struct trainer_scaler *s, int finite)
{
	if (!finite) {
		s->scale = s->scale / 2 < 1 ? 1 : s->scale / 2;
		s->clean = 0;
		s->skipped++;
		return 1;
	}
	if (++s->clean >= s->window) {
		s->scale = s->scale * 2 > 16777216.0 ? 16777216.0 : s->scale * 2;
		s->clean = 0;
	}
	return 0;
}
