/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The allowed-endpoints file (--allowed-endpoints): which cloud endpoints,
 * named by their PROXY v2 TLV, may connect. One per line, '#' comments and
 * blank lines allowed:
 *   aws:vpce-0123456789abcdef0   an AWS VPC endpoint ID (TLV 0xEA/0x01)
 *   azure:305419896              an Azure LinkID, decimal (TLV 0xEE/0x01)
 *   gcp:1234567890123            a GCP PSC connection ID, decimal (TLV 0xE0)
 * Parsing is pure (no logging): the caller says what happens next.
 */
#ifndef MMP_ENDPOINT_LIST_H
#define MMP_ENDPOINT_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/proxy_proto.h"

#define MMP_VPCE_ID_MAX 22 /* "vpce-" and 17 hex digits */

enum mmp_endpoint_kind {
	MMP_EP_AWS = 1,
	MMP_EP_AZURE,
	MMP_EP_GCP,
};

struct mmp_endpoint {
	enum mmp_endpoint_kind kind;
	uint64_t id; /* AZURE (fits 32 bits), GCP */
	char vpce[MMP_VPCE_ID_MAX + 1]; /* AWS, NUL-terminated */
};

struct mmp_endpoint_list {
	struct mmp_endpoint *v;
	size_t n, cap;
};

/*
 * Parse one line (modified in place). Returns 1 with *out filled, 0 for a
 * blank or comment-only line, or -EINVAL with *reason set to a static
 * "cause (fix)" text.
 */
int mmp_endpoint_parse_line(char *line, struct mmp_endpoint *out, const char **reason);

/*
 * Read every line of path into *list (empty on entry). On failure returns a
 * negative errno with list emptied and why set to one line naming the file,
 * the line and the fix. Returns the number of entries on success.
 */
int mmp_endpoint_list_read(const char *path, struct mmp_endpoint_list *list, char *why, size_t why_len);

/* True when the header's cloud TLVs name an endpoint on the list. */
bool mmp_endpoint_list_match(const struct mmp_endpoint_list *list, const struct pp_tlvs *tlv);

void mmp_endpoint_list_free(struct mmp_endpoint_list *list);

#endif
