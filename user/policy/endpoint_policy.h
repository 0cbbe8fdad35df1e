/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Endpoint policy (--allowed-endpoints): the list of cloud endpoints whose
 * connections may pass, checked against each PROXY v2 header's TLVs, and
 * re-read on SIGHUP without a gap (docs/DESIGN.md §12).
 */
#ifndef MMP_ENDPOINT_POLICY_H
#define MMP_ENDPOINT_POLICY_H

#include <stdbool.h>

#include "proto/proxy_proto.h"

struct mmp_endpoint_policy;

/*
 * Read path. Returns 0 with *out set, or a negative errno after logging one
 * line naming the file, the line and the fix (the process must not start).
 */
int mmp_endpoint_policy_open(const char *path, struct mmp_endpoint_policy **out);

/*
 * Re-read the file: parse all of it first, then swap the lists under a
 * write lock, so a connection is checked against the old list or the new
 * one, never against none. A bad file keeps the old list and logs why.
 * Returns 0 or a negative errno.
 */
int mmp_endpoint_policy_reload(struct mmp_endpoint_policy *p);

/*
 * True when the header may pass: a PROXY command whose TLVs name a listed
 * endpoint. A LOCAL header (a health check: no client, forwarded from our
 * own address) passes. NULL p (no --allowed-endpoints): everything passes.
 * Thread-safe.
 */
bool mmp_endpoint_policy_allowed(struct mmp_endpoint_policy *p, const struct pp_header *hdr);

/* NULL is fine. */
void mmp_endpoint_policy_close(struct mmp_endpoint_policy *p);

#endif
