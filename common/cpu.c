/* common/cpu.c — CPU identification (cpuid), default thread counts, peak RSS. */
#include "common/common.h"

#include <cpuid.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void cpu_detect(struct cpu_info *c)
{
	memset(c, 0, sizeof *c);
	unsigned a = 0, b = 0, cx = 0, d = 0;
	if (__get_cpuid(0, &a, &b, &cx, &d)) {
		memcpy(c->vendor, &b, 4);
		memcpy(c->vendor + 4, &d, 4);
		memcpy(c->vendor + 8, &cx, 4);
	}
	unsigned maxleaf = a;
	if (__get_cpuid(1, &a, &b, &cx, &d)) {
		unsigned fam = (a >> 8) & 0xf, mod = (a >> 4) & 0xf;
		if (fam == 6 || fam == 15)
			mod |= ((a >> 16) & 0xf) << 4;
		if (fam == 15)
			fam += (a >> 20) & 0xff;
		c->family = (int)fam;
		c->model = (int)mod;
		c->stepping = (int)(a & 0xf);
		c->fma = (cx >> 12) & 1;
	}
	if (maxleaf >= 7) {
		__cpuid_count(7, 0, a, b, cx, d);
		c->avx2 = (b >> 5) & 1;
		c->avx512f = (b >> 16) & 1;
		c->avx512bw = (b >> 30) & 1;
		c->avx512vl = (b >> 31) & 1;
		c->avx512vnni = (cx >> 11) & 1;
		c->avx512fp16 = (d >> 23) & 1;
		c->amx = (d >> 24) & 1;
		__cpuid_count(7, 1, a, b, cx, d);
		c->avx512bf16 = (a >> 5) & 1;
	}
	unsigned ext = __get_cpuid_max(0x80000000u, NULL);
	if (ext >= 0x80000004u) {
		unsigned regs[12];
		for (unsigned i = 0; i < 3; i++)
			__get_cpuid(0x80000002u + i, &regs[i * 4], &regs[i * 4 + 1], &regs[i * 4 + 2],
				    &regs[i * 4 + 3]);
		memcpy(c->brand, regs, sizeof c->brand - 1 < 48 ? sizeof c->brand - 1 : 48);
		char *s = c->brand;
		while (*s == ' ')
			s++;
		memmove(c->brand, s, strlen(s) + 1);
		size_t len = strlen(c->brand);
		while (len && c->brand[len - 1] == ' ')
			c->brand[--len] = 0;
	}
	cpu_set_t set;
	if (sched_getaffinity(0, sizeof set, &set) == 0)
		c->online_cpus = CPU_COUNT(&set);
	if (c->online_cpus <= 0)
		c->online_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	if (c->online_cpus <= 0)
		c->online_cpus = 1;
}

int cpu_default_threads(int ranks_on_host)
{
	struct cpu_info c;
	cpu_detect(&c);
	if (ranks_on_host < 1)
		ranks_on_host = 1;
	int t = c.online_cpus / ranks_on_host;
	return t < 1 ? 1 : t;
}

int64_t cpu_peak_rss_bytes(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (int64_t)ru.ru_maxrss * 1024;
}

void cpu_isa_describe(const struct cpu_info *c, char *out, size_t n)
{
	const struct {
		int has;
		const char *name;
	} ext[] = {
		{c->amx, "amx"},
		{c->avx512fp16, "avx512_fp16"},
		{c->avx512bf16, "avx512_bf16"},
		{c->avx512vnni, "avx512_vnni"},
		{c->avx512f, "avx512"},
		{c->avx2, "avx2"},
	};
	size_t used = 0;
	if (n)
		out[0] = 0;
	for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++)
		if (ext[i].has && used < n)
			used += (size_t)snprintf(out + used, n - used, "%s%s", used ? "+" : "", ext[i].name);
	if (!used && n)
		snprintf(out, n, "none");
}
