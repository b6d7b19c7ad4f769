/* trainer/run.c — `ascent train` on every rank: MPI and the grid, the run directory, per-rank logs
 * and rank 0's live progress line, the loop (steps, evaluation, checkpoints, resume), rank 0's
 * metrics.jsonl and summary.json, and the profiler (per-rank databases merged into trace.db). */
#include "trainer/internal.h"

#include "comm/comm.h"
#include "db/db.h"
#include "profiler/prof.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fp32 FMA peak per core, GFLOP/s, on the build machine class (docs/background.md, "The build machine"): 64 flop/cycle at
 * ~3 GHz with AVX-512, half that with AVX2. Not measured here; summary.json says so. */
#define PEAK_AVX512_PER_CORE 195.0
#define PEAK_AVX2_PER_CORE 97.0
#define PEAK_SSE_PER_CORE 24.0

struct run_ui {
	int tty;             /* stderr is a terminal: live progress line instead of per-step lines */
	int line_shown;      /* a progress line is on screen */
};

static void ui_clear(struct run_ui *ui)
{
	if (ui->tty && ui->line_shown) {
		fputs("\r\033[K", stderr);
		ui->line_shown = 0;
	}
}

static void fmt_duration(double s, char *buf, size_t n)
{
	if (s < 0 || !isfinite(s))
		snprintf(buf, n, "?");
	else if (s < 60)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 3600)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, ((int)s % 3600) / 60);
}

/* Remove checkpoint directories that a killed save left behind (.step-*.tmp-*, .step-*.old-*). */
static void clean_partial_ckpts(const char *out)
{
	char ck[TRAINER_PATH_MAX + 16];
	snprintf(ck, sizeof ck, "%s/ckpt", out);
	DIR *d = opendir(ck);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, ".step-", 6))
			continue;
		char p[TRAINER_PATH_MAX * 2 + 32];
		snprintf(p, sizeof p, "%s/%s", ck, e->d_name);
		log_warn("removing '%s', left by an interrupted checkpoint save", p);
		fs_rm_rf(p);
	}
	closedir(d);
}

/* Keep only metrics.jsonl lines of steps <= `step` (a resume into the same run). */
static int truncate_metrics(const char *path, int64_t step)
{
	if (!fs_exists(path))
		return 0;
	char *buf;
	size_t len;
	int rc = fs_read_all(path, &buf, &len);
	if (rc)
		return rc;
	char *outb = malloc(len + 1);
	if (!outb) {
		free(buf);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	size_t on = 0;
	for (char *line = buf; line < buf + len;) {
		char *nl = memchr(line, '\n', (size_t)(buf + len - line));
		size_t ll = nl ? (size_t)(nl - line) + 1 : (size_t)(buf + len - line);
		cJSON *o = cJSON_ParseWithLength(line, ll);
		const cJSON *s = o ? cJSON_GetObjectItemCaseSensitive(o, "step") : NULL;
		if (cJSON_IsNumber(s) && s->valuedouble <= (double)step) {
			memcpy(outb + on, line, ll);
			on += ll;
		}
		cJSON_Delete(o);
		line += ll;
	}
	rc = atomic_write_file(path, outb, on);
	free(outb);
	free(buf);
	return rc;
}

/* Warn about every `exact` setting that differs from the checkpoint's. */
static void warn_changed(const struct trainer_config *was, const struct trainer_config *now)
{
	cJSON *a = trainer_config_to_json(was), *b = trainer_config_to_json(now);
	for (int i = 0; a && b && i < trainer_nfields; i++) {
		const struct trainer_field *f = &trainer_fields[i];
		if (!f->exact)
			continue;
		char *x = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(a, f->key));
		char *y = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(b, f->key));
		if (x && y && strcmp(x, y))
			log_warn("resuming with %s changed from %s to %s: later losses will differ from an uninterrupted run",
				 f->key, x, y);
		free(x);
		free(y);
	}
	cJSON_Delete(a);
	cJSON_Delete(b);
}

static double peak_gflops(int threads, const char **basis)
{
	struct cpu_info ci;
	cpu_detect(&ci);
	if (ci.avx512f) {
		*basis = "fp32 FMA peak, AVX-512: 195 GFLOP/s per core (64 flop/cycle at ~3 GHz, docs/background.md) x threads; "
			 "not measured";
		return PEAK_AVX512_PER_CORE * threads;
	}
	if (ci.avx2 && ci.fma) {
		*basis = "fp32 FMA peak, AVX2: 97 GFLOP/s per core x threads; not measured";
		return PEAK_AVX2_PER_CORE * threads;
	}
	*basis = "fp32 peak, SSE: 24 GFLOP/s per core x threads; not measured";
	return PEAK_SSE_PER_CORE * threads;
}

struct run_stats {
	double *tps, *ms;       /* per step of this process */
	int n;
	double last_loss, last_val;
	int64_t steps_done;
};

/* The job's shared state across ranks. */
struct run_ctx {
	struct comm *comm;
	int rank, world;
	const char *out;
	struct run_ui *ui;
	const char *resumed_from;
	int64_t t0;
	int profiling;
	char last_ckpt[TRAINER_PATH_MAX + 64];  /* the newest complete checkpoint of this run ("" none) */
	int64_t val_batches;                     /* batches of the last evaluation */
};

/* Every rank learns whether any rank failed; a rank that did not fail gets a message naming the
 * step. Returns the (possibly new) code. */
static int agree(struct run_ctx *x, int rc, const char *what)
{
	if (!x->comm || x->world == 1)
		return rc;
	int v = rc;
	int r = comm_allreduce(x->comm, COMM_WORLD, &v, &v, 1, COMM_I32, COMM_MIN);
	if (r)
		return rc ? rc : r;
	if (v && !rc)
		return ascent_error(v, "another rank failed %s (see the logs under %s/logs/)", what, x->out);
	return rc;
}

/* "loss 2.1234", or with distillation "kl loss 1.23456e-04" (the KL to the teacher is small). */
static void loss_text(const struct trainer *t, double loss, char *buf, size_t n)
{
	if (t->soft_fn)
		snprintf(buf, n, "kl loss %.5e", loss);
	else
		snprintf(buf, n, "loss %.4f", loss);
}

/* summary.json; `error` (NULL: the run succeeded) is the message of the failure that ended it. */
static int write_summary(struct run_ctx *x, const struct trainer *t, const struct run_stats *rs, double wall_s,
			 const char *error)
{
	const struct trainer_config *c = &t->cfg;
	int threads = nn_get_threads();
	const char *basis;
	double peak = peak_gflops(threads * x->world, &basis);
	/* the first step of a process warms caches and grows buffers: leave it out of the medians */
	int skip = rs->n > 1 ? 1 : 0;
	double *tmp = malloc(sizeof(double) * (size_t)(rs->n + 1));
	if (!tmp)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	memcpy(tmp, rs->tps + skip, sizeof(double) * (size_t)(rs->n - skip));
	double tps = stats_median(tmp, rs->n - skip);
	memcpy(tmp, rs->ms + skip, sizeof(double) * (size_t)(rs->n - skip));
	double ms = stats_median(tmp, rs->n - skip);
	free(tmp);
	double fpt = nn_flops_per_token(&t->mc, c->seq);
	double gflops = fpt * tps / 1e9;
	double mfu = peak > 0 ? gflops / peak : 0;
	int64_t rss = cpu_peak_rss_bytes();
	int64_t mp, mg, mo, mc;
	trainer_mem_bytes(t, &mp, &mg, &mo, &mc);

	cJSON *o = cJSON_CreateObject();
	if (!o)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	cJSON_AddStringToObject(o, "status", error ? "failed" : "ok");
	if (error)
		cJSON_AddStringToObject(o, "error", error);
	if (x->last_ckpt[0])
		cJSON_AddStringToObject(o, "last_checkpoint", x->last_ckpt);
	else
		cJSON_AddNullToObject(o, "last_checkpoint");
	cJSON_AddNumberToObject(o, "steps", (double)t->step);
	cJSON_AddNumberToObject(o, "steps_this_run", rs->n);
	cJSON_AddNumberToObject(o, "final_train_loss", rs->last_loss);
	if (t->soft_fn)
		cJSON_AddStringToObject(o, "train_loss_kind", "kl");   /* distillation: KL to the teacher */
	if (isfinite(rs->last_val)) {
		cJSON_AddNumberToObject(o, "final_val_loss", rs->last_val);
		cJSON_AddNumberToObject(o, "final_val_ppl", exp(rs->last_val));
	} else {                                     /* a run that failed before its evaluation */
		cJSON_AddNullToObject(o, "final_val_loss");
		cJSON_AddNullToObject(o, "final_val_ppl");
	}
	cJSON_AddNumberToObject(o, "final_val_batches", (double)x->val_batches);
	cJSON_AddNumberToObject(o, "tokens_per_s", tps);
	cJSON_AddNumberToObject(o, "ms_per_step", ms);
	cJSON_AddNumberToObject(o, "tokens_per_step", (double)c->batch * c->seq * c->grad_accum);
	cJSON_AddNumberToObject(o, "tokens_this_run", (double)rs->n * c->batch * c->seq * c->grad_accum);
	cJSON_AddNumberToObject(o, "mfu", mfu);
	cJSON_AddNumberToObject(o, "model_gflops_per_s", gflops);
	cJSON_AddNumberToObject(o, "peak_gflops", peak);
	cJSON_AddStringToObject(o, "peak_basis", basis);
	cJSON_AddStringToObject(o, "flops_formula", "6*N + 12*L*T*C per token, N without wpe (nanoGPT/PaLM)");
	cJSON_AddNumberToObject(o, "flops_per_token", fpt);
	cJSON_AddNumberToObject(o, "peak_rss_bytes", (double)rss);
	cJSON_AddNumberToObject(o, "wall_s", wall_s);
	cJSON_AddNumberToObject(o, "n_params", (double)nn_param_count(&t->mc));
	cJSON_AddNumberToObject(o, "threads", threads);
	cJSON_AddNumberToObject(o, "world_size", x->world);
	cJSON_AddNumberToObject(o, "dp", t->dp);
	cJSON_AddNumberToObject(o, "tp", t->tp);
	cJSON_AddNumberToObject(o, "pp", t->pp);
	cJSON_AddNumberToObject(o, "zero", c->zero);
	cJSON_AddStringToObject(o, "schedule", trainer_pp_name(t->sched));
	cJSON_AddNumberToObject(o, "microbatches", t->micro);
	cJSON_AddNumberToObject(o, "virtual_stages", t->vstages);
	cJSON_AddStringToObject(o, "precision", c->precision);
	cJSON_AddNumberToObject(o, "skipped_steps", (double)t->scaler.skipped);
	cJSON_AddNumberToObject(o, "loss_scale", t->scaler.scale);
	cJSON_AddNumberToObject(o, "rank0_param_bytes", (double)mp);
	cJSON_AddNumberToObject(o, "rank0_grad_bytes", (double)mg);
	cJSON_AddNumberToObject(o, "rank0_optimizer_bytes", (double)mo);
	cJSON_AddStringToObject(o, "blas", nn_blas_describe());
	cJSON_AddStringToObject(o, "preset", c->preset);
	if (x->resumed_from)
		cJSON_AddStringToObject(o, "resumed_from", x->resumed_from);
	else
		cJSON_AddNullToObject(o, "resumed_from");
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/summary.json", x->out);
	int rc = json_write_file(path, o);
	cJSON_Delete(o);
	if (rc)
		return rc;
	ui_clear(x->ui);
	if (error) {
		log_info("wrote %s (the run failed at step %" PRId64 ")", path, t->step);
		return 0;
	}
	char wall[32];
	fmt_duration(wall_s, wall, sizeof wall);
	char ltxt[48];
	loss_text(t, rs->last_loss, ltxt, sizeof ltxt);
	log_info("summary: %" PRId64 " steps, train %s, val loss %.4f (ppl %.2f), %.0f tokens/s (median), "
		 "%.1f ms/step, %.1f model GFLOP/s, MFU %.1f%% of %.0f GFLOP/s, peak RSS %.1f MB (rank 0), wall %s",
		 t->step, ltxt, rs->last_val, exp(rs->last_val), tps, ms, gflops, 100 * mfu, peak, (double)rss / 1e6,
		 wall);
	log_info("wrote %s", path);
	return 0;
}

/* A file of the run could not be written (a full disk): add which checkpoint still holds the
 * run's weights to the message. Returns rc. */
static int name_last_ckpt(struct run_ctx *x, int rc)
{
	char msg[2048];
	snprintf(msg, sizeof msg, "%s", ascent_errmsg());
	if (x->last_ckpt[0])
		return ascent_error(rc, "%s; the last complete checkpoint is '%s'", msg, x->last_ckpt);
	return ascent_error(rc, "%s; no checkpoint of this run is complete", msg);
}

/* The live line of a long evaluation (rank 0 on a terminal). */
static void eval_progress(void *arg, int64_t done, int64_t total)
{
	struct run_ctx *x = arg;
	fprintf(stderr, "\r\033[Kevaluating: batch %" PRId64 "/%" PRId64, done, total);
	fflush(stderr);
	x->ui->line_shown = 1;
}

/* The validation loss over --eval-batches batches (every evaluation, the final one too); the final
 * one says how much it reads and shows its progress on a terminal. Collective. */
static int evaluate(struct run_ctx *x, struct trainer *t, int final, double *val)
{
	const struct trainer_config *c = &t->cfg;
	size_t per = (size_t)c->batch * (size_t)c->seq, avail = t->data.nval >= 1 ? (t->data.nval - 1) / per : 0;
	x->val_batches = (int64_t)(avail < (size_t)c->eval_batches ? avail : (size_t)c->eval_batches);
	if (final && x->rank == 0) {
		ui_clear(x->ui);
		log_info("evaluating %" PRId64 " validation batch(es) of %d x %d (--eval-batches %d; the split has %zu)",
			 x->val_batches, c->batch, c->seq, c->eval_batches, avail);
	}
	if (final && x->ui->tty && x->rank == 0) {
		t->val_progress = eval_progress;
		t->val_progress_arg = x;
	}
	int rc = trainer_val_loss(t, c->eval_batches, val);
	t->val_progress = NULL;
	ui_clear(x->ui);
	return rc;
}

/* After a checkpoint: keep the newest --keep-ckpts (and the marked ones), rank 0. */
static void prune_ckpts(struct run_ctx *x, const struct trainer_config *c, const char *just_written)
{
	if (x->rank != 0 || c->keep_ckpts <= 0)
		return;
	int removed = 0;
	if (trainer_ckpt_prune(x->out, c->keep_ckpts, just_written, &removed))
		log_warn("cannot remove old checkpoints (--keep-ckpts %d): %s", c->keep_ckpts, ascent_errmsg());
	else if (removed)
		log_info("removed %d old checkpoint(s) (--keep-ckpts %d; a file named 'keep' in a checkpoint folder "
			 "keeps it)", removed, c->keep_ckpts);
}

/* Rank 0's per-step outputs: the step line, metrics.jsonl. */
static int step_outputs(struct run_ctx *x, const struct trainer *t, FILE *mf, const char *mpath, double loss,
			double lr, double norm, double tps, double dt, double val)
{
	const struct trainer_config *c = &t->cfg;
	int64_t step = t->step;
	if (x->ui->tty)
		log_set_echo(0);
	char ltxt[48];
	loss_text(t, loss, ltxt, sizeof ltxt);
	log_info("step %" PRId64 "/%d | %s | lr %.3e | grad norm %.3f | %.0f tokens/s | %.1f ms/step%s", step,
		 c->steps, ltxt, lr, norm, tps, dt * 1e3, t->last_skipped ? " | skipped (fp16 overflow)" : "");
	if (x->ui->tty && x->rank == 0)
		log_set_echo(1);
	if (!mf)
		return 0;
	/* JSON has no inf/NaN: a non-finite value (an fp16 overflow step) is written as null */
	char ls[32], ns[32];
	snprintf(ls, sizeof ls, isfinite(loss) ? "%.9g" : "null", loss);
	snprintf(ns, sizeof ns, isfinite(norm) ? "%.9g" : "null", norm);
	fprintf(mf, "{\"step\":%" PRId64 ",\"loss\":%s,\"lr\":%.9g,\"grad_norm\":%s,\"tokens_per_s\":%.1f,\"ms\":%.3f",
		step, ls, lr, ns, tps, dt * 1e3);
	if (t->precision == NN_FP16)
		fprintf(mf, ",\"loss_scale\":%.9g,\"skipped\":%s", t->scaler.scale, t->last_skipped ? "true" : "false");
	if (!isnan(val))
		fprintf(mf, ",\"val_loss\":%.9g", val);
	fputs("}\n", mf);
	if (fflush(mf))
		return ascent_error(ASCENT_EIO, "cannot write '%s': %s", mpath, strerror(errno));
	return 0;
}

static int run_loop(struct run_ctx *x, struct trainer *t)
{
	const struct trainer_config *c = &t->cfg;
	const char *out = x->out;
	struct run_ui *ui = x->ui;
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/metrics.jsonl", out);
	FILE *mf = NULL;
	int rc = 0;
	if (x->rank == 0 && !(mf = fopen(path, "a")))
		rc = ascent_error(ASCENT_EIO, "cannot open '%s': %s", path, strerror(errno));
	if ((rc = agree(x, rc, "opening metrics.jsonl"))) {
		if (mf)
			fclose(mf);
		return rc;
	}
	struct run_stats rs = { 0 };
	int64_t todo = c->steps - t->step;
	rs.tps = calloc((size_t)todo + 1, sizeof(double));
	rs.ms = calloc((size_t)todo + 1, sizeof(double));
	rs.last_val = NAN;
	if (!rs.tps || !rs.ms)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	double tokens_per_step = (double)c->batch * c->seq * c->grad_accum;
	int64_t loop_t0 = clock_ns();
	while (!rc && t->step < c->steps) {
		int64_t s0 = clock_ns();
		prof_step_begin(t->step + 1);
		double loss, norm, lr;
		rc = trainer_compute_grads(t, &loss);
		if (!rc && !isfinite(loss) && t->precision != NN_FP16)
			rc = ascent_error(ASCENT_EFAIL, "the loss is not finite at step %" PRId64 " (diverged: lower --lr or raise --warmup)",
					  t->step + 1);
		if (!rc)
			rc = trainer_apply_grads(t, &norm, &lr);
		double dt = (double)(clock_ns() - s0) / 1e9;
		double tps = tokens_per_step / dt;
		if (!rc) {
			prof_counter("loss", loss);
			prof_counter("lr", lr);
			prof_counter("grad_norm", norm);
			prof_counter("loss_scale", t->scaler.scale);
			prof_counter("tokens_per_s", tps);
			if (t->precision == NN_FP16)
				prof_counter("skipped_steps", (double)t->scaler.skipped);
		}
		prof_step_end();
		if (rc)
			break;
		rs.tps[rs.n] = tps;
		rs.ms[rs.n] = dt * 1e3;
		rs.n++;
		rs.last_loss = loss;
		int64_t step = t->step;
		int last = step == c->steps;

		double val = NAN;
		if (last || (c->eval_every > 0 && step % c->eval_every == 0)) {
			rc = evaluate(x, t, last, &val);
			if (rc)
				break;
			rs.last_val = val;
		}
		rc = step_outputs(x, t, mf, path, loss, lr, norm, tps, dt, val);
		if (!isnan(val)) {
			ui_clear(ui);
			log_info("step %" PRId64 ": val loss %.4f (ppl %.2f)", step, val, exp(val));
		}
		if ((rc = agree(x, rc, "writing metrics.jsonl"))) {
			rc = rc == ASCENT_EIO ? name_last_ckpt(x, rc) : rc;
			break;
		}

		if (last || (c->ckpt_every > 0 && step % c->ckpt_every == 0)) {
			struct trainer_state st = { .step = step, .data_fingerprint = t->data.fingerprint,
						    .ntrain = t->data.ntrain, .config = *c };
			if (t->precision == NN_FP16) {
				st.loss_scale = t->scaler.scale;
				st.scale_clean = t->scaler.clean;
				st.skipped = t->scaler.skipped;
			}
			char dir[TRAINER_PATH_MAX + 64] = "";
			int64_t k0 = clock_ns();
			rc = trainer_ckpt_save_dist(t, out, &st, dir, sizeof dir);
			if (rc) {
				rc = ascent_error_ctx(rc, "the checkpoint of step %" PRId64 " failed", step);
				rc = name_last_ckpt(x, rc);
				break;
			}
			ui_clear(ui);
			if (x->rank == 0) {
				snprintf(x->last_ckpt, sizeof x->last_ckpt, "%s", dir);
				log_info("checkpoint %s (%.2f s)", dir, (double)(clock_ns() - k0) / 1e9);
				prune_ckpts(x, c, dir);
			}
		}
		if (ui->tty && x->rank == 0) {
			double el = (double)(clock_ns() - loop_t0) / 1e9;
			char eta[32];
			fmt_duration(el / rs.n * (double)(c->steps - step), eta, sizeof eta);
			int w = 20, fill = (int)((double)w * (double)step / c->steps);
			char bar[32];
			for (int i = 0; i < w; i++)
				bar[i] = i < fill ? '#' : '.';
			bar[w] = 0;
			char ltxt[48];
			loss_text(t, loss, ltxt, sizeof ltxt);
			fprintf(stderr, "\r\033[Kstep %" PRId64 "/%d [%s] %s | %.0f tok/s | %.1f ms/step | ETA %s", step,
				c->steps, bar, ltxt, tps, dt * 1e3, eta);
			if (!isnan(rs.last_val))
				fprintf(stderr, " | val %.4f", rs.last_val);
			fflush(stderr);
			ui->line_shown = 1;
		}
	}
	ui_clear(ui);
	if (mf && fclose(mf) && !rc)
		rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", path, strerror(errno));
	if (!rc) {
		if (rs.n == 0) {
			/* nothing to do: the checkpoint was already at --steps */
			rc = evaluate(x, t, 1, &rs.last_val);
		}
		if (!rc && x->rank == 0)
			rc = write_summary(x, t, &rs, (double)(clock_ns() - x->t0) / 1e9, NULL);
		rc = agree(x, rc, "writing summary.json");
	} else if (x->rank == 0 && rs.n > 0) {
		/* a failed run still says what it did and where its last complete checkpoint is */
		char msg[2048];
		snprintf(msg, sizeof msg, "%s", ascent_errmsg());
		if (write_summary(x, t, &rs, (double)(clock_ns() - x->t0) / 1e9, msg))
			log_error("cannot write the summary of the failed run: %s", ascent_errmsg());
		ascent_error(rc, "%s", msg);
	}
	free(rs.tps);
	free(rs.ms);
	return rc;
}

/* This run's facts the advisor reads from the profile's meta table (the host's are the profiler's). */
static void set_profile_meta(const struct trainer *t)
{
	char buf[64];
	prof_set_meta("blas_core", nn_blas_core());
	snprintf(buf, sizeof buf, "%d", nn_get_threads());
	prof_set_meta("blas_threads", buf);
	prof_set_meta("blas", nn_blas_describe());
	snprintf(buf, sizeof buf, "%d", t->dp);
	prof_set_meta("dp", buf);
	snprintf(buf, sizeof buf, "%d", t->tp);
	prof_set_meta("tp", buf);
	snprintf(buf, sizeof buf, "%d", t->pp);
	prof_set_meta("pp", buf);
	snprintf(buf, sizeof buf, "%d", t->micro);
	prof_set_meta("microbatches", buf);
	snprintf(buf, sizeof buf, "%d", t->vstages);
	prof_set_meta("virtual_stages", buf);
	prof_set_meta("schedule", trainer_pp_name(t->sched));
	snprintf(buf, sizeof buf, "%.6f", t->pp > 1 ? trainer_pp_bubble_theory(t->sched, t->pp, t->micro, t->vstages) : 0.0);
	prof_set_meta("bubble_theory", buf);
}

/* Start the profiler on every rank; all or none (clock alignment is collective). */
static int profile_start(struct run_ctx *x, const struct trainer_config *cfg, int dp, const char *cmdline)
{
	char path[TRAINER_PATH_MAX + 32];
	prof_rank_db_path(x->out, x->rank, path, sizeof path);
	int dpr = 0, tpr = 0, ppr = 0;
	if (x->world > 1 && dp > 0)
		comm_grid_coords(x->rank, dp, cfg->tp, cfg->pp, &dpr, &tpr, &ppr);
	cJSON *cj = trainer_config_to_json(cfg);
	char *cfgs = cj ? cJSON_PrintUnformatted(cj) : NULL;
	cJSON_Delete(cj);
	struct prof_options po = { .db_path = path, .rank = x->rank, .world_size = x->world, .dp_rank = dpr,
				   .tp_rank = tpr, .pp_rank = ppr,
				   .schedule = cfg->profile_steps[0] ? cfg->profile_steps : NULL,
				   .max_mb = cfg->profile_max_mb, .stacks = cfg->profile_stacks,
				   .sample_hz = cfg->profile_sample, .command_line = cmdline, .config_json = cfgs };
	int rc = prof_init(&po);
	free(cfgs);
	if (rc)
		log_warn("profiling disabled on rank %d: %s", x->rank, ascent_errmsg());
	int all = agree(x, rc, "starting the profiler");
	if (all) {
		if (!rc) {
			log_warn("profiling disabled: another rank could not start its profiler");
			prof_shutdown();
		}
		return 0;
	}
	if (x->comm) {
		prof_set_clock_sync(comm_prof_clock, x->comm);
		comm_prof_register(x->comm);
	}
	x->profiling = 1;
	return 0;
}

/* Stop the profiler everywhere, merge on rank 0. */
static int profile_finish(struct run_ctx *x, const struct trainer *t)
{
	if (!x->profiling)
		return 0;
	set_profile_meta(t);
	int rc = prof_shutdown();
	if (rc)
		log_warn("profiler: %s", ascent_errmsg());
	if (x->comm && x->world > 1)
		comm_barrier(x->comm, COMM_WORLD);
	if (x->rank != 0)
		return 0;
	int64_t m0 = clock_ns();
	rc = prof_merge(x->out, NULL, 1);
	if (rc) {
		log_warn("profile merge failed: %s (merge later with 'ascent merge %s')", ascent_errmsg(), x->out);
		return 0;
	}
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/trace.db", x->out);
	log_info("profile: %s (%d rank(s) merged in %.2f s); 'ascent report %s', 'ascent view %s'", path, x->world,
		 (double)(clock_ns() - m0) / 1e9, path, path);
	return 0;
}

static int prepare_out(struct run_ctx *x, struct trainer_config *cfg)
{
	char path[TRAINER_PATH_MAX + 64];
	int rc = 0;
	/* rank 0 names the run (a default name has the launch time in it) */
	if (x->comm && x->world > 1 &&
	    (rc = comm_broadcast(x->comm, COMM_WORLD, cfg->out, sizeof cfg->out, COMM_BYTE, 0)))
		return rc;
	if (x->rank == 0) {
		snprintf(path, sizeof path, "%s/config.json", cfg->out);
		if (!cfg->resume[0] && fs_exists(path))
			rc = ascent_error(ASCENT_EUSAGE,
					  "run directory '%s' already holds a run; continue it with --resume %s, or pass another --out",
					  cfg->out, cfg->out);
		/* never into its own data, and not over checkpoints or profiles of something else; a run
		 * continued with --resume is this command's own */
		const char *ins[] = { cfg->data, cfg->val_data, cfg->init_from, cfg->resume };
		struct fs_output fo = { .cmd = "train", .option = "--out", .path = cfg->out, .inputs = ins, .ninputs = 4,
					.force = cfg->force || (cfg->resume[0] && fs_exists(path)), .folder = 1 };
		if (!rc)
			rc = fs_output_check(&fo);
		if (!rc)
			rc = fs_mkdir_p(cfg->out);
	}
	return agree(x, rc, "preparing the run directory");
}

int trainer_run(const struct trainer_config *cfg_in)
{
	return trainer_run_with(cfg_in, NULL);
}

int trainer_run_with(const struct trainer_config *cfg_in, const struct trainer_hooks *hooks)
{
	struct trainer_config cfg = *cfg_in;
	struct run_ui ui = { .tty = isatty(STDERR_FILENO) };
	struct run_ctx x = { .ui = &ui, .t0 = clock_ns() };
	int rc = comm_init(&x.comm);
	if (rc)
		return ascent_error_ctx(rc, "cannot start MPI (set ASCENT_NO_MPI=1 to train in one process without it)");
	x.rank = comm_rank(x.comm, COMM_WORLD);
	x.world = comm_size(x.comm, COMM_WORLD);
	x.out = cfg.out;
	ui.tty = ui.tty && x.rank == 0;
	rc = prepare_out(&x, &cfg);
	char path[TRAINER_PATH_MAX + 64];
	if (!rc) {
		snprintf(path, sizeof path, "%s/logs/rank-%05d.log", cfg.out, x.rank);
		rc = log_open(path, x.rank, x.rank == 0);
		rc = agree(&x, rc, "opening its log");
	}
	if (rc) {
		comm_finalize(x.comm);
		return rc;
	}
	comm_set_run_dir(x.comm, cfg.out);
	nn_set_threads(cfg.threads);
	if (x.rank == 0)
		clean_partial_ckpts(cfg.out);
	struct trainer t;
	memset(&t, 0, sizeof t);
	struct nn_fake_quant fq = { 0 };
	if (hooks && hooks->prepare)   /* a failure ends the run below, like any other */
		rc = agree(&x, hooks->prepare(hooks->arg, x.comm, &fq), "preparing the run");
	int dp = cfg.dp ? cfg.dp : (x.world % (cfg.tp * cfg.pp) ? 0 : x.world / (cfg.tp * cfg.pp));
	if (!rc && cfg.profile) {
		char cmdline[512];
		snprintf(cmdline, sizeof cmdline, "ascent train (world %d, dp %d tp %d pp %d)", x.world, dp, cfg.tp, cfg.pp);
		profile_start(&x, &cfg, dp, cmdline);
	}

	if (!rc)
		rc = trainer_init_dist(&t, &cfg, x.comm);
	if (!rc && fq.lin)
		rc = trainer_set_fake_quant(&t, &fq);
	if (!rc && hooks && hooks->soft_targets)
		rc = trainer_set_soft_targets(&t, hooks->soft_targets, hooks->arg);
	rc = agree(&x, rc, "building the model");
	if (!rc && cfg.init_from[0] && !cfg.resume[0]) {
		rc = trainer_load_weights_dist(&t, cfg.init_from);
		if (!rc)
			log_info("fine-tuning from the weights of %s (step 0, fresh optimizer)", cfg.init_from);
	}
	if (!rc && cfg.resume[0]) {
		struct trainer_state st;
		rc = trainer_ckpt_load_dist(&t, cfg.resume, &st);
		if (!rc && st.step > cfg.steps)
			rc = ascent_error(ASCENT_EUSAGE,
					  "checkpoint '%s' is at step %" PRId64 ", past --steps %d (pass --steps > %" PRId64 ")",
					  cfg.resume, st.step, cfg.steps, st.step);
		if (!rc) {
			t.step = st.step;
			if (st.loss_scale > 0 && t.precision == NN_FP16) {
				t.scaler.scale = st.loss_scale;
				t.scaler.clean = st.scale_clean;
				t.scaler.skipped = st.skipped;
			}
			x.resumed_from = cfg.resume;
			snprintf(x.last_ckpt, sizeof x.last_ckpt, "%s", cfg.resume);
			if (x.rank == 0) {
				warn_changed(&st.config, &cfg);
				if (st.data_fingerprint != t.data.fingerprint || st.ntrain != t.data.ntrain)
					log_warn("the training data differ from the checkpoint's (%" PRIu64 " tokens, fingerprint %016" PRIx64
						 "; now %zu, %016" PRIx64 "): batches will not match an uninterrupted run",
						 st.ntrain, st.data_fingerprint, t.data.ntrain, t.data.fingerprint);
				snprintf(path, sizeof path, "%s/metrics.jsonl", cfg.out);
				rc = truncate_metrics(path, st.step);
			}
		}
		rc = agree(&x, rc, "loading the checkpoint");
	}
	if (!rc) {
		if (x.rank == 0) {
			snprintf(path, sizeof path, "%s/config.json", cfg.out);
			rc = trainer_config_write(path, &cfg);
		}
		rc = agree(&x, rc, "writing config.json");
	}
	if (!rc) {
		int64_t mp, mg, mo, mc;
		trainer_mem_bytes(&t, &mp, &mg, &mo, &mc);
		log_info("ascent %s: run '%s'", ASCENT_VERSION, cfg.out);
		log_info("model %s: L%d C%d H%d V%d maxT%d, %.2fM parameters; %s", cfg.preset, cfg.n_layer, cfg.n_embd,
			 cfg.n_head, cfg.vocab_size, cfg.max_seq, (double)nn_param_count(&t.mc) / 1e6, nn_blas_describe());
		log_info("layout: %d rank(s) = dp %d x tp %d x pp %d; zero %d; %s schedule, %d micro-batch(es) of %d, %d "
			 "virtual stage(s); precision %s%s",
			 x.world, t.dp, t.tp, t.pp, cfg.zero, trainer_pp_name(t.sched), t.micro, t.mb_batch, t.vstages,
			 cfg.precision, cfg.recompute ? ", recompute" : "");
		log_info("rank %d (dp %d tp %d pp %d): layers %d-%d of chunk 0, params %.1f MB, grads %.1f MB, optimizer %.1f MB, "
			 "comm buffers %.1f MB",
			 x.rank, t.dp_rank, t.tp_rank, t.pp_rank, t.model.shard.layer_begin, t.model.shard.layer_end - 1,
			 (double)mp / 1e6, (double)mg / 1e6, (double)mo / 1e6, (double)mc / 1e6);
		log_info("data %s: %zu train tokens, %zu validation tokens", cfg.data[0] ? cfg.data : TRAINER_DEFAULT_CORPUS,
			 t.data.ntrain, t.data.nval);
		log_info("%d steps of %d x %d x %d tokens (global batch x seq x grad-accum), lr %g (warm-up %d, %s to %g), "
			 "weight decay %g, clip %g, seed %" PRId64,
			 cfg.steps, cfg.batch, cfg.seq, cfg.grad_accum, cfg.lr, cfg.warmup, cfg.lr_schedule, cfg.min_lr,
			 cfg.weight_decay, cfg.clip, cfg.seed);
		if (t.soft_fn)
			log_info("distillation: the training loss is the mean KL(teacher || model) on the teacher's soft "
				 "targets; the validation loss stays the cross-entropy of the next tokens");
		if (x.resumed_from)
			log_info("resumed from %s at step %" PRId64, x.resumed_from, t.step);
		rc = run_loop(&x, &t);
	}
	if (rc) {
		/* into the log file only: the command line prints the error itself */
		log_set_echo(0);
		log_error("%s", ascent_errmsg());
		log_set_echo(x.rank == 0);
	}
	char msg[2048];
	snprintf(msg, sizeof msg, "%s", ascent_errmsg());
	if (!rc)
		profile_finish(&x, &t);
	else if (x.profiling)
		prof_shutdown();
	trainer_release(&t);
	log_close();
	int frc = comm_finalize(x.comm);
	if (rc)
		return ascent_error(rc, "%s", msg);
	return frc;
}
