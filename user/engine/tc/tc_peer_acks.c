// SPDX-License-Identifier: GPL-2.0
/* The pure ACKs a hand-off sends the peers (engine/tc/tc_peer_acks.h). */
#include <linux/sockios.h>
#include <string.h>
#include <sys/ioctl.h>
#include "core/conn.h"
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"
#include "engine/tc/tc_packet.h"
#include "engine/tc/tc_peer_acks.h"
#include "lib/config.h"
#include "lib/log.h"
#include "mmp_tc.h"

/*
 * The peers sat on a zero window: tell each the real window of the far end,
 * or 0 while bytes are carried to it (room), in its own scale, with an
 * in-window pure ACK at the socket's snd_nxt. Client first.
 */
void mmp_tc_send_window_updates(struct mmp_tc *tc, const struct mmp_tc_flow *flow, const struct mmp_tc_frozen *f1,
				const struct mmp_tc_frozen *f2, const uint32_t room[2])
{
	struct mmp_tc_ack to_lb = {
		.tuple = flow->down.out,
		.seq = f1->snd_nxt,
		.ack = f1->rcv_nxt,
		.window = room[0] >> mmp_tc_wscale(&f1->ti, false),
		.timestamps = flow->down.timestamps,
		/*
		 * Below ts_base (and still above what the peer saw from the frozen
		 * socket, ts_base - TS_MARGIN): a translated segment that was
		 * reordered behind this ACK may carry a TSval a little under
		 * ts_base, and would be dropped by PAWS had this ACK raised the
		 * peer's ts_recent to ts_base.
		 */
		.tsval = flow->down.ts_base - TS_MARGIN / 2,
	};
	struct mmp_tc_ack to_up = {
		.tuple = flow->up.out,
		.seq = f2->snd_nxt,
		.ack = f2->rcv_nxt,
		.window = room[1] >> mmp_tc_wscale(&f2->ti, false),
		.timestamps = flow->up.timestamps,
		.tsval = flow->up.ts_base - TS_MARGIN / 2,
		.mark = tc->cfg->mark,
	};
	int fd = flow->up.out.family == 4 ? tc->raw4 : tc->raw6;
	int err;

	err = mmp_tc_send_ack(fd, &to_lb);
	if (!err)
		err = mmp_tc_send_ack(fd, &to_up);
	if (err)
		pr_conn("tc engine: failed to send a window update: %s (the peers recover by window probes)",
			strerror(-err));
}

/*
 * A pure ACK to `to` as the socket whose state is f would send it, at seq,
 * with window (in its scale); toward the upstream with its -m mark.
 */
static void ack_as_socket(struct mmp_tc *tc, const struct mmp_tc_tuple *to, const struct mmp_tc_frozen *f, uint32_t seq,
			  uint32_t window, bool to_upstream)
{
	struct mmp_tc_ack ack = {
		.tuple = *to,
		.seq = seq,
		.ack = f->rcv_nxt,
		.window = window,
		.timestamps = f->ti.tcpi_options & TCPI_OPT_TIMESTAMPS,
		.tsval = f->tsval,
		.mark = to_upstream ? tc->cfg->mark : 0,
	};

	mmp_tc_send_ack(to->family == 4 ? tc->raw4 : tc->raw6, &ack);
}

/*
 * Tell the chosen peers a window with an in-window pure ACK from the raw
 * socket, as the proxy's socket toward each would have sent it.
 *
 * Zero: HOLD rewrites the window to 0 only in segments the proxy sends. A
 * peer that was sent none since HOLD began (its last data was acked before,
 * or the ACK is still delayed) still has window to use, and the segment it
 * sends next would be dropped in FREEZE and cost it a 200 ms timeout.
 *
 * Reopen: when a hold ends without a switch, the proxy's socket believes it
 * advertised its real window all along, so it sends no window update of its
 * own; a peer that saw window 0 would wait in persist mode, its probes
 * backing off from 200 ms (docs/DESIGN.md §3c, "staged HOLD").
 *
 * The seq is the socket's snd_nxt: a peer whose receive window is full
 * accepts a pure ACK only at rcv_nxt.
 */
void mmp_tc_announce_window(struct mmp_tc *tc, struct mmp_conn *c, bool to_lb, bool to_upstream, bool zero)
{
	const struct mmp_tc_tuple *to[2] = { &T(c)->tuples[MMP_TC_ROLE_HOLD_CONN1],
					     &T(c)->tuples[MMP_TC_ROLE_HOLD_CONN2] };
	const struct mmp_tc_tuple *from[2] = { &T(c)->tuples[MMP_TC_ROLE_UP], &T(c)->tuples[MMP_TC_ROLE_DOWN] };
	int fds[2] = { c->client.fd, c->upstream.fd };
	bool want[2] = { to_lb, to_upstream };

	for (int i = 0; i < 2; i++) {
		struct mmp_tc_frozen f;
		uint32_t window = 0;

		if (!want[i])
			continue;
		if (mmp_tc_read_sock(tc, fds[i], from[i], &f) || f.ti.tcpi_state != TCP_STATE_ESTABLISHED)
			continue; /* the flow will find out at FREEZE, or is ending anyway */
		if (!zero) /* what is left of the window the socket last advertised, in its scale */
			window = (f.win.rcv_wup + f.win.rcv_wnd - f.rcv_nxt) >> mmp_tc_wscale(&f.ti, false);
		ack_as_socket(tc, to[i], &f, f.snd_nxt, window, i == 1);
	}
}

/*
 * A held peer that was sent our last bytes delays its ACK (up to 40 ms on
 * Linux), since the data that would carry it waits for the window we hold
 * at 0: request/response flows (HTTP keep-alive) missed the first attempt's
 * 40 ms this way, every one, and were taken by the staged one at ~48 ms.
 * Ask for the ACK now, as TCP's own keepalive and window probes do: a pure
 * ACK one byte below what the peer acked is out of its window, and it
 * answers at once with its rcv_nxt (one per peer per attempt: the kernel
 * answers one such segment per 500 ms, tcp_invalid_ratelimit).
 */
void mmp_tc_ask_for_acks(struct mmp_tc *tc, struct mmp_conn *c)
{
	const struct mmp_tc_tuple *to[2] = { &T(c)->tuples[MMP_TC_ROLE_HOLD_CONN1],
					     &T(c)->tuples[MMP_TC_ROLE_HOLD_CONN2] };
	const struct mmp_tc_tuple *from[2] = { &T(c)->tuples[MMP_TC_ROLE_UP], &T(c)->tuples[MMP_TC_ROLE_DOWN] };
	int fds[2] = { c->client.fd, c->upstream.fd };

	for (int i = 0; i < 2; i++) {
		bool held = T(c)->both_held || T(c)->first_held == MMP_TC_ROLE_HOLD_CONN1 + i;
		struct mmp_tc_frozen f;

		if (!held || (T(c)->acks_asked & (1u << i)))
			continue;
		if (mmp_tc_queue_bytes(fds[i], SIOCOUTQ) <= 0)
			continue;
		if (mmp_tc_read_sock(tc, fds[i], from[i], &f) || f.ti.tcpi_state != TCP_STATE_ESTABLISHED ||
		    f.snd_una == f.write_seq || f.snd_nxt != f.write_seq)
			continue; /* all acked since, or not all sent yet: the ACK of what is in flight comes without asking */
		T(c)->acks_asked |= 1u << i;
		ack_as_socket(tc, to[i], &f, f.snd_una - 1, 0, i == 1);
	}
}
