// SPDX-License-Identifier: GPL-2.0
#include <stdio.h>
#include <netinet/in.h>
#include "policy/client_policy.h"
#include "lib/log.h"
#include "policy/policy.h"
#include "lib/sockaddr.h"
#include "listen/port_range.h"
#include "udp/udp_classify.h"
#include "udp/udp_flow_policy.h"
#include "udp/udp_drop.h"
#include "udp/udp_thread.h"

bool udp_client_refused(struct udp_worker *w, const struct udp_dgram_info *info, const struct udp_ep *lb,
			const struct sockaddr_storage *lb_sa, uint16_t local_port)
{
	const struct sockaddr *client = (const struct sockaddr *)&info->client;
	struct sockaddr_storage target;
	enum mmp_client_verdict v;
	char why[160], c[MMP_ADDRSTRLEN];

	/* The upstream this flow would reach: with -4/-6 ranges, the one mapped from our port (docs/DESIGN.md §8). */
	mmp_port_range_upstream(w->cfg, client->sa_family == AF_INET6 ? AF_INET6 : AF_INET, ntohs(local_port), &target);
	v = mmp_client_check(client, (const struct sockaddr *)lb_sa, (const void *)&target, mmp_local_addrs_current());

	if (v == MMP_CLIENT_OK)
		return false;
	snprintf(why, sizeof(why), "header names client %s: %s (rule %s)",
		 mmp_fmt_addr(client, c), mmp_client_why(v), mmp_client_rule(v));
	udp_drop(w, MMP_UDP_CNT_drop_client_policy, lb, why,
		 "no real client has it: is the port reachable by others than the load balancer? restrict it with -a");
	return true;
}

bool udp_move_to_other_lb_ok(const struct udp_worker *w, const struct sockaddr_storage *lb_sa)
{
	return w->cfg->allowed_path && mmp_policy_allowed(w->sh->policy, (const struct sockaddr *)lb_sa);
}

void udp_move_refused(struct udp_worker *w, const struct udp_ep *client, const struct udp_ep *from,
		      const struct udp_ep *to)
{
	char why[200], a[MMP_ADDRSTRLEN], b[MMP_ADDRSTRLEN];

	snprintf(why, sizeof(why), "header names client %s, whose replies go to load balancer %s",
		 udp_ep_fmt(client, a), udp_ep_fmt(from, b));
	udp_drop(w, MMP_UDP_CNT_drop_move_refused, to, why,
		 w->cfg->allowed_path ? "add the new load balancer's subnet to the -a file if it is yours"
				      : "replies move between load-balancer addresses only with -a: list your load balancers");
}

void udp_move_logged(struct udp_worker *w, const struct udp_ep *client, const struct udp_ep *from,
		     const struct udp_ep *to, bool count)
{
	char a[MMP_ADDRSTRLEN], b[MMP_ADDRSTRLEN], c[MMP_ADDRSTRLEN];

	if (count)
		udp_cnt_add(w, MMP_UDP_CNT_flows_moved, 1);
	if (mmp_verbosity >= MMP_LOG_CONN && mmp_rl_allow(&w->rl[MMP_UDP_CNT_flows_moved], w->now_ns))
		pr_conn("udp: replies of client %s moved from load balancer %s to %s", udp_ep_fmt(client, a),
			udp_ep_fmt(from, b), udp_ep_fmt(to, c));
}
