/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the TC programs read from the kernel's own sk_buff, which
 * struct __sk_buff does not show. Include after vmlinux.h.
 */
#ifndef MMP_BPF_SKB_KERN_H
#define MMP_BPF_SKB_KERN_H

#include <bpf/bpf_core_read.h>
#include "common.h"

/* A kfunc the verifier turns into a plain register move: free to call. */
extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

/*
 * CHECKSUM_PARTIAL: sent on this host (lo, veth). The L4 checksum field then
 * holds only the pseudo header's sum, and the device or the stack computes
 * the rest on the way out.
 */
static __always_inline bool mmp_csum_partial(struct __sk_buff *skb)
{
	struct sk_buff *k = bpf_cast_to_kern_ctx(skb);

	return BPF_CORE_READ_BITFIELD(k, ip_summed) == CHECKSUM_PARTIAL;
}

#endif
