// SPDX-License-Identifier: GPL-2.0
/* The bytes a hand-off carries across, read at the switch and sent until acked (engine/tc/tc_carry.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include "core/clock.h"
#include "core/conn.h"
#include "core/counters.h"
#include "engine/engine.h"
#include "engine/tc/tc_carry.h"
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"
#include "lib/log.h"

/*
 * The head of the send queue may start before snd_una: a segment acked in
 * part is trimmed only in whole MSS (tcp_tso_acked), so the peek may return
 * up to one segment more than write_seq - snd_una, in front.
 */
#define SENDQ_SLACK (64 * 1024)
/* The smallest segment a carry falls back to when the path refuses bigger ones: IPv6's minimum MTU's. */
#define MIN_SEGMENT 1220
/* How many bytes send_dir sends between two looks at the receiver's ack (skip_acked). */
#define SKIP_ACKED_EVERY (64u * 1024)

static int select_queue(int fd, int q)
{
	return setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &q, sizeof(q)) ? -errno : 0;
}

/*
 * MSG_PEEK of one queue of a socket in repair mode. The send queue is
 * selected only for the peek: while it is, the kernel marks what it would
 * send as sent without sending it (docs/DESIGN.md §3b, "Reading a socket's
 * state"). Returns the bytes read or a negative errno.
 */
static ssize_t peek_queue(int fd, int q, void *buf, size_t len)
{
	ssize_t n;
	int err = select_queue(fd, q);

	if (err)
		return err;
	n = recv(fd, buf, len, MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		n = errno == EAGAIN ? 0 : -errno;
	err = select_queue(fd, TCP_NO_QUEUE);
	return err ? err : n;
}

int mmp_tc_carry_read(int to_fd, const struct mmp_tc_frozen *to, size_t buffered, int from_fd, uint32_t rq,
		      struct mmp_tc_carry_dir *cd)
{
	uint32_t sendq = to->write_seq - to->snd_una;
	ssize_t n;
	uint8_t *buf;

	cd->len = 0;
	cd->buf = NULL;
	cd->base = to->snd_una;
	if ((uint64_t)sendq + buffered + rq > TC_CARRY_MAX)
		return -E2BIG;
	if (!sendq && !buffered && !rq)
		return 0;
	/* Room for the send queue's slack in front, then the rest after it. */
	buf = malloc(SENDQ_SLACK + (size_t)sendq + buffered + rq);
	if (!buf)
		return -ENOMEM;
	if (sendq) {
		n = peek_queue(to_fd, TCP_SEND_QUEUE, buf, SENDQ_SLACK + (size_t)sendq);
		if (n < (ssize_t)sendq) {
			free(buf);
			return n < 0 ? (int)n : -EIO;
		}
		/* Drop the acked head: keep the last sendq bytes. */
		memmove(buf, buf + (n - sendq), sendq);
	}
	if (rq) {
		n = peek_queue(from_fd, TCP_RECV_QUEUE, buf + sendq + buffered, rq);
		if (n != (ssize_t)rq) {
			free(buf);
			return n < 0 ? (int)n : -EIO;
		}
	}
	cd->buf = buf;
	cd->len = sendq + (uint32_t)buffered + rq;
	cd->engine_off = sendq;
	cd->engine_len = (uint32_t)buffered;
	/*
	 * What the frozen socket had sent is on its way (its data segments
	 * pass the hold, and to was read before the peek): the first round
	 * starts after it, and the resend timer covers a loss, as the socket's
	 * own would have. Sent again at once, those bytes were duplicates the
	 * receiver dropped (by PAWS, once the translated segments behind them
	 * had arrived: t61's upstream beyond loopback).
	 */
	cd->sent = to->snd_nxt - to->snd_una < cd->len ? to->snd_nxt - to->snd_una : cd->len;
	cd->furthest = cd->sent; /* sent once already: a resend of them counts as one (tc_carry_resent) */
	return 0;
}

int mmp_tc_carry_take(struct mmp_conn *c, int k, struct mmp_tc_carry_dir *cd)
{
	ssize_t n;

	if (!cd->engine_len)
		return 0;
	n = mmp_engine_take_buffered(c, k, cd->buf + cd->engine_off, cd->engine_len);
	if (n == (ssize_t)cd->engine_len)
		return 0;
	return n < 0 ? (int)n : -EIO;
}

void mmp_tc_carrier_free(struct mmp_tc_carrier *cr)
{
	if (!cr)
		return;
	free(cr->dir[0].buf);
	free(cr->dir[1].buf);
	free(cr);
}

/* ---------------------------------------------------- set-up at the switch -- */
/* tc_handoff.c calls these with both sockets frozen. */

/*
 * The largest segment lo takes: its MTU less the IP header and a TCP header
 * with timestamps. A receiver on this host takes any size, whatever MSS it
 * advertised; the frozen socket's own MSS may be far smaller (an upstream
 * connection clamped to a remote load balancer's path, pre_connect).
 */
static uint32_t lo_segment_max(const struct mmp_tc_dir *d, const struct mmp_tc_frozen *f)
{
	uint32_t ip = d->out.family == 4 ? 20 : 40;

	return f->ti.tcpi_pmtu > ip + 32 ? f->ti.tcpi_pmtu - ip - 32 : 0;
}

/*
 * The carried bytes' segments: in the frozen socket's name, as it would
 * have sent them (its ack and clock, the window of the far end, or 0 while
 * bytes are carried there too), in the receiver's MSS, or lo's for a
 * receiver on lo: small segments cost a receiver about twice their payload
 * in buffer, and 1-2 MB in a remote load balancer's MSS stalled upstreams on
 * lo (docs/DESIGN.md §3b).
 */
void mmp_tc_carrier_header(struct mmp_tc_carry_dir *cd, const struct mmp_tc_dir *d, const struct mmp_tc_frozen *f,
			   uint32_t window, bool on_lo, uint32_t mark)
{
	cd->hdr.tuple = d->out;
	cd->hdr.mark = mark;
	cd->hdr.ack = f->rcv_nxt;
	cd->hdr.window = window >> mmp_tc_wscale(&f->ti, false);
	cd->hdr.timestamps = d->timestamps;
	/* Below every translated TSval, above what the peer saw: as the window updates' (tc_peer_acks.c). */
	cd->hdr.tsval = d->ts_base - TS_MARGIN / 2;
	cd->hdr.tsecr = f->ts_recent;
	cd->mss = on_lo ? lo_segment_max(d, f) : f->ti.tcpi_snd_mss;
	if (!cd->mss || cd->mss > MMP_TC_SEGMENT_MAX)
		cd->mss = MMP_TC_SEGMENT_MAX;
	cd->edge = f->snd_una + f->win.snd_wnd;
}

/*
 * The bytes still queued, read from the frozen sockets: the flow's entry in
 * mmp_tc_carry (the programs clamp the acks for them from the switch on) and
 * the carrier that sends them. Returns 0, or a negative errno with nothing
 * consumed.
 */
int mmp_tc_carry_prepare(struct mmp_conn *c, const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2,
			 const struct mmp_tc_carry_plan *cp, struct mmp_tc_carrier **out)
{
	struct mmp_tc_carrier *cr = calloc(1, sizeof(*cr));
	int err;

	*out = cr;
	if (!cr)
		return -ENOMEM;
	err = mmp_tc_carry_read(c->upstream.fd, f2, cp->buffered[0], c->client.fd, cp->rq[0], &cr->dir[0]);
	if (!err)
		err = mmp_tc_carry_read(c->client.fd, f1, cp->buffered[1], c->upstream.fd, cp->rq[1], &cr->dir[1]);
	return err;
}

/* The carry's entry in mmp_tc_carry: the receivers' ack that covers it all, and where they stand now. */
int mmp_tc_carry_publish(struct mmp_tc *tc, struct mmp_conn *c, const struct mmp_tc_carrier *cr,
			 const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2)
{
	struct mmp_tc_carry e = {
		.end = { f2->snd_una + cr->dir[0].len, f1->snd_una + cr->dir[1].len },
		.acked = { f2->snd_una, f1->snd_una },
		.edge = { f2->snd_una + f2->win.snd_wnd, f1->snd_una + f1->win.snd_wnd },
		.tsval = { cr->dir[0].hdr.tsval, cr->dir[1].hdr.tsval },
		.fwd_ack = { cr->dir[0].hdr.ack, cr->dir[1].hdr.ack },
		.fwd_win = { cr->dir[0].hdr.window, cr->dir[1].hdr.window },
	};

	return bpf_map_update_elem(tc->carry_fd, &T(c)->flow, &e, BPF_ANY) ? -errno : 0;
}

/* ------------------------------------------------------------- the carrier -- */

/*
 * Skip what receiver k acked since the round began: its acks come while a
 * round is being sent (a 64 KiB segment into lo takes its receiver about
 * 100 us to take), and a byte it has is a copy it drops, by PAWS once the
 * translated segments after the carry raised its TSval (a harmless
 * duplicate, but each one costs it a dupack). Only sent moves: acked and
 * the resend clock are read_acks' to move.
 */
static void skip_acked(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr, int k)
{
	struct mmp_tc_carry_dir *cd = &cr->dir[k];
	struct mmp_tc_carry e;
	int32_t acked;

	if (bpf_map_lookup_elem(w->tc->carry_fd, &cr->flow, &e))
		return;
	acked = mmp_tc_carry_acked_in_buf(cd, e.acked[k]);
	if (acked > (int32_t)cd->sent)
		cd->sent = (uint32_t)acked;
	mmp_tc_carry_note_sacked(cd, &e, k);
}

/* Send direction k of cr from cd->sent on, as mmp_tc_carry_send_limit allows. */
static void send_dir(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr, int k, bool resend)
{
	struct mmp_tc_carry_dir *cd = &cr->dir[k];
	int fd = cd->hdr.tuple.family == 4 ? w->tc->raw4 : w->tc->raw6;
	uint32_t limit, since_look = 0;
	bool probe;

	if (cd->acked >= cd->len)
		return;
	limit = mmp_tc_carry_send_limit(cd, resend, &probe);
	for (;;) {
		uint32_t n;
		int err;

		if (since_look >= SKIP_ACKED_EVERY && !probe) {
			skip_acked(w, cr, k);
			since_look = 0;
		}
		n = mmp_tc_carry_next_segment(cd, limit);
		if (!n)
			break;
		cd->hdr.seq = cd->base + cd->sent;
		err = mmp_tc_send_segment(fd, &cd->hdr, cd->buf + cd->sent, n, w->scratch);
		if (err == -EMSGSIZE && cd->mss > MIN_SEGMENT) {
			/* The path shrank (or lo's MTU was lowered): smaller segments, at once. */
			cd->mss = cd->mss / 2 > MIN_SEGMENT ? cd->mss / 2 : MIN_SEGMENT;
			continue;
		}
		if (err) {
			/* ENOBUFS and the like: the resend timer tries again. */
			pr_debug("tc engine: sending carried bytes failed: %s", strerror(-err));
			return;
		}
		mmp_count(w->loop->counters, MMP_TCP_CNT_tc_carry_resent, mmp_tc_carry_advance(cd, n));
		since_look += n;
	}
	/* The probe's byte was dropped: the window its answer opens is filled from the ack. */
	if (probe)
		cd->sent = cd->acked;
}

/*
 * What the programs saw the receivers ack: bit k of *moved when direction
 * k's ack or window edge moved, of *alive when its receiver sent anything.
 * Returns false when the flow's carry entry is gone, or the flow was reset.
 */
static bool read_acks(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr, unsigned int *moved, unsigned int *alive)
{
	struct mmp_tc_carry e;

	*moved = *alive = 0;
	if (bpf_map_lookup_elem(w->tc->carry_fd, &cr->flow, &e))
		return false;
	if (e.reset) {
		/* A peer reset the flow: nothing is owed to it any more (include/mmp_tc.h). */
		bpf_map_delete_elem(w->tc->carry_fd, &cr->flow);
		return false;
	}
	for (int k = 0; k < 2; k++) {
		struct mmp_tc_carry_dir *cd = &cr->dir[k];
		int32_t acked = mmp_tc_carry_acked_in_buf(cd, e.acked[k]);

		if (acked > (int32_t)cd->acked) {
			cd->acked = (uint32_t)acked;
			if (cd->sent < cd->acked)
				cd->sent = cd->acked;
			*moved |= 1u << k;
		}
		mmp_tc_carry_note_sacked(cd, &e, k);
		if ((int32_t)(e.edge[k] - cd->edge) > 0) {
			cd->edge = e.edge[k];
			*moved |= 1u << k;
		}
		/* A receiver whose ts_recent rose above the carried TSval: the programs raised it. */
		if ((int32_t)(e.tsval[k] - cd->hdr.tsval) > 0)
			cd->hdr.tsval = e.tsval[k];
		/* Ack and window as the other peer's segments give them now (include/mmp_tc.h). */
		if ((int32_t)(e.fwd_ack[k] - cd->hdr.ack) >= 0) {
			cd->hdr.ack = e.fwd_ack[k];
			cd->hdr.window = e.fwd_win[k];
		}
		if (e.seen[k] != cr->seen[k]) {
			cr->seen[k] = e.seen[k];
			*alive |= 1u << k;
		}
	}
	return true;
}

/*
 * A receiver that keeps sending, with its window open, but acks nothing of
 * what is outstanding for quiet_ms has a hole: a carried segment, or one
 * the frozen socket had sent (the carry counts those as on their way), was
 * dropped, its buffer full or the link lossy, and what followed waits out
 * of order. Send again from its ack now, as TCP's fast retransmit does,
 * not after the timer's 200 ms (tcpkali streams: 14-24 such waits a run).
 * Once until the ack moves: a receiver that is only slow gets one copy
 * too many, not one every quiet_ms (each copy is a duplicate ACK that the
 * other peer counts toward a fast retransmit of its own). A closed window
 * is flow control, for the timer's probes.
 */
static void fast_resend(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr, unsigned int alive, uint64_t now)
{
	for (int k = 0; k < 2; k++) {
		struct mmp_tc_carry_dir *cd = &cr->dir[k];
		int32_t room = (int32_t)(cd->edge - (cd->base + cd->acked));

		if (!(alive & (1u << k)) || cd->fast_sent || cd->acked >= cd->sent || room < (int32_t)cd->mss ||
		    now - cd->moved_ms < cr->quiet_ms)
			continue;
		mmp_count(w->loop->counters, MMP_TCP_CNT_tc_carry_fast_resent, 1);
		send_dir(w, cr, k, true);
		cd->fast_sent = true;
	}
}

static bool carrier_done(const struct mmp_tc_carrier *cr)
{
	return cr->dir[0].acked >= cr->dir[0].len && cr->dir[1].acked >= cr->dir[1].len;
}

/*
 * Every byte carried was acked: the frozen sockets' tuples, on which the
 * carried segments went (the switch kept them, tc_handoff.c), go now. Not
 * when the flow ended: a newer flow may own them by then.
 */
static void forget_carried_tuples(struct mmp_tc_worker *w, const struct mmp_tc_carrier *cr)
{
	for (int k = 0; k < 2; k++) {
		const struct mmp_tc_tuple *t = &cr->dir[k].hdr.tuple;
		struct mmp_tc_tuple_val tv;

		if (bpf_map_lookup_elem(w->tc->tuples_fd, t, &tv) == 0 && tv.flow == cr->flow)
			bpf_map_delete_elem(w->tc->tuples_fd, t);
	}
}

/* A receiver that acks nothing for TC_CARRY_GIVE_UP_MS: its flow cannot go on, remove it. */
static void abandon(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr)
{
	struct mmp_tc_flow flow;
	struct flow_tuples ft;

	mmp_count(w->loop->counters, MMP_TCP_CNT_tc_carry_abandoned, 1);
	pr_conn("tc engine: a peer sent nothing for %d s while bytes carried across its hand-off were unacked (%u of %u "
		"and %u of %u acked): its flow is removed",
		TC_CARRY_GIVE_UP_MS / 1000, cr->dir[0].acked, cr->dir[0].len, cr->dir[1].acked, cr->dir[1].len);
	if (bpf_map_lookup_elem(w->tc->flows_fd, &cr->flow, &flow) == 0) {
		mmp_tc_tuples_of_flow(&flow, &ft);
		mmp_tc_delete_flow(w->tc, cr->flow, &ft);
	}
	bpf_map_delete_elem(w->tc->carry_fd, &cr->flow);
}

/* One carrier's turn. Returns true when it is finished (done, gone or abandoned). */
static bool step(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr, uint64_t now)
{
	unsigned int moved, alive;

	if (!read_acks(w, cr, &moved, &alive))
		return true; /* the flow ended: collected, or reset */
	if (carrier_done(cr)) {
		bpf_map_delete_elem(w->tc->carry_fd, &cr->flow);
		forget_carried_tuples(w, cr);
		return true;
	}
	for (int k = 0; k < 2; k++) {
		if (moved & (1u << k)) {
			cr->dir[k].moved_ms = now;
			cr->dir[k].fast_sent = false;
		}
	}
	if (moved) {
		cr->progress_ms = now;
		cr->rto_ms = cr->rto_base_ms;
		cr->resend_ms = now + cr->rto_ms;
		send_dir(w, cr, 0, false);
		send_dir(w, cr, 1, false);
		return false;
	}
	if (alive)
		cr->progress_ms = now; /* answers with a closed window: it lives, and its resends back off */
	if (now - cr->progress_ms >= TC_CARRY_GIVE_UP_MS) {
		abandon(w, cr);
		return true;
	}
	fast_resend(w, cr, alive, now);
	if (now >= cr->resend_ms) {
		pr_debug("tc engine: flow %llu: carried bytes sent again after %u ms (acked: %u of %u up, %u of %u down)",
			 (unsigned long long)cr->flow, cr->rto_ms, cr->dir[0].acked, cr->dir[0].len, cr->dir[1].acked,
			 cr->dir[1].len);
		send_dir(w, cr, 0, true);
		send_dir(w, cr, 1, true);
		cr->rto_ms = cr->rto_ms * 2 > TC_CARRY_RTO_MAX_MS ? TC_CARRY_RTO_MAX_MS : cr->rto_ms * 2;
		cr->resend_ms = now + cr->rto_ms;
	}
	return false;
}

/* Every carrier's turn; the timer runs each millisecond while any is left. */
static void run_carriers(struct mmp_tc_worker *w)
{
	struct mmp_tc_carrier **pp = &w->carriers;
	uint64_t now = mmp_now_ms();

	while (*pp) {
		struct mmp_tc_carrier *cr = *pp;

		if (step(w, cr, now)) {
			*pp = cr->next;
			mmp_tc_carrier_free(cr);
		} else {
			pp = &cr->next;
		}
	}
	if (w->carriers)
		mmp_loop_timer_arm(w->loop, &w->timer, now + 1);
}

static void on_timer(struct mmp_loop *loop, struct mmp_timer *t)
{
	struct mmp_tc_worker *w = (struct mmp_tc_worker *)((char *)t - offsetof(struct mmp_tc_worker, timer));

	run_carriers(w);
}

void mmp_tc_carry_start(struct mmp_tc_worker *w, struct mmp_tc_carrier *cr)
{
	uint64_t now = mmp_now_ms();

	cr->progress_ms = now;
	cr->dir[0].moved_ms = cr->dir[1].moved_ms = now;
	/* Before the floor: twice the path's RTT, plus the timer's steps. */
	cr->quiet_ms = cr->rto_base_ms + TC_CARRY_QUIET_MIN_MS;
	if (cr->rto_base_ms < TC_CARRY_RTO_MIN_MS)
		cr->rto_base_ms = TC_CARRY_RTO_MIN_MS;
	cr->rto_ms = cr->rto_base_ms;
	cr->resend_ms = now + cr->rto_ms;
	send_dir(w, cr, 0, false);
	send_dir(w, cr, 1, false);
	cr->next = w->carriers;
	w->carriers = cr;
	w->timer.fn = on_timer;
	if (mmp_loop_timer_arm(w->loop, &w->timer, now + 1))
		pr_err("tc engine: no timer slot for carried bytes: they are sent again only with the next hand-off");
}

void mmp_tc_carry_flush(struct mmp_tc_worker *w, uint64_t max_ms)
{
	uint64_t until = mmp_now_ms() + max_ms;

	while (w->carriers && mmp_now_ms() < until) {
		run_carriers(w);
		usleep(1000);
	}
	while (w->carriers) {
		struct mmp_tc_carrier *cr = w->carriers;

		w->carriers = cr->next;
		pr_conn("tc engine: exiting with %u + %u carried bytes unacked", cr->dir[0].len - cr->dir[0].acked,
			cr->dir[1].len - cr->dir[1].acked);
		mmp_tc_carrier_free(cr);
	}
}
