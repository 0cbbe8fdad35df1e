/* SPDX-License-Identifier: GPL-2.0 */
/* Receive buffers and batched reads shared by the forward and reply paths. */
#ifndef MMP_UDP_RX_H
#define MMP_UDP_RX_H

#include "udp/udp_thread.h"

/* recvmmsg into slots [first, first + n) of rx. Returns the count, or -1 with errno. */
int udp_rx_batch(int fd, struct udp_rx *rx, int first, int n);

/*
 * The UDP_GRO segment size of a received train (0: a single datagram); from
 * IP(V6)_PKTINFO the interface it arrived on (*ifindex, 0 if unknown) and,
 * when local is not NULL, the destination address; from SO_RCVMARK its mark
 * (*mark, 0 if none).
 */
int udp_rx_cmsgs(struct msghdr *mh, struct udp_ep *local, int *ifindex, uint32_t *mark);
/* The destination port of a received datagram (network order) from IP(V6)_ORIGDSTADDR; 0 without it. */
uint16_t udp_rx_orig_port(struct msghdr *mh);

/* Lazily mapped buffers for w. Returns 0 or -ENOMEM. */
int udp_relay_alloc(struct udp_worker *w);
void udp_relay_free(struct udp_worker *w);

#endif
