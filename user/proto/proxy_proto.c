// SPDX-License-Identifier: GPL-2.0
/*
 * PROXY protocol parser, versions 1 (text) and 2 (binary), after HAProxy's
 * doc/proxy-protocol.txt. Pure functions over the caller's buffer: no I/O,
 * no allocation, no global state. Every read is bounded by len.
 *
 * The parser is meant to be called again each time more bytes arrive. It
 * answers PP_NEED_MORE only while the bytes seen so far are a prefix of some
 * valid header, and PP_INVALID as soon as they cannot be, so a peer that does
 * not speak the protocol is rejected without waiting for a timeout.
 *
 * Choices where the spec leaves room:
 *  - v1 "UNKNOWN" may be followed by anything up to the CRLF (the spec says
 *    the receiver ignores it), but a bare CR or LF is still invalid.
 *  - v1 IPv6 addresses are whatever inet_pton(AF_INET6) accepts, including
 *    IPv4-mapped forms; IPv4 addresses are parsed here, strictly.
 *  - v1 TCP6 accepts a strict IPv4 destination (stored IPv4-mapped): nginx's
 *    stream module writes the listener's address family for the source and
 *    the accepted socket's for the destination. The destination is never
 *    used, so this costs nothing; the source must still be IPv6.
 *  - v2 address block size follows the family nibble (UNSPEC 0, INET 12,
 *    INET6 36, UNIX 216). A PROXY header whose length is below it is invalid.
 *    A LOCAL header ignores the family: if its length covers the family's
 *    block, TLVs after the block are checked; otherwise the whole payload is
 *    skipped unread.
 *  - src/dst are filled only for PROXY with INET/INET6 and a STREAM or DGRAM
 *    transport; an UNSPEC transport means "ignore the addresses".
 *  - A duplicated CRC32C, AUTHORITY, UNIQUE_ID, ALPN, NETNS, SSL (or its
 *    CN) TLV is invalid, as is a CRC32C TLV whose length is not 4 and an SSL
 *    TLV too short for its fixed fields or whose sub-TLVs overrun it.
 *  - Cloud TLVs (AWS 0xEA/0x01, Azure 0xEE/0x01, GCP 0xE0) are read only in
 *    their documented shape; a duplicate of one so read is invalid
 *    (docs/DESIGN.md §12).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "proto/proxy_proto.h"

#define PP1_SIG "PROXY "
#define PP1_SIG_LEN 6
#define PP1_IPV4_MAX 15 /* "255.255.255.255" */
#define PP1_IPV6_MAX 45 /* INET6_ADDRSTRLEN - 1, IPv4-mapped form */
#define PP1_PORT_MAX 5 /* "65535" */

#define PP2_SIG_LEN 12
#define PP2_HDR_LEN 16
#define PP2_VERSION 2
#define PP2_TLV_HDR_LEN 3
#define PP2_CRC32C_LEN 4
#define PP2_UNIQUE_ID_MAX 128
#define PP2_SSL_FIXED_LEN 5 /* client (1) and verify (4) before the sub-TLVs */

static const uint8_t pp2_sig[PP2_SIG_LEN] = {
	0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
};

/* Address block size per v2 family nibble, indexed by enum pp_family. */
static const size_t pp2_addr_size[] = {
	[PP_FAM_UNSPEC] = 0,
	[PP_FAM_INET] = 12,
	[PP_FAM_INET6] = 36,
	[PP_FAM_UNIX] = 216,
};

/*
 * hdr_reset - start from an empty header.
 * Returns nothing; every field is zero, so both addresses are AF_UNSPEC and
 * every TLV pointer is NULL.
 */
static void hdr_reset(struct pp_header *hdr, const char **reason)
{
	memset(hdr, 0, sizeof(*hdr));
	*reason = NULL;
}

/*
 * prefix_matches - compare what is there of buf against a fixed signature.
 * Returns true when the first min(len, sig_len) bytes of buf equal sig.
 */
static bool prefix_matches(const uint8_t *buf, size_t len, const void *sig, size_t sig_len)
{
	return memcmp(buf, sig, len < sig_len ? len : sig_len) == 0;
}

static uint16_t get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/*
 * set_inet - store an IPv4 endpoint as a sockaddr_in.
 * @addr: 4 bytes in network order; @port_be: port in network order.
 * Returns nothing.
 */
static void set_inet(struct sockaddr_storage *ss, const void *addr, uint16_t port_be)
{
	struct sockaddr_in *sin = (struct sockaddr_in *)ss;

	memset(ss, 0, sizeof(*ss));
	sin->sin_family = AF_INET;
	sin->sin_port = port_be;
	memcpy(&sin->sin_addr, addr, 4);
}

/*
 * set_inet6 - store an IPv6 endpoint as a sockaddr_in6.
 * @addr: 16 bytes in network order; @port_be: port in network order.
 * Returns nothing.
 */
static void set_inet6(struct sockaddr_storage *ss, const void *addr, uint16_t port_be)
{
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = port_be;
	memcpy(&sin6->sin6_addr, addr, 16);
}

/* ------------------------------------------------------------------ v1 -- */

/* Where we are in a v1 line. end never exceeds PP_V1_MAX_LEN. */
struct v1_cursor {
	const uint8_t *buf;
	size_t pos; /* next byte to look at */
	size_t end; /* min(len, PP_V1_MAX_LEN) */
	bool capped; /* len reached PP_V1_MAX_LEN: no more bytes may count */
};

enum v1_kind {
	V1_IPV4,
	V1_IPV6,
	V1_PORT,
	V1_IPV6_DST, /* TCP6 destination: IPv6, or IPv4 stored as ::ffff:a.b.c.d */
};

/* Parsed v1 address fields, before they become sockaddrs. */
struct v1_fields {
	union {
		uint8_t v4[4];
		struct in6_addr v6;
	} src, dst;
	uint16_t sport, dport; /* host order */
};

static const char *const v1_bad_field[] = {
	[V1_IPV4] = "v1: bad IPv4 address",
	[V1_IPV6] = "v1: bad IPv6 address",
	[V1_PORT] = "v1: bad port",
	[V1_IPV6_DST] = "v1: bad IPv6 (or IPv4) destination address",
};

/*
 * v1_starved - the available bytes ran out before the line was complete.
 * Returns PP_NEED_MORE while the 107-byte limit leaves room for the rest,
 * else PP_INVALID with *reason set.
 */
static enum pp_status v1_starved(const struct v1_cursor *c, const char **reason)
{
	if (!c->capped)
		return PP_NEED_MORE;
	*reason = "v1: no CRLF within 107 bytes";
	return PP_INVALID;
}

static bool is_digit(uint8_t ch)
{
	return ch >= '0' && ch <= '9';
}

static bool is_xdigit(uint8_t ch)
{
	return is_digit(ch) || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F');
}

/*
 * v1_ipv4 - check a dotted quad, or a prefix of one when !complete.
 * Exactly four decimal numbers 0..255 without leading zeros, single dots.
 * Returns 0 (and fills out[] when complete) or -EINVAL if s cannot be (a prefix
 * of) such an address.
 */
static int v1_ipv4(const uint8_t *s, size_t n, bool complete, uint8_t out[4])
{
	unsigned int val = 0, digits = 0, octet = 0;
	size_t i;

	if (n > PP1_IPV4_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (s[i] == '.') {
			if (digits == 0 || octet == 3)
				return -EINVAL;
			out[octet++] = (uint8_t)val;
			val = 0;
			digits = 0;
			continue;
		}
		if (!is_digit(s[i]) || (digits == 1 && val == 0))
			return -EINVAL;
		val = val * 10 + (s[i] - '0');
		digits++;
		if (val > 255)
			return -EINVAL;
	}
	if (!complete)
		return 0;
	if (octet != 3 || digits == 0)
		return -EINVAL;
	out[3] = (uint8_t)val;
	return 0;
}

/*
 * v1_ipv6 - check an IPv6 address, or a plausible prefix of one.
 * A prefix only has to use hex digits, ':' and '.' within the longest
 * textual form; a complete one must satisfy inet_pton(AF_INET6).
 * Returns 0 (and fills *out when complete) or -EINVAL.
 */
static int v1_ipv6(const uint8_t *s, size_t n, bool complete, struct in6_addr *out)
{
	char text[PP1_IPV6_MAX + 1];
	size_t i;

	if (n > PP1_IPV6_MAX)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!is_xdigit(s[i]) && s[i] != ':' && s[i] != '.')
			return -EINVAL;
	}
	if (!complete)
		return 0;
	memcpy(text, s, n);
	text[n] = '\0';
	return inet_pton(AF_INET6, text, out) == 1 ? 0 : -EINVAL;
}

/*
 * v1_port - check a decimal port 0..65535 without leading zeros, or a prefix
 * of one when !complete.
 * Returns 0 (and fills *out when complete) or -EINVAL.
 */
static int v1_port(const uint8_t *s, size_t n, bool complete, uint16_t *out)
{
	uint32_t val = 0;
	size_t i;

	if (n > PP1_PORT_MAX || (complete && n == 0))
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!is_digit(s[i]) || (i == 1 && s[0] == '0'))
			return -EINVAL;
		val = val * 10 + (s[i] - '0');
		if (val > 65535)
			return -EINVAL;
	}
	if (complete)
		*out = (uint16_t)val;
	return 0;
}

/*
 * v1_ipv6_dst - a TCP6 destination: an IPv6 address, or else a strict IPv4
 * one, which is stored IPv4-mapped. A prefix is checked as IPv6's (hex
 * digits, ':' and '.' cover a dotted quad's).
 * Returns 0 (and fills *out when complete) or -EINVAL.
 */
static int v1_ipv6_dst(const uint8_t *s, size_t n, bool complete, struct in6_addr *out)
{
	uint8_t v4[4];

	if (v1_ipv6(s, n, complete, out) == 0)
		return 0;
	if (!complete || v1_ipv4(s, n, true, v4) < 0)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->s6_addr[10] = out->s6_addr[11] = 0xff;
	memcpy(&out->s6_addr[12], v4, 4);
	return 0;
}

/*
 * v1_value - dispatch one field to its checker.
 * Returns what the checker returns: 0 when valid (so far), -EINVAL when not.
 */
static int v1_value(enum v1_kind kind, const uint8_t *s, size_t n, bool complete, void *out)
{
	switch (kind) {
	case V1_IPV4:
		return v1_ipv4(s, n, complete, out);
	case V1_IPV6:
		return v1_ipv6(s, n, complete, out);
	case V1_PORT:
		return v1_port(s, n, complete, out);
	case V1_IPV6_DST:
		return v1_ipv6_dst(s, n, complete, out);
	}
	return -EINVAL;
}

/*
 * v1_field - parse the field at c->pos, which must end with @want (a space,
 * or the CR of the final CRLF).
 * Returns PP_OK with c->pos just past the delimiter; PP_NEED_MORE when the
 * field is a valid prefix and the bytes ran out; PP_INVALID with *reason set
 * when the field or its delimiter is wrong, or the 107-byte limit is hit.
 */
static enum pp_status v1_field(struct v1_cursor *c, enum v1_kind kind, uint8_t want, void *out,
			       const char **reason)
{
	const uint8_t *tok = c->buf + c->pos;
	size_t n = 0;
	bool complete;

	while (c->pos + n < c->end && tok[n] != ' ' && tok[n] != '\r' && tok[n] != '\n')
		n++;
	complete = c->pos + n < c->end;
	if (complete && n == 0)
		goto empty;
	if (v1_value(kind, tok, n, complete, out) < 0)
		goto bad_value;
	if (!complete)
		return v1_starved(c, reason);
	if (tok[n] == '\n')
		goto bare_lf;
	if (tok[n] != want)
		goto bad_delim;
	c->pos += n + 1;
	return PP_OK;

empty:
	*reason = tok[0] == ' ' ? "v1: double space" :
		  tok[0] == '\n' ? "v1: LF without CR" : "v1: missing field";
	return PP_INVALID;
bad_value:
	*reason = v1_bad_field[kind];
	return PP_INVALID;
bad_delim:
	*reason = want == ' ' ? "v1: missing field" : "v1: extra field";
	return PP_INVALID;
bare_lf:
	*reason = "v1: LF without CR";
	return PP_INVALID;
}

/*
 * v1_lf - the byte after a CR must be the LF that ends the line.
 * Returns PP_OK with c->pos past the LF, PP_NEED_MORE if it is not there yet,
 * or PP_INVALID with *reason set.
 */
static enum pp_status v1_lf(struct v1_cursor *c, const char **reason)
{
	if (c->pos >= c->end)
		return v1_starved(c, reason);
	if (c->buf[c->pos] != '\n')
		goto bare_cr;
	c->pos++;
	return PP_OK;

bare_cr:
	*reason = "v1: CR not followed by LF";
	return PP_INVALID;
}

/*
 * v1_proto - match "TCP4 ", "TCP6 " or "UNKNOWN" at c->pos.
 * Returns PP_OK with *fam set and c->pos past the word; PP_NEED_MORE /
 * PP_INVALID (limit) when the bytes are a prefix of a word; PP_INVALID with
 * *reason set otherwise.
 */
static enum pp_status v1_proto(struct v1_cursor *c, enum pp_family *fam, const char **reason)
{
	static const struct {
		const char *word;
		size_t len;
		enum pp_family fam;
	} protos[] = {
		{ "TCP4 ", 5, PP_FAM_INET },
		{ "TCP6 ", 5, PP_FAM_INET6 },
		{ "UNKNOWN", 7, PP_FAM_UNSPEC },
	};
	size_t avail = c->end - c->pos;
	bool partial = false;
	size_t i;

	for (i = 0; i < sizeof(protos) / sizeof(protos[0]); i++) {
		if (!prefix_matches(c->buf + c->pos, avail, protos[i].word, protos[i].len))
			continue;
		if (avail < protos[i].len) {
			partial = true;
			continue;
		}
		c->pos += protos[i].len;
		*fam = protos[i].fam;
		return PP_OK;
	}
	if (partial)
		return v1_starved(c, reason);
	*reason = "v1: unknown protocol (want TCP4, TCP6 or UNKNOWN)";
	return PP_INVALID;
}

/*
 * v1_unknown_tail - skip whatever follows "UNKNOWN" up to and including CRLF.
 * Returns PP_OK with c->pos past the LF, PP_NEED_MORE while no CR was seen,
 * or PP_INVALID with *reason set (bare CR or LF, or 107-byte limit).
 */
static enum pp_status v1_unknown_tail(struct v1_cursor *c, const char **reason)
{
	for (; c->pos < c->end; c->pos++) {
		if (c->buf[c->pos] == '\n')
			goto bare_lf;
		if (c->buf[c->pos] == '\r') {
			c->pos++;
			return v1_lf(c, reason);
		}
	}
	return v1_starved(c, reason);

bare_lf:
	*reason = "v1: LF without CR";
	return PP_INVALID;
}

/*
 * v1_addresses - parse "SRC DST SPORT DPORT\r\n" for TCP4 or TCP6 into hdr.
 * Returns PP_OK with hdr->src/dst filled and c->pos past the LF, or the
 * PP_NEED_MORE / PP_INVALID of the first field that is not complete/valid.
 */
static enum pp_status v1_addresses(struct v1_cursor *c, struct pp_header *hdr, const char **reason)
{
	enum v1_kind kind = hdr->family == PP_FAM_INET ? V1_IPV4 : V1_IPV6;
	struct v1_fields f;
	enum pp_status st;

	st = v1_field(c, kind, ' ', &f.src, reason);
	if (st != PP_OK)
		goto out;
	st = v1_field(c, kind == V1_IPV6 ? V1_IPV6_DST : kind, ' ', &f.dst, reason);
	if (st != PP_OK)
		goto out;
	st = v1_field(c, V1_PORT, ' ', &f.sport, reason);
	if (st != PP_OK)
		goto out;
	st = v1_field(c, V1_PORT, '\r', &f.dport, reason);
	if (st != PP_OK)
		goto out;
	st = v1_lf(c, reason);
	if (st != PP_OK)
		goto out;

	if (kind == V1_IPV4) {
		set_inet(&hdr->src, f.src.v4, htons(f.sport));
		set_inet(&hdr->dst, f.dst.v4, htons(f.dport));
	} else {
		set_inet6(&hdr->src, &f.src.v6, htons(f.sport));
		set_inet6(&hdr->dst, &f.dst.v6, htons(f.dport));
	}
out:
	return st;
}

/*
 * pp_parse_v1 - parse a v1 (text) header. See proxy_proto.h.
 * Returns PP_OK, PP_NEED_MORE or PP_INVALID (with *reason set).
 */
enum pp_status pp_parse_v1(const uint8_t *buf, size_t len, struct pp_header *hdr,
			   const char **reason)
{
	struct v1_cursor c = {
		.buf = buf,
		.pos = PP1_SIG_LEN,
		.end = len < PP_V1_MAX_LEN ? len : PP_V1_MAX_LEN,
		.capped = len >= PP_V1_MAX_LEN,
	};
	enum pp_status st;

	hdr_reset(hdr, reason);
	if (!prefix_matches(buf, len, PP1_SIG, PP1_SIG_LEN))
		goto bad_sig;
	if (len < PP1_SIG_LEN)
		return PP_NEED_MORE;

	hdr->version = 1;
	st = v1_proto(&c, &hdr->family, reason);
	if (st != PP_OK)
		return st;
	if (hdr->family == PP_FAM_UNSPEC) {
		hdr->command = PP_CMD_LOCAL;
		hdr->transport = PP_TRANSPORT_UNSPEC;
		st = v1_unknown_tail(&c, reason);
	} else {
		hdr->command = PP_CMD_PROXY;
		hdr->transport = PP_TRANSPORT_STREAM;
		st = v1_addresses(&c, hdr, reason);
	}
	if (st != PP_OK)
		return st;
	hdr->header_len = c.pos;
	return PP_OK;

bad_sig:
	*reason = "v1: does not start with \"PROXY \"";
	return PP_INVALID;
}

/* ------------------------------------------------------------------ v2 -- */

/*
 * v2_fixed - check the 16-byte fixed part, or as much of it as is there:
 * signature, version 2, command LOCAL/PROXY, family 0..3, transport 0..2.
 * Returns PP_OK once all 16 bytes are there and valid (command, family and
 * transport stored in hdr), PP_NEED_MORE for a valid shorter prefix, or
 * PP_INVALID with *reason set.
 */
static enum pp_status v2_fixed(const uint8_t *buf, size_t len, struct pp_header *hdr,
			       const char **reason)
{
	unsigned int cmd, fam, transport;

	if (!prefix_matches(buf, len, pp2_sig, PP2_SIG_LEN))
		goto bad_sig;
	if (len <= PP2_SIG_LEN)
		return PP_NEED_MORE;
	if (buf[12] >> 4 != PP2_VERSION)
		goto bad_version;
	cmd = buf[12] & 0x0F;
	if (cmd != PP_CMD_LOCAL && cmd != PP_CMD_PROXY)
		goto bad_cmd;
	hdr->command = cmd;
	if (len <= 13)
		return PP_NEED_MORE;
	fam = buf[13] >> 4;
	transport = buf[13] & 0x0F;
	if (fam > PP_FAM_UNIX)
		goto bad_fam;
	if (transport > PP_TRANSPORT_DGRAM)
		goto bad_transport;
	hdr->family = fam;
	hdr->transport = transport;
	return len < PP2_HDR_LEN ? PP_NEED_MORE : PP_OK;

bad_sig:
	*reason = "v2: bad signature";
	return PP_INVALID;
bad_version:
	*reason = "v2: version is not 2";
	return PP_INVALID;
bad_cmd:
	*reason = "v2: command is neither LOCAL nor PROXY";
	return PP_INVALID;
bad_fam:
	*reason = "v2: unassigned address family";
	return PP_INVALID;
bad_transport:
	*reason = "v2: unassigned transport protocol";
	return PP_INVALID;
}

/*
 * v2_crc_ok - verify the CRC32C TLV whose 4-byte value is at buf[crc_off].
 * The CRC covers buf[0..hlen) with the value itself read as zeros.
 * Returns true when the stored (big-endian) value matches.
 */
static bool v2_crc_ok(const uint8_t *buf, size_t hlen, size_t crc_off)
{
	static const uint8_t zeros[PP2_CRC32C_LEN];
	size_t after = crc_off + PP2_CRC32C_LEN;
	uint32_t crc;

	crc = pp_crc32c(0, buf, crc_off);
	crc = pp_crc32c(crc, zeros, sizeof(zeros));
	crc = pp_crc32c(crc, buf + after, hlen - after);
	return crc == get_be32(buf + crc_off);
}

/* Store a byte-string TLV; returns -EEXIST when it was already there (a duplicate). */
static int set_once(struct pp_bytes *b, const uint8_t *p, size_t len)
{
	if (b->ptr)
		return -EEXIST;
	b->ptr = p;
	b->len = len;
	return 0;
}

static uint64_t get_be64(const uint8_t *p)
{
	return (uint64_t)get_be32(p) << 32 | get_be32(p + 4);
}

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

/*
 * v2_ssl - the SSL TLV: client (1 byte), verify (4 bytes, big-endian), then
 * sub-TLVs, of which we keep the CN. The value at v[0..vlen) lies inside the
 * header already; the sub-TLVs must fill it exactly, as TLVs fill a header.
 * Returns 0, or -EINVAL with *reason set.
 */
static int v2_ssl(const uint8_t *v, size_t vlen, struct pp_tlvs *t, const char **reason)
{
	size_t off = PP2_SSL_FIXED_LEN, slen;

	if (vlen < PP2_SSL_FIXED_LEN)
		goto short_ssl;
	if (t->ssl)
		goto dup;
	t->ssl = true;
	t->ssl_client = v[0];
	t->ssl_verify = get_be32(v + 1);
	while (off < vlen) {
		if (vlen - off < PP2_TLV_HDR_LEN)
			goto truncated;
		slen = get_be16(v + off + 1);
		if (vlen - off - PP2_TLV_HDR_LEN < slen)
			goto truncated;
		if (v[off] == PP2_SUBTYPE_SSL_CN && set_once(&t->ssl_cn, v + off + PP2_TLV_HDR_LEN, slen))
			goto dup;
		off += PP2_TLV_HDR_LEN + slen;
	}
	return 0;

short_ssl:
	*reason = "v2: SSL TLV shorter than its 5-byte client and verify fields";
	return -EINVAL;
truncated:
	*reason = "v2: truncated sub-TLV in the SSL TLV";
	return -EINVAL;
dup:
	*reason = "v2: duplicate TLV";
	return -EINVAL;
}

/*
 * v2_cloud - the cloud load balancers' TLVs, in the custom range 0xE0..0xEF
 * that the spec leaves to anyone. A value of another shape than the
 * provider's documented one (another subtype, another length) is someone
 * else's use of that type: skipped, not an error, so that a sender using
 * 0xE0 for its own purpose is not refused. A second copy of one we read is
 * an error: which endpoint would it be?
 * Returns 0, or -EINVAL with *reason set.
 */
static int v2_cloud(uint8_t type, const uint8_t *v, size_t vlen, struct pp_tlvs *t, const char **reason)
{
	switch (type) {
	case PP2_TYPE_AWS:
		if (vlen < 1 || v[0] != PP2_SUBTYPE_AWS_VPCE_ID)
			return 0;
		if (set_once(&t->aws_vpce_id, v + 1, vlen - 1))
			goto dup;
		return 0;
	case PP2_TYPE_AZURE:
		if (vlen != 1 + 4 || v[0] != PP2_SUBTYPE_AZURE_LINKID)
			return 0;
		if (t->azure_linkid_present)
			goto dup;
		t->azure_linkid_present = true;
		t->azure_linkid = get_le32(v + 1);
		return 0;
	case PP2_TYPE_GCP:
		if (vlen != 8)
			return 0;
		if (t->gcp_psc_present)
			goto dup;
		t->gcp_psc_present = true;
		t->gcp_psc_id = get_be64(v);
		return 0;
	}
	return 0;

dup:
	*reason = "v2: duplicate TLV";
	return -EINVAL;
}

/*
 * v2_tlv - record one TLV whose value is buf[off..off+vlen), already known
 * to lie inside the header.
 * Returns 0, or -EINVAL with *reason set for a bad CRC32C length, an oversized
 * UNIQUE_ID, a malformed SSL TLV or a duplicate of a TLV we expose.
 * *crc_off gets the offset of a CRC32C value.
 */
static int v2_tlv(const uint8_t *buf, uint8_t type, size_t off, size_t vlen, size_t *crc_off,
		  struct pp_header *hdr, const char **reason)
{
	const uint8_t *v = buf + off;

	switch (type) {
	case PP2_TYPE_CRC32C:
		if (vlen != PP2_CRC32C_LEN)
			goto bad_crc_len;
		if (*crc_off)
			goto dup;
		*crc_off = off;
		break;
	case PP2_TYPE_AUTHORITY:
		if (hdr->authority)
			goto dup;
		hdr->authority = v;
		hdr->authority_len = vlen;
		break;
	case PP2_TYPE_UNIQUE_ID:
		if (vlen > PP2_UNIQUE_ID_MAX)
			goto long_id;
		if (hdr->unique_id)
			goto dup;
		hdr->unique_id = v;
		hdr->unique_id_len = vlen;
		break;
	case PP2_TYPE_ALPN:
		if (set_once(&hdr->tlv.alpn, v, vlen))
			goto dup;
		break;
	case PP2_TYPE_NETNS:
		if (set_once(&hdr->tlv.netns, v, vlen))
			goto dup;
		break;
	case PP2_TYPE_SSL:
		return v2_ssl(v, vlen, &hdr->tlv, reason);
	case PP2_TYPE_AWS:
	case PP2_TYPE_AZURE:
	case PP2_TYPE_GCP:
		return v2_cloud(type, v, vlen, &hdr->tlv, reason);
	default: /* NOOP, other custom types: not ours to interpret */
		break;
	}
	return 0;

bad_crc_len:
	*reason = "v2: CRC32C TLV length is not 4";
	return -EINVAL;
dup:
	*reason = "v2: duplicate TLV";
	return -EINVAL;
long_id:
	*reason = "v2: UNIQUE_ID longer than 128 bytes";
	return -EINVAL;
}

/*
 * v2_tlvs - walk the TLVs in buf[off..hlen) and verify the CRC32C if any.
 * Each step consumes at least 3 bytes, so the walk is bounded by hlen.
 * Returns PP_OK with the TLV fields of hdr set, or PP_INVALID with *reason
 * set (truncated TLV, bad TLV, checksum mismatch).
 */
static enum pp_status v2_tlvs(const uint8_t *buf, size_t off, size_t hlen, struct pp_header *hdr,
			      const char **reason)
{
	size_t crc_off = 0, vlen;

	while (off < hlen) {
		if (hlen - off < PP2_TLV_HDR_LEN)
			goto truncated;
		vlen = get_be16(buf + off + 1);
		if (hlen - off - PP2_TLV_HDR_LEN < vlen)
			goto truncated;
		if (v2_tlv(buf, buf[off], off + PP2_TLV_HDR_LEN, vlen, &crc_off, hdr, reason) < 0)
			return PP_INVALID;
		off += PP2_TLV_HDR_LEN + vlen;
	}
	if (crc_off && !v2_crc_ok(buf, hlen, crc_off))
		goto bad_crc;
	hdr->crc32c_present = crc_off != 0;
	return PP_OK;

truncated:
	*reason = "v2: truncated TLV";
	return PP_INVALID;
bad_crc:
	*reason = "v2: CRC32C mismatch";
	return PP_INVALID;
}

/*
 * v2_addresses - fill hdr->src/dst from the address block at buf[16..] for
 * a PROXY header over INET or INET6 with a STREAM or DGRAM transport; leave
 * them AF_UNSPEC for anything else (LOCAL, UNSPEC, UNIX).
 * Returns nothing; the caller has checked the block is long enough.
 */
static void v2_addresses(const uint8_t *buf, struct pp_header *hdr)
{
	const uint8_t *a = buf + PP2_HDR_LEN;
	uint16_t sport, dport;

	if (hdr->command != PP_CMD_PROXY || hdr->transport == PP_TRANSPORT_UNSPEC)
		return;
	if (hdr->family == PP_FAM_INET) {
		memcpy(&sport, a + 8, 2);
		memcpy(&dport, a + 10, 2);
		set_inet(&hdr->src, a, sport);
		set_inet(&hdr->dst, a + 4, dport);
	} else if (hdr->family == PP_FAM_INET6) {
		memcpy(&sport, a + 32, 2);
		memcpy(&dport, a + 34, 2);
		set_inet6(&hdr->src, a, sport);
		set_inet6(&hdr->dst, a + 16, dport);
	}
}

/*
 * pp_parse_v2 - parse a v2 (binary) header. See proxy_proto.h.
 * Returns PP_OK, PP_NEED_MORE or PP_INVALID (with *reason set).
 */
enum pp_status pp_parse_v2(const uint8_t *buf, size_t len, struct pp_header *hdr,
			   const char **reason)
{
	size_t hlen, block;
	bool walk_tlvs = true;
	enum pp_status st;

	hdr_reset(hdr, reason);
	st = v2_fixed(buf, len, hdr, reason);
	if (st != PP_OK)
		return st;

	hdr->version = 2;
	hlen = PP2_HDR_LEN + (size_t)get_be16(buf + 14);
	block = pp2_addr_size[hdr->family];
	if (hlen - PP2_HDR_LEN < block) {
		if (hdr->command == PP_CMD_PROXY)
			goto short_block;
		walk_tlvs = false; /* LOCAL: family ignored, payload skipped */
	}
	if (len < hlen)
		return PP_NEED_MORE;

	if (walk_tlvs) {
		st = v2_tlvs(buf, PP2_HDR_LEN + block, hlen, hdr, reason);
		if (st != PP_OK)
			return st;
		v2_addresses(buf, hdr);
	}
	hdr->header_len = hlen;
	return PP_OK;

short_block:
	*reason = "v2: length shorter than the address block";
	return PP_INVALID;
}

/*
 * pp_parse - parse a v1 or v2 header, chosen by the first byte. See
 * proxy_proto.h.
 * Returns PP_OK, PP_NEED_MORE (also for an empty buffer) or PP_INVALID (with
 * *reason set).
 */
enum pp_status pp_parse(const uint8_t *buf, size_t len, struct pp_header *hdr,
			const char **reason)
{
	if (len == 0) {
		hdr_reset(hdr, reason);
		return PP_NEED_MORE;
	}
	if (buf[0] == PP1_SIG[0])
		return pp_parse_v1(buf, len, hdr, reason);
	if (buf[0] == pp2_sig[0])
		return pp_parse_v2(buf, len, hdr, reason);
	hdr_reset(hdr, reason);
	*reason = "not a PROXY protocol header";
	return PP_INVALID;
}

size_t pp_bytes_needed(const uint8_t *buf, size_t len)
{
	if (len < PP2_HDR_LEN || memcmp(buf, pp2_sig, PP2_SIG_LEN))
		return 0;
	return PP2_HDR_LEN + ((size_t)buf[14] << 8 | buf[15]);
}
