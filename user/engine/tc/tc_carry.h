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
#include "engine/tc/tc_packet.h"

struct mmp_conn;
struct mmp_tc;
struct mmp_tc_frozen;

/* One direction: [0] to the upstream (conn2), [1] to the load balancer (conn1). */
struct mmp_tc_carry_dir {
	struct mmp_tc_ack hdr; /* tuple, ack, window, timestamps; seq is set per segment */
	uint8_t *buf;
	uint32_t len;
	uint32_t base; /* the seq of buf[0]: the frozen socket's snd_una */
	uint32_t mss;
	uint32_t acked; /* bytes of buf the receiver acked */
	uint32_t sent; /* bytes of buf sent in this round */
	uint32_t edge; /* the seq the receiver's window ends at */
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
/*
 * A receiver that sends nothing for this long (not even the answer to a
 * resend into its closed window, once a second) is gone: the flow is removed.
 */
#define TC_CARRY_GIVE_UP_MS 10000

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

/* Take cr over (both directions filled), send what the windows allow and arm the resend timer. */
void mmp_tc_carry_start(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr);
void mmp_tc_carrier_free(struct mmp_tc_carrier *cr);

/* Until every carrier of w is done or max_ms passed: the listener thread is about to end. */
void mmp_tc_carry_flush(struct mmp_tc_worker *w, uint64_t max_ms);

#endif
