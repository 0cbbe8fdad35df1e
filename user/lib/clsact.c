// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
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

/* Filters on ifindex's clsact ingress and egress hooks together, or -errno. */
static int mmp_clsact_filter_count(int ifindex)
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

int mmp_clsact_filter_foreign(int ifindex, bool egress, __u32 handle, __u32 prio, int map_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
			    .attach_point = egress ? BPF_TC_EGRESS : BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = handle, .priority = prio);
	struct bpf_map_info minfo = { 0 };
	struct bpf_prog_info pinfo = { 0 };
	__u32 ids[64], len = sizeof(minfo);
	int prog_fd, err;

	err = bpf_tc_query(&hook, &opts);
	if (err == -ENOENT || err == -EINVAL) /* no filter there, or no clsact qdisc yet */
		return 0;
	if (err)
		return err;
	if (bpf_obj_get_info_by_fd(map_fd, &minfo, &len))
		return -errno;
	prog_fd = bpf_prog_get_fd_by_id(opts.prog_id);
	if (prog_fd < 0)
		return errno == ENOENT ? 0 : -errno; /* gone meanwhile */
	pinfo.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	pinfo.map_ids = (__u64)(unsigned long)ids;
	len = sizeof(pinfo);
	err = bpf_obj_get_info_by_fd(prog_fd, &pinfo, &len) ? -errno : 1;
	close(prog_fd);
	for (__u32 i = 0; err == 1 && i < pinfo.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++)
		if (ids[i] == minfo.id)
			err = 0;
	return err;
}
