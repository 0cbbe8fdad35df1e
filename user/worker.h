/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A listener worker: its own SO_REUSEPORT socket, thread and epoll loop.
 * It accepts, reads the PROXY header, connects upstream, and runs the engine.
 */
#ifndef MMP_WORKER_H
#define MMP_WORKER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include "config.h"
#include "conn.h"
#include "tcp_log.h"

struct mmp_policy;
struct mmp_sockmap;
struct mmp_sockmap_wake;
struct mmp_tc;

struct mmp_counters {
	atomic_ulong accepted;
	atomic_ulong refused_source; /* not in the allowed subnets */
	atomic_ulong refused_client; /* the header named an impossible client (client_policy.h) */
	atomic_ulong bad_header;
	atomic_ulong header_timeout;
	atomic_ulong upstream_failed;
	atomic_ulong spliced; /* handed to the engine */
	atomic_ulong resets_forwarded;
	atomic_ulong active;
	atomic_ulong sockmap_flows; /* handed to the sockmap engine */
	atomic_ulong sockmap_fallbacks; /* sockmap refused the pair: spliced instead */
	atomic_ulong tc_flows; /* handed to the tc engine */
	atomic_ulong tc_ineligible;
	atomic_ulong tc_aborted; /* hand-off gave up: stayed on splice */
	atomic_ulong tc_short; /* ended on splice before its hand-off could start */
};

struct mmp_worker {
	int id;
	const struct mmp_config *cfg;
	const struct mmp_policy *policy;
	int epfd;
	int listen_fd;
	int stop_fd; /* eventfd: the main thread asks us to stop */
	pthread_t thread;
	uint8_t *peek_buf; /* PP_MAX_HEADER_LEN scratch for MSG_PEEK */
	struct mmp_conn_list header_wait; /* CONN_HEADER, oldest first */
	struct mmp_conn_list connect_wait; /* CONN_CONNECTING, oldest first */
	struct mmp_conn_list active; /* CONN_SPLICING */
	/*
	 * Closed connections, freed once the current epoll batch is done: a later
	 * event of the same batch may still point at them.
	 */
	struct mmp_conn *graveyard;
	struct mmp_sockmap *sockmap; /* NULL: engine not loaded */
	struct mmp_sockmap_wake *sockmap_wake; /* this worker's pause notifications, with sockmap */
	struct mmp_tc *tc; /* NULL: engine not loaded */
	uint64_t next_gc_ms; /* worker 0 collects finished tc flows */
	struct mmp_conn *poll_head; /* connections to re-check every POLL_MS */
	uint64_t next_poll_ms;
	uint64_t accept_resume_ms; /* non-zero: accepting paused (EMFILE) until then */
	bool stopping;
	struct mmp_counters *counters; /* shared by all workers */
	struct mmp_tcp_log log; /* rate limits of per-connection lines */
};

/* Create the listening socket. Returns 0 or a negative errno after logging. */
int mmp_worker_init(struct mmp_worker *w, int id, const struct mmp_config *cfg,
		    const struct mmp_policy *policy, struct mmp_sockmap *sockmap, struct mmp_tc *tc,
		    struct mmp_counters *counters);
int mmp_worker_start(struct mmp_worker *w);
/* Ask the worker to stop, join it, and free everything it owns. */
void mmp_worker_stop(struct mmp_worker *w);

uint64_t mmp_now_ms(void);

/* Used by conn.c / splice.c: (re)register ep for events; 0 unregisters. */
int mmp_worker_watch(struct mmp_worker *w, struct mmp_endpoint *ep, uint32_t events);
/* Re-check c on the next tick (a few ms); idempotent. */
void mmp_worker_poll_add(struct mmp_worker *w, struct mmp_conn *c);
/* Close both sockets (abort: reset the client with SO_LINGER 0) and free c. */
void mmp_conn_close(struct mmp_worker *w, struct mmp_conn *c, bool reset_client, bool reset_upstream);

#endif
