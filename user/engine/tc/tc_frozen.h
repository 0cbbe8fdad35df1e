/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_TC_FROZEN_H
#define MMP_TC_FROZEN_H
/*
 * The TCP state of the proxy's own sockets, read in repair mode: what a
 * hand-off translates from (docs/DESIGN.md §3b, FREEZE), and what the ACKs
 * the proxy sends in a socket's name carry.
 */
#include <stdbool.h>
#include <stdint.h>
#include <linux/tcp.h> /* struct tcp_repair_window, struct tcp_info */

struct mmp_tc;
struct mmp_tc_tuple;

#define TCP_STATE_ESTABLISHED 1 /* include/net/tcp_states.h */

struct mmp_tc_frozen {
	uint32_t rcv_nxt, write_seq, tsval;
	uint32_t ts_recent; /* the peer's last TSval this socket accepted (mmp_tc_read_ts_recent) */
	struct tcp_repair_window win;
	struct tcp_info ti;
};

/* TCP_REPAIR on (1) or off (0): 0 or -errno. */
int mmp_tc_set_repair(int fd, int on);
/* A socket in repair mode: both queues' sequence numbers, TSval clock, window, TCP_INFO. */
int mmp_tc_read_frozen(int fd, struct mmp_tc_frozen *f);
/* The same of a live socket, which leaves repair mode without a window probe. */
int mmp_tc_peek_ack_state(int fd, struct mmp_tc_frozen *f);
/* The peer's last TSval that the socket receiving `incoming` accepted (BPF_PROG_TEST_RUN). */
int mmp_tc_read_ts_recent(struct mmp_tc *tc, const struct mmp_tc_tuple *incoming, uint32_t *ts);
/* The window shift the socket sends with (snd) or receives with, 0 without window scaling. */
uint8_t mmp_tc_wscale(const struct tcp_info *ti, bool snd);
/* SIOCINQ or SIOCOUTQ: bytes queued, -1 when the ioctl failed. */
int mmp_tc_queue_bytes(int fd, unsigned long req);

#endif
