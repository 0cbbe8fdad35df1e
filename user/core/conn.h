/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One proxied TCP connection: the load balancer's socket (client side) and
 * the spoofed upstream socket, from accept to close. Owned by one loop.
 * Which engine moves its bytes, and that engine's state, are opaque here:
 * c->engine and c->ctx (engine/engine.h); c->takeover and c->takeover_ctx
 * for an engine that takes the flow over later (tc from splice).
 */
#ifndef MMP_CONN_H
#define MMP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

struct mmp_loop;
struct mmp_conn;
struct mmp_engine;

/* What an epoll event points at: the first member of every watched object. */
struct mmp_handler {
	void (*on_event)(struct mmp_loop *loop, struct mmp_handler *h, uint32_t events);
};

enum mmp_conn_state {
	CONN_HEADER, /* waiting for a complete PROXY header */
	CONN_CONNECTING, /* upstream connect in progress */
	CONN_SPLICING, /* handed to the data-path engine */
	CONN_DEAD, /* closed; freed after the current epoll batch */
};

/* One socket of one connection. */
struct mmp_endpoint {
	struct mmp_handler h;
	int fd;
	uint32_t events; /* currently registered with epoll, 0 = not registered */
	struct mmp_conn *conn;
};

struct mmp_conn {
	enum mmp_conn_state state;
	struct mmp_engine *engine; /* NULL until the pair is handed over */
	void *ctx; /* the engine's per-connection state */
	struct mmp_engine *takeover; /* an engine waiting to take the flow over; NULL: none */
	void *takeover_ctx;
	struct mmp_endpoint client; /* from the load balancer */
	struct mmp_endpoint upstream;
	struct sockaddr_storage lb_addr; /* the load balancer's ip:port */
	struct sockaddr_storage src_addr; /* the client's ip:port we bind to; AF_UNSPEC: unspoofed */
	const struct sockaddr_storage *target; /* -4 or -6, or target_mapped */
	struct sockaddr_storage target_mapped; /* -4/-6 given as a range: the port mapped from ours (docs/DESIGN.md §8) */
	uint64_t deadline_ms; /* header or connect deadline */
	uint64_t accepted_ms; /* the load balancer's connection accepted: tc's time to the kernel counts from it */
	struct mmp_conn *prev, *next; /* in the loop's list for its state */
	size_t header_len; /* PROXY header length */
	size_t header_lowat; /* SO_RCVLOWAT set while a long header trickles in; 0: never set */
	bool header_consumed; /* read off the socket, or taken by the engine (splice drops it, sockmap strips it) */
	struct mmp_conn *poll_prev, *poll_next; /* in the loop's poll list */
	bool polling;
	bool keepalive_set; /* the upstream socket has its keepalive (tcp/idle.c) */
	uint64_t steer_owner; /* its reply tuple in mmp_reply_steer (steer/reply_steer.h); 0: none */
};

/* Doubly linked FIFO. Timeouts are constant per list, so FIFO order is deadline order. */
struct mmp_conn_list {
	struct mmp_conn *head, *tail;
	size_t len;
};

void mmp_conn_list_push(struct mmp_conn_list *l, struct mmp_conn *c);
void mmp_conn_list_remove(struct mmp_conn_list *l, struct mmp_conn *c);

/* Discard exactly the PROXY header from the client socket. Returns 0 or -1 after logging. */
int mmp_conn_consume_header(struct mmp_conn *c);
/* "client ip:port", or the load balancer's for an unspoofed connection, into buf (MMP_ADDRSTRLEN). */
const char *mmp_conn_client_name(const struct mmp_conn *c, char *buf);

#endif
