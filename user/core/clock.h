/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one clock of the control plane: CLOCK_MONOTONIC, which the BPF
 * programs' bpf_ktime_get_coarse_ns() follows at most a tick behind.
 */
#ifndef MMP_CLOCK_H
#define MMP_CLOCK_H

#include <stdint.h>

uint64_t mmp_now_ns(void);

static inline uint64_t mmp_now_ms(void)
{
	return mmp_now_ns() / 1000000;
}

#endif
