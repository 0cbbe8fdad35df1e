// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/instance_lock.h"
#include "lib/lo_sysctls.h"
#include "lib/lo_sysctls_saved.h"
#include "lib/log.h"
#include "lib/netns_dir.h"
#include "lib/netns_lock.h"

#define SAVED_FILE "saved.lo-sysctls"
/*
 * Held around "look, record, turn on" (run, setup-routing) and "look for
 * instances, put back" (cleanup): a start that took its instance lock after
 * cleanup looked finds the values cleanup put back, and records them again.
 */
#define SAVED_LOCK "lo-sysctls"

/* The sysctl's first line ("0", "1", "2"), or "" when unreadable. */
static void read_value(const char *path, char *out, size_t len)
{
	FILE *f = fopen(path, "re");

	out[0] = 0;
	if (f) {
		if (!fgets(out, (int)len, f))
			out[0] = 0;
		fclose(f);
	}
	out[strcspn(out, "\n")] = 0;
}

static bool all_on(void)
{
	char v[16];

	for (size_t i = 0; i < MMP_LO_SYSCTLS; i++) {
		read_value(mmp_lo_sysctls[i], v, sizeof(v));
		if (strcmp(v, "1"))
			return false;
	}
	return true;
}

/* "PATH VALUE" lines into a private file, then linked into place: a reader never sees half a record. */
static int write_record(int dir, bool *recorded)
{
	char tmp[64], v[16];
	int fd, err = 0;
	FILE *f;

	snprintf(tmp, sizeof(tmp), SAVED_FILE ".%d", (int)getpid());
	fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		goto out;
	}
	for (size_t i = 0; i < MMP_LO_SYSCTLS; i++) {
		read_value(mmp_lo_sysctls[i], v, sizeof(v));
		fprintf(f, "%s %s\n", mmp_lo_sysctls[i], *v ? v : "0");
	}
	if (fclose(f))
		err = -errno;
	/* linkat fails with EEXIST when a record exists: the first one wins. */
	if (!err && linkat(dir, tmp, dir, SAVED_FILE, 0) == 0)
		*recorded = true;
	else if (!err && errno != EEXIST)
		err = -errno;
out:
	unlinkat(dir, tmp, 0);
	return err;
}

int mmp_lo_sysctls_save(bool *recorded)
{
	int lock, dir, err;

	*recorded = false;
	lock = mmp_netns_lock_wait(SAVED_LOCK);
	if (lock < 0)
		return lock; /* a negative errno, logged: the lock directory */
	if (all_on())
		return lock; /* nothing will change: nothing to put back */
	dir = mmp_netns_dir_open();
	err = dir < 0 ? dir : write_record(dir, recorded);
	if (dir >= 0)
		close(dir);
	if (err)
		pr_err("warning: could not record lo's route_localnet/accept_local before changing them: %s (cleanup will not put them back)",
		       strerror(-err));
	return lock;
}

void mmp_lo_sysctls_unsave(int lock, bool recorded, bool changed)
{
	int dir;

	/* A record of values nothing changed would later undo what someone else turns on. */
	if (recorded && !changed) {
		dir = mmp_netns_dir_open();
		if (dir >= 0) {
			unlinkat(dir, SAVED_FILE, 0);
			close(dir);
		}
	}
	if (lock >= 0)
		close(lock);
}

/* One "PATH VALUE" line: put VALUE back if PATH is one of ours, VALUE a number, and the sysctl still 1. */
static void restore_line(const char *line)
{
	char path[128], value[16], now[16];
	FILE *f;

	if (sscanf(line, "%127s %15s", path, value) != 2 || strspn(value, "0123456789") != strlen(value))
		return;
	for (size_t i = 0; i < MMP_LO_SYSCTLS; i++) {
		if (strcmp(path, mmp_lo_sysctls[i]))
			continue;
		read_value(path, now, sizeof(now));
		/* Changed since by someone else (or never by us): theirs stands. */
		if (strcmp(now, "1") || !strcmp(value, "1"))
			return;
		f = fopen(path, "we");
		if (f && fputs(value, f) >= 0 && fclose(f) == 0)
			printf("restored: %s = %s (its value before mmproxy-bpf turned it on)\n", path, value);
		else
			pr_err("failed to put %s back to %s: %s (fix: sysctl -w by hand)", path, value,
			       strerror(errno));
		return;
	}
}

static int restore_from(int dir)
{
	char running[PATH_MAX], line[256];
	int fd;
	FILE *f;

	fd = openat(dir, SAVED_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* nothing recorded: mmproxy-bpf changed nothing */
	if (mmp_instance_any_running_here(running, sizeof(running))) {
		printf("kept: lo's route_localnet and accept_local stay on while an instance runs in this network namespace (%s); cleanup puts them back once none does\n",
		       running);
		close(fd);
		return 0;
	}
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -errno;
	}
	while (fgets(line, sizeof(line), f))
		restore_line(line);
	fclose(f);
	return unlinkat(dir, SAVED_FILE, 0) ? -errno : 0;
}

int mmp_lo_sysctls_restore(void)
{
	int lock, dir, err;

	lock = mmp_netns_lock_wait(SAVED_LOCK);
	if (lock < 0)
		return lock;
	dir = mmp_netns_dir_open();
	err = dir < 0 ? dir : restore_from(dir);
	if (dir >= 0)
		close(dir);
	close(lock);
	return err;
}
