/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Log rate limiting, shared by TCP (tcp_log.c) and UDP (udp_worker.c): a
 * flood of bad connections or datagrams must not fill the disk. Each reason
 * (and thread) may print MMP_RL_BURST lines per second; the rest are counted
 * and summed up in one "suppressed" line once the second is over. Pure
 * functions; the caller keeps one struct mmp_ratelimit per reason and
 * passes the time.
 */
#ifndef MMP_RATELIMIT_H
#define MMP_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#define MMP_RL_BURST 5
#define MMP_RL_WINDOW_NS 1000000000ULL

struct mmp_ratelimit {
	uint64_t window_start_ns;
	uint32_t printed; /* lines printed in the current window */
	uint32_t suppressed; /* lines held back in the current window */
};

/* True when one more line may be printed at now_ns; otherwise it is counted as suppressed. */
bool mmp_rl_allow(struct mmp_ratelimit *rl, uint64_t now_ns);

/*
 * Once the window holding suppressed lines is over: returns how many were
 * suppressed (print one summary line for them) and starts afresh. Returns 0
 * while the window is still open or nothing was suppressed. Call it before
 * mmp_rl_allow and from a periodic tick.
 */
uint32_t mmp_rl_take_suppressed(struct mmp_ratelimit *rl, uint64_t now_ns);

#endif
