// SPDX-License-Identifier: GPL-2.0
/* cmocka tests for the upstream errors' hints (user/lib/transparent.c): each names what fixes it. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <string.h>
#include "lib/transparent.h"

static void assert_hint(const char *what, int err, const char *want)
{
	const char *hint = mmp_upstream_hint(what, err);

	if (!strstr(hint, want))
		fail_msg("%s failing with %s: hint '%s' does not say %s", what, strerror(-err), hint, want);
}

/* Issue 28: a bind to a client port below 1024 fails with EACCES, which CAP_NET_BIND_SERVICE lifts. */
static void test_privilege_hints(void **state)
{
	assert_hint("bind", -EACCES, "CAP_NET_BIND_SERVICE");
	assert_hint("IP_TRANSPARENT", -EPERM, "CAP_NET_ADMIN");
	assert_hint("SO_MARK", -EPERM, "CAP_NET_ADMIN");
}

static void test_other_hints(void **state)
{
	assert_hint("bind", -EADDRINUSE, "already in use");
	assert_hint("connect", -ECONNREFUSED, "listening");
	assert_hint("SO_ERROR", -ETIMEDOUT, "setup-routing");
	assert_string_equal(mmp_upstream_hint("connect", -EINTR), "");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_privilege_hints),
		cmocka_unit_test(test_other_hints),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
