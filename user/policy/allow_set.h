/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A parsed allowed-subnets file, and how it replaces what the LPM tries
 * mmp_allow4/6 hold without a moment when everything or nothing is allowed
 * (docs/DESIGN.md §6): every new entry is inserted first, then the entries
 * the file no longer lists are deleted.
 */
#ifndef MMP_ALLOW_SET_H
#define MMP_ALLOW_SET_H

#include <stddef.h>
#include "proto/allowlist.h"

struct mmp_allow_entry {
	struct mmp_cidr cidr;
	unsigned int line;
};

struct mmp_allow_set {
	struct mmp_allow_entry *v;
	size_t n, cap;
	unsigned int n4, n6; /* distinct entries per family */
};

/*
 * Parse and validate the whole file (syntax, at most MMP_ALLOW_MAX_ENTRIES
 * per family) before anything touches a map. Returns 0, or a negative
 * errno with the one-line reason in why.
 */
int mmp_allow_set_read(const char *path, struct mmp_allow_set *set, char *why, size_t why_len);

struct mmp_allow_change {
	unsigned int added, removed; /* prefixes new to the maps / no longer listed */
};

/*
 * Make the two maps hold exactly set: insert (or update) every entry, then
 * delete every key set does not list. Any address allowed both before and
 * after stays allowed throughout (the maps hold a superset of the old list
 * until the deletes begin, and of the new list from then on), and an
 * address allowed by neither never is. If an insert fails, the inserted
 * keys the old list did not have are deleted again (the old list stays)
 * and a negative errno is returned with why set.
 */
int mmp_allow_set_apply(const struct mmp_allow_set *set, int fd4, int fd6, struct mmp_allow_change *chg, char *why,
			size_t why_len);

void mmp_allow_set_free(struct mmp_allow_set *set);

#endif
