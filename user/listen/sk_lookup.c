// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/handover.h"
#include "lib/log.h"
#include "lib/pins.h"
#include "listen/port_range.h"
#include "listen/sk_lookup.h"
#include "mmp_maps.h"
#include "sk_lookup.skel.h"

struct mmp_sk_lookup {
	struct sk_lookup_bpf *skel;
	struct bpf_link *link;
	char pin_dir[PATH_MAX - 64]; /* room for "/NAME" in a PATH_MAX buffer */
	const char *map_pin, *link_pin; /* names in pin_dir (pin_names) */
};

/*
 * -p tcp,udp has one sk_lookup program per protocol in one pin directory:
 * UDP's pins take a suffix so that the names do not collide (docs/DESIGN.md
 * §13). `cleanup` removes every mmp_* pin, so it finds these too.
 */
static void pin_names(struct mmp_sk_lookup *s, const struct mmp_config *cfg)
{
	bool second = cfg->tcp_and_udp && cfg->protocol == IPPROTO_UDP;

	s->map_pin = second ? MMP_SK_LISTENERS_MAP "_udp" : MMP_SK_LISTENERS_MAP;
	s->link_pin = second ? MMP_SK_LOOKUP_LINK "_udp" : MMP_SK_LOOKUP_LINK;
}

/* The listen address and ports as the program's rodata, as the XDP gate judges them. */
static void set_listen(struct sk_lookup_bpf *skel, const struct mmp_config *cfg)
{
	skel->rodata->proto = (__u8)cfg->protocol;
	skel->rodata->port_lo = mmp_sa_port(&cfg->listen);
	skel->rodata->port_hi = cfg->listen_port_hi;
	if (cfg->listen.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&cfg->listen;

		skel->rodata->match4 = sin->sin_addr.s_addr == htonl(INADDR_ANY) ? 1 : 2;
		skel->rodata->dst4 = sin->sin_addr.s_addr;
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)&cfg->listen;
		bool any = IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);

		/* [::] is dual-stack: the kernel lets an IPv4 lookup take a socket that is not IPV6_V6ONLY. */
		skel->rodata->match4 = any ? 1 : 0;
		skel->rodata->match6 = any ? 1 : 2;
		memcpy((void *)skel->rodata->dst6, &sin6->sin6_addr, 16);
	}
}

static int attach_here(struct mmp_sk_lookup *s)
{
	char path[PATH_MAX];
	int netns, err;

	netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (netns < 0)
		return -errno;
	s->link = bpf_program__attach_netns(s->skel->progs.mmp_sk_lookup, netns);
	close(netns);
	if (!s->link)
		return -errno;
	/* Pinned so that `cleanup` can detach it after a SIGKILL (an unpinned link would die with us too). */
	snprintf(path, sizeof(path), "%s/%s", s->pin_dir, s->link_pin);
	unlink(path); /* a killed predecessor's: unpinning detaches it */
	err = bpf_link__pin(s->link, path);
	if (err)
		pr_err("failed to pin the sk_lookup link at %s: %s", path, strerror(-err));
	return err;
}

int mmp_sk_lookup_open(const struct mmp_config *cfg, struct mmp_sk_lookup **out)
{
	struct mmp_sk_lookup *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	snprintf(s->pin_dir, sizeof(s->pin_dir), "%s", cfg->pin_dir);
	pin_names(s, cfg);
	s->skel = sk_lookup_bpf__open();
	if (!s->skel) {
		err = -errno;
		goto fail;
	}
	set_listen(s->skel, cfg);
	err = sk_lookup_bpf__load(s->skel);
	if (err) {
		pr_debug("sk_lookup: the kernel refused the program: %s", strerror(-err));
		goto fail;
	}
	err = attach_here(s);
	if (err) {
		pr_debug("sk_lookup: attaching to the network namespace failed: %s", strerror(-err));
		goto fail;
	}
	err = mmp_pin_map_as(s->pin_dir, s->skel->maps.mmp_sk_listeners, s->map_pin);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	mmp_sk_lookup_close(s);
	return err;
}

int mmp_sk_lookup_add(struct mmp_sk_lookup *s, int id, int fd)
{
	__u32 key = (__u32)id;
	__u64 value = (__u64)fd;

	if (bpf_map__update_elem(s->skel->maps.mmp_sk_listeners, &key, sizeof(key), &value, sizeof(value), BPF_ANY)) {
		int err = -errno;

		pr_err("failed to add listener %d to %s/%s: %s", id, s->pin_dir, s->map_pin, strerror(-err));
		return err;
	}
	return 0;
}

void mmp_sk_lookup_close(struct mmp_sk_lookup *s)
{
	if (!s)
		return;
	if (s->link) {
		/* Handing over, the pin at that path is the successor's link (docs/DESIGN.md §15). */
		if (!mmp_handing_over())
			bpf_link__unpin(s->link);
		bpf_link__destroy(s->link); /* detaches: the last reference */
	}
	if (s->skel && s->skel->maps.mmp_sk_listeners && bpf_map__is_pinned(s->skel->maps.mmp_sk_listeners))
		mmp_unpin(s->pin_dir, s->map_pin);
	sk_lookup_bpf__destroy(s->skel);
	free(s);
}
