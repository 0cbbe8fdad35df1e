/* SPDX-License-Identifier: GPL-2.0 */
/* Reading per-CPU u64 counters (PERCPU_ARRAY maps) as one number. */
#ifndef MMP_PERCPU_H
#define MMP_PERCPU_H

#include <stdint.h>

/* Sum entry idx of the per-CPU u64 array fd over every possible CPU. Returns 0 or -errno. */
int mmp_percpu_sum(int fd, uint32_t idx, uint64_t *sum);

#endif
