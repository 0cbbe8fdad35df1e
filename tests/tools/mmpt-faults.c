/* SPDX-License-Identifier: GPL-2.0 */
/*
 * mmpt-faults.so: an LD_PRELOAD shim that makes the proxy's socket() or
 * pipe2() fail with EMFILE, for tests/integration/t23-fd-faults.sh.
 *
 *   MMPT_FAULT_ARM=FILE          faults only while FILE exists (so start-up,
 *                                which opens its listeners and probes, runs clean)
 *   MMPT_FAULT_SOCKET_EVERY=K    every Kth TCP socket() (AF_INET/AF_INET6,
 *                                SOCK_STREAM) while armed fails
 *   MMPT_FAULT_PIPE2_EVERY=K     every Kth pipe2() while armed fails
 *
 * Each injected failure writes "mmpt-faults: socket|pipe2 EMFILE" to stderr,
 * so the test can count them against the proxy's own log lines.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/socket.h>

static atomic_ulong socket_calls, pipe2_calls;

static unsigned long every(const char *name)
{
	const char *v = getenv(name);

	return v ? strtoul(v, NULL, 10) : 0;
}

/* True when this armed call is the Kth since the last failure. */
static int inject(const char *var, atomic_ulong *calls, const char *what)
{
	const char *arm = getenv("MMPT_FAULT_ARM");
	unsigned long k = every(var);

	if (!k || !arm || access(arm, F_OK))
		return 0;
	if ((atomic_fetch_add(calls, 1) + 1) % k)
		return 0;
	dprintf(2, "mmpt-faults: %s EMFILE\n", what);
	errno = EMFILE;
	return 1;
}

int socket(int domain, int type, int protocol)
{
	static int (*real)(int, int, int);

	if (!real)
		real = (int (*)(int, int, int))dlsym(RTLD_NEXT, "socket");
	if ((domain == AF_INET || domain == AF_INET6) && (type & 0xf) == SOCK_STREAM &&
	    inject("MMPT_FAULT_SOCKET_EVERY", &socket_calls, "socket"))
		return -1;
	return real(domain, type, protocol);
}

int pipe2(int fds[2], int flags)
{
	static int (*real)(int *, int);

	if (!real)
		real = (int (*)(int *, int))dlsym(RTLD_NEXT, "pipe2");
	if (inject("MMPT_FAULT_PIPE2_EVERY", &pipe2_calls, "pipe2"))
		return -1;
	return real(fds, flags);
}
