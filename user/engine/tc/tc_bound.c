// SPDX-License-Identifier: GPL-2.0
/*
 * A flow waiting for its hand-off keeps its queues small (docs/DESIGN.md §3b,
 * "Bounded queues"): the hand-off drains or carries what the proxy holds, so
 * what it holds should not grow with the peers' buffers.
 */
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "core/clock.h"
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"

/*
 * Each socket advertises at most TC_WAIT_WINDOW (TCP_WINDOW_CLAMP) and keeps
 * at most about 2 x TC_WAIT_SNDBUF unacked or unsent (SO_SNDBUF); splice
 * leaves the rest in the peer's own send queue, where flow control slows it.
 * The clamp holds until receive autotuning next grows the buffer (6.18 then
 * raises the clamp with it), which is all it must do: what the receive queue
 * holds at the switch is carried across (tc_carry.c).
 *
 * The receive buffer is not locked. It was (SO_RCVBUFFORCE at its size, to
 * keep the clamp), and a locked buffer cannot grow to take what its window
 * already promised: the kernel takes full-sized segments in by its fast
 * path without looking at the buffer, then drops the small one that fills
 * the last unit of window (PROTO_MEM), its memory 9-14 % over the buffer.
 * The load balancer's resend then met a closed window, and after the switch
 * the upstream's (t60 at 200 streams: 3 runs of 5 failed on such losses,
 * with RTOs; unlocked, 0 of 4; docs/benchmarks.md). Unlocked, the kernel
 * grows the buffer to what arrived (tcp_clamp_window).
 *
 * Set after the handshake on purpose: a smaller clamp (or buffer) on the
 * listener or before connect() also lowers the window scale the SYN offers
 * (SO_RCVBUF 64 KiB: scale 1 instead of 10), and the translated flow keeps
 * that scale.
 */
static void set_bounds(int fd, int clamp, int sndbuf)
{
	setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
}

void mmp_tc_bound_queues(struct mmp_conn *c)
{
	if (T(c)->bounded)
		return;
	set_bounds(c->client.fd, TC_WAIT_WINDOW, TC_WAIT_SNDBUF);
	set_bounds(c->upstream.fd, TC_WAIT_WINDOW, TC_WAIT_SNDBUF);
	T(c)->bounded = true;
	T(c)->small_by_ms = mmp_now_ms() + TC_WAIT_SMALL_MAX_MS;
}

/*
 * A flow that stays on splice gets its window and a large send buffer back
 * (capped at net.core.wmem_max); its receive buffer was never touched, and
 * autotuning goes on sizing it.
 */
void mmp_tc_unbound_queues(struct mmp_conn *c)
{
	if (!T(c)->bounded)
		return;
	set_bounds(c->client.fd, TC_UNCLAMPED_WINDOW, TC_SPLICE_BUF);
	set_bounds(c->upstream.fd, TC_UNCLAMPED_WINDOW, TC_SPLICE_BUF);
	T(c)->bounded = false;
}

/*
 * Whether the hand-off should start now. The bound works from the moment it
 * is set, but a receive queue can already hold megabytes by then: a peer that
 * streams at once fills the accepted socket's autotuned buffer while the
 * connection waits to be accepted and its upstream connected (3.4 MB at
 * 0.5 s into stream50 on 2 cores), and the window advertised before the
 * clamp is never taken back. Those bytes drain on splice, never to come
 * back; a hand-off that started earlier would hold both peers at window 0
 * while they drained. So the start waits until both receive queues are
 * within their bound, up to TC_WAIT_SMALL_MAX_MS (200 ms: with 1 s, a median
 * 10 of stream50's 50 flows were in the kernel after 1 s, against 42).
 */
bool mmp_tc_queues_small(struct mmp_conn *c)
{
	if (!T(c)->bounded || mmp_now_ms() >= T(c)->small_by_ms)
		return true;
	return mmp_tc_queue_bytes(c->client.fd, SIOCINQ) <= TC_WAIT_WINDOW &&
	       mmp_tc_queue_bytes(c->upstream.fd, SIOCINQ) <= TC_WAIT_WINDOW;
}
