// SPDX-License-Identifier: GPL-2.0
/*
 * Where in its bytes a carrier sends (engine/tc/tc_carry.h): the receiver's
 * window and ack, the blocks it holds beyond the ack, and which bytes go
 * out a second time. Pure: no socket, no map.
 */
#include "engine/tc/tc_carry.h"

/*
 * Where this round of sending stops, in buf: the receiver's window's end,
 * or the carry's. A resend restarts sent at the ack and sends one segment,
 * as TCP's timeout does (the acks it brings send the rest), within the
 * window: Linux drops a segment that ends beyond it whole
 * (TcpExtBeyondWindow), so a full-size resend into a window smaller than
 * one segment was never taken. Into a closed window it sends one byte, a
 * probe (*probe): the receiver drops it, and its answer carries the
 * window, as a window probe's does.
 */
uint32_t mmp_tc_carry_send_limit(struct mmp_tc_carry_dir *cd, bool resend, bool *probe)
{
	int32_t window_end = (int32_t)(cd->edge - cd->base); /* in buf */
	uint32_t limit = window_end <= 0 ? 0 : (uint32_t)window_end < cd->len ? (uint32_t)window_end : cd->len;

	*probe = false;
	if (!resend)
		return limit;
	cd->sent = cd->acked;
	if (limit > cd->acked + cd->mss)
		limit = cd->acked + cd->mss;
	*probe = limit <= cd->acked;
	return *probe ? cd->acked + 1 : limit;
}

/*
 * A receiver's ack as an offset in cd->buf, capped at the carry's end: a
 * receiver acks beyond the carry once the peer's new bytes follow it, and
 * an ack compared uncapped "moved" on every step, which put off the other
 * direction's resends for good (t60's remote case stalled).
 */
int32_t mmp_tc_carry_acked_in_buf(const struct mmp_tc_carry_dir *cd, uint32_t ack)
{
	int32_t acked = (int32_t)(ack - cd->base);

	return acked > (int32_t)cd->len ? (int32_t)cd->len : acked;
}

/*
 * The receiver's SACK blocks, as the programs last saw them, clipped to
 * what of buf is still unacked: bytes it holds beyond a hole.
 */
void mmp_tc_carry_note_sacked(struct mmp_tc_carry_dir *cd, const struct mmp_tc_carry *e, int k)
{
	uint32_t n = e->sack_n[k] < MMP_TC_CARRY_SACK_BLOCKS ? e->sack_n[k] : MMP_TC_CARRY_SACK_BLOCKS;

	cd->sacked_n = 0;
	for (uint32_t i = 0; i < n; i++) {
		int32_t start = mmp_tc_carry_acked_in_buf(cd, e->sack[k][2 * i]);
		int32_t end = mmp_tc_carry_acked_in_buf(cd, e->sack[k][2 * i + 1]);

		if (start < (int32_t)cd->acked)
			start = (int32_t)cd->acked;
		if (end <= start)
			continue; /* acked, beyond the carry, or a D-SACK of bytes already acked */
		cd->sacked[cd->sacked_n][0] = (uint32_t)start;
		cd->sacked[cd->sacked_n][1] = (uint32_t)end;
		cd->sacked_n++;
	}
}

/*
 * The next segment of this round: from cd->sent, stepped past the blocks the
 * receiver holds, up to limit, one MSS, and the next block. Returns its
 * length, 0 when the round is done.
 */
uint32_t mmp_tc_carry_next_segment(struct mmp_tc_carry_dir *cd, uint32_t limit)
{
	bool stepped = true;
	uint32_t n;

	while (stepped) { /* blocks come in any order: until sent lies in none */
		stepped = false;
		for (uint32_t i = 0; i < cd->sacked_n; i++) {
			if (cd->sent >= cd->sacked[i][0] && cd->sent < cd->sacked[i][1]) {
				cd->sent = cd->sacked[i][1];
				stepped = true;
			}
		}
	}
	if (cd->sent >= limit)
		return 0;
	n = limit - cd->sent < cd->mss ? limit - cd->sent : cd->mss;
	for (uint32_t i = 0; i < cd->sacked_n; i++) {
		if (cd->sacked[i][0] > cd->sent && cd->sacked[i][0] - cd->sent < n)
			n = cd->sacked[i][0] - cd->sent;
	}
	return n;
}

uint32_t mmp_tc_carry_advance(struct mmp_tc_carry_dir *cd, uint32_t n)
{
	uint32_t end = cd->sent + n, again = 0;

	if (cd->sent < cd->furthest)
		again = (end < cd->furthest ? end : cd->furthest) - cd->sent;
	if (end > cd->furthest)
		cd->furthest = end;
	cd->sent = end;
	return again;
}
