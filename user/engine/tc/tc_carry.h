/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_TC_CARRY_H
#define MMP_TC_CARRY_H
/*
 * The bytes a hand-off carries across (docs/DESIGN.md §3b, "The hand-off
 * carries what is queued"): what the proxy's frozen sockets and its splice
 * pipes still held, sent from a raw socket in the frozen sockets' names,
 * paced by the receiver's window and sent again until the receiver acks
 * them. The TC programs report each receiver's ack and window in
 * mmp_tc_carry and clamp the acks the other peer sees meanwhile.
 */
#include <stdbool.h>
#include <stdint.h>
#include "core/loop.h"
#include "mmp_tc.h"
#include "engine/tc/tc_packet.h"

struct mmp_conn;
struct mmp_tc;
struct mmp_tc_dir;
struct mmp_tc_frozen;
struct mmp_tc_queues;

/* One direction: [0] to the upstream (conn2), [1] to the load balancer (conn1). */
struct mmp_tc_carry_dir {
	struct mmp_tc_ack hdr; /* tuple, ack, window, timestamps; seq is set per segment */
	uint8_t *buf;
	uint32_t len;
	uint32_t base; /* the seq of buf[0]: the frozen socket's snd_una */
	uint32_t mss;
	uint32_t acked; /* bytes of buf the receiver acked */
	uint32_t sent; /* bytes of buf sent in this round */
	uint32_t furthest; /* the end of the furthest byte ever sent: what is sent below it is sent again */
	uint32_t edge; /* the seq the receiver's window ends at */
	uint64_t moved_ms; /* the last time its ack or window edge moved */
	bool fast_sent; /* sent again by fast_resend since the ack last moved */
	/* What the receiver holds beyond its ack (its SACK blocks), as [start, end) in buf. */
	uint32_t sacked_n;
	uint32_t sacked[MMP_TC_CARRY_SACK_BLOCKS][2];
	uint32_t engine_off, engine_len; /* where in buf the engine's bytes go (mmp_tc_carry_take) */
};

struct mmp_tc_carrier {
	struct mmp_tc_carrier *next;
	uint64_t flow;
	struct mmp_tc_carry_dir dir[2];
	uint64_t progress_ms; /* the last time an ack moved, or a receiver answered at all */
	uint32_t seen[2]; /* the receivers' segments the programs saw */
	uint64_t resend_ms; /* send again from the ack at this time */
	uint32_t rto_ms, rto_base_ms; /* the wait before sending again: from rto_base_ms, doubled each time */
	uint32_t quiet_ms; /* a talking receiver's ack unmoved this long: a hole, sent again at once */
};

/* A listener thread's carriers (the tc engine's per-loop state). */
struct mmp_tc_worker {
	struct mmp_tc *tc;
	struct mmp_loop *loop;
	struct mmp_timer timer;
	struct mmp_tc_carrier *carriers;
	uint8_t *scratch; /* one segment: 80 + MMP_TC_SEGMENT_MAX bytes */
};

/* The most a hand-off carries one way; a flow with more queued drains first (docs/DESIGN.md §3b). */
#define TC_CARRY_MAX (8u * 1024 * 1024)
/*
 * The first wait for an ack before sending again, doubled up to
 * TC_CARRY_RTO_MAX_MS; TCP's own minimum. A resend the receiver did not need
 * (it was slow to ack) is a duplicate it drops by PAWS once the peer's
 * translated segments, in sequence after the carry, raised its ts_recent;
 * its duplicate ACK reaches the peer, and three of them start a fast
 * retransmit there. With 20 ms, t20 saw 5 such drops and 6 fast retransmits.
 */
#define TC_CARRY_RTO_MIN_MS 200
#define TC_CARRY_RTO_MAX_MS 1000
/* The least quiet_ms (the carrier's fast resend): a few of its 1 ms steps beyond twice the RTT. */
#define TC_CARRY_QUIET_MIN_MS 3
/*
 * A receiver that sends nothing for this long (not even the answer to a
 * resend into its closed window, once a second) is gone: the flow is removed.
 */
#define TC_CARRY_GIVE_UP_MS 10000

/*
 * The decision (tc_carry_plan.c). What a switch now would carry across each
 * way ([0] to the upstream, [1] to the load balancer), from the sockets'
 * state f1 (conn1) and f2 (conn2), live or frozen, and one look q at the
 * queues: whether each receiver's window takes it whole.
 */
struct mmp_tc_carry_plan {
	uint32_t rq[2]; /* [0] conn1's receive queue (goes up), [1] conn2's */
	size_t buffered[2]; /* what the engine holds, by direction */
	uint64_t len[2];
	bool fits[2];
};

/* 0, or -1 when a receive queue could not be read. */
int mmp_tc_plan_carry(struct mmp_conn *c, const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2,
		      const struct mmp_tc_queues *q, struct mmp_tc_carry_plan *cp);
/*
 * Carry rather than drain: a stream's queues hold at least TC_CARRY_MIN_BYTES,
 * or a hold that did not drain within TC_CARRY_AFTER_MS (a slow peer).
 */
bool mmp_tc_carry_worth(const struct mmp_conn *c, uint64_t pending);
/*
 * The held peers stopped sending: since they were told window 0, nothing
 * arrived from them (lb: conn1, upstream: conn2) for TC_SETTLE_MS, or a round
 * trip when longer. Their segments in flight have landed, so the freeze
 * drops none that a peer would have to resend by timeout.
 */
bool mmp_tc_settled(struct mmp_conn *c, bool lb, bool upstream);
/* Would what direction up (and/or down) holds fit its receiver's window now? The live sockets, read as the raw ACKs read them. */
bool mmp_tc_carry_fits(struct mmp_conn *c, const struct mmp_tc_queues *q, bool up, bool down);
/*
 * Both peers held: switch now with the queues as they are? Once both were
 * told window 0 (the first call tells them), have settled, each receiver's
 * window takes what is carried to it, and neither socket holds bytes out of
 * order (it sets hole_seen from that read).
 */
bool mmp_tc_carry_ready(struct mmp_conn *c, const struct mmp_tc_queues *q);

/*
 * The set-up at the switch (tc_carry.c). The bytes still queued, read from
 * the frozen sockets as planned in cp: 0, or a negative errno with nothing
 * consumed (*out is set either way; free it).
 */
int mmp_tc_carry_prepare(struct mmp_conn *c, const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2,
			 const struct mmp_tc_carry_plan *cp, struct mmp_tc_carrier **out);
/*
 * The carried bytes' segments of one direction d: in the frozen socket f's
 * name, as it would have sent them (its ack and clock, window: the far end's,
 * or 0 while bytes are carried there too), in f's MSS, or as large as lo takes
 * for a receiver on lo (on_lo); with mark (-m, toward the upstream) as the
 * upstream socket's own segments left.
 */
void mmp_tc_carrier_header(struct mmp_tc_carry_dir *cd, const struct mmp_tc_dir *d, const struct mmp_tc_frozen *f,
			   uint32_t window, bool on_lo, uint32_t mark);
/* The carry's entry in mmp_tc_carry: the receivers' ack that covers it all, and where they stand now. 0 or -errno. */
int mmp_tc_carry_publish(struct mmp_tc *tc, struct mmp_conn *c, const struct mmp_tc_carrier *cr,
			 const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2);

/*
 * Read direction k's bytes at the switch, in their order: the send queue of
 * the frozen socket to_fd from to->snd_una (to_fd's repair mode selects it,
 * then none), room for buffered bytes of c's engine, and rq bytes of
 * from_fd's receive queue. Only peeks: nothing is consumed, so a switch that
 * fails after it loses nothing. Sets cd->buf, len, base. 0 or a negative errno.
 */
int mmp_tc_carry_read(int to_fd, const struct mmp_tc_frozen *to, size_t buffered, int from_fd, uint32_t rq,
		      struct mmp_tc_carry_dir *cd);
/* Move the engine's bytes of direction k into their room. 0 or a negative errno (the bytes are lost). */
int mmp_tc_carry_take(struct mmp_conn *c, int k, struct mmp_tc_carry_dir *cd);

/*
 * Where in cd->buf the carrier sends (tc_carry_seq.c; pure, the unit tests
 * drive it). The round's end: the window's or the carry's, or one segment
 * from the ack for a resend (which rewinds cd->sent to the ack; *probe: a
 * closed window's one-byte probe).
 */
uint32_t mmp_tc_carry_send_limit(struct mmp_tc_carry_dir *cd, bool resend, bool *probe);
/* A receiver's ack as an offset in cd->buf, capped at the carry's end. */
int32_t mmp_tc_carry_acked_in_buf(const struct mmp_tc_carry_dir *cd, uint32_t ack);
/* Receiver k's SACK blocks in e, as [start, end) in buf beyond cd->acked (cd->sacked). */
void mmp_tc_carry_note_sacked(struct mmp_tc_carry_dir *cd, const struct mmp_tc_carry *e, int k);
/* The next segment's length from cd->sent (stepped past held blocks) up to limit; 0: the round is done. */
uint32_t mmp_tc_carry_next_segment(struct mmp_tc_carry_dir *cd, uint32_t limit);
/* A segment of n bytes from cd->sent went out: moves sent; returns how many of them were sent before. */
uint32_t mmp_tc_carry_advance(struct mmp_tc_carry_dir *cd, uint32_t n);

/* Take cr over (both directions filled), send what the windows allow and arm the resend timer. */
void mmp_tc_carry_start(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr);
void mmp_tc_carrier_free(struct mmp_tc_carrier *cr);

/* Until every carrier of w is done or max_ms passed: the listener thread is about to end. */
void mmp_tc_carry_flush(struct mmp_tc_worker *w, uint64_t max_ms);

#endif
