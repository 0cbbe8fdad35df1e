/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An upstream that only the -m mark routes to (`ip rule fwmark MARK lookup
 * T`, its route in T only), and IPv4's reverse-path filter, which judges
 * the upstream's replies without the mark (docs/DESIGN.md §14).
 */
#ifndef MMP_MARKED_ROUTE_H
#define MMP_MARKED_ROUTE_H

#include <stdint.h>
#include <sys/socket.h>

/*
 * The rp_filter value (1 strict, 2 loose) that drops the replies of the
 * IPv4 upstream target, reached with the mark through interface oif: the
 * check looks their source up without the mark (a steered reply carries
 * the steering mark instead) and finds no route. 0 when nothing drops them
 * (rp_filter off, no mark, IPv6, or a route without the mark too). t61
 * saw every stream of such an upstream stall with rp_filter 2.
 */
int mmp_marked_route_rp_filter(const struct sockaddr_storage *target, uint32_t mark, int oif);
/* The cause and the fix for such an upstream, in one wording for `check`'s FAIL line and `run`'s warning. */
struct mmp_rp_explain {
	char cause[160];
	char fix[160];
};

/* e for rp_filter rp on ifname, the interface the mark routes the upstream through. */
void mmp_marked_route_rp_explain(struct mmp_rp_explain *e, int rp, const char *ifname);

#endif
