/* SPDX-License-Identifier: GPL-2.0 */
/* The reply path: upstream -> load balancer (udp_reply.c). */
#ifndef MMP_UDP_REPLY_H
#define MMP_UDP_REPLY_H

#include <stdint.h>

struct udp_flow;
struct udp_worker;

void udp_relay_reply(struct udp_worker *w, struct udp_flow *f, uint32_t events); /* an upstream socket */
void udp_relay_flush_replies(struct udp_worker *w);

#endif
