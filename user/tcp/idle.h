/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Established TCP flows held in userspace (splice, sockmap, and tc flows
 * before their hand-off): TCP keepalive on both sockets, so that a peer
 * that vanished is noticed, and --idle-timeout, so that a flow that moves
 * no data either way for that long is closed (docs/DESIGN.md §7c). Flows
 * spliced in the kernel have --tc-idle-timeout instead.
 */
#ifndef MMP_TCP_IDLE_H
#define MMP_TCP_IDLE_H

struct mmp_config;
struct mmp_loop;
struct mmp_timer;

/* Keepalive on a listening socket: accepted sockets inherit it. Returns 0 or -errno. */
int mmp_tcp_keepalive_set(int fd, const struct mmp_config *cfg);

/* Arm the loop's periodic sweep of its established flows on sweep_timer, when keepalive or --idle-timeout is on. */
void mmp_tcp_idle_start(struct mmp_loop *loop, struct mmp_timer *sweep_timer);

#endif
