/* comm/init.c — comm_init/comm_finalize (MPI, singleton or no MPI), the dp × tp × pp grid and its
 * sub-communicators, facts about groups, and MPI error reporting. */
#include "comm/impl.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

size_t comm_dtype_size(enum comm_dtype t)
{
	switch (t) {
	case COMM_F32: return 4;
	case COMM_F64: return 8;
	case COMM_I64: return 8;
	case COMM_I32: return 4;
	case COMM_BYTE: return 1;
	default: return 0;
	}
}

MPI_Datatype comm_mpi_dtype(enum comm_dtype t)
{
	switch (t) {
	case COMM_F32: return MPI_FLOAT;
	case COMM_F64: return MPI_DOUBLE;
	case COMM_I64: return MPI_INT64_T;
	case COMM_I32: return MPI_INT32_T;
	default: return MPI_BYTE;
	}
}

int comm_mpi_err(int mpirc, const char *call, const struct comm *c, int kind)
{
	char msg[MPI_MAX_ERROR_STRING + 1] = "";
	int len = 0;
	if (MPI_Error_string(mpirc, msg, &len) != MPI_SUCCESS)
		snprintf(msg, sizeof msg, "MPI error code %d", mpirc);
	msg[len < MPI_MAX_ERROR_STRING ? len : MPI_MAX_ERROR_STRING] = 0;
	return ascent_error(ASCENT_EMPI, "%s on communicator '%s' failed on rank %d: %s", call,
			    comm_kind_name((enum comm_kind)kind), c ? c->world_rank : -1, msg);
}

int comm_grid_rank(int dp, int tp, int pp, int dp_rank, int tp_rank, int pp_rank)
{
	(void)pp;
	return pp_rank * (dp * tp) + dp_rank * tp + tp_rank;
}

void comm_grid_coords(int rank, int dp, int tp, int pp, int *dp_rank, int *tp_rank, int *pp_rank)
{
	(void)pp;
	*tp_rank = rank % tp;
	*dp_rank = (rank / tp) % dp;
	*pp_rank = rank / (dp * tp);
}

int comm_timeout_parse(const char *s, double *out)
{
	char *end = NULL;
	errno = 0;
	double v = strtod(s, &end);
	if (!*s || end == s || *end || errno || !isfinite(v) || v < 0 || v > 1e7)
		return ascent_error(ASCENT_EUSAGE,
				    "bad ASCENT_COMM_TIMEOUT '%s': expected seconds in [0, 1e7], e.g. 600 or 2.5 "
				    "(0 turns the watchdog off)", s);
	*out = v;
	return 0;
}

static void group_free(struct comm *c, struct comm_group *g)
{
	comm_arrive_free(g);
	if (c->use_mpi && g->mc != MPI_COMM_NULL)
		MPI_Comm_free(&g->mc);
	g->mc = MPI_COMM_NULL;
	free(g->ranks);
	free(g->send_seq);
	free(g->recv_seq);
	memset(g, 0, sizeof *g);
	g->mc = MPI_COMM_NULL;
}

static int group_alloc(struct comm_group *g, int size)
{
	g->size = size;
	g->ranks = calloc((size_t)size, sizeof *g->ranks);
	g->send_seq = calloc((size_t)size, sizeof *g->send_seq);
	g->recv_seq = calloc((size_t)size, sizeof *g->recv_seq);
	if (!g->ranks || !g->send_seq || !g->recv_seq)
		return ascent_error(ASCENT_ENOMEM, "out of memory for a communicator of %d ranks", size);
	return 0;
}

static int read_env(struct comm *c)
{
	const char *s = getenv("ASCENT_COMM_TIMEOUT");
	c->timeout_s = 600;
	if (s && *s) {
		int rc = comm_timeout_parse(s, &c->timeout_s);
		if (rc)
			return rc;
	}
	c->timeout_ns = (int64_t)(c->timeout_s * 1e9);
	c->flight_size = 2000;
	s = getenv("ASCENT_FLIGHT_SIZE");
	if (s && *s) {
		long long v;
		int rc = opt_parse_int("ASCENT_FLIGHT_SIZE", s, 0, 1000000, &v);
		if (rc)
			return rc;
		c->flight_size = v;
	}
	s = getenv("ASCENT_FAULT");
	if (s && *s) {
		int rc = comm_fault_parse(s, c->faults, COMM_MAX_FAULTS, &c->nfaults);
		if (rc)
			return ascent_error_ctx(rc, "ASCENT_FAULT");
	}
	return 0;
}

/* Set group k's facts from the grid formula (and check MPI agrees when it is used). */
static int group_setup(struct comm *c, int k, MPI_Comm mc, int myrank, int size, int64_t id)
{
	struct comm_group *g = &c->g[k];
	int rc = group_alloc(g, size);
	if (rc)
		return rc;
	g->mc = mc;
	g->rank = myrank;
	g->id = id;
	g->lane = comm_lane_name(k);
	for (int i = 0; i < size; i++) {
		int dpr = c->dp_rank, tpr = c->tp_rank, ppr = c->pp_rank;
		if (k == COMM_WORLD) {
			g->ranks[i] = i;
			continue;
		}
		if (k == COMM_DP)
			dpr = i;
		else if (k == COMM_TP)
			tpr = i;
		else
			ppr = i;
		g->ranks[i] = comm_grid_rank(c->dp, c->tp, c->pp, dpr, tpr, ppr);
	}
	if (c->use_mpi && mc != MPI_COMM_NULL) {
		int r, s, mrc;
		if ((mrc = MPI_Comm_set_errhandler(mc, MPI_ERRORS_RETURN)) != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Comm_set_errhandler", c, k);
		if ((mrc = MPI_Comm_rank(mc, &r)) != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Comm_rank", c, k);
		if ((mrc = MPI_Comm_size(mc, &s)) != MPI_SUCCESS)
			return comm_mpi_err(mrc, "MPI_Comm_size", c, k);
		if (r != myrank || s != size)
			return ascent_error(ASCENT_EINTERNAL,
					    "communicator '%s' on rank %d: MPI says rank %d of %d, the grid says %d of %d",
					    comm_kind_name(k), c->world_rank, r, s, myrank, size);
		if ((rc = comm_arrive_setup(c, k)))
			return rc;
	}
	prof_comm_register((int)id, comm_kind_name(k), size, myrank);
	return 0;
}

int comm_set_grid(struct comm *c, int dp, int tp, int pp)
{
	if (dp < 1 || tp < 1 || pp < 1)
		return ascent_error(ASCENT_EUSAGE, "bad parallel layout --dp %d --tp %d --pp %d: each must be at least 1",
				    dp, tp, pp);
	if ((long long)dp * tp * pp != c->world_size)
		return ascent_error(ASCENT_EUSAGE,
				    "parallel layout --dp %d --tp %d --pp %d needs %lld ranks but the job has %d "
				    "(make dp·tp·pp equal the number of ranks given to mpirun -np)",
				    dp, tp, pp, (long long)dp * tp * pp, c->world_size);
	pthread_mutex_lock(&c->lock);
	int64_t busy = c->inflight;
	pthread_mutex_unlock(&c->lock);
	if (busy)
		return ascent_error(ASCENT_EUSAGE, "comm_set_grid with %lld operations still in flight (wait for them first)",
				    (long long)busy);
	for (int k = COMM_DP; k < COMM_NKINDS; k++)
		group_free(c, &c->g[k]);
	c->dp = dp;
	c->tp = tp;
	c->pp = pp;
	comm_grid_coords(c->world_rank, dp, tp, pp, &c->dp_rank, &c->tp_rank, &c->pp_rank);
	int color[COMM_NKINDS], key[COMM_NKINDS], size[COMM_NKINDS];
	color[COMM_DP] = c->pp_rank * tp + c->tp_rank, key[COMM_DP] = c->dp_rank, size[COMM_DP] = dp;
	color[COMM_TP] = c->pp_rank * dp + c->dp_rank, key[COMM_TP] = c->tp_rank, size[COMM_TP] = tp;
	color[COMM_PP] = c->dp_rank * tp + c->tp_rank, key[COMM_PP] = c->pp_rank, size[COMM_PP] = pp;
	for (int k = COMM_DP; k < COMM_NKINDS; k++) {
		MPI_Comm mc = MPI_COMM_NULL;
		if (c->use_mpi) {
			int mrc = MPI_Comm_split(c->g[COMM_WORLD].mc, color[k], key[k], &mc);
			if (mrc != MPI_SUCCESS)
				return comm_mpi_err(mrc, "MPI_Comm_split", c, k);
		}
		int rc = group_setup(c, k, mc, key[k], size[k], ((int64_t)k << 24) + color[k]);
		if (rc)
			return rc;
	}
	return 0;
}

int comm_init(struct comm **out)
{
	*out = NULL;
	struct comm *c = calloc(1, sizeof *c);
	if (!c)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	for (int k = 0; k < COMM_NKINDS; k++)
		c->g[k].mc = MPI_COMM_NULL;
	c->clock_comm = MPI_COMM_NULL;
	c->thread_level = -1;
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->qcond, NULL);
	pthread_cond_init(&c->dcond, NULL);
	if (sem_init(&c->wake, 0, 0)) {
		free(c);
		return ascent_error(ASCENT_EIO, "sem_init failed: %s", strerror(errno));
	}
	if (gethostname(c->host, sizeof c->host - 1))
		snprintf(c->host, sizeof c->host, "unknown");
	int rc = read_env(c);
	if (rc)
		goto fail;
	const char *nompi = getenv("ASCENT_NO_MPI");
	c->use_mpi = !(nompi && *nompi && strcmp(nompi, "0"));
	c->world_size = 1;
	if (c->use_mpi) {
		int inited = 0, mrc;
		MPI_Initialized(&inited);
		if (!inited) {
			mrc = MPI_Init_thread(NULL, NULL, MPI_THREAD_MULTIPLE, &c->thread_level);
			if (mrc != MPI_SUCCESS) {
				rc = ascent_error(ASCENT_EMPI, "MPI_Init_thread failed (code %d); set ASCENT_NO_MPI=1 "
						  "to run as one process without MPI", mrc);
				goto fail;
			}
			c->own_mpi = 1;
		} else {
			MPI_Query_thread(&c->thread_level);
		}
		if (c->thread_level < MPI_THREAD_FUNNELED) {
			rc = ascent_error(ASCENT_EMPI, "the MPI library offers thread level %d, ascent needs at least "
					  "MPI_THREAD_FUNNELED (rebuild MPI with thread support)", c->thread_level);
			goto fail;
		}
		MPI_Comm world;
		if ((mrc = MPI_Comm_dup(MPI_COMM_WORLD, &world)) != MPI_SUCCESS) {
			rc = comm_mpi_err(mrc, "MPI_Comm_dup", c, COMM_WORLD);
			goto fail;
		}
		c->g[COMM_WORLD].mc = world;
		MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
		if ((mrc = MPI_Comm_rank(world, &c->world_rank)) != MPI_SUCCESS ||
		    (mrc = MPI_Comm_size(world, &c->world_size)) != MPI_SUCCESS) {
			rc = comm_mpi_err(mrc, "MPI_Comm_rank", c, COMM_WORLD);
			goto fail;
		}
		if ((mrc = MPI_Comm_dup(world, &c->clock_comm)) != MPI_SUCCESS) {
			rc = comm_mpi_err(mrc, "MPI_Comm_dup", c, COMM_WORLD);
			goto fail;
		}
		MPI_Comm_set_errhandler(c->clock_comm, MPI_ERRORS_RETURN);
		comm_algo_read(c);
	}
	/* every rank's host, so any rank's flight dump names the hosts of the ranks that wrote none */
	c->hosts = calloc((size_t)c->world_size, sizeof *c->hosts);
	if (!c->hosts) {
		rc = ascent_error(ASCENT_ENOMEM, "out of memory for %d host names", c->world_size);
		goto fail;
	}
	if (c->use_mpi) {
		int mrc = MPI_Allgather(c->host, (int)sizeof c->host, MPI_CHAR, c->hosts, (int)sizeof c->host, MPI_CHAR,
					c->clock_comm);
		if (mrc != MPI_SUCCESS) {
			rc = comm_mpi_err(mrc, "MPI_Allgather (host names)", c, COMM_WORLD);
			goto fail;
		}
		for (int i = 0; i < c->world_size; i++)
			c->hosts[i][sizeof c->hosts[i] - 1] = 0;
	} else {
		memcpy(c->hosts[0], c->host, sizeof c->host);
	}
	for (int i = 0; i < c->nfaults; i++)
		if (c->faults[i].rank >= c->world_size) {
			rc = ascent_error(ASCENT_EUSAGE, "ASCENT_FAULT names rank %d but the job has %d ranks (0..%d)",
					  c->faults[i].rank, c->world_size, c->world_size - 1);
			goto fail;
		}
	c->dp = c->world_size, c->tp = 1, c->pp = 1;
	MPI_Comm wmc = c->g[COMM_WORLD].mc;
	c->g[COMM_WORLD].mc = MPI_COMM_NULL;
	rc = group_setup(c, COMM_WORLD, wmc, c->world_rank, c->world_size, 0);
	if (rc) {
		if (c->use_mpi && wmc != MPI_COMM_NULL && c->g[COMM_WORLD].mc == MPI_COMM_NULL)
			MPI_Comm_free(&wmc);
		goto fail;
	}
	if ((rc = comm_set_grid(c, c->world_size, 1, 1)))
		goto fail;
	if ((rc = comm_flight_alloc(c)))
		goto fail;
	if ((rc = comm_flight_signals_install(c)))
		goto fail;
	if ((rc = comm_watchdog_start(c)))
		goto fail;
	if ((rc = cthread_start(c)))
		goto fail;
	*out = c;
	return 0;
fail:
	comm_finalize(c);
	return rc;
}

int comm_set_run_dir(struct comm *c, const char *dir)
{
	if (!dir || !*dir)
		return ascent_error(ASCENT_EUSAGE, "comm_set_run_dir: empty directory");
	int n = snprintf(c->dump_path, sizeof c->dump_path, "%s/flight/rank-%05d.json", dir, c->world_rank);
	if (n < 0 || (size_t)n >= sizeof c->dump_path) {
		c->dump_path[0] = 0;
		return ascent_error(ASCENT_EUSAGE, "run directory path too long: '%s'", dir);
	}
	snprintf(c->dump_tmp, sizeof c->dump_tmp, "%s.tmp", c->dump_path);
	char *d = strdup(dir);
	if (!d)
		return ascent_error(ASCENT_ENOMEM, "out of memory");
	pthread_mutex_lock(&c->lock);
	free(c->run_dir);
	c->run_dir = d;
	pthread_mutex_unlock(&c->lock);
	return 0;
}

int comm_finalize(struct comm *c)
{
	if (!c)
		return 0;
	int rc = 0;
	cthread_stop(c);   /* runs what is queued; the watchdog still watches it */
	comm_watchdog_stop(c);
	comm_flight_signals_restore(c);
	if (c->inflight)
		log_warn("comm_finalize with %lld operations still in flight on rank %d", (long long)c->inflight,
			 c->world_rank);
	for (int k = COMM_NKINDS - 1; k >= 0; k--)
		group_free(c, &c->g[k]);
	if (c->use_mpi && c->clock_comm != MPI_COMM_NULL)
		MPI_Comm_free(&c->clock_comm);
	if (c->own_mpi) {
		int mrc = MPI_Finalize();
		if (mrc != MPI_SUCCESS)
			rc = comm_mpi_err(mrc, "MPI_Finalize", c, COMM_WORLD);
	}
	comm_flight_free(c);
	sem_destroy(&c->wake);
	pthread_cond_destroy(&c->qcond);
	pthread_cond_destroy(&c->dcond);
	pthread_mutex_destroy(&c->lock);
	free(c->run_dir);
	free(c->hosts);
	free(c);
	return rc;
}

void comm_prof_register(const struct comm *c)
{
	for (int k = 0; k < COMM_NKINDS; k++)
		prof_comm_register((int)c->g[k].id, comm_kind_name(k), c->g[k].size, c->g[k].rank);
}

int comm_rank(const struct comm *c, enum comm_kind k)
{
	return (unsigned)k < COMM_NKINDS ? c->g[k].rank : -1;
}

int comm_size(const struct comm *c, enum comm_kind k)
{
	return (unsigned)k < COMM_NKINDS ? c->g[k].size : 0;
}

int comm_world_rank_of(const struct comm *c, enum comm_kind k, int group_rank)
{
	if ((unsigned)k >= COMM_NKINDS || group_rank < 0 || group_rank >= c->g[k].size)
		return -1;
	return c->g[k].ranks[group_rank];
}

int64_t comm_id(const struct comm *c, enum comm_kind k)
{
	return (unsigned)k < COMM_NKINDS ? c->g[k].id : -1;
}

int comm_uses_mpi(const struct comm *c)
{
	return c->use_mpi;
}

