/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A takeover's SO_REUSEPORT steering (bpf/reuseport.bpf.c, docs/DESIGN.md
 * §15): the successor's listener sockets go into mmp_reuseport_listeners
 * (pinned in the instance's pin directory), then the program is attached to
 * their SO_REUSEPORT group, which the predecessor's listeners share: new
 * connections reach the successor only, before the predecessor closes.
 */
#ifndef MMP_REUSEPORT_STEER_H
#define MMP_REUSEPORT_STEER_H

#include "lib/config.h"

struct mmp_reuseport_steer;

/*
 * Load the program for cfg->listeners threads of `ports` sockets each.
 * Returns 0, or a negative errno after logging (the takeover then goes on
 * without: the predecessor's listeners take connections until they close).
 */
int mmp_reuseport_steer_open(const struct mmp_config *cfg, int ports, struct mmp_reuseport_steer **out);
/*
 * Listener thread `listener`'s socket for port index `port`. Returns 0, or a
 * negative errno after logging; then attach does nothing, the start goes on.
 */
int mmp_reuseport_steer_add(struct mmp_reuseport_steer *s, int listener, int port, int fd);
/* Steer the group of each port to our sockets (one attach per group). Returns 0 or a negative errno after logging. */
int mmp_reuseport_steer_attach(struct mmp_reuseport_steer *s);
/* Unpin and free; the program stays on the group until a successor's replaces it. NULL is fine. */
void mmp_reuseport_steer_close(struct mmp_reuseport_steer *s);

#endif
