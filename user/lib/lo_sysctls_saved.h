/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What lo's route_localnet and accept_local were before mmproxy-bpf first
 * turned them on in this network namespace (`run` with an in-kernel path, or
 * setup-routing), kept in the file "saved.lo-sysctls" of the namespace's
 * lock directory (lib/netns_dir.h), and put back by `cleanup` and
 * `cleanup-routing` once no instance runs in the namespace. Not at an
 * instance's exit: a restart keeps the tc engine's flows in the kernel, and
 * other instances may share lo. docs/DESIGN.md §6b.
 */
#ifndef MMP_LO_SYSCTLS_SAVED_H
#define MMP_LO_SYSCTLS_SAVED_H

#include <stdbool.h>

/*
 * Before turning them on: record the current values unless a record exists
 * (the first one wins: a later start sees the values an earlier one set);
 * recorded says whether this call made it. Returns the record's lock (cleanup
 * waits for it), or a negative errno (logged). The caller turns them on either way, then
 * calls mmp_lo_sysctls_unsave.
 */
int mmp_lo_sysctls_save(bool *recorded);

/* Release the lock; drop the record this call made if nothing was changed after all. */
void mmp_lo_sysctls_unsave(int lock, bool recorded, bool changed);

/*
 * Put the recorded values back where a sysctl is still 1, and drop the
 * record, unless an instance runs in this namespace (then one line says which).
 * Prints what it did. Returns 0, or -errno.
 */
int mmp_lo_sysctls_restore(void);

#endif
