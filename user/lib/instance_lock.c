// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <netinet/in.h>
#include "lib/instance.h"
#include "lib/instance_lock.h"
#include "lib/log.h"
#include "lib/netns_lock.h"
#include "lib/protocols.h"

#define PIN_LOCK_PREFIX "pin:"
#define SERVE_LOCK_PREFIX "serve:"

static void pin_lock_name(const char *pin_dir, char *buf, size_t len)
{
	snprintf(buf, len, PIN_LOCK_PREFIX "%s", pin_dir);
}

/* Held by the process that serves DIR's listeners now: a predecessor lets it go when taken over (§15). */
static void serve_lock_name(const char *pin_dir, char *buf, size_t len)
{
	snprintf(buf, len, SERVE_LOCK_PREFIX "%s", pin_dir);
}

static void filter_lock_name(struct mmp_tc_id id, char *buf, size_t len)
{
	snprintf(buf, len, "tc:0x%x:%u", id.handle, id.prio);
}

/* TCP attaches filters unless splice only; UDP unless the fast path is off. */
static bool attaches_filters(const struct mmp_config *cfg)
{
	if (cfg->protocol == IPPROTO_UDP)
		return cfg->engine != MMP_ENGINE_SPLICE;
	return cfg->engine == MMP_ENGINE_AUTO || cfg->engine == MMP_ENGINE_TC;
}

/* The lock on the TC filter identity that cfg->protocol attaches with, into *fd (-1 when it attaches none). */
static int lock_filters(const struct mmp_config *cfg, int *fd, bool quiet)
{
	struct mmp_tc_id id = mmp_instance_tc_id(cfg->protocol, cfg->pin_dir);
	char name[64], holder[320];

	if (!attaches_filters(cfg))
		return 0;
	filter_lock_name(id, name, sizeof(name));
	*fd = mmp_netns_lock(name, holder, sizeof(holder));
	if (*fd == -EADDRINUSE && !quiet)
		pr_err("another mmproxy-bpf instance attaches TC filters with pref %u handle 0x%x in this network namespace (%s), the same as %s would: give this one another --pin-dir",
		       id.prio, id.handle, holder, cfg->pin_dir);
	return *fd < 0 ? *fd : 0;
}

static void close_all(struct mmp_instance_lock *l)
{
	if (l->pin_fd >= 0)
		close(l->pin_fd);
	if (l->filter_fd >= 0)
		close(l->filter_fd);
	if (l->udp_filter_fd >= 0)
		close(l->udp_filter_fd);
	l->pin_fd = l->filter_fd = l->udp_filter_fd = -1;
}

/* quiet: -EADDRINUSE is logged by no one (a takeover waiting for its predecessor's exit). */
static int lock_all(const struct mmp_config *cfg, struct mmp_instance_lock *l, bool quiet)
{
	char name[PATH_MAX + 16], holder[320];
	struct mmp_config udp;
	int err;

	l->pin_fd = l->filter_fd = l->udp_filter_fd = -1;
	pin_lock_name(cfg->pin_dir, name, sizeof(name));
	/* Errors other than -EADDRINUSE were logged by mmp_netns_lock, with their fix. */
	l->pin_fd = mmp_netns_lock(name, holder, sizeof(holder));
	if (l->pin_fd < 0) {
		err = l->pin_fd;
		if (err == -EADDRINUSE && !quiet)
			pr_err("another mmproxy-bpf instance uses %s in this network namespace (%s): stop it, or give this one another -l or --pin-dir",
			       cfg->pin_dir, holder);
		goto fail;
	}
	err = lock_filters(cfg, &l->filter_fd, quiet);
	if (err)
		goto fail;
	/* -p tcp,udp: the UDP fast path's filters too, a second identity (other handle and priorities). */
	if (cfg->tcp_and_udp) {
		mmp_config_for_protocol(cfg, IPPROTO_UDP, &udp);
		err = lock_filters(&udp, &l->udp_filter_fd, quiet);
		if (err)
			goto fail;
	}
	return 0;
fail:
	close_all(l);
	return err;
}

int mmp_instance_lock(const struct mmp_config *cfg, struct mmp_instance_lock *l)
{
	char name[PATH_MAX + 16], holder[320];
	int err;

	l->serve_fd = -1;
	err = lock_all(cfg, l, false);
	if (err)
		return err;
	/* Free whenever the pin lock was: the server of DIR, if any, also holds that one. */
	serve_lock_name(cfg->pin_dir, name, sizeof(name));
	l->serve_fd = mmp_netns_lock(name, holder, sizeof(holder));
	if (l->serve_fd < 0) {
		err = l->serve_fd;
		if (err == -EADDRINUSE)
			pr_err("another mmproxy-bpf instance (%s) is taking %s over: stop it, or give this one another -l or --pin-dir",
			       holder, cfg->pin_dir);
		mmp_instance_unlock(l);
	}
	return err;
}

int mmp_instance_lock_after_takeover(const struct mmp_config *cfg, struct mmp_instance_lock *l)
{
	return lock_all(cfg, l, true);
}

int mmp_instance_serving_pid(const char *pin_dir)
{
	char name[PATH_MAX + 16];

	serve_lock_name(pin_dir, name, sizeof(name));
	return mmp_netns_lock_holder(name);
}

int mmp_instance_take_serving(const char *pin_dir, struct mmp_instance_lock *l)
{
	char name[PATH_MAX + 16];

	if (l->serve_fd >= 0)
		return 0;
	serve_lock_name(pin_dir, name, sizeof(name));
	l->serve_fd = mmp_netns_lock(name, NULL, 0);
	return l->serve_fd < 0 ? l->serve_fd : 0;
}

void mmp_instance_stop_serving(struct mmp_instance_lock *l)
{
	if (l->serve_fd >= 0)
		close(l->serve_fd);
	l->serve_fd = -1;
}

void mmp_instance_unlock(struct mmp_instance_lock *l)
{
	close_all(l);
	mmp_instance_stop_serving(l);
}

bool mmp_instance_running_here(const char *pin_dir, char *holder, size_t holder_len)
{
	char name[PATH_MAX + 16];

	pin_lock_name(pin_dir, name, sizeof(name));
	if (mmp_netns_locked(name, holder, holder_len))
		return true;
	/* A takeover between its predecessor's exit and its own pin lock (§15). */
	serve_lock_name(pin_dir, name, sizeof(name));
	return mmp_netns_locked(name, holder, holder_len);
}

struct any_search {
	char *pin_dir;
	size_t len;
};

static bool first_pin_lock(const char *name, void *arg)
{
	struct any_search *s = arg;

	snprintf(s->pin_dir, s->len, "%s", name + strlen(PIN_LOCK_PREFIX));
	return true;
}

bool mmp_instance_any_running_here(char *pin_dir, size_t len)
{
	struct any_search s = { .pin_dir = pin_dir, .len = len };

	return mmp_netns_locks_find(PIN_LOCK_PREFIX, first_pin_lock, &s);
}
