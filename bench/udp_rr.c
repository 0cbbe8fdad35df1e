// SPDX-License-Identifier: GPL-2.0
/*
 * udpgen rr: each flow keeps `window` requests in flight to an echo
 * upstream. Slot s of a flow carries sequence numbers s, s + W, s + 2W...,
 * so an answer names its slot. Answers are checked byte for byte; a
 * request unanswered after the timeout counts as lost and is replaced.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clock.h"
#include "pattern.h"
#include "proxyhdr.h"
#include "udpgen.h"

#define RX_BATCH 32
#define SCAN_NS (5 * NSEC_PER_MSEC)

struct rr_slot {
	uint64_t seq;
	uint64_t sent_at;
};

struct rr_flow {
	int fd;
	uint32_t id;
	bool answered; /* v2-first: a header goes out until the first answer */
	size_t hdr_len;
	uint8_t hdr[PROXYHDR_MAX];
	struct rr_slot *slots;
};

struct rr_ctx {
	struct ug_thread *t;
	const struct ug_config *cfg;
	uint8_t *rxbuf; /* RX_BATCH buffers of UG_MAX_DGRAM + SPP_LEN */
	size_t rxlen;
};

static void send_one(struct rr_ctx *x, struct rr_flow *f, struct rr_slot *s, uint64_t now)
{
	const struct ug_config *cfg = x->cfg;
	uint8_t tag[UG_TAG_LEN];
	struct iovec iov[3];
	struct msghdr mh = { .msg_iov = iov };
	bool hdr = f->hdr_len && !(cfg->proxy == HDR_V2_FIRST && f->answered);

	if (hdr) {
		iov[mh.msg_iovlen].iov_base = f->hdr;
		iov[mh.msg_iovlen++].iov_len = f->hdr_len;
	}
	ug_payload_put(tag, f->id, s->seq);
	iov[mh.msg_iovlen].iov_base = tag;
	iov[mh.msg_iovlen++].iov_len = UG_TAG_LEN;
	iov[mh.msg_iovlen].iov_base = (void *)ug_payload_body(f->id, s->seq);
	iov[mh.msg_iovlen++].iov_len = cfg->size - UG_TAG_LEN;
	s->sent_at = now;
	if (sendmsg(f->fd, &mh, MSG_DONTWAIT) < 0) {
		/* Unsent: it will time out and be replaced, like a lost one. */
		STAT_ADD(x->t->stats.send_errors, 1);
		return;
	}
	STAT_ADD(x->t->stats.tx_pkts, 1);
	STAT_ADD(x->t->stats.tx_bytes, cfg->size);
}

/* Checks one answer; on a match, times it and sends the slot's next request. */
static void on_answer(struct rr_ctx *x, struct rr_flow *f, const uint8_t *p, size_t len,
		      uint64_t now)
{
	const struct ug_config *cfg = x->cfg;
	size_t skip = cfg->proxy == HDR_SPP ? spp_header_len(p, len) : 0;
	struct rr_slot *s;
	uint32_t flow;
	uint64_t seq;

	p += skip;
	len -= skip;
	if (!ug_tag_get(p, len, &flow, &seq) || flow != f->id || len != cfg->size ||
	    memcmp(p + UG_TAG_LEN, ug_payload_body(flow, seq), len - UG_TAG_LEN)) {
		STAT_ADD(x->t->stats.bad, 1);
		return;
	}
	s = &f->slots[seq % cfg->window];
	if (seq != s->seq) {
		STAT_ADD(x->t->stats.late, 1);
		return;
	}
	f->answered = true;
	hist_record(&x->t->stats.lat, now - s->sent_at);
	STAT_ADD(x->t->stats.rx_pkts, 1);
	STAT_ADD(x->t->stats.rx_bytes, len);
	s->seq += cfg->window;
	send_one(x, f, s, now);
}

static void on_readable(struct rr_ctx *x, struct rr_flow *f)
{
	struct mmsghdr msgs[RX_BATCH];
	struct iovec iov[RX_BATCH];
	uint64_t now;
	int n, i;

	for (;;) {
		for (i = 0; i < RX_BATCH; i++) {
			iov[i].iov_base = x->rxbuf + (size_t)i * x->rxlen;
			iov[i].iov_len = x->rxlen;
			memset(&msgs[i], 0, sizeof(msgs[i]));
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		n = recvmmsg(f->fd, msgs, RX_BATCH, MSG_DONTWAIT, NULL);
		if (n <= 0) {
			/* ECONNREFUSED: an ICMP error from a target not listening. */
			if (n < 0 && errno == ECONNREFUSED)
				STAT_ADD(x->t->stats.send_errors, 1);
			return;
		}
		now = now_ns();
		for (i = 0; i < n; i++)
			on_answer(x, f, iov[i].iov_base, msgs[i].msg_len, now);
		if (n < RX_BATCH)
			return;
	}
}

/* Replaces requests unanswered for longer than the timeout. */
static void scan_timeouts(struct rr_ctx *x, struct rr_flow *flows, unsigned int n,
			  uint64_t now)
{
	uint64_t limit = (uint64_t)(x->cfg->timeout * 1e9);
	unsigned int i, j;
	struct rr_slot *s;

	for (i = 0; i < n; i++) {
		for (j = 0; j < x->cfg->window; j++) {
			s = &flows[i].slots[j];
			if (now - s->sent_at < limit)
				continue;
			STAT_ADD(x->t->stats.lost, 1);
			s->seq += x->cfg->window;
			send_one(x, &flows[i], s, now);
		}
	}
}

void *ug_rr_client(void *arg)
{
	struct ug_thread *t = arg;
	const struct ug_config *cfg = t->cfg;
	struct rr_ctx x = { .t = t, .cfg = cfg, .rxlen = cfg->size + PROXYHDR_MAX + 64 };
	struct epoll_event ev, events[64];
	int ep, fd, n, phase = UG_WARMUP, p;
	struct rr_flow *flows;
	uint64_t now, next_scan;
	unsigned int i, j;

	flows = calloc(t->nflows, sizeof(*flows));
	x.rxbuf = malloc(RX_BATCH * x.rxlen);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (!flows || !x.rxbuf || ep < 0) {
		t->error = ENOMEM;
		goto out;
	}
	now = now_ns();
	for (i = 0; i < t->nflows; i++) {
		struct rr_flow *f = &flows[i];

		fd = ug_flow_socket(cfg);
		if (fd < 0) {
			t->error = -fd;
			goto out;
		}
		f->fd = fd;
		f->id = t->first_flow + i;
		f->hdr_len = ug_build_header(cfg, f->id, f->hdr);
		f->slots = calloc(cfg->window, sizeof(*f->slots));
		if (!f->slots) {
			t->error = ENOMEM;
			goto out;
		}
		ev.events = EPOLLIN;
		ev.data.ptr = f;
		epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
		for (j = 0; j < cfg->window; j++) {
			f->slots[j].seq = j;
			send_one(&x, f, &f->slots[j], now);
		}
	}
	next_scan = now + SCAN_NS;
	while ((p = __atomic_load_n(&ug_phase, __ATOMIC_ACQUIRE)) != UG_STOP) {
		if (p != phase) {
			phase = p;
			memset(&t->stats, 0, offsetof(struct ug_stats, lat));
			hist_init(&t->stats.lat);
		}
		n = epoll_wait(ep, events, 64, 5);
		for (i = 0; n > 0 && i < (unsigned int)n; i++)
			on_readable(&x, events[i].data.ptr);
		now = now_ns();
		if (now >= next_scan) {
			scan_timeouts(&x, flows, t->nflows, now);
			next_scan = now + SCAN_NS;
		}
	}
out:
	for (i = 0; flows && i < t->nflows; i++) {
		if (flows[i].fd > 0)
			close(flows[i].fd);
		free(flows[i].slots);
	}
	free(flows);
	free(x.rxbuf);
	if (ep >= 0)
		close(ep);
	return NULL;
}
