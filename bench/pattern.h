/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The byte stream the bench tools send: a fixed pseudo-random sequence with
 * a prime period, so any stream offset can be written from, or compared
 * with, one contiguous buffer. Each connection starts at its own offset, so
 * bytes crossing from one connection into another are caught too.
 */
#ifndef MMPB_PATTERN_H
#define MMPB_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#define PATTERN_PERIOD 131071u /* 2^17 - 1, prime */

/* Fills the pattern buffer. Call once before any other function. */
void pattern_init(void);
/* PATTERN_PERIOD valid bytes starting at stream offset off. */
const uint8_t *pattern_at(uint64_t off);
/* Number of bytes of buf[0..len) that differ from the stream at off. */
size_t pattern_mismatches(uint64_t off, const uint8_t *buf, size_t len);
/* Stream offset where connection number id starts. */
static inline uint64_t pattern_origin(uint64_t id)
{
	return id * 7919u;
}

#endif
