/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Bounds on half-open work (docs/DESIGN.md §7a): connections whose PROXY
 * header or upstream connect is still pending hold memory, an fd and a
 * deadline each, and cost nothing to open. --max-pending caps them in all
 * (split evenly over the listener threads, so no lock is taken), and
 * --max-pending-per-source caps what one load-balancer address holds (a
 * quota shared by the threads), so that one flooding source cannot take what
 * the others need. A connection over either limit is closed at accept,
 * counted and logged (rate-limited); one that leaves the pending states
 * (handed to an engine, or closed) gives its place back.
 */
#ifndef MMP_TCP_PENDING_H
#define MMP_TCP_PENDING_H

#include <stdbool.h>
#include <sys/socket.h>
#include "core/conn.h"

struct mmp_config;
struct mmp_worker;

/* The per-source quota, once per process. Returns 0 or a negative errno after logging. */
int mmp_pending_open(const struct mmp_config *cfg);
void mmp_pending_close(void);

/* May a connection from peer start its handshake? Takes its place; logs and counts a refusal. */
bool mmp_pending_admit(struct mmp_worker *w, const struct sockaddr_storage *peer);
/* Give back the place of a connection that never became one (peer as admitted). */
void mmp_pending_forget(const struct sockaddr_storage *peer);
/* c changed state from `old`: if it left the pending states, its place is free again. */
void mmp_pending_state_changed(struct mmp_worker *w, const struct mmp_conn *c, enum mmp_conn_state old);

#endif
