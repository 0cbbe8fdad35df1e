/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tc engine: packet-level splicing by sequence translation. After the
 * hand-off the proxy's two sockets are frozen (TCP_REPAIR) and closed
 * silently; TC programs rewrite every packet of the load balancer's
 * connection (conn1) into the upstream connection (conn2) and back.
 *
 *   mmp_tc_tuples   HASH: a packet's 4-tuple -> its flow and role
 *   mmp_tc_flows    HASH: flow id -> mode (HOLD / SPLICE), both directions'
 *                   translation, and the stats (packets, bytes, FIN/RST, last
 *                   seen); written whole by userspace up to the switch, then
 *                   only the stats, by the programs
 *   mmp_tc_carry    HASH: flow id -> the bytes a hand-off carried across
 *                   (struct mmp_tc_carry), while a receiver has not acked them
 *   mmp_tc_counters PERCPU_ARRAY: global counters
 *
 * Names: L = load balancer, P = the proxy's listen address (conn1 = L<->P),
 * C = the client as spoofed by the proxy, U = the upstream (conn2 = C<->U).
 */
#ifndef MMP_TC_H
#define MMP_TC_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define MMP_TC_TUPLES_MAP "mmp_tc_tuples"
#define MMP_TC_FLOWS_MAP "mmp_tc_flows"
/* Pinned by versions before the stats moved into mmp_tc_flows: unpinned at exit, never created. */
#define MMP_TC_LEGACY_STATS_MAP "mmp_tc_stats"
#define MMP_TC_COUNTERS_MAP "mmp_tc_counters"
#define MMP_TC_CARRY_MAP "mmp_tc_carry"
#define MMP_TC_MAX_FLOWS_DEFAULT 65536

/* A TCP 4-tuple as seen on the wire; IPv4 addresses use the first 4 bytes. */
struct mmp_tc_tuple {
	__u8 family; /* 4 or 6 */
	__u8 pad[3];
	__be16 sport;
	__be16 dport;
	__u8 saddr[16];
	__u8 daddr[16];
};

enum mmp_tc_role {
	MMP_TC_ROLE_UP = 0, /* L->P: the LB's packets, become C->U */
	MMP_TC_ROLE_DOWN = 1, /* U->C: the upstream's packets, become P->L */
	MMP_TC_ROLE_HOLD_CONN1 = 2, /* P->L: the proxy's own conn1 segments (window forced to 0 in HOLD) */
	MMP_TC_ROLE_HOLD_CONN2 = 3, /* C->U: the proxy's own conn2 segments */
};

/*
 * A HOLD tuple's socket is frozen and not closed yet. From the SPLICE write
 * until the switch closes it, what it sends is stale: a delayed ACK or a
 * loss probe with the window it advertised before the hold (128,000 bytes
 * under the bound). Passed, it let a peer send that much beyond the bytes
 * still being carried to the far receiver, which dropped them, and the
 * peer waited for its RTO (t20: 1 in about 50 cases). The programs drop it;
 * the switch clears the flag once the socket is closed, before the carried
 * segments and window updates go out on the tuple (docs/DESIGN.md §3b).
 * Written as 0 by builds before it (the field was padding): nothing dropped.
 */
#define MMP_TC_TUPLE_SOCKET_OPEN 1u

struct mmp_tc_tuple_val {
	__u64 flow;
	__u32 role;  /* enum mmp_tc_role */
	__u32 flags; /* MMP_TC_TUPLE_* */
};

enum mmp_tc_mode {
	MMP_TC_MODE_HOLD = 1, /* quiescing: the proxy's sockets advertise a zero window */
	/*
	 * The microseconds between freezing the sockets (TCP_REPAIR) and the
	 * switch: peer segments are dropped, so nothing lands in a socket whose
	 * state was already read. The peer retransmits them after the switch.
	 */
	MMP_TC_MODE_FREEZE = 2,
	MMP_TC_MODE_SPLICE = 3, /* translating */
};

/* How packets of one direction are rewritten. */
struct mmp_tc_dir {
	struct mmp_tc_tuple out; /* the new addresses and ports */
	__u32 seq_delta; /* added to seq */
	__u32 ack_delta; /* added to ack and SACK edges */
	__u32 ts_base; /* the lowest translated TSval (PAWS-safe); a TSecr below the other direction's echoes a frozen socket */
	__u8 wscale_in; /* the sender's window shift */
	__u8 wscale_out; /* the shift the receiver applies */
	__u8 timestamps; /* both connections use TCP timestamps */
	__u8 sack;
	__u32 redirect_ifindex; /* 0: continue on this path (both connections over lo) */
	__u32 redirect_ingress; /* 1: into ifindex's ingress (lo); 0: out via the neighbour */
	/*
	 * Added to TSval. Set by userspace at the switch from the frozen
	 * socket's ts_recent (the sender's last TSval that its kernel accepted),
	 * so that translated TSvals start at ts_base: no packet chooses it.
	 */
	__u32 tsval_delta;
	/* The interface this direction's packets arrive on; on any other they are not the flow's. */
	__u32 in_ifindex;
};

/*
 * Written by the TC programs in SPLICE only, in place; userspace sets the
 * initial state at the switch (and last_seen_ns at HOLD: the age of a
 * hand-off a dead instance left).
 * snd_nxt/rcv_wnd judge RSTs and FINs as the receiver's kernel would (RFC
 * 5961; docs/DESIGN.md §3c): in the sender's own space.
 */
struct mmp_tc_stats {
	__u64 packets[2]; /* [0] up, [1] down */
	__u64 bytes[2];
	__u64 last_seen_ns; /* CLOCK_MONOTONIC_COARSE (bpf_ktime_get_coarse_ns: a tick behind at most, far cheaper) */
	__u32 snd_nxt[2]; /* the next seq expected from L (up) / U (down): highest acceptable seq+len */
	__u32 rcv_wnd[2]; /* bytes the receiver of each direction last advertised (U for up, L for down) */
	__u8 fin[2]; /* an acceptable FIN seen from L (up) / from U (down) */
	__u8 rst; /* an RST at exactly snd_nxt: the flow ended */
	/*
	 * The last acceptable segment from L (up) / from U (down) acked every
	 * byte counted of the other direction; cleared when the other sends
	 * more. A window probe whose ack is then new is moved (bpf/tc.bpf.c,
	 * probe_ack_deliver). In the padding: an older instance's flows read 0.
	 */
	__u8 acked_all[2];
	__u8 pad[3];
};

/* Both sides sent a FIN, or one reset: nothing but stray segments can follow. */
static inline int mmp_tc_flow_ended(const struct mmp_tc_stats *st)
{
	return st->rst || (st->fin[0] && st->fin[1]);
}

/*
 * One entry per flow, keyed by conn1's socket cookie. Userspace replaces it
 * whole at each change of mode (the map has no prealloc, so every CPU sees
 * the old entry or the new one); from SPLICE on only the TC programs write
 * it, and only its stats: the per-segment state lives here so that a
 * translated segment needs one lookup after its tuple's (docs/DESIGN.md §3b).
 */
struct mmp_tc_flow {
	__u32 mode; /* enum mmp_tc_mode */
	/*
	 * MMP_TC_CARRY_UP / _DOWN: that direction's carried bytes are not all
	 * acked yet, so the acks for them are clamped (mmp_tc_carry). Set by
	 * userspace at the switch, cleared by the programs.
	 */
	__u32 carrying;
	struct mmp_tc_dir up; /* L->P becomes C->U */
	struct mmp_tc_dir down; /* U->C becomes P->L */
	struct mmp_tc_stats st;
};

/*
 * Carrying queued bytes across (docs/DESIGN.md §3b, "The hand-off carries
 * what is queued"). At the switch the proxy's sockets still held bytes: the
 * send queue toward a peer, the splice pipe, the receive queue from the other
 * peer. Userspace sends them from a raw socket ([k] 0: to the upstream,
 * 1: to the load balancer) and the new peer's segments are translated to
 * land after them. Until the receiver acks `end` (in its own sequence
 * space, i.e. the ack field of its segments as they arrive), the ack the
 * other peer sees is raised to what it was already acked, its window is 0,
 * and a raised pure ACK, which opens no window, is dropped (it would read as
 * a duplicate ACK).
 */
#define MMP_TC_CARRY_UP 1u /* [0]: bytes to the upstream, acked by its segments (role DOWN) */
#define MMP_TC_CARRY_DOWN 2u /* [1]: bytes to the load balancer, acked by its segments (role UP) */

/* SACK blocks a carry keeps per receiver: with timestamps, a segment has room for 3. */
#define MMP_TC_CARRY_SACK_BLOCKS 3

struct mmp_tc_carry {
	__u32 end[2]; /* the receiver's ack that covers every carried byte */
	/* Written by the programs: what userspace's sender paces and retransmits by. */
	__u32 acked[2]; /* the receiver's highest ack seen */
	__u32 edge[2]; /* its highest ack + window: the sender may send below it */
	__u32 seen[2]; /* the receiver's segments: one that answers with a closed window is alive */
	/*
	 * The carried segments' TSval. A pure ACK of the other peer's sent
	 * to this receiver meanwhile goes at the receiver's own ack (a seq
	 * beyond its window would be dropped, and the ack in it lost) with
	 * this TSval: in sequence, it sets the receiver's ts_recent, and the
	 * carried segments after it must still pass PAWS. Raised by the
	 * programs to the receiver's TSecr (its ts_recent) when that is
	 * higher: a segment with a newer clock landed in sequence there (a
	 * frozen socket's late retransmission, say), and every carried
	 * segment below it would be dropped by PAWS, for good.
	 */
	__u32 tsval[2];
	/*
	 * The ack and window (the receiver's scale) the other peer's last
	 * translated segment gave the receiver: the carried segments carry
	 * them too. With the ack they had at the switch, once the receiver
	 * sent more than its max_window since, it would drop them whole as
	 * too old (SKB_DROP_REASON_TCP_TOO_OLD_ACK).
	 */
	__u32 fwd_ack[2];
	__u32 fwd_win[2];
	/*
	 * The SACK blocks of the receiver's last segment (left and right
	 * edges, in its ack's space; sack_n of them, 0 when it had none): bytes
	 * it holds beyond a hole. The carrier sends none of them again: a copy
	 * that lands once the hole is filled and a translated segment raised
	 * the receiver's ts_recent is dropped by PAWS (docs/DESIGN.md §3b,
	 * "Sending them").
	 */
	__u32 sack_n[2];
	__u32 sack[2][MMP_TC_CARRY_SACK_BLOCKS * 2];
	/*
	 * Set by the programs when an RST ended the flow: its carrier stops.
	 * An RST toward a receiver that still takes carried bytes goes at that
	 * receiver's own ack (acked), not after the carry: the peer that sent
	 * it saw acks raised to the carry's end (carry_clamp), and at that seq
	 * the receiver would drop it, stay open, and answer every resend for
	 * ever (1,000 tcpkali streams: 179 carriers still resending 10 minutes
	 * after tcpkali exited).
	 */
	__u32 reset;
};

/*
 * mmp_tc_ports (the TC object's .bss): one bit per port, set for the proxy's
 * listen ports and the upstreams' ports before a tuple with them is
 * inserted, never cleared. Every tuple in mmp_tc_tuples has one of them, on
 * the side its role names (mmp_tc_service_port), so a packet with neither
 * port marked is no flow's and skips the tuple lookup (docs/DESIGN.md §3b).
 * Indexed by the port as on the wire, network byte order, on both sides.
 */
#define MMP_TC_PORT_WORDS (65536 / 64)

static inline __u16 mmp_tc_service_port(const struct mmp_tc_tuple *t, __u32 role)
{
	/* UP L->P and HOLD_CONN2 C->U go to the service; DOWN U->C and HOLD_CONN1 P->L come from it. */
	return role == MMP_TC_ROLE_UP || role == MMP_TC_ROLE_HOLD_CONN2 ? t->dport : t->sport;
}

/*
 * mmp_tc_sock_probe's input and output (BPF_PROG_TEST_RUN, after a 14-byte
 * Ethernet header): the connected socket that receives tuple (src = its
 * peer), read in place: its sequence state, windows and the last TSval its
 * kernel accepted from that peer. No repair mode is needed to read it, and
 * none is used: reading the send queue's seq in repair mode arms the kernel
 * to mark data "sent" without sending it (docs/DESIGN.md §3b, "Reading a
 * socket's state").
 */
struct mmp_tc_sock_query {
	struct mmp_tc_tuple tuple;
	__u32 found;
	__u32 ts_recent;
	__u32 rcv_nxt, snd_una, snd_nxt, write_seq;
	/* As TCP_REPAIR_WINDOW returns them. */
	__u32 snd_wl1, snd_wnd, max_window, rcv_wnd, rcv_wup;
	/* 1: bytes wait out of order behind a hole, and its peer counts them received (SACK). */
	__u32 ofo;
};

/* The TC programs' counters (mmp_tc_counters): enum, names and descriptions in one list. */
#define MMP_TC_COUNTERS(X)                                                                          \
	X(TRANSLATED, "packets_translated", "packets rewritten from one connection into the other")      \
	X(HELD, "zero_window_segments", "proxy segments whose window was forced to 0 (hand-off hold)")  \
	X(REDIRECT_FAILED, "rewrite_failures", "packets whose rewrite or redirect failed")               \
	X(NOT_TCP_OR_FRAGMENT, "ipv4_fragments_passed", "IPv4 fragments passed untouched")               \
	X(FREEZE_DROPS, "freeze_drops", "peer segments dropped while the sockets froze")                 \
	X(FROZEN_ACKS_DROPPED, "frozen_socket_acks_dropped", "pure ACKs the frozen sockets sent, and anything before they closed: dropped, the switch re-sends them") \
	X(TUPLE_REUSED, "tuples_reused_by_syn", "SYNs that reused an ended flow's tuple")                \
	X(ICMP_TRANSLATED, "icmp_errors_translated", "ICMP errors about conn1 segments turned into the upstream's") \
	X(RST_DROPPED, "rsts_out_of_window_dropped", "RSTs outside the receiver's window: dropped")       \
	X(RST_CHALLENGED, "rsts_in_window_passed", "in-window RSTs not at snd_nxt: passed, the endpoint challenges them") \
	X(SYN_CHALLENGED, "syns_on_live_flows_passed", "SYNs on a live flow: passed, the endpoint challenges them") \
	X(WRONG_IFACE, "packets_on_another_interface", "a flow's tuple on another interface: not translated") \
	X(BAD_IP_HEADER, "bad_ip_headers_passed", "IP headers with another version than their ethertype's, or an IPv4 IHL under 5: passed untouched") \
	X(CARRY_ACKS_CLAMPED, "carry_acks_clamped", "ACKs raised while a hand-off's carried bytes were unacked") \
	X(CARRY_ACKS_DROPPED, "carry_acks_dropped", "raised pure ACKs that opened no window: dropped (they would read as duplicate ACKs)") \
	X(CARRY_TSVAL_RAISED, "carry_tsvals_raised", "carried segments' TSval raised to a receiver's newer ts_recent (PAWS would drop them)") \
	X(CARRY_ACKS_REFRESHED, "carry_acks_refreshed", "carried segments whose ack was raised to the newest on their way out (too old, they would be dropped)") \
	X(SND_NXT_RAISED_BY_ACK, "snd_nxt_raised_by_ack", "acceptable segments that acked bytes of the other direction not counted yet, which brought its snd_nxt up to them") \
	X(PROBE_ACKS_DELIVERED, "probe_acks_delivered", "window probes that acked new bytes: sent at their receiver's next seq, where it takes the ACK")

enum mmp_tc_counter {
#define MMP_TC_X_ENUM(id, name, help) MMP_TC_CNT_##id,
	MMP_TC_COUNTERS(MMP_TC_X_ENUM)
#undef MMP_TC_X_ENUM
	MMP_TC_CNT_MAX,
};

#endif
