/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The XDP gate (bpf/xdp_gate.bpf.c) on the --xdp-iface interfaces, loaded
 * through libxdp: it drops SYNs and UDP datagrams to the listen address from
 * sources outside the pinned allow tries (docs/DESIGN.md §2). One program per
 * interface, all sharing the policy's tries and one counters map, each pinned
 * in the pin directory so `cleanup` can detach it after a SIGKILL.
 */
#ifndef MMP_XDP_GATE_H
#define MMP_XDP_GATE_H

#include "lib/config.h"

#include <stdbool.h>

struct mmp_xdp_gate;

/*
 * Attach the gate to cfg->xdp_ifaces (call after mmp_policy_open filled the
 * tries). *out stays NULL when there is nothing to do (no --xdp-iface, or no
 * -a: then every source is allowed and the gate would only cost cycles).
 * Refuses an interface that already runs another tool's XDP program outside
 * libxdp's dispatcher. Returns 0, or a negative errno after logging.
 */
int mmp_xdp_gate_open(const struct mmp_config *cfg, struct mmp_xdp_gate **out);

/* Detach our programs (only ours: a dispatcher keeps the others), unpin, free. NULL is fine. */
void mmp_xdp_gate_close(struct mmp_xdp_gate *g);
/* True when libxdp's dispatcher holds the gate somewhere: its detach at close needs CAP_SYS_ADMIN. */
bool mmp_xdp_gate_shares_dispatcher(const struct mmp_xdp_gate *g);

/* cleanup: detach every gate pinned under pin_dir by a stopped instance. Returns how many. */
int mmp_xdp_gate_cleanup(const char *pin_dir);

#endif
