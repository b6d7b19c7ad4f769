/* nn/nn.h — the public face of `nn`: model configuration, the GPT-2 model for one shard
 * (forward, backward), the GEMM dispatch, the kernels with their plain references, AdamW.
 *
 * The model computes exactly what Hugging Face's GPT2LMHeadModel computes: learned token and
 * position embeddings; pre-LayerNorm blocks (eps 1e-5) with causal multi-head attention scaled by
 * 1/sqrt(head_dim) and an MLP of 4C with gelu_new (tanh approximation); final LayerNorm; LM head
 * tied to the token embedding; mean cross-entropy over all positions; no dropout.
 *
 * Memory is llm.c-style: parameters, gradients and activations are each one block, with the
 * tensors pointing into it. Weights are stored in Hugging Face's Conv1D layout, (in, out), so
 * y = x·W + b and checkpoints are straight copies. `nn` reads no files and parses no options.
 *
 * One `struct nn_gpt` is one SHARD of the model (the whole model by default): a layer range, with or
 * without the embedding and the head, and a tensor-parallel slice (see "Model shards"). A pipeline
 * stage that runs v interleaved chunks makes v shard objects. Each object runs several micro-batches
 * in flight in activation SLOTS (see "Pipeline stages"), optionally with activation recomputation,
 * in fp32, bf16 or fp16 GEMM precision, and calls back as each layer's gradients become final.
 * Every op is wrapped in a profiler op range (name, layer, FLOPs) and the blocks are reported as
 * profiler memory (params, grads, activations, workspace).
 */
#ifndef ASCENT_NN_H
#define ASCENT_NN_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

struct comm;   /* comm/comm.h */
struct nn_gpt; /* below */

/* ------------------------------------------------------------------------------------------ */
/* Configuration */

struct nn_config {
	int vocab_size;   /* V: 256 for the byte-level tokenizer */
	int max_seq;      /* maxT: positions in wpe (n_positions) */
	int n_layer;      /* L */
	int n_head;       /* H */
	int n_embd;       /* C; C % H == 0 */
};

/* "tiny" (L4 C256 H4 T256), "small" (L6 C512 H8 T256), "gpt2-124m" (L12 C768 H12 T1024); V=256.
 * Returns ASCENT_EUSAGE naming the accepted presets for an unknown name. */
int nn_config_preset(const char *name, struct nn_config *out);
/* ASCENT_EINPUT with a message naming the bad field, or 0. */
int nn_config_validate(const struct nn_config *c);

/* ------------------------------------------------------------------------------------------ */
/* Parameters: 16 tensors, layer-stacked, in this order, in one block. */

enum nn_param_id {
	NN_WTE,       /* (V, C) */
	NN_WPE,       /* (maxT, C) */
	NN_LN1W,      /* (L, C) */
	NN_LN1B,      /* (L, C) */
	NN_QKVW,      /* (L, C, 3C)   HF h.i.attn.c_attn.weight, (in, out) */
	NN_QKVB,      /* (L, 3C) */
	NN_ATTPROJW,  /* (L, C, C)    HF h.i.attn.c_proj.weight */
	NN_ATTPROJB,  /* (L, C) */
	NN_LN2W,      /* (L, C) */
	NN_LN2B,      /* (L, C) */
	NN_FCW,       /* (L, C, 4C)   HF h.i.mlp.c_fc.weight */
	NN_FCB,       /* (L, 4C) */
	NN_FCPROJW,   /* (L, 4C, C)   HF h.i.mlp.c_proj.weight */
	NN_FCPROJB,   /* (L, C) */
	NN_LNFW,      /* (C) */
	NN_LNFB,      /* (C) */
	NN_NPARAMS
};

/* Element count of each parameter tensor. */
void nn_param_sizes(const struct nn_config *c, size_t sizes[NN_NPARAMS]);
size_t nn_param_count(const struct nn_config *c);       /* all parameters (wpe included) */
/* 1 for the tensors AdamW decays (the 2-D matrices wte, wpe, qkvw, attprojw, fcw, fcprojw). */
int nn_param_decays(enum nn_param_id id);
/* Hugging Face GPT-2 naming of the parameters (GPT2LMHeadModel's state dict without the
 * "transformer." prefix): 1 when the tensor is stored per layer as "h.{i}.<name>". */
int nn_param_layered(enum nn_param_id id);
/* "wte.weight", "h.3.attn.c_attn.weight", ... into buf; `layer` is ignored for unlayered tensors. */
void nn_param_hf_name(enum nn_param_id id, int layer, char *buf, size_t n);
/* Shape of one (per-layer) tensor as Hugging Face stores it, (in, out) for the Conv1D weights;
 * returns the number of dimensions (1 or 2). */
int nn_param_hf_shape(const struct nn_config *c, enum nn_param_id id, int64_t shape[2]);
/* Model FLOPs per token for forward+backward: 6·N + 12·L·T·C, N excluding wpe (nanoGPT/PaLM). */
double nn_flops_per_token(const struct nn_config *c, int T);

/* ------------------------------------------------------------------------------------------ */
/* Model shards (tensor and pipeline parallelism)
 *
 * A shard holds the blocks [layer_begin, layer_end) of the model, the embedding when has_embed (the
 * first pipeline chunk), the final LayerNorm + tied LM head + loss when has_head (the last chunk),
 * and a Megatron-LM tensor-parallel slice of each block when tp_size > 1:
 *   - attention is split by heads: rank r holds heads [r·H/P, (r+1)·H/P) (P = tp_size, Hl = H/P,
 *     Cl = C/P). QKV is column-parallel: the local qkvw (C, 3·Cl) holds the q, k and v columns of
 *     its heads (local column p·Cl + j = full column p·C + r·Cl + j for p = q, k, v), qkvb (3·Cl)
 *     likewise; the output projection is row-parallel: attprojw (Cl, C) = full rows [r·Cl, (r+1)·Cl).
 *   - the MLP: fcw (C, 4·Cl) = full columns [r·4Cl, (r+1)·4Cl) (column-parallel), fcb (4·Cl) the
 *     same slice, fcprojw (4·Cl, C) = full rows [r·4Cl, (r+1)·4Cl) (row-parallel).
 *   - REPLICATED on every TP rank: the LayerNorms (ln1, ln2, lnf), the row-parallel biases
 *     (attprojb, fcprojb, added once after the reduction), the embeddings wte and wpe and the tied LM
 *     head. Embeddings and head are replicated, NOT vocab-parallel: with V = 256 the head is a small
 *     part of the FLOPs (V·C vs 12·C² per token and layer) and replication saves two collectives per
 *     micro-batch. Every TP rank computes the replicated parts redundantly on identical inputs, so
 *     the gradients of replicated tensors come out identical on all TP ranks (up to MPI's
 *     allreduce giving every member the same sum, which Open MPI's algorithms do): the trainer does
 *     NOT reduce them across TP.
 *   - the conjugate operators go through comm_allreduce(tp, COMM_TP, …, COMM_SUM) on the shard's
 *     TP group: f before each column-parallel GEMM (forward identity, backward allreduce of the
 *     input gradient) and g after each row-parallel GEMM (forward allreduce, backward identity);
 *     2 allreduces of (B,T,C) floats per block in forward and 2 in backward (plus 1 in a
 *     recomputed forward). They are traced by comm (profiler collectives).
 *
 * TIED EMBEDDING ACROSS PIPELINE STAGES: a chunk with has_head but not has_embed holds its own copy
 * of wte for the LM head. Its wte gradient is the head's contribution only; the embedding chunk's
 * wte gradient is the encoder's. The trainer must SUM the two wte gradients (the embedding group
 * of Megatron: first and last stage) before the update, and keep the copies equal (load both from
 * the same full tensor). A chunk holding both gets both contributions in its own wte gradient.
 *
 * Per-tensor local shapes (Ll = layer_end - layer_begin; a tensor a shard does not hold has size 0
 * and its param/grad pointer must not be dereferenced):
 *   wte (V,C) if has_embed || has_head; wpe (maxT,C) if has_embed; lnfw, lnfb (C) if has_head;
 *   ln1w/ln1b/ln2w/ln2b/attprojb/fcprojb (Ll,C); qkvw (Ll,C,3Cl); qkvb (Ll,3Cl); attprojw (Ll,Cl,C);
 *   fcw (Ll,C,4Cl); fcb (Ll,4Cl); fcprojw (Ll,4Cl,C).
 */

struct nn_shard {
	int tp_rank, tp_size;         /* tensor-parallel coordinate; tp_size divides n_head */
	struct comm *tp;              /* borrowed: the process's comm whose COMM_TP group is this shard's
				       * TP group (size tp_size, this rank = tp_rank); NULL if tp_size == 1 */
	int layer_begin, layer_end;   /* global blocks [layer_begin, layer_end), 0 <= begin <= end <= L */
	int has_embed;                /* token + position embedding (input: token ids) */
	int has_head;                 /* final LayerNorm, tied LM head, cross-entropy (output: the loss) */
};

/* The whole model: tp 1/1, layers [0, L), embed and head. */
void nn_shard_whole(const struct nn_config *c, struct nn_shard *out /* OUT */);
/* ASCENT_EINPUT naming the bad field: tp_size < 1, n_head % tp_size, tp_rank out of range, a tp
 * whose TP group has another size/rank, a bad layer range, or a shard holding nothing (no layers,
 * no embed, no head). tp may be NULL with tp_size > 1: such a shard can hold and map tensors
 * (checkpoint conversion, tests) but its forward/backward refuse to run (ASCENT_EUSAGE). */
int nn_shard_validate(const struct nn_config *c, const struct nn_shard *s);
/* Element count of each local tensor (0 for tensors the shard does not hold). */
void nn_shard_param_sizes(const struct nn_config *c, const struct nn_shard *s, size_t sizes[NN_NPARAMS]);

/* How a tensor is split across TP ranks. */
enum nn_tp_split {
	NN_TP_REPLICATED = 0,  /* every TP rank holds the whole tensor */
	NN_TP_COLUMNS = 1,     /* qkvw, qkvb (by heads, q|k|v each), fcw, fcb: output columns */
	NN_TP_ROWS = 2,        /* attprojw, fcprojw: input rows */
};
enum nn_tp_split nn_param_tp_split(enum nn_param_id id);

/* Map between a shard's local tensor and the canonical full tensor (HF (in,out) layout,
 * layer-stacked: the full model's nn_param_sizes). `local` is any buffer laid out like the shard's
 * tensor `id` — m->param[id], m->grad[id], or the trainer's optimizer state at the same offset.
 *   nn_shard_to_full writes the shard's slice (its layers, its TP columns/rows) into `full`, leaving
 *     every other element untouched. Replicated tensors are written only on tp_rank 0; wte and wpe
 *     only by the has_embed chunk, lnf only by the has_head chunk. So with `full` zeroed on every
 *     rank, a SUM over the TP × PP ranks (and every chunk of a rank) rebuilds each full tensor
 *     exactly once (do not also sum over DP: use one DP rank, or divide).
 *   nn_shard_from_full reads the shard's slice of `full` into `local` (every holder reads: the head
 *     chunk's wte copy too).
 * Both return ASCENT_EINPUT for a bad id; a tensor the shard does not hold is a no-op. */
int nn_shard_to_full(const struct nn_gpt *m, int id, const float *local, float *full /* OUT */);
int nn_shard_from_full(const struct nn_gpt *m, int id, const float *full, float *local /* OUT */);

/* ------------------------------------------------------------------------------------------ */
/* The model */

struct nn_acts;   /* activation slots and workspace: private to nn */
struct nn_fake_quant;  /* below, "Fake quantization" */

/* Mixed precision of the GEMMs (linear layers and LM head; LayerNorm, softmax, GELU, the loss and
 * all accumulation stay fp32; the attention's products are bf16 too where the bf16 GEMMs run on
 * oneDNN and the CPU has AMX: nn_attention_forward_bf16). Parameters, gradients and optimizer
 * state stay fp32 (they are the master weights).
 *   NN_FP32  plain fp32.
 *   NN_BF16  operands rounded to bf16 (round to nearest even), products accumulated in fp32: by
 *            oneDNN's bf16 matmul (AMX-BF16 or AVX512_BF16 instructions) where the CPU has
 *            AVX512_BF16 (see nn_set_bf16_onednn), else by the fp32 GEMM on rounded operands.
 *            On oneDNN the four weight matrices of every block are converted to bf16 once per
 *            forward (that forward and the backwards after it read the copy: change the weights
 *            only between a backward and the next forward, as an optimizer step does), unless
 *            nn_gpt_adamw_step wrote the whole copy in its pass since the last forward, and the
 *            ops that make the blocks' linear inputs (LayerNorm, attention, GELU) also write them
 *            in bf16 into the slot, read by the forward and backward GEMMs without converting
 *            again: (C + 2.5·C/tp)·N more floats of activations per layer (ln1 and ln2, atty,
 *            fch_gelu at 2 bytes), and the weight copy (half the blocks' matrices).
 *   NN_FP16  operands AND the GEMM outputs of activations and activation gradients rounded to fp16
 *            (products accumulated in fp32; this CPU's oneDNN 2.6 and OpenBLAS have no fp16 GEMM,
 *            so it is emulated by rounding): the fp16 range is real — a value above 65504 becomes
 *            inf, below 2^-24 flushes to 0 — so a too-large loss scale yields inf/NaN gradients
 *            that nn_has_nonfinite() detects. Weight-gradient GEMMs accumulate in fp32. */
enum nn_precision { NN_FP32 = 0, NN_BF16 = 1, NN_FP16 = 2 };
/* bf16 GEMMs through oneDNN's bf16 matmul (1, the default) or fp32 GEMM on rounded operands (0).
 * Process-wide; both give bf16-operand, fp32-accumulate products (equal up to summation order).
 * Falls back to rounding when the CPU lacks AVX512_BF16 or oneDNN refuses a shape. */
void nn_set_bf16_onednn(int on);
int nn_get_bf16_onednn(void);
/* 1 when a bf16 model runs its GEMMs on oneDNN in this process (AVX512_BF16 and
 * nn_set_bf16_onednn on; reference mode off): then it also keeps the bf16 copies described at
 * NN_BF16 (memory estimates count them). */
int nn_bf16_runs_onednn(void);
/* "fp32", "bf16", "fp16" (ASCENT_EUSAGE naming the accepted values otherwise). */
int nn_precision_parse(const char *s, enum nn_precision *out /* OUT */);
const char *nn_precision_name(enum nn_precision p);

/* Gradient-ready callback (see nn_gpt_set_grad_ready). `layer` is a GLOBAL block index, or: */
#define NN_GRADS_EMBED (-1)  /* wte (the encoder's part) and wpe are final */
#define NN_GRADS_HEAD (-2)   /* lnfw, lnfb are final (and wte when the chunk has no embedding) */
typedef int (*nn_grad_ready_fn)(void *arg, struct nn_gpt *m, int layer);
/* Gradient window (see nn_gpt_set_grad_window): the buffer for global block `layer`'s gradients. */
typedef float *(*nn_grad_dest_fn)(void *arg, struct nn_gpt *m, int layer);

struct nn_gpt {
	struct nn_config cfg;         /* the FULL model's configuration */
	struct nn_shard shard;        /* what this object holds (nn_shard_whole for nn_gpt_init) */
	int n_layer_local;            /* shard.layer_end - shard.layer_begin */
	size_t param_sizes[NN_NPARAMS];  /* LOCAL element counts (nn_shard_param_sizes) */
	size_t n_params;              /* local total */
	float *params_mem;            /* one block of n_params floats */
	float *grads_mem;             /* one block of n_grads floats (zeroed by nn_gpt_zero_grad) */
	size_t n_grads;               /* n_params; with a gradient window only the unlayered tensors */
	float *param[NN_NPARAMS];     /* into params_mem; local layer l of a stacked tensor is at
				       * l × (its per-layer size) */
	float *grad[NN_NPARAMS];      /* into grads_mem; NULL for the per-layer tensors while a
				       * gradient window is set (nn_gpt_set_grad_window) */
	struct nn_acts *acts;         /* slots + workspace, grown on demand */
	int B, T;                     /* the last forward's batch shape */
	float loss;                   /* mean cross-entropy of the last forward with targets (mean KL
				       * with soft targets), else -1 */
	/* settings: change them through the setters, between steps */
	int recompute;                /* nn_gpt_set_recompute */
	enum nn_precision precision;  /* nn_gpt_set_precision */
	nn_grad_ready_fn grad_ready;  /* nn_gpt_set_grad_ready */
	void *grad_ready_arg;
	nn_grad_dest_fn grad_dest;    /* nn_gpt_set_grad_window */
	void *grad_dest_arg;
	struct nn_fake_quant *fq;     /* nn_gpt_set_fake_quant: an owned copy, NULL = off */
};

/* Allocate parameters and gradients (zeroed) of the whole model; activations come on the first
 * forward. Equivalent to nn_gpt_init_shard with nn_shard_whole. */
int nn_gpt_init(struct nn_gpt *m, const struct nn_config *cfg);
/* Allocate the shard `s` of the model `cfg` (only its tensors; see "Model shards"). The shard is
 * copied (its comm pointer is borrowed and must outlive m). Errors: nn_shard_validate's,
 * ASCENT_ENOMEM. */
int nn_gpt_init_shard(struct nn_gpt *m, const struct nn_config *cfg, const struct nn_shard *s);
/* nn_gpt_init_shard with a gradient window from the start (nn_gpt_set_grad_window): the whole
 * gradient block is never allocated, not even for a moment. */
int nn_gpt_init_shard_window(struct nn_gpt *m, const struct nn_config *cfg, const struct nn_shard *s,
			     nn_grad_dest_fn fn, void *arg);
void nn_gpt_release(struct nn_gpt *m);
/* GPT-2 init: N(0, 0.02), residual projections (attprojw, fcprojw) N(0, 0.02/sqrt(2L)), biases 0,
 * LayerNorm weights 1. Deterministic in `seed`, and a shard gets exactly its slice of the whole
 * model's values for the same seed (so any layout trains the same model). */
void nn_gpt_init_weights(struct nn_gpt *m, uint64_t seed);

/* The whole-model path: nn_gpt_forward is nn_gpt_stage_forward on slot 0, and nn_gpt_backward the
 * backward of the last forward's slot. They require a shard with has_embed and has_head
 * (ASCENT_EINTERNAL otherwise). */
/* Forward over inputs (B, T) token ids. With targets (B, T) it computes m->loss (mean over B·T);
 * with targets NULL it only computes logits. T <= cfg.max_seq; ids must be < vocab_size.
 * Allocates nothing once the activation block is big enough for (B, T). */
int nn_gpt_forward(struct nn_gpt *m, const int *inputs, const int *targets, int B, int T);
/* Logits of the last forward (any slot), (B, T, V). Valid until that slot's next forward. */
const float *nn_gpt_logits(const struct nn_gpt *m);
/* Backward of the last forward (which must have had targets). Gradients are ADDED to grads_mem
 * (gradient accumulation); the loss gradient is scaled by `scale` (1/K for K accumulation steps,
 * or a loss scale), i.e. it computes d(scale · mean loss)/dθ. May be repeated (it keeps the
 * activations). */
int nn_gpt_backward(struct nn_gpt *m, float scale);
void nn_gpt_zero_grad(struct nn_gpt *m);

/* ------------------------------------------------------------------------------------------ */
/* Pipeline stages: micro-batches in flight, one activation SLOT each.
 *
 * A slot holds one micro-batch's saved activations from its forward until its backward (and after:
 * a backward may be repeated, a forward on the same slot replaces it). Slots are numbered from 0;
 * a slot is allocated on its first forward (or all at once by nn_gpt_set_slots) and grown when a
 * larger (B, T) arrives; nothing is allocated once every slot in use is big enough. The workspace
 * shared by all slots (backward scratch, the recompute buffers, precision buffers) is one block.
 *
 * INTERLEAVED SCHEDULES: a chunk is a self-contained object. A rank running v virtual stages makes
 * v nn_gpt shards (each its own layer range, params, grads and slots); nothing is shared between
 * them but the process-wide GEMM/thread settings. Objects may not be used from two threads at once.
 */

/* Pre-size `nslots` slots (0 .. nslots-1) and the workspace for micro-batches up to (B, T), so that
 * no forward or backward allocates. Slots beyond nslots are still created on demand. Errors:
 * ASCENT_EINPUT (bad numbers), ASCENT_ENOMEM. */
int nn_gpt_set_slots(struct nn_gpt *m, int nslots, int B, int T);

/* Forward of this chunk for one micro-batch into `slot` (0 <= slot < 65536).
 *   has_embed: `inputs` (B,T) token ids (in_act ignored, may be NULL);
 *   otherwise: `in_act` (B,T,C) the previous stage's output activation (copied; inputs ignored).
 *   has_head:  `targets` (B,T) → the slot's loss (mean over B·T, also m->loss) and the backward is
 *              possible; targets NULL → logits only (nn_gpt_logits), no backward.
 *   otherwise: the output activation is nn_gpt_stage_output(m, slot); targets ignored.
 * Errors: ASCENT_EINPUT (shape, token ids, missing inputs/in_act), ASCENT_ENOMEM, a TP collective's
 * error (ASCENT_EMPI…). */
int nn_gpt_stage_forward(struct nn_gpt *m, int slot, const int *inputs, const float *in_act,
			 const int *targets, int B, int T);
/* nn_gpt_stage_forward with SOFT targets (distillation): on a has_head chunk `probs` (B,T,V), a
 * teacher's next-token probabilities for every position (rows >= 0, finite, summing to 1 within
 * 1e-3), replace the integer targets: the slot's loss (and m->loss) is the mean over B·T of
 * KL(p ‖ softmax(logits)) (nn_kldiv_forward), and the slot's backward uses the gradient
 * (softmax − p)·scale/(B·T). The probabilities are copied into the slot (it keeps them until its
 * next forward, so a pipeline's slots and a repeated backward each use their own). On a chunk
 * without the head `probs` is ignored (may be NULL): exactly nn_gpt_stage_forward(…, NULL, …).
 * The hard-target path is unchanged. Errors: those of nn_gpt_stage_forward; ASCENT_EINPUT for
 * probs NULL on the head or a row that is not a probability distribution (naming it). */
int nn_gpt_stage_forward_soft(struct nn_gpt *m, int slot, const int *inputs, const float *in_act,
			      const float *probs, int B, int T);
/* The output activation (B,T,C) of the slot's last forward (a chunk without has_head), to send to
 * the next stage; valid (and unchanged) until that slot's next forward. NULL if none. */
const float *nn_gpt_stage_output(const struct nn_gpt *m, int slot);
/* The slot's loss (has_head with targets: the mean cross-entropy; with soft targets: the mean KL),
 * else -1. */
float nn_gpt_slot_loss(const struct nn_gpt *m, int slot);
/* Backward of the slot's last forward; gradients are ADDED to grads_mem.
 *   has_head: the loss is the source (dout ignored, may be NULL), scaled by `scale` as in
 *             nn_gpt_backward;
 *   otherwise: `dout` (B,T,C) is d(loss)/d(output activation) from the next stage (already scaled:
 *             `scale` is ignored).
 *   has_embed: the gradient ends in wte/wpe (dinput ignored, may be NULL);
 *   otherwise: `dinput` (B,T,C), caller-owned, receives d(loss)/d(in_act) for the previous stage
 *             (NULL: not written).
 * Calls the grad-ready callback as gradients become final. Errors: ASCENT_EINTERNAL (no forward in
 * the slot, or a head forward without targets or soft targets), ASCENT_EINPUT (missing dout), a TP collective's
 * error, or the callback's nonzero return (backward stops there). */
int nn_gpt_stage_backward(struct nn_gpt *m, int slot, const float *dout, float scale, float *dinput /* OUT */);

/* ACTIVATION RECOMPUTATION: on = each slot keeps only each block's input (the residual stream),
 * the head's activations and the tokens; the backward recomputes a block's forward (without its
 * last projection, which the backward does not need) just before that block's backward. Results
 * are bitwise identical to the stored path (same kernels on the same inputs; tests pin it).
 * Memory per slot drops from ~((15·C + H·T)/tp + 3·C)·N·Ll floats to ~C·N·Ll, plus one block's
 * worth in the shared workspace. Costs one extra forward of each block (and its 1 TP allreduce)
 * in the backward. Takes effect at the next forward of each slot (a slot's backward uses the mode
 * of its forward). Set it (and the precision) before nn_gpt_set_slots so the workspace is sized
 * for it. */
void nn_gpt_set_recompute(struct nn_gpt *m, int on);
/* GEMM precision of this object (see enum nn_precision); takes effect at the next call. */
void nn_gpt_set_precision(struct nn_gpt *m, enum nn_precision p);

/* GRADIENTS READY: fn(arg, m, layer) is called during every backward as soon as a part of the
 * gradients is final for this backward: NN_GRADS_HEAD first (has_head), then each block from
 * layer_end-1 down to layer_begin (global index; its slices of the 12 per-layer tensors, see
 * nn_gpt_layer_slice), then NN_GRADS_EMBED (has_embed). Use it to launch non-blocking bucketed
 * DP allreduces while the backward goes on (typically only in the last micro-batch's backward —
 * the callback decides; the gradient memory it announced is not touched again by this backward).
 * A nonzero return stops the backward with that code. fn NULL: no callback. */
void nn_gpt_set_grad_ready(struct nn_gpt *m, nn_grad_ready_fn fn, void *arg);
/* Where global block `layer`'s part of per-layer tensor `id` lies in params_mem (and grads_mem when
 * no gradient window is set):
 * *offset (floats from the block start) and *count. ASCENT_EINPUT when id is not a per-layer tensor
 * or the layer is not in this shard. Note that a layer's tensors are 12 separate ranges, and that
 * the ready region after block l is, per tensor, the contiguous suffix from l's slice on. */
int nn_gpt_layer_slice(const struct nn_gpt *m, int id, int layer, size_t *offset /* OUT */,
		       size_t *count /* OUT */);

/* GRADIENT WINDOW (for ZeRO-2: gradients reduce-scattered as they are made, never held whole).
 * With fn set, the gradients of the 12 per-layer tensors no longer live in grads_mem: grads_mem
 * shrinks to the unlayered tensors (wte, wpe, lnfw, lnfb; n_grads floats) and m->grad[id] is NULL
 * for the per-layer ones. In every backward, just before block `layer`'s backward, nn calls
 * fn(arg, m, layer) for a buffer of nn_gpt_layer_grad_floats(m) floats laid out as
 * nn_gpt_layer_grad_offset says, and ADDS that block's gradients of this backward into it (the
 * provider zeroes it, or passes a buffer to accumulate into); the grad-ready callback for `layer`
 * follows, after which nn does not touch the buffer again. The provider owns the buffers (a ring
 * of two is enough: the callback consumes one while the next block's backward fills the other).
 * fn NULL restores one whole gradient block (zeroed). Between steps only. Errors: ASCENT_ENOMEM;
 * a backward whose fn returns NULL fails with ASCENT_EINTERNAL. */
int nn_gpt_set_grad_window(struct nn_gpt *m, nn_grad_dest_fn fn, void *arg);
/* Floats of one block's gradients in a window buffer: the 12 per-layer tensors' slices. */
size_t nn_gpt_layer_grad_floats(const struct nn_gpt *m);
/* Where per-layer tensor `id`'s slice lies in a window buffer (ids in enum order, packed).
 * ASCENT_EINPUT when id is not a per-layer tensor. */
int nn_gpt_layer_grad_offset(const struct nn_gpt *m, int id, size_t *offset /* OUT */, size_t *count /* OUT */);

/* 1 if any of x[0..n) is inf or NaN (for fp16 loss scaling: skip the step, lower the scale). */
int nn_has_nonfinite(const float *x, size_t n);

/* ------------------------------------------------------------------------------------------ */
/* Fake quantization (fakequant.c): quantization-aware training of the four linear layers of each
 * block (qkv, attention projection, fc, fc projection) as a model setting, like the precision.
 *
 * Symmetric restricted INT8: s = amax/127, q = clamp(rint(x · (1/s)), −127, 127), x̂ = s·q, rint
 * rounding half to even (the default FE_TONEAREST mode). nn_quant_q is THE rounding of the project:
 * quant/'s INT8 path and its fake-quant forward call it (or kernels tested equal to it), so codes
 * agree bit for bit everywhere.
 *
 * With fake quantization on for a linear layer, its forward uses Q(w) and Q(x):
 *   weights  per output channel (the column amax of the (IC,OC) Conv1D matrix) or per tensor,
 *            min-max, recomputed from the current master weights at every forward (and again in the
 *            backward: the weights do not change in between);
 *   inputs   NN_FQ_ACT_NONE (weight-only), NN_FQ_ACT_DYNAMIC (one scale per row, its amax/127), or
 *            NN_FQ_ACT_STATIC (one given per-tensor scale per layer: calibrated clipping).
 * The backward is the straight-through estimator: dx = dout·Q(w)ᵀ, zeroed where a static input code
 * was clamped (|rint(x/s)| > 127; dynamic codes never clamp), dw = Q(x)ᵀ·dout, db as usual. Q(x)
 * is recomputed in the backward from the stored x (nothing extra is kept per slot), so activation
 * recomputation stays bitwise equal to the stored path. Composes with bf16/fp16 GEMM precision
 * (the fake-quantized operands are then rounded like any other). Tensor parallelism is refused:
 * row-parallel weights' per-channel amax and row-parallel inputs' per-token amax would need a
 * cross-rank max. */

#define NN_QMAX 127
#define NN_FQ_PER_LAYER 4          /* linear layers per block, in this order: */
enum nn_fq_linear { NN_FQ_QKV = 0, NN_FQ_ATTPROJ = 1, NN_FQ_FC = 2, NN_FQ_FCPROJ = 3 };
enum nn_fq_act { NN_FQ_ACT_NONE = 0, NN_FQ_ACT_DYNAMIC = 1, NN_FQ_ACT_STATIC = 2 };

struct nn_fq_layer {
	int on;                       /* 1: fake-quantize this linear layer; 0: plain fp32 */
	float in_scale;               /* NN_FQ_ACT_STATIC: the input scale (> 0, finite) */
};
struct nn_fake_quant {
	int n_layer;                  /* the FULL model's L (global layer indices) */
	int per_tensor;               /* weights: one scale per tensor (else per output channel) */
	enum nn_fq_act act;
	struct nn_fq_layer *lin;      /* (n_layer, NN_FQ_PER_LAYER), GLOBAL block l's linear k at
				       * l·NN_FQ_PER_LAYER + k */
};

/* Scale for an absolute maximum: amax/127, or 1 when amax is 0 or not finite-positive. */
static inline float nn_quant_scale(float amax)
{
	return amax > 0.0f && isfinite(amax) ? amax / (float)NN_QMAX : 1.0f;
}
/* The one rounding function: clamp(rint(x·inv_s), −127, 127), half to even; NaN → 0. */
static inline int nn_quant_q(float x, float inv_s)
{
	float r = rintf(x * inv_s);
	if (!(r <= (float)NN_QMAX))   /* also NaN → +127, never UB in the cast */
		r = r != r ? 0.0f : (float)NN_QMAX;
	if (r < -(float)NN_QMAX)
		r = -(float)NN_QMAX;
	return (int)r;
}
/* x̂ = s · q(x). */
static inline float nn_quant_fake(float x, float s, float inv_s)
{
	return s * (float)nn_quant_q(x, inv_s);
}
/* max_k |x[k]| (NaN ignored, 0 for K = 0); AVX-512 where compiled in. */
float nn_quant_row_amax(const float *x, int K);
/* Weight scales of w (IC,OC), Conv1D layout: scale[o] = nn_quant_scale(max_i |w[i,o]|), or the
 * tensor's amax for every o when per_tensor. */
void nn_fq_weight_scales(const float *w, int IC, int OC, int per_tensor, float *scale /* OUT (OC) */);
/* out (IC,OC) = Q(w) with those scales (out may not alias w); scale (OC) gets them. */
void nn_fq_weight(float *out, float *scale /* OUT (OC) */, const float *w, int IC, int OC, int per_tensor);
/* out (N,K) = Q(x) per row (per-token dynamic); out may alias x. */
void nn_fq_act_dynamic(float *out, const float *x, int N, int K);
/* out (n) = Q(x) with the static scale s; out may alias x. */
void nn_fq_act_static(float *out, const float *x, size_t n, float s);
/* Clipped straight-through estimator of a static input: dx[i] = 0 where |rint(x[i]/s)| > 127. */
void nn_fq_ste_static(float *dx, const float *x, size_t n, float s);

/* Turn fake quantization on (fq copied, fq->lin too) or off (fq NULL) for this object; takes
 * effect at the next forward (a slot's backward must follow a forward made with the same setting).
 * Errors: ASCENT_EUSAGE for a shard with tp_size > 1 (not supported, see above), ASCENT_EINPUT for
 * fq->n_layer != cfg.n_layer, a bad act, or a static scale that is not finite-positive on a layer
 * that is on; ASCENT_ENOMEM. On error the previous setting is kept. */
int nn_gpt_set_fake_quant(struct nn_gpt *m, const struct nn_fake_quant *fq);

/* ------------------------------------------------------------------------------------------ */
/* Threads and BLAS */

/* Threads for BLAS and for nn's own loops. n <= 0: the default (cores ÷ ranks on the host). */
void nn_set_threads(int n);
int nn_get_threads(void);

/* If OpenBLAS runs a generic core (Prescott…) on a CPU with AVX2/AVX-512, re-exec this process
 * once with OPENBLAS_CORETYPE set to the right core, unless the user set it. Call first thing in
 * main(). Returns normally when nothing needs doing (and after the re-exec, in the new image). */
void nn_blas_fix_core(int argc, char **argv);
/* Stop OpenBLAS's worker threads, which spin for about 0.1 s of CPU after the library loads and
 * after each threaded call: for commands that run no GEMM (main() calls it for them). A later
 * GEMM starts them again. A no-op where the BLAS has no thread server. */
void nn_blas_idle(void);
/* One line describing the BLAS in use: "OpenBLAS 0.3.21 core SkylakeX, 2 threads". */
const char *nn_blas_describe(void);
/* The OpenBLAS core in use ("SkylakeX", "Prescott", ...). */
const char *nn_blas_core(void);
/* The instruction set oneDNN dispatches its kernels for in this process ("avx512_core_amx",
 * "avx512_core_bf16", "avx2", ...): the CPU's best, or less where ONEDNN_MAX_CPU_ISA caps it. The
 * same arithmetic rounds differently on each, so tests and bench lines name it. */
const char *nn_dnnl_isa(void);

/* GEMM backend, process-wide. Default NN_GEMM_ONEDNN, chosen by measurement (bench/bench_nn.c):
 * oneDNN shares libgomp's threads with nn's own loops, while OpenBLAS's pthreads spin against them
 * between calls (tiny 1.2x, small 1.1x faster training step at 2 threads). */
enum nn_gemm_backend { NN_GEMM_OPENBLAS, NN_GEMM_ONEDNN };
void nn_gemm_set_backend(enum nn_gemm_backend b);
enum nn_gemm_backend nn_gemm_get_backend(void);

/* Row-major C(M,N) = alpha · op(A) · op(B) + beta · C; op is a transpose when trans* is 'T'.
 * Every matrix product in the model goes through here. */
void nn_gemm(char transa, char transb, int M, int N, int K, float alpha, const float *A, int lda,
	     const float *B, int ldb, float beta, float *C, int ldc);
void nn_gemm_ref(char transa, char transb, int M, int N, int K, float alpha, const float *A, int lda,
		 const float *B, int ldb, float beta, float *C, int ldc);

/* bf16 values are stored as their 16 bits (uint16_t): the upper half of the fp32 word (common's
 * f32_from_bf16 reads one back). nn_bf16_from_f32: dst[i] = src[i] rounded to nearest even (NaN
 * stays NaN), over OpenMP threads. With AVX512_BF16 compiled in it runs vcvtneps2bf16, which also
 * flushes fp32 denormals to ±0; the reference is common's bf16_from_f32 element by element (it
 * keeps their rounded bits). */
void nn_bf16_from_f32(uint16_t *dst, const float *src, size_t n);
void nn_bf16_from_f32_ref(uint16_t *dst, const float *src, size_t n);
/* C(M,N) = op(A)·op(B) + beta·C with A and B bf16 (row strides lda, ldb as stored), products
 * accumulated in fp32, on oneDNN's bf16 matmul (primitives cached by shape). 0 when done; -1 when
 * the CPU lacks AVX512_BF16 or oneDNN refused the shape (nothing written). */
int nn_gemm_bf16(char transa, char transb, int M, int N, int K, const uint16_t *A, int lda, const uint16_t *B,
		 int ldb, float beta, float *C, int ldc);

/* ------------------------------------------------------------------------------------------ */
/* Kernels. Each op is one function (so a profiler range can wrap it); each optimized kernel has a
 * plain reference `*_ref` beside it, computing the same thing with straightforward loops, which
 * tests/unit/test_nn*.c compare against. N = B·T rows; all tensors are row-major fp32 and
 * contiguous unless a leading dimension is given. Outputs marked "+=" accumulate, the rest are
 * overwritten. None of them allocate, fail or check their arguments (the model validates). */

/* out (B,T,C) = wte[inp[b,t]] + wpe[t]. */
void nn_encoder_forward(float *out, const int *inp, const float *wte, const float *wpe, int B, int T, int C);
/* dwte (V,C) +=, dwpe (maxT,C) += from dout (B,T,C). */
void nn_encoder_backward(float *dwte, float *dwpe, const float *dout, const int *inp, int B, int T, int C);

/* LayerNorm over the last dimension (eps 1e-5, biased variance): out (N,C), mean and rstd (N)
 * are saved for the backward. */
void nn_layernorm_forward(float *out, float *mean, float *rstd, const float *inp, const float *w,
			  const float *b, int N, int C);
void nn_layernorm_forward_ref(float *out, float *mean, float *rstd, const float *inp, const float *w,
			      const float *b, int N, int C);
/* The same, and out_h (N,C) = out in bf16 (nn_bf16_from_f32's rounding) in the same pass: the input
 * of the next bf16 GEMM. The reference is nn_layernorm_forward_ref then nn_bf16_from_f32_ref. */
void nn_layernorm_forward_bf16(float *out, uint16_t *out_h, float *mean, float *rstd, const float *inp,
			       const float *w, const float *b, int N, int C);
/* Residual add fused with the LayerNorm that follows it: res (N,C) = a + b (res may alias a or b),
 * then out = LayerNorm(res) exactly as nn_layernorm_forward makes it (the same bits), and out_h
 * (N,C; NULL: none) = out in bf16 as nn_layernorm_forward_bf16 does, each row in one pass. The
 * reference is the plain sum, nn_layernorm_forward_ref, then nn_bf16_from_f32_ref. */
void nn_residual_layernorm_forward(float *res, float *out, uint16_t *out_h, float *mean, float *rstd,
				   const float *a, const float *b, const float *w, const float *bias, int N, int C);
void nn_residual_layernorm_forward_ref(float *res, float *out, uint16_t *out_h, float *mean, float *rstd,
				       const float *a, const float *b, const float *w, const float *bias, int N, int C);
/* dinp (N,C) +=, dw (C) +=, db (C) += from dout (N,C). */
void nn_layernorm_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
			   const float *w, const float *mean, const float *rstd, int N, int C);
void nn_layernorm_backward_ref(float *dinp, float *dw, float *db, const float *dout, const float *inp,
			       const float *w, const float *mean, const float *rstd, int N, int C);
/* The same (dinp bit for bit nn_layernorm_backward's) and, in the same pass, what the bf16 backward
 * of the linear layer that reads dinp as its output gradient needs: dinp_h (N,C) = the final dinp
 * in bf16 (nn_bf16_from_f32's rounding) and dlin (C; NULL: none) += dinp's column sums (that
 * layer's bias gradient). dw, db and dlin are summed in one pass over the rows: each thread a
 * contiguous range of rows in order, thread 0 into them, the others' sums added after in thread
 * order (at one thread nn_layernorm_backward's row order; at a given thread count the same every
 * time). The reference is nn_layernorm_backward_ref, nn_bf16_from_f32_ref and a plain column sum. */
void nn_layernorm_backward_bf16(float *dinp, uint16_t *dinp_h, float *dlin, float *dw, float *db, const float *dout,
				const float *inp, const float *w, const float *mean, const float *rstd, int N, int C);
void nn_layernorm_backward_bf16_ref(float *dinp, uint16_t *dinp_h, float *dlin, float *dw, float *db,
				    const float *dout, const float *inp, const float *w, const float *mean,
				    const float *rstd, int N, int C);

/* Linear layer in Conv1D layout: out (N,OC) = inp (N,IC) · w (IC,OC) + b (OC; b may be NULL).
 * Through nn_gemm (nn_gemm_ref in reference mode). */
void nn_linear_forward(float *out, const float *inp, const float *w, const float *b, int N, int IC, int OC);
/* dinp (N,IC) = dout · wᵀ (overwritten; skipped when dinp is NULL), dw (IC,OC) += inpᵀ · dout,
 * db (OC) += column sums of dout (skipped when NULL). */
void nn_linear_backward(float *dinp, float *dw, float *db, const float *dout, const float *inp,
			const float *w, int N, int IC, int OC);

/* gelu_new: out = 0.5x(1 + tanh(sqrt(2/pi)(x + 0.044715x^3))) over n elements. */
void nn_gelu_forward(float *out, const float *inp, size_t n);
void nn_gelu_forward_ref(float *out, const float *inp, size_t n);
/* The same, and out_h (n) = out in bf16 in the same pass (reference: nn_gelu_forward_ref then
 * nn_bf16_from_f32_ref). */
void nn_gelu_forward_bf16(float *out, uint16_t *out_h, const float *inp, size_t n);
/* dinp = gelu'(inp) · dout (overwritten; dinp may alias dout). */
void nn_gelu_backward(float *dinp, const float *inp, const float *dout, size_t n);
void nn_gelu_backward_ref(float *dinp, const float *inp, const float *dout, size_t n);
/* The same over (N,OC) and, in the same pass, what the bf16 backward of the linear layer before the
 * GELU reads: dinp_h (N,OC) = dinp in bf16 (nn_bf16_from_f32's rounding) and db (OC) += dinp's
 * column sums (its bias gradient; NULL: none), each column summed row by row. dout_h (not NULL):
 * the incoming gradient in bf16 (the bf16 product of the linear layer after the GELU), read
 * instead of dout (then unused; dinp_h may alias dout_h). dinp NULL: the fp32 gradient is not
 * stored. The reference is nn_gelu_backward_ref, nn_bf16_from_f32_ref and a plain column sum,
 * element by element. */
void nn_gelu_backward_bf16(float *dinp, uint16_t *dinp_h, float *db, const float *inp, const float *dout,
			   const uint16_t *dout_h, int N, int OC);
void nn_gelu_backward_bf16_ref(float *dinp, uint16_t *dinp_h, float *db, const float *inp, const float *dout,
			       const uint16_t *dout_h, int N, int OC);

/* out = a + b over n elements (out may alias a or b). */
void nn_residual_forward(float *out, const float *a, const float *b, size_t n);

/* Causal multi-head self-attention, fused (flash-attention style: no (T,T) matrix is stored, so
 * memory grows with T, not T²). qkv (B,T,3C) holds q | k | v, each (H heads × hs), hs = C/H;
 * out (B,T,C); lse (B,H,T) gets each query row's log-sum-exp of its scaled scores (columns j <= i),
 * kept for the backward, which recomputes the probabilities from it. Scores are scaled by
 * 1/sqrt(hs). `scratch` holds nn_attention_scratch_floats(T,C,H) floats (per-thread tiles; the
 * references need none). */
void nn_attention_forward(float *out, float *lse, float *scratch, const float *qkv, int B, int T, int C, int H);
void nn_attention_forward_ref(float *out, float *lse, const float *qkv, int B, int T, int C, int H);
/* dqkv (B,T,3C) = gradient from dout (B,T,C) (overwritten), given the forward's out and lse. */
void nn_attention_backward(float *dqkv, float *scratch, const float *dout, const float *qkv, const float *out,
			   const float *lse, int B, int T, int C, int H);
void nn_attention_backward_ref(float *dqkv, const float *dout, const float *qkv, const float *lse, int B, int T,
			       int C, int H);
/* Scratch floats of one attention call run by `threads` threads (<= 0: nn_get_threads(), what the
 * kernels use), enough for the fp32 and the bf16 kernels: O(threads · T · hs). */
size_t nn_attention_scratch_floats(int T, int C, int H, int threads);
/* The same attention with bf16 products (the bf16 model's, NN_BF16 on oneDNN): q, k, v (and dout)
 * rounded to bf16 once per call, QKᵀ and PV (backward: QKᵀ, dO·Vᵀ, dS·K, Qᵀ·dS, dOᵀ·P) on the AMX
 * tiles with fp32 accumulation, the online softmax, masking, scaling and D_i = dO_i·out_i in fp32;
 * P and dS are rounded to bf16 only as product operands (attention_bf16.c). out_h (B,T,C; NULL for
 * none) gets out in bf16 in the same pass (the attention projection's input). qkv_h (B,T,3C; NULL
 * for none): q, k, v already in bf16 (the model's qkv product stores them so), read instead of
 * qkv where the tiles run, the same as passing qkv = qkv_h widened to fp32 (bit for bit); qkv may
 * be NULL then, but only where nn_attention_bf16_tiles() is 1. Same arguments and scratch as
 * nn_attention_forward/backward, whose fp32 kernels run instead (on qkv; out_h then converted)
 * where nn_attention_bf16_tiles() is 0. The reference is nn_attention_forward_ref/backward_ref,
 * within what bf16 operands allow (tests/unit/test_nn_attention.c derives the bound). */
void nn_attention_forward_bf16(float *out, uint16_t *out_h, float *lse, float *scratch, const float *qkv,
			       const uint16_t *qkv_h, int B, int T, int C, int H);
/* The backward also writes dqkv_h (B,T,3C; NULL: none) = dqkv in bf16 (nn_bf16_from_f32's
 * rounding), what the qkv layer's bf16 backward reads, and adds dqkv's column sums (the qkv bias
 * gradient) to db (3C; NULL: none), each column summed row by row (bit for bit a plain loop's
 * sums): in the kernel's pass where the tiles run (the sums there when the heads split evenly
 * over the threads: each thread then runs whole heads, their sequences in order), else after.
 * Returns 1 when dqkv holds the fp32 gradient, 0 when only dqkv_h and db were made (dqkv not
 * written): on the tiles with dqkv_h given and db NULL or summed in the kernel's pass, where the
 * fp32 rows would be written only for nobody to read them. */
int nn_attention_backward_bf16(float *dqkv, uint16_t *dqkv_h, float *db, float *scratch, const float *dout,
			       const float *qkv, const uint16_t *qkv_h, const float *out, const float *lse, int B, int T,
			       int C, int H);
/* 1 when the bf16 attention runs on the tiles here: built with AMX-BF16, the CPU has it, the kernel
 * grants the tile state, oneDNN is not capped below AMX (ONEDNN_MAX_CPU_ISA), reference mode off. */
int nn_attention_bf16_tiles(void);

/* Softmax + cross-entropy over V classes for N rows: losses (N) = logsumexp(logits) - logit[target],
 * lse (N) the row's log-sum-exp (saved for the backward). */
void nn_crossentropy_forward(float *losses, float *lse, const float *logits, const int *targets, int N, int V);
void nn_crossentropy_forward_ref(float *losses, float *lse, const float *logits, const int *targets, int N,
				 int V);
/* dlogits (N,V) = dloss · (softmax(logits) - onehot(target)) (overwritten), with the same dloss for
 * every row (scale / N for a mean). */
void nn_crossentropy_backward(float *dlogits, const float *logits, const float *lse, const int *targets,
			      float dloss, int N, int V);
void nn_crossentropy_backward_ref(float *dlogits, const float *logits, const float *lse, const int *targets,
				  float dloss, int N, int V);

/* Distillation loss for N rows of V classes against soft targets `probs` (N,V) (a teacher's
 * probabilities: each row >= 0, summing to 1): losses (N) = KL(p ‖ softmax(logits)) =
 * Σ_v p_v·(log p_v − log softmax(logits)_v) (terms with p_v = 0 count 0), lse (N) the row's
 * log-sum-exp (saved for the backward). With a one-hot p this is the cross-entropy of that class. */
void nn_kldiv_forward(float *losses, float *lse, const float *logits, const float *probs, int N, int V);
void nn_kldiv_forward_ref(float *losses, float *lse, const float *logits, const float *probs, int N, int V);
/* dlogits (N,V) = dloss · (softmax(logits) − p) (overwritten): the gradient of the KL (and of the
 * cross-entropy with soft targets) for rows of p summing to 1; the same dloss for every row. */
void nn_kldiv_backward(float *dlogits, const float *logits, const float *lse, const float *probs, float dloss, int N,
		       int V);
void nn_kldiv_backward_ref(float *dlogits, const float *logits, const float *lse, const float *probs, float dloss,
			   int N, int V);

/* Reference mode: when on, nn_gpt_forward/backward use the *_ref kernels and nn_gemm_ref
 * (slow; for tests and golden values). Process-wide; off by default. */
void nn_set_reference(int on);
int nn_get_reference(void);

/* ------------------------------------------------------------------------------------------ */
/* Optimizer */

/* x[0..n) = 0 by nn's threads, with streaming stores where AVX-512 runs: for a buffer larger than
 * the caches that is read again only later (the gradients before each step, the residual gradient
 * before the final LayerNorm's backward adds to it), so its lines are neither read in first nor
 * kept. A single-threaded memset reads every line in: 7.7 ms for small's 19.2 M gradients on the
 * 2-core build host, against 2.4 ms so. */
void nn_zero_floats(float *x, size_t n);

struct nn_adamw {
	float lr, beta1, beta2, eps, weight_decay;
	float grad_scale;   /* each gradient is multiplied by this as it is read, in the same pass (0 or 1:
			     * as it is): undoing a loss scale, clipping, a data-parallel sum's mean */
};
/* One AdamW step (decoupled weight decay, bias correction with step t >= 1) on n elements;
 * `decay` 0 skips weight decay for this range. m, v are the moments. */
void nn_adamw_step(const struct nn_adamw *o, int t, float *param, const float *grad, float *m, float *v,
		   size_t n, int decay);
void nn_adamw_step_ref(const struct nn_adamw *o, int t, float *param, const float *grad, float *m, float *v,
		       size_t n, int decay);
/* The same step (param, m, v exactly as nn_adamw_step makes them) and param_h (n; NULL: none) = the
 * new param in bf16 (nn_bf16_from_f32's rounding) in the same pass; no profiler range of its own
 * (nn_gpt_adamw_step makes one). Reference: nn_adamw_step_ref, then nn_bf16_from_f32_ref. */
void nn_adamw_step_bf16(const struct nn_adamw *o, int t, float *param, uint16_t *param_h, const float *grad,
			float *m, float *v, size_t n, int decay);
/* One piece of an optimizer step: n elements with their gradient, moments, weight-decay flag and
 * bf16 copy (param_h; NULL: none). */
struct nn_adamw_piece {
	float *param;
	uint16_t *param_h;
	const float *grad;
	float *m, *v;
	size_t n;
	int decay;
};
/* nn_adamw_step_bf16 on every piece, in one pass of the threads over them all (one parallel
 * region: each thread an equal share of the pieces' elements together), the same values. */
void nn_adamw_pieces(const struct nn_adamw *o, int t, const struct nn_adamw_piece *p, int np);
/* One span of the model's own parameters for nn_gpt_adamw_steps: n elements at param (into
 * m->params_mem), their gradient, moments and weight-decay flag. */
struct nn_adamw_span {
	float *param;
	const float *grad;
	float *m, *v;
	size_t n;
	int decay;
};
/* nn_gpt_adamw_step on every span (ns of them) in one profiler range "adamw" and one pass of the
 * threads (nn_adamw_pieces), not one per span: each parallel region costs the threads a wake-up. */
void nn_gpt_adamw_steps(struct nn_gpt *m, const struct nn_adamw *o, int t, const struct nn_adamw_span *s, int ns);
/* nn_adamw_step on n of the model's own parameters (param points into m->params_mem) in one
 * profiler range "adamw". Where the model keeps bf16 copies of its weight matrices (bf16 on oneDNN,
 * nn_bf16_runs_onednn) the step also writes the copies of the elements it updates; when the steps
 * since the model's last forward have covered every element of those matrices once, the next
 * forward reads the copies as they are instead of converting the weights again (one pass over the
 * weights less per step). Partial updates (a ZeRO shard, parameters gathered from other ranks
 * afterwards) leave the next forward converting as before. */
void nn_gpt_adamw_step(struct nn_gpt *m, const struct nn_adamw *o, int t, float *param, const float *grad,
		       float *mo, float *v, size_t n, int decay);
/* The parameters were changed by other means than nn_gpt_adamw_step (a checkpoint loaded into
 * them...) after a step: the next forward converts the bf16 weight copies afresh. */
void nn_gpt_params_changed(struct nn_gpt *m);

/* Sum of squares of n floats (in double), for global gradient-norm clipping: fp32 sums of 4096
 * elements, added in double by each thread, the threads' sums in thread order (the same at a given
 * thread count every time). */
double nn_sumsq(const float *x, size_t n);
/* The same over k spans (x[j], n[j] elements) together, in one pass of the threads (one parallel
 * region, not one a span). */
double nn_sumsq_many(const float *const *x, const size_t *n, int k);
void nn_scale(float *x, size_t n, float s);

#endif
