// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "policy/allow_set.h"
#include "policy/endpoint_policy.h"
#include "lib/handover.h"
#include "lib/log.h"
#include "mmp_maps.h"
#include "lib/pins.h"
#include "policy/policy.h"
#include "policy.skel.h"

#define BPFFS_ROOT "/sys/fs/bpf"

struct mmp_policy {
	struct policy_bpf *skel;
	char pin_dir[PATH_MAX - 64]; /* room for "/mmp_..." map names */
	int lock_fd;
	bool locked; /* we hold the pin directory's lock */
	int allow4_fd, allow6_fd;
	bool restrict_sources; /* false without -a: allow everything */
	char allowed_path[PATH_MAX]; /* -a, re-read on SIGHUP */
	struct mmp_endpoint_policy *endpoints; /* --allowed-endpoints, re-read on SIGHUP; NULL: none */
	atomic_ulong reloads_ok, reloads_failed;
};

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return statfs(path, &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/* The nearest ancestor of dir that exists (dir's default is two levels below bpffs). */
static void existing_ancestor(const char *dir, char *out, size_t len)
{
	char tmp[PATH_MAX];
	struct stat st;

	snprintf(out, len, "%s", dir);
	do {
		snprintf(tmp, sizeof(tmp), "%s", out);
		snprintf(out, len, "%s", dirname(tmp));
	} while (stat(out, &st) && strcmp(out, "/") && strcmp(out, "."));
}

int mmp_ensure_bpffs(const char *dir)
{
	char parent[PATH_MAX];

	existing_ancestor(dir, parent, sizeof(parent));
	if (is_bpffs(parent))
		return 0;
	if (strcmp(parent, BPFFS_ROOT) && strncmp(dir, BPFFS_ROOT "/", strlen(BPFFS_ROOT) + 1)) {
		pr_err("pin directory %s is not on bpffs (mount it: mount -t bpf bpf %s, or use --pin-dir under %s)",
		       dir, parent, BPFFS_ROOT);
		return -ENOTSUP;
	}
	/* A fresh machine may have no bpffs mounted at all (docs/DESIGN.md §3a item 9). */
	if (mount("bpf", BPFFS_ROOT, "bpf", 0, "mode=0700")) {
		int err = -errno;

		pr_err("failed to mount bpffs on %s: %s (run as root, or: mount -t bpf bpf %s)", BPFFS_ROOT,
		       strerror(-err), BPFFS_ROOT);
		return err;
	}
	pr_info("mounted bpffs on %s", BPFFS_ROOT);
	return 0;
}

/* mkdir -p: the default pin directory's parent (MMP_PIN_ROOT) may not exist yet. */
static int make_dirs(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s", dir);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(path, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	return mkdir(path, 0700) && errno != EEXIST ? -errno : 0;
}

/* Create and lock the pin directory so two instances never share maps. */
static int lock_pin_dir(struct mmp_policy *p)
{
	int err;

	err = make_dirs(p->pin_dir);
	if (err) {
		pr_err("failed to create pin directory %s: %s", p->pin_dir, strerror(-err));
		return err;
	}
	p->lock_fd = open(p->pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (p->lock_fd < 0) {
		err = -errno;
		pr_err("failed to open pin directory %s: %s", p->pin_dir, strerror(-err));
		return err;
	}
	if (flock(p->lock_fd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		/* --takeover: the predecessor holds it until it exits; mmp_policy_lock_retry takes it then (§15). */
		if (err == -EWOULDBLOCK && mmp_taking_over())
			return 0;
		if (err == -EWOULDBLOCK)
			pr_err("another mmproxy-bpf instance, in another network namespace, is using %s (stop it, or give this one another -l or --pin-dir)",
			       p->pin_dir);
		else
			pr_err("failed to lock pin directory %s: %s", p->pin_dir, strerror(-err));
		return err;
	}
	p->locked = true;
	return 0;
}

static void log_counts(const char *what, const struct mmp_policy *p, const struct mmp_allow_set *set,
		       const struct mmp_allow_change *chg)
{
	pr_info("%s %s: %u IPv4 and %u IPv6 subnets (%u added, %u removed) in %s/{%s,%s}", what, p->allowed_path,
		set->n4, set->n6, chg->added, chg->removed, p->pin_dir, MMP_ALLOW4_MAP, MMP_ALLOW6_MAP);
	if (set->n4 + set->n6 == 0)
		pr_err("warning: %s lists no subnets: every connection will be refused", p->allowed_path);
}

/* Read, validate, then swap (policy/allow_set.h says why there is no gap). */
static int load_file(struct mmp_policy *p, struct mmp_allow_set *set, struct mmp_allow_change *chg, char *why,
		     size_t why_len)
{
	int err = mmp_allow_set_read(p->allowed_path, set, why, why_len);

	if (!err)
		err = mmp_allow_set_apply(set, p->allow4_fd, p->allow6_fd, chg, why, why_len);
	return err;
}

int mmp_policy_open(const char *pin_dir, const char *allowed_path, struct mmp_policy **out)
{
	struct mmp_policy *p;
	int err;

	p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->lock_fd = -1;
	snprintf(p->pin_dir, sizeof(p->pin_dir), "%s", pin_dir);

	err = mmp_ensure_bpffs(p->pin_dir);
	if (err)
		goto fail;
	err = lock_pin_dir(p);
	if (err)
		goto fail;

	p->skel = policy_bpf__open_and_load();
	if (!p->skel) {
		err = -errno;
		pr_err("failed to load the policy maps: %s (run as root, or grant CAP_BPF and CAP_NET_ADMIN)",
		       strerror(-err));
		goto fail;
	}
	p->allow4_fd = bpf_map__fd(p->skel->maps.mmp_allow4);
	p->allow6_fd = bpf_map__fd(p->skel->maps.mmp_allow6);
	err = mmp_pin_map(p->pin_dir, p->skel->maps.mmp_allow4);
	if (!err)
		err = mmp_pin_map(p->pin_dir, p->skel->maps.mmp_allow6);
	if (err)
		goto fail;

	if (allowed_path) {
		struct mmp_allow_set set;
		struct mmp_allow_change chg;
		char why[512];

		snprintf(p->allowed_path, sizeof(p->allowed_path), "%s", allowed_path);
		err = load_file(p, &set, &chg, why, sizeof(why));
		if (err) {
			pr_err("%s", why);
			goto fail;
		}
		p->restrict_sources = true;
		log_counts("loaded", p, &set, &chg);
		mmp_allow_set_free(&set);
	} else {
		pr_err("warning: no allowed-subnets file (-a): connections from every source are accepted");
	}
	*out = p;
	return 0;
fail:
	mmp_policy_close(p);
	return err;
}

/* Re-read -a; returns 0 or a negative errno (logged). */
static int reload_subnets(struct mmp_policy *p)
{
	struct mmp_allow_set set;
	struct mmp_allow_change chg;
	char why[512];
	int err;

	if (!p->restrict_sources) {
		pr_info("reload: no allowed-subnets file (-a) was given at start: every source stays allowed");
		return 0;
	}
	err = load_file(p, &set, &chg, why, sizeof(why));
	if (err) {
		pr_err("reload failed, the previous allowed subnets stay in force: %s (fix the file, then send SIGHUP again)",
		       why);
		return err;
	}
	log_counts("reloaded", p, &set, &chg);
	mmp_allow_set_free(&set);
	return 0;
}

int mmp_policy_reload(struct mmp_policy *p)
{
	/* Each file is its own: a bad one keeps its old contents, the other still reloads. */
	int err = reload_subnets(p), err2 = mmp_endpoint_policy_reload(p->endpoints);

	if (!err)
		err = err2;
	if (!p->restrict_sources && !p->endpoints)
		return 0; /* nothing was reloaded: counted neither way, as before --allowed-endpoints */
	if (err)
		atomic_fetch_add(&p->reloads_failed, 1);
	else
		atomic_fetch_add(&p->reloads_ok, 1);
	return err;
}

int mmp_policy_open_endpoints(struct mmp_policy *p, const char *path)
{
	return mmp_endpoint_policy_open(path, &p->endpoints);
}

bool mmp_policy_endpoint_allowed(const struct mmp_policy *p, const struct pp_header *hdr)
{
	return mmp_endpoint_policy_allowed(p->endpoints, hdr);
}

void mmp_policy_reloads(const struct mmp_policy *p, uint64_t *ok, uint64_t *failed)
{
	*ok = atomic_load(&p->reloads_ok);
	*failed = atomic_load(&p->reloads_failed);
}

bool mmp_policy_allowed(const struct mmp_policy *p, const struct sockaddr *sa)
{
	struct mmp_allow_value val;

	if (!p->restrict_sources)
		return true;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;
		struct mmp_allow4_key k = { .prefixlen = 32 };

		memcpy(k.addr, &sin->sin_addr, 4);
		return bpf_map_lookup_elem(p->allow4_fd, &k, &val) == 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		/* A dual-stack listener sees IPv4 peers as ::ffff:a.b.c.d. */
		if (IN6_IS_ADDR_V4MAPPED(&sin6->sin6_addr)) {
			struct mmp_allow4_key k = { .prefixlen = 32 };

			memcpy(k.addr, &sin6->sin6_addr.s6_addr[12], 4);
			return bpf_map_lookup_elem(p->allow4_fd, &k, &val) == 0;
		}
		struct mmp_allow6_key k = { .prefixlen = 128 };

		memcpy(k.addr, &sin6->sin6_addr, 16);
		return bpf_map_lookup_elem(p->allow6_fd, &k, &val) == 0;
	}
	return false;
}

int mmp_policy_lock_retry(struct mmp_policy *p)
{
	if (p->locked)
		return 0;
	if (flock(p->lock_fd, LOCK_EX | LOCK_NB))
		return -errno;
	p->locked = true;
	return 0;
}

void mmp_policy_close(struct mmp_policy *p)
{
	if (!p)
		return;
	mmp_endpoint_policy_close(p->endpoints);
	if (p->skel) {
		mmp_unpin(p->pin_dir, MMP_ALLOW4_MAP);
		mmp_unpin(p->pin_dir, MMP_ALLOW6_MAP);
		policy_bpf__destroy(p->skel);
	}
	/* Only the instance holding the lock removes the directory; never one handing it over. */
	if (p->locked && !mmp_handing_over())
		rmdir(p->pin_dir);
	if (p->lock_fd >= 0)
		close(p->lock_fd);
	free(p);
}
