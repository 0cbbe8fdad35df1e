// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/log.h"
#include "lib/pins.h"
#include "listen/port_range.h"
#include "listen/reuseport_steer.h"
#include "mmp_maps.h"
#include "reuseport.skel.h"

struct mmp_reuseport_steer {
	struct reuseport_bpf *skel;
	const char *pin_dir;
	int ports; /* sockets per listener thread */
	bool failed; /* a socket could not be added: not attached, the kernel's own choice stays */
	int group_fd[]; /* per port index: a socket of its group, to attach through; -1 until added */
};

int mmp_reuseport_steer_open(const struct mmp_config *cfg, int ports, struct mmp_reuseport_steer **out)
{
	struct mmp_reuseport_steer *s = calloc(1, sizeof(*s) + (size_t)ports * sizeof(s->group_fd[0]));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	s->pin_dir = cfg->pin_dir;
	s->ports = ports;
	for (int i = 0; i < ports; i++)
		s->group_fd[i] = -1;
	s->skel = reuseport_bpf__open();
	if (!s->skel) {
		err = -errno;
		goto fail;
	}
	s->skel->rodata->listeners = (__u32)cfg->listeners;
	s->skel->rodata->port_lo = mmp_sa_port(&cfg->listen);
	s->skel->rodata->ports = (__u32)ports;
	err = bpf_map__set_max_entries(s->skel->maps.mmp_reuseport_listeners, (__u32)(ports * cfg->listeners));
	if (!err)
		err = reuseport_bpf__load(s->skel);
	if (!err)
		err = mmp_pin_map_as(s->pin_dir, s->skel->maps.mmp_reuseport_listeners, MMP_REUSEPORT_LISTENERS_MAP);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	pr_err("--takeover: cannot load the SO_REUSEPORT program (%s): the predecessor's listeners take new connections until they close",
	       strerror(-err));
	mmp_reuseport_steer_close(s);
	return err;
}

int mmp_reuseport_steer_add(struct mmp_reuseport_steer *s, int listener, int port, int fd)
{
	__u32 key = (__u32)(port * s->skel->rodata->listeners + (__u32)listener);
	__u64 value = (__u64)fd;

	if (bpf_map__update_elem(s->skel->maps.mmp_reuseport_listeners, &key, sizeof(key), &value, sizeof(value),
				 BPF_ANY)) {
		int err = -errno;

		pr_err("--takeover: cannot add listener %d (port index %d) to %s/%s (%s): the predecessor's listeners take new connections until they close",
		       listener, port, s->pin_dir, MMP_REUSEPORT_LISTENERS_MAP, strerror(-err));
		s->failed = true;
		return err;
	}
	if (s->group_fd[port] < 0)
		s->group_fd[port] = fd;
	return 0;
}

int mmp_reuseport_steer_attach(struct mmp_reuseport_steer *s)
{
	int prog = bpf_program__fd(s->skel->progs.mmp_reuseport_select);

	if (s->failed)
		return -ENOENT;
	for (int i = 0; i < s->ports; i++) {
		if (s->group_fd[i] < 0)
			continue;
		/* Set on one socket, the program serves its whole group: the predecessor's listeners too. */
		if (setsockopt(s->group_fd[i], SOL_SOCKET, SO_ATTACH_REUSEPORT_EBPF, &prog, sizeof(prog))) {
			int err = -errno;

			pr_err("--takeover: cannot attach the SO_REUSEPORT program (%s): the predecessor's listeners take new connections until they close",
			       strerror(-err));
			return err;
		}
	}
	return 0;
}

void mmp_reuseport_steer_close(struct mmp_reuseport_steer *s)
{
	if (!s)
		return;
	if (s->skel && bpf_map__is_pinned(s->skel->maps.mmp_reuseport_listeners))
		mmp_unpin(s->pin_dir, MMP_REUSEPORT_LISTENERS_MAP);
	reuseport_bpf__destroy(s->skel);
	free(s);
}
