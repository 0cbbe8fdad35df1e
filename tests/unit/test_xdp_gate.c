// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the XDP gate (bpf/xdp_gate.bpf.c), run through
 * BPF_PROG_TEST_RUN with a table of hand-built frames: each case loads a
 * fresh skeleton (listen port 8443, TCP or UDP, any destination unless the
 * case names one), allows 10.0.0.0/24 and 2001:db8:1::/48 in the skeleton's
 * own tries, runs one frame and checks the verdict and that exactly one
 * counter moved, the expected one.
 *
 * A frame shorter than Ethernet cannot be run: test_run refuses it (EINVAL)
 * before the program sees it, which the "runt" case asserts. Needs root.
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
#include <linux/if_link.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "mmp_maps.h"
#include "mmp_xdp.h"
#include "lib/percpu.h"
#include "xdp_gate.skel.h"

#define XDP_DROP 1
#define XDP_PASS 2
#define PORT 8443
#define SYN 0x02
#define ACK 0x10

#define TCP_UDP 0x100 /* -p tcp,udp: gate_proto TCP, gate_proto2 UDP */

enum frag { NO_FRAG, FIRST_FRAG, LATER_FRAG };

struct gate_case {
	const char *name;
	int listen_proto; /* the gate's protocol: IPPROTO_TCP, IPPROTO_UDP or TCP_UDP */
	const char *listen; /* NULL: any destination; else the one address judged */
	int family; /* 4 or 6 */
	const char *src, *dst;
	int proto; /* IPPROTO_TCP, _UDP, _ICMP */
	uint16_t dport;
	uint8_t tcp_flags;
	uint16_t vlan; /* 0, or the TPID of one tag: 0x8100 or 0x88A8 */
	uint8_t ip_opts; /* IPv4 option bytes (multiple of 4) */
	enum frag frag;
	size_t cut; /* 0: whole frame; else the frame is cut to this many bytes */
	int verdict;
	enum mmp_xdp_counter counter;
};

static struct xdp_gate_bpf *skel;

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xFF;
}

static size_t build(uint8_t *p, const struct gate_case *c)
{
	size_t n = 12, l3, l4;
	size_t l4_len = c->proto == IPPROTO_TCP ? 20 : 8;
	int af = c->family == 4 ? AF_INET : AF_INET6;

	memset(p, 0, 512);
	memset(p, 0x02, 12); /* MACs */
	if (c->vlan) {
		put16(p + n, c->vlan);
		put16(p + n + 2, 42);
		n += 4;
	}
	put16(p + n, c->family == 4 ? 0x0800 : 0x86DD);
	l3 = n + 2;
	if (c->family == 4) {
		p[l3] = 0x40 | (5 + c->ip_opts / 4);
		l4 = l3 + 20 + c->ip_opts;
		memset(p + l3 + 20, 0x01, c->ip_opts); /* NOP options */
		put16(p + l3 + 2, (uint16_t)(l4 - l3 + l4_len));
		put16(p + l3 + 6, c->frag == FIRST_FRAG ? 0x2000 : c->frag == LATER_FRAG ? 185 : 0);
		p[l3 + 8] = 64;
		p[l3 + 9] = (uint8_t)c->proto;
		assert_int_equal(inet_pton(af, c->src, p + l3 + 12), 1);
		assert_int_equal(inet_pton(af, c->dst, p + l3 + 16), 1);
	} else {
		p[l3] = 0x60;
		p[l3 + 7] = 64;
		assert_int_equal(inet_pton(af, c->src, p + l3 + 8), 1);
		assert_int_equal(inet_pton(af, c->dst, p + l3 + 24), 1);
		l4 = l3 + 40;
		if (c->frag != NO_FRAG) {
			p[l3 + 6] = 44; /* fragment header */
			p[l4] = (uint8_t)c->proto;
			put16(p + l4 + 2, c->frag == FIRST_FRAG ? 1 : 185 << 3);
			l4 += 8;
		} else {
			p[l3 + 6] = (uint8_t)c->proto;
		}
		put16(p + l3 + 4, (uint16_t)(l4 - l3 - 40 + l4_len));
	}
	put16(p + l4, 40000); /* source port */
	put16(p + l4 + 2, c->dport);
	if (c->proto == IPPROTO_TCP) {
		p[l4 + 12] = 5 << 4;
		p[l4 + 13] = c->tcp_flags;
	} else if (c->proto == IPPROTO_UDP) {
		put16(p + l4 + 4, 8);
	}
	n = l4 + l4_len;
	return c->cut ? c->cut : n;
}

static void allow(int family, const char *addr, uint32_t prefixlen)
{
	struct mmp_allow_value v = { .line = 1 };

	if (family == 4) {
		struct mmp_allow4_key k = { .prefixlen = prefixlen };

		assert_int_equal(inet_pton(AF_INET, addr, k.addr), 1);
		assert_int_equal(bpf_map__update_elem(skel->maps.mmp_allow4, &k, sizeof(k), &v, sizeof(v), BPF_ANY), 0);
	} else {
		struct mmp_allow6_key k = { .prefixlen = prefixlen };

		assert_int_equal(inet_pton(AF_INET6, addr, k.addr), 1);
		assert_int_equal(bpf_map__update_elem(skel->maps.mmp_allow6, &k, sizeof(k), &v, sizeof(v), BPF_ANY), 0);
	}
}

static void load(const struct gate_case *c)
{
	int err;

	skel = xdp_gate_bpf__open();
	assert_non_null(skel);
	skel->rodata->gate_proto = c->listen_proto == TCP_UDP ? IPPROTO_TCP : (uint8_t)c->listen_proto;
	skel->rodata->gate_proto2 = c->listen_proto == TCP_UDP ? IPPROTO_UDP : 0;
	skel->rodata->port_lo = PORT;
	skel->rodata->port_hi = PORT;
	skel->rodata->match4 = skel->rodata->match6 = 1;
	if (c->listen && strchr(c->listen, ':')) {
		skel->rodata->match4 = 0;
		skel->rodata->match6 = 2;
		assert_int_equal(inet_pton(AF_INET6, c->listen, (void *)skel->rodata->dst6), 1);
	} else if (c->listen) {
		skel->rodata->match4 = 2;
		skel->rodata->match6 = 0;
		assert_int_equal(inet_pton(AF_INET, c->listen, (void *)skel->rodata->dst4), 1);
	}
	err = xdp_gate_bpf__load(skel);
	if (err)
		fail_msg("xdp_gate_bpf__load: %s (the verifier log is above)", strerror(-err));
	allow(4, "10.0.0.0", 24);
	allow(6, "2001:db8:1::", 48);
}

static void read_counters(uint64_t out[MMP_XDP_CNT_MAX])
{
	int fd = bpf_map__fd(skel->maps.mmp_xdp_cnt);

	for (uint32_t i = 0; i < MMP_XDP_CNT_MAX; i++)
		assert_int_equal(mmp_percpu_sum(fd, i, &out[i]), 0);
}

static void test_case(void **state)
{
	const struct gate_case *c = *state;
	uint64_t cnt[MMP_XDP_CNT_MAX];
	uint8_t in[512];
	size_t len;
	int err;

	if (geteuid() != 0)
		skip();
	load(c);
	len = build(in, c);
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len, .repeat = 1);
	err = bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mmp_xdp_gate), &opts);
	if (len < 14) {
		/* A runt never reaches the program in test_run (see the file comment). */
		assert_int_equal(err, -EINVAL);
		return;
	}
	assert_int_equal(err, 0);
	assert_int_equal((int)opts.retval, c->verdict);
	read_counters(cnt);
	for (int i = 0; i < MMP_XDP_CNT_MAX; i++)
		assert_int_equal(cnt[i], i == (int)c->counter ? 1 : 0);
}

static int teardown(void **state)
{
	xdp_gate_bpf__destroy(skel);
	skel = NULL;
	return 0;
}

#define T IPPROTO_TCP
#define U IPPROTO_UDP
#define OK4 "10.0.0.7"
#define BAD4 "192.0.2.9"
#define OK6 "2001:db8:1::7"
#define BAD6 "2001:db8:2::9"
#define D4 "10.1.0.1"
#define D6 "2001:db8:ff::1"
#define PASS XDP_PASS, MMP_XDP_CNT_passed
#define DROP XDP_DROP, MMP_XDP_CNT_dropped_not_allowed
#define OTHER XDP_PASS, MMP_XDP_CNT_passed_other
#define BAD XDP_PASS, MMP_XDP_CNT_malformed

static const struct gate_case cases[] = {
	{ "IPv4 SYN from an allowed source", T, NULL, 4, OK4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, PASS },
	{ "IPv4 SYN from a source not allowed", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, DROP },
	{ "IPv6 SYN from an allowed source", T, NULL, 6, OK6, D6, T, PORT, SYN, 0, 0, NO_FRAG, 0, PASS },
	{ "IPv6 SYN from a source not allowed", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, NO_FRAG, 0, DROP },
	{ "IPv4 SYN-ACK: not judged", T, NULL, 4, BAD4, D4, T, PORT, SYN | ACK, 0, 0, NO_FRAG, 0, OTHER },
	{ "IPv4 ACK (an established flow): not judged", T, NULL, 4, BAD4, D4, T, PORT, ACK, 0, 0, NO_FRAG, 0, OTHER },
	{ "IPv4 SYN to another port", T, NULL, 4, BAD4, D4, T, 22, SYN, 0, 0, NO_FRAG, 0, OTHER },
	{ "IPv6 SYN to another port", T, NULL, 6, BAD6, D6, T, 22, SYN, 0, 0, NO_FRAG, 0, OTHER },
	{ "IPv4 SYN to another address than -l", T, "10.1.0.2", 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, OTHER },
	{ "IPv4 SYN to the -l address", T, "10.1.0.1", 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, DROP },
	{ "IPv6 SYN to the -l address", T, D6, 6, BAD6, D6, T, PORT, SYN, 0, 0, NO_FRAG, 0, DROP },
	{ "IPv4 SYN to an IPv6 -l: not judged", T, D6, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, OTHER },
	{ "802.1Q IPv4 SYN not allowed", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0x8100, 0, NO_FRAG, 0, DROP },
	{ "802.1ad IPv6 SYN allowed", T, NULL, 6, OK6, D6, T, PORT, SYN, 0x88A8, 0, NO_FRAG, 0, PASS },
	{ "IPv4 options (ihl 8), SYN not allowed", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 12, NO_FRAG, 0, DROP },
	{ "IPv4 options (ihl 15), SYN allowed", T, NULL, 4, OK4, D4, T, PORT, SYN, 0, 40, NO_FRAG, 0, PASS },
	{ "IPv4 first fragment: judged on its ports", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, FIRST_FRAG, 0, DROP },
	{ "IPv4 later fragment: passed", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, LATER_FRAG, 0, OTHER },
	{ "IPv6 first fragment: judged on its ports", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, FIRST_FRAG, 0, DROP },
	{ "IPv6 later fragment: passed", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, LATER_FRAG, 0, OTHER },
	{ "ICMP: not judged", T, NULL, 4, BAD4, D4, IPPROTO_ICMP, 0, 0, 0, 0, NO_FRAG, 0, OTHER },
	{ "UDP to a TCP gate: not judged", T, NULL, 4, BAD4, D4, U, PORT, 0, 0, 0, NO_FRAG, 0, OTHER },
	{ "UDP from an allowed source", U, NULL, 4, OK4, D4, U, PORT, 0, 0, 0, NO_FRAG, 0, PASS },
	{ "UDP from a source not allowed", U, NULL, 4, BAD4, D4, U, PORT, 0, 0, 0, NO_FRAG, 0, DROP },
	{ "UDP6 from a source not allowed", U, NULL, 6, BAD6, D6, U, PORT, 0, 0, 0, NO_FRAG, 0, DROP },
	{ "UDP to another port", U, NULL, 4, BAD4, D4, U, 53, 0, 0, 0, NO_FRAG, 0, OTHER },
	{ "TCP SYN to a UDP gate: not judged", U, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, OTHER },
	{ "tcp,udp gate: SYN not allowed", TCP_UDP, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 0, DROP },
	{ "tcp,udp gate: UDP not allowed", TCP_UDP, NULL, 4, BAD4, D4, U, PORT, 0, 0, 0, NO_FRAG, 0, DROP },
	{ "tcp,udp gate: UDP6 not allowed", TCP_UDP, NULL, 6, BAD6, D6, U, PORT, 0, 0, 0, NO_FRAG, 0, DROP },
	{ "tcp,udp gate: UDP allowed", TCP_UDP, NULL, 4, OK4, D4, U, PORT, 0, 0, 0, NO_FRAG, 0, PASS },
	{ "tcp,udp gate: SYN6 allowed", TCP_UDP, NULL, 6, OK6, D6, T, PORT, SYN, 0, 0, NO_FRAG, 0, PASS },
	{ "tcp,udp gate: ICMP not judged", TCP_UDP, NULL, 4, BAD4, D4, IPPROTO_ICMP, 0, 0, 0, 0, NO_FRAG, 0, OTHER },
	{ "runt (10 bytes): refused by test_run", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 10, BAD },
	{ "VLAN tag cut short", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0x8100, 0, NO_FRAG, 16, BAD },
	{ "IPv4 header cut short", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 14 + 19, BAD },
	{ "IPv4 options cut short", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 40, NO_FRAG, 14 + 40, BAD },
	{ "IPv6 header cut short", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, NO_FRAG, 14 + 39, BAD },
	{ "TCP header cut short", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, NO_FRAG, 14 + 20 + 13, BAD },
	{ "TCP6 header cut short", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, NO_FRAG, 14 + 40 + 19, BAD },
	{ "UDP header cut short", U, NULL, 4, BAD4, D4, U, PORT, 0, 0, 0, NO_FRAG, 14 + 20 + 7, BAD },
	{ "IPv4 tiny first fragment (ports, no flags) not allowed: dropped", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0,
	  FIRST_FRAG, 14 + 20 + 8, DROP },
	{ "IPv4 tiny first fragment from an allowed source", T, NULL, 4, OK4, D4, T, PORT, SYN, 0, 0, FIRST_FRAG,
	  14 + 20 + 8, PASS },
	{ "IPv6 tiny first fragment not allowed: dropped", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, FIRST_FRAG,
	  14 + 40 + 8 + 8, DROP },
	{ "IPv4 tiny first fragment to another port", T, NULL, 4, BAD4, D4, T, 22, SYN, 0, 0, FIRST_FRAG, 14 + 20 + 8, BAD },
	{ "IPv4 first fragment cut inside the ports", T, NULL, 4, BAD4, D4, T, PORT, SYN, 0, 0, FIRST_FRAG, 14 + 20 + 3, BAD },
	{ "IPv6 fragment header cut short", T, NULL, 6, BAD6, D6, T, PORT, SYN, 0, 0, FIRST_FRAG, 14 + 40 + 7, BAD },
};

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];

	if (geteuid() != 0)
		fprintf(stderr, "test_xdp_gate: not root: the BPF cases are skipped (BPF_PROG_TEST_RUN needs root)\n");
	for (size_t i = 0; i < n; i++)
		tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_case,
						.teardown_func = teardown, .initial_state = (void *)&cases[i] };
	return _cmocka_run_group_tests("xdp_gate", tests, n, NULL, NULL);
}
