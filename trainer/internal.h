/* trainer/internal.h — what the trainer's own files share and nobody else sees: gradient buckets
 * and ZeRO ownership (dist.c), pipeline execution (pipe_run.c), helpers for the checkpoints. */
#ifndef ASCENT_TRAINER_INTERNAL_H
#define ASCENT_TRAINER_INTERNAL_H

#include "trainer/trainer.h"

#define TRAINER_BUCKET_DEFERRED 1000000000   /* ready_at of the tied embedding: after the backward */

/* One gradient bucket: consecutive elements of one tensor of one chunk (whole layers of a
 * layer-stacked tensor), reduced over DP with one non-blocking collective. */
struct trainer_bucket {
	int v;              /* chunk (virtual stage) */
	int id;             /* enum nn_param_id */
	size_t off, count;  /* floats into the chunk's params_mem (and grads_mem, unless a ZeRO-2
			     * window holds the bucket's gradients) */
	int layer;          /* ZeRO-2 window: the one global block of a per-layer tensor's bucket, else -1 */
	size_t woff;        /* ZeRO-2 window: offset of the bucket in a window buffer */
	int ready_at;       /* the nn grad-ready event after which it is final (0 = head, then one per
			     * layer from the top, then the embedding), or TRAINER_BUCKET_DEFERRED */
	int weight;         /* 1: this copy counts in the global norm (0: TP replica on tp_rank > 0,
			     * the head chunk's tied wte copy) */
	int decay;          /* AdamW weight decay applies */
	size_t part;        /* ZeRO: elements per DP rank (rank r owns [off + r·part, +part)); 0 without */
	size_t tail;        /* ZeRO: count − dp·part trailing elements, allreduced and owned by all */
	size_t opt_off;     /* this rank's optimizer state of the bucket: adam_m/adam_v + opt_off */
	struct comm_req *req, *req_tail;
	int launched;
};

/* dist.c */
int trainer_dist_setup(struct trainer *t);       /* buckets, optimizer state, the callback */
void trainer_dist_release(struct trainer *t);
void trainer_dist_begin_step(struct trainer *t);
/* After the last round: the tied embedding sum between the first and last stage, then every
 * bucket not yet launched, then wait for all (ZeRO: move each shard into place). */
int trainer_dist_finish_grads(struct trainer *t);
/* This rank's share of the squared global gradient norm (each element counted once world-wide), of
 * the gradients as reduced: summed over DP (dp times the mean). */
double trainer_dist_sumsq(const struct trainer *t);
/* AdamW on the owned gradients, each multiplied by f in the same pass (the mean over DP, the loss
 * scale and clipping), and (ZeRO) allgather the params. */
/* ZeRO-2 (zero 2, dp > 1): nn runs with a gradient window (nn_gpt_set_grad_window): each block's
 * gradients of each micro-batch land in one of two window buffers and are reduce-scattered
 * (non-blocking) right after that block's backward; when a buffer comes round again its results
 * are added into gshard, this rank's reduced gradients in the optimizer-state layout (n_opt floats).
 * The unlayered tensors (wte, wpe, lnf) keep whole gradients in grads_mem and are reduced as with
 * ZeRO-1, then copied into gshard. So no rank ever holds the whole gradient: grads = unlayered +
 * n_opt + 2 window buffers instead of n_params. Costs one reduce-scatter per block and micro-batch
 * (DeepSpeed's stage 2 also reduces every micro-batch). */
int trainer_dist_update(struct trainer *t, const struct nn_adamw *o, int step1, float f);
/* The gradient-window provider (nn_grad_dest_fn, arg = the trainer) for ZeRO-2's chunks;
 * 1 when this trainer's layout uses it (zero 2, dp > 1). */
float *trainer_dist_grad_dest(void *arg, struct nn_gpt *m, int layer);
int trainer_dist_windowed(const struct trainer *t);
/* The elements of bucket b this rank updates and stores optimizer state for: up to two ranges
 * [lo[i], lo[i] + n[i]) in the chunk's block, with their optimizer offsets. Returns the count. */
int trainer_bucket_owned(const struct trainer *t, const struct trainer_bucket *b, size_t lo[2], size_t n[2],
			 size_t opt[2]);

/* pipe_run.c */
int trainer_pp_setup(struct trainer *t);
void trainer_pp_release(struct trainer *t);
/* Accumulation round k of the step: the schedule's actions. *loss_sum += each head micro-batch's loss. */
int trainer_pp_round(struct trainer *t, int k, double *loss_sum);

/* train.c */
int trainer_world_sum(struct trainer *t, double *v, int n);

#endif
