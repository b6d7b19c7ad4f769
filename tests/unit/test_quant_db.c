/* tests/unit/test_quant_db.c — the quant_layer table: db_put_quant_layer / db_each_quant_layer
 * round-trip (NULL method, scale, SQNR and detail included), a read-only database is refused, and
 * quant_db_write stores one row per linear layer of a tiny quantized model with the method, scale
 * and detail the scheme implies, appending to an existing database. */
#include "db/db.h"
#include "quant/internal.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char tmpdir[64], dbpath[128];

static void mk_tmp(void)
{
	strcpy(tmpdir, "/tmp/ascent-quantdb-XXXXXX");
	cr_assert_not_null(mkdtemp(tmpdir));
	snprintf(dbpath, sizeof dbpath, "%s/prof.db", tmpdir);
	nn_set_threads(1);
}

static void rm_tmp(void)
{
	fs_rm_rf(tmpdir);
}

TestSuite(quant_db, .init = mk_tmp, .fini = rm_tmp);

struct row {
	char layer[48], method[32], detail[512];
	double scale, sqnr;
	int has_method, has_detail;
};
struct rows {
	struct row r[64];
	int n;
};

static int collect(void *ud, int64_t id, const char *layer, const char *method, double scale, double sqnr,
		   const char *detail)
{
	struct rows *rs = ud;
	cr_assert_eq(id, rs->n + 1);
	cr_assert_lt(rs->n, 64);
	struct row *r = &rs->r[rs->n++];
	snprintf(r->layer, sizeof r->layer, "%s", layer);
	r->has_method = method != NULL;
	snprintf(r->method, sizeof r->method, "%s", method ? method : "");
	r->has_detail = detail != NULL;
	snprintf(r->detail, sizeof r->detail, "%s", detail ? detail : "");
	r->scale = scale;
	r->sqnr = sqnr;
	return 0;
}

Test(quant_db, put_and_read_back)
{
	struct db *db;
	cr_assert_eq(db_open(dbpath, DB_CREATE, &db), 0, "%s", ascent_errmsg());
	cr_assert_eq(db_put_quant_layer(db, "h.0.attn.c_attn", "mse", 0.25, 41.5, "{\"delta_ppl_pct\":0.1}"), 0);
	cr_assert_eq(db_put_quant_layer(db, "h.0.mlp.c_fc", NULL, NAN, NAN, NULL), 0);
	cr_assert_neq(db_put_quant_layer(db, "", "mse", 1, 1, NULL), 0);
	db_close(db);
	cr_assert_eq(db_open(dbpath, DB_READ, &db), 0);
	struct rows rs = { .n = 0 };
	cr_assert_eq(db_each_quant_layer(db, collect, &rs), 0);
	cr_assert_eq(rs.n, 2);
	cr_assert_str_eq(rs.r[0].layer, "h.0.attn.c_attn");
	cr_assert_str_eq(rs.r[0].method, "mse");
	cr_assert_eq(rs.r[0].scale, 0.25);
	cr_assert_eq(rs.r[0].sqnr, 41.5);
	cr_assert_str_eq(rs.r[0].detail, "{\"delta_ppl_pct\":0.1}");
	cr_assert(!rs.r[1].has_method && !rs.r[1].has_detail && isnan(rs.r[1].scale) && isnan(rs.r[1].sqnr));
	cr_assert_neq(db_put_quant_layer(db, "h.1.mlp.c_fc", "mse", 1, 1, NULL), 0);
	cr_assert(strstr(ascent_errmsg(), "read-only"), "%s", ascent_errmsg());
	db_close(db);
}

static void tiny_model(struct quant_model *qm, enum quant_scheme sc)
{
	struct nn_config cfg = { .vocab_size = 32, .max_seq = 16, .n_layer = 2, .n_head = 2, .n_embd = 32 };
	struct nn_gpt m;
	cr_assert_eq(nn_gpt_init(&m, &cfg), 0);
	nn_gpt_init_weights(&m, 7);
	cr_assert_eq(quant_model_init(qm, &m, sc, 0), 0);
	qm->lin[5].quantized = 0;   /* one layer kept fp32 */
	cr_assert_eq(quant_model_quantize_weights(qm), 0);
	for (int i = 0; i < qm->nlin; i++)
		qm->lin[i].in_scale = sc == QUANT_W8A8_STATIC ? 0.01f * (float)(i + 1) : 0.0f;
}

Test(quant_db, quant_db_write_one_row_per_layer_and_appends)
{
	struct quant_model qm;
	tiny_model(&qm, QUANT_W8A8_STATIC);
	double sqnr[8], dppl[8];
	for (int i = 0; i < 8; i++) {
		sqnr[i] = 30.0 + i;
		dppl[i] = i == 5 ? NAN : 0.01 * i;
	}
	cr_assert_eq(quant_db_write(dbpath, &qm, sqnr, dppl, "kl", 0.5, "ptq", "src/ckpt", "out/q"), 0, "%s",
		     ascent_errmsg());
	quant_model_release(&qm);
	tiny_model(&qm, QUANT_W8A8_DYNAMIC);
	cr_assert_eq(quant_db_write(dbpath, &qm, sqnr, dppl, NULL, -1, "qat", "src/ckpt", "out/q2"), 0);
	struct db *db;
	cr_assert_eq(db_open(dbpath, DB_READ, &db), 0);
	struct rows rs = { .n = 0 };
	cr_assert_eq(db_each_quant_layer(db, collect, &rs), 0);
	db_close(db);
	cr_assert_eq(rs.n, 16);
	for (int i = 0; i < 16; i++) {
		struct row *r = &rs.r[i];
		int li = i % 8;
		cr_assert_str_eq(r->layer, qm.lin[li].name);
		cr_assert_eq(r->sqnr, 30.0 + li);
		cJSON *d = cJSON_Parse(r->detail);
		cr_assert_not_null(d, "detail is not JSON: %s", r->detail);
		const cJSON *dp = cJSON_GetObjectItem(d, "delta_ppl_pct"), *sch = cJSON_GetObjectItem(d, "scheme");
		const cJSON *pr = cJSON_GetObjectItem(d, "producer"), *qz = cJSON_GetObjectItem(d, "quantized");
		cr_assert_str_eq(sch->valuestring, i < 8 ? "w8a8-static" : "w8a8-dynamic");
		cr_assert_str_eq(pr->valuestring, i < 8 ? "ptq" : "qat");
		if (li == 5) {
			cr_assert_str_eq(r->method, "fp32");
			cr_assert(isnan(r->scale));
			cr_assert(cJSON_IsNull(dp) && cJSON_IsFalse(qz));
		} else {
			cr_assert_str_eq(r->method, i < 8 ? "kl" : "dynamic");
			cr_assert(cJSON_IsTrue(qz));
			cr_assert_float_eq(dp->valuedouble, 0.01 * li, 1e-12);
			if (i < 8) {
				cr_assert_float_eq(r->scale, 0.01 * (li + 1), 1e-7);
				cr_assert_float_eq(cJSON_GetObjectItem(d, "smooth_alpha")->valuedouble, 0.5, 0);
			} else {
				float wmax = 0;
				for (int k = 0; k < qm.lin[li].out; k++)
					wmax = qm.lin[li].wscale[k] > wmax ? qm.lin[li].wscale[k] : wmax;
				cr_assert_eq(r->scale, (double)wmax);
			}
		}
		cJSON_Delete(d);
	}
	quant_model_release(&qm);
}
