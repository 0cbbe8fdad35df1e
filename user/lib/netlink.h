/* SPDX-License-Identifier: GPL-2.0 */
/* The few rtnetlink queries the control plane needs. */
#ifndef MMP_NETLINK_H
#define MMP_NETLINK_H

#include <stdint.h>
#include <sys/socket.h>

/*
 * The interface the kernel would send a packet to dst out of, marked with
 * mark (0: unmarked). Returns the ifindex or -errno.
 */
int mmp_route_oif(const struct sockaddr_storage *dst, uint32_t mark);

#endif
