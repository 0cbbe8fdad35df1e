// SPDX-License-Identifier: GPL-2.0
#include "lib/ratelimit.h"

static bool window_over(const struct mmp_ratelimit *rl, uint64_t now_ns)
{
	return now_ns - rl->window_start_ns >= MMP_RL_WINDOW_NS;
}

uint32_t mmp_rl_take_suppressed(struct mmp_ratelimit *rl, uint64_t now_ns)
{
	uint32_t n = rl->suppressed;

	if (!n || !window_over(rl, now_ns))
		return 0;
	rl->suppressed = 0;
	rl->printed = 0;
	rl->window_start_ns = now_ns;
	return n;
}

bool mmp_rl_allow(struct mmp_ratelimit *rl, uint64_t now_ns)
{
	/* A window with suppressed lines stays open until its summary is taken. */
	if (!rl->suppressed && window_over(rl, now_ns)) {
		rl->window_start_ns = now_ns;
		rl->printed = 0;
	}
	if (rl->printed < MMP_RL_BURST) {
		rl->printed++;
		return true;
	}
	rl->suppressed++;
	return false;
}
