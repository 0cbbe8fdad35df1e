/* SPDX-License-Identifier: GPL-2.0 */
/* How many entries a BPF hash or LPM map holds, for `stats` and the metrics. */
#ifndef MMP_MAP_KEYS_H
#define MMP_MAP_KEYS_H

#include <stddef.h>
#include <stdint.h>

/* Walk fd's keys (key_size bytes, at most 64) and count them; 0 for a larger key. */
uint64_t mmp_map_count_keys(int fd, size_t key_size);

#endif
