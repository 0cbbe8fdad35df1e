/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sockmap engine: both sockets of a connection go into a SOCKHASH whose
 * sk_skb stream verdict (bpf/sockmap.bpf.c) redirects every later byte to the
 * peer inside the kernel. Userspace only handles the hand-off, half-close,
 * resets, and forwarding the bytes the verdict held back over --max-queued.
 */
#ifndef MMP_SOCKMAP_H
#define MMP_SOCKMAP_H

#include <stdbool.h>
#include <stdint.h>
#include "core/conn.h"

struct mmp_worker;
struct mmp_sockmap;

/*
 * Load the verdict program and maps, attach, pin under pin_dir. This is the
 * engine's kernel probe: a failure means the engine is unavailable, with the
 * reason logged. Returns 0 with *out set, or a negative errno.
 */
int mmp_sockmap_open(const char *pin_dir, uint64_t max_queued, struct mmp_sockmap **out);
void mmp_sockmap_close(struct mmp_sockmap *sm);
/* mmp_wake and mmp_wake_lost, for the workers' notification rings (sockmap_wake.c). */
int mmp_sockmap_wake_map_fd(const struct mmp_sockmap *sm);
int mmp_sockmap_wake_lost_fd(const struct mmp_sockmap *sm);

/*
 * Hand a connected pair to the engine. Returns 0, or a negative errno when
 * the pair cannot be inserted (the caller falls back to splice; nothing of
 * the connection was consumed or changed).
 */
int mmp_sockmap_start(struct mmp_worker *w, struct mmp_conn *c);
void mmp_sockmap_event(struct mmp_worker *w, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events);
/* Periodic re-check of a connection waiting for the kernel to drain. */
void mmp_sockmap_poll(struct mmp_worker *w, struct mmp_conn *c);
/* Remove the connection's map entries and free its buffers; the caller closes the sockets. */
void mmp_sockmap_release(struct mmp_worker *w, struct mmp_conn *c);

#endif
