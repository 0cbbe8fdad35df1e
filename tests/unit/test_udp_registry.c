// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for the cross-thread client registry (user/udp/udp_registry.c):
 * which thread holds a client, and the move rule of user/udp/udp_flow_policy.h
 * across threads: another load-balancer address takes a client only when
 * moves are allowed (-a); another port of the same address always does.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include "udp/udp_registry.h"

static struct udp_ep ep4(const char *ip, uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
	struct udp_ep ep;

	assert_int_equal(inet_pton(AF_INET, ip, &sin.sin_addr), 1);
	udp_ep_from_sa(&ep, (struct sockaddr *)&sin);
	return ep;
}

static void test_move_rule(void **state)
{
	struct udp_registry *r;
	struct udp_ep client = ep4("203.0.113.7", 5555), lb_a = ep4("198.51.100.2", 40000);
	struct udp_ep lb_a2 = ep4("198.51.100.2", 40001), lb_b = ep4("198.51.100.3", 40000), held;
	struct udp_ep taken[4];

	assert_int_equal(udp_registry_open(2, 42, &r), 0);
	/* A fresh client is nobody's: -1, never the refusal. */
	{
		struct udp_ep other = ep4("203.0.113.8", 1);

		assert_int_equal(udp_registry_claim(r, &other, &lb_b, false, 1, &held), -1);
	}
	assert_int_equal(udp_registry_claim(r, &client, &lb_a, false, 0, &held), -1);
	assert_true(udp_registry_holds(r, &client, 0));

	/* Another address, moves not allowed: refused, nothing changes, nobody is told. */
	assert_int_equal(udp_registry_claim(r, &client, &lb_b, false, 1, &held), -EACCES);
	assert_int_not_equal(-EACCES, -1); /* -1 means "nobody held it" */
	assert_memory_equal(&held, &lb_a, sizeof(held));
	assert_true(udp_registry_holds(r, &client, 0));
	assert_int_equal(udp_registry_take(r, 0, taken, 4), 0);

	/* Another port of the same address: thread 1 takes it, thread 0 is told. */
	assert_int_equal(udp_registry_claim(r, &client, &lb_a2, false, 1, &held), 0);
	assert_memory_equal(&held, &lb_a, sizeof(held));
	assert_true(udp_registry_holds(r, &client, 1));
	assert_int_equal(udp_registry_take(r, 0, taken, 4), 1);

	/* Moves allowed (-a): another address takes it back to thread 0. */
	assert_int_equal(udp_registry_claim(r, &client, &lb_b, true, 0, &held), 1);
	assert_memory_equal(&held, &lb_a2, sizeof(held));
	assert_true(udp_registry_holds(r, &client, 0));

	/* The holder's own claim never needs the rule. */
	assert_int_equal(udp_registry_claim(r, &client, &lb_a, false, 0, &held), -1);
	udp_registry_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_move_rule),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
