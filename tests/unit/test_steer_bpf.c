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

/*
 * ICMP errors about the packets a spoofed socket sent (docs/DESIGN.md §14,
 * "ICMP errors"): from a router (10.99.0.254 / 2001:db8:99::fe) to the
 * client, quoting client ip:port -> upstream ip:port.
 */
struct icmp_case {
	const char *name;
	int family;
	uint8_t type, code;
	const char *dst; /* the error's destination */
	const char *q_src, *q_dst; /* the quoted packet's */
	uint16_t q_sport, q_dport;
	int q_proto;
	bool marked;
	int counter;
};

static const struct icmp_case icmp_cases[] = {
	{ "IPv4 fragmentation needed about a recorded connection's segment: marked", 4, 3, 4, "192.0.2.77",
	  "192.0.2.77", "10.99.0.2", CLIENT_PORT, UP_PORT, IPPROTO_TCP, true, MMP_STEER_CNT_icmp_marked },
	{ "ICMPv6 packet too big about a recorded connection's segment: marked", 6, 2, 0, "2001:db8:77::77",
	  "2001:db8:77::77", "2001:db8:99::2", CLIENT_PORT, UP_PORT, IPPROTO_TCP, true, MMP_STEER_CNT_icmp_marked },
	{ "IPv4 port unreachable quoting another client port: looked up, untouched", 4, 3, 3, "192.0.2.77",
	  "192.0.2.77", "10.99.0.2", CLIENT_PORT + 1, UP_PORT, IPPROTO_TCP, false, MMP_STEER_CNT_passed },
	{ "IPv4 error sent elsewhere than the quoted source: untouched", 4, 3, 4, "192.0.2.78", "192.0.2.77",
	  "10.99.0.2", CLIENT_PORT, UP_PORT, IPPROTO_TCP, false, -1 },
	{ "IPv4 error about the container's own packet (another port): untouched, no lookup", 4, 11, 0,
	  "192.0.2.77", "192.0.2.77", "10.99.0.2", CLIENT_PORT, 80, IPPROTO_TCP, false, -1 },
	{ "IPv4 echo reply (not an error) that quotes a tuple: untouched", 4, 0, 0, "192.0.2.77", "192.0.2.77",
	  "10.99.0.2", CLIENT_PORT, UP_PORT, IPPROTO_TCP, false, -1 },
	{ "ICMPv6 echo reply (not an error): untouched", 6, 129, 0, "2001:db8:77::77", "2001:db8:77::77",
	  "2001:db8:99::2", CLIENT_PORT, UP_PORT, IPPROTO_TCP, false, -1 },
};

static size_t build_icmp(uint8_t *p, const struct icmp_case *c)
{
	bool v6 = c->family == 6;
	int af = v6 ? AF_INET6 : AF_INET;
	size_t ip_len = v6 ? 40 : 20, icmp = 14 + ip_len, inner = icmp + 8, inner_l4 = inner + ip_len;
	size_t total = inner_l4 + 8;

	memset(p, 0, 256);
	memset(p, 0x02, 12);
	put16(p + 12, v6 ? 0x86DD : 0x0800);
	if (v6) {
		p[14] = 0x60;
		put16(p + 18, (uint16_t)(total - 14 - 40));
		p[20] = IPPROTO_ICMPV6;
		p[21] = 64;
		inet_pton(af, "2001:db8:99::fe", p + 22);
		inet_pton(af, c->dst, p + 38);
		p[inner] = 0x60;
		put16(p + inner + 4, 20);
		p[inner + 6] = (uint8_t)c->q_proto;
		p[inner + 7] = 64;
		inet_pton(af, c->q_src, p + inner + 8);
		inet_pton(af, c->q_dst, p + inner + 24);
	} else {
		p[14] = 0x45;
		put16(p + 16, (uint16_t)(total - 14));
		p[22] = 64;
		p[23] = IPPROTO_ICMP;
		inet_pton(af, "10.99.0.254", p + 26);
		inet_pton(af, c->dst, p + 30);
		p[inner] = 0x45;
		put16(p + inner + 2, 40);
		p[inner + 8] = 64;
		p[inner + 9] = (uint8_t)c->q_proto;
		inet_pton(af, c->q_src, p + inner + 12);
		inet_pton(af, c->q_dst, p + inner + 16);
	}
	p[icmp] = c->type;
	p[icmp + 1] = c->code;
	put16(p + inner_l4, c->q_sport);
	put16(p + inner_l4 + 2, c->q_dport);
	return total;
}

/* Run the program on in (len bytes): it passes, rewrites nothing; its mark and the counter that moved, checked. */
static void run_prog(const uint8_t *in, size_t len, bool marked, int moved)
{
	uint8_t out[256];
	struct __sk_buff ctx = { 0 }, ctx_out = { 0 };
	uint64_t before[MMP_STEER_CNT_MAX];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);

	for (int i = 0; i < MMP_STEER_CNT_MAX; i++)
		before[i] = counter(i);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mmp_steer_in), &opts), 0);
	assert_int_equal((int)opts.retval, TC_ACT_UNSPEC);
	assert_int_equal(ctx_out.mark, marked ? MMP_STEER_MARK : 0);
	assert_int_equal(opts.data_size_out, len); /* nothing rewritten in length */
	assert_memory_equal(out, in, len); /* nor in content */
	for (int i = 0; i < MMP_STEER_CNT_MAX; i++)
		assert_int_equal(counter(i) - before[i], i == moved ? 1 : 0);
}

static void run_icmp_case(void **state)
{
	const struct icmp_case *c = *state;
	uint8_t in[256];

	run_prog(in, build_icmp(in, c), c->marked, c->counter);
}

static void run_case(void **state)
{
	const struct steer_case *c = *state;
	uint8_t in[256];

	run_prog(in, build(in, c), c->marked, c->counter);
}

#define N_CASES (sizeof(cases) / sizeof(cases[0]))
#define N_ICMP (sizeof(icmp_cases) / sizeof(icmp_cases[0]))

int main(void)
{
	struct CMUnitTest tests[N_CASES + N_ICMP];

	for (size_t i = 0; i < N_CASES; i++)
		tests[i] = (struct CMUnitTest){ cases[i].name, run_case, NULL, NULL, (void *)&cases[i] };
	for (size_t i = 0; i < N_ICMP; i++)
		tests[N_CASES + i] = (struct CMUnitTest){ icmp_cases[i].name, run_icmp_case, NULL, NULL, (void *)&icmp_cases[i] };
	return cmocka_run_group_tests(tests, setup, teardown);
}
