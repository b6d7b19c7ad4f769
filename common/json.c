/* common/json.c — cJSON helpers: read a file with a located syntax error, atomic write,
 * ASCII-safe string escaping. */
#include "common/common.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

int json_read_file(const char *path, cJSON **out)
{
	*out = NULL;
	char *buf;
	size_t len;
	int rc = fs_read_all(path, &buf, &len);
	if (rc)
		return rc;
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(buf, len, &end, 0);
	if (!root) {
		int line = 1, col = 1;
		const char *at = end ? end : cJSON_GetErrorPtr();
		if (at && at >= buf && at <= buf + len) {
			for (const char *p = buf; p < at; p++) {
				if (*p == '\n') {
					line++;
					col = 1;
				} else {
					col++;
				}
			}
		}
		free(buf);
		return ascent_error(ASCENT_EINPUT, "'%s' is not valid JSON (near line %d, column %d)", path, line, col);
	}
	free(buf);
	*out = root;
	return 0;
}

int json_write_file(const char *path, const cJSON *root)
{
	char *s = cJSON_Print(root);
	if (!s)
		return ascent_error(ASCENT_ENOMEM, "out of memory printing JSON for '%s'", path);
	size_t n = strlen(s);
	s[n] = '\n';          /* cJSON_Print leaves room for the NUL we overwrite */
	int rc = atomic_write_file(path, s, n + 1);
	free(s);
	return rc;
}

void json_fput_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; p && *p; p++) {
		unsigned c = *p;
		if (c == '"' || c == '\\') {
			fputc('\\', f);
			fputc((int)c, f);
		} else if (c == '\n') {
			fputs("\\n", f);
		} else if (c == '\t') {
			fputs("\\t", f);
		} else if (c < 0x20 || c >= 0x7f) {
			fprintf(f, "\\u%04x", c);
		} else {
			fputc((int)c, f);
		}
	}
	fputc('"', f);
}
