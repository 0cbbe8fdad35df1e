// SPDX-License-Identifier: GPL-2.0
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include "lib/instance.h"
#include "lib/sockaddr.h"

/*
 * Handles: "MM" for the tc engine, "MU" for the UDP fast path. The legacy
 * default directory keeps its fixed priorities, so an instance started by an
 * older version is still adopted and cleaned up.
 */
#define TCP_HANDLE 0x4d4d
#define TCP_PRIO_LEGACY 0x4d4d
#define TCP_PRIO_BASE 0x4e00 /* 0x4e00..0x5dff */
#define UDP_HANDLE 0x4d55
#define UDP_PRIO_LEGACY 0x4d40
#define UDP_PRIO_BASE 0x2d00 /* 0x2d00..0x3cff: ahead of every tc engine filter (bpf/udp.bpf.c passes the rest) */
#define PRIO_SPAN 0x1000
#define STEER_HANDLE 0x4d52
#define STEER_PRIO_BASE 0x1d00 /* 0x1d00..0x2cff: ahead of both, it only sets a mark and passes (docs/DESIGN.md §14) */

static bool same_inode(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_ino == sb.st_ino && sa.st_dev == sb.st_dev;
}

/*
 * Outside the host's network namespace (pid 1's), the same -l may serve in
 * each namespace while they share one bpffs (nsenter): "-netns-NAME" from
 * /run/netns, else "-netns-INODE", keeps their directories apart. Empty in
 * the host's namespace.
 */
static void netns_suffix(char *buf, size_t len)
{
	struct stat st, init;
	struct dirent *de;
	DIR *d;

	buf[0] = 0;
	/* pid 1's namespace unknown (not readable here): take ours as the host's. */
	if (stat("/proc/self/ns/net", &st) || stat("/proc/1/ns/net", &init) || st.st_ino == init.st_ino)
		return;
	snprintf(buf, len, "-netns-%lu", (unsigned long)st.st_ino);
	d = opendir("/run/netns");
	while (d && (de = readdir(d))) {
		char path[300];

		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		if (de->d_name[0] != '.' && same_inode(path, "/proc/self/ns/net")) {
			snprintf(buf, len, "-netns-%s", de->d_name);
			break;
		}
	}
	if (d)
		closedir(d);
}

void mmp_instance_pin_dir(const char *protocol, const struct sockaddr_storage *listen, uint16_t port_hi, char *buf,
			  size_t len)
{
	char addr[MMP_ADDRSTRLEN + 8], ns[300];
	char *colon;
	uint16_t port_lo = ntohs(listen->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)listen)->sin6_port
							       : ((const struct sockaddr_in *)listen)->sin_port);

	/*
	 * "0.0.0.0:8443" / "[::]:8443" -> "0_0_0_0-8443" / "[::]-8443": the port
	 * after the last colon; dots become '_' because bpffs refuses names with
	 * a dot (EPERM: reserved by the kernel for future use).
	 */
	mmp_fmt_addr((const struct sockaddr *)listen, addr);
	colon = strrchr(addr, ':');
	if (colon)
		*colon = '-';
	/* A range keeps its last port: "0_0_0_0-9000-9999", so disjoint ranges get their own directories. */
	if (port_hi != port_lo)
		snprintf(addr + strlen(addr), sizeof(addr) - strlen(addr), "-%u", port_hi);
	netns_suffix(ns, sizeof(ns));
	snprintf(buf, len, "%s/%s-%s%s", MMP_PIN_ROOT, protocol, addr, ns);
	for (char *c = buf + strlen(MMP_PIN_ROOT); *c; c++)
		if (*c == '.')
			*c = '_';
}

static uint32_t fnv1a(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h;
}

struct mmp_tc_id mmp_instance_tc_id(int protocol, const char *pin_dir)
{
	bool legacy = !strcmp(pin_dir, MMP_PIN_DIR_DEFAULT);

	/* The TCP formula is the one older versions used for --pin-dir: their filters are still found. */
	if (protocol == IPPROTO_UDP)
		return (struct mmp_tc_id){ UDP_HANDLE, legacy ? UDP_PRIO_LEGACY : UDP_PRIO_BASE + fnv1a(pin_dir) % PRIO_SPAN };
	return (struct mmp_tc_id){ TCP_HANDLE, legacy ? TCP_PRIO_LEGACY : TCP_PRIO_BASE + fnv1a(pin_dir) % PRIO_SPAN };
}

struct mmp_tc_id mmp_instance_steer_id(const char *pin_dir)
{
	return (struct mmp_tc_id){ STEER_HANDLE, STEER_PRIO_BASE + fnv1a(pin_dir) % PRIO_SPAN };
}
