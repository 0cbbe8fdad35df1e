// SPDX-License-Identifier: GPL-2.0
/* Receive buffers and batched reads of the UDP relay (udp_rx.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include "udp/udp_rx.h"

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static void *map_lazy(size_t len)
{
	/* Anonymous memory is only backed once touched: 64 KiB slots cost what they hold. */
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

static void rx_init(struct udp_rx *rx)
{
	for (int i = 0; i < UDP_BATCH; i++) {
		rx->iov[i].iov_base = rx->bufs + (size_t)i * UDP_SLOT;
		rx->iov[i].iov_len = UDP_SLOT;
		rx->msgs[i].msg_hdr.msg_iov = &rx->iov[i];
		rx->msgs[i].msg_hdr.msg_iovlen = 1;
		rx->msgs[i].msg_hdr.msg_name = &rx->names[i];
		rx->msgs[i].msg_hdr.msg_control = rx->ctl[i].buf;
	}
}

int udp_relay_alloc(struct udp_worker *w)
{
	w->rx.bufs = map_lazy((size_t)UDP_BATCH * UDP_SLOT);
	w->rrx.bufs = map_lazy((size_t)UDP_BATCH * UDP_SLOT);
	w->tx.arena = map_lazy((size_t)UDP_BATCH * UDP_SLOT);
	w->gso_buf = map_lazy(UDP_SLOT);
	if (!w->rx.bufs || !w->rrx.bufs || !w->tx.arena || !w->gso_buf)
		return -ENOMEM;
	rx_init(&w->rx);
	rx_init(&w->rrx);
	return 0;
}

void udp_relay_free(struct udp_worker *w)
{
	if (w->rx.bufs)
		munmap(w->rx.bufs, (size_t)UDP_BATCH * UDP_SLOT);
	if (w->rrx.bufs)
		munmap(w->rrx.bufs, (size_t)UDP_BATCH * UDP_SLOT);
	if (w->tx.arena)
		munmap(w->tx.arena, (size_t)UDP_BATCH * UDP_SLOT);
	if (w->gso_buf)
		munmap(w->gso_buf, UDP_SLOT);
	w->rx.bufs = w->rrx.bufs = w->tx.arena = w->gso_buf = NULL;
}

int udp_rx_batch(int fd, struct udp_rx *rx, int first, int n)
{
	for (int i = first; i < first + n; i++) {
		rx->msgs[i].msg_hdr.msg_namelen = sizeof(rx->names[i]);
		rx->msgs[i].msg_hdr.msg_controllen = sizeof(rx->ctl[i].buf);
		rx->msgs[i].msg_hdr.msg_flags = 0;
	}
	return recvmmsg(fd, &rx->msgs[first], n, MSG_DONTWAIT, NULL);
}

int udp_rx_cmsgs(struct msghdr *mh, struct udp_ep *local, int *ifindex, uint32_t *mark)
{
	int gso = 0;

	*ifindex = 0;
	*mark = 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&gso, CMSG_DATA(c), sizeof(gso));
		} else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_MARK) {
			memcpy(mark, CMSG_DATA(c), sizeof(*mark));
		} else if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			*ifindex = pi.ipi_ifindex;
			if (!local)
				continue;
			memset(local->addr, 0, 10);
			local->addr[10] = local->addr[11] = 0xFF;
			memcpy(local->addr + 12, &pi.ipi_addr, 4);
			local->family = AF_INET;
		} else if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			*ifindex = pi.ipi6_ifindex;
			if (!local)
				continue;
			memcpy(local->addr, &pi.ipi6_addr, 16);
			local->family = IN6_IS_ADDR_V4MAPPED(&pi.ipi6_addr) ? AF_INET : AF_INET6;
		}
	}
	return gso;
}


uint16_t udp_rx_orig_port(struct msghdr *mh)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		if (c->cmsg_level == SOL_IP && c->cmsg_type == IP_ORIGDSTADDR) {
			struct sockaddr_in sin;

			memcpy(&sin, CMSG_DATA(c), sizeof(sin));
			return sin.sin_port;
		}
		if (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_ORIGDSTADDR) {
			struct sockaddr_in6 sin6;

			memcpy(&sin6, CMSG_DATA(c), sizeof(sin6));
			return sin6.sin6_port;
		}
	}
	return 0;
}
