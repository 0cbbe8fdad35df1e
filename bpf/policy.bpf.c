// SPDX-License-Identifier: GPL-2.0
/*
 * Source policy maps: the allowed load-balancer subnets, as LPM tries.
 * The control plane fills them from the -a file and checks each accepted
 * connection against them; the XDP filter (a later engine) reads the same maps.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mmp_maps.h"

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC); /* required for LPM tries */
	__uint(max_entries, MMP_ALLOW_MAX_ENTRIES);
	__type(key, struct mmp_allow4_key);
	__type(value, struct mmp_allow_value);
} mmp_allow4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, MMP_ALLOW_MAX_ENTRIES);
	__type(key, struct mmp_allow6_key);
	__type(value, struct mmp_allow_value);
} mmp_allow6 SEC(".maps");

char LICENSE[] SEC("license") = "GPL";
