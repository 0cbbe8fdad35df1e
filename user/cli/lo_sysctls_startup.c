// SPDX-License-Identifier: GPL-2.0
#include <string.h>
#include <netinet/in.h>
#include "cli/lo_sysctls_startup.h"
#include "lib/lo_sysctls.h"
#include "lib/log.h"

static bool wants_kernel_path(const struct mmp_config *cfg)
{
	if (cfg->protocol == IPPROTO_UDP)
		return cfg->engine != MMP_ENGINE_SPLICE;
	return cfg->engine == MMP_ENGINE_AUTO || cfg->engine == MMP_ENGINE_TC;
}

void mmp_lo_sysctls_at_start(const struct mmp_config *cfg)
{
	int changed;

	if (!wants_kernel_path(cfg) || mmp_lo_sysctls_ok())
		return;
	changed = mmp_lo_sysctls_enable();
	if (changed > 0)
		pr_info("set net.ipv4.conf.lo.route_localnet=1 and accept_local=1: remote IPv4 load balancers' flows need them for the kernel path (they affect only packets arriving on lo)");
	else if (changed < 0)
		/* Without CAP_NET_ADMIN (or a read-only /proc/sys); the engines warn what it costs. */
		pr_err("warning: could not set lo's route_localnet/accept_local: %s (grant CAP_NET_ADMIN with /proc/sys writable, or: sysctl -w net.ipv4.conf.lo.route_localnet=1 net.ipv4.conf.lo.accept_local=1)",
		       strerror(-changed));
}
