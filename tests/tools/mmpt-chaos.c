/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-chaos: a misbehaving link, in userspace, for kernels without
 * sch_netem (the test kernel has neither netem nor fq nor etf, so nothing in
 * the kernel can hold a packet back). It joins two interfaces of one
 * namespace (a "wire" between the load balancer's namespace and the
 * proxy's) with AF_PACKET sockets and forwards every frame from one to the
 * other, applying to IPv4 and IPv6 frames what netem's
 *   delay D J reorder R% loss L% duplicate U%
 * applies: lost with probability L; else sent twice with probability U; each
 * copy either sent at once (probability R: it overtakes those held back) or
 * held D +- J ms (uniform), and released in order of release time (so the
 * jitter reorders too, as netem's time-sorted queue does). Other frames (ARP,
 * ...) are forwarded at once and untouched.
 *
 *   mmpt-chaos -a IF -b IF [--delay-ms D] [--jitter-ms J] [--reorder-pct R]
 *              [--loss-pct L] [--dup-pct U] [--seed S] [--off] [--limit N]
 *
 * Percentages may have decimals. --off: start as a plain wire (everything
 * forwarded at once); SIGUSR2 toggles the chaos on and off, so that a test
 * can turn it on once its flows are set up. SIGUSR1 prints a statistics
 * line, and so does SIGTERM before the exit:
 *   stats on 0|1 frames N lost L dups U reordered R held H overflow O
 * (N: frames received; reordered: sent at once past held ones; held: sent
 * after a delay; overflow: dropped because --limit (default 20000) frames
 * were held already). "ready" is printed once both sockets are bound.
 *
 * PACKET_VNET_HDR on both sockets carries each frame's offload state across
 * (checksum still to be completed, GSO): a frame goes out exactly as the
 * kernel handed it over, so the endpoints' checksum offload can stay on.
 * Turn GSO/TSO off on the endpoints (the test does) for per-segment chaos.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mmpt_common.h"

#define FRAME_MAX (65536 + 256)

struct held {
	uint64_t release_ns, order; /* order: ties keep arrival order */
	int out_fd;
	size_t len;
	uint8_t *buf; /* virtio_net_hdr + frame */
};

static struct held *g_heap;
static size_t g_nheld, g_limit = 20000;
static uint64_t g_order;
static volatile sig_atomic_t g_stop, g_dump, g_toggle;
static uint64_t st_frames, st_lost, st_dups, st_reordered, st_held, st_overflow;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		g_dump = 1;
	else if (sig == SIGUSR2)
		g_toggle = 1;
	else
		g_stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: reproducible with --seed, and cheap. */
static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static double rnd01(void)
{
	g_rng ^= g_rng >> 12;
	g_rng ^= g_rng << 25;
	g_rng ^= g_rng >> 27;
	return (double)((g_rng * 0x2545f4914f6cdd1dull) >> 11) / (double)(1ull << 53);
}

static bool heap_less(const struct held *x, const struct held *y)
{
	return x->release_ns < y->release_ns || (x->release_ns == y->release_ns && x->order < y->order);
}

static void heap_push(struct held h)
{
	size_t i = g_nheld++;
	g_heap[i] = h;
	while (i && heap_less(&g_heap[i], &g_heap[(i - 1) / 2])) {
		struct held t = g_heap[i];
		g_heap[i] = g_heap[(i - 1) / 2];
		g_heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
}

static struct held heap_pop(void)
{
	struct held top = g_heap[0];
	g_heap[0] = g_heap[--g_nheld];
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < g_nheld && heap_less(&g_heap[l], &g_heap[m]))
			m = l;
		if (r < g_nheld && heap_less(&g_heap[r], &g_heap[m]))
			m = r;
		if (m == i)
			break;
		struct held t = g_heap[i];
		g_heap[i] = g_heap[m];
		g_heap[m] = t;
		i = m;
	}
	return top;
}

/* A packet socket on IF that sees only what arrives there (not what we send). */
static int wire_socket(const char *ifname)
{
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL)), one = 1;
	unsigned idx = if_nametoindex(ifname);
	if (fd < 0)
		die("socket(AF_PACKET): %s (root is needed)", strerror(errno));
	if (!idx)
		die("no interface %s in this namespace", ifname);
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)))
		die("PACKET_VNET_HDR: %s", strerror(errno));
	/* Our own transmissions on IF would come back as input and loop. */
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)))
		die("PACKET_IGNORE_OUTGOING: %s", strerror(errno));
	int buf = 8 << 20;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof(buf));
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = (int)idx };
	if (bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		die("bind to %s: %s", ifname, strerror(errno));
	/* Frames addressed to the far end's MAC, not this interface's. */
	struct packet_mreq mr = { .mr_ifindex = (int)idx, .mr_type = PACKET_MR_PROMISC };
	if (setsockopt(fd, SOL_PACKET, PACKET_ADD_MEMBERSHIP, &mr, sizeof(mr)))
		die("promiscuous mode on %s: %s", ifname, strerror(errno));
	return fd;
}

static void emit(int fd, const uint8_t *buf, size_t len)
{
	/* A full queue on a veth is a loss like any other: never block the wire. */
	(void)send(fd, buf, len, MSG_DONTWAIT);
}

static void print_stats(bool on)
{
	printf("stats on %d frames %llu lost %llu dups %llu reordered %llu held %llu overflow %llu\n", on,
	       (unsigned long long)st_frames, (unsigned long long)st_lost, (unsigned long long)st_dups,
	       (unsigned long long)st_reordered, (unsigned long long)st_held, (unsigned long long)st_overflow);
}

int main(int argc, char **argv)
{
	const char *if_a = NULL, *if_b = NULL;
	double delay_ms = 10, jitter_ms = 5, reorder = 5, loss = 1, dup = 1;
	bool on = true;
	static uint8_t buf[sizeof(struct virtio_net_hdr) + FRAME_MAX];

	tool_start("mmpt-chaos");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		if (!strcmp(a, "--off")) {
			on = false;
			continue;
		}
		v = opt_value(argc, argv, i++);
		if (!strcmp(a, "-a"))
			if_a = v;
		else if (!strcmp(a, "-b"))
			if_b = v;
		else if (!strcmp(a, "--delay-ms"))
			delay_ms = atof(v);
		else if (!strcmp(a, "--jitter-ms"))
			jitter_ms = atof(v);
		else if (!strcmp(a, "--reorder-pct"))
			reorder = atof(v);
		else if (!strcmp(a, "--loss-pct"))
			loss = atof(v);
		else if (!strcmp(a, "--dup-pct"))
			dup = atof(v);
		else if (!strcmp(a, "--seed"))
			g_rng = strtoull(v, NULL, 0) | 1;
		else if (!strcmp(a, "--limit"))
			g_limit = strtoull(v, NULL, 0);
		else
			die("unknown option %s (see the comment at the top of tests/tools/mmpt-chaos.c)", a);
	}
	if (!if_a || !if_b || jitter_ms > delay_ms || delay_ms < 0 || !g_limit)
		die("usage: -a IF -b IF, jitter at most the delay (see tests/tools/mmpt-chaos.c)");
	g_heap = calloc(g_limit, sizeof(*g_heap));
	if (!g_heap)
		die("out of memory");

	int fds[2] = { wire_socket(if_a), wire_socket(if_b) };
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	printf("ready\n");

	while (!g_stop) {
		if (g_dump) {
			g_dump = 0;
			print_stats(on);
		}
		if (g_toggle) {
			g_toggle = 0;
			on = !on;
		}
		uint64_t now = now_ns();
		while (g_nheld && g_heap[0].release_ns <= now) {
			struct held h = heap_pop();
			emit(h.out_fd, h.buf, h.len);
			free(h.buf);
		}
		/* ppoll: the next release to the microsecond (poll's ms would add up to 1 ms of delay). */
		uint64_t wait_ns = g_nheld ? g_heap[0].release_ns - now : 100000000;
		struct timespec ts = { .tv_sec = (time_t)(wait_ns / 1000000000), .tv_nsec = (long)(wait_ns % 1000000000) };
		struct pollfd p[2] = { { .fd = fds[0], .events = POLLIN }, { .fd = fds[1], .events = POLLIN } };
		if (ppoll(p, 2, &ts, NULL) < 0 && errno != EINTR)
			die("poll: %s", strerror(errno));
		for (int k = 0; k < 2; k++) {
			if (!(p[k].revents & POLLIN))
				continue;
			int out = fds[!k];
			for (int burst = 0; burst < 64; burst++) {
				ssize_t r = recv(fds[k], buf, sizeof(buf), 0);
				if (r < 0)
					break;
				size_t len = (size_t)r, vh = sizeof(struct virtio_net_hdr);
				if (len < vh + ETH_HLEN)
					continue;
				uint16_t proto = (uint16_t)(buf[vh + 12] << 8 | buf[vh + 13]);
				st_frames++;
				if (!on || (proto != ETH_P_IP && proto != ETH_P_IPV6)) {
					emit(out, buf, len);
					continue;
				}
				if (rnd01() * 100 < loss) {
					st_lost++;
					continue;
				}
				int copies = rnd01() * 100 < dup ? 2 : 1;
				st_dups += (uint64_t)(copies - 1);
				for (int c = 0; c < copies; c++) {
					if (rnd01() * 100 < reorder) {
						st_reordered++;
						emit(out, buf, len);
						continue;
					}
					if (g_nheld == g_limit) {
						st_overflow++;
						continue;
					}
					double d = delay_ms + (2 * rnd01() - 1) * jitter_ms;
					struct held h = { .release_ns = now_ns() + (uint64_t)(d * 1e6), .order = g_order++,
							  .out_fd = out, .len = len, .buf = malloc(len) };
					if (!h.buf)
						die("out of memory");
					memcpy(h.buf, buf, len);
					heap_push(h);
					st_held++;
				}
			}
		}
	}
	print_stats(on);
	return 0;
}
