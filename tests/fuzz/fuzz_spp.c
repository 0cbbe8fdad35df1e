// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target for the Cloudflare SPP codec (user/proto/udp_spp.c). Checks,
 * on an exact-size heap copy (ASan sees any read past len):
 *  - spp_decode succeeds exactly when the magic is there and len >= 38;
 *  - a decoded endpoint is AF_INET (IPv4-mapped on the wire) or AF_INET6;
 *  - encoding what was decoded gives back the 38 header bytes, bit for bit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include "proto/udp_spp.h"

#define CHECK(cond)                                                              \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz_spp: len %zu: %s\n", size, #cond); \
			abort();                                                 \
		}                                                                \
	} while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1), again[SPP_HEADER_LEN];
	struct spp_header h;
	bool magic;
	int err;

	if (!buf)
		abort();
	memcpy(buf, data, size);
	magic = spp_has_magic(buf, size);
	CHECK(magic == (size >= 2 && buf[0] == 0x56 && buf[1] == 0xEC));
	memset(&h, 0x5A, sizeof(h));
	err = spp_decode(buf, size, &h);
	if (!magic)
		CHECK(err == -EBADMSG);
	else if (size < SPP_HEADER_LEN)
		CHECK(err == -EMSGSIZE);
	else
		CHECK(err == 0);
	if (!err) {
		CHECK(h.client.ss_family == AF_INET || h.client.ss_family == AF_INET6);
		CHECK(h.proxy.ss_family == AF_INET || h.proxy.ss_family == AF_INET6);
		CHECK(spp_encode((struct sockaddr *)&h.client, (struct sockaddr *)&h.proxy, again) == 0);
		CHECK(!memcmp(again, buf, SPP_HEADER_LEN));
	}
	free(buf);
	return 0;
}
