// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <limits.h>
#include <sys/stat.h>
#include "lib/log.h"
#include "lib/netns_dir.h"

static const char *lock_root(void)
{
	const char *env = getenv(MMP_LOCK_ROOT_ENV);

	return env && *env ? env : MMP_LOCK_ROOT;
}

/*
 * Owned by root, or by our own uid (a service that runs under its own user
 * with capabilities: that uid can harm its own processes anyway), and
 * writable by nobody else. The check is on the opened fd, so nothing can be
 * swapped in between.
 */
static int check_private(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		pr_err("refusing the lock directory %s: it is owned by uid %u, not root, so that user could take mmproxy-bpf's locks (fix: chown root:root %s && chmod 0700 %s, or remove it)",
		       path, (unsigned int)st.st_uid, path, path);
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		pr_err("refusing the lock directory %s: its mode %04o lets other users take mmproxy-bpf's locks (fix: chmod 0700 %s)",
		       path, (unsigned int)(st.st_mode & 07777), path);
		return -EPERM;
	}
	return 0;
}

/*
 * mkdir -p of path's missing components, 0700. Only missing ones are
 * created; existing ones (/run itself) are left as they are, and only the
 * last one is checked (check_private).
 */
static int make_path(const char *path)
{
	char buf[PATH_MAX];

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0700) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	return 0;
}

/* O_NOFOLLOW: a symlink planted in place of the directory is refused (ELOOP), not followed. */
static int open_dir_at(int at, const char *name)
{
	int fd = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

static void report_open_error(const char *path, int err)
{
	if (err == -ELOOP || err == -ENOTDIR)
		pr_err("refusing the lock directory %s: it is not a directory (a symlink?) (fix: remove it; mmproxy-bpf recreates it)",
		       path);
	else if (err == -EACCES || err == -EROFS || err == -EPERM)
		pr_err("cannot create the lock directory %s: %s (fix: run as root, or create it: install -d -m 0700 %s; under systemd: RuntimeDirectory=mmproxy-bpf/locks)",
		       path, strerror(-err), path);
	else
		pr_err("cannot open the lock directory %s: %s", path, strerror(-err));
}

int mmp_netns_dir_open(void)
{
	const char *root = lock_root();
	char name[64], path[PATH_MAX + 64];
	int root_fd, fd, err;
	struct stat ns;

	if (stat("/proc/self/ns/net", &ns)) {
		err = -errno;
		pr_err("cannot identify this network namespace (/proc/self/ns/net): %s (is /proc mounted?)", strerror(-err));
		return err;
	}
	err = make_path(root);
	root_fd = err ? err : open_dir_at(AT_FDCWD, root);
	if (root_fd < 0) {
		report_open_error(root, root_fd);
		return root_fd;
	}
	err = check_private(root_fd, root);
	if (err)
		goto out_root;
	/* The namespace's identity: what `ip netns` and nsenter agree on, whatever the mounts. */
	snprintf(name, sizeof(name), "net-%lu-%lu", (unsigned long)ns.st_dev, (unsigned long)ns.st_ino);
	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (mkdirat(root_fd, name, 0700) && errno != EEXIST) {
		err = -errno;
		report_open_error(path, err);
		goto out_root;
	}
	fd = open_dir_at(root_fd, name);
	if (fd < 0) {
		err = fd;
		report_open_error(path, err);
		goto out_root;
	}
	err = check_private(fd, path);
	if (err) {
		close(fd);
		goto out_root;
	}
	close(root_fd);
	return fd;
out_root:
	close(root_fd);
	return err;
}
