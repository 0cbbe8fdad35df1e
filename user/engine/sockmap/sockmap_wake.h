/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sockmap engine's pause notifications, one set per worker. After the
 * hand-off a worker does not watch its sockets for data (each redirect would
 * wake it); the verdict writes a flow's key into the worker's ring in
 * mmp_wake when it starts holding bytes back, and the worker finds the
 * connection by that key and lets the engine forward them.
 */
#ifndef MMP_SOCKMAP_WAKE_H
#define MMP_SOCKMAP_WAKE_H

#include "core/conn.h"

struct mmp_conn;
struct mmp_engine;
struct mmp_loop;
struct mmp_sockmap_conn;
struct mmp_sockmap_wake;

/*
 * Create the loop's ring, install it at mmp_wake[loop->id] and watch it on
 * the loop. e is this loop's sockmap engine. Returns 0 or a negative errno
 * after logging.
 */
struct mmp_sockmap_wake_maps {
	int wake_fd; /* mmp_wake: the rings, by loop */
	int lost_fd; /* mmp_wake_lost: notifications lost, by loop */
	void (*on_flow)(struct mmp_loop *loop, struct mmp_conn *c); /* re-check one flow */
};

int mmp_sockmap_wake_open(struct mmp_engine *e, struct mmp_loop *loop, const struct mmp_sockmap_wake_maps *maps,
			  struct mmp_sockmap_wake **out);
void mmp_sockmap_wake_close(struct mmp_sockmap_wake *wk);

/* Index a connection by its flow key (s->cookie[0]) before it goes live; forget it. */
int mmp_sockmap_wake_add(struct mmp_sockmap_wake *wk, struct mmp_sockmap_conn *s);
void mmp_sockmap_wake_remove(struct mmp_sockmap_wake *wk, struct mmp_sockmap_conn *s);

#endif
