/* trainer/trainer.h — the public face of `trainer`: the configuration, data (text, llm.c shards,
 * the default corpus, the batch sampler), the learning-rate schedule, checkpoints in Hugging
 * Face's GPT-2 layout, the single-process training loop, and the eval / generate / tokenize jobs.
 *
 * A run on disk (`ascent train --out DIR`, default runs/<UTC yyyymmdd-hhmmss>):
 *
 *   DIR/config.json            the fully resolved configuration (every key of trainer_fields[]),
 *                              written before the first step; `--config DIR/config.json` reproduces it
 *   DIR/logs/rank-NNNNN.log    each rank's log: per-step lines (step, loss, lr, grad norm, tokens/s,
 *                              ms/step), its layout and memory; rank 0 also prints to the terminal
 *   DIR/metrics.jsonl          (rank 0) one JSON object per step: step, the GLOBAL mean loss, lr,
 *                              grad_norm (null on an fp16 overflow step), tokens_per_s, ms, with fp16
 *                              loss_scale and skipped, and val_loss on the steps that evaluated
 *   DIR/trace.db               with --profile: the ranks' rank-NNNNN.db merged by rank 0 at the end,
 *                              host facts in its meta table, the viewer's tables built
 *   DIR/flight/rank-NNNNN.json comm's flight-recorder dumps (timeout, signal)
 *   DIR/summary.json           written (atomically) at the end, also when the run failed after
 *                              its first step: status ("ok" | "failed"), error (the message),
 *                              last_checkpoint (the newest complete one, or null), steps, final_train_loss,
 *                              final_val_loss (over --eval-batches validation batches, final_val_batches),
 *                              tokens_per_s (median after the first step), mfu,
 *                              peak_gflops (its basis in peak_basis), model_gflops_per_s,
 *                              peak_rss_bytes, wall_s, and more
 *   DIR/ckpt/step-NNNNNN/      a checkpoint after NNNNNN steps (every --ckpt-every N, and at the end;
 *                              with --keep-ckpts N only the newest N stay, plus those holding a file
 *                              named `keep`, see trainer_ckpt_prune):
 *       model.safetensors      Hugging Face GPT2LMHeadModel names and shapes, F32 (wte.weight,
 *                              wpe.weight, h.{i}.ln_1.weight, h.{i}.attn.c_attn.weight (C,3C), …,
 *                              ln_f.bias); lm_head is tied to wte and not stored
 *       config.json            GPT2Config keys (n_embd, n_layer, n_head, n_positions, vocab_size, …)
 *       trainer_state.safetensors  AdamW moments adamw.m and adamw.v (n_params, in nn's block order);
 *                              metadata: step, rng_seed, sampler, data_sequences_drawn (the data
 *                              position), data size and fingerprint, the resolved trainer
 *                              configuration (JSON) and its hash. The sampler is stateless (a hash
 *                              of seed, step and index), so step and seed restore the data
 *                              position and the RNG exactly.
 *     A checkpoint is written into ckpt/.step-NNNNNN.tmp-PID and renamed into place when complete,
 *     so a crash never leaves a step-NNNNNN that loads but is wrong.
 *
 * Library functions return 0 or a negative ASCENT_E* code with the message in ascent_errmsg();
 * none exits. Bad options and bad values are ASCENT_EUSAGE, bad files ASCENT_EINPUT.
 */
#ifndef ASCENT_TRAINER_H
#define ASCENT_TRAINER_H

#include "common/common.h"
#include "nn/nn.h"

#include <stddef.h>
#include <stdint.h>

struct comm;       /* comm/comm.h */
struct comm_req;

/* ------------------------------------------------------------------------------------------ */
/* Configuration (config.c)
 *
 * Every setting is one row of trainer_fields[]: its JSON key, its option name, its type, range
 * and help. The same row drives `--config FILE.json`, the command-line options, the resolved
 * config.json and resume checks, so a new setting (the parallel ones — dp, tp, pp, zero, schedule,
 * microbatches, virtual_stages, precision, recompute, bucket_mb, profile — come later) is one
 * field in the struct and one row in the table. Precedence: defaults < the resumed checkpoint's
 * configuration < --config file < options. */

#define TRAINER_PATH_MAX 1024
#define TRAINER_MAX_STEPS 1000000000   /* --steps' upper bound; a trainer state past it is corrupt */

struct trainer_config {
	/* model: the preset fills the dimensions that are 0 (unset) */
	char preset[32];             /* tiny | small | gpt2-124m */
	int vocab_size, max_seq, n_layer, n_head, n_embd;
	/* data */
	char data[TRAINER_PATH_MAX];     /* file or directory; "" = the default corpus */
	char val_data[TRAINER_PATH_MAX]; /* "" = the last val_fraction of the data */
	double val_fraction;             /* 0.05 */
	/* optimisation */
	int steps;                   /* optimizer steps */
	int batch;                   /* GLOBAL sequences per accumulation round: split over the dp ranks
				      * and then into `microbatches` pipeline micro-batches (must divide
				      * evenly); a step reads batch × grad_accum sequences in every layout */
	int seq;                     /* T, tokens per sequence; 64 (0 = max_seq) */
	int grad_accum;              /* micro-batches per optimizer step */
	double lr;                   /* peak learning rate; 1.5e-3 */
	double min_lr;               /* end of the cosine; < 0 = lr / 10 */
	int warmup;                  /* linear warm-up steps */
	char lr_schedule[16];        /* cosine | constant (after warm-up) */
	double weight_decay, beta1, beta2, eps;
	double clip;                 /* global gradient-norm clip; 0 = off */
	int64_t seed;                /* weights and batches */
	/* machine */
	int threads;                 /* 0 = cores on the host ÷ ranks on the host */
	/* parallelism (under mpirun: dp·tp·pp must equal the world size). LAYOUT settings (dp, tp, pp,
	 * zero, schedule, microbatches, virtual_stages, bucket_mb) are never taken from a resumed
	 * checkpoint: a run may resume in any layout. */
	int dp;                      /* data-parallel ranks; 0 = world size ÷ (tp·pp) */
	int tp;                      /* tensor-parallel ranks (Megatron; divides n_head) */
	int pp;                      /* pipeline stages */
	int zero;                    /* 0 DDP | 1 optimizer state sharded | 2 + gradients reduce-scattered in backward */
	char schedule[16];           /* gpipe | 1f1b | interleaved */
	int microbatches;            /* pipeline micro-batches per accumulation round; 0 = pp */
	int virtual_stages;          /* model chunks per pipeline rank (interleaved: >= 2) */
	double bucket_mb;            /* DP gradient bucket size, MB (1e6 B) */
	char precision[8];           /* fp32 | bf16 | fp16 (GEMMs; fp32 master weights) */
	int recompute;               /* activation recomputation */
	double loss_scale;           /* fp16: initial dynamic loss scale */
	int loss_scale_window;       /* fp16: clean steps before the scale doubles */
	/* profiling (--profile): every rank writes RUN/rank-NNNNN.db, merged into RUN/trace.db */
	int profile;
	char profile_steps[128];     /* "skip=S,wait=W,warmup=U,active=A,repeat=R"; "" = every step */
	int profile_max_mb;          /* per-rank database budget; 0 = unlimited */
	int profile_stacks;          /* libunwind call stacks at range begin */
	int profile_sample;          /* SIGPROF sampler, Hz; 0 = off */
	/* evaluation and checkpoints */
	int eval_every;              /* 0 = only at the end */
	int eval_batches;            /* validation batches per evaluation (in order from the start) */
	int ckpt_every;              /* 0 = only at the end */
	int keep_ckpts;              /* after each checkpoint, delete all but the newest N step-NNNNNN (and
				      * those a user marked with a file named `keep` in the folder); 0 = keep all */
	char out[TRAINER_PATH_MAX];  /* "" = runs/<UTC timestamp> */
	char resume[TRAINER_PATH_MAX]; /* "" | latest | a run directory | a checkpoint directory */
	char init_from[TRAINER_PATH_MAX]; /* fine-tuning: "" | a checkpoint directory (model.safetensors +
				       * config.json) or a run directory (its newest checkpoint). The weights
				       * come from it, the model dimensions too (given ones must agree); the
				       * run starts at step 0 with fresh AdamW moments and its own data, seed
				       * and schedule. Ignored on resume (the resumed checkpoint has the
				       * weights); trainer_config_finish resolves it to the checkpoint dir. */
	/* not a setting (no field: never stored, never resumed) */
	int force;                   /* --force: an --out folder holding a checkpoint, profile or shard that
				      * is not this run's is written anyway (fs_output_check) */
};

enum trainer_field_type { TF_INT, TF_I64, TF_DOUBLE, TF_STRING, TF_BOOL };

struct trainer_field {
	const char *key;             /* JSON key, e.g. "grad_accum" */
	const char *option;          /* option name without "--", e.g. "grad-accum"; NULL: file only */
	enum trainer_field_type type;
	size_t offset, size;         /* into struct trainer_config */
	double min, max;             /* numbers: accepted range */
	int min_open;                /* 1: min itself is excluded */
	const char *choices;         /* strings: "a|b|c", or NULL */
	const char *metavar;
	const char *help;
	int exact;                   /* 1: changing it on resume changes the losses that follow */
};
extern const struct trainer_field trainer_fields[];
extern const int trainer_nfields;
const struct trainer_field *trainer_field_find(const char *key);

void trainer_config_defaults(struct trainer_config *c);
/* Set one field from text (an option value); `where` names its origin in messages, e.g.
 * "option '--steps' of 'ascent train'". ASCENT_EUSAGE naming the accepted values. */
int trainer_config_set(struct trainer_config *c, const struct trainer_field *f, const char *value,
		       const char *where);
/* Apply the keys of a JSON object; `seen` (trainer_nfields entries, may be NULL) marks the keys
 * found. An unknown key, a wrong type or an out-of-range value is ASCENT_EINPUT naming the key
 * and `path`. */
int trainer_config_apply_json(struct trainer_config *c, const struct cJSON *obj, const char *path,
			      unsigned char *seen);
int trainer_config_load_file(struct trainer_config *c, const char *path, unsigned char *seen);
/* Fill the unset model dimensions from the init_from checkpoint's config.json (when init_from is
 * set and resume is not: the checkpoint is read, init_from becomes its directory, and a dimension
 * already set that differs is ASCENT_EUSAGE) or else from the preset, seq and min_lr from their
 * defaults, and check every constraint between fields (seq <= max_seq, n_embd % n_head …). */
int trainer_config_finish(struct trainer_config *c);
/* The configuration as a JSON object (every field); caller cJSON_Delete()s. */
struct cJSON *trainer_config_to_json(const struct trainer_config *c);
int trainer_config_write(const char *path, const struct trainer_config *c);  /* atomic */
/* FNV-1a 64 over the fields marked `exact`, for checkpoints. */
/* `seen` (trainer_nfields entries, or NULL for all) limits it to the keys a stored configuration
 * has, so a checkpoint written before a setting existed still verifies. */
uint64_t trainer_config_hash(const struct trainer_config *c, const unsigned char *seen);
void trainer_config_model(const struct trainer_config *c, struct nn_config *out);

/* Command-line options of `ascent train`: one OPT_STR per field with an option name, plus
 * --config and --help. Parse argv with opt_parse(cmd, cli->specs, ...), then resolve.
 * The struct points into itself: initialise it in place and do not copy it. */
#define TRAINER_MAX_FIELDS 64
struct trainer_cli {
	const char *config_file;
	const char *value[TRAINER_MAX_FIELDS];  /* by field index; NULL when not given */
	int flag[TRAINER_MAX_FIELDS];            /* TF_BOOL fields */
	int help;
	int force;                               /* --force (trainer_config.force) */
	struct opt_spec specs[TRAINER_MAX_FIELDS + 4];
};
void trainer_cli_init(struct trainer_cli *cli);
/* defaults < resumed checkpoint < file < options; then trainer_config_finish. Resolves
 * `resume` to a checkpoint directory and `out` (the resumed run's directory when --out is not
 * given on resume, else a new runs/<UTC timestamp>). */
int trainer_config_resolve(struct trainer_config *out, const struct trainer_cli *cli, const char *cmd);

/* ------------------------------------------------------------------------------------------ */
/* Data (data.c, shard.c, sampler.c) */

#define TRAINER_DEFAULT_CORPUS "/usr/share/games/fortunes"
#define TRAINER_SHARD_MAGIC 20240520
#define TRAINER_SHARD_VERSION 1

struct trainer_tokens {
	uint16_t *tok;               /* owned */
	size_t n;
};
void trainer_tokens_release(struct trainer_tokens *t);   /* accepts NULL and released */

/* Load `path`: a text file (bytes are tokens), an llm.c shard (.bin, validated), or a directory
 * of them (every regular non-hidden file, recursively, in byte order of the path; symbolic links
 * are skipped). "" loads the default corpus. Tokens >= vocab_size are refused. */
int trainer_tokens_load(const char *path, int vocab_size, struct trainer_tokens *out /* OUT */);
/* The same, leaving out the file `skip` (NULL: none) where a directory walk finds it: a command's
 * own output inside its input folder (tokenize DIR -o DIR/x.bin), said in an info line. A path
 * that is neither a regular file nor a directory (a device such as /dev/zero, a FIFO, a socket) is
 * ASCENT_EINPUT; nothing is opened before that check. */
int trainer_tokens_load_skip(const char *path, int vocab_size, const char *skip, struct trainer_tokens *out /* OUT */);
/* The default corpus's files: the plain-text fortune files of TRAINER_DEFAULT_CORPUS (not the
 * .dat indexes nor the .u8 links), sorted by name. Caller frees each string and the array. */
int trainer_default_corpus_files(char ***files /* OUT */, int *n /* OUT */);

/* llm.c shards: 256 × int32 LE header (magic 20240520, version 1, token count), uint16 LE tokens.
 * A file is valid iff its size is 1024 + 2·count. */
int trainer_shard_write(const char *path, const uint16_t *tok, size_t n);   /* atomic */
int trainer_shard_read(const char *path, int vocab_size, struct trainer_tokens *out /* OUT */);
/* 1 when the first 4 bytes of `path` are the shard magic. */
int trainer_is_shard(const char *path);

/* The training data: train and validation token ranges. */
struct trainer_data {
	struct trainer_tokens all;       /* owned */
	struct trainer_tokens val_own;   /* owned when val_data was given */
	const uint16_t *train, *val;     /* into the above */
	size_t ntrain, nval;
	uint64_t fingerprint;            /* FNV-1a of the train tokens: resume checks it */
};
/* Load cfg->data (default corpus when ""), split off the last val_fraction as validation unless
 * cfg->val_data is set. Needs seq+1 training tokens and batch·seq+1 validation tokens. */
int trainer_data_open(struct trainer_data *d, const struct trainer_config *cfg);
void trainer_data_release(struct trainer_data *d);

/* The sampler. A step's global batch is G = batch × grad_accum sequences (config.batch is the
 * global batch of one accumulation round), numbered 0 … G−1; sequence i starts at a token offset
 * that depends only on (seed, step, i), so a run that resumes at step s draws exactly what an
 * uninterrupted run draws, and any split of the global batch into ranks and micro-batches reads
 * the same sequences. With `world` data-parallel ranks each holding b = batch/world sequences per
 * round, rank r's round k of step s holds sequences (k·world + r)·b … +b−1 (trainer_sampler_batch
 * with sampler.batch = b); a pipeline splits that further into micro-batches of b/M, micro-batch j
 * starting at (k·world + r)·b + j·b/M (trainer_sample_first). Offsets are uniform in
 * [0, ntokens − seq − 1], so inputs [o, o+seq) and targets [o+1, o+seq+1) are in range. */
struct trainer_sampler {
	uint64_t seed;
	size_t ntokens;
	int batch, seq;
};
size_t trainer_sample_offset(const struct trainer_sampler *s, int64_t step, int64_t index);
/* The `batch` offsets of rank `rank` of `world`, micro-batch `micro`, step `step`. */
void trainer_sampler_batch(const struct trainer_sampler *s, int64_t step, int micro, int rank, int world,
			   size_t *offsets /* OUT: batch entries */);
/* The index of the first sequence of pipeline micro-batch `mb` (of `nmb`, each of b/nmb
 * sequences) in accumulation round `round` of DP rank `rank` of `world`, b = s->batch. */
int64_t trainer_sample_first(const struct trainer_sampler *s, int round, int rank, int world, int mb, int nmb);
/* Fill inputs and targets (batch, seq) from the offsets. */
void trainer_fill_batch(const uint16_t *tok, const size_t *offsets, int batch, int seq, int *inputs /* OUT */,
			int *targets /* OUT */);

/* ------------------------------------------------------------------------------------------ */
/* Learning rate (schedule.c). `step` counts from 0. Warm-up: lr·(step+1)/warmup for
 * step < warmup; then cosine from lr to min_lr at step == steps−1 (constant: lr). */
double trainer_lr(const struct trainer_config *c, int64_t step);

/* ------------------------------------------------------------------------------------------ */
/* Checkpoints (checkpoint.c) */

/* Write `m`'s parameters as a Hugging Face GPT-2 model.safetensors at `path` (atomic). */
int trainer_model_save(const char *path, const struct nn_gpt *m);
/* Write GPT2Config's config.json for `c` at `path` (atomic). */
int trainer_hf_config_write(const char *path, const struct nn_config *c);
/* Read a checkpoint directory's config.json (GPT2Config) into `out`. */
int trainer_hf_config_read(const char *dir, struct nn_config *out /* OUT */);
/* Load DIR/model.safetensors into an initialised model of the same configuration. A missing
 * tensor, a wrong shape or dtype, or a NaN/Inf value (st_check_finite) is ASCENT_EINPUT naming
 * the tensor and the file. Names may carry
 * the "transformer." prefix; lm_head.weight and attention-mask buffers are ignored. */
int trainer_model_load(const char *dir, struct nn_gpt *m);
/* Read DIR/config.json and DIR/model.safetensors into a new model (nn_gpt_init'ed here;
 * the caller nn_gpt_release()s it). */
int trainer_model_open(const char *dir, struct nn_gpt *m /* OUT */);

/* Trainer state beside the model. */
struct trainer_state {
	int64_t step;                 /* optimizer steps done */
	double loss_scale;            /* fp16 dynamic loss scale (metadata; 0 = not stored) */
	int scale_clean;              /* clean steps since its last change */
	int64_t skipped;              /* fp16 steps skipped so far */
	uint64_t data_fingerprint;
	uint64_t ntrain;
	uint64_t config_hash;
	struct trainer_config config; /* the configuration that wrote it */
};
/* Save a whole checkpoint as RUN/ckpt/step-NNNNNN (temporary directory, then rename).
 * adam_m and adam_v hold m->n_params floats each. `dir_out` (may be NULL) gets the path. */
int trainer_ckpt_save(const char *run_dir, const struct nn_gpt *m, const float *adam_m, const float *adam_v,
		      const struct trainer_state *st, char *dir_out, size_t n);
/* Load the model, the moments and the state of checkpoint `dir` into an initialised model of the
 * configuration stored in the state (validated against the model). A corrupt state is
 * ASCENT_EINPUT naming what is wrong: a step that is not a count in [0, TRAINER_MAX_STEPS], NaN or
 * Inf moments, a negative second moment adamw.v. */
int trainer_ckpt_load(const char *dir, struct nn_gpt *m, float *adam_m, float *adam_v,
		      struct trainer_state *st /* OUT */);
/* Read only the state (configuration, step) of checkpoint `dir`. */
int trainer_ckpt_read_state(const char *dir, struct trainer_state *st /* OUT */);
/* Resolve `spec` to a checkpoint directory: a checkpoint directory itself; a run directory or its
 * ckpt/ folder (its newest step-*); "latest" (the newest checkpoint of run `out_hint` when it
 * is not empty, else of the newest run under runs/). */
int trainer_ckpt_find(const char *spec, const char *out_hint, char *dir /* OUT */, size_t n);
/* Where a command reads a model (eval, generate, quant ptq/qat/eval, --init-from): `spec` itself
 * when it holds model.safetensors (any checkpoint, fp32 or quantized, with or without trainer
 * state), else a run directory's (or its ckpt/ folder's) newest complete checkpoint. ASCENT_EINPUT
 * naming `spec` when there is none. */
int trainer_ckpt_resolve(const char *spec, char *dir /* OUT */, size_t n);
/* --keep-ckpts: keep the `keep` newest complete checkpoints of RUN/ckpt (by step; `current`, the one
 * just written, counts as the newest and is never removed; may be NULL) and every checkpoint whose
 * folder holds a file named `keep` (a user marks one with `touch RUN/ckpt/step-NNNNNN/keep`);
 * remove the other complete ones. Folders without a trainer state (a save in progress) and
 * anything not named step-NNNNNN are left alone. keep <= 0: nothing is removed. OUT: removed. */
int trainer_ckpt_prune(const char *run_dir, int keep, const char *current, int *removed /* OUT */);

/* ------------------------------------------------------------------------------------------ */
/* Pipeline schedules (pipeline.c): pure functions, no MPI, so they are unit-tested and the
 * simulator checks their bubble against theory.
 *
 * P pipeline ranks ("stages"), M micro-batches per accumulation round, V model chunks per rank.
 * The model's layers are cut into P·V chunks of consecutive layers; global chunk c = v·P + s lives
 * on stage s as its virtual stage v; chunk 0 has the embedding, chunk P·V−1 the head. Activations
 * go from chunk c to c+1 (stage s → s+1, and P−1 → 0 between virtual stages), gradients back.
 *   gpipe        all M forwards, then all M backwards (M activation slots in flight).
 *   1f1b         P−s−1 warm-up forwards, then one forward + one backward, then the cool-down
 *                backwards (at most P−s slots in flight).
 *   interleaved  Megatron-LM's interleaved 1F1B over V chunks: M·V forwards and backwards; the
 *                k-th forward runs chunk (k mod P·V)/P on micro-batch (k/(P·V))·P + k mod P (the
 *                backward the chunk V−1−that); warm-up 2(P−s−1) + (V−1)P; M must be a multiple of P.
 * Backwards of one chunk always come in increasing micro-batch order, so micro-batch M−1's is the
 * last (the trainer launches the DP gradient buckets of a chunk there). */

enum trainer_pp_kind { TRAINER_PP_GPIPE = 0, TRAINER_PP_1F1B = 1, TRAINER_PP_INTERLEAVED = 2 };
/* "gpipe", "1f1b", "interleaved"; ASCENT_EUSAGE naming the choices otherwise. */
int trainer_pp_parse(const char *name, enum trainer_pp_kind *out /* OUT */);
const char *trainer_pp_name(enum trainer_pp_kind k);

struct trainer_pp_action {
	int backward;   /* 0 forward, 1 backward */
	int vchunk;     /* virtual stage on this rank, 0 … V−1 (global chunk vchunk·P + stage) */
	int mb;         /* micro-batch, 0 … M−1 */
	int slot;       /* the chunk's activation slot: the lowest free one at the forward, freed by
			 * the backward of the same micro-batch */
};
/* Check (P, M, V) for schedule k: ASCENT_EUSAGE with the reason (interleaved needs V >= 2 and M a
 * multiple of P; gpipe and 1f1b need V == 1). */
int trainer_pp_check(enum trainer_pp_kind k, int P, int M, int V);
/* The ordered actions of stage `stage` (2·M·V entries into out). OUT *nslots: the most slots any
 * chunk of this stage holds at once. */
int trainer_pp_schedule(enum trainer_pp_kind k, int P, int stage, int M, int V, struct trainer_pp_action *out,
			int *nslots /* OUT */);
/* Run every stage's action list in order on an ideal machine: a chunk's forward takes tf/V, its
 * backward tb/V, transfers take no time, an action starts when its stage is free and its input
 * has arrived. OUT: the makespan and the bubble, the mean over stages of idle time ÷ makespan.
 * ASCENT_EINTERNAL if the lists deadlock (the trainer would hang). */
int trainer_pp_simulate(enum trainer_pp_kind k, int P, int M, int V, double tf, double tb, double *makespan /* OUT */,
			double *bubble /* OUT */);
/* The textbook bubble share of the step: (P−1)/(M+P−1) for gpipe and 1f1b,
 * ((P−1)/V)/(M+(P−1)/V) for interleaved. */
double trainer_pp_bubble_theory(enum trainer_pp_kind k, int P, int M, int V);

/* ------------------------------------------------------------------------------------------ */
/* fp16 dynamic loss scaling (PyTorch GradScaler's rule): on inf/NaN gradients skip the step and
 * halve the scale (not below 1); after `window` clean steps in a row double it (not above 2^24). */
struct trainer_scaler {
	double scale;
	int window;
	int clean;        /* clean steps since the last change */
	int64_t skipped;  /* steps skipped so far */
};
/* Update after a step whose gradients were `finite`; returns 1 when the step must be skipped. */
int trainer_scaler_update(struct trainer_scaler *s, int finite);

/* ------------------------------------------------------------------------------------------ */
/* Training (train.c, dist.c, pipe_run.c, ckpt_dist.c, run.c)
 *
 * One object per process. In one process (comm NULL, or a world of one) it holds the whole model.
 * Under MPI, the world is a dp × tp × pp grid (comm/comm.h: TP innermost, then DP, then PP); this
 * rank holds, for each of its V virtual stages, the TP slice (nn "Model shards") of its chunk's
 * layers. A step:
 *   1. every accumulation round k (grad_accum of them) runs the pipeline schedule over M
 *      micro-batches of batch/(dp·M) sequences (the sampler's slice of this DP rank), forward and
 *      backward with the loss scaled by 1/(grad_accum·M) (× the fp16 loss scale); activations and
 *      gradients travel by non-blocking sends and blocking receives (which never deadlock: sends
 *      do not wait, and each receive waits for an action the schedule puts earlier);
 *   2. DP: during the backward of the last micro-batch of the last round, nn calls back as each
 *      layer's gradients become final; the trainer launches every bucket (≈ bucket_mb of one
 *      tensor's consecutive layers, in reverse layer order as DDP does) that is complete as a
 *      non-blocking allreduce (zero 0), and drives MPI progress with comm_test at each callback,
 *      so communication overlaps the rest of the backward; zero 1 reduce-scatters after the
 *      backward; zero 2 reduce-scatters each block's gradients of EVERY micro-batch right after
 *      that block's backward, out of a two-buffer gradient window, into this rank's shard (see
 *      trainer/internal.h), so the whole gradient is never held; the tied embedding's two copies
 *      (first and last pipeline chunk) are summed between the two stages before their DP reduction;
 *   3. the global gradient norm (each element counted once: replicated TP tensors on TP rank 0,
 *      the tied copy once, DP-replicated gradients on DP rank 0), fp16 overflow check and
 *      skipping, clipping, AdamW on what this rank owns (all of its gradients, or its ZeRO shard
 *      of each bucket), then (zero ≥ 1) an allgather of the updated parameters in each bucket. */

#define TRAINER_MAX_VSTAGES 16

/* Distillation (trainer_set_soft_targets): the soft targets of one micro-batch. Called on every rank
 * that holds the head chunk, once per micro-batch just before the head's forward, with that
 * micro-batch's input token ids (B,T) (the same ids the first chunk embeds); writes the teacher's
 * next-token probabilities (B,T,V) (rows >= 0 summing to 1) into probs. Nonzero return: the step
 * fails with that code (the message set through ascent_error). */
typedef int (*trainer_soft_targets_fn)(void *arg, const int *inputs, int B, int T, float *probs /* OUT */);

struct trainer_bucket;   /* private to dist.c */
struct trainer_gwin;     /* private to dist.c */

struct trainer {
	struct trainer_config cfg;       /* resolved */
	struct nn_config mc;
	/* layout */
	struct comm *comm;               /* borrowed; NULL = one process, no collectives */
	int world, rank;                 /* world size and rank */
	int dp, tp, pp, vstages;         /* the grid and V */
	int dp_rank, tp_rank, pp_rank;
	int micro;                       /* M, pipeline micro-batches per accumulation round */
	int mb_batch;                    /* sequences per micro-batch: batch / (dp·M) */
	enum trainer_pp_kind sched;
	struct trainer_pp_action *actions;   /* this stage's schedule, nactions = 2·M·V */
	int nactions, nslots;
	/* the model: chunk[v] is virtual stage v (global chunk v·pp + pp_rank); chunk[0] == &model */
	struct nn_gpt model;
	struct nn_gpt *chunk[TRAINER_MAX_VSTAGES];
	enum nn_precision precision;
	/* optimizer state: AdamW m then v, n_opt floats each. Without ZeRO: every chunk's n_params in
	 * chunk order (one chunk: nn's block order, as trainer_ckpt_save expects); with ZeRO: this DP
	 * rank's shard of each bucket. */
	float *opt_mem;
	float *adam_m, *adam_v;          /* into opt_mem */
	size_t n_opt;
	/* gradient buckets (dist.c) */
	struct trainer_bucket *buckets;
	int nbuckets;
	int armed;                       /* the backward running now is the last of its chunk */
	struct trainer_gwin *gwin;       /* ZeRO-2 gradient window (dist.c); NULL otherwise */
	/* pipeline buffers (pipe_run.c) */
	float *act_buf, *dact_buf;       /* receive buffers, (mb_batch, seq, C) */
	float *send_buf;                 /* nsend × (mb_batch·seq·C): gradients to the previous stage */
	struct comm_req **send_req;      /* nsend requests for send_buf, then V·nslots for activations */
	int nsend;
	/* fp16 loss scaling */
	struct trainer_scaler scaler;
	int last_skipped;                /* the last trainer_apply_grads skipped its update */
	/* data */
	struct trainer_data data;
	struct trainer_sampler sampler;  /* batch = batch/dp (one DP rank's round) */
	int *inputs, *targets;           /* (mb_batch, seq) */
	size_t *offsets;                 /* mb_batch */
	/* distillation (trainer_set_soft_targets); soft_fn NULL: the integer targets */
	trainer_soft_targets_fn soft_fn;
	void *soft_arg;
	float *soft;                     /* (mb_batch, seq, V) where a chunk has the head, else NULL */
	int64_t step;                    /* optimizer steps done */
	/* optional: called after each validation batch of trainer_val_loss (done of total) */
	void (*val_progress)(void *arg, int64_t done, int64_t total);
	void *val_progress_arg;
};

/* Load the data, build this rank's chunks with the initial weights of the seed (each its slice of
 * the same whole model), the optimizer state and the buckets. `comm` may be NULL (one process);
 * otherwise the grid is set here (comm_set_grid) from cfg's dp/tp/pp — dp·tp·pp must equal the
 * world size (ASCENT_EUSAGE otherwise, naming the numbers). Writes no files. `cfg` must be
 * resolved (trainer_config_finish). Collective: every rank calls it. */
int trainer_init_dist(struct trainer *t, const struct trainer_config *cfg, struct comm *comm);
/* trainer_init_dist without MPI (one process). */
int trainer_init(struct trainer *t, const struct trainer_config *cfg);
void trainer_release(struct trainer *t);
/* Gradients of step t->step (steps 1 and 2 above). OUT: the GLOBAL mean loss over the step's
 * batch × grad_accum sequences, the same on every rank. Collective. */
int trainer_compute_grads(struct trainer *t, double *loss /* OUT */);
/* Step 3 above: norm, (fp16) overflow check and skip, clip to cfg.clip, AdamW at
 * trainer_lr(step), step++. OUT: the global norm before clipping (unscaled) and the learning rate.
 * A non-finite norm in fp32/bf16 is ASCENT_EFAIL (diverged). Collective. */
int trainer_apply_grads(struct trainer *t, double *grad_norm /* OUT */, double *lr /* OUT */);
/* Mean loss over `batches` validation batches (batch × seq tokens each) read in order from the
 * start (0 = all), the same on every rank: each batch is cut into micro-batches that the DP ranks
 * share and that run through the pipeline forward only. Collective. */
int trainer_val_loss(struct trainer *t, int batches, double *loss /* OUT */);
/* Bytes this rank holds per memory category for the model (DB_MEM_PARAM, DB_MEM_GRAD,
 * DB_MEM_OPTIMIZER, DB_MEM_COMM), for logs and tests. */
void trainer_mem_bytes(const struct trainer *t, int64_t *param, int64_t *grad, int64_t *opt, int64_t *comm_buf);

/* Checkpoints of a distributed run (ckpt_dist.c), in the canonical unsharded layout above:
 * every rank contributes its slices (nn_shard_to_full; ZeRO shards of the moments too) to a sum
 * on world rank 0, which writes RUN/ckpt/step-NNNNNN with trainer_ckpt_save. Collective.
 * `dir_out` (may be NULL) gets the path on rank 0. */
int trainer_ckpt_save_dist(struct trainer *t, const char *run_dir, const struct trainer_state *st, char *dir_out,
			   size_t n);
/* Every rank reads checkpoint `dir` (any layout wrote it) and keeps its own slices. Collective. */
int trainer_ckpt_load_dist(struct trainer *t, const char *dir, struct trainer_state *st /* OUT */);
/* Fine-tuning: every rank reads only the weights of `dir` (DIR/model.safetensors of the same model
 * configuration, any layout or Hugging Face wrote it) and keeps its own slices; the optimizer state
 * and the step are untouched. Collective. */
int trainer_load_weights_dist(struct trainer *t, const char *dir);
/* Fake quantization (nn_gpt_set_fake_quant) on every chunk of this rank, or off (fq NULL); the
 * data-parallel reduction, pipeline and checkpoints are unchanged (they see the fp32 master weights).
 * ASCENT_EUSAGE under tensor parallelism. */
int trainer_set_fake_quant(struct trainer *t, const struct nn_fake_quant *fq);
/* Distillation: train on soft targets from fn (see trainer_soft_targets_fn) instead of the data's
 * next tokens, in every layout (the head chunk's rank fills the micro-batch's inputs itself). The
 * training loss (metrics.jsonl "loss", the step line "kl loss", summary.json's final_train_loss with
 * train_loss_kind "kl") becomes the mean KL(teacher ‖ model) (nn_gpt_stage_forward_soft); the
 * validation loss stays the cross-entropy on the validation split. fn NULL turns it off. Errors: ASCENT_ENOMEM. */
int trainer_set_soft_targets(struct trainer *t, trainer_soft_targets_fn fn, void *arg);

/* Mean loss of `m` over tok[0..n) read in order: batch b covers tokens b·B·T … (b+1)·B·T (inputs)
 * and the next tokens (targets). `max_batches` 0 = every full batch. OUT: batches and tokens
 * evaluated. ASCENT_EINPUT when not even one batch fits. */
int trainer_eval_tokens(struct nn_gpt *m, const uint16_t *tok, size_t n, int B, int T, int max_batches,
			double *loss /* OUT */, int64_t *tokens /* OUT */);
/* The same reading order for any model: `batch_loss` computes the mean loss of one (B,T) batch
 * of inputs and targets (quant's INT8 forward uses it). */
typedef int (*trainer_batch_loss_fn)(void *arg, const int *inputs, const int *targets, int B, int T,
				     double *loss /* OUT */);
int trainer_eval_tokens_with(trainer_batch_loss_fn batch_loss, void *arg, const uint16_t *tok, size_t n, int B,
			     int T, int max_batches, double *loss /* OUT */, int64_t *tokens /* OUT */);

/* The whole job of `ascent train`, on every rank: comm_init (also without mpirun), the grid, the
 * run directory (rank 0 writes config.json, metrics.jsonl with the GLOBAL mean loss per step,
 * summary.json and checkpoints; every rank logs to RUN/logs/rank-NNNNN.log, rank 0 also to the
 * terminal), the loop, the profiler (cfg.profile: RUN/rank-NNNNN.db merged into RUN/trace.db by
 * rank 0), comm_finalize. ASCENT_EFAIL when the loss is not finite. */
int trainer_run(const struct trainer_config *cfg);
/* What trainer_run_with adds to that job (quant's QAT uses it; trainer must not know quant). */
struct trainer_hooks {
	/* Called on every rank once MPI, the run directory and the logs are ready, before the model is
	 * built, with *fq zeroed. Collective work through `comm` (the world; one rank without mpirun) is
	 * allowed: every rank calls it. Setting fq->lin turns fake quantization on for every chunk
	 * (trainer_set_fake_quant); fq->lin must stay valid until trainer_run_with returns. A nonzero
	 * return fails the run on every rank. NULL: not called. */
	int (*prepare)(void *arg, struct comm *comm, struct nn_fake_quant *fq /* OUT */);
	/* Distillation: when set, the run trains on these soft targets (trainer_set_soft_targets, with
	 * `arg`; called after prepare). NULL: the data's next tokens. */
	trainer_soft_targets_fn soft_targets;
	void *arg;
};
/* trainer_run with hooks (NULL: exactly trainer_run). The final checkpoint is RUN/ckpt/step-<steps>. */
int trainer_run_with(const struct trainer_config *cfg, const struct trainer_hooks *hooks);

/* ------------------------------------------------------------------------------------------ */
/* The other jobs (jobs.c) */

struct trainer_eval_opts {
	const char *ckpt;      /* checkpoint or run directory */
	const char *data;      /* NULL: the default corpus's validation split */
	int batch, seq;        /* batch 0 = 8; seq 0 = the trained seq (trainer state), else n_positions */
	int batches;           /* 0 = all */
	int threads;
	int json;              /* print {"loss":…, "ppl":…, "tokens":…} */
};
int trainer_eval_run(const struct trainer_eval_opts *o);
/* ASCENT_EUSAGE naming c->max_seq (n_positions) when a --seq of T tokens does not fit the model.
 * Call it before releasing the model that owns c. */
int trainer_check_seq(int T, const struct nn_config *c);

/* The context is a sliding window of the trained seq (n_positions without trainer state). */
struct trainer_generate_opts {
	const char *ckpt;
	const char *prompt;
	int tokens;            /* new tokens */
	double temperature;    /* 0 = greedy */
	int top_k;             /* 0 = all */
	int64_t seed;
	int threads;
};
/* The next token from logits (V): greedy at temperature 0; else softmax(logits/temperature) over
 * the top_k largest logits (all when 0), one rng_f32 draw. `probs` is V doubles of scratch. */
int trainer_sample_token(const float *logits, int V, double temperature, int top_k, uint64_t *rng, double *probs);
int trainer_generate_run(const struct trainer_generate_opts *o);
/* The sampling loop of `ascent generate` for any model: prints the prompt, then o->tokens sampled
 * bytes. `next_logits` runs the model on ctx (T tokens, the last maxT of the text so far) and sets
 * *logits to the V logits of the last position. */
typedef int (*trainer_next_logits_fn)(void *arg, const int *ctx, int T, const float **logits /* OUT */);
int trainer_generate_with(const struct trainer_generate_opts *o, int V, int maxT, trainer_next_logits_fn next_logits,
			  void *arg);

/* Tokenize text inputs (files or directories, byte-level) into one llm.c shard. An `out` that is
 * one of the inputs is refused, and (unless `force`) one that is a profile or checkpoint
 * (fs_output_check); `out` found inside an input directory is skipped (a second run reads what the
 * first read, not its own shard). */
int trainer_tokenize_run(char *const *inputs, int ninputs, const char *out, int vocab_size, int force);

#endif
