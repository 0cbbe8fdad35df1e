// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the UDP datagram classifier (user/udp/udp_classify.c),
 * with the PROXY v2 and SPP parsers under it, in every --udp-header mode,
 * with and without a v2 flow on the sender. On an exact-size heap copy:
 *  - the kind is one of enum udp_kind; a drop names a drop_* counter and a reason;
 *  - a header kind's hdr_len is within the datagram (38 for SPP); payload has none;
 *  - a v2 or SPP client is IPv4 (mapped forms turned into it) or IPv6, and
 *    usable (udp_client_check returns 0);
 *  - "every" and "spp" never take a datagram as payload; SPP only in spp/auto.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "udp/udp_classify.h"
#include "proto/udp_spp.h"

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "fuzz_udp_classify: mode %d len %zu: %s\n", mode, size, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

static const enum mmp_udp_header modes[] = {
	MMP_UDP_HDR_AUTO, MMP_UDP_HDR_EVERY, MMP_UDP_HDR_FIRST, MMP_UDP_HDR_SPP,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1);

	if (!buf)
		abort();
	memcpy(buf, data, size);
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		for (int flow = 0; flow < 2; flow++) {
			enum mmp_udp_header mode = modes[m];
			struct udp_dgram_info info;
			const char *why;

			udp_classify(mode, buf, size, flow, &info);
			CHECK(info.kind >= UDP_K_V2 && info.kind <= UDP_K_DROP);
			switch (info.kind) {
			case UDP_K_DROP:
				CHECK(info.why != NULL);
				CHECK(info.drop >= MMP_UDP_CNT_drop_not_allowed && info.drop <= MMP_UDP_CNT_drop_reply_send);
				break;
			case UDP_K_PAYLOAD:
				CHECK(info.hdr_len == 0);
				CHECK(mode == MMP_UDP_HDR_AUTO || mode == MMP_UDP_HDR_FIRST);
				break;
			case UDP_K_SPP:
				CHECK(mode == MMP_UDP_HDR_SPP || (mode == MMP_UDP_HDR_AUTO && !flow));
				CHECK(info.hdr_len == SPP_HEADER_LEN && info.hdr_len <= size);
				/* fall through */
			case UDP_K_V2:
				CHECK(info.hdr_len >= 16 || info.kind == UDP_K_SPP);
				CHECK(info.hdr_len <= size);
				CHECK(info.client.ss_family == AF_INET || info.client.ss_family == AF_INET6);
				CHECK(udp_client_check((const struct sockaddr *)&info.client, &why) == 0);
				if (info.client.ss_family == AF_INET6)
					CHECK(!IN6_IS_ADDR_V4MAPPED(&((struct sockaddr_in6 *)&info.client)->sin6_addr));
				break;
			case UDP_K_LOCAL:
				CHECK(info.hdr_len >= 16 && info.hdr_len <= size);
				CHECK(mode != MMP_UDP_HDR_SPP);
				break;
			}
		}
	}
	free(buf);
	return 0;
}
