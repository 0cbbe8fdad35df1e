/* SPDX-License-Identifier: GPL-2.0 */
/* A connection's life on its loop: creation, close, and closing them all at the end. */
#ifndef MMP_LIFECYCLE_H
#define MMP_LIFECYCLE_H

#include <stdbool.h>
#include <sys/socket.h>
#include "core/conn.h"

struct mmp_loop;

/* A new connection in CONN_HEADER owning the accepted fd; NULL when out of memory (fd untouched). */
struct mmp_conn *mmp_conn_new(struct mmp_loop *loop, int fd, const struct sockaddr_storage *peer);
/* How mmp_conn_close ends each side: a FIN, or an RST (SO_LINGER 0) where flagged. */
enum mmp_close_how {
	MMP_CLOSE_FIN = 0,
	MMP_CLOSE_RESET_CLIENT = 1 << 0,
	MMP_CLOSE_RESET_UPSTREAM = 1 << 1,
	MMP_CLOSE_RESET_BOTH = MMP_CLOSE_RESET_CLIENT | MMP_CLOSE_RESET_UPSTREAM,
};

/*
 * Release the engines' state, close both sockets as how says (a bitwise OR of
 * enum mmp_close_how) and queue c for freeing after the current batch.
 */
void mmp_conn_close(struct mmp_loop *loop, struct mmp_conn *c, unsigned int how);
/* Close every connection of the loop (before mmp_loop_close). */
void mmp_conn_close_all(struct mmp_loop *loop);

#endif
