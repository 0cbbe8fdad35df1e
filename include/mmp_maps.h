/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Map names, keys and values shared by the BPF programs (bpf/) and the
 * control plane (user/). Include after vmlinux.h (BPF) or <linux/types.h>.
 */
#ifndef MMP_MAPS_H
#define MMP_MAPS_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Default bpffs directory that holds every pinned map. */
#define MMP_PIN_DIR_DEFAULT "/sys/fs/bpf/mmproxy-bpf"

/* Allowed load-balancer source subnets (LPM tries). */
#define MMP_ALLOW4_MAP "mmp_allow4"
#define MMP_ALLOW6_MAP "mmp_allow6"
#define MMP_ALLOW_MAX_ENTRIES 65536

struct mmp_allow4_key {
	__u32 prefixlen; /* LPM tries key on prefix length first */
	__u8 addr[4];
};

struct mmp_allow6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/* What bpftool shows for each allowed subnet: where it came from. */
struct mmp_allow_value {
	__u32 line; /* line number in the allowed-subnets file */
};

#endif
