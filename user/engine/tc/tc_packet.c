// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "engine/tc/tc_packet.h"

#define IP4_HLEN 20
#define IP6_HLEN 40
#define TCP_HLEN 20
#define TS_OPT_LEN 12 /* NOP, NOP, kind 8, len 10, TSval, TSecr */

uint32_t mmp_csum_partial(const void *buf, size_t len, uint32_t sum)
{
	const uint8_t *p = buf;

	while (len > 1) {
		sum += (uint32_t)p[0] << 8 | p[1];
		p += 2;
		len -= 2;
	}
	if (len)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

uint16_t mmp_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

size_t mmp_tc_build_ack(const struct mmp_tc_ack *a, uint8_t *buf)
{
	return mmp_tc_build_segment(a, NULL, 0, buf);
}

size_t mmp_tc_build_segment(const struct mmp_tc_ack *a, const void *payload, size_t len, uint8_t *buf)
{
	size_t ip_len = a->tuple.family == 4 ? IP4_HLEN : IP6_HLEN;
	size_t hdr_len = TCP_HLEN + (a->timestamps ? TS_OPT_LEN : 0), tcp_len = hdr_len + len;
	uint8_t *tcp = buf + ip_len;
	uint32_t sum, window = a->window > 65535 ? 65535 : a->window;
	uint8_t pseudo[40];
	size_t alen = a->tuple.family == 4 ? 4 : 16;

	memset(buf, 0, ip_len + hdr_len);
	if (len)
		memcpy(buf + ip_len + hdr_len, payload, len);
	if (a->tuple.family == 4) {
		buf[0] = 0x45;
		buf[2] = (ip_len + tcp_len) >> 8;
		buf[3] = (uint8_t)(ip_len + tcp_len);
		buf[6] = 0x40; /* DF */
		buf[8] = 64;
		buf[9] = IPPROTO_TCP;
		memcpy(buf + 12, a->tuple.saddr, 4);
		memcpy(buf + 16, a->tuple.daddr, 4);
		sum = mmp_csum_partial(buf, IP4_HLEN, 0);
		buf[10] = mmp_csum_fold(sum) >> 8;
		buf[11] = (uint8_t)mmp_csum_fold(sum);
	} else {
		buf[0] = 0x60;
		buf[4] = tcp_len >> 8;
		buf[5] = (uint8_t)tcp_len;
		buf[6] = IPPROTO_TCP;
		buf[7] = 64;
		memcpy(buf + 8, a->tuple.saddr, 16);
		memcpy(buf + 24, a->tuple.daddr, 16);
	}
	memcpy(tcp, &a->tuple.sport, 2);
	memcpy(tcp + 2, &a->tuple.dport, 2);
	put32(tcp + 4, a->seq);
	put32(tcp + 8, a->ack);
	tcp[12] = (uint8_t)((hdr_len / 4) << 4);
	tcp[13] = a->flags ? a->flags : len ? 0x18 : 0x10; /* ACK, with PSH when it carries data */
	tcp[14] = window >> 8;
	tcp[15] = (uint8_t)window;
	if (a->timestamps) {
		tcp[20] = 1;
		tcp[21] = 1;
		tcp[22] = 8;
		tcp[23] = 10;
		put32(tcp + 24, a->tsval);
		put32(tcp + 28, a->tsecr);
	}
	/* Pseudo header: addresses, zero, protocol, TCP length. */
	memset(pseudo, 0, sizeof(pseudo));
	memcpy(pseudo, a->tuple.saddr, alen);
	memcpy(pseudo + alen, a->tuple.daddr, alen);
	sum = mmp_csum_partial(pseudo, 2 * alen, 0);
	sum += IPPROTO_TCP + (uint32_t)tcp_len;
	sum = mmp_csum_partial(tcp, tcp_len, sum);
	tcp[16] = mmp_csum_fold(sum) >> 8;
	tcp[17] = (uint8_t)mmp_csum_fold(sum);
	return ip_len + tcp_len;
}

int mmp_tc_send_ack(int raw_fd, const struct mmp_tc_ack *a)
{
	uint8_t buf[80];

	return mmp_tc_send_segment(raw_fd, a, NULL, 0, buf);
}

int mmp_tc_send_segment(int raw_fd, const struct mmp_tc_ack *a, const void *payload, size_t plen, uint8_t *buf)
{
	size_t len = mmp_tc_build_segment(a, payload, plen, buf);
	struct sockaddr_storage dst = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	union {
		struct cmsghdr align;
		char buf[CMSG_SPACE(sizeof(uint32_t))];
	} ctl = { 0 };
	struct msghdr msg = { .msg_name = &dst, .msg_iov = &iov, .msg_iovlen = 1 };

	if (a->tuple.family == 4) {
		struct sockaddr_in *sin = (void *)&dst;

		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, a->tuple.daddr, 4);
		msg.msg_namelen = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (void *)&dst;

		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, a->tuple.daddr, 16);
		msg.msg_namelen = sizeof(*sin6);
	}
	if (a->mark) {
		/* Per message: the same raw socket sends toward the load balancer, unmarked. */
		struct cmsghdr *cm;

		msg.msg_control = ctl.buf;
		msg.msg_controllen = sizeof(ctl.buf);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SO_MARK;
		cm->cmsg_len = CMSG_LEN(sizeof(uint32_t));
		memcpy(CMSG_DATA(cm), &a->mark, sizeof(uint32_t));
	}
	if (raw_fd < 0)
		return -EAFNOSUPPORT;
	if (sendmsg(raw_fd, &msg, 0) != (ssize_t)len)
		return -errno;
	return 0;
}
