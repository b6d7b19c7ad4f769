/* quant/internal.h — private to quant/: the sequence sets of PTQ (calibration and sensitivity, cut
 * from the train split), the per-layer analysis (SQNR and single-layer ΔPPL) that ptq and qat both
 * report, and the --db writer of that report. Nothing outside quant/ includes this. */
#ifndef ASCENT_QUANT_INTERNAL_H
#define ASCENT_QUANT_INTERNAL_H

#include "quant/quant.h"

/* n sequences of T tokens: inputs and targets (n, T). */
struct quant_seqset {
	int n, T;
	int *inputs, *targets;       /* owned */
};
void quant_seqset_free(struct quant_seqset *s);
/* Slots 0 … 2·max(ncal, nsens)−1 evenly spaced over tok[0..n); calibration takes the even slots
 * (up to ncal), sensitivity the odd ones; each slot holds T+1 tokens, so the sets never overlap.
 * `what` names the data in the error when it is too short. */
int quant_make_sets(const uint16_t *tok, size_t n, int T, int ncal, int nsens, struct quant_seqset *cal /* OUT */,
		    struct quant_seqset *sens /* OUT */, const char *what);
/* The calibration and sensitivity sets of PTQ's options: --calib, else the train split of `dir`. */
int quant_ptq_sets(const struct quant_ptq_opts *o, const char *dir, int vocab, int T, struct quant_seqset *cal /* OUT */,
		   struct quant_seqset *sens /* OUT */);
/* The run configuration of checkpoint `ckpt_dir` (its trainer state), or, when it has none, the
 * defaults with the default corpus, 5 % validation and the checkpoint's vocabulary (a warning says
 * so when the state exists but cannot be read). quant_ckpt_data opens its data. */
int quant_ckpt_config(const char *ckpt_dir, struct trainer_config *out /* OUT */);

/* Mean loss over a set in batches of 4, mode `ex`, hooks optional. */
int quant_set_loss(struct quant_model *qm, enum quant_exec ex, const struct quant_seqset *s,
		   const struct quant_hooks *h, double *loss /* OUT */);

/* Per layer, on the layers with codes (wq != NULL): sqnr[i] = SQNR (dB) of the fake-quant output
 * against the fp32 output on the same (fp32-model) input over `cal`; dppl[i] (when sens->n > 0) =
 * ΔPPL % on `sens` with only layer i fake-quantized, against the fp32 model. Layers without codes
 * get NAN. `quantized` flags are restored. OUT *base: the fp32 loss on sens (0 when empty). */
int quant_analyze(struct quant_model *qm, const struct quant_seqset *cal, const struct quant_seqset *sens,
		  double *sqnr /* OUT nlin */, double *dppl /* OUT nlin */, double *base /* OUT */);

/* Append one quant_layer row per linear layer to the profile database `path` (created when it
 * does not exist): method = the calibrator (w8a8-static), "dynamic", "weight-only", or "fp32" for
 * a layer kept fp32; scale = the static input scale (w8a8-static) or the largest weight scale;
 * detail = {"producer","scheme","weights","quantized","delta_ppl_pct","weight_amax",
 * "input_scale","smooth_alpha","source","out"}. One transaction. */
int quant_db_write(const char *path, const struct quant_model *qm, const double *sqnr, const double *dppl,
		   const char *method, double smooth, const char *producer, const char *source, const char *out);

#endif
