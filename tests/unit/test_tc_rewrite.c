// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the tc engine's rewrite program (bpf/tc.bpf.c), run through
 * BPF_PROG_TEST_RUN with hand-built fixture packets.
 *
 * Each case loads a fresh skeleton (no attach), fills mmp_tc_tuples,
 * mmp_tc_flows the way user/engine/tc/tc_handoff.c does, runs one or
 * more Ethernet + IPv4/IPv6 + TCP packets through mmp_tc_egress (or
 * mmp_tc_ingress) and compares the output byte by byte with a packet built
 * independently from the expected field values. Checksums are verified with
 * the tests' own ones' complement code (tc_fixtures.c), not the project's.
 *
 * test_run hands the program a CHECKSUM_NONE skb, so the checksum helpers must
 * update the full checksum: a wrong incremental update shows up here.
 *
 * Needs root (BPF); skipped otherwise.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <errno.h>
#include <time.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "mmp_steer.h"
#include "mmp_tc.h"
#include "lib/percpu.h"
#include "tc.skel.h"
#include "tc_fixtures.h"

#define TC_ACT_UNSPEC (-1) /* not ours: the next filter decides */
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7

#define FIN 0x01
#define SYN 0x02
#define RST 0x04
#define PSH 0x08
#define ACK 0x10

#define ETH_LEN 14
#define FLOW_ID 0x1122334455667788ULL

/* ---------------------------------------------------------------------------
 * Fixture topology. L = load balancer, P = proxy listen address,
 * C = client address spoofed by the proxy, U = upstream.
 *   conn1 = L <-> P, conn2 = C <-> U
 * ------------------------------------------------------------------------ */

enum end { E_L, E_P, E_C, E_U };

/* Which 4-tuple a fixture packet carries. The first four are mmp_tc_role. */
enum tup {
	T_UP = MMP_TC_ROLE_UP, /* L->P */
	T_DOWN = MMP_TC_ROLE_DOWN, /* U->C */
	T_HOLD1 = MMP_TC_ROLE_HOLD_CONN1, /* P->L */
	T_HOLD2 = MMP_TC_ROLE_HOLD_CONN2, /* C->U */
	T_OTHER, /* L->P from another source port: not in the map */
};

static const struct {
	enum end src, dst;
} tup_ends[] = {
	[T_UP] = { E_L, E_P },
	[T_DOWN] = { E_U, E_C },
	[T_HOLD1] = { E_P, E_L },
	[T_HOLD2] = { E_C, E_U },
	[T_OTHER] = { E_L, E_P },
};

/* The spec: L->P becomes C->U, U->C becomes P->L. */
static const enum tup translated_tup[] = {
	[T_UP] = T_HOLD2,
	[T_DOWN] = T_HOLD1,
	[T_HOLD1] = T_HOLD1,
	[T_HOLD2] = T_HOLD2,
	[T_OTHER] = T_OTHER,
};

static const char *const addr4[] = { "10.0.0.1", "10.0.0.2", "192.0.2.7", "10.0.1.9" };
static const char *const addr6[] = { "2001:db8::1", "2001:db8::2", "2001:db8:1::7", "2001:db8:2::9" };
static const uint16_t end_port[] = { 40000, 8443, 51000, 8080 };

static const uint8_t mac_dst[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x02 };
static const uint8_t mac_src[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x01 };

static void end_addr(uint8_t family, enum end e, uint8_t out[16])
{
	memset(out, 0, 16);
	if (family == 4)
		assert_int_equal(inet_pton(AF_INET, addr4[e], out), 1);
	else
		assert_int_equal(inet_pton(AF_INET6, addr6[e], out), 1);
}

static uint16_t tup_sport(enum tup t)
{
	return end_port[tup_ends[t].src] + (t == T_OTHER ? 1 : 0);
}

static void make_key(uint8_t family, enum tup t, struct mmp_tc_tuple *k)
{
	memset(k, 0, sizeof(*k));
	k->family = family;
	k->sport = htons(tup_sport(t));
	k->dport = htons(end_port[tup_ends[t].dst]);
	end_addr(family, tup_ends[t].src, k->saddr);
	end_addr(family, tup_ends[t].dst, k->daddr);
}

/* ---------------------------------------------------------------------------
 * Fixture packets
 * ------------------------------------------------------------------------ */

struct seg {
	enum tup tup;
	uint32_t seq, ack;
	uint8_t flags;
	uint16_t win;
	/*
	 * TCP options, one letter each: N NOP, E EOL, T timestamps (tsval,
	 * tsecr), S SACK (nsack blocks from sack[]), M MSS, W window scale,
	 * P SACK-permitted; malformed: X timestamp kind claiming 38 bytes,
	 * Z / Y SACK kind of length 0 / 1. Padded with EOL to a multiple of 4.
	 */
	const char *opts;
	uint32_t tsval, tsecr;
	uint8_t nsack;
	uint32_t sack[8];
	uint16_t payload;
	uint8_t ip_opt_words; /* IPv4 options, 4 bytes each */
	uint16_t frag_off; /* IPv4 flags + fragment offset, host order; 0 = DF */
	uint16_t csum_err; /* added (ones' complement) to the correct TCP checksum */
	uint8_t eth_pad; /* zero bytes after the IP packet (short frames padded to 60) */
	/*
	 * Non-zero: the IP header's first byte (version, and IPv4's IHL) is
	 * overwritten with it once the packet is built: a malformed header
	 * with otherwise valid contents.
	 */
	uint8_t ip_byte0;
};

/* Ones' complement a + b on 16 bits. */
static uint16_t oc_add(uint16_t a, uint16_t b)
{
	return fold((uint64_t)a + b);
}

struct layout {
	size_t l3, ip_hlen, l4, tcp_hlen, len;
	uint8_t family;
};

/* Locate the headers of a packet (ours or the program's output). */
static bool parse_layout(const uint8_t *b, size_t len, struct layout *lo)
{
	uint16_t proto;

	if (len < ETH_LEN)
		return false;
	proto = get16(b + 12);
	lo->l3 = ETH_LEN;
	if (proto == 0x0800) {
		lo->family = 4;
		lo->ip_hlen = (b[ETH_LEN] & 0xf) * 4;
		if (ETH_LEN + 4 > len)
			return false;
		lo->len = ETH_LEN + get16(b + ETH_LEN + 2);
	} else if (proto == 0x86dd) {
		lo->family = 6;
		lo->ip_hlen = 40;
		if (ETH_LEN + 6 > len)
			return false;
		lo->len = ETH_LEN + 40 + get16(b + ETH_LEN + 4);
	} else {
		return false;
	}
	/* lo->len: where the IP packet ends; anything after it is Ethernet padding. */
	if (lo->len > len)
		return false;
	lo->l4 = lo->l3 + lo->ip_hlen;
	if (lo->l4 + 20 > len)
		return false;
	lo->tcp_hlen = (b[lo->l4 + 12] >> 4) * 4;
	return lo->l4 + lo->tcp_hlen <= len;
}

/* The folded sum over the IPv4 header: 0xffff when its checksum verifies. */
static uint16_t ip_residual(const uint8_t *b, const struct layout *lo)
{
	return fold(raw_sum(b + lo->l3, lo->ip_hlen));
}

/* The folded sum over pseudo header + segment: 0xffff when the TCP checksum verifies. */
static uint16_t tcp_residual(const uint8_t *b, const struct layout *lo)
{
	return tcp_residual_at(lo->family, b + lo->l3, lo->ip_hlen, lo->len - lo->l4);
}

static size_t build_opts(const struct seg *s, uint8_t *o)
{
	size_t n = 0;

	for (const char *c = s->opts; c && *c; c++) {
		switch (*c) {
		case 'N':
			o[n++] = 1;
			break;
		case 'E':
			o[n++] = 0;
			break;
		case 'T':
			o[n++] = 8;
			o[n++] = 10;
			put32(o + n, s->tsval);
			put32(o + n + 4, s->tsecr);
			n += 8;
			break;
		case 'S':
			o[n++] = 5;
			o[n++] = (uint8_t)(2 + 8 * s->nsack);
			for (int i = 0; i < 2 * s->nsack; i++, n += 4)
				put32(o + n, s->sack[i]);
			break;
		case 'M':
			o[n++] = 2;
			o[n++] = 4;
			put16(o + n, 1460);
			n += 2;
			break;
		case 'W':
			o[n++] = 3;
			o[n++] = 3;
			o[n++] = 7;
			break;
		case 'P':
			o[n++] = 4;
			o[n++] = 2;
			break;
		case 'X': /* malformed: a timestamp option claiming 38 bytes */
			o[n++] = 8;
			o[n++] = 38;
			break;
		case 'Z': /* malformed: a SACK option of length 0 */
			o[n++] = 5;
			o[n++] = 0;
			break;
		case 'Y': /* malformed: a SACK option of length 1 */
			o[n++] = 5;
			o[n++] = 1;
			break;
		default:
			fail_msg("bad option letter '%c'", *c);
		}
		assert_true(n <= 40);
	}
	while (n % 4)
		o[n++] = 0;
	assert_true(n <= 40);
	return n;
}

/* Ethernet + IP + TCP + payload, with correct checksums (unless csum_err). */
static size_t build_pkt(uint8_t family, const struct seg *s, uint8_t *b)
{
	uint8_t src[16], dst[16], opts[40];
	size_t olen = build_opts(s, opts);
	size_t ip_hlen = family == 4 ? 20 + 4u * s->ip_opt_words : 40;
	size_t tcp_hlen = 20 + olen;
	size_t l4 = ETH_LEN + ip_hlen;
	size_t len = l4 + tcp_hlen + s->payload;
	struct layout lo;
	size_t frame_len = len + s->eth_pad;
	uint16_t c;

	end_addr(family, tup_ends[s->tup].src, src);
	end_addr(family, tup_ends[s->tup].dst, dst);
	memset(b, 0, frame_len);
	memcpy(b, mac_dst, 6);
	memcpy(b + 6, mac_src, 6);
	put16(b + 12, family == 4 ? 0x0800 : 0x86dd);
	if (family == 4) {
		uint8_t *ip = b + ETH_LEN;

		ip[0] = (uint8_t)(0x40 | ip_hlen / 4);
		ip[1] = 0;
		put16(ip + 2, (uint16_t)(len - ETH_LEN));
		put16(ip + 4, 0x1234);
		put16(ip + 6, s->frag_off ? s->frag_off : 0x4000);
		ip[8] = 64;
		ip[9] = 6;
		memcpy(ip + 12, src, 4);
		memcpy(ip + 16, dst, 4);
		for (int i = 0; i < s->ip_opt_words; i++) {
			/* NOP, NOP, NOP, EOL */
			ip[20 + 4 * i] = 1;
			ip[21 + 4 * i] = 1;
			ip[22 + 4 * i] = 1;
			ip[23 + 4 * i] = 0;
		}
		put16(ip + 10, (uint16_t)~fold(raw_sum(ip, ip_hlen)));
	} else {
		uint8_t *ip = b + ETH_LEN;

		put32(ip, 0x60000000);
		put16(ip + 4, (uint16_t)(tcp_hlen + s->payload));
		ip[6] = 6;
		ip[7] = 64;
		memcpy(ip + 8, src, 16);
		memcpy(ip + 24, dst, 16);
	}
	put16(b + l4, tup_sport(s->tup));
	put16(b + l4 + 2, end_port[tup_ends[s->tup].dst]);
	put32(b + l4 + 4, s->seq);
	put32(b + l4 + 8, s->ack);
	b[l4 + 12] = (uint8_t)(tcp_hlen / 4 << 4);
	b[l4 + 13] = s->flags;
	put16(b + l4 + 14, s->win);
	put16(b + l4 + 18, 0);
	memcpy(b + l4 + 20, opts, olen);
	for (size_t i = 0; i < s->payload; i++)
		b[l4 + tcp_hlen + i] = (uint8_t)(i * 7 + 3);
	assert_true(parse_layout(b, frame_len, &lo));
	c = (uint16_t)~tcp_residual(b, &lo);
	if (s->csum_err)
		c = oc_add(c, s->csum_err);
	put16(b + l4 + 16, c);
	if (!s->csum_err)
		assert_int_equal(tcp_residual(b, &lo), 0xffff);
	if (s->ip_byte0)
		b[ETH_LEN] = s->ip_byte0;
	return frame_len;
}

/* One line per packet: the fields a reader wants when a case fails. */
static void describe(const char *tag, const uint8_t *b, size_t len)
{
	struct layout lo;
	char line[512];
	int n;

	if (!parse_layout(b, len, &lo)) {
		print_error("%s: unparsable (%zu bytes)\n", tag, len);
		return;
	}
	const uint8_t *t = b + lo.l4;

	n = snprintf(line, sizeof(line),
		     "%s: len %zu v%u sport %u dport %u seq %#x ack %#x flags %#x win %u csum %#06x (tcp res %#06x",
		     tag, len, lo.family, get16(t), get16(t + 2), get32(t + 4), get32(t + 8), t[13], get16(t + 14),
		     get16(t + 16), tcp_residual(b, &lo));
	if (lo.family == 4)
		n += snprintf(line + n, sizeof(line) - n, ", ip res %#06x", ip_residual(b, &lo));
	n += snprintf(line + n, sizeof(line) - n, ")");
	for (size_t i = 20; i < lo.tcp_hlen;) {
		uint8_t kind = t[i];

		if (kind == 0)
			break;
		if (kind == 1) {
			i++;
			continue;
		}
		if (i + 1 >= lo.tcp_hlen || t[i + 1] < 2)
			break;
		if (kind == 8 && t[i + 1] == 10)
			n += snprintf(line + n, sizeof(line) - n, " TS %#x/%#x", get32(t + i + 2), get32(t + i + 6));
		if (kind == 5) {
			n += snprintf(line + n, sizeof(line) - n, " SACK");
			for (size_t e = i + 2; e + 4 <= i + t[i + 1]; e += 4)
				n += snprintf(line + n, sizeof(line) - n, " %#x", get32(t + e));
		}
		i += t[i + 1];
	}
	print_error("%s\n", line);
}

static void hexdump(const char *tag, const uint8_t *b, size_t len)
{
	print_error("%s:", tag);
	for (size_t i = 0; i < len && i < 128; i++)
		print_error("%s%02x", i % 16 ? " " : "\n  ", b[i]);
	print_error("\n");
}

/* ---------------------------------------------------------------------------
 * Cases
 * ------------------------------------------------------------------------ */

enum expect {
	EXP_END = 0, /* no more steps */
	EXP_SAME, /* passes byte-identical */
	EXP_SHOT, /* dropped */
	EXP_WIN0, /* the input with window 0 (HOLD) */
	EXP_SEG, /* the input on the translated tuple, with out's seq/ack/win/TS/SACK */
};

struct step {
	enum expect expect;
	int ret; /* TC_ACT_*; 0 = TC_ACT_OK */
	struct seg in;
	struct seg out; /* EXP_SEG: seq, ack, win, tsval, tsecr, sack[] */
	bool mac_zeroed; /* EXP_SEG: Ethernet addresses zeroed (redirect into lo) */
	uint32_t mark_in; /* skb->mark the segment arrives with */
	bool check_mark;
	uint32_t mark_out; /* check_mark: skb->mark the program leaves */
};

struct dir_cfg {
	uint32_t seq_delta, ack_delta, ts_base;
	uint8_t wsin, wsout, ts, sack;
	uint32_t redirect_ifindex, redirect_ingress;
	uint32_t tsd; /* tsval_delta, computed by userspace at the switch */
	uint32_t ifindex; /* in_ifindex; 0: lo (1), where BPF_PROG_TEST_RUN runs the packets */
};

/* The receive state userspace writes at the switch (the flow entry's stats: snd_nxt, rcv_wnd). */
struct rx_init {
	bool set; /* false: snd_nxt 0, rcv_wnd 1 GiB both ways (every fixture seq near 0 is acceptable) */
	bool ended; /* an RST already ended the flow */
	uint32_t nxt[2], wnd[2];
};

struct stats_exp {
	uint64_t packets[2], bytes[2];
	uint8_t fin[2], rst;
	bool check_nxt;
	uint32_t nxt[2], wnd[2];
};

struct rw_case {
	const char *name;
	uint8_t family;
	uint32_t mode; /* 0: tuples only, no flow entry */
	bool ingress; /* run mmp_tc_ingress instead of mmp_tc_egress */
	bool egress_closed; /* no hold started lately: mmp_tc_egress_until_ns in the past */
	bool ports_unmarked; /* the tuples inserted without their ports in mmp_tc_ports */
	bool sockets_open; /* the HOLD tuples flagged MMP_TC_TUPLE_SOCKET_OPEN (the switch not yet closed them) */
	struct dir_cfg up, down;
	struct rx_init rx;
	struct step steps[70];
	bool check_stats;
	struct stats_exp st;
	bool check_cnt;
	uint64_t cnt[MMP_TC_CNT_MAX];
	bool check_tuples; /* afterwards, exactly the roles in tuples_left remain in mmp_tc_tuples */
	uint8_t tuples_left;
	/* A carry after the switch (tc_carry.c): flow.carrying and the mmp_tc_carry entry. */
	uint32_t carrying;
	struct mmp_tc_carry carry;
	bool check_carry; /* afterwards, the entry's TSvals and SACK blocks are these */
	uint32_t carry_tsval[2];
	uint32_t carry_reset;
	uint32_t sack_n[2];
	uint32_t sack[2][MMP_TC_CARRY_SACK_BLOCKS * 2];
};

#define MODE_HOLD MMP_TC_MODE_HOLD
#define MODE_FREEZE MMP_TC_MODE_FREEZE
#define MODE_SPLICE MMP_TC_MODE_SPLICE

/* A flow with timestamps and SACK and no translation, for HOLD/FREEZE cases. */
#define DIR_TS_SACK { .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 0x1000 }

static const struct rw_case cases[] = {
	/* ---- lookups ---- */
	{
		.name = "unknown tuple: unchanged",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 1000, .ack_delta = 2000, .wsin = 7, .wsout = 9, .ts = 1, .sack = 1, .ts_base = 5000 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_OTHER, .seq = 1, .ack = 2, .flags = ACK | PSH, .win = 500,
					    .opts = "NNT", .tsval = 100, .tsecr = 200, .payload = 10 } },
		},
		.check_stats = true,
		.check_cnt = true,
	},
	{
		.name = "known tuple without flow entry: unchanged",
		.family = 4,
		.mode = 0,
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 500, .opts = "NNT",
					    .tsval = 100, .tsecr = 200 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_HOLD1, .seq = 1, .ack = 2, .flags = ACK, .win = 500 } },
		},
		.check_cnt = true,
	},
	{
		.name = "IPv4 fragment (MF) in SPLICE: unchanged and counted",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 1000, .ack_delta = 2000, .wsin = 7, .wsout = 7 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 500, .payload = 64,
					    .frag_off = 0x2000 } },
		},
		.check_stats = true,
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_NOT_TCP_OR_FRAGMENT] = 1 },
	},
	{
		/* The RST at snd_nxt would end the flow, for a segment no endpoint receives (ip_rcv drops it). */
		.name = "IPv4 frame with version 6, IHL 4 or IHL 0: untouched, counted, moves no state",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = 0x200, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = 0x400, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0x1000, .flags = RST, .ip_byte0 = 0x65 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x1e00, .flags = ACK | FIN,
								  .win = 100, .payload = 10, .ip_byte0 = 0x65 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x1e00, .flags = ACK,
								  .win = 100, .payload = 10, .ip_byte0 = 0x44 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_DOWN, .seq = 0x2000, .flags = RST, .ip_byte0 = 0x40 } },
			/* The flow itself goes on. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 5, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x1100, .ack = 0x205, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 1, [MMP_TC_CNT_BAD_IP_HEADER] = 4 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},
	{
		.name = "IPv6 frame with version 4: untouched, counted, moves no state",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = 0x200, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = 0x400, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_DOWN, .seq = 0x2000, .flags = RST, .ip_byte0 = 0x45 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0x1000, .ack = 5, .flags = ACK | PSH,
								  .win = 100, .payload = 20, .ip_byte0 = 0x40 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2000, .ack = 5, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x2300, .ack = 0x405, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 0, 1 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 1, [MMP_TC_CNT_BAD_IP_HEADER] = 2 },
	},

	/* ---- HOLD ---- */
	{
		.name = "HOLD: conn1 segment gets window 0",
		.family = 4,
		.mode = MODE_HOLD,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_WIN0, .in = { .tup = T_HOLD1, .seq = 0x12345678, .ack = 0x9abcdef0, .flags = ACK | PSH,
					    .win = 0x01f4, .opts = "NNT", .tsval = 0x01020304, .tsecr = 0x0a0b0c0d,
					    .payload = 100 } },
		},
		.check_stats = true,
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_HELD] = 1 },
	},
	{
		.name = "HOLD: conn2 segment with SACK gets window 0",
		.family = 4,
		.mode = MODE_HOLD,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_WIN0, .in = { .tup = T_HOLD2, .seq = 0xfffffff0, .ack = 0x10, .flags = ACK, .win = 0xfff0,
					    .opts = "NNTNNS", .tsval = 7, .tsecr = 9, .nsack = 1,
					    .sack = { 0x100, 0x200 } } },
			/* 0xffff -> 0 leaves the ones' complement sum as it was (-0 == +0). */
			{ EXP_WIN0, .in = { .tup = T_HOLD2, .seq = 0xfffffff0, .ack = 0x10, .flags = ACK, .win = 0xffff,
					    .opts = "NNTNNS", .tsval = 7, .tsecr = 9, .nsack = 1,
					    .sack = { 0x100, 0x200 } } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_HELD] = 2 },
	},
	{
		.name = "HOLD: UP and DOWN segments pass unchanged",
		.family = 4,
		.mode = MODE_HOLD,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .in = { .tup = T_UP, .seq = 100, .ack = 200, .flags = ACK | PSH, .win = 1000,
					    .opts = "NNT", .tsval = 1, .tsecr = 2, .payload = 50 } },
			{ EXP_SAME, .in = { .tup = T_DOWN, .seq = 300, .ack = 400, .flags = ACK, .win = 2000,
					    .opts = "NNTNNS", .tsval = 3, .tsecr = 4, .nsack = 1, .sack = { 1, 2 } } },
		},
		.check_stats = true,
		.check_cnt = true,
	},
	{
		.name = "HOLD: a segment already at window 0 passes unchanged",
		.family = 4,
		.mode = MODE_HOLD,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .in = { .tup = T_HOLD1, .seq = 5, .ack = 6, .flags = ACK, .win = 0 } },
		},
		.check_cnt = true,
	},
	{
		.name = "HOLD: a bad TCP checksum stays off by the same amount",
		.family = 4,
		.mode = MODE_HOLD,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_WIN0, .in = { .tup = T_HOLD1, .seq = 5, .ack = 6, .flags = ACK, .win = 0x8001,
					    .payload = 33, .csum_err = 0x1234 } },
		},
	},

	/* ---- FREEZE ---- */
	{
		.name = "FREEZE: UP/DOWN dropped, an RST passes, HOLD_CONN2 and HOLD_CONN1 window 0, their pure ACKs dropped",
		.family = 4,
		.mode = MODE_FREEZE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK | PSH,
								.win = 100, .payload = 20 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_DOWN, .seq = 3, .ack = 4, .flags = ACK,
								.win = 100, .opts = "NNT", .tsval = 5, .tsecr = 6 } },
			{ EXP_WIN0, .in = { .tup = T_HOLD2, .seq = 7, .ack = 8, .flags = ACK, .win = 4321, .opts = "NNT",
					    .tsval = 9, .tsecr = 10, .payload = 5 } },
			{ EXP_WIN0, .in = { .tup = T_HOLD1, .seq = 11, .ack = 12, .flags = ACK | FIN, .win = 1 } },
			/* A frozen socket's pure ACK (a delayed ACK timer): stale, dropped. */
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_HOLD1, .seq = 12, .ack = 12, .flags = ACK,
								.win = 700, .opts = "NNT", .tsval = 13, .tsecr = 14 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_HOLD2, .seq = 8, .ack = 8, .flags = ACK, .win = 0 } },
			/* A dropped RST is never retransmitted: it reaches the frozen socket untouched. */
			{ EXP_SAME, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = RST, .win = 0 } },
			{ EXP_SAME, .in = { .tup = T_DOWN, .seq = 3, .ack = 4, .flags = RST | ACK, .win = 0 } },
		},
		.check_stats = true,
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_FREEZE_DROPS] = 2, [MMP_TC_CNT_HELD] = 2, [MMP_TC_CNT_FROZEN_ACKS_DROPPED] = 2 },
	},

	{
		.name = "egress with no hold started lately: a HOLD segment passes untouched, uncounted",
		.family = 4,
		.mode = MODE_HOLD,
		.egress_closed = true,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_HOLD1, .seq = 5, .ack = 6, .flags = ACK,
								  .win = 0x8001, .payload = 33 } },
		},
		.check_cnt = true,
	},

	/* ---- SPLICE, IPv4 ---- */
	{
		/* The prefilter is real: without the mark the tuple lookup never happens. */
		.name = "SPLICE with the service ports unmarked: both directions pass untouched, uncounted",
		.family = 4,
		.mode = MODE_SPLICE,
		.ingress = true,
		.ports_unmarked = true,
		.up = { .seq_delta = 0x01000000, .ack_delta = 0x100, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0xff000000, .ack_delta = 0xffffff00, .wsin = 7, .wsout = 7 },
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0x11111111, .ack = 0x22222222,
								  .flags = ACK | PSH, .win = 1000, .payload = 200 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_DOWN, .seq = 0x33333333, .ack = 0x44444444,
								  .flags = ACK, .win = 1000 } },
		},
		.check_cnt = true,
	},
	{
		.name = "SPLICE up: tuple replaced, seq/ack deltas, same window scale",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x01000000, .ack_delta = 0x100, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0xff000000, .ack_delta = 0xffffff00, .wsin = 7, .wsout = 7 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x11111111, .ack = 0x22222222, .flags = ACK | PSH,
					   .win = 1000, .payload = 200 },
			  .out = { .seq = 0x12111111, .ack = 0x22222322, .win = 1000 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 }, .bytes = { 200, 0 } },
		.check_cnt = true,
		/* The fixture's windows are wide open from snd_nxt 0: its ACK counts U's bytes up to it. */
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 1, [MMP_TC_CNT_SND_NXT_RAISED_BY_ACK] = 1 },
	},
	{
		.name = "SPLICE up: seq and ack wrap across 2^32",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x200, .ack_delta = 0xffffff00, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x100, .ack_delta = 0xfffffe00, .wsin = 7, .wsout = 7 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xffffff80, .ack = 0x50, .flags = ACK | PSH, .win = 500,
					   .payload = 1448 },
			  .out = { .seq = 0x180, .ack = 0xffffff50, .win = 500 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xffffffff, .ack = 0x100, .flags = ACK, .win = 501 },
			  .out = { .seq = 0x1ff, .ack = 0, .win = 501 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 0 }, .bytes = { 1448, 0 } },
	},
	{
		.name = "SPLICE down: seq and ack wrap across 2^32",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x1000, .ack_delta = 0xfffff000, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0xfffff000, .ack_delta = 0x1000, .wsin = 7, .wsout = 7 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x800, .ack = 0xfffff800, .flags = ACK | PSH,
					   .win = 3000, .payload = 77 },
			  .out = { .seq = 0xfffff800, .ack = 0x800, .win = 3000 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x1000, .ack = 0xfffff000, .flags = ACK, .win = 3000 },
			  .out = { .seq = 0, .ack = 0, .win = 3000 } },
		},
		.check_stats = true,
		.st = { .packets = { 0, 2 }, .bytes = { 0, 77 } },
	},
	{
		.name = "SPLICE window rescale up: in 7, out 10",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 10 },
		.down = { .wsin = 10, .wsout = 7 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 1000 },
			  .out = { .seq = 1, .ack = 2, .win = 125 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 7 },
			  .out = { .seq = 1, .ack = 2, .win = 0 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 65535 },
			  .out = { .seq = 1, .ack = 2, .win = 8191 } },
		},
	},
	{
		.name = "SPLICE window rescale down: in 10, out 7, clamped to 65535",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 10 },
		.down = { .wsin = 10, .wsout = 7 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 1000 },
			  .out = { .seq = 1, .ack = 2, .win = 8000 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 8191 },
			  .out = { .seq = 1, .ack = 2, .win = 65528 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 8192 },
			  .out = { .seq = 1, .ack = 2, .win = 65535 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK | FIN, .win = 60000 },
			  .out = { .seq = 1, .ack = 2, .win = 65535 } },
		},
	},
	{
		.name = "SPLICE window extreme shifts: 14/14, 0/14, 14/0",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 14, .wsout = 14 },
		.down = { .wsin = 0, .wsout = 14 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 65535 },
			  .out = { .seq = 1, .ack = 2, .win = 65535 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 65535 },
			  .out = { .seq = 1, .ack = 2, .win = 3 } },
		},
	},
	{
		.name = "SPLICE window shift 14 -> 0 clamps",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 14, .wsout = 0 },
		.down = { .wsin = 0, .wsout = 0 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 1 },
			  .out = { .seq = 1, .ack = 2, .win = 16384 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 4 },
			  .out = { .seq = 1, .ack = 2, .win = 65535 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 12345 },
			  .out = { .seq = 1, .ack = 2, .win = 12345 } },
		},
	},
	{
		.name = "SPLICE RST+ACK at snd_nxt: seq/ack translated, window untouched, RST recorded",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 10, .ack_delta = 20, .wsin = 7, .wsout = 10 },
		.down = { .seq_delta = 0xfffffff6, .ack_delta = 0xffffffec, .wsin = 10, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0xfffffffa, 0 }, .wnd = { 1000, 1000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xfffffffa, .ack = 0x1000, .flags = RST | ACK,
					   .win = 1000 },
			  .out = { .seq = 4, .ack = 0x1014, .win = 1000 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 }, .rst = 1 },
	},
	{
		.name = "SPLICE RST without ACK: ack field untouched",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 10, .ack_delta = 20, .wsin = 7, .wsout = 10 },
		.down = { .seq_delta = 0x10000, .ack_delta = 0x20000, .wsin = 10, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0, 0x5000 }, .wnd = { 1000, 1000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x5000, .ack = 0x12345678, .flags = RST, .win = 0 },
			  .out = { .seq = 0x15000, .ack = 0x12345678, .win = 0 } },
		},
		.check_stats = true,
		.st = { .packets = { 0, 1 }, .rst = 1 },
	},
	{
		.name = "SPLICE SYN/SYN-ACK on an ended flow: untouched, their tuples forgotten",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 10, .ack_delta = 20, .wsin = 7, .wsout = 10, .ts = 1, .sack = 1, .ts_base = 99 },
		.down = { .seq_delta = 30, .ack_delta = 40, .wsin = 10, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 77 },
		.rx = { .set = true, .ended = true, .wnd = { 1 << 20, 1 << 20 } },
		.steps = {
			{ EXP_SAME, .in = { .tup = T_UP, .seq = 0x1000, .flags = SYN, .win = 64240, .opts = "MPTNW",
					    .tsval = 12345 } },
			/* The new connection's next segment: the tuple is no longer in the map. */
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0x1001, .ack = 0x2001, .flags = ACK, .win = 502,
					    .opts = "NNT", .tsval = 12346, .tsecr = 555 } },
			{ EXP_SAME, .in = { .tup = T_DOWN, .seq = 0x2000, .ack = 0x1001, .flags = SYN | ACK,
					    .win = 65160, .opts = "MPTNW", .tsval = 555, .tsecr = 12345 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_DOWN, .seq = 0x2001, .ack = 0x1001, .flags = ACK | PSH,
					    .win = 509, .payload = 10 } },
		},
		.check_stats = true,
		.st = { .rst = 1 },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TUPLE_REUSED] = 2 },
		.check_tuples = true,
		.tuples_left = (1 << T_HOLD1) | (1 << T_HOLD2),
	},
	{
		.name = "SPLICE proxy-own tuples (HOLD roles) pass unchanged",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 10, .ack_delta = 20, .wsin = 7, .wsout = 10 },
		.down = { .seq_delta = 30, .ack_delta = 40, .wsin = 10, .wsout = 7 },
		.steps = {
			{ EXP_SAME, .in = { .tup = T_HOLD1, .seq = 1, .ack = 2, .flags = ACK, .win = 100 } },
			{ EXP_SAME, .in = { .tup = T_HOLD2, .seq = 1, .ack = 2, .flags = ACK, .win = 100 } },
		},
		.check_stats = true,
		.check_cnt = true,
	},
	{
		.name = "SPLICE segment without ACK flag: ack, TSecr and SACK untouched, TSval translated",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = 0x200, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			.ts_base = 50000, .tsd = 49000 },
		.down = { .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 1 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0xdeadbeef, .flags = PSH, .win = 10,
					   .opts = "NNTNNS", .tsval = 1000, .tsecr = 777, .nsack = 1,
					   .sack = { 0x5000, 0x6000 }, .payload = 3 },
			  .out = { .seq = 0x1100, .ack = 0xdeadbeef, .win = 10, .tsval = 50000, .tsecr = 777,
				   .sack = { 0x5000, 0x6000 } } },
		},
	},

	/* ---- timestamps ---- */
	{
		.name = "timestamps: TSval offset from the switch; TSecr 0 while it echoes a frozen socket (below ts_base), then translated back",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 0x50000000, .tsd = 0x50000000u - 1000u },
		.down = { .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 0x7000, .tsd = 0x7000u - 0xaaaa0000u },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK | PSH, .win = 100, .opts = "NNT",
					   .tsval = 1000, .tsecr = 0x6999, .payload = 10 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x50000000, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 11, .ack = 2, .flags = ACK | PSH, .win = 100,
					   .opts = "NNT", .tsval = 1005, .tsecr = 0x6999, .payload = 10 },
			  .out = { .seq = 11, .ack = 2, .win = 100, .tsval = 0x50000005, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 21, .flags = ACK, .win = 200, .opts = "NNT",
					   .tsval = 0xaaaa0000, .tsecr = 0x50000005 },
			  .out = { .seq = 2, .ack = 21, .win = 200, .tsval = 0x7000, .tsecr = 1005 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 21, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 1010, .tsecr = 0x7000 },
			  .out = { .seq = 21, .ack = 2, .win = 100, .tsval = 0x5000000a, .tsecr = 0xaaaa0000 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 21, .flags = ACK, .win = 200, .opts = "NNT",
					   .tsval = 0xaaaa0003, .tsecr = 0x5000000a },
			  .out = { .seq = 2, .ack = 21, .win = 200, .tsval = 0x7003, .tsecr = 1010 } },
		},
		.check_stats = true,
		.st = { .packets = { 3, 2 }, .bytes = { 20, 0 },  },
	},
	{
		.name = "timestamps: offsets and TSvals wrap across 2^32",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 0x100, .tsd = 0x110 },
		.down = { .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 0xfffffffe, .tsd = 0xffffffee },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0xfffffff0, .tsecr = 0xfffff000 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x100, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 1, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0x10, .tsecr = 0x100 },
			  .out = { .seq = 2, .ack = 1, .win = 100, .tsval = 0xfffffffe, .tsecr = 0xfffffff0 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0x4, .tsecr = 0xfffffffe },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x114, .tsecr = 0x10 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 1, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0x13, .tsecr = 0x114 },
			  .out = { .seq = 2, .ack = 1, .win = 100, .tsval = 0x1, .tsecr = 0x4 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 2 },  },
	},
	{
		.name = "timestamps: a reordered lower TSval keeps the offset",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7, .ts = 1, .ts_base = 0x1000, .tsd = 0x1000u - 5000u },
		.down = { .wsin = 7, .wsout = 7, .ts = 1, .ts_base = 0x2000 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 5000, .tsecr = 1 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x1000, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 4990, .tsecr = 1 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x1000 - 10, .tsecr = 0 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 0 },  },
	},
	{
		.name = "timestamps off in the flow: TS option untouched",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 5, .ack_delta = 6, .wsin = 7, .wsout = 7 },
		.down = { .wsin = 7, .wsout = 7 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0x11111111, .tsecr = 0x22222222 },
			  .out = { .seq = 6, .ack = 8, .win = 100, .tsval = 0x11111111, .tsecr = 0x22222222 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 } },
	},

	/* ---- SACK ---- */
	{
		.name = "SACK 1 block after NOP NOP TS NOP NOP",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = 0x10000, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			.ts_base = 0x1000, .tsd = 0xff9 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x500, .ack = 0x1000, .flags = ACK, .win = 300,
					   .opts = "NNTNNS", .tsval = 7, .tsecr = 9, .nsack = 1, .sack = { 0x2000, 0x3000 } },
			  .out = { .seq = 0x600, .ack = 0x11000, .win = 300, .tsval = 0x1000, .tsecr = 0,
				   .sack = { 0x12000, 0x13000 } } },
		},
	},
	{
		.name = "SACK 2 blocks, no timestamps, edges wrap across 2^32",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0, .ack_delta = 0x100, .wsin = 7, .wsout = 7, .sack = 1 },
		.down = { .wsin = 7, .wsout = 7, .sack = 1 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x500, .ack = 0xffffff00, .flags = ACK, .win = 300,
					   .opts = "NNS", .nsack = 2,
					   .sack = { 0xffffff80, 0xfffffff0, 0xfffffff8, 0x40 } },
			  .out = { .seq = 0x500, .ack = 0, .win = 300, .sack = { 0x80, 0xf0, 0xf8, 0x140 } } },
		},
	},
	{
		.name = "SACK 3 blocks with timestamps: 40 bytes of options",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = { .seq_delta = 0x7, .ack_delta = 0x80000000, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			  .ts_base = 0xabcdef01, .tsd = 0xabcdee01 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x10, .ack = 0x80000010, .flags = ACK, .win = 512,
					   .opts = "NNTNNS", .tsval = 0x100, .tsecr = 0x200, .nsack = 3,
					   .sack = { 0x80000100, 0x80000200, 0x80000300, 0x80000400, 0x7fffff00,
						     0x80000005 } },
			  .out = { .seq = 0x17, .ack = 0x10, .win = 512, .tsval = 0xabcdef01, .tsecr = 0,
				   .sack = { 0x100, 0x200, 0x300, 0x400, 0xffffff00, 0x5 } } },
		},
	},
	{
		.name = "SACK 3 blocks at odd alignment: NOP TS NOP NOP SACK EOL",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = { .seq_delta = 0x3, .ack_delta = 0xfffffe00, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			  .ts_base = 0x11223344, .tsd = 0x11223344u - 0xcafeu },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0xfffffffe, .ack = 0x300, .flags = ACK | PSH,
					   .win = 1024, .opts = "NTNNS", .tsval = 0xcafe, .tsecr = 0xbeef, .nsack = 3,
					   .sack = { 0x100, 0x180, 0x1f0, 0x200, 0x250, 0x300 }, .payload = 17 },
			  .out = { .seq = 0x1, .ack = 0x100, .win = 1024, .tsval = 0x11223344, .tsecr = 0xbeef,
				   .sack = { 0xffffff00, 0xffffff80, 0xfffffff0, 0x0, 0x50, 0x100 } } },
		},
		.check_stats = true,
		.st = { .packets = { 0, 1 }, .bytes = { 0, 17 } },
	},
	{
		.name = "SACK 4 blocks, no timestamps",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .ack_delta = 0x01010101, .wsin = 7, .wsout = 7, .sack = 1 },
		.down = { .wsin = 7, .wsout = 7, .sack = 1 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 0x10, .flags = ACK, .win = 9, .opts = "NNS",
					   .nsack = 4, .sack = { 0x20, 0x30, 0x40, 0x50, 0x60, 0x70, 0xfefefeff, 0xfefeff00 } },
			  .out = { .seq = 1, .ack = 0x01010111, .win = 9,
				   .sack = { 0x01010121, 0x01010131, 0x01010141, 0x01010151, 0x01010161, 0x01010171,
					     0x0, 0x1 } } },
		},
	},
	{
		.name = "SACK after unknown options (MSS, window scale) is still found",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .ack_delta = 0x1000, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 0x55, .tsd = 0x52 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 0x10, .flags = ACK, .win = 9, .opts = "MWTS",
					   .tsval = 3, .tsecr = 4, .nsack = 1, .sack = { 0x20, 0x30 } },
			  .out = { .seq = 1, .ack = 0x1010, .win = 9, .tsval = 0x55, .tsecr = 0,
				   .sack = { 0x1020, 0x1030 } } },
		},
	},

	/* ---- IPv6 ---- */
	{
		.name = "IPv6 SPLICE up: tuple, seq/ack wrap, rescale, TS, SACK",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x200, .ack_delta = 0xffffff00, .wsin = 7, .wsout = 10, .ts = 1, .sack = 1,
			.ts_base = 0x3000, .tsd = 0x2ff0 },
		.down = { .seq_delta = 0xfffffe00, .ack_delta = 0x100, .wsin = 10, .wsout = 7, .ts = 1, .sack = 1,
			  .ts_base = 0x4000 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xffffff80, .ack = 0x50, .flags = ACK | PSH, .win = 1000,
					   .opts = "NNTNNS", .tsval = 0x10, .tsecr = 0x20, .nsack = 2,
					   .sack = { 0x60, 0x70, 0x80, 0x90 }, .payload = 1200 },
			  .out = { .seq = 0x180, .ack = 0xffffff50, .win = 125, .tsval = 0x3000, .tsecr = 0,
				   .sack = { 0xffffff60, 0xffffff70, 0xffffff80, 0xffffff90 } } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x430, .ack = 0x50, .flags = ACK | FIN, .win = 1000,
					   .opts = "NNT", .tsval = 0x15, .tsecr = 0x20 },
			  .out = { .seq = 0x630, .ack = 0xffffff50, .win = 125, .tsval = 0x3005, .tsecr = 0 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 0 }, .bytes = { 1200, 0 }, .fin = { 1, 0 } },
	},
	{
		.name = "IPv6 SPLICE down: tuple, seq/ack wrap, clamp, TSecr translated back",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x200, .ack_delta = 0xffffff00, .wsin = 7, .wsout = 10, .ts = 1, .sack = 1,
			.ts_base = 0x3000, .tsd = 0x2b00 },
		.down = { .seq_delta = 0xfffffe00, .ack_delta = 0x100, .wsin = 10, .wsout = 7, .ts = 1, .sack = 1,
			  .ts_base = 0x4000, .tsd = 0x3f89 },
		/* Each ACK acknowledges no more than the other side sent, so the RST at 0x163 is at snd_nxt. */
		.rx = { .set = true, .nxt = { 0x1300, 0x100 }, .wnd = { 1 << 20, 1 << 20 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x200, .flags = ACK, .win = 100,
					   .opts = "NNT", .tsval = 0x500, .tsecr = 1 },
			  .out = { .seq = 0x1200, .ack = 0x100, .win = 12, .tsval = 0x3000, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x100, .ack = 0x1200, .flags = ACK | PSH, .win = 9000,
					   .opts = "NNTNNS", .tsval = 0x77, .tsecr = 0x3000, .nsack = 1,
					   .sack = { 0xffffff00, 0x10 }, .payload = 99 },
			  .out = { .seq = 0xffffff00, .ack = 0x1300, .win = 65535, .tsval = 0x4000, .tsecr = 0x500,
				   .sack = { 0x0, 0x110 } } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x163, .ack = 0x1200, .flags = RST | ACK, .win = 9000,
					   .opts = "NNT", .tsval = 0x78, .tsecr = 0x3000 },
			  .out = { .seq = 0xffffff63, .ack = 0x1300, .win = 9000, .tsval = 0x4001, .tsecr = 0x500 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 2 }, .bytes = { 0, 99 }, .rst = 1 },
	},
	{
		.name = "IPv6 HOLD: conn1 window 0, UP unchanged",
		.family = 6,
		.mode = MODE_HOLD,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_WIN0, .in = { .tup = T_HOLD1, .seq = 0xabcdef00, .ack = 0x12, .flags = ACK | PSH,
					    .win = 0x7fff, .opts = "NNT", .tsval = 5, .tsecr = 6, .payload = 40 } },
			{ EXP_SAME, .in = { .tup = T_UP, .seq = 0x12, .ack = 0xabcdef28, .flags = ACK, .win = 0x7fff,
					    .opts = "NNT", .tsval = 7, .tsecr = 5 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_HELD] = 1 },
	},
	{
		.name = "IPv6 FREEZE: UP/DOWN dropped, RST passes, conn2 window 0",
		.family = 6,
		.mode = MODE_FREEZE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 5 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK,
								.win = 5 } },
			{ EXP_WIN0, .in = { .tup = T_HOLD2, .seq = 1, .ack = 2, .flags = ACK, .win = 5, .payload = 1 } },
			{ EXP_SAME, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = RST | ACK, .win = 5 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_FREEZE_DROPS] = 2, [MMP_TC_CNT_HELD] = 1 },
	},
	{
		.name = "IPv6 unknown tuple: unchanged",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 1, .ack_delta = 2, .wsin = 7, .wsout = 8 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_OTHER, .seq = 1, .ack = 2, .flags = ACK, .win = 500 } },
		},
		.check_stats = true,
		.check_cnt = true,
	},

	/* ---- packet shapes, checksum states, programs, redirects ---- */
	{
		.name = "IPv4 with IP options (IHL 6): TCP rewritten at the right offset",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			.ts_base = 0x999, .tsd = 0x996 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK | PSH, .win = 100,
					   .opts = "NNTNNS", .tsval = 3, .tsecr = 4, .nsack = 1, .sack = { 5, 6 },
					   .payload = 30, .ip_opt_words = 1 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100, .tsval = 0x999, .tsecr = 0,
				   .sack = { 0x25, 0x26 } } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 }, .bytes = { 30, 0 } },
	},
	{
		.name = "bad TCP checksum on input stays off by the same amount after SPLICE",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 9, .ts = 1, .ts_base = 0x999, .tsd = 0x996 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 1000, .opts = "NNT",
					   .tsval = 3, .tsecr = 4, .payload = 8, .csum_err = 0x0101 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 250, .tsval = 0x999, .tsecr = 0 } },
		},
	},
	{
		.name = "IPv6 bad TCP checksum on input stays off by the same amount after SPLICE",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 9, .wsout = 7, .ts = 1, .ts_base = 0x999, .tsd = 0x996 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 1000, .opts = "NNT",
					   .tsval = 3, .tsecr = 4, .payload = 8, .csum_err = 0xff00 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 4000, .tsval = 0x999, .tsecr = 0 } },
		},
	},
	{
		.name = "mmp_tc_ingress translates like mmp_tc_egress",
		.family = 4,
		.mode = MODE_SPLICE,
		.ingress = true,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 9, .tsd = 6 },
		.down = { .seq_delta = 0xfffffff0, .ack_delta = 0xffffffe0, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			  .ts_base = 8, .tsd = (uint32_t)-42 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 3, .tsecr = 4 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100, .tsval = 9, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x22, .ack = 0x11, .flags = ACK, .win = 100,
					   .opts = "NNT", .tsval = 50, .tsecr = 9 },
			  .out = { .seq = 0x12, .ack = 0xfffffff1, .win = 100, .tsval = 8, .tsecr = 3 } },
			{ EXP_SAME, .in = { .tup = T_HOLD1, .seq = 1, .ack = 2, .flags = ACK, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 1 } },
	},
	{
		.name = "redirect into lo ingress: Ethernet addresses zeroed, TC_ACT_REDIRECT",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .redirect_ifindex = 1,
			.redirect_ingress = 1 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .ret = TC_ACT_REDIRECT, .mac_zeroed = true,
			  .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK | PSH, .win = 100, .payload = 64 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 }, .bytes = { 64, 0 } },
	},
	{
		.name = "redirect out via the neighbour: Ethernet addresses kept, TC_ACT_REDIRECT",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .redirect_ifindex = 1,
			  .redirect_ingress = 0 },
		.steps = {
			{ EXP_SEG, .ret = TC_ACT_REDIRECT,
			  .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK | PSH, .win = 100, .payload = 64 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100 } },
		},
	},

	{
		/* docs/DESIGN.md §14: reply steering marked it for local delivery, but it goes to the load balancer. */
		.name = "upstream beyond loopback: a steered reply loses the steering mark, other marks stay",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .redirect_ifindex = 1,
			  .redirect_ingress = 0 },
		.steps = {
			{ EXP_SEG, .ret = TC_ACT_REDIRECT, .mark_in = MMP_STEER_MARK, .check_mark = true, .mark_out = 0,
			  .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK | PSH, .win = 100, .payload = 64 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100 } },
			{ EXP_SEG, .ret = TC_ACT_REDIRECT, .mark_in = 123, .check_mark = true, .mark_out = 123,
			  .in = { .tup = T_DOWN, .seq = 65, .ack = 2, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x51, .ack = 0x22, .win = 100 } },
			/* The other direction keeps whatever it came with (no -m here). */
			{ EXP_SEG, .mark_in = MMP_STEER_MARK, .check_mark = true, .mark_out = MMP_STEER_MARK,
			  .in = { .tup = T_UP, .seq = 2, .ack = 65, .flags = ACK, .win = 100 },
			  .out = { .seq = 2, .ack = 65, .win = 100 } },
		},
	},
	{
		.name = "timestamps: an offset of exactly 0 translates TSecr back too",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7, .ts = 1, .ts_base = 1000 },
		.down = { .wsin = 7, .wsout = 7, .ts = 1, .ts_base = 0x500, .tsd = 0x100 },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 1000, .tsecr = 77 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 1000, .tsecr = 0 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 1, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0x400, .tsecr = 1000 },
			  .out = { .seq = 2, .ack = 1, .win = 100, .tsval = 0x500, .tsecr = 1000 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 1 } },
	},
	{
		.name = "malformed option length (overruns the header): options untouched, header translated",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			.ts_base = 0x999 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "XNNT",
					   .tsval = 3, .tsecr = 4 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100, .tsval = 3, .tsecr = 4 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 0 } },
	},
	{
		.name = "option of length 0 or 1 stops the option scan: later TS untouched",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .ts = 1, .sack = 1,
			.ts_base = 0x999 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "ZNNT",
					   .tsval = 3, .tsecr = 4 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100, .tsval = 3, .tsecr = 4 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "YNNT",
					   .tsval = 3, .tsecr = 4 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100, .tsval = 3, .tsecr = 4 } },
		},
	},
	{
		.name = "Ethernet padding after a short frame: rewritten, kept, not counted as payload",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x30, .ack_delta = 0x40, .wsin = 7, .wsout = 7 },
		.steps = {
			/* 54 bytes of pure ACK, padded to the 60-byte Ethernet minimum. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .eth_pad = 6 },
			  .out = { .seq = 0x11, .ack = 0x22, .win = 100 } },
			/* 2 bytes of payload, padded by 4. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 1, .flags = ACK | PSH, .win = 100,
					   .payload = 2, .eth_pad = 4 },
			  .out = { .seq = 0x32, .ack = 0x41, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 1 }, .bytes = { 0, 2 } },
	},

	/* ---- RST, SYN, FIN as kernel TCP judges them (RFC 5961; docs/DESIGN.md §3c) ---- */
	{
		.name = "RST: in the window but not at snd_nxt passes translated, unmarked; outside it is dropped",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = 0x200, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = 0x400, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x8000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1001, .flags = RST },
			  .out = { .seq = 0x1101 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000 + 0xffff, .ack = 5, .flags = RST | ACK },
			  .out = { .seq = 0x10fff + 0x100, .ack = 0x205 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_UP, .seq = 0x1000 + 0x10000, .flags = RST } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_UP, .seq = 0x0fff, .flags = RST } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_UP, .seq = 0x80001000, .flags = RST | ACK } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2001, .ack = 7, .flags = RST | ACK },
			  .out = { .seq = 0x2301, .ack = 0x407 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_DOWN, .seq = 0x2000 + 0x8000, .flags = RST } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 1 }, .check_nxt = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x8000 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 3, [MMP_TC_CNT_RST_CHALLENGED] = 3, [MMP_TC_CNT_RST_DROPPED] = 4 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},
	{
		.name = "RST: snd_nxt follows the sender's data and FIN; an RST exactly there ends the flow",
		.family = 6,
		.mode = MODE_SPLICE,
		/* Each ack_delta undoes the other direction's seq_delta, as at a real switch. */
		.up = { .seq_delta = 0x10, .ack_delta = (uint32_t)-0x30, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x30, .ack_delta = (uint32_t)-0x10, .wsin = 2, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0xfffffff0, 0x500 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			/* 0x20 bytes across 2^32: snd_nxt 0x10. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xfffffff0, .ack = 0x530, .flags = ACK | PSH, .win = 100,
					   .payload = 0x20 },
			  .out = { .seq = 0, .ack = 0x500, .win = 100 } },
			/* A retransmission of older bytes does not move it back. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xfffffff0, .ack = 0x530, .flags = ACK | PSH, .win = 100,
					   .payload = 0x10 },
			  .out = { .seq = 0, .ack = 0x500, .win = 100 } },
			/* Window 1000 << 2: the up direction's RSTs are judged by it from now on. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x20, .flags = ACK | FIN, .win = 1000 },
			  .out = { .seq = 0x530, .ack = 0x10, .win = 31 } },
			/* The old snd_nxt is behind now: dropped. */
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_UP, .seq = 0xfffffff0, .flags = RST } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x10, .flags = RST },
			  .out = { .seq = 0x20 } },
		},
		.check_stats = true,
		.st = { .packets = { 3, 1 }, .bytes = { 0x30, 0 }, .fin = { 0, 1 }, .rst = 1, .check_nxt = true,
			.nxt = { 0x10, 0x501 }, .wnd = { 4000, 100 << 7 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 4, [MMP_TC_CNT_RST_DROPPED] = 1 },
	},
	{
		.name = "SYN on a live flow: translated for the endpoint to challenge, tuples kept, not reset",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 10, .ack_delta = 20, .wsin = 7, .wsout = 10, .ts = 1, .sack = 1, .ts_base = 99,
			.tsd = 0x1000 },
		.down = { .seq_delta = 30, .ack_delta = 40, .wsin = 10, .wsout = 7, .ts = 1, .sack = 1, .ts_base = 77 },
		.rx = { .set = true, .nxt = { 0x5000, 0x6000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0xdead0000, .flags = SYN, .win = 64240, .opts = "MPTNW",
					   .tsval = 12345 },
			  .out = { .seq = 0xdead000a, .win = 64240, .tsval = 12345 + 0x1000 } },
			/* The flow goes on. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x5000, .ack = 0x6000 - 20, .flags = ACK | PSH, .win = 8,
					   .payload = 10 },
			  .out = { .seq = 0x500a, .ack = 0x6000, .win = 1 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 0 }, .bytes = { 10, 0 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 2, [MMP_TC_CNT_SYN_CHALLENGED] = 1 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},
	{
		.name = "SYN after FINs both ways: a new connection, its tuple forgotten",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7 },
		.down = { .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x100, 0x200 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x100, .ack = 0x200, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x100, .ack = 0x200, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x200, .ack = 0x101, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x200, .ack = 0x101, .win = 100 } },
			{ EXP_SAME, .in = { .tup = T_UP, .seq = 0x7000, .flags = SYN, .win = 64240 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 1 }, .fin = { 1, 1 }, .rst = 1 },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 2, [MMP_TC_CNT_TUPLE_REUSED] = 1 },
		.check_tuples = true,
		.tuples_left = 0xf & ~(1 << T_UP),
	},
	{
		.name = "FIN outside the window: translated but not recorded, so a later SYN is challenged",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7 },
		.down = { .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x100, 0x200 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x80000100, .ack = 0x200, .flags = ACK | FIN, .win = 0 },
			  .out = { .seq = 0x80000100, .ack = 0x200, .win = 0 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x200, .ack = 0x100, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x200, .ack = 0x100, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x9999, .flags = SYN, .win = 64240 },
			  .out = { .seq = 0x9999, .win = 64240 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 1 }, .fin = { 0, 1 }, .check_nxt = true, .nxt = { 0x100, 0x201 },
			.wnd = { 100 << 7, 0x10000 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 3, [MMP_TC_CNT_SYN_CHALLENGED] = 1 },
	},
	{
		/*
		 * Issue 26 finding 4. Each ack_delta undoes the other direction's
		 * seq_delta, as at a real switch: L's ACK of U's snd_nxt 0x2000
		 * reads 0x2300 on conn1. A SYN probes whether the flow ended (a
		 * new connection: forgotten) or not (challenged).
		 */
		.name = "blind desync: an in-window segment with a bogus ACK moves no snd_nxt; an RST there is only passed",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = (uint32_t)-0x300, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = (uint32_t)-0x100, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			/* Spoofed: seq in the window, ACK of nothing U sent; it would set snd_nxt 0x1600. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1100, .ack = 0x80000000, .flags = ACK | PSH, .win = 100,
					   .payload = 0x500 },
			  .out = { .seq = 0x1200, .ack = 0x7ffffd00, .win = 100 } },
			/*
			 * ACK one byte beyond what U could send into L's window
			 * (0x2000 + 0x10000), or older than the window allows:
			 * not acceptable either.
			 */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x12301, .flags = ACK | PSH, .win = 100,
					   .payload = 0x600 },
			  .out = { .seq = 0x1100, .ack = 0x12001, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x2300 - 0x20001, .flags = ACK | PSH,
					   .win = 100, .payload = 0x600 },
			  .out = { .seq = 0x1100, .ack = 0x2000 - 0x20001, .win = 100 } },
			/* No ACK flag: an established endpoint drops it. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .flags = PSH, .win = 100, .payload = 0x600 },
			  .out = { .seq = 0x1100, .win = 100 } },
			/* The RST at the seq the spoofed segments would have set: passed for the endpoint to challenge. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1600, .flags = RST },
			  .out = { .seq = 0x1700 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x9999, .flags = SYN, .win = 64240 },
			  .out = { .seq = 0x9a99, .win = 64240 } },
		},
		.check_stats = true,
		.st = { .packets = { 6, 0 }, .bytes = { 0x1700, 0 }, .check_nxt = true, .nxt = { 0x1000, 0x2000 },
			.wnd = { 0x10000, 0x10000 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 6, [MMP_TC_CNT_RST_CHALLENGED] = 1, [MMP_TC_CNT_SYN_CHALLENGED] = 1 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},
	{
		.name = "blind desync: ACKs within [snd_nxt - wnd - 64 KiB, snd_nxt] move snd_nxt; an RST there ends the flow",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = (uint32_t)-0x300, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = (uint32_t)-0x100, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			/* The oldest ACK still acceptable (wnd 0x10000 + 64 KiB behind): snd_nxt 0x1100. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x2300 - 0x20000, .flags = ACK | PSH,
					   .win = 100, .payload = 0x100 },
			  .out = { .seq = 0x1100, .ack = 0x2000 - 0x20000, .win = 100 } },
			/* Exactly U's snd_nxt: snd_nxt 0x1200. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1100, .ack = 0x2300, .flags = ACK | PSH, .win = 100,
					   .payload = 0x100 },
			  .out = { .seq = 0x1200, .ack = 0x2000, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1200, .flags = RST },
			  .out = { .seq = 0x1300 } },
		},
		.check_stats = true,
		.st = { .packets = { 3, 0 }, .bytes = { 0x200, 0 }, .rst = 1, .check_nxt = true,
			.nxt = { 0x1200, 0x2000 }, .wnd = { 0x10000, 100 << 7 } },
	},
	{
		.name = "blind desync: after the upstream's FIN, a FIN with a bogus ACK does not end the flow; L's own does",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = (uint32_t)-0x300, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = (uint32_t)-0x100, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			/* U half-closes: snd_nxt 0x2001. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2000, .ack = 0x1100, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x2300, .ack = 0x1000, .win = 100 } },
			/* Spoofed FIN at L's snd_nxt, its ACK a guess. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x40000000, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x1100, .ack = 0x3ffffd00, .win = 100 } },
			/* Not ended: a SYN is challenged, not taken for a new connection. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x9999, .flags = SYN, .win = 64240 },
			  .out = { .seq = 0x9a99, .win = 64240 } },
			/* L's FIN, acknowledging U's: the flow ends. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x2301, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x1100, .ack = 0x2001, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 3, 1 }, .fin = { 1, 1 }, .check_nxt = true, .nxt = { 0x1001, 0x2001 },
			.wnd = { 100 << 7, 100 << 7 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 4, [MMP_TC_CNT_SYN_CHALLENGED] = 1 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},
	{
		/*
		 * U's bytes 0x2000-0x2800 reached L without being counted (two
		 * CPUs updated snd_nxt at once and one update was lost). L's ACK
		 * of them lies within what U could send into L's window: it
		 * brings U's snd_nxt up to them, and U's FIN, which acks L's
		 * bytes, is then acceptable and recorded. Before, L's ACK was
		 * beyond U's snd_nxt and U's FIN beyond L's: neither direction
		 * moved again, and the flow never ended.
		 */
		.name = "a lost update heals: an ACK of bytes not counted raises snd_nxt, the FINs are recorded",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = (uint32_t)-0x300, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = (uint32_t)-0x100, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1000, .ack = 0x2b00, .flags = ACK | PSH, .win = 100,
					   .payload = 0x100 },
			  .out = { .seq = 0x1100, .ack = 0x2800, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2800, .ack = 0x1200, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x2b00, .ack = 0x1100, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x1100, .ack = 0x2b01, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x1200, .ack = 0x2801, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 2, 1 }, .bytes = { 0x100, 0 }, .fin = { 1, 1 }, .check_nxt = true,
			.nxt = { 0x1101, 0x2801 }, .wnd = { 100 << 7, 100 << 7 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 3, [MMP_TC_CNT_SND_NXT_RAISED_BY_ACK] = 1 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},

	{
		/*
		 * docs/DESIGN.md §3c, "Window probes that carry an ACK". L's
		 * window probe (seq one below U's next) that acks U's new bytes
		 * goes at U's next seq, where U takes the ACK; its repeat, with
		 * the same ack, stays a probe, and so does a probe that acks only
		 * part of what U sent (as a pure ACK at U's next seq it would be
		 * a duplicate ACK).
		 */
		.name = "a window probe that acks new bytes goes at the receiver's next seq; its repeat stays a probe",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x100, .ack_delta = (uint32_t)-0x300, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0x300, .ack_delta = (uint32_t)-0x100, .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 0x1000, 0x2000 }, .wnd = { 0x10000, 0x10000 } },
		.steps = {
			/* U sends 0x400 bytes, which fill L's window. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2000, .ack = 0x1100, .flags = ACK | PSH, .win = 100,
					   .payload = 0x400 },
			  .out = { .seq = 0x2300, .ack = 0x1000, .win = 100 } },
			/* L, at window 0, probes and acks them: moved to seq 0x1000 (+0x100). */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x0fff, .ack = 0x2700, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x1100, .ack = 0x2400, .win = 100 } },
			/* The next probe acks nothing new: a probe still. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x0fff, .ack = 0x2700, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x10ff, .ack = 0x2400, .win = 100 } },
			/* U sends more, L's probe acks it: moved again. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2400, .ack = 0x1100, .flags = ACK | PSH, .win = 100,
					   .payload = 0x100 },
			  .out = { .seq = 0x2700, .ack = 0x1000, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x0fff, .ack = 0x2800, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x1100, .ack = 0x2500, .win = 100 } },
			/* U sends more, L's probe acks only part of it: a probe still. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2500, .ack = 0x1100, .flags = ACK | PSH, .win = 100,
					   .payload = 0x100 },
			  .out = { .seq = 0x2800, .ack = 0x1000, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x0fff, .ack = 0x2800, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x10ff, .ack = 0x2500, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 4, 3 }, .bytes = { 0, 0x600 }, .check_nxt = true, .nxt = { 0x1000, 0x2600 },
			.wnd = { 100 << 7, 100 << 7 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 7, [MMP_TC_CNT_PROBE_ACKS_DELIVERED] = 2 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},

	/* ---- interface ---- */
	{
		.name = "a flow's tuple on another interface than the flow's: untouched, in SPLICE and FREEZE",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x10, .ack_delta = 0x20, .wsin = 7, .wsout = 7, .ifindex = 99 },
		.down = { .seq_delta = 0x30, .ack_delta = 0x40, .wsin = 7, .wsout = 7 },
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK | PSH,
								  .win = 100, .payload = 10 } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 0, .flags = RST } },
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 5, .flags = SYN, .win = 100 } },
			/* The other direction is on its own interface (lo): translated. */
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 1, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x32, .ack = 0x41, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 0, 1 } },
		.check_cnt = true,
		/* Wide open windows from snd_nxt 0 (the fixture's): the ACK counts L's bytes up to it. */
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 1, [MMP_TC_CNT_WRONG_IFACE] = 3, [MMP_TC_CNT_SND_NXT_RAISED_BY_ACK] = 1 },
		.check_tuples = true,
		.tuples_left = 0xf,
	},
	{
		.name = "FREEZE: a flow's tuple on another interface is not dropped either: not ours",
		.family = 6,
		.mode = MODE_FREEZE,
		.up = { .wsin = 7, .wsout = 7, .ifindex = 99 },
		.down = DIR_TS_SACK,
		.steps = {
			{ EXP_SAME, .ret = TC_ACT_UNSPEC, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_DOWN, .seq = 1, .ack = 2, .flags = ACK, .win = 100 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_FREEZE_DROPS] = 1, [MMP_TC_CNT_WRONG_IFACE] = 1 },
	},

	/* ---- the TSval offset is userspace's ---- */
	{
		.name = "timestamps: the first packet after the switch does not choose the offset",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7, .ts = 1, .ts_base = 0x1000, .tsd = 0x100 },
		.down = { .wsin = 7, .wsout = 7, .ts = 1, .ts_base = 0x2000, .tsd = 0x1100 },
		.steps = {
			/* Injected, with a TSval far ahead: translated by the switch's offset, no more. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0x70000000, .tsecr = 0x10 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x70000100, .tsecr = 0 } },
			/* The load balancer's own next segment: at ts_base, as the switch planned. */
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 2, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0xf00, .tsecr = 0x2000 },
			  .out = { .seq = 1, .ack = 2, .win = 100, .tsval = 0x1000, .tsecr = 0xf00 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 2, .ack = 1, .flags = ACK, .win = 100, .opts = "NNT",
					   .tsval = 0xf00, .tsecr = 0x1000 },
			  .out = { .seq = 2, .ack = 1, .win = 100, .tsval = 0x2000, .tsecr = 0xf00 } },
		},
	},

	/* ---- stats ---- */
	{
		.name = "stats: packets and bytes per direction, FIN per direction",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = { .seq_delta = 0x1000, .ack_delta = 0x2000, .wsin = 7, .wsout = 7 },
		.down = { .seq_delta = 0xffffe000, .ack_delta = 0xfffff000, .wsin = 7, .wsout = 7 },
		/* L's data starts at 1, U's at 0x2001: what the ACKs acknowledge. */
		.rx = { .set = true, .nxt = { 1, 0x2001 }, .wnd = { 1 << 20, 1 << 20 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 1, .flags = ACK | PSH, .win = 100, .payload = 100 },
			  .out = { .seq = 0x1001, .ack = 0x2001, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x2001, .ack = 0x1065, .flags = ACK | PSH, .win = 100,
					   .payload = 1448 },
			  .out = { .seq = 0x1, .ack = 0x65, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x65, .ack = 0x5a9, .flags = ACK | FIN, .win = 100 },
			  .out = { .seq = 0x1065, .ack = 0x25a9, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x25a9, .ack = 0x1066, .flags = ACK | FIN | PSH,
					   .win = 100, .payload = 10 },
			  .out = { .seq = 0x5a9, .ack = 0x66, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x66, .ack = 0x5b4, .flags = ACK, .win = 100 },
			  .out = { .seq = 0x1066, .ack = 0x25b4, .win = 100 } },
		},
		.check_stats = true,
		.st = { .packets = { 3, 2 }, .bytes = { 100, 1458 }, .fin = { 1, 1 } },
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_TRANSLATED] = 5 },
	},
	{
		.name = "stats: RST recorded, FIN only for its direction",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = { .wsin = 7, .wsout = 7 },
		.down = { .wsin = 7, .wsout = 7 },
		.rx = { .set = true, .nxt = { 1, 1 }, .wnd = { 1 << 20, 1 << 20 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 1, .ack = 1, .flags = ACK | FIN, .win = 100, .payload = 5 },
			  .out = { .seq = 1, .ack = 1, .win = 100 } },
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 1, .ack = 7, .flags = RST, .win = 0 },
			  .out = { .seq = 1, .ack = 7, .win = 0 } },
		},
		.check_stats = true,
		.st = { .packets = { 1, 1 }, .bytes = { 0, 5 }, .fin = { 0, 1 }, .rst = 1 },
	},
	/* ---- a carry's receiver: its ack clamped, its SACK blocks recorded for the carrier ---- */
	{
		/*
		 * Bytes carried to the upstream (end 0x3000): the upstream's data
		 * segment acks 0x1000 and holds two blocks beyond. Its ack goes
		 * out raised to the carry's end, its window 0 while 0x2000 are
		 * unacked (the load balancer sends nothing to time out behind
		 * the carry), and the carrier learns the blocks.
		 */
		.name = "carry: the receiver's SACK blocks are recorded, its ack raised",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x800, 0 }, .edge = { 0x9000, 0 }, .tsval = { 0x3000, 0 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x1000, .flags = ACK | PSH, .win = 0x100,
					   .opts = "NNTNNS", .tsval = 0x77, .tsecr = 0x2000, .nsack = 2,
					   .sack = { 0x2000, 0x2800, 0x1800, 0x1c00 }, .payload = 10 },
			  .out = { .seq = 0x500, .ack = 0x3000, .win = 0, .tsval = 0x77, .tsecr = 0x2000,
				   .sack = { 0x2000, 0x2800, 0x1800, 0x1c00 } } },
		},
		.check_carry = true,
		.carry_tsval = { 0x3000, 0 },
		.sack_n = { 2, 0 },
		.sack = { { 0x2000, 0x2800, 0x1800, 0x1c00 } },
	},
	{
		/*
		 * The receiver's duplicate ACKs are dropped (they would reach the
		 * other peer as duplicates), but their blocks are the newest:
		 * recorded, all three.
		 */
		.name = "carry: a dropped duplicate ACK's blocks are recorded",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x1000, 0 }, .edge = { 0x9000, 0 },
			   .tsval = { 0x3000, 0 } },
		.steps = {
			{ EXP_SHOT, .ret = TC_ACT_SHOT,
			  .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x1000, .flags = ACK, .win = 0x100,
				  .opts = "NNTNNS", .tsval = 0x77, .tsecr = 0x2000, .nsack = 3,
				  .sack = { 0x2400, 0x2800, 0x1800, 0x1c00, 0x2000, 0x2200 } } },
		},
		.check_carry = true,
		.carry_tsval = { 0x3000, 0 },
		.sack_n = { 3, 0 },
		.sack = { { 0x2400, 0x2800, 0x1800, 0x1c00, 0x2000, 0x2200 } },
	},
	{
		/* An ACK without blocks: the receiver holds nothing beyond its ack any more (pruned). */
		.name = "carry: an ACK without blocks clears the recorded ones",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x1000, 0 }, .edge = { 0x9000, 0 },
			   .tsval = { 0x3000, 0 }, .sack_n = { 1, 0 }, .sack = { { 0x2000, 0x2800 } } },
		.steps = {
			{ EXP_SHOT, .ret = TC_ACT_SHOT,
			  .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x1000, .flags = ACK, .win = 0x100, .opts = "NNT",
				  .tsval = 0x78, .tsecr = 0x2000 } },
		},
		.check_carry = true,
		.carry_tsval = { 0x3000, 0 },
		.sack_n = { 0, 0 },
	},
	{
		/* Only bytes carried to the load balancer: the upstream's blocks are of no carry. */
		.name = "carry: blocks of a peer that receives no carried byte are not recorded",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_DOWN,
		.carry = { .end = { 0, 0x3000 }, .acked = { 0, 0x1000 }, .edge = { 0, 0x9000 }, .tsval = { 0x1000, 0x1000 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x1000, .flags = ACK | PSH, .win = 0x100,
					   .opts = "NNTNNS", .tsval = 0x77, .tsecr = 0x2000, .nsack = 1,
					   .sack = { 0x2000, 0x2800 }, .payload = 10 },
			  .out = { .seq = 0x500, .ack = 0x1000, .win = 0x100, .tsval = 0x77, .tsecr = 0x2000,
				   .sack = { 0x2000, 0x2800 } } },
		},
		.check_carry = true,
		.carry_tsval = { 0x1000, 0x1000 },
		.sack_n = { 0, 0 },
	},
	{
		/*
		 * The receiver echoes a TSecr above the carried segments' TSval:
		 * something with a newer clock landed in sequence there, and
		 * carried segments at the old TSval would all be dropped by PAWS.
		 * The carry's TSval follows it; a lower echo leaves it.
		 */
		.name = "carry: the carried TSval rises to the receiver's newer ts_recent, never falls",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x1000, 0 }, .edge = { 0x9000, 0 },
			   .tsval = { 0x1800, 0 } },
		.steps = {
			{ EXP_SHOT, .ret = TC_ACT_SHOT,
			  .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x1000, .flags = ACK, .win = 0x100, .opts = "NNT",
				  .tsval = 0x78, .tsecr = 0x2000 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT,
			  .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x1000, .flags = ACK, .win = 0x100, .opts = "NNT",
				  .tsval = 0x79, .tsecr = 0x1900 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_CARRY_ACKS_CLAMPED] = 2, [MMP_TC_CNT_CARRY_ACKS_DROPPED] = 2,
			 [MMP_TC_CNT_CARRY_TSVAL_RAISED] = 1 },
		.check_carry = true,
		.carry_tsval = { 0x2000, 0 },
		.sack_n = { 0, 0 },
	},
	{
		/*
		 * The receiver's ack covers the carry: its segment passes with its
		 * own ack, and its TSecr, the translated clock it now takes in
		 * sequence, is nothing the carrier needs.
		 */
		.name = "carry: a receiver whose ack covers the carry raises no TSval",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x2000, 0 }, .edge = { 0x9000, 0 }, .tsval = { 0x1800, 0 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_DOWN, .seq = 0x500, .ack = 0x3000, .flags = ACK | PSH, .win = 0x100,
					   .opts = "NNT", .tsval = 0x77, .tsecr = 0x2000, .payload = 10 },
			  .out = { .seq = 0x500, .ack = 0x3000, .win = 0x100, .tsval = 0x77, .tsecr = 0x2000 } },
		},
		.check_carry = true,
		.carry_tsval = { 0x1800, 0 },
	},
	{
		/*
		 * The load balancer's RST at exactly its snd_nxt ends the flow. To
		 * the upstream, still short of the carry (its ack 0x1000 of 0x3000),
		 * it goes at that ack: after the carry's end, out of a closed window,
		 * it would be dropped and the upstream would never hear of it. The
		 * carrier learns that the flow was reset.
		 */
		.name = "carry: an RST goes to a carry's receiver at its own ack, and stops the carrier",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.rx = { .set = true, .nxt = { 0x5000, 0x700 }, .wnd = { 1 << 20, 1 << 20 } },
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x1000, 0 }, .edge = { 0x1000, 0 }, .tsval = { 0x3000, 0 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_UP, .seq = 0x5000, .flags = RST, .win = 0 },
			  .out = { .seq = 0x1000, .win = 0 } },
		},
		.check_carry = true,
		.carry_tsval = { 0x3000, 0 },
		.carry_reset = 1,
	},
	/* ---- a carried segment on its way out: the newest ack and window ---- */
	{
		/*
		 * The carrier's segment toward the load balancer (the frozen
		 * socket's tuple) has the ack it last read, 0x5000; the upstream's
		 * translated segments have acked up to 0x9000 since, with window
		 * 0x40. Leaving with 0x5000, it could be too old for the load
		 * balancer (SKB_DROP_REASON_TCP_TOO_OLD_ACK).
		 */
		.name = "carry: a carried segment to the load balancer leaves with the newest ack and window",
		.family = 4,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_DOWN,
		.carry = { .end = { 0, 0x3000 }, .acked = { 0, 0x1000 }, .edge = { 0, 0x9000 }, .fwd_ack = { 0, 0x9000 },
			   .fwd_win = { 0, 0x40 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_HOLD1, .seq = 0x1000, .ack = 0x5000, .flags = ACK | PSH, .win = 0x100,
					   .payload = 100 },
			  .out = { .seq = 0x1000, .ack = 0x9000, .win = 0x40 } },
			/* Its pure ACKs (window updates, ack requests) are sent at a chosen ack: untouched. */
			{ EXP_SAME, .in = { .tup = T_HOLD1, .seq = 0x1000, .ack = 0x5000, .flags = ACK, .win = 0x100 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_CARRY_ACKS_REFRESHED] = 1 },
	},
	{
		/* The same toward the upstream (IPv6); an ack already newest, or a carry the other way, stays. */
		.name = "carry: a carried segment to the upstream is refreshed, a newer or uncarried one is not",
		.family = 6,
		.mode = MODE_SPLICE,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x1000, 0 }, .edge = { 0x9000, 0 }, .fwd_ack = { 0x7000, 0x9000 },
			   .fwd_win = { 0x20, 0x40 } },
		.steps = {
			{ EXP_SEG, .in = { .tup = T_HOLD2, .seq = 0x1000, .ack = 0x6000, .flags = ACK | PSH, .win = 0x100,
					   .payload = 100 },
			  .out = { .seq = 0x1000, .ack = 0x7000, .win = 0x20 } },
			{ EXP_SAME, .in = { .tup = T_HOLD2, .seq = 0x1064, .ack = 0x7100, .flags = ACK | PSH, .win = 0x100,
					    .payload = 100 } },
			{ EXP_SAME, .in = { .tup = T_HOLD1, .seq = 0x1000, .ack = 0x5000, .flags = ACK | PSH, .win = 0x100,
					    .payload = 100 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_CARRY_ACKS_REFRESHED] = 1 },
	},
	{
		/*
		 * Between the SPLICE write and the close the frozen sockets still
		 * run their timers: a delayed ACK or a loss probe with the window
		 * of before the hold let a peer send beyond the carry (t20).
		 * Dropped, both ways; the switch's RST passes.
		 */
		.name = "SPLICE with the frozen sockets not yet closed: what they send is dropped, an RST passes",
		.family = 6,
		.mode = MODE_SPLICE,
		.sockets_open = true,
		.up = DIR_TS_SACK,
		.down = DIR_TS_SACK,
		.carrying = MMP_TC_CARRY_UP,
		.carry = { .end = { 0x3000, 0 }, .acked = { 0x1000, 0 }, .edge = { 0x9000, 0 }, .fwd_ack = { 0x7000, 0x9000 },
			   .fwd_win = { 0x20, 0x40 } },
		.steps = {
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_HOLD1, .seq = 0x1000, .ack = 0x5000, .flags = ACK,
								.win = 0x7d, .opts = "NNT", .tsval = 13, .tsecr = 14 } },
			{ EXP_SHOT, .ret = TC_ACT_SHOT, .in = { .tup = T_HOLD2, .seq = 0x1000, .ack = 0x6000,
								.flags = ACK | PSH, .win = 0x7d, .payload = 100 } },
			{ EXP_SAME, .in = { .tup = T_HOLD2, .seq = 0x1000, .ack = 0x6000, .flags = RST | ACK, .win = 0 } },
		},
		.check_cnt = true,
		.cnt = { [MMP_TC_CNT_FROZEN_ACKS_DROPPED] = 2 },
	},
};

/* ---------------------------------------------------------------------------
 * Running
 * ------------------------------------------------------------------------ */

static struct tc_bpf *load_skel(void)
{
	struct tc_bpf *skel = tc_bpf__open();
	int err;

	if (!skel)
		fail_msg("tc_bpf__open: %s", strerror(errno));
	/* Small maps: every case loads its own copy. */
	bpf_map__set_max_entries(skel->maps.mmp_tc_tuples, 64);
	bpf_map__set_max_entries(skel->maps.mmp_tc_flows, 16);
	err = tc_bpf__load(skel);
	if (err) {
		tc_bpf__destroy(skel);
		fail_msg("tc_bpf__load: %s (the verifier log is above)", strerror(-err));
	}
	return skel;
}

static void fill_dir(struct mmp_tc_dir *d, const struct dir_cfg *c, uint8_t family, enum tup out)
{
	make_key(family, out, &d->out);
	d->seq_delta = c->seq_delta;
	d->ack_delta = c->ack_delta;
	d->ts_base = c->ts_base;
	d->wscale_in = c->wsin;
	d->wscale_out = c->wsout;
	d->timestamps = c->ts;
	d->sack = c->sack;
	d->redirect_ifindex = c->redirect_ifindex;
	d->redirect_ingress = c->redirect_ingress;
	d->tsval_delta = c->tsd;
	d->in_ifindex = c->ifindex ? c->ifindex : 1;
}

/* What mmp_tc_mark_port does (user/engine/tc/tc_flows.c). */
static void mark_port(struct tc_bpf *skel, uint16_t port)
{
	skel->bss->mmp_tc_ports[port / 64] |= 1ULL << (port % 64);
}

/* The map contents mmp_tc_begin and the switch write (user/engine/tc/tc_handoff.c). */
static void fill_maps(struct tc_bpf *skel, const struct rw_case *c)
{
	int tuples = bpf_map__fd(skel->maps.mmp_tc_tuples);
	int flows = bpf_map__fd(skel->maps.mmp_tc_flows);
	uint64_t id = FLOW_ID;
	struct mmp_tc_flow flow;
	struct mmp_tc_stats *st = &flow.st;

	for (int r = 0; r < 4; r++) {
		struct mmp_tc_tuple key;
		struct mmp_tc_tuple_val tv = { .flow = id, .role = (uint32_t)r };

		if (c->sockets_open && (r == T_HOLD1 || r == T_HOLD2))
			tv.flags = MMP_TC_TUPLE_SOCKET_OPEN;
		make_key(c->family, (enum tup)r, &key);
		if (!c->ports_unmarked)
			mark_port(skel, mmp_tc_service_port(&key, tv.role));
		assert_int_equal(bpf_map_update_elem(tuples, &key, &tv, BPF_NOEXIST), 0);
	}
	if (!c->mode)
		return;
	memset(&flow, 0, sizeof(flow));
	flow.mode = c->mode;
	for (int d = 0; d < 2; d++) {
		st->snd_nxt[d] = c->rx.set ? c->rx.nxt[d] : 0;
		st->rcv_wnd[d] = c->rx.set ? c->rx.wnd[d] : 1u << 30;
	}
	st->rst = c->rx.ended;
	fill_dir(&flow.up, &c->up, c->family, T_HOLD2);
	fill_dir(&flow.down, &c->down, c->family, T_HOLD1);
	flow.carrying = c->carrying;
	assert_int_equal(bpf_map_update_elem(flows, &id, &flow, BPF_NOEXIST), 0);
	if (c->carrying)
		assert_int_equal(bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_tc_carry), &id, &c->carry, BPF_NOEXIST),
				 0);
}

/* The carry entry's SACK blocks, as the case expects them. */
static void check_carry(struct tc_bpf *skel, const struct rw_case *c)
{
	uint64_t id = FLOW_ID;
	struct mmp_tc_carry e;

	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mmp_tc_carry), &id, &e), 0);
	if (e.reset != c->carry_reset)
		fail_msg("case \"%s\": carry reset %u, expected %u", c->name, e.reset, c->carry_reset);
	for (int k = 0; k < 2; k++) {
		if (e.tsval[k] != c->carry_tsval[k])
			fail_msg("case \"%s\": carry %d TSval %#x, expected %#x", c->name, k, e.tsval[k], c->carry_tsval[k]);
		if (e.sack_n[k] != c->sack_n[k])
			fail_msg("case \"%s\": carry %d has %u SACK blocks, expected %u", c->name, k, e.sack_n[k],
				 c->sack_n[k]);
		for (uint32_t i = 0; i < 2 * e.sack_n[k] && i < MMP_TC_CARRY_SACK_BLOCKS * 2; i++) {
			if (e.sack[k][i] != c->sack[k][i])
				fail_msg("case \"%s\": carry %d SACK edge %u is %#x, expected %#x", c->name, k, i,
					 e.sack[k][i], c->sack[k][i]);
		}
	}
}

/* *mark: skb->mark in, and what the program left in it out. */
static int run_prog(struct tc_bpf *skel, bool ingress, const uint8_t *in, size_t len, uint8_t *out,
		    uint32_t *out_len, uint32_t *retval, uint32_t *mark)
{
	struct bpf_program *prog = ingress ? skel->progs.mmp_tc_ingress : skel->progs.mmp_tc_egress;
	struct __sk_buff ctx = { .mark = *mark }, ctx_out = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = *out_len, .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	int err = bpf_prog_test_run_opts(bpf_program__fd(prog), &opts);

	if (err)
		return -errno;
	*out_len = opts.data_size_out;
	*retval = opts.retval;
	*mark = ctx_out.mark;
	return 0;
}

static bool is_csum_byte(const struct layout *lo, size_t i)
{
	if (lo->family == 4 && (i == lo->l3 + 10 || i == lo->l3 + 11))
		return true;
	return i == lo->l4 + 16 || i == lo->l4 + 17;
}

/* Byte by byte (checksum fields aside), then the checksums by their residuals. */
static void compare(const char *cname, int stepno, const uint8_t *in, size_t in_len, const uint8_t *got,
		    size_t got_len, const uint8_t *want, size_t want_len)
{
	struct layout lg, lw;
	bool bad = false;
	char why[160] = "";

	if (got_len != want_len) {
		snprintf(why, sizeof(why), "length %zu, expected %zu", got_len, want_len);
		bad = true;
	} else if (!parse_layout(got, got_len, &lg) || !parse_layout(want, want_len, &lw)) {
		snprintf(why, sizeof(why), "output does not parse");
		bad = true;
	} else {
		for (size_t i = 0; i < got_len; i++) {
			if (!is_csum_byte(&lw, i) && got[i] != want[i]) {
				snprintf(why, sizeof(why), "byte %zu is %#04x, expected %#04x (first difference)", i,
					 got[i], want[i]);
				bad = true;
				break;
			}
		}
		if (!bad && lw.family == 4 && ip_residual(got, &lg) != 0xffff) {
			snprintf(why, sizeof(why), "IPv4 header checksum does not verify (residual %#06x)",
				 ip_residual(got, &lg));
			bad = true;
		}
		if (!bad && tcp_residual(got, &lg) != tcp_residual(want, &lw)) {
			snprintf(why, sizeof(why), "TCP checksum residual %#06x, expected %#06x (0xffff = verifies)",
				 tcp_residual(got, &lg), tcp_residual(want, &lw));
			bad = true;
		}
	}
	if (!bad)
		return;
	print_error("case \"%s\", step %d: %s\n", cname, stepno, why);
	describe("  input   ", in, in_len);
	describe("  expected", want, want_len);
	describe("  actual  ", got, got_len);
	hexdump("  expected bytes", want, want_len);
	hexdump("  actual bytes", got, got_len);
	fail();
}

static uint64_t read_counter(struct tc_bpf *skel, uint32_t idx)
{
	uint64_t sum = 0;

	assert_int_equal(mmp_percpu_sum(bpf_map__fd(skel->maps.mmp_tc_counters), idx, &sum), 0);
	return sum;
}

static void check_stats(struct tc_bpf *skel, const struct rw_case *c)
{
	uint64_t id = FLOW_ID;
	struct mmp_tc_flow flow;
	struct mmp_tc_stats st;
	const struct stats_exp *e = &c->st;

	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(skel->maps.mmp_tc_flows), &id, &flow), 0);
	st = flow.st;

	for (int d = 0; d < 2; d++) {
		if (st.packets[d] != e->packets[d] || st.bytes[d] != e->bytes[d] || st.fin[d] != e->fin[d])
			fail_msg("case \"%s\": stats[%s] packets %llu bytes %llu fin %u, expected %llu %llu %u",
				 c->name, d ? "down" : "up", (unsigned long long)st.packets[d],
				 (unsigned long long)st.bytes[d], st.fin[d], (unsigned long long)e->packets[d],
				 (unsigned long long)e->bytes[d], e->fin[d]);
		if (e->check_nxt && (st.snd_nxt[d] != e->nxt[d] || st.rcv_wnd[d] != e->wnd[d]))
			fail_msg("case \"%s\": stats[%s] snd_nxt %#x rcv_wnd %#x, expected %#x %#x", c->name,
				 d ? "down" : "up", st.snd_nxt[d], st.rcv_wnd[d], e->nxt[d], e->wnd[d]);
	}
	if (st.rst != e->rst)
		fail_msg("case \"%s\": stats rst %u, expected %u", c->name, st.rst, e->rst);
	if ((e->packets[0] || e->packets[1]) && !st.last_seen_ns)
		fail_msg("case \"%s\": stats last_seen_ns not set", c->name);
	if (!e->packets[0] && !e->packets[1] && st.last_seen_ns)
		fail_msg("case \"%s\": stats last_seen_ns set without translated packets", c->name);
}

static const char *const counter_name[] = {
	[MMP_TC_CNT_TRANSLATED] = "translated",
	[MMP_TC_CNT_HELD] = "held",
	[MMP_TC_CNT_REDIRECT_FAILED] = "redirect_failed",
	[MMP_TC_CNT_NOT_TCP_OR_FRAGMENT] = "not_tcp_or_fragment",
	[MMP_TC_CNT_FREEZE_DROPS] = "freeze_drops",
	[MMP_TC_CNT_FROZEN_ACKS_DROPPED] = "frozen_acks_dropped",
	[MMP_TC_CNT_TUPLE_REUSED] = "tuple_reused",
	[MMP_TC_CNT_ICMP_TRANSLATED] = "icmp_translated",
	[MMP_TC_CNT_RST_DROPPED] = "rst_dropped",
	[MMP_TC_CNT_RST_CHALLENGED] = "rst_challenged",
	[MMP_TC_CNT_SYN_CHALLENGED] = "syn_challenged",
	[MMP_TC_CNT_WRONG_IFACE] = "wrong_iface",
	[MMP_TC_CNT_BAD_IP_HEADER] = "bad_ip_header",
	[MMP_TC_CNT_CARRY_ACKS_CLAMPED] = "carry_acks_clamped",
	[MMP_TC_CNT_CARRY_ACKS_DROPPED] = "carry_acks_dropped",
	[MMP_TC_CNT_CARRY_TSVAL_RAISED] = "carry_tsvals_raised",
	[MMP_TC_CNT_CARRY_ACKS_REFRESHED] = "carry_acks_refreshed",
	[MMP_TC_CNT_SND_NXT_RAISED_BY_ACK] = "snd_nxt_raised_by_ack",
};

/* The current case's skeleton: destroyed by the teardown, even after a failure. */
static struct tc_bpf *cur_skel;

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int teardown_skel(void **state)
{
	(void)state;
	tc_bpf__destroy(cur_skel);
	cur_skel = NULL;
	return 0;
}

static void test_case(void **state)
{
	const struct rw_case *c = *state;
	struct tc_bpf *skel;

	if (geteuid() != 0)
		skip();
	skel = cur_skel = load_skel();
	/* What mmp_tc_begin does before a hold: the egress hook looks (a second's worth is enough). */
	if (!c->egress_closed)
		skel->bss->mmp_tc_egress_until_ns = mono_ns() + 1000000000ULL;
	fill_maps(skel, c);
	for (int i = 0; i < (int)(sizeof(c->steps) / sizeof(c->steps[0])) && c->steps[i].expect != EXP_END; i++) {
		const struct step *s = &c->steps[i];
		uint8_t in[2048], out[2048], want[2048];
		size_t in_len = build_pkt(c->family, &s->in, in), want_len = 0;
		uint32_t out_len = sizeof(out), ret = 0xdead, mark = s->mark_in;
		int err;

		memset(out, 0xee, sizeof(out));
		err = run_prog(skel, c->ingress, in, in_len, out, &out_len, &ret, &mark);
		if (err)
			fail_msg("case \"%s\", step %d: BPF_PROG_TEST_RUN: %s", c->name, i, strerror(-err));
		if (s->check_mark && mark != s->mark_out)
			fail_msg("case \"%s\", step %d: skb->mark %#x, expected %#x", c->name, i, mark, s->mark_out);
		if ((int)ret != s->ret) {
			print_error("case \"%s\", step %d: program returned %u, expected %d\n", c->name, i, ret, s->ret);
			describe("  input ", in, in_len);
			describe("  output", out, out_len);
			fail();
		}
		switch (s->expect) {
		case EXP_SHOT:
			continue;
		case EXP_SAME:
			memcpy(want, in, in_len);
			want_len = in_len;
			if (out_len != in_len || memcmp(out, in, in_len)) {
				/* compare() explains the first difference. */
				compare(c->name, i, in, in_len, out, out_len, want, want_len);
				print_error("case \"%s\", step %d: output differs only in checksum bytes\n", c->name, i);
				describe("  input ", in, in_len);
				describe("  output", out, out_len);
				fail();
			}
			continue;
		case EXP_WIN0: {
			struct seg e = s->in;

			e.win = 0;
			want_len = build_pkt(c->family, &e, want);
			break;
		}
		case EXP_SEG: {
			struct seg e = s->in;

			e.tup = translated_tup[s->in.tup];
			e.seq = s->out.seq;
			e.ack = s->out.ack;
			e.win = s->out.win;
			e.tsval = s->out.tsval;
			e.tsecr = s->out.tsecr;
			memcpy(e.sack, s->out.sack, sizeof(e.sack));
			want_len = build_pkt(c->family, &e, want);
			if (s->mac_zeroed)
				memset(want, 0, 12);
			break;
		}
		default:
			fail_msg("bad step");
		}
		compare(c->name, i, in, in_len, out, out_len, want, want_len);
		/* A correct input checksum must come out verifying. */
		if (!s->in.csum_err) {
			struct layout lo;

			assert_true(parse_layout(out, out_len, &lo));
			assert_int_equal(tcp_residual(out, &lo), 0xffff);
			if (lo.family == 4)
				assert_int_equal(ip_residual(out, &lo), 0xffff);
		}
	}
	if (c->check_stats)
		check_stats(skel, c);
	if (c->check_carry)
		check_carry(skel, c);
	if (c->check_cnt) {
		for (uint32_t k = 0; k < MMP_TC_CNT_MAX; k++) {
			uint64_t v = read_counter(skel, k);

			if (v != c->cnt[k])
				fail_msg("case \"%s\": counter %s is %llu, expected %llu", c->name,
					 k < sizeof(counter_name) / sizeof(counter_name[0]) && counter_name[k] ?
						 counter_name[k] : "?",
					 (unsigned long long)v, (unsigned long long)c->cnt[k]);
		}
	}
	if (c->check_tuples) {
		for (int r = 0; r < 4; r++) {
			struct mmp_tc_tuple key;
			struct mmp_tc_tuple_val tv;
			bool present;

			make_key(c->family, (enum tup)r, &key);
			present = bpf_map_lookup_elem(bpf_map__fd(skel->maps.mmp_tc_tuples), &key, &tv) == 0;
			if (present != !!(c->tuples_left & (1 << r)))
				fail_msg("case \"%s\": tuple of role %d is %s mmp_tc_tuples, expected %s", c->name, r,
					 present ? "still in" : "gone from", present ? "gone" : "present");
		}
	}
}

/* The fixture builder itself: a known-good IPv4 packet checked against fixed bytes. */
static void test_fixture_builder(void **state)
{
	struct seg s = { .tup = T_UP, .seq = 0x01020304, .ack = 0x05060708, .flags = ACK, .win = 0x1000 };
	uint8_t b[128];
	size_t len = build_pkt(4, &s, b);
	struct layout lo;
	/* Ethernet, IPv4 10.0.0.1 -> 10.0.0.2, TCP 40000 -> 8443: checksums worked out by hand. */
	static const uint8_t want[] = {
		0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x28, 0x12, 0x34, 0x40, 0x00, 0x40, 0x06, 0x14, 0x9a,
		0x0a, 0x00, 0x00, 0x01, 0x0a, 0x00, 0x00, 0x02,
		0x9c, 0x40, 0x20, 0xfb, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
		0x50, 0x10, 0x10, 0x00, 0xbe, 0x82, 0x00, 0x00,
	};

	(void)state;
	assert_int_equal(len, sizeof(want));
	assert_memory_equal(b, want, sizeof(want));
	assert_true(parse_layout(b, len, &lo));
	assert_int_equal(ip_residual(b, &lo), 0xffff);
	assert_int_equal(tcp_residual(b, &lo), 0xffff);
}

/* mmp_tc_sock_probe's reading of the socket that receives src -> dst: 0, or -ENOENT when it found none. */
static int sock_probe(struct tc_bpf *skel, const struct sockaddr_in *src, const struct sockaddr_in *dst,
		      struct mmp_tc_sock_query *q)
{
	struct __attribute__((packed)) {
		uint8_t eth[14];
		struct mmp_tc_sock_query q;
	} in = { 0 }, out = { 0 };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = &in, .data_size_in = sizeof(in), .data_out = &out,
		    .data_size_out = sizeof(out), .repeat = 1);

	in.q.tuple.family = 4;
	in.q.tuple.sport = src->sin_port;
	in.q.tuple.dport = dst->sin_port;
	memcpy(in.q.tuple.saddr, &src->sin_addr, 4);
	memcpy(in.q.tuple.daddr, &dst->sin_addr, 4);
	assert_int_equal(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mmp_tc_sock_probe), &opts), 0);
	*q = out.q;
	return out.q.found ? 0 : -ENOENT;
}

static uint32_t tcp_timestamp(int fd)
{
	uint32_t v = 0;
	socklen_t len = sizeof(v);

	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_TIMESTAMP, &v, &len), 0);
	return v;
}

/* TCP_QUEUE_SEQ of one queue, read in repair mode (what the probe replaced, as the reference). */
static uint32_t queue_seq(int fd, int queue)
{
	uint32_t v = 0;
	socklen_t len = sizeof(v);

	assert_int_equal(setsockopt(fd, IPPROTO_TCP, TCP_REPAIR_QUEUE, &queue, sizeof(queue)), 0);
	assert_int_equal(getsockopt(fd, IPPROTO_TCP, TCP_QUEUE_SEQ, &v, &len), 0);
	return v;
}

/*
 * The hand-off reads its sockets with mmp_tc_sock_probe (engine/tc/tc_frozen.c,
 * mmp_tc_read_sock), live and frozen. Over a loopback connection the probe
 * must return: the last TSval the receiver accepted, between the sender's
 * clock before and after its last segment; the same sequence numbers and
 * windows as the kernel's repair interface (TCP_QUEUE_SEQ, TCP_REPAIR_WINDOW);
 * snd_nxt and snd_una that follow data sent; and nothing for a tuple no
 * connection has (which falls back to the listener).
 */
static void test_sock_probe(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) }, b, c;
	socklen_t len = sizeof(a);
	int l, x, y, one = 1, on = 1, off = TCP_REPAIR_OFF_NO_WP;
	struct mmp_tc_sock_query q, q2;
	struct tcp_repair_window w;
	uint32_t t0, t1;
	char buf[4];

	(void)state;
	if (geteuid() != 0)
		skip();
	cur_skel = load_skel();
	l = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	x = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(x, (struct sockaddr *)&a, sizeof(a)), 0);
	y = accept(l, NULL, NULL);
	assert_true(y >= 0);
	setsockopt(x, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	setsockopt(y, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	len = sizeof(b);
	assert_int_equal(getsockname(x, (struct sockaddr *)&b, &len), 0); /* x's side: b -> a */
	usleep(20000);
	t0 = tcp_timestamp(x);
	assert_int_equal(write(x, "ping", 4), 4);
	assert_int_equal(read(y, buf, 4), 4);
	t1 = tcp_timestamp(x);
	assert_int_equal(sock_probe(cur_skel, &b, &a, &q), 0); /* y receives b -> a */
	/* One tick of slack: the segment's TSval and getsockopt's clock may round a millisecond apart. */
	if ((int32_t)(q.ts_recent - t0) < -1 || (int32_t)(t1 - q.ts_recent) < -1)
		fail_msg("ts_recent %u is not x's TSval of the last segment (x's clock %u before, %u after)", q.ts_recent,
			 t0, t1);

	/* Quiet: what the repair interface says, field for field. */
	assert_int_equal(setsockopt(y, IPPROTO_TCP, TCP_REPAIR, &on, sizeof(on)), 0);
	len = sizeof(w);
	assert_int_equal(getsockopt(y, IPPROTO_TCP, TCP_REPAIR_WINDOW, &w, &len), 0);
	assert_int_equal(q.rcv_nxt, queue_seq(y, TCP_RECV_QUEUE));
	assert_int_equal(q.write_seq, queue_seq(y, TCP_SEND_QUEUE));
	assert_int_equal(setsockopt(y, IPPROTO_TCP, TCP_REPAIR, &off, sizeof(off)), 0);
	assert_int_equal(q.snd_wl1, w.snd_wl1);
	assert_int_equal(q.snd_wnd, w.snd_wnd);
	assert_int_equal(q.max_window, w.max_window);
	assert_int_equal(q.rcv_wnd, w.rcv_wnd);
	assert_int_equal(q.rcv_wup, w.rcv_wup);
	assert_int_equal(q.snd_una, q.write_seq);
	assert_int_equal(q.snd_nxt, q.write_seq);
	assert_int_equal(q.ofo, 0); /* nothing lost, nothing out of order */

	/* y sends 4 bytes and x reads them: all three of y's send-side numbers move by 4. */
	assert_int_equal(write(y, "pong", 4), 4);
	assert_int_equal(read(x, buf, 4), 4);
	usleep(20000); /* x's ACK */
	assert_int_equal(sock_probe(cur_skel, &b, &a, &q2), 0);
	assert_int_equal(q2.write_seq - q.write_seq, 4);
	assert_int_equal(q2.snd_nxt - q.snd_nxt, 4);
	assert_int_equal(q2.snd_una - q.snd_una, 4);
	assert_int_equal(q2.rcv_nxt, q.rcv_nxt);

	c = b;
	c.sin_port = htons(ntohs(b.sin_port) ^ 0x4000);
	assert_int_equal(sock_probe(cur_skel, &c, &a, &q), -ENOENT);
	close(x);
	close(y);
	close(l);
	tc_bpf__destroy(cur_skel);
	cur_skel = NULL;
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest *tests = calloc(n + 2, sizeof(*tests));

	if (!tests)
		return 1;
	if (geteuid() != 0)
		fprintf(stderr, "test_tc_rewrite: not root: the BPF cases are skipped (BPF_PROG_TEST_RUN needs root)\n");
	tests[0] = (struct CMUnitTest)cmocka_unit_test(test_fixture_builder);
	for (size_t i = 0; i < n; i++) {
		tests[i + 1].name = cases[i].name;
		tests[i + 1].test_func = test_case;
		tests[i + 1].teardown_func = teardown_skel;
		tests[i + 1].initial_state = (void *)&cases[i];
	}
	tests[n + 1] = (struct CMUnitTest)cmocka_unit_test_teardown(test_sock_probe, teardown_skel);
	int rc = _cmocka_run_group_tests("tc_rewrite", tests, n + 2, NULL, NULL);

	free(tests);
	return rc;
}
