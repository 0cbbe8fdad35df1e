// SPDX-License-Identifier: GPL-2.0
/*
 * A flow waiting for its hand-off keeps its queues small (docs/DESIGN.md §3b,
 * "Bounded queues"): the hand-off drains what the proxy holds, so what it
 * holds must not grow with the peers' buffers.
 */
#include <sys/ioctl.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "core/clock.h"
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"
#include "lib/sockbuf.h"

/*
 * Each socket advertises at most TC_WAIT_WINDOW (TCP_WINDOW_CLAMP) and keeps
 * at most about 2 x TC_WAIT_SNDBUF unacked or unsent (SO_SNDBUF); splice
 * leaves the rest in the peer's own send queue, where flow control slows it.
 * The clamp alone does not hold on 6.18: receive autotuning raises it with
 * the buffer (a 128 KiB clamp, and the receive queue grew to 1.3 MB). So the
 * receive buffer is locked (SO_RCVBUF) at the size it has now: smaller, and
 * segments already inside the window advertised before would be dropped for
 * want of memory (t10: retransmits doubled, reads stalled 270-620 ms).
 * Never larger either: each peer sizes its segments by the largest window
 * it saw, and after the switch it sends into the far peer's window. A proxy
 * socket that offers more than the sockets of its namespace can lets a peer
 * keep segments that a far receiver's window never holds (t55 2c: 192,896
 * bytes offered against 128 KiB buffers; 5-13 of 24 flows then moved one
 * window per 200 ms in the kernel; docs/DESIGN.md §3b, "Bounded queues").
 * Set after the handshake on purpose: a smaller buffer (or clamp) on the
 * listener or before connect() also lowers the window scale the SYN offers
 * (SO_RCVBUF 64 KiB: scale 1 instead of 10), and the translated flow keeps
 * that scale.
 */
static void set_bounds(int fd, int clamp, int rcvbuf, int sndbuf)
{
	/*
	 * SO_RCVBUF caps what it sets at net.core.rmem_max (2 x 4 MiB here),
	 * but autotuning grows the buffer up to tcp_rmem's maximum (32 MiB
	 * here): a flat-out flow's buffer was cut from over 9 MB to 8 MiB
	 * under a window advertised larger, and its in-window segments were
	 * dropped for want of memory (PROTO_MEM; t20: 1-4 a case, then RTOs
	 * and 2 s stalls in 2 of 6 runs). SO_RCVBUFFORCE has no cap; it needs
	 * CAP_NET_ADMIN, which the tc engine has (TCP_REPAIR needs it too).
	 */
	if (rcvbuf > 0)
		mmp_sock_set_rcvbuf(fd, rcvbuf);
	setsockopt(fd, IPPROTO_TCP, TCP_WINDOW_CLAMP, &clamp, sizeof(clamp));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
}

/*
 * What to pass to lock the receive buffer at no less than `at_least` and no
 * less than its size now (SO_RCVBUF takes half what the kernel reports, and
 * doubles it); `at_least` where the size cannot be read (0: leave it).
 */
static int rcvbuf_now(int fd, int at_least)
{
	int v = 0;
	socklen_t len = sizeof(v);

	if (getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, &len) || v / 2 < at_least)
		return at_least;
	return v / 2;
}

void mmp_tc_bound_queues(struct mmp_conn *c)
{
	if (T(c)->bounded)
		return;
	/* At the size it has now, not raised to the clamp (see set_bounds). */
	set_bounds(c->client.fd, TC_WAIT_WINDOW, rcvbuf_now(c->client.fd, 0), TC_WAIT_SNDBUF);
	set_bounds(c->upstream.fd, TC_WAIT_WINDOW, rcvbuf_now(c->upstream.fd, 0), TC_WAIT_SNDBUF);
	T(c)->bounded = true;
	T(c)->small_by_ms = mmp_now_ms() + TC_WAIT_SMALL_MAX_MS;
}

/*
 * A flow that stays on splice gets its window and large buffers back, its
 * receive buffer never smaller than it is (what it holds may be larger than
 * TC_SPLICE_BUF). The lock cannot be undone, so autotuning stays off for it;
 * the send buffer is capped at net.core.wmem_max.
 */
void mmp_tc_unbound_queues(struct mmp_conn *c)
{
	if (!T(c)->bounded)
		return;
	set_bounds(c->client.fd, TC_UNCLAMPED_WINDOW, rcvbuf_now(c->client.fd, TC_SPLICE_BUF), TC_SPLICE_BUF);
	set_bounds(c->upstream.fd, TC_UNCLAMPED_WINDOW, rcvbuf_now(c->upstream.fd, TC_SPLICE_BUF), TC_SPLICE_BUF);
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
