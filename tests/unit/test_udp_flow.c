// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the UDP flow table (user/udp/udp_flow.c), the endpoint key
 * (user/udp/udp_ep.c) and the log rate limiter (user/lib/ratelimit.c).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "udp/udp_flow.h"
#include "lib/ratelimit.h"

static struct udp_ep ep4(uint32_t ip, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct udp_ep ep;

	sin.sin_addr.s_addr = htonl(ip);
	udp_ep_from_sa(&ep, (struct sockaddr *)&sin);
	return ep;
}

static struct udp_flow *mkflow(struct udp_flow_table *t, uint8_t format, struct udp_ep lb, struct udp_ep client,
			       uint64_t now)
{
	struct udp_flow *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->format = format;
	f->lb = lb;
	f->client = client;
	f->last_ns = now;
	assert_int_equal(udp_ft_add(t, f), 0);
	return f;
}

/* IPv4 and IPv4-mapped IPv6 are one key; ports and families are not confused. */
static void test_ep_canonical(void **state)
{
	struct sockaddr_in6 m = { .sin6_family = AF_INET6, .sin6_port = htons(53) };
	struct sockaddr_storage back;
	struct udp_ep a = ep4(0xCB007101, 53), b;

	inet_pton(AF_INET6, "::ffff:203.0.113.1", &m.sin6_addr);
	udp_ep_from_sa(&b, (struct sockaddr *)&m);
	assert_true(udp_ep_eq(&a, &b));
	assert_int_equal(udp_ep_hash(&a, 1), udp_ep_hash(&b, 1));
	b.port = htons(54);
	assert_false(udp_ep_eq(&a, &b));
	assert_int_equal(udp_ep_to_sa(&a, &back), sizeof(struct sockaddr_in));
	assert_int_equal(back.ss_family, AF_INET);
	assert_int_equal(ntohs(((struct sockaddr_in *)&back)->sin_port), 53);
}

static void test_indexes(void **state)
{
	struct udp_flow_table t;
	struct udp_ep lb1 = ep4(0xC6336402, 1000), lb2 = ep4(0xC6336402, 1001), c1 = ep4(0xCB007101, 5000),
		      c2 = ep4(0xCB007102, 5000), none = { 0 };
	struct udp_flow *v2, *spp, *local;

	assert_int_equal(udp_ft_init(&t, 42), 0);
	v2 = mkflow(&t, MMP_UDP_FMT_V2, lb1, c1, 1);
	spp = mkflow(&t, MMP_UDP_FMT_SPP, lb1, c2, 2);
	local = mkflow(&t, MMP_UDP_FMT_LOCAL, lb2, none, 3);
	/* v2 and LOCAL flows are found by their LB ip:port; SPP flows only by client. */
	assert_ptr_equal(udp_ft_by_lb(&t, &lb1), v2);
	assert_ptr_equal(udp_ft_by_lb(&t, &lb2), local);
	assert_ptr_equal(udp_ft_by_client(&t, &c1), v2);
	assert_ptr_equal(udp_ft_by_client(&t, &c2), spp);
	assert_null(udp_ft_by_client(&t, &none));
	/* The SPP client switching to v2 framing on lb1 joins the LB index; back to SPP on lb2 leaves it. */
	udp_ft_remove(&t, v2);
	udp_ft_move(&t, spp, &lb1, MMP_UDP_FMT_V2);
	assert_ptr_equal(udp_ft_by_lb(&t, &lb1), spp);
	udp_ft_move(&t, spp, &lb2, MMP_UDP_FMT_SPP);
	assert_null(udp_ft_by_lb(&t, &lb1));
	assert_ptr_equal(udp_ft_by_lb(&t, &lb2), local);
	assert_ptr_equal(udp_ft_by_client(&t, &c2), spp);
	udp_ft_remove(&t, spp);
	udp_ft_remove(&t, local);
	assert_int_equal(t.count, 0);
	assert_null(udp_ft_oldest(&t));
	free(v2);
	free(spp);
	free(local);
	udp_ft_free(&t);
}

/* The idle list stays ordered by last activity: the timer only reads its head. */
static void test_idle_order(void **state)
{
	struct udp_flow_table t;
	struct udp_flow *f[3];

	assert_int_equal(udp_ft_init(&t, 7), 0);
	for (int i = 0; i < 3; i++)
		f[i] = mkflow(&t, MMP_UDP_FMT_V2, ep4(0x0A000001, 100 + i), ep4(0xCB007101, 100 + i), 10 + i);
	assert_ptr_equal(udp_ft_oldest(&t), f[0]);
	udp_ft_touch(&t, f[0], 20);
	assert_ptr_equal(udp_ft_oldest(&t), f[1]);
	udp_ft_touch(&t, f[2], 21); /* the tail touched again: no change in order */
	assert_ptr_equal(udp_ft_oldest(&t), f[1]);
	assert_int_equal(f[2]->last_ns, 21);
	udp_ft_remove(&t, f[1]);
	assert_ptr_equal(udp_ft_oldest(&t), f[0]);
	udp_ft_remove(&t, f[0]);
	assert_ptr_equal(udp_ft_oldest(&t), f[2]);
	udp_ft_remove(&t, f[2]);
	for (int i = 0; i < 3; i++)
		free(f[i]);
	udp_ft_free(&t);
}

/* Activity the kernel saw a while ago puts a flow back in order, not at the newest end. */
static void test_touch_at(void **state)
{
	struct udp_flow_table t;
	struct udp_flow *f[4];

	assert_int_equal(udp_ft_init(&t, 3), 0);
	for (int i = 0; i < 4; i++) /* last_ns 10, 20, 30, 40 */
		f[i] = mkflow(&t, MMP_UDP_FMT_V2, ep4(0x0A000001, 200 + i), ep4(0xCB007101, 200 + i), 10 * (i + 1));
	udp_ft_touch_at(&t, f[0], 25); /* between f[1] and f[2] */
	assert_ptr_equal(udp_ft_oldest(&t), f[1]);
	assert_ptr_equal(f[1]->idle_next, f[0]);
	assert_ptr_equal(f[0]->idle_next, f[2]);
	udp_ft_touch_at(&t, f[1], 15); /* older than it is: no change */
	assert_int_equal(f[1]->last_ns, 20);
	assert_ptr_equal(udp_ft_oldest(&t), f[1]);
	udp_ft_touch_at(&t, f[1], 50); /* newest of all */
	assert_ptr_equal(t.idle_tail, f[1]);
	assert_ptr_equal(udp_ft_oldest(&t), f[0]);
	/* Walking the list, last_ns never decreases. */
	for (struct udp_flow *g = t.idle_head; g && g->idle_next; g = g->idle_next)
		assert_true(g->last_ns <= g->idle_next->last_ns);
	for (int i = 0; i < 4; i++) {
		udp_ft_remove(&t, f[i]);
		free(f[i]);
	}
	udp_ft_free(&t);
}

static void assert_idle_sorted(const struct udp_flow_table *t, size_t count)
{
	size_t n = 0;

	for (const struct udp_flow *g = t->idle_head; g; g = g->idle_next, n++) {
		if (g->idle_next)
			assert_true(g->last_ns <= g->idle_next->last_ns);
		assert_ptr_equal(g->idle_next ? g->idle_next->idle_prev : t->idle_tail, g);
	}
	assert_int_equal(n, count);
}

/* A batch lands exactly where one touch_at per flow would: order kept, stale times ignored. */
static void test_touch_batch(void **state)
{
	struct udp_flow_table t;
	struct udp_flow *f[5];
	struct udp_ft_touch v[4];

	assert_int_equal(udp_ft_init(&t, 5), 0);
	for (int i = 0; i < 5; i++) /* last_ns 10, 20, 30, 40, 50 */
		f[i] = mkflow(&t, MMP_UDP_FMT_V2, ep4(0x0A000001, 300 + i), ep4(0xCB007101, 300 + i), 10 * (i + 1));
	v[0] = (struct udp_ft_touch){ f[0], 35 }; /* between f[2] and f[3] */
	v[1] = (struct udp_ft_touch){ f[1], 60 }; /* newest */
	v[2] = (struct udp_ft_touch){ f[3], 15 }; /* older than it is: stays */
	v[3] = (struct udp_ft_touch){ f[2], 37 }; /* just after f[0] */
	udp_ft_touch_batch(&t, v, 4);
	assert_idle_sorted(&t, 5);
	assert_ptr_equal(t.idle_head, f[0]);
	assert_ptr_equal(f[0]->idle_next, f[2]);
	assert_ptr_equal(f[2]->idle_next, f[3]);
	assert_ptr_equal(f[3]->idle_next, f[4]);
	assert_ptr_equal(f[4]->idle_next, f[1]);
	assert_ptr_equal(t.idle_tail, f[1]);
	assert_int_equal(f[3]->last_ns, 40);
	udp_ft_touch_batch(&t, v, 0); /* nothing to do */
	assert_idle_sorted(&t, 5);
	for (int i = 0; i < 5; i++) {
		udp_ft_remove(&t, f[i]);
		free(f[i]);
	}
	udp_ft_free(&t);
}

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Issue 26 (1): a UDP worker with one load balancer's default quota of fast
 * flows, every one seen by the kernel in the last second in random order. One
 * touch_at per flow was an insertion sort (24k flows: 3.3 s a tick; 64k: over
 * 20 s), so the worker never caught up. The bound is 50x what a batch needs,
 * even under ASan: it fails only on quadratic work, not on a slow machine.
 */
static void test_touch_batch_scale(void **state)
{
	enum { N = 65536, TICKS = 3 };
	struct udp_flow_table t;
	struct udp_flow **f = calloc(N, sizeof(*f));
	struct udp_ft_touch *v = calloc(N, sizeof(*v));
	uint64_t now = 1000000000ULL;
	double t0;

	assert_non_null(f);
	assert_non_null(v);
	assert_int_equal(udp_ft_init(&t, 11), 0);
	srandom(26);
	for (int i = 0; i < N; i++)
		f[i] = mkflow(&t, MMP_UDP_FMT_V2, ep4(0xC6336402, i), ep4(0xCB007100 + i % 200, 1024 + i / 200), now);
	t0 = cpu_seconds();
	for (int tick = 0; tick < TICKS; tick++) {
		for (int i = 0; i < N; i++)
			v[i] = (struct udp_ft_touch){ f[i], now + 1 + (uint64_t)random() % 1000000000ULL };
		udp_ft_touch_batch(&t, v, N);
		now += 1000000000ULL;
	}
	print_message("%d ticks of %d fast flows: %.3f s of CPU\n", TICKS, N, cpu_seconds() - t0);
	assert_true(cpu_seconds() - t0 < 2.0);
	assert_idle_sorted(&t, N);
	for (int i = 0; i < N; i++) {
		udp_ft_remove(&t, f[i]);
		free(f[i]);
	}
	udp_ft_free(&t);
	free(f);
	free(v);
}

/* 20,000 flows: the indexes grow and every flow stays findable. */
static void test_growth(void **state)
{
	enum { N = 20000 };
	struct udp_flow_table t;
	struct udp_flow **f = calloc(N, sizeof(*f));

	assert_non_null(f);
	assert_int_equal(udp_ft_init(&t, 99), 0);
	for (int i = 0; i < N; i++)
		f[i] = mkflow(&t, MMP_UDP_FMT_V2, ep4(0xC6336402, i), ep4(0xCB007100 + i % 200, 1024 + i / 200), i);
	assert_true(t.nbuckets >= N);
	for (int i = 0; i < N; i++) {
		struct udp_ep lb = ep4(0xC6336402, i), c = ep4(0xCB007100 + i % 200, 1024 + i / 200);

		assert_ptr_equal(udp_ft_by_lb(&t, &lb), f[i]);
		assert_ptr_equal(udp_ft_by_client(&t, &c), f[i]);
	}
	for (int i = 0; i < N; i++) {
		assert_ptr_equal(udp_ft_oldest(&t), f[i]);
		udp_ft_remove(&t, f[i]);
		free(f[i]);
	}
	assert_int_equal(t.count, 0);
	udp_ft_free(&t);
	free(f);
}

static void test_ratelimit(void **state)
{
	struct mmp_ratelimit rl = { 0 };
	uint64_t t0 = 5 * MMP_RL_WINDOW_NS;

	for (int i = 0; i < MMP_RL_BURST; i++)
		assert_true(mmp_rl_allow(&rl, t0 + i));
	for (int i = 0; i < 1000; i++)
		assert_false(mmp_rl_allow(&rl, t0 + 100 + i));
	/* The summary waits for the window to end, then comes once. */
	assert_int_equal(mmp_rl_take_suppressed(&rl, t0 + MMP_RL_WINDOW_NS - 1), 0);
	assert_false(mmp_rl_allow(&rl, t0 + MMP_RL_WINDOW_NS + 1)); /* summary not taken yet */
	assert_int_equal(mmp_rl_take_suppressed(&rl, t0 + MMP_RL_WINDOW_NS + 2), 1001);
	assert_int_equal(mmp_rl_take_suppressed(&rl, t0 + MMP_RL_WINDOW_NS + 3), 0);
	/* A fresh window prints again. */
	assert_true(mmp_rl_allow(&rl, t0 + MMP_RL_WINDOW_NS + 4));
	/* A quiet reason never produces a summary. */
	rl = (struct mmp_ratelimit){ 0 };
	assert_true(mmp_rl_allow(&rl, t0));
	assert_int_equal(mmp_rl_take_suppressed(&rl, t0 + 10 * MMP_RL_WINDOW_NS), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ep_canonical),
		cmocka_unit_test(test_indexes),
		cmocka_unit_test(test_idle_order),
		cmocka_unit_test(test_touch_at),
		cmocka_unit_test(test_touch_batch),
		cmocka_unit_test(test_touch_batch_scale),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_ratelimit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
