// SPDX-License-Identifier: GPL-2.0
/* Endpoint policy: the live allowed-endpoints list and its reload (endpoint_policy.h). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/log.h"
#include "policy/endpoint_policy.h"
#include "proto/endpoint_list.h"

struct mmp_endpoint_policy {
	/*
	 * Readers (every listener thread, per connection or v2 datagram) hold it
	 * shared for one list scan; a reload holds it exclusive only to swap two
	 * pointers, after the new list is fully read.
	 */
	pthread_rwlock_t lock;
	struct mmp_endpoint_list list;
	char path[PATH_MAX];
};

static void log_loaded(const char *what, const struct mmp_endpoint_policy *p, size_t n)
{
	pr_info("%s %s: %zu allowed endpoints", what, p->path, n);
	if (!n)
		pr_err("warning: %s lists no endpoints: every PROXY connection will be refused", p->path);
}

int mmp_endpoint_policy_open(const char *path, struct mmp_endpoint_policy **out)
{
	struct mmp_endpoint_policy *p = calloc(1, sizeof(*p));
	char why[512];
	int err;

	if (!p)
		return -ENOMEM;
	snprintf(p->path, sizeof(p->path), "%s", path);
	err = pthread_rwlock_init(&p->lock, NULL);
	if (err) {
		free(p);
		return -err;
	}
	err = mmp_endpoint_list_read(p->path, &p->list, why, sizeof(why));
	if (err < 0) {
		pr_err("%s", why);
		mmp_endpoint_policy_close(p);
		return err;
	}
	log_loaded("loaded", p, p->list.n);
	*out = p;
	return 0;
}

int mmp_endpoint_policy_reload(struct mmp_endpoint_policy *p)
{
	struct mmp_endpoint_list fresh = { 0 }, old;
	char why[512];
	int err;

	if (!p)
		return 0;
	err = mmp_endpoint_list_read(p->path, &fresh, why, sizeof(why));
	if (err < 0) {
		pr_err("reload failed, the previous allowed endpoints stay in force: %s (fix the file, then send SIGHUP again)",
		       why);
		return err;
	}
	pthread_rwlock_wrlock(&p->lock);
	old = p->list;
	p->list = fresh;
	pthread_rwlock_unlock(&p->lock);
	mmp_endpoint_list_free(&old);
	log_loaded("reloaded", p, fresh.n);
	return 0;
}

bool mmp_endpoint_policy_allowed(struct mmp_endpoint_policy *p, const struct pp_header *hdr)
{
	bool ok;

	if (!p || hdr->command == PP_CMD_LOCAL)
		return true;
	if (hdr->version != 2)
		return false; /* v1 carries no TLVs: it can name no endpoint */
	pthread_rwlock_rdlock(&p->lock);
	ok = mmp_endpoint_list_match(&p->list, &hdr->tlv);
	pthread_rwlock_unlock(&p->lock);
	return ok;
}

void mmp_endpoint_policy_close(struct mmp_endpoint_policy *p)
{
	if (!p)
		return;
	mmp_endpoint_list_free(&p->list);
	pthread_rwlock_destroy(&p->lock);
	free(p);
}
