/* diag/comm_bench.c — `ascent diag comm`: the collective benchmark in nccl-tests' format (preamble,
 * table of out-of-place and in-place results, `# Out of bounds values` and `# Avg bus bandwidth`
 * footers), exact correctness checks, a connectivity sweep over every pair of ranks, and a pairwise
 * bandwidth matrix with slow-rank and slow-link detection. Everything goes through comm/ (the
 * traced path a training job uses); `--raw` also times plain MPI_Allreduce for comparison.
 *
 * Correctness (nccl-tests' scheme, docs/background.md): inputs are integer-valued floats in [0, 1023],
 * so every sum over up to 2^14 ranks is exact; receive buffers are poisoned with NaN first; an
 * element is wrong unless it equals the expectation exactly; wrong counts are summed over ranks
 * and the ranks that saw them are named with their hosts.
 *
 * Test knob: ASCENT_DIAG_CORRUPT=R makes world rank R add 1 to the first received element of every
 * check run before counting (a flipped value in transit), so tests can prove that wrong results
 * are caught, counted and attributed to the right rank. Never set it outside tests. */
#include "diag/diag.h"
#include "comm/comm.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const OP_NAMES[DIAG_OP_COUNT] = { "allreduce", "allgather", "reducescatter",
						     "broadcast", "alltoall", "sendrecv" };

const char *diag_comm_op_name(int op)
{
	return op >= 0 && op < DIAG_OP_COUNT ? OP_NAMES[op] : "?";
}

double diag_comm_busbw_factor(int op, int n)
{
	if (n < 1)
		return 0;
	switch (op) {
	case DIAG_OP_ALLREDUCE: return 2.0 * (n - 1) / n;
	case DIAG_OP_ALLGATHER:
	case DIAG_OP_REDUCESCATTER:
	case DIAG_OP_ALLTOALL: return (double)(n - 1) / n;
	default: return 1.0;
	}
}

int diag_comm_parse_ops(const char *list, unsigned *mask)
{
	*mask = 0;
	char buf[256];
	snprintf(buf, sizeof buf, "%s", list);
	char *save = NULL;
	for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int found = -1;
		for (int i = 0; i < DIAG_OP_COUNT; i++)
			if (!strcmp(t, OP_NAMES[i]))
				found = i;
		if (found < 0)
			return ascent_error(ASCENT_EUSAGE,
					    "unknown collective '%s' in --ops (choose from allreduce, allgather, "
					    "reducescatter, broadcast, alltoall, sendrecv)", t);
		*mask |= 1u << found;
	}
	if (!*mask)
		return ascent_error(ASCENT_EUSAGE, "--ops '%s' names no collective (e.g. --ops allreduce,allgather)", list);
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Slow ranks and links */

int diag_comm_find_slow(const double *gbs, const unsigned char *between, int n, double ratio, int *slow_rank,
			int *slow_link, double rank_ref[2], double link_ref[2])
{
	rank_ref[0] = rank_ref[1] = link_ref[0] = link_ref[1] = 0;
	if (n < 3)
		return 0;
	memset(slow_rank, 0, (size_t)n * sizeof *slow_rank);
	memset(slow_link, 0, (size_t)n * (size_t)n * sizeof *slow_link);
	double *score = calloc(2 * (size_t)n, sizeof *score), *tmp = calloc((size_t)n * (size_t)n, sizeof *tmp);
	if (!score || !tmp) {
		free(score);
		free(tmp);
		return 0;
	}
#define KIND(i, j) (between ? between[(i) * n + (j)] != 0 : 0)
	/* each rank's best link of each kind; the reference of a kind is the median over the ranks
	 * that have links of that kind */
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			if (i != j && gbs[i * n + j] > score[KIND(i, j) * n + i])
				score[KIND(i, j) * n + i] = gbs[i * n + j];
	for (int kind = 0; kind < 2; kind++) {
		int m = 0;
		for (int i = 0; i < n; i++)
			if (score[kind * n + i] > 0)
				tmp[m++] = score[kind * n + i];
		rank_ref[kind] = stats_median(tmp, m);
	}
	int found = 0;
	for (int i = 0; i < n; i++) {
		int kinds = 0, slow = 0;
		for (int kind = 0; kind < 2; kind++)
			if (score[kind * n + i] > 0) {
				kinds++;
				slow += score[kind * n + i] < ratio * rank_ref[kind];
			}
		if (kinds && slow == kinds) {
			slow_rank[i] = 1;
			found++;
		}
	}
	for (int kind = 0; kind < 2; kind++) {
		int m = 0;
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				if (!slow_rank[i] && !slow_rank[j] && gbs[i * n + j] > 0 && KIND(i, j) == kind)
					tmp[m++] = gbs[i * n + j];
		link_ref[kind] = stats_median(tmp, m);
		for (int i = 0; i < n; i++)
			for (int j = i + 1; j < n; j++)
				if (!slow_rank[i] && !slow_rank[j] && gbs[i * n + j] > 0 && KIND(i, j) == kind &&
				    gbs[i * n + j] < ratio * link_ref[kind]) {
					slow_link[i * n + j] = slow_link[j * n + i] = 1;
					found++;
				}
	}
#undef KIND
	free(score);
	free(tmp);
	return found;
}

/* ------------------------------------------------------------------------------------------ */
/* The benchmark */

struct bench {
	const struct diag_comm_opts *o;
	struct comm *c;
	int n, me;
	char (*hosts)[64];        /* n host names */
	float *s, *r;             /* send / receive buffers, cap floats each */
	size_t cap;
	double *times;            /* iters */
	struct diag_report *rep;
	cJSON *rows, *raw;
	FILE *out;                /* rank 0 only */
	int64_t oob;              /* wrong elements over every op */
	int64_t *wrong_by_rank;   /* n: wrong elements seen by each rank in the current op */
	double bw_sum;
	int bw_n;
};

struct layout {
	size_t c;                 /* the count column: elements per rank (per peer for alltoall) */
	size_t scount, rcount;    /* elements in the send and receive buffers */
	int64_t bytes;            /* the size column */
};

static int layout_of(int op, int64_t size, int n, struct layout *L)
{
	size_t e = (size_t)(size / 4);
	switch (op) {
	case DIAG_OP_ALLGATHER:
		L->c = e / (size_t)n, L->scount = L->c, L->rcount = L->c * (size_t)n;
		L->bytes = (int64_t)(L->rcount * 4);
		break;
	case DIAG_OP_REDUCESCATTER:
		L->c = e / (size_t)n, L->scount = L->c * (size_t)n, L->rcount = L->c * (size_t)n;
		L->bytes = (int64_t)(L->scount * 4);
		break;
	case DIAG_OP_ALLTOALL:
		L->c = e / (size_t)n, L->scount = L->rcount = L->c * (size_t)n;
		L->bytes = (int64_t)(L->scount * 4);
		break;
	default:
		L->c = L->scount = L->rcount = e;
		L->bytes = (int64_t)(e * 4);
	}
	return L->c > 0;
}

static int has_variant(int op, int in_place)
{
	if (op == DIAG_OP_BROADCAST)
		return in_place;      /* MPI_Bcast works on one buffer */
	if (op == DIAG_OP_ALLTOALL || op == DIAG_OP_SENDRECV)
		return !in_place;     /* no in-place form in comm/ */
	return 1;
}

static int run_once(struct bench *b, int op, int in_place, const struct layout *L)
{
	struct comm *c = b->c;
	size_t k = L->c;
	switch (op) {
	case DIAG_OP_ALLREDUCE:
		return comm_allreduce(c, COMM_WORLD, in_place ? b->r : b->s, b->r, k, COMM_F32, COMM_SUM);
	case DIAG_OP_ALLGATHER:
		return comm_allgather(c, COMM_WORLD, in_place ? NULL : b->s, b->r, k, COMM_F32);
	case DIAG_OP_REDUCESCATTER:
		return comm_reduce_scatter(c, COMM_WORLD, in_place ? NULL : b->s, b->r, k, COMM_F32, COMM_SUM);
	case DIAG_OP_BROADCAST:
		return comm_broadcast(c, COMM_WORLD, b->r, k, COMM_F32, 0);
	case DIAG_OP_ALLTOALL:
		return comm_alltoall(c, COMM_WORLD, b->s, b->r, k, COMM_F32);
	case DIAG_OP_SENDRECV: {
		struct comm_req *q[2] = { NULL, NULL };
		int next = (b->me + 1) % b->n, prev = (b->me + b->n - 1) % b->n;
		int rc = comm_irecv(c, COMM_WORLD, b->r, k, COMM_F32, prev, 7, &q[0]);
		if (!rc)
			rc = comm_isend(c, COMM_WORLD, b->s, k, COMM_F32, next, 7, &q[1]);
		int wrc = comm_waitall(c, q, 2);
		return rc ? rc : wrc;
	}
	}
	return ascent_error(ASCENT_EINTERNAL, "diag comm: bad op %d", op);
}

/* Integer-valued input of rank r at element i: exact in fp32, sums exact to 2^14 ranks. */
static float val(int r, size_t i)
{
	return (float)(((size_t)r * 131u + i * 7u + 13u) % 1024u);
}

static void fill(struct bench *b, int op, int in_place, const struct layout *L)
{
	size_t k = L->c;
	int me = b->me;
	for (size_t i = 0; i < L->rcount; i++)
		b->r[i] = NAN;
	float *src = in_place ? b->r : b->s;
	switch (op) {
	case DIAG_OP_ALLREDUCE:
	case DIAG_OP_SENDRECV:
		for (size_t i = 0; i < k; i++)
			src[i] = val(me, i);
		break;
	case DIAG_OP_ALLGATHER:
		for (size_t i = 0; i < k; i++)
			(in_place ? b->r + (size_t)me * k : b->s)[i] = val(me, i);
		break;
	case DIAG_OP_REDUCESCATTER:
	case DIAG_OP_ALLTOALL:
		for (size_t i = 0; i < L->scount; i++)
			src[i] = val(me, i);
		break;
	case DIAG_OP_BROADCAST:
		if (me == 0)
			for (size_t i = 0; i < k; i++)
				b->r[i] = val(0, i);
		break;
	}
}

static float sum_over_ranks(int n, size_t i)
{
	double s = 0;
	for (int j = 0; j < n; j++)
		s += val(j, i);
	return (float)s;
}

static int64_t count_wrong(struct bench *b, int op, const struct layout *L)
{
	size_t k = L->c;
	int n = b->n, me = b->me;
	int64_t bad = 0;
	switch (op) {
	case DIAG_OP_ALLREDUCE:
		for (size_t i = 0; i < k; i++)
			bad += !(b->r[i] == sum_over_ranks(n, i));
		break;
	case DIAG_OP_ALLGATHER:
		for (int j = 0; j < n; j++)
			for (size_t i = 0; i < k; i++)
				bad += !(b->r[(size_t)j * k + i] == val(j, i));
		break;
	case DIAG_OP_REDUCESCATTER:
		for (size_t i = 0; i < k; i++)
			bad += !(b->r[i] == sum_over_ranks(n, (size_t)me * k + i));
		break;
	case DIAG_OP_BROADCAST:
		for (size_t i = 0; i < k; i++)
			bad += !(b->r[i] == val(0, i));
		break;
	case DIAG_OP_ALLTOALL:
		for (int j = 0; j < n; j++)
			for (size_t i = 0; i < k; i++)
				bad += !(b->r[(size_t)j * k + i] == val(j, (size_t)me * k + i));
		break;
	case DIAG_OP_SENDRECV:
		for (size_t i = 0; i < k; i++)
			bad += !(b->r[i] == val((me + n - 1) % n, i));
		break;
	}
	return bad;
}

struct timing {
	double mean_us;                 /* averaged over ranks (nccl-tests -a 1) */
	double min_us, med_us, max_us;  /* over iterations of the slowest rank in each iteration */
};

/* Time `iters` calls (after `warmup`) of run_once or, with raw, of plain MPI_Allreduce. */
static int time_it(struct bench *b, int op, int in_place, const struct layout *L, int raw, struct timing *t)
{
	const struct diag_comm_opts *o = b->o;
	int rc = 0;
	for (int w = 0; w < o->warmup && !rc; w++)
		rc = raw ? comm_raw_allreduce(b->c, COMM_WORLD, b->s, b->r, L->c, COMM_F32, COMM_SUM)
			 : run_once(b, op, in_place, L);
	if (!rc)
		rc = comm_barrier(b->c, COMM_WORLD);
	double total = 0;
	for (int it = 0; it < o->iters && !rc; it++) {
		int64_t t0 = clock_ns();
		rc = raw ? comm_raw_allreduce(b->c, COMM_WORLD, b->s, b->r, L->c, COMM_F32, COMM_SUM)
			 : run_once(b, op, in_place, L);
		b->times[it] = (double)(clock_ns() - t0) / 1e3;
		total += b->times[it];
	}
	if (rc)
		return rc;
	double mean = total / o->iters;
	if ((rc = comm_allreduce(b->c, COMM_WORLD, NULL, b->times, (size_t)o->iters, COMM_F64, COMM_MAX)) ||
	    (rc = comm_allreduce(b->c, COMM_WORLD, NULL, &mean, 1, COMM_F64, COMM_SUM)))
		return rc;
	t->mean_us = mean / b->n;
	t->med_us = stats_median(b->times, o->iters);   /* sorts the times */
	t->min_us = b->times[0];
	t->max_us = b->times[o->iters - 1];
	return 0;
}

/* Check one variant: fill, run once, count wrong elements; *wrong summed over ranks, each rank's
 * count added to b->wrong_by_rank. */
static int check_it(struct bench *b, int op, int in_place, const struct layout *L, int64_t *wrong)
{
	fill(b, op, in_place, L);
	int rc = run_once(b, op, in_place, L);
	if (rc)
		return rc;
	const char *corrupt = getenv("ASCENT_DIAG_CORRUPT");
	if (corrupt && *corrupt && atoi(corrupt) == b->me)
		b->r[0] += 1.0f;
	int64_t mine = count_wrong(b, op, L);
	int64_t *all = calloc((size_t)b->n, sizeof *all);
	if (!all)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	rc = comm_allgather(b->c, COMM_WORLD, &mine, all, 1, COMM_I64);
	*wrong = 0;
	for (int i = 0; i < b->n && !rc; i++) {
		*wrong += all[i];
		b->wrong_by_rank[i] += all[i];
	}
	free(all);
	return rc;
}

static const char *redop_of(int op)
{
	return op == DIAG_OP_ALLREDUCE || op == DIAG_OP_REDUCESCATTER ? "sum" : "none";
}

static int root_of(int op)
{
	return op == DIAG_OP_BROADCAST ? 0 : -1;
}

/* nccl-tests' time column: %7.0f above 10 ms, %7.1f above 100 µs, else %7.2f. */
static void fmt_time(char *buf, size_t n, double us)
{
	if (us >= 10000.0)
		snprintf(buf, n, "%7.0f", us);
	else if (us >= 100.0)
		snprintf(buf, n, "%7.1f", us);
	else
		snprintf(buf, n, "%7.2f", us);
}

static void add_row(struct bench *b, cJSON *arr, int op, const struct layout *L, int in_place, const struct timing *t,
		    int64_t wrong)
{
	double algbw = L->bytes / (t->mean_us * 1e3);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "op", diag_comm_op_name(op));
	cJSON_AddNumberToObject(o, "bytes", (double)L->bytes);
	cJSON_AddNumberToObject(o, "count", (double)L->c);
	cJSON_AddStringToObject(o, "type", "float");
	cJSON_AddStringToObject(o, "redop", redop_of(op));
	cJSON_AddNumberToObject(o, "root", root_of(op));
	cJSON_AddNumberToObject(o, "time_us", t->mean_us);
	cJSON_AddNumberToObject(o, "algbw_gbs", algbw);
	cJSON_AddNumberToObject(o, "busbw_gbs", algbw * diag_comm_busbw_factor(op, b->n));
	cJSON_AddNumberToObject(o, "wrong", (double)wrong);
	cJSON_AddBoolToObject(o, "in_place", in_place);
	cJSON_AddNumberToObject(o, "min_us", t->min_us);
	cJSON_AddNumberToObject(o, "median_us", t->med_us);
	cJSON_AddNumberToObject(o, "max_us", t->max_us);
	cJSON_AddItemToArray(arr, o);
}

static void print_cols(FILE *f, int present, const struct timing *t, int64_t bytes, double factor, int64_t wrong)
{
	if (!present) {
		fprintf(f, "  %7s  %6s  %6s  %5s", "-", "-", "-", "-");
		return;
	}
	char ts[32];
	fmt_time(ts, sizeof ts, t->mean_us);
	double algbw = bytes / (t->mean_us * 1e3);
	if (wrong >= 0)
		fprintf(f, "  %7s  %6.2f  %6.2f  %5g", ts, algbw, algbw * factor, (double)wrong);
	else
		fprintf(f, "  %7s  %6.2f  %6.2f  %5s", ts, algbw, algbw * factor, "N/A");
}

static void print_header(FILE *f)
{
	fprintf(f, "#\n# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n", "",
		"", "", "", "");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
		"root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong");
	fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "",
		"", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static int bench_op(struct bench *b, int op)
{
	const struct diag_comm_opts *o = b->o;
	FILE *f = b->out;
	if (op == DIAG_OP_SENDRECV && !comm_uses_mpi(b->c))   /* a send to oneself needs MPI */
		return diag_check_add(b->rep, DIAG_SKIP, "comm.sendrecv.wrong", NULL,
				      "sendrecv skipped: no MPI (ASCENT_NO_MPI is set) and one process");
	if (f) {
		fprintf(f, "#\n# Collective test: %s (%s_perf)\n", diag_comm_op_name(op), diag_comm_op_name(op));
		print_header(f);
	}
	int64_t op_wrong = 0;
	double bw_sum = 0;
	int bw_n = 0;
	char who[512] = "";
	int rc = 0;
	memset(b->wrong_by_rank, 0, (size_t)b->n * sizeof *b->wrong_by_rank);
	for (int64_t size = o->min_bytes; size <= o->max_bytes && !rc;) {
		struct layout L;
		if (layout_of(op, size, b->n, &L)) {
			struct timing t[2];
			memset(t, 0, sizeof t);
			int64_t wrong[2] = { -1, -1 };
			for (int ip = 0; ip < 2 && !rc; ip++) {
				if (!has_variant(op, ip))
					continue;
				fill(b, op, ip, &L);
				if ((rc = time_it(b, op, ip, &L, 0, &t[ip])))
					break;
				if (o->check && (rc = check_it(b, op, ip, &L, &wrong[ip])))
					break;
				if (wrong[ip] > 0)
					op_wrong += wrong[ip];
				add_row(b, b->rows, op, &L, ip, &t[ip], wrong[ip]);
				bw_sum += L.bytes / (t[ip].mean_us * 1e3) * diag_comm_busbw_factor(op, b->n);
				bw_n++;
			}
			if (!rc && f) {
				fprintf(f, "%12lld  %12zu  %8s  %6s  %6i", (long long)L.bytes, L.c, "float", redop_of(op),
					root_of(op));
				for (int ip = 0; ip < 2; ip++)
					print_cols(f, has_variant(op, ip), &t[ip], L.bytes, diag_comm_busbw_factor(op, b->n),
						   wrong[ip]);
				fputc('\n', f);
			}
		}
		int64_t next = (int64_t)((double)size * o->factor);
		size = next > size ? next : size + 1;
	}
	if (rc)
		return rc;
	double avg = bw_n ? bw_sum / bw_n : 0;
	b->oob += op_wrong;
	b->bw_sum += bw_sum;
	b->bw_n += bw_n;
	int below = o->min_busbw > 0 && avg < 0.9 * o->min_busbw;
	if (f) {
		fprintf(f, "# Out of bounds values : %lld %s\n", (long long)op_wrong, op_wrong ? "FAILED" : "OK");
		fprintf(f, "# Avg bus bandwidth    : %g %s\n", avg, o->min_busbw > 0 ? (below ? "FAILED" : "OK") : "");
		fprintf(f, "#\n");
	}
	for (int i = 0; i < b->n; i++)
		if (b->wrong_by_rank[i]) {
			size_t l = strlen(who);
			snprintf(who + l, sizeof who - l, "%srank %d (%s) %lld", l ? "; " : "", i, b->hosts[i],
				 (long long)b->wrong_by_rank[i]);
		}
	char name[64];
	snprintf(name, sizeof name, "comm.%s.wrong", diag_comm_op_name(op));
	if (!o->check)
		rc = diag_check_add(b->rep, DIAG_SKIP, name, NULL, "%s results not checked (--no-check)", diag_comm_op_name(op));
	else if (op_wrong)
		rc = diag_check_add(b->rep, DIAG_FAIL, name,
				    "a collective returns wrong data: rerun on the named hosts alone, compare library "
				    "versions (diag versions) and check memory (ECC, dmesg)",
				    "%lld wrong element(s) over %d rank(s): %s", (long long)op_wrong, b->n, who);
	else
		rc = diag_check_add(b->rep, DIAG_PASS, name, NULL,
				    "every element exact on all %d rank(s), %lld..%lld B (avg busbw %.3g GB/s)", b->n,
				    (long long)o->min_bytes, (long long)o->max_bytes, avg);
	if (!rc && o->min_busbw > 0) {
		snprintf(name, sizeof name, "comm.%s.busbw", diag_comm_op_name(op));
		rc = diag_check_add(b->rep, below ? DIAG_FAIL : DIAG_PASS, name,
				    below ? "find the slow rank or link below (slow_rank, slow_link), check the interface "
					    "(diag net) and that ranks are not oversubscribed (diag env)" : NULL,
				    "average bus bandwidth %.3f GB/s %s 0.9 x --min-busbw %.3f GB/s (nccl-tests' rule) on "
				    "%d rank(s)", avg, below ? "is below" : "meets", o->min_busbw, b->n);
	}
	return rc;
}

/* --raw: the same sizes through plain MPI_Allreduce (out of place), after the traced run. */
static int bench_raw(struct bench *b)
{
	const struct diag_comm_opts *o = b->o;
	FILE *f = b->out;
	if (f) {
		fprintf(f, "#\n# Plain MPI_Allreduce (comm_raw_allreduce: untraced, blocking), out-of-place, for comparison\n");
		fprintf(f, "# %10s  %12s  %7s  %6s  %6s  %7s %7s %7s\n", "size", "count", "time", "algbw", "busbw", "min",
			"median", "max");
		fprintf(f, "# %10s  %12s  %7s  %6s  %6s  %7s %7s %7s\n", "(B)", "(elements)", "(us)", "(GB/s)", "(GB/s)",
			"(us)", "(us)", "(us)");
	}
	for (int64_t size = o->min_bytes; size <= o->max_bytes;) {
		struct layout L;
		if (layout_of(DIAG_OP_ALLREDUCE, size, b->n, &L)) {
			struct timing t;
			fill(b, DIAG_OP_ALLREDUCE, 0, &L);
			int rc = time_it(b, DIAG_OP_ALLREDUCE, 0, &L, 1, &t);
			if (rc)
				return rc;
			add_row(b, b->raw, DIAG_OP_ALLREDUCE, &L, 0, &t, -1);
			if (f) {
				char ts[32];
				fmt_time(ts, sizeof ts, t.mean_us);
				double algbw = L.bytes / (t.mean_us * 1e3);
				fprintf(f, "%12lld  %12zu  %7s  %6.2f  %6.2f  %7.2f %7.2f %7.2f\n", (long long)L.bytes, L.c, ts,
					algbw, algbw * diag_comm_busbw_factor(DIAG_OP_ALLREDUCE, b->n), t.min_us, t.med_us,
					t.max_us);
			}
		}
		int64_t next = (int64_t)((double)size * o->factor);
		size = next > size ? next : size + 1;
	}
	return 0;
}

/* ------------------------------------------------------------------------------------------ */
/* Connectivity sweep and pairwise bandwidth */

/* Circle-method round robin: the partner of `me` in round k of an n-player tournament (n padded to
 * even); -1 when idle (paired with the padding). */
static int partner(int me, int n, int k)
{
	int N = n + (n & 1);
	int m = N - 1;
	int p;
	if (me == N - 1)
		p = k;
	else if (me == k)
		p = N - 1;
	else
		p = ((2 * k - me) % m + m) % m;
	return p >= n ? -1 : p;
}

/* A rank × rank table under a title line: a header of rank numbers, then a row per rank (rank, host)
 * whose off-diagonal cells `cell` prints (8 characters wide); the diagonal is "-". */
typedef void (*rank_cell_fn)(FILE *f, const void *ud, int i, int j);

static void rank_table_print(FILE *f, int n, char (*hosts)[64], rank_cell_fn cell, const void *ud)
{
	fprintf(f, "# %5s  %-16s", "rank", "host");
	for (int j = 0; j < n; j++)
		fprintf(f, " %8d", j);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		fprintf(f, "# %5d  %-16.16s", i, hosts[i]);
		for (int j = 0; j < n; j++) {
			if (i == j)
				fprintf(f, " %8s", "-");
			else
				cell(f, ud, i, j);
		}
		fputc('\n', f);
	}
}

/* The connectivity sweep, measured (conn_sweep_measure), then rendered: the JSON object
 * "connectivity", the text table and the comm.connectivity check. */
struct conn_sweep {
	int n;
	double timeout_s;
	double *rtt;                 /* n×n: rank i's round trip to j in µs; negative = answered only after
				      * the timeout (its -µs), -1e-3 = wrong payload */
};

/* One pair of rtt: ok (both ways answered in time), late (a way answered only after the timeout), and
 * the slower way's µs. */
static int conn_pair(const struct conn_sweep *x, int i, int j, int *late, double *us)
{
	double a = x->rtt[i * x->n + j], b = x->rtt[j * x->n + i];
	*late = a < -1e-3 || b < -1e-3;
	*us = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
	return a > 0 && b > 0;
}

/* One round trip of 8 B with partner p: µs (> 0), -µs when it came only after the timeout, -1e-3
 * for a wrong payload. */
static int conn_round_trip(struct bench *b, int p, int64_t timeout_ns, double *rtt_us)
{
	int64_t out = 0x5eed0000 + b->me, in = 0;
	struct comm_req *q[2] = { NULL, NULL };
	int64_t t0 = clock_ns();
	int rc = comm_irecv(b->c, COMM_WORLD, &in, 1, COMM_I64, p, 11, &q[0]);
	if (!rc)
		rc = comm_isend(b->c, COMM_WORLD, &out, 1, COMM_I64, p, 11, &q[1]);
	int64_t answered = 0;
	while (!rc && (q[0] || q[1])) {
		int d;
		for (int j = 0; j < 2 && !rc; j++)
			if (q[j])
				rc = comm_test(b->c, &q[j], &d);
		if (!q[0] && !q[1])
			answered = clock_ns() - t0;
		else if (clock_ns() - t0 > timeout_ns) {
			/* too late: it is named in the check; keep waiting so MPI stays consistent (comm's
			 * watchdog stops the job if the peer never answers) */
			rc = comm_waitall(b->c, q, 2);
			answered = -(clock_ns() - t0);
		} else {
			usleep(20);
		}
	}
	if (!rc && in != 0x5eed0000 + p)
		answered = -1; /* wrong payload: as bad as no answer */
	*rtt_us = answered > 0 ? (double)answered / 1e3 : answered < -1 ? (double)answered / 1e3 : -1e-3;
	return rc;
}

/* Every pair exchanges 8 B both ways, one round of the round robin at a time; every rank ends with
 * the whole matrix. */
static int conn_sweep_measure(struct bench *b, struct conn_sweep *x)
{
	int n = b->n;
	x->n = n;
	x->timeout_s = b->o->conn_timeout_s;
	double *row = calloc((size_t)n, sizeof *row);
	x->rtt = malloc((size_t)n * (size_t)n * sizeof *x->rtt);
	if (!row || !x->rtt) {
		free(row);
		free(x->rtt);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	int rc = 0;
	int64_t timeout_ns = (int64_t)(x->timeout_s * 1e9);
	int N = n + (n & 1);
	for (int k = 0; k < N - 1 && !rc; k++) {
		/* a barrier per round, so a late pair of the previous round does not make its members
		 * look late to their next partners */
		if ((rc = comm_barrier(b->c, COMM_WORLD)))
			break;
		int p = partner(b->me, n, k);
		if (p >= 0)
			rc = conn_round_trip(b, p, timeout_ns, &row[p]);
	}
	if (!rc)
		rc = comm_allgather(b->c, COMM_WORLD, row, x->rtt, (size_t)n, COMM_F64);
	free(row);
	if (rc) {
		free(x->rtt);
		x->rtt = NULL;
	}
	return rc;
}

static void conn_sweep_json(const struct conn_sweep *x, cJSON *data)
{
	cJSON *conn = cJSON_AddObjectToObject(data, "connectivity");
	cJSON_AddNumberToObject(conn, "timeout_s", x->timeout_s);
	cJSON *pairs = cJSON_AddArrayToObject(conn, "pairs");
	for (int i = 0; i < x->n; i++)
		for (int j = i + 1; j < x->n; j++) {
			int late;
			double us;
			int ok = conn_pair(x, i, j, &late, &us);
			cJSON *pr = cJSON_CreateObject();
			cJSON_AddNumberToObject(pr, "a", i);
			cJSON_AddNumberToObject(pr, "b", j);
			cJSON_AddNumberToObject(pr, "us", us);
			cJSON_AddBoolToObject(pr, "ok", ok);
			cJSON_AddItemToArray(pairs, pr);
		}
}

static void conn_cell(FILE *f, const void *ud, int i, int j)
{
	const struct conn_sweep *x = ud;
	if (x->rtt[i * x->n + j] > 0)
		fprintf(f, " %8.1f", x->rtt[i * x->n + j]);
	else
		fprintf(f, " %8s", "TIMEOUT");
}

static void conn_sweep_print(const struct conn_sweep *x, char (*hosts)[64], FILE *f)
{
	fprintf(f, "#\n# Connectivity: every pair exchanges 8 B both ways within %g s (round trip, us)\n", x->timeout_s);
	rank_table_print(f, x->n, hosts, conn_cell, x);
}

/* comm.connectivity: every pair that did not answer in time, else the slowest pair. */
static int conn_sweep_check(const struct conn_sweep *x, char (*hosts)[64], struct diag_report *rep)
{
	int n = x->n, npairs = 0, nbad = 0, wa = -1, wb = -1;
	double worst = 0;
	char bad[768] = "";
	if (n < 2)
		return diag_check_add(rep, DIAG_SKIP, "comm.connectivity", NULL, "one rank: no pair to connect");
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			int late;
			double us;
			npairs++;
			if (conn_pair(x, i, j, &late, &us)) {
				if (us > worst)
					worst = us, wa = i, wb = j;
				continue;
			}
			nbad++;
			size_t l = strlen(bad);
			snprintf(bad + l, sizeof bad - l, "%srank %d (%s) <-> rank %d (%s) %s", l ? "; " : "", i, hosts[i], j,
				 hosts[j], late ? "answered only after the timeout" : "wrong payload");
			l = strlen(bad);
			if (late)
				snprintf(bad + l, sizeof bad - l, " (%.1f ms)", us / 1e3);
		}
	if (nbad)
		return diag_check_add(rep, DIAG_FAIL, "comm.connectivity",
				      "check that the named hosts reach each other on the training interface (diag net; "
				      "*_SOCKET_IFNAME, firewall, routes) and that the rank is not stuck",
				      "%d of %d pair(s) did not answer within %g s: %s", nbad, npairs, x->timeout_s, bad);
	return diag_check_add(rep, DIAG_PASS, "comm.connectivity", NULL,
			      "all %d pair(s) answered within %g s (slowest rank %d (%s) <-> rank %d (%s): %.1f us)", npairs,
			      x->timeout_s, wa, wa >= 0 ? hosts[wa] : "", wb, wb >= 0 ? hosts[wb] : "", worst);
}

static int connectivity(struct bench *b, cJSON *data)
{
	struct conn_sweep x = { 0 };
	int rc = conn_sweep_measure(b, &x);
	if (rc)
		return rc;
	conn_sweep_json(&x, data);
	if (b->out && x.n > 1)
		conn_sweep_print(&x, b->hosts, b->out);
	rc = conn_sweep_check(&x, b->hosts, b->rep);
	free(x.rtt);
	return rc;
}

/* "X GB/s" for one kind of link, "X GB/s inside hosts, Y GB/s between hosts" for both. */
static void refs_text(const double ref[2], char *buf, size_t n)
{
	if (ref[0] > 0 && ref[1] > 0)
		snprintf(buf, n, "%.3f GB/s inside hosts, %.3f GB/s between hosts", ref[0], ref[1]);
	else
		snprintf(buf, n, "%.3f GB/s", ref[1] > 0 ? ref[1] : ref[0]);
}

/* 1 when this host has an RDMA device (an entry in /sys/class/infiniband). */
static int has_rdma_device(void)
{
	DIR *d = opendir("/sys/class/infiniband");
	if (!d)
		return 0;
	int found = 0;
	struct dirent *e;
	while (!found && (e = readdir(d)))
		found = e->d_name[0] != '.';
	closedir(d);
	return found;
}

/* "self", "shm" (one host), "rdma" (two hosts, both with RDMA devices) or "tcp". */
static const char *link_kind(int i, int j, int between, const int *rdma)
{
	if (i == j)
		return "self";
	if (!between)
		return "shm";
	return rdma[i] && rdma[j] ? "rdma" : "tcp";
}

/* The pairwise bandwidth matrix, measured (bw_matrix_measure), then rendered: the JSON object
 * "matrix", the text tables, and the comm.slow_rank / comm.slow_link checks. */
struct bw_matrix {
	int n;
	double bytes;                /* per ping-pong message */
	double *gbs;                 /* n×n, best GB/s of each pair (symmetric, 0 on the diagonal) */
	int *slow_rank;              /* n: 1 = slow rank (diag_comm_find_slow) */
	int *slow_link;              /* n×n: 1 = slow link */
	int *rdma;                   /* n: the rank's host has an RDMA device */
	unsigned char *between;      /* n×n: 1 = the two ranks are on different hosts */
	double rank_ref[2], link_ref[2];   /* medians inside hosts [0] and between hosts [1] */
	char rule[700], rank_refs[160], link_refs[160];
};

static void bw_matrix_free(struct bw_matrix *x)
{
	free(x->gbs);
	free(x->slow_rank);
	free(x->slow_link);
	free(x->rdma);
	free(x->between);
	memset(x, 0, sizeof *x);
}

/* Ping-pong every pair of ranks, one pair at a time, and find the slow ranks and links; every rank
 * ends with the whole matrix. n ≥ 2. */
static int bw_matrix_measure(struct bench *b, struct bw_matrix *x)
{
	const struct diag_comm_opts *o = b->o;
	int n = b->n, me = b->me;
	size_t cnt = (size_t)(o->matrix_bytes / 4);
	if (cnt < 1)
		cnt = 1;
	if (cnt > b->cap)
		cnt = b->cap;
	memset(x, 0, sizeof *x);
	x->n = n;
	x->bytes = (double)cnt * 4;
	x->gbs = calloc((size_t)n * (size_t)n, sizeof *x->gbs);
	x->slow_rank = calloc((size_t)n, sizeof *x->slow_rank);
	x->slow_link = calloc((size_t)n * (size_t)n, sizeof *x->slow_link);
	x->rdma = calloc((size_t)n, sizeof *x->rdma);
	x->between = calloc((size_t)n * (size_t)n, 1);
	if (!x->gbs || !x->slow_rank || !x->slow_link || !x->rdma || !x->between) {
		bw_matrix_free(x);
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	}
	double *m = x->gbs;
	/* the kind of each link, as the MPI library picks its transport: shared memory between ranks
	 * of one host, the network between hosts (RDMA when both hosts have an RDMA device, else TCP) */
	int mine = has_rdma_device();
	int rc = comm_allgather(b->c, COMM_WORLD, &mine, x->rdma, 1, COMM_I32);
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			x->between[i * n + j] = strcmp(b->hosts[i], b->hosts[j]) != 0;
	for (int i = 0; i < n && !rc; i++)
		for (int j = i + 1; j < n && !rc; j++) {
			if (me == i || me == j) {
				int p = me == i ? j : i;
				double best = 0;
				for (int it = 0; it < 1 + o->matrix_iters && !rc; it++) {
					int64_t t0 = clock_ns();
					if (me == i) {
						rc = comm_send(b->c, COMM_WORLD, b->s, cnt, COMM_F32, p, 12);
						if (!rc)
							rc = comm_recv(b->c, COMM_WORLD, b->r, cnt, COMM_F32, p, 13);
					} else {
						rc = comm_recv(b->c, COMM_WORLD, b->r, cnt, COMM_F32, p, 12);
						if (!rc)
							rc = comm_send(b->c, COMM_WORLD, b->s, cnt, COMM_F32, p, 13);
					}
					double gbs = 2.0 * x->bytes / (double)(clock_ns() - t0);
					if (it > 0 && gbs > best) /* iteration 0 is the warm-up */
						best = gbs;
				}
				if (me == i)
					m[i * n + j] = m[j * n + i] = best;
			}
			if (!rc)
				rc = comm_barrier(b->c, COMM_WORLD);
		}
	if (!rc)
		rc = comm_allreduce(b->c, COMM_WORLD, NULL, m, (size_t)n * (size_t)n, COMM_F64, COMM_MAX);
	if (rc) {
		bw_matrix_free(x);
		return rc;
	}
	diag_comm_find_slow(m, x->between, n, o->slow_ratio, x->slow_rank, x->slow_link, x->rank_ref, x->link_ref);
	refs_text(x->rank_ref, x->rank_refs, sizeof x->rank_refs);
	refs_text(x->link_ref, x->link_refs, sizeof x->link_refs);
	snprintf(x->rule, sizeof x->rule,
		 "ping-pong of %.0f B per pair, pairs one at a time, best of %d; links inside a host and between hosts "
		 "are judged separately; a rank is slow when its best link of each kind is below %.2f x the median of "
		 "the ranks' best links of that kind (%s); a link is slow when it is below %.2f x the median of the "
		 "links of its kind between ranks that are not slow (%s); needs >= 3 ranks",
		 x->bytes, o->matrix_iters, o->slow_ratio, x->rank_refs, o->slow_ratio, x->link_refs);
	return 0;
}

static const char *bw_matrix_link(const struct bw_matrix *x, int i, int j)
{
	return link_kind(i, j, x->between[i * x->n + j], x->rdma);
}

static void bw_matrix_json(const struct bw_matrix *x, char (*hosts)[64], double slow_ratio, cJSON *data)
{
	int n = x->n;
	cJSON *mx = cJSON_AddObjectToObject(data, "matrix");
	cJSON_AddNumberToObject(mx, "bytes", x->bytes);
	cJSON *rk = cJSON_AddArrayToObject(mx, "ranks");
	cJSON *g = cJSON_AddArrayToObject(mx, "gbs");
	cJSON *lk = cJSON_AddArrayToObject(mx, "link");
	for (int i = 0; i < n; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "rank", i);
		cJSON_AddStringToObject(e, "host", hosts[i]);
		cJSON_AddItemToArray(rk, e);
		cJSON *row = cJSON_CreateArray(), *krow = cJSON_CreateArray();
		for (int j = 0; j < n; j++) {
			cJSON_AddItemToArray(row, cJSON_CreateNumber(x->gbs[i * n + j]));
			cJSON_AddItemToArray(krow, cJSON_CreateString(bw_matrix_link(x, i, j)));
		}
		cJSON_AddItemToArray(g, row);
		cJSON_AddItemToArray(lk, krow);
	}
	cJSON_AddNumberToObject(mx, "shm_ref_gbs", x->link_ref[0]);
	cJSON_AddNumberToObject(mx, "net_ref_gbs", x->link_ref[1]);
	cJSON_AddStringToObject(mx, "rule", x->rule);
	cJSON_AddNumberToObject(mx, "slow_ratio", slow_ratio);
}

static void bw_cell(FILE *f, const void *ud, int i, int j)
{
	const struct bw_matrix *x = ud;
	fprintf(f, " %7.3f%s", x->gbs[i * x->n + j],
		x->slow_rank[i] || x->slow_rank[j] || x->slow_link[i * x->n + j] ? "*" : " ");
}

static void bw_link_cell(FILE *f, const void *ud, int i, int j)
{
	fprintf(f, " %8s", bw_matrix_link(ud, i, j));
}

static void bw_matrix_print(const struct bw_matrix *x, char (*hosts)[64], FILE *f)
{
	int n = x->n;
	fprintf(f, "#\n# Pairwise bandwidth (GB/s): %s\n", x->rule);
	rank_table_print(f, n, hosts, bw_cell, x);
	fprintf(f, "# (* = slow rank or slow link)\n");
	int nh = 0;
	for (int i = 0; i < n; i++)
		nh += i == 0 || x->between[(i - 1) * n + i];
	if (nh <= 1)
		return;
	fprintf(f, "#\n# Link kinds (shm: same host, shared memory; tcp/rdma: between hosts)\n");
	rank_table_print(f, n, hosts, bw_link_cell, x);
}

/* comm.slow_rank: each slow rank with its best link of each kind against that kind's median. */
static int bw_matrix_check_ranks(const struct bw_matrix *x, char (*hosts)[64], double slow_ratio, struct diag_report *rep)
{
	int n = x->n, k = 0;
	const double *m = x->gbs;
	char names[768] = "";
	for (int i = 0; i < n; i++) {
		if (!x->slow_rank[i])
			continue;
		size_t l = strlen(names);
		snprintf(names + l, sizeof names - l, "%srank %d (%s):", l ? "; " : "", i, hosts[i]);
		for (int kind = 0; kind < 2; kind++) {
			double best = 0;
			for (int j = 0; j < n; j++)
				if (j != i && x->between[i * n + j] == kind && m[i * n + j] > best)
					best = m[i * n + j];
			if (best <= 0)
				continue;
			l = strlen(names);
			snprintf(names + l, sizeof names - l, "%s best %slink %.3f GB/s = %.0f%% of %.3f",
				 names[l - 1] == ':' ? "" : ",", x->rank_ref[0] > 0 && x->rank_ref[1] > 0 ? (kind ? "network " :
				 "shared-memory ") : "", best, x->rank_ref[kind] > 0 ? 100 * best / x->rank_ref[kind] : 0,
				 x->rank_ref[kind]);
		}
		k++;
	}
	if (k)
		return diag_check_add(rep, DIAG_WARN, "comm.slow_rank",
				      "look at the named rank's host: CPU load and frequency, other jobs, NIC errors "
				      "(diag net); exclude it or drain the node",
				      "%d slow rank(s): %s (rule: best link < %.2f x median of the ranks' best links, "
				      "of each kind)", k, names, slow_ratio);
	return diag_check_add(rep, DIAG_PASS, "comm.slow_rank", NULL,
			      "no rank's best link below %.2f x the median (%s) over %d ranks", slow_ratio, x->rank_refs, n);
}

/* comm.slow_link: each slow link against the median of its kind. */
static int bw_matrix_check_links(const struct bw_matrix *x, char (*hosts)[64], double slow_ratio, struct diag_report *rep)
{
	int n = x->n, k = 0;
	const double *m = x->gbs;
	char names[768] = "";
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++)
			if (x->slow_link[i * n + j]) {
				double lr = x->link_ref[x->between[i * n + j] ? 1 : 0];
				size_t l = strlen(names);
				snprintf(names + l, sizeof names - l,
					 "%srank %d (%s) <-> rank %d (%s), %s: %.3f GB/s = %.0f%% of %.3f", l ? "; " : "", i,
					 hosts[i], j, hosts[j], bw_matrix_link(x, i, j), m[i * n + j],
					 lr > 0 ? 100 * m[i * n + j] / lr : 0, lr);
				k++;
			}
	if (k)
		return diag_check_add(rep, DIAG_WARN, "comm.slow_link",
				      "check the path between the named hosts: cables/ports, MTU (diag net), switch "
				      "counters, retransmits; rerun a 2-rank test on that pair",
				      "%d slow link(s): %s (rule: link < %.2f x median of links between non-slow ranks)", k,
				      names, slow_ratio);
	return diag_check_add(rep, DIAG_PASS, "comm.slow_link", NULL, "no link below %.2f x the median of its kind (%s)",
			      slow_ratio, x->link_refs);
}

static int bw_matrix_checks(const struct bw_matrix *x, char (*hosts)[64], double slow_ratio, struct diag_report *rep)
{
	if (x->n < 3) {
		int rc = diag_check_add(rep, DIAG_SKIP, "comm.slow_rank", NULL,
					"2 ranks, one link (%.3f GB/s): a slow rank cannot be told from a slow link; run "
					"with >= 3 ranks", x->gbs[1]);
		return rc ? rc : diag_check_add(rep, DIAG_SKIP, "comm.slow_link", NULL, "needs >= 3 ranks");
	}
	int rc = bw_matrix_check_ranks(x, hosts, slow_ratio, rep);
	return rc ? rc : bw_matrix_check_links(x, hosts, slow_ratio, rep);
}

static int bandwidth_matrix(struct bench *b, cJSON *data)
{
	if (b->n < 2) {
		int rc = diag_check_add(b->rep, DIAG_SKIP, "comm.slow_rank", NULL, "one rank: no link to measure");
		return rc ? rc : diag_check_add(b->rep, DIAG_SKIP, "comm.slow_link", NULL, "one rank: no link to measure");
	}
	struct bw_matrix x;
	int rc = bw_matrix_measure(b, &x);
	if (rc)
		return rc;
	bw_matrix_json(&x, b->hosts, b->o->slow_ratio, data);
	if (b->out)
		bw_matrix_print(&x, b->hosts, b->out);
	rc = bw_matrix_checks(&x, b->hosts, b->o->slow_ratio, b->rep);
	bw_matrix_free(&x);
	return rc;
}

/* ------------------------------------------------------------------------------------------ */

static void defaults(const struct diag_comm_opts *in, struct diag_comm_opts *o)
{
	*o = *in;
	if (!o->ops)
		o->ops = (1u << DIAG_OP_COUNT) - 1;
	if (o->min_bytes <= 0)
		o->min_bytes = 8;
	if (o->max_bytes <= 0)
		o->max_bytes = 16 << 20;
	if (o->factor <= 1)
		o->factor = 4;
	if (o->iters <= 0)
		o->iters = 20;
	if (o->warmup < 0)
		o->warmup = 0;
	if (o->conn_timeout_s <= 0)
		o->conn_timeout_s = 5;
	if (o->matrix_bytes == 0)
		o->matrix_bytes = 1 << 20;
	if (o->matrix_iters <= 0)
		o->matrix_iters = 5;
	if (o->slow_ratio <= 0 || o->slow_ratio >= 1)
		o->slow_ratio = 0.5;
}

int diag_comm_run(const struct diag_comm_opts *oin, struct diag_report *r)
{
	if (!oin || !oin->comm)
		return ascent_error(ASCENT_EINTERNAL, "diag comm: no communicator");
	struct diag_comm_opts o;
	defaults(oin, &o);
	if (o.min_bytes > o.max_bytes)
		return ascent_error(ASCENT_EUSAGE, "diag comm: -b %lld is larger than -e %lld", (long long)o.min_bytes,
				    (long long)o.max_bytes);
	struct bench b;
	memset(&b, 0, sizeof b);
	b.o = &o;
	b.c = o.comm;
	b.n = comm_size(b.c, COMM_WORLD);
	b.me = comm_rank(b.c, COMM_WORLD);
	b.rep = r;
	b.out = b.me == 0 ? o.out : NULL;
	int64_t need = o.max_bytes > o.matrix_bytes ? o.max_bytes : o.matrix_bytes;
	b.cap = (size_t)(need / 4) + (size_t)b.n;
	b.s = malloc(b.cap * sizeof *b.s);
	b.r = malloc(b.cap * sizeof *b.r);
	b.times = malloc((size_t)o.iters * sizeof *b.times);
	b.hosts = calloc((size_t)b.n, sizeof *b.hosts);
	b.wrong_by_rank = calloc((size_t)b.n, sizeof *b.wrong_by_rank);
	char me_host[64] = "";
	if (gethostname(me_host, sizeof me_host - 1))
		snprintf(me_host, sizeof me_host, "?");
	int rc = 0;
	if (!b.s || !b.r || !b.times || !b.hosts || !b.wrong_by_rank)
		rc = ascent_error(ASCENT_ENOMEM, "diag comm: out of memory for %lld-byte buffers", (long long)need);
	if (!rc)
		rc = comm_allgather(b.c, COMM_WORLD, me_host, b.hosts, sizeof me_host, COMM_BYTE);
	for (int i = 0; !rc && i < b.n; i++)
		b.hosts[i][63] = 0;
	if (!rc) {
		for (size_t i = 0; i < b.cap; i++)
			b.s[i] = val(b.me, i);
		b.rows = cJSON_AddArrayToObject(r->data, "rows");
		if (o.raw)
			b.raw = cJSON_AddArrayToObject(r->data, "raw");
		diag_ident_add(r, "ranks", "%d", b.n);
	}
	if (!rc && b.out) {
		FILE *f = b.out;
		fprintf(f, "# ascent diag comm (nccl-tests format; collectives through comm/, float, sum)\n");
		fprintf(f, "# nThread 1 nGpus 1 minBytes %lld maxBytes %lld step: %g(factor) warmup iters: %d iters: %d "
			   "agg iters: 1 validation: %d graph: 0\n",
			(long long)o.min_bytes, (long long)o.max_bytes, o.factor, o.warmup, o.iters, o.check);
		fprintf(f, "#\n# Using devices\n");
	}
	/* every rank's line: pid and host, printed by rank 0 */
	if (!rc) {
		int64_t pid = getpid();
		int64_t *pids = calloc((size_t)b.n, sizeof *pids);
		if (!pids)
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
		else
			rc = comm_allgather(b.c, COMM_WORLD, &pid, pids, 1, COMM_I64);
		for (int i = 0; !rc && b.out && i < b.n; i++)
			fprintf(b.out, "#  Rank %2d Group  0 Pid %6lld on %10s device  0 [cpu] MPI rank %d\n", i,
				(long long)pids[i], b.hosts[i], i);
		free(pids);
	}
	for (int op = 0; op < DIAG_OP_COUNT && !rc; op++)
		if (o.ops & (1u << op))
			rc = bench_op(&b, op);
	if (!rc && o.raw)
		rc = bench_raw(&b);
	if (!rc) {
		double avg = b.bw_n ? b.bw_sum / b.bw_n : 0;
		cJSON_AddNumberToObject(r->data, "avg_busbw_gbs", avg);
		cJSON_AddNumberToObject(r->data, "out_of_bounds", (double)b.oob);
		if (b.out) {
			fprintf(b.out, "# Out of bounds values : %lld %s   (all collectives)\n", (long long)b.oob,
				b.oob ? "FAILED" : "OK");
			fprintf(b.out, "# Avg bus bandwidth    : %g   (all collectives)\n", avg);
		}
	}
	if (!rc)
		rc = connectivity(&b, r->data);
	if (!rc && o.matrix_bytes > 0)
		rc = bandwidth_matrix(&b, r->data);
	if (b.out)
		fflush(b.out);
	free(b.s);
	free(b.r);
	free(b.times);
	free(b.hosts);
	free(b.wrong_by_rank);
	return rc;
}
