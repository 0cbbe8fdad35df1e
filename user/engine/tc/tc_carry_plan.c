// SPDX-License-Identifier: GPL-2.0
/*
 * When a hold carries its queued bytes across instead of draining them, and
 * what the switch would carry (docs/DESIGN.md §3b, "The hand-off carries
 * what is queued"). The switch itself is tc_handoff.c's; the carrier that
 * sends the bytes is tc_carry.c's.
 */
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include "core/clock.h"
#include "core/conn.h"
#include "engine/engine.h"
#include "engine/tc/tc_carry.h"
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"
#include "engine/tc/tc_peer_acks.h"
#include "lib/config.h"
#include "lib/sockinfo.h"

void mmp_tc_read_queues(struct mmp_conn *c, struct mmp_tc_queues *q)
{
	int fds[2] = { c->client.fd, c->upstream.fd };

	for (int k = 0; k < 2; k++) {
		q->in[k] = mmp_tc_queue_bytes(fds[k], SIOCINQ);
		q->out[k] = mmp_tc_queue_bytes(fds[k], SIOCOUTQ);
	}
	mmp_engine_drain_state(c, &q->d);
}

int mmp_tc_plan_carry(struct mmp_conn *c, const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2,
		      const struct mmp_tc_queues *q, struct mmp_tc_carry_plan *cp)
{
	if (q->in[0] < 0 || q->in[1] < 0)
		return -1;
	for (int k = 0; k < 2; k++) {
		cp->rq[k] = (uint32_t)q->in[k];
		cp->buffered[k] = q->d.buffered[k];
	}
	cp->len[0] = (uint64_t)(f2->write_seq - f2->snd_una) + cp->buffered[0] + cp->rq[0];
	cp->len[1] = (uint64_t)(f1->write_seq - f1->snd_una) + cp->buffered[1] + cp->rq[1];
	/*
	 * Within the receiver's window, or the receiver reads: it acked bytes
	 * since the flow's first attempt (T(c)->reading, note_reading). A peer
	 * that never reads would hold a carry beyond its window forever, so its
	 * flow stays on splice, where the other direction goes on. An echo peer
	 * held at window 0 stops reading once it cannot write, with its window
	 * nearly closed, but starts again as soon as the switch lets it write.
	 */
	for (int k = 0; k < 2; k++)
		cp->fits[k] = cp->len[k] <= TC_CARRY_MAX &&
			      (cp->len[k] <= (k ? f1 : f2)->win.snd_wnd || T(c)->reading[k]);
	return 0;
}

/*
 * Does each receiver read? It acked bytes since the flow's first attempt
 * began (live sockets only). Not since the last look, nor since this
 * attempt: an echo peer stops reading a few ms into a hold, and after an
 * attempt that gave up it may still sit in persist mode when the next one
 * starts. A peer that never reads had filled its window before the first
 * attempt (--tc-handoff-delay), and acks at most a little after it: when
 * the kernel collapses its full receive queue, the memory freed reopens a
 * few KB of window. Any ack at all counted as reading once in CI, and t60
 * case 3's never-reading upstream was handed a carry it never took.
 */
static void note_reading(struct mmp_conn *c, const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2)
{
	uint64_t acked[2] = { f2->ti.tcpi_bytes_acked, f1->ti.tcpi_bytes_acked };

	for (int k = 0; k < 2; k++)
		T(c)->reading[k] = acked[k] >= T(c)->acked_seen[k] + TC_READING_MIN_BYTES;
}

/*
 * Reads both live sockets once: does what direction up (and/or down) holds
 * fit its receiver's window? *hole says whether either socket held bytes out
 * of order (false when one could not be read: the freeze reads it again).
 */
static bool fits_now(struct mmp_conn *c, const struct mmp_tc_queues *q, bool up, bool down, bool *hole)
{
	struct mmp_tc_frozen f1, f2;
	struct mmp_tc_carry_plan cp;

	*hole = false;
	if (mmp_tc_read_sock(tc_of(c), c->client.fd, &T(c)->tuples[MMP_TC_ROLE_UP], &f1) ||
	    mmp_tc_read_sock(tc_of(c), c->upstream.fd, &T(c)->tuples[MMP_TC_ROLE_DOWN], &f2))
		return false;
	*hole = f1.ofo || f2.ofo;
	if (f1.ti.tcpi_state != TCP_STATE_ESTABLISHED || f2.ti.tcpi_state != TCP_STATE_ESTABLISHED)
		return false;
	note_reading(c, &f1, &f2);
	if (mmp_tc_plan_carry(c, &f1, &f2, q, &cp))
		return false;
	return (!up || cp.fits[0]) && (!down || cp.fits[1]);
}

bool mmp_tc_carry_fits(struct mmp_conn *c, const struct mmp_tc_queues *q, bool up, bool down)
{
	bool hole;

	return fits_now(c, q, up, down, &hole);
}

bool mmp_tc_settled(struct mmp_conn *c, bool lb, bool upstream)
{
	struct tcp_info a, b;
	uint64_t now = mmp_now_ms(), wait, rtt_ms;

	if (!T(c)->zero_ms || mmp_tcp_info(c->client.fd, &a) || mmp_tcp_info(c->upstream.fd, &b))
		return false;
	if ((lb && a.tcpi_bytes_received != T(c)->rx[0]) || (upstream && b.tcpi_bytes_received != T(c)->rx[1]) ||
	    !T(c)->rx_ms) {
		T(c)->rx[0] = a.tcpi_bytes_received;
		T(c)->rx[1] = b.tcpi_bytes_received;
		T(c)->rx_ms = now;
		return false;
	}
	rtt_ms = (a.tcpi_rtt > b.tcpi_rtt ? a.tcpi_rtt : b.tcpi_rtt) / 1000 + 1;
	wait = rtt_ms > TC_SETTLE_MS ? rtt_ms : TC_SETTLE_MS;
	return now >= T(c)->rx_ms + wait && now >= T(c)->zero_ms + wait;
}

bool mmp_tc_carry_worth(const struct mmp_conn *c, uint64_t pending)
{
	return pending >= TC_CARRY_MIN_BYTES || mmp_now_ns() - T(c)->start_ns >= TC_CARRY_AFTER_MS * 1000000ULL;
}

bool mmp_tc_carry_ready(struct mmp_conn *c, const struct mmp_tc_queues *q)
{
	bool fits;

	if (!T(c)->zero_ms) {
		mmp_tc_announce_window(tc_of(c), c, true, true, true);
		T(c)->zero_ms = mmp_now_ms();
		return false;
	}
	if (!mmp_tc_settled(c, true, true))
		return false;
	/* A hole refuses too, from the same read: the freeze would fail on it (tc_handoff.c, hole_pending). */
	fits = fits_now(c, q, true, true, &T(c)->hole_seen);
	return fits && !T(c)->hole_seen;
}
