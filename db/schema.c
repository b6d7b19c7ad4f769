/* db/schema.c — the schema text embedded into the binary (db/schema.sql via the assembler's
 * .incbin; the Makefile makes schema.o depend on schema.sql) and the names of the codes. */
#include "db/internal.h"

#include <stdio.h>
#include <string.h>

__asm__(".section .rodata\n"
	".global db_schema_sql\n"
	".type db_schema_sql, @object\n"
	"db_schema_sql:\n"
	".incbin \"db/schema.sql\"\n"
	".byte 0\n"
	".size db_schema_sql, . - db_schema_sql\n"
	".previous\n");

static const char *const KINDS[DB_KIND_COUNT] = { "op", "comm", "p2p", "step", "phase",
						   "data", "io", "checkpoint", "range", "microbatch", "wait",
						   "kernel", "memcpy", "memset" };
static const char *const CATS[DB_MEM_COUNT] = { "param", "grad", "optimizer", "activation",
						 "comm_buffer", "workspace", "other" };

const char *db_kind_name(int kind)
{
	return kind >= 0 && kind < DB_KIND_COUNT ? KINDS[kind] : "?";
}

const char *db_mem_cat_name(int cat)
{
	return cat >= 0 && cat < DB_MEM_COUNT ? CATS[cat] : "?";
}

const char *db_mem_device_name(int device, char *buf, size_t n)
{
	if (device == DB_MEM_HOST)
		snprintf(buf, n, "host");
	else if (device >= 0)
		snprintf(buf, n, "device %d", device);
	else
		snprintf(buf, n, "unknown");
	return buf;
}

const char *db_schema_indexes(void)
{
	const char *m = strstr(db_schema_sql, "@@INDEXES@@");
	if (!m)
		return "";
	m = strchr(m, '\n');
	return m ? m + 1 : "";
}
