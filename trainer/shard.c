/* trainer/shard.c — llm.c token shards: a 256 × int32 little-endian header (magic 20240520,
 * version 1, token count, zeros) followed by the tokens as uint16 little-endian. A shard is valid
 * iff its size is exactly 1024 + 2·count; anything else is refused with what is wrong. */
#include "trainer/trainer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define HDR_INTS 256
#define HDR_BYTES (HDR_INTS * 4)

static uint32_t rd32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void wr32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

void trainer_tokens_release(struct trainer_tokens *t)
{
	if (!t)
		return;
	free(t->tok);
	t->tok = NULL;
	t->n = 0;
}

int trainer_is_shard(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	unsigned char b[4];
	int ok = fread(b, 1, 4, f) == 4 && rd32(b) == TRAINER_SHARD_MAGIC;
	fclose(f);
	return ok;
}

int trainer_shard_write(const char *path, const uint16_t *tok, size_t n)
{
	if (n >= (size_t)1 << 31)
		return ascent_error(ASCENT_EINPUT, "cannot write '%s': %zu tokens, an llm.c shard holds fewer than 2^31", path, n);
	struct atomic_file af;
	int rc = atomic_open(&af, path);
	if (rc)
		return rc;
	unsigned char hdr[HDR_BYTES] = { 0 };
	wr32(hdr, TRAINER_SHARD_MAGIC);
	wr32(hdr + 4, TRAINER_SHARD_VERSION);
	wr32(hdr + 8, (uint32_t)n);
	fwrite(hdr, 1, sizeof hdr, af.f);
	unsigned char buf[8192];
	for (size_t i = 0; i < n;) {
		size_t k = 0;
		for (; k < sizeof buf / 2 && i < n; k++, i++) {
			buf[2 * k] = (unsigned char)tok[i];
			buf[2 * k + 1] = (unsigned char)(tok[i] >> 8);
		}
		fwrite(buf, 1, 2 * k, af.f);
	}
	return atomic_commit(&af);
}

int trainer_shard_read(const char *path, int vocab_size, struct trainer_tokens *out)
{
	out->tok = NULL;
	out->n = 0;
	FILE *f = fopen(path, "rb");
	if (!f)
		return ascent_error(errno == ENOENT ? ASCENT_EINPUT : ASCENT_EIO, "cannot open '%s': %s", path, strerror(errno));
	struct stat st;
	if (fstat(fileno(f), &st)) {
		fclose(f);
		return ascent_error(ASCENT_EIO, "cannot stat '%s': %s", path, strerror(errno));
	}
	unsigned char hdr[HDR_BYTES];
	size_t got = fread(hdr, 1, sizeof hdr, f);
	if (got < sizeof hdr) {
		fclose(f);
		return ascent_error(ASCENT_EINPUT,
				    "'%s' is not an llm.c token shard: %zu bytes, shorter than the 1024-byte header "
				    "(write shards with 'ascent tokenize')",
				    path, (size_t)st.st_size);
	}
	uint32_t magic = rd32(hdr), version = rd32(hdr + 4), count = rd32(hdr + 8);
	int rc = 0;
	if (magic != TRAINER_SHARD_MAGIC)
		rc = ascent_error(ASCENT_EINPUT,
				  "'%s' is not an llm.c token shard: magic %u, expected %u (write shards with 'ascent tokenize')",
				  path, magic, TRAINER_SHARD_MAGIC);
	else if (version != TRAINER_SHARD_VERSION)
		rc = ascent_error(ASCENT_EINPUT, "'%s': llm.c shard version %u is not supported (only version %d, uint16 tokens)",
				  path, version, TRAINER_SHARD_VERSION);
	else if (count >= (uint32_t)1 << 31)
		rc = ascent_error(ASCENT_EINPUT, "'%s': the header claims %u tokens, more than a shard may hold (2^31 - 1)", path,
				  count);
	else if ((uint64_t)st.st_size != HDR_BYTES + 2 * (uint64_t)count)
		rc = ascent_error(ASCENT_EINPUT,
				  "'%s' is %s: the header says %u tokens, so %llu bytes, but the file has %llu bytes",
				  path, (uint64_t)st.st_size < HDR_BYTES + 2 * (uint64_t)count ? "truncated" : "corrupt (trailing bytes)",
				  count, (unsigned long long)(HDR_BYTES + 2 * (uint64_t)count), (unsigned long long)st.st_size);
	if (rc) {
		fclose(f);
		return rc;
	}
	uint16_t *tok = malloc((count ? count : 1) * sizeof *tok);
	if (!tok) {
		fclose(f);
		return ascent_error(ASCENT_ENOMEM, "out of memory reading '%s' (%u tokens)", path, count);
	}
	unsigned char buf[8192];
	for (size_t i = 0; i < count;) {
		size_t want = count - i < sizeof buf / 2 ? count - i : sizeof buf / 2;
		if (fread(buf, 2, want, f) != want) {
			free(tok);
			fclose(f);
			return ascent_error(ASCENT_EIO, "cannot read '%s': short read at token %zu", path, i);
		}
		for (size_t k = 0; k < want; k++, i++) {
			tok[i] = (uint16_t)(buf[2 * k] | buf[2 * k + 1] << 8);
			if (tok[i] >= vocab_size) {
				rc = ascent_error(ASCENT_EINPUT,
						  "'%s': token %u at position %zu is out of the vocabulary (vocab_size %d); "
						  "was the shard written for another tokenizer?",
						  path, tok[i], i, vocab_size);
				free(tok);
				fclose(f);
				return rc;
			}
		}
	}
	fclose(f);
	out->tok = tok;
	out->n = count;
	return 0;
}
