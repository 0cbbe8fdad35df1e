// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include "cli/cleanup.h"
#include "engine/tc/tc_engine.h"

int mmp_cleanup_command(const char *pin_dir)
{
	int dfd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int unpinned = 0, filters;
	struct dirent *de;
	DIR *d;

	if (dfd >= 0 && flock(dfd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) {
		fprintf(stderr, "mmproxy-bpf: an instance is running on %s; stop it first (its flows would break)\n",
			pin_dir);
		close(dfd);
		return 1;
	}
	/* Filters first: with them gone, nothing uses the maps any more. */
	filters = mmp_tc_detach_everywhere(mmp_tc_priority(pin_dir));
	if (dfd >= 0) {
		d = fdopendir(dup(dfd));
		while (d && (de = readdir(d))) {
			/* Only our own pins: every map name starts with mmp_. */
			if (strncmp(de->d_name, "mmp_", 4))
				continue;
			if (unlinkat(dfd, de->d_name, 0) == 0) {
				printf("removed: %s/%s\n", pin_dir, de->d_name);
				unpinned++;
			}
		}
		if (d)
			closedir(d);
		close(dfd);
		rmdir(pin_dir);
	}
	printf("cleanup: %d filters and %d pins removed\n", filters, unpinned);
	return 0;
}
