/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-bidir: many bidirectional bulk transfers through the proxy, with this
 * one process playing both ends: the load balancer (it writes a hand-made
 * PROXY v2 header and starts sending at once, so the proxy's engine hand-off
 * happens mid-stream) and the upstream (it listens where the proxy connects
 * and matches each accepted connection to its load-balancer side by the
 * claimed client address). Seeing both ends, it checks every byte of both
 * directions per connection and measures what a stall looks like from each
 * receiver.
 *
 *   mmpt-bidir -c PROXY:PORT -l UPSTREAM:PORT -n N [--parallel P]
 *              [--size SIZE] [--rate BYTES_PER_S] [--dst ADDR:PORT]
 *              [--net 203.0.113.] [--hosts H] [--port-base PORT]
 *              [--close fin|mix] [--hold-ms MS] [--timeout SEC]
 *              [--first-hold-ms MS] [--max-failures K] [--idle K]
 *              [--stall-report-ms MS] [--echo] [--lb-netns PATH]
 *              [--up-netns PATH]
 *
 * Connection i claims to come from NET(1 + i % H):(PORT + i / H), as in
 * mmpt-flood (H = 200, PORT = 30000 by default); NET may be IPv6
 * ("2001:db8:5::"). --dst (default 203.0.113.1:443 or [2001:db8:5::ffff]:443)
 * is the header's destination. At most P (default 1) connections run at a
 * time; the next starts when one finishes.
 *
 * Both ends send SIZE (default 1M) bytes of the deterministic stream (a seed
 * per connection and direction) and read everything. --rate caps each
 * direction of each connection at BYTES_PER_S (written in pieces of 1/200 s
 * of the rate, at least 4 KiB; default: as fast as TCP goes). Every byte is
 * hashed twice (sent, received) in this one thread, by libcrypto at about 1.8
 * GB/s: keep rate x 2 directions x parallel well below that, or the tool's
 * own CPU time shows up as gaps. How a connection ends:
 *   fin   (default) each end shuts down its write side when it has sent
 *         everything (but not before --hold-ms after its start), and is done
 *         at the peer's EOF;
 *   mix   connection i: i % 4 = 0, 1 fin; 2 the load balancer resets, 3 the
 *         upstream resets. The resetting end waits until it has sent and
 *         received SIZE bytes, the other end has received SIZE bytes too (a
 *         reset discards what a proxy still buffers: this end only knows
 *         because it is the same process), and --hold-ms passed, then
 *         closes with SO_LINGER {1, 0}; the other end then waits for the
 *         reset (or an EOF).
 * --first-hold-ms: the load balancer waits MS after writing the header before
 * it sends data (default 0: header and data back to back).
 * --max-failures K: start no new connection once K have failed (the summary
 * line then says "stopped"), so that a broken proxy fails fast.
 * --idle K: connections 0..K-1 are idle instead: the upstream sends one
 * byte, the load balancer nothing, and neither closes; they end only by a
 * reset, an EOF or --timeout (then reported as failed). For tests that look
 * at an idle flow next to active ones (start those with --parallel).
 * --echo: the upstream sends no stream of its own but echoes what it reads,
 * and reads only while it can write (an echo service, a game server, a
 * tunnel: docs/DESIGN.md §3c, "staged HOLD"); the load balancer end reads
 * everything always, as tcpkali does. It shuts down its write side once the
 * load balancer's EOF arrived and every byte went back. Both directions are
 * still checked byte for byte (down must be exactly what up was).
 * --stall-report-ms MS (default 2000): a connection that moved no byte for
 * MS since its handshake ended is reported once, while it is still open, so
 * that a test can look at its sockets and map entries before the timeout
 * closes it:
 *   stall I ADDR PORT lb_port P lb_sent N lb_recvd N up_sent N up_recvd N
 * (P: the load balancer's local port, the proxy sees it as the LB's port).
 * --lb-netns PATH (e.g. /run/netns/NAME): the load balancer's sockets are
 * made in that network namespace, the upstream's listener in the tool's own:
 * the load balancer's traffic then crosses the link between the two (t48
 * puts netem on it), while one process still sees both ends. The namespace
 * is entered only around socket(); a socket keeps the namespace it was made
 * in, whatever the thread that uses it later.
 * --up-netns PATH: the same for the upstream's listener (and so every
 * connection it accepts): an upstream beyond loopback, behind the link
 * between the two namespaces (t61).
 *
 * Per connection, when both ends are done:
 *   conn I ADDR PORT kind K ms T gap_down_ms G1 gap_up_ms G2 stall_ms S up N ok|BAD down N ok|BAD [error E]
 * T: from the load balancer's connect() to both ends done. G1: the longest
 * time the load balancer waited between two reads (from its connect to the
 * upstream's EOF or reset: the upstream->client direction); G2: the same at
 * the upstream (from accept: client->upstream). S: the longest time the
 * stream delivered nothing, neither end receiving a byte, from the end of
 * the load balancer's handshake until both ends are done (a stall of the
 * whole connection, where one direction's gap may be a retransmission the
 * other direction does not wait for). up/down: bytes received by
 * the upstream / the load balancer, "ok" when they are exactly what the other
 * end sent (count and sha256). Then, at the end:
 *   bidir ok N failed M ms T
 * Exit 0 when all N connections were exact in both directions.
 */
#include <errno.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "mmpt_common.h"
#include "mmpt_connect.h"

#define CHUNK (64 * 1024)
#define WRITE_BURST 16

enum kind { K_FIN, K_LB_RST, K_UP_RST };
static const char *const kind_name[] = { "fin", "lbrst", "uprst" };

struct end {
	int fd;
	bool resetter; /* closes with RST once everything was exchanged */
	bool no_shut; /* an RST kind: never shutdown(SHUT_WR) */
	uint64_t to_send, sent, recvd;
	uint64_t t_start_us, last_rx_us, max_gap_us;
	uint64_t not_before_us; /* first data (--first-hold-ms) */
	bool peer_eof, peer_reset, shut, failed, done;
	int err;
	struct stream gen;
	struct sha256 sent_sha, recv_sha;
	bool sent_sha_is_recv; /* --echo's upstream: it sent exactly what it received */
	uint8_t pend[CHUNK];
	size_t pend_off, pend_len;
};

enum slot_state { S_FREE, S_CONNECTING, S_RUNNING };

struct slot {
	enum slot_state st;
	int idx;
	enum kind kind;
	struct sockaddr_storage src;
	uint64_t t0_us, deadline_us;
	uint64_t progress_us; /* last time either end moved a byte */
	uint64_t progress_mark; /* bytes moved by both ends at that time */
	uint64_t rx_us, rx_mark; /* last time either end received a byte, and their sum then */
	uint64_t max_stall_us; /* longest time neither end received a byte, once established */
	bool stall_reported;
	struct end *lb, *up; /* up is NULL until the proxy connected */
};

static uint64_t g_size = 1 << 20, g_rate, g_hold_us, g_first_hold_us;
static int g_idle; /* connections 0..g_idle-1 are idle (--idle) */
static bool g_echo; /* the upstream echoes, reading only while it can write (--echo) */

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static struct end *end_new(int fd, uint64_t seed, bool resetter, bool no_shut)
{
	struct end *e = calloc(1, sizeof(*e));
	if (!e)
		die("out of memory");
	e->fd = fd;
	e->to_send = g_size;
	e->resetter = resetter;
	e->no_shut = no_shut;
	e->t_start_us = e->last_rx_us = now_us();
	stream_init(&e->gen, seed);
	sha256_init(&e->sent_sha);
	sha256_init(&e->recv_sha);
	return e;
}

static void note_rx(struct end *e)
{
	uint64_t t = now_us();
	if (t - e->last_rx_us > e->max_gap_us)
		e->max_gap_us = t - e->last_rx_us;
	e->last_rx_us = t;
}

static void end_fail(struct end *e, int err)
{
	if (!e->failed) {
		e->failed = true;
		e->err = err;
	}
}

/*
 * A few reads per call, not until EAGAIN: a fast sender would otherwise keep
 * this single thread on one socket and starve the others, and their "gaps"
 * would measure this tool, not the path.
 */
static void end_read(struct end *e)
{
	static uint8_t buf[128 * 1024];
	for (int i = 0; i < 4 && !e->peer_eof && !e->peer_reset && !e->failed; i++) {
		ssize_t r = recv(e->fd, buf, sizeof(buf), 0);
		if (r > 0) {
			sha256_update(&e->recv_sha, buf, (size_t)r);
			e->recvd += (uint64_t)r;
			note_rx(e);
		} else if (r == 0) {
			e->peer_eof = true;
			note_rx(e);
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN) {
			return;
		} else if (errno == ECONNRESET) {
			e->peer_reset = true;
			note_rx(e);
		} else {
			end_fail(e, errno);
		}
	}
}

/*
 * --echo, the upstream end: write back what is pending; only when all of it
 * went out, read the next chunk (hashed as received and as sent). At the load
 * balancer's EOF, shut down once everything went back.
 */
static void echo_step(struct end *e)
{
	for (int i = 0; i < WRITE_BURST && !e->failed && !e->peer_reset && !e->shut; i++) {
		while (e->pend_off < e->pend_len) {
			ssize_t w = send(e->fd, e->pend + e->pend_off, e->pend_len - e->pend_off, MSG_NOSIGNAL);
			if (w > 0) {
				e->pend_off += (size_t)w;
			} else if (w < 0 && errno == EINTR) {
				continue;
			} else if (w < 0 && errno == EAGAIN) {
				return; /* not a byte read until this went out */
			} else {
				if (errno == ECONNRESET || errno == EPIPE)
					e->peer_reset = true;
				else
					end_fail(e, errno);
				return;
			}
		}
		if (e->peer_eof) {
			if (!e->shut && shutdown(e->fd, SHUT_WR) < 0)
				end_fail(e, errno);
			e->shut = true;
			return;
		}
		ssize_t r = recv(e->fd, e->pend, sizeof(e->pend), 0);
		if (r > 0) {
			/* What it sends is what it received: one hash, copied at the end (exact()). */
			sha256_update(&e->recv_sha, e->pend, (size_t)r);
			e->recvd += (uint64_t)r;
			e->sent += (uint64_t)r;
			e->pend_off = 0;
			e->pend_len = (size_t)r;
			note_rx(e);
		} else if (r == 0) {
			e->peer_eof = true;
			note_rx(e);
			i--; /* shut down in the next pass, whatever the count: no event comes for it */
		} else if (errno == EINTR) {
			continue;
		} else if (errno == EAGAIN) {
			return;
		} else if (errno == ECONNRESET) {
			e->peer_reset = true;
		} else {
			end_fail(e, errno);
		}
	}
}

/* Bytes this end may have generated by now (--rate). */
static uint64_t allowance(const struct end *e, uint64_t now)
{
	if (!g_rate)
		return UINT64_MAX;
	return (now - e->t_start_us) * g_rate / 1000000 + 4096;
}

static bool all_sent(const struct end *e)
{
	return e->sent == e->to_send && e->pend_off == e->pend_len;
}

/* Returns true when the end waits for its rate allowance or a hold timer. */
static bool end_write(struct end *e)
{
	uint64_t now = now_us();
	if (e->failed || e->peer_reset || e->shut)
		return false;
	if (now < e->not_before_us)
		return true;
	/*
	 * At most WRITE_BURST chunks per call: flat out into a proxy that buffers
	 * tens of MiB, a write-until-EAGAIN would hash for hundreds of ms while
	 * nothing else (accept, the other connections) is served.
	 */
	for (int burst = 0; !all_sent(e); burst++) {
		if (burst == WRITE_BURST && e->pend_off == e->pend_len)
			return false; /* POLLOUT brings it back at once */
		if (e->pend_off == e->pend_len) {
			uint64_t left = e->to_send - e->sent, allow = allowance(e, now);
			size_t n = left < CHUNK ? (size_t)left : CHUNK;
			/* Paced: write in pieces of at least 1/200 s of the rate (>= 4 KiB), not byte by byte. */
			uint64_t piece = g_rate / 200 < 4096 ? 4096 : g_rate / 200;
			if (piece > n)
				piece = n;
			if (e->sent >= allow || (g_rate && allow - e->sent < piece))
				return true;
			if (allow - e->sent < n)
				n = (size_t)(allow - e->sent);
			e->pend_off = 0;
			e->pend_len = n;
			stream_fill(&e->gen, e->pend, n);
			sha256_update(&e->sent_sha, e->pend, n);
			e->sent += n;
		}
		ssize_t w = send(e->fd, e->pend + e->pend_off, e->pend_len - e->pend_off, MSG_NOSIGNAL);
		if (w > 0) {
			e->pend_off += (size_t)w;
		} else if (w < 0 && errno == EINTR) {
			continue;
		} else if (w < 0 && errno == EAGAIN) {
			return false;
		} else {
			if (errno == ECONNRESET || errno == EPIPE)
				e->peer_reset = true;
			else
				end_fail(e, errno);
			return false;
		}
	}
	if (e->no_shut)
		return false;
	if (now < e->t_start_us + g_hold_us)
		return true;
	if (shutdown(e->fd, SHUT_WR) < 0)
		end_fail(e, errno);
	e->shut = true;
	return false;
}

/* --lb-netns, --up-netns: where the load balancer's sockets and the upstream's listener are made (-1: here). */
static int g_lb_ns = -1, g_up_ns = -1, g_own_ns = -1;

static int netns_open(const char *opt, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		die("%s %s: %s", opt, path, strerror(errno));
	if (g_own_ns < 0)
		g_own_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (g_own_ns < 0)
		die("/proc/self/ns/net: %s", strerror(errno));
	return fd;
}

/* Enter ns (-1: stay) for the next socket(); netns_leave() comes back. */
static void netns_enter(int ns)
{
	if (ns >= 0 && setns(ns, CLONE_NEWNET))
		die("setns to --lb-netns/--up-netns: %s (root is needed)", strerror(errno));
}

static void netns_leave(int ns)
{
	if (ns >= 0 && setns(g_own_ns, CLONE_NEWNET))
		die("setns back to the tool's namespace: %s", strerror(errno));
}

/* connect_start(), with the socket made in --lb-netns when given. */
static int lb_connect_start(const struct sockaddr_storage *ta, socklen_t tl, int *err)
{
	netns_enter(g_lb_ns);
	int fd = connect_start(ta, tl, err);
	netns_leave(g_lb_ns);
	return fd;
}

static int outq(int fd)
{
	int n = 0;
	return ioctl(fd, SIOCOUTQ, &n) ? -1 : n;
}

/* Decide whether the end is finished (and reset it when it is the resetter). */
static bool end_check(struct end *e, const struct end *other, uint64_t peer_size, bool *waiting)
{
	if (e->done)
		return true;
	if (e->failed) {
		e->done = true;
		return true;
	}
	if (e->resetter) {
		if (e->peer_reset || e->peer_eof) {
			/* The peer ended first: wrong, but done. */
			end_fail(e, e->peer_reset ? ECONNRESET : EPIPE);
			e->done = true;
			return true;
		}
		if (!all_sent(e) || e->recvd < peer_size || !other || other->recvd < g_size)
			return false;
		if (outq(e->fd) != 0 || now_us() < e->t_start_us + g_hold_us) {
			*waiting = true;
			return false;
		}
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		setsockopt(e->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
		close(e->fd);
		e->fd = -1;
		e->done = true;
		return true;
	}
	if (e->no_shut) { /* waits for the peer's reset */
		if (e->peer_reset || e->peer_eof)
			e->done = true;
		return e->done;
	}
	if (e->shut && (e->peer_eof || e->peer_reset))
		e->done = true;
	return e->done;
}

static void end_close(struct end *e)
{
	if (!e)
		return;
	if (e->fd >= 0)
		close(e->fd);
	sha256_free(&e->sent_sha);
	sha256_free(&e->recv_sha);
	free(e);
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port && !memcmp(&x->sin6_addr, &y->sin6_addr, 16);
}

/* "ok" when `got` is exactly what `from` sent. */
static bool exact(struct end *from, struct end *got)
{
	char a[65], b[65];
	if (!from || !got)
		return false;
	sha256_hex(&from->sent_sha, a);
	sha256_hex(&got->recv_sha, b);
	return from->sent == got->recvd && from->sent == g_size && !strcmp(a, b);
}

int main(int argc, char **argv)
{
	struct claim_opts o = CLAIM_OPTS_INIT(30);
	const char *listen_at = NULL, *close_mode = "fin";
	int parallel = 1, max_failures = 0;
	uint64_t stall_us = 2000000;

	tool_start("mmpt-bidir");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--echo")) { /* the one option without a value */
			g_echo = true;
			continue;
		}
		v = opt_value(argc, argv, i);
		if (!strcmp(a, "-l"))
			listen_at = v;
		else if (!strcmp(a, "--parallel"))
			parallel = atoi(v);
		else if (!strcmp(a, "--size"))
			g_size = parse_size(v);
		else if (!strcmp(a, "--rate"))
			g_rate = parse_size(v);
		else if (!strcmp(a, "--close"))
			close_mode = v;
		else if (!strcmp(a, "--hold-ms"))
			g_hold_us = strtoull(v, NULL, 0) * 1000;
		else if (!strcmp(a, "--first-hold-ms"))
			g_first_hold_us = strtoull(v, NULL, 0) * 1000;
		else if (!strcmp(a, "--max-failures"))
			max_failures = atoi(v);
		else if (!strcmp(a, "--idle"))
			g_idle = atoi(v);
		else if (!strcmp(a, "--stall-report-ms"))
			stall_us = strtoull(v, NULL, 0) * 1000;
		else if (!strcmp(a, "--lb-netns"))
			g_lb_ns = netns_open(a, v);
		else if (!strcmp(a, "--up-netns"))
			g_up_ns = netns_open(a, v);
		else if (!claim_opt(&o, a, v))
			die("unknown option %s (see the comment at the top of tests/tools/mmpt-bidir.c)", a);
		i++;
	}
	int n = o.n;
	if (!o.target || !listen_at || n <= 0 || parallel <= 0 || o.hosts <= 0 || o.hosts > 254)
		die("usage: see the comment at the top of tests/tools/mmpt-bidir.c");
	claim_check_ports(&o);
	if (strcmp(close_mode, "fin") && strcmp(close_mode, "mix"))
		die("--close takes fin or mix");
	if (g_echo && (strcmp(close_mode, "fin") || g_idle))
		die("--echo works with --close fin only, and without --idle");
	if (parallel > n)
		parallel = n;
	need_nofile((rlim_t)parallel * 2, parallel); /* both ends of each connection */

	struct sockaddr_storage ta, la, da;
	socklen_t tl = parse_addr(o.target, &ta, true), ll = parse_addr(listen_at, &la, true);
	{
		struct sockaddr_storage s0;
		claimed_src(&o, 0, &s0);
		parse_addr(o.dst ? o.dst : s0.ss_family == AF_INET ? "203.0.113.1:443" : "[2001:db8:5::ffff]:443", &da,
			   true);
		if (da.ss_family != s0.ss_family)
			die("--dst and --net must be of the same family");
	}

	netns_enter(g_up_ns);
	int lfd = socket(la.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
	netns_leave(g_up_ns);
	if (lfd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&la, ll) < 0)
		die("bind %s: %s", listen_at, strerror(errno));
	if (listen(lfd, 4096) < 0)
		die("listen: %s", strerror(errno));

	struct slot *slots = calloc((size_t)parallel, sizeof(*slots));
	struct pollfd *pfds = calloc((size_t)parallel * 2 + 1, sizeof(*pfds));
	struct end **pend = calloc((size_t)parallel * 2 + 1, sizeof(*pend));
	int *pslot = calloc((size_t)parallel * 2 + 1, sizeof(*pslot));
	int next = 0, ok = 0, failed = 0, stray = 0;
	bool stopped = false;
	uint64_t t_begin = now_us();

	while (ok + failed < n) {
		uint64_t now = now_us();
		if (max_failures && failed >= max_failures && !stopped) {
			stopped = true;
			n = next; /* finish the running ones, start no more */
			if (ok + failed >= n)
				break;
		}
		/* Start connections into free slots. */
		for (int s = 0; s < parallel && next < n && !stopped; s++) {
			struct slot *sl = &slots[s];
			if (sl->st != S_FREE)
				continue;
			memset(sl, 0, sizeof(*sl));
			sl->idx = next++;
			sl->kind = !strcmp(close_mode, "fin") || sl->idx % 4 < 2 ? K_FIN
				   : sl->idx % 4 == 2			      ? K_LB_RST
									      : K_UP_RST;
			claimed_src(&o, sl->idx, &sl->src);
			int err, fd = lb_connect_start(&ta, tl, &err);
			/* After connect() but before any write, so it still applies to all data. */
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
			sl->lb = end_new(fd, 1000 + 2 * (uint64_t)sl->idx, sl->kind == K_LB_RST, sl->kind != K_FIN);
			if (sl->idx < g_idle) {
				sl->lb->to_send = 0;
				sl->lb->no_shut = true;
			}
			sl->t0_us = now;
			sl->deadline_us = now + (uint64_t)o.timeout_s * 1000000;
			sl->progress_us = now;
			if (err)
				end_fail(sl->lb, err);
			sl->st = S_CONNECTING;
		}
		/* Build the poll set. */
		int np = 0;
		bool waiting = false;
		pfds[np] = (struct pollfd){ .fd = lfd, .events = POLLIN };
		pend[np] = NULL;
		pslot[np++] = -1;
		for (int s = 0; s < parallel; s++) {
			struct slot *sl = &slots[s];
			if (sl->st == S_FREE)
				continue;
			if (sl->st == S_CONNECTING && !sl->lb->failed) {
				pfds[np] = (struct pollfd){ .fd = sl->lb->fd, .events = POLLOUT };
				pend[np] = sl->lb;
				pslot[np++] = s;
				continue;
			}
			struct end *es[2] = { sl->lb, sl->up };
			for (int k = 0; k < 2; k++) {
				struct end *e = es[k];
				if (!e || e->done || e->fd < 0)
					continue;
				short ev = 0;
				if (g_echo && e == sl->up) {
					/* Reads only while it can write: POLLIN only with nothing pending. */
					ev = e->pend_off < e->pend_len ? POLLOUT : e->peer_eof ? 0 : POLLIN;
					pfds[np] = (struct pollfd){ .fd = e->fd, .events = ev };
					pend[np] = e;
					pslot[np++] = s;
					continue;
				}
				if (!e->peer_eof && !e->peer_reset)
					ev |= POLLIN;
				if (!e->shut && !e->peer_reset && !all_sent(e) && now >= e->not_before_us &&
				    (e->pend_off < e->pend_len || !g_rate))
					ev |= POLLOUT;
				if (!all_sent(e) && (now < e->not_before_us || g_rate))
					waiting = true;
				if (all_sent(e) && !e->shut && !e->no_shut)
					waiting = true; /* --hold-ms before the FIN */
				pfds[np] = (struct pollfd){ .fd = e->fd, .events = ev };
				pend[np] = e;
				pslot[np++] = s;
			}
			if (sl->up && (sl->lb->resetter || sl->up->resetter))
				waiting = true; /* SIOCOUTQ and --hold-ms are polled */
		}
		int r = poll(pfds, (nfds_t)np, waiting ? 1 : 50);
		if (r < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		now = now_us();
		/* Accept upstream connections and match them to their slot. */
		if (pfds[0].revents & POLLIN) {
			for (;;) {
				struct sockaddr_storage peer;
				socklen_t pl = sizeof(peer);
				int fd = accept4(lfd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
				if (fd < 0)
					break;
				pl = sizeof(peer);
				getpeername(fd, (struct sockaddr *)&peer, &pl); /* the value under test */
				int found = -1;
				for (int s = 0; s < parallel; s++)
					if (slots[s].st != S_FREE && !slots[s].up && same_addr(&slots[s].src, &peer))
						found = s;
				if (found < 0) {
					char a[128];
					fprintf(stderr, "mmpt-bidir: stray upstream connection from %s\n",
						fmt_addr(&peer, a, sizeof(a)));
					stray++;
					close(fd);
					continue;
				}
				struct slot *sl = &slots[found];
				sl->up = end_new(fd, 2000 + 2 * (uint64_t)sl->idx, sl->kind == K_UP_RST, sl->kind != K_FIN);
				sl->up->sent_sha_is_recv = g_echo;
				if (sl->idx < g_idle) {
					sl->up->to_send = 1;
					sl->up->no_shut = true;
				}
			}
		}
		for (int p = 1; p < np; p++) {
			struct slot *sl = &slots[pslot[p]];
			struct end *e = pend[p];
			if (sl->st == S_CONNECTING) {
				if (!pfds[p].revents)
					continue;
				int err = connect_result(e->fd);
				if (err)
					end_fail(e, err);
				else if (!send_claim(e->fd, &sl->src, &da, NULL, 0))
					end_fail(e, errno);
				/* The stream starts now: the header is not data. */
				e->t_start_us = e->last_rx_us = now_us();
				e->not_before_us = e->t_start_us + g_first_hold_us;
				sl->st = S_RUNNING;
				/*
				 * Both stall clocks start with the stream, not the handshake: a
				 * lost SYN waits 1 s by TCP's own rule, and no proxy is involved yet.
				 */
				sl->rx_us = sl->progress_us = e->t_start_us;
				if (!e->failed)
					end_write(e);
				continue;
			}
			if (g_echo && e == sl->up) {
				if (pfds[p].revents)
					echo_step(e);
			} else if (pfds[p].revents & (POLLIN | POLLHUP | POLLERR)) {
				end_read(e);
			}
			if (pfds[p].revents & POLLERR && !e->peer_reset && !e->failed) {
				int err = 0;
				socklen_t el = sizeof(err);
				getsockopt(e->fd, SOL_SOCKET, SO_ERROR, &err, &el);
				if (err == ECONNRESET)
					e->peer_reset = true;
				else if (err)
					end_fail(e, err);
			}
		}
		/* Writes (rate timers too), completion, timeouts. */
		for (int s = 0; s < parallel; s++) {
			struct slot *sl = &slots[s];
			if (sl->st == S_FREE)
				continue;
			bool w = false;
			if (sl->st == S_RUNNING) {
				if (!sl->lb->done && sl->lb->fd >= 0)
					end_write(sl->lb);
				if (sl->up && !sl->up->done && sl->up->fd >= 0 && !g_echo)
					end_write(sl->up);
			}
			bool lb_done = sl->st == S_RUNNING && end_check(sl->lb, sl->up, g_size, &w);
			bool up_done = sl->up && end_check(sl->up, sl->lb, g_size, &w);
			bool timed_out = now_us() > sl->deadline_us;
			uint64_t moved = sl->lb->sent - (sl->lb->pend_len - sl->lb->pend_off) + sl->lb->recvd +
					 (sl->up ? sl->up->sent - (sl->up->pend_len - sl->up->pend_off) + sl->up->recvd : 0);
			/*
			 * stall_ms: the stream's longest time without delivery, both
			 * directions together. Written bytes do not count: a sender
			 * keeps filling its socket buffer while the path is stuck.
			 */
			uint64_t rxd = sl->lb->recvd + (sl->up ? sl->up->recvd : 0);
			if (sl->st == S_RUNNING && !(lb_done && up_done) && (rxd != sl->rx_mark || timed_out)) {
				if (now_us() - sl->rx_us > sl->max_stall_us)
					sl->max_stall_us = now_us() - sl->rx_us;
				sl->rx_mark = rxd;
				sl->rx_us = now_us();
			}
			if (moved != sl->progress_mark) {
				sl->progress_mark = moved;
				sl->progress_us = now_us();
			} else if (stall_us && !sl->stall_reported && sl->st == S_RUNNING &&
				   now_us() - sl->progress_us > stall_us && !(lb_done && up_done)) {
				struct sockaddr_storage lba;
				socklen_t lbl = sizeof(lba);
				char a[128], b[128];
				sl->stall_reported = true;
				if (sl->lb->fd < 0 || getsockname(sl->lb->fd, (struct sockaddr *)&lba, &lbl))
					memset(&lba, 0, sizeof(lba));
				fmt_addr(&lba, b, sizeof(b));
				printf("stall %d %s lb_port %s lb_sent %llu lb_recvd %llu up_sent %llu up_recvd %llu\n", sl->idx,
				       fmt_addr(&sl->src, a, sizeof(a)), strchr(b, ' ') ? strchr(b, ' ') + 1 : "0",
				       (unsigned long long)sl->lb->sent, (unsigned long long)sl->lb->recvd,
				       (unsigned long long)(sl->up ? sl->up->sent : 0),
				       (unsigned long long)(sl->up ? sl->up->recvd : 0));
			}
			if (sl->st == S_CONNECTING && sl->lb->failed)
				lb_done = up_done = true; /* connect failed: nothing to wait for */
			if (!(lb_done && up_done) && !timed_out)
				continue;
			char a[128], err[160] = "";
			if (sl->up && sl->up->sent_sha_is_recv) /* before exact() finalizes recv_sha */
				sha256_copy(&sl->up->sent_sha, &sl->up->recv_sha);
			bool up_ok = exact(sl->lb, sl->up), down_ok = exact(sl->up, sl->lb);
			if (timed_out && !(lb_done && up_done))
				snprintf(err, sizeof(err), " error timeout (lb: sent %llu recvd %llu%s; upstream: %s)",
					 (unsigned long long)sl->lb->sent, (unsigned long long)sl->lb->recvd,
					 sl->lb->peer_eof ? " eof" : "", sl->up ? "accepted" : "never connected");
			else if (sl->lb->failed)
				snprintf(err, sizeof(err), " error lb: %s", strerror(sl->lb->err));
			else if (sl->up && sl->up->failed)
				snprintf(err, sizeof(err), " error upstream: %s", strerror(sl->up->err));
			else if (!sl->up)
				snprintf(err, sizeof(err), " error the upstream never saw this client");
			else if (sl->kind == K_FIN && (sl->lb->peer_reset || sl->up->peer_reset))
				snprintf(err, sizeof(err), " error unexpected reset seen by the %s",
					 sl->lb->peer_reset ? "load balancer" : "upstream");
			printf("conn %d %s kind %s ms %.1f gap_down_ms %.1f gap_up_ms %.1f stall_ms %.1f up %llu %s down %llu "
			       "%s%s\n",
			       sl->idx, fmt_addr(&sl->src, a, sizeof(a)), kind_name[sl->kind],
			       (now_us() - sl->t0_us) / 1000.0, sl->lb->max_gap_us / 1000.0,
			       sl->up ? sl->up->max_gap_us / 1000.0 : 0.0, sl->max_stall_us / 1000.0,
			       (unsigned long long)(sl->up ? sl->up->recvd : 0),
			       up_ok ? "ok" : "BAD", (unsigned long long)sl->lb->recvd, down_ok ? "ok" : "BAD", err);
			if (up_ok && down_ok && !err[0])
				ok++;
			else
				failed++;
			end_close(sl->lb);
			end_close(sl->up);
			sl->lb = sl->up = NULL;
			sl->st = S_FREE;
		}
	}
	printf("bidir ok %d failed %d ms %llu%s%s\n", ok, failed, (unsigned long long)((now_us() - t_begin) / 1000),
	       stopped ? " (stopped after --max-failures)" : "",
	       stray ? " (stray upstream connections, see stderr)" : "");
	close(lfd);
	return failed || stray || stopped ? 1 : 0;
}
