// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the UDP fast path's program (bpf/udp.bpf.c), run through
 * BPF_PROG_TEST_RUN with hand-built packets: both families, PROXY v2 and SPP,
 * forward (header stripped) and reply (SPP header inserted).
 *
 * Each case loads a fresh skeleton (no attach), writes one mmp_udp_fwd or
 * mmp_udp_rev entry the way user/udp/fast/udp_fast.c does, runs one Ethernet + IP +
 * UDP packet with a correct checksum through mmp_udp_ingress, and compares
 * the output byte by byte with a packet built independently from the
 * expected fields, checksums computed by this file's own code.
 *
 * test_run hands the program a CHECKSUM_NONE skb, so the UDP checksum must
 * be complete and right after the incremental updates: a wrong pseudo-header,
 * length or stripped/inserted-bytes term shows up here. (CHECKSUM_PARTIAL
 * skbs, where only the pseudo-header sum is updated, are covered end to end
 * on lo by tests/integration/t35-udp-fast.sh.)
 *
 * Interfaces: a flow's entry names the interface its datagrams arrive on
 * (in_ifindex); the same 4-tuple on another is left alone. test_run runs a
 * packet on lo unless its ctx names another device, so main() moves the
 * process into a network namespace of its own with a veth pair (mmpt-u0,
 * mmpt-u1) for the cases where a packet arrives elsewhere.
 *
 * Map entries (the second group, test_*_entries_*): the real control side
 * (user/udp/fast/udp_fast.c, udp_maps.c) inserts a flow's entries, the
 * program marks them stale as a load balancer that sends TLVs or changes its
 * SPP proxy address makes it, userspace stops re-arming, and once the flow
 * goes every map must be empty.
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
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "common.h" /* bpf/common.h: the TC verdicts */
#include "mmp_udp.h"
#include "udp.skel.h"
#include "lib/config.h"
#include "udp/udp_flow.h"
#include "udp/fast/udp_fast.h"
#include "udp/fast/udp_maps.h"


#define PKT_MAX 4096
#define SPP_LEN 38

enum dir { FWD, REV };
enum hdr { NONE, V2, SPP };
/* An interface: lo (where test_run runs packets by default), one that is not there, the test veth. */
enum test_if { IF_LO, IF_OTHER, IF_VETH };

#define LO_IFINDEX 1
#define OTHER_IFINDEX 99
#define VETH "mmpt-u0"
#define OWN_ADDR "198.51.100.50" /* the veth's address */

static unsigned int veth_ifindex; /* 0: no veth (not root, or no netns): its cases are skipped */

static uint32_t ifindex_of(enum test_if i)
{
	return i == IF_VETH ? veth_ifindex : i == IF_OTHER ? OTHER_IFINDEX : LO_IFINDEX;
}

/* One end of a packet: an address (IPv4 as a.b.c.d, IPv6 as text) and a port. */
struct end {
	const char *addr;
	uint16_t port;
};

struct pkt_spec {
	int family; /* 4 or 6 */
	struct end src, dst;
	enum hdr hdr; /* what goes in front of the payload */
	struct end hdr_client, hdr_proxy; /* the header's addresses */
	uint16_t payload; /* bytes of pattern after the header */
	bool tlv; /* V2: a 4-byte NOOP TLV after the address block (a form the program leaves to userspace) */
};

struct udp_case {
	const char *name;
	enum dir dir;
	bool full; /* FWD IPv6: take the full-sum path of partial skbs (sum_in_full) */
	uint8_t format; /* the entry's: MMP_UDP_FMT_V2 or _SPP */
	uint8_t mode; /* the entry's: MMP_UDP_MODE_ACTIVE or _DRAIN */
	uint32_t max_len; /* REV, and FWD with redirect_out: the entry's max_len (0: 1500) */
	struct end lb, local, client, up; /* the flow */
	struct end spp_proxy; /* SPP: the proxy in the entry's header (the one userspace saw) */
	struct pkt_spec in;
	int ret; /* expected TC action */
	bool same; /* the packet leaves unchanged */
	struct pkt_spec out; /* otherwise the packet expected */
	uint32_t mark; /* expected skb->mark */
	bool stale; /* FWD: the entry is stale afterwards */
	/* A draining entry: passed and held so far, and the last number userspace published (mmp_udp_drain). */
	uint64_t passed, held, sent;
	enum test_if entry_if; /* the entry's in_ifindex */
	enum test_if pkt_if; /* where the packet arrives */
	uint64_t wrong_ifindex; /* MMP_UDP_KCNT_WRONG_IFINDEX afterwards */
	bool redirect_out; /* FWD: an upstream beyond loopback, out of another interface (§14) */
};

static void addr16(const char *text, uint8_t out[16])
{
	struct in_addr a4;

	memset(out, 0, 16);
	if (inet_pton(AF_INET, text, &a4) == 1) {
		out[10] = out[11] = 0xFF;
		memcpy(out + 12, &a4, 4);
		return;
	}
	assert_int_equal(inet_pton(AF_INET6, text, out), 1);
}

static uint32_t sum16(const uint8_t *p, size_t n, uint32_t acc)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		acc += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		acc += (uint32_t)p[n - 1] << 8;
	return acc;
}

static uint16_t fold(uint32_t acc)
{
	while (acc >> 16)
		acc = (acc & 0xFFFF) + (acc >> 16);
	return (uint16_t)acc;
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v & 0xFF;
}

/* s->tlv: a NOOP TLV (type 4, one zero byte) after the v2 header's n bytes, its length field grown. */
static size_t put_tlv(uint8_t *p, size_t n, const struct pkt_spec *s)
{
	static const uint8_t noop[4] = { 0x04, 0x00, 0x01, 0x00 };

	if (!s->tlv)
		return n;
	memcpy(p + n, noop, sizeof(noop));
	put16(p + 14, (uint16_t)(n + sizeof(noop) - 16));
	return n + sizeof(noop);
}

static size_t put_header(uint8_t *p, const struct pkt_spec *s)
{
	static const uint8_t sig[12] = { 0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A };
	uint8_t c[16], x[16];

	if (s->hdr == NONE)
		return 0;
	addr16(s->hdr_client.addr, c);
	addr16(s->hdr_proxy.addr, x);
	if (s->hdr == SPP) {
		p[0] = 0x56;
		p[1] = 0xEC;
		memcpy(p + 2, c, 16);
		memcpy(p + 18, x, 16);
		put16(p + 34, s->hdr_client.port);
		put16(p + 36, s->hdr_proxy.port);
		return SPP_LEN;
	}
	memcpy(p, sig, 12);
	p[12] = 0x21;
	if (s->family == 4) {
		p[13] = 0x12;
		put16(p + 14, 12);
		memcpy(p + 16, c + 12, 4);
		memcpy(p + 20, x + 12, 4);
		put16(p + 24, s->hdr_client.port);
		put16(p + 26, s->hdr_proxy.port);
		return put_tlv(p, 28, s);
	}
	p[13] = 0x22;
	put16(p + 14, 36);
	memcpy(p + 16, c, 16);
	memcpy(p + 32, x, 16);
	put16(p + 48, s->hdr_client.port);
	put16(p + 50, s->hdr_proxy.port);
	return put_tlv(p, 52, s);
}

/* Ethernet + IP + UDP + header + payload, checksums right. Returns the length. */
static size_t build(uint8_t *b, const struct pkt_spec *s)
{
	size_t l3 = 14, l4 = l3 + (s->family == 4 ? 20 : 40), ulen;
	uint8_t sa[16], da[16];
	uint32_t acc;
	uint16_t ck;

	memset(b, 0, PKT_MAX);
	for (int i = 0; i < 12; i++)
		b[i] = (uint8_t)(0x10 + i);
	put16(b + 12, s->family == 4 ? 0x0800 : 0x86DD);
	addr16(s->src.addr, sa);
	addr16(s->dst.addr, da);
	ulen = 8 + put_header(b + l4 + 8, s);
	for (size_t i = 0; i < s->payload; i++)
		b[l4 + ulen + i] = (uint8_t)(i * 7 + 3);
	ulen += s->payload;
	put16(b + l4, s->src.port);
	put16(b + l4 + 2, s->dst.port);
	put16(b + l4 + 4, (uint16_t)ulen);
	if (s->family == 4) {
		b[l3] = 0x45;
		put16(b + l3 + 2, (uint16_t)(20 + ulen));
		put16(b + l3 + 4, 0x1234);
		b[l3 + 8] = 64;
		b[l3 + 9] = 17;
		memcpy(b + l3 + 12, sa + 12, 4);
		memcpy(b + l3 + 16, da + 12, 4);
		put16(b + l3 + 10, (uint16_t)~fold(sum16(b + l3, 20, 0)));
		acc = sum16(sa + 12, 4, sum16(da + 12, 4, 17 + (uint32_t)ulen));
	} else {
		b[l3] = 0x60;
		put16(b + l3 + 4, (uint16_t)ulen);
		b[l3 + 6] = 17;
		b[l3 + 7] = 64;
		memcpy(b + l3 + 8, sa, 16);
		memcpy(b + l3 + 24, da, 16);
		acc = sum16(sa, 16, sum16(da, 16, 17 + (uint32_t)ulen));
	}
	ck = (uint16_t)~fold(sum16(b + l4, ulen, acc));
	put16(b + l4 + 6, ck ? ck : 0xFFFF);
	return l4 + ulen;
}

/* The UDP checksum of packet b verifies (a zero IPv4 checksum means none). */
static bool udp_csum_ok(const uint8_t *b, size_t len, int family)
{
	size_t l3 = 14, l4 = l3 + (family == 4 ? 20 : 40), ulen = (size_t)b[l4 + 4] << 8 | b[l4 + 5];
	uint32_t acc;

	if (l4 + ulen > len)
		return false;
	if (family == 4) {
		if (!b[l4 + 6] && !b[l4 + 7])
			return true;
		acc = sum16(b + l3 + 12, 8, 17 + (uint32_t)ulen);
	} else {
		acc = sum16(b + l3 + 8, 32, 17 + (uint32_t)ulen);
	}
	return fold(sum16(b + l4, ulen, acc)) == 0xFFFF;
}

static struct udp_bpf *cur;

static void put_end(const struct end *e, __be32 addr[4], __be16 *port)
{
	addr16(e->addr, (uint8_t *)addr);
	*port = htons(e->port);
}

/* A draining entry's mmp_udp_drain: the last number userspace published, in c's direction. */
static void put_drain(const struct udp_case *c, bool rev)
{
	struct mmp_udp_drain d = { 0 };
	__u64 cookie = 42;

	if (!c->sent)
		return;
	if (rev)
		d.rev = c->sent;
	else
		d.fwd = c->sent;
	assert_int_equal(bpf_map__update_elem(cur->maps.mmp_udp_drain, &cookie, sizeof(cookie), &d, sizeof(d), BPF_NOEXIST),
			 0);
}

static void fill_entry(const struct udp_case *c)
{
	if (c->dir == FWD) {
		struct mmp_udp_fkey k = { 0 };
		struct mmp_udp_fval v = { 0 };
		uint8_t hdr[SPP_LEN];
		struct pkt_spec h = { .family = 6, .hdr = SPP, .hdr_client = c->client, .hdr_proxy = c->spp_proxy };

		put_end(&c->lb, k.lb_addr, &k.lb_port);
		put_end(&c->local, k.local_addr, &k.local_port);
		if (c->format == MMP_UDP_FMT_SPP) {
			put_end(&c->client, k.client_addr, &k.client_port);
			put_header(hdr, &h);
			memcpy(v.spp_tail, hdr + MMP_UDP_SPP_TAIL_OFF, MMP_UDP_SPP_TAIL_LEN);
		} else {
			memset(k.client_addr, 0, 16);
		}
		v.cookie = 42;
		put_end(&c->client, v.client_addr, &v.client_port);
		put_end(&c->up, v.up_addr, &v.up_port);
		v.format = c->format;
		v.mode = c->mode;
		v.in_ifindex = ifindex_of(c->entry_if);
		v.passed = c->passed;
		v.held = c->held;
		if (c->redirect_out) {
			v.redirect_out = 1;
			v.redirect_ifindex = OTHER_IFINDEX; /* the helper only records it */
			v.max_len = c->max_len ? c->max_len : 1500;
		}
		put_drain(c, false);
		assert_int_equal(bpf_map__update_elem(cur->maps.mmp_udp_fwd, &k, sizeof(k), &v, sizeof(v), BPF_NOEXIST), 0);
	} else {
		struct mmp_udp_rkey k = { 0 };
		struct mmp_udp_rval v = { 0 };
		struct pkt_spec h = { .family = 6, .hdr = SPP, .hdr_client = c->client, .hdr_proxy = c->spp_proxy };

		put_end(&c->up, k.up_addr, &k.up_port);
		put_end(&c->client, k.client_addr, &k.client_port);
		v.cookie = 42;
		put_end(&c->lb, v.lb_addr, &v.lb_port);
		put_end(&c->local, v.local_addr, &v.local_port);
		v.max_len = c->max_len ? c->max_len : 1500;
		v.in_ifindex = ifindex_of(c->entry_if);
		v.mode = c->mode;
		v.format = c->format;
		v.passed = c->passed;
		v.held = c->held;
		put_drain(c, true);
		if (c->format == MMP_UDP_FMT_SPP)
			put_header(v.spp_hdr, &h);
		assert_int_equal(bpf_map__update_elem(cur->maps.mmp_udp_rev, &k, sizeof(k), &v, sizeof(v), BPF_NOEXIST), 0);
	}
}

/* A fast-path counter (enum mmp_udp_kcounter), summed over CPUs. */
static uint64_t kcount(struct bpf_map *kcnt, uint32_t idx)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[ncpu > 0 ? ncpu : 1], sum = 0;

	assert_true(ncpu > 0);
	assert_int_equal(bpf_map__lookup_elem(kcnt, &idx, sizeof(idx), vals, sizeof(vals), 0), 0);
	for (int i = 0; i < ncpu; i++)
		sum += vals[i];
	return sum;
}

static void test_case(void **state)
{
	const struct udp_case *c = *state;
	uint8_t in[PKT_MAX], out[PKT_MAX], want[PKT_MAX];
	struct __sk_buff ctx = { 0 }, ctx_in = { .ifindex = ifindex_of(c->pkt_if) };
	size_t in_len, want_len;
	int err;

	if (geteuid() != 0)
		skip();
	if ((c->entry_if == IF_VETH || c->pkt_if == IF_VETH) && !veth_ifindex)
		skip(); /* main() could not make the veth */
	cur = udp_bpf__open();
	assert_non_null(cur);
	cur->rodata->sum_in_full = c->full;
	err = udp_bpf__load(cur);
	if (err)
		fail_msg("udp_bpf__load: %s (the verifier log is above)", strerror(-err));
	fill_entry(c);
	in_len = build(in, &c->in);
	{
		LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)in_len, .data_out = out,
			    .data_size_out = sizeof(out), .ctx_out = &ctx, .ctx_size_out = sizeof(ctx), .repeat = 1);

		/* A ctx ifindex above 1 makes that device the skb's (lo otherwise). */
		if (c->pkt_if != IF_LO) {
			opts.ctx_in = &ctx_in;
			opts.ctx_size_in = sizeof(ctx_in);
		}
		err = bpf_prog_test_run_opts(bpf_program__fd(cur->progs.mmp_udp_ingress), &opts);
		assert_int_equal(err, 0);
		assert_int_equal((int)opts.retval, c->ret);
		assert_int_equal(ctx.mark, c->mark);
		if (c->same) {
			assert_int_equal(opts.data_size_out, in_len);
			assert_memory_equal(out, in, in_len);
		} else {
			want_len = build(want, &c->out);
			/* IPv4 forward: no UDP checksum (0), by design (forward() in udp.bpf.c). */
			if (c->dir == FWD && c->out.family == 4)
				want[14 + 20 + 6] = want[14 + 20 + 7] = 0;
			assert_int_equal(opts.data_size_out, want_len);
			/* The checksums first: a mismatch there says more than a byte offset. */
			assert_true(udp_csum_ok(out, want_len, c->out.family));
			assert_memory_equal(out, want, want_len);
		}
	}
	if (c->dir == FWD) {
		struct mmp_udp_fkey k = { 0 };
		struct mmp_udp_fval v;

		put_end(&c->lb, k.lb_addr, &k.lb_port);
		put_end(&c->local, k.local_addr, &k.local_port);
		if (c->format == MMP_UDP_FMT_SPP)
			put_end(&c->client, k.client_addr, &k.client_port);
		assert_int_equal(bpf_map__lookup_elem(cur->maps.mmp_udp_fwd, &k, sizeof(k), &v, sizeof(v), 0), 0);
		assert_int_equal(v.stale, c->stale);
		assert_int_equal(v.pkts, c->ret == TC_ACT_OK || c->ret == TC_ACT_REDIRECT ? 1 : 0);
	}
	assert_int_equal(kcount(cur->maps.mmp_udp_kcnt, MMP_UDP_KCNT_WRONG_IFINDEX), c->wrong_ifindex);
}

static int teardown(void **state)
{
	(void)state;
	udp_bpf__destroy(cur);
	cur = NULL;
	return 0;
}

/* The flows: a load balancer L, our listen address P, the client C, the upstream U. */
#define L4_ \
	{ "198.51.100.2", 40000 }
#define P4 \
	{ "198.51.100.1", 7000 }
#define C4 \
	{ "203.0.113.7", 5555 }
#define U4 \
	{ "127.0.0.1", 9000 }
#define L6 \
	{ "2001:db8:1::2", 40000 }
#define P6 \
	{ "2001:db8:1::1", 7000 }
#define C6 \
	{ "2001:db8:77::7", 5555 }
#define U6 \
	{ "::1", 9000 }
#define X4 \
	{ "192.0.2.10", 443 } /* the proxy address in headers */
#define X6 \
	{ "2001:db8:ffff::10", 443 }

static const struct udp_case cases[] = {
	{ "IPv6 v2 forward: 52-byte header stripped, checksum follows", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0,
	  L6, P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 101 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 101 } },
	{ "IPv6 v2 forward, even payload", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6, P6, C6, U6, X6,
	  { 6, L6, P6, V2, C6, X6, 1200 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 1200 } },
	{ "IPv6 v2 forward, empty payload", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6, P6, C6, U6, X6,
	  { 6, L6, P6, V2, C6, X6, 0 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 0 } },
	{ "IPv6 v2 forward without a header (first): ports, addresses, checksum follows", FWD, false, MMP_UDP_FMT_V2,
	  MMP_UDP_MODE_ACTIVE, 0, L6, P6, C6, U6, X6, { 6, L6, P6, NONE, C6, X6, 61 }, TC_ACT_OK, false,
	  { 6, C6, U6, NONE, C6, X6, 61 } },
	{ "IPv6 SPP forward: 38-byte header stripped, checksum follows", FWD, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0,
	  L6, P6, C6, U6, X6, { 6, L6, P6, SPP, C6, X6, 77 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 77 } },
	{ "IPv6 v2 forward, partial skb's full sum", FWD, true, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6, P6, C6, U6,
	  X6, { 6, L6, P6, V2, C6, X6, 101 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 101 } },
	{ "IPv6 v2 forward, partial skb's full sum, 1200 bytes", FWD, true, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6,
	  P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 1200 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 1200 } },
	/* test_run takes packets up to a page: 3000 bytes still cover many whole chunks and every part size. */
	{ "IPv6 v2 forward, partial skb's full sum, 3001 bytes", FWD, true, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6,
	  P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 3001 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 3001 } },
	{ "IPv6 SPP forward, partial skb's full sum, empty payload", FWD, true, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0,
	  L6, P6, C6, U6, X6, { 6, L6, P6, SPP, C6, X6, 0 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 0 } },
	{ "IPv6 SPP forward, partial skb's full sum, 3 bytes", FWD, true, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0, L6,
	  P6, C6, U6, X6, { 6, L6, P6, SPP, C6, X6, 3 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 3 } },
	{ "IPv6 SPP forward, another proxy address: stale, to userspace", FWD, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0,
	  L6, P6, C6, U6, X6, { 6, L6, P6, SPP, C6, { "2001:db8:ffff::11", 443 }, 77 }, TC_ACT_UNSPEC, true, { 0 },
	  MMP_UDP_MARK_STALE, true },
	{ "IPv6 v2 forward, another client: stale, to userspace", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6, P6,
	  C6, U6, X6, { 6, L6, P6, V2, { "2001:db8:77::8", 5555 }, X6, 20 }, TC_ACT_UNSPEC, true, { 0 },
	  MMP_UDP_MARK_STALE, true },
	{ "IPv6 v2 forward, draining: marked, to userspace", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_DRAIN, 0, L6, P6, C6,
	  U6, X6, { 6, L6, P6, V2, C6, X6, 50 }, TC_ACT_UNSPEC, true, { 0 }, MMP_UDP_MARK_DRAIN_FWD | 1, false },
	{ "draining, userspace sent the last one passed: the kernel's from this one on", FWD, false, MMP_UDP_FMT_V2,
	  MMP_UDP_MODE_DRAIN, 0, L6, P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 50 }, TC_ACT_OK, false,
	  { 6, C6, U6, NONE, C6, X6, 50 }, 0, false, 5, 0, 5 },
	{ "draining, userspace one behind: passed, numbered 6", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_DRAIN, 0, L6,
	  P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 50 }, TC_ACT_UNSPEC, true, { 0 }, MMP_UDP_MARK_DRAIN_FWD | 6, false, 5,
	  0, 4 },
	{ "draining, numbers wrap at 15 bits", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_DRAIN, 0, L6, P6, C6, U6, X6,
	  { 6, L6, P6, V2, C6, X6, 50 }, TC_ACT_OK, false, { 6, C6, U6, NONE, C6, X6, 50 }, 0, false, 32768 + 7, 0, 7 },
	{ "draining, userspace MMP_UDP_DRAIN_BEHIND behind: dropped (held)", FWD, false, MMP_UDP_FMT_V2,
	  MMP_UDP_MODE_DRAIN, 0, L6, P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 50 }, TC_ACT_SHOT, true, { 0 }, 0, false,
	  MMP_UDP_DRAIN_BEHIND + 3, 1, 3 },
	{ "draining and held: one in MMP_UDP_DRAIN_PROBE is still passed", FWD, false, MMP_UDP_FMT_V2,
	  MMP_UDP_MODE_DRAIN, 0, L6, P6, C6, U6, X6, { 6, L6, P6, V2, C6, X6, 50 }, TC_ACT_UNSPEC, true, { 0 },
	  MMP_UDP_MARK_DRAIN_FWD | (MMP_UDP_DRAIN_BEHIND + 4), false, MMP_UDP_DRAIN_BEHIND + 3, MMP_UDP_DRAIN_PROBE, 3 },
	{ "IPv4 v2 forward: 28-byte header stripped, no checksum", FWD, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L4_,
	  P4, C4, U4, X4, { 4, L4_, P4, V2, C4, X4, 101 }, TC_ACT_OK, false, { 4, C4, U4, NONE, C4, X4, 101 } },
	{ "IPv4 SPP forward", FWD, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0, L4_, P4, C4, U4, X4,
	  { 4, L4_, P4, SPP, C4, X4, 64 }, TC_ACT_OK, false, { 4, C4, U4, NONE, C4, X4, 64 } },
	{ "IPv6 v2 reply: addresses and ports, checksum follows", REV, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L6, P6,
	  C6, U6, X6, { 6, U6, C6, NONE, C6, X6, 99 }, TC_ACT_OK, false, { 6, P6, L6, NONE, C6, X6, 99 } },
	{ "IPv6 SPP reply: the client's header inserted, checksum follows", REV, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE,
	  0, L6, P6, C6, U6, X6, { 6, U6, C6, NONE, C6, X6, 99 }, TC_ACT_OK, false, { 6, P6, L6, SPP, C6, X6, 99 } },
	{ "IPv6 SPP reply, even payload", REV, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0, L6, P6, C6, U6, X6,
	  { 6, U6, C6, NONE, C6, X6, 1200 }, TC_ACT_OK, false, { 6, P6, L6, SPP, C6, X6, 1200 } },
	{ "IPv4 SPP reply: IPv4-mapped addresses in the header", REV, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE, 0, L4_, P4,
	  C4, U4, X4, { 4, U4, C4, NONE, C4, X4, 33 }, TC_ACT_OK, false, { 4, P4, L4_, SPP, C4, X4, 33 } },
	{ "IPv4 v2 reply", REV, false, MMP_UDP_FMT_V2, MMP_UDP_MODE_ACTIVE, 0, L4_, P4, C4, U4, X4,
	  { 4, U4, C4, NONE, C4, X4, 33 }, TC_ACT_OK, false, { 4, P4, L4_, NONE, C4, X4, 33 } },
	/* Its mark stays inside setup-routing's fwmark rule: from beyond loopback it still reaches the socket (§14). */
	{ "IPv4 v2 reply, draining: marked inside the steering rule, to userspace", REV, false, MMP_UDP_FMT_V2,
	  MMP_UDP_MODE_DRAIN, 0, L4_, P4, C4, U4, X4, { 4, U4, C4, NONE, C4, X4, 33 }, TC_ACT_UNSPEC, true, { 0 },
	  MMP_UDP_MARK_DRAIN_REV | 3, false, 2, 0, 1 },
	{ "IPv6 SPP reply over max_len once grown: to userspace", REV, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE,
	  40 + 8 + 1000 + 37, L6, P6, C6, U6, X6, { 6, U6, C6, NONE, C6, X6, 1000 }, TC_ACT_UNSPEC, true, { 0 }, 0 },
	{ "IPv6 SPP reply at exactly max_len once grown", REV, false, MMP_UDP_FMT_SPP, MMP_UDP_MODE_ACTIVE,
	  40 + 8 + 1000 + 38, L6, P6, C6, U6, X6, { 6, U6, C6, NONE, C6, X6, 1000 }, TC_ACT_OK, false,
	  { 6, P6, L6, SPP, C6, X6, 1000 } },
	/* Interfaces: a flow's 4-tuple anywhere but its in_ifindex is left untouched, and counted. */
	{ .name = "IPv4 v2 forward on another interface than the LB's: untouched, counted", .dir = FWD,
	  .format = MMP_UDP_FMT_V2, .mode = MMP_UDP_MODE_ACTIVE, .lb = L4_, .local = P4, .client = C4, .up = U4,
	  .spp_proxy = X4, .in = { 4, L4_, P4, V2, C4, X4, 101 }, .ret = TC_ACT_UNSPEC, .same = true,
	  .entry_if = IF_OTHER, .wrong_ifindex = 1 },
	{ .name = "IPv6 v2 forward, another client's header on another interface: the entry does not go stale",
	  .dir = FWD, .format = MMP_UDP_FMT_V2, .mode = MMP_UDP_MODE_ACTIVE, .lb = L6, .local = P6, .client = C6,
	  .up = U6, .spp_proxy = X6, .in = { 6, L6, P6, V2, { "2001:db8:77::8", 5555 }, X6, 20 }, .ret = TC_ACT_UNSPEC,
	  .same = true, .entry_if = IF_OTHER, .wrong_ifindex = 1 },
	{ .name = "IPv4 SPP forward of a local LB's flow arriving on a veth: untouched, counted", .dir = FWD,
	  .format = MMP_UDP_FMT_SPP, .mode = MMP_UDP_MODE_ACTIVE, .lb = L4_, .local = P4, .client = C4, .up = U4,
	  .spp_proxy = X4, .in = { 4, L4_, P4, SPP, C4, X4, 64 }, .ret = TC_ACT_UNSPEC, .same = true,
	  .pkt_if = IF_VETH, .wrong_ifindex = 1 },
	{ .name = "IPv4 v2 forward of a remote LB's flow on its own interface (the veth): rewritten", .dir = FWD,
	  .format = MMP_UDP_FMT_V2, .mode = MMP_UDP_MODE_ACTIVE, .lb = L4_, .local = P4, .client = C4, .up = U4,
	  .spp_proxy = X4, .in = { 4, L4_, P4, V2, C4, X4, 101 }, .ret = TC_ACT_OK,
	  .out = { 4, C4, U4, NONE, C4, X4, 101 }, .entry_if = IF_VETH, .pkt_if = IF_VETH },
	/* An upstream beyond loopback (§14): out of its interface by bpf_redirect_neigh, if it fits its MTU. */
	{ .name = "IPv4 v2 forward to an upstream beyond loopback: rewritten, redirected out", .dir = FWD,
	  .format = MMP_UDP_FMT_V2, .mode = MMP_UDP_MODE_ACTIVE, .lb = L4_, .local = P4, .client = C4, .up = U4,
	  .spp_proxy = X4, .in = { 4, L4_, P4, V2, C4, X4, 101 }, .ret = TC_ACT_REDIRECT,
	  .out = { 4, C4, U4, NONE, C4, X4, 101 }, .entry_if = IF_VETH, .pkt_if = IF_VETH, .redirect_out = true },
	{ .name = "IPv6 SPP forward beyond loopback, at exactly the upstream's MTU: redirected", .dir = FWD,
	  .format = MMP_UDP_FMT_SPP, .mode = MMP_UDP_MODE_ACTIVE, .max_len = 40 + 8 + 200, .lb = L6, .local = P6,
	  .client = C6, .up = U6, .spp_proxy = X6, .in = { 6, L6, P6, SPP, C6, X6, 200 }, .ret = TC_ACT_REDIRECT,
	  .out = { 6, C6, U6, NONE, C6, X6, 200 }, .redirect_out = true },
	{ .name = "IPv6 SPP forward beyond loopback, over the upstream's MTU: to userspace (it fragments)", .dir = FWD,
	  .format = MMP_UDP_FMT_SPP, .mode = MMP_UDP_MODE_ACTIVE, .max_len = 40 + 8 + 199, .lb = L6, .local = P6,
	  .client = C6, .up = U6, .spp_proxy = X6, .in = { 6, L6, P6, SPP, C6, X6, 200 }, .ret = TC_ACT_UNSPEC,
	  .same = true, .redirect_out = true },
	{ .name = "IPv4 v2 reply from the upstream's address on another interface than lo: untouched, counted",
	  .dir = REV, .format = MMP_UDP_FMT_V2, .mode = MMP_UDP_MODE_ACTIVE, .lb = L4_, .local = P4, .client = C4,
	  .up = U4, .spp_proxy = X4, .in = { 4, U4, C4, NONE, C4, X4, 33 }, .ret = TC_ACT_UNSPEC, .same = true,
	  .entry_if = IF_OTHER, .wrong_ifindex = 1 },
	{ .name = "IPv6 SPP reply injected on a veth: untouched, counted", .dir = REV, .format = MMP_UDP_FMT_SPP,
	  .mode = MMP_UDP_MODE_ACTIVE, .lb = L6, .local = P6, .client = C6, .up = U6, .spp_proxy = X6,
	  .in = { 6, U6, C6, NONE, C6, X6, 99 }, .ret = TC_ACT_UNSPEC, .same = true, .pkt_if = IF_VETH,
	  .wrong_ifindex = 1 },
};

/* ------------------------------------------------------------------ map entries -- */

/*
 * As user/udp/udp_forward.c's fast_mark: a flow's forward entry is re-armed
 * after this many stale marks, then left alone (MAX_STALE_REARMS there).
 */
#define STALE_REARMS 8

struct fast_env {
	char pin_dir[64];
	struct mmp_config cfg;
	struct udp_maps *maps;
	struct udp_fast *fp;
	struct sockaddr_storage target;
	struct udp_flow f;
};

static struct fast_env env;

static void write_sysctl(const char *path, const char *v)
{
	FILE *f = fopen(path, "we");

	assert_non_null(f);
	fputs(v, f);
	fclose(f);
}

static void sa4(struct sockaddr_storage *ss, const struct end *e)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	in->sin_family = AF_INET;
	in->sin_port = htons(e->port);
	assert_int_equal(inet_pton(AF_INET, e->addr, &in->sin_addr), 1);
}

static void ep4(struct udp_ep *ep, const struct end *e)
{
	struct sockaddr_storage ss;

	sa4(&ss, e);
	udp_ep_from_sa(ep, (const struct sockaddr *)&ss);
}

/*
 * The real udp_maps and udp_fast, attached to lo and the veth of this
 * test's own network namespace (main()), and one IPv4 flow of format: L ->
 * P for client C, upstream U, as user/udp/udp_lifecycle.c opens it.
 */
static int fast_setup(void **state)
{
	(void)state;
	if (geteuid() != 0 || !veth_ifindex)
		return 0; /* the cases skip */
	memset(&env, 0, sizeof(env));
	snprintf(env.pin_dir, sizeof(env.pin_dir), "/sys/fs/bpf/mmp-unit-udpfast-%d", (int)getpid());
	/* A remote LB's datagrams go into lo: the namespace is ours, so are its sysctls. */
	write_sysctl("/proc/sys/net/ipv4/conf/lo/route_localnet", "1");
	write_sysctl("/proc/sys/net/ipv4/conf/lo/accept_local", "1");
	env.cfg.pin_dir = env.pin_dir;
	env.cfg.ifaces[0] = VETH;
	env.cfg.n_ifaces = 1;
	assert_int_equal(udp_maps_open(env.pin_dir, 64, true, &env.maps), 0);
	assert_int_equal(udp_fast_open(&env.cfg, env.maps, &env.fp), 0);
	sa4(&env.target, &(struct end)U4);
	env.f.fd = -1;
	env.f.cookie = 4242;
	env.f.target = &env.target;
	ep4(&env.f.client, &(struct end)C4);
	ep4(&env.f.lb, &(struct end)L4_);
	ep4(&env.f.local, &(struct end)P4);
	return 0;
}

static int fast_teardown(void **state)
{
	(void)state;
	udp_fast_close(env.fp);
	udp_maps_close(env.maps);
	if (env.pin_dir[0])
		rmdir(env.pin_dir);
	memset(&env, 0, sizeof(env));
	return 0;
}

static unsigned int map_count(int fd)
{
	uint8_t key[64], next[64];
	unsigned int n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(fd, prev, next)) {
		memcpy(key, next, sizeof(key));
		prev = key;
		n++;
	}
	return n;
}

static void assert_entries(unsigned int fwd, unsigned int rev, unsigned int drain)
{
	assert_int_equal(map_count(udp_maps_fwd_fd(env.maps)), fwd);
	assert_int_equal(map_count(udp_maps_rev_fd(env.maps)), rev);
	assert_int_equal(map_count(udp_maps_drain_fd(env.maps)), drain);
}

/* One datagram of the load balancer through the loaded program, arriving on ifindex: the mark it got. */
static uint32_t run_dgram(const struct pkt_spec *spec, uint32_t ifindex)
{
	uint8_t in[PKT_MAX], out[PKT_MAX];
	struct __sk_buff ctx = { 0 }, ctx_in = { .ifindex = ifindex };
	size_t len = build(in, spec);
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = sizeof(out), .ctx_out = &ctx, .ctx_size_out = sizeof(ctx), .repeat = 1);

	if (ifindex > 1) {
		opts.ctx_in = &ctx_in;
		opts.ctx_size_in = sizeof(ctx_in);
	}
	assert_int_equal(bpf_prog_test_run_opts(udp_maps_prog_fd(env.maps), &opts), 0);
	assert_int_equal((int)opts.retval, TC_ACT_UNSPEC);
	return ctx.mark;
}

/*
 * The flow's LB keeps sending headers the program leaves to userspace
 * (next_header(i) for the i-th): each marks the entry stale, userspace
 * re-arms it STALE_REARMS times, as fast_mark does, then leaves it stale.
 */
static void drive_stale(uint32_t ifindex, void (*next_header)(int i, struct pkt_spec *spec))
{
	for (int i = 0; i <= STALE_REARMS; i++) {
		struct pkt_spec spec = { 4, L4_, P4, V2, C4, X4, 40 };

		next_header(i, &spec);
		assert_int_equal(run_dgram(&spec, ifindex), MMP_UDP_MARK_STALE);
		udp_fast_fwd_missed(&env.f);
		if (env.f.format == MMP_UDP_FMT_SPP)
			put_header(env.f.spp_hdr, &spec); /* on_dgram: replies carry the latest header */
		if (i < STALE_REARMS)
			assert_int_equal(udp_fast_add(env.fp, &env.f, (int)ifindex, false), 0);
	}
	assert_false(env.f.fast_fwd);
}

static void tlv_header(int i, struct pkt_spec *spec)
{
	(void)i;
	spec->tlv = true;
}

/* SPP with the proxy address switching between two at every datagram. */
static void proxy_moves(int i, struct pkt_spec *spec)
{
	spec->hdr = SPP;
	spec->hdr_proxy = (i & 1) ? (struct end)X4 : (struct end){ "192.0.2.11", 443 };
}

/*
 * A local LB (lo) whose v2 headers carry a TLV: the forward entry goes
 * stale for good, the replies stay in the kernel.
 */
static void test_tlv_entries_deleted(void **state)
{
	(void)state;
	if (!env.fp)
		skip();
	env.f.format = MMP_UDP_FMT_V2;
	assert_int_equal(udp_fast_add(env.fp, &env.f, LO_IFINDEX, false), 0);
	assert_entries(1, 1, 1);
	drive_stale(LO_IFINDEX, tlv_header);
	assert_true(env.f.fast); /* the replies */
	assert_entries(1, 1, 1); /* the stale forward entry is still there */
	udp_fast_del(env.fp, &env.f);
	assert_entries(0, 0, 0);
	assert_false(env.f.fast);
}

/*
 * A remote SPP LB (the veth) whose proxy address keeps changing: its
 * replies never were in the kernel (reply() in udp.bpf.c), so once the
 * forward entry is no longer re-armed the flow is not fast at all, and
 * its forward and drain entries must still go.
 */
static void test_spp_proxy_entries_deleted(void **state)
{
	struct pkt_spec first = { 4, L4_, P4, SPP, C4, X4, 0 };

	(void)state;
	if (!env.fp)
		skip();
	env.f.format = MMP_UDP_FMT_SPP;
	put_header(env.f.spp_hdr, &first);
	assert_int_equal(udp_fast_add(env.fp, &env.f, (int)veth_ifindex, false), 0);
	assert_entries(1, 0, 1);
	drive_stale(veth_ifindex, proxy_moves);
	assert_false(env.f.fast);
	assert_entries(1, 0, 1);
	udp_fast_del(env.fp, &env.f);
	assert_entries(0, 0, 0);
}

/* The flow's local address changes under a wildcard listener: its entry is found by the key it went in with. */
static void test_moved_local_entries_deleted(void **state)
{
	(void)state;
	if (!env.fp)
		skip();
	env.f.format = MMP_UDP_FMT_V2;
	assert_int_equal(udp_fast_add(env.fp, &env.f, LO_IFINDEX, false), 0);
	ep4(&env.f.local, &(struct end){ "198.51.100.9", 7000 }); /* on_dgram, w->wildcard */
	udp_fast_del(env.fp, &env.f);
	assert_entries(0, 0, 0);
}

/*
 * A load balancer on this host sending to our veth address: IP_PKTINFO names
 * the veth, but its datagrams come through lo, so the entries must name lo
 * and continue there (a redirect out of the veth lost its replies).
 */
static void test_own_address_lb_is_local(void **state)
{
	struct mmp_udp_fkey fk = { 0 };
	struct mmp_udp_rkey rk = { 0 };
	struct mmp_udp_fval fv;
	struct mmp_udp_rval rv;

	(void)state;
	if (!env.fp)
		skip();
	env.f.format = MMP_UDP_FMT_V2;
	ep4(&env.f.lb, &(struct end){ OWN_ADDR, 40000 });
	assert_int_equal(udp_fast_add(env.fp, &env.f, (int)veth_ifindex, false), 0);
	assert_int_equal(env.f.lb_ifindex, LO_IFINDEX);
	put_end(&(struct end){ OWN_ADDR, 40000 }, fk.lb_addr, &fk.lb_port);
	put_end(&(struct end)P4, fk.local_addr, &fk.local_port);
	assert_int_equal(bpf_map_lookup_elem(udp_maps_fwd_fd(env.maps), &fk, &fv), 0);
	assert_int_equal(fv.in_ifindex, LO_IFINDEX);
	assert_int_equal(fv.redirect_ifindex, 0);
	put_end(&(struct end)U4, rk.up_addr, &rk.up_port);
	put_end(&(struct end)C4, rk.client_addr, &rk.client_port);
	assert_int_equal(bpf_map_lookup_elem(udp_maps_rev_fd(env.maps), &rk, &rv), 0);
	assert_int_equal(rv.in_ifindex, LO_IFINDEX);
	assert_int_equal(rv.redirect_ifindex, 0);
	udp_fast_del(env.fp, &env.f);
	assert_entries(0, 0, 0);
}

/* Deleted once: a second udp_fast_del (a flow that moves, then closes) finds nothing to do. */
static void test_del_twice(void **state)
{
	(void)state;
	if (!env.fp)
		skip();
	env.f.format = MMP_UDP_FMT_V2;
	assert_int_equal(udp_fast_add(env.fp, &env.f, LO_IFINDEX, false), 0);
	udp_fast_del(env.fp, &env.f);
	assert_false(env.f.fwd_entry || env.f.drain_entry || env.f.fast_rev);
	udp_fast_del(env.fp, &env.f);
	assert_entries(0, 0, 0);
}

/*
 * Its own network namespace, with a veth pair: the veth cases need a second
 * device, and the entry cases attach TC programs, which must not touch the
 * host's interfaces.
 */
static void make_netns(void)
{
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "test_udp_fastpath: unshare(CLONE_NEWNET): %s: the veth and entry cases are skipped\n",
			strerror(errno));
		return;
	}
	if (system("ip link add " VETH " type veth peer name mmpt-u1 && ip link set lo up && ip link set mmpt-u1 up && "
		   "ip link set " VETH " up && ip addr add " OWN_ADDR "/24 dev " VETH) == 0)
		veth_ifindex = if_nametoindex(VETH);
	if (!veth_ifindex)
		fprintf(stderr, "test_udp_fastpath: no veth (ip link add failed): the veth and entry cases are skipped\n");
}

int main(void)
{
	size_t n = sizeof(cases) / sizeof(cases[0]);
	struct CMUnitTest tests[sizeof(cases) / sizeof(cases[0])];
	const struct CMUnitTest entries[] = {
		cmocka_unit_test_setup_teardown(test_tlv_entries_deleted, fast_setup, fast_teardown),
		cmocka_unit_test_setup_teardown(test_spp_proxy_entries_deleted, fast_setup, fast_teardown),
		cmocka_unit_test_setup_teardown(test_moved_local_entries_deleted, fast_setup, fast_teardown),
		cmocka_unit_test_setup_teardown(test_del_twice, fast_setup, fast_teardown),
		cmocka_unit_test_setup_teardown(test_own_address_lb_is_local, fast_setup, fast_teardown),
	};
	int failed;

	if (geteuid() != 0)
		fprintf(stderr, "test_udp_fastpath: not root: the BPF cases are skipped (BPF_PROG_TEST_RUN needs root)\n");
	else
		make_netns();
	for (size_t i = 0; i < n; i++) {
		tests[i] = (struct CMUnitTest){ .name = cases[i].name, .test_func = test_case,
						.teardown_func = teardown, .initial_state = (void *)&cases[i] };
	}
	failed = _cmocka_run_group_tests("udp_fastpath", tests, n, NULL, NULL);
	failed += cmocka_run_group_tests_name("udp_fastpath_entries", entries, NULL, NULL);
	return failed;
}
