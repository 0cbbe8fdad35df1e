/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reply steering for upstreams beyond loopback (docs/DESIGN.md §14): map
 * names, key, value and counters shared by bpf/steer.bpf.c and
 * user/steer/reply_steer.c. Include after vmlinux.h (BPF) or <linux/types.h>.
 *
 *   mmp_reply_steer HASH: the reply's tuple (upstream ip:port -> client
 *                   ip:port, protocol) of each spoofed connection or UDP flow
 *                   the proxy opened, written before connect() and marked
 *                   closed at close; deleted MMP_STEER_LINGER_MS later.
 *   mmp_steer_cnt   PERCPU_ARRAY of __u64, enum mmp_steer_counter.
 *
 * The program at tc ingress of the upstream's interface gives a packet whose
 * tuple is in the map skb->mark = MMP_STEER_MARK; `ip rule fwmark
 * 0x4d4d0000/0xffff0000 lookup TABLE` (setup-routing) and TABLE's `local 0/0
 * dev lo` deliver it to the proxy's transparent socket. Nothing else is
 * touched.
 */
#ifndef MMP_STEER_H
#define MMP_STEER_H

#define MMP_STEER_MAP "mmp_reply_steer"
#define MMP_STEER_COUNTERS_MAP "mmp_steer_cnt"
#define MMP_STEER_PROG "mmp_steer_in"

/* "MMRS": the fwmark of steered replies. */
#define MMP_STEER_MARK 0x4d4d5253U
/*
 * setup-routing's rule matches the whole "MM" /16, not the mark alone: the
 * UDP fast path renumbers a steered reply's mark while its flow's hand-over
 * drains (MMP_UDP_MARK_DRAIN_REV, mmp_udp.h), and that reply must still be
 * delivered to the flow's socket. Bit 15 of MMP_STEER_MARK is clear, so no
 * steered reply reads as a drained one.
 */
#define MMP_STEER_RULE_MARK 0x4d4d0000U
#define MMP_STEER_RULE_MASK 0xffff0000U
#define MMP_STEER_MAX_ENTRIES (1U << 18)

/*
 * How long a closed connection's tuple is still steered: the last ACK of a
 * FIN exchange, a retransmitted FIN, a late reply reach the proxy's socket (or
 * get the kernel's RST from this host) instead of being forwarded toward the
 * client by the host's routes (docs/DESIGN.md §14).
 */
#define MMP_STEER_LINGER_MS 5000

struct mmp_steer_key {
	__u8 family; /* AF_INET (2) or AF_INET6 (10) */
	__u8 proto; /* IPPROTO_TCP or IPPROTO_UDP */
	__be16 up_port; /* the reply's source port */
	__be16 client_port; /* the reply's destination port */
	__u16 pad;
	__u32 up_addr[4]; /* IPv4: [0], the rest 0 */
	__u32 client_addr[4];
};

struct mmp_steer_val {
	__u64 owner; /* the control plane's id of the connection or flow that wrote it */
	__u64 closed_ns; /* 0: live; else CLOCK_MONOTONIC when it closed (still steered until the linger ends) */
};

#define MMP_STEER_COUNTERS(X)                                                                          \
	X(marked, "steer_marked", "replies of the proxy's own upstream connections steered to it")     \
	X(marked_late, "steer_marked_late", "replies of closed connections, steered to this host's stack") \
	X(passed, "steer_passed", "packets looked up that were not the proxy's (left untouched)")        \
	X(icmp_marked, "steer_icmp_marked", "ICMP errors about the proxy's own upstream packets steered to its sockets")

enum mmp_steer_counter {
#define MMP_STEER_X_ENUM(id, name, desc) MMP_STEER_CNT_##id,
	MMP_STEER_COUNTERS(MMP_STEER_X_ENUM)
#undef MMP_STEER_X_ENUM
	MMP_STEER_CNT_MAX,
};

#endif
