/* SPDX-License-Identifier: GPL-2.0 */
/*
 * net.ipv4.tcp_migrate_req (kernel >= 5.14, per network namespace), set to 1
 * only while an instance hands its listeners over (--takeover): closing a
 * SO_REUSEPORT listener then moves its accept queue and its half-open
 * requests to another listener of the group, the successor's, instead of
 * resetting them (docs/DESIGN.md §15). The value found before the first
 * such hand-over is kept in the namespace's lock directory
 * (lib/netns_dir.h), in the file "migrate-req", which every hand-over
 * holds a read lock on; the last one to finish puts the value back, so
 * overlapping hand-overs (a chain of takeovers) never turn it off under
 * each other, and one killed midway leaves the record for the next.
 */
#ifndef MMP_MIGRATE_REQ_H
#define MMP_MIGRATE_REQ_H

/* Turn it on. Returns the record's fd for mmp_migrate_req_put_back, or -errno after one log line. */
int mmp_migrate_req_on(void);

/* Release fd; the last holder puts the recorded value back. */
void mmp_migrate_req_put_back(int fd);

#endif
