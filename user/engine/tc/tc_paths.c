// SPDX-License-Identifier: GPL-2.0
/*
 * Where a flow's segments come in and where its translated ones go: lo, a
 * remote load balancer's interface, an upstream's beyond loopback
 * (docs/DESIGN.md §3b "Redirects", §14 "The tc engine across two
 * interfaces"), and whether an upstream's interface can carry a flow at all.
 */
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "engine/tc/tc_internal.h"
#include "lib/sockaddr.h"
#include "mmp_tc.h"
#include "steer/reply_steer.h"

/* TCPOLEN_TSTAMP_ALIGNED: what timestamps take of every segment's MSS. */
#define TS_OPTION_LEN 12

bool mmp_tc_hooked(const struct mmp_tc *tc, int ifindex)
{
	/* Appended to by mmp_tc_follow_upstreams: an entry is filled before nifaces counts it. */
	int n = __atomic_load_n(&tc->nifaces, __ATOMIC_ACQUIRE);

	for (int i = 1; i < n; i++)
		if (tc->ifindex[i] == ifindex)
			return true;
	return false;
}

/* Whether ifindex carries an Ethernet header: the program parses one, and bpf_redirect_neigh strips one. */
static bool ethernet(int ifindex)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool ok = false;

	if (fd >= 0 && if_indextoname(ifindex, ifr.ifr_name) && !ioctl(fd, SIOCGIFHWADDR, &ifr))
		ok = ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER;
	if (fd >= 0)
		close(fd);
	return ok;
}

const char *mmp_tc_upstream_path_ineligible(struct mmp_tc *tc, struct mmp_conn *c, const struct tcp_info *a,
					    const struct tcp_info *b)
{
	int family = c->target->ss_family, oif = mmp_steer_ifindex(family);
	/* conn1's advertised MSS still holds the options each segment carries; conn2's snd_mss has them off. */
	unsigned int opts = (a->tcpi_options & TCPI_OPT_TIMESTAMPS) ? TS_OPTION_LEN : 0;
	struct sockaddr_storage lb = c->lb_addr;

	T(c)->up_oif = 0;
	if (!mmp_steer_family(family))
		return NULL;
	/* Said here, before the MSS below compares an IPv4 path with an IPv6 one. */
	mmp_unmap_v4(&lb);
	if (lb.ss_family != family)
		return "the two connections are of different IP families";
	if (oif <= 0 || !mmp_tc_hooked(tc, oif))
		return "the upstream's interface is not hooked by the tc engine yet (its route moved: it is hooked within a second)";
	if (!ethernet(oif))
		return "the upstream's interface has no Ethernet header (a WireGuard, GRE or ipip device): packet-level splicing needs one";
	/* A redirect does not segment: what the load balancer sends must fit as it is (tcp/worker.c clamps the MSS). */
	if (a->tcpi_advmss > b->tcpi_snd_mss + opts)
		return "the load balancer's segments would not fit the upstream's path (the upstream's MSS, or its interface's MTU, is below the listener's MSS)";
	T(c)->up_oif = oif;
	return NULL;
}

void mmp_tc_set_paths(struct mmp_tc *tc, const struct mmp_conn *c, struct mmp_tc_flow *flow)
{
	int lo = tc->ifindex[0];

	/* Each direction's packets are the flow's only on the interface they arrive on. */
	flow->up.in_ifindex = T(c)->oif ? (uint32_t)T(c)->oif : (uint32_t)lo;
	flow->down.in_ifindex = T(c)->up_oif ? (uint32_t)T(c)->up_oif : (uint32_t)lo;
	/*
	 * Out of the receiver's interface by bpf_redirect_neigh when it is not
	 * lo; into lo's ingress when the receiver is on this host but the
	 * segment came in elsewhere; on its way (0) when both are on lo.
	 */
	flow->up.redirect_ifindex = flow->down.redirect_ifindex = 0;
	flow->up.redirect_ingress = flow->down.redirect_ingress = 0;
	if (T(c)->up_oif) {
		flow->up.redirect_ifindex = T(c)->up_oif;
	} else if (T(c)->oif) {
		flow->up.redirect_ifindex = lo;
		flow->up.redirect_ingress = 1;
	}
	if (T(c)->oif) {
		flow->down.redirect_ifindex = T(c)->oif;
	} else if (T(c)->up_oif) {
		flow->down.redirect_ifindex = lo;
		flow->down.redirect_ingress = 1;
	}
}
