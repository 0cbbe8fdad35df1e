/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two instances whose port ranges overlap on one address would steal each
 * other's connections (sk_lookup takes a packet for the first program that
 * assigns, and SO_REUSEPORT lets per-port sockets share). Each instance holds
 * the netns lock "ports:PROTO:ADDR:LO-HI" (lib/netns_lock.h), and `run` with
 * a range, or next to one, is refused when another's overlaps
 * (docs/DESIGN.md §8). Two single-port instances are left as before: the pin
 * directory's lock judges them.
 */
#ifndef MMP_PORT_LOCK_H
#define MMP_PORT_LOCK_H

#include "lib/config.h"

/*
 * Returns 0 with *lock_fd the lock to close at exit (-1: none held), or
 * -EADDRINUSE / -errno after one log line naming the other instance and the fix.
 */
int mmp_port_lock(const struct mmp_config *cfg, int *lock_fd);

#endif
