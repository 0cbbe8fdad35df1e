/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One listener thread's event loop: epoll, the handlers its fds point at,
 * the connection lists with their deadlines, the poll list (connections
 * re-checked every millisecond while an engine waits for the kernel to
 * drain), timers, and the graveyard of connections closed during the
 * current batch. The loop knows connections, never engines: a connection
 * reaches its engine through c->engine (engine/engine.h).
 */
#ifndef MMP_LOOP_H
#define MMP_LOOP_H

#include <stdbool.h>
#include <stdint.h>
#include "core/conn.h"

struct mmp_config;
struct mmp_counters;
struct mmp_loop;

/* A one-shot timer; re-arm it from its callback for a periodic one. */
struct mmp_timer {
	uint64_t at_ms; /* 0: not armed */
	void (*fn)(struct mmp_loop *loop, struct mmp_timer *t);
};

#define MMP_LOOP_TIMERS 6

struct mmp_loop {
	int id; /* the listener thread's number */
	const struct mmp_config *cfg;
	struct mmp_counters *counters; /* shared by every loop */
	int epfd;
	int stop_fd; /* eventfd: the main thread asks the loop to stop */
	bool stopping;
	/* CONN_HEADER and CONN_CONNECTING, oldest first: each list's timeout is constant. */
	struct mmp_conn_list header_wait, connect_wait;
	struct mmp_conn_list active; /* CONN_SPLICING */
	/* Called for the head of a deadline list once its deadline passed; must close it or move it. */
	void (*on_deadline)(struct mmp_loop *loop, struct mmp_conn *c);
	/* Set by the loop's owner (the TCP worker): the engine layer, reached without the loop naming it. */
	void (*on_conn_release)(struct mmp_loop *loop, struct mmp_conn *c); /* from mmp_conn_close */
	/* After c's state changed from old (mmp_loop_set_state, and mmp_conn_close: to CONN_DEAD). */
	void (*on_conn_state)(struct mmp_loop *loop, struct mmp_conn *c, enum mmp_conn_state old);
	void (*on_conn_poll)(struct mmp_loop *loop, struct mmp_conn *c); /* a polled connection's turn */
	/* What a connection's endpoints run on an event (the TCP worker's dispatch). */
	void (*on_conn_event)(struct mmp_loop *loop, struct mmp_endpoint *ep, uint32_t events);
	struct mmp_conn *poll_head;
	uint64_t next_poll_ms;
	struct mmp_timer *timers[MMP_LOOP_TIMERS];
	/* Closed connections, freed once the current batch is done: a later event of it may still point at them. */
	struct mmp_conn *graveyard;
};

/* epoll instance and stop eventfd. Returns 0 or a negative errno after logging. */
int mmp_loop_open(struct mmp_loop *loop, int id, const struct mmp_config *cfg, struct mmp_counters *counters);
/* Free the closed connections and close the loop's fds (mmp_conn_close_all first). */
void mmp_loop_close(struct mmp_loop *loop);
/* Run until mmp_loop_stop's eventfd fires. */
void mmp_loop_run(struct mmp_loop *loop);

/* Register h for fd's events (0: unregister). Returns 0 or a negative errno after logging. */
int mmp_loop_add(struct mmp_loop *loop, int fd, struct mmp_handler *h, uint32_t events);
void mmp_loop_del(struct mmp_loop *loop, int fd);
/* (Re)register ep for events; 0 unregisters. */
int mmp_loop_watch(struct mmp_loop *loop, struct mmp_endpoint *ep, uint32_t events);
/* Re-check c on the next tick (about POLL_MS); idempotent. */
void mmp_loop_poll_add(struct mmp_loop *loop, struct mmp_conn *c);
void mmp_loop_poll_remove(struct mmp_loop *loop, struct mmp_conn *c);
/* Arm t to fire at at_ms (t must stay valid while armed). Returns -ENOSPC when all slots are taken. */
int mmp_loop_timer_arm(struct mmp_loop *loop, struct mmp_timer *t, uint64_t at_ms);

/* The list a connection in state c->state belongs to (NULL: CONN_DEAD). */
struct mmp_conn_list *mmp_loop_list_of(struct mmp_loop *loop, struct mmp_conn *c);
/* Move c to state, from its current list to the new state's list. */
void mmp_loop_set_state(struct mmp_loop *loop, struct mmp_conn *c, enum mmp_conn_state state);

#endif
