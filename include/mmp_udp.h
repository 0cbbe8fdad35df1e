/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UDP mode (-p udp): map names, keys and values shared by bpf/udp.bpf.c and
 * the control plane (user/udp_*.c). Include after vmlinux.h (BPF) or
 * <linux/types.h>.
 *
 *   mmp_udp_flows  HASH: key = the upstream socket's cookie (__u64), value =
 *                  struct mmp_udp_flow. One entry per live flow, written by
 *                  the thread that owns the flow (at creation, then about
 *                  once a second while it is active), deleted when it closes.
 *   mmp_udp_cnt    ARRAY of one struct mmp_udp_counters: the totals of every
 *                  listener thread, rewritten once a second.
 *
 * Both are BTF-defined, so `bpftool map dump pinned DIR/mmp_udp_flows` shows
 * named fields. Map names are cut at 15 characters.
 */
#ifndef MMP_UDP_MAPS_H
#define MMP_UDP_MAPS_H

#include "mmp_maps.h" /* struct mmp_addr */

#define MMP_UDP_FLOWS_MAP "mmp_udp_flows"
#define MMP_UDP_COUNTERS_MAP "mmp_udp_cnt"

/*
 * The in-kernel fast path, for flows userspace has opened whose load
 * balancer, listen address, client and upstream are all IPv4 or all IPv6
 * (a flow that mixes families stays in userspace, which translates it):
 *   mmp_udp_fwd  HASH: the LB's datagrams, by their 4-tuple at ingress (on lo
 *                or the LB's interface): strip the header, become client ->
 *                upstream, continue (LB on this host) or go into lo ingress.
 *   mmp_udp_rev  HASH: the upstream's replies, by their 4-tuple at lo ingress:
 *                become listen address -> LB (SPP: with the client's 38-byte
 *                header inserted before the payload), continue on lo or go
 *                out of the LB's interface (bpf_redirect_neigh). SPP replies
 *                move in the kernel only for a load balancer on this host:
 *                reply() in bpf/udp.bpf.c says why a remote one's stay in
 *                userspace.
 *   mmp_udp_kcnt PERCPU_ARRAY of __u64, enum mmp_udp_kcounter.
 *   mmp_udp_drain HASH: cookie -> how many DRAIN-marked datagrams userspace
 *                has sent, per direction (written by userspace only).
 * Anything the programs do not handle (no entry, another client in the
 * header, fragments, GSO, IP options or IPv6 extension headers, too big for
 * the LB's MTU) goes on to the flow's socket and userspace, unchanged.
 *
 * Addresses in keys and values are 16 bytes: IPv6, or IPv4-mapped
 * (::ffff:a.b.c.d) for IPv4, the form an SPP header carries them in.
 *
 * Hand-over without reordering: an entry starts in DRAIN mode. The program
 * passes the flow's datagrams on to userspace, numbering them (passed) and
 * marking each with its number (MMP_UDP_MARK_DRAIN_SEQ); userspace sends
 * them and publishes the number of the last one it has sent in
 * mmp_udp_drain. The first datagram that finds that number equal to passed
 * (>= 1) switches the entry to ACTIVE and is the kernel's: every earlier one
 * has left through userspace by then, even one that was between the hook
 * and the socket (on another CPU) when the entry was written, since it was
 * ahead of the first marked one. A number, not a count: a marked datagram
 * the socket dropped (its buffer full) does not hold the switch back.
 *
 * Under a sustained load userspace may never catch up (each datagram is
 * passed before the last one is sent), so the switch would never come:
 * once MMP_UDP_DRAIN_BEHIND passed datagrams are not yet sent, the program
 * drops the flow's datagrams instead (counted, MMP_UDP_KCNT_HELD), all but
 * one in MMP_UDP_DRAIN_PROBE, until userspace has caught up. That is loss
 * where the socket's queue was already full of the flow's datagrams, never
 * reordering, and never at a rate userspace keeps up with.
 */
#define MMP_UDP_FWD_MAP "mmp_udp_fwd"
#define MMP_UDP_REV_MAP "mmp_udp_rev"
#define MMP_UDP_KCNT_MAP "mmp_udp_kcnt"
#define MMP_UDP_DRAIN_MAP "mmp_udp_drain"

/*
 * skb->mark of datagrams the program passes to userspace (seen with
 * SO_RCVMARK) while an entry drains: the datagram's number in the low 15
 * bits. A reply's mark lies in the /16 that setup-routing's fwmark rule
 * routes locally (MMP_STEER_RULE_MARK, mmp_steer.h): from an upstream beyond
 * loopback, the mark is what brings it to the flow's socket.
 */
#define MMP_UDP_MARK_DRAIN_FWD 0x4d568000
#define MMP_UDP_MARK_DRAIN_REV 0x4d4d8000
#define MMP_UDP_MARK_DRAIN_MASK 0xFFFF8000
#define MMP_UDP_DRAIN_SEQ_MASK 0x7FFF /* numbers compare modulo 2^15 */
#define MMP_UDP_MARK_DRAIN_SEQ(mark) ((mark) & MMP_UDP_DRAIN_SEQ_MASK)
#define MMP_UDP_MARK_STALE 0x4d55d0a2 /* the entry went stale: userspace re-arms it */

#define MMP_UDP_DRAIN_BEHIND 1024 /* passed datagrams not yet sent, at most (well under 2^15) */
#define MMP_UDP_DRAIN_PROBE 64 /* while held back, one datagram in this many is still passed */

#define MMP_UDP_SPP_LEN 38
/* The part of an SPP header after the client address: proxy address, client port, proxy port. */
#define MMP_UDP_SPP_TAIL_OFF 18
#define MMP_UDP_SPP_TAIL_LEN 20

enum mmp_udp_mode {
	MMP_UDP_MODE_DRAIN = 0,
	MMP_UDP_MODE_ACTIVE = 1,
};

struct mmp_udp_drain {
	__u64 fwd; /* the number (16 bits) of the last DRAIN-marked datagram from the LB userspace has sent on */
	__u64 rev; /* the same for replies */
};

/*
 * All in network byte order, as on the wire. SPP flows are keyed by their
 * client too (an SPP load balancer may send many clients from one ip:port);
 * PROXY v2 flows have client_addr/client_port 0 (one client per LB ip:port,
 * and a datagram after the first may carry no header to name it).
 */
struct mmp_udp_fkey {
	__be32 lb_addr[4];
	__be32 local_addr[4];
	__be32 client_addr[4];
	__be16 lb_port;
	__be16 local_port;
	__be16 client_port;
	__u16 pad;
};

struct mmp_udp_fval {
	__u64 cookie; /* the flow's key in mmp_udp_flows */
	__be32 client_addr[4];
	__be32 up_addr[4];
	__be16 client_port;
	__be16 up_port;
	/*
	 * lo when the LB is remote (into lo ingress); 0: continue. With
	 * redirect_out, the upstream's interface, beyond loopback (§14).
	 */
	__u32 redirect_ifindex;
	__u8 format; /* MMP_UDP_FMT_V2 or MMP_UDP_FMT_SPP */
	__u8 header_required; /* --udp-header every/spp: a datagram without one goes to userspace */
	/*
	 * Set by the program when a header other than the flow's own comes in
	 * (PROXY v2: the LB reused the ip:port, or changed the header's form;
	 * SPP: the proxy address or port changed, which the replies must echo):
	 * everything goes to userspace until it has looked and re-armed the entry.
	 */
	__u8 stale;
	__u8 mode; /* enum mmp_udp_mode: set to ACTIVE by the program */
	/* SPP: the header's bytes from MMP_UDP_SPP_TAIL_OFF on, as userspace last saw them. */
	__u8 spp_tail[MMP_UDP_SPP_TAIL_LEN];
	/*
	 * The interface the LB's datagrams arrive on (lo, or the remote LB's):
	 * the same 4-tuple on any other is not the flow's (mmp_udp_ingress).
	 */
	__u32 in_ifindex;
	/*
	 * An upstream beyond loopback: out of redirect_ifindex by
	 * bpf_redirect_neigh, for IP packets of at most max_len (its MTU:
	 * a redirect does not fragment); longer ones go to userspace.
	 */
	__u32 max_len;
	__u8 redirect_out;
	__u8 pad[7];
	__u64 held; /* DRAIN: dropped while userspace caught up */
	__u64 passed; /* DRAIN: datagrams passed on (marked) so far */
	__u64 pkts; /* forwarded in the kernel */
	__u64 bytes; /* their payload bytes */
	/*
	 * bpf_ktime_get_coarse_ns() of the last one: CLOCK_MONOTONIC as of the
	 * last tick (at most a few ms behind), which is plenty for idle
	 * timeouts in seconds and costs no clock read per datagram (a TSC read
	 * was 1% of the CPU in the UDP stream benchmark in a VM).
	 */
	__u64 last_ns;
};

struct mmp_udp_rkey {
	__be32 up_addr[4];
	__be32 client_addr[4];
	__be16 up_port;
	__be16 client_port;
};

struct mmp_udp_rval {
	__u64 cookie;
	__be32 lb_addr[4];
	__be32 local_addr[4];
	__be16 lb_port;
	__be16 local_port;
	__u32 redirect_ifindex; /* the LB's interface (bpf_redirect_neigh); 0: the LB is on this host */
	__u32 max_len; /* IP packets longer than the LB's path MTU go to userspace (it fragments) */
	__u32 in_ifindex; /* where the upstream's replies arrive: lo, or its interface beyond loopback (§14) */
	__u8 mode; /* enum mmp_udp_mode: set to ACTIVE by the program */
	__u8 format; /* MMP_UDP_FMT_V2: as is; MMP_UDP_FMT_SPP: spp_hdr goes in front of the payload */
	__u8 pad[2];
	__u8 spp_hdr[MMP_UDP_SPP_LEN]; /* exactly what userspace would send: the client's latest header */
	__u8 pad2[6];
	__u64 held; /* DRAIN: dropped while userspace caught up */
	__u64 passed; /* DRAIN: replies passed on (marked) so far */
	__u64 pkts;
	__u64 bytes;
	__u64 last_ns; /* as mmp_udp_fval's */
};

enum mmp_udp_kcounter {
	MMP_UDP_KCNT_FWD, /* datagrams forwarded to an upstream in the kernel */
	MMP_UDP_KCNT_REV, /* replies sent to a load balancer in the kernel */
	MMP_UDP_KCNT_PASS_HEADER, /* header absent where required, for another client, or not the plain form */
	MMP_UDP_KCNT_PASS_BIG, /* reply over the LB's MTU */
	MMP_UDP_KCNT_DRAINED, /* passed on to userspace while an entry drained */
	MMP_UDP_KCNT_ERRORS, /* a helper failed: packet dropped */
	MMP_UDP_KCNT_HELD, /* dropped while userspace caught up with a hand-over (MMP_UDP_DRAIN_BEHIND) */
	MMP_UDP_KCNT_WRONG_IFINDEX, /* a flow's 4-tuple on an interface other than its in_ifindex: left untouched */
	MMP_UDP_KCNT_PASS_PARTIAL, /* a partial checksum bound out of another interface: userspace sends it */
	MMP_UDP_KCNT_MAX,
};

/* How a flow's datagrams are framed (and so its replies). */
enum mmp_udp_format {
	MMP_UDP_FMT_V2 = 1, /* PROXY v2 DGRAM: replies carry no header */
	MMP_UDP_FMT_SPP = 2, /* Cloudflare SPP: replies carry the client's 38-byte header */
	MMP_UDP_FMT_LOCAL = 3, /* PROXY v2 LOCAL: forwarded from our own address */
};

struct mmp_udp_flow {
	struct mmp_addr client; /* the real client, from the header (the upstream sees this) */
	struct mmp_addr lb; /* the load balancer's ip:port: datagrams come from it, replies go to it */
	struct mmp_addr local; /* our address the load balancer sent to */
	struct mmp_addr upstream; /* -4 or -6 */
	__u64 pkts_up; /* datagrams forwarded to the upstream */
	__u64 bytes_up; /* their payload bytes (headers excluded) */
	__u64 pkts_down; /* replies sent back to the load balancer */
	__u64 bytes_down; /* their payload bytes (SPP header excluded) */
	__u64 created_ns; /* CLOCK_MONOTONIC, as bpf_ktime_get_ns() */
	__u64 last_seen_ns; /* last datagram either way, CLOCK_MONOTONIC */
	__u32 format; /* enum mmp_udp_format */
	__u32 thread; /* listener thread that owns the flow */
	__u32 kernel; /* fast path: 1 = the LB's datagrams, 2 = the replies move in the kernel */
	__u32 pad;
};

/*
 * Counters: name and meaning, in one list so that the BTF struct (named
 * fields for bpftool), the exit log line and `mmproxy-bpf stats` agree.
 * Every drop_* counter is a class of datagram that was dropped; each is also
 * logged (rate-limited) at -v 1.
 */
#define MMP_UDP_COUNTERS(X)                                                                         \
	X(rx_dgrams, "rx_dgrams", "datagrams received from load balancers")                                      \
	X(rx_bytes, "rx_bytes", "bytes received from load balancers, headers included")                          \
	X(fwd_dgrams, "fwd_dgrams", "datagrams forwarded to upstreams")                                           \
	X(fwd_bytes, "fwd_bytes", "payload bytes forwarded to upstreams")                                        \
	X(reply_dgrams, "reply_dgrams", "replies received from upstreams")                                          \
	X(reply_bytes, "reply_bytes", "payload bytes of replies received from upstreams")                          \
	X(sent_dgrams, "sent_dgrams", "replies sent to load balancers")                                            \
	X(sent_bytes, "sent_bytes", "bytes of replies sent to load balancers, headers included")                  \
	X(flows_created, "flows_created", "flows opened")                                                            \
	X(flows_idle, "flows_idle", "flows closed after --close-after seconds idle")                              \
	X(flows_replaced, "flows_replaced", "flows closed because their load-balancer ip:port now carries another client") \
	X(flows_moved, "flows_moved", "flows whose client arrived from a new load-balancer ip:port")               \
	X(flows_evicted, "flows_evicted", "flows closed because another listener thread took their client")          \
	X(flows_active, "flows_active", "flows open now")                                                           \
	X(flows_fast, "flows_fast", "flows open now whose datagrams the kernel moves (fast path)")                \
	X(fast_fwd_dgrams, "fast_fwd_dgrams", "datagrams forwarded to upstreams in the kernel (not in fwd_dgrams)")    \
	X(fast_reply_dgrams, "fast_reply_dgrams", "replies sent to load balancers in the kernel (not in sent_dgrams)")   \
	X(fast_passed, "fast_passed", "datagrams the fast path left to userspace (header for another client...)")  \
	X(fast_errors, "fast_errors", "datagrams the fast path dropped: a helper failed")                          \
	X(fast_held, "fast_held", "datagrams dropped in a hand-over to the kernel that userspace could not keep up with") \
	X(fast_wrong_ifindex, "fast_wrong_ifindex", "datagrams with a fast flow's addresses on another interface: left untouched (spoofed?)") \
	X(drop_not_allowed, "drop_not_allowed", "dropped: load balancer not in the allowed subnets")                    \
	X(drop_truncated, "drop_truncated", "dropped: header cut short")                                             \
	X(drop_bad_header, "drop_bad_header", "dropped: invalid header (signature, version, command, TLVs, CRC32C)")   \
	X(drop_wrong_family, "drop_wrong_family", "dropped: header address family is not IPv4 or IPv6")                 \
	X(drop_wrong_transport, "drop_wrong_transport", "dropped: header transport is not DGRAM")                           \
	X(drop_bad_length, "drop_bad_length", "dropped: header length does not fit the datagram or the address block") \
	X(drop_bad_client, "drop_bad_client", "dropped: client address unusable (port 0, unspecified, multicast)")     \
	X(drop_client_policy, "drop_client_policy", "dropped: header names a loopback client from a remote LB, or the upstream itself") \
	X(drop_move_refused, "drop_move_refused", "dropped: header moves a client's replies to another LB address outside -a") \
	X(drop_no_header, "drop_no_header", "dropped: no header where --udp-header requires one")                     \
	X(drop_no_flow, "drop_no_flow", "dropped: no header and no flow for that load-balancer ip:port")            \
	X(drop_too_big, "drop_too_big", "dropped: datagram larger than the receive buffer")                         \
	X(drop_flow_limit, "drop_flow_limit", "dropped: flow limit reached (open-files limit)")                        \
	X(drop_lb_quota, "drop_lb_quota", "dropped: the load balancer has --udp-max-flows-per-lb flows open")         \
	X(drop_upstream_socket, "drop_upstream_socket", "dropped: the upstream socket could not be opened or bound")        \
	X(drop_fwd_send, "drop_fwd_send", "dropped: sending to the upstream failed")                                 \
	X(drop_reply_send, "drop_reply_send", "dropped: sending a reply to the load balancer failed")                  \
	X(upstream_errors, "upstream_errors", "ICMP errors from upstreams (e.g. port unreachable)")                    \
	X(drop_endpoint, "drop_endpoint", "dropped: the header names no endpoint of --allowed-endpoints")             \
	X(flows_steered, "flows_steered", "flows to an upstream beyond loopback: replies steered by tuple (docs/DESIGN.md §14)") \
	X(drop_steer, "drop_steer", "dropped: the reply tuple could not be recorded for steering (map full, tuple in use)")

struct mmp_udp_counters {
#define MMP_UDP_X_FIELD(id, name, help) __u64 id;
	MMP_UDP_COUNTERS(MMP_UDP_X_FIELD)
#undef MMP_UDP_X_FIELD
};

enum mmp_udp_counter {
#define MMP_UDP_X_ENUM(id, name, help) MMP_UDP_CNT_##id,
	MMP_UDP_COUNTERS(MMP_UDP_X_ENUM)
#undef MMP_UDP_X_ENUM
	MMP_UDP_CNT_MAX,
};

#endif
