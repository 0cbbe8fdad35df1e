/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The XDP gate (bpf/xdp_gate.bpf.c): its per-CPU verdict counters, shared
 * with the control plane (user/policy/xdp_gate.c) and `mmproxy-bpf stats`.
 * One list gives the enum, the names and the descriptions.
 */
#ifndef MMP_XDP_H
#define MMP_XDP_H

#define MMP_XDP_COUNTERS_MAP "mmp_xdp_cnt"
#define MMP_XDP_PROG_NAME "mmp_xdp_gate" /* how cleanup finds ours among libxdp's programs */
#define MMP_XDP_PIN_PREFIX "mmp_xdp_gate_" /* + ifname: the pin cleanup reads after a SIGKILL */

#define MMP_XDP_COUNTERS(X) \
	X(passed, "passed", "packets to the listen port from an allowed source (SYN or UDP)") \
	X(dropped_not_allowed, "dropped_not_allowed", "packets to the listen port from a source not in the allowed subnets: dropped") \
	X(passed_other, "passed_other", "packets the gate does not judge: other addresses, ports, protocols, non-SYN, later fragments") \
	X(malformed, "malformed", "packets whose headers end early: passed for the stack to discard")

enum mmp_xdp_counter {
#define MMP_XDP_X_ENUM(id, name, help) MMP_XDP_CNT_##id,
	MMP_XDP_COUNTERS(MMP_XDP_X_ENUM)
#undef MMP_XDP_X_ENUM
	MMP_XDP_CNT_MAX,
};

#endif
