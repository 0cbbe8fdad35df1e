// SPDX-License-Identifier: GPL-2.0
/*
 * tc_cost: what the tc engine's ingress program costs per packet, measured
 * with BPF_PROG_TEST_RUN (the kernel runs it REPEAT times on one packet and
 * reports the mean), so that a change to bpf/tc.bpf.c can be compared
 * without the noise of a full benchmark.
 *
 *   tc_cost [--repeat N] [--rounds R] [--cold N]
 *
 * Packets: a pure ACK with timestamps (what ping-pong and bulk receivers
 * send), a 1448-byte data segment, a packet to the proxy's port of a flow
 * that is not spliced (still on splice), and one with no service port (what
 * the host's other traffic on a hooked interface pays).
 *
 * A rewritten packet stays in place for the next repetition, so the spliced
 * cases use two flows that translate into each other: A turns tuple T1 into
 * T2, B turns T2 back into T1. Every repetition is then a full translation
 * (addresses, ports, seq/ack, timestamps, checksums) on a local flow, as on
 * lo with a load balancer on the same host.
 *
 * Prints one line per case: the median over R rounds of the mean ns per
 * packet, and a JSON line. With --cold N, also the median of N single runs,
 * each after the caches were flushed by writing 32 MiB: the program's cost
 * when its maps, scratch and code were pushed out by other work, as the TCP
 * stack does between two segments of a flow in the field. Needs root (BPF).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "mmp_tc.h"
#include "tc.skel.h"

#define ETH_HLEN 14
#define IP_HLEN 20
#define TCP_TS_HLEN 32 /* 20 + NOP NOP TS(10) */

struct endpoints {
	const char *saddr, *daddr;
	uint16_t sport, dport;
};

static const struct endpoints T1 = { "10.0.0.1", "10.0.0.2", 40000, 8443 }; /* L -> P */
static const struct endpoints T2 = { "192.0.2.7", "127.0.0.1", 51000, 8080 }; /* C -> U */
static const struct endpoints MISS = { "10.9.9.9", "10.0.0.2", 41000, 8443 }; /* to P, not handed off */
static const struct endpoints OTHER = { "10.9.9.9", "10.0.0.3", 41000, 9999 }; /* no service port */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, v >> 16);
	put16(p + 2, v);
}

static uint16_t fold_sum(const uint8_t *p, size_t n, uint32_t sum)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += (uint32_t)p[i] << 8 | p[i + 1];
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* An Ethernet/IPv4/TCP packet with timestamps and valid checksums. Returns its length. */
static size_t build(uint8_t *b, const struct endpoints *e, size_t payload, uint8_t flags)
{
	uint8_t *ip = b + ETH_HLEN, *tcp = ip + IP_HLEN;
	size_t seg = TCP_TS_HLEN + payload;
	uint32_t pseudo = 0;

	memset(b, 0, ETH_HLEN + IP_HLEN + seg);
	put16(b + 12, 0x0800);
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(IP_HLEN + seg));
	ip[6] = 0x40; /* DF */
	ip[8] = 64;
	ip[9] = 6;
	inet_pton(AF_INET, e->saddr, ip + 12);
	inet_pton(AF_INET, e->daddr, ip + 16);
	put16(ip + 10, (uint16_t)~fold_sum(ip, IP_HLEN, 0));
	put16(tcp, e->sport);
	put16(tcp + 2, e->dport);
	put32(tcp + 4, 1000000);
	put32(tcp + 8, 2000000);
	tcp[12] = (TCP_TS_HLEN / 4) << 4;
	tcp[13] = flags;
	put16(tcp + 14, 512);
	tcp[20] = 1, tcp[21] = 1, tcp[22] = 8, tcp[23] = 10; /* NOP NOP TS */
	put32(tcp + 24, 123456);
	put32(tcp + 28, 654321);
	for (size_t i = 0; i < payload; i++)
		tcp[TCP_TS_HLEN + i] = (uint8_t)i;
	pseudo = fold_sum(ip + 12, 8, 0) + 6 + (uint32_t)seg;
	put16(tcp + 16, (uint16_t)~fold_sum(tcp, seg, pseudo));
	return ETH_HLEN + IP_HLEN + seg;
}

static void tuple_of(const struct endpoints *e, struct mmp_tc_tuple *t)
{
	memset(t, 0, sizeof(*t));
	t->family = 4;
	t->sport = htons(e->sport);
	t->dport = htons(e->dport);
	inet_pton(AF_INET, e->saddr, t->saddr);
	inet_pton(AF_INET, e->daddr, t->daddr);
}

/* Flow id: tuple in -> tuple out, as a spliced UP direction. */
static int add_flow(struct tc_bpf *skel, uint64_t id, const struct endpoints *in, const struct endpoints *out)
{
	struct mmp_tc_tuple_val tv = { .flow = id, .role = MMP_TC_ROLE_UP };
	struct mmp_tc_flow flow = { .mode = MMP_TC_MODE_SPLICE };
	struct mmp_tc_tuple key;

	tuple_of(in, &key);
	tuple_of(out, &flow.up.out);
	/* The service port, as mmp_tc_mark_port does (user/engine/tc/tc_flows.c). */
	skel->bss->mmp_tc_ports[key.dport / 64] |= 1ULL << (key.dport % 64);
	flow.up.seq_delta = 0x10000;
	flow.up.ack_delta = 0x20000;
	flow.up.ts_base = 1000;
	flow.up.wscale_in = 7;
	flow.up.wscale_out = 7;
	flow.up.timestamps = 1;
	flow.up.sack = 1;
	flow.up.in_ifindex = 1; /* lo: BPF_PROG_TEST_RUN's device */
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_tc_tuples), &key, &tv, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(skel->maps.mmp_tc_flows), &id, &flow, BPF_ANY))
		return -errno;
	return 0;
}

/* Mean ns per run of the ingress program on pkt, over repeat runs. */
static int run(struct tc_bpf *skel, const uint8_t *pkt, size_t len, int repeat, uint32_t *ns, uint32_t *retval)
{
	uint8_t out[2048];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = pkt, .data_size_in = (uint32_t)len, .data_out = out,
		    .data_size_out = sizeof(out), .repeat = repeat);

	if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mmp_tc_ingress), &opts))
		return -errno;
	*ns = opts.duration;
	*retval = opts.retval;
	return 0;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

#define FLUSH_BYTES (32u << 20)

/* Median ns of n single runs, each with the CPU caches flushed first. */
static int run_cold(struct tc_bpf *skel, const uint8_t *pkt, size_t len, int n, uint32_t *ns, uint32_t *retval)
{
	volatile uint8_t *flush = malloc(FLUSH_BYTES);
	uint32_t *each = calloc((size_t)n, sizeof(*each));
	int err = 0;

	if (!each || !flush) {
		free(each);
		free((void *)flush);
		return -ENOMEM;
	}
	for (int i = 0; i < n && !err; i++) {
		for (uint32_t b = 0; b < FLUSH_BYTES; b += 64)
			flush[b] = (uint8_t)i;
		err = run(skel, pkt, len, 1, &each[i], retval);
	}
	if (!err) {
		qsort(each, (size_t)n, sizeof(each[0]), cmp_u32);
		*ns = each[n / 2];
	}
	free(each);
	free((void *)flush);
	return err;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = { { "repeat", required_argument, NULL, 'n' },
					      { "rounds", required_argument, NULL, 'r' },
					      { "cold", required_argument, NULL, 'c' },
					      { 0 } };
	struct {
		const char *name;
		const struct endpoints *e;
		size_t payload;
		uint8_t flags;
	} cases[] = {
		{ "spliced-ack", &T1, 0, 0x10 },
		{ "spliced-data-1448", &T1, 1448, 0x18 },
		{ "not-spliced", &MISS, 0, 0x10 },
		{ "other-traffic", &OTHER, 0, 0x10 },
	};
	int repeat = 1000000, rounds = 5, cold = 0, c, err;
	struct tc_bpf *skel;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (c == 'n')
			repeat = atoi(optarg);
		else if (c == 'r')
			rounds = atoi(optarg);
		else if (c == 'c')
			cold = atoi(optarg);
		else
			return 2;
	}
	if (repeat < 1 || rounds < 1 || rounds > 99 || cold < 0) {
		fprintf(stderr, "tc_cost: --repeat >= 1, --rounds 1..99 and --cold >= 0\n");
		return 2;
	}
	libbpf_set_print(NULL);
	skel = tc_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "tc_cost: cannot load the tc programs: %s (run as root after make)\n", strerror(errno));
		return 1;
	}
	err = add_flow(skel, 1, &T1, &T2);
	if (!err)
		err = add_flow(skel, 2, &T2, &T1);
	if (err) {
		fprintf(stderr, "tc_cost: cannot fill the maps: %s\n", strerror(-err));
		tc_bpf__destroy(skel);
		return 1;
	}
	uint32_t cold_ns[sizeof(cases) / sizeof(cases[0])] = { 0 };

	printf("JSON {\"tool\":\"tc_cost\",\"repeat\":%d,\"rounds\":%d,\"ns_per_packet\":{", repeat, rounds);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t pkt[2048];
		size_t len = build(pkt, cases[i].e, cases[i].payload, cases[i].flags);
		uint32_t ns[99], retval = 0;

		for (int r = 0; r < rounds; r++) {
			err = run(skel, pkt, len, repeat, &ns[r], &retval);
			if (err) {
				fprintf(stderr, "\ntc_cost: BPF_PROG_TEST_RUN failed: %s\n", strerror(-err));
				tc_bpf__destroy(skel);
				return 1;
			}
		}
		qsort(ns, (size_t)rounds, sizeof(ns[0]), cmp_u32);
		printf("%s\"%s\":%u", i ? "," : "", cases[i].name, ns[rounds / 2]);
		fprintf(stderr, "%-20s %5u ns/packet (median of %d x %d runs; verdict %d)\n", cases[i].name,
			ns[rounds / 2], rounds, repeat, (int)retval);
		if (cold) {
			err = run_cold(skel, pkt, len, cold, &cold_ns[i], &retval);
			if (err) {
				fprintf(stderr, "\ntc_cost: cold runs failed: %s\n", strerror(-err));
				tc_bpf__destroy(skel);
				return 1;
			}
			fprintf(stderr, "%-20s %5u ns/packet cold (median of %d single runs after a cache flush)\n",
				cases[i].name, cold_ns[i], cold);
		}
	}
	printf("}");
	if (cold) {
		printf(",\"cold\":%d,\"cold_ns_per_packet\":{", cold);
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			printf("%s\"%s\":%u", i ? "," : "", cases[i].name, cold_ns[i]);
		printf("}");
	}
	printf("}\n");
	tc_bpf__destroy(skel);
	return 0;
}
