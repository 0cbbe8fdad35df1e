/* SPDX-License-Identifier: GPL-2.0 */
/* lo's route_localnet and accept_local, which the in-kernel paths need for remote load balancers. */
#ifndef MMP_LO_SYSCTLS_H
#define MMP_LO_SYSCTLS_H

#include <stdbool.h>

#define MMP_LO_SYSCTLS 2
extern const char *const mmp_lo_sysctls[MMP_LO_SYSCTLS];

/* Both are 1 (setup-routing sets them). */
bool mmp_lo_sysctls_ok(void);
/* Set both to 1 where they are not (this network namespace's lo only). Returns 1 when one changed, 0, or -errno. */
int mmp_lo_sysctls_enable(void);

#endif
