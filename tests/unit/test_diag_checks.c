/* tests/unit/test_diag_checks.c — diag/: version parsing and comparison, collection from fixture
 * trees, the compatibility matrix (compatible / unknown / known incompatible), cross-rank diffs,
 * sysfs network and RDMA parsing, interface selection grammar, env checks, the memory estimator
 * and the report's JSON contract. Fixture trees live in tests/fixtures/diag. */
#include "diag/diag.h"

#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

static char fixture[4096];

static const char *fx(const char *rel)
{
	const char *root = getenv("ASCENT_ROOT");
	snprintf(fixture, sizeof fixture, "%s/tests/fixtures/diag/%s", root && *root ? root : ".", rel);
	return fixture;
}

static cJSON *load_matrix(void)
{
	const char *root = getenv("ASCENT_ROOT");
	char p[4096];
	snprintf(p, sizeof p, "%s/samples/version_matrix.json", root && *root ? root : ".");
	cJSON *m;
	cr_assert_eq(json_read_file(p, &m), 0, "%s", ascent_errmsg());
	return m;
}

static enum diag_status status_of(const struct diag_report *r, const char *name)
{
	const struct diag_check *c = diag_report_find(r, name);
	cr_assert_not_null(c, "no check '%s'", name);
	return c->status;
}

Test(diag, version_cmp)
{
	cr_assert_eq(diag_version_cmp("12.4", "12.4.0"), 0);
	cr_assert_lt(diag_version_cmp("12.4.1", "12.10"), 0);
	cr_assert_lt(diag_version_cmp("8.0.RC2", "8.0.0"), 0);
	cr_assert_lt(diag_version_cmp("8.0.RC1", "8.0.RC2"), 0);
	cr_assert_eq(diag_version_cmp("24.1.rc2", "24.1.RC2"), 0);
	cr_assert_gt(diag_version_cmp("535.129.03", "535.104.05"), 0);
	cr_assert_lt(diag_version_cmp("470.82.01", "525.60.13"), 0);
	cr_assert_gt(diag_version_cmp("2.1.0.post10", "2.1.0.post4"), 0);
	cr_assert(diag_version_has_prefix("12.4.1", "12.4"));
	cr_assert(!diag_version_has_prefix("12.41", "12.4"));
	cr_assert(diag_version_has_prefix("2.21.5.1", "2.21.5"));
}

Test(diag, parsers)
{
	char v[128];
	cr_assert(diag_kv_find("NAME=\"Debian\"\nVERSION_ID=\"12\"\n", "VERSION_ID", '=', v, sizeof v));
	cr_assert_str_eq(v, "12");
	cr_assert(!diag_kv_find("VERSION_IDX=1\n", "VERSION_ID", '=', v, sizeof v));
	cr_assert(diag_kv_find("Name: torch\nVersion: 2.1.0+cpu\n", "Version", ':', v, sizeof v));
	cr_assert_str_eq(v, "2.1.0+cpu");
	cr_assert(diag_parse_nvidia_proc("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.129.03  Thu Oct 19\n", v,
					 sizeof v));
	cr_assert_str_eq(v, "535.129.03");
	cr_assert(diag_parse_cuda_version("{\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"12.2.2\"}}", v, sizeof v));
	cr_assert_str_eq(v, "12.2.2");
	cr_assert(diag_parse_cuda_version("CUDA Version 10.2.89\n", v, sizeof v));
	cr_assert_str_eq(v, "10.2.89");
	cr_assert(diag_parse_nccl_header("#define NCCL_MAJOR 2\n#define NCCL_MINOR 18\n#define NCCL_PATCH 1\n", v, sizeof v));
	cr_assert_str_eq(v, "2.18.1");
	cr_assert(!diag_parse_nccl_header("#define NCCL_MAJOR 2\n", v, sizeof v));
	cr_assert(diag_parse_cann_info("package_name=Ascend-cann-toolkit\nversion=8.0.RC2\n", v, sizeof v));
	cr_assert_str_eq(v, "8.0.RC2");
	cr_assert(diag_parse_cann_info("runtime_running_version=[7.5.0.1.129:8.0.0]\n", v, sizeof v));
	cr_assert_str_eq(v, "8.0.0");
}

Test(diag, collect_fixture_ascend)
{
	struct diag_versions vs;
	cr_assert_eq(diag_versions_collect(fx("root-ascend"), 0, &vs), 0);
	cr_assert_str_eq(diag_versions_get(&vs, "os"), "ubuntu 22.04");
	cr_assert_str_eq(diag_versions_get(&vs, "kernel"), "5.15.0-101-generic");
	cr_assert_str_eq(diag_versions_get(&vs, "ascend_driver"), "24.1.rc2");
	cr_assert_str_eq(diag_versions_get(&vs, "ascend_firmware"), "7.3.0.1.231");
	cr_assert_str_eq(diag_versions_get(&vs, "cann"), "8.0.0");
	cr_assert_str_eq(diag_versions_get(&vs, "torch"), "2.1.0+cpu");
	cr_assert_str_eq(diag_versions_get(&vs, "torch_npu"), "2.1.0.post10");
	cr_assert_str_eq(diag_versions_get(&vs, "numpy"), "1.26.4");
	cr_assert_null(diag_versions_get(&vs, "cuda"));
	cr_assert_null(diag_versions_get(&vs, "glibc"), "library versions are not collected for a fixture root");
}

Test(diag, collect_fixture_nvidia)
{
	struct diag_versions vs;
	cr_assert_eq(diag_versions_collect(fx("root-nvidia"), 0, &vs), 0);
	cr_assert_str_eq(diag_versions_get(&vs, "nvidia_driver"), "535.129.03");
	cr_assert_str_eq(diag_versions_get(&vs, "cuda"), "12.2.2");
	cr_assert_str_eq(diag_versions_get(&vs, "nccl"), "2.18.1");
	cr_assert_str_eq(diag_versions_get(&vs, "torch"), "2.1.2", "egg-info PKG-INFO");
	cr_assert_eq(diag_versions_collect(fx("root-nvidia-bad"), 0, &vs), 0);
	cr_assert_str_eq(diag_versions_get(&vs, "nccl"), "2.10.3", "from libnccl.so.X.Y.Z");
	cr_assert_eq(diag_versions_collect(fx("root-ascend-bad"), 0, &vs), 0);
	cr_assert_str_eq(diag_versions_get(&vs, "cann"), "8.0.0", "from version.cfg");
}

Test(diag, collect_real_machine_libs)
{
	struct diag_versions vs;
	cr_assert_eq(diag_versions_collect(NULL, 1, &vs), 0);
	cr_assert_not_null(diag_versions_get(&vs, "glibc"));
	cr_assert_not_null(diag_versions_get(&vs, "openblas"));
	cr_assert_not_null(diag_versions_get(&vs, "mpi"));
	cr_assert_not_null(diag_versions_get(&vs, "onednn"));
	cr_assert_str_eq(diag_versions_get(&vs, "cjson"), cJSON_Version());
}

/* One matrix check on a hand-made set of versions; returns the status of `check`. */
static enum diag_status matrix_status(const char *check, const char *const *kv)
{
	struct diag_versions vs = { 0 };
	for (int i = 0; kv[i]; i += 2)
		diag_versions_set(&vs, kv[i], kv[i + 1], "", "test");
	cJSON *m = load_matrix();
	struct diag_report r;
	diag_report_init(&r);
	diag_versions_check_matrix(&vs, m, &r);
	enum diag_status st = status_of(&r, check);
	diag_report_release(&r);
	cJSON_Delete(m);
	return st;
}

Test(diag, matrix_torch_npu)
{
	const char *ok[] = { "torch_npu", "2.1.0.post10", "torch", "2.1.0+cpu", "cann", "8.0.0", NULL };
	cr_assert_eq(matrix_status("versions.matrix.torch_npu", ok), DIAG_PASS);
	const char *bad[] = { "torch_npu", "2.1.0.post10", "torch", "2.2.0", "cann", "8.0.0", NULL };
	cr_assert_eq(matrix_status("versions.matrix.torch_npu", bad), DIAG_FAIL);
	const char *unk_cann[] = { "torch_npu", "2.1.0.post10", "torch", "2.1.0", "cann", "7.0.0", NULL };
	cr_assert_eq(matrix_status("versions.matrix.torch_npu", unk_cann), DIAG_WARN);
	const char *unk[] = { "torch_npu", "9.9.9", "torch", "9.9.9", NULL };
	cr_assert_eq(matrix_status("versions.matrix.torch_npu", unk), DIAG_WARN);
}

Test(diag, matrix_cann_driver)
{
	const char *ok[] = { "cann", "8.0.RC1", "ascend_driver", "24.1.rc1", NULL };
	cr_assert_eq(matrix_status("versions.matrix.cann_driver", ok), DIAG_PASS);
	const char *old[] = { "cann", "8.0.RC1", "ascend_driver", "23.0.3", NULL };
	cr_assert_eq(matrix_status("versions.matrix.cann_driver", old), DIAG_FAIL);
	const char *newer[] = { "cann", "8.0.RC1", "ascend_driver", "24.1.rc3", NULL };
	cr_assert_eq(matrix_status("versions.matrix.cann_driver", newer), DIAG_WARN);
}

Test(diag, matrix_cuda_driver)
{
	const char *ok[] = { "cuda", "12.2.2", "nvidia_driver", "535.129.03", NULL };
	cr_assert_eq(matrix_status("versions.matrix.cuda_driver", ok), DIAG_PASS);
	/* below 12.2 Update 2's 535.104.05 but above 12.x's minor-version minimum 525.60.13 */
	const char *minor[] = { "cuda", "12.2.2", "nvidia_driver", "530.30.02", NULL };
	cr_assert_eq(matrix_status("versions.matrix.cuda_driver", minor), DIAG_WARN);
	const char *bad[] = { "cuda", "12.2.2", "nvidia_driver", "470.82.01", NULL };
	cr_assert_eq(matrix_status("versions.matrix.cuda_driver", bad), DIAG_FAIL);
}

Test(diag, matrix_nccl_cuda)
{
	const char *ok[] = { "nccl", "2.12.10", "cuda", "11.6.2", NULL };
	cr_assert_eq(matrix_status("versions.matrix.nccl_cuda", ok), DIAG_PASS);
	const char *range[] = { "nccl", "2.21.5", "cuda", "12.4.1", NULL };
	cr_assert_eq(matrix_status("versions.matrix.nccl_cuda", range), DIAG_PASS);
	const char *unk[] = { "nccl", "2.10.3", "cuda", "12.2", NULL };
	cr_assert_eq(matrix_status("versions.matrix.nccl_cuda", unk), DIAG_WARN);
}

Test(diag, versions_across_ranks)
{
	struct diag_versions *vs = calloc(3, sizeof *vs);
	for (int i = 0; i < 3; i++) {
		diag_versions_set(&vs[i], "mpi", "4.1.4", "", "");
		diag_versions_set(&vs[i], "openblas", "0.3.21", "", "");
	}
	const char *hosts[] = { "n0", "n1", "n2" };
	struct diag_report r;
	diag_report_init(&r);
	diag_versions_compare_ranks(vs, hosts, 3, &r);
	cr_assert_eq(status_of(&r, "versions.ranks"), DIAG_PASS);
	diag_report_release(&r);
	diag_versions_set(&vs[2], "openblas", "0.3.26", "", "");
	diag_report_init(&r);
	diag_versions_compare_ranks(vs, hosts, 3, &r);
	const struct diag_check *c = diag_report_find(&r, "versions.ranks");
	cr_assert_eq(c->status, DIAG_FAIL);
	cr_assert(strstr(c->message, "rank 2 (n2) has 0.3.26"), "%s", c->message);
	cr_assert(strstr(c->message, "0.3.21 on 2 ranks"), "%s", c->message);
	diag_report_release(&r);
	free(vs);
}

Test(diag, net_scan_fixture)
{
	struct diag_net *n = calloc(1, sizeof *n);
	cr_assert_eq(diag_net_scan(fx("sysfs-roce"), n), 0);
	cr_assert_eq(n->nifs, 5);
	cr_assert_str_eq(n->ifs[0].name, "ens1f0");
	cr_assert_eq(n->ifs[0].mtu, 1500);
	cr_assert_eq(n->ifs[0].speed_mbps, 100000);
	cr_assert_str_eq(n->ifs[3].name, "ib0");
	cr_assert_eq(n->ifs[3].type, 32);
	cr_assert_eq(n->ifs[3].speed_mbps, -1);
	cr_assert_eq(n->nports, 3);
	cr_assert_str_eq(n->ports[0].dev, "mlx5_0");
	cr_assert_eq(n->ports[0].state, 4);
	cr_assert_str_eq(n->ports[0].state_str, "ACTIVE");
	cr_assert_eq(n->ports[0].phys_state, 5);
	cr_assert_str_eq(n->ports[0].rate, "100 Gb/sec (4X EDR)");
	cr_assert_str_eq(n->ports[0].link_layer, "Ethernet");
	cr_assert_str_eq(n->ports[0].netdev, "ens1f0");
	cr_assert_eq(n->ports[2].state, 1);
	cr_assert_str_eq(n->ports[2].phys_str, "Disabled");
	cr_assert_str_eq(n->ports[2].netdev, "");
	cr_assert_neq(diag_net_scan("/nonexistent-sysfs", n), 0);
	free(n);
}

Test(diag, roce_mtu_and_ifname_grammar)
{
	cr_assert_eq(diag_roce_mtu(1500), 1024);
	cr_assert_eq(diag_roce_mtu(1400), 1024);
	cr_assert_eq(diag_roce_mtu(4200), 4096);
	cr_assert_eq(diag_roce_mtu(4191), 2048);
	cr_assert_eq(diag_roce_mtu(9000), 4096);
	cr_assert_eq(diag_roce_mtu(300), 0);
	cr_assert(diag_ifname_match("eth,enp", "eth0"));
	cr_assert(diag_ifname_match("eth,enp", "enp3s0"));
	cr_assert(!diag_ifname_match("eth,enp", "ib0"));
	cr_assert(diag_ifname_match("bond0", "bond0.2093"), "a prefix also matches VLANs");
	cr_assert(!diag_ifname_match("=bond0", "bond0.2093"));
	cr_assert(diag_ifname_match("=bond0", "bond0"));
	cr_assert(!diag_ifname_match("^docker,lo", "docker0"));
	cr_assert(diag_ifname_match("^docker,lo", "eth0"));
	cr_assert(!diag_ifname_match("^=eth0", "eth0"));
	cr_assert(diag_ifname_match("^=eth0", "eth01"));
}

Test(diag, net_mtu_across_hosts)
{
	/* 3 hosts x 2 ranks; node3 at 1500 while node1 and node2 have 9000 */
	struct diag_net_host h[6] = {
		{ "node1", "eth0", 9000 }, { "node1", "eth0", 9000 }, { "node2", "eth0", 9000 },
		{ "node2", "eth0", 9000 }, { "node3", "eth0", 1500 }, { "node3", "eth0", 1500 },
	};
	struct diag_report r;
	cr_assert_eq(diag_report_init(&r), 0);
	cr_assert_eq(diag_net_compare_hosts(h, 6, &r), 0);
	const struct diag_check *c = diag_report_find(&r, "net.mtu.hosts");
	cr_assert(c && c->status == DIAG_FAIL);
	cr_assert(strstr(c->message, "node3 (eth0) has MTU 1500"), "%s", c->message);
	cr_assert(strstr(c->message, "2 host(s) have 9000 (node1, node2)"), "%s", c->message);
	diag_report_release(&r);
	/* every host alike: PASS counting hosts, not ranks */
	h[4].mtu = h[5].mtu = 9000;
	cr_assert_eq(diag_report_init(&r), 0);
	cr_assert_eq(diag_net_compare_hosts(h, 6, &r), 0);
	c = diag_report_find(&r, "net.mtu.hosts");
	cr_assert(c && c->status == DIAG_PASS && strstr(c->message, "3 hosts"), "%s", c ? c->message : "");
	diag_report_release(&r);
	/* a host without a training interface up is named; one host alone is SKIP */
	h[2].mtu = h[3].mtu = -1;
	h[2].iface[0] = h[3].iface[0] = 0;
	cr_assert_eq(diag_report_init(&r), 0);
	cr_assert_eq(diag_net_compare_hosts(h, 6, &r), 0);
	c = diag_report_find(&r, "net.mtu.hosts");
	cr_assert(c && c->status == DIAG_FAIL && strstr(c->message, "node2 has no training interface up"), "%s",
		  c ? c->message : "");
	diag_report_release(&r);
	cr_assert_eq(diag_report_init(&r), 0);
	cr_assert_eq(diag_net_compare_hosts(h, 2, &r), 0);
	cr_assert_eq(status_of(&r, "net.mtu.hosts"), DIAG_SKIP);
	diag_report_release(&r);
}

static struct diag_report net_run(const char *iface, int expect_mtu)
{
	struct diag_report r;
	diag_report_init(&r);
	struct diag_net_opts o = { .sysfs = fx("sysfs-roce"), .iface = iface, .expect_mtu = expect_mtu };
	cr_assert_eq(diag_net_run(&o, &r), 0, "%s", ascent_errmsg());
	return r;
}

Test(diag, net_checks_fixture)
{
	unsetenv("NCCL_SOCKET_IFNAME");
	unsetenv("HCCL_SOCKET_IFNAME");
	unsetenv("ASCENT_IFNAME");
	unsetenv("NCCL_IB_HCA");
	struct diag_report r = net_run("ens2f0", 0);
	cr_assert_eq(status_of(&r, "net.iface.ens2f0"), DIAG_PASS);
	cr_assert_eq(status_of(&r, "net.rdma.mlx5_1.1"), DIAG_PASS);
	cr_assert_eq(status_of(&r, "net.rdma.mlx5_0.1"), DIAG_WARN, "RoCE on MTU 1500 gets RDMA MTU 1024");
	cr_assert_eq(status_of(&r, "net.rdma.mlx5_2.1"), DIAG_WARN, "a down port nobody selected");
	diag_report_release(&r);
	r = net_run("ens1f0", 0);
	cr_assert_eq(status_of(&r, "net.iface.ens1f0"), DIAG_WARN);
	diag_report_release(&r);
	r = net_run("eth0", 9000);
	cr_assert_eq(status_of(&r, "net.iface.eth0"), DIAG_WARN);
	diag_report_release(&r);
	r = net_run("ib0", 0);
	cr_assert_eq(status_of(&r, "net.iface.ib0"), DIAG_FAIL);
	diag_report_release(&r);
	r = net_run("nosuch0", 0);
	cr_assert_eq(status_of(&r, "net.iface"), DIAG_FAIL);
	diag_report_release(&r);
	setenv("NCCL_IB_HCA", "=mlx5_2", 1);
	r = net_run(NULL, 0);
	cr_assert_eq(status_of(&r, "net.rdma.mlx5_2.1"), DIAG_FAIL);
	diag_report_release(&r);
	unsetenv("NCCL_IB_HCA");
	setenv("NCCL_SOCKET_IFNAME", "^ens,eth,ib", 1);
	r = net_run(NULL, 0);
	cr_assert_eq(status_of(&r, "net.select.NCCL_SOCKET_IFNAME"), DIAG_FAIL, "only lo is left and it is skipped");
	diag_report_release(&r);
	setenv("NCCL_SOCKET_IFNAME", "ens", 1);
	r = net_run(NULL, 0);
	cr_assert_eq(status_of(&r, "net.iface.ens1f0"), DIAG_WARN);
	cr_assert_eq(status_of(&r, "net.iface.ens2f0"), DIAG_PASS);
	diag_report_release(&r);
}

Test(diag, env_launcher)
{
	struct diag_report r;
	struct diag_env_rank e;
	setenv("RANK", "1", 1);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("WORLD_SIZE", "2", 1);
	setenv("LOCAL_RANK", "1", 1);
	setenv("LOCAL_WORLD_SIZE", "2", 1);
	setenv("MASTER_PORT", "29500", 1);
	diag_report_init(&r);
	diag_env_launcher(&r, &e);
	cr_assert_eq(status_of(&r, "env.launcher"), DIAG_PASS);
	cr_assert_eq(e.rank, 1);
	cr_assert_eq(e.world_size, 2);
	cr_assert_eq(e.master_port, 29500);
	diag_report_release(&r);
	setenv("OMPI_COMM_WORLD_RANK", "0", 1);
	setenv("MASTER_PORT", "http", 1);
	diag_report_init(&r);
	diag_env_launcher(&r, &e);
	cr_assert_eq(status_of(&r, "env.launcher.OMPI_COMM_WORLD_RANK"), DIAG_FAIL);
	cr_assert_eq(status_of(&r, "env.launcher.MASTER_PORT"), DIAG_FAIL);
	cr_assert_null(diag_report_find(&r, "env.launcher"));
	diag_report_release(&r);
	setenv("OMPI_COMM_WORLD_RANK", "1", 1);
	setenv("MASTER_PORT", "29500", 1);
	setenv("WORLD_SIZE", "4", 1);
	setenv("MASTER_ADDR", "127.0.0.1", 1);
	diag_report_init(&r);
	diag_env_launcher(&r, &e);
	cr_assert_eq(status_of(&r, "env.launcher.MASTER_ADDR"), DIAG_FAIL, "loopback master with 2 hosts");
	diag_report_release(&r);
}

Test(diag, env_compare_ranks)
{
	struct diag_env_rank e[4];
	memset(e, 0, sizeof e);
	for (int i = 0; i < 4; i++) {
		snprintf(e[i].host, sizeof e[i].host, "n%d", i / 2);
		e[i].rank = i;
		e[i].world_size = 4;
		e[i].local_rank = i % 2;
		e[i].local_world_size = 2;
		e[i].master_port = 29500;
		snprintf(e[i].master_addr, sizeof e[i].master_addr, "n0");
	}
	struct diag_report r;
	diag_report_init(&r);
	diag_env_compare_ranks(e, 4, &r);
	cr_assert_eq(status_of(&r, "env.ranks"), DIAG_PASS);
	diag_report_release(&r);
	e[3].local_rank = 0;   /* duplicate (n1, 0) */
	e[3].rank = 2;         /* RANK 2 twice, 3 missing */
	e[1].world_size = 8;
	diag_report_init(&r);
	diag_env_compare_ranks(e, 4, &r);
	const struct diag_check *c = diag_report_find(&r, "env.ranks");
	cr_assert_eq(c->status, DIAG_FAIL);
	cr_assert(strstr(c->message, "ranks 2 and 3 both have local rank 0 on n1"), "%s", c->message);
	cr_assert(strstr(c->message, "no process has RANK 3"), "%s", c->message);
	cr_assert(strstr(c->message, "rank 1 (n0) has world size 8"), "%s", c->message);
	diag_report_release(&r);
}

Test(diag, env_timeouts)
{
	struct diag_report r;
	diag_report_init(&r);
	diag_env_timeouts(&r);
	cr_assert_eq(status_of(&r, "env.timeouts"), DIAG_PASS);
	diag_report_release(&r);
	setenv("HCCL_EXEC_TIMEOUT", "1900", 1);   /* default event timeout 1868 is now below it */
	setenv("HCCL_CONNECT_TIMEOUT", "60", 1);
	setenv("NCCL_IB_TIMEOUT", "x", 1);
	diag_report_init(&r);
	diag_env_timeouts(&r);
	cr_assert_eq(status_of(&r, "env.timeouts.HCCL_EVENT_TIMEOUT"), DIAG_FAIL);
	cr_assert_eq(status_of(&r, "env.timeouts.HCCL_CONNECT_TIMEOUT"), DIAG_FAIL);
	cr_assert_eq(status_of(&r, "env.timeouts.HCCL_EXEC_TIMEOUT"), DIAG_WARN, "1900 is not a multiple of 68");
	cr_assert_eq(status_of(&r, "env.timeouts.NCCL_IB_TIMEOUT"), DIAG_FAIL);
	cr_assert(cJSON_GetArraySize(cJSON_GetObjectItem(r.data, "timeouts")) >= 8);
	diag_report_release(&r);
}

Test(diag, env_threads_blas_memlock_free)
{
	struct diag_report r;
	diag_report_init(&r);
	diag_env_threads(&r, 1, 2, 2);
	cr_assert_eq(r.checks[0].status, DIAG_PASS);
	diag_env_threads(&r, 2, 2, 2);
	cr_assert_eq(r.checks[1].status, DIAG_WARN);
	struct cpu_info ci = { .avx2 = 1, .avx512f = 1 };
	snprintf(ci.brand, sizeof ci.brand, "test cpu");
	diag_env_blas_core(&r, "SkylakeX", &ci);
	cr_assert_eq(r.checks[2].status, DIAG_PASS);
	diag_env_blas_core(&r, "Prescott", &ci);
	cr_assert_eq(r.checks[3].status, DIAG_WARN);
	cr_assert(strstr(r.checks[3].fix, "OPENBLAS_CORETYPE=SkylakeX"));
	cr_assert(strstr(r.checks[3].message, "quoted"), "the speed-up is quoted, not measured: say so");
	diag_env_memlock(&r, 64 << 10, 0);
	cr_assert_eq(r.checks[4].status, DIAG_PASS);
	diag_env_memlock(&r, 64 << 10, 2);
	cr_assert_eq(r.checks[5].status, DIAG_FAIL);
	diag_env_memlock(&r, UINT64_MAX, 2);
	cr_assert_eq(r.checks[6].status, DIAG_PASS);
	int64_t G = 1LL << 30;
	diag_env_free(&r, 8 * G, 16 * G, G, "/tmp", 100 * G, G);
	cr_assert_eq(status_of(&r, "env.memory"), DIAG_PASS);
	cr_assert_eq(status_of(&r, "env.disk"), DIAG_PASS);
	diag_report_release(&r);
	diag_report_init(&r);
	diag_env_free(&r, G / 2, 16 * G, G, "/tmp", G / 4, G);
	cr_assert_eq(status_of(&r, "env.memory"), DIAG_FAIL);
	cr_assert_eq(status_of(&r, "env.disk"), DIAG_FAIL);
	diag_report_release(&r);
}

/* GPT-2 124M with its real vocabulary, to check against the published ZeRO table. */
static struct nn_config gpt2_124m(void)
{
	struct nn_config c = { .vocab_size = 50257, .max_seq = 1024, .n_layer = 12, .n_head = 12, .n_embd = 768 };
	return c;
}

static struct diag_mem_layout layout(int dp, int zero, enum diag_precision p)
{
	struct diag_mem_layout l = { .dp = dp, .tp = 1, .pp = 1, .zero = zero, .precision = p, .microbatches = 1,
				     .batch = 1, .seq = 64 };
	return l;
}

Test(diag, mem_zero_table)
{
	struct nn_config c = gpt2_124m();
	double psi = (double)nn_param_count(&c);
	struct diag_mem_estimate e;
	/* docs/background.md, "ZeRO memory": mixed precision 16Ψ / 4Ψ+12Ψ/Nd / 2Ψ+14Ψ/Nd / 16Ψ/Nd; fp32 16Ψ / 8Ψ+8Ψ/Nd / ... */
	static const double mixed[4] = { 16, 4 + 6, 2 + 7, 8 }, fp32[4] = { 16, 8 + 4, 4 + 6, 8 };
	for (int z = 0; z < 4; z++) {
		struct diag_mem_layout l = layout(2, z, DIAG_BF16);
		diag_mem_estimate(&c, &l, &e);
		double st = (double)(e.bytes[DIAG_MEM_PARAMS] + e.bytes[DIAG_MEM_GRADS] + e.bytes[DIAG_MEM_OPTIMIZER]);
		cr_assert_float_eq(st / psi, mixed[z], 1e-6, "zero %d mixed: %f", z, st / psi);
		l = layout(2, z, DIAG_FP32);
		diag_mem_estimate(&c, &l, &e);
		st = (double)(e.bytes[DIAG_MEM_PARAMS] + e.bytes[DIAG_MEM_GRADS] + e.bytes[DIAG_MEM_OPTIMIZER]);
		cr_assert_float_eq(st / psi, fp32[z], 1e-6, "zero %d fp32: %f", z, st / psi);
	}
	/* 124M, N_d = 2: 1.99 / 1.24 / 1.12 / 1.00 GB */
	struct diag_mem_layout l = layout(2, 1, DIAG_BF16);
	diag_mem_estimate(&c, &l, &e);
	cr_assert_float_eq((e.bytes[0] + e.bytes[1] + e.bytes[2]) / 1e9, 1.24, 0.01);
}

Test(diag, mem_params_split_across_stages_and_tp)
{
	struct nn_config c;
	cr_assert_eq(nn_config_preset("small", &c), 0);
	size_t sz[NN_NPARAMS];
	nn_param_sizes(&c, sz);
	struct diag_mem_layout l = layout(1, 0, DIAG_FP32);
	l.pp = 2;
	struct diag_mem_estimate e[2];
	diag_mem_estimate(&c, &l, e);
	/* stages together hold every parameter once, plus the last stage's copy of the tied wte */
	cr_assert_float_eq(e[0].params + e[1].params, (double)(nn_param_count(&c) + sz[NN_WTE]), 0.5);
	cr_assert_eq(e[0].layers + e[1].layers, c.n_layer);
	l.pp = 1;
	l.tp = 2;
	diag_mem_estimate(&c, &l, e);
	double C = c.n_embd, L = c.n_layer;
	/* nn keeps the whole wte on every TP rank (nn_shard_param_sizes) */
	double want = L * ((12 * C * C + 7 * C) / 2 + 6 * C) + (double)sz[NN_WTE] + sz[NN_WPE] + 2 * C;
	cr_assert_float_eq(e[0].params, want, 0.5);
	cr_assert_neq(diag_mem_layout_validate(&c, &(struct diag_mem_layout){ .dp = 1, .tp = 3, .pp = 1, .microbatches = 1,
									  .batch = 1, .seq = 8 }),
		      0, "3 does not divide 8 heads");
}

Test(diag, mem_activations_inflight_and_recompute)
{
	struct nn_config c;
	cr_assert_eq(nn_config_preset("tiny", &c), 0);
	struct diag_mem_layout l = layout(1, 0, DIAG_FP32);
	l.batch = 2;
	l.seq = 16;
	/* one layer, not first or last (nn/gpt.c slot_layout): residual stream 2·N·C + the layer's
	 * N·(15C + H + 4) floats (attention keeps H log-sum-exps per token, no T×T matrix) + 2·N int32
	 * token ids */
	double N = 32, C = c.n_embd, H = c.n_head;
	cr_assert_eq(diag_mem_activation_bytes(&c, &l, 1, 0, 0), (int64_t)(4 * N * (17 * C + H + 4) + 8 * N));
	int64_t full = diag_mem_activation_bytes(&c, &l, 4, 0, 0);
	cr_assert_eq(full, (int64_t)(4 * (5 * N * C + 4 * N * (15 * C + H + 4)) + 8 * N));
	l.recompute = 1;
	int64_t rec = diag_mem_activation_bytes(&c, &l, 4, 0, 0);
	cr_assert_lt(rec, full);
	/* recompute keeps only the residual stream; the one layer it rebuilds is workspace */
	cr_assert_eq(rec, (int64_t)(4 * 5 * N * C + 8 * N));
	struct diag_mem_estimate er;
	diag_mem_estimate(&c, &l, &er);
	l.recompute = 0;
	struct diag_mem_estimate en;
	diag_mem_estimate(&c, &l, &en);
	cr_assert_eq(er.bytes[DIAG_MEM_WORKSPACE] - en.bytes[DIAG_MEM_WORKSPACE], (int64_t)(4 * N * (15 * C + H + 4)));
	l.recompute = 0;
	l.pp = 4;
	l.microbatches = 8;
	struct diag_mem_estimate e[4];
	diag_mem_estimate(&c, &l, e);
	cr_assert_eq(e[0].in_flight, 4, "1F1B: first stage keeps p micro-batches");
	cr_assert_eq(e[3].in_flight, 1);
	l.schedule = DIAG_GPIPE;
	diag_mem_estimate(&c, &l, e);
	cr_assert_eq(e[3].in_flight, 8);
}

Test(diag, mem_fit_search)
{
	struct nn_config c = gpt2_124m();
	struct diag_mem_layout l = layout(1, 0, DIAG_BF16);
	l.seq = 1024;
	l.batch = 4;
	struct diag_mem_fit *f;
	int n;
	cr_assert_eq(diag_mem_fit_search(&c, &l, 8, 1LL << 40, 0, &f, &n), 0);
	cr_assert_gt(n, 10);
	cr_assert_eq(f[0].l.dp, 8, "with room to spare, plain DP ranks first");
	cr_assert_eq(f[0].l.zero, 0);
	for (int i = 0; i < n; i++)
		cr_assert_eq(f[i].l.dp * f[i].l.tp * f[i].l.pp, 8);
	free(f);
	cr_assert_eq(diag_mem_fit_search(&c, &l, 8, 1 << 20, 0, &f, &n), 0);
	cr_assert_eq(n, 0, "1 MiB fits nothing");
	free(f);
	/* a budget between the ZeRO-0 and ZeRO-3 needs forces sharding or model parallelism */
	struct diag_mem_estimate e;
	l.dp = 8;
	diag_mem_estimate(&c, &l, &e);
	cr_assert_eq(diag_mem_fit_search(&c, &l, 8, e.total - 1, 0, &f, &n), 0);
	cr_assert_gt(n, 0);
	cr_assert(f[0].l.zero > 0 || f[0].l.tp * f[0].l.pp > 1);
	cr_assert_lt(f[0].peak, e.total);
	free(f);
}

Test(diag, report_json_contract_and_verdict)
{
	struct diag_report r;
	diag_report_init(&r);
	diag_ident_add(&r, "host", "n0");
	diag_check_add(&r, DIAG_PASS, "a.one", NULL, "fine %d", 1);
	diag_check_add(&r, DIAG_WARN, "a.two", "do this", "hmm");
	cJSON_AddNumberToObject(r.data, "extra", 7);
	cr_assert_eq(diag_report_verdict(&r), 0);
	cr_assert_eq(diag_report_worst(&r), DIAG_WARN);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	cr_assert_eq(diag_report_print_json(f, &r, "diag test"), 0);
	fclose(f);
	cJSON *doc = cJSON_Parse(buf);
	cr_assert_not_null(doc, "%s", buf);
	cJSON *checks = cJSON_GetObjectItem(doc, "checks");
	cr_assert_eq(cJSON_GetArraySize(checks), 2);
	cJSON *c1 = cJSON_GetArrayItem(checks, 1);
	cr_assert_str_eq(cJSON_GetObjectItem(c1, "name")->valuestring, "a.two");
	cr_assert_str_eq(cJSON_GetObjectItem(c1, "status")->valuestring, "WARN");
	cr_assert_str_eq(cJSON_GetObjectItem(c1, "message")->valuestring, "hmm");
	cr_assert_str_eq(cJSON_GetObjectItem(c1, "fix")->valuestring, "do this");
	cr_assert_eq(cJSON_GetObjectItem(doc, "extra")->valueint, 7);
	cJSON_Delete(doc);
	free(buf);
	diag_check_add(&r, DIAG_FAIL, "a.three", "fix it", "broken");
	cr_assert_eq(diag_report_verdict(&r), ASCENT_EFAIL);
	cr_assert(strstr(ascent_errmsg(), "a.three"));
	struct diag_report all;
	diag_report_init(&all);
	diag_report_merge(&all, &r);
	cr_assert_eq(all.n, 3);
	cr_assert_not_null(cJSON_GetObjectItem(all.data, "extra"));
	diag_report_release(&all);
	diag_report_release(&r);
}
