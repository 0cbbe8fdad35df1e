/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The TLVs of a parsed PROXY header as text for the per-connection log line:
 * " alpn=h2 authority=example.com aws_vpce=vpce-0123...". Every value is the
 * sender's bytes, so each is escaped (\xNN for anything but printable ASCII,
 * and for space, '"', '=' and '\') and cut at PP_TLV_FMT_VALUE_MAX input
 * bytes, marked "...": one log line stays one bounded line whatever comes in.
 */
#ifndef MMP_PP_TLV_FMT_H
#define MMP_PP_TLV_FMT_H

#include <stddef.h>
#include "proto/proxy_proto.h"

#define PP_TLV_FMT_VALUE_MAX 64 /* input bytes shown per value */
/* Room for every field at its longest: 8 byte-string fields of 64*4+3 bytes, names, numbers. */
#define PP_TLV_FMT_LEN 2560

/*
 * Write the TLVs of hdr into out[0..out_len) as " name=value" pairs, in a
 * fixed order, nothing for an absent TLV; always NUL-terminated.
 * Returns out.
 */
const char *pp_tlv_format(const struct pp_header *hdr, char *out, size_t out_len);

#endif
