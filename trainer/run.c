/* trainer/run.c — `ascent train`: the run directory, the log and the live progress line, the loop
 * (steps, evaluation, checkpoints, resume), metrics.jsonl and summary.json. */
#include "trainer/trainer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <dirent.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* fp32 FMA peak per core, GFLOP/s, on the build machine class (REFERENCE.md §7): 64 flop/cycle at
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

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
		*basis = "fp32 FMA peak, AVX-512: 195 GFLOP/s per core (64 flop/cycle at ~3 GHz, REFERENCE.md) x threads; "
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

static int write_summary(const char *out, const struct trainer *t, const struct run_stats *rs, double wall_s,
			 const char *resumed_from, struct run_ui *ui)
{
	const struct trainer_config *c = &t->cfg;
	int threads = nn_get_threads();
	const char *basis;
	double peak = peak_gflops(threads, &basis);
	/* the first step of a process warms caches and grows buffers: leave it out of the medians */
	int skip = rs->n > 1 ? 1 : 0;
	double *tmp = malloc(sizeof(double) * (size_t)(rs->n + 1));
	if (!tmp)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	memcpy(tmp, rs->tps + skip, sizeof(double) * (size_t)(rs->n - skip));
	double tps = median(tmp, rs->n - skip);
	memcpy(tmp, rs->ms + skip, sizeof(double) * (size_t)(rs->n - skip));
	double ms = median(tmp, rs->n - skip);
	free(tmp);
	double fpt = nn_flops_per_token(&t->mc, c->seq);
	double gflops = fpt * tps / 1e9;
	double mfu = peak > 0 ? gflops / peak : 0;
	int64_t rss = cpu_peak_rss_bytes();

	cJSON *o = cJSON_CreateObject();
	if (!o)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	cJSON_AddNumberToObject(o, "steps", (double)t->step);
	cJSON_AddNumberToObject(o, "steps_this_run", rs->n);
	cJSON_AddNumberToObject(o, "final_train_loss", rs->last_loss);
	cJSON_AddNumberToObject(o, "final_val_loss", rs->last_val);
	cJSON_AddNumberToObject(o, "final_val_ppl", exp(rs->last_val));
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
	cJSON_AddNumberToObject(o, "n_params", (double)t->model.n_params);
	cJSON_AddNumberToObject(o, "threads", threads);
	cJSON_AddStringToObject(o, "blas", nn_blas_describe());
	cJSON_AddStringToObject(o, "preset", c->preset);
	if (resumed_from)
		cJSON_AddStringToObject(o, "resumed_from", resumed_from);
	else
		cJSON_AddNullToObject(o, "resumed_from");
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/summary.json", out);
	int rc = json_write_file(path, o);
	cJSON_Delete(o);
	if (rc)
		return rc;
	ui_clear(ui);
	char wall[32];
	fmt_duration(wall_s, wall, sizeof wall);
	log_info("summary: %" PRId64 " steps, train loss %.4f, val loss %.4f (ppl %.2f), %.0f tokens/s (median), "
		 "%.1f ms/step, %.1f model GFLOP/s, MFU %.1f%% of %.0f GFLOP/s, peak RSS %.1f MB, wall %s",
		 t->step, rs->last_loss, rs->last_val, exp(rs->last_val), tps, ms, gflops, 100 * mfu, peak,
		 (double)rss / 1e6, wall);
	log_info("wrote %s", path);
	return 0;
}

static int run_loop(struct trainer *t, const char *out, struct run_ui *ui, const char *resumed_from, int64_t t0)
{
	const struct trainer_config *c = &t->cfg;
	char path[TRAINER_PATH_MAX + 32];
	snprintf(path, sizeof path, "%s/metrics.jsonl", out);
	FILE *mf = fopen(path, "a");
	if (!mf)
		return ascent_error(ASCENT_EIO, "cannot open '%s': %s", path, strerror(errno));
	struct run_stats rs = { 0 };
	int64_t todo = c->steps - t->step;
	rs.tps = calloc((size_t)todo + 1, sizeof(double));
	rs.ms = calloc((size_t)todo + 1, sizeof(double));
	rs.last_val = NAN;
	int rc = 0;
	if (!rs.tps || !rs.ms)
		rc = ascent_error(ASCENT_ENOMEM, "out of memory");
	double tokens_per_step = (double)c->batch * c->seq * c->grad_accum;
	int64_t loop_t0 = clock_ns();
	while (!rc && t->step < c->steps) {
		int64_t s0 = clock_ns();
		double loss, norm, lr;
		rc = trainer_compute_grads(t, &loss);
		if (rc)
			break;
		if (!isfinite(loss)) {
			rc = ascent_error(ASCENT_EFAIL, "the loss is not finite at step %" PRId64 " (diverged: lower --lr or raise --warmup)",
					  t->step + 1);
			break;
		}
		rc = trainer_apply_grads(t, &norm, &lr);
		if (rc)
			break;
		double dt = (double)(clock_ns() - s0) / 1e9;
		double tps = tokens_per_step / dt;
		rs.tps[rs.n] = tps;
		rs.ms[rs.n] = dt * 1e3;
		rs.n++;
		rs.last_loss = loss;
		int64_t step = t->step;
		int last = step == c->steps;

		/* the step line: the log file always, the terminal only when it is not a tty */
		if (ui->tty)
			log_set_echo(0);
		log_info("step %" PRId64 "/%d | loss %.4f | lr %.3e | grad norm %.3f | %.0f tokens/s | %.1f ms/step", step,
			 c->steps, loss, lr, norm, tps, dt * 1e3);
		if (ui->tty)
			log_set_echo(1);

		double val = NAN;
		if (last || (c->eval_every > 0 && step % c->eval_every == 0)) {
			/* the final evaluation reads the whole validation split */
			rc = trainer_val_loss(t, last ? 0 : c->eval_batches, &val);
			if (rc)
				break;
			rs.last_val = val;
			ui_clear(ui);
			log_info("step %" PRId64 ": val loss %.4f (ppl %.2f)", step, val, exp(val));
		}
		fprintf(mf, "{\"step\":%" PRId64 ",\"loss\":%.9g,\"lr\":%.9g,\"grad_norm\":%.9g,\"tokens_per_s\":%.1f,\"ms\":%.3f",
			step, loss, lr, norm, tps, dt * 1e3);
		if (!isnan(val))
			fprintf(mf, ",\"val_loss\":%.9g", val);
		fputs("}\n", mf);
		if (fflush(mf)) {
			rc = ascent_error(ASCENT_EIO, "cannot write '%s': %s", path, strerror(errno));
			break;
		}

		if (last || (c->ckpt_every > 0 && step % c->ckpt_every == 0)) {
			struct trainer_state st = { .step = step, .data_fingerprint = t->data.fingerprint,
						    .ntrain = t->data.ntrain, .config = *c };
			char dir[TRAINER_PATH_MAX + 64];
			int64_t k0 = clock_ns();
			rc = trainer_ckpt_save(out, &t->model, t->adam_m, t->adam_v, &st, dir, sizeof dir);
			if (rc)
				break;
			ui_clear(ui);
			log_info("checkpoint %s (%.2f s)", dir, (double)(clock_ns() - k0) / 1e9);
		}
		if (ui->tty) {
			double el = (double)(clock_ns() - loop_t0) / 1e9;
			char eta[32];
			fmt_duration(el / rs.n * (double)(c->steps - step), eta, sizeof eta);
			int w = 20, fill = (int)((double)w * (double)step / c->steps);
			char bar[32];
			for (int i = 0; i < w; i++)
				bar[i] = i < fill ? '#' : '.';
			bar[w] = 0;
			fprintf(stderr, "\r\033[Kstep %" PRId64 "/%d [%s] loss %.4f | %.0f tok/s | %.1f ms/step | ETA %s", step,
				c->steps, bar, loss, tps, dt * 1e3, eta);
			if (!isnan(rs.last_val))
				fprintf(stderr, " | val %.4f", rs.last_val);
			fflush(stderr);
			ui->line_shown = 1;
		}
	}
	ui_clear(ui);
	fclose(mf);
	if (!rc) {
		if (rs.n == 0) {
			/* nothing to do: the checkpoint was already at --steps */
			rc = trainer_val_loss(t, 0, &rs.last_val);
		}
		if (!rc)
			rc = write_summary(out, t, &rs, (double)(clock_ns() - t0) / 1e9, resumed_from, ui);
	}
	free(rs.tps);
	free(rs.ms);
	return rc;
}

int trainer_run(const struct trainer_config *cfg)
{
	int64_t t0 = clock_ns();
	const char *out = cfg->out;
	char path[TRAINER_PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/config.json", out);
	if (!cfg->resume[0] && fs_exists(path))
		return ascent_error(ASCENT_EUSAGE,
				    "run directory '%s' already holds a run; continue it with --resume %s, or pass another --out",
				    out, out);
	int rc = fs_mkdir_p(out);
	if (rc)
		return rc;
	snprintf(path, sizeof path, "%s/logs/rank-00000.log", out);
	rc = log_open(path, 0, 1);
	if (rc)
		return rc;
	struct run_ui ui = { .tty = isatty(STDERR_FILENO) };
	nn_set_threads(cfg->threads);
	clean_partial_ckpts(out);

	struct trainer t;
	rc = trainer_init(&t, cfg);
	if (rc) {
		log_close();
		return rc;
	}
	const char *resumed_from = NULL;
	if (cfg->resume[0]) {
		struct trainer_state st;
		rc = trainer_ckpt_load(cfg->resume, &t.model, t.adam_m, t.adam_v, &st);
		if (!rc && st.step > cfg->steps)
			rc = ascent_error(ASCENT_EUSAGE,
					  "checkpoint '%s' is at step %" PRId64 ", past --steps %d (pass --steps > %" PRId64 ")",
					  cfg->resume, st.step, cfg->steps, st.step);
		if (rc) {
			trainer_release(&t);
			log_close();
			return rc;
		}
		t.step = st.step;
		resumed_from = cfg->resume;
		warn_changed(&st.config, cfg);
		if (st.data_fingerprint != t.data.fingerprint || st.ntrain != t.data.ntrain)
			log_warn("the training data differ from the checkpoint's (%" PRIu64 " tokens, fingerprint %016" PRIx64
				 "; now %zu, %016" PRIx64 "): batches will not match an uninterrupted run",
				 st.ntrain, st.data_fingerprint, t.data.ntrain, t.data.fingerprint);
		snprintf(path, sizeof path, "%s/metrics.jsonl", out);
		rc = truncate_metrics(path, st.step);
		if (rc) {
			trainer_release(&t);
			log_close();
			return rc;
		}
	}
	snprintf(path, sizeof path, "%s/config.json", out);
	rc = trainer_config_write(path, cfg);
	if (!rc) {
		log_info("ascent %s: run '%s'", ASCENT_VERSION, out);
		log_info("model %s: L%d C%d H%d V%d maxT%d, %.2fM parameters; %s", cfg->preset, cfg->n_layer, cfg->n_embd,
			 cfg->n_head, cfg->vocab_size, cfg->max_seq, (double)t.model.n_params / 1e6, nn_blas_describe());
		log_info("data %s: %zu train tokens, %zu validation tokens", cfg->data[0] ? cfg->data : TRAINER_DEFAULT_CORPUS,
			 t.data.ntrain, t.data.nval);
		log_info("%d steps of %d x %d x %d tokens, lr %g (warm-up %d, %s to %g), weight decay %g, clip %g, seed %" PRId64,
			 cfg->steps, cfg->batch, cfg->seq, cfg->grad_accum, cfg->lr, cfg->warmup, cfg->lr_schedule, cfg->min_lr,
			 cfg->weight_decay, cfg->clip, cfg->seed);
		if (resumed_from)
			log_info("resumed from %s at step %" PRId64, resumed_from, t.step);
		rc = run_loop(&t, out, &ui, resumed_from, t0);
	}
	if (rc) {
		/* into the log file only: the command line prints the error itself */
		log_set_echo(0);
		log_error("%s", ascent_errmsg());
		log_set_echo(1);
	}
	trainer_release(&t);
	log_close();
	return rc;
}
