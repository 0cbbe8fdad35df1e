/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tc engine's files share. The hand-off's steps (eligible, HOLD,
 * quiet, FREEZE, SPLICE, close, window updates) are described once, in
 * docs/DESIGN.md §3b; its file map is docs/DESIGN.md §2.
 */
#ifndef MMP_TC_INTERNAL_H
#define MMP_TC_INTERNAL_H

#include <limits.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include "core/conn.h"
#include "engine/engine.h"
#include "lib/instance.h"
#include "mmp_tc.h"

struct tcp_info;

struct mmp_config;
struct mmp_loop;
struct tc_bpf;

/*
 * How long a flow may take to quiet down (a peer that does not read keeps our
 * send queue full). It then runs on splice and is tried again later, up to
 * HOLD_ATTEMPTS times. The first attempt holds both peers at once, which a
 * flow that pauses survives in a few ms; a flow that streams both ways does
 * not quiet down that way (an echo peer stops reading when it cannot write),
 * so it is given up soon and tried again at once in stages, one peer held
 * first (docs/DESIGN.md §3b, "Staged HOLD"); later attempts back off.
 */
#define HOLD_BOTH_TIMEOUT_MS 40
#define TC_WITHIN_MS 1000 /* tc_within_1s: in the kernel this long after the accept */
#define HOLD_TIMEOUT_MS 300
#define HOLD_MAX_MS 3000
#define HOLD_ATTEMPTS 6
#define HOLD_STAGED_RETRY_MS 10
#define HOLD_RETRY_MS 500
#define FREEZE_SETTLE_US 50
/*
 * A hold carries its queued bytes across (docs/DESIGN.md §3b) once both peers
 * were told window 0 and nothing arrived at either socket for this long (or
 * for the connections' round trip, when longer): their segments in flight
 * have landed, so the freeze drops none that a peer must resend by timeout.
 */
#define TC_SETTLE_MS 2
/*
 * Below this many bytes queued a hold first drains as before, for up to
 * TC_CARRY_AFTER_MS: request/response and short flows are quiet in a few ms,
 * and the carry's reads and zero-window announcements are for streams, whose
 * queues hold megabytes, and for peers too slow to drain a little. t14
 * (20,000 short flows, 64 at a time) aborted 2149 hand-offs with every hold
 * trying the carry at once, against 29-99 before.
 */
#define TC_CARRY_MIN_BYTES (64 * 1024)
#define TC_CARRY_AFTER_MS 10
/* A receiver "reads" (the carry's fit rule, tc_carry_plan.c) once it acked this much since the first attempt. */
#define TC_READING_MIN_BYTES (64 * 1024)
/*
 * While a flow waits for its hand-off, each proxy socket advertises at most
 * TC_WAIT_WINDOW and has SO_SNDBUF TC_WAIT_SNDBUF (the kernel doubles it):
 * what the hand-off must drain stays small (docs/DESIGN.md §3b, "Bounded
 * queues"). 128,000 bytes: two of lo's segments once a peer bounds its
 * segments by half the largest window it saw, as Linux does (64,000 of
 * 65,483), so a far receiver whose window sits a little under 64 KiB still
 * takes them after the switch (t55 2c: windows stuck at 65,024 against
 * 65,483-byte segments, moved one window per 200 ms probe); a window below
 * one segment left flows in persist mode (window probes). TC_SPLICE_BUF: the send
 * buffer a flow that stays on splice gets back (capped by wmem_max);
 * TC_UNCLAMPED_WINDOW: the largest window (65535 << 14).
 */
#ifndef TC_WAIT_WINDOW
#define TC_WAIT_WINDOW 128000
#endif
#ifndef TC_WAIT_SNDBUF
#define TC_WAIT_SNDBUF (64 * 1024)
#endif
#define TC_UNCLAMPED_WINDOW (65535 << 14)
#define TC_SPLICE_BUF (3 * 1024 * 1024)
/* The longest a hand-off waits for receive queues filled before the bound to drain; the recheck period. */
#ifndef TC_WAIT_SMALL_MAX_MS
#define TC_WAIT_SMALL_MAX_MS 200
#endif
#define TC_WAIT_SMALL_RECHECK_MS 5
/* Translated TSvals start this far (ms) above what the receiver last saw. */
#define TS_MARGIN 100
/* FIN both ways or RST: entries stay this long for the last ACKs/retransmits. */
#define CLOSED_LINGER_NS (2ULL * 1000000000ULL)
/*
 * A hand-off holds a flow for HOLD_MAX_MS at most: a HOLD or FREEZE entry
 * this old was left by an instance that died mid-hand-off (docs/DESIGN.md
 * §3c).
 */
#define ORPHAN_NS (60ULL * 1000000000ULL)
#define MAX_IFACES 32

/* The engine, per process. */
/* Where the once-a-second sweep of mmp_tc_flows goes on (mmp_tc_collect_step). */
struct mmp_tc_sweep {
	uint64_t token; /* BPF_MAP_LOOKUP_BATCH's cursor, a hash bucket */
	bool started; /* token is valid: the sweep is under way */
};

struct mmp_tc {
	const struct mmp_config *cfg;
	struct tc_bpf *skel;
	char pin_dir[PATH_MAX - 64];
	int tuples_fd, flows_fd;
	int carry_fd; /* mmp_tc_carry: what hand-offs carried across, until acked */
	int ifindex[MAX_IFACES]; /* [0] is lo */
	bool attached[MAX_IFACES][2]; /* [iface][egress]: our filter is on that hook (detach only those) */
	int nifaces;
	int raw4, raw6; /* window updates */
	/*
	 * Our filters' handle and priority, from the pin directory
	 * (lib/instance.c): instances in one namespace each keep their own
	 * filter, and a restart with the same directory replaces its
	 * predecessor's in place.
	 */
	struct mmp_tc_id id;
	bool adopting; /* reusing a previous instance's pinned maps */
	uint64_t idle_ns;
	uint64_t open_ns; /* HOLD/FREEZE entries older than this were left by a previous instance */
	/*
	 * Whether mmp_tc_tuples can hold a tuple, known without a lookup, so that
	 * the claim before every upstream connect costs no bpf() while no flow
	 * was handed off (docs/DESIGN.md §3d). tuple_writes counts hand-offs that
	 * started inserting tuples, tuple_writes_done those that finished;
	 * empty_at is the tuple_writes of the last look that found the map empty
	 * with no insert under way. tuple_writes == empty_at: nothing inserted since.
	 */
	_Atomic uint64_t tuple_writes, tuple_writes_done, empty_at;
	struct mmp_tc_sweep sweep; /* the tick's, by one loop only */
};

/* One connection's hand-off, from the moment splice took it (c->takeover_ctx). */
struct mmp_tc_conn {
	bool holding; /* HOLD: the flow's entries are in the maps */
	bool bounded; /* the sockets' queues are bounded for the hand-off (tc_bound.c) */
	uint64_t small_by_ms; /* the hand-off starts at the latest then, queues drained or not */
	uint64_t bound_ms; /* the queues are bounded from then on (half of --tc-handoff-delay) */
	bool both_held; /* the second stage of HOLD: window 0 toward both peers */
	uint8_t first_held; /* MMP_TC_ROLE_HOLD_CONN1 (the LB) or _CONN2 (the upstream): held first */
	uint8_t quiet; /* consecutive quiet checks */
	uint8_t acks_asked; /* bit 0: the LB, bit 1: the upstream was sent an ACK probe in this attempt */
	/* At the last look a socket held bytes out of order (hole_pending, mmp_tc_carry_ready): a give-up names it. */
	bool hole_seen;
	uint64_t pending_best; /* the fewest bytes queued this stage: a stage gives up when it stops shrinking */
	/*
	 * First stage of a staged hold: bytes the peer that is not held has
	 * acknowledged (tcpi_bytes_acked). While it takes data the held
	 * direction is still draining behind it (docs/DESIGN.md §3b).
	 */
	uint64_t free_acked;
	uint64_t hold_end_ms; /* an attempt never holds longer than HOLD_MAX_MS */
	/* Carrying across: when both peers were last told window 0 (0: not in this attempt yet)... */
	uint64_t zero_ms;
	/* ...and tcpi_bytes_received of conn1 and conn2 at the last look, and since when. */
	uint64_t rx[2];
	uint64_t rx_ms;
	/* Each receiver's tcpi_bytes_acked when the first attempt began ([0] the upstream), and whether it grew since. */
	uint64_t acked_seen[2];
	bool reading[2];
	uint8_t attempts; /* hand-offs tried */
	uint64_t flow; /* flow id: conn1's socket cookie */
	int oif; /* interface toward a remote load balancer; 0: it is on this host (lo) */
	int up_oif; /* interface toward an upstream beyond loopback (docs/DESIGN.md §14); 0: on lo */
	/* The flow's four tuples, by enum mmp_tc_role: an abort removes them even if the sockets died. */
	struct mmp_tc_tuple tuples[4];
	uint64_t deadline_ms;
	uint64_t start_ns;
	uint64_t retry_ms; /* non-zero: try the hand-off again at this time */
};

#define T(c) ((struct mmp_tc_conn *)(c)->takeover_ctx)

static inline struct mmp_tc *tc_of(const struct mmp_conn *c)
{
	return c->takeover->proc;
}

/* The four 4-tuples of a flow: [role] as in enum mmp_tc_role. */
struct flow_tuples {
	struct mmp_tc_tuple t[4];
};

/* tc_load.c */
int mmp_tc_load(const struct mmp_config *cfg, struct mmp_tc **out);
/* Detach and unpin, unless spliced flows remain and keep is set (they keep running). */
void mmp_tc_unload(struct mmp_tc *tc, bool keep);
/* Number of spliced flows in the maps. */
int mmp_tc_flow_count(struct mmp_tc *tc);

/* tc_flows.c */
int mmp_tc_addr_of(int fd, bool peer, struct sockaddr_storage *ss);
void mmp_tc_make_tuple(struct mmp_tc_tuple *t, const struct sockaddr_storage *src,
		       const struct sockaddr_storage *dst);
/* The tuples of a spliced flow, derived from its translation. */
void mmp_tc_tuples_of_flow(const struct mmp_tc_flow *flow, struct flow_tuples *ft);
/* A connection's four tuples from its sockets' names. */
int mmp_tc_flow_tuples(struct mmp_conn *c, struct flow_tuples *ft);
void mmp_tc_delete_flow(struct mmp_tc *tc, uint64_t flow, const struct flow_tuples *ft);
/* A tuple held by a flow that ended: removed (true); a live owner keeps it (false). */
bool mmp_tc_forget_stale_tuple(struct mmp_tc *tc, const struct mmp_tc_tuple *t);
/*
 * Before binding a new upstream socket to client: a finished spliced flow on
 * the same client -> upstream tuple is forgotten. Returns -EADDRINUSE when a
 * live spliced flow holds it.
 */
int mmp_tc_claim_client(struct mmp_tc *tc, const struct sockaddr *client, const struct sockaddr *upstream);
/* Mark the service port of a tuple of role in mmp_tc_ports: before it is inserted (include/mmp_tc.h). */
void mmp_tc_mark_port(struct mmp_tc *tc, const struct mmp_tc_tuple *t, uint32_t role);
/* Mark the ports of every tuple an adopted map holds: before the programs are attached. Returns how many. */
int mmp_tc_mark_adopted_ports(struct mmp_tc *tc);
/* Around a hand-off's tuple inserts (tc_handoff.c), and the look for an empty map (once a second, and at load). */
void mmp_tc_tuples_writing(struct mmp_tc *tc);
void mmp_tc_tuples_written(struct mmp_tc *tc);
void mmp_tc_note_empty(struct mmp_tc *tc);
/*
 * Remove finished flows (FIN both ways or RST, lingered linger_ns), idle ones,
 * and hand-offs a previous instance died in. Returns how many.
 */
int mmp_tc_collect(struct mmp_tc *tc, uint64_t linger_ns);
/* The same, over at most max_entries from where the last step ended (the tick's). */
int mmp_tc_collect_step(struct mmp_tc *tc, uint64_t linger_ns, uint32_t max_entries);
/* Entries one tick reads: a bounded stall, however many flows are held. */
#define COLLECT_TICK_ENTRIES 16384
/*
 * An unspoofed (LOCAL, UNKNOWN) upstream connection's source: the local
 * address the kernel would use toward upstream and a free port that no
 * spliced flow holds, in src. Returns 0, -EADDRINUSE when every port offered
 * was held, or another negative errno.
 */
int mmp_tc_unspoofed_source(struct mmp_tc *tc, const struct sockaddr *upstream, struct sockaddr_storage *src);

/* tc_bound.c: bound both sockets' queues while the flow waits for its hand-off; lift them when it stays on splice. */
void mmp_tc_bound_queues(struct mmp_conn *c);
void mmp_tc_unbound_queues(struct mmp_conn *c);
/* Both receive queues are within their bound (or waited for long enough): a hand-off may start. */
bool mmp_tc_queues_small(struct mmp_conn *c);

/*
 * One look at a held flow's queues: SIOCINQ and SIOCOUTQ of [0] conn1 (the
 * load balancer's socket) and [1] conn2 (the upstream's), -1 where the ioctl
 * failed, and what the flow's engine buffers. Read once per check, for the
 * drain and the carry decision alike (tc_carry_plan.c).
 */
struct mmp_tc_queues {
	int in[2], out[2];
	struct mmp_drain d;
};
void mmp_tc_read_queues(struct mmp_conn *c, struct mmp_tc_queues *q);

/* tc_load.c: once a second, hook the interface an upstream beyond loopback's route uses now. */
void mmp_tc_follow_upstreams(struct mmp_tc *tc);
/* tc_paths.c: whether ifindex is one of the interfaces hooked besides lo (ingress and egress). */
bool mmp_tc_hooked(const struct mmp_tc *tc, int ifindex);
/*
 * An upstream beyond loopback (docs/DESIGN.md §14): its interface must be
 * hooked and carry an Ethernet header, and the load balancer's segments
 * (a: conn1's TCP_INFO) must fit the upstream's path (b: conn2's). Sets
 * T(c)->up_oif (0 for an upstream on lo). NULL when eligible, else why not.
 */
const char *mmp_tc_upstream_path_ineligible(struct mmp_tc *tc, struct mmp_conn *c, const struct tcp_info *a,
					    const struct tcp_info *b);
/* The flow's interfaces in and its redirects out, from T(c)->oif and T(c)->up_oif. */
void mmp_tc_set_paths(struct mmp_tc *tc, const struct mmp_conn *c, struct mmp_tc_flow *flow);

/* tc_handoff.c */
/* Start the hand-off of a spliced connection. On ineligibility logs why (-v 2) and leaves c on splice. */
void mmp_tc_begin(struct mmp_loop *loop, struct mmp_conn *c);
/* Progress a connection in HOLD (after splice events, and from the poll list). */
void mmp_tc_check(struct mmp_loop *loop, struct mmp_conn *c);
/* Abort the hand-off: remove the flow's entries; c stays on splice. */
void mmp_tc_abort(struct mmp_loop *loop, struct mmp_conn *c, const char *why);

#endif
