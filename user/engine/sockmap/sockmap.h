/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The sockmap engine: both sockets of a connection go into a SOCKHASH whose
 * sk_skb stream verdict (bpf/sockmap.bpf.c) redirects every later byte to the
 * peer inside the kernel. Userspace only handles the hand-off, half-close,
 * resets, and forwarding the bytes the verdict held back over --max-queued.
 */
#ifndef MMP_SOCKMAP_H
#define MMP_SOCKMAP_H

#include "engine/engine.h"

extern const struct mmp_engine_ops mmp_sockmap_ops;

#endif
