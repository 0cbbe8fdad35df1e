/* SPDX-License-Identifier: GPL-2.0 */
/* Socket facts the engines read: the cookie that keys their maps, and TCP_INFO. */
#ifndef MMP_SOCKINFO_H
#define MMP_SOCKINFO_H

#include <stdint.h>
#include <linux/tcp.h> /* struct tcp_info with bytes_acked/bytes_received and the option bits */

/* SO_COOKIE: 0, or -errno. */
int mmp_sock_cookie(int fd, uint64_t *cookie);
/* TCP_INFO, zeroed first (older kernels fill less): 0, or -errno. */
int mmp_tcp_info(int fd, struct tcp_info *ti);

#endif
