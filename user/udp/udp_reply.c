// SPDX-License-Identifier: GPL-2.0
/*
 * The reply path of the UDP relay: upstream -> load balancer.
 *
 * recvmmsg from every readable upstream socket into a shared pool, then one
 * sendmmsg on the listen socket for all of them. A flow's equal-sized
 * replies leave as one GSO train, each segment with its own SPP header for
 * SPP flows. Replies leave from the address the load balancer sent to
 * (IP_PKTINFO) when listening on a wildcard address. A kernel that refuses
 * the train gets its segments one by one, and that flow stops trying GSO.
 */
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "udp/udp_rx.h"
#include "udp/udp_drop.h"
#include "udp/udp_lifecycle.h"
#include "udp/udp_reply.h"
#include "udp/udp_thread.h"
#include "udp/udp_sock.h"
#include "listen/port_steer.h"
#include "mmp_steer.h"

/* A drained reply's mark must stay inside setup-routing's fwmark rule, and a steered reply's must not read as drained. */
_Static_assert((MMP_UDP_MARK_DRAIN_REV & MMP_STEER_RULE_MASK) == MMP_STEER_RULE_MARK, "drain marks leave the steer rule");
_Static_assert((MMP_STEER_MARK & MMP_UDP_MARK_DRAIN_MASK) != MMP_UDP_MARK_DRAIN_REV, "the steer mark reads as drained");
_Static_assert((MMP_STEER_MARK & MMP_STEER_RULE_MASK) == MMP_STEER_RULE_MARK, "the steer mark is outside its rule");

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

/* Destination, source address (wildcard listener) and GSO size of reply message m. */
static void tx_prepare(struct udp_worker *w, struct udp_flow *f, struct msghdr *mh, union udp_cmsg *ctl,
		       uint16_t seg_size)
{
	struct cmsghdr *c;
	size_t len = 0;

	mh->msg_name = &f->lb_sa;
	mh->msg_namelen = f->lb_salen;
	mh->msg_control = ctl->buf;
	mh->msg_controllen = sizeof(ctl->buf);
	memset(ctl->buf, 0, sizeof(ctl->buf));
	c = CMSG_FIRSTHDR(mh);
	if (w->wildcard && f->local.family) {
		/* Leave from the address the load balancer sent to, not whatever the route picks. */
		if (w->cfg->listen.ss_family == AF_INET) {
			struct in_pktinfo pi = { 0 };

			memcpy(&pi.ipi_spec_dst, f->local.addr + 12, 4);
			c->cmsg_level = SOL_IP;
			c->cmsg_type = IP_PKTINFO;
			c->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(c), &pi, sizeof(pi));
			len += CMSG_SPACE(sizeof(pi));
		} else {
			struct in6_pktinfo pi = { 0 };

			memcpy(&pi.ipi6_addr, f->local.addr, 16); /* IPv4-mapped for IPv4 peers */
			c->cmsg_level = SOL_IPV6;
			c->cmsg_type = IPV6_PKTINFO;
			c->cmsg_len = CMSG_LEN(sizeof(pi));
			memcpy(CMSG_DATA(c), &pi, sizeof(pi));
			len += CMSG_SPACE(sizeof(pi));
		}
		c = CMSG_NXTHDR(mh, c);
	}
	if (seg_size) {
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		memcpy(CMSG_DATA(c), &seg_size, sizeof(seg_size));
		len += CMSG_SPACE(sizeof(uint16_t));
	}
	mh->msg_controllen = len;
	if (!len)
		mh->msg_control = NULL;
}

static void reply_failed(struct udp_worker *w, struct udp_flow *f, uint32_t dgrams, int err)
{
	char a[MMP_ADDRSTRLEN];

	udp_cnt_add(w, MMP_UDP_CNT_drop_reply_send, dgrams);
	if (mmp_verbosity >= MMP_LOG_CONN && mmp_rl_allow(&w->rl[MMP_UDP_CNT_drop_reply_send], w->now_ns))
		pr_conn("dropped %u repl%s to %s: send failed: %s%s", dgrams, dgrams == 1 ? "y" : "ies",
			udp_ep_fmt(&f->lb, a), strerror(err),
			err == EAGAIN || err == ENOBUFS ? " (the path to the load balancer is congested)" : "");
}

static void reply_sent(struct udp_worker *w, int m, uint64_t wire_bytes)
{
	struct udp_flow *f = w->tx.flow[m];

	f->pkts_down += w->tx.segs[m];
	f->bytes_down += w->tx.payload[m];
	udp_cnt_add(w, MMP_UDP_CNT_sent_dgrams, w->tx.segs[m]);
	udp_cnt_add(w, MMP_UDP_CNT_sent_bytes, wire_bytes);
}

/* The socket that sends replies from our port (network order): a range's own, opened at its first reply, else the listen socket. */
static int reply_fd(struct udp_worker *w, uint16_t port)
{
	struct sockaddr_storage addr;
	int k;

	if (!w->port_fds)
		return w->listen_fd;
	k = (int)ntohs(port) - w->port_lo;
	if (k < 0 || k >= w->n_port_fds)
		return w->listen_fd;
	if (w->port_fds[k] < 0) {
		/* sk_lookup: this port's first reply; a failure leaves it unopened, to try at its next reply. */
		mmp_port_steer_addr(w->cfg, k, &addr);
		w->port_fds[k] = udp_reply_socket((const struct sockaddr *)&addr);
		if (w->port_fds[k] < 0) {
			w->port_fds[k] = -1;
			return w->listen_fd;
		}
	}
	return w->port_fds[k];
}

/* A GSO reply the kernel refused: send its segments one by one. */
static void reply_split(struct udp_worker *w, int m)
{
	struct udp_flow *f = w->tx.flow[m];
	struct msghdr *orig = &w->tx.msgs[m].msg_hdr;
	uint32_t seg = w->tx.seg_size[m], sent = 0;
	size_t total = 0, off = 0;
	uint8_t *base;
	union udp_cmsg ctl;

	f->no_gso_down = true;
	/* Trains are one buffer: either in the arena or a GRO read used as is. */
	base = orig->msg_iov[0].iov_base;
	for (size_t k = 0; k < orig->msg_iovlen; k++)
		total += orig->msg_iov[k].iov_len;
	for (; off < total; off += seg) {
		struct iovec iov = { .iov_base = base + off, .iov_len = total - off < seg ? total - off : seg };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

		tx_prepare(w, f, &mh, &ctl, 0);
		if (sendmsg(reply_fd(w, f->local.port), &mh, MSG_DONTWAIT) < 0)
			reply_failed(w, f, 1, errno);
		else
			sent++;
	}
	w->tx.segs[m] = sent;
	if (sent)
		reply_sent(w, m, total);
}

static void tx_flush(struct udp_worker *w)
{
	struct udp_reply_tx *tx = &w->tx;
	int i = 0;

	while (i < tx->n) {
		/* One sendmmsg per run of replies from the same port (a range's ports have a socket each, docs/DESIGN.md §8). */
		int fd = reply_fd(w, tx->flow[i]->local.port), run = 1, ret;

		while (w->port_fds && i + run < tx->n && tx->flow[i + run]->local.port == tx->flow[i]->local.port)
			run++;
		ret = sendmmsg(fd, tx->msgs + i, run, MSG_DONTWAIT);

		if (ret < 0 && errno == EINTR)
			continue;
		if (ret < 0) {
			int err = errno;

			if (tx->seg_size[i] && (err == EINVAL || err == EMSGSIZE || err == EIO || err == EOPNOTSUPP))
				reply_split(w, i);
			else
				reply_failed(w, tx->flow[i], tx->segs[i], err);
			i++;
			continue;
		}
		for (int k = i; k < i + ret; k++)
			reply_sent(w, k, tx->msgs[k].msg_len);
		i += ret;
	}
	tx->n = 0;
}

void udp_relay_flush_replies(struct udp_worker *w)
{
	if (w->tx.n)
		tx_flush(w);
	w->rrx_used = 0;
}

/* Queue one reply message: pieces [first, first + segs) of f, as a GSO train when segs > 1. */
static void reply_queue(struct udp_worker *w, struct udp_flow *f, int first, int segs)
{
	struct udp_reply_tx *tx = &w->tx;
	const struct udp_piece *pc = &w->pieces[first];
	uint32_t hlen = f->format == MMP_UDP_FMT_SPP ? SPP_HEADER_LEN : 0, payload = 0;
	int m;
	struct msghdr *mh;
	bool contiguous = true;

	if (tx->n == UDP_BATCH)
		tx_flush(w);
	m = tx->n++;
	mh = &tx->msgs[m].msg_hdr;
	memset(mh, 0, sizeof(*mh));
	mh->msg_iov = tx->iov[m];
	for (int k = 0; k < segs; k++) {
		payload += pc[k].len;
		if (k && pc[k].p != pc[k - 1].p + pc[k - 1].len)
			contiguous = false;
	}
	tx->flow[m] = f;
	tx->segs[m] = segs;
	tx->payload[m] = payload;
	tx->seg_size[m] = segs > 1 ? hlen + pc[0].len : 0;
	if (segs == 1 || (!hlen && contiguous)) {
		/* As received: a single datagram, or a GRO train of v2 replies (no copy). */
		int v = 0;

		if (hlen)
			tx->iov[m][v++] = (struct iovec){ .iov_base = f->spp_hdr, .iov_len = hlen };
		tx->iov[m][v++] = (struct iovec){ .iov_base = (void *)pc[0].p, .iov_len = payload };
		mh->msg_iovlen = v;
	} else {
		/* Assemble the train, each segment with its own SPP header. */
		uint8_t *dst = tx->arena + (size_t)m * UDP_SLOT;
		size_t off = 0;

		for (int k = 0; k < segs; k++) {
			memcpy(dst + off, f->spp_hdr, hlen);
			memcpy(dst + off + hlen, pc[k].p, pc[k].len);
			off += hlen + pc[k].len;
		}
		tx->iov[m][0] = (struct iovec){ .iov_base = dst, .iov_len = off };
		mh->msg_iovlen = 1;
	}
	tx_prepare(w, f, mh, &tx->ctl[m], tx->seg_size[m]);
}

/* Group pieces [0, n) of f into GSO trains of equal-sized replies (the last may be shorter). */
static void reply_pieces(struct udp_worker *w, struct udp_flow *f, int n)
{
	uint32_t hlen = f->format == MMP_UDP_FMT_SPP ? SPP_HEADER_LEN : 0;
	int i = 0;

	while (i < n) {
		uint32_t size = w->pieces[i].len, total = 0;
		int segs = 0;

		if (!f->no_gso_down && size) {
			while (i + segs < n && segs < UDP_MAX_SEGS && w->pieces[i + segs].len <= size &&
			       total + hlen + w->pieces[i + segs].len <= UDP_MAX_PAYLOAD) {
				bool shorter = w->pieces[i + segs].len < size;

				total += hlen + w->pieces[i + segs].len;
				segs++;
				if (shorter)
					break;
			}
		}
		if (segs < 1)
			segs = 1;
		reply_queue(w, f, i, segs);
		i += segs;
	}
}

static void upstream_error(struct udp_worker *w, struct udp_flow *f, int err)
{
	char c[MMP_ADDRSTRLEN], t[MMP_ADDRSTRLEN];

	udp_cnt_add(w, MMP_UDP_CNT_upstream_errors, 1);
	if (mmp_verbosity >= MMP_LOG_CONN && mmp_rl_allow(&w->rl[MMP_UDP_CNT_upstream_errors], w->now_ns))
		pr_conn("upstream %s reported an error for client %s: %s%s",
			mmp_fmt_addr((const struct sockaddr *)f->target, t),
			f->client.family ? udp_ep_fmt(&f->client, c) : "(local)", strerror(err),
			err == ECONNREFUSED ? " (is the upstream running and listening on udp?)" : "");
}

void udp_relay_reply(struct udp_worker *w, struct udp_flow *f, uint32_t events)
{
	int n, np = 0, err;
	socklen_t len = sizeof(err);

	if (events & EPOLLERR) {
		/* ICMP errors (port unreachable...) on the connected socket; reading clears them. */
		if (!getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &len) && err)
			upstream_error(w, f, err);
	}
	if (!(events & EPOLLIN))
		return;
	if (w->rrx_used == UDP_BATCH)
		udp_relay_flush_replies(w);
	n = udp_rx_batch(f->fd, &w->rrx, w->rrx_used, UDP_BATCH - w->rrx_used);
	if (n <= 0) {
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			upstream_error(w, f, errno);
		return;
	}
	for (int k = w->rrx_used; k < w->rrx_used + n; k++) {
		struct msghdr *mh = &w->rrx.msgs[k].msg_hdr;
		const uint8_t *p = w->rrx.iov[k].iov_base;
		uint32_t mark, dlen = w->rrx.msgs[k].msg_len;
		int ifindex;
		uint32_t gso = udp_rx_cmsgs(mh, NULL, &ifindex, &mark);

		/* Marked by the fast path while the flow's reply entry drains: count it for the hand-over. */
		if ((mark & MMP_UDP_MARK_DRAIN_MASK) == MMP_UDP_MARK_DRAIN_REV)
			udp_flow_drained(w, f, true, MMP_UDP_MARK_DRAIN_SEQ(mark));

		/* A GRO train (the upstream sent with UDP_SEGMENT) is split back into its replies. */
		if (gso == 0 || gso >= dlen)
			gso = dlen;
		for (uint32_t off = 0; off == 0 || off < dlen; off += gso) {
			uint32_t plen = dlen - off < gso ? dlen - off : gso;

			/*
			 * GRO trains may hold 128 segments (or more on a future
			 * kernel): queue what pieces[] holds before it overflows.
			 */
			if (np == UDP_STAGE_MAX) {
				reply_pieces(w, f, np);
				np = 0;
			}
			w->pieces[np++] = (struct udp_piece){ .p = p + off, .len = plen };
			udp_cnt_add(w, MMP_UDP_CNT_reply_dgrams, 1);
			udp_cnt_add(w, MMP_UDP_CNT_reply_bytes, plen);
			if (!gso)
				break; /* an empty datagram */
		}
	}
	w->rrx_used += n;
	udp_ft_touch(&w->ft, f, w->now_ns);
	reply_pieces(w, f, np);
}
