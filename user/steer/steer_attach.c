// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <net/if.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/clsact.h"
#include "lib/log.h"
#include "mmp_steer.h"
#include "steer/steer_attach.h"

/*
 * The program id of the filter at id on ifindex's ingress: 0 when there is
 * none, or -errno. libbpf is silenced meanwhile: "Cannot find specified
 * filter chain", its warning for an empty slot, is the expected answer here
 * (called at start, at exit after the workers stopped, and by the main
 * thread's tick when a route moves: the workers print nothing through
 * libbpf, so the swap of its print hook races with nobody).
 */
static long filter_prog_id(int ifindex, struct mmp_tc_id id)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = id.handle, .priority = id.prio);
	libbpf_print_fn_t old = libbpf_set_print(NULL);
	int err = bpf_tc_query(&hook, &opts);

	libbpf_set_print(old);
	if (err == -ENOENT || err == -EINVAL)
		return 0;
	return err ? err : (long)opts.prog_id;
}

/* 1: prog_id is a steering program; 0: it is gone; -EBUSY: another program. Needs CAP_SYS_ADMIN (start only). */
static int is_steering_prog(__u32 prog_id)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	int fd, err;

	fd = bpf_prog_get_fd_by_id(prog_id);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	err = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	close(fd);
	if (err)
		return err;
	/* Program names are cut at 15 characters; ours fits. */
	return strncmp(info.name, MMP_STEER_PROG, sizeof(info.name)) ? -EBUSY : 1;
}

int mmp_steer_attach(int ifindex, struct mmp_tc_id id, int prog_fd)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = id.handle, .priority = id.prio, .prog_fd = prog_fd,
			    .flags = BPF_TC_F_REPLACE);
	char name[IF_NAMESIZE] = "?";
	int err;

	if_indextoname(ifindex, name);
	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		goto fail;
	err = filter_prog_id(ifindex, id);
	/* A predecessor's filter (a crash) is replaced; anything else is not ours to take. */
	if (err > 0)
		err = is_steering_prog((__u32)err);
	if (err == -EBUSY) {
		pr_err("reply steering: %s ingress already has a filter at priority %u handle 0x%x that is not a steering program: another tool or instance uses it; give this instance another --pin-dir",
		       name, id.prio, id.handle);
		return err;
	}
	err = bpf_tc_attach(&hook, &opts);
	if (!err)
		return 0;
fail:
	pr_err("reply steering: failed to attach to %s ingress: %s", name, strerror(-err));
	return err;
}

void mmp_steer_detach(int ifindex, struct mmp_tc_id id, __u32 prog_id)
{
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, opts, .handle = id.handle, .priority = id.prio);

	/* By our own program's id: after the capability drop, other programs cannot be opened by id (§9). */
	if (filter_prog_id(ifindex, id) != (long)prog_id)
		return; /* another's filter at our priority stays */
	bpf_tc_detach(&hook, &opts);
	mmp_clsact_remove_if_empty(ifindex);
}
