// SPDX-License-Identifier: GPL-2.0
/*
 * udpgen stream: senders blast datagrams on their flows (sendmmsg, paced
 * when a rate is set); the sink, bound to the upstream address, counts the
 * datagrams that were sent while measuring. Loss = 1 - received / sent.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clock.h"
#include "proxyhdr.h"
#include "udpgen.h"

#define BATCH 32
#define SINK_BATCH 64
#define DRAIN_NS (200 * NSEC_PER_MSEC) /* the sink keeps counting after stop */

struct tx_flow {
	int fd;
	uint32_t id;
	uint64_t seq;
	bool header_done; /* v2-first: the header went out */
	size_t hdr_len;
	uint8_t hdr[PROXYHDR_MAX];
};

static int phase_now(void)
{
	return __atomic_load_n(&ug_phase, __ATOMIC_ACQUIRE);
}

static void reset_stats(struct ug_stats *s)
{
	memset(s, 0, sizeof(*s));
	hist_init(&s->lat);
}

/* Sends up to n datagrams on flow f. Returns how many went out. */
static unsigned int send_batch(const struct ug_config *cfg, struct ug_thread *t,
			       struct tx_flow *f, unsigned int n, bool measuring)
{
	static __thread struct mmsghdr msgs[BATCH];
	static __thread struct iovec iov[BATCH][3];
	static __thread uint8_t tags[BATCH][UG_TAG_LEN];
	size_t body = cfg->size - UG_TAG_LEN;
	bool hdr = f->hdr_len && !(cfg->proxy == HDR_V2_FIRST && f->header_done);
	uint64_t seq;
	unsigned int i, k;
	int sent;

	for (i = 0; i < n; i++) {
		k = 0;
		seq = (f->seq + i) | (measuring ? UG_SEQ_MEASURED : 0);
		if (hdr) {
			iov[i][k].iov_base = f->hdr;
			iov[i][k++].iov_len = f->hdr_len;
		}
		ug_payload_put(tags[i], f->id, seq);
		iov[i][k].iov_base = tags[i];
		iov[i][k++].iov_len = UG_TAG_LEN;
		iov[i][k].iov_base = (void *)ug_payload_body(f->id, seq);
		iov[i][k++].iov_len = body;
		memset(&msgs[i], 0, sizeof(msgs[i]));
		msgs[i].msg_hdr.msg_iov = iov[i];
		msgs[i].msg_hdr.msg_iovlen = k;
		/* v2-first: only the very first datagram of the flow has a header. */
		if (cfg->proxy == HDR_V2_FIRST && hdr)
			hdr = false;
	}
	sent = sendmmsg(f->fd, msgs, n, MSG_DONTWAIT);
	if (sent <= 0) {
		if (sent < 0 && errno != EAGAIN && errno != ENOBUFS)
			STAT_ADD(t->stats.send_errors, 1);
		return 0;
	}
	f->header_done = true;
	f->seq += (uint64_t)sent;
	if (measuring) {
		STAT_ADD(t->stats.tx_pkts, (uint64_t)sent);
		STAT_ADD(t->stats.tx_bytes, (uint64_t)sent * cfg->size);
	}
	return (unsigned int)sent;
}

void *ug_stream_sender(void *arg)
{
	struct ug_thread *t = arg;
	const struct ug_config *cfg = t->cfg;
	double rate = cfg->rate * t->nflows / cfg->flows;
	uint64_t t0, allowed, sent = 0, now;
	struct tx_flow *flows;
	int phase = UG_WARMUP, p, fd;
	unsigned int i, n;

	flows = calloc(t->nflows, sizeof(*flows));
	if (!flows) {
		t->error = ENOMEM;
		return NULL;
	}
	for (i = 0; i < t->nflows; i++) {
		fd = ug_flow_socket(cfg);
		if (fd < 0) {
			t->error = -fd;
			goto out;
		}
		flows[i].fd = fd;
		flows[i].id = t->first_flow + i;
		flows[i].hdr_len = ug_build_header(cfg, flows[i].id, flows[i].hdr);
	}
	t0 = now_ns();
	while ((p = phase_now()) != UG_STOP) {
		if (p != phase) {
			phase = p;
			reset_stats(&t->stats);
		}
		for (i = 0; i < t->nflows; i++) {
			n = BATCH;
			if (rate > 0) {
				now = now_ns();
				allowed = (uint64_t)((double)(now - t0) * rate / 1e9);
				if (allowed <= sent) {
					sleep_until_ns(now + 20000);
					break;
				}
				if (allowed - sent < n)
					n = (unsigned int)(allowed - sent);
			}
			sent += send_batch(cfg, t, &flows[i], n, phase == UG_MEASURE);
		}
	}
out:
	for (i = 0; i < t->nflows; i++)
		if (flows[i].fd > 0)
			close(flows[i].fd);
	free(flows);
	return NULL;
}

/* Counts one received datagram of real length len. */
static void sink_count(struct ug_thread *t, const uint8_t *p, size_t len, bool counting)
{
	uint32_t flow;
	uint64_t seq;

	if (!ug_tag_get(p, len, &flow, &seq)) {
		if (counting)
			STAT_ADD(t->stats.bad, 1);
		return;
	}
	if (!(seq & UG_SEQ_MEASURED))
		return;
	STAT_ADD(t->stats.rx_pkts, 1);
	STAT_ADD(t->stats.rx_bytes, len);
}

static void sink_drain(struct ug_thread *t, int fd, bool counting)
{
	static __thread struct mmsghdr msgs[SINK_BATCH];
	static __thread struct iovec iov[SINK_BATCH];
	static __thread uint8_t heads[SINK_BATCH][UG_TAG_LEN];
	int n, i;

	for (;;) {
		for (i = 0; i < SINK_BATCH; i++) {
			iov[i].iov_base = heads[i];
			iov[i].iov_len = UG_TAG_LEN;
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		/* MSG_TRUNC: copy only the tag, but report the real length. */
		n = recvmmsg(fd, msgs, SINK_BATCH, MSG_DONTWAIT | MSG_TRUNC, NULL);
		if (n <= 0)
			return;
		for (i = 0; i < n; i++)
			sink_count(t, heads[i], msgs[i].msg_len, counting);
	}
}

void *ug_stream_sink(void *arg)
{
	struct ug_thread *t = arg;
	const struct ug_config *cfg = t->cfg;
	struct epoll_event ev, events[UG_MAX_ADDRS];
	uint64_t stop_at = 0;
	unsigned int i;
	int ep, n, p;

	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0) {
		t->error = errno;
		return NULL;
	}
	for (i = 0; i < cfg->nlisten; i++) {
		ev.events = EPOLLIN;
		ev.data.fd = t->sink_fds[i];
		epoll_ctl(ep, EPOLL_CTL_ADD, t->sink_fds[i], &ev);
	}
	for (;;) {
		p = phase_now();
		if (p == UG_STOP && !stop_at)
			stop_at = now_ns() + DRAIN_NS;
		if (stop_at && now_ns() >= stop_at)
			break;
		n = epoll_wait(ep, events, UG_MAX_ADDRS, 10);
		for (i = 0; n > 0 && i < (unsigned int)n; i++)
			sink_drain(t, events[i].data.fd, p != UG_WARMUP);
	}
	close(ep);
	return NULL;
}
