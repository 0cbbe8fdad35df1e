/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UDP mode's in-kernel fast path (bpf/udp.bpf.c): the TC programs on lo and
 * on the interfaces of remote load balancers, and the per-flow entries that
 * tell them what to rewrite. Userspace still opens every flow (the first
 * datagram), keeps its socket (for whatever the programs leave alone) and
 * closes it; in between, the kernel moves the datagrams.
 */
#ifndef MMP_UDP_FAST_H
#define MMP_UDP_FAST_H

#include <stdbool.h>
#include <stdint.h>
#include "lib/config.h"

struct udp_fast;
struct udp_flow;
struct udp_maps;

/*
 * Attach the program to the ingress of lo and of --iface (or of every
 * interface that is up). Returns 0 with *out set, or a negative errno
 * after logging why.
 */
int udp_fast_open(const struct mmp_config *cfg, struct udp_maps *maps, struct udp_fast **out);
/* Detach (leaving the clsact qdisc for anyone else's filters). NULL is fine. */
void udp_fast_close(struct udp_fast *fp);
/*
 * Once a second, on the thread that opened fp: when reply steering has
 * followed an upstream's route to another interface (docs/DESIGN.md §14),
 * hook the new one, and move the entries that send to or read from the
 * old one over to it: those flows stay in the kernel. NULL is a no-op.
 */
void udp_fast_follow(struct udp_fast *fp);

/*
 * Hand flow f to the kernel where it can take it: one address family
 * throughout (IPv4 or IPv6), PROXY v2 or SPP, the LB's datagrams arriving on
 * a hooked interface lb_ifindex. The forward direction also needs, for a
 * remote LB, lo's sysctls (see udp_fast_open); SPP replies need a local LB
 * (reply() in bpf/udp.bpf.c). header_required: --udp-header every or spp. Entries start draining (include/mmp_udp.h), so no datagram
 * overtakes another. Sets f->fast*. Returns 0 when at least one direction
 * is in the kernel, 1 when none can be, or a negative errno (map full...).
 */
int udp_fast_add(struct udp_fast *fp, struct udp_flow *f, int lb_ifindex, bool header_required);
/*
 * f->spp_hdr changed (the load balancer named another proxy address or
 * port): the kernel's replies carry the new header from now on, as
 * userspace's would. Call it before forwarding the datagram that brought it,
 * so that its replies carry it. The entry's mode and counts are kept.
 * Returns 0 (also without a reply entry) or -errno.
 */
int udp_fast_spp_header(struct udp_fast *fp, const struct udp_flow *f);
/*
 * Publish the numbers of the last marked datagrams f has sent (f->drain_fwd/rev),
 * in f's mmp_udp_drain entry (f->drain_entry: udp_fast_del removes it). Returns 0 or -errno.
 */
int udp_fast_publish(struct udp_fast *fp, struct udp_flow *f);

/*
 * A datagram of f's forward direction came to userspace marked
 * MMP_UDP_MARK_STALE: the program saw another header and stopped. Marks the
 * direction as not in the kernel, so the next udp_fast_add re-arms it
 * (draining again, keeping its counts). The stale entry stays until then,
 * or until udp_fast_del.
 */
void udp_fast_fwd_missed(struct udp_flow *f);
/*
 * Take f back: delete every entry f put in the maps, each once, whether the
 * kernel still moves it or not (a stale forward entry that is no longer
 * re-armed, udp_fast_fwd_missed, included). Clears f->fast*. Call it
 * whenever f closes or moves; a no-op when f has no entry.
 */
void udp_fast_del(struct udp_fast *fp, struct udp_flow *f);
/*
 * Another thread's flow held this client, and is being closed: stop the
 * kernel sending the client's replies to that flow's load balancer now,
 * rather than when that thread gets to it.
 */
void udp_fast_forget_client(struct udp_fast *fp, const struct udp_flow *f);

/* What the kernel moved for f, both directions. */
struct udp_fast_stats {
	uint64_t pkts_up, bytes_up, pkts_down, bytes_down;
	uint64_t last_ns; /* 0: nothing yet */
};
/* Read f's entries. Returns 0, or a negative errno (f not fast, entry gone). */
int udp_fast_stats(struct udp_fast *fp, const struct udp_flow *f, struct udp_fast_stats *st);

#endif
