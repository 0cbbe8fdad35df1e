// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the tc engine's sweep of finished flows, mmp_tc_collect
 * (user/engine/tc/tc_flows.c), against real BPF hash maps shaped as
 * mmp_tc_flows and mmp_tc_tuples (no program is loaded).
 *
 * The sweep runs once a second on a loop that also accepts connections.
 * Asserted: which flows it removes (finished and past the linger, idle past
 * the timeout, orphaned hand-offs) with all their tuples, which it keeps,
 * and that reading 5,000 flows takes at most a bpf() call per 256 of them:
 * walked one entry at a time it took two per flow, 200,000 calls a second
 * with 100,000 flows held (bench/scale.sh, docs/benchmarks.md "Scale").
 * The tick's steps (mmp_tc_collect_step) each read a bounded part and
 * together cover the map once.
 * The bpf() calls are counted with --wrap (tests/unit/unit.mk).
 *
 * Needs root (BPF maps); skipped otherwise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "core/clock.h"
#include "engine/tc/tc_internal.h"
#include "mmp_tc.h"

#define NFLOWS 5000
#define LINGER_NS (2ULL * 1000000000ULL)
#define SEC_NS 1000000000ULL

/* bpf() calls that read mmp_tc_flows, counted while `counting`. */
static bool counting;
static int flows_map_fd = -1;
static unsigned int flow_reads;

int __real_bpf_map_get_next_key(int fd, const void *key, void *next_key);
int __real_bpf_map_lookup_elem(int fd, const void *key, void *value);
int __real_bpf_map_lookup_batch(int fd, void *in_batch, void *out_batch, void *keys, void *values,
				__u32 *count, const struct bpf_map_batch_opts *opts);

int __wrap_bpf_map_get_next_key(int fd, const void *key, void *next_key)
{
	if (counting && fd == flows_map_fd)
		flow_reads++;
	return __real_bpf_map_get_next_key(fd, key, next_key);
}

int __wrap_bpf_map_lookup_elem(int fd, const void *key, void *value)
{
	if (counting && fd == flows_map_fd)
		flow_reads++;
	return __real_bpf_map_lookup_elem(fd, key, value);
}

int __wrap_bpf_map_lookup_batch(int fd, void *in_batch, void *out_batch, void *keys, void *values,
				__u32 *count, const struct bpf_map_batch_opts *opts)
{
	if (counting && fd == flows_map_fd)
		flow_reads++;
	return __real_bpf_map_lookup_batch(fd, in_batch, out_batch, keys, values, count, opts);
}

static int map_count(int fd, size_t key_size)
{
	uint8_t key[64], next[64];
	void *prev = NULL;
	int n = 0;

	while (__real_bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, key_size);
		prev = key;
		n++;
	}
	return n;
}

struct maps {
	struct mmp_tc tc;
};

static int setup(void **state)
{
	static struct maps m;
	LIBBPF_OPTS(bpf_map_create_opts, no_prealloc, .map_flags = BPF_F_NO_PREALLOC);

	if (geteuid() != 0)
		return 0;
	memset(&m, 0, sizeof(m));
	/* As bpf/tc.bpf.c declares them: the flows without prealloc. */
	m.tc.flows_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_tc_flows", sizeof(__u64), sizeof(struct mmp_tc_flow),
				       2 * NFLOWS, &no_prealloc);
	m.tc.tuples_fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_tc_tuples", sizeof(struct mmp_tc_tuple),
					sizeof(struct mmp_tc_tuple_val), 8 * NFLOWS, NULL);
	if (m.tc.flows_fd < 0 || m.tc.tuples_fd < 0)
		return -1;
	flows_map_fd = m.tc.flows_fd;
	*state = &m;
	return 0;
}

static int teardown(void **state)
{
	struct maps *m = *state;

	if (m) {
		close(m->tc.flows_fd);
		close(m->tc.tuples_fd);
	}
	flows_map_fd = -1;
	return 0;
}

/* Flow i: client 10.x.y.z:i+1024 <-> upstream, its four tuples inserted. */
static void add_flow(struct mmp_tc *tc, uint64_t id, uint32_t mode, uint64_t last_seen, bool ended)
{
	struct mmp_tc_flow f = { .mode = mode };
	struct flow_tuples ft;

	f.down.out.family = 4;
	f.down.out.sport = htons(7000);
	f.down.out.dport = htons((uint16_t)(1024 + id % 60000));
	f.down.out.saddr[0] = 127, f.down.out.saddr[3] = 1;
	f.down.out.daddr[0] = 127, f.down.out.daddr[1] = (uint8_t)(id >> 16), f.down.out.daddr[2] = (uint8_t)(id >> 8);
	f.down.out.daddr[3] = (uint8_t)id;
	f.up.out = f.down.out;
	f.up.out.sport = f.down.out.dport;
	f.up.out.dport = htons(9000);
	f.up.out.saddr[0] = 10, f.up.out.saddr[1] = (uint8_t)(id >> 16), f.up.out.saddr[2] = (uint8_t)(id >> 8);
	f.up.out.saddr[3] = (uint8_t)id;
	f.st.last_seen_ns = last_seen;
	if (ended)
		f.st.fin[0] = f.st.fin[1] = 1;
	assert_int_equal(bpf_map_update_elem(tc->flows_fd, &id, &f, BPF_NOEXIST), 0);
	mmp_tc_tuples_of_flow(&f, &ft);
	for (uint32_t role = 0; role < 4; role++) {
		struct mmp_tc_tuple_val tv = { .flow = id, .role = role };

		assert_int_equal(bpf_map_update_elem(tc->tuples_fd, &ft.t[role], &tv, BPF_NOEXIST), 0);
	}
}

static bool has_flow(struct mmp_tc *tc, uint64_t id)
{
	struct mmp_tc_flow f;

	return __real_bpf_map_lookup_elem(tc->flows_fd, &id, &f) == 0;
}

/*
 * 5,000 flows of five kinds, one in five each: finished past the linger
 * (removed), finished within it, live, idle past --tc-idle-timeout
 * (removed), and live again, but for the first 20 of that fifth: hand-offs
 * left by a previous instance (removed; each walks every tuple).
 */
static void test_sweep(void **state)
{
	struct maps *m = *state;
	struct mmp_tc *tc;
	uint64_t now = mmp_now_ns();
	int removed, kept = 0;

	if (geteuid() != 0)
		skip();
	tc = &m->tc;
	tc->idle_ns = 60 * SEC_NS;
	tc->open_ns = now - SEC_NS;
	for (uint64_t id = 1; id <= NFLOWS; id++) {
		switch (id % 5) {
		case 0: add_flow(tc, id, MMP_TC_MODE_SPLICE, now - 10 * SEC_NS, true); break;
		case 1: add_flow(tc, id, MMP_TC_MODE_SPLICE, now, true); kept++; break;
		case 2: add_flow(tc, id, MMP_TC_MODE_SPLICE, now, false); kept++; break;
		case 3: add_flow(tc, id, MMP_TC_MODE_SPLICE, now - 100 * SEC_NS, false); break;
		case 4:
			if (id <= 100) {
				add_flow(tc, id, MMP_TC_MODE_HOLD, now - 2 * SEC_NS, false);
			} else {
				add_flow(tc, id, MMP_TC_MODE_SPLICE, now, false);
				kept++;
			}
			break;
		}
	}
	flow_reads = 0;
	counting = true;
	removed = mmp_tc_collect(tc, LINGER_NS);
	counting = false;
	assert_int_equal(removed, NFLOWS - kept);
	assert_int_equal(map_count(tc->flows_fd, sizeof(__u64)), kept);
	assert_int_equal(map_count(tc->tuples_fd, sizeof(struct mmp_tc_tuple)), 4 * kept);
	for (uint64_t id = 1; id <= NFLOWS; id++)
		assert_int_equal(has_flow(tc, id), id % 5 == 1 || id % 5 == 2 || (id % 5 == 4 && id > 100));
	/* Removals take their own calls (tuples and the flow's delete); the reads are batched. */
	if (flow_reads > NFLOWS / 256 + 2)
		fail_msg("reading %d flows took %u bpf() calls (at most %d: one per 256)", NFLOWS, flow_reads,
			 NFLOWS / 256 + 2);

	/* Nothing changed since: a second sweep removes nothing. */
	assert_int_equal(mmp_tc_collect(tc, LINGER_NS), 0);
}

/*
 * The tick's sweep, 1024 entries a step over 5,000 flows: each step reads
 * at most its share, the steps go on where the last ended, and one pass
 * removes every finished flow, none twice. A step ends with the batch that
 * passes 1024 entries, and a hash map's batch returns whole buckets, up
 * to 256 entries: a step reads 1024 to 1279, so a pass takes
 * ceil(5000 / 1279) = 4 to ceil(5000 / 1024) = 5 steps, as the buckets
 * fall (the map's hash seed is random: either happens).
 */
static void test_steps(void **state)
{
	struct maps *m = *state;
	struct mmp_tc *tc;
	uint64_t now = mmp_now_ns();
	int removed = 0, steps = 0, r;

	if (geteuid() != 0)
		skip();
	tc = &m->tc;
	for (uint64_t id = 1; id <= NFLOWS; id++)
		add_flow(tc, id, MMP_TC_MODE_SPLICE, id % 5 ? now : now - 10 * SEC_NS, id % 5 == 0);
	do {
		flow_reads = 0;
		counting = true;
		r = mmp_tc_collect_step(tc, LINGER_NS, 1024);
		counting = false;
		/* 1024 entries are 4 batches; the one that passes the bound ends the step. */
		if (flow_reads > 1024 / 256 + 1)
			fail_msg("step %d took %u bpf() reads (at most %d)", steps, flow_reads, 1024 / 256 + 1);
		assert_true(r <= 1024 / 5 + 256);
		removed += r;
		steps++;
	} while (tc->sweep.started && steps < 100);
	assert_in_range(steps, (NFLOWS + 1024 + 255 - 1) / (1024 + 255), (NFLOWS + 1023) / 1024);
	assert_int_equal(removed, NFLOWS / 5);
	assert_int_equal(map_count(tc->flows_fd, sizeof(__u64)), NFLOWS - NFLOWS / 5);
	/* The next pass starts over and finds nothing left to remove. */
	assert_int_equal(mmp_tc_collect_step(tc, LINGER_NS, 1024), 0);
}

static void test_empty(void **state)
{
	struct maps *m = *state;

	if (geteuid() != 0)
		skip();
	assert_int_equal(mmp_tc_collect(&m->tc, LINGER_NS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_empty, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sweep, setup, teardown),
		cmocka_unit_test_setup_teardown(test_steps, setup, teardown),
	};

	if (geteuid() != 0)
		fprintf(stderr, "test_tc_collect: not root: the BPF cases are skipped (BPF maps need root)\n");
	return cmocka_run_group_tests_name("tc_collect", tests, NULL, NULL);
}
