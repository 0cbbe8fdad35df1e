/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the BPF programs (tc.bpf.c, udp.bpf.c) and their BPF_PROG_TEST_RUN
 * unit tests share: the TC verdicts, the wire constants that are #defines in
 * the UAPI headers (so not in vmlinux.h), and the Internet checksum fold.
 * Kept free of vmlinux.h so that userspace tests can include it too.
 */
#ifndef MMP_BPF_COMMON_H
#define MMP_BPF_COMMON_H

/* TC verdicts (linux/pkt_cls.h). UNSPEC: not ours, the next filter on the hook decides. */
#define TC_ACT_UNSPEC (-1)
#define TC_ACT_OK 0
#define TC_ACT_SHOT 2
#define TC_ACT_REDIRECT 7

#define ETH_HLEN 14
#define ETH_P_IP 0x0800
#define ETH_P_IPV6 0x86DD
#define IP_MF 0x2000 /* more fragments */
#define IP_OFFSET 0x1FFF /* fragment offset */
#define IPPROTO_ICMPV6_NR 58 /* IPPROTO_ICMPV6 is a #define in linux/in6.h */
#define CHECKSUM_PARTIAL 3 /* skb->ip_summed */

/* Fold a 32-bit one's-complement sum (as bpf_csum_diff returns it) into a 16-bit checksum field. */
static inline unsigned short mmp_csum_fold(long long sum)
{
	unsigned int s = (unsigned int)sum;

	s = (s & 0xFFFF) + (s >> 16);
	s = (s & 0xFFFF) + (s >> 16);
	return (unsigned short)~s;
}

#endif
