// SPDX-License-Identifier: GPL-2.0
/*
 * The sockmap engine's data plane: an sk_skb stream verdict on mmp_socks that
 * redirects every skb of a proxied connection to its peer socket's egress.
 *
 * Per skb, in order:
 *  1. Strip what is left of the PROXY header (userspace only peeked at it:
 *     the kernel hands whole skbs to the verdict even when part was read).
 *  2. Bound the bytes queued toward the peer (the redirect path has no
 *     backpressure): above max_queued, return SK_PASS so the bytes land in
 *     the source's own receive queue, which TCP accounts, closing the window.
 *     Userspace forwards them and the redirect resumes once it has caught up,
 *     which keeps the byte order.
 *  3. Redirect to the peer: one lookup, own cookie -> peer in mmp_peers.
 *
 * Userspace does not watch the sockets for data: every redirect would wake it
 * (the psock calls the socket's own data_ready after each verdict). When the
 * verdict starts holding bytes back it writes the flow's key into the
 * owning worker's ring in mmp_wake instead.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mmp_maps.h"
#include "skb_kern.h"

#define SK_DROP 0
#define SK_PASS 1

/* Set by userspace between open and load (--max-queued). */
const volatile __u64 max_queued = 4 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 2 * MMP_SOCKMAP_MAX_FLOWS);
	__type(key, __u64);
	__type(value, __u64);
} mmp_peers SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SOCKHASH);
	__uint(max_entries, 2 * MMP_SOCKMAP_MAX_FLOWS);
	__type(key, __u64);
	__type(value, __u64);
} mmp_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, MMP_SOCKMAP_MAX_FLOWS);
	__type(key, __u64);
	__type(value, struct mmp_flow);
} mmp_flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 2 * MMP_SOCKMAP_MAX_FLOWS);
	__type(key, __u64);
	__type(value, struct mmp_sockdir);
} mmp_sockdir SEC(".maps");

struct wake_ring {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, MMP_WAKE_RING_BYTES);
};

/* Userspace puts one ring per worker at index = worker id. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, MMP_MAX_WORKERS);
	__type(key, __u32);
	__array(values, struct wake_ring);
} mmp_wake SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, MMP_MAX_WORKERS);
	__type(key, __u32);
	__type(value, __u64);
} mmp_wake_lost SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, MMP_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} mmp_counters SEC(".maps");

static __always_inline void count(__u32 idx, __u64 n)
{
	__u64 *v = bpf_map_lookup_elem(&mmp_counters, &idx);

	if (v)
		*v += n;
}

/*
 * Tell the flow's worker that it holds bytes back. A full ring loses the
 * notification: count it first, then try once more. Either that second record
 * gets through, or the ring is still full and so holds records the worker has
 * yet to read; after reading them it sees the count move and re-checks every
 * flow it owns. (The atomic add orders the count before the second attempt.)
 */
static __always_inline void wake_worker(struct mmp_sockdir *sd)
{
	__u32 worker = sd->worker;
	void *ring = bpf_map_lookup_elem(&mmp_wake, &worker);
	__u64 *lost;

	if (ring && !bpf_ringbuf_output(ring, &sd->flow, sizeof(sd->flow), 0))
		return;
	lost = bpf_map_lookup_elem(&mmp_wake_lost, &worker);
	if (lost)
		__sync_fetch_and_add(lost, 1);
	if (ring)
		bpf_ringbuf_output(ring, &sd->flow, sizeof(sd->flow), 0);
}

/*
 * Remove n bytes from the front of skb. The kernel's sk_skb_adjust_room()
 * refuses more than 0xfff bytes at a time (-EFAULT), so strip in steps: a
 * retransmission can overlap what was seen by tens of KiB, and a v2 header
 * with TLVs can be up to 64 KiB. Each step pulls into the linear part, so it
 * can still fail under memory pressure. Returns 0 or -1.
 */
#define STRIP_STEP 0xfff
#define STRIP_MAX_STEPS 160 /* 655 KB: beyond a BIG TCP skb on lo */

static __always_inline int strip_front(struct __sk_buff *skb, __u32 n)
{
	for (int i = 0; i < STRIP_MAX_STEPS && n; i++) {
		__u32 step = n < STRIP_STEP ? n : STRIP_STEP;

		if (bpf_skb_adjust_room(skb, -(__s32)step, 0, 0))
			return -1;
		n -= step;
	}
	return n ? -1 : 0;
}

/*
 * Bytes the peer socket has taken into its send queue since the hand-off:
 * acked + still queued. Returns -1 when the peer is gone.
 */
static __always_inline __s64 peer_written(__u64 *cookie, struct mmp_flow_dir *d)
{
	struct bpf_sock *sk = bpf_map_lookup_elem(&mmp_peers, cookie);
	struct tcp_sock *tp;
	__s64 written = -1;

	if (!sk)
		return -1;
	tp = bpf_skc_to_tcp_sock(sk);
	if (tp)
		written = (__s64)(tp->bytes_acked + (__u32)(tp->write_seq - tp->snd_una) - d->peer_base);
	bpf_sk_release(sk);
	return written;
}

SEC("sk_skb/stream_verdict")
int mmp_verdict(struct __sk_buff *skb)
{
	__u64 cookie = bpf_get_socket_cookie(skb);
	struct mmp_sockdir *sd;
	struct mmp_flow_dir *d;
	struct mmp_flow *flow;
	__u32 len = skb->len;
	__s64 written;
	bool started_holding = false;

	sd = bpf_map_lookup_elem(&mmp_sockdir, &cookie);
	if (!sd)
		goto no_flow;
	flow = bpf_map_lookup_elem(&mmp_flows, &sd->flow);
	if (!flow)
		goto no_flow;
	d = sd->dir == MMP_DIR_UP ? &flow->up : &flow->down;
	/*
	 * A pure FIN arrives as an empty skb. Redirected, the peer's backlog
	 * fails to send 0 bytes and reports EPIPE on the peer, which also stops
	 * its transmit. Userspace forwards the FIN itself, after the bytes.
	 */
	if (!len)
		return SK_DROP;

	/*
	 * Rarely (a retransmission DSACKed while userspace was reading held-back
	 * bytes) the kernel hands the verdict a segment it already handed over,
	 * and the upstream would get those bytes twice. The skb still carries
	 * its TCP sequence number: drop or trim what was already seen.
	 */
	{
		struct sk_buff *kskb = bpf_cast_to_kern_ctx(skb);
		__u32 seq = ((struct tcp_skb_cb *)kskb->cb)->seq;
		__s32 seen = (__s32)(d->seq_next - seq);

		if (d->seq_valid && seen > 0) {
			count(MMP_CNT_DUPLICATE_BYTES_DROPPED, seen < (__s32)len ? seen : len);
			d->duplicates += seen < (__s32)len ? seen : len;
			if (seen >= (__s32)len)
				return SK_DROP;
			if (strip_front(skb, seen)) {
				count(MMP_CNT_STRIP_FAILURES, 1);
				return SK_DROP;
			}
			len = skb->len;
			seq += seen;
		}
		d->seq_next = seq + len;
		d->seq_valid = 1;
	}
	d->consumed += len;

	if (d->skip) {
		__u32 skip = d->skip;

		if (len <= skip) {
			/* All header: drop it; TCP still counts it as read. */
			d->skip = skip - len;
			count(MMP_CNT_HEADER_BYTES_STRIPPED, len);
			return SK_DROP;
		}
		if (strip_front(skb, skip)) {
			count(MMP_CNT_STRIP_FAILURES, 1);
			return SK_DROP;
		}
		d->skip = 0;
		count(MMP_CNT_HEADER_BYTES_STRIPPED, skip);
		len = skb->len;
	}
	d->bytes += len;

	if (d->paused) {
		/* Resume only when userspace forwarded everything held back. */
		if (sd->forwarded != d->passed)
			goto hold;
		d->paused = 0;
	}
	written = peer_written(&cookie, d);
	if (written >= 0 && d->redirected + sd->forwarded - written > max_queued) {
		d->paused = 1;
		started_holding = true;
		count(MMP_CNT_BACKPRESSURE_PAUSES, 1);
		goto hold;
	}
	d->redirected += len;
	count(MMP_CNT_REDIRECTED_BYTES, len);
	return bpf_sk_redirect_hash(skb, &mmp_peers, &cookie, 0);

hold:
	d->passed += len;
	count(MMP_CNT_HELD_BACK_BYTES, len);
	/*
	 * Only the start of a pause notifies: the worker then watches the socket
	 * for data until it sees paused == 0, and a pause ends only once it has
	 * forwarded every held-back byte, so a later pause notifies again.
	 */
	if (started_holding)
		wake_worker(sd);
	return SK_PASS;
no_flow:
	/* Not ours (or being torn down): leave it to the socket's reader. */
	count(MMP_CNT_VERDICTS_WITHOUT_FLOW, 1);
	return SK_PASS;
}

char LICENSE[] SEC("license") = "GPL";
