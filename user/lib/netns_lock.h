/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A lock scoped to the network namespace: a unix socket bound to
 * an abstract name. The kernel keeps abstract names per network namespace
 * (not per mount, as a bpffs lock file would be: `ip netns exec` mounts its
 * own), and releases it when the holder dies, SIGKILL included.
 */
#ifndef MMP_NETNS_LOCK_H
#define MMP_NETNS_LOCK_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Take the lock "mmproxy-bpf/NAME" in this network namespace. Returns the
 * socket (keep it open to hold the lock), -EADDRINUSE with the holder
 * described in holder ("pid 123: mmproxy-bpf run -l ..."), or -errno.
 */
int mmp_netns_lock(const char *name, char *holder, size_t holder_len);

/* Whether some process holds "mmproxy-bpf/NAME" in this network namespace (holder as above). */
bool mmp_netns_locked(const char *name, char *holder, size_t holder_len);

#endif
