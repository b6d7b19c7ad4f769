/* diag/report_db.c — `ascent diag ... --db FILE`: a diag report's checks appended to the
 * diag_check table of a profile database (through db/), so one file tells the run's whole story. */
#include "diag/diag.h"
#include "db/db.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int diag_report_store(const struct diag_report *r, const char *path)
{
	struct db *db = NULL;
	int rc = db_open(path, fs_exists(path) ? DB_UPDATE : DB_CREATE, &db);
	if (rc)
		return ascent_error_ctx(rc, "cannot store the diag results");
	int64_t now = clock_utc_ns();
	rc = db_begin(db);
	for (int i = 0; i < r->n && !rc; i++) {
		const struct diag_check *c = &r->checks[i];
		size_t len = strlen(c->message) + strlen(c->fix) + 16;
		char *detail = malloc(len);
		if (!detail) {
			rc = ascent_error(ASCENT_ENOMEM, "out of memory");
			break;
		}
		if (c->fix[0])
			snprintf(detail, len, "%s | fix: %s", c->message, c->fix);
		else
			snprintf(detail, len, "%s", c->message);
		rc = db_put_diag_check(db, now, c->name, diag_status_name(c->status), NAN, NULL, detail);
		free(detail);
	}
	const cJSON *bw = r->data ? cJSON_GetObjectItemCaseSensitive(r->data, "avg_busbw_gbs") : NULL;
	if (!rc && cJSON_IsNumber(bw))
		rc = db_put_diag_check(db, now, "comm.avg_busbw", "PASS", bw->valuedouble, "GB/s",
				       "average bus bandwidth over every size and collective of diag comm");
	if (!rc)
		rc = db_commit(db);
	else
		db_rollback(db);
	db_close(db);
	return rc ? ascent_error_ctx(rc, "cannot store the diag results in '%s'", path) : 0;
}
