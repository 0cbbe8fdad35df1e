// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "lib/log.h"
#include "lib/netns_dir.h"
#include "lib/netns_lock.h"

/* Longer escaped names are cut and end in "~" and a hash of the whole name (NAME_MAX is 255). */
#define FILE_NAME_MAX 200
#define FILE_NAME_CUT 180

static bool safe_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr("_.,:=+-", c);
}

/*
 * "pin:/sys/fs/bpf/x" -> "pin:%2Fsys%2Ffs%2Fbpf%2Fx": a file name with no
 * '/', no leading '.' (every lock name starts with a letter) and a readable
 * inverse (unescape) for mmp_netns_locks_find.
 */
static void escape(const char *name, char *out, size_t out_len)
{
	static const char hex[] = "0123456789ABCDEF";
	uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a 64 */
	size_t n = 0;

	for (const char *p = name; *p; p++) {
		h = (h ^ (unsigned char)*p) * 0x100000001b3ULL;
		if (n + 4 >= out_len)
			continue;
		if (safe_char(*p) && !(p == name && *p == '.')) {
			out[n++] = *p;
		} else {
			out[n++] = '%';
			out[n++] = hex[(unsigned char)*p >> 4];
			out[n++] = hex[(unsigned char)*p & 15];
		}
	}
	out[n] = 0;
	if (n > FILE_NAME_MAX)
		snprintf(out + FILE_NAME_CUT, out_len - FILE_NAME_CUT, "~%016llx", (unsigned long long)h);
}

static void unescape(const char *file, char *out, size_t out_len)
{
	size_t n = 0;

	for (const char *p = file; *p && n + 1 < out_len; p++) {
		unsigned int c;

		if (*p == '%' && sscanf(p + 1, "%2x", &c) == 1) {
			out[n++] = (char)c;
			p += 2;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = 0;
}

static struct flock whole_file(short type)
{
	return (struct flock){ .l_type = type, .l_whence = SEEK_SET, .l_start = 0, .l_len = 0 };
}

/* Whether another open file description holds a lock on fd's file (F_OFD_GETLK takes nothing). */
static bool held_by_other(int fd)
{
	struct flock fl = whole_file(F_WRLCK);

	return !fcntl(fd, F_OFD_GETLK, &fl) && fl.l_type != F_UNLCK;
}

/*
 * "pid N: its command line", from the pid the holder wrote into the file
 * (OFD locks report no pid: F_OFD_GETLK and /proc/locks say -1).
 */
static void describe_holder(int fd, char *out, size_t out_len)
{
	char buf[32] = "", path[64], cmd[256] = "";
	int pid = 0, cfd, n = 0;
	ssize_t r = pread(fd, buf, sizeof(buf) - 1, 0);

	if (!out || !out_len)
		return;
	if (r > 0) {
		buf[r] = 0;
		pid = atoi(buf);
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	cfd = pid > 0 ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (cfd < 0) {
		snprintf(out, out_len, "pid unknown");
		return;
	}
	n = (int)read(cfd, cmd, sizeof(cmd) - 1);
	close(cfd);
	for (int i = 0; i < n - 1; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	cmd[n > 0 ? n : 0] = 0;
	snprintf(out, out_len, "pid %d%s%s", pid, *cmd ? ": " : "", cmd);
}

/* Our pid, for describe_holder: written after the lock is ours, so only the holder writes. */
static void write_pid(int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)n, 0) != n)
		return; /* only the refusal's "pid unknown" depends on it */
}

/* Take NAME, waiting for its holder when wait is set. */
static int take(const char *name, bool wait, char *holder, size_t holder_len)
{
	struct flock fl = whole_file(F_WRLCK);
	char file[FILE_NAME_MAX + 32];
	int dir, fd, err;

	dir = mmp_netns_dir_open();
	if (dir < 0)
		return dir;
	escape(name, file, sizeof(file));
	/* O_NOFOLLOW: no symlink can be planted (the directory is ours), but refuse one anyway. */
	fd = openat(dir, file, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	err = fd < 0 ? -errno : 0;
	close(dir);
	if (err) {
		pr_err("cannot create the lock file for %s: %s", name, strerror(-err));
		return err;
	}
	/* An OFD lock, not flock(): F_OFD_GETLK lets mmp_netns_locked look without taking it. */
	while (fcntl(fd, wait ? F_OFD_SETLKW : F_OFD_SETLK, &fl)) {
		if (errno == EINTR)
			continue;
		err = errno == EAGAIN || errno == EACCES ? -EADDRINUSE : -errno;
		if (err == -EADDRINUSE)
			describe_holder(fd, holder, holder_len);
		else
			pr_err("cannot lock the lock file for %s: %s", name, strerror(-err));
		close(fd);
		return err;
	}
	write_pid(fd);
	return fd;
}

int mmp_netns_lock(const char *name, char *holder, size_t holder_len)
{
	return take(name, false, holder, holder_len);
}

int mmp_netns_lock_wait(const char *name)
{
	return take(name, true, NULL, 0);
}

/* The lock file NAME, opened read-only (never created), or -errno. */
static int open_existing(int dir, const char *file)
{
	int fd = openat(dir, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

bool mmp_netns_locked(const char *name, char *holder, size_t holder_len)
{
	char file[FILE_NAME_MAX + 32];
	int dir = mmp_netns_dir_open(), fd;
	bool held;

	if (dir < 0)
		return false;
	escape(name, file, sizeof(file));
	fd = open_existing(dir, file);
	close(dir);
	if (fd < 0)
		return false; /* no file: never taken in this namespace */
	held = held_by_other(fd);
	if (held)
		describe_holder(fd, holder, holder_len);
	close(fd);
	return held;
}

int mmp_netns_lock_holder(const char *name)
{
	char file[FILE_NAME_MAX + 32], buf[32] = "";
	int dir = mmp_netns_dir_open(), fd, pid = -ENOENT;
	ssize_t r;

	if (dir < 0)
		return dir;
	escape(name, file, sizeof(file));
	fd = open_existing(dir, file);
	close(dir);
	if (fd < 0)
		return -ENOENT;
	if (held_by_other(fd)) {
		r = pread(fd, buf, sizeof(buf) - 1, 0);
		buf[r > 0 ? r : 0] = 0;
		pid = atoi(buf) > 0 ? atoi(buf) : -ESRCH;
	}
	close(fd);
	return pid;
}

bool mmp_netns_locks_find(const char *prefix, bool (*fn)(const char *name, void *arg), void *arg)
{
	int dir = mmp_netns_dir_open();
	struct dirent *de;
	bool found = false;
	DIR *d;

	if (dir < 0)
		return false;
	d = fdopendir(dir);
	if (!d) {
		close(dir);
		return false;
	}
	while (!found && (de = readdir(d))) {
		char name[FILE_NAME_MAX + 32];
		int fd;

		if (de->d_name[0] == '.' || de->d_type != DT_REG)
			continue;
		unescape(de->d_name, name, sizeof(name));
		if (strncmp(name, prefix, strlen(prefix)))
			continue;
		fd = open_existing(dirfd(d), de->d_name);
		if (fd < 0)
			continue;
		if (held_by_other(fd))
			found = fn(name, arg);
		close(fd);
	}
	closedir(d); /* closes dir */
	return found;
}
