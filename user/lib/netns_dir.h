/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The directory of this network namespace's locks and small state files:
 * LOCK_ROOT/net-DEV-INO, DEV and INO those of /proc/self/ns/net. LOCK_ROOT is
 * /run/mmproxy-bpf/locks (MMP_LOCK_DIR overrides it). Only root (or this
 * process's own uid) may own LOCK_ROOT and the namespace's directory, and
 * neither may be group or world writable: an unprivileged user can then
 * neither take a lock nor plant a file there. docs/DESIGN.md §6b.
 */
#ifndef MMP_NETNS_DIR_H
#define MMP_NETNS_DIR_H

#define MMP_LOCK_ROOT "/run/mmproxy-bpf/locks"
#define MMP_LOCK_ROOT_ENV "MMP_LOCK_DIR"

/*
 * Open (creating what is missing, mode 0700) this namespace's directory.
 * Returns an O_DIRECTORY fd, or -errno after one log line that names the
 * cause and the fix (-EPERM: a directory another user owns or may write).
 */
int mmp_netns_dir_open(void);

#endif
