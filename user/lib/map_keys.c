// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include <bpf/bpf.h>
#include "lib/map_keys.h"

uint64_t mmp_map_count_keys(int fd, size_t key_size)
{
	uint8_t key[64], next[64];
	void *prev = NULL;
	uint64_t n = 0;

	while (key_size <= sizeof(key) && bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}
