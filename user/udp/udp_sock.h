/* SPDX-License-Identifier: GPL-2.0 */
/* The sockets of UDP mode: listen sockets and per-flow upstream sockets. */
#ifndef MMP_UDP_SOCK_H
#define MMP_UDP_SOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/*
 * One listen socket (SO_REUSEPORT: one per listener thread). A wildcard
 * address, or fast (the fast path is on), also asks for the destination and
 * the interface of each datagram (IP_PKTINFO / IPV6_RECVPKTINFO), so replies
 * leave from the address the load balancer sent to and the fast path knows
 * where the LB is; *wildcard says whether addr is one. fast also asks for
 * each datagram's mark (SO_RCVMARK: the fast path's hand-over) and leaves
 * UDP_GRO off (a NIC would otherwise coalesce the datagrams before the TC
 * program, which takes single ones). Returns the fd, or a negative errno
 * after logging the cause and the fix.
 */
int udp_listen_socket(const struct sockaddr *addr, bool fast, bool *wildcard);
/*
 * The same, for the listener that sk_lookup hands every port of a range
 * (docs/DESIGN.md §8): it also asks for each datagram's original destination
 * (IP_RECVORIGDSTADDR / IPV6_RECVORIGDSTADDR), whose port IP_PKTINFO lacks.
 */
int udp_listen_socket_multiport(const struct sockaddr *addr, bool fast, bool *wildcard);
/*
 * A socket that only sends the replies of one port of a range served through
 * sk_lookup: bound to addr (SO_REUSEPORT, one per listener thread), never
 * read. sk_lookup runs before the kernel looks at unconnected sockets, so it
 * receives nothing. Returns the fd, or a negative errno after logging.
 */
int udp_reply_socket(const struct sockaddr *addr);

/*
 * A non-blocking UDP socket connected to target. With src, it is made
 * transparent and bound to exactly src (the client's ip:port): a failed bind
 * fails the call, never falling back to our own address. SO_REUSEADDR lets
 * a client use our listen port (IKE 500->500, WireGuard 51820->51820) even
 * on a wildcard listener; the relay makes sure no two flows hold one client.
 * mark != 0 sets SO_MARK; rcvmark asks for each reply's mark (SO_RCVMARK,
 * the fast path's hand-over). Returns the fd with *cookie set (SO_COOKIE),
 * or a negative errno with *what naming the step that failed.
 */
int udp_upstream_socket(const struct sockaddr *src, const struct sockaddr *target, uint32_t mark, bool rcvmark,
			uint64_t *cookie, const char **what);

#endif
