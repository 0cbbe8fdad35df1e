// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/types.h>
#include "cli/check_upstream.h"
#include "cli/routing.h"
#include "lib/config.h"
#include "lib/netlink.h"
#include "lib/sockaddr.h"
#include "lib/sysctl.h"
#include "mmp_steer.h"
#include "steer/marked_route.h"
#include "steer/reply_steer.h"
#include "lib/transparent.h"

#define PROBE_TIMEOUT_MS 1500

/* The probe's client (mmp_routing_probe_source) and its host prefix, for the hint's ip rule. */
static void probe_client(int family, struct sockaddr_storage *src, char *net, size_t len)
{
	const void *ip = family == AF_INET ? (const void *)&((struct sockaddr_in *)src)->sin_addr
					   : (const void *)&((struct sockaddr_in6 *)src)->sin6_addr;
	char text[INET6_ADDRSTRLEN];

	mmp_routing_probe_source(family, src);
	inet_ntop(family, ip, text, sizeof(text));
	snprintf(net, len, "%s/%d", text, family == AF_INET ? 32 : 128);
}

/*
 * Close the probe with a reset, not a FIN. The steering program goes with
 * check, so nothing would carry the upstream's answers to a FIN back here:
 * both ends retransmitted their FINs by timeout for minutes (tcp:
 * tcp_cong_state_set saw the pair enter loss together every 0.4-1.6 s
 * through t61's cases after `check`), a socket left on the backend each time.
 */
static void abort_probe(int fd)
{
	struct linger reset = { .l_onoff = 1, .l_linger = 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
	close(fd);
}

/* Connect from the probe client to target with the steering program attached. 0, or -errno with *what. */
static int probe(const struct mmp_config *cfg, const struct sockaddr_storage *src,
		 const struct sockaddr_storage *target, const char **what)
{
	char id_dir[600];
	struct pollfd pfd = { .events = POLLOUT };
	socklen_t len = sizeof(int);
	uint64_t owner = 0;
	int fd, err = 0;

	/* Its own filter priority and no pins: a running instance's filter and maps stay as they are. */
	snprintf(id_dir, sizeof(id_dir), "%s/check-%d", cfg->pin_dir, getpid());
	*what = "loading the steering program";
	err = mmp_steer_open_as(cfg, id_dir, false);
	if (err)
		return err;
	*what = "recording the probe's tuple";
	err = mmp_steer_add(IPPROTO_TCP, (const struct sockaddr *)src, (const struct sockaddr *)target, &owner);
	if (!err) {
		fd = mmp_upstream_connect((const struct sockaddr *)src, (const struct sockaddr *)target, cfg->mark, 0, what);
		if (fd < 0) {
			err = fd;
		} else {
			pfd.fd = fd;
			*what = "spoofed connect";
			if (poll(&pfd, 1, PROBE_TIMEOUT_MS) == 0)
				err = -ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len))
				err = -errno;
			else
				err = -err;
			abort_probe(fd);
		}
	}
	mmp_steer_close();
	return err;
}

static void print_timeout_fixes(const struct mmp_config *cfg, int family, const struct sockaddr_storage *target,
				int oif, const char *probe_net)
{
	char ifname[IF_NAMESIZE] = "?", self[64] = "THIS_HOST", path[128];
	const char *ip = family == AF_INET6 ? "-6" : "-4";
	int rp_all, rp_if;

	if_indextoname((unsigned int)oif, ifname);
	mmp_routing_src_for(target, self, sizeof(self));
	printf("    the upstream's replies to the client never came back through %s. Fixes, most likely first:\n", ifname);
	printf("    1. the backend's return route: on the backend, route your clients' networks (and this probe's\n"
	       "       %s) back through this host: ip %s route add CLIENT_NET via %s\n"
	       "       (a container or pod whose default route is this host needs nothing)\n",
	       probe_net, ip, self);
	if (family == AF_INET) {
		snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/rp_filter", ifname);
		rp_if = (int)mmp_sysctl_read(path);
		rp_all = (int)mmp_sysctl_read("/proc/sys/net/ipv4/conf/all/rp_filter");
		if (rp_if == 1 || rp_all == 1)
			printf("    2. strict rp_filter (all=%d, %s=%d) drops replies that arrive on another interface than the\n"
			       "       route to the upstream: sysctl -w net.ipv4.conf.all.rp_filter=2 net.ipv4.conf.%s.rp_filter=2\n",
			       rp_all, ifname, rp_if, ifname);
	}
	(void)cfg;
}

/* The upstream host's own outbound traffic (not the proxy's) needs forwarding; say so, it is a common confusion. */
static void print_forwarding_notes(int family)
{
	long fwd = family == AF_INET ? mmp_sysctl_read("/proc/sys/net/ipv4/ip_forward")
				     : mmp_sysctl_read("/proc/sys/net/ipv6/conf/all/forwarding");

	if (fwd == 0)
		printf("note %s forwarding is off: the proxy does not need it (steered replies are delivered locally), but a\n"
		       "     container's own outbound traffic does: sysctl -w %s\n",
		       family == AF_INET ? "IPv4" : "IPv6",
		       family == AF_INET ? "net.ipv4.ip_forward=1" : "net.ipv6.conf.all.forwarding=1");
	if (!access("/sys/class/net/docker0", F_OK))
		printf("note docker0 exists: Docker's FORWARD DROP policy does not apply to steered replies (they are not\n"
		       "     forwarded); it matters only if the fwmark rule is missing, and then the fix is setup-routing\n");
}

bool mmp_check_upstream(const struct mmp_config *cfg, int family, bool *handled)
{
	const struct sockaddr_storage *target = family == AF_INET6 ? &cfg->target6 : &cfg->target4;
	const char *name = family == AF_INET ? "IPv4" : "IPv6", *what = "";
	char a[MMP_ADDRSTRLEN], ifname[IF_NAMESIZE] = "?", probe_net[64];
	struct mmp_rp_explain why;
	struct sockaddr_storage src;
	int oif, err, rp;

	*handled = false;
	if (!target->ss_family || mmp_is_loopback_addr(target) || mmp_is_local_addr(target))
		return true;
	*handled = true;
	mmp_fmt_addr((const void *)target, a);
	oif = mmp_route_oif(target, cfg->mark);
	if (oif <= 0) {
		printf("FAIL %s upstream %s: no route to it (%s)\n", name, a, strerror(oif ? -oif : ENOENT));
		printf("    fix: add a route to it (ip %s route add %s/%d via GATEWAY), or correct %s\n",
		       family == AF_INET6 ? "-6" : "-4", "ADDR", family == AF_INET6 ? 128 : 32,
		       family == AF_INET6 ? "-6" : "-4");
		return false;
	}
	if_indextoname((unsigned int)oif, ifname);
	if (!mmp_routing_fwmark_present(family, cfg->route_table)) {
		printf("FAIL %s upstream %s via %s: no `ip rule fwmark 0x%x/0x%x lookup %d`: its replies would be routed away\n",
		       name, a, ifname, MMP_STEER_RULE_MARK, MMP_STEER_RULE_MASK, cfg->route_table);
		mmp_routing_print_fix(family, cfg->route_table);
		return false;
	}
	rp = mmp_marked_route_rp_filter(target, cfg->mark, oif);
	if (rp) {
		mmp_marked_route_rp_explain(&why, rp, ifname);
		printf("FAIL %s upstream %s via %s: %s\n", name, a, ifname, why.cause);
		printf("    fix: %s\n", why.fix);
		return false;
	}
	probe_client(family, &src, probe_net, sizeof(probe_net));
	err = probe(cfg, &src, target, &what);
	if (!err) {
		printf("ok   %s upstream %s via %s: a spoofed connection from %s completes (replies steered by tuple)\n",
		       name, a, ifname, mmp_fmt_addr((const void *)&src, (char[MMP_ADDRSTRLEN]){ 0 }));
		print_forwarding_notes(family);
		return true;
	}
	if (err == -ECONNREFUSED) {
		printf("FAIL %s upstream %s via %s: the path works, but the upstream refused the connection\n", name, a,
		       ifname);
		printf("    fix: start the service on %s (listening on that address, or on the wildcard)\n", a);
		return false;
	}
	printf("FAIL %s upstream %s via %s: spoofed test connection failed at %s: %s%s\n", name, a, ifname, what,
	       strerror(-err), err == -EPERM ? " (run as root, or grant CAP_NET_ADMIN and CAP_BPF)" : "");
	if (err == -ETIMEDOUT || err == -EHOSTUNREACH)
		print_timeout_fixes(cfg, family, target, oif, probe_net);
	print_forwarding_notes(family);
	return false;
}
