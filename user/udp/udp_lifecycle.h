/* SPDX-License-Identifier: GPL-2.0 */
/* A UDP flow's life: opened from a header, moved, handed to the fast path, closed (udp_lifecycle.c). */
#ifndef MMP_UDP_LIFECYCLE_H
#define MMP_UDP_LIFECYCLE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "mmp_udp.h"

struct udp_ep;
struct udp_flow;
struct udp_worker;
struct udp_dgram_info;
struct udp_flow *udp_flow_for_header(struct udp_worker *w, const struct udp_dgram_info *info,
				     const struct udp_ep *lb, const struct sockaddr_storage *lb_sa, socklen_t lb_salen,
				     const struct udp_ep *local, int ifindex, const uint8_t *hdr);
void udp_flow_close(struct udp_worker *w, struct udp_flow *f, enum mmp_udp_counter why);
/* Other threads took these clients (the registry's mailbox): close our flows for them. */
void udp_flows_take_mail(struct udp_worker *w);
/* At stop: close every flow, with its entries and registration. */
void udp_flows_close_all(struct udp_worker *w);
/*
 * Hand the flows opened or moved in this round to the fast path, after
 * their staged datagrams are sent. The entries start draining, so no
 * datagram overtakes another (include/mmp_udp.h).
 */
void udp_flows_to_kernel(struct udp_worker *w);
/* Queue f for udp_flows_to_kernel, its LB's datagrams arriving on ifindex (no-op without a fast path). */
void udp_flow_want_kernel(struct udp_worker *w, struct udp_flow *f, int ifindex);
/*
 * A datagram of f came marked MMP_UDP_MARK_DRAIN_FWD/_REV with number seq (rev: a
 * reply): remember it, to be published once it is sent
 * (udp_flows_publish_drain).
 */
void udp_flow_drained(struct udp_worker *w, struct udp_flow *f, bool rev, uint32_t seq);
/* After a flush: tell the kernel the number of the last marked datagram each draining flow has sent. */
void udp_flows_publish_drain(struct udp_worker *w);

#endif
