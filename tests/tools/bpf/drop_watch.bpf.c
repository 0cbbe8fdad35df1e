// SPDX-License-Identifier: GPL-2.0
/* Test-only: what the kernel drops in the namespaces under test, by reason,
 * and what TCP's PAWS check drops, by kind (tests/tools/mmpt-drops.c).
 *
 * The counters (TcpExtPAWSEstab) cannot tell a harmless PAWS drop from a
 * harmful one: the carrier's copies of bytes the receiver already holds, and
 * stale window updates, are dropped as well as data the receiver lacks
 * (docs/DESIGN.md §3b). Only the last leaves a hole. At the drop the socket
 * and the segment's sequence range are both at hand, so each PAWS drop is
 * sorted by what it carried against the receiver's rcv_nxt. Every drop is
 * counted by its reason, and apart those that cost data: segments with
 * bytes their receiving socket lacked, which only a retransmission brings.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>

#include "drop_watch.h"

/* Filled before load: the namespaces' inode numbers (stat of /run/netns/NAME). */
const volatile __u32 netns_ino[DROP_WATCH_MAX_NETNS];
const volatile __u32 netns_n;
/*
 * Filled before load: where bpf_prog_test_run_skb's code lies. The proxy
 * reads its sockets' state through BPF_PROG_TEST_RUN (engine/tc/tc_frozen.c),
 * thousands of times a second during hand-offs, and the kernel frees each
 * test packet as a drop. Those are not drops, and are not counted.
 */
const volatile __u64 test_run_lo, test_run_hi;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, PAWS_KINDS);
	__type(key, __u32);
	__type(value, __u64);
} mmpt_paws_drops SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DROP_REASON_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} mmpt_drop_reasons SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, DROP_REASON_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} mmpt_lost_reasons SEC(".maps");

/* The first DROP_WATCH_LOST_DETAIL lost segments (drop_watch.h); lost_n counts them all. */
struct drop_watch_lost lost_detail[DROP_WATCH_LOST_DETAIL];
__u32 lost_n;

static bool watched(__u32 ino)
{
	for (__u32 i = 0; i < DROP_WATCH_MAX_NETNS && i < netns_n; i++)
		if (netns_ino[i] == ino)
			return true;
	return false;
}

/* The namespace a dropped packet belongs to: its receiving socket's, else
 * its device's (drops before a socket is found), else its sending socket's. */
static __u32 drop_netns(struct sk_buff *skb, struct sock *rx_sk)
{
	struct net_device *dev;
	struct sock *sk = rx_sk;

	if (!sk) {
		dev = BPF_CORE_READ(skb, dev);
		if (dev)
			return BPF_CORE_READ(dev, nd_net.net, ns.inum);
		sk = BPF_CORE_READ(skb, sk);
	}
	return sk ? BPF_CORE_READ(sk, __sk_common.skc_net.net, ns.inum) : 0;
}

static void count(void *map, __u32 slot)
{
	__u64 *n = bpf_map_lookup_elem(map, &slot);

	if (n)
		__sync_fetch_and_add(n, 1);
}

/*
 * A TCP socket whose receive state (rcv_nxt) is live: the states in which
 * it takes data. Request and time-wait sockets have no tcp_sock behind them.
 */
static bool tcp_receiver(struct sock *sk)
{
	__u8 state = BPF_CORE_READ(sk, __sk_common.skc_state);

	return BPF_CORE_READ(sk, sk_protocol) == IPPROTO_TCP &&
	       (state == TCP_ESTABLISHED || state == TCP_FIN_WAIT1 || state == TCP_FIN_WAIT2 || state == TCP_CLOSE_WAIT);
}

/* Keeps the socket's state at one of the first lost segments (lost_detail). */
static void note_lost(struct sock *sk, __u32 reason, __u32 seq, __u32 len, __u32 rcv_nxt)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	/* Not atomic (this clang has no fetch-and-add with a result): two drops
	 * at once may share a slot, which costs a detail, not a count. */
	__u32 i = lost_n++;
	struct drop_watch_lost *d;

	if (i >= DROP_WATCH_LOST_DETAIL)
		return;
	d = &lost_detail[i];
	d->reason = reason;
	d->local_port = BPF_CORE_READ(sk, __sk_common.skc_num);
	d->remote_port = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	d->len = len;
	d->seq_off = (__s32)(seq - rcv_nxt);
	d->rmem = BPF_CORE_READ(sk, sk_backlog.rmem_alloc.counter);
	d->rcvbuf = BPF_CORE_READ(sk, sk_rcvbuf);
	d->userlocks = BPF_CORE_READ(sk, sk_userlocks);
	d->rcv_wnd = BPF_CORE_READ(tp, rcv_wnd);
	d->window_clamp = BPF_CORE_READ(tp, window_clamp);
	d->scaling_ratio = BPF_CORE_READ(tp, scaling_ratio);
	d->ofo = BPF_CORE_READ(tp, out_of_order_queue.rb_node) != NULL;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(drop, struct sk_buff *skb, void *location, enum skb_drop_reason reason, struct sock *rx_sk)
{
	__u32 range[2]; /* struct tcp_skb_cb's first two fields: seq, end_seq */
	__u32 slot = reason < DROP_REASON_SUBSYS_SLOT ? reason : DROP_REASON_SUBSYS_SLOT;
	__u32 rcv_nxt, len;
	bool lacked;

	if ((__u64)location >= test_run_lo && (__u64)location < test_run_hi)
		return 0;
	if (!watched(drop_netns(skb, rx_sk)))
		return 0;
	count(&mmpt_drop_reasons, slot);
	if (!rx_sk || !tcp_receiver(rx_sk))
		return 0;
	/* TCP's receive path has filled the control block before it can drop. */
	if (bpf_probe_read_kernel(range, sizeof(range), skb->cb))
		return 0;
	rcv_nxt = BPF_CORE_READ((struct tcp_sock *)rx_sk, rcv_nxt);
	len = range[1] - range[0];
	lacked = (__s32)(range[1] - rcv_nxt) > 0;
	if (reason == SKB_DROP_REASON_TCP_RFC7323_PAWS || reason == SKB_DROP_REASON_TCP_RFC7323_PAWS_ACK)
		count(&mmpt_paws_drops, !len ? PAWS_ACK : lacked ? PAWS_NEW : PAWS_COPY);
	/*
	 * One byte beyond a closed window is a window probe, dropped by design;
	 * a segment the out-of-order queue already holds whole (TCP_OFOMERGE)
	 * is above rcv_nxt but lacks nothing.
	 */
	if (len > 1 && lacked && reason != SKB_DROP_REASON_TCP_OFOMERGE) {
		count(&mmpt_lost_reasons, slot);
		note_lost(rx_sk, reason, range[0], len, rcv_nxt);
	}
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
