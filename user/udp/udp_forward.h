/* SPDX-License-Identifier: GPL-2.0 */
/* The forward path: load balancer -> upstream (udp_forward.c). */
#ifndef MMP_UDP_FORWARD_H
#define MMP_UDP_FORWARD_H

struct udp_worker;

/* A listen socket, bound to port (network order), is readable. */
void udp_relay_listen(struct udp_worker *w, int fd, uint16_t port);

#endif
