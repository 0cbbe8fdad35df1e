// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/log.h"
#include "mmp_maps.h"
#include "lib/pins.h"
#include "lib/sockaddr.h"
#include "lib/sockinfo.h"
#include "engine/sockmap/sockmap.h"
#include "lib/config.h"
#include "sockmap.skel.h"
#include "engine/sockmap/sockmap_wake.h"
#include "core/counters.h"
#include "core/lifecycle.h"
#include "core/loop.h"
#include "engine/sockmap/sockmap_conn.h"

/* What a handed-off socket is watched for: FIN, errors (always), and EPOLLOUT/EPOLLIN when needed. */
#define WATCH_IDLE (EPOLLRDHUP | EPOLLET)

/* Largest chunk of held-back bytes forwarded per read. */
#define HOLD_CHUNK (64 * 1024)

struct mmp_sockmap {
	struct sockmap_bpf *skel;
	char pin_dir[PATH_MAX - 64];
	int peers_fd, socks_fd, flows_fd, sockdir_fd;
	int wake_fd, wake_lost_fd;
	int verdict_fd;
	bool attached;
};

static const char *const pinned_maps[] = {
	MMP_PEERS_MAP, MMP_SOCKS_MAP, MMP_FLOWS_MAP, MMP_SOCKDIR_MAP, MMP_COUNTERS_MAP,
};

static void sockmap_close(void *proc, bool keep);

static int sockmap_open(const struct mmp_config *cfg, void **out)
{
	struct mmp_sockmap *sm;
	struct bpf_map *map;
	int err;

	sm = calloc(1, sizeof(*sm));
	if (!sm)
		return -ENOMEM;
	snprintf(sm->pin_dir, sizeof(sm->pin_dir), "%s", cfg->pin_dir);
	sm->skel = sockmap_bpf__open();
	if (!sm->skel) {
		err = -errno;
		pr_err("sockmap engine: failed to open the BPF object: %s", strerror(-err));
		goto fail;
	}
	sm->skel->rodata->max_queued = cfg->max_queued;
	err = sockmap_bpf__load(sm->skel);
	if (err) {
		pr_err("sockmap engine: the kernel refused the verdict program or its maps: %s (needs a kernel with sockmap and CAP_BPF; rerun with -v 2 for the verifier log)",
		       strerror(-err));
		goto fail;
	}
	sm->peers_fd = bpf_map__fd(sm->skel->maps.mmp_peers);
	sm->socks_fd = bpf_map__fd(sm->skel->maps.mmp_socks);
	sm->flows_fd = bpf_map__fd(sm->skel->maps.mmp_flows);
	sm->sockdir_fd = bpf_map__fd(sm->skel->maps.mmp_sockdir);
	sm->wake_fd = bpf_map__fd(sm->skel->maps.mmp_wake);
	sm->wake_lost_fd = bpf_map__fd(sm->skel->maps.mmp_wake_lost);
	sm->verdict_fd = bpf_program__fd(sm->skel->progs.mmp_verdict);
	/* libbpf 1.1 has no bpf_program__attach_sockmap: attach by hand. */
	if (bpf_prog_attach(sm->verdict_fd, sm->socks_fd, BPF_SK_SKB_STREAM_VERDICT, 0)) {
		err = -errno;
		pr_err("sockmap engine: failed to attach the stream verdict to %s: %s", MMP_SOCKS_MAP, strerror(-err));
		goto fail;
	}
	sm->attached = true;
	bpf_object__for_each_map(map, sm->skel->obj) {
		/* .rodata and the per-worker notification maps are nobody else's business. */
		if (bpf_map__type(map) == BPF_MAP_TYPE_ARRAY || bpf_map__type(map) == BPF_MAP_TYPE_ARRAY_OF_MAPS)
			continue;
		err = mmp_pin_map(sm->pin_dir, map);
		if (err)
			goto fail;
	}
	*out = sm;
	return 0;
fail:
	sockmap_close(sm, false);
	return err;
}

static void sockmap_close(void *proc, bool keep)
{
	struct mmp_sockmap *sm = proc;

	if (!sm)
		return;
	for (size_t i = 0; i < sizeof(pinned_maps) / sizeof(pinned_maps[0]); i++)
		mmp_unpin(sm->pin_dir, pinned_maps[i]);
	if (sm->attached)
		bpf_prog_detach2(sm->verdict_fd, sm->socks_fd, BPF_SK_SKB_STREAM_VERDICT);
	sockmap_bpf__destroy(sm->skel);
	free(sm);
}

/*
 * Bytes fd has taken into its send queue so far: acked + still queued. Read
 * acked first: the sum can then only under-estimate, so a drain check that
 * passes is true.
 */
static int64_t bytes_written(int fd)
{
	struct tcp_info ti;
	int outq = 0;

	if (mmp_tcp_info(fd, &ti) || ioctl(fd, SIOCOUTQ, &outq))
		return -1;
	return (int64_t)ti.tcpi_bytes_acked + outq;
}

static void fill_addr(struct mmp_addr *a, const struct sockaddr_storage *ss)
{
	memset(a, 0, sizeof(*a));
	a->family = ss->ss_family;
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)ss;

		a->port = ntohs(sin->sin_port);
		memcpy(a->addr, &sin->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)ss;

		a->port = ntohs(sin6->sin6_port);
		memcpy(a->addr, &sin6->sin6_addr, 16);
	}
}

#define SM(c) ((struct mmp_sockmap_conn *)(c)->ctx)

static struct mmp_sockmap *sm_of(const struct mmp_conn *c)
{
	return c->engine->proc;
}

static struct mmp_sockmap_wake *wake_of(const struct mmp_conn *c)
{
	return c->engine->worker;
}

static int fd_of(struct mmp_conn *c, int i)
{
	return i == 0 ? c->client.fd : c->upstream.fd;
}

static struct mmp_endpoint *ep_of(struct mmp_conn *c, int i)
{
	return i == 0 ? &c->client : &c->upstream;
}

static void delete_entries(struct mmp_sockmap *sm, const uint64_t cookie[2])
{
	for (int i = 0; i < 2; i++) {
		bpf_map_delete_elem(sm->socks_fd, &cookie[i]);
		bpf_map_delete_elem(sm->peers_fd, &cookie[i]);
		bpf_map_delete_elem(sm->sockdir_fd, &cookie[i]);
	}
	bpf_map_delete_elem(sm->flows_fd, &cookie[0]);
}

/* Write the flow and per-socket entries, and the peers map. Nothing is live yet. */
static int prepare_entries(struct mmp_sockmap *sm, int worker, struct mmp_conn *c)
{
	struct mmp_sockmap_conn *s = c->ctx;
	struct mmp_flow flow = { 0 };
	int64_t base_up, base_client;
	int fds[2] = { c->client.fd, c->upstream.fd };

	base_up = bytes_written(c->upstream.fd);
	base_client = bytes_written(c->client.fd);
	if (base_up < 0 || base_client < 0)
		return -errno ? -errno : -EINVAL;
	fill_addr(&flow.client, c->src_addr.ss_family ? &c->src_addr : &c->lb_addr);
	fill_addr(&flow.lb, &c->lb_addr);
	fill_addr(&flow.upstream, c->target);
	flow.client_cookie = s->cookie[0];
	flow.upstream_cookie = s->cookie[1];
	/* The header is still queued: the verdict drops it (never sent upstream). */
	flow.up.skip = c->header_consumed ? 0 : (uint32_t)c->header_len;
	flow.up.peer_base = (uint64_t)base_up;
	flow.down.peer_base = (uint64_t)base_client;
	if (bpf_map_update_elem(sm->flows_fd, &s->cookie[0], &flow, BPF_NOEXIST))
		return -errno;
	for (int i = 0; i < 2; i++) {
		struct mmp_sockdir sd = {
			.flow = s->cookie[0],
			.dir = i == 0 ? MMP_DIR_UP : MMP_DIR_DOWN,
			.worker = (__u32)worker,
		};
		uint64_t peer_fd = fds[1 - i];

		if (bpf_map_update_elem(sm->sockdir_fd, &s->cookie[i], &sd, BPF_NOEXIST))
			return -errno;
		/* Keyed by own cookie, holding the peer: the verdict's one lookup. */
		if (bpf_map_update_elem(sm->peers_fd, &s->cookie[i], &peer_fd, BPF_NOEXIST))
			return -errno;
	}
	return 0;
}

/*
 * Make the verdict see bytes queued before insertion. SO_RCVLOWAT runs
 * tcp_data_ready(), i.e. the psock's data_ready, without reading a byte
 * (a 1-byte recv "kick" once ate real data).
 */
static void kick(int fd)
{
	int one = 1;

	setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, sizeof(one));
}

static int start_flow(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_sockmap *sm = sm_of(c);
	struct mmp_sockmap_conn *s = calloc(1, sizeof(*s));
	uint64_t fd;
	int err;

	if (!s)
		return -ENOMEM;
	s->conn = c;
	c->ctx = s;
	err = mmp_sock_cookie(c->client.fd, &s->cookie[0]);
	if (!err)
		err = mmp_sock_cookie(c->upstream.fd, &s->cookie[1]);
	if (!err)
		err = prepare_entries(sm, loop->id, c);
	/* Indexed before anything is live: a pause notification may follow the kick at once. */
	if (!err)
		err = mmp_sockmap_wake_add(wake_of(c), s);
	if (err)
		goto fallback;

	/*
	 * Go live: the client first (a half-closed client is refused here, and
	 * then nothing is live yet), then the upstream.
	 */
	fd = c->client.fd;
	if (bpf_map_update_elem(sm->socks_fd, &s->cookie[0], &fd, BPF_NOEXIST)) {
		err = -errno;
		goto fallback;
	}
	fd = c->upstream.fd;
	if (bpf_map_update_elem(sm->socks_fd, &s->cookie[1], &fd, BPF_NOEXIST)) {
		/* The client's bytes may already be in flight: no way back to splice. */
		pr_conn("sockmap engine: failed to insert the upstream socket: %s; resetting the connection",
			strerror(errno));
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return 0;
	}
	kick(c->client.fd);
	kick(c->upstream.fd);
	/* No EPOLLIN: data is the kernel's business until a pause notification. */
	if (mmp_loop_watch(loop, &c->client, WATCH_IDLE) || mmp_loop_watch(loop, &c->upstream, WATCH_IDLE)) {
		mmp_conn_close(loop, c, MMP_CLOSE_RESET_BOTH);
		return 0;
	}
	mmp_count(loop->counters, MMP_TCP_CNT_sockmap_flows, 1);
	return 0;
fallback:
	mmp_sockmap_wake_remove(wake_of(c), s);
	delete_entries(sm, s->cookie);
	free(s);
	c->ctx = NULL;
	return err;
}

static int sockmap_start(struct mmp_loop *loop, struct mmp_conn *c)
{
	int err = start_flow(loop, c);

	/* Refused with nothing live: engine.c hands the flow to splice, sockmap's fallback whenever it runs. */
	if (err)
		mmp_count(loop->counters, MMP_TCP_CNT_sockmap_fallbacks, 1);
	return err;
}

static int lookup_dir(struct mmp_sockmap *sm, struct mmp_conn *c, int i, struct mmp_flow_dir *d)
{
	struct mmp_flow flow;

	if (bpf_map_lookup_elem(sm->flows_fd, &SM(c)->cookie[0], &flow))
		return -errno;
	*d = i == 0 ? flow.up : flow.down;
	return 0;
}

/* True once every byte the kernel redirected from socket i sits in the peer's send queue. */
static bool redirects_drained(struct mmp_conn *c, int i, const struct mmp_flow_dir *d)
{
	int64_t written = bytes_written(fd_of(c, 1 - i));

	return written >= 0 && (uint64_t)written - d->peer_base >= d->redirected + SM(c)->forwarded[i];
}

enum step_result {
	STEP_DONE, /* nothing left to do in this direction now */
	STEP_WAIT, /* the kernel is still draining: poll again soon */
	STEP_RESET_SRC, /* the destination failed: reset the source side */
	STEP_RESET_DST, /* the source failed: reset the destination side */
};

static int publish_forwarded(struct mmp_loop *loop, struct mmp_conn *c, int i)
{
	struct mmp_sockdir sd = {
		.flow = SM(c)->cookie[0],
		.dir = i == 0 ? MMP_DIR_UP : MMP_DIR_DOWN,
		.worker = (__u32)loop->id,
		.forwarded = SM(c)->forwarded[i],
	};

	return bpf_map_update_elem(sm_of(c)->sockdir_fd, &SM(c)->cookie[i], &sd, BPF_EXIST) ? -errno : 0;
}

/*
 * Watch socket i for data only while its direction is paused or has held-back
 * bytes. Seeing paused == 0 is enough to stop: a pause ends only once every
 * held-back byte was forwarded, and the next one notifies through the ring.
 * (The events include EPOLLOUT while the socket waits to be written to.)
 */
static int watch_held(struct mmp_loop *loop, struct mmp_conn *c, int i, bool want)
{
	struct mmp_endpoint *ep = ep_of(c, i);

	return mmp_loop_watch(loop, ep, (ep->events & EPOLLOUT) | WATCH_IDLE | (want ? EPOLLIN : 0));
}

/*
 * Forward the bytes the verdict held back from socket i (over budget). They
 * may only be written once the kernel's own redirects of that direction are
 * in the peer's send queue, or they would overtake them.
 */
static enum step_result forward_held(struct mmp_loop *loop, struct mmp_conn *c, int i)
{
	struct mmp_sockmap_conn *s = c->ctx;
	struct mmp_flow_dir d;
	int dst = fd_of(c, 1 - i);

	for (;;) {
		uint64_t buffered = s->buf_len[i] - s->buf_off[i];
		ssize_t n;

		if (buffered) {
			n = send(dst, s->buf[i] + s->buf_off[i], buffered, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0) {
				if (errno == EAGAIN) {
					mmp_loop_watch(loop, ep_of(c, 1 - i), ep_of(c, 1 - i)->events | EPOLLOUT);
					return STEP_DONE;
				}
				return STEP_RESET_SRC;
			}
			s->buf_off[i] += n;
			s->forwarded[i] += n;
			if (publish_forwarded(loop, c, i))
				return STEP_RESET_DST;
			continue;
		}
		if (lookup_dir(sm_of(c), c, i, &d))
			return STEP_RESET_DST;
		s->holding[i] = d.passed > s->forwarded[i];
		if (watch_held(loop, c, i, d.paused || s->holding[i]))
			return STEP_RESET_DST;
		if (!s->holding[i])
			return STEP_DONE;
		if (!redirects_drained(c, i, &d))
			return STEP_WAIT;
		if (!s->buf[i]) {
			s->buf[i] = malloc(HOLD_CHUNK);
			if (!s->buf[i])
				return STEP_RESET_DST;
		}
		/* Read exactly what was held back: later bytes belong to the redirect path. */
		n = recv(fd_of(c, i), s->buf[i], d.passed - s->forwarded[i] < HOLD_CHUNK ?
					 d.passed - s->forwarded[i] : HOLD_CHUNK, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN ? STEP_DONE : STEP_RESET_DST;
		if (n == 0)
			return STEP_DONE;
		s->buf_off[i] = 0;
		s->buf_len[i] = n;
	}
}

/* Has every byte before socket i's FIN reached the peer's send queue? */
static bool direction_complete(struct mmp_loop *loop, struct mmp_conn *c, int i)
{
	struct mmp_flow_dir d;
	struct tcp_info ti;

	if (lookup_dir(sm_of(c), c, i, &d) || mmp_tcp_info(fd_of(c, i), &ti))
		return false;
	/* bytes_received counts the FIN as one byte. */
	if (d.consumed + 1 < ti.tcpi_bytes_received)
		return false;
	if (d.passed != SM(c)->forwarded[i] || SM(c)->buf_off[i] != SM(c)->buf_len[i])
		return false;
	return redirects_drained(c, i, &d);
}

static void reset_pair(struct mmp_loop *loop, struct mmp_conn *c, bool reset_client, const char *why)
{
	mmp_count(loop->counters, MMP_TCP_CNT_resets_forwarded, 1);
	pr_debug("sockmap: %s failed (%s: %s), forwarding a reset", reset_client ? "upstream" : "client", why,
		 strerror(errno));
	mmp_conn_close(loop, c, reset_client ? MMP_CLOSE_RESET_CLIENT : MMP_CLOSE_RESET_UPSTREAM);
}

/* Advance both directions: held-back bytes, FIN forwarding, close. */
static void sockmap_progress(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_sockmap_conn *s = c->ctx;
	bool wait = false;

	for (int i = 0; i < 2; i++) {
		enum step_result r = forward_held(loop, c, i);

		if (r == STEP_RESET_SRC || r == STEP_RESET_DST) {
			/* i = 0: src is the client; reset the side that did not fail. */
			reset_pair(loop, c, (i == 0) == (r == STEP_RESET_SRC), "forwarding held-back bytes");
			return;
		}
		wait |= r == STEP_WAIT;
		if (!s->fin[i] || s->shut[i])
			continue;
		if (!direction_complete(loop, c, i)) {
			wait = true;
			continue;
		}
		/* Every byte is in the peer's send queue: the FIN follows them. */
		if (shutdown(fd_of(c, 1 - i), SHUT_WR) && errno != ENOTCONN) {
			reset_pair(loop, c, i == 0, "shutdown");
			return;
		}
		s->shut[i] = true;
	}
	if (s->shut[0] && s->shut[1]) {
		mmp_conn_close(loop, c, MMP_CLOSE_FIN);
		return;
	}
	if (wait)
		mmp_loop_poll_add(loop, c);
}

static void sockmap_event(struct mmp_loop *loop, struct mmp_conn *c, struct mmp_endpoint *ep, uint32_t events)
{
	int i = ep == &c->client ? 0 : 1;

	if (events & EPOLLERR) {
		int err = 0;
		socklen_t len = sizeof(err);

		getsockopt(ep->fd, SOL_SOCKET, SO_ERROR, &err, &len);
		if (err) {
			/* After our own shutdown an EPIPE is not a reset: ignore it. */
			if (!(err == EPIPE && SM(c)->shut[1 - i])) {
				errno = err;
				reset_pair(loop, c, i == 1, "socket error");
				return;
			}
		}
	}
	if (events & EPOLLOUT)
		mmp_loop_watch(loop, ep, ep->events & ~EPOLLOUT);
	if (events & (EPOLLRDHUP | EPOLLHUP))
		SM(c)->fin[i] = true;
	sockmap_progress(loop, c);
}

static void sockmap_release(struct mmp_loop *loop, struct mmp_conn *c)
{
	struct mmp_sockmap_conn *s = c->ctx;

	if (!s)
		return;
	mmp_sockmap_wake_remove(wake_of(c), s);
	delete_entries(sm_of(c), s->cookie);
	free(s->buf[0]);
	free(s->buf[1]);
	free(s);
	c->ctx = NULL;
}

static int sockmap_worker_open(struct mmp_engine *e, struct mmp_loop *loop)
{
	const struct mmp_sockmap *sm = e->proc;
	struct mmp_sockmap_wake_maps maps = {
		.wake_fd = sm->wake_fd,
		.lost_fd = sm->wake_lost_fd,
		.on_flow = sockmap_progress,
	};

	return mmp_sockmap_wake_open(e, loop, &maps, (struct mmp_sockmap_wake **)&e->worker);
}

static void sockmap_worker_close(struct mmp_engine *e, struct mmp_loop *loop)
{
	mmp_sockmap_wake_close(e->worker);
	e->worker = NULL;
}

const struct mmp_engine_ops mmp_sockmap_ops = {
	.name = "sockmap",
	.flags = MMP_ENGINE_F_STRIPS_HEADER | MMP_ENGINE_F_SOCKET_PROGRAMS,
	.open = sockmap_open,
	.close = sockmap_close,
	.worker_open = sockmap_worker_open,
	.worker_close = sockmap_worker_close,
	.start = sockmap_start,
	.event = sockmap_event,
	.poll = sockmap_progress,
	.release = sockmap_release,
};
