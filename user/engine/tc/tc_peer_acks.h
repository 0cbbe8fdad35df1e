/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_TC_PEER_ACKS_H
#define MMP_TC_PEER_ACKS_H
/*
 * The pure ACKs a hand-off sends the peers from its raw sockets, in the name
 * of the proxy's own sockets: zero windows and reopened ones during HOLD,
 * requests for an ACK, and the window updates after the switch
 * (docs/DESIGN.md §3b).
 */
#include <stdbool.h>
#include <stdint.h>

struct mmp_conn;
struct mmp_tc;
struct mmp_tc_flow;
struct mmp_tc_frozen;

void mmp_tc_announce_window(struct mmp_tc *tc, struct mmp_conn *c, bool to_lb, bool to_upstream, bool zero);
void mmp_tc_ask_for_acks(struct mmp_tc *tc, struct mmp_conn *c);
/*
 * room[0]: the upstream's window, told the load balancer, or 0 while bytes
 * are carried to the upstream; room[1]: the load balancer's, told the
 * upstream, or 0 while bytes are carried to the load balancer.
 */
void mmp_tc_send_window_updates(struct mmp_tc *tc, const struct mmp_tc_flow *flow, const struct mmp_tc_frozen *f1,
				const struct mmp_tc_frozen *f2, const uint32_t room[2]);

#endif
