/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-udp: the UDP tools of the integration tests.
 *
 *   mmpt-udp echo -l ADDR:PORT [-l ...] [--no-echo]
 *       The upstream. Echoes every datagram to its sender. Prints "listening
 *       ADDR PORT" per socket, "peer ADDR PORT" the first time a sender is
 *       seen (the client address mmproxy must present), and "seqerr ADDR PORT
 *       expected N got M" when a sender's sequence numbers skip or go back.
 *       On SIGTERM/SIGINT: "summary peers N dgrams M seqerr K".
 *
 *   mmpt-udp send -c PROXY --format v2|first|spp|local|none --client ADDR:PORT
 *                 [--clients N] [--hosts H] [--dst ADDR:PORT] [-n COUNT]
 *                 [--rate PPS] [--size BYTES (0, or 16..60000)] [--bind ADDR] [--echo]
 *                 [--timeout S] [--hold-ms MS] [--pause-after K --pause-ms MS]
 *                 [--shared-socket] [--tlv] [--pp2-tlv TYPE:HEX ...]
 *       The load balancer, udppp style: one socket per client, clients
 *       ADDR+(i % H) port PORT+(i / H). "v2": a PROXY v2 DGRAM header on
 *       every datagram; "first": on the first only (Spectrum); "spp":
 *       Cloudflare SPP on every one; "local": v2 LOCAL. Each client sends
 *       COUNT sequenced datagrams (RATE per second over all clients). With
 *       --echo, replies are read back on the client's own socket and checked:
 *       in order, byte for byte, and for spp starting with the exact header
 *       that was sent. --hold-ms keeps every socket open that long after the
 *       last send (concurrency tests). --pause-after K waits MS milliseconds
 *       after each client's K-th datagram, on the same sockets (idle timeout
 *       tests: with "first", what follows carries no header). --shared-socket
 *       sends every client through one socket, as an SPP load balancer may:
 *       each reply must then carry the header of the client its payload
 *       belongs to. --tlv: v2 and first headers end with a NOOP TLV (a form
 *       userspace takes and the fast path leaves to it). --pp2-tlv appends
 *       a TLV to every v2 header (v2, first, local), repeatable. Prints
 *       "result clients N sent S echoed E missing M reordered R bad B
 *       send_errors X ms T max_gap_ms G unique Q dups D";
 *       exits 1 when --echo and anything is missing, reordered or bad. G
 *       (with --echo): the longest time a client waited between two good
 *       replies while it was sending or they were due (a stall of the path;
 *       --pause-ms is not counted: the wait restarts when sending resumes).
 *       Q: sequence numbers that came back at least once, D: good replies
 *       for a sequence number that already had one (a path that duplicates;
 *       "reordered" counts those too, and "missing" then undercounts loss,
 *       which is sent - Q).
 *
 *   mmpt-udp bad -c PROXY --kind KIND [--client ADDR:PORT] [--bind ADDR] [--count N]
 *       Send N (default 1) malformed datagrams of one kind: truncated,
 *       sig-prefix, version, command, family-unix, family-unspec, stream,
 *       bad-length, short-block, crc, port0, unspecified, no-header,
 *       spp-short.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "mmpt_common.h"

#define TAG_MAGIC 0x4d554450u /* "MUDP" */
#define TAG_LEN 16
#define MAX_DGRAM 65536
#define SPP_LEN 38
#define MAX_LISTEN 8

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return ntohl(v);
}

/* Payload of (client, seq): the tag, then bytes derived from both. Size 0: an empty datagram. */
static void payload_fill(uint8_t *p, size_t size, uint32_t client, uint64_t seq)
{
	if (size < TAG_LEN)
		return;
	put32(p, TAG_MAGIC);
	put32(p + 4, client);
	put32(p + 8, (uint32_t)(seq >> 32));
	put32(p + 12, (uint32_t)seq);
	for (size_t i = TAG_LEN; i < size; i++)
		p[i] = (uint8_t)(client * 31 + seq * 7 + i);
}

static bool tag_get(const uint8_t *p, size_t len, uint32_t *client, uint64_t *seq)
{
	if (len < TAG_LEN || get32(p) != TAG_MAGIC)
		return false;
	*client = get32(p + 4);
	*seq = (uint64_t)get32(p + 8) << 32 | get32(p + 12);
	return true;
}

static socklen_t ss_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* ---------------------------------------------------------------- echo -- */

struct peer {
	struct sockaddr_storage addr;
	uint64_t next_seq;
	bool seen_tag;
	unsigned int errs;
	struct peer *next;
};

#define PEER_BUCKETS 65536
static struct peer *g_peers[PEER_BUCKETS];
static uint64_t g_npeers, g_dgrams, g_seqerr;

static unsigned peer_hash(const struct sockaddr_storage *ss)
{
	const uint8_t *p = (const uint8_t *)ss;
	unsigned h = 2166136261u;
	for (size_t i = 0; i < ss_len(ss); i++)
		h = (h ^ p[i]) * 16777619u;
	return h & (PEER_BUCKETS - 1);
}

static struct peer *peer_get(const struct sockaddr_storage *ss)
{
	unsigned h = peer_hash(ss);
	char a[80];
	for (struct peer *p = g_peers[h]; p; p = p->next)
		if (!memcmp(&p->addr, ss, ss_len(ss)))
			return p;
	struct peer *p = calloc(1, sizeof(*p));
	if (!p)
		die("out of memory");
	memcpy(&p->addr, ss, ss_len(ss));
	p->next = g_peers[h];
	g_peers[h] = p;
	g_npeers++;
	printf("peer %s\n", fmt_addr(ss, a, sizeof(a)));
	return p;
}

static void echo_check(struct peer *p, const uint8_t *buf, size_t len)
{
	uint32_t client;
	uint64_t seq;
	char a[80];

	if (!tag_get(buf, len, &client, &seq))
		return;
	if (p->seen_tag && seq != p->next_seq) {
		g_seqerr++;
		if (p->errs++ < 10)
			printf("seqerr %s expected %llu got %llu\n", fmt_addr(&p->addr, a, sizeof(a)),
			       (unsigned long long)p->next_seq, (unsigned long long)seq);
	}
	p->seen_tag = true;
	p->next_seq = seq + 1;
}

static int cmd_echo(int argc, char **argv)
{
	struct sockaddr_storage addrs[MAX_LISTEN];
	int nl = 0, fds[MAX_LISTEN], ep, one = 1;
	bool do_echo = true;
	static uint8_t buf[MAX_DGRAM];
	char a[80];

	for (int i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "-l") && i + 1 < argc && nl < MAX_LISTEN)
			parse_addr(argv[++i], &addrs[nl++], true);
		else if (!strcmp(argv[i], "--no-echo"))
			do_echo = false;
		else
			die("echo: unknown argument '%s'", argv[i]);
	}
	if (!nl)
		die("echo: -l ADDR:PORT is required");
	ep = epoll_create1(0);
	for (int i = 0; i < nl; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
		int rcv = 8 << 20;
		fds[i] = socket(addrs[i].ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (fds[i] < 0)
			die("socket: %s", strerror(errno));
		setsockopt(fds[i], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		setsockopt(fds[i], SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
		setsockopt(fds[i], SOL_SOCKET, SO_SNDBUFFORCE, &rcv, sizeof(rcv));
		if (addrs[i].ss_family == AF_INET6)
			setsockopt(fds[i], IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fds[i], (struct sockaddr *)&addrs[i], ss_len(&addrs[i])))
			die("bind %s: %s", fmt_addr(&addrs[i], a, sizeof(a)), strerror(errno));
		epoll_ctl(ep, EPOLL_CTL_ADD, fds[i], &ev);
		printf("listening %s\n", fmt_addr(&addrs[i], a, sizeof(a)));
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while (!g_stop) {
		struct epoll_event evs[MAX_LISTEN];
		int n = epoll_wait(ep, evs, MAX_LISTEN, 200);
		for (int e = 0; e < n; e++) {
			int fd = fds[evs[e].data.u32];
			for (;;) {
				struct sockaddr_storage from;
				socklen_t flen = sizeof(from);
				ssize_t r = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);
				if (r < 0)
					break;
				g_dgrams++;
				struct peer *p = peer_get(&from);
				echo_check(p, buf, r);
				if (do_echo)
					sendto(fd, buf, r, 0, (struct sockaddr *)&from, flen);
			}
		}
	}
	printf("summary peers %llu dgrams %llu seqerr %llu\n", (unsigned long long)g_npeers,
	       (unsigned long long)g_dgrams, (unsigned long long)g_seqerr);
	return 0;
}

/* -------------------------------------------------------------- headers -- */

enum fmt { F_V2, F_FIRST, F_SPP, F_LOCAL, F_NONE };

/* v2 PROXY DGRAM for src -> dst (both one family; IPv4 written as such). */
static size_t v2_dgram(uint8_t *out, const struct sockaddr_storage *src, const struct sockaddr_storage *dst)
{
	size_t n = pp_build_v2(out, 64, src, dst);
	out[13] = (out[13] & 0xF0) | 0x2; /* DGRAM, not STREAM */
	return n;
}

static void spp_addr(uint8_t *addr, uint8_t *port, const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)ss;
		memset(addr, 0, 10);
		addr[10] = addr[11] = 0xFF;
		memcpy(addr + 12, &in->sin_addr, 4);
		memcpy(port, &in->sin_port, 2);
	} else {
		const struct sockaddr_in6 *in6 = (const void *)ss;
		memcpy(addr, &in6->sin6_addr, 16);
		memcpy(port, &in6->sin6_port, 2);
	}
}

/* A NOOP TLV (type 4, one zero byte) after the v2 header of n bytes; its length field grown. */
static size_t v2_add_noop(uint8_t *out, size_t n)
{
	static const uint8_t noop[4] = { 0x04, 0x00, 0x01, 0x00 };

	memcpy(out + n, noop, sizeof(noop));
	n += sizeof(noop);
	out[14] = (uint8_t)((n - 16) >> 8);
	out[15] = (uint8_t)(n - 16);
	return n;
}

static size_t spp_build(uint8_t *out, const struct sockaddr_storage *src, const struct sockaddr_storage *dst)
{
	out[0] = 0x56;
	out[1] = 0xEC;
	spp_addr(out + 2, out + 34, src);
	spp_addr(out + 18, out + 36, dst);
	return SPP_LEN;
}

/* Client i: the base address plus i % hosts, the base port plus i / hosts. */
static void client_addr(const struct sockaddr_storage *base, unsigned i, unsigned hosts,
			struct sockaddr_storage *out)
{
	*out = *base;
	if (out->ss_family == AF_INET) {
		struct sockaddr_in *in = (struct sockaddr_in *)out;
		in->sin_addr.s_addr = htonl(ntohl(in->sin_addr.s_addr) + i % hosts);
		in->sin_port = htons(ntohs(in->sin_port) + i / hosts);
	} else {
		struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)out;
		in6->sin6_addr.s6_addr[15] += i % hosts;
		in6->sin6_port = htons(ntohs(in6->sin6_port) + i / hosts);
	}
}

/* ---------------------------------------------------------------- send -- */

struct client {
	int fd;
	uint32_t id;
	uint8_t hdr[1024];
	size_t hdr_len;
	uint64_t sent, echoed, next_echo, reordered, bad;
	uint64_t last_reply_ms; /* 0 until its first send; then the last good reply (max_gap_ms) */
	uint8_t *seen; /* one bit per sequence number that came back (unique, dups) */
	uint64_t unique, dups;
};

static int cmd_send(int argc, char **argv)
{
	struct sockaddr_storage proxy, base, dst, bind_addr;
	bool have_client = false, have_dst = false, have_bind = false, want_echo = false, have_proxy = false;
	bool shared = false, tlv = false;
	unsigned nclients = 1, hosts = 1, size = 64;
	uint64_t count = 1, hold_ms = 0, pause_after = 0, pause_ms = 0;
	double rate = 0, timeout = 10;
	enum fmt fmt = F_V2;
	static uint8_t buf[MAX_DGRAM], pkt[MAX_DGRAM];
	const char *tlvs[16];
	unsigned ntlvs = 0;

	for (int i = 0; i < argc; i++) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v && strcmp(o, "--echo") && strcmp(o, "--shared-socket") && strcmp(o, "--tlv"))
			die("send: '%s' needs a value or is unknown", o);
		i++;
		if (!strcmp(o, "-c")) {
			parse_addr(v, &proxy, true);
			have_proxy = true;
		} else if (!strcmp(o, "--format")) {
			fmt = !strcmp(v, "v2") ? F_V2 : !strcmp(v, "first") ? F_FIRST : !strcmp(v, "spp") ? F_SPP
			      : !strcmp(v, "local") ? F_LOCAL : !strcmp(v, "none") ? F_NONE : (die("bad --format"), F_V2);
		} else if (!strcmp(o, "--client")) {
			parse_addr(v, &base, true);
			have_client = true;
		} else if (!strcmp(o, "--clients")) {
			nclients = atoi(v);
		} else if (!strcmp(o, "--hosts")) {
			hosts = atoi(v);
		} else if (!strcmp(o, "--dst")) {
			parse_addr(v, &dst, true);
			have_dst = true;
		} else if (!strcmp(o, "-n")) {
			count = strtoull(v, NULL, 10);
		} else if (!strcmp(o, "--rate")) {
			rate = atof(v);
		} else if (!strcmp(o, "--size")) {
			size = atoi(v);
		} else if (!strcmp(o, "--bind")) {
			parse_addr(v, &bind_addr, false);
			have_bind = true;
		} else if (!strcmp(o, "--echo")) {
			want_echo = true;
			i--;
		} else if (!strcmp(o, "--shared-socket")) {
			shared = true;
			i--;
		} else if (!strcmp(o, "--tlv")) {
			tlv = true;
			i--;
		} else if (!strcmp(o, "--timeout")) {
			timeout = atof(v);
		} else if (!strcmp(o, "--hold-ms")) {
			hold_ms = strtoull(v, NULL, 10);
		} else if (!strcmp(o, "--pause-after")) {
			pause_after = strtoull(v, NULL, 10);
		} else if (!strcmp(o, "--pause-ms")) {
			pause_ms = strtoull(v, NULL, 10);
		} else if (!strcmp(o, "--pp2-tlv")) {
			if (ntlvs == sizeof(tlvs) / sizeof(tlvs[0]))
				die("send: at most 16 --pp2-tlv");
			tlvs[ntlvs++] = v;
		} else {
			die("send: unknown option '%s'", o);
		}
	}
	if (!have_proxy || (!have_client && fmt != F_LOCAL && fmt != F_NONE))
		die("send: -c PROXY and --client ADDR:PORT are required");
	if (!have_client)
		parse_addr("203.0.113.1:1", &base, true);
	if (!have_dst)
		parse_addr(base.ss_family == AF_INET ? "198.51.100.1:443" : "[2001:db8:1::1]:443", &dst, true);
	if ((size && size < TAG_LEN) || size > 60000 || !nclients || !hosts)
		die("send: --size 0 or 16..60000, --clients and --hosts >= 1");

	struct client *cl = calloc(nclients, sizeof(*cl));
	int ep = epoll_create1(0);
	if (!cl || ep < 0)
		die("out of memory");
	for (unsigned i = 0; i < nclients; i++) {
		struct sockaddr_storage ca;
		struct epoll_event ev = { .events = EPOLLIN, .data.u32 = i };
		int rcv = 1 << 20;
		cl[i].id = i;
		cl[i].seen = calloc(count / 8 + 1, 1);
		if (!cl[i].seen)
			die("out of memory");
		client_addr(&base, i, hosts, &ca);
		if (fmt == F_V2 || fmt == F_FIRST)
			cl[i].hdr_len = v2_dgram(cl[i].hdr, &ca, &dst);
		if ((fmt == F_V2 || fmt == F_FIRST) && tlv)
			cl[i].hdr_len = v2_add_noop(cl[i].hdr, cl[i].hdr_len);
		else if (fmt == F_SPP)
			cl[i].hdr_len = spp_build(cl[i].hdr, &ca, &dst);
		else if (fmt == F_LOCAL)
			cl[i].hdr_len = pp_build_v2(cl[i].hdr, 64, NULL, &dst);
		for (unsigned t = 0; t < ntlvs && fmt != F_SPP && fmt != F_NONE; t++)
			pp_add_tlv(cl[i].hdr, &cl[i].hdr_len, sizeof(cl[i].hdr), tlvs[t]);
		if (shared && i > 0) {
			cl[i].fd = cl[0].fd;
			continue;
		}
		cl[i].fd = socket(proxy.ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
		if (cl[i].fd < 0)
			die("socket %u: %s (ulimit -n?)", i, strerror(errno));
		setsockopt(cl[i].fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcv, sizeof(rcv));
		if (have_bind) {
			struct sockaddr_storage b = bind_addr;
			if (bind(cl[i].fd, (struct sockaddr *)&b, ss_len(&b)))
				die("bind: %s", strerror(errno));
		}
		if (connect(cl[i].fd, (struct sockaddr *)&proxy, ss_len(&proxy)))
			die("connect: %s", strerror(errno));
		epoll_ctl(ep, EPOLL_CTL_ADD, cl[i].fd, &ev);
	}

	uint64_t total = count * nclients, sent_total = 0, t0 = now_ms();
	uint64_t deadline = t0 + (uint64_t)(timeout * 1000), last_send = 0;
	double interval_ms = rate > 0 ? 1000.0 / rate : 0;
	unsigned next_client = 0;
	uint64_t send_errors = 0, resume_at = 0, max_gap_ms = 0;
	bool paused = false;
	while (now_ms() < deadline) {
		/* Every client has sent pause_after datagrams: wait (reading replies), once. */
		if (pause_after && !paused && sent_total == pause_after * nclients && sent_total < total) {
			if (!resume_at)
				resume_at = now_ms() + pause_ms;
			if (now_ms() >= resume_at) {
				paused = true;
				t0 += pause_ms; /* keep the rate schedule */
				/* The pause is the sender's, not a stall: the wait for replies starts again. */
				for (unsigned i = 0; i < nclients; i++)
					cl[i].last_reply_ms = now_ms();
			}
		}
		/* Send what the rate allows by now, clients in turn. */
		while (sent_total < total) {
			if (pause_after && !paused && sent_total == pause_after * nclients)
				break;
			if (rate > 0 && (double)(now_ms() - t0) < sent_total * interval_ms)
				break;
			struct client *c = &cl[next_client];
			size_t off = 0;
			if (c->hdr_len && !(fmt == F_FIRST && c->sent > 0)) {
				memcpy(pkt, c->hdr, c->hdr_len);
				off = c->hdr_len;
			}
			payload_fill(pkt + off, size, c->id, c->sent);
			if (!c->last_reply_ms)
				c->last_reply_ms = now_ms(); /* a reply is due from now on */
			if (send(c->fd, pkt, off + size, 0) < 0) {
				if (errno == EAGAIN || errno == ENOBUFS)
					break; /* retry this one */
				send_errors++;
			}
			c->sent++;
			sent_total++;
			last_send = now_ms();
			next_client = (next_client + 1) % nclients;
			if (sent_total % 64 == 0)
				break; /* read some replies in between */
		}
		bool sending = sent_total < total;
		if (!sending) {
			bool all = true;
			if (want_echo)
				for (unsigned i = 0; i < nclients && all; i++)
					all = cl[i].echoed + cl[i].reordered + cl[i].bad >= cl[i].sent;
			if ((!want_echo || all) && now_ms() >= last_send + hold_ms)
				break;
		}
		struct epoll_event evs[256];
		int n = epoll_wait(ep, evs, 256, sending ? (rate > 0 || resume_at ? 1 : 0) : 20);
		for (int e = 0; e < n; e++) {
			struct client *c = &cl[evs[e].data.u32];
			for (;;) {
				ssize_t r = recv(c->fd, buf, sizeof(buf), 0);
				if (r < 0)
					break;
				const uint8_t *p = buf;
				size_t len = r;
				uint32_t id;
				uint64_t seq;
				if (fmt == F_SPP) {
					p += SPP_LEN;
					len = len < SPP_LEN ? 0 : len - SPP_LEN;
				}
				if (!size) {
					/* Empty datagrams carry no tag: count them, in whatever order. */
					if (len || (fmt == F_SPP && (r < SPP_LEN || memcmp(buf, c->hdr, SPP_LEN))))
						c->bad++;
					else
						c->echoed++;
					continue;
				}
				/* On a shared socket the payload says whose reply it is. */
				if (shared && tag_get(p, len, &id, &seq) && id < nclients)
					c = &cl[id];
				if (fmt == F_SPP && (r < SPP_LEN || memcmp(buf, c->hdr, SPP_LEN))) {
					c->bad++;
					continue;
				}
				if (!tag_get(p, len, &id, &seq) || id != c->id || len != size) {
					c->bad++;
					continue;
				}
				payload_fill(pkt, size, id, seq);
				if (memcmp(pkt, p, size)) {
					c->bad++;
					continue;
				}
				if (seq < count && c->seen[seq / 8] & 1u << (seq % 8)) {
					c->dups++;
				} else if (seq < count) {
					c->seen[seq / 8] |= (uint8_t)(1u << (seq % 8));
					c->unique++;
				}
				/* A gap is a loss (counted as missing at the end); going back is a reorder. */
				if (seq < c->next_echo) {
					c->reordered++;
					continue;
				}
				c->echoed++;
				c->next_echo = seq + 1;
				uint64_t t = now_ms();
				if (c->last_reply_ms && t - c->last_reply_ms > max_gap_ms)
					max_gap_ms = t - c->last_reply_ms;
				c->last_reply_ms = t;
			}
		}
	}
	uint64_t echoed = 0, reordered = 0, bad = 0, unique = 0, dups = 0;
	unsigned named = 0;
	for (unsigned i = 0; i < nclients; i++) {
		/* Name a few clients that missed replies: where to look in the proxy's log. */
		if (want_echo && cl[i].echoed + cl[i].reordered < cl[i].sent && named++ < 5) {
			struct sockaddr_storage ca;
			char a[80];
			client_addr(&base, i, hosts, &ca);
			printf("missing client %s echoed %llu of %llu\n", fmt_addr(&ca, a, sizeof(a)),
			       (unsigned long long)cl[i].echoed, (unsigned long long)cl[i].sent);
		}
		echoed += cl[i].echoed;
		reordered += cl[i].reordered;
		bad += cl[i].bad;
		unique += cl[i].unique;
		dups += cl[i].dups;
		free(cl[i].seen);
		if (!shared || i == 0)
			close(cl[i].fd);
	}
	uint64_t missing = want_echo && echoed + reordered < sent_total ? sent_total - echoed - reordered : 0;
	printf("result clients %u sent %llu echoed %llu missing %llu reordered %llu bad %llu send_errors %llu ms %llu "
	       "max_gap_ms %llu unique %llu dups %llu\n",
	       nclients, (unsigned long long)sent_total, (unsigned long long)echoed, (unsigned long long)missing,
	       (unsigned long long)reordered, (unsigned long long)bad, (unsigned long long)send_errors,
	       (unsigned long long)(now_ms() - t0), (unsigned long long)max_gap_ms, (unsigned long long)unique,
	       (unsigned long long)dups);
	if (sent_total < total)
		return 1;
	return want_echo && (missing || reordered || bad || send_errors) ? 1 : 0;
}

/* ----------------------------------------------------------------- bad -- */

static size_t build_bad(const char *kind, const struct sockaddr_storage *client, uint8_t *out)
{
	struct sockaddr_storage dst, c = *client;
	size_t n;

	parse_addr(c.ss_family == AF_INET ? "198.51.100.1:443" : "[2001:db8:1::1]:443", &dst, true);
	n = v2_dgram(out, &c, &dst);
	memcpy(out + n, "payload", 7);
	n += 7;
	if (!strcmp(kind, "truncated"))
		return 14; /* the fixed part cut short */
	if (!strcmp(kind, "sig-prefix"))
		return 6;
	if (!strcmp(kind, "version")) {
		out[12] = 0x11;
		return n;
	}
	if (!strcmp(kind, "command")) {
		out[12] = 0x2F;
		return n;
	}
	if (!strcmp(kind, "family-unix")) {
		memset(out + 16, 0, 216);
		out[13] = 0x32;
		out[14] = 0;
		out[15] = 216;
		return 16 + 216;
	}
	if (!strcmp(kind, "family-unspec")) {
		out[13] = 0x02;
		return n;
	}
	if (!strcmp(kind, "stream")) {
		out[13] = (out[13] & 0xF0) | 0x1;
		return n;
	}
	if (!strcmp(kind, "bad-length")) {
		out[14] = 0x01; /* 256 + ... bytes announced, far more than sent */
		return n;
	}
	if (!strcmp(kind, "short-block")) {
		out[14] = 0;
		out[15] = 4; /* INET needs 12 */
		return n;
	}
	if (!strcmp(kind, "crc")) {
		/* A CRC32C TLV whose value is wrong. */
		size_t h = 16 + (c.ss_family == AF_INET ? 12 : 36);
		uint8_t tlv[7] = { 0x03, 0x00, 0x04, 0xde, 0xad, 0xbe, 0xef };
		memcpy(out + h, tlv, 7);
		out[14] = (uint8_t)((h + 7 - 16) >> 8);
		out[15] = (uint8_t)(h + 7 - 16);
		memcpy(out + h + 7, "payload", 7);
		return h + 14;
	}
	if (!strcmp(kind, "port0") || !strcmp(kind, "unspecified")) {
		if (!strcmp(kind, "port0"))
			((struct sockaddr_in *)&c)->sin_port = 0; /* same offset for both families */
		else if (c.ss_family == AF_INET)
			((struct sockaddr_in *)&c)->sin_addr.s_addr = 0;
		else
			memset(&((struct sockaddr_in6 *)&c)->sin6_addr, 0, 16);
		n = v2_dgram(out, &c, &dst);
		memcpy(out + n, "payload", 7);
		return n + 7;
	}
	if (!strcmp(kind, "no-header")) {
		memcpy(out, "hello, no header", 16);
		return 16;
	}
	if (!strcmp(kind, "spp-short")) {
		n = spp_build(out, &c, &dst);
		return 20;
	}
	die("bad: unknown --kind '%s'", kind);
	return 0;
}

static int cmd_bad(int argc, char **argv)
{
	struct sockaddr_storage proxy, client, bind_addr;
	const char *kind = NULL;
	bool have_proxy = false, have_bind = false;
	int count = 1, fd;
	uint8_t pkt[1024];
	size_t n;

	parse_addr("203.0.113.9:9999", &client, true);
	for (int i = 0; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "-c")) {
			parse_addr(argv[i + 1], &proxy, true);
			have_proxy = true;
		} else if (!strcmp(argv[i], "--kind")) {
			kind = argv[i + 1];
		} else if (!strcmp(argv[i], "--client")) {
			parse_addr(argv[i + 1], &client, true);
		} else if (!strcmp(argv[i], "--bind")) {
			parse_addr(argv[i + 1], &bind_addr, false);
			have_bind = true;
		} else if (!strcmp(argv[i], "--count")) {
			count = atoi(argv[i + 1]);
		} else {
			die("bad: unknown option '%s'", argv[i]);
		}
	}
	if (!have_proxy || !kind)
		die("bad: -c PROXY and --kind KIND are required");
	n = build_bad(kind, &client, pkt);
	fd = socket(proxy.ss_family, SOCK_DGRAM, 0);
	if (have_bind && bind(fd, (struct sockaddr *)&bind_addr, ss_len(&bind_addr)))
		die("bind: %s", strerror(errno));
	for (int i = 0; i < count; i++)
		if (sendto(fd, pkt, n, 0, (struct sockaddr *)&proxy, ss_len(&proxy)) < 0)
			die("sendto: %s", strerror(errno));
	printf("sent %d x %s (%zu bytes)\n", count, kind, n);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	g_prog = "mmpt-udp";
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		die("usage: mmpt-udp echo|send|bad ... (see the comment at the top of tests/tools/mmpt-udp.c)");
	if (!strcmp(argv[1], "echo"))
		return cmd_echo(argc - 2, argv + 2);
	if (!strcmp(argv[1], "send"))
		return cmd_send(argc - 2, argv + 2);
	if (!strcmp(argv[1], "bad"))
		return cmd_bad(argc - 2, argv + 2);
	die("unknown command '%s' (echo, send, bad)", argv[1]);
	return 2;
}
