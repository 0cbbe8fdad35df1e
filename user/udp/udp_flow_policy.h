/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a UDP header may do to flows (docs/DESIGN.md, "Client address
 * policy"): name only a client the client policy allows (client_policy.h),
 * and move an existing client's replies to another load-balancer address
 * only when that address is in the allowed subnets (-a). Without -a every
 * sender passes the source policy, so a move to another address is never
 * allowed: one datagram could otherwise take any client's replies.
 * A move between ports of one load-balancer address is always allowed (its
 * flow timed out and it picked a new source port).
 */
#ifndef MMP_UDP_FLOW_POLICY_H
#define MMP_UDP_FLOW_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "udp/udp_ep.h"

struct udp_worker;
struct udp_dgram_info;

/*
 * The header's client breaks the client policy (local_port, network order:
 * the port the datagram came to, which picks a range's upstream): count it,
 * log it (rate-limited); true = drop.
 */
bool udp_client_refused(struct udp_worker *w, const struct udp_dgram_info *info, const struct udp_ep *lb,
			const struct sockaddr_storage *lb_sa, uint16_t local_port);

/* True when replies may move to load balancer lb_sa: it is in a -a file's subnets. */
bool udp_move_to_other_lb_ok(const struct udp_worker *w, const struct sockaddr_storage *lb_sa);

/* True when from and to are the same load-balancer address (ports aside). */
static inline bool udp_same_lb_addr(const struct udp_ep *from, const struct udp_ep *to)
{
	return !memcmp(from->addr, to->addr, sizeof(from->addr));
}

/* Count and log (rate-limited) a refused move of client's replies from one LB to another; the datagram is dropped. */
void udp_move_refused(struct udp_worker *w, const struct udp_ep *client, const struct udp_ep *from,
		      const struct udp_ep *to);
/*
 * Log (rate-limited) a move of client's replies; count it in flows_moved
 * (a move to another thread is counted there as flows_evicted instead).
 */
void udp_move_logged(struct udp_worker *w, const struct udp_ep *client, const struct udp_ep *from,
		     const struct udp_ep *to, bool count);

#endif
