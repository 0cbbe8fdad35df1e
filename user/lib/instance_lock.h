/* SPDX-License-Identifier: GPL-2.0 */
/*
 * `run` refuses to share state with another instance in this network
 * namespace: the same pin directory (the same -p and -l by default, which
 * SO_REUSEPORT would otherwise let both bind), or the same TC filter
 * identity (two pin directories whose priorities collide). The pin
 * directory's flock (lib/policy.c) covers instances in other namespaces that
 * see the same bpffs. docs/DESIGN.md §6a, §6b (the locks).
 */
#ifndef MMP_INSTANCE_LOCK_H
#define MMP_INSTANCE_LOCK_H

#include <stdbool.h>
#include "lib/config.h"

struct mmp_instance_lock {
	int pin_fd; /* "pin:DIR" */
	int filter_fd; /* "tc:HANDLE:PRIO", -1 when no TC filter is attached (engine splice) */
	int udp_filter_fd; /* -p tcp,udp: the UDP fast path's "tc:HANDLE:PRIO" beside TCP's, or -1 */
	int serve_fd; /* "serve:DIR": this process serves DIR's listeners (--takeover finds it, §15), or -1 */
};

/* Returns 0, or -EADDRINUSE / -errno after one log line naming the other instance and the fix. */
int mmp_instance_lock(const struct mmp_config *cfg, struct mmp_instance_lock *l);
void mmp_instance_unlock(struct mmp_instance_lock *l);

/*
 * --takeover (docs/DESIGN.md §15). The pid serving pin_dir's listeners now
 * (> 0; -ENOENT: none; -ESRCH: unknown); taking "serve:DIR" once that one
 * let it go (0, or -EADDRINUSE); letting it go when taken over; and the
 * other locks, tried once the predecessor has exited (0, or -EADDRINUSE
 * without a log line while it still holds one).
 */
int mmp_instance_serving_pid(const char *pin_dir);
int mmp_instance_take_serving(const char *pin_dir, struct mmp_instance_lock *l);
void mmp_instance_stop_serving(struct mmp_instance_lock *l);
int mmp_instance_lock_after_takeover(const struct mmp_config *cfg, struct mmp_instance_lock *l);

/* Whether an instance with pin_dir runs in this network namespace (holder as in netns_lock.h). */
bool mmp_instance_running_here(const char *pin_dir, char *holder, size_t holder_len);

/* Whether any instance runs in this network namespace: one's pin directory in pin_dir (a long one shortened). */
bool mmp_instance_any_running_here(char *pin_dir, size_t len);

#endif
