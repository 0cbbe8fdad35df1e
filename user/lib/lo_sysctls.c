// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include "lib/lo_sysctls.h"
#include "lib/lo_sysctls_saved.h"

/*
 * lo sysctls that let lo take IPv4 packets to 127.0.0.1 from foreign sources:
 * the in-kernel UDP path needs them for a remote load balancer (docs/DESIGN.md §4),
 * and the tc engine to deliver ICMP errors to the upstream's address.
 */
const char *const mmp_lo_sysctls[MMP_LO_SYSCTLS] = {
	"/proc/sys/net/ipv4/conf/lo/route_localnet",
	"/proc/sys/net/ipv4/conf/lo/accept_local",
};

bool mmp_lo_sysctls_ok(void)
{
	for (size_t i = 0; i < MMP_LO_SYSCTLS; i++) {
		char v = '0';
		FILE *f = fopen(mmp_lo_sysctls[i], "re");

		if (f) {
			v = (char)fgetc(f);
			fclose(f);
		}
		if (v != '1')
			return false;
	}
	return true;
}


static bool is_on(const char *path)
{
	char v = '0';
	FILE *f = fopen(path, "re");

	if (f) {
		v = (char)fgetc(f);
		fclose(f);
	}
	return v == '1';
}

int mmp_lo_sysctls_enable(void)
{
	bool recorded, wrote = false;
	int err = 0, saved = mmp_lo_sysctls_save(&recorded); /* for cleanup to put them back */

	for (size_t i = 0; i < MMP_LO_SYSCTLS; i++) {
		FILE *f;

		if (is_on(mmp_lo_sysctls[i]))
			continue;
		f = fopen(mmp_lo_sysctls[i], "we");
		if (!f) {
			err = -errno;
			break;
		}
		/* The write reaches the kernel at fclose; its error is the one that counts. */
		fputs("1\n", f);
		if (fclose(f)) {
			err = -errno;
			break;
		}
		wrote = true;
	}
	mmp_lo_sysctls_unsave(saved, recorded, wrote);
	return err ? err : wrote;
}
