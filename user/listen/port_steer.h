/* SPDX-License-Identifier: GPL-2.0 */
/*
 * How the ports of -l reach the listener threads (docs/DESIGN.md §8): one
 * port as always; a range through sk_lookup (one socket per thread serves
 * every port), or, where the kernel refuses sk_lookup or MMP_NO_SK_LOOKUP=1
 * is set (tests), one socket per port and thread.
 */
#ifndef MMP_PORT_STEER_H
#define MMP_PORT_STEER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include "lib/config.h"

#define MMP_NO_SK_LOOKUP_ENV "MMP_NO_SK_LOOKUP"

struct mmp_sk_lookup;
struct mmp_reuseport_steer;

struct mmp_port_steer {
	struct mmp_sk_lookup *lookup; /* NULL: a single port, or one socket per port */
	struct mmp_reuseport_steer *reuseport; /* --takeover (TCP) only: listen/reuseport_steer.h */
};

/* Choose and set up; a refused sk_lookup falls back with one log line. Returns 0 or a negative errno. */
int mmp_port_steer_open(const struct mmp_config *cfg, struct mmp_port_steer *ps);
void mmp_port_steer_close(struct mmp_port_steer *ps);

/* Sockets each listener thread opens: 1 (one port, or sk_lookup), else one per port. */
int mmp_port_steer_sockets(const struct mmp_config *cfg, const struct mmp_port_steer *ps);
/* The address the i-th of them binds: -l's with port LO+i. */
void mmp_port_steer_addr(const struct mmp_config *cfg, int i, struct sockaddr_storage *out);
/* Listener thread id's i-th socket is ready: steer the range (sk_lookup) and a takeover's group to it. */
int mmp_port_steer_add(const struct mmp_port_steer *ps, int id, int i, int fd);
/*
 * --takeover, once every listener listens: new connections of the listeners'
 * SO_REUSEPORT groups reach ours only, not the predecessor's (docs/DESIGN.md
 * §15). A no-op otherwise, or where the program could not be loaded.
 */
void mmp_port_steer_claim(const struct mmp_port_steer *ps);
/* Whether a socket may receive for ports other than the one it is bound to (its datagrams need their port). */
bool mmp_port_steer_multiport(const struct mmp_config *cfg, const struct mmp_port_steer *ps);
/* "" for one port, else "-HI (N ports, sk_lookup)" to follow -l's address in the start-up line. */
const char *mmp_port_steer_describe(const struct mmp_config *cfg, const struct mmp_port_steer *ps, char *buf,
				    size_t len);

#endif
