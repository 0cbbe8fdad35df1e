/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_UDP_DROP_H
#define MMP_UDP_DROP_H

#include "mmp_udp.h"

struct udp_ep;
struct udp_worker;

/* Count a dropped datagram (or an upstream error) and log it, rate-limited, at -v 1. */
void udp_drop(struct udp_worker *w, enum mmp_udp_counter c, const struct udp_ep *from, const char *why,
	      const char *fix);

/* The counter's meaning, from include/mmp_udp.h. */
const char *udp_counter_desc(enum mmp_udp_counter c);

#endif
