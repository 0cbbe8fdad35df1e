/* SPDX-License-Identifier: GPL-2.0 */
/* Hand-built TCP segments for the tc engine: the hand-off's ACKs and the bytes it carries across. */
#ifndef MMP_TC_PACKET_H
#define MMP_TC_PACKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mmp_tc.h"

struct mmp_tc_ack {
	struct mmp_tc_tuple tuple; /* source and destination */
	uint32_t seq, ack;
	uint32_t window; /* already scaled for the receiver; clamped to 65535 */
	uint8_t flags; /* TCP flags; 0 means a pure ACK */
	bool timestamps;
	uint32_t tsval;
	uint32_t tsecr; /* 0 when there is no echo to give */
	uint32_t mark; /* skb->mark to send it with (-m, toward the upstream); 0: none */
};

/* The most payload one segment takes: an IPv4 packet's 16-bit length less the headers with timestamps. */
#define MMP_TC_SEGMENT_MAX (65535 - 20 - 32)

/*
 * Build an IPv4 or IPv6 + TCP pure ACK into buf (at least 80 bytes).
 * Returns its length. Pure function: the tests check it byte by byte.
 */
size_t mmp_tc_build_ack(const struct mmp_tc_ack *a, uint8_t *buf);

/*
 * The same with len bytes of payload (at most MMP_TC_SEGMENT_MAX) into buf
 * (80 + len bytes); flags 0 means ACK|PSH. Returns its length.
 */
size_t mmp_tc_build_segment(const struct mmp_tc_ack *a, const void *payload, size_t len, uint8_t *buf);

/* Build and send through a raw IPPROTO_RAW socket of the right family, as mmp_tc_send_segment. 0 or -errno. */
int mmp_tc_send_ack(int raw_fd, const struct mmp_tc_ack *a);
/*
 * Build and send a segment with payload (buf: scratch of 80 + len bytes),
 * with a->mark as an SO_MARK control message when set (routed and filtered
 * as the upstream socket's own segments were). Returns 0 or -errno.
 */
int mmp_tc_send_segment(int raw_fd, const struct mmp_tc_ack *a, const void *payload, size_t len, uint8_t *buf);

/* Ones' complement checksum helpers (RFC 1071), exposed for tests. */
uint32_t mmp_csum_partial(const void *buf, size_t len, uint32_t sum);
uint16_t mmp_csum_fold(uint32_t sum);

#endif
