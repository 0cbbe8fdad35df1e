// SPDX-License-Identifier: GPL-2.0
#include <netinet/in.h>
#include "lib/protocols.h"

const char *mmp_config_protocol_name(const struct mmp_config *cfg)
{
	if (cfg->tcp_and_udp)
		return "tcpudp";
	return cfg->protocol == IPPROTO_UDP ? "udp" : "tcp";
}

bool mmp_config_serves(const struct mmp_config *cfg, int protocol)
{
	return cfg->tcp_and_udp ? protocol == IPPROTO_TCP || protocol == IPPROTO_UDP : cfg->protocol == protocol;
}

void mmp_config_for_protocol(const struct mmp_config *cfg, int protocol, struct mmp_config *out)
{
	*out = *cfg;
	out->protocol = protocol;
	/* The derived directory lives in the struct: point at the copy's, or the caller's could go first. */
	if (cfg->pin_dir == cfg->pin_dir_derived)
		out->pin_dir = out->pin_dir_derived;
}
