// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "lib/handover.h"
#include "lib/log.h"
#include "lib/pins.h"

int mmp_pin_map(const char *dir, struct bpf_map *map)
{
	return mmp_pin_map_as(dir, map, bpf_map__name(map));
}

int mmp_pin_map_as(const char *dir, struct bpf_map *map, const char *name)
{
	char path[PATH_MAX];
	int err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (unlink(path) && errno != ENOENT) {
		err = -errno;
		pr_err("failed to remove stale pin %s: %s", path, strerror(-err));
		return err;
	}
	err = bpf_map__pin(map, path);
	if (err)
		pr_err("failed to pin map at %s: %s", path, strerror(-err));
	return err;
}

int mmp_open_pin(const char *dir, const char *name)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return bpf_obj_get(path);
}

void mmp_unpin(const char *dir, const char *name)
{
	char path[PATH_MAX];

	/* Handing over: the pin is the successor's now (docs/DESIGN.md §15). */
	if (mmp_handing_over())
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	unlink(path);
}
