/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-flood: many concurrent connections, each with its own hand-made PROXY
 * v2 header naming a unique client address.
 *
 *   mmpt-flood -c ADDR:PORT -n N --dst ADDR:PORT [--net 203.0.113.]
 *              [--hosts H] [--port-base P] [--window W] [--timeout SEC]
 *              [--expect-file FILE] [--close fin|rst|mix [--rst-word WORD]]
 *
 * Connection i claims to come from NET(1 + i % H):(P + i / H) (H = 200 by
 * default), sends header + "hello i\n" in one write, and must get the line
 * echoed back. At most W (default 256) connections wait for their echo at a
 * time, so a short listen backlog does not turn into SYN retransmissions; but
 * every connection stays open until all N have been echoed, so N are open at
 * once at the end. Then all are closed.
 *
 * Churn (--close): instead, each connection is closed as soon as its echo
 * came back, so at most W are open at any time:
 *   fin   close() (a FIN)
 *   rst   SO_LINGER {1, 0} + close() (a reset from the client side)
 *   mix   connection i: i % 4 = 0, 1 fin; 2 rst; 3 the upstream resets: the
 *         client sends WORD (default "RST\n"; mmpt-upstream --rst-word), waits
 *         until the connection ends (reset or EOF), then closes.
 *
 * Writes "ADDR PORT" of every claimed client to FILE (to compare with the
 * upstream's "peer" lines) and prints
 *   "flood ok N failed M open_at_once K ms T"
 * and with --close also
 *   "churn fin A rst B uprst C uprst_reset R uprst_eof E"
 * The first failures are described on stderr ("fail I SRC: REASON").
 * Exit 0 when all N succeeded.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "mmpt_common.h"
#include "mmpt_connect.h"

enum cstate { C_IDLE, C_CONNECTING, C_WAITING, C_CLOSING, C_DONE, C_FAILED };
enum ckind { K_KEEP, K_FIN, K_RST, K_UPRST };

struct fconn {
	int fd;
	enum cstate st;
	char msg[32];
	size_t mlen, have;
	char got[32];
};

static int g_nfail_shown;

/* How connection i ends (--close MODE; NULL: kept open to the end). */
static enum ckind kind_of(const char *mode, int i)
{
	if (!mode)
		return K_KEEP;
	if (!strcmp(mode, "fin"))
		return K_FIN;
	if (!strcmp(mode, "rst"))
		return K_RST;
	return i % 4 < 2 ? K_FIN : i % 4 == 2 ? K_RST : K_UPRST;
}

static void fail_note(const struct claim_opts *o, int idx, const char *why, int err)
{
	if (g_nfail_shown++ >= 5)
		return;
	fprintf(stderr, "fail %d %s%d:%d: %s%s%s\n", idx, o->net, 1 + idx % o->hosts, o->port_base + idx / o->hosts,
		why, err ? ": " : "", err ? strerror(err) : "");
}

int main(int argc, char **argv)
{
	struct claim_opts o = CLAIM_OPTS_INIT(60);
	const char *expect_file = NULL, *close_mode = NULL;
	int window = 256;
	uint8_t rst_word[64];
	size_t rst_word_len = unescape("RST\\n", rst_word, sizeof(rst_word));
	int kinds[4] = { 0 }, up_reset = 0, up_eof = 0;

	tool_start("mmpt-flood");
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = opt_value(argc, argv, i);
		if (!strcmp(a, "--window"))
			window = atoi(v);
		else if (!strcmp(a, "--expect-file"))
			expect_file = v;
		else if (!strcmp(a, "--close"))
			close_mode = v;
		else if (!strcmp(a, "--rst-word"))
			rst_word_len = unescape(v, rst_word, sizeof(rst_word));
		else if (!claim_opt(&o, a, v))
			die("unknown option %s", a);
		i++;
	}
	int n = o.n;
	if (!o.target || !o.dst || n <= 0 || o.hosts <= 0 || o.hosts > 254)
		die("usage: see the comment at the top of tests/tools/mmpt-flood.c");
	claim_check_ports(&o);
	if (close_mode && strcmp(close_mode, "fin") && strcmp(close_mode, "rst") && strcmp(close_mode, "mix"))
		die("--close takes fin, rst or mix");
	if (window <= 0)
		die("--window must be positive");

	/* Kept open to the end: all N at once; churn: at most the window. */
	int need = close_mode ? (window < n ? window : n) : n;
	need_nofile((rlim_t)need, need);

	struct sockaddr_storage ta, da;
	socklen_t tl = parse_addr(o.target, &ta, true);
	parse_addr(o.dst, &da, true);
	FILE *ef = expect_file ? fopen(expect_file, "w") : NULL;
	if (expect_file && !ef)
		die("%s: %s", expect_file, strerror(errno));

	struct fconn *c = calloc((size_t)n, sizeof(*c));
	int ep = epoll_create1(EPOLL_CLOEXEC);
	uint64_t t0 = now_ms(), deadline = t0 + (uint64_t)o.timeout_s * 1000;
	int next = 0, inflight = 0, ok = 0, failed = 0, open_now = 0, open_max = 0;

	while (ok + failed < n && now_ms() < deadline) {
		/* Start new connections while the window allows. */
		while (next < n && inflight < window) {
			struct fconn *f = &c[next];
			struct sockaddr_storage sa;
			int err;
			claimed_src(&o, next, &sa);
			if (ef) {
				char ab[128];
				fprintf(ef, "%s\n", fmt_addr(&sa, ab, sizeof(ab)));
			}
			f->mlen = (size_t)snprintf(f->msg, sizeof(f->msg), "hello %d\n", next);
			f->fd = connect_start(&ta, tl, &err);
			if (err) {
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
				int err = connect_result(f->fd);
				struct sockaddr_storage sa;
				claimed_src(&o, idx, &sa);
				if (err) {
					fail_note(&o, idx, "connect", err);
					f->st = C_FAILED;
				} else if (!send_claim(f->fd, &sa, &da, f->msg, f->mlen)) {
					fail_note(&o, idx, "send", errno);
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
					if (memcmp(f->got, f->msg, f->mlen)) {
						fail_note(&o, idx, "echo mismatch", 0);
						f->st = C_FAILED;
					} else if (kind_of(close_mode, idx) == K_UPRST) {
						/* Ask the upstream to reset, then wait for the end. */
						if (send(f->fd, rst_word, rst_word_len, MSG_NOSIGNAL) != (ssize_t)rst_word_len) {
							fail_note(&o, idx, "send rst word", errno);
							f->st = C_FAILED;
						} else {
							f->st = C_CLOSING;
							continue;
						}
					} else {
						f->st = C_DONE;
					}
				} else if (r < 0 && errno == EAGAIN) {
					continue;
				} else {
					fail_note(&o, idx, r ? "echo" : "echo: eof", r ? errno : 0);
					f->st = C_FAILED;
				}
			} else if (f->st == C_CLOSING) {
				char junk[64];
				ssize_t r = recv(f->fd, junk, sizeof(junk), 0);
				if (r < 0 && errno == EAGAIN)
					continue;
				if (r > 0) {
					fail_note(&o, idx, "data after the rst word", 0);
					f->st = C_FAILED;
				} else {
					if (r == 0)
						up_eof++;
					else
						up_reset++;
					f->st = C_DONE;
				}
			}
			/* Finished (either way): stop watching it. */
			epoll_ctl(ep, EPOLL_CTL_DEL, f->fd, NULL);
			inflight--;
			if (f->st == C_DONE) {
				ok++;
				enum ckind k = kind_of(close_mode, idx);
				kinds[k]++;
				if (k == K_KEEP)
					continue; /* stays open until the end */
				if (k == K_RST) {
					struct linger lg = { .l_onoff = 1, .l_linger = 0 };
					setsockopt(f->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
				}
			} else {
				failed++;
			}
			close(f->fd);
			f->fd = -1;
			open_now--;
		}
	}
	uint64_t ms = now_ms() - t0;
	/* Whatever is still pending at the deadline failed. */
	for (int i = 0; i < n; i++) {
		if (c[i].st == C_CONNECTING || c[i].st == C_WAITING || c[i].st == C_CLOSING || c[i].st == C_IDLE) {
			if (c[i].st != C_IDLE)
				fail_note(&o, i,
					  c[i].st == C_CONNECTING ? "timed out connecting"
					  : c[i].st == C_WAITING  ? "timed out waiting for the echo"
								  : "timed out waiting for the upstream's reset", 0);
			failed++;
		}
		if (c[i].st != C_IDLE && c[i].fd >= 0)
			close(c[i].fd);
	}
	if (ef)
		fclose(ef);
	printf("flood ok %d failed %d open_at_once %d ms %" PRIu64 "\n", ok, failed, open_max, ms);
	if (close_mode)
		printf("churn fin %d rst %d uprst %d uprst_reset %d uprst_eof %d\n", kinds[K_FIN], kinds[K_RST],
		       kinds[K_UPRST], up_reset, up_eof);
	return ok == n ? 0 : 1;
}
