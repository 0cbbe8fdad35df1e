/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An instance's identity (docs/DESIGN.md §6a): its pin directory, derived by
 * default from the protocol and the listen address, and the TC filter
 * identity (handle, priority) derived from that directory. Two instances
 * share state exactly when these are equal: cli/ refuses that
 * through lib/netns_lock.c and the pin directory's flock.
 */
#ifndef MMP_INSTANCE_H
#define MMP_INSTANCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include "mmp_maps.h"

/* Every default pin directory is one level below this (legacy: pins in it directly). */
#define MMP_PIN_ROOT MMP_PIN_DIR_DEFAULT

struct mmp_tc_id {
	uint32_t handle;
	uint32_t prio;
};

/*
 * "/sys/fs/bpf/mmproxy-bpf/tcp-0_0_0_0-8443", "…/udp-[::]-53" into buf
 * (protocol: "tcp", "udp" or "tcpudp", lib/protocols.h); a port range
 * (port_hi, host order, above listen's port) adds "-HI".
 */
void mmp_instance_pin_dir(const char *protocol, const struct sockaddr_storage *listen, uint16_t port_hi, char *buf,
			  size_t len);

/* The TC filters of the tc engine (IPPROTO_TCP) or the UDP fast path (IPPROTO_UDP) for pin_dir. */
struct mmp_tc_id mmp_instance_tc_id(int protocol, const char *pin_dir);
/* The reply-steering filter at the upstream's interface for pin_dir (docs/DESIGN.md §14). */
struct mmp_tc_id mmp_instance_steer_id(const char *pin_dir);

#endif
