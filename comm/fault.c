/* comm/fault.c — ASCENT_FAULT, fault injection for tests only (grammar in comm.h): a slow rank
 * (delay), a rank that never arrives (hang) and a crash, applied just before an operation is
 * recorded, so the flight recorder sees exactly what a real slow, stuck or dead rank leaves; and a
 * stall, applied after the operation is recorded, on the thread about to start it (the
 * communication thread for a non-blocking collective): a thread stuck with work in its queue. */
#include "comm/impl.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int bad(const char *spec, const char *part, const char *why)
{
	return ascent_error(ASCENT_EUSAGE,
			    "bad ASCENT_FAULT '%s': %s in '%s' (expected e.g. 'delay:rank=3,ms=50', "
			    "'hang:rank=1,seq=40[,comm=dp]', 'stall:rank=1,seq=3,comm=dp', 'crash:rank=0,seq=5'; "
			    "several joined by ';')",
			    spec, why, part);
}

static int parse_one(const char *spec, char *part, struct comm_fault *f)
{
	char whole[256];
	snprintf(whole, sizeof whole, "%s", part);
	char *colon = strchr(part, ':');
	if (!colon)
		return bad(spec, whole, "missing ':' after the fault kind");
	*colon = 0;
	memset(f, 0, sizeof *f);
	f->rank = -2;
	f->comm = -1;
	f->seq = 0;
	f->ms = -1;
	if (!strcmp(part, "delay"))
		f->kind = COMM_FAULT_DELAY;
	else if (!strcmp(part, "hang"))
		f->kind = COMM_FAULT_HANG;
	else if (!strcmp(part, "crash"))
		f->kind = COMM_FAULT_CRASH;
	else if (!strcmp(part, "stall"))
		f->kind = COMM_FAULT_STALL;
	else
		return bad(spec, whole, "unknown fault kind (delay, hang, stall or crash)");
	char *save = NULL;
	for (char *kv = strtok_r(colon + 1, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		if (!eq || eq == kv || !eq[1])
			return bad(spec, whole, "expected key=value");
		*eq = 0;
		const char *k = kv, *v = eq + 1;
		long long n;
		if (!strcmp(k, "rank")) {
			if (!strcmp(v, "*"))
				f->rank = -1;
			else if (opt_parse_int("rank", v, 0, 1 << 24, &n))
				return bad(spec, whole, "rank must be a number ≥ 0 or '*'");
			else
				f->rank = (int)n;
		} else if (!strcmp(k, "ms")) {
			if (f->kind != COMM_FAULT_DELAY)
				return bad(spec, whole, "'ms' belongs to delay");
			if (opt_parse_int("ms", v, 0, 3600000, &n))
				return bad(spec, whole, "ms must be in [0, 3600000]");
			f->ms = n;
		} else if (!strcmp(k, "seq")) {
			if (f->kind == COMM_FAULT_DELAY)
				return bad(spec, whole, "'seq' belongs to hang, stall and crash");
			if (opt_parse_int("seq", v, 1, INT64_MAX / 2, &n))
				return bad(spec, whole, "seq must be a number ≥ 1");
			f->seq = n;
		} else if (!strcmp(k, "comm")) {
			int found = -1;
			for (int i = 0; i < COMM_NKINDS; i++)
				if (!strcmp(v, comm_kind_name((enum comm_kind)i)))
					found = i;
			if (found < 0)
				return bad(spec, whole, "comm must be world, dp, tp or pp");
			f->comm = found;
		} else {
			return bad(spec, whole, "unknown key (rank, ms, seq, comm)");
		}
	}
	if (f->rank == -2)
		return bad(spec, whole, "missing rank=");
	if (f->kind == COMM_FAULT_DELAY && f->ms < 0)
		return bad(spec, whole, "missing ms=");
	if (f->kind != COMM_FAULT_DELAY && f->seq < 1)
		return bad(spec, whole, "missing seq=");
	return 0;
}

int comm_fault_parse(const char *spec, struct comm_fault *out, int max, int *n)
{
	*n = 0;
	size_t len = strlen(spec);
	char *buf = malloc(len + 1);
	if (!buf)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	memcpy(buf, spec, len + 1);
	int rc = 0;
	char *save = NULL;
	for (char *part = strtok_r(buf, ";", &save); part && !rc; part = strtok_r(NULL, ";", &save)) {
		if (*n >= max) {
			rc = bad(spec, part, "too many faults");
			break;
		}
		rc = parse_one(spec, part, &out[*n]);
		if (!rc)
			(*n)++;
	}
	if (!rc && *n == 0)
		rc = ascent_error(ASCENT_EUSAGE, "bad ASCENT_FAULT '%s': no fault given (e.g. 'delay:rank=3,ms=50')",
				  spec);
	free(buf);
	return rc;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts)) {
	}
}

/* Fault i applies to this rank and communicator. */
static int applies(const struct comm *c, const struct comm_fault *f, int kind)
{
	return (f->rank == -1 || f->rank == c->world_rank) && (f->comm < 0 || f->comm == kind);
}

/* Operation (op_index, seq) is the one fault f names. */
static int hits(const struct comm_fault *f, int op, int64_t op_index, int64_t seq)
{
	int p2p = op == OP_SEND || op == OP_RECV;
	return f->comm < 0 ? op_index == f->seq : (!p2p && seq == f->seq);
}

void fault_before_start(struct comm *c, int kind, int op, int64_t op_index, int64_t seq)
{
	for (int i = 0; i < c->nfaults; i++) {
		const struct comm_fault *f = &c->faults[i];
		if (f->kind != COMM_FAULT_STALL || !applies(c, f, kind) || !hits(f, op, op_index, seq))
			continue;
		fprintf(stderr, "ascent: fault injection: rank %d stalls before starting %s %s seq %lld (op %lld)\n",
			c->world_rank, comm_kind_name((enum comm_kind)kind), comm_op_name(op), (long long)seq,
			(long long)op_index);
		fflush(stderr);
		for (;;)
			sleep_ms(1000);
	}
}

void fault_before(struct comm *c, int kind, int op, int64_t op_index, int64_t seq)
{
	for (int i = 0; i < c->nfaults; i++) {
		const struct comm_fault *f = &c->faults[i];
		if (!applies(c, f, kind) || f->kind == COMM_FAULT_STALL)
			continue;
		if (f->kind == COMM_FAULT_DELAY) {
			if (op != OP_RECV && f->ms > 0)
				sleep_ms(f->ms);
			continue;
		}
		if (!hits(f, op, op_index, seq))
			continue;
		if (f->kind == COMM_FAULT_CRASH) {
			fprintf(stderr, "ascent: fault injection: rank %d crashes (SIGSEGV) before %s %s seq %lld\n",
				c->world_rank, comm_kind_name((enum comm_kind)kind), comm_op_name(op), (long long)seq);
			fflush(stderr);
			raise(SIGSEGV);
		} else {
			fprintf(stderr, "ascent: fault injection: rank %d hangs before %s %s seq %lld (op %lld)\n",
				c->world_rank, comm_kind_name((enum comm_kind)kind), comm_op_name(op), (long long)seq,
				(long long)op_index);
			fflush(stderr);
			for (;;)
				sleep_ms(1000);
		}
	}
}
