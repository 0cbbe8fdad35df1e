// SPDX-License-Identifier: GPL-2.0
/*
 * The PROXY v2 fixed part is checked here, before pp_parse_v2, so that each
 * bad datagram lands in the right counter (truncated, bad length, wrong
 * family, wrong transport); pp_parse_v2 then checks the TLVs and CRC32C.
 */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include "lib/sockaddr.h"
#include "proto/proxy_proto.h"
#include "udp/udp_classify.h"
#include "proto/udp_spp.h"

#define V2_SIG_LEN 12
#define V2_FIXED_LEN 16

static const uint8_t v2_sig[V2_SIG_LEN] = {
	0x0D, 0x0A, 0x0D, 0x0A, 0x00, 0x0D, 0x0A, 0x51, 0x55, 0x49, 0x54, 0x0A,
};

/* Record why the datagram is dropped; returns UDP_K_DROP. */
static enum udp_kind drop(struct udp_dgram_info *out, enum mmp_udp_counter c, const char *why)
{
	out->drop = c;
	out->why = why;
	return UDP_K_DROP;
}

int udp_client_check(const struct sockaddr *sa, const char **why)
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const void *)sa;
		uint32_t a = ntohl(sin->sin_addr.s_addr);

		if (!sin->sin_port)
			goto port0;
		if (a == INADDR_ANY || a == INADDR_BROADCAST || IN_MULTICAST(a)) {
			*why = "client address is unspecified, broadcast or multicast";
			return -EINVAL;
		}
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const void *)sa;

		if (!sin6->sin6_port)
			goto port0;
		if (IN6_IS_ADDR_UNSPECIFIED(&sin6->sin6_addr) || IN6_IS_ADDR_MULTICAST(&sin6->sin6_addr)) {
			*why = "client address is unspecified or multicast";
			return -EINVAL;
		}
		return 0;
	}
	*why = "client address family is not IPv4 or IPv6";
	return -EAFNOSUPPORT;
port0:
	/* bind() to port 0 would pick a random port: the upstream would see a made-up client. */
	*why = "client port is 0";
	return -EINVAL;
}

/* Store the header's addresses; returns kind, or UDP_K_DROP for an unusable client. */
static enum udp_kind set_client(struct udp_dgram_info *out, enum udp_kind kind, const struct sockaddr_storage *client,
				const struct sockaddr_storage *proxy)
{
	const char *why;

	out->client = *client;
	out->proxy = *proxy;
	/* ::ffff:a.b.c.d goes to the -4 upstream as a.b.c.d, as in TCP. */
	mmp_unmap_v4(&out->client);
	if (udp_client_check((const struct sockaddr *)&out->client, &why))
		return drop(out, MMP_UDP_CNT_drop_bad_client, why);
	return kind;
}

/* A datagram that starts with the full v2 signature. Returns its kind. */
static enum udp_kind classify_v2(const uint8_t *buf, size_t len, struct udp_dgram_info *out)
{
	unsigned int cmd, fam, transport;
	struct pp_header hdr;
	const char *reason;
	size_t hlen;

	if (len < V2_FIXED_LEN)
		return drop(out, MMP_UDP_CNT_drop_truncated, "PROXY v2 header cut short (under 16 bytes)");
	if (buf[12] >> 4 != 2)
		return drop(out, MMP_UDP_CNT_drop_bad_header, "PROXY v2 signature with a version other than 2");
	cmd = buf[12] & 0x0F;
	if (cmd != PP_CMD_LOCAL && cmd != PP_CMD_PROXY)
		return drop(out, MMP_UDP_CNT_drop_bad_header, "PROXY v2 command is neither LOCAL nor PROXY");
	hlen = V2_FIXED_LEN + ((size_t)buf[14] << 8 | buf[15]);
	if (hlen > len)
		return drop(out, MMP_UDP_CNT_drop_bad_length, "PROXY v2 length runs past the end of the datagram");
	fam = buf[13] >> 4;
	transport = buf[13] & 0x0F;
	if (cmd == PP_CMD_PROXY) {
		if (fam != PP_FAM_INET && fam != PP_FAM_INET6)
			return drop(out, MMP_UDP_CNT_drop_wrong_family,
				    "PROXY v2 address family is not INET or INET6 (UNSPEC, UNIX or unassigned)");
		if (transport != PP_TRANSPORT_DGRAM)
			return drop(out, MMP_UDP_CNT_drop_wrong_transport,
				    transport == PP_TRANSPORT_STREAM ? "PROXY v2 transport is STREAM (TCP), not DGRAM"
								     : "PROXY v2 transport is not DGRAM");
		if (hlen - V2_FIXED_LEN < (fam == PP_FAM_INET ? 12u : 36u))
			return drop(out, MMP_UDP_CNT_drop_bad_length,
				    "PROXY v2 length is shorter than its address block");
	}
	if (pp_parse_v2(buf, len, &hdr, &reason) != PP_OK)
		return drop(out, MMP_UDP_CNT_drop_bad_header, reason ? reason : "invalid PROXY v2 header");
	out->hdr_len = hdr.header_len;
	out->tlv = hdr.tlv;
	if (cmd == PP_CMD_LOCAL)
		return UDP_K_LOCAL;
	return set_client(out, UDP_K_V2, &hdr.src, &hdr.dst);
}

/* A datagram that starts with the SPP magic. Returns its kind. */
static enum udp_kind classify_spp(const uint8_t *buf, size_t len, struct udp_dgram_info *out)
{
	struct spp_header hdr;

	if (spp_decode(buf, len, &hdr))
		return drop(out, MMP_UDP_CNT_drop_truncated, "SPP header cut short (under 38 bytes)");
	out->hdr_len = SPP_HEADER_LEN;
	return set_client(out, UDP_K_SPP, &hdr.client, &hdr.proxy);
}

static enum udp_kind classify(enum mmp_udp_header mode, const uint8_t *buf, size_t len, bool lb_has_v2_flow,
			      struct udp_dgram_info *out)
{
	bool full_sig = len >= V2_SIG_LEN && !memcmp(buf, v2_sig, V2_SIG_LEN);

	out->sig_prefix = len && len < V2_SIG_LEN && !memcmp(buf, v2_sig, len);
	switch (mode) {
	case MMP_UDP_HDR_SPP:
		if (spp_has_magic(buf, len))
			return classify_spp(buf, len, out);
		return drop(out, MMP_UDP_CNT_drop_no_header, "no SPP header (magic 0x56EC) and --udp-header spp");
	case MMP_UDP_HDR_EVERY:
		if (full_sig)
			return classify_v2(buf, len, out);
		if (out->sig_prefix)
			return drop(out, MMP_UDP_CNT_drop_truncated, "PROXY v2 signature cut short");
		return drop(out, MMP_UDP_CNT_drop_no_header, "no PROXY v2 header and --udp-header every");
	case MMP_UDP_HDR_FIRST:
	case MMP_UDP_HDR_AUTO:
		if (full_sig)
			return classify_v2(buf, len, out);
		if (mode == MMP_UDP_HDR_AUTO && !lb_has_v2_flow && spp_has_magic(buf, len))
			return classify_spp(buf, len, out);
		return UDP_K_PAYLOAD;
	}
	return drop(out, MMP_UDP_CNT_drop_bad_header, "unknown --udp-header mode");
}

void udp_classify(enum mmp_udp_header mode, const uint8_t *buf, size_t len, bool lb_has_v2_flow,
		  struct udp_dgram_info *out)
{
	memset(out, 0, sizeof(*out));
	out->kind = classify(mode, buf, len, lb_has_v2_flow, out);
}
