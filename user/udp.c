// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include "log.h"
#include "udp.h"

int mmp_udp_run(const struct mmp_config *cfg, const struct mmp_policy *policy, const sigset_t *sigs)
{
	pr_err("UDP mode (-p udp) is not implemented in this version yet (use -p tcp)");
	return -ENOTSUP;
}
