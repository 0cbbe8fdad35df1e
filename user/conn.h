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

struct mmp_worker;
struct mmp_conn;

enum mmp_conn_state {
	CONN_HEADER, /* waiting for a complete PROXY header */
	CONN_CONNECTING, /* upstream connect in progress */
	CONN_SPLICING, /* handed to the data-path engine */
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

struct mmp_conn {
	enum mmp_conn_state state;
	struct mmp_endpoint client; /* from the load balancer */
	struct mmp_endpoint upstream;
	struct sockaddr_storage lb_addr; /* the load balancer's ip:port */
	struct sockaddr_storage src_addr; /* the client's ip:port we bind to; AF_UNSPEC: unspoofed */
	const struct sockaddr_storage *target; /* -4 or -6 */
	uint64_t deadline_ms; /* header or connect deadline */
	struct mmp_conn *prev, *next; /* in the worker's deadline list */
	struct mmp_splice_dir dir[2]; /* 0: client -> upstream, 1: upstream -> client */
};

/* Doubly linked FIFO. Timeouts are constant per list, so FIFO order is deadline order. */
struct mmp_conn_list {
	struct mmp_conn *head, *tail;
	size_t len;
};

void mmp_conn_list_push(struct mmp_conn_list *l, struct mmp_conn *c);
void mmp_conn_list_remove(struct mmp_conn_list *l, struct mmp_conn *c);

#endif
