// SPDX-License-Identifier: GPL-2.0
/* Deterministic payload bytes: see pattern.h. */
#include <string.h>

#include "pattern.h"

static uint8_t pattern[2 * PATTERN_PERIOD];

void pattern_init(void)
{
	uint64_t x = 0x9e3779b97f4a7c15ull;
	unsigned int i;

	for (i = 0; i < PATTERN_PERIOD; i++) {
		/* xorshift64 */
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		pattern[i] = (uint8_t)(x >> 32);
	}
	memcpy(pattern + PATTERN_PERIOD, pattern, PATTERN_PERIOD);
}

const uint8_t *pattern_at(uint64_t off)
{
	return pattern + off % PATTERN_PERIOD;
}

size_t pattern_mismatches(uint64_t off, const uint8_t *buf, size_t len)
{
	size_t bad = 0, n, i;
	const uint8_t *p;

	while (len) {
		n = len < PATTERN_PERIOD ? len : PATTERN_PERIOD;
		p = pattern_at(off);
		if (memcmp(p, buf, n)) {
			for (i = 0; i < n; i++)
				bad += p[i] != buf[i];
		}
		off += n;
		buf += n;
		len -= n;
	}
	return bad;
}
