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
#include "policy/xdp_gate.h"
#include "mmp_xdp.h"

int mmp_cleanup_command(const char *pin_dir)
{
	int dfd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int unpinned = 0, filters, gates;
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
	gates = mmp_xdp_gate_cleanup(pin_dir); /* before the loop below removes the pins that name them */
	if (dfd >= 0) {
		d = fdopendir(dup(dfd));
		while (d && (de = readdir(d))) {
			/* Only our own pins: every map name starts with mmp_. */
			if (strncmp(de->d_name, "mmp_", 4))
				continue;
			/* A gate's pin that is still here could not be detached: keep it for a retry. */
			if (!strncmp(de->d_name, MMP_XDP_PIN_PREFIX, strlen(MMP_XDP_PIN_PREFIX)))
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
	printf("cleanup: %d filters, %d XDP gates and %d pins removed\n", filters, gates, unpinned);
	return 0;
}
