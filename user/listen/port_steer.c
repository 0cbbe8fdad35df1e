// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "lib/log.h"
#include "listen/port_range.h"
#include "listen/port_steer.h"
#include "listen/reuseport_steer.h"
#include "listen/sk_lookup.h"

/* A port range: sk_lookup, unless the environment or the kernel refuses it. */
static void open_lookup(const struct mmp_config *cfg, struct mmp_port_steer *ps)
{
	const char *force = getenv(MMP_NO_SK_LOOKUP_ENV);
	int err;

	if (force && *force && strcmp(force, "0")) {
		pr_info("port range: %s is set: one socket per port and listener (%d sockets)", MMP_NO_SK_LOOKUP_ENV,
			cfg->n_ports * cfg->listeners);
		return;
	}
	err = mmp_sk_lookup_open(cfg, &ps->lookup);
	if (err)
		pr_info("port range: the kernel refused sk_lookup (%s): one socket per port and listener (%d sockets)",
			strerror(-err), cfg->n_ports * cfg->listeners);
}

int mmp_port_steer_open(const struct mmp_config *cfg, struct mmp_port_steer *ps)
{
	memset(ps, 0, sizeof(*ps));
	if (cfg->n_ports > 1)
		open_lookup(cfg, ps);
	/* Loaded now, while we may; attached once we listen. Without it the takeover goes on as before. */
	if (cfg->takeover && cfg->protocol == IPPROTO_TCP)
		mmp_reuseport_steer_open(cfg, mmp_port_steer_sockets(cfg, ps), &ps->reuseport);
	return 0;
}

void mmp_port_steer_close(struct mmp_port_steer *ps)
{
	mmp_sk_lookup_close(ps->lookup);
	ps->lookup = NULL;
	mmp_reuseport_steer_close(ps->reuseport);
	ps->reuseport = NULL;
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

int mmp_port_steer_add(const struct mmp_port_steer *ps, int id, int i, int fd)
{
	int err = 0;

	if (ps->lookup && i == 0)
		err = mmp_sk_lookup_add(ps->lookup, id, fd);
	/* Not fatal: without it, a takeover goes on as it did before the program (docs/DESIGN.md §15). */
	if (!err && ps->reuseport)
		mmp_reuseport_steer_add(ps->reuseport, id, i, fd);
	return err;
}

void mmp_port_steer_claim(const struct mmp_port_steer *ps)
{
	if (ps->reuseport)
		mmp_reuseport_steer_attach(ps->reuseport);
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
