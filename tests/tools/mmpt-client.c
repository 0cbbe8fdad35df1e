/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-client: the client of the integration tests (plays the end user when
 * it talks to HAProxy/nginx, or the load balancer when it writes a hand-made
 * PROXY header straight to mmproxy).
 *
 *   mmpt-client -c ADDR:PORT [-b ADDR[:PORT]] [--timeout SEC]
 *     header (optional, written first; --raw is appended after --pp*):
 *       --pp1 SRC DST | --pp2 SRC DST | --pp2-local     built PROXY header
 *       --pp2-tlv TYPE:HEX            append a TLV to the v2 header just
 *                                     built (repeatable; before any --raw)
 *       --raw STRING                                     bytes, C escapes (\r \n \xHH)
 *       --split K --split-delay MS    write the header in K pieces, MS apart
 *     optionally, before anything else is sent after the header:
 *       --expect-banner STRING        read exactly STRING (C escapes) before
 *                                     sending: the upstream speaks first
 *     then one of:
 *       --msg STRING [--coalesce]     send (C escapes), expect it echoed back;
 *                                     --coalesce puts header and msg in one write
 *       --send SIZE [--after-eof] [--seed N]   bulk transfer, see struct xfer
 *       --expect-close                wait for the peer to close the connection
 *       --close [--hold-ms MS]        close (after MS) without waiting
 *
 * Prints "local ADDR PORT" (getsockname, compared by the tests with what the
 * upstream saw), with --expect-banner "banner ok MS" (MS since the header was
 * written) or "banner fail REASON", then one result line:
 *   "echo ok MS" | "echo fail REASON"
 *   "xfer sent N SHA recv N SHA [error E]"
 *   "closed eof|reset MS" | "open MS"
 * Exit 0 when the requested outcome happened, 1 when not, 2 on usage error.
 * TCP_NODELAY is always set, so each write is its own segment.
 */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mmpt_common.h"


static int g_timeout_ms = 30000;
static uint64_t g_deadline;

static int remaining_ms(void)
{
	uint64_t now = now_ms();
	return now >= g_deadline ? 0 : (int)(g_deadline - now);
}

/* Send everything on a non-blocking socket before the deadline. */
static int send_all_nb(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = send(fd, p, len, MSG_NOSIGNAL);
		if (w > 0) {
			p += w;
			len -= (size_t)w;
			continue;
		}
		if (w < 0 && errno != EAGAIN && errno != EINTR)
			return -errno;
		struct pollfd pfd = { .fd = fd, .events = POLLOUT };
		if (poll(&pfd, 1, remaining_ms()) == 0)
			return -ETIMEDOUT;
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: see the comment at the top of tests/tools/mmpt-client.c\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *target = NULL, *bindaddr = NULL, *msg = NULL;
	static uint8_t banner[4096];
	size_t banner_len = 0;
	static uint8_t hdr[70000];
	size_t hlen = 0, v2_start = 0, v2_end = (size_t)-1;
	int split = 1, split_delay = 0, hold_ms = 0;
	bool coalesce = false, expect_close = false, do_close = false, after_eof = false;
	bool xfer_mode = false;
	uint64_t send_size = 0, seed = 1;

	tool_start("mmpt-client");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		const char *v2 = i + 2 < argc ? argv[i + 2] : NULL;
		struct sockaddr_storage s, d;
		if (!strcmp(a, "-c") && v) {
			target = v;
			i++;
		} else if (!strcmp(a, "-b") && v) {
			bindaddr = v;
			i++;
		} else if (!strcmp(a, "--timeout") && v) {
			g_timeout_ms = (int)(atof(v) * 1000);
			i++;
		} else if ((!strcmp(a, "--pp1") || !strcmp(a, "--pp2")) && v && v2) {
			parse_addr(v, &s, true);
			parse_addr(v2, &d, true);
			if (a[4] == '1')
				hlen += pp_build_v1(hdr + hlen, sizeof(hdr) - hlen, &s, &d);
			else {
				v2_start = hlen;
				hlen += pp_build_v2(hdr + hlen, sizeof(hdr) - hlen, &s, &d);
				v2_end = hlen;
			}
			i += 2;
		} else if (!strcmp(a, "--pp2-local")) {
			v2_start = hlen;
			hlen += pp_build_v2(hdr + hlen, sizeof(hdr) - hlen, NULL, NULL);
			v2_end = hlen;
		} else if (!strcmp(a, "--pp2-tlv") && v) {
			size_t n = hlen - v2_start;

			if (v2_end != hlen)
				usage(); /* only right after --pp2 / --pp2-local or another --pp2-tlv */
			pp_add_tlv(hdr + v2_start, &n, sizeof(hdr) - v2_start, v);
			hlen = v2_end = v2_start + n;
			i++;
		} else if (!strcmp(a, "--raw") && v) {
			hlen += unescape(v, hdr + hlen, sizeof(hdr) - hlen);
			i++;
		} else if (!strcmp(a, "--split") && v) {
			split = atoi(v);
			i++;
		} else if (!strcmp(a, "--split-delay") && v) {
			split_delay = atoi(v);
			i++;
		} else if (!strcmp(a, "--msg") && v) {
			static uint8_t mbuf[4096];
			size_t ml = unescape(v, mbuf, sizeof(mbuf) - 1);
			mbuf[ml] = 0; /* --msg is text: an embedded \0 would cut it */
			msg = (const char *)mbuf;
			i++;
		} else if (!strcmp(a, "--expect-banner") && v) {
			banner_len = unescape(v, banner, sizeof(banner));
			i++;
		} else if (!strcmp(a, "--coalesce")) {
			coalesce = true;
		} else if (!strcmp(a, "--send") && v) {
			xfer_mode = true;
			send_size = parse_size(v);
			i++;
		} else if (!strcmp(a, "--after-eof")) {
			xfer_mode = true;
			after_eof = true;
		} else if (!strcmp(a, "--seed") && v) {
			seed = strtoull(v, NULL, 0);
			i++;
		} else if (!strcmp(a, "--expect-close")) {
			expect_close = true;
		} else if (!strcmp(a, "--close")) {
			do_close = true;
		} else if (!strcmp(a, "--hold-ms") && v) {
			hold_ms = atoi(v);
			i++;
		} else {
			usage();
		}
	}
	if (!target || split < 1 || (coalesce && !msg) || (coalesce && banner_len))
		usage();
	g_deadline = now_ms() + (uint64_t)g_timeout_ms;

	/* Connect (non-blocking, bounded by the deadline). */
	struct sockaddr_storage ta, ba;
	socklen_t tl = parse_addr(target, &ta, true);
	int fd = socket(ta.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1;
	if (fd < 0)
		die("socket: %s", strerror(errno));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (bindaddr) {
		socklen_t bl = parse_addr(bindaddr, &ba, false);
		if (bind(fd, (struct sockaddr *)&ba, bl) < 0)
			die("bind %s: %s", bindaddr, strerror(errno));
	}
	if (connect(fd, (struct sockaddr *)&ta, tl) < 0 && errno != EINPROGRESS)
		die("connect %s: %s", target, strerror(errno));
	struct pollfd pfd = { .fd = fd, .events = POLLOUT };
	if (poll(&pfd, 1, remaining_ms()) != 1)
		die("connect %s: timed out", target);
	int err = 0;
	socklen_t el = sizeof(err);
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
	if (err)
		die("connect %s: %s", target, strerror(err));
	struct sockaddr_storage la;
	socklen_t ll = sizeof(la);
	char abuf[128];
	getsockname(fd, (struct sockaddr *)&la, &ll);
	printf("local %s\n", fmt_addr(&la, abuf, sizeof(abuf)));

	/* The header, in `split` pieces (the last one carries msg with --coalesce). */
	static uint8_t first[70000 + 4096];
	size_t flen = hlen;
	memcpy(first, hdr, hlen);
	if (coalesce) {
		size_t ml = strlen(msg);
		if (flen + ml > sizeof(first))
			die("message too long");
		memcpy(first + flen, msg, ml);
		flen += ml;
	}
	size_t off = 0;
	for (int k = 0; k < split && off < flen; k++) {
		size_t piece = k == split - 1 ? flen - off : hlen / (size_t)split;
		if (!piece)
			continue;
		int r = send_all_nb(fd, first + off, piece);
		if (r < 0) {
			printf("write failed after %zu of %zu header bytes: %s\n", off, flen, strerror(-r));
			return 1;
		}
		off += piece;
		if (k < split - 1 && split_delay)
			usleep((useconds_t)split_delay * 1000);
	}

	if (banner_len) {
		/* The upstream speaks first: nothing more is sent until it did. */
		uint64_t t0 = now_ms();
		uint8_t got[sizeof(banner)];
		size_t have = 0;
		while (have < banner_len) {
			ssize_t r = recv(fd, got + have, banner_len - have, 0);
			if (r > 0) {
				have += (size_t)r;
				continue;
			}
			if (r == 0) {
				printf("banner fail eof after %zu of %zu bytes\n", have, banner_len);
				return 1;
			}
			if (errno != EAGAIN && errno != EINTR) {
				printf("banner fail %s after %zu of %zu bytes\n", strerror(errno), have, banner_len);
				return 1;
			}
			pfd.events = POLLIN;
			if (poll(&pfd, 1, remaining_ms()) == 0) {
				printf("banner fail timeout after %zu of %zu bytes in %" PRIu64 " ms\n", have,
				       banner_len, now_ms() - t0);
				return 1;
			}
		}
		if (memcmp(got, banner, banner_len)) {
			printf("banner fail mismatch\n");
			return 1;
		}
		printf("banner ok %" PRIu64 "\n", now_ms() - t0);
	}

	if (msg) {
		size_t ml = strlen(msg);
		uint64_t t0 = now_ms();
		if (!coalesce) {
			int r = send_all_nb(fd, (const uint8_t *)msg, ml);
			if (r < 0) {
				printf("echo fail write %s\n", strerror(-r));
				return 1;
			}
		}
		char *got = malloc(ml + 1);
		size_t have = 0;
		while (have < ml) {
			ssize_t r = recv(fd, got + have, ml - have, 0);
			if (r > 0) {
				have += (size_t)r;
				continue;
			}
			if (r == 0) {
				printf("echo fail eof after %zu of %zu bytes\n", have, ml);
				return 1;
			}
			if (errno != EAGAIN && errno != EINTR) {
				printf("echo fail %s after %zu of %zu bytes\n", strerror(errno), have, ml);
				return 1;
			}
			pfd.events = POLLIN;
			if (poll(&pfd, 1, remaining_ms()) == 0) {
				printf("echo fail timeout after %zu of %zu bytes\n", have, ml);
				return 1;
			}
		}
		if (memcmp(got, msg, ml)) {
			printf("echo fail mismatch\n");
			return 1;
		}
		printf("echo ok %" PRIu64 "\n", now_ms() - t0);
		free(got);
		/* Fall through: --expect-close may follow an echo. */
	}

	if (xfer_mode) {
		static struct xfer x;
		xfer_init(&x, fd, send_size, after_eof, seed);
		while (!xfer_done(&x)) {
			pfd.events = (x.peer_eof ? 0 : POLLIN) | (xfer_wants_write(&x) ? POLLOUT : 0);
			int n = poll(&pfd, 1, remaining_ms());
			if (n == 0) {
				x.failed = true;
				x.err = ETIMEDOUT;
				break;
			}
			if (pfd.revents & (POLLIN | POLLHUP | POLLERR))
				xfer_readable(&x);
			xfer_writable(&x);
		}
		char rep[300];
		xfer_report(&x, rep, sizeof(rep));
		printf("xfer %s\n", rep);
		close(fd);
		return x.failed ? 1 : 0;
	}

	if (expect_close) {
		uint64_t t0 = now_ms();
		char buf[4096];
		for (;;) {
			ssize_t r = recv(fd, buf, sizeof(buf), 0);
			if (r == 0) {
				printf("closed eof %" PRIu64 "\n", now_ms() - t0);
				return 0;
			}
			if (r < 0 && errno != EAGAIN && errno != EINTR) {
				printf("closed reset %" PRIu64 "\n", now_ms() - t0);
				return 0;
			}
			/* Bytes received (r > 0) are ignored: only the close matters. */
			pfd.events = POLLIN;
			if (r < 0 && poll(&pfd, 1, remaining_ms()) == 0) {
				printf("open %" PRIu64 "\n", now_ms() - t0);
				return 1;
			}
		}
	}

	if (do_close && hold_ms)
		usleep((useconds_t)hold_ms * 1000);
	close(fd);
	return 0;
}
