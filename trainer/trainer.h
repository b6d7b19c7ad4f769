/* trainer/trainer.h — the public face of `trainer`: the configuration, data (text, llm.c shards,
 * the default corpus, the batch sampler), the learning-rate schedule, checkpoints in Hugging
 * Face's GPT-2 layout, the single-process training loop, and the eval / generate / tokenize jobs.
 *
 * A run on disk (`ascent train --out DIR`, default runs/<UTC yyyymmdd-hhmmss>):
 *
 *   DIR/config.json            the fully resolved configuration (every key of trainer_fields[]),
 *                              written before the first step; `--config DIR/config.json` reproduces it
 *   DIR/logs/rank-00000.log    the log: per-step lines (step, loss, lr, grad norm, tokens/s, ms/step)
 *   DIR/metrics.jsonl          one JSON object per step: step, loss, lr, grad_norm, tokens_per_s,
 *                              ms, and val_loss on the steps that evaluated
 *   DIR/summary.json           written (atomically) at the end: steps, final_train_loss,
 *                              final_val_loss (the whole validation split), tokens_per_s (median after the first step), mfu,
 *                              peak_gflops (its basis in peak_basis), model_gflops_per_s,
 *                              peak_rss_bytes, wall_s, and more
 *   DIR/ckpt/step-NNNNNN/      a checkpoint after NNNNNN steps (every --ckpt-every N, and at the end):
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
	int batch;                   /* sequences per micro-batch (per rank); 64 */
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
	/* evaluation and checkpoints */
	int eval_every;              /* 0 = only at the end */
	int eval_batches;            /* validation batches per evaluation (in order from the start) */
	int ckpt_every;              /* 0 = only at the end */
	char out[TRAINER_PATH_MAX];  /* "" = runs/<UTC timestamp> */
	char resume[TRAINER_PATH_MAX]; /* "" | latest | a run directory | a checkpoint directory */
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
/* Fill the unset model dimensions from the preset, seq and min_lr from their defaults, and check
 * every constraint between fields (seq <= max_seq, n_embd % n_head …). */
int trainer_config_finish(struct trainer_config *c);
/* The configuration as a JSON object (every field); caller cJSON_Delete()s. */
struct cJSON *trainer_config_to_json(const struct trainer_config *c);
int trainer_config_write(const char *path, const struct trainer_config *c);  /* atomic */
/* FNV-1a 64 over the fields marked `exact`, for checkpoints. */
uint64_t trainer_config_hash(const struct trainer_config *c);
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
	struct opt_spec specs[TRAINER_MAX_FIELDS + 3];
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

/* The sampler. A step's global batch is G = batch × grad_accum × world sequences, numbered
 * 0 … G−1; sequence i starts at a token offset that depends only on (seed, step, i), so a run
 * that resumes at step s draws exactly what an uninterrupted run draws, and any split of the
 * global batch into ranks and micro-batches reads the same sequences: rank r's micro-batch k
 * of step s holds sequences (k·world + r)·batch … +batch−1. Offsets are uniform in
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
 * tensor, a wrong shape or dtype is ASCENT_EINPUT naming the tensor and the file. Names may carry
 * the "transformer." prefix; lm_head.weight and attention-mask buffers are ignored. */
int trainer_model_load(const char *dir, struct nn_gpt *m);
/* Read DIR/config.json and DIR/model.safetensors into a new model (nn_gpt_init'ed here;
 * the caller nn_gpt_release()s it). */
int trainer_model_open(const char *dir, struct nn_gpt *m /* OUT */);

/* Trainer state beside the model. */
struct trainer_state {
	int64_t step;                 /* optimizer steps done */
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
 * configuration stored in the state (validated against the model). */
int trainer_ckpt_load(const char *dir, struct nn_gpt *m, float *adam_m, float *adam_v,
		      struct trainer_state *st /* OUT */);
/* Read only the state (configuration, step) of checkpoint `dir`. */
int trainer_ckpt_read_state(const char *dir, struct trainer_state *st /* OUT */);
/* Resolve `spec` to a checkpoint directory: a checkpoint directory itself; a run directory or its
 * ckpt/ folder (its newest step-*); "latest" (the newest checkpoint of run `out_hint` when it
 * is not empty, else of the newest run under runs/). */
int trainer_ckpt_find(const char *spec, const char *out_hint, char *dir /* OUT */, size_t n);

/* ------------------------------------------------------------------------------------------ */
/* Training (train.c, run.c) */

struct trainer {
	struct trainer_config cfg;       /* resolved */
	struct nn_config mc;
	struct nn_gpt model;
	float *opt_mem;                  /* AdamW m then v: 2 × n_params floats */
	float *adam_m, *adam_v;          /* into opt_mem */
	struct trainer_data data;
	struct trainer_sampler sampler;
	int *inputs, *targets;           /* (batch, seq) */
	size_t *offsets;                 /* batch */
	int64_t step;                    /* optimizer steps done */
};

/* Load the data, build the model with initial weights from the seed, zero the moments. Writes
 * no files. `cfg` must be resolved (trainer_config_finish). */
int trainer_init(struct trainer *t, const struct trainer_config *cfg);
void trainer_release(struct trainer *t);
/* Gradients of step t->step: zero them, then grad_accum micro-batches of forward+backward with
 * scale 1/grad_accum. OUT: the mean loss over the micro-batches. */
int trainer_compute_grads(struct trainer *t, double *loss /* OUT */);
/* Clip to cfg.clip by the global norm, one AdamW step at trainer_lr(step), step++.
 * OUT: the norm before clipping and the learning rate used. */
int trainer_apply_grads(struct trainer *t, double *grad_norm /* OUT */, double *lr /* OUT */);
/* Mean loss over `batches` validation batches read in order from the start (0 = all). */
int trainer_val_loss(struct trainer *t, int batches, double *loss /* OUT */);

/* Mean loss of `m` over tok[0..n) read in order: batch b covers tokens b·B·T … (b+1)·B·T (inputs)
 * and the next tokens (targets). `max_batches` 0 = every full batch. OUT: batches and tokens
 * evaluated. ASCENT_EINPUT when not even one batch fits. */
int trainer_eval_tokens(struct nn_gpt *m, const uint16_t *tok, size_t n, int B, int T, int max_batches,
			double *loss /* OUT */, int64_t *tokens /* OUT */);

/* The whole job of `ascent train`: the run directory, the log, the loop, checkpoints, the
 * summary. ASCENT_EFAIL when the loss is not finite. */
int trainer_run(const struct trainer_config *cfg);

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
int trainer_generate_run(const struct trainer_generate_opts *o);

/* Tokenize text inputs (files or directories, byte-level) into one llm.c shard. */
int trainer_tokenize_run(char *const *inputs, int ninputs, const char *out, int vocab_size);

#endif
