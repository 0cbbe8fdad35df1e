/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A TCP listener worker: its own SO_REUSEPORT socket, thread and loop. It
 * accepts, runs the handshake (handshake.c), and dispatches each connection's
 * events to the handshake or, once connected, to its engine.
 */
#ifndef MMP_WORKER_H
#define MMP_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include "core/loop.h"
#include "engine/engine.h"
#include "tcp/tcp_log.h"

struct mmp_config;
struct mmp_counters;
struct mmp_policy;
struct mmp_port_steer;

/* One listening socket: -l's port, or one port of its range (listen/port_steer.h). */
struct mmp_listen_sock {
	struct mmp_handler handler; /* first: on_accept finds the socket from it */
	int fd;
};

struct mmp_worker {
	struct mmp_loop loop; /* first: the loop's callbacks find the worker from it */
	const struct mmp_policy *policy;
	struct mmp_engines engines; /* this loop's view of the run's engines */
	bool engines_open;
	uint8_t *peek_buf; /* PP_MAX_HEADER_LEN scratch for MSG_PEEK */
	struct mmp_listen_sock *listens; /* one, or one per port of -l's range without sk_lookup */
	int n_listens;
	struct mmp_timer accept_resume; /* accepting paused (out of fds) until it fires */
	struct mmp_timer engine_tick; /* worker 0: the engines' once-a-second work */
	struct mmp_tcp_log log; /* rate limits of per-connection lines */
	struct mmp_timer log_tick; /* the "suppressed" summaries, once a second while any is due */
	struct mmp_timer idle_sweep; /* keepalive and --idle-timeout on established flows (tcp/idle.c) */
	struct mmp_handler drain; /* drain_fd's: close the listeners, keep serving (docs/DESIGN.md §15) */
	int drain_fd; /* eventfd: the main thread asks the loop to stop accepting */
	atomic_bool listeners_closed;
	pthread_t thread;
};

static inline struct mmp_worker *mmp_worker_of(struct mmp_loop *loop)
{
	return (struct mmp_worker *)loop;
}

/* Create the loop and the listening socket(s). Returns 0 or a negative errno after logging. */
int mmp_worker_init(struct mmp_worker *w, int id, const struct mmp_config *cfg, const struct mmp_policy *policy,
		    const struct mmp_port_steer *steer, const struct mmp_engines *engines,
		    struct mmp_counters *counters);
int mmp_worker_start(struct mmp_worker *w);
/* Ask the worker to close its listeners and go on serving its connections (taken over). */
void mmp_worker_drain(struct mmp_worker *w);
/* Ask the worker to stop, join it, and free everything it owns. */
void mmp_worker_stop(struct mmp_worker *w);

#endif
