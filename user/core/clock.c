// SPDX-License-Identifier: GPL-2.0
#include <time.h>
#include "core/clock.h"

uint64_t mmp_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}
