// SPDX-License-Identifier: GPL-2.0
#include <stdatomic.h>
#include "lib/handover.h"

/* Set by the main thread; read by closes that may run on any thread. */
static atomic_bool handing_over, taking_over;

void mmp_handover_begin(void)
{
	atomic_store(&handing_over, true);
}

bool mmp_handing_over(void)
{
	return atomic_load(&handing_over);
}

void mmp_takeover_set(bool on)
{
	atomic_store(&taking_over, on);
}

bool mmp_taking_over(void)
{
	return atomic_load(&taking_over);
}
