// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests for the PROXY protocol parser (user/proto/proxy_proto.c) and CRC32C
 * (user/proto/crc32c.c), after HAProxy's doc/proxy-protocol.txt.
 *
 * Most cases live in one table, each run as its own named cmocka test; the
 * exhaustive loops (every v2 command nibble, every fam/transport byte, every
 * truncation point) are separate tests. Every parse reads from a heap copy of
 * exactly the input's size, so an over-read shows up under ASan/valgrind.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <cmocka.h>

#include "proto/proxy_proto.h"

/* v2 signature, split so that no hex escape swallows the next character. */
#define SIG "\r\n\r\n\0\r\nQUIT\n"
#define FFFF6 "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"

/* v2 IPv4 block: 127.0.0.1:8080 -> 10.0.0.2:443 */
#define BLK4 "\x7f\x00\x00\x01" "\x0a\x00\x00\x02" "\x1f\x90" "\x01\xbb"
#define SRC4 "127.0.0.1:8080"
#define DST4 "10.0.0.2:443"
/* v2 IPv6 block: [2001:db8::1]:1234 -> [::1]:443 */
#define BLK6                                                            \
	"\x20\x01\x0d\xb8" "\0\0\0\0" "\0\0\0\0" "\0\0\0\x01"           \
	"\0\0\0\0" "\0\0\0\0" "\0\0\0\0" "\0\0\0\x01" "\x04\xd2" "\x01\xbb"
#define SRC6 "[2001:db8::1]:1234"
#define DST6 "[::1]:443"

enum api { API_ANY, API_V1, API_V2 };

struct pp_case {
	const char *name;
	const char *in; /* input bytes, then pad zero bytes, then tail */
	size_t in_len;
	size_t pad;
	const char *tail;
	size_t tail_len;
	enum api api;
	enum pp_status want;
	/* checked on PP_OK only */
	size_t hlen; /* 0: in_len + pad (the tail is payload) */
	int version;
	enum pp_command cmd;
	enum pp_family fam;
	enum pp_transport tr;
	const char *src, *dst; /* NULL: must be AF_UNSPEC */
	const char *authority; /* NULL: must be absent */
	bool has_uid;
	size_t uid_len;
	bool crc;
	/* fix-ups before parsing */
	size_t crc_at; /* write the right CRC32C (big-endian) at this offset */
	bool crc_corrupt; /* then flip one bit of it */
};

#define IN(s) .in = (s), .in_len = sizeof(s) - 1
#define TAIL(s) .tail = (s), .tail_len = sizeof(s) - 1
#define BAD .want = PP_INVALID
#define MORE .want = PP_NEED_MORE
#define OK4(s, d) .want = PP_OK, .version = 1, .cmd = PP_CMD_PROXY, .fam = PP_FAM_INET, \
	.tr = PP_TRANSPORT_STREAM, .src = (s), .dst = (d)
#define OK6(s, d) .want = PP_OK, .version = 1, .cmd = PP_CMD_PROXY, .fam = PP_FAM_INET6, \
	.tr = PP_TRANSPORT_STREAM, .src = (s), .dst = (d)
#define OK_UNKNOWN .want = PP_OK, .version = 1, .cmd = PP_CMD_LOCAL, .fam = PP_FAM_UNSPEC, \
	.tr = PP_TRANSPORT_UNSPEC
#define OK2(c, f, t) .want = PP_OK, .version = 2, .cmd = (c), .fam = (f), .tr = (t)

static const struct pp_case cases[] = {
	/* ---- v1, valid ---- */
	{ "v1_tcp4_spec_example", IN("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
	  OK4("192.168.0.1:56324", "192.168.0.11:443") },
	{ "v1_tcp4_exact_len_with_payload", IN("PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n"),
	  TAIL("GET / HTTP/1.1\r\nHost: x\r\n\r\n"), OK4("192.168.0.1:56324", "192.168.0.11:443") },
	{ "v1_tcp4_max_values", IN("PROXY TCP4 255.255.255.255 255.255.255.255 65535 65535\r\n"),
	  OK4("255.255.255.255:65535", "255.255.255.255:65535") },
	{ "v1_tcp4_zero_values", IN("PROXY TCP4 0.0.0.0 0.0.0.0 0 0\r\n"),
	  OK4("0.0.0.0:0", "0.0.0.0:0") },
	{ "v1_tcp4_v1_api", IN("PROXY TCP4 10.0.0.1 10.0.0.2 1 2\r\n"), .api = API_V1,
	  OK4("10.0.0.1:1", "10.0.0.2:2") },
	{ "v1_tcp6_basic", IN("PROXY TCP6 2001:db8::1 ::1 1234 443\r\n"), OK6(SRC6, DST6) },
	{ "v1_tcp6_uppercase", IN("PROXY TCP6 2001:DB8::1 0:0:0:0:0:0:0:1 1234 443\r\n"),
	  OK6(SRC6, DST6) },
	{ "v1_tcp6_any_addr", IN("PROXY TCP6 :: :: 1 2\r\n"), OK6("[::]:1", "[::]:2") },
	{ "v1_tcp6_104_bytes", IN("PROXY TCP6 " FFFF6 " " FFFF6 " 65535 65535\r\n"),
	  OK6("[" FFFF6 "]:65535", "[" FFFF6 "]:65535") },
	{ "v1_tcp6_v4mapped_valid", IN("PROXY TCP6 ::ffff:192.0.2.1 ::ffff:192.0.2.2 1 2\r\n"),
	  OK6("[::ffff:192.0.2.1]:1", "[::ffff:192.0.2.2]:2") },
	{ "v1_unknown_short", IN("PROXY UNKNOWN\r\n"), OK_UNKNOWN },
	{ "v1_unknown_107_bytes", IN("PROXY UNKNOWN " FFFF6 " " FFFF6 " 65535 65535\r\n"),
	  OK_UNKNOWN },
	{ "v1_unknown_anything", IN("PROXY UNKNOWN \x01 junk\ttext\r\n"), TAIL("payload"),
	  OK_UNKNOWN },
	{ "v1_unknown_with_payload", IN("PROXY UNKNOWN\r\n"), TAIL("PROXY TCP4 junk\r\n"),
	  OK_UNKNOWN },

	/* ---- v1, incomplete ---- */
	{ "v1_empty_input", IN(""), MORE },
	{ "v1_just_P", IN("P"), MORE },
	{ "v1_partial_addr", IN("PROXY TCP4 1.2."), MORE },
	{ "v1_cr_without_lf_yet", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r"), MORE },
	{ "v1_unknown_106_no_crlf", IN("PROXY UNKNOWN " FFFF6 " " FFFF6 " 65535 65535a"), MORE },

	/* ---- v1, invalid ---- */
	{ "v1_over_107_bytes", IN("PROXY UNKNOWN " FFFF6 " " FFFF6 " 65535 655355\r\n"), BAD },
	{ "v1_107_bytes_no_crlf", IN("PROXY UNKNOWN " FFFF6 " " FFFF6 " 65535 65535ab"), BAD },
	{ "v1_cr_at_byte_107", IN("PROXY UNKNOWN " FFFF6 " " FFFF6 " 65535 65535a\r"), BAD },
	{ "v1_tcp6_mapped_over_107",
	  IN("PROXY TCP6 ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255 "
	     "ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255 65535 65535\r\n"), BAD },
	{ "v1_leading_zero_src_octet", IN("PROXY TCP4 01.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_leading_zero_dst_octet", IN("PROXY TCP4 1.2.3.4 5.06.7.8 1 2\r\n"), BAD },
	{ "v1_leading_zero_early", IN("PROXY TCP4 1.2.3.00"), BAD },
	{ "v1_leading_zero_port", IN("PROXY TCP4 1.2.3.4 5.6.7.8 080 443\r\n"), BAD },
	{ "v1_double_zero_port", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 00\r\n"), BAD },
	{ "v1_port_65536", IN("PROXY TCP4 1.2.3.4 5.6.7.8 65536 443\r\n"), BAD },
	{ "v1_port_6_digits", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 100000\r\n"), BAD },
	{ "v1_port_negative", IN("PROXY TCP4 1.2.3.4 5.6.7.8 -1 443\r\n"), BAD },
	{ "v1_port_plus_sign", IN("PROXY TCP4 1.2.3.4 5.6.7.8 +1 443\r\n"), BAD },
	{ "v1_port_hex", IN("PROXY TCP4 1.2.3.4 5.6.7.8 0x50 443\r\n"), BAD },
	{ "v1_octet_256", IN("PROXY TCP4 1.2.3.256 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_ipv4_three_octets", IN("PROXY TCP4 1.2.3 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_ipv4_five_octets", IN("PROXY TCP4 1.2.3.4.5 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_ipv4_trailing_dot", IN("PROXY TCP4 1.2.3.4. 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_ipv4_empty_octet", IN("PROXY TCP4 1..3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_ipv4_non_digit_early", IN("PROXY TCP4 1.2.x"), BAD },
	{ "v1_double_space_after_proxy", IN("PROXY  TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_double_space_between_addrs", IN("PROXY TCP4 1.2.3.4  5.6.7.8 1 2\r\n"), BAD },
	{ "v1_double_space_before_port", IN("PROXY TCP4 1.2.3.4 5.6.7.8  1 2\r\n"), BAD },
	{ "v1_space_before_crlf", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 \r\n"), BAD },
	{ "v1_tab_separator", IN("PROXY\tTCP4 1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_missing_dst_port", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1\r\n"), BAD },
	{ "v1_extra_field", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 2 3\r\n"), BAD },
	{ "v1_tcp4_no_fields", IN("PROXY TCP4\r\n"), BAD },
	{ "v1_tcp4_with_ipv6_addrs", IN("PROXY TCP4 ::1 ::1 1 2\r\n"), BAD },
	{ "v1_tcp4_with_mapped_ipv6", IN("PROXY TCP4 ::ffff:1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_tcp6_with_ipv4_addrs", IN("PROXY TCP6 1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	/* nginx's stream module: a TCP6 line with an IPv4 destination (it is not used). */
	{ "v1_tcp6_ipv4_destination_nginx", IN("PROXY TCP6 ::1 5.6.7.8 1 2\r\n"), OK6("[::1]:1", "[::ffff:5.6.7.8]:2") },
	{ "v1_tcp6_ipv4_destination_real", IN("PROXY TCP6 2001:db8::1 192.0.2.11 56324 443\r\n"),
	  OK6("[2001:db8::1]:56324", "[::ffff:192.0.2.11]:443") },
	{ "v1_tcp6_ipv4_destination_leading_zero", IN("PROXY TCP6 ::1 5.6.7.08 1 2\r\n"), BAD },
	{ "v1_tcp6_ipv4_destination_bad_octet", IN("PROXY TCP6 ::1 5.6.7.256 1 2\r\n"), BAD },
	{ "v1_tcp6_ipv4_destination_3_octets", IN("PROXY TCP6 ::1 5.6.7 1 2\r\n"), BAD },
	{ "v1_tcp4_ipv6_destination", IN("PROXY TCP4 1.2.3.4 ::1 1 2\r\n"), BAD },
	{ "v1_ipv6_triple_colon", IN("PROXY TCP6 :::1 ::1 1 2\r\n"), BAD },
	{ "v1_ipv6_two_double_colons", IN("PROXY TCP6 1::2::3 ::1 1 2\r\n"), BAD },
	{ "v1_ipv6_zone_id", IN("PROXY TCP6 fe80::1%eth0 ::1 1 2\r\n"), BAD },
	{ "v1_ipv6_group_too_long", IN("PROXY TCP6 12345::1 ::1 1 2\r\n"), BAD },
	{ "v1_ipv6_bracketed", IN("PROXY TCP6 [::1] ::1 1 2\r\n"), BAD },
	{ "v1_bare_lf", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\n"), BAD },
	{ "v1_cr_not_lf", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\rX"), BAD },
	{ "v1_cr_cr_lf", IN("PROXY TCP4 1.2.3.4 5.6.7.8 1 2\r\r\n"), BAD },
	{ "v1_nul_in_address", IN("PROXY TCP4 1.2\0.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_unknown_bare_lf", IN("PROXY UNKNOWN\n"), BAD },
	{ "v1_unknown_bare_cr", IN("PROXY UNKNOWN\rx\r\n"), BAD },
	{ "v1_lowercase_proxy", IN("proxy TCP4 1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_lowercase_tcp4", IN("PROXY tcp4 1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_udp4_not_allowed", IN("PROXY UDP4 1.2.3.4 5.6.7.8 1 2\r\n"), BAD },
	{ "v1_tcp5_early", IN("PROXY TCP5"), BAD },
	{ "v1_proxyx_early", IN("PROXYX"), BAD },
	{ "v1_http_request", IN("GET / HTTP/1.1\r\n"), BAD },
	{ "v1_first_byte_garbage", IN("\x16"), BAD },
	{ "v1_api_rejects_v2", IN(SIG "\x21\x11\x00\x0c" BLK4), .api = API_V1, BAD },

	/* ---- v2, valid ---- */
	{ "v2_tcp4", IN(SIG "\x21\x11\x00\x0c" BLK4),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4 },
	{ "v2_tcp4_exact_len_with_payload", IN(SIG "\x21\x11\x00\x0c" BLK4),
	  TAIL("\x03\x00\x04xyz garbage"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4 },
	{ "v2_tcp4_v2_api", IN(SIG "\x21\x11\x00\x0c" BLK4), .api = API_V2,
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4 },
	{ "v2_udp4", IN(SIG "\x21\x12\x00\x0c" BLK4),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_DGRAM), .src = SRC4, .dst = DST4 },
	{ "v2_tcp6", IN(SIG "\x21\x21\x00\x24" BLK6),
	  OK2(PP_CMD_PROXY, PP_FAM_INET6, PP_TRANSPORT_STREAM), .src = SRC6, .dst = DST6 },
	{ "v2_udp6_with_payload", IN(SIG "\x21\x22\x00\x24" BLK6), TAIL("\0\0\0"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET6, PP_TRANSPORT_DGRAM), .src = SRC6, .dst = DST6 },
	{ "v2_inet_transport_unspec", IN(SIG "\x21\x10\x00\x0c" BLK4),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_UNSPEC) },
	{ "v2_unix_stream", IN(SIG "\x21\x31\x00\xd8"), .pad = 216,
	  OK2(PP_CMD_PROXY, PP_FAM_UNIX, PP_TRANSPORT_STREAM) },
	{ "v2_unix_dgram", IN(SIG "\x21\x32\x00\xd8"), .pad = 216,
	  OK2(PP_CMD_PROXY, PP_FAM_UNIX, PP_TRANSPORT_DGRAM) },
	{ "v2_proxy_unspec", IN(SIG "\x21\x00\x00\x00"),
	  OK2(PP_CMD_PROXY, PP_FAM_UNSPEC, PP_TRANSPORT_UNSPEC) },
	{ "v2_local_unspec", IN(SIG "\x20\x00\x00\x00"), TAIL("hello"),
	  OK2(PP_CMD_LOCAL, PP_FAM_UNSPEC, PP_TRANSPORT_UNSPEC) },
	{ "v2_local_with_inet_block", IN(SIG "\x20\x11\x00\x0c" BLK4),
	  OK2(PP_CMD_LOCAL, PP_FAM_INET, PP_TRANSPORT_STREAM) },
	{ "v2_local_inet_len_0", IN(SIG "\x20\x11\x00\x00"), TAIL("x"),
	  OK2(PP_CMD_LOCAL, PP_FAM_INET, PP_TRANSPORT_STREAM) },
	{ "v2_local_short_block_skipped", IN(SIG "\x20\x21\x00\x05" "\x01\x02\x03\x04\x05"),
	  OK2(PP_CMD_LOCAL, PP_FAM_INET6, PP_TRANSPORT_STREAM) },
	{ "v2_noop_tlv", IN(SIG "\x21\x11\x00\x11" BLK4 "\x04\x00\x02" "ab"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4 },
	{ "v2_empty_noop_tlv", IN(SIG "\x21\x11\x00\x0f" BLK4 "\x04\x00\x00"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4 },
	{ "v2_ssl_and_custom_tlvs_skipped",
	  IN(SIG "\x21\x11\x00\x1d" BLK4 "\x20\x00\x08" "\x01\0\0\0\0" "\x21\x00\x00"
	     "\xe0\x00\x03" "abc"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4 },
	{ "v2_authority", IN(SIG "\x21\x11\x00\x1a" BLK4 "\x02\x00\x0b" "example.com"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4,
	  .authority = "example.com" },
	{ "v2_unique_id_128", IN(SIG "\x21\x11\x00\x8f" BLK4 "\x05\x00\x80"), .pad = 128,
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4,
	  .has_uid = true, .uid_len = 128 },
	{ "v2_authority_and_unique_id",
	  IN(SIG "\x21\x21\x00\x33" BLK6 "\x05\x00\x04" "id42" "\x02\x00\x05" "a.b.c"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET6, PP_TRANSPORT_STREAM), .src = SRC6, .dst = DST6,
	  .authority = "a.b.c", .has_uid = true, .uid_len = 4 },
	{ "v2_crc32c_right_literal",
	  IN(SIG "\x21\x11\x00\x13" BLK4 "\x03\x00\x04" "\x19\xdc\xbd\x40"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET, PP_TRANSPORT_STREAM), .src = SRC4, .dst = DST4,
	  .crc = true },
	{ "v2_crc32c_right_computed",
	  IN(SIG "\x21\x21\x00\x2f" BLK6 "\x04\x00\x01" "n" "\x03\x00\x04" "\0\0\0\0"),
	  .crc_at = 16 + 36 + 4 + 3, TAIL("payload"),
	  OK2(PP_CMD_PROXY, PP_FAM_INET6, PP_TRANSPORT_STREAM), .src = SRC6, .dst = DST6,
	  .crc = true },
	{ "v2_crc32c_local_literal", IN(SIG "\x20\x00\x00\x07" "\x03\x00\x04" "\xa9\xb8\x7e\x8f"),
	  OK2(PP_CMD_LOCAL, PP_FAM_UNSPEC, PP_TRANSPORT_UNSPEC), .crc = true },

	/* ---- v2, incomplete ---- */
	{ "v2_first_byte", IN("\r"), MORE },
	{ "v2_signature_only", IN(SIG), MORE },
	{ "v2_fixed_part_only", IN(SIG "\x21\x11\x00\x0c"), MORE },
	{ "v2_max_length_fixed_part", IN(SIG "\x21\x11\xff\xff"), MORE },

	/* ---- v2, invalid ---- */
	{ "v2_bad_signature", IN("\r\n\r\n\0\r\nQUIX\n\x21\x11\x00\x0c" BLK4), BAD },
	{ "v2_bad_signature_early", IN("\r\n\r\n\x01"), BAD },
	{ "v2_version_1", IN(SIG "\x11"), BAD },
	{ "v2_version_3", IN(SIG "\x31\x11\x00\x0c" BLK4), BAD },
	{ "v2_version_0", IN(SIG "\x01\x11\x00\x0c" BLK4), BAD },
	{ "v2_command_2", IN(SIG "\x22\x11\x00\x0c" BLK4), BAD },
	{ "v2_family_4", IN(SIG "\x21\x41"), BAD },
	{ "v2_transport_3", IN(SIG "\x21\x13"), BAD },
	{ "v2_tcp4_len_11", IN(SIG "\x21\x11\x00\x0b"), BAD },
	{ "v2_tcp6_len_12", IN(SIG "\x21\x21\x00\x0c" BLK4), BAD },
	{ "v2_unix_len_215", IN(SIG "\x21\x31\x00\xd7"), BAD },
	{ "v2_tlv_header_truncated", IN(SIG "\x21\x11\x00\x0e" BLK4 "\x04\x00"), BAD },
	{ "v2_tlv_value_truncated", IN(SIG "\x21\x11\x00\x14" BLK4 "\x02\x00\x0a" "abcde"), BAD },
	{ "v2_tlv_one_byte_left", IN(SIG "\x21\x11\x00\x10" BLK4 "\x04\x00\x00" "\x04"), BAD },
	{ "v2_unique_id_129", IN(SIG "\x21\x11\x00\x90" BLK4 "\x05\x00\x81"), .pad = 129, BAD },
	{ "v2_crc32c_wrong", IN(SIG "\x21\x11\x00\x13" BLK4 "\x03\x00\x04" "\x19\xdc\xbd\x41"),
	  BAD },
	{ "v2_crc32c_wrong_computed", IN(SIG "\x20\x00\x00\x07" "\x03\x00\x04" "\0\0\0\0"),
	  .crc_at = 16 + 3, .crc_corrupt = true, BAD },
	{ "v2_crc32c_zero_field", IN(SIG "\x20\x00\x00\x07" "\x03\x00\x04" "\0\0\0\0"), BAD },
	{ "v2_crc32c_length_3", IN(SIG "\x21\x11\x00\x12" BLK4 "\x03\x00\x03" "abc"), BAD },
	{ "v2_crc32c_duplicate",
	  IN(SIG "\x20\x00\x00\x0e" "\x03\x00\x04" "\0\0\0\0" "\x03\x00\x04" "\0\0\0\0"),
	  .crc_at = 16 + 3, BAD },
	{ "v2_authority_duplicate",
	  IN(SIG "\x21\x11\x00\x14" BLK4 "\x02\x00\x02" "ab" "\x02\x00\x00"), BAD },
	{ "v2_unique_id_duplicate",
	  IN(SIG "\x21\x11\x00\x14" BLK4 "\x05\x00\x01" "a" "\x05\x00\x01" "b"), BAD },
	{ "v2_api_rejects_v1", IN("PROXY UNKNOWN\r\n"), .api = API_V2, BAD },
};

#define N_CASES (sizeof(cases) / sizeof(cases[0]))

/* Heap copy of exactly n bytes, so that reading past the end is caught. */
static uint8_t *dup_exact(const void *src, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	if (n)
		memcpy(p, src, n);
	return p;
}

static enum pp_status parse_api(enum api api, const uint8_t *buf, size_t len, struct pp_header *hdr,
				const char **reason)
{
	switch (api) {
	case API_V1:
		return pp_parse_v1(buf, len, hdr, reason);
	case API_V2:
		return pp_parse_v2(buf, len, hdr, reason);
	default:
		return pp_parse(buf, len, hdr, reason);
	}
}

/* Parse n bytes from an exact-size heap copy; reason non-NULL iff INVALID. */
static enum pp_status parse_copy(enum api api, const void *src, size_t n, struct pp_header *hdr)
{
	const char *reason = "unset";
	uint8_t *buf = dup_exact(src, n);
	enum pp_status st;

	memset(hdr, 0xA5, sizeof(*hdr));
	st = parse_api(api, buf, n, hdr, &reason);
	if (st == PP_INVALID)
		assert_non_null(reason);
	if (st == PP_OK) {
		assert_true(hdr->header_len > 0 && hdr->header_len <= n);
		/* TLV pointers must point into the header; rebase to src. */
		if (hdr->authority) {
			assert_true(hdr->authority >= buf &&
				    hdr->authority + hdr->authority_len <= buf + hdr->header_len);
			hdr->authority = (const uint8_t *)src + (hdr->authority - buf);
		}
		if (hdr->unique_id) {
			assert_true(hdr->unique_id >= buf &&
				    hdr->unique_id + hdr->unique_id_len <= buf + hdr->header_len);
			hdr->unique_id = (const uint8_t *)src + (hdr->unique_id - buf);
		}
	}
	free(buf);
	return st;
}

/* "a.b.c.d:port", "[v6]:port" or "-" for AF_UNSPEC; "?" for anything else. */
static const char *fmt_addr(const struct sockaddr_storage *ss, char *out, size_t n)
{
	const struct sockaddr_in *sin = (const void *)ss;
	const struct sockaddr_in6 *sin6 = (const void *)ss;
	char ip[INET6_ADDRSTRLEN];

	switch (ss->ss_family) {
	case AF_UNSPEC:
		snprintf(out, n, "-");
		break;
	case AF_INET:
		inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
		snprintf(out, n, "%s:%u", ip, ntohs(sin->sin_port));
		break;
	case AF_INET6:
		inet_ntop(AF_INET6, &sin6->sin6_addr, ip, sizeof(ip));
		snprintf(out, n, "[%s]:%u", ip, ntohs(sin6->sin6_port));
		break;
	default:
		snprintf(out, n, "?");
	}
	return out;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

/* Assemble a case's bytes (in, pad, tail) and apply its fix-ups. */
static uint8_t *case_bytes(const struct pp_case *c, size_t *n)
{
	size_t hdr_len = c->in_len + c->pad;
	uint8_t *b;

	*n = hdr_len + c->tail_len;
	b = calloc(1, *n ? *n : 1);
	assert_non_null(b);
	memcpy(b, c->in, c->in_len);
	if (c->tail_len)
		memcpy(b + hdr_len, c->tail, c->tail_len);
	if (c->crc_at) {
		assert_true(c->crc_at + 4 <= hdr_len);
		memset(b + c->crc_at, 0, 4);
		put_be32(b + c->crc_at, pp_crc32c(0, b, hdr_len));
		if (c->crc_corrupt)
			b[c->crc_at + 3] ^= 0x01;
	}
	return b;
}

static void check_ok(const struct pp_case *c, const struct pp_header *h)
{
	char got[80];

	assert_int_equal(h->header_len, c->hlen ? c->hlen : c->in_len + c->pad);
	assert_int_equal(h->version, c->version);
	assert_int_equal(h->command, c->cmd);
	assert_int_equal(h->family, c->fam);
	assert_int_equal(h->transport, c->tr);
	assert_string_equal(fmt_addr(&h->src, got, sizeof(got)), c->src ? c->src : "-");
	assert_string_equal(fmt_addr(&h->dst, got, sizeof(got)), c->dst ? c->dst : "-");
	if (c->authority) {
		assert_non_null(h->authority);
		assert_int_equal(h->authority_len, strlen(c->authority));
		assert_memory_equal(h->authority, c->authority, h->authority_len);
	} else {
		assert_null(h->authority);
	}
	if (c->has_uid) {
		assert_non_null(h->unique_id);
		assert_int_equal(h->unique_id_len, c->uid_len);
	} else {
		assert_null(h->unique_id);
	}
	assert_int_equal(h->crc32c_present, c->crc);
}

static void run_case(void **state)
{
	const struct pp_case *c = *state;
	struct pp_header h;
	enum pp_status st;
	uint8_t *b;
	size_t n;

	b = case_bytes(c, &n);
	st = parse_copy(c->api, b, n, &h);
	if (st != c->want)
		print_error("case %s: status %d, want %d\n", c->name, st, c->want);
	assert_int_equal(st, c->want);
	if (st == PP_OK)
		check_ok(c, &h);
	free(b);
}

/* ---- CRC32C ---- */

static void test_crc32c_vectors(void **state)
{
	static const uint8_t check[] = "123456789";
	uint8_t buf[32];
	size_t i;

	assert_int_equal(pp_crc32c(0, check, 9), 0xE3069283);
	/* chaining */
	assert_int_equal(pp_crc32c(pp_crc32c(0, check, 4), check + 4, 5), 0xE3069283);
	assert_int_equal(pp_crc32c(0, NULL, 0), 0);
	/* RFC 3720 B.4 vectors */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(pp_crc32c(0, buf, 32), 0x8A9136AA);
	memset(buf, 0xFF, sizeof(buf));
	assert_int_equal(pp_crc32c(0, buf, 32), 0x62A8AB43);
	for (i = 0; i < 32; i++)
		buf[i] = i;
	assert_int_equal(pp_crc32c(0, buf, 32), 0x46DD794E);
}

/* ---- v2 exhaustive loops ---- */

static void test_v2_every_command_nibble(void **state)
{
	uint8_t b[16] = SIG "\x20\x00\x00\x00";
	struct pp_header h;
	unsigned int cmd;
	enum pp_status want;

	for (cmd = 0; cmd < 16; cmd++) {
		b[12] = 0x20 | cmd;
		want = cmd <= 1 ? PP_OK : PP_INVALID;
		assert_int_equal(parse_copy(API_ANY, b, 16, &h), want);
		assert_int_equal(parse_copy(API_V2, b, 16, &h), want);
		/* rejected as soon as the command byte is there */
		assert_int_equal(parse_copy(API_ANY, b, 13, &h),
				 cmd <= 1 ? PP_NEED_MORE : PP_INVALID);
		if (want == PP_OK)
			assert_int_equal(h.command, cmd);
	}
}

static void test_v2_every_version_nibble(void **state)
{
	uint8_t b[16] = SIG "\x21\x00\x00\x00";
	struct pp_header h;
	unsigned int v;

	for (v = 0; v < 16; v++) {
		b[12] = v << 4 | 1;
		assert_int_equal(parse_copy(API_ANY, b, 16, &h), v == 2 ? PP_OK : PP_INVALID);
		assert_int_equal(parse_copy(API_ANY, b, 13, &h),
				 v == 2 ? PP_NEED_MORE : PP_INVALID);
	}
}

static const size_t block_size[4] = { 0, 12, 36, 216 };

static void check_fam_byte(unsigned int cmd, unsigned int byte)
{
	unsigned int fam = byte >> 4, tr = byte & 0x0F;
	bool valid = fam <= 3 && tr <= 2;
	size_t block = valid ? block_size[fam] : 12;
	uint8_t b[16 + 216];
	struct pp_header h;
	char got[80];
	bool addrs;

	memset(b, 0x42, sizeof(b));
	memcpy(b, SIG, 12);
	b[12] = 0x20 | cmd;
	b[13] = byte;
	b[14] = 0;
	b[15] = block;
	if (!valid) {
		assert_int_equal(parse_copy(API_ANY, b, 16 + block, &h), PP_INVALID);
		assert_int_equal(parse_copy(API_V2, b, 14, &h), PP_INVALID);
		return;
	}
	assert_int_equal(parse_copy(API_V2, b, 14, &h), PP_NEED_MORE);
	assert_int_equal(parse_copy(API_ANY, b, 16 + block, &h), PP_OK);
	assert_int_equal(h.header_len, 16 + block);
	assert_int_equal(h.command, cmd);
	assert_int_equal(h.family, fam);
	assert_int_equal(h.transport, tr);
	addrs = cmd == PP_CMD_PROXY && (fam == PP_FAM_INET || fam == PP_FAM_INET6) && tr != 0;
	if (!addrs) {
		assert_string_equal(fmt_addr(&h.src, got, sizeof(got)), "-");
		assert_string_equal(fmt_addr(&h.dst, got, sizeof(got)), "-");
	} else {
		assert_int_equal(h.src.ss_family, fam == PP_FAM_INET ? AF_INET : AF_INET6);
		assert_int_equal(h.dst.ss_family, h.src.ss_family);
	}
}

static void test_v2_every_fam_byte_proxy(void **state)
{
	unsigned int byte;

	for (byte = 0; byte < 256; byte++)
		check_fam_byte(PP_CMD_PROXY, byte);
}

static void test_v2_every_fam_byte_local(void **state)
{
	unsigned int byte;

	for (byte = 0; byte < 256; byte++)
		check_fam_byte(PP_CMD_LOCAL, byte);
}

/* ---- truncation at every offset ---- */

static void check_every_prefix(enum api api, const uint8_t *b, size_t n)
{
	struct pp_header h;
	size_t k;

	assert_int_equal(parse_copy(api, b, n, &h), PP_OK);
	assert_int_equal(h.header_len, n);
	for (k = 0; k < n; k++) {
		enum pp_status st = parse_copy(api, b, k, &h);

		if (st != PP_NEED_MORE)
			print_error("prefix %zu of %zu: status %d\n", k, n, st);
		assert_int_equal(st, PP_NEED_MORE);
	}
}

static void test_v1_truncation_every_offset(void **state)
{
	static const char *const lines[] = {
		"PROXY TCP4 192.168.0.1 192.168.0.11 56324 443\r\n",
		"PROXY TCP4 0.0.0.0 255.255.255.255 0 65535\r\n",
		"PROXY TCP6 2001:db8::1 ::ffff:10.0.0.1 1234 443\r\n",
		"PROXY TCP6 " FFFF6 " " FFFF6 " 65535 65535\r\n",
		"PROXY UNKNOWN\r\n",
		"PROXY UNKNOWN " FFFF6 " " FFFF6 " 65535 65535\r\n",
	};
	size_t i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		check_every_prefix(API_ANY, (const uint8_t *)lines[i], strlen(lines[i]));
		check_every_prefix(API_V1, (const uint8_t *)lines[i], strlen(lines[i]));
	}
}

static void test_v2_truncation_every_offset(void **state)
{
	size_t i, n;

	/* every valid v2 case of the table, CRC fix-ups applied */
	for (i = 0; i < N_CASES; i++) {
		const struct pp_case *c = &cases[i];
		uint8_t *b;

		if (c->want != PP_OK || c->version != 2)
			continue;
		b = case_bytes(c, &n);
		check_every_prefix(API_ANY, b, c->in_len + c->pad);
		check_every_prefix(API_V2, b, c->in_len + c->pad);
		free(b);
	}
}

/*
 * pp_bytes_needed: 0 until a v2 header's fixed part is there, then exactly the
 * header_len that pp_parse reports once the header is whole; 0 for v1.
 */
static void test_bytes_needed(void **state)
{
	struct pp_header hdr;
	const char *reason;
	size_t i, n, k;

	for (i = 0; i < N_CASES; i++) {
		const struct pp_case *c = &cases[i];
		uint8_t *b;

		if (c->want != PP_OK)
			continue;
		b = case_bytes(c, &n);
		assert_int_equal(pp_parse(b, n, &hdr, &reason), PP_OK);
		for (k = 0; k <= hdr.header_len; k++) {
			size_t need = pp_bytes_needed(b, k);

			if (c->version == 1 || k < 16)
				assert_int_equal(need, 0);
			else
				assert_int_equal(need, hdr.header_len);
		}
		free(b);
	}
}

/*
 * Any single bit flipped in a CRC-protected header must not parse as OK,
 * except in the TLV type byte: that turns the CRC32C TLV into another type,
 * and an unprotected header is then valid by design.
 */
static void test_v2_crc_catches_every_bit_flip(void **state)
{
	uint8_t b[] = SIG "\x21\x11\x00\x13" BLK4 "\x03\x00\x04" "\x19\xdc\xbd\x40";
	const size_t n = sizeof(b) - 1, type_at = 16 + 12;
	struct pp_header h;
	unsigned int bit;
	size_t i;

	assert_int_equal(parse_copy(API_ANY, b, n, &h), PP_OK);
	assert_true(h.crc32c_present);
	for (i = 0; i < n; i++) {
		for (bit = 0; bit < 8; bit++) {
			b[i] ^= 1u << bit;
			if (i != type_at)
				assert_int_not_equal(parse_copy(API_ANY, b, n, &h), PP_OK);
			else if (parse_copy(API_ANY, b, n, &h) == PP_OK)
				assert_false(h.crc32c_present);
			b[i] ^= 1u << bit;
		}
	}
}

/* The parser must not depend on what the header struct held before. */
static void test_hdr_reset_between_calls(void **state)
{
	static const char v2[] = SIG "\x21\x11\x00\x1a" BLK4 "\x02\x00\x0b" "example.com";
	static const char v1[] = "PROXY UNKNOWN\r\n";
	struct pp_header h;
	const char *reason = NULL;

	assert_int_equal(pp_parse((const uint8_t *)v2, sizeof(v2) - 1, &h, &reason), PP_OK);
	assert_non_null(h.authority);
	assert_int_equal(pp_parse((const uint8_t *)v1, sizeof(v1) - 1, &h, &reason), PP_OK);
	assert_null(h.authority);
	assert_int_equal(h.src.ss_family, AF_UNSPEC);
	assert_int_equal(h.header_len, sizeof(v1) - 1);
}

int main(void)
{
	static const struct CMUnitTest extra[] = {
		cmocka_unit_test(test_crc32c_vectors),
		cmocka_unit_test(test_v2_every_command_nibble),
		cmocka_unit_test(test_v2_every_version_nibble),
		cmocka_unit_test(test_v2_every_fam_byte_proxy),
		cmocka_unit_test(test_v2_every_fam_byte_local),
		cmocka_unit_test(test_v1_truncation_every_offset),
		cmocka_unit_test(test_v2_truncation_every_offset),
		cmocka_unit_test(test_v2_crc_catches_every_bit_flip),
		cmocka_unit_test(test_hdr_reset_between_calls),
		cmocka_unit_test(test_bytes_needed),
	};
	struct CMUnitTest tests[N_CASES + sizeof(extra) / sizeof(extra[0])];
	size_t i;

	for (i = 0; i < N_CASES; i++) {
		memset(&tests[i], 0, sizeof(tests[i]));
		tests[i].name = cases[i].name;
		tests[i].test_func = run_case;
		tests[i].initial_state = (void *)&cases[i];
	}
	for (i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		tests[N_CASES + i] = extra[i];
	return cmocka_run_group_tests_name("proxy_proto", tests, NULL, NULL);
}
