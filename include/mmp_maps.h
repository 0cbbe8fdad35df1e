/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map names, keys and values shared by the BPF programs (bpf/) and the
 * control plane (user/). Include after vmlinux.h (BPF) or <linux/types.h>.
 */
#ifndef MMP_MAPS_H
#define MMP_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>

#endif

/* Default bpffs directory that holds every pinned map. */
#define MMP_PIN_DIR_DEFAULT "/sys/fs/bpf/mmproxy-bpf"

/* Allowed load-balancer source subnets (LPM tries). */
#define MMP_ALLOW4_MAP "mmp_allow4"
#define MMP_ALLOW6_MAP "mmp_allow6"
#define MMP_ALLOW_MAX_ENTRIES 65536

struct mmp_allow4_key {
	__u32 prefixlen; /* LPM tries key on prefix length first */
	__u8 addr[4];
};

struct mmp_allow6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/* What bpftool shows for each allowed subnet: where it came from. */
struct mmp_allow_value {
	__u32 line; /* line number in the allowed-subnets file */
};

/*
 * The sockmap engine.
 *   mmp_peers   SOCKHASH, no program: key = a socket's cookie, value = its PEER.
 *               The verdict redirects with one lookup: own cookie -> peer.
 *   mmp_socks   SOCKHASH with the stream verdict attached: key = own cookie.
 *   mmp_flows   HASH: key = the client-side socket's cookie, one entry per flow.
 *   mmp_sockdir HASH: key = either socket's cookie -> its flow and direction,
 *               plus the userspace-owned "forwarded" counter.
 *   mmp_counters PERCPU_ARRAY of global counters.
 *   mmp_wake    ARRAY_OF_MAPS, not pinned: one ring buffer per worker; the
 *               verdict writes a flow's key into its worker's ring when it
 *               starts holding bytes back, so userspace never has to watch
 *               the sockets for data (every redirect would wake it).
 *   mmp_wake_lost ARRAY, not pinned: per worker, notifications that found the
 *               ring full; when it moves, the worker re-checks all its flows.
 */
#define MMP_PEERS_MAP "mmp_peers"
#define MMP_SOCKS_MAP "mmp_socks"
#define MMP_FLOWS_MAP "mmp_flows"
#define MMP_SOCKDIR_MAP "mmp_sockdir"
#define MMP_COUNTERS_MAP "mmp_counters"
#define MMP_SOCKMAP_MAX_FLOWS 65536
#define MMP_MAX_WORKERS 1024 /* --listeners is at most this */
#define MMP_WAKE_RING_BYTES (64 * 1024) /* per worker: 4096 notifications of 16 bytes */

/*
 * Port ranges (docs/DESIGN.md §8): the sk_lookup program steers every port of
 * -l LO-HI to the listener sockets held in this SOCKMAP (key: listener thread).
 * The link is pinned next to it, so `cleanup` detaches it after a SIGKILL.
 */
#define MMP_SK_LISTENERS_MAP "mmp_sk_listeners"
#define MMP_SK_LOOKUP_LINK "mmp_sk_lookup_link"

/*
 * A takeover (docs/DESIGN.md §15): the successor's listener sockets, which
 * its SO_REUSEPORT program picks from (key: port index * listeners + thread).
 */
#define MMP_REUSEPORT_LISTENERS_MAP "mmp_reuseport_listeners"

enum mmp_dir {
	MMP_DIR_UP = 0, /* client -> upstream */
	MMP_DIR_DOWN = 1, /* upstream -> client */
};

/* An address as bpftool shows it: family 2 = IPv4 (first 4 bytes), 10 = IPv6. */
struct mmp_addr {
	__u16 family;
	__u16 port; /* host byte order */
	__u8 addr[16];
};

/* One direction of a flow, written by the verdict program. */
struct mmp_flow_dir {
	__u64 bytes; /* payload bytes seen from the source (header excluded) */
	__u64 redirected; /* bytes the kernel redirected to the peer */
	__u64 passed; /* bytes held back for userspace (over --max-queued) */
	__u64 consumed; /* every byte verdicted, header included */
	__u64 peer_base; /* the peer's bytes-written count at hand-off */
	__u32 skip; /* PROXY header bytes still to drop */
	__u32 paused; /* 1: over budget, SK_PASS until userspace caught up */
	__u32 seq_next; /* TCP sequence number of the next byte not yet verdicted */
	__u32 seq_valid;
	__u64 duplicates; /* bytes handed to the verdict a second time, dropped */
};

struct mmp_flow {
	struct mmp_addr client; /* the real client, from the PROXY header */
	struct mmp_addr lb; /* the load balancer's connection */
	struct mmp_addr upstream;
	__u64 client_cookie;
	__u64 upstream_cookie;
	struct mmp_flow_dir up; /* client -> upstream */
	struct mmp_flow_dir down; /* upstream -> client */
};

struct mmp_sockdir {
	__u64 flow; /* key into mmp_flows */
	__u32 dir; /* enum mmp_dir of bytes read from this socket */
	__u32 worker; /* whose mmp_wake ring hears that this flow holds bytes back */
	__u64 forwarded; /* written by userspace only: held-back bytes it forwarded */
};

/*
 * The sockmap verdict's counters (mmp_cnt): one list gives the enum, the
 * names `stats` and the metrics endpoint print, and their descriptions.
 */
#define MMP_SOCKMAP_COUNTERS(X)                                                               \
	X(REDIRECTED_BYTES, "redirected_bytes", "bytes redirected from one socket to its peer")      \
	X(HELD_BACK_BYTES, "held_back_bytes", "bytes held back over the budget (forwarded later)")     \
	X(HEADER_BYTES_STRIPPED, "header_bytes_stripped", "PROXY header bytes stripped in the kernel")       \
	X(BACKPRESSURE_PAUSES, "backpressure_pauses", "times a direction paused for backpressure")               \
	X(VERDICTS_WITHOUT_FLOW, "verdicts_without_flow", "verdicts for a socket without a flow entry")           \
	X(STRIP_FAILURES, "strip_failures", "redirects or header strips that failed")             \
	X(DUPLICATE_BYTES_DROPPED, "duplicate_bytes_dropped", "bytes the kernel handed to the verdict twice")

enum mmp_counter {
#define MMP_SOCKMAP_X_ENUM(id, name, help) MMP_CNT_##id,
	MMP_SOCKMAP_COUNTERS(MMP_SOCKMAP_X_ENUM)
#undef MMP_SOCKMAP_X_ENUM
	MMP_CNT_MAX,
};


#endif
