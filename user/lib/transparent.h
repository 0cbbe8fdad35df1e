/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Transparent sockets, for TCP, UDP and `check`: the spoofed bind to a
 * client's ip:port, the upstream connect, and the hint that explains a
 * failed step.
 */
#ifndef MMP_TRANSPARENT_H
#define MMP_TRANSPARENT_H

#include <stdint.h>
#include <sys/socket.h>

/*
 * Create a non-blocking TCP socket toward target and start connecting.
 * When src is non-NULL the socket is made transparent and bound to exactly
 * src (the client's ip:port); a failed bind fails the call, never falling
 * back to our own address. mark != 0 sets SO_MARK; maxseg != 0 sets TCP_MAXSEG.
 * Returns the fd (connect in progress or done), or a negative errno with
 * *what naming the step that failed ("IP_TRANSPARENT", "bind", "connect", ...).
 */
int mmp_upstream_connect(const struct sockaddr *src, const struct sockaddr *target, uint32_t mark, int maxseg,
			 const char **what);

/*
 * The spoofing part of an upstream socket, TCP or UDP: SO_MARK when mark != 0,
 * then for src: IP(V6)_TRANSPARENT, SO_REUSEADDR and a bind to exactly src.
 * Returns 0, or -errno with *what naming the step.
 */
int mmp_spoof_bind(int fd, int family, const struct sockaddr *src, uint32_t mark, const char **what);

/* A hint for an upstream-step errno, e.g. "(run as root or grant CAP_NET_ADMIN)"; "" if none. */
const char *mmp_upstream_hint(const char *what, int err);

#endif
