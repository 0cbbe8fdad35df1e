// SPDX-License-Identifier: GPL-2.0
/* The TLVs of a PROXY header as a bounded, printable log fragment (pp_tlv_fmt.h). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "proto/pp_tlv_fmt.h"

/* Where the text goes; pos never passes len - 1, so out stays NUL-terminated. */
struct fmt_buf {
	char *out;
	size_t len;
	size_t pos;
};

static void put(struct fmt_buf *f, const char *s)
{
	int n = snprintf(f->out + f->pos, f->len - f->pos, "%s", s);

	if (n > 0)
		f->pos += (size_t)n < f->len - f->pos ? (size_t)n : f->len - f->pos - 1;
}

/*
 * A byte is shown as itself only when it is printable ASCII and cannot be
 * mistaken for the line's own syntax (space between fields, '=' after a
 * name, '"' and '\' of the escapes).
 */
static bool plain(uint8_t ch)
{
	return ch > ' ' && ch < 0x7f && ch != '"' && ch != '=' && ch != '\\';
}

static void put_escaped(struct fmt_buf *f, const char *name, const struct pp_bytes *b)
{
	size_t shown = b->len < PP_TLV_FMT_VALUE_MAX ? b->len : PP_TLV_FMT_VALUE_MAX;
	char ch[5];

	if (!b->ptr)
		return;
	put(f, " ");
	put(f, name);
	put(f, "=");
	for (size_t i = 0; i < shown; i++) {
		if (plain(b->ptr[i]))
			snprintf(ch, sizeof(ch), "%c", b->ptr[i]);
		else
			snprintf(ch, sizeof(ch), "\\x%02x", b->ptr[i]);
		put(f, ch);
	}
	if (shown < b->len)
		put(f, "...");
}

static void put_number(struct fmt_buf *f, const char *name, uint64_t v)
{
	char num[48];

	snprintf(num, sizeof(num), " %s=%" PRIu64, name, v);
	put(f, num);
}

const char *pp_tlv_format(const struct pp_header *hdr, char *out, size_t out_len)
{
	struct fmt_buf f = { .out = out, .len = out_len };
	const struct pp_tlvs *t = &hdr->tlv;
	struct pp_bytes authority = { hdr->authority, hdr->authority_len };
	struct pp_bytes unique_id = { hdr->unique_id, hdr->unique_id_len };

	if (!out_len)
		return out;
	out[0] = '\0';
	put_escaped(&f, "alpn", &t->alpn);
	put_escaped(&f, "authority", &authority);
	put_escaped(&f, "unique_id", &unique_id);
	if (t->ssl)
		put_number(&f, "ssl_verify", t->ssl_verify);
	put_escaped(&f, "ssl_cn", &t->ssl_cn);
	put_escaped(&f, "netns", &t->netns);
	put_escaped(&f, "aws_vpce", &t->aws_vpce_id);
	if (t->azure_linkid_present)
		put_number(&f, "azure_linkid", t->azure_linkid);
	if (t->gcp_psc_present)
		put_number(&f, "gcp_psc", t->gcp_psc_id);
	return out;
}
