/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tc engine: after the hand-off, the proxy's two sockets are frozen with
 * TCP_REPAIR and closed silently; bpf/tc.bpf.c rewrites every packet of one
 * connection into the other. Userspace only does the hand-off:
 *   1. eligible?  same family, timestamps, SACK, ECN; conn2's shift >= conn1's
 *   2. HOLD       TC forces window 0 on the proxy's segments; the splice
 *                 engine drains what was in flight
 *   3. quiet      SIOCINQ = SIOCOUTQ = 0 on both sockets and empty pipes, twice;
 *                 at the first look each peer is sent a zero-window ACK
 *   4. FREEZE     TC drops peer segments; TCP_REPAIR; read seq/ts/window state
 *   5. SPLICE     one map write with both directions' deltas
 *   6. close      both sockets, silently (repair mode)
 *   7. window updates to each peer, client first (raw socket)
 * A flow that is not eligible, or does not quiet down in time, stays on splice.
 */
#ifndef MMP_TC_ENGINE_H
#define MMP_TC_ENGINE_H

#include <stdbool.h>
#include "config.h"
#include "conn.h"

struct mmp_tc;
struct mmp_worker;

/* Load, pin, attach to lo (and cfg->ifaces). Returns 0 or a negative errno after logging. */
int mmp_tc_open(const struct mmp_config *cfg, struct mmp_tc **out);
/* Detach and unpin, unless spliced flows remain and keep is set (they keep running). */
void mmp_tc_close(struct mmp_tc *tc, bool keep);

/* The MSS conn2 must use so the upstream's segments fit conn1's path (0: leave it). */
int mmp_tc_conn2_mss(int client_fd);

/*
 * A connection just went to splice: start its hand-off now, or after
 * --tc-handoff-delay. The hand-off holds the flow for a few round trips, which
 * a connection that ends within milliseconds pays without ever gaining from
 * the kernel path (bench connrate: 0.18 of no proxy at once, splice's 0.32
 * with the delay).
 */
void mmp_tc_schedule(struct mmp_worker *w, struct mmp_conn *c);
/* Start the hand-off of a spliced connection. On ineligibility logs why (-v 2) and leaves c on splice. */
void mmp_tc_begin(struct mmp_worker *w, struct mmp_conn *c);
/* Progress a connection in HOLD (after splice events, and from the poll list). */
void mmp_tc_check(struct mmp_worker *w, struct mmp_conn *c);
/* A flow that did not quiet down: try the hand-off again once its backoff passed. */
void mmp_tc_retry(struct mmp_worker *w, struct mmp_conn *c);
/* Abort the hand-off: remove the flow's entries; c stays on splice. */
void mmp_tc_abort(struct mmp_worker *w, struct mmp_conn *c, const char *why);

/*
 * Before binding a new upstream socket to client: a finished spliced flow on
 * the same client -> upstream tuple is forgotten (its last packets would
 * otherwise be rewritten into the new connection). Returns -EADDRINUSE when
 * a live spliced flow holds it.
 */
int mmp_tc_claim_client(struct mmp_tc *tc, const struct sockaddr *client, const struct sockaddr *upstream);

/*
 * An unspoofed (LOCAL, UNKNOWN) upstream connection's source: the local
 * address the kernel would use toward upstream and a free port that no
 * spliced flow holds, in src. Returns 0, -EADDRINUSE when every port offered
 * was held, or another negative errno.
 */
int mmp_tc_unspoofed_source(struct mmp_tc *tc, const struct sockaddr *upstream, struct sockaddr_storage *src);

/* Remove finished (FIN both ways, or RST) and idle flows. Call about once a second. */
void mmp_tc_gc(struct mmp_tc *tc);
/* Our TC filters' priority for a pin directory (0x4d4d for the default one). */
uint32_t mmp_tc_priority(const char *pin_dir);
/* `cleanup`: remove our TC filters of priority prio from every interface of this netns. Returns how many. */
int mmp_tc_detach_everywhere(uint32_t prio);

/* r = t with source and destination swapped. */
void mmp_tc_reverse_tuple(struct mmp_tc_tuple *r, const struct mmp_tc_tuple *t);

/* Number of spliced flows in the maps. */
int mmp_tc_flow_count(struct mmp_tc *tc);

#endif
