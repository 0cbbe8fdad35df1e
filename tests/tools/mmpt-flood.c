/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-flood: many concurrent connections, each with its own hand-made PROXY
 * v2 header naming a unique client address.
 *
 *   mmpt-flood -c ADDR:PORT -n N --dst ADDR:PORT [--net 203.0.113.]
 *              [--hosts H] [--port-base P] [--window W] [--timeout SEC]
 *              [--expect-file FILE]
 *
 * Connection i claims to come from NET(1 + i % H):(P + i / H) (H = 200 by
 * default), sends header + "hello i\n" in one write, and must get the line
 * echoed back. At most W (default 256) connections wait for their echo at a
 * time, so a short listen backlog does not turn into SYN retransmissions; but
 * every connection stays open until all N have been echoed, so N are open at
 * once at the end. Then all are closed.
 *
 * Writes "ADDR PORT" of every claimed client to FILE (to compare with the
 * upstream's "peer" lines) and prints
 *   "flood ok N failed M open_at_once K ms T"
 * Exit 0 when all N succeeded.
 */
#include "mmpt_common.c"

#include <signal.h>
#include <sys/epoll.h>
#include <sys/resource.h>

enum cstate { C_IDLE, C_CONNECTING, C_WAITING, C_DONE, C_FAILED };

struct fconn {
	int fd;
	enum cstate st;
	char msg[32];
	size_t mlen, have;
	char got[32];
};

int main(int argc, char **argv)
{
	const char *target = NULL, *dst = NULL, *net = "203.0.113.", *expect_file = NULL;
	int n = 0, hosts = 200, port_base = 30000, window = 256, timeout_s = 60;

	g_prog = "mmpt-flood";
	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			die("missing value for %s", a);
		if (!strcmp(a, "-c"))
			target = v;
		else if (!strcmp(a, "-n"))
			n = atoi(v);
		else if (!strcmp(a, "--dst"))
			dst = v;
		else if (!strcmp(a, "--net"))
			net = v;
		else if (!strcmp(a, "--hosts"))
			hosts = atoi(v);
		else if (!strcmp(a, "--port-base"))
			port_base = atoi(v);
		else if (!strcmp(a, "--window"))
			window = atoi(v);
		else if (!strcmp(a, "--timeout"))
			timeout_s = atoi(v);
		else if (!strcmp(a, "--expect-file"))
			expect_file = v;
		else
			die("unknown option %s", a);
		i++;
	}
	if (!target || !dst || n <= 0 || hosts <= 0 || hosts > 254)
		die("usage: see the comment at the top of tests/tools/mmpt-flood.c");
	if (port_base + (n - 1) / hosts > 65535)
		die("port range overflows");

	struct rlimit rl;
	getrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < (rlim_t)n + 64)
		die("ulimit -n %lu is too low for %d connections", (unsigned long)rl.rlim_cur, n);

	struct sockaddr_storage ta, da;
	socklen_t tl = parse_addr(target, &ta, true);
	parse_addr(dst, &da, true);
	FILE *ef = expect_file ? fopen(expect_file, "w") : NULL;
	if (expect_file && !ef)
		die("%s: %s", expect_file, strerror(errno));

	struct fconn *c = calloc((size_t)n, sizeof(*c));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t t0 = now_ms(), deadline = t0 + (uint64_t)timeout_s * 1000;
	int next = 0, inflight = 0, ok = 0, failed = 0, open_now = 0, open_max = 0;

	while (ok + failed < n && now_ms() < deadline) {
		/* Start new connections while the window allows. */
		while (next < n && inflight < window) {
			struct fconn *f = &c[next];
			char src[64];
			struct sockaddr_storage sa;
			snprintf(src, sizeof(src), "%s%d:%d", net, 1 + next % hosts, port_base + next / hosts);
			parse_addr(src, &sa, true);
			if (ef) {
				char ab[128];
				fprintf(ef, "%s\n", fmt_addr(&sa, ab, sizeof(ab)));
			}
			f->mlen = (size_t)snprintf(f->msg, sizeof(f->msg), "hello %d\n", next);
			f->fd = socket(ta.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
			if (f->fd < 0)
				die("socket: %s", strerror(errno));
			if (connect(f->fd, (struct sockaddr *)&ta, tl) < 0 && errno != EINPROGRESS) {
				f->st = C_FAILED;
				failed++;
				close(f->fd);
				next++;
				continue;
			}
			f->st = C_CONNECTING;
			struct epoll_event e = { .events = EPOLLOUT, .data.u32 = (uint32_t)next };
			epoll_ctl(ep, EPOLL_CTL_ADD, f->fd, &e);
			inflight++;
			open_now++;
			if (open_now > open_max)
				open_max = open_now;
			next++;
		}
		struct epoll_event evs[256];
		int k = epoll_wait(ep, evs, 256, 200);
		for (int i = 0; i < k; i++) {
			int idx = (int)evs[i].data.u32;
			struct fconn *f = &c[idx];
			if (f->st == C_CONNECTING) {
				int err = 0;
				socklen_t el = sizeof(err);
				getsockopt(f->fd, SOL_SOCKET, SO_ERROR, &err, &el);
				uint8_t buf[128];
				struct sockaddr_storage sa;
				char src[64];
				snprintf(src, sizeof(src), "%s%d:%d", net, 1 + idx % hosts, port_base + idx / hosts);
				parse_addr(src, &sa, true);
				size_t hl = pp_build_v2(buf, sizeof(buf), &sa, &da);
				memcpy(buf + hl, f->msg, f->mlen);
				if (err || send(f->fd, buf, hl + f->mlen, MSG_NOSIGNAL) != (ssize_t)(hl + f->mlen)) {
					f->st = C_FAILED;
				} else {
					f->st = C_WAITING;
					struct epoll_event e = { .events = EPOLLIN, .data.u32 = (uint32_t)idx };
					epoll_ctl(ep, EPOLL_CTL_MOD, f->fd, &e);
					continue;
				}
			} else if (f->st == C_WAITING) {
				ssize_t r = recv(f->fd, f->got + f->have, f->mlen - f->have, 0);
				if (r > 0) {
					f->have += (size_t)r;
					if (f->have < f->mlen)
						continue;
					f->st = memcmp(f->got, f->msg, f->mlen) ? C_FAILED : C_DONE;
				} else if (r < 0 && errno == EAGAIN) {
					continue;
				} else {
					f->st = C_FAILED;
				}
			}
			/* Finished (either way): stop watching it, but keep it open. */
			epoll_ctl(ep, EPOLL_CTL_DEL, f->fd, NULL);
			inflight--;
			if (f->st == C_DONE) {
				ok++;
			} else {
				failed++;
				close(f->fd);
				f->fd = -1;
				open_now--;
			}
		}
	}
	uint64_t ms = now_ms() - t0;
	/* Whatever is still pending at the deadline failed. */
	for (int i = 0; i < n; i++) {
		if (c[i].st == C_CONNECTING || c[i].st == C_WAITING || c[i].st == C_IDLE)
			failed++;
		if (c[i].st != C_IDLE && c[i].fd >= 0)
			close(c[i].fd);
	}
	if (ef)
		fclose(ef);
	printf("flood ok %d failed %d open_at_once %d ms %" PRIu64 "\n", ok, failed, open_max, ms);
	return ok == n ? 0 : 1;
}
