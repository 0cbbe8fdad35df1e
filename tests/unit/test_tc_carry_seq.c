// SPDX-License-Identifier: GPL-2.0
/*
 * cmocka tests for where a carrier sends (user/engine/tc/tc_carry_seq.c):
 * the window and the resend's one segment, the receiver's SACK blocks, and
 * which bytes go out a second time (docs/DESIGN.md §3b, "Sending them").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include "engine/tc/tc_carry.h"

#define BASE 0xfffff000u /* the carry's first seq: offsets wrap past 2^32 */
#define MSS 1000u

/* A carry of len bytes, all sent, none acked, the window open over all of it. */
static struct mmp_tc_carry_dir carry(uint32_t len)
{
	struct mmp_tc_carry_dir cd = {
		.len = len, .base = BASE, .mss = MSS, .sent = len, .furthest = len, .edge = BASE + len,
	};

	return cd;
}

/* The receiver acks up to offset ack, holding [s, e) blocks beyond it. */
static void receiver_acks(struct mmp_tc_carry_dir *cd, uint32_t ack, int n, const uint32_t *blocks)
{
	struct mmp_tc_carry e = { .sack_n = { (uint32_t)n, 0 } };

	for (int i = 0; i < 2 * n; i++)
		e.sack[0][i] = BASE + blocks[i];
	if (ack > cd->acked)
		cd->acked = ack;
	if (cd->sent < cd->acked)
		cd->sent = cd->acked;
	mmp_tc_carry_note_sacked(cd, &e, 0);
}

/* A round as send_dir makes it: from cd->sent, segment by segment, stepped past held blocks. */
static uint32_t send_round(struct mmp_tc_carry_dir *cd, bool resend, uint32_t *again)
{
	uint32_t limit, n, first;
	bool probe;

	limit = mmp_tc_carry_send_limit(cd, resend, &probe);
	first = cd->sent;
	*again = 0;
	while ((n = mmp_tc_carry_next_segment(cd, limit)))
		*again += mmp_tc_carry_advance(cd, n);
	return first;
}

static void test_window_and_probe(void **state)
{
	struct mmp_tc_carry_dir cd = carry(10 * MSS);
	bool probe;

	cd.sent = 0;
	cd.edge = BASE + 4 * MSS + 10;
	assert_int_equal(mmp_tc_carry_send_limit(&cd, false, &probe), 4 * MSS + 10);
	assert_false(probe);
	cd.sent = 4 * MSS + 10;
	/* A resend: one segment from the ack, sent rewound to it. */
	cd.acked = MSS;
	assert_int_equal(mmp_tc_carry_send_limit(&cd, true, &probe), 2 * MSS);
	assert_int_equal(cd.sent, MSS);
	assert_false(probe);
	/* A window closed at the ack: a one-byte probe. */
	cd.edge = BASE + MSS;
	assert_int_equal(mmp_tc_carry_send_limit(&cd, true, &probe), MSS + 1);
	assert_true(probe);
}

static void test_sack_blocks(void **state)
{
	struct mmp_tc_carry_dir cd = carry(10 * MSS);
	/* One block below the ack (a D-SACK), one across it, one beyond the carry's end. */
	const uint32_t blocks[] = { 100, 200, 1500, 2500, 9500, 12000 };

	receiver_acks(&cd, 2000, 3, blocks);
	assert_int_equal(cd.sacked_n, 2);
	assert_int_equal(cd.sacked[0][0], 2000);
	assert_int_equal(cd.sacked[0][1], 2500);
	assert_int_equal(cd.sacked[1][0], 9500);
	assert_int_equal(cd.sacked[1][1], 10 * MSS);
	/* A round from 2000 steps over [2000, 2500), and stops short of [9500, ...). */
	cd.sent = 2000;
	assert_int_equal(mmp_tc_carry_next_segment(&cd, cd.len), MSS);
	assert_int_equal(cd.sent, 2500);
	cd.sent = 9000;
	assert_int_equal(mmp_tc_carry_next_segment(&cd, cd.len), 500);
	cd.sent = 9500;
	assert_int_equal(mmp_tc_carry_next_segment(&cd, cd.len), 0);
}

/* A resend: one segment from the ack; the acks it brings send the rest again, past what is held. */
static void test_resend_then_the_rest(void **state)
{
	struct mmp_tc_carry_dir cd = carry(10 * MSS);
	const uint32_t blocks[] = { 4 * MSS, 6 * MSS };
	uint32_t again;

	receiver_acks(&cd, 2 * MSS, 1, blocks);
	assert_int_equal(send_round(&cd, true, &again), 2 * MSS);
	assert_int_equal(cd.sent, 3 * MSS);
	assert_int_equal(again, MSS);
	receiver_acks(&cd, 3 * MSS, 1, blocks);
	assert_int_equal(send_round(&cd, false, &again), 3 * MSS);
	/* [3, 4) and [6, 10) MSS again: the block [4, 6) is not. */
	assert_int_equal(cd.sent, 10 * MSS);
	assert_int_equal(again, 5 * MSS);
}

/* What tc_carry_resent counts: bytes sent below the furthest ever sent, by a resend or the round after it. */
static void test_advance_counts_again(void **state)
{
	struct mmp_tc_carry_dir cd = carry(10 * MSS);

	cd.sent = cd.furthest = 0; /* nothing sent yet */
	assert_int_equal(mmp_tc_carry_advance(&cd, 4 * MSS), 0);
	assert_int_equal(cd.furthest, 4 * MSS);
	cd.sent = 3 * MSS;
	assert_int_equal(mmp_tc_carry_advance(&cd, 2 * MSS), MSS);
	assert_int_equal(cd.sent, 5 * MSS);
	assert_int_equal(cd.furthest, 5 * MSS);
	cd.sent = MSS;
	assert_int_equal(mmp_tc_carry_advance(&cd, MSS), MSS);
	assert_int_equal(cd.furthest, 5 * MSS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_and_probe),
		cmocka_unit_test(test_sack_blocks),
		cmocka_unit_test(test_resend_then_the_rest),
		cmocka_unit_test(test_advance_counts_again),
	};

	return cmocka_run_group_tests_name("tc_carry_seq", tests, NULL, NULL);
}
