/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Port ranges (docs/DESIGN.md §8): "-l ADDR:LO-HI" with "-4"/"-6" as a range
 * of the same size (listen port LO+k goes to upstream port ULO+k) or a
 * single port (every listen port to it). Pure: parsed and mapped here, served
 * by listen/port_steer.c.
 */
#ifndef MMP_PORT_RANGE_H
#define MMP_PORT_RANGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "lib/config.h"

#define MMP_MAX_PORTS_DEFAULT 4096

/*
 * Parse "ip:PORT", "ip:LO-HI", "[ip6]:PORT" or "[ip6]:LO-HI" into *ss (its
 * port: LO) and *hi (host order; LO for a single port). Returns 0, or -EINVAL
 * with *reason set to a static string naming the cause and the fix.
 */
int mmp_parse_hostport_range(const char *s, struct sockaddr_storage *ss, uint16_t *hi, const char **reason);

/* The port of an AF_INET/AF_INET6 address, host order; and setting it. */
uint16_t mmp_sa_port(const struct sockaddr_storage *ss);
void mmp_sa_set_port(struct sockaddr_storage *ss, uint16_t port);

/*
 * The checks across -l, -4, -6 and --max-ports, after parsing: the ranges'
 * sizes and the cap. Fills cfg->n_ports. Returns 0, or -EINVAL with one line
 * in msg naming the cause and the fix.
 */
int mmp_port_ranges_validate(struct mmp_config *cfg, char *msg, size_t len);

/* Whether -4 (family AF_INET) or -6 is a range: then the listen port picks the upstream's port. */
bool mmp_port_range_maps(const struct mmp_config *cfg, int family);

/*
 * The upstream of a connection (or flow) that arrived on listen port dport
 * (0: not known): -4 (family AF_INET) or -6, its port mapped from dport when
 * it is a range (docs/DESIGN.md §8). Written to *out, which is returned: the
 * one place TCP and UDP choose their target.
 */
const struct sockaddr_storage *mmp_port_range_upstream(const struct mmp_config *cfg, int family, uint16_t dport,
						       struct sockaddr_storage *out);

/* "127.0.0.1:9000-9999" (or "127.0.0.1:9000" for one port) into buf (MMP_ADDRSTRLEN + 8); returns buf. */
const char *mmp_fmt_port_range(const struct sockaddr_storage *ss, uint16_t hi, char *buf);

/* Whether [lo1,hi1] and [lo2,hi2] share a port. */
static inline int mmp_port_ranges_overlap(uint16_t lo1, uint16_t hi1, uint16_t lo2, uint16_t hi2)
{
	return lo1 <= hi2 && lo2 <= hi1;
}

#endif
