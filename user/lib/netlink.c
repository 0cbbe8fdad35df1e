// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include "lib/netlink.h"

int mmp_route_oif(const struct sockaddr_storage *dst, uint32_t mark)
{
	struct {
		struct nlmsghdr nh;
		struct rtmsg rt;
		char attrs[64];
	} req = { 0 };
	char buf[8192];
	struct rtattr *rta;
	struct nlmsghdr *nh;
	size_t alen = dst->ss_family == AF_INET ? 4 : 16;
	const void *addr = dst->ss_family == AF_INET ? (const void *)&((const struct sockaddr_in *)dst)->sin_addr
						     : (const void *)&((const struct sockaddr_in6 *)dst)->sin6_addr;
	int fd, len, oif = -ENOENT;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	req.nh.nlmsg_type = RTM_GETROUTE;
	req.nh.nlmsg_flags = NLM_F_REQUEST;
	req.rt.rtm_family = dst->ss_family;
	req.rt.rtm_dst_len = alen * 8;
	rta = (struct rtattr *)req.attrs;
	rta->rta_type = RTA_DST;
	rta->rta_len = RTA_LENGTH(alen);
	memcpy(RTA_DATA(rta), addr, alen);
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.rt)) + RTA_ALIGN(rta->rta_len);
	if (mark) {
		/* As a socket with SO_MARK would be routed: fwmark rules choose its table. */
		rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
		rta->rta_type = RTA_MARK;
		rta->rta_len = RTA_LENGTH(sizeof(mark));
		memcpy(RTA_DATA(rta), &mark, sizeof(mark));
		req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
	}
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0) {
		oif = -errno;
		goto out;
	}
	len = recv(fd, buf, sizeof(buf), 0);
	if (len < 0) {
		oif = -errno;
		goto out;
	}
	for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned int)len); nh = NLMSG_NEXT(nh, len)) {
		struct rtmsg *rt = NLMSG_DATA(nh);
		int rlen = RTM_PAYLOAD(nh);

		if (nh->nlmsg_type == NLMSG_ERROR) {
			struct nlmsgerr *e = NLMSG_DATA(nh);

			oif = e->error ? e->error : -ENOENT;
			break;
		}
		if (nh->nlmsg_type != RTM_NEWROUTE)
			continue;
		for (rta = RTM_RTA(rt); RTA_OK(rta, rlen); rta = RTA_NEXT(rta, rlen))
			if (rta->rta_type == RTA_OIF)
				oif = *(int *)RTA_DATA(rta);
	}
out:
	close(fd);
	return oif;
}
