// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/capability.h>
#include "cli/check.h"
#include "cli/check_upstream.h"
#include <linux/types.h>
#include "mmp_steer.h"
#include "lib/log.h"
#include "mmp_maps.h"
#include "policy/policy.h"
#include "cli/routing.h"
#include "lib/lo_sysctls.h"
#include "lib/privileges.h"
#include "lib/sockaddr.h"

#define PROBE_TIMEOUT_MS 1000

/* The effective capability set of this process, from /proc. */
static unsigned long long effective_caps(void)
{
	unsigned long long eff = 0;
	char line[256];
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1)
			break;
	fclose(f);
	return eff;
}

static bool has_cap(unsigned long long eff, int cap)
{
	return eff & (1ULL << cap);
}

/* Each capability the configured engines and features need, with why (lib/privileges.c has the table). */
static bool check_caps(const struct mmp_config *cfg)
{
	unsigned int features = mmp_features_configured(cfg);
	unsigned long long eff = effective_caps();
	const struct mmp_cap_need *caps;
	bool ok = true;
	int n;

	caps = mmp_caps_to_start(&n);
	for (int i = 0; i < n; i++) {
		/* CAP_SYS_ADMIN also covers CAP_BPF and CAP_PERFMON (and is all older kernels know), and lifts the pipe limits. */
		bool have = has_cap(eff, caps[i].cap) ||
			    ((caps[i].cap == CAP_BPF || caps[i].cap == CAP_PERFMON || caps[i].cap == CAP_SYS_RESOURCE) &&
			     has_cap(eff, CAP_SYS_ADMIN));

		if (!(caps[i].features & features))
			continue;
		printf("%-4s capability %s (%s)\n", have ? "ok" : "FAIL", caps[i].name, caps[i].why);
		if (!have) {
			ok = false;
			printf("    fix: run as root, grant it in the unit (CapabilityBoundingSet=, AmbientCapabilities=), or: setcap cap_net_admin,cap_net_raw,cap_bpf,cap_perfmon+ep %s\n",
			       "/usr/local/sbin/mmproxy-bpf");
		}
	}
	return ok;
}

static bool check_bpffs(const struct mmp_config *cfg)
{
	int err = mmp_ensure_bpffs(cfg->pin_dir);

	printf("%-4s bpffs for %s\n", err ? "FAIL" : "ok", cfg->pin_dir);
	if (err)
		printf("    fix: mount -t bpf bpf /sys/fs/bpf\n");
	return !err;
}

static bool check_routing(const struct mmp_config *cfg, int family)
{
	const char *what;
	const char *name = family == AF_INET ? "IPv4" : "IPv6";
	bool handled, ok = mmp_check_upstream(cfg, family, &handled);
	int err;

	if (handled)
		return ok; /* an upstream beyond loopback: its own probe (docs/DESIGN.md §14) */
	err = mmp_routing_probe(family, PROBE_TIMEOUT_MS, &what);

	if (!err) {
		printf("ok   %s routing: a spoofed connection to the loopback upstream completes\n", name);
		return true;
	}
	if (family == AF_INET6 && (err == -EAFNOSUPPORT || err == -EADDRNOTAVAIL) && !strcmp(what, "loopback listener")) {
		printf("skip %s routing: IPv6 is not available on this host\n", name);
		return true;
	}
	printf("FAIL %s routing: spoofed test connection failed at %s: %s\n", name, what, strerror(-err));
	if (err == -EPERM)
		printf("    fix: run as root, or grant CAP_NET_ADMIN\n");
	else
		mmp_routing_print_fix(family, cfg->route_table);
	return false;
}

int mmp_check_command(const struct mmp_config *cfg)
{
	bool ok = check_caps(cfg);

	ok &= check_bpffs(cfg);
	ok &= check_routing(cfg, AF_INET);
	ok &= check_routing(cfg, AF_INET6);
	if (mmp_lo_sysctls_ok()) {
		printf("ok   lo route_localnet=1 accept_local=1 (in-kernel TCP and UDP from a remote load balancer)\n");
	} else {
		/* Not fatal: only the kernel paths for remote load balancers (IPv4) need them. */
		printf("warn lo route_localnet/accept_local are not 1: IPv4 TCP and UDP from a remote load balancer stay in userspace\n");
		printf("    fix: mmproxy-bpf setup-routing, or: sysctl -w net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1\n");
	}
	printf("%s\n", ok ? "all checks passed" : "some checks failed: apply the fixes above");
	return ok ? 0 : 1;
}

static bool is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

int mmp_check_startup(const struct mmp_config *cfg)
{
	unsigned long long eff = effective_caps();
	const struct sockaddr_storage *targets[] = { &cfg->target4, &cfg->target6 };

	if (!has_cap(eff, CAP_NET_ADMIN) && !has_cap(eff, CAP_NET_RAW)) {
		pr_err("missing capability CAP_NET_ADMIN: IP_TRANSPARENT on upstream sockets would fail with Operation not permitted (run as root or grant CAP_NET_ADMIN)");
		return -EPERM;
	}
	if (!has_cap(eff, CAP_BPF) && !has_cap(eff, CAP_SYS_ADMIN)) {
		pr_err("missing capability CAP_BPF: the allowed-subnets maps cannot be created (run as root or grant CAP_BPF)");
		return -EPERM;
	}
	if (cfg->lift_pipe_limits && mmp_pipe_cap_choose()) {
		pr_err("missing capability CAP_SYS_RESOURCE: --lift-pipe-limits keeps it (or CAP_SYS_ADMIN) for the relay pipes (run as root, add it to the unit's AmbientCapabilities= and CapabilityBoundingSet=, or drop --lift-pipe-limits)");
		return -EPERM;
	}
	/* Warn, don't fail: an operator may route replies back another way. */
	for (int i = 0; i < 2; i++) {
		int family = i == 0 ? AF_INET : AF_INET6;
		const char *what;
		int err;

		if (!is_loopback(targets[i])) {
			/* Beyond loopback: replies come back by the fwmark rule (docs/DESIGN.md §14). */
			if (targets[i]->ss_family && !mmp_is_local_addr(targets[i]) &&
			    !mmp_routing_fwmark_present(family, cfg->route_table))
				pr_err("warning: no `ip rule fwmark 0x%x/0x%x lookup %d` for %s: replies of the upstream beyond loopback will be routed away and upstream connects will time out (fix: mmproxy-bpf setup-routing --table %d)",
				       MMP_STEER_RULE_MARK, MMP_STEER_RULE_MASK, cfg->route_table, family == AF_INET ? "IPv4" : "IPv6", cfg->route_table);
			continue;
		}
		err = mmp_routing_probe(family, PROBE_TIMEOUT_MS, &what);
		if (err && !(family == AF_INET6 && !strcmp(what, "loopback listener")))
			pr_err("warning: %s spoofed connections to the upstream do not complete (%s: %s); upstream connects will time out (fix: mmproxy-bpf setup-routing --table %d)",
			       family == AF_INET ? "IPv4" : "IPv6", what, strerror(-err), cfg->route_table);
	}
	return 0;
}
