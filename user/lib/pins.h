/* SPDX-License-Identifier: GPL-2.0 */
/* Pinning maps under the instance's bpffs directory (--pin-dir). */
#ifndef MMP_PINS_H
#define MMP_PINS_H

struct bpf_map;

/*
 * Pin map at DIR/<map name>, replacing a stale pin first: pins left by a
 * crashed instance may have an old layout. Returns 0 or a negative errno
 * after logging.
 */
int mmp_pin_map(const char *dir, struct bpf_map *map);
/* The same at DIR/<name>: two copies of one program's map in one directory. */
int mmp_pin_map_as(const char *dir, struct bpf_map *map, const char *name);
/* Open the map pinned at DIR/<name>: an fd, or a negative value (errno set). */
int mmp_open_pin(const char *dir, const char *name);
/* Remove DIR/<name>; absent is fine. */
void mmp_unpin(const char *dir, const char *name);

#endif
