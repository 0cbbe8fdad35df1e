/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The control plane's part of a connection: policy check on accept, PROXY
 * header read (MSG_PEEK, then consumed exactly), spoofed upstream connect,
 * then the hand-off to the engine.
 */
#ifndef MMP_HANDSHAKE_H
#define MMP_HANDSHAKE_H

#include <stdint.h>
#include <sys/socket.h>
#include "core/conn.h"

struct mmp_worker;

/* Take ownership of an accepted socket from peer (the load balancer). */
void mmp_handshake_accepted(struct mmp_worker *w, int fd, const struct sockaddr_storage *peer);
/* An epoll event on a connection in CONN_HEADER or CONN_CONNECTING. */
void mmp_handshake_event(struct mmp_worker *w, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events);
/* The connection's header or connect deadline passed: log and close it. */
void mmp_handshake_timeout(struct mmp_worker *w, struct mmp_conn *c);

#endif
