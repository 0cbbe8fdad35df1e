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
#define PP2_SUBTYPE_SSL_CN 0x22
#define PP2_TYPE_NETNS 0x30
/* Cloud load balancers' own TLVs, in the spec's custom range 0xE0..0xEF. */
#define PP2_TYPE_GCP 0xE0 /* Private Service Connect: 8-byte pscConnectionId, big-endian */
#define PP2_TYPE_AWS 0xEA /* NLB/PrivateLink: subtype byte, then the value */
#define PP2_SUBTYPE_AWS_VPCE_ID 0x01 /* the VPC endpoint ID, ASCII */
#define PP2_TYPE_AZURE 0xEE /* Private Link Service: subtype byte, then the value */
#define PP2_SUBTYPE_AZURE_LINKID 0x01 /* the LinkID, a little-endian uint32 */

/* A byte string inside the caller's buffer; ptr is NULL when absent. */
struct pp_bytes {
	const uint8_t *ptr;
	size_t len;
};

/*
 * The TLVs we surface. Byte strings point into the caller's buffer and are
 * the sender's bytes as they came (attacker-controlled: pp_tlv_format()
 * escapes and bounds them for logs).
 */
struct pp_tlvs {
	struct pp_bytes alpn;
	struct pp_bytes netns;
	struct pp_bytes ssl_cn; /* the SSL TLV's CN sub-TLV */
	bool ssl; /* an SSL TLV was present */
	uint8_t ssl_client; /* its client field (PP2_CLIENT_* bits) */
	uint32_t ssl_verify; /* its verify field: 0 when the client certificate was verified */
	struct pp_bytes aws_vpce_id; /* without the subtype byte */
	bool azure_linkid_present;
	uint32_t azure_linkid;
	bool gcp_psc_present;
	uint64_t gcp_psc_id;
};

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
	struct pp_tlvs tlv;
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
