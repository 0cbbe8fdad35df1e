/* SPDX-License-Identifier: GPL-2.0 */
#ifndef MMP_TC_FROZEN_H
#define MMP_TC_FROZEN_H
/*
 * The TCP state of the proxy's own sockets: what a hand-off translates from,
 * read once they are frozen (docs/DESIGN.md §3b, FREEZE), and what the ACKs
 * the proxy sends in a live socket's name carry.
 */
#include <stdbool.h>
#include <stdint.h>
#include <linux/tcp.h> /* struct tcp_repair_window, struct tcp_info */

struct mmp_tc;
struct mmp_tc_tuple;

#define TCP_STATE_ESTABLISHED 1 /* include/net/tcp_states.h */

struct mmp_tc_frozen {
	uint32_t rcv_nxt, snd_una, snd_nxt, write_seq, tsval;
	uint32_t ts_recent; /* the peer's last TSval this socket accepted */
	bool ofo;           /* bytes wait out of order behind a hole (mmp_tc_sock_query) */
	struct tcp_repair_window win;
	struct tcp_info ti;
};

/* TCP_REPAIR on (1) or off (0): 0 or -errno. */
int mmp_tc_set_repair(int fd, int on);
/*
 * One of the proxy's sockets, live or in repair mode, whose incoming segments
 * have tuple `incoming`: sequence state, windows and ts_recent read in place
 * by mmp_tc_sock_probe, its TSval clock, TCP_INFO. 0 or -errno (-ENOENT: no
 * such connection). A socket no longer ESTABLISHED (a FIN or RST came) has
 * only f->ti read.
 */
int mmp_tc_read_sock(struct mmp_tc *tc, int fd, const struct mmp_tc_tuple *incoming, struct mmp_tc_frozen *f);
/* The window shift the socket sends with (snd) or receives with, 0 without window scaling. */
uint8_t mmp_tc_wscale(const struct tcp_info *ti, bool snd);
/* SIOCINQ or SIOCOUTQ: bytes queued, -1 when the ioctl failed. */
int mmp_tc_queue_bytes(int fd, unsigned long req);

#endif
