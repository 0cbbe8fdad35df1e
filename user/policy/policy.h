/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Source policy: the pinned allowed-subnets LPM tries (mmp_allow4/6) and the
 * bpffs pin directory that holds them. One instance owns a pin directory at a
 * time (flock on the directory).
 */
#ifndef MMP_POLICY_H
#define MMP_POLICY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto/proxy_proto.h"

struct mmp_policy;

/*
 * Mount bpffs if needed, lock pin_dir, load the maps and pin them.
 * allowed_path may be NULL (every source allowed). Returns 0 with *out set,
 * or a negative errno after logging the cause and the fix.
 */
int mmp_policy_open(const char *pin_dir, const char *allowed_path, struct mmp_policy **out);

/*
 * Re-read the -a file (SIGHUP): parse and validate all of it, then swap the
 * maps' contents without a gap (policy/allow_set.h). A bad file leaves the
 * old list in force and logs one line naming the line and the fix. Counted
 * (mmp_policy_reloads). Main thread only. Returns 0 or a negative errno.
 */
int mmp_policy_reload(struct mmp_policy *p);
/* Reloads so far that took effect / were refused. */
void mmp_policy_reloads(const struct mmp_policy *p, uint64_t *ok, uint64_t *failed);

/*
 * Read --allowed-endpoints (policy/endpoint_policy.h); from then on
 * mmp_policy_reload re-reads it too. Returns 0, or a negative errno after
 * logging the file, the line and the fix.
 */
int mmp_policy_open_endpoints(struct mmp_policy *p, const char *path);

/* True when hdr names an allowed endpoint, or no --allowed-endpoints was given. Thread-safe. */
bool mmp_policy_endpoint_allowed(const struct mmp_policy *p, const struct pp_header *hdr);

/* True when the load balancer address sa may connect. Thread-safe. */
bool mmp_policy_allowed(const struct mmp_policy *p, const struct sockaddr *sa);

/* Unpin the maps, remove the pin directory, free. NULL is fine. */
/* --takeover: the pin directory's flock, once the predecessor let it go. 0, or -EWOULDBLOCK while it holds it. */
int mmp_policy_lock_retry(struct mmp_policy *p);
void mmp_policy_close(struct mmp_policy *p);

/* Make sure the filesystem holding dir's parent is bpffs; mount /sys/fs/bpf if missing. */
int mmp_ensure_bpffs(const char *dir);

#endif
