// SPDX-License-Identifier: GPL-2.0
/*
 * No program: the BTF-defined home of TCP mode's totals (include/mmp_tcp.h),
 * written by the control plane once a second and pinned, so that stats and
 * bpftool read them by name.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "mmp_tcp.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mmp_tcp_counters);
} mmp_tcp_cnt SEC(".maps");

char LICENSE[] SEC("license") = "GPL";
