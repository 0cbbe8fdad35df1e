/* SPDX-License-Identifier: GPL-2.0 */
/* UDP's names for the shared log rate limiter (ratelimit.h). */
#ifndef MMP_UDP_RATELIMIT_H
#define MMP_UDP_RATELIMIT_H

#include "lib/ratelimit.h"

#define UDP_RL_BURST MMP_RL_BURST
#define UDP_RL_WINDOW_NS MMP_RL_WINDOW_NS
#define udp_ratelimit mmp_ratelimit
#define udp_rl_allow mmp_rl_allow
#define udp_rl_take_suppressed mmp_rl_take_suppressed

#endif
