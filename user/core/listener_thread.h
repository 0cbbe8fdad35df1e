/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The thread of a listener worker, TCP (worker.c) or UDP (udp_worker.c):
 * started on the worker's loop, stopped by a write to its stop eventfd; and
 * the fds that loop owns. kind and id only name the thread in error
 * messages ("udp listener", 3).
 */
#ifndef MMP_LISTENER_THREAD_H
#define MMP_LISTENER_THREAD_H

#include <pthread.h>

/* 0, or -errno with *thread left 0 (so a later stop has nothing to join). */
int mmp_listener_thread_start(pthread_t *thread, void *(*loop)(void *), void *arg, const char *kind,
			      int id);
/* Wakes the loop through stop_fd and joins it; nothing when *thread is 0. */
void mmp_listener_thread_stop(pthread_t *thread, int stop_fd, const char *kind, int id);

/* The loop's epoll instance and stop eventfd: 0, or -errno (the caller logs). */
int mmp_listener_loop_open(int *epfd, int *stop_fd);
/* Closes whichever of the three is open, and sets all three to -1. */
void mmp_listener_fds_close(int *listen_fd, int *stop_fd, int *epfd);

#endif
