// SPDX-License-Identifier: GPL-2.0
/*
 * loadgen worker: one thread, one epoll instance (edge-triggered), its own
 * connections. Opens connections at its share of the connect rate, keeps
 * its target number open, and drives them in the configured mode.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "clock.h"
#include "loadgen.h"
#include "pattern.h"
#include "proxyhdr.h"

#define RXBUF_LEN (256 * 1024)
#define MAX_EVENTS 256
#define OPEN_BURST 64 /* opens per loop turn when the rate is unlimited */
#define IDLE_WAIT_MS 10 /* how often an idle worker looks at lg_phase */
#define RETRY_NS (10 * NSEC_PER_MSEC) /* after a failed connect() */
#define HOLD_TICK_MS 5 /* hold: how often the pacer hands out pings */

enum conn_state {
	CONN_CONNECTING,
	CONN_OPEN,
};

struct conn {
	int fd;
	enum conn_state state;
	unsigned int slot; /* index in worker.conns */
	uint64_t id; /* client number */
	uint64_t tx_origin; /* pattern offset of our first payload byte */
	uint64_t rx_origin; /* pattern offset of the first byte we expect */
	uint64_t tx_off, tx_goal; /* payload bytes written, to be written */
	uint64_t rx_off; /* payload bytes received */
	uint64_t msgs_sent, msgs_done;
	uint64_t started; /* ns, when connect() was called */
	bool echoed_measuring; /* hold: a message came back while measuring */
	uint8_t hdr_len, hdr_sent;
	uint8_t hdr[PROXYHDR_MAX];
	uint64_t sent_at[]; /* one send time per pipeline slot */
};

struct worker {
	struct lg_thread *t;
	const struct lg_config *cfg;
	int ep;
	uint8_t *rxbuf;
	struct conn **conns; /* open or connecting; target_conns slots */
	unsigned int nconns;
	uint64_t interval; /* ns between opens; 0: unlimited */
	uint64_t next_open; /* ns */
	/*
	 * hold: pings are handed out round robin, at nconns per interval, so a
	 * connection's messages are one interval apart and the load is flat
	 * instead of arriving in one burst per interval.
	 */
	double ping_credit;
	unsigned int ping_cursor;
	uint64_t last_pace; /* ns */
};

static struct sockaddr_storage default_range_client(uint64_t id)
{
	static struct cidr testnet3;
	struct sockaddr_storage ss;

	if (!testnet3.family)
		cidr_parse("203.0.113.0/24", &testnet3);
	cidr_client(&testnet3, id, &ss);
	return ss;
}

static void build_header(const struct lg_config *cfg, struct conn *c)
{
	struct sockaddr_storage src;

	if (cfg->proxy == HDR_NONE)
		return;
	if (cfg->have_clients)
		cidr_client(&cfg->clients, c->id, &src);
	else
		src = default_range_client(c->id);
	if (cfg->proxy == HDR_V1)
		c->hdr_len = (uint8_t)proxyhdr_v1(c->hdr, &src, &cfg->target);
	else
		c->hdr_len = (uint8_t)proxyhdr_v2(c->hdr, &src, &cfg->target, false);
}

static void conn_close(struct worker *w, struct conn *c)
{
	struct conn *last;

	if (c->state == CONN_OPEN)
		STAT_ADD(w->t->open_conns, -1);
	close(c->fd);
	last = w->conns[--w->nconns];
	w->conns[c->slot] = last;
	last->slot = c->slot;
	free(c);
}

/* Opens one connection. Returns 0, or -1 after counting a connect error. */
static int conn_open(struct worker *w, uint64_t now)
{
	const struct lg_config *cfg = w->cfg;
	struct epoll_event ev;
	struct conn *c;
	int one = 1;

	c = calloc(1, sizeof(*c) + cfg->pipeline * sizeof(c->sent_at[0]));
	if (!c)
		goto fail;
	c->id = lg_next_client();
	c->tx_origin = pattern_origin(c->id);
	/* An echo returns our own bytes; a source server sends from origin 0. */
	c->rx_origin = cfg->mode == LG_BULK ? 0 : c->tx_origin;
	c->started = now;
	build_header(cfg, c);
	c->fd = socket(cfg->target.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		goto fail_free;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (cfg->have_sources) {
		struct sockaddr_storage src;

		/* The port is picked at connect(), per 4-tuple, not per address. */
		setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof(one));
		cidr_host(&cfg->sources, c->id, &src);
		if (bind(c->fd, (const struct sockaddr *)&src, addr_len(&src)))
			goto fail_close;
	}
	if (connect(c->fd, (const struct sockaddr *)&cfg->target, addr_len(&cfg->target)) &&
	    errno != EINPROGRESS)
		goto fail_close;
	ev.events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET;
	ev.data.ptr = c;
	if (epoll_ctl(w->ep, EPOLL_CTL_ADD, c->fd, &ev))
		goto fail_close;
	c->state = CONN_CONNECTING;
	c->slot = w->nconns;
	w->conns[w->nconns++] = c;
	return 0;

fail_close:
	close(c->fd);
fail_free:
	free(c);
fail:
	STAT_ADD(w->t->stats.connect_errors, 1);
	return -1;
}

/*
 * Writes the header remainder and payload up to tx_goal, until done or the
 * socket is full (the next EPOLLOUT edge resumes). Returns 0, or -1 when
 * the connection failed.
 */
static int conn_flush(struct worker *w, struct conn *c)
{
	struct msghdr msg = { 0 };
	struct iovec iov[2];
	uint64_t want;
	size_t hdr_left;
	ssize_t n;
	int cnt;

	for (;;) {
		hdr_left = (size_t)(c->hdr_len - c->hdr_sent);
		want = c->tx_goal - c->tx_off;
		if (want > PATTERN_PERIOD)
			want = PATTERN_PERIOD;
		if (!hdr_left && !want)
			return 0;
		cnt = 0;
		if (hdr_left) {
			iov[cnt].iov_base = c->hdr + c->hdr_sent;
			iov[cnt++].iov_len = hdr_left;
		}
		if (want) {
			iov[cnt].iov_base = (void *)pattern_at(c->tx_origin + c->tx_off);
			iov[cnt++].iov_len = (size_t)want;
		}
		/* sendmsg, not writev: MSG_NOSIGNAL, so a reset peer is no SIGPIPE. */
		msg.msg_iov = iov;
		msg.msg_iovlen = (size_t)cnt;
		n = sendmsg(c->fd, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN)
				return 0;
			if (errno == EINTR)
				continue;
			return -1;
		}
		if ((size_t)n >= hdr_left) {
			c->hdr_sent = c->hdr_len;
			n -= (ssize_t)hdr_left;
		} else {
			c->hdr_sent += (uint8_t)n;
			n = 0;
		}
		c->tx_off += (uint64_t)n;
		STAT_ADD(w->t->stats.tx_bytes, (uint64_t)n);
	}
}

/*
 * Accounts for n received bytes: verification, completed messages, and the
 * next messages to send. Returns 1 when a connrate connection is done.
 */
static int conn_consume(struct worker *w, struct conn *c, const uint8_t *buf, size_t n)
{
	const struct lg_config *cfg = w->cfg;
	struct lg_stats *st = &w->t->stats;
	uint64_t now, lat, size = cfg->size;

	if (cfg->verify) {
		STAT_ADD(st->verify_errors, pattern_mismatches(c->rx_origin + c->rx_off, buf, n));
		STAT_ADD(st->verified_bytes, n);
	}
	/* An echo can never return more than we sent. */
	if (cfg->mode != LG_BULK && c->rx_off + n > c->tx_off)
		STAT_ADD(st->verify_errors, c->rx_off + n - c->tx_off);
	c->rx_off += n;
	STAT_ADD(st->rx_bytes, n);
	if (cfg->mode == LG_BULK || cfg->mode == LG_STREAM)
		return 0;

	now = now_ns();
	while (c->msgs_done < c->msgs_sent && c->rx_off >= (c->msgs_done + 1) * size) {
		lat = now - c->sent_at[c->msgs_done % cfg->pipeline];
		hist_record(&st->lat, lat);
		STAT_ADD(st->msgs, 1);
		c->msgs_done++;
		if (__atomic_load_n(&lg_phase, __ATOMIC_RELAXED) == LG_MEASURE)
			c->echoed_measuring = true;
		if (cfg->mode == LG_PINGPONG) {
			c->sent_at[c->msgs_sent % cfg->pipeline] = now;
			c->msgs_sent++;
			c->tx_goal += size;
		}
	}
	return cfg->mode == LG_CONNRATE && c->msgs_done == 1;
}

/* Counts a failed connection by cause: err is 0 for an unexpected EOF. */
static void count_io_error(struct worker *w, int err)
{
	STAT_ADD(w->t->stats.io_errors, 1);
	if (!err)
		STAT_ADD(w->t->stats.io_eof, 1);
	else if (err == ECONNRESET || err == EPIPE)
		STAT_ADD(w->t->stats.io_reset, 1);
}

/*
 * Reads what is queued. Returns 0, 1 when a connrate connection completed
 * (and was closed), or -1 on failure with *err set (0 for EOF).
 */
static int conn_read(struct worker *w, struct conn *c, uint32_t events, int *err)
{
	bool drain = events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR);
	ssize_t n;

	for (;;) {
		n = recv(c->fd, w->rxbuf, RXBUF_LEN, 0);
		if (n > 0) {
			if (conn_consume(w, c, w->rxbuf, (size_t)n)) {
				conn_close(w, c);
				return 1;
			}
			/* A short read emptied the queue; a later FIN brings a new edge. */
			if (n < RXBUF_LEN && !drain)
				return 0;
			continue;
		}
		if (n == 0) {
			*err = 0; /* the peer closed while we still expect data */
			return -1;
		}
		if (errno == EAGAIN)
			return 0;
		if (errno != EINTR) {
			*err = errno;
			return -1;
		}
	}
}

/* Connection established: queue what this mode sends first. */
static void conn_start(struct worker *w, struct conn *c, uint64_t now)
{
	const struct lg_config *cfg = w->cfg;
	unsigned int i;

	c->state = CONN_OPEN;
	STAT_ADD(w->t->open_conns, 1);
	STAT_ADD(w->t->stats.conns_opened, 1);
	switch (cfg->mode) {
	case LG_HOLD:
		/* One message at once: proves the path before the flow is held. */
		c->sent_at[0] = now;
		c->msgs_sent = 1;
		c->tx_goal = cfg->size;
		break;
	case LG_PINGPONG:
		for (i = 0; i < cfg->pipeline; i++)
			c->sent_at[i] = now;
		c->msgs_sent = cfg->pipeline;
		c->tx_goal = (uint64_t)cfg->pipeline * cfg->size;
		break;
	case LG_CONNRATE:
		c->sent_at[0] = c->started;
		c->msgs_sent = 1;
		c->tx_goal = cfg->size;
		break;
	case LG_BULK:
		c->tx_goal = (cfg->direction & LG_UP) ? UINT64_MAX : 0;
		break;
	case LG_STREAM:
		/* Written as fast as the path takes it; the echo is read whenever it comes (tcpkali's way). */
		c->tx_goal = UINT64_MAX;
		break;
	}
}

static void conn_event(struct worker *w, struct conn *c, uint32_t events)
{
	int err = 0, rc, ioerr = 0;
	socklen_t len = sizeof(err);

	if (c->state == CONN_CONNECTING) {
		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err ||
		    (events & (EPOLLERR | EPOLLHUP))) {
			STAT_ADD(w->t->stats.connect_errors, 1);
			if (err == ECONNREFUSED)
				STAT_ADD(w->t->stats.connect_refused, 1);
			else if (err == ECONNRESET)
				STAT_ADD(w->t->stats.connect_reset, 1);
			conn_close(w, c);
			/* Do not hammer a target that refuses. */
			if (w->next_open < now_ns() + RETRY_NS)
				w->next_open = now_ns() + RETRY_NS;
			return;
		}
		conn_start(w, c, now_ns());
		events |= EPOLLOUT;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) {
		rc = conn_read(w, c, events, &ioerr);
		if (rc == 1)
			return;
		if (rc < 0)
			goto fail;
		events |= EPOLLOUT; /* new messages may be queued */
	}
	if ((events & EPOLLOUT) && conn_flush(w, c) < 0) {
		ioerr = errno;
		goto fail;
	}
	return;
fail:
	count_io_error(w, ioerr);
	conn_close(w, c);
}

/* Opens connections up to the target, at the worker's rate. */
static void open_more(struct worker *w, uint64_t now)
{
	unsigned int opened = 0;

	while (w->nconns < w->t->target_conns) {
		if (now < w->next_open)
			return;
		if (w->interval) {
			w->next_open += w->interval;
			/* After a stall, catch up at most 100 ms worth of opens. */
			if (w->next_open + 100 * NSEC_PER_MSEC < now)
				w->next_open = now - 100 * NSEC_PER_MSEC;
		} else if (++opened > OPEN_BURST) {
			return;
		}
		if (conn_open(w, now) < 0) {
			w->next_open = now + RETRY_NS;
			return;
		}
	}
}

/*
 * hold: sends the next message on the connections whose turn it is. A
 * connection still waiting for its last echo skips its turn (one message
 * in flight at most), so a slow path lowers the rate instead of queueing.
 */
static void pace_pings(struct worker *w, uint64_t now)
{
	const struct lg_config *cfg = w->cfg;
	struct conn *c;

	if (w->last_pace && w->nconns)
		w->ping_credit += (double)w->nconns * (double)(now - w->last_pace) / 1e9 / cfg->interval;
	w->last_pace = now;
	if (w->ping_credit > w->nconns) /* after a stall, no burst of more than one round */
		w->ping_credit = w->nconns;
	while (w->ping_credit >= 1 && w->nconns) {
		w->ping_credit -= 1;
		w->ping_cursor = (w->ping_cursor + 1) % w->nconns;
		c = w->conns[w->ping_cursor];
		if (c->state != CONN_OPEN || c->msgs_done != c->msgs_sent)
			continue;
		c->sent_at[c->msgs_sent % cfg->pipeline] = now;
		c->msgs_sent++;
		c->tx_goal += cfg->size;
		if (conn_flush(w, c) < 0) {
			count_io_error(w, errno);
			conn_close(w, c);
		}
	}
}

/* hold: connections whose message came back while measuring. */
static uint64_t count_alive(const struct worker *w)
{
	uint64_t n = 0;
	unsigned int i;

	for (i = 0; i < w->nconns; i++)
		n += w->conns[i]->echoed_measuring;
	return n;
}

static int wait_ms(const struct worker *w, uint64_t now)
{
	int ms;

	if (w->nconns >= w->t->target_conns)
		ms = IDLE_WAIT_MS;
	else if (now >= w->next_open)
		ms = 0;
	else
		ms = (int)((w->next_open - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC);
	/* hold: the pacer needs its tick even while nothing else happens. */
	if (w->cfg->mode == LG_HOLD && ms > HOLD_TICK_MS)
		ms = HOLD_TICK_MS;
	return ms;
}

static void run(struct worker *w)
{
	struct epoll_event events[MAX_EVENTS];
	int phase = LG_WARMUP, now_phase, n, i;
	uint64_t now = now_ns();

	w->next_open = now;
	for (;;) {
		now_phase = __atomic_load_n(&lg_phase, __ATOMIC_ACQUIRE);
		if (now_phase == LG_STOP)
			break;
		if (now_phase != phase) {
			/* Measuring starts now: forget the warm-up. */
			phase = now_phase;
			memset(&w->t->stats, 0, offsetof(struct lg_stats, lat));
			hist_init(&w->t->stats.lat);
		}
		open_more(w, now);
		if (w->cfg->mode == LG_HOLD)
			pace_pings(w, now);
		n = epoll_wait(w->ep, events, MAX_EVENTS, wait_ms(w, now));
		for (i = 0; i < n; i++)
			conn_event(w, events[i].data.ptr, events[i].events);
		now = now_ns();
	}
	if (w->cfg->mode == LG_HOLD)
		STAT_ADD(w->t->stats.alive, count_alive(w));
}

void *lg_worker(void *arg)
{
	struct lg_thread *t = arg;
	struct worker w = { .t = t, .cfg = t->cfg };

	w.ep = epoll_create1(EPOLL_CLOEXEC);
	w.rxbuf = malloc(RXBUF_LEN);
	w.conns = calloc(t->target_conns ? t->target_conns : 1, sizeof(*w.conns));
	if (w.ep < 0 || !w.rxbuf || !w.conns) {
		t->error = errno ? errno : ENOMEM;
		goto out;
	}
	if (t->rate > 0)
		w.interval = (uint64_t)(NSEC_PER_SEC / t->rate);
	run(&w);
	while (w.nconns)
		conn_close(&w, w.conns[0]);
out:
	free(w.conns);
	free(w.rxbuf);
	if (w.ep >= 0)
		close(w.ep);
	return NULL;
}
