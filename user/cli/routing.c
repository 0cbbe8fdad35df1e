// SPDX-License-Identifier: GPL-2.0
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include "lib/log.h"
#include "cli/routing.h"
#include "lib/lo_sysctls.h"
#include "lib/lo_sysctls_saved.h"
#include "lib/sockaddr.h"
#include "lib/transparent.h"
#include <linux/types.h>
#include "mmp_steer.h"

struct family_route {
	int family;
	const char *ipflag; /* "-4" / "-6" */
	const char *from; /* the loopback source of the upstream's replies */
	const char *local; /* everything is local in our table */
};

static const struct family_route routes[] = {
	{ AF_INET, "-4", "127.0.0.1/8", "0.0.0.0/0" },
	{ AF_INET6, "-6", "::1/128", "::/0" },
};

/*
 * Run `ip ARGS...`, capturing up to outlen-1 bytes of stdout into out (may be
 * NULL). Returns the exit status (0 = success), or a negative errno.
 */
static int run_ip(const char *const args[], char *out, size_t outlen)
{
	const char *argv[16] = { "ip" };
	int pfd[2], status, n = 1;
	size_t used = 0;
	pid_t pid;

	for (; args[n - 1] && n < 15; n++)
		argv[n] = args[n - 1];
	argv[n] = NULL;
	if (pipe(pfd))
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (pid == 0) {
		dup2(pfd[1], STDOUT_FILENO);
		close(pfd[0]);
		close(pfd[1]);
		execvp("ip", (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		char scratch[256];
		char *dst = out && used + 1 < outlen ? out + used : scratch;
		size_t room = out && used + 1 < outlen ? outlen - 1 - used : sizeof(scratch);
		ssize_t r = read(pfd[0], dst, room);

		if (r <= 0)
			break;
		if (dst != scratch)
			used += r;
	}
	if (out && outlen)
		out[used] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
		return -ENOENT;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -EINTR;
}

static bool rule_present(const struct family_route *r, const char *table)
{
	const char *args[] = { r->ipflag, "rule", "list", "from", r->from, "iif", "lo", "table", table, NULL };
	char out[512];

	return run_ip(args, out, sizeof(out)) == 0 && out[0];
}

/* The marks of replies from an upstream beyond loopback, as ip rule spells them (docs/DESIGN.md §14). */
static const char *steer_mark(void)
{
	static char m[32];

	snprintf(m, sizeof(m), "0x%x/0x%x", MMP_STEER_RULE_MARK, MMP_STEER_RULE_MASK);
	return m;
}

static bool fwmark_rule_present(const struct family_route *r, const char *table)
{
	const char *args[] = { r->ipflag, "rule", "list", "fwmark", steer_mark(), "table", table, NULL };
	char out[512];

	return run_ip(args, out, sizeof(out)) == 0 && out[0];
}

/* Steered replies (fwmark) are local too: one rule a family, to the same table (§14). */
static int setup_fwmark(const struct family_route *r, const char *table)
{
	const char *rule[] = { r->ipflag, "rule", "add", "fwmark", steer_mark(), "lookup", table, NULL };

	if (fwmark_rule_present(r, table)) {
		printf("ok: ip %s rule fwmark %s lookup %s\n", r->ipflag, steer_mark(), table);
		return 0;
	}
	if (run_ip(rule, NULL, 0)) {
		pr_err("failed: ip %s rule add fwmark %s lookup %s (are you root? is IPv6 enabled?)", r->ipflag,
		       steer_mark(), table);
		return -EIO;
	}
	printf("added: ip %s rule add fwmark %s lookup %s\n", r->ipflag, steer_mark(), table);
	return 0;
}

static int setup_family(const struct family_route *r, const char *table)
{
	const char *rule[] = { r->ipflag, "rule", "add", "from", r->from, "iif", "lo", "table", table, NULL };
	const char *route[] = { r->ipflag, "route", "replace", "local", r->local, "dev", "lo", "table", table, NULL };
	int ret;

	if (!rule_present(r, table)) {
		ret = run_ip(rule, NULL, 0);
		if (ret) {
			pr_err("failed: ip %s rule add from %s iif lo table %s (%s)", r->ipflag, r->from, table,
			       ret == -ENOENT ? "the ip command is missing: apt-get install iproute2"
					      : "are you root? is IPv6 enabled?");
			return -EIO;
		}
		printf("added: ip %s rule add from %s iif lo table %s\n", r->ipflag, r->from, table);
	} else {
		printf("ok: ip %s rule from %s iif lo table %s\n", r->ipflag, r->from, table);
	}
	ret = run_ip(route, NULL, 0);
	if (ret) {
		pr_err("failed: ip %s route replace local %s dev lo table %s", r->ipflag, r->local, table);
		return -EIO;
	}
	printf("ok: ip %s route local %s dev lo table %s\n", r->ipflag, r->local, table);
	return setup_fwmark(r, table);
}

static void set_lo_sysctls(void)
{
	bool recorded, wrote = false;
	int saved = mmp_lo_sysctls_save(&recorded); /* what cleanup-routing puts back */

	for (size_t i = 0; i < MMP_LO_SYSCTLS; i++) {
		FILE *f = fopen(mmp_lo_sysctls[i], "we");

		if (f && fputs("1\n", f) >= 0 && fclose(f) == 0) {
			printf("ok: %s = 1\n", mmp_lo_sysctls[i]);
			wrote = true;
		} else {
			pr_err("failed to set %s (the in-kernel UDP path for remote load balancers needs it)",
			       mmp_lo_sysctls[i]);
		}
	}
	mmp_lo_sysctls_unsave(saved, recorded, wrote);
}

int mmp_routing_setup(int table)
{
	char t[16];
	int err = 0;

	set_lo_sysctls();
	snprintf(t, sizeof(t), "%d", table);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		int ret = setup_family(&routes[i], t);

		if (ret && !err)
			err = ret;
	}
	return err;
}

int mmp_routing_cleanup(int table)
{
	char t[16];

	snprintf(t, sizeof(t), "%d", table);
	for (size_t i = 0; i < sizeof(routes) / sizeof(routes[0]); i++) {
		const struct family_route *r = &routes[i];
		const char *rule[] = { r->ipflag, "rule", "del", "from", r->from, "iif", "lo", "table", t, NULL };
		const char *route[] = { r->ipflag, "route", "del", "local", r->local, "dev", "lo", "table", t, NULL };
		const char *fwrule[] = { r->ipflag, "rule", "del", "fwmark", steer_mark(), "lookup", t, NULL };
		int removed = 0, fwremoved = 0;

		/* The rule may have been added more than once by hand. */
		while (rule_present(r, t) && run_ip(rule, NULL, 0) == 0 && removed < 64)
			removed++;
		while (fwmark_rule_present(r, t) && run_ip(fwrule, NULL, 0) == 0 && fwremoved < 64)
			fwremoved++;
		printf("removed: ip %s rule fwmark %s lookup %s (%d)\n", r->ipflag, steer_mark(), t, fwremoved);
		run_ip(route, NULL, 0); /* absent is fine: idempotent */
		printf("removed: ip %s rule from %s iif lo table %s (%d) and its local route\n", r->ipflag, r->from,
		       t, removed);
	}
	mmp_lo_sysctls_restore();
	return 0;
}

void mmp_routing_print_fix(int family, int table)
{
	const struct family_route *r = family == AF_INET6 ? &routes[1] : &routes[0];

	printf("    fix: mmproxy-bpf setup-routing --table %d\n", table);
	printf("     or: ip %s rule add from %s iif lo table %d\n", r->ipflag, r->from, table);
	printf("         ip %s route add local %s dev lo table %d\n", r->ipflag, r->local, table);
	printf("         ip %s rule add fwmark %s lookup %d   (an upstream beyond loopback, docs/DESIGN.md §14)\n",
	       r->ipflag, steer_mark(), table);
}

static int loopback_listener(int family, struct sockaddr_storage *addr)
{
	socklen_t len = sizeof(*addr);
	int fd;

	memset(addr, 0, sizeof(*addr));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (void *)addr;

		sin->sin_family = AF_INET;
		sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	} else {
		struct sockaddr_in6 *sin6 = (void *)addr;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_addr = in6addr_loopback;
	}
	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)addr, mmp_sockaddr_len((struct sockaddr *)addr)) || listen(fd, 4) ||
	    getsockname(fd, (struct sockaddr *)addr, &len)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

void mmp_routing_probe_source(int family, struct sockaddr_storage *src)
{
	unsigned int r = (unsigned int)time(NULL) ^ (unsigned int)getpid();
	in_port_t port = htons(40000 + r % 20000);

	memset(src, 0, sizeof(*src));
	if (family == AF_INET) {
		struct sockaddr_in *sin = (void *)src;

		sin->sin_family = AF_INET;
		sin->sin_port = port;
		inet_pton(AF_INET, "192.0.2.254", &sin->sin_addr);
	} else {
		struct sockaddr_in6 *sin6 = (void *)src;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = port;
		inet_pton(AF_INET6, "2001:db8:ffff::254", &sin6->sin6_addr);
	}
}

int mmp_routing_probe(int family, int timeout_ms, const char **what)
{
	struct sockaddr_storage target, src;
	struct pollfd pfd = { .events = POLLOUT };
	int lfd, cfd, err = 0;
	socklen_t len = sizeof(err);

	*what = "loopback listener";
	lfd = loopback_listener(family, &target);
	if (lfd < 0)
		return lfd;
	mmp_routing_probe_source(family, &src);
	cfd = mmp_upstream_connect((struct sockaddr *)&src, (struct sockaddr *)&target, 0, 0, what);
	if (cfd < 0) {
		close(lfd);
		return cfd;
	}
	pfd.fd = cfd;
	*what = "spoofed connect";
	if (poll(&pfd, 1, timeout_ms) == 0)
		err = ETIMEDOUT; /* SYN-ACK never came back: replies are routed away */
	else if (getsockopt(cfd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	close(cfd);
	close(lfd);
	return -err;
}

bool mmp_routing_fwmark_present(int family, int table)
{
	char t[16];

	snprintf(t, sizeof(t), "%d", table);
	return fwmark_rule_present(family == AF_INET6 ? &routes[1] : &routes[0], t);
}

int mmp_routing_src_for(const struct sockaddr_storage *dst, char *out, size_t len)
{
	char addr[INET6_ADDRSTRLEN], buf[512], src[64], *p;
	const char *args[] = { dst->ss_family == AF_INET6 ? "-6" : "-4", "route", "get", addr, NULL };
	const void *a = dst->ss_family == AF_INET6 ? (const void *)&((const struct sockaddr_in6 *)dst)->sin6_addr
						   : (const void *)&((const struct sockaddr_in *)dst)->sin_addr;

	if (!inet_ntop(dst->ss_family, a, addr, sizeof(addr)) || run_ip(args, buf, sizeof(buf)))
		return -ENOENT;
	p = strstr(buf, " src ");
	if (!p || sscanf(p + 5, "%63s", src) != 1)
		return -ENOENT;
	snprintf(out, len, "%s", src);
	return 0;
}
