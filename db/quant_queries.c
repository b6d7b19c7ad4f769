/* db/quant_queries.c — the quant_layer table: per-layer results of `ascent quant ptq|qat --db`
 * (layer, calibration method, scale, SQNR dB, a JSON detail with ΔPPL and the scheme), written
 * and read back. Statements are prepared per call (a few dozen rows per run, not a hot path). */
#include "db/internal.h"

#include <math.h>

int db_put_quant_layer(struct db *db, const char *layer, const char *method, double scale, double sqnr_db,
		       const char *detail)
{
	static const char *sql = "INSERT INTO quant_layer(layer, method, scale, sqnr_db, detail) VALUES(?1, ?2, ?3, ?4, ?5)";
	if (db->mode == DB_READ)
		return ascent_error(ASCENT_EINTERNAL, "cannot write quant layers to '%s': opened read-only", db->path);
	if (!layer || !*layer)
		return ascent_error(ASCENT_EINTERNAL, "db_put_quant_layer: empty layer name");
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	db_bind_text_static(db, s, 1, layer);
	if (method)
		db_bind_text_static(db, s, 2, method);
	db_bind_opt_double(db, s, 3, scale);
	/* SQLite stores ±inf as REAL; the exact-reconstruction SQNR sentinel (200 dB) is finite anyway */
	db_bind_opt_double(db, s, 4, sqnr_db);
	if (detail)
		db_bind_text_static(db, s, 5, detail);
	int src = db_step(db, s);
	rc = src == SQLITE_DONE ? 0 : db_sql_err(db, src, "cannot write a quant layer to", sql);
	sqlite3_finalize(s);
	return rc;
}

int db_each_quant_layer(struct db *db, db_quant_layer_cb cb, void *ud)
{
	static const char *sql = "SELECT id, layer, method, scale, sqnr_db, detail FROM quant_layer ORDER BY id";
	sqlite3_stmt *s = NULL;
	int rc = db_prep(db, sql, &s);
	if (rc)
		return rc;
	int src;
	while ((src = db_step(db, s)) == SQLITE_ROW) {
		double sc = sqlite3_column_type(s, 3) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 3);
		double sq = sqlite3_column_type(s, 4) == SQLITE_NULL ? NAN : sqlite3_column_double(s, 4);
		rc = cb(ud, sqlite3_column_int64(s, 0), (const char *)sqlite3_column_text(s, 1),
			(const char *)sqlite3_column_text(s, 2), sc, sq, (const char *)sqlite3_column_text(s, 5));
		if (rc)
			break;
	}
	if (!rc && src != SQLITE_DONE)
		rc = db_sql_err(db, src, "cannot read quant layers of", sql);
	sqlite3_finalize(s);
	return rc;
}
