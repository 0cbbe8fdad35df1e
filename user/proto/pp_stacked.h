/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Stacked PROXY headers: one load balancer behind another sends its own
 * header, then the bytes the first one sent, which start with another
 * header. Pure function over the bytes received so far (docs/DESIGN.md §12).
 */
#ifndef MMP_PP_STACKED_H
#define MMP_PP_STACKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proxy_proto.h"

enum pp_stack {
	PP_STACK_NONE, /* what follows the first header is payload (or nothing yet) */
	PP_STACK_MORE, /* it starts like a header: more bytes decide */
	PP_STACK_FOUND, /* a complete second header: *inner */
	PP_STACK_BAD, /* a header signature, then an invalid header: *reason */
};

/*
 * Look at buf[first_len..len), just past a complete first header.
 * wait_for_signature: answer PP_STACK_MORE while those bytes are a strict
 * prefix of a signature (--strip-stacked waits to know); otherwise only a
 * whole signature counts, so that payload starting with "\r\n" is never held
 * back waiting for bytes the client may not send.
 * Returns one of enum pp_stack; *inner is filled for PP_STACK_FOUND, *reason
 * for PP_STACK_BAD.
 */
enum pp_stack pp_stacked(const uint8_t *buf, size_t len, size_t first_len, bool wait_for_signature,
			 struct pp_header *inner, const char **reason);

#endif
