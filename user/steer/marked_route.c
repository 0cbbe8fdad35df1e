// SPDX-License-Identifier: GPL-2.0
/* IPv4's reverse-path filter against an upstream routed by the mark only (steer/marked_route.h). */
#include <net/if.h>
#include <stdio.h>
#include "lib/netlink.h"
#include "steer/marked_route.h"

static int read_conf(const char *ifname, const char *key)
{
	char path[96];
	FILE *f;
	int v = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv4/conf/%s/%s", ifname, key);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%d", &v) != 1)
		v = 0;
	fclose(f);
	return v;
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
	rp_all = read_conf("all", "rp_filter");
	rp_if = read_conf(ifname, "rp_filter");
	return rp_all > rp_if ? rp_all : rp_if;
}
