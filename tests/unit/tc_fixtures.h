/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the tc tests (test_tc_rewrite.c, test_tc_packet.c) need to lay out
 * fixture packets by hand and to check their checksums: big-endian field
 * access and an RFC 1071 sum written independently of the project's own
 * (user/engine/tc/tc_packet.c), so that a bug there cannot hide in both.
 */
#ifndef MMP_TESTS_TC_FIXTURES_H
#define MMP_TESTS_TC_FIXTURES_H

#include <stddef.h>
#include <stdint.h>

void put16(uint8_t *p, uint16_t v);
void put32(uint8_t *p, uint32_t v);
uint16_t get16(const uint8_t *p);
uint32_t get32(const uint8_t *p);

/* The unfolded ones' complement sum of n bytes (n may be odd). */
uint64_t raw_sum(const uint8_t *p, size_t n);
/* Folds a raw_sum to 16 bits (not complemented). */
uint16_t fold(uint64_t s);

/*
 * The folded sum over the TCP pseudo header and a segment of seg_len bytes
 * that starts ip_hlen bytes after the IP header at ip (family 4 or 6):
 * 0xffff when the TCP checksum verifies.
 */
uint16_t tcp_residual_at(uint8_t family, const uint8_t *ip, size_t ip_hlen, size_t seg_len);

#endif
