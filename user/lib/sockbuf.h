/* SPDX-License-Identifier: GPL-2.0 */
/* Socket buffer sizes set past net.core.{r,w}mem_max where the process may. */
#ifndef MMP_SOCKBUF_H
#define MMP_SOCKBUF_H

/*
 * SO_RCVBUFFORCE / SO_SNDBUFFORCE (CAP_NET_ADMIN), else SO_RCVBUF / SO_SNDBUF,
 * which the kernel caps at the sysctl. Either way the kernel doubles `bytes`
 * and locks the size against autotuning. Best effort: a socket that keeps
 * its size still works, so there is no error to return.
 */
void mmp_sock_set_rcvbuf(int fd, int bytes);
void mmp_sock_set_sndbuf(int fd, int bytes);

#endif
