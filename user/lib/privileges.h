/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Least privilege (docs/DESIGN.md §9): the capabilities each feature needs to
 * start (`check` lists them) and the smaller set it still needs once `run` has
 * finished its set-up, which mmp_privileges_drop keeps, clearing the rest of
 * the effective, permitted, inheritable and bounding sets (libcap-ng).
 */
#ifndef MMP_PRIVILEGES_H
#define MMP_PRIVILEGES_H

#include <stdbool.h>
#include <linux/capability.h>
#include "lib/config.h"

/* Older uapi headers lack the capabilities split off CAP_SYS_ADMIN in Linux 5.8. */
#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

/* What a run uses, each a reason to keep or to need a capability. */
enum mmp_feature {
	MMP_FEAT_UPSTREAM = 1 << 0, /* every run: spoofed (IP_TRANSPARENT) upstream sockets, the pinned maps */
	MMP_FEAT_TC = 1 << 1, /* the tc engine (TCP, auto where eligible) */
	MMP_FEAT_SOCKMAP = 1 << 2, /* --engine sockmap */
	MMP_FEAT_UDP_FAST = 1 << 3, /* UDP mode's in-kernel fast path */
	MMP_FEAT_XDP_GATE = 1 << 4, /* --xdp-iface */
	MMP_FEAT_MARK = 1 << 5, /* -m: SO_MARK */
	MMP_FEAT_XDP_DISPATCHER = 1 << 6, /* the gate shares libxdp's dispatcher (never on this kernel, §2) */
	MMP_FEAT_PIPES = 1 << 7, /* --lift-pipe-limits, with CAP_SYS_RESOURCE (mmp_pipe_cap) */
	MMP_FEAT_PIPES_ADMIN = 1 << 8, /* --lift-pipe-limits, with CAP_SYS_ADMIN where CAP_SYS_RESOURCE is lacking */
};

/* One capability and the features that need it, with why. */
struct mmp_cap_need {
	int cap;
	const char *name; /* "CAP_NET_ADMIN" */
	unsigned int features; /* needed when any of these is used */
	const char *why;
	/* After set-up: kept permitted only, and a thread raises it just while it uses it (mmp_privilege_raise). */
	bool on_demand;
};

/* The features cfg may use: every engine --engine may choose (auto: tc and splice), the fast path, the gate, -m. */
unsigned int mmp_features_configured(const struct mmp_config *cfg);

/* The capabilities each feature needs to start (`check`), *n rows. */
const struct mmp_cap_need *mmp_caps_to_start(int *n);

/*
 * Once set-up is done (listeners bound, programs attached, raw sockets open,
 * pins made; before any thread starts, as capabilities are per thread): keep
 * only what features still need at run time and at exit, in every set
 * including the bounding set; uid 0 stays. Logs the kept set at -v 1. When the
 * drop fails (already unprivileged, no CAP_SETPCAP), warns once and returns:
 * the run goes on with what it has.
 */
void mmp_privileges_drop(unsigned int features);

/*
 * Makes cap effective in the calling thread only (capabilities are per
 * thread), for a call that needs it; it must be permitted (on_demand).
 * 0, or a negative errno with nothing changed. mmp_privilege_lower undoes it.
 */
int mmp_privilege_raise(int cap);
void mmp_privilege_lower(int cap);

/*
 * --lift-pipe-limits, at start (before any thread): chooses the capability
 * that lifts the per-user pipe limits, CAP_SYS_RESOURCE, or CAP_SYS_ADMIN
 * (which the kernel accepts too: fs/pipe.c, pipe_is_unprivileged_user)
 * where the process lacks the first, with a warning; 0, or -EPERM with
 * neither. mmp_pipe_cap returns it (-1 before, or when none).
 */
int mmp_pipe_cap_choose(void);
int mmp_pipe_cap(void);
/* The feature that keeps mmp_pipe_cap() after set-up: MMP_FEAT_PIPES or MMP_FEAT_PIPES_ADMIN. */
unsigned int mmp_pipe_cap_feature(void);

#endif
