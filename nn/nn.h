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
 */
#ifndef ASCENT_NN_H
#define ASCENT_NN_H

#include <stddef.h>
#include <stdint.h>

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
/* Model FLOPs per token for forward+backward: 6·N + 12·L·T·C, N excluding wpe (nanoGPT/PaLM). */
double nn_flops_per_token(const struct nn_config *c, int T);

/* ------------------------------------------------------------------------------------------ */
/* The model */

struct nn_acts;   /* activation block: private to nn */

struct nn_gpt {
	struct nn_config cfg;
	size_t param_sizes[NN_NPARAMS];
	size_t n_params;
	float *params_mem;            /* one block of n_params floats */
	float *grads_mem;             /* one block of n_params floats (zeroed by nn_gpt_zero_grad) */
	float *param[NN_NPARAMS];     /* into params_mem */
	float *grad[NN_NPARAMS];      /* into grads_mem */
	struct nn_acts *acts;         /* sized for (B, T) on first forward; regrown if larger */
	int B, T;                     /* the last forward's batch shape */
	float loss;                   /* mean cross-entropy of the last forward with targets, else -1 */
};

/* Allocate parameters and gradients (zeroed); activations come on the first forward. */
int nn_gpt_init(struct nn_gpt *m, const struct nn_config *cfg);
void nn_gpt_release(struct nn_gpt *m);
/* GPT-2 init: N(0, 0.02), residual projections (attprojw, fcprojw) N(0, 0.02/sqrt(2L)), biases 0,
 * LayerNorm weights 1. Deterministic in `seed`. */
void nn_gpt_init_weights(struct nn_gpt *m, uint64_t seed);

/* Forward over inputs (B, T) token ids. With targets (B, T) it computes m->loss (mean over B·T);
 * with targets NULL it only computes logits. T <= cfg.max_seq; ids must be < vocab_size.
 * Allocates nothing once the activation block is big enough for (B, T). */
int nn_gpt_forward(struct nn_gpt *m, const int *inputs, const int *targets, int B, int T);
/* Logits of the last forward, (B, T, V). Valid until the next forward. */
const float *nn_gpt_logits(const struct nn_gpt *m);
/* Backward of the last forward (which must have had targets). Gradients are ADDED to grads_mem
 * (gradient accumulation); the loss gradient is scaled by `scale` (1/K for K accumulation steps,
 * or a loss scale), i.e. it computes d(scale · mean loss)/dθ. */
int nn_gpt_backward(struct nn_gpt *m, float scale);
void nn_gpt_zero_grad(struct nn_gpt *m);

/* ------------------------------------------------------------------------------------------ */
/* Threads and BLAS */

/* Threads for BLAS and for nn's own loops. n <= 0: the default (cores ÷ ranks on the host). */
void nn_set_threads(int n);
int nn_get_threads(void);

/* If OpenBLAS runs a generic core (Prescott…) on a CPU with AVX2/AVX-512, re-exec this process
 * once with OPENBLAS_CORETYPE set to the right core, unless the user set it. Call first thing in
 * main(). Returns normally when nothing needs doing (and after the re-exec, in the new image). */
void nn_blas_fix_core(int argc, char **argv);
/* One line describing the BLAS in use: "OpenBLAS 0.3.21 core SkylakeX, 2 threads". */
const char *nn_blas_describe(void);

enum nn_gemm_backend { NN_GEMM_OPENBLAS, NN_GEMM_ONEDNN };
void nn_gemm_set_backend(enum nn_gemm_backend b);
enum nn_gemm_backend nn_gemm_get_backend(void);

/* Row-major C(M,N) = alpha · op(A) · op(B) + beta · C; op is a transpose when trans* is 'T'.
 * Every matrix product in the model goes through here. */
void nn_gemm(char transa, char transb, int M, int N, int K, float alpha, const float *A, int lda,
	     const float *B, int ldb, float beta, float *C, int ldc);
void nn_gemm_ref(char transa, char transb, int M, int N, int K, float alpha, const float *A, int lda,
		 const float *B, int ldb, float beta, float *C, int ldc);

/* ------------------------------------------------------------------------------------------ */
/* Optimizer */

struct nn_adamw {
	float lr, beta1, beta2, eps, weight_decay;
};
/* One AdamW step (decoupled weight decay, bias correction with step t >= 1) on n elements;
 * `decay` 0 skips weight decay for this range. m, v are the moments. */
void nn_adamw_step(const struct nn_adamw *o, int t, float *param, const float *grad, float *m, float *v,
		   size_t n, int decay);
void nn_adamw_step_ref(const struct nn_adamw *o, int t, float *param, const float *grad, float *m, float *v,
		       size_t n, int decay);

/* Sum of squares of n floats (in double), for global gradient-norm clipping. */
double nn_sumsq(const float *x, size_t n);
void nn_scale(float *x, size_t n, float s);

#endif
