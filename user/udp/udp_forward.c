// SPDX-License-Identifier: GPL-2.0
/*
 * The forward path of the UDP relay: load balancer -> upstream.
 *
 * recvmmsg up to UDP_BATCH datagrams from the listen socket, classify each,
 * stage its payload on its flow, then per flow send the staged payloads in
 * arrival order: runs of equal-sized payloads as one UDP_SEGMENT (GSO) send,
 * the rest with one sendmmsg. A GSO train crosses the stack once and is split
 * on delivery, which is what makes it cheaper than one send per datagram.
 * A kernel that refuses UDP_SEGMENT for the path (EINVAL, EMSGSIZE: over the
 * path MTU; EIO: no checksum offload) gets the datagrams one by one, and
 * that flow stops trying GSO.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include "lib/log.h"
#include "policy/policy.h"
#include "lib/sockaddr.h"
#include "udp/udp_classify.h"
#include "udp/fast/udp_fast.h"
#include "udp/udp_rx.h"
#include "udp/udp_drop.h"
#include "udp/udp_forward.h"
#include "udp/udp_lifecycle.h"
#include "udp/udp_stage.h"
#include "udp/udp_thread.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/* Listen-socket reads per wakeup before the loop looks at replies and timers again. */
#define LISTEN_ROUNDS 4

static const char *hint_for(enum mmp_udp_counter c)
{
	switch (c) {
	case MMP_UDP_CNT_drop_not_allowed:
		return "add its subnet to the -a file if it is your load balancer";
	case MMP_UDP_CNT_drop_no_header:
		return "is the load balancer configured for this --udp-header?";
	case MMP_UDP_CNT_drop_no_flow:
		return "a flow starts with a header; it may have closed after -c seconds idle";
	case MMP_UDP_CNT_drop_bad_client:
		return "the load balancer named a client address that cannot be used";
	case MMP_UDP_CNT_drop_too_big:
		return "over 64 KiB";
	case MMP_UDP_CNT_drop_endpoint:
		return "add its aws:, azure: or gcp: ID to the --allowed-endpoints file";
	default:
		return "is the load balancer sending PROXY v2 DGRAM or SPP headers? check --udp-header";
	}
}

/*
 * An LB that keeps sending headers the program leaves alone (TLVs, an IPv6
 * form) would stop the kernel on every datagram: after this many re-arms
 * the flow stays in userspace.
 */
#define MAX_STALE_REARMS 8

/*
 * What the fast path told us with the datagram's mark: DRAIN, count it for
 * the hand-over; STALE, the kernel stopped on another header: re-arm the
 * entry once userspace has dealt with this one (udp_flows_to_kernel).
 */
static void fast_mark(struct udp_worker *w, struct udp_flow *f, uint32_t mark, int ifindex)
{
	bool was_fast = f->fast;

	if ((mark & MMP_UDP_MARK_DRAIN_MASK) == MMP_UDP_MARK_DRAIN_FWD) {
		udp_flow_drained(w, f, false, MMP_UDP_MARK_DRAIN_SEQ(mark));
		return;
	}
	if (mark != MMP_UDP_MARK_STALE || !f->fast_fwd)
		return;
	udp_fast_fwd_missed(f);
	if (was_fast && !f->fast)
		udp_cnt_sub(w, MMP_UDP_CNT_flows_fast, 1);
	if (++f->stale_rearms <= MAX_STALE_REARMS)
		udp_flow_want_kernel(w, f, ifindex);
}

/*
 * --allowed-endpoints: a PROXY v2 header must name a listed endpoint in its
 * TLVs; an SPP header has none to name. Header-less datagrams of an open
 * flow ride on the header that opened it.
 */
static bool endpoint_allowed(const struct udp_worker *w, const struct udp_dgram_info *info)
{
	struct pp_header h = { .version = 2, .command = PP_CMD_PROXY };

	if (!w->cfg->allowed_endpoints_path)
		return true;
	if (info->kind == UDP_K_SPP)
		return false;
	h.tlv = info->tlv;
	return mmp_policy_endpoint_allowed(w->sh->policy, &h);
}

/* One datagram (or GRO segment) from load balancer lb. */
static void on_dgram(struct udp_worker *w, const uint8_t *p, uint32_t len, const struct udp_ep *lb,
		     const struct sockaddr_storage *lb_sa, socklen_t lb_salen, const struct udp_ep *local, int ifindex,
		     uint32_t mark)
{
	struct udp_flow *f = udp_ft_by_lb(&w->ft, lb), *g;
	struct udp_dgram_info info;
	struct udp_ep client;

	udp_cnt_add(w, MMP_UDP_CNT_rx_dgrams, 1);
	udp_cnt_add(w, MMP_UDP_CNT_rx_bytes, len);
	udp_classify(w->cfg->udp_header, p, len, f != NULL, &info);
	switch (info.kind) {
	case UDP_K_DROP:
		udp_drop(w, info.drop, lb, info.why, hint_for(info.drop));
		return;
	case UDP_K_PAYLOAD:
		if (f)
			break;
		if (!mmp_policy_allowed(w->sh->policy, (const struct sockaddr *)lb_sa))
			goto not_allowed;
		if (info.sig_prefix)
			udp_drop(w, MMP_UDP_CNT_drop_truncated, lb, "PROXY v2 signature cut short",
				 hint_for(MMP_UDP_CNT_drop_truncated));
		else
			udp_drop(w, MMP_UDP_CNT_drop_no_flow, lb, "no header and no flow for this load-balancer ip:port",
				 hint_for(MMP_UDP_CNT_drop_no_flow));
		return;
	case UDP_K_LOCAL:
		if (f && f->format == MMP_UDP_FMT_LOCAL)
			break;
		goto slow;
	case UDP_K_V2:
		if (!endpoint_allowed(w, &info))
			goto endpoint_refused;
		udp_ep_from_sa(&client, (const struct sockaddr *)&info.client);
		if (f && f->format == MMP_UDP_FMT_V2 && udp_ep_eq(&f->client, &client))
			break;
		goto slow;
	case UDP_K_SPP:
		if (!endpoint_allowed(w, &info))
			goto endpoint_refused;
		udp_ep_from_sa(&client, (const struct sockaddr *)&info.client);
		g = udp_ft_by_client(&w->ft, &client);
		if (g && g->format == MMP_UDP_FMT_SPP && udp_ep_eq(&g->lb, lb)) {
			/* Replies carry the client's latest header (the proxy address may change). */
			if (memcmp(g->spp_hdr, p, SPP_HEADER_LEN)) {
				memcpy(g->spp_hdr, p, SPP_HEADER_LEN);
				if (g->fast_rev)
					udp_fast_spp_header(w->sh->fast, g);
			}
			f = g;
			break;
		}
		/* An LB ip:port with a v2 flow, or an SPP flow elsewhere, has passed the policy check. */
		if (!f && !(g && udp_ep_eq(&g->lb, lb)) &&
		    !mmp_policy_allowed(w->sh->policy, (const struct sockaddr *)lb_sa))
			goto not_allowed;
		f = udp_flow_for_header(w, &info, lb, lb_sa, lb_salen, local, ifindex, p);
		if (!f)
			return;
		break;
	}
	if (w->wildcard && !udp_ep_eq(&f->local, local))
		f->local = *local;
	udp_stage_payload(w, f, p + info.hdr_len, len - info.hdr_len);
	if (mark)
		fast_mark(w, f, mark, ifindex);
	return;
slow:
	if (!f && !mmp_policy_allowed(w->sh->policy, (const struct sockaddr *)lb_sa))
		goto not_allowed;
	f = udp_flow_for_header(w, &info, lb, lb_sa, lb_salen, local, ifindex, p);
	if (!f)
		return;
	udp_stage_payload(w, f, p + info.hdr_len, len - info.hdr_len);
	if (mark)
		fast_mark(w, f, mark, ifindex);
	return;
not_allowed:
	udp_drop(w, MMP_UDP_CNT_drop_not_allowed, lb, "source not allowed by the allowed-subnets file",
		 hint_for(MMP_UDP_CNT_drop_not_allowed));
	return;
endpoint_refused:
	udp_drop(w, MMP_UDP_CNT_drop_endpoint, lb,
		 info.kind == UDP_K_SPP ? "SPP header: it carries no endpoint TLV for --allowed-endpoints"
					: "PROXY v2 header names no allowed endpoint",
		 hint_for(MMP_UDP_CNT_drop_endpoint));
}

static void on_listen_msg(struct udp_worker *w, int i, uint16_t port)
{
	struct msghdr *mh = &w->rx.msgs[i].msg_hdr;
	const uint8_t *p = w->rx.iov[i].iov_base;
	uint32_t len = w->rx.msgs[i].msg_len;
	struct udp_ep lb, local = w->listen_ep;
	uint32_t mark;
	int gso, ifindex;

	udp_ep_from_sa(&lb, (const struct sockaddr *)&w->rx.names[i]);
	gso = udp_rx_cmsgs(mh, w->wildcard ? &local : NULL, &ifindex, &mark);
	local.port = port;
	/* sk_lookup hands this socket every port of the range: the datagram says which (docs/DESIGN.md §8). */
	if (w->multiport && udp_rx_orig_port(mh))
		local.port = udp_rx_orig_port(mh);
	if (mh->msg_flags & MSG_TRUNC) {
		udp_cnt_add(w, MMP_UDP_CNT_rx_dgrams, 1);
		udp_drop(w, MMP_UDP_CNT_drop_too_big, &lb, "datagram larger than the receive buffer",
			 hint_for(MMP_UDP_CNT_drop_too_big));
		return;
	}
	if (gso <= 0 || (uint32_t)gso >= len) {
		on_dgram(w, p, len, &lb, &w->rx.names[i], mh->msg_namelen, &local, ifindex, mark);
		return;
	}
	/* A GRO train from one LB ip:port: every segment is a datagram with its own header. */
	for (uint32_t off = 0; off < len; off += gso)
		on_dgram(w, p + off, len - off < (uint32_t)gso ? len - off : (uint32_t)gso, &lb, &w->rx.names[i],
			 mh->msg_namelen, &local, ifindex, mark);
}

void udp_relay_listen(struct udp_worker *w, int fd, uint16_t port)
{
	for (int round = 0; round < LISTEN_ROUNDS; round++) {
		int n = udp_rx_batch(fd, &w->rx, 0, UDP_BATCH);

		if (n < 0) {
			if (errno != EAGAIN && errno != EINTR)
				pr_conn("udp listener %d: receive failed: %s", w->id, strerror(errno));
			break;
		}
		for (int i = 0; i < n; i++)
			on_listen_msg(w, i, port);
		udp_relay_flush_forward(w);
		if (n < UDP_BATCH)
			break;
	}
	/* New and moved flows go to the kernel once their first datagrams are sent. */
	if (w->to_kernel)
		udp_flows_to_kernel(w);
}

