// SPDX-License-Identifier: GPL-2.0
/*
 * CRC32C (Castagnoli), as required by the PROXY protocol v2 PP2_TYPE_CRC32C
 * TLV (the same CRC as SCTP, RFC 4960 appendix B, and iSCSI).
 *
 * Polynomial 0x1EDC6F41, processed bit-reflected (LSB first), so the table
 * below is built from the reversed polynomial 0x82F63B78. The register starts
 * at 0xFFFFFFFF and the result is inverted; pp_crc32c() hides both inversions
 * so that calls chain like zlib's crc32():
 *
 *	crc = pp_crc32c(0, a, alen);
 *	crc = pp_crc32c(crc, b, blen);	// == pp_crc32c(0, a||b, alen + blen)
 *
 * Check value: pp_crc32c(0, "123456789", 9) == 0xE3069283.
 *
 * A plain byte-at-a-time table is plenty for headers of at most 64 KiB that
 * carry a checksum only rarely; the table is computed at compile time by a
 * macro so there is no init step and no shared mutable state.
 */
#include <stddef.h>
#include <stdint.h>

#include "proto/proxy_proto.h"

#define CRC32C_POLY_REFLECTED 0x82F63B78u

/* One shift-and-xor step of the reflected CRC. */
#define C1(c) (((c) >> 1) ^ (((c) & 1u) ? CRC32C_POLY_REFLECTED : 0u))
#define C8(c) C1(C1(C1(C1(C1(C1(C1(C1((uint32_t)(c)))))))))
#define R4(n) C8(n), C8((n) + 1), C8((n) + 2), C8((n) + 3)
#define R16(n) R4(n), R4((n) + 4), R4((n) + 8), R4((n) + 12)
#define R64(n) R16(n), R16((n) + 16), R16((n) + 32), R16((n) + 48)

static const uint32_t crc32c_table[256] = {
	R64(0), R64(64), R64(128), R64(192),
};

/*
 * pp_crc32c - continue a CRC32C over buf[0..len).
 * @crc: 0 to start, or the value returned by the previous call.
 *
 * Returns the CRC32C of everything fed so far. Never fails; buf may be NULL
 * when len is 0.
 */
uint32_t pp_crc32c(uint32_t crc, const uint8_t *buf, size_t len)
{
	size_t i;

	crc = ~crc;
	for (i = 0; i < len; i++)
		crc = (crc >> 8) ^ crc32c_table[(crc ^ buf[i]) & 0xFF];
	return ~crc;
}
