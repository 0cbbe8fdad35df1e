// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the reply-steering program (bpf/steer.bpf.c,
 * docs/DESIGN.md §14), run through BPF_PROG_TEST_RUN with hand-built frames:
 * one skeleton, the upstream port 9000 marked, one TCP tuple per family in
 * mmp_reply_steer (10.99.0.2:9000 -> 192.0.2.77:20000, and IPv6 alike). Each
 * case checks the verdict (always TC_ACT_UNSPEC: the next filter decides),
 * the mark the packet leaves with, and which counter moved. Needs root.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <netinet/in.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h"
#include "mmp_steer.h"
#include "steer.skel.h"

#define UP_PORT 9000
#define CLIENT_PORT 20000

struct steer_case {
	const char *name;
	int family; /* 4 or 6 */
	const char *src, *dst; /* the packet's: a reply goes from the upstream to the client */
	uint16_t sport, dport;
	int proto;
	bool later_frag;
	bool marked;
	int counter; /* the one that moved, -1: none */
};

static struct steer_bpf *skel;

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xFF;
}

static size_t build(uint8_t *p, const struct steer_case *c)
{
	size_t l4 = c->family == 4 ? 14 + 20 : 14 + 40, l4_len = c->proto == IPPROTO_TCP ? 20 : 8;

	memset(p, 0, 256);
	memset(p, 0x02, 12);
	put16(p + 12, c->family == 4 ? 0x0800 : 0x86DD);
	if (c->family == 4) {
		p[14] = 0x45;
		put16(p + 16, (uint16_t)(20 + l4_len));
		if (c->later_frag)
			put16(p + 20, 185); /* offset 1480 */
		p[22] = 64;
		p[23] = (uint8_t)c->proto;
		inet_pton(AF_INET, c->src, p + 26);
		inet_pton(AF_INET, c->dst, p + 30);
	} else {
		p[14] = 0x60;
		put16(p + 18, (uint16_t)l4_len);
		p[20] = (uint8_t)c->proto;
		p[21] = 64;
		inet_pton(AF_INET6, c->src, p + 22);
		inet_pton(AF_INET6, c->dst, p + 38);
	}
	put16(p + l4, c->sport);
	put16(p + l4 + 2, c->dport);
	if (c->proto == IPPROTO_TCP)
		p[l4 + 12] = 0x50;
	return l4 + l4_len;
}

static uint64_t counter(int idx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t v[512] = { 0 }, sum = 0;
	uint32_t k = (uint32_t)idx;

	assert_true(ncpu > 0 && ncpu <= 512);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mmp_steer_cnt), &k, v), 0);
	for (int i = 0; i < ncpu; i++)
		sum += v[i];
	return sum;
}

static void add_tuple(int family, const char *up, const char *client, uint64_t closed_ns)
{
	struct mmp_steer_key k = { .family = family == 4 ? AF_INET : AF_INET6, .proto = IPPROTO_TCP };
	struct mmp_steer_val v = { .owner = 1, .closed_ns = closed_ns };

	k.up_port = htons(UP_PORT);
	k.client_port = htons(CLIENT_PORT);
	inet_pton(family == 4 ? AF_INET : AF_INET6, up, k.up_addr);
	inet_pton(family == 4 ? AF_INET : AF_INET6, client, k.client_addr);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_reply_steer), &k, &v, BPF_ANY), 0);
}

static int setup(void **state)
{
	skel = steer_bpf__open_and_load();
	if (!skel)
		return -1;
	skel->bss->mmp_steer_ports[UP_PORT >> 5] |= 1U << (UP_PORT & 31);
	add_tuple(4, "10.99.0.2", "192.0.2.77", 0);
	add_tuple(6, "2001:db8:99::2", "2001:db8:77::77", 0);
	add_tuple(4, "10.99.0.3", "192.0.2.77", 12345); /* a closed connection, lingering */
	return 0;
}

static int teardown(void **state)
{
	steer_bpf__destroy(skel);
	return 0;
}

static const struct steer_case cases[] = {
	{ "IPv4 reply of a recorded tuple: marked", 4, "10.99.0.2", "192.0.2.77", UP_PORT, CLIENT_PORT, IPPROTO_TCP,
	  false, true, MMP_STEER_CNT_marked },
	{ "IPv6 reply of a recorded tuple: marked", 6, "2001:db8:99::2", "2001:db8:77::77", UP_PORT, CLIENT_PORT,
	  IPPROTO_TCP, false, true, MMP_STEER_CNT_marked },
	{ "a lingering (closed) tuple: still marked, counted late", 4, "10.99.0.3", "192.0.2.77", UP_PORT,
	  CLIENT_PORT, IPPROTO_TCP, false, true, MMP_STEER_CNT_marked_late },
	{ "same addresses, another client port: untouched", 4, "10.99.0.2", "192.0.2.77", UP_PORT, CLIENT_PORT + 1,
	  IPPROTO_TCP, false, false, MMP_STEER_CNT_passed },
	{ "UDP with a TCP tuple's ports: untouched", 4, "10.99.0.2", "192.0.2.77", UP_PORT, CLIENT_PORT,
	  IPPROTO_UDP, false, false, MMP_STEER_CNT_passed },
	{ "the container's own traffic (another source port): untouched, no lookup", 4, "10.99.0.2", "192.0.2.77",
	  45000, 80, IPPROTO_TCP, false, false, -1 },
	{ "the reverse direction (to the upstream): untouched", 4, "192.0.2.77", "10.99.0.2", CLIENT_PORT, UP_PORT,
	  IPPROTO_TCP, false, false, -1 },
	/* Its first bytes spell a recorded tuple's ports: read as ports, it would be marked. */
	{ "an IPv4 later fragment: no ports, untouched", 4, "10.99.0.2", "192.0.2.77", UP_PORT, CLIENT_PORT,
	  IPPROTO_TCP, true, false, -1 },
	{ "ICMP: untouched", 4, "10.99.0.2", "192.0.2.77", UP_PORT, CLIENT_PORT, IPPROTO_ICMP, false, false, -1 },
};

static void run_case(void **state)
{
	const struct steer_case *c = *state;
	uint8_t in[256], out[256];
	struct __sk_buff ctx = { 0 }, ctx_out = { 0 };
	uint64_t before[MMP_STEER_CNT_MAX];
	size_t len = build(in, c);
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);

	for (int i = 0; i < MMP_STEER_CNT_MAX; i++)
		before[i] = counter(i);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mmp_steer_in), &opts), 0);
	assert_int_equal((int)opts.retval, TC_ACT_UNSPEC);
	assert_int_equal(ctx_out.mark, c->marked ? MMP_STEER_MARK : 0);
	assert_int_equal(opts.data_size_out, len); /* nothing rewritten in length */
	assert_memory_equal(out, in, len); /* nor in content */
	for (int i = 0; i < MMP_STEER_CNT_MAX; i++)
		assert_int_equal(counter(i) - before[i], i == c->counter ? 1 : 0);
}

int main(void)
{
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		tests[i] = (struct CMUnitTest){ cases[i].name, run_case, NULL, NULL, (void *)&cases[i] };
	return cmocka_run_group_tests(tests, setup, teardown);
}
