// SPDX-License-Identifier: GPL-2.0
/* Is a second PROXY header stacked right after the first? (pp_stacked.h) */
#include <string.h>

#include "proto/pp_stacked.h"

static const uint8_t v2_sig[12] = {
	0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
};
static const char v1_sig[] = "PROXY ";

/* 1: rest holds all of sig; 0: a strict prefix of it; -1: not it. */
static int sig_state(const uint8_t *rest, size_t rlen, const void *sig, size_t sig_len)
{
	if (memcmp(rest, sig, rlen < sig_len ? rlen : sig_len))
		return -1;
	return rlen >= sig_len ? 1 : 0;
}

enum pp_stack pp_stacked(const uint8_t *buf, size_t len, size_t first_len, bool wait_for_signature,
			 struct pp_header *inner, const char **reason)
{
	const uint8_t *rest = buf + first_len;
	size_t rlen = len - first_len;
	int v2, v1;

	if (first_len >= len)
		return PP_STACK_NONE;
	v2 = sig_state(rest, rlen, v2_sig, sizeof(v2_sig));
	v1 = sig_state(rest, rlen, v1_sig, strlen(v1_sig));
	if (v2 < 0 && v1 < 0)
		return PP_STACK_NONE;
	if (v2 < 1 && v1 < 1)
		return wait_for_signature ? PP_STACK_MORE : PP_STACK_NONE;
	switch (pp_parse(rest, rlen, inner, reason)) {
	case PP_OK:
		return PP_STACK_FOUND;
	case PP_NEED_MORE:
		return PP_STACK_MORE;
	case PP_INVALID:
		break;
	}
	return PP_STACK_BAD;
}
