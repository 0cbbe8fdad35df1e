// SPDX-License-Identifier: GPL-2.0
/* Fixture packet helpers of the tc tests: see tc_fixtures.h. */
#include "tc_fixtures.h"

void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = (uint8_t)v;
}

void put32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * Independent RFC 1071 arithmetic: the high bytes and the low bytes of the
 * 16-bit words are summed separately in 64 bits and combined at the end.
 */
uint64_t raw_sum(const uint8_t *p, size_t n)
{
	uint64_t hi = 0, lo = 0;

	for (size_t i = 0; i < n; i++) {
		if (i % 2 == 0)
			hi += p[i];
		else
			lo += p[i];
	}
	return hi * 256 + lo;
}

uint16_t fold(uint64_t s)
{
	while (s > 0xffff)
		s = (s >> 16) + (s & 0xffff);
	return (uint16_t)s;
}

uint16_t tcp_residual_at(uint8_t family, const uint8_t *ip, size_t ip_hlen, size_t seg_len)
{
	/* Pseudo header: the two addresses, then zero + protocol and the TCP length. */
	uint64_t s = family == 4 ? raw_sum(ip + 12, 8) : raw_sum(ip + 8, 32);

	s += 6; /* zero, protocol */
	s += seg_len; /* TCP length (fits in 16 bits here) */
	s += raw_sum(ip + ip_hlen, seg_len);
	return fold(s);
}
