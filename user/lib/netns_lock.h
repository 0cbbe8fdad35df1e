/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A lock scoped to the network namespace: an OFD write lock (F_OFD_SETLK) on
 * the file NAME (escaped) in the namespace's lock directory
 * (lib/netns_dir.h, /run/mmproxy-bpf/locks/net-DEV-INO/). The directory is
 * root's and 0700, so an unprivileged user can neither take nor block one
 * (abstract unix socket names, used before, were open to any uid). The kernel
 * releases the lock when the holder dies, SIGKILL included. Lock files are
 * never removed: one left behind is not held, and a removal would race with
 * a process that opened it and is about to lock it. docs/DESIGN.md §6b.
 */
#ifndef MMP_NETNS_LOCK_H
#define MMP_NETNS_LOCK_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Take the lock NAME in this network namespace. Returns the fd (keep it open
 * to hold the lock), -EADDRINUSE with the holder described in holder
 * ("pid 123: mmproxy-bpf run -l ..."), or another -errno after one log
 * line naming the cause and the fix (a lock directory refused, say).
 */
int mmp_netns_lock(const char *name, char *holder, size_t holder_len);

/* The same, waiting while another holds it (short critical sections only). */
int mmp_netns_lock_wait(const char *name);

/* Whether some process holds NAME in this network namespace (holder as above). Takes nothing. */
bool mmp_netns_locked(const char *name, char *holder, size_t holder_len);

/* The pid that holds NAME (takes nothing): > 0, -ENOENT when none holds it, -ESRCH when it wrote no pid yet. */
int mmp_netns_lock_holder(const char *name);

/*
 * Call fn for each lock held in this namespace whose name starts with prefix
 * (names too long for a file name arrive shortened: only short names should
 * be parsed), until fn returns true. Returns whether one did.
 */
bool mmp_netns_locks_find(const char *prefix, bool (*fn)(const char *name, void *arg), void *arg);

#endif
