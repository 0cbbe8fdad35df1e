/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Which listener thread holds which client ip:port, across threads.
 *
 * Datagrams reach a listener thread by the kernel's SO_REUSEPORT hash of the
 * load balancer's ip:port, so one LB ip:port always lands on one thread and
 * its flow lives there. A client can still come back through a new LB
 * ip:port (the load balancer's own flow timed out first) that hashes to
 * another thread. The newest flow must win: the upstream's replies belong on
 * the LB ip:port the client uses now. So the new thread claims the client
 * here and opens its socket at once (SO_REUSEADDR allows the short overlap),
 * and the old thread, woken through its mailbox, closes its flow.
 *
 * Only flow creation and removal take the lock, never a datagram.
 */
#ifndef MMP_UDP_REGISTRY_H
#define MMP_UDP_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include "udp/udp_ep.h"

struct udp_registry;

/* Returns 0 with *out set, or -ENOMEM / -errno (eventfd). */
int udp_registry_open(int nthreads, uint64_t seed, struct udp_registry **out);
void udp_registry_close(struct udp_registry *r);

/*
 * Thread me opens a flow for client, from load balancer lb. Returns the
 * thread that held it (it is asked to close its flow), or -1; *held_lb is
 * the load balancer a thread other than me held it from. -ENOMEM leaves the client unregistered;
 * -EACCES (not -EPERM, which is -1): another thread holds it from another load-balancer address and
 * !move_ok (udp_flow_policy.h); nothing changes.
 */
int udp_registry_claim(struct udp_registry *r, const struct udp_ep *client, const struct udp_ep *lb, bool move_ok,
		       int me, struct udp_ep *held_lb);
/* Thread me closed its flow for client: forget it, unless another thread holds it now. */
void udp_registry_release(struct udp_registry *r, const struct udp_ep *client, int me);
bool udp_registry_holds(struct udp_registry *r, const struct udp_ep *client, int me);

/* The eventfd that becomes readable when thread has mail. */
int udp_registry_mbox_fd(struct udp_registry *r, int thread);
/* Take up to max clients thread was asked to give up; returns how many. Drains the eventfd. */
size_t udp_registry_take(struct udp_registry *r, int thread, struct udp_ep *out, size_t max);

#endif
