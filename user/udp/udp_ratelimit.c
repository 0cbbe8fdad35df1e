// SPDX-License-Identifier: GPL-2.0
#include "udp/udp_ratelimit.h"

static bool window_over(const struct udp_ratelimit *rl, uint64_t now_ns)
{
	return now_ns - rl->window_start_ns >= UDP_RL_WINDOW_NS;
}

uint32_t udp_rl_take_suppressed(struct udp_ratelimit *rl, uint64_t now_ns)
{
	uint32_t n = rl->suppressed;

	if (!n || !window_over(rl, now_ns))
		return 0;
	rl->suppressed = 0;
	rl->printed = 0;
	rl->window_start_ns = now_ns;
	return n;
}

bool udp_rl_allow(struct udp_ratelimit *rl, uint64_t now_ns)
{
	/* A window with suppressed lines stays open until its summary is taken. */
	if (!rl->suppressed && window_over(rl, now_ns)) {
		rl->window_start_ns = now_ns;
		rl->printed = 0;
	}
	if (rl->printed < UDP_RL_BURST) {
		rl->printed++;
		return true;
	}
	rl->suppressed++;
	return false;
}
