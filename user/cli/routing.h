/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The policy routing that transparent upstream connections need: replies
 * from the loopback upstream to a spoofed client address must be delivered
 * locally, not sent out of the host.
 *   ip rule add from 127.0.0.1/8 iif lo table N ; ip route add local 0.0.0.0/0 dev lo table N
 *   ip -6 rule add from ::1/128 iif lo table N  ; ip -6 route add local ::/0 dev lo table N
 */
#ifndef MMP_ROUTING_H
#define MMP_ROUTING_H

#include <stdbool.h>
#include <sys/socket.h>

/* Idempotent. Return 0 or a negative errno after logging what failed. */
int mmp_routing_setup(int table);
int mmp_routing_cleanup(int table);

/* Print the commands that set up family's routing for table, one per line. */
void mmp_routing_print_fix(int family, int table);

/*
 * End-to-end probe: connect from a spoofed TEST-NET address to a throwaway
 * listener on the loopback address of family. Returns 0 when the spoofed
 * handshake completes, -ETIMEDOUT when replies are not routed back, or
 * another negative errno (*what names the failed step).
 */
int mmp_routing_probe(int family, int timeout_ms, const char **what);

/*
 * The probes' client (here and in `check`'s upstream probe): a documentation
 * address no host owns, 192.0.2.254 or 2001:db8:ffff::254, and a random port.
 */
void mmp_routing_probe_source(int family, struct sockaddr_storage *src);

/* Is setup-routing's fwmark rule for steered replies (docs/DESIGN.md §14) there for family? */
bool mmp_routing_fwmark_present(int family, int table);

/* This host's source address toward dst (`ip route get`'s "src"), into out. 0 or -ENOENT. */
int mmp_routing_src_for(const struct sockaddr_storage *dst, char *out, size_t len);

#endif
