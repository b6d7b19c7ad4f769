/* diag/diag.h — the public face of `diag`: pre-flight checks (versions, net, env, mem, comm, hang),
 * the report they fill (PASS / WARN / FAIL / SKIP per check, printed as a table or as JSON), and the
 * memory estimator.
 *
 * Every `ascent diag <sub>` command fills one struct diag_report: an identity table (key/value),
 * a list of checks, and a JSON object of command-specific data. The JSON contract scripts rely on:
 * one document {"command": ..., "checks": [{"name","status","message","fix"}...], ...data...}.
 * A report's verdict is its worst status; the CLI exits 1 when any check FAILed.
 *
 * diag never changes the cluster: it reads files (sysfs, /proc, version files), environment
 * variables and library version calls.
 */
#ifndef ASCENT_DIAG_H
#define ASCENT_DIAG_H

#include "common/common.h"
#include "nn/nn.h"

#include <stdint.h>
#include <stdio.h>

struct cJSON;
struct comm;

/* ------------------------------------------------------------------------------------------ */
/* Checks and the report (report.c) */

/* Ordered by severity: a report's verdict is the largest status of its checks. */
enum diag_status { DIAG_PASS = 0, DIAG_SKIP = 1, DIAG_WARN = 2, DIAG_FAIL = 3 };

struct diag_check {
	char name[64];            /* dotted, stable: "versions.mpi", "net.iface.eth0", "env.threads" */
	enum diag_status status;
	char message[1024];       /* the finding, with the numbers behind it */
	char fix[512];            /* what to do; "" when nothing needs doing */
};

struct diag_ident {
	char key[48];
	char value[256];
};

struct diag_report {
	struct diag_check *checks;   /* n checks, in the order they ran; owned */
	int n, cap;
	struct diag_ident *ident;    /* identity table (host, kernel, cpu...); owned */
	int nident, cap_ident;
	struct cJSON *data;          /* command-specific JSON object; owned; never NULL after init */
};

/* Storage provided by the caller; release frees what the report owns (accepts a zeroed report). */
int diag_report_init(struct diag_report *r);
void diag_report_release(struct diag_report *r);

/* Append a check. `fix` may be NULL or "". Message is printf-style. Returns 0 or ASCENT_ENOMEM. */
int diag_check_add(struct diag_report *r, enum diag_status st, const char *name, const char *fix,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Append (or replace, same key) an identity row. */
int diag_ident_add(struct diag_report *r, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Move every check, identity row and data member of `src` into `dst` (src is left empty). */
int diag_report_merge(struct diag_report *dst, struct diag_report *src);

const char *diag_status_name(enum diag_status s);       /* "PASS", "WARN", "FAIL", "SKIP" */
enum diag_status diag_report_worst(const struct diag_report *r);   /* PASS for no checks */
int diag_report_count(const struct diag_report *r, enum diag_status st);
const struct diag_check *diag_report_find(const struct diag_report *r, const char *name);

/* Human form: the identity table, then one row per check (STATUS name: message), each fix on an
 * indented "fix:" line, then a summary line. `title` heads the output ("ascent diag versions"). */
void diag_report_print(FILE *f, const struct diag_report *r, const char *title);
/* The JSON twin: one document, data members after "checks". */
int diag_report_print_json(FILE *f, const struct diag_report *r, const char *command);
/* Across ranks (collective over comm's world; a no-op for one rank): every rank's non-PASS checks
 * are gathered and a check "ranks.checks" is added on every rank naming the ranks and hosts whose
 * own checks warned or failed (FAIL if any FAILed), so every rank reaches the same verdict and
 * rank 0's report speaks for the job. */
int diag_report_gather(struct comm *c, struct diag_report *r);

/* 0 if no check FAILed, else ASCENT_EFAIL with "N of M checks failed: a, b" as the message. */
int diag_report_verdict(const struct diag_report *r);

/* ------------------------------------------------------------------------------------------ */
/* Version strings (versions.c) */

/* Compare dotted versions segment by segment ("." "-" "_" "+" separate): numbers numerically,
 * words case-insensitively; a word segment ("rc2", "RC1", "beta1", "post3") sorts before a number
 * in the same place, so 8.0.RC2 < 8.0.0; a missing segment counts as 0 ("12.4" == "12.4.0").
 * Returns <0, 0, >0. */
int diag_version_cmp(const char *a, const char *b);
/* 1 if `v` starts with `prefix` on a segment boundary ("12.4.1" has prefix "12.4", not "12.41"). */
int diag_version_has_prefix(const char *v, const char *prefix);

/* Find `key` in "KEY=value" or "Key: value" lines (sep is '=' or ':'); the value is trimmed of
 * blanks and quotes. Returns 1 found, 0 not. */
int diag_kv_find(const char *text, const char *key, char sep, char *out, size_t n);
/* A field of /proc/meminfo ("MemAvailable", "MemTotal") in bytes; −1 when it cannot be read. */
int64_t diag_meminfo_bytes(const char *key);
/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  ..." → "535.129.03". 1 / 0. */
int diag_parse_nvidia_proc(const char *text, char *out, size_t n);
/* CUDA's version.json ("cuda":{"version":"12.2.2"}) or version.txt ("CUDA Version 10.2.89"). */
int diag_parse_cuda_version(const char *text, char *out, size_t n);
/* nccl.h's NCCL_MAJOR/NCCL_MINOR/NCCL_PATCH defines → "2.18.1". */
int diag_parse_nccl_header(const char *text, char *out, size_t n);
/* CANN: ascend_toolkit_install.info (version=8.0.RC2) or version.cfg ([...:8.0.RC2]). */
int diag_parse_cann_info(const char *text, char *out, size_t n);

#define DIAG_MAX_VERSIONS 48

struct diag_version {
	char name[32];       /* "os", "kernel", "glibc", "compiler", "openblas", "openblas_core",
			      * "onednn", "mpi", "sqlite", "ncurses", "cjson", "nvidia_driver", "cuda",
			      * "nccl", "ascend_driver", "ascend_firmware", "cann", "torch", "torch_npu",
			      * "numpy" */
	char version[128];
	char detail[256];    /* a longer description ("OpenBLAS 0.3.21 DYNAMIC_ARCH ... , 2 threads") */
	char source[256];    /* where it was read: a file path or a function name */
};

struct diag_versions {
	struct diag_version v[DIAG_MAX_VERSIONS];
	int n;
};

/* Collect every version this process can see. `root` prefixes every file path read ("" or NULL
 * for the real machine); library versions (glibc, BLAS, MPI...) come from the running process
 * and are only collected when `with_libs` is 1 (fixture runs pass 0). Never fails on a missing
 * component (it is simply absent); returns 0 or ASCENT_EIO on an unreadable present file. */
int diag_versions_collect(const char *root, int with_libs, struct diag_versions *out /* OUT */);
const char *diag_versions_get(const struct diag_versions *vs, const char *name);   /* NULL if absent */
int diag_versions_set(struct diag_versions *vs, const char *name, const char *version, const char *detail,
		      const char *source);

/* Check `vs` against a compatibility matrix (samples/version_matrix.json layout), adding
 * "versions.matrix.*" checks: compatible → PASS, unknown combination → WARN, known incompatible
 * → FAIL; each message quotes the matrix row and its source. */
int diag_versions_check_matrix(const struct diag_versions *vs, const struct cJSON *matrix,
			       struct diag_report *r);
/* Across ranks: vs[i] is rank i's collection, hosts[i] its host name. Adds "versions.ranks":
 * PASS when every rank reports the same versions, else FAIL naming, per differing component,
 * the value of the majority and the ranks/hosts that differ. */
int diag_versions_compare_ranks(const struct diag_versions *vs, const char *const *hosts, int n,
				struct diag_report *r);

struct diag_versions_opts {
	const char *root;     /* file-system prefix for fixture trees; NULL = "/" */
	const char *matrix;   /* matrix path; NULL = $ASCENT_VERSION_MATRIX, else samples/version_matrix.json
			       * next to the binary's repo, else skip the matrix checks */
	struct comm *comm;    /* NULL: this process only; else versions are gathered from every rank
			       * (collective) and compared (versions.ranks) */
};
/* `ascent diag versions`: collect, fill the identity table and r->data "versions", check the matrix. */
int diag_versions_run(const struct diag_versions_opts *o, struct diag_report *r);

/* ------------------------------------------------------------------------------------------ */
/* Network (net.c) */

#define DIAG_MAX_NETIFS 64
#define DIAG_MAX_RDMA_PORTS 64

struct diag_netif {
	char name[64];
	char operstate[16];   /* "up", "down", "unknown", "dormant", ... */
	int mtu;              /* bytes, -1 unknown */
	long speed_mbps;      /* -1 unknown (virtual interfaces) */
	int type;             /* ARPHRD: 1 Ethernet, 32 InfiniBand, 772 loopback */
	int carrier;          /* 1, 0, -1 unknown */
};

struct diag_rdma_port {
	char dev[64];         /* "mlx5_0" */
	int port;             /* 1-based */
	int state;            /* 4 = ACTIVE; -1 unknown */
	char state_str[32];   /* "ACTIVE" */
	int phys_state;       /* 5 = LinkUp; -1 unknown */
	char phys_str[32];    /* "LinkUp" */
	char rate[64];        /* "100 Gb/sec (4X EDR)" */
	char link_layer[32];  /* "InfiniBand" or "Ethernet" */
	char netdev[64];      /* the RoCE netdev, "" if none */
};

struct diag_net {
	struct diag_netif ifs[DIAG_MAX_NETIFS];
	int nifs;
	struct diag_rdma_port ports[DIAG_MAX_RDMA_PORTS];
	int nports;
};

/* Read `sysfs`/class/net and `sysfs`/class/infiniband (sysfs NULL = "/sys"). A missing
 * class/infiniband is no RDMA (nports 0). ASCENT_EIO when class/net cannot be read. */
int diag_net_scan(const char *sysfs, struct diag_net *out /* OUT */);
/* RoCE: the largest IB MTU in {256, 512, 1024, 2048, 4096} that fits the netdev MTU minus the
 * 96 bytes of RoCE headers (Linux iboe_get_mtu): 1500 → 1024, >= 4192 → 4096; 0 if < 352. */
int diag_roce_mtu(int netdev_mtu);
/* NCCL/HCCL *_SOCKET_IFNAME grammar: comma list of prefixes; "=name" exact; a leading "^" makes
 * the whole list an exclusion. Returns 1 if `ifname` is selected. */
int diag_ifname_match(const char *spec, const char *ifname);

struct diag_net_opts {
	const char *sysfs;      /* NULL = "/sys" */
	const char *iface;      /* --iface: an exact interface that carries training traffic */
	int expect_mtu;         /* --expect-mtu: minimum netdev MTU of training interfaces; 0 = none */
	int expect_rdma_mtu;    /* minimum RDMA MTU of RoCE ports / training RDMA netdevs; default 4096 */
	struct comm *comm;      /* NULL: this host only; else every rank's training interface MTU is
				 * gathered and compared across hosts (net.mtu.hosts; collective) */
};
/* `ascent diag net`: per-interface and per-port data, checks for training interfaces. */
int diag_net_run(const struct diag_net_opts *o, struct diag_report *r);

/* One rank's training interface (the first one selected, else the first non-loopback one up). */
struct diag_net_host {
	char host[64];
	char iface[64];         /* "" when the rank has none */
	int mtu;                /* -1 unknown */
};
/* Across ranks: h[i] is rank i's training interface. Adds "net.mtu.hosts": PASS when every host's
 * training interface has the same MTU, else FAIL naming each host (and interface) whose MTU differs
 * from the MTU most hosts have — on one Ethernet segment a frame larger than the receiver's MTU is
 * dropped without an error (no router sends "fragmentation needed"), so RoCE, UDP and any transfer
 * that does not negotiate its segment size stall against that host. SKIP for one host. */
int diag_net_compare_hosts(const struct diag_net_host *h, int n, struct diag_report *r);

/* ------------------------------------------------------------------------------------------ */
/* Environment (env.c) */

/* One rank's view of the launcher environment (what diag env compares across ranks). */
struct diag_env_rank {
	char host[64];
	int rank, world_size, local_rank, local_world_size;   /* -1 unknown */
	char master_addr[128];
	int master_port;                                      /* -1 unknown */
	char timeouts[256];                                   /* "VAR=value;..." as set, for diffing */
};

/* Fill `e` from the process environment and gethostname(); adds env.launcher checks for values
 * that are not integers or disagree between RANK / OMPI_COMM_WORLD_* / PMI_* / PMIX_*. */
int diag_env_launcher(struct diag_report *r, struct diag_env_rank *e /* OUT */);
/* Across ranks: duplicate (host, local rank) pairs, duplicate or missing ranks (gaps), world sizes
 * or masters or timeouts that differ → FAIL naming ranks and hosts. */
int diag_env_compare_ranks(const struct diag_env_rank *e, int n, struct diag_report *r);
/* Timeouts of each layer (ASCENT_COMM_TIMEOUT, HCCL_*, NCCL/PyTorch): the table goes into
 * r->data "timeouts"; inconsistencies become checks. Reads the process environment. */
int diag_env_timeouts(struct diag_report *r);
/* Threads per rank × ranks on host against cores (WARN when oversubscribed). */
int diag_env_threads(struct diag_report *r, int threads_per_rank, int ranks_on_host, int cores);
/* OpenBLAS core against the CPU: a generic core (Prescott, Core2, Atom, Nehalem...) on a CPU with
 * AVX2 or AVX-512 → WARN naming the right OPENBLAS_CORETYPE and the speed-up. */
int diag_env_blas_core(struct diag_report *r, const char *corename, const struct cpu_info *ci);
/* RLIMIT_MEMLOCK for RDMA: `limit` bytes (RLIM_INFINITY as UINT64_MAX); WARN when RDMA devices
 * exist and the limit is finite. */
int diag_env_memlock(struct diag_report *r, uint64_t limit, int rdma_devices);
/* Free memory (bytes available, total) and free disk at `path` against minimums → FAIL below. */
int diag_env_free(struct diag_report *r, int64_t mem_avail, int64_t mem_total, int64_t min_mem,
		  const char *path, int64_t disk_free, int64_t min_disk);

struct diag_env_opts {
	const char *disk_path;   /* where checkpoints go; NULL = "." */
	int64_t min_mem;         /* bytes; 0 = 1 GiB */
	int64_t min_disk;        /* bytes; 0 = 1 GiB */
	const char *sysfs;       /* for the RDMA device count; NULL = "/sys" */
	struct comm *comm;       /* NULL: this process only; else the launcher views are gathered and
				  * compared (env.ranks) and checked against MPI's rank and size */
};
int diag_env_run(const struct diag_env_opts *o, struct diag_report *r);

/* ------------------------------------------------------------------------------------------ */
/* Memory estimator (mem.c) */

enum diag_precision { DIAG_FP32 = 0, DIAG_BF16 = 1, DIAG_FP16 = 2 };
enum diag_schedule { DIAG_1F1B = 0, DIAG_GPIPE = 1 };

struct diag_mem_layout {
	int dp, tp, pp;          /* parallel sizes, >= 1 */
	int zero;                /* 0..3 */
	enum diag_precision precision;
	enum diag_schedule schedule;
	int microbatches;        /* m per step, >= 1 */
	int recompute;           /* 1: full activation recompute per layer */
	int batch;               /* micro-batch size (sequences per micro-batch per DP rank) */
	int seq;                 /* T */
	int ascent;              /* 1: count what ascent's own trainer allocates (fp32 parameters, gradients
				  * and AdamW moments at every precision, the full gradient block under
				  * ZeRO-2/3, DP/TP collectives in place, the pipeline's send/receive buffers
				  * and the tied-embedding exchange); 0: the generic mixed-precision
				  * accounting (2+2+12 B/param, ZeRO-2/3 sharding, DDP's 2 x 25 MiB buckets) */
	int threads;             /* OpenMP threads per rank (the attention's per-thread scratch); 0: as
				  * many as this process would use */
};

enum diag_mem_cat {
	DIAG_MEM_PARAMS, DIAG_MEM_GRADS, DIAG_MEM_OPTIMIZER, DIAG_MEM_ACTIVATIONS, DIAG_MEM_COMM,
	DIAG_MEM_WORKSPACE, DIAG_MEM_NCAT
};
/* "params", "grads", "optimizer", "activations", "comm_buffers", "workspace" */
const char *diag_mem_cat_name(enum diag_mem_cat c);
/* The profiler's mem_event category (enum db_mem_cat) that measures estimator category c. */
int diag_mem_cat_db(enum diag_mem_cat c);

struct diag_mem_estimate {
	int stage;                        /* the pipeline stage this is for */
	int layers;                       /* transformer layers on this stage */
	double params;                    /* parameter elements held by one rank of this stage */
	int64_t bytes[DIAG_MEM_NCAT];     /* per rank */
	int64_t total;
	int64_t act_per_microbatch;       /* activation bytes of one micro-batch on this stage (one nn
					   * activation slot: its float block and its token ids) */
	int in_flight;                    /* micro-batches whose activations are alive at the peak */
};

/* ASCENT_EINPUT naming the field for an impossible layout (tp not dividing heads, pp > layers...). */
int diag_mem_layout_validate(const struct nn_config *c, const struct diag_mem_layout *l);
/* Estimate every stage; out has l->pp entries; returns the index of the largest total. */
int diag_mem_estimate(const struct nn_config *c, const struct diag_mem_layout *l,
		      struct diag_mem_estimate *out /* OUT: l->pp entries */);
/* Activation bytes of one micro-batch for `layers` layers (+ embeddings/head when first/last): the
 * size of one nn activation slot (nn/gpt.c slot_layout: residual stream (layers+1)·N·C, the stacked
 * per-layer tensors unless recompute, the head's lnf/logits/lse/losses; token ids 2·N int32). */
int64_t diag_mem_activation_bytes(const struct nn_config *c, const struct diag_mem_layout *l, int layers,
				  int first, int last);

struct diag_mem_fit {
	struct diag_mem_layout l;
	int64_t peak;        /* the largest stage's total per rank */
	double bubble;       /* (p-1)/(m+p-1) */
};
/* All layouts with dp·tp·pp == world (zero 0..3 when dp > 1, microbatches from {m} or
 * {1,2,4,8,16} with m >= pp when pp > 1) whose peak fits `budget` bytes, ranked: fewest
 * model-parallel ranks (tp·pp), then lower ZeRO stage, then smaller bubble, then lower peak.
 * *out is malloc'd (caller frees); *n its length. */
int diag_mem_fit_search(const struct nn_config *c, const struct diag_mem_layout *base, int world,
			int64_t budget, int fixed_microbatches, struct diag_mem_fit **out, int *n);

struct diag_mem_opts {
	struct nn_config model;
	struct diag_mem_layout layout;
	int64_t fit;            /* --fit budget bytes per device; 0 = no search */
	int world;              /* for --fit: total ranks; 0 = dp·tp·pp */
	int fixed_microbatches; /* for --fit: keep --microbatches fixed */
	int ranks_on_host;      /* for the host-memory check; 0 = from the environment */
	const char *check_db;   /* --check RUN.db: compare with the peaks measured in that profile */
};
/* `ascent diag mem`: estimate, r->data "per_rank" bytes by category, "stages", optional "fit".
 * With o->check_db, also diag_mem_check (the layout should then come from the run:
 * diag_mem_opts_from_db). */
int diag_mem_run(const struct diag_mem_opts *o, struct diag_report *r);
/* Fill o->model and o->layout from a profile's run row (config_json of `ascent train`): preset or
 * n_layer/n_head/n_embd/vocab_size/max_seq, dp/tp/pp/zero, precision, schedule, microbatches
 * (0 = pp), recompute, micro-batch = batch / dp / microbatches, seq; sets layout.ascent = 1.
 * Overwrites o->model and o->layout (the caller applies its own options afterwards).
 * ASCENT_EINPUT when the database has no run row or its config is not a training config. */
int diag_mem_opts_from_db(const char *path, struct diag_mem_opts *o);
/* Compare the estimate of o (every stage) with the per-rank, per-category peaks the profiler
 * measured in `path` (mem_event, read through db/): each rank is compared with the estimate of its
 * pipeline stage (rank.pp_rank). Adds "mem.check.<category>" per category that both have: PASS when
 * the worst rank's relative error |estimate − measured| / measured ≤ 10 %, WARN ≤ 25 %, FAIL beyond;
 * a category only one side has is WARN ("mem.check.<category>", unless both are 0). r->data gets
 * "check": {"db", "tolerance", "ranks": [{rank, stage, "estimate": {cat: bytes}, "measured":
 * {cat: bytes}, "rel_err": {cat: x}}]}, and "measured_per_rank" (rank 0's row, bytes by category).
 * ASCENT_EINPUT when the profile has no memory events. */
int diag_mem_check(const struct diag_mem_opts *o, const char *path, struct diag_report *r);
/* Read a layout/model from a JSON config ("model": preset name or {n_layer,...}; "dp", "tp", ...);
 * fields absent keep their value in `o`. */
int diag_mem_load_config(const char *path, struct diag_mem_opts *o);

/* ------------------------------------------------------------------------------------------ */
/* Hang analysis (hang.c) */

/* `ascent diag hang RUN_DIR`: read RUN_DIR/flight/rank-*.json (comm/'s flight-recorder dumps) and
 * add checks "hang.dumps", "hang.stuck" (FAIL when an operation had been pending for min_wait_s
 * seconds or more when its dump was written; shorter ones go to "in_flight"), "hang.missing" (FAIL
 * naming, per communicator with a call pending that long, the members that never reached the first
 * sequence number some members started — however many non-blocking calls are in flight);
 * r->data gets "stuck": [{rank, comm, comm_id, op, seq, p2p, peer, state, waited_s, pending}] (each
 * rank's oldest pending call and how many it has pending), "missing": [{rank, comm, comm_id, op,
 * seq, dump, last_enqueued, last_completed}], "in_flight": [{rank, comm, op, seq, waited_s}],
 * "dumps": [ranks], "run_dir".
 * ASCENT_EINPUT when there are no dumps or one is not a dump. */
int diag_hang_run(const char *run_dir, double min_wait_s, struct diag_report *r);

/* ------------------------------------------------------------------------------------------ */
/* Collective benchmark, connectivity and pairwise bandwidth (comm_bench.c): `ascent diag comm` */

enum diag_comm_op {
	DIAG_OP_ALLREDUCE = 0, DIAG_OP_ALLGATHER, DIAG_OP_REDUCESCATTER, DIAG_OP_BROADCAST, DIAG_OP_ALLTOALL,
	DIAG_OP_SENDRECV, DIAG_OP_COUNT
};
const char *diag_comm_op_name(int op);            /* "allreduce", ..., "sendrecv"; "?" out of range */
/* nccl-tests busbw = algbw × factor: allreduce 2(n−1)/n; allgather, reducescatter, alltoall (n−1)/n;
 * broadcast and sendrecv 1. */
double diag_comm_busbw_factor(int op, int n);
/* "allreduce,allgather" → bit mask (1 << op). ASCENT_EUSAGE naming an unknown op. */
int diag_comm_parse_ops(const char *list, unsigned *mask /* OUT */);

/* Slow-rank and slow-link detection on a pairwise bandwidth matrix gbs[i·n + j] (GB/s, symmetric,
 * diagonal ignored, ≤ 0 = not measured). Links are of two kinds, judged separately: `between` (n·n
 * flags, symmetric; NULL = all links alike) marks the links that join two hosts (the network), the
 * others are inside a host (shared memory) — a network link is not slow for being slower than shared
 * memory. The rule, stated in every finding:
 *   a rank's score of a kind is its BEST link of that kind; the reference of a kind is the median of
 *   the ranks' scores of that kind; a rank is slow when every kind it has links of scores below
 *   ratio × that kind's reference (every one of its links is slow, so the rank is the common cause);
 *   among links whose two ends are not slow ranks, a link is slow when its bandwidth < ratio × the
 *   median of those links of its kind.
 * Needs n ≥ 3 (with 2 ranks one link cannot tell a slow rank from a slow link): returns 0 and sets
 * nothing for n < 3. slow_rank (n flags) and slow_link (n·n flags, symmetric) are OUT; rank_ref[k] and
 * link_ref[k] get the medians of kind k (0: inside hosts, 1: between hosts; 0 when there is none).
 * Returns the number of slow ranks + slow links. */
int diag_comm_find_slow(const double *gbs, const unsigned char *between, int n, double ratio,
			int *slow_rank /* OUT */, int *slow_link /* OUT */, double rank_ref[2] /* OUT */,
			double link_ref[2] /* OUT */);

struct diag_comm_opts {
	struct comm *comm;       /* required: the world of comm_init (one process is fine) */
	unsigned ops;            /* bit (1 << enum diag_comm_op); 0 = all six */
	int64_t min_bytes, max_bytes;   /* -b/-e (defaults 8 and 16 MiB) */
	double factor;           /* -f size multiplier (default 4) */
	int iters, warmup;       /* per size (defaults 20 and 5) */
	int check;               /* 1: verify every result exactly (nccl-tests -c 1); 0: #wrong N/A */
	double min_busbw;        /* GB/s; FAIL when the average busbw < 0.9 × this (nccl-tests); 0 = off */
	int raw;                 /* 1: also time plain MPI_Allreduce (comm_raw_allreduce) per size */
	double conn_timeout_s;   /* connectivity sweep: each pair must answer within this (default 5 s) */
	int64_t matrix_bytes;    /* pairwise bandwidth message size (default 1 MiB); < 0 = no matrix */
	int matrix_iters;        /* exchanges per pair, the best one counts (default 5) */
	double slow_ratio;       /* outlier threshold for diag_comm_find_slow (default 0.5) */
	FILE *out;               /* rank 0 prints the nccl-tests tables, sweep and matrix here; NULL = none */
};
/* Run the benchmark (collective over the world: every rank calls it with the same options).
 * Adds checks "comm.<op>.wrong" (FAIL when any element was wrong, summed over ranks),
 * "comm.busbw" (FAIL below --min-busbw), "comm.connectivity" (FAIL naming unanswered pairs with
 * hosts), "comm.slow_rank" and "comm.slow_link" (WARN naming ranks/links and hosts, the rule and
 * threshold in the message; SKIP below 3 ranks). r->data gets "rows" [{op, bytes, count, type,
 * redop, root, time_us, algbw_gbs, busbw_gbs, wrong (-1 = not checked), in_place, min_us,
 * median_us, max_us}], "raw" (with opts.raw), "matrix" {bytes, ranks: [{rank, host}], gbs: n×n,
 * rule}, "connectivity" {timeout_s, pairs: [{a, b, us, ok}]}, "avg_busbw_gbs", "out_of_bounds".
 * Every rank gets the same checks. */
int diag_comm_run(const struct diag_comm_opts *o, struct diag_report *r);

/* ------------------------------------------------------------------------------------------ */
/* Storing a report in a profile database (report_db.c): `diag ... --db FILE` */

/* Append every check of `r` to the diag_check table of the profile database at `path` (created
 * when it does not exist, else opened for update — a run's trace.db gets its pre-flight results):
 * ts_utc_ns = now, name, status, detail = the message and " | fix: ..." when there is a fix; value
 * and unit stay NULL except "comm.avg_busbw" rows (GB/s), one per report that ran diag comm,
 * status PASS. One transaction. ASCENT_EINPUT when `path` exists and is not a profile database. */
int diag_report_store(const struct diag_report *r, const char *path);

/* ------------------------------------------------------------------------------------------ */
/* The advisor (advise.c, advise_rules.c): `ascent advise RUN.db` */

struct db;

enum diag_severity { DIAG_SEV_LOW = 0, DIAG_SEV_MEDIUM = 1, DIAG_SEV_HIGH = 2 };
const char *diag_severity_name(enum diag_severity s);    /* "Low", "Medium", "High" */

struct diag_finding {
	char rule[48];            /* stable id: "compute.free_time", "comm.exposed", "rank.slow", ... */
	enum diag_severity severity;
	char title[256];          /* one line: what is wrong, with the main number */
	char evidence[2048];      /* the numbers, steps, ranks (with hosts) behind it */
	char query[1024];         /* SQL a user can run with the sqlite3 shell to see the same numbers */
	char fix[768];            /* what to change */
	double value, threshold;  /* the measured figure and the threshold it crossed (same unit) */
};

enum diag_rule_state { DIAG_RULE_OK = 0, DIAG_RULE_FIRED = 1, DIAG_RULE_SKIPPED = 2 };
struct diag_rule_result {
	char rule[48];
	enum diag_rule_state state;
	char note[512];           /* OK: the figure that stayed under the threshold; SKIPPED: why */
};

struct diag_advice {
	struct diag_finding *f;   /* n findings, High first (stable within a severity); owned */
	int n, cap;
	struct diag_rule_result *rules;   /* every rule that ran, in order; owned */
	int nrules, cap_rules;
};
void diag_advice_init(struct diag_advice *a);
void diag_advice_release(struct diag_advice *a);   /* accepts a zeroed struct */
const struct diag_finding *diag_advice_find(const struct diag_advice *a, const char *rule);
const struct diag_rule_result *diag_advice_rule(const struct diag_advice *a, const char *rule);

/* Run every rule on `db` (read through db/ only). Meta keys read when present (written by the
 * trainer or by hand with the sqlite3 shell): blas_core, blas_threads (threads per rank),
 * host_cores (cores per host), cpu_isa ("avx2 avx512f ..."), mem_limit_bytes (per rank), and
 * host_mem_bytes (per host). The run row's config_json gives pp, microbatches, virtual_stages.
 * A rule without the data it needs is SKIPPED with the reason, never guessed. */
int diag_advise(struct db *db, struct diag_advice *out /* OUT: initialised here */);
/* Table: findings (severity, rule, title, evidence, query, fix), then the rules that passed or
 * were skipped. JSON: {"db", "findings": [{rule, severity, title, evidence, query, fix, value,
 * threshold}], "rules": [{rule, state, note}], "summary": {high, medium, low}}. */
void diag_advice_print(FILE *f, const struct diag_advice *a, const char *db_path);
int diag_advice_print_json(FILE *f, const struct diag_advice *a, const char *db_path);
/* `ascent advise PATH [--format table|json]`: open read-only, advise, print. */
int diag_advise_run(const char *path, const char *format, FILE *out);

#endif
