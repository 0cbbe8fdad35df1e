/* SPDX-License-Identifier: GPL-2.0 */
/* Socket addresses for the bench tools: parsing, printing, client ranges. */
#ifndef MMPB_ADDR_H
#define MMPB_ADDR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Client ports cycle through 1024..65535 on each address of a range. */
#define CLIENT_PORT_FIRST 1024u
#define CLIENT_PORTS (65536u - CLIENT_PORT_FIRST)

/* An address range such as 203.0.113.0/24 or 2001:db8::/64. */
struct cidr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t base[16]; /* network address, host bits zeroed */
	unsigned int prefix;
	uint64_t hosts; /* usable addresses (capped at 2^32) */
	unsigned int first; /* offset of the first usable address from base */
};

/* "1.2.3.4:80" or "[::1]:80" into *ss. Returns 0 or -EINVAL. */
int addr_parse(const char *s, struct sockaddr_storage *ss);
/* "1.2.3.4/24" or "2001:db8::/64". Returns 0 or -EINVAL. */
int cidr_parse(const char *s, struct cidr *c);
/*
 * The index-th client of range c: address number first + (index / CLIENT_PORTS)
 * (wrapping over c->hosts), port CLIENT_PORT_FIRST + index % CLIENT_PORTS.
 * Distinct indices below hosts * CLIENT_PORTS give distinct ip:port pairs.
 */
void cidr_client(const struct cidr *c, uint64_t index, struct sockaddr_storage *out);

/* Address number first + n % hosts of range c, port 0. */
void cidr_host(const struct cidr *c, uint64_t n, struct sockaddr_storage *out);

socklen_t addr_len(const struct sockaddr_storage *ss);
uint16_t addr_port(const struct sockaddr_storage *ss);
/* "1.2.3.4:80" or "[::1]:80"; returns buf. */
const char *addr_str(const struct sockaddr_storage *ss, char *buf, size_t len);
/* The address alone, no port or brackets; returns buf. */
const char *addr_ip_str(const struct sockaddr_storage *ss, char *buf, size_t len);
/* IPv4 addresses become ::ffff:a.b.c.d, IPv6 ones are copied. */
void addr_to_v6(const struct sockaddr_storage *in, struct sockaddr_storage *out);

#endif
