// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/log.h"
#include "listen/port_range.h"
#include "listen/port_steer.h"
#include "listen/sk_lookup.h"

int mmp_port_steer_open(const struct mmp_config *cfg, struct mmp_port_steer *ps)
{
	const char *force = getenv(MMP_NO_SK_LOOKUP_ENV);
	int err;

	memset(ps, 0, sizeof(*ps));
	if (cfg->n_ports <= 1)
		return 0; /* one port: a plain bound socket, exactly as without ranges */
	if (force && *force && strcmp(force, "0")) {
		pr_info("port range: %s is set: one socket per port and listener (%d sockets)", MMP_NO_SK_LOOKUP_ENV,
			cfg->n_ports * cfg->listeners);
		return 0;
	}
	err = mmp_sk_lookup_open(cfg, &ps->lookup);
	if (err)
		pr_info("port range: the kernel refused sk_lookup (%s): one socket per port and listener (%d sockets)",
			strerror(-err), cfg->n_ports * cfg->listeners);
	return 0;
}

void mmp_port_steer_close(struct mmp_port_steer *ps)
{
	mmp_sk_lookup_close(ps->lookup);
	ps->lookup = NULL;
}

int mmp_port_steer_sockets(const struct mmp_config *cfg, const struct mmp_port_steer *ps)
{
	return ps->lookup ? 1 : cfg->n_ports;
}

void mmp_port_steer_addr(const struct mmp_config *cfg, int i, struct sockaddr_storage *out)
{
	*out = cfg->listen;
	mmp_sa_set_port(out, (uint16_t)(mmp_sa_port(&cfg->listen) + i));
}

int mmp_port_steer_add(const struct mmp_port_steer *ps, int id, int fd)
{
	return ps->lookup ? mmp_sk_lookup_add(ps->lookup, id, fd) : 0;
}

bool mmp_port_steer_multiport(const struct mmp_config *cfg, const struct mmp_port_steer *ps)
{
	return ps->lookup != NULL;
}

const char *mmp_port_steer_describe(const struct mmp_config *cfg, const struct mmp_port_steer *ps, char *buf,
				    size_t len)
{
	if (cfg->n_ports <= 1)
		snprintf(buf, len, "%s", "");
	else
		snprintf(buf, len, "-%u (%d ports, %s)", cfg->listen_port_hi, cfg->n_ports,
			 ps->lookup ? "sk_lookup" : "one socket per port");
	return buf;
}
