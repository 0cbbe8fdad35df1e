/* SPDX-License-Identifier: GPL-2.0 */
/*
 * TCP mode's totals, shared by the control plane and bpf/counters.bpf.c,
 * whose BTF-defined ARRAY mmp_tcp_cnt (one struct mmp_tcp_counters) the
 * control plane writes once a second, so that `mmproxy-bpf stats` and
 * `bpftool map dump pinned DIR/mmp_tcp_cnt` read them by name. One list
 * X(id, name, help), the shape of every counter family, gives the struct,
 * the enum, and (through user/lib/counter_table.c) the names and
 * descriptions everything prints; the exit log's "totals:" wording is the
 * name with spaces (user/core/counters.c).
 */
#ifndef MMP_TCP_H
#define MMP_TCP_H

#define MMP_TCP_COUNTERS_MAP "mmp_tcp_cnt"

#define MMP_TCP_COUNTERS(X) \
	X(accepted, "accepted", "connections accepted from load balancers")                                     \
	X(refused_source, "refused_source", "connections refused: load balancer not in the allowed subnets")          \
	X(refused_client, "refused_client", "connections refused: the header named a client no real one can have")   \
	X(bad_header, "bad_header", "connections closed: invalid PROXY header")                                  \
	X(header_timeout, "header_timeout", "connections closed: no complete PROXY header within --header-timeout")   \
	X(upstream_failed, "upstream_failed", "connections closed: the upstream connect failed or timed out")          \
	X(spliced, "spliced", "connections handed to an engine")                                              \
	X(resets_forwarded, "resets_forwarded", "resets forwarded from one side to the other")                          \
	X(active, "active", "connections open now")                                                          \
	X(sockmap_flows, "sockmap_flows", "connections handed to the sockmap engine")                                \
	X(sockmap_fallbacks, "sockmap_fallbacks", "connections the sockmap engine refused: spliced instead")             \
	X(tc_flows, "tc_flows", "flows the tc engine took over (spliced in the kernel)")                        \
	X(tc_ineligible, "tc_ineligible", "flows the tc engine could not take: stayed on splice")                    \
	X(tc_aborted, "tc_aborted", "tc hand-offs given up: the flow stayed on splice")                           \
	X(tc_short, "tc_short", "flows that ended on splice before their tc hand-off began")                 \
	X(refused_pending, "refused_pending", "connections refused: --max-pending connections were pending")          \
	X(refused_pending_source, "refused_pending_source",                                                     \
	  "connections refused: their load balancer had --max-pending-per-source pending")                          \
	X(closed_idle, "closed_idle", "connections closed: no data either way for --idle-timeout")              \
	X(refused_endpoint, "refused_endpoint",                                                                 \
	  "connections refused: the PROXY header names no endpoint of --allowed-endpoints")                     \
	X(pipe_fallbacks, "pipe_fallbacks",                                                                     \
	  "spliced connections copied through userspace: no pipe could be had (fs.pipe-user-pages-*, open files)") \
	X(steered, "steered",                                                                                   \
	  "upstream connections beyond loopback whose replies are steered to the proxy by tuple")                  \
	X(tc_beyond_loopback, "tc_beyond_loopback",                                                             \
	  "flows the tc engine spliced between two interfaces: their upstream is beyond loopback")              \
	X(tc_carried, "tc_carried",                                                                             \
	  "tc hand-offs that carried queued bytes across instead of waiting for them to drain")                    \
	X(tc_carried_bytes, "tc_carried_bytes", "bytes tc hand-offs carried across, both directions")              \
	X(tc_carry_resent, "tc_carry_resent",                                                                   \
	  "carried bytes sent again (by a resend, or after one): not acked in time")                            \
	X(tc_carry_abandoned, "tc_carry_abandoned",                                                             \
	  "carries given up: the receiver sent nothing for 10 s (its flow was removed)")                           \
	X(tc_carry_fast_resent, "tc_carry_fast_resent",                                                         \
	  "carried bytes sent again at once: the receiver kept sending but acked nothing (a hole)")               \
	X(tc_within_1s, "tc_within_1s",                                                                         \
	  "flows the tc engine took over within 1 s of their accept, aborted attempts and retries included")

struct mmp_tcp_counters {
#define MMP_TCP_X_FIELD(id, name, help) __u64 id;
	MMP_TCP_COUNTERS(MMP_TCP_X_FIELD)
#undef MMP_TCP_X_FIELD
};

enum mmp_tcp_counter {
#define MMP_TCP_X_ENUM(id, name, help) MMP_TCP_CNT_##id,
	MMP_TCP_COUNTERS(MMP_TCP_X_ENUM)
#undef MMP_TCP_X_ENUM
	MMP_TCP_CNT_MAX,
};

#endif
