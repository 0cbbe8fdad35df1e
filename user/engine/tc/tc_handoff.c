// SPDX-License-Identifier: GPL-2.0
/* The tc engine's hand-off: HOLD, drain, FREEZE, SPLICE, close silently (tc_internal.h has the sequence). */
#include <linux/sockios.h>
#include <linux/tcp.h> /* TCP_REPAIR_* */
#include <stdio.h>
#include <sys/ioctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "core/clock.h"
#include "core/lifecycle.h"
#include "core/conn.h"
#include "core/counters.h"
#include "core/histogram.h"
#include "core/loop.h"
#include "engine/tc/tc_carry.h"
#include "engine/tc/tc_frozen.h"
#include "engine/tc/tc_internal.h"
#include "engine/tc/tc_peer_acks.h"
#include "lib/config.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "mmp_tc.h"
#include "tc.skel.h"
#include "engine/engine.h"
#include "engine/tc/tc_packet.h"
#include "lib/lo_sysctls.h"
#include "lib/netlink.h"
#include "lib/sockinfo.h"
#include "steer/reply_steer.h"

#define OPT_MATCH (TCPI_OPT_TIMESTAMPS | TCPI_OPT_SACK | TCPI_OPT_ECN | TCPI_OPT_WSCALE)

/* NULL when the pair can be spliced at the packet level, else why not. */
static const char *ineligible(struct mmp_tc *tc, struct mmp_conn *c)
{
	struct tcp_info a, b;
	bool local_lb;
	struct sockaddr_storage l;
	const char *why;

	if (mmp_tcp_info(c->client.fd, &a) || mmp_tcp_info(c->upstream.fd, &b))
		return "TCP_INFO failed";
	if (a.tcpi_state != TCP_STATE_ESTABLISHED)
		return "the load balancer's connection is not established (it half-closed or reset already)";
	if (b.tcpi_state != TCP_STATE_ESTABLISHED)
		return "the upstream connection is not established (it half-closed or reset already)";
	if ((a.tcpi_options & OPT_MATCH) != (b.tcpi_options & OPT_MATCH))
		return "the two connections negotiated different options (timestamps, SACK, ECN or window scaling)";
	if ((b.tcpi_options & TCPI_OPT_WSCALE) && b.tcpi_rcv_wscale < a.tcpi_snd_wscale)
		return "the upstream connection's window scale is below the load balancer's";
	why = mmp_tc_upstream_path_ineligible(tc, c, &a, &b);
	if (why)
		return why;
	if (mmp_tc_addr_of(c->client.fd, true, &l))
		return "getpeername failed";
	/* A remote load balancer needs the hooks on the interface its packets use. */
	local_lb = mmp_is_local_addr(&l);
	T(c)->oif = 0;
	if (!local_lb) {
		int oif = mmp_route_oif(&l, 0); /* the load balancer's sockets are unmarked */

		if (oif <= 0)
			return "no route back to the load balancer";
		if (!mmp_tc_hooked(tc, oif))
			return "the load balancer's interface is not hooked (add it with --iface)";
		T(c)->oif = oif;
		/*
		 * Its packets are redirected into lo without a route. Early demux
		 * lends them the upstream socket's cached one, but any routing
		 * change in the namespace invalidates that; from then on every
		 * packet is routed, and dropped as a martian (127/8 without
		 * route_localnet) unless lo allows it: the flow would stall for good.
		 */
		if (l.ss_family == AF_INET && !T(c)->up_oif && !mmp_lo_sysctls_ok())
			return "lo's route_localnet/accept_local are off, so packets from a remote load balancer cannot be redirected into lo (fix: mmproxy-bpf setup-routing)";
	}
	return NULL;
}

/* Insert the flow's tuple of role; a tuple left by a flow that ended is taken over. Returns 0 or -1 (errno). */
static int add_tuple(struct mmp_tc *tc, struct mmp_conn *c, int role)
{
	struct mmp_tc_tuple_val tv = { .flow = T(c)->flow, .role = role };
	const struct mmp_tc_tuple *t = &T(c)->tuples[role];
	int err = 0;

	/* The proxy's own sockets send on HOLD tuples until the switch closes them. */
	if (role == MMP_TC_ROLE_HOLD_CONN1 || role == MMP_TC_ROLE_HOLD_CONN2)
		tv.flags = MMP_TC_TUPLE_SOCKET_OPEN;

	/* Bracketed, so that the claim check's "no tuple since the map was empty" stays true (tc_flows.c). */
	mmp_tc_tuples_writing(tc);
	mmp_tc_mark_port(tc, t, (uint32_t)role);
	if (bpf_map_update_elem(tc->tuples_fd, t, &tv, BPF_NOEXIST) &&
	    (errno != EEXIST || !mmp_tc_forget_stale_tuple(tc, t) ||
	     bpf_map_update_elem(tc->tuples_fd, t, &tv, BPF_NOEXIST)))
		err = -1;
	mmp_tc_tuples_written(tc);
	return err;
}

/*
 * The egress hooks look at segments until every hold that starts now has
 * ended (HOLD_MAX_MS, and a second for a loop that runs late): before the
 * first HOLD tuple exists. Loops share the engine: only ever raise it.
 */
static void open_egress_hooks(struct mmp_tc *tc)
{
	__u64 *until = (__u64 *)&tc->skel->bss->mmp_tc_egress_until_ns;
	__u64 want = mmp_now_ns() + (HOLD_MAX_MS + 1000) * 1000000ULL, cur = __atomic_load_n(until, __ATOMIC_RELAXED);

	while (cur < want && !__atomic_compare_exchange_n(until, &cur, want, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
}

/* What each receiver had acked when the flow's first attempt began (note_reading). */
static void note_acked_at_start(struct mmp_conn *c)
{
	struct tcp_info a, b;

	T(c)->acked_seen[0] = T(c)->acked_seen[1] = UINT64_MAX; /* unknown: reads nothing */
	if (mmp_tcp_info(c->client.fd, &a) || mmp_tcp_info(c->upstream.fd, &b))
		return;
	T(c)->acked_seen[0] = b.tcpi_bytes_acked;
	T(c)->acked_seen[1] = a.tcpi_bytes_acked;
}

void mmp_tc_begin(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_tc *tc = tc_of(c);
	struct mmp_tc_flow flow = { .mode = MMP_TC_MODE_HOLD };
	struct flow_tuples ft;
	char a[MMP_ADDRSTRLEN];
	const char *why;

	if (c->state != CONN_SPLICING)
		return;
	why = ineligible(tc, c);
	if (!why && mmp_tc_flow_tuples(c, &ft))
		why = "the two connections are of different IP families";
	if (!why && mmp_sock_cookie(c->client.fd, &T(c)->flow))
		why = "SO_COOKIE failed";
	if (why) {
		mmp_count(loop->counters, MMP_TCP_CNT_tc_ineligible, 1);
		mmp_tc_unbound_queues(c);
		pr_debug("tc engine: client %s stays on splice: %s", mmp_conn_client_name(c, a), why);
		return;
	}
	mmp_tc_set_paths(tc, c, &flow);
	open_egress_hooks(tc);
	flow.st.last_seen_ns = mmp_now_ns(); /* the hand-off's age, should this instance die in it */
	if (bpf_map_update_elem(tc->flows_fd, &T(c)->flow, &flow, BPF_NOEXIST))
		goto full;
	/*
	 * The first attempt holds both peers at once: the quickest hand-off
	 * (t10: p50 1.4 ms against 3.5 ms in two stages). A flow that did not
	 * quiet down that way is tried again holding one peer first, the other
	 * once that direction drained: the load balancer first, then the
	 * upstream first, in turn, so a peer that reads only while it can write
	 * (an echo service) keeps reading while its direction drains.
	 */
	T(c)->first_held = T(c)->attempts % 2 ? MMP_TC_ROLE_HOLD_CONN1 : MMP_TC_ROLE_HOLD_CONN2;
	T(c)->both_held = T(c)->attempts == 0;
	memcpy(T(c)->tuples, ft.t, sizeof(T(c)->tuples));
	if (add_tuple(tc, c, MMP_TC_ROLE_UP) || add_tuple(tc, c, MMP_TC_ROLE_DOWN) ||
	    add_tuple(tc, c, T(c)->first_held) ||
	    (T(c)->both_held && add_tuple(tc, c, MMP_TC_ROLE_HOLD_CONN1 + MMP_TC_ROLE_HOLD_CONN2 - T(c)->first_held)))
		goto full;
	T(c)->holding = true;
	T(c)->attempts++;
	T(c)->quiet = 0;
	T(c)->acks_asked = 0;
	T(c)->hole_seen = false;
	T(c)->start_ns = mmp_now_ns();
	T(c)->deadline_ms = mmp_now_ms() + (T(c)->both_held ? HOLD_BOTH_TIMEOUT_MS : HOLD_TIMEOUT_MS);
	T(c)->hold_end_ms = mmp_now_ms() + HOLD_MAX_MS;
	T(c)->pending_best = UINT64_MAX;
	T(c)->free_acked = 0;
	T(c)->zero_ms = T(c)->both_held ? 0 : mmp_now_ms();
	T(c)->rx_ms = 0;
	if (T(c)->attempts == 1)
		note_acked_at_start(c);
	/*
	 * A staged hold must stop the first peer now: a stream keeps the proxy's
	 * segments toward it rare, and until one carries window 0 it goes on
	 * filling the window it has, so its direction never drains.
	 */
	if (!T(c)->both_held)
		mmp_tc_announce_window(tc, c, T(c)->first_held == MMP_TC_ROLE_HOLD_CONN1,
				T(c)->first_held == MMP_TC_ROLE_HOLD_CONN2, true);
	mmp_loop_poll_add(loop, c);
	return;
full:
	/* Never evict a live flow: a full map only means this one stays on splice. */
	mmp_count(loop->counters, MMP_TCP_CNT_tc_ineligible, 1);
	pr_conn("tc engine: flow maps full or entry exists (%s); client %s stays on splice (raise --tc-max-flows)",
		strerror(errno), mmp_conn_client_name(c, a));
	mmp_tc_delete_flow(tc, T(c)->flow, &ft);
}

void mmp_tc_abort(struct mmp_loop *loop, struct mmp_conn *c, const char *why)
{
	struct flow_tuples ft;
	char a[MMP_ADDRSTRLEN];

	if (!T(c)->holding)
		return;
	T(c)->holding = false;
	/*
	 * The tuples saved at the start, not getsockname(): a socket that died
	 * has no name any more, and its entries would leak (regression).
	 */
	memcpy(ft.t, T(c)->tuples, sizeof(ft.t));
	mmp_tc_delete_flow(tc_of(c), T(c)->flow, &ft);
	/* A flow that goes on in splice: the peers held at window 0 learn the real one now. */
	if (c->state == CONN_SPLICING)
		mmp_tc_announce_window(tc_of(c), c, T(c)->both_held || T(c)->first_held == MMP_TC_ROLE_HOLD_CONN1,
				T(c)->both_held || T(c)->first_held == MMP_TC_ROLE_HOLD_CONN2, false);
	mmp_count(loop->counters, MMP_TCP_CNT_tc_aborted, 1);
	pr_debug("tc engine: hand-off of client %s aborted (%s): staying on splice", mmp_conn_client_name(c, a), why);
}

/*
 * Nothing of one direction is left anywhere: up (client -> upstream) is the
 * load balancer's receive queue, what the flow's engine buffers, and the
 * upstream socket's send queue; down is the reverse.
 */

/* Bytes of one direction still queued: the sending peer's socket in, the engine, the receiving peer's socket out. */
static uint64_t direction_pending(const struct mmp_tc_queues *q, bool up)
{
	int in = q->in[up ? 0 : 1], out = q->out[up ? 1 : 0];

	return q->d.buffered[up ? 0 : 1] + (uint64_t)(in > 0 ? in : 0) + (uint64_t)(out > 0 ? out : 0);
}

/* An unreadable queue (-1) is not quiet. */
static bool direction_quiet(const struct mmp_tc_queues *q, bool up)
{
	return q->d.buffered[up ? 0 : 1] == 0 && q->in[up ? 0 : 1] == 0 && q->out[up ? 1 : 0] == 0;
}

/*
 * A hold gives up only when its queues stopped shrinking for its stall time
 * (a peer that does not read), never while they drain, however much was
 * queued (a stream fills every buffer on the way: megabytes that the peers
 * take at their own pace), up to HOLD_MAX_MS in all.
 */
static void extend_deadline(struct mmp_conn *c)
{
	uint64_t now = mmp_now_ms(), stall = T(c)->attempts == 1 ? HOLD_BOTH_TIMEOUT_MS : HOLD_TIMEOUT_MS;

	if (now + stall > T(c)->deadline_ms)
		T(c)->deadline_ms = now + stall;
	if (T(c)->deadline_ms > T(c)->hold_end_ms)
		T(c)->deadline_ms = T(c)->hold_end_ms;
}

static void note_progress(struct mmp_conn *c, uint64_t pending)
{
	if (pending >= T(c)->pending_best)
		return;
	T(c)->pending_best = pending;
	extend_deadline(c);
}

/*
 * The first stage of a staged hold also progresses while the peer that is not
 * held takes data. Behind an echo upstream the held direction's last bytes
 * wait for the echo to write, so they move only as fast as the load balancer
 * reads the other direction: with every buffer full (stream50: megabytes
 * queued toward the load balancer) that took longer than the stall time while
 * nothing was wrong, and the attempt was given up (docs/benchmarks.md,
 * "stream50").
 */
static void note_free_direction(struct mmp_conn *c, bool lb_held)
{
	struct tcp_info ti;
	/* Held load balancer: the upstream's bytes go on to it, acknowledged on conn1; held upstream: on conn2. */
	int fd = lb_held ? c->client.fd : c->upstream.fd;

	if (mmp_tcp_info(fd, &ti))
		return;
	if (ti.tcpi_bytes_acked > T(c)->free_acked) {
		if (T(c)->free_acked)
			extend_deadline(c);
		T(c)->free_acked = ti.tcpi_bytes_acked;
	}
}

/* Nothing queued anywhere: both sockets' receive and send queues, and what the flow's engine buffers. */
static bool quiet(const struct mmp_tc_queues *q)
{
	return direction_quiet(q, true) && direction_quiet(q, false);
}

/*
 * Both directions' translation from the frozen state (1 = conn1 L<->P, 2 =
 * conn2 C<->U). end2 and end1: where conn2's and conn1's streams end once the
 * bytes carried to the upstream and to the load balancer are counted: the
 * peers' new bytes continue from there.
 */
static void build_flow(struct mmp_tc_flow *flow, const struct flow_tuples *ft, const struct mmp_tc_frozen *f1,
		       const struct mmp_tc_frozen *f2, uint32_t end1, uint32_t end2)
{
	bool ts = f1->ti.tcpi_options & TCPI_OPT_TIMESTAMPS;
	bool sack = f1->ti.tcpi_options & TCPI_OPT_SACK;

	memset(flow, 0, sizeof(*flow));
	flow->mode = MMP_TC_MODE_SPLICE;
	/* L->P becomes C->U: L's bytes continue conn2's stream; L's acks cover U's bytes. */
	flow->up.out = ft->t[MMP_TC_ROLE_HOLD_CONN2];
	flow->up.seq_delta = end2 - f1->rcv_nxt;
	flow->up.ack_delta = f2->rcv_nxt - end1;
	flow->up.ts_base = f2->tsval + TS_MARGIN;
	/* L's next TSvals are >= the last one conn1 accepted: translated, >= ts_base. */
	flow->up.tsval_delta = ts ? flow->up.ts_base - f1->ts_recent : 0;
	flow->up.wscale_in = mmp_tc_wscale(&f1->ti, true);
	flow->up.wscale_out = mmp_tc_wscale(&f2->ti, false);
	/* U->C becomes P->L. */
	flow->down.out = ft->t[MMP_TC_ROLE_HOLD_CONN1];
	flow->down.seq_delta = end1 - f2->rcv_nxt;
	flow->down.ack_delta = f1->rcv_nxt - end2;
	flow->down.ts_base = f1->tsval + TS_MARGIN;
	flow->down.tsval_delta = ts ? flow->down.ts_base - f2->ts_recent : 0;
	flow->down.wscale_in = mmp_tc_wscale(&f2->ti, true);
	flow->down.wscale_out = mmp_tc_wscale(&f1->ti, false);
	flow->up.timestamps = flow->down.timestamps = ts;
	flow->up.sack = flow->down.sack = sack;
}

/*
 * An RST that arrived between the state check and the SPLICE write hit a
 * frozen socket: nothing will ever translate it. Reset the other peer
 * ourselves and forget the flow. Returns true when that happened.
 */
static bool reset_during_switch(struct mmp_loop *loop, struct mmp_conn *c, const struct mmp_tc_flow *flow,
				const struct mmp_tc_frozen *f1, const struct mmp_tc_frozen *f2, const struct flow_tuples *ft)
{
	struct mmp_tc *tc = tc_of(c);
	struct tcp_info a, b;
	struct mmp_tc_ack rst = { .flags = 0x14 }; /* RST|ACK */
	int fd = flow->up.out.family == 4 ? tc->raw4 : tc->raw6;
	char name[MMP_ADDRSTRLEN];

	if (mmp_tcp_info(c->client.fd, &a) || mmp_tcp_info(c->upstream.fd, &b))
		return false;
	if (a.tcpi_state == TCP_STATE_ESTABLISHED && b.tcpi_state == TCP_STATE_ESTABLISHED)
		return false;
	if (a.tcpi_state != TCP_STATE_ESTABLISHED) {
		/* The load balancer reset conn1: reset the upstream, from the client. */
		rst.tuple = flow->up.out;
		rst.mark = tc->cfg->mark;
		rst.seq = f2->write_seq;
		rst.ack = f2->rcv_nxt;
	} else {
		rst.tuple = flow->down.out;
		rst.seq = f1->write_seq;
		rst.ack = f1->rcv_nxt;
	}
	mmp_tc_send_ack(fd, &rst);
	mmp_tc_delete_flow(tc, T(c)->flow, ft);
	T(c)->holding = false;
	pr_debug("tc engine: hand-off of client %s aborted (a reset arrived during the switch): forwarded it",
		 mmp_conn_client_name(c, name));
	mmp_count(loop->counters, MMP_TCP_CNT_resets_forwarded, 1);
	/* The hand-off has an outcome like any other: every flow is counted once. */
	mmp_count(loop->counters, MMP_TCP_CNT_tc_aborted, 1);
	mmp_conn_close(loop, c, MMP_CLOSE_FIN);
	return true;
}

/*
 * The proxy's own tuples once its sockets are closed: until then the
 * programs dropped what the sockets sent on them (MMP_TC_TUPLE_SOCKET_OPEN).
 * The window updates reuse them. Carried segments are sent on them too, and
 * while there are any the programs refresh their acks on the way out: the
 * carrier forgets the tuples when it is done (tc_carry.c). Without a carry
 * they go now.
 */
static void release_hold_tuples(struct mmp_tc *tc, const struct flow_tuples *ft, bool carrying)
{
	for (int role = MMP_TC_ROLE_HOLD_CONN1; role <= MMP_TC_ROLE_HOLD_CONN2; role++) {
		struct mmp_tc_tuple_val tv;

		if (!carrying) {
			bpf_map_delete_elem(tc->tuples_fd, &ft->t[role]);
		} else if (bpf_map_lookup_elem(tc->tuples_fd, &ft->t[role], &tv) == 0) {
			tv.flags &= ~MMP_TC_TUPLE_SOCKET_OPEN;
			bpf_map_update_elem(tc->tuples_fd, &ft->t[role], &tv, BPF_EXIST);
		}
	}
}

/* Another attempt later, while the flow has attempts left: the next one staged, then backing off. */
static void retry_later(struct mmp_loop *loop, struct mmp_conn *c)
{
	if (T(c)->attempts >= HOLD_ATTEMPTS) {
		mmp_tc_unbound_queues(c); /* on splice for good: its full windows back */
		return;
	}
	T(c)->retry_ms = mmp_now_ms() + (T(c)->attempts == 1 ? HOLD_STAGED_RETRY_MS
							   : (uint64_t)HOLD_RETRY_MS << (T(c)->attempts - 2));
	mmp_loop_poll_add(loop, c);
}

/* "WHAT; queued: ...": every queue of the flow, for an abort's log line. */
static void describe_queues(const struct mmp_tc_queues *q, const char *what, char *buf, size_t len)
{
	snprintf(buf, len, "%s; queued: load balancer in %d out %d, upstream in %d out %d, proxy %zu up %zu down", what,
		 q->in[0], q->out[0], q->in[1], q->out[1], q->d.buffered[0], q->d.buffered[1]);
}

/*
 * Both sockets into repair mode and their state read, and what the switch
 * carries across planned: NULL, or why the flow cannot switch, in why[]. A
 * FIN or RST that reached a socket before the freeze leaves it not
 * ESTABLISHED: that flow stays on splice, which forwards it. *late_data: only
 * bytes still in flight were in the way (landed late, beyond a receiver's
 * window, or out of order behind a hole), so another try may pass.
 */
static const char *freeze_sockets(struct mmp_conn *c, struct mmp_tc_frozen *f1, struct mmp_tc_frozen *f2,
				  struct mmp_tc_carry_plan *cp, char *why, size_t len, bool *late_data)
{
	struct mmp_tc *tc = tc_of(c);
	struct mmp_tc_queues q;
	int err;

	*late_data = false;

	if ((err = mmp_tc_set_repair(c->client.fd, 1)) || (err = mmp_tc_set_repair(c->upstream.fd, 1)))
		snprintf(why, len, "TCP_REPAIR failed: %s", strerror(-err));
	else if ((err = mmp_tc_read_sock(tc, c->client.fd, &T(c)->tuples[MMP_TC_ROLE_UP], f1)) ||
		 (err = mmp_tc_read_sock(tc, c->upstream.fd, &T(c)->tuples[MMP_TC_ROLE_DOWN], f2)))
		snprintf(why, len, "reading the frozen sockets' state failed: %s", strerror(-err));
	else if (f1->ti.tcpi_state != TCP_STATE_ESTABLISHED || f2->ti.tcpi_state != TCP_STATE_ESTABLISHED)
		snprintf(why, len, "a FIN or RST arrived while freezing (TCP state: load balancer's %u, upstream's %u)",
			 f1->ti.tcpi_state, f2->ti.tcpi_state);
	else if ((mmp_tc_read_queues(c, &q), mmp_tc_plan_carry(c, f1, f2, &q, cp)))
		snprintf(why, len, "reading the frozen sockets' queues failed");
	else if (!cp->fits[0] || !cp->fits[1]) {
		*late_data = true;
		describe_queues(&q, "what is queued no longer fits a receiver's window", why, len);
	} else if (f1->ofo || f2->ofo) {
		/*
		 * A segment was lost (a full buffer dropped it) and what came after
		 * waits out of order, acked to its sender by SACK. Closed, the
		 * socket would lose those bytes; the sender would not send them
		 * again until its timer found the SACK reneged (an RTO). On splice
		 * its fast retransmit fills the hole.
		 */
		*late_data = true;
		snprintf(why, len, "the %s socket holds bytes out of order behind a lost segment",
			 f1->ofo ? "load balancer's" : "upstream's");
	} else {
		return NULL;
	}
	return why;
}

/* Back to the live sockets after a failed freeze; leaving repair mode sends a window probe. */
static void unfreeze(struct mmp_loop *loop, struct mmp_conn *c, const char *why, bool again)
{
	mmp_tc_set_repair(c->client.fd, 0);
	mmp_tc_set_repair(c->upstream.fd, 0);
	mmp_tc_abort(loop, c, why);
	if (again)
		retry_later(loop, c);
}

/*
 * Freeze both sockets, switch the flow to SPLICE with what they still hold
 * carried across, close the sockets silently.
 */
static void switch_over(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_tc *tc = tc_of(c);
	struct mmp_tc_worker *w = c->takeover->worker;
	struct mmp_tc_flow flow = { .mode = MMP_TC_MODE_FREEZE };
	struct mmp_tc_stats *st = &flow.st;
	struct mmp_tc_carrier *cr = NULL;
	struct flow_tuples ft;
	struct mmp_tc_frozen f1, f2;
	struct mmp_tc_carry_plan cp;
	char a[MMP_ADDRSTRLEN], why[192];
	uint32_t end1, end2, room[2];
	uint64_t took_us;
	bool late_data;
	int err;

	memcpy(ft.t, T(c)->tuples, sizeof(ft.t));
	mmp_tc_set_paths(tc, c, &flow);
	st->last_seen_ns = mmp_now_ns(); /* still the age of a hand-off (mmp_tc_collect) */
	if (bpf_map_update_elem(tc->flows_fd, &T(c)->flow, &flow, BPF_EXIST)) {
		mmp_tc_abort(loop, c, "flow entry vanished");
		return;
	}
	/*
	 * A segment another CPU let through just before FREEZE is still on its
	 * way into the socket: give it time to land, so the state we read next
	 * includes it.
	 */
	usleep(FREEZE_SETTLE_US);
	if (freeze_sockets(c, &f1, &f2, &cp, why, sizeof(why), &late_data)) {
		/* A segment that landed late is no reason to keep a live flow off the kernel path. */
		unfreeze(loop, c, why, late_data);
		return;
	}
	err = mmp_tc_carry_prepare(c, &f1, &f2, &cp, &cr);
	if (err) {
		mmp_tc_carrier_free(cr);
		snprintf(why, sizeof(why), "reading the bytes to carry across failed: %s", strerror(-err));
		unfreeze(loop, c, why, true);
		return;
	}
	end2 = f2.snd_una + cr->dir[0].len;
	end1 = f1.snd_una + cr->dir[1].len;
	/*
	 * The window each peer may send into: its receiver's, or 0 while bytes
	 * of its own are carried to that receiver, until they are all acked
	 * (carry_clamp in bpf/tc.bpf.c keeps it there; docs/DESIGN.md §3b,
	 * "Window 0 behind a carry").
	 */
	room[0] = cr->dir[0].len ? 0 : f2.win.snd_wnd;
	room[1] = cr->dir[1].len ? 0 : f1.win.snd_wnd;
	build_flow(&flow, &ft, &f1, &f2, end1, end2);
	mmp_tc_set_paths(tc, c, &flow);
	flow.carrying = (cr->dir[0].len ? MMP_TC_CARRY_UP : 0) | (cr->dir[1].len ? MMP_TC_CARRY_DOWN : 0);
	cr->flow = T(c)->flow;
	mmp_tc_carrier_header(&cr->dir[0], &flow.up, &f2, room[1], !T(c)->up_oif, tc->cfg->mark);
	mmp_tc_carrier_header(&cr->dir[1], &flow.down, &f1, room[0], !T(c)->oif, 0);
	/* Nothing is translated yet (FREEZE): the idle clock starts now. */
	st->last_seen_ns = mmp_now_ns();
	/* What each receiver expects next, and its window: RSTs and FINs are judged by them. */
	st->snd_nxt[0] = f1.rcv_nxt;
	st->snd_nxt[1] = f2.rcv_nxt;
	st->rcv_wnd[0] = f2.win.snd_wnd;
	st->rcv_wnd[1] = f1.win.snd_wnd;
	if (flow.carrying && (err = mmp_tc_carry_publish(tc, c, cr, &f1, &f2))) {
		mmp_tc_carrier_free(cr);
		snprintf(why, sizeof(why), "the carry's entry could not be written: %s", strerror(-err));
		unfreeze(loop, c, why, true);
		return;
	}
	/*
	 * The engine's bytes leave it now, the sockets' were only peeked: from
	 * here on the switch cannot be undone without losing them.
	 */
	if ((err = mmp_tc_carry_take(c, 0, &cr->dir[0])) || (err = mmp_tc_carry_take(c, 1, &cr->dir[1]))) {
		pr_err("tc engine: client %s: taking the spliced bytes to carry across failed: %s; the connection is reset",
		       mmp_conn_client_name(c, a), strerror(-err));
		mmp_tc_carrier_free(cr);
		bpf_map_delete_elem(tc->carry_fd, &T(c)->flow);
		unfreeze(loop, c, "the spliced bytes were lost", false);
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return;
	}
	/* The last time userspace writes this entry: from here the programs own its stats. */
	if (bpf_map_update_elem(tc->flows_fd, &T(c)->flow, &flow, BPF_EXIST)) {
		mmp_tc_carrier_free(cr);
		bpf_map_delete_elem(tc->carry_fd, &T(c)->flow);
		unfreeze(loop, c, "switching the flow failed", false);
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return;
	}
	if (reset_during_switch(loop, c, &flow, &f1, &f2, &ft)) {
		mmp_tc_carrier_free(cr);
		return;
	}
	T(c)->holding = false;
	took_us = (mmp_now_ns() - T(c)->start_ns) / 1000;
	mmp_count(loop->counters, MMP_TCP_CNT_tc_flows, 1);
	/* Issue 24's target, counted where stats --json reads it: every long flow in the kernel 1 s after its start. */
	if (mmp_now_ms() - c->accepted_ms <= TC_WITHIN_MS)
		mmp_count(loop->counters, MMP_TCP_CNT_tc_within_1s, 1);
	if (T(c)->up_oif)
		mmp_count(loop->counters, MMP_TCP_CNT_tc_beyond_loopback, 1);
	mmp_hist_record(&mmp_handoff_latency, took_us); /* mmproxy_handoff_duration_seconds */
	pr_debug("tc engine: client %s spliced in the kernel after %llu us (seq +%u/+%u, wscale %u>%u %u>%u, carried %u up %u down)",
		 mmp_conn_client_name(c, a), (unsigned long long)took_us, flow.up.seq_delta, flow.down.seq_delta,
		 flow.up.wscale_in, flow.up.wscale_out, flow.down.wscale_in, flow.down.wscale_out, cr->dir[0].len,
		 cr->dir[1].len);
	if (flow.carrying) {
		mmp_count(loop->counters, MMP_TCP_CNT_tc_carried, 1);
		mmp_count(loop->counters, MMP_TCP_CNT_tc_carried_bytes, (uint64_t)cr->dir[0].len + cr->dir[1].len);
		/* Two round trips (tcpi_rtt is in us), at least TC_CARRY_RTO_MIN_MS. */
		cr->rto_base_ms = (f1.ti.tcpi_rtt > f2.ti.tcpi_rtt ? f1.ti.tcpi_rtt : f2.ti.tcpi_rtt) / 500;
	}
	/* Closing in repair mode sends nothing: no FIN, no RST. */
	mmp_conn_close(loop, c, MMP_CLOSE_FIN);
	release_hold_tuples(tc, &ft, flow.carrying);
	/* The carried bytes first: the peers' new ones, sent after the window updates, land behind them. */
	if (flow.carrying)
		mmp_tc_carry_start(w, cr);
	else
		mmp_tc_carrier_free(cr);
	mmp_tc_send_window_updates(tc, &flow, &f1, &f2, room);
}

/* HOLD did not quiet down before its deadline: back to splice, and maybe again later. */
static void give_up(struct mmp_loop *loop, struct mmp_conn *c, const struct mmp_tc_queues *q)
{
	char why[192];

	/* Which queue stayed full tells the operator which peer stopped reading. */
	describe_queues(q, T(c)->hole_seen ? "a socket still held bytes out of order behind a lost segment"
			   : T(c)->both_held ? "the flow did not quiet down in time"
					     : "the first held direction did not drain in time",
			why, sizeof(why));
	mmp_tc_abort(loop, c, why);
	retry_later(loop, c);
}

/*
 * The first stage of HOLD: only the first held peer sees window 0, and the
 * direction it sends must drain. Returns true once it has, twice in a row,
 * and the other peer is held too.
 */
static bool first_stage_done(struct mmp_loop *loop, struct mmp_conn *c, const struct mmp_tc_queues *q)
{
	bool lb_first = T(c)->first_held == MMP_TC_ROLE_HOLD_CONN1;
	int second = lb_first ? MMP_TC_ROLE_HOLD_CONN2 : MMP_TC_ROLE_HOLD_CONN1;

	/*
	 * Done when its direction drained, or when the held peer settled and
	 * what its direction holds fits the receiver's window: the switch
	 * carries it across.
	 */
	if (!direction_quiet(q, lb_first)) {
		uint64_t pending = direction_pending(q, lb_first);

		T(c)->quiet = 0;
		if (!(mmp_tc_carry_worth(c, pending) && mmp_tc_settled(c, lb_first, !lb_first) &&
		      mmp_tc_carry_fits(c, q, lb_first, !lb_first))) {
			note_progress(c, pending);
			note_free_direction(c, lb_first);
			return false;
		}
	} else if (++T(c)->quiet < 2) {
		mmp_tc_announce_window(tc_of(c), c, lb_first, !lb_first, true);
		return false;
	}
	if (add_tuple(tc_of(c), c, second)) {
		mmp_tc_abort(loop, c, "the second hold entry could not be added");
		return false;
	}
	T(c)->both_held = true;
	T(c)->quiet = 0;
	mmp_tc_announce_window(tc_of(c), c, !lb_first, lb_first, true); /* the second peer stops now too */
	T(c)->zero_ms = mmp_now_ms();
	T(c)->rx_ms = 0;
	T(c)->deadline_ms = mmp_now_ms() + HOLD_TIMEOUT_MS;
	if (T(c)->deadline_ms > T(c)->hold_end_ms)
		T(c)->deadline_ms = T(c)->hold_end_ms;
	T(c)->pending_best = UINT64_MAX;
	return true;
}

/*
 * Is a hole in the way of the switch? A socket that lost a segment holds
 * what followed out of order, and a freeze then fails (freeze_sockets). Its
 * sender fills the hole within a round trip or two (SACK, RACK; a held peer
 * still resends below its window 0), so the hold waits for it, within its
 * deadline, instead of giving the attempt up. On a link that loses and
 * reorders, the attempts that gave up at the freeze failed again and again:
 * t48 1b saw one flow of 4 abort 5 times over its 4 s and never reach the
 * kernel (docs/benchmarks.md, 2026-12-07, seventh). An unreadable socket is
 * not a hole: the freeze reads it again and decides. The quiet path asks
 * here; a carry's readiness check asks from its own read of the sockets.
 */
static bool hole_pending(struct mmp_conn *c)
{
	struct mmp_tc_frozen f1, f2;

	if (mmp_tc_read_sock(tc_of(c), c->client.fd, &T(c)->tuples[MMP_TC_ROLE_UP], &f1) ||
	    mmp_tc_read_sock(tc_of(c), c->upstream.fd, &T(c)->tuples[MMP_TC_ROLE_DOWN], &f2))
		return false;
	T(c)->hole_seen = f1.ofo || f2.ofo;
	return T(c)->hole_seen;
}

/* Not ready yet: look again at the next check, or give the attempt up past its deadline. */
static void wait_more(struct mmp_loop *loop, struct mmp_conn *c, const struct mmp_tc_queues *q)
{
	if (mmp_now_ms() > T(c)->deadline_ms)
		give_up(loop, c, q);
	else
		mmp_loop_poll_add(loop, c);
}

/* One look per check: the queues read here decide the drain and the carry alike. */
void mmp_tc_check(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_tc_queues q;

	if (!T(c)->holding || c->state != CONN_SPLICING)
		return;
	mmp_tc_read_queues(c, &q);
	if (q.d.fin_seen) {
		mmp_tc_abort(loop, c, "a FIN arrived during the hand-off");
		return;
	}
	mmp_tc_ask_for_acks(tc_of(c), c);
	if (!T(c)->both_held && !first_stage_done(loop, c, &q)) {
		if (!T(c)->holding)
			return; /* aborted */
		wait_more(loop, c, &q);
		return;
	}
	if (!quiet(&q)) {
		uint64_t pending = direction_pending(&q, true) + direction_pending(&q, false);

		T(c)->quiet = 0;
		if (mmp_tc_carry_worth(c, pending) && mmp_tc_carry_ready(c, &q)) {
			switch_over(loop, c);
			return;
		}
		note_progress(c, pending);
		wait_more(loop, c, &q);
		return;
	}
	/* Twice in a row: a segment in flight at the first look has landed by the second. */
	if (++T(c)->quiet < 2) {
		mmp_tc_announce_window(tc_of(c), c, true, true, true);
		mmp_loop_poll_add(loop, c);
		return;
	}
	if (hole_pending(c)) {
		wait_more(loop, c, &q);
		return;
	}
	switch_over(loop, c);
}
