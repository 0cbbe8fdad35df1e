// SPDX-License-Identifier: GPL-2.0
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <netinet/in.h>
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

void mmp_instance_pin_dir(int protocol, const struct sockaddr_storage *listen, char *buf, size_t len)
{
	char addr[MMP_ADDRSTRLEN];
	char *colon;

	/*
	 * "0.0.0.0:8443" / "[::]:8443" -> "0_0_0_0-8443" / "[::]-8443": the port
	 * after the last colon; dots become '_' because bpffs refuses names with
	 * a dot (EPERM: reserved by the kernel for future use).
	 */
	mmp_fmt_addr((const struct sockaddr *)listen, addr);
	colon = strrchr(addr, ':');
	if (colon)
		*colon = '-';
	for (char *c = addr; *c; c++)
		if (*c == '.')
			*c = '_';
	snprintf(buf, len, "%s/%s-%s", MMP_PIN_ROOT, protocol == IPPROTO_UDP ? "udp" : "tcp", addr);
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
