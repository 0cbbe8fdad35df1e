// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/log.h"
#include "lib/netns_dir.h"
#include "listen/migrate_req.h"

#define SYSCTL "/proc/sys/net/ipv4/tcp_migrate_req"
#define RECORD "migrate-req"

/*
 * Two one-byte OFD locks on the record: MUTEX, held only while the record
 * and the sysctl are read and written; HOLDERS, shared by every hand-over
 * in progress, which the last one alone can take exclusively.
 */
#define MUTEX 0
#define HOLDERS 1

static int lock_record(int fd, short type, off_t which, bool wait)
{
	struct flock fl = { .l_type = type, .l_whence = SEEK_SET, .l_start = which, .l_len = 1 };

	while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl))
		if (errno != EINTR)
			return -errno;
	return 0;
}

/* "0\n" or "1\n" into buf; returns 0 or -errno. */
static int sysctl_read(char *buf, size_t len)
{
	int fd = open(SYSCTL, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	buf[n] = 0;
	return 0;
}

static int sysctl_write(const char *val)
{
	int fd = open(SYSCTL, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, val, strlen(val)) < 0)
		err = -errno;
	close(fd);
	return err;
}

int mmp_migrate_req_on(void)
{
	char saved[16] = "", now[16];
	int dir = mmp_netns_dir_open(), fd, err;
	ssize_t n;

	if (dir < 0)
		return dir;
	fd = openat(dir, RECORD, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	err = fd < 0 ? -errno : 0;
	close(dir);
	if (err)
		goto fail;
	err = lock_record(fd, F_WRLCK, MUTEX, true);
	if (err)
		goto fail;
	n = pread(fd, saved, sizeof(saved) - 1, 0);
	if (n <= 0) {
		err = sysctl_read(now, sizeof(now));
		if (!err && pwrite(fd, now, strlen(now), 0) < 0)
			err = -errno;
	}
	if (!err)
		err = sysctl_write("1");
	/* Never refused: an exclusive HOLDERS lock is only tried under MUTEX, which we hold. */
	if (!err)
		err = lock_record(fd, F_RDLCK, HOLDERS, false);
	lock_record(fd, F_UNLCK, MUTEX, false);
	if (err)
		goto fail;
	return fd;
fail:
	pr_err("cannot set net.ipv4.tcp_migrate_req=1 (%s): connections still queued on the listeners being handed over will be reset (a kernel before 5.14, or a read-only /proc/sys: allow writing it)",
	       strerror(-err));
	if (fd >= 0)
		close(fd);
	return err;
}

void mmp_migrate_req_put_back(int fd)
{
	char saved[16] = "";
	ssize_t n;
	int err;

	if (fd < 0)
		return;
	/* Another hand-over still holds HOLDERS shared: it puts the value back when it is done. */
	if (lock_record(fd, F_WRLCK, MUTEX, true) == 0 && lock_record(fd, F_WRLCK, HOLDERS, false) == 0) {
		n = pread(fd, saved, sizeof(saved) - 1, 0);
		if (n > 0) {
			saved[n] = 0;
			err = sysctl_write(saved);
			if (err)
				pr_err("cannot put net.ipv4.tcp_migrate_req back to %.1s: %s", saved, strerror(-err));
			else if (ftruncate(fd, 0))
				pr_err("cannot clear the record of net.ipv4.tcp_migrate_req: %s", strerror(errno));
		}
	}
	close(fd);
}
