/* profiler/internal.h — private to the profiler: the ring record, per-thread rings, the context
 * behind prof_g. Nothing outside profiler/ includes this. */
#ifndef ASCENT_PROF_INTERNAL_H
#define ASCENT_PROF_INTERNAL_H

#include <pthread.h>
#include <semaphore.h>

#include "profiler/prof.h"

/* REC_QUEUE follows a collective's REC_RANGE on a lane (the same t0, dur, name, kind): amount = the
 * time it waited in its communicator's queue before the transfer (0: none), site = the algorithm it
 * ran (a string literal, NULL unknown), written as the event's argument {"queue_ns": N, "algo": "A"}
 * (prof_lane_end_queued). */
enum rec_type { REC_RANGE = 1, REC_COUNTER, REC_MEM, REC_STACK, REC_SAMPLE, REC_QUEUE };

#define REC_STACK_IPS 6

/* One ring slot, 72 bytes. A range is recorded once, at its end. */
struct prof_rec {
	union {
		struct {
			int64_t t0, dur;      /* range: start, duration; counter/mem/sample: ts, 0 */
			const char *name;     /* range, counter */
			const char *site;
			int64_t amount;       /* flops/bytes; counter: value bits; mem: signed bytes */
			int64_t seq;          /* comm seq; mem: in_use */
			uint64_t stack;       /* stack hash, 0 none */
		} e;
		struct {
			uint64_t hash;
			uint64_t ip[REC_STACK_IPS];
		} s;                          /* part of a stack: frames [part*6, part*6+n) */
	} u;
	int32_t arg, comm_id;                 /* layer/peer/root, communicator; mem: category */
	int32_t step;
	int16_t mb;
	uint8_t type, kind;                   /* enum rec_type; enum db_kind (stack: part; n in kind) */
};

struct prof_ring {
	struct prof_rec *slot;
	uint64_t mask;
	uint64_t head;                        /* written by the owner thread (release) */
	char pad1[64];
	uint64_t tail;                        /* written by the writer thread (release) */
	char pad2[64];
	int64_t dropped;                      /* written by the owner thread */
	int64_t pushed;                       /* written by the owner thread */
	int tid;                              /* index in ctx.rings */
	int64_t os_tid;
	char name[32];
	uint64_t nudge_at;                    /* fill (records) at which a push wakes the writer: 1/8, at most PROF_NUDGE_MAX */
	int announced;                        /* writer: thread row written */
	uint64_t seen[1024];                  /* owner: stack hashes already sent (direct-mapped) */
	size_t map_bytes;                     /* the ring and its slots are one mapping */
};

#define PROF_MAX_THREADS 256
/* A ring this full wakes the writer (or 1/8 of a smaller ring): a burst is drained while it is
 * still being recorded, not after a large ring filled up. */
#define PROF_NUDGE_MAX 8192
#define PROF_STACK_DEPTH 32
#define PROF_MAX_COMMS 1024             /* communicators described per rank (ascent profile: one per MPI_Comm) */

struct prof_state {
	int initialized;                      /* init thread */
	int gen;                              /* bumped by each prof_init: stale thread rings re-register */
	struct prof_options opt;              /* copy; strings owned below */
	char *db_path, *schedule_str, *cmdline, *config;
	struct prof_schedule sched;
	int has_sched;
	struct db *db;                        /* used by the writer thread only (after init) */
	pthread_mutex_t lock;                 /* rings registration, intern, comm list */
	struct prof_ring *rings[PROF_MAX_THREADS];
	int nrings;                           /* published with release */
	pthread_t writer;
	pthread_mutex_t wlock;
	pthread_cond_t wcond;
	sem_t wake;                           /* posted to wake the writer early: a ring 1/8 full (any
					       * thread, signal handlers too: sem_post is async-signal-safe),
					       * prof_flush, prof_shutdown */
	int stop;                             /* wlock */
	int flush_req, flush_done;            /* wlock: prof_flush handshake (flush_req: what it asks, writer.c) */
	int failed;                           /* writer sets; then hooks are off */
	char errmsg[512];
	int detail_off;                       /* writer: size budget reached */
	int64_t detail_skipped, written;
	int64_t writer_ns, writer_cpu_ns;
	double hook_cost_ns;                  /* calibrated per record */
	int64_t t0_ns, t0_utc_ns;
	struct prof_clock_sync sync0, sync1;
	prof_clock_fn clock_fn;
	void *clock_arg;
	int rank_dirty;                       /* writer rewrites the rank row */
	int64_t mem_in_use[DB_MEM_COUNT];     /* atomics */
	struct prof_tok step_tok;             /* step thread */
	int step_open;
	/* interned run-time names */
	char **interned;
	int ninterned, capinterned;
	/* communicators to write */
	struct { int id, size, rank_in; const char *name; int written; } comms[PROF_MAX_COMMS];
	int ncomms;
	int comms_full;                       /* warned that comms[] is full */
	int64_t last_ts;
	/* lanes (prof__lane_end): rings of their own, fed from any thread under lane_lock */
	pthread_mutex_t lane_lock;
	struct { const char *name; struct prof_ring *ring; int gen; } lanes[16];
	int nlanes;                           /* lane_lock */
	/* the checkpointer (writer.c): the rank file's log copied into it on a thread and connection of
	 * its own, woken by the writer's commits (db_set_wal_notify) */
	struct db *ckdb;                      /* NULL: SQLite's automatic checkpoint, by the writer */
	pthread_t ckpt;
	sem_t ck_wake;
	int ck_stop, ck_posted;               /* atomics */
	int wal_frames;                       /* writer: pages in the log after its last commit */
	int ck_warned;                        /* writer: said once that its own checkpoint failed */
};

extern struct prof_state prof_ctx;

/* Unmap a ring (prof_shutdown; NULL ignored). */
void prof_ring_free(struct prof_ring *r);
/* Push a record into this thread's ring (registering the thread on first use). */
void prof_push(const struct prof_rec *r);
/* Capture this thread's stack (with --profile-stacks) and return its hash, pushing its frames the
 * first time this thread sees it. 0 when stacks are off or capture failed. */
uint64_t prof_stack_capture(int skip);
int prof_sampler_start(int hz);
void prof_sampler_stop(void);
/* Around an exec: the timer deleted and its pending signals taken (pause), started again at the
 * same rate when the exec failed (resume). */
void prof_sampler_pause(void);
/* Block SIGPROF in the calling thread (the profiler's own threads). */
void prof_block_sampler(void);
void prof_sampler_resume(void);
/* What the sampler achieved since it started: 0 when it never ran. */
struct prof_sampler_result {
	int hz;                   /* asked for */
	int64_t signals;          /* samples taken (signals handled) */
	int64_t expirations;      /* periods they stand for (1 + each signal's overrun) */
	int64_t cpu_ns;           /* the process's CPU time meanwhile */
};
int prof_sampler_result(struct prof_sampler_result *out /* OUT */);
/* Writer side: resolve ips into frame rows. */
int prof_symbolize(struct db *db);
/* Writer side: a stack's frames arrived (or a part). Returns its db stack_id (0 unknown). */
int prof_stack_add_part(const struct prof_rec *r);
int64_t prof_stack_id(uint64_t hash);
int prof_stacks_flush(struct db *db);
void prof_stacks_reset(void);
/* Number new stacks and frames after those already in db (a resumed file). */
int prof_stacks_resume(struct db *db);

/* Function symbols of an ELF64 file's .symtab (elfsym.c), for addresses dladdr cannot name. */
struct prof_elf_sym {
	uint64_t lo, hi;                      /* [lo, hi): file addresses (st_value, st_value + st_size) */
	const char *name;                     /* into pool */
};
struct prof_elf_syms {
	struct prof_elf_sym *s;               /* sorted by lo */
	size_t n;
	char *pool;
	int dyn;                              /* ET_DYN: file addresses are relative to the load base */
};
/* Parse the file image (checked against size: a bad file is ASCENT_EINPUT, never a crash). A file
 * without .symtab gives n = 0. */
int prof_elf_symbols(const unsigned char *img, size_t size, struct prof_elf_syms *out /* OUT */);
void prof_elf_syms_free(struct prof_elf_syms *s);
/* The function containing file address addr, *off its distance from the start; NULL none. */
const char *prof_elf_lookup(const struct prof_elf_syms *s, uint64_t addr, uint64_t *off /* OUT */);
/* The same for a code address of this process in `module` loaded at `base` (dladdr's dli_fname,
 * dli_fbase); each module's file is read once. */
const char *prof_elf_name(const char *module, uint64_t base, uint64_t ip, uint64_t *off /* OUT */);
void prof_elf_reset(void);

/* finish.c: the facts a merged profile carries, and finishing it */
int prof_write_host_facts(struct db *db);     /* host cores, memory, cgroup limit, CPU: at prof_init */
int prof_write_set_meta(struct db *db);       /* what prof_set_meta gathered: at prof_shutdown */
void prof_clear_set_meta(void);
int prof_write_notes(struct db *db);          /* what prof_add_note gathered: at prof_shutdown */
/* The notes of DIR/rank-NNNNN.end files beside the parts (prof_record_end) into the merged
 * out_path; the .end files removed when remove is 1. */
int prof_merge_ends(const char *out_path, char *const *parts, int n, int remove);
int prof_finish_merged(const char *path);     /* the viewer's tables, after merging */

#endif
