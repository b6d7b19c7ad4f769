/* samples/hooks_example.c — using the profiler's hook API without the trainer (like NVTX).
 *
 *   hooks_example RUN_DIR [STEPS] [--forever]
 *
 * Writes RUN_DIR/rank-00000.db while it "trains" for STEPS steps (default 20): each step has a
 * forward and a backward phase with matmul/gelu ops (FLOPs declared), a worker thread doing
 * "data" loading, an all-reduce, memory allocations and loss/lr counters. Then it shuts the
 * profiler down and merges into RUN_DIR/trace.db. With --forever it never stops (the kill -9
 * test uses it) and prints "recording" once the first step is flushed. */
#include <ascent/prof.h>

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile float sink = 1.0f;

static void spin_flops(int n)   /* some real work, ~n·1000 flops */
{
	float a = sink;
	for (int i = 0; i < n * 500; i++)
		a = a * 0.999f + 0.001f;
	sink = a;
}

static volatile int stop_worker;

static void *worker(void *arg)
{
	(void)arg;
	int64_t i = 0;
	while (!stop_worker) {
		struct prof_tok t = prof_range_begin_kind(DB_KIND_DATA, "load_batch", PROF_SITE);
		spin_flops(20);
		prof_range_end(&t);
		prof_counter("queue_depth", (double)(i++ % 4));
		struct timespec ts = { 0, 200000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static void layer_forward(int l)
{
	PROF_SCOPE_KIND(DB_KIND_PHASE, "block");
	struct prof_tok t = prof_op_begin("matmul", l, 2.0 * 64 * 64 * 64);
	spin_flops(50);
	prof_op_end(&t);
	t = prof_op_begin("gelu", l, 8.0 * 64 * 64);
	spin_flops(10);
	prof_op_end(&t);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: hooks_example RUN_DIR [STEPS] [--forever]\n");
		return 2;
	}
	const char *dir = argv[1];
	int steps = argc > 2 && argv[2][0] != '-' ? atoi(argv[2]) : 20;
	int forever = argc > 2 && !strcmp(argv[argc - 1], "--forever");
	if (fs_mkdir_p(dir)) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	char path[4096];
	prof_rank_db_path(dir, 0, path, sizeof path);
	struct prof_options po = { .db_path = path, .rank = 0, .world_size = 1, .dp_rank = 0, .tp_rank = 0,
				   .pp_rank = 0, .command_line = "hooks_example", .flush_ms = 100 };
	if (prof_init(&po)) {
		fprintf(stderr, "warning: profiling disabled: %s\n", ascent_errmsg());   /* the job goes on */
	}
	prof_comm_register(0, "world", 1, 0);
	pthread_t th;
	pthread_create(&th, NULL, worker, NULL);
	static float params[1 << 16];
	prof_mem_alloc(DB_MEM_PARAM, sizeof params, params);
	for (int64_t step = 0; forever || step < steps; step++) {
		prof_step_begin(step);
		void *act = malloc(1 << 20);
		prof_mem_alloc(DB_MEM_ACTIVATION, 1 << 20, act);
		{
			PROF_SCOPE_KIND(DB_KIND_PHASE, "forward");
			for (int l = 0; l < 4; l++)
				layer_forward(l);
		}
		{
			PROF_SCOPE_KIND(DB_KIND_PHASE, "backward");
			for (int l = 3; l >= 0; l--) {
				struct prof_tok t = prof_op_begin("matmul_bwd", l, 4.0 * 64 * 64 * 64);
				spin_flops(100);
				prof_op_end(&t);
			}
		}
		struct prof_tok c = prof_comm_begin("allreduce", 0, step, sizeof params, -1);
		spin_flops(30);
		prof_comm_end(&c);
		prof_mem_free(DB_MEM_ACTIVATION, 1 << 20, act);
		free(act);
		prof_counter("loss", 5.5 * exp(-0.01 * (double)step));
		prof_counter("lr", 3e-4);
		prof_step_end();
		if (forever && step == 2) {
			prof_flush();
			printf("recording\n");
			fflush(stdout);
		}
	}
	stop_worker = 1;
	pthread_join(th, NULL);
	prof_mem_free(DB_MEM_PARAM, sizeof params, params);
	int rc = prof_shutdown();
	if (rc)
		fprintf(stderr, "warning: %s\n", ascent_errmsg());
	if ((rc = prof_merge(dir, NULL, 1)) != 0) {
		fprintf(stderr, "error: %s\n", ascent_errmsg());
		return 1;
	}
	printf("wrote %s/trace.db\n", dir);
	return 0;
}
