// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include "lib/netns_lock.h"

static socklen_t abstract_addr(const char *name, struct sockaddr_un *sun)
{
	int n;

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	/* sun_path[0] = 0: abstract; the name is not NUL-terminated, its length is in addrlen. */
	n = snprintf(sun->sun_path + 1, sizeof(sun->sun_path) - 1, "mmproxy-bpf/%s", name);
	if (n > (int)sizeof(sun->sun_path) - 1)
		n = (int)sizeof(sun->sun_path) - 1;
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

/* The inode of the socket bound to the abstract name (/proc/net/unix lists this namespace's), or 0. */
static unsigned long bound_inode(const char *abstract_name)
{
	char line[512], path[128] = "";
	unsigned long inode, found = 0;
	FILE *f = fopen("/proc/net/unix", "re");

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %127s", &inode, path) == 2 && path[0] == '@' &&
		    !strcmp(path + 1, abstract_name))
			found = inode;
	fclose(f);
	return found;
}

/* The process with an fd on socket inode: scan /proc/PID/fd (on the error path only). */
static int inode_owner(unsigned long inode)
{
	char want[64], path[600], link[64];
	struct dirent *p, *d;
	DIR *procs = opendir("/proc"), *fds;
	int pid = 0;

	snprintf(want, sizeof(want), "socket:[%lu]", inode);
	while (procs && !pid && (p = readdir(procs))) {
		if (p->d_name[0] < '1' || p->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/fd", p->d_name);
		fds = opendir(path);
		while (fds && !pid && (d = readdir(fds))) {
			ssize_t n;

			snprintf(path, sizeof(path), "/proc/%s/fd/%s", p->d_name, d->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n > 0 && (link[n] = 0, !strcmp(link, want)))
				pid = atoi(p->d_name);
		}
		if (fds)
			closedir(fds);
	}
	if (procs)
		closedir(procs);
	return pid;
}

/*
 * "pid N: its command line". Found through /proc rather than by connecting
 * (SO_PEERCRED): a connection would wait in the holder's backlog, which
 * nothing accepts.
 */
static void describe_holder(const char *abstract_name, char *out, size_t out_len)
{
	unsigned long inode = bound_inode(abstract_name);
	int pid = inode ? inode_owner(inode) : 0;
	char path[64], cmd[256] = "";
	int fd, n = 0;

	if (!pid) {
		snprintf(out, out_len, "pid unknown");
		return;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = (int)read(fd, cmd, sizeof(cmd) - 1);
		close(fd);
	}
	for (int i = 0; i < n - 1; i++)
		if (!cmd[i])
			cmd[i] = ' ';
	cmd[n > 0 ? n : 0] = 0;
	snprintf(out, out_len, "pid %d%s%s", pid, *cmd ? ": " : "", cmd);
}

int mmp_netns_lock(const char *name, char *holder, size_t holder_len)
{
	struct sockaddr_un sun;
	socklen_t len = abstract_addr(name, &sun);
	int fd, err;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (const struct sockaddr *)&sun, len)) {
		err = -errno;
		close(fd);
		if (err == -EADDRINUSE && holder)
			describe_holder(sun.sun_path + 1, holder, holder_len);
		return err;
	}
	return fd;
}

bool mmp_netns_locked(const char *name, char *holder, size_t holder_len)
{
	int fd = mmp_netns_lock(name, holder, holder_len);

	if (fd >= 0) {
		close(fd);
		return false;
	}
	return fd == -EADDRINUSE;
}
