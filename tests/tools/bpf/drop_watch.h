/* SPDX-License-Identifier: GPL-2.0 */
/* Shared by drop_watch.bpf.c and mmpt-drops.c. */
#ifndef MMPT_DROP_WATCH_H
#define MMPT_DROP_WATCH_H

/* The kinds of segment TCP's PAWS check drops. */
enum paws_kind {
	PAWS_ACK,  /* no payload: a pure ACK or window update */
	PAWS_COPY, /* every byte already received (below the receiver's rcv_nxt) */
	PAWS_NEW,  /* bytes the receiver lacked: a hole to fill by retransmission */
	PAWS_KINDS,
};

/* Drops counted by reason: the core reasons (enum skb_drop_reason below
 * SKB_DROP_REASON_MAX, 128 on 6.18), and one slot for every subsystem's. */
#define DROP_REASON_SLOTS 129
#define DROP_REASON_SUBSYS_SLOT 128

#define DROP_WATCH_MAX_NETNS 4

/*
 * The first segments that cost data (mmpt_lost_reasons), each with the state
 * of the socket that dropped it: which socket, and whether its memory or its
 * window let it in (a PROTO_MEM drop at a locked, full buffer, and an
 * out-of-order queue pruned after it, read very differently from a segment
 * beyond a closed window).
 */
#define DROP_WATCH_LOST_DETAIL 4

struct drop_watch_lost {
	__u32 reason;
	__u16 local_port, remote_port; /* host order */
	__u32 len;
	__s32 seq_off;                 /* segment's seq - receiver's rcv_nxt */
	__u32 rmem, rcvbuf;            /* sk_rmem_alloc, sk_rcvbuf */
	__u32 rcv_wnd, window_clamp;
	__u8 userlocks, scaling_ratio, ofo, pad;
};

#endif
