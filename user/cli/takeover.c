// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cli/takeover.h"
#include "lib/instance_lock.h"
#include "lib/log.h"

#define CMDLINE_MAX 8192

/* Options that may differ between the two processes: they change nothing the instance shares. */
static int skip_arg(char *const *args, int i, int n)
{
	if (!strcmp(args[i], "--takeover"))
		return 1;
	if (!strncmp(args[i], "--drain-timeout=", 16))
		return 1;
	if (!strcmp(args[i], "--drain-timeout"))
		return i + 1 < n ? 2 : 1;
	return 0;
}

/* Both argument lists without argv[0] (the binary may be another build) and without skip_arg's. */
static bool same_flags(char *const *a, int na, char *const *b, int nb)
{
	int i = 1, j = 1, s;

	for (;;) {
		while (i < na && (s = skip_arg(a, i, na)))
			i += s;
		while (j < nb && (s = skip_arg(b, j, nb)))
			j += s;
		if (i >= na || j >= nb)
			return i >= na && j >= nb;
		if (strcmp(a[i++], b[j++]))
			return false;
	}
}

/* /proc/PID/cmdline split into args (pointing into buf). Returns their count, or -errno. */
static int read_cmdline(int pid, char *buf, size_t len, char **args, int max)
{
	char path[64];
	ssize_t n;
	int fd, argc = 0;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = 0;
	for (char *p = buf; p < buf + n && argc < max; p += strlen(p) + 1)
		args[argc++] = p;
	return argc;
}

int mmp_takeover_find(const struct mmp_config *cfg, int argc, char **argv)
{
	static char buf[CMDLINE_MAX];
	char *args[256], holder[320] = "";
	int pid = mmp_instance_serving_pid(cfg->pin_dir), n;

	if (pid == -ENOENT && mmp_instance_running_here(cfg->pin_dir, holder, sizeof(holder))) {
		pr_err("--takeover: the instance using %s (%s) is a build without --takeover and cannot hand over: restart it the usual way this once",
		       cfg->pin_dir, holder);
		return -EOPNOTSUPP;
	}
	if (pid < 0) {
		pr_err("--takeover: no mmproxy-bpf instance serves %s in this network namespace: start this one without --takeover (or check -p, -l and --pin-dir)",
		       cfg->pin_dir);
		return -ENOENT;
	}
	n = read_cmdline(pid, buf, sizeof(buf), args, 256);
	if (n < 0) {
		pr_err("--takeover: cannot read the command line of pid %d, which serves %s: %s", pid, cfg->pin_dir,
		       strerror(-n));
		return n;
	}
	if (!same_flags(args, n, argv, argc)) {
		for (int i = 1; i < n - 1; i++)
			args[i][strlen(args[i])] = ' ';
		pr_err("--takeover: pid %d serves %s with other flags (%s): give --takeover exactly its flags, or stop it first",
		       pid, cfg->pin_dir, n > 1 ? args[1] : "none");
		return -EINVAL;
	}
	return pid;
}

int mmp_takeover_signal(int pid)
{
	if (kill(pid, SIGUSR2)) {
		int err = -errno;

		pr_err("--takeover: cannot signal pid %d: %s", pid, strerror(-err));
		return err;
	}
	pr_info("took over from pid %d: listening; it closes its listeners and drains", pid);
	return 0;
}
