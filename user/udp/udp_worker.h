/* SPDX-License-Identifier: GPL-2.0 */
/* A UDP listener thread's start and stop (the thread's state: udp_thread.h). */
#ifndef MMP_UDP_WORKER_H
#define MMP_UDP_WORKER_H

#include "udp/udp_thread.h"

/* Set up w (listen socket, epoll, buffers). Returns 0 or a negative errno after logging. */
int udp_worker_init(struct udp_worker *w, int id, struct udp_shared *sh);
int udp_worker_start(struct udp_worker *w);
/* Stop and join the thread (if started), close every flow, free everything. */
void udp_worker_stop(struct udp_worker *w);

#endif
