/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Per-address quotas: how many of something (pending TCP handshakes, UDP
 * flows) one source IP address holds at once, shared by every worker thread.
 * A source that reaches its limit is refused until it gives some back, so one
 * address (a flood, a misbehaving load balancer) cannot take what every other
 * needs (docs/DESIGN.md §7a).
 *
 * The table is keyed by IP address only (IPv4-mapped IPv6 counts as IPv4),
 * grows as addresses come, and forgets an address whose count returns to 0.
 * Taking and giving back are the slow path (a new connection or flow, its
 * end), so one mutex guards it.
 */
#ifndef MMP_LIB_QUOTA_H
#define MMP_LIB_QUOTA_H

#include <stdint.h>
#include <sys/socket.h>

struct mmp_quota;

/* A table allowing `limit` (>= 1) per address; seed keys the hash. Returns 0 or -ENOMEM. */
int mmp_quota_open(uint32_t limit, uint64_t seed, struct mmp_quota **out);
void mmp_quota_close(struct mmp_quota *q);

/*
 * Take one for the address of sa (AF_INET or AF_INET6). Returns 0, -EDQUOT
 * when the address holds its limit already, -ENOMEM, -EAFNOSUPPORT, or
 * -ENOENT for a NULL table (no quota: nothing taken). give(NULL) does nothing.
 */
int mmp_quota_take(struct mmp_quota *q, const struct sockaddr *sa);

/* Give one back (after a successful take). */
void mmp_quota_give(struct mmp_quota *q, const struct sockaddr *sa);

/* What the address holds now; the number of addresses holding any. For tests and stats. */
uint32_t mmp_quota_held(struct mmp_quota *q, const struct sockaddr *sa);
uint32_t mmp_quota_addresses(struct mmp_quota *q);

#endif
