// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "lib/sockaddr.h"
#include "listen/port_range.h"

uint16_t mmp_sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return ntohs(((const struct sockaddr_in *)ss)->sin_port);
}

void mmp_sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

int mmp_parse_hostport_range(const char *s, struct sockaddr_storage *ss, uint16_t *hi, const char **reason)
{
	/* The port part starts after the last ':' (an IPv6 address is bracketed, so its colons come before). */
	const char *colon = strrchr(s, ':');
	const char *dash = colon ? strchr(colon, '-') : NULL;
	char first[INET6_ADDRSTRLEN + 16];
	uint16_t lo;

	if (!dash) {
		if (mmp_parse_hostport(s, ss, reason))
			return -EINVAL;
		*hi = mmp_sa_port(ss);
		return 0;
	}
	if ((size_t)(dash - s) >= sizeof(first)) {
		*reason = "missing or overlong address";
		return -EINVAL;
	}
	memcpy(first, s, dash - s);
	first[dash - s] = 0;
	if (mmp_parse_hostport(first, ss, reason))
		return -EINVAL;
	if (mmp_parse_port(dash + 1, hi)) {
		*reason = "a port range is LO-HI, two numbers from 1 to 65535";
		return -EINVAL;
	}
	lo = mmp_sa_port(ss);
	if (lo == 0 || *hi == 0) {
		*reason = "port 0 cannot be part of a range (ports are 1 to 65535)";
		return -EINVAL;
	}
	if (lo > *hi) {
		*reason = "the first port of the range is above the last (write LO-HI with LO <= HI)";
		return -EINVAL;
	}
	return 0;
}

static int span(uint16_t lo, uint16_t hi)
{
	return (int)hi - (int)lo + 1;
}

/* -4/-6 as a range must match -l's size; a single port takes every listen port. */
static int check_target(const char *opt, const struct sockaddr_storage *t, uint16_t t_hi, int n_ports, char *msg,
			size_t len)
{
	char a[MMP_ADDRSTRLEN];
	int n = span(mmp_sa_port(t), t_hi);

	if (n == 1 || n == n_ports)
		return 0;
	snprintf(msg, len,
		 "%s %s-%u has %d ports but -l has %d: give %s a range of the same size (port LO+k goes to LO'+k) or a single port (every listen port to it)",
		 opt, mmp_fmt_addr((const void *)t, a), t_hi, n, n_ports, opt);
	return -EINVAL;
}

int mmp_port_ranges_validate(struct mmp_config *cfg, char *msg, size_t len)
{
	cfg->n_ports = span(mmp_sa_port(&cfg->listen), cfg->listen_port_hi);
	if (cfg->n_ports > cfg->max_ports) {
		snprintf(msg, len,
			 "-l serves %d ports, more than --max-ports %d: raise --max-ports (up to 65535) or split the range over instances",
			 cfg->n_ports, cfg->max_ports);
		return -EINVAL;
	}
	if (check_target("-4", &cfg->target4, cfg->target4_port_hi, cfg->n_ports, msg, len) ||
	    check_target("-6", &cfg->target6, cfg->target6_port_hi, cfg->n_ports, msg, len))
		return -EINVAL;
	return 0;
}

bool mmp_port_range_maps(const struct mmp_config *cfg, int family)
{
	const struct sockaddr_storage *t = family == AF_INET6 ? &cfg->target6 : &cfg->target4;

	return (family == AF_INET6 ? cfg->target6_port_hi : cfg->target4_port_hi) != mmp_sa_port(t);
}

const struct sockaddr_storage *mmp_port_range_upstream(const struct mmp_config *cfg, int family, uint16_t dport,
						       struct sockaddr_storage *out)
{
	const struct sockaddr_storage *t = family == AF_INET6 ? &cfg->target6 : &cfg->target4;
	uint16_t t_hi = family == AF_INET6 ? cfg->target6_port_hi : cfg->target4_port_hi;
	uint16_t t_lo = mmp_sa_port(t), l_lo = mmp_sa_port(&cfg->listen);

	*out = *t;
	/* A range maps 1:1 (validated: the same size as -l's); a single port takes them all. */
	if (t_hi != t_lo && dport >= l_lo && dport <= cfg->listen_port_hi)
		mmp_sa_set_port(out, (uint16_t)(t_lo + (dport - l_lo)));
	return out;
}

const char *mmp_fmt_port_range(const struct sockaddr_storage *ss, uint16_t hi, char *buf)
{
	mmp_fmt_addr((const struct sockaddr *)ss, buf);
	if (hi != mmp_sa_port(ss))
		sprintf(buf + strlen(buf), "-%u", hi);
	return buf;
}
