// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the tc engine's ICMP error translation (bpf/tc_icmp.h),
 * run through BPF_PROG_TEST_RUN with hand-built fixture packets.
 *
 * Each case loads a fresh skeleton, fills the maps as user/engine/tc/tc_handoff.c leaves
 * them after the switch (the UP and DOWN tuples, a SPLICE flow), runs one
 * Ethernet + IP + ICMP error quoting a conn1 segment through mmp_tc_ingress
 * (or mmp_tc_egress), and compares the result byte by byte with an error
 * built independently from the expected fields: the quote of the upstream's
 * own segment, with seq and ack written out by hand in each case. Checksum
 * bytes are compared through their residuals (this file's own RFC 1071
 * arithmetic): the outer IPv4 header, the quoted IPv4 header, and the ICMP
 * message (ICMPv6 with its pseudo header). The quoted TCP checksum must come
 * out exactly as it went in.
 *
 * Needs root (BPF); skipped otherwise.
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
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h" /* bpf/common.h: the TC verdicts */
#include "mmp_tc.h"
#include "lib/percpu.h"
#include "tc_fixtures.h"
#include "tc.skel.h"

#define ETH_LEN 14
#define ACK 0x10
#define PSH 0x08
#define FLOW_ID 0x0102030405060708ULL
#define LO_IFINDEX 1

/* L = load balancer, P = proxy listen address, C = spoofed client, U = upstream, R = a router. */
enum end { E_L, E_P, E_C, E_U, E_R };

static const char *const addr4[] = { "10.0.0.1", "10.0.0.2", "192.0.2.7", "127.0.0.1", "10.9.9.9" };
static const char *const addr6[] = { "2001:db8::1", "2001:db8::2", "2001:db8:1::7", "::1", "2001:db8:9::9" };

/* The flow's translation of the upstream's direction: conn1 seq = conn2 seq + SEQ_DELTA. */
#define SEQ_DELTA 0x10000100u
#define ACK_DELTA 0xfffff000u

static void end_addr(uint8_t family, enum end e, uint8_t out[16])
{
	memset(out, 0, 16);
	assert_int_equal(inet_pton(family == 4 ? AF_INET : AF_INET6, family == 4 ? addr4[e] : addr6[e], out), 1);
}

static void make_key(uint8_t family, enum end src, uint16_t sport, enum end dst, uint16_t dport,
		     struct mmp_tc_tuple *k)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	k->sport = htons(sport);
	k->dport = htons(dport);
	end_addr(family, src, k->saddr);
	end_addr(family, dst, k->daddr);
}

/* ---------------------------------------------------------------------------
 * Fixture packets
 * ------------------------------------------------------------------------ */

/* A TCP segment as an IP packet (no Ethernet), all checksums right. */
struct seg {
	enum end src, dst;
	uint16_t sport, dport;
	uint32_t seq, ack;
	uint8_t flags;
	bool timestamps; /* NOP NOP TS(tsval 0x11223344, tsecr 0x55667788) */
	uint16_t payload;
	uint8_t ip_opt_words; /* IPv4 options (NOPs), 4 bytes each */
};

static size_t build_seg(uint8_t family, const struct seg *s, uint8_t *b)
{
	uint8_t src[16], dst[16];
	size_t ip_hlen = family == 4 ? 20 + 4u * s->ip_opt_words : 40;
	size_t tcp_hlen = s->timestamps ? 32 : 20;
	size_t len = ip_hlen + tcp_hlen + s->payload;
	uint8_t *t = b + ip_hlen;
	uint64_t sum;

	end_addr(family, s->src, src);
	end_addr(family, s->dst, dst);
	memset(b, 0, len);
	if (family == 4) {
		b[0] = (uint8_t)(0x40 | ip_hlen / 4);
		put16(b + 2, (uint16_t)len);
		put16(b + 4, 0x4242);
		put16(b + 6, 0x4000); /* DF */
		b[8] = 63;
		b[9] = 6;
		memcpy(b + 12, src, 4);
		memcpy(b + 16, dst, 4);
		memset(b + 20, 1, ip_hlen - 20);
		put16(b + 10, (uint16_t)~fold(raw_sum(b, ip_hlen)));
		sum = raw_sum(b + 12, 8);
	} else {
		put32(b, 0x60000000);
		put16(b + 4, (uint16_t)(tcp_hlen + s->payload));
		b[6] = 6;
		b[7] = 63;
		memcpy(b + 8, src, 16);
		memcpy(b + 24, dst, 16);
		sum = raw_sum(b + 8, 32);
	}
	put16(t, s->sport);
	put16(t + 2, s->dport);
	put32(t + 4, s->seq);
	put32(t + 8, s->ack);
	t[12] = (uint8_t)(tcp_hlen / 4 << 4);
	t[13] = s->flags;
	put16(t + 14, 0x01f5);
	if (s->timestamps) {
		t[20] = 1;
		t[21] = 1;
		t[22] = 8;
		t[23] = 10;
		put32(t + 24, 0x11223344);
		put32(t + 28, 0x55667788);
	}
	for (size_t i = 0; i < s->payload; i++)
		t[tcp_hlen + i] = (uint8_t)(i * 13 + 5);
	sum += 6 + tcp_hlen + s->payload + raw_sum(t, tcp_hlen + s->payload);
	put16(t + 16, (uint16_t)~fold(sum));
	return len;
}

/* Ethernet + outer IP (src to dst) + ICMP header + quote, checksums right. */
static size_t build_icmp(uint8_t family, enum end src, enum end dst, uint8_t type, uint8_t code, uint32_t info,
			 const uint8_t *quote, size_t qlen, uint8_t *b)
{
	static const uint8_t macs[12] = { 2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1 };
	uint8_t s[16], d[16];
	size_t ip_hlen = family == 4 ? 20 : 40;
	size_t msg_len = 8 + qlen;
	uint8_t *ip = b + ETH_LEN, *icmp = ip + ip_hlen;
	uint64_t sum;

	end_addr(family, src, s);
	end_addr(family, dst, d);
	memset(b, 0, ETH_LEN + ip_hlen + msg_len);
	memcpy(b, macs, 12);
	put16(b + 12, family == 4 ? 0x0800 : 0x86dd);
	if (family == 4) {
		ip[0] = 0x45;
		ip[1] = 0xc0;
		put16(ip + 2, (uint16_t)(ip_hlen + msg_len));
		ip[8] = 64;
		ip[9] = 1;
		memcpy(ip + 12, s, 4);
		memcpy(ip + 16, d, 4);
		put16(ip + 10, (uint16_t)~fold(raw_sum(ip, 20)));
		sum = 0;
	} else {
		put32(ip, 0x60000000);
		put16(ip + 4, (uint16_t)msg_len);
		ip[6] = 58;
		ip[7] = 64;
		memcpy(ip + 8, s, 16);
		memcpy(ip + 24, d, 16);
		sum = raw_sum(ip + 8, 32) + msg_len + 58;
	}
	icmp[0] = type;
	icmp[1] = code;
	put32(icmp + 4, info);
	memcpy(icmp + 8, quote, qlen);
	sum += raw_sum(icmp, msg_len);
	put16(icmp + 2, (uint16_t)~fold(sum));
	return ETH_LEN + ip_hlen + msg_len;
}

/* Residuals: 0xffff when the checksum verifies. */
static uint16_t outer_ip_residual(const uint8_t *b)
{
	return fold(raw_sum(b + ETH_LEN, (b[ETH_LEN] & 15) * 4u));
}

static uint16_t icmp_residual(uint8_t family, const uint8_t *b, size_t len)
{
	size_t ip_hlen = family == 4 ? (b[ETH_LEN] & 15) * 4u : 40;
	size_t msg_len = len - ETH_LEN - ip_hlen;
	uint64_t sum = raw_sum(b + ETH_LEN + ip_hlen, msg_len);

	if (family == 6)
		sum += raw_sum(b + ETH_LEN + 8, 32) + msg_len + 58;
	return fold(sum);
}

static uint16_t quoted_ip_residual(const uint8_t *b)
{
	const uint8_t *q = b + ETH_LEN + 20 + 8;

	return fold(raw_sum(q, (q[0] & 15) * 4u));
}

/* ---------------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------------ */

struct icmp_case {
	const char *name;
	uint8_t family;
	bool egress; /* run mmp_tc_egress: ICMP is looked at on ingress only */
	uint32_t mode; /* 0: SPLICE */
	bool lb_local; /* up.redirect_ifindex 0 (both connections over lo): continue, no redirect */
	uint32_t lb_ifindex; /* up.in_ifindex; 0: lo, where the errors arrive in BPF_PROG_TEST_RUN */
	bool lo_refuses_v4; /* icmp4_to_upstream off: lo lacks route_localnet/accept_local */
	uint8_t type, code;
	uint32_t info;
	struct seg quoted; /* the conn1 segment the router quotes */
	int quote_tcp; /* bytes of the TCP segment in the quote; 0 = all of it */
	enum end outer_dst; /* where the error is addressed (normally E_P) */
	bool rewritten; /* else: passes byte-identical with ret */
	int ret;
	uint32_t want_seq, want_ack; /* rewritten: the quote's seq and ack, worked out by hand */
	uint64_t want_icmp_cnt;
};

/* The upstream's segment U->C, as conn1's P->L after the data path (seq + SEQ_DELTA, ack + ACK_DELTA). */
#define P_TO_L .src = E_P, .dst = E_L, .sport = 8443, .dport = 40000

static const struct icmp_case cases[] = {
	{
		.name = "IPv4 frag-needed on another interface than the load balancer's: not translated",
		.family = 4, .lb_ifindex = 99, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x000000f0, .ack = 0x00000100, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .rewritten = false, .ret = TC_ACT_UNSPEC, .want_icmp_cnt = 0,
	},
	{
		.name = "ICMPv6 packet too big on another interface than the load balancer's: not translated",
		.family = 6, .lb_ifindex = 99, .type = 2, .code = 0, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x00000010, .ack = 0x00000020, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .rewritten = false, .ret = TC_ACT_UNSPEC, .want_icmp_cnt = 0,
	},
	{
		.name = "IPv4 frag-needed, RFC 792 quote (IP header + 8): addresses, ports, seq wrapped back",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x000000f0, .ack = 0x00000100, .flags = ACK, .timestamps = true,
			    .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		/* 0x000000f0 - 0x10000100 wraps: 0xeffffff0. The ack is not quoted. */
		.want_seq = 0xeffffff0, .want_ack = 0x00000100, .want_icmp_cnt = 1,
	},
	{
		.name = "IPv4 frag-needed, long quote: ack translated too (wrapping), rest untouched",
		.family = 4, .type = 3, .code = 4, .info = 1400,
		.quoted = { P_TO_L, .seq = 0x20000000, .ack = 0x00000800, .flags = ACK | PSH, .timestamps = true,
			    .payload = 1400 },
		.quote_tcp = 32 + 100, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		/* seq 0x20000000 - 0x10000100; ack 0x800 - 0xfffff000 wraps to 0x1800. */
		.want_seq = 0x0fffff00, .want_ack = 0x00001800, .want_icmp_cnt = 1,
	},
	{
		.name = "IPv4 frag-needed quoting a header with IP options",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x80000000, .ack = 0xfffff000, .flags = ACK, .payload = 600,
			    .ip_opt_words = 2 },
		.quote_tcp = 20, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		.want_seq = 0x6fffff00, .want_ack = 0x00000000, .want_icmp_cnt = 1,
	},
	{
		.name = "IPv4 time exceeded is translated as well",
		.family = 4, .type = 11, .code = 0, .info = 0,
		.quoted = { P_TO_L, .seq = 0x10000100, .ack = 0x12345678, .flags = ACK, .payload = 10 },
		.quote_tcp = 0, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		.want_seq = 0x00000000, .want_ack = 0x12346678, .want_icmp_cnt = 1,
	},
	{
		.name = "IPv4 frag-needed, load balancer on this host: rewritten, continues up the stack",
		.family = 4, .lb_local = true, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x000000f0, .ack = 0x1, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_OK,
		.want_seq = 0xeffffff0, .want_ack = 0x1, .want_icmp_cnt = 1,
	},
	{
		.name = "ICMPv6 packet too big: pseudo-header checksum, seq and ack wrapped back",
		.family = 6, .type = 2, .code = 0, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x00000010, .ack = 0x00000020, .flags = ACK, .timestamps = true,
			    .payload = 1400 },
		.quote_tcp = 1280 - 40 - 8 - 40, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		.want_seq = 0xefffff10, .want_ack = 0x00001020, .want_icmp_cnt = 1,
	},
	{
		.name = "ICMPv6 packet too big, 8-byte quote",
		.family = 6, .type = 2, .code = 0, .info = 1400,
		.quoted = { P_TO_L, .seq = 0xffffffff, .ack = 0x5, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		.want_seq = 0xeffffeff, .want_ack = 0x5, .want_icmp_cnt = 1,
	},
	{
		.name = "ICMPv6 destination unreachable is translated as well",
		.family = 6, .type = 1, .code = 3, .info = 0,
		.quoted = { P_TO_L, .seq = 0x10000100, .ack = 0xfffff000, .flags = ACK, .payload = 0 },
		.quote_tcp = 0, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		.want_seq = 0x00000000, .want_ack = 0x00000000, .want_icmp_cnt = 1,
	},
	{
		.name = "IPv4 frag-needed, lo refuses foreign sources: quote translated, outer destination P kept, up the stack",
		.family = 4, .lo_refuses_v4 = true, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x000000f0, .ack = 0x00000100, .flags = ACK, .payload = 1400 },
		.quote_tcp = 20, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_OK,
		.want_seq = 0xeffffff0, .want_ack = 0x00001100, .want_icmp_cnt = 1,
	},
	{
		.name = "ICMPv6 packet too big, lo's IPv4 sysctls off: still to the upstream (IPv6 needs none)",
		.family = 6, .lo_refuses_v4 = true, .type = 2, .code = 0, .info = 1280,
		.quoted = { P_TO_L, .seq = 0x00000010, .ack = 0x00000020, .flags = ACK, .payload = 1400 },
		.quote_tcp = 20, .outer_dst = E_P, .rewritten = true, .ret = TC_ACT_REDIRECT,
		.want_seq = 0xefffff10, .want_ack = 0x00001020, .want_icmp_cnt = 1,
	},
	/* ---- not ours: untouched ---- */
	{
		.name = "IPv4 frag-needed about an unknown flow (other port): untouched",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { .src = E_P, .dst = E_L, .sport = 8443, .dport = 40001, .seq = 1, .flags = ACK,
			    .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "ICMPv6 packet too big about an unknown flow: untouched",
		.family = 6, .type = 2, .info = 1280,
		.quoted = { .src = E_P, .dst = E_L, .sport = 8444, .dport = 40000, .seq = 1, .flags = ACK,
			    .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 truncated quote (6 bytes of TCP): untouched",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 1400 },
		.quote_tcp = 6, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 quote cut inside the IP header: untouched",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 1400, .ip_opt_words = 3 },
		.quote_tcp = -10, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "ICMPv6 truncated quote (7 bytes of TCP): untouched",
		.family = 6, .type = 2, .info = 1280,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 1400 },
		.quote_tcp = 7, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 frag-needed addressed to another host than the quoted source: untouched",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_C, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 echo reply (not an error) that happens to look like a quote: untouched",
		.family = 4, .type = 0, .code = 0, .info = 0x00010001,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 100 },
		.quote_tcp = 0, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 frag-needed while the flow is still in HOLD (the proxy's socket takes it): untouched",
		.family = 4, .mode = MMP_TC_MODE_HOLD, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 frag-needed seen at egress: untouched (errors come in)",
		.family = 4, .egress = true, .type = 3, .code = 4, .info = 1280,
		.quoted = { P_TO_L, .seq = 1, .flags = ACK, .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_P, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 frag-needed quoting the upstream's own segment (U->C): untouched",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { .src = E_U, .dst = E_C, .sport = 8080, .dport = 51000, .seq = 1, .flags = ACK,
			    .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_U, .ret = TC_ACT_UNSPEC,
	},
	{
		.name = "IPv4 frag-needed quoting a conn2 segment C->U (its reverse is the DOWN tuple): untouched",
		.family = 4, .type = 3, .code = 4, .info = 1280,
		.quoted = { .src = E_C, .dst = E_U, .sport = 51000, .dport = 8080, .seq = 1, .flags = ACK,
			    .payload = 1400 },
		.quote_tcp = 8, .outer_dst = E_C, .ret = TC_ACT_UNSPEC,
	},
};

/* ---------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------ */

static struct tc_bpf *cur_skel;

static struct tc_bpf *load_skel(const struct icmp_case *c)
{
	struct tc_bpf *skel = tc_bpf__open();
	int err;

	if (!skel)
		fail_msg("tc_bpf__open: %s", strerror(errno));
	skel->rodata->icmp4_to_upstream = !c->lo_refuses_v4;
	bpf_map__set_max_entries(skel->maps.mmp_tc_tuples, 16);
	bpf_map__set_max_entries(skel->maps.mmp_tc_flows, 4);
	err = tc_bpf__load(skel);
	if (err) {
		tc_bpf__destroy(skel);
		fail_msg("tc_bpf__load: %s (the verifier log is above)", strerror(-err));
	}
	return skel;
}

/* The maps after the switch: L->P (UP) and U->C (DOWN); the proxy's own tuples are gone. */
static void fill_maps(struct tc_bpf *skel, const struct icmp_case *c)
{
	struct mmp_tc_tuple_val up = { .flow = FLOW_ID, .role = MMP_TC_ROLE_UP };
	struct mmp_tc_tuple_val down = { .flow = FLOW_ID, .role = MMP_TC_ROLE_DOWN };
	struct mmp_tc_flow flow = { 0 };
	struct mmp_tc_tuple k;
	uint64_t id = FLOW_ID;

	/* The service ports, as mmp_tc_mark_port does (user/engine/tc/tc_flows.c). */
	skel->bss->mmp_tc_ports[htons(8443) / 64] |= 1ULL << (htons(8443) % 64);
	skel->bss->mmp_tc_ports[htons(8080) / 64] |= 1ULL << (htons(8080) % 64);
	make_key(c->family, E_L, 40000, E_P, 8443, &k);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_tc_tuples), &k, &up, BPF_NOEXIST), 0);
	make_key(c->family, E_U, 8080, E_C, 51000, &k);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_tc_tuples), &k, &down, BPF_NOEXIST), 0);
	flow.mode = c->mode ? c->mode : MMP_TC_MODE_SPLICE;
	make_key(c->family, E_C, 51000, E_U, 8080, &flow.up.out);
	make_key(c->family, E_P, 8443, E_L, 40000, &flow.down.out);
	/* The up direction's deltas are the negations: an error must use the down direction's. */
	flow.up.seq_delta = -ACK_DELTA;
	flow.up.ack_delta = -SEQ_DELTA;
	flow.down.seq_delta = SEQ_DELTA;
	flow.down.ack_delta = ACK_DELTA;
	/* The load balancer's side: BPF_PROG_TEST_RUN's device (lo), or another interface. */
	flow.up.in_ifindex = c->lb_ifindex ? c->lb_ifindex : LO_IFINDEX;
	flow.down.in_ifindex = LO_IFINDEX;
	if (!c->lb_local) {
		flow.up.redirect_ifindex = LO_IFINDEX;
		flow.up.redirect_ingress = 1;
		flow.down.redirect_ifindex = 2;
	}
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_tc_flows), &id, &flow, BPF_NOEXIST), 0);
}

static uint64_t read_counter(struct tc_bpf *skel, uint32_t idx)
{
	uint64_t sum = 0;

	assert_int_equal(mmp_percpu_sum(bpf_map__fd(skel->maps.mmp_tc_counters), idx, &sum), 0);
	return sum;
}

/* Bytes of the quoted segment the router includes. */
static size_t quote_len(const struct icmp_case *c, size_t seg_len)
{
	size_t ip_hlen = c->family == 4 ? 20 + 4u * c->quoted.ip_opt_words : 40;

	if (c->quote_tcp == 0)
		return seg_len;
	assert_true(ip_hlen + c->quote_tcp <= seg_len);
	return (size_t)((int)ip_hlen + c->quote_tcp);
}

/* The error the upstream would have received: built from scratch, not from the program's output. */
static size_t build_expected(const struct icmp_case *c, const uint8_t *in_quote, size_t qlen, uint8_t *want)
{
	struct seg s = c->quoted;
	uint8_t seg[2048];
	size_t ip_hlen = c->family == 4 ? 20 + 4u * s.ip_opt_words : 40;
	size_t len;

	s.src = E_U, s.dst = E_C, s.sport = 8080, s.dport = 51000;
	s.seq = c->want_seq;
	s.ack = c->want_ack;
	len = build_seg(c->family, &s, seg);
	assert_true(qlen <= len);
	/*
	 * Flags, window, the TCP checksum (nobody can verify it in a cut quote),
	 * options and payload are not translated: they stay as quoted.
	 */
	if (qlen > ip_hlen + 12)
		memcpy(seg + ip_hlen + 12, in_quote + ip_hlen + 12, qlen - ip_hlen - 12);
	/* Without lo's sysctls an IPv4 error stays addressed to P and is not redirected. */
	bool to_upstream = c->family == 6 || !c->lo_refuses_v4;

	len = build_icmp(c->family, E_R, to_upstream ? E_U : E_P, c->type, c->code, c->info, seg, qlen, want);
	if (!c->lb_local && to_upstream)
		memset(want, 0, 12); /* redirected into lo: MACs zeroed */
	return len;
}

static bool is_csum_byte(uint8_t family, size_t i)
{
	size_t icmp = ETH_LEN + (family == 4 ? 20 : 40);

	if (family == 4 && (i == ETH_LEN + 10 || i == ETH_LEN + 11))
		return true; /* outer IPv4 header */
	if (family == 4 && (i == icmp + 8 + 10 || i == icmp + 8 + 11))
		return true; /* quoted IPv4 header */
	return i == icmp + 2 || i == icmp + 3;
}

static void dump(const char *tag, const uint8_t *b, size_t len)
{
	print_error("%s:", tag);
	for (size_t i = 0; i < len && i < 160; i++)
		print_error("%s%02x", i % 16 ? " " : "\n  ", b[i]);
	print_error("\n");
}

static void check_rewritten(const struct icmp_case *c, const uint8_t *in, const uint8_t *got, size_t got_len,
			    const uint8_t *want, size_t want_len)
{
	char why[200] = "";

	if (got_len != want_len) {
		snprintf(why, sizeof(why), "length %zu, expected %zu", got_len, want_len);
	} else {
		for (size_t i = 0; i < got_len && !why[0]; i++)
			if (!is_csum_byte(c->family, i) && got[i] != want[i])
				snprintf(why, sizeof(why), "byte %zu is %#04x, expected %#04x (first difference)", i,
					 got[i], want[i]);
	}
	if (!why[0] && c->family == 4 && outer_ip_residual(got) != 0xffff)
		snprintf(why, sizeof(why), "outer IPv4 checksum does not verify (residual %#06x)",
			 outer_ip_residual(got));
	if (!why[0] && c->family == 4 && quoted_ip_residual(got) != 0xffff)
		snprintf(why, sizeof(why), "quoted IPv4 header checksum does not verify (residual %#06x)",
			 quoted_ip_residual(got));
	if (!why[0] && icmp_residual(c->family, got, got_len) != 0xffff)
		snprintf(why, sizeof(why), "ICMP checksum does not verify (residual %#06x)",
			 icmp_residual(c->family, got, got_len));
	if (!why[0])
		return;
	print_error("case \"%s\": %s\n", c->name, why);
	dump("  input", in, got_len);
	dump("  expected", want, want_len);
	dump("  actual", got, got_len);
	fail();
}

static void test_case(void **state)
{
	const struct icmp_case *c = *state;
	uint8_t seg[2048], in[2048], out[2048], want[2048];
	size_t seg_len, qlen, in_len, want_len;
	struct tc_bpf *skel;
	struct bpf_program *prog;
	uint32_t out_len = sizeof(out);
	int err;

	if (geteuid() != 0)
		skip();
	skel = cur_skel = load_skel(c);
	fill_maps(skel, c);
	seg_len = build_seg(c->family, &c->quoted, seg);
	qlen = quote_len(c, seg_len);
	in_len = build_icmp(c->family, E_R, c->outer_dst, c->type, c->code, c->info, seg, qlen, in);
	/* Sanity of the fixture itself: every checksum of the input verifies. */
	assert_int_equal(icmp_residual(c->family, in, in_len), 0xffff);
	if (c->family == 4)
		assert_int_equal(outer_ip_residual(in), 0xffff);

	prog = c->egress ? skel->progs.mmp_tc_egress : skel->progs.mmp_tc_ingress;
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)in_len, .data_out = out,
		    .data_size_out = out_len, .repeat = 1);
	memset(out, 0xee, sizeof(out));
	err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);
	if (err)
		fail_msg("case \"%s\": BPF_PROG_TEST_RUN: %s", c->name, strerror(errno));
	if ((int)opts.retval != c->ret) {
		dump("  input", in, in_len);
		dump("  output", out, opts.data_size_out);
		fail_msg("case \"%s\": program returned %d, expected %d", c->name, (int)opts.retval, c->ret);
	}
	if (c->rewritten) {
		want_len = build_expected(c, seg, qlen, want);
		check_rewritten(c, in, out, opts.data_size_out, want, want_len);
		/* The fields the kernel reads, spelled out (the byte compare covers them too). */
		{
			const uint8_t *q = out + ETH_LEN + (c->family == 4 ? 20 : 40) + 8;
			size_t qh = c->family == 4 ? (q[0] & 15) * 4u : 40;

			assert_int_equal(get32(q + qh + 4), c->want_seq);
			assert_int_equal(get16(q + qh), 8080);
			assert_int_equal(get16(q + qh + 2), 51000);
		}
	} else if (opts.data_size_out != in_len || memcmp(out, in, in_len)) {
		dump("  input", in, in_len);
		dump("  output", out, opts.data_size_out);
		fail_msg("case \"%s\": the packet was changed, expected it untouched", c->name);
	}
	assert_int_equal(read_counter(skel, MMP_TC_CNT_ICMP_TRANSLATED), c->want_icmp_cnt);
	/* An error is no traffic of the flow. */
	assert_int_equal(read_counter(skel, MMP_TC_CNT_TRANSLATED), 0);
	assert_int_equal(read_counter(skel, MMP_TC_CNT_REDIRECT_FAILED), 0);
}

static int teardown_skel(void **state)
{
	(void)state;
	tc_bpf__destroy(cur_skel);
	cur_skel = NULL;
	return 0;
}

/* The fixture builder against a packet worked out by hand (IPv4 frag-needed, 8-byte quote). */
static void test_fixture_builder(void **state)
{
	struct seg s = { .src = E_P, .dst = E_L, .sport = 8443, .dport = 40000, .seq = 0x01020304, .ack = 0x05060708,
			 .flags = ACK };
	uint8_t seg[64], b[128];
	size_t n = build_seg(4, &s, seg);
	size_t len;
	static const uint8_t want[] = {
		/* Ethernet */
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
		/* IPv4 10.9.9.9 -> 10.0.0.2, ICMP, length 56 */
		0x45, 0xc0, 0x00, 0x38, 0x00, 0x00, 0x00, 0x00, 0x40, 0x01, 0x5c, 0xf2,
		0x0a, 0x09, 0x09, 0x09, 0x0a, 0x00, 0x00, 0x02,
		/* type 3 code 4, checksum, MTU 1280 */
		0x03, 0x04, 0x36, 0xba, 0x00, 0x00, 0x05, 0x00,
		/* quoted IPv4 10.0.0.2 -> 10.0.0.1, TCP, length 40, DF, TTL 63 */
		0x45, 0x00, 0x00, 0x28, 0x42, 0x42, 0x40, 0x00, 0x3f, 0x06, 0xe5, 0x8b,
		0x0a, 0x00, 0x00, 0x02, 0x0a, 0x00, 0x00, 0x01,
		/* quoted TCP: 8443 -> 40000, seq */
		0x20, 0xfb, 0x9c, 0x40, 0x01, 0x02, 0x03, 0x04,
	};

	(void)state;
	assert_int_equal(n, 40);
	len = build_icmp(4, E_R, E_P, 3, 4, 1280, seg, 28, b);
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, sizeof(want));
	assert_int_equal(outer_ip_residual(b), 0xffff);
	assert_int_equal(quoted_ip_residual(b), 0xffff);
	assert_int_equal(icmp_residual(4, b, len), 0xffff);
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest *tests = calloc(n + 1, sizeof(*tests));
	int rc;

	if (!tests)
		return 1;
	if (geteuid() != 0)
		fprintf(stderr, "test_tc_icmp: not root: the BPF cases are skipped (BPF_PROG_TEST_RUN needs root)\n");
	tests[0] = (struct CMUnitTest)cmocka_unit_test(test_fixture_builder);
	for (size_t i = 0; i < n; i++) {
		tests[i + 1].name = cases[i].name;
		tests[i + 1].test_func = test_case;
		tests[i + 1].teardown_func = teardown_skel;
		tests[i + 1].initial_state = (void *)&cases[i];
	}
	rc = _cmocka_run_group_tests("tc_icmp", tests, n + 1, NULL, NULL);
	free(tests);
	return rc;
}
