/* SPDX-License-Identifier: GPL-2.0 */
/*
 * UDP mode's pinned maps (include/mmp_udp.h): mmp_udp_flows, one entry per
 * live flow, and mmp_udp_cnt, the totals. Writes never fail the data path:
 * an error is logged once and the datagrams keep flowing.
 */
#ifndef MMP_UDP_MAPS_H_USER
#define MMP_UDP_MAPS_H_USER

#include <stdbool.h>
#include <stdint.h>
#include "mmp_udp.h"

struct udp_maps;
struct udp_flow;

/*
 * Load bpf/udp.bpf.c with room for max_flows flows and pin its maps under
 * pin_dir (replacing stale pins). With fast, the fast path's programs are
 * loaded too; a kernel that refuses them gets the maps alone (one log line,
 * udp_maps_prog_fd() then returns -1). Returns 0 with *out set, or a negative
 * errno after logging the cause and the fix.
 */
int udp_maps_open(const char *pin_dir, uint32_t max_flows, bool fast, struct udp_maps **out);
/* Unpin and free. NULL is fine. */
void udp_maps_close(struct udp_maps *m);

/* The map value of flow f, owned by listener thread. */
void udp_flow_to_map(const struct udp_flow *f, uint32_t thread, struct mmp_udp_flow *v);

/* Write one flow (at creation). */
void udp_maps_put_flow(struct udp_maps *m, const struct udp_flow *f, uint32_t thread);
/* Write n flows in one system call where the kernel allows (periodic refresh). */
void udp_maps_put_flows(struct udp_maps *m, uint64_t *keys, struct mmp_udp_flow *vals, uint32_t n);
void udp_maps_del_flow(struct udp_maps *m, uint64_t cookie);
void udp_maps_put_counters(struct udp_maps *m, const struct mmp_udp_counters *c);

/* The fast path's program, -1 when not loaded, and its maps. */
int udp_maps_prog_fd(struct udp_maps *m);
int udp_maps_fwd_fd(struct udp_maps *m);
int udp_maps_rev_fd(struct udp_maps *m);
int udp_maps_drain_fd(struct udp_maps *m);
/* The fast path's counters (enum mmp_udp_kcounter), summed over CPUs. */
void udp_maps_kcounters(struct udp_maps *m, uint64_t out[MMP_UDP_KCNT_MAX]);

#endif
