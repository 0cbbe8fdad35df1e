// SPDX-License-Identifier: GPL-2.0
/*
 * The life of a UDP flow in its listener thread: opened by a header, moved
 * when its client comes back through another LB ip:port, replaced when its
 * LB ip:port carries another client, closed when idle or when another
 * thread takes its client; handed to the fast path and back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include "lib/log.h"
#include "lib/quota.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "udp/udp_classify.h"
#include "udp/fast/udp_fast.h"
#include "udp/fast/udp_maps.h"
#include "udp/udp_registry.h"
#include "udp/udp_sock.h"
#include "udp/udp_drop.h"
#include "udp/udp_flow_policy.h"
#include "steer/reply_steer.h"
#include "udp/udp_lifecycle.h"
#include "udp/udp_stage.h"
#include "udp/udp_thread.h"
#include "lib/transparent.h"

#define EVICT_CHUNK 256 /* mailbox entries taken per wakeup */

static const char *format_name(uint8_t format)
{
	return format == MMP_UDP_FMT_SPP ? "SPP" : format == MMP_UDP_FMT_LOCAL ? "PROXY v2 LOCAL" : "PROXY v2";
}

/* Take f out of the kernel, the maps and the hand-over lists, before its socket closes. */
static void forget(struct udp_worker *w, struct udp_flow *f)
{
	if (f->to_kernel) {
		struct udp_flow **pp = &w->to_kernel;

		while (*pp != f)
			pp = &(*pp)->to_kernel_next;
		*pp = f->to_kernel_next;
		f->to_kernel = false;
	}
	if (f->draining) {
		struct udp_flow **pp = &w->draining;

		while (*pp != f)
			pp = &(*pp)->draining_next;
		*pp = f->draining_next;
		f->draining = false;
	}
	if (f->fast)
		udp_cnt_sub(w, MMP_UDP_CNT_flows_fast, 1);
	/* Not only when f->fast: a stale forward entry no longer re-armed is still in the map (udp_fast_del). */
	if (w->sh->fast)
		udp_fast_del(w->sh->fast, f);
	udp_maps_del_flow(w->sh->maps, f->cookie);
}

/* Queue f for the fast path (udp_flows_to_kernel), from LB interface ifindex. */
void udp_flow_want_kernel(struct udp_worker *w, struct udp_flow *f, int ifindex)
{
	f->lb_ifindex = ifindex;
	/*
	 * The kernel forwards a flow's plain headers without reading TLVs, so
	 * under --allowed-endpoints every header must reach userspace: the flow
	 * stays here (docs/DESIGN.md §12).
	 */
	if (!w->sh->fast || f->to_kernel || w->cfg->allowed_endpoints_path)
		return;
	f->to_kernel = true;
	f->to_kernel_next = w->to_kernel;
	w->to_kernel = f;
}

void udp_flows_to_kernel(struct udp_worker *w)
{
	struct udp_flow *f = w->to_kernel, *next;
	char a[MMP_ADDRSTRLEN];
	int err;

	for (; f; f = next) {
		bool was_fast = f->fast;

		next = f->to_kernel_next;
		f->to_kernel = false;
		f->to_kernel_next = NULL;
		err = udp_fast_add(w->sh->fast, f, f->lb_ifindex, w->header_required);
		if (f->fast && !was_fast) {
			udp_cnt_add(w, MMP_UDP_CNT_flows_fast, 1);
			pr_debug("udp: flow of client %s handed to the kernel (%s%s)", udp_ep_fmt(&f->client, a),
				 f->fast_fwd ? "datagrams" : "", f->fast_rev ? (f->fast_fwd ? " and replies" : "replies") : "");
		}
		if (err < 0 && mmp_verbosity >= MMP_LOG_CONN && mmp_rl_allow(&w->rl[MMP_UDP_CNT_flows_fast], w->now_ns))
			pr_conn("udp: flow of client %s stays in userspace: the fast path refused it: %s",
				udp_ep_fmt(&f->client, a), strerror(-err));
	}
	w->to_kernel = NULL;
}

void udp_flow_drained(struct udp_worker *w, struct udp_flow *f, bool rev, uint32_t seq)
{
	if (rev)
		f->drain_rev = seq;
	else
		f->drain_fwd = seq;
	if (f->draining)
		return;
	f->draining = true;
	f->draining_next = w->draining;
	w->draining = f;
}

void udp_flows_publish_drain(struct udp_worker *w)
{
	struct udp_flow *f = w->draining, *next;

	for (; f; f = next) {
		next = f->draining_next;
		f->draining = false;
		f->draining_next = NULL;
		/* A failed write only delays the switch: the next marked datagram publishes again. */
		udp_fast_publish(w->sh->fast, f);
	}
	w->draining = NULL;
}

/* The flow's reply tuple lingers, then goes (docs/DESIGN.md §14). */
static void release_steer(struct udp_flow *f)
{
	struct sockaddr_storage client;

	if (!f->steer_owner)
		return;
	udp_ep_to_sa(&f->client, &client);
	mmp_steer_release(IPPROTO_UDP, (const struct sockaddr *)&client, (const struct sockaddr *)f->target,
			  f->steer_owner);
	f->steer_owner = 0;
}

/* Close f's socket and free it; the caller has taken it out of everything else. */
static void flow_free(struct udp_worker *w, struct udp_flow *f)
{
	close(f->fd); /* also leaves epoll */
	release_steer(f);
	if (f->quota_held)
		mmp_quota_give(w->sh->per_lb, (const struct sockaddr *)&f->quota_sa);
	atomic_fetch_sub(&w->sh->nflows, 1);
	udp_cnt_sub(w, MMP_UDP_CNT_flows_active, 1);
	free(f);
}

void udp_flow_close(struct udp_worker *w, struct udp_flow *f, enum mmp_udp_counter why)
{
	char c[MMP_ADDRSTRLEN], l[MMP_ADDRSTRLEN];

	pr_debug("udp: closing flow of client %s via %s (%s): %llu datagrams up, %llu down in userspace",
		 f->client.family ? udp_ep_fmt(&f->client, c) : "(local)", udp_ep_fmt(&f->lb, l), udp_counter_desc(why),
		 (unsigned long long)f->pkts_up, (unsigned long long)f->pkts_down);
	udp_cnt_add(w, why, 1);
	udp_ft_remove(&w->ft, f);
	forget(w, f);
	/* An evicted client belongs to another thread now: leave its registration alone. */
	if (w->sh->reg && f->client.family && why != MMP_UDP_CNT_flows_evicted)
		udp_registry_release(w->sh->reg, &f->client, w->id);
	flow_free(w, f);
}

static void set_reply_route(struct udp_flow *f, const struct udp_ep *lb, const struct sockaddr_storage *lb_sa,
			    socklen_t lb_salen, const struct udp_ep *local)
{
	f->lb = *lb;
	memcpy(&f->lb_sa, lb_sa, lb_salen);
	f->lb_salen = lb_salen;
	f->local = *local;
}

/* The upstream of -4/-6 for f's family; a range's port follows the port the load balancer sent to. */
static const struct sockaddr_storage *mapped_target(struct udp_flow *f, const struct mmp_config *cfg, int family)
{
	return mmp_port_range_upstream(cfg, family == AF_INET6 ? AF_INET6 : AF_INET, ntohs(f->local.port),
				       &f->target_mapped);
}

/* Open a flow: the upstream socket, the indexes, epoll and the map entry. NULL after counting the drop. */
static struct udp_flow *flow_open(struct udp_worker *w, const struct udp_dgram_info *info, uint8_t format,
				  const struct udp_ep *lb, const struct sockaddr_storage *lb_sa, socklen_t lb_salen,
				  const struct udp_ep *local, int ifindex, const uint8_t *hdr)
{
	const struct mmp_config *cfg = w->cfg;
	const struct sockaddr *src = NULL;
	struct epoll_event ev = { .events = EPOLLIN };
	char a[MMP_ADDRSTRLEN], b[MMP_ADDRSTRLEN];
	struct udp_flow *f;
	const char *what;
	int fd, err;

	if (atomic_fetch_add(&w->sh->nflows, 1) >= w->sh->max_flows) {
		atomic_fetch_sub(&w->sh->nflows, 1);
		udp_drop(w, MMP_UDP_CNT_drop_flow_limit, lb, "too many flows open",
			 "raise LimitNOFILE= / ulimit -n, or lower -c so idle flows close sooner");
		return NULL;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		atomic_fetch_sub(&w->sh->nflows, 1);
		udp_drop(w, MMP_UDP_CNT_drop_flow_limit, lb, "out of memory for a new flow", "free some memory");
		return NULL;
	}
	err = mmp_quota_take(w->sh->per_lb, (const struct sockaddr *)lb_sa);
	if (err == -EDQUOT || err == -ENOMEM) {
		udp_drop(w, MMP_UDP_CNT_drop_lb_quota, lb, "its load balancer has --udp-max-flows-per-lb flows open",
			 "raise --udp-max-flows-per-lb, or lower -c so idle flows close sooner");
		goto fail_free;
	}
	f->quota_held = !err;
	f->quota_sa = *lb_sa;
	f->format = format;
	f->stage_head = f->stage_tail = -1;
	set_reply_route(f, lb, lb_sa, lb_salen, local);
	if (format == MMP_UDP_FMT_LOCAL) {
		/* A health check: from our own address, to the upstream of the LB's family. */
		f->target = mapped_target(f, cfg, lb->family);
	} else {
		src = (const struct sockaddr *)&info->client;
		udp_ep_from_sa(&f->client, src);
		f->target = mapped_target(f, cfg, src->sa_family);
		if (format == MMP_UDP_FMT_SPP)
			memcpy(f->spp_hdr, hdr, SPP_HEADER_LEN);
		/* The newest flow of a client wins; a thread that held it closes its own. */
		if (w->sh->reg) {
			struct udp_ep held_lb;
			int old = udp_registry_claim(w->sh->reg, &f->client, lb, udp_move_to_other_lb_ok(w, lb_sa), w->id,
						     &held_lb);

			if (old == -EACCES) { /* another thread's flow has it from another LB address */
				udp_move_refused(w, &f->client, &held_lb, lb);
				goto fail_free;
			}
			if (old >= 0)
				udp_move_logged(w, &f->client, &held_lb, lb, false);
			if (old == -ENOMEM) {
				udp_drop(w, MMP_UDP_CNT_drop_flow_limit, lb, "out of memory for a new flow",
					 "free some memory");
				goto fail_free;
			}
			if (old >= 0 && w->sh->fast)
				udp_fast_forget_client(w->sh->fast, f);
		}
	}
	/* An upstream beyond loopback: its replies are steered to the flow's socket by tuple (§14). */
	if (src) {
		err = mmp_steer_add(IPPROTO_UDP, src, (const struct sockaddr *)f->target, &f->steer_owner);
		if (err) {
			udp_drop(w, MMP_UDP_CNT_drop_steer, lb, strerror(-err),
				 "the steering map is full or another flow holds the client's ip:port");
			goto fail_release;
		}
		if (f->steer_owner)
			udp_cnt_add(w, MMP_UDP_CNT_flows_steered, 1);
	}
	fd = udp_upstream_socket(src, (const struct sockaddr *)f->target, cfg->mark, w->sh->fast != NULL, &f->cookie,
				 &what);
	if (fd < 0) {
		err = fd;
		udp_cnt_add(w, MMP_UDP_CNT_drop_upstream_socket, 1);
		if (mmp_verbosity >= MMP_LOG_CONN && mmp_rl_allow(&w->rl[MMP_UDP_CNT_drop_upstream_socket], w->now_ns))
			pr_conn("dropped datagram from %s: upstream %s for client %s: %s failed: %s%s",
				udp_ep_fmt(lb, a), mmp_fmt_addr((const struct sockaddr *)f->target, b),
				src ? mmp_fmt_addr(src, (char[MMP_ADDRSTRLEN]){ 0 }) : "(local)", what, strerror(-err),
				mmp_upstream_hint(what, err));
		goto fail_release;
	}
	f->fd = fd;
	f->created_ns = f->last_ns = w->now_ns;
	if (udp_ft_add(&w->ft, f))
		goto fail_close;
	ev.data.ptr = f;
	if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
		udp_ft_remove(&w->ft, f);
		goto fail_close;
	}
	udp_cnt_add(w, MMP_UDP_CNT_flows_created, 1);
	udp_cnt_add(w, MMP_UDP_CNT_flows_active, 1);
	udp_maps_put_flow(w->sh->maps, f, w->id);
	udp_flow_want_kernel(w, f, ifindex);
	pr_debug("udp: new %s flow: client %s via %s -> upstream %s", format_name(format),
		 src ? mmp_fmt_addr(src, a) : "(local)", udp_ep_fmt(lb, b),
		 mmp_fmt_addr((const struct sockaddr *)f->target, (char[MMP_ADDRSTRLEN]){ 0 }));
	return f;

fail_close:
	close(fd);
	udp_drop(w, MMP_UDP_CNT_drop_upstream_socket, lb, "out of memory or epoll failure for a new flow",
		 "free some memory");
fail_release:
	release_steer(f);
	if (src && w->sh->reg)
		udp_registry_release(w->sh->reg, &f->client, w->id);
fail_free:
	if (f->quota_held)
		mmp_quota_give(w->sh->per_lb, (const struct sockaddr *)&f->quota_sa);
	free(f);
	atomic_fetch_sub(&w->sh->nflows, 1);
	return NULL;
}

/*
 * The datagram carries a header that names a flow the fast lookups did not
 * find: replace the LB ip:port's flow with another client's, move a known
 * client to this LB ip:port, or open a new flow. The load balancer has
 * passed the policy check.
 */
struct udp_flow *udp_flow_for_header(struct udp_worker *w, const struct udp_dgram_info *info,
				     const struct udp_ep *lb, const struct sockaddr_storage *lb_sa, socklen_t lb_salen,
				     const struct udp_ep *local, int ifindex, const uint8_t *hdr)
{
	uint8_t format = info->kind == UDP_K_SPP ? MMP_UDP_FMT_SPP
			 : info->kind == UDP_K_LOCAL ? MMP_UDP_FMT_LOCAL
						     : MMP_UDP_FMT_V2;
	struct udp_flow *f = udp_ft_by_lb(&w->ft, lb), *g;
	struct udp_ep client;

	if (format != MMP_UDP_FMT_LOCAL)
		udp_ep_from_sa(&client, (const struct sockaddr *)&info->client);
	else
		memset(&client, 0, sizeof(client));
	if (format != MMP_UDP_FMT_LOCAL && udp_client_refused(w, info, lb, lb_sa, local->port))
		return NULL;
	/* Before anything closes: may this header move the client's replies here? */
	g = format != MMP_UDP_FMT_LOCAL ? udp_ft_by_client(&w->ft, &client) : NULL;
	if (g && !udp_same_lb_addr(&g->lb, lb) && !udp_move_to_other_lb_ok(w, lb_sa)) {
		udp_move_refused(w, &client, &g->lb, lb);
		return NULL;
	}
	/*
	 * PROXY v2 replies carry no header, so an LB ip:port serves one client
	 * at a time: a new client there means the load balancer reused the port.
	 */
	if (f && format != MMP_UDP_FMT_SPP && !(f->format == format && udp_ep_eq(&f->client, &client))) {
		udp_relay_flush_forward(w); /* its staged datagrams go first */
		udp_flow_close(w, f, MMP_UDP_CNT_flows_replaced);
	}
	if (format == MMP_UDP_FMT_LOCAL)
		return flow_open(w, info, format, lb, lb_sa, lb_salen, local, ifindex, hdr);

	g = udp_ft_by_client(&w->ft, &client);
	if (!g)
		return flow_open(w, info, format, lb, lb_sa, lb_salen, local, ifindex, hdr);
	/* The client is back through another LB ip:port (or framing): keep its socket, move the replies. */
	if (!udp_ep_eq(&g->lb, lb) || g->format != format) {
		udp_move_logged(w, &client, &g->lb, lb, true);
		if (g->fast)
			udp_cnt_sub(w, MMP_UDP_CNT_flows_fast, 1);
		/* Its entries are keyed by the old LB ip:port, stale ones too: deleted before the keys change. */
		if (w->sh->fast)
			udp_fast_del(w->sh->fast, g);
		udp_ft_move(&w->ft, g, lb, format);
		set_reply_route(g, lb, lb_sa, lb_salen, local);
		udp_flow_want_kernel(w, g, ifindex);
	}
	if (format == MMP_UDP_FMT_SPP)
		memcpy(g->spp_hdr, hdr, SPP_HEADER_LEN);
	return g;
}

void udp_flows_take_mail(struct udp_worker *w)
{
	struct udp_ep clients[EVICT_CHUNK];
	size_t n = udp_registry_take(w->sh->reg, w->id, clients, EVICT_CHUNK);

	for (size_t i = 0; i < n; i++) {
		struct udp_flow *f = udp_ft_by_client(&w->ft, &clients[i]);

		/* We may have claimed it back since: then the flow is ours to keep. */
		if (f && !udp_registry_holds(w->sh->reg, &clients[i], w->id))
			udp_flow_close(w, f, MMP_UDP_CNT_flows_evicted);
	}
}


void udp_flows_close_all(struct udp_worker *w)
{
	struct udp_flow *f;

	while ((f = udp_ft_oldest(&w->ft))) {
		udp_ft_remove(&w->ft, f);
		forget(w, f);
		if (w->sh->reg && f->client.family)
			udp_registry_release(w->sh->reg, &f->client, w->id);
		flow_free(w, f);
	}
}
