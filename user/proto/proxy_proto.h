/* SPDX-License-Identifier: GPL-2.0 */
/*
 * PROXY protocol (v1 and v2) parser: pure functions over a byte buffer, no I/O.
 * Spec: HAProxy doc/proxy-protocol.txt.
 */
#ifndef MMP_PROXY_PROTO_H
#define MMP_PROXY_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* The longest header we accept: a v2 header with its full 16-bit length. */
#define PP_MAX_HEADER_LEN (16 + 65535)
#define PP_V1_MAX_LEN 107

enum pp_status {
	PP_INVALID = -1, /* not a valid PROXY header; *reason says why */
	PP_NEED_MORE = 0, /* a valid prefix so far: read more bytes and call again */
	PP_OK = 1, /* complete header parsed; hdr->header_len bytes to consume */
};

enum pp_command {
	PP_CMD_LOCAL = 0, /* v2 LOCAL, or v1 UNKNOWN: no addresses to use */
	PP_CMD_PROXY = 1,
};

enum pp_family {
	PP_FAM_UNSPEC = 0,
	PP_FAM_INET = 1,
	PP_FAM_INET6 = 2,
	PP_FAM_UNIX = 3,
};

enum pp_transport {
	PP_TRANSPORT_UNSPEC = 0,
	PP_TRANSPORT_STREAM = 1,
	PP_TRANSPORT_DGRAM = 2,
};

/* TLV types from the spec that we use. */
#define PP2_TYPE_ALPN 0x01
#define PP2_TYPE_AUTHORITY 0x02
#define PP2_TYPE_CRC32C 0x03
#define PP2_TYPE_NOOP 0x04
#define PP2_TYPE_UNIQUE_ID 0x05
#define PP2_TYPE_SSL 0x20
#define PP2_TYPE_NETNS 0x30

struct pp_header {
	int version; /* 1 or 2 */
	enum pp_command command;
	enum pp_family family;
	enum pp_transport transport;
	/*
	 * Source (the client) and destination (what the client connected to).
	 * Filled as sockaddr_in / sockaddr_in6 for INET / INET6 with PROXY;
	 * ss_family is AF_UNSPEC otherwise.
	 */
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	size_t header_len; /* exact number of bytes the header occupies */
	/* Optional TLVs: pointers into the caller's buffer, NULL when absent. */
	const uint8_t *authority;
	size_t authority_len;
	const uint8_t *unique_id;
	size_t unique_id_len;
	bool crc32c_present; /* true when a CRC32C TLV was present and matched */
};

/*
 * Parse a PROXY header (v1 or v2) at the start of buf[0..len).
 * Returns PP_OK with *hdr filled, PP_NEED_MORE when buf is a valid but
 * incomplete prefix, or PP_INVALID with *reason set to a static string.
 * PP_INVALID is returned as soon as the prefix can no longer be a header, so
 * garbage is rejected without waiting for more bytes.
 * hdr and reason may not be NULL. Never reads past buf[len-1].
 */
enum pp_status pp_parse(const uint8_t *buf, size_t len, struct pp_header *hdr, const char **reason);

/* Same, restricted to one version (1 or 2). Used by UDP, which is v2 only. */
enum pp_status pp_parse_v1(const uint8_t *buf, size_t len, struct pp_header *hdr, const char **reason);
enum pp_status pp_parse_v2(const uint8_t *buf, size_t len, struct pp_header *hdr, const char **reason);

/*
 * How many bytes the header at buf[0..len) occupies in all, once that is
 * known: a v2 header's 16-byte fixed part tells it. 0 while it is not known
 * (fewer than 16 bytes, or v1, whose 107 bytes at most need no such help).
 * A caller waiting for a trickled header uses it to wait for the whole of it
 * (SO_RCVLOWAT) instead of parsing it again from its start at every segment.
 */
size_t pp_bytes_needed(const uint8_t *buf, size_t len);

/* CRC32C (Castagnoli), as used by the PP2_TYPE_CRC32C TLV. */
uint32_t pp_crc32c(uint32_t crc, const uint8_t *buf, size_t len);

#endif
