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

/* Sorted by family, then key bytes: lookups while swapping are binary searches (65536 entries per family). */
static int cmp_entry(const void *pa, const void *pb)
{
	const struct mmp_allow_entry *a = pa, *b = pb;
	struct any_key ka, kb;

	if (a->cidr.family != b->cidr.family)
		return a->cidr.family < b->cidr.family ? -1 : 1;
	make_key(&a->cidr, &ka);
	make_key(&b->cidr, &kb);
	return memcmp(&ka, &kb, sizeof(ka));
}

static bool set_has(const struct mmp_allow_set *set, int family, const struct any_key *k)
{
	struct mmp_allow_entry probe = { .cidr = { .family = family, .prefixlen = k->prefixlen } };

	memcpy(probe.cidr.addr, k->addr, family == AF_INET ? 4 : 16);
	return bsearch(&probe, set->v, set->n, sizeof(*set->v), cmp_entry) != NULL;
}

static int collect(const struct mmp_cidr *cidr, unsigned int lineno, void *ctx)
{
	struct mmp_allow_set *set = ctx;

	/* Bounded before the sort (repeats count here): four times the per-family limit. */
	if (set->n >= 4 * (size_t)MMP_ALLOW_MAX_ENTRIES)
		return -E2BIG;
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		void *v = realloc(set->v, cap * sizeof(*set->v));

		if (!v)
			return -ENOMEM;
		set->v = v;
		set->cap = cap;
	}
	set->v[set->n++] = (struct mmp_allow_entry){ .cidr = *cidr, .line = lineno };
	return 0;
}

/* Sort, drop repeated prefixes (the first line listing one names it), count per family. */
static int normalise(struct mmp_allow_set *set)
{
	size_t out = 0;

	if (set->n)
		qsort(set->v, set->n, sizeof(*set->v), cmp_entry);
	for (size_t i = 0; i < set->n; i++) {
		if (out && !cmp_entry(&set->v[out - 1], &set->v[i])) {
			if (set->v[i].line < set->v[out - 1].line)
				set->v[out - 1].line = set->v[i].line;
			continue;
		}
		set->v[out++] = set->v[i];
		if (set->v[i].cidr.family == AF_INET)
			set->n4++;
		else
			set->n6++;
	}
	set->n = out;
	return set->n4 > MMP_ALLOW_MAX_ENTRIES || set->n6 > MMP_ALLOW_MAX_ENTRIES ? -E2BIG : 0;
}

int mmp_allow_set_read(const char *path, struct mmp_allow_set *set, char *why, size_t why_len)
{
	int n;

	memset(set, 0, sizeof(*set));
	n = mmp_allowlist_parse(path, collect, set, why, why_len);
	if (n >= 0)
		n = normalise(set);
	if (n == -E2BIG)
		snprintf(why, why_len, "%s: more than %u subnets of one family (merge them into wider prefixes)", path,
			 MMP_ALLOW_MAX_ENTRIES);
	if (n < 0) {
		mmp_allow_set_free(set);
		return n;
	}
	return 0;
}

static int cmp_key(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct any_key));
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
	if (n)
		qsort(v, n, sizeof(*v), cmp_key);
	*out = v;
	*n_out = n;
	return 0;
}

/* The old keys are sorted (snapshot) and zero-padded, so one memcmp compares either family. */
static bool list_has(const struct any_key *v, size_t n, const struct any_key *k, size_t len)
{
	return n && bsearch(k, v, n, sizeof(*v), cmp_key) != NULL;
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
