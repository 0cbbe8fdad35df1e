// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <bpf/libbpf.h>
#include "lib/clsact.h"

#ifndef TC_H_CLSACT
#define TC_H_CLSACT TC_H_INGRESS
#endif
#ifndef TC_H_MIN_INGRESS
#define TC_H_MIN_INGRESS 0xFFF2U
#define TC_H_MIN_EGRESS 0xFFF3U
#endif

/*
 * RTM_GETTFILTER dump of one hook: the kernel sends a message per filter
 * (and per priority), so any message at all means the hook is in use.
 * Returns how many, or -errno (-EINVAL: no clsact qdisc on ifindex).
 */
static int count_filters(int fd, int ifindex, unsigned int parent)
{
	struct {
		struct nlmsghdr nh;
		struct tcmsg tc;
	} req = { 0 };
	char buf[16384];
	int n = 0;

	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(req.tc));
	req.nh.nlmsg_type = RTM_GETTFILTER;
	req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	req.tc.tcm_family = AF_UNSPEC;
	req.tc.tcm_ifindex = ifindex;
	req.tc.tcm_parent = parent;
	if (send(fd, &req, req.nh.nlmsg_len, 0) < 0)
		return -errno;
	for (;;) {
		int len = (int)recv(fd, buf, sizeof(buf), 0);
		struct nlmsghdr *nh;

		if (len < 0)
			return -errno;
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (unsigned int)len); nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_type == NLMSG_DONE)
				return n;
			if (nh->nlmsg_type == NLMSG_ERROR) {
				struct nlmsgerr *e = NLMSG_DATA(nh);

				return e->error ? e->error : n;
			}
			if (nh->nlmsg_type == RTM_NEWTFILTER)
				n++;
		}
	}
}

int mmp_clsact_filter_count(int ifindex)
{
	int fd, in, out;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	in = count_filters(fd, ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_INGRESS));
	out = in < 0 ? in : count_filters(fd, ifindex, TC_H_MAKE(TC_H_CLSACT, TC_H_MIN_EGRESS));
	close(fd);
	return out < 0 ? out : in + out;
}

int mmp_clsact_remove_if_empty(int ifindex)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	int n = mmp_clsact_filter_count(ifindex);

	if (n == -EINVAL || n == -ENOENT || n == -ENODEV)
		return 0; /* no qdisc (or no interface) any more */
	if (n != 0)
		return n < 0 ? n : 0;
	/* A filter attached between the count and here would go too: a window of microseconds. */
	n = bpf_tc_hook_destroy(&hook);
	return n == 0 ? 1 : (n == -ENOENT || n == -EINVAL ? 0 : n);
}
