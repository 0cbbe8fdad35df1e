// SPDX-License-Identifier: GPL-2.0
/* IPv4's reverse-path filter against an upstream routed by the mark only (steer/marked_route.h). */
#include <net/if.h>
#include <stdio.h>
#include "lib/netlink.h"
#include "lib/sysctl.h"
#include "steer/marked_route.h"

/* rp_filter of conf/name; 0 (off) when it cannot be read. */
static int rp_filter(const char *name)
{
	char path[96];
	long v;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/rp_filter", name);
	v = mmp_sysctl_read(path);
	return v > 0 ? (int)v : 0;
}

int mmp_marked_route_rp_filter(const struct sockaddr_storage *target, uint32_t mark, int oif)
{
	char ifname[IF_NAMESIZE];
	int rp_all, rp_if;

	if (!mark || target->ss_family != AF_INET || !if_indextoname((unsigned int)oif, ifname))
		return 0;
	if (mmp_route_oif(target, 0) > 0)
		return 0; /* routed without the mark too: the check finds that route */
	/* The kernel applies the higher of the two. */
	rp_all = rp_filter("all");
	rp_if = rp_filter(ifname);
	return rp_all > rp_if ? rp_all : rp_if;
}

void mmp_marked_route_rp_explain(struct mmp_rp_explain *e, int rp, const char *ifname)
{
	snprintf(e->cause, sizeof(e->cause),
		 "it is routed by the -m mark only, and rp_filter %d drops its replies (the reverse-path check looks "
		 "their source up without the mark)",
		 rp);
	snprintf(e->fix, sizeof(e->fix),
		 "sysctl -w net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.%s.rp_filter=0, or route it without the mark too",
		 ifname);
}
