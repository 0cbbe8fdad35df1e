// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/file.h>
#include "cli/cleanup.h"
#include "cli/instances.h"
#include "engine/tc/tc_engine.h"
#include "lib/instance.h"
#include "lib/instance_lock.h"
#include "lib/lo_sysctls_saved.h"
#include "policy/xdp_gate.h"
#include "mmp_xdp.h"

/* Returns 0, or 1 when an instance still runs on pin_dir (nothing is touched then). */
static int cleanup_one(const char *pin_dir)
{
	int dfd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int unpinned = 0, filters, gates;
	char holder[320];
	struct dirent *de;
	DIR *d;

	/* The flock is held until the end: no instance starts on this directory meanwhile. */
	if ((dfd >= 0 && flock(dfd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK) ||
	    mmp_instance_running_here(pin_dir, holder, sizeof(holder))) {
		fprintf(stderr, "mmproxy-bpf: an instance is running on %s; stop it first (its flows would break)\n",
			pin_dir);
		if (dfd >= 0)
			close(dfd);
		return 1;
	}
	/*
	 * Filters first: with them gone, nothing uses the maps any more. The
	 * directory does not say which protocol it served (--pin-dir): both
	 * identities are tried, and only this directory's match.
	 */
	filters = mmp_tc_detach_everywhere(mmp_instance_tc_id(IPPROTO_TCP, pin_dir));
	filters += mmp_tc_detach_everywhere(mmp_instance_tc_id(IPPROTO_UDP, pin_dir));
	/* The reply-steering filter at an upstream's interface (docs/DESIGN.md §14): ingress only, its own handle. */
	filters += mmp_tc_detach_everywhere(mmp_instance_steer_id(pin_dir));
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
	printf("cleanup %s: %d filters, %d XDP gates and %d pins removed\n", pin_dir, filters, gates, unpinned);
	return 0;
}

int mmp_cleanup_command(const struct mmp_config *cfg)
{
	static struct mmp_instances todo;
	int busy = 0;

	if (mmp_instances_choose(cfg, "cleanup", &todo)) {
		if (todo.n == 0) /* nothing pinned, but lo may still hold what a stopped instance set */
			mmp_lo_sysctls_restore();
		return 1;
	}
	for (int i = 0; i < todo.n; i++)
		busy += cleanup_one(todo.dir[i]);
	/* lo's sysctls as they were before the first start (DESIGN §6b), once no instance runs here. */
	mmp_lo_sysctls_restore();
	/* --all skips running instances; one named instance that runs is an error. */
	return cfg->all ? 0 : busy > 0;
}
