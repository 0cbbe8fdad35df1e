// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/file.h>
#include "cli/instances.h"
#include "lib/instance.h"
#include "lib/instance_lock.h"

static bool has_pins(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	bool found = false;

	while (d && !found && (de = readdir(d)))
		found = !strncmp(de->d_name, "mmp_", 4);
	if (d)
		closedir(d);
	return found;
}

static void add(struct mmp_instances *found, const char *dir)
{
	if (found->n < MMP_INSTANCES_MAX)
		snprintf(found->dir[found->n++], sizeof(found->dir[0]), "%s", dir);
}

/* Fill *found with the pin directories under MMP_PIN_ROOT that hold at least one mmp_* pin. */
static void mmp_instances_find(struct mmp_instances *found)
{
	DIR *d = opendir(MMP_PIN_ROOT);
	struct dirent *de;
	char path[sizeof(found->dir[0])];

	found->n = 0;
	if (has_pins(MMP_PIN_ROOT))
		add(found, MMP_PIN_ROOT);
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", MMP_PIN_ROOT, de->d_name);
		if (has_pins(path))
			add(found, path);
	}
	if (d)
		closedir(d);
}

/* Whether an instance runs on pin_dir: it holds the directory's flock, or its lock in this network namespace. */
static bool mmp_instance_running(const char *pin_dir)
{
	int fd = open(pin_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool busy = false;

	if (fd >= 0) {
		busy = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
		close(fd); /* releases the lock if we took it */
	}
	return busy || mmp_instance_running_here(pin_dir, NULL, 0);
}

int mmp_instances_choose(const struct mmp_config *cfg, const char *command, struct mmp_instances *out)
{
	out->n = 0;
	if (cfg->pin_dir) {
		add(out, cfg->pin_dir);
		return 0;
	}
	mmp_instances_find(out);
	if (out->n == 0) {
		fprintf(stderr, "mmproxy-bpf: no instance is pinned under %s (is mmproxy-bpf running? one started with `ip netns exec` pins in that namespace's own bpffs: run %s there; or pass --pin-dir)\n",
			MMP_PIN_ROOT, command);
		return 1;
	}
	if (out->n == 1 || cfg->all)
		return 0;
	fprintf(stderr, "mmproxy-bpf: %d instances are pinned under %s:\n", out->n, MMP_PIN_ROOT);
	for (int i = 0; i < out->n; i++)
		fprintf(stderr, "  %s (%s)\n", out->dir[i], mmp_instance_running(out->dir[i]) ? "running" : "stopped");
	fprintf(stderr, "mmproxy-bpf: choose one with `mmproxy-bpf %s --pin-dir DIR`, or `mmproxy-bpf %s --all`\n", command,
		command);
	return 1;
}
