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

struct mmp_sockmap;
struct mmp_sockmap_wake;
struct mmp_worker;

/*
 * Create the worker's ring, install it at mmp_wake[w->id] and watch it on
 * w->epfd with the returned pointer as epoll data. Returns 0 or a negative
 * errno after logging.
 */
int mmp_sockmap_wake_open(struct mmp_sockmap *sm, struct mmp_worker *w, struct mmp_sockmap_wake **out);
void mmp_sockmap_wake_close(struct mmp_sockmap_wake *wk);

/* Index a connection by its flow key (c->sm.cookie[0]) before it goes live; forget it. */
int mmp_sockmap_wake_add(struct mmp_sockmap_wake *wk, struct mmp_conn *c);
void mmp_sockmap_wake_remove(struct mmp_sockmap_wake *wk, struct mmp_conn *c);

/* The ring is readable: re-check each notified connection, or all of them if notifications were lost. */
void mmp_sockmap_wake_run(struct mmp_sockmap_wake *wk);

#endif
