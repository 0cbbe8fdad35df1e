// SPDX-License-Identifier: GPL-2.0
/* The allowed-endpoints file: parse, read, match (endpoint_list.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/endpoint_list.h"
#include "proto/line_file.h"

#define VPCE_PREFIX "vpce-"
#define VPCE_HEX_MIN 8 /* the short form of older endpoints */
#define VPCE_HEX_MAX 17

/*
 * A decimal number up to max: digits only (no sign, no blanks, no leading
 * zero but for 0 itself), so that one ID has exactly one spelling.
 * Returns 0 with *out set, or -EINVAL.
 */
static int parse_decimal(const char *s, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return -EINVAL;
	for (; *s; s++) {
		if (!isdigit((unsigned char)*s))
			return -EINVAL;
		if (v > (max - (uint64_t)(*s - '0')) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

/* "vpce-" and 8 to 17 lowercase hex digits, as AWS prints them. */
static bool vpce_ok(const char *s)
{
	size_t n = strlen(s), hex = n - strlen(VPCE_PREFIX);

	if (n <= strlen(VPCE_PREFIX) || strncmp(s, VPCE_PREFIX, strlen(VPCE_PREFIX)))
		return false;
	if (hex < VPCE_HEX_MIN || hex > VPCE_HEX_MAX)
		return false;
	for (s += strlen(VPCE_PREFIX); *s; s++)
		if (!isdigit((unsigned char)*s) && !(*s >= 'a' && *s <= 'f'))
			return false;
	return true;
}

int mmp_endpoint_parse_line(char *line, struct mmp_endpoint *out, const char **reason)
{
	char *s = mmp_line_trim(line);

	memset(out, 0, sizeof(*out));
	if (!*s)
		return 0;
	if (!strncmp(s, "aws:", 4)) {
		if (!vpce_ok(s + 4))
			goto bad_aws;
		out->kind = MMP_EP_AWS;
		snprintf(out->vpce, sizeof(out->vpce), "%s", s + 4);
		return 1;
	}
	if (!strncmp(s, "azure:", 6)) {
		if (parse_decimal(s + 6, UINT32_MAX, &out->id))
			goto bad_azure;
		out->kind = MMP_EP_AZURE;
		return 1;
	}
	if (!strncmp(s, "gcp:", 4)) {
		if (parse_decimal(s + 4, UINT64_MAX, &out->id))
			goto bad_gcp;
		out->kind = MMP_EP_GCP;
		return 1;
	}
	*reason = "unknown endpoint kind (write aws:vpce-..., azure:LINKID or gcp:PSCID, one per line)";
	return -EINVAL;
bad_aws:
	*reason = "bad AWS VPC endpoint ID (write aws:vpce- then 8 to 17 lowercase hex digits, e.g. "
		  "aws:vpce-0123456789abcdef0)";
	return -EINVAL;
bad_azure:
	*reason = "bad Azure LinkID (write azure: then a decimal number 0 to 4294967295, e.g. azure:305419896)";
	return -EINVAL;
bad_gcp:
	*reason = "bad GCP PSC connection ID (write gcp: then a decimal number 0 to 18446744073709551615)";
	return -EINVAL;
}

static int list_add(struct mmp_endpoint_list *list, const struct mmp_endpoint *ep)
{
	if (list->n == list->cap) {
		size_t cap = list->cap ? list->cap * 2 : 16;
		struct mmp_endpoint *v = realloc(list->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		list->v = v;
		list->cap = cap;
	}
	list->v[list->n++] = *ep;
	return 0;
}

static int parse_endpoint_line(char *line, unsigned int lineno, void *ctx, const char **reason)
{
	struct mmp_endpoint ep;
	int ret = mmp_endpoint_parse_line(line, &ep, reason);

	if (ret <= 0)
		return ret;
	ret = list_add(ctx, &ep);
	return ret ? ret : 1;
}

int mmp_endpoint_list_read(const char *path, struct mmp_endpoint_list *list, char *why, size_t why_len)
{
	int n = mmp_line_file_read(path, "allowed-endpoints", "--allowed-endpoints", parse_endpoint_line, list, why,
				   why_len);

	if (n < 0)
		mmp_endpoint_list_free(list);
	return n;
}

/* One entry against the header's TLV of the same provider. */
static bool entry_matches(const struct mmp_endpoint *ep, const struct pp_tlvs *tlv)
{
	switch (ep->kind) {
	case MMP_EP_AWS:
		return tlv->aws_vpce_id.ptr && tlv->aws_vpce_id.len == strlen(ep->vpce) &&
		       !memcmp(tlv->aws_vpce_id.ptr, ep->vpce, tlv->aws_vpce_id.len);
	case MMP_EP_AZURE:
		return tlv->azure_linkid_present && tlv->azure_linkid == ep->id;
	case MMP_EP_GCP:
		return tlv->gcp_psc_present && tlv->gcp_psc_id == ep->id;
	}
	return false;
}

/*
 * A linear scan: a list is a handful of endpoints per service, and the scan
 * runs once per connection (once per v2 datagram in UDP), after a header
 * parse that already walked every TLV.
 */
bool mmp_endpoint_list_match(const struct mmp_endpoint_list *list, const struct pp_tlvs *tlv)
{
	for (size_t i = 0; i < list->n; i++)
		if (entry_matches(&list->v[i], tlv))
			return true;
	return false;
}

void mmp_endpoint_list_free(struct mmp_endpoint_list *list)
{
	free(list->v);
	memset(list, 0, sizeof(*list));
}
