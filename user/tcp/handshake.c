// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "core/clock.h"
#include "core/lifecycle.h"
#include "core/counters.h"
#include "engine/engine.h"
#include "lib/config.h"
#include "lib/log.h"
#include "policy/client_policy.h"
#include "policy/policy.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "proto/pp_stacked.h"
#include "proto/pp_tlv_fmt.h"
#include "proto/proxy_proto.h"
#include "tcp/handshake.h"
#include "tcp/pending.h"
#include "tcp/tcp_log.h"
#include "steer/reply_steer.h"
#include "lib/transparent.h"
#include "tcp/worker.h"

/* Per-connection lines are rate-limited per reason (tcp_log.h). */
#define log_conn(w, reason, ...) pr_conn_rl(&(w)->log, reason, mmp_now_ms() * 1000000, __VA_ARGS__)

void mmp_handshake_accepted(struct mmp_worker *w, int fd, const struct sockaddr_storage *peer)
{
	char lb[MMP_ADDRSTRLEN];
	struct mmp_conn *c;

	if (!mmp_policy_allowed(w->policy, (const struct sockaddr *)peer)) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_refused_source, 1);
		log_conn(w, TCP_LOG_NOT_ALLOWED, "connection from %s refused: source not allowed by the allowed-subnets file (add its subnet to the -a file)",
			mmp_fmt_addr((const struct sockaddr *)peer, lb));
		close(fd);
		return;
	}
	if (!mmp_pending_admit(w, peer)) {
		close(fd);
		return;
	}
	c = mmp_conn_new(&w->loop, fd, peer);
	if (!c) {
		pr_err("out of memory accepting a connection from %s", mmp_fmt_addr((const struct sockaddr *)peer, lb));
		mmp_pending_forget(peer);
		close(fd);
		return;
	}
	/* No TCP_NODELAY here: an accepted socket inherits it from the listener (make_listener). */
	pr_debug("accepted %s", mmp_fmt_addr((const struct sockaddr *)peer, lb));

	/*
	 * Edge-triggered while the header is incomplete: MSG_PEEK leaves the bytes
	 * queued, so level-triggered would spin. Try at once: the header usually
	 * arrived with the connection.
	 */
	if (mmp_loop_watch(&w->loop, &c->client, EPOLLIN | EPOLLRDHUP | EPOLLET)) {
		mmp_conn_close(&w->loop, c, MMP_CLOSE_FIN);
		return;
	}
	mmp_handshake_event(w, c, &c->client, EPOLLIN);
}

/*
 * -4/-6 given as a range (docs/DESIGN.md §8): the port the load balancer
 * connected to (getsockname: with sk_lookup one socket serves every port)
 * picks the upstream port; asked only when there is a range to map.
 */
static const struct sockaddr_storage *mapped_target(struct mmp_conn *c, const struct mmp_config *cfg, int family)
{
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	uint16_t dport = 0;

	if (mmp_port_range_maps(cfg, family) && !getsockname(c->client.fd, (struct sockaddr *)&local, &len))
		dport = mmp_sa_port(&local);
	return mmp_port_range_upstream(cfg, family, dport, &c->target_mapped);
}

/*
 * Close a connection whose header was parsed but that no engine took: the
 * header is read off first (unless an engine strips it in the kernel, which
 * never had it read), so the load balancer gets the FIN it got before the
 * header stayed queued, not the RST close() sends over unread bytes.
 */
static void close_early(struct mmp_worker *w, struct mmp_conn *c, unsigned int how)
{
	if (c->header_len && !mmp_engines_strip_header(&w->engines))
		mmp_conn_consume_header(c); /* best effort: a failure only turns the FIN into a RST */
	mmp_conn_close(&w->loop, c, how);
}

/* Which upstream and source address a parsed header leads to. */
static void choose_route(struct mmp_worker *w, struct mmp_conn *c, const struct pp_header *hdr)
{
	struct sockaddr_storage lb = c->lb_addr;

	if (hdr->command == PP_CMD_PROXY && (hdr->src.ss_family == AF_INET || hdr->src.ss_family == AF_INET6)) {
		c->src_addr = hdr->src;
		mmp_unmap_v4(&c->src_addr); /* ::ffff:a.b.c.d goes to the -4 upstream as a.b.c.d */
		c->target = mapped_target(c, w->loop.cfg, c->src_addr.ss_family == AF_INET ? AF_INET : AF_INET6);
		return;
	}
	/* LOCAL (health check), UNKNOWN, UNSPEC or UNIX: connect as ourselves. */
	c->src_addr.ss_family = AF_UNSPEC;
	mmp_unmap_v4(&lb);
	c->target = mapped_target(c, w->loop.cfg, lb.ss_family == AF_INET6 ? AF_INET6 : AF_INET);
}

/*
 * The client policy (client_policy.h), before anything is bound: a header
 * naming an impossible client closes the connection. Returns true when refused.
 */
static bool client_refused(struct mmp_worker *w, struct mmp_conn *c)
{
	char lb[MMP_ADDRSTRLEN], src[MMP_ADDRSTRLEN];
	enum mmp_client_verdict v;

	if (!c->src_addr.ss_family)
		return false; /* unspoofed: nothing is bound to a header's address */
	v = mmp_client_check((const void *)&c->src_addr, (const void *)&c->lb_addr, (const void *)c->target,
			     mmp_local_addrs_current());
	if (v == MMP_CLIENT_OK)
		return false;
	mmp_count(w->loop.counters, MMP_TCP_CNT_refused_client, 1);
	log_conn(w, TCP_LOG_CLIENT_POLICY,
		 "connection from %s refused: its PROXY header names client %s: %s (rule %s; no real client has it: is the port reachable by others than the load balancer? restrict it with -a)",
		 mmp_fmt_addr((const void *)&c->lb_addr, lb), mmp_fmt_addr((const void *)&c->src_addr, src),
		 mmp_client_why(v), mmp_client_rule(v));
	return true;
}

static void start_connect(struct mmp_worker *w, struct mmp_conn *c)
{
	const struct sockaddr *src = c->src_addr.ss_family ? (const struct sockaddr *)&c->src_addr : NULL;
	char a[MMP_ADDRSTRLEN], b[MMP_ADDRSTRLEN];
	const char *what = "bind";
	struct mmp_preconnect pc;
	int err, fd = -1;

	/* An engine may hold the client's ip:port (tc: a spliced flow) and choose the socket's MSS. */
	err = mmp_engines_pre_connect(&w->engines, c, &pc);
	if (err && !src)
		what = "choosing a local port that no spliced flow holds";
	if (!err && !src && pc.have_src)
		src = (const struct sockaddr *)&pc.src;
	/* An upstream beyond loopback: its replies are steered to us by tuple, recorded before the SYN (§14). */
	if (!err && c->src_addr.ss_family) {
		what = "recording the reply tuple for steering";
		err = mmp_steer_add(IPPROTO_TCP, src, (const struct sockaddr *)c->target, &c->steer_owner);
		if (c->steer_owner)
			mmp_count(w->loop.counters, MMP_TCP_CNT_steered, 1);
	}
	if (!err) {
		fd = mmp_upstream_connect(src, (const struct sockaddr *)c->target, w->loop.cfg->mark, pc.mss, &what);
		err = fd < 0 ? fd : 0;
	}
	if (err) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_upstream_failed, 1);
		log_conn(w, TCP_LOG_UPSTREAM, "upstream %s for client %s: %s failed: %s%s", mmp_fmt_addr((const void *)c->target, a),
			c->src_addr.ss_family ? mmp_fmt_addr(src, b) : "(unspoofed)", what, strerror(-err),
			mmp_upstream_hint(what, err));
		close_early(w, c, MMP_CLOSE_FIN);
		return;
	}
	c->upstream.fd = fd;
	c->deadline_ms = mmp_now_ms() + w->loop.cfg->connect_timeout_ms;
	mmp_loop_set_state(&w->loop, c, CONN_CONNECTING);
	/*
	 * The client is not read until the upstream is up. Its registration stays
	 * edge-triggered from the header (EPOLLIN | EPOLLRDHUP | EPOLLET), so more
	 * bytes wake us once and are ignored (mmp_handshake_event), and no
	 * EPOLL_CTL_MOD is spent here: the engine sets its own mask at start.
	 */
	if (mmp_loop_watch(&w->loop, &c->upstream, EPOLLOUT))
		close_early(w, c, MMP_CLOSE_FIN);
}

/*
 * A header that arrives in pieces is parsed again from its start at every
 * piece: a 64 KiB v2 header trickled a byte at a time would cost 64 Ki peeks
 * of up to 64 KiB each. Once its length is known, the socket wakes us only
 * when all of it is there (SO_RCVLOWAT), so a connection peeks a few times
 * whatever the pieces (docs/DESIGN.md §7a).
 */
static void wait_for_whole_header(struct mmp_conn *c, size_t need)
{
	int lowat = (int)need;

	if (need <= 1 || c->header_lowat >= need)
		return;
	if (!setsockopt(c->client.fd, SOL_SOCKET, SO_RCVLOWAT, &lowat, sizeof(lowat)))
		c->header_lowat = need;
}

/* Back to a wake-up per byte for the engine, if a trickled header changed it. */
static int restore_lowat(struct mmp_conn *c)
{
	int one = 1;

	if (!c->header_lowat)
		return 0;
	c->header_lowat = 0;
	return setsockopt(c->client.fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one)) ? -errno : 0;
}

/*
 * A second PROXY header right after the first (docs/DESIGN.md §12): refused
 * by default; with --strip-stacked both are stripped and *hdr becomes the
 * second, whose client is the original one. n bytes were peeked.
 * Returns 0 to go on, 1 to wait for more bytes, -EPROTO when the connection
 * is refused (counted and logged here).
 */
static int handle_stacked(struct mmp_worker *w, struct mmp_conn *c, struct pp_header *hdr, size_t n,
			  uint32_t events)
{
	bool strip = w->loop.cfg->strip_stacked;
	char lb[MMP_ADDRSTRLEN];
	struct pp_header inner;
	const char *reason = NULL;

	switch (pp_stacked(w->peek_buf, n, hdr->header_len, strip, &inner, &reason)) {
	case PP_STACK_NONE:
		return 0;
	case PP_STACK_MORE:
		if (!strip)
			goto refused; /* a whole signature is there: stacked, whatever follows */
		if (events & EPOLLRDHUP) {
			reason = "truncated: the connection was closed in the middle of the second header";
			goto bad;
		}
		wait_for_whole_header(c, hdr->header_len + pp_bytes_needed(w->peek_buf + hdr->header_len,
									     n - hdr->header_len));
		return 1;
	case PP_STACK_BAD:
		if (!strip)
			goto refused;
		goto bad;
	case PP_STACK_FOUND:
		if (!strip)
			goto refused;
		pr_debug("stacked PROXY header from %s: using the second one's client", mmp_fmt_addr((const void *)&c->lb_addr, lb));
		inner.header_len += hdr->header_len;
		*hdr = inner;
		return 0;
	}
	return 0;

refused:
	mmp_count(w->loop.counters, MMP_TCP_CNT_bad_header, 1);
	log_conn(w, TCP_LOG_BAD_HEADER, "stacked PROXY headers from %s: a second header follows the first (one load balancer behind another? --strip-stacked strips both and uses the second one's client)",
		mmp_fmt_addr((const void *)&c->lb_addr, lb));
	return -EPROTO;
bad:
	mmp_count(w->loop.counters, MMP_TCP_CNT_bad_header, 1);
	log_conn(w, TCP_LOG_BAD_HEADER, "invalid second (stacked) PROXY header from %s: %s",
		mmp_fmt_addr((const void *)&c->lb_addr, lb), reason);
	return -EPROTO;
}

/* Refused by --allowed-endpoints: counted and logged; returns true. */
static bool endpoint_refused(struct mmp_worker *w, struct mmp_conn *c, const struct pp_header *hdr)
{
	char lb[MMP_ADDRSTRLEN], tlvs[PP_TLV_FMT_LEN];

	if (mmp_policy_endpoint_allowed(w->policy, hdr))
		return false;
	mmp_count(w->loop.counters, MMP_TCP_CNT_refused_endpoint, 1);
	log_conn(w, TCP_LOG_ENDPOINT, "connection from %s refused: its PROXY v%d header names no allowed endpoint (TLVs:%s) (add its aws:, azure: or gcp: ID to the --allowed-endpoints file)",
		mmp_fmt_addr((const void *)&c->lb_addr, lb), hdr->version,
		pp_tlv_format(hdr, tlvs, sizeof(tlvs))[0] ? tlvs : " none");
	return true;
}

static void read_header(struct mmp_worker *w, struct mmp_conn *c, uint32_t events)
{
	char lb[MMP_ADDRSTRLEN], src[MMP_ADDRSTRLEN];
	struct pp_header hdr;
	const char *reason;
	enum pp_status st;
	ssize_t n;
	int err;

	n = recv(c->client.fd, w->peek_buf, PP_MAX_HEADER_LEN, MSG_PEEK);
	if (n < 0) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		log_conn(w, TCP_LOG_CONN_ERROR, "connection from %s failed before its PROXY header: %s",
			mmp_fmt_addr((const void *)&c->lb_addr, lb), strerror(errno));
		goto fail;
	}
	if (n == 0) {
		log_conn(w, TCP_LOG_CONN_ERROR, "connection from %s closed before its PROXY header was complete",
			mmp_fmt_addr((const void *)&c->lb_addr, lb));
		goto fail;
	}
	st = pp_parse(w->peek_buf, n, &hdr, &reason);
	if (st == PP_NEED_MORE && !(events & EPOLLRDHUP)) {
		wait_for_whole_header(c, pp_bytes_needed(w->peek_buf, (size_t)n));
		return; /* the next edge brings more bytes */
	}
	if (st == PP_NEED_MORE) {
		/* The load balancer closed its side: the header can never complete. */
		st = PP_INVALID;
		reason = "truncated: the connection was closed in the middle of the header";
	}
	if (st == PP_INVALID) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_bad_header, 1);
		log_conn(w, TCP_LOG_BAD_HEADER, "invalid PROXY header from %s: %s (is the load balancer sending PROXY protocol v1/v2?)",
			mmp_fmt_addr((const void *)&c->lb_addr, lb), reason);
		goto fail;
	}
	/*
	 * The endpoint is read from the first header: the one the load balancer
	 * that -a trusts wrote (a stacked one came through it as data).
	 */
	if (endpoint_refused(w, c, &hdr))
		goto fail;
	err = handle_stacked(w, c, &hdr, (size_t)n, events);
	if (err > 0)
		return;
	if (err < 0)
		goto fail;
	if (restore_lowat(c)) {
		log_conn(w, TCP_LOG_CONN_ERROR, "connection from %s: resetting SO_RCVLOWAT failed: %s",
			mmp_fmt_addr((const void *)&c->lb_addr, lb), strerror(errno));
		goto fail;
	}
	if (hdr.transport == PP_TRANSPORT_DGRAM && hdr.command == PP_CMD_PROXY) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_bad_header, 1);
		log_conn(w, TCP_LOG_BAD_HEADER, "invalid PROXY header from %s: DGRAM transport on a TCP listener (use -p udp for UDP)",
			mmp_fmt_addr((const void *)&c->lb_addr, lb));
		goto fail;
	}
	/*
	 * The header stays queued: sockmap strips it in the kernel, splice drops
	 * it with its first read of the client (one recv fewer per connection,
	 * docs/DESIGN.md §3d). Closing before an engine runs reads it off first.
	 */
	c->header_len = hdr.header_len;
	choose_route(w, c, &hdr);
	if (client_refused(w, c)) {
		close_early(w, c, MMP_CLOSE_FIN);
		return;
	}
	if (mmp_verbosity >= MMP_LOG_DEBUG) {
		/* The TLVs are the sender's bytes: pp_tlv_format escapes and bounds them. */
		char tlvs[PP_TLV_FMT_LEN];

		pr_debug("PROXY v%d header from %s: client %s%s", hdr.version,
			 mmp_fmt_addr((const void *)&c->lb_addr, lb),
			 c->src_addr.ss_family ? mmp_fmt_addr((const void *)&c->src_addr, src) : "(local)",
			 pp_tlv_format(&hdr, tlvs, sizeof(tlvs)));
	}
	start_connect(w, c);
	return;
fail:
	mmp_conn_close(&w->loop, c, MMP_CLOSE_FIN);
}

static void finish_connect(struct mmp_worker *w, struct mmp_conn *c, uint32_t events)
{
	char a[MMP_ADDRSTRLEN], b[MMP_ADDRSTRLEN];
	socklen_t len = sizeof(int);
	int err = 0;

	/* A failed connect always reports EPOLLERR (and EPOLLHUP); a bare EPOLLOUT is a connected socket. */
	if ((events & (EPOLLERR | EPOLLHUP)) && getsockopt(c->upstream.fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (!err && (events & (EPOLLERR | EPOLLHUP)) && !(events & EPOLLOUT))
		err = ECONNRESET; /* HUP without an error and without being writable: not connected */
	if (err) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_upstream_failed, 1);
		log_conn(w, TCP_LOG_UPSTREAM, "upstream %s refused client %s: connect failed: %s%s",
			mmp_fmt_addr((const void *)c->target, a),
			c->src_addr.ss_family ? mmp_fmt_addr((const void *)&c->src_addr, b) : "(unspoofed)",
			strerror(err), mmp_upstream_hint("connect", -err));
		close_early(w, c, MMP_CLOSE_FIN);
		return;
	}
	pr_debug("upstream %s connected for client %s", mmp_fmt_addr((const void *)c->target, a),
		 c->src_addr.ss_family ? mmp_fmt_addr((const void *)&c->src_addr, b) : "(unspoofed)");
	mmp_loop_set_state(&w->loop, c, CONN_SPLICING);
	mmp_count(w->loop.counters, MMP_TCP_CNT_spliced, 1);
	mmp_engines_start(&w->engines, &w->loop, c);
}

void mmp_handshake_event(struct mmp_worker *w, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events)
{
	char lb[MMP_ADDRSTRLEN];

	if (c->state == CONN_HEADER) {
		read_header(w, c, events);
		return;
	}
	if (ep == &c->upstream) {
		finish_connect(w, c, events);
		return;
	}
	/* The client went away while we were connecting. */
	if (events & (EPOLLERR | EPOLLHUP | EPOLLRDHUP)) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(c->client.fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err || (events & EPOLLHUP)) {
			log_conn(w, TCP_LOG_CONN_ERROR, "connection from %s closed while connecting upstream%s%s",
				mmp_fmt_addr((const void *)&c->lb_addr, lb), err ? ": " : "", err ? strerror(err) : "");
			close_early(w, c, MMP_CLOSE_RESET_UPSTREAM);
			return;
		}
		/* A half-close (FIN after a request) is fine: the engine forwards it later. */
		mmp_loop_watch(&w->loop, &c->client, 0);
	}
}

void mmp_handshake_timeout(struct mmp_worker *w, struct mmp_conn *c)
{
	char lb[MMP_ADDRSTRLEN], a[MMP_ADDRSTRLEN];

	if (c->state == CONN_HEADER) {
		mmp_count(w->loop.counters, MMP_TCP_CNT_header_timeout, 1);
		log_conn(w, TCP_LOG_HEADER_TIMEOUT, "timed out waiting for PROXY header from %s after %d s (raise --header-timeout if the load balancer is slow)",
			mmp_fmt_addr((const void *)&c->lb_addr, lb), w->loop.cfg->header_timeout_ms / 1000);
	} else {
		mmp_count(w->loop.counters, MMP_TCP_CNT_upstream_failed, 1);
		log_conn(w, TCP_LOG_UPSTREAM, "upstream %s did not answer within %d s for client %s (is it running? mmproxy-bpf check verifies the routing)",
			mmp_fmt_addr((const void *)c->target, a), w->loop.cfg->connect_timeout_ms / 1000,
			c->src_addr.ss_family ? mmp_fmt_addr((const void *)&c->src_addr, lb) : "(unspoofed)");
	}
	close_early(w, c, MMP_CLOSE_FIN); /* in CONN_HEADER no header was parsed: header_len is 0 */
}
