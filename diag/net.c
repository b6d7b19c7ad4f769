/* diag/net.c — `ascent diag net`: interfaces (state, MTU, speed, type) from sysfs class/net, RDMA
 * devices and ports from class/infiniband the way ibstatus shows them, the RoCE MTU each netdev
 * allows, and checks on the interfaces that carry training traffic (ASCENT_IFNAME,
 * HCCL_SOCKET_IFNAME, NCCL_SOCKET_IFNAME, Open MPI's btl_tcp_if_include, --iface). */
#include "diag/diag.h"

#include "comm/comm.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read a small sysfs file into buf (trimmed); 1 ok, 0 absent or unreadable (e.g. speed of a down
 * link gives EINVAL). */
static int read_attr(const char *dir, const char *name, char *buf, size_t n)
{
	char path[4096];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t len = fread(buf, 1, n - 1, f);
	int err = ferror(f);
	fclose(f);
	if (err)
		return 0;
	buf[len] = 0;
	while (len && isspace((unsigned char)buf[len - 1]))
		buf[--len] = 0;
	return 1;
}

static long attr_long(const char *dir, const char *name, long dflt)
{
	char b[64];
	if (!read_attr(dir, name, b, sizeof b))
		return dflt;
	char *end;
	long v = strtol(b, &end, 10);
	return end == b ? dflt : v;
}

static int cmp_if(const void *a, const void *b)
{
	return strcmp(((const struct diag_netif *)a)->name, ((const struct diag_netif *)b)->name);
}

static int cmp_port(const void *a, const void *b)
{
	const struct diag_rdma_port *x = a, *y = b;
	int c = strcmp(x->dev, y->dev);
	return c ? c : x->port - y->port;
}

/* "4: ACTIVE" → 4 and "ACTIVE" */
static void split_state(const char *s, int *num, char *str, size_t n)
{
	char *end;
	long v = strtol(s, &end, 10);
	*num = end == s ? -1 : (int)v;
	const char *p = strchr(s, ':');
	p = p ? p + 1 : s;
	while (*p == ' ')
		p++;
	snprintf(str, n, "%s", p);
}

static void scan_rdma(const char *sysfs, struct diag_net *out)
{
	char cls[4096];
	snprintf(cls, sizeof cls, "%s/class/infiniband", sysfs);
	DIR *d = opendir(cls);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) && out->nports < DIAG_MAX_RDMA_PORTS) {
		if (e->d_name[0] == '.')
			continue;
		char ports[4200];
		snprintf(ports, sizeof ports, "%.3900s/%.200s/ports", cls, e->d_name);
		DIR *pd = opendir(ports);
		if (!pd)
			continue;
		struct dirent *pe;
		while ((pe = readdir(pd)) && out->nports < DIAG_MAX_RDMA_PORTS) {
			if (!isdigit((unsigned char)pe->d_name[0]))
				continue;
			struct diag_rdma_port *p = &out->ports[out->nports++];
			memset(p, 0, sizeof *p);
			snprintf(p->dev, sizeof p->dev, "%.63s", e->d_name);
			p->port = atoi(pe->d_name);
			char pdir[4400], b[128];
			snprintf(pdir, sizeof pdir, "%.4190s/%.200s", ports, pe->d_name);
			p->state = p->phys_state = -1;
			if (read_attr(pdir, "state", b, sizeof b))
				split_state(b, &p->state, p->state_str, sizeof p->state_str);
			if (read_attr(pdir, "phys_state", b, sizeof b))
				split_state(b, &p->phys_state, p->phys_str, sizeof p->phys_str);
			read_attr(pdir, "rate", p->rate, sizeof p->rate);
			read_attr(pdir, "link_layer", p->link_layer, sizeof p->link_layer);
			/* RoCE netdev: gid_attrs/ndevs/0, else the PCI device's net/ children */
			if (!read_attr(pdir, "gid_attrs/ndevs/0", p->netdev, sizeof p->netdev)) {
				char net[4400];
				snprintf(net, sizeof net, "%s/%s/device/net", cls, e->d_name);
				DIR *nd = opendir(net);
				if (nd) {
					struct dirent *ne;
					while ((ne = readdir(nd)))
						if (ne->d_name[0] != '.') {
							snprintf(p->netdev, sizeof p->netdev, "%.63s", ne->d_name);
							break;
						}
					closedir(nd);
				}
			}
		}
		closedir(pd);
	}
	closedir(d);
	qsort(out->ports, (size_t)out->nports, sizeof out->ports[0], cmp_port);
}

int diag_net_scan(const char *sysfs, struct diag_net *out)
{
	memset(out, 0, sizeof *out);
	if (!sysfs || !*sysfs)
		sysfs = "/sys";
	char cls[4096];
	snprintf(cls, sizeof cls, "%s/class/net", sysfs);
	DIR *d = opendir(cls);
	if (!d)
		return ascent_error(ASCENT_EIO, "cannot read '%s': no network interfaces to check (is sysfs mounted?)",
				    cls);
	struct dirent *e;
	while ((e = readdir(d)) && out->nifs < DIAG_MAX_NETIFS) {
		if (e->d_name[0] == '.')
			continue;
		char dir[4400];
		snprintf(dir, sizeof dir, "%s/%s", cls, e->d_name);
		if (!fs_is_dir(dir))
			continue;
		struct diag_netif *i = &out->ifs[out->nifs++];
		memset(i, 0, sizeof *i);
		snprintf(i->name, sizeof i->name, "%.63s", e->d_name);
		if (!read_attr(dir, "operstate", i->operstate, sizeof i->operstate))
			snprintf(i->operstate, sizeof i->operstate, "unknown");
		i->mtu = (int)attr_long(dir, "mtu", -1);
		i->speed_mbps = attr_long(dir, "speed", -1);
		i->type = (int)attr_long(dir, "type", -1);
		i->carrier = (int)attr_long(dir, "carrier", -1);
	}
	closedir(d);
	qsort(out->ifs, (size_t)out->nifs, sizeof out->ifs[0], cmp_if);
	scan_rdma(sysfs, out);
	return 0;
}

int diag_roce_mtu(int netdev_mtu)
{
	/* include/rdma/ib_addr.h iboe_get_mtu(): GRH 40 + UDP 8 + BTH 12 + XRC 4 + AtomicETH 28 + ICRC 4 */
	int m = netdev_mtu - 96;
	static const int mtus[] = { 4096, 2048, 1024, 512, 256 };
	for (int i = 0; i < 5; i++)
		if (m >= mtus[i])
			return mtus[i];
	return 0;
}

static int match_one(const char *tok, size_t len, const char *ifname)
{
	if (len && tok[0] == '=')
		return strlen(ifname) == len - 1 && !strncmp(ifname, tok + 1, len - 1);
	return len && !strncmp(ifname, tok, len);
}

int diag_ifname_match(const char *spec, const char *ifname)
{
	if (!spec)
		return 0;
	int exclude = spec[0] == '^';
	const char *p = spec + exclude;
	int any = 0;
	while (*p) {
		size_t len = strcspn(p, ",");
		const char *tok = p;
		size_t tl = len;
		while (tl && *tok == ' ') {
			tok++;
			tl--;
		}
		while (tl && tok[tl - 1] == ' ')
			tl--;
		if (match_one(tok, tl, ifname))
			any = 1;
		p += len;
		if (*p == ',')
			p++;
	}
	return exclude ? !any : any;
}

static int list_has_exact(const char *list, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		if (len == nl && !strncmp(p, name, nl))
			return 1;
		p += len;
		if (*p == ',')
			p++;
	}
	return 0;
}

static const struct diag_netif *find_if(const struct diag_net *n, const char *name)
{
	for (int i = 0; i < n->nifs; i++)
		if (!strcmp(n->ifs[i].name, name))
			return &n->ifs[i];
	return NULL;
}

static const char *type_name(int t)
{
	switch (t) {
	case 1: return "ether";
	case 32: return "infiniband";
	case 772: return "loopback";
	case 65534: return "none";
	default: return "other";
	}
}

/* Checks for one interface that carries training traffic (selected by `why`). */
static void check_training_if(const struct diag_net *n, const struct diag_netif *i, const char *why,
			      const struct diag_net_opts *o, struct diag_report *r)
{
	char name[64];
	snprintf(name, sizeof name, "net.iface.%.50s", i->name);
	int up = !strcmp(i->operstate, "up") || (!strcmp(i->operstate, "unknown") && i->carrier == 1);
	if (!up) {
		diag_check_add(r, DIAG_FAIL, name, "bring the link up (ip link set IF up; check cable/switch port) or "
			       "point the *_IFNAME variable at an interface that is up",
			       "training interface %s (%s) is %s (carrier %d)", i->name, why, i->operstate, i->carrier);
		return;
	}
	/* RDMA ports on this netdev */
	const struct diag_rdma_port *rp = NULL;
	for (int k = 0; k < n->nports; k++)
		if (!strcmp(n->ports[k].netdev, i->name))
			rp = &n->ports[k];
	if (o->expect_mtu > 0 && i->mtu < o->expect_mtu) {
		diag_check_add(r, DIAG_WARN, name, "raise the MTU on the interface and on every switch hop (ip link set IF mtu N)",
			       "training interface %s (%s) is up but its MTU %d is below the expected %d", i->name, why, i->mtu,
			       o->expect_mtu);
		return;
	}
	if (rp && !strcmp(rp->link_layer, "Ethernet") && diag_roce_mtu(i->mtu) < o->expect_rdma_mtu) {
		diag_check_add(r, DIAG_WARN, name, "set the netdev MTU >= 4200 (jumbo frames end to end) so RoCE can use 4096",
			       "training interface %s (%s) carries RoCE on %s port %d: netdev MTU %d allows RDMA MTU %d, "
			       "below the expected %d", i->name, why, rp->dev, rp->port, i->mtu, diag_roce_mtu(i->mtu),
			       o->expect_rdma_mtu);
		return;
	}
	char extra[64] = "";
	if (o->expect_mtu > 0)
		snprintf(extra, sizeof extra, " >= expected %d", o->expect_mtu);
	if (rp && !strcmp(rp->link_layer, "Ethernet"))
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra), ", RDMA MTU %d", diag_roce_mtu(i->mtu));
	diag_check_add(r, DIAG_PASS, name, NULL, "training interface %s (%s) is up, MTU %d%s", i->name, why, i->mtu, extra);
}

/* the interfaces: one identity line each, and the "interfaces" array of the JSON */
static void report_interfaces(const struct diag_net *n, struct diag_report *r)
{
	cJSON *ifs = cJSON_AddArrayToObject(r->data, "interfaces");
	for (int k = 0; k < n->nifs; k++) {
		const struct diag_netif *i = &n->ifs[k];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "name", i->name);
		cJSON_AddStringToObject(j, "state", i->operstate);
		cJSON_AddNumberToObject(j, "mtu", i->mtu);
		cJSON_AddNumberToObject(j, "speed_mbps", (double)i->speed_mbps);
		cJSON_AddStringToObject(j, "type", type_name(i->type));
		cJSON_AddNumberToObject(j, "carrier", i->carrier);
		cJSON_AddNumberToObject(j, "roce_mtu", i->type == 1 ? diag_roce_mtu(i->mtu) : 0);
		cJSON_AddItemToArray(ifs, j);
		char speed[32] = "?";
		if (i->speed_mbps > 0)
			snprintf(speed, sizeof speed, "%ld Mb/s", i->speed_mbps);
		char key[80];
		snprintf(key, sizeof key, "if %s", i->name);
		diag_ident_add(r, key, "%-8s mtu %-5d speed %-10s %s", i->operstate, i->mtu, speed, type_name(i->type));
	}
}

/* the RDMA ports: the "rdma_ports" array and a check each (state, physical state, RoCE MTU) */
static void check_rdma_ports(const struct diag_net *n, const struct diag_net_opts *o, const struct diag_net_opts *oo,
			     struct diag_report *r)
{
	cJSON *ports = cJSON_AddArrayToObject(r->data, "rdma_ports");
	for (int k = 0; k < n->nports; k++) {
		const struct diag_rdma_port *p = &n->ports[k];
		cJSON *j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "device", p->dev);
		cJSON_AddNumberToObject(j, "port", p->port);
		cJSON_AddNumberToObject(j, "state", p->state);
		cJSON_AddStringToObject(j, "state_name", p->state_str);
		cJSON_AddNumberToObject(j, "phys_state", p->phys_state);
		cJSON_AddStringToObject(j, "phys_state_name", p->phys_str);
		cJSON_AddStringToObject(j, "rate", p->rate);
		cJSON_AddStringToObject(j, "link_layer", p->link_layer);
		cJSON_AddStringToObject(j, "netdev", p->netdev);
		const struct diag_netif *nd = p->netdev[0] ? find_if(n, p->netdev) : NULL;
		int rm = nd && !strcmp(p->link_layer, "Ethernet") ? diag_roce_mtu(nd->mtu) : 0;
		cJSON_AddNumberToObject(j, "roce_mtu", rm);
		cJSON_AddItemToArray(ports, j);
		char key[96];
		snprintf(key, sizeof key, "rdma %s/%d", p->dev, p->port);
		diag_ident_add(r, key, "state %d: %s, phys %d: %s, rate %s, %s%s%s", p->state, p->state_str, p->phys_state,
			       p->phys_str, p->rate, p->link_layer, p->netdev[0] ? ", netdev " : "", p->netdev);
		char name[64];
		snprintf(name, sizeof name, "net.rdma.%.30s.%d", p->dev, p->port);
		const char *hca = getenv("NCCL_IB_HCA");
		int used = hca && *hca && diag_ifname_match(hca, p->dev);   /* "mlx5_0:1" entries match by prefix */
		if (p->state != 4 || p->phys_state != 5)
			diag_check_add(r, used ? DIAG_FAIL : DIAG_WARN, name,
				       "check the cable and switch port; for InfiniBand, that a subnet manager runs",
				       "RDMA port %s/%d is %d: %s (physical %d: %s); want 4: ACTIVE and 5: LinkUp%s", p->dev,
				       p->port, p->state, p->state_str, p->phys_state, p->phys_str,
				       used ? " (selected by NCCL_IB_HCA)" : "");
		else if (rm && rm < oo->expect_rdma_mtu)
			diag_check_add(r, DIAG_WARN, name, "set the netdev MTU >= 4200 with jumbo frames on every hop",
				       "RoCE port %s/%d on %s: netdev MTU %d allows RDMA MTU %d, below the expected %d", p->dev,
				       p->port, p->netdev, nd->mtu, rm, oo->expect_rdma_mtu);
		else
			diag_check_add(r, DIAG_PASS, name, NULL, "RDMA port %s/%d ACTIVE, LinkUp, %s, %s%s", p->dev, p->port,
				       p->rate, p->link_layer, rm ? (rm >= 4096 ? ", RDMA MTU 4096" : "") : "");
	}
	if (!n->nports)
		diag_check_add(r, DIAG_SKIP, "net.rdma", NULL, "no RDMA devices (no %s/class/infiniband)",
			       o->sysfs ? o->sysfs : "/sys");
}

/* The interfaces that carry training traffic (--iface, then the launchers' variables), each checked;
 * returns the index of this rank's training interface (the first checked, else the first up), or -1. */
static int check_training_ifs(const struct diag_net *n, const struct diag_net_opts *o, const struct diag_net_opts *oo,
			      struct diag_report *r)
{
	/* the interfaces that carry training traffic */
	static const char *vars[] = { "ASCENT_IFNAME", "HCCL_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME",
				      "OMPI_MCA_btl_tcp_if_include" };
	int selected = 0;
	int checked[DIAG_MAX_NETIFS] = { 0 };
	if (o->iface) {
		const struct diag_netif *i = find_if(n, o->iface);
		selected++;
		if (!i) {
			diag_check_add(r, DIAG_FAIL, "net.iface", "name an interface from 'ip link' (or this report's table)",
				       "interface '%s' (--iface) does not exist", o->iface);
		} else {
			checked[i - n->ifs] = 1;
			check_training_if(n, i, "--iface", oo, r);
		}
	}
	for (size_t v = 0; v < sizeof vars / sizeof vars[0]; v++) {
		const char *spec = getenv(vars[v]);
		if (!spec || !*spec)
			continue;
		selected++;
		char why[128];
		snprintf(why, sizeof why, "%s=%s", vars[v], spec);
		int matched = 0;
		for (int k = 0; k < n->nifs; k++) {
			/* Open MPI takes exact names (or CIDRs, which are not resolved here) */
			int hit = v == 3 ? list_has_exact(spec, n->ifs[k].name) : diag_ifname_match(spec, n->ifs[k].name);
			if (!hit || n->ifs[k].type == 772)
				continue;
			matched++;
			if (!checked[k]) {
				checked[k] = 1;
				check_training_if(n, &n->ifs[k], why, oo, r);
			}
		}
		if (!matched) {
			char name[64];
			snprintf(name, sizeof name, "net.select.%s", vars[v]);
			diag_check_add(r, DIAG_FAIL, name, "fix the variable (see 'ip link'; '=' for an exact name, '^' to exclude)",
				       "%s selects no interface on this host: bootstrap will hang or fall back", why);
		}
	}
	int train = -1;   /* this rank's training interface, for the comparison across hosts */
	for (int k = 0; k < n->nifs && train < 0; k++)
		if (checked[k])
			train = k;
	if (!selected) {
		int up = 0;
		char names[256] = "";
		for (int k = 0; k < n->nifs; k++) {
			const struct diag_netif *i = &n->ifs[k];
			if (i->type == 772 || strcmp(i->operstate, "up"))
				continue;
			up++;
			if (train < 0)
				train = k;
			snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s", names[0] ? ", " : "", i->name);
		}
		if (up)
			diag_check_add(r, DIAG_PASS, "net.iface", "set ASCENT_IFNAME (or NCCL/HCCL_SOCKET_IFNAME) to pin it",
				       "no training interface named; %d non-loopback interface(s) up: %s", up, names);
		else
			diag_check_add(r, DIAG_FAIL, "net.iface", "bring an interface up; only loopback works for one host",
				       "no non-loopback interface is up");
	}
	return train;
}

/* every rank's training interface and MTU, gathered and compared across hosts */
static int compare_across_hosts(const struct diag_net *n, const struct diag_net_opts *o, int train,
				struct diag_report *r)
{
	if (!o->comm || comm_size(o->comm, COMM_WORLD) <= 1)
		return 0;
	int nr = comm_size(o->comm, COMM_WORLD);
	struct diag_net_host mine = { .mtu = -1 }, *all = calloc((size_t)nr, sizeof *all);
	if (!all)
		return ascent_error(ASCENT_ENOMEM, "out of memory gathering %d ranks' interfaces", nr);
	if (gethostname(mine.host, sizeof mine.host - 1) != 0)
		snprintf(mine.host, sizeof mine.host, "?");
	if (train >= 0) {
		snprintf(mine.iface, sizeof mine.iface, "%s", n->ifs[train].name);
		mine.mtu = n->ifs[train].mtu;
	}
	int rc = comm_allgather(o->comm, COMM_WORLD, &mine, all, sizeof mine, COMM_BYTE);
	if (!rc)
		rc = diag_net_compare_hosts(all, nr, r);
	free(all);
	return rc;
}

int diag_net_run(const struct diag_net_opts *o, struct diag_report *r)
{
	struct diag_net *n = calloc(1, sizeof *n);
	if (!n)
		return ascent_error(ASCENT_ENOMEM, "out of memory scanning interfaces");
	int rc = diag_net_scan(o->sysfs, n);
	if (rc) {
		free(n);
		return rc;
	}
	struct diag_net_opts oo = *o;
	if (oo.expect_rdma_mtu <= 0)
		oo.expect_rdma_mtu = 4096;
	report_interfaces(n, r);
	check_rdma_ports(n, o, &oo, r);
	int train = check_training_ifs(n, o, &oo, r);
	rc = compare_across_hosts(n, o, train, r);
	free(n);
	return rc;
}

int diag_net_compare_hosts(const struct diag_net_host *h, int n, struct diag_report *r)
{
	/* one entry per host (its first rank's view), with the number of hosts sharing each MTU */
	int *first = calloc((size_t)(n > 0 ? n : 1), sizeof *first), nh = 0;
	if (!first)
		return ascent_error(ASCENT_ENOMEM, "out of memory comparing %d ranks' interfaces", n);
	for (int i = 0; i < n; i++) {
		int seen = 0;
		for (int k = 0; k < nh && !seen; k++)
			seen = !strncmp(h[first[k]].host, h[i].host, sizeof h[i].host);
		if (!seen)
			first[nh++] = i;
	}
	if (nh <= 1) {
		diag_check_add(r, DIAG_SKIP, "net.mtu.hosts", NULL, "%d rank(s) on one host: no MTU to compare across hosts",
			       n);
		free(first);
		return 0;
	}
	/* the MTU most hosts have (ties: the larger, the configured jumbo size is the intent) */
	int common = -1, common_n = 0;
	for (int k = 0; k < nh; k++) {
		int m = h[first[k]].mtu, c = 0;
		if (m <= 0)
			continue;
		for (int j = 0; j < nh; j++)
			c += h[first[j]].mtu == m;
		if (c > common_n || (c == common_n && m > common))
			common = m, common_n = c;
	}
	char odd[700] = "", same[256] = "";
	int nodd = 0;
	for (int k = 0; k < nh; k++) {
		const struct diag_net_host *x = &h[first[k]];
		if (x->mtu == common) {
			snprintf(same + strlen(same), sizeof same - strlen(same), "%s%.40s", same[0] ? ", " : "", x->host);
			continue;
		}
		if (x->mtu > 0)
			snprintf(odd + strlen(odd), sizeof odd - strlen(odd), "%s%.40s (%.20s) has MTU %d", nodd ? "; " : "",
				 x->host, x->iface, x->mtu);
		else
			snprintf(odd + strlen(odd), sizeof odd - strlen(odd), "%s%.40s has no training interface up",
				 nodd ? "; " : "", x->host);
		nodd++;
	}
	if (nodd)
		diag_check_add(r, DIAG_FAIL, "net.mtu.hosts",
			       "set one MTU on every host's training interface and every switch port (ip link set IF mtu N)",
			       "training interface MTU differs across hosts: %s, while %d host(s) have %d (%s); frames larger "
			       "than a receiver's MTU are dropped on the segment without an error, so transfers that do not "
			       "negotiate their size (RoCE, UDP) stall against the odd host(s)",
			       odd, common_n, common, same);
	else
		diag_check_add(r, DIAG_PASS, "net.mtu.hosts", NULL, "%d hosts, every training interface at MTU %d (%s)",
			       nh, common, same);
	free(first);
	return 0;
}
