// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
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
#include "proto/allowlist.h"
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

static int add_cidr(const struct mmp_cidr *cidr, unsigned int lineno, void *ctx)
{
	struct mmp_policy *p = ctx;
	struct mmp_allow_value val = { .line = lineno };
	int err;

	if (cidr->family == AF_INET) {
		struct mmp_allow4_key k = { .prefixlen = cidr->prefixlen };

		memcpy(k.addr, cidr->addr, 4);
		err = bpf_map_update_elem(p->allow4_fd, &k, &val, BPF_ANY);
	} else {
		struct mmp_allow6_key k = { .prefixlen = cidr->prefixlen };

		memcpy(k.addr, cidr->addr, 16);
		err = bpf_map_update_elem(p->allow6_fd, &k, &val, BPF_ANY);
	}
	if (err) {
		err = -errno;
		pr_err("line %u: failed to add subnet to %s: %s", lineno,
		       cidr->family == AF_INET ? MMP_ALLOW4_MAP : MMP_ALLOW6_MAP, strerror(-err));
	}
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
		int n = mmp_allowlist_read(allowed_path, add_cidr, p);

		if (n < 0) {
			err = n;
			goto fail;
		}
		if (n == 0)
			pr_err("warning: %s lists no subnets: every connection will be refused", allowed_path);
		p->restrict_sources = true;
		pr_info("loaded %d allowed subnets from %s into %s/{%s,%s}", n, allowed_path, p->pin_dir,
			MMP_ALLOW4_MAP, MMP_ALLOW6_MAP);
	} else {
		pr_err("warning: no allowed-subnets file (-a): connections from every source are accepted");
	}
	*out = p;
	return 0;
fail:
	mmp_policy_close(p);
	return err;
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

void mmp_policy_close(struct mmp_policy *p)
{
	if (!p)
		return;
	if (p->skel) {
		mmp_unpin(p->pin_dir, MMP_ALLOW4_MAP);
		mmp_unpin(p->pin_dir, MMP_ALLOW6_MAP);
		policy_bpf__destroy(p->skel);
	}
	/* Only the instance holding the lock removes the directory. */
	if (p->locked)
		rmdir(p->pin_dir);
	if (p->lock_fd >= 0)
		close(p->lock_fd);
	free(p);
}
