// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>
#include <net/if.h>
#include <linux/if_link.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>
#include "lib/log.h"
#include "lib/pins.h"
#include "mmp_maps.h"
#include "mmp_xdp.h"
#include "policy/xdp_gate.h"
#include "xdp_gate.skel.h"

struct gate_iface {
	char name[IF_NAMESIZE];
	int ifindex;
	struct xdp_gate_bpf *skel;
	struct xdp_program *prog;
	enum xdp_attach_mode mode;
	bool attached;
	bool shared; /* in libxdp's dispatcher: only libxdp can detach it */
};

struct mmp_xdp_gate {
	char pin_dir[PATH_MAX - 64];
	struct gate_iface ifs[32];
	int n;
	int allow4_fd, allow6_fd, cnt_fd; /* shared by every interface's program */
};

static int libxdp_print(enum libxdp_print_level level, const char *fmt, va_list args)
{
	char line[512];
	size_t n;

	if (level == LIBXDP_DEBUG && mmp_verbosity < MMP_LOG_DEBUG)
		return 0;
	if (level == LIBXDP_INFO && mmp_verbosity < MMP_LOG_CONN)
		return 0;
	vsnprintf(line, sizeof(line), fmt, args);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = 0;
	mmp_log(level == LIBXDP_WARN ? MMP_LOG_ERR : MMP_LOG_DEBUG, "libxdp: %s", line);
	return 0;
}

static const char *mode_name(enum xdp_attach_mode m)
{
	return m == XDP_MODE_SKB ? "skb" : m == XDP_MODE_NATIVE ? "native" : m == XDP_MODE_HW ? "hw" : "unspec";
}

/* The listen address as the program's rodata: which destinations it judges. */
static void set_listen(struct xdp_gate_bpf *skel, const struct mmp_config *cfg)
{
	skel->rodata->gate_proto = (__u8)cfg->protocol;
	/* One gate per interface judges both protocols of -p tcp,udp: a second one could not attach there. */
	skel->rodata->gate_proto2 = cfg->tcp_and_udp ? IPPROTO_UDP : 0;
	if (cfg->listen.ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)&cfg->listen;

		skel->rodata->port_lo = ntohs(sin->sin_port);
		skel->rodata->port_hi = cfg->listen_port_hi; /* the whole -l range (docs/DESIGN.md §8) */
		skel->rodata->match4 = sin->sin_addr.s_addr == htonl(INADDR_ANY) ? 1 : 2;
		memcpy((void *)skel->rodata->dst4, &sin->sin_addr, 4);
		skel->rodata->match6 = 0;
	} else {
		const struct sockaddr_in6 *sin6 = (const void *)&cfg->listen;
		bool any = IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr);

		skel->rodata->port_lo = ntohs(sin6->sin6_port);
		skel->rodata->port_hi = cfg->listen_port_hi;
		/* [::] is dual-stack: IPv4 clients reach it too (docs/DESIGN.md §2). */
		skel->rodata->match4 = any ? 1 : 0;
		skel->rodata->match6 = any ? 1 : 2;
		memcpy((void *)skel->rodata->dst6, &sin6->sin6_addr, 16);
	}
}

/*
 * Another tool's program on the interface, outside a dispatcher, would be
 * replaced (or refuse us with EBUSY, deep inside libxdp). Say which one.
 */
static int refuse_foreign(const struct gate_iface *gi)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(gi->ifindex);
	struct xdp_program *main_prog;
	int err = 0;

	if (libxdp_get_error(mp) || !mp)
		return 0; /* nothing attached */
	main_prog = xdp_multiprog__main_prog(mp);
	if (main_prog && xdp_multiprog__is_legacy(mp)) {
		pr_err("%s already runs XDP program id %u \"%s\" (%s mode) outside libxdp's dispatcher; mmproxy-bpf never "
		       "replaces another tool's program (detach it: xdp-loader unload %s --all, or ip link set dev %s xdp off; "
		       "or drop --xdp-iface %s); see docs/DESIGN.md §2 for why the dispatcher cannot share it on this kernel",
		       gi->name, xdp_program__id(main_prog), xdp_program__name(main_prog),
		       mode_name(xdp_multiprog__attach_mode(mp)), gi->name, gi->name, gi->name);
		err = -EBUSY;
	}
	xdp_multiprog__close(mp);
	return err;
}

static int pin_path(const struct mmp_xdp_gate *g, const char *ifname, char *buf, size_t len)
{
	return snprintf(buf, len, "%s/%s%s", g->pin_dir, MMP_XDP_PIN_PREFIX, ifname) >= (int)len ? -ENAMETOOLONG : 0;
}

/* Open this interface's copy of the gate: the shared maps reused before load (libxdp loads it). */
static int open_iface(struct mmp_xdp_gate *g, struct gate_iface *gi, const struct mmp_config *cfg)
{
	int err;

	gi->skel = xdp_gate_bpf__open();
	if (!gi->skel)
		return -errno;
	set_listen(gi->skel, cfg);
	err = bpf_map__reuse_fd(gi->skel->maps.mmp_allow4, g->allow4_fd);
	if (!err)
		err = bpf_map__reuse_fd(gi->skel->maps.mmp_allow6, g->allow6_fd);
	if (!err && g->cnt_fd >= 0)
		err = bpf_map__reuse_fd(gi->skel->maps.mmp_xdp_cnt, g->cnt_fd);
	if (err) {
		pr_err("xdp gate on %s: failed to reuse the pinned maps: %s", gi->name, strerror(-err));
		return err;
	}
	gi->prog = xdp_program__from_bpf_obj(gi->skel->obj, "xdp");
	err = libxdp_get_error(gi->prog);
	if (err) {
		gi->prog = NULL;
		pr_err("xdp gate on %s: libxdp could not open the program: %s", gi->name, strerror(-err));
	}
	return err;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return 0;
}

/* Say once whether libxdp could share the interface (a dispatcher) or runs the gate alone. */
static void log_sharing(struct gate_iface *gi)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(gi->ifindex);

	if (libxdp_get_error(mp) || !mp)
		return;
	gi->shared = !xdp_multiprog__is_legacy(mp);
	if (!gi->shared)
		pr_info("xdp gate on %s runs without libxdp's dispatcher (this kernel refuses the dispatcher's freplace "
			"check with EPERM, docs/DESIGN.md §2): other XDP programs on %s are refused, never replaced",
			gi->name, gi->name);
	else
		pr_info("xdp gate on %s shares libxdp's dispatcher with %d other program(s)", gi->name,
			xdp_multiprog__program_count(mp) - 1);
	xdp_multiprog__close(mp);
}

/* libxdp tries its dispatcher first; its failed check prints libbpf errors that are expected here. */
static int attach_quietly(struct gate_iface *gi, enum xdp_attach_mode mode)
{
	libbpf_print_fn_t old = libbpf_set_print(libbpf_quiet);
	int err;

	if (mmp_verbosity >= MMP_LOG_DEBUG)
		libbpf_set_print(old);
	err = xdp_program__attach(gi->prog, gi->ifindex, mode, 0);
	libbpf_set_print(old);
	return err;
}

/* --xdp-mode auto: native, else skb (veth and most drivers have native; some do not). */
static int attach_iface(struct gate_iface *gi, enum mmp_xdp_mode want)
{
	enum xdp_attach_mode mode = want == MMP_XDP_MODE_SKB ? XDP_MODE_SKB : XDP_MODE_NATIVE;
	int err = attach_quietly(gi, mode);

	if (err && want == MMP_XDP_MODE_AUTO && err != -EBUSY && err != -EEXIST) {
		pr_err("xdp gate on %s: native mode failed (%s); falling back to skb mode (slower: after the skb exists)",
		       gi->name, strerror(-err));
		mode = XDP_MODE_SKB;
		err = attach_quietly(gi, mode);
	}
	if (err) {
		pr_err("xdp gate on %s: attach in %s mode failed: %s (try --xdp-mode skb, or check xdp-loader status %s)",
		       gi->name, mode_name(mode), strerror(-err), gi->name);
		return err;
	}
	gi->mode = mode;
	gi->attached = true;
	log_sharing(gi);
	return 0;
}

static int attach_all(struct mmp_xdp_gate *g, const struct mmp_config *cfg)
{
	char path[PATH_MAX];
	int err;

	for (int i = 0; i < cfg->n_xdp_ifaces; i++) {
		struct gate_iface *gi = &g->ifs[g->n];

		snprintf(gi->name, sizeof(gi->name), "%s", cfg->xdp_ifaces[i]);
		gi->ifindex = (int)if_nametoindex(gi->name);
		if (!gi->ifindex) {
			pr_err("--xdp-iface %s: no such interface (see ip link)", cfg->xdp_ifaces[i]);
			return -ENODEV;
		}
		g->n++;
		err = refuse_foreign(gi);
		if (!err)
			err = open_iface(g, gi, cfg);
		if (!err)
			err = attach_iface(gi, cfg->xdp_mode);
		if (err)
			return err;
		/* The first program's counters become everyone's, and stats reads them from the pin. */
		if (g->cnt_fd < 0) {
			err = mmp_pin_map(g->pin_dir, gi->skel->maps.mmp_xdp_cnt);
			if (err)
				return err;
			g->cnt_fd = dup(bpf_map__fd(gi->skel->maps.mmp_xdp_cnt));
		}
		err = pin_path(g, gi->name, path, sizeof(path));
		if (!err) {
			unlink(path); /* a stale pin of a killed instance */
			err = bpf_obj_pin(xdp_program__fd(gi->prog), path) ? -errno : 0;
		}
		if (err) {
			pr_err("xdp gate on %s: failed to pin the program at %s: %s", gi->name, path, strerror(-err));
			return err;
		}
		pr_info("xdp gate on %s (%s mode, program id %u): dropping SYNs and datagrams from sources outside the allowed "
			"subnets", gi->name, mode_name(gi->mode), xdp_program__id(gi->prog));
	}
	return 0;
}

int mmp_xdp_gate_open(const struct mmp_config *cfg, struct mmp_xdp_gate **out)
{
	struct mmp_xdp_gate *g;
	int err;

	*out = NULL;
	if (!cfg->n_xdp_ifaces)
		return 0;
	if (!cfg->allowed_path) {
		pr_err("warning: --xdp-iface without -a: every source is allowed, so the XDP gate is not loaded");
		return 0;
	}
	libxdp_set_print(libxdp_print);
	g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	snprintf(g->pin_dir, sizeof(g->pin_dir), "%s", cfg->pin_dir);
	g->cnt_fd = -1;
	g->allow4_fd = mmp_open_pin(cfg->pin_dir, MMP_ALLOW4_MAP);
	g->allow6_fd = mmp_open_pin(cfg->pin_dir, MMP_ALLOW6_MAP);
	if (g->allow4_fd < 0 || g->allow6_fd < 0) {
		err = -errno;
		pr_err("xdp gate: the allow maps are not pinned under %s: %s (open the policy first)", cfg->pin_dir,
		       strerror(-err));
		goto fail;
	}
	err = attach_all(g, cfg);
	if (err)
		goto fail;
	*out = g;
	return 0;
fail:
	mmp_xdp_gate_close(g);
	return err;
}

/*
 * The gate alone on the interface: detach it by netlink, only if it is still
 * the program attached, with the fd we hold. That needs CAP_NET_ADMIN only;
 * libxdp's detach looks the program up by id (BPF_PROG_GET_FD_BY_ID), which
 * needs CAP_SYS_ADMIN, dropped after set-up (docs/DESIGN.md §9).
 */
static int detach_alone(const struct gate_iface *gi)
{
	LIBBPF_OPTS(bpf_xdp_attach_opts, opts, .old_prog_fd = xdp_program__fd(gi->prog));
	__u32 flags = gi->mode == XDP_MODE_SKB ? XDP_FLAGS_SKB_MODE : gi->mode == XDP_MODE_NATIVE ? XDP_FLAGS_DRV_MODE : 0;

	return bpf_xdp_detach(gi->ifindex, flags, &opts); /* old_prog_fd: libbpf adds XDP_FLAGS_REPLACE */
}

bool mmp_xdp_gate_shares_dispatcher(const struct mmp_xdp_gate *g)
{
	for (int i = 0; g && i < g->n; i++)
		if (g->ifs[i].attached && g->ifs[i].shared)
			return true;
	return false;
}

void mmp_xdp_gate_close(struct mmp_xdp_gate *g)
{
	char path[PATH_MAX];

	if (!g)
		return;
	for (int i = 0; i < g->n; i++) {
		struct gate_iface *gi = &g->ifs[i];

		if (gi->attached) {
			int err = gi->shared ? xdp_program__detach(gi->prog, gi->ifindex, gi->mode, 0) : detach_alone(gi);

			if (err)
				pr_err("xdp gate on %s: detach failed: %s (run mmproxy-bpf cleanup)", gi->name,
				       strerror(-err));
			else
				pr_debug("xdp gate detached from %s", gi->name);
		}
		if (!pin_path(g, gi->name, path, sizeof(path)) && gi->attached)
			unlink(path);
		xdp_program__close(gi->prog);
		xdp_gate_bpf__destroy(gi->skel);
	}
	if (g->cnt_fd >= 0) {
		mmp_unpin(g->pin_dir, MMP_XDP_COUNTERS_MAP);
		close(g->cnt_fd);
	}
	if (g->allow4_fd >= 0)
		close(g->allow4_fd);
	if (g->allow6_fd >= 0)
		close(g->allow6_fd);
	free(g);
}

/* Detach program id from ifindex, alone or in a dispatcher: 1 detached, 0 not attached there, or -errno. */
static int detach_id(int ifindex, __u32 id)
{
	struct xdp_multiprog *mp = xdp_multiprog__get_from_ifindex(ifindex);
	struct xdp_program *p;
	int ret = 0;

	if (libxdp_get_error(mp) || !mp)
		return 0;
	if (xdp_multiprog__is_legacy(mp)) {
		p = xdp_multiprog__main_prog(mp);
		if (p && xdp_program__id(p) == id)
			ret = xdp_multiprog__detach(mp) ?: 1;
	} else {
		for (p = xdp_multiprog__next_prog(NULL, mp); p; p = xdp_multiprog__next_prog(p, mp)) {
			if (xdp_program__id(p) == id) {
				ret = xdp_program__detach(p, ifindex, xdp_multiprog__attach_mode(mp), 0) ?: 1;
				break;
			}
		}
	}
	xdp_multiprog__close(mp);
	return ret;
}

/* One pin DIR/mmp_xdp_gate_IF: detach that program from IF, then drop the pin (kept when detaching failed). */
static int cleanup_pin(const char *pin_dir, const char *pin_name, const char *ifname)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);
	char path[PATH_MAX];
	int fd, ifindex, ret;

	snprintf(path, sizeof(path), "%s/%s", pin_dir, pin_name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	ret = bpf_obj_get_info_by_fd(fd, &info, &len) ? -errno : 0;
	close(fd);
	/* Ours by name as well as by the pin's id: never another tool's program. */
	if (ret || strcmp(info.name, MMP_XDP_PROG_NAME)) {
		fprintf(stderr, "mmproxy-bpf: %s is not an XDP gate; left alone\n", path);
		return 0;
	}
	ifindex = (int)if_nametoindex(ifname);
	if (!ifindex) {
		fprintf(stderr, "mmproxy-bpf: XDP gate %u: no interface %s in this network namespace (run cleanup where the "
			"proxy ran, e.g. nsenter --net=/run/netns/NS); pin %s kept\n", info.id, ifname, path);
		return 0;
	}
	ret = detach_id(ifindex, info.id);
	if (ret < 0) {
		fprintf(stderr, "mmproxy-bpf: failed to detach XDP gate %u from %s: %s (xdp-loader status %s shows it); pin "
			"%s kept\n", info.id, ifname, strerror(-ret), ifname, path);
		return 0;
	}
	if (ret)
		printf("detached: XDP gate (program id %u) from %s\n", info.id, ifname);
	unlink(path);
	return ret;
}

int mmp_xdp_gate_cleanup(const char *pin_dir)
{
	size_t plen = strlen(MMP_XDP_PIN_PREFIX);
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(pin_dir);

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (!strncmp(de->d_name, MMP_XDP_PIN_PREFIX, plen))
			n += cleanup_pin(pin_dir, de->d_name, de->d_name + plen);
	closedir(d);
	return n;
}
