/* SPDX-License-Identifier: GPL-2.0 */
/*
 * This host's own addresses, for the client policy: a header that names
 * one of them, sent by a load balancer elsewhere, would reach the upstream
 * as a connection from the host itself, which many services trust
 * (docs/DESIGN.md, "Client address policy").
 *
 * Each thread keeps its own snapshot (getifaddrs), taken again at most once
 * a second, so the check costs no system call per connection. An address
 * added in the last second may be missed until the next snapshot. Only
 * interface addresses are listed, not AnyIP routes: lib/sockaddr.h's
 * mmp_is_local_addr, a bind probe per call, is the routing view that the
 * once-per-flow decisions use.
 */
#ifndef MMP_LOCAL_ADDRS_H
#define MMP_LOCAL_ADDRS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

struct mmp_local_addrs {
	struct in6_addr *addrs; /* sorted; IPv4 as IPv4-mapped IPv6 */
	size_t n;
	uint64_t taken_ns; /* CLOCK_MONOTONIC of the snapshot, 0: never taken */
};

/* Does s hold a (IPv4 as IPv4-mapped IPv6)? */
bool mmp_local_addrs_has(const struct mmp_local_addrs *s, const struct in6_addr *a);

/* Replace s's contents with the n addresses of v (sorted here). Returns 0 or -ENOMEM. */
int mmp_local_addrs_set(struct mmp_local_addrs *s, const struct in6_addr *v, size_t n);

void mmp_local_addrs_free(struct mmp_local_addrs *s);

/*
 * This thread's snapshot of the host's addresses, at most a second old.
 * When a snapshot cannot be taken the previous one stays; never NULL.
 */
const struct mmp_local_addrs *mmp_local_addrs_current(void);

#endif
