/* SPDX-License-Identifier: GPL-2.0 */
/* Socket address parsing and formatting: "1.2.3.4:80", "[2001:db8::1]:80". */
#ifndef MMP_SOCKADDR_H
#define MMP_SOCKADDR_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

/* Big enough for "[ffff:...:255.255.255.255%ifname]:65535". */
#define MMP_ADDRSTRLEN 72

/*
 * Parse "ip:port" or "[ip6]:port" into *ss. Returns 0, or -EINVAL with
 * *reason set to a static string.
 */
int mmp_parse_hostport(const char *s, struct sockaddr_storage *ss, const char **reason);
/* "65535" -> 65535 (host order); anything but digits making 0 to 65535 is -EINVAL. */
int mmp_parse_port(const char *s, uint16_t *port);

/* Format *sa as "ip:port" / "[ip6]:port" into buf (MMP_ADDRSTRLEN); returns buf. */
const char *mmp_fmt_addr(const struct sockaddr *sa, char *buf);

socklen_t mmp_sockaddr_len(const struct sockaddr *sa);

/* Turn an IPv4-mapped IPv6 address (::ffff:a.b.c.d) into plain IPv4, in place; any other is left as it is. */
void mmp_unmap_v4(struct sockaddr_storage *ss);

struct mmp_addr;
/* Format a map's struct mmp_addr as "ip:port" / "[ip6]:port" ("-" when unset). */
const char *mmp_fmt_map_addr(const struct mmp_addr *a, char *buf, size_t len);

/*
 * True when ss's address is local in this network namespace as routing sees
 * it: binding port 0 of it succeeds exactly then, AnyIP routes (ip route
 * add local PREFIX dev lo) included, and never stale. A socket and a bind
 * per call: for once-per-flow decisions about where packets arrive (the tc
 * hand-off, the UDP fast path). The per-connection client policy reads
 * policy/local_addrs.h's snapshot instead (no system call, interface
 * addresses only, up to a second old): the two differ for AnyIP routes.
 */
bool mmp_is_local_addr(const struct sockaddr_storage *ss);
/* 127.0.0.0/8 or ::1. */
bool mmp_is_loopback_addr(const struct sockaddr_storage *ss);

#endif
