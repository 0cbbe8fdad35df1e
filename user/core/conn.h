/* SPDX-License-Identifier: GPL-2.0 */
/*
 * One proxied TCP connection: the load balancer's socket (client side) and
 * the spoofed upstream socket, from accept to close. Owned by one worker.
 */
#ifndef MMP_CONN_H
#define MMP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "mmp_tc.h"

struct mmp_worker;
struct mmp_conn;

enum mmp_conn_state {
	CONN_HEADER, /* waiting for a complete PROXY header */
	CONN_CONNECTING, /* upstream connect in progress */
	CONN_SPLICING, /* handed to the data-path engine */
	CONN_DEAD, /* closed; freed after the current epoll batch */
};

/* What an epoll event points at: one socket of one connection. */
struct mmp_endpoint {
	int fd;
	uint32_t events; /* currently registered with epoll, 0 = not registered */
	struct mmp_conn *conn;
};

/* One direction of the splice engine: bytes from src through a pipe to dst. */
struct mmp_splice_dir {
	int pipe_rd, pipe_wr;
	size_t cap; /* the pipe's size */
	size_t in_pipe; /* bytes read from src not yet written to dst */
	bool src_eof; /* src sent FIN */
	bool dst_shut; /* FIN forwarded to dst after every byte */
};

/* The sockmap engine's per-connection state; index 0 = client socket, 1 = upstream. */
struct mmp_sockmap_conn {
	uint64_t cookie[2];
	uint64_t forwarded[2]; /* held-back bytes userspace forwarded from socket i */
	bool fin[2]; /* socket i received the peer's FIN */
	bool shut[2]; /* FIN forwarded from socket i to the other side */
	bool holding[2]; /* socket i has held-back bytes to forward */
	uint8_t *buf[2]; /* held-back bytes read from socket i, not yet written */
	size_t buf_len[2], buf_off[2];
};

enum mmp_conn_engine {
	ENGINE_SPLICE,
	ENGINE_SOCKMAP,
};

struct mmp_conn {
	enum mmp_conn_state state;
	enum mmp_conn_engine engine;
	struct mmp_endpoint client; /* from the load balancer */
	struct mmp_endpoint upstream;
	struct sockaddr_storage lb_addr; /* the load balancer's ip:port */
	struct sockaddr_storage src_addr; /* the client's ip:port we bind to; AF_UNSPEC: unspoofed */
	const struct sockaddr_storage *target; /* -4 or -6 */
	uint64_t deadline_ms; /* header or connect deadline */
	struct mmp_conn *prev, *next; /* in the worker's deadline list */
	size_t header_len; /* PROXY header length */
	bool header_consumed; /* read off the socket (splice) or left for the kernel to strip (sockmap) */
	struct mmp_conn *poll_prev, *poll_next; /* in the worker's poll list (drain checks) */
	bool polling;
	/* tc engine hand-off, while the splice engine drains the pair */
	bool tc_holding;
	uint8_t tc_quiet; /* consecutive quiet checks */
	uint64_t tc_flow; /* flow id: conn1's socket cookie */
	int tc_oif; /* interface toward a remote load balancer; 0: it is on this host (lo) */
	/* The flow's four tuples, by enum mmp_tc_role: an abort removes them even if the sockets died. */
	struct mmp_tc_tuple tc_tuples[4];
	uint64_t tc_deadline_ms;
	uint64_t tc_start_ns;
	uint8_t tc_attempts; /* hand-offs tried */
	uint64_t tc_retry_ms; /* non-zero: try the hand-off again at this time */
	union {
		struct mmp_splice_dir dir[2]; /* 0: client -> upstream, 1: upstream -> client */
		struct mmp_sockmap_conn sm;
	};
};

/* Doubly linked FIFO. Timeouts are constant per list, so FIFO order is deadline order. */
struct mmp_conn_list {
	struct mmp_conn *head, *tail;
	size_t len;
};

void mmp_conn_list_push(struct mmp_conn_list *l, struct mmp_conn *c);
void mmp_conn_list_remove(struct mmp_conn_list *l, struct mmp_conn *c);

#endif
