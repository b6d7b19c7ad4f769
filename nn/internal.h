/* nn/internal.h — internal to nn: the activation slots and the workspace (struct nn_acts), the
 * per-layer views into parameters and activations, and the precision GEMM used by the model code
 * (gpt.c: objects and memory; stage.c: forward/backward; shard.c: shard shapes and mapping;
 * precision.c: bf16/fp16 GEMMs). Not installed for other modules. */
#ifndef ASCENT_NN_INTERNAL_H
#define ASCENT_NN_INTERNAL_H

#include "nn/nn.h"

/* One block's activations (pointers into a slot, or into the workspace when recomputing). Shapes
 * use the LOCAL widths Cl = C/tp, Hl = H/tp. */
struct nn_layer_acts {
	float *ln1, *ln1_mean, *ln1_rstd;  /* (N,C), (N), (N) */
	float *qkv;                        /* (N,3Cl); in bf16 on the tiles, (N,3Cl) bf16 instead (stage.c) */
	float *atty;                       /* (N,Cl) attention output before the projection */
	float *att_lse;                    /* (B,Hl,T) attention rows' log-sum-exp (no T×T matrix) */
	float *res2;                       /* (N,C) residual after attention */
	float *ln2, *ln2_mean, *ln2_rstd;  /* (N,C), (N), (N) */
	float *fch, *fch_gelu;             /* (N,4Cl), (N,4Cl) */
	/* bf16 copies of the linear layers' inputs ln1, atty, ln2, fch_gelu, made by the op that makes
	 * them and read by the layer's forward and backward GEMMs; NULL unless the slot's forward ran
	 * the bf16 path (nn_bf16_active) */
	uint16_t *ln1_h, *atty_h, *ln2_h, *fch_gelu_h;
};

/* One micro-batch in flight. */
struct nn_slot {
	float *mem;               /* the slot's block */
	size_t cap_floats;
	int *tok;                 /* inputs (cap_tok), then targets (cap_tok) */
	size_t cap_tok;
	int B, T;                 /* shape of its last forward; 0 = none yet */
	int recompute;            /* mode of its last forward */
	int bf16;                 /* its last forward ran the bf16 path (the layers' *_h copies exist) */
	int has_targets;
	float loss;
	float *residual;          /* (Ll+1, N, C): [0] the chunk's input, [l+1] block l's output */
	struct nn_layer_acts st;  /* stacked over Ll (only without recompute); layer l at l × size */
	float *lnf, *lnf_mean, *lnf_rstd;  /* head: (N,C), (N), (N) */
	float *logits;            /* head: (N,V) */
	float *lse, *losses;      /* head: (N), (N) */
	float *soft;              /* head, soft targets: the forward's probabilities (N,V), own block */
	size_t cap_soft;          /* floats in soft */
	int has_soft;             /* the last forward had soft targets (the backward uses soft) */
};

struct nn_acts {
	int nslots;
	struct nn_slot *slot;     /* array of nslots (may move when it grows; the blocks do not) */
	int last;                 /* slot of the last forward, -1 none */
	float *ws;                /* the workspace block, shared by all slots */
	size_t ws_cap;
	/* workspace layout for the current call */
	float *dres;              /* (N,C) gradient of the residual stream */
	float *dbuf_c;            /* (N,C) */
	float *dbuf_4c;           /* (N,4Cl) dqkv or dfch */
	float *dlogits;           /* head: (N,V) */
	float *attn_scratch;      /* nn_attention_scratch_floats(T,Cl,Hl) */
	struct nn_layer_acts rc;  /* one block's activations, for recomputation */
	float *pa, *pb;           /* precision: rounded GEMM operands */
	size_t pa_n, pb_n;
	/* bf16: what the LayerNorm backward that makes dres leaves for the fc projection of the block
	 * below (stage.c): dres's column sums in dres_sum (C: that fcprojb gradient) and dres in bf16
	 * in nn_bf16_dout_buf; dres_carry 0: nothing, 1: the sums only (a recomputation reuses pa
	 * between), 2: both */
	float *dres_sum;
	int dres_carry;
	float *fq_x;              /* fake quantization (m->fq): Q(x) of a linear input (N, max(C,4Cl)) */
	float *fq_w, *fq_s;       /* Q(w) of one linear (its IC·OC <= C·4Cl), its scales (max(C,4Cl)) */
	/* bf16 copies of the four stacked weight matrices (qkvw, attprojw, fcw, fcprojw), made by
	 * nn_bf16_weights at each forward on the bf16 path, read by that forward's and the following
	 * backwards' GEMMs; its own block of wb_cap values */
	uint16_t *wb;
	size_t wb_cap;
	uint16_t *wb_t[NN_NPARAMS]; /* into wb for the four matrices, NULL for the other tensors */
	size_t wb_fresh;          /* matrix elements nn_gpt_adamw_step updated, copies included, since
				   * the last nn_bf16_weights: all of them = the copies are current */
};

/* Make sure the workspace is laid out for (B,T) with the current settings (grows it; 0 or
 * ASCENT_ENOMEM). `recompute`: include the recompute buffers. */
int nn_ws_ensure(struct nn_gpt *m, int B, int T, int recompute);
/* Make sure slot `s` exists and is laid out for (B,T) with m->recompute. preserve: a slot holding a
 * forward keeps its contents and layout (only its capacity grows). */
int nn_slot_ensure(struct nn_gpt *m, int s, int B, int T, int preserve);
/* Block l (LOCAL index) of a slot's stored activations. */
void nn_slot_layer(const struct nn_gpt *m, const struct nn_slot *sl, int l, struct nn_layer_acts *la);

/* A layer's parameters (or gradients), LOCAL index. */
struct nn_layer_params {
	float *ln1w, *ln1b, *qkvw, *qkvb, *attprojw, *attprojb, *ln2w, *ln2b, *fcw, *fcb, *fcprojw, *fcprojb;
};
void nn_layer_params_at(const struct nn_gpt *m, float *const t[NN_NPARAMS], int l, struct nn_layer_params *p);
/* Block l's (LOCAL index) gradient pointers for a backward: into grads_mem, or into the buffer the
 * gradient window's provider gives (ASCENT_EINTERNAL when it gives none). */
int nn_layer_grads(struct nn_gpt *m, int l, struct nn_layer_params *g);

/* Per-layer element count of a stacked tensor for this shard (0 for wte, wpe, lnf). */
size_t nn_layer_size(const struct nn_config *c, const struct nn_shard *s, int id);

/* 1 when this model's bf16 GEMMs run on oneDNN's bf16 matmul (precision bf16, the CPU has
 * AVX512_BF16, nn_set_bf16_onednn on, reference mode off): then the linear layers read bf16 copies
 * of their weights (nn_bf16_weights) and inputs (struct nn_layer_acts' *_h). */
int nn_bf16_active(const struct nn_gpt *m);
/* Convert the four weight matrices of every local layer into m->acts->wb (allocated on first use):
 * once per forward, so all of that forward's and its backward's GEMMs share one conversion; none
 * when the optimizer steps since the last call wrote every copy (nn_gpt_adamw_step). 0 or
 * ASCENT_ENOMEM. */
int nn_bf16_weights(struct nn_gpt *m);

/* Scratch floats one thread of the bf16 attention (attention_bf16.c) needs for head size hs. */
size_t nn_attention_bf16_thread_floats(int T, int hs);

/* C(M,N) = alpha·op(A)·op(B) + bias + beta·C on oneDNN's matmul primitive, cached by shape
 * (matmul.c). flags: NN_MM_BF16: A and B are bf16 bits (uint16_t), else fp32; NN_MM_DST_BF16:
 * C is stored in bf16 (the fp32 result rounded to nearest even, as nn_bf16_from_f32 rounds), else
 * fp32. bias (N, added to every row; NULL for none) fp32; ta/tb: the operand is stored transposed
 * (lda/ldb its row stride as stored). 0 when done; -1 when oneDNN refused the shape (nothing
 * written) or, never seen in practice, failed while running (then C may be partly written). */
#define NN_MM_BF16 1
#define NN_MM_DST_BF16 2
int nn_matmul(int flags, int ta, int tb, int M, int N, int K, float alpha, const void *A, int lda, const void *B,
	      int ldb, const float *bias, float beta, void *C, int ldc);
/* out (N,OC) = inp (N,IC) · w (IC,OC) + b (OC; NULL for none): nn_linear_forward's fp32 product,
 * the bias fused into the matmul on the oneDNN backend (gemm.c). */
void nn_gemm_bias(int N, int OC, int IC, const float *inp, const float *w, const float *b, float *out);

/* C(M,N) = op(A)·op(B) + beta·C in the model's precision (fp32: nn_gemm, or nn_gemm_ref in reference
 * mode). round_out: round C to the precision afterwards (fp16 activations). Uses the workspace's
 * pa/pb. */
void nn_gemm_prec(struct nn_gpt *m, char ta, char tb, int M, int N, int K, const float *A, int lda,
		  const float *B, int ldb, float beta, float *C, int ldc, int round_out);
/* A linear layer's forward in bf16 on oneDNN's matmul, the bias (NULL: none) fused in: out (N,OC) =
 * inp·w + b, or with out_h (not NULL) that result stored in bf16 in out_h instead (out unused).
 * inp_h, w_h: inp and w already in bf16 (NULL: converted here, into the workspace). -1 when bf16
 * does not run on oneDNN here or oneDNN refused (nothing written: then use nn_gemm_prec). */
int nn_linear_fwd_bf16(struct nn_gpt *m, float *out, uint16_t *out_h, const float *inp, const float *w, const float *b,
		       int N, int IC, int OC, const uint16_t *inp_h, const uint16_t *w_h);
/* A linear layer's backward in bf16 on oneDNN's matmul, dout converted once for both GEMMs and its
 * column sums taken in the same pass: dinp (N,IC) = dout·wᵀ (skipped when NULL), dw (IC,OC) +=
 * inpᵀ·dout, db (OC) += column sums of dout (skipped when NULL); inp_h, w_h as in
 * nn_linear_fwd_bf16. dinp_h (not NULL): dinp is stored in bf16 there instead (dinp untouched),
 * unless oneDNN refuses that product: then dinp is made in fp32 as without dinp_h, and 1 returned.
 * dout_h: dout already in bf16 (at nn_bf16_dout_buf, made by the op that made dout; db, when that
 * op summed it, NULL, else summed here from dout), or NULL to convert here. A product oneDNN
 * refuses is made by nn_gemm_prec from dout instead; dout may be NULL where only dout_h was made
 * (db NULL), and then such a refusal is an error (ASCENT_EFAIL, set). Returns 0, 1 (above), that
 * error, or -1 when bf16 does not run on oneDNN here (nothing was written: use nn_gemm_prec and a
 * column sum). */
int nn_linear_bwd_bf16(struct nn_gpt *m, float *dinp, uint16_t *dinp_h, float *dw, float *db, const float *dout,
			const float *inp, const float *w, int N, int IC, int OC, const uint16_t *inp_h, const uint16_t *w_h,
			const uint16_t *dout_h);
/* dst (N,OC; NULL: none) = dout in bf16 (nn_bf16_from_f32's rounding) and, when db is not NULL,
 * db (OC) += dout's column sums, each column summed row by row in order (bit for bit a plain loop's
 * sums). */
void nn_bf16_colsum(uint16_t *dst, float *db, const float *dout, int N, int OC);
/* Where nn_linear_bwd_bf16 puts dout in bf16 (the workspace's pa, upper half: N·max(C,4Cl,V)
 * values): an op that makes a linear backward's dout writes its bf16 copy here for dout_h. Valid
 * until the next precision GEMM of the model. */
uint16_t *nn_bf16_dout_buf(struct nn_gpt *m);

/* Fake quantization (fakequant.c). nn_fq_layer_at: the setting of GLOBAL block `layer`'s linear k
 * (enum nn_fq_linear), NULL when it runs plain. The others are identities for q NULL:
 * nn_fq_quant_weight returns Q(w) of w (IC,OC) in the workspace's fq_w, nn_fq_quant_input Q(x) of
 * x (N,K) in fq_x (x itself for weight-only), nn_fq_ste zeroes dx where a static code of x was
 * clamped. One linear at a time: the next call overwrites the buffers. nn_fq_release frees m->fq. */
const struct nn_fq_layer *nn_fq_layer_at(const struct nn_gpt *m, int layer, int k);
const float *nn_fq_quant_weight(struct nn_gpt *m, const struct nn_fq_layer *q, const float *w, int IC, int OC);
const float *nn_fq_quant_input(struct nn_gpt *m, const struct nn_fq_layer *q, const float *x, int N, int K);
void nn_fq_ste(const struct nn_gpt *m, const struct nn_fq_layer *q, float *dx, const float *x, size_t n);
void nn_fq_release(struct nn_gpt *m);

#endif
