/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Whether this process is handing its instance over to a successor that
 * took it over (--takeover, docs/DESIGN.md §15). From then on it removes
 * nothing the successor uses: no pin is unlinked, no TC filter detached, no
 * flow collected, as a failed start closes only its own fds (§3c).
 */
#ifndef MMP_HANDOVER_H
#define MMP_HANDOVER_H

#include <stdbool.h>

void mmp_handover_begin(void);
bool mmp_handing_over(void);

/*
 * The other side: this process is taking an instance over and its
 * predecessor still holds the instance's locks, which it takes once the
 * predecessor has exited; until then a lock held is no refusal.
 */
void mmp_takeover_set(bool on);
bool mmp_taking_over(void);

#endif
