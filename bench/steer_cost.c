// SPDX-License-Identifier: GPL-2.0
/*
 * steer_cost: what the reply-steering program (bpf/steer.bpf.c,
 * docs/DESIGN.md §14) costs per packet at the upstream's interface, with
 * BPF_PROG_TEST_RUN (the kernel runs it REPEAT times and reports the mean).
 * The map holds 10,000 other tuples, as a busy proxy's would.
 *
 *   steer_cost [REPEAT] [ROUNDS]      (default 1000000 and 5)
 *
 * Cases: a reply of a recorded tuple (marked), a packet from the upstream's
 * port that is not ours (a hash lookup that misses), and the container's own
 * traffic (another source port: the port bitmap passes it without a lookup).
 * Prints each round, interleaved, then the medians. Needs root (BPF).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "mmp_steer.h"
#include "steer.skel.h"

#define UP_PORT 9000
#define CASES 3
#define MAX_ROUNDS 101

struct pkt {
	const char *name;
	uint16_t sport, dport;
};

static const struct pkt pkts[CASES] = {
	{ "marked (a recorded reply)", UP_PORT, 20000 },
	{ "looked up, not ours", UP_PORT, 20001 },
	{ "another source port, no lookup", 45000, 80 },
};

/* Ethernet, IPv4 10.99.0.2 -> 192.0.2.77, TCP sport -> dport. */
static size_t build(uint8_t *p, const struct pkt *k)
{
	memset(p, 0, 64);
	memset(p, 0x02, 12);
	p[12] = 0x08;
	p[14] = 0x45;
	p[17] = 40;
	p[22] = 64;
	p[23] = IPPROTO_TCP;
	inet_pton(AF_INET, "10.99.0.2", p + 26);
	inet_pton(AF_INET, "192.0.2.77", p + 30);
	p[34] = k->sport >> 8;
	p[35] = k->sport & 0xFF;
	p[36] = k->dport >> 8;
	p[37] = k->dport & 0xFF;
	p[46] = 0x50;
	return 54;
}

static void add(int fd, uint32_t client, uint16_t cport)
{
	struct mmp_steer_key k = { .family = AF_INET, .proto = IPPROTO_TCP };
	struct mmp_steer_val v = { .owner = 1 };

	k.up_port = htons(UP_PORT);
	k.client_port = htons(cport);
	k.up_addr[0] = htonl(0x0a630002);
	k.client_addr[0] = htonl(client);
	bpf_map_update_elem(fd, &k, &v, BPF_ANY);
}

static int cmp(const void *a, const void *b)
{
	return (int)(*(const uint32_t *)a - *(const uint32_t *)b);
}

int main(int argc, char **argv)
{
	uint32_t repeat = argc > 1 ? (uint32_t)atoi(argv[1]) : 1000000, rounds = argc > 2 ? (uint32_t)atoi(argv[2]) : 5;
	uint32_t ns[CASES][MAX_ROUNDS];
	struct steer_bpf *skel = steer_bpf__open_and_load();
	int fd;

	if (!skel || !repeat || !rounds || rounds > MAX_ROUNDS) {
		fprintf(stderr, "steer_cost: cannot load the program (root?) or bad arguments\n");
		return 1;
	}
	skel->bss->mmp_steer_ports[UP_PORT >> 5] |= 1U << (UP_PORT & 31);
	fd = bpf_map__fd(skel->maps.mmp_reply_steer);
	add(fd, 0xc000024d, 20000); /* 192.0.2.77:20000 */
	for (uint32_t i = 0; i < 10000; i++)
		add(fd, 0xc6336400 + i, (uint16_t)(30000 + i % 30000));
	for (uint32_t r = 0; r < rounds; r++)
		for (int c = 0; c < CASES; c++) {
			uint8_t in[64], out[64];
			size_t len = build(in, &pkts[c]);
			LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = in, .data_size_in = (uint32_t)len,
				    .data_out = out, .data_size_out = sizeof(out), .repeat = repeat);

			if (bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mmp_steer_in), &opts)) {
				perror("steer_cost: BPF_PROG_TEST_RUN");
				return 1;
			}
			ns[c][r] = opts.duration;
			printf("round %u %-32s %u ns\n", r, pkts[c].name, opts.duration);
		}
	for (int c = 0; c < CASES; c++) {
		qsort(ns[c], rounds, sizeof(ns[c][0]), cmp);
		printf("median %-32s %u ns\n", pkts[c].name, ns[c][rounds / 2]);
	}
	steer_bpf__destroy(skel);
	return 0;
}
