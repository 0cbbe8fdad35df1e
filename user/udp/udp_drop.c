// SPDX-License-Identifier: GPL-2.0
/* Counting and logging a dropped datagram, at most a line a second per reason. */
#include "lib/counter_table.h"
#include "lib/log.h"
#include "lib/sockaddr.h"
#include "udp/udp_drop.h"
#include "udp/udp_ep.h"
#include "udp/udp_thread.h"

const char *udp_counter_desc(enum mmp_udp_counter c)
{
	return mmp_counter_help(MMP_FAM_UDP, c);
}

void udp_drop(struct udp_worker *w, enum mmp_udp_counter c, const struct udp_ep *from, const char *why,
	      const char *fix)
{
	char a[MMP_ADDRSTRLEN];
	uint32_t n;

	udp_cnt_add(w, c, 1);
	if (mmp_verbosity < MMP_LOG_CONN)
		return;
	n = mmp_rl_take_suppressed(&w->rl[c], w->now_ns);
	if (n)
		pr_conn("udp: %u more like the next line in the last second (%s), not logged", n, udp_counter_desc(c));
	if (mmp_rl_allow(&w->rl[c], w->now_ns))
		pr_conn("dropped datagram from %s: %s (%s)", udp_ep_fmt(from, a), why, fix);
}

