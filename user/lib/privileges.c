// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <netinet/in.h>
#include <linux/capability.h>
#include <cap-ng.h>
#include "lib/log.h"
#include "lib/privileges.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/*
 * To start, measured per engine with `setpriv --bounding-set=-all,+CAPS`
 * (README, "systemd"): PERFMON is what the verifier wants for the TC and
 * sockmap programs (and the XDP gate's: without it the load is refused with
 * EACCES), NET_RAW the tc engine's raw socket; SYS_ADMIN would only mount a
 * missing bpffs.
 */
static const struct mmp_cap_need start_needs[] = {
	{ CAP_NET_ADMIN, "CAP_NET_ADMIN", MMP_FEAT_UPSTREAM | MMP_FEAT_TC | MMP_FEAT_UDP_FAST | MMP_FEAT_XDP_GATE | MMP_FEAT_MARK,
	  "IP_TRANSPARENT, SO_MARK, TCP_REPAIR, TC filters, XDP attach, routing, lo sysctls" },
	{ CAP_BPF, "CAP_BPF", MMP_FEAT_UPSTREAM, "the pinned BPF maps (allowed subnets, counters) and programs" },
	{ CAP_NET_BIND_SERVICE, "CAP_NET_BIND_SERVICE", MMP_FEAT_UPSTREAM,
	  "a listen port below 1024, and clients whose port is below 1024 (IP_TRANSPARENT does not lift that check)" },
	{ CAP_PERFMON, "CAP_PERFMON", MMP_FEAT_TC | MMP_FEAT_SOCKMAP | MMP_FEAT_UDP_FAST | MMP_FEAT_XDP_GATE,
	  "the tc engine's, the sockmap engine's, the UDP fast path's and the XDP gate's programs" },
	{ CAP_NET_RAW, "CAP_NET_RAW", MMP_FEAT_TC,
	  "the tc engine's raw socket for window updates; without it auto runs splice" },
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE", MMP_FEAT_PIPES,
	  "--lift-pipe-limits: 1 MiB relay pipes (CAP_SYS_ADMIN serves where it is lacking)" },
};

/*
 * After set-up, measured by running each feature with a candidate set and
 * removing one capability at a time (docs/DESIGN.md §9). What is no longer
 * needed: NET_RAW (the raw socket is open), PERFMON (the programs are
 * loaded), and BPF: on this kernel map lookups, updates and deletes on an
 * fd already held, BPF_OBJ_GET on a pin and unlinking a pin need no
 * capability, only map and program creation do, and all happens at start.
 */
static const struct mmp_cap_need run_needs[] = {
	{ CAP_NET_ADMIN, "CAP_NET_ADMIN", MMP_FEAT_UPSTREAM | MMP_FEAT_TC | MMP_FEAT_UDP_FAST | MMP_FEAT_XDP_GATE,
	  "IP_TRANSPARENT and SO_MARK per upstream socket, TCP_REPAIR per tc hand-off, TC filters and XDP detached at exit" },
	/*
	 * bind() to a client's ip:port below 1024 (a health checker, NAT, a
	 * client that binds one): IP_TRANSPARENT does not lift the privileged-port
	 * check, so without it those clients fail with EACCES (t05, t09, t22 send
	 * clients from port 1000).
	 */
	{ CAP_NET_BIND_SERVICE, "CAP_NET_BIND_SERVICE", MMP_FEAT_UPSTREAM, "binding clients whose port is below 1024" },
	/* libxdp finds a dispatcher's programs by id to detach ours (BPF_PROG_GET_FD_BY_ID). */
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN", MMP_FEAT_XDP_DISPATCHER, "libxdp's dispatcher detach at exit" },
	/*
	 * Lifts the per-user pipe limits (fs/pipe.c), which are checked only
	 * when a pipe is made or resized: so it is raised around those calls
	 * alone (engine/splice/splice_copy.c) and not effective otherwise,
	 * where it would also lift rlimits, quotas and reserved disk space.
	 */
	{ CAP_SYS_RESOURCE, "CAP_SYS_RESOURCE", MMP_FEAT_PIPES, "1 MiB relay pipes, raised only while one is made",
	  .on_demand = true },
	{ CAP_SYS_ADMIN, "CAP_SYS_ADMIN", MMP_FEAT_PIPES_ADMIN,
	  "1 MiB relay pipes, raised only while one is made: no CAP_SYS_RESOURCE", .on_demand = true },
};

/* What the data path of one protocol (cfg->protocol) uses. */
static unsigned int protocol_features(const struct mmp_config *cfg, int protocol)
{
	unsigned int f = 0;

	if (protocol == IPPROTO_UDP) {
		/* auto and tc try the fast path; splice and sockmap relay in userspace. */
		if (cfg->engine == MMP_ENGINE_AUTO || cfg->engine == MMP_ENGINE_TC)
			f |= MMP_FEAT_UDP_FAST;
	} else if (cfg->engine == MMP_ENGINE_AUTO || cfg->engine == MMP_ENGINE_TC) {
		f |= MMP_FEAT_TC;
	} else if (cfg->engine == MMP_ENGINE_SOCKMAP) {
		f |= MMP_FEAT_SOCKMAP;
	}
	return f;
}

unsigned int mmp_features_configured(const struct mmp_config *cfg)
{
	unsigned int f = MMP_FEAT_UPSTREAM | protocol_features(cfg, cfg->protocol);

	if (cfg->tcp_and_udp) /* -p tcp,udp: both data paths */
		f |= protocol_features(cfg, IPPROTO_UDP);
	if (cfg->n_xdp_ifaces)
		f |= MMP_FEAT_XDP_GATE;
	if (cfg->mark)
		f |= MMP_FEAT_MARK;
	if (cfg->lift_pipe_limits)
		f |= MMP_FEAT_PIPES;
	return f;
}

const struct mmp_cap_need *mmp_caps_to_start(int *n)
{
	*n = ARRAY_LEN(start_needs);
	return start_needs;
}

#ifdef MMP_CAPS_MEASURE
/*
 * Measurement builds only (make CFLAGS+=-DMMP_CAPS_MEASURE): MMP_CAPS_KEEP=
 * "12,21" keeps exactly those capability numbers, to find what a feature
 * needs by taking one away. Never compiled into a normal build.
 */
static bool measure_override(void)
{
	const char *keep = getenv("MMP_CAPS_KEEP");
	char *end;

	if (!keep)
		return false;
	for (const char *p = keep; *p; p = end) {
		unsigned long cap = strtoul(p, &end, 10);

		if (end == p)
			break;
		capng_update(CAPNG_ADD, CAPNG_EFFECTIVE | CAPNG_PERMITTED | CAPNG_BOUNDING_SET, cap);
		if (*end == ',')
			end++;
	}
	pr_info("measurement build: keeping only MMP_CAPS_KEEP=%s", keep);
	return true;
}
#endif

void mmp_privileges_drop(unsigned int features)
{
	char kept[512] = "";
	size_t len = 0;
	int err, setpcap;

	if (capng_get_caps_process()) {
		pr_warn("warning: cannot read this process's capabilities: running on with all of them");
		return;
	}
	setpcap = capng_have_capability(CAPNG_EFFECTIVE, CAP_SETPCAP); /* before the clear below */
	capng_clear(CAPNG_SELECT_BOTH);
#ifdef MMP_CAPS_MEASURE
	if (!measure_override())
#endif
	for (size_t i = 0; i < ARRAY_LEN(run_needs); i++) {
		if (!(run_needs[i].features & features))
			continue;
		capng_update(CAPNG_ADD, (run_needs[i].on_demand ? 0 : CAPNG_EFFECTIVE) | CAPNG_PERMITTED | CAPNG_BOUNDING_SET,
			     run_needs[i].cap);
		len += snprintf(kept + len, len < sizeof(kept) ? sizeof(kept) - len : 0, "%s%s (%s)",
				len ? ", " : "", run_needs[i].name, run_needs[i].why);
	}
	/*
	 * The bounding set too (docs/DESIGN.md §9): what is dropped can then never
	 * come back, even through execve. That takes CAP_SETPCAP, which a unit's
	 * narrow set lacks; its CapabilityBoundingSet= already limits it.
	 */
	if (!setpcap)
		pr_info("no CAP_SETPCAP: the bounding set stays as the parent set it (CapabilityBoundingSet= in a unit)");
	err = capng_apply(setpcap ? CAPNG_SELECT_BOTH : CAPNG_SELECT_CAPS);
	if (err) {
		pr_warn("warning: could not drop capabilities after set-up (capng_apply: %d): running on with this process's own; run as root or grant CAP_SETPCAP to have them dropped",
			err);
		return;
	}
	pr_info("set-up done: dropped every capability but %s", len ? kept : "none");
}

/*
 * capget/capset on the calling thread (pid 0), not libcap-ng: its
 * capng_get_caps_process also reads /proc for the bounding set, a file
 * opened per call on a path taken per long flow.
 */
static int set_effective(int cap, bool on)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3, .pid = 0 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

	if (cap < 0 || cap > CAP_LAST_CAP)
		return -EINVAL;
	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	if (on)
		data[CAP_TO_INDEX(cap)].effective |= CAP_TO_MASK(cap);
	else
		data[CAP_TO_INDEX(cap)].effective &= ~CAP_TO_MASK(cap);
	if (syscall(SYS_capset, &hdr, data))
		return -errno;
	return 0;
}

int mmp_privilege_raise(int cap)
{
	return set_effective(cap, true);
}

void mmp_privilege_lower(int cap)
{
	set_effective(cap, false); /* cannot fail: dropping from the effective set needs no privilege */
}

/* Set once at start, before any thread runs; read by the threads that make pipes. */
static int pipe_cap = -1;

int mmp_pipe_cap_choose(void)
{
	if (capng_get_caps_process())
		return -EPERM;
	if (capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_RESOURCE)) {
		pipe_cap = CAP_SYS_RESOURCE;
	} else if (capng_have_capability(CAPNG_EFFECTIVE, CAP_SYS_ADMIN)) {
		/* A container may drop the narrow one and keep the broad one (as this project's CI host does). */
		pipe_cap = CAP_SYS_ADMIN;
		pr_warn("warning: --lift-pipe-limits: no CAP_SYS_RESOURCE, so CAP_SYS_ADMIN is kept instead, which grants far more (permitted only, raised while a pipe is made): grant CAP_SYS_RESOURCE to keep that one");
	} else {
		return -EPERM;
	}
	return 0;
}

int mmp_pipe_cap(void)
{
	return pipe_cap;
}

unsigned int mmp_pipe_cap_feature(void)
{
	return pipe_cap == CAP_SYS_ADMIN ? MMP_FEAT_PIPES_ADMIN : MMP_FEAT_PIPES;
}
