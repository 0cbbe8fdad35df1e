/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Replies of spoofed connections to an upstream beyond loopback
 * (docs/DESIGN.md §14): a container on a bridge, a pod behind a routed veth,
 * another host over a link or a tunnel. Each connection's reply tuple is
 * recorded in mmp_reply_steer before connect(); bpf/steer.bpf.c, at tc
 * ingress of the upstream's interface, marks those replies, and the fwmark
 * rule of setup-routing delivers them locally. One per process, shared by
 * the TCP workers and the UDP threads (a mutex serialises the map writes).
 */
#ifndef MMP_REPLY_STEER_H
#define MMP_REPLY_STEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

struct mmp_config;

/*
 * Load the program, pin its maps in cfg->pin_dir and attach it at tc ingress
 * of the interface the route to each upstream (-4, -6) that is neither on
 * loopback nor a local address uses. Nothing when there is none. Returns 0
 * or -errno after logging a one-line error with its fix.
 */
int mmp_steer_open(const struct mmp_config *cfg);
/*
 * The same with the filter identity of id_dir (a priority of its own) and,
 * unless pin, no pins and no log line: `check`'s probe, which must not touch
 * a running instance's filter or maps.
 */
int mmp_steer_open_as(const struct mmp_config *cfg, const char *id_dir, bool pin);
/* Detach, unpin, free. Idempotent. */
void mmp_steer_close(void);
/* Whether connections of family go through steering (the upstream is beyond loopback). */
bool mmp_steer_family(int family);
/* The ifindex the program hooks for family, 0 if none. */
int mmp_steer_ifindex(int family);
/* The largest TCP payload the MTU of that interface takes (no options), 0 if family is not steered. */
int mmp_steer_path_mss(int family);

/*
 * Before connect(): record the reply tuple of a spoofed connection or flow
 * (proto IPPROTO_TCP or IPPROTO_UDP) from client to upstream. *owner gets
 * the id to release it with, 0 when the family needs no steering.
 * Returns 0, or -errno: -EADDRINUSE when a live connection holds the same
 * tuple, -ENOSPC when the map is full.
 */
int mmp_steer_add(int proto, const struct sockaddr *client, const struct sockaddr *upstream, uint64_t *owner);
/* At close: the tuple stays steered MMP_STEER_LINGER_MS more, then is deleted (by mmp_steer_tick). */
void mmp_steer_release(int proto, const struct sockaddr *client, const struct sockaddr *upstream, uint64_t owner);
/*
 * Once a second: delete the tuples whose linger ended, and follow a route to
 * an upstream that moved to another interface (the filter moves with it).
 */
void mmp_steer_tick(void);

#endif
