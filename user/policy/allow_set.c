// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include "mmp_maps.h"
#include "policy/allow_set.h"

/* Both families' keys fit one buffer: prefixlen then up to 16 address bytes. */
struct any_key {
	__u32 prefixlen;
	__u8 addr[16];
};

static size_t key_size(int family)
{
	return family == AF_INET ? sizeof(struct mmp_allow4_key) : sizeof(struct mmp_allow6_key);
}

static void make_key(const struct mmp_cidr *c, struct any_key *k)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = c->prefixlen;
	memcpy(k->addr, c->addr, c->family == AF_INET ? 4 : 16);
}

static bool set_has(const struct mmp_allow_set *set, int family, const struct any_key *k)
{
	size_t len = key_size(family);

	for (size_t i = 0; i < set->n; i++) {
		struct any_key e;

		if (set->v[i].cidr.family != family)
			continue;
		make_key(&set->v[i].cidr, &e);
		if (!memcmp(&e, k, len))
			return true;
	}
	return false;
}

static int collect(const struct mmp_cidr *cidr, unsigned int lineno, void *ctx)
{
	struct mmp_allow_set *set = ctx;
	struct any_key k;

	make_key(cidr, &k);
	if (set_has(set, cidr->family, &k))
		return 0; /* listed twice: one key */
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		void *v = realloc(set->v, cap * sizeof(*set->v));

		if (!v)
			return -ENOMEM;
		set->v = v;
		set->cap = cap;
	}
	set->v[set->n++] = (struct mmp_allow_entry){ .cidr = *cidr, .line = lineno };
	if (cidr->family == AF_INET)
		set->n4++;
	else
		set->n6++;
	if (set->n4 > MMP_ALLOW_MAX_ENTRIES || set->n6 > MMP_ALLOW_MAX_ENTRIES)
		return -E2BIG;
	return 0;
}

int mmp_allow_set_read(const char *path, struct mmp_allow_set *set, char *why, size_t why_len)
{
	int n;

	memset(set, 0, sizeof(*set));
	n = mmp_allowlist_parse(path, collect, set, why, why_len);
	if (n == -E2BIG)
		snprintf(why, why_len, "%s: more than %u subnets of one family (merge them into wider prefixes)", path,
			 MMP_ALLOW_MAX_ENTRIES);
	if (n < 0) {
		mmp_allow_set_free(set);
		return n;
	}
	return 0;
}

/* Every key one map holds now (the old list), so a failed insert can be undone. */
static int snapshot(int fd, int family, struct any_key **out, size_t *n_out)
{
	struct any_key k, next, *v = NULL;
	size_t n = 0, cap = 0, len = key_size(family);
	void *prev = NULL;

	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		if (n == cap) {
			void *nv = realloc(v, (cap = cap ? cap * 2 : 64) * sizeof(*v));

			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		memset(&v[n], 0, sizeof(v[n]));
		memcpy(&v[n], &next, len);
		k = v[n++];
		prev = &k;
	}
	*out = v;
	*n_out = n;
	return 0;
}

static bool list_has(const struct any_key *v, size_t n, const struct any_key *k, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (!memcmp(&v[i], k, len))
			return true;
	return false;
}

int mmp_allow_set_apply(const struct mmp_allow_set *set, int fd4, int fd6, struct mmp_allow_change *chg, char *why,
			size_t why_len)
{
	struct any_key *old[2] = { NULL, NULL };
	size_t n_old[2] = { 0, 0 }, done = 0;
	const int fam[2] = { AF_INET, AF_INET6 }, fd[2] = { fd4, fd6 };
	int err;

	memset(chg, 0, sizeof(*chg));
	for (int f = 0; f < 2; f++) {
		err = snapshot(fd[f], fam[f], &old[f], &n_old[f]);
		if (err) {
			snprintf(why, why_len, "failed to read the current subnets: %s", strerror(-err));
			goto out;
		}
	}
	/* 1. Insert: the maps now hold old ∪ new; nothing allowed before is refused. */
	for (done = 0; done < set->n; done++) {
		const struct mmp_allow_entry *e = &set->v[done];
		struct mmp_allow_value val = { .line = e->line };
		int f = e->cidr.family == AF_INET ? 0 : 1;
		struct any_key k;

		make_key(&e->cidr, &k);
		if (!list_has(old[f], n_old[f], &k, key_size(fam[f])))
			chg->added++;
		if (bpf_map_update_elem(fd[f], &k, &val, BPF_ANY)) {
			err = -errno;
			snprintf(why, why_len, "line %u: failed to add the subnet to %s: %s", e->line,
				 f ? MMP_ALLOW6_MAP : MMP_ALLOW4_MAP, strerror(-err));
			goto undo;
		}
	}
	/* 2. Delete what the file no longer lists: the maps hold new ∪ (old not yet deleted). */
	for (int f = 0; f < 2; f++)
		for (size_t i = 0; i < n_old[f]; i++)
			if (!set_has(set, fam[f], &old[f][i]) && bpf_map_delete_elem(fd[f], &old[f][i]) == 0)
				chg->removed++;
	err = 0;
	goto out;
undo:
	/* Back to the old list: drop the keys this attempt added (updated old ones stay). */
	for (size_t i = 0; i < done; i++) {
		int f = set->v[i].cidr.family == AF_INET ? 0 : 1;
		struct any_key k;

		make_key(&set->v[i].cidr, &k);
		if (!list_has(old[f], n_old[f], &k, key_size(fam[f])))
			bpf_map_delete_elem(fd[f], &k);
	}
	chg->added = 0;
out:
	free(old[0]);
	free(old[1]);
	return err;
}

void mmp_allow_set_free(struct mmp_allow_set *set)
{
	free(set->v);
	memset(set, 0, sizeof(*set));
}
