// SPDX-License-Identifier: GPL-2.0
/*
 * A UDP listener thread: the event loop, the idle timer, and the
 * once-a-second tick that refreshes mmp_udp_flows (with what the kernel
 * moved) and prints the rate limiter's summaries. Flows come and go in
 * udp_lifecycle.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include "core/clock.h"
#include "core/listener_thread.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "listen/port_steer.h"
#include "udp/fast/udp_fast.h"
#include "udp/fast/udp_maps.h"
#include "udp/udp_registry.h"
#include "udp/udp_sock.h"
#include "udp/udp_drop.h"
#include "udp/udp_forward.h"
#include "udp/udp_lifecycle.h"
#include "udp/udp_reply.h"
#include "udp/udp_rx.h"
#include "udp/udp_worker.h"

#define MAX_EVENTS 256
#define TICK_NS 1000000000ULL
#define REFRESH_CHUNK 128 /* flows per batched map update */

/* epoll_data.ptr tags for the fds that are not flows. */
static char listen_tag, stop_tag, mbox_tag;

/* Without sk_lookup, a range's sockets are tagged with their slot in port_fds. */
static bool is_port_tag(const struct udp_worker *w, const void *ptr)
{
	return w->port_fds && !w->multiport && (const int *)ptr >= w->port_fds &&
	       (const int *)ptr < w->port_fds + w->n_port_fds;
}


/* ------------------------------------------------------------- timers -- */

/*
 * The kernel's latest datagram of fast flow f, if any is newer than what
 * userspace saw: f takes that time, and its place in the idle list. Returns
 * true when it did.
 */
static bool kernel_activity(struct udp_worker *w, struct udp_flow *f, struct udp_fast_stats *st)
{
	if (!f->fast || udp_fast_stats(w->sh->fast, f, st) || st->last_ns <= f->last_ns)
		return false;
	udp_ft_touch_at(&w->ft, f, st->last_ns);
	return true;
}

/*
 * Close the flows idle for -c seconds: never sooner, since last_ns is at or
 * after the last datagram either way (the kernel's for fast flows).
 */
static void expire(struct udp_worker *w)
{
	struct udp_fast_stats st;
	struct udp_flow *f;

	while ((f = udp_ft_oldest(&w->ft)) && f->last_ns < w->now_ns && w->now_ns - f->last_ns >= w->sh->idle_ns) {
		if (kernel_activity(w, f, &st))
			continue;
		udp_flow_close(w, f, MMP_UDP_CNT_flows_idle);
	}
}

/*
 * Room in w->touch for every flow of the table. Returns false when it could
 * not grow: the tick then moves flows one by one (slower, still correct).
 */
static bool touch_reserve(struct udp_worker *w)
{
	struct udp_ft_touch *v;
	size_t cap;

	if (w->touch_cap >= w->ft.count)
		return true;
	cap = w->ft.count * 2;
	v = realloc(w->touch, cap * sizeof(*v));
	if (!v)
		return false;
	w->touch = v;
	w->touch_cap = cap;
	return true;
}

/*
 * Write every flow active since the last refresh to mmp_udp_flows, with
 * what the kernel moved for fast flows (two lookups each per second). The
 * fast flows the kernel saw take their place in the idle list in one batch
 * after the walk: moving them one at a time was an insertion sort, O(n^2)
 * per tick (24k flows: 3.3 s), since the kernel's timestamps come in no order.
 */
static void refresh_map(struct udp_worker *w)
{
	uint64_t keys[REFRESH_CHUNK];
	struct mmp_udp_flow vals[REFRESH_CHUNK];
	bool batch = touch_reserve(w);
	struct udp_flow *f, *prev;
	struct udp_fast_stats st;
	uint32_t n = 0;
	size_t ntouch = 0;

	for (f = w->ft.idle_tail; f; f = prev) {
		uint64_t last_ns = f->last_ns;
		bool fast;

		prev = f->idle_prev;
		fast = f->fast && !udp_fast_stats(w->sh->fast, f, &st);
		if (fast && st.last_ns > f->last_ns) {
			if (batch) {
				w->touch[ntouch++] = (struct udp_ft_touch){ .f = f, .ts_ns = st.last_ns };
				last_ns = st.last_ns;
			} else {
				/* Moves f towards the newest end, past what was visited. */
				udp_ft_touch_at(&w->ft, f, st.last_ns);
				last_ns = f->last_ns;
			}
		}
		if (last_ns <= w->last_sync_ns) {
			if (!w->sh->fast)
				break; /* without a fast path the rest is older still */
			continue;
		}
		keys[n] = f->cookie;
		udp_flow_to_map(f, w->id, &vals[n]);
		vals[n].last_seen_ns = last_ns;
		if (fast) {
			vals[n].pkts_up += st.pkts_up;
			vals[n].bytes_up += st.bytes_up;
			vals[n].pkts_down += st.pkts_down;
			vals[n].bytes_down += st.bytes_down;
		}
		if (++n == REFRESH_CHUNK) {
			udp_maps_put_flows(w->sh->maps, keys, vals, n);
			n = 0;
		}
	}
	udp_maps_put_flows(w->sh->maps, keys, vals, n);
	udp_ft_touch_batch(&w->ft, w->touch, ntouch);
	w->last_sync_ns = w->now_ns;
}

static void tick(struct udp_worker *w)
{
	refresh_map(w);
	for (int c = 0; c < MMP_UDP_CNT_MAX; c++) {
		uint32_t n = mmp_rl_take_suppressed(&w->rl[c], w->now_ns);

		if (n)
			pr_conn("udp: %u more dropped datagrams in the last second (%s), not logged", n, udp_counter_desc(c));
	}
	w->next_tick_ns = w->now_ns + TICK_NS;
}

/* Milliseconds until the next idle deadline or tick, rounded up. */
static int next_timeout_ms(struct udp_worker *w)
{
	uint64_t next = w->next_tick_ns;
	struct udp_flow *f = udp_ft_oldest(&w->ft);

	if (f && f->last_ns + w->sh->idle_ns < next)
		next = f->last_ns + w->sh->idle_ns;
	if (next <= w->now_ns)
		return 0;
	return (int)((next - w->now_ns + 999999) / 1000000);
}

/* ---------------------------------------------------------- the loop -- */

static void *worker_main(void *arg)
{
	struct udp_worker *w = arg;
	struct epoll_event evs[MAX_EVENTS];

	w->now_ns = mmp_now_ns();
	w->next_tick_ns = w->now_ns + TICK_NS;
	while (!w->stopping) {
		bool listen_ready = false, mail = false;
		int n = epoll_wait(w->epfd, evs, MAX_EVENTS, next_timeout_ms(w)), n_ports_ready = 0;
		int *ports_ready[MAX_EVENTS];

		if (n < 0 && errno != EINTR) {
			pr_err("udp listener %d: epoll_wait failed: %s", w->id, strerror(errno));
			break;
		}
		w->now_ns = mmp_now_ns();
		/* Replies first: flows are only closed after the replies that point at them are sent. */
		for (int i = 0; i < n; i++) {
			void *ptr = evs[i].data.ptr;

			if (ptr == &stop_tag)
				w->stopping = true;
			else if (ptr == &listen_tag)
				listen_ready = true;
			else if (ptr == &mbox_tag)
				mail = true;
			else if (is_port_tag(w, ptr))
				ports_ready[n_ports_ready++] = ptr;
			else
				udp_relay_reply(w, ptr, evs[i].events);
		}
		udp_relay_flush_replies(w);
		if (listen_ready)
			udp_relay_listen(w, w->listen_fd, w->listen_ep.port);
		for (int i = 0; i < n_ports_ready; i++) /* one socket per port of a range (docs/DESIGN.md §8) */
			udp_relay_listen(w, *ports_ready[i], htons((uint16_t)(w->port_lo + (ports_ready[i] - w->port_fds))));
		if (w->draining)
			udp_flows_publish_drain(w);
		if (mail)
			udp_flows_take_mail(w);
		expire(w);
		if (w->now_ns >= w->next_tick_ns)
			tick(w);
	}
	return NULL;
}

static int watch(struct udp_worker *w, int fd, void *tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = tag };

	return epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/*
 * The listen socket(s) of a port range (docs/DESIGN.md §8): with sk_lookup,
 * one socket on the first port receives them all (reply sockets come later);
 * without, one per port.
 */
static int open_port_range(struct udp_worker *w, const struct sockaddr *listen)
{
	const struct udp_shared *sh = w->sh;
	int err;

	w->port_lo = mmp_sa_port(&sh->cfg->listen);
	w->n_port_fds = sh->cfg->n_ports;
	w->port_fds = malloc(sizeof(*w->port_fds) * w->n_port_fds);
	if (!w->port_fds)
		return -ENOMEM;
	for (int k = 0; k < w->n_port_fds; k++)
		w->port_fds[k] = -1;
	w->multiport = mmp_port_steer_multiport(sh->cfg, sh->steer);
	if (w->multiport) {
		w->listen_fd = w->port_fds[0] = udp_listen_socket_multiport(listen, sh->fast != NULL, &w->wildcard);
		if (w->listen_fd < 0)
			return w->listen_fd;
		err = watch(w, w->listen_fd, &listen_tag);
		return err ? err : mmp_port_steer_add(sh->steer, w->id, 0, w->listen_fd);
	}
	for (int k = 0; k < w->n_port_fds; k++) {
		struct sockaddr_storage addr;

		mmp_port_steer_addr(sh->cfg, k, &addr);
		w->port_fds[k] = udp_listen_socket((const struct sockaddr *)&addr, sh->fast != NULL, &w->wildcard);
		if (w->port_fds[k] < 0)
			return w->port_fds[k];
		err = watch(w, w->port_fds[k], &w->port_fds[k]);
		if (err)
			return err;
	}
	w->listen_fd = w->port_fds[0];
	return 0;
}

static void close_port_range(struct udp_worker *w)
{
	for (int k = 0; w->port_fds && k < w->n_port_fds; k++)
		if (w->port_fds[k] >= 0 && w->port_fds[k] != w->listen_fd)
			close(w->port_fds[k]);
	free(w->port_fds);
	w->port_fds = NULL;
}

int udp_worker_init(struct udp_worker *w, int id, struct udp_shared *sh)
{
	const struct sockaddr *listen = (const struct sockaddr *)&sh->cfg->listen;
	int err;

	memset(w, 0, sizeof(*w));
	w->id = id;
	w->sh = sh;
	w->cfg = sh->cfg;
	w->epfd = w->listen_fd = w->stop_fd = w->mbox_fd = -1;
	udp_ep_from_sa(&w->listen_ep, listen);
	err = udp_ft_init(&w->ft, sh->seed);
	if (!err)
		err = udp_relay_alloc(w);
	if (err) {
		pr_err("udp listener %d: out of memory for its buffers", id);
		return err;
	}
	err = mmp_listener_loop_open(&w->epfd, &w->stop_fd);
	if (err) {
		pr_err("udp listener %d: failed to create epoll/eventfd: %s", id, strerror(-err));
		return err;
	}
	w->header_required = sh->cfg->udp_header == MMP_UDP_HDR_EVERY || sh->cfg->udp_header == MMP_UDP_HDR_SPP;
	if (sh->cfg->n_ports > 1) {
		err = open_port_range(w, listen);
		if (err)
			return err;
	} else {
		w->listen_fd = udp_listen_socket(listen, sh->fast != NULL, &w->wildcard);
		if (w->listen_fd < 0)
			return w->listen_fd;
		err = watch(w, w->listen_fd, &listen_tag);
	}
	if (!err)
		err = watch(w, w->stop_fd, &stop_tag);
	if (!err && sh->reg) {
		w->mbox_fd = udp_registry_mbox_fd(sh->reg, id); /* owned by the registry */
		err = watch(w, w->mbox_fd, &mbox_tag);
	}
	if (err)
		pr_err("udp listener %d: epoll_ctl failed: %s", id, strerror(-err));
	return err;
}

int udp_worker_start(struct udp_worker *w)
{
	return mmp_listener_thread_start(&w->thread, worker_main, w, "udp listener", w->id);
}

void udp_worker_stop(struct udp_worker *w)
{
	mmp_listener_thread_stop(&w->thread, w->stop_fd, "udp listener", w->id);
	/* Every flow: its socket, index entries, map entries and registration. */
	udp_flows_close_all(w);
	udp_ft_free(&w->ft);
	free(w->touch);
	w->touch = NULL;
	udp_relay_free(w);
	close_port_range(w);
	mmp_listener_fds_close(&w->listen_fd, &w->stop_fd, &w->epfd);
}
