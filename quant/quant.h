/* quant/quant.h — the public face of `quant`: symmetric INT8 quantization of the trainer's GPT-2
 * checkpoints. Rounding and (de)quantization, observers and calibrators, the INT8 GEMM (oneDNN's
 * AMX-INT8 matmul, our AVX512-VNNI kernel, oneDNN's s8s8s32), a GPT-2 forward whose four linear layers per block run
 * in INT8 (or fake-quant, or fp32), SmoothQuant folding, the quantized checkpoint format
 * (safetensors I8 + compressed-tensors config.json), and the jobs behind `ascent quant
 * ptq|qat|eval`.
 *
 * Conventions (docs/background.md, "INT8 conventions"):
 *  - Symmetric restricted INT8: s = amax/127, q = clamp(rint(x · (1/s)), −127, 127), x̂ = s·q, so
 *    |x − x̂| <= s/2 inside the range. rint() rounds half to even (the default FE_TONEAREST mode);
 *    the fake-quant and the real INT8 paths call the same nn_quant_q() (nn/nn.h), so they produce the
 *    same codes.
 *    amax == 0 gives s = 1 (every code 0).
 *  - Weights are per output channel (scale shape [out,1]) or per tensor. A quantized weight is
 *    stored (out, in) — nn.Linear's layout, one scale per row — while nn keeps fp32 weights in
 *    HF Conv1D layout (in, out).
 *  - Activations (the input of each linear layer): per-token dynamic (one scale per row of X,
 *    computed on the fly) or per-tensor static (one calibrated scale).
 *  - Norms, softmax, GELU, residuals, the embeddings and the tied LM head stay fp32.
 *
 * Library functions return 0 or a negative ASCENT_E* code with the message in ascent_errmsg();
 * none exits or prints, except the *_run jobs, which print their report to stdout.
 */
#ifndef ASCENT_QUANT_H
#define ASCENT_QUANT_H

#include "common/common.h"
#include "nn/nn.h"
#include "trainer/trainer.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ------------------------------------------------------------------------------------------ */
/* Quantize / dequantize (qtensor.c) */

/* The rounding (nn_quant_q), the scale (nn_quant_scale), x̂ (nn_quant_fake), the row amax and the
 * fake-quant kernels of weights and activations are nn's (nn/nn.h, "Fake quantization"): the
 * trainer's quantization-aware training uses the very same code, and there is one copy of it. */

/* Per-channel weights: w (IC,OC) Conv1D layout → q (OC,IC), scale (OC) with scale[o] =
 * max_i |w[i,o]| / 127. Per-tensor (`per_tensor` 1): every scale[o] is the tensor's amax/127.
 * The scales are nn_fq_weight_scales', so dequantizing gives exactly nn_fq_weight's Q(w). */
void quant_weight_quantize(const float *w, int IC, int OC, int per_tensor, int8_t *q /* OUT (OC,IC) */,
			   float *scale /* OUT (OC) */);
/* w (IC,OC) = scale[o] · q[o,i]: exactly the fake-quant weights. */
void quant_weight_dequantize(const int8_t *q, const float *scale, int IC, int OC, float *w /* OUT (IC,OC) */);
/* Per-token: scale[n] = max_k |x[n,k]| / 127; q = codes. */
void quant_act_dynamic(const float *x, int N, int K, int8_t *q /* OUT (N,K) */, float *scale /* OUT (N) */);
/* Row kernels of the INT8 path (AVX-512 where compiled in, identical results to the scalar form):
 * the codes nn_quant_q(x[k], inv) as u8 (+128, for the VNNI kernel) or s8. */
void quant_row_codes_u8(const float *x, int K, float inv, uint8_t *out /* OUT K */);
void quant_row_codes_s8(const float *x, int K, float inv, int8_t *out /* OUT K */);

/* ------------------------------------------------------------------------------------------ */
/* Observers and calibrators (observer.c). One observer watches one tensor (a layer's input) over
 * many batches and keeps everything the methods need: running min/max, the EMA min/max
 * (m ← m + c·(m_cur − m), c = 0.01, first batch initialises), and a histogram of |x| with
 * QUANT_HIST_BINS bins over [0, range], where range grows by doubling (adjacent bins merged) when a
 * larger value arrives, so no finite sample is ever dropped. NaN and ±Inf are not observed, only
 * counted (nonfinite): a caller refuses to calibrate on them. */

#define QUANT_HIST_BINS 2048
#define QUANT_EMA_C 0.01

enum quant_method { QUANT_MINMAX, QUANT_EMA, QUANT_PERCENTILE, QUANT_MSE, QUANT_KL, QUANT_NMETHODS };
const char *quant_method_name(enum quant_method m);       /* "minmax", "ema", "percentile", "mse", "kl" */
int quant_method_parse(const char *s, enum quant_method *out);  /* ASCENT_EUSAGE listing the names */

struct quant_observer {
	double min, max;             /* running */
	double ema_min, ema_max;     /* moving average of per-batch min/max */
	int64_t batches;
	double range;                /* histogram covers [0, range]; 0 before the first non-zero value */
	double hist[QUANT_HIST_BINS];
	double count;                /* samples in hist */
	int64_t nonfinite;           /* NaN and ±Inf samples seen: left out of everything above */
};
void quant_observer_init(struct quant_observer *o);
void quant_observer_update(struct quant_observer *o, const float *x, size_t n);
/* The clipping threshold (amax) a method picks; `percentile` in (0, 100] for QUANT_PERCENTILE.
 *  minmax: max(|min|, |max|); ema: max(|ema_min|, |ema_max|);
 *  percentile: the upper edge of the histogram bin where the cumulative count reaches p% (clamped to
 *    the running amax);
 *  mse: the bin upper edge t (bins 1 … 2048) minimising Σ_bins count·(c − x̂(c; t))², with c the bin
 *    centre and x̂ the symmetric 8-bit fake-quant at amax t (clipping included);
 *  kl: TensorRT's entropy calibration, quant_kl_threshold() over the histogram with 128 levels;
 *    the threshold is the upper edge of the chosen bin. */
double quant_observer_amax(const struct quant_observer *o, enum quant_method m, double percentile);
/* TensorRT entropy search on any histogram hist[0..nbins) of |x| with unit-width bins: for each
 * i in [start, nbins] (start >= levels), P = hist[0..i) with the tail Σ hist[i..] added to P[i−1];
 * Q = hist[0..i) merged into `levels` groups of i/levels bins (the remainder joins the last
 * group), each group's sum spread evenly over the bins where P is non-zero; KL(P‖Q) over
 * normalised P and Q (bins where P is 0 contribute nothing). Returns the i with the
 * smallest KL (the first on ties); `kl_out` (may be NULL) gets that KL. */
int quant_kl_threshold(const double *hist, int nbins, int levels, int start, double *kl_out /* OUT */);
/* SQNR in dB of an approximation: 10·log10(Σ ref² / Σ (ref − x)²); 200 when exact. */
double quant_sqnr_db(double signal, double noise);

/* ------------------------------------------------------------------------------------------ */
/* INT8 GEMM (gemm_s8.c). C(M,N) s32 = A(M,K) s8 · B(N,K)ᵀ s8 (B holds one output channel per
 * row, the stored weight layout). Bit-exact: no intermediate saturation anywhere. */

/* Plain loops: the reference every kernel is tested against. */
void quant_gemm_s8s8s32_ref(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
			    int ldc);

/* B packed for the AVX512-VNNI kernel: 16 output channels per panel, 4 consecutive K per 32-bit
 * lane ([N16/16][K4/4][16][4] bytes, zero padded), and comp[n] = 128 · Σ_k B[n,k] to undo the
 * +128 that makes the signed activations unsigned for VPDPBUSD. */
struct quant_amx_w;                  /* gemm_s8.c: oneDNN's blocked weights and their layout */
struct quant_packed {
	int N, K, Kp;                /* Kp: K rounded up to 4 */
	int8_t *data;                /* owned, 64-byte aligned */
	int32_t *comp;               /* owned, N16 entries */
	/* owned: the same codes reordered once, at pack time, into the layout oneDNN's AMX-INT8 matmul
	 * wants; NULL where quant_have_amx() is 0 or oneDNN offers no AMX kernel for (N, K) */
	struct quant_amx_w *amx;
};
int quant_pack_b(struct quant_packed *p, const int8_t *B, int N, int K, int ldb);
void quant_packed_release(struct quant_packed *p);   /* accepts NULL and released */

/* A is u8 (M, lda) holding a + 128 for signed codes a, lda >= Kp, and the Kp − K padding bytes
 * readable (their value does not matter: padded weights are 0). Both run the backend's kernel:
 * QUANT_GEMM_AMX runs oneDNN's INT8 matmul (u8 × s8 → s32 on AMX tiles, TDPBUSD: exact s32 sums)
 * on B->amx with one primitive per (M, N, K, lda) built on first use and reused, then subtracts
 * comp and dequantizes itself exactly as the VNNI kernel does (the same float operations, so both
 * give bit-identical s32 and f32 results; the f32 variant works in blocks of 64 rows). The VNNI
 * kernel runs instead for M < 4 (faster there: generation's single rows), where oneDNN offers no
 * AMX kernel for a shape, and where B->amx is NULL. Products below 2^25 multiply-adds run on one
 * thread, as the VNNI kernel's do.
 * Every other backend runs the VNNI kernel (the caller has checked quant_have_vnni()). */
/* C (M,N) s32 = Σ_k a·b. */
void quant_gemm_u8s8_packed_s32(int M, const uint8_t *A, int lda, const struct quant_packed *B, int32_t *C,
				int ldc);
/* Fused dequantization: Y (M,N) f32 = (Σ_k a·b) · ascale[m] · bscale[n] + bias[n] (bias may be
 * NULL); ascale has M entries (pass a per-tensor scale repeated, or use quant_gemm_*_f32 with
 * ascale_stride 0). */
void quant_gemm_u8s8_packed_f32(int M, const uint8_t *A, int lda, const struct quant_packed *B,
				const float *ascale, int ascale_stride, const float *bscale, const float *bias,
				float *Y, int ldy);

/* The implementation quant_gemm_u8s8_packed_* runs for M rows of B under the current backend:
 * oneDNN's name for it ("brg:avx512_core_amx_int8") when the AMX matmul runs, else
 * "ascent:avx512_vnni" (our kernel). Builds the primitive when it is not cached yet. Thread-local
 * buffer: valid until the next call on the thread. */
const char *quant_gemm_packed_impl(int M, const struct quant_packed *B);

/* Which INT8 GEMM the model's forward uses. Default: QUANT_GEMM_AMX where quant_have_amx()
 * (oneDNN's AMX-INT8 matmul, 2.5-4x the VNNI kernel's GOP/s on the model's shapes at 1 thread,
 * bench/bench_quant.c), else QUANT_GEMM_VNNI where the CPU has AVX512-VNNI and oneDNN is allowed
 * to use it (ONEDNN_MAX_CPU_ISA caps ours too, so tests can run the other path on any machine;
 * measured faster than oneDNN's VNNI GEMM, bench/bench_quant.c), else QUANT_GEMM_F32.
 * QUANT_GEMM_ONEDNN (dnnl_gemm_s8s8s32) is only chosen by hand: without VNNI oneDNN adds pairs of
 * u8·s8 products in 16 bits (VPMADDUBSW) and saturates — its header warns of it, and measured
 * with ONEDNN_MAX_CPU_ISA=AVX512_CORE it is off at M=1 N=64 K=256 and a whole layer's output is
 * off by 2% — so quant_gemm_onednn_exact() says whether its results can be trusted here. */
enum quant_gemm_backend { QUANT_GEMM_VNNI, QUANT_GEMM_ONEDNN, QUANT_GEMM_F32, QUANT_GEMM_AMX };
/* Setting AMX without quant_have_amx() sets VNNI; VNNI without quant_have_vnni() sets F32. */
void quant_gemm_set_backend(enum quant_gemm_backend b);
enum quant_gemm_backend quant_gemm_get_backend(void);
const char *quant_gemm_backend_name(enum quant_gemm_backend b);   /* "vnni", "onednn", "f32", "amx" */
int quant_have_vnni(void);
/* The CPU has AMX and oneDNN dispatches for it in this process (nn_dnnl_isa() is
 * "avx512_core_amx": ONEDNN_MAX_CPU_ISA=AVX512_CORE_VNNI or lower turns it off), with VNNI. */
int quant_have_amx(void);
/* Whether oneDNN's INT8 GEMM is exact on this process's ISA (VNNI or AMX: no 16-bit intermediate). */
int quant_gemm_onednn_exact(void);
/* Without VNNI: the s8 codes as floats through nn_gemm (fp32), K in chunks of 1024, each exact
 * (every product and partial sum an integer below 2^24), added in s32: as exact as the reference,
 * at the speed of the fp32 GEMM. C (M,N) = A (M,K) · B (N,K)ᵀ. ASCENT_ENOMEM only. */
int quant_gemm_s8s8s32_f32(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
			    int ldc);
/* oneDNN dnnl_gemm_s8s8s32 with ao = bo = 0, 'F' offset 0: C = A · Bᵀ. ASCENT_EINTERNAL if oneDNN
 * refuses the arguments. Not exact where quant_gemm_onednn_exact() is 0. */
int quant_gemm_s8s8s32_onednn(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb,
			      int32_t *C, int ldc);
/* oneDNN dnnl_gemm_u8s8s32 with A = a + 128 as u8 and ao = 128 (the library undoes the shift). */
int quant_gemm_u8s8s32_onednn(int M, int N, int K, const uint8_t *A, int lda, const int8_t *B, int ldb,
			      int32_t *C, int ldc);
/* The convenience path of the tests: s8 A and B, packs B and runs quant_gemm_u8s8_packed_s32
 * (allocates); the fp32 path where the VNNI one is not used. */
int quant_gemm_s8s8s32(int M, int N, int K, const int8_t *A, int lda, const int8_t *B, int ldb, int32_t *C,
		       int ldc);

/* ------------------------------------------------------------------------------------------ */
/* The quantized model (model.c, forward.c) */

enum quant_scheme { QUANT_W8, QUANT_W8A8_DYNAMIC, QUANT_W8A8_STATIC, QUANT_NSCHEMES };
const char *quant_scheme_name(enum quant_scheme s);   /* "w8", "w8a8-dynamic", "w8a8-static" */
int quant_scheme_parse(const char *s, enum quant_scheme *out);

/* How the linear layers run: fp32 weights, fake-quant (quantize-dequantize in fp32, fp32 GEMM), or
 * real INT8 (int8 × int8 → int32 GEMM with a fused dequantize). Layers marked not quantized run
 * fp32 in every mode. */
enum quant_exec { QUANT_EXEC_FP32, QUANT_EXEC_FAKE, QUANT_EXEC_INT8 };

#define QUANT_LIN_PER_LAYER 4
enum quant_lin_kind { QUANT_C_ATTN, QUANT_ATTN_PROJ, QUANT_C_FC, QUANT_MLP_PROJ };

struct quant_layer {
	char name[48];               /* "h.3.mlp.c_fc" (HF module name) */
	int layer, kind;             /* block index, enum quant_lin_kind */
	int in, out;
	enum nn_param_id wid, bid;   /* its weight and bias in nn_gpt */
	int quantized;               /* 1: INT8 (or fake-quant); 0: kept fp32 */
	int8_t *wq;                  /* (out,in) codes, owned */
	float *wscale;               /* (out), owned */
	float *wdeq;                 /* (in,out) dequantized weights, owned (the fake-quant weights) */
	float in_scale;              /* static activation scale (scheme w8a8-static), else 0 */
	struct quant_packed pk;      /* wq packed for the VNNI kernel */
};

struct quant_buf;                    /* forward scratch: private */

struct quant_model {
	struct nn_gpt fp;            /* fp32 parameters: embeddings, norms, biases, the LM head; the linear
				      * weights are the fp32 weights the codes were made from */
	enum quant_scheme scheme;
	int per_tensor;              /* weights quantized per tensor (else per channel) */
	int nlin;                    /* 4·L */
	struct quant_layer *lin;     /* nlin, in block order: c_attn, attn.c_proj, c_fc, mlp.c_proj */
	struct quant_buf *buf;       /* grown on demand */
	float loss;                  /* mean loss of the last forward with targets, else -1 */
};

/* Take over `fp` and describe its linear layers; nothing is quantized yet. Ownership: `fp` is
 * always taken — the caller's struct is zeroed whether this succeeds or fails. On success the model
 * lives in qm->fp until quant_model_release(qm); on failure it has already been released, so the
 * caller frees neither fp nor qm. */
int quant_model_init(struct quant_model *qm, struct nn_gpt *fp, enum quant_scheme scheme, int per_tensor);
void quant_model_release(struct quant_model *qm);
/* Quantize the weights of every layer with quantized == 1 (codes, scales, dequantized copy, packed);
 * the static input scales are set separately (quant_layer.in_scale). */
int quant_model_quantize_weights(struct quant_model *qm);
/* Quantize (or requantize) one layer's weights from fp's current fp32 weights. */
int quant_layer_quantize(struct quant_model *qm, int li);

/* Hooks called during a forward, for calibration and sensitivity. x is the layer's input (N,K)
 * as the fp32 (or fake-quant) model computes it, y its output (N,OC). Either may be NULL. */
struct quant_hooks {
	void (*on_linear)(void *ctx, int li, const float *x, const float *y, int N, int K, int OC);
	void *ctx;
};

/* Forward over inputs (B,T) with exec mode `ex`; targets may be NULL. OUT: qm->loss. */
int quant_model_forward(struct quant_model *qm, enum quant_exec ex, const int *inputs, const int *targets, int B,
			int T, const struct quant_hooks *hooks);
/* Logits (B,T,V) of the last forward; valid until the next. */
const float *quant_model_logits(const struct quant_model *qm);
/* One linear layer alone: out (N,OC) from x (N,IC) in mode `ex` (the scheme's activation handling).
 * Uses qm's scratch; x and out must not be qm's internal buffers. */
int quant_layer_forward(struct quant_model *qm, int li, enum quant_exec ex, const float *x, float *out, int N);

/* SmoothQuant (smooth.c): for c_attn and c_fc of every block, s_j = max|X_j|^α / max|W_j|^(1−α)
 * (clamped to [1e-5, 1e5]; 1 where either max is 0), X·diag(s)⁻¹ folded into the preceding
 * LayerNorm (γ/s, β/s) and W[j,:] ← s_j·W[j,:]. act_amax holds per layer 2 vectors of C:
 * [l][0] for ln_1's output, [l][1] for ln_2's. Changes qm->fp in place. */
int quant_smooth_apply(struct quant_model *qm, const float *act_amax /* (L,2,C) */, double alpha);

/* ------------------------------------------------------------------------------------------ */
/* Quantized checkpoints (io.c)
 *
 * OUTDIR/model.safetensors: for each quantized linear "h.{i}.<module>.weight" I8 (out,in) and
 * "….weight_scale" F32 (out,1), plus "….input_scale" F32 (1) for w8a8-static; the layers in the
 * ignore list keep their F32 (in,out) Conv1D weight; every other tensor F32 as the trainer writes
 * it. OUTDIR/config.json: GPT2Config keys plus quantization_config (compressed-tensors,
 * format "int-quantized", config_groups.group_0 {targets, weights, input_activations}, ignore,
 * and an "ascent" object: scheme, method, smooth_alpha, source checkpoint, weight layout). */

struct quant_save_info {
	const char *method;          /* calibrator of the static scales, or NULL */
	double smooth_alpha;         /* < 0: none */
	const char *source;          /* the fp32 checkpoint it came from */
	const char *producer;        /* "ptq" | "qat" */
};
/* config.json's quantization_config.ascent.source is the source's absolute path, and
 * source_from_here the same path relative to OUTDIR (both when it resolves). */
int quant_save(const char *outdir, const struct quant_model *qm, const struct quant_save_info *info);
/* The largest |weight| or |activation| a stored scale may stand for (scale <= QUANT_MAX_AMAX/127):
 * far above any trained model's, and low enough that the forward's float sums cannot overflow. */
#define QUANT_MAX_AMAX 1e6
/* 1 when DIR/config.json carries a compressed-tensors quantization_config written by ascent. */
int quant_is_quantized_ckpt(const char *dir);
/* Load a quantized checkpoint: codes and scales as stored, fp holding the dequantized weights of
 * the quantized layers (so fp's fp32 forward is exactly the weight fake-quant model). Refuses
 * (ASCENT_EINPUT, naming the key or tensor) a file that is not an ascent quantized checkpoint, a
 * missing tensor, a wrong shape/dtype, a NaN/Inf fp32 tensor, a scale outside (0,
 * QUANT_MAX_AMAX/127], and every quantization_config value ascent does not implement: num_bits other
 * than 8, type other than "int", symmetric false, a group_size, weights strategy other than
 * channel|tensor (tensor: one scale for all rows), input activations other than the scheme's
 * (w8: null; w8a8-dynamic: token, dynamic; w8a8-static: tensor, static), output activations, a KV
 * cache scheme, a weight_layout other than "out,in", an ignore entry that is no linear layer.
 * `source` (may be NULL, >= TRAINER path size) gets the recorded fp32 source checkpoint: its
 * absolute path while that holds a model, else the path recorded relative to `dir`. */
int quant_model_open(const char *dir, struct quant_model *qm /* OUT */, char *source, size_t n);
/* For `ascent eval` / `ascent generate`: a quantized checkpoint as a plain fp32 model whose linear
 * weights are the dequantized INT8 weights (activation quantization is not applied). The caller
 * nn_gpt_release()s it. */
int quant_load_dequantized(const char *dir, struct nn_gpt *m /* OUT */);

/* ------------------------------------------------------------------------------------------ */
/* Jobs (ptq.c, eval.c, qat.c) */

struct quant_ptq_opts {
	const char *ckpt;            /* fp32 checkpoint (or run) directory */
	const char *out;             /* OUTDIR */
	enum quant_scheme scheme;
	enum quant_method method;    /* static activation calibrator */
	double percentile;           /* for QUANT_PERCENTILE, default 99.99 */
	const char *calib;           /* calibration data; NULL: a slice of the checkpoint's TRAIN split */
	int calib_seqs;              /* sequences (default 16) */
	int seq;                     /* tokens per sequence; 0 = min(256, the trained seq or n_positions) */
	const char *skip;            /* comma-separated substrings of layer names kept fp32, or NULL */
	double budget;               /* allowed ΔPPL in percent on the sensitivity set; < 0: off */
	double smooth;               /* SmoothQuant α; < 0: off */
	int per_tensor;              /* per-tensor weights */
	int sens_seqs;               /* sequences of the sensitivity set (default 8); 0 = no ΔPPL column */
	int threads;
	int quiet;                   /* no table on stdout */
	const char *db;              /* profile database: the per-layer report goes into quant_layer; NULL: none */
	int force;                   /* --force: write into an OUTDIR that holds a checkpoint, profile or shard
				      * ptq did not make (never over its input: fs_output_check) */
};
void quant_ptq_defaults(struct quant_ptq_opts *o);
int quant_ptq_run(const struct quant_ptq_opts *o);

struct quant_eval_opts {
	const char *ckpt;            /* quantized checkpoint */
	const char *fp32;            /* fp32 checkpoint to compare with; NULL: the recorded source */
	const char *data;            /* NULL: the source checkpoint's validation split */
	int batch, seq, batches;     /* defaults 4, min(256, the source's trained seq or n_positions), 0 = all */
	int threads;
	int json;
};
int quant_eval_run(const struct quant_eval_opts *o);

/* What QAT minimizes. DISTILL (the default): the mean KL(fp32 teacher ‖ fake-quant student) on the
 * teacher's next-token distribution (the source checkpoint's own fp32 forward, quant_model_forward
 * in QUANT_EXEC_FP32, on every rank, temperature 1): the student can only recover quantization
 * error, never learn more than its teacher knows, so PTQ itself is its fair control. CE: the
 * cross-entropy of the training data's next tokens (which also keeps training the model; its
 * control is --fp32-control). */
enum quant_qat_loss { QUANT_QAT_DISTILL = 0, QUANT_QAT_CE = 1 };
/* "distill" | "ce"; ASCENT_EUSAGE naming the accepted values otherwise. */
int quant_qat_loss_parse(const char *s, enum quant_qat_loss *out /* OUT */);
const char *quant_qat_loss_name(enum quant_qat_loss l);

struct quant_qat_opts {
	struct quant_ptq_opts ptq;   /* the baseline and the static scales: scheme, method, calibration, skip …
				      * (smooth must be off) */
	int steps;                   /* default 100 */
	double lr;                   /* default 1e-5: linear warm-up (10 steps, or steps/10), cosine to lr/10 */
	int batch;                   /* GLOBAL sequences per step (split over the data-parallel ranks); default 4 */
	int64_t seed;                /* the trainer's batch sampling seed */
	int pp;                      /* pipeline stages under mpirun (0 or 1: none); the other ranks are DP */
	int tp;                      /* tensor parallelism: anything above 1 is refused (ASCENT_EUSAGE) */
	int fp32_control;            /* the same fine-tuning (trainer, data, seed, schedule) with nothing
				      * quantized, written as a plain fp32 checkpoint to OUTDIR: how much of
				      * QAT's gain is only more training (loss CE only: ASCENT_EUSAGE with
				      * distillation, whose fp32 student already equals its teacher) */
	enum quant_qat_loss loss;    /* default (0) QUANT_QAT_DISTILL */
};
/* `ascent quant qat` on every rank (it calls trainer_run_with, which starts MPI): PTQ into OUTDIR/ptq
 * (world rank 0), the trainer's fine-tuning from the fp32 weights with fake quantization into the run
 * directory OUTDIR/train (distilled from the fp32 source unless o->loss is CE), then (rank 0)
 * OUTDIR/model.safetensors, config.json, quant_report.json ("loss": "distill"|"ce", first_loss and
 * last_loss of that loss). */
int quant_qat_run(const struct quant_qat_opts *o);


/* Data of a checkpoint: its run's train/validation split (from trainer_state.safetensors's
 * configuration when present, else the default corpus with 5% validation). OUT: an owned
 * trainer_data (trainer_data_release()). */
int quant_ckpt_data(const char *ckpt_dir, struct trainer_data *d /* OUT */);

/* ------------------------------------------------------------------------------------------ */
/* `ascent eval` / `ascent generate` on a quantized checkpoint (infer.c). cli/cmd_eval.c and
 * cli/cmd_generate.c call these when quant_is_quantized_ckpt() (trainer/ may not call quant/).
 * Same options, defaults, data, output and sampling as trainer_eval_run / trainer_generate_run,
 * with the linear layers in real INT8 (QUANT_EXEC_INT8: W8A8 schemes quantize their inputs). */

/* The seq the fp32 source checkpoint was trained with (its trainer state), capped below
 * c->max_seq; c->max_seq when the source is NULL, "", missing or has no trainer state. */
int quant_trained_seq(const char *source, const struct nn_config *c);
/* trainer_eval_tokens for a quantized model in mode `ex`: batch b covers tokens b·B·T … (b+1)·B·T
 * (inputs) and the next tokens (targets); the loss is the mean of the per-batch mean losses.
 * `max_batches` 0 = every full batch. OUT: loss, tokens (may be NULL). ASCENT_EINPUT when not one
 * batch fits. */
int quant_eval_tokens(struct quant_model *qm, enum quant_exec ex, const uint16_t *tok, size_t n, int B, int T,
		      int max_batches, double *loss /* OUT */, int64_t *tokens /* OUT */);
/* `ascent eval --ckpt OUTDIR`: prints the text report or {"loss","ppl","tokens","batches","batch",
 * "seq","quantized","ckpt"} like trainer_eval_run. */
int quant_eval_ckpt_run(const struct trainer_eval_opts *o);
/* `ascent generate --ckpt OUTDIR`: the prompt, then o->tokens sampled bytes, on stdout. */
int quant_generate_ckpt_run(const struct trainer_generate_opts *o);

#endif
