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

#endif
